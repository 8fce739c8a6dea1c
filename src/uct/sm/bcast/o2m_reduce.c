/**
 * ucx-o2m: reduction kernels of the sm_incast fan-in transport.
 *
 * The kernels are generated with X-macros: one tight loop per (op, dtype),
 * looked up in a table [op][dtype].  See o2m_reduce.h for the semantics;
 * the plain kernels come from the template of o2m_reduce_kernel.h, which
 * UCG instantiates for the types it adds.
 */
#include "o2m_reduce.h"
#include "o2m_reduce_kernel.h"

#include <stdint.h>
#include <string.h>


#define UCT_O2M_ARRAY_SIZE(_a) (sizeof(_a) / sizeof((_a)[0]))

#define UCT_O2M_ATOMIC_ORDER   __ATOMIC_RELAXED


/* Element types of the kernels: any alignment, may alias anything */
typedef int8_t   uct_o2m_int8_u_t   UCT_O2M_UNALIGNED;
typedef uint8_t  uct_o2m_uint8_u_t  UCT_O2M_UNALIGNED;
typedef int16_t  uct_o2m_int16_u_t  UCT_O2M_UNALIGNED;
typedef uint16_t uct_o2m_uint16_u_t UCT_O2M_UNALIGNED;
typedef int32_t  uct_o2m_int32_u_t  UCT_O2M_UNALIGNED;
typedef uint32_t uct_o2m_uint32_u_t UCT_O2M_UNALIGNED;
typedef int64_t  uct_o2m_int64_u_t  UCT_O2M_UNALIGNED;
typedef uint64_t uct_o2m_uint64_u_t UCT_O2M_UNALIGNED;
typedef float    uct_o2m_float_u_t  UCT_O2M_UNALIGNED;
typedef double   uct_o2m_double_u_t UCT_O2M_UNALIGNED;

/* Bit patterns of elements, for the atomic kernels (naturally aligned) */
typedef uint8_t  uct_o2m_bits8_t    __attribute__((may_alias));
typedef uint16_t uct_o2m_bits16_t   __attribute__((may_alias));
typedef uint32_t uct_o2m_bits32_t   __attribute__((may_alias));
typedef uint64_t uct_o2m_bits64_t   __attribute__((may_alias));


/*
 * Data types: _m(..., DTYPE, dtype, C type, arithmetic type, bits type,
 *                lowest value, largest value)
 *
 * Integer arithmetic is done in an unsigned type at least as wide as int, so
 * that sum and prod wrap around without undefined behaviour (uint8_t or
 * uint16_t operands would be promoted to signed int, and a product could
 * overflow it).
 */
#define UCT_O2M_FOR_INT_DTYPES(_m, ...) \
    _m(__VA_ARGS__, INT8,   int8,   int8_t,   uint32_t, uct_o2m_bits8_t, \
       INT8_MIN,  INT8_MAX) \
    _m(__VA_ARGS__, UINT8,  uint8,  uint8_t,  uint32_t, uct_o2m_bits8_t, \
       0,         UINT8_MAX) \
    _m(__VA_ARGS__, INT16,  int16,  int16_t,  uint32_t, uct_o2m_bits16_t, \
       INT16_MIN, INT16_MAX) \
    _m(__VA_ARGS__, UINT16, uint16, uint16_t, uint32_t, uct_o2m_bits16_t, \
       0,         UINT16_MAX) \
    _m(__VA_ARGS__, INT32,  int32,  int32_t,  uint32_t, uct_o2m_bits32_t, \
       INT32_MIN, INT32_MAX) \
    _m(__VA_ARGS__, UINT32, uint32, uint32_t, uint32_t, uct_o2m_bits32_t, \
       0,         UINT32_MAX) \
    _m(__VA_ARGS__, INT64,  int64,  int64_t,  uint64_t, uct_o2m_bits64_t, \
       INT64_MIN, INT64_MAX) \
    _m(__VA_ARGS__, UINT64, uint64, uint64_t, uint64_t, uct_o2m_bits64_t, \
       0,         UINT64_MAX)

#define UCT_O2M_FOR_FP_DTYPES(_m, ...) \
    _m(__VA_ARGS__, FLOAT,  float,  float,    float,    uct_o2m_bits32_t, \
       -__builtin_inff(), __builtin_inff()) \
    _m(__VA_ARGS__, DOUBLE, double, double,   double,   uct_o2m_bits64_t, \
       -__builtin_inf(),  __builtin_inf())

