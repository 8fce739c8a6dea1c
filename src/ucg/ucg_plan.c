/**
 * UCG planner: topology and plans of phases (rules in docs/ucg.md).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan.h"
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
    [UCG_PHASE_LAST]                  = NULL
};

/* Names of the collectives (ucg_coll_name) */
static const char *ucg_plan_coll_names[] = {
    [UCG_COLL_BCAST]     = "bcast",
    [UCG_COLL_REDUCE]    = "reduce",
    [UCG_COLL_ALLREDUCE] = "allreduce",
    [UCG_COLL_BARRIER]   = "barrier",
    [UCG_COLL_GATHER]    = "gather",
    [UCG_COLL_SCATTER]   = "scatter",
    [UCG_COLL_ALLGATHER] = "allgather"
};

const char *ucg_coll_name(ucg_coll_type_t type)
{
    return ((unsigned)type < UCG_COLL_LAST) ? ucg_plan_coll_names[type] :
           "invalid";
}

/* Prefix of the <COLL>_P2P variables */
static const char *ucg_plan_coll_vars[] = {
    [UCG_COLL_BCAST]     = "BCAST",
    [UCG_COLL_REDUCE]    = "REDUCE",
    [UCG_COLL_ALLREDUCE] = "ALLREDUCE",
    [UCG_COLL_BARRIER]   = "BARRIER",
    [UCG_COLL_GATHER]    = "GATHER",
    [UCG_COLL_SCATTER]   = "SCATTER",
    [UCG_COLL_ALLGATHER] = "ALLGATHER"
};


/* ------------------------------------------------------------------------ */
/* Topology                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint64_t label;
    unsigned rank;
} ucg_topo_entry_t;

typedef struct {
    unsigned first_rank;   /* lowest rank of the host */
    unsigned start;        /* index in the sorted entries */
    unsigned count;
} ucg_topo_group_t;

static int ucg_topo_entry_cmp(const void *a, const void *b)
{
    const ucg_topo_entry_t *ea = a, *eb = b;

    if (ea->label != eb->label) {
        return (ea->label < eb->label) ? -1 : 1;
    }
    return (ea->rank < eb->rank) ? -1 : (ea->rank > eb->rank);
}

static int ucg_topo_group_cmp(const void *a, const void *b)
{
    const ucg_topo_group_t *ga = a, *gb = b;

    return (ga->first_rank < gb->first_rank) ? -1 :
           (ga->first_rank > gb->first_rank);
}

