/**
 * ucx-o2m tests: UCG's reduce_scatter, reduce_scatter_block, scan and
 * exscan (ucg_plan_redscan.c, phase/ucg_redscan.c): results against a
 * local rank-ordered reference (non-commutative user op included), zero
 * blocks, in place, persistent and outstanding instances, the plans chosen,
 * bad arguments, and a member with another count.
 */
#include "common/harness.h"
#include "common/ucg_harness.h"
#include "common/sandbox.h"
#include "common/tools.h"

#include <api/ucg_rules.h>

extern "C" {
#include "ucg_dt.h"
#include "ucg_group.h"
}

#include <sys/syscall.h>
#include <ucs/config/global_opts.h>

#include <cstring>
#include <regex>
#include <string>
#include <vector>

using namespace ucg_test;
using o2m_test::now_sec;

namespace {

/* One collective of the tests */
struct rs_case {
    ucg_coll_type_t type;
    size_t          count;    /* per member (block, scan vector) */
    ucg_dtype_t     dtype;
    ucg_op_t        op;
    user_op_kind_t  user;
    bool            in_place;
    bool            uneven;   /* reduce_scatter: rcounts vary, some 0 */
    uint64_t        seed;
};

std::string case_str(const rs_case &c)
{
    char buf[256];

    snprintf(buf, sizeof(buf), "%s count %zu %s %s%s%s",
             ucg_coll_name(c.type), c.count, ucg_dtype_name(c.dtype),
             (c.user == USER_OP_MAT2) ? "mat2" : ucg_op_name(c.op),
             c.in_place ? " in place" : "", c.uneven ? " uneven" : "");
    return buf;
}

/* The description gen_input uses: the values suit the op (an allreduce's) */
coll_desc gen_desc(const rs_case &c, size_t count)
{
    coll_desc d(UCG_COLL_ALLREDUCE, count, c.dtype, c.op);

    d.user    = c.user;
    d.dt_size = (c.user == USER_OP_MAT2) ? 16 : 0;
    d.seed    = c.seed;
    return d;
}

size_t elem_size(const rs_case &c)
{
    return (c.user == USER_OP_MAT2) ? 16 : ucg_dtype_size(c.dtype);
}

/* The blocks of each member (reduce_scatter*) */
std::vector<size_t> rs_counts(const rs_case &c, unsigned size)
{
    std::vector<size_t> counts(size, c.count);

    if (c.uneven) {
        for (unsigned i = 0; i < size; ++i) {
            /* member 1 (and every third) gets nothing */
            counts[i] = (i % 3 == 1) ? 0 : c.count + i * 7;
        }
    }
    return counts;
}

/* Elements of each member's input vector */
size_t vec_count(const rs_case &c, unsigned size)
{
    size_t total = 0;

    if ((c.type == UCG_COLL_SCAN) || (c.type == UCG_COLL_EXSCAN)) {
        return c.count;
    }
    for (size_t n : rs_counts(c, size)) {
        total += n;
    }
    return total;
}

/* Rank-ordered reduction v[first] op (... op v[last]) of elements
 * [from, from + count) of the members' vectors */
std::vector<char> ref_fold(const rs_case &c, unsigned first, unsigned last,
                           size_t from, size_t count, unsigned size)
{
    size_t esize       = elem_size(c);
    coll_desc d        = gen_desc(c, vec_count(c, size));
    ucg_user_op_t uop  = user_op(c.user);
    std::vector<char> acc(count * esize + 1), tmp(count * esize + 1);
    ucg_op_desc_t desc;

    EXPECT_EQ(UCS_OK, ucg_op_desc_init(&desc, c.op, c.dtype, d.dt_size,
                                       &uop));
    gen_input(d, last, from, count, acc.data());
    for (unsigned r = last; r-- > first;) {
        gen_input(d, r, from, count, tmp.data());
        ucg_op_reduce(&desc, tmp.data(), acc.data(), count);
    }
    acc.resize(count * esize);
    return acc;
}

const unsigned char RBUF_PATTERN = 0xa5;
const size_t GUARD               = 64;

/* One collective on member @a m: init, start, wait, check; with
 * @a rounds > 1 persistent: one init, then @a rounds starts, the inputs
 * refilled from another seed each time (the buffers stay) */
void run_case(member &m, const rs_case &c0, int rounds = 1)
{
    rs_case c = c0;
    unsigned me   = m.rank, size = m.size;
    size_t esize  = elem_size(c);
    size_t vcount = vec_count(c, size);
    std::vector<size_t> counts = rs_counts(c, size);
    bool rs = (c.type == UCG_COLL_REDUCE_SCATTER) ||
              (c.type == UCG_COLL_REDUCE_SCATTER_BLOCK);
    size_t rlen, off = 0;
    std::string label = m.label + ": " + case_str(c);
    coll_desc d       = gen_desc(c, vcount);
    ucg_coll_params_t p;
    ucs_status_t status;
    ucg_coll_h coll;

    for (unsigned i = 0; i < me; ++i) {
        off += counts[i];
    }

    /* In place: the input is in rbuf, which is then a whole vector */
    rlen = rs ? (c.in_place ? vcount : counts[me]) : c.count;
    rlen *= esize;
    std::vector<char> sbuf(vcount * esize + GUARD), rbuf(rlen + GUARD,
                                                         RBUF_PATTERN);
    gen_input(d, me, 0, vcount, c.in_place ? rbuf.data() : sbuf.data());
    std::vector<char> sref(sbuf);

    memset(&p, 0, sizeof(p));
    p.type    = c.type;
    p.sbuf    = c.in_place ? UCG_IN_PLACE : sbuf.data();
    p.rbuf    = rbuf.data();
    p.count   = c.count;
    p.dtype   = (c.user == USER_OP_MAT2) ? UCG_DT_BYTES : c.dtype;
    p.dt_size = (c.user == USER_OP_MAT2) ? 16 : 0;
    p.op      = c.op;
    p.user_op = user_op(c.user);
    p.rcounts = (c.type == UCG_COLL_REDUCE_SCATTER) ? counts.data() : NULL;

    status = ucg_coll_init(m.group, &p, &coll);
    CHILD_CHECK(status == UCS_OK, "%s: init: %s", label.c_str(),
                ucs_status_string(status));
    /* the counts were copied: they need not outlive init */
    std::fill(counts.begin(), counts.end(), (size_t)-1);
    counts = rs_counts(c, size);

  again:
    status = ucg_coll_start(coll);
    CHILD_CHECK(status == UCS_OK, "%s: start: %s", label.c_str(),
                ucs_status_string(status));
    status = wait_coll(coll, label);
    CHILD_CHECK(status == UCS_OK, "%s: %s", label.c_str(),
                ucs_status_string(status));

    std::vector<char> expect;
    if (rs) {
        expect = ref_fold(c, 0, size - 1, off, counts[me], size);
    } else if (c.type == UCG_COLL_SCAN) {
        expect = ref_fold(c, 0, me, 0, c.count, size);
    } else if (me > 0) {
        expect = ref_fold(c, 0, me - 1, 0, c.count, size);
    }

    if (!expect.empty()) {
        CHILD_CHECK(!memcmp(expect.data(), rbuf.data(), expect.size()),
                    "%s rank %u: wrong result (first bytes %02x, expected "
                    "%02x)", label.c_str(), me, (unsigned char)rbuf[0],
                    (unsigned char)expect[0]);
    } else if (!c.in_place) {
        /* exscan's member 0: its receive buffer is not written */
        for (size_t i = 0; i < rlen; ++i) {
            CHILD_CHECK((unsigned char)rbuf[i] == RBUF_PATTERN,
                        "%s rank %u: receive byte %zu written",
                        label.c_str(), me, i);
        }
    }
    if (!c.in_place || !rs) {
        /* beyond the result: untouched (in place: beyond the vector) */
        for (size_t i = expect.size(); (i < rlen) && !c.in_place; ++i) {
            CHILD_CHECK((unsigned char)rbuf[i] == RBUF_PATTERN,
                        "%s rank %u: receive byte %zu (past the result) "
                        "written", label.c_str(), me, i);
        }
    }
    for (size_t i = rlen; i < rlen + GUARD; ++i) {
        CHILD_CHECK((unsigned char)rbuf[i] == RBUF_PATTERN,
                    "%s rank %u: guard byte %zu written", label.c_str(), me,
                    i - rlen);
    }
    CHILD_CHECK(sbuf == sref, "%s rank %u: send buffer changed",
                label.c_str(), me);

    if (--rounds > 0) {
        c.seed += 1000;
        d       = gen_desc(c, vcount);
        std::fill(rbuf.begin(), rbuf.end(), RBUF_PATTERN);
        gen_input(d, me, 0, vcount, c.in_place ? rbuf.data() : sbuf.data());
        sref = sbuf;
        goto again;
    }
    ucg_coll_finalize(coll);
}

std::vector<rs_case> cases(unsigned size)
{
    const ucg_coll_type_t types[] = {UCG_COLL_REDUCE_SCATTER_BLOCK,
                                     UCG_COLL_REDUCE_SCATTER, UCG_COLL_SCAN,
                                     UCG_COLL_EXSCAN};
    struct {
        ucg_dtype_t dtype; ucg_op_t op; user_op_kind_t user;
    } ops[] = {
        {UCG_DT_INT32,  UCG_OP_SUM,  USER_OP_NONE},
        {UCG_DT_DOUBLE, UCG_OP_MAX,  USER_OP_NONE},
        {UCG_DT_UINT64, UCG_OP_USER, USER_OP_SUM_U64},
        {UCG_DT_BYTES,  UCG_OP_USER, USER_OP_MAT2}   /* non-commutative */
    };
    /* 2k bytes is SM_ALLREDUCE_MAX: sm_scan below, p2p_scan above */
    const size_t counts[] = {1, 37, 3000};
    std::vector<rs_case> list;
    uint64_t seed = 1;

    for (ucg_coll_type_t t : types) {
        for (auto &o : ops) {
            for (size_t n : counts) {
                for (int ip = 0; ip < 2; ++ip) {
                    rs_case c = {t, n, o.dtype, o.op, o.user, ip != 0,
                                 false, seed++};
                    list.push_back(c);
                    if (t == UCG_COLL_REDUCE_SCATTER) {
                        c.uneven = true;
                        c.seed   = seed++;
                        list.push_back(c);
                    }
                }
            }
        }
    }
    return list;
}

struct rs_config {
    const char *name;
    unsigned   np;
    const char *hosts;
    const char *extra;  /* UCX_UCG_ variables: "A=1;B=2" */
};

class ucg_redscan : public ::testing::TestWithParam<rs_config> {
};

env_t config_env(const rs_config &cfg)
{
    env_t env;
    std::string extra = cfg.extra;
    size_t pos;

    env["UCX_UCG_HOSTS"] = cfg.hosts;
    while (!extra.empty()) {
        pos = extra.find(';');
        std::string kv = extra.substr(0, pos);
        extra = (pos == std::string::npos) ? "" : extra.substr(pos + 1);
        env["UCX_UCG_" + kv.substr(0, kv.find('='))] =
            kv.substr(kv.find('=') + 1);
    }
    return env;
}

} // namespace


