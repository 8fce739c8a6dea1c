/**
 * ucx-o2m: libFuzzer target for the checks of what a peer wrote into shared
 * memory (src/uct/sm/bcast/o2m_check.c).
 *
 * The first input byte picks a parser, the rest is what a corrupting peer
 * wrote.  Whenever a parser accepts its input, this target then touches
 * every byte the transport would touch on the strength of that answer (the
 * end of each region of a segment of the accepted size, the inline data of
 * an accepted length, the destination of a zcopy read), in buffers of
 * exactly that size: AddressSanitizer turns an accepted bad value into a
 * crash.  Built and run by test/fuzz/fuzz.sh.
 */
#include "o2m_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Largest segment the target allocates: geometry of larger ones is checked
 * the same way, with the segment size taken modulo this */
#define FUZZ_MAX_SEG (1u << 21)

/* Keeps the compiler from dropping the touches */
static volatile uint8_t fuzz_sink;

static void fuzz_touch(const void *ptr, size_t length)
{
    const volatile uint8_t *p = ptr;

    if (length > 0) {
        fuzz_sink ^= p[0] ^ p[length - 1];
    }
}

/* The handler table uct_iface_invoke_am indexes with an accepted am_id */
static uint8_t fuzz_am_table[UCT_AM_ID_MAX];

static void fuzz_touch_am(uint8_t am_id)
{
    fuzz_touch(&fuzz_am_table[am_id], 1);
}

/* What uct_o2m_zcopy_read writes for an accepted descriptor */
static void fuzz_zcopy(const uct_o2m_zdesc_t *zdesc)
{
    uint8_t *dst = malloc(zdesc->length ? zdesc->length : 1);
    size_t offset;
    uint32_t i;

    if (dst == NULL) {
        return;
    }

    memcpy(dst, zdesc->header, zdesc->header_length);
    offset = zdesc->header_length;
    for (i = 0; i < zdesc->iovcnt; ++i) {
        memset(dst + offset, 0x5a, zdesc->iov[i].len);
        offset += zdesc->iov[i].len;
    }
    if (offset != zdesc->length) {
        abort();
    }
    free(dst);
}

static void fuzz_take(void *dst, size_t dst_size, const uint8_t **data,
                      size_t *size)
{
    size_t n = (*size < dst_size) ? *size : dst_size;

    memset(dst, 0, dst_size);
    memcpy(dst, *data, n);
    *data += n;
    *size -= n;
}

static void fuzz_zdesc(const uint8_t *data, size_t size)
{
    uct_o2m_zdesc_t zdesc;
    const char *why;
    uint32_t max;

    fuzz_take(&max, sizeof(max), &data, &size);
    fuzz_take(&zdesc, sizeof(zdesc), &data, &size);
    max %= FUZZ_MAX_SEG;
    if (uct_o2m_zdesc_check(&zdesc, max, &why) == UCS_OK) {
        fuzz_zcopy(&zdesc);
    }
}

/* A point-to-point FIFO or fan-out ring element of @a stride bytes */
static void fuzz_elem(const uint8_t *data, size_t size)
{
    uct_o2m_elem_info_t info;
    uct_o2m_zdesc_t zdesc;
    uint16_t stride_lines;
    size_t stride;
    const char *why;
    uint8_t *elem;

    fuzz_take(&stride_lines, sizeof(stride_lines), &data, &size);
    stride = (9 + (stride_lines % 512)) * UCT_O2M_LINE; /* >= elem + zdesc */
    elem   = calloc(1, stride);
    if (elem == NULL) {
        return;
    }

    memcpy(elem, data, (size < stride) ? size : stride);
    if (uct_o2m_elem_parse((uct_o2m_elem_t*)elem,
                           stride - sizeof(uct_o2m_elem_t), &info,
                           &why) == UCS_OK) {
        fuzz_touch_am(info.am_id);
        if (!(info.flags & UCT_O2M_ELEM_FLAG_ZCOPY)) {
            fuzz_touch(UCT_O2M_ELEM_DATA(elem), info.length);
        } else if (uct_o2m_zdesc_copy(UCT_O2M_ELEM_DATA(elem), 1u << 20,
                                      &zdesc, &why) == UCS_OK) {
            fuzz_zcopy(&zdesc);
        }
    }
    free(elem);
}