#define UCT_O2M_FOR_ALL_DTYPES(_m, ...) \
    UCT_O2M_FOR_INT_DTYPES(_m, __VA_ARGS__) \
    UCT_O2M_FOR_FP_DTYPES(_m, __VA_ARGS__)


/* Native atomic read-modify-write of the integer operations that have one */
#define UCT_O2M_ATOMIC_FETCH_SUM  __atomic_fetch_add
#define UCT_O2M_ATOMIC_FETCH_BAND __atomic_fetch_and
#define UCT_O2M_ATOMIC_FETCH_BOR  __atomic_fetch_or
#define UCT_O2M_ATOMIC_FETCH_BXOR __atomic_fetch_xor


/*
 * Every supported (op, dtype) pair of the plain kernels:
 * _m(OP, op, DTYPE, dtype, type, wtype, btype, lowest, largest)
 */
#define UCT_O2M_FOR_REDUCE_PAIRS(_m) \
    UCT_O2M_FOR_ALL_DTYPES(_m, SUM,  sum) \
    UCT_O2M_FOR_ALL_DTYPES(_m, PROD, prod) \
    UCT_O2M_FOR_ALL_DTYPES(_m, MIN,  min) \
    UCT_O2M_FOR_ALL_DTYPES(_m, MAX,  max) \
    UCT_O2M_FOR_INT_DTYPES(_m, BAND, band) \
    UCT_O2M_FOR_INT_DTYPES(_m, BOR,  bor) \
    UCT_O2M_FOR_INT_DTYPES(_m, BXOR, bxor) \
    UCT_O2M_FOR_ALL_DTYPES(_m, LAND, land) \
    UCT_O2M_FOR_ALL_DTYPES(_m, LOR,  lor) \
    UCT_O2M_FOR_ALL_DTYPES(_m, LXOR, lxor)

/*
 * The same pairs for the atomic kernels, split by implementation: _native
 * for a native atomic read-modify-write, _cas for a compare-and-swap loop.
 */
#define UCT_O2M_FOR_ATOMIC_PAIRS(_native, _cas) \
    UCT_O2M_FOR_INT_DTYPES(_native, SUM,  sum) \
    UCT_O2M_FOR_FP_DTYPES(_cas,     SUM,  sum) \
    UCT_O2M_FOR_ALL_DTYPES(_cas,    PROD, prod) \
    UCT_O2M_FOR_ALL_DTYPES(_cas,    MIN,  min) \
    UCT_O2M_FOR_ALL_DTYPES(_cas,    MAX,  max) \
    UCT_O2M_FOR_INT_DTYPES(_native, BAND, band) \
    UCT_O2M_FOR_INT_DTYPES(_native, BOR,  bor) \
    UCT_O2M_FOR_INT_DTYPES(_native, BXOR, bxor) \
    UCT_O2M_FOR_ALL_DTYPES(_cas,    LAND, land) \
    UCT_O2M_FOR_ALL_DTYPES(_cas,    LOR,  lor) \
    UCT_O2M_FOR_ALL_DTYPES(_cas,    LXOR, lxor)


/* Plain kernel: the template shared with UCG */
#define UCT_O2M_DEFINE_REDUCE(_OP, _op, _DT, _dt, _type, _wtype, _btype, \
                              _lowest, _largest) \
    UCT_O2M_DEFINE_REDUCE_KERNEL(uct_o2m_reduce_##_op##_##_dt, \
                                 UCT_O2M_EXPR_##_OP, _type, _wtype, \
                                 uct_o2m_##_dt##_u_t)

/* Atomic kernel with a native read-modify-write (integer types) */
#define UCT_O2M_DEFINE_ATOMIC_NATIVE(_OP, _op, _DT, _dt, _type, _wtype, \
                                     _btype, _lowest, _largest) \
    static void \
    uct_o2m_reduce_atomic_##_op##_##_dt(void *dst_p, const void *src_p, \
                                        size_t count) \
    { \
        _btype *dst                    = (_btype*)dst_p; \
        const uct_o2m_##_dt##_u_t *src = (const uct_o2m_##_dt##_u_t*)src_p; \
        size_t i; \
        \
        for (i = 0; i < count; ++i) { \
            (void)UCT_O2M_ATOMIC_FETCH_##_OP(&dst[i], (_btype)src[i], \
                                             UCT_O2M_ATOMIC_ORDER); \
        } \
    }

