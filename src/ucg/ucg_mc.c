/**
 * UCG broadcasts between hosts over IP multicast (mc_udp): the context's
 * interface and the group endpoints of the sets of MC_BCAST phases; the
 * phase itself is phase/ucg_mc_bcast.c.
 *
 * A context opens one mc_udp interface (MC=try|yes, UCX_TLS allows it) on
 * its own UCT worker.  The planner turns a point-to-point bcast phase whose
 * set spans hosts into MC_BCAST (ucg_plan.c); the set root then sends the
 * phase's data once, by multicast, and the engine of mc/rel/ makes it
 * reliable.  Messages are fragments of at most the agreed fragment size,
 * each behind a ucg_sm_hdr_t (group id, sequence, phase, epoch, fragment),
 * so a message that arrives before its collective reaches the phase is kept
 * like an early sm message and taken when the phase starts.
 *
 * All or none
 * -----------
 * Any leader may fail to create its group endpoint (no interface, a socket
 * or IP_ADD_MEMBERSHIP error), and a root would wait forever for a member
 * that never joins.  So the members of a set agree, over UCP, before
 * anything is multicast, once per group and set (the outcome is cached):
 *   step 0: the root creates its endpoint and sends every member an offer
 *           (its status, its largest fragment, its mc_udp addresses);
 *   step 1: a member that got a good offer creates its endpoint and
 *           answers with its status and largest fragment;
 *   step 2: the root sends the decision: READY with the smallest fragment
 *           when every endpoint was created, else REFUSED.
 * Every member of the set then either multicasts or runs, in the same
 * collective, the point-to-point bcast the planner would have used
 * (P2P_BCAST with the phase's radix and fragment size): the result is the
 * same and nothing was multicast on a refused set.  The agreement uses
 * tags of its own (phase 15, steps 0xf0-0xf2, the root's rank in the
 * sequence field: groups of at most 2^16 members), not the collective's,
 * because two outstanding collectives may reach the phase in a different
 * order on different members.
 *
 * Failures: a member that waits for data says so to the transport
 * (uct_o2m_ep_expect), which then fails the endpoint when the root or the
 * member's parent in the ACK tree is gone; a leader that died also fails
 * UCP's endpoints to it (PEER error handling: ucg_group_p2p_watch), and
 * the group with them.
 *
 * Teardown: a root flushes its endpoints when its group is destroyed
 * (every member acknowledged everything; ends early when a member is gone
 * or at PEER_TIMEOUT).  A member's endpoint must keep acknowledging for
 * that flush, possibly after the member destroyed its group: its endpoints
 * go to the context, which destroys them when it is destroyed.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_mc.h"
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


#define UCG_MC_TAG_PHASE     0xfull   /* no plan has 16 phases */
#define UCG_MC_TAG_STEP      0xf0u    /* + 0 offer, 1 answer, 2 decision */
#define UCG_MC_MAX_RANKS     (1u << 16)
#define UCG_MC_ADDR_MAX      48

/* A wait at group destroy for members on other hosts when PEER_TIMEOUT is
 * inf (their liveness is the engine's) */
#define UCG_MC_MAX_WAIT_SEC  (24.0 * 3600.0)

/* Setup message (every step), little-endian hosts only like the rest */
typedef struct ucg_mc_setup_msg {
    int32_t  status;
    uint32_t frag;           /* largest payload per message */
    uint16_t iface_addr_len; /* offer: the root's mc_udp addresses */
    uint16_t dev_addr_len;
    uint32_t reserved;
    uint8_t  addr[UCG_MC_ADDR_MAX];
} ucg_mc_setup_msg_t;

/* UCP requests of a setup, and the messages they use (freed only when
 * UCP is done with them) */
typedef struct ucg_mc_setup {
    unsigned           num_reqs;
    void               **reqs;       /* [3 * count] */
    size_t             *req_len;     /* expected length; SIZE_MAX: send */
    ucg_mc_setup_msg_t *msgs;        /* root: [0] offer, [1] decision,
                                        [2 + i] member i's answer;
                                        member: [0] offer, [1] answer,
                                        [2] decision */
} ucg_mc_setup_t;

