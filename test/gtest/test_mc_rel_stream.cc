/**
 * ucx-o2m tests: one stream of the reliable multicast engine at a time,
 * packets handed over by the test: parameter checks, the join, window
 * limits, and every header field that a stream checks (group, root, epoch,
 * sender rank and tree role, PSN window, MTU, message size, state): a bad
 * packet is dropped and counted under its reason and changes nothing.
 */
#include "common/log_capture.h"

extern "C" {
#include "mc_rel.h"
#include <ucs/debug/log_def.h>
}

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

namespace {

const uint32_t GROUP = 0x777;
const uint32_t EPOCH = 4;
const uint32_t PSN0  = 0xfffffffc; /* wraps after 4 packets */

struct sent_pkt {
    int                  dest;
    std::vector<uint8_t> bytes;
    uct_mc_rel_hdr_t     hdr;
};

struct endpoint {
    uct_mc_rel_stream_t               *stream = NULL;
    std::vector<sent_pkt>             sent;
    std::vector<std::vector<uint8_t>> delivered;
    ucs_status_t                      failed = UCS_OK;
};

ucs_status_t cb_send(void *arg, int dest, const void *hdr,
                     const void *payload, size_t length)
{
    endpoint *ep = (endpoint*)arg;
    sent_pkt pkt;
    uct_mc_rel_drop_t drop;

    pkt.dest = dest;
    pkt.bytes.resize(UCT_MC_REL_HDR_LEN + length);
    memcpy(pkt.bytes.data(), hdr, UCT_MC_REL_HDR_LEN);
    if (length > 0) {
        memcpy(pkt.bytes.data() + UCT_MC_REL_HDR_LEN, payload, length);
    }
    EXPECT_EQ(UCS_OK, uct_mc_rel_parse(pkt.bytes.data(), pkt.bytes.size(),
                                       &pkt.hdr, &drop));
    ep->sent.push_back(pkt);
    return UCS_OK;
}

void cb_deliver(void *arg, const void *data, size_t length)
{
    endpoint *ep = (endpoint*)arg;
    ep->delivered.emplace_back((const uint8_t*)data,
                               (const uint8_t*)data + length);
}

void cb_failed(void *arg, ucs_status_t status)
{
    ((endpoint*)arg)->failed = status;
}

/* Three members in a chain (radix 1): root 0 -> 1 -> 2 */
class mc_rel_stream : public ::testing::Test {
protected:
    void SetUp() override
    {
        uct_mc_rel_config_default(&m_config);
        m_config.window  = 8;
        m_config.radix   = 1;
        m_config.mtu     = 16;
        m_config.max_msg = 100;

        memset(&m_ops, 0, sizeof(m_ops));
        m_ops.send    = cb_send;
        m_ops.deliver = cb_deliver;
        m_ops.failed  = cb_failed;
        for (unsigned r = 0; r < 3; ++r) {
            ASSERT_EQ(UCS_OK, create(r, &m_ep[r].stream, &m_ep[r]));
        }
    }

    void TearDown() override
    {
        for (endpoint &ep : m_ep) {
            if (ep.stream != NULL) {
                uct_mc_rel_stream_destroy(ep.stream);
            }
        }
    }

    ucs_status_t create(unsigned rank, uct_mc_rel_stream_t **stream_p,
                        endpoint *ep, unsigned size = 3)
    {
        uct_mc_rel_params_t params;

        memset(&params, 0, sizeof(params));
        params.group_id    = GROUP;
        params.epoch       = EPOCH;
        params.num_members = size;
        params.my_rank     = rank;
        params.root        = 0;
        params.init_psn    = PSN0;
        params.config      = &m_config;
        params.ops         = &m_ops;
        params.arg         = ep;
        return uct_mc_rel_stream_create(&params, m_now, stream_p);
    }

