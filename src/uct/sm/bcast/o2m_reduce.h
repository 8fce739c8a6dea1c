/**
 * ucx-o2m: reduction kernels of the sm_incast fan-in transport.
 *
 * Element-wise reductions dst[i] = dst[i] op src[i] over the types of
 * uct_o2m_dtype_t, in a plain (non-atomic) and an atomic flavour.
 *
 * Semantics
 * ---------
 *  - SUM, PROD on integer types wrap around (two's complement), for signed
 *    types too.
 *  - MIN, MAX use the C comparison: min(a, b) = a < b ? a : b and
 *    max(a, b) = a > b ? a : b, with a = dst[i], b = src[i].  With floats,
 *    the result is therefore src[i] when either is a NaN (like x86 minps /
 *    maxps), and src[i] when they compare equal (min(-0.0, +0.0) = +0.0).
 *  - BAND, BOR, BXOR: integer types only.
 *  - LAND, LOR, LXOR (MPI semantics): an element is true when it is nonzero
 *    (for float/double: when it compares unequal to 0.0, so -0.0 is false
 *    and NaN is true); the result is 1 or 0 in the element type.
 *  - GATHER is not a reduction: it is "supported" on every dtype (the
 *    transport places contributions itself) and the kernels do nothing.
 *
 * Plain kernels (uct_o2m_reduce)
 * ------------------------------
 * Every (op, dtype) pair for which uct_o2m_reduce_supported() is true, i.e.
 * everything except BAND/BOR/BXOR on float and double.  dst and src may have
 * ANY alignment (elements are accessed through 1-byte-aligned types, which
 * is well defined and costs nothing on x86 / aarch64).  dst and src must not
 * overlap (they are restrict-qualified; that is what lets GCC vectorize the
 * loops at -O2 without run-time alias checks).
 *
 * Atomic kernels (uct_o2m_reduce_atomic)
 * --------------------------------------
 * For processes that reduce into one shared destination concurrently.  The
 * supported subset (uct_o2m_atomic_supported()) is the same as the plain
 * one, provided that atomics of the element size are always lock-free on
 * the target (true on x86_64 and aarch64):
 *  - integer SUM, BAND, BOR, BXOR: native __atomic_fetch_{add,and,or,xor};
 *  - integer PROD, MIN, MAX, LAND, LOR, LXOR and every float/double op
 *    (SUM, PROD, MIN, MAX, LAND, LOR, LXOR): compare-and-swap loop on the bit
 *    pattern of the element (skipped when the element would not change).
 * Each element is updated atomically on its own; there is no atomicity
 * across elements.  dst must be aligned to the element size; src may have
 * any alignment.  The updates use relaxed memory order: the caller must
 * publish them with its own release/acquire synchronisation (e.g. a
 * release increment of an arrival counter, acquired by the root).
 * Float/double results depend on the order of the contributions unless they
 * are exact.
 *
 * Calling a kernel with an unsupported or invalid (op, dtype) does nothing.
 */
#ifndef UCT_O2M_REDUCE_H_
#define UCT_O2M_REDUCE_H_

#include "uct_o2m.h"

#include <stddef.h>

BEGIN_C_DECLS

/* The kernels are exported (UCT_O2M_API) for the tests and for UCG. */

/** A reduction kernel for one (op, dtype): dst[i] = dst[i] op src[i]. */
typedef void (*uct_o2m_reduce_func_t)(void *dst, const void *src,
                                      size_t count);


/**
 * dst[i] = dst[i] op src[i] for @a count elements of @a dtype.
 * Any alignment; dst and src must not overlap.
 */
UCT_O2M_API void uct_o2m_reduce(uct_o2m_op_t op, uct_o2m_dtype_t dtype, void *dst,
                    const void *src, size_t count);


/**
 * Same as uct_o2m_reduce(), with each element of dst updated atomically, so
 * that other threads or processes may reduce into dst concurrently.  Only
 * for (op, dtype) where uct_o2m_atomic_supported() is true.  dst must be
 * aligned to the element size; src may be unaligned.
 */
UCT_O2M_API void uct_o2m_reduce_atomic(uct_o2m_op_t op, uct_o2m_dtype_t dtype, void *dst,
                           const void *src, size_t count);


/**
 * The plain kernel of (op, dtype), to look up once instead of dispatching on
 * every call; NULL for GATHER and for unsupported or invalid pairs.
 */
UCT_O2M_API uct_o2m_reduce_func_t uct_o2m_reduce_func(uct_o2m_op_t op,
                                          uct_o2m_dtype_t dtype);


/** The atomic kernel of (op, dtype); NULL as for uct_o2m_reduce_func(). */
UCT_O2M_API uct_o2m_reduce_func_t uct_o2m_reduce_atomic_func(uct_o2m_op_t op,
                                                 uct_o2m_dtype_t dtype);


/**
 * Whether uct_o2m_reduce() supports (op, dtype): BAND/BOR/BXOR on integer
 * types only, every other op on every type.  GATHER: always 1 (dtype is
 * ignored).  0 for invalid values.
 */
UCT_O2M_API int uct_o2m_reduce_supported(uct_o2m_op_t op, uct_o2m_dtype_t dtype);


/**
 * Whether uct_o2m_reduce_atomic() supports (op, dtype): the same pairs as
 * uct_o2m_reduce_supported(), except those whose element size has no
 * always-lock-free atomics on the target (none on x86_64 / aarch64).
 * GATHER: always 1.  0 for invalid values.
 */
UCT_O2M_API int uct_o2m_atomic_supported(uct_o2m_op_t op, uct_o2m_dtype_t dtype);


/**
 * Fill @a count elements of dst with the identity of op: SUM 0, PROD 1,
 * MIN the largest value of the type (+inf for float/double), MAX the lowest
 * (-inf for float/double), BAND all bits set, BOR/BXOR 0, LAND 1, LOR/LXOR 0.
 * GATHER: zeroes.  Unsupported or invalid pairs: dst is left unchanged.
 * Any alignment.
 */
UCT_O2M_API void uct_o2m_reduce_identity(uct_o2m_op_t op, uct_o2m_dtype_t dtype,
                             void *dst, size_t count);

END_C_DECLS

#endif
