/**
 * UCG planner: the phase helpers the builders share.  A phase and its sets
 * of ranks, the host leaders, the host-local and the global phases, the
 * owners of the blocks, the modes of the host-local phases and the
 * point-to-point method a <COLL>_P2P variable forces.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <string.h>
#include <stdlib.h>


/* ------------------------------------------------------------------------ */
/* Phases and their sets                                                    */
/* ------------------------------------------------------------------------ */

ucg_phase_t *ucg_plan_new_phase(ucg_plan_builder_t *b,
                                ucg_phase_method_t method)
{
    ucg_phase_t *phase;

    if (b->plan->num_phases >= UCG_PLAN_MAX_PHASES) {
        /* The rules never make more: a bug, not a user error */
        ucs_error("plan of %s needs more than %d phases",
                  ucg_coll_name(b->key->type), UCG_PLAN_MAX_PHASES);
        return NULL;
    }

    phase = &b->plan->phases[b->plan->num_phases++];
    memset(phase, 0, sizeof(*phase));
    phase->method  = method;
    phase->sm_mode = UCT_O2M_MODE_LAST;
    return phase;
}

ucs_status_t ucg_plan_alloc_sets(ucg_phase_t *phase, unsigned num_sets)
{
    phase->sets = ucs_calloc(num_sets, sizeof(*phase->sets), "ucg_phase_sets");
    if (phase->sets == NULL) {
        ucs_error("failed to allocate %u phase sets", num_sets);
        return UCS_ERR_NO_MEMORY;
    }

    phase->num_sets = num_sets;
    return UCS_OK;
}

ucs_status_t ucg_plan_alloc_ranks(ucg_phase_set_t *set, unsigned count)
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
void ucg_plan_set_leaders(ucg_plan_builder_t *b, int rooted,
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
ucs_status_t ucg_plan_add_local(ucg_plan_builder_t *b,
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
ucs_status_t ucg_plan_add_global(ucg_plan_builder_t *b, int hier,
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
ucs_status_t ucg_plan_set_owner(ucg_plan_builder_t *b,
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

/* The fan-in that starts the hierarchical gather, allgather and barrier:
 * each host's blocks to its leader; nothing in a flat plan */
ucs_status_t ucg_plan_add_local_gather(ucg_plan_builder_t *b, int hier)
{
    ucg_phase_t *phase;
    ucs_status_t status;

    if (!hier) {
        return UCS_OK;
    }

    status = ucg_plan_add_local(b, UCG_PHASE_SM_GATHER,
                                ucg_plan_gather_mode(b), 0, &phase);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_set_owner(b, phase, 0);
}

/* The fan-out from each leader that ends the hierarchical bcast, allreduce,
 * barrier, scatter and allgather; nothing in a flat plan */
ucs_status_t ucg_plan_add_local_bcast(ucg_plan_builder_t *b, int hier)
{
    if (!hier) {
        return UCS_OK;
    }

    return ucg_plan_add_local(b, UCG_PHASE_SM_BCAST, ucg_plan_bcast_mode(b),
                              0, NULL);
}

/* ------------------------------------------------------------------------ */
/* Modes and methods                                                        */
/* ------------------------------------------------------------------------ */

/* Mode of a host-local phase by host size */
uct_o2m_mode_t ucg_plan_ppn_mode(const ucg_plan_builder_t *b)
{
    return (b->topo->max_ppn <= b->config->sm_batched_max_ppn) ?
           UCT_O2M_MODE_BATCHED : UCT_O2M_MODE_CENTRALIZED;
}

static int ucg_plan_is_fanout_mode(unsigned mode)
{
    return (mode == UCT_O2M_MODE_BATCHED) ||
           (mode == UCT_O2M_MODE_CENTRALIZED);
}

uct_o2m_mode_t ucg_plan_bcast_mode(const ucg_plan_builder_t *b)
{
    return ucg_plan_bcast_mode_of(b, b->topo->max_ppn);
}

/* Mode of an sm_bcast phase whose largest set has @a max_count members */
uct_o2m_mode_t ucg_plan_bcast_mode_of(const ucg_plan_builder_t *b,
                                      unsigned max_count)
{
    if (ucg_plan_is_fanout_mode(b->config->sm_bcast_mode)) {
        return (uct_o2m_mode_t)b->config->sm_bcast_mode;
    }

    return (max_count <= b->config->sm_batched_max_ppn) ?
           UCT_O2M_MODE_BATCHED : UCT_O2M_MODE_CENTRALIZED;
}

uct_o2m_mode_t ucg_plan_gather_mode(const ucg_plan_builder_t *b)
{
    /* A forced locked / atomic mode is for reductions */
    return ucg_plan_is_fanout_mode(b->config->sm_incast_mode) ?
           (uct_o2m_mode_t)b->config->sm_incast_mode : ucg_plan_ppn_mode(b);
}

ucs_status_t ucg_plan_p2p_method(const ucg_plan_builder_t *b,
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

    ucs_error("%s" UCG_CONFIG_TABLE_PREFIX "%s: %s is not a method of %s",
              b->config->env_prefix, ucg_config_p2p_vars[type],
              ((unsigned)method < UCG_P2P_LAST) ?
              ucg_p2p_method_names[method] : "?",
              ucg_coll_name(type));
    return UCS_ERR_INVALID_PARAM;
}
