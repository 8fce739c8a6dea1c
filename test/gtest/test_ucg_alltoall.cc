/**
 * ucx-o2m tests: UCG alltoall and alltoallv beyond the collective matrix
 * (test_ucg_coll.cc, which runs both at every size, in place or not, on
 * every configuration): their plans, bad arguments (one log line each), a
 * peer that sends another count than the receiver expects (the collective
 * fails there, nothing is written past the receive block), the arrays
 * copied by ucg_coll_init, persistent and outstanding collectives.
 */
#include "common/harness.h"
#include "common/ucg_harness.h"
#include "common/log_capture.h"

extern "C" {
#include "ucg_config.h"
#include "ucg_plan.h"
#include "ucg_def.h"
}

#include <climits>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>

using namespace ucg_test;
using o2m_test::scoped_log_capture;

namespace {

/* A prefix nobody sets: the defaults, and what a test modifies */
const char *const ENV_PREFIX = "GTESTUCGA2A_";

struct plan_env {
    ucg_config_t *config = NULL;
    ucg_topo_t   topo;

    /* @a n ranks on hosts of @a ppn */
    plan_env(unsigned n, unsigned ppn)
    {
        std::vector<uint64_t> labels(n);

        for (unsigned r = 0; r < n; ++r) {
            labels[r] = r / ppn;
        }
        EXPECT_EQ(UCS_OK, ucg_config_read(ENV_PREFIX, &config));
        EXPECT_EQ(UCS_OK, ucg_topo_init(&topo, n, labels.data(), 1, 8240));
    }

    ~plan_env()
    {
        ucg_topo_cleanup(&topo);
        ucg_config_release(config);
    }

    /* The only phase of the plan (every plan of these is one phase of
     * all ranks), and its size range */
    ucg_phase_method_t method(ucg_coll_type_t type, size_t msg_size,
                              size_t *min_p = NULL, size_t *max_p = NULL)
    {
        ucg_plan_key_t key;
        ucg_plan_t *plan = NULL;
        ucg_phase_method_t m;

        memset(&key, 0, sizeof(key));
        key.type     = type;
        key.msg_size = msg_size;
        key.dtype    = UCG_DT_UINT8;
        key.op       = UCG_OP_LAST;
        key.dt_size  = 1;
        EXPECT_EQ(UCS_OK, ucg_plan_create(config, &topo, &key, &plan));
        if (plan == NULL) {
            return UCG_PHASE_LAST;
        }

        EXPECT_FALSE(plan->hier);
        EXPECT_EQ(1u, plan->num_phases);
        EXPECT_EQ(1u, plan->phases[0].num_sets);
        EXPECT_EQ(topo.size, plan->phases[0].sets[0].count);
        m = plan->phases[0].method;
        if (min_p != NULL) {
            *min_p = plan->size_min;
            *max_p = plan->size_max;
        }
        ucg_plan_destroy(plan);
        return m;
    }
};

} // namespace


/* Linear by default at every size (ALLTOALL_PAIRWISE_THRESH inf); with a
 * threshold (64 KiB per pair), pairwise from it with more than 2 members;
 * alltoallv linear; never host-local (hosts of 4 members); the variables
 * force either */
