/**
 * ucx-o2m: the endpoint base of sm_bcast and sm_incast (o2m_ep.c): what every
 * endpoint has, the completion of large sends and flushes, the pending
 * queue, and the generic endpoint operations of the UCT interface.
 */
#ifndef UCT_O2M_EP_H_
#define UCT_O2M_EP_H_

#include "o2m_iface.h"


typedef struct uct_o2m_ep uct_o2m_ep_t;


typedef enum {
    UCT_O2M_EP_P2P,        /* Point-to-point sender */
    UCT_O2M_EP_BCAST_ROOT,
    UCT_O2M_EP_BCAST_RECV,
    UCT_O2M_EP_INCAST_ROOT,
    UCT_O2M_EP_INCAST_SEND
} uct_o2m_ep_type_t;


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
    uct_o2m_ep_type_t  type;
    ucs_list_link_t    list;         /* In iface->eps */
    ucs_status_t       status;       /* UCS_OK until the ep has failed */
    ucs_queue_head_t   pending;      /* uct_pending_req_t */
    ucs_queue_head_t   zcopy_reqs;   /* uct_o2m_zcopy_req_t, in seq order */
    ucs_queue_head_t   flush_reqs;   /* uct_o2m_zcopy_req_t, in seq order */
    uint64_t           next_seq;     /* Next message this ep sends */
    int                dispatching;  /* Pending requests are being run */
};


UCS_CLASS_DECLARE(uct_o2m_ep_t, uct_o2m_iface_t*, uct_o2m_ep_type_t);


/* Fill a descriptor for a large send from this process */
ucs_status_t uct_o2m_zdesc_pack(uct_o2m_zdesc_t *zdesc, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, size_t max_length);

/* Endpoint helpers shared by all endpoint types */
void uct_o2m_ep_set_failed(uct_o2m_ep_t *ep, ucs_status_t status);
void uct_o2m_ep_dispatch_pending(uct_o2m_ep_t *ep);
ucs_status_t uct_o2m_ep_add_zcopy(uct_o2m_ep_t *ep, ucs_queue_head_t *queue,
                                  uint64_t seq, uct_completion_t *comp);
void uct_o2m_ep_complete_upto(uct_o2m_ep_t *ep, uint64_t done_seq);

/* Generic endpoint operations: dispatch on ep->type */
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

#endif
