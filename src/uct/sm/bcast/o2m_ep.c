/**
 * ucx-o2m: the endpoint base shared by every endpoint of sm_bcast and
 * sm_incast, and the generic endpoint operations of the UCT interface.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_ep.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <string.h>
#include <unistd.h>


ucs_status_t uct_o2m_zdesc_pack(uct_o2m_zdesc_t *zdesc, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, size_t max_length)
{
    size_t length = header_length;
    size_t i;

    if (header_length > UCT_O2M_MAX_ZCOPY_HDR) {
        ucs_error("zcopy header of %u bytes exceeds %d", header_length,
                  UCT_O2M_MAX_ZCOPY_HDR);
        return UCS_ERR_INVALID_PARAM;
    }

    if (iovcnt > UCT_O2M_MAX_IOV) {
        ucs_error("zcopy iov count %zu exceeds %d", iovcnt, UCT_O2M_MAX_IOV);
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < iovcnt; ++i) {
        if ((iov[i].count > 1) && (iov[i].stride != iov[i].length)) {
            ucs_error("strided zcopy iov is not supported");
            return UCS_ERR_UNSUPPORTED;
        }
        zdesc->iov[i].base = (uintptr_t)iov[i].buffer;
        zdesc->iov[i].len  = iov[i].length * ucs_max(iov[i].count, 1);
        length            += zdesc->iov[i].len;
    }

    if (length > max_length) {
        ucs_error("zcopy message of %zu bytes exceeds max_zcopy %zu", length,
                  max_length);
        return UCS_ERR_INVALID_PARAM;
    }

    /* Active messages carry a 32-bit length: receivers refuse more */
    if (length > UINT32_MAX) {
        ucs_error("zcopy message of %zu bytes exceeds 4 GiB", length);
        return UCS_ERR_INVALID_PARAM;
    }

    zdesc->pid           = getpid();
    zdesc->iovcnt        = iovcnt;
    zdesc->header_length = header_length;
    zdesc->length        = length;
    uct_o2m_memcpy(zdesc->header, header, header_length);
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Endpoint base                                                           */

UCS_CLASS_INIT_FUNC(uct_o2m_ep_t, uct_o2m_iface_t *iface,
                    const uct_o2m_ep_ops_t *ops)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super.super);

    self->ops         = ops;
    self->status      = UCS_OK;
    self->next_seq    = 0;
    self->dispatching = 0;
    ucs_queue_head_init(&self->pending);
    ucs_queue_head_init(&self->zcopy_reqs);
    ucs_queue_head_init(&self->flush_reqs);
    ucs_list_add_tail(&iface->eps, &self->list);
    return UCS_OK;
}

static void uct_o2m_ep_fail_reqs(ucs_queue_head_t *queue, ucs_status_t status)
{
    uct_o2m_zcopy_req_t *req;

    while (!ucs_queue_is_empty(queue)) {
        req = ucs_queue_pull_elem_non_empty(queue, uct_o2m_zcopy_req_t,
                                            queue);
        uct_invoke_completion(req->comp, status);
        ucs_free(req);
    }
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_ep_t)
{
    if (!ucs_queue_is_empty(&self->pending)) {
        ucs_warn("ep %p destroyed with pending requests", self);
    }

    /* The user's completions must not fire after destroy: just free */
    while (!ucs_queue_is_empty(&self->zcopy_reqs)) {
        ucs_free(ucs_queue_pull_elem_non_empty(&self->zcopy_reqs,
                                               uct_o2m_zcopy_req_t, queue));
    }
    while (!ucs_queue_is_empty(&self->flush_reqs)) {
        ucs_free(ucs_queue_pull_elem_non_empty(&self->flush_reqs,
                                               uct_o2m_zcopy_req_t, queue));
    }
    ucs_list_del(&self->list);
}

UCS_CLASS_DEFINE(uct_o2m_ep_t, uct_base_ep_t);

