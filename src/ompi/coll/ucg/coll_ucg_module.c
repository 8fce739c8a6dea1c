/**
 * coll/ucg module: one per intra-communicator, with a UCG group of the same
 * members.  Every call decides between UCG and the previous module from the
 * arguments MPI requires to be equal on all ranks (counts in bytes, the
 * reduction datatype and op, root), the MCA parameters and the tuning
 * rules (agreed by all ranks at creation), so all ranks take the same path; what one rank alone can fail at is prepared before
 * communicating and agreed on (see "one call" below).
 */
#include "coll_ucg_int.h"

#include "opal/util/output.h"
#include "opal/runtime/opal_progress.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* UCG polls between two opal_progress() calls while a collective waits */
#define COLL_UCG_OPAL_PROGRESS_POLLS 32


/* ---- datatypes and ops ------------------------------------------------- */

static ucg_dtype_t coll_ucg_int_dtype(int is_signed, size_t size)
{
    switch (size) {
    case 1:  return is_signed ? UCG_DT_INT8  : UCG_DT_UINT8;
    case 2:  return is_signed ? UCG_DT_INT16 : UCG_DT_UINT16;
    case 4:  return is_signed ? UCG_DT_INT32 : UCG_DT_UINT32;
    case 8:  return is_signed ? UCG_DT_INT64 : UCG_DT_UINT64;
    default: return UCG_DT_LAST;
    }
}

/* UCG element type of a predefined MPI datatype, UCG_DT_LAST if none */
static ucg_dtype_t coll_ucg_dtype(MPI_Datatype dt)
{
#define COLL_UCG_INT(_mpi, _ctype) \
    if (dt == (_mpi)) { \
        return coll_ucg_int_dtype((_ctype)-1 < (_ctype)0, sizeof(_ctype)); \
    }
#define COLL_UCG_DT(_mpi, _ucg) \
    if (dt == (_mpi)) { \
        return (_ucg); \
    }
    COLL_UCG_INT(MPI_CHAR,               char)
    COLL_UCG_INT(MPI_SIGNED_CHAR,        signed char)
    COLL_UCG_INT(MPI_UNSIGNED_CHAR,      unsigned char)
    COLL_UCG_INT(MPI_BYTE,               unsigned char)
    COLL_UCG_INT(MPI_SHORT,              short)
    COLL_UCG_INT(MPI_UNSIGNED_SHORT,     unsigned short)
    COLL_UCG_INT(MPI_INT,                int)
    COLL_UCG_INT(MPI_UNSIGNED,           unsigned)
    COLL_UCG_INT(MPI_LONG,               long)
    COLL_UCG_INT(MPI_UNSIGNED_LONG,      unsigned long)
    COLL_UCG_INT(MPI_LONG_LONG,          long long)
    COLL_UCG_INT(MPI_LONG_LONG_INT,      long long)
    COLL_UCG_INT(MPI_UNSIGNED_LONG_LONG, unsigned long long)
    COLL_UCG_INT(MPI_INT8_T,             int8_t)
    COLL_UCG_INT(MPI_UINT8_T,            uint8_t)
    COLL_UCG_INT(MPI_INT16_T,            int16_t)
    COLL_UCG_INT(MPI_UINT16_T,           uint16_t)
    COLL_UCG_INT(MPI_INT32_T,            int32_t)
    COLL_UCG_INT(MPI_UINT32_T,           uint32_t)
    COLL_UCG_INT(MPI_INT64_T,            int64_t)
    COLL_UCG_INT(MPI_UINT64_T,           uint64_t)
    COLL_UCG_INT(MPI_AINT,               MPI_Aint)
    COLL_UCG_INT(MPI_OFFSET,             MPI_Offset)
    COLL_UCG_INT(MPI_COUNT,              MPI_Count)
    COLL_UCG_DT(MPI_FLOAT,                  UCG_DT_FLOAT)
    COLL_UCG_DT(MPI_DOUBLE,                 UCG_DT_DOUBLE)
    COLL_UCG_DT(MPI_LONG_DOUBLE,            UCG_DT_LONG_DOUBLE)
    COLL_UCG_DT(MPI_C_COMPLEX,              UCG_DT_FLOAT_COMPLEX)
    COLL_UCG_DT(MPI_C_FLOAT_COMPLEX,        UCG_DT_FLOAT_COMPLEX)
    COLL_UCG_DT(MPI_C_DOUBLE_COMPLEX,       UCG_DT_DOUBLE_COMPLEX)
    COLL_UCG_DT(MPI_C_LONG_DOUBLE_COMPLEX,  UCG_DT_LONG_DOUBLE_COMPLEX)
    COLL_UCG_DT(MPI_FLOAT_INT,              UCG_DT_FLOAT_INT)
    COLL_UCG_DT(MPI_DOUBLE_INT,             UCG_DT_DOUBLE_INT)
    COLL_UCG_DT(MPI_LONG_INT,               UCG_DT_LONG_INT)
    COLL_UCG_DT(MPI_2INT,                   UCG_DT_2INT)
    COLL_UCG_DT(MPI_SHORT_INT,              UCG_DT_SHORT_INT)
    COLL_UCG_DT(MPI_LONG_DOUBLE_INT,        UCG_DT_LONG_DOUBLE_INT)
#undef COLL_UCG_INT
#undef COLL_UCG_DT
    return UCG_DT_LAST;
}

/* Which predefined ops MPI defines on a type of these (MPI 4.0, 6.9.2) */
typedef enum {
    COLL_UCG_OPS_C,       /* the C types: UCG's own table decides */
    COLL_UCG_OPS_F_INT,   /* Fortran integer: arithmetic, min/max, bitwise */
    COLL_UCG_OPS_F_REAL,  /* Fortran floating point: arithmetic, min/max */
    COLL_UCG_OPS_LOGICAL, /* Fortran LOGICAL, C bool: logical ops */
    COLL_UCG_OPS_COMPLEX, /* complex: sum, prod */
    COLL_UCG_OPS_LOC      /* value/index pairs: minloc, maxloc */
} coll_ucg_ops_t;

/*
 * UCG element type of a Fortran predefined type, or of MPI_C_BOOL, by its
 * size in this Open MPI (the Fortran compiler's kinds; 0 when Open MPI
 * was built without Fortran: not carried).  A LOGICAL is an integer of
 * its size to the logical ops (C's rule, as Open MPI's own: nonzero is
 * true, the result is 1 or 0).  REAL*16 and COMPLEX*32 may be a
 * representation no C type has: not carried.
 */
static ucg_dtype_t coll_ucg_dtype_ext(MPI_Datatype dt, coll_ucg_ops_t *ops_p)
{
    static const struct {
        MPI_Datatype   dt;
        coll_ucg_ops_t ops;
    } types[] = {
        {MPI_C_BOOL,             COLL_UCG_OPS_LOGICAL},
        {MPI_LOGICAL,            COLL_UCG_OPS_LOGICAL},
        {MPI_INTEGER,            COLL_UCG_OPS_F_INT},
        {MPI_INTEGER1,           COLL_UCG_OPS_F_INT},
        {MPI_INTEGER2,           COLL_UCG_OPS_F_INT},
        {MPI_INTEGER4,           COLL_UCG_OPS_F_INT},
        {MPI_INTEGER8,           COLL_UCG_OPS_F_INT},
        {MPI_REAL,               COLL_UCG_OPS_F_REAL},
        {MPI_REAL4,              COLL_UCG_OPS_F_REAL},
        {MPI_REAL8,              COLL_UCG_OPS_F_REAL},
        {MPI_DOUBLE_PRECISION,   COLL_UCG_OPS_F_REAL},
        {MPI_COMPLEX,            COLL_UCG_OPS_COMPLEX},
        {MPI_COMPLEX8,           COLL_UCG_OPS_COMPLEX},
        {MPI_COMPLEX16,          COLL_UCG_OPS_COMPLEX},
        {MPI_DOUBLE_COMPLEX,     COLL_UCG_OPS_COMPLEX},
        {MPI_2INTEGER,           COLL_UCG_OPS_LOC},
        {MPI_2REAL,              COLL_UCG_OPS_LOC},
        {MPI_2DOUBLE_PRECISION,  COLL_UCG_OPS_LOC}
    };
    size_t size = 0;
    unsigned i;

    for (i = 0; i < sizeof(types) / sizeof(types[0]); ++i) {
        if (dt == types[i].dt) {
            break;
        }
    }
    if (i == sizeof(types) / sizeof(types[0])) {
        return UCG_DT_LAST;
    }

    ompi_datatype_type_size(dt, &size);
    *ops_p = types[i].ops;
    switch (types[i].ops) {
    case COLL_UCG_OPS_LOGICAL:
    case COLL_UCG_OPS_F_INT:
        return coll_ucg_int_dtype(1, size);
    case COLL_UCG_OPS_F_REAL:
        return (size == sizeof(float))  ? UCG_DT_FLOAT :
               (size == sizeof(double)) ? UCG_DT_DOUBLE : UCG_DT_LAST;
    case COLL_UCG_OPS_COMPLEX:
        return (size == 2 * sizeof(float))  ? UCG_DT_FLOAT_COMPLEX :
               (size == 2 * sizeof(double)) ? UCG_DT_DOUBLE_COMPLEX :
                                              UCG_DT_LAST;
    default:
        if (dt == MPI_2INTEGER) {
            return (size == 2 * sizeof(int)) ? UCG_DT_2INT : UCG_DT_LAST;
        }
        /* MPI_2REAL, MPI_2DOUBLE_PRECISION: pairs of a REAL kind */
        return (size == 2 * sizeof(float))  ? UCG_DT_2FLOAT :
               (size == 2 * sizeof(double)) ? UCG_DT_2DOUBLE : UCG_DT_LAST;
    }
}

