/**
 * ucx-o2m: the reliable multicast engine (API in mc_rel.h, protocol in
 * docs/multicast.md).
 *
 * One stream: the root multicasts DATA packets with consecutive 32-bit
 * PSNs.  The members form a k-ary tree rooted at the root (by rank relative
 * to it); each member tells its parent, by ACK, the PSN before which its
 * whole subtree has received everything (custody: a member keeps a packet
 * until its subtree acknowledged it, so that it can repair its children).
 * The root therefore hears only its k children, and its window advances to
 * the minimum they report.  A member that sees a gap NACKs the missing PSNs
 * to its parent after a small reorder slack; the parent repairs by unicast
 * when it has the packet, else remembers the NACK and NACKs upwards with the
 * number of members known to miss it; the root re-multicasts a PSN that
 * many members miss, and unicasts otherwise.  The tail is found from the
 * "next PSN" every DATA and SYNC carries: the root multicasts a SYNC when
 * its window stalls for a retransmission timeout (back-off up to rto_max),
 * and a member that waits for the root pings it through the tree
 * (ACK with WANT_SYNC).  Before the first data packet the root multicasts
 * join probes until the whole tree has answered.
 *
 * States: JOINING (root: probing; members: no probe seen yet) -> READY ->
 * FAILED (an ABORT from anywhere, a member declared dead by the liveness
 * callback, the peer timeout, or a protocol violation).  The member that
 * decides a failure multicasts an ABORT and repeats it by unicast to every
 * member until each has confirmed it (ABORT with CONFIRM) or is gone; every
 * failed member answers the stream's other packets with ABORT.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_rel.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>

#include <string.h>


#define UCT_MC_REL_MAX_WINDOW 32768
#define UCT_MC_REL_MAX_RADIX  64
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
    int                    is_root;
    int                    parent;     /* rank; -1 on the root */
    unsigned               nchildren;
    uct_mc_rel_child_t     *children;
    unsigned               remcast_thresh;

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
    uint32_t               ackreq;     /* end of the last message that asks
                                          for an ACK */

    /* reassembly of a message of several fragments */
    uint8_t                *asm_buf;
    size_t                 asm_size;
    uint32_t               asm_len;
    uint32_t               asm_off;
    int                    asm_active;

    /* timers (ns) */
    uint64_t               t_nack;     /* earliest NACK due */
    uint64_t               t_watch;    /* probe/SYNC/ping, liveness */
    unsigned               backoff;
    uint64_t               last_upstream;
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

    uct_mc_rel_stats_t     stats;
};


static void uct_mc_rel_watch_arm(uct_mc_rel_stream_t *s, uint64_t now);


void uct_mc_rel_config_default(uct_mc_rel_config_t *config)
{
    config->window         = 256;
    config->radix          = 4;
    config->mtu            = 1432;
    config->max_msg        = 256 * 1024; /* fits 256 packets of 1432 */
    config->reorder_slack  = 10000;
    config->rto_min        = 20000;
    config->rto_max        = 8000000;
    config->peer_timeout   = 0;
    config->remcast_thresh = 0;
}

static inline uct_mc_rel_slot_t *uct_mc_rel_slot(uct_mc_rel_stream_t *s,
                                                 uint32_t psn)
{
    return &s->slots[psn & s->mask];
}

static inline uint32_t uct_mc_rel_psn_min(uint32_t a, uint32_t b)
{
    return uct_mc_rel_psn_lt(a, b) ? a : b;
}

static uint64_t uct_mc_rel_rto(const uct_mc_rel_stream_t *s)
{
    uint64_t rto;

    rto = s->rtt_valid ? (s->srtt + 4 * s->rttvar) : (4 * s->cfg.rto_min);
    return ucs_min(ucs_max(rto, s->cfg.rto_min), s->cfg.rto_max);
}

/* The RTO doubled @a n times, at most rto_max */
static uint64_t uct_mc_rel_backoff(const uct_mc_rel_stream_t *s, unsigned n)
{
    uint64_t rto = uct_mc_rel_rto(s);

    while ((n-- > 0) && (rto < s->cfg.rto_max)) {
        rto *= 2;
    }
    return ucs_min(rto, s->cfg.rto_max);
}

