/**
 * ucx-o2m: sm_bcast, the fan-out ring.  See o2m_group.h for the protocol.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_group.h"

#include <ucs/debug/log.h>
#include <string.h>


/* The root of a fan-out group: the only sender */
typedef struct uct_o2m_bcast_root_ep {
    uct_o2m_group_ep_t super;
    uint64_t           completed;   /* Every receiver consumed the messages
                                       below this */
} uct_o2m_bcast_root_ep_t;

/* A receiver of a fan-out group */
typedef struct uct_o2m_bcast_recv_ep {
    uct_o2m_group_ep_t super;
    uint64_t           rx_seq;      /* Next message to deliver */
} uct_o2m_bcast_recv_ep_t;

/* Each created with its role's ops (at the end of the file) */
static const uct_o2m_group_ops_t uct_o2m_bcast_root_ops;
static const uct_o2m_group_ops_t uct_o2m_bcast_recv_ops;


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

/* Advance root->completed: messages below it were consumed by everyone */
static void uct_o2m_bcast_root_reclaim(uct_o2m_bcast_root_ep_t *root)
{
    uct_o2m_group_ep_t *ep = &root->super;
    unsigned num_receivers = uct_o2m_group_num_peers(ep);

    if (ep->mode == UCT_O2M_MODE_BATCHED) {
        /* Reset each counter here, off the send path: the element is free
         * and nobody writes its counter until it is published again */
        while ((root->completed < ep->super.next_seq) &&
               (__atomic_load_n(uct_o2m_bcast_ack(ep, root->completed),
                                __ATOMIC_ACQUIRE) == num_receivers)) {
            *uct_o2m_bcast_ack(ep, root->completed) = 0;
            ++root->completed;
        }
    } else {
        root->completed = uct_o2m_bcast_min_consumed(ep);
    }

    uct_o2m_ep_complete_upto(&ep->super, root->completed);
}


/* ------------------------------------------------------------------------ */
/* Root                                                                    */

static int uct_o2m_bcast_root_has_space(uct_o2m_ep_t *o2m_ep)
{
    uct_o2m_bcast_root_ep_t *root = ucs_derived_of(o2m_ep,
                                                   uct_o2m_bcast_root_ep_t);

    if ((o2m_ep->next_seq - root->completed) < root->super.depth) {
        return 1;
    }

    uct_o2m_bcast_root_reclaim(root);
    return (o2m_ep->next_seq - root->completed) < root->super.depth;
}

/* The element for the next message, or NULL while the ring is full */
static UCS_F_ALWAYS_INLINE uct_o2m_elem_t *
uct_o2m_bcast_root_claim(uct_o2m_ep_t *o2m_ep, uint64_t *seq_p,
                         ucs_status_t *status_p)
{
    uct_o2m_group_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_group_ep_t);

    if (ucs_unlikely(!uct_o2m_bcast_root_has_space(o2m_ep))) {
        *status_p = UCS_ERR_NO_RESOURCE;
        return NULL;
    }

    *seq_p = ep->super.next_seq;
    return uct_o2m_group_elem(ep, ep->super.next_seq);
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_o2m_bcast_root_publish(uct_o2m_ep_t *o2m_ep, uct_o2m_elem_t *elem,
                           uint64_t seq)
{
    uct_o2m_elem_publish(elem, seq);
    o2m_ep->next_seq = seq + 1;
    return UCS_OK;
}

static ucs_status_t uct_o2m_bcast_am_short(uct_o2m_ep_t *o2m_ep, uint8_t id,
                                           uint64_t header,
                                           const void *payload,
                                           unsigned length)
{
    UCT_CHECK_LENGTH(length + sizeof(header), 0,
                     ucs_derived_of(o2m_ep, uct_o2m_group_ep_t)->max_length,
                     "am_short");

    return uct_o2m_ep_send_short(o2m_ep, uct_o2m_bcast_root_claim,
                                 uct_o2m_bcast_root_publish, id, header,
                                 payload, length);
}

static ssize_t uct_o2m_bcast_am_bcopy(uct_o2m_ep_t *o2m_ep, uint8_t id,
                                      uct_pack_callback_t pack_cb, void *arg)
{
    return uct_o2m_ep_send_bcopy(o2m_ep, uct_o2m_bcast_root_claim,
                                 uct_o2m_bcast_root_publish,
                                 ucs_derived_of(o2m_ep,
                                                uct_o2m_group_ep_t)->max_length,
                                 id, pack_cb, arg);
}

static ucs_status_t
uct_o2m_bcast_am_zcopy(uct_o2m_ep_t *o2m_ep, uint8_t id, const void *header,
                       unsigned header_length, const uct_iov_t *iov,
                       size_t iovcnt, uct_completion_t *comp)
{
    return uct_o2m_ep_send_zcopy(o2m_ep, uct_o2m_bcast_root_claim,
                                 uct_o2m_bcast_root_publish,
                                 uct_o2m_ep_track_zcopy, 1, id, header,
                                 header_length, iov, iovcnt, comp);
}

