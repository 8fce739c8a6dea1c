/**
 * UCG phases: what the executor (ucg_coll.c) knows of a phase method, one
 * row per ucg_phase_method_t in ucg_phase_table (ucg_phase.c), and the state
 * of each phase family.  One family per file in this directory:
 *
 *   ucg_p2p_tree.c       P2P_BCAST, P2P_REDUCE (k-nomial tree)
 *   ucg_p2p_allreduce.c  P2P_ALLREDUCE_RD, P2P_ALLREDUCE_RING
 *   ucg_p2p_block.c      P2P_GATHER, P2P_SCATTER, P2P_ALLGATHER_RING/LINEAR
 *   ucg_p2p_alltoall.c   P2P_ALLTOALL_LINEAR, P2P_ALLTOALL_PAIRWISE
 *   ucg_p2p_barrier.c    P2P_BARRIER
 *   ucg_p2p_ucp.c        the UCP tag primitives of the P2P_* phases
 *   ucg_sm.c             the stream every SM_* phase sends and receives, the
 *                        order of fan-in contributions, the sm receive path
 *   ucg_sm_gate.c        endpoints of SM_* phases: join before the start,
 *                        point-to-point stand-in when refused, admission
 *   ucg_sm_bcast.c       SM_BCAST
 *   ucg_sm_fanin.c       SM_REDUCE, SM_GATHER
 *   ucg_sm_allreduce.c   SM_ALLREDUCE
 *   ucg_sm_allgatherv.c  SM_ALLGATHERV (SM_ALLREDUCE's endpoints)
 *   ucg_sm_cma.c         SM_BCAST_CMA, SM_REDUCE_CMA
 *   ucg_fold.c           FOLD
 *   ucg_redscan.c        P2P_REDUCE_SCATTER, P2P_SCAN, the folds of
 *                        SM_SCAN and SM_REDUCE_SCATTER
 *   ucg_mc_bcast.c       MC_BCAST (its endpoints: ../ucg_mc.c)
 *
 * A new phase: a value of ucg_phase_method_t (ucg_plan.h) and its name, a
 * file here with its functions (declared below, with its state in
 * ucg_phase_state_t if it keeps any), its row in ucg_phase_table, and the
 * planner rule that uses it.
 */
#ifndef UCG_PHASE_H_
#define UCG_PHASE_H_

#include "ucg_context.h"
#include "ucg_plan.h"

struct ucg_coll;

/*
 * Per-phase state: one member per phase family, zeroed at the start of every
 * phase; only the family of the current phase (coll->phase->method) reads
 * its member.
 */

/* P2P_BCAST, P2P_REDUCE: a k-nomial tree (ucg_p2p_tree.c) */
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

/* P2P_ALLREDUCE_RD: recursive doubling (ucg_p2p_allreduce.c) */
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

/* P2P_ALLREDUCE_RING (ucg_p2p_allreduce.c), P2P_ALLGATHER_RING
 * (ucg_p2p_block.c) */
typedef struct ucg_p2p_ring_state {
    unsigned   stage;       /* the posted one */
    void       *tmp;        /* allreduce: a received segment */
} ucg_p2p_ring_state_t;

/* P2P_REDUCE_SCATTER, P2P_SCAN (ucg_redscan.c) */
typedef struct ucg_redscan_state {
    unsigned   round;       /* scan: the posted one */
    unsigned   rounds;
    int        recvd;       /* scan: a vector comes in this round */
    int        have;        /* exscan: the result holds a vector */
    int        done;        /* reduce_scatter: folded */
    void       *tmp;        /* scan: a vector; reduce_scatter: every
                               member's block of this member */
} ucg_redscan_state_t;
/* P2P_ALLTOALL_PAIRWISE (ucg_p2p_alltoall.c) */
typedef struct ucg_p2p_a2a_state {
    unsigned   round;       /* the posted one; == set size: done */
} ucg_p2p_a2a_state_t;

/* P2P_BARRIER: dissemination (ucg_p2p_barrier.c) */
typedef struct ucg_p2p_barrier_state {
    unsigned   round;       /* the posted one; == rounds: done */
    unsigned   rounds;
} ucg_p2p_barrier_state_t;