TEST_P(ucg_redscan, results)
{
    const rs_config &cfg = GetParam();
    run_opts opts;

    opts.env     = config_env(cfg);
    opts.timeout = 300;
    run_ok(cfg.np, opts, [&](member &m) {
        for (const rs_case &c : cases(m.size)) {
            run_case(m, c);
        }

        /* persistent: one init, three starts, other inputs each time */
        for (ucg_coll_type_t t : {UCG_COLL_REDUCE_SCATTER, UCG_COLL_SCAN,
                                  UCG_COLL_EXSCAN}) {
            for (int ip = 0; ip < 2; ++ip) {
                rs_case c = {t, 100, UCG_DT_INT32, UCG_OP_SUM, USER_OP_NONE,
                             ip != 0, t == UCG_COLL_REDUCE_SCATTER, 900};
                run_case(m, c, 3);
            }
        }

        /* outstanding together: all four started, then waited for in
         * reverse order */
        std::vector<int32_t> sb(4 * 50 * m.size), rb(4 * 50 * m.size, -1);
        std::vector<size_t> rc(m.size, 50);
        ucg_coll_h colls[4];
        for (int i = 0; i < 4; ++i) {
            for (size_t j = 0; j < 50 * m.size; ++j) {
                sb[i * 50 * m.size + j] = (int32_t)(m.rank * 1000 + j + i);
            }
            ucg_coll_params_t p;
            memset(&p, 0, sizeof(p));
            p.type    = (ucg_coll_type_t)(UCG_COLL_REDUCE_SCATTER + i);
            p.sbuf    = &sb[i * 50 * m.size];
            p.rbuf    = &rb[i * 50 * m.size];
            p.count   = 50;
            p.dtype   = UCG_DT_INT32;
            p.op      = UCG_OP_SUM;
            p.rcounts = rc.data();
            CHILD_CHECK(ucg_coll_init(m.group, &p, &colls[i]) == UCS_OK,
                        "outstanding init %d", i);
            CHILD_CHECK(ucg_coll_start(colls[i]) == UCS_OK,
                        "outstanding start %d", i);
        }
        for (int i = 4; i-- > 0;) {
            CHILD_CHECK(wait_coll(colls[i], "outstanding") == UCS_OK,
                        "outstanding %d", i);
            ucg_coll_finalize(colls[i]);
        }
        for (int i = 0; i < 4; ++i) {
            for (size_t j = 0; j < 50; ++j) {
                int64_t want = 0;
                unsigned upto = (i < 2) ? m.size :
                                (i == 2) ? m.rank + 1 : m.rank;
                size_t idx = (i < 2) ? m.rank * 50 + j : j;
                for (unsigned r = 0; r < upto; ++r) {
                    want += (int32_t)(r * 1000 + idx + i);
                }
                if ((i == 3) && (m.rank == 0)) {
                    want = -1; /* not written */
                }
                CHILD_CHECK(rb[i * 50 * m.size + j] == (int32_t)want,
                            "outstanding %s rank %u [%zu]: %d, expected %d",
                            ucg_coll_name((ucg_coll_type_t)
                                          (UCG_COLL_REDUCE_SCATTER + i)),
                            m.rank, j, rb[i * 50 * m.size + j], (int)want);
            }
        }
    }, cfg.name);
}

