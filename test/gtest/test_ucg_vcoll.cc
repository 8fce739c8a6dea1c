/**
 * ucx-o2m tests: UCG's collectives with a count per member (gatherv,
 * scatterv, allgatherv): results checked against a reference computed
 * locally (every member generates every member's input), the gaps between
 * the blocks untouched; persistent starts; bad arguments; a member whose
 * count differs from the root's (every member's) entry; their plans.
 */
#include "common/harness.h"
#include "common/ucg_harness.h"
#include "common/log_capture.h"
#include "common/sandbox.h"

extern "C" {
#include "ucg_group.h"
#include "ucg_plan.h"
#include "ucg_config.h"
#include <ucs/config/global_opts.h>
}

#include <sys/syscall.h>
#include <climits>
#include <cstring>
#include <vector>

using namespace ucg_test;

namespace {

/* Bytes the receive buffers are filled with before a collective: a gap
 * between blocks must keep it */
const unsigned char FILL = 0xee;

/* One vector collective of the tests: element size (UCG_DT_INT32, or
 * UCG_DT_BYTES of an odd size), the counts of a pattern, the blocks laid
 * out in reverse rank order with a gap after each */
struct vdesc {
    ucg_coll_type_t type;
    unsigned        root;
    ucg_dtype_t     dtype;
    size_t          dt_size;    /* UCG_DT_BYTES */
    unsigned        pattern;
    size_t          scale;      /* elements per count unit */
    bool            in_place;
    uint64_t        seed;

    size_t esize() const
    {
        return (dtype == UCG_DT_BYTES) ? dt_size : ucg_dtype_size(dtype);
    }

    /* Elements of member @a r: some zeros, some members larger */
    size_t count(unsigned r, unsigned size) const
    {
        switch (pattern) {
        case 0:  return 0;                               /* all empty */
        case 1:  return ((r * 5 + 3) % 7) * scale;       /* mixed, zeros */
        case 2:  return (r == size - 1) ? 3 * scale : 1; /* one large */
        default: return r + 1;                           /* rising */
        }
    }

    std::vector<size_t> counts(unsigned size) const
    {
        std::vector<size_t> c(size);
        for (unsigned r = 0; r < size; ++r) {
            c[r] = count(r, size);
        }
        return c;
    }

    /* Reverse rank order, a gap of 2 elements after each block */
    std::vector<size_t> displs(unsigned size, size_t *total_p) const
    {
        std::vector<size_t> d(size);
        size_t pos = 0;
        for (unsigned r = size; r-- > 0;) {
            d[r] = pos;
            pos += count(r, size) + 2;
        }
        *total_p = pos;
        return d;
    }

    std::string str() const
    {
        char buf[160];
        snprintf(buf, sizeof(buf), "%s root %u %s%zu pattern %u x%zu%s "
                 "seed %llu", ucg_coll_name(type), root,
                 (dtype == UCG_DT_BYTES) ? "bytes" : "int32", esize(),
                 pattern, scale, in_place ? " in-place" : "",
                 (unsigned long long)seed);
        return buf;
    }
};

/* Byte @a j of element @a i of member @a r's block */
unsigned char vbyte(const vdesc &d, unsigned r, size_t i, size_t j)
{
    return (unsigned char)((r * 131) + (i * 7) + (j * 3) + d.seed + 1);
}

void gen_block(const vdesc &d, unsigned r, size_t count, void *buf)
{
    unsigned char *p = (unsigned char*)buf;
    size_t es        = d.esize();

    for (size_t i = 0; i < count; ++i) {
        for (size_t j = 0; j < es; ++j) {
            p[i * es + j] = vbyte(d, r, i, j);
        }
    }
}

/* The buffers of one member and its parameters */
struct vbufs {
    vdesc               d;
    unsigned            rank, size;
    std::vector<size_t> counts, displs;
    size_t              total;          /* elements of the vector buffer */
    std::vector<char>   sbuf, rbuf;

    vbufs(const vdesc &desc, unsigned rank_, unsigned size_) :
        d(desc), rank(rank_), size(size_)
    {
        counts = d.counts(size);
        displs = d.displs(size, &total);
    }

    bool is_root() const
    {
        return (d.type == UCG_COLL_ALLGATHERV) || (rank == d.root);
    }

    /* The vector buffer: gatherv's and allgatherv's rbuf, scatterv's sbuf
     * at the root */
    std::vector<char> &vec()
    {
        return (d.type == UCG_COLL_SCATTERV) ? sbuf : rbuf;
    }

    void fill()
    {
        size_t es = d.esize();

        sbuf.assign(std::max<size_t>(counts[rank], 1) * es, 0);
        rbuf.assign(std::max<size_t>(counts[rank], 1) * es, (char)FILL);
        if (is_root()) {
            vec().assign(std::max<size_t>(total, 1) * es, (char)FILL);
        }

        if (d.type == UCG_COLL_SCATTERV) {
            if (rank == d.root) {
                for (unsigned r = 0; r < size; ++r) {
                    gen_block(d, r, counts[r], &sbuf[displs[r] * es]);
                }
            }
        } else if (d.in_place && is_root()) {
            gen_block(d, rank, counts[rank], &rbuf[displs[rank] * es]);
        } else {
            gen_block(d, rank, counts[rank], sbuf.data());
        }
    }

