/**
 * UCG planner: plans of phases (rules in docs/ucg.md), the size thresholds
 * the builders share, and the builders' dispatch.  The phase helpers of the
 * builders are in ucg_plan_phase.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"
#include "ucg_def.h"
#include "ucg_dt.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>

#include <string.h>
#include <stdlib.h>
#include <limits.h>


const char *ucg_phase_method_names[] = {
    [UCG_PHASE_SM_BCAST]              = "sm_bcast",
    [UCG_PHASE_SM_REDUCE]             = "sm_reduce",
    [UCG_PHASE_SM_GATHER]             = "sm_gather",
    [UCG_PHASE_SM_ALLREDUCE]          = "sm_allreduce",
    [UCG_PHASE_SM_BCAST_CMA]          = "sm_bcast_cma",
    [UCG_PHASE_SM_REDUCE_CMA]         = "sm_reduce_cma",
    [UCG_PHASE_P2P_BCAST]             = "p2p_bcast",
    [UCG_PHASE_P2P_REDUCE]            = "p2p_reduce",
    [UCG_PHASE_P2P_ALLREDUCE_RD]      = "p2p_allreduce_rd",
    [UCG_PHASE_P2P_ALLREDUCE_RING]    = "p2p_allreduce_ring",
    [UCG_PHASE_P2P_GATHER]            = "p2p_gather",
    [UCG_PHASE_P2P_SCATTER]           = "p2p_scatter",
    [UCG_PHASE_P2P_ALLGATHER_RING]    = "p2p_allgather_ring",
    [UCG_PHASE_P2P_ALLGATHER_LINEAR]  = "p2p_allgather_linear",
    [UCG_PHASE_P2P_BARRIER]           = "p2p_barrier",
    [UCG_PHASE_FOLD]                  = "fold",
    [UCG_PHASE_MC_BCAST]              = "mc_bcast",
    [UCG_PHASE_P2P_REDUCE_SCATTER]    = "p2p_reduce_scatter",
    [UCG_PHASE_P2P_SCAN]              = "p2p_scan",
    [UCG_PHASE_SM_SCAN]               = "sm_scan",
    [UCG_PHASE_SM_REDUCE_SCATTER]     = "sm_reduce_scatter",
    [UCG_PHASE_P2P_ALLTOALL_LINEAR]   = "p2p_alltoall_linear",
    [UCG_PHASE_P2P_ALLTOALL_PAIRWISE] = "p2p_alltoall_pair",
    [UCG_PHASE_SM_ALLGATHERV]         = "sm_allgatherv",
    [UCG_PHASE_LAST]                  = NULL
};

const ucg_plan_phase_info_t ucg_plan_phase_info[] = {
    [UCG_PHASE_SM_BCAST]             = {UCT_O2M_BCAST_TL_NAME,
                                        UCG_PHASE_INFO_SM},
    [UCG_PHASE_SM_REDUCE]            = {UCT_O2M_INCAST_TL_NAME,
                                        UCG_PHASE_INFO_SM |
                                        UCG_PHASE_INFO_NATIVE |
                                        UCG_PHASE_INFO_ELEMS},
    [UCG_PHASE_SM_GATHER]            = {UCT_O2M_INCAST_TL_NAME,
                                        UCG_PHASE_INFO_SM},
    [UCG_PHASE_SM_ALLREDUCE]         = {UCT_O2M_BCAST_TL_NAME,
                                        UCG_PHASE_INFO_SM |
                                        UCG_PHASE_INFO_ELEMS},
    [UCG_PHASE_SM_BCAST_CMA]         = {UCT_O2M_BCAST_TL_NAME,
                                        UCG_PHASE_INFO_SM |
                                        UCG_PHASE_INFO_ACK},
    [UCG_PHASE_SM_REDUCE_CMA]        = {UCT_O2M_INCAST_TL_NAME,
                                        UCG_PHASE_INFO_SM |
                                        UCG_PHASE_INFO_ACK},
    [UCG_PHASE_P2P_BCAST]            = {"ucp", 0},
    [UCG_PHASE_P2P_REDUCE]           = {"ucp", 0},
    [UCG_PHASE_P2P_ALLREDUCE_RD]     = {"ucp", 0},
    [UCG_PHASE_P2P_ALLREDUCE_RING]   = {"ucp", 0},
    [UCG_PHASE_P2P_GATHER]           = {"ucp", 0},
    [UCG_PHASE_P2P_SCATTER]          = {"ucp", 0},
    [UCG_PHASE_P2P_ALLGATHER_RING]   = {"ucp", 0},
    [UCG_PHASE_P2P_ALLGATHER_LINEAR] = {"ucp", 0},
    [UCG_PHASE_P2P_BARRIER]          = {"ucp", 0},
    [UCG_PHASE_FOLD]                 = {"local", 0},
    /* The group's transport, printed from topo->mc_tl */
    [UCG_PHASE_MC_BCAST]             = {"mc", UCG_PHASE_INFO_STANDIN},
    [UCG_PHASE_P2P_REDUCE_SCATTER]   = {"ucp", 0},
    [UCG_PHASE_P2P_SCAN]             = {"ucp", 0},
    [UCG_PHASE_SM_SCAN]              = {UCT_O2M_BCAST_TL_NAME,
                                        UCG_PHASE_INFO_SM |
                                        UCG_PHASE_INFO_ELEMS},
    [UCG_PHASE_SM_REDUCE_SCATTER]    = {UCT_O2M_BCAST_TL_NAME,
                                        UCG_PHASE_INFO_SM |
                                        UCG_PHASE_INFO_ELEMS},
    [UCG_PHASE_P2P_ALLTOALL_LINEAR]  = {"ucp", 0},
    [UCG_PHASE_P2P_ALLTOALL_PAIRWISE] = {"ucp", 0},
    [UCG_PHASE_SM_ALLGATHERV]        = {UCT_O2M_BCAST_TL_NAME,
                                        UCG_PHASE_INFO_SM}
};


