/**
 * ucx-o2m: point-to-point endpoints, see o2m_p2p.h.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_p2p.h"
#include "o2m_check.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>
#include <unistd.h>


/* Claim the next FIFO element of the peer, or NULL when it is full */
static UCS_F_ALWAYS_INLINE uct_o2m_elem_t *
uct_o2m_p2p_claim(uct_o2m_ep_t *o2m_ep, uint64_t *seq_p,
                  ucs_status_t *status_p)
{
    uct_o2m_p2p_ep_t *ep     = ucs_derived_of(o2m_ep, uct_o2m_p2p_ep_t);
    uct_o2m_iface_seg_t *seg = ep->seg;
    uint64_t head            = __atomic_load_n(&seg->head, __ATOMIC_ACQUIRE);
    uct_o2m_elem_t *elem;
    uint64_t word;

    for (;;) {
        /* Signed: a stale head may be behind tail */
        if ((int64_t)(head - __atomic_load_n(&seg->tail, __ATOMIC_ACQUIRE)) >=
            (int64_t)ep->depth) {
            *status_p = UCS_ERR_NO_RESOURCE;
            return NULL;
        }

        elem = uct_o2m_elem_at(ep->fifo, ep->elem_size, head, ep->depth);
        word = uct_o2m_p2p_free_word(head, ep->depth);
        if (__atomic_compare_exchange_n(&elem->seq, &word,
                                        uct_o2m_p2p_claim_word(head,
                                                               ep->self_pid),
                                        0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            break;
        }

        /* Element head is taken: move head past it (or learn the new one) */
        if (__atomic_compare_exchange_n(&seg->head, &head, head + 1, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            ++head;
        }
    }

    /* Fails when a sender that found our claim already moved it */
    word = head;
    __atomic_compare_exchange_n(&seg->head, &word, head + 1, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);

    *seq_p             = head;
    ep->super.next_seq = head + 1;
    return elem;
}

/* A claimed element is always published: whatever must be refused is
 * refused before claiming */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_o2m_p2p_publish(uct_o2m_ep_t *o2m_ep, uct_o2m_elem_t *elem, uint64_t seq)
{
    uct_o2m_p2p_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_p2p_ep_t);

    if (elem->flags & UCT_O2M_ELEM_FLAG_ZCOPY) {
        /* Before publishing: a failure to read it comes after this count */
        ep->zerr_mark = __atomic_load_n(&ep->seg->zerr_count,
                                        __ATOMIC_ACQUIRE);
    }

    uct_o2m_elem_publish(elem, seq);
    return UCS_OK;
}

static ucs_status_t uct_o2m_p2p_am_short(uct_o2m_ep_t *o2m_ep, uint8_t id,
                                         uint64_t header, const void *payload,
                                         unsigned length)
{
    UCT_CHECK_LENGTH(length + sizeof(header), 0,
                     ucs_derived_of(o2m_ep, uct_o2m_p2p_ep_t)->elem_size -
                     sizeof(uct_o2m_elem_t), "am_short");

    return uct_o2m_ep_send_short(o2m_ep, uct_o2m_p2p_claim,
                                 uct_o2m_p2p_publish, id, header, payload,
                                 length);
}

static ssize_t uct_o2m_p2p_am_bcopy(uct_o2m_ep_t *o2m_ep, uint8_t id,
                                    uct_pack_callback_t pack_cb, void *arg)
{
    return uct_o2m_ep_send_bcopy(o2m_ep, uct_o2m_p2p_claim,
                                 uct_o2m_p2p_publish,
                                 ucs_derived_of(o2m_ep,
                                                uct_o2m_p2p_ep_t)->elem_size -
                                 sizeof(uct_o2m_elem_t), id, pack_cb, arg);
}

/* Whether the receiver could read zcopy message @a req (written by the
 * receiver: only an error code is passed on) */
static ucs_status_t uct_o2m_p2p_zcopy_status(uct_o2m_p2p_ep_t *ep,
                                             const uct_o2m_zcopy_req_t *req)
{
    uint64_t count = __atomic_load_n(&ep->seg->zerr_count, __ATOMIC_ACQUIRE);
    uint64_t tag   = (req->seq + 1) & (UINT64_MAX >> 8);
    ucs_status_t status;
    uint64_t word;
    unsigned i;

    if (count == req->zerr_mark) {
        return UCS_OK;
    }

    for (i = 0; i < UCT_O2M_ZERR_RING; ++i) {
        word = ep->seg->zerr[i];
        if ((word >> 8) == tag) {
            status = -(ucs_status_t)(word & 0xff);
            return ((status < 0) && (status > UCS_ERR_LAST)) ?
                   status : UCS_ERR_IO_ERROR;
        }
    }

    if ((count - req->zerr_mark) > UCT_O2M_ZERR_RING) {
        /* Its record may have been overwritten: never say OK unsure */
        ucs_error("ep %p: cannot tell whether zcopy message %" PRIu64 " was "
                  "read (%" PRIu64 " receive failures since)", ep, req->seq,
                  count - req->zerr_mark);
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}

/* The message is out: its completion waits for the receiver's tail, and
 * for its record of the messages it could not read */
static ucs_status_t uct_o2m_p2p_track_zcopy(uct_o2m_ep_t *o2m_ep, uint64_t seq,
                                           uct_completion_t *comp)
{
    uct_o2m_p2p_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_p2p_ep_t);
    uct_o2m_zcopy_req_t mark;
    ucs_status_t status;

    mark.seq       = seq;
    mark.zerr_mark = ep->zerr_mark;
    status         = uct_o2m_ep_add_zcopy(&ep->super, &ep->super.zcopy_reqs,
                                          seq, comp);
    if (status == UCS_ERR_NO_MEMORY) {
        /* Only its completion is lost: wait for it */
        while (__atomic_load_n(&ep->seg->tail, __ATOMIC_ACQUIRE) <= seq) {
            uct_o2m_cpu_relax();
        }
        return uct_o2m_p2p_zcopy_status(ep, &mark);
    } else if ((status == UCS_INPROGRESS) && (comp != NULL)) {
        ucs_queue_tail_elem_non_empty(&ep->super.zcopy_reqs,
                                      uct_o2m_zcopy_req_t,
                                      queue)->zerr_mark = mark.zerr_mark;
    }
    return status;
}

static ucs_status_t
uct_o2m_p2p_am_zcopy(uct_o2m_ep_t *o2m_ep, uint8_t id, const void *header,
                     unsigned header_length, const uct_iov_t *iov,
                     size_t iovcnt, uct_completion_t *comp)
{
    return uct_o2m_ep_send_zcopy(o2m_ep, uct_o2m_p2p_claim,
                                 uct_o2m_p2p_publish, uct_o2m_p2p_track_zcopy,
                                 0, id, header, header_length, iov, iovcnt,
                                 comp);
}

static int uct_o2m_p2p_ep_has_space(uct_o2m_ep_t *o2m_ep)
{
    uct_o2m_p2p_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_p2p_ep_t);

    return (__atomic_load_n(&ep->seg->head, __ATOMIC_RELAXED) -
            __atomic_load_n(&ep->seg->tail, __ATOMIC_ACQUIRE)) < ep->depth;
}