    ucg_coll_params_t params()
    {
        ucg_coll_params_t p;

        memset(&p, 0, sizeof(p));
        p.type    = d.type;
        p.root    = d.root;
        p.dtype   = d.dtype;
        p.dt_size = d.dt_size;
        p.count   = counts[rank];
        p.sbuf    = sbuf.data();
        p.rbuf    = rbuf.data();
        if (d.type == UCG_COLL_SCATTERV) {
            if (rank == d.root) {
                p.scounts = counts.data();
                p.sdispls = displs.data();
                if (d.in_place) {
                    p.rbuf = UCG_IN_PLACE;
                }
            }
        } else if (is_root()) {
            p.rcounts = counts.data();
            p.rdispls = displs.data();
            if (d.in_place) {
                p.sbuf = UCG_IN_PLACE;
            }
        }
        return p;
    }

    /* The result: every block where it belongs, the gaps untouched */
    void check(const std::string &label)
    {
        size_t es = d.esize();
        std::vector<char> expect;

        if (d.type == UCG_COLL_SCATTERV) {
            if ((rank == d.root) && d.in_place) {
                return;
            }
            expect.assign(std::max<size_t>(counts[rank], 1) * es,
                          (char)FILL);
            gen_block(d, rank, counts[rank], expect.data());
            CHILD_CHECK(expect == rbuf, "%s: rank %u: scatterv block "
                        "differs", label.c_str(), rank);
            return;
        }

        if (!is_root()) {
            return;
        }
        expect.assign(std::max<size_t>(total, 1) * es, (char)FILL);
        for (unsigned r = 0; r < size; ++r) {
            gen_block(d, r, counts[r], &expect[displs[r] * es]);
        }
        for (size_t i = 0; i < expect.size(); ++i) {
            CHILD_CHECK(expect[i] == rbuf[i], "%s: rank %u: byte %zu is "
                        "%02x, expected %02x", label.c_str(), rank, i,
                        (unsigned char)rbuf[i], (unsigned char)expect[i]);
        }
    }
};

/* Collectives run by this process (rank 0's are printed) */
unsigned vcoll_runs;

void run_vcoll(member &m, const vdesc &d, unsigned starts)
{
    vbufs b(d, m.rank, m.size);
    std::string label = m.label + " " + d.str();
    ucg_coll_params_t p;
    ucg_coll_h coll;

    b.fill();
    p = b.params();
    CHILD_CHECK_OK(ucg_coll_init(m.group, &p, &coll));
    for (unsigned i = 0; i < starts; ++i) {
        /* persistent: the same buffers with new contents */
        b.d.seed = d.seed + i;
        b.fill();
        CHILD_CHECK_OK(ucg_coll_start(coll));
        CHILD_CHECK_OK(wait_coll(coll, label));
        b.check(label);
        ++vcoll_runs;
    }
    ucg_coll_finalize(coll);
}

void run_matrix(member &m, size_t big_scale)
{
    static const ucg_coll_type_t types[] = {UCG_COLL_GATHERV,
                                            UCG_COLL_SCATTERV,
                                            UCG_COLL_ALLGATHERV};
    uint64_t seed = 1;

    for (ucg_coll_type_t type : types) {
        unsigned roots = (type == UCG_COLL_ALLGATHERV) ? 1 : m.size;
        for (unsigned root = 0; root < roots; ++root) {
            for (unsigned pattern = 0; pattern < 4; ++pattern) {
                for (int ip = 0; ip < 2; ++ip) {
                    vdesc d = {type, root, UCG_DT_INT32, 0, pattern, 3,
                               ip == 1, seed++};
                    run_vcoll(m, d, 2);
                    d.dtype   = UCG_DT_BYTES;
                    d.dt_size = 3;
                    run_vcoll(m, d, 1);
                }
            }
            /* rendezvous sizes, one large block */
            vdesc big = {type, root, UCG_DT_INT32, 0, 2, big_scale, false,
                         seed++};
            run_vcoll(m, big, 1);
        }
    }
}

/* Several vector collectives outstanding at once on one group, started in
 * the same order everywhere, tested in reverse order */
void run_outstanding(member &m)
{
    const unsigned n = 6;
    std::vector<vbufs*> bufs;
    std::vector<ucg_coll_h> colls(n);
    ucg_coll_params_t p;

    for (unsigned i = 0; i < n; ++i) {
        ucg_coll_type_t type = (i % 3 == 0) ? UCG_COLL_GATHERV :
                               (i % 3 == 1) ? UCG_COLL_SCATTERV :
                                              UCG_COLL_ALLGATHERV;
        vdesc d = {type, i % m.size, UCG_DT_INT32, 0, 1 + (i % 3), 5,
                   false, 100 + i};
        bufs.push_back(new vbufs(d, m.rank, m.size));
        bufs[i]->fill();
        p = bufs[i]->params();
        CHILD_CHECK_OK(ucg_coll_init(m.group, &p, &colls[i]));
        CHILD_CHECK_OK(ucg_coll_start(colls[i]));
    }
    for (unsigned i = n; i-- > 0;) {
        CHILD_CHECK_OK(wait_coll(colls[i], bufs[i]->d.str()));
        bufs[i]->check(m.label + " outstanding " + bufs[i]->d.str());
        ucg_coll_finalize(colls[i]);
        delete bufs[i];
    }
}

} // namespace