struct ucg_mc_group {
    ucs_list_link_t   eps;           /* ucg_mc_ep_t */
};

struct ucg_mc_ctx {
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_md_h            md;
    uct_iface_h         iface;
    int                 loopback;
    size_t              max_frag;    /* largest bcopy minus UCG's header */
    size_t              iface_addr_len;
    size_t              dev_addr_len;
    uint8_t             iface_addr[UCG_MC_ADDR_MAX];
    uint8_t             dev_addr[UCG_MC_ADDR_MAX];
    /* Endpoints of destroyed groups that keep acknowledging */
    ucs_list_link_t     lingering;   /* ucg_mc_ep_t */
    /* Group endpoints that exist: without any, the interface is not
     * progressed (its progress reads sockets: a system call per
     * ucg_progress otherwise) */
    unsigned            num_eps;
};


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
    uct_iface_params_t params;
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

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = UCT_MC_UDP_TL_NAME;
    params.mode.device.dev_name = dev;
    params.err_handler          = ucg_mc_iface_err_cb;
    params.err_handler_arg      = context;
    params.err_handler_flags    = 0;
    status = uct_iface_open(mc->md, mc->worker, &params, iface_config,
                            &mc->iface);
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

static uct_component_h ucg_mc_find_component(void)
{
    uct_component_h *components, found = NULL;
    uct_component_attr_t attr;
    unsigned i, num;

    if (uct_query_components(&components, &num) != UCS_OK) {
        return NULL;
    }
    for (i = 0; (i < num) && (found == NULL); ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, UCT_MC_UDP_TL_NAME)) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    return found;
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

    component = ucg_mc_find_component();
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

static void ucg_mc_ep_free(ucg_context_h context, ucg_mc_ep_t *mc_ep);

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

static int ucg_mc_reqs_done(ucg_mc_setup_t *setup)
{
    unsigned i;

    for (i = 0; i < setup->num_reqs; ++i) {
        if ((setup->reqs[i] != NULL) &&
            (ucp_request_check_status(setup->reqs[i]) == UCS_INPROGRESS)) {
            return 0;
        }
    }
    return 1;
}

/* Release what UCP is done with; 1 when nothing of @a setup is left to
 * UCP (it may be freed) */
static int ucg_mc_setup_release(ucg_context_h context, ucg_mc_setup_t *setup,
                                int cancel)
{
    unsigned i, left = 0;

    for (i = 0; i < setup->num_reqs; ++i) {
        if (setup->reqs[i] == NULL) {
            continue;
        }
        if (cancel && (setup->req_len[i] != SIZE_MAX)) {
            ucp_request_cancel(context->ucp_worker, setup->reqs[i]);
        }
        if (ucp_request_check_status(setup->reqs[i]) == UCS_INPROGRESS) {
            ++left;
            continue;
        }
        ucp_request_free(setup->reqs[i]);
        setup->reqs[i] = NULL;
    }
    return left == 0;
}

static void ucg_mc_setup_free(ucg_context_h context, ucg_mc_ep_t *mc_ep)
{
    ucg_mc_setup_t *setup = mc_ep->setup;
    ucs_time_t deadline;

    if (setup == NULL) {
        return;
    }

    /* A cancelled receive completes at once; a send of a few bytes when
     * its peer progresses.  Whatever UCP still has keeps its buffers. */
    deadline = ucs_get_time() + ucs_time_from_sec(1.0);
    while (!ucg_mc_setup_release(context, setup, 1) &&
           (ucs_get_time() < deadline)) {
        ucp_worker_progress(context->ucp_worker);
    }
    if (ucg_mc_setup_release(context, setup, 1)) {
        ucs_free(setup->msgs);
        ucs_free(setup->reqs);
        ucs_free(setup);
    } else {
        ucs_debug("UCG: leaving an mc_udp setup with requests to UCP");
    }
    mc_ep->setup = NULL;
}

