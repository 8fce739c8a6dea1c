/**
 * ucx-o2m tests: UCG collectives, results checked against a reference
 * computed locally from every member's deterministic input.
 *
 * One child run per configuration (group size, host layout, transports)
 * loops over a matrix of collectives x message sizes x roots x datatypes /
 * operations x in-place, with one context and group; then persistent
 * collectives, and several outstanding collectives on two groups.  Each
 * configuration logs its time.
 */
#include "common/harness.h"
#include "common/ucg_harness.h"
#include "common/log_capture.h"

extern "C" {
#include "ucg_group.h"
#include "ucg_coll.h"
#include "phase/ucg_phase.h"
#include "ucg_progress.h"
#include "ucg_context.h"
#include "o2m_group.h"
#include <ucs/config/global_opts.h>
}

#include <algorithm>
#include <set>
#include <climits>
#include <cstring>
#include <signal.h>
#include <sys/mman.h>

using namespace ucg_test;
using o2m_test::expect_only_killed;
using o2m_test::now_sec;

namespace {

/* How much of the matrix a configuration runs */
enum {
    LEVEL_SMALL,   /* small sizes, one fragment-crossing size */
    LEVEL_MEDIUM,  /* + fragment boundaries, ring/pipeline thresholds */
    LEVEL_FULL     /* + 1 MiB, more dtypes at every size */
};

/* How the one-to-many transports are turned off */
enum {
    O2M_ON,
    O2M_OFF_TLS,   /* UCX_TLS=^sm_bcast,sm_incast */
    O2M_OFF_ENV    /* UCX_UCG_O2M=n */
};

struct coll_config {
    const char *name;
    unsigned   np;
    const char *hosts;     /* UCX_UCG_HOSTS */
    int        o2m;
    int        level;
    bool       all_pairs;  /* allreduce of every valid (dtype, op) */
    bool       own_ucp;    /* UCP context and worker given to UCG */
    /* more UCX_UCG_ variables, "NAME=value;NAME=value" without the prefix:
     * other algorithms and transport modes */
    const char *extra;
};

std::ostream &operator<<(std::ostream &os, const coll_config &c)
{
    return os << c.name;
}

env_t config_env(const coll_config &c)
{
    env_t env;

    env["UCX_UCG_HOSTS"] = c.hosts;
    if (c.o2m == O2M_OFF_TLS) {
        env["UCX_TLS"] = "^sm_bcast,sm_incast";
    } else if (c.o2m == O2M_OFF_ENV) {
        env["UCX_UCG_O2M"] = "n";
    }

    std::string extra = (c.extra != NULL) ? c.extra : "";
    size_t pos = 0;
    while (pos < extra.size()) {
        size_t end = extra.find(';', pos);
        std::string kv = extra.substr(pos, (end == std::string::npos) ?
                                           std::string::npos : (end - pos));
        size_t eq = kv.find('=');
        if (eq != std::string::npos) {
            env["UCX_UCG_" + kv.substr(0, eq)] = kv.substr(eq + 1);
        }
        pos = (end == std::string::npos) ? extra.size() : (end + 1);
    }
    return env;
}

std::string config_label(const coll_config &c)
{
    static const char *o2m_names[] = {"o2m", "UCX_TLS=^sm_bcast,sm_incast",
                                      "UCX_UCG_O2M=n"};
    char buf[256];

    snprintf(buf, sizeof(buf), "[np=%u hosts=%s %s%s%s]", c.np, c.hosts,
             o2m_names[c.o2m], (c.extra != NULL) ? " " : "",
             (c.extra != NULL) ? c.extra : "");
    return buf;
}


/* Per-collective statistics, written by rank 0 for the parent's log */
struct coll_stats {
    unsigned count[UCG_COLL_LAST];
    double   seconds[UCG_COLL_LAST];
    double   max_seconds;
    char     slowest[200];
    unsigned total;
    double   matrix_seconds;
    double   extra_seconds;
    size_t   sm_frag;
};

void stats_add(coll_stats *st, const coll_desc &d, double sec)
{
    ++st->count[d.type];
    st->seconds[d.type] += sec;
    ++st->total;
    if (sec > st->max_seconds) {
        st->max_seconds = sec;
        snprintf(st->slowest, sizeof(st->slowest), "%s", d.str().c_str());
    }
}


/* The host-local fragment size of this group's plans (bytes of data per
 * sm message), or the default when the group has no host-local phase */
size_t sm_frag_size(member &m)
{
    ucg_plan_key_t key;
    const ucg_plan_t *plan;
    ucs_status_t status;

    memset(&key, 0, sizeof(key));
    key.type        = UCG_COLL_BCAST;
    key.root        = 0;
    key.op          = UCG_OP_LAST;
    key.dtype       = UCG_DT_UINT8;
    key.commutative = 1;
    key.msg_size    = 1 << 20;
    status = ucg_group_plan(m.group, &key, &plan);
    CHILD_CHECK_OK(status);
    for (unsigned i = 0; i < plan->num_phases; ++i) {
        if ((plan->phases[i].method == UCG_PHASE_SM_BCAST) &&
            (plan->phases[i].frag_size > 0)) {
            return plan->phases[i].frag_size;
        }
    }
    return 8176;
}

bool coll_in_place_ok(ucg_coll_type_t t)
{
    return (t != UCG_COLL_BCAST) && (t != UCG_COLL_BARRIER);
}

struct dtype_op {
    ucg_dtype_t    dtype;
    size_t         dt_size;
    ucg_op_t       op;
    user_op_kind_t user;
};

/* The representative reductions */
const dtype_op reductions[] = {
    {UCG_DT_INT32,          0,  UCG_OP_SUM,    USER_OP_NONE},
    {UCG_DT_DOUBLE,         0,  UCG_OP_MAX,    USER_OP_NONE},
    {UCG_DT_FLOAT_INT,      0,  UCG_OP_MINLOC, USER_OP_NONE},
    {UCG_DT_LONG_DOUBLE,    0,  UCG_OP_SUM,    USER_OP_NONE},
    {UCG_DT_DOUBLE_COMPLEX, 0,  UCG_OP_PROD,   USER_OP_NONE},
    {UCG_DT_UINT64,         0,  UCG_OP_USER,   USER_OP_SUM_U64},
    {UCG_DT_BYTES,          16, UCG_OP_USER,   USER_OP_MAT2}
};
const unsigned num_reductions = sizeof(reductions) / sizeof(reductions[0]);

/* Data-movement element types: bytes, words, odd-sized opaque elements,
 * types with padding */
const dtype_op movements[] = {
    {UCG_DT_UINT8,           0, UCG_OP_LAST, USER_OP_NONE},
    {UCG_DT_INT32,           0, UCG_OP_LAST, USER_OP_NONE},
    {UCG_DT_BYTES,           3, UCG_OP_LAST, USER_OP_NONE},
    {UCG_DT_LONG_DOUBLE,     0, UCG_OP_LAST, USER_OP_NONE},
    {UCG_DT_DOUBLE_INT,      0, UCG_OP_LAST, USER_OP_NONE}
};
const unsigned num_movements = sizeof(movements) / sizeof(movements[0]);


class matrix_builder {
public:
    matrix_builder(unsigned np, size_t frag) : m_np(np), m_frag(frag) {}

    void add(ucg_coll_type_t type, const dtype_op &dop, size_t count,
             unsigned root, bool in_place)
    {
        coll_desc d(type, count, dop.dtype, dop.op, root, in_place);

        d.dt_size = dop.dt_size;
        d.user    = dop.user;
        d.seed    = m_list.size() + 1;
        /* now and then unaligned user buffers */
        d.misalign = ((m_list.size() % 5) == 4) ? (1 + (m_list.size() % 7)) :
                                                  0;
        m_list.push_back(d);
    }

    /* count in elements of dop for about @a bytes bytes */
    static size_t elems(const dtype_op &dop, size_t bytes)
    {
        size_t esize = (dop.dtype == UCG_DT_BYTES) ? dop.dt_size :
                                                     ucg_dtype_size(dop.dtype);
        return std::max<size_t>(1, bytes / esize);
    }

    std::vector<unsigned> roots(bool all) const
    {
        std::vector<unsigned> r;

        if (all) {
            for (unsigned i = 0; i < m_np; ++i) {
                r.push_back(i);
            }
        } else {
            r.push_back(0);
            if (m_np > 1) {
                r.push_back(m_np - 1);
            }
        }
        return r;
    }

    /* One collective type at one size, over roots / in-place / dtypes */
    void add_sized(ucg_coll_type_t type, const std::vector<dtype_op> &dops,
                   size_t bytes, bool exact_count, size_t count,
                   bool all_roots, bool both_in_place)
    {
        bool rooted = (type == UCG_COLL_BCAST) || (type == UCG_COLL_REDUCE) ||
                      (type == UCG_COLL_GATHER) || (type == UCG_COLL_SCATTER);
        std::vector<unsigned> rts = rooted ? roots(all_roots) :
                                             std::vector<unsigned>{0};
        unsigned k = 0;

        for (const dtype_op &dop : dops) {
            size_t n = exact_count ? count : elems(dop, bytes);
            for (unsigned root : rts) {
                bool ip = coll_in_place_ok(type) && ((k++ % 2) == 1);
                add(type, dop, n, root, ip);
                if (both_in_place && coll_in_place_ok(type)) {
                    add(type, dop, n, root, !ip);
                }
            }
        }
    }