/* Whether MPI defines @a op on the types of @a ops (the C types: UCG's
 * table, ucg_op_valid) */
static bool coll_ucg_op_allowed(coll_ucg_ops_t ops, ucg_op_t op)
{
    switch (ops) {
    case COLL_UCG_OPS_F_INT:
        return (op == UCG_OP_SUM) || (op == UCG_OP_PROD) ||
               (op == UCG_OP_MIN) || (op == UCG_OP_MAX) ||
               (op == UCG_OP_BAND) || (op == UCG_OP_BOR) ||
               (op == UCG_OP_BXOR);
    case COLL_UCG_OPS_F_REAL:
        return (op == UCG_OP_SUM) || (op == UCG_OP_PROD) ||
               (op == UCG_OP_MIN) || (op == UCG_OP_MAX);
    case COLL_UCG_OPS_LOGICAL:
        return (op == UCG_OP_LAND) || (op == UCG_OP_LOR) ||
               (op == UCG_OP_LXOR);
    case COLL_UCG_OPS_COMPLEX:
        return (op == UCG_OP_SUM) || (op == UCG_OP_PROD);
    case COLL_UCG_OPS_LOC:
        return (op == UCG_OP_MINLOC) || (op == UCG_OP_MAXLOC);
    default:
        return true;
    }
}

/* UCG op of a predefined MPI op, UCG_OP_LAST if none */
static ucg_op_t coll_ucg_op(MPI_Op op)
{
    if (op == MPI_SUM)    return UCG_OP_SUM;
    if (op == MPI_PROD)   return UCG_OP_PROD;
    if (op == MPI_MIN)    return UCG_OP_MIN;
    if (op == MPI_MAX)    return UCG_OP_MAX;
    if (op == MPI_LAND)   return UCG_OP_LAND;
    if (op == MPI_LOR)    return UCG_OP_LOR;
    if (op == MPI_LXOR)   return UCG_OP_LXOR;
    if (op == MPI_BAND)   return UCG_OP_BAND;
    if (op == MPI_BOR)    return UCG_OP_BOR;
    if (op == MPI_BXOR)   return UCG_OP_BXOR;
    if (op == MPI_MINLOC) return UCG_OP_MINLOC;
    if (op == MPI_MAXLOC) return UCG_OP_MAXLOC;
    return UCG_OP_LAST;
}


static void coll_ucg_user_op_cb(void *arg, const void *in, void *inout,
                                size_t count)
{
    coll_ucg_user_op_arg_t *a = arg;

    /* Open MPI's op.h is not installed (it includes a Fortran header);
     * MPI_Reduce_local runs the user's function: inout = in (op) inout */
    PMPI_Reduce_local(in, inout, (int)count, a->dtype, a->op);
}

/*
 * Fill the type/op fields of @a params for a reduction, or return false to
 * delegate.  Depends only on @a dtype, @a op (equal on all ranks in MPI).
 */
bool coll_ucg_reduce_params(struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op,
                            coll_ucg_user_op_arg_t *user_arg,
                            ucg_coll_params_t *params)
{
    ptrdiff_t lb, extent;
    size_t size;

    coll_ucg_ops_t ops = COLL_UCG_OPS_C;
    int commute;

    params->dtype   = coll_ucg_dtype(dtype);
    params->dt_size = 0;
    params->op      = coll_ucg_op(op);
    if ((op == MPI_REPLACE) || (op == MPI_NO_OP)) {
        return false;
    }
    if (params->dtype == UCG_DT_LAST) {
        params->dtype = coll_ucg_dtype_ext(dtype, &ops);
    }
    if (params->op != UCG_OP_LAST) {
        /* an op MPI does not define on the type: the previous module
         * reports the error, as without coll/ucg */
        return (params->dtype != UCG_DT_LAST) &&
               coll_ucg_op_allowed(ops, params->op) &&
               ucg_op_valid(params->op, params->dtype);
    }

    /* a user function: UCG combines opaque elements through it */
    if (params->dtype == UCG_DT_LAST) {
        ompi_datatype_type_size(dtype, &size);
        ompi_datatype_get_extent(dtype, &lb, &extent);
        if (!ompi_datatype_is_contiguous_memory_layout(dtype, 2) ||
            (lb != 0) || ((ptrdiff_t)size != extent) || (size == 0)) {
            return false;
        }
        params->dtype   = UCG_DT_BYTES;
        params->dt_size = size;
    }
    if (PMPI_Op_commutative(op, &commute) != MPI_SUCCESS) {
        return false;
    }
    user_arg->op                = op;
    user_arg->dtype             = dtype;
    params->op                  = UCG_OP_USER;
    params->user_op.func        = coll_ucg_user_op_cb;
    params->user_op.arg         = user_arg;
    params->user_op.commutative = commute;
    return ucg_op_valid(params->op, params->dtype);
}

/* coll_ucg_reduce_params, from the module's memory of the last call when
 * its datatype and op were the same predefined ones */
static bool coll_ucg_reduce_types(mca_coll_ucg_module_t *m,
                                  struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, coll_ucg_call_t *call)
{
    bool ok;

    if ((dtype == m->last_types.dtype) && (op == m->last_types.op)) {
        call->params.dtype   = m->last_types.ucg_dtype;
        call->params.dt_size = 0;
        call->params.op      = m->last_types.ucg_op;
        return m->last_types.ok;
    }

    ok = coll_ucg_reduce_params(dtype, op, &call->user_arg, &call->params);
    /* a type UCG knows is a predefined one, and so is an op that is not a
     * user's */
    if ((call->params.dtype != UCG_DT_LAST) &&
        (call->params.dtype != UCG_DT_BYTES) &&
        (call->params.op != UCG_OP_USER)) {
        m->last_types.dtype     = dtype;
        m->last_types.op        = op;
        m->last_types.ucg_dtype = call->params.dtype;
        m->last_types.ucg_op    = call->params.op;
        m->last_types.ok        = ok;
    }
    return ok;
}

/* The UCG type of each of the component's collectives (tuning rules) */
static const ucg_coll_type_t coll_ucg_types[COLL_UCG_NUM] = {
    [COLL_UCG_BCAST]     = UCG_COLL_BCAST,
    [COLL_UCG_ALLREDUCE] = UCG_COLL_ALLREDUCE,
    [COLL_UCG_REDUCE]    = UCG_COLL_REDUCE,
    [COLL_UCG_BARRIER]   = UCG_COLL_BARRIER,
    [COLL_UCG_GATHER]    = UCG_COLL_GATHER,
    [COLL_UCG_SCATTER]   = UCG_COLL_SCATTER,
    [COLL_UCG_ALLGATHER] = UCG_COLL_ALLGATHER,
    [COLL_UCG_REDUCE_SCATTER]       = UCG_COLL_REDUCE_SCATTER,
    [COLL_UCG_REDUCE_SCATTER_BLOCK] = UCG_COLL_REDUCE_SCATTER_BLOCK,
    [COLL_UCG_SCAN]                 = UCG_COLL_SCAN,
    [COLL_UCG_EXSCAN]               = UCG_COLL_EXSCAN,
    [COLL_UCG_GATHERV]   = UCG_COLL_GATHERV,
    [COLL_UCG_SCATTERV]  = UCG_COLL_SCATTERV,
    [COLL_UCG_ALLGATHERV] = UCG_COLL_ALLGATHERV,
    [COLL_UCG_ALLTOALL]  = UCG_COLL_ALLTOALL,
    [COLL_UCG_ALLTOALLV] = UCG_COLL_ALLTOALLV,
    [COLL_UCG_IBCAST]     = UCG_COLL_BCAST,
    [COLL_UCG_IALLREDUCE] = UCG_COLL_ALLREDUCE,
    [COLL_UCG_IREDUCE]    = UCG_COLL_REDUCE,
    [COLL_UCG_IBARRIER]   = UCG_COLL_BARRIER,
    [COLL_UCG_IGATHER]    = UCG_COLL_GATHER,
    [COLL_UCG_ISCATTER]   = UCG_COLL_SCATTER,
    [COLL_UCG_IALLGATHER] = UCG_COLL_ALLGATHER,
    [COLL_UCG_IREDUCE_SCATTER]       = UCG_COLL_REDUCE_SCATTER,
    [COLL_UCG_IREDUCE_SCATTER_BLOCK] = UCG_COLL_REDUCE_SCATTER_BLOCK,
    [COLL_UCG_ISCAN]                 = UCG_COLL_SCAN,
    [COLL_UCG_IEXSCAN]               = UCG_COLL_EXSCAN,
    [COLL_UCG_IGATHERV]   = UCG_COLL_GATHERV,
    [COLL_UCG_ISCATTERV]  = UCG_COLL_SCATTERV,
    [COLL_UCG_IALLGATHERV] = UCG_COLL_ALLGATHERV,
    [COLL_UCG_IALLTOALL]  = UCG_COLL_ALLTOALL,
    [COLL_UCG_IALLTOALLV] = UCG_COLL_ALLTOALLV,
    [COLL_UCG_BCAST_INIT]     = UCG_COLL_BCAST,
    [COLL_UCG_ALLREDUCE_INIT] = UCG_COLL_ALLREDUCE,
    [COLL_UCG_REDUCE_INIT]    = UCG_COLL_REDUCE,
    [COLL_UCG_BARRIER_INIT]   = UCG_COLL_BARRIER,
    [COLL_UCG_GATHER_INIT]    = UCG_COLL_GATHER,
    [COLL_UCG_SCATTER_INIT]   = UCG_COLL_SCATTER,
    [COLL_UCG_ALLGATHER_INIT] = UCG_COLL_ALLGATHER,
    [COLL_UCG_REDUCE_SCATTER_INIT]       = UCG_COLL_REDUCE_SCATTER,
    [COLL_UCG_REDUCE_SCATTER_BLOCK_INIT] = UCG_COLL_REDUCE_SCATTER_BLOCK,
    [COLL_UCG_SCAN_INIT]                 = UCG_COLL_SCAN,
    [COLL_UCG_EXSCAN_INIT]               = UCG_COLL_EXSCAN,
    [COLL_UCG_GATHERV_INIT]    = UCG_COLL_GATHERV,
    [COLL_UCG_SCATTERV_INIT]   = UCG_COLL_SCATTERV,
    [COLL_UCG_ALLGATHERV_INIT] = UCG_COLL_ALLGATHERV,
    [COLL_UCG_ALLTOALL_INIT]   = UCG_COLL_ALLTOALL,
    [COLL_UCG_ALLTOALLV_INIT]  = UCG_COLL_ALLTOALLV
};

