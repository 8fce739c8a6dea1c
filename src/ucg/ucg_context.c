/**
 * ucx-o2m: UCG context: configuration, UCP worker, the sm_bcast / sm_incast
 * interfaces, host identity and progress.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_context.h"
#include "ucg_coll.h"
#include "ucg_mc.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define UCG_O2M_COMPONENT_NAME "o2m"
#define UCG_O2M_MD_NAME        "o2m"
#define UCG_O2M_DEV_NAME       "memory"

/* ucg_progress calls between two UCP progress calls while every started
 * collective is in a host-local phase */
#define UCG_UCP_IDLE_POLLS     16

/* A wait for members on other hosts, whose liveness UCG cannot see, lasts
 * no longer than this when PEER_TIMEOUT is inf */
#define UCG_CONTEXT_MAX_WAIT_SEC (24.0 * 3600.0)


/* FNV-1a over a byte string, chained through @a hash */
static uint64_t ucg_fnv1a(uint64_t hash, const void *data, size_t len)
{
    const uint8_t *p = data;
    size_t i;

    for (i = 0; i < len; ++i) {
        hash ^= p[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

/* Append the first line of @a path to the hash (nothing when unreadable) */
static uint64_t ucg_hash_file_line(uint64_t hash, const char *path)
{
    char line[256];
    FILE *file;

    file = fopen(path, "r");
    if (file == NULL) {
        return hash;
    }

    if (fgets(line, sizeof(line), file) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        hash = ucg_fnv1a(hash, line, strlen(line) + 1);
    }
    fclose(file);
    return hash;
}

/*
 * Identity of the host, as far as shared memory goes: the hostname, the
 * kernel's boot id (two containers with the same hostname on different
 * machines differ) and the PID namespace (the transports reach their peers
 * through /proc/<pid>, which needs the same one).
 */
static uint64_t ucg_context_host_id(void)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    char buf[256];
    ssize_t len;

    if (gethostname(buf, sizeof(buf)) == 0) {
        buf[sizeof(buf) - 1] = '\0';
        hash = ucg_fnv1a(hash, buf, strlen(buf) + 1);
    }

    hash = ucg_hash_file_line(hash, "/proc/sys/kernel/random/boot_id");

    len = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
    if (len > 0) {
        hash = ucg_fnv1a(hash, buf, len);
    }

    return hash;
}

/* Whether the list of UCX_TLS allows transport @a name */
static int ucg_tls_list_allows(const char *tls, const char *name)
{
    char *copy, *token, *saveptr;
    int negate, listed, all;
    const char *list;
    size_t len;

    negate = (tls[0] == '^');
    list   = tls + negate;
    copy   = ucs_strdup(list, "ucg tls");
    if (copy == NULL) {
        return 0;
    }

    listed = 0;
    all    = 0;
    for (token = strtok_r(copy, ",", &saveptr); token != NULL;
         token = strtok_r(NULL, ",", &saveptr)) {
        /* "name:aux" names the same transport */
        len = strcspn(token, ":");
        if ((len == strlen(name)) && !strncmp(token, name, len)) {
            listed = 1;
        } else if ((len == 3) && !strncmp(token, "all", 3)) {
            all = 1;
        }
    }
    ucs_free(copy);

    if (negate) {
        return !listed;
    }
    return listed || all;
}

/* The UCX_TLS value that applies (NULL: unset) */
static const char *ucg_context_tls_env(const ucg_config_t *config,
                                       char *name, size_t max)
{
    const char *prefix = ((config->env_prefix != NULL) &&
                          (config->env_prefix[0] != '\0')) ?
                         config->env_prefix : "UCX_";
    const char *value;

    ucs_snprintf_zero(name, max, "%sTLS", prefix);
    value = getenv(name);
    if ((value == NULL) && strcmp(prefix, "UCX_")) {
        /* UCP itself reads UCX_TLS */
        ucs_snprintf_zero(name, max, "UCX_TLS");
        value = getenv(name);
    }
    return value;
}

int ucg_context_tls_allows(const ucg_config_t *config, const char *name)
{
    char var[64];
    const char *tls;

    tls = ucg_context_tls_env(config, var, sizeof(var));
    return (tls == NULL) || ucg_tls_list_allows(tls, name);
}

/* Whether UCX_TLS lets UCG use sm_bcast and sm_incast; logs why not */
static int ucg_context_tls_allow_o2m(ucg_context_t *context)
{
    char var[64];
    const char *tls;
    int bcast, incast;

    tls = ucg_context_tls_env(context->config, var, sizeof(var));
    if (tls == NULL) {
        return 1;
    }

    bcast  = ucg_tls_list_allows(tls, UCT_O2M_BCAST_TL_NAME);
    incast = ucg_tls_list_allows(tls, UCT_O2M_INCAST_TL_NAME);
    if (bcast && incast) {
        return 1;
    }

    if (bcast || incast) {
        ucs_diag("%s=%s allows only %s: UCG needs both %s and %s, not using "
                 "them", var, tls, bcast ? UCT_O2M_BCAST_TL_NAME :
                                           UCT_O2M_INCAST_TL_NAME,
                 UCT_O2M_BCAST_TL_NAME, UCT_O2M_INCAST_TL_NAME);
    } else {
        ucs_diag("%s=%s excludes %s and %s", var, tls, UCT_O2M_BCAST_TL_NAME,
                 UCT_O2M_INCAST_TL_NAME);
    }
    return 0;
}

static uct_component_h ucg_context_find_o2m_component(void)
{
    uct_component_h *components, found = NULL;
    uct_component_attr_t attr;
    ucs_status_t status;
    unsigned num, i;

    status = uct_query_components(&components, &num);
    if (status != UCS_OK) {
        ucs_diag("failed to query UCT components: %s",
                 ucs_status_string(status));
        return NULL;
    }

    for (i = 0; (i < num) && (found == NULL); ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, UCG_O2M_COMPONENT_NAME)) {
            found = components[i];
        }
    }

    uct_release_component_list(components);
    return found;
}

