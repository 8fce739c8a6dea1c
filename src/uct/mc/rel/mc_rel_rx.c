/**
 * ucx-o2m: a member (not the root) of a reliable multicast stream
 * (docs/multicast.md).
 *
 * A member stores packets by PSN in its window, delivers them in order
 * (reassembling messages), NACKs gaps to its parent after the reorder
 * slack and again on a back-off, keeps what its subtree has not
 * acknowledged to repair its children (custody), remembers what a child
 * NACKed that it lacks itself, and sends its subtree's cumulative ACK up
 * the tree.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_rel_int.h"


/* The subtree's cumulative ACK: everything before it is in the whole
 * subtree; 0 in *joined_p while a child has not joined */
static uint32_t uct_mc_rel_rx_agg(const uct_mc_rel_stream_t *s,
                                  int *joined_p)
{
    uint32_t agg = s->next;
    unsigned i;

    *joined_p = s->started;
    for (i = 0; i < s->nchildren; ++i) {
        if (!s->children[i].known) {
            *joined_p = 0;
            break;
        }
        agg = uct_mc_rel_psn_min(agg, s->children[i].acked);
    }
    return agg;
}

uct_mc_rel_ack_mode_t uct_mc_rel_rx_ack_mode(const uct_mc_rel_stream_t *s)
{
    return uct_mc_rel_psn_lt(s->ack_sent, s->ack_owed) ?
           UCT_MC_REL_ACK_OWED : UCT_MC_REL_ACK_BATCH;
}

