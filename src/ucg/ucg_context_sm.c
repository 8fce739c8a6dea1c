/**
 * ucx-o2m: UCG context: the sm_bcast / sm_incast interfaces UCG opens, as
 * the O2M setting and UCX_TLS allow.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_context.h"
#include "ucg_def.h"
#include "ucg_group.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>

#include <stdlib.h>
#include <string.h>


#define UCG_O2M_COMPONENT_NAME "o2m"
#define UCG_O2M_MD_NAME        "o2m"
#define UCG_O2M_DEV_NAME       "memory"


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

ucs_status_t ucg_context_sm_set_am_handler(ucg_context_t *context,
                                           uct_am_callback_t cb)
{
    ucs_status_t status;
    ucg_sm_tl_t tl;

    if (!context->o2m || (context->sm_am_cb == cb)) {
        return UCS_OK;
    }

    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        /* Synchronous: called from ucg_progress() */
        status = uct_iface_set_am_handler(context->sm_iface[tl], UCG_SM_AM_ID,
                                          cb, context, 0);
        if (status != UCS_OK) {
            ucs_error("UCG context %p: failed to set the AM handler of %s: "
                      "%s", context, ucg_sm_tl_name(tl),
                      ucs_status_string(status));
            return status;
        }
    }

    context->sm_am_cb = cb;
    return UCS_OK;
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

            /* The usual cause is a member that exited: the group's line
             * names it (ucg_group_member_failed) */
            if (ucg_group_check_now(group) != UCS_OK) {
                return UCS_OK;
            }

            ucs_diag("group %u rank %u: %s endpoint (root %u) failed: %s",
                     group->id, group->rank, ucg_sm_tl_name(sm_ep->tl),
                     sm_ep->root, ucs_status_string(status));
            group->failed = status;
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

    status = uct_o2m_iface_open_dev(context->o2m_md, context->uct_worker,
                                    ucg_sm_tl_name(tl), UCG_O2M_DEV_NAME,
                                    iface_config, ucg_context_sm_err_handler,
                                    context, &context->sm_iface[tl]);
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

    /* The AM handler is the executor's receive path, which it installs for
     * the first group (ucg_context_sm_set_am_handler): no message comes
     * before, a member receives only on the endpoints of its groups */
    uct_iface_progress_enable(context->sm_iface[tl],
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

out_release:
    uct_config_release(iface_config);
    return status;
}

void ucg_context_o2m_close(ucg_context_t *context)
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
    context->sm_am_cb      = NULL;
    context->o2m           = 0;
}

static ucs_status_t ucg_context_o2m_open(ucg_context_t *context)
{
    uct_md_config_t *md_config;
    ucs_status_t status;
    ucg_sm_tl_t tl;

    context->o2m_component = uct_o2m_component_find(UCG_O2M_COMPONENT_NAME);
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
ucs_status_t ucg_context_o2m_init(ucg_context_t *context)
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