/* RFC 6298 estimator */
static void uct_mc_rel_rtt_sample(uct_mc_rel_stream_t *s, uint64_t rtt)
{
    uint64_t delta;

    if (!s->rtt_valid) {
        s->srtt      = rtt;
        s->rttvar    = rtt / 2;
        s->rtt_valid = 1;
        return;
    }
    delta     = (rtt > s->srtt) ? (rtt - s->srtt) : (s->srtt - rtt);
    s->rttvar = (3 * s->rttvar + delta) / 4;
    s->srtt   = (7 * s->srtt + rtt) / 8;
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

static uct_mc_rel_child_t *uct_mc_rel_child(uct_mc_rel_stream_t *s,
                                            unsigned rank)
{
    unsigned v = uct_mc_rel_vrank(s, rank);
    unsigned first;

    if (v == 0) {
        return NULL;
    }
    if ((v - 1) / s->cfg.radix != s->vrank) {
        return NULL;
    }
    first = s->vrank * s->cfg.radix + 1;
    return &s->children[v - first];
}

static void uct_mc_rel_hdr_init(const uct_mc_rel_stream_t *s,
                                uct_mc_rel_hdr_t *hdr, uint8_t type)
{
    memset(hdr, 0, sizeof(*hdr));
    hdr->type     = type;
    hdr->src      = s->rank;
    hdr->group_id = s->group_id;
    hdr->epoch    = s->epoch;
    hdr->root     = s->root;
}

static ucs_status_t uct_mc_rel_xmit(uct_mc_rel_stream_t *s, int dest,
                                    const uct_mc_rel_hdr_t *hdr,
                                    const void *payload, size_t length)
{
    uint8_t buf[UCT_MC_REL_HDR_LEN];

    uct_mc_rel_pack(hdr, buf);
    return s->ops.send(s->arg, dest, buf, payload, length);
}

static ucs_status_t uct_mc_rel_send_data(uct_mc_rel_stream_t *s, int dest,
                                         const uct_mc_rel_slot_t *slot,
                                         uint32_t aux, uint16_t flags)
{
    uct_mc_rel_hdr_t hdr;

    uct_mc_rel_hdr_init(s, &hdr, UCT_MC_REL_PKT_DATA);
    hdr.flags       = slot->flags | flags;
    hdr.payload_len = slot->len;
    hdr.psn         = slot->psn;
    hdr.aux         = aux;
    hdr.msg_len     = slot->msg_len;
    hdr.offset      = slot->offset;
    return uct_mc_rel_xmit(s, dest, &hdr, slot->data, slot->len);
}

static void uct_mc_rel_send_sync(uct_mc_rel_stream_t *s, int dest,
                                 uint8_t type, uint32_t acked, uint32_t next,
                                 uint64_t now)
{
    uct_mc_rel_hdr_t hdr;

    uct_mc_rel_hdr_init(s, &hdr, type);
    hdr.psn = acked;
    hdr.aux = next;
    uct_mc_rel_xmit(s, dest, &hdr, NULL, 0);
    ++s->stats.tx_sync;
    s->t_disturb = now;
}

static void uct_mc_rel_send_abort(uct_mc_rel_stream_t *s, int dest,
                                  uint16_t flags)
{
    uct_mc_rel_hdr_t hdr;

    uct_mc_rel_hdr_init(s, &hdr, UCT_MC_REL_PKT_ABORT);
    hdr.flags  = flags;
    hdr.status = s->status;
    uct_mc_rel_xmit(s, dest, &hdr, NULL, 0);
}

/* Origin of a failure: ABORT by unicast to every member that has not
 * confirmed it (by an ABORT of its own) and is not gone */
static void uct_mc_rel_abort_resend(uct_mc_rel_stream_t *s, uint64_t now)
{
    unsigned r;

    for (r = 0; r < s->size; ++r) {
        if (!s->abort_pending[r]) {
            continue;
        }
        if ((s->ops.is_alive != NULL) && !s->ops.is_alive(s->arg, r)) {
            s->abort_pending[r] = 0;
            --s->abort_npending;
            continue;
        }
        uct_mc_rel_send_abort(s, r, 0);
    }
    s->t_abort = now + uct_mc_rel_backoff(s, s->abort_tries++);
}

/* @a origin: this member decided the failure: it multicasts the ABORT,
 * then repeats it by unicast to each member until that member confirms.
 * Otherwise it heard of it (and confirms to the sender, see
 * uct_mc_rel_recv). */
static void uct_mc_rel_set_failed(uct_mc_rel_stream_t *s,
                                  ucs_status_t status, int origin,
                                  uint64_t now, const char *why)
{
    if (s->state == UCT_MC_REL_ST_FAILED) {
        return;
    }

    ucs_diag("mc_rel group 0x%x root %u epoch %u: member %u fails the "
             "stream: %s (%s)", s->group_id, s->root, s->epoch, s->rank,
             why, ucs_status_string(status));
    s->state    = UCT_MC_REL_ST_FAILED;
    s->status   = status;
    s->t_nack   = UCT_MC_REL_TIME_INF;
    s->t_watch  = UCT_MC_REL_TIME_INF;
    s->t_abort  = UCT_MC_REL_TIME_INF;
    s->t_failed = now;
    if (origin) {
        uct_mc_rel_send_abort(s, UCT_MC_REL_DEST_MCAST, 0);
        s->abort_pending = ucs_calloc(s->size, 1, "mc_rel_abort");
        if (s->abort_pending != NULL) {
            memset(s->abort_pending, 1, s->size);
            s->abort_pending[s->rank] = 0;
            s->abort_npending         = s->size - 1;
            uct_mc_rel_abort_resend(s, now);
        }
    }
    if (s->ops.failed != NULL) {
        s->ops.failed(s->arg, status);
    }
}

void uct_mc_rel_fail(uct_mc_rel_stream_t *s, ucs_status_t status,
                     uint64_t now)
{
    uct_mc_rel_set_failed(s, (status < 0) ? status : UCS_ERR_IO_ERROR, 1,
                          now, "failed by the transport");
}

static void uct_mc_rel_drop(uct_mc_rel_stream_t *s, uct_mc_rel_drop_t drop,
                            const uct_mc_rel_hdr_t *hdr)
{
    ++s->stats.drop[drop];
    ucs_debug("mc_rel group 0x%x root %u: member %u drops a packet "
              "(type %u from %u psn %u): %s", s->group_id, s->root,
              s->rank, hdr ? hdr->type : 0, hdr ? hdr->src : 0,
              hdr ? hdr->psn : 0, uct_mc_rel_drop_name(drop));
}


/*
 * Sending side (root)
 */

/* Transmit the packets queued in the window, in order */
static void uct_mc_rel_root_transmit(uct_mc_rel_stream_t *s, uint64_t now)
{
    uct_mc_rel_slot_t *slot;
    ucs_status_t status;
    int sent = 0;

    if (s->state != UCT_MC_REL_ST_READY) {
        return;
    }

    while (s->high != s->next) {
        slot   = uct_mc_rel_slot(s, s->high);
        status = uct_mc_rel_send_data(s, UCT_MC_REL_DEST_MCAST, slot,
                                      s->high + 1, 0);
        if (status == UCS_ERR_NO_RESOURCE) {
            s->tx_blocked = 1;
            break;
        }
        slot->t_first = now;
        ++s->high;
        ++s->stats.tx_data;
        sent = 1;
    }

    if (sent && (s->t_watch == UCT_MC_REL_TIME_INF)) {
        s->backoff = 0;
        s->t_watch = now + uct_mc_rel_rto(s);
    }
}

ucs_status_t uct_mc_rel_send(uct_mc_rel_stream_t *s, const void *data,
                             size_t length, uint64_t now)
{
    size_t mtu = s->cfg.mtu;
    uct_mc_rel_slot_t *slot;
    size_t nfrags, offset, i;

    if (s->state == UCT_MC_REL_ST_FAILED) {
        return s->status;
    }
    if (!s->is_root) {
        return UCS_ERR_UNSUPPORTED;
    }

    if (length > s->cfg.max_msg) {
        return UCS_ERR_INVALID_PARAM;
    }
    nfrags = (length == 0) ? 1 : (length + mtu - 1) / mtu;
    if (nfrags > s->mask + 1) {
        return UCS_ERR_INVALID_PARAM;
    }
    if ((uint32_t)(s->next - s->base) + nfrags > s->mask + 1) {
        return UCS_ERR_NO_RESOURCE;
    }

    for (i = 0, offset = 0; i < nfrags; ++i, offset += mtu) {
        slot              = uct_mc_rel_slot(s, s->next);
        slot->psn         = s->next;
        slot->valid       = 1;
        slot->retx        = 0;
        slot->mcast_valid = 0;
        slot->weight      = 0;
        slot->msg_len     = length;
        slot->offset      = offset;
        slot->len         = ucs_min(mtu, length - offset);
        slot->flags       = (i == nfrags - 1) ? UCT_MC_REL_FLAG_ACK_REQ : 0;
        if (slot->len > 0) {
            memcpy(slot->data, UCS_PTR_BYTE_OFFSET(data, offset),
                   slot->len);
        }
        ++s->next;
    }
    ++s->stats.tx_msgs;

    uct_mc_rel_root_transmit(s, now);
    return UCS_OK;
}

/* Root: the minimum over the children moved */
static void uct_mc_rel_root_update(uct_mc_rel_stream_t *s, uint64_t now)
{
    uint32_t agg = s->high;
    uct_mc_rel_slot_t *slot;
    unsigned i;

    for (i = 0; i < s->nchildren; ++i) {
        if (!s->children[i].known) {
            return;
        }
        agg = uct_mc_rel_psn_min(agg, s->children[i].acked);
    }

    if (s->state == UCT_MC_REL_ST_JOINING) {
        /* every member answered a probe: data may flow */
        s->state   = UCT_MC_REL_ST_READY;
        s->t_watch = UCT_MC_REL_TIME_INF;
        uct_mc_rel_root_transmit(s, now);
        if (s->high == s->base) {
            /* nothing to send yet: the members learn the join is over */
            uct_mc_rel_send_sync(s, UCT_MC_REL_DEST_MCAST,
                                 UCT_MC_REL_PKT_SYNC, s->base, s->high, now);
            s->t_sync = now;
        }
        uct_mc_rel_watch_arm(s, now);
        return;
    }

    if (!uct_mc_rel_psn_lt(s->base, agg)) {
        return;
    }

    slot = uct_mc_rel_slot(s, agg - 1);
    if (!slot->retx && (slot->t_first > s->t_disturb)) {
        /* an ACK that no loss delayed: the tree's round trip */
        uct_mc_rel_rtt_sample(s, now - slot->t_first);
    }
    s->base    = agg;
    s->backoff = 0;
    if (s->base == s->high) {
        /* drained: tell the members, so that none waits for a tail */
        s->t_watch = UCT_MC_REL_TIME_INF;
        uct_mc_rel_send_sync(s, UCT_MC_REL_DEST_MCAST, UCT_MC_REL_PKT_SYNC,
                             s->base, s->high, now);
        s->t_sync  = now;
    } else {
        s->t_watch = now + uct_mc_rel_rto(s);
    }
}

/* Root: NACK from child @a c for the PSNs in @a hdr */
static void uct_mc_rel_root_nack(uct_mc_rel_stream_t *s,
                                 uct_mc_rel_child_t *c,
                                 const uct_mc_rel_hdr_t *hdr, uint64_t now)
{
    uint64_t rto = uct_mc_rel_rto(s);
    uct_mc_rel_slot_t *slot;
    uint32_t psn;
    unsigned i;

    for (i = 0; i < UCT_MC_REL_NACK_BITS; ++i) {
        psn = hdr->psn + i;
        if (!(hdr->bitmap & (1ull << i)) || uct_mc_rel_psn_lt(psn, s->base)) {
            continue; /* not named, or stale: everyone has it */
        }

        slot = uct_mc_rel_slot(s, psn);
        if (now - slot->t_weight > rto) {
            slot->weight   = 0;
            slot->t_weight = now;
        }
        slot->weight += hdr->aux;
        slot->retx    = 1;
        if (slot->mcast_valid && (now - slot->t_mcast < rto / 2)) {
            continue; /* a re-multicast of it is on its way */
        }

        if (slot->weight >= s->remcast_thresh) {
            uct_mc_rel_send_data(s, UCT_MC_REL_DEST_MCAST, slot, s->high,
                                 UCT_MC_REL_FLAG_REPAIR);
            slot->mcast_valid = 1;
            slot->t_mcast     = now;
            slot->weight      = 0;
            ++s->stats.tx_repair_mcast;
        } else {
            uct_mc_rel_send_data(s, c->rank, slot, s->high,
                                 UCT_MC_REL_FLAG_REPAIR);
            ++s->stats.tx_repair_ucast;
        }
    }
}


/*
 * Receiving side
 */

/* Waits for the root: not joined, missing packets, or the root's window
 * not drained as last heard */
static int uct_mc_rel_waits_upstream(const uct_mc_rel_stream_t *s)
{
    return !s->started || !s->ready_seen || (s->next != s->high) ||
           (s->view_acked != s->view_next) || s->expecting;
}

static int uct_mc_rel_child_lags(const uct_mc_rel_stream_t *s,
                                 const uct_mc_rel_child_t *c)
{
    uint32_t own = s->is_root ? s->high : s->next;

    return !c->known || (s->started && uct_mc_rel_psn_lt(c->acked, own));
}

static int uct_mc_rel_busy(const uct_mc_rel_stream_t *s)
{
    unsigned i;

    if (s->state == UCT_MC_REL_ST_FAILED) {
        return 0;
    }
    if (!s->is_root && uct_mc_rel_waits_upstream(s)) {
        return 1;
    }
    for (i = 0; i < s->nchildren; ++i) {
        if (uct_mc_rel_child_lags(s, &s->children[i])) {
            return 1;
        }
    }
    return s->is_root && (s->next != s->base);
}

/* Restart the watch timer from its shortest interval (progress seen) */
static void uct_mc_rel_watch_arm(uct_mc_rel_stream_t *s, uint64_t now)
{
    s->backoff = 0;
    s->t_watch = uct_mc_rel_busy(s) ? (now + uct_mc_rel_rto(s)) :
                 UCT_MC_REL_TIME_INF;
}

/* Send the subtree's cumulative ACK to the parent if it moved enough, or
 * always with @a force */
static void uct_mc_rel_rx_ack(uct_mc_rel_stream_t *s, int force,
                              int want_sync, uint64_t now)
{
    uint32_t agg = s->next;
    uint32_t batch = ucs_max(1, (s->mask + 1) / 4);
    uct_mc_rel_hdr_t hdr;
    int joined;
    unsigned i;

    joined = s->started;
    for (i = 0; i < s->nchildren; ++i) {
        if (!s->children[i].known) {
            joined = 0;
            break;
        }
        agg = uct_mc_rel_psn_min(agg, s->children[i].acked);
    }

    if (joined && uct_mc_rel_psn_lt(s->base, agg)) {
        s->base = agg; /* custody released */
    }

    uct_mc_rel_hdr_init(s, &hdr, UCT_MC_REL_PKT_ACK);
    if (!joined) {
        if (!want_sync) {
            return;
        }
        hdr.flags = UCT_MC_REL_FLAG_WANT_SYNC;
    } else {
        if (!force && s->joined_sent &&
            (!uct_mc_rel_psn_lt(s->ack_sent, agg) ||
             (((uint32_t)(agg - s->ack_sent) < batch) &&
              !(uct_mc_rel_psn_lt(s->ack_sent, s->ackreq) &&
                uct_mc_rel_psn_le(s->ackreq, agg))))) {
            return;
        }
        hdr.flags = UCT_MC_REL_FLAG_JOINED |
                    (want_sync ? UCT_MC_REL_FLAG_WANT_SYNC : 0);
        hdr.psn   = agg;
        s->ack_sent    = agg;
        s->joined_sent = 1;
    }

    if (want_sync) {
        s->t_want = now;
    }
    uct_mc_rel_xmit(s, s->parent, &hdr, NULL, 0);
    ++s->stats.tx_ack;
}

/* PSNs up to @a new_high exist: open their slots, NACK timers running */
static void uct_mc_rel_rx_extend(uct_mc_rel_stream_t *s, uint32_t new_high,
                                 uint64_t now)
{
    uint64_t due = now + s->cfg.reorder_slack;
    uct_mc_rel_slot_t *slot;

    if (!uct_mc_rel_psn_lt(s->high, new_high)) {
        return;
    }
    for (; s->high != new_high; ++s->high) {
        slot             = uct_mc_rel_slot(s, s->high);
        slot->psn        = s->high;
        slot->valid      = 0;
        slot->nack_tries = 0;
        slot->t_nack     = due;
    }
    s->t_nack = ucs_min(s->t_nack, due);
}

/* Hand over the fragment in @a slot; 0 when it breaks the message */
static int uct_mc_rel_rx_deliver(uct_mc_rel_stream_t *s,
                                 uct_mc_rel_slot_t *slot)
{
    uint8_t *buf;

    if (slot->offset == 0) {
        if (s->asm_active) {
            return 0; /* the previous message did not end */
        }
        if (slot->len == slot->msg_len) {
            ++s->stats.rx_msgs;
            s->ops.deliver(s->arg, slot->data, slot->len);
            return 1;
        }
        if (slot->msg_len > s->asm_size) {
            buf = ucs_realloc(s->asm_buf, slot->msg_len, "mc_rel_asm");
            if (buf == NULL) {
                return 0;
            }
            s->asm_buf  = buf;
            s->asm_size = slot->msg_len;
        }
        s->asm_active = 1;
        s->asm_len    = slot->msg_len;
        s->asm_off    = 0;
    } else if (!s->asm_active || (slot->offset != s->asm_off) ||
               (slot->msg_len != s->asm_len)) {
        return 0;
    }

    memcpy(s->asm_buf + slot->offset, slot->data, slot->len);
    s->asm_off += slot->len;
    if (s->asm_off == s->asm_len) {
        s->asm_active = 0;
        ++s->stats.rx_msgs;
        s->ops.deliver(s->arg, s->asm_buf, s->asm_len);
    }
    return 1;
}

/* Deliver what became contiguous */
static void uct_mc_rel_rx_advance(uct_mc_rel_stream_t *s, uint64_t now)
{
    uct_mc_rel_slot_t *slot;

    while (s->next != s->high) {
        slot = uct_mc_rel_slot(s, s->next);
        if (!slot->valid) {
            break;
        }
        ++s->next;
        if (!uct_mc_rel_rx_deliver(s, slot)) {
            uct_mc_rel_set_failed(s, UCS_ERR_IO_ERROR, 1, now,
                                  "a fragment does not continue its message");
            return;
        }
    }
    if (s->next == s->high) {
        s->t_nack = UCT_MC_REL_TIME_INF; /* no gap left */
    }
}

static int uct_mc_rel_child_wants(const uct_mc_rel_child_t *c, uint32_t psn)
{
    uint32_t d = psn - c->nack_base;

    return (d < UCT_MC_REL_NACK_BITS) && (c->nack_bits & (1ull << d));
}

/* Members (self + children that NACKed something this member lacks) known
 * to miss packets here */
static uint32_t uct_mc_rel_missing_count(const uct_mc_rel_stream_t *s)
{
    uint32_t count = 1;
    unsigned i;

    for (i = 0; i < s->nchildren; ++i) {
        if (s->children[i].nack_bits != 0) {
            count += s->children[i].nack_count;
        }
    }
    return ucs_min(count, s->size - 1);
}

static void uct_mc_rel_send_nack(uct_mc_rel_stream_t *s, uint32_t base,
                                 uint64_t bits)
{
    uct_mc_rel_hdr_t hdr;

    uct_mc_rel_hdr_init(s, &hdr, UCT_MC_REL_PKT_NACK);
    hdr.psn    = base;
    hdr.aux    = uct_mc_rel_missing_count(s);
    hdr.bitmap = bits;
    uct_mc_rel_xmit(s, s->parent, &hdr, NULL, 0);
    ++s->stats.tx_nack;
}

/* NACK every missing PSN whose time has come (several gaps at once, up to
 * 64 PSNs per packet); rearm for the earliest next one */
static void uct_mc_rel_rx_nack_timer(uct_mc_rel_stream_t *s, uint64_t now)
{
    uint64_t next_due = UCT_MC_REL_TIME_INF;
    uint32_t base = 0, psn, d;
    uct_mc_rel_slot_t *slot;
    uint64_t bits = 0;

    for (psn = s->next; psn != s->high; ++psn) {
        slot = uct_mc_rel_slot(s, psn);
        if (slot->valid) {
            continue;
        }
        if (slot->t_nack <= now) {
            d = psn - base;
            if ((bits != 0) && (d >= UCT_MC_REL_NACK_BITS)) {
                uct_mc_rel_send_nack(s, base, bits);
                bits = 0;
            }
            if (bits == 0) {
                base = psn;
                d    = 0;
            }
            bits |= 1ull << d;
            if (slot->nack_tries++ == 0) {
                slot->t_first = now;
            }
            /* losses are independent: the first retries come after one
             * RTO, then back off */
            slot->t_nack = now + uct_mc_rel_backoff(s,
                                                    (slot->nack_tries > 2) ?
                                                    slot->nack_tries - 2 : 0);
        }
        next_due = ucs_min(next_due, slot->t_nack);
    }
    if (bits != 0) {
        uct_mc_rel_send_nack(s, base, bits);
    }
    s->t_nack = next_due;
}

/* A data packet, first copy: store, serve children waiting for it */
static void uct_mc_rel_rx_store(uct_mc_rel_stream_t *s,
                                uct_mc_rel_slot_t *slot,
                                const uct_mc_rel_hdr_t *hdr,
                                const void *payload, uint64_t now)
{
    uct_mc_rel_child_t *c;
    unsigned i;

    slot->valid   = 1;
    slot->flags   = hdr->flags & UCT_MC_REL_FLAG_ACK_REQ;
    slot->len     = hdr->payload_len;
    slot->msg_len = hdr->msg_len;
    slot->offset  = hdr->offset;
    memcpy(slot->data, payload, hdr->payload_len);
    if (slot->nack_tries == 1) {
        uct_mc_rel_rtt_sample(s, now - slot->t_first);
    }
    if (hdr->flags & UCT_MC_REL_FLAG_ACK_REQ) {
        if (uct_mc_rel_psn_lt(s->ackreq, hdr->psn + 1)) {
            s->ackreq = hdr->psn + 1;
        }
    }
    ++s->stats.rx_data;

    for (i = 0; i < s->nchildren; ++i) {
        c = &s->children[i];
        if (uct_mc_rel_child_wants(c, hdr->psn)) {
            c->nack_bits &= ~(1ull << (hdr->psn - c->nack_base));
            uct_mc_rel_send_data(s, c->rank, slot, s->high,
                                 UCT_MC_REL_FLAG_REPAIR);
            ++s->stats.tx_repair_ucast;
        }
    }
}

static void uct_mc_rel_rx_data(uct_mc_rel_stream_t *s,
                               const uct_mc_rel_hdr_t *hdr,
                               const void *payload, uint64_t now)
{
    uct_mc_rel_slot_t *slot;

    if ((hdr->src != s->root) && (hdr->src != s->parent)) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_RANK, hdr);
        return;
    }
    if (!s->started) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_STATE, hdr);
        return;
    }
    if ((hdr->payload_len > s->cfg.mtu) || (hdr->msg_len > s->cfg.max_msg)) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_SIZE, hdr);
        return;
    }
    if (uct_mc_rel_psn_lt(hdr->psn, s->next)) {
        ++s->stats.rx_dup;
        s->last_upstream = now;
        return;
    }
    /* the PSN and what the sender knows both inside the window */
    if (((uint32_t)(hdr->psn - s->base) > s->mask) ||
        ((uint32_t)(hdr->aux - s->base) > s->mask + 1)) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_PSN, hdr);
        return;
    }

    s->last_upstream = now;
    slot = uct_mc_rel_slot(s, hdr->psn);
    if (uct_mc_rel_psn_lt(hdr->psn, s->high) && slot->valid) {
        ++s->stats.rx_dup;
        return;
    }

    s->ready_seen = 1;
    uct_mc_rel_rx_extend(s, hdr->aux, now);
    if (uct_mc_rel_psn_lt(s->view_next, hdr->aux)) {
        s->view_next = hdr->aux;
    }
    uct_mc_rel_rx_store(s, slot, hdr, payload, now);
    uct_mc_rel_rx_advance(s, now);
    if (s->state == UCT_MC_REL_ST_FAILED) {
        return;
    }
    uct_mc_rel_rx_ack(s, 0, 0, now);
    uct_mc_rel_watch_arm(s, now);
}

