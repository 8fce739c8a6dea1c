/**
 * UCG host-local phase SM_BCAST: the set root sends the stream on its
 * sm_bcast endpoint, every member receives it: the collective's data, or for
 * scatter the blocks of the set's ranks in set order (a member keeps its own
 * block).  Barriers send 0 bytes.
 */
#include "ucg_sm.h"

#include <string.h>


static int ucg_sm_is_scatter(const ucg_coll_t *coll)
{
    return coll->params.type == UCG_COLL_SCATTER;
}

/* Address of stream offset @a offset of an SM_BCAST, and how many bytes are
 * contiguous there */
static void *ucg_sm_bcast_ptr(const ucg_coll_t *coll, size_t offset,
                              size_t *contig_p)
{
    unsigned rank;

    if (!ucg_sm_is_scatter(coll)) {
        *contig_p = coll->data_len - offset;
        return UCS_PTR_BYTE_OFFSET(coll->data, offset);
    }

    rank      = coll->set->ranks[offset / coll->block];
    *contig_p = coll->block - (offset % coll->block);
    return UCS_PTR_BYTE_OFFSET(coll->gbuf,
                               rank * coll->block + (offset % coll->block));
}

static void ucg_sm_bcast_pack(const ucg_coll_t *coll, void *payload,
                              size_t offset, size_t length)
{
    size_t done, contig;
    const void *src;

    for (done = 0; done < length; done += contig) {
        src    = ucg_sm_bcast_ptr(coll, offset + done, &contig);
        contig = ucs_min(contig, length - done);
        memcpy(UCS_PTR_BYTE_OFFSET(payload, done), src, contig);
    }
}

static ucs_status_t ucg_sm_bcast_recv(ucg_coll_t *coll, const void *data,
                                      size_t length, size_t frag_len,
                                      size_t offset)
{
    const void *payload = UCS_PTR_BYTE_OFFSET(data, sizeof(ucg_sm_hdr_t));
    size_t lo, hi, own_lo;

    if (length != sizeof(ucg_sm_hdr_t) + frag_len) {
        return ucg_sm_recv_error(coll, "unexpected length", length);
    }
    length = frag_len;

    if (!ucg_sm_is_scatter(coll)) {
        if (length > 0) {
            memcpy(UCS_PTR_BYTE_OFFSET(coll->data, offset), payload, length);
        }
        return UCS_OK;
    }

    /* Keep the part of the host's blocks that is this member's block */
    own_lo = coll->my_idx * coll->block;
    lo     = ucs_max(offset, own_lo);
    hi     = ucs_min(offset + length, own_lo + coll->block);
    if (lo < hi) {
        memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, coll->group->rank *
                                   coll->block + (lo - own_lo)),
               UCS_PTR_BYTE_OFFSET(payload, lo - offset), hi - lo);
    }
    return UCS_OK;
}

void ucg_sm_bcast_deliver(ucg_coll_t *coll, const void *data, size_t length)
{
    ucg_sm_stream_deliver(coll, data, length, ucg_sm_bcast_recv);
}

ucs_status_t ucg_sm_bcast_eps(const ucg_coll_t *coll, const ucg_phase_t *phase,
                              const ucg_phase_set_t *set, ucg_sm_ep_cb_t cb,
                              void *arg)
{
    return cb(arg, UCG_SM_BCAST, set, phase->sm_mode, UCT_O2M_OP_GATHER,
              UCT_O2M_DT_UINT8);
}

ucs_status_t ucg_sm_bcast_start(ucg_coll_t *coll)
{
    size_t total = ucg_sm_is_scatter(coll) ? (coll->set->count * coll->block) :
                   coll->data_len;

    coll->ps.sm.status = UCS_OK;
    return ucg_sm_stream_begin(coll, UCG_SM_BCAST, coll->phase->sm_mode,
                               UCT_O2M_OP_GATHER, UCT_O2M_DT_UINT8, total,
                               ucg_sm_frag_max(coll), ucg_sm_bcast_pack);
}
