/**
 * UCG broadcasts between hosts over IP multicast (mc_udp): the context's
 * interface (device choice, open/close, progress, counters) and whether a
 * group can use it.  The group endpoints of the sets of MC_BCAST phases,
 * agreed all or none, are ucg_mc_agree.c; the phase itself is
 * phase/ucg_mc_bcast.c.
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

#include <math.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>




/* ------------------------------------------------------------------------ */
/* Context: the mc_udp interface                                           */
/* ------------------------------------------------------------------------ */

static int ucg_mc_dev_is_loopback(const char *name)
{
    struct ifreq ifr;
    int fd, ret;

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

/* The device MC_DEVICE names, or the auto choice; NULL when none fits */
static const char *
ucg_mc_pick_device(const ucg_config_t *config,
                   const uct_tl_resource_desc_t *res, unsigned num)
{
    const char *net_devs = getenv("UCX_NET_DEVICES");
    const char *lo       = NULL;
    unsigned i;

    if (strcmp(config->mc_device, "auto")) {
        for (i = 0; i < num; ++i) {
            if (!strcmp(res[i].dev_name, config->mc_device)) {
                return res[i].dev_name;
            }
        }
        ucs_diag("UCG MC_DEVICE=%s: mc_udp has no such device",
                 config->mc_device);
        return NULL;
    }

    if ((net_devs != NULL) && strcmp(net_devs, "all")) {
        for (i = 0; i < num; ++i) {
            if (ucg_mc_list_has(net_devs, res[i].dev_name)) {
                return res[i].dev_name;
            }
        }
    }

    for (i = 0; i < num; ++i) {
        if (!ucg_mc_dev_is_loopback(res[i].dev_name)) {
            return res[i].dev_name;
        } else if (lo == NULL) {
            lo = res[i].dev_name;
        }
    }
    return lo;
}

static ucs_status_t ucg_mc_iface_err_cb(void *arg, uct_ep_h ep,
                                        ucs_status_t status)
{
    /* The phases read the endpoint's state; nothing else to do */
    ucs_debug("UCG: mc_udp endpoint %p failed: %s", ep,
              ucs_status_string(status));
    return UCS_OK;
}

static void ucg_mc_close(struct ucg_mc_ctx *mc)
{
    if (mc->iface != NULL) {
        uct_iface_close(mc->iface);
    }
    if (mc->md != NULL) {
        uct_md_close(mc->md);
    }
    if (mc->worker != NULL) {
        uct_worker_destroy(mc->worker);
    }
    if (mc->async != NULL) {
        ucs_async_context_destroy(mc->async);
    }
    ucs_free(mc);
}

static ucs_status_t ucg_mc_iface_open(ucg_context_h context,
                                      uct_component_h component,
                                      struct ucg_mc_ctx *mc)
{
    const ucg_config_t *config = context->config;
    uct_tl_resource_desc_t *res = NULL;
    uct_iface_config_t *iface_config = NULL;
    uct_md_config_t *md_config;
    uct_iface_attr_t attr;
    const char *dev;
    unsigned num_res;
    ucs_status_t status;
    char value[64];

    status = uct_md_config_read(component, NULL, NULL, &md_config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_open(component, UCT_MC_UDP_TL_NAME, md_config, &mc->md);
    uct_config_release(md_config);
    if (status != UCS_OK) {
        ucs_diag("UCG: failed to open md %s: %s", UCT_MC_UDP_TL_NAME,
                 ucs_status_string(status));
        return status;
    }

    status = uct_md_query_tl_resources(mc->md, &res, &num_res);
    if (status != UCS_OK) {
        return status;
    }

    dev = ucg_mc_pick_device(config, res, num_res);
    if (dev == NULL) {
        ucs_diag("UCG: no mc_udp device to use");
        status = UCS_ERR_NO_DEVICE;
        goto out;
    }

    status = uct_md_iface_config_read(mc->md, UCT_MC_UDP_TL_NAME, NULL, NULL,
                                      &iface_config);
    if (status != UCS_OK) {
        goto out;
    }

    if (isfinite(config->peer_timeout)) {
        /* Plain numbers are seconds for UCX's time parser */
        ucs_snprintf_zero(value, sizeof(value), "%.9g",
                          config->peer_timeout);
        status = uct_config_modify(iface_config, "PEER_TIMEOUT", value);
        if (status != UCS_OK) {
            ucs_diag("UCG: failed to set the mc_udp PEER_TIMEOUT: %s",
                     ucs_status_string(status));
            goto out;
        }
    }

    status = ucs_async_context_create(UCS_ASYNC_MODE_POLL, &mc->async);
    if (status != UCS_OK) {
        goto out;
    }
    status = uct_worker_create(mc->async, UCS_THREAD_MODE_SINGLE,
                               &mc->worker);
    if (status != UCS_OK) {
        goto out;
    }

    status = uct_o2m_iface_open_dev(mc->md, mc->worker, UCT_MC_UDP_TL_NAME,
                                    dev, iface_config, ucg_mc_iface_err_cb,
                                    context, &mc->iface);
    if (status != UCS_OK) {
        ucs_diag("UCG: failed to open mc_udp/%s: %s", dev,
                 ucs_status_string(status));
        goto out;
    }

    status = uct_iface_query(mc->iface, &attr);
    if (status != UCS_OK) {
        goto out;
    }
    if ((attr.cap.am.max_bcopy <= sizeof(ucg_sm_hdr_t)) ||
        (attr.iface_addr_len > UCG_MC_ADDR_MAX) ||
        (attr.device_addr_len > UCG_MC_ADDR_MAX) ||
        (attr.iface_addr_len + attr.device_addr_len > UCG_MC_ADDR_MAX)) {
        ucs_diag("UCG: mc_udp/%s: messages of %zu bytes or addresses of "
                 "%zu + %zu bytes do not fit", dev, attr.cap.am.max_bcopy,
                 attr.iface_addr_len, attr.device_addr_len);
        status = UCS_ERR_UNSUPPORTED;
        goto out;
    }

    mc->max_frag       = attr.cap.am.max_bcopy - sizeof(ucg_sm_hdr_t);
    mc->iface_addr_len = attr.iface_addr_len;
    mc->dev_addr_len   = attr.device_addr_len;
    mc->loopback       = ucg_mc_dev_is_loopback(dev);
    status = uct_iface_get_address(mc->iface, (void*)mc->iface_addr);
    if (status == UCS_OK) {
        status = uct_iface_get_device_address(mc->iface,
                                              (void*)mc->dev_addr);
    }
    if (status != UCS_OK) {
        goto out;
    }

    /* Synchronous: called from ucg_progress() */
    status = uct_iface_set_am_handler(mc->iface, UCG_MC_AM_ID, ucg_sm_am_cb,
                                      context, 0);
    if (status != UCS_OK) {
        goto out;
    }
    uct_iface_progress_enable(mc->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ucs_debug("UCG: mc_udp on %s%s, fragments of %zu bytes", dev,
              mc->loopback ? " (loopback)" : "", mc->max_frag);

out:
    if (iface_config != NULL) {
        uct_config_release(iface_config);
    }
    uct_release_tl_resource_list(res);
    return status;
}

ucs_status_t ucg_mc_context_init(ucg_context_h context)
{
    ucs_ternary_auto_value_t mode = context->config->mc;
    uct_component_h component;
    struct ucg_mc_ctx *mc;
    ucs_status_t status;

    context->mc = NULL;
    if (mode == UCS_NO) {
        return UCS_OK;
    }

    if (!ucg_context_tls_allows(context->config, UCT_MC_UDP_TL_NAME)) {
        if (mode == UCS_YES) {
            ucs_error("UCG MC=y but UCX_TLS excludes %s",
                      UCT_MC_UDP_TL_NAME);
            return UCS_ERR_UNSUPPORTED;
        }
        return UCS_OK;
    }

    component = uct_o2m_component_find(UCT_MC_UDP_TL_NAME);
    mc        = ucs_calloc(1, sizeof(*mc), "ucg mc");
    if ((component == NULL) || (mc == NULL)) {
        ucs_free(mc);
        status = (component == NULL) ? UCS_ERR_NO_DEVICE : UCS_ERR_NO_MEMORY;
        goto err;
    }
    ucs_list_head_init(&mc->lingering);

    status = ucg_mc_iface_open(context, component, mc);
    if (status != UCS_OK) {
        ucg_mc_close(mc);
        goto err;
    }

    context->mc = mc;
    return UCS_OK;

err:
    if (mode == UCS_YES) {
        ucs_error("UCG MC=y but %s cannot be used: %s", UCT_MC_UDP_TL_NAME,
                  ucs_status_string(status));
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_diag("UCG: continuing without %s: %s", UCT_MC_UDP_TL_NAME,
             ucs_status_string(status));
    return UCS_OK;
}

void ucg_mc_context_cleanup(ucg_context_h context)
{
    struct ucg_mc_ctx *mc = context->mc;
    uct_mc_udp_counters_t cnt;
    ucg_mc_ep_t *mc_ep, *tmp;

    if (mc == NULL) {
        return;
    }

    /* What it did, for whoever must know that multicast carried the data
     * (test/mpi/run.sh with MPI_TEST_EXPECT_MC=1) */
    if ((uct_mc_udp_iface_counters(mc->iface, &cnt) == UCS_OK) &&
        ((cnt.tx_packets > 0) || (cnt.rx_packets > 0))) {
        ucs_diag("UCG: mc_udp sent %lu, received %lu datagrams; %lu NACKs "
                 "sent, %lu repairs sent by unicast, %lu PSNs re-multicast, "
                 "%lu duplicates", cnt.tx_packets, cnt.rx_packets,
                 cnt.tx_nack, cnt.tx_repair_ucast, cnt.tx_repair_mcast,
                 cnt.rx_dup);
    }

    ucs_list_for_each_safe(mc_ep, tmp, &mc->lingering, list) {
        ucs_list_del(&mc_ep->list);
        ucg_mc_ep_free(context, mc_ep);
    }
    ucg_mc_close(mc);
    context->mc = NULL;
}

unsigned ucg_mc_progress(ucg_context_h context)
{
    struct ucg_mc_ctx *mc = context->mc;

    return ((mc != NULL) && (mc->num_eps > 0)) ?
           uct_worker_progress(mc->worker) : 0;
}

uint8_t ucg_mc_local_kind(ucg_context_h context)
{
    if (context->mc == NULL) {
        return UCG_MC_NONE;
    }
    return context->mc->loopback ? UCG_MC_LOOPBACK : UCG_MC_NET;
}

ucs_status_t ucg_mc_counters(ucg_context_h context,
                             uct_mc_udp_counters_t *counters)
{
    if (context->mc == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return uct_mc_udp_iface_counters(context->mc->iface, counters);
}


/* ------------------------------------------------------------------------ */
/* Groups                                                                   */
/* ------------------------------------------------------------------------ */

int ucg_mc_group_usable(ucg_group_h group, const uint8_t *kind,
                        size_t stride)
{
    ucs_ternary_auto_value_t mode = group->context->config->mc;
    int mine = (kind[group->rank * stride] != UCG_MC_NONE);
    int real_hosts = 0, loopback = 0;
    unsigned i;
    uint8_t k;

    if ((mode == UCS_NO) || (group->topo.num_hosts < 2)) {
        return 0;
    }

    if (group->size > UCG_MC_MAX_RANKS) {
        if (mine) {
            ucs_diag("UCG group rank %u: %u members, mc_udp phases take at "
                     "most %u", group->rank, group->size, UCG_MC_MAX_RANKS);
        }
        return 0;
    }

    for (i = 0; i < group->size; ++i) {
        k = kind[i * stride];
        if ((k != UCG_MC_NET) && (k != UCG_MC_LOOPBACK)) {
            if (mine) {
                ucs_diag("UCG group rank %u: rank %u has no mc_udp, neither "
                         "does the group", group->rank, i);
            }
            return 0;
        }
        loopback   |= (k == UCG_MC_LOOPBACK);
        real_hosts |= (group->members[i].real_host !=
                       group->members[0].real_host);
    }

    if (real_hosts && loopback) {
        if (mine) {
            ucs_diag("UCG group rank %u: the group spans hosts and a member's "
                     "mc_udp is on loopback: not using it (MC_DEVICE)",
                     group->rank);
        }
        return 0;
    }

    /* Between virtual hosts of one real host only when forced: sm and
     * UCP's shared memory are the better way there */
    return real_hosts || (mode == UCS_YES);
}

