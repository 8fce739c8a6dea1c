/**
 * UCG point-to-point alltoall phases: P2P_ALLTOALL_LINEAR (every message
 * posted at once) and P2P_ALLTOALL_PAIRWISE (state coll->ps.a2a), for
 * alltoall (blocks of coll->block bytes, by rank) and alltoallv (the
 * blocks coll->dblk of what it sends and coll->gblk of what it receives,
 * checked and copied by ucg_coll_init: ucg_coll_vec.c).
 *
 * The data this member sends is at coll->data (the user's send buffer, or
 * a copy of the receive buffer in place), what it receives goes to
 * coll->gbuf (the user's receive buffer).  Both methods send exactly one
 * message, with the same tag (step 0), to every other set member, also of
 * 0 bytes: so they match each other, and every member's receive of each
 * peer checks the length that peer sent against what it expects (a peer
 * with another count fails the collective, UCS_ERR_MESSAGE_TRUNCATED, with
 * one log line: ucg_p2p_ucp.c).  This member's own block is copied by
 * the executor (ucg_coll_alltoall.c), also in a group of one, which has
 * no phase.
 */
#include "ucg_p2p.h"


#define UCG_P2P_A2A_STEP 0


/* What this member sends to group rank @a peer */
static void ucg_p2p_a2a_sblock(const ucg_coll_t *coll, unsigned peer,
                               const void **buf_p, size_t *len_p)
{
    if (coll->params.type == UCG_COLL_ALLTOALLV) {
        *buf_p = UCS_PTR_BYTE_OFFSET(coll->data, coll->dblk.off[peer]);
        *len_p = coll->dblk.len[peer];
    } else {
        *buf_p = UCS_PTR_BYTE_OFFSET(coll->data, (size_t)peer * coll->block);
        *len_p = coll->block;
    }
}

/* Where what this member receives from group rank @a peer goes */
static void ucg_p2p_a2a_rblock(const ucg_coll_t *coll, unsigned peer,
                               void **buf_p, size_t *len_p)
{
    if (coll->params.type == UCG_COLL_ALLTOALLV) {
        *buf_p = UCS_PTR_BYTE_OFFSET(coll->gbuf, coll->gblk.off[peer]);
        *len_p = coll->gblk.len[peer];
    } else {
        *buf_p = UCS_PTR_BYTE_OFFSET(coll->gbuf, (size_t)peer * coll->block);
        *len_p = coll->block;
    }
}

/* Post the send to, and the receive from, the set members @a k places
 * after and before this one */
static ucs_status_t ucg_p2p_a2a_post(ucg_coll_t *coll, unsigned k,
                                     int is_send)
{
    unsigned n = coll->set->count;
    unsigned peer;
    const void *sbuf;
    void *rbuf;
    size_t len;

    if (is_send) {
        peer = ucg_p2p_rank(coll, (coll->my_idx + k) % n);
        ucg_p2p_a2a_sblock(coll, peer, &sbuf, &len);
        return ucg_p2p_send(coll, peer, UCG_P2P_A2A_STEP, sbuf, len);
    }

    peer = ucg_p2p_rank(coll, (coll->my_idx + n - k) % n);
    ucg_p2p_a2a_rblock(coll, peer, &rbuf, &len);
    return ucg_p2p_recv(coll, peer, UCG_P2P_A2A_STEP, rbuf, len);
}

/* P2P_ALLTOALL_LINEAR: every receive, then every send (to the next member
 * first, so that not every member sends to the same one at once) */
ucs_status_t ucg_p2p_alltoall_linear_start(ucg_coll_t *coll)
{
    unsigned n = coll->set->count;
    ucs_status_t status;
    unsigned k;
    int is_send;

    for (is_send = 0; is_send < 2; ++is_send) {
        for (k = 1; k < n; ++k) {
            status = ucg_p2p_a2a_post(coll, k, is_send);
            if (status != UCS_OK) {
                return status;
            }
        }
    }

    return ucg_p2p_test(coll);
}

/* P2P_ALLTOALL_PAIRWISE: round k (1..n-1) sends to me + k and receives
 * from me - k; the next round is posted when both completed.
 * ps.a2a.round: the posted one (n: done). */
static ucs_status_t ucg_p2p_a2a_post_round(ucg_coll_t *coll)
{
    ucs_status_t status;

    status = ucg_p2p_a2a_post(coll, coll->ps.a2a.round, 0);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_a2a_post(coll, coll->ps.a2a.round, 1);
}

ucs_status_t ucg_p2p_alltoall_pairwise_progress(ucg_coll_t *coll)
{
    unsigned n = coll->set->count;
    ucs_status_t status;

    for (;;) {
        status = ucg_p2p_test(coll);
        if ((status != UCS_OK) || (coll->ps.a2a.round >= n)) {
            return status;
        }

        if (++coll->ps.a2a.round < n) {
            status = ucg_p2p_a2a_post_round(coll);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
}

ucs_status_t ucg_p2p_alltoall_pairwise_start(ucg_coll_t *coll)
{
    ucs_status_t status;

    coll->ps.a2a.round = 1;
    if (coll->set->count == 1) {
        return UCS_OK;
    }

    status = ucg_p2p_a2a_post_round(coll);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_alltoall_pairwise_progress(coll);
}
