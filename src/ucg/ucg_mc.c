/**
 * UCG broadcasts between hosts over multicast: the context's interfaces of
 * the multicast transports (device choice, open/close, progress, counters)
 * and the transport a group takes.  The group endpoints of the sets of
 * MC_BCAST phases, agreed all or none, are ucg_mc_agree.c; the phase
 * itself is phase/ucg_mc_bcast.c.
 *
 * Transports, most preferred first (ucg_mc_tl_t, ucg_mc_tls below):
 * mc_mlx5, mc_verbs (IB/RoCE UD multicast) and mc_udp (UDP/IP multicast).
 * A context opens every one that MC_TL and UCX_TLS allow and that has a
 * device (a transport not registered with UCX, e.g. mc_mlx5 in a build
 * without mlx5dv or on a port that is not mlx5, has none); each member tells the others at group creation
 * which ones it has, and every member takes the same one: the first of
 * the list that every member has (ucg_mc_select).  A transport is one row
 * of ucg_mc_tls: what UCG needs to know of it beyond its name.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_mc_int.h"
#include "ucg_coll.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>


/* What UCG needs to know of a multicast transport */
typedef struct ucg_mc_tl_info {
    const char          *component;     /* UCT component that has it */
    const char          *peer_timeout;  /* its variable bounding a silent
                                           member, set from PEER_TIMEOUT */
    ucs_async_mode_t    async_mode;     /* of its own UCT worker */
    int                 ep_counters;    /* counts per group endpoint
                                           (uct_mc_verbs_ep_counters),
                                           else per interface (mc_udp) */
} ucg_mc_tl_info_t;

static const ucg_mc_tl_info_t ucg_mc_tls[UCG_MC_TL_LAST] = {
    /* UD transports: UD's own timers need an async thread; their group
     * endpoints (mc/common/mc_ib_group.c, both) count what they did */
    [UCG_MC_TL_MLX5]  = {"ib", "GROUP_PEER_TIMEOUT",
                         UCS_ASYNC_MODE_THREAD_SPINLOCK, 1},
    [UCG_MC_TL_VERBS] = {"ib", "GROUP_PEER_TIMEOUT",
                         UCS_ASYNC_MODE_THREAD_SPINLOCK, 1},
    [UCG_MC_TL_UDP]   = {UCT_MC_UDP_TL_NAME, "PEER_TIMEOUT",
                         UCS_ASYNC_MODE_POLL, 0}
};


const char *ucg_mc_peer_timeout_value(double peer_timeout,
                                      const char *tl_name, const char *var,
                                      char *buf, size_t max)
{
    char env[128];
    size_t i;

    if (isfinite(peer_timeout)) {
        /* Plain numbers are seconds for UCX's time parser */
        ucs_snprintf_zero(buf, max, "%.9g", peer_timeout);
        return buf;
    }

    ucs_snprintf_zero(env, sizeof(env), "UCX_%s_%s", tl_name, var);
    for (i = 0; env[i] != '\0'; ++i) {
        env[i] = toupper((unsigned char)env[i]);
    }
    if (getenv(env) != NULL) {
        return NULL;
    }
    ucs_snprintf_zero(buf, max, "0");
    return buf;
}

const char *ucg_mc_tl_name(ucg_mc_tl_t tl)
{
    return ((unsigned)tl < UCG_MC_TL_LAST) ? ucg_mc_tl_names[tl] : "none";
}

/* Names of the transports of @a tls, comma-separated, or "none" */
static const char *ucg_mc_tls_str(uint8_t tls, char *buf, size_t max)
{
    size_t len = 0;
    unsigned tl;

    buf[0] = '\0';
    for (tl = 0; tl < UCG_MC_TL_LAST; ++tl) {
        if ((tls & UCG_MC_TL_BIT(tl)) && (len < max)) {
            len += snprintf(buf + len, max - len, "%s%s",
                            (len > 0) ? "," : "", ucg_mc_tl_names[tl]);
        }
    }
    return (len > 0) ? buf : "none";
}


/* ------------------------------------------------------------------------ */
/* Context: the multicast interfaces                                       */
/* ------------------------------------------------------------------------ */

