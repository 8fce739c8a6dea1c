/**
 * ucx-o2m: checks of what a peer wrote into shared memory.
 *
 * Every segment and every message slot of these transports can be written
 * by another process.  Before a value found there is used as a length,
 * count, index, offset or pointer, the reader copies it into private memory
 * once and checks the copy with one of the functions below; afterwards it
 * uses only the copy.  The functions are pure (no logging, no system calls,
 * no shared memory access): on a bad value they return
 * UCS_ERR_INVALID_PARAM and set *why_p to a static string naming the field,
 * and the caller fails the endpoint or group with one log line.  The fuzz
 * target in test/fuzz/ calls them directly.
 */
#ifndef UCT_O2M_CHECK_H_
#define UCT_O2M_CHECK_H_

#include "o2m_group.h"


/* Upper bounds of geometry fields, well above what the configuration
 * allows, so that products of them never overflow 64 bits */
#define UCT_O2M_CHECK_MAX_DEPTH   (1u << 20)
#define UCT_O2M_CHECK_MAX_STRIDE  (1ull << 32)
#define UCT_O2M_CHECK_MAX_MEMBERS 65536
#define UCT_O2M_CHECK_MAX_GROUPS  65536


/**
 * Check the header of an interface segment (a private copy of it) against
 * the segment's real size, and fill @a geom.
 */
ucs_status_t uct_o2m_iface_geom_check(const uct_o2m_iface_seg_t *hdr,
                                      size_t seg_size,
                                      uct_o2m_iface_geom_t *geom,
                                      const char **why_p);

/**
 * Check the header of a group segment (a private copy of it) against the
 * segment's real size, and fill @a geom.  @a shared: whether senders of a
 * fan-in group reduce into the shared buffer (see incast_ep.h).
 */
ucs_status_t uct_o2m_group_geom_check(const uct_o2m_group_seg_t *hdr,
                                      size_t seg_size, int shared,
                                      uct_o2m_group_geom_t *geom,
                                      const char **why_p);

/**
 * Check a large-message descriptor (a private copy): counts and lengths
 * within the array sizes, the parts adding up to the total, the total at
 * most @a max_length.
 */
ucs_status_t uct_o2m_zdesc_check(const uct_o2m_zdesc_t *zdesc,
                                 size_t max_length, const char **why_p);

/**
 * Copy the descriptor a peer wrote at @a shm out of shared memory into
 * @a zdesc, then check the copy (uct_o2m_zdesc_check).
 */
ucs_status_t uct_o2m_zdesc_copy(const void *shm, size_t max_length,
                                uct_o2m_zdesc_t *zdesc, const char **why_p);

/**
 * Copy the header of the element @a elem (a fan-out ring element or a
 * point-to-point FIFO element) into @a info and check it: an active-message
 * id below UCT_AM_ID_MAX, known flags only, an inline message at most
 * @a max_inline bytes.  For a zcopy element the caller then copies and
 * checks the descriptor, whose length counts.
 */
ucs_status_t uct_o2m_elem_parse(const uct_o2m_elem_t *elem, size_t max_inline,
                                uct_o2m_elem_info_t *info, const char **why_p);

/**
 * Copy the header of the fan-in sender slot @a slot into @a info and check
 * it against the group geometry: an active-message id below UCT_AM_ID_MAX,
 * flags that fit the mode, an inline length that fits where its data is,
 * and at least @a geom->hdr_len bytes followed by whole elements of
 * @a dt_size bytes.  A zcopy slot's length is its
 * descriptor's (64 bits), at most @a max_zcopy.
 */
ucs_status_t uct_o2m_slot_parse(const uct_o2m_elem_t *slot,
                                const uct_o2m_group_geom_t *geom,
                                size_t dt_size, size_t max_zcopy,
                                uct_o2m_elem_info_t *info, const char **why_p);

#endif
