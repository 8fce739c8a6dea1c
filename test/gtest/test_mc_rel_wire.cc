/**
 * ucx-o2m tests: the wire format of the reliable multicast engine
 * (src/uct/mc/rel/mc_rel_wire.c): every packet type packs and parses back,
 * every field that can be wrong is dropped with its reason, PSN
 * comparisons across the 32-bit wraparound.
 */
extern "C" {
#include "mc_rel_def.h"
#include "mc_rel.h"
#include "../common/mc_rel_ep.h"
}

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

namespace {

uct_mc_rel_hdr_t make_hdr(uint8_t type)
{
    uct_mc_rel_hdr_t hdr;

    memset(&hdr, 0, sizeof(hdr));
    hdr.type     = type;
    hdr.src      = 3;
    hdr.group_id = 0x12345678;
    hdr.epoch    = 9;
    hdr.root     = 1;
    switch (type) {
    case UCT_MC_REL_PKT_DATA:
        hdr.flags       = UCT_MC_REL_FLAG_ACK_REQ;
        hdr.payload_len = 10;
        hdr.psn         = 0xfffffffe;
        hdr.aux         = 2;   /* wrapped: after psn */
        hdr.msg_len     = 30;
        hdr.offset      = 20;
        break;
    case UCT_MC_REL_PKT_PROBE:
        hdr.psn = hdr.aux = 77;
        break;
    case UCT_MC_REL_PKT_SYNC:
        hdr.psn    = 0xfffffff0;
        hdr.aux    = 5;
        hdr.bitmap = 0x8000000100000002ull; /* lagging subtrees */
        break;
    case UCT_MC_REL_PKT_ACK:
        hdr.flags = UCT_MC_REL_FLAG_JOINED | UCT_MC_REL_FLAG_WANT_SYNC;
        hdr.psn   = 1234;
        break;
    case UCT_MC_REL_PKT_NACK:
        hdr.psn    = 500;
        hdr.aux    = 4;
        hdr.bitmap = 0x8000000000000005ull;
        break;
    case UCT_MC_REL_PKT_ABORT:
        hdr.status = UCS_ERR_CONNECTION_RESET;
        break;
    }
    return hdr;
}

std::vector<uint8_t> packet(const uct_mc_rel_hdr_t &hdr)
{
    std::vector<uint8_t> buf(UCT_MC_REL_HDR_LEN + hdr.payload_len, 0xab);
    uct_mc_rel_pack(&hdr, buf.data());
    return buf;
}

/* Parse, expecting a drop for @a why */
void expect_drop(const std::vector<uint8_t> &buf, uct_mc_rel_drop_t why,
                 const char *what)
{
    uct_mc_rel_drop_t drop = UCT_MC_REL_DROP_LAST;
    uct_mc_rel_hdr_t hdr;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_mc_rel_parse(buf.data(), buf.size(), &hdr, &drop))
        << what;
    EXPECT_EQ(why, drop) << what << ": dropped for "
                         << uct_mc_rel_drop_name(drop);
}

void expect_hdr_drop(uint8_t type,
                     std::function<void(uct_mc_rel_hdr_t&)> change,
                     uct_mc_rel_drop_t why, const char *what)
{
    uct_mc_rel_hdr_t hdr = make_hdr(type);
    change(hdr);
    expect_drop(packet(hdr), why, what);
}

/* Overwrite wire bytes [off, off + len) of a good packet of @a type */
void expect_byte_drop(uint8_t type, size_t off, const void *bytes, size_t len,
                      uct_mc_rel_drop_t why, const char *what)
{
    std::vector<uint8_t> buf = packet(make_hdr(type));
    memcpy(&buf[off], bytes, len);
    expect_drop(buf, why, what);
}

} // namespace


TEST(mc_rel_wire, header_is_40_bytes)
{
    EXPECT_EQ(40u, sizeof(uct_mc_rel_wire_hdr_t));
    EXPECT_EQ((size_t)UCT_MC_REL_HDR_LEN, sizeof(uct_mc_rel_wire_hdr_t));
}