TEST(ucg_vcoll, results)
{
    struct {
        unsigned   np;
        const char *hosts;
        const char *extra_var, *extra_value;
    } configs[] = {
        {2, "auto", NULL, NULL},
        {3, "auto", NULL, NULL},
        {3, "auto", "UCX_UCG_ALLGATHERV_P2P", "linear"},
        {4, "2",    "UCX_UCG_ALLGATHERV_P2P", "ring"},
        {5, "auto", "UCX_TLS", "^sm_bcast,sm_incast"}
    };

    for (const auto &c : configs) {
        run_opts opts;
        std::string label = "[np=" + std::to_string(c.np) + " hosts=" +
                            c.hosts;

        opts.env["UCX_UCG_HOSTS"] = c.hosts;
        if (c.extra_var != NULL) {
            opts.env[c.extra_var] = c.extra_value;
            label += std::string(" ") + c.extra_var + "=" + c.extra_value;
        }
        label  += "]";
        opts.timeout = 300;
        opts.parent_done = [&](const void *shared) {
            unsigned runs = *(const unsigned*)shared;
            printf("[ ucg      ] %s: %u vector collectives\n", label.c_str(),
                   runs);
            EXPECT_GE(runs, 50u * c.np) << label;
        };
        run_ok(c.np, opts, [](member &m) {
            double t0 = o2m_test::now_sec();
            run_matrix(m, 40000);
            run_outstanding(m);
            if (m.rank == 0) {
                *(unsigned*)m.shared = vcoll_runs;
                printf("[ ucg      ] rank 0: %.2f s\n",
                       o2m_test::now_sec() - t0);
            }
        }, label);
    }
}

TEST(ucg_vcoll, bad_args)
{
    run_opts opts;

    opts.timeout = 60;
    run_ok(3, opts, [](member &m) {
        o2m_test::scoped_log_capture logs;
        std::vector<int32_t> sbuf(64), rbuf(64);
        std::vector<size_t> counts(m.size, 2), displs(m.size);
        unsigned n = 0;

        for (unsigned r = 0; r < m.size; ++r) {
            displs[r] = 2 * r;
        }

        auto base = [&](ucg_coll_type_t type) {
            ucg_coll_params_t p;
            memset(&p, 0, sizeof(p));
            p.type    = type;
            p.root    = 0;
            p.sbuf    = sbuf.data();
            p.rbuf    = rbuf.data();
            p.count   = 2;
            p.dtype   = UCG_DT_INT32;
            if (type == UCG_COLL_SCATTERV) {
                p.scounts = counts.data();
                p.sdispls = displs.data();
            } else {
                p.rcounts = counts.data();
                p.rdispls = displs.data();
            }
            return p;
        };
        auto invalid = [&](const ucg_coll_params_t &p, const char *what) {
            ucg_coll_h coll = NULL;
            size_t before   = logs.lines().size();
            ucs_status_t st = ucg_coll_init(m.group, &p, &coll);

            CHILD_CHECK(st == UCS_ERR_INVALID_PARAM, "rank %u: %s: %s",
                        m.rank, what, ucs_status_string(st));
            CHILD_CHECK(logs.lines().size() == before + 1, "rank %u: %s: "
                        "%zu log lines:\n%s", m.rank, what,
                        logs.lines().size() - before, logs.all().c_str());
            ++n;
        };

        /* the valid ones are accepted (init only: no communication) */
        for (auto t : {UCG_COLL_GATHERV, UCG_COLL_SCATTERV,
                       UCG_COLL_ALLGATHERV}) {
            ucg_coll_params_t p = base(t);
            ucg_coll_h coll;
            CHILD_CHECK_OK(ucg_coll_init(m.group, &p, &coll));
            ucg_coll_finalize(coll);
        }

        for (auto t : {UCG_COLL_GATHERV, UCG_COLL_SCATTERV,
                       UCG_COLL_ALLGATHERV}) {
            bool root = (t == UCG_COLL_ALLGATHERV) || (m.rank == 0);
            ucg_coll_params_t p;

            if (t != UCG_COLL_ALLGATHERV) {
                p = base(t);
                p.root = m.size;
                invalid(p, "root == size");
            }
            if (!root) {
                /* non-roots: only their own count and buffer matter */
                p = base(t);
                if (t == UCG_COLL_GATHERV) {
                    p.sbuf = NULL;
                    invalid(p, "gatherv sbuf NULL at a non-root");
                    p = base(t);
                    p.sbuf = UCG_IN_PLACE;
                    invalid(p, "gatherv in place at a non-root");
                } else {
                    p.rbuf = NULL;
                    invalid(p, "scatterv rbuf NULL at a non-root");
                    p = base(t);
                    p.rbuf = UCG_IN_PLACE;
                    invalid(p, "scatterv in place at a non-root");
                }
                p = base(t);
                p.count = SIZE_MAX / 2;
                invalid(p, "count overflows");
                continue;
            }

            bool sv = (t == UCG_COLL_SCATTERV);
            p = base(t);
            (sv ? p.scounts : p.rcounts) = NULL;
            invalid(p, "counts NULL");
            p = base(t);
            (sv ? p.sdispls : p.rdispls) = NULL;
            invalid(p, "displacements NULL");

            std::vector<size_t> c2(counts), d2(displs);
            p = base(t);
            (sv ? p.scounts : p.rcounts) = c2.data();
            (sv ? p.sdispls : p.rdispls) = d2.data();
            c2[m.size - 1] = SIZE_MAX / 2;
            invalid(p, "a count times the element size overflows");
            c2[m.size - 1] = 2;
            d2[m.size - 1] = SIZE_MAX / 4 + 1;
            invalid(p, "a displacement times the element size overflows");
            d2[m.size - 1] = SIZE_MAX / 4 - 1;
            c2[m.size - 1] = 3;
            invalid(p, "displacement + count overflows");
            d2[m.size - 1] = displs[m.size - 1];
            c2[m.size - 1] = counts[m.size - 1];
            c2[m.rank] = 3;
            invalid(p, "own count differs from its entry");

            p = base(t);
            if (sv) {
                p.sbuf = NULL;
            } else {
                p.rbuf = NULL;
            }
            invalid(p, "vector buffer NULL");
            p = base(t);
            if (sv) {
                p.rbuf = NULL;
            } else {
                p.sbuf = NULL;
            }
            invalid(p, "own buffer NULL");
            p = base(t);
            if (sv) {
                p.sbuf = UCG_IN_PLACE;
            } else {
                p.rbuf = UCG_IN_PLACE;
            }
            invalid(p, "in place as the vector buffer");
        }
        CHILD_CHECK(n > 10, "rank %u: only %u cases", m.rank, n);
    });
}