const rs_config rs_configs[] = {
    {"np1",              1, "auto", ""},
    {"np2",              2, "auto", ""},
    {"np3",              3, "auto", ""},
    {"np4_hosts2",       4, "2",    ""},
    {"np5",              5, "auto", ""},
    {"np5_hosts213",     5, "2,1,3", ""},
    {"np3_noo2m",        3, "auto", "O2M=n"},
    /* sm_scan over several fragments; on more members than by default */
    {"np4_smscan_frags", 4, "auto", "SM_ALLREDUCE_MAX=inf;SM_FRAG_SIZE=1000"},
    {"np6_smscan",       6, "auto", "SM_ALLREDUCE_MAX_PPN=8"}
};

INSTANTIATE_TEST_SUITE_P(cfg, ucg_redscan, ::testing::ValuesIn(rs_configs),
                         [](const ::testing::TestParamInfo<rs_config> &i) {
                             return std::string(i.param.name);
                         });


/* What the planner picks (docs/ucg.md) */
TEST(ucg_redscan_plan, chosen)
{
    run_opts opts;

    opts.timeout = 60;
    run_ok(4, opts, [](member &m) {
        auto plan = [&](ucg_coll_type_t type, size_t count) {
            std::vector<int32_t> sb(count * m.size + 1), rb(count * m.size + 1);
            std::vector<size_t> rc(m.size, count);
            ucg_coll_params_t p;
            char *text = NULL;
            size_t len = 0;

            memset(&p, 0, sizeof(p));
            p.type = type; p.sbuf = sb.data(); p.rbuf = rb.data();
            p.count = count; p.dtype = UCG_DT_INT32; p.op = UCG_OP_SUM;
            p.rcounts = rc.data();
            FILE *f = open_memstream(&text, &len);
            CHILD_CHECK(ucg_coll_plan_print(m.group, &p, f) == UCS_OK,
                        "plan print %s", ucg_coll_name(type));
            fclose(f);
            std::string s(text, len);
            free(text);
            return s;
        };
        auto has = [&](const std::string &s, const char *what) {
            CHILD_CHECK(s.find(what) != std::string::npos,
                        "plan lacks '%s':\n%s", what, s.c_str());
        };

        has(plan(UCG_COLL_SCAN, 8), "sm_scan");
        has(plan(UCG_COLL_EXSCAN, 8), "sm_scan");
        has(plan(UCG_COLL_SCAN, 4096), "p2p_scan");
        has(plan(UCG_COLL_EXSCAN, 4096), "flat");
        /* the whole vector counts: 4 x 8 x 4 bytes on one host */
        has(plan(UCG_COLL_REDUCE_SCATTER_BLOCK, 8), "sm_reduce_scatter");
        has(plan(UCG_COLL_REDUCE_SCATTER, 8), "sm_reduce_scatter");
        has(plan(UCG_COLL_REDUCE_SCATTER, 8), "reduce_scatter 128 bytes");
        has(plan(UCG_COLL_REDUCE_SCATTER_BLOCK, 200), "p2p_reduce_scatter");
        has(plan(UCG_COLL_REDUCE_SCATTER, 200), "flat");
    });
}