ucs_status_t ucg_topo_init(ucg_topo_t *topo, unsigned size,
                           const uint64_t *host_label, int o2m,
                           size_t sm_max_bcopy)
{
    ucg_topo_entry_t *entries = NULL;
    ucg_topo_group_t *groups  = NULL;
    ucs_status_t status;
    unsigned i, h, n, num_hosts;

    memset(topo, 0, sizeof(*topo));

    if ((size == 0) || (host_label == NULL)) {
        ucs_error("invalid topology: %u ranks, host labels %p", size,
                  host_label);
        return UCS_ERR_INVALID_PARAM;
    }

    entries = ucs_malloc(sizeof(*entries) * size, "ucg_topo_entries");
    groups  = ucs_malloc(sizeof(*groups) * size, "ucg_topo_groups");
    if ((entries == NULL) || (groups == NULL)) {
        goto err_nomem;
    }

    for (i = 0; i < size; ++i) {
        entries[i].label = host_label[i];
        entries[i].rank  = i;
    }

    /* Group ranks by label; each group is sorted by rank */
    qsort(entries, size, sizeof(*entries), ucg_topo_entry_cmp);
    num_hosts = 0;
    for (i = 0; i < size; ++i) {
        if ((i == 0) || (entries[i].label != entries[i - 1].label)) {
            groups[num_hosts].first_rank = entries[i].rank;
            groups[num_hosts].start      = i;
            groups[num_hosts].count      = 0;
            ++num_hosts;
        }
        ++groups[num_hosts - 1].count;
    }

    /* Hosts are numbered in the order of their lowest rank */
    qsort(groups, num_hosts, sizeof(*groups), ucg_topo_group_cmp);

    topo->size       = size;
    topo->num_hosts  = num_hosts;
    topo->o2m        = o2m;
    topo->sm_max_bcopy = o2m ? sm_max_bcopy : 0;
    topo->sm_max_members = UINT_MAX;
    topo->sm_cma         = 1;
    topo->mc             = 0;
    topo->host_of    = ucs_malloc(sizeof(unsigned) * size, "ucg_topo_host_of");
    topo->host_size  = ucs_malloc(sizeof(unsigned) * num_hosts,
                                  "ucg_topo_host_size");
    topo->host_first = ucs_malloc(sizeof(unsigned) * (num_hosts + 1),
                                  "ucg_topo_host_first");
    topo->host_ranks = ucs_malloc(sizeof(unsigned) * size,
                                  "ucg_topo_host_ranks");
    if ((topo->host_of == NULL) || (topo->host_size == NULL) ||
        (topo->host_first == NULL) || (topo->host_ranks == NULL)) {
        goto err_nomem;
    }

    n = 0;
    for (h = 0; h < num_hosts; ++h) {
        topo->host_size[h]  = groups[h].count;
        topo->host_first[h] = n;
        topo->max_ppn       = ucs_max(topo->max_ppn, groups[h].count);
        for (i = 0; i < groups[h].count; ++i) {
            topo->host_ranks[n]                      =
                entries[groups[h].start + i].rank;
            topo->host_of[topo->host_ranks[n]] = h;
            ++n;
        }
    }
    topo->host_first[num_hosts] = n;

    ucs_free(groups);
    ucs_free(entries);
    return UCS_OK;

err_nomem:
    ucs_error("failed to allocate the topology of %u ranks", size);
    status = UCS_ERR_NO_MEMORY;
    ucs_free(groups);
    ucs_free(entries);
    ucg_topo_cleanup(topo);
    return status;
}

void ucg_topo_cleanup(ucg_topo_t *topo)
{
    ucs_free(topo->host_of);
    ucs_free(topo->host_size);
    ucs_free(topo->host_first);
    ucs_free(topo->host_ranks);
    memset(topo, 0, sizeof(*topo));
}


/* ------------------------------------------------------------------------ */
/* Size thresholds                                                          */
/* ------------------------------------------------------------------------ */

typedef struct {
    const ucg_config_t   *config;
    const ucg_topo_t     *topo;
    const ucg_plan_key_t *key;
    ucg_plan_t           *plan;
    size_t               elem_size;
    size_t               sm_frag;    /* SM phases (hier plans) */
    unsigned             *leader;    /* [num_hosts] of the current part */
    unsigned             *sorted;    /* [num_hosts] scratch */
} ucg_plan_builder_t;

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
static int ucg_plan_reaches(ucg_plan_builder_t *b, size_t thresh)
{
    return (thresh != UCS_MEMUNITS_INF) && ucg_plan_size_ge(b, thresh);
}

/* msg_size <= @a max */
static int ucg_plan_size_le(ucg_plan_builder_t *b, size_t max)
{
    return (max == SIZE_MAX) || !ucg_plan_size_ge(b, max + 1);
}

/* Pipelined p2p bcast: messages larger than two fragments */
static size_t ucg_plan_p2p_bcast_frag(ucg_plan_builder_t *b)
{
    size_t frag = b->config->p2p_frag_size;

    if ((frag == UCS_MEMUNITS_INF) || (frag == UCS_MEMUNITS_AUTO) ||
        (frag == 0) || (frag > SIZE_MAX / 2)) {
        return 0;
    }

    return ucg_plan_size_ge(b, 2 * frag + 1) ? frag : 0;
}

/* Allgather takes the ring when msg_size * size >= ALLGATHER_RING_THRESH */
static int ucg_plan_allgather_ring(ucg_plan_builder_t *b)
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
    default:
        return 0;
    }
}


/* ------------------------------------------------------------------------ */
/* Plan construction                                                        */
/* ------------------------------------------------------------------------ */

