/**
 * ucx-o2m: one-to-many shared-memory transports for UCX.
 *
 * Extension API of the sm_bcast (fan-out) and sm_incast (fan-in) transports.
 * Everything that is not about group membership goes through the ordinary
 * UCT API: an endpoint returned by uct_o2m_ep_create() is a normal uct_ep_h
 * (uct_ep_am_short/bcopy/zcopy, uct_ep_flush, uct_ep_pending_add,
 * uct_ep_destroy), and data is delivered through the active-message handlers
 * set with uct_iface_set_am_handler() on the receiving interface.
 *
 * Group semantics
 * ---------------
 * A group joins @a size processes on one host; one member is the root.
 * Every member opens an sm_bcast (or sm_incast) interface and creates one
 * group endpoint with the same group_id, size and root_index, and its own
 * my_index.  Non-root members pass the root's interface (and device) address,
 * obtained with uct_iface_get_address() on the root and exchanged out of band.
 *
 *  - sm_bcast: the root sends (uct_ep_am_*); each of the size-1 other members
 *    receives every message, once and in order, through its AM handler.
 *    Non-root members do not send on a group endpoint.
 *  - sm_incast: each non-root member contributes one message per round
 *    (uct_ep_am_*); when all size-1 contributions of a round are in, the
 *    root's AM handler is called once with either their reduction (op and
 *    dtype) or, with UCT_O2M_OP_GATHER, the contributions side by side in
 *    member-index order, root excluded.  All contributions of a round must
 *    have the same length.  The first hdr_len bytes of a contribution are not
 *    reduced: the root receives those of the lowest-index contributor.  The
 *    root does not send on a group endpoint.
 *
 * uct_ep_flush() on a group endpoint completes when every message sent (or
 * contributed) before it has been consumed by all the members involved.
 *
 * A plain uct_ep_create() to a peer's interface address gives a
 * point-to-point endpoint (a group of two with the caller as root), which is
 * what UCP uses when sm_bcast or sm_incast is selected with UCX_TLS.
 *
 * Lifetime and liveness
 * ---------------------
 * Slow is not dead: by default a group waits for its members as long as
 * their processes live.  A member whose process exits makes the others'
 * group endpoints fail within CHECK_INTERVAL: their pending and later
 * operations return an error and the interface error handler is called.
 * PEER_TIMEOUT (default inf) is an opt-in bound on how long an operation
 * waits for a member that has not joined the group.
 *
 * Finished is not failed: a member may destroy its endpoint once it has
 * consumed (sm_bcast) or contributed (sm_incast) everything the root waits
 * for; only a member that leaves before that fails the root.  When the root
 * destroys its endpoint, the group stays reachable for the members that
 * have not joined or not read everything yet: the root's interface keeps it
 * until they are done or their processes have exited (uct_iface_close()
 * waits for them, at most PEER_TIMEOUT when one is set).  A member that
 * waits for more than the root sent before closing the group, or that
 * contributes to a closed group, gets UCS_ERR_CONNECTION_RESET.
 *
 * Exhaustion: a root that cannot create the group's shared segment (out of
 * memory, a full tmpfs or memory cgroup, the fd limit) lists a refusal with
 * its error in its interface's directory, in place of the segment, and its
 * endpoint is created failed with that error.  A member's endpoint that
 * finds the refusal fails with the same error (at creation, or from
 * progress while it waits for the root) and one log line; no member waits
 * for a group that will not come.  Nothing was ever sent on a refused
 * group, so the caller may carry its traffic another way: see
 * uct_o2m_ep_state().  The refusal stays listed until every member saw it
 * (or the root's interface needs the entry, or reuses the group_id); group
 * ids are not reused for another group while members may still look.
 */
#ifndef UCT_O2M_H_
#define UCT_O2M_H_

#include <uct/api/uct.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

BEGIN_C_DECLS

#define UCT_O2M_BCAST_TL_NAME  "sm_bcast"
#define UCT_O2M_INCAST_TL_NAME "sm_incast"

/** Name of the fan-in (sm_incast) or the fan-out (sm_bcast) transport. */
static inline const char *uct_o2m_tl_name(int is_incast)
{
    return is_incast ? UCT_O2M_INCAST_TL_NAME : UCT_O2M_BCAST_TL_NAME;
}

/** Functions of this API are the only symbols the library exports. */
#define UCT_O2M_API __attribute__((visibility("default")))

