/**
 * ucx-o2m tests: the mc_verbs transport (UD multicast on the reliable
 * multicast engine, derived from UCX's ud_verbs).
 *
 *  - mc_ib_wire.*: its pure parts (shared with mc_mlx5), on any host: the
 *    datagram header
 *    (every field wrong in turn), the group's multicast address from the
 *    group parameters, the GID choice (RoCE v2 IPv4 or link-local), the
 *    group's address handle from what the join reports, the source GID of
 *    a received packet (the loss hook's decisions are the engine's:
 *    test_mc_rel_wire.cc)
 *  - mc_verbs_plugin.config_registered: the plugin adds the transport's variables
 *    to UCX's configuration (`ucx_info -c`), device or not
 *  - mc_verbs.* on a verbs device (skipped with a message when the host has
 *    none; contrib's Soft-RoCE VM has one; common/ib_mc.h runs them, the
 *    same for mc_mlx5): `ucx_info -d` lists mc_verbs, a
 *    plain uct_ep_create gives UD's point-to-point endpoint (exact, in
 *    order), groups of 2..4 processes with every member as root, messages
 *    of every size class, without and with losses forced by the
 *    deterministic drop knob (exactly once, in order, bytes checked, the
 *    counters showing multicast data and the drops repaired), the group's
 *    IP membership held while it lives and left on destroy and on a kill,
 *    and UCP tag send/receive with UCX_TLS=mc_verbs.
 */
#include "common/harness.h"
#include "common/ib_mc.h"
#include "common/tools.h"

extern "C" {
#include "mc_ib_wire.h"
}

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <set>
#include <string>
#include <vector>

using namespace o2m_test;

namespace {

/* ------------------------------------------------------------------------ */
/* Pure parts                                                              */

std::vector<uint8_t> datagram(uint8_t kind, uint32_t conn,
                              const std::vector<uint8_t> &payload)
{
    std::vector<uint8_t> d(UCT_MC_IB_HDR_LEN);

    uct_mc_ib_hdr_pack((uct_mc_ib_hdr_t*)d.data(), kind, conn);
    d.insert(d.end(), payload.begin(), payload.end());
    return d;
}

std::vector<uint8_t> who_payload(uint32_t epoch, uint16_t rank)
{
    uct_mc_ib_who_t who = {htole32(epoch), htole16(rank), 0};
    auto p                 = reinterpret_cast<uint8_t*>(&who);

    return std::vector<uint8_t>(p, p + sizeof(who));
}

ucs_status_t parse(const std::vector<uint8_t> &d, uint8_t *kind = NULL,
                   uint32_t *conn = NULL, size_t *payload_len = NULL)
{
    uint8_t k;
    uint32_t c;
    const void *p;
    size_t l;
    ucs_status_t status;

    status = uct_mc_ib_hdr_parse(d.data(), d.size(), &k, &c, &p, &l);
    if (status == UCS_OK) {
        EXPECT_EQ(d.data() + UCT_MC_IB_HDR_LEN, p);
        if (kind != NULL) {
            *kind = k;
        }
        if (conn != NULL) {
            *conn = c;
        }
        if (payload_len != NULL) {
            *payload_len = l;
        }
    }
    return status;
}

union ibv_gid gid_of(std::initializer_list<uint8_t> bytes)
{
    union ibv_gid gid;
    unsigned i = 0;

    memset(&gid, 0, sizeof(gid));
    for (uint8_t b : bytes) {
        gid.raw[i++] = b;
    }
    return gid;
}

union ibv_gid gid_v4(const char *ip)
{
    union ibv_gid gid = gid_of({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff});
    struct in_addr a;

    EXPECT_EQ(1, inet_pton(AF_INET, ip, &a));
    memcpy(&gid.raw[12], &a, 4);
    return gid;
}

} // namespace