struct ucg_sm_cma_desc;

/* SM_* phases: a stream of fragments on one endpoint (ucg_sm.c), and what
 * SM_ALLREDUCE (ucg_sm_allreduce.c) and SM_*_CMA (ucg_sm_cma.c) add */
typedef struct ucg_sm_state {
    int          open;      /* the endpoints are resolved and the phase's own
                               start() was called */
    uct_ep_h     ep;        /* the endpoint this member sends on */
    uct_ep_h     rx_ep;     /* the one fan-out endpoint it receives on (a
                               fan-out member, a member of a two-member
                               exchange); else NULL */
    unsigned     role;      /* UCG_SM_ROLE_* */
    int          turn;      /* may contribute to its fan-in endpoint */
    size_t       total;     /* bytes of the stream */
    size_t       frag_len;  /* bytes per fragment */
    unsigned     nfrags;
    size_t       next;      /* fragments sent or received */
    /* fills the payload of the fragment at @a offset, @a length bytes */
    void         (*pack)(const struct ucg_coll *coll, void *payload,
                         size_t offset, size_t length);
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

/* MC_BCAST (ucg_mc_bcast.c): the stream of the SM_* phases (first, so that
 * the sm receive path takes its messages), on the set's mc_udp endpoint */
struct ucg_mc_ep;
typedef struct ucg_mc_state {
    ucg_sm_state_t   stream;
    struct ucg_mc_ep *ep;     /* the set's endpoint and its agreement */
    int              waits;   /* counted in the endpoint's waiters */
} ucg_mc_state_t;

typedef union ucg_phase_state {
    ucg_p2p_tree_state_t    tree;
    ucg_p2p_rd_state_t      rd;
    ucg_p2p_ring_state_t    ring;
    ucg_p2p_barrier_state_t barrier;
    ucg_p2p_a2a_state_t     a2a;
    ucg_sm_state_t          sm;
    ucg_mc_state_t          mc;
    ucg_redscan_state_t     redscan;
} ucg_phase_state_t;


/**
 * A host-local endpoint a phase uses on a set: @a set is the phase's set with
 * its root replaced by the endpoint's (SM_ALLREDUCE: every member roots one).
 * Returns UCS_OK to go on with the next one.
 */
typedef ucs_status_t (*ucg_sm_ep_cb_t)(void *arg, ucg_sm_tl_t tl,
                                       const ucg_phase_set_t *set,
                                       uct_o2m_mode_t mode, uct_o2m_op_t op,
                                       uct_o2m_dtype_t dtype);

/* ucg_phase_ops_t::flags */
enum {
    /* Its messages go over UCP: ucg_progress progresses UCP at every call
     * while it runs (else every few calls only) */
    UCG_PHASE_FLAG_UCP               = UCS_BIT(0),
    /* Its set root ends with the blocks of every set member (gather), or
     * starts with them (scatter): a member that is a set root needs a
     * buffer for the blocks of other ranks */
    UCG_PHASE_FLAG_ROOT_HOLDS_BLOCKS = UCS_BIT(1),
    /* In a scatter it carries the blocks of the set's ranks from the set
     * root (which holds them); P2P_SCATTER stands in for it */
    UCG_PHASE_FLAG_SCATTERS_BLOCKS   = UCS_BIT(2),
    /* Set members other than the root only read acc (send their vector):
     * a reduce member with only such phases reduces from the user's send
     * buffer, without a copy */
    UCG_PHASE_FLAG_MEMBER_READS_ACC  = UCS_BIT(3),
    /* As a member's first phase, at its set root: it reduces the member's
     * own vector (coll->own) itself, acc need not hold it first */
    UCG_PHASE_FLAG_ROOT_TAKES_OWN    = UCS_BIT(4)
};

/**
 * One phase method.  start() is called once when the phase begins (with
 * coll->set non-NULL) and returns UCS_OK (or UCS_INPROGRESS) when it started,
 * or an error; then progress() is called, at least once, until it returns
 * UCS_OK (the phase is over for this member) or an error.  The other members
 * are NULL where they do not apply.
 */
typedef struct ucg_phase_ops {
    ucs_status_t (*start)(struct ucg_coll *coll);
    ucs_status_t (*progress)(struct ucg_coll *coll);
    /* Phases with host-local endpoints: the endpoints the phase uses on
     * @a set, in the order it uses them (to resolve them before the start,
     * to admit a plan's, and the fan-in endpoint a member contributes to:
     * the first sm_incast one).  Such a phase starts once they are joined
     * (ucg_sm_gate.c), or runs its stand-in when one is refused. */
    ucs_status_t (*sm_eps)(const struct ucg_coll *coll,
                           const ucg_phase_t *phase,
                           const ucg_phase_set_t *set, ucg_sm_ep_cb_t cb,
                           void *arg);
    /* Phases with sm messages: whether this member waits for some now, and
     * take one (header included, length checked by the transport) */
    int          (*expects)(const struct ucg_coll *coll);
    void         (*deliver)(struct ucg_coll *coll, const void *data,
                            size_t length);
    /* Phases with an sm_incast endpoint: whether this member (not the set
     * root, phase started) has made all its contributions to it */
    int          (*contributed)(const struct ucg_coll *coll);
    /* Phases with host-local endpoints: the point-to-point phase that does
     * the same on the same set when a root refused an endpoint */
    ucg_phase_method_t standin;
    unsigned           flags;       /* UCG_PHASE_FLAG_* */
} ucg_phase_ops_t;

/** The row of each phase method */
extern const ucg_phase_ops_t ucg_phase_table[UCG_PHASE_LAST];


/* ucg_sm.c: the one fan-out endpoint whose next message @a coll waits for,
 * all its sends of the phase posted (a member of a fan-out or of a
 * two-member exchange); NULL when it waits for anything else too, or is
 * not in such a phase */
uct_ep_h ucg_sm_rx_wait_ep(const struct ucg_coll *coll);

/* ucg_p2p_tree.c */
ucs_status_t ucg_p2p_bcast_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_bcast_progress(struct ucg_coll *coll);
ucs_status_t ucg_p2p_reduce_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_reduce_progress(struct ucg_coll *coll);

/* ucg_p2p_allreduce.c */
ucs_status_t ucg_p2p_allreduce_rd_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_allreduce_rd_progress(struct ucg_coll *coll);
ucs_status_t ucg_p2p_allreduce_ring_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_allreduce_ring_progress(struct ucg_coll *coll);

/* ucg_p2p_block.c */
ucs_status_t ucg_p2p_gather_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_scatter_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_allgather_linear_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_allgather_ring_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_allgather_ring_progress(struct ucg_coll *coll);
/* progress() of phases that post everything in start() */
ucs_status_t ucg_p2p_wait_progress(struct ucg_coll *coll);

/* ucg_p2p_alltoall.c */
ucs_status_t ucg_p2p_alltoall_linear_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_alltoall_pairwise_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_alltoall_pairwise_progress(struct ucg_coll *coll);

/* ucg_p2p_barrier.c */
ucs_status_t ucg_p2p_barrier_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_barrier_progress(struct ucg_coll *coll);

/* ucg_sm.c: the stream of SM_BCAST, SM_REDUCE, SM_GATHER, SM_*_CMA */
ucs_status_t ucg_sm_stream_progress(struct ucg_coll *coll);
int          ucg_sm_stream_expects(const struct ucg_coll *coll);
int          ucg_sm_stream_contributed(const struct ucg_coll *coll);

/* ucg_sm_gate.c: start() and progress() of the phases with sm_eps */
ucs_status_t ucg_sm_gate_start(struct ucg_coll *coll);
ucs_status_t ucg_sm_gate_progress(struct ucg_coll *coll);
/* Admit the host-local endpoints of @a coll's plan in its group (see
 * ucg_group_sm_admit): 1 when the plan may run, 0 when it needs more
 * endpoints than the roots have reserved */
int          ucg_sm_admit(struct ucg_coll *coll);

/* ucg_sm_bcast.c */
ucs_status_t ucg_sm_bcast_start(struct ucg_coll *coll);
ucs_status_t ucg_sm_bcast_eps(const struct ucg_coll *coll,
                              const ucg_phase_t *phase,
                              const ucg_phase_set_t *set, ucg_sm_ep_cb_t cb,
                              void *arg);
void         ucg_sm_bcast_deliver(struct ucg_coll *coll, const void *data,
                                  size_t length);

/* ucg_sm_fanin.c */
ucs_status_t ucg_sm_reduce_start(struct ucg_coll *coll);
ucs_status_t ucg_sm_reduce_eps(const struct ucg_coll *coll,
                               const ucg_phase_t *phase,
                               const ucg_phase_set_t *set, ucg_sm_ep_cb_t cb,
                               void *arg);
void         ucg_sm_reduce_deliver(struct ucg_coll *coll, const void *data,
                                   size_t length);
ucs_status_t ucg_sm_gather_start(struct ucg_coll *coll);
ucs_status_t ucg_sm_gather_eps(const struct ucg_coll *coll,
                               const ucg_phase_t *phase,
                               const ucg_phase_set_t *set, ucg_sm_ep_cb_t cb,
                               void *arg);
void         ucg_sm_gather_deliver(struct ucg_coll *coll, const void *data,
                                   size_t length);

/* ucg_sm_allreduce.c */
ucs_status_t ucg_sm_allreduce_start(struct ucg_coll *coll);
ucs_status_t ucg_sm_allreduce_progress(struct ucg_coll *coll);
ucs_status_t ucg_sm_allreduce_eps(const struct ucg_coll *coll,
                                  const ucg_phase_t *phase,
                                  const ucg_phase_set_t *set,
                                  ucg_sm_ep_cb_t cb, void *arg);
int          ucg_sm_allreduce_expects(const struct ucg_coll *coll);
void         ucg_sm_allreduce_deliver(struct ucg_coll *coll, const void *data,
                                      size_t length);

/* ucg_sm_cma.c */
ucs_status_t ucg_sm_cma_start(struct ucg_coll *coll);
ucs_status_t ucg_sm_cma_progress(struct ucg_coll *coll);
ucs_status_t ucg_sm_bcast_cma_eps(const struct ucg_coll *coll,
                                  const ucg_phase_t *phase,
                                  const ucg_phase_set_t *set,
                                  ucg_sm_ep_cb_t cb, void *arg);
ucs_status_t ucg_sm_reduce_cma_eps(const struct ucg_coll *coll,
                                   const ucg_phase_t *phase,
                                   const ucg_phase_set_t *set,
                                   ucg_sm_ep_cb_t cb, void *arg);
void         ucg_sm_cma_deliver(struct ucg_coll *coll, const void *data,
                                size_t length);
int          ucg_sm_bcast_cma_contributed(const struct ucg_coll *coll);
int          ucg_sm_reduce_cma_contributed(const struct ucg_coll *coll);

/* ucg_fold.c */
ucs_status_t ucg_fold_start(struct ucg_coll *coll);
ucs_status_t ucg_fold_progress(struct ucg_coll *coll);

/* ucg_sm_allgatherv.c (SM_ALLREDUCE's endpoints and expects; state:
 * ps.sm.allreduce's counters) */
ucs_status_t ucg_sm_allgatherv_start(struct ucg_coll *coll);
ucs_status_t ucg_sm_allgatherv_progress(struct ucg_coll *coll);
void         ucg_sm_allgatherv_deliver(struct ucg_coll *coll,
                                       const void *data, size_t length);

/* ucg_redscan.c (SM_SCAN and SM_REDUCE_SCATTER run SM_ALLREDUCE's
 * functions, which call ucg_sm_scan_fold at the end) */
ucs_status_t ucg_p2p_reduce_scatter_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_reduce_scatter_progress(struct ucg_coll *coll);
ucs_status_t ucg_p2p_scan_start(struct ucg_coll *coll);
ucs_status_t ucg_p2p_scan_progress(struct ucg_coll *coll);
void         ucg_sm_scan_fold(struct ucg_coll *coll, void *vecs);

/* ucg_mc_bcast.c */
ucs_status_t ucg_mc_bcast_start(struct ucg_coll *coll);
ucs_status_t ucg_mc_bcast_progress(struct ucg_coll *coll);
void         ucg_mc_bcast_deliver(struct ucg_coll *coll, const void *data,
                                  size_t length);

#endif