namespace {

/*
 * Member @a liar uses a count that differs by @a delta from the entry the
 * root (every member in allgatherv, whose own entry it changes too) has
 * for it: where its message arrives, or where it receives its block, the
 * collective fails with UCS_ERR_MESSAGE_TRUNCATED and one log line; every
 * other member completes or fails (UCS_ERR_CANCELED, the abort), nobody
 * hangs, nothing beyond the buffers is written.
 */
void wrong_count(ucg_coll_type_t type, unsigned np, unsigned root,
                 unsigned liar, long delta, size_t scale,
                 const char *method = NULL, unsigned pattern = 3)
{
    run_opts opts;
    std::string label = std::string(ucg_coll_name(type)) + " root " +
                        std::to_string(root) + " liar " +
                        std::to_string(liar) + " delta " +
                        std::to_string(delta) + " x" + std::to_string(scale) +
                        " pattern " + std::to_string(pattern) +
                        (method ? std::string(" ") + method : "");

    if (method != NULL) {
        opts.env["UCX_UCG_ALLGATHERV_P2P"] = method;
    }

    opts.timeout     = 60;
    opts.parent_done = [&](const void *shared) {
        /* someone saw the wrong length */
        EXPECT_GE(*(const unsigned*)shared, 1u) << label;
    };
    run_ok(np, opts, [&](member &m) {
        /* UCX warns of the messages of the failed collective nobody
         * received at the worker's destroy: expected here */
        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_ERROR;
        o2m_test::scoped_log_capture logs;
        vdesc d = {type, root, UCG_DT_INT32, 0, pattern, scale, false, 7};
        vbufs b(d, m.rank, m.size);
        unsigned *truncated = (unsigned*)m.shared;
        ucg_coll_params_t p;
        ucg_coll_h coll;
        ucs_status_t st;

        if ((m.rank == liar) && (type != UCG_COLL_ALLGATHERV)) {
            b.counts[m.rank] += delta;
        }
        b.fill();
        /* room for what a liar sends (and, in allgatherv, the larger own
         * block its own arguments describe), so that only the check stops
         * it; then a guard of 64 bytes */
        size_t more = 64 + ((delta > 0) ? delta * d.esize() : 0);
        b.sbuf.resize(b.sbuf.size() + more);
        b.rbuf.resize(b.rbuf.size() + more, (char)FILL);
        if ((type == UCG_COLL_ALLGATHERV) && (m.rank == liar)) {
            b.counts[m.rank] += delta;
            gen_block(b.d, m.rank, b.counts[m.rank], b.sbuf.data());
        }
        p = b.params();
        CHILD_CHECK_OK(ucg_coll_init(m.group, &p, &coll));
        CHILD_CHECK_OK(ucg_coll_start(coll));
        st = wait_coll(coll, label, 30);
        ucg_coll_finalize(coll);

        /* who receives the liar's message, or receives a block of the
         * wrong length (in the ring: its right neighbour first) */
        bool receives = (type == UCG_COLL_GATHERV) ? (m.rank == root) :
                        (type == UCG_COLL_SCATTERV) ? (m.rank == liar) :
                        (m.rank != liar);
        if (st == UCS_ERR_MESSAGE_TRUNCATED) {
            CHILD_CHECK(receives, "%s: rank %u failed with %s", label.c_str(),
                        m.rank, ucs_status_string(st));
            /* sm_allgatherv: a stream that ends at another fragment
             * says "counts differ" */
            CHILD_CHECK(logs.has("expected") || logs.has("counts differ"),
                        "%s: rank %u: no length line:\n%s", label.c_str(),
                        m.rank, logs.all().c_str());
            __sync_fetch_and_add(truncated, 1);
        } else {
            CHILD_CHECK((st == UCS_OK) || (st == UCS_ERR_CANCELED),
                        "%s: rank %u: %s", label.c_str(), m.rank,
                        ucs_status_string(st));
            CHILD_CHECK(!receives || (st == UCS_ERR_CANCELED) ||
                        (type == UCG_COLL_ALLGATHERV), "%s: rank %u "
                        "completed", label.c_str(), m.rank);
        }
        /* the guard after every buffer is untouched */
        for (size_t i = b.rbuf.size() - 64; i < b.rbuf.size(); ++i) {
            CHILD_CHECK((unsigned char)b.rbuf[i] == FILL, "%s: rank %u: "
                        "byte %zu after rbuf written", label.c_str(),
                        m.rank, i);
        }
    }, label);
}

} // namespace

