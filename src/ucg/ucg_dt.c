/**
 * UCG datatypes and reduction operations.
 *
 * The kernels are those of the sm_incast transport for the types it has
 * (integers, float, double: uct_o2m_reduce_func() of the plugin), and the
 * plugin's kernel template (o2m_reduce_kernel.h) instantiated here for the
 * types UCG adds (long double, complex, MINLOC/MAXLOC pairs).  Which pairs
 * are valid is UCG's own (MPI's) list below; a pair's kernel is looked up
 * once, by ucg_op_desc_init().
 *
 * Semantics (MPI 3.1, 5.9.2), inout[i] = in[i] op inout[i]:
 *  - integer SUM/PROD wrap around (computed in an unsigned type at least as
 *    wide as int, so there is no signed overflow);
 *  - MIN/MAX use the C comparison with the operand order of the sm_incast
 *    kernels (min = inout < in ? inout : in);
 *  - LAND/LOR/LXOR give 1 or 0 in the element type;
 *  - MINLOC/MAXLOC: the smaller (larger) value, and on equal values the
 *    smaller index.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_dt.h"
#include "o2m_reduce.h"
#include "o2m_reduce_kernel.h"

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
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
typedef struct { float       v; float i; } ucg_dt_2float_t;
typedef struct { double      v; double i; } ucg_dt_2double_t;

typedef float _Complex       ucg_dt_cfloat_t;
typedef double _Complex      ucg_dt_cdouble_t;
typedef long double _Complex ucg_dt_cldouble_t;

/* Unaligned variants of the types UCG adds, for the kernel template */
typedef long double              ucg_dt_long_double_u_t UCT_O2M_UNALIGNED;
typedef ucg_dt_cfloat_t          ucg_dt_float_complex_u_t UCT_O2M_UNALIGNED;
typedef ucg_dt_cdouble_t         ucg_dt_double_complex_u_t UCT_O2M_UNALIGNED;
typedef ucg_dt_cldouble_t        ucg_dt_long_double_complex_u_t
                                 UCT_O2M_UNALIGNED;

/*
 * A struct cannot be given a smaller alignment: the pair kernels access
 * naturally aligned elements, and misaligned buffers of pairs take the
 * element-by-element path of ucg_op_reduce().
 */
typedef ucg_dt_float_int_t       ucg_dt_float_int_u_t;
typedef ucg_dt_double_int_t      ucg_dt_double_int_u_t;
typedef ucg_dt_long_int_t        ucg_dt_long_int_u_t;
typedef ucg_dt_2int_t            ucg_dt_2int_u_t;
typedef ucg_dt_short_int_t       ucg_dt_short_int_u_t;
typedef ucg_dt_long_double_int_t ucg_dt_long_double_int_u_t;
typedef ucg_dt_2float_t          ucg_dt_2float_u_t;
typedef ucg_dt_2double_t         ucg_dt_2double_u_t;

/* Largest element of a predefined type (long double complex, pairs) */
#define UCG_DT_MAX_ELEM_SIZE 32


/*
 * Element types: _m(..., DTYPE, name, C type, arithmetic type)
 * The arithmetic type matters only for integer SUM/PROD (wrap-around).
 * The types of the sm_incast kernels have the names of uct_o2m_dtype_t.
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

#define UCG_DT_FOR_O2M_FP_TYPES(_m, ...) \
    _m(__VA_ARGS__, FLOAT,       float,       float,       float) \
    _m(__VA_ARGS__, DOUBLE,      double,      double,      double)

#define UCG_DT_FOR_LONG_DOUBLE(_m, ...) \
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
       ucg_dt_long_double_int_t, ucg_dt_long_double_int_t) \
    _m(__VA_ARGS__, 2FLOAT,          2float,          ucg_dt_2float_t, \
       ucg_dt_2float_t) \
    _m(__VA_ARGS__, 2DOUBLE,         2double,         ucg_dt_2double_t, \
       ucg_dt_2double_t)

#define UCG_DT_FOR_ALL_TYPES(_m, ...) \
    UCG_DT_FOR_INT_TYPES(_m, __VA_ARGS__) \
    UCG_DT_FOR_O2M_FP_TYPES(_m, __VA_ARGS__) \
    UCG_DT_FOR_LONG_DOUBLE(_m, __VA_ARGS__) \
    UCG_DT_FOR_COMPLEX_TYPES(_m, __VA_ARGS__) \
    UCG_DT_FOR_PAIR_TYPES(_m, __VA_ARGS__)


/*
 * The operations UCG adds: _a = inout[i], _b = in[i] (the order of the
 * kernel template).  On equal values the smaller index (MPI), whichever
 * operand holds it.
 */
