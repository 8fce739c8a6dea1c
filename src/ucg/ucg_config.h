/**
 * UCG configuration (UCX_UCG_* variables), parsed by UCX's config parser.
 */
#ifndef UCG_CONFIG_H_
#define UCG_CONFIG_H_

#include "api/ucg.h"
#include "uct_o2m.h"
#include <ucs/config/parser.h>
#include <ucs/time/time_def.h>

/** Prefix of the variables inside the environment prefix: UCX_UCG_<NAME> */
#define UCG_CONFIG_TABLE_PREFIX "UCG_"

/** Inter-host (or flat) point-to-point method of a collective */
typedef enum {
    UCG_P2P_AUTO,
    UCG_P2P_KNOMIAL,            /**< bcast, reduce: k-nomial tree */
    UCG_P2P_RECURSIVE_DOUBLING, /**< allreduce */
    UCG_P2P_RING,               /**< allreduce (reduce-scatter + allgather),
                                     allgather */
    UCG_P2P_LINEAR,             /**< gather, scatter, allgather, alltoall,
                                     alltoallv */
    UCG_P2P_DISSEMINATION,      /**< barrier */
    UCG_P2P_PAIRWISE,           /**< alltoall, alltoallv */
    UCG_P2P_LAST
} ucg_p2p_method_t;

/** Whether a plan uses the host-local one-to-many phases */
typedef enum {
    UCG_HIER_AUTO,  /**< hierarchical when sm_bcast/sm_incast are usable and
                         some host has more than one member */
    UCG_HIER_ON,    /**< hierarchical whenever the transports are usable */
    UCG_HIER_OFF,   /**< flat point-to-point */
    UCG_HIER_LAST
} ucg_hier_t;

/** Multicast transports of the broadcasts between host leaders, most
 *  preferred first (ucg_mc.c: a group takes the first one every member
 *  has); MC_TL takes one of them, or UCG_MC_TL_AUTO */
typedef enum {
    UCG_MC_TL_MLX5,   /**< mc_mlx5: IB/RoCE UD multicast, mlx5 direct */
    UCG_MC_TL_VERBS,  /**< mc_verbs: IB/RoCE UD multicast, verbs */
    UCG_MC_TL_UDP,    /**< mc_udp: UDP/IP multicast */
    UCG_MC_TL_LAST,
    UCG_MC_TL_AUTO = UCG_MC_TL_LAST
} ucg_mc_tl_t;

/** Mode of a host-local phase: a uct_o2m_mode_t, or auto */
#define UCG_SM_MODE_AUTO UCT_O2M_MODE_LAST

extern const char *ucg_p2p_method_names[];
extern const char *ucg_hier_names[];
extern const char *ucg_sm_mode_names[];   /* uct_o2m modes + "auto" */
extern const char *ucg_config_p2p_vars[]; /* <COLL>_P2P by collective */
extern const char *ucg_mc_tl_names[];     /* ucg_mc_tl_t + "auto" */

struct ucg_config {
    char             *env_prefix;      /* prefix the config was read with */

    /* Topology */
    char             *hosts;           /* HOSTS: "auto", "<k>" (every k
                                          consecutive global ranks form a
                                          host), or "<n1>,<n2>,..." (host
                                          sizes in global rank order, the
                                          last one repeated) */
    ucs_ternary_auto_value_t o2m;      /* O2M: use sm_bcast/sm_incast
                                          (try: when UCX_TLS allows) */

