/**
 * UCG host-local phase SM_ALLGATHERV: allgatherv on one host without a
 * forwarding leader.  Every member fans out its own block, straight from
 * its receive buffer, on its own sm_bcast endpoint (SM_ALLREDUCE's
 * endpoints: one rooted at each member of the set), and takes every other
 * member's fragments into its receive buffer at that member's block
 * (coll->gblk).
 *
 * Each member cuts each sender's stream by the length it expects from its
 * own rcounts, never by what a peer says: a block of 0 bytes is one
 * fragment of only the header, and a fragment beyond that length, a
 * stream that ends elsewhere (UCG_SM_FRAG_LAST) or a fragment of another
 * length fails the collective here with UCS_ERR_MESSAGE_TRUNCATED and one
 * log line, without a byte written outside the sender's block.  Every
 * member sends and expects exactly one stream per other member, so a
 * member whose counts differ cannot leave a peer waiting for fragments
 * that never come: the stream of every sender ends, and the first
 * fragment that does not fit is noticed.
 */
#include "ucg_sm.h"

#include <ucs/debug/log.h>
#include <limits.h>
#include <string.h>


/* Fragments of a block of @a len bytes (at least one, of only the header);
 * 0 when there would be more than the header's index can number */
static unsigned ucg_sm_allgatherv_nfrags(const ucg_coll_t *coll, size_t len)
{
    size_t nfrags = ucs_max(1, ucs_div_round_up(len, coll->ps.sm.frag_len));

    return (nfrags < UCG_SM_FRAG_LAST) ? (unsigned)nfrags : 0;
}

static void ucg_sm_allgatherv_pack(const ucg_coll_t *coll, void *payload,
                                   size_t offset, size_t length)
{
    unsigned me = coll->set->ranks[coll->my_idx];

    if (length > 0) {
        memcpy(payload, UCS_PTR_BYTE_OFFSET(coll->gbuf,
                                            coll->gblk.off[me] + offset),
               length);
    }
}

void ucg_sm_allgatherv_deliver(ucg_coll_t *coll, const void *data,
                               size_t length)
{
    const ucg_sm_hdr_t *hdr = data;
    size_t len, offset, frag_len;
    unsigned rank, nfrags;
    uint32_t index;

    ++coll->ps.sm.allreduce.recvd;
    if ((hdr->src >= coll->set->count) || (hdr->src == coll->my_idx)) {
        coll->ps.sm.status = ucg_sm_recv_error(coll, "bad source",
                                               hdr->src);
        return;
    }

    rank   = coll->set->ranks[hdr->src];
    len    = coll->gblk.len[rank];
    nfrags = ucg_sm_allgatherv_nfrags(coll, len); /* checked at start */
    coll->ps.sm.status = ucg_sm_frag_index(coll, hdr, nfrags, &index);
    if (coll->ps.sm.status != UCS_OK) {
        return;
    }

    offset   = (size_t)index * coll->ps.sm.frag_len;
    frag_len = ucs_min(coll->ps.sm.frag_len, len - offset);
    if (length != sizeof(*hdr) + frag_len) {
        ucs_error("ucg group %u %s seq %u phase %u: rank %u sent %zu bytes "
                  "in fragment %u, %zu expected (its block: %zu bytes): "
                  "counts differ", coll->group->id,
                  ucg_coll_name(coll->params.type), coll->seq,
                  coll->phase_idx, rank, length - sizeof(*hdr), index,
                  frag_len, len);
        coll->ps.sm.status = UCS_ERR_MESSAGE_TRUNCATED;
        return;
    }

    if (frag_len > 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, coll->gblk.off[rank] + offset),
               hdr + 1, frag_len);
    }
}

ucs_status_t ucg_sm_allgatherv_start(ucg_coll_t *coll)
{
    const ucg_phase_set_t *set = coll->set;
    size_t expect              = 0;
    ucs_status_t status;
    unsigned i, nfrags;

    status = ucg_sm_exchange_eps(coll);
    if (status != UCS_OK) {
        return status;
    }

    coll->ps.sm.frag_len = ucg_sm_frag_max(coll);
    for (i = 0; i < set->count; ++i) {
        nfrags  = ucg_sm_allgatherv_nfrags(coll,
                                           coll->gblk.len[set->ranks[i]]);
        expect += (i == coll->my_idx) ? 0 : nfrags;
        if ((nfrags == 0) || (expect >= UINT_MAX)) {
            ucs_error("ucg group %u %s seq %u: the block of rank %u (%zu "
                      "bytes) has too many fragments of %zu bytes",
                      coll->group->id, ucg_coll_name(coll->params.type),
                      coll->seq, set->ranks[i], coll->gblk.len[set->ranks[i]],
                      coll->ps.sm.frag_len);
            return UCS_ERR_INVALID_PARAM;
        }
        if (i == coll->my_idx) {
            coll->ps.sm.nfrags = nfrags;
        }
    }

    coll->ps.sm.total            = coll->gblk.len[set->ranks[coll->my_idx]];
    coll->ps.sm.allreduce.expect = expect;
    ucg_sm_exchange_begin(coll, ucg_sm_allgatherv_pack);
    return UCS_OK;
}

ucs_status_t ucg_sm_allgatherv_progress(ucg_coll_t *coll)
{
    return ucg_sm_exchange_progress(coll);
}