static void ucg_mc_ep_destroy(ucg_context_h context, ucg_mc_ep_t *mc_ep)
{
    if (mc_ep->ep != NULL) {
        uct_ep_destroy(mc_ep->ep);
        mc_ep->ep = NULL;
        --context->mc->num_eps;
    }
}

static void ucg_mc_ep_free(ucg_context_h context, ucg_mc_ep_t *mc_ep)
{
    ucg_mc_setup_free(context, mc_ep);
    ucg_mc_ep_destroy(context, mc_ep);
    ucs_free(mc_ep->ranks);
    ucs_free(mc_ep);
}

/* Root: wait until every member acknowledged everything (members keep
 * progressing: in their collectives, their own teardown, or as lingering
 * endpoints of their context), a member is gone, or PEER_TIMEOUT */
static void ucg_mc_root_flush(ucg_group_h group, ucg_mc_ep_t *mc_ep)
{
    ucg_context_h context = group->context;
    double timeout        = ucs_min(context->config->peer_timeout,
                                    UCG_MC_MAX_WAIT_SEC);
    ucs_time_t deadline   = ucs_get_time() + ucs_time_from_sec(timeout);
    ucs_status_t status;

    for (;;) {
        status = uct_ep_flush(mc_ep->ep, 0, NULL);
        if ((status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE)) {
            break;
        }
        if (ucs_get_time() > deadline) {
            ucs_diag("UCG group %u rank %u: flush of the mc_udp endpoint "
                     "did not complete in PEER_TIMEOUT", group->id,
                     group->rank);
            return;
        }
        ucg_mc_progress(context);
        ucp_worker_progress(context->ucp_worker);
    }

    if (status != UCS_OK) {
        ucs_debug("UCG group %u rank %u: flush of the mc_udp endpoint: %s",
                  group->id, group->rank, ucs_status_string(status));
    }
}

void ucg_mc_group_cleanup(ucg_group_h group)
{
    ucg_context_h context = group->context;
    ucg_mc_ep_t *mc_ep, *tmp;

    if (group->mc == NULL) {
        return;
    }

    ucs_list_for_each_safe(mc_ep, tmp, &group->mc->eps, list) {
        ucs_list_del(&mc_ep->list);
        if ((mc_ep->ep != NULL) && (mc_ep->state == UCG_MC_EP_READY)) {
            if (mc_ep->my_idx == mc_ep->root_idx) {
                ucg_mc_root_flush(group, mc_ep);
            } else {
                /* Its root may still flush: it keeps acknowledging */
                ucg_mc_setup_free(context, mc_ep);
                ucs_list_add_tail(&context->mc->lingering, &mc_ep->list);
                continue;
            }
        }
        ucg_mc_ep_free(context, mc_ep);
    }

    ucs_free(group->mc);
    group->mc = NULL;
}


/* ------------------------------------------------------------------------ */
/* All or none: the set agrees on its group endpoint                       */
/* ------------------------------------------------------------------------ */

static ucp_tag_t ucg_mc_tag(const ucg_group_t *group, const ucg_mc_ep_t *mc_ep,
                            unsigned step, unsigned src)
{
    uint64_t phase_step = (UCG_MC_TAG_PHASE << UCG_TAG_STEP_BITS) |
                          (UCG_MC_TAG_STEP + step);

    return ((uint64_t)group->id << 48) |
           ((uint64_t)(mc_ep->ranks[mc_ep->root_idx] & 0xffff) << 32) |
           (phase_step << UCG_TAG_SRC_BITS) | src;
}