TEST(ucg_vcoll, wrong_count)
{
    for (long delta : {1L, -1L}) {
        wrong_count(UCG_COLL_GATHERV, 3, 0, 2, delta, 1);
        wrong_count(UCG_COLL_GATHERV, 3, 1, 0, delta, 1);
        wrong_count(UCG_COLL_SCATTERV, 3, 0, 1, delta, 1);
        wrong_count(UCG_COLL_SCATTERV, 3, 2, 0, delta, 1);
        wrong_count(UCG_COLL_ALLGATHERV, 3, 0, 1, delta, 1);
        wrong_count(UCG_COLL_ALLGATHERV, 3, 0, 1, delta, 1, "linear");
        wrong_count(UCG_COLL_ALLGATHERV, 4, 0, 2, delta, 1, "ring");
        /* sm_allgatherv (one host of 3): the last member's block of 3 x
         * 2056 int32, 3 whole fragments of 8224 bytes, one element or one
         * fragment more or less, and of 3 x 2000 (its last fragment
         * partial) */
        wrong_count(UCG_COLL_ALLGATHERV, 3, 0, 2, delta, 2056, NULL, 2);
        wrong_count(UCG_COLL_ALLGATHERV, 3, 0, 2, delta * 2056, 2056, NULL,
                    2);
        wrong_count(UCG_COLL_ALLGATHERV, 3, 0, 2, delta, 2000, NULL, 2);
    }
}

TEST(ucg_vcoll, plans)
{
    ucg_config_t *config;
    ucg_topo_t topo;
    std::vector<uint64_t> hosts = {0, 0, 0, 1, 1, 1};

    ASSERT_EQ(UCS_OK, ucg_config_read(NULL, &config));
    ASSERT_EQ(UCS_OK, ucg_topo_init(&topo, hosts.size(), hosts.data(), 1,
                                    8192));

    auto plan = [&](ucg_coll_type_t type, unsigned root, size_t msg_size) {
        ucg_plan_key_t key;
        ucg_plan_t *plan;
        char *text   = NULL;
        size_t len   = 0;
        FILE *stream = open_memstream(&text, &len);

        memset(&key, 0, sizeof(key));
        key.type     = type;
        key.root     = root;
        key.op       = UCG_OP_LAST;
        key.dtype    = UCG_DT_UINT8;
        key.dt_size  = 1;
        key.msg_size = msg_size;
        EXPECT_EQ(UCS_OK, ucg_plan_create(config, &topo, &key, &plan));
        EXPECT_FALSE(plan->hier);
        EXPECT_EQ(1u, plan->num_phases);
        ucg_plan_print(plan, &topo, stream);
        fclose(stream);
        ucg_plan_destroy(plan);
        std::string s(text);
        free(text);
        return s;
    };

    /* flat, one point-to-point phase of every rank, whatever the size */
    for (size_t size : {(size_t)0, (size_t)8, (size_t)1 << 20}) {
        std::string g = plan(UCG_COLL_GATHERV, 4, size);
        EXPECT_NE(std::string::npos, g.find("p2p_gather")) << g;
        EXPECT_NE(std::string::npos, g.find("{0-3,4*,5}"))
            << g;
        std::string s = plan(UCG_COLL_SCATTERV, 1, size);
        EXPECT_NE(std::string::npos, s.find("p2p_scatter")) << s;
        EXPECT_NE(std::string::npos, s.find("{0,1*,2-5}"))
            << s;
        std::string a = plan(UCG_COLL_ALLGATHERV, 0, size);
        EXPECT_NE(std::string::npos, a.find("p2p_allgather_linear"))
            << a;
    }

    ASSERT_EQ(UCS_OK, ucg_config_modify(config, "ALLGATHERV_P2P", "ring"));
    EXPECT_NE(std::string::npos,
              plan(UCG_COLL_ALLGATHERV, 0, 8).find("p2p_allgather_ring"));
    ASSERT_EQ(UCS_OK, ucg_config_modify(config, "GATHERV_P2P", "ring"));
    {
        o2m_test::scoped_log_capture logs;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_config_check(config));
        EXPECT_TRUE(logs.has("GATHERV_P2P")) << logs.all();
    }

    ucg_topo_cleanup(&topo);
    ucg_config_release(config);
}

