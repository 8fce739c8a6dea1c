/**
 * UCG point-to-point allreduce phases: P2P_ALLREDUCE_RD (recursive
 * doubling, state coll->ps.rd) and P2P_ALLREDUCE_RING (ring reduce-scatter
 * and allgather, state coll->ps.ring).
 */
#include "ucg_p2p.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>


/* Element range [*first, *first + *count) of segment @a seg when @a total
 * elements are split into @a nseg balanced segments */
static void ucg_p2p_segment(size_t total, unsigned nseg, unsigned seg,
                            size_t *first_p, size_t *count_p)
{
    size_t base = total / nseg;
    size_t rem  = total % nseg;

    *first_p = (seg * base) + ucs_min((size_t)seg, rem);
    *count_p = base + ((seg < rem) ? 1 : 0);
}


/* -------------------------------------------------------------------------
 * P2P_ALLREDUCE_RD: recursive doubling among p = 2^L members.  The first
 * 2 * (n - p) members pair up: the even one ("extra") gives its vector to
 * the odd one before the rounds and gets the result after them.  In every
 * combination the vector of the lower members is the "in" operand, so all
 * members compute bit-identical results.  The current value lives in acc
 * or in scratch (ps.rd.cur_in_tmp), whichever received last, to avoid copies.
 * Stages (ps.rd.stage: the posted one; == ps.rd.stages: done):
 *  - extra member: 0 send the vector, 1 receive the result;
 *  - others: 0 receive the extra partner's vector (if any), 1..L the
 *    rounds, L + 1 send the result to the extra partner (if any).
 * ---------------------------------------------------------------------- */

enum {
    UCG_P2P_RD_ROLE_PLAIN,
    UCG_P2P_RD_ROLE_EXTRA,  /* gives its vector away, gets the result */
    UCG_P2P_RD_ROLE_PAIRED  /* takes an extra member's vector */
};

#define UCG_P2P_RD_STEP_PRE       0
#define UCG_P2P_RD_STEP_ROUND(_r) (1 + (_r))
#define UCG_P2P_RD_STEP_POST(_L)  (1 + (_L))

static inline void *ucg_p2p_rd_cur(const ucg_coll_t *coll)
{
    return coll->ps.rd.cur_in_tmp ? coll->ps.rd.tmp : coll->acc;
}

static inline void *ucg_p2p_rd_other(const ucg_coll_t *coll)
{
    return coll->ps.rd.cur_in_tmp ? coll->acc : coll->ps.rd.tmp;
}

static unsigned ucg_p2p_rd_peer(const ucg_coll_t *coll, unsigned round)
{
    unsigned newidx = coll->ps.rd.newidx ^ UCS_BIT(round);
    unsigned extra  = coll->ps.rd.extra;

    return ucg_p2p_rank(coll, (newidx < extra) ? ((2 * newidx) + 1) :
                                                 (newidx + extra));
}

static ucs_status_t ucg_p2p_allreduce_rd_post(ucg_coll_t *coll)
{
    ucg_p2p_rd_state_t *ps = &coll->ps.rd;
    unsigned rounds        = ps->rounds;
    unsigned me            = coll->my_idx;
    unsigned stage         = ps->stage;
    ucs_status_t status;
    unsigned peer;

    switch (ps->role) {
    case UCG_P2P_RD_ROLE_EXTRA:
        if (stage == 0) {
            return ucg_p2p_send(coll, ucg_p2p_rank(coll, me + 1),
                                UCG_P2P_RD_STEP_PRE, coll->acc, coll->len);
        }
        /* Our vector left, acc is free again */
        return ucg_p2p_recv(coll, ucg_p2p_rank(coll, me + 1),
                            UCG_P2P_RD_STEP_POST(rounds), coll->acc,
                            coll->len);
    case UCG_P2P_RD_ROLE_PAIRED:
        if (stage == 0) {
            return ucg_p2p_recv(coll, ucg_p2p_rank(coll, me - 1),
                                UCG_P2P_RD_STEP_PRE, ps->tmp, coll->len);
        }
        break;
    default:
        if (stage == 0) {
            return UCS_OK;
        }
        break;
    }

    if (stage <= rounds) {
        peer   = ucg_p2p_rd_peer(coll, stage - 1);
        status = ucg_p2p_send(coll, peer, UCG_P2P_RD_STEP_ROUND(stage - 1),
                              ucg_p2p_rd_cur(coll), coll->len);
        if (status != UCS_OK) {
            return status;
        }

        return ucg_p2p_recv(coll, peer, UCG_P2P_RD_STEP_ROUND(stage - 1),
                            ucg_p2p_rd_other(coll), coll->len);
    }

    /* Last stage: the result to acc, and to the extra partner */
    if (ps->cur_in_tmp) {
        memcpy(coll->acc, ps->tmp, coll->len);
        ps->cur_in_tmp = 0;
    }

    if (ps->role == UCG_P2P_RD_ROLE_PAIRED) {
        return ucg_p2p_send(coll, ucg_p2p_rank(coll, me - 1),
                            UCG_P2P_RD_STEP_POST(rounds), coll->acc,
                            coll->len);
    }

    return UCS_OK;
}