static ucs_status_t ucg_mc_post(ucg_group_h group, ucg_mc_ep_t *mc_ep,
                                int is_send, unsigned peer_idx,
                                unsigned step, ucg_mc_setup_msg_t *msg)
{
    ucg_mc_setup_t *setup     = mc_ep->setup;
    unsigned peer             = mc_ep->ranks[peer_idx];
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;
    ucs_status_t status;
    ucp_ep_h ep;

    if (is_send) {
        status = ucg_group_p2p_ep(group, peer, &ep);
        if (status != UCS_OK) {
            return status;
        }
        req = ucp_tag_send_nbx(ep, msg, sizeof(*msg),
                               ucg_mc_tag(group, mc_ep, step, group->rank),
                               &param);
    } else {
        /* A member on another host: UCP reports its death */
        status = ucg_group_p2p_watch(group, peer);
        if (status != UCS_OK) {
            return status;
        }
        /* Always a request: the length is checked */
        param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        req = ucp_tag_recv_nbx(group->context->ucp_worker, msg, sizeof(*msg),
                               ucg_mc_tag(group, mc_ep, step, peer),
                               (ucp_tag_t)-1, &param);
    }

    if (UCS_PTR_IS_ERR(req)) {
        ucs_error("UCG group %u: mc_udp setup %s rank %u failed: %s",
                  group->id, is_send ? "send to" : "receive from", peer,
                  ucs_status_string(UCS_PTR_STATUS(req)));
        return UCS_PTR_STATUS(req);
    }

    setup->req_len[setup->num_reqs] = is_send ? SIZE_MAX : sizeof(*msg);
    setup->reqs[setup->num_reqs++]  = req;
    return UCS_OK;
}

/* The error of a completed request, or of a receive of the wrong length */
static ucs_status_t ucg_mc_req_status(ucg_group_h group, ucg_mc_setup_t *setup,
                                      unsigned i)
{
    ucp_tag_recv_info_t info;
    ucs_status_t status;

    if (setup->reqs[i] == NULL) {
        return UCS_OK; /* a send that completed at once */
    }

    if (setup->req_len[i] == SIZE_MAX) {
        status = ucp_request_check_status(setup->reqs[i]);
    } else {
        status = ucp_tag_recv_request_test(setup->reqs[i], &info);
        if ((status == UCS_OK) && (info.length != setup->req_len[i])) {
            ucs_error("UCG group %u: mc_udp setup message of %zu bytes, "
                      "expected %zu", group->id, info.length,
                      setup->req_len[i]);
            status = UCS_ERR_MESSAGE_TRUNCATED;
        }
    }
    return status;
}

/* A status a peer wrote: UCS_OK or an error code, else IO_ERROR */
static ucs_status_t ucg_mc_peer_status(int32_t value)
{
    return ((value <= 0) && (value > UCS_ERR_LAST)) ? (ucs_status_t)value :
           UCS_ERR_IO_ERROR;
}

static uint64_t ucg_mc_mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    return x;
}

/* The same on every member of the set; unique among the live groups of a
 * network with high probability (the uid is rank 0's pid and count, the
 * host its real host) */
static uint64_t ucg_mc_group_id(const ucg_group_t *group,
                                const ucg_mc_ep_t *mc_ep)
{
    uint64_t h = ucg_mc_mix64(group->uid ^ group->members[0].real_host);
    unsigned i;

    h = ucg_mc_mix64(h ^ (((uint64_t)group->epoch << 16) | group->id));
    for (i = 0; i < mc_ep->count; ++i) {
        h = ucg_mc_mix64(h ^ mc_ep->ranks[i] ^
                         ((uint64_t)(i == mc_ep->root_idx) << 40));
    }
    return h;
}

static ucs_status_t ucg_mc_create_ep(ucg_group_h group, ucg_mc_ep_t *mc_ep,
                                     const ucg_mc_setup_msg_t *offer)
{
    struct ucg_mc_ctx *mc = group->context->mc;
    uct_o2m_group_params_t params;
    ucs_status_t status;

    memset(&params, 0, sizeof(params));
    params.group_id   = ucg_mc_group_id(group, mc_ep);
    params.size       = mc_ep->count;
    params.my_index   = mc_ep->my_idx;
    params.root_index = mc_ep->root_idx;
    if (offer != NULL) {
        params.field_mask      = UCT_O2M_GROUP_FIELD_ROOT_ADDR;
        params.root_iface_addr = (const void*)offer->addr;
        params.root_dev_addr   = (const void*)(offer->addr +
                                               offer->iface_addr_len);
    }

    status = uct_o2m_ep_create(mc->iface, &params, &mc_ep->ep);
    if (status != UCS_OK) {
        mc_ep->ep = NULL;
        return status;
    }
    ++mc->num_eps;
    return UCS_OK;
}

