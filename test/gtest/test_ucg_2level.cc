/**
 * ucx-o2m tests: the two-level host-local bcast (src/ucg/ucg_plan_2level.c)
 * run by processes, forced on small hosts with SM_BCAST_2LEVEL_PPN=2 (this
 * machine has 2 cores: every np above 2 is oversubscribed).
 *
 * - matrix: np 3..9, every root, sizes 0, 8 B, around the fragment
 *   boundaries and large (many fragments), results checked against the
 *   reference; between the bcasts, collectives whose sm_bcast sets are the
 *   whole host with the same roots (scatter, allreduce), so that an
 *   endpoint of a sub-group and one of the whole host rooted at the same
 *   member must be told apart.
 * - bad_leader: a sub-group leader whose count is smaller by whole
 *   fragments fails with UCS_ERR_MESSAGE_TRUNCATED, its sub-group fails
 *   instead of waiting, and the next collective fails on every member.
 * A killed leader: ucg_coll_errors.kill_bcast_2level_leader
 * (test_ucg_coll.cc); the plans: test_ucg_plan.sm_bcast_2level*.
 */
#include "common/harness.h"
#include "common/ucg_harness.h"

extern "C" {
#include "ucg_group.h"
#include "ucg_plan.h"
#include <ucs/config/global_opts.h>
}

#include <cstring>
#include <string>
#include <vector>

using namespace ucg_test;

