/**
 * ucx-o2m: the root of a reliable multicast stream (docs/multicast.md).
 *
 * The root copies a message into its window as packets of consecutive PSNs
 * (uct_mc_rel_send), multicasts them once the join is over, advances the
 * window to the minimum its children acknowledge for their subtrees, and
 * answers NACKs: unicast to the child that asked, or a re-multicast of the
 * PSN when NACKs report enough members missing it within one RTO.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_rel_int.h"


/* The root forgets who reported @a slot's PSN missing */
static void uct_mc_rel_root_weight_clear(uct_mc_rel_stream_t *s,
                                         uct_mc_rel_slot_t *slot)
{
    memset(&s->nack_count[(size_t)(slot - s->slots) * s->nchildren], 0,
           s->nchildren * sizeof(*s->nack_count));
}

void uct_mc_rel_root_transmit(uct_mc_rel_stream_t *s, uint64_t now)
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

    if (sent) {
        if (s->t_watch == UCT_MC_REL_TIME_INF) {
            s->t_busy = now; /* the children owe ACKs from now on */
        }
        /* The SYNC that asks for ACKs comes after an RTO of silence: while
         * the root sends, every packet tells the members what exists (a
         * gap is NACKed), and they acknowledge each quarter window on
         * their own; only the tail needs the SYNC */
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
        uct_mc_rel_root_weight_clear(s, slot);
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

uint64_t uct_mc_rel_root_lagging(const uct_mc_rel_stream_t *s)
{
    uint64_t lagging = 0;
    unsigned i;

    if (s->base == s->high) {
        return 0;
    }
    for (i = 0; i < s->nchildren; ++i) {
        if (!s->children[i].known ||
            uct_mc_rel_psn_le(s->children[i].acked, s->base)) {
            lagging |= 1ull << i;
        }
    }
    return lagging;
}

void uct_mc_rel_root_update(uct_mc_rel_stream_t *s, uint64_t now)
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
                                 UCT_MC_REL_PKT_SYNC, s->base, s->high, 0,
                                 now);
            s->t_sync = now;
        }
        uct_mc_rel_watch_arm(s, now);
        return;
    }

    if (!uct_mc_rel_psn_lt(s->base, agg)) {
        return;
    }

    slot = uct_mc_rel_slot(s, agg - 1);
    if (!slot->retx) {
        /* The tree's round trip, measured from the last thing the root did
         * that may have caused this ACK: the packet's first transmission,
         * or a SYNC or a NACK's repair after it.  An ACK that came after a
         * SYNC may be the late original (the way back is slow) or the
         * answer to the SYNC (the original was lost), and one after a
         * repair may have waited for it: from the transmission it would
         * measure the SYNC's back-off or the repair (Karn), but from the
         * last of them it measures no more than the real round trip of
         * whatever caused it.  Without these samples a root whose ACKs
         * come later than its first RTO never had one: it kept 4 * rto_min
         * and SYNCed after every advance of its window (mc_rel_sim.
         * rto_follows_late_acks); a sample that is too short costs a
         * SYNC, and the next clean one corrects it */
        uct_mc_rel_rtt_sample(s, now - ucs_max(slot->t_first,
                                               s->t_disturb));
    }
    s->base    = agg;
    s->backoff = 0;
    /* Drained: nothing to say (no member waits for the window to drain,
     * and every member has everything); else the SYNC timer restarts */
    s->t_watch = (s->base == s->high) ? UCT_MC_REL_TIME_INF :
                 (now + uct_mc_rel_rto(s));
}

void uct_mc_rel_root_nack(uct_mc_rel_stream_t *s,
                          uct_mc_rel_child_t *c,
                          const uct_mc_rel_hdr_t *hdr, uint64_t now)
{
    uint64_t rto = uct_mc_rel_rto(s);
    uct_mc_rel_slot_t *slot;
    uint16_t *count;
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
            uct_mc_rel_root_weight_clear(s, slot);
        }
        /* The weight counts each subtree once: a child's NACK repeated
         * (its retry, or its subtree's count grown) replaces what that
         * child reported before, so that one receiver NACKing a PSN twice
         * is still one receiver missing it */
        count         = &s->nack_count[(size_t)(slot - s->slots) *
                                       s->nchildren + (c - s->children)];
        slot->weight  = slot->weight - *count + hdr->aux;
        *count        = hdr->aux;
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
            uct_mc_rel_root_weight_clear(s, slot);
            ++s->stats.tx_repair_mcast;
        } else {
            uct_mc_rel_send_data(s, c->rank, slot, s->high,
                                 UCT_MC_REL_FLAG_REPAIR);
            ++s->stats.tx_repair_ucast;
        }
    }
}
