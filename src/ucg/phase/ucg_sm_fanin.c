/**
 * UCG host-local fan-in phases on the set root's sm_incast endpoint:
 *  - SM_REDUCE: every member but the root contributes its vector; the root
 *    gets, per fragment, the transport's reduction (native: op and type
 *    supported) or the contributions side by side, and combines them with
 *    its own vector (in acc);
 *  - SM_GATHER: every member but the root contributes its own block; the
 *    root gets the contributions side by side in member order, into gbuf.
 *    Barriers contribute 0 bytes.
 */
#include "ucg_sm.h"

#include <string.h>


/* The transport's (op, dtype) of an SM_REDUCE; GATHER when the root
 * reduces the gathered contributions itself */
static void ucg_sm_reduce_op(const ucg_coll_t *coll, const ucg_phase_t *phase,
                             uct_o2m_op_t *op_p, uct_o2m_dtype_t *dtype_p)
{
    if (!phase->sm_native || !ucg_op_to_o2m(&coll->op, op_p, dtype_p)) {
        /* The planner said native: it cannot disagree with ucg_dt */
        *op_p    = UCT_O2M_OP_GATHER;
        *dtype_p = UCT_O2M_DT_UINT8;
    }
}

ucs_status_t ucg_sm_reduce_eps(const ucg_coll_t *coll,
                               const ucg_phase_t *phase,
                               const ucg_phase_set_t *set, ucg_sm_ep_cb_t cb,
                               void *arg)
{
    uct_o2m_dtype_t dtype;
    uct_o2m_op_t op;

    ucg_sm_reduce_op(coll, phase, &op, &dtype);
    return cb(arg, UCG_SM_INCAST, set, phase->sm_mode, op, dtype);
}

ucs_status_t ucg_sm_gather_eps(const ucg_coll_t *coll,
                               const ucg_phase_t *phase,
                               const ucg_phase_set_t *set, ucg_sm_ep_cb_t cb,
                               void *arg)
{
    return cb(arg, UCG_SM_INCAST, set, phase->sm_mode, UCT_O2M_OP_GATHER,
              UCT_O2M_DT_UINT8);
}

static void ucg_sm_reduce_pack(const ucg_coll_t *coll, void *payload,
                               size_t offset, size_t length)
{
    if (length > 0) {
        memcpy(payload, UCS_PTR_BYTE_OFFSET(coll->acc, offset), length);
    }
}

/* Own block (none in a barrier) */
static void ucg_sm_gather_pack(const ucg_coll_t *coll, void *payload,
                               size_t offset, size_t length)
{
    if (length > 0) {
        memcpy(payload,
               UCS_PTR_BYTE_OFFSET(coll->gbuf,
                                   coll->group->rank * coll->block + offset),
               length);
    }
}

/* At the root: @a data holds the contributions side by side in member
 * order, the root excluded; the length the transport checked */
static ucs_status_t ucg_sm_fanin_check(ucg_coll_t *coll, size_t length,
                                       size_t frag_len)
{
    size_t stride = sizeof(ucg_sm_hdr_t) + frag_len;

    if (length != (coll->set->count - 1) * stride) {
        return ucg_sm_recv_error(coll, "unexpected gathered length", length);
    }
    return UCS_OK;
}

static ucs_status_t ucg_sm_reduce_recv(ucg_coll_t *coll, const void *data,
                                       size_t length, size_t frag_len,
                                       size_t offset)
{
    unsigned senders = coll->set->count - 1;
    size_t count     = frag_len / coll->dt_size;
    size_t stride    = sizeof(ucg_sm_hdr_t) + frag_len;
    ucs_status_t status;
    unsigned pos;

    if (coll->phase->sm_native) {
        if (length != stride) {
            return ucg_sm_recv_error(coll, "unexpected reduced length",
                                     length);
        }
        ucg_op_reduce(&coll->op,
                      UCS_PTR_BYTE_OFFSET(data, sizeof(ucg_sm_hdr_t)),
                      UCS_PTR_BYTE_OFFSET(coll->acc, offset), count);
        return UCS_OK;
    }

    status = ucg_sm_fanin_check(coll, length, frag_len);
    if (status != UCS_OK) {
        return status;
    }

    for (pos = 0; pos < senders; ++pos) {
        ucg_op_reduce(&coll->op,
                      UCS_PTR_BYTE_OFFSET(data, pos * stride +
                                          sizeof(ucg_sm_hdr_t)),
                      UCS_PTR_BYTE_OFFSET(coll->acc, offset), count);
    }
    return UCS_OK;
}

static ucs_status_t ucg_sm_gather_recv(ucg_coll_t *coll, const void *data,
                                       size_t length, size_t frag_len,
                                       size_t offset)
{
    unsigned senders = coll->set->count - 1;
    size_t stride    = sizeof(ucg_sm_hdr_t) + frag_len;
    ucs_status_t status;
    unsigned pos, idx;

    status = ucg_sm_fanin_check(coll, length, frag_len);
    if ((status != UCS_OK) || (frag_len == 0)) {
        return status;
    }

    for (pos = 0; pos < senders; ++pos) {
        idx = (pos < coll->set->root) ? pos : (pos + 1);
        memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf,
                                   coll->set->ranks[idx] * coll->block +
                                   offset),
               UCS_PTR_BYTE_OFFSET(data, pos * stride + sizeof(ucg_sm_hdr_t)),
               frag_len);
    }
    return UCS_OK;
}

void ucg_sm_reduce_deliver(ucg_coll_t *coll, const void *data, size_t length)
{
    ucg_sm_stream_deliver(coll, data, length, ucg_sm_reduce_recv);
}

void ucg_sm_gather_deliver(ucg_coll_t *coll, const void *data, size_t length)
{
    ucg_sm_stream_deliver(coll, data, length, ucg_sm_gather_recv);
}

ucs_status_t ucg_sm_reduce_start(ucg_coll_t *coll)
{
    uct_o2m_dtype_t dtype;
    uct_o2m_op_t op;

    ucg_sm_reduce_op(coll, coll->phase, &op, &dtype);
    coll->ps.sm.status = UCS_OK;
    /* Whole elements per fragment */
    return ucg_sm_stream_begin(coll, UCG_SM_INCAST, coll->phase->sm_mode, op,
                               dtype, coll->len,
                               ucg_frag_whole_elems(ucg_sm_frag_max(coll),
                                                    coll->dt_size),
                               ucg_sm_reduce_pack);
}

ucs_status_t ucg_sm_gather_start(ucg_coll_t *coll)
{
    coll->ps.sm.status = UCS_OK;
    return ucg_sm_stream_begin(coll, UCG_SM_INCAST, coll->phase->sm_mode,
                               UCT_O2M_OP_GATHER, UCT_O2M_DT_UINT8,
                               coll->block, ucg_sm_frag_max(coll),
                               ucg_sm_gather_pack);
}