TEST(ucg_redscan_errors, bad_args)
{
    run_opts opts;

    opts.timeout = 60;
    run_ok(2, opts, [](member &m) {
        std::vector<int32_t> sb(100), rb(100);
        std::vector<size_t> rc(m.size, 10);
        ucs_log_level_t level = ucs_global_opts.log_component.log_level;
        ucg_coll_params_t p;
        ucg_coll_h coll;

        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
        auto invalid = [&](const char *what) {
            ucs_status_t status = ucg_coll_init(m.group, &p, &coll);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "%s: %s", what,
                        ucs_status_string(status));
        };
        auto base = [&](ucg_coll_type_t t) {
            memset(&p, 0, sizeof(p));
            p.type = t; p.sbuf = sb.data(); p.rbuf = rb.data();
            p.count = 10; p.dtype = UCG_DT_INT32; p.op = UCG_OP_SUM;
            p.rcounts = rc.data();
        };

        base(UCG_COLL_REDUCE_SCATTER);
        p.rcounts = NULL;
        invalid("reduce_scatter without rcounts");
        base(UCG_COLL_REDUCE_SCATTER);
        rc[1] = SIZE_MAX / 4;
        invalid("reduce_scatter blocks overflow");
        rc[1] = 10;
        base(UCG_COLL_REDUCE_SCATTER_BLOCK);
        p.count = SIZE_MAX / 4;
        invalid("reduce_scatter_block count overflow");
        for (ucg_coll_type_t t : {UCG_COLL_REDUCE_SCATTER,
                                  UCG_COLL_REDUCE_SCATTER_BLOCK,
                                  UCG_COLL_SCAN, UCG_COLL_EXSCAN}) {
            base(t);
            p.rbuf = UCG_IN_PLACE;
            invalid("receive buffer in place");
            base(t);
            p.sbuf = NULL;
            invalid("NULL send buffer");
            base(t);
            p.dtype = UCG_DT_DOUBLE;
            p.op    = UCG_OP_BAND;
            invalid("band on double");
            base(t);
            p.op = UCG_OP_USER;
            invalid("user op without a function");
        }

        /* an empty block needs no receive buffer */
        base(UCG_COLL_REDUCE_SCATTER);
        rc[m.rank] = 0;
        p.rbuf     = NULL;
        CHILD_CHECK(ucg_coll_run(m.group, &p) == UCS_OK,
                    "reduce_scatter with an empty block and no rbuf");
        ucs_global_opts.log_component.log_level = level;
    });
}

