/**
 * ucx-o2m: group endpoints of sm_bcast and sm_incast.
 *
 * The root creates the group segment and lists it in its interface's
 * directory; the other members find it there by group id (retrying from
 * progress while the root has not created it yet), map it and mark their
 * member line attached.
 *
 * Fan-out (sm_bcast) ring: the root writes message s into element s % depth
 * and publishes it; every receiver reads it, delivers it and acknowledges:
 *  - BATCHED:     one atomic counter per element, in its own cache line;
 *  - CENTRALIZED: each receiver stores its consumed count in its own member
 *                 line and the root takes the minimum when it needs space.
 * The root reuses an element only when all receivers acknowledged it.
 *
 * Fan-in (sm_incast) ring: round s of contributions uses element s % depth,
 * which is free once the root has delivered round s - depth ("delivered" in
 * the group header).  An element holds a control line, a shared buffer
 * (LOCKED and ATOMIC reductions) and one slot per sender.  See incast_ep.h.
 */
#ifndef UCT_O2M_GROUP_H_
#define UCT_O2M_GROUP_H_

#include "o2m_ep.h"


enum {
    UCT_O2M_MEMBER_FREE     = 0,
    UCT_O2M_MEMBER_ATTACHED = 1,
    UCT_O2M_MEMBER_LEFT     = 2
};


/**
 * One line per member, written by that member.  A member that leaves stores
 * how far it got in "done" before it sets LEFT: the root calls it failed
 * only if it left before consuming (fan-out) or contributing (fan-in) what
 * the root waits for.
 */
typedef struct uct_o2m_member {
    volatile uint32_t state;
    /* Fan-out receiver: ucs_status_t of a message it lost (a failed
     * single-copy read), so that the root fails instead of waiting */
    volatile int32_t  lost_status;
    uct_o2m_proc_t    proc;
    volatile uint64_t consumed; /* Fan-out: messages consumed */
    volatile uint64_t done;     /* On leaving: fan-out messages consumed,
                                   fan-in rounds contributed */
} UCS_V_ALIGNED(UCT_O2M_LINE) uct_o2m_member_t;


/** Fan-in element control line. */
typedef struct uct_o2m_incast_ctl {
    volatile uint32_t arrived;      /* BATCHED, LOCKED, ATOMIC */
    volatile uint32_t lock;         /* LOCKED: 0 or holder's index + 1 */
    uint32_t          shared_count; /* Contributions in the shared buffer */
    uint32_t          reserved;
} UCS_V_ALIGNED(UCT_O2M_LINE) uct_o2m_incast_ctl_t;


typedef struct uct_o2m_group_seg {
    uint64_t          magic;
    uint64_t          uuid;
    uint64_t          group_id;
    uint32_t          version;
    uint32_t          is_incast;
    uint32_t          size;
    uint32_t          root_index;
    uint32_t          mode;
    uint32_t          op;
    uint32_t          dtype;
    uint32_t          depth;        /* Ring elements, power of 2 */
    uint64_t          hdr_len;
    uint64_t          max_length;   /* Largest inline message */
    uint64_t          elem_stride;
    uint64_t          slot_stride;  /* Fan-in sender slot */
    uint64_t          shared_size;  /* Fan-in shared buffer, 0 if none */
    uint64_t          members_offset;
    uint64_t          acks_offset;
    uint64_t          elems_offset;
    uct_o2m_proc_t    root;
    /* Written before "closed": fan-out messages sent, fan-in rounds
     * delivered; nothing beyond them will ever be */
    volatile uint64_t final_seq;
    volatile uint32_t closed;       /* Root destroyed its endpoint */
    volatile int32_t  failed;       /* ucs_status_t once a member died */
    /* Fan-in: rounds delivered by the root */
    volatile uint64_t delivered UCS_V_ALIGNED(UCT_O2M_LINE);
} UCS_V_ALIGNED(UCT_O2M_LINE) uct_o2m_group_seg_t;


/**
 * Geometry of a group segment, the private copy an endpoint keeps.
 */
typedef struct uct_o2m_group_geom {
    unsigned depth;
    size_t   hdr_len;
    size_t   max_length;
    size_t   elem_stride;
    size_t   slot_stride;
    size_t   shared_size;
    size_t   members_offset;
    size_t   acks_offset;
    size_t   elems_offset;
} uct_o2m_group_geom_t;


typedef struct uct_o2m_group_ep uct_o2m_group_ep_t;


/**
 * The role of a group endpoint (the root or a member of a fan-out or a
 * fan-in group): what every endpoint does, and what the group layer's
 * liveness checks (o2m_liveness.c) ask of the root's or a member's role.
 * Each role has its own endpoint type, which embeds uct_o2m_group_ep_t
 * and is created with its ops (uct_o2m_ep_create): the fan-out root and
 * receivers in bcast_ep.c, the fan-in senders in incast_ep.c, the fan-in
 * root in incast_root.c.
 */