void uct_o2m_ep_set_failed(uct_o2m_ep_t *ep, ucs_status_t status)
{
    if (ep->status != UCS_OK) {
        return;
    }

    ep->status = status;
    if (ep->ops->failing != NULL) {
        ep->ops->failing(ep, status);
    }

    uct_o2m_ep_fail_reqs(&ep->zcopy_reqs, status);
    uct_o2m_ep_fail_reqs(&ep->flush_reqs, status);
    uct_iface_handle_ep_err(ep->super.super.iface, &ep->super.super, status);
}

ucs_status_t uct_o2m_ep_add_zcopy(uct_o2m_ep_t *ep, ucs_queue_head_t *queue,
                                  uint64_t seq, uct_completion_t *comp)
{
    uct_o2m_zcopy_req_t *req;

    if (comp == NULL) {
        /* Nobody waits on it: flush still covers it through next_seq */
        return UCS_INPROGRESS;
    }

    req = ucs_malloc(sizeof(*req), "o2m zcopy req");
    if (req == NULL) {
        ucs_error("failed to allocate a completion request");
        return UCS_ERR_NO_MEMORY;
    }

    req->seq  = seq;
    req->comp = comp;
    ucs_queue_push(queue, &req->queue);
    return UCS_INPROGRESS;
}

void uct_o2m_ep_complete_upto(uct_o2m_ep_t *ep, uint64_t done_seq)
{
    uct_o2m_zcopy_req_t *req;
    ucs_queue_head_t *queues[] = {&ep->zcopy_reqs, &ep->flush_reqs};
    unsigned i;

    for (i = 0; i < ucs_static_array_size(queues); ++i) {
        while (!ucs_queue_is_empty(queues[i])) {
            req = ucs_queue_head_elem_non_empty(queues[i],
                                                uct_o2m_zcopy_req_t, queue);
            if (req->seq >= done_seq) {
                break;
            }
            ucs_queue_pull_non_empty(queues[i]);
            uct_invoke_completion(req->comp, UCS_OK);
            ucs_free(req);
        }
    }
}

static UCS_F_ALWAYS_INLINE int uct_o2m_ep_has_space(uct_o2m_ep_t *ep)
{
    return (ep->ops->has_space == NULL) || ep->ops->has_space(ep);
}

void uct_o2m_ep_dispatch_pending(uct_o2m_ep_t *ep)
{
    uct_pending_req_priv_queue_t *priv;

    ep->dispatching = 1;
    uct_pending_queue_dispatch(priv, &ep->pending,
                               (ep->status == UCS_OK) &&
                               uct_o2m_ep_has_space(ep));
    ep->dispatching = 0;
}

/* A failed ep refuses sends; while requests wait in its pending queue, only
 * they may send, so that messages keep their order */
#define UCT_O2M_EP_CHECK_SEND(_ep) \
    if (ucs_unlikely((_ep)->status != UCS_OK)) { \
        return (_ep)->status; \
    } \
    if (ucs_unlikely(!ucs_queue_is_empty(&(_ep)->pending) && \
                     !(_ep)->dispatching)) { \
        return UCS_ERR_NO_RESOURCE; \
    }

static ucs_status_t uct_o2m_ep_no_send(uct_o2m_ep_t *ep)
{
    ucs_error("ep %p: a %s does not send", ep, ep->ops->name);
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_o2m_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                 const void *payload, unsigned length)
{
    uct_o2m_ep_t *ep = ucs_derived_of(tl_ep, uct_o2m_ep_t);

    UCT_CHECK_AM_ID(id);
    UCT_O2M_EP_CHECK_SEND(ep);

    if (ucs_unlikely(!uct_o2m_ep_sends(ep))) {
        return uct_o2m_ep_no_send(ep);
    }

    return ep->ops->am_short(ep, id, header, payload, length);
}