/* ------------------------------------------------------------------------ */
/* Size thresholds                                                          */
/* ------------------------------------------------------------------------ */

/*
 * Every choice that depends on the message size goes through one of these:
 * it tells on which side of its threshold key->msg_size is, and narrows the
 * plan's size range to that side.  A cached plan is thus reused exactly for
 * the sizes that make every choice of its build the same, whatever the
 * builders decide; no second copy of their thresholds has to agree.
 */

/* msg_size >= @a thresh */
static int ucg_plan_size_ge(ucg_plan_builder_t *b, size_t thresh)
{
    ucg_plan_t *plan = b->plan;

    if (b->key->msg_size >= thresh) {
        plan->size_min = ucs_max(plan->size_min, thresh);
        return 1;
    }

    plan->size_max = ucs_min(plan->size_max, thresh - 1);
    return 0;
}

/* msg_size >= @a thresh, "inf" never reached */
int ucg_plan_reaches(ucg_plan_builder_t *b, size_t thresh)
{
    return (thresh != UCS_MEMUNITS_INF) && ucg_plan_size_ge(b, thresh);
}

/* msg_size <= @a max */
int ucg_plan_size_le(ucg_plan_builder_t *b, size_t max)
{
    return (max == SIZE_MAX) || !ucg_plan_size_ge(b, max + 1);
}

/* Pipelined p2p bcast: messages larger than two fragments */
size_t ucg_plan_p2p_bcast_frag(ucg_plan_builder_t *b)
{
    size_t frag = b->config->p2p_frag_size;

    if ((frag == UCS_MEMUNITS_INF) || (frag == UCS_MEMUNITS_AUTO) ||
        (frag == 0) || (frag > SIZE_MAX / 2)) {
        return 0;
    }

    return ucg_plan_size_ge(b, 2 * frag + 1) ? frag : 0;
}

