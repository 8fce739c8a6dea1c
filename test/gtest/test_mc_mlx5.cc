/**
 * ucx-o2m tests: the mc_mlx5 transport (UD multicast on the reliable
 * multicast engine, derived from UCX's ud_mlx5; its group endpoints are
 * mc_verbs's with mlx5 work requests).
 *
 *  - mc_mlx5_wire.*: its pure parts, on any host: the destination's
 *    address vector (the group's DQPN 0xFFFFFF, a member's QPN, what the
 *    device built kept), the send work request (every segment, the data
 *    segment after the send queue's wrap), the send completion check
 *    (owner bit over passes, errors, entries never written); the shared
 *    parts (header, group address, GIDs, join's address handle) are
 *    test_mc_verbs.cc's mc_ib_wire.*
 *  - mc_mlx5_plugin.config_registered: the plugin adds the transport's
 *    variables (ud_mlx5's and the groups') to UCX's configuration
 *  - mc_mlx5_plugin.only_on_mlx5: `ucx_info -d` lists mc_mlx5 on mlx5
 *    devices only (Soft-RoCE's rxe is not one; mc_verbs runs there)
 *  - mc_mlx5.* on an mlx5 device (skipped with a message naming the
 *    missing device and the devices found): the device tests of
 *    common/ib_mc.h, as for mc_verbs - listed, UD's point-to-point, groups
 *    of 2..4 with every root and every size class without and with forced
 *    losses, the IP membership left, UCP tag with UCX_TLS=mc_mlx5.
 */
#include "common/harness.h"
#include "common/ib_mc.h"
#include "common/tools.h"

extern "C" {
#include "mc_mlx5_wire.h"
}

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <endian.h>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace o2m_test;

namespace {

/* An address vector as a device would build it: every byte known */
struct mlx5_wqe_av device_av()
{
    struct mlx5_wqe_av av;
    uint8_t *p = reinterpret_cast<uint8_t*>(&av);

    for (size_t i = 0; i < sizeof(av); ++i) {
        p[i] = (uint8_t)(0x30 + i);
    }
    return av;
}

} // namespace


TEST(mc_mlx5_wire, av_init)
{
    const struct mlx5_wqe_av ah_av = device_av();
    struct mlx5_wqe_av av;

    /* The group: DQPN 0xFFFFFF, the extended form (its GRH: the MGID) */
    memset(&av, 0xee, sizeof(av));
    uct_mc_mlx5_av_init(&av, &ah_av, 0xffffff);
    EXPECT_EQ(htobe32(0x80ffffffu), av.dqp_dct);
    EXPECT_EQ(0u, av.key.qkey.qkey);  /* set on every send */
    /* What the device built stays: SL, MLID, RMAC, GRH and MGID */
    EXPECT_EQ(ah_av.stat_rate_sl, av.stat_rate_sl);
    EXPECT_EQ(ah_av.fl_mlid, av.fl_mlid);
    EXPECT_EQ(ah_av.rlid, av.rlid);
    EXPECT_EQ(0, memcmp(ah_av.rmac, av.rmac, sizeof(av.rmac)));
    EXPECT_EQ(ah_av.tclass, av.tclass);
    EXPECT_EQ(ah_av.hop_limit, av.hop_limit);
    EXPECT_EQ(ah_av.grh_gid_fl, av.grh_gid_fl);
    EXPECT_EQ(0, memcmp(ah_av.rgid, av.rgid, sizeof(av.rgid)));

    /* A member: its QPN, 24 bits */
    uct_mc_mlx5_av_init(&av, &ah_av, 0x123456);
    EXPECT_EQ(htobe32(0x80123456u), av.dqp_dct);
    uct_mc_mlx5_av_init(&av, &ah_av, 0xab123456);
    EXPECT_EQ(htobe32(0x80123456u), av.dqp_dct);
}

