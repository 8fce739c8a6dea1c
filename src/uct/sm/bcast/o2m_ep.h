/**
 * ucx-o2m: the endpoint base of sm_bcast and sm_incast (o2m_ep.c): what every
 * endpoint has, the completion of large sends and flushes, the pending
 * queue, and the generic endpoint operations of the UCT interface.
 */
#ifndef UCT_O2M_EP_H_
#define UCT_O2M_EP_H_

#include "o2m_iface.h"


typedef struct uct_o2m_ep uct_o2m_ep_t;


/**
 * What an endpoint does in its role, chosen when it is created: the sender
 * of a point-to-point connection (o2m_p2p.c), the root or a receiver of a
 * fan-out group (bcast_ep.c), a sender or the root of a fan-in group
 * (incast_ep.c, incast_root.c).  The interface's endpoint operations
 * (o2m_ep.c) do what is common to every role and call these.
 */
typedef struct uct_o2m_ep_ops {
    const char   *name;      /* Of the role, in log lines */

    /* Sending roles; NULL for a role that only reads (sends are refused).
     * Called on an endpoint that has not failed, with no pending request
     * ahead of the send. */
    ucs_status_t (*am_short)(uct_o2m_ep_t *ep, uint8_t id, uint64_t header,
                             const void *payload, unsigned length);
    ssize_t      (*am_bcopy)(uct_o2m_ep_t *ep, uint8_t id,
                             uct_pack_callback_t pack_cb, void *arg);
    ucs_status_t (*am_zcopy)(uct_o2m_ep_t *ep, uint8_t id,
                             const void *header, unsigned header_length,
                             const uct_iov_t *iov, size_t iovcnt,
                             uct_completion_t *comp);
    /* Whether a send may find room now (NULL: always) */
    int          (*has_space)(uct_o2m_ep_t *ep);
    /* Once something was sent: UCS_OK when the readers are done with all
     * of it, else UCS_INPROGRESS (NULL: nothing is ever in flight) */
    ucs_status_t (*flush_status)(uct_o2m_ep_t *ep);
    /* The endpoint fails with @a status: what its readers must learn
     * before its completions fire (NULL: nothing) */
    void         (*failing)(uct_o2m_ep_t *ep, ucs_status_t status);

    /* Every role */
    unsigned     (*progress)(uct_o2m_ep_t *ep);
    /* Whether the peers are alive; @a stalled: the user waits on the
     * endpoint (uct_ep_check) rather than the periodic check */
    void         (*check)(uct_o2m_ep_t *ep, int stalled);
    void         (*destroy)(uct_o2m_ep_t *ep);
} uct_o2m_ep_ops_t;


/** Large send waiting for the readers: completed in progress. */
typedef struct uct_o2m_zcopy_req {
    ucs_queue_elem_t  queue;
    uint64_t          seq;
    uct_completion_t  *comp;
    uint64_t          zerr_mark;   /* Point-to-point: the receiver's
                                      zerr_count when it was sent */
} uct_o2m_zcopy_req_t;


/** Base of every endpoint of these transports. */
struct uct_o2m_ep {
    uct_base_ep_t      super;
    const uct_o2m_ep_ops_t *ops;     /* Its role */
    ucs_list_link_t    list;         /* In iface->eps */
    ucs_status_t       status;       /* UCS_OK until the ep has failed */
    ucs_queue_head_t   pending;      /* uct_pending_req_t */
    ucs_queue_head_t   zcopy_reqs;   /* uct_o2m_zcopy_req_t, in seq order */
    ucs_queue_head_t   flush_reqs;   /* uct_o2m_zcopy_req_t, in seq order */
    uint64_t           next_seq;     /* Next message this ep sends */
    int                dispatching;  /* Pending requests are being run */
};


UCS_CLASS_DECLARE(uct_o2m_ep_t, uct_o2m_iface_t*, const uct_o2m_ep_ops_t*);


/* Fill a descriptor for a large send from this process */
ucs_status_t uct_o2m_zdesc_pack(uct_o2m_zdesc_t *zdesc, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, size_t max_length);

/* Endpoint helpers shared by all roles */
void uct_o2m_ep_set_failed(uct_o2m_ep_t *ep, ucs_status_t status);
void uct_o2m_ep_dispatch_pending(uct_o2m_ep_t *ep);
ucs_status_t uct_o2m_ep_add_zcopy(uct_o2m_ep_t *ep, ucs_queue_head_t *queue,
                                  uint64_t seq, uct_completion_t *comp);
void uct_o2m_ep_complete_upto(uct_o2m_ep_t *ep, uint64_t done_seq);

/* Endpoint operations of the interface: common checks, then the role */
ucs_status_t uct_o2m_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                 const void *payload, unsigned length);
ssize_t uct_o2m_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                            uct_pack_callback_t pack_cb, void *arg,
                            unsigned flags);
ucs_status_t uct_o2m_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                 const void *header, unsigned header_length,
                                 const uct_iov_t *iov, size_t iovcnt,
                                 unsigned flags, uct_completion_t *comp);
ucs_status_t uct_o2m_ep_flush(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
ucs_status_t uct_o2m_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags);
void uct_o2m_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg);
ucs_status_t uct_o2m_ep_check(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp);
ucs_status_t uct_o2m_ep_create_p2p(const uct_ep_params_t *params,
                                   uct_ep_h *ep_p);
void uct_o2m_ep_destroy(uct_ep_h tl_ep);

/* Whether the endpoint's role sends (else it only reads) */
static UCS_F_ALWAYS_INLINE int uct_o2m_ep_sends(const uct_o2m_ep_t *ep)
{
    return ep->ops->am_short != NULL;
}


