/**
 * ucx-o2m tests: UCG configuration and planner.
 *
 * Plans are computed for given topologies (no process runs) and compared
 * with hand-written expectations: phase methods, sets and their roots, sm
 * modes, native reductions, radix, fragment sizes and block owners.
 */
#include "common/log_capture.h"
#include <gtest/gtest.h>

extern "C" {
#include "ucg_config.h"
#include "ucg_plan.h"
#include "ucg_def.h"
#include "ucg_dt.h"
#include <ucs/debug/log_def.h>
#include <ucs/sys/string.h>
}

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>


using o2m_test::scoped_log_capture;

namespace {

/* A prefix nobody sets, so that the tests see the defaults */
const char *const ENV_PREFIX = "GTESTUCGPLAN_";

/* sm_max_bcopy of the test topologies: auto sm fragments of 1024 bytes */
const size_t SM_MAX_BCOPY = 1040;


/* ---- topologies ---- */

/* Host labels of ranks 0..n-1 under a HOSTS layout */
std::vector<uint64_t> layout(const char *hosts, unsigned n)
{
    std::vector<uint64_t> labels(n);
    int is_auto = 0;

    for (unsigned r = 0; r < n; ++r) {
        EXPECT_EQ(UCS_OK, ucg_hosts_label(hosts, r, &labels[r], &is_auto))
            << hosts;
        EXPECT_FALSE(is_auto);
    }
    return labels;
}

struct topo_holder {
    ucg_topo_t t;

    topo_holder(const std::vector<uint64_t> &labels, int o2m = 1,
                size_t sm_max_bcopy = SM_MAX_BCOPY)
    {
        ucs_status_t status = ucg_topo_init(&t, labels.size(), labels.data(),
                                            o2m, sm_max_bcopy);
        EXPECT_EQ(UCS_OK, status);
        if (status != UCS_OK) {
            memset(&t, 0, sizeof(t));
        }
    }

    topo_holder(const char *hosts, unsigned n, int o2m = 1) :
        topo_holder(layout(hosts, n), o2m) {}

    ~topo_holder() { ucg_topo_cleanup(&t); }
};


/* ---- plan keys ---- */

ucg_plan_key_t make_key(ucg_coll_type_t type, size_t msg_size,
                        unsigned root = 0, ucg_dtype_t dtype = UCG_DT_INT32,
                        ucg_op_t op = UCG_OP_SUM, int commutative = 1,
                        size_t dt_size = 0)
{
    ucg_plan_key_t key;

    memset(&key, 0, sizeof(key));
    key.type        = type;
    key.root        = root;
    key.msg_size    = msg_size;
    key.dtype       = dtype;
    key.op          = ucg_coll_type_is_reduction(type) ? op : UCG_OP_LAST;
    key.commutative = commutative;
    key.dt_size     = dt_size;
    return key;
}


/* ---- plan descriptions ---- */

bool is_sm(ucg_phase_method_t m)
{
    return (m == UCG_PHASE_SM_BCAST) || (m == UCG_PHASE_SM_REDUCE) ||
           (m == UCG_PHASE_SM_GATHER) || (m == UCG_PHASE_SM_ALLREDUCE) ||
           (m == UCG_PHASE_SM_BCAST_CMA) || (m == UCG_PHASE_SM_REDUCE_CMA);
}

bool is_cma(ucg_phase_method_t m)
{
    return (m == UCG_PHASE_SM_BCAST_CMA) || (m == UCG_PHASE_SM_REDUCE_CMA);
}

bool is_block(ucg_phase_method_t m)
{
    return (m == UCG_PHASE_SM_GATHER) || (m == UCG_PHASE_P2P_GATHER) ||
           (m == UCG_PHASE_P2P_SCATTER) ||
           (m == UCG_PHASE_P2P_ALLGATHER_RING) ||
           (m == UCG_PHASE_P2P_ALLGATHER_LINEAR);
}

/*
 * One phase as "method[:mode][:native|:gather][:r<radix>][:f<frag>] sets
 * [o=owners]", sets as {a,b*,c} with the root starred.
 */
std::string describe_phase(const ucg_phase_t &ph, unsigned size)
{
    std::ostringstream os;

    os << ucg_phase_method_names[ph.method];
    if (is_sm(ph.method)) {
        os << ":" << uct_o2m_mode_name(ph.sm_mode);
    }
    if (ph.method == UCG_PHASE_SM_REDUCE) {
        os << (ph.sm_native ? ":native" : ":gather");
    } else if (is_cma(ph.method)) {
        os << ":ack" << uct_o2m_mode_name(ph.sm_ack_mode);
    }
    if (ph.radix != 0) {
        os << ":r" << ph.radix;
    }
    if (ph.frag_size != 0) {
        os << ":f" << ph.frag_size;
    }
    os << " ";
    for (unsigned s = 0; s < ph.num_sets; ++s) {
        const ucg_phase_set_t &set = ph.sets[s];
        os << "{";
        for (unsigned i = 0; i < set.count; ++i) {
            os << (i ? "," : "") << set.ranks[i] << ((i == set.root) ? "*" : "");
        }
        os << "}";
    }
    if (ph.owner != NULL) {
        os << " o=";
        for (unsigned r = 0; r < size; ++r) {
            os << (r ? "," : "") << ph.owner[r];
        }
    }
    return os.str();
}

/* Structural rules every plan follows (checked on every plan made here) */
void check_invariants(const ucg_plan_t *plan, const ucg_topo_t *topo)
{
    ASSERT_LE(plan->num_phases, (unsigned)UCG_PLAN_MAX_PHASES);
    for (unsigned p = 0; p < plan->num_phases; ++p) {
        const ucg_phase_t &ph = plan->phases[p];
        std::vector<int> seen(topo->size, 0);

        ASSERT_LT((unsigned)ph.method, (unsigned)UCG_PHASE_LAST);
        ASSERT_GT(ph.num_sets, 0u) << "phase " << p;
        for (unsigned s = 0; s < ph.num_sets; ++s) {
            const ucg_phase_set_t &set = ph.sets[s];
            ASSERT_GT(set.count, 0u);
            ASSERT_LT(set.root, set.count);
            for (unsigned i = 0; i < set.count; ++i) {
                ASSERT_LT(set.ranks[i], topo->size);
                if (i > 0) {
                    ASSERT_LT(set.ranks[i - 1], set.ranks[i]) << "ascending";
                }
                ASSERT_EQ(0, seen[set.ranks[i]]++) << "rank in two sets";
            }
            if (is_sm(ph.method)) {
                /* a local set is one whole host, or part of one in the
                 * two-level bcast */
                unsigned h = topo->host_of[set.ranks[0]];
                if ((ph.method == UCG_PHASE_SM_BCAST) &&
                    (plan->key.type == UCG_COLL_BCAST)) {
                    ASSERT_LE(set.count, topo->host_size[h]);
                    ASSERT_GE(set.count, 2u);
                } else {
                    ASSERT_EQ(topo->host_size[h], set.count);
                }
                for (unsigned i = 0; i < set.count; ++i) {
                    ASSERT_EQ(h, topo->host_of[set.ranks[i]]);
                }
                ASSERT_LT((unsigned)ph.sm_mode, (unsigned)UCT_O2M_MODE_LAST);
                if (is_cma(ph.method)) {
                    /* one descriptor, whatever the size */
                    ASSERT_EQ(0u, ph.frag_size);
                } else {
                    ASSERT_GT(ph.frag_size, 0u);
                }
            }
        }
        ASSERT_EQ(is_block(ph.method), ph.owner != NULL)
            << ucg_phase_method_names[ph.method];
        if (ph.owner != NULL) {
            for (unsigned r = 0; r < topo->size; ++r) {
                /* the owner of a block is on the block's host */
                ASSERT_LT(ph.owner[r], topo->size);
                ASSERT_EQ(topo->host_of[r], topo->host_of[ph.owner[r]]);
            }
        }
        if ((ph.method == UCG_PHASE_SM_BCAST) ||
            (ph.method == UCG_PHASE_SM_BCAST_CMA)) {
            ASSERT_TRUE((ph.sm_mode == UCT_O2M_MODE_BATCHED) ||
                        (ph.sm_mode == UCT_O2M_MODE_CENTRALIZED));
        }
        if (is_cma(ph.method)) {
            ASSERT_EQ((ph.method == UCG_PHASE_SM_BCAST_CMA) ?
                      UCG_COLL_BCAST : UCG_COLL_REDUCE, plan->key.type);
            ASSERT_TRUE((ph.sm_ack_mode == UCT_O2M_MODE_BATCHED) ||
                        (ph.sm_ack_mode == UCT_O2M_MODE_CENTRALIZED));
            /* the fan-in (descriptors or acknowledgements) only gathers */
            ASSERT_TRUE(((ph.method == UCG_PHASE_SM_REDUCE_CMA) ?
                         ph.sm_mode : ph.sm_ack_mode) ==
                        UCT_O2M_MODE_BATCHED ||
                        ((ph.method == UCG_PHASE_SM_REDUCE_CMA) ?
                         ph.sm_mode : ph.sm_ack_mode) ==
                        UCT_O2M_MODE_CENTRALIZED);
        }
        if (ph.method == UCG_PHASE_SM_REDUCE_CMA) {
            ASSERT_TRUE(plan->key.commutative);
        }
    }
}

std::string describe(const ucg_plan_t *plan, const ucg_topo_t *topo)
{
    std::string s;

    for (unsigned p = 0; p < plan->num_phases; ++p) {
        s += (p ? " | " : "") + describe_phase(plan->phases[p], topo->size);
    }
    return s;
}

std::string print_plan(const ucg_plan_t *plan, const ucg_topo_t *topo)
{
    char *buf   = NULL;
    size_t size = 0;
    FILE *f     = open_memstream(&buf, &size);
    std::string s;

    ucg_plan_print(plan, topo, f);
    fclose(f);
    s = buf;
    free(buf);
    return s;
}


class test_ucg_plan : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_EQ(UCS_OK, ucg_config_read(ENV_PREFIX, &m_config));
    }

    void TearDown() override { ucg_config_release(m_config); }

    void set(const char *name, const char *value)
    {
        ASSERT_EQ(UCS_OK, ucg_config_modify(m_config, name, value))
            << name << "=" << value;
        ASSERT_EQ(UCS_OK, ucg_config_check(m_config)) << name << "=" << value;
    }

    static std::pair<size_t, size_t> range(size_t min, size_t max)
    {
        return std::make_pair(min, max);
    }

    /* The size range of the plan of @a key */
    std::pair<size_t, size_t> size_range(const topo_holder &topo,
                                         const ucg_plan_key_t &key)
    {
        std::pair<size_t, size_t> r(1, 0);
        ucg_plan_t *plan;

        EXPECT_EQ(UCS_OK, ucg_plan_create(m_config, &topo.t, &key, &plan));
        if (plan != NULL) {
            r = range(plan->size_min, plan->size_max);
            ucg_plan_destroy(plan);
        }
        return r;
    }

    /* The plan's description, or "error: <status>" */
    std::string plan(const ucg_topo_t &topo, const ucg_plan_key_t &key,
                     bool *hier_p = NULL)
    {
        ucg_plan_t *plan;
        ucs_status_t status;
        std::string s;

        status = ucg_plan_create(m_config, &topo, &key, &plan);
        if (status != UCS_OK) {
            return std::string("error: ") + ucs_status_string(status);
        }

        check_invariants(plan, &topo);
        s = describe(plan, &topo);
        if (hier_p != NULL) {
            *hier_p = plan->hier;
        }
        ucg_plan_destroy(plan);
        return s;
    }

    std::string plan(const topo_holder &topo, const ucg_plan_key_t &key,
                     bool *hier_p = NULL)
    {
        return plan(topo.t, key, hier_p);
    }

    /*
     * The single-copy threshold @a knob of @a type on @a topo (one host),
     * in the centralized modes: plan @a cma from @a at_default bytes (the
     * default threshold) and, with @a knob=1, from @a one_elem bytes; plan
     * @a copy at 1 GiB with @a knob=inf; "auto" is refused
     */
    void check_cma_knob(const topo_holder &topo, const char *knob,
                        ucg_coll_type_t type, size_t at_default,
                        size_t one_elem, const std::string &cma,
                        const std::string &copy)
    {
        set("SM_BCAST_MODE", "centralized");
        set("SM_INCAST_MODE", "centralized");
        EXPECT_EQ(cma, plan(topo, make_key(type, at_default, 0)));

        set(knob, "1");
        EXPECT_EQ(cma, plan(topo, make_key(type, one_elem, 0)));

        set(knob, "inf");
        EXPECT_EQ(copy, plan(topo, make_key(type, 1 << 30, 0)));

        EXPECT_NE(UCS_OK, ucg_config_modify(m_config, knob, "auto") ==
                          UCS_OK ? ucg_config_check(m_config) :
                                   UCS_ERR_INVALID_PARAM);
    }

    ucg_config_t *m_config;
};