TEST(mc_rel_wire, roundtrip_every_type)
{
    for (uint8_t type = UCT_MC_REL_PKT_DATA; type < UCT_MC_REL_PKT_LAST;
         ++type) {
        uct_mc_rel_hdr_t in = make_hdr(type), out;
        uct_mc_rel_drop_t drop;
        std::vector<uint8_t> buf = packet(in);

        ASSERT_EQ(UCS_OK, uct_mc_rel_parse(buf.data(), buf.size(), &out,
                                           &drop))
            << "type " << (int)type << ": " << uct_mc_rel_drop_name(drop);
        EXPECT_EQ(in.type, out.type);
        EXPECT_EQ(in.flags, out.flags);
        EXPECT_EQ(in.src, out.src);
        EXPECT_EQ(in.group_id, out.group_id);
        EXPECT_EQ(in.epoch, out.epoch);
        EXPECT_EQ(in.root, out.root);
        EXPECT_EQ(in.payload_len, out.payload_len);
        EXPECT_EQ(in.psn, out.psn);
        EXPECT_EQ(in.msg_len, out.msg_len);
        EXPECT_EQ(in.offset, out.offset);
        EXPECT_EQ(in.bitmap, out.bitmap);
        if (type == UCT_MC_REL_PKT_ABORT) {
            EXPECT_EQ(in.status, out.status);
        } else {
            EXPECT_EQ(in.aux, out.aux);
        }
    }
}

TEST(mc_rel_wire, wire_is_little_endian)
{
    std::vector<uint8_t> buf = packet(make_hdr(UCT_MC_REL_PKT_ACK));

    EXPECT_EQ(0x52, buf[0]);  /* magic "RL" */
    EXPECT_EQ(0x4c, buf[1]);
    EXPECT_EQ(UCT_MC_REL_VERSION, buf[2]);
    EXPECT_EQ(UCT_MC_REL_PKT_ACK, buf[3]);
    EXPECT_EQ(0x78, buf[8]);  /* group id, low byte first */
    EXPECT_EQ(0x12, buf[11]);
    EXPECT_EQ(1234 & 0xff, buf[20]);
    EXPECT_EQ(1234 >> 8, buf[21]);
}

TEST(mc_rel_wire, bad_length)
{
    std::vector<uint8_t> buf = packet(make_hdr(UCT_MC_REL_PKT_DATA));

    for (size_t len = 0; len < UCT_MC_REL_HDR_LEN; ++len) {
        expect_drop(std::vector<uint8_t>(buf.begin(), buf.begin() + len),
                    UCT_MC_REL_DROP_LENGTH, "short");
    }
    expect_drop(std::vector<uint8_t>(buf.begin(), buf.end() - 1),
                UCT_MC_REL_DROP_LENGTH, "payload cut");
    buf.push_back(0);
    expect_drop(buf, UCT_MC_REL_DROP_LENGTH, "payload longer");

    /* a payload on a control packet */
    for (uint8_t type = UCT_MC_REL_PKT_PROBE; type < UCT_MC_REL_PKT_LAST;
         ++type) {
        expect_hdr_drop(type, [](uct_mc_rel_hdr_t &h) { h.payload_len = 4; },
                        UCT_MC_REL_DROP_LENGTH, "control with payload");
    }
}

TEST(mc_rel_wire, bad_magic_version_type_flags)
{
    uint8_t bad = 0;
    uint16_t flags;

    expect_byte_drop(UCT_MC_REL_PKT_DATA, 0, &bad, 1,
                     UCT_MC_REL_DROP_MAGIC, "magic");
    bad = UCT_MC_REL_VERSION + 1;
    expect_byte_drop(UCT_MC_REL_PKT_DATA, 2, &bad, 1,
                     UCT_MC_REL_DROP_MAGIC, "version");
    /* version 1: AM data one byte off alignment, another message layout */
    bad = 1;
    expect_byte_drop(UCT_MC_REL_PKT_DATA, 2, &bad, 1,
                     UCT_MC_REL_DROP_MAGIC, "version 1");
    for (unsigned t : {0u, (unsigned)UCT_MC_REL_PKT_LAST, 200u, 255u}) {
        bad = t;
        expect_byte_drop(UCT_MC_REL_PKT_ACK, 3, &bad, 1,
                         UCT_MC_REL_DROP_TYPE, "type");
    }

    /* flags of another type, and unknown bits */
    flags = UCT_MC_REL_FLAG_JOINED;
    expect_byte_drop(UCT_MC_REL_PKT_DATA, 4, &flags, 2,
                     UCT_MC_REL_DROP_TYPE, "ACK flag on DATA");
    flags = UCT_MC_REL_FLAG_REPAIR;
    expect_byte_drop(UCT_MC_REL_PKT_ACK, 4, &flags, 2,
                     UCT_MC_REL_DROP_TYPE, "DATA flag on ACK");
    for (uint8_t type = UCT_MC_REL_PKT_DATA; type < UCT_MC_REL_PKT_LAST;
         ++type) {
        flags = 0x100;
        expect_byte_drop(type, 4, &flags, 2, UCT_MC_REL_DROP_TYPE,
                         "unknown flag");
    }
    for (uint8_t type : {UCT_MC_REL_PKT_PROBE, UCT_MC_REL_PKT_SYNC,
                         UCT_MC_REL_PKT_NACK, UCT_MC_REL_PKT_ABORT}) {
        flags = UCT_MC_REL_FLAG_ACK_REQ;
        expect_byte_drop(type, 4, &flags, 2, UCT_MC_REL_DROP_TYPE,
                         "flag on a flagless type");
    }
}

