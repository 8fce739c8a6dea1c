/**
 * UCG context: UCP and o2m resources, the UCP connection cache shared by
 * the groups, progress.  The group is in ucg_group.h.
 */
#ifndef UCG_CONTEXT_H_
#define UCG_CONTEXT_H_

#include "ucg_config.h"
#include "ucg_plan.h"
#include "ucg_progress.h"
#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <sys/types.h>

typedef struct ucg_context ucg_context_t;
typedef struct ucg_group   ucg_group_t;

/** The one-to-many transports UCG opens */
typedef enum {
    UCG_SM_BCAST,
    UCG_SM_INCAST,
    UCG_SM_LAST
} ucg_sm_tl_t;

static inline const char *ucg_sm_tl_name(ucg_sm_tl_t tl)
{
    return uct_o2m_tl_name(tl == UCG_SM_INCAST);
}

/** Active-message id of UCG's messages on its sm_bcast / sm_incast
 *  interfaces (which carry nothing else) */
#define UCG_SM_AM_ID 0

/** The stages of ucg_context_destroy a closer is called at */
typedef enum {
    UCG_CONTEXT_CLOSE_UCP,   /* the UCP connections are closed and the
                                worker is about to be destroyed (or, the
                                caller's, left): release its requests */
    UCG_CONTEXT_CLOSE_FREE   /* the worker is gone: nothing can use the
                                buffers of those requests any more */
} ucg_context_close_stage_t;

typedef struct ucg_context_closer ucg_context_closer_t;

/** Called at each stage of the destroy, in order; at the last,
 *  UCG_CONTEXT_CLOSE_FREE, it removes @a closer (ucg_context_closer_remove)
 *  and may free it */
typedef void (*ucg_context_close_cb_t)(ucg_context_closer_t *closer,
                                       ucg_context_close_stage_t stage);

/**
 * What a module left with the context that only the context's destroy can
 * end (the requests a failed collective left to UCP, ucg_parked_t): the
 * module registers it with its own callback, and the context calls it at
 * the stages of its destroy without knowing what it is.
 */
struct ucg_context_closer {
    ucs_list_link_t        list;  /* in ucg_context_t::closers */
    ucg_context_close_cb_t cb;
};

struct ucg_context {
    ucg_config_t        *config;      /* own copy */
    ucp_context_h       ucp_context;
    ucp_worker_h        ucp_worker;
    int                 own_ucp;      /* created them, destroys them */

    /* One-to-many transports (when topo o2m is usable) */
    int                 o2m;
    ucs_async_context_t *async;
    uct_worker_h        uct_worker;
    uct_component_h     o2m_component;
    uct_md_h            o2m_md;
    uct_iface_h         sm_iface[UCG_SM_LAST];
    size_t              sm_max_bcopy; /* min over both interfaces */

    uint64_t            host_id;      /* this host (hostname + boot id) */
    /* Members on this host, each process watched once for all groups */
    uct_o2m_watch_table_t *watches;
    uint16_t            next_group_id;
    ucs_list_link_t     groups;       /* ucg_group_t::list */
    ucs_list_link_t     p2p_conns;    /* ucg_p2p_conn_t, shared by groups */
    ucs_list_link_t     closers;      /* ucg_context_closer_t */
    ucg_progress_queue_t progress_q;  /* started collectives, parked
                                         requests: ucg_progress drains it */
    /* Directory entries of each sm interface reserved by live groups (at
     * most SM_MAX_GROUPS) */
    unsigned            sm_reserved[UCG_SM_LAST];
    unsigned            sm_max_members; /* of both interfaces */
    /* Ring geometry of each interface (what its roots' segments cost) */
    uct_o2m_iface_attr_t sm_attr[UCG_SM_LAST];
    int                 sm_cma;       /* both interfaces read with single
                                         copy (their CMA probe passed) */
    uint32_t            next_group_epoch; /* lowest epoch of the next group
                                             (UCG_GROUP_EPOCH_BITS) */
    /* sm messages dropped: of no live group of this context, or of an
     * earlier group with the id of a live one */
    unsigned long       sm_dropped;
    /* The AM handler installed on the sm interfaces, NULL: none yet */
    uct_am_callback_t   sm_am_cb;
    /* Whether a started collective waits for UCP (set by
     * ucg_progress_drain and ucg_coll_start); else, while a collective is
     * started, ucg_progress progresses UCP only every few calls, counted by
     * ucp_idle_polls */
    int                 need_ucp;
    unsigned            ucp_idle_polls;
    /* ucg_progress calls since the last one that progressed the
     * transports while no collective was started (UCG_IDLE_POLLS) */
    unsigned            idle_polls;
    /* ucg_coll_test calls that polled a collective's watched word only
     * (RX_WATCH_POLLS) */
    unsigned long       rx_watch_skips;
    /* ucg_coll_test calls that found the word changed and progressed its
     * interface and the queue only (ucg_progress_rx); rx_quick: of them
     * since the last ucg_progress, which comes at least every
     * RX_WATCH_POLLS of them */
    unsigned long       rx_watch_quick;
    unsigned            rx_quick;
    /* mc_udp between host leaders (ucg_mc.c), NULL when not used */
    struct ucg_mc_ctx   *mc;
    /* The planner's variables (ucg_config_plan_hash of config), in every
     * member's record; plan_defaults: config with their defaults, which
     * the groups whose members' hashes differ plan with (made by the first
     * such group), NULL before */
    uint64_t            plan_hash;
    ucg_config_t        *plan_defaults;
    int                 plan_mismatch_warned;
};

