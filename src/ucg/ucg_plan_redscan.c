/**
 * UCG planner: the reductions whose members get different results,
 * reduce_scatter, reduce_scatter_block, scan and exscan (docs/ucg.md).
 *
 * Every member needs the rank-ordered reduction of a different part: its
 * block of every vector (reduce_scatter), or the vectors of the members
 * before it (scan).  A host-local fan-in reduces one vector for the whole
 * host at its leader, which would then have to send every member its
 * part: the leader reduces and copies everything once more.  So, on one
 * host of at most SM_ALLREDUCE_MAX_PPN members and up to SM_ALLREDUCE_MAX
 * bytes (the whole vector), sm_allreduce's one-hop exchange (every member
 * fans out its vector once) with each member folding what it needs:
 * sm_reduce_scatter, sm_scan; else flat: p2p_reduce_scatter (pairwise
 * exchange of blocks, each member folds its own block), p2p_scan
 * (recursive doubling).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"


int ucg_plan_redscan_hier(ucg_plan_builder_t *b)
{
    const ucg_topo_t *topo = b->topo;

    return (topo->num_hosts == 1) &&
           (topo->max_ppn <= b->config->sm_allreduce_max_ppn) &&
           ucg_plan_size_le(b, b->config->sm_allreduce_max);
}

ucs_status_t ucg_plan_build_reduce_scatter(ucg_plan_builder_t *b, int hier,
                                           unsigned root)
{
    ucg_phase_t *phase;

    if (hier) {
        /* One host (ucg_plan_redscan_hier): its set is every rank */
        ucg_plan_set_leaders(b, 0, 0);
        return ucg_plan_add_local(b, UCG_PHASE_SM_REDUCE_SCATTER,
                                  ucg_plan_bcast_mode(b), 0, NULL);
    }

    return ucg_plan_add_global(b, 0, UCG_PHASE_P2P_REDUCE_SCATTER, 0,
                               &phase);
}

ucs_status_t ucg_plan_build_scan(ucg_plan_builder_t *b, int hier,
                                 unsigned root)
{
    ucg_phase_t *phase;

    if (hier) {
        /* One host (ucg_plan_redscan_hier): its set is every rank, so a
         * member's index in it is its rank */
        ucg_plan_set_leaders(b, 0, 0);
        return ucg_plan_add_local(b, UCG_PHASE_SM_SCAN,
                                  ucg_plan_bcast_mode(b), 0, NULL);
    }

    return ucg_plan_add_global(b, 0, UCG_PHASE_P2P_SCAN, 0, &phase);
}
