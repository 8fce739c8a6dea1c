/**
 * UCG planner: alltoall and alltoallv, point-to-point by nature (every
 * member has other data for every member; docs/ucg.md says why the
 * host-local one-to-many phases are not used): one phase of all ranks.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"


/*
 * Linear (every message posted at once) unless the blocks are large:
 * then the pairwise exchange, one round at a time, bounds what is in
 * flight to one send and one receive per member.  With 2 members both are
 * one exchange.  Alltoallv has no size every member knows (msg_size is 0
 * in its key): linear unless ALLTOALLV_P2P says otherwise, the same on
 * every member.
 */
ucs_status_t ucg_plan_build_alltoall(ucg_plan_builder_t *b, int hier,
                                     unsigned root)
{
    ucg_coll_type_t type = b->key->type;
    ucg_p2p_method_t method;
    ucg_phase_t *phase;
    ucs_status_t status;

    status = ucg_plan_p2p_method(b, type, UCG_P2P_LINEAR, UCG_P2P_PAIRWISE,
                                 UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    if (method == UCG_P2P_AUTO) {
        method = ((type == UCG_COLL_ALLTOALL) && (b->topo->size > 2) &&
                  ucg_plan_reaches(b, b->config->alltoall_pairwise_thresh)) ?
                 UCG_P2P_PAIRWISE : UCG_P2P_LINEAR;
    }

    return ucg_plan_add_global(b, 0,
                               (method == UCG_P2P_PAIRWISE) ?
                               UCG_PHASE_P2P_ALLTOALL_PAIRWISE :
                               UCG_PHASE_P2P_ALLTOALL_LINEAR, 0, &phase);
}
