/**
 * UCG phases of the reductions whose members get different results:
 *  - P2P_REDUCE_SCATTER: every member sends each other member that member's
 *    block of its vector and receives its own block of every other vector
 *    (all posted at once, empty blocks as empty messages); then it folds the
 *    blocks in rank order into its result.  Any op: the fold keeps rank
 *    order, and each member moves (n-1)/n of its vector once.
 *  - P2P_SCAN: recursive doubling (Hillis-Steele): in round k a member
 *    sends its partial prefix to the member 2^k after it and prepends the
 *    one of the member 2^k before it (which covers lower ranks only), so
 *    every combination is "lower ranks op higher ranks": any op.  Exscan
 *    also prepends it to a second accumulator, the result, which member 0
 *    never gets (its receive buffer is not written).
 *  - SM_SCAN, SM_REDUCE_SCATTER: SM_ALLREDUCE's exchange
 *    (ucg_sm_allreduce.c) of every member's vector; each member folds the
 *    vectors of the members before it (and its own for scan), or its block
 *    of every vector.
 * Every receive's length is the one this member computes from its own
 * arguments (ucg_p2p.h): a peer with another count fails the collective.
 */
#include "ucg_p2p.h"

#include <string.h>


/* The set is every rank in rank order (the planner's flat set): a member's
 * index is its rank, which indexes coll->dblk */
static ucs_status_t ucg_redscan_check_set(ucg_coll_t *coll)
{
    if (coll->set->count == coll->group->size) {
        return UCS_OK;
    }

    ucs_error("ucg group %u seq %u phase %u: a set of %u members in a group "
              "of %u", coll->group->id, coll->seq, coll->phase_idx,
              coll->set->count, coll->group->size);
    return UCS_ERR_INVALID_PARAM;
}

/* Fold @a num vectors of @a count elements at @a vecs (stride @a len) in
 * rank order into @a result: v0 op (v1 op (... op v[num-1])) */
static void ucg_redscan_fold(ucg_coll_t *coll, const void *vecs, size_t len,
                             unsigned num, size_t count, void *result)
{
    unsigned i;

    memcpy(result, UCS_PTR_BYTE_OFFSET(vecs, (size_t)(num - 1) * len), len);
    for (i = num - 1; i-- > 0;) {
        ucg_op_reduce(&coll->op, UCS_PTR_BYTE_OFFSET(vecs, (size_t)i * len),
                      result, count);
    }
}


/* ------------------------------------------------------------------------ */
/* P2P_REDUCE_SCATTER                                                       */
/* ------------------------------------------------------------------------ */

ucs_status_t ucg_p2p_reduce_scatter_start(ucg_coll_t *coll)
{
    unsigned n            = coll->set->count;
    unsigned me           = coll->my_idx;
    const size_t *lens    = coll->dblk.len;
    const size_t *offs    = coll->dblk.off;
    size_t mine           = lens[me];
    ucs_status_t status;
    unsigned i, peer;

    status = ucg_redscan_check_set(coll);
    if (status != UCS_OK) {
        return status;
    }

    /* One slot per member for this member's block: its own first */
    status = ucg_p2p_scratch(coll, (size_t)n * mine, &coll->ps.redscan.tmp);
    if (status != UCS_OK) {
        return status;
    }
    if (mine > 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(coll->ps.redscan.tmp, me * mine),
               UCS_PTR_BYTE_OFFSET(coll->data, offs[me]), mine);
    }

    /* Starting at the next member: not everyone sends to 0 first.  Empty
     * blocks are sent too: every receive is matched by a message whose
     * length is checked, so a member with other counts fails the
     * collective instead of leaving a peer waiting for a block it never
     * sends */
    for (i = 1; i < n; ++i) {
        peer   = (me + i) % n;
        status = ucg_p2p_send(coll, ucg_p2p_rank(coll, peer), 0,
                              UCS_PTR_BYTE_OFFSET(coll->data, offs[peer]),
                              lens[peer]);
        if (status != UCS_OK) {
            return status;
        }

        peer   = (me + n - i) % n;
        status = ucg_p2p_recv(coll, ucg_p2p_rank(coll, peer), 0,
                              UCS_PTR_BYTE_OFFSET(coll->ps.redscan.tmp,
                                                  peer * mine),
                              mine);
        if (status != UCS_OK) {
            return status;
        }
    }

    return ucg_p2p_reduce_scatter_progress(coll);
}