typedef struct uct_o2m_group_ops {
    uct_o2m_ep_ops_t super;
    /* How far this endpoint got: messages sent or rounds contributed (a
     * sending role), messages consumed or rounds delivered (a reading
     * role) */
    uint64_t (*done)(const uct_o2m_group_ep_t *ep);
    /* Sending role: complete the sends the readers are done with; returns
     * how far they are done (all messages or rounds below it) */
    uint64_t (*update)(uct_o2m_group_ep_t *ep);
    /* Root: whether it waits for the other members now */
    int      (*root_waiting)(uct_o2m_group_ep_t *ep);
    /* Root: a count that moves while the members make progress (the
     * opt-in PEER_TIMEOUT runs while it stands still) */
    uint64_t (*root_mark)(const uct_o2m_group_ep_t *ep);
    /* Root: whether a member that left having got as far as @a done (its
     * uct_o2m_group_done) left before what the root waits for */
    int      (*left_early)(const uct_o2m_group_ep_t *ep, uint64_t done,
                           int waiting);
    /* Member: the root closed the group having got as far as @a final_seq
     * (its uct_o2m_group_done); @a stalled: the user waits on us */
    void     (*root_closed)(uct_o2m_group_ep_t *ep, uint64_t final_seq,
                            int stalled);
    /* Reading role: the word its next message changes (uct_o2m_ep_rx_watch;
     * called on a joined endpoint that has not failed); NULL: none */
    ucs_status_t (*rx_watch)(uct_o2m_group_ep_t *ep,
                             uct_o2m_rx_watch_t *watch);
} uct_o2m_group_ops_t;


/** The parameters of a group with their defaults (uct_o2m_ep_create) */
typedef struct uct_o2m_group_args {
    uct_o2m_mode_t       mode;
    uct_o2m_op_t         op;
    uct_o2m_dtype_t      dtype;
    size_t               hdr_len;
} uct_o2m_group_args_t;


/** What the endpoint of every role has: the group, its segment, the
 *  liveness of the members */
struct uct_o2m_group_ep {
    uct_o2m_ep_t         super;
    uct_o2m_group_seg_t  *seg;        /* NULL until attached */
    size_t               seg_size;
    int                  seg_fd;      /* Root: the segment; others: -1 */
    uct_o2m_member_t     *members;
    void                 *elems;
    uint64_t             group_id;
    unsigned             size;
    unsigned             my_index;
    unsigned             root_index;
    uct_o2m_mode_t       mode;
    uct_o2m_op_t         op;
    uct_o2m_dtype_t      dtype;
    size_t               hdr_len;
    size_t               dt_size;
    /* Geometry of the segment: a private copy checked at attach (see
     * o2m_check.h), never read again from the segment */
    uct_o2m_group_geom_t geom;
    unsigned             depth;       /* geom.depth */
    size_t               elem_stride; /* geom.elem_stride */
    size_t               max_length;  /* geom.max_length */
    uct_o2m_peer_seg_t   *root_peer;  /* Non-root: the root's iface segment */
    uct_o2m_proc_t       root_proc;
    uct_o2m_watch_t      **watches;   /* Watched members (root: all; others:
                                         only the root, at [root_index]) */
    uct_o2m_proc_t       *procs;      /* Root: members' processes given at
                                         creation (pid 0: unknown) */
    void                 *acks;       /* Fan-out BATCHED counters */
    /* Opt-in PEER_TIMEOUT: when the current wait for a member that has
     * not joined began (0: not waiting), and the progress mark it saw */
    ucs_time_t           wait_since;
    uint64_t             wait_mark;
    /* The root could not create the segment: the error it listed in its
     * directory instead (root), or that it listed there (member); UCS_OK
     * otherwise */
    ucs_status_t         refused;
};


/**
 * A group whose root destroyed its endpoint while some members had not
 * joined yet: the segment and its directory entry stay, on the interface's
 * list, until every member has joined or its process has exited.  A
 * refusal (seg NULL, no member lines) stays until every member saw it or
 * their processes have exited.
 */
typedef struct uct_o2m_retired_group {
    ucs_list_link_t      list;       /* In iface->retired */
    uint64_t             group_id;
    uct_o2m_group_seg_t  *seg;       /* NULL: a refusal */
    size_t               seg_size;
    int                  seg_fd;
    unsigned             size;
    unsigned             root_index;
    uct_o2m_member_t     *members;   /* NULL: a refusal */
    uct_o2m_watch_t      **watches;  /* Taken over from the endpoint */
    uct_o2m_proc_t       *procs;
} uct_o2m_retired_group_t;


static UCS_F_ALWAYS_INLINE int
uct_o2m_group_is_root(const uct_o2m_group_ep_t *ep)
{
    return ep->my_index == ep->root_index;
}