/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

TEST_F(test_ucg_plan, config_defaults)
{
    EXPECT_STREQ("auto", m_config->hosts);
    EXPECT_EQ(UCS_TRY, m_config->o2m);
    EXPECT_EQ(UCG_HIER_AUTO, m_config->hier);
    for (int t = 0; t < UCG_COLL_LAST; ++t) {
        EXPECT_EQ(UCG_P2P_AUTO, m_config->p2p_method[t]) << t;
    }
    EXPECT_EQ((unsigned)UCG_SM_MODE_AUTO, m_config->sm_bcast_mode);
    EXPECT_EQ((unsigned)UCG_SM_MODE_AUTO, m_config->sm_incast_mode);
    EXPECT_EQ(4u, m_config->knomial_radix);
    EXPECT_EQ(65536u, m_config->p2p_frag_size);
    EXPECT_EQ(UCS_MEMUNITS_AUTO, m_config->sm_frag_size);
    EXPECT_EQ(65536u, m_config->allreduce_ring_thresh);
    EXPECT_EQ(65536u, m_config->allgather_ring_thresh);
    EXPECT_EQ(8u, m_config->sm_batched_max_ppn);
    EXPECT_EQ(UCS_MEMUNITS_INF, m_config->sm_locked_thresh);
    EXPECT_TRUE(std::isinf(m_config->peer_timeout));
    EXPECT_DOUBLE_EQ(0.1, m_config->check_interval);
    EXPECT_EQ(256u, m_config->sm_max_groups);
    EXPECT_EQ(0, m_config->log_plans);
    EXPECT_STREQ(ENV_PREFIX, m_config->env_prefix);
    EXPECT_EQ(UCS_OK, ucg_config_check(m_config));

    EXPECT_STREQ("auto", ucg_p2p_method_names[UCG_P2P_AUTO]);
    EXPECT_STREQ("dissemination", ucg_p2p_method_names[UCG_P2P_DISSEMINATION]);
    EXPECT_EQ(NULL, ucg_p2p_method_names[UCG_P2P_LAST]);
    EXPECT_STREQ("off", ucg_hier_names[UCG_HIER_OFF]);
    EXPECT_STREQ("atomic", ucg_sm_mode_names[UCT_O2M_MODE_ATOMIC]);
    EXPECT_STREQ("auto", ucg_sm_mode_names[UCG_SM_MODE_AUTO]);
    EXPECT_EQ(NULL, ucg_sm_mode_names[UCG_SM_MODE_AUTO + 1]);
}

TEST_F(test_ucg_plan, config_modify)
{
    set("HOSTS", "2,3");
    EXPECT_STREQ("2,3", m_config->hosts);
    set("O2M", "no");
    EXPECT_EQ(UCS_NO, m_config->o2m);
    set("HIER", "off");
    EXPECT_EQ(UCG_HIER_OFF, m_config->hier);
    set("ALLREDUCE_P2P", "ring");
    EXPECT_EQ(UCG_P2P_RING, m_config->p2p_method[UCG_COLL_ALLREDUCE]);
    set("SCATTER_P2P", "linear");
    EXPECT_EQ(UCG_P2P_LINEAR, m_config->p2p_method[UCG_COLL_SCATTER]);
    set("SM_INCAST_MODE", "locked");
    EXPECT_EQ((unsigned)UCT_O2M_MODE_LOCKED, m_config->sm_incast_mode);
    set("SM_BCAST_MODE", "centralized");
    EXPECT_EQ((unsigned)UCT_O2M_MODE_CENTRALIZED, m_config->sm_bcast_mode);
    set("KNOMIAL_RADIX", "7");
    EXPECT_EQ(7u, m_config->knomial_radix);
    set("P2P_FRAG_SIZE", "8k");
    EXPECT_EQ(8192u, m_config->p2p_frag_size);
    set("SM_FRAG_SIZE", "4000");
    EXPECT_EQ(4000u, m_config->sm_frag_size);
    set("SM_LOCKED_THRESH", "1m");
    EXPECT_EQ(1048576u, m_config->sm_locked_thresh);
    set("PEER_TIMEOUT", "2s");
    EXPECT_DOUBLE_EQ(2.0, m_config->peer_timeout);
    set("PEER_TIMEOUT", "inf");
    EXPECT_TRUE(std::isinf(m_config->peer_timeout));
    set("PEER_TIMEOUT", "2s");
    set("CHECK_INTERVAL", "20ms");
    EXPECT_DOUBLE_EQ(0.02, m_config->check_interval);
    set("LOG_PLANS", "y");
    EXPECT_EQ(1, m_config->log_plans);

    scoped_log_capture capture;
    EXPECT_EQ(UCS_ERR_NO_ELEM, ucg_config_modify(m_config, "NO_SUCH", "1"));
    EXPECT_TRUE(capture.has("NO_SUCH")) << capture.all();
    EXPECT_NE(UCS_OK, ucg_config_modify(m_config, "HIER", "sometimes"));
    EXPECT_EQ(UCG_HIER_OFF, m_config->hier); /* unchanged */
    EXPECT_NE(UCS_OK, ucg_config_modify(m_config, "KNOMIAL_RADIX", "x"));
    EXPECT_EQ(7u, m_config->knomial_radix);
    EXPECT_NE(UCS_OK, ucg_config_modify(m_config, "BCAST_P2P", "tree"));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_config_modify(m_config, NULL, "1"));
}

TEST_F(test_ucg_plan, config_environment)
{
    ucg_config_t *config;

    setenv("GTESTUCGPLAN_UCG_KNOMIAL_RADIX", "8", 1);
    setenv("GTESTUCGPLAN_UCG_HOSTS", "4", 1);
    setenv("GTESTUCGPLAN_UCG_GATHER_P2P", "linear", 1);

    /* the prefix gets its '_' when it has none */
    ASSERT_EQ(UCS_OK, ucg_config_read("GTESTUCGPLAN", &config));
    EXPECT_STREQ("GTESTUCGPLAN_", config->env_prefix);
    EXPECT_EQ(8u, config->knomial_radix);
    EXPECT_STREQ("4", config->hosts);
    EXPECT_EQ(UCG_P2P_LINEAR, config->p2p_method[UCG_COLL_GATHER]);
    ucg_config_release(config);

    /* a bad value fails the read, naming nothing silently */
    setenv("GTESTUCGPLAN_UCG_HIER", "maybe", 1);
    {
        scoped_log_capture capture;
        EXPECT_NE(UCS_OK, ucg_config_read(ENV_PREFIX, &config));
    }

    unsetenv("GTESTUCGPLAN_UCG_HIER");
    unsetenv("GTESTUCGPLAN_UCG_KNOMIAL_RADIX");
    unsetenv("GTESTUCGPLAN_UCG_HOSTS");
    unsetenv("GTESTUCGPLAN_UCG_GATHER_P2P");

    {
        scoped_log_capture capture;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_config_read("", &config));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_config_read(ENV_PREFIX, NULL));
    }
}

TEST_F(test_ucg_plan, config_dup)
{
    ucg_config_t *copy;

    set("HOSTS", "3,1");
    set("KNOMIAL_RADIX", "5");
    ASSERT_EQ(UCS_OK, ucg_config_dup(m_config, &copy));
    set("HOSTS", "2");
    set("KNOMIAL_RADIX", "3");

    EXPECT_STREQ("3,1", copy->hosts);
    EXPECT_NE(m_config->hosts, copy->hosts);
    EXPECT_EQ(5u, copy->knomial_radix);
    EXPECT_STREQ(ENV_PREFIX, copy->env_prefix);
    EXPECT_NE(m_config->env_prefix, copy->env_prefix);
    EXPECT_EQ(m_config->p2p_frag_size, copy->p2p_frag_size);
    EXPECT_EQ(m_config->peer_timeout, copy->peer_timeout);
    ucg_config_release(copy);
}

/*
 * The planner's variables, which the members of a group must agree on
 * (ucg_group_agree_config): their hash changes with each of them and with
 * no other variable; the defaults copy resets them and keeps the others.
 */
TEST_F(test_ucg_plan, config_plan_hash)
{
    const uint64_t dfl = ucg_config_plan_hash(m_config);
    ucg_config_t *copy;

    EXPECT_TRUE(ucg_config_is_plan_var("MC_MAX_SIZE"));
    EXPECT_TRUE(ucg_config_is_plan_var("MC"));
    EXPECT_TRUE(ucg_config_is_plan_var("BCAST_P2P"));
    EXPECT_FALSE(ucg_config_is_plan_var("PEER_TIMEOUT"));
    EXPECT_FALSE(ucg_config_is_plan_var("HOSTS"));

    /* Variables the members agree on otherwise, or local ones */
    set("HOSTS", "2");
    set("PEER_TIMEOUT", "5s");
    set("SM_GROUP_MEM", "3m");
    set("MC_DEVICE", "lo");
    set("LOG_PLANS", "y");
    EXPECT_EQ(dfl, ucg_config_plan_hash(m_config));

    /* Each planner variable counts, and setting it back restores it */
    const std::vector<std::pair<const char*, const char*>> vars = {
        {"MC_MAX_SIZE", "inf"}, {"MC", "yes"}, {"KNOMIAL_RADIX", "5"},
        {"BCAST_P2P", "knomial"}, {"HIER", "off"}, {"P2P_FRAG_SIZE", "16k"},
        {"SM_BCAST_CMA_THRESH", "inf"}, {"ALLREDUCE_RING_THRESH", "1"}};
    for (const auto &v : vars) {
        ucg_config_t *orig;

        ASSERT_EQ(UCS_OK, ucg_config_dup(m_config, &orig));
        set(v.first, v.second);
        EXPECT_NE(dfl, ucg_config_plan_hash(m_config)) << v.first;

        ASSERT_EQ(UCS_OK, ucg_config_plan_defaults(m_config, &copy));
        EXPECT_EQ(dfl, ucg_config_plan_hash(copy)) << v.first;
        ucg_config_release(copy);
        ucg_config_release(m_config);
        m_config = orig;
        EXPECT_EQ(dfl, ucg_config_plan_hash(m_config)) << v.first;
    }

    /* The defaults copy keeps the local variables */
    set("MC_MAX_SIZE", "inf");
    ASSERT_EQ(UCS_OK, ucg_config_plan_defaults(m_config, &copy));
    EXPECT_EQ(4096u, copy->mc_max_size);
    EXPECT_EQ((size_t)UCS_MEMUNITS_INF, m_config->mc_max_size);
    EXPECT_STREQ("2", copy->hosts);
    EXPECT_NE(m_config->hosts, copy->hosts);
    EXPECT_EQ(5.0, copy->peer_timeout);
    EXPECT_STREQ("lo", copy->mc_device);
    EXPECT_STREQ(ENV_PREFIX, copy->env_prefix);
    ucg_config_release(copy);
}

TEST_F(test_ucg_plan, config_print)
{
    static const char *vars[] = {
        "HOSTS=auto", "O2M=try", "HIER=auto", "BCAST_P2P=auto",
        "REDUCE_P2P=auto", "ALLREDUCE_P2P=auto", "BARRIER_P2P=auto",
        "GATHER_P2P=auto", "SCATTER_P2P=auto", "ALLGATHER_P2P=auto",
        "SM_BCAST_MODE=auto", "SM_INCAST_MODE=auto", "KNOMIAL_RADIX=4",
        "P2P_FRAG_SIZE=64K", "SM_FRAG_SIZE=auto",
        "ALLREDUCE_RING_THRESH=64K", "ALLGATHER_RING_THRESH=64K",
        "SM_BATCHED_MAX_PPN=8", "SM_LOCKED_THRESH=inf", "PEER_TIMEOUT=inf\n",
        "CHECK_INTERVAL=100", "SM_MAX_GROUPS=256", "LOG_PLANS=n"
    };
    char *buf   = NULL;
    size_t size = 0;
    FILE *f     = open_memstream(&buf, &size);
    std::string out;

    ucg_config_print(m_config, f, "UCG test",
                     (ucs_config_print_flags_t)(UCS_CONFIG_PRINT_CONFIG |
                                                UCS_CONFIG_PRINT_DOC |
                                                UCS_CONFIG_PRINT_HEADER));
    fclose(f);
    out = buf;
    free(buf);

    EXPECT_NE(std::string::npos, out.find("# UCG test"));
    for (const char *var : vars) {
        EXPECT_NE(std::string::npos,
                  out.find(std::string("\n") + ENV_PREFIX + "UCG_" + var))
            << var << "\n" << out;
    }
    /* documented: a doc line of a few variables */
    EXPECT_NE(std::string::npos, out.find("last size repeated"));
    EXPECT_NE(std::string::npos, out.find("locked mode of sm_incast"));
}