/* Allgather takes the ring when msg_size * size >= ALLGATHER_RING_THRESH */
int ucg_plan_allgather_ring(ucg_plan_builder_t *b)
{
    size_t thresh = b->config->allgather_ring_thresh;
    size_t size   = b->topo->size;

    if ((thresh == UCS_MEMUNITS_INF) || (thresh == UCS_MEMUNITS_AUTO)) {
        return 0;
    }

    /* The smallest msg_size that reaches it: size >= 1 */
    return ucg_plan_size_ge(b, (thresh / size) + ((thresh % size) != 0));
}

/*
 * Scatter through sm_bcast gives every member its whole host's blocks, and
 * allgather's fan-in + fan-out copy the whole result twice: above these
 * sizes point-to-point moves less.
 */
static int ucg_plan_sm_too_large(ucg_plan_builder_t *b)
{
    switch (b->key->type) {
    case UCG_COLL_SCATTER:
        return !ucg_plan_size_le(b, b->config->sm_scatter_max);
    case UCG_COLL_ALLGATHER:
        return !ucg_plan_size_le(b, b->config->sm_allgather_max);
    case UCG_COLL_REDUCE_SCATTER:
    case UCG_COLL_REDUCE_SCATTER_BLOCK:
    case UCG_COLL_SCAN:
    case UCG_COLL_EXSCAN:
        return !ucg_plan_redscan_hier(b);
    case UCG_COLL_GATHERV:
    case UCG_COLL_SCATTERV:
    case UCG_COLL_ALLGATHERV:
        return !ucg_plan_vblock_hier(b);
    case UCG_COLL_ALLTOALL:
    case UCG_COLL_ALLTOALLV:
        /* Each member gets other data from each member: the host-local
         * fan-in / fan-out would carry every block through a leader, or
         * every member's whole buffer to every member (docs/ucg.md) */
        return 1;
    default:
        return 0;
    }
}


int ucg_plan_topo_hier(const ucg_config_t *config, const ucg_topo_t *topo)
{
    /* Host-local phases have a set of a host's members */
    return topo->o2m && (config->hier != UCG_HIER_OFF) &&
           ((config->hier == UCG_HIER_ON) || (topo->max_ppn > 1)) &&
           (topo->num_hosts < topo->size) &&
           (topo->max_ppn <= topo->sm_max_members);
}

/* The builder of each collective */
static const ucg_plan_build_func_t ucg_plan_builders[] = {
    [UCG_COLL_BCAST]     = ucg_plan_build_bcast,
    [UCG_COLL_REDUCE]    = ucg_plan_build_reduce,
    [UCG_COLL_ALLREDUCE] = ucg_plan_build_allreduce,
    [UCG_COLL_BARRIER]   = ucg_plan_build_barrier,
    [UCG_COLL_GATHER]    = ucg_plan_build_gather,
    [UCG_COLL_SCATTER]   = ucg_plan_build_scatter,
    [UCG_COLL_ALLGATHER] = ucg_plan_build_allgather,
    [UCG_COLL_REDUCE_SCATTER]       = ucg_plan_build_reduce_scatter,
    [UCG_COLL_REDUCE_SCATTER_BLOCK] = ucg_plan_build_reduce_scatter,
    [UCG_COLL_SCAN]                 = ucg_plan_build_scan,
    [UCG_COLL_EXSCAN]               = ucg_plan_build_scan,
    [UCG_COLL_GATHERV]   = ucg_plan_build_gatherv,
    [UCG_COLL_SCATTERV]  = ucg_plan_build_scatterv,
    [UCG_COLL_ALLGATHERV] = ucg_plan_build_allgatherv,
    [UCG_COLL_ALLTOALL]  = ucg_plan_build_alltoall,
    [UCG_COLL_ALLTOALLV] = ucg_plan_build_alltoall
};

static ucs_status_t ucg_plan_build(ucg_plan_builder_t *b, int hier,
                                   unsigned root)
{
    return ucg_plan_builders[b->key->type](b, hier, root);
}

/* Whether the host-local reductions can carry an element: the transport
 * reduces (or gathers for the root to reduce) a message at a time, so a
 * fragment holds whole elements, at least one, and a message is at most
 * the transports' largest bcopy with UCG's header.  The single-copy
 * reduce reads whole elements in chunks of any size. */
