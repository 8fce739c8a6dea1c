/**
 * ucx-o2m: sm_incast, the fan-in ring: its element layout, shared by the
 * senders (incast_ep.c) and the root (incast_root.c).
 *
 * ucx-o2m: sm_incast, the fan-in ring.
 *
 * Round s uses element s % depth:
 *
 *   +--------------+------------------------+--------+-----+----------+
 *   | control line | shared buffer          | slot 0 | ... | slot n-2 |
 *   +--------------+------------------------+--------+-----+----------+
 *
 * Each sender owns one slot (a uct_o2m_elem_t: header line, then data).
 *  - BATCHED:     the sender fills its slot, then increments "arrived";
 *  - CENTRALIZED: the sender fills its slot and stamps it with the round; the
 *                 root polls the stamps, no shared counter;
 *  - LOCKED:      the sender reduces into the shared buffer under the lock;
 *  - ATOMIC:      the sender reduces into the shared buffer with atomic
 *                 operations (the root refills it with the identity of the
 *                 operation after each round).
 * A group of two (one sender) has no concurrency: in every mode its sender
 * fills its slot and stamps it, and the root copies nothing more.
 * LOCKED and ATOMIC then increment "arrived".  Their slots only carry the
 * length, the header bytes and large-message descriptors; a gather or a
 * large (zcopy) contribution always goes through the slot, and the root
 * combines it.  In BATCHED and CENTRALIZED modes the root does all the
 * reduction work, in member order, so results are reproducible.
 *
 * After delivering round s the root resets the element and publishes
 * delivered = s + 1, which frees the element for round s + depth.
 */
#ifndef UCT_O2M_INCAST_EP_H_
#define UCT_O2M_INCAST_EP_H_

#include "o2m_group.h"


/*
 * Whether arrivals are seen through the stamps of the slots (CENTRALIZED)
 * rather than the arrival counter.  A single sender needs no counter either.
 */
static UCS_F_ALWAYS_INLINE int
uct_o2m_incast_stamped(const uct_o2m_group_ep_t *ep)
{
    return (ep->mode == UCT_O2M_MODE_CENTRALIZED) || (ep->size == 2);
}

static UCS_F_ALWAYS_INLINE int uct_o2m_incast_is_logical(uct_o2m_op_t op)
{
    return (op == UCT_O2M_OP_LAND) || (op == UCT_O2M_OP_LOR) ||
           (op == UCT_O2M_OP_LXOR);
}

static UCS_F_ALWAYS_INLINE void *
uct_o2m_incast_elem(uct_o2m_group_ep_t *ep, uint64_t seq)
{
    return UCS_PTR_BYTE_OFFSET(ep->elems, (seq & (ep->depth - 1)) *
                                          ep->elem_stride);
}

static UCS_F_ALWAYS_INLINE uct_o2m_incast_ctl_t *
uct_o2m_incast_ctl(void *elem)
{
    return elem;
}

static UCS_F_ALWAYS_INLINE void *
uct_o2m_incast_shared(void *elem)
{
    return UCS_PTR_BYTE_OFFSET(elem, UCT_O2M_LINE);
}

static UCS_F_ALWAYS_INLINE uct_o2m_elem_t *
uct_o2m_incast_slot(uct_o2m_group_ep_t *ep, void *elem, unsigned pos)
{
    return UCS_PTR_BYTE_OFFSET(elem, UCT_O2M_LINE + ep->geom.shared_size +
                                     (pos * ep->geom.slot_stride));
}

/* Refill the shared buffer of @a elem with the identity of the operation */
void uct_o2m_incast_fill_identity(uct_o2m_group_ep_t *ep, void *elem,
                                  size_t length);

/* dst = src, the first contribution of a result (see incast_ep.c) */
void uct_o2m_incast_first(uct_o2m_group_ep_t *ep, void *dst,
                          const void *src, size_t count);

#endif