namespace {

/*
 * Member @a victim dies (SIGKILL) in a vector collective, after a little
 * progress, or before the others start it (@a late): a survivor's
 * collective completes with the right data (all it needed had arrived),
 * or fails within the liveness check's bound, nobody waits.
 */
void vcoll_kill(ucg_coll_type_t type, unsigned root, unsigned victim,
                bool late)
{
    const double bound = 0.1 + 5.0; /* CHECK_INTERVAL, slack under load */
    std::string label  = std::string(ucg_coll_name(type)) + " root " +
                         std::to_string(root) + " kill rank " +
                         std::to_string(victim) +
                         (late ? " (others start late)" : "");
    run_opts opts;

    opts.env["UCX_UCG_CHECK_INTERVAL"] = "100ms";
    /* eager sends: UCX 1.13's cma rendezvous aborts the process when its
     * peer dies in a get (UCX's own, not tested here; see kill_test) */
    opts.env["UCX_RNDV_THRESH"] = "inf";
    opts.final_barrier = false;
    opts.timeout       = 60;
    opts.shared_size   = sizeof(kill_shared);

    std::vector<int> status = run(3, opts, [&](member &m) {
        kill_shared *sh = static_cast<kill_shared*>(m.shared);
        vdesc d         = {type, root, UCG_DT_INT32, 0, 3, 50, false, 3};
        ucg_coll_params_t p;
        ucg_coll_h coll;
        ucs_status_t st;
        double kill_time;

        /* connections established, everyone alive */
        run_vcoll(m, d, 1);
        m.procs->barrier(m.rank);

        vbufs b(d, m.rank, m.size);
        b.fill();
        p = b.params();
        CHILD_CHECK_OK(ucg_coll_init(m.group, &p, &coll));
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

        CHILD_CHECK_OK(ucg_coll_start(coll));
        if (m.rank == victim) {
            die_in_coll(coll, sh);
        }

        st = wait_coll(coll, label, bound + 10);
        if (st == UCS_OK) {
            /* finished is not failed: then the data is right */
            b.check(label + ": completed although a member died");
        } else {
            __atomic_load(&sh->kill_time, &kill_time, __ATOMIC_SEQ_CST);
            CHILD_CHECK(kill_time > 0, "%s: rank %u failed (%s) before "
                        "the kill", label.c_str(), m.rank,
                        ucs_status_string(st));
            CHILD_CHECK(o2m_test::now_sec() - kill_time <= bound,
                        "%s: rank %u: %s came %.2f s after the kill",
                        label.c_str(), m.rank, ucs_status_string(st),
                        o2m_test::now_sec() - kill_time);
        }
        ucg_coll_finalize(coll);
    }, label);

    o2m_test::expect_only_killed(status, victim, label);
}

} // namespace

/*
 * On one host of at most SM_ALLREDUCE_MAX_PPN members allgatherv is one
 * sm_allgatherv phase (with ALLGATHERV_P2P=auto), chosen from the topology
 * and the configuration only, whatever the counts; gatherv and scatterv
 * stay point-to-point; a larger host, several hosts, or a forced method
 * give the point-to-point phase.
 */
TEST(ucg_vcoll, plans_one_host)
{
    ucg_config_t *config;

    ASSERT_EQ(UCS_OK, ucg_config_read(NULL, &config));
    auto plan = [&](unsigned np, unsigned nhosts, ucg_coll_type_t type,
                    bool expect_hier) {
        std::vector<uint64_t> hosts(np);
        ucg_plan_key_t key;
        ucg_plan_t *plan;
        ucg_topo_t topo;
        char *text   = NULL;
        size_t len   = 0;
        FILE *stream = open_memstream(&text, &len);

        for (unsigned r = 0; r < np; ++r) {
            hosts[r] = r % nhosts;
        }
        EXPECT_EQ(UCS_OK, ucg_topo_init(&topo, np, hosts.data(), 1, 8192));
        memset(&key, 0, sizeof(key));
        key.type    = type;
        key.op      = UCG_OP_LAST;
        key.dtype   = UCG_DT_UINT8;
        key.dt_size = 1;
        EXPECT_EQ(UCS_OK, ucg_plan_create(config, &topo, &key, &plan));
        EXPECT_EQ(expect_hier, (bool)plan->hier);
        EXPECT_EQ(1u, plan->num_phases);
        ucg_plan_print(plan, &topo, stream);
        fclose(stream);
        ucg_plan_destroy(plan);
        ucg_topo_cleanup(&topo);
        std::string s(text);
        free(text);
        printf("%s", s.c_str());
        return s;
    };
    auto has = [](const std::string &s, const char *what) {
        EXPECT_NE(std::string::npos, s.find(what)) << s;
    };

    for (unsigned np : {2u, 3u, 4u}) {
        has(plan(np, 1, UCG_COLL_ALLGATHERV, true), "sm_allgatherv");
        has(plan(np, 1, UCG_COLL_GATHERV, false), "p2p_gather");
        has(plan(np, 1, UCG_COLL_SCATTERV, false), "p2p_scatter");
    }
    has(plan(5, 1, UCG_COLL_ALLGATHERV, false), "p2p_allgather_linear");
    has(plan(4, 2, UCG_COLL_ALLGATHERV, false), "p2p_allgather_linear");

    ASSERT_EQ(UCS_OK, ucg_config_modify(config, "SM_ALLREDUCE_MAX_PPN",
                                        "8"));
    has(plan(8, 1, UCG_COLL_ALLGATHERV, true), "sm_allgatherv");
    ASSERT_EQ(UCS_OK, ucg_config_modify(config, "ALLGATHERV_P2P", "linear"));
    has(plan(3, 1, UCG_COLL_ALLGATHERV, false), "p2p_allgather_linear");
    ASSERT_EQ(UCS_OK, ucg_config_modify(config, "ALLGATHERV_P2P", "ring"));
    has(plan(3, 1, UCG_COLL_ALLGATHERV, false), "p2p_allgather_ring");
    ucg_config_release(config);
}