/*
 * Atomic kernel with a compare-and-swap loop on the bit pattern of the
 * element; nothing is written when the element would not change.
 */
#define UCT_O2M_DEFINE_ATOMIC_CAS(_OP, _op, _DT, _dt, _type, _wtype, _btype, \
                                  _lowest, _largest) \
    static void \
    uct_o2m_reduce_atomic_##_op##_##_dt(void *dst_p, const void *src_p, \
                                        size_t count) \
    { \
        _btype *dst                    = (_btype*)dst_p; \
        const uct_o2m_##_dt##_u_t *src = (const uct_o2m_##_dt##_u_t*)src_p; \
        _btype prev, next; \
        _type a, b, r; \
        size_t i; \
        \
        for (i = 0; i < count; ++i) { \
            b    = src[i]; \
            prev = __atomic_load_n(&dst[i], UCT_O2M_ATOMIC_ORDER); \
            do { \
                memcpy(&a, &prev, sizeof(a)); \
                r = UCT_O2M_EXPR_##_OP(_type, _wtype, a, b); \
                memcpy(&next, &r, sizeof(next)); \
                if (next == prev) { \
                    break; \
                } \
            } while (!__atomic_compare_exchange_n(&dst[i], &prev, next, 1, \
                                                  UCT_O2M_ATOMIC_ORDER, \
                                                  UCT_O2M_ATOMIC_ORDER)); \
        } \
    }

/* Fill with one value, any alignment */
#define UCT_O2M_DEFINE_FILL(_unused, _DT, _dt, _type, _wtype, _btype, \
                            _lowest, _largest) \
    static void \
    uct_o2m_fill_##_dt(void *dst_p, _type value, size_t count) \
    { \
        uct_o2m_##_dt##_u_t *dst = (uct_o2m_##_dt##_u_t*)dst_p; \
        const size_t block       = UCT_O2M_REDUCE_BLOCK / sizeof(_type); \
        size_t i, j; \
        \
        for (i = 0; i + block <= count; i += block) { \
            for (j = 0; j < block; ++j) { \
                dst[i + j] = value; \
            } \
        } \
        for (; i < count; ++i) { \
            dst[i] = value; \
        } \
    }

/* Identity of op for one dtype; 0 when there is none */
#define UCT_O2M_DEFINE_IDENTITY(_unused, _DT, _dt, _type, _wtype, _btype, \
                                _lowest, _largest) \
    static int \
    uct_o2m_identity_##_dt(uct_o2m_op_t op, _type *value_p) \
    { \
        _btype all_ones = (_btype)~(_btype)0; \
        \
        switch (op) { \
        case UCT_O2M_OP_SUM: \
        case UCT_O2M_OP_BOR: \
        case UCT_O2M_OP_BXOR: \
        case UCT_O2M_OP_LOR: \
        case UCT_O2M_OP_LXOR: \
            *value_p = 0; \
            return 1; \
        case UCT_O2M_OP_PROD: \
        case UCT_O2M_OP_LAND: \
            *value_p = 1; \
            return 1; \
        case UCT_O2M_OP_MIN: \
            *value_p = _largest; \
            return 1; \
        case UCT_O2M_OP_MAX: \
            *value_p = _lowest; \
            return 1; \
        case UCT_O2M_OP_BAND: \
            memcpy(value_p, &all_ones, sizeof(*value_p)); \
            return 1; \
        default: \
            return 0; \
        } \
    }

#define UCT_O2M_DEFINE_IDENTITY_FILL(_unused, _DT, _dt, _type, _wtype, \
                                     _btype, _lowest, _largest) \
    case UCT_O2M_DT_##_DT: { \
        _type value; \
        if (uct_o2m_identity_##_dt(op, &value)) { \
            uct_o2m_fill_##_dt(dst, value, count); \
        } \
        break; \
    }

