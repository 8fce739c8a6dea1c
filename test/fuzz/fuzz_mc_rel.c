/**
 * ucx-o2m: libFuzzer target for the packets of the reliable multicast
 * engine (src/uct/mc/rel/).
 *
 * The first input byte picks a mode (modulo 3):
 *  - 0: the bytes after it are one packet for uct_mc_rel_parse.  An
 *    accepted packet must have exactly header + payload_len bytes (its
 *    payload is touched, ASan checks the bounds) and must pack back to the
 *    same 40 header bytes (nothing accepted that the engine would not
 *    write).
 *  - 1: the bytes after it are a sequence of packets for the streams of a
 *    5-member group (root 0, radix 2, window 16, mtu 65): each item names
 *    a member, a time step and either raw bytes or header fields that are
 *    packed with the stream's group, epoch and root (so that the engine's
 *    state machine, not only the parser, is explored), then the member
 *    progresses.  Every packet the engine sends must parse, its payload
 *    must fit the MTU, and every delivered message must fit max_msg and
 *    come 8-byte aligned (the MTU is odd: the engine's slots keep the data
 *    aligned anyway).
 *  - 2: the same group over an adversarial network: the bytes are actions
 *    (deliver, drop or duplicate the packet in flight that the next byte
 *    picks, let time pass, the root sends its next message), so that the
 *    fuzzer chooses every loss, duplicate and reordering.  Every message a
 *    member delivers must be the next one the root sent, byte for byte.
 * Built and run by test/fuzz/fuzz.sh.  Its seed corpus (corpus_mc_rel/,
 * `fuzz.sh BUILD --seeds mc_rel`) comes from this file built with
 * FUZZ_MC_REL_SEEDS: mode 2 runs a script without faults and with some
 * (join, messages, losses, a duplicate, timeouts), and every distinct kind
 * of packet the engine sent on the way is also a mode-0 seed.
 */
#include "mc_rel.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MEMBERS 5
#define FUZZ_MTU     65  /* odd: deliveries must be aligned anyway */
#define FUZZ_MAX_MSG 512

/* Keeps the compiler from dropping the touches */
static volatile uint8_t fuzz_sink;

static void fuzz_touch(const void *ptr, size_t length)
{
    const volatile uint8_t *p = ptr;
    size_t i;

    for (i = 0; i < length; ++i) {
        fuzz_sink ^= p[i];
    }
}

static void fuzz_parse(const uint8_t *data, size_t size)
{
    uint8_t repacked[UCT_MC_REL_HDR_LEN];
    uct_mc_rel_drop_t drop;
    uct_mc_rel_hdr_t hdr;

    if (uct_mc_rel_parse(data, size, &hdr, &drop) != UCS_OK) {
        if ((unsigned)drop >= UCT_MC_REL_DROP_LAST) {
            abort();
        }
        return;
    }
    if (size != UCT_MC_REL_HDR_LEN + (size_t)hdr.payload_len) {
        abort();
    }
    fuzz_touch(data + UCT_MC_REL_HDR_LEN, hdr.payload_len);
    uct_mc_rel_pack(&hdr, repacked);
    if (memcmp(repacked, data, UCT_MC_REL_HDR_LEN) != 0) {
        abort();
    }
}

static ucs_status_t fuzz_send(void *arg, int dest, const void *hdr,
                              const void *payload, size_t length)
{
    uint8_t pkt[UCT_MC_REL_HDR_LEN + FUZZ_MTU];
    uct_mc_rel_drop_t drop;
    uct_mc_rel_hdr_t parsed;

    if ((length > FUZZ_MTU) ||
        ((dest != UCT_MC_REL_DEST_MCAST) &&
         ((dest < 0) || (dest >= FUZZ_MEMBERS)))) {
        abort();
    }
    memcpy(pkt, hdr, UCT_MC_REL_HDR_LEN);
    if (length > 0) {
        memcpy(pkt + UCT_MC_REL_HDR_LEN, payload, length);
    }
    if (uct_mc_rel_parse(pkt, UCT_MC_REL_HDR_LEN + length, &parsed,
                         &drop) != UCS_OK) {
        abort(); /* the engine wrote a packet its own parser rejects */
    }
    return UCS_OK;
}