/* A member with another count: the others fail with a clear status, no
 * overflow (guards), nobody waits */
TEST(ucg_redscan_errors, peer_wrong_count)
{
    run_opts opts;

    opts.timeout = 120;
    run_ok(3, opts, [](member &m) {
        ucs_log_level_t level = ucs_global_opts.log_component.log_level;

        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
        for (int big = 0; big < 2; ++big)
        for (ucg_coll_type_t t : {UCG_COLL_REDUCE_SCATTER_BLOCK,
                                  UCG_COLL_SCAN, UCG_COLL_EXSCAN}) {
            /* a group per collective: a failed one fails the group's later
             * collectives */
            ucg_group_h g = create_group(m);
            size_t count  = 40 + ((m.rank == 1) ? 3 : 0);
            std::vector<int32_t> sb(count * m.size + 16, 1);
            std::vector<int32_t> rb(count * m.size + 16, 7);
            ucg_coll_params_t p;
            ucg_coll_h coll;

            memset(&p, 0, sizeof(p));
            p.type = t; p.sbuf = sb.data(); p.rbuf = rb.data();
            p.count = count; p.dtype = UCG_DT_INT32; p.op = UCG_OP_SUM;
            /* small: sm_* on one host; big: above SM_ALLREDUCE_MAX,
             * point-to-point */
            if (big) {
                p.count = count * 16;
                /* reduce_scatter_block reads a block per member */
                sb.resize(p.count * m.size + 16, 1);
                rb.assign(p.count + 16, 7);
                p.sbuf = sb.data(); p.rbuf = rb.data();
            }
            CHILD_CHECK(ucg_coll_init(g, &p, &coll) == UCS_OK, "init");
            CHILD_CHECK(ucg_coll_start(coll) == UCS_OK, "start");
            ucs_status_t status = wait_coll(coll, ucg_coll_name(t));
            /* rank 0 of a point-to-point scan only sends: it may
             * complete */
            CHILD_CHECK((status != UCS_OK) ||
                        (big && (t != UCG_COLL_REDUCE_SCATTER_BLOCK) &&
                         (m.rank == 0)),
                        "%s%s rank %u: completed with another member's "
                        "count", ucg_coll_name(t), big ? " (big)" : "",
                        m.rank);
            /* point-to-point: a length UCP or UCG finds wrong; sm: a
             * fragment of another length; or the others' abort */
            CHILD_CHECK((status == UCS_OK) ||
                        (status == UCS_ERR_MESSAGE_TRUNCATED) ||
                        (status == UCS_ERR_IO_ERROR) ||
                        (status == UCS_ERR_CANCELED),
                        "%s rank %u: %s", ucg_coll_name(t), m.rank,
                        ucs_status_string(status));
            for (size_t i = p.count; i < rb.size(); ++i) {
                CHILD_CHECK(rb[i] == 7, "%s rank %u: written past the "
                            "result at %zu", ucg_coll_name(t), m.rank, i);
            }
            ucg_coll_finalize(coll);
            m.procs->barrier(m.rank);
            ucg_group_destroy(g);
        }

        /* reduce_scatter where rank 1 thinks its own block is empty and
         * the others give it 5 (700) elements: rank 1 receives blocks of
         * another length than it expects and fails; nobody waits for a
         * block that is never sent.  Point-to-point, the others get blocks
         * of the lengths they expect from rank 1 (its displacements
         * differ): they may complete (finished is not failed); on one
         * host the vectors' lengths differ and every member fails */
        for (int big = 0; big < 2; ++big) {
            ucg_group_h g = create_group(m);
            size_t n      = big ? 700 : 5;
            std::vector<size_t> rc(m.size, n);
            if (m.rank == 1) {
                rc[1] = 0;
            }
            std::vector<int32_t> sb(n * m.size, 1), rb(n + 16, 7);
            ucg_coll_params_t p;
            ucg_coll_h coll;

            memset(&p, 0, sizeof(p));
            p.type = UCG_COLL_REDUCE_SCATTER; p.sbuf = sb.data();
            p.rbuf = rb.data(); p.dtype = UCG_DT_INT32; p.op = UCG_OP_SUM;
            p.rcounts = rc.data();
            CHILD_CHECK(ucg_coll_init(g, &p, &coll) == UCS_OK, "init");
            CHILD_CHECK(ucg_coll_start(coll) == UCS_OK, "start");
            ucs_status_t status = wait_coll(coll, "reduce_scatter counts");
            CHILD_CHECK(((status == UCS_OK) && big && (m.rank != 1)) ||
                        (status == UCS_ERR_MESSAGE_TRUNCATED) ||
                        (status == UCS_ERR_IO_ERROR) ||
                        (status == UCS_ERR_CANCELED),
                        "reduce_scatter with other counts%s rank %u: %s",
                        big ? " (big)" : "", m.rank,
                        ucs_status_string(status));
            for (size_t i = rc[m.rank]; i < rb.size(); ++i) {
                CHILD_CHECK(rb[i] == 7, "reduce_scatter rank %u: written "
                            "past the result at %zu", m.rank, i);
            }
            ucg_coll_finalize(coll);
            m.procs->barrier(m.rank);
            ucg_group_destroy(g);
        }
        ucs_global_opts.log_component.log_level = level;
    });
}

