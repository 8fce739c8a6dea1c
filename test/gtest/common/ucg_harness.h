/**
 * ucx-o2m tests: harness for UCG tests in forked children.
 *
 * - run(): forks np children (o2m_test::proc_group); each sets its
 *   environment (UCX_UCG_HOSTS, UCX_TLS, ...), creates a UCG context and a
 *   group of all children, calls the test function, and destroys them.
 * - coll_desc / ref_*: deterministic inputs, generated from (rank, index,
 *   seed), so that every child computes every member's data, and the
 *   expected result of each collective, computed locally (reductions in rank
 *   order with ucg_op_reduce).
 * - run_coll(): one collective with generated inputs, its result checked
 *   byte-exactly against the reference (long double: values only), the send
 *   buffer checked unchanged, and guard bytes after the receive buffer
 *   checked untouched.
 *
 * Inside a child every failure goes through CHILD_CHECK (the child exits
 * with status 1 after printing what failed), and every wait is bounded.
 */
#ifndef O2M_TEST_UCG_HARNESS_H_
#define O2M_TEST_UCG_HARNESS_H_

#include "harness.h"

extern "C" {
#include "api/ucg.h"
#include "ucg_dt.h"
}

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>


namespace ucg_test {

typedef std::map<std::string, std::string> env_t;

/* Seconds a single collective may take in a child before the child fails */
extern double coll_timeout;


/* User reductions available to the tests (every process has the same
 * function addresses: the children are forked) */
typedef enum {
    USER_OP_NONE,
    /* commutative: wrapping sum of UCG_DT_UINT64 elements */
    USER_OP_SUM_U64,
    /* non-commutative, associative: product of 2x2 matrices of uint32 (mod
     * 2^32), elements of UCG_DT_BYTES with dt_size 16 */
    USER_OP_MAT2,
    /* commutative: byte-wise wrapping sum of UCG_DT_BYTES elements of
     * user_sum_bytes_dt_size bytes (any size) */
    USER_OP_SUM_BYTES
} user_op_kind_t;

/* Element size of USER_OP_SUM_BYTES: the function gets a count of elements
 * only (as an MPI user function without its datatype); a test sets it
 * before the collectives that use the operation */
extern size_t user_sum_bytes_dt_size;

/* The ucg_user_op_t of @a kind; its arg counts the calls in this process */
ucg_user_op_t user_op(user_op_kind_t kind);
/* Calls of the user functions in this process since it started */
unsigned long user_op_calls();


/* A collective of the test matrix */
struct coll_desc {
    ucg_coll_type_t type     = UCG_COLL_BARRIER;
    unsigned        root     = 0;
    size_t          count    = 0;
    ucg_dtype_t     dtype    = UCG_DT_UINT8;
    size_t          dt_size  = 0;        /* UCG_DT_BYTES only */
    ucg_op_t        op       = UCG_OP_LAST;
    user_op_kind_t  user     = USER_OP_NONE;
    bool            in_place = false;
    uint64_t        seed     = 0;
    size_t          misalign = 0;        /* byte offset of the user buffers */

    coll_desc() {}
    coll_desc(ucg_coll_type_t t, size_t c, ucg_dtype_t d,
              ucg_op_t o = UCG_OP_LAST, unsigned r = 0, bool ip = false) :
        type(t), root(r), count(c), dtype(d), op(o), in_place(ip) {}