/* Rank 0 cannot create any segment (memfd_create fails with ENOMEM): its
 * sm_bcast endpoint of sm_allgatherv is refused, so every member runs the
 * point-to-point stand-in (p2p_allgather_linear on the same set): the
 * results are right, nobody waits, the group stays usable */
TEST(ucg_vcoll, sm_refused)
{
    run_opts opts;

    opts.timeout = 120;
    run_ok(3, opts, [](member &m) {
        unsigned refused = 0;
        uint64_t seed    = 900;
        ucg_sm_ep_t *sm_ep;

        CHILD_CHECK(m.group->topo.o2m, "no o2m transports");
        if (m.rank == 0) {
            CHILD_CHECK(o2m_test::deny_syscall(SYS_memfd_create, ENOMEM),
                        "seccomp: %m");
        }
        m.procs->barrier(m.rank);

        /* twice: the second time the refusal is known at once */
        for (int round = 0; round < 2; ++round) {
            for (unsigned pattern = 0; pattern < 4; ++pattern) {
                vdesc d = {UCG_COLL_ALLGATHERV, 0, UCG_DT_INT32, 0, pattern,
                           3000, round == 1, seed++};
                run_vcoll(m, d, 2);
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

TEST(ucg_vcoll, kill_member)
{
    vcoll_kill(UCG_COLL_GATHERV, 0, 2, false);
    vcoll_kill(UCG_COLL_GATHERV, 1, 1, true);
    vcoll_kill(UCG_COLL_SCATTERV, 0, 1, true);
    vcoll_kill(UCG_COLL_SCATTERV, 2, 2, false);
    vcoll_kill(UCG_COLL_ALLGATHERV, 0, 1, false);
    vcoll_kill(UCG_COLL_ALLGATHERV, 0, 0, true);
}

/*
 * Every collective with per-member arrays (the vector ones, alltoallv,
 * reduce_scatter) has them checked in one place, with the same refusals
 * (a NULL array, a block whose end overflows size_t: UCS_ERR_INVALID_PARAM
 * and one log line naming the array), and copied by ucg_coll_init: the
 * caller's arrays clobbered after init change nothing in later starts.
 */
TEST(ucg_vcoll, arrays_checked_and_copied)
{
    run_opts opts;

    opts.timeout = 120;
    run_ok(3, opts, [](member &m) {
        const unsigned n = m.size;
        std::vector<int32_t> sbuf(64), rbuf(64), expect(64);
        std::vector<size_t> c(n), d(n), sc(n), sd(n);
        unsigned refused = 0;

        /* elements from member @a i to member @a j (alltoallv) */
        auto pair = [](unsigned i, unsigned j) -> size_t {
            return (i + 2 * j) % 3 + 1;
        };
        /* c / d: member i's block (i + 1 elements; alltoallv: what comes
         * from i) in reverse rank order with a gap of one after each;
         * sc / sd: what alltoallv sends to member j, at 4 j */
        auto layout = [&](ucg_coll_type_t type) {
            size_t pos = 0;
            for (unsigned i = n; i-- > 0;) {
                c[i] = (type == UCG_COLL_ALLTOALLV) ? pair(i, m.rank) :
                                                      i + 1;
                d[i] = pos;
                pos += c[i] + 1;
            }
            for (unsigned j = 0; j < n; ++j) {
                sc[j] = pair(m.rank, j);
                sd[j] = 4 * j;
            }
        };
        auto base = [&](ucg_coll_type_t type) {
            ucg_coll_params_t p;
            layout(type);
            memset(&p, 0, sizeof(p));
            p.type  = type;
            p.dtype = UCG_DT_INT32;
            p.op    = UCG_OP_SUM;
            p.sbuf  = sbuf.data();
            p.rbuf  = rbuf.data();
            p.count = c[m.rank];
            if (type == UCG_COLL_SCATTERV) {
                p.scounts = c.data();
                p.sdispls = d.data();
            } else {
                p.rcounts = c.data();
                p.rdispls = d.data();
            }
            if (type == UCG_COLL_ALLTOALLV) {
                p.scounts = sc.data();
                p.sdispls = sd.data();
            }
            return p;
        };
        auto refuse = [&](const ucg_coll_params_t &p, const char *what,
                          const std::string &text) {
            o2m_test::scoped_log_capture logs;
            ucg_coll_h coll = NULL;
            ucs_status_t st = ucg_coll_init(m.group, &p, &coll);

            CHILD_CHECK(st == UCS_ERR_INVALID_PARAM, "rank %u: %s %s: %s",
                        m.rank, ucg_coll_name(p.type), what,
                        ucs_status_string(st));
            CHILD_CHECK((logs.lines().size() == 1) && logs.has(text),
                        "rank %u: %s %s: expected one line with '%s', "
                        "got:\n%s", m.rank, ucg_coll_name(p.type), what,
                        text.c_str(), logs.all().c_str());
            ++refused;
        };
        /* element @a e of what member @a r contributes at start @a s */
        auto val = [](unsigned r, unsigned s, size_t e) {
            return (int32_t)(1000 * (r + 1) + 100 * s + e);
        };

        for (auto t : {UCG_COLL_GATHERV, UCG_COLL_SCATTERV,
                       UCG_COLL_ALLGATHERV, UCG_COLL_ALLTOALLV,
                       UCG_COLL_REDUCE_SCATTER}) {
            bool sv           = (t == UCG_COLL_SCATTERV);
            std::string cname = sv ? "scounts" : "rcounts";
            std::string dname = sv ? "sdispls" : "rdispls";
            ucg_coll_params_t p;

            /* the refusals, where this member reads the arrays */
            if (((t != UCG_COLL_GATHERV) && !sv) || (m.rank == 0)) {
                p = base(t);
                (sv ? p.scounts : p.rcounts) = NULL;
                refuse(p, "NULL counts", cname + " is NULL");
                p = base(t);
                c[1] = SIZE_MAX / 4;
                refuse(p, "count past SIZE_MAX bytes", cname + "[1]");
                if (t != UCG_COLL_REDUCE_SCATTER) {
                    p = base(t);
                    (sv ? p.sdispls : p.rdispls) = NULL;
                    refuse(p, "NULL displacements", dname + " is NULL");
                    p = base(t);
                    d[n - 1] = SIZE_MAX / 4; /* + a count >= 1 */
                    refuse(p, "displacement + count past SIZE_MAX bytes",
                           dname + "[" + std::to_string(n - 1) + "]");
                }
                if (t == UCG_COLL_ALLTOALLV) {
                    p = base(t);
                    p.sdispls = NULL;
                    refuse(p, "NULL sdispls", "sdispls is NULL");
                    p = base(t);
                    sd[0] = SIZE_MAX / 4;
                    refuse(p, "sdispls past SIZE_MAX bytes", "sdispls[0]");
                }
            }

            /* copied: init, clobber the caller's arrays, start twice */
            ucg_coll_h coll;
            p = base(t);
            CHILD_CHECK_OK(ucg_coll_init(m.group, &p, &coll));
            std::vector<size_t> rc(c), rd(d), rsc(sc), rsd(sd);
            for (auto *v : {&c, &d, &sc, &sd}) {
                std::fill(v->begin(), v->end(), SIZE_MAX / 8);
            }

            for (unsigned s = 0; s < 2; ++s) {
                size_t before = 0, total = 0;

                std::fill(rbuf.begin(), rbuf.end(), -1);
                std::fill(expect.begin(), expect.end(), -1);
                std::fill(sbuf.begin(), sbuf.end(), -2);
                for (unsigned r = 0; r < n; ++r) {
                    before += (r < m.rank) ? rc[r] : 0;
                    total  += rc[r];
                }
                switch (t) {
                case UCG_COLL_GATHERV:
                case UCG_COLL_ALLGATHERV:
                    for (size_t e = 0; e < rc[m.rank]; ++e) {
                        sbuf[e] = val(m.rank, s, e);
                    }
                    for (unsigned r = 0;
                         (r < n) && ((t != UCG_COLL_GATHERV) ||
                                     (m.rank == 0)); ++r) {
                        for (size_t e = 0; e < rc[r]; ++e) {
                            expect[rd[r] + e] = val(r, s, e);
                        }
                    }
                    break;
                case UCG_COLL_SCATTERV:
                    for (unsigned r = 0; (m.rank == 0) && (r < n); ++r) {
                        for (size_t e = 0; e < rc[r]; ++e) {
                            sbuf[rd[r] + e] = val(r, s, e);
                        }
                    }
                    for (size_t e = 0; e < rc[m.rank]; ++e) {
                        expect[e] = val(m.rank, s, e);
                    }
                    break;
                case UCG_COLL_ALLTOALLV:
                    /* to member j: val(me, s, 10 j + e) */
                    for (unsigned j = 0; j < n; ++j) {
                        for (size_t e = 0; e < rsc[j]; ++e) {
                            sbuf[rsd[j] + e] = val(m.rank, s, 10 * j + e);
                        }
                    }
                    for (unsigned i = 0; i < n; ++i) {
                        for (size_t e = 0; e < rc[i]; ++e) {
                            expect[rd[i] + e] = val(i, s, 10 * m.rank + e);
                        }
                    }
                    break;
                default: /* reduce_scatter of a vector of sum(rc) */
                    for (size_t e = 0; e < total; ++e) {
                        sbuf[e] = val(m.rank, s, e);
                    }
                    for (size_t e = 0; e < rc[m.rank]; ++e) {
                        expect[e] = 0;
                        for (unsigned r = 0; r < n; ++r) {
                            expect[e] += val(r, s, before + e);
                        }
                    }
                    break;
                }
                CHILD_CHECK_OK(ucg_coll_start(coll));
                CHILD_CHECK_OK(wait_coll(coll, ucg_coll_name(t)));
                CHILD_CHECK(rbuf == expect, "rank %u: %s start %u: wrong "
                            "result after the caller's arrays changed",
                            m.rank, ucg_coll_name(t), s);
            }
            ucg_coll_finalize(coll);
        }
        CHILD_CHECK(refused >= ((m.rank == 0) ? 20u : 12u),
                    "rank %u: %u refusals", m.rank, refused);
    });
}
