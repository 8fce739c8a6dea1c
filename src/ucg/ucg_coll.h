/**
 * UCG executor: collective requests and the phase machine (ucg_coll.c), the
 * buffers of an instance (ucg_coll_buf.c), aborts (ucg_coll_abort.c).  The
 * phases are in phase/ (ucg_phase.h); the wire formats (tag layout, sm
 * header) in ucg_def.h.
 */
#ifndef UCG_COLL_H_
#define UCG_COLL_H_

#include "ucg_group.h"
#include "ucg_def.h"
#include "ucg_dt.h"
#include "ucg_plan.h"
#include "phase/ucg_phase.h"

typedef struct ucg_coll ucg_coll_t;

/** The per-member blocks of a buffer, in bytes: member i's len[i] bytes at
 *  offset off[i] (ucg_coll_vec.c) */
typedef struct ucg_coll_blocks {
    size_t              *len;        /* [group size] */
    size_t              *off;        /* [group size] */
} ucg_coll_blocks_t;

/** An sm message that arrived before its collective was ready for it */
typedef struct ucg_sm_unexp {
    ucs_queue_elem_t    queue;
    ucg_sm_hdr_t        hdr;
    size_t              length;       /* of data[] (the whole message) */
    char                data[0];
} ucg_sm_unexp_t;

#define UCG_COLL_MAX_SCRATCH 4

struct ucg_coll {
    ucg_group_h         group;
    ucg_coll_params_t   params;
    int                 flat;        /* UCG_PLAN_FLAT: point-to-point plan */
    ucg_op_desc_t       op;          /* reductions */
    size_t              dt_size;
    size_t              len;         /* bytes per member: count * dt_size */
    const ucg_plan_t    *plan;

    /* Instance */
    ucs_list_link_t     list;        /* in group->colls while started */
    ucg_progress_elem_t progress;    /* in context->progress_q while
                                        started */
    int                 active;      /* started and not complete */
    ucs_status_t        status;      /* UCS_INPROGRESS, UCS_OK or error */
    uint16_t            seq;
    unsigned            phase_idx;
    const ucg_phase_t   *phase;      /* current phase */
    const ucg_phase_set_t *set;      /* my set in it, NULL: not involved */
    ucg_phase_t         sm_subst;    /* the point-to-point phase that stands
                                        in for an SM phase whose endpoints
                                        were refused (ucg_sm_gate.c) */
    unsigned            my_idx;      /* my index in set->ranks */
    ucg_phase_state_t   ps;
    /* Set after a progress of the collective when it waits for the next
     * message of one host-local endpoint: the word that message changes,
     * which ucg_coll_test polls instead of progressing everything
     * (RX_WATCH_POLLS); rx_watch_spins: its polls since that progress */
    int                 rx_watch_on;
    unsigned            rx_watch_spins;
    uct_o2m_rx_watch_t  rx_watch;
    uct_iface_h         rx_watch_iface; /* the watched endpoint's */

    /* Data the phases work on (see ucg_plan.h) */
    void                *data;       /* bcast-like phases */
    size_t              data_len;
    void                *acc;        /* reductions: params.count elements */
    const void          *own;        /* reduce root whose first phase is
                                        SM_REDUCE_CMA: its vector, not yet
                                        in acc (that phase folds it in) */
    void                *gbuf;       /* block phases: size blocks */
    size_t              block;       /* bytes of one block */
    /* The per-member counts and displacements of params (API 1.3), in
     * bytes, checked and copied by ucg_coll_init (ucg_coll_vec.c), which
     * then drops the caller's arrays from params:
     *  - gblk, the blocks of gbuf: GATHERV and ALLGATHERV (rcounts /
     *    rdispls), SCATTERV (the root's scounts / sdispls; a non-root of
     *    gatherv or scatterv has only its own entry, at offset 0 of its
     *    own buffer), ALLTOALLV (rcounts / rdispls);
     *  - dblk, the blocks of data: ALLTOALLV (scounts / sdispls; in place
     *    the same as gblk), REDUCE_SCATTER* (each member's block of the
     *    vector, one after another).
     * Their len is NULL where the collective has none. */
    ucg_coll_blocks_t   gblk;
    ucg_coll_blocks_t   dblk;

    /* Outstanding UCP requests of the current phase */
    void                **reqs;
    unsigned            num_reqs;
    unsigned            max_reqs;

    void                *scratch[UCG_COLL_MAX_SCRATCH];
    size_t              scratch_len[UCG_COLL_MAX_SCRATCH];

    /* The memory of gblk and dblk: 4 x vec_size; kept with the group's
     * spare collective */
    size_t              *vec_mem;
    unsigned            vec_size;   /* group size it was allocated for */
};

/** A buffer of at least @a size bytes kept until ucg_coll_finalize();
 *  indices 0 and 1 are the executor's (acc, gbuf), 2 and 3 the phases'.
 *  NULL (and a log line) when out of memory.  @a idx < UCG_COLL_MAX_SCRATCH. */
