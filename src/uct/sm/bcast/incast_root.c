/**
 * ucx-o2m: sm_incast, the root of a fan-in ring: it waits for every
 * contribution of a round, combines them (gather, or reduction in member
 * order), delivers the result and frees the element.  See incast_ep.h.
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


/* The root of a fan-in group: it reads the contributions */
typedef struct uct_o2m_incast_root_ep {
    uct_o2m_group_ep_t  super;
    uint64_t            rx_seq;     /* Next round to deliver */
    unsigned            rx_seen;    /* Stamped (CENTRALIZED, one sender):
                                       slots of round rx_seq already seen */
    uct_o2m_elem_info_t *rx_slots;  /* The slots of a round, copied out and
                                       checked */
} uct_o2m_incast_root_ep_t;

/* Created with it (at the end of the file) */
static const uct_o2m_group_ops_t uct_o2m_incast_root_ops;


/* Whether all contributions of round rx_seq are in */
static int uct_o2m_incast_round_complete(uct_o2m_incast_root_ep_t *root,
                                         void *elem)
{
    uct_o2m_group_ep_t *ep = &root->super;
    unsigned num_senders   = uct_o2m_group_num_peers(ep);

    if (!uct_o2m_incast_stamped(ep)) {
        return __atomic_load_n(&uct_o2m_incast_ctl(elem)->arrived,
                               __ATOMIC_ACQUIRE) == num_senders;
    }

    while ((root->rx_seen < num_senders) &&
           uct_o2m_elem_ready(uct_o2m_incast_slot(ep, elem, root->rx_seen),
                              root->rx_seq)) {
        ++root->rx_seen;
    }

    return root->rx_seen == num_senders;
}

/* Whether some contributions of round rx_seq have arrived */
static int uct_o2m_incast_root_waiting(uct_o2m_group_ep_t *ep)
{
    uct_o2m_incast_root_ep_t *root = ucs_derived_of(ep,
                                                    uct_o2m_incast_root_ep_t);
    void *elem                     = uct_o2m_incast_elem(ep, root->rx_seq);

    if (uct_o2m_incast_stamped(ep)) {
        uct_o2m_incast_round_complete(root, elem);
        return root->rx_seen > 0;
    }

    return __atomic_load_n(&uct_o2m_incast_ctl(elem)->arrived,
                           __ATOMIC_ACQUIRE) > 0;
}

/* The word the next contribution of round rx_seq changes: the "arrived"
 * count, or the stamp of the first slot not seen yet */
static ucs_status_t uct_o2m_incast_root_rx_watch(uct_o2m_group_ep_t *ep,
                                                 uct_o2m_rx_watch_t *watch)
{
    uct_o2m_incast_root_ep_t *root = ucs_derived_of(ep,
                                                    uct_o2m_incast_root_ep_t);
    void *elem                     = uct_o2m_incast_elem(ep, root->rx_seq);
    const uct_o2m_elem_t *slot;

    if (uct_o2m_incast_round_complete(root, elem)) {
        return UCS_ERR_BUSY;
    }

    if (!uct_o2m_incast_stamped(ep)) {
        /* read once: a count that reached num_senders since the check
         * above must not be taken as the "nothing ready" value */
        watch->addr  = (const void*)&uct_o2m_incast_ctl(elem)->arrived;
        watch->size  = sizeof(uint32_t);
        watch->value = __atomic_load_n(&uct_o2m_incast_ctl(elem)->arrived,
                                       __ATOMIC_ACQUIRE);
        return (watch->value == uct_o2m_group_num_peers(ep)) ?
               UCS_ERR_BUSY : UCS_OK;
    }

    slot         = uct_o2m_incast_slot(ep, elem, root->rx_seen);
    watch->addr  = (const void*)&slot->seq;
    watch->size  = sizeof(uint64_t);
    watch->value = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
    return (watch->value == root->rx_seq + 1) ? UCS_ERR_BUSY : UCS_OK;
}

/* Read the zcopy contribution of @a slot, of @a length bytes, into @a dst */
static ucs_status_t uct_o2m_incast_read(uct_o2m_group_ep_t *ep,
                                        uct_o2m_elem_t *slot, size_t length,
                                        void *dst, const char **why_p)
{
    uct_o2m_zdesc_t zdesc;
    ucs_status_t status;

    /* The descriptor is copied again: its length must not have changed
     * since the slot was parsed */
    status = uct_o2m_zdesc_copy(UCT_O2M_ELEM_DATA(slot), length, &zdesc,
                                why_p);
    if (status != UCS_OK) {
        return status;
    }

    if (zdesc.length != length) {
        *why_p = "zcopy length changed";
        return UCS_ERR_INVALID_PARAM;
    }

    return uct_o2m_zcopy_read(&zdesc, dst);
}

