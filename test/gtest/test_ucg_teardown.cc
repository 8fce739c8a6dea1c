/**
 * ucx-o2m tests: UCG groups with late and slow members, and teardown.
 *
 *  - with the default configuration, rank 0 starts its first collectives
 *    20.5 s late (twice the old PEER_TIMEOUT): as the root of a host-local
 *    bcast on one group and as a contributing member of a reduce on another;
 *    everything completes correctly (ucg_teardown.late_member)
 *  - rounds of: several groups created, one collective of each kind on each,
 *    members of very different speeds (sleeps injected), all destroyed at
 *    once; every result checked against the reference
 *    (ucg_teardown.create_use_destroy_rounds)
 *  - a member that exits after the last collective of a group: the group
 *    is destroyed without an error line; the next collective of another
 *    group it was in fails with one (ucg_teardown.left_after_last_coll)
 */
#include "common/harness.h"
#include "common/log_capture.h"
#include "common/ucg_harness.h"

extern "C" {
#include "ucg_group.h"
}

#include <random>

using namespace o2m_test;
using namespace ucg_test;

namespace {

/* One started collective with its buffers */
struct started_coll {
    coll_desc                  desc;
    std::unique_ptr<coll_bufs> bufs;
    ucg_coll_h                 coll;
    std::string                label;
};

void start_coll(member &m, ucg_group_h group, const coll_desc &d,
                const std::string &label, started_coll &s)
{
    ucg_coll_params_t params;

    s.desc  = d;
    s.label = label + ": " + d.str();
    s.bufs.reset(new coll_bufs(d, m.rank, m.size));
    params = s.bufs->params();
    CHILD_CHECK_OK(ucg_coll_init(group, &params, &s.coll));
    CHILD_CHECK_OK(ucg_coll_start(s.coll));
}

void finish_coll(started_coll &s, double timeout)
{
    ucs_status_t status = wait_coll(s.coll, s.label, timeout);

    CHILD_CHECK(status == UCS_OK, "%s: %s", s.label.c_str(),
                ucs_status_string(status));
    s.bufs->check(s.label);
    ucg_coll_finalize(s.coll);
}

} // namespace


/*
 * Rank 0 sleeps 20.5 s before its first collectives, default configuration:
 * it is the root of a host-local bcast on group A and a contributing member
 * of a reduce (root 1) on group B, both started at once; ranks 1 and 2 wait
 * for it.  Then one more collective on each group.
 */
TEST(ucg_teardown, late_member)
{
    const double late = 20.5;
    run_opts opts;

    opts.timeout = 120;
    run_ok(3, opts, [&](member &m) {
        ucg_group_h gb = create_group(m);
        started_coll a, b;

        CHILD_CHECK(m.group->topo.o2m && gb->topo.o2m, "rank %u: the groups "
                    "do not use the o2m transports", m.rank);
        m.procs->barrier(m.rank);
        if (m.rank == 0) {
            usleep((useconds_t)(late * 1e6));
        }

        start_coll(m, m.group, coll_desc(UCG_COLL_BCAST, 100, UCG_DT_UINT8,
                                         UCG_OP_LAST, 0), "late root", a);
        start_coll(m, gb, coll_desc(UCG_COLL_REDUCE, 64, UCG_DT_INT32,
                                    UCG_OP_SUM, 1), "late member", b);
        finish_coll(a, late + 30);
        finish_coll(b, late + 30);

        run_coll(m, m.group, coll_desc(UCG_COLL_ALLREDUCE, 16, UCG_DT_INT64,
                                       UCG_OP_SUM));
        run_coll(m, gb, coll_desc(UCG_COLL_BCAST, 1000, UCG_DT_UINT8,
                                  UCG_OP_LAST, 2));
        ucg_group_destroy(gb);
    });
}

/*
 * Rounds of: 3 groups created, one collective of each kind on each (roots
 * rotating), members napping at random before collectives and before the
 * destruction (now and then 20-60 ms: very different speeds), then all
 * groups destroyed at once.  Every result is checked.
 */