static UCS_F_ALWAYS_INLINE const uct_o2m_group_ops_t *
uct_o2m_group_ops(const uct_o2m_group_ep_t *ep)
{
    return ucs_container_of(ep->super.ops, uct_o2m_group_ops_t, super);
}

static UCS_F_ALWAYS_INLINE unsigned
uct_o2m_group_num_peers(const uct_o2m_group_ep_t *ep)
{
    return ep->size - 1;
}

static UCS_F_ALWAYS_INLINE uct_o2m_elem_t *
uct_o2m_group_elem(uct_o2m_group_ep_t *ep, uint64_t seq)
{
    return uct_o2m_elem_at(ep->elems, ep->elem_stride, seq, ep->depth);
}

/* How far this endpoint got (its role's done) */
static UCS_F_ALWAYS_INLINE uint64_t
uct_o2m_group_done(const uct_o2m_group_ep_t *ep)
{
    return uct_o2m_group_ops(ep)->done(ep);
}

/* Group endpoint life cycle (o2m_group.c); the roles' classes derive from
 * it */
UCS_CLASS_DECLARE(uct_o2m_group_ep_t, uct_o2m_iface_t*,
                  const uct_o2m_group_params_t*, const uct_o2m_group_ops_t*,
                  const uct_o2m_group_args_t*);
ucs_status_t uct_o2m_group_attach(uct_o2m_group_ep_t *ep);
int uct_o2m_group_try_attach(uct_o2m_group_ep_t *ep);
/* Flush of the sending roles (ops->super.flush_status), through update */
ucs_status_t uct_o2m_group_flush_status(uct_o2m_ep_t *ep);
/* done of the sending roles: what they sent */
uint64_t uct_o2m_group_sent(const uct_o2m_group_ep_t *ep);

/* Liveness (o2m_liveness.c) */
void uct_o2m_group_check(uct_o2m_ep_t *ep, int stalled);
/* Fail the endpoint because of member @a member; a root tells the others */
void uct_o2m_group_fail(uct_o2m_group_ep_t *ep, ucs_status_t status,
                        const char *why, unsigned member);
/* Whether the process of member @a i is known to have exited */
int uct_o2m_group_member_exited(uct_o2m_iface_t *iface,
                                uct_o2m_watch_t **watches,
                                const uct_o2m_proc_t *procs,
                                const uct_o2m_member_t *member, unsigned i,
                                uint32_t state);

/* Retired groups of an interface (o2m_retired.c) */
/* The root leaves its group: retire it, or destroy it if nobody waits */
void uct_o2m_group_root_close(uct_o2m_group_ep_t *ep);
unsigned uct_o2m_iface_reap_retired(uct_o2m_iface_t *iface);
/* Give up a destroyed group that waits: the one with @a group_id, or the
 * oldest that waits only for members of unknown process, else the oldest;
 * 0 if none */
int uct_o2m_iface_evict_retired(uct_o2m_iface_t *iface, int by_id,
                                uint64_t group_id);
void uct_o2m_iface_drain_retired(uct_o2m_iface_t *iface);

/* Fan-out (bcast_ep.c) */
UCS_CLASS_DECLARE_NEW_FUNC(uct_o2m_bcast_root_ep_t, uct_o2m_group_ep_t,
                           uct_o2m_iface_t*, const uct_o2m_group_params_t*,
                           const uct_o2m_group_args_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_o2m_bcast_recv_ep_t, uct_o2m_group_ep_t,
                           uct_o2m_iface_t*, const uct_o2m_group_params_t*,
                           const uct_o2m_group_args_t*);
/* Layout of a group segment from its header's size, depth, mode and op and
 * the root's configuration (ring element size, RING_MAX); returns its size */
size_t uct_o2m_bcast_seg_layout(uct_o2m_group_seg_t *hdr, size_t elem_size);
void uct_o2m_bcast_seg_init(uct_o2m_group_ep_t *ep);

/* Fan-in (incast_ep.c, incast_root.c) */
UCS_CLASS_DECLARE_NEW_FUNC(uct_o2m_incast_send_ep_t, uct_o2m_group_ep_t,
                           uct_o2m_iface_t*, const uct_o2m_group_params_t*,
                           const uct_o2m_group_args_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_o2m_incast_root_ep_t, uct_o2m_group_ep_t,
                           uct_o2m_iface_t*, const uct_o2m_group_params_t*,
                           const uct_o2m_group_args_t*);
int uct_o2m_group_seg_shared(const uct_o2m_group_seg_t *hdr);
size_t uct_o2m_incast_seg_layout(uct_o2m_group_seg_t *hdr, size_t elem_size,
                                 size_t ring_max);
void uct_o2m_incast_seg_init(uct_o2m_group_ep_t *ep);

#endif
