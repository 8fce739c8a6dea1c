/**
 * UCG point-to-point phases over a k-nomial tree: P2P_BCAST (pipelined
 * fragments down the tree) and P2P_REDUCE (up the tree, commutative
 * operations).  State: coll->ps.tree.
 */
#include "ucg_p2p.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <limits.h>

#define UCG_P2P_NO_PARENT  UINT_MAX


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


/* Fragments a leaf posts (bcast: receives, reduce: sends) at a time */
#define UCG_P2P_LEAF_BATCH 16

/* Posts what fragment @a frag of a tree phase needs */
typedef ucs_status_t (*ucg_p2p_tree_frag_func_t)(ucg_coll_t *coll,
                                                 size_t frag);

/*
 * The pipeline of both tree phases once the requests posted so far have
 * completed.  A leaf has only its own fragments to post (@a leaf_post),
 * UCG_P2P_LEAF_BATCH at a time: ps.tree.frag counts those posted.  Another
 * member has fragment ps.tree.frag: it posts what brings the next one
 * (@a next_post, NULL when nothing has to come), which then arrives while
 * this one is passed on (@a pass).  ps.tree.frag then counts the fragments
 * passed on.
 */
static ucs_status_t ucg_p2p_tree_progress(ucg_coll_t *coll,
                                          ucg_p2p_tree_frag_func_t leaf_post,
                                          ucg_p2p_tree_frag_func_t next_post,
                                          ucg_p2p_tree_frag_func_t pass)
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
            end = ucs_min(ps->frag + UCG_P2P_LEAF_BATCH, nfrags);
            for (; ps->frag < end; ++ps->frag) {
                status = leaf_post(coll, ps->frag);
                if (status != UCS_OK) {
                    return status;
                }
            }
            continue;
        }

        frag = ps->frag++;
        if ((next_post != NULL) && (frag + 1 < nfrags)) {
            status = next_post(coll, frag + 1);
            if (status != UCS_OK) {
                return status;
            }
        }

        status = pass(coll, frag);
        if (status != UCS_OK) {
            return status;
        }
    }
}


/* P2P_BCAST: coll->data from the set root down the tree, in fragments of
 * frag_size bytes; a member forwards fragment f while fragment f + 1 is
 * arriving.  ps.tree.frag: fragments received and forwarded so far (the
 * next one to forward once the posted requests completed). */

#define UCG_P2P_BCAST_STEP 0

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

ucs_status_t ucg_p2p_bcast_progress(ucg_coll_t *coll)
{
    /* The root has every fragment: nothing to receive */
    return ucg_p2p_tree_progress(coll, ucg_p2p_bcast_recv,
                                 (coll->ps.tree.parent == UCG_P2P_NO_PARENT) ?
                                 NULL : ucg_p2p_bcast_recv,
                                 ucg_p2p_bcast_forward);
}

ucs_status_t ucg_p2p_bcast_start(ucg_coll_t *coll)
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

/* Every child's fragment @a frag is here: reduce it in the fixed child
 * order (the result does not depend on arrival order) and send it up */
static ucs_status_t ucg_p2p_reduce_pass(ucg_coll_t *coll, size_t frag)
{
    ucg_p2p_tree_state_t *ps = &coll->ps.tree;
    size_t first, count;
    unsigned ci;

    ucg_p2p_reduce_frag(coll, frag, &first, &count);
    for (ci = 0; ci < ps->children; ++ci) {
        ucg_op_reduce(&coll->op, ucg_p2p_reduce_slot(coll, frag, ci),
                      UCS_PTR_BYTE_OFFSET(coll->acc, first * coll->dt_size),
                      count);
    }

    if (ps->parent == UCG_P2P_NO_PARENT) {
        return UCS_OK;
    }

    return ucg_p2p_reduce_send(coll, frag);
}

ucs_status_t ucg_p2p_reduce_progress(ucg_coll_t *coll)
{
    /* A leaf's vector does not change: it sends its fragments at once */
    return ucg_p2p_tree_progress(coll, ucg_p2p_reduce_send,
                                 ucg_p2p_reduce_recv, ucg_p2p_reduce_pass);
}

ucs_status_t ucg_p2p_reduce_start(ucg_coll_t *coll)
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
