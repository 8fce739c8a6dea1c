/**
 * ucx-o2m: sm_incast, the fan-in ring: its layout and the senders.  See
 * incast_ep.h for the protocol; the root is in incast_root.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "incast_ep.h"
#include "o2m_p2p.h"
#include "o2m_reduce.h"
#include "o2m_check.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/* Bounded wait for the lock of the shared buffer before NO_RESOURCE */
#define UCT_O2M_INCAST_LOCK_SPINS 4096


/*
 * Whether senders reduce into the shared buffer.  With a single sender there
 * is nothing to lock and nothing to do atomically.
 */
int uct_o2m_group_seg_shared(const uct_o2m_group_seg_t *hdr)
{
    return hdr->is_incast &&
           ((hdr->mode == UCT_O2M_MODE_LOCKED) ||
            (hdr->mode == UCT_O2M_MODE_ATOMIC)) &&
           (hdr->op != UCT_O2M_OP_GATHER) && (hdr->size > 2);
}

size_t uct_o2m_incast_seg_layout(uct_o2m_group_seg_t *hdr, size_t elem_size,
                                 size_t ring_max)
{
    size_t max_length = elem_size - sizeof(uct_o2m_elem_t);
    size_t slot_data;

    hdr->members_offset = ucs_align_up_pow2(sizeof(*hdr), UCT_O2M_LINE);
    hdr->acks_offset    = 0;
    hdr->elems_offset   = hdr->members_offset +
                          (hdr->size * sizeof(uct_o2m_member_t));
    hdr->max_length     = max_length;
    if (uct_o2m_group_seg_shared(hdr)) {
        hdr->shared_size = ucs_align_up_pow2(max_length, UCT_O2M_LINE);
        slot_data        = ucs_max(sizeof(uct_o2m_zdesc_t), hdr->hdr_len);
    } else {
        hdr->shared_size = 0;
        slot_data        = ucs_max(sizeof(uct_o2m_zdesc_t), max_length);
    }

    hdr->slot_stride = ucs_align_up_pow2(sizeof(uct_o2m_elem_t) + slot_data,
                                         UCT_O2M_LINE);
    hdr->elem_stride = UCT_O2M_LINE + hdr->shared_size +
                       ((hdr->size - 1) * hdr->slot_stride);
    while ((hdr->depth > 2) &&
           ((hdr->depth * hdr->elem_stride) > ring_max)) {
        hdr->depth /= 2;
    }

    return hdr->elems_offset + (hdr->depth * hdr->elem_stride);
}

void uct_o2m_incast_fill_identity(uct_o2m_group_ep_t *ep, void *elem,
                                  size_t length)
{
    uct_o2m_reduce_identity(ep->op, ep->dtype,
                            UCS_PTR_BYTE_OFFSET(uct_o2m_incast_shared(elem),
                                                ep->hdr_len),
                            (length - ep->hdr_len) / ep->dt_size);
}

void uct_o2m_incast_seg_init(uct_o2m_group_ep_t *ep)
{
    uint64_t seq;

    if ((ep->mode != UCT_O2M_MODE_ATOMIC) || (ep->geom.shared_size == 0)) {
        return;
    }

    for (seq = 0; seq < ep->depth; ++seq) {
        uct_o2m_incast_fill_identity(ep, uct_o2m_incast_elem(ep, seq),
                                     ep->max_length);
    }
}


/* ------------------------------------------------------------------------ */
/* Senders                                                                 */

void uct_o2m_incast_send_update(uct_o2m_group_ep_t *ep)
{
    /* Written by the root: never beyond what we sent */
    ep->completed = ucs_min(__atomic_load_n(&ep->seg->delivered,
                                            __ATOMIC_ACQUIRE),
                            ep->super.next_seq);
    uct_o2m_ep_complete_upto(&ep->super, ep->completed);
}

int uct_o2m_incast_send_has_space(uct_o2m_group_ep_t *ep)
{
    if (ucs_unlikely(ep->seg == NULL)) {
        /* A send waits for the group from now on (opt-in deadline) */
        if (ep->wait_since == 0) {
            ep->wait_since = ucs_get_time();
        }
        if (!uct_o2m_group_try_attach(ep)) {
            return 0;
        }
    }

    if ((ep->super.next_seq - ep->completed) < ep->depth) {
        return 1;
    }

    uct_o2m_incast_send_update(ep);
    return (ep->super.next_seq - ep->completed) < ep->depth;
}

