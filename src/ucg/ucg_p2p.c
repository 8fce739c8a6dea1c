/**
 * UCG point-to-point phases: the P2P_* methods of ucg_plan.h over the tag
 * primitives of ucg_coll.c.
 *
 * Every algorithm is a small state machine in coll->ps: start() posts the
 * first step, progress() waits until ucg_p2p_test() reports everything
 * posted so far as done, finishes that step (reduces what arrived) and posts
 * the next one.  Nothing blocks.  Members are addressed by their index in
 * the phase set; messages go to their group ranks.  Each round of an
 * algorithm has its own step value, so tags never mix up rounds; rounds
 * that exceed the 8 bits of a step reuse values only between the same pair
 * of members, where messages are matched in posting order anyway.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_coll.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <limits.h>
#include <string.h>


#define UCG_P2P_STEP_MASK  (UCS_MASK(UCG_TAG_STEP_BITS))
#define UCG_P2P_NO_PARENT  UINT_MAX

/* Scratch buffer of the phases: 0 and 1 hold the executor's acc and gbuf */
#define UCG_P2P_SCRATCH_IDX (UCG_COLL_MAX_SCRATCH - 1)

/* Target of 0-byte messages (never written) */
static char ucg_p2p_dummy;


static inline unsigned ucg_p2p_rank(const ucg_coll_t *coll, unsigned idx)
{
    return coll->set->ranks[idx];
}

/* Scratch buffer: at least one byte, so empty vectors get a valid pointer
 * as well */
static ucs_status_t ucg_p2p_scratch(ucg_coll_t *coll, size_t size,
                                   void **buf_p)
{
    *buf_p = ucg_coll_scratch(coll, UCG_P2P_SCRATCH_IDX, ucs_max(size, 1));
    return (*buf_p == NULL) ? UCS_ERR_NO_MEMORY : UCS_OK;
}

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
 * k-nomial tree over virtual ranks v = (idx - root) mod n.  The parent of
 * v != 0 clears v's lowest non-zero base-k digit; the children of v are
 * v + i * k^j (1 <= i < k) for every j below that digit (every j with
 * k^j < n for the root), visited from the largest subtree down.
 * ---------------------------------------------------------------------- */

/* Children of the tree state @a _ps (ucg_p2p_tree_state_t) */
#define UCG_P2P_FOR_EACH_CHILD(_ps, _n, _dist, _i, _child) \
    for (_dist = (_ps)->top; _dist > 0; _dist /= (_ps)->radix) \
        for (_i = 1; \
             (_i < (_ps)->radix) && \
             ((_child = (_ps)->vrank + (_i * _dist)) < (_n)); \
             ++_i)

static inline unsigned ucg_p2p_tree_idx(const ucg_coll_t *coll,
                                        unsigned long vrank)
{
    return (unsigned)((vrank + coll->set->root) % coll->set->count);
}

static ucs_status_t ucg_p2p_tree_init(ucg_coll_t *coll)
{
    ucg_p2p_tree_state_t *ps = &coll->ps.tree;
    unsigned n               = coll->set->count;
    unsigned radix           = coll->phase->radix;
    unsigned long v, dist, top, child, i;
    unsigned nchildren;

    if (radix < 2) {
        ucs_error("p2p k-nomial phase (method %d): invalid radix %u",
                  (int)coll->phase->method, radix);
        return UCS_ERR_INVALID_PARAM;
    }

    v = (coll->my_idx + n - coll->set->root) % n;
    if (v == 0) {
        ps->parent = UCG_P2P_NO_PARENT;
        for (top = (n > 1) ? 1 : 0; (top > 0) && (top * radix < n);
             top *= radix) {
        }
    } else {
        for (dist = 1; ((v / dist) % radix) == 0; dist *= radix) {
        }
        ps->parent =
                ucg_p2p_tree_idx(coll, v - (((v / dist) % radix) * dist));
        top = dist / radix;
    }

    ps->vrank = (unsigned)v;
    ps->radix = radix;
    ps->top   = top;

    nchildren = 0;
    UCG_P2P_FOR_EACH_CHILD(ps, n, dist, i, child) {
        ++nchildren;
    }
    ps->children = nchildren;
    return UCS_OK;
}


