/**
 * UCG executor: collective requests, phase machine, point-to-point
 * primitives.  The wire formats (tag layout, sm header) are in ucg_def.h.
 */
#ifndef UCG_COLL_H_
#define UCG_COLL_H_

#include "ucg_group.h"
#include "ucg_def.h"
#include "ucg_dt.h"
#include "ucg_plan.h"

typedef struct ucg_coll ucg_coll_t;

/** An sm message that arrived before its collective was ready for it */
typedef struct ucg_sm_unexp {
    ucs_queue_elem_t    queue;
    ucg_sm_hdr_t        hdr;
    size_t              length;       /* of data[] (the whole message) */
    char                data[0];
} ucg_sm_unexp_t;

/*
 * Per-phase state: one member per phase family, zeroed at the start of every
 * phase; only the family of the current phase (coll->phase->method) reads
 * its member.
 */

/* P2P_BCAST, P2P_REDUCE: a k-nomial tree (ucg_p2p.c) */
typedef struct ucg_p2p_tree_state {
    unsigned   parent;      /* set index of the parent, or UCG_P2P_NO_PARENT */
    unsigned   children;    /* number of children */
    unsigned   vrank;       /* (my_idx - root) mod set size */
    unsigned   radix;
    size_t     top;         /* distance of the largest child subtree; 0:
                               leaf */
    size_t     nfrags;
    size_t     frag_len;    /* bcast: bytes, reduce: elements per fragment */
    size_t     frag;        /* fragments received and forwarded (bcast) or
                               reduced (reduce); a leaf: posted */
    void       *slots;      /* reduce: two fragments per child */
} ucg_p2p_tree_state_t;

/* P2P_ALLREDUCE_RD: recursive doubling (ucg_p2p.c) */
typedef struct ucg_p2p_rd_state {
    unsigned   stage;       /* the posted one; == stages: done */
    unsigned   stages;
    unsigned   role;        /* UCG_P2P_RD_ROLE_* */
    unsigned   newidx;      /* index among the members of the rounds */
    unsigned   rounds;
    unsigned   extra;       /* members beyond the largest power of two */
    int        cur_in_tmp;  /* the current value is in tmp, not in acc */
    void       *tmp;        /* one vector */
} ucg_p2p_rd_state_t;

/* P2P_ALLREDUCE_RING, P2P_ALLGATHER_RING (ucg_p2p.c) */
typedef struct ucg_p2p_ring_state {
    unsigned   stage;       /* the posted one */
    void       *tmp;        /* allreduce: a received segment */
} ucg_p2p_ring_state_t;

/* P2P_BARRIER: dissemination (ucg_p2p.c) */
typedef struct ucg_p2p_barrier_state {
    unsigned   round;       /* the posted one; == rounds: done */
    unsigned   rounds;
} ucg_p2p_barrier_state_t;

struct ucg_sm_cma_desc;

/* SM_* phases (ucg_sm.c): a stream of fragments on one endpoint */
typedef struct ucg_sm_state {
    int          open;      /* the endpoints are resolved and the phase's own
                               start() was called */
    uct_ep_h     ep;        /* the endpoint this member sends on */
    unsigned     role;      /* UCG_SM_ROLE_* */
    int          turn;      /* may contribute to its fan-in endpoint */
    size_t       total;     /* bytes of the stream */
    size_t       frag_len;  /* bytes per fragment */
    unsigned     nfrags;
    size_t       next;      /* fragments sent or received */
    ucs_status_t status;    /* of the deliveries */
    union {
        /* SM_ALLREDUCE: fragments received and expected, the set members'
         * vectors by set index, whether they are reduced */
        struct {
            unsigned     recvd;
            unsigned     expect;
            void         *vecs;
            int          done;
        } allreduce;
        /* SM_*_CMA: stage (0: descriptors, 1: acknowledgements or
         * release), the status of this member's reads, the received
         * descriptors (the root's, or the members' in member order) */
        struct {
            unsigned     stage;
            ucs_status_t read;
            struct ucg_sm_cma_desc *descs;
        } cma;
    };
} ucg_sm_state_t;

typedef union ucg_phase_state {
    ucg_p2p_tree_state_t    tree;
    ucg_p2p_rd_state_t      rd;
    ucg_p2p_ring_state_t    ring;
    ucg_p2p_barrier_state_t barrier;
    ucg_sm_state_t          sm;
} ucg_phase_state_t;

#define UCG_COLL_MAX_SCRATCH 4

struct ucg_coll {
    ucg_group_h         group;
    ucg_coll_params_t   params;
    ucg_op_desc_t       op;          /* reductions */
    size_t              dt_size;
    size_t              len;         /* bytes per member: count * dt_size */
    const ucg_plan_t    *plan;

    /* Instance */
    ucs_list_link_t     list;        /* in group->colls while started */
    int                 active;      /* started and not complete */
    ucs_status_t        status;      /* UCS_INPROGRESS, UCS_OK or error */
    uint16_t            seq;
    unsigned            phase_idx;
    const ucg_phase_t   *phase;      /* current phase */
    const ucg_phase_set_t *set;      /* my set in it, NULL: not involved */
    ucg_phase_t         sm_subst;    /* the point-to-point phase that stands
                                        in for an SM phase whose endpoints
                                        were refused (ucg_sm.c) */
    unsigned            my_idx;      /* my index in set->ranks */
    ucg_phase_state_t   ps;