/** Whether UCX_TLS (the context's prefix, else UCX_) allows transport
 *  @a name: unset, "all", a list naming it, or a "^" list that does not */
int ucg_context_tls_allows(const ucg_config_t *config, const char *name);

/** A UCP endpoint to a peer worker.  Groups share them (communicators of
 *  the same processes need no new connections), and they are closed with
 *  the context: closing one needs the peer to progress, which a group
 *  destroy (not collective) cannot count on. */
typedef struct ucg_p2p_conn {
    ucs_list_link_t     list;
    ucg_context_t       *context;
    ucp_ep_h            ep;
    int                 peer_err;     /* UCP_ERR_HANDLING_MODE_PEER: to a
                                         member on another host */
    ucs_status_t        status;       /* UCS_OK, or the error UCP reported
                                         (replaced by a new endpoint when a
                                         group connects again) */
    uct_o2m_watch_t     *watch;       /* Peer on this real host: its
                                         liveness, for the close; or NULL */
    size_t              addr_len;
    char                addr[0];      /* peer worker address */
} ucg_p2p_conn_t;

/** The cached UCP endpoint to the worker at @a addr, created on first use
 *  (@a peer_err: to another host, with PEER error handling; @a proc: the
 *  peer on this real host, watched for the close, or NULL) */
ucs_status_t ucg_p2p_conn_get(ucg_context_t *context, const void *addr,
                              size_t addr_len, int peer_err,
                              const uct_o2m_proc_t *proc, ucp_ep_h *ep_p);

/** Take @a conn (PEER error handling) out of the cache, fail the members
 *  that used it and close its endpoint with FORCE */
void ucg_p2p_conn_drop(ucg_p2p_conn_t *conn);

/** Close the UCP endpoints of the context (ucg_context_destroy) */
void ucg_context_close_p2p_conns(ucg_context_h context);

/** Open sm_bcast / sm_incast as the O2M setting and UCX_TLS say
 *  (ucg_context_sm.c); context->o2m tells whether they are usable */
ucs_status_t ucg_context_o2m_init(ucg_context_t *context);

/** Close what ucg_context_o2m_init opened */
void ucg_context_o2m_close(ucg_context_t *context);

/** The group of this context with @a id, NULL if none */
/**
 * A started collective's watched word changed (ucg_coll_test): progress
 * only @a iface, where the message is, and the queue.  UCP, the other
 * interfaces and multicast wait for the next ucg_progress, which
 * ucg_coll_test makes at least every RX_WATCH_POLLS of these.
 */
unsigned ucg_progress_rx(ucg_context_h context, uct_iface_h iface);

ucg_group_h ucg_context_find_group(ucg_context_h context, uint16_t id);

/** Install @a cb (arg: the context) as the AM handler of the context's
 *  sm interfaces, if it is not yet: the receive path of whoever runs
 *  collectives on them (the executor, for each new group) */
ucs_status_t ucg_context_sm_set_am_handler(ucg_context_t *context,
                                           uct_am_callback_t cb);

/** An sm message that has no header (an error line), or that is of no
 *  live group of @a context (@a group: the live group with its id but
 *  another epoch, or NULL): it is dropped (context->sm_dropped, a line at
 *  debug level).  See ucg_context_sm_group (ucg_group.h). */
void ucg_context_sm_drop(ucg_context_t *context, const void *data,
                         size_t length, const ucg_group_t *group);

/** Call @a cb of @a closer at the stages of the context's destroy */
static inline void ucg_context_closer_add(ucg_context_t *context,
                                          ucg_context_closer_t *closer,
                                          ucg_context_close_cb_t cb)
{
    closer->cb = cb;
    ucs_list_add_tail(&context->closers, &closer->list);
}

/** @a closer is done (before the destroy, or at its last stage) */
static inline void ucg_context_closer_remove(ucg_context_closer_t *closer)
{
    ucs_list_del(&closer->list);
}

#endif
