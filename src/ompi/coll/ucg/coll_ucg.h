/**
 * coll/ucg: Open MPI coll component (4.1 and 5.0) that runs MPI collectives
 * on UCG (src/ucg).  Collectives it cannot run, or is told not to, go to
 * the module that was selected before it on the communicator.
 */
#ifndef MCA_COLL_UCG_H_
#define MCA_COLL_UCG_H_

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/communicator/communicator.h"

#include <ucg.h>
#include <ucg_rules.h>
#include <ucs/datastruct/list.h>

BEGIN_C_DECLS

/*
 * The Open MPI versions coll/ucg builds against, from the same source:
 * Debian 12's 4.1 (coll framework 2.0.0) and Debian 13's 5.0 (2.4.0).
 * What differs between them for this component is here, and only here:
 * - the component structure and the framework version it declares;
 * - the words an ompi_coll_base_nbc_request_t (the request Open MPI's
 *   MPI_I* and MPI_*_init functions keep the call's datatypes and op in)
 *   has after its ompi_request_t: 4.1 a callback, its data and a union of
 *   two pointers; 5.0 the same with a union of up to 2 pointers and 2 ints
 *   (24 bytes) and 7 arrays to free.  coll_ucg_nb.c checks the size
 *   against the class at run time;
 * - persistent collectives (MPI 4.0's MPI_Bcast_init and friends): on UCG
 *   with 5.0 only (coll_ucg_persist.c); 4.1 has them as MPIX_ extensions,
 *   left to the previous module there;
 * - the export of the component's symbol (5.0 has no
 *   OMPI_MODULE_DECLSPEC) and the communicator's local id (5.0's ids are
 *   extended; the local one is what 4.1's ompi_comm_get_cid gives).
 * The modules' function tables and the blocking and nonblocking
 * signatures are the same in both.
 */
#if OMPI_MAJOR_VERSION >= 6
#  error "coll/ucg builds against Open MPI 4.1 or 5.0, not a later one"
#elif OMPI_MAJOR_VERSION == 5
typedef mca_coll_base_component_2_4_0_t coll_ucg_base_component_t;
#  define COLL_UCG_BASE_VERSION    MCA_COLL_BASE_VERSION_2_4_0
#  define COLL_UCG_NBC_REQ_WORDS   12
#  define COLL_UCG_HAVE_PERSISTENT 1
#  define COLL_UCG_DECLSPEC        OMPI_DECLSPEC
#  define coll_ucg_comm_cid(_comm) ompi_comm_get_local_cid(_comm)
#elif (OMPI_MAJOR_VERSION == 4) && (OMPI_MINOR_VERSION >= 1)
typedef mca_coll_base_component_2_0_0_t coll_ucg_base_component_t;
#  define COLL_UCG_BASE_VERSION    MCA_COLL_BASE_VERSION_2_0_0
#  define COLL_UCG_NBC_REQ_WORDS   4
#  define COLL_UCG_HAVE_PERSISTENT 0
#  define COLL_UCG_DECLSPEC        OMPI_MODULE_DECLSPEC
#  define coll_ucg_comm_cid(_comm) ompi_comm_get_cid(_comm)
#else
#  error "coll/ucg builds against Open MPI 4.1 or 5.0"
#endif