TEST(ucg_alltoall, plan)
{
    plan_env env(8, 4);
    size_t lo, hi;

    EXPECT_EQ(UCG_PHASE_P2P_ALLTOALL_LINEAR,
              env.method(UCG_COLL_ALLTOALL, SIZE_MAX / 8, &lo, &hi));
    EXPECT_EQ(0u, lo);
    EXPECT_EQ(SIZE_MAX, hi);
    EXPECT_EQ(UCS_OK, ucg_config_modify(env.config,
                                        "ALLTOALL_PAIRWISE_THRESH", "64k"));
    EXPECT_EQ(UCG_PHASE_P2P_ALLTOALL_LINEAR,
              env.method(UCG_COLL_ALLTOALL, 8, &lo, &hi));
    EXPECT_EQ(0u, lo);
    EXPECT_EQ(65535u, hi);
    EXPECT_EQ(UCG_PHASE_P2P_ALLTOALL_PAIRWISE,
              env.method(UCG_COLL_ALLTOALL, 65536, &lo, &hi));
    EXPECT_EQ(65536u, lo);
    EXPECT_EQ(SIZE_MAX, hi);
    EXPECT_EQ(UCG_PHASE_P2P_ALLTOALL_LINEAR,
              env.method(UCG_COLL_ALLTOALLV, 0));

    EXPECT_EQ(UCS_OK, ucg_config_modify(env.config, "ALLTOALL_P2P",
                                        "linear"));
    EXPECT_EQ(UCS_OK, ucg_config_modify(env.config, "ALLTOALLV_P2P",
                                        "pairwise"));
    EXPECT_EQ(UCS_OK, ucg_config_check(env.config));
    EXPECT_EQ(UCG_PHASE_P2P_ALLTOALL_LINEAR,
              env.method(UCG_COLL_ALLTOALL, 1 << 20));
    EXPECT_EQ(UCG_PHASE_P2P_ALLTOALL_PAIRWISE,
              env.method(UCG_COLL_ALLTOALLV, 0));

    /* a method of another collective is refused, with one line */
    EXPECT_EQ(UCS_OK, ucg_config_modify(env.config, "ALLTOALL_P2P", "ring"));
    {
        scoped_log_capture log;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_config_check(env.config));
        EXPECT_EQ(1u, log.lines().size()) << log.all();
        EXPECT_TRUE(log.has("ALLTOALL_P2P")) << log.all();
    }
}

TEST(ucg_alltoall, plan_two_members)
{
    plan_env env(2, 2);
    size_t lo, hi;

    /* one exchange either way: no size range */
    EXPECT_EQ(UCG_PHASE_P2P_ALLTOALL_LINEAR,
              env.method(UCG_COLL_ALLTOALL, 1 << 20, &lo, &hi));
    EXPECT_EQ(0u, lo);
    EXPECT_EQ(SIZE_MAX, hi);
    EXPECT_EQ(UCS_OK, ucg_config_modify(env.config,
                                        "ALLTOALL_PAIRWISE_THRESH", "0"));
    EXPECT_EQ(UCG_PHASE_P2P_ALLTOALL_LINEAR,
              env.method(UCG_COLL_ALLTOALL, 1 << 20));
    plan_env env3(3, 1);
    EXPECT_EQ(UCS_OK, ucg_config_modify(env3.config,
                                        "ALLTOALL_PAIRWISE_THRESH", "0"));
    EXPECT_EQ(UCG_PHASE_P2P_ALLTOALL_PAIRWISE,
              env3.method(UCG_COLL_ALLTOALL, 8));
}

