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

/** Per-phase state, reset at the start of every phase; its meaning is the
 *  phase algorithm's */
typedef struct ucg_phase_state {
    unsigned   step;
    unsigned   sub;
    unsigned   peer;
    size_t     offset;
    size_t     frag;
    int        posted;
    void       *tmp;
    unsigned   vals[8];
    size_t     sizes[4];
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