void uct_mc_rel_rx_ack(uct_mc_rel_stream_t *s, uct_mc_rel_ack_mode_t mode,
                       int want_sync, uint64_t now)
{
    uint32_t batch = ucs_max(1, (s->mask + 1) / 4);
    uct_mc_rel_hdr_t hdr;
    uint32_t agg;
    int joined;

    agg = uct_mc_rel_rx_agg(s, &joined);

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
        /* On demand: not per message, only per quarter window, when a
         * SYNC asks (the root's, after an RTO of silence while it holds
         * packets not acknowledged by every member), or when the member
         * leaves (docs/multicast.md, "ACKs (custody)") */
        if (!want_sync && (mode != UCT_MC_REL_ACK_FORCE) &&
            s->joined_sent &&
            (!uct_mc_rel_psn_lt(s->ack_sent, agg) ||
             (((mode == UCT_MC_REL_ACK_BATCH) ||
               ((mode == UCT_MC_REL_ACK_OWED) &&
                uct_mc_rel_psn_lt(agg, s->ack_owed))) &&
              ((uint32_t)(agg - s->ack_sent) < batch) &&
              !(s->cfg.ack_per_msg &&
                uct_mc_rel_psn_lt(s->ack_sent, s->ackreq) &&
                uct_mc_rel_psn_le(s->ackreq, agg))))) {
            return; /* nothing the parent does not know, or not yet */
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

/* PSNs up to @a new_high exist: open their slots, NACK timers running
 * from when the packet that tells of them arrived */
static void uct_mc_rel_rx_extend(uct_mc_rel_stream_t *s, uint32_t new_high,
                                 uint64_t now)
{
    uint64_t due = ucs_min(now, s->t_arrived) + s->cfg.reorder_slack;
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
        slot->t_gap      = now;
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

void uct_mc_rel_rx_nack_timer(uct_mc_rel_stream_t *s, uint64_t now)
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

/* A packet this member lost arrived as a repair, @a lat ns after it
 * learned of it */
static void uct_mc_rel_repair_lat(uct_mc_rel_stream_t *s, uint64_t lat)
{
    ++s->stats.rx_repaired;
    ++s->stats.repair_lat[uct_mc_rel_lat_bucket(lat)];
    s->stats.repair_lat_sum += lat;
    s->stats.repair_lat_max  = ucs_max(s->stats.repair_lat_max, lat);
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
    if (hdr->flags & UCT_MC_REL_FLAG_REPAIR) {
        uct_mc_rel_repair_lat(s, now - slot->t_gap);
    }
    if ((hdr->flags & UCT_MC_REL_FLAG_ACK_REQ) &&
        uct_mc_rel_psn_lt(s->ackreq, hdr->psn + 1)) {
        s->ackreq = hdr->psn + 1; /* a message ends (ack_per_msg) */
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

/* A packet only the root or this member's parent sends (data, probe,
 * SYNC), and for data and SYNC only once the probe started the stream:
 * 0, counted as dropped, otherwise */
static int uct_mc_rel_rx_upstream(uct_mc_rel_stream_t *s,
                                  const uct_mc_rel_hdr_t *hdr,
                                  int need_started)
{
    if ((hdr->src != s->root) && (hdr->src != s->parent)) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_RANK, hdr);
        return 0;
    }
    if (need_started && !s->started) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_STATE, hdr);
        return 0;
    }
    return 1;
}

void uct_mc_rel_rx_data(uct_mc_rel_stream_t *s,
                        const uct_mc_rel_hdr_t *hdr,
                        const void *payload, uint64_t now)
{
    uct_mc_rel_slot_t *slot;
    uint32_t known;

    if (!uct_mc_rel_rx_upstream(s, hdr, 1)) {
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
    if (hdr->src == s->root) {
        s->t_root = now;
    }
    slot = uct_mc_rel_slot(s, hdr->psn);
    if (uct_mc_rel_psn_lt(hdr->psn, s->high) && slot->valid) {
        ++s->stats.rx_dup;
        return;
    }

    /* A repair comes another way than the root's multicast stream
     * (unicast from the parent or the root, or a re-multicast long after):
     * the next PSN its sender knows of may run ahead of packets still on
     * their way to this member by multicast, or waiting in its multicast
     * socket while it was busy.  Opened as gaps, they would be NACKed and
     * repaired although not lost (on the bed under CPU load: 5140 repairs
     * for 391 packets dropped).  A repair tells of its own PSN only; the
     * stream and the root's SYNCs tell of the rest. */
    known = (hdr->flags & UCT_MC_REL_FLAG_REPAIR) ? hdr->psn + 1 : hdr->aux;

    s->ready_seen = 1;
    uct_mc_rel_rx_extend(s, known, now);
    if (uct_mc_rel_psn_lt(s->view_next, known)) {
        s->view_next = known;
    }
    uct_mc_rel_rx_store(s, slot, hdr, payload, now);
    uct_mc_rel_rx_advance(s, now);
    if (s->state == UCT_MC_REL_ST_FAILED) {
        return;
    }
    s->ack_due = 1;
    uct_mc_rel_watch_arm(s, now);
}

void uct_mc_rel_rx_probe(uct_mc_rel_stream_t *s,
                         const uct_mc_rel_hdr_t *hdr, uint64_t now)
{
    uct_mc_rel_child_t *c;
    unsigned i;

    if (!uct_mc_rel_rx_upstream(s, hdr, 0)) {
        return;
    }

    s->last_upstream = now;
    if (hdr->src == s->root) {
        s->t_root = now;
    }
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
        s->ack_owed   = hdr->psn;
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
    uct_mc_rel_rx_ack(s, UCT_MC_REL_ACK_FORCE, 0, now);
}

void uct_mc_rel_rx_sync(uct_mc_rel_stream_t *s,
                        const uct_mc_rel_hdr_t *hdr, uint64_t now)
{
    unsigned root_children;
    int news, joined;
    uint32_t agg;

    if (!uct_mc_rel_rx_upstream(s, hdr, 1)) {
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
    /* lagging subtrees: only the root's children, only from the root */
    root_children = ucs_min(s->cfg.radix, s->size - 1);
    if ((hdr->src != s->root) ? (hdr->bitmap != 0) :
        ((root_children < UCT_MC_REL_NACK_BITS) &&
         ((hdr->bitmap >> root_children) != 0))) {
        uct_mc_rel_drop(s, UCT_MC_REL_DROP_FIELD, hdr);
        return;
    }

    news             = !s->ready_seen || uct_mc_rel_psn_lt(s->high, hdr->aux);
    s->last_upstream = now;
    if (hdr->src == s->root) {
        s->t_root = now;
    }
    s->ready_seen    = 1;
    if (uct_mc_rel_psn_le(s->view_next, hdr->aux) &&
        uct_mc_rel_psn_le(s->view_acked, hdr->psn)) {
        news         |= (s->view_acked != hdr->psn) ||
                        (s->view_next != hdr->aux);
        s->view_acked = hdr->psn;
        s->view_next  = hdr->aux;
    }
    /* The parent's SYNC answers a ping by unicast: the next PSN it knows
     * may run ahead of packets still in this member's multicast socket
     * (the parent drained its own socket sooner), which would be NACKed
     * and repaired although not lost, as a unicast repair's would (see
     * uct_mc_rel_rx_data).  It updates the view of the root's window, so
     * that this member keeps waiting and pinging; the root's SYNCs, which
     * come by multicast behind the data, tell of the packets to NACK.
     * Once the root is gone no SYNC comes from it and nothing more is on
     * its way: then the parent (custody) tells of the tail.  So also when
     * nothing came from the root for two rto_max (its SYNCs, while it
     * holds packets not acknowledged by every member, are at most rto_max
     * apart): it is cut off from this member, and whatever was on its way
     * has arrived; with ACKs on demand the root's first SYNC after a burst
     * comes an RTO after its last packet, and a partition in between left
     * a member that lost the tail waiting with its parent holding it */
    if ((hdr->src == s->root) ||
        (now - s->t_root > 2 * s->cfg.rto_max) ||
        ((s->ops.is_alive != NULL) && !s->ops.is_alive(s->arg, s->root))) {
        uct_mc_rel_rx_extend(s, hdr->aux, now);
    }
    if ((hdr->src != s->root) || (hdr->bitmap & (1ull << s->top))) {
        /* Asked: the root waits for this subtree (or the parent asks).
         * ACKs are sent on demand, so this member's ACK up to the root's
         * next PSN goes up as soon as its subtree has it all - when the
         * children's answers or the repairs came - and its children owe
         * theirs until then, not a SYNC round later.  A part of it waits
         * for the root's next SYNC (its answer, below), so that a member
         * sends one ACK per SYNC and not one per child's answer */
        if (uct_mc_rel_psn_lt(s->ack_owed, hdr->aux)) {
            s->ack_owed = hdr->aux;
        }
    }
    agg = uct_mc_rel_rx_agg(s, &joined);
    if ((hdr->src != s->root) ||
        (joined && uct_mc_rel_psn_lt(hdr->psn, agg) &&
         (hdr->bitmap & (1ull << s->top)))) {
        /* The parent's SYNC answers a ping, or asks for an ACK once the
         * root is gone.  The root's says what every member acknowledged
         * and which of its children's subtrees hold that: in such a
         * subtree, a member that has more may have lost its ACK (or one
         * below it did), and the ACK that moves the window is among
         * theirs.  Any other answer would change nothing the root waits
         * for and only cost it receives: a SYNC of a stalled root is
         * answered by the members that can move its window, not by every
         * member */
        uct_mc_rel_rx_ack(s, UCT_MC_REL_ACK_FORCE, 0, now);
    }
    /* an answer without news keeps the ping's back-off */
    if (news || !uct_mc_rel_busy(s) || (s->t_watch == UCT_MC_REL_TIME_INF)) {
        uct_mc_rel_watch_arm(s, now);
    }
}

void uct_mc_rel_rx_nack_pkt(uct_mc_rel_stream_t *s,
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