TEST_F(test_ucg_plan, config_check_p2p)
{
    static const struct {
        const char *var;
        std::set<std::string> valid;
    } colls[] = {
        {"BCAST_P2P",     {"auto", "knomial"}},
        {"REDUCE_P2P",    {"auto", "knomial"}},
        {"ALLREDUCE_P2P", {"auto", "recursive_doubling", "ring", "knomial"}},
        {"BARRIER_P2P",   {"auto", "dissemination"}},
        {"GATHER_P2P",    {"auto", "linear"}},
        {"SCATTER_P2P",   {"auto", "linear"}},
        {"ALLGATHER_P2P", {"auto", "ring", "linear"}}
    };

    for (const auto &c : colls) {
        for (int m = 0; m < UCG_P2P_LAST; ++m) {
            const char *name = ucg_p2p_method_names[m];
            ASSERT_EQ(UCS_OK, ucg_config_modify(m_config, c.var, name));
            if (c.valid.count(name)) {
                EXPECT_EQ(UCS_OK, ucg_config_check(m_config))
                    << c.var << "=" << name;
            } else {
                scoped_log_capture capture;
                EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_config_check(m_config))
                    << c.var << "=" << name;
                EXPECT_TRUE(capture.has(std::string(ENV_PREFIX) +
                                        "UCG_" + c.var))
                    << capture.all();
            }
        }
        ASSERT_EQ(UCS_OK, ucg_config_modify(m_config, c.var, "auto"));
    }
}

TEST_F(test_ucg_plan, config_check_values)
{
    static const struct {
        const char *var;
        const char *bad;
        const char *good;
    } cases[] = {
        {"KNOMIAL_RADIX",         "1",       "2"},
        {"KNOMIAL_RADIX",         "0",       "16"},
        {"SM_BCAST_MODE",         "locked",  "batched"},
        {"SM_BCAST_MODE",         "atomic",  "centralized"},
        {"HOSTS",                 "",        "auto"},
        {"HOSTS",                 "0",       "1"},
        {"HOSTS",                 "2,0",     "2,1"},
        {"HOSTS",                 "2,",      "2"},
        {"HOSTS",                 ",2",      "AUTO"},
        {"HOSTS",                 "2,,3",    "2,3"},
        {"HOSTS",                 "-2",      "12"},
        {"HOSTS",                 "2 ",      "2,3,4"},
        {"HOSTS",                 "x",       "auto"},
        {"HOSTS",                 "99999999999", "4294967295"},
        {"P2P_FRAG_SIZE",         "0",       "inf"},
        {"P2P_FRAG_SIZE",         "auto",    "1"},
        {"SM_FRAG_SIZE",          "0",       "auto"},
        {"SM_FRAG_SIZE",          "inf",     "100"},
        {"ALLREDUCE_RING_THRESH", "auto",    "inf"},
        {"ALLGATHER_RING_THRESH", "auto",    "0"},
        {"SM_LOCKED_THRESH",      "auto",    "0"},
        {"PEER_TIMEOUT",          "0",       "1ms"},
        {"CHECK_INTERVAL",        "0",       "1s"},
        {"SM_MAX_GROUPS",         "0",       "1"}
    };

    for (const auto &c : cases) {
        ASSERT_EQ(UCS_OK, ucg_config_modify(m_config, c.var, c.bad)) << c.var;
        {
            scoped_log_capture capture;
            EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_config_check(m_config))
                << c.var << "=" << c.bad;
            EXPECT_TRUE(capture.has(std::string(ENV_PREFIX) + "UCG_" +
                                    c.var))
                << c.var << "=" << c.bad << ": " << capture.all();
        }
        ASSERT_EQ(UCS_OK, ucg_config_modify(m_config, c.var, c.good));
        EXPECT_EQ(UCS_OK, ucg_config_check(m_config)) << c.var << "=" << c.good;
    }

    /* sm_incast takes every mode */
    for (int m = 0; m <= UCG_SM_MODE_AUTO; ++m) {
        ASSERT_EQ(UCS_OK, ucg_config_modify(m_config, "SM_INCAST_MODE",
                                            ucg_sm_mode_names[m]));
        EXPECT_EQ(UCS_OK, ucg_config_check(m_config)) << ucg_sm_mode_names[m];
    }
}

TEST_F(test_ucg_plan, hosts_label)
{
    uint64_t label = 77;
    int is_auto    = 0;

    ASSERT_EQ(UCS_OK, ucg_hosts_label("auto", 5, &label, &is_auto));
    EXPECT_TRUE(is_auto);
    ASSERT_EQ(UCS_OK, ucg_hosts_label("Auto", 5, &label, &is_auto));
    EXPECT_TRUE(is_auto);

    /* <k>: global_rank / k */
    std::vector<uint64_t> expect3 = {0, 0, 0, 1, 1, 1, 2, 2};
    EXPECT_EQ(expect3, layout("3", 8));
    std::vector<uint64_t> expect1 = {0, 1, 2, 3};
    EXPECT_EQ(expect1, layout("1", 4));
    EXPECT_EQ(std::vector<uint64_t>(5, 0), layout("100", 5));

    /* sizes, the last repeated */
    std::vector<uint64_t> expect23 = {0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4};
    EXPECT_EQ(expect23, layout("2,3", 12));
    std::vector<uint64_t> expect312 = {0, 0, 0, 1, 2, 2, 3, 3, 4};
    EXPECT_EQ(expect312, layout("3,1,2", 9));
    std::vector<uint64_t> expect41 = {0, 0, 0, 0, 1, 2, 3};
    EXPECT_EQ(expect41, layout("4,1", 7));

    /* large ranks */
    ASSERT_EQ(UCS_OK, ucg_hosts_label("2,3", 1000000, &label, &is_auto));
    EXPECT_FALSE(is_auto);
    EXPECT_EQ(2u + (1000000u - 5u) / 3u, label);
    ASSERT_EQ(UCS_OK, ucg_hosts_label("4294967295", 4294967294u, &label,
                                      &is_auto));
    EXPECT_EQ(0u, label);

    scoped_log_capture capture;
    for (const char *bad : {"", "0", "3,0", "3,", ",3", "3,,1", "-3", "+3",
                            " 3", "3 ", "3x", "x", "4294967296", "autox",
                            "1.5"}) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  ucg_hosts_label(bad, 0, &label, &is_auto)) << "'" << bad
                                                             << "'";
    }
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_hosts_label(NULL, 0, &label,
                                                     &is_auto));
    /* a bad entry after the rank's host is still an error */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_hosts_label("2,x", 0, &label,
                                                     &is_auto));
}


/* ------------------------------------------------------------------------ */
/* Topology                                                                 */
/* ------------------------------------------------------------------------ */

TEST_F(test_ucg_plan, topo_init)
{
    /* labels in any order and of any value: hosts numbered by lowest rank */
    std::vector<uint64_t> labels = {900, 5, 900, 7, 5, 900, 1};
    topo_holder topo(labels, 1, 8240);
    const ucg_topo_t &t = topo.t;

    ASSERT_EQ(7u, t.size);
    ASSERT_EQ(4u, t.num_hosts);
    EXPECT_EQ(3u, t.max_ppn);
    EXPECT_EQ(1, t.o2m);
    EXPECT_EQ(8240u, t.sm_max_bcopy);
    std::vector<unsigned> host_of(t.host_of, t.host_of + 7);
    EXPECT_EQ((std::vector<unsigned>{0, 1, 0, 2, 1, 0, 3}), host_of);
    std::vector<unsigned> sizes(t.host_size, t.host_size + 4);
    EXPECT_EQ((std::vector<unsigned>{3, 2, 1, 1}), sizes);
    std::vector<unsigned> first(t.host_first, t.host_first + 5);
    EXPECT_EQ((std::vector<unsigned>{0, 3, 5, 6, 7}), first);
    std::vector<unsigned> ranks(t.host_ranks, t.host_ranks + 7);
    EXPECT_EQ((std::vector<unsigned>{0, 2, 5, 1, 4, 3, 6}), ranks);

    /* one rank */
    topo_holder one(std::vector<uint64_t>{42});
    EXPECT_EQ(1u, one.t.num_hosts);
    EXPECT_EQ(1u, one.t.max_ppn);

    ucg_topo_t bad;
    scoped_log_capture capture;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_topo_init(&bad, 0, labels.data(), 1,
                                                   8240));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_topo_init(&bad, 3, NULL, 1, 8240));
}


/* ------------------------------------------------------------------------ */
/* Plans                                                                    */
/* ------------------------------------------------------------------------ */

#define ID4 " o=0,1,2,3"
#define ID6 " o=0,1,2,3,4,5"