    std::vector<coll_desc> build(int level, bool all_pairs)
    {
        std::vector<dtype_op> red(reductions, reductions + num_reductions);
        std::vector<dtype_op> mov(movements, movements + num_movements);
        std::vector<dtype_op> red1 = {reductions[0]};
        std::vector<dtype_op> mov1 = {movements[1]};
        const dtype_op u8_sum  = {UCG_DT_UINT8, 0, UCG_OP_SUM, USER_OP_NONE};
        const dtype_op u8      = movements[0];
        const dtype_op dbl_max = reductions[1];
        const dtype_op mat2    = reductions[6];

        /* The collectives the harness's reference knows (the other ones
         * of API 1.3 have tests of their own, e.g. test_ucg_redscan.cc) */
        std::vector<int> types;
        for (int t = 0; t <= UCG_COLL_ALLGATHER; ++t) {
            types.push_back(t);
        }
        types.push_back(UCG_COLL_ALLTOALL);
        types.push_back(UCG_COLL_ALLTOALLV);
        for (int t : types) {
            ucg_coll_type_t type = (ucg_coll_type_t)t;
            bool is_red          = (type == UCG_COLL_REDUCE) ||
                                   (type == UCG_COLL_ALLREDUCE);
            const std::vector<dtype_op> &dops = is_red ? red : mov;

            if ((type == UCG_COLL_GATHERV) || (type == UCG_COLL_SCATTERV) ||
                (type == UCG_COLL_ALLGATHERV)) {
                continue; /* counts per member: test_ucg_vcoll.cc */
            }

            if (type == UCG_COLL_BARRIER) {
                for (unsigned i = 0; i < 3; ++i) {
                    add(type, movements[0], 0, 0, false);
                }
                continue;
            }

            /* 0 and 1 element, and a few: every root, both in-place */
            add_sized(type, is_red ? red1 : mov1, 0, true, 0, true, true);
            add_sized(type, dops, 0, true, 1, true, false);
            add_sized(type, dops, 0, true, 7, true, true);

            /* the host-local fragment boundary and 2-3 fragments: bytes
             * for data movement, uint8 sum for reductions */
            const dtype_op &bop = is_red ? u8_sum : u8;
            add_sized(type, {bop}, 0, true, m_frag - 1, false, false);
            if (level >= LEVEL_MEDIUM) {
                add_sized(type, {bop}, 0, true, m_frag, false, false);
                add_sized(type, {bop}, 0, true, m_frag + 1, false, false);
                add_sized(type, is_red ? std::vector<dtype_op>{red[0], dbl_max}
                                       : mov1,
                          2 * m_frag + 4, false, 0, false, false);
                add_sized(type, is_red ? std::vector<dtype_op>{mat2}
                                       : std::vector<dtype_op>{movements[2]},
                          3 * m_frag - 5, false, 0, false, false);
            }

            /* ring / pipeline thresholds (64 KiB) */
            if (level >= LEVEL_MEDIUM) {
                add_sized(type, is_red ? red1 : mov1, 0, true, 16383, false,
                          false);
                add_sized(type, is_red ? red1 : mov1, 0, true, 16385, false,
                          false);
            }
            if (level >= LEVEL_FULL) {
                add_sized(type, is_red ? red1 : mov1, 0, true, 16384, false,
                          false);
                /* every type of the set over 2 fragments, both in-place */
                add_sized(type, dops, 2 * m_frag + 100, false, 0, false,
                          true);
                /* and around the threshold */
                add_sized(type, dops, 70000, false, 0, false, false);
                /* 1 MiB per member */
                add_sized(type, is_red ? std::vector<dtype_op>{red[0], red[1]}
                                       : mov1,
                          1 << 20, false, 0, false, false);
            }
        }

        if (all_pairs) {
            /* every valid (dtype, op) pair: a few elements, and (full)
             * about 1.5 fragments, so that transport-native reductions
             * cross a fragment boundary */
            for (int dt = 0; dt < UCG_DT_BYTES; ++dt) {
                for (int op = 0; op < UCG_OP_USER; ++op) {
                    if (!ucg_op_valid((ucg_op_t)op, (ucg_dtype_t)dt)) {
                        continue;
                    }
                    dtype_op dop = {(ucg_dtype_t)dt, 0, (ucg_op_t)op,
                                    USER_OP_NONE};
                    add(UCG_COLL_ALLREDUCE, dop, 5, 0,
                        (m_list.size() % 3) == 0);
                    if (level >= LEVEL_FULL) {
                        add(UCG_COLL_ALLREDUCE, dop,
                            elems(dop, m_frag + (m_frag / 2)), 0,
                            (m_list.size() % 3) == 0);
                    }
                }
            }
        }

        return m_list;
    }

private:
    unsigned               m_np;
    size_t                 m_frag;
    std::vector<coll_desc> m_list;
};


/* init once, start / wait / check several times with new inputs */
void run_persistent(member &m, coll_desc d, unsigned times)
{
    std::string label = m.label + ": persistent " + d.str();
    coll_bufs bufs(d, m.rank, m.size);
    ucg_coll_params_t params = bufs.params();
    ucs_status_t status;
    ucg_coll_h coll;

    status = ucg_coll_init(m.group, &params, &coll);
    CHILD_CHECK(status == UCS_OK, "%s: ucg_coll_init: %s", label.c_str(),
                ucs_status_string(status));
    for (unsigned k = 0; k < times; ++k) {
        d.seed += 1000;
        bufs.fill(d);
        status = ucg_coll_start(coll);
        CHILD_CHECK(status == UCS_OK, "%s: start #%u: %s", label.c_str(), k,
                    ucs_status_string(status));
        status = wait_coll(coll, label);
        CHILD_CHECK(status == UCS_OK, "%s: run #%u: %s", label.c_str(), k,
                    ucs_status_string(status));
        bufs.check(label + " run #" + std::to_string(k));
    }
    ucg_coll_finalize(coll);
}

/* A second start before completion is refused with UCS_ERR_BUSY.  The
 * non-roots start before the root does (OOB barrier), so their instance
 * cannot be complete yet. */
void run_busy(member &m)
{
    coll_desc d(UCG_COLL_BCAST, 100, UCG_DT_INT32, UCG_OP_LAST, 0);
    std::string label = m.label + ": busy " + d.str();
    coll_bufs bufs(d, m.rank, m.size);
    ucg_coll_params_t params = bufs.params();
    ucs_status_t status;
    ucg_coll_h coll;

    d.seed = 77;
    bufs.fill(d);
    status = ucg_coll_init(m.group, &params, &coll);
    CHILD_CHECK_OK(status);
    if (m.rank != d.root) {
        status = ucg_coll_start(coll);
        CHILD_CHECK_OK(status);
        status = ucg_coll_start(coll);
        CHILD_CHECK(status == UCS_ERR_BUSY,
                    "%s: second start before completion returned %s",
                    label.c_str(), ucs_status_string(status));
    }
    m.procs->barrier(m.rank);
    if (m.rank == d.root) {
        status = ucg_coll_start(coll);
        CHILD_CHECK_OK(status);
    }
    status = wait_coll(coll, label);
    CHILD_CHECK(status == UCS_OK, "%s: %s", label.c_str(),
                ucs_status_string(status));
    bufs.check(label);
    ucg_coll_finalize(coll);
}

/*
 * Several outstanding collectives on two groups of the same processes: the
 * second group has the ranks reversed.  Each group's collectives are started
 * in the same order everywhere, but the groups in a different order on even
 * and odd processes; then all are tested round-robin.
 */
void run_outstanding(member &m)
{
    std::vector<unsigned> perm(m.size);
    for (unsigned p = 0; p < m.size; ++p) {
        perm[p] = m.size - 1 - p;
    }
    ucg_group_h g2 = create_group(m, perm);
    unsigned last  = m.size - 1;

    struct item {
        ucg_group_h                group;
        coll_desc                  d;
        std::unique_ptr<coll_bufs> bufs;
        ucg_coll_h                 coll;
        bool                       done;
    };
    std::vector<item> g1_items(3), g2_items(3);

    g1_items[0].d = coll_desc(UCG_COLL_ALLREDUCE, 3000, UCG_DT_INT32,
                              UCG_OP_SUM);
    g1_items[1].d = coll_desc(UCG_COLL_GATHER, 500, UCG_DT_INT32, UCG_OP_LAST,
                              last);
    g1_items[2].d = coll_desc(UCG_COLL_BCAST, 20000, UCG_DT_UINT8,
                              UCG_OP_LAST, last);
    g2_items[0].d = coll_desc(UCG_COLL_BCAST, 9000, UCG_DT_UINT8,
                              UCG_OP_LAST, 0);
    g2_items[1].d = coll_desc(UCG_COLL_REDUCE, 33, UCG_DT_BYTES, UCG_OP_USER,
                              0);
    g2_items[1].d.dt_size = 16;
    g2_items[1].d.user    = USER_OP_MAT2;
    g2_items[2].d = coll_desc(UCG_COLL_ALLGATHER, 1000, UCG_DT_INT32);

    std::vector<item*> order;
    for (auto *grp : {&g1_items, &g2_items}) {
        for (item &it : *grp) {
            it.group  = (grp == &g1_items) ? m.group : g2;
            it.d.seed = 500 + order.size();
            it.bufs.reset(new coll_bufs(it.d, ucg_group_rank(it.group),
                                        m.size));
            it.done   = false;
            ucg_coll_params_t params = it.bufs->params();
            ucs_status_t status = ucg_coll_init(it.group, &params, &it.coll);
            CHILD_CHECK(status == UCS_OK, "%s: outstanding %s: init: %s",
                        m.label.c_str(), it.d.str().c_str(),
                        ucs_status_string(status));
            order.push_back(&it);
        }
    }
    if (m.rank % 2) {
        /* odd processes start the second group's collectives first */
        std::rotate(order.begin(), order.begin() + 3, order.end());
    }

    for (item *it : order) {
        ucs_status_t status = ucg_coll_start(it->coll);
        CHILD_CHECK(status == UCS_OK, "%s: outstanding %s: start: %s",
                    m.label.c_str(), it->d.str().c_str(),
                    ucs_status_string(status));
    }

    double deadline = now_sec() + coll_timeout;
    unsigned left   = order.size();
    while (left > 0) {
        for (item *it : order) {
            if (it->done) {
                continue;
            }
            ucs_status_t status = ucg_coll_test(it->coll);
            if (status == UCS_INPROGRESS) {
                continue;
            }
            std::string label = m.label + ": outstanding (group " +
                                ((it->group == g2) ? "2" : "1") + ") " +
                                it->d.str();
            CHILD_CHECK(status == UCS_OK, "%s: %s", label.c_str(),
                        ucs_status_string(status));
            it->bufs->check(label);
            it->done = true;
            --left;
        }
        CHILD_CHECK(now_sec() < deadline, "%s: %u outstanding collectives not "
                    "complete after %.0f s", m.label.c_str(), left,
                    coll_timeout);
        sched_yield();
    }

    for (item *it : order) {
        ucg_coll_finalize(it->coll);
    }
    /* the collectives of g2 completed everywhere */
    m.procs->barrier(m.rank);
    ucg_group_destroy(g2);
}


class ucg_coll_matrix : public ::testing::TestWithParam<coll_config> {
};

TEST_P(ucg_coll_matrix, matrix)
{
    const coll_config &cfg = GetParam();
    std::string label      = config_label(cfg);
    double start           = now_sec();
    coll_stats st;
    run_opts opts;

    memset(&st, 0, sizeof(st));
    opts.env         = config_env(cfg);
    opts.own_ucp     = cfg.own_ucp;
    opts.timeout     = 200;
    opts.shared_size = sizeof(coll_stats);
    opts.parent_done = [&](const void *shared) {
        memcpy(&st, shared, sizeof(st));
    };

    run_ok(cfg.np, opts, [&](member &m) {
        coll_stats mine;
        double t0 = now_sec();

        memset(&mine, 0, sizeof(mine));
        mine.sm_frag = sm_frag_size(m);
        std::vector<coll_desc> list =
            matrix_builder(m.size, mine.sm_frag).build(cfg.level,
                                                       cfg.all_pairs);
        for (const coll_desc &d : list) {
            stats_add(&mine, d, run_coll(m, d));
        }
        mine.matrix_seconds = now_sec() - t0;

        t0 = now_sec();
        run_persistent(m, coll_desc(UCG_COLL_ALLREDUCE, 1000, UCG_DT_DOUBLE,
                                    UCG_OP_MAX), 4);
        run_persistent(m, coll_desc(UCG_COLL_BCAST, mine.sm_frag + 100,
                                    UCG_DT_UINT8, UCG_OP_LAST, m.size - 1), 3);
        run_persistent(m, coll_desc(UCG_COLL_ALLGATHER, 300, UCG_DT_INT32),
                       3);
        /* large enough for sm_reduce_cma by default; not rooted at 0 */
        run_persistent(m, coll_desc(UCG_COLL_REDUCE, 70000, UCG_DT_FLOAT,
                                    UCG_OP_SUM, m.size / 2), 3);
        run_persistent(m, coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8), 3);
        if (m.size > 1) {
            run_busy(m);
        }
        run_outstanding(m);
        mine.extra_seconds = now_sec() - t0;

        if (m.rank == 0) {
            memcpy(m.shared, &mine, sizeof(mine));
        }
    }, label);

    printf("[ ucg      ] %s: %.2f s: %u collectives in %.2f s (sm fragment "
           "%zu bytes), persistent/outstanding %.2f s\n", label.c_str(),
           now_sec() - start, st.total, st.matrix_seconds, st.sm_frag,
           st.extra_seconds);
    for (int t = 0; t < UCG_COLL_LAST; ++t) {
        if (st.count[t] > 0) {
            printf("[ ucg      ]     %-10s %4u in %.2f s\n",
                   ucg_coll_name((ucg_coll_type_t)t), st.count[t],
                   st.seconds[t]);
        }
    }
    if (st.total > 0) {
        printf("[ ucg      ]     slowest: %s: %.3f s\n", st.slowest,
               st.max_seconds);
    }
}

const coll_config configs[] = {
    /* name               np hosts    o2m          level         pairs  own_ucp extra */
    {"np1",               1, "auto",  O2M_ON,      LEVEL_FULL,   true,  false},
    {"np2",               2, "auto",  O2M_ON,      LEVEL_FULL,   true,  false},
    {"np2_notls",         2, "auto",  O2M_OFF_TLS, LEVEL_MEDIUM, true,  false},
    {"np3",               3, "auto",  O2M_ON,      LEVEL_FULL,   true,  true},
    {"np3_hosts1",        3, "1",     O2M_ON,      LEVEL_MEDIUM, false, false},
    {"np3_hosts13",       3, "1,3",   O2M_ON,      LEVEL_FULL,   true,  false},
    {"np4",               4, "auto",  O2M_ON,      LEVEL_FULL,   true,  false},
    {"np4_noo2m",         4, "auto",  O2M_OFF_ENV, LEVEL_FULL,   true,  false},
    {"np4_hosts2",        4, "2",     O2M_ON,      LEVEL_FULL,   true,  false},
    {"np5_hosts2",        5, "2",     O2M_ON,      LEVEL_FULL,   true,  false},
    {"np5_hosts213",      5, "2,1,3", O2M_ON,      LEVEL_MEDIUM, true,  true},
    {"np6_hosts3",        6, "3",     O2M_ON,      LEVEL_FULL,   true,  false},
    {"np6_hosts3_notls",  6, "3",     O2M_OFF_TLS, LEVEL_MEDIUM, false, false},
    {"np7_hosts213",      7, "2,1,3", O2M_ON,      LEVEL_FULL,   true,  false},
    {"np7_hosts2",        7, "2",     O2M_ON,      LEVEL_SMALL,  false, false},
    {"np8",               8, "auto",  O2M_ON,      LEVEL_FULL,   true,  false},
    {"np8_hosts3",        8, "3",     O2M_ON,      LEVEL_FULL,   true,  false},
    {"np8_noo2m",         8, "auto",  O2M_OFF_ENV, LEVEL_MEDIUM, true,  false},
    {"np8_notls_hosts2",  8, "2",     O2M_OFF_TLS, LEVEL_SMALL,  false, false},
    {"np8_hosts1",        8, "1",     O2M_ON,      LEVEL_MEDIUM, false, false},
    {"np8_hosts13",       8, "1,3",   O2M_ON,      LEVEL_MEDIUM, true,  false},
    /* other algorithms and transport modes */
    {"np3_hosts1_rd_linear", 3, "1",  O2M_ON,      LEVEL_FULL,   false, false,
     "ALLREDUCE_P2P=recursive_doubling;ALLGATHER_P2P=linear"},
    {"np5_hosts2_ring",   5, "2",     O2M_ON,      LEVEL_FULL,   false, false,
     "ALLREDUCE_P2P=ring;ALLGATHER_P2P=ring;KNOMIAL_RADIX=2;P2P_FRAG_SIZE=4k"},
    {"np4_centralized",   4, "auto",  O2M_ON,      LEVEL_MEDIUM, true,  false,
     "SM_BCAST_MODE=centralized;SM_INCAST_MODE=centralized"},
    {"np4_locked",        4, "auto",  O2M_ON,      LEVEL_MEDIUM, true,  false,
     "SM_INCAST_MODE=locked"},
    {"np4_atomic",        4, "auto",  O2M_ON,      LEVEL_MEDIUM, true,  false,
     "SM_INCAST_MODE=atomic"},
    {"np6_hosts3_hieroff", 6, "3",    O2M_ON,      LEVEL_SMALL,  false, false,
     "HIER=off"},
    {"np5_hosts2_pairwise", 5, "2",   O2M_ON,      LEVEL_MEDIUM, false, false,
     "ALLTOALL_P2P=pairwise;ALLTOALLV_P2P=pairwise"},
    {"np7_hosts213_knomial", 7, "2,1,3", O2M_ON,   LEVEL_MEDIUM, false, false,
     "ALLREDUCE_P2P=knomial;SM_FRAG_SIZE=1000;KNOMIAL_RADIX=3"},
    {"np8_ppn4_locked0",  8, "auto",  O2M_ON,      LEVEL_MEDIUM, true,  false,
     "SM_BATCHED_MAX_PPN=4;SM_LOCKED_THRESH=0"},
    /* sm_allreduce over several fragments, and on 8 members */
    {"np3_smallreduce_frags", 3, "auto", O2M_ON,   LEVEL_MEDIUM, true,  false,
     "SM_ALLREDUCE_MAX=inf;SM_FRAG_SIZE=1000"},
    {"np8_smallreduce",   8, "auto",  O2M_ON,      LEVEL_SMALL,  true,  false,
     "SM_ALLREDUCE_MAX=64k;SM_ALLREDUCE_MAX_PPN=8;SM_BCAST_MODE=centralized"},
    /* single-copy bcast and reduce at every size, with outstanding
     * collectives that share their fan-in endpoints */
    {"np2_cma_all",       2, "auto",  O2M_ON,      LEVEL_MEDIUM, true,  true,
     "SM_BCAST_CMA_THRESH=1;SM_REDUCE_CMA_THRESH=1"},
    {"np4_cma_all",       4, "auto",  O2M_ON,      LEVEL_MEDIUM, true,  true,
     "SM_BCAST_CMA_THRESH=1;SM_REDUCE_CMA_THRESH=1"},
    {"np5_hosts2_cma_centralized", 5, "2", O2M_ON, LEVEL_MEDIUM, true,  false,
     "SM_BCAST_CMA_THRESH=1;SM_REDUCE_CMA_THRESH=1;"
     "SM_BCAST_MODE=centralized;SM_INCAST_MODE=centralized"},
    /* host-local scatter and allgather at every size */
    {"np5_hosts3_sm_nolimit", 5, "3", O2M_ON,      LEVEL_MEDIUM, false, false,
     "SM_SCATTER_MAX=inf;SM_ALLGATHER_MAX=inf"}
};

