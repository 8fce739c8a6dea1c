/**
 * ucx-o2m tests: UCG broadcasts between host leaders over mc_udp (MC_BCAST),
 * between virtual hosts (UCX_UCG_HOSTS) of this machine on the loopback
 * device, mc_udp forced (UCX_UCG_MC=yes).
 *
 *  - ucg_mc.plans: the planner's mc_bcast (which phases, MC_MAX_SIZE)
 *  - ucg_mc.exact: bcast of several sizes (one fragment, fragment
 *    boundaries, many fragments) from leaders and non-leaders, allreduce
 *    whose plans broadcast between leaders (knomial, non-commutative),
 *    allgather and barrier, every result checked against the reference;
 *    the mc_udp counters show that the leaders carried the data by
 *    multicast and that a member that never leads sent and got nothing
 *  - ucg_mc.refused: one leader cannot create its group endpoint (its
 *    multicast port is taken): every bcast whose set includes it runs
 *    point-to-point on every member of the set, results exact, and it
 *    never sends on mc_udp; a set without it still multicasts
 *  - ucg_mc.kill_*: a leader (the root's, or another) killed during a
 *    1 MiB bcast: every survivor completes it exactly or fails, within a
 *    bound, and a later collective fails on every survivor (no hang)
 *
 * Skipped when multicast on the loopback device does not work here.
 */
#include "common/harness.h"
#include "common/multicast.h"
#include "common/ucg_harness.h"

extern "C" {
#include "ucg_mc.h"
#include "ucg_plan.h"
}

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <random>

using namespace ucg_test;

namespace {

/* A multicast port of this run: other jobs may run the tests at once */
std::string random_port()
{
    std::random_device rd;
    return std::to_string(20000 + (rd() % 30000));
}

env_t mc_env()
{
    env_t env;

    env["UCX_UCG_HOSTS"]         = "2";   /* 3 virtual hosts of 2 */
    env["UCX_UCG_MC"]            = "yes";
    env["UCX_UCG_MC_DEVICE"]     = "lo";
    /* Multicast at every size of the tests, not only up to the default */
    env["UCX_UCG_MC_MAX_SIZE"]   = "inf";
    env["UCX_MC_UDP_MCAST_PORT"] = random_port();
    return env;
}

bool skip_without_multicast()
{
    std::string why;

    if (o2m_test::loopback_multicast_works(&why)) {
        return false;
    }
    printf("[ SKIP     ] multicast on the loopback device does not work "
           "here: %s\n", why.c_str());
    return true;
}

struct counters_shared {
    uct_mc_udp_counters_t cnt[8];
};

void read_counters(member &m)
{
    auto *sh = static_cast<counters_shared*>(m.shared);

    CHILD_CHECK_OK(ucg_mc_counters(m.context, &sh->cnt[m.rank]));
}

} // namespace


/* Methods of the plan of @a key on 8 ranks, 4 hosts of 2 */
static std::vector<ucg_phase_method_t>
plan_methods(const char *env_prefix, const ucg_plan_key_t &key, int mc)
{
    std::vector<uint64_t> labels = {0, 0, 1, 1, 2, 2, 3, 3};
    std::vector<ucg_phase_method_t> methods;
    ucg_config_t *config;
    ucg_plan_t *plan;
    ucg_topo_t topo;

    EXPECT_EQ(UCS_OK, ucg_config_read(env_prefix, &config));
    EXPECT_EQ(UCS_OK, ucg_topo_init(&topo, labels.size(), labels.data(), 1,
                                    8240));
    topo.mc = mc;
    EXPECT_EQ(UCS_OK, ucg_plan_create(config, &topo, &key, &plan));
    for (unsigned i = 0; i < plan->num_phases; ++i) {
        methods.push_back(plan->phases[i].method);
    }
    ucg_plan_destroy(plan);
    ucg_topo_cleanup(&topo);
    ucg_config_release(config);
    return methods;
}

