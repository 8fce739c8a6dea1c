/**
 * UCG host-local phases over the one-to-many transports, and FOLD.
 *
 * Every SM phase moves a "stream" of bytes in fragments of at most
 * phase->frag_size bytes, each behind a ucg_sm_hdr_t:
 *  - SM_BCAST:  the set root sends the stream, every member receives it:
 *               the collective's data, or for scatter the blocks of the
 *               set's ranks in set order (a member keeps its own block);
 *  - SM_REDUCE: every member but the root contributes its vector; the
 *               root gets, per fragment, the transport's reduction (native)
 *               or the contributions side by side, and combines them with
 *               its own vector;
 *  - SM_GATHER: every member but the root contributes its own block; the
 *               root gets the contributions side by side in member order;
 *  - SM_ALLREDUCE: every member sends its vector on its own sm_bcast
 *               endpoint and receives the others' (the header says from
 *               whom); once all are in, each member reduces them in rank
 *               order, so every member computes the same bits.

 *  - SM_BCAST_CMA: single-copy bcast in two stages.  Stage 0: the root
 *               sends a descriptor of its buffer (sm_bcast); each member
 *               reads the buffer with process_vm_readv.  Stage 1: each
 *               member contributes an 8-byte status (sm_incast, gather);
 *               the root completes when all have read (its buffer may be
 *               reused from then on), and fails if one could not;
 *  - SM_REDUCE_CMA: single-copy reduce in two stages.  Stage 0: every
 *               member but the root contributes a descriptor of its vector
 *               (sm_incast, gather); the root reads the vectors with
 *               process_vm_readv, a chunk at a time, and reduces them into
 *               its own.  Stage 1: the root sends its status (sm_bcast);
 *               members complete with it (their vector may be reused from
 *               then on).
 * A stream of 0 bytes is one message with only the header (barriers).
 *
 * Fan-in rounds are formed by the transport from the k-th contribution of
 * every sender, so all senders must contribute to a fan-in endpoint in the
 * same order.  Collectives start in the same order on every member, so a
 * collective contributes to an endpoint only when no collective started
 * before it still has to: contributions then go in start order everywhere.
 * Fan-out needs no such rule: messages carry their collective's sequence.
 */
#include "ucg_coll.h"
#include "o2m_seg.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>
#include <errno.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

/* SM_*_CMA stage 0 message: where the sender's data is */
struct ucg_sm_cma_desc {
    uint64_t addr;
    uint64_t length;
    int32_t  pid;
    uint32_t reserved;
};
typedef struct ucg_sm_cma_desc ucg_sm_cma_desc_t;

/* SM_*_CMA stage 1 message: the status of the reads (ucs_status_t) */
typedef int64_t ucg_sm_cma_ack_t;

/* Scratch buffer of SM_ALLREDUCE and SM_REDUCE_CMA (ucg_coll_scratch: 2
 * and 3 are phases') */
#define UCG_SM_SCRATCH_IDX        2

/* SM_REDUCE_CMA: bytes the root reads of a vector before reducing them
 * (a chunk stays in the cache between the read and the reduction) */
#define UCG_SM_CMA_CHUNK          (64 * UCS_KBYTE)

enum {
    UCG_SM_ROLE_SEND,  /* root of SM_BCAST, contributor of SM_REDUCE/GATHER */
    UCG_SM_ROLE_RECV,
    UCG_SM_ROLE_BOTH   /* SM_ALLREDUCE */
};

/* Which fan-in endpoint a member contributes to in a phase */
typedef struct ucg_sm_key {
    unsigned        root;
    uct_o2m_mode_t  mode;
    uct_o2m_op_t    op;
    uct_o2m_dtype_t dtype;
} ucg_sm_key_t;

typedef struct ucg_sm_pack_arg {
    ucg_coll_t *coll;
    size_t     offset;
    size_t     length;
} ucg_sm_pack_arg_t;


static int ucg_sm_is_scatter(const ucg_coll_t *coll)
{
    return coll->params.type == UCG_COLL_SCATTER;
}

/* The transport's (op, dtype) of a phase; GATHER when it only moves data */
static void ucg_sm_phase_op(const ucg_coll_t *coll, const ucg_phase_t *phase,
                            uct_o2m_op_t *op_p, uct_o2m_dtype_t *dtype_p)
{
    *op_p    = UCT_O2M_OP_GATHER;
    *dtype_p = UCT_O2M_DT_UINT8;
    if ((phase->method == UCG_PHASE_SM_REDUCE) && phase->sm_native &&
        !ucg_op_to_o2m(&coll->op, op_p, dtype_p)) {
        /* The planner said native: it cannot disagree with ucg_dt */
        *op_p    = UCT_O2M_OP_GATHER;
        *dtype_p = UCT_O2M_DT_UINT8;
    }
}

static int ucg_sm_contrib_key(const ucg_coll_t *coll, unsigned phase_idx,
                              ucg_sm_key_t *key)
{
    const ucg_phase_t *phase = &coll->plan->phases[phase_idx];
    const ucg_phase_set_t *set;
    unsigned idx;

    if ((phase->method != UCG_PHASE_SM_REDUCE) &&
        (phase->method != UCG_PHASE_SM_GATHER) &&
        (phase->method != UCG_PHASE_SM_BCAST_CMA) &&
        (phase->method != UCG_PHASE_SM_REDUCE_CMA)) {
        return 0;
    }

    set = ucg_phase_find_set(phase, coll->group->rank, &idx);
    if ((set == NULL) || (idx == set->root)) {
        return 0;
    }

    key->root = set->ranks[set->root];
    key->mode = (phase->method == UCG_PHASE_SM_BCAST_CMA) ?
                phase->sm_ack_mode : phase->sm_mode;
    ucg_sm_phase_op(coll, phase, &key->op, &key->dtype);
    return 1;
}

/* Whether @a coll, in a fan-in phase, has made all its contributions */
static int ucg_sm_contributed(const ucg_coll_t *coll)
{
    /* Still waiting for its endpoints: it has not even begun */
    if (!coll->ps.sm.open) {
        return 0;
    }

    /* The fan-in stage of the CMA phases: 1 of bcast, 0 of reduce */
    if (coll->phase->method == UCG_PHASE_SM_BCAST_CMA) {
        if (coll->ps.sm.cma.stage == 0) {
            return 0;
        }
    } else if (coll->phase->method == UCG_PHASE_SM_REDUCE_CMA) {
        if (coll->ps.sm.cma.stage == 1) {
            return 1;
        }
    }
    return coll->ps.sm.next >= coll->ps.sm.nfrags;
}

