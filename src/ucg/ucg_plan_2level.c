/**
 * UCG planner: the two-level host-local bcast (docs/ucg.md, "Many members
 * on a host: two levels").
 *
 * On a host of P members, a flat sm_bcast has one write read by P - 1
 * members: every one more reader of the lines costs (docs/performance.md,
 * "Scale on paper"), and from 16 to 32 processes per host that costs more
 * than one more hop.  On a host of at least SM_BCAST_2LEVEL_PPN members
 * the members, in rank order, are cut into r = ceil(sqrt(P)) sub-groups of
 * consecutive members (the first ones one larger when r does not divide P);
 * the first member of each leads it.  Level one: the host leader (the root
 * on the root's host) fans out to the leaders of the other sub-groups;
 * level two: each of those leaders fans out to its sub-group, and the host
 * leader to its own sub-group.  Both are SM_BCAST phases: the second starts
 * on a sub-group leader once the first has delivered the whole message to
 * it (the levels do not overlap).
 *
 * The sub-groups do not depend on the root: their endpoints serve every
 * root, and a member roots at most three endpoints of these plans (its
 * sub-group's if it leads one, and as a bcast root its level-one set and
 * its own sub-group), whatever the number of roots used (SM_GROUP_EPS).
 * Every member computes the same sets from the topology and the root;
 * other hosts of the group (fewer members) keep their whole-host set in
 * the first of the two phases.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>

#include <stdlib.h>
#include <string.h>


/* Sub-groups of a host of @a host_size members */
static unsigned ucg_plan_2level_num_subs(unsigned host_size)
{
    unsigned r = 1;

    while (r * r < host_size) {
        ++r;
    }
    return r;
}

/* Whether host @a h gets two levels: at least SM_BCAST_2LEVEL_PPN members,
 * and at least 4 (on 3, two hops would serve 2 readers) */
static int ucg_plan_2level_host(const ucg_plan_builder_t *b, unsigned h)
{
    unsigned size = b->topo->host_size[h];

    return (size >= b->config->sm_bcast_2level_ppn) && (size >= 4);
}

int ucg_plan_2level_applies(const ucg_plan_builder_t *b)
{
    unsigned h;

    if (b->key->type != UCG_COLL_BCAST) {
        return 0;
    }

    for (h = 0; h < b->topo->num_hosts; ++h) {
        if (ucg_plan_2level_host(b, h)) {
            return 1;
        }
    }
    return 0;
}

/* Members of sub-group @a sub of host @a h, from index *first_p of the
 * host's members (rank order) */
static unsigned ucg_plan_2level_sub(const ucg_plan_builder_t *b, unsigned h,
                                    unsigned sub, unsigned *first_p)
{
    unsigned size = b->topo->host_size[h];
    unsigned r    = ucg_plan_2level_num_subs(size);

    *first_p = (sub * (size / r)) + ucs_min(sub, size % r);
    return (size / r) + (sub < (size % r));
}

/* The sub-group of host @a h that holds its leader */
static unsigned ucg_plan_2level_own_sub(const ucg_plan_builder_t *b,
                                        unsigned h)
{
    const ucg_topo_t *topo = b->topo;
    const unsigned *ranks  = &topo->host_ranks[topo->host_first[h]];
    unsigned r             = ucg_plan_2level_num_subs(topo->host_size[h]);
    unsigned lead, sub, first, count;

    for (lead = 0; ranks[lead] != b->leader[h]; ++lead) {
    }

    for (sub = 0; sub + 1 < r; ++sub) {
        count = ucg_plan_2level_sub(b, h, sub, &first);
        if (lead < first + count) {
            break;
        }
    }
    return sub;
}

static int ucg_plan_2level_rank_cmp(const void *a, const void *b)
{
    unsigned ua = *(const unsigned*)a, ub = *(const unsigned*)b;

    return (ua < ub) ? -1 : (ua > ub);
}

/* @a set gets @a count ranks of @a ranks (any order), sorted, rooted at
 * @a root */
static ucs_status_t ucg_plan_2level_set(ucg_phase_set_t *set,
                                        const unsigned *ranks, unsigned count,
                                        unsigned root)
{
    ucs_status_t status;
    unsigned i;

    status = ucg_plan_alloc_ranks(set, count);
    if (status != UCS_OK) {
        return status;
    }

    memcpy(set->ranks, ranks, count * sizeof(*set->ranks));
    qsort(set->ranks, count, sizeof(*set->ranks), ucg_plan_2level_rank_cmp);
    for (i = 0; i < count; ++i) {
        if (set->ranks[i] == root) {
            set->root = i;
        }
    }
    return UCS_OK;
}