/* The collectives this component runs; order of the MCA parameters */
enum {
    COLL_UCG_BCAST,
    COLL_UCG_ALLREDUCE,
    COLL_UCG_REDUCE,
    COLL_UCG_BARRIER,
    COLL_UCG_GATHER,
    COLL_UCG_SCATTER,
    COLL_UCG_ALLGATHER,
    COLL_UCG_REDUCE_SCATTER,       /* coll_ucg_redscan.c */
    COLL_UCG_REDUCE_SCATTER_BLOCK,
    COLL_UCG_SCAN,
    COLL_UCG_EXSCAN,
    COLL_UCG_GATHERV,     /* the vector ones: coll_ucg_vcoll.c */
    COLL_UCG_SCATTERV,
    COLL_UCG_ALLGATHERV,
    COLL_UCG_ALLTOALL,
    COLL_UCG_ALLTOALLV,
    /* nonblocking forms (coll_ucg_nb.c, coll_ucg_redscan.c), in the same
     * order */
    COLL_UCG_IBCAST,
    COLL_UCG_IALLREDUCE,
    COLL_UCG_IREDUCE,
    COLL_UCG_IBARRIER,
    COLL_UCG_IGATHER,
    COLL_UCG_ISCATTER,
    COLL_UCG_IALLGATHER,
    COLL_UCG_IREDUCE_SCATTER,
    COLL_UCG_IREDUCE_SCATTER_BLOCK,
    COLL_UCG_ISCAN,
    COLL_UCG_IEXSCAN,
    COLL_UCG_IGATHERV,
    COLL_UCG_ISCATTERV,
    COLL_UCG_IALLGATHERV,
    COLL_UCG_IALLTOALL,
    COLL_UCG_IALLTOALLV,
    /* persistent forms (coll_ucg_persist.c, Open MPI 5), in the same
     * order */
    COLL_UCG_BCAST_INIT,
    COLL_UCG_ALLREDUCE_INIT,
    COLL_UCG_REDUCE_INIT,
    COLL_UCG_BARRIER_INIT,
    COLL_UCG_GATHER_INIT,
    COLL_UCG_SCATTER_INIT,
    COLL_UCG_ALLGATHER_INIT,
    COLL_UCG_REDUCE_SCATTER_INIT,
    COLL_UCG_REDUCE_SCATTER_BLOCK_INIT,
    COLL_UCG_SCAN_INIT,
    COLL_UCG_EXSCAN_INIT,
    COLL_UCG_GATHERV_INIT,
    COLL_UCG_SCATTERV_INIT,
    COLL_UCG_ALLGATHERV_INIT,
    COLL_UCG_ALLTOALL_INIT,
    COLL_UCG_ALLTOALLV_INIT,
    COLL_UCG_NUM
};

/* The collectives with a count per rank: no size is the same on every
 * rank, so no size limit (coll_max_bytes) applies to them */
static inline bool mca_coll_ucg_coll_is_v(int coll)
{
    return (coll == COLL_UCG_GATHERV) || (coll == COLL_UCG_SCATTERV) ||
           (coll == COLL_UCG_ALLGATHERV) || (coll == COLL_UCG_IGATHERV) ||
           (coll == COLL_UCG_ISCATTERV) || (coll == COLL_UCG_IALLGATHERV) ||
           (coll == COLL_UCG_GATHERV_INIT) ||
           (coll == COLL_UCG_SCATTERV_INIT) ||
           (coll == COLL_UCG_ALLGATHERV_INIT);
}

/* Alltoallv's counts differ between ranks: no size limit either */
static inline bool mca_coll_ucg_coll_is_alltoallv(int coll)
{
    return (coll == COLL_UCG_ALLTOALLV) || (coll == COLL_UCG_IALLTOALLV) ||
           (coll == COLL_UCG_ALLTOALLV_INIT);
}

#define COLL_UCG_IS_PERSISTENT(_coll) \
    (((_coll) >= COLL_UCG_BCAST_INIT) && ((_coll) <= COLL_UCG_ALLTOALLV_INIT))

/* Where coll_ucg_test_fail_rank fails (coll_ucg_test_fail_point) */
enum {
    COLL_UCG_TEST_FAIL_PREPARE, /* preparation of a call needing agreement */
    COLL_UCG_TEST_FAIL_CREATE,  /* UCG group creation, in its 2nd round */
    COLL_UCG_TEST_FAIL_START,   /* start of a call the ranks run on UCG */
    COLL_UCG_TEST_FAIL_NB_START /* start of a nonblocking or persistent
                                   call on UCG */
};