/** Version of this extension API. */
#define UCT_O2M_API_MAJOR 1
#define UCT_O2M_API_MINOR 8


/**
 * (API 1.5) The registered UCT component called @a name (this library's:
 * "o2m" for sm_bcast / sm_incast, "mc_udp"), or NULL when there is none:
 * UCX lists this library's components only when it was loaded first.
 */
UCT_O2M_API uct_component_h uct_o2m_component_find(const char *name);

/**
 * (API 1.5) Open transport @a tl_name on device @a dev_name of @a md, with
 * @a config (from uct_md_iface_config_read); errors of its endpoints go to
 * @a err_handler with @a err_arg.  How UCG and the benchmarks open this
 * library's transports.  Does not log: the caller says what failed.
 */
UCT_O2M_API ucs_status_t
uct_o2m_iface_open_dev(uct_md_h md, uct_worker_h worker, const char *tl_name,
                       const char *dev_name, const uct_iface_config_t *config,
                       uct_error_handler_t err_handler, void *err_arg,
                       uct_iface_h *iface_p);

/**
 * (API 1.5) Inside a busy-wait loop (on this library's shared memory, or a
 * caller's progress loop): let the sibling hyper-thread run.
 */
static UCS_F_ALWAYS_INLINE void uct_o2m_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}


/**
 * Synchronization mode of a group.
 * Fan-out (sm_bcast) supports BATCHED and CENTRALIZED; they differ in how
 * the root learns that receivers consumed a message.  Fan-in (sm_incast)
 * supports all four.
 */
typedef enum {
    /** Arrivals counted with one atomic counter per ring element; every
     *  writer has its own cache lines; the receiver does the work. */
    UCT_O2M_MODE_BATCHED,
    /** No shared counter: each writer sets a flag at the end of its own slot
     *  and the receiver polls them; the receiver does the work. */
    UCT_O2M_MODE_CENTRALIZED,
    /** Senders reduce into one shared buffer under a process-shared lock. */
    UCT_O2M_MODE_LOCKED,
    /** Senders reduce into one shared buffer with atomic operations; only
     *  the (op, dtype) pairs accepted by uct_o2m_op_supported(). */
    UCT_O2M_MODE_ATOMIC,
    UCT_O2M_MODE_LAST
} uct_o2m_mode_t;


/** Reduction operation of a fan-in group. */
typedef enum {
    UCT_O2M_OP_GATHER, /**< No reduction: contributions side by side */
    UCT_O2M_OP_SUM,
    UCT_O2M_OP_PROD,
    UCT_O2M_OP_MIN,
    UCT_O2M_OP_MAX,
    UCT_O2M_OP_BAND,   /**< Integer types only */
    UCT_O2M_OP_BOR,    /**< Integer types only */
    UCT_O2M_OP_BXOR,   /**< Integer types only */
    UCT_O2M_OP_LAND,
    UCT_O2M_OP_LOR,
    UCT_O2M_OP_LXOR,
    UCT_O2M_OP_LAST
} uct_o2m_op_t;


/** Element type of a reduction. */
typedef enum {
    UCT_O2M_DT_INT8,
    UCT_O2M_DT_UINT8,
    UCT_O2M_DT_INT16,
    UCT_O2M_DT_UINT16,
    UCT_O2M_DT_INT32,
    UCT_O2M_DT_UINT32,
    UCT_O2M_DT_INT64,
    UCT_O2M_DT_UINT64,
    UCT_O2M_DT_FLOAT,
    UCT_O2M_DT_DOUBLE,
    UCT_O2M_DT_LAST
} uct_o2m_dtype_t;


enum uct_o2m_group_params_field {
    UCT_O2M_GROUP_FIELD_MODE      = UCS_BIT(0),
    UCT_O2M_GROUP_FIELD_OP        = UCS_BIT(1),
    UCT_O2M_GROUP_FIELD_DTYPE     = UCS_BIT(2),
    UCT_O2M_GROUP_FIELD_HDR_LEN   = UCS_BIT(3),
    UCT_O2M_GROUP_FIELD_ROOT_ADDR = UCS_BIT(4),
    UCT_O2M_GROUP_FIELD_MEMBER_PIDS = UCS_BIT(5)
};


