/**
 * ucx-o2m: point-to-point endpoints (what UCP creates with uct_ep_create).
 *
 * Senders write into the receive FIFO of the peer's interface segment.  A
 * sender claims sequence number s = "head" (only while head - tail < depth)
 * with a compare-and-swap on the seq word of element s % depth, from "free
 * for s" (the previous round's published value, s - depth + 1, or 0) to a
 * claim naming the sender's pid; then it moves head to s + 1 (any sender
 * that finds element head claimed helps).  It fills the element and
 * publishes it (seq = s + 1).  The owner consumes elements in sequence
 * order and advances "tail", which also tells senders that their large
 * (zcopy) messages have been read.
 *
 * A sender that dies between claim and publish: while element "tail" stays
 * claimed, the owner's periodic check (CHECK_INTERVAL) watches the claimer
 * and skips the element once that process has exited; nothing else is
 * lost.  A claimer that is alive but stopped is waited for, and the
 * elements behind it wait too: the FIFO keeps one order for all senders,
 * and a message claimed after the stuck one is not delivered before it.
 */
#ifndef UCT_O2M_P2P_H_
#define UCT_O2M_P2P_H_

#include "o2m_iface.h"


typedef struct uct_o2m_p2p_ep {
    uct_o2m_ep_t        super;
    uct_o2m_peer_seg_t  *peer;
    uct_o2m_iface_seg_t *seg;   /* peer->seg */
    void                *fifo;
    unsigned            depth;
    size_t              elem_size;
    uct_o2m_watch_t     *watch; /* The peer process */
    pid_t               self_pid; /* Named in the claims of FIFO elements */
} uct_o2m_p2p_ep_t;


ucs_status_t uct_o2m_p2p_am_short(uct_o2m_p2p_ep_t *ep, uint8_t id,
                                  uint64_t header, const void *payload,
                                  unsigned length);
ssize_t uct_o2m_p2p_am_bcopy(uct_o2m_p2p_ep_t *ep, uint8_t id,
                             uct_pack_callback_t pack_cb, void *arg);
ucs_status_t uct_o2m_p2p_am_zcopy(uct_o2m_p2p_ep_t *ep, uint8_t id,
                                  const void *header, unsigned header_length,
                                  const uct_iov_t *iov, size_t iovcnt,
                                  uct_completion_t *comp);
int uct_o2m_p2p_ep_has_space(uct_o2m_p2p_ep_t *ep);
ucs_status_t uct_o2m_p2p_ep_flush_status(uct_o2m_p2p_ep_t *ep);
unsigned uct_o2m_p2p_ep_progress(uct_o2m_p2p_ep_t *ep);
void uct_o2m_p2p_ep_check_peer(uct_o2m_p2p_ep_t *ep);
void uct_o2m_p2p_ep_destroy(uct_o2m_p2p_ep_t *ep);

/* Deliver what arrived in this interface's own receive FIFO */
unsigned uct_o2m_p2p_rx_progress(uct_o2m_iface_t *iface);

/* Periodic: skip a receive FIFO element whose claimer died */
void uct_o2m_p2p_rx_check(uct_o2m_iface_t *iface);

/* Deliver one element (also used by the fan-out receivers), inline data of
 * at most @a max_inline bytes.  A corrupt element: UCS_ERR_INVALID_PARAM
 * and *why_p says what is wrong; other errors leave it NULL.  @a failed
 * (NULL: none) is the writer's "failed" word: a large message read while
 * it became set is not delivered (see uct_o2m_ep_set_failed). */
ucs_status_t uct_o2m_deliver_elem(uct_o2m_iface_t *iface,
                                  uct_o2m_elem_t *elem, size_t max_inline,
                                  const volatile int32_t *failed,
                                  const char **why_p);

#endif