TEST_F(test_ucg_plan, one_host)
{
    topo_holder topo("4", 4);
    bool hier = false;

    EXPECT_EQ("sm_bcast:batched:f1024 {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_BCAST, 8, 0), &hier));
    EXPECT_TRUE(hier);
    EXPECT_EQ("sm_bcast_cma:batched:ackbatched {0,1,2*,3}",
              plan(topo, make_key(UCG_COLL_BCAST, 1 << 20, 2)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0,1,2,3*}",
              plan(topo, make_key(UCG_COLL_REDUCE, 8, 3)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2,3} | "
              "sm_bcast:batched:f1024 {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 1 << 20, 0)));
    EXPECT_EQ("sm_allreduce:batched:f1024 {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 8, 0)));
    EXPECT_EQ("sm_allreduce:batched:f1024 {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_BARRIER, 0)));
    EXPECT_EQ("sm_gather:batched:f1024 {0,1*,2,3}" ID4,
              plan(topo, make_key(UCG_COLL_GATHER, 8, 1)));
    EXPECT_EQ("sm_bcast:batched:f1024 {0,1,2*,3}",
              plan(topo, make_key(UCG_COLL_SCATTER, 8, 2)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2,3}" ID4 " | "
              "sm_bcast:batched:f1024 {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_ALLGATHER, 64 << 10)));
}

TEST_F(test_ucg_plan, sm_scatter_allgather_max)
{
    topo_holder topo("4", 4);

    /* above the limits, flat point-to-point */
    EXPECT_EQ("sm_bcast:batched:f1024 {0,1,2*,3}",
              plan(topo, make_key(UCG_COLL_SCATTER, 4096, 2)));
    EXPECT_EQ("p2p_scatter {0,1,2*,3} o=0,1,2,3",
              plan(topo, make_key(UCG_COLL_SCATTER, 4097, 2)));
    EXPECT_EQ("p2p_allgather_ring {0*,1,2,3} o=0,1,2,3",
              plan(topo, make_key(UCG_COLL_ALLGATHER, (64 << 10) + 1)));
    EXPECT_EQ(range(0, 4096), size_range(topo,
                                         make_key(UCG_COLL_SCATTER, 4096)));
    EXPECT_EQ(range(4097, SIZE_MAX),
              size_range(topo, make_key(UCG_COLL_SCATTER, 4097)));
    EXPECT_EQ(64u << 10, size_range(topo, make_key(UCG_COLL_ALLGATHER,
                                                   64 << 10)).second);
    EXPECT_EQ((64u << 10) + 1,
              size_range(topo, make_key(UCG_COLL_ALLGATHER,
                                        (64 << 10) + 1)).first);

    set("SM_SCATTER_MAX", "inf");
    set("SM_ALLGATHER_MAX", "inf");
    EXPECT_EQ("sm_bcast:batched:f1024 {0,1,2*,3}",
              plan(topo, make_key(UCG_COLL_SCATTER, 1 << 20, 2)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2,3}" ID4 " | "
              "sm_bcast:batched:f1024 {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_ALLGATHER, 1 << 20)));
}

/* Host-local bcast from SM_BCAST_CMA_THRESH on is single-copy; only bcast */
TEST_F(test_ucg_plan, sm_bcast_cma_thresh)
{
    topo_holder topo("4", 4);
    topo_holder topo2("2", 4);   /* [0,1][2,3] */

    EXPECT_EQ("sm_bcast:batched:f1024 {0,1*,2,3}",
              plan(topo, make_key(UCG_COLL_BCAST, (16 << 10) - 1, 1)));
    EXPECT_EQ("sm_bcast_cma:batched:ackbatched {0,1*,2,3}",
              plan(topo, make_key(UCG_COLL_BCAST, 16 << 10, 1)));
    EXPECT_EQ("p2p_bcast:r4:f65536 {0,3*} | "
              "sm_bcast_cma:batched:ackbatched {0*,1}{2,3*}",
              plan(topo2, make_key(UCG_COLL_BCAST, 1 << 20, 3)));
    /* the bcast phase of a rank-ordered allreduce keeps two copies */
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2,3}" ID4 " | fold {0*} | "
              "sm_bcast:batched:f1024 {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 1 << 20, 0,
                                  UCG_DT_INT32, UCG_OP_USER, 0)));

    check_cma_knob(topo, "SM_BCAST_CMA_THRESH", UCG_COLL_BCAST, 16 << 10, 1,
                   "sm_bcast_cma:centralized:ackcentralized {0*,1,2,3}",
                   "sm_bcast:centralized:f1024 {0*,1,2,3}");
}

/* The two-level host-local bcast (ucg_plan_2level.c): from
 * SM_BCAST_2LEVEL_PPN members on a host (32 by default), the members in
 * rank order are cut into ceil(sqrt(P)) sub-groups; the root fans out to
 * the leaders of the others, then each leader, and the root, to its own */
TEST_F(test_ucg_plan, sm_bcast_2level_ppn)
{
    topo_holder below("31", 31), at("32", 32);
    std::string flat31, two32;

    EXPECT_EQ(32u, m_config->sm_bcast_2level_ppn);
    flat31 = plan(below, make_key(UCG_COLL_BCAST, 8, 0));
    EXPECT_EQ(std::string::npos, flat31.find(" | ")) << flat31;
    EXPECT_EQ(0u, flat31.find("sm_bcast:centralized:f1024 {0*,1,")) << flat31;

    /* 6 sub-groups of 6, 6, 5, 5, 5, 5 */
    two32 = plan(at, make_key(UCG_COLL_BCAST, 8, 0));
    EXPECT_EQ("sm_bcast:batched:f1024 {0*,6,12,17,22,27} | "
              "sm_bcast:batched:f1024 {0*,1,2,3,4,5}{6*,7,8,9,10,11}"
              "{12*,13,14,15,16}{17*,18,19,20,21}{22*,23,24,25,26}"
              "{27*,28,29,30,31}", two32);
    /* the same below SM_BCAST_CMA_THRESH; single-copy from it */
    EXPECT_EQ(two32, plan(at, make_key(UCG_COLL_BCAST, (16 << 10) - 1, 0)));
    EXPECT_EQ(0u, plan(at, make_key(UCG_COLL_BCAST, 16 << 10, 0)).find(
                      "sm_bcast_cma:"));
    /* bcast only: the fan-outs of other collectives keep the whole host */
    std::string sc = plan(at, make_key(UCG_COLL_SCATTER, 8, 2));
    EXPECT_EQ(std::string::npos, sc.find(" | ")) << sc;
    std::string ar = plan(at, make_key(UCG_COLL_ALLREDUCE, 1 << 20, 0));
    EXPECT_NE(std::string::npos,
              ar.find("| sm_bcast:centralized:f1024 {0*,1,2,3,4,5,6,7,8,"))
              << ar;

    set("SM_BCAST_2LEVEL_PPN", "inf");
    EXPECT_EQ(std::string::npos,
              plan(at, make_key(UCG_COLL_BCAST, 8, 0)).find(" | "));
}

TEST_F(test_ucg_plan, sm_bcast_2level_forced)
{
    topo_holder three("3", 3), five("5", 5), nine("9", 9);
    topo_holder mixed("6,3", 9);  /* [0-5][6-8] */

    set("SM_BCAST_2LEVEL_PPN", "2");
    /* 3 members: one level (two hops would serve two readers) */
    EXPECT_EQ("sm_bcast:batched:f1024 {0,1*,2}",
              plan(three, make_key(UCG_COLL_BCAST, 8, 1)));
    /* {0,1} {2,3} {4}: the one of a single member has no level two */
    EXPECT_EQ("sm_bcast:batched:f1024 {0*,2,4} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}",
              plan(five, make_key(UCG_COLL_BCAST, 8, 0)));
    /* a root that is no leader leads its own sub-group */
    EXPECT_EQ("sm_bcast:batched:f1024 {0,3*,4} | "
              "sm_bcast:batched:f1024 {0*,1}{2,3*}",
              plan(five, make_key(UCG_COLL_BCAST, 8, 3)));
    EXPECT_EQ("sm_bcast:batched:f1024 {0,4*,6} | "
              "sm_bcast:batched:f1024 {0*,1,2}{3,4*,5}{6*,7,8}",
              plan(nine, make_key(UCG_COLL_BCAST, 64, 4)));
    /* a host of 6 in two levels ({0,1} {2,3} {4,5}), one of 3 in one */
    EXPECT_EQ("p2p_bcast:r4 {0,7*} | "
              "sm_bcast:batched:f1024 {0*,2,4}{6,7*,8} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}",
              plan(mixed, make_key(UCG_COLL_BCAST, 8, 7)));
    /* a forced mode holds on both levels; the size ranges are those of the
     * flat plan */
    set("SM_BCAST_MODE", "centralized");
    EXPECT_EQ("sm_bcast:centralized:f1024 {0*,2,4} | "
              "sm_bcast:centralized:f1024 {0*,1}{2*,3}",
              plan(five, make_key(UCG_COLL_BCAST, 8, 0)));
    EXPECT_EQ(range(0, (16 << 10) - 1),
              size_range(five, make_key(UCG_COLL_BCAST, 8, 0)));
}

/*
 * On hosts of 4 to 130 members (one host, and hosts of half the ranks),
 * from every root: every member gets the data exactly once, from a set
 * root that had it (the root, or a member of an earlier phase); and a
 * member roots at most 3 distinct sm_bcast endpoints (root, set) over all
 * the roots' plans: the sub-groups do not depend on the root, so
 * SM_GROUP_EPS (8) holds when a program bcasts from every rank.
 */
TEST_F(test_ucg_plan, sm_bcast_2level_every_root)
{
    set("SM_BCAST_2LEVEL_PPN", "2");
    for (unsigned n : {4u, 5u, 9u, 10u, 17u, 32u, 33u, 64u, 130u}) {
        for (unsigned per_host : {n, (n + 1) / 2}) {
            std::string hosts = std::to_string(per_host);
            topo_holder topo(hosts.c_str(), n);
            std::map<unsigned, std::set<std::vector<unsigned>>> eps;

            for (unsigned root = 0; root < n; ++root) {
                ucg_plan_key_t key = make_key(UCG_COLL_BCAST, 8, root);
                std::vector<int> got(n, 0);
                ucg_plan_t *p;

                ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &topo.t, &key,
                                                  &p));
                check_invariants(p, &topo.t);
                got[root] = 1;
                for (unsigned ph = 0; ph < p->num_phases; ++ph) {
                    const ucg_phase_t &phase = p->phases[ph];
                    std::vector<int> before = got;
                    for (unsigned si = 0; si < phase.num_sets; ++si) {
                        const ucg_phase_set_t &set = phase.sets[si];
                        unsigned sroot = set.ranks[set.root];
                        EXPECT_TRUE(before[sroot])
                            << "n=" << n << " root " << root << " phase "
                            << ph << ": set root " << sroot << " has nothing";
                        for (unsigned i = 0; i < set.count; ++i) {
                            if (i != set.root) {
                                EXPECT_EQ(0, got[set.ranks[i]]++)
                                    << "n=" << n << " root " << root
                                    << ": rank " << set.ranks[i]
                                    << " receives twice";
                            }
                        }
                        if (phase.method == UCG_PHASE_SM_BCAST) {
                            eps[sroot].insert(std::vector<unsigned>(
                                    set.ranks, set.ranks + set.count));
                        }
                    }
                }
                for (unsigned r = 0; r < n; ++r) {
                    EXPECT_EQ(1, got[r]) << "n=" << n << " root " << root
                                         << ": rank " << r;
                }
                ucg_plan_destroy(p);
            }
            for (const auto &e : eps) {
                EXPECT_LE(e.second.size(), 3u)
                    << "n=" << n << " hosts " << hosts << ": rank "
                    << e.first << " roots " << e.second.size()
                    << " endpoints";
            }
        }
    }
}

/* Printed plans (ucg_info -p, LOG_PLANS) show the two levels */
TEST_F(test_ucg_plan, sm_bcast_2level_print)
{
    topo_holder topo("9", 9);
    ucg_plan_key_t key = make_key(UCG_COLL_BCAST, 8, 4);
    ucg_plan_t *p;

    set("SM_BCAST_2LEVEL_PPN", "9");
    ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &topo.t, &key, &p));
    EXPECT_EQ(
        "bcast 8 bytes root 4, 9 ranks on 1 host [0-8]: hierarchical, "
        "2 phases\n"
        "  0: sm_bcast             sm_bcast  batched frag 1024              "
        "    {0,4*,6}\n"
        "  1: sm_bcast             sm_bcast  batched frag 1024              "
        "    {0*,1,2} {3,4*,5} {6*,7,8}\n",
        print_plan(p, &topo.t));
    ucg_plan_destroy(p);

    set("SM_BCAST_2LEVEL_PPN", "10");
    ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &topo.t, &key, &p));
    EXPECT_EQ(
        "bcast 8 bytes root 4, 9 ranks on 1 host [0-8]: hierarchical, "
        "1 phase\n"
        "  0: sm_bcast             sm_bcast  centralized frag 1024          "
        "    {0-3,4*,5-8}\n",
        print_plan(p, &topo.t));
    ucg_plan_destroy(p);
}

/* Host-local reduce (commutative) from SM_REDUCE_CMA_THRESH on is
 * single-copy; only reduce */
TEST_F(test_ucg_plan, sm_reduce_cma_thresh)
{
    topo_holder topo("4", 4);
    topo_holder topo2("2", 4);   /* [0,1][2,3] */
    topo_holder topo3("3,1", 4); /* [0,1,2][3] */

    /* 32-128 KiB: through the ring (issue 14) */
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0,1*,2,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 32 << 10, 1)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0,1*,2,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, (256 << 10) - 4, 1)));
    EXPECT_EQ("sm_reduce_cma:batched:ackbatched {0,1*,2,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 256 << 10, 1)));
    EXPECT_EQ("sm_reduce_cma:batched:ackbatched {0*,1}{2,3*} | "
              "p2p_reduce:r4 {0,3*}",
              plan(topo2, make_key(UCG_COLL_REDUCE, 1 << 20, 3)));
    /* a host of one rank has no local phase */
    EXPECT_EQ("sm_reduce_cma:batched:ackbatched {0*,1,2} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo3, make_key(UCG_COLL_REDUCE, 1 << 20, 0)));
    /* MINLOC is commutative: no transport pair, still single-copy */
    EXPECT_EQ("sm_reduce_cma:batched:ackbatched {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 1 << 20, 0,
                                  UCG_DT_FLOAT_INT, UCG_OP_MINLOC)));
    /* non-commutative: gathered and folded in rank order */
    EXPECT_EQ(0u, plan(topo, make_key(UCG_COLL_REDUCE, 1 << 20, 0,
                                      UCG_DT_INT32, UCG_OP_USER, 0))
                  .find("sm_gather"));
    /* allreduce keeps its host-local reduction */
    EXPECT_EQ(std::string::npos,
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 1 << 20)).find("cma"));

    check_cma_knob(topo, "SM_REDUCE_CMA_THRESH", UCG_COLL_REDUCE, 256 << 10, 4,
                   "sm_reduce_cma:centralized:ackcentralized {0*,1,2,3}",
                   "sm_reduce:centralized:native:f1024 {0*,1,2,3}");
}

TEST_F(test_ucg_plan, two_per_host)
{
    topo_holder topo("2", 6);   /* [0,1][2,3][4,5] */

    EXPECT_EQ("p2p_bcast:r4 {0,3*,4} | "
              "sm_bcast:batched:f1024 {0*,1}{2,3*}{4*,5}",
              plan(topo, make_key(UCG_COLL_BCAST, 8, 3)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1}{2*,3}{4,5*} | "
              "p2p_reduce:r4 {0,2,5*}",
              plan(topo, make_key(UCG_COLL_REDUCE, 8, 5)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1}{2*,3}{4*,5} | "
              "p2p_allreduce_rd {0*,2,4} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 65532)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1}{2*,3}{4*,5} | "
              "p2p_allreduce_ring {0*,2,4} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 65536)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1}{2*,3}{4*,5}" ID6 " | "
              "p2p_barrier {0*,2,4} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}",
              plan(topo, make_key(UCG_COLL_BARRIER, 0)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1}{2,3*}{4*,5}" ID6 " | "
              "p2p_gather {0,3*,4} o=0,0,3,3,4,4",
              plan(topo, make_key(UCG_COLL_GATHER, 100, 3)));
    EXPECT_EQ("p2p_scatter {1*,2,4} o=1,1,2,2,4,4 | "
              "sm_bcast:batched:f1024 {0,1*}{2*,3}{4*,5}",
              plan(topo, make_key(UCG_COLL_SCATTER, 100, 1)));
    /* 10922 * 6 < 64k <= 10923 * 6 */
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1}{2*,3}{4*,5}" ID6 " | "
              "p2p_allgather_linear {0*,2,4} o=0,0,2,2,4,4 | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}",
              plan(topo, make_key(UCG_COLL_ALLGATHER, 10922)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1}{2*,3}{4*,5}" ID6 " | "
              "p2p_allgather_ring {0*,2,4} o=0,0,2,2,4,4 | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}",
              plan(topo, make_key(UCG_COLL_ALLGATHER, 10923)));
}

