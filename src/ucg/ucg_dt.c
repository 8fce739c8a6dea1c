/**
 * UCG datatypes and reduction operations.
 *
 * One kernel per valid (op, dtype) pair, generated with X-macros and looked
 * up in a table [op][dtype]; the table is also what ucg_op_valid() reports,
 * so validity and implementation cannot disagree.
 *
 * Semantics (MPI 3.1, 5.9.2), inout[i] = in[i] op inout[i]:
 *  - integer SUM/PROD wrap around (computed in an unsigned type at least as
 *    wide as int, so there is no signed overflow);
 *  - MIN/MAX use the C comparison with the same operand order as the
 *    sm_incast kernels (min = inout < in ? inout : in), so that a reduction
 *    gives bit-identical results whichever of the two computes it;
 *  - LAND/LOR/LXOR give 1 or 0 in the element type;
 *  - MINLOC/MAXLOC: the smaller (larger) value, and on equal values the
 *    smaller index.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_dt.h"

#include <ucs/debug/log.h>
#include <complex.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>


/* Pair types of MINLOC / MAXLOC, laid out as the C structs of MPI */
typedef struct { float       v; int i; } ucg_dt_float_int_t;
typedef struct { double      v; int i; } ucg_dt_double_int_t;
typedef struct { long        v; int i; } ucg_dt_long_int_t;
typedef struct { int         v; int i; } ucg_dt_2int_t;
typedef struct { short       v; int i; } ucg_dt_short_int_t;
typedef struct { long double v; int i; } ucg_dt_long_double_int_t;

typedef float _Complex       ucg_dt_cfloat_t;
typedef double _Complex      ucg_dt_cdouble_t;
typedef long double _Complex ucg_dt_cldouble_t;


/*
 * Element types: _m(..., DTYPE, name, C type, arithmetic type)
 * The arithmetic type matters only for integer SUM/PROD (wrap-around).
 */
#define UCG_DT_FOR_INT_TYPES(_m, ...) \
    _m(__VA_ARGS__, INT8,   int8,   int8_t,   uint32_t) \
    _m(__VA_ARGS__, UINT8,  uint8,  uint8_t,  uint32_t) \
    _m(__VA_ARGS__, INT16,  int16,  int16_t,  uint32_t) \
    _m(__VA_ARGS__, UINT16, uint16, uint16_t, uint32_t) \
    _m(__VA_ARGS__, INT32,  int32,  int32_t,  uint32_t) \
    _m(__VA_ARGS__, UINT32, uint32, uint32_t, uint32_t) \
    _m(__VA_ARGS__, INT64,  int64,  int64_t,  uint64_t) \
    _m(__VA_ARGS__, UINT64, uint64, uint64_t, uint64_t)

#define UCG_DT_FOR_FP_TYPES(_m, ...) \
    _m(__VA_ARGS__, FLOAT,       float,       float,       float) \
    _m(__VA_ARGS__, DOUBLE,      double,      double,      double) \
    _m(__VA_ARGS__, LONG_DOUBLE, long_double, long double, long double)

#define UCG_DT_FOR_COMPLEX_TYPES(_m, ...) \
    _m(__VA_ARGS__, FLOAT_COMPLEX,  float_complex,  ucg_dt_cfloat_t, \
       ucg_dt_cfloat_t) \
    _m(__VA_ARGS__, DOUBLE_COMPLEX, double_complex, ucg_dt_cdouble_t, \
       ucg_dt_cdouble_t) \
    _m(__VA_ARGS__, LONG_DOUBLE_COMPLEX, long_double_complex, \
       ucg_dt_cldouble_t, ucg_dt_cldouble_t)

#define UCG_DT_FOR_PAIR_TYPES(_m, ...) \
    _m(__VA_ARGS__, FLOAT_INT,       float_int,       ucg_dt_float_int_t, \
       ucg_dt_float_int_t) \
    _m(__VA_ARGS__, DOUBLE_INT,      double_int,      ucg_dt_double_int_t, \
       ucg_dt_double_int_t) \
    _m(__VA_ARGS__, LONG_INT,        long_int,        ucg_dt_long_int_t, \
       ucg_dt_long_int_t) \
    _m(__VA_ARGS__, 2INT,            2int,            ucg_dt_2int_t, \
       ucg_dt_2int_t) \
    _m(__VA_ARGS__, SHORT_INT,       short_int,       ucg_dt_short_int_t, \
       ucg_dt_short_int_t) \
    _m(__VA_ARGS__, LONG_DOUBLE_INT, long_double_int, \
       ucg_dt_long_double_int_t, ucg_dt_long_double_int_t)

