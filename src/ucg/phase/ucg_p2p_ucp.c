/**
 * UCG point-to-point primitives over UCP tag matching: the P2P_* phases
 * (ucg_p2p_*.c) and the point-to-point stand-ins of refused SM phases post
 * sends and receives here and test them together.  Tags follow the layout
 * of ucg_def.h.  After an error, what is outstanding is cancelled, force-
 * closed or parked with its buffers until UCP completes it.
 */
#include "ucg_p2p.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <math.h>
#include <string.h>

/* No wait for sends after an error lasts longer, whatever PEER_TIMEOUT */
#define UCG_P2P_MAX_WAIT_SEC (24.0 * 3600.0)

/* The sends of a failed collective are waited for this long when
 * PEER_TIMEOUT is inf (the wait only decides when they are parked) */
#define UCG_P2P_CANCEL_SEND_SEC 10.0

/* Bound of the wait for UCP to complete the sends of force-closed
 * endpoints (it needs no peer for it: against a UCP that never does) */
#define UCG_P2P_FORCE_CLOSE_SEC 30.0


static ucp_tag_t ucg_p2p_tag(const ucg_coll_t *coll, unsigned step,
                             unsigned src)
{
    uint64_t phase_step = ((uint64_t)(coll->phase_idx & 0xf) <<
                           UCG_TAG_STEP_BITS) | (step & 0xff);

    return ((uint64_t)coll->group->id << 48) | ((uint64_t)coll->seq << 32) |
           (phase_step << UCG_TAG_SRC_BITS) | src;
}

/* Expected length of each outstanding request: SIZE_MAX for sends */
static size_t *ucg_p2p_req_lengths(ucg_coll_t *coll)
{
    return (size_t*)(coll->reqs + coll->max_reqs);
}

/* Peer rank of each outstanding request */
static unsigned *ucg_p2p_req_peers(ucg_coll_t *coll)
{
    return (unsigned*)(ucg_p2p_req_lengths(coll) + coll->max_reqs);
}

static ucs_status_t ucg_p2p_track(ucg_coll_t *coll, void *req, size_t length,
                                  unsigned peer)
{
    const size_t entry = sizeof(void*) + sizeof(size_t) + sizeof(unsigned);
    unsigned new_max;
    void **reqs;

    if (coll->num_reqs == coll->max_reqs) {
        new_max = ucs_max(16, coll->max_reqs * 2);
        /* one allocation: the request pointers, their lengths, peers */
        reqs    = ucs_malloc(new_max * entry, "ucg reqs");
        if (reqs == NULL) {
            ucs_error("ucg: out of memory for %u requests", new_max);
            ucp_request_cancel(coll->group->context->ucp_worker, req);
            ucp_request_free(req);
            return UCS_ERR_NO_MEMORY;
        }
        if (coll->max_reqs > 0) {
            memcpy(reqs, coll->reqs, coll->num_reqs * sizeof(void*));
            memcpy(reqs + new_max, ucg_p2p_req_lengths(coll),
                   coll->num_reqs * sizeof(size_t));
            memcpy((size_t*)(reqs + new_max) + new_max,
                   ucg_p2p_req_peers(coll), coll->num_reqs * sizeof(unsigned));
        }
        ucs_free(coll->reqs);
        coll->reqs     = reqs;
        coll->max_reqs = new_max;
    }

    ucg_p2p_req_lengths(coll)[coll->num_reqs] = length;
    ucg_p2p_req_peers(coll)[coll->num_reqs]   = peer;
    coll->reqs[coll->num_reqs++]              = req;
    return UCS_OK;
}

ucs_status_t ucg_p2p_send(ucg_coll_t *coll, unsigned peer, unsigned step,
                          const void *buf, size_t len)
{
    ucg_group_h group           = coll->group;
    ucp_request_param_t param   = {0};
    ucs_status_ptr_t req;
    ucs_status_t status;
    ucp_ep_h ep;

    status = ucg_group_p2p_ep(group, peer, &ep);
    if (status != UCS_OK) {
        return status;
    }

    req = ucp_tag_send_nbx(ep, buf, len, ucg_p2p_tag(coll, step, group->rank),
                           &param);
    if (UCS_PTR_IS_ERR(req)) {
        ucs_error("ucg group %u: send of %zu bytes to rank %u failed: %s",
                  group->id, len, peer,
                  ucs_status_string(UCS_PTR_STATUS(req)));
        return UCS_PTR_STATUS(req);
    }

    return (req == NULL) ? UCS_OK : ucg_p2p_track(coll, req, SIZE_MAX, peer);
}

