/**
 * UCG planner: (collective, size, root, topology, transports, configuration)
 * -> plan of phases.
 *
 * A plan is global: it describes what every member does, so the same plan
 * is computed on every member and can be printed for any topology without
 * running it.  A member takes part in a phase when it belongs to one of the
 * phase's sets; a set is a list of ranks with a root.
 *
 * Data of a phase (what the executor moves):
 *  - BCAST-like phases (SM_BCAST, P2P_BCAST) send the collective's current
 *    data from the set root to the set members: the message (bcast), the
 *    reduced vector (allreduce), the full gathered buffer (allgather), or the
 *    blocks owned by each member (scatter: a member keeps its own blocks);
 *  - reductions (SM_REDUCE, P2P_REDUCE, P2P_ALLREDUCE_*) combine the
 *    members' vectors (commutative ops only);
 *  - block phases (SM_GATHER, P2P_GATHER, P2P_SCATTER, P2P_ALLGATHER_*)
 *    move blocks of count elements indexed by rank; before the phase a set
 *    member holds the blocks of the ranks r with owner[r] == itself (hier:
 *    the ranks of its host; flat: only its own).  SM_GATHER makes the set
 *    root hold the blocks of all set members;
 *  - SM_ALLREDUCE: every set member gets the reduction of all set
 *    members' vectors, computed in rank order (identical everywhere);
 *  - P2P_REDUCE_SCATTER: member i gets the rank-ordered reduction of
 *    block i of every member's vector (ucg_coll_t::dblk);
 *    SM_REDUCE_SCATTER: the same on one host;
 *  - P2P_SCAN, SM_SCAN: member i gets the rank-ordered reduction of the
 *    vectors of members 0..i (scan) or 0..i-1 (exscan);
 *  - FOLD: the root reduces all gathered blocks in rank order (any op,
 *    non-commutative included);
 *  - SM_BCAST_CMA: as SM_BCAST (bcast only), single-copy;
 *  - SM_REDUCE_CMA: as SM_REDUCE (reduce only, commutative), single-copy;
 *  - barrier phases (SM_GATHER / SM_BCAST with 0 bytes, P2P_BARRIER) only
 *    synchronize;
 *  - P2P_ALLTOALL_*: every set member sends its block of each other member
 *    (alltoall: count elements; alltoallv: scounts / sdispls) and receives
 *    that member's block of itself, from the user's buffers (or a copy of
 *    the receive buffer in place).
 */
#ifndef UCG_PLAN_H_
#define UCG_PLAN_H_

#include "ucg_config.h"
#include "uct_o2m.h"
#include <ucs/datastruct/list.h>

#define UCG_PLAN_MAX_PHASES 6

typedef enum {
    UCG_PHASE_SM_BCAST,           /* sm_bcast fan-out from each set root */
    UCG_PHASE_SM_REDUCE,          /* sm_incast reduction to each set root */
    UCG_PHASE_SM_GATHER,          /* sm_incast gather of blocks to each root */
    UCG_PHASE_P2P_BCAST,          /* k-nomial tree, pipelined fragments */
    UCG_PHASE_P2P_REDUCE,         /* k-nomial tree (commutative) */
    UCG_PHASE_P2P_ALLREDUCE_RD,   /* recursive doubling */
    UCG_PHASE_P2P_ALLREDUCE_RING, /* ring reduce-scatter + ring allgather */
    UCG_PHASE_P2P_GATHER,         /* linear, blocks to the root */
    UCG_PHASE_P2P_SCATTER,        /* linear, blocks from the root */
    UCG_PHASE_P2P_ALLGATHER_RING, /* ring of owned blocks */
    UCG_PHASE_P2P_ALLGATHER_LINEAR, /* every member to every member */
    UCG_PHASE_P2P_BARRIER,        /* dissemination */
    UCG_PHASE_FOLD,               /* local rank-ordered reduction at root */
    UCG_PHASE_SM_ALLREDUCE,       /* every member fans out its vector on its
                                     own sm_bcast endpoint; every member
                                     reduces all of them in rank order */
    UCG_PHASE_SM_BCAST_CMA,       /* the root sends its buffer's address
                                     (sm_bcast), members read it with
                                     process_vm_readv and acknowledge
                                     (sm_incast, sm_ack_mode) */
    UCG_PHASE_SM_REDUCE_CMA,      /* members send their vector's address
                                     (sm_incast), the root reads and reduces
                                     them with process_vm_readv and releases
                                     the members (sm_bcast, sm_ack_mode) */
    UCG_PHASE_MC_BCAST,           /* mc_udp fan-out (IP multicast, made
                                     reliable by the engine) from the set
                                     root; P2P_BCAST (radix, frag_size)
                                     where a leader cannot join (ucg_mc.c) */
    UCG_PHASE_P2P_REDUCE_SCATTER, /* pairwise: every member sends each
                                     other member its block of the vector
                                     and folds the blocks it receives in
                                     rank order (any op) */
    UCG_PHASE_P2P_SCAN,           /* recursive doubling prefix, combined in
                                     rank order (scan, exscan; any op) */
    UCG_PHASE_SM_SCAN,            /* as SM_ALLREDUCE, each member folds the
                                     vectors of the lower ranks (and its
                                     own for scan) in rank order */
    UCG_PHASE_SM_REDUCE_SCATTER,  /* as SM_ALLREDUCE, each member folds
                                     its block of every vector in rank
                                     order */
    UCG_PHASE_P2P_ALLTOALL_LINEAR,   /* every member's block to every member,
                                        all posted at once */
    UCG_PHASE_P2P_ALLTOALL_PAIRWISE, /* size - 1 rounds: to me + k, from
                                        me - k */
    UCG_PHASE_SM_ALLGATHERV,      /* every member fans out its own block on
                                     its own sm_bcast endpoint, each
                                     receiver cuts it by its own counts */
    UCG_PHASE_LAST
} ucg_phase_method_t;