TEST(ucg_alltoall, bad_args)
{
    run_opts opts;

    opts.timeout = 60;
    run_ok(2, opts, [](member &m) {
        std::vector<int32_t> sbuf(100), rbuf(100);
        std::vector<size_t> sc(m.size, 4), sd(m.size), rc(m.size, 4),
                            rd(m.size);
        ucg_coll_params_t p;
        unsigned n = 0;

        for (unsigned i = 0; i < m.size; ++i) {
            sd[i] = rd[i] = 10 * i;
        }

        /* ucg_coll_init refuses @a p with UCS_ERR_INVALID_PARAM and one
         * log line containing @a text */
        auto invalid = [&](const ucg_coll_params_t &p, const char *what,
                           const char *text) {
            scoped_log_capture log;
            ucg_coll_h coll = NULL;
            ucs_status_t status = ucg_coll_init(m.group, &p, &coll);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                        "rank %u: ucg_coll_init(%s) returned %s", m.rank,
                        what, ucs_status_string(status));
            CHILD_CHECK((log.lines().size() == 1) && log.has(text),
                        "rank %u: %s: expected one line with '%s', got: %s",
                        m.rank, what, text, log.all().c_str());
            ++n;
        };
        auto base = [&](ucg_coll_type_t type) {
            ucg_coll_params_t p;
            memset(&p, 0, sizeof(p));
            p.type  = type;
            p.sbuf  = sbuf.data();
            p.rbuf  = rbuf.data();
            p.count = 4;
            p.dtype = UCG_DT_INT32;
            if (type == UCG_COLL_ALLTOALLV) {
                p.scounts = sc.data();
                p.sdispls = sd.data();
                p.rcounts = rc.data();
                p.rdispls = rd.data();
            }
            return p;
        };

        /* the valid ones are valid */
        for (auto t : {UCG_COLL_ALLTOALL, UCG_COLL_ALLTOALLV}) {
            ucg_coll_h coll;
            p = base(t);
            CHILD_CHECK(ucg_coll_init(m.group, &p, &coll) == UCS_OK,
                        "rank %u: valid %s refused", m.rank,
                        ucg_coll_name(t));
            ucg_coll_finalize(coll);
        }

        p = base(UCG_COLL_ALLTOALL);
        p.count = SIZE_MAX / 4;
        invalid(p, "alltoall count overflow", "overflow");
        p = base(UCG_COLL_ALLTOALL);
        p.rbuf = UCG_IN_PLACE;
        invalid(p, "alltoall rbuf in place", "UCG_IN_PLACE");
        p = base(UCG_COLL_ALLTOALL);
        p.rbuf = NULL;
        invalid(p, "alltoall rbuf NULL", "NULL buffer");
        p = base(UCG_COLL_ALLTOALL);
        p.sbuf = NULL;
        invalid(p, "alltoall sbuf NULL", "NULL buffer");

        p = base(UCG_COLL_ALLTOALLV);
        p.rbuf = UCG_IN_PLACE;
        invalid(p, "alltoallv rbuf in place", "UCG_IN_PLACE");
        p = base(UCG_COLL_ALLTOALLV);
        p.scounts = NULL;
        invalid(p, "alltoallv scounts NULL", "scounts is NULL");
        p = base(UCG_COLL_ALLTOALLV);
        p.sdispls = NULL;
        invalid(p, "alltoallv sdispls NULL", "sdispls is NULL");
        p = base(UCG_COLL_ALLTOALLV);
        p.rcounts = NULL;
        invalid(p, "alltoallv rcounts NULL", "rcounts is NULL");
        p = base(UCG_COLL_ALLTOALLV);
        p.rdispls = NULL;
        p.sbuf    = UCG_IN_PLACE;
        invalid(p, "alltoallv in place, rdispls NULL", "rdispls is NULL");
        p = base(UCG_COLL_ALLTOALLV);
        p.rbuf = NULL;
        invalid(p, "alltoallv rbuf NULL", "NULL buffer");
        p = base(UCG_COLL_ALLTOALLV);
        p.sbuf = NULL;
        invalid(p, "alltoallv sbuf NULL", "NULL buffer");

        /* displacement + count of int32 past SIZE_MAX bytes */
        std::vector<size_t> big(m.size, SIZE_MAX / 4 - 1);
        p = base(UCG_COLL_ALLTOALLV);
        p.sdispls = big.data();
        invalid(p, "alltoallv sdispls overflow", "sdispls[0]");
        p = base(UCG_COLL_ALLTOALLV);
        p.rdispls = big.data();
        invalid(p, "alltoallv rdispls overflow", "rdispls[0]");
        std::vector<size_t> huge(m.size, SIZE_MAX);
        p = base(UCG_COLL_ALLTOALLV);
        p.rcounts = huge.data();
        invalid(p, "alltoallv rcounts SIZE_MAX", "overflow");

        /* what a member sends itself is what it receives from itself */
        std::vector<size_t> sc2 = sc;
        sc2[m.rank] = 3;
        p = base(UCG_COLL_ALLTOALLV);
        p.scounts = sc2.data();
        invalid(p, "alltoallv own block", "sends itself 3");

        /* in place, the send arrays are ignored (may be NULL) */
        {
            ucg_coll_h coll;
            p = base(UCG_COLL_ALLTOALLV);
            p.sbuf    = UCG_IN_PLACE;
            p.scounts = NULL;
            p.sdispls = NULL;
            CHILD_CHECK(ucg_coll_init(m.group, &p, &coll) == UCS_OK,
                        "rank %u: in-place alltoallv without send arrays "
                        "refused", m.rank);
            ucg_coll_finalize(coll);
        }
        CHILD_CHECK(n == 15, "rank %u: %u refusals", m.rank, n);
    });
}