static void uct_mc_rel_rx_probe(uct_mc_rel_stream_t *s,
                                const uct_mc_rel_hdr_t *hdr, uint64_t now)
{
    uct_mc_rel_child_t *c;
    unsigned i;

    if ((hdr->src != s->root) && (hdr->src != s->parent)) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_RANK, hdr);
        return;
    }

    s->last_upstream = now;
    if (!s->started) {
        s->state      = UCT_MC_REL_ST_READY;
        s->started    = 1;
        s->init_psn   = hdr->psn;
        s->base       = hdr->psn;
        s->next       = hdr->psn;
        s->high       = hdr->psn;
        s->view_acked = hdr->psn;
        s->view_next  = hdr->psn;
        s->ack_sent   = hdr->psn;
        s->ackreq     = hdr->psn;
        for (i = 0; i < s->nchildren; ++i) {
            c = &s->children[i];
            /* before the first data, every subtree is at the first PSN */
            if (c->known && (c->acked != hdr->psn)) {
                c->known = 0;
            }
        }
        uct_mc_rel_watch_arm(s, now);
    } else if ((hdr->psn != s->init_psn) || s->ready_seen) {
        /* a probe repeated late, after data: nothing to learn */
        return;
    }

    /* answer every probe: the ACK of the previous one may be lost */
    uct_mc_rel_rx_ack(s, 1, 0, now);
}