static ucg_phase_t *ucg_plan_new_phase(ucg_plan_builder_t *b,
                                       ucg_phase_method_t method)
{
    ucg_phase_t *phase;

    if (b->plan->num_phases >= UCG_PLAN_MAX_PHASES) {
        /* The rules never make more: a bug, not a user error */
        ucs_error("plan of %s needs more than %d phases",
                  ucg_plan_coll_names[b->key->type], UCG_PLAN_MAX_PHASES);
        return NULL;
    }

    phase = &b->plan->phases[b->plan->num_phases++];
    memset(phase, 0, sizeof(*phase));
    phase->method  = method;
    phase->sm_mode = UCT_O2M_MODE_LAST;
    return phase;
}

static ucs_status_t ucg_plan_alloc_sets(ucg_phase_t *phase, unsigned num_sets)
{
    phase->sets = ucs_calloc(num_sets, sizeof(*phase->sets), "ucg_phase_sets");
    if (phase->sets == NULL) {
        ucs_error("failed to allocate %u phase sets", num_sets);
        return UCS_ERR_NO_MEMORY;
    }

    phase->num_sets = num_sets;
    return UCS_OK;
}

static ucs_status_t ucg_plan_alloc_ranks(ucg_phase_set_t *set, unsigned count)
{
    set->ranks = ucs_malloc(sizeof(*set->ranks) * count, "ucg_phase_ranks");
    if (set->ranks == NULL) {
        ucs_error("failed to allocate a phase set of %u ranks", count);
        return UCS_ERR_NO_MEMORY;
    }

    set->count = count;
    return UCS_OK;
}

/* Leaders of a part of the plan: @a root leads its host (rooted
 * collectives), elsewhere the lowest rank does */
static void ucg_plan_set_leaders(ucg_plan_builder_t *b, int rooted,
                                 unsigned root)
{
    const ucg_topo_t *topo = b->topo;
    unsigned h;

    for (h = 0; h < topo->num_hosts; ++h) {
        b->leader[h] = topo->host_ranks[topo->host_first[h]];
    }

    if (rooted) {
        b->leader[topo->host_of[root]] = root;
    }
}

static unsigned ucg_plan_num_local_sets(const ucg_topo_t *topo)
{
    unsigned h, n = 0;

    for (h = 0; h < topo->num_hosts; ++h) {
        n += (topo->host_size[h] > 1);
    }
    return n;
}

/* A host-local phase: one set per host of several members, rooted at its
 * leader; omitted when there is no such host */
static ucs_status_t ucg_plan_add_local(ucg_plan_builder_t *b,
                                       ucg_phase_method_t method,
                                       uct_o2m_mode_t mode, int native,
                                       ucg_phase_t **phase_p)
{
    const ucg_topo_t *topo = b->topo;
    unsigned num_sets      = ucg_plan_num_local_sets(topo);
    ucg_phase_set_t *set;
    ucg_phase_t *phase;
    ucs_status_t status;
    unsigned h, i, s;

    if (phase_p != NULL) {
        *phase_p = NULL;
    }

    if (num_sets == 0) {
        return UCS_OK;
    }

    phase = ucg_plan_new_phase(b, method);
    if (phase == NULL) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    phase->sm_mode   = mode;
    phase->sm_native = native;
    phase->frag_size = b->sm_frag;

    status = ucg_plan_alloc_sets(phase, num_sets);
    if (status != UCS_OK) {
        return status;
    }

    s = 0;
    for (h = 0; h < topo->num_hosts; ++h) {
        if (topo->host_size[h] < 2) {
            continue;
        }

        set    = &phase->sets[s++];
        status = ucg_plan_alloc_ranks(set, topo->host_size[h]);
        if (status != UCS_OK) {
            return status;
        }

        for (i = 0; i < set->count; ++i) {
            set->ranks[i] = topo->host_ranks[topo->host_first[h] + i];
            if (set->ranks[i] == b->leader[h]) {
                set->root = i;
            }
        }
    }

    if (phase_p != NULL) {
        *phase_p = phase;
    }
    return UCS_OK;
}

static int ucg_plan_unsigned_cmp(const void *a, const void *b)
{
    unsigned ua = *(const unsigned*)a, ub = *(const unsigned*)b;

    return (ua < ub) ? -1 : (ua > ub);
}