TEST(mc_ib_wire, header)
{
    uint8_t kind;
    uint32_t conn;
    size_t len;

    /* Good ones: an engine packet of any length, WHO and HELLO */
    std::vector<uint8_t> g = datagram(UCT_MC_IB_KIND_GROUP, 0xdeadbeef,
                                      std::vector<uint8_t>(40, 7));
    ASSERT_EQ(UCS_OK, parse(g, &kind, &conn, &len));
    EXPECT_EQ(UCT_MC_IB_KIND_GROUP, kind);
    EXPECT_EQ(0xdeadbeefu, conn);
    EXPECT_EQ(40u, len);
    for (uint8_t k : {UCT_MC_IB_KIND_WHO, UCT_MC_IB_KIND_HELLO}) {
        ASSERT_EQ(UCS_OK, parse(datagram(k, 5, who_payload(9, 3)), &kind,
                                &conn, &len));
        EXPECT_EQ(k, kind);
        EXPECT_EQ(5u, conn);
        EXPECT_EQ(sizeof(uct_mc_ib_who_t), len);
    }

    /* Each field wrong in turn */
    for (size_t n = 0; n < UCT_MC_IB_HDR_LEN; ++n) {
        EXPECT_NE(UCS_OK, parse(std::vector<uint8_t>(g.begin(),
                                                     g.begin() + n)))
                << "truncated to " << n;
    }
    for (unsigned byte : {0u, 1u, 3u}) {
        std::vector<uint8_t> bad = g;
        bad[byte] ^= 0x10;
        EXPECT_NE(UCS_OK, parse(bad)) << "byte " << byte;
    }
    for (unsigned k : {0u, (unsigned)UCT_MC_IB_KIND_LAST, 0xffu}) {
        std::vector<uint8_t> bad = g;
        bad[2] = k;
        EXPECT_NE(UCS_OK, parse(bad)) << "kind " << k;
    }

    /* WHO and HELLO: exactly their payload, reserved 0 */
    std::vector<uint8_t> w = datagram(UCT_MC_IB_KIND_WHO, 5,
                                      who_payload(9, 3));
    EXPECT_NE(UCS_OK, parse(std::vector<uint8_t>(w.begin(), w.end() - 1)));
    std::vector<uint8_t> longer = w;
    longer.push_back(0);
    EXPECT_NE(UCS_OK, parse(longer));
    std::vector<uint8_t> reserved = w;
    reserved.back() = 1;
    EXPECT_NE(UCS_OK, parse(reserved));
    EXPECT_NE(UCS_OK, parse(datagram(UCT_MC_IB_KIND_HELLO, 5, {})));
}

TEST(mc_ib_wire, group_ip)
{
    const uint32_t base = ntohl(inet_addr("239.255.80.0"));
    std::set<uint32_t> seen;

    for (uint64_t id = 0; id < 64; ++id) {
        uint64_t gid = id * 0x100000001ull;
        uint32_t ip  = uct_mc_ib_group_ip(gid, base, 1024);

        EXPECT_GE(ip, base);
        EXPECT_LT(ip, base + 1024);
        /* Every member computes the same */
        EXPECT_EQ(ip, uct_mc_ib_group_ip(gid, base, 1024));
        seen.insert(ip);
    }
    /* Spread: 64 groups in 1024 addresses rarely share one */
    EXPECT_GE(seen.size(), 56u);
    EXPECT_EQ(base, uct_mc_ib_group_ip(12345, base, 1));
}

TEST(mc_ib_wire, check_gid)
{
    uint32_t ip = 1;

    /* RoCE v2 IPv4: its address is what the groups are joined from */
    union ibv_gid v4 = gid_v4("10.99.0.7");
    ASSERT_EQ(UCS_OK, uct_mc_ib_check_gid(&v4, 1, &ip));
    EXPECT_EQ(inet_addr("10.99.0.7"), ip);

    /* Link-local: usable, the address comes from the network device */
    union ibv_gid ll = gid_of({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22,
                               0xff, 0xfe, 0x33, 0x44, 0x55});
    ip = 1;
    EXPECT_EQ(UCS_OK, uct_mc_ib_check_gid(&ll, 1, &ip));
    EXPECT_EQ(0u, ip);

    /* A global IPv6 GID on RoCE: not usable */
    union ibv_gid g6 = gid_of({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,
                               0, 0, 0, 1});
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_mc_ib_check_gid(&g6, 1, &ip));

    /* InfiniBand: any GID (IPoIB gives the address) */
    EXPECT_EQ(UCS_OK, uct_mc_ib_check_gid(&g6, 0, &ip));
    EXPECT_EQ(0u, ip);
}