#define UCG_DT_FOR_ALL_TYPES(_m, ...) \
    UCG_DT_FOR_INT_TYPES(_m, __VA_ARGS__) \
    UCG_DT_FOR_FP_TYPES(_m, __VA_ARGS__) \
    UCG_DT_FOR_COMPLEX_TYPES(_m, __VA_ARGS__) \
    UCG_DT_FOR_PAIR_TYPES(_m, __VA_ARGS__)


/*
 * Element operations: _a = in[i], _b = inout[i], both of type _t; _w is the
 * arithmetic type.
 */
#define UCG_DT_EXPR_SUM(_t, _w, _a, _b)  ((_t)((_w)(_a) + (_w)(_b)))
#define UCG_DT_EXPR_PROD(_t, _w, _a, _b) ((_t)((_w)(_a) * (_w)(_b)))
#define UCG_DT_EXPR_MIN(_t, _w, _a, _b)  (((_b) < (_a)) ? (_b) : (_a))
#define UCG_DT_EXPR_MAX(_t, _w, _a, _b)  (((_b) > (_a)) ? (_b) : (_a))
#define UCG_DT_EXPR_BAND(_t, _w, _a, _b) ((_t)((_a) & (_b)))
#define UCG_DT_EXPR_BOR(_t, _w, _a, _b)  ((_t)((_a) | (_b)))
#define UCG_DT_EXPR_BXOR(_t, _w, _a, _b) ((_t)((_a) ^ (_b)))
#define UCG_DT_EXPR_LAND(_t, _w, _a, _b) ((_t)(((_a) != 0) & ((_b) != 0)))
#define UCG_DT_EXPR_LOR(_t, _w, _a, _b)  ((_t)(((_a) != 0) | ((_b) != 0)))
#define UCG_DT_EXPR_LXOR(_t, _w, _a, _b) ((_t)(((_a) != 0) ^ ((_b) != 0)))
/* Pairs: on equal values the smaller index (MPI) */
#define UCG_DT_EXPR_MINLOC(_t, _w, _a, _b) \
    (((_a).v < (_b).v) ? (_a) : \
     (((_b).v < (_a).v) ? (_b) : (((_a).i < (_b).i) ? (_a) : (_b))))
#define UCG_DT_EXPR_MAXLOC(_t, _w, _a, _b) \
    (((_a).v > (_b).v) ? (_a) : \
     (((_b).v > (_a).v) ? (_b) : (((_a).i < (_b).i) ? (_a) : (_b))))


/*
 * Every valid (op, dtype) pair of the predefined operations:
 * _m(OP, DTYPE, name, type, wtype)
 */
#define UCG_DT_FOR_REDUCE_PAIRS(_m) \
    UCG_DT_FOR_INT_TYPES(_m, SUM) \
    UCG_DT_FOR_FP_TYPES(_m, SUM) \
    UCG_DT_FOR_COMPLEX_TYPES(_m, SUM) \
    UCG_DT_FOR_INT_TYPES(_m, PROD) \
    UCG_DT_FOR_FP_TYPES(_m, PROD) \
    UCG_DT_FOR_COMPLEX_TYPES(_m, PROD) \
    UCG_DT_FOR_INT_TYPES(_m, MIN) \
    UCG_DT_FOR_FP_TYPES(_m, MIN) \
    UCG_DT_FOR_INT_TYPES(_m, MAX) \
    UCG_DT_FOR_FP_TYPES(_m, MAX) \
    UCG_DT_FOR_INT_TYPES(_m, LAND) \
    UCG_DT_FOR_INT_TYPES(_m, LOR) \
    UCG_DT_FOR_INT_TYPES(_m, LXOR) \
    UCG_DT_FOR_INT_TYPES(_m, BAND) \
    UCG_DT_FOR_INT_TYPES(_m, BOR) \
    UCG_DT_FOR_INT_TYPES(_m, BXOR) \
    UCG_DT_FOR_PAIR_TYPES(_m, MINLOC) \
    UCG_DT_FOR_PAIR_TYPES(_m, MAXLOC)


typedef void (*ucg_dt_reduce_func_t)(const void *in, void *inout,
                                     size_t count);