ucs_status_t ucg_p2p_reduce_scatter_progress(ucg_coll_t *coll)
{
    unsigned me = coll->my_idx;
    size_t len;
    ucs_status_t status;

    if (coll->ps.redscan.done) {
        return UCS_OK;
    }

    /* The blocks are in once every request completed (the sends too: the
     * vector may be the receive buffer, with MPI_IN_PLACE) */
    status = ucg_p2p_test(coll);
    if (status != UCS_OK) {
        return status;
    }

    coll->ps.redscan.done = 1;
    len                   = coll->dblk.len[me];
    if (len > 0) {
        ucg_redscan_fold(coll, coll->ps.redscan.tmp, len, coll->set->count,
                         len / coll->dt_size, coll->params.rbuf);
    }
    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* P2P_SCAN                                                                 */
/* ------------------------------------------------------------------------ */

/* Post round ps.round: send the partial prefix (acc) forward, receive the
 * one from behind into tmp */
static ucs_status_t ucg_p2p_scan_post(ucg_coll_t *coll)
{
    unsigned me   = coll->my_idx;
    unsigned n    = coll->set->count;
    unsigned dist = 1u << coll->ps.redscan.round;
    ucs_status_t status;

    if (me + dist < n) {
        status = ucg_p2p_send(coll, ucg_p2p_rank(coll, me + dist),
                              coll->ps.redscan.round, coll->acc, coll->len);
        if (status != UCS_OK) {
            return status;
        }
    }

    coll->ps.redscan.recvd = (me >= dist);
    if (coll->ps.redscan.recvd) {
        return ucg_p2p_recv(coll, ucg_p2p_rank(coll, me - dist),
                            coll->ps.redscan.round, coll->ps.redscan.tmp,
                            coll->len);
    }
    return UCS_OK;
}

ucs_status_t ucg_p2p_scan_start(ucg_coll_t *coll)
{
    ucs_status_t status;
    unsigned rounds = 0;

    status = ucg_redscan_check_set(coll);
    if (status != UCS_OK) {
        return status;
    }

    while ((1u << rounds) < coll->set->count) {
        ++rounds;
    }

    status = ucg_p2p_scratch(coll, coll->len, &coll->ps.redscan.tmp);
    if (status != UCS_OK) {
        return status;
    }

    coll->ps.redscan.rounds = rounds;
    coll->ps.redscan.round  = 0;
    if (rounds > 0) {
        status = ucg_p2p_scan_post(coll);
        if (status != UCS_OK) {
            return status;
        }
    }
    return ucg_p2p_scan_progress(coll);
}

ucs_status_t ucg_p2p_scan_progress(ucg_coll_t *coll)
{
    int exscan = (coll->params.type == UCG_COLL_EXSCAN);
    ucs_status_t status;

    while (coll->ps.redscan.round < coll->ps.redscan.rounds) {
        status = ucg_p2p_test(coll);
        if (status != UCS_OK) {
            return status;
        }

        if (coll->ps.redscan.recvd) {
            /* tmp holds lower ranks than acc and than the result */
            if (exscan && coll->ps.redscan.have) {
                ucg_op_reduce(&coll->op, coll->ps.redscan.tmp,
                              coll->params.rbuf, coll->params.count);
            } else if (exscan) {
                memcpy(coll->params.rbuf, coll->ps.redscan.tmp, coll->len);
                coll->ps.redscan.have = 1;
            }
            ucg_op_reduce(&coll->op, coll->ps.redscan.tmp, coll->acc,
                          coll->params.count);
        }

        if (++coll->ps.redscan.round < coll->ps.redscan.rounds) {
            status = ucg_p2p_scan_post(coll);
            if (status != UCS_OK) {
                return status;
            }
        }
    }

    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* SM_SCAN                                                                  */
/* ------------------------------------------------------------------------ */

void ucg_sm_scan_fold(ucg_coll_t *coll, void *vecs)
{
    unsigned me  = coll->my_idx;
    unsigned num = me + (coll->params.type == UCG_COLL_SCAN);
    size_t count, offset;
    unsigned i;

    /* Ours in its slot first: acc may be the receive buffer (scan, or a
     * reduce_scatter in place) */
    memcpy(UCS_PTR_BYTE_OFFSET(vecs, me * coll->len), coll->acc, coll->len);

    if (ucg_coll_type_is_reduce_scatter(coll->params.type)) {
        /* Member me's block of every vector, in rank order */
        count  = coll->dblk.len[me] / coll->dt_size;
        offset = coll->dblk.off[me];
        if (count == 0) {
            return;
        }
        memcpy(coll->params.rbuf,
               UCS_PTR_BYTE_OFFSET(vecs, (coll->set->count - 1) * coll->len +
                                   offset), coll->dblk.len[me]);
        for (i = coll->set->count - 1; i-- > 0;) {
            ucg_op_reduce(&coll->op,
                          UCS_PTR_BYTE_OFFSET(vecs, i * coll->len + offset),
                          coll->params.rbuf, count);
        }
        return;
    }

    if (num > 0) { /* exscan on member 0: its rbuf is not written */
        ucg_redscan_fold(coll, vecs, coll->len, num, coll->params.count,
                         coll->params.rbuf);
    }
}