/* P2P_BCAST: coll->data from the set root down the tree, in fragments of
 * frag_size bytes; a member forwards fragment f while fragment f + 1 is
 * arriving.  ps.tree.frag: fragments received and forwarded so far (the
 * next one to forward once the posted requests completed). */

#define UCG_P2P_BCAST_STEP 0

/* Fragments a leaf posts (bcast: receives, reduce: sends) at a time */
#define UCG_P2P_LEAF_BATCH 16

static void ucg_p2p_bcast_frag(const ucg_coll_t *coll, size_t frag,
                               void **buf_p, size_t *len_p)
{
    size_t frag_len = coll->ps.tree.frag_len;
    size_t offset   = frag * frag_len;

    *buf_p = UCS_PTR_BYTE_OFFSET(coll->data, offset);
    *len_p = ucs_min(frag_len, coll->data_len - offset);
}

static ucs_status_t ucg_p2p_bcast_recv(ucg_coll_t *coll, size_t frag)
{
    void *buf;
    size_t len;

    ucg_p2p_bcast_frag(coll, frag, &buf, &len);
    return ucg_p2p_recv(coll,
                        ucg_p2p_rank(coll,
                                     coll->ps.tree.parent),
                        UCG_P2P_BCAST_STEP, buf, len);
}

static ucs_status_t ucg_p2p_bcast_forward(ucg_coll_t *coll, size_t frag)
{
    ucg_p2p_tree_state_t *ps = &coll->ps.tree;
    unsigned long dist, i, child;
    ucs_status_t status;
    void *buf;
    size_t len;

    ucg_p2p_bcast_frag(coll, frag, &buf, &len);
    UCG_P2P_FOR_EACH_CHILD(ps, coll->set->count, dist, i, child) {
        status = ucg_p2p_send(coll,
                              ucg_p2p_rank(coll, ucg_p2p_tree_idx(coll, child)),
                              UCG_P2P_BCAST_STEP, buf, len);
        if (status != UCS_OK) {
            return status;
        }
    }

    return UCS_OK;
}

static ucs_status_t ucg_p2p_bcast_progress(ucg_coll_t *coll)
{
    ucg_p2p_tree_state_t *ps = &coll->ps.tree;
    size_t nfrags            = ps->nfrags;
    ucs_status_t status;
    size_t frag, end;

    for (;;) {
        status = ucg_p2p_test(coll);
        if ((status != UCS_OK) || (ps->frag == nfrags)) {
            return status;
        }

        if (ps->children == 0) {
            /* A leaf forwards nothing: ps->frag counts the posted
             * receives */
            end = ucs_min(ps->frag + UCG_P2P_LEAF_BATCH, nfrags);
            for (; ps->frag < end; ++ps->frag) {
                status = ucg_p2p_bcast_recv(coll, ps->frag);
                if (status != UCS_OK) {
                    return status;
                }
            }
            continue;
        }

        /* Fragment ps->frag is here (or we are the root) */
        frag = ps->frag++;
        if ((ps->parent != UCG_P2P_NO_PARENT) &&
            (frag + 1 < nfrags)) {
            status = ucg_p2p_bcast_recv(coll, frag + 1);
            if (status != UCS_OK) {
                return status;
            }
        }

        status = ucg_p2p_bcast_forward(coll, frag);
        if (status != UCS_OK) {
            return status;
        }
    }
}