/*
 * The send path of every sending role: claim an element, fill it, publish
 * it.  A role passes its own claim, publish and (zcopy) track functions,
 * always inline, and the compiler makes each role's am_short/bcopy/zcopy
 * of these templates, with no call through a pointer.
 *  claim:   the element for the next message and its sequence number, or
 *           NULL and why not (UCS_ERR_NO_RESOURCE: no room now).  What is
 *           checked before claiming cannot fail after: an element claimed
 *           in a shared FIFO must be published.
 *  publish: make the element, its length, am_id and flags written, visible
 *           to the readers; a role whose element is private until then may
 *           refuse it (nothing becomes visible).
 *  track:   after a zcopy message is published: complete @a comp once the
 *           readers are done with the sender's buffer.
 * A zcopy descriptor is packed straight into the element when the role's
 * element stays private until published (@a in_place), else it is checked
 * before claiming and copied in.
 */
typedef uct_o2m_elem_t *(*uct_o2m_ep_claim_func_t)(uct_o2m_ep_t *ep,
                                                   uint64_t *seq_p,
                                                   ucs_status_t *status_p);
typedef ucs_status_t (*uct_o2m_ep_publish_func_t)(uct_o2m_ep_t *ep,
                                                  uct_o2m_elem_t *elem,
                                                  uint64_t seq);
typedef ucs_status_t (*uct_o2m_ep_track_func_t)(uct_o2m_ep_t *ep,
                                                uint64_t seq,
                                                uct_completion_t *comp);

static UCS_F_ALWAYS_INLINE void
uct_o2m_ep_fill_hdr(uct_o2m_elem_t *elem, uint8_t id, uint32_t length,
                    uint8_t flags)
{
    elem->length = length;
    elem->am_id  = id;
    elem->flags  = flags;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_o2m_ep_send_short(uct_o2m_ep_t *ep, uct_o2m_ep_claim_func_t claim,
                      uct_o2m_ep_publish_func_t publish, uint8_t id,
                      uint64_t header, const void *payload, unsigned length)
{
    uct_o2m_elem_t *elem;
    ucs_status_t status;
    uint64_t seq;

    elem = claim(ep, &seq, &status);
    if (ucs_unlikely(elem == NULL)) {
        return status;
    }

    memcpy(UCT_O2M_ELEM_DATA(elem), &header, sizeof(header));
    uct_o2m_memcpy(UCS_PTR_BYTE_OFFSET(UCT_O2M_ELEM_DATA(elem),
                                       sizeof(header)),
                   payload, length);
    uct_o2m_ep_fill_hdr(elem, id, length + sizeof(header), 0);
    return publish(ep, elem, seq);
}

/* @a max_length: what pack_cb may write into the claimed element */
static UCS_F_ALWAYS_INLINE ssize_t
uct_o2m_ep_send_bcopy(uct_o2m_ep_t *ep, uct_o2m_ep_claim_func_t claim,
                      uct_o2m_ep_publish_func_t publish, size_t max_length,
                      uint8_t id, uct_pack_callback_t pack_cb, void *arg)
{
    uct_o2m_elem_t *elem;
    ucs_status_t status;
    size_t length;
    uint64_t seq;

    elem = claim(ep, &seq, &status);
    if (ucs_unlikely(elem == NULL)) {
        return status;
    }

    length = pack_cb(UCT_O2M_ELEM_DATA(elem), arg);
    ucs_assertv(length <= max_length, "pack_cb packed %zu bytes", length);
    uct_o2m_ep_fill_hdr(elem, id, length, 0);
    status = publish(ep, elem, seq);
    return ucs_likely(status == UCS_OK) ? (ssize_t)length : status;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_o2m_ep_send_zcopy(uct_o2m_ep_t *ep, uct_o2m_ep_claim_func_t claim,
                      uct_o2m_ep_publish_func_t publish,
                      uct_o2m_ep_track_func_t track, int in_place,
                      uint8_t id, const void *header, unsigned header_length,
                      const uct_iov_t *iov, size_t iovcnt,
                      uct_completion_t *comp)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.iface,
                                            uct_o2m_iface_t);
    uct_o2m_zdesc_t zdesc, *zdesc_p;
    uct_o2m_elem_t *elem;
    ucs_status_t status;
    uint64_t seq;

    if (!in_place) {
        /* Checked before claiming: a refused descriptor claims nothing */
        status = uct_o2m_zdesc_pack(&zdesc, header, header_length, iov,
                                    iovcnt, iface->config.max_zcopy);
        if (status != UCS_OK) {
            return status;
        }
    }

    elem = claim(ep, &seq, &status);
    if (ucs_unlikely(elem == NULL)) {
        return status;
    }

    zdesc_p = (uct_o2m_zdesc_t*)UCT_O2M_ELEM_DATA(elem);
    if (in_place) {
        /* Nothing is published if the descriptor is refused */
        status = uct_o2m_zdesc_pack(zdesc_p, header, header_length, iov,
                                    iovcnt, iface->config.max_zcopy);
        if (status != UCS_OK) {
            return status;
        }
    } else {
        memcpy(zdesc_p, &zdesc, sizeof(zdesc));
    }

    uct_o2m_ep_fill_hdr(elem, id, zdesc_p->length, UCT_O2M_ELEM_FLAG_ZCOPY);
    status = publish(ep, elem, seq);
    if (status != UCS_OK) {
        return status;
    }

    return track(ep, seq, comp);
}

/* Track of the group roles: readers are done once the ring moved past */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_o2m_ep_track_zcopy(uct_o2m_ep_t *ep, uint64_t seq, uct_completion_t *comp)
{
    return uct_o2m_ep_add_zcopy(ep, &ep->zcopy_reqs, seq, comp);
}

#endif