/* Sets of level one (@a level 0: a set per host of several members) or
 * level two (1: a set per sub-group of several members); with @a phase
 * NULL, only counts them, and the largest in *max_count_p */
static ucs_status_t ucg_plan_2level_sets(const ucg_plan_builder_t *b,
                                         unsigned level, ucg_phase_t *phase,
                                         unsigned *scratch,
                                         unsigned *num_sets_p,
                                         unsigned *max_count_p)
{
    const ucg_topo_t *topo = b->topo;
    unsigned h, r, sub, own, first, count, root, n = 0, max_count = 0;
    const unsigned *ranks;
    ucs_status_t status;

    for (h = 0; h < topo->num_hosts; ++h) {
        ranks = &topo->host_ranks[topo->host_first[h]];
        if (topo->host_size[h] < 2) {
            continue;
        }

        if (!ucg_plan_2level_host(b, h)) {
            /* One level on this host: its whole set in level one */
            if (level == 0) {
                count = topo->host_size[h];
                if (phase != NULL) {
                    status = ucg_plan_2level_set(&phase->sets[n], ranks,
                                                 count, b->leader[h]);
                    if (status != UCS_OK) {
                        return status;
                    }
                }
                ++n;
                max_count = ucs_max(max_count, count);
            }
            continue;
        }

        r   = ucg_plan_2level_num_subs(topo->host_size[h]);
        own = ucg_plan_2level_own_sub(b, h);
        if (level == 0) {
            /* The host leader and the leaders of the other sub-groups */
            scratch[0] = b->leader[h];
            count      = 1;
            for (sub = 0; sub < r; ++sub) {
                ucg_plan_2level_sub(b, h, sub, &first);
                if (sub != own) {
                    scratch[count++] = ranks[first];
                }
            }
            if (phase != NULL) {
                status = ucg_plan_2level_set(&phase->sets[n], scratch, count,
                                             b->leader[h]);
                if (status != UCS_OK) {
                    return status;
                }
            }
            ++n;
            max_count = ucs_max(max_count, count);
            continue;
        }

        for (sub = 0; sub < r; ++sub) {
            count = ucg_plan_2level_sub(b, h, sub, &first);
            if (count < 2) {
                continue;
            }
            /* the host leader leads its own sub-group */
            root = (sub == own) ? b->leader[h] : ranks[first];
            if (phase != NULL) {
                status = ucg_plan_2level_set(&phase->sets[n], &ranks[first],
                                             count, root);
                if (status != UCS_OK) {
                    return status;
                }
            }
            ++n;
            max_count = ucs_max(max_count, count);
        }
    }

    *num_sets_p  = n;
    *max_count_p = max_count;
    return UCS_OK;
}

static ucs_status_t ucg_plan_2level_phase(ucg_plan_builder_t *b,
                                          unsigned level, unsigned *scratch)
{
    unsigned num_sets, max_count;
    ucg_phase_t *phase;
    ucs_status_t status;

    status = ucg_plan_2level_sets(b, level, NULL, scratch, &num_sets,
                                  &max_count);
    if ((status != UCS_OK) || (num_sets == 0)) {
        return status;
    }

    phase = ucg_plan_new_phase(b, UCG_PHASE_SM_BCAST);
    if (phase == NULL) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    /* The mode by the phase's largest set: the sub-groups are small */
    phase->sm_mode   = ucg_plan_bcast_mode_of(b, max_count);
    phase->frag_size = b->sm_frag;
    status           = ucg_plan_alloc_sets(phase, num_sets);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_plan_2level_sets(b, level, phase, scratch, &num_sets,
                                &max_count);
}

ucs_status_t ucg_plan_add_local_bcast_2level(ucg_plan_builder_t *b)
{
    unsigned max_ppn = b->topo->max_ppn;
    unsigned *scratch;
    ucs_status_t status;
    unsigned level;

    /* A level-one set: at most one member per sub-group of a host */
    scratch = ucs_malloc(max_ppn * sizeof(*scratch), "ucg_plan_2level");
    if (scratch == NULL) {
        ucs_error("failed to allocate the leaders of %u members", max_ppn);
        return UCS_ERR_NO_MEMORY;
    }

    status = UCS_OK;
    for (level = 0; (level < 2) && (status == UCS_OK); ++level) {
        status = ucg_plan_2level_phase(b, level, scratch);
    }

    ucs_free(scratch);
    return status;
}
