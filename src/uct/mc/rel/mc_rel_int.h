/**
 * ucx-o2m: internals of the reliable multicast engine, shared by its files:
 *   mc_rel.c     streams, packet dispatch, timers, failure
 *   mc_rel_tx.c  the root: window, transmission, ACK tree minimum, repair
 *                policy
 *   mc_rel_rx.c  the members: gaps, NACKs, custody, reassembly, ACKs up
 *                the tree
 * The protocol is in docs/multicast.md; the API in mc_rel.h.
 */
#ifndef UCT_MC_REL_INT_H_
#define UCT_MC_REL_INT_H_

#include "mc_rel.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>

#include <string.h>

#define UCT_MC_REL_MAX_WINDOW 32768
#define UCT_MC_REL_MAX_RADIX  64
#define UCT_MC_REL_MAX_DEPTH  64    /* the root's SYNC back-off: SYNCs
                                       per doubling at most */
#define UCT_MC_REL_MAX_TIME   (3600ull * 1000000000ull) /* ns, 1 hour: no
                                                            timer overflows */


typedef enum {
    UCT_MC_REL_ST_JOINING,
    UCT_MC_REL_ST_READY,
    UCT_MC_REL_ST_FAILED
} uct_mc_rel_state_t;


/* One packet of the window: slot (psn & mask) */
typedef struct uct_mc_rel_slot {
    uint32_t psn;
    uint8_t  valid;        /* holds the packet psn */
    uint8_t  retx;         /* root: retransmitted, no RTT sample */
    uint8_t  mcast_valid;  /* root: t_mcast is set */
    uint16_t flags;
    uint16_t len;
    uint32_t msg_len;
    uint32_t offset;
    uint32_t weight;       /* root: members reported missing it */
    uint16_t nack_tries;   /* receiver: NACKs sent for it */
    uint64_t t_first;      /* root: first transmission; receiver: first
                              NACK */
    uint64_t t_nack;       /* receiver: when it is NACKed next */
    uint64_t t_gap;        /* receiver: when its PSN became known */
    uint64_t t_weight;     /* root: start of the weight's RTO window */
    uint64_t t_mcast;      /* root: last re-multicast */
    uint8_t  *data;
} uct_mc_rel_slot_t;


typedef struct uct_mc_rel_child {
    unsigned rank;
    int      known;        /* has sent an ACK with JOINED */
    uint32_t acked;        /* its subtree has everything before this */
    uint64_t last_heard;
    uint32_t nack_base;    /* PSNs it NACKed that this member lacked */
    uint64_t nack_bits;
    uint32_t nack_count;
} uct_mc_rel_child_t;


struct uct_mc_rel_stream {
    uct_mc_rel_config_t    cfg;
    uct_mc_rel_ops_t       ops;
    void                   *arg;
    uint32_t               group_id;
    uint32_t               epoch;
    unsigned               size;
    unsigned               rank;
    unsigned               root;
    unsigned               vrank;      /* rank relative to the root */
    unsigned               top;        /* member: which of the root's
                                          children its subtree is in
                                          (0 .. radix - 1) */
    unsigned               depth;      /* levels of the tree below the
                                          root (at most
                                          UCT_MC_REL_MAX_DEPTH) */
    int                    is_root;
    int                    parent;     /* rank; -1 on the root */
    unsigned               nchildren;
    uct_mc_rel_child_t     *children;
    unsigned               remcast_thresh;
    uint16_t               *nack_count; /* root: per slot, per child, the
                                           members that child last reported
                                           missing the slot's PSN within the
                                           weight's RTO window */

    uct_mc_rel_state_t     state;
    ucs_status_t           status;

    unsigned               mask;       /* window - 1 */
    uct_mc_rel_slot_t      *slots;
    uint8_t                *storage;

    /* PSNs: base <= next, high; everything before base is acknowledged by
     * the subtree (root: by every member) and its slots are free */
    uint32_t               base;
    uint32_t               next;       /* root: next to assign; receiver:
                                          next expected (cumulative) */
    uint32_t               high;       /* root: next to transmit; receiver:
                                          next known to exist */
    int                    started;    /* receiver: probe seen */
    int                    ready_seen; /* receiver: data or SYNC seen (the
                                          join is over) */
    int                    expecting;  /* receiver: the user waits for a
                                          message (uct_mc_rel_expect) */
    uint32_t               init_psn;
    uint32_t               view_acked; /* receiver: the root's window as */
    uint32_t               view_next;  /* last heard */
    uint32_t               ack_sent;   /* last cumulative ACK sent */
    int                    joined_sent;
    uint32_t               ackreq;     /* receiver: end of the last message
                                          (ack_per_msg) */
    uint32_t               ack_owed;   /* receiver: a SYNC asked its
                                          subtree for an ACK up to this
                                          PSN: until the ACK sent reaches
                                          it, every move goes up at once */