/* Whether UCG can and may run this collective of @a bytes per member (the
 * MCA parameters); a barrier moves none, an alltoallv has no size every
 * rank knows (0 here, may be 0 everywhere) */
bool coll_ucg_use(mca_coll_ucg_module_t *m, int coll, size_t bytes)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;

    return (m->group != NULL) && c->coll_enable[coll] &&
           ((coll == COLL_UCG_BARRIER) || (coll == COLL_UCG_IBARRIER) ||
            mca_coll_ucg_coll_is_alltoallv(coll) ||
            (coll == COLL_UCG_BARRIER_INIT) || (bytes > 0)) &&
           ((c->coll_max_bytes[coll] == 0) ||
            (bytes <= c->coll_max_bytes[coll]));
}

/* What the tuning rules say of a call UCG may run; counts the calls they
 * hand to the previous module.  Every rank decides the same: the rules
 * were agreed at creation, and the size, group size and largest host are
 * the same everywhere. */
static ucg_rule_action_t coll_ucg_rule(mca_coll_ucg_module_t *m, int coll,
                                       size_t bytes)
{
    ucg_rule_action_t action;

    if (m->last_rule[coll].bytes == bytes) {
        action = m->last_rule[coll].action;
    } else {
        action = ucg_rules_lookup(m->rules, coll_ucg_types[coll],
                                  m->comm_size, m->max_ppn, bytes);
        m->last_rule[coll].bytes  = bytes;
        m->last_rule[coll].action = action;
    }
    if (action == UCG_RULE_PREV) {
        ++m->n_handed[coll];
    }
    return action;
}

/* The tuning rules' choice for a call into call->plan; false when they hand
 * it to the previous module */
bool coll_ucg_rule_plan(mca_coll_ucg_module_t *m, int coll, size_t bytes,
                        coll_ucg_call_t *call)
{
    ucg_rule_action_t action = coll_ucg_rule(m, coll, bytes);

    call->plan = (action == UCG_RULE_FLAT) ? UCG_PLAN_FLAT : UCG_PLAN_AUTO;
    return action != UCG_RULE_PREV;
}

/*
 * Whether the tuning rules hand this call to the previous module, decided
 * before anything is prepared (counted as coll_ucg_rule does): the
 * previous module's small collectives take a few hundred nanoseconds, of
 * which the preparation of a call UCG does not run took a fifth.  Only
 * when the result is the same as the preparation's: UCG may run the call
 * (coll_ucg_use), a reduction's datatype and op are the predefined ones it
 * took last (a reduction UCG cannot run is counted as delegated, not
 * handed), and the rules' action for this size is known.
 */
static bool coll_ucg_handed_early(mca_coll_ucg_module_t *m, int coll,
                                  size_t bytes, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op)
{
    if ((m->last_rule[coll].bytes != bytes) ||
        (m->last_rule[coll].action != UCG_RULE_PREV) ||
        ((op != NULL) &&
         ((dtype != m->last_types.dtype) || (op != m->last_types.op) ||
          !m->last_types.ok)) ||
        !coll_ucg_use(m, coll, bytes)) {
        return false;
    }
    ++m->n_handed[coll];
    return true;
}

size_t coll_ucg_bytes(struct ompi_datatype_t *dtype, int count)
{
    size_t size;

    ompi_datatype_type_size(dtype, &size);
    return (count > 0) ? size * (size_t)count : 0;
}

/* Parameters with counts per member (UCG copies them at init) are those
 * of the cached request only when both have counts and the caller found
 * them the same (@a counts_same: a vector collective's, coll_ucg_v_same;
 * the cached parameters' arrays are gone, only whether they were there
 * counts) */
static bool coll_ucg_params_equal(const ucg_coll_params_t *a,
                                  const ucg_coll_params_t *b,
                                  bool counts_same)
{
    bool a_counts = (a->scounts != NULL) || (a->rcounts != NULL);
    bool b_counts = (b->scounts != NULL) || (b->rcounts != NULL);

    return ((!a_counts && !b_counts) ||
            (a_counts && b_counts && counts_same)) &&
           (a->type == b->type) && (a->root == b->root) &&
           (a->sbuf == b->sbuf) && (a->rbuf == b->rbuf) &&
           (a->count == b->count) && (a->dtype == b->dtype) &&
           (a->dt_size == b->dt_size) && (a->op == b->op) &&
           (a->op != UCG_OP_USER);
}

/* The parts of @a a and @a b every rank has in common (MPI requires them
 * equal): no buffers, no op handle; not the count of a vector collective,
 * which is each rank's own */
static bool coll_ucg_common_equal(const ucg_coll_params_t *a,
                                  const ucg_coll_params_t *b)
{
    return (a->type == b->type) && (a->root == b->root) &&
           ((a->count == b->count) || coll_ucg_type_is_v(a->type)) &&
           (a->dtype == b->dtype) &&
           (a->dt_size == b->dt_size) && (a->op == b->op) &&
           ((a->op != UCG_OP_USER) ||
            (a->user_op.commutative == b->user_op.commutative));
}

static void coll_ucg_uncache(mca_coll_ucg_module_t *m, int coll)
{
    if (m->cached[coll] != NULL) {
        ucg_coll_finalize(m->cached[coll]);
        m->cached[coll] = NULL;
    }
}

/* ---- one call: local preparation, agreement, run ----------------------- */

/*
 * A collective must not fail on one rank only: the others would wait for it
 * forever.  So every resource a call needs on this rank (pack buffers, the
 * UCG request) is acquired before any communication, and when a call may
 * need new resources on some rank, all ranks agree (the previous module's
 * allreduce) before they communicate: if any rank could not prepare, all of
 * them release what they have and delegate the call to the previous module.
 *
 * Whether a call may need new resources is decided from values equal on all
 * ranks: parameters (without buffers) not among the last COLL_UCG_KNOWN
 * sets of this type all ranks prepared, or packed data that may not fit the
 * module's scratch buffers (bytes * comm_size > COLL_UCG_SCRATCH_SIZE,
 * whatever the local layout).  Otherwise the call reuses what was prepared
 * before: the cached request, or a new one made from the request UCG
 * recycles and the plan it keeps (UCG never drops a group's plans), and
 * the scratch buffers.
 */


/* Whether all ranks prepared a call of these parameters before */
static bool coll_ucg_known(mca_coll_ucg_module_t *m, int coll,
                           const ucg_coll_params_t *params)
{
    unsigned i;

    for (i = 0; i < m->num_known[coll]; ++i) {
        if (coll_ucg_common_equal(&m->known[coll][i], params)) {
            return true;
        }
    }
    return false;
}

void coll_ucg_call_init(mca_coll_ucg_module_t *m, int coll,
                        coll_ucg_call_t *call, size_t pack_bound)
{
    call->sb.tmp   = call->rb.tmp   = NULL;
    call->sb.owned = call->rb.owned = false;
    call->req      = NULL;
    call->ok       = true;
    call->agree    = !coll_ucg_known(m, coll, &call->params) ||
                     (pack_bound > COLL_UCG_SCRATCH_SIZE);
}