#define UCG_DT_EXPR_MINLOC(_t, _w, _a, _b) \
    (((_b).v < (_a).v) ? (_b) : \
     (((_a).v < (_b).v) ? (_a) : (((_b).i < (_a).i) ? (_b) : (_a))))
#define UCG_DT_EXPR_MAXLOC(_t, _w, _a, _b) \
    (((_b).v > (_a).v) ? (_b) : \
     (((_a).v > (_b).v) ? (_a) : (((_b).i < (_a).i) ? (_b) : (_a))))


/*
 * The valid (op, dtype) pairs of the predefined operations, as MPI defines
 * them: _m(OP, DTYPE, name, type, wtype).  The ones computed by the kernels
 * of the plugin (same op and dtype names as uct_o2m_op_t / uct_o2m_dtype_t):
 */
#define UCG_DT_FOR_O2M_PAIRS(_m) \
    UCG_DT_FOR_INT_TYPES(_m, SUM) \
    UCG_DT_FOR_O2M_FP_TYPES(_m, SUM) \
    UCG_DT_FOR_INT_TYPES(_m, PROD) \
    UCG_DT_FOR_O2M_FP_TYPES(_m, PROD) \
    UCG_DT_FOR_INT_TYPES(_m, MIN) \
    UCG_DT_FOR_O2M_FP_TYPES(_m, MIN) \
    UCG_DT_FOR_INT_TYPES(_m, MAX) \
    UCG_DT_FOR_O2M_FP_TYPES(_m, MAX) \
    UCG_DT_FOR_INT_TYPES(_m, LAND) \
    UCG_DT_FOR_INT_TYPES(_m, LOR) \
    UCG_DT_FOR_INT_TYPES(_m, LXOR) \
    UCG_DT_FOR_INT_TYPES(_m, BAND) \
    UCG_DT_FOR_INT_TYPES(_m, BOR) \
    UCG_DT_FOR_INT_TYPES(_m, BXOR)

/* ... and the ones with a kernel here: _m(..., EXPR, OP, DTYPE, ...) */
#define UCG_DT_FOR_OWN_PAIRS(_m) \
    UCG_DT_FOR_LONG_DOUBLE(_m, UCT_O2M_EXPR_SUM, SUM) \
    UCG_DT_FOR_COMPLEX_TYPES(_m, UCT_O2M_EXPR_SUM, SUM) \
    UCG_DT_FOR_LONG_DOUBLE(_m, UCT_O2M_EXPR_PROD, PROD) \
    UCG_DT_FOR_COMPLEX_TYPES(_m, UCT_O2M_EXPR_PROD, PROD) \
    UCG_DT_FOR_LONG_DOUBLE(_m, UCT_O2M_EXPR_MIN, MIN) \
    UCG_DT_FOR_LONG_DOUBLE(_m, UCT_O2M_EXPR_MAX, MAX) \
    UCG_DT_FOR_PAIR_TYPES(_m, UCG_DT_EXPR_MINLOC, MINLOC) \
    UCG_DT_FOR_PAIR_TYPES(_m, UCG_DT_EXPR_MAXLOC, MAXLOC)