/* Set a variable of an sm_bcast / sm_incast interface configuration; the
 * transport's own variables sit in a sub-table with the prefix "O2M_" */
static ucs_status_t ucg_context_iface_config_set(uct_iface_config_t *config,
                                                 const char *name,
                                                 const char *value)
{
    char full_name[64];
    ucs_status_t status;

    status = uct_config_modify(config, name, value);
    if (status == UCS_ERR_NO_ELEM) {
        ucs_snprintf_zero(full_name, sizeof(full_name), "O2M_%s", name);
        status = uct_config_modify(config, full_name, value);
    }

    if (status != UCS_OK) {
        ucs_diag("failed to set %s=%s on the o2m interface configuration: %s",
                 name, value, ucs_status_string(status));
    }
    return status;
}

static ucs_status_t ucg_context_sm_err_handler(void *arg, uct_ep_h ep,
                                               ucs_status_t status)
{
    ucg_context_t *context = arg;
    ucg_sm_ep_t *sm_ep;
    ucg_group_t *group;

    /* A root that could not create the group: nothing was sent on it, and
     * its phases run point-to-point instead (phase/ucg_sm_gate.c) */
    if (uct_o2m_ep_state(ep, NULL) == UCT_O2M_EP_STATE_REFUSED) {
        ucs_debug("o2m endpoint %p refused by its root: %s", ep,
                  ucs_status_string(status));
        return UCS_OK;
    }

    /* Fail the group the endpoint belongs to: its collectives cannot
     * complete any more */
    ucs_list_for_each(group, &context->groups, list) {
        ucs_list_for_each(sm_ep, &group->sm_eps, list) {
            if (sm_ep->ep != ep) {
                continue;
            }

            ucs_diag("group %u rank %u: %s endpoint (root %u) failed: %s",
                     group->id, group->rank, ucg_sm_tl_name(sm_ep->tl),
                     sm_ep->root, ucs_status_string(status));
            if (group->failed == UCS_OK) {
                group->failed = status;
            }
            return UCS_OK;
        }
    }

    ucs_diag("o2m endpoint %p failed: %s", ep, ucs_status_string(status));
    return UCS_OK;
}

