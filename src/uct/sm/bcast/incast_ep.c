/**
 * ucx-o2m: sm_incast, the fan-in ring: its layout and the senders.  See
 * incast_ep.h for the protocol; the root is in incast_root.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "incast_ep.h"
#include "o2m_reduce.h"
#include "o2m_check.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/* Bounded wait for the lock of the shared buffer before NO_RESOURCE */
#define UCT_O2M_INCAST_LOCK_SPINS 4096


/* A sender (contributor) of a fan-in group */
typedef struct uct_o2m_incast_send_ep {
    uct_o2m_group_ep_t super;
    uint64_t           completed;   /* The root delivered the rounds below
                                       this */
    unsigned           my_pos;      /* Its slot in an element */
    uct_o2m_elem_t     *scratch;    /* A contribution filled aside, before
                                       it is reduced or copied into the
                                       slot */
} uct_o2m_incast_send_ep_t;

/* Created with it (at the end of the file) */
static const uct_o2m_group_ops_t uct_o2m_incast_send_ops;


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

static uint64_t uct_o2m_incast_send_update(uct_o2m_group_ep_t *ep)
{
    uct_o2m_incast_send_ep_t *sender = ucs_derived_of(
                                           ep, uct_o2m_incast_send_ep_t);

    /* Written by the root: never beyond what we sent */
    sender->completed = ucs_min(__atomic_load_n(&ep->seg->delivered,
                                                __ATOMIC_ACQUIRE),
                                ep->super.next_seq);
    uct_o2m_ep_complete_upto(&ep->super, sender->completed);
    return sender->completed;
}

static int uct_o2m_incast_send_has_space(uct_o2m_ep_t *o2m_ep)
{
    uct_o2m_incast_send_ep_t *sender = ucs_derived_of(
                                           o2m_ep, uct_o2m_incast_send_ep_t);
    uct_o2m_group_ep_t *ep           = &sender->super;

    if (ucs_unlikely(ep->seg == NULL)) {
        /* A send waits for the group from now on (opt-in deadline) */
        if (ep->wait_since == 0) {
            ep->wait_since = ucs_get_time();
        }
        if (!uct_o2m_group_try_attach(ep)) {
            return 0;
        }
    }

    if ((ep->super.next_seq - sender->completed) < ep->depth) {
        return 1;
    }

    uct_o2m_incast_send_update(ep);
    return (ep->super.next_seq - sender->completed) < ep->depth;
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
    if (ucs_unlikely(!uct_o2m_incast_send_has_space(&ep->super)) ||
        ucs_unlikely(__atomic_load_n(&ep->seg->closed, __ATOMIC_RELAXED))) {
        return uct_o2m_incast_send_status(ep);
    }

    return UCS_OK;
}

static UCS_F_NOINLINE ucs_status_t
uct_o2m_incast_bad_length(uct_o2m_group_ep_t *ep, size_t length, size_t max)
{
    if (length > max) {
        ucs_error("group 0x%" PRIx64 ": contribution of %zu bytes exceeds "
                  "%zu", ep->group_id, length, max);
    } else {
        ucs_error("group 0x%" PRIx64 ": contribution of %zu bytes is not "
                  "%zu header bytes and whole %s elements", ep->group_id,
                  length, ep->hdr_len, uct_o2m_dtype_name(ep->dtype));
    }

    return UCS_ERR_INVALID_PARAM;
}