/* Whether every collective started before @a coll is done contributing to
 * the fan-in endpoint of @a key */
static int ucg_sm_my_turn(const ucg_coll_t *coll, const ucg_sm_key_t *key)
{
    const ucg_coll_t *prev;
    ucg_sm_key_t prev_key;
    unsigned p;

    ucs_list_for_each(prev, &coll->group->colls, list) {
        if (prev == coll) {
            return 1;
        }

        for (p = prev->phase_idx; p < prev->plan->num_phases; ++p) {
            /* A phase that runs point-to-point contributes nothing */
            if (!ucg_sm_contrib_key(prev, p, &prev_key) ||
                ((p == prev->phase_idx) &&
                 ((prev->phase == &prev->sm_subst) ||
                  ucg_sm_contributed(prev)))) {
                continue;
            }
            if (!memcmp(&prev_key, key, sizeof(*key))) {
                return 0;
            }
        }
    }

    return 1;
}

static size_t ucg_sm_stream_length(const ucg_coll_t *coll)
{
    switch (coll->phase->method) {
    case UCG_PHASE_SM_BCAST:
        return ucg_sm_is_scatter(coll) ? (coll->set->count * coll->block) :
               coll->data_len;
    case UCG_PHASE_SM_REDUCE:
    case UCG_PHASE_SM_ALLREDUCE:
        return coll->len;
    default: /* SM_GATHER */
        return coll->block;
    }
}

static size_t ucg_sm_frag_size(const ucg_coll_t *coll)
{
    size_t frag = coll->phase->frag_size;

    if (frag == 0) {
        frag = coll->group->context->sm_max_bcopy - sizeof(ucg_sm_hdr_t);
    }

    if ((coll->phase->method == UCG_PHASE_SM_REDUCE) ||
        (coll->phase->method == UCG_PHASE_SM_ALLREDUCE)) {
        /* Whole elements per fragment */
        frag = ucg_frag_whole_elems(frag, coll->dt_size);
    }
    return frag;
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

static int ucg_sm_cma_is_bcast(const ucg_coll_t *coll)
{
    return coll->phase->method == UCG_PHASE_SM_BCAST_CMA;
}

/* Bytes that an SM_*_CMA phase reads from each described buffer */
static size_t ucg_sm_cma_length(const ucg_coll_t *coll)
{
    return ucg_sm_cma_is_bcast(coll) ? coll->data_len : coll->len;
}

static void ucg_sm_cma_pack(const ucg_coll_t *coll, void *payload)
{
    ucg_sm_cma_desc_t *desc;

    if (coll->ps.sm.cma.stage == 0) {
        desc           = payload;
        desc->addr     = ucg_sm_cma_is_bcast(coll) ? (uintptr_t)coll->data :
                                                     (uintptr_t)coll->acc;
        desc->length   = ucg_sm_cma_length(coll);
        desc->pid      = getpid();
        desc->reserved = 0;
    } else {
        *(ucg_sm_cma_ack_t*)payload = (int)coll->ps.sm.cma.read;
    }
}

static size_t ucg_sm_pack(void *dest, void *arg)
{
    ucg_sm_pack_arg_t *pack = arg;
    ucg_coll_t *coll        = pack->coll;
    ucg_sm_hdr_t *hdr       = dest;
    char *payload           = (char*)(hdr + 1);
    size_t done, contig;
    const void *src;

    memset(hdr, 0, sizeof(*hdr));
    hdr->group_id = coll->group->id;
    hdr->seq      = coll->seq;
    hdr->phase    = coll->phase_idx;
    hdr->epoch    = coll->group->epoch;
    hdr->frag     = coll->ps.sm.next;
    hdr->src      = coll->my_idx;

    switch (coll->phase->method) {
    case UCG_PHASE_SM_BCAST_CMA:
    case UCG_PHASE_SM_REDUCE_CMA:
        ucg_sm_cma_pack(coll, payload);
        break;
    case UCG_PHASE_SM_BCAST:
        for (done = 0; done < pack->length; done += contig) {
            src    = ucg_sm_bcast_ptr(coll, pack->offset + done, &contig);
            contig = ucs_min(contig, pack->length - done);
            memcpy(payload + done, src, contig);
        }
        break;
    case UCG_PHASE_SM_REDUCE:
    case UCG_PHASE_SM_ALLREDUCE:
        if (pack->length > 0) { /* none in a barrier */
            memcpy(payload, UCS_PTR_BYTE_OFFSET(coll->acc, pack->offset),
                   pack->length);
        }
        break;
    default: /* SM_GATHER: own block (none in a barrier) */
        if (pack->length == 0) {
            break;
        }
        memcpy(payload,
               UCS_PTR_BYTE_OFFSET(coll->gbuf,
                                   coll->group->rank * coll->block +
                                   pack->offset), pack->length);
        break;
    }

    return sizeof(*hdr) + pack->length;
}

static ucs_status_t ucg_sm_send(ucg_coll_t *coll)
{
    uct_ep_h ep = coll->ps.sm.ep;
    ucg_sm_pack_arg_t pack;
    ucg_sm_key_t key;
    ssize_t ret;

    if (!coll->ps.sm.turn) {
        if (ucg_sm_contrib_key(coll, coll->phase_idx, &key) &&
            !ucg_sm_my_turn(coll, &key)) {
            return UCS_INPROGRESS;
        }
        coll->ps.sm.turn = 1;
    }

    pack.coll = coll;
    while (coll->ps.sm.next < coll->ps.sm.nfrags) {
        pack.offset = coll->ps.sm.next * coll->ps.sm.frag_len;
        pack.length = ucs_min(coll->ps.sm.frag_len,
                              coll->ps.sm.total - pack.offset);
        ret         = uct_ep_am_bcopy(ep, UCG_SM_AM_ID, ucg_sm_pack, &pack, 0);
        if (ret == UCS_ERR_NO_RESOURCE) {
            return UCS_INPROGRESS; /* ring full: retried from progress */
        } else if (ret < 0) {
            ucs_error("ucg group %u %s seq %u phase %u: send failed: %s",
                      coll->group->id, ucg_coll_name(coll->params.type),
                      coll->seq, coll->phase_idx,
                      ucs_status_string((ucs_status_t)ret));
            return (ucs_status_t)ret;
        }
        ++coll->ps.sm.next;
    }

    return UCS_OK;
}

static ucs_status_t ucg_sm_recv_error(ucg_coll_t *coll, const char *what,
                                      size_t value)
{
    ucs_error("ucg group %u %s seq %u phase %u fragment %zu: %s (%zu)",
              coll->group->id, ucg_coll_name(coll->params.type), coll->seq,
              coll->phase_idx, coll->ps.sm.next, what, value);
    return UCS_ERR_IO_ERROR;
}

static ucs_status_t ucg_sm_recv_bcast(ucg_coll_t *coll, const void *payload,
                                      size_t length, size_t offset)
{
    size_t lo, hi, own_lo;

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

static ucs_status_t ucg_sm_recv_fanin(ucg_coll_t *coll, const void *data,
                                      size_t length, size_t frag_len,
                                      size_t offset)
{
    unsigned senders = coll->set->count - 1;
    size_t count     = frag_len / coll->dt_size;
    size_t stride    = sizeof(ucg_sm_hdr_t) + frag_len;
    const void *contrib;
    unsigned pos, idx;

    if ((coll->phase->method == UCG_PHASE_SM_REDUCE) &&
        coll->phase->sm_native) {
        if (length != stride) {
            return ucg_sm_recv_error(coll, "unexpected reduced length",
                                     length);
        }
        ucg_op_reduce(&coll->op, UCS_PTR_BYTE_OFFSET(data, sizeof(ucg_sm_hdr_t)),
                      UCS_PTR_BYTE_OFFSET(coll->acc, offset), count);
        return UCS_OK;
    }

    if (length != senders * stride) {
        return ucg_sm_recv_error(coll, "unexpected gathered length", length);
    }

    /* Contributions side by side in member order, the root excluded */
    for (pos = 0; pos < senders; ++pos) {
        contrib = UCS_PTR_BYTE_OFFSET(data, pos * stride +
                                      sizeof(ucg_sm_hdr_t));
        if (coll->phase->method == UCG_PHASE_SM_REDUCE) {
            ucg_op_reduce(&coll->op, contrib,
                          UCS_PTR_BYTE_OFFSET(coll->acc, offset), count);
        } else if (frag_len > 0) {
            idx = (pos < coll->set->root) ? pos : (pos + 1);
            memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf,
                                       coll->set->ranks[idx] * coll->block +
                                       offset), contrib, frag_len);
        }
    }
    return UCS_OK;
}