/* Address of @a count elements of @a dtype at @a buf as @a bytes contiguous
 * bytes: the user buffer when contiguous, else a packed copy (made when @a
 * copy) in scratch buffer @a slot or, beyond it, in a new allocation.
 * NULL on failure (call->ok is then false) */
void *coll_ucg_buf_in(mca_coll_ucg_module_t *m, coll_ucg_call_t *call,
                      int slot, const void *buf, int count,
                      struct ompi_datatype_t *dtype, size_t bytes,
                      bool copy)
{
    coll_ucg_buf_t *b = (slot == 0) ? &call->sb : &call->rb;
    ptrdiff_t true_lb, true_extent;
    int pos = 0;

    if (ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
        ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
        return (char*)buf + true_lb;
    }
    if (bytes > INT_MAX) {
        opal_output(0, "coll:ucg: cannot pack %zu bytes", bytes);
        goto err;
    }
    if ((bytes <= COLL_UCG_SCRATCH_SIZE) && (m->scratch[slot] != NULL) &&
        !call->nb) {
        b->tmp = m->scratch[slot];
    } else {
        b->tmp   = malloc(bytes);
        b->owned = true;
        if (b->tmp == NULL) {
            opal_output(0, "coll:ucg: cannot allocate %zu bytes", bytes);
            b->owned = false;
            goto err;
        }
    }
    if (copy) {
        b->src   = buf;
        b->count = count;
        b->dtype = dtype;
        b->bytes = bytes;
        coll_ucg_call_uses(call, dtype);
        if (PMPI_Pack(buf, count, dtype, b->tmp, (int)bytes, &pos,
                      MPI_COMM_SELF) != MPI_SUCCESS) {
            goto err;
        }
    }
    return b->tmp;

err:
    call->ok = false;
    return NULL;
}

/* Release the packed copy, if any */
static void coll_ucg_buf_release(coll_ucg_buf_t *b)
{
    if (b->owned) {
        free(b->tmp);
    }
    b->tmp   = NULL;
    b->owned = false;
    b->src   = NULL;
}

void coll_ucg_call_uses(coll_ucg_call_t *call, struct ompi_datatype_t *dtype)
{
    int i;

    if ((dtype == NULL) || ompi_datatype_is_predefined(dtype)) {
        return;
    }
    for (i = 0; i < COLL_UCG_CALL_DTYPES; ++i) {
        if ((call->dtypes[i] == dtype) || (call->dtypes[i] == NULL)) {
            call->dtypes[i] = dtype;
            return;
        }
    }
    /* cannot happen (see COLL_UCG_CALL_DTYPES); a call that could not keep
     * its datatype alive must not run */
    opal_output(0, "coll:ucg: a call using more than %d derived datatypes",
                COLL_UCG_CALL_DTYPES);
    call->ok = false;
}

/* The own block call->own into the packed receive buffer */
static void coll_ucg_own_pack(coll_ucg_call_t *call)
{
    coll_ucg_own_t *own = &call->own;
    ptrdiff_t lb, extent;
    int pos = 0;

    ompi_datatype_get_extent(own->rdtype, &lb, &extent);
    if (PMPI_Pack((const char*)own->rbuf +
                  (ptrdiff_t)own->idx * own->rcount * extent,
                  own->rcount, own->rdtype,
                  (char*)call->rb.tmp + own->bytes * own->idx,
                  (int)own->bytes, &pos, MPI_COMM_SELF) != MPI_SUCCESS) {
        call->ok = false;
    }
}

/* Pack block @a idx of @a rbuf (@a rcount elements of @a rdtype) into the
 * packed receive buffer, @a bytes a block: the own block of an in-place
 * gather (root) or allgather that UCG finds there */
void coll_ucg_pack_own_block(coll_ucg_call_t *call, const void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype,
                             size_t bytes, int idx)
{
    if (!call->ok || (call->rb.tmp == NULL)) {
        return;
    }

    call->own.set    = true;
    call->own.rbuf   = rbuf;
    call->own.rcount = rcount;
    call->own.rdtype = rdtype;
    call->own.bytes  = bytes;
    call->own.idx    = idx;
    coll_ucg_call_uses(call, rdtype);
    coll_ucg_own_pack(call);
}

/* Test only (coll_ucg_test_fail_rank/_call/_point): whether what @a point
 * names fails here, at the test_fail_call-th time @a counter counts; one
 * line names it (@a what, then the count) */
bool coll_ucg_test_fail_at(int point, unsigned long *counter,
                           const char *what)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;

    if ((c->test_fail_rank < 0) || (c->test_fail_point != point) ||
        (ompi_comm_rank(&ompi_mpi_comm_world.comm) != c->test_fail_rank) ||
        (++*counter != (unsigned long)c->test_fail_call)) {
        return false;
    }
    opal_output(0, "coll:ucg: test: failing %s %lu on this rank", what,
                *counter);
    return true;
}

/* Whether this call's preparation is made to fail (test only) */
static bool coll_ucg_test_fail(void)
{
    return coll_ucg_test_fail_at(COLL_UCG_TEST_FAIL_PREPARE,
                                 &mca_coll_ucg_component.test_agreed_calls,
                                 "the preparation of agreed call");
}

/* Whether the start of this blocking call, which all ranks decided to run
 * on UCG, is made to fail (test only) */
static bool coll_ucg_test_fail_start(void)
{
    return coll_ucg_test_fail_at(COLL_UCG_TEST_FAIL_START,
                                 &mca_coll_ucg_component.test_started,
                                 "the start of UCG call");
}

/* The UCG request of the call: the cached one if its parameters are the
 * same, else a new one */
static void coll_ucg_prepare_req(mca_coll_ucg_module_t *m, int coll,
                                 coll_ucg_call_t *call)
{
    ucs_status_t status;

    if (!call->ok) {
        return;
    }
    if (call->agree && coll_ucg_test_fail()) {
        call->ok = false;
        return;
    }

    call->req = m->cached[coll];
    if ((call->req != NULL) && (m->cached_plan[coll] == call->plan) &&
        coll_ucg_params_equal(&m->cached_params[coll], &call->params,
                              coll_ucg_v_same(m, coll, call))) {
        ++m->n_reused[coll];
        return;
    }

    /* released first: UCG makes the new request from it */
    coll_ucg_uncache(m, coll);
    status = ucg_coll_init_plan(m->group, &call->params, call->plan,
                                &call->req);
    if (status != UCS_OK) {
        opal_output(0, "coll:ucg: %s on comm %s: ucg_coll_init failed: %s",
                    mca_coll_ucg_coll_names[coll], m->comm_name,
                    ucs_status_string(status));
        call->req = NULL;
        call->ok  = false;
        return;
    }
    /* A user op's argument lives on the caller's stack, and the counts of
     * reduce_scatter are not compared: not kept; those of gatherv,
     * scatterv and allgatherv are, with a copy of their counts */
    if ((call->params.op != UCG_OP_USER) &&
        (((call->params.rcounts == NULL) && (call->params.scounts == NULL)) ||
         coll_ucg_v_keep(m, coll, call))) {
        m->cached[coll]        = call->req;
        m->cached_params[coll] = call->params;
        m->cached_plan[coll]   = call->plan;
    }
}

/* Release the request of a call that does not run */
void coll_ucg_release_req(mca_coll_ucg_module_t *m, int coll,
                          coll_ucg_call_t *call)
{
    if (call->req == NULL) {
        return;
    }
    if (call->req == m->cached[coll]) {
        m->cached[coll] = NULL;
    }
    ucg_coll_finalize(call->req);
    call->req = NULL;
}

/*
 * After the local preparation: the agreement, when planned.  On
 * COLL_UCG_DELEGATE and COLL_UCG_FAIL the request is released; the caller
 * releases its buffers without unpacking.
 */
static int coll_ucg_decide(mca_coll_ucg_module_t *m, int coll,
                           struct ompi_communicator_t *comm,
                           coll_ucg_call_t *call)
{
    int ok = call->ok;

    if (call->agree) {
        ++m->n_agreed[coll];
        if (m->prev_allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm,
                              m->prev_allreduce_module) != OMPI_SUCCESS) {
            /* the previous module is broken: no path is safe */
            coll_ucg_release_req(m, coll, call);
            return COLL_UCG_FAIL;
        }
        /* the same on every rank: known parameters are symmetric */
        if (ok && !coll_ucg_known(m, coll, &call->params)) {
            m->known[coll][m->next_known[coll]] = call->params;
            m->next_known[coll] = (m->next_known[coll] + 1) % COLL_UCG_KNOWN;
            if (m->num_known[coll] < COLL_UCG_KNOWN) {
                ++m->num_known[coll];
            }
        }
        if (!ok) {
            if (mca_coll_ucg_component.verbose >= 1) {
                opal_output(0, "coll:ucg: %s on comm %s: a rank could not "
                            "prepare it, all ranks delegate",
                            mca_coll_ucg_coll_names[coll], m->comm_name);
            }
            coll_ucg_release_req(m, coll, call);
            ++m->n_delegated[coll];
            return COLL_UCG_DELEGATE;
        }
        return COLL_UCG_GO;
    }

    if (!ok) {
        /* Nothing new was needed, yet preparing failed (UCG did not
         * recycle, or a datatype does not pack): the other ranks run the
         * call on UCG, where it fails for them too (an abort) */
        opal_output(0, "coll:ucg: %s on comm %s failed on this rank without "
                    "new resources; the call fails on the other ranks too",
                    mca_coll_ucg_coll_names[coll], m->comm_name);
        coll_ucg_release_req(m, coll, call);
        ucg_group_abort_next(m->group, UCS_ERR_NO_MEMORY);
        return COLL_UCG_FAIL;
    }
    return COLL_UCG_GO;
}

