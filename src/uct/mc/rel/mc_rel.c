/**
 * ucx-o2m: the reliable multicast engine (API in mc_rel.h, protocol in
 * docs/multicast.md).  This file: streams, packet dispatch, timers and
 * failure; the root's side in mc_rel_tx.c, the members' in mc_rel_rx.c.
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
 * which members answer only when it shows them a gap (NACK) or that their
 * ACK may be lost; a member that misses packets pings the root through
 * the tree (ACK with WANT_SYNC).  Without loss a member sends one ACK per
 * batch of data and nothing while idle.  Before the first data packet the
 * root multicasts join probes until the whole tree has answered.
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

#include "mc_rel_int.h"


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
    config->test_drop      = 0;
    config->ack_per_msg    = 0;
}

uint64_t uct_mc_rel_rto(const uct_mc_rel_stream_t *s)
{
    uint64_t rto;

    rto = s->rtt_valid ? (s->srtt + 4 * s->rttvar) : (4 * s->cfg.rto_min);
    return ucs_min(ucs_max(rto, s->cfg.rto_min), s->cfg.rto_max);
}

uint64_t uct_mc_rel_backoff(const uct_mc_rel_stream_t *s, unsigned n)
{
    uint64_t rto = uct_mc_rel_rto(s);

    while ((n-- > 0) && (rto < s->cfg.rto_max)) {
        rto *= 2;
    }
    return ucs_min(rto, s->cfg.rto_max);
}

void uct_mc_rel_rtt_sample(uct_mc_rel_stream_t *s, uint64_t rtt)
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

void uct_mc_rel_hdr_init(const uct_mc_rel_stream_t *s,
                         uct_mc_rel_hdr_t *hdr, uint8_t type)
{
    memset(hdr, 0, sizeof(*hdr));
    hdr->type     = type;
    hdr->src      = s->rank;
    hdr->group_id = s->group_id;
    hdr->epoch    = s->epoch;
    hdr->root     = s->root;
}

ucs_status_t uct_mc_rel_xmit(uct_mc_rel_stream_t *s, int dest,
                             const uct_mc_rel_hdr_t *hdr,
                             const void *payload, size_t length)
{
    uint8_t buf[UCT_MC_REL_HDR_LEN];

    uct_mc_rel_pack(hdr, buf);
    return s->ops.send(s->arg, dest, buf, payload, length);
}

ucs_status_t uct_mc_rel_send_data(uct_mc_rel_stream_t *s, int dest,
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

void uct_mc_rel_send_sync(uct_mc_rel_stream_t *s, int dest,
                          uint8_t type, uint32_t acked, uint32_t next,
                          uint64_t lagging, uint64_t now)
{
    uct_mc_rel_hdr_t hdr;

    uct_mc_rel_hdr_init(s, &hdr, type);
    hdr.psn    = acked;
    hdr.aux    = next;
    hdr.bitmap = lagging;
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

void uct_mc_rel_set_failed(uct_mc_rel_stream_t *s,
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

void uct_mc_rel_drop(uct_mc_rel_stream_t *s, uct_mc_rel_drop_t drop,
                     const uct_mc_rel_hdr_t *hdr)
{
    ++s->stats.drop[drop];
    ucs_debug("mc_rel group 0x%x root %u: member %u drops a packet "
              "(type %u from %u psn %u): %s", s->group_id, s->root,
              s->rank, hdr ? hdr->type : 0, hdr ? hdr->src : 0,
              hdr ? hdr->psn : 0, uct_mc_rel_drop_name(drop));
}

/* Waits for the root: not joined, missing packets, or its user waits for
 * a message.  Not for the root's window to drain: a member that has all
 * it knows of cannot tell a lost tail from a quiet root, and asking the
 * root after every burst cost a ping, a SYNC and every member's re-ACK
 * per burst; the root, which knows its window is not acknowledged, sends
 * the SYNC that reveals a lost tail (uct_mc_rel_watch_fire) */
static int uct_mc_rel_waits_upstream(const uct_mc_rel_stream_t *s)
{
    return !s->started || !s->ready_seen || (s->next != s->high) ||
           s->expecting;
}

/* The root waits for a child that has not acknowledged everything sent; a
 * member only for one that has not acknowledged what a SYNC asked for
 * (ACKs on demand: the children of a member owe nothing else) */