static void ucg_mc_decided(ucg_group_h group, ucg_mc_ep_t *mc_ep, int ready,
                           size_t frag)
{
    if (ready) {
        mc_ep->state = UCG_MC_EP_READY;
        mc_ep->frag  = frag;
        ucs_debug("UCG group %u rank %u: mc_udp group of %u rooted at rank "
                  "%u, fragments of %zu", group->id, group->rank,
                  mc_ep->count, mc_ep->ranks[mc_ep->root_idx], frag);
        return;
    }

    mc_ep->state = UCG_MC_EP_REFUSED;
    ucg_mc_ep_destroy(group->context, mc_ep); /* nothing was sent on it */
    ucs_diag("UCG group %u rank %u: a leader could not join the mc_udp group "
             "of rank %u: point-to-point instead", group->id, group->rank,
             mc_ep->ranks[mc_ep->root_idx]);
}

static ucs_status_t ucg_mc_root_setup(ucg_group_h group, ucg_mc_ep_t *mc_ep)
{
    struct ucg_mc_ctx *mc   = group->context->mc;
    ucg_mc_setup_t *setup   = mc_ep->setup;
    ucg_mc_setup_msg_t *msg = setup->msgs;
    size_t frag             = mc->max_frag;
    ucs_status_t status;
    unsigned i;
    int ready;

    if (mc_ep->step == 0) {
        mc_ep->local = ucg_mc_create_ep(group, mc_ep, NULL);
        if (mc_ep->local != UCS_OK) {
            ucs_diag("UCG group %u rank %u: creating an mc_udp group "
                     "endpoint failed: %s", group->id, group->rank,
                     ucs_status_string(mc_ep->local));
        }
        msg[0].status         = mc_ep->local;
        msg[0].frag           = mc->max_frag;
        msg[0].iface_addr_len = mc->iface_addr_len;
        msg[0].dev_addr_len   = mc->dev_addr_len;
        memcpy(msg[0].addr, mc->iface_addr, mc->iface_addr_len);
        memcpy(msg[0].addr + mc->iface_addr_len, mc->dev_addr,
               mc->dev_addr_len);
        for (i = 0; i < mc_ep->count; ++i) {
            if (i == mc_ep->my_idx) {
                continue;
            }
            status = ucg_mc_post(group, mc_ep, 0, i, 1, &msg[2 + i]);
            if (status == UCS_OK) {
                status = ucg_mc_post(group, mc_ep, 1, i, 0, &msg[0]);
            }
            if (status != UCS_OK) {
                return status;
            }
        }
        mc_ep->step = 1;
    }

    if (mc_ep->step == 1) {
        if (!ucg_mc_reqs_done(setup)) {
            return UCS_INPROGRESS;
        }
        for (i = 0; i < setup->num_reqs; ++i) {
            status = ucg_mc_req_status(group, setup, i);
            if (status != UCS_OK) {
                return status;
            }
        }

        ready = (mc_ep->local == UCS_OK);
        for (i = 0; i < mc_ep->count; ++i) {
            if (i == mc_ep->my_idx) {
                continue;
            }
            if (ucg_mc_peer_status(msg[2 + i].status) != UCS_OK) {
                ready = 0;
            } else if (msg[2 + i].frag == 0) {
                ucs_error("UCG group %u: rank %u answered the mc_udp setup "
                          "with fragments of 0 bytes", group->id,
                          mc_ep->ranks[i]);
                return UCS_ERR_IO_ERROR;
            } else {
                frag = ucs_min(frag, msg[2 + i].frag);
            }
        }

        memset(&msg[1], 0, sizeof(msg[1]));
        msg[1].status = ready ? UCS_OK : UCS_ERR_UNREACHABLE;
        msg[1].frag   = frag;
        for (i = 0; i < mc_ep->count; ++i) {
            if (i != mc_ep->my_idx) {
                status = ucg_mc_post(group, mc_ep, 1, i, 2, &msg[1]);
                if (status != UCS_OK) {
                    return status;
                }
            }
        }
        ucg_mc_decided(group, mc_ep, ready, frag);
    }
    return UCS_OK;
}