/*
 * A peer that sends another count than a member expects: the member's
 * collective fails with UCS_ERR_MESSAGE_TRUNCATED and one log line giving
 * both lengths, nothing is written past the block it expects (a gap
 * element after each block stays), and no member waits forever (the others
 * complete, or fail by the first one's abort).  Longer and shorter, on a
 * group each (a failed collective fails the group's later ones).
 */
TEST(ucg_alltoall, wrong_count)
{
    run_opts opts;

    opts.timeout = 120;
    run_ok(3, opts, [](member &m) {
        struct {
            ucg_coll_type_t type;
            size_t          bad;     /* what rank 1 sends rank 0 */
            const char      *line;
        } cases[] = {
            {UCG_COLL_ALLTOALLV, 5,
             "more than the expected 16 bytes from rank 1"},
            {UCG_COLL_ALLTOALLV, 3,
             "received 12 bytes, expected 16"},
            /* alltoall: rank 1 has count 5, every block is off */
            {UCG_COLL_ALLTOALL, 5, "expected"}
        };

        for (auto &c : cases) {
            ucg_group_h group = create_group(m);
            const unsigned n  = m.size, blk = 6; /* 4 used, 2 gap */
            std::vector<int32_t> sbuf(n * blk, (int32_t)m.rank),
                                 rbuf(n * blk, -1);
            std::vector<size_t> sc(n, 4), sd(n), rc(n, 4), rd(n);
            ucg_coll_params_t p;
            ucg_coll_h coll;
            ucs_status_t status;

            for (unsigned i = 0; i < n; ++i) {
                sd[i] = rd[i] = blk * i;
            }
            if ((m.rank == 1) && (c.type == UCG_COLL_ALLTOALLV)) {
                sc[0] = c.bad;
            }

            memset(&p, 0, sizeof(p));
            p.type  = c.type;
            p.sbuf  = sbuf.data();
            p.rbuf  = rbuf.data();
            p.dtype = UCG_DT_INT32;
            if (c.type == UCG_COLL_ALLTOALLV) {
                p.scounts = sc.data();
                p.sdispls = sd.data();
                p.rcounts = rc.data();
                p.rdispls = rd.data();
            } else {
                /* blocks of blk elements, of which count are sent */
                p.count = (m.rank == 1) ? c.bad : 4;
                sbuf.assign(n * 5, (int32_t)m.rank);
                rbuf.assign(n * 5 + 2, -1);
            }

            scoped_log_capture log;
            CHILD_CHECK(ucg_coll_init(group, &p, &coll) == UCS_OK,
                        "rank %u: init", m.rank);
            CHILD_CHECK(ucg_coll_start(coll) == UCS_OK, "rank %u: start",
                        m.rank);
            status = wait_coll(coll, "wrong count");
            ucg_coll_finalize(coll);

            if (c.type == UCG_COLL_ALLTOALLV) {
                if (m.rank == 0) {
                    CHILD_CHECK(status == UCS_ERR_MESSAGE_TRUNCATED,
                                "rank 0: %s instead of a truncation",
                                ucs_status_string(status));
                    CHILD_CHECK(log.has(c.line), "rank 0: no line '%s': %s",
                                c.line, log.all().c_str());
                    size_t n_lines = 0;
                    for (const std::string &l : log.lines()) {
                        n_lines += (l.find("expected") != std::string::npos);
                    }
                    CHILD_CHECK(n_lines == 1, "rank 0: %zu length lines: "
                                "%s", n_lines, log.all().c_str());
                    /* the gaps after each block are untouched */
                    for (unsigned i = 0; i < n; ++i) {
                        CHILD_CHECK((rbuf[blk * i + 4] == -1) &&
                                    (rbuf[blk * i + 5] == -1),
                                    "rank 0: written past block %u", i);
                    }
                } else {
                    CHILD_CHECK((status == UCS_OK) ||
                                (status == UCS_ERR_CANCELED),
                                "rank %u: %s", m.rank,
                                ucs_status_string(status));
                }
            } else {
                /* every member has a peer with another count (or learns
                 * from another member's abort first) */
                CHILD_CHECK((status == UCS_ERR_MESSAGE_TRUNCATED) ||
                            (status == UCS_ERR_CANCELED),
                            "rank %u: %s instead of a truncation", m.rank,
                            ucs_status_string(status));
                CHILD_CHECK((status != UCS_ERR_MESSAGE_TRUNCATED) ||
                            log.has("expected"), "rank %u: no length line: "
                            "%s", m.rank, log.all().c_str());
                CHILD_CHECK((rbuf[n * 5] == -1) && (rbuf[n * 5 + 1] == -1),
                            "rank %u: written past the receive buffer",
                            m.rank);
            }

            /* nobody waits for anyone before the group goes */
            m.procs->barrier(m.rank);
            ucg_group_destroy(group);
        }
    });
}