INSTANTIATE_TEST_SUITE_P(cfg, ucg_coll_matrix, ::testing::ValuesIn(configs),
                         [](const ::testing::TestParamInfo<coll_config> &info) {
                             return std::string(info.param.name);
                         });



/* ---- bad arguments ---- */

TEST(ucg_coll_errors, bad_args)
{
    run_opts opts;

    opts.timeout = 60;
    run_ok(2, opts, [](member &m) {
        std::vector<int32_t> sbuf(100 * m.size, 1), rbuf(100 * m.size);
        ucs_log_level_t log_level = ucs_global_opts.log_component.log_level;
        unsigned n = 0;

        /* each refusal logs an error line: expected, not shown */
        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;

        /* init fails with UCS_ERR_INVALID_PARAM; when @a all, on every
         * member, so ucg_coll_run() may be tried too */
        auto invalid = [&](const ucg_coll_params_t &p, const char *what,
                           bool all) {
            ucg_coll_h coll = NULL;
            ucs_status_t status = ucg_coll_init(m.group, &p, &coll);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                        "rank %u: ucg_coll_init(%s) returned %s", m.rank,
                        what, ucs_status_string(status));
            if (all) {
                status = ucg_coll_run(m.group, &p);
                CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                            "rank %u: ucg_coll_run(%s) returned %s", m.rank,
                            what, ucs_status_string(status));
            }
            ++n;
        };
        auto base = [&](ucg_coll_type_t type) {
            ucg_coll_params_t p;
            memset(&p, 0, sizeof(p));
            p.type  = type;
            p.sbuf  = sbuf.data();
            p.rbuf  = rbuf.data();
            p.count = 10;
            p.dtype = UCG_DT_INT32;
            p.op    = UCG_OP_SUM;
            return p;
        };
        ucg_coll_params_t p;

        /* root out of range */
        for (auto t : {UCG_COLL_BCAST, UCG_COLL_REDUCE, UCG_COLL_GATHER,
                       UCG_COLL_SCATTER}) {
            p = base(t);
            p.root = m.size;
            invalid(p, "root == size", true);
            p.root = UINT_MAX;
            invalid(p, "root == UINT_MAX", true);
        }

        /* One row a parameter set: the valid one of @a type but for @a
         * dtype, @a dt_size, @a op, @a root and the buffers @a null_root
         * (on the root) and @a null_other (on the others) made NULL.  With
         * @a all, every member refuses it; else only where a NULL buffer
         * matters (a member whose buffer stays is not asked). */
        enum { SB = 1, RB = 2 };
        struct bad_row {
            const char      *what;
            ucg_coll_type_t type;
            int             dtype; /* int: the table holds an invalid one,
                                      which an enum may not (UBSan) */
            size_t          dt_size;
            ucg_op_t        op;
            unsigned        root, null_root, null_other;
            bool            all;
        };
        static const bad_row rows[] = {
            /* op not defined on the type */
            {"double band", UCG_COLL_ALLREDUCE, UCG_DT_DOUBLE, 0,
             UCG_OP_BAND, 0, 0, 0, true},
            {"int32 minloc", UCG_COLL_ALLREDUCE, UCG_DT_INT32, 0,
             UCG_OP_MINLOC, 0, 0, 0, true},
            {"float_int sum", UCG_COLL_REDUCE, UCG_DT_FLOAT_INT, 0,
             UCG_OP_SUM, 0, 0, 0, true},
            {"bytes sum", UCG_COLL_ALLREDUCE, UCG_DT_BYTES, 4, UCG_OP_SUM,
             0, 0, 0, true},
            {"float_complex max", UCG_COLL_ALLREDUCE, UCG_DT_FLOAT_COMPLEX,
             0, UCG_OP_MAX, 0, 0, 0, true},
            /* out-of-range enums */
            {"dtype UCG_DT_LAST", UCG_COLL_ALLREDUCE, UCG_DT_LAST, 0,
             UCG_OP_SUM, 0, 0, 0, true},
            {"op UCG_OP_LAST", UCG_COLL_ALLREDUCE, UCG_DT_INT32, 0,
             UCG_OP_LAST, 0, 0, 0, true},
            {"type UCG_COLL_LAST", UCG_COLL_LAST, UCG_DT_INT32, 0,
             UCG_OP_SUM, 0, 0, 0, true},
            {"dtype 1000", UCG_COLL_BCAST, 1000, 0, UCG_OP_SUM,
             0, 0, 0, true},
            /* NULL buffers with count > 0 */
            {"allreduce sbuf NULL", UCG_COLL_ALLREDUCE, UCG_DT_INT32, 0,
             UCG_OP_SUM, 0, SB, SB, true},
            {"allreduce rbuf NULL", UCG_COLL_ALLREDUCE, UCG_DT_INT32, 0,
             UCG_OP_SUM, 0, RB, RB, true},
            {"bcast rbuf NULL", UCG_COLL_BCAST, UCG_DT_INT32, 0, UCG_OP_SUM,
             0, RB, RB, true},
            {"allgather rbuf NULL", UCG_COLL_ALLGATHER, UCG_DT_INT32, 0,
             UCG_OP_SUM, 0, RB, RB, true},
            {"allgather sbuf NULL", UCG_COLL_ALLGATHER, UCG_DT_INT32, 0,
             UCG_OP_SUM, 0, SB, SB, true},
            {"reduce sbuf NULL", UCG_COLL_REDUCE, UCG_DT_INT32, 0,
             UCG_OP_SUM, 0, SB, SB, true},
            /* rooted: only where the buffer matters */
            {"gather rbuf NULL at the root, sbuf NULL at a non-root",
             UCG_COLL_GATHER, UCG_DT_INT32, 0, UCG_OP_SUM, 1, RB, SB, false},
            {"scatter sbuf NULL at the root, rbuf NULL at a non-root",
             UCG_COLL_SCATTER, UCG_DT_INT32, 0, UCG_OP_SUM, 0, SB, RB, false},
            {"reduce rbuf NULL at the root", UCG_COLL_REDUCE, UCG_DT_INT32, 0,
             UCG_OP_SUM, 1, RB, 0, false},
            /* user op without a function */
            {"user op without func", UCG_COLL_ALLREDUCE, UCG_DT_INT32, 0,
             UCG_OP_USER, 0, 0, 0, true},
            {"user op without func on bytes", UCG_COLL_ALLREDUCE,
             UCG_DT_BYTES, 16, UCG_OP_USER, 0, 0, 0, true},
            /* opaque elements of 0 bytes */
            {"bcast of bytes[0]", UCG_COLL_BCAST, UCG_DT_BYTES, 0,
             UCG_OP_SUM, 0, 0, 0, true},
        };
        for (const bad_row &row : rows) {
            unsigned null = (m.rank == row.root) ? row.null_root :
                                                   row.null_other;
            if (!row.all && (null == 0)) {
                continue;
            }
            p         = base(row.type);
            p.dtype   = (ucg_dtype_t)row.dtype;
            p.dt_size = row.dt_size;
            p.op      = row.op;
            p.root    = row.root;
            if (null & SB) {
                p.sbuf = NULL;
            }
            if (null & RB) {
                p.rbuf = NULL;
            }
            invalid(p, row.what, row.all);
        }

        /* the blocking wrappers */
        ucs_status_t status;
        status = ucg_bcast(m.group, rbuf.data(), 10, UCG_DT_INT32, m.size);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "ucg_bcast root: %s",
                    ucs_status_string(status));
        status = ucg_reduce(m.group, sbuf.data(), rbuf.data(), 10,
                            UCG_DT_INT32, UCG_OP_SUM, m.size + 3);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "ucg_reduce root: %s",
                    ucs_status_string(status));
        status = ucg_allreduce(m.group, sbuf.data(), rbuf.data(), 10,
                               UCG_DT_DOUBLE, UCG_OP_BXOR);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                    "ucg_allreduce double bxor: %s",
                    ucs_status_string(status));
        status = ucg_allreduce(m.group, NULL, rbuf.data(), 10, UCG_DT_INT32,
                               UCG_OP_SUM);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                    "ucg_allreduce sbuf NULL: %s", ucs_status_string(status));

        ucs_global_opts.log_component.log_level = log_level;

        /* count 0 with NULL buffers is fine */
        p = base(UCG_COLL_ALLREDUCE);
        p.count = 0;
        p.sbuf  = NULL;
        p.rbuf  = NULL;
        status = ucg_coll_run(m.group, &p);
        CHILD_CHECK(status == UCS_OK, "allreduce of 0 elements: %s",
                    ucs_status_string(status));

        /* the group still works */
        run_coll(m, coll_desc(UCG_COLL_ALLREDUCE, 100, UCG_DT_INT32,
                              UCG_OP_SUM));
        status = ucg_barrier(m.group);
        CHILD_CHECK(status == UCS_OK, "barrier: %s",
                    ucs_status_string(status));
        if (m.rank == 0) {
            printf("[ ucg      ] %u invalid parameter sets refused\n", n);
        }
    }, "[bad args]");
}


/* ---- a member killed in the middle of a collective ---- */

/*
 * @a late: the survivors start the collective only after the victim died,
 * so they find what it sent before dying (e.g. rendezvous requests whose
 * data is then read from a process that no longer exists).  @a warm: the
 * same collective runs once before, so that its endpoints exist when the
 * victim dies.
 */
void kill_test(unsigned np, const coll_config &cfg, unsigned victim,
               const coll_desc &desc, bool late = false, bool warm = false)
{
    const double check_interval = 0.1;
    const double bound          = 5.0;  /* slack on a loaded machine */
    std::string label           = config_label(cfg) + " kill rank " +
                                  std::to_string(victim) + " in " +
                                  desc.str() +
                                  (late ? " (others start late)" : "") +
                                  (warm ? " (warm)" : "");
    run_opts opts;

    opts.env = config_env(cfg);
    opts.env["UCX_UCG_CHECK_INTERVAL"] = "100ms";
    /* UCX 1.13's rendezvous over cma aborts the process (ucs_fatal) when
     * the peer dies in the middle of a get (endpoints without error
     * handling, see docs/ucg.md, Failures): that is UCX's own, not what is
     * tested here, so UCP sends eagerly */
    opts.env["UCX_RNDV_THRESH"] = "inf";
    /* The default PEER_TIMEOUT (inf): the teardown waits for nothing from
     * the dead member (its liveness ends every wait on it) */
    opts.final_barrier = false;
    opts.timeout       = 60;
    opts.shared_size   = sizeof(kill_shared);

    double start = now_sec();
    std::vector<int> status = run(np, opts, [&](member &m) {
        kill_shared *sh = static_cast<kill_shared*>(m.shared);
        ucs_status_t st;
        ucg_coll_h coll;

        /* connections established, everyone alive */
        run_coll(m, coll_desc(UCG_COLL_ALLREDUCE, 10, UCG_DT_INT32,
                              UCG_OP_SUM));
        if (warm) {
            run_coll(m, desc);
        }
        m.procs->barrier(m.rank);

        coll_bufs bufs(desc, m.rank, m.size);
        ucg_coll_params_t params = bufs.params();
        st = ucg_coll_init(m.group, &params, &coll);
        CHILD_CHECK_OK(st);

        if (late && (m.rank != victim)) {
            /* until the victim is dead (and reaped by the parent) */
            double kill_time = 0, deadline = now_sec() + 30;
            do {
                CHILD_CHECK(now_sec() < deadline, "the victim did not die");
                usleep(1000);
                __atomic_load(&sh->kill_time, &kill_time, __ATOMIC_SEQ_CST);
            } while (kill_time == 0);
            usleep(100000);
        }

        st = ucg_coll_start(coll);
        CHILD_CHECK_OK(st);

        if (m.rank == victim) {
            die_in_coll(coll, sh); /* some progress, then die */
        }

        st = wait_coll(coll, label, check_interval + bound + 10);
        check_end_after_kill(m, st, now_sec(), bufs, label, victim,
                             check_interval + bound,
                             m.rank == ((victim + 1) % m.size));
        ucg_coll_finalize(coll);

        /* the group has failed: a new collective fails too, no hang */
        check_coll_fails(m, coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8),
                         label, "barrier", check_interval + bound);
    }, label);

    expect_only_killed(status, victim, label);
    printf("[ ucg      ] %s: %.2f s\n", label.c_str(), now_sec() - start);
}

/*
 * A failed collective leaves no request that UCP still writes into: rank 0
 * gathers 4 MiB blocks (point-to-point, eager); rank 2 sends its block and
 * stops progressing after the first fragments, so rank 0's receive has
 * matched it and waits for the rest; rank 1 sends a block of the wrong
 * length, which fails the gather.  The cancelled collective returns only
 * once the matched receive is complete: the buffer is rank 0's again, and
 * what rank 2 sends after its pause does not land in it.
 */
struct cancel_shared {
    int rank2_sent;
    int rank2_done;
};

