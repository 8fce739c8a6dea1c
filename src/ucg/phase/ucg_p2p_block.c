/**
 * UCG point-to-point block phases: P2P_GATHER, P2P_SCATTER (linear, to and
 * from the set root), P2P_ALLGATHER_LINEAR and P2P_ALLGATHER_RING (state
 * coll->ps.ring).
 */
#include "ucg_p2p.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>


/* -------------------------------------------------------------------------
 * Block phases.  The blocks of a member are those of the ranks it owns
 * (phase->owner); they move as one message per maximal run of consecutive
 * ranks with the same owner, so both sides cut them the same way.  The
 * vector collectives (coll->gblk) have a block of its own length at its
 * own offset per rank, and a run of one rank each.
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

    if (coll->gblk.len != NULL) {
        *owner_p = owner;
        return first + 1;
    }

    for (r = first + 1; (r < size) && (ucg_p2p_owner(coll, r) == owner); ++r) {
    }

    *owner_p = owner;
    return r;
}

/* Where the run of ranks [@a first, @a end) is, and its bytes */
static void *ucg_p2p_run(const ucg_coll_t *coll, unsigned first,
                         unsigned end, size_t *len_p)
{
    /* Empty blocks of the vector collectives may have no buffer at all:
     * UCP gets a valid address for them anyway */
    static char empty;

    if (coll->gblk.len == NULL) {
        *len_p = (size_t)(end - first) * coll->block;
        return UCS_PTR_BYTE_OFFSET(coll->gbuf, (size_t)first * coll->block);
    }

    ucs_assert(end == first + 1);
    *len_p = coll->gblk.len[first];
    return (*len_p == 0) ? &empty :
           UCS_PTR_BYTE_OFFSET(coll->gbuf, coll->gblk.off[first]);
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
    void *buf;

    for (r = 0; r < size; r = end) {
        end = ucg_p2p_run_end(coll, r, &owner);
        if (owner != owner_rank) {
            continue;
        }

        buf    = ucg_p2p_run(coll, r, end, &len);
        status = is_send ? ucg_p2p_send(coll, peer, step, buf, len) :
                           ucg_p2p_recv(coll, peer, step, buf, len);
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
    size_t len;
    void *buf;

    for (r = 0; r < size; r = end) {
        end = ucg_p2p_run_end(coll, r, &owner);
        if ((owner == my_rank) || (ucg_phase_set_idx(coll->set, owner) < 0)) {
            continue;
        }

        buf    = ucg_p2p_run(coll, r, end, &len);
        status = ucg_p2p_recv(coll, owner, step, buf, len);
        if (status != UCS_OK) {
            return status;
        }
    }

    return UCS_OK;
}

ucs_status_t ucg_p2p_wait_progress(ucg_coll_t *coll)
{
    return ucg_p2p_test(coll);
}

#define UCG_P2P_LINEAR_STEP 0

/* P2P_GATHER: every member sends its blocks to the root, which posts all
 * receives at once */
ucs_status_t ucg_p2p_gather_start(ucg_coll_t *coll)
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
ucs_status_t ucg_p2p_scatter_start(ucg_coll_t *coll)
{
    unsigned my_rank = ucg_p2p_rank(coll, coll->my_idx);
    unsigned size    = coll->group->size;
    unsigned r, end, owner;
    ucs_status_t status;
    size_t len;
    void *buf;

    if (coll->my_idx != coll->set->root) {
        status = ucg_p2p_post_blocks(coll, coll->my_idx, coll->set->root,
                                     UCG_P2P_LINEAR_STEP, 0);
        return (status == UCS_OK) ? ucg_p2p_test(coll) : status;
    }

    for (r = 0; r < size; r = end) {
        end = ucg_p2p_run_end(coll, r, &owner);
        if ((owner == my_rank) || (ucg_phase_set_idx(coll->set, owner) < 0)) {
            continue;
        }

        buf    = ucg_p2p_run(coll, r, end, &len);
        status = ucg_p2p_send(coll, owner, UCG_P2P_LINEAR_STEP, buf, len);
        if (status != UCS_OK) {
            return status;
        }
    }

    return ucg_p2p_test(coll);
}

/* P2P_ALLGATHER_LINEAR: every member sends its runs to every other member
 * (starting with its right neighbour, to spread the load) and receives
 * all the others' */
ucs_status_t ucg_p2p_allgather_linear_start(ucg_coll_t *coll)
{
    unsigned n       = coll->set->count;
    unsigned my_rank = ucg_p2p_rank(coll, coll->my_idx);
    unsigned size    = coll->group->size;
    unsigned r, end, owner, i;
    ucs_status_t status;
    size_t len;
    void *buf;

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

        buf = ucg_p2p_run(coll, r, end, &len);
        for (i = 1; i < n; ++i) {
            status = ucg_p2p_send(coll,
                                  ucg_p2p_rank(coll, (coll->my_idx + i) % n),
                                  UCG_P2P_LINEAR_STEP, buf, len);
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

ucs_status_t ucg_p2p_allgather_ring_progress(ucg_coll_t *coll)
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

ucs_status_t ucg_p2p_allgather_ring_start(ucg_coll_t *coll)
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
