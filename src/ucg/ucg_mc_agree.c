/**
 * UCG broadcasts between hosts over multicast: the group endpoints of the
 * sets of MC_BCAST phases, on the group's multicast transport (mc_mlx5,
 * mc_verbs or mc_udp: the first that every member has, ucg_mc.c); the
 * phase itself is phase/ucg_mc_bcast.c.
 *
 * A context opens the interfaces of its multicast transports (MC=try|yes,
 * MC_TL, UCX_TLS), each on its own UCT worker (ucg_mc.c).  The planner
 * turns a point-to-point bcast phase whose set spans hosts into MC_BCAST
 * (ucg_plan.c); the set root then sends the phase's data once, by
 * multicast, and the engine of mc/rel/ makes it reliable.  Messages are
 * fragments of at most the agreed fragment size, each behind a
 * ucg_sm_hdr_t (group id, sequence, phase, epoch, fragment), so a message
 * that arrives before its collective reaches the phase is kept like an
 * early sm message and taken when the phase starts.
 *
 * All or none
 * -----------
 * Any leader may fail to create its group endpoint (no interface, a socket
 * or IP_ADD_MEMBERSHIP error, a failed RDMA-CM join), and a root would
 * wait forever for a member that never joins.  So the members of a set
 * agree, over UCP, before anything is multicast, once per group and set
 * (the outcome is cached):
 *   step 0: the root creates its endpoint and sends every member an offer
 *           (its status, its largest fragment, its interface's
 *           addresses: mc_udp's members send to them);
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

#include "ucg_mc_int.h"
#include "ucg_coll.h"
#include "o2m_mix.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/time/time.h>

#include <string.h>


#define UCG_MC_TAG_PHASE     0xfull   /* no plan has 16 phases */
#define UCG_MC_TAG_STEP      0xf0u    /* + 0 offer, 1 answer, 2 decision */

/* A wait at group destroy for members on other hosts when PEER_TIMEOUT is
 * inf (their liveness is the engine's) */
#define UCG_MC_MAX_WAIT_SEC  (24.0 * 3600.0)

/* Setup message (every step), little-endian hosts only like the rest */
typedef struct ucg_mc_setup_msg {
    int32_t  status;
    uint32_t frag;           /* largest payload per message */
    uint16_t iface_addr_len; /* offer: the root's interface addresses */
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
        ucs_debug("UCG: leaving a multicast setup with requests to UCP");
    }
    mc_ep->setup = NULL;
}

static void ucg_mc_ep_destroy(ucg_context_h context, ucg_mc_ep_t *mc_ep)
{
    ucg_mc_iface_t *mci = ucg_mc_iface(context->mc, mc_ep->tl);

    if ((mc_ep->ep != NULL) && (mci != NULL)) {
        /* What it did stays counted */
        ucg_mc_ep_counters_add(mci, mc_ep->ep, &mci->gone);
        uct_ep_destroy(mc_ep->ep);
        mc_ep->ep = NULL;
        --mci->num_eps;
        --context->mc->num_eps;
    }
}

