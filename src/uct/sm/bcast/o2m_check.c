/**
 * ucx-o2m: checks of what a peer wrote into shared memory, see o2m_check.h.
 *
 * Nothing here logs, calls the system or keeps state: the fuzz target
 * (test/fuzz/) builds this file alone.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_check.h"

#include <string.h>


#define UCT_O2M_CHECK(_cond, _why) \
    if (!(_cond)) { \
        *why_p = (_why); \
        return UCS_ERR_INVALID_PARAM; \
    }


static int uct_o2m_check_is_pow2(uint64_t value)
{
    return (value != 0) && ((value & (value - 1)) == 0);
}

/* Whether [offset, offset + count * stride) lies within @a size bytes;
 * count * stride must not overflow (the callers bound both) */
static int uct_o2m_check_fits(uint64_t offset, uint64_t count,
                              uint64_t stride, uint64_t size)
{
    return (offset <= size) && ((count * stride) <= (size - offset));
}

ucs_status_t uct_o2m_iface_geom_check(const uct_o2m_iface_seg_t *hdr,
                                      size_t seg_size,
                                      uct_o2m_iface_geom_t *geom,
                                      const char **why_p)
{
    UCT_O2M_CHECK((hdr->max_groups >= 1) &&
                  (hdr->max_groups <= UCT_O2M_CHECK_MAX_GROUPS),
                  "max_groups out of range");
    UCT_O2M_CHECK((hdr->dir_offset >= sizeof(*hdr)) &&
                  ((hdr->dir_offset % UCT_O2M_LINE) == 0),
                  "dir_offset misplaced");
    UCT_O2M_CHECK(uct_o2m_check_fits(hdr->dir_offset, hdr->max_groups,
                                     sizeof(uct_o2m_dir_entry_t), seg_size),
                  "group directory beyond the segment");
    UCT_O2M_CHECK(uct_o2m_check_is_pow2(hdr->fifo_depth) &&
                  (hdr->fifo_depth <= UCT_O2M_CHECK_MAX_DEPTH),
                  "fifo_depth not a power of 2 in range");
    UCT_O2M_CHECK(((hdr->elem_size % UCT_O2M_LINE) == 0) &&
                  (hdr->elem_size >= (sizeof(uct_o2m_elem_t) +
                                      sizeof(uct_o2m_zdesc_t))),
                  "FIFO elem_size out of range");
    UCT_O2M_CHECK((hdr->fifo_offset >= sizeof(*hdr)) &&
                  ((hdr->fifo_offset % UCT_O2M_LINE) == 0),
                  "fifo_offset misplaced");
    UCT_O2M_CHECK(uct_o2m_check_fits(hdr->fifo_offset, hdr->fifo_depth,
                                     hdr->elem_size, seg_size),
                  "FIFO beyond the segment");

    geom->dir_offset  = hdr->dir_offset;
    geom->fifo_offset = hdr->fifo_offset;
    geom->max_groups  = hdr->max_groups;
    geom->fifo_depth  = hdr->fifo_depth;
    geom->elem_size   = hdr->elem_size;
    return UCS_OK;
}

/* Alignment and range of a region's offset or a stride */
static int uct_o2m_check_line(uint64_t value)
{
    return ((value % UCT_O2M_LINE) == 0) &&
           (value <= UCT_O2M_CHECK_MAX_STRIDE);
}

