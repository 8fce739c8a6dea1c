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

#include "o2m_ep.h"


typedef struct uct_o2m_p2p_ep {
    uct_o2m_ep_t        super;
    uct_o2m_peer_seg_t  *peer;
    uct_o2m_iface_seg_t *seg;   /* peer->seg */
    void                *fifo;
    unsigned            depth;
    size_t              elem_size;
    uct_o2m_watch_t     *watch; /* The peer process */
    pid_t               self_pid; /* Named in the claims of FIFO elements */
    uint64_t            zerr_mark; /* The receiver's zerr_count before the
                                      last zcopy message was published */
} uct_o2m_p2p_ep_t;


/* The seq word of a claimed element: never a published value (bit 63),
 * names the claimer (pids are below 2^22) and the sequence claimed */
#define UCT_O2M_CLAIM_FLAG     UCS_BIT(63)
#define UCT_O2M_CLAIM_PID_BITS 22
#define UCT_O2M_CLAIM_SEQ_MASK UCS_MASK(63 - UCT_O2M_CLAIM_PID_BITS)

static UCS_F_ALWAYS_INLINE uint64_t uct_o2m_p2p_claim_word(uint64_t seq,
                                                           pid_t pid)
{
    return UCT_O2M_CLAIM_FLAG |
           ((seq & UCT_O2M_CLAIM_SEQ_MASK) << UCT_O2M_CLAIM_PID_BITS) |
           ((uint64_t)pid & UCS_MASK(UCT_O2M_CLAIM_PID_BITS));
}

/* Value of the seq word of element @a seq before it is claimed */
static UCS_F_ALWAYS_INLINE uint64_t uct_o2m_p2p_free_word(uint64_t seq,
                                                          unsigned depth)
{
    return (seq >= depth) ? (seq - depth + 1) : 0;
}


/* The role of the endpoints UCP creates */
extern const uct_o2m_ep_ops_t uct_o2m_p2p_ep_ops;

#endif
