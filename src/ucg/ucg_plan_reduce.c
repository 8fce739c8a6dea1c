/**
 * UCG planner: the reductions, reduce and allreduce, and the rank-ordered
 * fold of the non-commutative ones (docs/ucg.md).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"
#include "ucg_dt.h"

#include <string.h>


static void ucg_plan_reduce_mode(ucg_plan_builder_t *b,
                                 uct_o2m_mode_t *mode_p, int *native_p)
{
    const ucg_config_t *config = b->config;
    ucg_op_desc_t desc;
    uct_o2m_op_t op;
    uct_o2m_dtype_t dtype;
    int has_pair;

    /* The user function is not needed to find the transport's pair */
    memset(&desc, 0, sizeof(desc));
    desc.op      = b->key->op;
    desc.dtype   = b->key->dtype;
    desc.dt_size = b->elem_size;
    has_pair     = ucg_op_to_o2m(&desc, &op, &dtype);

    if (config->sm_incast_mode < UCT_O2M_MODE_LAST) {
        *mode_p   = (uct_o2m_mode_t)config->sm_incast_mode;
        *native_p = has_pair && uct_o2m_op_supported(*mode_p, op, dtype);
        return;
    }

    if ((b->topo->max_ppn > 2) && has_pair &&
        uct_o2m_op_supported(UCT_O2M_MODE_LOCKED, op, dtype) &&
        ucg_plan_reaches(b, config->sm_locked_thresh)) {
        *mode_p   = UCT_O2M_MODE_LOCKED;
        *native_p = 1;
        return;
    }

    /* Without a native pair the locked mode would only gather: the ppn
     * rule's mode gathers better */
    *mode_p   = ucg_plan_ppn_mode(b);
    *native_p = has_pair && uct_o2m_op_supported(*mode_p, op, dtype);
}

ucs_status_t ucg_plan_build_fold(ucg_plan_builder_t *b, unsigned root)
{
    ucg_phase_t *phase;
    ucs_status_t status;

    phase = ucg_plan_new_phase(b, UCG_PHASE_FOLD);
    if (phase == NULL) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = ucg_plan_alloc_sets(phase, 1);
    if (status != UCS_OK) {
        return status;
    }

    status = ucg_plan_alloc_ranks(&phase->sets[0], 1);
    if (status != UCS_OK) {
        return status;
    }

    phase->sets[0].ranks[0] = root;
    phase->sets[0].root     = 0;
    return UCS_OK;
}

ucs_status_t ucg_plan_build_reduce(ucg_plan_builder_t *b, int hier,
                                   unsigned root)
{
    ucg_p2p_method_t method;
    uct_o2m_mode_t mode;
    ucg_phase_t *phase;
    ucs_status_t status;
    int native;

    if (!b->key->commutative) {
        status = ucg_plan_build_gather(b, hier, root);
        if (status != UCS_OK) {
            return status;
        }
        return ucg_plan_build_fold(b, root);
    }

    status = ucg_plan_p2p_method(b, UCG_COLL_REDUCE, UCG_P2P_KNOMIAL,
                                 UCG_P2P_NONE, UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    ucg_plan_set_leaders(b, 1, root);
    if (hier && b->topo->sm_cma &&
        ucg_plan_reaches(b, b->config->sm_reduce_cma_thresh)) {
        /* Single-copy: the root reads the vectors, then releases them */
        status = ucg_plan_add_local(b, UCG_PHASE_SM_REDUCE_CMA,
                                    ucg_plan_gather_mode(b), 0, &phase);
        if (status != UCS_OK) {
            return status;
        }
        if (phase != NULL) {
            phase->sm_ack_mode = ucg_plan_bcast_mode(b);
            phase->frag_size   = 0;
        }
    } else if (hier) {
        ucg_plan_reduce_mode(b, &mode, &native);
        status = ucg_plan_add_local(b, UCG_PHASE_SM_REDUCE, mode, native,
                                    &phase);
        if (status != UCS_OK) {
            return status;
        }
    }

    status = ucg_plan_add_global(b, hier, UCG_PHASE_P2P_REDUCE, root, &phase);
    if ((status == UCS_OK) && (phase != NULL)) {
        phase->radix = b->config->knomial_radix;
    }
    return status;
}

ucs_status_t ucg_plan_build_allreduce(ucg_plan_builder_t *b, int hier,
                                      unsigned root)
{
    const ucg_topo_t *topo = b->topo;
    ucg_p2p_method_t method;
    ucg_phase_method_t inter;
    uct_o2m_mode_t mode;
    ucg_phase_t *phase;
    ucs_status_t status;
    unsigned participants;
    int native;

    if (!b->key->commutative) {
        /* Rank-ordered result: gather to 0, fold, bcast from 0 */
        status = ucg_plan_build_gather(b, hier, 0);
        if (status == UCS_OK) {
            status = ucg_plan_build_fold(b, 0);
        }
        if (status == UCS_OK) {
            status = ucg_plan_build_bcast(b, hier, 0);
        }
        return status;
    }

    status = ucg_plan_p2p_method(b, UCG_COLL_ALLREDUCE,
                                 UCG_P2P_RECURSIVE_DOUBLING, UCG_P2P_RING,
                                 UCG_P2P_KNOMIAL, &method);
    if (status != UCS_OK) {
        return status;
    }

    ucg_plan_set_leaders(b, 0, 0);
    if (hier && (topo->num_hosts == 1) && (method == UCG_P2P_AUTO) &&
        (topo->max_ppn <= b->config->sm_allreduce_max_ppn) &&
        ucg_plan_size_le(b, b->config->sm_allreduce_max)) {
        /* One hop instead of a fan-in and a fan-out */
        return ucg_plan_add_local(b, UCG_PHASE_SM_ALLREDUCE,
                                  ucg_plan_bcast_mode(b), 0, NULL);
    }

    if (hier) {
        ucg_plan_reduce_mode(b, &mode, &native);
        status = ucg_plan_add_local(b, UCG_PHASE_SM_REDUCE, mode, native,
                                    NULL);
        if (status != UCS_OK) {
            return status;
        }
    }

    /* Rank 0 leads host 0, and is the lowest of the leaders */
    if (method == UCG_P2P_KNOMIAL) {
        status = ucg_plan_add_global(b, hier, UCG_PHASE_P2P_REDUCE, 0, &phase);
        if (status != UCS_OK) {
            return status;
        }
        if (phase != NULL) {
            phase->radix = b->config->knomial_radix;
        }

        status = ucg_plan_add_global(b, hier, UCG_PHASE_P2P_BCAST, 0, &phase);
        if (status != UCS_OK) {
            return status;
        }
        if (phase != NULL) {
            phase->radix     = b->config->knomial_radix;
            phase->frag_size = ucg_plan_p2p_bcast_frag(b);
        }
    } else {
        participants = hier ? topo->num_hosts : topo->size;
        if ((method == UCG_P2P_RING) ||
            ((method == UCG_P2P_AUTO) && (participants > 2) &&
             ucg_plan_reaches(b, b->config->allreduce_ring_thresh))) {
            inter = UCG_PHASE_P2P_ALLREDUCE_RING;
        } else {
            inter = UCG_PHASE_P2P_ALLREDUCE_RD;
        }

        status = ucg_plan_add_global(b, hier, inter, 0, &phase);
        if (status != UCS_OK) {
            return status;
        }
    }

    return ucg_plan_add_local_bcast(b, hier);
}