TEST_F(test_ucg_plan, three_per_host)
{
    topo_holder topo("3", 6);   /* [0-2][3-5] */

    /* two leaders: recursive doubling at any size */
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_allreduce_rd {0*,3} | "
              "sm_bcast:batched:f1024 {0*,1,2}{3*,4,5}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 1 << 20)));
    EXPECT_EQ("p2p_bcast:r4:f65536 {0,4*} | "
              "sm_bcast_cma:batched:ackbatched {0*,1,2}{3,4*,5}",
              plan(topo, make_key(UCG_COLL_BCAST, 1 << 20, 4)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0,1,2*}{3*,4,5} | "
              "p2p_reduce:r4 {2*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 4, 2)));
    EXPECT_EQ("p2p_scatter {0,5*} o=0,0,0,5,5,5 | "
              "sm_bcast:batched:f1024 {0*,1,2}{3,4,5*}",
              plan(topo, make_key(UCG_COLL_SCATTER, 4, 5)));
}

TEST_F(test_ucg_plan, one_per_host_is_flat)
{
    topo_holder topo("1", 4);
    bool hier = true;

    EXPECT_EQ("p2p_bcast:r4 {0,1,2*,3}",
              plan(topo, make_key(UCG_COLL_BCAST, 8, 2), &hier));
    EXPECT_FALSE(hier);
    EXPECT_EQ("p2p_reduce:r4 {0,1,2,3*}",
              plan(topo, make_key(UCG_COLL_REDUCE, 8, 3)));
    EXPECT_EQ("p2p_allreduce_rd {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 8)));
    EXPECT_EQ("p2p_allreduce_ring {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 65536)));
    EXPECT_EQ("p2p_barrier {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_BARRIER, 0)));
    EXPECT_EQ("p2p_gather {0,1*,2,3}" ID4,
              plan(topo, make_key(UCG_COLL_GATHER, 8, 1)));
    EXPECT_EQ("p2p_scatter {0,1,2,3*}" ID4,
              plan(topo, make_key(UCG_COLL_SCATTER, 8, 3)));
    EXPECT_EQ("p2p_allgather_linear {0*,1,2,3}" ID4,
              plan(topo, make_key(UCG_COLL_ALLGATHER, 16383)));
    EXPECT_EQ("p2p_allgather_ring {0*,1,2,3}" ID4,
              plan(topo, make_key(UCG_COLL_ALLGATHER, 16384)));

    /* HIER=on changes nothing when no host is shared */
    set("HIER", "on");
    EXPECT_EQ("p2p_allreduce_rd {0*,1,2,3}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 8), &hier));
    EXPECT_FALSE(hier);
}

TEST_F(test_ucg_plan, two_ranks_flat_allreduce)
{
    /* two participants: recursive doubling even for large messages */
    topo_holder topo("1", 2);
    EXPECT_EQ("p2p_allreduce_rd {0*,1}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 1 << 24)));
}

TEST_F(test_ucg_plan, interleaved_hosts)
{
    /* [0,2][1,3] */
    topo_holder topo(std::vector<uint64_t>{7, 3, 7, 3});

    EXPECT_EQ("p2p_bcast:r4 {0,3*} | sm_bcast:batched:f1024 {0*,2}{1,3*}",
              plan(topo, make_key(UCG_COLL_BCAST, 8, 3)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,2}{1*,3} | "
              "p2p_allreduce_rd {0*,1} | "
              "sm_bcast:batched:f1024 {0*,2}{1*,3}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 8)));
    EXPECT_EQ("sm_gather:batched:f1024 {0,2*}{1*,3}" ID4 " | "
              "p2p_gather {1,2*} o=2,1,2,1",
              plan(topo, make_key(UCG_COLL_GATHER, 8, 2)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,2}{1*,3}" ID4 " | "
              "p2p_allgather_linear {0*,1} o=0,1,0,1 | "
              "sm_bcast:batched:f1024 {0*,2}{1*,3}",
              plan(topo, make_key(UCG_COLL_ALLGATHER, 8)));
}

TEST_F(test_ucg_plan, uneven_hosts)
{
    topo_holder topo("3,1,2", 7);   /* [0-2][3][4,5][6] */

    EXPECT_EQ("p2p_bcast:r4 {0,3,4*,6} | "
              "sm_bcast:batched:f1024 {0*,1,2}{4*,5}",
              plan(topo, make_key(UCG_COLL_BCAST, 8, 4)));
    EXPECT_EQ("p2p_bcast:r4 {0,3*,4,6} | "
              "sm_bcast:batched:f1024 {0*,1,2}{4*,5}",
              plan(topo, make_key(UCG_COLL_BCAST, 8, 3)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0,1*,2}{4*,5} | "
              "p2p_reduce:r4 {1*,3,4,6}",
              plan(topo, make_key(UCG_COLL_REDUCE, 8, 1)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2}{4*,5} | "
              "p2p_allreduce_ring {0*,3,4,6} | "
              "sm_bcast:batched:f1024 {0*,1,2}{4*,5}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 1 << 16)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2}{4*,5} o=0,1,2,3,4,5,6 | "
              "p2p_barrier {0*,3,4,6} | "
              "sm_bcast:batched:f1024 {0*,1,2}{4*,5}",
              plan(topo, make_key(UCG_COLL_BARRIER, 0)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2}{4,5*} o=0,1,2,3,4,5,6 | "
              "p2p_gather {0,3,5*,6} o=0,0,0,3,5,5,6",
              plan(topo, make_key(UCG_COLL_GATHER, 8, 5)));
    EXPECT_EQ("p2p_scatter {0,3,4,6*} o=0,0,0,3,4,4,6 | "
              "sm_bcast:batched:f1024 {0*,1,2}{4*,5}",
              plan(topo, make_key(UCG_COLL_SCATTER, 8, 6)));
}

TEST_F(test_ucg_plan, flat_without_o2m)
{
    topo_holder topo("2", 6, 0);
    bool hier = true;

    EXPECT_EQ("p2p_bcast:r4 {0,1,2,3*,4,5}",
              plan(topo, make_key(UCG_COLL_BCAST, 8, 3), &hier));
    EXPECT_FALSE(hier);
    EXPECT_EQ("p2p_allreduce_ring {0*,1,2,3,4,5}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 1 << 20)));
    EXPECT_EQ("p2p_gather {0,1,2,3,4*,5}" ID6,
              plan(topo, make_key(UCG_COLL_GATHER, 8, 4)));
    EXPECT_EQ("p2p_scatter {0,1,2,3,4,5*}" ID6,
              plan(topo, make_key(UCG_COLL_SCATTER, 8, 5)));
    EXPECT_EQ("p2p_barrier {0*,1,2,3,4,5}",
              plan(topo, make_key(UCG_COLL_BARRIER, 0)));
    EXPECT_EQ("p2p_allgather_ring {0*,1,2,3,4,5}" ID6,
              plan(topo, make_key(UCG_COLL_ALLGATHER, 1 << 20)));

    /* HIER=on needs the transports too */
    set("HIER", "on");
    EXPECT_EQ("p2p_barrier {0*,1,2,3,4,5}",
              plan(topo, make_key(UCG_COLL_BARRIER, 0)));

    /* HIER=off: flat with the transports */
    topo_holder topo_o2m("2", 6, 1);
    set("HIER", "off");
    EXPECT_EQ("p2p_reduce:r4 {0,1*,2,3,4,5}",
              plan(topo_o2m, make_key(UCG_COLL_REDUCE, 8, 1), &hier));
    EXPECT_FALSE(hier);
}

TEST_F(test_ucg_plan, single_rank)
{
    topo_holder topo(std::vector<uint64_t>{0});
    bool hier = true;

    for (int t = 0; t < UCG_COLL_LAST; ++t) {
        EXPECT_EQ("", plan(topo, make_key((ucg_coll_type_t)t, 64), &hier))
            << t;
        EXPECT_FALSE(hier);
        EXPECT_EQ("", plan(topo, make_key((ucg_coll_type_t)t, 64, 0,
                                          UCG_DT_INT32, UCG_OP_USER, 0)));
    }
}

TEST_F(test_ucg_plan, non_commutative)
{
    topo_holder topo2("2", 6);
    topo_holder topo3("3", 6);
    topo_holder flat("1", 4);

    EXPECT_EQ("sm_gather:batched:f1024 {0*,1}{2,3*}{4*,5}" ID6 " | "
              "p2p_gather {0,3*,4} o=0,0,3,3,4,4 | fold {3*}",
              plan(topo2, make_key(UCG_COLL_REDUCE, 8, 3, UCG_DT_INT32,
                                   UCG_OP_USER, 0)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2}{3*,4,5}" ID6 " | "
              "p2p_gather {0*,3} o=0,0,0,3,3,3 | fold {0*} | "
              "p2p_bcast:r4 {0*,3} | sm_bcast:batched:f1024 {0*,1,2}{3*,4,5}",
              plan(topo3, make_key(UCG_COLL_ALLREDUCE, 32, 0, UCG_DT_BYTES,
                                   UCG_OP_USER, 0, 16)));
    /* the bcast part pipelines large vectors */
    EXPECT_EQ("p2p_gather {0*,1,2,3}" ID4 " | fold {0*} | "
              "p2p_bcast:r4:f65536 {0*,1,2,3}",
              plan(flat, make_key(UCG_COLL_ALLREDUCE, 1 << 20, 0,
                                  UCG_DT_INT32, UCG_OP_USER, 0)));
    EXPECT_EQ("p2p_gather {0,1,2*,3}" ID4 " | fold {2*}",
              plan(flat, make_key(UCG_COLL_REDUCE, 8, 2, UCG_DT_INT32,
                                  UCG_OP_USER, 0)));

    /* REDUCE_P2P / ALLREDUCE_P2P do not apply */
    set("ALLREDUCE_P2P", "ring");
    set("REDUCE_P2P", "knomial");
    EXPECT_EQ("p2p_gather {0*,1,2,3}" ID4 " | fold {0*} | "
              "p2p_bcast:r4 {0*,1,2,3}",
              plan(flat, make_key(UCG_COLL_ALLREDUCE, 8, 0, UCG_DT_INT32,
                                  UCG_OP_USER, 0)));
}

TEST_F(test_ucg_plan, sm_reduce_native)
{
    topo_holder topo("3", 6);

    /* no sm_incast pair: the transport gathers, the leader reduces */
    EXPECT_EQ("sm_reduce:batched:gather:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 64, 0,
                                  UCG_DT_LONG_DOUBLE, UCG_OP_SUM)));
    EXPECT_EQ("sm_reduce:batched:gather:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_allreduce_rd {0*,3} | "
              "sm_bcast:batched:f1024 {0*,1,2}{3*,4,5}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 48, 0,
                                  UCG_DT_DOUBLE_INT, UCG_OP_MINLOC)))
        << "MINLOC has no sm_incast pair";
    EXPECT_EQ("sm_reduce:batched:gather:f1022 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 14, 0, UCG_DT_BYTES,
                                  UCG_OP_USER, 1, 7)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 64, 0, UCG_DT_DOUBLE,
                                  UCG_OP_MAX)));
}

TEST_F(test_ucg_plan, sm_frag_rounding)
{
    topo_holder topo("3", 6);

    set("SM_FRAG_SIZE", "100");
    EXPECT_EQ("sm_reduce:batched:native:f96 {0*,1,2}{3*,4,5} | "
              "p2p_allreduce_rd {0*,3} | "
              "sm_bcast:batched:f100 {0*,1,2}{3*,4,5}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 800, 0, UCG_DT_DOUBLE)));
    EXPECT_EQ("sm_reduce:batched:gather:f96 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 64, 0,
                                  UCG_DT_LONG_DOUBLE_COMPLEX)));
    EXPECT_EQ("sm_reduce:batched:gather:f98 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 14, 0, UCG_DT_BYTES,
                                  UCG_OP_USER, 1, 7)));
    /* gathers keep the configured size */
    EXPECT_EQ("sm_gather:batched:f100 {0*,1,2}{3*,4,5}" ID6 " | "
              "p2p_gather {0*,3} o=0,0,0,3,3,3",
              plan(topo, make_key(UCG_COLL_GATHER, 64, 0)));

    /* fragments smaller than an element hold one element */
    set("SM_FRAG_SIZE", "4");
    EXPECT_EQ("sm_reduce:batched:native:f8 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 64, 0, UCG_DT_DOUBLE)));

    /* auto: the transports' largest bcopy minus the 16-byte header */
    set("SM_FRAG_SIZE", "auto");
    topo_holder big(layout("3", 6), 1, 8240);
    EXPECT_EQ("p2p_bcast:r4 {0*,3} | sm_bcast:batched:f8224 {0*,1,2}{3*,4,5}",
              plan(big, make_key(UCG_COLL_BCAST, 8, 0)));

    /* a bcopy limit that leaves no room for data */
    topo_holder tiny(layout("3", 6), 1, 16);
    scoped_log_capture capture;
    EXPECT_EQ("error: Invalid parameter",
              plan(tiny, make_key(UCG_COLL_BCAST, 8, 0)));
}