TEST(ucg_mc, plans)
{
    typedef std::vector<ucg_phase_method_t> m_t;
    ucg_plan_key_t key = {};

    key.type     = UCG_COLL_BCAST;
    key.root     = 3;
    key.op       = UCG_OP_LAST;
    key.dtype    = UCG_DT_UINT8;
    key.msg_size = 100;
    EXPECT_EQ((m_t{UCG_PHASE_MC_BCAST, UCG_PHASE_SM_BCAST}),
              plan_methods("GTESTUCGMC", key, 1));
    EXPECT_EQ((m_t{UCG_PHASE_P2P_BCAST, UCG_PHASE_SM_BCAST}),
              plan_methods("GTESTUCGMC", key, 0));

    /* The default bound: multicast up to 4 KiB, point-to-point above */
    key.msg_size = 4096;
    EXPECT_EQ((m_t{UCG_PHASE_MC_BCAST, UCG_PHASE_SM_BCAST}),
              plan_methods("GTESTUCGMC", key, 1));
    key.msg_size = 4097;
    EXPECT_EQ((m_t{UCG_PHASE_P2P_BCAST, UCG_PHASE_SM_BCAST}),
              plan_methods("GTESTUCGMC", key, 1));
    key.msg_size = 100;

    /* Above MC_MAX_SIZE: point-to-point between leaders */
    setenv("GTESTUCGMC2_UCG_MC_MAX_SIZE", "64", 1);
    EXPECT_EQ((m_t{UCG_PHASE_P2P_BCAST, UCG_PHASE_SM_BCAST}),
              plan_methods("GTESTUCGMC2", key, 1));
    key.msg_size = 64;
    EXPECT_EQ((m_t{UCG_PHASE_MC_BCAST, UCG_PHASE_SM_BCAST}),
              plan_methods("GTESTUCGMC2", key, 1));
    unsetenv("GTESTUCGMC2_UCG_MC_MAX_SIZE");

    /* The broadcast half of a knomial allreduce */
    key.type     = UCG_COLL_ALLREDUCE;
    key.root     = 0;
    key.op       = UCG_OP_SUM;
    key.dtype    = UCG_DT_INT32;
    key.commutative = 1;
    key.msg_size = 400;
    setenv("GTESTUCGMC3_UCG_ALLREDUCE_P2P", "knomial", 1);
    EXPECT_EQ((m_t{UCG_PHASE_SM_REDUCE, UCG_PHASE_P2P_REDUCE,
                   UCG_PHASE_MC_BCAST, UCG_PHASE_SM_BCAST}),
              plan_methods("GTESTUCGMC3", key, 1));
    unsetenv("GTESTUCGMC3_UCG_ALLREDUCE_P2P");

    /* Recursive doubling, barrier: no broadcast between leaders */
    for (ucg_phase_method_t m : plan_methods("GTESTUCGMC", key, 1)) {
        EXPECT_NE(UCG_PHASE_MC_BCAST, m);
    }
    key.type     = UCG_COLL_BARRIER;
    key.op       = UCG_OP_LAST;
    key.msg_size = 0;
    for (ucg_phase_method_t m : plan_methods("GTESTUCGMC", key, 1)) {
        EXPECT_NE(UCG_PHASE_MC_BCAST, m);
    }
}