TEST(mc_mlx5_wire, wqe_pack)
{
    const struct mlx5_wqe_av ah_av = device_av();
    struct mlx5_wqe_av av;
    alignas(64) uint8_t sq[4 * MLX5_SEND_WQE_BB];
    const uint8_t payload[100] = {1};

    EXPECT_EQ(80u, UCT_MC_MLX5_WQE_SIZE);
    EXPECT_GE(UCT_MC_MLX5_WQE_BBS * MLX5_SEND_WQE_BB, UCT_MC_MLX5_WQE_SIZE);

    uct_mc_mlx5_av_init(&av, &ah_av, 0xffffff);

    /* In place, and with the data segment at the queue's start (wrap) */
    for (unsigned wrap = 0; wrap < 2; ++wrap) {
        void *ctrl_p = sq + 2 * MLX5_SEND_WQE_BB;
        void *dseg_p = wrap ? sq : sq + 3 * MLX5_SEND_WQE_BB;

        memset(sq, 0xcc, sizeof(sq));
        ASSERT_EQ(UCT_MC_MLX5_WQE_SIZE,
                  uct_mc_mlx5_wqe_pack(ctrl_p, dseg_p, 0x1234, 0x00abcdef,
                                       &av, 0x11110000, payload,
                                       sizeof(payload), 0x5678));

        auto ctrl = static_cast<struct mlx5_wqe_ctrl_seg*>(ctrl_p);
        EXPECT_EQ(htobe32((0x1234u << 8) | MLX5_OPCODE_SEND),
                  ctrl->opmod_idx_opcode);
        /* The sending QP and the size in 16-byte units */
        EXPECT_EQ(htobe32((0xabcdefu << 8) | 5), ctrl->qpn_ds);
        EXPECT_EQ(MLX5_WQE_CTRL_CQ_UPDATE, ctrl->fm_ce_se);

        /* The destination with the group's Q_Key */
        auto dgram = reinterpret_cast<struct mlx5_wqe_datagram_seg*>(
                static_cast<uint8_t*>(ctrl_p) + sizeof(*ctrl));
        EXPECT_EQ(htobe32(0x11110000u), dgram->av.key.qkey.qkey);
        EXPECT_EQ(htobe32(0x80ffffffu), dgram->av.dqp_dct);
        EXPECT_EQ(0, memcmp(av.rgid, dgram->av.rgid, sizeof(av.rgid)));
        EXPECT_EQ(av.rlid, dgram->av.rlid);

        auto dseg = static_cast<struct mlx5_wqe_data_seg*>(dseg_p);
        EXPECT_EQ(htobe32(sizeof(payload)), dseg->byte_count);
        EXPECT_EQ(htobe32(0x5678u), dseg->lkey);
        EXPECT_EQ(htobe64((uintptr_t)payload), dseg->addr);

        /* Nothing written outside the two blocks */
        uint8_t *untouched = wrap ? sq + MLX5_SEND_WQE_BB :
                                    sq;
        for (unsigned i = 0; i < MLX5_SEND_WQE_BB; ++i) {
            ASSERT_EQ(0xcc, untouched[i]) << "wrap " << wrap << " byte " << i;
        }
        if (wrap) {
            for (unsigned i = 0; i < MLX5_SEND_WQE_BB; ++i) {
                ASSERT_EQ(0xcc, sq[3 * MLX5_SEND_WQE_BB + i]) << i;
            }
        }
    }
}

TEST(mc_mlx5_wire, cqe_check)
{
    const unsigned len = 8;
    struct mlx5_cqe64 cqe;

    /* As a fresh queue looks (owner bit set by the taker-over, opcode
     * invalid): nothing on any pass */
    memset(&cqe, 0, sizeof(cqe));
    for (uint8_t owner : {0, 1}) {
        cqe.op_own = (MLX5_CQE_INVALID << 4) | owner;
        for (unsigned ci : {0u, 3u, len, len + 3, 2 * len}) {
            EXPECT_EQ(UCT_MC_MLX5_CQE_NONE,
                      uct_mc_mlx5_cqe_check(&cqe, ci, len)) << ci;
        }
    }

    /* Written on the first pass (owner 0): done then, stale on the next */
    cqe.op_own = (MLX5_CQE_REQ << 4) | 0;
    EXPECT_EQ(UCT_MC_MLX5_CQE_OK, uct_mc_mlx5_cqe_check(&cqe, 2, len));
    EXPECT_EQ(UCT_MC_MLX5_CQE_NONE, uct_mc_mlx5_cqe_check(&cqe, len + 2, len));
    EXPECT_EQ(UCT_MC_MLX5_CQE_OK, uct_mc_mlx5_cqe_check(&cqe, 2 * len + 2,
                                                        len));

    /* Written on the second pass (owner 1) */
    cqe.op_own = (MLX5_CQE_REQ << 4) | 1;
    EXPECT_EQ(UCT_MC_MLX5_CQE_NONE, uct_mc_mlx5_cqe_check(&cqe, 2, len));
    EXPECT_EQ(UCT_MC_MLX5_CQE_OK, uct_mc_mlx5_cqe_check(&cqe, len + 2, len));

    /* A send that failed */
    cqe.op_own = (MLX5_CQE_REQ_ERR << 4) | 0;
    EXPECT_EQ(UCT_MC_MLX5_CQE_ERROR, uct_mc_mlx5_cqe_check(&cqe, 5, len));
    EXPECT_EQ(UCT_MC_MLX5_CQE_NONE, uct_mc_mlx5_cqe_check(&cqe, len + 5,
                                                          len));
}