/* Contribution of sender @a pos: in its slot, or read from its memory */
static ucs_status_t uct_o2m_incast_fetch(uct_o2m_incast_root_ep_t *root,
                                         unsigned pos, uct_o2m_elem_t *slot,
                                         size_t length, void *tmp,
                                         const void **data_p,
                                         const char **why_p)
{
    if (!(root->rx_slots[pos].flags & UCT_O2M_ELEM_FLAG_ZCOPY)) {
        *data_p = UCT_O2M_ELEM_DATA(slot);
        return UCS_OK;
    }

    *data_p = tmp;
    return uct_o2m_incast_read(&root->super, slot, length, tmp, why_p);
}

static ucs_status_t uct_o2m_incast_gather(uct_o2m_incast_root_ep_t *root,
                                          void *elem, size_t length,
                                          void *result, const char **why_p)
{
    uct_o2m_group_ep_t *ep    = &root->super;
    unsigned pos, num_senders = uct_o2m_group_num_peers(ep);
    uct_o2m_elem_t *slot;
    ucs_status_t status;
    void *dst;

    for (pos = 0; pos < num_senders; ++pos) {
        slot = uct_o2m_incast_slot(ep, elem, pos);
        dst  = UCS_PTR_BYTE_OFFSET(result, pos * length);
        if (root->rx_slots[pos].flags & UCT_O2M_ELEM_FLAG_ZCOPY) {
            status = uct_o2m_incast_read(ep, slot, length, dst, why_p);
            if (status != UCS_OK) {
                return status;
            }
        } else {
            memcpy(dst, UCT_O2M_ELEM_DATA(slot), length);
        }
    }

    return UCS_OK;
}

static ucs_status_t uct_o2m_incast_reduce_all(uct_o2m_incast_root_ep_t *root,
                                              void *elem, size_t length,
                                              int shared, void *result,
                                              const char **why_p)
{
    uct_o2m_group_ep_t *ep    = &root->super;
    uct_o2m_iface_t *iface    = ucs_derived_of(ep->super.super.super.iface,
                                               uct_o2m_iface_t);
    unsigned num_senders      = uct_o2m_group_num_peers(ep);
    size_t hdr_len            = ep->hdr_len;
    size_t count              = (length - hdr_len) / ep->dt_size;
    int have_result           = 0;
    uct_o2m_elem_t *slot;
    ucs_status_t status;
    const void *data;
    void *tmp        = NULL;
    unsigned pos;

    /* Some senders reduced into the shared buffer (length <= max_length,
     * which fits it: checked by uct_o2m_slot_parse) */
    if (shared) {
        memcpy(UCS_PTR_BYTE_OFFSET(result, hdr_len),
               UCS_PTR_BYTE_OFFSET(uct_o2m_incast_shared(elem), hdr_len),
               length - hdr_len);
        have_result = 1;
    }

    for (pos = 0; pos < num_senders; ++pos) {
        slot = uct_o2m_incast_slot(ep, elem, pos);
        if (root->rx_slots[pos].flags & UCT_O2M_ELEM_FLAG_SHARED) {
            /* Already in the shared buffer; its slot has the header */
            if (pos == 0) {
                memcpy(result, UCT_O2M_ELEM_DATA(slot), hdr_len);
            }
            continue;
        }

        if ((root->rx_slots[pos].flags & UCT_O2M_ELEM_FLAG_ZCOPY) &&
            !have_result && !uct_o2m_incast_is_logical(ep->op)) {
            /* The first contribution is the result so far: read it there */
            status = uct_o2m_incast_read(ep, slot, length, result, why_p);
            if (status != UCS_OK) {
                return status;
            }
            have_result = 1;
            continue;
        }

        if ((root->rx_slots[pos].flags & UCT_O2M_ELEM_FLAG_ZCOPY) &&
            (tmp == NULL)) {
            tmp = uct_o2m_iface_rx_buf(iface, 0, length);
            if (tmp == NULL) {
                return UCS_ERR_NO_MEMORY;
            }
        }

        status = uct_o2m_incast_fetch(root, pos, slot, length, tmp, &data,
                                      why_p);
        if (status != UCS_OK) {
            return status;
        }

        if (pos == 0) {
            memcpy(result, data, hdr_len);
        }

        if (!have_result) {
            uct_o2m_incast_first(ep, UCS_PTR_BYTE_OFFSET(result, hdr_len),
                                 UCS_PTR_BYTE_OFFSET(data, hdr_len), count);
            have_result = 1;
        } else {
            uct_o2m_reduce(ep->op, ep->dtype,
                           UCS_PTR_BYTE_OFFSET(result, hdr_len),
                           UCS_PTR_BYTE_OFFSET(data, hdr_len), count);
        }
    }

    return UCS_OK;
}

