/**
 * ucx-o2m: the one template of the element-wise reduction kernels.
 *
 * The plugin instantiates it for the types of uct_o2m_dtype_t
 * (o2m_reduce.c) and exports the kernels through uct_o2m_reduce_func().
 * UCG takes those for the same types and instantiates the template only for
 * the types it adds (long double, complex, MINLOC/MAXLOC pairs), so that a
 * reduction gives bit-identical results whichever library computes it and
 * there is one loop to tune.
 *
 * A kernel computes dst[i] = _expr(dst[i], src[i]) for i < count.  dst and
 * src may have any alignment (the element type given to the template is an
 * unaligned, may_alias variant of the C type) and must not overlap: they are
 * restrict-qualified, which lets GCC vectorize the loop at -O2 without
 * run-time alias checks.
 */
#ifndef UCT_O2M_REDUCE_KERNEL_H_
#define UCT_O2M_REDUCE_KERNEL_H_

#include <stddef.h>


/*
 * Bytes processed by the inner loop of a kernel.  The inner loop has a trip
 * count known at compile time and a multiple of any vector length up to 512
 * bits, which is what GCC's "very cheap" vectorizer cost model (the default
 * at -O2 since GCC 12) needs: no epilogue, no peeling.  The tail of a buffer
 * is handled by a scalar loop.
 */
#define UCT_O2M_REDUCE_BLOCK   256


/*
 * Attribute of the element types the kernels access memory through: loads
 * and stores through them are well defined at any address (no UBSan
 * alignment report) and compile to plain (vector) loads and stores on x86 /
 * aarch64.
 */
#define UCT_O2M_UNALIGNED      __attribute__((aligned(1), may_alias))


/*
 * Element operations: dst element _a, src element _b, both of type _t;
 * _w is the arithmetic type (integer SUM/PROD are computed in an unsigned
 * type at least as wide as int, so that they wrap around without undefined
 * behaviour).  MIN/MAX use the C comparison, _a first: with floats the
 * result is _b when either is a NaN and when they compare equal.  Logical
 * operations compare against 0 and give 1 or 0 in the element type.
 */
#define UCT_O2M_EXPR_SUM(_t, _w, _a, _b)  ((_t)((_w)(_a) + (_w)(_b)))
#define UCT_O2M_EXPR_PROD(_t, _w, _a, _b) ((_t)((_w)(_a) * (_w)(_b)))
#define UCT_O2M_EXPR_MIN(_t, _w, _a, _b)  (((_a) < (_b)) ? (_a) : (_b))
#define UCT_O2M_EXPR_MAX(_t, _w, _a, _b)  (((_a) > (_b)) ? (_a) : (_b))
#define UCT_O2M_EXPR_BAND(_t, _w, _a, _b) ((_t)((_a) & (_b)))
#define UCT_O2M_EXPR_BOR(_t, _w, _a, _b)  ((_t)((_a) | (_b)))
#define UCT_O2M_EXPR_BXOR(_t, _w, _a, _b) ((_t)((_a) ^ (_b)))
#define UCT_O2M_EXPR_LAND(_t, _w, _a, _b) \
    ((_t)(((_a) != 0) & ((_b) != 0)))
#define UCT_O2M_EXPR_LOR(_t, _w, _a, _b) \
    ((_t)(((_a) != 0) | ((_b) != 0)))
#define UCT_O2M_EXPR_LXOR(_t, _w, _a, _b) \
    ((_t)(((_a) != 0) ^ ((_b) != 0)))


/*
 * Define kernel @a _func: dst[i] = _expr(_type, _wtype, dst[i], src[i]),
 * with memory accessed through @a _utype (an UCT_O2M_UNALIGNED typedef of
 * @a _type).  The blocked inner loop is vectorized at -O2 and -O3, the
 * scalar tail at -O3.  Its signature is uct_o2m_reduce_func_t's.
 */
#define UCT_O2M_DEFINE_REDUCE_KERNEL(_func, _expr, _type, _wtype, _utype) \
    static void \
    _func(void *__restrict dst_p, const void *__restrict src_p, size_t count) \
    { \
        _utype *dst        = (_utype*)dst_p; \
        const _utype *src  = (const _utype*)src_p; \
        const size_t block = UCT_O2M_REDUCE_BLOCK / sizeof(_type); \
        size_t i, j; \
        \
        for (i = 0; i + block <= count; i += block) { \
            for (j = 0; j < block; ++j) { \
                dst[i + j] = _expr(_type, _wtype, dst[i + j], src[i + j]); \
            } \
        } \
        for (; i < count; ++i) { \
            dst[i] = _expr(_type, _wtype, dst[i], src[i]); \
        } \
    }

#endif