ucs_status_t uct_o2m_group_geom_check(const uct_o2m_group_seg_t *hdr,
                                      size_t seg_size, int shared,
                                      uct_o2m_group_geom_t *geom,
                                      const char **why_p)
{
    size_t zdesc_slot = sizeof(uct_o2m_elem_t) + sizeof(uct_o2m_zdesc_t);

    UCT_O2M_CHECK((hdr->size >= 2) &&
                  (hdr->size <= UCT_O2M_CHECK_MAX_MEMBERS) &&
                  (hdr->root_index < hdr->size),
                  "size or root_index out of range");
    UCT_O2M_CHECK(uct_o2m_check_is_pow2(hdr->depth) &&
                  (hdr->depth <= UCT_O2M_CHECK_MAX_DEPTH),
                  "depth not a power of 2 in range");
    UCT_O2M_CHECK((hdr->max_length <= UINT32_MAX) &&
                  (hdr->hdr_len <= hdr->max_length),
                  "max_length or hdr_len out of range");
    UCT_O2M_CHECK((hdr->members_offset >= sizeof(*hdr)) &&
                  uct_o2m_check_line(hdr->members_offset) &&
                  uct_o2m_check_fits(hdr->members_offset, hdr->size,
                                     sizeof(uct_o2m_member_t), seg_size),
                  "members_offset misplaced or beyond the segment");
    UCT_O2M_CHECK(uct_o2m_check_line(hdr->elem_stride) &&
                  (hdr->elem_stride > 0), "elem_stride out of range");
    UCT_O2M_CHECK((hdr->elems_offset >= sizeof(*hdr)) &&
                  uct_o2m_check_line(hdr->elems_offset) &&
                  uct_o2m_check_fits(hdr->elems_offset, hdr->depth,
                                     hdr->elem_stride, seg_size),
                  "elems_offset misplaced or ring beyond the segment");

    if (!hdr->is_incast) {
        /* An element holds inline data or a large-message descriptor */
        UCT_O2M_CHECK((hdr->elem_stride >= zdesc_slot) &&
                      (hdr->max_length <= (hdr->elem_stride -
                                           sizeof(uct_o2m_elem_t))),
                      "elem_stride too small for max_length");
        UCT_O2M_CHECK((hdr->acks_offset >= sizeof(*hdr)) &&
                      uct_o2m_check_line(hdr->acks_offset) &&
                      uct_o2m_check_fits(hdr->acks_offset, hdr->depth,
                                         UCT_O2M_LINE, seg_size),
                      "acks_offset misplaced or beyond the segment");
        geom->slot_stride = 0;
        geom->shared_size = 0;
    } else {
        /* control line | shared buffer | (size - 1) slots */
        UCT_O2M_CHECK(uct_o2m_check_line(hdr->slot_stride) &&
                      (hdr->slot_stride >= zdesc_slot) &&
                      (hdr->slot_stride >= (sizeof(uct_o2m_elem_t) +
                                            hdr->hdr_len)),
                      "slot_stride out of range");
        if (shared) {
            UCT_O2M_CHECK(uct_o2m_check_line(hdr->shared_size) &&
                          (hdr->shared_size >= hdr->max_length),
                          "shared_size smaller than max_length");
        } else {
            UCT_O2M_CHECK(hdr->shared_size == 0,
                          "shared_size set in a mode without one");
            UCT_O2M_CHECK(hdr->max_length <= (hdr->slot_stride -
                                              sizeof(uct_o2m_elem_t)),
                          "slot_stride too small for max_length");
        }
        UCT_O2M_CHECK(hdr->elem_stride >= (UCT_O2M_LINE + hdr->shared_size +
                                           ((uint64_t)(hdr->size - 1) *
                                            hdr->slot_stride)),
                      "elem_stride smaller than its slots");
        geom->slot_stride = hdr->slot_stride;
        geom->shared_size = hdr->shared_size;
    }

    geom->depth          = hdr->depth;
    geom->hdr_len        = hdr->hdr_len;
    geom->max_length     = hdr->max_length;
    geom->elem_stride    = hdr->elem_stride;
    geom->members_offset = hdr->members_offset;
    geom->acks_offset    = hdr->acks_offset;
    geom->elems_offset   = hdr->elems_offset;
    return UCS_OK;
}