/* A phase with one set: the leaders (hier; omitted with one host) or all
 * ranks (flat), rooted at @a root */
static ucs_status_t ucg_plan_add_global(ucg_plan_builder_t *b, int hier,
                                        ucg_phase_method_t method,
                                        unsigned root, ucg_phase_t **phase_p)
{
    const ucg_topo_t *topo = b->topo;
    ucg_phase_set_t *set;
    ucg_phase_t *phase;
    ucs_status_t status;
    unsigned i;

    *phase_p = NULL;
    if (hier && (topo->num_hosts == 1)) {
        return UCS_OK;
    }

    phase = ucg_plan_new_phase(b, method);
    if (phase == NULL) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = ucg_plan_alloc_sets(phase, 1);
    if (status != UCS_OK) {
        return status;
    }

    set = &phase->sets[0];
    if (hier) {
        memcpy(b->sorted, b->leader, sizeof(*b->sorted) * topo->num_hosts);
        qsort(b->sorted, topo->num_hosts, sizeof(*b->sorted),
              ucg_plan_unsigned_cmp);
        status = ucg_plan_alloc_ranks(set, topo->num_hosts);
        if (status != UCS_OK) {
            return status;
        }
        memcpy(set->ranks, b->sorted, sizeof(*set->ranks) * set->count);
    } else {
        status = ucg_plan_alloc_ranks(set, topo->size);
        if (status != UCS_OK) {
            return status;
        }
        for (i = 0; i < topo->size; ++i) {
            set->ranks[i] = i;
        }
    }

    for (i = 0; i < set->count; ++i) {
        if (set->ranks[i] == root) {
            set->root = i;
        }
    }

    *phase_p = phase;
    return UCS_OK;
}

/* Owners of the blocks: the leader of each rank's host (hier) or the rank
 * itself */
static ucs_status_t ucg_plan_set_owner(ucg_plan_builder_t *b,
                                       ucg_phase_t *phase, int by_leader)
{
    const ucg_topo_t *topo = b->topo;
    unsigned r;

    if (phase == NULL) {
        return UCS_OK;
    }

    phase->owner = ucs_malloc(sizeof(*phase->owner) * topo->size,
                              "ucg_phase_owner");
    if (phase->owner == NULL) {
        ucs_error("failed to allocate the block owners of %u ranks",
                  topo->size);
        return UCS_ERR_NO_MEMORY;
    }

    for (r = 0; r < topo->size; ++r) {
        phase->owner[r] = by_leader ? b->leader[topo->host_of[r]] : r;
    }
    return UCS_OK;
}

/* Mode of a host-local phase by host size */
static uct_o2m_mode_t ucg_plan_ppn_mode(const ucg_plan_builder_t *b)
{
    return (b->topo->max_ppn <= b->config->sm_batched_max_ppn) ?
           UCT_O2M_MODE_BATCHED : UCT_O2M_MODE_CENTRALIZED;
}

static int ucg_plan_is_fanout_mode(unsigned mode)
{
    return (mode == UCT_O2M_MODE_BATCHED) ||
           (mode == UCT_O2M_MODE_CENTRALIZED);
}

static uct_o2m_mode_t ucg_plan_bcast_mode(const ucg_plan_builder_t *b)
{
    return ucg_plan_is_fanout_mode(b->config->sm_bcast_mode) ?
           (uct_o2m_mode_t)b->config->sm_bcast_mode : ucg_plan_ppn_mode(b);
}

static uct_o2m_mode_t ucg_plan_gather_mode(const ucg_plan_builder_t *b)
{
    /* A forced locked / atomic mode is for reductions */
    return ucg_plan_is_fanout_mode(b->config->sm_incast_mode) ?
           (uct_o2m_mode_t)b->config->sm_incast_mode : ucg_plan_ppn_mode(b);
}

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

