/**
 * UCG datatypes and reduction operations.
 */
#ifndef UCG_DT_H_
#define UCG_DT_H_

#include "api/ucg.h"
#include "o2m_reduce.h"

/** A reduction: op on elements of dtype (dt_size bytes) */
typedef struct ucg_op_desc {
    ucg_op_t              op;
    ucg_dtype_t           dtype;
    size_t                dt_size;
    ucg_user_op_t         user_op;  /* op == UCG_OP_USER */
    /* Other ops: the kernel, reduce(inout, in, count) */
    uct_o2m_reduce_func_t reduce;
} ucg_op_desc_t;

/** Fill @a desc from collective parameters; UCS_ERR_INVALID_PARAM (and a log
 *  line) when the op is not defined on the type, or a user op has no func. */
ucs_status_t ucg_op_desc_init(ucg_op_desc_t *desc, ucg_op_t op,
                              ucg_dtype_t dtype, size_t dt_size,
                              const ucg_user_op_t *user_op);

/** inout[i] = in[i] (op) inout[i], for i < count.  @a in holds the
 *  contribution of lower ranks (matters for non-commutative user ops).
 *  Buffers need no particular alignment. */
void ucg_op_reduce(const ucg_op_desc_t *desc, const void *in, void *inout,
                   size_t count);

int ucg_op_is_commutative(const ucg_op_desc_t *desc);

/** The sm_incast (op, dtype) pair doing the same reduction; 0 when there is
 *  none (types or ops the transport does not know, user ops). */
int ucg_op_to_o2m(const ucg_op_desc_t *desc, uct_o2m_op_t *op_p,
                  uct_o2m_dtype_t *dtype_p);

/* Parse the names returned by ucg_dtype_name() / ucg_op_name(),
 * case-insensitively (ucg_info's plan queries).  Return 1 and set the
 * output when @a name is known, 0 otherwise. */
int ucg_dtype_from_name(const char *name, ucg_dtype_t *dtype_p);
int ucg_op_from_name(const char *name, ucg_op_t *op_p);

#endif
