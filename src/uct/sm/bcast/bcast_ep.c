/**
 * ucx-o2m: sm_bcast, the fan-out ring.  See o2m_group.h for the protocol.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_group.h"
#include "o2m_p2p.h"

#include <ucs/debug/log.h>
#include <string.h>


static UCS_F_ALWAYS_INLINE volatile uint32_t *
uct_o2m_bcast_ack(uct_o2m_group_ep_t *ep, uint64_t seq)
{
    return UCS_PTR_BYTE_OFFSET(ep->acks, (seq & (ep->depth - 1)) *
                                         UCT_O2M_LINE);
}

size_t uct_o2m_bcast_seg_layout(uct_o2m_group_seg_t *hdr, size_t elem_size)
{
    hdr->members_offset = ucs_align_up_pow2(sizeof(*hdr), UCT_O2M_LINE);
    hdr->acks_offset    = hdr->members_offset +
                          (hdr->size * sizeof(uct_o2m_member_t));
    hdr->elems_offset   = hdr->acks_offset + (hdr->depth * UCT_O2M_LINE);
    hdr->elem_stride    = elem_size;
    hdr->max_length     = elem_size - sizeof(uct_o2m_elem_t);
    return hdr->elems_offset + (hdr->depth * hdr->elem_stride);
}

void uct_o2m_bcast_seg_init(uct_o2m_group_ep_t *ep)
{
    /* A zero-filled segment is an empty ring with no acknowledgements */
}

/* Lowest message count consumed by all receivers (CENTRALIZED) */
static uint64_t uct_o2m_bcast_min_consumed(uct_o2m_group_ep_t *ep)
{
    uint64_t min_consumed = ep->super.next_seq;
    uint64_t consumed;
    unsigned i;

    for (i = 0; i < ep->size; ++i) {
        if (i == ep->root_index) {
            continue;
        }

        consumed = __atomic_load_n(&ep->members[i].consumed,
                                   __ATOMIC_ACQUIRE);
        if (consumed < min_consumed) {
            min_consumed = consumed;
        }
    }

    return min_consumed;
}

/* Advance ep->completed: messages below it were consumed by everyone */
void uct_o2m_bcast_root_reclaim(uct_o2m_group_ep_t *ep)
{
    unsigned num_receivers = uct_o2m_group_num_peers(ep);

    if (ep->mode == UCT_O2M_MODE_BATCHED) {
        /* Reset each counter here, off the send path: the element is free
         * and nobody writes its counter until it is published again */
        while ((ep->completed < ep->super.next_seq) &&
               (__atomic_load_n(uct_o2m_bcast_ack(ep, ep->completed),
                                __ATOMIC_ACQUIRE) == num_receivers)) {
            *uct_o2m_bcast_ack(ep, ep->completed) = 0;
            ++ep->completed;
        }
    } else {
        ep->completed = uct_o2m_bcast_min_consumed(ep);
    }

    uct_o2m_ep_complete_upto(&ep->super, ep->completed);
}

int uct_o2m_bcast_root_has_space(uct_o2m_group_ep_t *ep)
{
    if ((ep->super.next_seq - ep->completed) < ep->depth) {
        return 1;
    }

    uct_o2m_bcast_root_reclaim(ep);
    return (ep->super.next_seq - ep->completed) < ep->depth;
}

/* The element for the next message, or NULL while the ring is full */
static UCS_F_ALWAYS_INLINE uct_o2m_elem_t *
uct_o2m_bcast_root_claim(uct_o2m_group_ep_t *ep)
{
    if (ucs_unlikely(!uct_o2m_bcast_root_has_space(ep))) {
        return NULL;
    }

    return uct_o2m_group_elem(ep, ep->super.next_seq);
}

static UCS_F_ALWAYS_INLINE void
uct_o2m_bcast_root_publish(uct_o2m_group_ep_t *ep, uct_o2m_elem_t *elem,
                           uint8_t id, uint32_t length, uint8_t flags)
{
    elem->length = length;
    elem->am_id  = id;
    elem->flags  = flags;
    uct_o2m_elem_publish(elem, ep->super.next_seq++);
}