static int ucg_mc_dev_is_loopback(const char *name)
{
    struct ifreq ifr;
    int fd, ret;

    if (strlen(name) >= sizeof(ifr.ifr_name)) {
        return 0;
    }
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return 0;
    }
    memset(&ifr, 0, sizeof(ifr));
    ucs_strncpy_zero(ifr.ifr_name, name, sizeof(ifr.ifr_name));
    ret = ioctl(fd, SIOCGIFFLAGS, &ifr);
    close(fd);
    return (ret == 0) && (ifr.ifr_flags & IFF_LOOPBACK);
}

/* Whether @a name is in the comma-separated @a list */
static int ucg_mc_list_has(const char *list, const char *name)
{
    size_t len = strlen(name);
    const char *p;

    for (p = list; p != NULL; p = strchr(p, ',')) {
        p += (*p == ',');
        if (!strncmp(p, name, len) && ((p[len] == ',') || (p[len] == '\0'))) {
            return 1;
        }
    }
    return 0;
}

/* How well device @a dev fits (the best is taken): the device MC_DEVICE
 * names (others: 0, not taken), else one of UCX_NET_DEVICES, else one
 * other than loopback, else loopback */
static int ucg_mc_dev_score(const ucg_config_t *config, const char *dev)
{
    const char *net_devs = getenv("UCX_NET_DEVICES");

    if (strcmp(config->mc_device, "auto")) {
        return !strcmp(dev, config->mc_device) ? 4 : 0;
    }
    if ((net_devs != NULL) && strcmp(net_devs, "all") &&
        ucg_mc_list_has(net_devs, dev)) {
        return 3;
    }
    return ucg_mc_dev_is_loopback(dev) ? 1 : 2;
}

static uct_component_h ucg_mc_component_find(const char *name)
{
    uct_component_h *components, found = NULL;
    uct_component_attr_t attr;
    unsigned num, i;

    if (uct_query_components(&components, &num) != UCS_OK) {
        return NULL;
    }
    for (i = 0; (i < num) && (found == NULL); ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, name)) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    return found;
}

/* The best device of @a mci's transport over the memory domains of its
 * component; the domain of the best stays open in mci->md.
 * UCS_ERR_NO_DEVICE when there is none (the transport is not registered,
 * no device, or MC_DEVICE names another). */