    /* Planner */
    ucg_hier_t       hier;             /* HIER */
    int              p2p_method[UCG_COLL_LAST]; /* <COLL>_P2P: ucg_p2p_method_t */
    unsigned         sm_bcast_mode;    /* SM_BCAST_MODE: uct_o2m_mode_t or auto */
    unsigned         sm_incast_mode;   /* SM_INCAST_MODE */
    unsigned         knomial_radix;    /* KNOMIAL_RADIX, >= 2 */
    size_t           p2p_frag_size;    /* P2P_FRAG_SIZE: fragments of
                                          pipelined p2p bcast */
    size_t           sm_frag_size;     /* SM_FRAG_SIZE: host-local fragment,
                                          auto = the transports' largest
                                          bcopy minus UCG's header */
    size_t           allreduce_ring_thresh; /* ALLREDUCE_RING_THRESH */
    size_t           allgather_ring_thresh; /* ALLGATHER_RING_THRESH */
    size_t           alltoall_pairwise_thresh; /* ALLTOALL_PAIRWISE_THRESH */
    unsigned         sm_batched_max_ppn;    /* SM_BATCHED_MAX_PPN: larger
                                               hosts use centralized mode */
    size_t           sm_allreduce_max;      /* SM_ALLREDUCE_MAX */
    size_t           sm_scatter_max;        /* SM_SCATTER_MAX */
    size_t           sm_allgather_max;      /* SM_ALLGATHER_MAX */
    unsigned         sm_allreduce_max_ppn;  /* SM_ALLREDUCE_MAX_PPN */
    size_t           sm_locked_thresh;      /* SM_LOCKED_THRESH: fan-in of at
                                               least this many bytes uses the
                                               locked mode */
    size_t           sm_bcast_cma_thresh;   /* SM_BCAST_CMA_THRESH */
    unsigned         sm_bcast_2level_ppn;   /* SM_BCAST_2LEVEL_PPN: hosts of
                                               at least this many members
                                               get the two-level bcast */
    size_t           sm_reduce_cma_thresh;  /* SM_REDUCE_CMA_THRESH */

    /* Failures */
    double           peer_timeout;     /* PEER_TIMEOUT (seconds) */
    double           check_interval;   /* CHECK_INTERVAL (seconds) */

    /* Waiting */
    unsigned         rx_watch_polls;   /* RX_WATCH_POLLS */

    /* o2m interfaces opened by UCG */
    unsigned         sm_max_groups;    /* SM_MAX_GROUPS */
    unsigned         sm_group_eps;     /* SM_GROUP_EPS */
    size_t           sm_group_mem;     /* SM_GROUP_MEM (SIZE_MAX: inf) */

    /* Multicast between hosts (ucg_mc.c) */
    ucs_ternary_auto_value_t mc;       /* MC: multicast for the broadcasts
                                          between host leaders */
    unsigned         mc_tl;            /* MC_TL: ucg_mc_tl_t, or auto */
    char             *mc_device;       /* MC_DEVICE: its device, or auto */
    size_t           mc_max_size;      /* MC_MAX_SIZE: larger broadcasts
                                          stay point-to-point */

    /* Diagnostics */
    int              log_plans;        /* LOG_PLANS: print each new plan */
};

extern ucs_config_field_t ucg_config_table[];

/** Copy of a configuration (for a context that outlives the caller's) */
ucs_status_t ucg_config_dup(const ucg_config_t *src, ucg_config_t **dst_p);

/*
 * What the planner follows (docs/ucg.md, "Configuration across members"):
 * every variable but those that may differ between the members of a group
 * (HOSTS, O2M, PEER_TIMEOUT, CHECK_INTERVAL, SM_MAX_GROUPS, SM_GROUP_EPS,
 * SM_GROUP_MEM, MC_TL, MC_DEVICE, LOG_PLANS: agreed at creation, or local).
 */
/** Whether the variable @a name (without prefix) is the planner's */
int ucg_config_is_plan_var(const char *name);
/** Hash of the values of the planner's variables: members whose hashes
 *  are equal plan alike */
uint64_t ucg_config_plan_hash(const ucg_config_t *config);
/** A copy of @a src whose planner variables have their defaults (what a
 *  group's members plan with when their configurations differ) */
ucs_status_t ucg_config_plan_defaults(const ucg_config_t *src,
                                      ucg_config_t **dst_p);

/** Validate a configuration: a forced <COLL>_P2P that is not a method of
 *  that collective, KNOMIAL_RADIX < 2, a forced SM_BCAST_MODE other than
 *  batched/centralized, a bad HOSTS layout, meaningless sizes.
 *  @return UCS_ERR_INVALID_PARAM with a log line naming the variable. */
ucs_status_t ucg_config_check(const ucg_config_t *config);

/** Host label of @a global_rank under a HOSTS layout: "auto" sets
 *  *is_auto_p = 1 (the caller uses real hosts); "<k>": global_rank / k;
 *  "<n1>,...,<nm>": consecutive hosts of those sizes, the last repeated.
 *  @return UCS_ERR_INVALID_PARAM (and a log line) on a bad layout. */
ucs_status_t ucg_hosts_label(const char *hosts, unsigned global_rank,
                             uint64_t *label_p, int *is_auto_p);

#endif