TEST(ucg_coll_errors, cancel_waits_for_matched_recv)
{
    const size_t block = 4 << 20;
    run_opts opts;

    opts.env["UCX_UCG_O2M"]     = "n";
    opts.env["UCX_RNDV_THRESH"] = "inf"; /* many eager fragments */
    opts.timeout                = 60;
    opts.shared_size            = sizeof(cancel_shared);
    run_ok(3, opts, [&](member &m) {
        cancel_shared *sh   = static_cast<cancel_shared*>(m.shared);
        ucp_worker_h worker = m.context->ucp_worker;
        ucp_request_param_t param;
        std::vector<char> sbuf(block, (char)(0x10 + m.rank));
        ucg_coll_h coll = NULL;
        ucs_status_t st;
        ucp_ep_h ep;
        void *req;

        /* connections established */
        run_coll(m, coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8));
        m.procs->barrier(m.rank);

        if (m.rank == 0) {
            std::vector<char> rbuf(3 * block, 0);
            ucg_coll_params_t p;

            memset(&p, 0, sizeof(p));
            p.type  = UCG_COLL_GATHER;
            p.root  = 0;
            p.sbuf  = sbuf.data();
            p.rbuf  = rbuf.data();
            p.count = block;
            p.dtype = UCG_DT_UINT8;
            CHILD_CHECK_OK(ucg_coll_init(m.group, &p, &coll));
            CHILD_CHECK_OK(ucg_coll_start(coll));
            m.procs->barrier(m.rank); /* the receives are posted */

            /* no progress until rank 2 has sent what fits in our FIFO: its
             * send then waits for us */
            double deadline = now_sec() + 30;
            while (!__atomic_load_n(&sh->rank2_sent, __ATOMIC_ACQUIRE)) {
                CHILD_CHECK(now_sec() < deadline, "rank 2 did not send");
                usleep(1000);
            }

            st = wait_coll(coll, "gather with a bad block");
            CHILD_CHECK(st == UCS_ERR_MESSAGE_TRUNCATED, "gather: %s",
                        ucs_status_string(st));
            CHILD_CHECK(__atomic_load_n(&sh->rank2_sent, __ATOMIC_ACQUIRE),
                        "rank 2 did not send");
            ucg_coll_finalize(coll);
            CHILD_CHECK(ucs_list_is_empty(&m.context->closers),
                        "requests parked after a complete receive");

            /* the buffer is ours again */
            memset(&rbuf[2 * block], 0xee, block);
            deadline = now_sec() + 30;
            while (!__atomic_load_n(&sh->rank2_done, __ATOMIC_ACQUIRE)) {
                CHILD_CHECK(now_sec() < deadline, "rank 2 did not finish");
                ucp_worker_progress(worker);
            }
            for (unsigned i = 0; i < 1000; ++i) {
                ucp_worker_progress(worker);
            }
            for (size_t i = 0; i < block; ++i) {
                CHILD_CHECK(rbuf[2 * block + i] == (char)0xee,
                            "byte %zu of rank 2's block written after the "
                            "gather failed", i);
            }
        } else {
            m.procs->barrier(m.rank);
            CHILD_CHECK_OK(ucg_group_p2p_ep(m.group, 0, &ep));
            /* the gather's tag: group, seq 1 (after the barrier), phase
             * 0, step 0, source */
            ucp_tag_t tag = ((uint64_t)m.group->id << 48) |
                            ((uint64_t)1 << 32) | m.rank;

            memset(&param, 0, sizeof(param));
            if (m.rank == 2) {
                req = ucp_tag_send_nbx(ep, sbuf.data(), block, tag, &param);
                CHILD_CHECK(!UCS_PTR_IS_ERR(req), "send");
                CHILD_CHECK(req != NULL, "4 MiB sent at once");
                __atomic_store_n(&sh->rank2_sent, 1, __ATOMIC_RELEASE);
                /* longer than the fixed 0.5 s rank 0 waited before */
                usleep(1500000);
            } else {
                double deadline = now_sec() + 30;
                while (!__atomic_load_n(&sh->rank2_sent, __ATOMIC_ACQUIRE)) {
                    CHILD_CHECK(now_sec() < deadline, "rank 2 did not send");
                    usleep(1000);
                }
                req = ucp_tag_send_nbx(ep, sbuf.data(), 8, tag, &param);
                CHILD_CHECK(!UCS_PTR_IS_ERR(req), "send");
            }

            double deadline = now_sec() + 30;
            while ((req != NULL) &&
                   (ucp_request_check_status(req) == UCS_INPROGRESS)) {
                CHILD_CHECK(now_sec() < deadline, "send not complete");
                ucp_worker_progress(worker);
            }
            if (req != NULL) {
                CHILD_CHECK_OK(ucp_request_check_status(req));
                ucp_request_free(req);
            }
            if (m.rank == 2) {
                __atomic_store_n(&sh->rank2_done, 1, __ATOMIC_RELEASE);
            }
        }
        m.procs->barrier(m.rank);
    });
}

/*
 * A context destroyed with requests a failed collective parked: its
 * destroy ends them through the parked record's closer, which gives every
 * request to UCP before the worker goes, and frees the record and its
 * buffers after.  Rank 0 sends its 1 MiB block of a gather to root 1
 * (rendezvous), which never takes part: the group fails on rank 0, the
 * send to a member of this host (no error handling, no force-close) stays
 * outstanding past PEER_TIMEOUT and is parked.  A closer of the test,
 * added after the record (so called after it), looks at the record.
 */
namespace {

struct parked_watch {
    ucg_context_closer_t closer;
    ucg_context_h        context;
    ucg_parked_t         *parked;
    int                  reqs_at_ucp;   /* the record's, at the UCP stage */
    int                  left_at_free;  /* closers left at the FREE stage */
};

void parked_watch_cb(ucg_context_closer_t *closer,
                     ucg_context_close_stage_t stage)
{
    parked_watch *w = ucs_container_of(closer, parked_watch, closer);

    if (stage == UCG_CONTEXT_CLOSE_UCP) {
        w->reqs_at_ucp = w->parked->num_reqs;
    } else {
        w->left_at_free = ucs_list_length(&w->context->closers);
        ucg_context_closer_remove(closer);
    }
}

} // namespace

TEST(ucg_coll_errors, destroy_with_parked_requests)
{
    const size_t block = 1 << 20;
    run_opts opts;

    opts.env["UCX_UCG_O2M"]          = "n";
    opts.env["UCX_UCG_PEER_TIMEOUT"] = "1s";
    opts.env["UCX_RNDV_THRESH"]      = "8k";
    opts.timeout                     = 60;
    run_ok(2, opts, [&](member &m) {
        std::vector<char> sbuf(block, (char)(0x10 + m.rank));
        ucg_coll_params_t p;
        ucg_coll_h coll;
        ucs_status_t st;

        /* connections established; then rank 1 waits in the final
         * (out-of-band) barrier without progressing UCP */
        run_coll(m, coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8));
        if (m.rank == 1) {
            return;
        }

        memset(&p, 0, sizeof(p));
        p.type  = UCG_COLL_GATHER;
        p.root  = 1;
        p.sbuf  = sbuf.data();
        p.count = block;
        p.dtype = UCG_DT_UINT8;
        CHILD_CHECK_OK(ucg_coll_init(m.group, &p, &coll));
        CHILD_CHECK_OK(ucg_coll_start(coll));
        for (unsigned i = 0; i < 100; ++i) {
            CHILD_CHECK(ucg_coll_test(coll) == UCS_INPROGRESS,
                        "gather to a root that does not take part");
        }

        m.group->failed = UCS_ERR_IO_ERROR;
        st = wait_coll(coll, "gather of a failed group");
        CHILD_CHECK(st == UCS_ERR_IO_ERROR, "gather: %s",
                    ucs_status_string(st));
        ucg_coll_finalize(coll);
        CHILD_CHECK(ucs_list_length(&m.context->closers) == 1,
                    "%zu records parked, not the send to rank 1",
                    ucs_list_length(&m.context->closers));

        parked_watch w;
        w.context      = m.context;
        w.parked       = ucs_list_head(&m.context->closers, ucg_parked_t,
                                       closer.list);
        w.reqs_at_ucp  = -1;
        w.left_at_free = -1;
        CHILD_CHECK(w.parked->num_reqs == 1, "%u parked requests",
                    w.parked->num_reqs);
        ucg_context_closer_add(m.context, &w.closer, parked_watch_cb);

        ucg_group_destroy(m.group);
        m.group = NULL;
        {
            /* UCP warns about the send it never completed (released) */
            o2m_test::scoped_log_capture log;

            ucg_context_destroy(m.context);
            m.context = NULL;
        }
        CHILD_CHECK(w.reqs_at_ucp == 0, "%d parked requests not given to "
                    "UCP before its worker went", w.reqs_at_ucp);
        CHILD_CHECK(w.left_at_free == 1, "%d closers at the FREE stage: "
                    "the parked record was not released", w.left_at_free);
    });
}

/*
 * A member on another host dies: UCP's error handling on the endpoints to
 * members on other hosts fails the survivors' collective in bounded time.
 * Three virtual hosts of one member each (every endpoint is to another
 * host), and a CHECK_INTERVAL so long that the pidfds (which see members on
 * the same real host) are not looked at during the test: only UCP's error
 * handling can end the wait.  The time to the error is printed.
 */
TEST(ucg_coll_errors, kill_remote_member)
{
    const double bound = 30.0; /* against hangs only */
    const unsigned victim = 1;
    run_opts opts;

    opts.env["UCX_UCG_HOSTS"]          = "1";
    opts.env["UCX_UCG_CHECK_INTERVAL"] = "1000s";
    opts.env["UCX_UCG_PEER_TIMEOUT"]   = "1s";
    opts.env["UCX_UCG_ALLGATHER_P2P"]  = "linear"; /* all receive from all */
    /* UCX 1.13's own failures on a dead peer, not what is tested here:
     * rendezvous over cma aborts (see kill_test), and a zero-copy send over
     * tcp is completed twice (assertion in ucp_proto_am_zcopy_completion)
     * when the endpoint fails: UCP sends eagerly, by copy */
    opts.env["UCX_RNDV_THRESH"]        = "inf";
    opts.env["UCX_ZCOPY_THRESH"]       = "inf";
    opts.final_barrier = false;
    opts.timeout       = 120;
    opts.shared_size   = sizeof(kill_shared);

    std::vector<int> status = run(3, opts, [&](member &m) {
        kill_shared *sh = static_cast<kill_shared*>(m.shared);
        coll_desc d(UCG_COLL_ALLGATHER, 1 << 20, UCG_DT_INT32);
        ucs_status_t st;
        ucg_coll_h coll;

        /* the group's first liveness check is done, connections exist */
        run_coll(m, coll_desc(UCG_COLL_ALLGATHER, 10, UCG_DT_INT32));
        m.procs->barrier(m.rank);

        coll_bufs bufs(d, m.rank, m.size);
        ucg_coll_params_t params = bufs.params();
        CHILD_CHECK_OK(ucg_coll_init(m.group, &params, &coll));
        CHILD_CHECK_OK(ucg_coll_start(coll));
        if (m.rank == victim) {
            die_in_coll(coll, sh);
        }

        st = wait_coll(coll, "allgather with a dead member", bound + 10);
        double t = now_sec();
        double kill_time;
        __atomic_load(&sh->kill_time, &kill_time, __ATOMIC_SEQ_CST);
        CHILD_CHECK(st != UCS_OK, "rank %u: completed although rank %u "
                    "died", m.rank, victim);
        CHILD_CHECK(kill_time > 0, "no kill time");
        CHILD_CHECK(m.group->members[victim].ep_failed,
                    "rank %u: the error (%s) did not come from UCP's error "
                    "handling", m.rank, ucs_status_string(st));
        CHILD_CHECK(t - kill_time <= bound, "rank %u: error %.2f s after "
                    "the kill", m.rank, t - kill_time);
        printf("[ ucg      ] kill_remote_member: rank %u got '%s' %.3f s "
               "after the kill\n", m.rank, ucs_status_string(st),
               t - kill_time);
        fflush(stdout);
        ucg_coll_finalize(coll);
    }, "kill_remote_member");

    expect_only_killed(status, victim, "kill_remote_member");
}

/*
 * A failed collective returns only when UCP no longer reads its buffers.
 * Rank 2 is stopped (SIGSTOP) before an allgather in which everybody
 * sends to everybody over tcp (virtual hosts, small socket buffers): rank
 * 0's eager send to it stays in UCP's pending queue.  Rank 1 dies, rank
 * 0's collective fails; rank 0 then makes its buffer unreadable (as a
 * freed buffer can be) and lets rank 2 continue: a send UCP still had
 * would be packed from that buffer (SIGSEGV in rank 0), which happened
 * when the sends that missed PEER_TIMEOUT were only parked.  Rank 0's
 * endpoint to rank 2 is force-closed instead; rank 2's collective fails
 * (its peers are gone or closed their connection) and it exits normally.
 */
struct stopped_shared {
    int      stopped_pid;
    int      root_started;
    int      resumed_done;
    /* out-of-band allgather of ranks 0 and 2 for a group of the two */
    unsigned ready[2];
    unsigned taken[2];
    char     slot[2][16384];
};

/* Out-of-band allgather of a group of two processes over the test's
 * shared memory (arg: pair_oob) */
struct pair_oob {
    stopped_shared *sh;
    unsigned       me;     /* 0 or 1 */
    unsigned       calls;
};