/* What arrived in a completed stage goes into the current value */
static void ucg_p2p_allreduce_rd_finish(ucg_coll_t *coll)
{
    ucg_p2p_rd_state_t *ps = &coll->ps.rd;
    unsigned stage         = ps->stage;
    void *cur, *other;

    if ((ps->role == UCG_P2P_RD_ROLE_EXTRA) ||
        (stage > ps->rounds) ||
        ((stage == 0) &&
         (ps->role != UCG_P2P_RD_ROLE_PAIRED))) {
        return;
    }

    cur   = ucg_p2p_rd_cur(coll);
    other = ucg_p2p_rd_other(coll);
    if ((stage == 0) || (ps->newidx & UCS_BIT(stage - 1))) {
        /* The extra partner, or a lower round peer: result in place */
        ucg_op_reduce(&coll->op, other, cur, coll->params.count);
    } else {
        /* A higher round peer: the result lands in its buffer, which
         * becomes the current one */
        ucg_op_reduce(&coll->op, cur, other, coll->params.count);
        ps->cur_in_tmp = !ps->cur_in_tmp;
    }
}

ucs_status_t ucg_p2p_allreduce_rd_progress(ucg_coll_t *coll)
{
    ucg_p2p_rd_state_t *ps = &coll->ps.rd;
    ucs_status_t status;

    for (;;) {
        status = ucg_p2p_test(coll);
        if ((status != UCS_OK) || (ps->stage == ps->stages)) {
            return status;
        }

        ucg_p2p_allreduce_rd_finish(coll);
        if (++ps->stage < ps->stages) {
            status = ucg_p2p_allreduce_rd_post(coll);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
}

ucs_status_t ucg_p2p_allreduce_rd_start(ucg_coll_t *coll)
{
    ucg_p2p_rd_state_t *ps = &coll->ps.rd;
    unsigned n             = coll->set->count;
    unsigned me            = coll->my_idx;
    unsigned p, rounds, extra;
    ucs_status_t status;

    if (n == 1) {
        ps->stages = 0;
        ps->stage  = 0;
        return UCS_OK;
    }

    for (p = 1, rounds = 0; 2 * p <= n; p *= 2, ++rounds) {
    }
    extra = n - p;

    ps->rounds     = rounds;
    ps->extra      = extra;
    ps->stage      = 0;
    ps->cur_in_tmp = 0;

    if (me < 2 * extra) {
        ps->role   = (me % 2) ? UCG_P2P_RD_ROLE_PAIRED :
                                                 UCG_P2P_RD_ROLE_EXTRA;
        ps->newidx = me / 2;
    } else {
        ps->role   = UCG_P2P_RD_ROLE_PLAIN;
        ps->newidx = me - extra;
    }

    if (ps->role == UCG_P2P_RD_ROLE_EXTRA) {
        ps->stages = 2;
    } else {
        ps->stages = rounds + 2;
        status = ucg_p2p_scratch(coll, coll->len, &ps->tmp);
        if (status != UCS_OK) {
            return status;
        }
    }

    status = ucg_p2p_allreduce_rd_post(coll);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_allreduce_rd_progress(coll);
}


/* -------------------------------------------------------------------------
 * P2P_ALLREDUCE_RING: the vector is cut into n balanced segments.  Stages
 * 0..n-2 (reduce-scatter): send segment me - s to the right neighbour,
 * receive segment me - s - 1 from the left one into scratch and reduce it
 * (the left's partial result covers the members before us on the ring, so
 * it is the "in" operand).  Member me then holds segment me + 1 complete.
 * Stages n-1..2n-3 (allgather, t = s - n + 1): send segment me + 1 - t,
 * receive segment me - t straight into acc.  Every segment is computed by
 * one member only, so all get bit-identical results.
 * ps.ring.stage: the posted stage (2n - 2: done).
 * ---------------------------------------------------------------------- */

static void ucg_p2p_ring_segs(const ucg_coll_t *coll, unsigned stage,
                              unsigned *send_seg_p, unsigned *recv_seg_p)
{
    unsigned n  = coll->set->count;
    unsigned me = coll->my_idx;
    unsigned t;

    if (stage < n - 1) {
        *send_seg_p = (me + n - stage) % n;
        *recv_seg_p = (me + 2 * n - stage - 1) % n;
    } else {
        t           = stage - (n - 1);
        *send_seg_p = (me + 1 + n - t) % n;
        *recv_seg_p = (me + n - t) % n;
    }
}

static ucs_status_t ucg_p2p_allreduce_ring_post(ucg_coll_t *coll)
{
    unsigned n     = coll->set->count;
    unsigned stage = coll->ps.ring.stage;
    unsigned step  = stage & UCG_P2P_STEP_MASK;
    unsigned send_seg, recv_seg;
    size_t first, count;
    ucs_status_t status;
    void *rbuf;

    ucg_p2p_ring_segs(coll, stage, &send_seg, &recv_seg);

    ucg_p2p_segment(coll->params.count, n, send_seg, &first, &count);
    status = ucg_p2p_send(coll, ucg_p2p_rank(coll, (coll->my_idx + 1) % n),
                          step,
                          UCS_PTR_BYTE_OFFSET(coll->acc,
                                              first * coll->dt_size),
                          count * coll->dt_size);
    if (status != UCS_OK) {
        return status;
    }

    ucg_p2p_segment(coll->params.count, n, recv_seg, &first, &count);
    rbuf = (stage < n - 1) ? coll->ps.ring.tmp :
           UCS_PTR_BYTE_OFFSET(coll->acc, first * coll->dt_size);
    return ucg_p2p_recv(coll, ucg_p2p_rank(coll, (coll->my_idx + n - 1) % n),
                        step, rbuf, count * coll->dt_size);
}

ucs_status_t ucg_p2p_allreduce_ring_progress(ucg_coll_t *coll)
{
    ucg_p2p_ring_state_t *ps = &coll->ps.ring;
    unsigned n               = coll->set->count;
    unsigned send_seg, recv_seg;
    size_t first, count;
    ucs_status_t status;

    for (;;) {
        status = ucg_p2p_test(coll);
        if ((status != UCS_OK) || (ps->stage == 2 * (n - 1))) {
            return status;
        }

        if (ps->stage < n - 1) {
            ucg_p2p_ring_segs(coll, ps->stage, &send_seg, &recv_seg);
            ucg_p2p_segment(coll->params.count, n, recv_seg, &first, &count);
            ucg_op_reduce(&coll->op, ps->tmp,
                          UCS_PTR_BYTE_OFFSET(coll->acc,
                                              first * coll->dt_size),
                          count);
        }

        if (++ps->stage < 2 * (n - 1)) {
            status = ucg_p2p_allreduce_ring_post(coll);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
}

ucs_status_t ucg_p2p_allreduce_ring_start(ucg_coll_t *coll)
{
    unsigned n = coll->set->count;
    ucs_status_t status;

    coll->ps.ring.stage = 0;
    if (n == 1) {
        return UCS_OK;
    }

    /* Segment 0 is a largest one */
    status = ucg_p2p_scratch(coll,
                             ucs_div_round_up(coll->params.count, n) *
                             coll->dt_size, &coll->ps.ring.tmp);
    if (status != UCS_OK) {
        return status;
    }

    status = ucg_p2p_allreduce_ring_post(coll);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_allreduce_ring_progress(coll);
}