    bool        is_reduction() const;
    bool        rooted() const;
    size_t      elem_size() const;
    std::string str() const;
};

/* Element @a idx of member @a rank's input: its send buffer (bcast: root's
 * data; scatter: root's size * count elements); writes elem_size() bytes */
void gen_elem(const coll_desc &d, unsigned rank, size_t idx, void *elem);
/* count elements from index @a first */
void gen_input(const coll_desc &d, unsigned rank, size_t first, size_t count,
               void *buf);

/* Reduction in rank order ((v0 op v1) op v2) ... of every member's input */
void ref_reduce(const coll_desc &d, unsigned size, void *result);

/*
 * Expected receive buffer of @a rank (as many bytes as rbuf_size()).  Empty
 * when the member's receive buffer holds no result (non-roots of reduce and
 * gather, barrier).
 */
std::vector<char> ref_result(const coll_desc &d, unsigned rank, unsigned size);

/*
 * Alltoallv of a coll_desc: elements member @a i sends member @a j (0,
 * count / 2 or count, symmetric in place, where what goes to j is where
 * what comes from j goes), and the layouts: member i's send blocks in
 * rank order, its receive blocks in reverse rank order, each followed by
 * a gap of one element
 */
size_t a2av_count(const coll_desc &d, unsigned i, unsigned j);
std::vector<size_t> a2av_scounts(const coll_desc &d, unsigned rank,
                                 unsigned size);
std::vector<size_t> a2av_sdispls(const coll_desc &d, unsigned rank,
                                 unsigned size);
std::vector<size_t> a2av_rcounts(const coll_desc &d, unsigned rank,
                                 unsigned size);
std::vector<size_t> a2av_rdispls(const coll_desc &d, unsigned rank,
                                 unsigned size);

/* Receive / send buffer sizes of @a rank (0 when not used) */
size_t rbuf_size(const coll_desc &d, unsigned rank, unsigned size);
size_t sbuf_size(const coll_desc &d, unsigned rank, unsigned size);

/*
 * Compare @a len bytes of results: byte-exact, except for types with
 * padding (long double and the pairs), whose fields are compared.  Returns
 * "" when equal, else the first mismatch (element index, expected and
 * actual values).
 */
std::string compare(const coll_desc &d, const void *expected,
                    const void *actual, size_t len);


/* One member of a running test (in a child) */
struct member {
    o2m_test::proc_group *procs;
    unsigned             rank;     /* in the process group and in group */
    unsigned             size;
    ucg_context_h        context;
    ucg_group_h          group;
    std::string          label;    /* the configuration, for messages */
    /* Shared memory of the test (after the harness's own part) */
    void                 *shared;
    size_t               shared_size;
    /* Barrier check: members that entered a barrier of group (shared), and
     * the barriers this member completed */
    unsigned long        *barrier_entered;
    unsigned long        barriers_done;
};

struct run_opts {
    env_t  env;                    /* set in each child before UCX is used */
    bool   own_ucp       = false;  /* create UCP ourselves and pass it */
    bool   final_barrier = true;   /* OOB barrier before the destruction */
    bool   create_group  = true;
    double timeout       = 120;    /* seconds for the whole child run */
    size_t shared_size   = 1 << 20;
    /* Called in the parent after the children ended, with the test's part
     * of the shared memory (member::shared), e.g. to read statistics */
    std::function<void(const void*)> parent_done;
    /* Called in each child with its rank before UCX is used (after env) */
    std::function<void(unsigned)> pre_init;
};

/* OOB allgather over proc_group::allgather; arg is an oob_arg */
struct oob_arg {
    o2m_test::proc_group  *procs;
    unsigned              proc_rank;
    /* group rank of each process (empty: the same as the process rank) */
    std::vector<unsigned> group_rank;
};
ucs_status_t oob_allgather(void *arg, const void *sbuf, void *rbuf,
                           size_t len);

/* In a child: a group of all processes where process p has group rank
 * perm[p] (identity when empty); global_rank is the process rank */
ucg_group_h create_group(member &m, const std::vector<unsigned> &perm = {});

/*
 * Fork @a np children running @a fn in a UCG member; returns the exit status
 * of each child (see proc_group::run).  @a label names the configuration in
 * the children's messages.
 */
std::vector<int> run(unsigned np, const run_opts &opts,
                     const std::function<void(member&)> &fn,
                     const std::string &label = "");
/* Same, and fails the test unless every child exited with 0 */
void run_ok(unsigned np, const run_opts &opts,
            const std::function<void(member&)> &fn,
            const std::string &label = "");


/* ---- collectives in a child ---- */

/* Test until not UCS_INPROGRESS; CHILD_CHECK fails after @a timeout seconds
 * (coll_timeout when 0) */
ucs_status_t wait_coll(ucg_coll_h coll, const std::string &what,
                       double timeout = 0);

/* Buffers of one collective of @a rank, filled with inputs (and a pattern
 * in the receive buffer), with guard bytes after each */
class coll_bufs {
public:
    coll_bufs(const coll_desc &d, unsigned rank, unsigned size);

    /* Refill the inputs (of d with another seed: persistent collectives) */
    void fill(const coll_desc &d);
    /* Parameters for ucg_coll_init() */
    ucg_coll_params_t params() const;
    /* CHILD_CHECK: result, unchanged input, guards */
    void check(const std::string &label) const;

private:
    coll_desc         m_d;
    unsigned          m_rank;
    unsigned          m_size;
    std::vector<char> m_smem;
    std::vector<char> m_rmem;
    char              *m_sbuf;
    char              *m_rbuf;
    size_t            m_slen;
    size_t            m_rlen;
    /* The input as it was before the collective */
    std::vector<char> m_sref;
    /* Alltoallv: the arrays of params() */
    std::vector<size_t> m_scounts, m_sdispls, m_rcounts, m_rdispls;
};

/* init, start, wait, check, finalize: one collective, CHILD_CHECK on any
 * failure; returns the seconds it took */
double run_coll(member &m, const coll_desc &d);
/* Same on another group of the member */
double run_coll(member &m, ucg_group_h group, const coll_desc &d);


/* ---- a member killed in the middle of a collective ---- */

/* The test's shared memory (run_opts::shared_size) of a kill test */
struct kill_shared {
    double kill_time; /* when the victim killed itself, 0 before */
};

/* The victim: a little progress on its started @a coll, then it publishes
 * the time in @a sh and kills itself (SIGKILL); does not return */
void die_in_coll(ucg_coll_h coll, kill_shared *sh)
    __attribute__((noreturn));

/*
 * A survivor whose collective (buffers @a bufs) ended with @a st at time
 * @a t: finished is not failed, so a completed collective must have the
 * right data; an error must come at most @a bound seconds after the
 * victim's death.  With @a print, the error and its delay are printed.
 */
void check_end_after_kill(const member &m, ucs_status_t st, double t,
                          const coll_bufs &bufs, const std::string &label,
                          unsigned victim, double bound, bool print);

/* After the group failed: a new collective @a d (named @a what) fails too,
 * within @a timeout seconds, on every survivor */
void check_coll_fails(member &m, const coll_desc &d, const std::string &label,
                      const char *what, double timeout);

} // namespace ucg_test

#endif
