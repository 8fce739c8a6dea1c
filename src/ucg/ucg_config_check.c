/**
 * UCG configuration: what UCX's parser cannot check.  The values that must
 * agree with each other or with a collective (ucg_config_check) and the
 * HOSTS layouts (ucg_hosts_label), which every member walks when a group is
 * created.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_config.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>

#include <string.h>
#include <stdlib.h>
#include <errno.h>
#include <limits.h>
#include <ctype.h>


/*
 * HOSTS layouts.  Parsed on the fly: a layout is short, and it is walked
 * once per member when a group is created.
 */

/* Parse the next host size of a layout at *p_p; advances past a comma. */
static ucs_status_t ucg_hosts_next(const char *hosts, const char **p_p,
                                   unsigned *size_p)
{
    const char *p = *p_p;
    unsigned long value;
    char *end;

    if (!isdigit((unsigned char)*p)) {
        goto err;
    }

    errno = 0;
    value = strtoul(p, &end, 10);
    if ((errno != 0) || (value == 0) || (value > UINT_MAX)) {
        goto err;
    }

    if (*end == ',') {
        if (end[1] == '\0') {
            goto err; /* trailing comma */
        }
        ++end;
    } else if (*end != '\0') {
        goto err;
    }

    *size_p = value;
    *p_p    = end;
    return UCS_OK;

err:
    ucs_error("invalid host layout '%s' (UCG_HOSTS): expected auto, <k> or "
              "<n1>,<n2>,... with sizes from 1 to %u", hosts, UINT_MAX);
    return UCS_ERR_INVALID_PARAM;
}

ucs_status_t ucg_hosts_label(const char *hosts, unsigned global_rank,
                             uint64_t *label_p, int *is_auto_p)
{
    uint64_t first = 0; /* first global rank of the current host */
    uint64_t label = 0;
    const char *p;
    ucs_status_t status;
    unsigned size;

    if (hosts == NULL) {
        ucs_error("invalid host layout: NULL");
        return UCS_ERR_INVALID_PARAM;
    }

    if (!strcasecmp(hosts, "auto")) {
        *is_auto_p = 1;
        *label_p   = 0;
        return UCS_OK;
    }

    /* Validate the whole layout, even past the host of global_rank, so that
     * every member rejects a bad layout the same way */
    p    = hosts;
    size = 0;
    do {
        status = ucg_hosts_next(hosts, &p, &size);
        if (status != UCS_OK) {
            return status;
        }

        if ((global_rank >= first) && (global_rank - first < size)) {
            *label_p = label;
        }
        first += size;
        ++label;
    } while (*p != '\0');

    if (global_rank >= first) {
        /* Past the listed hosts: the last size repeated */
        *label_p = label + (global_rank - first) / size;
    }

    *is_auto_p = 0;
    return UCS_OK;
}


static int ucg_config_p2p_valid(ucg_coll_type_t type, int method)
{
    switch (type) {
    case UCG_COLL_BCAST:
    case UCG_COLL_REDUCE:
        return method == UCG_P2P_KNOMIAL;
    case UCG_COLL_ALLREDUCE:
        return (method == UCG_P2P_RECURSIVE_DOUBLING) ||
               (method == UCG_P2P_RING) || (method == UCG_P2P_KNOMIAL);
    case UCG_COLL_BARRIER:
        return method == UCG_P2P_DISSEMINATION;
    case UCG_COLL_GATHER:
    case UCG_COLL_SCATTER:
    case UCG_COLL_GATHERV:
    case UCG_COLL_SCATTERV:
        return method == UCG_P2P_LINEAR;
    case UCG_COLL_ALLGATHER:
    case UCG_COLL_ALLGATHERV:
        return (method == UCG_P2P_RING) || (method == UCG_P2P_LINEAR);
    case UCG_COLL_ALLTOALL:
    case UCG_COLL_ALLTOALLV:
        return (method == UCG_P2P_LINEAR) || (method == UCG_P2P_PAIRWISE);
    default:
        return 0;
    }
}

const char *ucg_config_p2p_vars[] = {
    [UCG_COLL_BCAST]     = "BCAST_P2P",
    [UCG_COLL_REDUCE]    = "REDUCE_P2P",
    [UCG_COLL_ALLREDUCE] = "ALLREDUCE_P2P",
    [UCG_COLL_BARRIER]   = "BARRIER_P2P",
    [UCG_COLL_GATHER]    = "GATHER_P2P",
    [UCG_COLL_SCATTER]   = "SCATTER_P2P",
    [UCG_COLL_ALLGATHER] = "ALLGATHER_P2P",
    [UCG_COLL_GATHERV]   = "GATHERV_P2P",
    [UCG_COLL_SCATTERV]  = "SCATTERV_P2P",
    [UCG_COLL_ALLGATHERV] = "ALLGATHERV_P2P",
    [UCG_COLL_ALLTOALL]  = "ALLTOALL_P2P",
    [UCG_COLL_ALLTOALLV] = "ALLTOALLV_P2P"
};