static void fuzz_deliver(void *arg, const void *data, size_t length)
{
    if ((length > FUZZ_MAX_MSG) || ((uintptr_t)data % 8 != 0)) {
        abort();
    }
    fuzz_touch(data, length);
}

static size_t fuzz_take(void *dst, size_t dst_size, const uint8_t **data,
                        size_t *size)
{
    size_t n = (*size < dst_size) ? *size : dst_size;

    memset(dst, 0, dst_size);
    memcpy(dst, *data, n);
    *data += n;
    *size -= n;
    return n;
}

/*
 * The streams of a group of FUZZ_MEMBERS rooted at 0 (radix 2, FUZZ_MTU,
 * FUZZ_MAX_MSG, @a window packets, @a peer_timeout ns or the default when
 * 0): group @a group_id, @a epoch, the root's first PSN @a init_psn.
 * Stream r calls @a send and @a deliver with @a args[r] (NULL when @a args
 * is NULL).  @a config and @a ops are filled here; they live as long as
 * the streams.
 */
static void fuzz_group_create(uint32_t group_id, uint32_t epoch,
                              uint32_t init_psn, unsigned window,
                              uint64_t peer_timeout,
                              ucs_status_t (*send)(void*, int, const void*,
                                                   const void*, size_t),
                              void (*deliver)(void*, const void*, size_t),
                              void **args, uint64_t now,
                              uct_mc_rel_config_t *config,
                              uct_mc_rel_ops_t *ops,
                              uct_mc_rel_stream_t **streams)
{
    uct_mc_rel_params_t params;
    unsigned r;

    uct_mc_rel_config_default(config);
    config->window  = window;
    config->radix   = 2;
    config->mtu     = FUZZ_MTU;
    config->max_msg = FUZZ_MAX_MSG;
    if (peer_timeout != 0) {
        config->peer_timeout = peer_timeout;
    }

    memset(ops, 0, sizeof(*ops));
    ops->send    = send;
    ops->deliver = deliver;

    memset(&params, 0, sizeof(params));
    params.group_id    = group_id;
    params.epoch       = epoch;
    params.num_members = FUZZ_MEMBERS;
    params.root        = 0;
    params.init_psn    = init_psn;
    params.config      = config;
    params.ops         = ops;
    for (r = 0; r < FUZZ_MEMBERS; ++r) {
        params.my_rank = r;
        params.arg     = (args != NULL) ? args[r] : NULL;
        if (uct_mc_rel_stream_create(&params, now, &streams[r]) != UCS_OK) {
            abort();
        }
    }
}

/* One item of the packet sequence */
struct fuzz_item {
    uint8_t  member;
    uint8_t  dt;       /* time step, in units of 2 us */
    uint8_t  raw;      /* odd: raw bytes follow; even: fields below */
    uint8_t  type;
    uint16_t flags;
    uint8_t  src;
    uint8_t  len;      /* payload (fields) or raw length */
    uint32_t psn_off;  /* psn = 1000 + psn_off (near the start) */
    uint32_t aux_off;
    uint32_t w0;
    uint32_t w1;
} __attribute__((packed));