/*
 * Why a send cannot go now: the ring is full or the group not joined yet
 * (NO_RESOURCE), or the endpoint failed.  A contribution to a group whose
 * root has left would never be delivered: it fails the endpoint.
 */
static ucs_status_t uct_o2m_incast_send_status(uct_o2m_group_ep_t *ep)
{
    if (ep->super.status != UCS_OK) {
        return ep->super.status;
    }

    if ((ep->seg != NULL) &&
        ucs_unlikely(__atomic_load_n(&ep->seg->closed, __ATOMIC_ACQUIRE))) {
        ucs_diag("group 0x%" PRIx64 " member %u: contribution %" PRIu64
                 " to a group whose root has left", ep->group_id,
                 ep->my_index, ep->super.next_seq);
        uct_o2m_ep_set_failed(&ep->super, UCS_ERR_CONNECTION_RESET);
        return UCS_ERR_CONNECTION_RESET;
    }

    return UCS_ERR_NO_RESOURCE;
}

/* Whether a contribution can go now; else why not (send_status) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_o2m_incast_send_check(uct_o2m_group_ep_t *ep)
{
    if (ucs_unlikely(!uct_o2m_incast_send_has_space(ep)) ||
        ucs_unlikely(__atomic_load_n(&ep->seg->closed, __ATOMIC_RELAXED))) {
        return uct_o2m_incast_send_status(ep);
    }

    return UCS_OK;
}

static ucs_status_t uct_o2m_incast_check_length(uct_o2m_group_ep_t *ep,
                                                size_t length, size_t max)
{
    if (ucs_unlikely(length > max)) {
        ucs_error("group 0x%" PRIx64 ": contribution of %zu bytes exceeds "
                  "%zu", ep->group_id, length, max);
        return UCS_ERR_INVALID_PARAM;
    }

    if (ucs_unlikely((length < ep->hdr_len) ||
                     ((length - ep->hdr_len) % ep->dt_size))) {
        ucs_error("group 0x%" PRIx64 ": contribution of %zu bytes is not "
                  "%zu header bytes and whole %s elements", ep->group_id,
                  length, ep->hdr_len, uct_o2m_dtype_name(ep->dtype));
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

static UCS_F_ALWAYS_INLINE int
uct_o2m_incast_trylock(uct_o2m_group_ep_t *ep, uct_o2m_incast_ctl_t *ctl)
{
    uint32_t expected;
    unsigned i;

    for (i = 0; i < UCT_O2M_INCAST_LOCK_SPINS; ++i) {
        expected = 0;
        if (__atomic_compare_exchange_n(&ctl->lock, &expected,
                                        ep->my_index + 1, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            return 1;
        }
        uct_o2m_cpu_relax();
    }

    return 0;
}

/*
 * dst = src, as the first contribution of a result.  Logical operations
 * reduce it into their identity instead, so that a result is always 0 or 1,
 * whatever the number of contributions.
 */
void uct_o2m_incast_first(uct_o2m_group_ep_t *ep, void *dst,
                          const void *src, size_t count)
{
    if (uct_o2m_incast_is_logical(ep->op)) {
        uct_o2m_reduce_identity(ep->op, ep->dtype, dst, count);
        uct_o2m_reduce(ep->op, ep->dtype, dst, src, count);
    } else {
        memcpy(dst, src, count * ep->dt_size);
    }
}