/*
 * Persistent collectives (init once, start many times with new data), the
 * arrays the caller passed to ucg_coll_init overwritten after it (UCG
 * copied them), and an alltoall and an alltoallv outstanding at once on
 * two groups, in place or not.
 */
TEST(ucg_alltoall, persistent_outstanding)
{
    run_opts opts;

    opts.timeout = 180;
    run_ok(4, opts, [](member &m) {
        ucg_group_h g2 = create_group(m);

        for (int in_place = 0; in_place < 2; ++in_place) {
            coll_desc da(UCG_COLL_ALLTOALL, 1000, UCG_DT_INT32, UCG_OP_LAST,
                         0, in_place);
            coll_desc dv(UCG_COLL_ALLTOALLV, 777, UCG_DT_BYTES, UCG_OP_LAST,
                         0, in_place);
            dv.dt_size = 3;
            da.seed    = 1;
            dv.seed    = 2;

            coll_bufs ba(da, m.rank, m.size), bv(dv, m.rank, m.size);
            ucg_coll_params_t pa = ba.params(), pv = bv.params();
            std::vector<size_t> arrays[4];
            const size_t **ptrs[4] = {&pv.scounts, &pv.sdispls, &pv.rcounts,
                                      &pv.rdispls};
            ucg_coll_h ca, cv;

            /* the caller's own arrays, clobbered after init */
            for (unsigned i = 0; i < 4; ++i) {
                arrays[i].assign(*ptrs[i], *ptrs[i] + m.size);
                *ptrs[i] = arrays[i].data();
            }
            CHILD_CHECK(ucg_coll_init(m.group, &pa, &ca) == UCS_OK,
                        "rank %u: init alltoall", m.rank);
            CHILD_CHECK(ucg_coll_init(g2, &pv, &cv) == UCS_OK,
                        "rank %u: init alltoallv", m.rank);
            for (unsigned i = 0; i < 4; ++i) {
                arrays[i].assign(m.size, SIZE_MAX);
            }

            for (unsigned it = 0; it < 5; ++it) {
                std::string label = m.label + " iteration " +
                                    std::to_string(it) +
                                    (in_place ? " in place" : "");
                da.seed = 10 * it + 1;
                dv.seed = 10 * it + 2;
                ba.fill(da);
                bv.fill(dv);
                /* in the other order on every other member */
                if ((m.rank + it) % 2) {
                    CHILD_CHECK(ucg_coll_start(cv) == UCS_OK, "start v");
                    CHILD_CHECK(ucg_coll_start(ca) == UCS_OK, "start");
                } else {
                    CHILD_CHECK(ucg_coll_start(ca) == UCS_OK, "start");
                    CHILD_CHECK(ucg_coll_start(cv) == UCS_OK, "start v");
                }
                CHILD_CHECK(wait_coll(ca, label) == UCS_OK,
                            "rank %u: alltoall failed", m.rank);
                CHILD_CHECK(wait_coll(cv, label) == UCS_OK,
                            "rank %u: alltoallv failed", m.rank);
                ba.check(label + ": " + da.str());
                bv.check(label + ": " + dv.str());
            }
            ucg_coll_finalize(ca);
            ucg_coll_finalize(cv);
        }

        m.procs->barrier(m.rank);
        ucg_group_destroy(g2);
    });
}