TEST(mc_rel_wire, bad_fields)
{
    uint32_t one = 1;
    typedef uct_mc_rel_hdr_t H;

    for (uint8_t type = UCT_MC_REL_PKT_DATA; type < UCT_MC_REL_PKT_LAST;
         ++type) {
        expect_byte_drop(type, 36, &one, 4, UCT_MC_REL_DROP_FIELD,
                         "reserved");
    }

    /* DATA: fragment within its message, ACK_REQ on the last only, psn
     * before the sender's next */
    expect_hdr_drop(UCT_MC_REL_PKT_DATA, [](H &h) { h.offset = 31; },
                    UCT_MC_REL_DROP_FIELD, "offset beyond message");
    expect_hdr_drop(UCT_MC_REL_PKT_DATA,
                    [](H &h) { h.offset = 25; },
                    UCT_MC_REL_DROP_FIELD, "payload beyond message");
    expect_hdr_drop(UCT_MC_REL_PKT_DATA,
                    [](H &h) { h.offset = 0xfffffffa; },
                    UCT_MC_REL_DROP_FIELD, "offset wraps");
    expect_hdr_drop(UCT_MC_REL_PKT_DATA,
                    [](H &h) { h.payload_len = 0; h.offset = 30; },
                    UCT_MC_REL_DROP_FIELD, "empty fragment");
    expect_hdr_drop(UCT_MC_REL_PKT_DATA, [](H &h) { h.flags = 0; },
                    UCT_MC_REL_DROP_FIELD, "last fragment without ACK_REQ");
    expect_hdr_drop(UCT_MC_REL_PKT_DATA, [](H &h) { h.offset = 0; },
                    UCT_MC_REL_DROP_FIELD, "ACK_REQ not on the last");
    expect_hdr_drop(UCT_MC_REL_PKT_DATA, [](H &h) { h.aux = h.psn; },
                    UCT_MC_REL_DROP_FIELD, "psn not before next");
    expect_hdr_drop(UCT_MC_REL_PKT_DATA,
                    [](H &h) { h.aux = h.psn + 0x80000001u; },
                    UCT_MC_REL_DROP_FIELD, "next half the space away");

    expect_hdr_drop(UCT_MC_REL_PKT_PROBE, [](H &h) { h.aux = h.psn + 1; },
                    UCT_MC_REL_DROP_FIELD, "probe psn != aux");
    expect_hdr_drop(UCT_MC_REL_PKT_SYNC, [](H &h) { h.aux = h.psn - 1; },
                    UCT_MC_REL_DROP_FIELD, "sync acked after next");
    expect_hdr_drop(UCT_MC_REL_PKT_SYNC, [](H &h) { h.aux = h.psn; },
                    UCT_MC_REL_DROP_FIELD, "sync: a drained window lags");
    expect_hdr_drop(UCT_MC_REL_PKT_ACK, [](H &h) { h.aux = 1; },
                    UCT_MC_REL_DROP_FIELD, "ack aux");
    expect_hdr_drop(UCT_MC_REL_PKT_NACK, [](H &h) { h.bitmap = 0; },
                    UCT_MC_REL_DROP_FIELD, "nack without bits");
    expect_hdr_drop(UCT_MC_REL_PKT_NACK, [](H &h) { h.aux = 0; },
                    UCT_MC_REL_DROP_FIELD, "nack count 0");
    expect_hdr_drop(UCT_MC_REL_PKT_NACK,
                    [](H &h) { h.aux = UCT_MC_REL_MAX_MEMBERS + 1; },
                    UCT_MC_REL_DROP_FIELD, "nack count too large");
    expect_hdr_drop(UCT_MC_REL_PKT_ABORT, [](H &h) { h.psn = 1; },
                    UCT_MC_REL_DROP_FIELD, "abort psn");
    expect_hdr_drop(UCT_MC_REL_PKT_ABORT, [](H &h) { h.status = UCS_OK; },
                    UCT_MC_REL_DROP_FIELD, "abort without error");
    expect_hdr_drop(UCT_MC_REL_PKT_ABORT,
                    [](H &h) { h.status = UCS_ERR_LAST; },
                    UCT_MC_REL_DROP_FIELD, "abort status out of range");
    expect_hdr_drop(UCT_MC_REL_PKT_ABORT,
                    [](H &h) { h.status = (ucs_status_t)-0x7fffffff; },
                    UCT_MC_REL_DROP_FIELD, "abort status huge");

    /* fields that are 0 for the type */
    for (uint8_t type : {UCT_MC_REL_PKT_PROBE, UCT_MC_REL_PKT_ACK,
                         UCT_MC_REL_PKT_ABORT}) {
        expect_byte_drop(type, 28, &one, 4, UCT_MC_REL_DROP_FIELD, "w0");
        expect_byte_drop(type, 32, &one, 4, UCT_MC_REL_DROP_FIELD, "w1");
    }
}