static ucs_status_t ucg_p2p_check_length(ucg_coll_t *coll, size_t expected,
                                         size_t length)
{
    if (length == expected) {
        return UCS_OK;
    }

    ucs_error("ucg group %u %s seq %u phase %u: received %zu bytes, "
              "expected %zu", coll->group->id,
              ucg_coll_name(coll->params.type), coll->seq, coll->phase_idx,
              length, expected);
    return UCS_ERR_MESSAGE_TRUNCATED;
}

ucs_status_t ucg_p2p_recv(ucg_coll_t *coll, unsigned peer, unsigned step,
                          void *buf, size_t len)
{
    ucg_group_h group         = coll->group;
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;
    ucs_status_t status;

    status = ucg_group_p2p_watch(group, peer);
    if (status != UCS_OK) {
        return status;
    }

    /* Always a request: UCX 1.13 does not fill recv_info on immediate
     * completion, and the length must be checked */
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;

    req = ucp_tag_recv_nbx(group->context->ucp_worker, buf, len,
                           ucg_p2p_tag(coll, step, peer), (ucp_tag_t)-1,
                           &param);
    if (UCS_PTR_IS_ERR(req)) {
        ucs_error("ucg group %u: receive of %zu bytes from rank %u failed: "
                  "%s", group->id, len, peer,
                  ucs_status_string(UCS_PTR_STATUS(req)));
        return UCS_PTR_STATUS(req);
    }

    ucs_assert(req != NULL);
    return ucg_p2p_track(coll, req, len, peer);
}

ucs_status_t ucg_p2p_test(ucg_coll_t *coll)
{
    ucs_status_t result = UCS_OK;
    size_t *lengths     = ucg_p2p_req_lengths(coll);
    unsigned *peers     = ucg_p2p_req_peers(coll);
    unsigned i, kept    = 0;
    ucp_tag_recv_info_t info;
    ucs_status_t status;

    for (i = 0; i < coll->num_reqs; ++i) {
        if (lengths[i] == SIZE_MAX) {
            status = ucp_request_check_status(coll->reqs[i]);
        } else {
            status = ucp_tag_recv_request_test(coll->reqs[i], &info);
            if (status == UCS_OK) {
                status = ucg_p2p_check_length(coll, lengths[i], info.length);
            } else if (status == UCS_ERR_MESSAGE_TRUNCATED) {
                /* UCP found the message longer than the buffer */
                ucs_error("ucg group %u %s seq %u phase %u: received more "
                          "than the expected %zu bytes from rank %u",
                          coll->group->id, ucg_coll_name(coll->params.type),
                          coll->seq, coll->phase_idx, lengths[i], peers[i]);
            }
        }

        if (status == UCS_INPROGRESS) {
            coll->reqs[kept] = coll->reqs[i];
            peers[kept]      = peers[i];
            lengths[kept++]  = lengths[i];
            continue;
        }

        ucp_request_free(coll->reqs[i]);
        if (status != UCS_OK) {
            if (status != UCS_ERR_MESSAGE_TRUNCATED) {
                ucs_error("ucg group %u %s seq %u phase %u: %s",
                          coll->group->id, ucg_coll_name(coll->params.type),
                          coll->seq, coll->phase_idx,
                          ucs_status_string(status));
            }
            if (result == UCS_OK || result == UCS_INPROGRESS) {
                result = status;
            }
        }
    }

    coll->num_reqs = kept;
    if ((kept > 0) && (result == UCS_OK)) {
        return UCS_INPROGRESS;
    }
    return result;
}

/* Release the completed requests of @a coll (after an error: their status
 * does not matter any more); *recvs_p and *sends_p get the receives and
 * sends still outstanding with members not known to have exited */