    /* Data the phases work on (see ucg_plan.h) */
    void                *data;       /* bcast-like phases */
    size_t              data_len;
    void                *acc;        /* reductions: params.count elements */
    const void          *own;        /* reduce root whose first phase is
                                        SM_REDUCE_CMA: its vector, not yet
                                        in acc (that phase folds it in) */
    void                *gbuf;       /* block phases: size blocks */
    size_t              block;       /* bytes of one block */

    /* Outstanding UCP requests of the current phase */
    void                **reqs;
    unsigned            num_reqs;
    unsigned            max_reqs;

    void                *scratch[UCG_COLL_MAX_SCRATCH];
    size_t              scratch_len[UCG_COLL_MAX_SCRATCH];
};

/** A phase algorithm: start() is called once when the phase begins (with
 *  coll->set non-NULL) and returns UCS_OK (or UCS_INPROGRESS) when it
 *  started, or an error; then progress() is called, at least once, until it
 *  returns UCS_OK (the phase is over for this member) or an error. */
typedef struct ucg_phase_ops {
    ucs_status_t (*start)(ucg_coll_t *coll);
    ucs_status_t (*progress)(ucg_coll_t *coll);
} ucg_phase_ops_t;

/* P2P_* phases: ucg_p2p.c; SM_* and FOLD phases: ucg_sm.c */
extern const ucg_phase_ops_t ucg_p2p_phase_ops[UCG_PHASE_LAST];
extern const ucg_phase_ops_t ucg_sm_phase_ops[UCG_PHASE_LAST];

/** Post a send / receive of @a len bytes to / from group rank @a peer, with
 *  the algorithm's @a step (0..255).  Completion: ucg_p2p_test(). */
ucs_status_t ucg_p2p_send(ucg_coll_t *coll, unsigned peer, unsigned step,
                          const void *buf, size_t len);
ucs_status_t ucg_p2p_recv(ucg_coll_t *coll, unsigned peer, unsigned step,
                          void *buf, size_t len);

/** UCS_OK when every request posted in this phase completed, UCS_INPROGRESS,
 *  or the error of a failed one (a receive truncated included). */
ucs_status_t ucg_p2p_test(ucg_coll_t *coll);

/** After an error: cancel the outstanding requests of @a coll, and leave
 *  none that UCP may still use (force-closed or parked, see there) */
void ucg_p2p_cancel_all(ucg_coll_t *coll);

/** A buffer of at least @a size bytes kept until ucg_coll_finalize();
 *  indices 0 and 1 are the executor's (acc, gbuf), 2 and 3 the phases'.
 *  NULL (and a log line) when out of memory.  @a idx < UCG_COLL_MAX_SCRATCH. */
void *ucg_coll_scratch(ucg_coll_t *coll, unsigned idx, size_t size);

/** AM handler of UCG's sm interfaces (arg: the context) */
ucs_status_t ucg_sm_am_cb(void *arg, void *data, size_t length,
                          unsigned flags);

/** Progress every started collective of the context (called by
 *  ucg_progress after the transports), and set context->need_ucp */
unsigned ucg_coll_progress_all(ucg_context_h context);

/** Executor state of a new group (called by ucg_group_create once the
 *  group is in context->groups) */
void ucg_coll_group_init(ucg_group_h group);

/** Requests a failed collective left to UCP (sends that could not complete)
 *  and the scratch buffers they use, freed when every request completed */
typedef struct ucg_parked {
    ucs_list_link_t list;         /* in context->parked */
    void            *scratch[UCG_COLL_MAX_SCRATCH];
    unsigned        num_reqs;
    void            *reqs[0];
} ucg_parked_t;

/** Release what completed of the context's parked requests; @a force
 *  (context destroy): every request goes to UCP, the buffers of those not
 *  complete stay allocated */
void ucg_coll_parked_progress(ucg_context_h context, int force);

/** Free the buffers of the parked requests (after the UCP worker is
 *  destroyed: nothing can use them any more) */
void ucg_coll_parked_free(ucg_context_h context);

/** Fail and release the started collectives of a group being destroyed */
void ucg_coll_group_cleanup(ucg_group_h group);

/** Deliver a message of the current SM phase of @a coll (ucg_sm.c); an
 *  error is kept in the phase state and returned by its progress() */
void ucg_sm_deliver(ucg_coll_t *coll, const void *data, size_t length);

/** Admit the host-local endpoints of @a coll's plan in its group (see
 *  ucg_group_sm_admit): 1 when the plan may run, 0 when it needs more
 *  endpoints than the roots have reserved */
int ucg_sm_admit(ucg_coll_t *coll);

/** Whether @a coll, in an SM phase, is waiting for messages of it */
int ucg_sm_expects(const ucg_coll_t *coll);

#endif