    /* reassembly of a message of several fragments */
    uint8_t                *asm_buf;
    size_t                 asm_size;
    uint32_t               asm_len;
    uint32_t               asm_off;
    int                    asm_active;

    /* timers (ns) */
    uint64_t               t_nack;     /* earliest NACK due */
    uint64_t               t_arrived;  /* the packet being received
                                          reached the host then (gaps it
                                          reveals are due slack after) */
    uint64_t               t_watch;    /* probe/SYNC/ping, liveness */
    uint64_t               t_busy;     /* the watch timer was last armed
                                          after an idle time (INF): a
                                          child's silence counts from then
                                          at the earliest - an idle group
                                          owes nobody an answer */
    unsigned               backoff;
    uint64_t               last_upstream;
    uint64_t               t_root;     /* receiver: last packet from the
                                          root */
    uint64_t               t_sync;     /* root: last PROBE/SYNC sent */
    uint64_t               t_disturb;  /* root: last NACK or SYNC: ACKs of
                                          packets sent before are no RTT
                                          sample */
    uint64_t               t_want;     /* receiver: last WANT_SYNC sent */
    uint64_t               t_abort;    /* next ABORT repetition */
    uint64_t               t_failed;
    unsigned               abort_tries;
    unsigned               abort_npending;
    uint8_t                *abort_pending; /* origin: per rank, ABORT not
                                              confirmed yet */
    uint64_t               srtt;
    uint64_t               rttvar;
    int                    rtt_valid;
    int                    tx_blocked;
    int                    ack_due;    /* receiver: packets or a child's
                                          ACK came: the ACK up is decided
                                          at the next progress, once per
                                          burst the transport hands over */

    uct_mc_rel_stats_t     stats;
};

static inline uct_mc_rel_slot_t *uct_mc_rel_slot(uct_mc_rel_stream_t *s,
                                                 uint32_t psn)
{
    return &s->slots[psn & s->mask];
}

static inline uint32_t uct_mc_rel_psn_min(uint32_t a, uint32_t b)
{
    return uct_mc_rel_psn_lt(a, b) ? a : b;
}

/* Tree: member v (relative rank) has parent (v - 1) / k and children
 * k * v + 1 .. k * v + k */
static inline unsigned uct_mc_rel_vrank(const uct_mc_rel_stream_t *s,
                                        unsigned rank)
{
    return (rank + s->size - s->root) % s->size;
}

static inline unsigned uct_mc_rel_rank(const uct_mc_rel_stream_t *s,
                                       unsigned vrank)
{
    return (vrank + s->root) % s->size;
}


/* mc_rel.c */

/* The retransmission timeout: srtt + 4 rttvar in [rto_min, rto_max] */
uint64_t uct_mc_rel_rto(const uct_mc_rel_stream_t *s);

/* The RTO doubled @a n times, at most rto_max */
uint64_t uct_mc_rel_backoff(const uct_mc_rel_stream_t *s, unsigned n);

/* RFC 6298 estimator */
void uct_mc_rel_rtt_sample(uct_mc_rel_stream_t *s, uint64_t rtt);

/* A header of @a type from this member of this stream */
void uct_mc_rel_hdr_init(const uct_mc_rel_stream_t *s,
                         uct_mc_rel_hdr_t *hdr, uint8_t type);

/* Pack @a hdr and send it with @a payload (the transport's status) */
ucs_status_t uct_mc_rel_xmit(uct_mc_rel_stream_t *s, int dest,
                             const uct_mc_rel_hdr_t *hdr,
                             const void *payload, size_t length);

/* The packet in @a slot, its sender knowing PSNs up to @a aux */
ucs_status_t uct_mc_rel_send_data(uct_mc_rel_stream_t *s, int dest,
                                  const uct_mc_rel_slot_t *slot,
                                  uint32_t aux, uint16_t flags);