static void uct_mc_rel_rx_sync(uct_mc_rel_stream_t *s,
                               const uct_mc_rel_hdr_t *hdr, uint64_t now)
{
    int news;

    if ((hdr->src != s->root) && (hdr->src != s->parent)) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_RANK, hdr);
        return;
    }
    if (!s->started) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_STATE, hdr);
        return;
    }
    if (uct_mc_rel_psn_lt(hdr->aux, s->base)) {
        return; /* delayed: older than what the subtree has */
    }
    /* what everyone has cannot be beyond what this member has, nor the
     * root's next PSN beyond the window */
    if (uct_mc_rel_psn_lt(s->next, hdr->psn) ||
        ((uint32_t)(hdr->aux - s->base) > s->mask + 1)) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_PSN, hdr);
        return;
    }

    news             = !s->ready_seen || uct_mc_rel_psn_lt(s->high, hdr->aux);
    s->last_upstream = now;
    s->ready_seen    = 1;
    if (uct_mc_rel_psn_le(s->view_next, hdr->aux) &&
        uct_mc_rel_psn_le(s->view_acked, hdr->psn)) {
        news         |= (s->view_acked != hdr->psn) ||
                        (s->view_next != hdr->aux);
        s->view_acked = hdr->psn;
        s->view_next  = hdr->aux;
    }
    uct_mc_rel_rx_extend(s, hdr->aux, now);
    if ((hdr->src == s->root) && (hdr->psn != hdr->aux)) {
        /* the root's window stalls: our ACK may be lost */
        uct_mc_rel_rx_ack(s, 1, 0, now);
    }
    /* an answer without news keeps the ping's back-off */
    if (news || !uct_mc_rel_busy(s) || (s->t_watch == UCT_MC_REL_TIME_INF)) {
        uct_mc_rel_watch_arm(s, now);
    }
}

