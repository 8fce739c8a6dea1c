/**
 * ucx-o2m: UCG, collective operations over UCP and the one-to-many
 * transports (sm_bcast / sm_incast).
 *
 * Lifecycle
 * ---------
 *   ucg_config_read()  ->  ucg_context_create()  ->  ucg_group_create()
 *   ->  ucg_coll_init() -> { ucg_coll_start() -> ucg_coll_test() ... }*
 *   ->  ucg_coll_finalize()  ->  ucg_group_destroy()  ->  ucg_context_destroy()
 *
 * A context owns (or is given) a UCP context and worker, and opens the
 * sm_bcast / sm_incast interfaces itself (libucg_o2m links the transport
 * plugin, so no LD_PRELOAD is needed).  Progress is driven by the caller:
 * ucg_progress(), or ucg_coll_test() / ucg_coll_wait().
 *
 * A group is created collectively by @a size processes, each with its rank,
 * from an out-of-band allgather supplied by the caller.  Collectives on one
 * group must be started in the same order on every member (as in MPI);
 * collectives of different groups are independent, and several may be
 * outstanding at once.
 *
 * Threads: a context and everything created from it must be used by one
 * thread at a time.
 */
#ifndef UCG_O2M_H_
#define UCG_O2M_H_

#include <ucp/api/ucp.h>
#include <ucs/config/types.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

BEGIN_C_DECLS

#define UCG_API __attribute__((visibility("default")))

#define UCG_API_MAJOR 1
#define UCG_API_MINOR 3

/** Send buffer (or, for scatter at the root, receive buffer) placeholder of
 *  the in-place variants, as MPI_IN_PLACE. */
#define UCG_IN_PLACE ((void*)1)

typedef struct ucg_config  ucg_config_t;
typedef struct ucg_context *ucg_context_h;
typedef struct ucg_group   *ucg_group_h;
typedef struct ucg_coll    *ucg_coll_h;


/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

/**
 * Read the UCG configuration from the environment (UCX_UCG_* variables, or
 * <env_prefix>UCG_* when @a env_prefix is not NULL) through UCX's parser.
 */
UCG_API ucs_status_t ucg_config_read(const char *env_prefix,
                                     ucg_config_t **config_p);
UCG_API void ucg_config_release(ucg_config_t *config);
/** Set one variable, @a name without prefix (e.g. "BCAST_ALGO"). */
UCG_API ucs_status_t ucg_config_modify(ucg_config_t *config, const char *name,
                                       const char *value);
/** Print the configuration (UCS_CONFIG_PRINT_* flags, as ucx_info -c). */
UCG_API void ucg_config_print(const ucg_config_t *config, FILE *stream,
                              const char *title,
                              ucs_config_print_flags_t print_flags);


/* ------------------------------------------------------------------------ */
/* Context                                                                  */
/* ------------------------------------------------------------------------ */

enum ucg_context_params_field {
    /** Use this UCP worker (and its context) instead of creating them.  The
     *  context must have UCP_FEATURE_TAG; the caller keeps ownership. */
    UCG_CONTEXT_PARAM_FIELD_UCP_WORKER = UCS_BIT(0)
};

typedef struct ucg_context_params {
    uint64_t      field_mask;  /**< enum ucg_context_params_field */
    ucp_context_h ucp_context;
    ucp_worker_h  ucp_worker;
} ucg_context_params_t;

/** @a config may be NULL (then it is read from the environment). */
UCG_API ucs_status_t ucg_context_create(const ucg_context_params_t *params,
                                        const ucg_config_t *config,
                                        ucg_context_h *context_p);
UCG_API void ucg_context_destroy(ucg_context_h context);

/** Progress all communication of the context; returns the number of events. */
UCG_API unsigned ucg_progress(ucg_context_h context);


/* ------------------------------------------------------------------------ */
/* Groups                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * Out-of-band allgather: every member passes @a len bytes in @a sbuf; on
 * return @a rbuf holds size * len bytes, member i's at offset i * len.
 * Called collectively, with the same @a len on every member.  Blocking.
 */
typedef ucs_status_t (*ucg_oob_allgather_func_t)(void *arg, const void *sbuf,
                                                 void *rbuf, size_t len);

enum ucg_group_params_field {
    /** global_rank is set: the rank used by host layouts of the
     *  configuration (UCX_UCG_HOSTS), e.g. the MPI_COMM_WORLD rank. */
    UCG_GROUP_PARAM_FIELD_GLOBAL_RANK = UCS_BIT(0),
    /** host_id is set: the caller's identity of this member's host, used
     *  instead of UCG's own (members with equal host_id share memory). */
    UCG_GROUP_PARAM_FIELD_HOST_ID     = UCS_BIT(1)
};

