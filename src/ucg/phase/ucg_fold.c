/**
 * UCG phase FOLD: the root of a rank-ordered reduction (non-commutative
 * operations) reduces the gathered vectors itself, in rank order.
 */
#include "ucg_coll.h"

#include <string.h>


/* FOLD: the root combines the gathered vectors in rank order.  Folding from
 * the last rank down, acc = v[i] op acc, gives v0 op (v1 op (... v[n-1]))
 * with each user call's "in" from a lower rank than its "inout". */
ucs_status_t ucg_fold_start(ucg_coll_t *coll)
{
    unsigned size = coll->group->size;
    unsigned i;

    memcpy(coll->acc,
           UCS_PTR_BYTE_OFFSET(coll->gbuf, (size - 1) * coll->block),
           coll->len);
    for (i = size - 1; i-- > 0;) {
        ucg_op_reduce(&coll->op,
                      UCS_PTR_BYTE_OFFSET(coll->gbuf, i * coll->block),
                      coll->acc, coll->params.count);
    }
    return UCS_OK;
}

ucs_status_t ucg_fold_progress(ucg_coll_t *coll)
{
    return UCS_OK;
}