static void fuzz_streams(const uint8_t *data, size_t size)
{
    uct_mc_rel_stream_t *streams[FUZZ_MEMBERS] = {NULL};
    uint8_t pkt[UCT_MC_REL_HDR_LEN + 255];
    uct_mc_rel_config_t config;
    uct_mc_rel_ops_t ops;
    struct fuzz_item item;
    uct_mc_rel_hdr_t hdr;
    uct_mc_rel_stream_t *s;
    uint64_t now = 1000000;
    uint8_t msg[FUZZ_MAX_MSG];
    size_t len;
    unsigned i;

    fuzz_group_create(7, 3, 1000, 16, 50000000, fuzz_send, fuzz_deliver,
                      NULL, now, &config, &ops, streams);

    memset(msg, 0x5a, sizeof(msg));
    while (size > 0) {
        fuzz_take(&item, sizeof(item), &data, &size);
        now += (uint64_t)item.dt * 2000;
        s    = streams[item.member % FUZZ_MEMBERS];

        if (item.raw & 1) {
            len = fuzz_take(pkt, item.len, &data, &size);
            uct_mc_rel_recv(s, pkt, len, now);
        } else if (item.raw & 2) {
            /* the root sends a message of up to 2 windows */
            uct_mc_rel_send(streams[0], msg, (item.psn_off % 4) *
                            (item.len + 1), now);
        } else {
            memset(&hdr, 0, sizeof(hdr));
            hdr.type        = item.type % (UCT_MC_REL_PKT_LAST + 1);
            hdr.flags       = item.flags;
            hdr.src         = item.src % (FUZZ_MEMBERS + 1);
            hdr.group_id    = 7;
            hdr.epoch       = 3;
            hdr.root        = 0;
            hdr.payload_len = item.len;
            hdr.psn         = 1000 + item.psn_off;
            hdr.aux         = 1000 + item.aux_off;
            hdr.msg_len     = item.w0;
            hdr.offset      = item.w1;
            hdr.bitmap      = ((uint64_t)item.w1 << 32) | item.w0;
            hdr.status      = -(int)(item.aux_off % 120);
            if (hdr.type == UCT_MC_REL_PKT_NACK) {
                hdr.aux = item.aux_off;
            }
            uct_mc_rel_pack(&hdr, pkt);
            len = fuzz_take(pkt + UCT_MC_REL_HDR_LEN, item.len, &data, &size);
            if (item.raw & 4) {
                /* with an arrival time stamp, any (the engine bounds it) */
                uct_mc_rel_recv_at(s, pkt, UCT_MC_REL_HDR_LEN + len, now,
                                   now - (int64_t)(int8_t)item.flags * 1000);
            } else {
                uct_mc_rel_recv(s, pkt, UCT_MC_REL_HDR_LEN + len, now);
            }
        }

        for (i = 0; i < FUZZ_MEMBERS; ++i) {
            if (uct_mc_rel_next_deadline(streams[i]) <= now) {
                uct_mc_rel_progress(streams[i], now);
            }
        }
    }

    for (i = 0; i < FUZZ_MEMBERS; ++i) {
        uct_mc_rel_stream_destroy(streams[i]);
    }
}

/*
 * Adversarial network (mode 2)
 */
#define NET_MAX_INFLIGHT 512
#define NET_MAX_MSGS     64

typedef struct {
    unsigned dst;
    size_t   length;
    uint8_t  bytes[UCT_MC_REL_HDR_LEN + FUZZ_MTU];
} net_pkt_t;

typedef struct {
    unsigned rank;
    unsigned ndelivered;
} net_member_t;

static net_pkt_t    net_inflight[NET_MAX_INFLIGHT];
static size_t       net_count;
static unsigned     net_sent_msgs;
static net_member_t net_members[FUZZ_MEMBERS];

static size_t net_msg_len(unsigned k)
{
    return (k * 7) % (FUZZ_MAX_MSG / 4 + 1);
}

static uint8_t net_msg_byte(unsigned k, size_t i)
{
    return (uint8_t)(k * 31 + i * 7 + 1);
}

static void net_push(unsigned dst, const uint8_t *pkt, size_t length)
{
    if (net_count == NET_MAX_INFLIGHT) {
        return; /* full: lost */
    }
    net_inflight[net_count].dst    = dst;
    net_inflight[net_count].length = length;
    memcpy(net_inflight[net_count].bytes, pkt, length);
    ++net_count;
}

#ifdef FUZZ_MC_REL_SEEDS
static void seed_packet(const uint8_t *pkt, size_t length);
#endif

