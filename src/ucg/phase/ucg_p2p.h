/**
 * What the point-to-point phases (ucg_p2p_*.c) share: the UCP tag
 * primitives (ucg_p2p_ucp.c) and a few helpers.
 *
 * Every algorithm is a small state machine in its member of coll->ps:
 * start() posts the first step, progress() waits until ucg_p2p_test()
 * reports everything posted so far as done, finishes that step (reduces
 * what arrived) and posts the next one.  Nothing blocks.  Members are
 * addressed by their index in the phase set; messages go to their group
 * ranks.  Each round of an algorithm has its own step value, so tags never
 * mix up rounds; rounds that exceed the 8 bits of a step reuse values only
 * between the same pair of members, where messages are matched in posting
 * order anyway.
 */
#ifndef UCG_P2P_H_
#define UCG_P2P_H_

#include "ucg_coll.h"

#include <ucs/sys/math.h>

#define UCG_P2P_STEP_MASK  (UCS_MASK(UCG_TAG_STEP_BITS))

/* Scratch buffer of the phases: 0 and 1 hold the executor's acc and gbuf */
#define UCG_P2P_SCRATCH_IDX (UCG_COLL_MAX_SCRATCH - 1)

/** Post a send / receive of @a len bytes to / from group rank @a peer, with
 *  the algorithm's @a step (0..255).  Completion: ucg_p2p_test(). */
ucs_status_t ucg_p2p_send(ucg_coll_t *coll, unsigned peer, unsigned step,
                          const void *buf, size_t len);
ucs_status_t ucg_p2p_recv(ucg_coll_t *coll, unsigned peer, unsigned step,
                          void *buf, size_t len);

/** UCS_OK when every request posted in this phase completed, UCS_INPROGRESS,
 *  or the error of a failed one (a receive truncated included). */
ucs_status_t ucg_p2p_test(ucg_coll_t *coll);

/** After an error: cancel the outstanding requests of @a coll, and leave
 *  none that UCP may still use (force-closed or parked, see there) */
void ucg_p2p_cancel_all(ucg_coll_t *coll);

/** Group rank of set member @a idx */
static inline unsigned ucg_p2p_rank(const ucg_coll_t *coll, unsigned idx)
{
    return coll->set->ranks[idx];
}

/** The phases' scratch buffer: at least one byte, so empty vectors get a
 *  valid pointer as well */
static inline ucs_status_t ucg_p2p_scratch(ucg_coll_t *coll, size_t size,
                                           void **buf_p)
{
    *buf_p = ucg_coll_scratch(coll, UCG_P2P_SCRATCH_IDX,
                              ucs_max(size, (size_t)1));
    return (*buf_p == NULL) ? UCS_ERR_NO_MEMORY : UCS_OK;
}

#endif