static void fuzz_iface_geom(const uint8_t *data, size_t size)
{
    uct_o2m_iface_geom_t geom;
    uct_o2m_iface_seg_t hdr;
    uint32_t seg_size;
    const char *why;
    uint8_t *seg;

    fuzz_take(&seg_size, sizeof(seg_size), &data, &size);
    fuzz_take(&hdr, sizeof(hdr), &data, &size);
    seg_size %= FUZZ_MAX_SEG;
    if (uct_o2m_iface_geom_check(&hdr, seg_size, &geom, &why) != UCS_OK) {
        return;
    }

    seg = calloc(1, seg_size);
    if (seg == NULL) {
        return;
    }

    /* The last directory entry, the last FIFO element with a descriptor */
    fuzz_touch(seg + geom.dir_offset,
               geom.max_groups * sizeof(uct_o2m_dir_entry_t));
    fuzz_touch(seg + geom.fifo_offset + ((geom.fifo_depth - 1) *
                                         geom.elem_size),
               sizeof(uct_o2m_elem_t) + sizeof(uct_o2m_zdesc_t));
    fuzz_touch(seg + geom.fifo_offset, geom.fifo_depth * geom.elem_size);
    free(seg);
}

static void fuzz_group_geom(const uint8_t *data, size_t size)
{
    uct_o2m_group_geom_t geom;
    uct_o2m_group_seg_t hdr;
    uct_o2m_elem_info_t info;
    uct_o2m_zdesc_t zdesc;
    uint8_t *seg, *elem, *slot;
    uint32_t seg_size;
    uint8_t flags;
    size_t dt_size;
    unsigned pos;
    const char *why;

    fuzz_take(&seg_size, sizeof(seg_size), &data, &size);
    fuzz_take(&flags, sizeof(flags), &data, &size);
    fuzz_take(&hdr, sizeof(hdr), &data, &size);
    seg_size %= FUZZ_MAX_SEG;
    if (uct_o2m_group_geom_check(&hdr, seg_size, flags & 1, &geom,
                                 &why) != UCS_OK) {
        return;
    }

    seg = calloc(1, seg_size);
    if (seg == NULL) {
        return;
    }

    fuzz_touch(seg + geom.members_offset, hdr.size * sizeof(uct_o2m_member_t));
    elem = seg + geom.elems_offset + ((geom.depth - 1) * geom.elem_stride);
    if (!hdr.is_incast) {
        fuzz_touch(seg + geom.acks_offset, geom.depth * UCT_O2M_LINE);
        fuzz_touch(elem, geom.elem_stride);
        fuzz_touch(UCT_O2M_ELEM_DATA(elem), geom.max_length);
        fuzz_touch(UCT_O2M_ELEM_DATA(elem), sizeof(uct_o2m_zdesc_t));
        free(seg);
        return;
    }

    /* Fan-in: control line, shared buffer, every slot of the last element;
     * then one slot written by the peer, parsed and used */
    fuzz_touch(elem, UCT_O2M_LINE + geom.shared_size);
    for (pos = 0; pos < (hdr.size - 1); ++pos) {
        slot = elem + UCT_O2M_LINE + geom.shared_size +
               (pos * geom.slot_stride);
        fuzz_touch(slot, sizeof(uct_o2m_elem_t) +
                         ((geom.hdr_len > sizeof(zdesc)) ? geom.hdr_len :
                                                           sizeof(zdesc)));
    }

    slot = elem + UCT_O2M_LINE + geom.shared_size;
    memcpy(slot, data, (size < geom.slot_stride) ? size : geom.slot_stride);
    dt_size = 1u << (flags >> 6); /* 1, 2, 4 or 8 */
    if (uct_o2m_slot_parse((uct_o2m_elem_t*)slot, &geom, dt_size, 1u << 20,
                           &info, &why) == UCS_OK) {
        fuzz_touch_am(info.am_id);
        if (info.flags & UCT_O2M_ELEM_FLAG_ZCOPY) {
            if ((uct_o2m_zdesc_copy(UCT_O2M_ELEM_DATA(slot), info.length,
                                    &zdesc, &why) == UCS_OK) &&
                (zdesc.length == info.length)) {
                fuzz_zcopy(&zdesc);
            }
        } else if (info.flags & UCT_O2M_ELEM_FLAG_SHARED) {
            fuzz_touch(elem + UCT_O2M_LINE, info.length);
            fuzz_touch(UCT_O2M_ELEM_DATA(slot), geom.hdr_len);
        } else {
            fuzz_touch(UCT_O2M_ELEM_DATA(slot), info.length);
        }
    }
    free(seg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }

    switch (data[0] % 5) {
    case 0:
        fuzz_zdesc(data + 1, size - 1);
        break;
    case 1:
        fuzz_elem(data + 1, size - 1);
        break;
    case 2:
        fuzz_iface_geom(data + 1, size - 1);
        break;
    case 3:
    case 4:
        fuzz_group_geom(data + 1, size - 1);
        break;
    }
    return 0;
}