    /* Hand over everything sent so far (multicast to all others) until
     * nothing moves; as a transport does, progress the streams whose
     * deadline has come (an ACK is decided at the progress after the
     * packets) */
    void pump()
    {
        bool moved = true;

        while (moved) {
            moved = false;
            for (unsigned r = 0; r < 3; ++r) {
                if ((m_ep[r].stream != NULL) &&
                    (uct_mc_rel_next_deadline(m_ep[r].stream) <= m_now)) {
                    uct_mc_rel_progress(m_ep[r].stream, m_now);
                }
            }
            for (unsigned r = 0; r < 3; ++r) {
                std::vector<sent_pkt> out;
                out.swap(m_ep[r].sent);
                for (const sent_pkt &p : out) {
                    moved = true;
                    for (unsigned d = 0; d < 3; ++d) {
                        if ((d != r) &&
                            ((p.dest == UCT_MC_REL_DEST_MCAST) ||
                             (p.dest == (int)d))) {
                            uct_mc_rel_recv(m_ep[d].stream, p.bytes.data(),
                                            p.bytes.size(), m_now);
                        }
                    }
                }
            }
        }
    }

    void join()
    {
        EXPECT_EQ(UCS_INPROGRESS, uct_mc_rel_status(m_ep[0].stream));
        EXPECT_EQ(m_now, uct_mc_rel_next_deadline(m_ep[0].stream));
        uct_mc_rel_progress(m_ep[0].stream, m_now); /* the probe */
        pump();
        ASSERT_EQ(UCS_OK, uct_mc_rel_status(m_ep[0].stream));
    }

    uct_mc_rel_stats_t stats(unsigned r)
    {
        uct_mc_rel_stats_t st;
        uct_mc_rel_stats(m_ep[r].stream, &st);
        return st;
    }

    uct_mc_rel_hdr_t hdr(uint8_t type, unsigned src)
    {
        uct_mc_rel_hdr_t h;

        memset(&h, 0, sizeof(h));
        h.type     = type;
        h.src      = src;
        h.group_id = GROUP;
        h.epoch    = EPOCH;
        h.root     = 0;
        return h;
    }

    /* A good DATA packet from the root: a whole message of @a len bytes */
    uct_mc_rel_hdr_t data_hdr(uint32_t psn, uint16_t len)
    {
        uct_mc_rel_hdr_t h = hdr(UCT_MC_REL_PKT_DATA, 0);

        h.flags       = UCT_MC_REL_FLAG_ACK_REQ;
        h.psn         = psn;
        h.aux         = psn + 1;
        h.payload_len = len;
        h.msg_len     = len;
        return h;
    }

    /* @a h (and payload_len bytes of 0x3c) received by @a stream */
    void recv_on(uct_mc_rel_stream_t *stream, const uct_mc_rel_hdr_t &h)
    {
        std::vector<uint8_t> buf(UCT_MC_REL_HDR_LEN + h.payload_len, 0x3c);
        uct_mc_rel_pack(&h, buf.data());
        uct_mc_rel_recv(stream, buf.data(), buf.size(), m_now);
    }

    void recv(unsigned r, const uct_mc_rel_hdr_t &h)
    {
        recv_on(m_ep[r].stream, h);
    }

    /*
     * The root of a group of @a size (radix and thresholds of m_config),
     * joined by every other member, which has sent @a msg; what it sent so
     * far is cleared from @a ep
     */
    void root_sent(unsigned size, const std::vector<uint8_t> &msg,
                   uct_mc_rel_stream_t **root, endpoint *ep)
    {
        uct_mc_rel_hdr_t h;

        ASSERT_EQ(UCS_OK, create(0, root, ep, size));
        uct_mc_rel_progress(*root, m_now);               /* probe */
        for (unsigned c = 1; c < size; ++c) {
            h = hdr(UCT_MC_REL_PKT_ACK, c);
            h.flags = UCT_MC_REL_FLAG_JOINED;
            h.psn   = PSN0;
            recv_on(*root, h);
        }
        ASSERT_EQ(UCS_OK, uct_mc_rel_status(*root));
        ASSERT_EQ(UCS_OK, uct_mc_rel_send(*root, msg.data(), msg.size(),
                                          m_now));
        ep->sent.clear();
    }