TEST(ucg_mc, exact)
{
    if (skip_without_multicast()) {
        GTEST_SKIP();
    }

    const size_t sizes[] = {1, 100, 8176, 8177, 3 * 8176 + 5, 65536,
                            300000, 1 << 20};
    const unsigned roots[] = {0, 1, 3, 4};
    counters_shared counters;
    run_opts opts;

    opts.env         = mc_env();
    opts.shared_size = sizeof(counters_shared);
    opts.parent_done = [&](const void *shared) {
        memcpy(&counters, shared, sizeof(counters));
    };

    run_ok(6, opts, [&](member &m) {
        uint64_t seed = 1;

        for (unsigned root : roots) {
            for (size_t size : sizes) {
                coll_desc d(UCG_COLL_BCAST, size, UCG_DT_UINT8, UCG_OP_LAST,
                            root);
                d.seed = seed++;
                run_coll(m, d);
                run_coll(m, d); /* the endpoint is cached */
            }
        }

        /* gather to rank 0, fold, bcast between leaders */
        for (size_t count : {1, 100, 3000}) {
            coll_desc d(UCG_COLL_ALLREDUCE, count, UCG_DT_BYTES, UCG_OP_USER);
            d.dt_size = 16;
            d.user    = USER_OP_MAT2;
            d.seed    = seed++;
            run_coll(m, d);
        }
        for (size_t count : {1, 1000, 70000}) {
            coll_desc d(UCG_COLL_ALLGATHER, count / 10 + 1, UCG_DT_INT32);
            d.seed = seed++;
            run_coll(m, d);
        }
        run_coll(m, coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8));
        read_counters(m);
    }, "mc exact");

    /* Leaders (0, 2, 4; 1 and 3 when they are the root) sent and got
     * data by multicast; 5 never leads: no mc_udp traffic at all */
    for (unsigned r : {0u, 1u, 2u, 3u, 4u}) {
        EXPECT_GT(counters.cnt[r].tx_packets, 0u) << "rank " << r;
        EXPECT_GT(counters.cnt[r].rx_packets, 0u) << "rank " << r;
    }
    EXPECT_EQ(0u, counters.cnt[5].tx_packets);
    EXPECT_EQ(0u, counters.cnt[5].rx_packets);
    /* The 1 MiB bcasts alone are more than 700 datagrams per leader */
    EXPECT_GT(counters.cnt[2].rx_packets, 4u * 700u);
}

/* allreduce with ALLREDUCE_P2P=knomial: reduce, then bcast between leaders */
TEST(ucg_mc, allreduce_knomial)
{
    if (skip_without_multicast()) {
        GTEST_SKIP();
    }

    counters_shared counters;
    run_opts opts;

    opts.env = mc_env();
    opts.env["UCX_UCG_ALLREDUCE_P2P"] = "knomial";
    opts.shared_size = sizeof(counters_shared);
    opts.parent_done = [&](const void *shared) {
        memcpy(&counters, shared, sizeof(counters));
    };

    run_ok(6, opts, [&](member &m) {
        uint64_t seed = 100;

        for (size_t count : {1, 2048, 100000}) {
            for (ucg_dtype_t dt : {UCG_DT_INT32, UCG_DT_DOUBLE}) {
                coll_desc d(UCG_COLL_ALLREDUCE, count, dt, UCG_OP_SUM);
                d.seed = seed++;
                run_coll(m, d);
                d.in_place = true;
                run_coll(m, d);
            }
        }
        read_counters(m);
    }, "mc allreduce knomial");

    EXPECT_GT(counters.cnt[0].tx_packets, 0u);
    EXPECT_GT(counters.cnt[2].rx_packets, 0u);
    EXPECT_GT(counters.cnt[4].rx_packets, 0u);
}

/*
 * Rank 2 (leader of the second host) cannot create mc_udp member
 * endpoints: its multicast port is held by a socket without SO_REUSEADDR.
 * Bcasts from rank 0 (rank 2 a member) run point-to-point on every leader,
 * again when the refusal is cached.  (A root binds no multicast port, so
 * rank 2 could root a group; it is not asked to: the port it was given
 * differs from the other ranks'.)
 */