static int ucg_plan_sm_holds_elems(ucg_plan_builder_t *b)
{
    const ucg_phase_t *phase;
    unsigned i;

    if ((b->topo->sm_max_bcopy > sizeof(ucg_sm_hdr_t)) &&
        (b->elem_size <= b->topo->sm_max_bcopy - sizeof(ucg_sm_hdr_t))) {
        return 1;
    }

    for (i = 0; i < b->plan->num_phases; ++i) {
        phase = &b->plan->phases[i];
        if (ucg_plan_phase_info[phase->method].flags &
            UCG_PHASE_INFO_ELEMS) {
            /* An empty reduction carries no element */
            return !ucg_plan_size_ge(b, 1);
        }
    }

    return 1;
}

static void ucg_plan_clear_phases(ucg_plan_t *plan)
{
    ucg_phase_t *phase;
    unsigned i, s;

    for (i = 0; i < plan->num_phases; ++i) {
        phase = &plan->phases[i];
        if (phase->sets != NULL) {
            for (s = 0; s < phase->num_sets; ++s) {
                ucs_free(phase->sets[s].ranks);
            }
        }
        ucs_free(phase->sets);
        ucs_free(phase->owner);
    }

    memset(plan->phases, 0, sizeof(plan->phases));
    plan->num_phases = 0;
}

/*
 * Broadcasts between hosts on multicast: every P2P_BCAST phase whose set
 * spans several hosts (the host leaders; or every member in a flat plan)
 * becomes MC_BCAST when the group has a multicast transport (topo->mc_tl,
 * the same for every phase) and the message is not larger than
 * MC_MAX_SIZE.  The phase keeps its radix and fragment size for the
 * point-to-point phase that stands in for it where the leaders cannot all
 * join the multicast group (ucg_mc_agree.c).
 */
static void ucg_plan_use_mc(ucg_plan_builder_t *b)
{
    const ucg_topo_t *topo = b->topo;
    ucg_plan_t *plan       = b->plan;
    const ucg_phase_set_t *set;
    ucg_phase_t *phase;
    unsigned i, j;
    int spans;

    if (!topo->mc || !ucg_plan_size_le(b, b->config->mc_max_size)) {
        return;
    }

    for (i = 0; i < plan->num_phases; ++i) {
        phase = &plan->phases[i];
        if ((phase->method != UCG_PHASE_P2P_BCAST) || (phase->num_sets != 1)) {
            continue;
        }

        set   = &phase->sets[0];
        spans = 0;
        for (j = 1; j < set->count; ++j) {
            spans |= (topo->host_of[set->ranks[j]] !=
                      topo->host_of[set->ranks[0]]);
        }
        if (spans) {
            phase->method = UCG_PHASE_MC_BCAST;
        }
    }
}

