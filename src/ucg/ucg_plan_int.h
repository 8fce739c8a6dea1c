/**
 * UCG planner internals: the state of one plan's construction and what the
 * builders of the collective families share (ucg_plan.c: size thresholds;
 * ucg_plan_phase.c: phases, modes and methods).  Every choice
 * that depends on the message size goes through ucg_plan_reaches(),
 * ucg_plan_size_le() or a helper built on them, which narrow the plan's
 * size range (ucg_plan_t::size_min/size_max).
 */
#ifndef UCG_PLAN_INT_H_
#define UCG_PLAN_INT_H_

#include "ucg_plan.h"

typedef struct {
    const ucg_config_t   *config;
    const ucg_topo_t     *topo;
    const ucg_plan_key_t *key;
    ucg_plan_t           *plan;
    size_t               elem_size;
    size_t               sm_frag;    /* SM phases (hier plans) */
    unsigned             *leader;    /* [num_hosts] of the current part */
    unsigned             *sorted;    /* [num_hosts] scratch */
} ucg_plan_builder_t;

/* What the planner knows of a phase method beyond its name
 * (ucg_phase_method_names): a new method is a row of ucg_plan_phase_info and
 * the builders that add it */
enum {
    UCG_PHASE_INFO_SM     = UCS_BIT(0), /* host-local: has an sm_mode */
    UCG_PHASE_INFO_NATIVE = UCS_BIT(1), /* sm_native: the transport reduces */
    UCG_PHASE_INFO_ACK    = UCS_BIT(2), /* single-copy: has an sm_ack_mode */
    UCG_PHASE_INFO_ELEMS  = UCS_BIT(3), /* reduces a message at a time: its
                                           fragments hold whole elements */
    UCG_PHASE_INFO_STANDIN = UCS_BIT(4) /* radix and frag_size are those of
                                           its point-to-point stand-in: not
                                           printed */
};

typedef struct ucg_plan_phase_info {
    const char *transport; /* printed: the transport name, ucp or local */
    unsigned   flags;      /* UCG_PHASE_INFO_* */
} ucg_plan_phase_info_t;

extern const ucg_plan_phase_info_t ucg_plan_phase_info[UCG_PHASE_LAST];

/* Adds the phases of one collective: hierarchical or flat, rooted at @a root
 * (0 for the collectives without a root) */
typedef ucs_status_t (*ucg_plan_build_func_t)(ucg_plan_builder_t *b, int hier,
                                              unsigned root);

/* No alternative method (ucg_plan_p2p_method) */
#define UCG_P2P_NONE UCG_P2P_LAST


/* Size thresholds */
int ucg_plan_reaches(ucg_plan_builder_t *b, size_t thresh);
int ucg_plan_size_le(ucg_plan_builder_t *b, size_t max);
size_t ucg_plan_p2p_bcast_frag(ucg_plan_builder_t *b);
int ucg_plan_allgather_ring(ucg_plan_builder_t *b);

/* Phases and their sets */
ucg_phase_t *ucg_plan_new_phase(ucg_plan_builder_t *b,
                                ucg_phase_method_t method);
ucs_status_t ucg_plan_alloc_sets(ucg_phase_t *phase, unsigned num_sets);
ucs_status_t ucg_plan_alloc_ranks(ucg_phase_set_t *set, unsigned count);
void ucg_plan_set_leaders(ucg_plan_builder_t *b, int rooted,
                          unsigned root);
ucs_status_t ucg_plan_add_local(ucg_plan_builder_t *b,
                                ucg_phase_method_t method,
                                uct_o2m_mode_t mode, int native,
                                ucg_phase_t **phase_p);
ucs_status_t ucg_plan_add_global(ucg_plan_builder_t *b, int hier,
                                 ucg_phase_method_t method,
                                 unsigned root, ucg_phase_t **phase_p);
ucs_status_t ucg_plan_set_owner(ucg_plan_builder_t *b,
                                ucg_phase_t *phase, int by_leader);
ucs_status_t ucg_plan_add_local_gather(ucg_plan_builder_t *b, int hier);
ucs_status_t ucg_plan_add_local_bcast(ucg_plan_builder_t *b, int hier);

/* Modes and methods */
uct_o2m_mode_t ucg_plan_ppn_mode(const ucg_plan_builder_t *b);
uct_o2m_mode_t ucg_plan_bcast_mode(const ucg_plan_builder_t *b);
uct_o2m_mode_t ucg_plan_bcast_mode_of(const ucg_plan_builder_t *b,
                                      unsigned max_count);
uct_o2m_mode_t ucg_plan_gather_mode(const ucg_plan_builder_t *b);
ucs_status_t ucg_plan_p2p_method(const ucg_plan_builder_t *b,
                                 ucg_coll_type_t type,
                                 ucg_p2p_method_t dfl,
                                 ucg_p2p_method_t alt1,
                                 ucg_p2p_method_t alt2,
                                 ucg_p2p_method_t *method_p);

/* Builders, one per collective (ucg_plan_bcast.c, ucg_plan_reduce.c,
 * ucg_plan_gather.c) */
ucs_status_t ucg_plan_build_bcast(ucg_plan_builder_t *b, int hier,
                                  unsigned root);
ucs_status_t ucg_plan_build_scatter(ucg_plan_builder_t *b, int hier,
                                    unsigned root);
ucs_status_t ucg_plan_build_fold(ucg_plan_builder_t *b, unsigned root);
ucs_status_t ucg_plan_build_reduce(ucg_plan_builder_t *b, int hier,
                                   unsigned root);
ucs_status_t ucg_plan_build_allreduce(ucg_plan_builder_t *b, int hier,
                                      unsigned root);
ucs_status_t ucg_plan_build_gather(ucg_plan_builder_t *b, int hier,
                                   unsigned root);
ucs_status_t ucg_plan_build_allgather(ucg_plan_builder_t *b, int hier,
                                      unsigned root);
ucs_status_t ucg_plan_build_barrier(ucg_plan_builder_t *b, int hier,
                                    unsigned root);
/* ucg_plan_vblock.c: gatherv, scatterv, allgatherv; whether one of them
 * may have host-local phases (allgatherv on one small host) */
int ucg_plan_vblock_hier(ucg_plan_builder_t *b);
ucs_status_t ucg_plan_build_gatherv(ucg_plan_builder_t *b, int hier,
                                    unsigned root);
ucs_status_t ucg_plan_build_scatterv(ucg_plan_builder_t *b, int hier,
                                     unsigned root);
ucs_status_t ucg_plan_build_allgatherv(ucg_plan_builder_t *b, int hier,
                                       unsigned root);

/* ucg_plan_redscan.c: reduce_scatter(_block), scan, exscan */
int ucg_plan_redscan_hier(ucg_plan_builder_t *b);
ucs_status_t ucg_plan_build_reduce_scatter(ucg_plan_builder_t *b, int hier,
                                           unsigned root);
ucs_status_t ucg_plan_build_scan(ucg_plan_builder_t *b, int hier,
                                 unsigned root);
/* ucg_plan_2level.c: the two-level host-local bcast (SM_BCAST_2LEVEL_PPN) */
int ucg_plan_2level_applies(const ucg_plan_builder_t *b);
ucs_status_t ucg_plan_add_local_bcast_2level(ucg_plan_builder_t *b);
/* ucg_plan_alltoall.c: alltoall and alltoallv */
ucs_status_t ucg_plan_build_alltoall(ucg_plan_builder_t *b, int hier,
                                     unsigned root);

#endif