static ucs_status_t ucg_mc_find_dev(const ucg_config_t *config,
                                    ucg_mc_iface_t *mci)
{
    const char *tl_name = ucg_mc_tl_names[mci->tl];
    uct_md_resource_desc_t *mds = NULL;
    uct_tl_resource_desc_t *res;
    uct_component_attr_t attr;
    uct_component_h component;
    uct_md_config_t *md_config;
    int best = 0, score, keep;
    unsigned i, j, num_res;
    uct_md_h md;

    component = ucg_mc_component_find(ucg_mc_tls[mci->tl].component);
    if (component == NULL) {
        return UCS_ERR_NO_DEVICE;
    }

    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if ((uct_component_query(component, &attr) != UCS_OK) ||
        (attr.md_resource_count == 0)) {
        return UCS_ERR_NO_DEVICE;
    }
    mds = ucs_calloc(attr.md_resource_count, sizeof(*mds), "ucg mc mds");
    if (mds == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds;
    if (uct_component_query(component, &attr) != UCS_OK) {
        ucs_free(mds);
        return UCS_ERR_NO_DEVICE;
    }

    for (i = 0; i < attr.md_resource_count; ++i) {
        if (uct_md_config_read(component, NULL, NULL, &md_config) != UCS_OK) {
            continue;
        }
        if (uct_md_open(component, mds[i].md_name, md_config, &md) !=
            UCS_OK) {
            uct_config_release(md_config);
            continue;
        }
        uct_config_release(md_config);

        keep = 0;
        if (uct_md_query_tl_resources(md, &res, &num_res) == UCS_OK) {
            for (j = 0; j < num_res; ++j) {
                if (strcmp(res[j].tl_name, tl_name)) {
                    continue;
                }
                score = ucg_mc_dev_score(config, res[j].dev_name);
                if (score > best) {
                    best = score;
                    keep = 1;
                    ucs_strncpy_zero(mci->dev, res[j].dev_name,
                                     sizeof(mci->dev));
                }
            }
            uct_release_tl_resource_list(res);
        }

        if (keep) {
            if (mci->md != NULL) {
                uct_md_close(mci->md);
            }
            mci->md = md;
        } else {
            uct_md_close(md);
        }
    }

    ucs_free(mds);
    return (mci->md != NULL) ? UCS_OK : UCS_ERR_NO_DEVICE;
}

static ucs_status_t ucg_mc_iface_err_cb(void *arg, uct_ep_h ep,
                                        ucs_status_t status)
{
    /* The phases read the endpoint's state; nothing else to do */
    ucs_debug("UCG: multicast endpoint %p failed: %s", ep,
              ucs_status_string(status));
    return UCS_OK;
}

static void ucg_mc_iface_close(ucg_mc_iface_t *mci)
{
    if (mci->iface != NULL) {
        uct_iface_close(mci->iface);
        mci->iface = NULL;
    }
    if (mci->md != NULL) {
        uct_md_close(mci->md);
        mci->md = NULL;
    }
    if (mci->worker != NULL) {
        uct_worker_destroy(mci->worker);
        mci->worker = NULL;
    }
    if (mci->async != NULL) {
        ucs_async_context_destroy(mci->async);
        mci->async = NULL;
    }
}

/* Opens @a mci's transport on its best device; on failure nothing of it
 * stays open and the caller says why */
static ucs_status_t ucg_mc_iface_open(ucg_context_h context,
                                      ucg_mc_iface_t *mci)
{
    const ucg_config_t *config   = context->config;
    const ucg_mc_tl_info_t *info = &ucg_mc_tls[mci->tl];
    const char *tl_name          = ucg_mc_tl_names[mci->tl];
    uct_iface_config_t *iface_config = NULL;
    uct_iface_attr_t attr;
    ucs_status_t status;
    char value[64];

    status = ucg_mc_find_dev(config, mci);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_md_iface_config_read(mci->md, tl_name, NULL, NULL,
                                      &iface_config);
    if (status != UCS_OK) {
        goto err;
    }

    if (ucg_mc_peer_timeout_value(config->peer_timeout, tl_name,
                                  info->peer_timeout, value,
                                  sizeof(value)) != NULL) {
        status = uct_config_modify(iface_config, info->peer_timeout, value);
        if (status != UCS_OK) {
            ucs_diag("UCG: failed to set %s's %s: %s", tl_name,
                     info->peer_timeout, ucs_status_string(status));
            goto err;
        }
    }

    status = ucs_async_context_create(info->async_mode, &mci->async);
    if (status != UCS_OK) {
        goto err;
    }
    status = uct_worker_create(mci->async, UCS_THREAD_MODE_SINGLE,
                               &mci->worker);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_o2m_iface_open_dev(mci->md, mci->worker, tl_name, mci->dev,
                                    iface_config, ucg_mc_iface_err_cb,
                                    context, &mci->iface);
    if (status != UCS_OK) {
        mci->iface = NULL;
        goto err;
    }

    status = uct_iface_query(mci->iface, &attr);
    if (status != UCS_OK) {
        goto err;
    }
    if ((attr.cap.am.max_bcopy <= sizeof(ucg_sm_hdr_t)) ||
        (attr.iface_addr_len > UCG_MC_ADDR_MAX) ||
        (attr.device_addr_len > UCG_MC_ADDR_MAX) ||
        (attr.iface_addr_len + attr.device_addr_len > UCG_MC_ADDR_MAX)) {
        ucs_diag("UCG: %s/%s: messages of %zu bytes or addresses of "
                 "%zu + %zu bytes do not fit", tl_name, mci->dev,
                 attr.cap.am.max_bcopy, attr.iface_addr_len,
                 attr.device_addr_len);
        status = UCS_ERR_UNSUPPORTED;
        goto err;
    }

    mci->max_frag       = attr.cap.am.max_bcopy - sizeof(ucg_sm_hdr_t);
    mci->iface_addr_len = attr.iface_addr_len;
    mci->dev_addr_len   = attr.device_addr_len;
    mci->loopback       = ucg_mc_dev_is_loopback(mci->dev);
    status = uct_iface_get_address(mci->iface, (void*)mci->iface_addr);
    if (status == UCS_OK) {
        status = uct_iface_get_device_address(mci->iface,
                                              (void*)mci->dev_addr);
    }
    if (status != UCS_OK) {
        goto err;
    }

    /* Synchronous: called from ucg_progress() */
    status = uct_iface_set_am_handler(mci->iface, UCG_MC_AM_ID,
                                      ucg_sm_am_cb, context, 0);
    if (status != UCS_OK) {
        goto err;
    }
    uct_iface_progress_enable(mci->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_config_release(iface_config);
    ucs_debug("UCG: %s on %s%s, fragments of %zu bytes", tl_name, mci->dev,
              mci->loopback ? " (loopback)" : "", mci->max_frag);
    return UCS_OK;

err:
    if (iface_config != NULL) {
        uct_config_release(iface_config);
    }
    ucg_mc_iface_close(mci);
    return status;
}

uint8_t ucg_mc_tls_wanted(const ucg_config_t *config)
{
    uint8_t tls = 0;
    unsigned tl;

    if (config->mc == UCS_NO) {
        return 0;
    }

    for (tl = 0; tl < UCG_MC_TL_LAST; ++tl) {
        if ((config->mc_tl != UCG_MC_TL_AUTO) && (config->mc_tl != tl)) {
            continue;
        }
        if (!ucg_context_tls_allows(config, ucg_mc_tl_names[tl])) {
            ucs_debug("UCG: UCX_TLS excludes %s", ucg_mc_tl_names[tl]);
            continue;
        }
        tls |= UCG_MC_TL_BIT(tl);
    }
    return tls;
}

ucs_status_t ucg_mc_context_init(ucg_context_h context)
{
    ucs_ternary_auto_value_t mode = context->config->mc;
    uint8_t wanted                = ucg_mc_tls_wanted(context->config);
    struct ucg_mc_ctx *mc;
    ucs_status_t status;
    unsigned tl, num_open = 0;
    char names[64];

    context->mc = NULL;
    if (mode == UCS_NO) {
        return UCS_OK;
    }

    if (wanted == 0) {
        if (mode == UCS_YES) {
            ucs_error("UCG MC=y but UCX_TLS or MC_TL excludes every "
                      "multicast transport");
            return UCS_ERR_UNSUPPORTED;
        }
        return UCS_OK;
    }

    mc = ucs_calloc(1, sizeof(*mc), "ucg mc");
    if (mc == NULL) {
        ucs_error("UCG: out of memory for the multicast interfaces");
        return UCS_ERR_NO_MEMORY;
    }
    ucs_list_head_init(&mc->lingering);

    for (tl = 0; tl < UCG_MC_TL_LAST; ++tl) {
        mc->ifaces[tl].tl = (ucg_mc_tl_t)tl;
        if (!(wanted & UCG_MC_TL_BIT(tl))) {
            continue;
        }
        status = ucg_mc_iface_open(context, &mc->ifaces[tl]);
        if (status == UCS_OK) {
            ++num_open;
            continue;
        }
        /* Transports absent from a build or a machine are the rule:
         * say so at debug level, the others at diag */
        if (status == UCS_ERR_NO_DEVICE) {
            ucs_debug("UCG: %s has no device here", ucg_mc_tl_names[tl]);
        } else {
            ucs_diag("UCG: not using %s: %s", ucg_mc_tl_names[tl],
                     ucs_status_string(status));
        }
    }

    if (num_open == 0) {
        ucs_free(mc);
        if (mode == UCS_YES) {
            ucs_error("UCG MC=y but no multicast transport can be used "
                      "(tried %s)",
                      ucg_mc_tls_str(wanted, names, sizeof(names)));
            return UCS_ERR_UNSUPPORTED;
        }
        ucs_diag("UCG: continuing without multicast (tried %s)",
                 ucg_mc_tls_str(wanted, names, sizeof(names)));
        return UCS_OK;
    }

    context->mc = mc;
    return UCS_OK;
}

/* Adds @a b to @a a */
static void ucg_mc_counters_sum(ucg_mc_counters_t *a,
                                const ucg_mc_counters_t *b)
{
    a->tx_packets      += b->tx_packets;
    a->rx_packets      += b->rx_packets;
    a->rx_mcast_data   += b->rx_mcast_data;
    a->rx_repaired     += b->rx_repaired;
    a->rx_dup          += b->rx_dup;
    a->tx_nack         += b->tx_nack;
    a->tx_repair_ucast += b->tx_repair_ucast;
    a->tx_repair_mcast += b->tx_repair_mcast;
    a->rx_syscalls     += b->rx_syscalls;
}

void ucg_mc_ep_counters_add(const ucg_mc_iface_t *mci, uct_ep_h ep,
                            ucg_mc_counters_t *counters)
{
    uct_mc_verbs_ep_counters_t vc;
    ucg_mc_counters_t c = {0};

    if (!ucg_mc_tls[mci->tl].ep_counters ||
        (uct_mc_verbs_ep_counters(ep, &vc) != UCS_OK)) {
        return;
    }
    c.rx_packets      = vc.rx_datagrams;
    c.rx_mcast_data   = vc.rx_mcast_data;
    c.rx_repaired     = vc.rx_repaired;
    c.rx_dup          = vc.rx_dup;
    c.tx_nack         = vc.tx_nack;
    c.tx_repair_ucast = vc.tx_repair_ucast;
    c.tx_repair_mcast = vc.tx_repair_mcast;
    ucg_mc_counters_sum(counters, &c);
}

static void ucg_mc_eps_counters_add(ucs_list_link_t *list,
                                    const ucg_mc_iface_t *mci,
                                    ucg_mc_counters_t *counters)
{
    ucg_mc_ep_t *mc_ep;

    ucs_list_for_each(mc_ep, list, list) {
        if ((mc_ep->tl == mci->tl) && (mc_ep->ep != NULL)) {
            ucg_mc_ep_counters_add(mci, mc_ep->ep, counters);
        }
    }
}

ucs_status_t ucg_mc_counters(ucg_context_h context, ucg_mc_tl_t tl,
                             ucg_mc_counters_t *counters)
{
    ucg_mc_iface_t *mci = ucg_mc_iface(context->mc, tl);
    uct_mc_udp_counters_t uc;
    ucs_status_t status;
    ucg_group_t *group;

    if (mci == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    memset(counters, 0, sizeof(*counters));
    if (!ucg_mc_tls[tl].ep_counters) {
        status = uct_mc_udp_iface_counters(mci->iface, &uc);
        if (status != UCS_OK) {
            return status;
        }
        counters->tx_packets      = uc.tx_packets;
        counters->rx_packets      = uc.rx_packets;
        counters->rx_dup          = uc.rx_dup;
        counters->tx_nack         = uc.tx_nack;
        counters->tx_repair_ucast = uc.tx_repair_ucast;
        counters->tx_repair_mcast = uc.tx_repair_mcast;
        counters->rx_syscalls     = uc.rx_syscalls;
        return UCS_OK;
    }

    *counters = mci->gone;
    ucg_mc_eps_counters_add(&context->mc->lingering, mci, counters);
    ucs_list_for_each(group, &context->groups, list) {
        if (group->mc != NULL) {
            ucg_mc_eps_counters_add(&group->mc->eps, mci, counters);
        }
    }
    return UCS_OK;
}

void ucg_mc_context_cleanup(ucg_context_h context)
{
    struct ucg_mc_ctx *mc = context->mc;
    ucg_mc_counters_t cnt;
    ucg_mc_ep_t *mc_ep, *tmp;
    ucg_mc_iface_t *mci;
    unsigned tl;

    if (mc == NULL) {
        return;
    }

    ucs_list_for_each_safe(mc_ep, tmp, &mc->lingering, list) {
        ucs_list_del(&mc_ep->list);
        ucg_mc_ep_free(context, mc_ep);
    }

    for (tl = 0; tl < UCG_MC_TL_LAST; ++tl) {
        mci = ucg_mc_iface(mc, (ucg_mc_tl_t)tl);
        if (mci == NULL) {
            continue;
        }
        /* What it did, for whoever must know that multicast carried the
         * data (test/mpi/run.sh with MPI_TEST_EXPECT_MC=1) */
        if ((ucg_mc_counters(context, (ucg_mc_tl_t)tl, &cnt) != UCS_OK) ||
            ((cnt.tx_packets == 0) && (cnt.rx_packets == 0))) {
            /* nothing to say */
        } else if (!ucg_mc_tls[tl].ep_counters) {
            ucs_diag("UCG: %s sent %lu, received %lu datagrams; %lu NACKs "
                     "sent, %lu repairs sent by unicast, %lu PSNs "
                     "re-multicast, %lu duplicates", ucg_mc_tl_names[tl],
                     cnt.tx_packets, cnt.rx_packets, cnt.tx_nack,
                     cnt.tx_repair_ucast, cnt.tx_repair_mcast, cnt.rx_dup);
        } else {
            ucs_diag("UCG: %s received %lu datagrams, %lu data packets by "
                     "multicast, %lu repaired; %lu NACKs sent, %lu repairs "
                     "sent by unicast, %lu PSNs re-multicast, %lu "
                     "duplicates", ucg_mc_tl_names[tl], cnt.rx_packets,
                     cnt.rx_mcast_data, cnt.rx_repaired, cnt.tx_nack,
                     cnt.tx_repair_ucast, cnt.tx_repair_mcast, cnt.rx_dup);
        }
        ucg_mc_iface_close(mci);
    }
    ucs_free(mc);
    context->mc = NULL;
}

unsigned ucg_mc_progress(ucg_context_h context)
{
    struct ucg_mc_ctx *mc = context->mc;
    unsigned count        = 0;
    unsigned tl;

    if ((mc == NULL) || (mc->num_eps == 0)) {
        return 0;
    }
    for (tl = 0; tl < UCG_MC_TL_LAST; ++tl) {
        if (mc->ifaces[tl].num_eps > 0) {
            count += uct_worker_progress(mc->ifaces[tl].worker);
        }
    }
    return count;
}

void ucg_mc_local_tls(ucg_context_h context, uint8_t *tls_p,
                      uint8_t *lo_tls_p)
{
    ucg_mc_iface_t *mci;
    unsigned tl;

    *tls_p    = 0;
    *lo_tls_p = 0;
    for (tl = 0; tl < UCG_MC_TL_LAST; ++tl) {
        mci = ucg_mc_iface(context->mc, (ucg_mc_tl_t)tl);
        if (mci != NULL) {
            *tls_p    |= UCG_MC_TL_BIT(tl);
            *lo_tls_p |= mci->loopback ? UCG_MC_TL_BIT(tl) : 0;
        }
    }
}


/* ------------------------------------------------------------------------ */
/* Groups: the transport every member has                                  */
/* ------------------------------------------------------------------------ */

ucg_mc_tl_t ucg_mc_select(ucs_ternary_auto_value_t mode, unsigned num_hosts,
                          const ucg_mc_avail_t *avail, unsigned size,
                          unsigned me)
{
    int mine        = (avail[me].tls != 0);
    uint8_t all     = 0xff;
    uint8_t lo      = 0;
    int real_hosts  = 0;
    unsigned i, tl, lacking = me;
    char names[64];

    if ((mode == UCS_NO) || (num_hosts < 2)) {
        return UCG_MC_TL_LAST;
    }

    if (size > UCG_MC_MAX_RANKS) {
        if (mine) {
            ucs_diag("UCG group rank %u: %u members, multicast phases take "
                     "at most %u", me, size, UCG_MC_MAX_RANKS);
        }
        return UCG_MC_TL_LAST;
    }

    for (i = 0; i < size; ++i) {
        if ((all & avail[i].tls) != all) {
            lacking = i;   /* the last member that narrowed the choice */
        }
        all        &= avail[i].tls;
        lo         |= avail[i].lo_tls;
        real_hosts |= (avail[i].real_host != avail[0].real_host);
    }

    /* Between virtual hosts of one real host only when forced: sm and
     * UCP's shared memory are the better way there */
    if (!real_hosts && (mode != UCS_YES)) {
        return UCG_MC_TL_LAST;
    }

    for (tl = 0; tl < UCG_MC_TL_LAST; ++tl) {
        if (!(all & UCG_MC_TL_BIT(tl))) {
            continue;
        }
        if (real_hosts && (lo & UCG_MC_TL_BIT(tl))) {
            if (mine) {
                ucs_diag("UCG group rank %u: the group spans hosts and a "
                         "member's %s is on loopback: not using it "
                         "(MC_DEVICE)", me, ucg_mc_tl_names[tl]);
            }
            continue;
        }
        return (ucg_mc_tl_t)tl;
    }

    if (mine) {
        ucs_diag("UCG group rank %u: no multicast transport that every "
                 "member has off loopback (rank %u has %s): point-to-point",
                 me, lacking, ucg_mc_tls_str(avail[lacking].tls, names,
                                             sizeof(names)));
    }
    return UCG_MC_TL_LAST;
}
