/**
 * UCG group: members (address exchange, host identity, liveness), group id
 * and epoch, caches of host-local endpoints and plans, the admission of
 * host-local endpoints, and the executor's per-group state.
 */
#ifndef UCG_GROUP_H_
#define UCG_GROUP_H_

#include "ucg_context.h"
#include "ucg_def.h"

/** What a member told the others when the group was created */
typedef struct ucg_member {
    uint64_t            host_label;   /* for planning (HOSTS may override) */
    uint64_t            real_host;    /* real host identity */
    pid_t               pid;
    uint64_t            start_time;   /* with pid: the process, see
                                         uct_o2m_proc_t */
    uct_o2m_watch_t     *watch;       /* same real host: liveness; else
                                         NULL */
    ucp_ep_h            ep;           /* from context->p2p_conns, on first
                                         use */
    const void          *worker_addr; /* in the group's address blob */
    size_t              worker_addr_len;
    const void          *sm_iface_addr[UCG_SM_LAST];
    const void          *sm_dev_addr[UCG_SM_LAST];
    int                 ep_failed;    /* UCP failed the endpoint (another
                                         host: PEER error handling) */
} ucg_member_t;

/** A cached sm_bcast / sm_incast group endpoint */
typedef struct ucg_sm_ep {
    ucs_list_link_t     list;
    ucg_sm_tl_t         tl;
    unsigned            host;         /* topology host */
    unsigned            root;         /* group rank of the root */
    uint64_t            set_key;      /* ucg_group_sm_set_key */
    uct_o2m_mode_t      mode;
    uct_o2m_op_t        op;
    uct_o2m_dtype_t     dtype;
    uct_ep_h            ep;
} ucg_sm_ep_t;

/** A host-local endpoint the group has admitted (the same list on every
 *  member: admissions happen at collective starts, in start order) */
typedef struct ucg_sm_slot {
    ucg_sm_tl_t         tl;
    unsigned            root;         /* group rank */
    uint64_t            set_key;      /* ucg_group_sm_set_key */
    unsigned            count;        /* members of its set */
    uct_o2m_mode_t      mode;
    uct_o2m_op_t        op;
    uct_o2m_dtype_t     dtype;
    size_t              bytes;        /* of its segment (set on admission) */
} ucg_sm_slot_t;

struct ucg_group {
    ucg_context_h       context;
    ucs_list_link_t     list;         /* in context->groups */
    unsigned            size;
    unsigned            rank;
    uint16_t            id;           /* the same on every member; unique
                                         among the groups of each member */
    uint64_t            uid;          /* the same on every member; unique on
                                         each host (o2m group ids) */
    uint32_t            epoch;        /* the same on every member; higher
                                         (mod 2^UCG_GROUP_EPOCH_BITS) than
                                         the epoch of each member's earlier
                                         groups: in every sm header */
    ucg_topo_t          topo;
    /* What the plans follow, the same on every member: the context's
     * configuration, or its plan_defaults when the members' planner
     * variables differ (ucg_group_agree_config) */
    const ucg_config_t  *config;
    ucg_member_t        *members;     /* [size] */
    void                *addr_blob;
    ucs_list_link_t     sm_eps;       /* ucg_sm_ep_t */
    ucg_plan_cache_t    plans;

    /* Executor state */
    uint16_t            next_seq;     /* sequence of the next start */
    ucs_list_link_t     colls;        /* started collectives, in order */
    ucs_queue_head_t    sm_unexp;     /* sm messages not yet expected */
    ucs_status_t        failed;       /* first fatal error, or UCS_OK */
    /* A member's failure found while none of the group's collectives was
     * started (ucg_group_member_failed): its line is logged when the group
     * is used again, never when it is only destroyed */
    struct {
        int             unlogged;
        int             conn;         /* its UCP connection, else its
                                         process exited (this host) */
        unsigned        rank;
    } failure;
    int                 destroying;
    ucs_time_t          next_check;   /* of members' liveness */
    unsigned            check_skip;   /* progress calls before reading the
                                         clock for the next check */
    unsigned            checked_gen;  /* progress_q.gen of the last drain
                                         that came to its collectives */
    struct ucg_coll     *spare_coll;  /* a finalized collective, reused by
                                         the next ucg_coll_init */

    /* Host-local endpoints: each member reserved sm_budget[tl][rank]
     * directory entries of its interfaces for the endpoints it roots
     * (agreed at creation); sm_slots are those admitted so far */
    unsigned            *sm_budget[UCG_SM_LAST];   /* [size] */
    unsigned            sm_reserved[UCG_SM_LAST];  /* this member's, given
                                                      back at destroy */
    ucg_sm_slot_t       *sm_slots;
    unsigned            num_sm_slots;
    unsigned            max_sm_slots;
    int                 sm_denied_logged;
    /* Collectives from abort_seq on fail (ucg_coll_abort_send): one of
     * them failed here (abort_local) or on the member that sent us an
     * abort message */
    int                 aborted;
    int                 abort_local;
    uint16_t            abort_seq;
    /* Segment memory: the ring geometry of each member's interfaces and
     * the smallest SM_GROUP_MEM of the members (agreed at creation); the
     * bytes admitted so far on each topology host */
    uct_o2m_iface_attr_t *sm_geom[UCG_SM_LAST];    /* [size] */
    size_t              sm_mem_limit;
    size_t              *sm_host_bytes;            /* [num_hosts] */
    /* Multicast group endpoints of its MC_BCAST phases, on the transport
     * topo.mc_tl (ucg_mc_agree.c) */
    struct ucg_mc_group *mc;
};