void ucg_mc_ep_free(ucg_context_h context, ucg_mc_ep_t *mc_ep)
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
            ucs_diag("UCG group %u rank %u: flush of the %s endpoint did "
                     "not complete in PEER_TIMEOUT", group->id, group->rank,
                     ucg_mc_tl_name(mc_ep->tl));
            return;
        }
        ucg_mc_progress(context);
        ucp_worker_progress(context->ucp_worker);
    }

    if (status != UCS_OK) {
        ucs_debug("UCG group %u rank %u: flush of the %s endpoint: %s",
                  group->id, group->rank, ucg_mc_tl_name(mc_ep->tl),
                  ucs_status_string(status));
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
        ucs_error("UCG group %u: %s setup %s rank %u failed: %s",
                  group->id, ucg_mc_tl_name(mc_ep->tl),
                  is_send ? "send to" : "receive from", peer,
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
            ucs_error("UCG group %u: multicast setup message of %zu bytes, "
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

/* The same on every member of the set; unique among the live groups of a
 * network with high probability (the uid is rank 0's pid and count, the
 * host its real host) */
static uint64_t ucg_mc_group_id(const ucg_group_t *group,
                                const ucg_mc_ep_t *mc_ep)
{
    uint64_t h = uct_o2m_mix64(group->uid ^ group->members[0].real_host);
    unsigned i;

    h = uct_o2m_mix64(h ^ (((uint64_t)group->epoch << 16) | group->id));
    for (i = 0; i < mc_ep->count; ++i) {
        h = uct_o2m_mix64(h ^ mc_ep->ranks[i] ^
                         ((uint64_t)(i == mc_ep->root_idx) << 40));
    }
    return h;
}

static ucs_status_t ucg_mc_create_ep(ucg_group_h group, ucg_mc_ep_t *mc_ep,
                                     const ucg_mc_setup_msg_t *offer)
{
    ucg_mc_iface_t *mci = ucg_mc_iface(group->context->mc, mc_ep->tl);
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

    status = uct_o2m_ep_create(mci->iface, &params, &mc_ep->ep);
    if (status != UCS_OK) {
        mc_ep->ep = NULL;
        return status;
    }
    ++mci->num_eps;
    ++group->context->mc->num_eps;
    return UCS_OK;
}

static void ucg_mc_decided(ucg_group_h group, ucg_mc_ep_t *mc_ep, int ready,
                           size_t frag)
{
    if (ready) {
        mc_ep->state = UCG_MC_EP_READY;
        mc_ep->frag  = frag;
        ucs_debug("UCG group %u rank %u: %s group of %u rooted at rank %u, "
                  "fragments of %zu", group->id, group->rank,
                  ucg_mc_tl_name(mc_ep->tl), mc_ep->count,
                  mc_ep->ranks[mc_ep->root_idx], frag);
        return;
    }

    mc_ep->state = UCG_MC_EP_REFUSED;
    ucg_mc_ep_destroy(group->context, mc_ep); /* nothing was sent on it */
    ucs_diag("UCG group %u rank %u: a leader could not join the %s group "
             "of rank %u: point-to-point instead", group->id, group->rank,
             ucg_mc_tl_name(mc_ep->tl), mc_ep->ranks[mc_ep->root_idx]);
}

static ucs_status_t ucg_mc_root_setup(ucg_group_h group, ucg_mc_ep_t *mc_ep)
{
    ucg_mc_iface_t *mc      = ucg_mc_iface(group->context->mc, mc_ep->tl);
    ucg_mc_setup_t *setup   = mc_ep->setup;
    ucg_mc_setup_msg_t *msg = setup->msgs;
    size_t frag             = mc->max_frag;
    ucs_status_t status;
    unsigned i;
    int ready;

    if (mc_ep->step == 0) {
        mc_ep->local = ucg_mc_create_ep(group, mc_ep, NULL);
        if (mc_ep->local != UCS_OK) {
            ucs_diag("UCG group %u rank %u: creating a %s group endpoint "
                     "failed: %s", group->id, group->rank,
                     ucg_mc_tl_name(mc_ep->tl),
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
                ucs_error("UCG group %u: rank %u answered the %s setup "
                          "with fragments of 0 bytes", group->id,
                          mc_ep->ranks[i], ucg_mc_tl_name(mc_ep->tl));
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
    ucg_mc_iface_t *mc      = ucg_mc_iface(group->context->mc, mc_ep->tl);
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
            ucs_error("UCG group %u: rank %u offered a %s group with "
                      "addresses of %u + %u bytes (ours: %zu + %zu) and "
                      "fragments of %u", group->id, root,
                      ucg_mc_tl_name(mc_ep->tl),
                      msg[0].iface_addr_len, msg[0].dev_addr_len,
                      mc->iface_addr_len, mc->dev_addr_len, msg[0].frag);
            return UCS_ERR_IO_ERROR;
        } else {
            mc_ep->local = ucg_mc_create_ep(group, mc_ep, &msg[0]);
            if (mc_ep->local != UCS_OK) {
                ucs_diag("UCG group %u rank %u: joining the %s group of "
                         "rank %u failed: %s", group->id, group->rank,
                         ucg_mc_tl_name(mc_ep->tl), root,
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
        ucs_error("UCG group %u: rank %u decided a %s group this member "
                  "could not join, or fragments of %u bytes (at most %zu)",
                  group->id, root, ucg_mc_tl_name(mc_ep->tl), msg[2].frag,
                  mc->max_frag);
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
        ucs_error("UCG group %u rank %u: agreeing on the %s group of rank "
                  "%u failed: %s", group->id, group->rank,
                  ucg_mc_tl_name(mc_ep->tl), mc_ep->ranks[mc_ep->root_idx],
                  ucs_status_string(status));
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

    if (ucg_mc_iface(group->context->mc, group->topo.mc_tl) == NULL) {
        /* Planned with it (every member said it had it): cannot be */
        ucs_error("UCG group %u: a %s phase without an interface",
                  group->id, ucg_mc_tl_name(group->topo.mc_tl));
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
    mc_ep->tl      = group->topo.mc_tl;
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
    ucs_error("UCG group %u: out of memory for a multicast endpoint",
              group->id);
    return UCS_ERR_NO_MEMORY;
}