/* A child waits for news from the root */
static void uct_mc_rel_want_sync(uct_mc_rel_stream_t *s,
                                 uct_mc_rel_child_t *c, uint64_t now)
{
    uint64_t rto = uct_mc_rel_rto(s);

    if (s->is_root) {
        if ((now - s->t_sync) >= rto / 2) {
            s->t_sync = now;
            if (s->state == UCT_MC_REL_ST_JOINING) {
                uct_mc_rel_send_sync(s, UCT_MC_REL_DEST_MCAST,
                                     UCT_MC_REL_PKT_PROBE, s->base, s->base,
                                     now);
            } else {
                uct_mc_rel_send_sync(s, UCT_MC_REL_DEST_MCAST,
                                     UCT_MC_REL_PKT_SYNC, s->base, s->high,
                                     now);
            }
        }
        return;
    }

    if (s->ready_seen) {
        uct_mc_rel_send_sync(s, c->rank, UCT_MC_REL_PKT_SYNC, s->view_acked,
                             s->view_next, now);
    } else if (s->started) {
        /* the join is not over: what the root said so far */
        uct_mc_rel_send_sync(s, c->rank, UCT_MC_REL_PKT_PROBE, s->init_psn,
                             s->init_psn, now);
    }
    if (uct_mc_rel_waits_upstream(s) && (now - s->t_want >= rto)) {
        uct_mc_rel_rx_ack(s, 1, 1, now);
    }
}

static void uct_mc_rel_rx_ack_pkt(uct_mc_rel_stream_t *s,
                                  uct_mc_rel_child_t *c,
                                  const uct_mc_rel_hdr_t *hdr, uint64_t now)
{
    uint32_t d;

    if (hdr->flags & UCT_MC_REL_FLAG_JOINED) {
        if (s->is_root || s->started) {
            if (c->known && uct_mc_rel_psn_lt(hdr->psn, c->acked)) {
                c->last_heard = now; /* reordered, older */
                return;
            }
            /* not beyond what exists (root) or the window (member) */
            if ((s->is_root && uct_mc_rel_psn_lt(s->high, hdr->psn)) ||
                ((uint32_t)(hdr->psn - s->base) > s->mask + 1)) {
                uct_mc_rel_drop(s, UCT_MC_REL_DROP_PSN, hdr);
                return;
            }
        }
        c->known = 1;
        c->acked = hdr->psn;
        /* what it NACKed before its ACK it has now */
        d        = c->acked - c->nack_base;
        if (uct_mc_rel_psn_le(c->acked, c->nack_base)) {
            /* nothing */
        } else if (d >= UCT_MC_REL_NACK_BITS) {
            c->nack_bits = 0;
        } else {
            c->nack_bits &= ~((1ull << d) - 1);
        }
    }
    c->last_heard = now;

    if (hdr->flags & UCT_MC_REL_FLAG_WANT_SYNC) {
        uct_mc_rel_want_sync(s, c, now);
    }

    if (s->is_root) {
        uct_mc_rel_root_update(s, now);
    } else {
        uct_mc_rel_rx_ack(s, 0, 0, now);
    }
    if (s->t_watch == UCT_MC_REL_TIME_INF) {
        uct_mc_rel_watch_arm(s, now);
    }
}