static ucs_status_t pair_allgather(void *arg, const void *sbuf, void *rbuf,
                                   size_t len)
{
    pair_oob *oob      = static_cast<pair_oob*>(arg);
    stopped_shared *sh = oob->sh;
    unsigned other     = 1 - oob->me;
    double deadline    = now_sec() + 30; /* against hangs only */
    unsigned call      = ++oob->calls;

    if (len > sizeof(sh->slot[0])) {
        return UCS_ERR_INVALID_PARAM;
    }
    memcpy(sh->slot[oob->me], sbuf, len);
    __atomic_store_n(&sh->ready[oob->me], call, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&sh->ready[other], __ATOMIC_SEQ_CST) < call) {
        if (now_sec() > deadline) {
            return UCS_ERR_TIMED_OUT;
        }
        sched_yield();
    }
    memcpy(UCS_PTR_BYTE_OFFSET(rbuf, other * len), sh->slot[other], len);
    memcpy(UCS_PTR_BYTE_OFFSET(rbuf, oob->me * len), sbuf, len);
    /* the other's slot is not written again before it was read */
    __atomic_store_n(&sh->taken[oob->me], call, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&sh->taken[other], __ATOMIC_SEQ_CST) < call) {
        if (now_sec() > deadline) {
            return UCS_ERR_TIMED_OUT;
        }
        sched_yield();
    }
    return UCS_OK;
}

/* Ranks 0 and 2 of stopped_member_send_buffer, after it: a new group of
 * the two connects again (rank 0 dropped its endpoint to rank 2; rank 2's
 * endpoint to rank 0 failed, or is replaced) and runs an allgather */
static void pair_group_allgather(member &m, stopped_shared *sh)
{
    pair_oob oob = {sh, (m.rank == 0) ? 0u : 1u, 0};
    ucg_group_params_t gparams;
    ucg_coll_params_t params;
    std::vector<int32_t> sbuf(100), rbuf(200);
    ucg_group_h group;
    ucs_status_t st;
    ucg_coll_h coll;

    memset(&gparams, 0, sizeof(gparams));
    gparams.size          = 2;
    gparams.rank          = oob.me;
    gparams.oob_allgather = pair_allgather;
    gparams.oob_arg       = &oob;
    CHILD_CHECK_OK(ucg_group_create(m.context, &gparams, &group));

    for (unsigned i = 0; i < sbuf.size(); ++i) {
        sbuf[i] = (int32_t)(oob.me * 1000 + i);
    }
    memset(&params, 0, sizeof(params));
    params.type  = UCG_COLL_ALLGATHER;
    params.sbuf  = sbuf.data();
    params.rbuf  = rbuf.data();
    params.count = sbuf.size();
    params.dtype = UCG_DT_INT32;
    CHILD_CHECK_OK(ucg_coll_init(group, &params, &coll));
    st = ucg_coll_start(coll);
    if (st == UCS_OK) {
        st = wait_coll(coll, "allgather of a new group of ranks 0 and 2",
                       30);
    }
    ucg_coll_finalize(coll);
    CHILD_CHECK(st == UCS_OK, "rank %u: allgather of a new group: %s",
                m.rank, ucs_status_string(st));
    for (unsigned i = 0; i < rbuf.size(); ++i) {
        CHILD_CHECK(rbuf[i] == (int32_t)((i / 100) * 1000 + i % 100),
                    "rank %u: [%u] = %d", m.rank, i, rbuf[i]);
    }

    /* both finished before either destroys */
    uint64_t token = 0, both[2];
    CHILD_CHECK_OK(pair_allgather(&oob, &token, both, sizeof(token)));
    ucg_group_destroy(group);
}

TEST(ucg_coll_errors, stopped_member_send_buffer)
{
    const double bound    = 30.0; /* against hangs only */
    const size_t block    = 2 << 20;
    const unsigned victim = 1, stopped = 2;
    run_opts opts;

    opts.env["UCX_UCG_HOSTS"]          = "1";
    opts.env["UCX_UCG_CHECK_INTERVAL"] = "100ms";
    opts.env["UCX_UCG_PEER_TIMEOUT"]   = "1s";
    opts.env["UCX_UCG_ALLGATHER_P2P"]  = "linear";
    /* eager sends by copy: packed from the user's buffer when UCP
     * dispatches them (see kill_remote_member for the two settings) */
    opts.env["UCX_RNDV_THRESH"]        = "inf";
    opts.env["UCX_ZCOPY_THRESH"]       = "inf";
    /* a stopped receiver soon blocks the sender's socket */
    opts.env["UCX_TCP_SNDBUF"]         = "64k";
    opts.env["UCX_TCP_RCVBUF"]         = "64k";
    opts.final_barrier = false;
    opts.timeout       = 120;
    opts.shared_size   = sizeof(stopped_shared);

    std::vector<int> status = run(3, opts, [&](member &m) {
        stopped_shared *sh = static_cast<stopped_shared*>(m.shared);
        size_t len         = block * m.size;
        ucg_coll_params_t params;
        ucs_status_t st;
        ucg_coll_h coll;
        double deadline;

        /* connections exist */
        run_coll(m, coll_desc(UCG_COLL_ALLGATHER, 10, UCG_DT_INT32));
        m.procs->barrier(m.rank);

        void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHILD_CHECK(buf != MAP_FAILED, "mmap: %m");
        memset(buf, 0x40 + m.rank, len);
        memset(&params, 0, sizeof(params));
        params.type  = UCG_COLL_ALLGATHER;
        params.sbuf  = UCG_IN_PLACE;
        params.rbuf  = buf;
        params.count = block;
        params.dtype = UCG_DT_UINT8;

        if (m.rank == stopped) {
            __atomic_store_n(&sh->stopped_pid, (int)getpid(),
                             __ATOMIC_SEQ_CST);
            kill(getpid(), SIGSTOP);
            /* continued by rank 0 once its collective failed */
            CHILD_CHECK_OK(ucg_coll_init(m.group, &params, &coll));
            st = ucg_coll_start(coll);
            if (st == UCS_OK) {
                st = wait_coll(coll, "allgather after SIGCONT", bound);
            }
            ucg_coll_finalize(coll);
            printf("[ ucg      ] stopped_member_send_buffer: rank %u after "
                   "SIGCONT: '%s'\n", m.rank, ucs_status_string(st));
            fflush(stdout);
            __atomic_store_n(&sh->resumed_done, 1, __ATOMIC_SEQ_CST);
            CHILD_CHECK(st != UCS_OK, "completed although rank %u died",
                        victim);
            pair_group_allgather(m, sh);
            return;
        }

        /* until rank 2 is stopped */
        int pid  = 0;
        deadline = now_sec() + bound;
        while ((pid = __atomic_load_n(&sh->stopped_pid,
                                      __ATOMIC_SEQ_CST)) == 0) {
            CHILD_CHECK(now_sec() < deadline, "rank %u did not stop", stopped);
            usleep(1000);
        }
        for (;;) {
            char path[64], state = 0;
            snprintf(path, sizeof(path), "/proc/%d/stat", pid);
            FILE *f = fopen(path, "r");
            CHILD_CHECK(f != NULL, "%s: %m", path);
            CHILD_CHECK(fscanf(f, "%*d (%*[^)]) %c", &state) == 1,
                        "cannot parse %s", path);
            fclose(f);
            if (state == 'T') {
                break;
            }
            CHILD_CHECK(now_sec() < deadline, "rank %u is not stopped (%c)",
                        stopped, state);
            usleep(1000);
        }

        CHILD_CHECK_OK(ucg_coll_init(m.group, &params, &coll));
        CHILD_CHECK_OK(ucg_coll_start(coll));
        if (m.rank == victim) {
            deadline = now_sec() + bound;
            while (!__atomic_load_n(&sh->root_started, __ATOMIC_SEQ_CST)) {
                CHILD_CHECK(now_sec() < deadline, "rank 0 did not start");
                ucg_coll_test(coll);
            }
            kill(getpid(), SIGKILL);
            _exit(2); /* not reached */
        }

        __atomic_store_n(&sh->root_started, 1, __ATOMIC_SEQ_CST);
        st = wait_coll(coll, "allgather with a dead and a stopped member",
                       bound);
        CHILD_CHECK(st != UCS_OK, "completed although rank %u died",
                    victim);
        ucg_coll_finalize(coll);

        /* what a user may do with its buffer after the error */
        CHILD_CHECK(mprotect(buf, len, PROT_NONE) == 0, "mprotect: %m");
        CHILD_CHECK(kill(pid, SIGCONT) == 0, "SIGCONT: %m");
        deadline = now_sec() + bound;
        while (!__atomic_load_n(&sh->resumed_done, __ATOMIC_SEQ_CST)) {
            CHILD_CHECK(now_sec() < deadline, "rank %u did not finish after "
                        "SIGCONT", stopped);
            ucg_progress(m.context);
            sched_yield();
        }
        /* what UCP of this rank would still do with the stopped member's
         * connection happens in these calls */
        for (unsigned i = 0; i < 1000; ++i) {
            ucg_progress(m.context);
        }
        CHILD_CHECK(m.group->members[stopped].ep == NULL,
                    "the endpoint to rank %u is still cached", stopped);
        pair_group_allgather(m, sh);
    }, "stopped_member_send_buffer");

    EXPECT_EQ(0, status[0]) << "rank 0 (the sender)";
    EXPECT_EQ(128 + SIGKILL, status[victim]);
    EXPECT_EQ(0, status[stopped]);
}

const coll_config kill_o2m   = {"kill_o2m", 4, "auto", O2M_ON, 0, false,
                                false};
const coll_config kill_hier  = {"kill_hier", 4, "2", O2M_ON, 0, false,
                                false};
const coll_config kill_noo2m = {"kill_noo2m", 3, "auto", O2M_OFF_TLS, 0,
                                false, false};

/*
 * A member that does not run a collective the others started (its start
 * failed there: ucg_group_abort_next) makes it fail on the others (but a
 * bcast member that needed nothing of it), and the later collectives of
 * the group fail everywhere; before the abort message they waited forever.
 */
void abort_test(const coll_config &cfg, const coll_desc &desc)
{
    const double bound = 30.0; /* against hangs only */
    std::string label  = config_label(cfg) + " abort of " + desc.str();
    run_opts opts;

    opts.env = config_env(cfg);
    run_ok(3, opts, [&](member &m) {
        coll_bufs bufs(desc, m.rank, m.size);
        ucg_coll_params_t params = bufs.params();
        ucs_status_t st;
        ucg_coll_h coll;

        run_coll(m, desc); /* endpoints exist, the group works */
        if (m.rank == 1) {
            ucg_group_abort_next(m.group, UCS_ERR_NO_MEMORY);
        } else {
            CHILD_CHECK_OK(ucg_coll_init(m.group, &params, &coll));
            st = ucg_coll_start(coll);
            if (st == UCS_OK) {
                st = wait_coll(coll, label, bound);
            }
            ucg_coll_finalize(coll);
            /* a member that needed nothing of rank 1 may complete */
            CHILD_CHECK((st != UCS_OK) || (desc.type == UCG_COLL_BCAST),
                        "%s: rank %u completed", label.c_str(), m.rank);
        }

        /* the next collective fails on every member */
        CHILD_CHECK_OK(ucg_coll_init(m.group, &params, &coll));
        st = ucg_coll_start(coll);
        if (st == UCS_OK) {
            st = wait_coll(coll, label + " (next)", bound);
        }
        ucg_coll_finalize(coll);
        CHILD_CHECK(st != UCS_OK, "%s: rank %u: the next collective "
                    "completed", label.c_str(), m.rank);
    }, label);
}

TEST(ucg_coll_errors, abort_allreduce_o2m)
{
    abort_test(kill_o2m, coll_desc(UCG_COLL_ALLREDUCE, 100, UCG_DT_INT32,
                                   UCG_OP_SUM));
}

TEST(ucg_coll_errors, abort_allgather_p2p)
{
    abort_test(kill_noo2m, coll_desc(UCG_COLL_ALLGATHER, 100, UCG_DT_INT32));
}

TEST(ucg_coll_errors, abort_bcast_o2m)
{
    abort_test(kill_o2m, coll_desc(UCG_COLL_BCAST, 100, UCG_DT_INT32,
                                   UCG_OP_LAST, 1));
}

/* A member whose count is smaller by whole fragments sends only fragments
 * that look right: the last one's mark (UCG_SM_FRAG_LAST) tells the
 * receivers that its data ends before theirs (or goes on past it), so they
 * fail with UCS_ERR_MESSAGE_TRUNCATED instead of waiting for fragments that
 * never come or returning a truncated result.  One host, sm phases of 8
 * fragments (6 at the short member): bcast with the short member as the
 * root and as a receiver, reduce with the short member as the lowest
 * contributor (its header is the one the fan-in delivers), allreduce. */
TEST(ucg_coll_errors, sm_count_short_by_fragments)
{
    struct scenario {
        ucg_coll_type_t type;
        unsigned        root;
        unsigned        short_rank;
    };
    static const scenario scenarios[] = {
        {UCG_COLL_BCAST, 0, 0},     /* the receivers would wait */
        {UCG_COLL_BCAST, 0, 1},     /* it would return 6 of 8 fragments */
        {UCG_COLL_REDUCE, 0, 1},    /* the root would wait */
        {UCG_COLL_ALLREDUCE, 0, 1}
    };
    run_opts opts;

    opts.env["UCX_UCG_SM_FRAG_SIZE"] = "256";
    opts.timeout                     = 120;
    run_ok(3, opts, [](member &m) {
        ucs_log_level_t level = ucs_global_opts.log_component.log_level;
        const size_t frag_elems = 256 / sizeof(int32_t);

        for (const scenario &sc : scenarios) {
            ucg_group_h g = create_group(m); /* a failure fails its group */
            size_t count  = ((m.rank == sc.short_rank) ? 6 : 8) * frag_elems;
            std::vector<int32_t> sb(count, 1), rb(8 * frag_elems + 16, 7);
            ucg_coll_params_t p;
            ucg_coll_h coll;
            ucs_status_t status;

            memset(&p, 0, sizeof(p));
            p.type  = sc.type;
            p.root  = sc.root;
            p.sbuf  = (sc.type == UCG_COLL_BCAST) ? NULL : sb.data();
            p.rbuf  = rb.data();
            p.count = count;
            p.dtype = UCG_DT_INT32;
            p.op    = UCG_OP_SUM;
            CHILD_CHECK(ucg_coll_init(g, &p, &coll) == UCS_OK, "init");
            ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
            CHILD_CHECK(ucg_coll_start(coll) == UCS_OK, "start");
            status = wait_coll(coll, ucg_coll_name(sc.type));
            ucs_global_opts.log_component.log_level = level;

            /* Whoever receives from a sender of another length fails;
             * the others may finish (finished is not failed) or learn of
             * the failure */
            bool must_fail;
            switch (sc.type) {
            case UCG_COLL_BCAST:
                must_fail = (m.rank != sc.root) &&
                            ((m.rank == sc.short_rank) ||
                             (sc.root == sc.short_rank));
                break;
            case UCG_COLL_REDUCE:
                must_fail = (m.rank == sc.root);
                break;
            default:
                must_fail = true;
                break;
            }
            CHILD_CHECK((status != UCS_OK) || !must_fail,
                        "%s root %u, short rank %u: rank %u completed",
                        ucg_coll_name(sc.type), sc.root, sc.short_rank,
                        m.rank);
            CHILD_CHECK((status == UCS_OK) ||
                        (status == UCS_ERR_MESSAGE_TRUNCATED) ||
                        (status == UCS_ERR_IO_ERROR) ||
                        (status == UCS_ERR_CANCELED),
                        "%s rank %u: %s", ucg_coll_name(sc.type), m.rank,
                        ucs_status_string(status));
            for (size_t i = 8 * frag_elems; i < rb.size(); ++i) {
                CHILD_CHECK(rb[i] == 7, "%s rank %u: written past the "
                            "buffer at %zu", ucg_coll_name(sc.type), m.rank,
                            i);
            }
            ucg_coll_finalize(coll);
            m.procs->barrier(m.rank);
            ucg_group_destroy(g);
        }
    });
}