ucs_status_t uct_o2m_zdesc_check(const uct_o2m_zdesc_t *zdesc,
                                 size_t max_length, const char **why_p)
{
    uint64_t total;
    uint32_t i;

    UCT_O2M_CHECK(zdesc->pid > 0, "zcopy pid invalid");
    UCT_O2M_CHECK(zdesc->iovcnt <= UCT_O2M_MAX_IOV, "zcopy iovcnt too large");
    UCT_O2M_CHECK(zdesc->header_length <= UCT_O2M_MAX_ZCOPY_HDR,
                  "zcopy header_length too large");
    UCT_O2M_CHECK((zdesc->length <= max_length) &&
                  (zdesc->length <= UINT32_MAX), "zcopy length too large");
    UCT_O2M_CHECK(zdesc->header_length <= zdesc->length,
                  "zcopy header_length exceeds length");

    /* Each part is at most the total, so the sum cannot overflow */
    total = zdesc->header_length;
    for (i = 0; i < zdesc->iovcnt; ++i) {
        UCT_O2M_CHECK(zdesc->iov[i].len <= zdesc->length,
                      "zcopy iov length too large");
        total += zdesc->iov[i].len;
    }
    UCT_O2M_CHECK(total == zdesc->length,
                  "zcopy iov lengths do not add up to length");
    return UCS_OK;
}

ucs_status_t uct_o2m_elem_parse(const uct_o2m_elem_t *elem, size_t max_inline,
                                uct_o2m_elem_info_t *info, const char **why_p)
{
    const volatile uct_o2m_elem_t *velem = elem;

    info->length = velem->length;
    info->am_id  = velem->am_id;
    info->flags  = velem->flags;

    /* The interface's handler table has UCT_AM_ID_MAX entries */
    UCT_O2M_CHECK(info->am_id < UCT_AM_ID_MAX, "element am_id invalid");
    UCT_O2M_CHECK(!(info->flags & ~UCT_O2M_ELEM_FLAG_ZCOPY),
                  "element flags invalid");
    UCT_O2M_CHECK((info->flags & UCT_O2M_ELEM_FLAG_ZCOPY) ||
                  (info->length <= max_inline), "element length too large");
    return UCS_OK;
}

ucs_status_t uct_o2m_slot_parse(const uct_o2m_elem_t *slot,
                                const uct_o2m_group_geom_t *geom,
                                size_t dt_size, size_t max_zcopy,
                                uct_o2m_elem_info_t *info, const char **why_p)
{
    const volatile uct_o2m_elem_t *vslot = slot;
    const volatile uct_o2m_zdesc_t *zdesc;
    size_t max_inline;

    info->am_id  = vslot->am_id;
    info->flags  = vslot->flags;

    UCT_O2M_CHECK(info->am_id < UCT_AM_ID_MAX, "slot am_id invalid");
    if (info->flags == UCT_O2M_ELEM_FLAG_ZCOPY) {
        /* The element's 32-bit length field may be truncated */
        zdesc        = UCT_O2M_ELEM_DATA(slot);
        info->length = zdesc->length;
        UCT_O2M_CHECK(info->length <= ucs_min(max_zcopy, UINT32_MAX),
                      "slot zcopy length too large");
    } else {
        info->length = vslot->length;
        if (info->flags == UCT_O2M_ELEM_FLAG_SHARED) {
            /* The data is in the shared buffer */
            UCT_O2M_CHECK(geom->shared_size != 0,
                          "slot flags invalid: no shared buffer");
            max_inline = geom->max_length;
        } else {
            UCT_O2M_CHECK((info->flags == 0) && (geom->shared_size == 0),
                          "slot flags invalid");
            max_inline = ucs_min(geom->max_length,
                                 geom->slot_stride - sizeof(*slot));
        }
        UCT_O2M_CHECK(info->length <= max_inline, "slot length too large");
    }

    UCT_O2M_CHECK(info->length >= geom->hdr_len,
                  "slot length below hdr_len");
    UCT_O2M_CHECK(((info->length - geom->hdr_len) % dt_size) == 0,
                  "slot length not whole elements");
    return UCS_OK;
}

ucs_status_t uct_o2m_zdesc_copy(const void *shm, size_t max_length,
                                uct_o2m_zdesc_t *zdesc, const char **why_p)
{
    memcpy(zdesc, shm, sizeof(*zdesc));
    return uct_o2m_zdesc_check(zdesc, max_length, why_p);
}