    /* A NACK from @a src to @a root: @a count members miss the PSNs of
     * @a bitmap from @a psn */
    void nack(uct_mc_rel_stream_t *root, unsigned src, uint32_t psn,
              uint32_t count, uint64_t bitmap)
    {
        uct_mc_rel_hdr_t h = hdr(UCT_MC_REL_PKT_NACK, src);

        h.psn    = psn;
        h.aux    = count;
        h.bitmap = bitmap;
        recv_on(root, h);
    }

    /* @a h sent to member @a r is dropped for @a why, and only that */
    void expect_drop(unsigned r, const uct_mc_rel_hdr_t &h,
                     uct_mc_rel_drop_t why, const char *what)
    {
        uct_mc_rel_stats_t before = stats(r), after;

        recv(r, h);
        after = stats(r);
        for (int i = 0; i < UCT_MC_REL_DROP_LAST; ++i) {
            EXPECT_EQ(before.drop[i] + (i == why), after.drop[i])
                << what << ": reason " << uct_mc_rel_drop_name(
                                                  (uct_mc_rel_drop_t)i);
        }
        EXPECT_EQ(before.rx_data, after.rx_data) << what;
        EXPECT_EQ(before.rx_msgs, after.rx_msgs) << what;
        EXPECT_EQ(UCS_OK, m_ep[r].failed) << what;
    }

    uct_mc_rel_config_t m_config;
    uct_mc_rel_ops_t    m_ops;
    endpoint            m_ep[3];
    uint64_t            m_now = 1000000;
};

} // namespace


TEST_F(mc_rel_stream, bad_params)
{
    uct_mc_rel_stream_t *s;
    endpoint ep;

    /* Expected UCX errors (bad parameters) are counted, not printed */
    o2m_test::scoped_log_capture log;

    m_config.window = 12;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(1, &s, &ep));
    m_config.window = 1;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(1, &s, &ep));
    m_config.window = 65536;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(1, &s, &ep));
    m_config.window = 8;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(3, &s, &ep));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(0, &s, &ep, 1));
    m_config.radix = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(1, &s, &ep));
    m_config.radix = 1;
    m_config.mtu   = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(1, &s, &ep));
    m_config.mtu     = 16;
    m_config.rto_max = m_config.rto_min - 1;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(1, &s, &ep));
    m_config.rto_max = 3601ull * 1000000000ull;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(1, &s, &ep));
    m_config.rto_max       = 1000000;
    m_config.reorder_slack = 1000001;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(1, &s, &ep));
    m_config.reorder_slack = 0;
    m_config.max_msg       = 8 * 16 + 1; /* cannot fit the window */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, create(1, &s, &ep));
    EXPECT_EQ(11u, log.lines().size()) << "one log line per bad parameter "
                                          "set:\n" << log.all();
}

TEST_F(mc_rel_stream, join_then_messages_across_wraparound)
{
    std::vector<uint8_t> msg(40);

    /* queued during the join, sent when it ends */
    for (size_t i = 0; i < msg.size(); ++i) {
        msg[i] = (uint8_t)(i * 7);
    }
    ASSERT_EQ(UCS_OK, uct_mc_rel_send(m_ep[0].stream, msg.data(), msg.size(),
                                      m_now));
    EXPECT_TRUE(m_ep[0].sent.empty()) << "data before the join";
    join();
    EXPECT_EQ(UCS_OK, uct_mc_rel_flush(m_ep[0].stream));

    /* 3 fragments each: the PSNs wrap at the second message */
    for (int k = 0; k < 4; ++k) {
        ASSERT_EQ(UCS_OK, uct_mc_rel_send(m_ep[0].stream, msg.data(),
                                          msg.size(), m_now));
        pump();
    }
    for (unsigned r = 1; r < 3; ++r) {
        ASSERT_EQ(5u, m_ep[r].delivered.size());
        for (const std::vector<uint8_t> &d : m_ep[r].delivered) {
            EXPECT_EQ(msg, d);
        }
        EXPECT_EQ(UCS_OK, uct_mc_rel_flush(m_ep[r].stream));
    }
    EXPECT_EQ(UCS_OK, uct_mc_rel_flush(m_ep[0].stream));
    EXPECT_EQ(8u, uct_mc_rel_tx_space(m_ep[0].stream));
    /* idle: no timer anywhere */
    for (unsigned r = 0; r < 3; ++r) {
        EXPECT_EQ(UCT_MC_REL_TIME_INF,
                  uct_mc_rel_next_deadline(m_ep[r].stream)) << r;
    }
}