/* On every send: the checks inline, the report out of the way */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_o2m_incast_check_length(uct_o2m_group_ep_t *ep, size_t length, size_t max)
{
    if (ucs_unlikely((length > max) || (length < ep->hdr_len) ||
                     ((length - ep->hdr_len) % ep->dt_size))) {
        return uct_o2m_incast_bad_length(ep, length, max);
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

/* Make the contribution in @a slot, its header written, count for the root */
static UCS_F_ALWAYS_INLINE void
uct_o2m_incast_commit(uct_o2m_group_ep_t *ep, uct_o2m_elem_t *slot)
{
    uint64_t seq = ep->super.next_seq++;

    if (uct_o2m_incast_stamped(ep)) {
        uct_o2m_elem_publish(slot, seq);
    } else {
        slot->seq = seq + 1;
        __atomic_fetch_add(&uct_o2m_incast_ctl(uct_o2m_incast_elem(ep, seq))
                                   ->arrived, 1, __ATOMIC_RELEASE);
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

/* Our slot of the element of the next round, once a send may go */
static UCS_F_ALWAYS_INLINE uct_o2m_elem_t *
uct_o2m_incast_claim_slot(uct_o2m_ep_t *o2m_ep, uint64_t *seq_p,
                          ucs_status_t *status_p)
{
    uct_o2m_incast_send_ep_t *sender = ucs_derived_of(
                                           o2m_ep, uct_o2m_incast_send_ep_t);
    uct_o2m_group_ep_t *ep           = &sender->super;

    *status_p = uct_o2m_incast_send_check(ep);
    if (*status_p != UCS_OK) {
        return NULL;
    }

    *seq_p = ep->super.next_seq;
    return uct_o2m_incast_slot(ep, uct_o2m_incast_elem(ep, *seq_p),
                               sender->my_pos);
}

/*
 * Where a short or bcopy contribution is filled: our slot, or a scratch
 * element when the root's limit is below ours (the length is checked before
 * it reaches the slot) or when it is reduced into the shared buffer (under
 * the lock in LOCKED mode: taken here, before the pack callback runs).
 */
static UCS_F_ALWAYS_INLINE uct_o2m_elem_t *
uct_o2m_incast_claim(uct_o2m_ep_t *o2m_ep, uint64_t *seq_p,
                     ucs_status_t *status_p)
{
    uct_o2m_incast_send_ep_t *sender = ucs_derived_of(
                                           o2m_ep, uct_o2m_incast_send_ep_t);
    uct_o2m_group_ep_t *ep           = &sender->super;
    uct_o2m_elem_t *slot;

    slot = uct_o2m_incast_claim_slot(o2m_ep, seq_p, status_p);
    if (ucs_unlikely(slot == NULL)) {
        return NULL;
    }

    /* pack() writes at most our max_bcopy bytes, which fit the slot */
    if ((ep->geom.shared_size == 0) &&
        ucs_likely(uct_o2m_incast_max_pack(ep) <= ep->max_length)) {
        return slot;
    }

    if (sender->scratch == NULL) {
        sender->scratch = ucs_malloc(sizeof(uct_o2m_elem_t) +
                                     ucs_max(ep->max_length,
                                             uct_o2m_incast_max_pack(ep)),
                                     "o2m incast scratch");
        if (sender->scratch == NULL) {
            *status_p = UCS_ERR_NO_MEMORY;
            return NULL;
        }
    }

    if ((ep->geom.shared_size != 0) && (ep->mode == UCT_O2M_MODE_LOCKED) &&
        !uct_o2m_incast_trylock(ep, uct_o2m_incast_ctl(
                                       uct_o2m_incast_elem(ep, *seq_p)))) {
        *status_p = UCS_ERR_NO_RESOURCE;
        return NULL;
    }

    return sender->scratch;
}

/*
 * A contribution filled in our slot or aside (uct_o2m_incast_claim): its
 * length is checked (the root's limit; header bytes and whole elements),
 * a reduced one goes into the shared buffer and its header into the slot,
 * and the round counts it.  A refused one leaves the round untouched.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_o2m_incast_publish(uct_o2m_ep_t *o2m_ep, uct_o2m_elem_t *filled,
                       uint64_t seq)
{
    uct_o2m_incast_send_ep_t *sender = ucs_derived_of(
                                           o2m_ep, uct_o2m_incast_send_ep_t);
    uct_o2m_group_ep_t *ep           = &sender->super;
    uct_o2m_iface_t *iface           = ucs_derived_of(
                                           ep->super.super.super.iface,
                                           uct_o2m_iface_t);
    size_t length          = filled->length;
    uct_o2m_elem_t *slot;
    ucs_status_t status;
    void *elem;

    status = uct_o2m_incast_check_length(ep, length,
                                         (filled->flags &
                                          UCT_O2M_ELEM_FLAG_ZCOPY) ?
                                         iface->config.max_zcopy :
                                         ep->max_length);
    if (ucs_likely(filled != sender->scratch)) {
        /* Filled in place: our slot */
        if (status != UCS_OK) {
            return status;
        }
        uct_o2m_incast_commit(ep, filled);
        return UCS_OK;
    }

    elem = uct_o2m_incast_elem(ep, seq);
    slot = uct_o2m_incast_slot(ep, elem, sender->my_pos);

    if (ep->geom.shared_size == 0) {
        if (status != UCS_OK) {
            return status;
        }
        memcpy(UCT_O2M_ELEM_DATA(slot), UCT_O2M_ELEM_DATA(filled), length);
        uct_o2m_ep_fill_hdr(slot, filled->am_id, length, 0);
        uct_o2m_incast_commit(ep, slot);
        return UCS_OK;
    }

    if (status == UCS_OK) {
        uct_o2m_incast_reduce_shared(ep, elem, UCT_O2M_ELEM_DATA(filled),
                                     length);
        memcpy(UCT_O2M_ELEM_DATA(slot), UCT_O2M_ELEM_DATA(filled),
               ep->hdr_len);
    }

    if (ep->mode == UCT_O2M_MODE_LOCKED) {
        __atomic_store_n(&uct_o2m_incast_ctl(elem)->lock, 0,
                         __ATOMIC_RELEASE);
    }

    if (status != UCS_OK) {
        return status;
    }

    uct_o2m_ep_fill_hdr(slot, filled->am_id, length,
                        UCT_O2M_ELEM_FLAG_SHARED);
    uct_o2m_incast_commit(ep, slot);
    return UCS_OK;
}

static ucs_status_t uct_o2m_incast_am_short(uct_o2m_ep_t *o2m_ep, uint8_t id,
                                            uint64_t header,
                                            const void *payload,
                                            unsigned length)
{
    uct_o2m_group_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_group_ep_t);
    ucs_status_t status;

    /* The limit is the root's: known once the group is joined.  Once it
     * is, the claim below checks for space, once */
    if (ucs_unlikely(ep->seg == NULL)) {
        status = uct_o2m_incast_send_check(ep);
        if (status != UCS_OK) {
            return status;
        }
    }

    UCT_CHECK_LENGTH(length + sizeof(header), 0, ep->max_length, "am_short");

    return uct_o2m_ep_send_short(o2m_ep, uct_o2m_incast_claim,
                                 uct_o2m_incast_publish, id, header, payload,
                                 length);
}

static ssize_t uct_o2m_incast_am_bcopy(uct_o2m_ep_t *o2m_ep, uint8_t id,
                                       uct_pack_callback_t pack_cb, void *arg)
{
    /* No assertion on the length: publish checks it */
    return uct_o2m_ep_send_bcopy(o2m_ep, uct_o2m_incast_claim,
                                 uct_o2m_incast_publish, SIZE_MAX, id,
                                 pack_cb, arg);
}

/* A large contribution always goes through the slot: the root reads it */
static ucs_status_t
uct_o2m_incast_am_zcopy(uct_o2m_ep_t *o2m_ep, uint8_t id, const void *header,
                        unsigned header_length, const uct_iov_t *iov,
                        size_t iovcnt, uct_completion_t *comp)
{
    return uct_o2m_ep_send_zcopy(o2m_ep, uct_o2m_incast_claim_slot,
                                 uct_o2m_incast_publish,
                                 uct_o2m_ep_track_zcopy, 1, id, header,
                                 header_length, iov, iovcnt, comp);
}

static unsigned uct_o2m_incast_send_progress(uct_o2m_ep_t *o2m_ep)
{
    uct_o2m_group_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_group_ep_t);

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

/* Contributions beyond the last round the root delivered are lost */
static void uct_o2m_incast_send_root_closed(uct_o2m_group_ep_t *ep,
                                            uint64_t final_seq, int stalled)
{
    if (ep->super.next_seq > final_seq) {
        uct_o2m_group_fail(ep, UCS_ERR_CONNECTION_RESET,
                           "the root closed the group before delivering "
                           "every contribution", ep->root_index);
    }
}

static UCS_CLASS_INIT_FUNC(uct_o2m_incast_send_ep_t, uct_o2m_iface_t *iface,
                           const uct_o2m_group_params_t *params,
                           const uct_o2m_group_args_t *args)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_o2m_group_ep_t, iface, params,
                              &uct_o2m_incast_send_ops, args);

    /* The slots of an element are the senders', in member order */
    self->completed = 0;
    self->my_pos    = params->my_index - (params->my_index >
                                          params->root_index);
    self->scratch   = NULL;
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_incast_send_ep_t)
{
    ucs_free(self->scratch);
}

UCS_CLASS_DEFINE(uct_o2m_incast_send_ep_t, uct_o2m_group_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_o2m_incast_send_ep_t, uct_o2m_group_ep_t,
                          uct_o2m_iface_t*, const uct_o2m_group_params_t*,
                          const uct_o2m_group_args_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_o2m_incast_send_ep_t, uct_o2m_ep_t);

static const uct_o2m_group_ops_t uct_o2m_incast_send_ops = {
    .super = {
        .name         = "fan-in sender",
        .am_short     = uct_o2m_incast_am_short,
        .am_bcopy     = uct_o2m_incast_am_bcopy,
        .am_zcopy     = uct_o2m_incast_am_zcopy,
        .has_space    = uct_o2m_incast_send_has_space,
        .flush_status = uct_o2m_group_flush_status,
        .progress     = uct_o2m_incast_send_progress,
        .check        = uct_o2m_group_check,
        .destroy      = UCS_CLASS_DELETE_FUNC_NAME(uct_o2m_incast_send_ep_t)
    },
    .done        = uct_o2m_group_sent,
    .update      = uct_o2m_incast_send_update,
    .root_closed = uct_o2m_incast_send_root_closed
};