/* Reduce a whole contribution into the shared buffer (LOCKED, ATOMIC) */
static void uct_o2m_incast_reduce_shared(uct_o2m_group_ep_t *ep, void *elem,
                                         const void *data, size_t length)
{
    uct_o2m_incast_ctl_t *ctl = uct_o2m_incast_ctl(elem);
    void *dst   = UCS_PTR_BYTE_OFFSET(uct_o2m_incast_shared(elem),
                                      ep->hdr_len);
    const void *src = UCS_PTR_BYTE_OFFSET(data, ep->hdr_len);
    size_t count    = (length - ep->hdr_len) / ep->dt_size;

    if (ep->mode == UCT_O2M_MODE_ATOMIC) {
        uct_o2m_reduce_atomic(ep->op, ep->dtype, dst, src, count);
    } else if (ctl->shared_count == 0) {
        uct_o2m_incast_first(ep, dst, src, count);
    } else {
        uct_o2m_reduce(ep->op, ep->dtype, dst, src, count);
    }
    __atomic_fetch_add(&ctl->shared_count, 1, __ATOMIC_RELAXED);
}

/* Make the contribution in @a slot count for the root */
static UCS_F_ALWAYS_INLINE void
uct_o2m_incast_commit(uct_o2m_group_ep_t *ep, void *elem,
                      uct_o2m_elem_t *slot, uint8_t id, size_t length,
                      uint8_t flags)
{
    uint64_t seq = ep->super.next_seq++;

    slot->length = length;
    slot->am_id  = id;
    slot->flags  = flags;
    if (uct_o2m_incast_stamped(ep)) {
        uct_o2m_elem_publish(slot, seq);
    } else {
        slot->seq = seq + 1;
        __atomic_fetch_add(&uct_o2m_incast_ctl(elem)->arrived, 1,
                           __ATOMIC_RELEASE);
    }
}

/* The most a pack callback may write: our own max_bcopy */
static UCS_F_ALWAYS_INLINE size_t
uct_o2m_incast_max_pack(uct_o2m_group_ep_t *ep)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);

    return iface->config.elem_size - sizeof(uct_o2m_elem_t);
}

/*
 * Contribute @a length bytes: produced by @a pack into the slot (or into a
 * scratch buffer first when they are reduced into the shared buffer).
 */
typedef size_t (*uct_o2m_incast_pack_t)(void *dest, void *arg);