static void ucg_p2p_reap(ucg_coll_t *coll, unsigned *recvs_p,
                         unsigned *sends_p)
{
    size_t *lengths  = ucg_p2p_req_lengths(coll);
    unsigned *peers  = ucg_p2p_req_peers(coll);
    unsigned i, kept = 0;

    *recvs_p = 0;
    *sends_p = 0;
    for (i = 0; i < coll->num_reqs; ++i) {
        if (ucp_request_check_status(coll->reqs[i]) != UCS_INPROGRESS) {
            ucp_request_free(coll->reqs[i]);
            continue;
        }

        if (!ucg_group_member_exited(coll->group, peers[i])) {
            ++*((lengths[i] != SIZE_MAX) ? recvs_p : sends_p);
        }
        coll->reqs[kept] = coll->reqs[i];
        peers[kept]      = peers[i];
        lengths[kept++]  = lengths[i];
    }

    coll->num_reqs = kept;
}

/* A parked record whose requests UCP is done with, and its buffers */
static void ucg_coll_parked_release(ucg_parked_t *parked)
{
    unsigned i;

    for (i = 0; i < UCG_COLL_MAX_SCRATCH; ++i) {
        ucs_free(parked->scratch[i]);
    }
    ucg_context_closer_remove(&parked->closer);
    ucg_progress_dequeue(&parked->progress);
    ucs_free(parked);
}

/* Free the requests of @a parked that completed; @a force: every request
 * (UCP completes them without us) */
static void ucg_coll_parked_reap(ucg_parked_t *parked, int force)
{
    unsigned i, kept;

    kept = 0;
    for (i = 0; i < parked->num_reqs; ++i) {
        if ((ucp_request_check_status(parked->reqs[i]) != UCS_INPROGRESS) ||
            force) {
            ucp_request_free(parked->reqs[i]);
        } else {
            parked->reqs[kept++] = parked->reqs[i];
        }
    }
    parked->num_reqs = kept;
}

/* Progress function of a parked record in its context's queue: the buffers
 * go once all its requests completed */
static unsigned ucg_coll_parked_progress_cb(ucg_progress_elem_t *elem)
{
    ucg_parked_t *parked = ucs_container_of(elem, ucg_parked_t, progress);

    ucg_coll_parked_reap(parked, 0);
    if (parked->num_reqs == 0) {
        ucg_coll_parked_release(parked);
    }
    return UCG_PROGRESS_UCP;
}

/* A parked record at its context's destroy: before the UCP worker goes,
 * every request goes to UCP (a request released by force may still use
 * the buffers until the worker is destroyed); once it is gone, the
 * buffers */
static void ucg_coll_parked_close_cb(ucg_context_closer_t *closer,
                                     ucg_context_close_stage_t stage)
{
    ucg_parked_t *parked = ucs_container_of(closer, ucg_parked_t, closer);

    if (stage == UCG_CONTEXT_CLOSE_UCP) {
        ucg_coll_parked_reap(parked, 1);
    } else {
        ucs_assert(parked->num_reqs == 0);
        ucg_coll_parked_release(parked);
    }
}

/*
 * Sends that could not complete (a rendezvous whose receiver gave up) keep
 * reading their buffers: the requests and the collective's scratch buffers
 * go to the context, which frees the buffers once UCP has completed every
 * request (ucg_coll_parked_progress_cb, from ucg_progress), or at its
 * destroy (ucg_coll_parked_close_cb).  The collective gets new scratch
 * buffers if it is started again.
 */
static void ucg_p2p_park(ucg_coll_t *coll)
{
    ucg_context_h context = coll->group->context;
    ucg_parked_t *parked;
    unsigned i;

    parked = ucs_malloc(sizeof(*parked) + (coll->num_reqs * sizeof(void*)),
                        "ucg parked requests");
    if (parked == NULL) {
        /* Nothing to free the buffers with later: they stay allocated */
        ucs_error("ucg: out of memory for %u outstanding requests; their "
                  "buffers are kept", coll->num_reqs);
        for (i = 0; i < coll->num_reqs; ++i) {
            ucp_request_free(coll->reqs[i]);
        }
    } else {
        parked->num_reqs = coll->num_reqs;
        memcpy(parked->reqs, coll->reqs, coll->num_reqs * sizeof(void*));
        memcpy(parked->scratch, coll->scratch, sizeof(parked->scratch));
        ucg_context_closer_add(context, &parked->closer,
                               ucg_coll_parked_close_cb);
        ucg_progress_enqueue(&context->progress_q, &parked->progress,
                             ucg_coll_parked_progress_cb);
    }

    for (i = 0; i < UCG_COLL_MAX_SCRATCH; ++i) {
        coll->scratch[i]     = NULL;
        coll->scratch_len[i] = 0;
    }
    coll->num_reqs = 0;
}