static ucs_status_t ucg_mc_member_setup(ucg_group_h group, ucg_mc_ep_t *mc_ep)
{
    struct ucg_mc_ctx *mc   = group->context->mc;
    ucg_mc_setup_t *setup   = mc_ep->setup;
    ucg_mc_setup_msg_t *msg = setup->msgs;
    unsigned root           = mc_ep->ranks[mc_ep->root_idx];
    ucs_status_t status;

    if (mc_ep->step == 0) {
        /* [0] the offer, [1] the decision */
        status = ucg_mc_post(group, mc_ep, 0, mc_ep->root_idx, 0, &msg[0]);
        if (status == UCS_OK) {
            status = ucg_mc_post(group, mc_ep, 0, mc_ep->root_idx, 2,
                                 &msg[2]);
        }
        if (status != UCS_OK) {
            return status;
        }
        mc_ep->step = 1;
    }

    if (mc_ep->step == 1) {
        status = ucg_mc_req_status(group, setup, 0);
        if (status == UCS_INPROGRESS) {
            return status;
        } else if (status != UCS_OK) {
            return status;
        }

        mc_ep->local = ucg_mc_peer_status(msg[0].status);
        if (mc_ep->local != UCS_OK) {
            /* The root could not: neither will we */
        } else if ((msg[0].iface_addr_len != mc->iface_addr_len) ||
                   (msg[0].dev_addr_len != mc->dev_addr_len) ||
                   (msg[0].frag == 0)) {
            ucs_error("UCG group %u: rank %u offered an mc_udp group with "
                      "addresses of %u + %u bytes (ours: %zu + %zu) and "
                      "fragments of %u", group->id, root,
                      msg[0].iface_addr_len, msg[0].dev_addr_len,
                      mc->iface_addr_len, mc->dev_addr_len, msg[0].frag);
            return UCS_ERR_IO_ERROR;
        } else {
            mc_ep->local = ucg_mc_create_ep(group, mc_ep, &msg[0]);
            if (mc_ep->local != UCS_OK) {
                ucs_diag("UCG group %u rank %u: joining the mc_udp group of "
                         "rank %u failed: %s", group->id, group->rank, root,
                         ucs_status_string(mc_ep->local));
            }
        }

        memset(&msg[1], 0, sizeof(msg[1]));
        msg[1].status = mc_ep->local;
        msg[1].frag   = mc->max_frag;
        status = ucg_mc_post(group, mc_ep, 1, mc_ep->root_idx, 1, &msg[1]);
        if (status != UCS_OK) {
            return status;
        }
        mc_ep->step = 2;
    }

    /* [2] our answer: the root decided once it had it */
    status = ucg_mc_req_status(group, setup, 2);
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        return status;
    }
    status = ucg_mc_req_status(group, setup, 1);
    if (status != UCS_OK) {
        return status; /* in progress or failed */
    }

    status = ucg_mc_peer_status(msg[2].status);
    if ((status == UCS_OK) &&
        ((mc_ep->local != UCS_OK) || (msg[2].frag == 0) ||
         (msg[2].frag > mc->max_frag))) {
        ucs_error("UCG group %u: rank %u decided an mc_udp group this member "
                  "could not join, or fragments of %u bytes (at most %zu)",
                  group->id, root, msg[2].frag, mc->max_frag);
        return UCS_ERR_IO_ERROR;
    }
    ucg_mc_decided(group, mc_ep, status == UCS_OK, msg[2].frag);
    return UCS_OK;
}

