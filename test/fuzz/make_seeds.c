/**
 * ucx-o2m: writes the seed corpus of the o2m_check fuzz target (valid
 * inputs of each kind, laid out as the transports lay them out) into the
 * directory given as argument.  Run by 'test/fuzz/fuzz.sh --seeds'; its
 * output is checked in as test/fuzz/corpus/.
 */
#include "o2m_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void seed_write(const char *dir, const char *name, const void *a,
                       size_t alen, const void *b, size_t blen)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if ((f == NULL) || (fwrite(a, 1, alen, f) != alen) ||
        (fwrite(b, 1, blen, f) != blen)) {
        perror(path);
        exit(1);
    }
    fclose(f);
}

static size_t seed_align(size_t v)
{
    return (v + UCT_O2M_LINE - 1) & ~(size_t)(UCT_O2M_LINE - 1);
}

int main(int argc, char **argv)
{
    uint8_t buf[4096];
    uct_o2m_zdesc_t z;
    uct_o2m_elem_t e;
    uct_o2m_iface_seg_t ih;
    uct_o2m_group_seg_t gh;
    uint32_t u32;
    uint16_t u16;
    size_t slot_data;

    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 1;
    }

    /* zdesc: selector 0, max_length, descriptor of 3 parts */
    memset(&z, 0, sizeof(z));
    z.pid           = 1234;
    z.iovcnt        = 2;
    z.header_length = 16;
    z.length        = 16 + 1000 + 24;
    z.iov[0].len    = 1000;
    z.iov[1].len    = 24;
    buf[0] = 0;
    u32    = 1u << 20;
    memcpy(buf + 1, &u32, 4);
    seed_write(argv[1], "zdesc", buf, 5, &z, sizeof(z));

    /* elem: selector 1, stride, an inline element and a zcopy one */
    memset(&e, 0, sizeof(e));
    e.seq    = 1;
    e.length = 100;
    buf[0]   = 1;
    u16      = 120;
    memcpy(buf + 1, &u16, 2);
    memcpy(buf + 3, &e, sizeof(e));
    seed_write(argv[1], "elem_inline", buf, 3 + sizeof(e), "", 0);
    e.flags  = UCT_O2M_ELEM_FLAG_ZCOPY;
    e.length = z.length;
    memcpy(buf + 3, &e, sizeof(e));
    seed_write(argv[1], "elem_zcopy", buf, 3 + sizeof(e), &z, sizeof(z));

    /* iface: selector 2, size, header as o2m_iface.c lays it out */
    memset(&ih, 0, sizeof(ih));
    ih.magic       = UCT_O2M_IFACE_MAGIC;
    ih.version     = UCT_O2M_LAYOUT_VERSION;
    ih.fifo_depth  = 64;
    ih.elem_size   = 8256;
    ih.max_groups  = 64;
    ih.dir_offset  = sizeof(ih);
    ih.fifo_offset = sizeof(ih) + seed_align(64 * sizeof(uct_o2m_dir_entry_t));
    u32            = ih.fifo_offset + (64 * 8256);
    buf[0]         = 2;
    memcpy(buf + 1, &u32, 4);
    seed_write(argv[1], "iface", buf, 5, &ih, sizeof(ih));

    /* group, fan-out: selector 3, size, flags, header as bcast_ep.c */
    memset(&gh, 0, sizeof(gh));
    gh.magic          = UCT_O2M_GROUP_MAGIC;
    gh.version        = UCT_O2M_LAYOUT_VERSION;
    gh.size           = 4;
    gh.depth          = 16;
    gh.members_offset = seed_align(sizeof(gh));
    gh.acks_offset    = gh.members_offset + (4 * sizeof(uct_o2m_member_t));
    gh.elems_offset   = gh.acks_offset + (16 * UCT_O2M_LINE);
    gh.elem_stride    = 1024;
    gh.max_length     = 1024 - sizeof(uct_o2m_elem_t);
    u32               = gh.elems_offset + (16 * 1024);
    buf[0]            = 3;
    memcpy(buf + 1, &u32, 4);
    buf[5]            = 0;
    seed_write(argv[1], "group_bcast", buf, 6, &gh, sizeof(gh));

    /* group, fan-in (slots, no shared buffer) with a slot of 8 + 4 * 4 */
    gh.is_incast   = 1;
    gh.hdr_len     = 8;
    gh.acks_offset = 0;
    gh.elems_offset = gh.members_offset + (4 * sizeof(uct_o2m_member_t));
    slot_data      = 1024;
    gh.max_length  = slot_data;
    gh.slot_stride = seed_align(sizeof(uct_o2m_elem_t) + slot_data);
    gh.elem_stride = UCT_O2M_LINE + (3 * gh.slot_stride);
    u32            = gh.elems_offset + (16 * gh.elem_stride);
    memset(&e, 0, sizeof(e));
    e.seq    = 1;
    e.length = 8 + 16;
    buf[0]   = 4;
    memcpy(buf + 1, &u32, 4);
    buf[5]   = 2 << 6; /* int32 elements, no shared buffer */
    memcpy(buf + 6, &gh, sizeof(gh));
    seed_write(argv[1], "group_incast_slot", buf, 6 + sizeof(gh), &e,
               sizeof(e));

    /* the same with a zcopy slot */
    e.flags  = UCT_O2M_ELEM_FLAG_ZCOPY;
    z.header_length = 8;
    z.iovcnt        = 1;
    z.iov[0].len    = 16;
    z.length        = 24;
    memcpy(buf + 6 + sizeof(gh), &e, sizeof(e));
    seed_write(argv[1], "group_incast_zcopy", buf,
               6 + sizeof(gh) + sizeof(e), &z, sizeof(z));

    /* fan-in with a shared buffer (LOCKED/ATOMIC) and a shared slot */
    gh.mode        = UCT_O2M_MODE_LOCKED;
    gh.op          = UCT_O2M_OP_SUM;
    gh.shared_size = seed_align(gh.max_length);
    gh.slot_stride = seed_align(sizeof(uct_o2m_elem_t) +
                                sizeof(uct_o2m_zdesc_t));
    gh.elem_stride = UCT_O2M_LINE + gh.shared_size + (3 * gh.slot_stride);
    u32            = gh.elems_offset + (16 * gh.elem_stride);
    e.flags        = UCT_O2M_ELEM_FLAG_SHARED;
    memcpy(buf + 1, &u32, 4);
    buf[5] = (2 << 6) | 1;
    memcpy(buf + 6, &gh, sizeof(gh));
    seed_write(argv[1], "group_incast_shared", buf, 6 + sizeof(gh), &e,
               sizeof(e));
    return 0;
}