/* An element larger than a host-local message (header included) cannot
 * be reduced a fragment at a time: such reductions are point-to-point, or
 * single-copy where that is the plan; other collectives keep their plans */
TEST_F(test_ucg_plan, sm_elem_larger_than_frag)
{
    const size_t max_elem = SM_MAX_BCOPY - 16; /* UCG's header */
    topo_holder one(layout("4", 4), 1, SM_MAX_BCOPY);
    topo_holder two(layout("3", 6), 1, SM_MAX_BCOPY);
    topo_holder big(layout("4", 4), 1, 8240); /* the transports' default */
    size_t elem;

    for (elem = max_elem - 1; elem <= max_elem + 1; ++elem) {
        std::string ar   = plan(two, make_key(UCG_COLL_ALLREDUCE, 2 * elem, 0,
                                              UCG_DT_BYTES, UCG_OP_USER, 1,
                                              elem));
        std::string red  = plan(one, make_key(UCG_COLL_REDUCE, elem, 1,
                                              UCG_DT_BYTES, UCG_OP_USER, 1,
                                              elem));
        if (elem <= max_elem) {
            EXPECT_EQ(0u, ar.find("sm_reduce:")) << ar;
            EXPECT_EQ(0u, red.find("sm_reduce:")) << red;
        } else {
            EXPECT_EQ("p2p_allreduce_rd {0*,1,2,3,4,5}", ar);
            EXPECT_EQ("p2p_reduce:r4 {0,1*,2,3}", red);
        }
    }

    /* 8228-byte elements (the MPI reproducer) with the default fragments,
     * through sm_reduce + sm_bcast or through sm_allreduce */
    EXPECT_EQ("p2p_allreduce_rd {0*,1,2,3}",
              plan(big, make_key(UCG_COLL_ALLREDUCE, 8228, 0, UCG_DT_BYTES,
                                 UCG_OP_USER, 1, 8228)));
    set("SM_ALLREDUCE_MAX", "64k");
    EXPECT_EQ("p2p_allreduce_rd {0*,1,2,3}",
              plan(big, make_key(UCG_COLL_ALLREDUCE, 8228, 0, UCG_DT_BYTES,
                                 UCG_OP_USER, 1, 8228)));

    /* the single-copy reduce reads whole elements of any size */
    set("SM_REDUCE_CMA_THRESH", "16k");
    EXPECT_EQ("sm_reduce_cma:batched:ackbatched {0*,1,2,3}",
              plan(big, make_key(UCG_COLL_REDUCE, 4 * 8228, 0, UCG_DT_BYTES,
                                 UCG_OP_USER, 1, 8228)));

    /* a configured fragment smaller than the element is rounded up to one
     * element, which a message still carries */
    set("SM_FRAG_SIZE", "512");
    EXPECT_EQ(0u, plan(two, make_key(UCG_COLL_ALLREDUCE, 2 * max_elem, 0,
                                     UCG_DT_BYTES, UCG_OP_USER, 1, max_elem))
                  .find("sm_reduce:batched:gather:f" +
                        std::to_string(max_elem) + " "));

    /* non-commutative: gathered in fragments and folded, any element */
    EXPECT_EQ(0u, plan(two, make_key(UCG_COLL_ALLREDUCE, 8228, 0,
                                     UCG_DT_BYTES, UCG_OP_USER, 0, 8228))
                  .find("sm_gather:"));
    /* bcast of large elements moves bytes */
    EXPECT_EQ(0u, plan(one, make_key(UCG_COLL_BCAST, 8228, 0)).find("sm_"));
}

/* Hosts larger than the transports' MAX_MEMBERS, and the flat key (the
 * group's host-local endpoints used up): point-to-point plans */
TEST_F(test_ucg_plan, sm_limits_flat)
{
    topo_holder topo("3", 6);
    ucg_plan_key_t key = make_key(UCG_COLL_ALLREDUCE, 64, 0);
    bool hier;

    EXPECT_EQ(0u, plan(topo, key, &hier).find("sm_reduce:"));
    EXPECT_TRUE(hier);

    topo.t.sm_max_members = 3;
    EXPECT_EQ(0u, plan(topo, key, &hier).find("sm_reduce:"));
    topo.t.sm_max_members = 2;
    EXPECT_EQ("p2p_allreduce_rd {0*,1,2,3,4,5}", plan(topo, key, &hier));
    EXPECT_FALSE(hier);

    topo.t.sm_max_members = UINT_MAX;
    key.flat = 1;
    EXPECT_EQ("p2p_allreduce_rd {0*,1,2,3,4,5}", plan(topo, key, &hier));
    EXPECT_FALSE(hier);
    EXPECT_EQ("p2p_bcast:r4 {2*,3} | sm_bcast:batched:f1024 {0,1,2*}"
              "{3*,4,5}", plan(topo, make_key(UCG_COLL_BCAST, 64, 2), &hier));
    EXPECT_TRUE(hier);
    ucg_plan_key_t bkey = make_key(UCG_COLL_BCAST, 64, 2);
    bkey.flat = 1;
    EXPECT_EQ("p2p_bcast:r4 {0,1,2*,3,4,5}", plan(topo, bkey, &hier));
    EXPECT_FALSE(hier);
}

TEST_F(test_ucg_plan, sm_modes_by_ppn)
{
    topo_holder topo9("9,1", 10);   /* [0-8][9] */
    topo_holder topo8("8", 16);

    /* more than SM_BATCHED_MAX_PPN on the largest host: centralized */
    std::string p9 = plan(topo9, make_key(UCG_COLL_ALLREDUCE, 8));
    EXPECT_EQ("sm_reduce:centralized:native:f1024 {0*,1,2,3,4,5,6,7,8} | "
              "p2p_allreduce_rd {0*,9} | "
              "sm_bcast:centralized:f1024 {0*,1,2,3,4,5,6,7,8}", p9);
    EXPECT_EQ("sm_gather:centralized:f1024 {0*,1,2,3,4,5,6,7,8}"
              " o=0,1,2,3,4,5,6,7,8,9 | "
              "p2p_allgather_linear {0*,9} o=0,0,0,0,0,0,0,0,0,9 | "
              "sm_bcast:centralized:f1024 {0*,1,2,3,4,5,6,7,8}",
              plan(topo9, make_key(UCG_COLL_ALLGATHER, 8)));
    /* exactly SM_BATCHED_MAX_PPN: batched */
    EXPECT_EQ("p2p_bcast:r4 {0*,8} | "
              "sm_bcast:batched:f1024 {0*,1,2,3,4,5,6,7}{8*,9,10,11,12,13,14,15}",
              plan(topo8, make_key(UCG_COLL_BCAST, 8, 0)));

    set("SM_BATCHED_MAX_PPN", "9");
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2,3,4,5,6,7,8} | "
              "p2p_allreduce_rd {0*,9} | "
              "sm_bcast:batched:f1024 {0*,1,2,3,4,5,6,7,8}",
              plan(topo9, make_key(UCG_COLL_ALLREDUCE, 8)));
    set("SM_BATCHED_MAX_PPN", "1");
    EXPECT_EQ("p2p_bcast:r4 {0*,8} | "
              "sm_bcast:centralized:f1024 {0*,1,2,3,4,5,6,7}"
              "{8*,9,10,11,12,13,14,15}",
              plan(topo8, make_key(UCG_COLL_BCAST, 8, 0)));
}

TEST_F(test_ucg_plan, forced_sm_modes)
{
    topo_holder topo("3", 6);

    set("SM_BCAST_MODE", "centralized");
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2}{3*,4,5}" ID6 " | "
              "p2p_barrier {0*,3} | "
              "sm_bcast:centralized:f1024 {0*,1,2}{3*,4,5}",
              plan(topo, make_key(UCG_COLL_BARRIER, 0)));
    set("SM_BCAST_MODE", "auto");

    set("SM_INCAST_MODE", "centralized");
    EXPECT_EQ("sm_gather:centralized:f1024 {0*,1,2}{3*,4,5}" ID6 " | "
              "p2p_barrier {0*,3} | "
              "sm_bcast:batched:f1024 {0*,1,2}{3*,4,5}",
              plan(topo, make_key(UCG_COLL_BARRIER, 0)));
    EXPECT_EQ("sm_reduce:centralized:native:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 8)));

    /* locked / atomic: reductions only; gathers follow the ppn rule */
    set("SM_INCAST_MODE", "locked");
    EXPECT_EQ("sm_reduce:locked:native:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 8)));
    EXPECT_EQ("sm_reduce:locked:gather:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 8, 0, UCG_DT_BYTES,
                                  UCG_OP_USER, 1, 4)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2}{3*,4,5}" ID6 " | "
              "p2p_gather {0*,3} o=0,0,0,3,3,3",
              plan(topo, make_key(UCG_COLL_GATHER, 8)));

    set("SM_INCAST_MODE", "atomic");
    ASSERT_TRUE(uct_o2m_op_supported(UCT_O2M_MODE_ATOMIC, UCT_O2M_OP_SUM,
                                     UCT_O2M_DT_INT32));
    EXPECT_EQ("sm_reduce:atomic:native:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_allreduce_rd {0*,3} | "
              "sm_bcast:batched:f1024 {0*,1,2}{3*,4,5}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 8)));
    EXPECT_EQ("sm_reduce:atomic:gather:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo, make_key(UCG_COLL_REDUCE, 64, 0,
                                  UCG_DT_FLOAT_COMPLEX)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2}{3*,4,5}" ID6 " | "
              "p2p_allgather_linear {0*,3} o=0,0,0,3,3,3 | "
              "sm_bcast:batched:f1024 {0*,1,2}{3*,4,5}",
              plan(topo, make_key(UCG_COLL_ALLGATHER, 8)));

    set("SM_INCAST_MODE", "batched");
    set("SM_BATCHED_MAX_PPN", "1");
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2}{3*,4,5}" ID6 " | "
              "p2p_gather {0*,3} o=0,0,0,3,3,3",
              plan(topo, make_key(UCG_COLL_GATHER, 8)));
}

TEST_F(test_ucg_plan, sm_allreduce)
{
    topo_holder topo4("4", 4);
    topo_holder topo5("5", 5);
    topo_holder topo2("2", 4);

    /* one host, small: one hop; the default limit is 2k */
    EXPECT_EQ("sm_allreduce:batched:f1024 {0*,1,2,3}",
              plan(topo4, make_key(UCG_COLL_ALLREDUCE, 8)));
    EXPECT_EQ("sm_allreduce:batched:f1024 {0*,1,2,3}",
              plan(topo4, make_key(UCG_COLL_ALLREDUCE, 2048)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2,3} | "
              "sm_bcast:batched:f1024 {0*,1,2,3}",
              plan(topo4, make_key(UCG_COLL_ALLREDUCE, 2056)));
    /* fragments of whole elements, as sm_reduce */
    EXPECT_EQ("sm_allreduce:batched:f1020 {0*,1,2,3}",
              plan(topo4, make_key(UCG_COLL_ALLREDUCE, 1020, 0,
                                   UCG_DT_BYTES, UCG_OP_USER, 1, 12)));
    /* more members than SM_ALLREDUCE_MAX_PPN, several hosts, a forced
     * method, non-commutative: not used */
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2,3,4} | "
              "sm_bcast:batched:f1024 {0*,1,2,3,4}",
              plan(topo5, make_key(UCG_COLL_ALLREDUCE, 8)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1}{2*,3} | "
              "p2p_allreduce_rd {0*,2} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}",
              plan(topo2, make_key(UCG_COLL_ALLREDUCE, 8)));
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2,3,4} o=0,1,2,3,4 | "
              "sm_bcast:batched:f1024 {0*,1,2,3,4}",
              plan(topo5, make_key(UCG_COLL_BARRIER, 0)));
    set("SM_ALLREDUCE_MAX_PPN", "5");
    EXPECT_EQ("sm_allreduce:batched:f1024 {0*,1,2,3,4}",
              plan(topo5, make_key(UCG_COLL_ALLREDUCE, 8)));
    EXPECT_EQ("sm_allreduce:batched:f1024 {0*,1,2,3,4}",
              plan(topo5, make_key(UCG_COLL_BARRIER, 0)));
    set("SM_ALLREDUCE_MAX", "0");
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2,3} | "
              "sm_bcast:batched:f1024 {0*,1,2,3}",
              plan(topo4, make_key(UCG_COLL_ALLREDUCE, 8)));
    set("SM_ALLREDUCE_MAX", "2k");
    set("ALLREDUCE_P2P", "recursive_doubling");
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2,3} | "
              "sm_bcast:batched:f1024 {0*,1,2,3}",
              plan(topo4, make_key(UCG_COLL_ALLREDUCE, 8)));
    set("ALLREDUCE_P2P", "auto");
    /* the size range ends at the limit */
    EXPECT_EQ(range(0, 2048),
              size_range(topo4, make_key(UCG_COLL_ALLREDUCE, 8)));
    EXPECT_EQ(range(2049, SIZE_MAX),
              size_range(topo4, make_key(UCG_COLL_ALLREDUCE, 2049)));
}