/*
 * Copy the slot headers of a complete round out of shared memory and check
 * them: every later use of a length or flag is of these copies.
 */
static ucs_status_t
uct_o2m_incast_parse_round(uct_o2m_incast_root_ep_t *root, void *elem,
                           size_t *length_p, int *shared_p,
                           const char **why_p)
{
    uct_o2m_group_ep_t *ep    = &root->super;
    uct_o2m_iface_t *iface    = ucs_derived_of(ep->super.super.super.iface,
                                               uct_o2m_iface_t);
    unsigned pos, num_senders = uct_o2m_group_num_peers(ep);
    uct_o2m_elem_info_t *info;
    ucs_status_t status;

    if (ucs_unlikely(root->rx_slots == NULL)) {
        root->rx_slots = ucs_calloc(num_senders, sizeof(*root->rx_slots),
                                    "o2m incast slots");
        if (root->rx_slots == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }

    *shared_p = 0;
    for (pos = 0; pos < num_senders; ++pos) {
        info   = &root->rx_slots[pos];
        status = uct_o2m_slot_parse(uct_o2m_incast_slot(ep, elem, pos),
                                    &ep->geom, ep->dt_size,
                                    iface->config.max_zcopy, info, why_p);
        if (status != UCS_OK) {
            return status;
        }

        if (info->length != root->rx_slots[0].length) {
            ucs_error("group 0x%" PRIx64 " round %" PRIu64 ": member "
                      "contributions differ in length (%" PRIu64 " and "
                      "%" PRIu64 ")", ep->group_id, root->rx_seq,
                      root->rx_slots[0].length, info->length);
            return UCS_ERR_INVALID_PARAM;
        }

        *shared_p |= !!(info->flags & UCT_O2M_ELEM_FLAG_SHARED);
    }

    *length_p = root->rx_slots[0].length;
    return UCS_OK;
}

static ucs_status_t uct_o2m_incast_deliver(uct_o2m_incast_root_ep_t *root,
                                           void *elem, size_t *length_p,
                                           int *shared_p, const char **why_p)
{
    uct_o2m_group_ep_t *ep = &root->super;
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    unsigned num_senders   = uct_o2m_group_num_peers(ep);
    uct_o2m_elem_t *first  = uct_o2m_incast_slot(ep, elem, 0);
    size_t length, result_length;
    ucs_status_t status;
    void *result;

    status = uct_o2m_incast_parse_round(root, elem, length_p, shared_p, why_p);
    if (status != UCS_OK) {
        return status;
    }

    length = *length_p;
    if ((num_senders == 1) && (root->rx_slots[0].flags == 0) &&
        !uct_o2m_incast_is_logical(ep->op)) {
        /* One contribution is its own result: deliver it from its slot */
        uct_iface_invoke_am(&iface->super.super, root->rx_slots[0].am_id,
                            UCT_O2M_ELEM_DATA(first), length, 0);
        return UCS_OK;
    }

    result_length = (ep->op == UCT_O2M_OP_GATHER) ? (length * num_senders) :
                    length;
    if (result_length > UINT32_MAX) {
        *why_p = "gathered result exceeds 4 GiB";
        return UCS_ERR_INVALID_PARAM;
    }

    result = uct_o2m_iface_rx_buf(iface, 1, ucs_max(result_length, 1));
    if (result == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    if (ep->op == UCT_O2M_OP_GATHER) {
        status = uct_o2m_incast_gather(root, elem, length, result, why_p);
    } else {
        status = uct_o2m_incast_reduce_all(root, elem, length, *shared_p,
                                           result, why_p);
    }
    if (status != UCS_OK) {
        return status;
    }

    uct_iface_invoke_am(&iface->super.super, root->rx_slots[0].am_id, result,
                        result_length, 0);
    return UCS_OK;
}

/* Make the element ready for round rx_seq + depth */
static void uct_o2m_incast_release(uct_o2m_incast_root_ep_t *root,
                                   void *elem, size_t length, int shared)
{
    uct_o2m_incast_ctl_t *ctl = uct_o2m_incast_ctl(elem);

    if ((root->super.mode == UCT_O2M_MODE_ATOMIC) && shared) {
        uct_o2m_incast_fill_identity(&root->super, elem, length);
    }

    ctl->arrived      = 0;
    ctl->shared_count = 0;
    root->rx_seen     = 0;
    ++root->rx_seq;
}

/* Free the released elements for the senders: once per progress call, so
 * that a stream of rounds does not bounce this line once per round */
static void
uct_o2m_incast_publish_delivered(uct_o2m_incast_root_ep_t *root)
{
    __atomic_store_n(&root->super.seg->delivered, root->rx_seq,
                     __ATOMIC_RELEASE);
}

static unsigned uct_o2m_incast_root_progress(uct_o2m_ep_t *o2m_ep)
{
    uct_o2m_incast_root_ep_t *root = ucs_derived_of(o2m_ep,
                                                    uct_o2m_incast_root_ep_t);
    uct_o2m_group_ep_t *ep         = &root->super;
    unsigned count                 = 0;
    ucs_status_t status;
    const char *why;
    size_t length;
    int shared;
    void *elem;

    while (count < UCT_O2M_MAX_AM_PER_PROG) {
        elem = uct_o2m_incast_elem(ep, root->rx_seq);
        if (!uct_o2m_incast_round_complete(root, elem)) {
            break;
        }

        length = 0;
        shared = 0;
        why    = NULL;
        status = uct_o2m_incast_deliver(root, elem, &length, &shared, &why);
        if (status != UCS_OK) {
            ucs_error("group 0x%" PRIx64 ": round %" PRIu64 " failed: %s%s%s",
                      ep->group_id, root->rx_seq, ucs_status_string(status),
                      (why != NULL) ? ": " : "", (why != NULL) ? why : "");
            __atomic_store_n(&ep->seg->failed, status, __ATOMIC_RELEASE);
            uct_o2m_ep_set_failed(&ep->super, status);
            break;
        }

        uct_o2m_incast_release(root, elem, length, shared);
        ++count;
    }

    if (count > 0) {
        uct_o2m_incast_publish_delivered(root);
    }

    return count;
}

/* Rounds delivered: what the root got as far as, and its progress mark */
static uint64_t uct_o2m_incast_root_done(const uct_o2m_group_ep_t *ep)
{
    return ucs_derived_of(ep, uct_o2m_incast_root_ep_t)->rx_seq;
}

/* Round rx_seq is awaited once some of it has arrived: a sender that left
 * before contributing to it has failed the group */
static int uct_o2m_incast_root_left_early(const uct_o2m_group_ep_t *ep,
                                          uint64_t done, int waiting)
{
    return waiting && (done <= uct_o2m_incast_root_done(ep));
}

static UCS_CLASS_INIT_FUNC(uct_o2m_incast_root_ep_t, uct_o2m_iface_t *iface,
                           const uct_o2m_group_params_t *params,
                           const uct_o2m_group_args_t *args)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_o2m_group_ep_t, iface, params,
                              &uct_o2m_incast_root_ops, args);

    self->rx_seq   = 0;
    self->rx_seen  = 0;
    self->rx_slots = NULL;
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_incast_root_ep_t)
{
    ucs_free(self->rx_slots);
}

UCS_CLASS_DEFINE(uct_o2m_incast_root_ep_t, uct_o2m_group_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_o2m_incast_root_ep_t, uct_o2m_group_ep_t,
                          uct_o2m_iface_t*, const uct_o2m_group_params_t*,
                          const uct_o2m_group_args_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_o2m_incast_root_ep_t, uct_o2m_ep_t);

/* A reader: no send operations */
static const uct_o2m_group_ops_t uct_o2m_incast_root_ops = {
    .super = {
        .name     = "fan-in root",
        .progress = uct_o2m_incast_root_progress,
        .check    = uct_o2m_group_check,
        .destroy  = UCS_CLASS_DELETE_FUNC_NAME(uct_o2m_incast_root_ep_t)
    },
    .done         = uct_o2m_incast_root_done,
    .root_waiting = uct_o2m_incast_root_waiting,
    .root_mark    = uct_o2m_incast_root_done,
    .left_early   = uct_o2m_incast_root_left_early,
    .rx_watch     = uct_o2m_incast_root_rx_watch
};