/** Parameters of uct_o2m_ep_create(). */
typedef struct uct_o2m_group_params {
    /** Mask of enum uct_o2m_group_params_field: which optional fields are
     *  set.  group_id, size, my_index and root_index are always required. */
    uint64_t                 field_mask;
    /** Identifies the group among the live groups of the root's interface;
     *  the same on every member. */
    uint64_t                 group_id;
    unsigned                 size;       /**< Number of members, root included */
    unsigned                 my_index;   /**< This member, 0..size-1 */
    unsigned                 root_index; /**< The root, 0..size-1 */
    uct_o2m_mode_t           mode;       /**< Default: BATCHED */
    uct_o2m_op_t             op;         /**< sm_incast; default: GATHER */
    uct_o2m_dtype_t          dtype;      /**< sm_incast reductions */
    /** sm_incast: leading bytes of a contribution that are not reduced
     *  (default 0). */
    size_t                   hdr_len;
    /** Non-root members: the root's interface and device addresses. */
    const uct_iface_addr_t   *root_iface_addr;
    const uct_device_addr_t  *root_dev_addr;
    /** Root (optional): the process of each member (size entries, 0 where
     *  unknown).  They let the root tell a member that has not joined yet
     *  but is alive (slow: waited for, also after the root destroyed its
     *  endpoint, until the interface closes) from one whose process has
     *  exited (the group fails).  Without them the root cannot see a
     *  member that died before joining, and closing its interface does not
     *  wait for members that have not joined. */
    const pid_t              *member_pids;
} uct_o2m_group_params_t;


/** Limits of an sm_bcast / sm_incast interface, see uct_o2m_iface_query(). */
typedef struct uct_o2m_iface_attr {
    unsigned max_members;  /**< Largest group size */
    unsigned max_groups;   /**< Groups rooted at this interface at once */
    size_t   max_short;    /**< Largest uct_ep_am_short header+payload */
    size_t   max_bcopy;    /**< Largest uct_ep_am_bcopy message */
    size_t   max_zcopy;    /**< Largest uct_ep_am_zcopy message; 0 when
                                single-copy reads are off (CMA) */
    unsigned fifo_depth;   /**< Ring elements of a group (fan-in rings of
                                large groups may have fewer: RING_MAX) */
    size_t   ring_max;     /**< Largest fan-in ring (RING_MAX) */
    int      is_incast;    /**< Nonzero for sm_incast */
} uct_o2m_iface_attr_t;


/**
 * Create a group endpoint on an sm_bcast or sm_incast interface.
 *
 * @return UCS_OK, UCS_ERR_INVALID_PARAM (bad size/index/mode/op/dtype, or an
 *         interface of another transport), UCS_ERR_UNSUPPORTED (mode, op and
 *         dtype not supported together), UCS_ERR_EXCEEDS_LIMIT (too many
 *         members or groups), UCS_ERR_ALREADY_EXISTS (group_id in use on the
 *         root's interface), UCS_ERR_UNREACHABLE (root not on this host).
 *         A root that cannot create the segment, and a member whose root
 *         could not, get UCS_OK and an endpoint in the REFUSED state (see
 *         "Exhaustion" above); a root that cannot list the refusal either
 *         gets its error (UCS_ERR_NO_MEMORY, ...).
 */
UCT_O2M_API ucs_status_t uct_o2m_ep_create(uct_iface_h iface,
                               const uct_o2m_group_params_t *params,
                               uct_ep_h *ep_p);


/** State of a group endpoint, see uct_o2m_ep_state(). */
typedef enum {
    /** A member waiting for the root to create the group */
    UCT_O2M_EP_STATE_JOINING,
    /** Joined (the root: created); operations may be posted */
    UCT_O2M_EP_STATE_READY,
    /** The root could not create the group segment: nothing was or will be
     *  sent on it; the status is the root's error */
    UCT_O2M_EP_STATE_REFUSED,
    /** Failed otherwise (a member exited, a corrupt segment, PEER_TIMEOUT):
     *  the status says why */
    UCT_O2M_EP_STATE_FAILED
} uct_o2m_ep_state_t;


/**
 * State of a group endpoint created by uct_o2m_ep_create(); a member that
 * is still joining looks for the group once more (with PEER_TIMEOUT set, a
 * fan-in sender's wait for the group counts from its first such call, as
 * from its first send).  @a status_p (optional)
 * gets UCS_OK or the endpoint's error.  Every member of a group reaches
 * READY, or every one REFUSED: a caller may wait for one of the two before
 * it sends, and use another path on every member when the group is refused.
 */