typedef struct ucg_group_params {
    uint64_t                 field_mask;  /**< enum ucg_group_params_field */
    unsigned                 size;        /**< Members, >= 1 */
    unsigned                 rank;        /**< This member, 0..size-1 */
    ucg_oob_allgather_func_t oob_allgather;
    void                     *oob_arg;
    unsigned                 global_rank;
    uint64_t                 host_id;
} ucg_group_params_t;

/** Collective over the members: calls params->oob_allgather. */
UCG_API ucs_status_t ucg_group_create(ucg_context_h context,
                                      const ucg_group_params_t *params,
                                      ucg_group_h *group_p);
/** Every collective of the group must have been finalized.  Not collective,
 *  but a member should destroy a group only after its last collective
 *  completed everywhere (for example after a barrier). */
UCG_API void ucg_group_destroy(ucg_group_h group);

UCG_API unsigned ucg_group_size(ucg_group_h group);
UCG_API unsigned ucg_group_rank(ucg_group_h group);
/** (API 1.2) Members on the group's largest host (of the topology UCG
 *  plans with: real hosts, or the UCX_UCG_HOSTS layout); the same on every
 *  member. */
UCG_API unsigned ucg_group_max_ppn(ucg_group_h group);


/* ------------------------------------------------------------------------ */
/* Datatypes and operations                                                 */
/* ------------------------------------------------------------------------ */

/** Contiguous element types. */
typedef enum {
    UCG_DT_INT8,
    UCG_DT_UINT8,
    UCG_DT_INT16,
    UCG_DT_UINT16,
    UCG_DT_INT32,
    UCG_DT_UINT32,
    UCG_DT_INT64,
    UCG_DT_UINT64,
    UCG_DT_FLOAT,
    UCG_DT_DOUBLE,
    UCG_DT_LONG_DOUBLE,
    UCG_DT_FLOAT_COMPLEX,        /**< float _Complex */
    UCG_DT_DOUBLE_COMPLEX,       /**< double _Complex */
    UCG_DT_LONG_DOUBLE_COMPLEX,  /**< long double _Complex */
    /* MINLOC / MAXLOC pairs {value; int index}, laid out as the C structs
     * MPI defines (MPI_FLOAT_INT, ...) */
    UCG_DT_FLOAT_INT,
    UCG_DT_DOUBLE_INT,
    UCG_DT_LONG_INT,
    UCG_DT_2INT,
    UCG_DT_SHORT_INT,
    UCG_DT_LONG_DOUBLE_INT,
    /* (API 1.1) MINLOC / MAXLOC pairs whose index has the value's type,
     * as Fortran's MPI_2REAL and MPI_2DOUBLE_PRECISION */
    UCG_DT_2FLOAT,
    UCG_DT_2DOUBLE,
    /** Opaque element of ucg_coll_params_t::dt_size bytes: data movement
     *  and UCG_OP_USER only. */
    UCG_DT_BYTES,
    UCG_DT_LAST
} ucg_dtype_t;

typedef enum {
    UCG_OP_SUM,
    UCG_OP_PROD,
    UCG_OP_MIN,
    UCG_OP_MAX,
    UCG_OP_LAND,
    UCG_OP_LOR,
    UCG_OP_LXOR,
    UCG_OP_BAND,
    UCG_OP_BOR,
    UCG_OP_BXOR,
    UCG_OP_MINLOC,
    UCG_OP_MAXLOC,
    UCG_OP_USER,   /**< ucg_coll_params_t::user_op */
    UCG_OP_LAST
} ucg_op_t;

/**
 * User reduction: inout[i] = in[i] (op) inout[i] for i < count, as MPI's
 * user functions.  @a in always comes from lower ranks than @a inout.
 */
typedef void (*ucg_user_op_func_t)(void *arg, const void *in, void *inout,
                                   size_t count);

typedef struct ucg_user_op {
    ucg_user_op_func_t func;
    void               *arg;
    /** Zero: results are combined in rank order, identically on every run. */
    int                commutative;
} ucg_user_op_t;

/** Size of one element, 0 for UCG_DT_BYTES and invalid types. */
UCG_API size_t ucg_dtype_size(ucg_dtype_t dtype);
/** Whether @a op is defined on @a dtype (as in MPI). */
UCG_API int ucg_op_valid(ucg_op_t op, ucg_dtype_t dtype);
UCG_API const char *ucg_dtype_name(ucg_dtype_t dtype);
UCG_API const char *ucg_op_name(ucg_op_t op);