static ucs_status_t ucg_plan_p2p_method(const ucg_plan_builder_t *b,
                                        ucg_coll_type_t type,
                                        ucg_p2p_method_t dfl,
                                        ucg_p2p_method_t alt1,
                                        ucg_p2p_method_t alt2,
                                        ucg_p2p_method_t *method_p)
{
    int method = b->config->p2p_method[type];

    if (method == UCG_P2P_AUTO) {
        *method_p = UCG_P2P_AUTO;
        return UCS_OK;
    }

    if ((method == dfl) || (method == alt1) || (method == alt2)) {
        *method_p = (ucg_p2p_method_t)method;
        return UCS_OK;
    }

    ucs_error("%sUCG_%s_P2P: %s is not a method of %s", b->config->env_prefix,
              ucg_plan_coll_vars[type],
              ((unsigned)method < UCG_P2P_LAST) ?
              ucg_p2p_method_names[method] : "?",
              ucg_plan_coll_names[type]);
    return UCS_ERR_INVALID_PARAM;
}

#define UCG_P2P_NONE UCG_P2P_LAST

static ucs_status_t ucg_plan_build_bcast(ucg_plan_builder_t *b, int hier,
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
        return ucg_plan_add_local(b, UCG_PHASE_SM_BCAST,
                                  ucg_plan_bcast_mode(b), 0, NULL);
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

static ucs_status_t ucg_plan_build_gather(ucg_plan_builder_t *b, int hier,
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
    if (hier) {
        status = ucg_plan_add_local(b, UCG_PHASE_SM_GATHER,
                                    ucg_plan_gather_mode(b), 0, &phase);
        if (status == UCS_OK) {
            status = ucg_plan_set_owner(b, phase, 0);
        }
        if (status != UCS_OK) {
            return status;
        }
    }

    status = ucg_plan_add_global(b, hier, UCG_PHASE_P2P_GATHER, root, &phase);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_set_owner(b, phase, hier);
}

static ucs_status_t ucg_plan_build_fold(ucg_plan_builder_t *b, unsigned root)
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

static ucs_status_t ucg_plan_build_reduce(ucg_plan_builder_t *b, int hier,
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

static ucs_status_t ucg_plan_build_allreduce(ucg_plan_builder_t *b, int hier)
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

    if (!hier) {
        return UCS_OK;
    }

    return ucg_plan_add_local(b, UCG_PHASE_SM_BCAST, ucg_plan_bcast_mode(b),
                              0, NULL);
}

static ucs_status_t ucg_plan_build_barrier(ucg_plan_builder_t *b, int hier)
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

    if (hier) {
        status = ucg_plan_add_local(b, UCG_PHASE_SM_GATHER,
                                    ucg_plan_gather_mode(b), 0, &phase);
        if (status == UCS_OK) {
            status = ucg_plan_set_owner(b, phase, 0);
        }
        if (status != UCS_OK) {
            return status;
        }
    }

    status = ucg_plan_add_global(b, hier, UCG_PHASE_P2P_BARRIER, 0, &phase);
    if ((status != UCS_OK) || !hier) {
        return status;
    }

    return ucg_plan_add_local(b, UCG_PHASE_SM_BCAST, ucg_plan_bcast_mode(b),
                              0, NULL);
}

static ucs_status_t ucg_plan_build_scatter(ucg_plan_builder_t *b, int hier,
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
    if ((status != UCS_OK) || !hier) {
        return status;
    }

    return ucg_plan_add_local(b, UCG_PHASE_SM_BCAST, ucg_plan_bcast_mode(b),
                              0, NULL);
}

static ucs_status_t ucg_plan_build_allgather(ucg_plan_builder_t *b, int hier)
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
    if (hier) {
        status = ucg_plan_add_local(b, UCG_PHASE_SM_GATHER,
                                    ucg_plan_gather_mode(b), 0, &phase);
        if (status == UCS_OK) {
            status = ucg_plan_set_owner(b, phase, 0);
        }
        if (status != UCS_OK) {
            return status;
        }
    }

    status = ucg_plan_add_global(b, hier, inter, 0, &phase);
    if (status == UCS_OK) {
        status = ucg_plan_set_owner(b, phase, hier);
    }
    if ((status != UCS_OK) || !hier) {
        return status;
    }

    return ucg_plan_add_local(b, UCG_PHASE_SM_BCAST, ucg_plan_bcast_mode(b),
                              0, NULL);
}