TEST(ucg_coll_errors, kill_allreduce_o2m)
{
    kill_test(4, kill_o2m, 2,
              coll_desc(UCG_COLL_ALLREDUCE, 2 << 20, UCG_DT_INT32,
                        UCG_OP_SUM));
}

TEST(ucg_coll_errors, kill_bcast_root_hier)
{
    kill_test(4, kill_hier, 0,
              coll_desc(UCG_COLL_BCAST, 8 << 20, UCG_DT_UINT8, UCG_OP_LAST,
                        0));
}

/* The two-level host-local bcast (forced on 5 members: the sub-groups
 * {0,1}, {2,3} and {4}): rank 2, the leader of {2,3}, dies in the middle of
 * an 8 MiB bcast from root 0 (fragments on sm_bcast, not single-copy); its
 * sub-group fails instead of waiting, and the group fails everywhere */
const coll_config kill_2level = {"kill_2level", 5, "auto", O2M_ON, 0, false,
                                 false,
                                 "SM_BCAST_2LEVEL_PPN=2;"
                                 "SM_BCAST_CMA_THRESH=inf"};

TEST(ucg_coll_errors, kill_bcast_2level_leader)
{
    kill_test(5, kill_2level, 2,
              coll_desc(UCG_COLL_BCAST, 8 << 20, UCG_DT_UINT8, UCG_OP_LAST,
                        0));
}

TEST(ucg_coll_errors, kill_allreduce_p2p)
{
    kill_test(3, kill_noo2m, 1,
              coll_desc(UCG_COLL_ALLREDUCE, 2 << 20, UCG_DT_INT32,
                        UCG_OP_SUM));
}

TEST(ucg_coll_errors, kill_allreduce_p2p_late)
{
    kill_test(3, kill_noo2m, 1,
              coll_desc(UCG_COLL_ALLREDUCE, 2 << 20, UCG_DT_INT32,
                        UCG_OP_SUM), true);
}

TEST(ucg_coll_errors, kill_bcast_root_o2m_late)
{
    kill_test(4, kill_o2m, 0,
              coll_desc(UCG_COLL_BCAST, 8 << 20, UCG_DT_UINT8, UCG_OP_LAST,
                        0), true);
}


/* sm_reduce_cma: the root reads a dead member's vector (ESRCH), and tells
 * the others in its release */
TEST(ucg_coll_errors, kill_reduce_member_o2m_late)
{
    kill_test(4, kill_o2m, 2,
              coll_desc(UCG_COLL_REDUCE, 1 << 20, UCG_DT_INT32, UCG_OP_SUM,
                        0), true);
}

/* sm_reduce_cma: the members wait for the release of a dead root (its
 * endpoints exist: the same reduce ran before) */
TEST(ucg_coll_errors, kill_reduce_root_o2m_late)
{
    kill_test(4, kill_o2m, 0,
              coll_desc(UCG_COLL_REDUCE, 1 << 20, UCG_DT_INT32, UCG_OP_SUM,
                        0), true, true);
}


/* ---- 16 MiB, once, in small configurations ---- */

void big_test(const coll_config &cfg)
{
    std::string label = config_label(cfg);
    double start      = now_sec();
    run_opts opts;

    opts.env     = config_env(cfg);
    opts.timeout = 180;
    run_ok(cfg.np, opts, [&](member &m) {
        coll_desc bc(UCG_COLL_BCAST, 16 << 20, UCG_DT_UINT8, UCG_OP_LAST,
                     m.size - 1);
        coll_desc ar(UCG_COLL_ALLREDUCE, 4 << 20, UCG_DT_INT32, UCG_OP_SUM);
        bc.seed = 1;
        ar.seed = 2;
        double t1 = run_coll(m, bc);
        double t2 = run_coll(m, ar);
        if (m.rank == 0) {
            printf("[ ucg      ] %s: bcast 16 MiB %.3f s, allreduce 16 MiB "
                   "%.3f s (with the checks)\n", label.c_str(), t1, t2);
            fflush(stdout);
        }
    }, label);
    printf("[ ucg      ] %s: %.2f s\n", label.c_str(), now_sec() - start);
}

/* ---- elements around the host-local fragment size ---- */

/* Bytes of data in a host-local message of this group (its sm_bcast
 * fragments), 0 when the group has no host-local phase */
size_t sm_bcast_frag(member &m)
{
    ucg_plan_key_t key;
    const ucg_plan_t *plan;

    memset(&key, 0, sizeof(key));
    key.type        = UCG_COLL_BCAST;
    key.op          = UCG_OP_LAST;
    key.dtype       = UCG_DT_UINT8;
    key.commutative = 1;
    key.msg_size    = 8;
    CHILD_CHECK_OK(ucg_group_plan(m.group, &key, &plan));
    for (unsigned i = 0; i < plan->num_phases; ++i) {
        if (plan->phases[i].method == UCG_PHASE_SM_BCAST) {
            return plan->phases[i].frag_size;
        }
    }
    return 0;
}

/* Whether the plan of @a d reduces in a host-local fragment phase */
bool sm_reduces(member &m, const coll_desc &d)
{
    ucg_plan_key_t key;
    const ucg_plan_t *plan;

    memset(&key, 0, sizeof(key));
    key.type        = d.type;
    key.root        = d.root;
    key.op          = d.op;
    key.dtype       = d.dtype;
    key.commutative = 1;
    key.msg_size    = d.count * d.elem_size();
    key.dt_size     = d.elem_size();
    CHILD_CHECK_OK(ucg_group_plan(m.group, &key, &plan));
    for (unsigned i = 0; i < plan->num_phases; ++i) {
        if ((plan->phases[i].method == UCG_PHASE_SM_REDUCE) ||
            (plan->phases[i].method == UCG_PHASE_SM_ALLREDUCE)) {
            return true;
        }
    }
    return false;
}

/*
 * Reductions with a commutative user operation on elements of the fragment
 * size, one byte less and more, and 8228 bytes (an MPI contiguous type that
 * made the non-roots fail with "contribution ... exceeds" and left the root
 * waiting): elements that a fragment cannot hold go point-to-point (or
 * single-copy), on every member alike, and the results are right.
 */
class ucg_coll_elems : public ::testing::TestWithParam<coll_config> {
};

TEST_P(ucg_coll_elems, around_frag)
{
    const coll_config &cfg = GetParam();
    std::string label      = config_label(cfg);
    run_opts opts;

    opts.env     = config_env(cfg);
    opts.timeout = 200;
    run_ok(cfg.np, opts, [&](member &m) {
        size_t frag = sm_bcast_frag(m);
        unsigned n  = 0;

        CHILD_CHECK(frag > 0, "%s: no host-local phase", m.label.c_str());
        for (size_t elem : {(size_t)8228, frag - 1, frag, frag + 1}) {
            user_sum_bytes_dt_size = elem;
            for (size_t count : {1, 3}) {
                for (ucg_coll_type_t type : {UCG_COLL_ALLREDUCE,
                                             UCG_COLL_REDUCE}) {
                    for (unsigned root : {0u, m.size - 1}) {
                        if ((type == UCG_COLL_ALLREDUCE) && (root > 0)) {
                            continue;
                        }
                        coll_desc d(type, count, UCG_DT_BYTES, UCG_OP_USER,
                                    root, (count == 3) && (root == 0));
                        d.dt_size = elem;
                        d.user    = USER_OP_SUM_BYTES;
                        d.seed    = 900 + n++;
                        if (type == UCG_COLL_ALLREDUCE) {
                            /* the planner's decision, seen from here */
                            CHILD_CHECK(sm_reduces(m, d) == (elem <= frag),
                                        "%s: %s: host-local reduction of "
                                        "%zu-byte elements with %zu-byte "
                                        "fragments: %d", m.label.c_str(),
                                        d.str().c_str(), elem, frag,
                                        (int)sm_reduces(m, d));
                        }
                        run_coll(m, d);
                    }
                }
            }
        }
    }, label);
}

const coll_config elem_configs[] = {
    /* name               np hosts    o2m          level         pairs  own_ucp extra */
    {"np3",               3, "auto",  O2M_ON,      LEVEL_SMALL,  false, false},
    {"np4_smallreduce",   4, "auto",  O2M_ON,      LEVEL_SMALL,  false, false,
     "SM_ALLREDUCE_MAX=inf"},
    {"np5_hosts2",        5, "2",     O2M_ON,      LEVEL_SMALL,  false, false},
    {"np4_cma",           4, "auto",  O2M_ON,      LEVEL_SMALL,  false, false,
     "SM_REDUCE_CMA_THRESH=1"},
    {"np4_centralized",   4, "auto",  O2M_ON,      LEVEL_SMALL,  false, false,
     "SM_BCAST_MODE=centralized;SM_INCAST_MODE=centralized"}
};

INSTANTIATE_TEST_SUITE_P(cfg, ucg_coll_elems, ::testing::ValuesIn(elem_configs),
                         [](const ::testing::TestParamInfo<coll_config> &info) {
                             return std::string(info.param.name);
                         });


/* ---- reductions around every size threshold of their plans ---- */

/* One class of each kind of reduction: native integer / float / bitwise /
 * logical, pairs, long double, complex, commutative and non-commutative
 * user operations */
const dtype_op threshold_reductions[] = {
    {UCG_DT_FLOAT,          0,  UCG_OP_SUM,    USER_OP_NONE},
    {UCG_DT_INT32,          0,  UCG_OP_SUM,    USER_OP_NONE},
    {UCG_DT_UINT8,          0,  UCG_OP_SUM,    USER_OP_NONE},
    {UCG_DT_DOUBLE,         0,  UCG_OP_MAX,    USER_OP_NONE},
    {UCG_DT_INT64,          0,  UCG_OP_BXOR,   USER_OP_NONE},
    {UCG_DT_INT16,          0,  UCG_OP_LAND,   USER_OP_NONE},
    {UCG_DT_FLOAT_INT,      0,  UCG_OP_MINLOC, USER_OP_NONE},
    {UCG_DT_LONG_DOUBLE,    0,  UCG_OP_SUM,    USER_OP_NONE},
    {UCG_DT_DOUBLE_COMPLEX, 0,  UCG_OP_PROD,   USER_OP_NONE},
    {UCG_DT_UINT64,         0,  UCG_OP_USER,   USER_OP_SUM_U64},
    {UCG_DT_BYTES,          16, UCG_OP_USER,   USER_OP_MAT2}
};

/* Bytes past which the plan of @a d changes, up to @a max_bytes: the ends
 * of the size ranges of its plans (SM_ALLREDUCE_MAX, SM_REDUCE_CMA_THRESH,
 * ALLREDUCE_RING_THRESH, ... as configured).  Adds the host-local methods
 * the plans use to @a methods. */
std::vector<size_t> plan_boundaries(member &m, const coll_desc &d,
                                    size_t max_bytes,
                                    std::set<ucg_phase_method_t> &methods)
{
    std::vector<size_t> ends;
    const ucg_plan_t *plan;
    ucg_plan_key_t key;
    size_t bytes = d.elem_size();

    while (bytes <= max_bytes) {
        memset(&key, 0, sizeof(key));
        key.type        = d.type;
        key.root        = d.root;
        key.op          = d.op;
        key.dtype       = d.dtype;
        key.commutative = (d.user != USER_OP_MAT2);
        key.msg_size    = bytes;
        key.dt_size     = d.elem_size();
        CHILD_CHECK_OK(ucg_group_plan(m.group, &key, &plan));
        for (unsigned i = 0; i < plan->num_phases; ++i) {
            methods.insert(plan->phases[i].method);
        }
        CHILD_CHECK(plan->size_max >= bytes, "%s: %s: plan range ends at %zu "
                    "below %zu", m.label.c_str(), d.str().c_str(),
                    plan->size_max, bytes);
        if (plan->size_max >= max_bytes) {
            break;
        }
        ends.push_back(plan->size_max + 1);
        bytes = plan->size_max + 1;
    }
    return ends;
}

struct threshold_config {
    const char *name;
    unsigned   np;
    const char *hosts;
    const char *extra;      /* as coll_config::extra */
    bool       want_cma;    /* some reduce plan must be SM_REDUCE_CMA */
    bool       want_frags;  /* some reduce plan must be SM_REDUCE */
};

std::ostream &operator<<(std::ostream &os, const threshold_config &c)
{
    return os << c.name;
}

class ucg_coll_thresholds : public ::testing::TestWithParam<threshold_config> {
};