TEST(ucg_mc, refused)
{
    if (skip_without_multicast()) {
        GTEST_SKIP();
    }

    counters_shared counters;
    run_opts opts;
    int blocker = -1;

    opts.env         = mc_env();
    opts.shared_size = sizeof(counters_shared);
    opts.parent_done = [&](const void *shared) {
        memcpy(&counters, shared, sizeof(counters));
    };
    opts.pre_init = [&](unsigned rank) {
        struct sockaddr_in sa = {};
        socklen_t len = sizeof(sa);

        if (rank != 2) {
            return;
        }
        blocker          = socket(AF_INET, SOCK_DGRAM, 0);
        sa.sin_family    = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_ANY);
        CHILD_CHECK((blocker >= 0) &&
                    !bind(blocker, (struct sockaddr*)&sa, sizeof(sa)) &&
                    !getsockname(blocker, (struct sockaddr*)&sa, &len),
                    "blocker socket: %m");
        setenv("UCX_MC_UDP_MCAST_PORT",
               std::to_string(ntohs(sa.sin_port)).c_str(), 1);
    };

    run_ok(6, opts, [&](member &m) {
        uint64_t seed = 200;

        for (unsigned i = 0; i < 2; ++i) {
            for (unsigned root : {0u, 3u}) {
                for (size_t size : {8, 20000, 200000}) {
                    coll_desc d(UCG_COLL_BCAST, size, UCG_DT_UINT8,
                                UCG_OP_LAST, root);
                    d.seed = seed++;
                    run_coll(m, d);
                }
            }
        }
        read_counters(m);
    }, "mc refused");

    EXPECT_EQ(0u, counters.cnt[2].tx_packets);
    /* Rank 3's bcasts (it leads its host then) do not involve rank 2:
     * multicast */
    EXPECT_GT(counters.cnt[3].tx_packets, 0u);
}


/* ---- a leader killed in the middle of a bcast ---- */

void kill_leader_test(unsigned victim)
{
    const double bound = 10.0; /* slack on a loaded machine */
    const coll_desc desc(UCG_COLL_BCAST, 1 << 20, UCG_DT_UINT8, UCG_OP_LAST,
                         0);
    std::string label = "mc kill rank " + std::to_string(victim) +
                        " in " + desc.str();
    run_opts opts;

    opts.env = mc_env();
    opts.env["UCX_UCG_CHECK_INTERVAL"] = "100ms";
    /* UCX 1.13's own failures on a dead peer (docs/ucg.md, Failures) */
    opts.env["UCX_RNDV_THRESH"]  = "inf";
    opts.env["UCX_ZCOPY_THRESH"] = "inf";
    opts.final_barrier = false;
    opts.timeout       = 90;
    opts.shared_size   = sizeof(kill_shared);

    std::vector<int> status = run(6, opts, [&](member &m) {
        kill_shared *sh = static_cast<kill_shared*>(m.shared);
        ucs_status_t st;
        ucg_coll_h coll;

        run_coll(m, desc); /* connections and the mc_udp group exist */
        m.procs->barrier(m.rank);

        coll_bufs bufs(desc, m.rank, m.size);
        ucg_coll_params_t params = bufs.params();
        CHILD_CHECK_OK(ucg_coll_init(m.group, &params, &coll));
        CHILD_CHECK_OK(ucg_coll_start(coll));
        if (m.rank == victim) {
            die_in_coll(coll, sh);
        }

        st = wait_coll(coll, label, bound + 20);
        check_end_after_kill(m, st, o2m_test::now_sec(), bufs, label, victim,
                             bound, true);
        ucg_coll_finalize(coll);

        /* a later bcast fails on every survivor, no hang */
        coll_desc d2 = desc;
        d2.count     = 1000;
        check_coll_fails(m, d2, label, "bcast", bound + 20);
    }, label);

    o2m_test::expect_only_killed(status, victim, label);
}

TEST(ucg_mc, kill_root_leader)
{
    if (skip_without_multicast()) {
        GTEST_SKIP();
    }
    kill_leader_test(0);
}

TEST(ucg_mc, kill_member_leader)
{
    if (skip_without_multicast()) {
        GTEST_SKIP();
    }
    kill_leader_test(2);
}