int ucg_plan_topo_hier(const ucg_config_t *config, const ucg_topo_t *topo)
{
    /* Host-local phases have a set of a host's members */
    return topo->o2m && (config->hier != UCG_HIER_OFF) &&
           ((config->hier == UCG_HIER_ON) || (topo->max_ppn > 1)) &&
           (topo->num_hosts < topo->size) &&
           (topo->max_ppn <= topo->sm_max_members);
}

static ucs_status_t ucg_plan_build(ucg_plan_builder_t *b, int hier,
                                   unsigned root)
{
    switch (b->key->type) {
    case UCG_COLL_BCAST:
        return ucg_plan_build_bcast(b, hier, root);
    case UCG_COLL_REDUCE:
        return ucg_plan_build_reduce(b, hier, root);
    case UCG_COLL_ALLREDUCE:
        return ucg_plan_build_allreduce(b, hier);
    case UCG_COLL_BARRIER:
        return ucg_plan_build_barrier(b, hier);
    case UCG_COLL_GATHER:
        return ucg_plan_build_gather(b, hier, root);
    case UCG_COLL_SCATTER:
        return ucg_plan_build_scatter(b, hier, root);
    case UCG_COLL_ALLGATHER:
        return ucg_plan_build_allgather(b, hier);
    default:
        return UCS_ERR_INVALID_PARAM;
    }
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
        if ((phase->method == UCG_PHASE_SM_REDUCE) ||
            (phase->method == UCG_PHASE_SM_ALLREDUCE)) {
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
 * Broadcasts between hosts on mc_udp: every P2P_BCAST phase whose set spans
 * several hosts (the host leaders; or every member in a flat plan) becomes
 * MC_BCAST when the group may use mc_udp and the message is not larger than
 * MC_MAX_SIZE.  The phase keeps its radix and fragment size for the
 * point-to-point phase that stands in for it where the leaders cannot all
 * join the multicast group (ucg_mc.c).
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
                  ucg_plan_coll_names[key->type], root, topo->size);
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

    /* SM_REDUCE fragments hold whole elements */
    if (status == UCS_OK) {
        unsigned i;
        for (i = 0; i < plan->num_phases; ++i) {
            ucg_phase_t *phase = &plan->phases[i];
            if ((phase->method == UCG_PHASE_SM_REDUCE) ||
                (phase->method == UCG_PHASE_SM_ALLREDUCE)) {
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


/* ------------------------------------------------------------------------ */
/* Plan cache                                                               */
/* ------------------------------------------------------------------------ */

/* A cached plan and the key it was asked for (plan->key is normalized) */
typedef struct ucg_plan_entry {
    ucs_list_link_t list;
    ucg_plan_key_t  key;
    ucg_plan_t      *plan;
} ucg_plan_entry_t;

void ucg_plan_cache_init(ucg_plan_cache_t *cache)
{
    ucs_list_head_init(&cache->plans);
}

void ucg_plan_cache_cleanup(ucg_plan_cache_t *cache)
{
    ucg_plan_entry_t *entry, *tmp;

    ucs_list_for_each_safe(entry, tmp, &cache->plans, list) {
        ucg_plan_destroy(entry->plan);
        ucs_list_del(&entry->list);
        ucs_free(entry);
    }
}

/* Whether the plan of @a entry is the plan of @a key */
static int ucg_plan_entry_match(const ucg_plan_entry_t *entry,
                                const ucg_plan_key_t *key)
{
    const ucg_plan_key_t *ek = &entry->key;

    return (ek->type == key->type) && (ek->root == key->root) &&
           (ek->op == key->op) && (ek->dtype == key->dtype) &&
           (ek->dt_size == key->dt_size) &&
           (ek->commutative == key->commutative) &&
           (ek->flat == key->flat) &&
           (key->msg_size >= entry->plan->size_min) &&
           (key->msg_size <= entry->plan->size_max);
}

ucs_status_t ucg_plan_cache_get(ucg_plan_cache_t *cache,
                                const ucg_config_t *config,
                                const ucg_topo_t *topo,
                                const ucg_plan_key_t *key,
                                const ucg_plan_t **plan_p, int *created_p)
{
    ucg_plan_entry_t *entry;
    ucs_status_t status;

    ucs_list_for_each(entry, &cache->plans, list) {
        if (ucg_plan_entry_match(entry, key)) {
            *plan_p = entry->plan;
            if (created_p != NULL) {
                *created_p = 0;
            }
            return UCS_OK;
        }
    }

    entry = ucs_malloc(sizeof(*entry), "ucg_plan_entry");
    if (entry == NULL) {
        ucs_error("failed to allocate a plan cache entry");
        return UCS_ERR_NO_MEMORY;
    }

    status = ucg_plan_create(config, topo, key, &entry->plan);
    if (status != UCS_OK) {
        ucs_free(entry);
        return status;
    }

    entry->key = *key;
    ucs_list_add_tail(&cache->plans, &entry->list);
    *plan_p = entry->plan;
    if (created_p != NULL) {
        *created_p = 1;
    }
    return UCS_OK;
}

const ucg_phase_set_t *ucg_phase_find_set(const ucg_phase_t *phase,
                                          unsigned rank, unsigned *idx_p)
{
    const ucg_phase_set_t *set;
    unsigned s, lo, hi, mid;

    for (s = 0; s < phase->num_sets; ++s) {
        set = &phase->sets[s];
        if ((set->count == 0) || (rank < set->ranks[0]) ||
            (rank > set->ranks[set->count - 1])) {
            continue;
        }

        /* ranks[] is ascending */
        lo = 0;
        hi = set->count;
        while (lo < hi) {
            mid = lo + (hi - lo) / 2;
            if (set->ranks[mid] < rank) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }

        if ((lo < set->count) && (set->ranks[lo] == rank)) {
            if (idx_p != NULL) {
                *idx_p = lo;
            }
            return set;
        }
    }

    return NULL;
}


/* ------------------------------------------------------------------------ */
/* Printing                                                                 */
/* ------------------------------------------------------------------------ */

/* Consecutive runs of at least this many ranks print as "first-last" */
#define UCG_PLAN_PRINT_MIN_RUN 3

/* Ranks separated by commas; runs compressed; @a mark (if < count) gets
 * a '*' and is never inside a run */
static void ucg_plan_print_ranks(FILE *stream, const unsigned *ranks,
                                 unsigned count, unsigned mark)
{
    unsigned i, j;

    for (i = 0; i < count; i = j) {
        if (i > 0) {
            fputc(',', stream);
        }

        if (i == mark) {
            fprintf(stream, "%u*", ranks[i]);
            j = i + 1;
            continue;
        }

        for (j = i + 1; (j < count) && (j != mark) &&
                        (ranks[j] == ranks[j - 1] + 1); ++j) {
        }

        if (j - i >= UCG_PLAN_PRINT_MIN_RUN) {
            fprintf(stream, "%u-%u", ranks[i], ranks[j - 1]);
        } else {
            fprintf(stream, "%u", ranks[i]);
            j = i + 1;
        }
    }
}

static const char *ucg_plan_phase_transport(ucg_phase_method_t method)
{
    switch (method) {
    case UCG_PHASE_SM_BCAST:
    case UCG_PHASE_SM_ALLREDUCE:
    case UCG_PHASE_SM_BCAST_CMA:
        return UCT_O2M_BCAST_TL_NAME;
    case UCG_PHASE_SM_REDUCE:
    case UCG_PHASE_SM_GATHER:
    case UCG_PHASE_SM_REDUCE_CMA:
        return UCT_O2M_INCAST_TL_NAME;
    case UCG_PHASE_FOLD:
        return "local";
    case UCG_PHASE_MC_BCAST:
        return UCT_MC_UDP_TL_NAME;
    default:
        return "ucp";
    }
}

static int ucg_plan_phase_is_sm(ucg_phase_method_t method)
{
    return (method == UCG_PHASE_SM_BCAST) || (method == UCG_PHASE_SM_REDUCE) ||
           (method == UCG_PHASE_SM_GATHER) ||
           (method == UCG_PHASE_SM_ALLREDUCE) ||
           (method == UCG_PHASE_SM_BCAST_CMA) ||
           (method == UCG_PHASE_SM_REDUCE_CMA);
}

void ucg_plan_print(const ucg_plan_t *plan, const ucg_topo_t *topo,
                    FILE *stream)
{
    const ucg_plan_key_t *key = &plan->key;
    const ucg_phase_t *phase;
    char attrs[128];
    size_t len;
    unsigned h, i, s, r;
    int leader_owned;

    /* Header: what, and on which layout */
    fprintf(stream, "%s %zu bytes",
            ((unsigned)key->type < UCG_COLL_LAST) ?
            ucg_plan_coll_names[key->type] : "?", key->msg_size);
    if (ucg_coll_type_is_reduction(key->type)) {
        fprintf(stream, " %s on %s%s", ucg_op_name(key->op),
                ucg_dtype_name(key->dtype),
                key->commutative ? "" : " (non-commutative)");
    }
    if (ucg_coll_type_is_rooted(key->type)) {
        fprintf(stream, " root %u", key->root);
    }

    fprintf(stream, ", %u rank%s on %u host%s ", topo->size,
            (topo->size == 1) ? "" : "s", topo->num_hosts,
            (topo->num_hosts == 1) ? "" : "s");
    for (h = 0; h < topo->num_hosts; ++h) {
        fputc('[', stream);
        ucg_plan_print_ranks(stream, &topo->host_ranks[topo->host_first[h]],
                             topo->host_size[h], UINT_MAX);
        fputc(']', stream);
    }
    fprintf(stream, ": %s, %u phase%s\n", plan->hier ? "hierarchical" : "flat",
            plan->num_phases, (plan->num_phases == 1) ? "" : "s");

    for (i = 0; i < plan->num_phases; ++i) {
        phase   = &plan->phases[i];
        attrs[0] = '\0';
        len      = 0;

        if (ucg_plan_phase_is_sm(phase->method)) {
            len += snprintf(attrs + len, sizeof(attrs) - len, " %s",
                            uct_o2m_mode_name(phase->sm_mode));
            if (phase->method == UCG_PHASE_SM_REDUCE) {
                len += snprintf(attrs + len, sizeof(attrs) - len, " %s",
                                phase->sm_native ? "native" :
                                                   "gather-reduce");
            } else if ((phase->method == UCG_PHASE_SM_BCAST_CMA) ||
                       (phase->method == UCG_PHASE_SM_REDUCE_CMA)) {
                len += snprintf(attrs + len, sizeof(attrs) - len,
                                " ack %s",
                                uct_o2m_mode_name(phase->sm_ack_mode));
            }
        }
        if (phase->method == UCG_PHASE_MC_BCAST) {
            /* radix and fragments are those of its point-to-point stand-in;
             * mc_udp fragments are agreed when the leaders join */
        } else if (phase->radix != 0) {
            len += snprintf(attrs + len, sizeof(attrs) - len, " radix %u",
                            phase->radix);
        }
        if ((phase->frag_size != 0) &&
            (phase->method != UCG_PHASE_MC_BCAST)) {
            len += snprintf(attrs + len, sizeof(attrs) - len, " frag %zu",
                            phase->frag_size);
        }
        if (phase->owner != NULL) {
            leader_owned = 0;
            for (r = 0; r < topo->size; ++r) {
                leader_owned |= (phase->owner[r] != r);
            }
            if (leader_owned) {
                len += snprintf(attrs + len, sizeof(attrs) - len,
                                " blocks@leaders");
            }
        }

        fprintf(stream, "  %u: %-20s %-9s %-34s", i,
                ((unsigned)phase->method < UCG_PHASE_LAST) ?
                ucg_phase_method_names[phase->method] : "?",
                ucg_plan_phase_transport(phase->method),
                (attrs[0] == ' ') ? attrs + 1 : attrs);
        for (s = 0; s < phase->num_sets; ++s) {
            fputs(" {", stream);
            ucg_plan_print_ranks(stream, phase->sets[s].ranks,
                                 phase->sets[s].count, phase->sets[s].root);
            fputc('}', stream);
        }
        fputc('\n', stream);
    }
}