/* ------------------------------------------------------------------------ */
/* Collectives                                                              */
/* ------------------------------------------------------------------------ */

typedef enum {
    UCG_COLL_BCAST,
    UCG_COLL_REDUCE,
    UCG_COLL_ALLREDUCE,
    UCG_COLL_BARRIER,
    UCG_COLL_GATHER,
    UCG_COLL_SCATTER,
    UCG_COLL_ALLGATHER,
    UCG_COLL_REDUCE_SCATTER,       /**< (API 1.3) */
    UCG_COLL_REDUCE_SCATTER_BLOCK, /**< (API 1.3) */
    UCG_COLL_SCAN,                 /**< (API 1.3) */
    UCG_COLL_EXSCAN,               /**< (API 1.3) */
    UCG_COLL_GATHERV,    /**< (API 1.3) */
    UCG_COLL_SCATTERV,   /**< (API 1.3) */
    UCG_COLL_ALLGATHERV, /**< (API 1.3) */
    UCG_COLL_ALLTOALL,   /**< (API 1.3) */
    UCG_COLL_ALLTOALLV,  /**< (API 1.3) */
    UCG_COLL_LAST
} ucg_coll_type_t;

/**
 * A collective.  Buffers follow MPI (count elements per member):
 *  - BCAST:     rbuf, count elements, from root to all;
 *  - REDUCE:    sbuf -> rbuf (root only; ignored elsewhere).  In place:
 *               sbuf == UCG_IN_PLACE at the root, the data is in rbuf;
 *  - ALLREDUCE: sbuf -> rbuf.  In place: sbuf == UCG_IN_PLACE;
 *  - BARRIER:   no buffers;
 *  - GATHER:    sbuf (count) -> rbuf (size * count, root only).  In place:
 *               sbuf == UCG_IN_PLACE at the root, its block already in rbuf;
 *  - SCATTER:   sbuf (size * count, root only) -> rbuf (count).  In place:
 *               rbuf == UCG_IN_PLACE at the root, its block stays in sbuf;
 *  - ALLGATHER: sbuf (count) -> rbuf (size * count).  In place:
 *               sbuf == UCG_IN_PLACE, own block already in rbuf;
 *  - GATHERV:   sbuf (count) -> rbuf at the root: member i's rcounts[i]
 *               elements at rdispls[i] (rcounts, rdispls: root only).  In
 *               place: sbuf == UCG_IN_PLACE at the root;
 *  - SCATTERV:  sbuf at the root (member i's scounts[i] elements at
 *               sdispls[i]; scounts, sdispls: root only) -> rbuf (count).
 *               In place: rbuf == UCG_IN_PLACE at the root;
 *  - ALLGATHERV: sbuf (count) -> rbuf: member i's rcounts[i] elements at
 *               rdispls[i] (rcounts, rdispls on every member).  In place:
 *               sbuf == UCG_IN_PLACE, own block already in rbuf;
 *  - ALLTOALL:  sbuf (size * count, block i to member i) -> rbuf (size *
 *               count, block i from member i).  In place: sbuf ==
 *               UCG_IN_PLACE, the data is in rbuf and replaced;
 *  - ALLTOALLV: scounts[i] elements at sdispls[i] of sbuf to member i,
 *               rcounts[i] elements from member i at rdispls[i] of rbuf
 *               (count is ignored).  In place: sbuf == UCG_IN_PLACE, the
 *               data is in rbuf at rcounts / rdispls and replaced;
 *               scounts and sdispls are ignored.
 * In GATHERV, SCATTERV and ALLGATHERV a member's count must be its entry
 * of the counts (the root's; every member's for ALLGATHERV): a message of
 * another length fails the collective with UCS_ERR_MESSAGE_TRUNCATED where
 * it arrives.  In ALLTOALLV a member's rcounts[i] must be member i's
 * scounts of it, the same way.
 * The buffers must not change (or be read, for rbuf) until completion.
 */