extern const char *ucg_phase_method_names[];


/** Topology of a group: which host each rank is on */
typedef struct ucg_topo {
    unsigned size;
    unsigned num_hosts;
    unsigned *host_of;     /* [size]: host of each rank; hosts are numbered
                              in the order of their lowest rank */
    unsigned *host_size;   /* [num_hosts] */
    unsigned *host_first;  /* [num_hosts + 1]: offsets in host_ranks */
    unsigned *host_ranks;  /* [size]: ranks sorted by (host, rank) */
    unsigned max_ppn;      /* largest host_size */
    int      o2m;          /* sm_bcast / sm_incast usable */
    size_t   sm_max_bcopy; /* their largest bcopy message (with o2m) */
    unsigned sm_max_members; /* their largest group (every member's
                                MAX_MEMBERS); UINT_MAX from ucg_topo_init */
    int      sm_cma;       /* every member reads with single copy (their
                              CMA probe); 1 from ucg_topo_init */
    int      mc;           /* P2P_BCAST phases between hosts may run on
                              multicast (MC_BCAST); 0 from ucg_topo_init */
    unsigned mc_tl;        /* with mc: its transport (ucg_mc_tl_t), for
                              the printed plans; UCG_MC_TL_LAST from
                              ucg_topo_init */
} ucg_topo_t;

/** Build a topology from host_of[] (any host labels; renumbered). */
ucs_status_t ucg_topo_init(ucg_topo_t *topo, unsigned size,
                           const uint64_t *host_label, int o2m,
                           size_t sm_max_bcopy);
void ucg_topo_cleanup(ucg_topo_t *topo);


typedef struct ucg_phase_set {
    unsigned count;
    unsigned root;         /* index in ranks[] */
    unsigned *ranks;       /* [count], ascending */
} ucg_phase_set_t;

typedef struct ucg_phase {
    ucg_phase_method_t method;
    uct_o2m_mode_t     sm_mode;    /* SM_*: transport mode */
    uct_o2m_mode_t     sm_ack_mode; /* SM_*_CMA: of the second stage (the
                                       acknowledgements, the release) */
    int                sm_native;  /* SM_REDUCE: the transport reduces (op and
                                      dtype supported); else it gathers and
                                      the set root reduces */
    unsigned           radix;      /* P2P_BCAST, P2P_REDUCE */
    size_t             frag_size;  /* bytes per message; 0: no limit */
    unsigned           num_sets;
    ucg_phase_set_t    *sets;
    unsigned           *owner;     /* block phases: [size] rank of the set
                                      member that holds each rank's block */
} ucg_phase_t;

/** What a plan depends on */
typedef struct ucg_plan_key {
    ucg_coll_type_t type;
    unsigned        root;         /* 0 for unrooted collectives */
    ucg_op_t        op;           /* reductions; UCG_OP_LAST otherwise */
    ucg_dtype_t     dtype;
    int             commutative;
    size_t          msg_size;     /* bytes per member: count * dt_size */
    /* Element size: SM_REDUCE fragments are a multiple of it.  0:
     * ucg_dtype_size(dtype); set for UCG_DT_BYTES, whose size only
     * ucg_coll_params_t::dt_size knows. */
    size_t          dt_size;
    /* Flat (point-to-point) plan although the group could use host-local
     * phases: the endpoints they need are not available (the group's
     * share of SM_MAX_GROUPS, SM_GROUP_EPS, or SM_GROUP_MEM is used up) */
    int             flat;
} ucg_plan_key_t;