/*
 * Sends of a failed collective still outstanding after the wait: those on
 * endpoints with PEER error handling (members on other hosts) are ended
 * with a force-close of the endpoint (ucg_group_p2p_force_close), and UCP
 * is progressed until it has completed them: once the collective returns,
 * UCP reads none of its buffers, which may be the user's.  Endpoints to
 * members of this host have no error handling (UCP refuses FORCE there):
 * their sends stay outstanding and are parked.
 */
static void ucg_p2p_force_close_sends(ucg_coll_t *coll)
{
    ucg_group_h group   = coll->group;
    ucp_worker_h worker = group->context->ucp_worker;
    size_t *lengths     = ucg_p2p_req_lengths(coll);
    unsigned *peers     = ucg_p2p_req_peers(coll);
    ucs_time_t deadline = ucs_get_time() +
                          ucs_time_from_sec(UCG_P2P_FORCE_CLOSE_SEC);
    unsigned i, recvs, sends, closed = 0;

    for (i = 0; i < coll->num_reqs; ++i) {
        if ((lengths[i] == SIZE_MAX) &&
            (ucg_group_p2p_force_close(group, peers[i]) == UCS_OK)) {
            ++closed;
        }
    }

    if (closed == 0) {
        return;
    }

    /* UCP completes the requests of a closed endpoint once it has
     * discarded its transport endpoints: no wait for a peer */
    do {
        ucp_worker_progress(worker);
        ucg_p2p_reap(coll, &recvs, &sends);
        for (i = 0; i < coll->num_reqs; ++i) {
            if ((lengths[i] == SIZE_MAX) &&
                (group->members[peers[i]].ep == NULL)) {
                break;
            }
        }
    } while ((i < coll->num_reqs) && (ucs_get_time() < deadline));

    if (i < coll->num_reqs) {
        ucs_error("ucg group %u %s seq %u: UCP did not complete the sends "
                  "of force-closed endpoints", group->id,
                  ucg_coll_name(coll->params.type), coll->seq);
    }
}

/*
 * After an error: cancel what is outstanding, and leave nothing UCP may
 * still write into or read from.  A receive that has not matched completes
 * at once; one that has matched a message completes when the rest of the
 * message arrives, which its sender delivers as it progresses (slow is not
 * dead), unless the sender has exited (its liveness watch, or UCP's error
 * handling for a member on another host): then no more data comes once UCP
 * has nothing left to progress, and the receive is parked.  Sends cannot be
 * cancelled: a send to a live member completes when the member progresses
 * (eager), or never if it has given up its receive (a rendezvous waits for
 * it).  Sends still outstanding when UCP has nothing left to progress and
 * PEER_TIMEOUT has passed, and those to members that exited, are ended by
 * force-closing their endpoints (ucg_p2p_force_close_sends) when they go to
 * other hosts, and parked with their buffers when they go to this host.
 */
void ucg_p2p_cancel_all(ucg_coll_t *coll)
{
    ucg_group_h group   = coll->group;
    ucp_worker_h worker = group->context->ucp_worker;
    double timeout      = isinf(group->context->config->peer_timeout) ?
                          UCG_P2P_CANCEL_SEND_SEC :
                          ucs_min(group->context->config->peer_timeout,
                                  UCG_P2P_MAX_WAIT_SEC);
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(timeout);
    unsigned i, progressed, recvs, sends;

    if (coll->num_reqs == 0) {
        return;
    }

    for (i = 0; i < coll->num_reqs; ++i) {
        ucp_request_cancel(worker, coll->reqs[i]);
    }

    do {
        progressed = ucp_worker_progress(worker);
        ucg_p2p_reap(coll, &recvs, &sends);
    } while ((recvs > 0) || (progressed > 0) ||
             ((sends > 0) && (ucs_get_time() < deadline)));

    ucg_p2p_force_close_sends(coll);
    if (coll->num_reqs > 0) {
        ucs_debug("ucg group %u %s seq %u: %u requests left to UCP",
                  group->id, ucg_coll_name(coll->params.type), coll->seq,
                  coll->num_reqs);
        ucg_p2p_park(coll);
    }
}