/* PROBE or SYNC: psn = @a acked, aux = @a next, @a lagging (the root's
 * SYNC: its children whose subtree holds the window) */
void uct_mc_rel_send_sync(uct_mc_rel_stream_t *s, int dest,
                          uint8_t type, uint32_t acked, uint32_t next,
                          uint64_t lagging, uint64_t now);

/* @a origin: this member decided the failure: it multicasts the ABORT,
 * then repeats it by unicast to each member until that member confirms.
 * Otherwise it heard of it (and confirms to the sender, see
 * uct_mc_rel_recv). */
void uct_mc_rel_set_failed(uct_mc_rel_stream_t *s,
                           ucs_status_t status, int origin,
                           uint64_t now, const char *why);

/* Count (and log at debug level) a dropped packet */
void uct_mc_rel_drop(uct_mc_rel_stream_t *s, uct_mc_rel_drop_t drop,
                     const uct_mc_rel_hdr_t *hdr);

/* Waits for anything (the root, a child, its own window): the watch timer
 * runs */
int uct_mc_rel_busy(const uct_mc_rel_stream_t *s);

/* Restart the watch timer from its shortest interval (progress seen) */
void uct_mc_rel_watch_arm(uct_mc_rel_stream_t *s, uint64_t now);


/* mc_rel_tx.c: the root */

/* Transmit the packets queued in the window, in order */
void uct_mc_rel_root_transmit(uct_mc_rel_stream_t *s, uint64_t now);

/* Root: its children whose subtree has acknowledged no more than its
 * window's base (bit i: child i); 0 when the window is drained */
uint64_t uct_mc_rel_root_lagging(const uct_mc_rel_stream_t *s);

/* Root: the minimum over the children moved */
void uct_mc_rel_root_update(uct_mc_rel_stream_t *s, uint64_t now);

/* Root: NACK from child @a c for the PSNs in @a hdr */
void uct_mc_rel_root_nack(uct_mc_rel_stream_t *s,
                          uct_mc_rel_child_t *c,
                          const uct_mc_rel_hdr_t *hdr, uint64_t now);


/* mc_rel_rx.c: the members */

/* When a member sends its subtree's cumulative ACK (uct_mc_rel_rx_ack) */
typedef enum {
    UCT_MC_REL_ACK_BATCH,   /* it moved by a quarter of the window */
    UCT_MC_REL_ACK_OWED,    /* it reached what a SYNC asked for
                               (ack_owed), or as BATCH */
    UCT_MC_REL_ACK_CHANGED, /* it moved at all */
    UCT_MC_REL_ACK_FORCE    /* always: an answer (probe, ping, a SYNC that
                               shows the ACK may be lost) */
} uct_mc_rel_ack_mode_t;

/* The mode of the ACK decided at a progress: OWED while a SYNC's ACK is
 * owed (uct_mc_rel_stream_t.ack_owed), else BATCH */
uct_mc_rel_ack_mode_t uct_mc_rel_rx_ack_mode(const uct_mc_rel_stream_t *s);

/* Send the subtree's cumulative ACK to the parent when @a mode says so
 * (with @a want_sync: always, as a ping) */
void uct_mc_rel_rx_ack(uct_mc_rel_stream_t *s, uct_mc_rel_ack_mode_t mode,
                       int want_sync, uint64_t now);

/* NACK every missing PSN whose time has come (several gaps at once, up to
 * 64 PSNs per packet); rearm for the earliest next one */
void uct_mc_rel_rx_nack_timer(uct_mc_rel_stream_t *s, uint64_t now);

/* Packets from the parent or the root, checked by the parser */
void uct_mc_rel_rx_data(uct_mc_rel_stream_t *s,
                        const uct_mc_rel_hdr_t *hdr,
                        const void *payload, uint64_t now);

void uct_mc_rel_rx_probe(uct_mc_rel_stream_t *s,
                         const uct_mc_rel_hdr_t *hdr, uint64_t now);

void uct_mc_rel_rx_sync(uct_mc_rel_stream_t *s,
                        const uct_mc_rel_hdr_t *hdr, uint64_t now);

/* Member (not root): NACK from child @a c */
void uct_mc_rel_rx_nack_pkt(uct_mc_rel_stream_t *s,
                            uct_mc_rel_child_t *c,
                            const uct_mc_rel_hdr_t *hdr, uint64_t now);

#endif