/* Run a prepared collective on UCG, progressing Open MPI every
 * COLL_UCG_OPAL_PROGRESS_POLLS polls while it waits (a peer may need our
 * PML progress before it joins the collective; on every poll it would cost
 * more than the collective).  With mpi_yield_when_idle (which Open MPI
 * sets on an oversubscribed node) it yields the CPU between polls, as
 * opal_progress() does: with more ranks than cores, the rank it waits for
 * may need this CPU to send. */
static int coll_ucg_run(mca_coll_ucg_module_t *m, int coll,
                        coll_ucg_call_t *call)
{
    ucg_coll_h req = call->req;
    unsigned polls = 0;
    ucs_status_t status;

    if (coll_ucg_test_fail_start()) {
        /* as ucg_coll_start does when it fails */
        status = UCS_ERR_NO_MEMORY;
        ucg_group_abort_next(m->group, status);
    } else {
        status = ucg_coll_start(req);
    }
    if (status == UCS_OK) {
        while ((status = ucg_coll_test(req)) == UCS_INPROGRESS) {
            if (++polls == COLL_UCG_OPAL_PROGRESS_POLLS) {
                polls = 0;
                opal_progress();
            } else if (opal_progress_yield_when_idle) {
                sched_yield();
                ++m->n_yields[coll];
            }
        }
    }
    if ((req != m->cached[coll]) || (status != UCS_OK)) {
        coll_ucg_release_req(m, coll, call);
    }
    call->req = NULL;

    if (status != UCS_OK) {
        opal_output(0, "coll:ucg: %s on comm %s failed: %s",
                    mca_coll_ucg_coll_names[coll], m->comm_name,
                    ucs_status_string(status));
        return OMPI_ERROR;
    }
    ++m->n_ucg[coll];
    if (call->plan == UCG_PLAN_FLAT) {
        ++m->n_flat[coll];
    }
    return OMPI_SUCCESS;
}

/* Decide and run: OMPI_SUCCESS/error of the UCG run, or
 * COLL_UCG_DELEGATE when the caller delegates */