static ucs_status_t uct_o2m_p2p_ep_flush_status(uct_o2m_ep_t *o2m_ep)
{
    uct_o2m_p2p_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_p2p_ep_t);

    return (__atomic_load_n(&ep->seg->tail, __ATOMIC_ACQUIRE) >=
            ep->super.next_seq) ? UCS_OK : UCS_INPROGRESS;
}

static unsigned uct_o2m_p2p_ep_progress(uct_o2m_ep_t *o2m_ep)
{
    uct_o2m_p2p_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_p2p_ep_t);
    uct_o2m_zcopy_req_t *req;
    uint64_t tail;

    if (!ucs_queue_is_empty(&ep->super.zcopy_reqs) ||
        !ucs_queue_is_empty(&ep->super.flush_reqs)) {
        tail = __atomic_load_n(&ep->seg->tail, __ATOMIC_ACQUIRE);
        while (!ucs_queue_is_empty(&ep->super.zcopy_reqs)) {
            req = ucs_queue_head_elem_non_empty(&ep->super.zcopy_reqs,
                                                uct_o2m_zcopy_req_t, queue);
            if (req->seq >= tail) {
                break;
            }
            ucs_queue_pull_non_empty(&ep->super.zcopy_reqs);
            uct_invoke_completion(req->comp,
                                  uct_o2m_p2p_zcopy_status(ep, req));
            ucs_free(req);
        }
        uct_o2m_ep_complete_upto(&ep->super, tail);
    }

    if (!ucs_queue_is_empty(&ep->super.pending)) {
        uct_o2m_ep_dispatch_pending(&ep->super);
    }

    return 0;
}