/* The tuning rules name these collectives (coll/ucg looks them up with the
 * whole vector's bytes for reduce_scatter) */
TEST(ucg_redscan_plan, rules)
{
    const std::string text = "ucg-rules 1\n"
                             "scan                 *  *  1-64  prev\n"
                             "reduce_scatter_block 4- *  *     flat\n"
                             "reduce_scatter       *  *  1k-   prev\n"
                             "exscan               *  *  *     ucg\n";
    ucg_rules_t rules;
    char err[256] = "";

    ASSERT_EQ(UCS_OK, ucg_rules_parse(text.data(), text.size(), "r.rules",
                                      &rules, err, sizeof(err))) << err;
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_SCAN, 4, 4, 8));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_SCAN, 4, 4, 65));
    EXPECT_EQ(UCG_RULE_FLAT, ucg_rules_lookup(&rules,
                                              UCG_COLL_REDUCE_SCATTER_BLOCK,
                                              4, 2, 8));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules,
                                             UCG_COLL_REDUCE_SCATTER_BLOCK,
                                             3, 3, 8));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules,
                                              UCG_COLL_REDUCE_SCATTER, 2, 2,
                                              4096));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_EXSCAN, 2, 2,
                                             8));
}

/* Rank 0 cannot create any segment (memfd_create fails with ENOMEM): its
 * sm_bcast endpoint of sm_scan / sm_reduce_scatter is refused, so every
 * member runs the point-to-point stand-in on the set (p2p_scan,
 * p2p_reduce_scatter): the results are right, nobody waits */
