/**
 * coll/ucg internals shared by the blocking collectives (coll_ucg_module.c),
 * the nonblocking ones (coll_ucg_nb.c) and the persistent ones
 * (coll_ucg_persist.c): the preparation of one call
 * (parameters, packed copies of non-contiguous buffers) and what remains
 * after UCG ran it (unpacking what this rank received).
 */
#ifndef MCA_COLL_UCG_INT_H_
#define MCA_COLL_UCG_INT_H_

#include "coll_ucg.h"
#include "ompi/request/request.h"

#define UCG_MOD(_m) ((mca_coll_ucg_module_t*)(_m))

/* Keep the previous module's @a _coll (at enable): OMPI_ERROR from the
 * enclosing function when there is none */
#define COLL_UCG_SAVE(_m, _comm, _coll) \
    do { \
        (_m)->prev_##_coll          = (_comm)->c_coll->coll_##_coll; \
        (_m)->prev_##_coll##_module = (_comm)->c_coll->coll_##_coll##_module; \
        if ((_m)->prev_##_coll##_module == NULL) { \
            return OMPI_ERROR; \
        } \
        OBJ_RETAIN((_m)->prev_##_coll##_module); \
    } while (0)

#define COLL_UCG_RELEASE_PREV(_m, _coll) \
    do { \
        if ((_m)->prev_##_coll##_module != NULL) { \
            OBJ_RELEASE((_m)->prev_##_coll##_module); \
        } \
    } while (0)

/*
 * Open MPI's MPI_I* and MPI_*_init functions (ompi/mpi/c/) take the request
 * of a nonblocking or persistent collective for an
 * ompi_coll_base_nbc_request_t, and may keep the call's derived datatypes
 * and user op in its fields after ompi_request_t.  Its header
 * (coll_base_util.h) cannot be included
 * here: in 4.1 it includes a Fortran header the devel package lacks.  So
 * the request has room for those fields (COLL_UCG_NBC_REQ_WORDS, per Open
 * MPI version in coll_ucg.h), and derives from that class, whose
 * constructor clears them; coll_ucg_nb_enable checks the size against the
 * class of the Open MPI it runs in.
 */
typedef struct {
    ompi_request_t super;
    void           *nbc_fields[COLL_UCG_NBC_REQ_WORDS];
} ompi_coll_base_nbc_request_t;

OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;

/* Size of each of the module's two pack buffers (allocated at enable) */
#define COLL_UCG_SCRATCH_SIZE (64 * 1024)

typedef struct {
    void                   *tmp;   /* packed copy, NULL when the user
                                      buffer is used */
    bool                   owned;  /* tmp was allocated for this call (not
                                      the scratch) */
    /* what was packed into tmp (src NULL: nothing), packed again at each
     * start of a persistent call (coll_ucg_call_repack) */
    const void             *src;
    int                    count;
    struct ompi_datatype_t *dtype;
    size_t                 bytes;
} coll_ucg_buf_t;

/* The own block of an in-place gather (root) or allgather, packed from the
 * user's receive buffer into the packed one (set: there is one) */
typedef struct {
    bool                   set;
    const void             *rbuf;
    int                    rcount;
    struct ompi_datatype_t *rdtype;
    size_t                 bytes;
    int                    idx;
} coll_ucg_own_t;

/* The datatypes a call packs or unpacks with, or a user op reduces with,
 * after its preparation (a persistent call retains them): at most the send
 * and the receive datatype and a user op's */
#define COLL_UCG_CALL_DTYPES 3

/* A user op applied through MPI_Reduce_local */
typedef struct {
    MPI_Op       op;
    MPI_Datatype dtype;
} coll_ucg_user_op_arg_t;

/* Where what this rank receives goes once the call completed */
typedef struct {
    void                   *buf;
    int                    count;
    struct ompi_datatype_t *dtype;
    size_t                 bytes;  /* packed */
    bool                   recv;   /* unpack into buf from the packed copy */
} coll_ucg_out_t;

/* The vector buffer of a gatherv / scatterv / allgatherv (coll_ucg_vcoll.c)
 * as UCG gets it: byte counts and displacements, a packed copy of a
 * non-contiguous datatype's blocks */
typedef struct {
    bool                   active;  /* a vector call: finish releases */
    size_t                 *bytes;  /* [2 * comm_size]: byte counts, then
                                       byte displacements; malloc'ed */
    void                   *packed; /* the packed blocks, NULL: none */
    int                    pack;    /* the blocks packed from the user's
                                       buffer: -1 all, -2 none, else that
                                       one */
    bool                   unpack;  /* into the user's buffer on success */
    void                   *buf;    /* the user's vector buffer */
    const int              *counts; /* and its counts, displacements */
    const int              *displs;
    struct ompi_datatype_t *dtype;
    int                    size;
} coll_ucg_v_t;
/* Alltoallv's arrays in bytes and packed copies (coll_ucg_alltoall.c) */
struct coll_ucg_a2av;

typedef struct {
    ucg_coll_params_t      params;
    coll_ucg_buf_t         sb, rb;
    coll_ucg_own_t         own;
    coll_ucg_v_t           v;
    coll_ucg_out_t         out;
    coll_ucg_user_op_arg_t user_arg; /* params.user_op.arg points here */
    ucg_coll_h             req;
    ucg_plan_choice_t      plan;   /* UCG_PLAN_FLAT: the rules' "flat" */
    bool                   agree;  /* all ranks agree before communicating */
    bool                   ok;     /* this rank's preparation succeeded */
    bool                   nb;     /* nonblocking: packs into its own
                                      buffers (not the module's scratch) */
    struct coll_ucg_a2av   *a2av;  /* alltoallv: what it allocated and
                                      unpacks when it completes */
    size_t                 *counts; /* reduce_scatter's counts (malloc'ed;
                                       UCG copies them at init) */
    struct ompi_datatype_t *dtypes[COLL_UCG_CALL_DTYPES]; /* used after the
                                       preparation (NULL: none) */
} coll_ucg_call_t;

/* Note that @a call uses @a dtype after its preparation */
void coll_ucg_call_uses(coll_ucg_call_t *call, struct ompi_datatype_t *dtype);

/*
 * Preparation of each collective on this rank, into @a call (zeroed by the
 * caller, with call->nb set for a nonblocking one): false when UCG does
 * not take it (counted as delegated under @a coll); else call->ok says
 * whether this rank could prepare it.
 */
bool coll_ucg_bcast_prep(mca_coll_ucg_module_t *m, int coll, void *buff,
                         int count, struct ompi_datatype_t *dtype, int root,
                         coll_ucg_call_t *call);
bool coll_ucg_reduction_prep(mca_coll_ucg_module_t *m, int coll,
                             ucg_coll_type_t type, const void *sbuf,
                             void *rbuf, int count,
                             struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, int root,
                             coll_ucg_call_t *call);
bool coll_ucg_barrier_prep(mca_coll_ucg_module_t *m, int coll,
                           coll_ucg_call_t *call);
bool coll_ucg_gather_prep(mca_coll_ucg_module_t *m, int coll,
                          const void *sbuf, int scount,
                          struct ompi_datatype_t *sdtype, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdtype,
                          int root, coll_ucg_call_t *call);
bool coll_ucg_scatter_prep(mca_coll_ucg_module_t *m, int coll,
                           const void *sbuf, int scount,
                           struct ompi_datatype_t *sdtype, void *rbuf,
                           int rcount, struct ompi_datatype_t *rdtype,
                           int root, coll_ucg_call_t *call);
bool coll_ucg_allgather_prep(mca_coll_ucg_module_t *m, int coll,
                             const void *sbuf, int scount,
                             struct ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype,
                             coll_ucg_call_t *call);
/* coll_ucg_alltoall.c */
bool coll_ucg_alltoall_prep(mca_coll_ucg_module_t *m, int coll,
                            const void *sbuf, int scount,
                            struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype,
                            coll_ucg_call_t *call);
bool coll_ucg_alltoallv_prep(mca_coll_ucg_module_t *m, int coll,
                             const void *sbuf, const int *scounts,
                             const int *sdispls,
                             struct ompi_datatype_t *sdtype, void *rbuf,
                             const int *rcounts, const int *rdispls,
                             struct ompi_datatype_t *rdtype,
                             coll_ucg_call_t *call);
/* For an alltoallv what coll_ucg_call_repack, _unpack and _release do:
 * pack the send blocks again, unpack the received ones (false / an error
 * if that failed), release what it allocated */
bool coll_ucg_alltoallv_repack(coll_ucg_call_t *call);
int coll_ucg_alltoallv_unpack(coll_ucg_call_t *call);
void coll_ucg_alltoallv_release(coll_ucg_call_t *call);

/* Whether a UCG collective type has counts per member: every rank has its
 * own count */
static inline bool coll_ucg_type_is_v(ucg_coll_type_t type)
{
    return (type == UCG_COLL_GATHERV) || (type == UCG_COLL_SCATTERV) ||
           (type == UCG_COLL_ALLGATHERV);
}

/* The vector collectives (coll_ucg_vcoll.c): preparation, the end of a
 * call (unpack the blocks of a packed vector buffer; release), entry
 * points */
bool coll_ucg_gatherv_prep(mca_coll_ucg_module_t *m, int coll,
                           const void *sbuf, int scount,
                           struct ompi_datatype_t *sdtype, void *rbuf,
                           const int *rcounts, const int *displs,
                           struct ompi_datatype_t *rdtype, int root,
                           coll_ucg_call_t *call);
bool coll_ucg_scatterv_prep(mca_coll_ucg_module_t *m, int coll,
                            const void *sbuf, const int *scounts,
                            const int *displs,
                            struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype,
                            int root, coll_ucg_call_t *call);
bool coll_ucg_allgatherv_prep(mca_coll_ucg_module_t *m, int coll,
                              const void *sbuf, int scount,
                              struct ompi_datatype_t *sdtype, void *rbuf,
                              const int *rcounts, const int *displs,
                              struct ompi_datatype_t *rdtype,
                              coll_ucg_call_t *call);
/* Reduce_scatter's preparation (coll_ucg_redscan.c): its counts in
 * call->counts */
bool coll_ucg_reduce_scatter_prep(mca_coll_ucg_module_t *m, int coll,
                                  const void *sbuf, void *rbuf,
                                  const int *rcounts,
                                  struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op,
                                  coll_ucg_call_t *call);
/* For a vector collective what coll_ucg_call_repack, _unpack and _release
 * do */
bool coll_ucg_v_repack(coll_ucg_call_t *call);
int coll_ucg_v_unpack(coll_ucg_call_t *call);
void coll_ucg_v_release(coll_ucg_call_t *call);
/* Whether the call's byte counts are those of the cached request of
 * @a coll; keep a copy of them with the request about to be cached
 * (false: the request is not cached) */
bool coll_ucg_v_same(const mca_coll_ucg_module_t *m, int coll,
                     const coll_ucg_call_t *call);
bool coll_ucg_v_keep(mca_coll_ucg_module_t *m, int coll,
                     const coll_ucg_call_t *call);
void coll_ucg_v_set_ops(mca_coll_ucg_module_t *m);

/* What the blocking module's steps share with coll_ucg_vcoll.c */
bool coll_ucg_rule_plan(mca_coll_ucg_module_t *m, int coll, size_t bytes,
                        coll_ucg_call_t *call);
void coll_ucg_call_init(mca_coll_ucg_module_t *m, int coll,
                        coll_ucg_call_t *call, size_t pack_bound);

/* After the call ran (@a ret: OMPI_SUCCESS or not): unpack what this rank
 * received, release the packed copies; @a ret, or an error if unpacking
 * failed */
int coll_ucg_call_finish(coll_ucg_call_t *call, int ret);

/* The steps of coll_ucg_call_finish, and what a persistent call repeats
 * at each start and completion: pack again from the user's buffers what
 * the preparation packed (false if that failed), unpack what this rank
 * received (the packed copies kept), release the packed copies */
bool coll_ucg_call_repack(coll_ucg_call_t *call);
int coll_ucg_call_unpack(coll_ucg_call_t *call);
void coll_ucg_call_release(coll_ucg_call_t *call);

/* Release the UCG request of a call that does not run (or ran) */
void coll_ucg_release_req(mca_coll_ucg_module_t *m, int coll,
                          coll_ucg_call_t *call);

bool coll_ucg_reduce_params(struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op,
                            coll_ucg_user_op_arg_t *user_arg,
                            ucg_coll_params_t *params);
bool coll_ucg_use(mca_coll_ucg_module_t *m, int coll, size_t bytes);
bool coll_ucg_rule_plan(mca_coll_ucg_module_t *m, int coll, size_t bytes,
                        coll_ucg_call_t *call);
void coll_ucg_call_init(mca_coll_ucg_module_t *m, int coll,
                        coll_ucg_call_t *call, size_t pack_bound);
bool coll_ucg_bytes_call(mca_coll_ucg_module_t *m, int coll,
                         ucg_coll_type_t type, size_t bytes, int root,
                         size_t pack_bound, coll_ucg_call_t *call);
void coll_ucg_call_out(coll_ucg_call_t *call, void *buf, int count,
                       struct ompi_datatype_t *dtype, size_t bytes);
size_t coll_ucg_bytes(struct ompi_datatype_t *dtype, int count);
void *coll_ucg_buf_in(mca_coll_ucg_module_t *m, coll_ucg_call_t *call,
                      int slot, const void *buf, int count,
                      struct ompi_datatype_t *dtype, size_t bytes,
                      bool copy);
void coll_ucg_pack_own_block(coll_ucg_call_t *call, const void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype,
                             size_t bytes, int idx);

/* Test only: whether what coll_ucg_test_fail_point @a point names fails
 * on this rank now (the test_fail_call-th count of @a counter), with one
 * line "failing @a what N" */
bool coll_ucg_test_fail_at(int point, unsigned long *counter,
                           const char *what);

enum {
    COLL_UCG_GO       = 0, /* every rank runs the call on UCG */
    COLL_UCG_DELEGATE = 1, /* every rank hands it to the previous module
                            * (> 0: not an Open MPI return code) */
    COLL_UCG_FAIL     = 2  /* this rank failed where no agreement was
                            * planned */
};

/* Decide and run a prepared blocking call: OMPI_SUCCESS/error of the UCG
 * run (what this rank receives unpacked), or COLL_UCG_DELEGATE (> 0) when
 * the caller hands it to the previous module */
int coll_ucg_go_out(mca_coll_ucg_module_t *m, int coll,
                    struct ompi_communicator_t *comm, coll_ucg_call_t *call);

/* Start a prepared nonblocking call on UCG into @a request, or fail it
 * here and on the other ranks (coll_ucg_nb.c) */
int coll_ucg_nb_start(mca_coll_ucg_module_t *m, int coll,
                      struct ompi_communicator_t *comm,
                      const coll_ucg_call_t *prepared,
                      ompi_request_t **request);

/* Reduce-scatter and scans, blocking and nonblocking (coll_ucg_redscan.c) */
int coll_ucg_redscan_enable(mca_coll_ucg_module_t *m,
                            struct ompi_communicator_t *comm);
void coll_ucg_redscan_set_ops(mca_coll_ucg_module_t *m);
void coll_ucg_redscan_release_prev(mca_coll_ucg_module_t *m);

/* Nonblocking collectives (coll_ucg_nb.c) */
int coll_ucg_nb_enable(mca_coll_ucg_module_t *m,
                       struct ompi_communicator_t *comm);
void coll_ucg_nb_set_ops(mca_coll_ucg_module_t *m);
void coll_ucg_nb_release_prev(mca_coll_ucg_module_t *m);
void coll_ucg_nb_close(void);

/* Persistent collectives (coll_ucg_persist.c; Open MPI 5, nothing with 4.1) */
int coll_ucg_persist_enable(mca_coll_ucg_module_t *m,
                            struct ompi_communicator_t *comm);
void coll_ucg_persist_set_ops(mca_coll_ucg_module_t *m);
void coll_ucg_persist_release_prev(mca_coll_ucg_module_t *m);
void coll_ucg_persist_close(void);

#endif