TEST(mc_ib_wire, mc_ah_attr)
{
    struct ibv_ah_attr join, ah;

    /* RoCE v2 IPv4: the group's IPv4-mapped GID; dlid not used */
    memset(&join, 0, sizeof(join));
    join.is_global = 1;
    join.grh.dgid  = gid_v4("239.255.80.17");
    join.dlid      = 0xc001;
    join.sl        = 5;
    join.port_num  = 7;
    memset(&ah, 0xaa, sizeof(ah));
    ASSERT_EQ(UCS_OK, uct_mc_ib_mc_ah_attr(&join, 1, 1, 3, 2, &ah));
    EXPECT_EQ(1, ah.is_global);
    EXPECT_EQ(0, memcmp(&ah.grh.dgid, &join.grh.dgid, sizeof(ah.grh.dgid)));
    EXPECT_EQ(3, ah.grh.sgid_index);   /* the interface's GID */
    EXPECT_EQ(1, ah.grh.hop_limit);
    EXPECT_EQ(0, ah.dlid);
    EXPECT_EQ(2, ah.sl);               /* the interface's SL */
    EXPECT_EQ(1, ah.port_num);         /* the interface's port */

    /* RoCE: an IPv4-mapped unicast address is no group */
    join.grh.dgid = gid_v4("10.99.0.1");
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_mc_ib_mc_ah_attr(&join, 1, 1, 3, 0, &ah));

    /* ff0e::ffff:a.b.c.d (RoCE v1 style) and IB MGIDs */
    join.grh.dgid = gid_of({0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
                            239, 255, 80, 17});
    EXPECT_EQ(UCS_OK, uct_mc_ib_mc_ah_attr(&join, 1, 1, 0, 0, &ah));
    join.grh.dgid = gid_of({0xff, 0x12, 0x40, 0x1b, 0x80, 0x00, 0, 0, 0, 0, 0,
                            0, 0xef, 0xff, 0x50, 0x11});
    ASSERT_EQ(UCS_OK, uct_mc_ib_mc_ah_attr(&join, 0, 1, 0, 0, &ah));
    EXPECT_EQ(0xc001, ah.dlid);        /* IB: the MLID */

    /* IB: a unicast LID is no group; neither is a route without GRH */
    for (uint16_t lid : {0x0001, 0xbfff, 0xffff}) {
        join.dlid = lid;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_mc_ib_mc_ah_attr(&join, 0, 1, 0, 0, &ah))
                << "lid " << lid;
    }
    join.dlid      = 0xc001;
    join.is_global = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_mc_ib_mc_ah_attr(&join, 0, 1, 0, 0, &ah));

    /* A unicast GID is no group */
    join.is_global = 1;
    join.grh.dgid  = gid_of({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6,
                             7, 8});
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_mc_ib_mc_ah_attr(&join, 0, 1, 0, 0, &ah));
}

TEST(mc_ib_wire, grh_sgid)
{
    union ibv_gid own = gid_of({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9,
                                9, 9, 9});
    union ibv_gid sgid;
    uint8_t buf[40];

    /* RoCE v2 IPv4: 20 undefined bytes, then the IPv4 header */
    memset(buf, 0x5a, sizeof(buf));
    buf[20] = 0x45;
    memcpy(&buf[20 + 12], "\x0a\x63\x00\x02", 4);  /* 10.99.0.2 */
    memcpy(&buf[20 + 16], "\xef\xff\x50\x11", 4);  /* to the group */
    ASSERT_EQ(UCS_OK, uct_mc_ib_grh_sgid(buf, 1, 1, &own, &sgid));
    union ibv_gid expect = gid_v4("10.99.0.2");
    EXPECT_EQ(0, memcmp(&expect, &sgid, sizeof(sgid)));

    /* A GRH (IB, RoCE v1/v2 IPv6): the source GID at byte 8 */
    memset(buf, 0, sizeof(buf));
    buf[0] = 0x60;
    for (unsigned i = 0; i < 16; ++i) {
        buf[8 + i] = 0x10 + i;
    }
    ASSERT_EQ(UCS_OK, uct_mc_ib_grh_sgid(buf, 1, 0, &own, &sgid));
    EXPECT_EQ(0, memcmp(buf + 8, sgid.raw, 16));
    ASSERT_EQ(UCS_OK, uct_mc_ib_grh_sgid(buf, 1, 1, &own, &sgid));
    EXPECT_EQ(0, memcmp(buf + 8, sgid.raw, 16));

    /* IB without a GRH: a sender of this subnet */
    ASSERT_EQ(UCS_OK, uct_mc_ib_grh_sgid(buf, 0, 0, &own, &sgid));
    EXPECT_EQ(0, memcmp(&own, &sgid, sizeof(sgid)));

    /* RoCE without a GRH, or a header of no known version */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_mc_ib_grh_sgid(buf, 0, 1, &own, &sgid));
    buf[0] = 0x30;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_mc_ib_grh_sgid(buf, 1, 0, &own, &sgid));
}

