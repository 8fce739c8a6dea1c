/**
 * ucx-o2m: the engine-backed endpoint of the multicast transports
 * (mc_rel_ep.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_rel_ep.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>

#include <string.h>


typedef struct uct_mc_rel_ep_flush {
    ucs_queue_elem_t queue;
    uct_completion_t *comp;
} uct_mc_rel_ep_flush_t;


ucs_status_t uct_mc_rel_ep_config_rel(const uct_mc_rel_ep_config_t *config,
                                      const char *tl, const char *prefix,
                                      size_t mtu, size_t overhead,
                                      uct_mc_rel_config_t *rel)
{
    uct_mc_rel_config_default(rel);
    rel->window        = config->window;
    rel->radix         = config->radix;
    rel->mtu           = mtu - overhead;
    rel->max_msg       = config->seg_size + UCT_MC_REL_EP_AM_HDR_LEN;
    rel->rto_min       = (uint64_t)(config->rto_min * 1e9);
    rel->rto_max       = (uint64_t)(config->rto_max * 1e9);
    rel->reorder_slack = (uint64_t)(config->reorder_slack * 1e9);
    rel->peer_timeout  = (uint64_t)(config->peer_timeout * 1e9);

    if ((rel->window < 2) || (rel->window > 32768) ||
        !ucs_is_pow2(rel->window) || (rel->radix < 1) || (rel->radix > 64) ||
        (rel->rto_min == 0) || (rel->rto_min > rel->rto_max) ||
        (rel->rto_max > 3600000000000ull) ||
        (rel->reorder_slack > rel->rto_max) ||
        (rel->peer_timeout > 3600000000000ull)) {
        ucs_error("%s: %sWINDOW %u (a power of two, 2..32768), %sRADIX %u "
                  "(1..64), %sRTO_MIN <= %sRTO_MAX <= 1h, %sREORDER_SLACK <= "
                  "%sRTO_MAX, %sPEER_TIMEOUT <= 1h", tl, prefix, rel->window,
                  prefix, rel->radix, prefix, prefix, prefix, prefix, prefix);
        return UCS_ERR_INVALID_PARAM;
    }
    /* A message is in the window whole */
    if (uct_mc_rel_ep_frags(config->seg_size, rel->mtu) > rel->window) {
        ucs_error("%s: %sSEG_SIZE %zu does not fit a window of %u packets of "
                  "%zu bytes", tl, prefix, config->seg_size, rel->window,
                  rel->mtu);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

ucs_status_t uct_mc_rel_ep_init(uct_mc_rel_ep_t *ep, size_t seg_size,
                                unsigned seg_frags, size_t mtu, int is_root)
{
    ep->rel       = NULL;
    ep->seg_size  = seg_size;
    ep->seg_frags = seg_frags;
    ep->mtu       = mtu;
    ep->is_root   = is_root;
    ucs_queue_head_init(&ep->pending);
    ucs_queue_head_init(&ep->flushes);

    /* The AM header and the largest payload, as one engine message */
    ep->tx_msg = ucs_malloc(seg_size + UCT_MC_REL_EP_AM_HDR_LEN,
                            "mc_rel_ep tx");
    if (ep->tx_msg == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

static void uct_mc_rel_ep_complete_flushes(uct_mc_rel_ep_t *ep,
                                           ucs_status_t status)
{
    uct_mc_rel_ep_flush_t *flush;

    while (!ucs_queue_is_empty(&ep->flushes)) {
        flush = ucs_queue_pull_elem_non_empty(&ep->flushes,
                                              uct_mc_rel_ep_flush_t, queue);
        uct_invoke_completion(flush->comp, status);
        ucs_free(flush);
    }
}

void uct_mc_rel_ep_cancel_flushes(uct_mc_rel_ep_t *ep)
{
    uct_mc_rel_ep_complete_flushes(ep, UCS_ERR_CANCELED);
}

void uct_mc_rel_ep_cleanup(uct_mc_rel_ep_t *ep)
{
    uct_mc_rel_ep_cancel_flushes(ep);
    ucs_free(ep->tx_msg);
    ep->tx_msg = NULL;
}

int uct_mc_rel_ep_has_room(const uct_mc_rel_ep_t *ep)
{
    return (uct_mc_rel_status(ep->rel) < 0) ||
           (uct_mc_rel_tx_space(ep->rel) >= ep->seg_frags);
}

unsigned uct_mc_rel_ep_progress(uct_mc_rel_ep_t *ep)
{
    unsigned count = 0;
    uct_pending_req_t *req;
    ucs_status_t status;

    while (!ucs_queue_is_empty(&ep->pending) && uct_mc_rel_ep_has_room(ep)) {
        req = ucs_queue_head_elem_non_empty(&ep->pending, uct_pending_req_t,
                                            priv);
        ucs_queue_pull_non_empty(&ep->pending);
        if (req->func(req) != UCS_OK) {
            /* Still no room: it goes back to the front */
            ucs_queue_push_head(&ep->pending, (ucs_queue_elem_t*)req->priv);
            break;
        }
        ++count;
    }

    status = uct_mc_rel_flush(ep->rel);
    if (status != UCS_INPROGRESS) {
        uct_mc_rel_ep_complete_flushes(ep, status);
    }
    return count;
}

ucs_status_t uct_mc_rel_ep_deliver(uct_base_iface_t *iface, const void *data,
                                   size_t length)
{
    static const uint8_t zero[UCT_MC_REL_EP_AM_HDR_LEN - 1] = {0};
    const uint8_t *hdr = data;

    /* the id, and the padding 0 as sent: anything else is not ours */
    if ((length < UCT_MC_REL_EP_AM_HDR_LEN) || (hdr[0] >= UCT_AM_ID_MAX) ||
        (memcmp(hdr + 1, zero, sizeof(zero)) != 0)) {
        return UCS_ERR_INVALID_PARAM;
    }

    uct_iface_invoke_am(iface, hdr[0],
                        (void*)UCS_PTR_BYTE_OFFSET(data,
                                                   UCT_MC_REL_EP_AM_HDR_LEN),
                        length - UCT_MC_REL_EP_AM_HDR_LEN, 0);
    return UCS_OK;
}

/* The AM header of message @a id in the send buffer */
static uint8_t *uct_mc_rel_ep_am_hdr(uct_mc_rel_ep_t *ep, uint8_t id)
{
    uint8_t *buf = ep->tx_msg;

    buf[0] = id;
    memset(buf + 1, 0, UCT_MC_REL_EP_AM_HDR_LEN - 1);
    return buf + UCT_MC_REL_EP_AM_HDR_LEN;
}

static ucs_status_t uct_mc_rel_ep_send(uct_mc_rel_ep_t *ep, size_t length)
{
    ucs_status_t status;

    if (ep->rel == NULL) {
        return UCS_ERR_CANCELED; /* its interface was closed */
    }
    if (!ep->is_root) {
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_mc_rel_send(ep->rel, ep->tx_msg, length,
                             uct_mc_rel_ep_now());
    if ((status == UCS_ERR_INVALID_PARAM) &&
        (length > ep->seg_size + UCT_MC_REL_EP_AM_HDR_LEN)) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    return status;
}

ucs_status_t uct_mc_rel_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                    uint64_t header, const void *payload,
                                    unsigned length)
{
    uct_mc_rel_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_rel_ep_t);
    uint8_t *buf;

    if ((id >= UCT_AM_ID_MAX) || (ep->rel == NULL) ||
        (length + sizeof(header) > ep->mtu - UCT_MC_REL_EP_AM_HDR_LEN)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!ucs_queue_is_empty(&ep->pending)) {
        return UCS_ERR_NO_RESOURCE;
    }

    buf = uct_mc_rel_ep_am_hdr(ep, id);
    memcpy(buf, &header, sizeof(header));
    /* A zero-length payload may come as NULL: memcpy must not see it */
    if (length > 0) {
        memcpy(buf + sizeof(header), payload, length);
    }
    return uct_mc_rel_ep_send(ep, UCT_MC_REL_EP_AM_HDR_LEN + sizeof(header) +
                                  length);
}

ssize_t uct_mc_rel_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                               uct_pack_callback_t pack_cb, void *arg,
                               unsigned flags)
{
    uct_mc_rel_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_rel_ep_t);
    ucs_status_t status;
    size_t length;

    if ((id >= UCT_AM_ID_MAX) || (ep->rel == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!ucs_queue_is_empty(&ep->pending)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (uct_mc_rel_status(ep->rel) < 0) {
        return uct_mc_rel_status(ep->rel);
    }
    /* Pack only when a whole segment fits, so that a refusal costs no
     * packing (the packed size is not known before) */
    if (uct_mc_rel_tx_space(ep->rel) < ep->seg_frags) {
        return UCS_ERR_NO_RESOURCE;
    }

    length = pack_cb(uct_mc_rel_ep_am_hdr(ep, id), arg);
    if (length > ep->seg_size) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = uct_mc_rel_ep_send(ep, UCT_MC_REL_EP_AM_HDR_LEN + length);
    return (status == UCS_OK) ? (ssize_t)length : status;
}

ucs_status_t uct_mc_rel_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                       unsigned flags)
{
    uct_mc_rel_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_rel_ep_t);

    if ((ep->rel == NULL) || (uct_mc_rel_status(ep->rel) < 0)) {
        return UCS_ERR_BUSY; /* failed: the caller sees the error */
    }
    /* The same room as am_bcopy asks for: a request added while there is
     * room would never be dispatched (and one refused would spin) */
    if (ucs_queue_is_empty(&ep->pending) &&
        (uct_mc_rel_tx_space(ep->rel) >= ep->seg_frags)) {
        return UCS_ERR_BUSY;
    }

    ucs_queue_push(&ep->pending, (ucs_queue_elem_t*)req->priv);
    return UCS_OK;
}