TEST(mc_rel_wire, empty_message)
{
    uct_mc_rel_hdr_t hdr = make_hdr(UCT_MC_REL_PKT_DATA), out;
    uct_mc_rel_drop_t drop;

    hdr.payload_len = 0;
    hdr.msg_len     = 0;
    hdr.offset      = 0;
    std::vector<uint8_t> buf = packet(hdr);
    EXPECT_EQ(UCS_OK, uct_mc_rel_parse(buf.data(), buf.size(), &out, &drop));
}

TEST(mc_rel_wire, psn_compare_wraps)
{
    EXPECT_TRUE(uct_mc_rel_psn_lt(0xffffffffu, 0));
    EXPECT_TRUE(uct_mc_rel_psn_lt(0xfffffff0u, 0x10));
    EXPECT_FALSE(uct_mc_rel_psn_lt(0x10, 0xfffffff0u));
    EXPECT_FALSE(uct_mc_rel_psn_lt(5, 5));
    EXPECT_TRUE(uct_mc_rel_psn_le(5, 5));
    EXPECT_TRUE(uct_mc_rel_psn_le(0xffffffffu, 0));
    EXPECT_TRUE(uct_mc_rel_psn_lt(100, 100 + 0x7fffffffu));
}

namespace {

/* Two members (root 0, member 1) handing packets over through a queue;
 * each stream's callback argument is its rank in self[] */
struct align_pair {
    std::deque<std::pair<unsigned, std::vector<uint8_t>>> wire;
    unsigned                                            ndelivered = 0;
    unsigned                                            nmisaligned = 0;
    unsigned                                            self[2] = {0, 1};

    static ucs_status_t send(void *arg, int dest, const void *hdr,
                             const void *payload, size_t length)
    {
        unsigned rank = *(unsigned*)arg;
        std::vector<uint8_t> bytes(UCT_MC_REL_HDR_LEN + length);

        (void)dest; /* two members: the other one */
        memcpy(bytes.data(), hdr, UCT_MC_REL_HDR_LEN);
        if (length > 0) {
            memcpy(bytes.data() + UCT_MC_REL_HDR_LEN, payload, length);
        }
        container(arg)->wire.emplace_back(1 - rank, bytes);
        return UCS_OK;
    }

    static void deliver(void *arg, const void *data, size_t length)
    {
        align_pair *p = container(arg);

        (void)length;
        ++p->ndelivered;
        p->nmisaligned += ((uintptr_t)data % 8) != 0;
    }

    static align_pair *container(void *arg)
    {
        unsigned rank = *(unsigned*)arg;
        return (align_pair*)((char*)((unsigned*)arg - rank) -
                             offsetof(align_pair, self));
    }
};

} // namespace

/* Where the data lands.  On the wire: the transports' 8-byte headers, the
 * engine's 40 bytes and the transports' 8-byte AM header
 * (UCT_MC_REL_EP_AM_HDR_LEN) put the AM data at a multiple of 8 in the
 * datagram.  In memory: the engine hands every message over from 8-byte
 * aligned memory whatever its MTU (one-packet messages from their slot in
 * the window, larger ones from the reassembly buffer), so the AM data
 * after the AM header is aligned for the AM handler (the AM id byte alone
 * left it one byte off) */