static ucs_status_t net_send(void *arg, int dest, const void *hdr,
                             const void *payload, size_t length)
{
    net_member_t *m = arg;
    uint8_t pkt[UCT_MC_REL_HDR_LEN + FUZZ_MTU];
    unsigned r;

    fuzz_send(arg, dest, hdr, payload, length); /* the checks */
    memcpy(pkt, hdr, UCT_MC_REL_HDR_LEN);
    if (length > 0) {
        memcpy(pkt + UCT_MC_REL_HDR_LEN, payload, length);
    }
#ifdef FUZZ_MC_REL_SEEDS
    seed_packet(pkt, UCT_MC_REL_HDR_LEN + length);
#endif
    for (r = 0; r < FUZZ_MEMBERS; ++r) {
        if ((r != m->rank) &&
            ((dest == UCT_MC_REL_DEST_MCAST) || (dest == (int)r))) {
            net_push(r, pkt, UCT_MC_REL_HDR_LEN + length);
        }
    }
    return UCS_OK;
}

static void net_deliver(void *arg, const void *data, size_t length)
{
    net_member_t *m = arg;
    unsigned k      = m->ndelivered++;
    const uint8_t *p = data;
    size_t i;

    /* exactly once, in order, the root's bytes, aligned */
    if ((m->rank == 0) || (k >= net_sent_msgs) ||
        (length != net_msg_len(k)) || ((uintptr_t)data % 8 != 0)) {
        abort();
    }
    for (i = 0; i < length; ++i) {
        if (p[i] != net_msg_byte(k, i)) {
            abort();
        }
    }
}

