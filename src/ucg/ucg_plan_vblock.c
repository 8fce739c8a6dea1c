/**
 * UCG planner: the collectives with a count per member, gatherv, scatterv
 * and allgatherv (docs/ucg.md, "Vector collectives").
 *
 * Their plans do not depend on the counts: in gatherv and scatterv only
 * the root knows them, and in allgatherv every member has its own copy,
 * which nothing checks against the others'.  A plan chosen from the counts
 * could differ between members (a member with other counts, however
 * erroneous, would then wait for messages that are never sent); one chosen
 * from the type, the root, the topology and the configuration is the same
 * everywhere, and a member with another count only makes its messages fail
 * the length check where they arrive.  gatherv and scatterv are flat
 * point-to-point (a host leader would forward blocks whose lengths it
 * cannot know); allgatherv on one host of at most SM_ALLREDUCE_MAX_PPN
 * members is sm_allgatherv, which has no leader: each member fans out its
 * own block and each receiver cuts it by its own counts (measured in
 * docs/ucg.md, "Vector collectives and the one-to-many transports").
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"


int ucg_plan_vblock_hier(ucg_plan_builder_t *b)
{
    const ucg_topo_t *topo = b->topo;

    /* From the topology and the configuration only: the same on every
     * member, whatever its counts */
    return (b->key->type == UCG_COLL_ALLGATHERV) && (topo->num_hosts == 1) &&
           (topo->max_ppn <= b->config->sm_allreduce_max_ppn);
}

/* One flat phase of @a method rooted at @a root: every rank holds its own
 * block */
static ucs_status_t ucg_plan_vblock_flat(ucg_plan_builder_t *b,
                                         ucg_phase_method_t method,
                                         unsigned root)
{
    ucg_phase_t *phase;
    ucs_status_t status;

    /* The caller's hier only says the group could use host-local phases */
    b->plan->hier = 0;
    ucg_plan_set_leaders(b, 1, root);
    status = ucg_plan_add_global(b, 0, method, root, &phase);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_set_owner(b, phase, 0);
}

ucs_status_t ucg_plan_build_gatherv(ucg_plan_builder_t *b, int hier,
                                    unsigned root)
{
    ucg_p2p_method_t method;
    ucs_status_t status;

    status = ucg_plan_p2p_method(b, UCG_COLL_GATHERV, UCG_P2P_LINEAR,
                                 UCG_P2P_NONE, UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_vblock_flat(b, UCG_PHASE_P2P_GATHER, root);
}

ucs_status_t ucg_plan_build_scatterv(ucg_plan_builder_t *b, int hier,
                                     unsigned root)
{
    ucg_p2p_method_t method;
    ucs_status_t status;

    status = ucg_plan_p2p_method(b, UCG_COLL_SCATTERV, UCG_P2P_LINEAR,
                                 UCG_P2P_NONE, UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_vblock_flat(b, UCG_PHASE_P2P_SCATTER, root);
}

ucs_status_t ucg_plan_build_allgatherv(ucg_plan_builder_t *b, int hier,
                                       unsigned root)
{
    ucg_p2p_method_t method;
    ucs_status_t status;

    status = ucg_plan_p2p_method(b, UCG_COLL_ALLGATHERV, UCG_P2P_LINEAR,
                                 UCG_P2P_RING, UCG_P2P_NONE, &method);
    if (status != UCS_OK) {
        return status;
    }

    if (hier && (method == UCG_P2P_AUTO)) {
        /* One host (ucg_plan_vblock_hier): its set is every rank */
        ucg_plan_set_leaders(b, 0, 0);
        return ucg_plan_add_local(b, UCG_PHASE_SM_ALLGATHERV,
                                  ucg_plan_bcast_mode(b), 0, NULL);
    }

    return ucg_plan_vblock_flat(b, (method == UCG_P2P_RING) ?
                                   UCG_PHASE_P2P_ALLGATHER_RING :
                                   UCG_PHASE_P2P_ALLGATHER_LINEAR, 0);
}