void uct_mc_rel_ep_pending_purge(uct_ep_h tl_ep,
                                 uct_pending_purge_callback_t cb, void *arg)
{
    uct_mc_rel_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_rel_ep_t);
    uct_pending_req_t *req;

    while (!ucs_queue_is_empty(&ep->pending)) {
        req = ucs_queue_head_elem_non_empty(&ep->pending, uct_pending_req_t,
                                            priv);
        ucs_queue_pull_non_empty(&ep->pending);
        if (cb != NULL) {
            cb(req, arg);
        }
    }
}

ucs_status_t uct_mc_rel_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                 uct_completion_t *comp)
{
    uct_mc_rel_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_rel_ep_t);
    uct_mc_rel_ep_flush_t *flush;
    ucs_status_t status;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        uct_mc_rel_ep_pending_purge(tl_ep, NULL, NULL);
        return UCS_OK;
    }
    if (ep->rel == NULL) {
        return UCS_ERR_CANCELED;
    }
    if (!ucs_queue_is_empty(&ep->pending)) {
        return UCS_ERR_NO_RESOURCE;
    }

    status = uct_mc_rel_flush(ep->rel);
    if ((status != UCS_INPROGRESS) || (comp == NULL)) {
        return status;
    }

    flush = ucs_malloc(sizeof(*flush), "mc_rel_ep flush");
    if (flush == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    flush->comp = comp;
    ucs_queue_push(&ep->flushes, &flush->queue);
    return UCS_INPROGRESS;
}

uct_o2m_ep_state_t uct_mc_rel_ep_state(uct_ep_h tl_ep,
                                       ucs_status_t *status_p)
{
    uct_mc_rel_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_rel_ep_t);
    ucs_status_t status;

    status = (ep->rel == NULL) ? UCS_ERR_CANCELED :
             uct_mc_rel_status(ep->rel);
    if (status_p != NULL) {
        *status_p = (status == UCS_INPROGRESS) ? UCS_OK : status;
    }

    if (status == UCS_INPROGRESS) {
        return UCT_O2M_EP_STATE_JOINING;
    }
    return (status == UCS_OK) ? UCT_O2M_EP_STATE_READY :
                                UCT_O2M_EP_STATE_FAILED;
}

ucs_status_t uct_mc_rel_ep_expect(uct_ep_h tl_ep, int expect)
{
    uct_mc_rel_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_rel_ep_t);

    if (ep->is_root) {
        return UCS_ERR_INVALID_PARAM;
    } else if (ep->rel == NULL) {
        return UCS_ERR_CANCELED; /* its interface was closed */
    }

    uct_mc_rel_expect(ep->rel, expect, uct_mc_rel_ep_now());
    return UCS_OK;
}