static int coll_ucg_go(mca_coll_ucg_module_t *m, int coll,
                       struct ompi_communicator_t *comm, coll_ucg_call_t *call)
{
    coll_ucg_prepare_req(m, coll, call);
    switch (coll_ucg_decide(m, coll, comm, call)) {
    case COLL_UCG_GO:
        return coll_ucg_run(m, coll, call);
    case COLL_UCG_DELEGATE:
        return COLL_UCG_DELEGATE;
    default:
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
}

/* The call of a collective that moves @a bytes as bytes (the user's
 * datatype packed when not contiguous) with @a root; false (counted as
 * delegated, or as handed over by the tuning rules) when UCG does not take
 * it.  @a pack_bound: the most bytes this
 * rank packs */
bool coll_ucg_bytes_call(mca_coll_ucg_module_t *m, int coll,
                         ucg_coll_type_t type, size_t bytes, int root,
                         size_t pack_bound, coll_ucg_call_t *call)
{
    if (!coll_ucg_use(m, coll, bytes)) {
        ++m->n_delegated[coll];
        return false;
    }
    if (!coll_ucg_rule_plan(m, coll, bytes, call)) {
        return false;
    }

    call->params.type  = type;
    call->params.count = bytes;
    call->params.dtype = UCG_DT_UINT8;
    call->params.root  = root;
    coll_ucg_call_init(m, coll, call, pack_bound);
    return true;
}

/* What this rank finds in @a buf after the call (@a count elements of
 * @a dtype, @a bytes packed): unpacked there from the packed copy, if any */
void coll_ucg_call_out(coll_ucg_call_t *call, void *buf, int count,
                       struct ompi_datatype_t *dtype, size_t bytes)
{
    call->out.buf   = buf;
    call->out.count = count;
    call->out.dtype = dtype;
    call->out.bytes = bytes;
    call->out.recv  = true;
    if (call->rb.tmp != NULL) {
        coll_ucg_call_uses(call, dtype);
    }
}

bool coll_ucg_call_repack(coll_ucg_call_t *call)
{
    coll_ucg_buf_t *bufs[2] = {&call->sb, &call->rb};
    int slot, pos;

    for (slot = 0; call->ok && (slot < 2); ++slot) {
        pos = 0;
        if ((bufs[slot]->src != NULL) && (bufs[slot]->tmp != NULL) &&
            (PMPI_Pack(bufs[slot]->src, bufs[slot]->count, bufs[slot]->dtype,
                       bufs[slot]->tmp, (int)bufs[slot]->bytes, &pos,
                       MPI_COMM_SELF) != MPI_SUCCESS)) {
            call->ok = false;
        }
    }
    if (call->ok && call->own.set) {
        coll_ucg_own_pack(call);
    }
    if (call->ok && call->v.active && !coll_ucg_v_repack(call)) {
        call->ok = false;
    }
    if (call->ok && (call->a2av != NULL) && !coll_ucg_alltoallv_repack(call)) {
        call->ok = false;
    }
    return call->ok;
}

int coll_ucg_call_unpack(coll_ucg_call_t *call)
{
    int pos = 0;

    if ((call->a2av != NULL) &&
        (coll_ucg_alltoallv_unpack(call) != OMPI_SUCCESS)) {
        return OMPI_ERROR;
    }
    if (call->v.active && (coll_ucg_v_unpack(call) != OMPI_SUCCESS)) {
        return OMPI_ERROR;
    }
    if (call->out.recv && (call->rb.tmp != NULL) &&
        (PMPI_Unpack(call->rb.tmp, (int)call->out.bytes, &pos,
                     call->out.buf, call->out.count, call->out.dtype,
                     MPI_COMM_SELF) != MPI_SUCCESS)) {
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

void coll_ucg_call_release(coll_ucg_call_t *call)
{
    if (call->a2av != NULL) {
        coll_ucg_alltoallv_release(call);
    }
    if (call->v.active) {
        coll_ucg_v_release(call);
    }
    coll_ucg_buf_release(&call->sb);
    coll_ucg_buf_release(&call->rb);
    free(call->counts);
    call->counts = NULL;
}

int coll_ucg_call_finish(coll_ucg_call_t *call, int ret)
{
    if (ret == OMPI_SUCCESS) {
        ret = coll_ucg_call_unpack(call);
    }
    coll_ucg_call_release(call);
    return ret;
}


/* ---- collectives: preparation (shared with the nonblocking ones) -------- */

bool coll_ucg_bcast_prep(mca_coll_ucg_module_t *m, int coll, void *buff,
                         int count, struct ompi_datatype_t *dtype, int root,
                         coll_ucg_call_t *call)
{
    size_t bytes = coll_ucg_bytes(dtype, count);

    if (!coll_ucg_bytes_call(m, coll, UCG_COLL_BCAST, bytes, root, bytes,
                             call)) {
        return false;
    }
    call->params.rbuf = coll_ucg_buf_in(m, call, 1, buff, count, dtype, bytes,
                                        m->comm_rank == root);
    if (m->comm_rank != root) {
        coll_ucg_call_out(call, buff, count, dtype, bytes);
    }
    return true;
}

/* Allreduce and reduce (root: reduce's); false when UCG does not take them
 * (size, datatype or operation) */
bool coll_ucg_reduction_prep(mca_coll_ucg_module_t *m, int coll,
                             ucg_coll_type_t type, const void *sbuf,
                             void *rbuf, int count,
                             struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, int root,
                             coll_ucg_call_t *call)
{
    size_t bytes = coll_ucg_bytes(dtype, count);

    if (!coll_ucg_use(m, coll, bytes) ||
        !coll_ucg_reduce_types(m, dtype, op, call)) {
        ++m->n_delegated[coll];
        return false;
    }
    if (!coll_ucg_rule_plan(m, coll, bytes, call)) {
        return false;
    }

    call->params.type  = type;
    call->params.root  = root;
    call->params.count = count;
    coll_ucg_call_init(m, coll, call, 0);
    call->params.sbuf  = (sbuf == MPI_IN_PLACE) ? UCG_IN_PLACE : sbuf;
    call->params.rbuf  = rbuf;
    if (call->params.op == UCG_OP_USER) {
        coll_ucg_call_uses(call, dtype); /* by the user op's callback */
    }
    return true;
}

bool coll_ucg_barrier_prep(mca_coll_ucg_module_t *m, int coll,
                           coll_ucg_call_t *call)
{
    if (!coll_ucg_use(m, coll, 0)) {
        ++m->n_delegated[coll];
        return false;
    }
    if (!coll_ucg_rule_plan(m, coll, 0, call)) {
        return false;
    }
    call->params.type  = UCG_COLL_BARRIER;
    call->params.dtype = UCG_DT_UINT8;
    coll_ucg_call_init(m, coll, call, 0);
    return true;
}

bool coll_ucg_gather_prep(mca_coll_ucg_module_t *m, int coll,
                          const void *sbuf, int scount,
                          struct ompi_datatype_t *sdtype, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdtype,
                          int root, coll_ucg_call_t *call)
{
    int is_root = (m->comm_rank == root);
    size_t bytes;

    /* the block size in bytes is the same everywhere; the layouts are not */
    bytes = (is_root) ? coll_ucg_bytes(rdtype, rcount) :
                        coll_ucg_bytes(sdtype, scount);
    if (!coll_ucg_bytes_call(m, coll, UCG_COLL_GATHER, bytes, root,
                             bytes * m->comm_size, call)) {
        return false;
    }

    if (is_root) {
        call->params.rbuf = coll_ucg_buf_in(m, call, 1, rbuf,
                                            rcount * m->comm_size, rdtype,
                                            bytes * m->comm_size, false);
        coll_ucg_call_out(call, rbuf, rcount * m->comm_size, rdtype,
                          bytes * m->comm_size);
        if (sbuf == MPI_IN_PLACE) {
            coll_ucg_pack_own_block(call, rbuf, rcount, rdtype, bytes, root);
        }
    }
    if (sbuf == MPI_IN_PLACE) {
        call->params.sbuf = UCG_IN_PLACE;
    } else {
        call->params.sbuf = coll_ucg_buf_in(m, call, 0, sbuf, scount, sdtype,
                                            bytes, true);
    }
    return true;
}

bool coll_ucg_scatter_prep(mca_coll_ucg_module_t *m, int coll,
                           const void *sbuf, int scount,
                           struct ompi_datatype_t *sdtype, void *rbuf,
                           int rcount, struct ompi_datatype_t *rdtype,
                           int root, coll_ucg_call_t *call)
{
    int is_root = (m->comm_rank == root);
    size_t bytes;

    bytes = (is_root) ? coll_ucg_bytes(sdtype, scount) :
                        coll_ucg_bytes(rdtype, rcount);
    if (!coll_ucg_bytes_call(m, coll, UCG_COLL_SCATTER, bytes, root,
                             bytes * m->comm_size, call)) {
        return false;
    }

    if (is_root) {
        call->params.sbuf = coll_ucg_buf_in(m, call, 0, sbuf,
                                            scount * m->comm_size, sdtype,
                                            bytes * m->comm_size, true);
    }
    if (rbuf == MPI_IN_PLACE) {
        call->params.rbuf = UCG_IN_PLACE;
    } else {
        call->params.rbuf = coll_ucg_buf_in(m, call, 1, rbuf, rcount, rdtype,
                                            bytes, false);
        coll_ucg_call_out(call, rbuf, rcount, rdtype, bytes);
    }
    return true;
}

bool coll_ucg_allgather_prep(mca_coll_ucg_module_t *m, int coll,
                             const void *sbuf, int scount,
                             struct ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype,
                             coll_ucg_call_t *call)
{
    size_t bytes = coll_ucg_bytes(rdtype, rcount);

    if (!coll_ucg_bytes_call(m, coll, UCG_COLL_ALLGATHER, bytes, 0,
                             bytes * m->comm_size, call)) {
        return false;
    }

    call->params.rbuf = coll_ucg_buf_in(m, call, 1, rbuf,
                                        rcount * m->comm_size, rdtype,
                                        bytes * m->comm_size, false);
    coll_ucg_call_out(call, rbuf, rcount * m->comm_size, rdtype,
                      bytes * m->comm_size);
    if (sbuf == MPI_IN_PLACE) {
        call->params.sbuf = UCG_IN_PLACE;
        coll_ucg_pack_own_block(call, rbuf, rcount, rdtype, bytes,
                                m->comm_rank);
    } else {
        call->params.sbuf = coll_ucg_buf_in(m, call, 0, sbuf, scount, sdtype,
                                            bytes, true);
    }
    return true;
}


/* ---- collectives ------------------------------------------------------- */

/* Run a prepared call: OMPI_SUCCESS/error of the UCG run (what this rank
 * receives unpacked), or COLL_UCG_DELEGATE when the caller delegates */
int coll_ucg_go_out(mca_coll_ucg_module_t *m, int coll,
                    struct ompi_communicator_t *comm, coll_ucg_call_t *call)
{
    return coll_ucg_call_finish(call, coll_ucg_go(m, coll, comm, call));
}

static int coll_ucg_bcast(void *buff, int count, struct ompi_datatype_t *dtype,
                          int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    int ret;

    if (!coll_ucg_handed_early(m, COLL_UCG_BCAST,
                               coll_ucg_bytes(dtype, count), NULL, NULL)) {
        coll_ucg_call_t call = {{0}};

        if (coll_ucg_bcast_prep(m, COLL_UCG_BCAST, buff, count, dtype, root,
                                &call)) {
            ret = coll_ucg_go_out(m, COLL_UCG_BCAST, comm, &call);
            if (ret != COLL_UCG_DELEGATE) {
                return ret;
            }
        }
    }
    return m->prev_bcast(buff, count, dtype, root, comm, m->prev_bcast_module);
}

static int coll_ucg_allreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op,
                              struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    int ret;

    if (!coll_ucg_handed_early(m, COLL_UCG_ALLREDUCE,
                               coll_ucg_bytes(dtype, count), dtype, op)) {
        coll_ucg_call_t call = {{0}};

        if (coll_ucg_reduction_prep(m, COLL_UCG_ALLREDUCE, UCG_COLL_ALLREDUCE,
                                    sbuf, rbuf, count, dtype, op, 0, &call)) {
            ret = coll_ucg_go_out(m, COLL_UCG_ALLREDUCE, comm, &call);
            if (ret != COLL_UCG_DELEGATE) {
                return ret;
            }
        }
    }
    return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm,
                             m->prev_allreduce_module);
}

static int coll_ucg_reduce(const void *sbuf, void *rbuf, int count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    int ret;

    if (!coll_ucg_handed_early(m, COLL_UCG_REDUCE,
                               coll_ucg_bytes(dtype, count), dtype, op)) {
        coll_ucg_call_t call = {{0}};

        if (coll_ucg_reduction_prep(m, COLL_UCG_REDUCE, UCG_COLL_REDUCE, sbuf,
                                    rbuf, count, dtype, op, root, &call)) {
            ret = coll_ucg_go_out(m, COLL_UCG_REDUCE, comm, &call);
            if (ret != COLL_UCG_DELEGATE) {
                return ret;
            }
        }
    }
    return m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                          m->prev_reduce_module);
}

static int coll_ucg_barrier(struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    int ret;

    if (!coll_ucg_handed_early(m, COLL_UCG_BARRIER, 0, NULL, NULL)) {
        coll_ucg_call_t call = {{0}};

        if (coll_ucg_barrier_prep(m, COLL_UCG_BARRIER, &call)) {
            ret = coll_ucg_go_out(m, COLL_UCG_BARRIER, comm, &call);
            if (ret != COLL_UCG_DELEGATE) {
                return ret;
            }
        }
    }
    return m->prev_barrier(comm, m->prev_barrier_module);
}

static int coll_ucg_gather(const void *sbuf, int scount,
                           struct ompi_datatype_t *sdtype, void *rbuf,
                           int rcount, struct ompi_datatype_t *rdtype,
                           int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    /* the block size in bytes is the same everywhere */
    size_t bytes             = (m->comm_rank == root) ?
                               coll_ucg_bytes(rdtype, rcount) :
                               coll_ucg_bytes(sdtype, scount);
    int ret;

    if (!coll_ucg_handed_early(m, COLL_UCG_GATHER, bytes, NULL, NULL)) {
        coll_ucg_call_t call = {{0}};

        if (coll_ucg_gather_prep(m, COLL_UCG_GATHER, sbuf, scount, sdtype,
                                 rbuf, rcount, rdtype, root, &call)) {
            ret = coll_ucg_go_out(m, COLL_UCG_GATHER, comm, &call);
            if (ret != COLL_UCG_DELEGATE) {
                return ret;
            }
        }
    }
    return m->prev_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                          comm, m->prev_gather_module);
}

static int coll_ucg_scatter(const void *sbuf, int scount,
                            struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype,
                            int root, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    /* the block size in bytes is the same everywhere */
    size_t bytes             = (m->comm_rank == root) ?
                               coll_ucg_bytes(sdtype, scount) :
                               coll_ucg_bytes(rdtype, rcount);
    int ret;

    if (!coll_ucg_handed_early(m, COLL_UCG_SCATTER, bytes, NULL, NULL)) {
        coll_ucg_call_t call = {{0}};

        if (coll_ucg_scatter_prep(m, COLL_UCG_SCATTER, sbuf, scount, sdtype,
                                  rbuf, rcount, rdtype, root, &call)) {
            ret = coll_ucg_go_out(m, COLL_UCG_SCATTER, comm, &call);
            if (ret != COLL_UCG_DELEGATE) {
                return ret;
            }
        }
    }
    return m->prev_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                           comm, m->prev_scatter_module);
}