void *ucg_coll_scratch(ucg_coll_t *coll, unsigned idx, size_t size);

/** AM handler of UCG's sm interfaces and of its mc_udp interface (arg: the
 *  context; phase/ucg_sm.c), installed by ucg_coll_group_init */
ucs_status_t ucg_sm_am_cb(void *arg, void *data, size_t length,
                          unsigned flags);

/** Executor state of a new group (called by ucg_group_create once the
 *  group is in context->groups) */
void ucg_coll_group_init(ucg_group_h group);

/** Requests a failed collective left to UCP (sends that could not complete)
 *  and the scratch buffers they use, freed when every request completed
 *  (its progress function), or by the context's destroy (its closer) */
typedef struct ucg_parked {
    ucg_context_closer_t closer;  /* in context->closers */
    ucg_progress_elem_t progress; /* in context->progress_q */
    void            *scratch[UCG_COLL_MAX_SCRATCH];
    unsigned        num_reqs;
    void            *reqs[0];
} ucg_parked_t;

/** Fail and release the started collectives of a group being destroyed */
void ucg_coll_group_cleanup(ucg_group_h group);

/** The row of the current phase of @a coll (started, in a set) */
static inline const ucg_phase_ops_t *ucg_coll_phase_ops(const ucg_coll_t *coll)
{
    return &ucg_phase_table[coll->phase->method];
}

/** Find this member's set in every phase of @a coll's plan (once) */
void ucg_coll_find_mine(const ucg_coll_t *coll);

/** This member's set in phase @a i of the plan of @a coll, and its index
 *  there in *idx_p; NULL if it has none (then *idx_p is untouched) */
static inline const ucg_phase_set_t *
ucg_coll_my_set(const ucg_coll_t *coll, unsigned i, unsigned *idx_p)
{
    const ucg_plan_mine_t *mine;

    if (ucs_unlikely(!coll->plan->mine_known)) {
        ucg_coll_find_mine(coll);
    }
    mine = &coll->plan->mine[i];
    if (mine->set < 0) {
        return NULL;
    }
    *idx_p = mine->idx;
    return &coll->plan->phases[i].sets[mine->set];
}

/* Sequence numbers at most this far after a collective's are later ones */
#define UCG_COLL_SEQ_HALF 0x8000

/** Whether the collective @a seq of @a group is at or after an abort */
static inline int ucg_coll_seq_aborted(const ucg_group_t *group, uint16_t seq)
{
    return group->aborted &&
           ((uint16_t)(seq - group->abort_seq) < UCG_COLL_SEQ_HALF);
}

/** The collective @a seq failed here (@a reason), or was not run: tell the
 *  members of @a group (but those that exited); from it on, collectives of
 *  the group fail here too (ucg_coll_abort.c) */
void ucg_coll_abort_send(ucg_group_h group, uint16_t seq, ucs_status_t reason);

/** Take the abort messages UCP has for @a group (ucg_coll_abort.c) */
void ucg_coll_abort_probe(ucg_group_h group);

/** Alltoall and alltoallv (ucg_coll_alltoall.c): what alltoallv checks
 *  once its blocks are copied (called by ucg_coll_vec_init), and the
 *  buffers of a start */
ucs_status_t ucg_coll_check_alltoall(ucg_coll_t *coll);
ucs_status_t ucg_coll_setup_alltoall(ucg_coll_t *coll);

/** The data of a started @a coll: what its phases read and write (see
 *  ucg_plan.h), in the user's buffers or scratch (ucg_coll_buf.c) */
ucs_status_t ucg_coll_setup_buffers(ucg_coll_t *coll);

/** Results that the phases of @a coll (complete) left elsewhere than the
 *  user's buffers (ucg_coll_buf.c) */
void ucg_coll_finish_buffers(ucg_coll_t *coll);

/** The collectives with per-member counts (ucg_coll_vec.c): check the
 *  arguments of @a coll that they add (params, dt_size and len set; a
 *  REDUCE_SCATTER*'s len becomes its vector's bytes) and copy its counts
 *  and displacements into gblk / dblk; nothing for the others */
ucs_status_t ucg_coll_vec_init(ucg_coll_t *coll);

/** The end of the furthest non-empty block of @a blk (bytes) */
size_t ucg_coll_blocks_extent(const ucg_coll_t *coll,
                              const ucg_coll_blocks_t *blk);

/** GATHERV, SCATTERV, ALLGATHERV: their buffers at a start
 *  (ucg_coll_vec.c) */
ucs_status_t ucg_coll_vec_setup_buffers(ucg_coll_t *coll);

/** Forget the blocks of a collective being released (its memory stays) */
void ucg_coll_vec_release(ucg_coll_t *coll);

#endif