#define UCG_CONFIG_ERROR(_config, _var, _fmt, ...) \
    ucs_error("%s" UCG_CONFIG_TABLE_PREFIX "%s: " _fmt, \
              (_config)->env_prefix, _var, ## __VA_ARGS__)

ucs_status_t ucg_config_check(const ucg_config_t *config)
{
    const struct {
        const char   *name;
        const size_t *value;
    } sizes[] = {
        {"ALLREDUCE_RING_THRESH", &config->allreduce_ring_thresh},
        {"ALLGATHER_RING_THRESH", &config->allgather_ring_thresh},
        {"ALLTOALL_PAIRWISE_THRESH", &config->alltoall_pairwise_thresh},
        {"SM_SCATTER_MAX",        &config->sm_scatter_max},
        {"SM_ALLGATHER_MAX",      &config->sm_allgather_max},
        {"SM_ALLREDUCE_MAX",      &config->sm_allreduce_max},
        {"SM_BCAST_CMA_THRESH",   &config->sm_bcast_cma_thresh},
        {"SM_REDUCE_CMA_THRESH",  &config->sm_reduce_cma_thresh},
        {"SM_LOCKED_THRESH",      &config->sm_locked_thresh},
        {"MC_MAX_SIZE",           &config->mc_max_size}
    };
    uint64_t label;
    int type, method, is_auto;
    unsigned i;

    for (type = 0; type < UCG_COLL_LAST; ++type) {
        method = config->p2p_method[type];
        if ((method == UCG_P2P_AUTO) || ucg_config_p2p_valid(type, method)) {
            continue;
        }

        if ((unsigned)method < UCG_P2P_LAST) {
            UCG_CONFIG_ERROR(config, ucg_config_p2p_vars[type],
                             "%s is not a method of this collective",
                             ucg_p2p_method_names[method]);
        } else {
            UCG_CONFIG_ERROR(config, ucg_config_p2p_vars[type],
                             "invalid method %d", method);
        }
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->knomial_radix < 2) {
        UCG_CONFIG_ERROR(config, "KNOMIAL_RADIX", "%u is less than 2",
                         config->knomial_radix);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->sm_bcast_mode != UCT_O2M_MODE_BATCHED) &&
        (config->sm_bcast_mode != UCT_O2M_MODE_CENTRALIZED) &&
        (config->sm_bcast_mode != UCG_SM_MODE_AUTO)) {
        UCG_CONFIG_ERROR(config, "SM_BCAST_MODE", "sm_bcast supports batched "
                         "and centralized only, not %s",
                         (config->sm_bcast_mode < UCG_SM_MODE_AUTO) ?
                         ucg_sm_mode_names[config->sm_bcast_mode] : "?");
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->sm_incast_mode > UCG_SM_MODE_AUTO) {
        UCG_CONFIG_ERROR(config, "SM_INCAST_MODE", "invalid mode %u",
                         config->sm_incast_mode);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((unsigned)config->hier >= UCG_HIER_LAST) {
        UCG_CONFIG_ERROR(config, "HIER", "invalid value %d", config->hier);
        return UCS_ERR_INVALID_PARAM;
    }

    if (ucg_hosts_label(config->hosts, 0, &label, &is_auto) != UCS_OK) {
        UCG_CONFIG_ERROR(config, "HOSTS", "invalid layout '%s'",
                         config->hosts);
        return UCS_ERR_INVALID_PARAM;
    }

    /* Sizes where auto or 0 has no meaning */
    if ((config->p2p_frag_size == 0) ||
        (config->p2p_frag_size == UCS_MEMUNITS_AUTO)) {
        UCG_CONFIG_ERROR(config, "P2P_FRAG_SIZE", "must be a size > 0 or inf");
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->sm_frag_size == 0) ||
        (config->sm_frag_size == UCS_MEMUNITS_INF)) {
        UCG_CONFIG_ERROR(config, "SM_FRAG_SIZE", "must be auto or a size > 0");
        return UCS_ERR_INVALID_PARAM;
    }

    /* Thresholds and limits: a size or inf, not auto */
    for (i = 0; i < ucs_static_array_size(sizes); ++i) {
        if (*sizes[i].value == UCS_MEMUNITS_AUTO) {
            UCG_CONFIG_ERROR(config, sizes[i].name, "must be a size or inf");
            return UCS_ERR_INVALID_PARAM;
        }
    }

    if (!(config->peer_timeout > 0)) {
        UCG_CONFIG_ERROR(config, "PEER_TIMEOUT", "must be positive");
        return UCS_ERR_INVALID_PARAM;
    }

    if (!(config->check_interval > 0)) {
        UCG_CONFIG_ERROR(config, "CHECK_INTERVAL", "must be positive");
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->sm_max_groups == 0) {
        UCG_CONFIG_ERROR(config, "SM_MAX_GROUPS", "must be at least 1");
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->sm_group_mem == UCS_MEMUNITS_AUTO) {
        UCG_CONFIG_ERROR(config, "SM_GROUP_MEM", "must be a size or inf");
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}