/* ACKs on demand: a message of one packet (less than a quarter of the
 * window of 8) is not acknowledged on its own, nor when the user stops
 * waiting; the root's SYNC after an RTO of silence asks, and member 1
 * passes member 2's answer up as soon as it comes (one SYNC drains the
 * window).  A member that leaves sends its final ACK unasked, once. */
TEST_F(mc_rel_stream, acks_on_demand)
{
    std::vector<uint8_t> msg(10, 0x5a);
    uct_mc_rel_stats_t before[3];
    uint64_t deadline;

    join();
    for (unsigned r = 0; r < 3; ++r) {
        before[r] = stats(r);
    }

    ASSERT_EQ(UCS_OK, uct_mc_rel_send(m_ep[0].stream, msg.data(), msg.size(),
                                      m_now));
    uct_mc_rel_expect(m_ep[1].stream, 1, m_now);
    pump();
    uct_mc_rel_expect(m_ep[1].stream, 0, m_now);
    pump();
    for (unsigned r = 1; r < 3; ++r) {
        ASSERT_EQ(1u, m_ep[r].delivered.size());
        EXPECT_EQ(before[r].tx_ack, stats(r).tx_ack) << r;
    }
    EXPECT_EQ(UCS_INPROGRESS, uct_mc_rel_flush(m_ep[0].stream));

    /* the root asks after its RTO of silence */
    deadline = uct_mc_rel_next_deadline(m_ep[0].stream);
    ASSERT_NE(UCT_MC_REL_TIME_INF, deadline);
    ASSERT_GT(deadline, m_now);
    m_now = deadline;
    pump();
    EXPECT_EQ(before[0].tx_sync + 1, stats(0).tx_sync);
    EXPECT_EQ(UCS_OK, uct_mc_rel_flush(m_ep[0].stream));
    for (unsigned r = 1; r < 3; ++r) {
        EXPECT_EQ(before[r].tx_ack + 1, stats(r).tx_ack) << r;
        EXPECT_EQ(UCT_MC_REL_TIME_INF,
                  uct_mc_rel_next_deadline(m_ep[r].stream)) << r;
    }
    EXPECT_EQ(UCT_MC_REL_TIME_INF, uct_mc_rel_next_deadline(m_ep[0].stream));

    /* the next message, and the members leave, deepest first: unasked */
    ASSERT_EQ(UCS_OK, uct_mc_rel_send(m_ep[0].stream, msg.data(), msg.size(),
                                      m_now));
    pump();
    uct_mc_rel_leave(m_ep[2].stream, m_now);
    pump();
    EXPECT_EQ(before[2].tx_ack + 2, stats(2).tx_ack);
    EXPECT_EQ(before[1].tx_ack + 1, stats(1).tx_ack);
    EXPECT_EQ(UCS_INPROGRESS, uct_mc_rel_flush(m_ep[0].stream));
    uct_mc_rel_leave(m_ep[1].stream, m_now);
    pump();
    EXPECT_EQ(before[1].tx_ack + 2, stats(1).tx_ack);
    EXPECT_EQ(UCS_OK, uct_mc_rel_flush(m_ep[0].stream));
    EXPECT_EQ(before[0].tx_sync + 1, stats(0).tx_sync);

    /* once: the parent has it; and the root has nothing to send */
    for (unsigned r = 0; r < 3; ++r) {
        uct_mc_rel_leave(m_ep[r].stream, m_now);
        EXPECT_TRUE(m_ep[r].sent.empty()) << r;
    }
}