typedef struct mca_coll_ucg_component {
    coll_ucg_base_component_t       super;
    int                             priority;
    bool                            enable;
    int                             verbose;
    bool                            coll_enable[COLL_UCG_NUM];
    /* Bytes per member (per block for gather/scatter/allgather/alltoall);
     * 0: no limit; not for the vector collectives nor alltoallv */
    size_t                          coll_max_bytes[COLL_UCG_NUM];
    /* Tuning rules (docs/ucg.md, "Tuning rules"): rules_file names them
     * ("": the built-in table, "none": no rules); read on first use into
     * rules, the built-in table when the file is bad */
    char                            *rules_file;
    bool                            rules_loaded;
    ucg_rules_t                     rules;
    ucg_rules_t                     builtin_rules;
    bool                            rules_mismatch_warned;
    ucg_context_h                   ucg_context;   /* created lazily */
    bool                            context_failed;
    int                             num_groups;    /* live UCG groups */
    /* Test only: MPI_COMM_WORLD rank on which something fails at the
     * test_fail_call-th time (-1: none): what, test_fail_point */
    int                             test_fail_rank;
    int                             test_fail_call;
    int                             test_fail_point;
    unsigned long                   test_agreed_calls;
    unsigned long                   test_created;    /* groups */
    unsigned long                   test_started;    /* calls on UCG */
    unsigned long                   test_nb_started; /* nonblocking ones */
    /* Nonblocking calls running on UCG (coll_ucg_nb.c), of all modules */
    ucs_list_link_t                 nb_active;
    bool                            nb_progress;     /* its callback is
                                                        registered */
    /* Started persistent calls (coll_ucg_persist.c), of all modules */
    ucs_list_link_t                 persist_active;
    bool                            persist_progress;
} mca_coll_ucg_component_t;

COLL_UCG_DECLSPEC extern mca_coll_ucg_component_t mca_coll_ucg_component;

/* Parameter sets of each collective remembered as prepared by all ranks */
#define COLL_UCG_KNOWN 8

