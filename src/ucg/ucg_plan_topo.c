/**
 * UCG planner: the topology of a group (which host each rank is on).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>

#include <string.h>
#include <stdlib.h>
#include <limits.h>

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
    topo->mc_tl          = UCG_MC_TL_LAST;
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