UCT_O2M_API uct_o2m_ep_state_t uct_o2m_ep_state(uct_ep_h ep,
                                                ucs_status_t *status_p);


/**
 * A word of shared memory that changes when a group endpoint may have
 * something new to deliver (uct_o2m_ep_rx_watch()).  A caller that waits
 * for the endpoint's next message can spin on uct_o2m_rx_watch_changed()
 * instead of calling uct_worker_progress() on every poll: a poll of all the
 * interface's endpoints costs hundreds of instructions, the word one load.
 * It stays valid while the endpoint exists; it says nothing of the other
 * endpoints, nor of failures, so the caller still progresses the worker
 * every few polls.
 */
typedef struct uct_o2m_rx_watch {
    const void *addr;   /**< the word, 4 or 8 bytes, naturally aligned */
    uint64_t   value;   /**< its value when nothing was ready */
    unsigned   size;    /**< 4 or 8 */
} uct_o2m_rx_watch_t;


/**
 * (API 1.8) Where the next message of @a ep (a fan-out member, or a fan-in
 * root: the next round's contributions) will show, in @a watch.
 * UCS_OK: nothing is ready now, and the word changes when something may be;
 * UCS_ERR_BUSY: something is ready, uct_worker_progress() delivers it;
 * UCS_ERR_UNSUPPORTED: no such word (a sending role, a member that has not
 * joined yet, a failed endpoint, another transport).
 */
UCT_O2M_API ucs_status_t uct_o2m_ep_rx_watch(uct_ep_h ep,
                                             uct_o2m_rx_watch_t *watch);


/** Whether the word of @a watch changed since uct_o2m_ep_rx_watch() */
static inline int uct_o2m_rx_watch_changed(const uct_o2m_rx_watch_t *watch)
{
    uint64_t value;

    if (watch->size == sizeof(uint32_t)) {
        value = __atomic_load_n((const uint32_t*)watch->addr,
                                __ATOMIC_RELAXED);
    } else {
        value = __atomic_load_n((const uint64_t*)watch->addr,
                                __ATOMIC_RELAXED);
    }
    return value != watch->value;
}


/**
 * Whether a fan-in group of the given mode supports (op, dtype).
 * GATHER is supported by every mode and dtype is then ignored.
 */
UCT_O2M_API int uct_o2m_op_supported(uct_o2m_mode_t mode, uct_o2m_op_t op,
                         uct_o2m_dtype_t dtype);


/** Size in bytes of one element of @a dtype, 0 when invalid. */
UCT_O2M_API size_t uct_o2m_dtype_size(uct_o2m_dtype_t dtype);


/** Query the limits of an sm_bcast / sm_incast interface. */
UCT_O2M_API ucs_status_t uct_o2m_iface_query(uct_iface_h iface,
                                 uct_o2m_iface_attr_t *attr);


/**
 * Bytes of the shared segment a root whose interface has @a attr (from
 * uct_o2m_iface_query(), possibly another process's, exchanged) creates for
 * a group of @a params (size, mode, op, hdr_len matter), pre-faulted: what
 * the group costs in memory on its host.
 */
UCT_O2M_API size_t uct_o2m_group_seg_size(const uct_o2m_iface_attr_t *attr,
                                          const uct_o2m_group_params_t *params);


/**
 * Liveness of processes on this host
 * ----------------------------------
 * One implementation serves the transports and UCG.  A process is named by
 * its pid and its start time (clock ticks since boot, field 22 of
 * /proc/<pid>/stat), so that a reused pid is never taken for the process
 * that had it.  A watch table holds each watched process once, counted:
 * every group of an interface (or of a UCG context) that watches the same
 * peer shares one watch, and at most one pidfd.
 *
 * A watch uses a pidfd (pidfd_open, Linux 5.3+) when it can get one.  When
 * it cannot - the kernel lacks pidfd_open (ENOSYS), the fd limit is reached
 * (EMFILE, ENFILE), a seccomp filter refuses it - that is not a death: the
 * watch falls back to kill(pid, 0) plus the start time and state in
 * /proc/<pid>/stat.  A process has exited when its pidfd polls readable, or
 * when its pid is gone, is a zombie, or belongs to a process started at
 * another time.  A stopped or slow process is alive.
 */

/** A process on this host, robust against pid reuse. */
typedef struct uct_o2m_proc {
    int32_t  pid;
    uint64_t start_time; /**< Clock ticks since boot, 0 when unknown */
} uct_o2m_proc_t;