/* Member (not root): NACK from child @a c */
static void uct_mc_rel_rx_nack_pkt(uct_mc_rel_stream_t *s,
                                   uct_mc_rel_child_t *c,
                                   const uct_mc_rel_hdr_t *hdr, uint64_t now)
{
    uint64_t lacked = 0;
    uct_mc_rel_slot_t *slot;
    uint32_t psn, last;
    unsigned i;

    if (!s->started) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_STATE, hdr);
        return;
    }
    last = hdr->psn + 63 - __builtin_clzll(hdr->bitmap);
    if (uct_mc_rel_psn_lt(last, s->base)) {
        c->last_heard = now; /* delayed: it has them all by now */
        return;
    }
    if ((uint32_t)(last - s->base) > s->mask) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_PSN, hdr);
        return;
    }

    c->last_heard = now;
    ++s->stats.rx_nack;
    uct_mc_rel_rx_extend(s, last + 1, now);

    for (i = 0; i < UCT_MC_REL_NACK_BITS; ++i) {
        psn = hdr->psn + i;
        if (!(hdr->bitmap & (1ull << i)) || uct_mc_rel_psn_lt(psn, s->base)) {
            continue;
        }
        slot = uct_mc_rel_slot(s, psn);
        if (slot->valid) {
            uct_mc_rel_send_data(s, c->rank, slot, s->high,
                                 UCT_MC_REL_FLAG_REPAIR);
            ++s->stats.tx_repair_ucast;
        } else {
            lacked |= 1ull << i;
        }
    }

    c->nack_base  = hdr->psn;
    c->nack_bits  = lacked;
    c->nack_count = hdr->aux;
    if (lacked != 0) {
        /* tell the parent at once how many miss them */
        uct_mc_rel_send_nack(s, hdr->psn, lacked);
    }
    uct_mc_rel_watch_arm(s, now);
}

ucs_status_t uct_mc_rel_recv(uct_mc_rel_stream_t *s, const void *packet,
                             size_t length, uint64_t now)
{
    uct_mc_rel_child_t *c = NULL;
    uct_mc_rel_drop_t drop;
    uct_mc_rel_hdr_t hdr;

    if (uct_mc_rel_parse(packet, length, &hdr, &drop) != UCS_OK) {
        uct_mc_rel_drop(s, drop, NULL);
        goto out;
    }
    if ((hdr.group_id != s->group_id) || (hdr.root != s->root)) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_STREAM, &hdr);
        goto out;
    }
    if (hdr.epoch != s->epoch) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_EPOCH, &hdr);
        goto out;
    }
    if ((hdr.src >= s->size) || (hdr.src == s->rank)) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_RANK, &hdr);
        goto out;
    }

    if (s->state == UCT_MC_REL_ST_FAILED) {
        if (hdr.type != UCT_MC_REL_PKT_ABORT) {
            /* tell any member still talking to us */
            uct_mc_rel_send_abort(s, hdr.src, 0);
            goto out;
        }
        if ((s->abort_pending != NULL) && s->abort_pending[hdr.src]) {
            s->abort_pending[hdr.src] = 0; /* it knows */
            --s->abort_npending;
        }
        if (!(hdr.flags & UCT_MC_REL_FLAG_CONFIRM)) {
            uct_mc_rel_send_abort(s, hdr.src, UCT_MC_REL_FLAG_CONFIRM);
        }
        goto out;
    }

    if ((hdr.type == UCT_MC_REL_PKT_ACK) ||
        (hdr.type == UCT_MC_REL_PKT_NACK)) {
        c = uct_mc_rel_child(s, hdr.src);
        if ((c == NULL) && s->is_root &&
            (hdr.type == UCT_MC_REL_PKT_ACK) &&
            (hdr.flags == UCT_MC_REL_FLAG_WANT_SYNC)) {
            /* a member whose parent is gone asks the root directly */
            uct_mc_rel_want_sync(s, NULL, now);
            goto out;
        }
        if (c == NULL) {
            uct_mc_rel_drop(s, UCT_MC_REL_DROP_RANK, &hdr);
            goto out;
        }
        if ((hdr.type == UCT_MC_REL_PKT_NACK) && (hdr.aux >= s->size)) {
            uct_mc_rel_drop(s, UCT_MC_REL_DROP_FIELD, &hdr);
            goto out;
        }
    }

    switch (hdr.type) {
    case UCT_MC_REL_PKT_DATA:
        if (s->is_root) {
            uct_mc_rel_drop(s, UCT_MC_REL_DROP_RANK, &hdr);
        } else {
            uct_mc_rel_rx_data(s, &hdr,
                               UCS_PTR_BYTE_OFFSET(packet,
                                                   UCT_MC_REL_HDR_LEN),
                               now);
        }
        break;
    case UCT_MC_REL_PKT_PROBE:
    case UCT_MC_REL_PKT_SYNC:
        if (s->is_root) {
            uct_mc_rel_drop(s, UCT_MC_REL_DROP_RANK, &hdr);
        } else if (hdr.type == UCT_MC_REL_PKT_PROBE) {
            uct_mc_rel_rx_probe(s, &hdr, now);
        } else {
            uct_mc_rel_rx_sync(s, &hdr, now);
        }
        break;
    case UCT_MC_REL_PKT_ACK:
        uct_mc_rel_rx_ack_pkt(s, c, &hdr, now);
        break;
    case UCT_MC_REL_PKT_NACK:
        if (!s->is_root) {
            uct_mc_rel_rx_nack_pkt(s, c, &hdr, now);
        } else if (s->state != UCT_MC_REL_ST_READY) {
            uct_mc_rel_drop(s, UCT_MC_REL_DROP_STATE, &hdr);
        } else if (uct_mc_rel_psn_lt(hdr.psn + 63 -
                                     __builtin_clzll(hdr.bitmap), s->base)) {
            c->last_heard = now; /* delayed: all acknowledged by now */
        } else if (!uct_mc_rel_psn_lt(hdr.psn + 63 -
                                      __builtin_clzll(hdr.bitmap),
                                      s->high) ||
                   ((uint32_t)(s->high - hdr.psn) > s->mask + 64)) {
            uct_mc_rel_drop(s, UCT_MC_REL_DROP_PSN, &hdr);
        } else {
            c->last_heard = now;
            s->t_disturb  = now;
            ++s->stats.rx_nack;
            uct_mc_rel_root_nack(s, c, &hdr, now);
        }
        break;
    case UCT_MC_REL_PKT_ABORT:
        uct_mc_rel_set_failed(s, hdr.status, 0, now, "ABORT received");
        if (!(hdr.flags & UCT_MC_REL_FLAG_CONFIRM)) {
            uct_mc_rel_send_abort(s, hdr.src, UCT_MC_REL_FLAG_CONFIRM);
        }
        break;
    default:
        /* the parser accepts no other type */
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_TYPE, &hdr);
        break;
    }