/* A point-to-point stream's receiver (config ack_per_msg, what mc_udp
 * sets for UCP's endpoints) acknowledges each message's end on its own:
 * the root's flush completes without a SYNC */
TEST_F(mc_rel_stream, ack_per_msg)
{
    std::vector<uint8_t> msg(10, 0x3c);
    uct_mc_rel_stats_t before[3];

    for (endpoint &ep : m_ep) {
        uct_mc_rel_stream_destroy(ep.stream);
        ep.stream = NULL;
        ep.sent.clear();
    }
    m_config.ack_per_msg = 1;
    for (unsigned r = 0; r < 3; ++r) {
        ASSERT_EQ(UCS_OK, create(r, &m_ep[r].stream, &m_ep[r]));
    }
    join();
    for (unsigned r = 0; r < 3; ++r) {
        before[r] = stats(r);
    }

    ASSERT_EQ(UCS_OK, uct_mc_rel_send(m_ep[0].stream, msg.data(), msg.size(),
                                      m_now));
    pump();
    EXPECT_EQ(UCS_OK, uct_mc_rel_flush(m_ep[0].stream));
    EXPECT_EQ(before[0].tx_sync, stats(0).tx_sync);
    for (unsigned r = 1; r < 3; ++r) {
        EXPECT_EQ(before[r].tx_ack + 1, stats(r).tx_ack) << r;
    }
}

TEST_F(mc_rel_stream, send_limits)
{
    std::vector<uint8_t> msg(200);

    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_mc_rel_send(m_ep[1].stream, msg.data(), 1, m_now));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_mc_rel_send(m_ep[0].stream, msg.data(), 101, m_now));
    m_config.max_msg = 128; /* the whole window of 8 x 16 */
    uct_mc_rel_stream_t *s;
    endpoint ep;
    ASSERT_EQ(UCS_OK, create(0, &s, &ep));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_mc_rel_send(s, msg.data(), 129,
                                                     m_now));
    EXPECT_EQ(UCS_OK, uct_mc_rel_send(s, msg.data(), 128, m_now));
    EXPECT_EQ(0u, uct_mc_rel_tx_space(s));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_mc_rel_send(s, msg.data(), 0, m_now));
    uct_mc_rel_stream_destroy(s);
}