/*
 * The root tells its receivers before its zcopy completions fire: a
 * receiver still reading a buffer the user may now rewrite sees the word
 * after its read and drops the copy (uct_o2m_deliver_elem).
 */
static void uct_o2m_bcast_root_failing(uct_o2m_ep_t *o2m_ep,
                                       ucs_status_t status)
{
    uct_o2m_group_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_group_ep_t);

    if (ep->seg != NULL) {
        __atomic_store_n(&ep->seg->failed, status, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
}

static unsigned uct_o2m_bcast_root_progress(uct_o2m_ep_t *o2m_ep)
{
    if (!ucs_queue_is_empty(&o2m_ep->zcopy_reqs) ||
        !ucs_queue_is_empty(&o2m_ep->flush_reqs)) {
        uct_o2m_bcast_root_reclaim(ucs_derived_of(o2m_ep,
                                                  uct_o2m_bcast_root_ep_t));
    }

    if (!ucs_queue_is_empty(&o2m_ep->pending)) {
        uct_o2m_ep_dispatch_pending(o2m_ep);
    }

    return 0;
}

/* A receiver that lost a message fails the group */
static void uct_o2m_bcast_root_check_lost(uct_o2m_group_ep_t *ep)
{
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < ep->size; ++i) {
        status = __atomic_load_n(&ep->members[i].lost_status,
                                 __ATOMIC_ACQUIRE);
        if (status != UCS_OK) {
            /* Written by a peer: pass on error codes only */
            if ((status > 0) || (status <= UCS_ERR_LAST)) {
                status = UCS_ERR_IO_ERROR;
            }
            uct_o2m_group_fail(ep, status, "member lost a message", i);
            return;
        }
    }
}

static void uct_o2m_bcast_root_check(uct_o2m_ep_t *o2m_ep, int stalled)
{
    if (o2m_ep->status == UCS_OK) {
        uct_o2m_bcast_root_check_lost(ucs_derived_of(o2m_ep,
                                                     uct_o2m_group_ep_t));
    }

    uct_o2m_group_check(o2m_ep, stalled);
}

static uint64_t uct_o2m_bcast_root_update(uct_o2m_group_ep_t *ep)
{
    uct_o2m_bcast_root_ep_t *root = ucs_derived_of(ep,
                                                   uct_o2m_bcast_root_ep_t);

    uct_o2m_bcast_root_reclaim(root);
    return root->completed;
}

static int uct_o2m_bcast_root_waiting(uct_o2m_group_ep_t *ep)
{
    return uct_o2m_bcast_root_update(ep) < ep->super.next_seq;
}

static uint64_t uct_o2m_bcast_root_mark(const uct_o2m_group_ep_t *ep)
{
    return ucs_derived_of(ep, uct_o2m_bcast_root_ep_t)->completed;
}

/* A receiver that left must have consumed everything sent */
static int uct_o2m_bcast_root_left_early(const uct_o2m_group_ep_t *ep,
                                         uint64_t done, int waiting)
{
    return done < ep->super.next_seq;
}

static UCS_CLASS_INIT_FUNC(uct_o2m_bcast_root_ep_t, uct_o2m_iface_t *iface,
                           const uct_o2m_group_params_t *params,
                           const uct_o2m_group_args_t *args)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_o2m_group_ep_t, iface, params,
                              &uct_o2m_bcast_root_ops, args);

    self->completed = 0;
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_bcast_root_ep_t)
{
}

UCS_CLASS_DEFINE(uct_o2m_bcast_root_ep_t, uct_o2m_group_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_o2m_bcast_root_ep_t, uct_o2m_group_ep_t,
                          uct_o2m_iface_t*, const uct_o2m_group_params_t*,
                          const uct_o2m_group_args_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_o2m_bcast_root_ep_t, uct_o2m_ep_t);

static const uct_o2m_group_ops_t uct_o2m_bcast_root_ops = {
    .super = {
        .name         = "fan-out root",
        .am_short     = uct_o2m_bcast_am_short,
        .am_bcopy     = uct_o2m_bcast_am_bcopy,
        .am_zcopy     = uct_o2m_bcast_am_zcopy,
        .has_space    = uct_o2m_bcast_root_has_space,
        .flush_status = uct_o2m_group_flush_status,
        .failing      = uct_o2m_bcast_root_failing,
        .progress     = uct_o2m_bcast_root_progress,
        .check        = uct_o2m_bcast_root_check,
        .destroy      = UCS_CLASS_DELETE_FUNC_NAME(uct_o2m_bcast_root_ep_t)
    },
    .done         = uct_o2m_group_sent,
    .update       = uct_o2m_bcast_root_update,
    .root_waiting = uct_o2m_bcast_root_waiting,
    .root_mark    = uct_o2m_bcast_root_mark,
    .left_early   = uct_o2m_bcast_root_left_early
};