/* ucg_plan_t::sm_eps */
enum {
    UCG_SM_EPS_READY   = 1,
    UCG_SM_EPS_REFUSED = 2
};

/* This member's part of one phase of a plan, found once */
typedef struct ucg_plan_mine {
    int             set;          /* index in the phase's sets[] of this
                                     member's set, -1: none */
    unsigned        idx;          /* this member's index in that set */
    /* The host-local endpoints the phase's start looked up last, for
     * (ep_kind, ep_tl, ep_mode, ep_op, ep_dtype); the group keeps its
     * endpoints until it is destroyed, with its plans.  ep NULL: none
     * yet */
    uint8_t         ep_kind;
    uint8_t         ep_tl;
    uint8_t         ep_mode;
    uint8_t         ep_op;
    uint8_t         ep_dtype;
    uct_ep_h        ep;
    uct_ep_h        rx_ep;
} ucg_plan_mine_t;

typedef struct ucg_plan {
    ucg_plan_key_t  key;
    /* Sizes for which this is the plan: ucg_plan_create gives the same
     * plan for every key that differs from this one in msg_size only, with
     * msg_size in [size_min, size_max] (same configuration and topology).
     * Each size-dependent choice of the builders narrows the range to the
     * side of its threshold that key.msg_size is on. */
    size_t          size_min;
    size_t          size_max;
    int             hier;         /* hierarchical plan */
    unsigned        num_phases;
    ucg_phase_t     phases[UCG_PLAN_MAX_PHASES];
    /* Set by the executor when the group has admitted every host-local
     * endpoint of the plan (they stay admitted while the group lives) */
    int             sm_admitted;
    /* Set by the executor, per phase, once this member's host-local
     * endpoints of the phase are joined (UCG_SM_EPS_READY) or one was
     * refused by its root (UCG_SM_EPS_REFUSED: the phase runs point-to-point
     * on its set); 0 until then */
    uint8_t         sm_eps[UCG_PLAN_MAX_PHASES];
    /* Set by the executor at the plan's first start: what this member
     * looks up on every start (ucg_coll_my_set, ucg_sm.c).  A plan cache is
     * one group's, and a group has one member here. */
    int             mine_known;
    ucg_plan_mine_t mine[UCG_PLAN_MAX_PHASES];
} ucg_plan_t;

/** Plans made for one topology and configuration (a group's) */
typedef struct ucg_plan_cache {
    ucs_list_link_t plans;        /* ucg_plan_entry_t */
} ucg_plan_cache_t;

/** Whether plans of @a topo may be hierarchical (use host-local phases);
 *  a collective may still get a flat plan (size thresholds, key->flat) */
int ucg_plan_topo_hier(const ucg_config_t *config, const ucg_topo_t *topo);

ucs_status_t ucg_plan_create(const ucg_config_t *config,
                             const ucg_topo_t *topo,
                             const ucg_plan_key_t *key, ucg_plan_t **plan_p);
void ucg_plan_destroy(ucg_plan_t *plan);

void ucg_plan_cache_init(ucg_plan_cache_t *cache);
void ucg_plan_cache_cleanup(ucg_plan_cache_t *cache);

/**
 * The plan of @a key: a cached plan made for a key that differs at most in
 * msg_size, whose size range (ucg_plan_t::size_min/size_max) holds
 * key->msg_size, or else a new plan (ucg_plan_create with @a config and
 * @a topo, which must be those of every plan of the cache), then cached.
 * *created_p (if not NULL) tells whether the plan is new.
 */
ucs_status_t ucg_plan_cache_get(ucg_plan_cache_t *cache,
                                const ucg_config_t *config,
                                const ucg_topo_t *topo,
                                const ucg_plan_key_t *key,
                                const ucg_plan_t **plan_p, int *created_p);

/** Index of group rank @a rank in @a set (ranks ascending), -1 if it is
 *  not a member. */
static inline int ucg_phase_set_idx(const ucg_phase_set_t *set, unsigned rank)
{
    unsigned lo = 0, hi = set->count, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (set->ranks[mid] < rank) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }

    return ((lo < set->count) && (set->ranks[lo] == rank)) ? (int)lo : -1;
}

/** The set of @a phase that contains @a rank, NULL if none; *idx_p gets
 *  rank's index in it. */
const ucg_phase_set_t *ucg_phase_find_set(const ucg_phase_t *phase,
                                          unsigned rank, unsigned *idx_p);

/** Human-readable plan (one line per phase), as documented in docs/ucg.md */
void ucg_plan_print(const ucg_plan_t *plan, const ucg_topo_t *topo,
                    FILE *stream);

#endif
