/**
 * UCG phase table: one row per phase method (ucg_phase.h).  The executor
 * (ucg_coll.c) knows a phase only through its row.
 */
#include "ucg_coll.h"


/* P2P_* rows: messages over UCP */
#define UCG_P2P_ROW(_start, _progress, _flags) \
    { \
        .start    = _start, \
        .progress = _progress, \
        .flags    = UCG_PHASE_FLAG_UCP | (_flags) \
    }

/* SM_* rows: host-local endpoints, sm messages */
#define UCG_SM_ROW(_start, _progress, _eps, _expects, _deliver, \
                   _contributed, _standin, _flags) \
    { \
        .start       = _start, \
        .progress    = _progress, \
        .sm_eps      = _eps, \
        .expects     = _expects, \
        .deliver     = _deliver, \
        .contributed = _contributed, \
        .standin     = _standin, \
        .flags       = _flags \
    }

const ucg_phase_ops_t ucg_phase_table[UCG_PHASE_LAST] = {
    [UCG_PHASE_P2P_BCAST] =
        UCG_P2P_ROW(ucg_p2p_bcast_start, ucg_p2p_bcast_progress, 0),
    [UCG_PHASE_P2P_REDUCE] =
        UCG_P2P_ROW(ucg_p2p_reduce_start, ucg_p2p_reduce_progress, 0),
    [UCG_PHASE_P2P_ALLREDUCE_RD] =
        UCG_P2P_ROW(ucg_p2p_allreduce_rd_start,
                    ucg_p2p_allreduce_rd_progress, 0),
    [UCG_PHASE_P2P_ALLREDUCE_RING] =
        UCG_P2P_ROW(ucg_p2p_allreduce_ring_start,
                    ucg_p2p_allreduce_ring_progress, 0),
    [UCG_PHASE_P2P_GATHER] =
        UCG_P2P_ROW(ucg_p2p_gather_start, ucg_p2p_wait_progress,
                    UCG_PHASE_FLAG_ROOT_HOLDS_BLOCKS),
    [UCG_PHASE_P2P_SCATTER] =
        UCG_P2P_ROW(ucg_p2p_scatter_start, ucg_p2p_wait_progress,
                    UCG_PHASE_FLAG_ROOT_HOLDS_BLOCKS),
    [UCG_PHASE_P2P_ALLGATHER_RING] =
        UCG_P2P_ROW(ucg_p2p_allgather_ring_start,
                    ucg_p2p_allgather_ring_progress, 0),
    [UCG_PHASE_P2P_ALLGATHER_LINEAR] =
        UCG_P2P_ROW(ucg_p2p_allgather_linear_start, ucg_p2p_wait_progress,
                    0),
    [UCG_PHASE_P2P_BARRIER] =
        UCG_P2P_ROW(ucg_p2p_barrier_start, ucg_p2p_barrier_progress, 0),
    [UCG_PHASE_P2P_REDUCE_SCATTER] =
        UCG_P2P_ROW(ucg_p2p_reduce_scatter_start,
                    ucg_p2p_reduce_scatter_progress, 0),
    [UCG_PHASE_P2P_SCAN] =
        UCG_P2P_ROW(ucg_p2p_scan_start, ucg_p2p_scan_progress, 0),
    [UCG_PHASE_P2P_ALLTOALL_LINEAR] =
        UCG_P2P_ROW(ucg_p2p_alltoall_linear_start, ucg_p2p_wait_progress, 0),
    [UCG_PHASE_P2P_ALLTOALL_PAIRWISE] =
        UCG_P2P_ROW(ucg_p2p_alltoall_pairwise_start,
                    ucg_p2p_alltoall_pairwise_progress, 0),

    [UCG_PHASE_SM_BCAST] =
        UCG_SM_ROW(ucg_sm_bcast_start, ucg_sm_stream_progress,
                   ucg_sm_bcast_eps, ucg_sm_stream_expects,
                   ucg_sm_bcast_deliver, NULL, UCG_PHASE_P2P_BCAST,
                   UCG_PHASE_FLAG_SCATTERS_BLOCKS),
    [UCG_PHASE_SM_REDUCE] =
        UCG_SM_ROW(ucg_sm_reduce_start, ucg_sm_stream_progress,
                   ucg_sm_reduce_eps, ucg_sm_stream_expects,
                   ucg_sm_reduce_deliver, ucg_sm_stream_contributed,
                   UCG_PHASE_P2P_REDUCE, UCG_PHASE_FLAG_MEMBER_READS_ACC),
    [UCG_PHASE_SM_GATHER] =
        UCG_SM_ROW(ucg_sm_gather_start, ucg_sm_stream_progress,
                   ucg_sm_gather_eps, ucg_sm_stream_expects,
                   ucg_sm_gather_deliver, ucg_sm_stream_contributed,
                   UCG_PHASE_P2P_GATHER, UCG_PHASE_FLAG_ROOT_HOLDS_BLOCKS),
    [UCG_PHASE_SM_ALLREDUCE] =
        UCG_SM_ROW(ucg_sm_allreduce_start, ucg_sm_allreduce_progress,
                   ucg_sm_allreduce_eps, ucg_sm_allreduce_expects,
                   ucg_sm_allreduce_deliver, NULL,
                   UCG_PHASE_P2P_ALLREDUCE_RD, 0),
    [UCG_PHASE_SM_SCAN] =
        UCG_SM_ROW(ucg_sm_allreduce_start, ucg_sm_allreduce_progress,
                   ucg_sm_allreduce_eps, ucg_sm_allreduce_expects,
                   ucg_sm_allreduce_deliver, NULL, UCG_PHASE_P2P_SCAN, 0),
    [UCG_PHASE_SM_REDUCE_SCATTER] =
        UCG_SM_ROW(ucg_sm_allreduce_start, ucg_sm_allreduce_progress,
                   ucg_sm_allreduce_eps, ucg_sm_allreduce_expects,
                   ucg_sm_allreduce_deliver, NULL,
                   UCG_PHASE_P2P_REDUCE_SCATTER, 0),
    [UCG_PHASE_SM_BCAST_CMA] =
        UCG_SM_ROW(ucg_sm_cma_start, ucg_sm_cma_progress,
                   ucg_sm_bcast_cma_eps, ucg_sm_stream_expects,
                   ucg_sm_cma_deliver, ucg_sm_bcast_cma_contributed,
                   UCG_PHASE_P2P_BCAST, 0),
    [UCG_PHASE_SM_REDUCE_CMA] =
        UCG_SM_ROW(ucg_sm_cma_start, ucg_sm_cma_progress,
                   ucg_sm_reduce_cma_eps, ucg_sm_stream_expects,
                   ucg_sm_cma_deliver, ucg_sm_reduce_cma_contributed,
                   UCG_PHASE_P2P_REDUCE,
                   UCG_PHASE_FLAG_MEMBER_READS_ACC |
                   UCG_PHASE_FLAG_ROOT_TAKES_OWN),
    [UCG_PHASE_SM_ALLGATHERV] =
        UCG_SM_ROW(ucg_sm_allgatherv_start, ucg_sm_allgatherv_progress,
                   ucg_sm_allreduce_eps, ucg_sm_allreduce_expects,
                   ucg_sm_allgatherv_deliver, NULL,
                   UCG_PHASE_P2P_ALLGATHER_LINEAR, 0),

    /* mc_udp messages (the sm receive path takes them), agreement over
     * UCP; the point-to-point bcast where a leader cannot join */
    [UCG_PHASE_MC_BCAST] = {
        .start    = ucg_mc_bcast_start,
        .progress = ucg_mc_bcast_progress,
        .expects  = ucg_sm_stream_expects,
        .deliver  = ucg_mc_bcast_deliver,
        .standin  = UCG_PHASE_P2P_BCAST,
        .flags    = UCG_PHASE_FLAG_UCP
    },

    /* Local: no messages */
    [UCG_PHASE_FOLD] = {
        .start    = ucg_fold_start,
        .progress = ucg_fold_progress,
        .flags    = UCG_PHASE_FLAG_ROOT_HOLDS_BLOCKS
    }
};