static ucs_status_t ucg_p2p_bcast_start(ucg_coll_t *coll)
{
    ucg_p2p_tree_state_t *ps = &coll->ps.tree;
    size_t frag_size         = coll->phase->frag_size;
    size_t nfrags, frag_len;
    ucs_status_t status;

    status = ucg_p2p_tree_init(coll);
    if (status != UCS_OK) {
        return status;
    }

    /* An empty message still goes down the tree (as one 0-byte fragment),
     * so the phase keeps its ordering whatever the size */
    frag_len = ((frag_size > 0) && (coll->data_len > frag_size)) ?
               frag_size : coll->data_len;
    nfrags   = (frag_len > 0) ? ucs_div_round_up(coll->data_len, frag_len) :
                                1;
    ps->frag_len = frag_len;
    ps->nfrags   = nfrags;

    if (ps->parent == UCG_P2P_NO_PARENT) {
        if (ps->children == 0) {
            ps->frag = nfrags; /* alone in the set */
        }
    } else if (ps->children > 0) {
        status = ucg_p2p_bcast_recv(coll, 0);
        if (status != UCS_OK) {
            return status;
        }
    }

    return ucg_p2p_bcast_progress(coll);
}


/* P2P_REDUCE: up the tree; every member receives its children's vectors
 * into scratch, reduces them into coll->acc in the fixed child order, and
 * sends the result to its parent.  Fragment by fragment (frag_size bytes,
 * at most UCG_P2P_REDUCE_MAX_FRAG): fragment f + 1 arrives while fragment
 * f is reduced and goes up (two scratch slots of one fragment per child).
 * ps.tree.frag: fragments reduced (a leaf: sent) so far. */

#define UCG_P2P_REDUCE_STEP 0

/* Largest fragment of a reduction (without frag_size as well): bounds the
 * scratch memory to two fragments per child, and pipelines large vectors */
#define UCG_P2P_REDUCE_MAX_FRAG (256 * UCS_KBYTE)

static void ucg_p2p_reduce_frag(const ucg_coll_t *coll, size_t frag,
                                size_t *first_p, size_t *count_p)
{
    size_t frag_count = coll->ps.tree.frag_len;

    *first_p = frag * frag_count;
    *count_p = ucs_min(frag_count, coll->params.count - *first_p);
}

static void *ucg_p2p_reduce_slot(const ucg_coll_t *coll, size_t frag,
                                 unsigned child)
{
    const ucg_p2p_tree_state_t *ps = &coll->ps.tree;
    size_t slot_len                = ps->frag_len * coll->dt_size;

    return UCS_PTR_BYTE_OFFSET(ps->slots,
                               (((frag % 2) * ps->children) +
                                child) * slot_len);
}

static ucs_status_t ucg_p2p_reduce_recv(ucg_coll_t *coll, size_t frag)
{
    ucg_p2p_tree_state_t *ps = &coll->ps.tree;
    unsigned long dist, i, child;
    size_t first, count;
    ucs_status_t status;
    unsigned ci;

    ucg_p2p_reduce_frag(coll, frag, &first, &count);
    ci = 0;
    UCG_P2P_FOR_EACH_CHILD(ps, coll->set->count, dist, i, child) {
        status = ucg_p2p_recv(coll,
                              ucg_p2p_rank(coll, ucg_p2p_tree_idx(coll, child)),
                              UCG_P2P_REDUCE_STEP,
                              ucg_p2p_reduce_slot(coll, frag, ci++),
                              count * coll->dt_size);
        if (status != UCS_OK) {
            return status;
        }
    }

    return UCS_OK;
}

static ucs_status_t ucg_p2p_reduce_send(ucg_coll_t *coll, size_t frag)
{
    size_t first, count;

    ucg_p2p_reduce_frag(coll, frag, &first, &count);
    return ucg_p2p_send(coll,
                        ucg_p2p_rank(coll,
                                     coll->ps.tree.parent),
                        UCG_P2P_REDUCE_STEP,
                        UCS_PTR_BYTE_OFFSET(coll->acc, first * coll->dt_size),
                        count * coll->dt_size);
}