out:
    return uct_mc_rel_status(s);
}


/*
 * Timers
 */

/* A member waited on for a timeout: dead, or silent past peer_timeout? */
static int uct_mc_rel_check_peer(uct_mc_rel_stream_t *s, unsigned rank,
                                 uint64_t last_heard, uint64_t now)
{
    if ((s->ops.is_alive != NULL) && !s->ops.is_alive(s->arg, rank)) {
        uct_mc_rel_set_failed(s, UCS_ERR_CONNECTION_RESET, 1, now,
                              "a member waited on is gone");
        return 0;
    }
    if ((s->cfg.peer_timeout != 0) &&
        (now - last_heard > s->cfg.peer_timeout)) {
        uct_mc_rel_set_failed(s, UCS_ERR_TIMED_OUT, 1, now,
                              "a member waited on is silent past "
                              "peer_timeout");
        return 0;
    }
    return 1;
}

/* A plain WANT_SYNC ping (without ACK), to the root when the parent is
 * gone */
static void uct_mc_rel_send_ping(uct_mc_rel_stream_t *s, unsigned dest,
                                 uint64_t now)
{
    uct_mc_rel_hdr_t hdr;

    uct_mc_rel_hdr_init(s, &hdr, UCT_MC_REL_PKT_ACK);
    hdr.flags = UCT_MC_REL_FLAG_WANT_SYNC;
    s->t_want = now;
    uct_mc_rel_xmit(s, dest, &hdr, NULL, 0);
    ++s->stats.tx_ack;
}

static inline int uct_mc_rel_alive(uct_mc_rel_stream_t *s, unsigned rank)
{
    return (s->ops.is_alive == NULL) || s->ops.is_alive(s->arg, rank);
}

/* A member waiting for the root, silent for a timeout: ping through the
 * tree; fail when packets are missing and the parent or the root is gone,
 * or on the peer timeout.  A member that has all it knows of does not fail
 * for a gone parent (it asks the root directly) or root (then nothing is
 * coming: finished is not failed).  Returns 0 when the stream failed. */
static int uct_mc_rel_watch_upstream(uct_mc_rel_stream_t *s, uint64_t now)
{
    int lacking = !s->started || (s->next != s->high);

    if (lacking) {
        if (!uct_mc_rel_alive(s, s->parent) ||
            !uct_mc_rel_alive(s, s->root)) {
            uct_mc_rel_set_failed(s, UCS_ERR_CONNECTION_RESET, 1, now,
                                  "the parent or the root is gone while "
                                  "packets are missing");
            return 0;
        }
        uct_mc_rel_rx_ack(s, 1, 1, now);
    } else if (!uct_mc_rel_alive(s, s->root)) {
        if (s->expecting) {
            uct_mc_rel_set_failed(s, UCS_ERR_CONNECTION_RESET, 1, now,
                                  "the root is gone while a message is "
                                  "expected");
            return 0;
        }
        s->view_acked = s->next;
        s->view_next  = s->next;
        return 1;
    } else if (!uct_mc_rel_alive(s, s->parent)) {
        uct_mc_rel_send_ping(s, s->root, now);
    } else {
        uct_mc_rel_rx_ack(s, 1, 1, now);
    }

    if ((s->cfg.peer_timeout != 0) &&
        (now - s->last_upstream > s->cfg.peer_timeout)) {
        uct_mc_rel_set_failed(s, UCS_ERR_TIMED_OUT, 1, now,
                              "the root or the parent is silent past "
                              "peer_timeout");
        return 0;
    }
    return 1;
}

static void uct_mc_rel_watch_fire(uct_mc_rel_stream_t *s, uint64_t now)
{
    uct_mc_rel_child_t *c;
    unsigned i;

    if (!uct_mc_rel_busy(s)) {
        s->t_watch = UCT_MC_REL_TIME_INF;
        return;
    }

    if (s->is_root) {
        s->t_sync = now;
        if (s->state == UCT_MC_REL_ST_JOINING) {
            uct_mc_rel_send_sync(s, UCT_MC_REL_DEST_MCAST,
                                 UCT_MC_REL_PKT_PROBE, s->base, s->base, now);
        } else if (s->high != s->base) {
            uct_mc_rel_send_sync(s, UCT_MC_REL_DEST_MCAST,
                                 UCT_MC_REL_PKT_SYNC, s->base, s->high, now);
        }
    } else if (uct_mc_rel_waits_upstream(s) &&
               !uct_mc_rel_watch_upstream(s, now)) {
        return;
    }

    for (i = 0; i < s->nchildren; ++i) {
        c = &s->children[i];
        if (uct_mc_rel_child_lags(s, c) &&
            !uct_mc_rel_check_peer(s, c->rank, c->last_heard, now)) {
            return;
        }
    }

    ++s->backoff;
    s->t_watch = now + uct_mc_rel_backoff(s, s->backoff);
}

ucs_status_t uct_mc_rel_progress(uct_mc_rel_stream_t *s, uint64_t now)
{
    if (s->state == UCT_MC_REL_ST_FAILED) {
        if ((s->abort_npending > 0) && (now >= s->t_abort)) {
            if ((s->cfg.peer_timeout != 0) &&
                (now - s->t_failed > s->cfg.peer_timeout)) {
                s->abort_npending = 0; /* the rest is silent: give up */
            } else {
                uct_mc_rel_abort_resend(s, now);
            }
        }
        return s->status;
    }

    if (s->tx_blocked) {
        s->tx_blocked = 0;
        uct_mc_rel_root_transmit(s, now);
    }
    if (now >= s->t_nack) {
        uct_mc_rel_rx_nack_timer(s, now);
    }
    if ((s->state != UCT_MC_REL_ST_FAILED) && (now >= s->t_watch)) {
        uct_mc_rel_watch_fire(s, now);
    }
    return uct_mc_rel_status(s);
}

uint64_t uct_mc_rel_next_deadline(const uct_mc_rel_stream_t *s)
{
    if (s->state == UCT_MC_REL_ST_FAILED) {
        return (s->abort_npending > 0) ? s->t_abort : UCT_MC_REL_TIME_INF;
    }
    if (s->tx_blocked) {
        return 0;
    }
    return ucs_min(s->t_nack, s->t_watch);
}