ucs_status_t uct_o2m_bcast_am_short(uct_o2m_group_ep_t *ep, uint8_t id,
                                    uint64_t header, const void *payload,
                                    unsigned length)
{
    uct_o2m_elem_t *elem;

    UCT_CHECK_LENGTH(length + sizeof(header), 0, ep->max_length, "am_short");

    elem = uct_o2m_bcast_root_claim(ep);
    if (elem == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    memcpy(UCT_O2M_ELEM_DATA(elem), &header, sizeof(header));
    uct_o2m_memcpy(UCS_PTR_BYTE_OFFSET(UCT_O2M_ELEM_DATA(elem),
                                       sizeof(header)),
                   payload, length);
    uct_o2m_bcast_root_publish(ep, elem, id, length + sizeof(header), 0);
    return UCS_OK;
}

ssize_t uct_o2m_bcast_am_bcopy(uct_o2m_group_ep_t *ep, uint8_t id,
                               uct_pack_callback_t pack_cb, void *arg)
{
    uct_o2m_elem_t *elem;
    size_t length;

    elem = uct_o2m_bcast_root_claim(ep);
    if (elem == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    length = pack_cb(UCT_O2M_ELEM_DATA(elem), arg);
    ucs_assertv(length <= ep->max_length, "pack_cb packed %zu bytes",
                length);
    uct_o2m_bcast_root_publish(ep, elem, id, length, 0);
    return length;
}

ucs_status_t uct_o2m_bcast_am_zcopy(uct_o2m_group_ep_t *ep, uint8_t id,
                                    const void *header, unsigned header_length,
                                    const uct_iov_t *iov, size_t iovcnt,
                                    uct_completion_t *comp)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    uct_o2m_zdesc_t *zdesc;
    uct_o2m_elem_t *elem;
    ucs_status_t status;
    uint64_t seq;

    elem = uct_o2m_bcast_root_claim(ep);
    if (elem == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    /* Nothing is published if the descriptor is refused */
    zdesc  = UCT_O2M_ELEM_DATA(elem);
    status = uct_o2m_zdesc_pack(zdesc, header, header_length, iov, iovcnt,
                                iface->config.max_zcopy);
    if (status != UCS_OK) {
        return status;
    }

    seq = ep->super.next_seq;
    uct_o2m_bcast_root_publish(ep, elem, id, zdesc->length,
                               UCT_O2M_ELEM_FLAG_ZCOPY);
    return uct_o2m_ep_add_zcopy(&ep->super, &ep->super.zcopy_reqs, seq, comp);
}

unsigned uct_o2m_bcast_root_progress(uct_o2m_group_ep_t *ep)
{
    if (!ucs_queue_is_empty(&ep->super.zcopy_reqs) ||
        !ucs_queue_is_empty(&ep->super.flush_reqs)) {
        uct_o2m_bcast_root_reclaim(ep);
    }

    if (!ucs_queue_is_empty(&ep->super.pending)) {
        uct_o2m_ep_dispatch_pending(&ep->super);
    }

    return 0;
}

unsigned uct_o2m_bcast_recv_progress(uct_o2m_group_ep_t *ep)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    unsigned count         = 0;
    uct_o2m_elem_t *elem;
    ucs_status_t status;
    const char *why;

    if (ucs_unlikely(ep->seg == NULL) && !uct_o2m_group_try_attach(ep)) {
        return 0;
    }

    while (count < UCT_O2M_MAX_AM_PER_PROG) {
        elem = uct_o2m_group_elem(ep, ep->rx_seq);
        if (!uct_o2m_elem_ready(elem, ep->rx_seq)) {
            break;
        }

        status = uct_o2m_deliver_elem(iface, elem, ep->max_length,
                                      &ep->seg->failed, &why);
        if (ucs_unlikely(status != UCS_OK)) {
            ucs_error("group 0x%" PRIx64 " member %u: lost message %" PRIu64
                      ": %s%s%s", ep->group_id, ep->my_index, ep->rx_seq,
                      ucs_status_string(status), (why != NULL) ? ": " : "",
                      (why != NULL) ? why : "");
            /* The root's completions must fail too, not wait for our ack */
            __atomic_store_n(&ep->members[ep->my_index].lost_status, status,
                             __ATOMIC_RELEASE);
            uct_o2m_ep_set_failed(&ep->super, status);
            return count;
        }

        if (ep->mode == UCT_O2M_MODE_BATCHED) {
            __atomic_fetch_add(uct_o2m_bcast_ack(ep, ep->rx_seq), 1,
                               __ATOMIC_RELEASE);
        } else {
            __atomic_store_n(&ep->members[ep->my_index].consumed,
                             ep->rx_seq + 1, __ATOMIC_RELEASE);
        }

        ++ep->rx_seq;
        ++count;
    }

    return count;
}