typedef struct uct_o2m_watch_table uct_o2m_watch_table_t;
typedef struct uct_o2m_watch       uct_o2m_watch_t;


/** This process. */
UCT_O2M_API void uct_o2m_proc_self(uct_o2m_proc_t *proc);

/** Create an empty watch table. */
UCT_O2M_API ucs_status_t
uct_o2m_watch_table_create(uct_o2m_watch_table_t **table_p);

/** Destroy a table; its watches must have been released. */
UCT_O2M_API void uct_o2m_watch_table_destroy(uct_o2m_watch_table_t *table);

/**
 * Watch @a proc: the table's watch of it, with one more reference, or a new
 * one.  Succeeds also for a process that has already exited (the watch then
 * says so) and when no pidfd can be had.
 * @return UCS_OK or UCS_ERR_NO_MEMORY.
 */
UCT_O2M_API ucs_status_t uct_o2m_watch_get(uct_o2m_watch_table_t *table,
                                           const uct_o2m_proc_t *proc,
                                           uct_o2m_watch_t **watch_p);

/** Release a reference taken with uct_o2m_watch_get() (NULL is ignored). */
UCT_O2M_API void uct_o2m_watch_put(uct_o2m_watch_table_t *table,
                                   uct_o2m_watch_t *watch);

/** Whether the watched process has exited; once it has, it stays so. */
UCT_O2M_API int uct_o2m_watch_has_exited(uct_o2m_watch_t *watch);

/** Whether the watch has a pidfd (0: the kill(pid, 0) fallback). */
UCT_O2M_API int uct_o2m_watch_has_pidfd(const uct_o2m_watch_t *watch);


/** Names, for logs and tools. */
UCT_O2M_API const char *uct_o2m_mode_name(uct_o2m_mode_t mode);
UCT_O2M_API const char *uct_o2m_op_name(uct_o2m_op_t op);
UCT_O2M_API const char *uct_o2m_dtype_name(uct_o2m_dtype_t dtype);


/**
 * mc_udp (UDP/IP multicast across hosts, docs/multicast.md "The mc_udp
 * transport") takes the same group endpoints: uct_o2m_ep_create() and
 * uct_o2m_ep_state() on an mc_udp interface give a fan-out group whose data
 * goes by IP multicast, made reliable by the engine.  Its counters:
 */
#define UCT_MC_UDP_TL_NAME "mc_udp"

typedef struct uct_mc_udp_counters {
    uint64_t rx_packets;     /**< Datagrams read (unicast and multicast) */
    uint64_t rx_bad;         /**< Dropped by the transport: too short or
                                  too long, bad transport header, unknown
                                  kind, a sender that is not the peer */
    uint64_t rx_no_stream;   /**< Well formed but for no stream of this
                                  interface (and not a probe opening one) */
    uint64_t rx_engine_drop; /**< Dropped by the engine's checks (all its
                                  streams, closed ones included) */
    uint64_t tx_packets;     /**< Datagrams sent */
    uint64_t tx_paced;       /**< Data packets held back by pacing */
    uint64_t peers_gone;     /**< Peers found gone (ICMP port unreachable) */
    uint64_t rx_conns;       /**< Receiving ends of point-to-point streams
                                  open now (one per peer endpoint, freed
                                  when the peer destroys it or fails) */
    /* The engine's counters, summed over the interface's streams (closed
     * ones included), see docs/multicast.md "Counters": */
    uint64_t tx_repair_ucast; /**< Repairs sent by unicast */
    uint64_t tx_repair_mcast; /**< PSNs re-multicast by a root */
    uint64_t tx_nack;         /**< NACK packets sent */
    uint64_t rx_dup;          /**< Data packets received again */
    uint64_t rx_own;          /**< (API 1.6) Copies of this interface's own
                                   multicast, dropped: a root does not
                                   listen to its group's address, so only
                                   a member endpoint of another group on
                                   the same address reads them */
    uint64_t rx_syscalls;     /**< (API 1.7) System calls of the receive
                                   path in progress: the epoll_wait() that
                                   finds the sockets with datagrams (one
                                   per progress call), the recvmmsg() of
                                   each such socket, reads of the error
                                   queue and of the expired timer fd */
} uct_mc_udp_counters_t;