/* ------------------------------------------------------------------------ */
/* With the plugin                                                         */

TEST(mc_verbs_plugin, config_registered)
{
    ib_mc_check_config_registered("mc_verbs",
                                  {"UCX_MC_VERBS_GROUP_WINDOW",
                                   "UCX_MC_VERBS_GROUP_TEST_DROP",
                                   "UCX_MC_VERBS_GROUP_MCAST_BASE",
                                   "UCX_MC_VERBS_TX_QUEUE_LEN",
                                   /* The peer timeout's default is bounded
                                    * (docs/multicast.md): 30 s, UD's own
                                    * TIMEOUT (UCX prints times in us) */
                                   "UCX_MC_VERBS_GROUP_PEER_TIMEOUT="
                                   "30000000.00us",
                                   "UCX_MC_VERBS_TIMEOUT=30000000.00us"});
}


/* ------------------------------------------------------------------------ */
/* On a verbs device                                                       */

namespace {

class mc_verbs : public ib_mc_test {
protected:
    mc_verbs() :
        ib_mc_test("mc_verbs", "verbs device (the Soft-RoCE VM of contrib/ "
                   "has one)", [](struct ibv_device*) { return true; })
    {
    }
};

} // namespace

TEST_F(mc_verbs, group_membership_left)
{
    check_membership_left();
}

TEST_F(mc_verbs, listed)
{
    check_listed();
}

TEST_F(mc_verbs, p2p_exact)
{
    check_p2p_exact();
}

/* Groups of 2..4, every member as root, no loss */
TEST_F(mc_verbs, group_exact)
{
    check_groups(0);
}

/* The same with 10 % (and 30 %) of the first transmissions dropped at
 * every member: every loss is repaired, exactly once, in order */
TEST_F(mc_verbs, group_exact_lossy)
{
    check_groups(100);
    group_run(3, 1, 300, 120);
}

/* Groups across the bed's two guests: members in both, the root in either,
 * exactly once, in order, bytes checked, forced losses repaired */
TEST_F(mc_verbs, group_two_guests)
{
    check_groups_two_guests();
}

/* Not a test by itself: a member of mc_verbs.group_two_guests in the other
 * guest, which that test starts there (vmbed-exec ... env
 * O2M_IB_MC_MEMBER=<proxy address>:<port>:<group id>:<n>:<rank>:<root>:
 * <drop>:<count> o2m_gtest --gtest_also_run_disabled_tests
 * --gtest_filter=mc_verbs_member.DISABLED_run) */
TEST(mc_verbs_member, DISABLED_run)
{
    ib_mc_remote_member("mc_verbs");
}

/* A member stopped (SIGSTOP) while the root waits for it: the group fails
 * with UCS_ERR_TIMED_OUT on every member after GROUP_PEER_TIMEOUT */
TEST_F(mc_verbs, peer_timeout_stopped_member)
{
    check_peer_timeout_stopped();
}

/* Slow is not dead: a group idle for longer than GROUP_PEER_TIMEOUT stays
 * healthy */
TEST_F(mc_verbs, peer_timeout_idle_group)
{
    check_peer_timeout_idle();
}

/* UCP tag send/receive over mc_verbs alone */
TEST_F(mc_verbs, ucp_tag)
{
    check_ucp_tag();
}
