/**
 * ucx-o2m: UCG context: the UCP connections the groups share, found again
 * by the peer's worker address, closed with the context (ucg_context.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_context.h"
#include "ucg_group.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <string.h>


/* A wait for members on other hosts, whose liveness UCG cannot see, lasts
 * no longer than this when PEER_TIMEOUT is inf */
#define UCG_CONTEXT_MAX_WAIT_SEC (24.0 * 3600.0)

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
    int found              = 0;
    ucg_group_t *group;
    unsigned i;

    conn->status = status;
    ucs_list_for_each(group, &context->groups, list) {
        for (i = 0; i < group->size; ++i) {
            if (group->members[i].ep != ep) {
                continue;
            }

            ucg_group_member_failed(group, i, 1, status);
            group->members[i].ep_failed = 1;
            found                       = 1;
        }
    }

    if (!found) {
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