#define UCG_DT_DEFINE_REDUCE(_expr, _OP, _DT, _name, _type, _wtype) \
    UCT_O2M_DEFINE_REDUCE_KERNEL(ucg_dt_reduce_##_OP##_##_name, _expr, \
                                 _type, _wtype, ucg_dt_##_name##_u_t)

#define UCG_DT_TABLE_ENTRY(_expr, _OP, _DT, _name, _type, _wtype) \
    [UCG_OP_##_OP][UCG_DT_##_DT] = ucg_dt_reduce_##_OP##_##_name,

#define UCG_DT_O2M_PAIR_ENTRY(_OP, _DT, _name, _type, _wtype) \
    [UCG_OP_##_OP][UCG_DT_##_DT] = {1, UCT_O2M_OP_##_OP, UCT_O2M_DT_##_DT},

#define UCG_DT_SIZE_ENTRY(_unused, _DT, _name, _type, _wtype) \
    [UCG_DT_##_DT] = sizeof(_type),

#define UCG_DT_NAME_ENTRY(_unused, _DT, _name, _type, _wtype) \
    [UCG_DT_##_DT] = #_name,

#define UCG_DT_ALIGN_MASK_ENTRY(_unused, _DT, _name, _type, _wtype) \
    [UCG_DT_##_DT] = alignof(_type) - 1,


#define UCG_DT_CHECK_SIZE(_unused, _DT, _name, _type, _wtype) \
    _Static_assert(sizeof(_type) <= UCG_DT_MAX_ELEM_SIZE, \
                   "UCG_DT_MAX_ELEM_SIZE is too small for " #_name);


UCG_DT_FOR_ALL_TYPES(UCG_DT_CHECK_SIZE, _)
UCG_DT_FOR_OWN_PAIRS(UCG_DT_DEFINE_REDUCE)

/* Kernels of the pairs UCG adds */
static const uct_o2m_reduce_func_t
ucg_dt_reduce_funcs[UCG_OP_LAST][UCG_DT_LAST] = {
    UCG_DT_FOR_OWN_PAIRS(UCG_DT_TABLE_ENTRY)
};

/* The sm_incast pair of each pair the plugin computes */
typedef struct {
    uint8_t         valid;
    uct_o2m_op_t    op;
    uct_o2m_dtype_t dtype;
} ucg_dt_o2m_pair_t;

static const ucg_dt_o2m_pair_t ucg_dt_o2m_pairs[UCG_OP_LAST][UCG_DT_LAST] = {
    UCG_DT_FOR_O2M_PAIRS(UCG_DT_O2M_PAIR_ENTRY)
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

/* Address bits the kernel of a type needs clear (pairs: see above) */
static const uint8_t ucg_dt_align_masks[UCG_DT_LAST] = {
    UCG_DT_FOR_PAIR_TYPES(UCG_DT_ALIGN_MASK_ENTRY, _)
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

    return ucg_dt_o2m_pairs[op][dtype].valid ||
           (ucg_dt_reduce_funcs[op][dtype] != NULL);
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
    const ucg_dt_o2m_pair_t *pair;

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
        desc->reduce  = NULL;
    } else {
        memset(&desc->user_op, 0, sizeof(desc->user_op));
        pair         = &ucg_dt_o2m_pairs[op][dtype];
        desc->reduce = pair->valid ? uct_o2m_reduce_func(pair->op,
                                                         pair->dtype) :
                                     ucg_dt_reduce_funcs[op][dtype];
        ucs_assert(desc->reduce != NULL);
    }

    return UCS_OK;
}

/* Whether the kernel of @a desc can take these buffers as they are */
static inline int ucg_dt_kernel_fits(const ucg_op_desc_t *desc,
                                     const void *in, const void *inout,
                                     size_t count)
{
    uintptr_t a   = (uintptr_t)in;
    uintptr_t b   = (uintptr_t)inout;
    uintptr_t len = count * desc->dt_size;

    return (((a | b) & ucg_dt_align_masks[desc->dtype]) == 0) &&
           ((a + len <= b) || (b + len <= a));
}

/* Bytes of each bounce buffer of ucg_dt_reduce_bounced() */
#define UCG_DT_BOUNCE_SIZE 1024

/*
 * Overlapping buffers (in == inout is allowed), or misaligned pairs: in
 * goes through an aligned bounce buffer (inout too when it is misaligned
 * for the kernel), and the kernel is called once per chunk of elements (a
 * call per element cost 15-20 times the kernel's time on in-place buffers).
 * The result is that of a plain loop over the elements, which reads in[i]
 * after inout[0..i-1] are written: when inout is ahead of in, a chunk is at
 * most that distance long, so that no element of in in a chunk overlaps an
 * element of inout before it in the same chunk.
 */
static void ucg_dt_reduce_bounced(const ucg_op_desc_t *desc, const void *in,
                                  void *inout, size_t count)
{
    union {
        long double align;
        char        bytes[UCG_DT_BOUNCE_SIZE];
    } src, dst;
    size_t dt_size = desc->dt_size;
    size_t chunk   = sizeof(src.bytes) / dt_size;
    /* The kernel may write inout in place if aligned enough for it */
    int dst_fits   = ((uintptr_t)inout & ucg_dt_align_masks[desc->dtype]) == 0;
    size_t ahead, i, n, offset, len;
    void *dst_p;

    ucs_assert(dt_size <= UCG_DT_MAX_ELEM_SIZE);
    if ((uintptr_t)inout > (uintptr_t)in) {
        ahead = ((uintptr_t)inout - (uintptr_t)in) / dt_size;
        chunk = ucs_max(ucs_min(chunk, ahead), 1);
    }

    for (i = 0; i < count; i += n) {
        n      = ucs_min(chunk, count - i);
        offset = i * dt_size;
        len    = n * dt_size;
        dst_p  = UCS_PTR_BYTE_OFFSET(inout, offset);
        memcpy(src.bytes, UCS_PTR_BYTE_OFFSET(in, offset), len);
        if (dst_fits) {
            desc->reduce(dst_p, src.bytes, n);
        } else {
            memcpy(dst.bytes, dst_p, len);
            desc->reduce(dst.bytes, src.bytes, n);
            memcpy(dst_p, dst.bytes, len);
        }
    }
}

void ucg_op_reduce(const ucg_op_desc_t *desc, const void *in, void *inout,
                   size_t count)
{
    if (count == 0) {
        return;
    }

    if (desc->op == UCG_OP_USER) {
        desc->user_op.func(desc->user_op.arg, in, inout, count);
        return;
    }

    /* desc was validated by ucg_op_desc_init() */
    if (ucs_likely(ucg_dt_kernel_fits(desc, in, inout, count))) {
        desc->reduce(inout, in, count);
    } else {
        ucg_dt_reduce_bounced(desc, in, inout, count);
    }
}

int ucg_op_is_commutative(const ucg_op_desc_t *desc)
{
    return (desc->op != UCG_OP_USER) || desc->user_op.commutative;
}

int ucg_op_to_o2m(const ucg_op_desc_t *desc, uct_o2m_op_t *op_p,
                  uct_o2m_dtype_t *dtype_p)
{
    const ucg_dt_o2m_pair_t *pair;

    if (((unsigned)desc->op >= UCG_OP_LAST) ||
        ((unsigned)desc->dtype >= UCG_DT_LAST)) {
        return 0;
    }

    /* None for user ops, MINLOC/MAXLOC and the types the transport lacks;
     * the logical ops of both give 1/0 on integers */
    pair = &ucg_dt_o2m_pairs[desc->op][desc->dtype];
    if (!pair->valid) {
        return 0;
    }

    *op_p    = pair->op;
    *dtype_p = pair->dtype;
    return 1;
}
