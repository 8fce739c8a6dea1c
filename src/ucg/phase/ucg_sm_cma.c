/**
 * UCG host-local single-copy phases, each in two stages on two endpoints of
 * the set (a stream each, ucg_sm.c):
 *  - SM_BCAST_CMA: stage 0: the root sends a descriptor of its buffer
 *    (sm_bcast); each member reads the buffer with process_vm_readv.
 *    Stage 1: each member contributes an 8-byte status (sm_incast, gather);
 *    the root completes when all have read (its buffer may be reused from
 *    then on), and fails if one could not;
 *  - SM_REDUCE_CMA: stage 0: every member but the root contributes a
 *    descriptor of its vector (sm_incast, gather); the root reads the
 *    vectors with process_vm_readv, a chunk at a time, and reduces them
 *    into its own.  Stage 1: the root sends its status (sm_bcast); members
 *    complete with it (their vector may be reused from then on).
 */
#include "ucg_sm.h"
#include "o2m_seg.h"

#include <ucs/debug/log.h>
#include <string.h>
#include <errno.h>
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

/* SM_REDUCE_CMA: bytes the root reads of a vector before reducing them
 * (a chunk stays in the cache between the read and the reduction) */
#define UCG_SM_CMA_CHUNK          (64 * UCS_KBYTE)

static int ucg_sm_cma_is_bcast(const ucg_coll_t *coll)
{
    return coll->phase->method == UCG_PHASE_SM_BCAST_CMA;
}

/* Bytes that an SM_*_CMA phase reads from each described buffer */
static size_t ucg_sm_cma_length(const ucg_coll_t *coll)
{
    return ucg_sm_cma_is_bcast(coll) ? coll->data_len : coll->len;
}

static void ucg_sm_cma_pack(const ucg_coll_t *coll, void *payload,
                            size_t offset, size_t length)
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

/* The endpoint of stage 0 (@a first0: sm_bcast for bcast, sm_incast for
 * reduce, in the phase's mode), then the other one of stage 1 (ack mode) */
static ucs_status_t ucg_sm_cma_eps(const ucg_phase_t *phase,
                                   const ucg_phase_set_t *set,
                                   ucg_sm_tl_t first0, ucg_sm_ep_cb_t cb,
                                   void *arg)
{
    ucs_status_t status;

    status = cb(arg, first0, set, phase->sm_mode, UCT_O2M_OP_GATHER,
                UCT_O2M_DT_UINT8);
    if (status != UCS_OK) {
        return status;
    }
    return cb(arg, (first0 == UCG_SM_BCAST) ? UCG_SM_INCAST : UCG_SM_BCAST,
              set, phase->sm_ack_mode, UCT_O2M_OP_GATHER, UCT_O2M_DT_UINT8);
}

ucs_status_t ucg_sm_bcast_cma_eps(const ucg_coll_t *coll,
                                  const ucg_phase_t *phase,
                                  const ucg_phase_set_t *set,
                                  ucg_sm_ep_cb_t cb, void *arg)
{
    return ucg_sm_cma_eps(phase, set, UCG_SM_BCAST, cb, arg);
}

ucs_status_t ucg_sm_reduce_cma_eps(const ucg_coll_t *coll,
                                   const ucg_phase_t *phase,
                                   const ucg_phase_set_t *set,
                                   ucg_sm_ep_cb_t cb, void *arg)
{
    return ucg_sm_cma_eps(phase, set, UCG_SM_INCAST, cb, arg);
}

/* The fan-in is stage 1 of bcast */
int ucg_sm_bcast_cma_contributed(const ucg_coll_t *coll)
{
    return (coll->ps.sm.cma.stage == 1) && ucg_sm_stream_contributed(coll);
}

/* The fan-in is stage 0 of reduce */
int ucg_sm_reduce_cma_contributed(const ucg_coll_t *coll)
{
    return (coll->ps.sm.cma.stage == 1) || ucg_sm_stream_contributed(coll);
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
static ucs_status_t ucg_sm_cma_recv(ucg_coll_t *coll,
                                    const ucg_sm_hdr_t *hdr, size_t length)
{
    int fanin          = ucg_sm_cma_is_bcast(coll) ==
                         (coll->ps.sm.cma.stage == 1);
    size_t payload_len = (coll->ps.sm.cma.stage == 0) ?
                         sizeof(ucg_sm_cma_desc_t) : sizeof(ucg_sm_cma_ack_t);
    size_t stride      = sizeof(*hdr) + payload_len;
    unsigned num_msgs  = fanin ? (coll->set->count - 1) : 1;
    ucg_sm_cma_desc_t *descs;
    const void *payload;
    ucg_sm_cma_ack_t ack;
    ucs_status_t status;
    uint32_t index;
    unsigned pos;

    status = ucg_sm_frag_index(coll, hdr, 1, &index);
    if (status != UCS_OK) {
        return status;
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

void ucg_sm_cma_deliver(ucg_coll_t *coll, const void *data, size_t length)
{
    coll->ps.sm.status = ucg_sm_cma_recv(coll, data, length);
    ++coll->ps.sm.next;
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
                                              sizeof(ucg_sm_cma_ack_t),
                               ucg_sm_cma_pack);
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

ucs_status_t ucg_sm_cma_start(ucg_coll_t *coll)
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

ucs_status_t ucg_sm_cma_progress(ucg_coll_t *coll)
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

    status = ucg_sm_stream_progress(coll);
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
