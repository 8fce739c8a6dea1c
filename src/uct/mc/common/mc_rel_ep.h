/**
 * ucx-o2m: the engine-backed endpoint - what a multicast transport's
 * endpoint does on a stream of the reliable multicast engine (mc/rel/),
 * the same in mc_udp and mc_verbs: active messages (an 8-byte AM header,
 * then the data, as one engine message), pending requests while the window
 * is full,
 * flushes completed when every member acknowledged, state and expect.
 *
 * A transport's endpoint embeds uct_mc_rel_ep_t as its first member (its
 * uct_iface_ops_t take these functions as they are), fills it with
 * uct_mc_rel_ep_init() and sets the engine stream once it exists, and
 * keeps for itself what really differs: the datagrams (the engine's send
 * callback), the members' addresses, liveness and joining.
 */
#ifndef UCT_MC_REL_EP_H_
#define UCT_MC_REL_EP_H_

#include "../rel/mc_rel.h"
#include "../../sm/bcast/uct_o2m.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/queue.h>

#include <time.h>


/*
 * An engine message of an active message: the AM id, 7 bytes 0, then the
 * AM data.  The header's 8 bytes keep the data 8-byte aligned: in the
 * datagram (the transports' headers and the engine's are multiples of 8)
 * and in the engine's buffers, from which the AM handler gets it.
 */
#define UCT_MC_REL_EP_AM_HDR_LEN 8


/* The knobs of the engine and of the groups' addresses, the same in the
 * transports' configurations (each has its own names and documentation) */
typedef struct uct_mc_rel_ep_config {
    unsigned window;
    size_t   mtu;            /* datagram, headers included; 0: device's */
    size_t   seg_size;
    double   rto_min;
    double   rto_max;
    double   reorder_slack;
    double   peer_timeout;
    unsigned radix;
    char     *mcast_base;
    unsigned mcast_count;
} uct_mc_rel_ep_config_t;

typedef struct uct_mc_rel_ep {
    union {
        uct_ep_t        ep;         /* mc_verbs: a group endpoint only */
        uct_base_ep_t   base;       /* mc_udp: UCP's endpoints too */
    } super;
    uct_mc_rel_stream_t *rel;       /* NULL: its interface was closed */
    ucs_queue_head_t    pending;    /* uct_pending_req_t */
    ucs_queue_head_t    flushes;    /* uct_mc_rel_ep_flush_t */
    void                *tx_msg;    /* a message: AM header + data */
    size_t              seg_size;   /* largest AM payload (am_bcopy) */
    unsigned            seg_frags;  /* packets of the largest message */
    size_t              mtu;        /* engine payload of one packet */
    int                 is_root;    /* the member that sends */
} uct_mc_rel_ep_t;


/* The engine's clock (nanoseconds, monotonic) */
static inline uint64_t uct_mc_rel_ep_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The engine's configuration from @a config, for datagrams of @a mtu bytes
 * of which @a overhead are headers (the transport checked both, and
 * config->seg_size); errors name the knobs @a prefix + WINDOW, ... of @a tl */
ucs_status_t uct_mc_rel_ep_config_rel(const uct_mc_rel_ep_config_t *config,
                                      const char *tl, const char *prefix,
                                      size_t mtu, size_t overhead,
                                      uct_mc_rel_config_t *rel);

/* Packets of an engine message of @a seg_size bytes of AM data, in
 * packets of @a mtu bytes of engine payload */
static inline unsigned uct_mc_rel_ep_frags(size_t seg_size, size_t mtu)
{
    return (seg_size + UCT_MC_REL_EP_AM_HDR_LEN + mtu - 1) / mtu;
}

/* Fields and buffers; the transport sets @a ep->rel once its stream
 * exists (and back to NULL when its interface closes first) */
ucs_status_t uct_mc_rel_ep_init(uct_mc_rel_ep_t *ep, size_t seg_size,
                                unsigned seg_frags, size_t mtu, int is_root);

/* Completes the flushes with UCS_ERR_CANCELED and frees the buffers; the
 * stream stays the transport's (destroyed by it) */
void uct_mc_rel_ep_cleanup(uct_mc_rel_ep_t *ep);

/* Completes the waiting flushes with UCS_ERR_CANCELED */
void uct_mc_rel_ep_cancel_flushes(uct_mc_rel_ep_t *ep);

/* Progress: pending requests while there is room (or the stream failed,
 * so that they see the error), then the flushes the stream completed */
unsigned uct_mc_rel_ep_progress(uct_mc_rel_ep_t *ep);

/* Whether a whole message fits the window now (or the stream failed) */
int uct_mc_rel_ep_has_room(const uct_mc_rel_ep_t *ep);

/* Engine callback's common part: a whole message, AM header first, invoked
 * on @a iface; UCS_ERR_INVALID_PARAM when it is not a valid message (only a
 * broken or forged root sends that) */
ucs_status_t uct_mc_rel_ep_deliver(uct_base_iface_t *iface, const void *data,
                                   size_t length);

/* The uct_iface_ops_t entries */
ucs_status_t uct_mc_rel_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                    uint64_t header, const void *payload,
                                    unsigned length);

ssize_t uct_mc_rel_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                               uct_pack_callback_t pack_cb, void *arg,
                               unsigned flags);

ucs_status_t uct_mc_rel_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                       unsigned flags);

void uct_mc_rel_ep_pending_purge(uct_ep_h tl_ep,
                                 uct_pending_purge_callback_t cb, void *arg);

ucs_status_t uct_mc_rel_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                 uct_completion_t *comp);

/* uct_o2m_ep_state() and uct_o2m_ep_expect() on an endpoint of mc_udp or
 * mc_verbs */
uct_o2m_ep_state_t uct_mc_rel_ep_state(uct_ep_h tl_ep,
                                       ucs_status_t *status_p);

ucs_status_t uct_mc_rel_ep_expect(uct_ep_h tl_ep, int expect);

#endif