TEST_F(test_ucg_plan, locked_threshold)
{
    topo_holder topo3("3", 6);
    topo_holder topo2("2", 6);

    set("SM_LOCKED_THRESH", "1k");
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo3, make_key(UCG_COLL_REDUCE, 1020)));
    EXPECT_EQ("sm_reduce:locked:native:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo3, make_key(UCG_COLL_REDUCE, 1024)));
    EXPECT_EQ("sm_reduce:locked:native:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_allreduce_rd {0*,3} | "
              "sm_bcast:batched:f1024 {0*,1,2}{3*,4,5}",
              plan(topo3, make_key(UCG_COLL_ALLREDUCE, 4096)));
    /* hosts of 2: never locked */
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1}{2*,3}{4*,5} | "
              "p2p_reduce:r4 {0*,2,4}",
              plan(topo2, make_key(UCG_COLL_REDUCE, 4096)));
    /* no native pair: the ppn rule's mode gathers */
    EXPECT_EQ("sm_reduce:batched:gather:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_reduce:r4 {0*,3}",
              plan(topo3, make_key(UCG_COLL_REDUCE, 4096, 0,
                                   UCG_DT_LONG_DOUBLE)));
    /* gathers ignore it */
    EXPECT_EQ("sm_gather:batched:f1024 {0*,1,2}{3*,4,5}" ID6 " | "
              "p2p_gather {0*,3} o=0,0,0,3,3,3",
              plan(topo3, make_key(UCG_COLL_GATHER, 4096)));
}

TEST_F(test_ucg_plan, forced_p2p_methods)
{
    topo_holder topo3("3", 6);   /* 2 leaders */
    topo_holder topo2("2", 6);   /* 3 leaders */
    topo_holder flat("1", 5);

    set("ALLREDUCE_P2P", "ring");
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1,2}{3*,4,5} | "
              "p2p_allreduce_ring {0*,3} | "
              "sm_bcast:batched:f1024 {0*,1,2}{3*,4,5}",
              plan(topo3, make_key(UCG_COLL_ALLREDUCE, 8)));
    EXPECT_EQ("p2p_allreduce_ring {0*,1,2,3,4}",
              plan(flat, make_key(UCG_COLL_ALLREDUCE, 8)));

    set("ALLREDUCE_P2P", "recursive_doubling");
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1}{2*,3}{4*,5} | "
              "p2p_allreduce_rd {0*,2,4} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}",
              plan(topo2, make_key(UCG_COLL_ALLREDUCE, 1 << 20)));

    set("ALLREDUCE_P2P", "knomial");
    set("KNOMIAL_RADIX", "3");
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1}{2*,3}{4*,5} | "
              "p2p_reduce:r3 {0*,2,4} | p2p_bcast:r3:f65536 {0*,2,4} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}",
              plan(topo2, make_key(UCG_COLL_ALLREDUCE, 1 << 20)));
    EXPECT_EQ("p2p_reduce:r3 {0*,1,2,3,4} | p2p_bcast:r3 {0*,1,2,3,4}",
              plan(flat, make_key(UCG_COLL_ALLREDUCE, 8)));

    set("ALLGATHER_P2P", "ring");
    EXPECT_EQ("p2p_allgather_ring {0*,1,2,3,4} o=0,1,2,3,4",
              plan(flat, make_key(UCG_COLL_ALLGATHER, 1)));
    set("ALLGATHER_P2P", "linear");
    EXPECT_EQ("p2p_allgather_linear {0*,1,2,3,4} o=0,1,2,3,4",
              plan(flat, make_key(UCG_COLL_ALLGATHER, 1 << 20)));

    /* the only methods of the others: same plans as auto */
    set("BCAST_P2P", "knomial");
    set("REDUCE_P2P", "knomial");
    set("BARRIER_P2P", "dissemination");
    set("GATHER_P2P", "linear");
    set("SCATTER_P2P", "linear");
    EXPECT_EQ("p2p_bcast:r3 {0,1*,2,3,4}",
              plan(flat, make_key(UCG_COLL_BCAST, 8, 1)));
    EXPECT_EQ("p2p_reduce:r3 {0,1*,2,3,4}",
              plan(flat, make_key(UCG_COLL_REDUCE, 8, 1)));
    EXPECT_EQ("p2p_barrier {0*,1,2,3,4}",
              plan(flat, make_key(UCG_COLL_BARRIER, 0)));
    EXPECT_EQ("p2p_gather {0,1*,2,3,4} o=0,1,2,3,4",
              plan(flat, make_key(UCG_COLL_GATHER, 8, 1)));
    EXPECT_EQ("p2p_scatter {0,1*,2,3,4} o=0,1,2,3,4",
              plan(flat, make_key(UCG_COLL_SCATTER, 8, 1)));

    /* a method the collective does not have (config not checked) */
    scoped_log_capture capture;
    ASSERT_EQ(UCS_OK, ucg_config_modify(m_config, "BCAST_P2P", "ring"));
    EXPECT_EQ("error: Invalid parameter",
              plan(flat, make_key(UCG_COLL_BCAST, 8, 1)));
    EXPECT_TRUE(capture.has("UCG_BCAST_P2P")) << capture.all();
}

TEST_F(test_ucg_plan, thresholds)
{
    topo_holder topo("2", 8);   /* 4 leaders */
    topo_holder flat("1", 4);

    set("P2P_FRAG_SIZE", "1k");
    EXPECT_EQ("p2p_bcast:r4 {0*,1,2,3}",
              plan(flat, make_key(UCG_COLL_BCAST, 2048)));
    EXPECT_EQ("p2p_bcast:r4:f1024 {0*,1,2,3}",
              plan(flat, make_key(UCG_COLL_BCAST, 2049)));
    set("P2P_FRAG_SIZE", "inf");
    EXPECT_EQ("p2p_bcast:r4 {0*,1,2,3}",
              plan(flat, make_key(UCG_COLL_BCAST, (size_t)1 << 40)));

    set("ALLREDUCE_RING_THRESH", "4k");
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1}{2*,3}{4*,5}{6*,7} | "
              "p2p_allreduce_rd {0*,2,4,6} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}{6*,7}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 4092)));
    EXPECT_EQ("sm_reduce:batched:native:f1024 {0*,1}{2*,3}{4*,5}{6*,7} | "
              "p2p_allreduce_ring {0*,2,4,6} | "
              "sm_bcast:batched:f1024 {0*,1}{2*,3}{4*,5}{6*,7}",
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 4096)));
    set("ALLREDUCE_RING_THRESH", "inf");
    EXPECT_EQ("p2p_allreduce_rd {0*,1,2,3}",
              plan(flat, make_key(UCG_COLL_ALLREDUCE, (size_t)1 << 40)));

    /* the whole result: msg_size * group size */
    set("ALLGATHER_RING_THRESH", "100");
    EXPECT_EQ("p2p_allgather_linear {0*,1,2,3} o=0,1,2,3",
              plan(flat, make_key(UCG_COLL_ALLGATHER, 24)));
    EXPECT_EQ("p2p_allgather_ring {0*,1,2,3} o=0,1,2,3",
              plan(flat, make_key(UCG_COLL_ALLGATHER, 25)));
    set("ALLGATHER_RING_THRESH", "0");
    EXPECT_EQ("p2p_allgather_ring {0*,1,2,3} o=0,1,2,3",
              plan(flat, make_key(UCG_COLL_ALLGATHER, 0)));
    set("ALLGATHER_RING_THRESH", "inf");
    EXPECT_EQ("p2p_allgather_linear {0*,1,2,3} o=0,1,2,3",
              plan(flat, make_key(UCG_COLL_ALLGATHER, (size_t)1 << 40)));
}

TEST_F(test_ucg_plan, bad_keys)
{
    topo_holder topo("2", 4);
    scoped_log_capture capture;

    EXPECT_EQ("error: Invalid parameter",
              plan(topo, make_key(UCG_COLL_BCAST, 8, 4)));
    EXPECT_EQ("error: Invalid parameter",
              plan(topo, make_key(UCG_COLL_GATHER, 8, 100)));
    EXPECT_EQ("error: Invalid parameter",
              plan(topo, make_key(UCG_COLL_LAST, 8)));
    EXPECT_FALSE(capture.lines().empty());

    /* unrooted collectives ignore the root */
    EXPECT_EQ(plan(topo, make_key(UCG_COLL_ALLREDUCE, 8, 0)),
              plan(topo, make_key(UCG_COLL_ALLREDUCE, 8, 77)));
}


/* ------------------------------------------------------------------------ */
/* Size ranges and the plan cache: a cached plan is the plan of its size    */
/* ------------------------------------------------------------------------ */

/*
 * Through a cache, sizes in increasing then decreasing order: every plan the
 * cache gives is the one ucg_plan_create makes for that exact size, and the
 * plan is the same at both ends of its range.  Elements of 2000 bytes do not
 * fit the 1024-byte host-local fragments: reductions of them are flat, but
 * an empty one keeps its host-local phases (an empty reduction carries no
 * element).  The size classes that came before these ranges gave the plan of
 * 0 bytes to the non-empty reductions of the same class.
 */
TEST_F(test_ucg_plan, cache_matches_create)
{
    static const std::vector<std::pair<const char*, const char*>> configs[] = {
        {},
        {{"P2P_FRAG_SIZE", "1k"}, {"ALLREDUCE_RING_THRESH", "3000"},
         {"ALLGATHER_RING_THRESH", "5000"}, {"SM_LOCKED_THRESH", "2k"}},
        {{"ALLREDUCE_P2P", "knomial"}, {"P2P_FRAG_SIZE", "512"},
         {"SM_LOCKED_THRESH", "0"}},
        {{"ALLREDUCE_RING_THRESH", "0"}, {"ALLGATHER_RING_THRESH", "1"},
         {"P2P_FRAG_SIZE", "1"}, {"SM_LOCKED_THRESH", "1"}},
        {{"ALLGATHER_RING_THRESH", "inf"}, {"ALLREDUCE_RING_THRESH", "inf"},
         {"P2P_FRAG_SIZE", "inf"}},
        {{"SM_BCAST_CMA_THRESH", "8k"}, {"SM_REDUCE_CMA_THRESH", "16k"},
         {"SM_ALLREDUCE_MAX", "64k"}, {"SM_SCATTER_MAX", "4k"},
         {"SM_ALLGATHER_MAX", "3000"}},
        {{"SM_INCAST_MODE", "locked"}, {"SM_FRAG_SIZE", "512"},
         {"HIER", "on"}, {"ALLREDUCE_P2P", "ring"}},
        {{"MC_MAX_SIZE", "3000"}, {"ALLREDUCE_P2P", "knomial"},
         {"P2P_FRAG_SIZE", "1k"}}
    };
    const std::vector<std::pair<const char*, unsigned>> topos = {
        {"12", 12}, {"2", 6}, {"3,1,2", 7}, {"1", 5}, {"4", 3}, {"1", 2}
    };
    struct kind {
        ucg_dtype_t dtype;
        ucg_op_t    op;
        int         commutative;
        size_t      dt_size;
    };
    std::vector<size_t> sizes = {0, 1, 2, 3, 4, 7, 8, 9};
    for (size_t base : {512ul, 1000ul, 1024ul, 1250ul, 2000ul, 2048ul,
                        3000ul, 4096ul, 5000ul, 8192ul, 16384ul, 65536ul,
                        131072ul}) {
        for (long d = -2; d <= 2; ++d) {
            sizes.push_back(base + d);
        }
    }
    for (size_t s = 16; s <= (1ul << 26); s *= 2) {
        sizes.push_back(s);
        sizes.push_back(s * 3 / 2);
    }
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());

    unsigned checked = 0, hits = 0;
    for (const auto &cfg : configs) {
        for (const auto &var : cfg) {
            set(var.first, var.second);
        }

        for (int t = 0; t < UCG_COLL_LAST; ++t) {
            ucg_coll_type_t type = (ucg_coll_type_t)t;
            std::vector<kind> kinds = {{UCG_DT_UINT8, UCG_OP_SUM, 1, 0}};
            if (ucg_coll_type_is_reduction(type)) {
                kinds.push_back({UCG_DT_UINT8, UCG_OP_USER, 0, 0});
                kinds.push_back({UCG_DT_LONG_DOUBLE, UCG_OP_SUM, 1, 0});
                kinds.push_back({UCG_DT_BYTES, UCG_OP_USER, 1, 2000});
            }

            for (const auto &k : kinds) {
                /* 2: o2m, and mc_bcast between hosts */
                for (int o2m = 0; o2m <= 2; ++o2m) {
                    for (const auto &tp : topos) {
                        topo_holder topo(tp.first, tp.second, o2m > 0);

                        topo.t.mc = (o2m == 2);
                        for (int down = 0; down <= 1; ++down) {
                            ucg_plan_cache_t cache;
                            ucg_plan_cache_init(&cache);
                            for (size_t i = 0; i < sizes.size(); ++i) {
                                size_t size = sizes[down ?
                                                    sizes.size() - 1 - i : i];
                                ucg_plan_key_t key = make_key(type, size, 0,
                                                              k.dtype, k.op,
                                                              k.commutative,
                                                              k.dt_size);
                                const ucg_plan_t *cached;
                                int created;

                                ASSERT_EQ(UCS_OK,
                                          ucg_plan_cache_get(&cache, m_config,
                                                             &topo.t, &key,
                                                             &cached,
                                                             &created));
                                ASSERT_EQ(plan(topo, key),
                                          describe(cached, &topo.t))
                                    << "collective " << type << " size "
                                    << size << " from a plan of "
                                    << cached->key.msg_size << " on "
                                    << tp.first << "x" << tp.second
                                    << " o2m " << o2m;
                                ASSERT_LE(cached->size_min, size);
                                ASSERT_GE(cached->size_max, size);
                                hits += !created;
                                ++checked;

                                if (created) {
                                    /* the ends of the range */
                                    key.msg_size = cached->size_min;
                                    ASSERT_EQ(plan(topo, key),
                                              describe(cached, &topo.t));
                                    key.msg_size = cached->size_max;
                                    ASSERT_EQ(plan(topo, key),
                                              describe(cached, &topo.t));
                                }
                            }
                            ucg_plan_cache_cleanup(&cache);
                        }
                    }
                }
            }
        }
    }

    /* the ranges are wider than one size */
    EXPECT_GT(hits, checked / 2);
}