static int coll_ucg_allgather(const void *sbuf, int scount,
                              struct ompi_datatype_t *sdtype, void *rbuf,
                              int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    /* the block size in bytes is the same everywhere */
    size_t bytes             = coll_ucg_bytes(rdtype, rcount);
    int ret;

    if (!coll_ucg_handed_early(m, COLL_UCG_ALLGATHER, bytes, NULL, NULL)) {
        coll_ucg_call_t call = {{0}};

        if (coll_ucg_allgather_prep(m, COLL_UCG_ALLGATHER, sbuf, scount,
                                    sdtype, rbuf, rcount, rdtype, &call)) {
            ret = coll_ucg_go_out(m, COLL_UCG_ALLGATHER, comm, &call);
            if (ret != COLL_UCG_DELEGATE) {
                return ret;
            }
        }
    }
    return m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                             m->prev_allgather_module);
}


static int coll_ucg_alltoall(const void *sbuf, int scount,
                             struct ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call     = {{0}};
    int ret;

    if (coll_ucg_alltoall_prep(m, COLL_UCG_ALLTOALL, sbuf, scount, sdtype,
                               rbuf, rcount, rdtype, &call)) {
        ret = coll_ucg_go_out(m, COLL_UCG_ALLTOALL, comm, &call);
        if (ret != COLL_UCG_DELEGATE) {
            return ret;
        }
    }
    return m->prev_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                            m->prev_alltoall_module);
}

static int coll_ucg_alltoallv(const void *sbuf, const int *scounts,
                              const int *sdispls,
                              struct ompi_datatype_t *sdtype, void *rbuf,
                              const int *rcounts, const int *rdispls,
                              struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call     = {{0}};
    int ret;

    if (coll_ucg_alltoallv_prep(m, COLL_UCG_ALLTOALLV, sbuf, scounts,
                                sdispls, sdtype, rbuf, rcounts, rdispls,
                                rdtype, &call)) {
        ret = coll_ucg_go_out(m, COLL_UCG_ALLTOALLV, comm, &call);
        if (ret != COLL_UCG_DELEGATE) {
            return ret;
        }
    }
    return m->prev_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                             rdispls, rdtype, comm, m->prev_alltoallv_module);
}


/* ---- module ------------------------------------------------------------ */

/*
 * Group creation is collective, and may fail on one rank only (UCG out of
 * memory before or between its out-of-band rounds): that rank would leave
 * ucg_group_create while the others wait in its next allgather.  So every
 * out-of-band allgather UCG asks for is preceded by a round of headers
 * (the previous module's allgather of COLL_UCG_OOB_HDR bytes) in which
 * each rank says whether it is still creating, and with which length; a
 * rank out of ucg_group_create sends "done" headers (with whether it can
 * use UCG) until every rank does.  A rank that sees "done" (or another
 * length) fails that allgather without sending: UCG's creation fails
 * there too, and all ranks end in the same "done" round, where they learn
 * whether all of them have a group.  The headers cost one small
 * allgather per UCG round at communicator creation, nothing per call.
 */
typedef struct {
    int32_t  done;  /* out of ucg_group_create */
    int32_t  ok;    /* done: this rank has its group and pack buffers */
    uint64_t len;   /* not done: the length of UCG's allgather */
} coll_ucg_oob_hdr_t;

typedef struct {
    mca_coll_ucg_module_t      *module;
    struct ompi_communicator_t *comm;
    coll_ucg_oob_hdr_t         *hdrs;     /* [comm_size] */
    bool                       stopped;   /* a rank left group creation */
    unsigned                   rounds;    /* UCG's allgathers so far */
    bool                       test_fail; /* test: fail the 2nd locally */
} coll_ucg_oob_arg_t;

/* One round of headers; OMPI_SUCCESS or the previous module's error */
static int coll_ucg_oob_hdr_round(coll_ucg_oob_arg_t *oob,
                                  const coll_ucg_oob_hdr_t *hdr)
{
    mca_coll_ucg_module_t *m = oob->module;

    return m->prev_allgather(hdr, sizeof(*hdr), MPI_BYTE, oob->hdrs,
                             sizeof(*hdr), MPI_BYTE, oob->comm,
                             m->prev_allgather_module);
}

/* UCG's out-of-band allgather: the previous module's, after a header
 * round that says every rank is in the same allgather */
static ucs_status_t coll_ucg_oob_allgather(void *arg, const void *sbuf,
                                           void *rbuf, size_t len)
{
    coll_ucg_oob_arg_t *oob  = arg;
    mca_coll_ucg_module_t *m = oob->module;
    coll_ucg_oob_hdr_t hdr   = {0};
    int i, ret;

    if (oob->stopped) {
        return UCS_ERR_CANCELED;
    }
    if (oob->test_fail && (++oob->rounds == 2)) {
        opal_output(0, "coll:ucg: test: failing UCG's group creation on "
                    "comm %s on this rank", m->comm_name);
        return UCS_ERR_NO_MEMORY;
    }
    if (len > INT_MAX) {
        return UCS_ERR_INVALID_PARAM;
    }

    hdr.len = len;
    if (coll_ucg_oob_hdr_round(oob, &hdr) != OMPI_SUCCESS) {
        oob->stopped = true;
        return UCS_ERR_IO_ERROR;
    }
    for (i = 0; i < m->comm_size; ++i) {
        if (oob->hdrs[i].done || (oob->hdrs[i].len != len)) {
            /* the rank that stopped logged why; UCG fails here too */
            oob->stopped = true;
            return UCS_ERR_CANCELED;
        }
    }

    ret = m->prev_allgather(sbuf, (int)len, MPI_BYTE, rbuf, (int)len,
                            MPI_BYTE, oob->comm, m->prev_allgather_module);
    return (ret == OMPI_SUCCESS) ? UCS_OK : UCS_ERR_IO_ERROR;
}

/* After ucg_group_create: "done" rounds until every rank is out of it;
 * *all_ok_p: whether every rank has @a ok */
static int coll_ucg_oob_finish(coll_ucg_oob_arg_t *oob, int ok,
                               int *all_ok_p)
{
    coll_ucg_oob_hdr_t hdr = {0};
    int i, all_done, ret;

    hdr.done = 1;
    hdr.ok   = ok;
    do {
        ret = coll_ucg_oob_hdr_round(oob, &hdr);
        if (ret != OMPI_SUCCESS) {
            return ret;
        }
        all_done  = 1;
        *all_ok_p = 1;
        for (i = 0; i < oob->module->comm_size; ++i) {
            all_done  &= oob->hdrs[i].done;
            *all_ok_p &= oob->hdrs[i].ok;
        }
    } while (!all_done);

    return OMPI_SUCCESS;
}

/* Whether every rank has @a ok; collective over @a comm */
static int coll_ucg_all_ok(mca_coll_ucg_module_t *m,
                           struct ompi_communicator_t *comm, int ok,
                           int *all_ok)
{
    int ret;

    ret = m->prev_allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm,
                            m->prev_allreduce_module);
    *all_ok = ok;
    return ret;
}

/* Test only (coll_ucg_test_fail_point create): whether this rank's
 * creation of its test_fail_call-th UCG group is made to fail */
static bool coll_ucg_test_fail_create(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;

    return (c->test_fail_rank >= 0) &&
           (c->test_fail_point == COLL_UCG_TEST_FAIL_CREATE) &&
           (ompi_comm_rank(&ompi_mpi_comm_world.comm) == c->test_fail_rank) &&
           (++c->test_created == (unsigned long)c->test_fail_call);
}

/*
 * The tuning rules every rank of @a comm applies: this process's
 * (mca_coll_ucg_get_rules), when every rank has the same table, else the
 * built-in one (a rank whose file is bad, or files that differ between
 * hosts), so that every rank hands the same calls to the previous module.
 * One allreduce of the tables' hashes at creation: the largest hash and
 * the largest complement tell whether the smallest equals the largest.
 */
static int coll_ucg_agree_rules(mca_coll_ucg_module_t *m,
                                struct ompi_communicator_t *comm)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;
    const ucg_rules_t *rules    = mca_coll_ucg_get_rules();
    uint64_t hashes[2];
    int ret;

    hashes[0] = rules->hash;
    hashes[1] = ~rules->hash;
    ret = m->prev_allreduce(MPI_IN_PLACE, hashes, 2, MPI_UINT64_T, MPI_MAX,
                            comm, m->prev_allreduce_module);
    if (ret != OMPI_SUCCESS) {
        return ret;
    }

    m->max_ppn = ucg_group_max_ppn(m->group);
    if (hashes[0] == ~hashes[1]) {
        m->rules = rules;
        return OMPI_SUCCESS;
    }

    m->rules = &c->builtin_rules;
    if (((m->comm_rank == 0) && !c->rules_mismatch_warned) ||
        (c->verbose >= 1)) {
        opal_output(0, "coll:ucg: comm %s: the ranks' tuning rules differ "
                    "(here %s, hash %016llx; a rank's file is bad, or the "
                    "files differ): all ranks use the built-in rules",
                    m->comm_name, rules->source,
                    (unsigned long long)rules->hash);
        c->rules_mismatch_warned = true;
    }
    return OMPI_SUCCESS;
}