TEST(ucg_redscan_errors, root_out_of_memory)
{
    run_opts opts;

    opts.timeout = 120;
    run_ok(3, opts, [](member &m) {
        const ucg_coll_type_t types[] = {UCG_COLL_REDUCE_SCATTER_BLOCK,
                                         UCG_COLL_REDUCE_SCATTER,
                                         UCG_COLL_SCAN, UCG_COLL_EXSCAN};
        unsigned refused = 0;
        uint64_t seed    = 700;
        ucg_sm_ep_t *sm_ep;

        CHILD_CHECK(m.group->topo.o2m, "no o2m transports");
        if (m.rank == 0) {
            CHILD_CHECK(o2m_test::deny_syscall(SYS_memfd_create, ENOMEM),
                        "seccomp: %m");
        }
        m.procs->barrier(m.rank);

        /* twice: the second time the refusal is known at once */
        for (int round = 0; round < 2; ++round) {
            for (ucg_coll_type_t t : types) {
                for (int ip = 0; ip < 2; ++ip) {
                    /* 8 elements: the one-host sm_* plans */
                    rs_case c = {t, 8, UCG_DT_INT32, UCG_OP_SUM,
                                 USER_OP_NONE, ip != 0,
                                 t == UCG_COLL_REDUCE_SCATTER, seed++};
                    run_case(m, c);
                    c = {t, 3, UCG_DT_BYTES, UCG_OP_USER, USER_OP_MAT2,
                         ip != 0, t == UCG_COLL_REDUCE_SCATTER, seed++};
                    run_case(m, c);
                }
            }
        }

        ucs_list_for_each(sm_ep, &m.group->sm_eps, list) {
            refused += (uct_o2m_ep_state(sm_ep->ep, NULL) ==
                        UCT_O2M_EP_STATE_REFUSED);
        }
        CHILD_CHECK(refused > 0, "rank %u: no refused endpoint", m.rank);
        CHILD_CHECK(m.group->failed == UCS_OK, "group failed: %s",
                    ucs_status_string(m.group->failed));
    });
}

/* ucg_perf measures them (-c), with and without the one-to-many transports,
 * and checks the first result of every block: a small run succeeds */
TEST(ucg_redscan_plan, ucg_perf_runs)
{
    int status;
    std::string out = o2m_test::run_command(
            std::string(O2M_BUILD_DIR) + "/src/tools/ucg_perf -n 2,3 "
            "-c reduce_scatter_block,scan,exscan -s 8,4K -i 20 -r 1 -q "
            "-T 240 -W 120", &status, 300);
    std::regex row("\\n(reduce_scatter_block|scan|exscan) +(8|4K) +[0-9]+ "
                   "\\|");

    EXPECT_EQ(0, status) << out;
    /* 3 collectives x 2 sizes x 2 group sizes */
    EXPECT_EQ(12, std::distance(std::sregex_iterator(out.begin(), out.end(),
                                                     row),
                                std::sregex_iterator())) << out;
    EXPECT_EQ(std::string::npos, out.find("FAILED")) << out;
}