ucs_status_t ucg_mc_ep_agree(ucg_group_h group, ucg_mc_ep_t *mc_ep)
{
    ucs_status_t status;

    if (mc_ep->state == UCG_MC_EP_FAILED) {
        return mc_ep->status;
    } else if (mc_ep->state != UCG_MC_EP_SETUP) {
        /* Release the decision's sends once UCP is done with them */
        if ((mc_ep->setup != NULL) &&
            ucg_mc_setup_release(group->context, mc_ep->setup, 0)) {
            ucg_mc_setup_free(group->context, mc_ep);
        }
        return UCS_OK;
    }

    status = (mc_ep->my_idx == mc_ep->root_idx) ?
             ucg_mc_root_setup(group, mc_ep) :
             ucg_mc_member_setup(group, mc_ep);
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        ucs_error("UCG group %u rank %u: agreeing on the mc_udp group of rank "
                  "%u failed: %s", group->id, group->rank,
                  mc_ep->ranks[mc_ep->root_idx], ucs_status_string(status));
        mc_ep->state  = UCG_MC_EP_FAILED;
        mc_ep->status = status;
    }
    return status;
}

ucs_status_t ucg_mc_ep_get(ucg_group_h group,
                                  const ucg_phase_set_t *set, unsigned my_idx,
                                  ucg_mc_ep_t **mc_ep_p)
{
    ucg_mc_setup_t *setup;
    ucg_mc_ep_t *mc_ep;

    if (group->context->mc == NULL) {
        /* Planned with mc (every member said it had it): cannot be */
        ucs_error("UCG group %u: an mc_udp phase without an interface",
                  group->id);
        return UCS_ERR_NO_DEVICE;
    }

    if (group->mc == NULL) {
        group->mc = ucs_calloc(1, sizeof(*group->mc), "ucg mc group");
        if (group->mc == NULL) {
            goto err_no_memory;
        }
        ucs_list_head_init(&group->mc->eps);
    }

    ucs_list_for_each(mc_ep, &group->mc->eps, list) {
        if ((mc_ep->count == set->count) && (mc_ep->root_idx == set->root) &&
            !memcmp(mc_ep->ranks, set->ranks,
                    set->count * sizeof(*set->ranks))) {
            *mc_ep_p = mc_ep;
            return UCS_OK;
        }
    }

    mc_ep = ucs_calloc(1, sizeof(*mc_ep), "ucg mc ep");
    setup = ucs_calloc(1, sizeof(*setup), "ucg mc setup");
    if ((mc_ep == NULL) || (setup == NULL)) {
        goto err_free;
    }
    mc_ep->setup   = setup;
    mc_ep->ranks   = ucs_malloc(set->count * sizeof(*mc_ep->ranks),
                                "ucg mc ranks");
    /* root: an offer, an answer and a decision per member */
    setup->reqs    = ucs_calloc(3 * set->count, sizeof(void*) +
                                sizeof(size_t), "ucg mc reqs");
    setup->msgs    = ucs_calloc(set->count + 2, sizeof(*setup->msgs),
                                "ucg mc msgs");
    if ((mc_ep->ranks == NULL) || (setup->reqs == NULL) ||
        (setup->msgs == NULL)) {
        goto err_free;
    }
    setup->req_len  = (size_t*)(setup->reqs + 3 * set->count);
    memcpy(mc_ep->ranks, set->ranks, set->count * sizeof(*set->ranks));
    mc_ep->count    = set->count;
    mc_ep->root_idx = set->root;
    mc_ep->my_idx   = my_idx;
    mc_ep->state    = UCG_MC_EP_SETUP;
    ucs_list_add_tail(&group->mc->eps, &mc_ep->list);
    *mc_ep_p = mc_ep;
    return UCS_OK;

err_free:
    if (setup != NULL) {
        ucs_free(setup->reqs);
        ucs_free(setup->msgs);
    }
    ucs_free(setup);
    if (mc_ep != NULL) {
        ucs_free(mc_ep->ranks);
    }
    ucs_free(mc_ep);
err_no_memory:
    ucs_error("UCG group %u: out of memory for an mc_udp endpoint",
              group->id);
    return UCS_ERR_NO_MEMORY;
}