static ucs_status_t ucg_context_open_sm_iface(ucg_context_t *context,
                                              ucg_sm_tl_t tl)
{
    const ucg_config_t *config = context->config;
    uct_iface_config_t *iface_config;
    uct_o2m_iface_attr_t o2m_attr;
    uct_iface_params_t params;
    uct_iface_attr_t attr;
    ucs_status_t status;
    char value[64];

    status = uct_md_iface_config_read(context->o2m_md, ucg_sm_tl_name(tl),
                                      NULL, NULL, &iface_config);
    if (status != UCS_OK) {
        ucs_diag("failed to read the %s configuration: %s",
                 ucg_sm_tl_name(tl), ucs_status_string(status));
        return status;
    }

    ucs_snprintf_zero(value, sizeof(value), "%u", config->sm_max_groups);
    status = ucg_context_iface_config_set(iface_config, "MAX_GROUPS", value);
    if (status != UCS_OK) {
        goto out_release;
    }

    /* Plain numbers are seconds for UCX's time parser */
    ucs_snprintf_zero(value, sizeof(value), "%.9g", config->peer_timeout);
    status = ucg_context_iface_config_set(iface_config, "PEER_TIMEOUT",
                                          value);
    if (status != UCS_OK) {
        goto out_release;
    }

    ucs_snprintf_zero(value, sizeof(value), "%.9g", config->check_interval);
    status = ucg_context_iface_config_set(iface_config, "CHECK_INTERVAL",
                                          value);
    if (status != UCS_OK) {
        goto out_release;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = ucg_sm_tl_name(tl);
    params.mode.device.dev_name = UCG_O2M_DEV_NAME;
    params.err_handler          = ucg_context_sm_err_handler;
    params.err_handler_arg      = context;
    params.err_handler_flags    = 0;

    status = uct_iface_open(context->o2m_md, context->uct_worker, &params,
                            iface_config, &context->sm_iface[tl]);
    if (status != UCS_OK) {
        ucs_diag("failed to open %s/%s: %s", ucg_sm_tl_name(tl),
                 UCG_O2M_DEV_NAME, ucs_status_string(status));
        goto out_release;
    }

    status = uct_iface_query(context->sm_iface[tl], &attr);
    if (status != UCS_OK) {
        ucs_diag("failed to query %s: %s", ucg_sm_tl_name(tl),
                 ucs_status_string(status));
        goto out_release;
    }

    /* Messages of both directions carry UCG's header and data: the smaller
     * limit applies */
    context->sm_max_bcopy = ucs_min(context->sm_max_bcopy,
                                    attr.cap.am.max_bcopy);

    status = uct_o2m_iface_query(context->sm_iface[tl], &o2m_attr);
    if (status != UCS_OK) {
        ucs_diag("failed to query the limits of %s: %s", ucg_sm_tl_name(tl),
                 ucs_status_string(status));
        goto out_release;
    }
    context->sm_max_members = ucs_min(context->sm_max_members,
                                      o2m_attr.max_members);
    context->sm_attr[tl]    = o2m_attr;
    /* UCG's sm_*_cma phases use process_vm_readv like their zcopy */
    context->sm_cma        &= (o2m_attr.max_zcopy > 0);

    /* Synchronous: called from ucg_progress() */
    status = uct_iface_set_am_handler(context->sm_iface[tl], UCG_SM_AM_ID,
                                      ucg_sm_am_cb, context, 0);
    if (status != UCS_OK) {
        ucs_diag("failed to set the AM handler of %s: %s",
                 ucg_sm_tl_name(tl), ucs_status_string(status));
        goto out_release;
    }

    uct_iface_progress_enable(context->sm_iface[tl],
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

out_release:
    uct_config_release(iface_config);
    return status;
}

static void ucg_context_o2m_close(ucg_context_t *context)
{
    ucg_sm_tl_t tl;

    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        if (context->sm_iface[tl] != NULL) {
            uct_iface_close(context->sm_iface[tl]);
            context->sm_iface[tl] = NULL;
        }
    }

    if (context->o2m_md != NULL) {
        uct_md_close(context->o2m_md);
        context->o2m_md = NULL;
    }

    if (context->uct_worker != NULL) {
        uct_worker_destroy(context->uct_worker);
        context->uct_worker = NULL;
    }

    if (context->async != NULL) {
        ucs_async_context_destroy(context->async);
        context->async = NULL;
    }

    context->o2m_component = NULL;
    context->sm_max_bcopy  = 0;
    context->o2m           = 0;
}

static ucs_status_t ucg_context_o2m_open(ucg_context_t *context)
{
    uct_md_config_t *md_config;
    ucs_status_t status;
    ucg_sm_tl_t tl;

    context->o2m_component = ucg_context_find_o2m_component();
    if (context->o2m_component == NULL) {
        ucs_diag("UCT component '%s' is not registered",
                 UCG_O2M_COMPONENT_NAME);
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_md_config_read(context->o2m_component, NULL, NULL,
                                &md_config);
    if (status != UCS_OK) {
        ucs_diag("failed to read the %s md configuration: %s",
                 UCG_O2M_MD_NAME, ucs_status_string(status));
        goto err;
    }

    status = uct_md_open(context->o2m_component, UCG_O2M_MD_NAME, md_config,
                         &context->o2m_md);
    uct_config_release(md_config);
    if (status != UCS_OK) {
        ucs_diag("failed to open md %s: %s", UCG_O2M_MD_NAME,
                 ucs_status_string(status));
        goto err;
    }

    status = ucs_async_context_create(UCS_ASYNC_MODE_POLL, &context->async);
    if (status != UCS_OK) {
        ucs_diag("failed to create an async context: %s",
                 ucs_status_string(status));
        goto err;
    }

    status = uct_worker_create(context->async, UCS_THREAD_MODE_SINGLE,
                               &context->uct_worker);
    if (status != UCS_OK) {
        ucs_diag("failed to create a UCT worker: %s",
                 ucs_status_string(status));
        goto err;
    }

    context->sm_max_bcopy   = SIZE_MAX;
    context->sm_max_members = UINT_MAX;
    context->sm_cma         = 1;
    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        status = ucg_context_open_sm_iface(context, tl);
        if (status != UCS_OK) {
            goto err;
        }
    }

    if (context->sm_max_bcopy <= sizeof(ucg_sm_hdr_t)) {
        ucs_diag("o2m messages of %zu bytes cannot carry UCG's header",
                 context->sm_max_bcopy);
        status = UCS_ERR_UNSUPPORTED;
        goto err;
    }

    context->o2m = 1;
    return UCS_OK;

err:
    ucg_context_o2m_close(context);
    return status;
}

/* Open sm_bcast / sm_incast as the O2M setting and UCX_TLS say */
static ucs_status_t ucg_context_o2m_init(ucg_context_t *context)
{
    ucs_ternary_auto_value_t mode = context->config->o2m;
    ucs_status_t status;

    context->o2m = 0;
    if (mode == UCS_NO) {
        ucs_debug("UCG: o2m transports disabled by configuration");
        return UCS_OK;
    }

    if (!ucg_context_tls_allow_o2m(context)) {
        if (mode == UCS_YES) {
            ucs_error("UCG O2M=y but UCX_TLS excludes %s or %s",
                      UCT_O2M_BCAST_TL_NAME, UCT_O2M_INCAST_TL_NAME);
            return UCS_ERR_UNSUPPORTED;
        }
        return UCS_OK;
    }

    status = ucg_context_o2m_open(context);
    if (status == UCS_OK) {
        ucs_debug("UCG: using %s and %s, largest bcopy %zu",
                  UCT_O2M_BCAST_TL_NAME, UCT_O2M_INCAST_TL_NAME,
                  context->sm_max_bcopy);
        return UCS_OK;
    }

    if (mode == UCS_YES) {
        ucs_error("UCG O2M=y but %s/%s cannot be used: %s",
                  UCT_O2M_BCAST_TL_NAME, UCT_O2M_INCAST_TL_NAME,
                  ucs_status_string(status));
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_diag("UCG: continuing without %s/%s", UCT_O2M_BCAST_TL_NAME,
             UCT_O2M_INCAST_TL_NAME);
    return UCS_OK;
}

static ucs_status_t ucg_context_ucp_init(ucg_context_t *context,
                                         const ucg_context_params_t *params)
{
    ucp_worker_params_t worker_params;
    ucp_params_t ucp_params;
    ucp_config_t *ucp_config;
    ucs_status_t status;

    if ((params != NULL) &&
        (params->field_mask & UCG_CONTEXT_PARAM_FIELD_UCP_WORKER)) {
        if (params->ucp_worker == NULL) {
            ucs_error("UCG context: UCP_WORKER is set but ucp_worker is "
                      "NULL");
            return UCS_ERR_INVALID_PARAM;
        }

        /* UCP cannot tell which features a context was created with: a
         * worker without UCP_FEATURE_TAG fails at the first tag send */
        context->ucp_context = params->ucp_context;
        context->ucp_worker  = params->ucp_worker;
        context->own_ucp     = 0;
        return UCS_OK;
    }

    /* UCP's own variables keep UCP's prefix (UCX_) */
    status = ucp_config_read(NULL, NULL, &ucp_config);
    if (status != UCS_OK) {
        ucs_error("UCG context: failed to read the UCP configuration: %s",
                  ucs_status_string(status));
        return status;
    }

    memset(&ucp_params, 0, sizeof(ucp_params));
    ucp_params.field_mask        = UCP_PARAM_FIELD_FEATURES |
                                   UCP_PARAM_FIELD_REQUEST_SIZE |
                                   UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    ucp_params.features          = UCP_FEATURE_TAG;
    ucp_params.request_size      = 0;
    ucp_params.mt_workers_shared = 0;

    status = ucp_init(&ucp_params, ucp_config, &context->ucp_context);
    ucp_config_release(ucp_config);
    if (status != UCS_OK) {
        ucs_error("UCG context: ucp_init failed: %s",
                  ucs_status_string(status));
        return status;
    }

    memset(&worker_params, 0, sizeof(worker_params));
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;

    status = ucp_worker_create(context->ucp_context, &worker_params,
                               &context->ucp_worker);
    if (status != UCS_OK) {
        ucs_error("UCG context: failed to create a UCP worker: %s",
                  ucs_status_string(status));
        ucp_cleanup(context->ucp_context);
        context->ucp_context = NULL;
        return status;
    }

    context->own_ucp = 1;
    return UCS_OK;
}

static void ucg_context_ucp_cleanup(ucg_context_t *context)
{
    if (!context->own_ucp) {
        return;
    }

    ucp_worker_destroy(context->ucp_worker);
    ucp_cleanup(context->ucp_context);
    context->ucp_worker  = NULL;
    context->ucp_context = NULL;
    context->own_ucp     = 0;
}

ucs_status_t ucg_context_create(const ucg_context_params_t *params,
                                const ucg_config_t *config,
                                ucg_context_h *context_p)
{
    ucg_context_t *context;
    ucs_status_t status;

    if (context_p == NULL) {
        ucs_error("UCG context: context_p is NULL");
        return UCS_ERR_INVALID_PARAM;
    }

    context = ucs_calloc(1, sizeof(*context), "ucg context");
    if (context == NULL) {
        ucs_error("UCG context: out of memory");
        return UCS_ERR_NO_MEMORY;
    }

    ucs_list_head_init(&context->groups);
    ucs_list_head_init(&context->p2p_conns);
    ucs_list_head_init(&context->parked);
    ucg_progress_queue_init(&context->progress_q);
    memset(context->sm_reserved, 0, sizeof(context->sm_reserved));
    context->next_group_epoch = 0;
    context->sm_dropped       = 0;
    context->next_group_id = 0;
    context->need_ucp      = 1;

    if (config == NULL) {
        status = ucg_config_read(NULL, &context->config);
    } else {
        status = ucg_config_dup(config, &context->config);
    }
    if (status != UCS_OK) {
        ucs_error("UCG context: failed to get the configuration: %s",
                  ucs_status_string(status));
        goto err_free;
    }

    status = ucg_config_check(context->config);
    if (status != UCS_OK) {
        goto err_release_config;
    }

    status = uct_o2m_watch_table_create(&context->watches);
    if (status != UCS_OK) {
        goto err_release_config;
    }

    status = ucg_context_ucp_init(context, params);
    if (status != UCS_OK) {
        goto err_destroy_watches;
    }

    context->host_id = ucg_context_host_id();

    status = ucg_context_o2m_init(context);
    if (status != UCS_OK) {
        goto err_ucp_cleanup;
    }

    status = ucg_mc_context_init(context);
    if (status != UCS_OK) {
        ucg_context_o2m_close(context);
        goto err_ucp_cleanup;
    }

    ucs_debug("UCG context %p: ucp worker %p%s, o2m %s, host id 0x%" PRIx64,
              context, context->ucp_worker, context->own_ucp ? " (own)" : "",
              context->o2m ? "on" : "off", context->host_id);
    *context_p = context;
    return UCS_OK;

err_ucp_cleanup:
    ucg_context_ucp_cleanup(context);
err_destroy_watches:
    uct_o2m_watch_table_destroy(context->watches);
err_release_config:
    ucg_config_release(context->config);
err_free:
    ucs_free(context);
    return status;
}

void ucg_context_destroy(ucg_context_h context)
{
    ucg_group_t *group;

    if (context == NULL) {
        return;
    }

    while (!ucs_list_is_empty(&context->groups)) {
        group = ucs_list_head(&context->groups, ucg_group_t, list);
        ucs_warn("UCG context %p: destroying group %u (rank %u of %u) that "
                 "was not destroyed", context, group->id, group->rank,
                 group->size);
        ucg_group_destroy(group);
    }

    /* Before the UCP connections: setups may have requests on them */
    ucg_mc_context_cleanup(context);
    ucg_context_close_p2p_conns(context);
    ucg_coll_parked_progress(context, 1);
    /* No message arrives once the interfaces are closed */
    ucg_context_o2m_close(context);
    ucg_context_ucp_cleanup(context);
    ucg_coll_parked_free(context);
    uct_o2m_watch_table_destroy(context->watches);
    ucg_config_release(context->config);
    ucs_free(context);
}

unsigned ucg_progress(ucg_context_h context)
{
    unsigned count = 0;

    /* While the started collectives are all in host-local phases, UCP has
     * nothing of theirs to do: it is progressed every UCG_UCP_IDLE_POLLS
     * calls only (its connections, early messages of later phases) */
    if (context->need_ucp ||
        (++context->ucp_idle_polls >= UCG_UCP_IDLE_POLLS)) {
        context->ucp_idle_polls = 0;
        count = ucp_worker_progress(context->ucp_worker);
    }
    if (context->uct_worker != NULL) {
        count += uct_worker_progress(context->uct_worker);
    }
    count += ucg_mc_progress(context);

    return count + ucg_progress_drain(&context->progress_q,
                                      &context->need_ucp);
}

ucg_group_h ucg_context_find_group(ucg_context_h context, uint16_t id)
{
    ucg_group_t *group;

    ucs_list_for_each(group, &context->groups, list) {
        if (group->id == id) {
            return group;
        }
    }
    return NULL;
}


/* ------------------------------------------------------------------------ */
/* UCP connections, shared by the groups                                    */
/* ------------------------------------------------------------------------ */

static void ucg_p2p_conn_free(ucg_p2p_conn_t *conn)
{
    uct_o2m_watch_put(conn->context->watches, conn->watch);
    ucs_free(conn);
}

/*
 * Take @a conn (PEER error handling) out of the cache and close its
 * endpoint with FORCE: UCP completes the requests still on it with an
 * error (once the worker has progressed) and uses no buffer of theirs after
 * that.  No group keeps the endpoint: a member whose endpoint it was is
 * marked failed (its group cannot count on what was sent to it, and the
 * peer sees the connection fail too) and is connected again if a
 * collective of a new group needs it.
 */
void ucg_p2p_conn_drop(ucg_p2p_conn_t *conn)
{
    ucg_context_t *context = conn->context;
    ucp_request_param_t param;
    ucs_status_ptr_t req;
    ucg_group_t *group;
    unsigned i;

    ucs_assert(conn->peer_err);
    ucs_list_for_each(group, &context->groups, list) {
        for (i = 0; i < group->size; ++i) {
            if (group->members[i].ep != conn->ep) {
                continue;
            }
            group->members[i].ep        = NULL;
            group->members[i].ep_failed = 1;
            if (group->failed == UCS_OK) {
                group->failed = UCS_ERR_CANCELED;
            }
        }
    }

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req                = ucp_ep_close_nbx(conn->ep, &param);
    if (UCS_PTR_IS_ERR(req)) {
        ucs_diag("UCG: force-closing an endpoint failed: %s",
                 ucs_status_string(UCS_PTR_STATUS(req)));
    } else if (req != NULL) {
        ucp_request_free(req); /* UCP releases it when it completes */
    }

    ucs_list_del(&conn->list);
    ucg_p2p_conn_free(conn);
}

/*
 * UCP reports the failure of an endpoint to a member on another host (its
 * process died, its host is unreachable): every group with that member
 * fails, and their requests on the endpoint complete with the error.
 */
static void ucg_p2p_conn_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    ucg_p2p_conn_t *conn   = arg;
    ucg_context_t *context = conn->context;
    int logged             = 0;
    ucg_group_t *group;
    unsigned i;

    conn->status = status;
    ucs_list_for_each(group, &context->groups, list) {
        for (i = 0; i < group->size; ++i) {
            if (group->members[i].ep != ep) {
                continue;
            }

            if (!logged) {
                ucs_error("UCG group %u rank %u: the connection to rank %u "
                          "(pid %d, another host) failed: %s", group->id,
                          group->rank, i, group->members[i].pid,
                          ucs_status_string(status));
                logged = 1;
            }
            if (group->failed == UCS_OK) {
                group->failed = status;
            }
            group->members[i].ep_failed = 1;
        }
    }

    if (!logged) {
        ucs_diag("UCG: a connection to another host failed: %s",
                 ucs_status_string(status));
    }
}

/*
 * Endpoints to members on this host have no error handling: with
 * UCP_ERR_HANDLING_MODE_PEER, UCX 1.13 does not use its shared-memory
 * transports (10x the latency); dead members on this host are found
 * through the liveness watches.  Endpoints to members on other hosts
 * (@a peer_err) use the PEER mode, so that UCP fails them in bounded time when the
 * member dies.
 */
ucs_status_t ucg_p2p_conn_get(ucg_context_t *context, const void *addr,
                              size_t addr_len, int peer_err,
                              const uct_o2m_proc_t *proc, ucp_ep_h *ep_p)
{
    ucp_ep_params_t params;
    ucg_p2p_conn_t *conn;
    ucs_status_t status;

    ucs_list_for_each(conn, &context->p2p_conns, list) {
        if ((conn->addr_len == addr_len) && (conn->peer_err == peer_err) &&
            !memcmp(conn->addr, addr, addr_len)) {
            if (conn->status == UCS_OK) {
                *ep_p = conn->ep;
                return UCS_OK;
            }
            /* UCP failed it (the groups using it have failed): a new
             * group connects again, and fails cleanly if the peer is
             * gone (the peer may only have closed its endpoint, see
             * ucg_group_p2p_force_close) */
            ucg_p2p_conn_drop(conn);
            break;
        }
    }

    conn = ucs_malloc(sizeof(*conn) + addr_len, "ucg p2p conn");
    if (conn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    conn->context  = context;
    conn->peer_err = peer_err;
    conn->status   = UCS_OK;
    conn->watch    = NULL;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address    = addr;
    if (peer_err) {
        params.field_mask    |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_mode       = UCP_ERR_HANDLING_MODE_PEER;
        params.err_handler.cb  = ucg_p2p_conn_err_cb;
        params.err_handler.arg = conn;
    } else {
        params.err_mode       = UCP_ERR_HANDLING_MODE_NONE;
    }

    status = ucp_ep_create(context->ucp_worker, &params, &conn->ep);
    if (status != UCS_OK) {
        ucs_free(conn);
        return status;
    }

    /* Not being able to watch only makes the close wait longer */
    if ((proc != NULL) &&
        (uct_o2m_watch_get(context->watches, proc, &conn->watch) != UCS_OK)) {
        conn->watch = NULL;
    }

    conn->addr_len = addr_len;
    memcpy(conn->addr, addr, addr_len);
    ucs_list_add_tail(&context->p2p_conns, &conn->list);
    *ep_p = conn->ep;
    return UCS_OK;
}

/*
 * Close the endpoints, flushed (every peer is closing its context too, or
 * is gone; UCP refuses the FORCE mode without error handling), those that
 * UCP failed with FORCE.  A flush that cannot complete is bounded by
 * PEER_TIMEOUT (UCG_CONTEXT_MAX_WAIT_SEC when inf), and its request is then
 * left to UCP.
 */
void ucg_context_close_p2p_conns(ucg_context_h context)
{
    ucp_worker_h worker = context->ucp_worker;
    double timeout      = ucs_min(context->config->peer_timeout,
                                  UCG_CONTEXT_MAX_WAIT_SEC);
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(timeout);
    ucp_request_param_t param;
    ucg_p2p_conn_t *conn, *tmp;
    ucs_list_link_t closing;
    ucs_status_ptr_t req;
    void *close_req;

    ucs_list_head_init(&closing);
    ucs_list_for_each_safe(conn, tmp, &context->p2p_conns, list) {
        ucs_list_del(&conn->list);
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = (conn->status != UCS_OK) ?
                             UCP_EP_CLOSE_FLAG_FORCE : 0; /* else flush */
        req = ucp_ep_close_nbx(conn->ep, &param);
        if (UCS_PTR_IS_ERR(req)) {
            ucs_diag("UCG: closing an endpoint failed: %s",
                     ucs_status_string(UCS_PTR_STATUS(req)));
            ucg_p2p_conn_free(conn);
        } else if (req == NULL) {
            ucg_p2p_conn_free(conn);
        } else {
            conn->ep = req; /* from now on, its close request */
            ucs_list_add_tail(&closing, &conn->list);
        }
    }

    while (!ucs_list_is_empty(&closing)) {
        ucs_list_for_each_safe(conn, tmp, &closing, list) {
            close_req = conn->ep;
            /* A flush to a peer of this host that exited never completes
             * (no error handling there): no wait for it */
            if ((ucp_request_check_status(close_req) != UCS_INPROGRESS) ||
                ((conn->watch != NULL) &&
                 uct_o2m_watch_has_exited(conn->watch)) ||
                (ucs_get_time() > deadline)) {
                /* UCP releases it when it completes */
                ucp_request_free(close_req);
                ucs_list_del(&conn->list);
                ucg_p2p_conn_free(conn);
            }
        }
        ucp_worker_progress(worker);
    }
}