/* ------------------------------------------------------------------------ */
/* Receivers                                                               */

static unsigned uct_o2m_bcast_recv_progress(uct_o2m_ep_t *o2m_ep)
{
    uct_o2m_bcast_recv_ep_t *recv = ucs_derived_of(o2m_ep,
                                                   uct_o2m_bcast_recv_ep_t);
    uct_o2m_group_ep_t *ep = &recv->super;
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
        elem = uct_o2m_group_elem(ep, recv->rx_seq);
        if (!uct_o2m_elem_ready(elem, recv->rx_seq)) {
            break;
        }

        status = uct_o2m_deliver_elem(iface, elem, ep->max_length,
                                      &ep->seg->failed, &why);
        if (ucs_unlikely(status != UCS_OK)) {
            ucs_error("group 0x%" PRIx64 " member %u: lost message %" PRIu64
                      ": %s%s%s", ep->group_id, ep->my_index, recv->rx_seq,
                      ucs_status_string(status), (why != NULL) ? ": " : "",
                      (why != NULL) ? why : "");
            /* The root's completions must fail too, not wait for our ack */
            __atomic_store_n(&ep->members[ep->my_index].lost_status, status,
                             __ATOMIC_RELEASE);
            uct_o2m_ep_set_failed(&ep->super, status);
            return count;
        }

        if (ep->mode == UCT_O2M_MODE_BATCHED) {
            __atomic_fetch_add(uct_o2m_bcast_ack(ep, recv->rx_seq), 1,
                               __ATOMIC_RELEASE);
        } else {
            __atomic_store_n(&ep->members[ep->my_index].consumed,
                             recv->rx_seq + 1, __ATOMIC_RELEASE);
        }

        ++recv->rx_seq;
        ++count;
    }

    return count;
}

/* The word the root's next message changes: the stamp of its element */
static ucs_status_t uct_o2m_bcast_recv_rx_watch(uct_o2m_group_ep_t *ep,
                                                uct_o2m_rx_watch_t *watch)
{
    uct_o2m_bcast_recv_ep_t *recv = ucs_derived_of(ep,
                                                   uct_o2m_bcast_recv_ep_t);
    const uct_o2m_elem_t *elem    = uct_o2m_group_elem(ep, recv->rx_seq);

    watch->addr  = (const void*)&elem->seq;
    watch->size  = sizeof(uint64_t);
    watch->value = __atomic_load_n(&elem->seq, __ATOMIC_ACQUIRE);
    return (watch->value == recv->rx_seq + 1) ? UCS_ERR_BUSY : UCS_OK;
}

/*
 * A receiver that consumed everything has finished, which is no failure;
 * but if it is waiting for more (@a stalled, from uct_ep_check()), or the
 * root has exited too, nothing more will come: it must not wait forever.
 */
static void uct_o2m_bcast_recv_root_closed(uct_o2m_group_ep_t *ep,
                                           uint64_t final_seq, int stalled)
{
    if ((ucs_derived_of(ep, uct_o2m_bcast_recv_ep_t)->rx_seq >= final_seq) &&
        (stalled || uct_o2m_watch_has_exited(ep->watches[ep->root_index]))) {
        uct_o2m_group_fail(ep, UCS_ERR_CONNECTION_RESET,
                           "the root closed the group and this member "
                           "consumed all it sent", ep->root_index);
    }
}

static uint64_t uct_o2m_bcast_recv_done(const uct_o2m_group_ep_t *ep)
{
    return ucs_derived_of(ep, uct_o2m_bcast_recv_ep_t)->rx_seq;
}

static UCS_CLASS_INIT_FUNC(uct_o2m_bcast_recv_ep_t, uct_o2m_iface_t *iface,
                           const uct_o2m_group_params_t *params,
                           const uct_o2m_group_args_t *args)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_o2m_group_ep_t, iface, params,
                              &uct_o2m_bcast_recv_ops, args);

    self->rx_seq = 0;
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_bcast_recv_ep_t)
{
}

UCS_CLASS_DEFINE(uct_o2m_bcast_recv_ep_t, uct_o2m_group_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_o2m_bcast_recv_ep_t, uct_o2m_group_ep_t,
                          uct_o2m_iface_t*, const uct_o2m_group_params_t*,
                          const uct_o2m_group_args_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_o2m_bcast_recv_ep_t, uct_o2m_ep_t);

/* A reader: no send operations */
static const uct_o2m_group_ops_t uct_o2m_bcast_recv_ops = {
    .super = {
        .name     = "fan-out receiver",
        .progress = uct_o2m_bcast_recv_progress,
        .check    = uct_o2m_group_check,
        .destroy  = UCS_CLASS_DELETE_FUNC_NAME(uct_o2m_bcast_recv_ep_t)
    },
    .done        = uct_o2m_bcast_recv_done,
    .root_closed = uct_o2m_bcast_recv_root_closed,
    .rx_watch    = uct_o2m_bcast_recv_rx_watch
};