TEST(ucg_teardown, create_use_destroy_rounds)
{
    const unsigned rounds = 100, ngroups = 3;
    run_opts opts;

    opts.timeout = 170;
    run_ok(4, opts, [&](member &m) {
        std::mt19937 rng(m.rank * 104729 + 7);
        auto nap = [&]() {
            unsigned r = rng() % 32;
            if (r == 0) {
                usleep(20000 + (rng() % 40000));
            } else if (r < 8) {
                usleep(r * 300);
            }
        };

        for (unsigned round = 0; round < rounds; ++round) {
            std::vector<ucg_group_h> groups;

            for (unsigned g = 0; g < ngroups; ++g) {
                groups.push_back(create_group(m));
            }

            for (unsigned g = 0; g < ngroups; ++g) {
                unsigned root  = (round + g) % m.size;
                /* Rooted ones last: their roots finish (and destroy the
                 * groups) before the slow members have read everything */
                coll_desc descs[] = {
                    coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8),
                    coll_desc(UCG_COLL_ALLGATHER, 2, UCG_DT_UINT32),
                    coll_desc(UCG_COLL_ALLREDUCE, 4, UCG_DT_INT64,
                              UCG_OP_MAX),
                    coll_desc(UCG_COLL_GATHER, 3, UCG_DT_UINT16,
                              UCG_OP_LAST, (root + 2) % m.size),
                    coll_desc(UCG_COLL_REDUCE, 8, UCG_DT_INT32, UCG_OP_SUM,
                              (root + 1) % m.size),
                    coll_desc(UCG_COLL_BCAST, 40 + g, UCG_DT_UINT8,
                              UCG_OP_LAST, root)
                };

                for (coll_desc &d : descs) {
                    d.seed = round * 131 + g;
                    nap();
                    run_coll(m, groups[g], d);
                }
            }

            nap();
            for (ucg_group_h group : groups) {
                ucg_group_destroy(group);
            }
        }
    });
}

/*
 * Rank 2 runs the last collective of group B and of the harness's group A,
 * then exits.  Ranks 0 and 1 wait until it has exited, destroy B: no line
 * is logged (finished is not failed); then they start a barrier on A,
 * which fails with UCS_ERR_CONNECTION_RESET and one line naming rank 2 on
 * the member that finds it (the other's is cancelled by its abort).
 */
TEST(ucg_teardown, left_after_last_coll)
{
    run_opts opts;

    opts.final_barrier = false;
    opts.parent_done   = [](const void *shared) {
        const ucs_status_t *status = (const ucs_status_t*)shared;

        EXPECT_TRUE((status[0] == UCS_ERR_CONNECTION_RESET) ||
                    (status[1] == UCS_ERR_CONNECTION_RESET))
            << "ranks 0 and 1: " << ucs_status_string(status[0]) << ", "
            << ucs_status_string(status[1]);
    };
    run_ok(3, opts, [&](member &m) {
        ucg_group_h gb = create_group(m);
        unsigned *done = (unsigned*)((ucs_status_t*)m.shared + 4);
        double deadline;
        ucg_coll_params_t params;
        ucg_coll_h coll;
        ucs_status_t status;

        run_coll(m, gb, coll_desc(UCG_COLL_BCAST, 64, UCG_DT_UINT8,
                                  UCG_OP_LAST, 2));
        run_coll(m, m.group, coll_desc(UCG_COLL_ALLREDUCE, 8, UCG_DT_INT64,
                                       UCG_OP_SUM));
        if (m.rank == 2) {
            ucg_group_destroy(gb);
            return;
        }

        deadline = now_sec() + 60;
        while (!ucg_group_member_exited(m.group, 2)) {
            CHILD_CHECK(now_sec() < deadline, "rank %u: rank 2 has not "
                        "exited after 60 s", m.rank);
            usleep(1000);
        }

        {
            scoped_log_capture cap;

            ucg_progress(m.context);
            ucg_group_destroy(gb);
            CHILD_CHECK(cap.lines().empty(), "rank %u: destroying the group "
                        "rank 2 left after its last collective logged:\n%s",
                        m.rank, cap.all().c_str());
        }

        coll_bufs bufs(coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8), m.rank,
                       m.size);
        scoped_log_capture cap;
        params = bufs.params();
        CHILD_CHECK_OK(ucg_coll_init(m.group, &params, &coll));
        status = ucg_coll_start(coll);
        if (status == UCS_OK) {
            status = wait_coll(coll, "barrier without rank 2", 60);
        }
        ucg_coll_finalize(coll);
        ((ucs_status_t*)m.shared)[m.rank] = status;
        /* neither leaves while the other may still send it its abort */
        __atomic_add_fetch(done, 1, __ATOMIC_SEQ_CST);
        deadline = now_sec() + 60;
        while (__atomic_load_n(done, __ATOMIC_SEQ_CST) < 2) {
            CHILD_CHECK(now_sec() < deadline, "rank %u: the other survivor "
                        "did not finish its barrier", m.rank);
            ucg_progress(m.context);
            sched_yield();
        }
        if (status == UCS_ERR_CANCELED) {
            /* the other member found it first and aborted the barrier */
            CHILD_CHECK(cap.lines().size() <= 1, "rank %u: %s", m.rank,
                        cap.all().c_str());
            return;
        }

        CHILD_CHECK(status == UCS_ERR_CONNECTION_RESET, "rank %u: the barrier "
                    "without rank 2 ended with %s", m.rank,
                    ucs_status_string(status));
        CHILD_CHECK((cap.lines().size() == 1) &&
                    cap.has("rank 2 (pid ") && cap.has("has exited"),
                    "rank %u: expected one line naming rank 2, got:\n%s",
                    m.rank, cap.all().c_str());
    });
}