static ssize_t uct_o2m_incast_contribute(uct_o2m_group_ep_t *ep, uint8_t id,
                                         uct_o2m_incast_pack_t pack,
                                         void *arg)
{
    uct_o2m_incast_ctl_t *ctl;
    uct_o2m_elem_t *slot;
    ucs_status_t status;
    size_t length;
    void *elem, *data;

    status = uct_o2m_incast_send_check(ep);
    if (status != UCS_OK) {
        return status;
    }

    elem = uct_o2m_incast_elem(ep, ep->super.next_seq);
    slot = uct_o2m_incast_slot(ep, elem, ep->my_pos);
    if ((ep->geom.shared_size == 0) &&
        ucs_likely(uct_o2m_incast_max_pack(ep) <= ep->max_length)) {
        /* pack() writes at most our max_bcopy bytes, which fit the slot */
        length = pack(UCT_O2M_ELEM_DATA(slot), arg);
        status = uct_o2m_incast_check_length(ep, length, ep->max_length);
        if (status != UCS_OK) {
            return status;
        }
        uct_o2m_incast_commit(ep, elem, slot, id, length, 0);
        return length;
    }

    /* The root's limit is below ours, or the contribution is reduced into
     * the shared buffer: pack aside and check the length first */
    if (ep->scratch == NULL) {
        ep->scratch = ucs_malloc(ucs_max(ep->max_length,
                                         uct_o2m_incast_max_pack(ep)),
                                 "o2m incast scratch");
        if (ep->scratch == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }

    if (ep->geom.shared_size == 0) {
        length = pack(ep->scratch, arg);
        status = uct_o2m_incast_check_length(ep, length, ep->max_length);
        if (status != UCS_OK) {
            return status;
        }
        memcpy(UCT_O2M_ELEM_DATA(slot), ep->scratch, length);
        uct_o2m_incast_commit(ep, elem, slot, id, length, 0);
        return length;
    }

    ctl = uct_o2m_incast_ctl(elem);
    if ((ep->mode == UCT_O2M_MODE_LOCKED) &&
        !uct_o2m_incast_trylock(ep, ctl)) {
        return UCS_ERR_NO_RESOURCE;
    }

    data   = ep->scratch;
    length = pack(data, arg);
    status = uct_o2m_incast_check_length(ep, length, ep->max_length);
    if (status == UCS_OK) {
        uct_o2m_incast_reduce_shared(ep, elem, data, length);
        memcpy(UCT_O2M_ELEM_DATA(slot), data, ep->hdr_len);
    }

    if (ep->mode == UCT_O2M_MODE_LOCKED) {
        __atomic_store_n(&ctl->lock, 0, __ATOMIC_RELEASE);
    }

    if (status != UCS_OK) {
        return status;
    }

    uct_o2m_incast_commit(ep, elem, slot, id, length,
                          UCT_O2M_ELEM_FLAG_SHARED);
    return length;
}

typedef struct {
    uint64_t   header;
    const void *payload;
    unsigned   length;
} uct_o2m_incast_short_arg_t;

static size_t uct_o2m_incast_pack_short(void *dest, void *arg)
{
    uct_o2m_incast_short_arg_t *sarg = arg;

    memcpy(dest, &sarg->header, sizeof(sarg->header));
    uct_o2m_memcpy(UCS_PTR_BYTE_OFFSET(dest, sizeof(sarg->header)),
                   sarg->payload, sarg->length);
    return sizeof(sarg->header) + sarg->length;
}

ucs_status_t uct_o2m_incast_am_short(uct_o2m_group_ep_t *ep, uint8_t id,
                                     uint64_t header, const void *payload,
                                     unsigned length)
{
    uct_o2m_incast_short_arg_t arg = {header, payload, length};
    ucs_status_t status;
    ssize_t ret;

    /* The limit is the root's: known once the group is joined */
    status = uct_o2m_incast_send_check(ep);
    if (status != UCS_OK) {
        return status;
    }

    UCT_CHECK_LENGTH(length + sizeof(header), 0, ep->max_length, "am_short");

    ret = uct_o2m_incast_contribute(ep, id, uct_o2m_incast_pack_short, &arg);
    return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
}

ssize_t uct_o2m_incast_am_bcopy(uct_o2m_group_ep_t *ep, uint8_t id,
                                uct_pack_callback_t pack_cb, void *arg)
{
    return uct_o2m_incast_contribute(ep, id, pack_cb, arg);
}

ucs_status_t uct_o2m_incast_am_zcopy(uct_o2m_group_ep_t *ep, uint8_t id,
                                     const void *header,
                                     unsigned header_length,
                                     const uct_iov_t *iov, size_t iovcnt,
                                     uct_completion_t *comp)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    uct_o2m_zdesc_t *zdesc;
    uct_o2m_elem_t *slot;
    ucs_status_t status;
    uint64_t seq;
    void *elem;

    status = uct_o2m_incast_send_check(ep);
    if (status != UCS_OK) {
        return status;
    }

    elem   = uct_o2m_incast_elem(ep, ep->super.next_seq);
    slot   = uct_o2m_incast_slot(ep, elem, ep->my_pos);
    zdesc  = UCT_O2M_ELEM_DATA(slot);
    status = uct_o2m_zdesc_pack(zdesc, header, header_length, iov, iovcnt,
                                iface->config.max_zcopy);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_o2m_incast_check_length(ep, zdesc->length,
                                         iface->config.max_zcopy);
    if (status != UCS_OK) {
        return status;
    }

    seq = ep->super.next_seq;
    uct_o2m_incast_commit(ep, elem, slot, id, zdesc->length,
                          UCT_O2M_ELEM_FLAG_ZCOPY);
    return uct_o2m_ep_add_zcopy(&ep->super, &ep->super.zcopy_reqs, seq, comp);
}

unsigned uct_o2m_incast_send_progress(uct_o2m_group_ep_t *ep)
{
    if (ucs_unlikely(ep->seg == NULL) && !uct_o2m_group_try_attach(ep)) {
        return 0;
    }

    if (!ucs_queue_is_empty(&ep->super.zcopy_reqs) ||
        !ucs_queue_is_empty(&ep->super.flush_reqs)) {
        uct_o2m_incast_send_update(ep);
    }

    if (!ucs_queue_is_empty(&ep->super.pending)) {
        uct_o2m_ep_dispatch_pending(&ep->super);
    }

    return 0;
}