/* SM_ALLREDUCE: another member's fragment, into its vector's slot */
static void ucg_sm_allreduce_deliver(ucg_coll_t *coll, const ucg_sm_hdr_t *hdr,
                                     size_t length)
{
    size_t offset = (size_t)hdr->frag * coll->ps.sm.frag_len;
    size_t frag_len;

    ++coll->ps.sm.allreduce.recvd;
    if ((hdr->src >= coll->set->count) || (hdr->src == coll->my_idx) ||
        (hdr->frag >= coll->ps.sm.nfrags)) {
        coll->ps.sm.status = ucg_sm_recv_error(coll, "bad source or "
                                               "fragment", hdr->src);
        return;
    }

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

/* SM_*_CMA: a descriptor of @a length bytes at @a desc, from a sender whose
 * buffer must have the length that this member reads */
static ucs_status_t ucg_sm_cma_check_desc(ucg_coll_t *coll,
                                         const ucg_sm_cma_desc_t *desc)
{
    if (desc->length != ucg_sm_cma_length(coll)) {
        return ucg_sm_recv_error(coll, "the sender's buffer has another length",
                                 desc->length);
    }
    return UCS_OK;
}

/* SM_*_CMA: the message(s) of the current stage:
 *  - bcast stage 0, at a member: the root's descriptor;
 *  - bcast stage 1, at the root: the members' read statuses side by side;
 *  - reduce stage 0, at the root: the members' descriptors side by side,
 *    kept in the phase's scratch in member order;
 *  - reduce stage 1, at a member: the root's status. */
static ucs_status_t ucg_sm_cma_deliver(ucg_coll_t *coll,
                                       const ucg_sm_hdr_t *hdr, size_t length)
{
    int fanin            = ucg_sm_cma_is_bcast(coll) ==
                           (coll->ps.sm.cma.stage == 1);
    size_t payload_len   = (coll->ps.sm.cma.stage == 0) ?
                           sizeof(ucg_sm_cma_desc_t) : sizeof(ucg_sm_cma_ack_t);
    size_t stride        = sizeof(*hdr) + payload_len;
    unsigned num_msgs    = fanin ? (coll->set->count - 1) : 1;
    ucg_sm_cma_desc_t *descs;
    const void *payload;
    ucg_sm_cma_ack_t ack;
    ucs_status_t status;
    unsigned pos;

    if (hdr->frag != 0) {
        return ucg_sm_recv_error(coll, "out of order, got fragment",
                                 hdr->frag);
    } else if (length != num_msgs * stride) {
        return ucg_sm_recv_error(coll, "unexpected length", length);
    }

    descs = coll->ps.sm.cma.descs;
    for (pos = 0; pos < num_msgs; ++pos) {
        payload = UCS_PTR_BYTE_OFFSET(hdr, pos * stride + sizeof(*hdr));
        if (coll->ps.sm.cma.stage == 0) {
            /* The payload may be in the sender's shared ring: check the
             * private copy, which is what the read uses */
            memcpy(&descs[pos], payload, sizeof(*descs));
            status = ucg_sm_cma_check_desc(coll, &descs[pos]);
            if (status != UCS_OK) {
                return status;
            }
            continue;
        }

        memcpy(&ack, payload, sizeof(ack));
        if (ack != UCS_OK) {
            ucs_error("ucg group %u %s seq %u: %s: %s", coll->group->id,
                      ucg_coll_name(coll->params.type), coll->seq,
                      ucg_sm_cma_is_bcast(coll) ?
                      "a member could not read this root's buffer" :
                      "the root could not read the members' vectors",
                      ucs_status_string((ucs_status_t)ack));
            return (ucs_status_t)ack;
        }
    }
    return UCS_OK;
}

void ucg_sm_deliver(ucg_coll_t *coll, const void *data, size_t length)
{
    const ucg_sm_hdr_t *hdr = data;
    size_t offset, frag_len;
    ucs_status_t status;

    if (coll->ps.sm.status != UCS_OK) {
        return;
    }

    if (coll->phase->method == UCG_PHASE_SM_ALLREDUCE) {
        ucg_sm_allreduce_deliver(coll, hdr, length);
        return;
    } else if ((coll->phase->method == UCG_PHASE_SM_BCAST_CMA) ||
               (coll->phase->method == UCG_PHASE_SM_REDUCE_CMA)) {
        coll->ps.sm.status = ucg_sm_cma_deliver(coll, hdr, length);
        ++coll->ps.sm.next;
        return;
    }

    if (hdr->frag != coll->ps.sm.next) {
        status = ucg_sm_recv_error(coll, "out of order, got fragment",
                                   hdr->frag);
        goto out;
    }

    offset   = coll->ps.sm.next * coll->ps.sm.frag_len;
    frag_len = ucs_min(coll->ps.sm.frag_len, coll->ps.sm.total - offset);

    if (coll->phase->method == UCG_PHASE_SM_BCAST) {
        if (length != sizeof(*hdr) + frag_len) {
            status = ucg_sm_recv_error(coll, "unexpected length", length);
        } else {
            status = ucg_sm_recv_bcast(coll, hdr + 1, frag_len, offset);
        }
    } else {
        status = ucg_sm_recv_fanin(coll, data, length, frag_len, offset);
    }

out:
    coll->ps.sm.status = status;
    ++coll->ps.sm.next;
}

int ucg_sm_expects(const ucg_coll_t *coll)
{
    switch (coll->phase->method) {
    case UCG_PHASE_SM_BCAST_CMA:
    case UCG_PHASE_SM_REDUCE_CMA:
    case UCG_PHASE_SM_BCAST:
    case UCG_PHASE_SM_REDUCE:
    case UCG_PHASE_SM_GATHER:
        return (coll->ps.sm.role == UCG_SM_ROLE_RECV) &&
               (coll->ps.sm.next < coll->ps.sm.nfrags);
    case UCG_PHASE_SM_ALLREDUCE:
        return coll->ps.sm.allreduce.recvd < coll->ps.sm.allreduce.expect;
    default:
        return 0;
    }
}

/* ------------------------------------------------------------------------ */
/* Receive path: the AM handler of the sm interfaces                        */
/* ------------------------------------------------------------------------ */

/* A message that no collective is ready for: keep a copy.  Without memory
 * for it the message is lost, and the collective that needs it would wait
 * for it forever: the group fails instead (nothing lost silently). */
static ucs_status_t ucg_sm_keep(ucg_group_h group, const void *data,
                                size_t length)
{
    ucg_sm_unexp_t *msg;

    msg = ucs_malloc(sizeof(*msg) + length, "ucg sm unexp");
    if (msg == NULL) {
        ucs_error("UCG group %u rank %u: out of memory for an early message "
                  "of %zu bytes; the group fails", group->id, group->rank,
                  length);
        if (group->failed == UCS_OK) {
            group->failed = UCS_ERR_NO_MEMORY;
        }
        return UCS_OK;
    }

    memcpy(&msg->hdr, data, sizeof(msg->hdr));
    memcpy(msg->data, data, length);
    msg->length = length;
    ucs_queue_push(&group->sm_unexp, &msg->queue);
    return UCS_OK;
}

ucs_status_t ucg_sm_am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
{
    ucg_context_h context   = arg;
    const ucg_sm_hdr_t *hdr = data;
    ucg_group_h group;
    ucg_coll_t *coll;

    if (length < sizeof(*hdr)) {
        ucs_error("ucg: sm message of %zu bytes is shorter than its header",
                  length);
        return UCS_OK;
    }

    /* A member receives only on the endpoints of its own groups, which a
     * group creates after it is in the context and destroys before it
     * leaves it: a message of no live group (or of an earlier group that
     * had the id of a live one) is late or forged, and no group of this
     * context may ever take it */
    group = ucg_context_find_group(context, hdr->group_id);
    if ((group == NULL) || (hdr->epoch != group->epoch)) {
        ++context->sm_dropped;
        ucs_debug("ucg: dropping an sm message of %zu bytes for group %u "
                  "epoch %u (%s)", length, hdr->group_id,
                  (unsigned)hdr->epoch, (group == NULL) ? "no such group" :
                  "the group has another epoch");
        return UCS_OK;
    }

    ucs_list_for_each(coll, &group->colls, list) {
        if (coll->seq != hdr->seq) {
            continue;
        }
        if ((coll->phase_idx == hdr->phase) && (coll->set != NULL) &&
            ucg_sm_expects(coll)) {
            ucg_sm_deliver(coll, data, length);
            return UCS_OK;
        }
        break;
    }

    return ucg_sm_keep(group, data, length);
}

/* The host-local endpoint @a tl rooted at @a root, as the endpoint cache
 * of ucg_group_sm_ep() keys it */
static void ucg_sm_slot_add(ucg_sm_slot_t *slots, unsigned *count_p,
                            ucg_sm_tl_t tl, unsigned root, uct_o2m_mode_t mode,
                            uct_o2m_op_t op, uct_o2m_dtype_t dtype)
{
    ucg_sm_slot_t *slot = &slots[(*count_p)++];

    if (tl == UCG_SM_BCAST) {
        op = UCT_O2M_OP_GATHER;
    }
    slot->tl    = tl;
    slot->root  = root;
    slot->mode  = mode;
    slot->op    = op;
    slot->dtype = (op == UCT_O2M_OP_GATHER) ? UCT_O2M_DT_INT8 : dtype;
}

/* Endpoints the phases of @a coll's plan create, on every host; with
 * @a slots NULL, only counts them */
static unsigned ucg_sm_plan_slots(const ucg_coll_t *coll, ucg_sm_slot_t *slots)
{
    const ucg_phase_set_t *set;
    const ucg_phase_t *phase;
    uct_o2m_dtype_t dtype;
    unsigned i, s, r, root;
    unsigned count = 0;
    uct_o2m_op_t op;

    for (i = 0; i < coll->plan->num_phases; ++i) {
        phase = &coll->plan->phases[i];
        ucg_sm_phase_op(coll, phase, &op, &dtype);
        for (s = 0; s < phase->num_sets; ++s) {
            set  = &phase->sets[s];
            root = set->ranks[set->root];
            switch (phase->method) {
            case UCG_PHASE_SM_BCAST:
                if (slots != NULL) {
                    ucg_sm_slot_add(slots, &count, UCG_SM_BCAST, root,
                                    phase->sm_mode, op, dtype);
                } else {
                    ++count;
                }
                break;
            case UCG_PHASE_SM_REDUCE:
            case UCG_PHASE_SM_GATHER:
                if (slots != NULL) {
                    ucg_sm_slot_add(slots, &count, UCG_SM_INCAST, root,
                                    phase->sm_mode, op, dtype);
                } else {
                    ++count;
                }
                break;
            case UCG_PHASE_SM_ALLREDUCE:
                for (r = 0; r < set->count; ++r) {
                    if (slots != NULL) {
                        ucg_sm_slot_add(slots, &count, UCG_SM_BCAST,
                                        set->ranks[r], phase->sm_mode, op,
                                        dtype);
                    } else {
                        ++count;
                    }
                }
                break;
            case UCG_PHASE_SM_BCAST_CMA:
            case UCG_PHASE_SM_REDUCE_CMA:
                if (slots == NULL) {
                    count += 2;
                    break;
                }
                ucg_sm_slot_add(slots, &count,
                                (phase->method == UCG_PHASE_SM_BCAST_CMA) ?
                                UCG_SM_BCAST : UCG_SM_INCAST, root,
                                phase->sm_mode, UCT_O2M_OP_GATHER, dtype);
                ucg_sm_slot_add(slots, &count,
                                (phase->method == UCG_PHASE_SM_BCAST_CMA) ?
                                UCG_SM_INCAST : UCG_SM_BCAST, root,
                                phase->sm_ack_mode, UCT_O2M_OP_GATHER, dtype);
                break;
            default:
                break;
            }
        }
    }

    return count;
}

int ucg_sm_admit(ucg_coll_t *coll)
{
    ucg_sm_slot_t *slots;
    unsigned count;
    int admitted;

    count = ucg_sm_plan_slots(coll, NULL);
    if (count == 0) {
        return 1;
    }

    slots = ucs_malloc(count * sizeof(*slots), "ucg sm slots");
    if (slots == NULL) {
        ucs_error("ucg: out of memory for %u endpoint slots", count);
        return 0;
    }

    ucg_sm_plan_slots(coll, slots);
    admitted = ucg_group_sm_admit(coll->group, slots, count);
    ucs_free(slots);
    return admitted;
}

/* Messages of this phase that arrived before it began */
static void ucg_sm_take_early(ucg_coll_t *coll)
{
    ucs_queue_head_t *queue = &coll->group->sm_unexp;
    ucs_queue_iter_t iter;
    ucg_sm_unexp_t *msg;

    ucs_queue_for_each_safe(msg, iter, queue, queue) {
        if (!ucg_sm_expects(coll)) {
            break;
        }
        if ((msg->hdr.seq == coll->seq) &&
            (msg->hdr.phase == coll->phase_idx)) {
            ucs_queue_del_iter(queue, iter);
            ucg_sm_deliver(coll, msg->data, msg->length);
            ucs_free(msg);
        }
    }
}

/*
 * Begin a stream of @a total bytes in fragments of @a frag on the @a tl
 * endpoint of the set: its root sends on sm_bcast and receives on sm_incast.
 */
static ucs_status_t ucg_sm_stream_begin(ucg_coll_t *coll, ucg_sm_tl_t tl,
                                        uct_o2m_mode_t mode, uct_o2m_op_t op,
                                        uct_o2m_dtype_t dtype, size_t total,
                                        size_t frag)
{
    int is_root = (coll->my_idx == coll->set->root);
    ucs_status_t status;
    uct_ep_h ep;

    status = ucg_group_sm_ep(coll->group, tl, coll->set, mode, op, dtype,
                             &ep);
    if (status != UCS_OK) {
        return status;
    }

    coll->ps.sm.ep       = ep;
    coll->ps.sm.total    = total;
    coll->ps.sm.frag_len = frag;
    coll->ps.sm.nfrags   = ucs_max(1, ucs_div_round_up(total, frag));
    coll->ps.sm.next     = 0;
    coll->ps.sm.turn     = 0;
    coll->ps.sm.role     = ((tl == UCG_SM_BCAST) == is_root) ?
                           UCG_SM_ROLE_SEND : UCG_SM_ROLE_RECV;

    if (coll->ps.sm.role == UCG_SM_ROLE_RECV) {
        ucg_sm_take_early(coll);
    }
    return UCS_OK;
}

static ucs_status_t ucg_sm_start(ucg_coll_t *coll)
{
    uct_o2m_op_t op;
    uct_o2m_dtype_t dtype;

    ucg_sm_phase_op(coll, coll->phase, &op, &dtype);
    coll->ps.sm.status = UCS_OK;
    return ucg_sm_stream_begin(coll,
                               (coll->phase->method == UCG_PHASE_SM_BCAST) ?
                               UCG_SM_BCAST : UCG_SM_INCAST,
                               coll->phase->sm_mode, op, dtype,
                               ucg_sm_stream_length(coll),
                               ucg_sm_frag_size(coll));
}

/*
 * SM_ALLREDUCE: every member is the root of one sm_bcast endpoint of the
 * set, and a receiver on the others'.  All of them are created here (the
 * endpoint cache makes that once per group).
 */
static ucs_status_t ucg_sm_allreduce_start(ucg_coll_t *coll)
{
    ucg_phase_set_t set = *coll->set;
    ucs_status_t status;
    uct_ep_h ep;

    for (set.root = 0; set.root < set.count; ++set.root) {
        status = ucg_group_sm_ep(coll->group, UCG_SM_BCAST, &set,
                                 coll->phase->sm_mode, UCT_O2M_OP_GATHER,
                                 UCT_O2M_DT_UINT8, &ep);
        if (status != UCS_OK) {
            return status;
        }
        if (set.root == coll->my_idx) {
            coll->ps.sm.ep = ep;
        }
    }

    if (coll->len > 0) {
        coll->ps.sm.allreduce.vecs = ucg_coll_scratch(coll,
                                                      UCG_SM_SCRATCH_IDX,
                                                      set.count * coll->len);
        if (coll->ps.sm.allreduce.vecs == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }

    coll->ps.sm.total            = coll->len;
    coll->ps.sm.frag_len         = ucg_sm_frag_size(coll);
    coll->ps.sm.nfrags           = ucs_max(1, ucs_div_round_up(
                                                   coll->len,
                                                   coll->ps.sm.frag_len));
    coll->ps.sm.allreduce.expect = (set.count - 1) * coll->ps.sm.nfrags;
    coll->ps.sm.status           = UCS_OK;
    coll->ps.sm.role             = UCG_SM_ROLE_BOTH;
    coll->ps.sm.turn             = 1;
    ucg_sm_take_early(coll);
    return UCS_OK;
}

static ucs_status_t ucg_sm_allreduce_progress(ucg_coll_t *coll)
{
    void *vecs = coll->ps.sm.allreduce.vecs;
    ucs_status_t status;
    unsigned i;

    if (coll->ps.sm.allreduce.done) {
        return UCS_OK;
    }

    if (coll->ps.sm.next < coll->ps.sm.nfrags) {
        status = ucg_sm_send(coll);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (coll->ps.sm.status != UCS_OK) {
        return coll->ps.sm.status;
    }

    if (coll->ps.sm.allreduce.recvd < coll->ps.sm.allreduce.expect) {
        return UCS_INPROGRESS;
    }

    coll->ps.sm.allreduce.done = 1;
    if (coll->len == 0) {
        return UCS_OK; /* a barrier */
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

static ucs_status_t ucg_sm_progress(ucg_coll_t *coll)
{
    if (coll->ps.sm.role == UCG_SM_ROLE_SEND) {
        return ucg_sm_send(coll);
    }

    if (coll->ps.sm.status != UCS_OK) {
        return coll->ps.sm.status;
    }

    return (coll->ps.sm.next < coll->ps.sm.nfrags) ? UCS_INPROGRESS :
           UCS_OK;
}


/*
 * SM_*_CMA: enter @a stage.  The fan-out (root to members, sm_bcast) is
 * stage 0 of bcast and stage 1 of reduce; the fan-in (sm_incast) the other.
 */
static ucs_status_t ucg_sm_cma_stage(ucg_coll_t *coll, unsigned stage)
{
    int fanout = ucg_sm_cma_is_bcast(coll) == (stage == 0);

    coll->ps.sm.cma.stage = stage;
    return ucg_sm_stream_begin(coll, fanout ? UCG_SM_BCAST : UCG_SM_INCAST,
                               (stage == 0) ? coll->phase->sm_mode :
                                              coll->phase->sm_ack_mode,
                               UCT_O2M_OP_GATHER, UCT_O2M_DT_UINT8,
                               (stage == 0) ? sizeof(ucg_sm_cma_desc_t) :
                                              sizeof(ucg_sm_cma_ack_t),
                               (stage == 0) ? sizeof(ucg_sm_cma_desc_t) :
                                              sizeof(ucg_sm_cma_ack_t));
}

/* Bytes of the phase's scratch at a reader (a member of a bcast, the root
 * of a reduce): the descriptors it receives and, at the root of a reduce,
 * the chunk it reads into */
static size_t ucg_sm_cma_scratch_size(const ucg_coll_t *coll, size_t *chunk_p)
{
    size_t chunk;

    if (ucg_sm_cma_is_bcast(coll)) {
        *chunk_p = 0;
        return sizeof(ucg_sm_cma_desc_t);
    }

    /* Whole elements per chunk */
    chunk    = ucg_frag_whole_elems(UCG_SM_CMA_CHUNK, coll->dt_size);
    *chunk_p = chunk;
    return (coll->set->count - 1) * sizeof(ucg_sm_cma_desc_t) + chunk;
}

static ucs_status_t ucg_sm_cma_start(ucg_coll_t *coll)
{
    int is_root  = (coll->my_idx == coll->set->root);
    void *scratch = NULL;
    size_t chunk;

    /* Only the readers receive descriptors */
    if (ucg_sm_cma_is_bcast(coll) != is_root) {
        scratch = ucg_coll_scratch(coll, UCG_SM_SCRATCH_IDX,
                                   ucg_sm_cma_scratch_size(coll, &chunk));
        if (scratch == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }

    coll->ps.sm.cma.descs = scratch;
    coll->ps.sm.status    = UCS_OK;
    coll->ps.sm.cma.read  = UCS_OK;
    return ucg_sm_cma_stage(coll, 0);
}

/* Read @a length bytes at offset @a offset of the buffer of @a desc */
static ucs_status_t ucg_sm_cma_readv(ucg_coll_t *coll,
                                     const ucg_sm_cma_desc_t *desc,
                                     size_t offset, void *dst, size_t length)
{
    struct iovec remote;
    ucs_status_t status;
    size_t done;
    int error;

    remote.iov_base = (void*)(uintptr_t)(desc->addr + offset);
    remote.iov_len  = length;
    status          = uct_o2m_cma_read_nolog(desc->pid, dst, &remote, 1,
                                             length, &done, &error);
    if (status != UCS_OK) {
        ucs_error("ucg group %u %s seq %u: process_vm_readv(pid %d, "
                  "%zu bytes) failed: %s (UCX_UCG_SM_%s_CMA_THRESH=inf "
                  "disables single-copy %s)", coll->group->id,
                  ucg_coll_name(coll->params.type), coll->seq,
                  (int)desc->pid, length - done,
                  (error != 0) ? strerror(error) : "nothing read",
                  ucg_sm_cma_is_bcast(coll) ? "BCAST" : "REDUCE",
                  ucg_coll_name(coll->params.type));
    }
    return status;
}

/*
 * SM_REDUCE_CMA at the root: read the members' vectors and reduce them into
 * acc, in member order (the operation is commutative).  When our own vector
 * is not in acc yet (coll->own), the first member's is read straight into
 * acc instead; ours is reduced into it after the release (ucg_sm_cma_fold),
 * so that the members wait only for the reads.  Other vectors go through
 * the scratch chunk, so that a chunk is still in the cache when it is
 * reduced.
 */
static ucs_status_t ucg_sm_cma_reduce(ucg_coll_t *coll)
{
    const ucg_sm_cma_desc_t *descs = coll->ps.sm.cma.descs;
    unsigned num_members           = coll->set->count - 1;
    ucs_status_t status;
    size_t chunk, offset, length;
    unsigned pos;
    void *buf;

    pos = 0;
    if (coll->own != NULL) {
        status = ucg_sm_cma_readv(coll, &descs[0], 0, coll->acc, coll->len);
        if (status != UCS_OK) {
            return status;
        }
        pos = 1;
    }

    buf = UCS_PTR_BYTE_OFFSET(descs, num_members * sizeof(*descs));
    ucg_sm_cma_scratch_size(coll, &chunk);
    for (; pos < num_members; ++pos) {
        for (offset = 0; offset < coll->len; offset += length) {
            length = ucs_min(chunk, coll->len - offset);
            status = ucg_sm_cma_readv(coll, &descs[pos], offset, buf, length);
            if (status != UCS_OK) {
                return status;
            }
            ucg_op_reduce(&coll->op, buf,
                          UCS_PTR_BYTE_OFFSET(coll->acc, offset),
                          length / coll->dt_size);
        }
    }
    return UCS_OK;
}

/* SM_REDUCE_CMA at the root, once the members are released: our own vector
 * into acc, if ucg_sm_cma_reduce left it out */
static void ucg_sm_cma_fold(ucg_coll_t *coll)
{
    if (coll->own == NULL) {
        return;
    }

    if (coll->ps.sm.cma.read == UCS_OK) {
        ucg_op_reduce(&coll->op, coll->own, coll->acc, coll->params.count);
    }
    coll->own = NULL;
}

static ucs_status_t ucg_sm_cma_progress(ucg_coll_t *coll)
{
    int is_root = (coll->my_idx == coll->set->root);
    ucs_status_t status;

    if ((coll->ps.sm.cma.stage == 0) &&
        (coll->ps.sm.role == UCG_SM_ROLE_RECV) &&
        (coll->ps.sm.status != UCS_OK)) {
        /* A bad descriptor: stage 1 tells the other side, instead of
         * leaving it waiting forever */
        coll->ps.sm.cma.read = coll->ps.sm.status;
        coll->ps.sm.status   = UCS_OK;
    }

    status = ucg_sm_progress(coll);
    if (status != UCS_OK) {
        return status;
    }

    if (coll->ps.sm.cma.stage == 1) {
        /* An error received in stage 1 is returned above: what is left is
         * this member's own status */
        ucg_sm_cma_fold(coll);
        return coll->ps.sm.cma.read;
    }

    /* Stage 0 is over: the readers read */
    if (coll->ps.sm.cma.read == UCS_OK) {
        if (ucg_sm_cma_is_bcast(coll) && !is_root) {
            coll->ps.sm.cma.read = ucg_sm_cma_readv(
                    coll, coll->ps.sm.cma.descs, 0, coll->data,
                    coll->data_len);
        } else if (!ucg_sm_cma_is_bcast(coll) && is_root) {
            coll->ps.sm.cma.read = ucg_sm_cma_reduce(coll);
        }
    }

    status = ucg_sm_cma_stage(coll, 1);
    if (status != UCS_OK) {
        return status;
    }
    return ucg_sm_cma_progress(coll);
}


/* FOLD: the root combines the gathered vectors in rank order.  Folding from
 * the last rank down, acc = v[i] op acc, gives v0 op (v1 op (... v[n-1]))
 * with each user call's "in" from a lower rank than its "inout". */
static ucs_status_t ucg_fold_start(ucg_coll_t *coll)
{
    unsigned size = coll->group->size;
    unsigned i;

    memcpy(coll->acc,
           UCS_PTR_BYTE_OFFSET(coll->gbuf, (size - 1) * coll->block),
           coll->len);
    for (i = size - 1; i-- > 0;) {
        ucg_op_reduce(&coll->op,
                      UCS_PTR_BYTE_OFFSET(coll->gbuf, i * coll->block),
                      coll->acc, coll->params.count);
    }
    return UCS_OK;
}

static ucs_status_t ucg_fold_progress(ucg_coll_t *coll)
{
    return UCS_OK;
}


/* The SM phases themselves, once their endpoints are resolved */
static const ucg_phase_ops_t ucg_sm_open_ops[UCG_PHASE_LAST] = {
    [UCG_PHASE_SM_BCAST]  = {ucg_sm_start, ucg_sm_progress},
    [UCG_PHASE_SM_REDUCE] = {ucg_sm_start, ucg_sm_progress},
    [UCG_PHASE_SM_GATHER] = {ucg_sm_start, ucg_sm_progress},
    [UCG_PHASE_SM_ALLREDUCE] = {ucg_sm_allreduce_start,
                                ucg_sm_allreduce_progress},
    [UCG_PHASE_SM_BCAST_CMA] = {ucg_sm_cma_start, ucg_sm_cma_progress},
    [UCG_PHASE_SM_REDUCE_CMA] = {ucg_sm_cma_start, ucg_sm_cma_progress}
};


/*
 * Endpoints refused by their root
 * -------------------------------
 * A root that cannot create a group segment (out of memory) lists a
 * refusal, and every member's endpoint ends REFUSED instead of waiting
 * (uct_o2m_ep_state).  An SM phase therefore creates all the endpoints it
 * will use on its set before it sends anything, and waits until each is
 * READY or one is REFUSED; every member of the set sees the same outcome,
 * so either all run the SM phase or all run, on the same set, the
 * point-to-point phase that does the same (ucg_sm_subst): nothing was sent
 * on the refused endpoint, and members outside the set are not involved.
 * The outcome is kept in the plan: later collectives decide at once, the
 * same way (the endpoints are cached for the group's life).
 */

/* Each endpoint of this member's set in the current phase, in the order the
 * phase uses them: its state (the worst so far) */
static ucs_status_t ucg_sm_resolve_ep(ucg_coll_t *coll, ucg_sm_tl_t tl,
                                      const ucg_phase_set_t *set,
                                      uct_o2m_mode_t mode, uct_o2m_op_t op,
                                      uct_o2m_dtype_t dtype,
                                      uct_o2m_ep_state_t *worst_p)
{
    uct_o2m_ep_state_t state;
    ucs_status_t status;
    uct_ep_h ep;

    status = ucg_group_sm_ep(coll->group, tl, set, mode, op, dtype, &ep);
    if (status != UCS_OK) {
        return status;
    }

    state = uct_o2m_ep_state(ep, &status);
    if (state == UCT_O2M_EP_STATE_REFUSED) {
        *worst_p = state;
    } else if (state == UCT_O2M_EP_STATE_FAILED) {
        return status;
    } else if ((state == UCT_O2M_EP_STATE_JOINING) &&
               (*worst_p == UCT_O2M_EP_STATE_READY)) {
        *worst_p = state;
    }
    return UCS_OK;
}

/* UCS_OK when every endpoint of the phase is READY or one was refused
 * (*refused_p set), UCS_INPROGRESS while one is joining, or the error of a
 * failed one */
static ucs_status_t ucg_sm_resolve(ucg_coll_t *coll, int *refused_p)
{
    const ucg_phase_t *phase        = coll->phase;
    uct_o2m_ep_state_t worst        = UCT_O2M_EP_STATE_READY;
    ucs_status_t status             = UCS_OK;
    ucg_phase_set_t set;
    uct_o2m_dtype_t dtype;
    uct_o2m_op_t op;
    int bcast;

    *refused_p = 0;
    switch (phase->method) {
    case UCG_PHASE_SM_BCAST:
    case UCG_PHASE_SM_REDUCE:
    case UCG_PHASE_SM_GATHER:
        ucg_sm_phase_op(coll, phase, &op, &dtype);
        status = ucg_sm_resolve_ep(coll,
                                   (phase->method == UCG_PHASE_SM_BCAST) ?
                                   UCG_SM_BCAST : UCG_SM_INCAST, coll->set,
                                   phase->sm_mode, op, dtype, &worst);
        break;
    case UCG_PHASE_SM_BCAST_CMA:
    case UCG_PHASE_SM_REDUCE_CMA:
        bcast  = (phase->method == UCG_PHASE_SM_BCAST_CMA);
        status = ucg_sm_resolve_ep(coll, bcast ? UCG_SM_BCAST : UCG_SM_INCAST,
                                   coll->set, phase->sm_mode,
                                   UCT_O2M_OP_GATHER, UCT_O2M_DT_UINT8,
                                   &worst);
        if (status == UCS_OK) {
            status = ucg_sm_resolve_ep(coll,
                                       bcast ? UCG_SM_INCAST : UCG_SM_BCAST,
                                       coll->set, phase->sm_ack_mode,
                                       UCT_O2M_OP_GATHER, UCT_O2M_DT_UINT8,
                                       &worst);
        }
        break;
    case UCG_PHASE_SM_ALLREDUCE:
        set = *coll->set;
        for (set.root = 0; (set.root < set.count) && (status == UCS_OK);
             ++set.root) {
            status = ucg_sm_resolve_ep(coll, UCG_SM_BCAST, &set,
                                       phase->sm_mode, UCT_O2M_OP_GATHER,
                                       UCT_O2M_DT_UINT8, &worst);
        }
        break;
    default:
        return UCS_OK; /* FOLD: no endpoint */
    }

    *refused_p = (worst == UCT_O2M_EP_STATE_REFUSED);
    if (status != UCS_OK) {
        return status;
    }

    return (worst == UCT_O2M_EP_STATE_JOINING) ? UCS_INPROGRESS : UCS_OK;
}

/*
 * Run the current SM phase as the point-to-point phase that does the same on
 * the same set (see ucg_plan.h), with linear trees (radix = set size): a
 * member that only contributes then only sends (its acc may be the user's
 * send buffer), and every member only talks to the set root.
 */
static ucs_status_t ucg_sm_subst(ucg_coll_t *coll)
{
    const ucg_phase_t *phase = coll->phase;
    ucg_phase_t *subst       = &coll->sm_subst;

    *subst           = *phase;
    subst->owner     = NULL; /* every set member holds its own block */
    subst->frag_size = 0;
    subst->radix     = ucs_max(coll->set->count, 2);
    if (coll->params.type == UCG_COLL_BARRIER) {
        subst->method = UCG_PHASE_P2P_BARRIER;
    } else {
        switch (phase->method) {
        case UCG_PHASE_SM_BCAST:
            subst->method = ucg_sm_is_scatter(coll) ? UCG_PHASE_P2P_SCATTER :
                                                      UCG_PHASE_P2P_BCAST;
            break;
        case UCG_PHASE_SM_BCAST_CMA:
            subst->method = UCG_PHASE_P2P_BCAST;
            break;
        case UCG_PHASE_SM_REDUCE:
        case UCG_PHASE_SM_REDUCE_CMA:
            subst->method = UCG_PHASE_P2P_REDUCE;
            if (coll->own != NULL) {
                /* The root's own vector was left for SM_REDUCE_CMA */
                memcpy(coll->acc, coll->own, coll->len);
                coll->own = NULL;
            }
            break;
        case UCG_PHASE_SM_GATHER:
            subst->method = UCG_PHASE_P2P_GATHER;
            break;
        default: /* SM_ALLREDUCE */
            subst->method = UCG_PHASE_P2P_ALLREDUCE_RD;
            break;
        }
    }

    ucs_debug("ucg group %u %s seq %u phase %u: a host-local endpoint was "
              "refused by its root: %s on the set of %u", coll->group->id,
              ucg_coll_name(coll->params.type), coll->seq, coll->phase_idx,
              ucg_phase_method_names[subst->method], coll->set->count);
    memset(&coll->ps, 0, sizeof(coll->ps));
    coll->phase = subst;
    return ucg_p2p_phase_ops[subst->method].start(coll);
}

/* Resolve the endpoints of the phase; start it, or its stand-in, once
 * they are */
static ucs_status_t ucg_sm_gate(ucg_coll_t *coll)
{
    uint8_t *known = &((ucg_plan_t*)coll->plan)->sm_eps[coll->phase_idx];
    ucs_status_t status;
    int refused;

    if (*known == UCG_SM_EPS_REFUSED) {
        return ucg_sm_subst(coll);
    }

    if (*known != UCG_SM_EPS_READY) {
        /* A refusal decides even while another endpoint fails or joins:
         * every member of the set sees it */
        status = ucg_sm_resolve(coll, &refused);
        if (refused) {
            *known = UCG_SM_EPS_REFUSED;
            return ucg_sm_subst(coll);
        } else if (status != UCS_OK) {
            return status;
        }
        *known = UCG_SM_EPS_READY;
    }

    coll->ps.sm.open = 1;
    return ucg_sm_open_ops[coll->phase->method].start(coll);
}

static ucs_status_t ucg_sm_gate_start(ucg_coll_t *coll)
{
    return ucg_sm_gate(coll);
}

static ucs_status_t ucg_sm_gate_progress(ucg_coll_t *coll)
{
    ucs_status_t status;

    if (!coll->ps.sm.open) {
        status = ucg_sm_gate(coll);
        if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
            return status;
        }

        if (coll->phase == &coll->sm_subst) {
            return ucg_p2p_phase_ops[coll->phase->method].progress(coll);
        } else if (!coll->ps.sm.open) {
            return UCS_INPROGRESS;
        }
    }

    return ucg_sm_open_ops[coll->phase->method].progress(coll);
}

const ucg_phase_ops_t ucg_sm_phase_ops[UCG_PHASE_LAST] = {
    [UCG_PHASE_SM_BCAST]  = {ucg_sm_gate_start, ucg_sm_gate_progress},
    [UCG_PHASE_SM_REDUCE] = {ucg_sm_gate_start, ucg_sm_gate_progress},
    [UCG_PHASE_SM_GATHER] = {ucg_sm_gate_start, ucg_sm_gate_progress},
    [UCG_PHASE_FOLD]      = {ucg_fold_start, ucg_fold_progress},
    [UCG_PHASE_SM_ALLREDUCE] = {ucg_sm_gate_start, ucg_sm_gate_progress},
    [UCG_PHASE_SM_BCAST_CMA] = {ucg_sm_gate_start, ucg_sm_gate_progress},
    [UCG_PHASE_SM_REDUCE_CMA] = {ucg_sm_gate_start, ucg_sm_gate_progress}
};