static void fuzz_network(const uint8_t *data, size_t size)
{
    uct_mc_rel_stream_t *streams[FUZZ_MEMBERS] = {NULL};
    uint8_t msg[FUZZ_MAX_MSG];
    void *args[FUZZ_MEMBERS];
    uct_mc_rel_config_t config;
    uct_mc_rel_ops_t ops;
    uint64_t now = 1000000;
    net_pkt_t pkt;
    size_t idx, i;
    unsigned r, k;
    uint8_t op;

    net_count     = 0;
    net_sent_msgs = 0;
    for (r = 0; r < FUZZ_MEMBERS; ++r) {
        net_members[r].rank       = r;
        net_members[r].ndelivered = 0;
        args[r]                   = &net_members[r];
    }
    fuzz_group_create(9, 1, 0xfffffff0u, 8, 0, net_send, net_deliver, args,
                      now, &config, &ops, streams);

    while (size >= 2) {
        op   = data[0];
        idx  = data[1];
        data += 2;
        size -= 2;

        switch (op % 8) {
        case 0: case 1: case 2: case 3: /* deliver one */
            if (net_count == 0) {
                break;
            }
            idx = (idx + (size_t)op * 256) % net_count;
            pkt = net_inflight[idx];
            net_inflight[idx] = net_inflight[--net_count];
            if (op % 8 == 3) {
                /* it waited in a socket (a stamp says when it came):
                 * whatever the order, delivery stays exact */
                uct_mc_rel_recv_at(streams[pkt.dst], pkt.bytes, pkt.length,
                                   now, now - (uint64_t)op * 2000);
            } else {
                uct_mc_rel_recv(streams[pkt.dst], pkt.bytes, pkt.length,
                                now);
            }
            break;
        case 4: /* lose one */
            if (net_count > 0) {
                idx %= net_count;
                net_inflight[idx] = net_inflight[--net_count];
            }
            break;
        case 5: /* duplicate one */
            if (net_count > 0) {
                pkt = net_inflight[idx % net_count];
                net_push(pkt.dst, pkt.bytes, pkt.length);
            }
            break;
        case 6: /* time passes */
            now += (uint64_t)(idx + 1) * 5000;
            for (r = 0; r < FUZZ_MEMBERS; ++r) {
                if (uct_mc_rel_next_deadline(streams[r]) <= now) {
                    uct_mc_rel_progress(streams[r], now);
                }
            }
            break;
        default: /* the root sends */
            k = net_sent_msgs;
            if (k == NET_MAX_MSGS) {
                break;
            }
            for (i = 0; i < net_msg_len(k); ++i) {
                msg[i] = net_msg_byte(k, i);
            }
            /* counted before: delivery may happen inside the call */
            ++net_sent_msgs;
            if (uct_mc_rel_send(streams[0], msg, net_msg_len(k), now) !=
                UCS_OK) {
                --net_sent_msgs;
            }
            break;
        }
    }

    for (r = 0; r < FUZZ_MEMBERS; ++r) {
        uct_mc_rel_stream_destroy(streams[r]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    switch (data[0] % 3) {
    case 0:
        fuzz_parse(data + 1, size - 1);
        break;
    case 1:
        fuzz_streams(data + 1, size - 1);
        break;
    default:
        fuzz_network(data + 1, size - 1);
        break;
    }
    return 0;
}

#ifdef FUZZ_MC_REL_SEEDS
#include <stdio.h>

static const char *seed_dir;
static unsigned seed_kinds[256]; /* packets written per (type, flags) */

static void seed_write(const char *name, uint8_t mode, const uint8_t *data,
                       size_t length)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", seed_dir, name);
    f = fopen(path, "wb");
    if ((f == NULL) || (fwrite(&mode, 1, 1, f) != 1) ||
        (fwrite(data, 1, length, f) != length) || (fclose(f) != 0)) {
        perror(path);
        exit(1);
    }
}

/* Two of each kind of packet (type and flags) the engine sent */
static void seed_packet(const uint8_t *pkt, size_t length)
{
    uct_mc_rel_drop_t drop;
    uct_mc_rel_hdr_t hdr;
    char name[64];
    unsigned kind;

    if (uct_mc_rel_parse(pkt, length, &hdr, &drop) != UCS_OK) {
        abort();
    }
    kind = (hdr.type * 32u + hdr.flags) % 256u;
    if (seed_kinds[kind]++ >= 2) {
        return;
    }
    snprintf(name, sizeof(name), "pkt-type%u-flags%x-%u", hdr.type,
             hdr.flags, seed_kinds[kind]);
    seed_write(name, 0, pkt, length);
}

/* A network script (mode 2): @a rounds of the root sending, everything
 * delivered, time passing; with @a faults a loss, a duplicate and a late
 * stamp every few messages */
static size_t seed_script(uint8_t *buf, size_t max, unsigned rounds,
                          int faults)
{
    size_t n = 0;
    unsigned k, i;

#define SEED_OP(_op, _idx) \
    do { \
        if (n + 2 <= max) { \
            buf[n++] = (_op); \
            buf[n++] = (_idx); \
        } \
    } while (0)
    for (i = 0; i < 3; ++i) { /* the join: probes, answers */
        SEED_OP(6, 0);
        for (k = 0; k < 12; ++k) {
            SEED_OP(0, 0);
        }
    }
    for (k = 0; k < rounds; ++k) {
        SEED_OP(7, 0);
        if (faults && (k % 3 == 1)) {
            SEED_OP(4, k);
        }
        if (faults && (k % 4 == 2)) {
            SEED_OP(5, 0);
            SEED_OP(3, 1);
        }
        for (i = 0; i < 10; ++i) {
            SEED_OP(0, i);
        }
        SEED_OP(6, faults ? 3 : 0);
        for (i = 0; i < 10; ++i) {
            SEED_OP(1, 0);
        }
    }
#undef SEED_OP
    return n;
}

int main(int argc, char **argv)
{
    uint8_t script[4096];
    size_t n;

    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    seed_dir = argv[1];

    n = seed_script(script, sizeof(script), 12, 0);
    seed_write("net-clean", 2, script, n);
    fuzz_network(script, n);
    n = seed_script(script, sizeof(script), 20, 1);
    seed_write("net-faults", 2, script, n);
    fuzz_network(script, n);
    return 0;
}
#endif