/** The UCP endpoint to @a rank (created on first use) */
ucs_status_t ucg_group_p2p_ep(ucg_group_h group, unsigned rank,
                              ucp_ep_h *ep_p);

/**
 * What tells apart the sets of one host that have the same root: 0 for the
 * set of the root's whole host (the sets of most plans), else a 64-bit hash
 * of the set's ranks, never 0 (the sub-groups of a two-level plan,
 * ucg_plan_2level.c).  Computed by every member from the plan: the same
 * everywhere.
 */
uint64_t ucg_group_sm_set_key(const ucg_topo_t *topo,
                              const ucg_phase_set_t *set);

/**
 * The cached group endpoint of @a tl for the members of @a set (one host),
 * rooted at set->ranks[set->root] (cached per root and set key); created
 * on first use (every member of the set creates it at the same point of
 * the same collective).
 * @a op / @a dtype matter for sm_incast only; hdr_len is the UCG header.
 */
ucs_status_t ucg_group_sm_ep(ucg_group_h group, ucg_sm_tl_t tl,
                             const ucg_phase_set_t *set, uct_o2m_mode_t mode,
                             uct_o2m_op_t op, uct_o2m_dtype_t dtype,
                             uct_ep_h *ep_p);

/** The cached plan for @a key (computed on first use). */
ucs_status_t ucg_group_plan(ucg_group_h group, const ucg_plan_key_t *key,
                            const ucg_plan_t **plan_p);

/**
 * Check members' liveness, at most every CHECK_INTERVAL: returns
 * group->failed, set to UCS_ERR_CONNECTION_RESET (ucg_group_member_failed)
 * when a member on this real host has exited.
 */
ucs_status_t ucg_group_check(ucg_group_h group);

/** ucg_group_check at once, whenever the last check was */
ucs_status_t ucg_group_check_now(ucg_group_h group);

/**
 * Member @a rank failed with @a status (@a conn: UCP failed the connection
 * to it, else its process on this host exited): the group fails, if it has
 * not already.  A member that leaves after its last collective is normal:
 * the line naming it is logged now when one of the group's collectives is
 * started, else when the group is used again (ucg_group_failure_log), and
 * not when the group is only destroyed.
 */
void ucg_group_member_failed(ucg_group_h group, unsigned rank, int conn,
                             ucs_status_t status);

/** Log the line of a failure ucg_group_member_failed kept back, if any */
void ucg_group_failure_log(ucg_group_h group);

/** Whether member @a rank of @a group is known to have exited: on this
 *  real host through its liveness watch, on another host through UCP's error
 *  handling (whatever group->failed says) */
int ucg_group_member_exited(ucg_group_h group, unsigned rank);

/**
 * Admit the host-local endpoints the plan of @a coll needs (all, or none):
 * 1 when they are admitted (now or before), 0 when a root's budget does not
 * allow them.  Called at collective starts, in the same order on every
 * member, so every member decides the same.
 */
int ucg_group_sm_admit(ucg_group_h group, const ucg_sm_slot_t *slots,
                       unsigned count);

/** Watch @a rank if it is on another host: its UCP endpoint (with error
 *  handling) is created, so that UCP reports its failure while this member
 *  only receives from it; the error if UCP already has */
ucs_status_t ucg_group_p2p_watch(ucg_group_h group, unsigned rank);

/**
 * Close the UCP endpoint to @a rank with FORCE (UCP completes its requests
 * with an error and no longer uses their buffers), take it out of the
 * context's cache and fail every group that used it.  Only endpoints with
 * PEER error handling (members on other hosts, real or virtual) can be:
 * UCS_ERR_UNSUPPORTED for one to this host, UCS_ERR_NO_ELEM when there is
 * no endpoint.
 */
ucs_status_t ucg_group_p2p_force_close(ucg_group_h group, unsigned rank);

/**
 * The live group of @a context that the sm message @a data (of @a length
 * bytes, its header at the start) is for, or NULL: the message is dropped
 * (ucg_context_sm_drop).  A member receives only on the endpoints of its
 * own groups, which a group creates after it is in the context and
 * destroys before it leaves it: a message of no live group (or of an
 * earlier group that had the id of a live one) is late or forged, and no
 * group of this context may ever take it.  Inline: the AM handler of the
 * sm interfaces runs it for every message.
 */
static UCS_F_ALWAYS_INLINE ucg_group_t *
ucg_context_sm_group(ucg_context_t *context, const void *data, size_t length)
{
    const ucg_sm_hdr_t *hdr = (const ucg_sm_hdr_t*)data;
    ucg_group_t *group;

    if (length < sizeof(*hdr)) {
        ucg_context_sm_drop(context, data, length, NULL);
        return NULL;
    }

    group = ucg_context_find_group(context, hdr->group_id);
    if ((group == NULL) || (hdr->epoch != group->epoch)) {
        ucg_context_sm_drop(context, data, length, group);
        return NULL;
    }

    return group;
}

#endif