/* ------------------------------------------------------------------------ */
/* With the plugin                                                         */

TEST(mc_mlx5_plugin, config_registered)
{
    ib_mc_check_config_registered("mc_mlx5",
                                  {"UCX_MC_MLX5_GROUP_WINDOW",
                                   "UCX_MC_MLX5_GROUP_TEST_DROP",
                                   "UCX_MC_MLX5_GROUP_MCAST_BASE",
                                   "UCX_MC_MLX5_TX_QUEUE_LEN",
                                   "UCX_MC_MLX5_MMIO_MODE"});
}

namespace {

/* Whether @a dev is an mlx5 device: what ud_mlx5, and mc_mlx5, run on */
bool is_mlx5(struct ibv_device *dev)
{
    return mlx5dv_is_supported(dev);
}

/* The verbs devices of this host that are not mlx5 ones */
std::set<std::string> other_devices()
{
    struct ibv_device **list;
    std::set<std::string> names;
    int num = 0;

    list = ibv_get_device_list(&num);
    for (int i = 0; i < num; ++i) {
        if (!is_mlx5(list[i])) {
            names.insert(ibv_get_device_name(list[i]));
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    return names;
}

} // namespace

/* mc_mlx5 is listed on mlx5 devices only: on another device (Soft-RoCE's
 * rxe0 in contrib's VM) ucx_info lists mc_verbs and not mc_mlx5 */
TEST(mc_mlx5_plugin, only_on_mlx5)
{
    std::set<std::string> others = other_devices();
    std::string line, md;
    int status;

    std::istringstream out(run_command("LD_PRELOAD='" + plugin_preload() +
                                       "' ucx_info -d 2>&1", &status));
    ASSERT_EQ(0, status) << out.str();

    /* ucx_info -d: "# Memory domain: <md>", then its transports, each
     * "#      Transport: <tl>" and its "#         Device: <md>:<port>" */
    std::string tl;
    unsigned mc_verbs_on_others = 0;
    while (std::getline(out, line)) {
        size_t at;
        if ((at = line.find("Transport: ")) != std::string::npos) {
            tl = line.substr(at + 11);
        } else if ((at = line.find("Device: ")) != std::string::npos) {
            std::string dev = line.substr(at + 8);
            std::string name = dev.substr(0, dev.find(':'));
            if (others.count(name) == 0) {
                continue;
            }
            EXPECT_NE("mc_mlx5", tl) << "mc_mlx5 listed on " << dev
                                     << ", not an mlx5 device";
            mc_verbs_on_others += (tl == "mc_verbs");
        }
    }
    if (others.empty()) {
        GTEST_SKIP() << "no verbs device other than mlx5 ones on this host "
                        "(contrib's Soft-RoCE VM has one)";
    }
    /* The listing was read: the same device has mc_verbs */
    EXPECT_GT(mc_verbs_on_others, 0u) << out.str();
}


/* ------------------------------------------------------------------------ */
/* On an mlx5 device                                                       */

namespace {

class mc_mlx5 : public ib_mc_test {
protected:
    mc_mlx5() :
        ib_mc_test("mc_mlx5", "mlx5 device (a ConnectX IB or RoCE port, "
                   "where UCX's ud_mlx5 runs; Soft-RoCE is not one)",
                   is_mlx5)
    {
    }
};

} // namespace

TEST_F(mc_mlx5, group_membership_left)
{
    check_membership_left();
}

TEST_F(mc_mlx5, listed)
{
    check_listed();
}

TEST_F(mc_mlx5, p2p_exact)
{
    check_p2p_exact();
}

/* Groups of 2..4, every member as root, every size class to 4 KiB */
TEST_F(mc_mlx5, group_exact)
{
    check_groups(0);
}

/* With 10 % (and 30 %) of the first transmissions dropped at every member */
TEST_F(mc_mlx5, group_exact_lossy)
{
    check_groups(100);
    group_run(3, 1, 300, 120);
}

/* UCP tag send/receive over mc_mlx5 alone */
TEST_F(mc_mlx5, ucp_tag)
{
    check_ucp_tag();
}