static int uct_mc_rel_child_lags(const uct_mc_rel_stream_t *s,
                                 const uct_mc_rel_child_t *c)
{
    uint32_t own = s->is_root ? s->high :
                   uct_mc_rel_psn_min(s->next, s->ack_owed);

    return !c->known || (s->started && uct_mc_rel_psn_lt(c->acked, own));
}

int uct_mc_rel_busy(const uct_mc_rel_stream_t *s)
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

/* A member that waits only because its user expects a message: it has
 * everything it knows of, the join is over, no child owes an ACK and no
 * peer timeout is set.  Its watch only asks the liveness callback about
 * the root, and a transport answers that with a packet (mc_udp: a PING
 * to the root, whose answer is an ICMP error when its port is closed):
 * every rto_max, not on the RTO's back-off.  On the bed, backing off from
 * the RTO cost each member 1.5 PINGs per 8-byte MPI_Bcast and the root
 * 4.5 receives, as much as the ACKs; a gone root is found within two
 * rto_max (the kernel rate limits ICMP errors to about one per second per
 * destination off loopback in any case) */
static int uct_mc_rel_only_expects(const uct_mc_rel_stream_t *s)
{
    unsigned i;

    if (s->is_root || !s->started || !s->ready_seen ||
        (s->next != s->high) || (s->cfg.peer_timeout != 0)) {
        return 0;
    }
    for (i = 0; i < s->nchildren; ++i) {
        if (uct_mc_rel_child_lags(s, &s->children[i])) {
            return 0;
        }
    }
    return 1;
}

void uct_mc_rel_watch_arm(uct_mc_rel_stream_t *s, uint64_t now)
{
    int busy = uct_mc_rel_busy(s);

    if (busy && (s->t_watch == UCT_MC_REL_TIME_INF)) {
        s->t_busy = now; /* a wait begins: nobody owed an answer before */
    }
    s->backoff = 0;
    s->t_watch = !busy ? UCT_MC_REL_TIME_INF :
                 (now + (uct_mc_rel_only_expects(s) ? s->cfg.rto_max :
                         uct_mc_rel_rto(s)));
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
                                     0, now);
            } else {
                uct_mc_rel_send_sync(s, UCT_MC_REL_DEST_MCAST,
                                     UCT_MC_REL_PKT_SYNC, s->base, s->high,
                                     uct_mc_rel_root_lagging(s), now);
            }
        }
        return;
    }

    if (s->ready_seen) {
        uct_mc_rel_send_sync(s, c->rank, UCT_MC_REL_PKT_SYNC, s->view_acked,
                             s->view_next, 0, now);
    } else if (s->started) {
        /* the join is not over: what the root said so far */
        uct_mc_rel_send_sync(s, c->rank, UCT_MC_REL_PKT_PROBE, s->init_psn,
                             s->init_psn, 0, now);
    }
    if (uct_mc_rel_waits_upstream(s) && (now - s->t_want >= rto)) {
        uct_mc_rel_rx_ack(s, UCT_MC_REL_ACK_FORCE, 1, now);
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
    } else if (!s->joined_sent) {
        /* the join goes on at once */
        uct_mc_rel_rx_ack(s, UCT_MC_REL_ACK_BATCH, 0, now);
    } else {
        s->ack_due = 1;
    }
    if (s->t_watch == UCT_MC_REL_TIME_INF) {
        uct_mc_rel_watch_arm(s, now);
    } else if (!uct_mc_rel_busy(s)) {
        /* the last child caught up: nothing to watch (no SYNC comes to
         * end the wait when the window drains) */
        s->t_watch = UCT_MC_REL_TIME_INF;
    }
}

ucs_status_t uct_mc_rel_recv(uct_mc_rel_stream_t *s, const void *packet,
                             size_t length, uint64_t now)
{
    return uct_mc_rel_recv_at(s, packet, length, now, now);
}