TEST_F(mc_rel_stream, bad_packets_dropped)
{
    uct_mc_rel_hdr_t h;
    std::vector<uint8_t> shortpkt(10, 0);

    /* not joined yet: data and SYNC are out of place */
    expect_drop(1, data_hdr(PSN0, 4), UCT_MC_REL_DROP_STATE, "data early");
    h = hdr(UCT_MC_REL_PKT_SYNC, 0);
    h.psn = h.aux = PSN0;
    expect_drop(1, h, UCT_MC_REL_DROP_STATE, "sync early");

    join();

    /* parser-level: counted too */
    uct_mc_rel_stats_t before = stats(1);
    uct_mc_rel_recv(m_ep[1].stream, shortpkt.data(), shortpkt.size(), m_now);
    EXPECT_EQ(before.drop[UCT_MC_REL_DROP_LENGTH] + 1,
              stats(1).drop[UCT_MC_REL_DROP_LENGTH]);

    h = data_hdr(PSN0, 4);
    h.group_id = GROUP + 1;
    expect_drop(1, h, UCT_MC_REL_DROP_STREAM, "other group");
    h = data_hdr(PSN0, 4);
    h.root = 1;
    expect_drop(1, h, UCT_MC_REL_DROP_STREAM, "other root");
    h = data_hdr(PSN0, 4);
    h.epoch = EPOCH - 1;
    expect_drop(1, h, UCT_MC_REL_DROP_EPOCH, "old epoch");
    h.epoch = EPOCH + 1;
    expect_drop(1, h, UCT_MC_REL_DROP_EPOCH, "new epoch");
    h = data_hdr(PSN0, 4);
    h.src = 3;
    expect_drop(1, h, UCT_MC_REL_DROP_RANK, "sender out of range");
    h.src = 1;
    expect_drop(1, h, UCT_MC_REL_DROP_RANK, "sender is the receiver");
    h.src = 2;
    expect_drop(1, h, UCT_MC_REL_DROP_RANK, "data from a child");
    h = hdr(UCT_MC_REL_PKT_PROBE, 2);
    h.psn = h.aux = PSN0;
    expect_drop(1, h, UCT_MC_REL_DROP_RANK, "probe from a child");
    h = hdr(UCT_MC_REL_PKT_ACK, 1);
    h.flags = UCT_MC_REL_FLAG_JOINED;
    h.psn   = PSN0;
    expect_drop(2, h, UCT_MC_REL_DROP_RANK, "ack from the parent");
    h = hdr(UCT_MC_REL_PKT_NACK, 0);
    h.psn    = PSN0;
    h.aux    = 1;
    h.bitmap = 1;
    expect_drop(1, h, UCT_MC_REL_DROP_RANK, "nack from the root");

    /* PSN window (8) and sizes (mtu 16, max_msg 100) */
    expect_drop(1, data_hdr(PSN0 + 8, 4), UCT_MC_REL_DROP_PSN,
                "psn beyond the window");
    h = data_hdr(PSN0, 4);
    h.aux = PSN0 + 9;
    expect_drop(1, h, UCT_MC_REL_DROP_PSN, "next beyond the window");
    expect_drop(1, data_hdr(PSN0, 17), UCT_MC_REL_DROP_SIZE,
                "payload above the MTU");
    h = data_hdr(PSN0, 4);
    h.flags   = 0;
    h.msg_len = 101;
    expect_drop(1, h, UCT_MC_REL_DROP_SIZE, "message above max_msg");
    h = hdr(UCT_MC_REL_PKT_SYNC, 0);
    h.psn = PSN0 + 1;
    h.aux = PSN0 + 1;
    expect_drop(1, h, UCT_MC_REL_DROP_PSN, "sync: all have more than I");
    /* lagging subtrees: the root (radix 1) has one child */
    h = hdr(UCT_MC_REL_PKT_SYNC, 0);
    h.psn    = PSN0;
    h.aux    = PSN0 + 1;
    h.bitmap = 2;
    expect_drop(1, h, UCT_MC_REL_DROP_FIELD,
                "sync: a lagging subtree the root does not have");
    h = hdr(UCT_MC_REL_PKT_SYNC, 1);
    h.psn    = PSN0;
    h.aux    = PSN0 + 1;
    h.bitmap = 1;
    expect_drop(2, h, UCT_MC_REL_DROP_FIELD,
                "sync: lagging subtrees from the parent");
    h = hdr(UCT_MC_REL_PKT_ACK, 2);
    h.flags = UCT_MC_REL_FLAG_JOINED;
    h.psn   = PSN0 + 9;
    expect_drop(1, h, UCT_MC_REL_DROP_PSN, "ack beyond the window");
    h = hdr(UCT_MC_REL_PKT_NACK, 2);
    h.psn    = PSN0 + 8;
    h.aux    = 1;
    h.bitmap = 1;
    expect_drop(1, h, UCT_MC_REL_DROP_PSN, "nack beyond the window");
    h.psn = PSN0;
    h.aux = 3;
    expect_drop(1, h, UCT_MC_REL_DROP_FIELD, "nack count above the group");

    /* the root: no data, no NACK for what it has not sent, no ACK beyond */
    expect_drop(0, data_hdr(PSN0, 4), UCT_MC_REL_DROP_RANK, "data to root");
    h = hdr(UCT_MC_REL_PKT_NACK, 1);
    h.psn    = PSN0;
    h.aux    = 1;
    h.bitmap = 1;
    expect_drop(0, h, UCT_MC_REL_DROP_PSN, "nack of an unsent psn");
    h = hdr(UCT_MC_REL_PKT_ACK, 1);
    h.flags = UCT_MC_REL_FLAG_JOINED;
    h.psn   = PSN0 + 1;
    expect_drop(0, h, UCT_MC_REL_DROP_PSN, "ack of an unsent psn");
    h = hdr(UCT_MC_REL_PKT_ACK, 2);
    h.flags = UCT_MC_REL_FLAG_JOINED;
    h.psn   = PSN0;
    expect_drop(0, h, UCT_MC_REL_DROP_RANK, "ack from a grandchild");

    /* after all that, the stream works */
    pump();
    std::vector<uint8_t> msg(30, 0x42);
    ASSERT_EQ(UCS_OK, uct_mc_rel_send(m_ep[0].stream, msg.data(), msg.size(),
                                      m_now));
    pump();
    for (unsigned r = 1; r < 3; ++r) {
        ASSERT_EQ(1u, m_ep[r].delivered.size()) << r;
        EXPECT_EQ(msg, m_ep[r].delivered[0]);
        EXPECT_EQ(UCS_OK, m_ep[r].failed);
    }
    EXPECT_EQ(UCS_OK, uct_mc_rel_flush(m_ep[0].stream));
}