typedef struct ucg_coll_params {
    ucg_coll_type_t type;
    unsigned        root;     /**< BCAST, REDUCE, GATHER(V), SCATTER(V) */
    const void      *sbuf;
    void            *rbuf;
    size_t          count;    /**< Elements per member */
    ucg_dtype_t     dtype;
    size_t          dt_size;  /**< Element size, only for UCG_DT_BYTES */
    ucg_op_t        op;       /**< REDUCE, ALLREDUCE */
    ucg_user_op_t   user_op;  /**< op == UCG_OP_USER */
    /*
     * (API 1.3) Per-member counts and displacements, in elements, of the
     * vector collectives; arrays of the group's size, NULL (and ignored)
     * for the other collectives.  ucg_coll_init copies them: they need not
     * outlive it.
     */
    const size_t    *scounts; /**< Elements sent to each member */
    const size_t    *sdispls; /**< Where each member's elements are in sbuf */
    const size_t    *rcounts; /**< Elements received from each member */
    const size_t    *rdispls; /**< Where each member's elements go in rbuf */
} ucg_coll_params_t;

/**
 * Prepare a collective (choose its plan, allocate its state).  Not
 * collective; no communication.  The collective can then be started any
 * number of times (persistent), one instance at a time.
 * @return UCS_ERR_INVALID_PARAM with a log line on bad arguments.
 */
UCG_API ucs_status_t ucg_coll_init(ucg_group_h group,
                                   const ucg_coll_params_t *params,
                                   ucg_coll_h *coll_p);

/** Plans ucg_coll_init_plan can choose */
typedef enum {
    UCG_PLAN_AUTO,  /**< the planner's, as ucg_coll_init */
    UCG_PLAN_FLAT   /**< point-to-point only, also where host-local
                         phases could run (a tuning rule's "flat") */
} ucg_plan_choice_t;

/** (API 1.2) ucg_coll_init with a choice of plan; every member must make
 *  the same choice for the same collective. */
UCG_API ucs_status_t ucg_coll_init_plan(ucg_group_h group,
                                        const ucg_coll_params_t *params,
                                        ucg_plan_choice_t choice,
                                        ucg_coll_h *coll_p);

/** Start the collective; returns UCS_OK, or an error (no instance started).
 *  UCS_ERR_BUSY if the previous start has not completed.  On any other
 *  error the instance still takes its place in the group's order and the
 *  other members' instance completes with UCS_ERR_CANCELED (see
 *  ucg_group_abort_next), so that nobody waits for this member. */
UCG_API ucs_status_t ucg_coll_start(ucg_coll_h coll);

/**
 * This member does not run its next collective on @a group, which the
 * other members start (it could not prepare it, after they all decided to
 * run it): that collective's place in the group's order is taken, and the
 * other members' instance of it completes with UCS_ERR_CANCELED, or with
 * UCS_OK where it completed without this member.  @a reason is reported to
 * them (log line).  Not collective, no wait.
 */
UCG_API void ucg_group_abort_next(ucg_group_h group, ucs_status_t reason);

/** Progress the context once and return UCS_INPROGRESS, UCS_OK (complete)
 *  or the error that ended this instance. */
UCG_API ucs_status_t ucg_coll_test(ucg_coll_h coll);

/** Progress until completion.  A member on this host that dies makes it
 *  return an error within UCX_UCG_CHECK_INTERVAL; members on other hosts
 *  are not monitored yet (docs/ucg.md, Failures). */
UCG_API ucs_status_t ucg_coll_wait(ucg_coll_h coll);

/** Release a collective that is not in progress. */
UCG_API void ucg_coll_finalize(ucg_coll_h coll);

/** init + start + wait + finalize. */
UCG_API ucs_status_t ucg_coll_run(ucg_group_h group,
                                  const ucg_coll_params_t *params);

/** Blocking wrappers of ucg_coll_run(). */
UCG_API ucs_status_t ucg_bcast(ucg_group_h group, void *buf, size_t count,
                               ucg_dtype_t dtype, unsigned root);
UCG_API ucs_status_t ucg_allreduce(ucg_group_h group, const void *sbuf,
                                   void *rbuf, size_t count,
                                   ucg_dtype_t dtype, ucg_op_t op);
UCG_API ucs_status_t ucg_reduce(ucg_group_h group, const void *sbuf,
                                void *rbuf, size_t count, ucg_dtype_t dtype,
                                ucg_op_t op, unsigned root);
UCG_API ucs_status_t ucg_barrier(ucg_group_h group);

/** Name of a collective type, for logs and tools. */
UCG_API const char *ucg_coll_name(ucg_coll_type_t type);

/**
 * Print the plan that would run @a params on @a group (this member's
 * view of the whole plan).
 */
UCG_API ucs_status_t ucg_coll_plan_print(ucg_group_h group,
                                         const ucg_coll_params_t *params,
                                         FILE *stream);

END_C_DECLS

#endif