/*
 * Reduce (two roots) and allreduce of every class of reduction, in place
 * and not, one element below, at and above every size at which its plan
 * changes (found from the plans' size ranges, so that a threshold moved by
 * the configuration or a new default is covered), and around what the
 * host-local phases cut a vector into: a fragment of sm_reduce (the root
 * takes its own vector fragment by fragment) and a chunk of
 * sm_reduce_cma's reads.  Results checked against the reference.
 */
TEST_P(ucg_coll_thresholds, around)
{
    const threshold_config &cfg = GetParam();
    coll_config cc = {cfg.name, cfg.np, cfg.hosts, O2M_ON, LEVEL_SMALL,
                      false, false, cfg.extra};
    std::string label = config_label(cc);
    double start      = now_sec();
    run_opts opts;

    opts.env     = config_env(cc);
    opts.timeout = 400;
    run_ok(cfg.np, opts, [&](member &m) {
        std::set<ucg_phase_method_t> methods;
        size_t frag = sm_frag_size(m);
        unsigned n  = 0;

        for (const dtype_op &dop : threshold_reductions) {
            for (ucg_coll_type_t type : {UCG_COLL_REDUCE, UCG_COLL_ALLREDUCE}) {
                for (unsigned root : {0u, m.size - 1}) {
                    if ((type == UCG_COLL_ALLREDUCE) && (root > 0)) {
                        continue;
                    }
                    coll_desc d(type, 1, dop.dtype, dop.op, root);
                    d.dt_size = dop.dt_size;
                    d.user    = dop.user;
                    size_t es = d.elem_size();

                    std::set<size_t> counts;
                    std::vector<size_t> sizes = plan_boundaries(m, d, 1 << 20,
                                                                methods);
                    /* sm_reduce fragments, sm_reduce_cma's read chunks */
                    sizes.push_back(frag);
                    sizes.push_back(64 * 1024);
                    sizes.push_back(3 * 64 * 1024 + 5 * es);
                    for (size_t b : sizes) {
                        size_t c = b / es;
                        for (size_t k : {c - 1, c, c + 1}) {
                            /* c - 1 wraps around when c is 0 */
                            if ((k > 0) && (k <= ((1u << 20) / es) + 1)) {
                                counts.insert(k);
                            }
                        }
                    }

                    for (size_t count : counts) {
                        for (bool ip : {false, true}) {
                            d.count    = count;
                            d.in_place = ip;
                            d.seed     = 3000 + n;
                            d.misalign = ((n % 7) == 3) ? 4 : 0;
                            ++n;
                            run_coll(m, d);
                        }
                    }
                }
            }
        }

        CHILD_CHECK(!cfg.want_cma || methods.count(UCG_PHASE_SM_REDUCE_CMA),
                    "%s: no plan used sm_reduce_cma", m.label.c_str());
        CHILD_CHECK(!cfg.want_frags || methods.count(UCG_PHASE_SM_REDUCE),
                    "%s: no plan used sm_reduce", m.label.c_str());
        if (m.rank == 0) {
            printf("[ ucg      ] %s: %u reductions, sm fragment %zu\n",
                   m.label.c_str(), n, frag);
        }
    }, label);
    printf("[ ucg      ] %s: %.2f s\n", label.c_str(), now_sec() - start);
}

const threshold_config threshold_configs[] = {
    /* name          np hosts   extra                         cma    frags */
    {"np2",          2, "auto", NULL,                         true,  true},
    {"np2_frags",    2, "auto", "SM_REDUCE_CMA_THRESH=inf",   false, true},
    {"np2_cma",      2, "auto", "SM_REDUCE_CMA_THRESH=1",     true,  false},
    {"np3",          3, "auto", NULL,                         true,  true},
    {"np4_hosts2",   4, "2",    "SM_INCAST_MODE=centralized", true,  true}
};

INSTANTIATE_TEST_SUITE_P(cfg, ucg_coll_thresholds,
                         ::testing::ValuesIn(threshold_configs),
                         [](const ::testing::TestParamInfo<threshold_config>
                            &info) {
                             return std::string(info.param.name);
                         });


/* ---- exhaustion of the host-local resources ---- */

/* Collectives whose plans need many different host-local endpoints: every
 * root of bcast, natives reductions of several (op, type) pairs, the
 * single-copy phases, sm_allreduce */
std::vector<coll_desc> exhaustion_colls(unsigned size)
{
    std::vector<coll_desc> list;
    const std::pair<ucg_op_t, ucg_dtype_t> reductions[] = {
        {UCG_OP_SUM, UCG_DT_INT32}, {UCG_OP_SUM, UCG_DT_DOUBLE},
        {UCG_OP_MAX, UCG_DT_INT32}, {UCG_OP_MIN, UCG_DT_FLOAT},
        {UCG_OP_PROD, UCG_DT_INT64}, {UCG_OP_BAND, UCG_DT_UINT8},
        {UCG_OP_BOR, UCG_DT_UINT16}, {UCG_OP_MAX, UCG_DT_DOUBLE},
        {UCG_OP_SUM, UCG_DT_UINT64}, {UCG_OP_MIN, UCG_DT_INT16}
    };

    for (unsigned root = 0; root < size; ++root) {
        list.push_back(coll_desc(UCG_COLL_BCAST, 3000, UCG_DT_UINT8,
                                 UCG_OP_LAST, root));
        list.push_back(coll_desc(UCG_COLL_BCAST, 40000, UCG_DT_UINT8,
                                 UCG_OP_LAST, root));
    }
    for (const auto &r : reductions) {
        list.push_back(coll_desc(UCG_COLL_REDUCE, 1000, r.second, r.first,
                                 0));
        list.push_back(coll_desc(UCG_COLL_ALLREDUCE, 3000, r.second,
                                 r.first));
    }
    list.push_back(coll_desc(UCG_COLL_ALLREDUCE, 16, UCG_DT_INT32,
                             UCG_OP_SUM));
    list.push_back(coll_desc(UCG_COLL_REDUCE, 70000, UCG_DT_FLOAT,
                             UCG_OP_SUM, size - 1));
    list.push_back(coll_desc(UCG_COLL_GATHER, 500, UCG_DT_INT32,
                             UCG_OP_LAST, 1));
    list.push_back(coll_desc(UCG_COLL_SCATTER, 500, UCG_DT_INT32,
                             UCG_OP_LAST, 1));
    list.push_back(coll_desc(UCG_COLL_ALLGATHER, 300, UCG_DT_INT32));
    list.push_back(coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8));
    for (size_t i = 0; i < list.size(); ++i) {
        list[i].seed = 700 + i;
    }
    return list;
}

/* Every collective of exhaustion_colls() on every group, interleaved (in
 * the same order on every member), twice: results checked */
void run_on_groups(member &m, const std::vector<ucg_group_h> &groups)
{
    std::vector<coll_desc> list = exhaustion_colls(m.size);

    for (unsigned round = 0; round < 2; ++round) {
        for (const coll_desc &d : list) {
            for (ucg_group_h g : groups) {
                run_coll(m, g, d);
            }
        }
    }
}

/*
 * Many groups at once on one host with a directory of 6 entries per
 * interface (SM_MAX_GROUPS=6, fewer than one group would take): the first
 * group reserves them all and uses host-local phases until its collectives
 * need more endpoints at one root; the other groups have none and are
 * point-to-point.  Every collective is correct, none fails with "limit
 * reached".  Before, the seventh endpoint rooted at an interface failed.
 */
TEST(ucg_coll_exhaustion, small_max_groups)
{
    run_opts opts;

    opts.env["UCX_UCG_SM_MAX_GROUPS"] = "6";
    opts.timeout                      = 300;
    run_ok(4, opts, [&](member &m) {
        std::vector<ucg_group_h> groups = {m.group};

        for (unsigned i = 0; i < 4; ++i) {
            groups.push_back(create_group(m));
        }
        CHILD_CHECK(m.group->topo.o2m, "no o2m transports");
        CHILD_CHECK((m.group->sm_reserved[UCG_SM_BCAST] == 6) &&
                    (m.group->sm_reserved[UCG_SM_INCAST] == 6),
                    "first group reserved %u, %u entries",
                    m.group->sm_reserved[UCG_SM_BCAST],
                    m.group->sm_reserved[UCG_SM_INCAST]);

        run_on_groups(m, groups);

        /* the first group ran host-local phases up to its budget, then
         * point-to-point; the others never had an endpoint */
        CHILD_CHECK(m.group->num_sm_slots > 0, "first group: no sm phase");
        CHILD_CHECK(m.group->sm_denied_logged, "first group: never out of "
                    "endpoints");
        for (size_t i = 1; i < groups.size(); ++i) {
            CHILD_CHECK(groups[i]->num_sm_slots == 0, "group %zu: %u sm "
                        "endpoints without a budget", i,
                        groups[i]->num_sm_slots);
        }

        /* destroyed groups give their entries back */
        m.procs->barrier(m.rank);
        for (size_t i = 1; i < groups.size(); ++i) {
            ucg_group_destroy(groups[i]);
        }
        ucg_group_destroy(m.group);
        m.group = create_group(m);
        CHILD_CHECK(m.group->sm_reserved[UCG_SM_BCAST] == 6, "a new group "
                    "reserved %u entries", m.group->sm_reserved[UCG_SM_BCAST]);
        run_coll(m, coll_desc(UCG_COLL_ALLREDUCE, 3000, UCG_DT_INT32,
                              UCG_OP_SUM));
        CHILD_CHECK(m.group->num_sm_slots > 0, "new group: no sm phase");
    });
}

/*
 * Interfaces that accept groups of at most 2 members (MAX_MEMBERS of both
 * transports; on rank 0 only, so members differ): hosts of 4 are
 * point-to-point on every member, hosts of 2 keep their host-local phases.
 */
TEST(ucg_coll_exhaustion, small_max_members)
{
    for (const char *hosts : {"auto", "2"}) {
        run_opts opts;

        opts.env["UCX_UCG_HOSTS"] = hosts;
        opts.timeout              = 300;
        opts.create_group         = false;
        run_ok(4, opts, [&](member &m) {
            if (m.rank == 0) {
                /* a context of its own: only this member's interfaces */
                ucg_context_destroy(m.context);
                setenv("UCX_SM_BCAST_MAX_MEMBERS", "2", 1);
                setenv("UCX_SM_INCAST_MAX_MEMBERS", "2", 1);
                CHILD_CHECK_OK(ucg_context_create(NULL, NULL, &m.context));
            }
            m.group = create_group(m);

            bool hier = !strcmp(hosts, "2");
            CHILD_CHECK(m.group->topo.sm_max_members == 2,
                        "largest sm group %u", m.group->topo.sm_max_members);
            /* a group that cannot use host-local phases reserves nothing */
            CHILD_CHECK((m.group->sm_reserved[UCG_SM_INCAST] > 0) == hier,
                        "hosts %s: %u directory entries reserved", hosts,
                        m.group->sm_reserved[UCG_SM_INCAST]);
            run_on_groups(m, {m.group});
            CHILD_CHECK((m.group->num_sm_slots > 0) == hier,
                        "hosts %s: %u sm endpoints", hosts,
                        m.group->num_sm_slots);
        }, std::string("hosts=") + hosts);
    }
}

/* Bytes of the group segments this member roots for @a group (what the
 * transports really created) */
size_t rooted_seg_bytes(ucg_group_h group)
{
    size_t bytes = 0;
    ucg_sm_ep_t *sm_ep;
    uct_o2m_group_ep_t *ep;

    ucs_list_for_each(sm_ep, &group->sm_eps, list) {
        ep = ucs_derived_of(sm_ep->ep, uct_o2m_group_ep_t);
        if ((ep->my_index == ep->root_index) && (ep->seg != NULL)) {
            bytes += ep->seg_size;
        }
    }
    return bytes;
}

/*
 * SM_GROUP_MEM 3m on rank 0 only (inf elsewhere): every member applies
 * 3 MiB, the segments the group really created on the host stay within
 * it while it runs collectives that would use many more, the rest go
 * point-to-point, and every result is correct.  On two virtual hosts the
 * bound is per host.  Before, nothing bounded the bytes, only the count
 * of endpoints (SM_GROUP_EPS).
 */
TEST(ucg_coll_exhaustion, small_group_mem)
{
    const size_t limit = 3 * 1024 * 1024;

    for (const char *hosts : {"auto", "2"}) {
        run_opts opts;

        opts.env["UCX_UCG_HOSTS"]        = hosts;
        opts.env["UCX_UCG_SM_GROUP_MEM"] = "inf";
        opts.timeout                     = 300;
        opts.pre_init = [](unsigned rank) {
            if (rank == 0) {
                setenv("UCX_UCG_SM_GROUP_MEM", "3m", 1);
            }
        };
        run_ok(4, opts, [&](member &m) {
            CHILD_CHECK(m.group->topo.o2m, "no o2m transports");
            CHILD_CHECK(m.group->sm_mem_limit == limit, "limit %zu",
                        m.group->sm_mem_limit);

            run_on_groups(m, {m.group});

            /* What each member of the host really created, added up */
            std::vector<size_t> all(m.size);
            size_t mine = rooted_seg_bytes(m.group), host_total = 0;
            m.procs->allgather(m.rank, &mine, sizeof(mine), all.data());
            for (unsigned r = 0; r < m.size; ++r) {
                if (m.group->topo.host_of[r] ==
                    m.group->topo.host_of[m.rank]) {
                    host_total += all[r];
                }
            }
            unsigned host = m.group->topo.host_of[m.rank];
            CHILD_CHECK(host_total <= limit, "hosts %s: %zu bytes of "
                        "segments on host %u", hosts, host_total, host);
            CHILD_CHECK(host_total == m.group->sm_host_bytes[host],
                        "hosts %s: created %zu, admitted %zu", hosts,
                        host_total, m.group->sm_host_bytes[host]);
            CHILD_CHECK(m.group->num_sm_slots > 0, "no sm phase");
            CHILD_CHECK(m.group->sm_denied_logged, "never out of segment "
                        "memory");
        }, std::string("hosts=") + hosts);
    }
}