typedef struct mca_coll_ucg_module {
    mca_coll_base_module_t super;
    ucg_group_h            group;   /* NULL: delegate everything */
    int                    comm_size;
    int                    comm_rank;
    unsigned long          n_ucg[COLL_UCG_NUM];
    unsigned long          n_delegated[COLL_UCG_NUM];
    unsigned long          n_handed[COLL_UCG_NUM];  /* to the previous
                                                       module by the rules */
    unsigned long          n_flat[COLL_UCG_NUM];    /* of n_ucg: flat plan
                                                       by the rules */
    unsigned long          n_reused[COLL_UCG_NUM];  /* of n_ucg: cached */
    unsigned long          n_agreed[COLL_UCG_NUM];  /* agreements made */
    unsigned long          n_yields[COLL_UCG_NUM];  /* sched_yield()s while
                                                       waiting */
    /* The rules in force on this communicator (the same on every rank:
     * agreed at creation) and the group's largest host */
    const ucg_rules_t      *rules;
    unsigned               max_ppn;
    char                   comm_name[MPI_MAX_OBJECT_NAME];
    uint32_t               comm_cid;

    /* The last collective of each type, kept initialized: a call with the
     * same parameters (buffers included, as in loops) only starts it */
    ucg_coll_h             cached[COLL_UCG_NUM];
    ucg_coll_params_t      cached_params[COLL_UCG_NUM];
    ucg_plan_choice_t      cached_plan[COLL_UCG_NUM];
    /* The byte counts and displacements the cached gatherv / scatterv /
     * allgatherv request was made with ([2 * comm_size]; NULL: none, as
     * for the other collectives); a call with the same reuses it */
    size_t                 *cached_v[COLL_UCG_NUM];

    /* Parameters of recent calls of each type that all ranks prepared
     * (only the parts equal on all ranks count; UCG keeps their plans): a
     * call with the same needs no new resources and no agreement.  Updated
     * from values equal on all ranks only, so every rank has the same. */
    ucg_coll_params_t      known[COLL_UCG_NUM][COLL_UCG_KNOWN];
    unsigned               num_known[COLL_UCG_NUM];
    unsigned               next_known[COLL_UCG_NUM];  /* to replace next */

    /* The tuning rules' action for the last size of each collective (the
     * rules do not change while the module lives); bytes SIZE_MAX: none */
    struct {
        size_t                 bytes;
        ucg_rule_action_t      action;
    } last_rule[COLL_UCG_NUM];

    /* What coll_ucg_reduce_params said last of a predefined datatype and
     * op (handles that are never freed): a loop of reductions asks again
     * on every call.  dtype NULL: nothing yet */
    struct {
        struct ompi_datatype_t *dtype;
        struct ompi_op_t       *op;
        ucg_dtype_t            ucg_dtype;
        ucg_op_t               ucg_op;
        bool                   ok;
    } last_types;

    /* The nonblocking collectives all go to the previous module (this Open
     * MPI's request layout is not the one coll_ucg_nb.c knows) */
    bool                   nb_disabled;

    /* Pack buffers for calls that need no agreement */
    void                   *scratch[2];

    /* The previous module of each collective, to delegate to */
    mca_coll_base_module_bcast_fn_t     prev_bcast;
    mca_coll_base_module_t              *prev_bcast_module;
    mca_coll_base_module_allreduce_fn_t prev_allreduce;
    mca_coll_base_module_t              *prev_allreduce_module;
    mca_coll_base_module_reduce_fn_t    prev_reduce;
    mca_coll_base_module_t              *prev_reduce_module;
    mca_coll_base_module_barrier_fn_t   prev_barrier;
    mca_coll_base_module_t              *prev_barrier_module;
    mca_coll_base_module_gather_fn_t    prev_gather;
    mca_coll_base_module_t              *prev_gather_module;
    mca_coll_base_module_scatter_fn_t   prev_scatter;
    mca_coll_base_module_t              *prev_scatter_module;
    mca_coll_base_module_allgather_fn_t prev_allgather;
    mca_coll_base_module_t              *prev_allgather_module;
    mca_coll_base_module_alltoall_fn_t  prev_alltoall;
    mca_coll_base_module_t              *prev_alltoall_module;
    mca_coll_base_module_alltoallv_fn_t prev_alltoallv;
    mca_coll_base_module_t              *prev_alltoallv_module;
    mca_coll_base_module_ibcast_fn_t     prev_ibcast;
    mca_coll_base_module_t               *prev_ibcast_module;
    mca_coll_base_module_iallreduce_fn_t prev_iallreduce;
    mca_coll_base_module_t               *prev_iallreduce_module;
    mca_coll_base_module_ireduce_fn_t    prev_ireduce;
    mca_coll_base_module_t               *prev_ireduce_module;
    mca_coll_base_module_ibarrier_fn_t   prev_ibarrier;
    mca_coll_base_module_t               *prev_ibarrier_module;
    mca_coll_base_module_igather_fn_t    prev_igather;
    mca_coll_base_module_t               *prev_igather_module;
    mca_coll_base_module_iscatter_fn_t   prev_iscatter;
    mca_coll_base_module_t               *prev_iscatter_module;
    mca_coll_base_module_iallgather_fn_t prev_iallgather;
    mca_coll_base_module_t               *prev_iallgather_module;
    /* coll_ucg_redscan.c */
    mca_coll_base_module_reduce_scatter_fn_t        prev_reduce_scatter;
    mca_coll_base_module_t              *prev_reduce_scatter_module;
    mca_coll_base_module_reduce_scatter_block_fn_t  prev_reduce_scatter_block;
    mca_coll_base_module_t              *prev_reduce_scatter_block_module;
    mca_coll_base_module_scan_fn_t                  prev_scan;
    mca_coll_base_module_t              *prev_scan_module;
    mca_coll_base_module_exscan_fn_t                prev_exscan;
    mca_coll_base_module_t              *prev_exscan_module;
    mca_coll_base_module_ireduce_scatter_fn_t       prev_ireduce_scatter;
    mca_coll_base_module_t              *prev_ireduce_scatter_module;
    mca_coll_base_module_ireduce_scatter_block_fn_t prev_ireduce_scatter_block;
    mca_coll_base_module_t              *prev_ireduce_scatter_block_module;
    mca_coll_base_module_iscan_fn_t                 prev_iscan;
    mca_coll_base_module_t              *prev_iscan_module;
    mca_coll_base_module_iexscan_fn_t               prev_iexscan;
    mca_coll_base_module_t              *prev_iexscan_module;
    mca_coll_base_module_gatherv_fn_t     prev_gatherv;
    mca_coll_base_module_t                *prev_gatherv_module;
    mca_coll_base_module_scatterv_fn_t    prev_scatterv;
    mca_coll_base_module_t                *prev_scatterv_module;
    mca_coll_base_module_allgatherv_fn_t  prev_allgatherv;
    mca_coll_base_module_t                *prev_allgatherv_module;
    mca_coll_base_module_igatherv_fn_t    prev_igatherv;
    mca_coll_base_module_t                *prev_igatherv_module;
    mca_coll_base_module_iscatterv_fn_t   prev_iscatterv;
    mca_coll_base_module_t                *prev_iscatterv_module;
    mca_coll_base_module_iallgatherv_fn_t prev_iallgatherv;
    mca_coll_base_module_t                *prev_iallgatherv_module;
    mca_coll_base_module_ialltoall_fn_t  prev_ialltoall;
    mca_coll_base_module_t               *prev_ialltoall_module;
    mca_coll_base_module_ialltoallv_fn_t prev_ialltoallv;
    mca_coll_base_module_t               *prev_ialltoallv_module;
    mca_coll_base_module_bcast_init_fn_t     prev_bcast_init;
    mca_coll_base_module_t                   *prev_bcast_init_module;
    mca_coll_base_module_allreduce_init_fn_t prev_allreduce_init;
    mca_coll_base_module_t                   *prev_allreduce_init_module;
    mca_coll_base_module_reduce_init_fn_t    prev_reduce_init;
    mca_coll_base_module_t                   *prev_reduce_init_module;
    mca_coll_base_module_barrier_init_fn_t   prev_barrier_init;
    mca_coll_base_module_t                   *prev_barrier_init_module;
    mca_coll_base_module_gather_init_fn_t    prev_gather_init;
    mca_coll_base_module_t                   *prev_gather_init_module;
    mca_coll_base_module_scatter_init_fn_t   prev_scatter_init;
    mca_coll_base_module_t                   *prev_scatter_init_module;
    mca_coll_base_module_allgather_init_fn_t prev_allgather_init;
    mca_coll_base_module_t                   *prev_allgather_init_module;
    mca_coll_base_module_reduce_scatter_init_fn_t
                                         prev_reduce_scatter_init;
    mca_coll_base_module_t               *prev_reduce_scatter_init_module;
    mca_coll_base_module_reduce_scatter_block_init_fn_t
                                         prev_reduce_scatter_block_init;
    mca_coll_base_module_t               *prev_reduce_scatter_block_init_module;
    mca_coll_base_module_scan_init_fn_t       prev_scan_init;
    mca_coll_base_module_t                    *prev_scan_init_module;
    mca_coll_base_module_exscan_init_fn_t     prev_exscan_init;
    mca_coll_base_module_t                    *prev_exscan_init_module;
    mca_coll_base_module_gatherv_init_fn_t    prev_gatherv_init;
    mca_coll_base_module_t                    *prev_gatherv_init_module;
    mca_coll_base_module_scatterv_init_fn_t   prev_scatterv_init;
    mca_coll_base_module_t                    *prev_scatterv_init_module;
    mca_coll_base_module_allgatherv_init_fn_t prev_allgatherv_init;
    mca_coll_base_module_t                    *prev_allgatherv_init_module;
    mca_coll_base_module_alltoall_init_fn_t   prev_alltoall_init;
    mca_coll_base_module_t                    *prev_alltoall_init_module;
    mca_coll_base_module_alltoallv_init_fn_t  prev_alltoallv_init;
    mca_coll_base_module_t                    *prev_alltoallv_init_module;
} mca_coll_ucg_module_t;

OBJ_CLASS_DECLARATION(mca_coll_ucg_module_t);

extern const char *mca_coll_ucg_coll_names[COLL_UCG_NUM];

mca_coll_base_module_t *
mca_coll_ucg_comm_query(struct ompi_communicator_t *comm, int *priority);

/* The process-wide UCG context, created on first use; NULL on failure */
ucg_context_h mca_coll_ucg_get_context(void);

/* This process's tuning rules (coll_ucg_rules_file, else built-in), read
 * on first use */
const ucg_rules_t *mca_coll_ucg_get_rules(void);

END_C_DECLS

#endif
