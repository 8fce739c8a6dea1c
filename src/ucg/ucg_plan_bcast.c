/**
 * UCG planner: the fan-out collectives, bcast and scatter (docs/ucg.md).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"


ucs_status_t ucg_plan_build_bcast(ucg_plan_builder_t *b, int hier,
                                  unsigned root)
{
    ucg_p2p_method_t method;
    ucg_phase_t *phase;
    ucs_status_t status;

    status = ucg_plan_p2p_method(b, UCG_COLL_BCAST, UCG_P2P_KNOMIAL,
                                 UCG_P2P_NONE, UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    ucg_plan_set_leaders(b, 1, root);
    status = ucg_plan_add_global(b, hier, UCG_PHASE_P2P_BCAST, root, &phase);
    if (status != UCS_OK) {
        return status;
    }

    if (phase != NULL) {
        phase->radix     = b->config->knomial_radix;
        phase->frag_size = ucg_plan_p2p_bcast_frag(b);
    }

    if (!hier) {
        return UCS_OK;
    }

    /* SM_BCAST_CMA_THRESH is bcast's own (docs/ucg.md): the bcast that
     * ends a non-commutative allreduce stays sm_bcast */
    if ((b->key->type != UCG_COLL_BCAST) || !b->topo->sm_cma ||
        !ucg_plan_reaches(b, b->config->sm_bcast_cma_thresh)) {
        /* Many members on a host: two levels of sm_bcast (bcast only) */
        return ucg_plan_2level_applies(b) ?
               ucg_plan_add_local_bcast_2level(b) :
               ucg_plan_add_local_bcast(b, hier);
    }

    /* Single-copy: a zero-byte fan-in acknowledges the reads */
    status = ucg_plan_add_local(b, UCG_PHASE_SM_BCAST_CMA,
                                ucg_plan_bcast_mode(b), 0, &phase);
    if (phase != NULL) {
        phase->sm_ack_mode = ucg_plan_gather_mode(b);
        phase->frag_size   = 0;
    }
    return status;
}

ucs_status_t ucg_plan_build_scatter(ucg_plan_builder_t *b, int hier,
                                    unsigned root)
{
    ucg_p2p_method_t method;
    ucg_phase_t *phase;
    ucs_status_t status;

    status = ucg_plan_p2p_method(b, UCG_COLL_SCATTER, UCG_P2P_LINEAR,
                                 UCG_P2P_NONE, UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    ucg_plan_set_leaders(b, 1, root);
    status = ucg_plan_add_global(b, hier, UCG_PHASE_P2P_SCATTER, root, &phase);
    if (status == UCS_OK) {
        status = ucg_plan_set_owner(b, phase, hier);
    }
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_add_local_bcast(b, hier);
}