ucs_status_t uct_mc_rel_status(const uct_mc_rel_stream_t *s)
{
    switch (s->state) {
    case UCT_MC_REL_ST_FAILED:
        return s->status;
    case UCT_MC_REL_ST_JOINING:
        return s->is_root ? UCS_INPROGRESS : UCS_OK;
    default:
        return UCS_OK;
    }
}

ucs_status_t uct_mc_rel_flush(const uct_mc_rel_stream_t *s)
{
    unsigned i;

    if (s->state == UCT_MC_REL_ST_FAILED) {
        return s->status;
    }
    if (s->is_root) {
        return ((s->state == UCT_MC_REL_ST_READY) && (s->base == s->next)) ?
               UCS_OK : UCS_INPROGRESS;
    }
    if (!s->started) {
        return UCS_INPROGRESS;
    }
    for (i = 0; i < s->nchildren; ++i) {
        if (uct_mc_rel_child_lags(s, &s->children[i])) {
            return UCS_INPROGRESS;
        }
    }
    return UCS_OK;
}

void uct_mc_rel_expect(uct_mc_rel_stream_t *s, int expect, uint64_t now)
{
    if (s->is_root || (s->state == UCT_MC_REL_ST_FAILED) ||
        (!!expect == s->expecting)) {
        return;
    }
    s->expecting = !!expect;
    if (s->expecting) {
        s->last_upstream = now; /* the silence starts now */
    }
    uct_mc_rel_watch_arm(s, now);
}

unsigned uct_mc_rel_tx_space(const uct_mc_rel_stream_t *s)
{
    return s->mask + 1 - (uint32_t)(s->next - s->base);
}

void uct_mc_rel_stats(const uct_mc_rel_stream_t *s, uct_mc_rel_stats_t *stats)
{
    *stats = s->stats;
}


/*
 * Creation
 */

static ucs_status_t uct_mc_rel_check_params(const uct_mc_rel_params_t *p)
{
    const uct_mc_rel_config_t *cfg = p->config;

    if ((cfg == NULL) || (p->ops == NULL) || (p->ops->send == NULL) ||
        (p->ops->deliver == NULL)) {
        ucs_error("mc_rel: config, send and deliver are required");
        return UCS_ERR_INVALID_PARAM;
    }
    if ((p->num_members < 2) || (p->num_members > UCT_MC_REL_MAX_MEMBERS) ||
        (p->my_rank >= p->num_members) || (p->root >= p->num_members)) {
        ucs_error("mc_rel: rank %u / root %u of %u members out of range",
                  p->my_rank, p->root, p->num_members);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((cfg->window < 2) || (cfg->window > UCT_MC_REL_MAX_WINDOW) ||
        (cfg->window & (cfg->window - 1))) {
        ucs_error("mc_rel: window %u is not a power of two in 2..%u",
                  cfg->window, UCT_MC_REL_MAX_WINDOW);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((cfg->radix < 1) || (cfg->radix > UCT_MC_REL_MAX_RADIX) ||
        (cfg->mtu < 1) || (cfg->mtu > UINT16_MAX - UCT_MC_REL_HDR_LEN) ||
        (cfg->max_msg > UINT32_MAX) ||
        (cfg->max_msg > (size_t)cfg->window * cfg->mtu) ||
        (cfg->rto_min == 0) ||
        (cfg->rto_max < cfg->rto_min) ||
        (cfg->rto_max > UCT_MC_REL_MAX_TIME) ||
        (cfg->reorder_slack > cfg->rto_max) ||
        (cfg->peer_timeout > UCT_MC_REL_MAX_TIME)) {
        ucs_error("mc_rel: radix %u (1..%u), mtu %zu, max_msg %zu (at most "
                  "window * mtu), RTO "
                  "%lu..%lu ns, reorder slack %lu ns (at most the RTO) or "
                  "peer timeout %lu ns out of range", cfg->radix,
                  UCT_MC_REL_MAX_RADIX, cfg->mtu, cfg->max_msg,
                  cfg->rto_min, cfg->rto_max, cfg->reorder_slack,
                  cfg->peer_timeout);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

ucs_status_t uct_mc_rel_stream_create(const uct_mc_rel_params_t *params,
                                      uint64_t now,
                                      uct_mc_rel_stream_t **stream_p)
{
    uct_mc_rel_stream_t *s;
    ucs_status_t status;
    unsigned i, first, window;

    status = uct_mc_rel_check_params(params);
    if (status != UCS_OK) {
        return status;
    }

    s = ucs_calloc(1, sizeof(*s), "mc_rel_stream");
    if (s == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    s->cfg      = *params->config;
    s->ops      = *params->ops;
    s->arg      = params->arg;
    s->group_id = params->group_id;
    s->epoch    = params->epoch;
    s->size     = params->num_members;
    s->rank     = params->my_rank;
    s->root     = params->root;
    s->vrank    = uct_mc_rel_vrank(s, s->rank);
    s->is_root  = (s->rank == s->root);
    s->parent   = s->is_root ? -1 :
                  (int)uct_mc_rel_rank(s, (s->vrank - 1) / s->cfg.radix);
    s->remcast_thresh = s->cfg.remcast_thresh ? s->cfg.remcast_thresh :
                        ucs_max(2, s->size / 8);
    window      = s->cfg.window;
    s->mask     = window - 1;

    first = s->vrank * s->cfg.radix + 1;
    if (first < s->size) {
        s->nchildren = ucs_min(s->cfg.radix, s->size - first);
    }
    s->children = ucs_calloc(ucs_max(s->nchildren, 1), sizeof(*s->children),
                             "mc_rel_children");
    s->slots    = ucs_calloc(window, sizeof(*s->slots), "mc_rel_slots");
    s->storage  = ucs_malloc((size_t)window * s->cfg.mtu, "mc_rel_storage");
    if ((s->children == NULL) || (s->slots == NULL) ||
        (s->storage == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }

    for (i = 0; i < window; ++i) {
        s->slots[i].data = s->storage + (size_t)i * s->cfg.mtu;
    }
    for (i = 0; i < s->nchildren; ++i) {
        s->children[i].rank       = uct_mc_rel_rank(s, first + i);
        s->children[i].last_heard = now;
    }

    s->state         = UCT_MC_REL_ST_JOINING;
    s->status        = UCS_OK;
    s->t_nack        = UCT_MC_REL_TIME_INF;
    s->last_upstream = now;
    if (s->is_root) {
        s->started = 1;
        s->base    = params->init_psn;
        s->next    = params->init_psn;
        s->high    = params->init_psn;
        s->t_watch = now; /* the first probe at the first progress */
    } else {
        s->t_watch = now + uct_mc_rel_rto(s);
    }

    *stream_p = s;
    return UCS_OK;

err_free:
    ucs_free(s->storage);
    ucs_free(s->slots);
    ucs_free(s->children);
    ucs_free(s);
    return status;
}

void uct_mc_rel_stream_destroy(uct_mc_rel_stream_t *s)
{
    ucs_free(s->abort_pending);
    ucs_free(s->asm_buf);
    ucs_free(s->storage);
    ucs_free(s->slots);
    ucs_free(s->children);
    ucs_free(s);
}