ucs_status_t uct_mc_rel_recv_at(uct_mc_rel_stream_t *s, const void *packet,
                                size_t length, uint64_t now,
                                uint64_t arrived)
{
    uct_mc_rel_child_t *c = NULL;
    uct_mc_rel_drop_t drop;
    uct_mc_rel_hdr_t hdr;

    /* not from the future, nor from before what the slack can cover */
    s->t_arrived = ((arrived <= now) && (now - arrived <= s->cfg.rto_max)) ?
                   arrived : now;

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

    /* The loss hook (tests): a first transmission lost on the way in */
    if ((s->cfg.test_drop > 0) && (hdr.type == UCT_MC_REL_PKT_DATA) &&
        !(hdr.flags & UCT_MC_REL_FLAG_REPAIR) && !s->is_root &&
        s->started && (s->state != UCT_MC_REL_ST_FAILED) &&
        uct_mc_rel_test_drop(s->rank, hdr.psn - s->init_psn,
                             s->cfg.test_drop)) {
        ++s->stats.test_drop;
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
    s->t_arrived = UCT_MC_REL_TIME_INF;
    return uct_mc_rel_status(s);
}

/* A member waited on for a timeout: dead, or silent past peer_timeout?
 * Its silence counts from the start of the wait at the earliest: a child
 * that had acknowledged everything was silent with reason while the stream
 * was idle (slow is not dead: an idle group stays healthy) */
static int uct_mc_rel_check_peer(uct_mc_rel_stream_t *s, unsigned rank,
                                 uint64_t last_heard, uint64_t now)
{
    last_heard = ucs_max(last_heard, s->t_busy);

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
 * for a gone parent or root (then nothing is coming: finished is not
 * failed) unless its user waits for a message and the root is gone.  It
 * pings only while the join is not over, or with a peer timeout (an idle
 * root answers, so that quiet is not taken for dead): otherwise the
 * liveness callback is all it needs, and a lost tail is the root's to
 * reveal.  Returns 0 when the stream failed. */
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
        uct_mc_rel_rx_ack(s, UCT_MC_REL_ACK_FORCE, 1, now);
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
    } else if (s->ready_seen && (s->cfg.peer_timeout == 0)) {
        return 1; /* expecting: the root's liveness was checked */
    } else if (!uct_mc_rel_alive(s, s->parent)) {
        uct_mc_rel_send_ping(s, s->root, now);
    } else {
        uct_mc_rel_rx_ack(s, UCT_MC_REL_ACK_FORCE, 1, now);
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
                                 UCT_MC_REL_PKT_PROBE, s->base, s->base, 0,
                                 now);
        } else if (s->high != s->base) {
            uct_mc_rel_send_sync(s, UCT_MC_REL_DEST_MCAST,
                                 UCT_MC_REL_PKT_SYNC, s->base, s->high,
                                 uct_mc_rel_root_lagging(s), now);
        }
    } else if (uct_mc_rel_waits_upstream(s) &&
               !uct_mc_rel_watch_upstream(s, now)) {
        return;
    }

    for (i = 0; i < s->nchildren; ++i) {
        c = &s->children[i];
        if (!uct_mc_rel_child_lags(s, c)) {
            continue;
        }
        if (!uct_mc_rel_check_peer(s, c->rank, c->last_heard, now)) {
            return;
        }
        if (!s->is_root && c->known && s->ready_seen &&
            (now - s->last_upstream > 2 * s->cfg.rto_max)) {
            /* Its ACK may be lost.  While the root is there, the root's
             * window waits for this subtree and its SYNCs, at most
             * rto_max apart, make the child ACK again; once nothing came
             * from upstream for two of those, the root is gone, and a
             * child that has everything would never ACK again: a SYNC
             * asks it to */
            uct_mc_rel_send_sync(s, c->rank, UCT_MC_REL_PKT_SYNC,
                                 s->view_acked, s->view_next, 0, now);
        }
    }

    ++s->backoff;
    /* The root's probes and SYNCs double their interval once per depth
     * of the tree: one round carries a lost ACK (or JOINED) at least a
     * level up with probability (1 - loss)^2 - the member below the lost
     * one hears the SYNC, its answer reaches the parent, and each parent
     * passes a moved ACK on at once - so a deep tree needs about one round
     * per level while its ACKs do come: the rounds that see no progress at
     * the root are not a sign of a dead path until about depth of them.
     * Doubling per round, a chain of 43 at 30 % loss spent 130 ms per
     * window advance, 33 of its 40 rounds at rto_max (mc_rel_sim.
     * lossy_chain_44) */
    s->t_watch = now + (uct_mc_rel_only_expects(s) ? s->cfg.rto_max :
                        uct_mc_rel_backoff(s, s->is_root ?
                                              s->backoff / s->depth :
                                              s->backoff));
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
    if (s->ack_due) {
        /* one ACK for all the packets (and children's ACKs) since the last
         * progress: with a message per packet, an ACK per message cost
         * every receiver a send and the root N receives per message */
        s->ack_due = 0;
        uct_mc_rel_rx_ack(s, uct_mc_rel_rx_ack_mode(s), 0, now);
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
    if (s->tx_blocked || s->ack_due) {
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
    /* No ACK when the user got its message: ACKs are on demand (the
     * root's window does not wait for them; its SYNC asks when it needs
     * them, and uct_mc_rel_leave() sends the last one).  This ACK was a
     * system call in every member's MPI_Bcast on the bed */
    uct_mc_rel_watch_arm(s, now);
}

void uct_mc_rel_leave(uct_mc_rel_stream_t *s, uint64_t now)
{
    if (s->is_root || (s->state != UCT_MC_REL_ST_READY) || !s->joined_sent) {
        return;
    }
    /* The root asks a member that has not acknowledged everything with a
     * SYNC, which a member that is gone cannot answer: its cumulative ACK
     * goes now, if its parent does not have it (best effort: a lost one
     * is a gone member the root waits for) */
    uct_mc_rel_rx_ack(s, UCT_MC_REL_ACK_CHANGED, 0, now);
}

unsigned uct_mc_rel_tx_space(const uct_mc_rel_stream_t *s)
{
    return s->mask + 1 - (uint32_t)(s->next - s->base);
}

void uct_mc_rel_stats(const uct_mc_rel_stream_t *s, uct_mc_rel_stats_t *stats)
{
    *stats = s->stats;
}

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
        (cfg->peer_timeout > UCT_MC_REL_MAX_TIME) ||
        (cfg->test_drop > 1000)) {
        ucs_error("mc_rel: radix %u (1..%u), mtu %zu, max_msg %zu (at most "
                  "window * mtu), RTO "
                  "%lu..%lu ns, reorder slack %lu ns (at most the RTO), "
                  "peer timeout %lu ns or test drop %u (0..1000) out of "
                  "range", cfg->radix,
                  UCT_MC_REL_MAX_RADIX, cfg->mtu, cfg->max_msg,
                  cfg->rto_min, cfg->rto_max, cfg->reorder_slack,
                  cfg->peer_timeout, cfg->test_drop);
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
    unsigned i, first, window, v;
    uint64_t reach, level;
    size_t stride;

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
    for (v = s->vrank; (v > s->cfg.radix); v = (v - 1) / s->cfg.radix) {
        /* up to the root's child above this member */
    }
    s->top      = (v > 0) ? v - 1 : 0;
    s->depth    = 0;
    for (reach = 1, level = 1; (reach < s->size) &&
                               (s->depth < UCT_MC_REL_MAX_DEPTH);
         ++s->depth) {
        /* members within depth levels: 1 + k + ... + k^depth */
        level *= s->cfg.radix;
        reach += level;
    }
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
    /* Each packet's data starts 8-byte aligned (the stride rounded up):
     * a message of one packet is delivered from its slot, and a
     * transport's framing that keeps its payload aligned in the packet
     * (mc_rel_ep's AM header) keeps it aligned for its user */
    stride      = ucs_align_up_pow2(s->cfg.mtu, 8);
    s->storage  = ucs_malloc((size_t)window * stride, "mc_rel_storage");
    if (s->is_root) {
        s->nack_count = ucs_calloc((size_t)window * ucs_max(s->nchildren, 1),
                                   sizeof(*s->nack_count),
                                   "mc_rel_nack_count");
    }
    if ((s->children == NULL) || (s->slots == NULL) ||
        (s->storage == NULL) || (s->is_root && (s->nack_count == NULL))) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }

    for (i = 0; i < window; ++i) {
        s->slots[i].data = s->storage + (size_t)i * stride;
    }
    for (i = 0; i < s->nchildren; ++i) {
        s->children[i].rank       = uct_mc_rel_rank(s, first + i);
        s->children[i].last_heard = now;
    }

    s->state         = UCT_MC_REL_ST_JOINING;
    s->status        = UCS_OK;
    s->t_nack        = UCT_MC_REL_TIME_INF;
    s->t_arrived     = UCT_MC_REL_TIME_INF;
    s->last_upstream = now;
    s->t_root        = now;
    s->t_busy        = now;
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
    ucs_free(s->nack_count);
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
    ucs_free(s->nack_count);
    ucs_free(s->storage);
    ucs_free(s->slots);
    ucs_free(s->children);
    ucs_free(s);
}