/*
 * Bytes per block of the aligned loop.  An inner loop with a trip count known
 * at compile time (a multiple of any vector length) is what GCC's "very
 * cheap" vectorizer cost model, the default at -O2 since GCC 12, accepts: it
 * needs no epilogue and no peeling.  The tail is a scalar loop.
 */
#define UCG_DT_REDUCE_BLOCK 256

/*
 * Kernel of one pair.  The aligned loop has restrict-qualified typed
 * parameters, so GCC vectorizes it without run-time alias checks.  Buffers
 * that are unaligned (fragments of network buffers) or that overlap (in ==
 * inout) take the element-by-element loop, through memcpy, which is well
 * defined at any address and compiles to plain unaligned loads and stores.
 * Long double elements are loaded as values: their padding is only copied.
 */
#define UCG_DT_DEFINE_REDUCE(_OP, _DT, _name, _type, _wtype) \
    static void \
    ucg_dt_reduce_aligned_##_OP##_##_name(const _type *__restrict in, \
                                          _type *__restrict inout, \
                                          size_t count) \
    { \
        const size_t block = UCG_DT_REDUCE_BLOCK / sizeof(_type); \
        size_t i, j; \
        \
        for (i = 0; i + block <= count; i += block) { \
            for (j = 0; j < block; ++j) { \
                inout[i + j] = UCG_DT_EXPR_##_OP(_type, _wtype, in[i + j], \
                                                 inout[i + j]); \
            } \
        } \
        for (; i < count; ++i) { \
            inout[i] = UCG_DT_EXPR_##_OP(_type, _wtype, in[i], inout[i]); \
        } \
    } \
    \
    static void \
    ucg_dt_reduce_##_OP##_##_name(const void *in, void *inout, size_t count) \
    { \
        const char *src = (const char*)in; \
        char *dst       = (char*)inout; \
        _type a, b, r; \
        size_t i; \
        \
        if (ucg_dt_aligned_disjoint(in, inout, count, sizeof(_type), \
                                    alignof(_type))) { \
            ucg_dt_reduce_aligned_##_OP##_##_name((const _type*)in, \
                                                  (_type*)inout, count); \
            return; \
        } \
        \
        for (i = 0; i < count; ++i) { \
            memcpy(&a, src + (i * sizeof(_type)), sizeof(_type)); \
            memcpy(&b, dst + (i * sizeof(_type)), sizeof(_type)); \
            r = UCG_DT_EXPR_##_OP(_type, _wtype, a, b); \
            memcpy(dst + (i * sizeof(_type)), &r, sizeof(_type)); \
        } \
    }