/* Its peer is the receiver's process; stalled or not, nothing else */
static void uct_o2m_p2p_ep_check(uct_o2m_ep_t *o2m_ep, int stalled)
{
    uct_o2m_p2p_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_p2p_ep_t);

    if (uct_o2m_watch_has_exited(ep->watch)) {
        ucs_debug("ep %p: peer process %d has exited", ep,
                  ep->peer->addr.pid);
        uct_o2m_ep_set_failed(&ep->super, UCS_ERR_CONNECTION_RESET);
    }
}

static UCS_CLASS_INIT_FUNC(uct_o2m_p2p_ep_t, const uct_ep_params_t *params)
{
    uct_o2m_iface_t *iface = ucs_derived_of(params->iface, uct_o2m_iface_t);
    const uct_o2m_iface_addr_t *addr;
    ucs_status_t status;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    addr = (const uct_o2m_iface_addr_t*)params->iface_addr;

    UCS_CLASS_CALL_SUPER_INIT(uct_o2m_ep_t, iface, &uct_o2m_p2p_ep_ops);

    status = uct_o2m_iface_map_peer(iface, addr, &self->peer);
    if (status != UCS_OK) {
        return status;
    }

    /* The geometry checked when the segment was mapped */
    self->self_pid  = iface->self.pid;
    self->seg       = self->peer->seg;
    self->fifo      = self->peer->fifo;
    self->depth     = self->peer->geom.fifo_depth;
    self->elem_size = self->peer->geom.elem_size;
    status = uct_o2m_watch_get(iface->watches, &self->peer->owner,
                               &self->watch);
    if (status != UCS_OK) {
        goto err_unmap;
    }

    if (uct_o2m_watch_has_exited(self->watch)) {
        ucs_error("peer process %d is gone", addr->pid);
        status = UCS_ERR_UNREACHABLE;
        goto err_put;
    }

    ucs_debug("p2p ep %p to pid %d", self, addr->pid);
    return UCS_OK;

err_put:
    uct_o2m_watch_put(iface->watches, self->watch);
err_unmap:
    uct_o2m_iface_unmap_peer(iface, self->peer);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_p2p_ep_t)
{
    uct_o2m_iface_t *iface = ucs_derived_of(self->super.super.super.iface,
                                            uct_o2m_iface_t);

    uct_o2m_watch_put(iface->watches, self->watch);
    uct_o2m_iface_unmap_peer(iface, self->peer);
}

UCS_CLASS_DEFINE(uct_o2m_p2p_ep_t, uct_o2m_ep_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_o2m_p2p_ep_t, uct_ep_t,
                                 const uct_ep_params_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_o2m_p2p_ep_t, uct_ep_t);

ucs_status_t uct_o2m_ep_create_p2p(const uct_ep_params_t *params,
                                   uct_ep_h *ep_p)
{
    return UCS_CLASS_NEW_FUNC_NAME(uct_o2m_p2p_ep_t)(params, ep_p);
}

static void uct_o2m_p2p_ep_destroy(uct_o2m_ep_t *o2m_ep)
{
    UCS_CLASS_DELETE_FUNC_NAME(uct_o2m_p2p_ep_t)(&o2m_ep->super.super);
}

const uct_o2m_ep_ops_t uct_o2m_p2p_ep_ops = {
    .name         = "point-to-point sender",
    .am_short     = uct_o2m_p2p_am_short,
    .am_bcopy     = uct_o2m_p2p_am_bcopy,
    .am_zcopy     = uct_o2m_p2p_am_zcopy,
    .has_space    = uct_o2m_p2p_ep_has_space,
    .flush_status = uct_o2m_p2p_ep_flush_status,
    .progress     = uct_o2m_p2p_ep_progress,
    .check        = uct_o2m_p2p_ep_check,
    .destroy      = uct_o2m_p2p_ep_destroy
};