ssize_t uct_o2m_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                            uct_pack_callback_t pack_cb, void *arg,
                            unsigned flags)
{
    uct_o2m_ep_t *ep = ucs_derived_of(tl_ep, uct_o2m_ep_t);

    UCT_CHECK_AM_ID(id);
    UCT_O2M_EP_CHECK_SEND(ep);

    if (ucs_unlikely(!uct_o2m_ep_sends(ep))) {
        return uct_o2m_ep_no_send(ep);
    }

    return ep->ops->am_bcopy(ep, id, pack_cb, arg);
}

ucs_status_t uct_o2m_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                 const void *header, unsigned header_length,
                                 const uct_iov_t *iov, size_t iovcnt,
                                 unsigned flags, uct_completion_t *comp)
{
    uct_o2m_ep_t *ep = ucs_derived_of(tl_ep, uct_o2m_ep_t);

    UCT_CHECK_AM_ID(id);
    UCT_O2M_EP_CHECK_SEND(ep);

    if (ucs_unlikely(!ucs_derived_of(tl_ep->iface, uct_o2m_iface_t)->cma)) {
        ucs_error("ep %p: zcopy with single-copy reads disabled (CMA)", ep);
        return UCS_ERR_UNSUPPORTED;
    }

    if (ucs_unlikely(!uct_o2m_ep_sends(ep))) {
        return uct_o2m_ep_no_send(ep);
    }

    return ep->ops->am_zcopy(ep, id, header, header_length, iov, iovcnt,
                             comp);
}

ucs_status_t uct_o2m_ep_flush(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp)
{
    uct_o2m_ep_t *ep = ucs_derived_of(tl_ep, uct_o2m_ep_t);
    ucs_status_t status;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        uct_o2m_ep_pending_purge(tl_ep, NULL, NULL);
        return (ep->status == UCS_OK) ? UCS_OK : ep->status;
    }

    if (ep->status != UCS_OK) {
        return ep->status;
    }

    if (!ucs_queue_is_empty(&ep->pending)) {
        return UCS_ERR_NO_RESOURCE;
    }

    /* Readers have nothing in flight; neither has a sender that has not
     * sent (a fan-in sender may not have joined its group yet) */
    if ((ep->ops->flush_status == NULL) || (ep->next_seq == 0)) {
        return UCS_OK;
    }

    status = ep->ops->flush_status(ep);

    if (status == UCS_INPROGRESS) {
        uct_o2m_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                uct_o2m_iface_t);
        ucs_time_t now         = ucs_get_time();

        /* A flush that waits is a stall: check the peers now and then */
        if (now >= iface->next_check) {
            iface->next_check = now + iface->config.check_interval;
            uct_o2m_iface_check_peers(iface);
            if (ep->status != UCS_OK) {
                return ep->status;
            }
        }
        return uct_o2m_ep_add_zcopy(ep, &ep->flush_reqs, ep->next_seq - 1,
                                    comp);
    }

    return status;
}

ucs_status_t uct_o2m_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags)
{
    uct_o2m_ep_t *ep = ucs_derived_of(tl_ep, uct_o2m_ep_t);

    if ((ep->status == UCS_OK) && ucs_queue_is_empty(&ep->pending) &&
        uct_o2m_ep_has_space(ep)) {
        return UCS_ERR_BUSY;
    }

    uct_pending_req_queue_push(&ep->pending, req);
    return UCS_OK;
}

void uct_o2m_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg)
{
    uct_o2m_ep_t *ep = ucs_derived_of(tl_ep, uct_o2m_ep_t);
    uct_pending_req_priv_queue_t *priv;

    uct_pending_queue_purge(priv, &ep->pending, 1, cb, arg);
}

ucs_status_t uct_o2m_ep_check(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp)
{
    uct_o2m_ep_t *ep = ucs_derived_of(tl_ep, uct_o2m_ep_t);

    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);

    if (ep->status == UCS_OK) {
        ep->ops->check(ep, 1);
    }

    return UCS_OK;
}

void uct_o2m_ep_destroy(uct_ep_h tl_ep)
{
    uct_o2m_ep_t *ep = ucs_derived_of(tl_ep, uct_o2m_ep_t);

    ep->ops->destroy(ep);
}