namespace {

/*
 * Member @a victim dies (SIGKILL) in an alltoall or alltoallv after a
 * little progress, or before the others start it (@a late): a survivor's
 * collective completes with the right data (what it needed had arrived)
 * or fails within the liveness check's bound (generous, against hangs);
 * nobody waits.
 */
void a2a_kill(ucg_coll_type_t type, unsigned victim, bool late)
{
    const double bound = 0.1 + 5.0; /* CHECK_INTERVAL, slack under load */
    std::string label  = std::string(ucg_coll_name(type)) + " kill rank " +
                         std::to_string(victim) +
                         (late ? " (others start late)" : "");
    run_opts opts;

    opts.env["UCX_UCG_CHECK_INTERVAL"] = "100ms";
    /* eager sends: UCX 1.13's cma rendezvous aborts the process when its
     * peer dies in a get (UCX's own, not tested here) */
    opts.env["UCX_RNDV_THRESH"] = "inf";
    opts.final_barrier = false;
    opts.timeout       = 60;
    opts.shared_size   = sizeof(kill_shared);

    std::vector<int> status = run(3, opts, [&](member &m) {
        kill_shared *sh = static_cast<kill_shared*>(m.shared);
        coll_desc d(type, 300, UCG_DT_INT32);
        ucg_coll_params_t p;
        ucg_coll_h coll;
        ucs_status_t st;
        double kill_time;

        /* connections established, everyone alive */
        d.seed = 1;
        run_coll(m, d);
        m.procs->barrier(m.rank);

        d.seed = 2;
        coll_bufs b(d, m.rank, m.size);
        p = b.params();
        CHILD_CHECK(ucg_coll_init(m.group, &p, &coll) == UCS_OK, "init");
        if (late && (m.rank != victim)) {
            double deadline = o2m_test::now_sec() + 30;
            do {
                CHILD_CHECK(o2m_test::now_sec() < deadline,
                            "the victim did not die");
                usleep(1000);
                __atomic_load(&sh->kill_time, &kill_time, __ATOMIC_SEQ_CST);
            } while (kill_time == 0);
            usleep(100000);
        }

        CHILD_CHECK(ucg_coll_start(coll) == UCS_OK, "start");
        if (m.rank == victim) {
            die_in_coll(coll, sh);
        }

        st = wait_coll(coll, label, bound + 10);
        check_end_after_kill(m, st, o2m_test::now_sec(), b, label, victim,
                             bound, false);
        ucg_coll_finalize(coll);
    }, label);

    o2m_test::expect_only_killed(status, victim, label);
}

} // namespace

TEST(ucg_alltoall, kill_member)
{
    a2a_kill(UCG_COLL_ALLTOALL, 1, false);
    a2a_kill(UCG_COLL_ALLTOALL, 0, true);
    a2a_kill(UCG_COLL_ALLTOALLV, 2, false);
    a2a_kill(UCG_COLL_ALLTOALLV, 1, true);
}