TEST(mc_rel_wire, payload_aligned)
{
    EXPECT_EQ(0u, UCT_MC_REL_HDR_LEN % 8);
    EXPECT_EQ(0u, UCT_MC_REL_EP_AM_HDR_LEN % 8);

    for (size_t mtu : {8, 9, 13, 101, 1423}) {
        uct_mc_rel_stream_t *streams[2] = {NULL, NULL};
        uct_mc_rel_config_t config;
        uct_mc_rel_params_t params;
        uct_mc_rel_ops_t ops;
        align_pair pair;
        uct_mc_rel_hdr_t hdr;
        uct_mc_rel_drop_t drop;
        std::vector<size_t> sizes = {0, 1, mtu - 1, mtu, mtu + 1, 3 * mtu + 5};
        std::vector<uint8_t> msg(4 * mtu, 0x5a);
        uint64_t now = 0;
        unsigned sent = 0;

        for (unsigned i = 0; i < 20; ++i) {
            sizes.push_back(1 + i % mtu); /* one-packet messages: every
                                             slot of the window */
        }

        uct_mc_rel_config_default(&config);
        config.window  = 16;
        config.mtu     = mtu;
        config.max_msg = 4 * mtu;
        memset(&ops, 0, sizeof(ops));
        ops.send    = align_pair::send;
        ops.deliver = align_pair::deliver;
        for (unsigned r = 0; r < 2; ++r) {
            memset(&params, 0, sizeof(params));
            params.group_id    = 0x5151;
            params.epoch       = 1;
            params.num_members = 2;
            params.my_rank     = r;
            params.root        = 0;
            params.init_psn    = 0xfffffffa;
            params.config      = &config;
            params.ops         = &ops;
            params.arg         = &pair.self[r];
            ASSERT_EQ(UCS_OK, uct_mc_rel_stream_create(&params, now,
                                                       &streams[r]));
        }

        for (unsigned step = 0; (step < 100000) &&
                                (pair.ndelivered < sizes.size()); ++step) {
            now += 1000;
            while ((sent < sizes.size()) &&
                   (uct_mc_rel_send(streams[0], msg.data(), sizes[sent],
                                    now) == UCS_OK)) {
                ++sent;
            }
            uct_mc_rel_progress(streams[0], now);
            uct_mc_rel_progress(streams[1], now);
            while (!pair.wire.empty()) {
                std::pair<unsigned, std::vector<uint8_t>> pkt =
                    pair.wire.front();
                pair.wire.pop_front();
                ASSERT_EQ(UCS_OK, uct_mc_rel_parse(pkt.second.data(),
                                                   pkt.second.size(), &hdr,
                                                   &drop));
                uct_mc_rel_recv(streams[pkt.first], pkt.second.data(),
                                pkt.second.size(), now);
            }
        }
        EXPECT_EQ(sizes.size(), pair.ndelivered) << "mtu " << mtu;
        EXPECT_EQ(0u, pair.nmisaligned) << "mtu " << mtu;
        uct_mc_rel_stream_destroy(streams[0]);
        uct_mc_rel_stream_destroy(streams[1]);
    }
}

/* The loss hook's decision (config test_drop) */
TEST(mc_rel_wire, test_drop)
{
    unsigned dropped = 0, same = 0;

    for (uint32_t i = 0; i < 10000; ++i) {
        EXPECT_FALSE(uct_mc_rel_test_drop(1, i, 0));
        EXPECT_TRUE(uct_mc_rel_test_drop(1, i, 1000));
        /* The same decision on every call */
        EXPECT_EQ(uct_mc_rel_test_drop(2, i, 100),
                  uct_mc_rel_test_drop(2, i, 100));
        dropped += uct_mc_rel_test_drop(2, i + 0xfffff000u, 100);
        /* Members drop different packets: a parent can repair its child */
        same    += uct_mc_rel_test_drop(1, i, 100) &&
                   uct_mc_rel_test_drop(2, i, 100);
    }
    /* About 10 %, also across the index wrap */
    EXPECT_GT(dropped, 800u);
    EXPECT_LT(dropped, 1200u);
    EXPECT_LT(same, 300u);
}