/* A duplicate is counted and harmless */
TEST_F(mc_rel_stream, duplicates)
{
    join();
    recv(1, data_hdr(PSN0, 4));
    recv(1, data_hdr(PSN0, 4));
    ASSERT_EQ(1u, m_ep[1].delivered.size());
    EXPECT_EQ(1u, stats(1).rx_dup);
    EXPECT_EQ(1u, stats(1).rx_data);
}

/* A fragment that does not continue the message in progress fails the
 * stream (only a broken root or a forged packet does that) */
TEST_F(mc_rel_stream, broken_message_fails)
{
    uct_mc_rel_hdr_t h;

    join();
    h = data_hdr(PSN0, 10);
    h.flags   = 0;
    h.msg_len = 30;
    recv(1, h);
    h = data_hdr(PSN0 + 1, 10);
    h.msg_len = 40;   /* another message's length */
    h.offset  = 10;
    h.flags   = 0;
    recv(1, h);
    EXPECT_EQ(UCS_ERR_IO_ERROR, m_ep[1].failed);
    EXPECT_EQ(UCS_ERR_IO_ERROR, uct_mc_rel_status(m_ep[1].stream));
    EXPECT_TRUE(m_ep[1].delivered.empty());
}

/* A failure reaches every member, which confirms it; the origin stops
 * repeating once all confirmed */
TEST_F(mc_rel_stream, fail_reaches_everyone)
{
    join();
    uct_mc_rel_fail(m_ep[2].stream, UCS_ERR_CANCELED, m_now);
    EXPECT_EQ(UCS_ERR_CANCELED, m_ep[2].failed);
    EXPECT_NE(UCT_MC_REL_TIME_INF, uct_mc_rel_next_deadline(m_ep[2].stream));
    pump();
    for (unsigned r = 0; r < 3; ++r) {
        EXPECT_EQ(UCS_ERR_CANCELED, m_ep[r].failed) << r;
        EXPECT_EQ(UCS_ERR_CANCELED, uct_mc_rel_status(m_ep[r].stream)) << r;
        EXPECT_EQ(UCT_MC_REL_TIME_INF,
                  uct_mc_rel_next_deadline(m_ep[r].stream)) << r;
    }
    EXPECT_EQ(UCS_ERR_CANCELED,
              uct_mc_rel_send(m_ep[0].stream, "x", 1, m_now));
}

/* Repair policy at the root: an isolated NACK is repaired by unicast to
 * the child that asked; when NACKs report remcast_thresh members missing a
 * PSN within one RTO, that PSN (only) is re-multicast, and not again for
 * half an RTO */