/**
 * (API 1.4) A member of an mc_udp group waits (@a expect != 0) or no
 * longer waits for a message from the root.  While it waits, silence from
 * the root is treated like a missing packet (the engine's
 * uct_mc_rel_expect): the member asks its parent, and its endpoint fails when the parent or the
 * root is gone (or, with PEER_TIMEOUT, silent past it) - a member waiting
 * for a root that died or was cut off learns it, instead of waiting for a
 * packet that never comes.  UCS_OK; UCS_ERR_UNSUPPORTED for an endpoint
 * of another transport (sm_bcast members find a dead root themselves);
 * UCS_ERR_INVALID_PARAM for the root or a point-to-point endpoint.
 */
UCT_O2M_API ucs_status_t uct_o2m_ep_expect(uct_ep_h ep, int expect);

/** Counters of an mc_udp interface (UCS_ERR_INVALID_PARAM for another). */
UCT_O2M_API ucs_status_t uct_mc_udp_iface_counters(uct_iface_h iface,
                                          uct_mc_udp_counters_t *counters);


/**
 * Repair statistics of an mc_udp interface (API 1.3), summed over its
 * streams (closed ones included).  A repaired packet is one whose first
 * copy at a member was a repair (its original was lost); its repair
 * latency runs from the moment the member's engine learned that the packet
 * exists without having it (a later packet, the root's SYNC after a lost
 * tail, or a child's NACK) to the arrival of the repair, on the
 * transport's monotonic clock (docs/multicast.md "Counters").  The repairs
 * sent are uct_mc_udp_counters_t::tx_repair_ucast and tx_repair_mcast.
 */
#define UCT_MC_UDP_LAT_BUCKETS 96

typedef struct uct_mc_udp_repair_stats {
    uint64_t repaired;    /**< Packets received first as a repair */
    uint64_t lat_sum_ns;  /**< Sum of their repair latencies */
    uint64_t lat_max_ns;  /**< The largest */
    uint64_t lat_hist[UCT_MC_UDP_LAT_BUCKETS]; /**< Repairs by latency:
                                  bucket i holds [uct_mc_udp_lat_bucket_low(i),
                                  uct_mc_udp_lat_bucket_low(i + 1)) ns, the
                                  last one everything above (4 buckets per
                                  doubling from 1024 ns, at most 19 %
                                  wide) */
} uct_mc_udp_repair_stats_t;

/** Lower bound in ns of bucket @a i of uct_mc_udp_repair_stats_t. */
static inline uint64_t uct_mc_udp_lat_bucket_low(unsigned i)
{
    return (i == 0) ? 0 :
           ((4ull + (i - 1) % 4) << (10 + (i - 1) / 4)) / 4;
}

/** Repair statistics (UCS_ERR_INVALID_PARAM for another transport). */
UCT_O2M_API ucs_status_t
uct_mc_udp_iface_repair_stats(uct_iface_h iface,
                              uct_mc_udp_repair_stats_t *stats);


/**
 * (API 1.5) Counters of an mc_verbs or mc_mlx5 group endpoint, for tests
 * and diagnosis (docs/multicast.md "The mc_verbs transport").
 */
typedef struct uct_mc_verbs_ep_counters {
    uint64_t rx_datagrams;    /**< Datagrams the group's QP received */
    uint64_t rx_mcast_data;   /**< First transmissions of data packets
                                   received (the root multicasts them) */
    uint64_t rx_test_drop;    /**< Of those, dropped by GROUP_TEST_DROP */
    uint64_t rx_repaired;     /**< Packets whose first copy stored was a
                                   repair (the original was lost) */
    uint64_t rx_dup;          /**< Data packets received again */
    uint64_t tx_repair_ucast; /**< Repairs sent by UD unicast */
    uint64_t tx_repair_mcast; /**< PSNs re-multicast (root) */
    uint64_t tx_nack;         /**< NACK packets sent */
} uct_mc_verbs_ep_counters_t;

/**
 * Counters of an mc_verbs or mc_mlx5 group endpoint: UCS_OK;
 * UCS_ERR_INVALID_PARAM for another endpoint; UCS_ERR_UNSUPPORTED when the
 * plugin was built without mc_verbs (configure did not find verbs,
 * librdmacm or libuct_ib).
 */
UCT_O2M_API ucs_status_t
uct_mc_verbs_ep_counters(uct_ep_h ep, uct_mc_verbs_ep_counters_t *counters);

END_C_DECLS

#endif
