/**
 * UCG planner: the block collectives, gather and allgather, and the barrier
 * (a gather of nothing and a bcast of nothing) (docs/ucg.md).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"


ucs_status_t ucg_plan_build_gather(ucg_plan_builder_t *b, int hier,
                                   unsigned root)
{
    ucg_p2p_method_t method;
    ucg_phase_t *phase;
    ucs_status_t status;

    status = ucg_plan_p2p_method(b, UCG_COLL_GATHER, UCG_P2P_LINEAR,
                                 UCG_P2P_NONE, UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    ucg_plan_set_leaders(b, 1, root);
    status = ucg_plan_add_local_gather(b, hier);
    if (status != UCS_OK) {
        return status;
    }

    status = ucg_plan_add_global(b, hier, UCG_PHASE_P2P_GATHER, root, &phase);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_set_owner(b, phase, hier);
}

ucs_status_t ucg_plan_build_barrier(ucg_plan_builder_t *b, int hier,
                                    unsigned root)
{
    ucg_p2p_method_t method;
    ucg_phase_t *phase;
    ucs_status_t status;

    status = ucg_plan_p2p_method(b, UCG_COLL_BARRIER, UCG_P2P_DISSEMINATION,
                                 UCG_P2P_NONE, UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    ucg_plan_set_leaders(b, 0, 0);
    if (hier && (b->topo->num_hosts == 1) && (method == UCG_P2P_AUTO) &&
        (b->topo->max_ppn <= b->config->sm_allreduce_max_ppn)) {
        /* Everyone tells everyone: one hop, and all leave together */
        return ucg_plan_add_local(b, UCG_PHASE_SM_ALLREDUCE,
                                  ucg_plan_bcast_mode(b), 0, NULL);
    }

    status = ucg_plan_add_local_gather(b, hier);
    if (status != UCS_OK) {
        return status;
    }

    status = ucg_plan_add_global(b, hier, UCG_PHASE_P2P_BARRIER, 0, &phase);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_add_local_bcast(b, hier);
}

ucs_status_t ucg_plan_build_allgather(ucg_plan_builder_t *b, int hier,
                                      unsigned root)
{
    ucg_p2p_method_t method;
    ucg_phase_method_t inter;
    ucg_phase_t *phase;
    ucs_status_t status;

    status = ucg_plan_p2p_method(b, UCG_COLL_ALLGATHER, UCG_P2P_RING,
                                 UCG_P2P_LINEAR, UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    if (method == UCG_P2P_AUTO) {
        method = ucg_plan_allgather_ring(b) ? UCG_P2P_RING : UCG_P2P_LINEAR;
    }
    inter = (method == UCG_P2P_RING) ? UCG_PHASE_P2P_ALLGATHER_RING :
                                       UCG_PHASE_P2P_ALLGATHER_LINEAR;

    ucg_plan_set_leaders(b, 0, 0);
    status = ucg_plan_add_local_gather(b, hier);
    if (status != UCS_OK) {
        return status;
    }

    status = ucg_plan_add_global(b, hier, inter, 0, &phase);
    if (status == UCS_OK) {
        status = ucg_plan_set_owner(b, phase, hier);
    }
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_add_local_bcast(b, hier);
}