ucs_status_t ucg_plan_create(const ucg_config_t *config,
                             const ucg_topo_t *topo,
                             const ucg_plan_key_t *key, ucg_plan_t **plan_p)
{
    ucg_plan_builder_t b;
    ucg_plan_t *plan;
    ucs_status_t status;
    unsigned root;
    int hier;

    if ((config == NULL) || (topo == NULL) || (key == NULL) ||
        (plan_p == NULL) || (topo->size == 0)) {
        ucs_error("ucg_plan_create: invalid arguments");
        return UCS_ERR_INVALID_PARAM;
    }

    if ((unsigned)key->type >= UCG_COLL_LAST) {
        ucs_error("invalid collective type %d", (int)key->type);
        return UCS_ERR_INVALID_PARAM;
    }

    root = ucg_coll_type_is_rooted(key->type) ? key->root : 0;
    if (root >= topo->size) {
        ucs_error("%s: root %u is not a rank of a group of %u",
                  ucg_coll_name(key->type), root, topo->size);
        return UCS_ERR_INVALID_PARAM;
    }

    memset(&b, 0, sizeof(b));
    b.config    = config;
    b.topo      = topo;
    b.key       = key;
    b.elem_size = key->dt_size ? key->dt_size : ucg_dtype_size(key->dtype);
    if (b.elem_size == 0) {
        b.elem_size = 1;
    }

    plan = ucs_calloc(1, sizeof(*plan), "ucg_plan");
    b.leader = ucs_malloc(sizeof(*b.leader) * topo->num_hosts,
                          "ucg_plan_leaders");
    b.sorted = ucs_malloc(sizeof(*b.sorted) * topo->num_hosts,
                          "ucg_plan_sorted");
    if ((plan == NULL) || (b.leader == NULL) || (b.sorted == NULL)) {
        ucs_error("failed to allocate a plan");
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }

    plan->key      = *key;
    plan->key.root = root;
    if (!ucg_coll_type_is_reduction(key->type)) {
        plan->key.op = UCG_OP_LAST;
    }
    plan->size_min = 0;
    plan->size_max = SIZE_MAX;
    b.plan         = plan;

    hier = !key->flat && ucg_plan_topo_hier(config, topo) &&
           !ucg_plan_sm_too_large(&b);
    if (hier) {
        if (config->sm_frag_size != UCS_MEMUNITS_AUTO) {
            b.sm_frag = config->sm_frag_size;
        } else if (topo->sm_max_bcopy > sizeof(ucg_sm_hdr_t)) {
            b.sm_frag = topo->sm_max_bcopy - sizeof(ucg_sm_hdr_t);
        } else {
            ucs_error("host-local fragments: largest sm message %zu is not "
                      "larger than UCG's header", topo->sm_max_bcopy);
            status = UCS_ERR_INVALID_PARAM;
            goto out;
        }
    }
    plan->hier = hier;

    if (topo->size == 1) {
        status = UCS_OK; /* nothing to move */
        goto out;
    }

    status = ucg_plan_build(&b, hier, root);
    if ((status == UCS_OK) && hier && !ucg_plan_sm_holds_elems(&b)) {
        /* A reduction fragment of the host-local phases cannot hold one
         * element: point-to-point messages have no such limit.  Every
         * member decides the same: the element size is an argument of the
         * collective and the fragment size comes from the configuration
         * and the topology. */
        ucg_plan_clear_phases(plan);
        hier       = 0;
        plan->hier = 0;
        b.sm_frag  = 0;
        status     = ucg_plan_build(&b, hier, root);
    }

    if (status == UCS_OK) {
        ucg_plan_use_mc(&b);
    }

    /* Fragments of the phases that reduce one at a time hold whole
     * elements */
    if (status == UCS_OK) {
        unsigned i;
        for (i = 0; i < plan->num_phases; ++i) {
            ucg_phase_t *phase = &plan->phases[i];
            if (ucg_plan_phase_info[phase->method].flags &
                UCG_PHASE_INFO_ELEMS) {
                phase->frag_size = ucg_frag_whole_elems(phase->frag_size,
                                                        b.elem_size);
            }
        }
    }

out:
    ucs_free(b.sorted);
    ucs_free(b.leader);
    if (status != UCS_OK) {
        ucg_plan_destroy(plan);
        return status;
    }

    *plan_p = plan;
    return UCS_OK;
}

void ucg_plan_destroy(ucg_plan_t *plan)
{
    if (plan == NULL) {
        return;
    }

    ucg_plan_clear_phases(plan);
    ucs_free(plan);
}


const ucg_phase_set_t *ucg_phase_find_set(const ucg_phase_t *phase,
                                          unsigned rank, unsigned *idx_p)
{
    const ucg_phase_set_t *set;
    unsigned s;
    int idx;

    for (s = 0; s < phase->num_sets; ++s) {
        set = &phase->sets[s];
        if ((set->count == 0) || (rank < set->ranks[0]) ||
            (rank > set->ranks[set->count - 1])) {
            continue;
        }

        idx = ucg_phase_set_idx(set, rank);
        if (idx >= 0) {
            if (idx_p != NULL) {
                *idx_p = idx;
            }
            return set;
        }
    }

    return NULL;
}