#define UCG_DT_TABLE_ENTRY(_OP, _DT, _name, _type, _wtype) \
    [UCG_OP_##_OP][UCG_DT_##_DT] = ucg_dt_reduce_##_OP##_##_name,

#define UCG_DT_SIZE_ENTRY(_unused, _DT, _name, _type, _wtype) \
    [UCG_DT_##_DT] = sizeof(_type),

#define UCG_DT_NAME_ENTRY(_unused, _DT, _name, _type, _wtype) \
    [UCG_DT_##_DT] = #_name,


/* Whether both buffers are aligned for the type and do not overlap */
static inline int ucg_dt_aligned_disjoint(const void *in, const void *inout,
                                          size_t count, size_t size,
                                          size_t align)
{
    uintptr_t a   = (uintptr_t)in;
    uintptr_t b   = (uintptr_t)inout;
    uintptr_t len = count * size;

    return (((a | b) & (align - 1)) == 0) && ((a + len <= b) || (b + len <= a));
}

UCG_DT_FOR_REDUCE_PAIRS(UCG_DT_DEFINE_REDUCE)

static const ucg_dt_reduce_func_t ucg_dt_reduce_funcs[UCG_OP_LAST][UCG_DT_LAST] = {
    UCG_DT_FOR_REDUCE_PAIRS(UCG_DT_TABLE_ENTRY)
};

static const size_t ucg_dt_sizes[UCG_DT_LAST] = {
    UCG_DT_FOR_ALL_TYPES(UCG_DT_SIZE_ENTRY, _)
    [UCG_DT_BYTES] = 0
};

static const char *ucg_dt_names[UCG_DT_LAST] = {
    UCG_DT_FOR_ALL_TYPES(UCG_DT_NAME_ENTRY, _)
    [UCG_DT_BYTES] = "bytes"
};

static const char *ucg_op_names[UCG_OP_LAST] = {
    [UCG_OP_SUM]    = "sum",
    [UCG_OP_PROD]   = "prod",
    [UCG_OP_MIN]    = "min",
    [UCG_OP_MAX]    = "max",
    [UCG_OP_LAND]   = "land",
    [UCG_OP_LOR]    = "lor",
    [UCG_OP_LXOR]   = "lxor",
    [UCG_OP_BAND]   = "band",
    [UCG_OP_BOR]    = "bor",
    [UCG_OP_BXOR]   = "bxor",
    [UCG_OP_MINLOC] = "minloc",
    [UCG_OP_MAXLOC] = "maxloc",
    [UCG_OP_USER]   = "user"
};

/* The sm_incast equivalents; UCT_O2M_OP_GATHER / UCT_O2M_DT_LAST: none */
static const uct_o2m_op_t ucg_dt_o2m_ops[UCG_OP_LAST] = {
    [UCG_OP_SUM]    = UCT_O2M_OP_SUM,
    [UCG_OP_PROD]   = UCT_O2M_OP_PROD,
    [UCG_OP_MIN]    = UCT_O2M_OP_MIN,
    [UCG_OP_MAX]    = UCT_O2M_OP_MAX,
    [UCG_OP_LAND]   = UCT_O2M_OP_LAND,
    [UCG_OP_LOR]    = UCT_O2M_OP_LOR,
    [UCG_OP_LXOR]   = UCT_O2M_OP_LXOR,
    [UCG_OP_BAND]   = UCT_O2M_OP_BAND,
    [UCG_OP_BOR]    = UCT_O2M_OP_BOR,
    [UCG_OP_BXOR]   = UCT_O2M_OP_BXOR,
    [UCG_OP_MINLOC] = UCT_O2M_OP_GATHER,
    [UCG_OP_MAXLOC] = UCT_O2M_OP_GATHER,
    [UCG_OP_USER]   = UCT_O2M_OP_GATHER
};

static const uct_o2m_dtype_t ucg_dt_o2m_dtypes[UCG_DT_LAST] = {
    [UCG_DT_INT8]                = UCT_O2M_DT_INT8,
    [UCG_DT_UINT8]               = UCT_O2M_DT_UINT8,
    [UCG_DT_INT16]               = UCT_O2M_DT_INT16,
    [UCG_DT_UINT16]              = UCT_O2M_DT_UINT16,
    [UCG_DT_INT32]               = UCT_O2M_DT_INT32,
    [UCG_DT_UINT32]              = UCT_O2M_DT_UINT32,
    [UCG_DT_INT64]               = UCT_O2M_DT_INT64,
    [UCG_DT_UINT64]              = UCT_O2M_DT_UINT64,
    [UCG_DT_FLOAT]               = UCT_O2M_DT_FLOAT,
    [UCG_DT_DOUBLE]              = UCT_O2M_DT_DOUBLE,
    [UCG_DT_LONG_DOUBLE]         = UCT_O2M_DT_LAST,
    [UCG_DT_FLOAT_COMPLEX]       = UCT_O2M_DT_LAST,
    [UCG_DT_DOUBLE_COMPLEX]      = UCT_O2M_DT_LAST,
    [UCG_DT_LONG_DOUBLE_COMPLEX] = UCT_O2M_DT_LAST,
    [UCG_DT_FLOAT_INT]           = UCT_O2M_DT_LAST,
    [UCG_DT_DOUBLE_INT]          = UCT_O2M_DT_LAST,
    [UCG_DT_LONG_INT]            = UCT_O2M_DT_LAST,
    [UCG_DT_2INT]                = UCT_O2M_DT_LAST,
    [UCG_DT_SHORT_INT]           = UCT_O2M_DT_LAST,
    [UCG_DT_LONG_DOUBLE_INT]     = UCT_O2M_DT_LAST,
    [UCG_DT_BYTES]               = UCT_O2M_DT_LAST
};

static const char ucg_dt_invalid_name[] = "<invalid>";


size_t ucg_dtype_size(ucg_dtype_t dtype)
{
    return ((unsigned)dtype < UCG_DT_LAST) ? ucg_dt_sizes[dtype] : 0;
}

int ucg_op_valid(ucg_op_t op, ucg_dtype_t dtype)
{
    if (((unsigned)op >= UCG_OP_LAST) || ((unsigned)dtype >= UCG_DT_LAST)) {
        return 0;
    }

    if (op == UCG_OP_USER) {
        return 1;
    }

    return ucg_dt_reduce_funcs[op][dtype] != NULL;
}

const char *ucg_dtype_name(ucg_dtype_t dtype)
{
    return ((unsigned)dtype < UCG_DT_LAST) ? ucg_dt_names[dtype] :
                                             ucg_dt_invalid_name;
}

const char *ucg_op_name(ucg_op_t op)
{
    return ((unsigned)op < UCG_OP_LAST) ? ucg_op_names[op] :
                                          ucg_dt_invalid_name;
}

int ucg_dtype_from_name(const char *name, ucg_dtype_t *dtype_p)
{
    unsigned i;

    if (name == NULL) {
        return 0;
    }

    for (i = 0; i < UCG_DT_LAST; ++i) {
        if (!strcasecmp(name, ucg_dt_names[i])) {
            *dtype_p = (ucg_dtype_t)i;
            return 1;
        }
    }

    return 0;
}

int ucg_op_from_name(const char *name, ucg_op_t *op_p)
{
    unsigned i;

    if (name == NULL) {
        return 0;
    }

    for (i = 0; i < UCG_OP_LAST; ++i) {
        if (!strcasecmp(name, ucg_op_names[i])) {
            *op_p = (ucg_op_t)i;
            return 1;
        }
    }

    return 0;
}

ucs_status_t ucg_op_desc_init(ucg_op_desc_t *desc, ucg_op_t op,
                              ucg_dtype_t dtype, size_t dt_size,
                              const ucg_user_op_t *user_op)
{
    if (!ucg_op_valid(op, dtype)) {
        ucs_error("reduction '%s' (%d) is not defined on datatype '%s' (%d)",
                  ucg_op_name(op), (int)op, ucg_dtype_name(dtype),
                  (int)dtype);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((op == UCG_OP_USER) && ((user_op == NULL) || (user_op->func == NULL))) {
        ucs_error("reduction '%s' on datatype '%s': no user function",
                  ucg_op_name(op), ucg_dtype_name(dtype));
        return UCS_ERR_INVALID_PARAM;
    }

    if ((dtype == UCG_DT_BYTES) && (dt_size == 0)) {
        ucs_error("reduction '%s' on datatype '%s': element size is 0",
                  ucg_op_name(op), ucg_dtype_name(dtype));
        return UCS_ERR_INVALID_PARAM;
    }

    desc->op      = op;
    desc->dtype   = dtype;
    desc->dt_size = (dtype == UCG_DT_BYTES) ? dt_size : ucg_dt_sizes[dtype];
    if (op == UCG_OP_USER) {
        desc->user_op = *user_op;
    } else {
        memset(&desc->user_op, 0, sizeof(desc->user_op));
    }

    return UCS_OK;
}

void ucg_op_reduce(const ucg_op_desc_t *desc, const void *in, void *inout,
                   size_t count)
{
    ucg_dt_reduce_func_t func;

    if (count == 0) {
        return;
    }

    if (desc->op == UCG_OP_USER) {
        desc->user_op.func(desc->user_op.arg, in, inout, count);
        return;
    }

    /* desc was validated by ucg_op_desc_init() */
    func = ucg_dt_reduce_funcs[desc->op][desc->dtype];
    func(in, inout, count);
}

int ucg_op_is_commutative(const ucg_op_desc_t *desc)
{
    return (desc->op != UCG_OP_USER) || desc->user_op.commutative;
}

int ucg_op_to_o2m(const ucg_op_desc_t *desc, uct_o2m_op_t *op_p,
                  uct_o2m_dtype_t *dtype_p)
{
    uct_o2m_op_t    o2m_op;
    uct_o2m_dtype_t o2m_dtype;

    if (((unsigned)desc->op >= UCG_OP_LAST) ||
        ((unsigned)desc->dtype >= UCG_DT_LAST) ||
        !ucg_op_valid(desc->op, desc->dtype)) {
        return 0;
    }

    /* Both tables say "none" for user ops, MINLOC/MAXLOC and the types the
     * transport lacks; the logical ops of both give 1/0 on integers */
    o2m_op    = ucg_dt_o2m_ops[desc->op];
    o2m_dtype = ucg_dt_o2m_dtypes[desc->dtype];
    if ((o2m_op == UCT_O2M_OP_GATHER) || (o2m_dtype == UCT_O2M_DT_LAST)) {
        return 0;
    }

    *op_p    = o2m_op;
    *dtype_p = o2m_dtype;
    return 1;
}