static int coll_ucg_module_enable(mca_coll_base_module_t *module,
                                  struct ompi_communicator_t *comm)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    ucg_group_params_t gparams;
    coll_ucg_oob_arg_t oob;
    ucg_context_h ctx;
    ucs_status_t status;
    int world_rank, ok, ret;

    COLL_UCG_SAVE(m, comm, bcast);
    COLL_UCG_SAVE(m, comm, allreduce);
    COLL_UCG_SAVE(m, comm, reduce);
    COLL_UCG_SAVE(m, comm, barrier);
    COLL_UCG_SAVE(m, comm, gather);
    COLL_UCG_SAVE(m, comm, scatter);
    COLL_UCG_SAVE(m, comm, allgather);
    COLL_UCG_SAVE(m, comm, gatherv);
    COLL_UCG_SAVE(m, comm, scatterv);
    COLL_UCG_SAVE(m, comm, allgatherv);
    COLL_UCG_SAVE(m, comm, alltoall);
    COLL_UCG_SAVE(m, comm, alltoallv);

    m->comm_size = ompi_comm_size(comm);
    m->comm_rank = ompi_comm_rank(comm);
    m->comm_cid  = coll_ucg_comm_cid(comm);
    snprintf(m->comm_name, sizeof(m->comm_name), "%s", comm->c_name);
    ret = coll_ucg_nb_enable(m, comm);
    if (ret != OMPI_SUCCESS) {
        return ret;
    }
    ret = coll_ucg_redscan_enable(m, comm);
    if (ret != OMPI_SUCCESS) {
        return ret;
    }
    ret = coll_ucg_persist_enable(m, comm);
    if (ret != OMPI_SUCCESS) {
        return ret;
    }

    /* all ranks create the group, or none does (then all delegate) */
    ctx      = mca_coll_ucg_get_context();
    oob.hdrs = malloc(m->comm_size * sizeof(*oob.hdrs));
    ret      = coll_ucg_all_ok(m, comm, (ctx != NULL) && (oob.hdrs != NULL),
                               &ok);
    if ((ret != OMPI_SUCCESS) || !ok) {
        free(oob.hdrs);
        return ret;
    }

    memset(&gparams, 0, sizeof(gparams));
    gparams.size          = m->comm_size;
    gparams.rank          = m->comm_rank;
    gparams.oob_allgather = coll_ucg_oob_allgather;
    gparams.oob_arg       = &oob;
    oob.module            = m;
    oob.comm              = comm;
    oob.stopped           = false;
    oob.rounds            = 0;
    oob.test_fail         = coll_ucg_test_fail_create();
    /* UCX_UCG_HOSTS lists MPI_COMM_WORLD ranks */
    if (ompi_group_translate_ranks(comm->c_local_group, 1, &m->comm_rank,
                                   ompi_mpi_comm_world.comm.c_local_group,
                                   &world_rank) == OMPI_SUCCESS &&
        (world_rank != MPI_UNDEFINED)) {
        gparams.field_mask |= UCG_GROUP_PARAM_FIELD_GLOBAL_RANK;
        gparams.global_rank = world_rank;
    }

    status = ucg_group_create(ctx, &gparams, &m->group);
    if (status != UCS_OK) {
        if (status != UCS_ERR_CANCELED) {
            opal_output(0, "coll:ucg: ucg_group_create on comm %s failed: "
                        "%s; all ranks use the previous module",
                        m->comm_name, ucs_status_string(status));
        }
        m->group = NULL;
    } else {
        ++mca_coll_ucg_component.num_groups;
    }

    /* pack buffers of calls that acquire nothing (coll_ucg_call_init) */
    m->scratch[0] = malloc(COLL_UCG_SCRATCH_SIZE);
    m->scratch[1] = malloc(COLL_UCG_SCRATCH_SIZE);

    ret = coll_ucg_oob_finish(&oob, (m->group != NULL) &&
                              (m->scratch[0] != NULL) &&
                              (m->scratch[1] != NULL), &ok);
    free(oob.hdrs);
    if ((ret == OMPI_SUCCESS) && ok && (m->group != NULL)) {
        /* every rank has its group: symmetric */
        ret = coll_ucg_agree_rules(m, comm);
    }
    if (((ret != OMPI_SUCCESS) || !ok) && (m->group != NULL)) {
        ucg_group_destroy(m->group);
        --mca_coll_ucg_component.num_groups;
        m->group = NULL;
    }
    if (mca_coll_ucg_component.verbose >= 2) {
        opal_output(0, "coll:ucg: comm %s (cid %u) rank %d/%d: %s, tuning "
                    "rules %s (hash %016llx), largest host %u",
                    m->comm_name, m->comm_cid, m->comm_rank, m->comm_size,
                    (m->group != NULL) ? "UCG group created" :
                                         "no UCG group, delegating",
                    (m->rules != NULL) ? m->rules->source : "-",
                    (m->rules != NULL) ?
                    (unsigned long long)m->rules->hash : 0ull, m->max_ppn);
    }
    return ret;
}

static void coll_ucg_module_construct(mca_coll_ucg_module_t *m)
{
    int coll;

    memset((char*)m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
    for (coll = 0; coll < COLL_UCG_NUM; ++coll) {
        m->last_rule[coll].bytes = SIZE_MAX;
    }
}

static void coll_ucg_module_destruct(mca_coll_ucg_module_t *m)
{
    int i;

    if ((mca_coll_ucg_component.verbose >= 1) &&
        (m->prev_bcast_module != NULL)) {
        for (i = 0; i < COLL_UCG_NUM; ++i) {
            if (m->n_ucg[i] + m->n_delegated[i] + m->n_handed[i] == 0) {
                continue;
            }
            opal_output(0, "coll:ucg: comm %s (cid %u) rank %d: %s ucg=%lu "
                        "delegated=%lu handed=%lu flat=%lu reused=%lu "
                        "agreed=%lu yields=%lu",
                        m->comm_name, m->comm_cid, m->comm_rank,
                        mca_coll_ucg_coll_names[i], m->n_ucg[i],
                        m->n_delegated[i], m->n_handed[i], m->n_flat[i],
                        m->n_reused[i], m->n_agreed[i], m->n_yields[i]);
        }
    }
    for (i = 0; i < COLL_UCG_NUM; ++i) {
        coll_ucg_uncache(m, i);
        free(m->cached_v[i]);
    }
    if (m->group != NULL) {
        ucg_group_destroy(m->group);
        --mca_coll_ucg_component.num_groups;
    }
    free(m->scratch[0]);
    free(m->scratch[1]);
    COLL_UCG_RELEASE_PREV(m, bcast);
    COLL_UCG_RELEASE_PREV(m, allreduce);
    COLL_UCG_RELEASE_PREV(m, reduce);
    COLL_UCG_RELEASE_PREV(m, barrier);
    COLL_UCG_RELEASE_PREV(m, gather);
    COLL_UCG_RELEASE_PREV(m, scatter);
    COLL_UCG_RELEASE_PREV(m, allgather);
    COLL_UCG_RELEASE_PREV(m, gatherv);
    COLL_UCG_RELEASE_PREV(m, scatterv);
    COLL_UCG_RELEASE_PREV(m, allgatherv);
    COLL_UCG_RELEASE_PREV(m, alltoall);
    COLL_UCG_RELEASE_PREV(m, alltoallv);
    coll_ucg_nb_release_prev(m);
    coll_ucg_redscan_release_prev(m);
    coll_ucg_persist_release_prev(m);
}

OBJ_CLASS_INSTANCE(mca_coll_ucg_module_t, mca_coll_base_module_t,
                   coll_ucg_module_construct, coll_ucg_module_destruct);

mca_coll_base_module_t *
mca_coll_ucg_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_ucg_module_t *m;

    if (!mca_coll_ucg_component.enable || OMPI_COMM_IS_INTER(comm) ||
        (ompi_comm_size(comm) < 2)) {
        return NULL;
    }

    m = OBJ_NEW(mca_coll_ucg_module_t);
    if (m == NULL) {
        return NULL;
    }
    m->super.coll_module_enable = coll_ucg_module_enable;
    m->super.coll_bcast         = coll_ucg_bcast;
    m->super.coll_allreduce     = coll_ucg_allreduce;
    m->super.coll_reduce        = coll_ucg_reduce;
    m->super.coll_barrier       = coll_ucg_barrier;
    m->super.coll_gather        = coll_ucg_gather;
    m->super.coll_scatter       = coll_ucg_scatter;
    m->super.coll_allgather     = coll_ucg_allgather;
    coll_ucg_v_set_ops(m);
    m->super.coll_alltoall      = coll_ucg_alltoall;
    m->super.coll_alltoallv     = coll_ucg_alltoallv;
    coll_ucg_nb_set_ops(m);
    coll_ucg_redscan_set_ops(m);
    coll_ucg_persist_set_ops(m);
    *priority = mca_coll_ucg_component.priority;
    return &m->super;
}