/* The empty reduction and the one of one large element are two plans */
TEST_F(test_ucg_plan, cache_empty_reduction_of_large_elements)
{
    topo_holder topo("3", 6);
    ucg_plan_cache_t cache;
    const ucg_plan_t *empty, *one;

    ucg_plan_cache_init(&cache);
    for (ucg_coll_type_t type : {UCG_COLL_REDUCE, UCG_COLL_ALLREDUCE}) {
        ucg_plan_key_t key = make_key(type, 0, 0, UCG_DT_BYTES, UCG_OP_USER,
                                      1, 2000);
        ASSERT_EQ(UCS_OK, ucg_plan_cache_get(&cache, m_config, &topo.t, &key,
                                             &empty, NULL));
        EXPECT_TRUE(empty->hier);
        EXPECT_EQ(range(0, 0), range(empty->size_min, empty->size_max));

        key.msg_size = 2000;
        ASSERT_EQ(UCS_OK, ucg_plan_cache_get(&cache, m_config, &topo.t, &key,
                                             &one, NULL));
        EXPECT_NE(empty, one);
        EXPECT_FALSE(one->hier);
        EXPECT_EQ(plan(topo, key), describe(one, &topo.t));
    }
    ucg_plan_cache_cleanup(&cache);
}

/* The range ends where a threshold is crossed */
TEST_F(test_ucg_plan, size_range_boundaries)
{
    topo_holder hier("4", 8);
    topo_holder flat("1", 8);
    const size_t inf = SIZE_MAX;

    set("P2P_FRAG_SIZE", "1k");
    set("ALLREDUCE_RING_THRESH", "3000");
    set("SM_LOCKED_THRESH", "2k");
    set("ALLGATHER_RING_THRESH", "5000");
    set("SM_BCAST_CMA_THRESH", "8k");
    set("SM_REDUCE_CMA_THRESH", "16k");

    auto r = [&](const topo_holder &topo, ucg_coll_type_t t, size_t s) {
        return size_range(topo, make_key(t, s, 0, UCG_DT_UINT8));
    };

    EXPECT_EQ(range(0, 2048), r(hier, UCG_COLL_BCAST, 0));
    EXPECT_EQ(range(0, 2048), r(hier, UCG_COLL_BCAST, 2048));
    EXPECT_EQ(range(2049, 8191), r(hier, UCG_COLL_BCAST, 2049));
    EXPECT_EQ(range(8192, inf), r(hier, UCG_COLL_BCAST, 8192));
    /* the single-copy threshold is a choice of host-local phases only */
    EXPECT_EQ(range(2049, inf), r(flat, UCG_COLL_BCAST, 8192));

    /* 4 members a host: the locked mode */
    EXPECT_EQ(range(0, 2047), r(hier, UCG_COLL_REDUCE, 0));
    EXPECT_EQ(range(2048, 16383), r(hier, UCG_COLL_REDUCE, 2048));
    EXPECT_EQ(range(16384, inf), r(hier, UCG_COLL_REDUCE, 1 << 30));
    EXPECT_EQ(range(0, inf), r(flat, UCG_COLL_REDUCE, 1 << 30));

    /* recursive doubling between the two leaders: no ring threshold */
    EXPECT_EQ(range(0, 2047), r(hier, UCG_COLL_ALLREDUCE, 2047));
    EXPECT_EQ(range(2048, inf), r(hier, UCG_COLL_ALLREDUCE, 2048));
    EXPECT_EQ(range(0, 2999), r(flat, UCG_COLL_ALLREDUCE, 8));
    EXPECT_EQ(range(3000, inf), r(flat, UCG_COLL_ALLREDUCE, 3000));

    EXPECT_EQ(range(0, inf), r(hier, UCG_COLL_BARRIER, 0));
    EXPECT_EQ(range(0, inf), r(hier, UCG_COLL_GATHER, 1 << 30));

    /* allgather of 8 ranks: the ring from 625 bytes (625 * 8 = 5000) */
    EXPECT_EQ(range(0, 624), r(flat, UCG_COLL_ALLGATHER, 624));
    EXPECT_EQ(range(625, inf), r(flat, UCG_COLL_ALLGATHER, 625));
    for (unsigned n = 1; n <= 64; ++n) {
        topo_holder topo("1", n, 0);
        for (size_t s : {0ul, 1ul, 77ul, 1249ul, 1250ul, 1666ul, 1667ul,
                         5000ul}) {
            bool ring = (s * n >= 5000);
            std::string p = plan(topo, make_key(UCG_COLL_ALLGATHER, s));
            if (n == 1) {
                EXPECT_EQ("", p);
            } else {
                EXPECT_EQ(ring ? 0u : std::string::npos,
                          p.find("p2p_allgather_ring")) << n << " " << s;
            }
        }
    }
}


/* ------------------------------------------------------------------------ */
/* Sets lookup and printing                                                 */
/* ------------------------------------------------------------------------ */

TEST_F(test_ucg_plan, find_set)
{
    topo_holder topo(std::vector<uint64_t>{1, 2, 1, 3, 2, 1, 4, 4});
    ucg_plan_t *plan;

    for (int t = 0; t < UCG_COLL_LAST; ++t) {
        ucg_plan_key_t key = make_key((ucg_coll_type_t)t, 8, 4);
        ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &topo.t, &key, &plan));
        ASSERT_GT(plan->num_phases, 0u);
        for (unsigned p = 0; p < plan->num_phases; ++p) {
            const ucg_phase_t &ph = plan->phases[p];
            for (unsigned r = 0; r < topo.t.size + 2; ++r) {
                const ucg_phase_set_t *expect = NULL;
                unsigned expect_idx = 0, idx = 999;
                for (unsigned s = 0; s < ph.num_sets; ++s) {
                    for (unsigned i = 0; i < ph.sets[s].count; ++i) {
                        if (ph.sets[s].ranks[i] == r) {
                            expect     = &ph.sets[s];
                            expect_idx = i;
                        }
                    }
                }
                EXPECT_EQ(expect, ucg_phase_find_set(&ph, r, &idx))
                    << "coll " << t << " phase " << p << " rank " << r;
                if (expect != NULL) {
                    EXPECT_EQ(expect_idx, idx);
                }
            }
        }
        ucg_plan_destroy(plan);
    }
}

TEST_F(test_ucg_plan, print)
{
    topo_holder topo("2", 6);
    topo_holder inter(std::vector<uint64_t>{0, 1, 0, 1});
    topo_holder flat("1", 5, 0);
    ucg_plan_key_t key;
    ucg_plan_t *plan;

    key = make_key(UCG_COLL_ALLREDUCE, 8, 0, UCG_DT_DOUBLE);
    ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &topo.t, &key, &plan));
    EXPECT_EQ(
        "allreduce 8 bytes sum on double, 6 ranks on 3 hosts "
        "[0,1][2,3][4,5]: hierarchical, 3 phases\n"
        "  0: sm_reduce            sm_incast batched native frag 1024   "
        "        {0*,1} {2*,3} {4*,5}\n"
        "  1: p2p_allreduce_rd     ucp                                  "
        "        {0*,2,4}\n"
        "  2: sm_bcast             sm_bcast  batched frag 1024          "
        "        {0*,1} {2*,3} {4*,5}\n",
        print_plan(plan, &topo.t));
    ucg_plan_destroy(plan);

    key = make_key(UCG_COLL_GATHER, 16, 3);
    ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &inter.t, &key, &plan));
    EXPECT_EQ(
        "gather 16 bytes root 3, 4 ranks on 2 hosts [0,2][1,3]: "
        "hierarchical, 2 phases\n"
        "  0: sm_gather            sm_incast batched frag 1024          "
        "        {0*,2} {1,3*}\n"
        "  1: p2p_gather           ucp       blocks@leaders             "
        "        {0,3*}\n",
        print_plan(plan, &inter.t));
    ucg_plan_destroy(plan);

    key = make_key(UCG_COLL_REDUCE, 1 << 20, 2, UCG_DT_INT32, UCG_OP_USER, 0);
    ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &flat.t, &key, &plan));
    EXPECT_EQ(
        "reduce 1048576 bytes user on int32 (non-commutative) root 2, "
        "5 ranks on 5 hosts [0][1][2][3][4]: flat, 2 phases\n"
        "  0: p2p_gather           ucp                                  "
        "        {0,1,2*,3,4}\n"
        "  1: fold                 local                                "
        "        {2*}\n",
        print_plan(plan, &flat.t));
    ucg_plan_destroy(plan);

    /* long runs are compressed, never across the root */
    topo_holder big("8", 16);
    key = make_key(UCG_COLL_BCAST, 1 << 20, 10);
    ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &big.t, &key, &plan));
    EXPECT_EQ(
        "bcast 1048576 bytes root 10, 16 ranks on 2 hosts [0-7][8-15]: "
        "hierarchical, 2 phases\n"
        "  0: p2p_bcast            ucp       radix 4 frag 65536         "
        "        {0,10*}\n"
        "  1: sm_bcast_cma         sm_bcast  batched ack batched        "
        "        {0*,1-7} {8,9,10*,11-15}\n",
        print_plan(plan, &big.t));
    ucg_plan_destroy(plan);

    /* broadcasts between hosts on multicast: the column names the group's
     * transport, whichever it took */
    topo_holder mc("2", 4);
    key = make_key(UCG_COLL_BCAST, 8, 0);
    mc.t.mc = 1;
    for (unsigned tl = 0; tl < UCG_MC_TL_LAST; ++tl) {
        std::string name = ucg_mc_tl_names[tl];
        mc.t.mc_tl = tl;
        ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &mc.t, &key, &plan));
        EXPECT_EQ(
            "bcast 8 bytes root 0, 4 ranks on 2 hosts [0,1][2,3]: "
            "hierarchical, 2 phases\n"
            "  0: mc_bcast             " + name +
            std::string(10 - name.size(), ' ') +
            "                                   {0*,2}\n"
            "  1: sm_bcast             sm_bcast  batched frag 1024          "
            "        {0*,1} {2*,3}\n",
            print_plan(plan, &mc.t));
        ucg_plan_destroy(plan);
    }

        /* one rank */
    topo_holder one(std::vector<uint64_t>{0});
    key = make_key(UCG_COLL_BARRIER, 0);
    ASSERT_EQ(UCS_OK, ucg_plan_create(m_config, &one.t, &key, &plan));
    EXPECT_EQ("barrier 0 bytes, 1 rank on 1 host [0]: flat, 0 phases\n",
              print_plan(plan, &one.t));
    ucg_plan_destroy(plan);
}

} /* namespace */