namespace {

/* Fragments of 256 bytes: boundaries cheap to cross */
const size_t FRAG = 256;

env_t two_level_env(const char *hosts)
{
    env_t env;

    env["UCX_UCG_HOSTS"]               = hosts;
    env["UCX_UCG_SM_BCAST_2LEVEL_PPN"] = "2";
    env["UCX_UCG_SM_FRAG_SIZE"]        = std::to_string(FRAG);
    /* large bcasts stay on sm_bcast (not single-copy) */
    env["UCX_UCG_SM_BCAST_CMA_THRESH"] = "inf";
    return env;
}

/* The plan of a bcast of @a bytes from @a root, seen from a member */
const ucg_plan_t *bcast_plan(member &m, unsigned root, size_t bytes)
{
    const ucg_plan_t *plan;
    ucg_plan_key_t key;

    memset(&key, 0, sizeof(key));
    key.type     = UCG_COLL_BCAST;
    key.root     = root;
    key.op       = UCG_OP_LAST;
    key.dtype    = UCG_DT_UINT8;
    key.msg_size = bytes;
    key.dt_size  = 1;
    CHILD_CHECK_OK(ucg_group_plan(m.group, &key, &plan));
    return plan;
}

/* sm_bcast phases of the plan, and whether one of them has a set that is
 * not a whole host (a sub-group or the level-one set) */
unsigned sm_bcast_phases(const ucg_plan_t *plan, const ucg_topo_t *topo,
                         bool *sub_p)
{
    unsigned n = 0;

    *sub_p = false;
    for (unsigned p = 0; p < plan->num_phases; ++p) {
        const ucg_phase_t &ph = plan->phases[p];
        if (ph.method != UCG_PHASE_SM_BCAST) {
            continue;
        }
        ++n;
        for (unsigned s = 0; s < ph.num_sets; ++s) {
            const ucg_phase_set_t &set = ph.sets[s];
            unsigned h = topo->host_of[set.ranks[set.root]];
            *sub_p    |= (set.count != topo->host_size[h]);
        }
    }
    return n;
}

struct twolevel_config {
    const char *name;
    unsigned   np;
    const char *hosts;
    const char *extra; /* "NAME=value" without UCX_UCG_, or NULL */
};

class ucg_2level : public ::testing::TestWithParam<twolevel_config> {
};

TEST_P(ucg_2level, matrix)
{
    const twolevel_config &cfg = GetParam();
    const size_t sizes[] = {0, 8, FRAG - 1, FRAG, FRAG + 1, 2 * FRAG,
                            2 * FRAG + 1, (64 << 10) + 3};
    run_opts opts;

    opts.env     = two_level_env(cfg.hosts);
    opts.timeout = 600;
    if (cfg.extra != NULL) {
        std::string kv(cfg.extra);
        opts.env["UCX_UCG_" + kv.substr(0, kv.find('='))] =
                kv.substr(kv.find('=') + 1);
    }

    run_ok(cfg.np, opts, [&](member &m) {
        const ucg_topo_t *topo = &m.group->topo;
        unsigned seed          = 1;
        bool sub;

        CHILD_CHECK(topo->o2m, "%s: the o2m transports are not used",
                    m.label.c_str());
        for (unsigned root = 0; root < m.size; ++root) {
            /* the planner's choice, seen from here: two levels where a
             * host has 4 members or more */
            unsigned n = sm_bcast_phases(bcast_plan(m, root, 8), topo, &sub);
            CHILD_CHECK((n == 2) == (topo->max_ppn >= 4),
                        "%s root %u: %u sm_bcast phases on hosts of up to "
                        "%u", m.label.c_str(), root, n, topo->max_ppn);
            CHILD_CHECK(sub == (n == 2), "%s root %u: sub-groups %d",
                        m.label.c_str(), root, (int)sub);

            for (size_t bytes : sizes) {
                coll_desc d(UCG_COLL_BCAST, bytes, UCG_DT_UINT8, UCG_OP_LAST,
                            root);
                d.seed = seed++;
                run_coll(m, d);
            }

            /* the whole host's sm_bcast sets, rooted at the same members:
             * other endpoints of the same roots */
            coll_desc sc(UCG_COLL_SCATTER, 16, UCG_DT_UINT8, UCG_OP_LAST,
                         root);
            sc.seed = seed++;
            run_coll(m, sc);
            coll_desc ar(UCG_COLL_ALLREDUCE, 2 * FRAG / 4 + 1, UCG_DT_INT32,
                         UCG_OP_SUM);
            ar.seed = seed++;
            run_coll(m, ar);
            coll_desc again(UCG_COLL_BCAST, 3 * FRAG, UCG_DT_UINT8,
                            UCG_OP_LAST, root);
            again.seed = seed++;
            run_coll(m, again);
        }
    }, cfg.name);
}

const twolevel_config configs[] = {
    {"np3",             3, "auto", NULL},
    {"np4",             4, "auto", NULL},
    {"np5",             5, "auto", NULL},
    {"np6",             6, "auto", NULL},
    {"np7",             7, "auto", NULL},
    {"np8",             8, "auto", NULL},
    {"np9",             9, "auto", NULL},
    /* a host of 6 with two levels, one of 3 with one */
    {"np9_hosts6",      9, "6",    NULL},
    {"np6_centralized", 6, "auto", "SM_BCAST_MODE=centralized"}
};

INSTANTIATE_TEST_SUITE_P(cfg, ucg_2level, ::testing::ValuesIn(configs),
                         [](const ::testing::TestParamInfo<twolevel_config>
                            &info) {
                             return std::string(info.param.name);
                         });


/*
 * A sub-group leader whose count is smaller by whole fragments than the
 * root's: on 5 members the sub-groups are {0,1}, {2,3} and {4}; from root 0
 * level one is {0,2,4} and rank 2 leads {2,3}.  Rank 2 gets more fragments
 * than it expects at level one and fails (UCS_ERR_MESSAGE_TRUNCATED, one
 * log line); rank 3, whose leader never sends, fails through rank 2's
 * abort instead of waiting; the others
 * may complete (finished is not failed), and the next collective of the
 * group fails on every member.
 */
TEST(ucg_2level_errors, bad_leader)
{
    const double bound        = 30.0; /* against hangs only */
    const unsigned bad        = 2;
    const unsigned bad_member = 3;
    run_opts opts;

    opts.env     = two_level_env("auto");
    opts.timeout = 120;
    run_ok(5, opts, [&](member &m) {
        ucs_log_level_t level = ucs_global_opts.log_component.log_level;
        size_t count          = ((m.rank == bad) ? 6 : 8) * FRAG;
        std::vector<uint8_t> rb(8 * FRAG + 64, 7);
        const ucg_plan_t *plan = bcast_plan(m, 0, 8 * FRAG);
        ucg_coll_params_t p;
        ucs_status_t status;
        ucg_coll_h coll;
        bool sub;

        CHILD_CHECK(sm_bcast_phases(plan, &m.group->topo, &sub) == 2,
                    "not a two-level plan");
        CHILD_CHECK(ucg_phase_set_idx(&plan->phases[1].sets[1], bad) ==
                    (int)plan->phases[1].sets[1].root,
                    "rank %u does not lead the second sub-group", bad);
        CHILD_CHECK(ucg_phase_set_idx(&plan->phases[1].sets[1], bad_member) >=
                    0, "rank %u is not in the second sub-group", bad_member);

        if (m.rank == 0) {
            for (size_t i = 0; i < count; ++i) {
                rb[i] = (uint8_t)(i * 7 + 1);
            }
        }

        memset(&p, 0, sizeof(p));
        p.type  = UCG_COLL_BCAST;
        p.root  = 0;
        p.rbuf  = rb.data();
        p.count = count;
        p.dtype = UCG_DT_UINT8;
        CHILD_CHECK_OK(ucg_coll_init(m.group, &p, &coll));
        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
        CHILD_CHECK_OK(ucg_coll_start(coll));
        status = wait_coll(coll, "bcast with a bad leader", bound);
        ucs_global_opts.log_component.log_level = level;
        ucg_coll_finalize(coll);

        if (m.rank == bad) {
            CHILD_CHECK(status == UCS_ERR_MESSAGE_TRUNCATED,
                        "rank %u (the bad leader): %s", m.rank,
                        ucs_status_string(status));
        } else if (m.rank == bad_member) {
            CHILD_CHECK(status != UCS_OK, "rank %u completed without its "
                        "leader", m.rank);
        } else if (status == UCS_OK) {
            for (size_t i = 0; i < count; ++i) {
                CHILD_CHECK(rb[i] == (uint8_t)(i * 7 + 1),
                            "rank %u: byte %zu", m.rank, i);
            }
        }
        for (size_t i = 8 * FRAG; i < rb.size(); ++i) {
            CHILD_CHECK(rb[i] == 7, "rank %u: written past the buffer at "
                        "%zu", m.rank, i);
        }

        /* the group has failed everywhere: no hang, an error */
        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
        check_coll_fails(m, coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8),
                         "bad_leader", "barrier", bound);
        ucs_global_opts.log_component.log_level = level;
    }, "bad_leader");
}

} // namespace