static ucs_status_t ucg_p2p_reduce_progress(ucg_coll_t *coll)
{
    ucg_p2p_tree_state_t *ps = &coll->ps.tree;
    size_t nfrags            = ps->nfrags;
    size_t frag, first, count, end;
    ucs_status_t status;
    unsigned ci;

    for (;;) {
        status = ucg_p2p_test(coll);
        if ((status != UCS_OK) || (ps->frag == nfrags)) {
            return status;
        }

        if (ps->children == 0) {
            /* A leaf's vector does not change: ps->frag counts the posted
             * sends */
            end = ucs_min(ps->frag + UCG_P2P_LEAF_BATCH, nfrags);
            for (; ps->frag < end; ++ps->frag) {
                status = ucg_p2p_reduce_send(coll, ps->frag);
                if (status != UCS_OK) {
                    return status;
                }
            }
            continue;
        }

        /* Every child's fragment ps->frag is here.  The next one may
         * arrive (in the other slot) while this one is reduced. */
        frag = ps->frag++;
        if (frag + 1 < nfrags) {
            status = ucg_p2p_reduce_recv(coll, frag + 1);
            if (status != UCS_OK) {
                return status;
            }
        }

        /* Fixed child order: the result does not depend on arrival order */
        ucg_p2p_reduce_frag(coll, frag, &first, &count);
        for (ci = 0; ci < ps->children; ++ci) {
            ucg_op_reduce(&coll->op, ucg_p2p_reduce_slot(coll, frag, ci),
                          UCS_PTR_BYTE_OFFSET(coll->acc,
                                              first * coll->dt_size),
                          count);
        }

        if (ps->parent != UCG_P2P_NO_PARENT) {
            status = ucg_p2p_reduce_send(coll, frag);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
}

static ucs_status_t ucg_p2p_reduce_start(ucg_coll_t *coll)
{
    ucg_p2p_tree_state_t *ps = &coll->ps.tree;
    size_t count             = coll->params.count;
    size_t frag_size         = coll->phase->frag_size;
    size_t frag_count, nfrags;
    unsigned nchildren;
    ucs_status_t status;

    status = ucg_p2p_tree_init(coll);
    if (status != UCS_OK) {
        return status;
    }

    /* Fragments on element boundaries, at least one element each */
    frag_size  = (frag_size > 0) ? ucs_min(frag_size, UCG_P2P_REDUCE_MAX_FRAG) :
                                   UCG_P2P_REDUCE_MAX_FRAG;
    frag_count = count;
    if ((coll->dt_size > 0) && (coll->len > frag_size)) {
        frag_count = ucs_max(frag_size / coll->dt_size, 1);
    }
    nfrags = (frag_count > 0) ? ucs_div_round_up(count, frag_count) : 1;
    ps->frag_len = frag_count;
    ps->nfrags   = nfrags;

    nchildren = ps->children;
    if (nchildren == 0) {
        if (ps->parent == UCG_P2P_NO_PARENT) {
            ps->frag = nfrags; /* alone in the set */
        }
        return ucg_p2p_reduce_progress(coll);
    }

    status = ucg_p2p_scratch(coll,
                             ((nfrags > 1) ? 2 : 1) * nchildren * frag_count *
                             coll->dt_size, &ps->slots);
    if (status != UCS_OK) {
        return status;
    }

    status = ucg_p2p_reduce_recv(coll, 0);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_reduce_progress(coll);
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

static ucs_status_t ucg_p2p_allreduce_rd_progress(ucg_coll_t *coll)
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

static ucs_status_t ucg_p2p_allreduce_rd_start(ucg_coll_t *coll)
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

static ucs_status_t ucg_p2p_allreduce_ring_progress(ucg_coll_t *coll)
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

static ucs_status_t ucg_p2p_allreduce_ring_start(ucg_coll_t *coll)
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

/* -------------------------------------------------------------------------
 * Block phases.  The blocks of a member are those of the ranks it owns
 * (phase->owner); they move as one message per maximal run of consecutive
 * ranks with the same owner, so both sides cut them the same way.
 * ---------------------------------------------------------------------- */

static inline unsigned ucg_p2p_owner(const ucg_coll_t *coll, unsigned rank)
{
    /* No owner table: every rank holds its own block */
    return (coll->phase->owner != NULL) ? coll->phase->owner[rank] : rank;
}

/* End of the run of ranks starting at @a first with the same owner */
static unsigned ucg_p2p_run_end(const ucg_coll_t *coll, unsigned first,
                                unsigned *owner_p)
{
    unsigned size  = coll->group->size;
    unsigned owner = ucg_p2p_owner(coll, first);
    unsigned r;

    for (r = first + 1; (r < size) && (ucg_p2p_owner(coll, r) == owner); ++r) {
    }

    *owner_p = owner;
    return r;
}

/* Set index of group rank @a rank, -1 if it is not in the set */
static int ucg_p2p_set_idx(const ucg_coll_t *coll, unsigned rank)
{
    const ucg_phase_set_t *set = coll->set;
    unsigned lo = 0, hi = set->count, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (set->ranks[mid] < rank) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }

    return ((lo < set->count) && (set->ranks[lo] == rank)) ? (int)lo : -1;
}

static inline void *ucg_p2p_block(const ucg_coll_t *coll, unsigned rank)
{
    return UCS_PTR_BYTE_OFFSET(coll->gbuf, (size_t)rank * coll->block);
}

/* Send (or receive) the blocks owned by set member @a idx to (or from)
 * set member @a peer_idx */
static ucs_status_t ucg_p2p_post_blocks(ucg_coll_t *coll, unsigned idx,
                                       unsigned peer_idx, unsigned step,
                                       int is_send)
{
    unsigned owner_rank = ucg_p2p_rank(coll, idx);
    unsigned peer       = ucg_p2p_rank(coll, peer_idx);
    unsigned size       = coll->group->size;
    unsigned r, end, owner;
    ucs_status_t status;
    size_t len;

    for (r = 0; r < size; r = end) {
        end = ucg_p2p_run_end(coll, r, &owner);
        if (owner != owner_rank) {
            continue;
        }

        len    = (size_t)(end - r) * coll->block;
        status = is_send ?
                 ucg_p2p_send(coll, peer, step, ucg_p2p_block(coll, r), len) :
                 ucg_p2p_recv(coll, peer, step, ucg_p2p_block(coll, r), len);
        if (status != UCS_OK) {
            return status;
        }
    }

    return UCS_OK;
}

/* Receive every run whose owner is another member of the set from that
 * owner (one pass over the ranks) */
static ucs_status_t ucg_p2p_recv_all_blocks(ucg_coll_t *coll, unsigned step)
{
    unsigned my_rank = ucg_p2p_rank(coll, coll->my_idx);
    unsigned size    = coll->group->size;
    unsigned r, end, owner;
    ucs_status_t status;

    for (r = 0; r < size; r = end) {
        end = ucg_p2p_run_end(coll, r, &owner);
        if ((owner == my_rank) || (ucg_p2p_set_idx(coll, owner) < 0)) {
            continue;
        }

        status = ucg_p2p_recv(coll, owner, step, ucg_p2p_block(coll, r),
                              (size_t)(end - r) * coll->block);
        if (status != UCS_OK) {
            return status;
        }
    }

    return UCS_OK;
}

static ucs_status_t ucg_p2p_wait_progress(ucg_coll_t *coll)
{
    return ucg_p2p_test(coll);
}

#define UCG_P2P_LINEAR_STEP 0

/* P2P_GATHER: every member sends its blocks to the root, which posts all
 * receives at once */
static ucs_status_t ucg_p2p_gather_start(ucg_coll_t *coll)
{
    ucs_status_t status;

    if (coll->my_idx == coll->set->root) {
        status = ucg_p2p_recv_all_blocks(coll, UCG_P2P_LINEAR_STEP);
    } else {
        status = ucg_p2p_post_blocks(coll, coll->my_idx, coll->set->root,
                                     UCG_P2P_LINEAR_STEP, 1);
    }

    return (status == UCS_OK) ? ucg_p2p_test(coll) : status;
}

/* P2P_SCATTER: the root sends every member its blocks at once */
static ucs_status_t ucg_p2p_scatter_start(ucg_coll_t *coll)
{
    unsigned my_rank = ucg_p2p_rank(coll, coll->my_idx);
    unsigned size    = coll->group->size;
    unsigned r, end, owner;
    ucs_status_t status;

    if (coll->my_idx != coll->set->root) {
        status = ucg_p2p_post_blocks(coll, coll->my_idx, coll->set->root,
                                     UCG_P2P_LINEAR_STEP, 0);
        return (status == UCS_OK) ? ucg_p2p_test(coll) : status;
    }

    for (r = 0; r < size; r = end) {
        end = ucg_p2p_run_end(coll, r, &owner);
        if ((owner == my_rank) || (ucg_p2p_set_idx(coll, owner) < 0)) {
            continue;
        }

        status = ucg_p2p_send(coll, owner, UCG_P2P_LINEAR_STEP,
                              ucg_p2p_block(coll, r),
                              (size_t)(end - r) * coll->block);
        if (status != UCS_OK) {
            return status;
        }
    }

    return ucg_p2p_test(coll);
}

/* P2P_ALLGATHER_LINEAR: every member sends its runs to every other member
 * (starting with its right neighbour, to spread the load) and receives
 * all the others' */
static ucs_status_t ucg_p2p_allgather_linear_start(ucg_coll_t *coll)
{
    unsigned n       = coll->set->count;
    unsigned my_rank = ucg_p2p_rank(coll, coll->my_idx);
    unsigned size    = coll->group->size;
    unsigned r, end, owner, i;
    ucs_status_t status;

    if (n == 1) {
        return UCS_OK;
    }

    status = ucg_p2p_recv_all_blocks(coll, UCG_P2P_LINEAR_STEP);
    if (status != UCS_OK) {
        return status;
    }

    /* Runs in rank order for every peer: the order its receives expect */
    for (r = 0; r < size; r = end) {
        end = ucg_p2p_run_end(coll, r, &owner);
        if (owner != my_rank) {
            continue;
        }

        for (i = 1; i < n; ++i) {
            status = ucg_p2p_send(coll,
                                  ucg_p2p_rank(coll, (coll->my_idx + i) % n),
                                  UCG_P2P_LINEAR_STEP, ucg_p2p_block(coll, r),
                                  (size_t)(end - r) * coll->block);
            if (status != UCS_OK) {
                return status;
            }
        }
    }

    return ucg_p2p_test(coll);
}

/* P2P_ALLGATHER_RING: at stage s, forward the blocks of member me - s to
 * the right neighbour and receive those of member me - s - 1 from the left
 * one.  ps.ring.stage: the posted stage (n - 1: done). */
static ucs_status_t ucg_p2p_allgather_ring_post(ucg_coll_t *coll)
{
    unsigned n     = coll->set->count;
    unsigned me    = coll->my_idx;
    unsigned stage = coll->ps.ring.stage;
    unsigned step  = stage & UCG_P2P_STEP_MASK;
    ucs_status_t status;

    status = ucg_p2p_post_blocks(coll, (me + n - stage) % n, (me + 1) % n,
                                 step, 1);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_post_blocks(coll, (me + 2 * n - stage - 1) % n,
                               (me + n - 1) % n, step, 0);
}

static ucs_status_t ucg_p2p_allgather_ring_progress(ucg_coll_t *coll)
{
    unsigned stages = coll->set->count - 1;
    ucs_status_t status;

    for (;;) {
        status = ucg_p2p_test(coll);
        if ((status != UCS_OK) || (coll->ps.ring.stage == stages)) {
            return status;
        }

        if (++coll->ps.ring.stage < stages) {
            status = ucg_p2p_allgather_ring_post(coll);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
}

static ucs_status_t ucg_p2p_allgather_ring_start(ucg_coll_t *coll)
{
    ucs_status_t status;

    coll->ps.ring.stage = 0;
    if (coll->set->count == 1) {
        return UCS_OK;
    }

    status = ucg_p2p_allgather_ring_post(coll);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_allgather_ring_progress(coll);
}


/* -------------------------------------------------------------------------
 * P2P_BARRIER: dissemination.  Round k: 0 bytes to me + 2^k, from me - 2^k;
 * after ceil(log2 n) rounds every member has heard, directly or not, from
 * all others.  ps.barrier.round: the posted round (== rounds: done).
 * ---------------------------------------------------------------------- */

static ucs_status_t ucg_p2p_barrier_post(ucg_coll_t *coll)
{
    unsigned n    = coll->set->count;
    unsigned dist = UCS_BIT(coll->ps.barrier.round);
    ucs_status_t status;

    status = ucg_p2p_send(coll,
                          ucg_p2p_rank(coll, (coll->my_idx + dist) % n),
                          coll->ps.barrier.round, &ucg_p2p_dummy, 0);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_recv(coll,
                        ucg_p2p_rank(coll, (coll->my_idx + n - dist) % n),
                        coll->ps.barrier.round, &ucg_p2p_dummy, 0);
}

static ucs_status_t ucg_p2p_barrier_progress(ucg_coll_t *coll)
{
    ucg_p2p_barrier_state_t *ps = &coll->ps.barrier;
    ucs_status_t status;

    for (;;) {
        status = ucg_p2p_test(coll);
        if ((status != UCS_OK) || (ps->round == ps->rounds)) {
            return status;
        }

        if (++ps->round < ps->rounds) {
            status = ucg_p2p_barrier_post(coll);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
}

static ucs_status_t ucg_p2p_barrier_start(ucg_coll_t *coll)
{
    ucg_p2p_barrier_state_t *ps = &coll->ps.barrier;
    ucs_status_t status;

    for (ps->rounds = 0; UCS_BIT(ps->rounds) < coll->set->count;
         ++ps->rounds) {
    }

    ps->round = 0;
    if (ps->rounds == 0) {
        return UCS_OK; /* alone */
    }

    status = ucg_p2p_barrier_post(coll);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_barrier_progress(coll);
}


const ucg_phase_ops_t ucg_p2p_phase_ops[UCG_PHASE_LAST] = {
    [UCG_PHASE_P2P_BCAST]            = {ucg_p2p_bcast_start,
                                        ucg_p2p_bcast_progress},
    [UCG_PHASE_P2P_REDUCE]           = {ucg_p2p_reduce_start,
                                        ucg_p2p_reduce_progress},
    [UCG_PHASE_P2P_ALLREDUCE_RD]     = {ucg_p2p_allreduce_rd_start,
                                        ucg_p2p_allreduce_rd_progress},
    [UCG_PHASE_P2P_ALLREDUCE_RING]   = {ucg_p2p_allreduce_ring_start,
                                        ucg_p2p_allreduce_ring_progress},
    [UCG_PHASE_P2P_GATHER]           = {ucg_p2p_gather_start,
                                        ucg_p2p_wait_progress},
    [UCG_PHASE_P2P_SCATTER]          = {ucg_p2p_scatter_start,
                                        ucg_p2p_wait_progress},
    [UCG_PHASE_P2P_ALLGATHER_RING]   = {ucg_p2p_allgather_ring_start,
                                        ucg_p2p_allgather_ring_progress},
    [UCG_PHASE_P2P_ALLGATHER_LINEAR] = {ucg_p2p_allgather_linear_start,
                                        ucg_p2p_wait_progress},
    [UCG_PHASE_P2P_BARRIER]          = {ucg_p2p_barrier_start,
                                        ucg_p2p_barrier_progress}
};
