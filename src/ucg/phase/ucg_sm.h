/**
 * What the host-local phases (ucg_sm_*.c) share: the stream of fragments
 * they send and receive on their sm_bcast / sm_incast endpoints (ucg_sm.c).
 */
#ifndef UCG_SM_H_
#define UCG_SM_H_

#include "ucg_coll.h"

#include <ucs/sys/math.h>

/* Scratch buffer of SM_ALLREDUCE and SM_REDUCE_CMA (ucg_coll_scratch: 2
 * and 3 are phases') */
#define UCG_SM_SCRATCH_IDX        2

/* ucg_sm_state_t::role */
enum {
    UCG_SM_ROLE_SEND,  /* root of SM_BCAST, contributor of SM_REDUCE/GATHER */
    UCG_SM_ROLE_RECV,
    UCG_SM_ROLE_BOTH   /* SM_ALLREDUCE */
};

/** Fills the payload of the stream's fragment at @a offset (@a length
 *  bytes) from the phase's data */
typedef void (*ucg_sm_pack_t)(const ucg_coll_t *coll, void *payload,
                              size_t offset, size_t length);

/** Takes the fragment at stream offset @a offset (@a frag_len bytes) from
 *  the message @a data of @a length bytes (header included) */
typedef ucs_status_t (*ucg_sm_recv_t)(ucg_coll_t *coll, const void *data,
                                      size_t length, size_t frag_len,
                                      size_t offset);

/**
 * Begin a stream of @a total bytes in fragments of @a frag on the @a tl
 * endpoint of the set: its root sends on sm_bcast and receives on
 * sm_incast; a sender's fragments are filled by @a pack.
 */
ucs_status_t ucg_sm_stream_begin(ucg_coll_t *coll, ucg_sm_tl_t tl,
                                 uct_o2m_mode_t mode, uct_o2m_op_t op,
                                 uct_o2m_dtype_t dtype, size_t total,
                                 size_t frag, ucg_sm_pack_t pack);

/** Send what is left of the stream: UCS_OK when all is sent,
 *  UCS_INPROGRESS while the ring is full or it is not this collective's turn
 *  on its fan-in endpoint, or an error */
ucs_status_t ucg_sm_send(ucg_coll_t *coll);

/**
 * The endpoints of a one-hop exchange (SM_ALLREDUCE, SM_ALLGATHERV): every
 * member of the set is the root of one sm_bcast endpoint and a receiver on
 * the others'.  All are created (the endpoint cache makes that once per
 * group); this member's own goes to coll->ps.sm.ep.
 */
ucs_status_t ucg_sm_exchange_eps(ucg_coll_t *coll);

/** Start a one-hop exchange whose geometry (total, frag_len, nfrags,
 *  allreduce.expect) is set: this member sends and receives, its stream
 *  packed by @a pack, and takes the messages that came before the phase */
void ucg_sm_exchange_begin(ucg_coll_t *coll,
                           void (*pack)(const ucg_coll_t *coll, void *payload,
                                        size_t offset, size_t len));

/** Progress of a one-hop exchange: send what is left of this member's
 *  stream; UCS_OK once every expected fragment of the others is in,
 *  UCS_INPROGRESS before, or the phase's error */
ucs_status_t ucg_sm_exchange_progress(ucg_coll_t *coll);

/** Largest fragment payload of the current phase (bytes) */
size_t ucg_sm_frag_max(const ucg_coll_t *coll);

/** Log a bad message of the current phase (one line); UCS_ERR_IO_ERROR */
ucs_status_t ucg_sm_recv_error(ucg_coll_t *coll, const char *what,
                               size_t value);

/** Deliver the messages of the current phase that arrived before it began */
void ucg_sm_take_early(ucg_coll_t *coll);

/**
 * The index of the fragment in @a hdr, of a stream of @a nfrags fragments
 * from each sender: UCS_OK, or an error with one log line when it is beyond
 * the stream or the sender's stream ends elsewhere (UCS_ERR_MESSAGE_TRUNCATED:
 * the sender's count differs from this member's)
 */
ucs_status_t ucg_sm_frag_index(ucg_coll_t *coll, const ucg_sm_hdr_t *hdr,
                               unsigned nfrags, uint32_t *index_p);

/** A message of a stream: the next fragment, taken by @a recv */
static inline void ucg_sm_stream_deliver(ucg_coll_t *coll, const void *data,
                                         size_t length, ucg_sm_recv_t recv)
{
    const ucg_sm_hdr_t *hdr = data;
    ucg_sm_state_t *sm      = &coll->ps.sm;
    size_t offset, frag_len;
    ucs_status_t status;
    uint32_t index;

    status = ucg_sm_frag_index(coll, hdr, sm->nfrags, &index);
    if (status != UCS_OK) {
        /* logged */
    } else if (index != sm->next) {
        status = ucg_sm_recv_error(coll, "out of order, got fragment",
                                   index);
    } else {
        offset   = sm->next * sm->frag_len;
        frag_len = ucs_min(sm->frag_len, sm->total - offset);
        status   = recv(coll, data, length, frag_len, offset);
    }

    sm->status = status;
    ++sm->next;
}

#endif