#define UCT_O2M_TABLE_ENTRY(_OP, _op, _DT, _dt, _type, _wtype, _btype, \
                            _lowest, _largest) \
    [UCT_O2M_OP_##_OP][UCT_O2M_DT_##_DT] = uct_o2m_reduce_##_op##_##_dt,

#define UCT_O2M_ATOMIC_TABLE_ENTRY(_OP, _op, _DT, _dt, _type, _wtype, _btype, \
                                   _lowest, _largest) \
    [UCT_O2M_OP_##_OP][UCT_O2M_DT_##_DT] = \
        uct_o2m_reduce_atomic_##_op##_##_dt,

#define UCT_O2M_SIZE_ENTRY(_unused, _DT, _dt, _type, _wtype, _btype, \
                           _lowest, _largest) \
    [UCT_O2M_DT_##_DT] = sizeof(_type),

#define UCT_O2M_DTYPE_NAME_ENTRY(_unused, _DT, _dt, _type, _wtype, _btype, \
                                 _lowest, _largest) \
    [UCT_O2M_DT_##_DT] = #_dt,


UCT_O2M_FOR_REDUCE_PAIRS(UCT_O2M_DEFINE_REDUCE)
UCT_O2M_FOR_ATOMIC_PAIRS(UCT_O2M_DEFINE_ATOMIC_NATIVE,
                         UCT_O2M_DEFINE_ATOMIC_CAS)
UCT_O2M_FOR_ALL_DTYPES(UCT_O2M_DEFINE_FILL, _)
UCT_O2M_FOR_ALL_DTYPES(UCT_O2M_DEFINE_IDENTITY, _)


static const uct_o2m_reduce_func_t
uct_o2m_reduce_funcs[UCT_O2M_OP_LAST][UCT_O2M_DT_LAST] = {
    UCT_O2M_FOR_REDUCE_PAIRS(UCT_O2M_TABLE_ENTRY)
};

static const uct_o2m_reduce_func_t
uct_o2m_reduce_atomic_funcs[UCT_O2M_OP_LAST][UCT_O2M_DT_LAST] = {
    UCT_O2M_FOR_ATOMIC_PAIRS(UCT_O2M_ATOMIC_TABLE_ENTRY,
                             UCT_O2M_ATOMIC_TABLE_ENTRY)
};

static const size_t uct_o2m_dtype_sizes[UCT_O2M_DT_LAST] = {
    UCT_O2M_FOR_ALL_DTYPES(UCT_O2M_SIZE_ENTRY, _)
};

static const char *uct_o2m_dtype_names[UCT_O2M_DT_LAST] = {
    UCT_O2M_FOR_ALL_DTYPES(UCT_O2M_DTYPE_NAME_ENTRY, _)
};

static const char *uct_o2m_op_names[UCT_O2M_OP_LAST] = {
    [UCT_O2M_OP_GATHER] = "gather",
    [UCT_O2M_OP_SUM]    = "sum",
    [UCT_O2M_OP_PROD]   = "prod",
    [UCT_O2M_OP_MIN]    = "min",
    [UCT_O2M_OP_MAX]    = "max",
    [UCT_O2M_OP_BAND]   = "band",
    [UCT_O2M_OP_BOR]    = "bor",
    [UCT_O2M_OP_BXOR]   = "bxor",
    [UCT_O2M_OP_LAND]   = "land",
    [UCT_O2M_OP_LOR]    = "lor",
    [UCT_O2M_OP_LXOR]   = "lxor"
};

static const char *uct_o2m_mode_names[UCT_O2M_MODE_LAST] = {
    [UCT_O2M_MODE_BATCHED]     = "batched",
    [UCT_O2M_MODE_CENTRALIZED] = "centralized",
    [UCT_O2M_MODE_LOCKED]      = "locked",
    [UCT_O2M_MODE_ATOMIC]      = "atomic"
};

static const char uct_o2m_invalid_name[] = "<invalid>";


static inline int uct_o2m_op_valid(uct_o2m_op_t op)
{
    return (unsigned)op < UCT_O2M_OP_LAST;
}

static inline int uct_o2m_dtype_valid(uct_o2m_dtype_t dtype)
{
    return (unsigned)dtype < UCT_O2M_DT_LAST;
}

/*
 * Whether atomics of the element size are lock-free whatever the address
 * (needed between processes); the dtype must be valid.
 */
static int uct_o2m_dtype_lock_free(uct_o2m_dtype_t dtype)
{
    switch (uct_o2m_dtype_sizes[dtype]) {
    case 1:
        return __atomic_always_lock_free(1, 0);
    case 2:
        return __atomic_always_lock_free(2, 0);
    case 4:
        return __atomic_always_lock_free(4, 0);
    case 8:
        return __atomic_always_lock_free(8, 0);
    default:
        return 0;
    }
}

static inline int uct_o2m_pair_valid(uct_o2m_op_t op, uct_o2m_dtype_t dtype)
{
    return uct_o2m_op_valid(op) && uct_o2m_dtype_valid(dtype);
}

uct_o2m_reduce_func_t uct_o2m_reduce_func(uct_o2m_op_t op,
                                          uct_o2m_dtype_t dtype)
{
    if (!uct_o2m_pair_valid(op, dtype)) {
        return NULL;
    }

    return uct_o2m_reduce_funcs[op][dtype];
}

uct_o2m_reduce_func_t uct_o2m_reduce_atomic_func(uct_o2m_op_t op,
                                                 uct_o2m_dtype_t dtype)
{
    if (!uct_o2m_pair_valid(op, dtype) || !uct_o2m_dtype_lock_free(dtype)) {
        return NULL;
    }

    return uct_o2m_reduce_atomic_funcs[op][dtype];
}

void uct_o2m_reduce(uct_o2m_op_t op, uct_o2m_dtype_t dtype, void *dst,
                    const void *src, size_t count)
{
    uct_o2m_reduce_func_t func = uct_o2m_reduce_func(op, dtype);

    if (func != NULL) {
        func(dst, src, count);
    }
}

void uct_o2m_reduce_atomic(uct_o2m_op_t op, uct_o2m_dtype_t dtype, void *dst,
                           const void *src, size_t count)
{
    uct_o2m_reduce_func_t func = uct_o2m_reduce_atomic_func(op, dtype);

    if (func != NULL) {
        func(dst, src, count);
    }
}

int uct_o2m_reduce_supported(uct_o2m_op_t op, uct_o2m_dtype_t dtype)
{
    if (op == UCT_O2M_OP_GATHER) {
        return 1;
    }

    return uct_o2m_reduce_func(op, dtype) != NULL;
}

int uct_o2m_atomic_supported(uct_o2m_op_t op, uct_o2m_dtype_t dtype)
{
    if (op == UCT_O2M_OP_GATHER) {
        return 1;
    }

    return uct_o2m_reduce_atomic_func(op, dtype) != NULL;
}

void uct_o2m_reduce_identity(uct_o2m_op_t op, uct_o2m_dtype_t dtype,
                             void *dst, size_t count)
{
    if (op == UCT_O2M_OP_GATHER) {
        if (uct_o2m_dtype_valid(dtype)) {
            memset(dst, 0, count * uct_o2m_dtype_sizes[dtype]);
        }
        return;
    }

    if (!uct_o2m_reduce_supported(op, dtype)) {
        return;
    }

    switch (dtype) {
    UCT_O2M_FOR_ALL_DTYPES(UCT_O2M_DEFINE_IDENTITY_FILL, _)
    default:
        break;
    }
}

int uct_o2m_op_supported(uct_o2m_mode_t mode, uct_o2m_op_t op,
                         uct_o2m_dtype_t dtype)
{
    if ((unsigned)mode >= UCT_O2M_MODE_LAST) {
        return 0;
    }

    if (mode == UCT_O2M_MODE_ATOMIC) {
        return uct_o2m_atomic_supported(op, dtype);
    }

    return uct_o2m_reduce_supported(op, dtype);
}

size_t uct_o2m_dtype_size(uct_o2m_dtype_t dtype)
{
    return uct_o2m_dtype_valid(dtype) ? uct_o2m_dtype_sizes[dtype] : 0;
}

const char *uct_o2m_mode_name(uct_o2m_mode_t mode)
{
    return ((unsigned)mode < UCT_O2M_MODE_LAST) ? uct_o2m_mode_names[mode] :
                                                  uct_o2m_invalid_name;
}

const char *uct_o2m_op_name(uct_o2m_op_t op)
{
    return uct_o2m_op_valid(op) ? uct_o2m_op_names[op] : uct_o2m_invalid_name;
}

const char *uct_o2m_dtype_name(uct_o2m_dtype_t dtype)
{
    return uct_o2m_dtype_valid(dtype) ? uct_o2m_dtype_names[dtype] :
                                        uct_o2m_invalid_name;
}
