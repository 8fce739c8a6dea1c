/**
 * UCG host-local phase SM_ALLREDUCE: every member sends its vector on its
 * own sm_bcast endpoint and receives the others' (the header says from
 * whom); once all are in, each member reduces them in rank order, so every
 * member computes the same bits.  Barriers send 0 bytes.
 */
#include "ucg_sm.h"

#include <string.h>


ucs_status_t ucg_sm_allreduce_eps(const ucg_coll_t *coll,
                                  const ucg_phase_t *phase,
                                  const ucg_phase_set_t *set,
                                  ucg_sm_ep_cb_t cb, void *arg)
{
    ucg_phase_set_t root_set = *set;
    ucs_status_t status      = UCS_OK;

    for (root_set.root = 0;
         (root_set.root < root_set.count) && (status == UCS_OK);
         ++root_set.root) {
        status = cb(arg, UCG_SM_BCAST, &root_set, phase->sm_mode,
                    UCT_O2M_OP_GATHER, UCT_O2M_DT_UINT8);
    }
    return status;
}

/* SM_SCAN: nobody needs the last member's vector, which it does not
 * send */
static int ucg_sm_allreduce_last_silent(const ucg_coll_t *coll)
{
    return coll->phase->method == UCG_PHASE_SM_SCAN;
}

static void ucg_sm_allreduce_pack(const ucg_coll_t *coll, void *payload,
                                  size_t offset, size_t length)
{
    if (length > 0) { /* none in a barrier */
        memcpy(payload, UCS_PTR_BYTE_OFFSET(coll->acc, offset), length);
    }
}

int ucg_sm_allreduce_expects(const ucg_coll_t *coll)
{
    return coll->ps.sm.allreduce.recvd < coll->ps.sm.allreduce.expect;
}

/* SM_ALLREDUCE: another member's fragment, into its vector's slot */
void ucg_sm_allreduce_deliver(ucg_coll_t *coll, const void *data,
                              size_t length)
{
    const ucg_sm_hdr_t *hdr = data;
    size_t offset, frag_len;
    uint32_t index;

    ++coll->ps.sm.allreduce.recvd;
    if ((hdr->src >= coll->set->count) || (hdr->src == coll->my_idx) ||
        (ucg_sm_allreduce_last_silent(coll) &&
         (hdr->src == coll->set->count - 1))) {
        coll->ps.sm.status = ucg_sm_recv_error(coll, "bad source",
                                               hdr->src);
        return;
    }

    coll->ps.sm.status = ucg_sm_frag_index(coll, hdr, coll->ps.sm.nfrags,
                                           &index);
    if (coll->ps.sm.status != UCS_OK) {
        return;
    }
    offset = (size_t)index * coll->ps.sm.frag_len;

    frag_len = ucs_min(coll->ps.sm.frag_len, coll->ps.sm.total - offset);
    if (length != sizeof(*hdr) + frag_len) {
        coll->ps.sm.status = ucg_sm_recv_error(coll, "unexpected length",
                                               length);
        return;
    }

    if (frag_len > 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(coll->ps.sm.allreduce.vecs,
                                   hdr->src * coll->len + offset),
               hdr + 1, frag_len);
    }
}

/* SM_ALLREDUCE: a one-hop exchange (ucg_sm_exchange_eps) of the vectors */
ucs_status_t ucg_sm_allreduce_start(ucg_coll_t *coll)
{
    const ucg_phase_set_t *set = coll->set;
    ucs_status_t status;

    status = ucg_sm_exchange_eps(coll);
    if (status != UCS_OK) {
        return status;
    }

    if (coll->len > 0) {
        coll->ps.sm.allreduce.vecs = ucg_coll_scratch(coll,
                                                      UCG_SM_SCRATCH_IDX,
                                                      set->count * coll->len);
        if (coll->ps.sm.allreduce.vecs == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }

    coll->ps.sm.total            = coll->len;
    coll->ps.sm.frag_len         = ucg_frag_whole_elems(ucg_sm_frag_max(coll),
                                                        coll->dt_size);
    coll->ps.sm.nfrags           = ucs_max(1, ucs_div_round_up(
                                                   coll->len,
                                                   coll->ps.sm.frag_len));
    coll->ps.sm.allreduce.expect = (set->count - 1) * coll->ps.sm.nfrags;
    if (ucg_sm_allreduce_last_silent(coll)) {
        if (coll->my_idx == set->count - 1) {
            coll->ps.sm.next = coll->ps.sm.nfrags; /* sends nothing */
        } else {
            coll->ps.sm.allreduce.expect -= coll->ps.sm.nfrags;
        }
    }
    ucg_sm_exchange_begin(coll, ucg_sm_allreduce_pack);
    return UCS_OK;
}

ucs_status_t ucg_sm_allreduce_progress(ucg_coll_t *coll)
{
    void *vecs = coll->ps.sm.allreduce.vecs;
    ucs_status_t status;
    unsigned i;

    if (coll->ps.sm.allreduce.done) {
        return UCS_OK;
    }

    status = ucg_sm_exchange_progress(coll);
    if (status != UCS_OK) {
        return status;
    }

    coll->ps.sm.allreduce.done = 1;
    if (coll->len == 0) {
        return UCS_OK; /* a barrier */
    }

    if ((coll->phase->method == UCG_PHASE_SM_SCAN) ||
        (coll->phase->method == UCG_PHASE_SM_REDUCE_SCATTER)) {
        ucg_sm_scan_fold(coll, vecs);
        return UCS_OK;
    }

    /* All vectors are in and ours is sent: r = v0, then r = v[i] op r */
    memcpy(UCS_PTR_BYTE_OFFSET(vecs, coll->my_idx * coll->len), coll->acc,
           coll->len);
    memcpy(coll->acc, vecs, coll->len);
    for (i = 1; i < coll->set->count; ++i) {
        ucg_op_reduce(&coll->op, UCS_PTR_BYTE_OFFSET(vecs, i * coll->len),
                      coll->acc, coll->params.count);
    }

    return UCS_OK;
}