TEST(ucg_coll_big, size_16m_o2m)
{
    big_test({"big", 3, "auto", O2M_ON, 0, false, false});
}

TEST(ucg_coll_big, size_16m_p2p)
{
    big_test({"big_p2p", 2, "auto", O2M_OFF_ENV, 0, false, false});
}

} // namespace


/*
 * RX_WATCH_POLLS: a member waiting for the next message of one host-local
 * fan-out endpoint polls the word that message changes, and progresses
 * everything when it changes or every RX_WATCH_POLLS polls.  np=2, the
 * other member 50 ms late, in each way of waiting: a bcast member
 * (sm_bcast), an allreduce and a barrier (two-member exchanges) watch; a
 * reduce root (sm_incast) does not.  Results are checked (run_coll); the
 * watchers' polls are served by the word, and with RX_WATCH_POLLS=0 none
 * is.
 */
TEST(ucg_coll_rx_watch, late_peer)
{
    for (unsigned polls : {128u, 0u}) {
        run_opts opts;

        opts.env["UCX_UCG_RX_WATCH_POLLS"] = std::to_string(polls);
        run_ok(2, opts, [&](member &m) {
            const coll_desc descs[] = {
                coll_desc(UCG_COLL_BCAST, 64, UCG_DT_UINT8, UCG_OP_LAST, 0),
                coll_desc(UCG_COLL_REDUCE, 16, UCG_DT_INT32, UCG_OP_SUM, 0),
                coll_desc(UCG_COLL_ALLREDUCE, 16, UCG_DT_INT32, UCG_OP_SUM),
                coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8)
            };
            unsigned long skips, quick;
            unsigned waiter;
            bool watches;

            for (const coll_desc &d : descs) {
                run_coll(m, d); /* the endpoints are joined */
                /* the reduce root waits for the member, the others for
                 * rank 0 */
                waiter = (d.type == UCG_COLL_REDUCE) ? 0 : 1;
                skips  = m.context->rx_watch_skips;
                quick  = m.context->rx_watch_quick;
                if (m.rank != waiter) {
                    usleep(50000);
                }
                run_coll(m, d);
                skips = m.context->rx_watch_skips - skips;
                quick = m.context->rx_watch_quick - quick;
                if (m.rank != waiter) {
                    continue;
                }
                watches = (polls > 0) && (d.type != UCG_COLL_REDUCE);
                CHILD_CHECK(watches ? (skips > 0) : (skips == 0),
                            "%s, RX_WATCH_POLLS=%u: %lu polls of rank %u "
                            "served by the watched word",
                            d.str().c_str(), polls, skips, m.rank);
                /* and when it changed, the message was taken from its
                 * interface without a full progress */
                CHILD_CHECK(watches ? (quick > 0) : (quick == 0),
                            "%s, RX_WATCH_POLLS=%u: %lu quick progresses "
                            "of rank %u", d.str().c_str(), polls, quick,
                            m.rank);
            }
        }, "rx_watch " + std::to_string(polls));
    }
}


/*
 * What a start finds once per plan (ucg_plan_t::mine): this member's set of
 * each phase is the one ucg_phase_find_set finds, and repeated starts of the
 * same request and of new requests of the same plan, which reuse the
 * endpoints it keeps, deliver every result.  A start makes ucg_progress
 * progress UCP on every call only when the collective waits for UCP: a
 * host-local one leaves it to every UCG_UCP_IDLE_POLLS calls.
 */
TEST(ucg_coll_mine, sets_eps_and_ucp)
{
    run_ok(3, run_opts(), [&](member &m) {
        const coll_desc descs[] = {
            coll_desc(UCG_COLL_BCAST, 64, UCG_DT_UINT8, UCG_OP_LAST, 1),
            coll_desc(UCG_COLL_REDUCE, 16, UCG_DT_INT32, UCG_OP_SUM, 2),
            coll_desc(UCG_COLL_ALLREDUCE, 16, UCG_DT_INT32, UCG_OP_SUM),
            coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8)
        };

        for (coll_desc d : descs) {
            for (ucg_plan_choice_t choice : {UCG_PLAN_AUTO, UCG_PLAN_FLAT}) {
                std::string label = m.label + ": " + d.str() +
                                    ((choice == UCG_PLAN_FLAT) ? " flat" : "");
                coll_bufs bufs(d, m.rank, m.size);
                ucg_coll_params_t params = bufs.params();
                const ucg_phase_set_t *set, *found;
                unsigned idx, found_idx;
                ucg_coll_h coll;
                bool flat;

                for (unsigned k = 0; k < 3; ++k) {
                    /* a new request of the same plan from the second on */
                    CHILD_CHECK_OK(ucg_coll_init_plan(m.group, &params,
                                                      choice, &coll));
                    d.seed += 100;
                    bufs.fill(d);
                    m.procs->barrier(m.rank);
                    if (m.rank == 0) {
                        /* the others are started and wait for it */
                        usleep(20000);
                    }
                    /* as a drain leaves it when nothing waits for UCP */
                    m.context->need_ucp = 0;
                    CHILD_CHECK_OK(ucg_coll_start(coll));
                    flat = (coll->plan->num_phases > 0) &&
                           !coll->plan->hier;
                    if ((m.rank != 0) && coll->active) {
                        CHILD_CHECK(m.context->need_ucp == (int)flat,
                                    "%s #%u: started, need_ucp %d",
                                    label.c_str(), k, m.context->need_ucp);
                    }
                    CHILD_CHECK_OK(wait_coll(coll, label));
                    bufs.check(label + " #" + std::to_string(k));
                    /* and the same request again */
                    d.seed += 100;
                    bufs.fill(d);
                    CHILD_CHECK_OK(ucg_coll_start(coll));
                    CHILD_CHECK_OK(wait_coll(coll, label));
                    bufs.check(label + " again #" + std::to_string(k));

                    CHILD_CHECK(coll->plan->mine_known, "%s: not found",
                                label.c_str());
                    for (unsigned i = 0; i < coll->plan->num_phases; ++i) {
                        idx = found_idx = UINT_MAX;
                        set   = ucg_coll_my_set(coll, i, &idx);
                        found = ucg_phase_find_set(&coll->plan->phases[i],
                                                   m.rank, &found_idx);
                        CHILD_CHECK((set == found) && (idx == found_idx),
                                    "%s phase %u: set %p index %u, not %p "
                                    "%u", label.c_str(), i, (void*)set, idx,
                                    (void*)found, found_idx);
                    }
                    ucg_coll_finalize(coll);
                }
            }
        }
    }, "mine");
}


/*
 * The phase table: every method has a row that the executor can run, a
 * phase with host-local endpoints has what the sm receive path and the
 * endpoint gate call, and point-to-point rows hold the functions
 * ucg_p2p_sim drives (its p2p_row()).
 */
TEST(ucg_phase_table, rows)
{
    for (int m = 0; m < UCG_PHASE_LAST; ++m) {
        const ucg_phase_ops_t *ops = &ucg_phase_table[m];
        bool sm                    = (ops->sm_eps != NULL);
        /* messages on the sm receive path: sm phases and mc_bcast */
        bool msgs                  = sm || (m == UCG_PHASE_MC_BCAST);

        EXPECT_TRUE(ops->start != NULL) << ucg_phase_method_names[m];
        EXPECT_TRUE(ops->progress != NULL) << ucg_phase_method_names[m];
        EXPECT_EQ(msgs, ops->expects != NULL) << ucg_phase_method_names[m];
        EXPECT_EQ(msgs, ops->deliver != NULL) << ucg_phase_method_names[m];
        if (sm) {
            /* its stand-in runs on the same set without endpoints */
            EXPECT_TRUE(ucg_phase_table[ops->standin].sm_eps == NULL)
                    << ucg_phase_method_names[m];
            EXPECT_TRUE(ucg_phase_table[ops->standin].flags &
                        UCG_PHASE_FLAG_UCP) << ucg_phase_method_names[m];
            EXPECT_FALSE(ops->flags & UCG_PHASE_FLAG_UCP)
                    << ucg_phase_method_names[m];
        } else {
            EXPECT_TRUE(ops->contributed == NULL)
                    << ucg_phase_method_names[m];
        }
    }

    /* the fan-in phases: they take turns on their sm_incast endpoints */
    EXPECT_TRUE(ucg_phase_table[UCG_PHASE_SM_REDUCE].contributed != NULL);
    EXPECT_TRUE(ucg_phase_table[UCG_PHASE_SM_GATHER].contributed != NULL);
    EXPECT_TRUE(ucg_phase_table[UCG_PHASE_SM_BCAST_CMA].contributed != NULL);
    EXPECT_TRUE(ucg_phase_table[UCG_PHASE_SM_REDUCE_CMA].contributed !=
                NULL);
    EXPECT_TRUE(ucg_phase_table[UCG_PHASE_SM_BCAST].contributed == NULL);
    EXPECT_TRUE(ucg_phase_table[UCG_PHASE_SM_ALLREDUCE].contributed == NULL);
}

TEST(ucg_phase_table, p2p_rows)
{
    static const struct {
        ucg_phase_method_t method;
        ucs_status_t       (*start)(struct ucg_coll*);
        ucs_status_t       (*progress)(struct ucg_coll*);
    } rows[] = {
        {UCG_PHASE_P2P_BCAST, ucg_p2p_bcast_start, ucg_p2p_bcast_progress},
        {UCG_PHASE_P2P_REDUCE, ucg_p2p_reduce_start, ucg_p2p_reduce_progress},
        {UCG_PHASE_P2P_ALLREDUCE_RD, ucg_p2p_allreduce_rd_start,
         ucg_p2p_allreduce_rd_progress},
        {UCG_PHASE_P2P_ALLREDUCE_RING, ucg_p2p_allreduce_ring_start,
         ucg_p2p_allreduce_ring_progress},
        {UCG_PHASE_P2P_GATHER, ucg_p2p_gather_start, ucg_p2p_wait_progress},
        {UCG_PHASE_P2P_SCATTER, ucg_p2p_scatter_start, ucg_p2p_wait_progress},
        {UCG_PHASE_P2P_ALLGATHER_RING, ucg_p2p_allgather_ring_start,
         ucg_p2p_allgather_ring_progress},
        {UCG_PHASE_P2P_ALLGATHER_LINEAR, ucg_p2p_allgather_linear_start,
         ucg_p2p_wait_progress},
        {UCG_PHASE_P2P_BARRIER, ucg_p2p_barrier_start,
         ucg_p2p_barrier_progress}
    };

    for (const auto &row : rows) {
        const ucg_phase_ops_t *ops = &ucg_phase_table[row.method];
        EXPECT_TRUE(ops->start == row.start) << row.method;
        EXPECT_TRUE(ops->progress == row.progress) << row.method;
        EXPECT_TRUE(ops->flags & UCG_PHASE_FLAG_UCP) << row.method;
    }
}


/*
 * The progress queue ucg_progress drains: elements are called once per
 * drain in the order they were enqueued, one that dequeues itself is not
 * called again, completions are counted, and UCP is asked for at every call
 * when an element waits for it or nothing is in progress.
 */
namespace {

struct fake_elem {
    ucg_progress_elem_t      elem;
    unsigned                 flags;   /* what it returns */
    int                      dequeue; /* at its next call */
    std::vector<int>         *calls;
    int                      id;
};

unsigned fake_elem_cb(ucg_progress_elem_t *elem)
{
    fake_elem *f = ucs_container_of(elem, fake_elem, elem);

    f->calls->push_back(f->id);
    if (f->dequeue) {
        ucg_progress_dequeue(elem);
    }
    return f->flags;
}

} // namespace

TEST(ucg_progress_queue, drain)
{
    ucg_progress_queue_t queue;
    std::vector<int> calls;
    fake_elem f[3];
    int need_ucp = 0;

    ucg_progress_queue_init(&queue);
    need_ucp = 1;
    EXPECT_EQ(0u, ucg_progress_drain(&queue, &need_ucp));
    EXPECT_EQ(0, need_ucp) << "nothing waits for UCP";
    EXPECT_EQ(1u, queue.gen);

    for (int i = 0; i < 3; ++i) {
        f[i].flags   = 0;
        f[i].dequeue = 0;
        f[i].calls   = &calls;
        f[i].id      = i;
        ucg_progress_enqueue(&queue, &f[i].elem, fake_elem_cb);
    }

    EXPECT_EQ(0u, ucg_progress_drain(&queue, &need_ucp));
    EXPECT_EQ(0, need_ucp) << "all in progress, none waits for UCP";
    EXPECT_EQ(std::vector<int>({0, 1, 2}), calls);

    /* the middle one completes and leaves, the last waits for UCP */
    calls.clear();
    f[1].flags   = UCG_PROGRESS_COMPLETED;
    f[1].dequeue = 1;
    f[2].flags   = UCG_PROGRESS_UCP;
    EXPECT_EQ(1u, ucg_progress_drain(&queue, &need_ucp));
    EXPECT_EQ(1, need_ucp);
    EXPECT_EQ(std::vector<int>({0, 1, 2}), calls);

    calls.clear();
    f[2].flags = 0;
    EXPECT_EQ(0u, ucg_progress_drain(&queue, &need_ucp));
    EXPECT_EQ(0, need_ucp);
    EXPECT_EQ(std::vector<int>({0, 2}), calls);

    /* the first leaves; a record that only waits for UCP (parked requests)
     * is not a collective in progress */
    calls.clear();
    f[0].flags   = UCG_PROGRESS_COMPLETED;
    f[0].dequeue = 1;
    f[2].flags   = UCG_PROGRESS_UCP;
    EXPECT_EQ(1u, ucg_progress_drain(&queue, &need_ucp));
    EXPECT_EQ(1, need_ucp);
    EXPECT_EQ(std::vector<int>({0, 2}), calls);

    calls.clear();
    f[2].dequeue = 1;
    EXPECT_EQ(0u, ucg_progress_drain(&queue, &need_ucp));
    EXPECT_EQ(std::vector<int>({2}), calls);
    EXPECT_TRUE(ucs_list_is_empty(&queue.elems));
    EXPECT_EQ(6u, queue.gen);
}