TEST_F(mc_rel_stream, repair_unicast_or_remulticast)
{
    uct_mc_rel_stream_t *root;
    endpoint ep;
    std::vector<uint8_t> msg(48, 0x11); /* 3 fragments */

    m_config.radix          = 4;
    m_config.remcast_thresh = 3;
    ASSERT_NO_FATAL_FAILURE(root_sent(5, msg, &root, &ep));

    /* one member misses PSN0 + 1: unicast to it */
    nack(root, 1, PSN0, 1, 2);
    ASSERT_EQ(1u, ep.sent.size());
    EXPECT_EQ(1, ep.sent[0].dest);
    EXPECT_EQ(PSN0 + 1, ep.sent[0].hdr.psn);
    EXPECT_TRUE(ep.sent[0].hdr.flags & UCT_MC_REL_FLAG_REPAIR);
    EXPECT_EQ(16u, ep.sent[0].hdr.payload_len);

    /* a second child reports 2 more (its subtree): 3 in one RTO ->
     * re-multicast of that PSN only; PSN0 is unicast (1 missing) */
    ep.sent.clear();
    nack(root, 2, PSN0, 2, 3);
    ASSERT_EQ(2u, ep.sent.size());
    EXPECT_EQ(2, ep.sent[0].dest);
    EXPECT_EQ(PSN0, ep.sent[0].hdr.psn);
    EXPECT_EQ(UCT_MC_REL_DEST_MCAST, ep.sent[1].dest);
    EXPECT_EQ(PSN0 + 1, ep.sent[1].hdr.psn);

    /* a third asks at once: the re-multicast is on its way */
    ep.sent.clear();
    nack(root, 3, PSN0, 1, 2);
    EXPECT_TRUE(ep.sent.empty());

    uct_mc_rel_stats_t st;
    uct_mc_rel_stats(root, &st);
    EXPECT_EQ(2u, st.tx_repair_ucast);
    EXPECT_EQ(1u, st.tx_repair_mcast);
    EXPECT_EQ(3u, st.rx_nack);

    /* one RTO later the count starts again: unicast */
    m_now += m_config.rto_max;
    ep.sent.clear();
    nack(root, 3, PSN0, 1, 2);
    ASSERT_EQ(1u, ep.sent.size());
    EXPECT_EQ(3, ep.sent[0].dest);
    uct_mc_rel_stream_destroy(root);
}

/* remcast_thresh counts members missing a PSN, each subtree once: a child
 * that NACKs the same PSN again (its retry after an RTO of its own, or a
 * grown count from below) replaces its earlier report.  One receiver alone
 * never makes the root re-multicast */
TEST_F(mc_rel_stream, remcast_counts_each_subtree_once)
{
    std::vector<uint8_t> msg(48, 0x22); /* 3 fragments */

    for (unsigned size : {2u, 5u}) {
        uct_mc_rel_stream_t *root;
        endpoint ep;

        m_config.radix          = 4;
        m_config.remcast_thresh = (size == 2) ? 0 : 3; /* 0: max(2, N/8) */
        ASSERT_NO_FATAL_FAILURE(root_sent(size, msg, &root, &ep));

        /* @a src NACKs PSN0 + 1 alone */
        auto nack1 = [&](unsigned src, uint32_t count) {
            nack(root, src, PSN0 + 1, count, 1);
            m_now += 1000; /* well within one RTO */
        };

        /* the same receiver three times: one member misses it */
        for (int i = 0; i < 3; ++i) {
            nack1(1, 1);
        }
        if (size == 5) {
            nack1(1, 2); /* its subtree: 2 now, not 1 + 1 + 1 + 2 */
        }
        uct_mc_rel_stats_t st;
        uct_mc_rel_stats(root, &st);
        EXPECT_EQ(0u, st.tx_repair_mcast) << size << " members";
        EXPECT_EQ((size == 5) ? 4u : 3u, st.tx_repair_ucast)
            << size << " members";
        for (const sent_pkt &p : ep.sent) {
            EXPECT_EQ(1, p.dest);
        }

        if (size == 5) {
            /* another subtree: 2 + 1 reach the threshold */
            ep.sent.clear();
            nack1(2, 1);
            ASSERT_EQ(1u, ep.sent.size());
            EXPECT_EQ(UCT_MC_REL_DEST_MCAST, ep.sent[0].dest);
            EXPECT_EQ(PSN0 + 1, ep.sent[0].hdr.psn);
        }
        uct_mc_rel_stream_destroy(root);
    }
}
