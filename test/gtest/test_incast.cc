/**
 * ucx-o2m tests: sm_incast (fan-in) groups in separate processes.
 *
 *  - Incast/IncastMatrix: every mode x group size 2..8, every member as
 *    root; every (op, dtype) that uct_o2m_op_supported() accepts, over the
 *    message-size classes and their boundaries (0, 1, 7, 8, 63, 64,
 *    max_short - 1, max_short, max_bcopy - 1, max_bcopy, max_bcopy + 1,
 *    1 MiB, 4 MiB; for reductions the nearest hdr_len + whole elements)
 *    sent with am_short / am_bcopy / am_zcopy (and rounds where the senders
 *    mix them); each result checked against a reduction computed here, in
 *    member order.  1 MiB for gather and int32 sum from every root plus one
 *    more (op, dtype) per root; 4 MiB for those two at 3 members.
 *    O2M_TEST_VERBOSE=1 prints how many groups and rounds a run did.
 *  - Incast/IncastFlow: back-to-back rounds (16x the ring depth) with
 *    back-pressure, pending requests, zcopy completions and flush.
 *  - Incast/IncastConcurrent: three groups live at once on the same
 *    interfaces, two of them rooted at the same member.
 *  - Incast/IncastErrors: contributions of different lengths in a round,
 *    lengths that are not hdr_len + whole elements.
 *  - Incast/IncastKill: kill -9 of a sender (the root gets an error), of the
 *    root (the blocked senders get an error), no residue.
 *  - IncastParams: (mode, op, dtype) refused exactly when the query says so;
 *    other refused parameters.
 *  - IncastSemantics: a logical op over one contribution gives 0/1 in every
 *    mode.
 *  - IncastLateRoot: sends before the root created the group are "no
 *    resources" (pending requests go out once joined), in every mode.
 *  - IncastZeroLength: empty contributions by every method on a fresh root.
 *
 * Every interface has FIFO_SIZE 4 and CHECK_INTERVAL 10 ms.
 * Data: a member's contribution is a function of (rank, round, index); the
 * first hdr_len bytes of it carry (round, rank), so a round delivered twice,
 * late, or with the header of the wrong member does not match.  Floating
 * point values are small integers (or halves), so every order is exact.
 */
#include "common/harness.h"
#include "common/uct_env.h"
#include "common/traffic.h"
#include "common/residue.h"
#include "common/log_capture.h"
#include "common/o2m_values.h"

extern "C" {
#include <ucs/debug/log_def.h>
#include <ucs/time/time.h>
}

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

using namespace o2m_test;

namespace {

const unsigned fifo_depth = 4;        /* FIFO_SIZE of every interface here */
const double   member_wait_timeout = 10; /* seconds, see class member */
const size_t   one_mib    = 1ul << 20;


std::map<std::string, std::string> incast_config()
{
    return {{"O2M_FIFO_SIZE", std::to_string(fifo_depth)},
            {"O2M_CHECK_INTERVAL", "10ms"}};
}

size_t elem_size(uct_o2m_op_t op, uct_o2m_dtype_t dtype)
{
    return (op == UCT_O2M_OP_GATHER) ? 1 : uct_o2m_dtype_size(dtype);
}

std::string group_name(uct_o2m_mode_t mode, uct_o2m_op_t op,
                       uct_o2m_dtype_t dtype, size_t hdr_len)
{
    std::ostringstream os;
    os << uct_o2m_mode_name(mode) << "/" << uct_o2m_op_name(op) << "/"
       << uct_o2m_dtype_name(dtype) << "/hdr" << hdr_len;
    return os.str();
}


/* ------------------------------------------------------------------------ */
/* Bounded waiting.  Every loop here yields when nothing progressed: the     */
/* groups are bigger than the number of cores.                               */

double now_sec()
{
    return ucs_time_to_sec(ucs_get_time());
}

template <typename Cond>
bool wait_progress(uct_env &env, Cond cond, double timeout = 0)
{
    double deadline = now_sec() + ((timeout > 0) ? timeout : wait_timeout);

    while (!cond()) {
        if (now_sec() > deadline) {
            return false;
        }
        if (env.progress() == 0) {
            sched_yield();
        }
    }
    return true;
}

/* Wait for a shared-memory condition without progressing UCT */
template <typename Cond>
bool wait_noprogress(Cond cond, double timeout = 0)
{
    double deadline = now_sec() + ((timeout > 0) ? timeout : wait_timeout);

    while (!cond()) {
        if (now_sec() > deadline) {
            return false;
        }
        sched_yield();
    }
    return true;
}


/* Expected UCX errors are counted, not printed */



/* ------------------------------------------------------------------------ */
/* Deterministic contributions and the reference reduction                  */

uint32_t mix32(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t h = (a * 0x9e3779b1u) ^ ((b + 0x7f4a7c15u) * 0x85ebca77u) ^
                 ((c + 1) * 0xc2b2ae3du);

    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    h *= 0x297a2d39u;
    h ^= h >> 15;
    return h;
}

uint64_t mix64(uint32_t a, uint32_t b, uint64_t c)
{
    return ((uint64_t)mix32(a, b, (uint32_t)c) << 32) |
           mix32(a ^ 0x5bd1e995u, b + 17, (uint32_t)(c >> 32) ^ (uint32_t)c);
}

/* Header byte i of member rank's contribution to round: bytes 0..3 are
 * round * 256 + rank, little endian */
uint8_t hdr_byte(unsigned rank, unsigned round, size_t i)
{
    if (i < 4) {
        return (uint8_t)((((uint32_t)round << 8) | rank) >> (8 * i));
    }
    return (uint8_t)(rank * 37 + round * 11 + i * 3 + 1);
}

template <typename T>
T from_bits(uint64_t h)
{
    T value;

    memcpy(&value, &h, sizeof(value)); /* little endian: the low bytes */
    return value;
}

template <typename T, bool FP = std::is_floating_point<T>::value>
struct arith;

template <typename T> struct arith<T, true> {
    static T add(T a, T b)  { return a + b; }
    static T mul(T a, T b)  { return a * b; }
    static T band(T a, T b) { return a; } /* unreachable */
    static T bor(T a, T b)  { return a; }
    static T bxor(T a, T b) { return a; }
};

template <typename T> struct arith<T, false> {
    /* Wrap-around in 64 bits, then truncated: two's complement wrap */
    static T add(T a, T b)  { return (T)((uint64_t)a + (uint64_t)b); }
    static T mul(T a, T b)  { return (T)((uint64_t)a * (uint64_t)b); }
    static T band(T a, T b) { return a & b; }
    static T bor(T a, T b)  { return a | b; }
    static T bxor(T a, T b) { return a ^ b; }
};

/* dst op src, with the semantics of o2m_reduce.h (a = dst, b = src) */
template <typename T>
T ref_apply(uct_o2m_op_t op, T a, T b)
{
    switch (op) {
    case UCT_O2M_OP_SUM:  return arith<T>::add(a, b);
    case UCT_O2M_OP_PROD: return arith<T>::mul(a, b);
    case UCT_O2M_OP_MIN:  return (a < b) ? a : b;
    case UCT_O2M_OP_MAX:  return (a > b) ? a : b;
    case UCT_O2M_OP_BAND: return arith<T>::band(a, b);
    case UCT_O2M_OP_BOR:  return arith<T>::bor(a, b);
    case UCT_O2M_OP_BXOR: return arith<T>::bxor(a, b);
    case UCT_O2M_OP_LAND: return (T)((a != 0) && (b != 0));
    case UCT_O2M_OP_LOR:  return (T)((a != 0) || (b != 0));
    case UCT_O2M_OP_LXOR: return (T)((a != 0) != (b != 0));
    default:              return a;
    }
}

/*
 * Element idx of member rank's contribution to round.  With a single
 * contributor, logical ops get only 0 and 1 (the result of a "reduction" of
 * one value is checked separately, in IncastSemantics).
 */
template <typename T>
T gen_value(uct_o2m_op_t op, unsigned rank, unsigned round, size_t idx,
            bool single)
{
    static const double prod_fp[] = {1, 2, -1, 0.5};
    static const int prod_int[]   = {1, 2, -1};
    static const double true_fp[] = {1, -2, 0.5, 3, -0.25};
    const bool fp = std::is_floating_point<T>::value;
    uint64_t h    = mix64(rank, round, idx);
    unsigned zero_in_8;
    bool zero;

    switch (op) {
    case UCT_O2M_OP_SUM:
        return fp ? (T)((int)(h % 9) - 4) : from_bits<T>(h);
    case UCT_O2M_OP_PROD:
        return fp ? (T)prod_fp[h % 4] : (T)prod_int[h % 3];
    case UCT_O2M_OP_MIN:
    case UCT_O2M_OP_MAX:
        return fp ? (T)((int)(h % 201) - 100) : from_bits<T>(h);
    case UCT_O2M_OP_BAND:
        return from_bits<T>(h | (h >> 7) | (h << 5));
    case UCT_O2M_OP_BOR:
        return from_bits<T>(h & (h >> 7) & (h << 5));
    case UCT_O2M_OP_BXOR:
        return from_bits<T>(h);
    case UCT_O2M_OP_LAND:
    case UCT_O2M_OP_LOR:
    case UCT_O2M_OP_LXOR:
        zero_in_8 = (op == UCT_O2M_OP_LAND) ? 1 :
                    (op == UCT_O2M_OP_LOR) ? 6 : 4;
        zero      = (h % 8) < zero_in_8;
        if (single) {
            return (T)(zero ? 0 : 1);
        }
        if (zero) {
            /* -0.0 is false too */
            return (fp && (h & 0x100)) ? (T)-0.0 : (T)0;
        }
        return fp ? (T)true_fp[(h >> 9) % 5] : from_bits<T>((h >> 9) | 1);
    default:
        return 0;
    }
}

template <typename T>
void fill_elems(uct_o2m_op_t op, unsigned rank, unsigned round, bool single,
                uint8_t *dst, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        T value = gen_value<T>(op, rank, round, i, single);
        memcpy(dst + (i * sizeof(T)), &value, sizeof(T));
    }
}

template <typename T>
void reduce_elems(uct_o2m_op_t op, uint8_t *acc, const uint8_t *src,
                  size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        T a, b;
        memcpy(&a, acc + (i * sizeof(T)), sizeof(T));
        memcpy(&b, src + (i * sizeof(T)), sizeof(T));
        a = ref_apply<T>(op, a, b);
        memcpy(acc + (i * sizeof(T)), &a, sizeof(T));
    }
}

#define O2M_DT_DISPATCH(_dtype, _func, ...) \
    switch (_dtype) { \
    case UCT_O2M_DT_INT8:   _func<int8_t>(__VA_ARGS__);   break; \
    case UCT_O2M_DT_UINT8:  _func<uint8_t>(__VA_ARGS__);  break; \
    case UCT_O2M_DT_INT16:  _func<int16_t>(__VA_ARGS__);  break; \
    case UCT_O2M_DT_UINT16: _func<uint16_t>(__VA_ARGS__); break; \
    case UCT_O2M_DT_INT32:  _func<int32_t>(__VA_ARGS__);  break; \
    case UCT_O2M_DT_UINT32: _func<uint32_t>(__VA_ARGS__); break; \
    case UCT_O2M_DT_INT64:  _func<int64_t>(__VA_ARGS__);  break; \
    case UCT_O2M_DT_UINT64: _func<uint64_t>(__VA_ARGS__); break; \
    case UCT_O2M_DT_FLOAT:  _func<float>(__VA_ARGS__);    break; \
    case UCT_O2M_DT_DOUBLE: _func<double>(__VA_ARGS__);   break; \
    default: CHILD_CHECK(0, "bad dtype %d", (int)(_dtype)); \
    }


/* What every member of a group agrees on */
/* Written {mode, op, dtype, hdr_len, size, root} */
struct group_desc {
    uct_o2m_mode_t  mode;
    uct_o2m_op_t    op;
    uct_o2m_dtype_t dtype;
    size_t          hdr_len;
    unsigned        size;
    unsigned        root;

    bool single() const { return size == 2; }

    /* The contributors, in member-index order */
    std::vector<unsigned> senders() const
    {
        std::vector<unsigned> s;
        for (unsigned r = 0; r < size; ++r) {
            if (r != root) {
                s.push_back(r);
            }
        }
        return s;
    }

    std::string name() const
    {
        return group_name(mode, op, dtype, hdr_len) + "/root" +
               std::to_string(root) + "of" + std::to_string(size);
    }
};

/* Member rank's contribution of length bytes to round */
void make_contribution(const group_desc &g, unsigned rank, unsigned round,
                       size_t length, uint8_t *out)
{
    size_t i, hdr;

    if (g.op == UCT_O2M_OP_GATHER) {
        /* Round and rank first, so that the order is visible */
        for (i = 0; i < length; ++i) {
            out[i] = (i < 4) ? hdr_byte(rank, round, i) :
                               (uint8_t)mix32(rank, round, (uint32_t)i);
        }
        return;
    }

    hdr = std::min(g.hdr_len, length);
    for (i = 0; i < hdr; ++i) {
        out[i] = hdr_byte(rank, round, i);
    }
    O2M_DT_DISPATCH(g.dtype, fill_elems, g.op, rank, round, g.single(),
                    out + hdr, (length - hdr) / uct_o2m_dtype_size(g.dtype));
}

/* What the root must receive for round */
std::vector<uint8_t> make_expected(const group_desc &g, unsigned round,
                                   size_t length)
{
    std::vector<unsigned> senders = g.senders();
    size_t count, dt_size;
    std::vector<uint8_t> result, tmp(length);

    if (g.op == UCT_O2M_OP_GATHER) {
        result.resize(length * senders.size());
        for (size_t pos = 0; pos < senders.size(); ++pos) {
            make_contribution(g, senders[pos], round, length,
                              result.data() + (pos * length));
        }
        return result;
    }

    dt_size = uct_o2m_dtype_size(g.dtype);
    count   = (length - g.hdr_len) / dt_size;
    result.resize(length);
    make_contribution(g, senders[0], round, length, result.data());
    for (size_t pos = 1; pos < senders.size(); ++pos) {
        make_contribution(g, senders[pos], round, length, tmp.data());
        O2M_DT_DISPATCH(g.dtype, reduce_elems, g.op,
                        result.data() + g.hdr_len, tmp.data() + g.hdr_len,
                        count);
    }
    return result;
}


/* ------------------------------------------------------------------------ */
/* Rounds                                                                  */

enum send_method {
    SEND_SHORT,
    SEND_BCOPY,
    SEND_ZCOPY,
    SEND_MIXED   /* each sender picks by its position */
};

const char *method_name(send_method m)
{
    static const char *names[] = {"short", "bcopy", "zcopy", "mixed"};
    return names[m];
}

struct round_desc {
    size_t      length;
    send_method method;
    uint8_t     am_id;
};

/* Largest valid contribution length <= target (at least hdr_len) */
size_t floor_length(const group_desc &g, size_t target)
{
    size_t dt = elem_size(g.op, g.dtype);
    size_t h  = (g.op == UCT_O2M_OP_GATHER) ? 0 : g.hdr_len;

    if (target <= h) {
        return h;
    }
    return h + ((target - h) / dt) * dt;
}

/* Smallest valid contribution length >= target */
size_t ceil_length(const group_desc &g, size_t target)
{
    size_t dt = elem_size(g.op, g.dtype);
    size_t h  = (g.op == UCT_O2M_OP_GATHER) ? 0 : g.hdr_len;

    if (target <= h) {
        return h;
    }
    return h + (((target - h) + dt - 1) / dt) * dt;
}

/*
 * The rounds of one group: every size class and boundary with every method
 * that can send it, then the large sizes through zcopy.
 */
std::vector<round_desc> make_plan(const group_desc &g,
                                  const uct_o2m_iface_attr_t &attr,
                                  const std::vector<size_t> &large)
{
    const size_t targets[] = {0, 1, 7, 8, 63, 64, attr.max_short - 1,
                              attr.max_short, attr.max_bcopy - 1,
                              attr.max_bcopy};
    size_t dt = elem_size(g.op, g.dtype);
    std::vector<round_desc> plan;
    std::set<size_t> lengths;
    size_t mid, top, over;

    for (size_t t : targets) {
        lengths.insert(floor_length(g, t));
    }
    lengths.insert(floor_length(g, g.hdr_len + dt)); /* one element */
    mid  = floor_length(g, 64);
    top  = floor_length(g, attr.max_bcopy);
    over = ceil_length(g, attr.max_bcopy + 1);

    for (size_t len : lengths) {
        if ((len >= sizeof(uint64_t)) && (len <= attr.max_short)) {
            plan.push_back({len, SEND_SHORT, 0});
        }
        if (len <= attr.max_bcopy) {
            plan.push_back({len, SEND_BCOPY, 0});
        }
        if ((len <= 8) || (len == mid) || (len > attr.max_bcopy)) {
            plan.push_back({len, SEND_ZCOPY, 0});
        }
        if (((len == mid) || (len == top)) && (len <= attr.max_bcopy)) {
            plan.push_back({len, SEND_MIXED, 0});
        }
    }

    plan.push_back({over, SEND_ZCOPY, 0});
    for (size_t size : large) {
        plan.push_back({floor_length(g, size), SEND_ZCOPY, 0});
    }

    for (size_t i = 0; i < plan.size(); ++i) {
        plan[i].am_id = 1 + (i % 3);
    }
    return plan;
}


/* ------------------------------------------------------------------------ */
/* Memory shared by the members of one forked run                           */

struct shared_state {
    /* Root: (group seq << 24) | rounds delivered, after its AM handler */
    volatile uint64_t delivered;
    /* Senders that found the ring full (IncastFlow, IncastKill) */
    volatile unsigned blocked;
    volatile unsigned done;
    volatile int64_t  t_event_ns; /* CLOCK_MONOTONIC */
};

uint64_t delivered_mark(unsigned group_seq, unsigned rounds)
{
    return ((uint64_t)group_seq << 24) | rounds;
}

/* Runs @a fn in @a nprocs processes sharing a shared_state; every child
 * must exit with success within @a timeout seconds */
void run_incast(unsigned nprocs,
                const std::function<void(proc_group&, unsigned,
                                         shared_state*)> &fn,
                double timeout)
{
    proc_group pg(nprocs);
    shared_state *shm = (shared_state*)pg.shared();

    pg.run_ok([&](unsigned rank) { fn(pg, rank, shm); }, timeout);
}


/* ------------------------------------------------------------------------ */
/* A member: its interface and everybody's addresses                       */

class member {
public:
    member(proc_group &pg, unsigned rank) :
        m_pg(pg), m_rank(rank), m_env(new uct_env(UCT_O2M_INCAST_TL_NAME,
                                                  incast_config()))
    {
        /* In this child only: a member that failed makes the others wait
         * at most this long (each wait here is milliseconds when healthy) */
        wait_timeout = member_wait_timeout;

        std::vector<char> addr = m_env->iface_addr();
        std::vector<char> dev  = m_env->dev_addr();
        ucs_status_t status;

        m_alen = addr.size();
        m_dlen = dev.size();
        m_addrs.resize(m_alen * pg.size());
        m_devs.resize(m_dlen * pg.size());
        pg.allgather(rank, addr.data(), m_alen, m_addrs.data());
        pg.allgather(rank, dev.data(), m_dlen, m_devs.data());

        status = uct_o2m_iface_query(m_env->iface(), &m_attr);
        CHILD_CHECK_OK(status);
        CHILD_CHECK(m_attr.is_incast, "not an incast interface");
        CHILD_CHECK(m_attr.fifo_depth == fifo_depth, "fifo_depth %u",
                    m_attr.fifo_depth);
    }

    ~member()
    {
        close();
    }

    /* Close the interface; then nothing of the transport may be left in
     * this process */
    void close()
    {
        if (m_env) {
            m_env.reset();
            check_no_residue();
        }
    }

    static void check_no_residue()
    {
        std::vector<std::string> held = o2m_held(getpid());

        CHILD_CHECK(held.empty(), "still held: %s", held.front().c_str());
    }

    uct_env &env() { return *m_env; }
    unsigned rank() const { return m_rank; }
    const uct_o2m_iface_attr_t &attr() const { return m_attr; }
    proc_group &pg() { return m_pg; }

    ucs_status_t create(const group_desc &g, uint64_t group_id,
                        uct_ep_h *ep_p, unsigned my_index = -1u)
    {
        uct_o2m_group_params_t params;
        unsigned idx = (my_index == -1u) ? m_rank : my_index;

        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_O2M_GROUP_FIELD_MODE |
                            UCT_O2M_GROUP_FIELD_OP |
                            UCT_O2M_GROUP_FIELD_DTYPE |
                            UCT_O2M_GROUP_FIELD_HDR_LEN;
        params.group_id   = group_id;
        params.size       = g.size;
        params.my_index   = idx;
        params.root_index = g.root;
        params.mode       = g.mode;
        params.op         = g.op;
        params.dtype      = g.dtype;
        params.hdr_len    = g.hdr_len;
        if (idx != g.root) {
            params.field_mask     |= UCT_O2M_GROUP_FIELD_ROOT_ADDR;
            params.root_iface_addr = (const uct_iface_addr_t*)
                                     &m_addrs[g.root * m_alen];
            params.root_dev_addr   = (const uct_device_addr_t*)
                                     &m_devs[g.root * m_dlen];
        }
        return uct_o2m_ep_create(m_env->iface(), &params, ep_p);
    }

    uct_ep_h create_ok(const group_desc &g, uint64_t group_id)
    {
        uct_ep_h ep;
        ucs_status_t status = create(g, group_id, &ep);

        CHILD_CHECK(status == UCS_OK, "%s: uct_o2m_ep_create: %s",
                    g.name().c_str(), ucs_status_string(status));
        return ep;
    }

private:
    proc_group              &m_pg;
    unsigned                m_rank;
    std::unique_ptr<uct_env> m_env;
    std::vector<char>       m_addrs, m_devs;
    size_t                  m_alen, m_dlen;
    uct_o2m_iface_attr_t    m_attr;
};


/* ------------------------------------------------------------------------ */
/* Root side: checks every delivery as it comes                            */

struct root_ctx {
    group_desc                    g;
    const std::vector<round_desc> *plan;
    unsigned                      count;      /* Rounds delivered */
    unsigned                      group_seq;
    shared_state                  *shm;

    static ucs_status_t am_handler(void *arg, void *data, size_t length,
                                   unsigned flags);
};

/* Handler arg: one slot per AM id, pointing to the group it belongs to */
root_ctx *am_slots[UCT_AM_ID_MAX];

ucs_status_t root_ctx::am_handler(void *arg, void *data, size_t length,
                                  unsigned flags)
{
    uint8_t id    = (uint8_t)(uintptr_t)arg;
    root_ctx *ctx = am_slots[id];
    std::vector<uint8_t> expected;
    const uint8_t *bytes = (const uint8_t*)data;
    const round_desc *rd;
    size_t i;

    CHILD_CHECK(ctx != NULL, "AM id %u: unexpected delivery of %zu bytes",
                id, length);
    CHILD_CHECK(ctx->count < ctx->plan->size(),
                "%s: delivery %u, only %zu rounds sent (id %u, %zu bytes)",
                ctx->g.name().c_str(), ctx->count, ctx->plan->size(), id,
                length);
    rd = &(*ctx->plan)[ctx->count];
    CHILD_CHECK(id == rd->am_id, "%s round %u: AM id %u, expected %u",
                ctx->g.name().c_str(), ctx->count, id, rd->am_id);

    expected = make_expected(ctx->g, ctx->count, rd->length);
    CHILD_CHECK(length == expected.size(),
                "%s round %u (%s, %zu bytes): delivered %zu bytes, expected "
                "%zu", ctx->g.name().c_str(), ctx->count,
                method_name(rd->method), rd->length, length,
                expected.size());
    if ((length > 0) && memcmp(data, expected.data(), length)) {
        for (i = 0; (i < length) && (bytes[i] == expected[i]); ++i) {
        }
        CHILD_CHECK(0, "%s round %u (%s, %zu bytes): byte %zu of %zu is "
                    "0x%02x, expected 0x%02x", ctx->g.name().c_str(),
                    ctx->count, method_name(rd->method), rd->length, i,
                    length, bytes[i], expected[i]);
    }

    ++ctx->count;
    if (ctx->shm != NULL) {
        __atomic_store_n(&ctx->shm->delivered,
                         delivered_mark(ctx->group_seq, ctx->count),
                         __ATOMIC_RELEASE);
    }
    return UCS_OK;
}

void set_am_handlers(member &m, uint8_t first, uint8_t last)
{
    for (unsigned id = first; id <= last; ++id) {
        m.env().set_am_handler(id, root_ctx::am_handler,
                               (void*)(uintptr_t)id);
    }
}


/* ------------------------------------------------------------------------ */
/* Sender side                                                             */

struct pack_arg {
    const uint8_t *buf;
    size_t        length;
};

size_t pack_cb(void *dest, void *arg)
{
    pack_arg *p = (pack_arg*)arg;

    if (p->length > 0) {
        memcpy(dest, p->buf, p->length);
    }
    return p->length;
}

struct zcopy_comp {
    uct_completion_t super;
    int              fired;
    ucs_status_t     status;
    bool             early;    /* Fired before the root delivered it */
    uint64_t         mark;     /* Root's delivered mark that must be seen */
    shared_state     *shm;
};

void zcopy_comp_cb(uct_completion_t *self)
{
    zcopy_comp *comp = ucs_container_of(self, zcopy_comp, super);

    ++comp->fired;
    comp->status = self->status;
    if ((comp->shm != NULL) &&
        (__atomic_load_n(&comp->shm->delivered, __ATOMIC_ACQUIRE) <
         comp->mark)) {
        comp->early = true;
    }
}

/* One send of a contribution with the given method */
ucs_status_t send_contribution(uct_ep_h ep, uint8_t am_id, send_method method,
                               const uint8_t *buf, size_t length,
                               unsigned round, uct_completion_t *comp)
{
    static const uint8_t empty = 0;
    uct_iov_t iov[3];
    size_t zhdr, rest, off, niov;
    uint64_t header;
    pack_arg arg;
    ssize_t ret;

    if (buf == NULL) {
        buf = &empty; /* an empty std::vector: no NULL header pointer */
    }

    switch (method) {
    case SEND_SHORT:
        memcpy(&header, buf, sizeof(header));
        return uct_ep_am_short(ep, am_id, header, buf + sizeof(header),
                               (unsigned)(length - sizeof(header)));
    case SEND_BCOPY:
        arg.buf    = buf;
        arg.length = length;
        ret        = uct_ep_am_bcopy(ep, am_id, pack_cb, &arg, 0);
        if (ret < 0) {
            return (ucs_status_t)ret;
        }
        CHILD_CHECK((size_t)ret == length, "am_bcopy returned %zd, packed "
                    "%zu", ret, length);
        return UCS_OK;
    case SEND_ZCOPY:
        /* Some bytes in the zcopy header, the rest over 1..3 iov entries
         * (none when the header holds everything) */
        zhdr = std::min(length, (size_t)((round * 7) % 41));
        rest = length - zhdr;
        niov = (rest == 0) ? 0 : std::min(rest, (size_t)(1 + (round % 3)));
        off  = zhdr;
        for (size_t i = 0; i < niov; ++i) {
            iov[i].buffer = (void*)(buf + off);
            iov[i].length = (i == niov - 1) ? (length - off) : (rest / niov);
            iov[i].memh   = UCT_MEM_HANDLE_NULL;
            iov[i].stride = 0;
            iov[i].count  = 1;
            off          += iov[i].length;
        }
        return uct_ep_am_zcopy(ep, am_id, buf, (unsigned)zhdr, iov, niov, 0,
                               comp);
    default:
        CHILD_CHECK(0, "bad method %d", method);
        return UCS_ERR_INVALID_PARAM;
    }
}

struct pending_send {
    uct_pending_req_t super;
    uct_ep_h          ep;
    uint8_t           am_id;
    send_method       method;
    const uint8_t     *buf;
    size_t            length;
    unsigned          round;
    uct_completion_t  *comp;
    int               calls;
    bool              done;
    ucs_status_t      status;
};

ucs_status_t pending_send_cb(uct_pending_req_t *self)
{
    pending_send *req = ucs_container_of(self, pending_send, super);
    ucs_status_t status;

    ++req->calls;
    CHILD_CHECK(!req->done, "pending request called after it completed");
    status = send_contribution(req->ep, req->am_id, req->method, req->buf,
                               req->length, req->round, req->comp);
    if (status == UCS_ERR_NO_RESOURCE) {
        return UCS_ERR_NO_RESOURCE;
    }

    req->done   = true;
    req->status = status;
    return UCS_OK;
}

/* Queues @a req on @a ep: once called, it sends @a length bytes of @a buf
 * by @a method as round @a round (AM id @a am_id, completion @a comp);
 * the status of uct_ep_pending_add */
ucs_status_t pending_add(pending_send *req, uct_ep_h ep, uint8_t am_id,
                         send_method method, const uint8_t *buf,
                         size_t length, unsigned round, uct_completion_t *comp)
{
    *req = {{pending_send_cb, {}}, ep, am_id, method, buf, length, round,
            comp, 0, false, UCS_OK};
    return uct_ep_pending_add(ep, &req->super, 0);
}

struct sender_stats {
    unsigned no_resource = 0;
    unsigned pending     = 0;
};

/*
 * Send, retrying under progress on NO_RESOURCE; with use_pending, wait for
 * space through uct_ep_pending_add instead.  Returns the final status (OK
 * or INPROGRESS for zcopy, or an error).
 */
ucs_status_t send_retry(member &m, uct_ep_h ep, uint8_t am_id,
                        send_method method, const uint8_t *buf,
                        size_t length, unsigned round, uct_completion_t *comp,
                        bool use_pending, sender_stats *stats)
{
    double deadline = now_sec() + wait_timeout;
    ucs_status_t status;
    pending_send req;

    for (;;) {
        status = send_contribution(ep, am_id, method, buf, length, round,
                                   comp);
        if (status != UCS_ERR_NO_RESOURCE) {
            return status;
        }

        ++stats->no_resource;
        if (use_pending) {
            status = pending_add(&req, ep, am_id, method, buf, length, round,
                                 comp);
            if (status == UCS_OK) {
                ++stats->pending;
                CHILD_CHECK(wait_progress(m.env(), [&] { return req.done; }),
                            "round %u: pending request not dispatched "
                            "(called %d times)", round, req.calls);
                return req.status;
            }
            CHILD_CHECK(status == UCS_ERR_BUSY, "uct_ep_pending_add: %s",
                        ucs_status_string(status));
            continue; /* There is space now: send directly */
        }

        CHILD_CHECK(now_sec() < deadline, "round %u: no resources for %g s",
                    round, wait_timeout);
        if (m.env().progress() == 0) {
            sched_yield();
        }
    }
}

/* uct_ep_flush() until UCS_OK, bounded */
void flush_ok(member &m, uct_ep_h ep, const char *what)
{
    ucs_status_t status = UCS_ERR_NO_RESOURCE;

    CHILD_CHECK(wait_progress(m.env(), [&] {
                    status = uct_ep_flush(ep, 0, NULL);
                    CHILD_CHECK((status == UCS_OK) ||
                                (status == UCS_INPROGRESS) ||
                                (status == UCS_ERR_NO_RESOURCE),
                                "%s: uct_ep_flush: %s", what,
                                ucs_status_string(status));
                    return status == UCS_OK;
                }), "%s: flush did not complete: %s", what,
                ucs_status_string(status));
}


/* ------------------------------------------------------------------------ */
/* One group: create, run its rounds, check, destroy                        */

struct group_opts {
    /* Senders fill the ring before the root progresses at all; the first
     * send that finds it full goes through uct_ep_pending_add */
    bool     fill_ring_first = false;
    /* Flush with a completion first, then without */
    bool     flush_with_comp = false;
    /* Senders first try lengths that are not hdr_len + whole elements */
    bool     try_bad_lengths = false;
    /* On NO_RESOURCE, every n-th round waits through pending_add */
    unsigned pending_every   = 3;
    /* Root: keep progressing a while after the last round (a duplicate
     * delivery would show) */
    bool     linger          = false;
};

/* Send the lengths that must be refused (sender already attached) */
void check_bad_lengths(member &m, const group_desc &g, uct_ep_h ep)
{
    size_t dt = elem_size(g.op, g.dtype);
    std::vector<size_t> bad;
    std::vector<uint8_t> buf(256, 0x5a);
    zcopy_comp comp;
    ucs_status_t status;

    if (g.op == UCT_O2M_OP_GATHER) {
        return;
    }
    if (dt > 1) {
        bad.push_back(g.hdr_len + 1);
        bad.push_back(g.hdr_len + dt + 1);
        bad.push_back(g.hdr_len + (2 * dt) - 1);
    }
    if (g.hdr_len > 0) {
        bad.push_back(g.hdr_len - 1);
    }

    scoped_log_capture quiet;
    for (size_t len : bad) {
        for (send_method method : {SEND_SHORT, SEND_BCOPY, SEND_ZCOPY}) {
            if ((method == SEND_SHORT) && (len < sizeof(uint64_t))) {
                continue;
            }
            memset(&comp, 0, sizeof(comp));
            comp.super.func   = zcopy_comp_cb;
            comp.super.count  = 1;
            comp.super.status = UCS_OK;
            /* NO_RESOURCE only until attached: the ring is empty */
            CHILD_CHECK(wait_progress(m.env(), [&] {
                            status = send_contribution(ep, 1, method,
                                                       buf.data(), len, 0,
                                                       &comp.super);
                            return status != UCS_ERR_NO_RESOURCE;
                        }), "%s: never attached", g.name().c_str());
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                        "%s: %s of %zu bytes (hdr_len %zu, element %zu): %s, "
                        "expected %s", g.name().c_str(), method_name(method),
                        len, g.hdr_len, dt, ucs_status_string(status),
                        ucs_status_string(UCS_ERR_INVALID_PARAM));
            CHILD_CHECK(comp.fired == 0, "completion of a refused zcopy");
        }
    }
}

void run_group(member &m, const group_desc &g, uint64_t group_id,
               unsigned group_seq, const std::vector<round_desc> &plan,
               shared_state *shm, const group_opts &opts = group_opts())
{
    std::vector<std::vector<uint8_t>> bufs(plan.size());
    std::vector<zcopy_comp> comps(plan.size());
    std::vector<unsigned> senders = g.senders();
    size_t nerr = m.env().errors.size();
    sender_stats stats;
    unsigned pos, k;
    ucs_status_t status;
    root_ctx ctx;
    uct_ep_h ep;

    if (m.rank() == g.root) {
        ctx.g         = g;
        ctx.plan      = &plan;
        ctx.count     = 0;
        ctx.group_seq = group_seq;
        ctx.shm       = shm;
        for (k = 1; k <= 3; ++k) {
            am_slots[k] = &ctx;
        }
        if (opts.fill_ring_first) {
            __atomic_store_n(&shm->blocked, 0, __ATOMIC_RELEASE);
        }

        ep = m.create_ok(g, group_id);
        if (opts.fill_ring_first) {
            /* No progress at all until every sender found the ring full */
            CHILD_CHECK(wait_noprogress([&] {
                            return __atomic_load_n(&shm->blocked,
                                                   __ATOMIC_ACQUIRE) ==
                                   senders.size();
                        }), "%s: senders did not fill the ring",
                        g.name().c_str());
            CHILD_CHECK(ctx.count == 0, "delivered without progress");
        }

        CHILD_CHECK(wait_progress(m.env(),
                                  [&] { return ctx.count == plan.size(); }),
                    "%s: root got %u of %zu rounds", g.name().c_str(),
                    ctx.count, plan.size());
        if (opts.linger) {
            wait_progress(m.env(), [] { return false; }, 0.05);
        }
        CHILD_CHECK(m.env().errors.size() == nerr, "%s: root error %s",
                    g.name().c_str(),
                    ucs_status_string(m.env().errors.back()));
        uct_ep_destroy(ep);
        for (k = 1; k <= 3; ++k) {
            am_slots[k] = NULL;
        }
        return;
    }

    pos = std::find(senders.begin(), senders.end(), m.rank()) -
          senders.begin();
    ep  = m.create_ok(g, group_id);

    if (opts.try_bad_lengths) {
        check_bad_lengths(m, g, ep);
    }

    for (k = 0; k < plan.size(); ++k) {
        const round_desc &rd = plan[k];
        send_method method   = rd.method;
        zcopy_comp *comp     = &comps[k];

        if (method == SEND_MIXED) {
            method = (pos % 3 == 0) ? SEND_BCOPY :
                     (pos % 3 == 1) ? SEND_ZCOPY :
                     (rd.length >= sizeof(uint64_t)) ? SEND_SHORT :
                                                       SEND_BCOPY;
        }

        bufs[k].resize(rd.length);
        make_contribution(g, m.rank(), k, rd.length, bufs[k].data());
        comp->super.func   = zcopy_comp_cb;
        comp->super.count  = 1;
        comp->super.status = UCS_OK;
        comp->fired        = 0;
        comp->status       = UCS_OK;
        comp->early        = false;
        comp->mark         = delivered_mark(group_seq, k + 1);
        comp->shm          = shm;

        if (opts.fill_ring_first && (k < fifo_depth)) {
            /* The root does not progress: exactly depth rounds fit.  Retry
             * NO_RESOURCE: not yet attached, or (LOCKED) another sender
             * holds the lock of the element */
            CHILD_CHECK(wait_progress(m.env(), [&] {
                            status = send_contribution(
                                    ep, rd.am_id, method, bufs[k].data(),
                                    rd.length, k, &comp->super);
                            return status != UCS_ERR_NO_RESOURCE;
                        }), "%s: round %u of the first %u: no resources",
                        g.name().c_str(), k, fifo_depth);
        } else if (opts.fill_ring_first && (k == fifo_depth)) {
            pending_send req;
            double until = now_sec() + 0.02;

            /* Full: it stays so while the root does not progress */
            do {
                status = send_contribution(ep, rd.am_id, method,
                                           bufs[k].data(), rd.length, k,
                                           &comp->super);
                CHILD_CHECK(status == UCS_ERR_NO_RESOURCE, "%s: round %u "
                            "with a full ring of depth %u: %s",
                            g.name().c_str(), k, fifo_depth,
                            ucs_status_string(status));
                m.env().progress();
            } while (now_sec() < until);

            status = pending_add(&req, ep, rd.am_id, method, bufs[k].data(),
                                 rd.length, k, &comp->super);
            CHILD_CHECK(status == UCS_OK, "%s: pending_add on a full ring: "
                        "%s", g.name().c_str(), ucs_status_string(status));
            __atomic_fetch_add(&shm->blocked, 1, __ATOMIC_ACQ_REL);
            CHILD_CHECK(wait_progress(m.env(), [&] { return req.done; }),
                        "%s: pending request never dispatched (called %d "
                        "times)", g.name().c_str(), req.calls);
            status = req.status;
        } else {
            status = send_retry(m, ep, rd.am_id, method, bufs[k].data(),
                                rd.length, k, &comp->super,
                                (k % opts.pending_every) == 1, &stats);
        }

        if (method == SEND_ZCOPY) {
            CHILD_CHECK((status == UCS_INPROGRESS) || (status == UCS_OK),
                        "%s round %u: zcopy of %zu bytes: %s",
                        g.name().c_str(), k, rd.length,
                        ucs_status_string(status));
            if (status == UCS_OK) {
                comp->fired = 1; /* Completed in place */
            }
        } else {
            CHILD_CHECK(status == UCS_OK, "%s round %u: %s of %zu bytes: %s",
                        g.name().c_str(), k, method_name(method), rd.length,
                        ucs_status_string(status));
            comp->fired = 1;
        }
    }

    if (opts.flush_with_comp) {
        zcopy_comp fcomp;

        memset(&fcomp, 0, sizeof(fcomp));
        fcomp.super.func   = zcopy_comp_cb;
        fcomp.super.count  = 1;
        fcomp.super.status = UCS_OK;
        fcomp.mark         = delivered_mark(group_seq, plan.size());
        fcomp.shm          = shm;
        CHILD_CHECK(wait_progress(m.env(), [&] {
                        status = uct_ep_flush(ep, 0, &fcomp.super);
                        return status != UCS_ERR_NO_RESOURCE;
                    }), "flush: no resources");
        if (status == UCS_INPROGRESS) {
            CHILD_CHECK(wait_progress(m.env(),
                                      [&] { return fcomp.fired > 0; }),
                        "%s: flush completion never fired",
                        g.name().c_str());
            CHILD_CHECK(fcomp.status == UCS_OK, "flush completion: %s",
                        ucs_status_string(fcomp.status));
            CHILD_CHECK(!fcomp.early, "flush completed before the root "
                        "delivered every round");
        } else {
            CHILD_CHECK(status == UCS_OK, "uct_ep_flush: %s",
                        ucs_status_string(status));
        }
    }

    flush_ok(m, ep, g.name().c_str());

    /* Every zcopy completion exactly once, with success, and not before the
     * root consumed the round */
    m.env().progress();
    for (k = 0; k < plan.size(); ++k) {
        CHILD_CHECK(comps[k].fired == 1, "%s round %u: completion fired %d "
                    "times", g.name().c_str(), k, comps[k].fired);
        CHILD_CHECK(comps[k].status == UCS_OK, "%s round %u: completion %s",
                    g.name().c_str(), k,
                    ucs_status_string(comps[k].status));
        CHILD_CHECK(!comps[k].early, "%s round %u: zcopy completed before "
                    "the root delivered it", g.name().c_str(), k);
    }
    CHILD_CHECK(m.env().errors.size() == nerr, "%s: sender error %s",
                g.name().c_str(), ucs_status_string(m.env().errors.back()));
    uct_ep_destroy(ep);
}



/* ------------------------------------------------------------------------ */
/* Tests                                                                   */

typedef std::tuple<uct_o2m_mode_t, unsigned> mode_nprocs_t;

std::string mode_nprocs_name(const ::testing::TestParamInfo<mode_nprocs_t>
                             &info)
{
    return std::string(uct_o2m_mode_name(std::get<0>(info.param))) + "_" +
           std::to_string(std::get<1>(info.param));
}

uint64_t make_group_id(unsigned test, unsigned seq)
{
    return ((uint64_t)0x1c << 56) | ((uint64_t)test << 32) | seq;
}

/* New files in /dev/shm since @a before */
std::vector<std::string> new_shm_files(const std::vector<std::string> &before)
{
    std::vector<std::string> after = dev_shm_files(), added;

    for (const std::string &name : after) {
        if (std::find(before.begin(), before.end(), name) == before.end()) {
            added.push_back(name);
        }
    }
    return added;
}

std::string join(const std::vector<std::string> &names)
{
    std::string s;
    for (const std::string &n : names) {
        s += (s.empty() ? "" : " ") + n;
    }
    return s;
}


/*
 * Every supported (op, dtype) x every member as root x every size class,
 * in one forked run per (mode, group size).
 */
class IncastMatrix : public ::testing::TestWithParam<mode_nprocs_t> {
};

TEST_P(IncastMatrix, ops_dtypes_sizes_roots)
{
    const uct_o2m_mode_t mode = std::get<0>(GetParam());
    const unsigned nprocs     = std::get<1>(GetParam());
    std::vector<std::string> shm_before = dev_shm_files();
    run_incast(nprocs, [&](proc_group &pg, unsigned rank,
                           shared_state *shm) {
        const size_t hdr_lens[] = {0, 8, 3};
        member m(pg, rank);
        unsigned seq = 0, combo, total_rounds = 0;
        size_t total_bytes = 0;

        set_am_handlers(m, 1, 3);
        for (unsigned root = 0; root < nprocs; ++root) {
            combo = 0;
            for (uct_o2m_op_t op : all_ops) {
                for (uct_o2m_dtype_t dtype : all_dtypes) {
                    if (!uct_o2m_op_supported(mode, op, dtype)) {
                        continue;
                    }

                    size_t dt    = uct_o2m_dtype_size(dtype);
                    group_desc g = {mode, op, dtype,
                                    (op == UCT_O2M_OP_GATHER) ? 0 :
                                    hdr_lens[(combo + root) % 3],
                                    nprocs, root};
                    if ((mode == UCT_O2M_MODE_ATOMIC) && (g.hdr_len % dt)) {
                        g.hdr_len = 16;
                    }

                    /* 1 MiB: gather and int32 sum from every root, and one
                     * more (op, dtype) per root; 4 MiB: those two at 3 */
                    bool main_pair = ((op == UCT_O2M_OP_GATHER) &&
                                      (dtype == UCT_O2M_DT_UINT8)) ||
                                     ((op == UCT_O2M_OP_SUM) &&
                                      (dtype == UCT_O2M_DT_INT32));
                    std::vector<size_t> large;
                    if (main_pair || ((combo % 29) == ((root * 11 + 3) % 29))) {
                        large.push_back(one_mib);
                    }
                    if (main_pair && (nprocs == 3)) {
                        large.push_back(4 * one_mib);
                    }

                    group_opts opts;
                    std::vector<round_desc> plan = make_plan(g, m.attr(),
                                                             large);
                    opts.try_bad_lengths = ((combo + root) % 4) == 0;
                    run_group(m, g, make_group_id(1, seq), seq, plan, shm,
                              opts);
                    total_rounds += plan.size();
                    for (const round_desc &rd : plan) {
                        total_bytes += (rank == root) ? 0 : rd.length;
                    }
                    ++seq;
                    ++combo;
                }
            }
        }
        pg.barrier(rank);
        if (getenv("O2M_TEST_VERBOSE") && (rank == 0)) {
            printf("%u groups, %u rounds, %zu bytes contributed by rank 0\n",
                   seq, total_rounds, total_bytes);
        }
        m.close();
    }, 240);

    EXPECT_EQ("", join(new_shm_files(shm_before)));
}

INSTANTIATE_TEST_SUITE_P(Incast, IncastMatrix,
                         ::testing::Combine(::testing::ValuesIn(all_modes),
                                            ::testing::Range(2u, 9u)),
                         mode_nprocs_name);


/*
 * Back-to-back rounds (16x the ring depth): the ring fills, the next send
 * gets NO_RESOURCE and waits through uct_ep_pending_add; delivery is
 * exactly once and in order; zcopy completions fire once, after the root
 * consumed the round; flush (with and without a completion) ends with OK.
 */
class IncastFlow : public ::testing::TestWithParam<mode_nprocs_t> {
};

std::vector<round_desc> flow_plan(const group_desc &g, unsigned rounds)
{
    std::vector<round_desc> plan;
    size_t len;

    for (unsigned k = 0; k < rounds; ++k) {
        if ((k % 8) == 7) {
            plan.push_back({floor_length(g, 24 * 1024 + k), SEND_ZCOPY, 0});
        } else {
            /* Round 0 by bcopy: am_short before the sender is attached
             * is tested on its own (IncastLateRoot) */
            len = floor_length(g, g.hdr_len + 8 + ((k % 7) * 24));
            plan.push_back({len, (k % 3 == 1) ? SEND_SHORT :
                                 (k % 3 == 0) ? SEND_BCOPY : SEND_ZCOPY, 0});
        }
        plan.back().am_id = 1 + (k % 3);
    }
    return plan;
}

TEST_P(IncastFlow, back_to_back_pending_flush)
{
    const uct_o2m_mode_t mode = std::get<0>(GetParam());
    const unsigned nprocs     = std::get<1>(GetParam());
    run_incast(nprocs, [&](proc_group &pg, unsigned rank,
                           shared_state *shm) {
        const unsigned rounds = 16 * fifo_depth;
        member m(pg, rank);
        unsigned seq = 0;
        group_desc g;
        group_opts opts;

        opts.fill_ring_first = true;
        opts.flush_with_comp = true;
        opts.pending_every   = 2;
        opts.linger          = true;
        set_am_handlers(m, 1, 3);

        g.mode = mode;
        g.size = nprocs;
        for (unsigned root : {nprocs - 1, 0u}) {
            g.root = root;
            for (int i = 0; i < 2; ++i) {
                g.op      = (i == 0) ? UCT_O2M_OP_GATHER : UCT_O2M_OP_SUM;
                g.dtype   = (i == 0) ? UCT_O2M_DT_UINT8 : UCT_O2M_DT_INT32;
                g.hdr_len = (i == 0) ? 0 : 8;
                run_group(m, g, make_group_id(2, seq), seq, flow_plan(g, rounds),
                          shm, opts);
                ++seq;
                pg.barrier(rank);
            }
        }
        m.close();
    }, 120);
}

INSTANTIATE_TEST_SUITE_P(Incast, IncastFlow,
                         ::testing::Combine(::testing::ValuesIn(all_modes),
                                            ::testing::Values(2u, 5u)),
                         mode_nprocs_name);


/*
 * Three groups live at once on the same interfaces: two rooted at member 0
 * (gather and int64 sum), one at member 2 (float max), which is a sender
 * of the other two; rounds interleaved.  A second group with an id in use
 * on the root's interface is refused.
 */
class IncastConcurrent : public ::testing::TestWithParam<uct_o2m_mode_t> {
};

TEST_P(IncastConcurrent, three_groups_one_iface)
{
    const uct_o2m_mode_t mode = GetParam();
    const unsigned nprocs     = 4;
    const unsigned rounds     = 6 * fifo_depth;
    proc_group pg(nprocs);

    pg.run_ok([&](unsigned rank) {
        const unsigned ngroups = 3;
        member m(pg, rank);
        group_desc g[ngroups];
        std::vector<round_desc> plan[ngroups];
        root_ctx ctx[ngroups];
        uct_ep_h ep[ngroups], dup_ep;
        std::vector<std::vector<uint8_t>> bufs[ngroups];
        std::vector<zcopy_comp> comps[ngroups];
        sender_stats stats;
        ucs_status_t status;
        unsigned i, k;

        for (i = 0; i < ngroups; ++i) {
            g[i].mode = mode;
            g[i].size = nprocs;
        }
        g[0].op = UCT_O2M_OP_GATHER; g[0].dtype = UCT_O2M_DT_UINT8;
        g[0].hdr_len = 0; g[0].root = 0;
        g[1].op = UCT_O2M_OP_SUM;    g[1].dtype = UCT_O2M_DT_INT64;
        g[1].hdr_len = 8; g[1].root = 0;
        g[2].op = UCT_O2M_OP_MAX;    g[2].dtype = UCT_O2M_DT_FLOAT;
        g[2].hdr_len = 0; g[2].root = 2;

        for (i = 0; i < ngroups; ++i) {
            for (k = 0; k < rounds; ++k) {
                size_t target = 8 + (((k * 5) + (i * 3)) % 11) * 16;
                send_method method = (k % 3 == 0) ? SEND_SHORT :
                                     (k % 3 == 1) ? SEND_BCOPY : SEND_ZCOPY;
                if (k % 7 == 6) {
                    target = 20000; /* above max_bcopy */
                    method = SEND_ZCOPY;
                }
                plan[i].push_back({floor_length(g[i], target + g[i].hdr_len),
                                   method, (uint8_t)(10 + i)});
            }
            bufs[i].resize(rounds);
            comps[i].resize(rounds);
            if (rank == g[i].root) {
                ctx[i].g             = g[i];
                ctx[i].plan          = &plan[i];
                ctx[i].count         = 0;
                ctx[i].group_seq     = 0;
                ctx[i].shm           = NULL;
                am_slots[10 + i]     = &ctx[i];
                set_am_handlers(m, 10 + i, 10 + i);
            }
        }

        for (i = 0; i < ngroups; ++i) {
            if (rank == g[i].root) {
                ep[i] = m.create_ok(g[i], make_group_id(3, i));
            }
        }
        if (rank == 0) {
            scoped_log_capture quiet;
            /* Rooted here with the id of group 0, also rooted here */
            status = m.create(g[1], make_group_id(3, 0), &dup_ep);
            CHILD_CHECK(status == UCS_ERR_ALREADY_EXISTS, "group id in use: "
                        "%s", ucs_status_string(status));
        }
        pg.barrier(rank);
        for (i = 0; i < ngroups; ++i) {
            if (rank != g[i].root) {
                ep[i] = m.create_ok(g[i], make_group_id(3, i));
            }
        }

        /* Interleaved: round k of every group, then round k + 1 */
        for (k = 0; k < rounds; ++k) {
            for (i = 0; i < ngroups; ++i) {
                if (rank == g[i].root) {
                    continue;
                }
                const round_desc &rd = plan[i][k];
                zcopy_comp *comp     = &comps[i][k];
                bufs[i][k].resize(rd.length);
                make_contribution(g[i], rank, k, rd.length,
                                  bufs[i][k].data());
                memset(comp, 0, sizeof(*comp));
                comp->super.func  = zcopy_comp_cb;
                comp->super.count = 1;
                status = send_retry(m, ep[i], rd.am_id, rd.method,
                                    bufs[i][k].data(), rd.length, k,
                                    &comp->super, (k % 4) == 1, &stats);
                if (rd.method == SEND_ZCOPY) {
                    CHILD_CHECK(status == UCS_INPROGRESS || status == UCS_OK,
                                "group %u round %u: %s", i, k,
                                ucs_status_string(status));
                    if (status == UCS_OK) {
                        comp->fired = 1;
                    }
                } else {
                    CHILD_CHECK(status == UCS_OK, "group %u round %u: %s", i,
                                k, ucs_status_string(status));
                    comp->fired = 1;
                }
            }
        }

        for (i = 0; i < ngroups; ++i) {
            if (rank == g[i].root) {
                CHILD_CHECK(wait_progress(m.env(), [&] {
                                return ctx[i].count == rounds;
                            }), "group %u: root got %u of %u rounds", i,
                            ctx[i].count, rounds);
            } else {
                flush_ok(m, ep[i], g[i].name().c_str());
                for (k = 0; k < rounds; ++k) {
                    CHILD_CHECK((comps[i][k].fired == 1) &&
                                (comps[i][k].status == UCS_OK),
                                "group %u round %u: completion fired %d "
                                "times, %s", i, k, comps[i][k].fired,
                                ucs_status_string(comps[i][k].status));
                }
            }
        }

        CHILD_CHECK(m.env().errors.empty(), "error %s",
                    ucs_status_string(m.env().errors[0]));
        pg.barrier(rank);
        for (i = 0; i < ngroups; ++i) {
            uct_ep_destroy(ep[i]);
        }
        m.close();
    }, 60);
}

INSTANTIATE_TEST_SUITE_P(Incast, IncastConcurrent,
                         ::testing::ValuesIn(all_modes), mode_param_name);


/*
 * Contributions of different lengths in one round: the root reports an
 * error (interface error handler, failed endpoint) and delivers nothing;
 * the senders learn it too.  A sender whose parameters differ from the
 * root's is refused.  The interfaces still work afterwards.
 */
class IncastErrors : public ::testing::TestWithParam<uct_o2m_mode_t> {
};

TEST_P(IncastErrors, mismatched_lengths)
{
    const uct_o2m_mode_t mode = GetParam();
    const unsigned nprocs     = 3;
    run_incast(nprocs, [&](proc_group &pg, unsigned rank,
                           shared_state *shm) {
        const std::vector<round_desc> no_rounds;
        member m(pg, rank);
        unsigned seq = 0;
        ucs_status_t status;
        root_ctx ctx;
        uct_ep_h ep;
        size_t nerr;

        set_am_handlers(m, 1, 3);
        for (uct_o2m_op_t op : {UCT_O2M_OP_SUM, UCT_O2M_OP_GATHER}) {
            group_desc g = {mode, op, UCT_O2M_DT_INT32,
                            (op == UCT_O2M_OP_GATHER) ? 0u : 8u, nprocs,
                            seq % nprocs};
            nerr      = m.env().errors.size();

            scoped_log_capture quiet;
            if (rank == g.root) {
                /* Any delivery fails the check: no rounds expected */
                ctx.g         = g;
                ctx.plan      = &no_rounds;
                ctx.count     = 0;
                ctx.group_seq = seq;
                ctx.shm       = NULL;
                am_slots[1]   = &ctx;
                ep = m.create_ok(g, make_group_id(4, seq));
                pg.barrier(rank);
                CHILD_CHECK(wait_progress(m.env(), [&] {
                                return m.env().errors.size() > nerr;
                            }, 10), "%s: root saw no error for contributions "
                            "of different lengths", g.name().c_str());
                CHILD_CHECK(UCS_STATUS_IS_ERR(m.env().errors[nerr]),
                            "error handler with %s",
                            ucs_status_string(m.env().errors[nerr]));
                CHILD_CHECK(ctx.count == 0, "delivered a bad round");
                am_slots[1] = NULL;
            } else {
                unsigned pos = g.senders()[0] == rank ? 0 : 1;
                /* 8 + 4 * (4 + pos) bytes: whole elements, different */
                size_t len = 8 + (4 * (4 + pos));
                std::vector<uint8_t> buf(len);
                pg.barrier(rank);
                ep = m.create_ok(g, make_group_id(4, seq));
                make_contribution(g, rank, 0, len, buf.data());
                sender_stats stats;
                status = send_retry(m, ep, 1, SEND_BCOPY, buf.data(), len, 0,
                                    NULL, false, &stats);
                CHILD_CHECK(status == UCS_OK, "bcopy: %s",
                            ucs_status_string(status));
                /* The root failed the group: the senders hear of it */
                CHILD_CHECK(wait_progress(m.env(), [&] {
                                return m.env().errors.size() > nerr;
                            }, 10), "%s: sender saw no error after the root "
                            "failed the group", g.name().c_str());
                status = send_contribution(ep, 1, SEND_BCOPY, buf.data(), len,
                                           1, NULL);
                CHILD_CHECK(UCS_STATUS_IS_ERR(status) &&
                            (status != UCS_ERR_NO_RESOURCE),
                            "send on a failed group: %s",
                            ucs_status_string(status));
                status = uct_ep_flush(ep, 0, NULL);
                CHILD_CHECK(UCS_STATUS_IS_ERR(status) &&
                            (status != UCS_ERR_NO_RESOURCE),
                            "flush on a failed group: %s",
                            ucs_status_string(status));
            }
            pg.barrier(rank);
            uct_ep_destroy(ep);
            ++seq;
        }

        /* Parameters that differ from the root's */
        {
            group_desc g = {mode, UCT_O2M_OP_SUM, UCT_O2M_DT_INT32, 8, nprocs,
                            1};
            if (rank == g.root) {
                ep = m.create_ok(g, make_group_id(4, seq));
            }
            pg.barrier(rank);
            if (rank != g.root) {
                group_desc other = g;
                scoped_log_capture quiet;
                if (rank == 0) {
                    other.op = UCT_O2M_OP_MAX;
                } else {
                    other.hdr_len = 16;
                }
                status = m.create(other, make_group_id(4, seq), &ep);
                CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                            "member with other parameters than the root's: "
                            "%s", ucs_status_string(status));
            }
            pg.barrier(rank);
            if (rank == g.root) {
                uct_ep_destroy(ep);
            }
            ++seq;
        }

        /* The interfaces still work; refused lengths on the way */
        {
            group_desc g = {mode, UCT_O2M_OP_SUM, UCT_O2M_DT_INT16,
                            (mode == UCT_O2M_MODE_ATOMIC) ? 4u : 3u, nprocs,
                            2};
            group_opts opts;
            opts.try_bad_lengths = true;
            nerr = m.env().errors.size();
            run_group(m, g, make_group_id(4, seq), seq,
                      flow_plan(g, 3 * fifo_depth), shm, opts);
            CHILD_CHECK(m.env().errors.size() == nerr, "new errors");
        }
        pg.barrier(rank);
        m.close();
    }, 60);
}

INSTANTIATE_TEST_SUITE_P(Incast, IncastErrors,
                         ::testing::ValuesIn(all_modes), mode_param_name);


/*
 * kill -9 of members.  Every survivor must get an error through its
 * interface error handler within a bounded time (CHECK_INTERVAL is 10 ms
 * here; the bound leaves room for a loaded 2-core machine), and nothing may
 * be left behind.
 */
class IncastKill : public ::testing::TestWithParam<uct_o2m_mode_t> {
};

const double kill_detect_bound = 3.0; /* seconds */

int64_t mono_ns()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ts.tv_sec * 1000000000ll) + ts.tv_nsec;
}

/*
 * Runs @a fn in @a nprocs processes sharing a shared_state: every child
 * must exit with success within 60 s but @a victim, killed, and no segment
 * of ours may be left in /dev/shm
 */
void run_kill(unsigned nprocs, unsigned victim,
              const std::function<void(proc_group&, unsigned,
                                       shared_state*)> &fn)
{
    std::vector<std::string> shm_before = dev_shm_files();
    proc_group pg(nprocs);
    shared_state *shm = (shared_state*)pg.shared();
    std::vector<int> status;

    status = pg.run([&](unsigned rank) { fn(pg, rank, shm); }, 60);
    expect_only_killed(status, victim);
    EXPECT_EQ("", join(new_shm_files(shm_before)));
}

/* A sender dies while the root waits for a round that the others sent */
TEST_P(IncastKill, sender_killed_while_root_waits)
{
    const uct_o2m_mode_t mode = GetParam();
    const unsigned nprocs     = 4;
    const unsigned victim     = 2;

    run_kill(nprocs, victim, [&](proc_group &pg, unsigned rank,
                                 shared_state *shm) {
        const std::vector<round_desc> no_rounds;
        member m(pg, rank);
        std::vector<uint8_t> buf(64);
        sender_stats stats;
        ucs_status_t st;
        root_ctx ctx;
        group_desc g = {mode, UCT_O2M_OP_SUM, UCT_O2M_DT_INT64, 8, nprocs, 0};
        uct_ep_h ep = NULL; /* the root creates it first, then the others */
        double elapsed;

        set_am_handlers(m, 1, 3);

        if (rank == g.root) {
            ctx.g = g; ctx.plan = &no_rounds; ctx.count = 0;
            ctx.group_seq = 0; ctx.shm = NULL;
            am_slots[1] = &ctx;
            ep = m.create_ok(g, make_group_id(5, 0));
        }
        pg.barrier(rank);
        if (rank != g.root) {
            ep = m.create_ok(g, make_group_id(5, 0));
        }
        if ((rank != g.root) && (rank != victim)) {
            make_contribution(g, rank, 0, buf.size(), buf.data());
            st = send_retry(m, ep, 1, SEND_BCOPY, buf.data(), buf.size(), 0,
                            NULL, false, &stats);
            CHILD_CHECK(st == UCS_OK, "contribution: %s",
                        ucs_status_string(st));
        }
        pg.barrier(rank); /* The last one: the victim dies after it */

        if (rank == victim) {
            kill(getpid(), SIGKILL);
            pause();
        }

        int64_t t_start = mono_ns();
        scoped_log_capture quiet;
        CHILD_CHECK(wait_progress(m.env(),
                                  [&] { return !m.env().errors.empty(); },
                                  10),
                    "rank %u: no error 10 s after a sender was killed", rank);
        elapsed = (mono_ns() - t_start) * 1e-9;
        CHILD_CHECK(elapsed < kill_detect_bound, "rank %u: error after "
                    "%.3f s", rank, elapsed);
        CHILD_CHECK(UCS_STATUS_IS_ERR(m.env().errors[0]), "error %s",
                    ucs_status_string(m.env().errors[0]));
        if (rank == g.root) {
            CHILD_CHECK(ctx.count == 0, "delivered an incomplete round");
            am_slots[1] = NULL;
        } else {
            st = send_contribution(ep, 1, SEND_BCOPY, buf.data(), buf.size(),
                                   1, NULL);
            CHILD_CHECK(UCS_STATUS_IS_ERR(st) && (st != UCS_ERR_NO_RESOURCE),
                        "send after the failure: %s",
                        ucs_status_string(st));
        }
        uct_ep_destroy(ep);
        m.close();
    });
}

struct purge_count {
    int calls = 0;
};

void purge_cb(uct_pending_req_t *self, void *arg)
{
    ++((purge_count*)arg)->calls;
}

/* The root dies while the senders are blocked on a full ring, with a zcopy
 * in flight and a request pending */
TEST_P(IncastKill, root_killed_while_senders_blocked)
{
    const uct_o2m_mode_t mode = GetParam();
    const unsigned nprocs     = 4;
    const unsigned root       = 1;

    run_kill(nprocs, root, [&](proc_group &pg, unsigned rank,
                               shared_state *shm) {
        member m(pg, rank);
        std::vector<std::vector<uint8_t>> bufs(fifo_depth + 1);
        zcopy_comp comp;
        pending_send req;
        purge_count purged;
        ucs_status_t st;
        group_desc g = {mode, UCT_O2M_OP_GATHER, UCT_O2M_DT_UINT8, 0, nprocs,
                        root};
        uct_ep_h ep;
        double elapsed;
        unsigned k;

        if (rank == root) {
            ep = m.create_ok(g, make_group_id(6, 0));
        }
        pg.barrier(rank);
        if (rank == root) {
            /* Never progress: wait for the senders to block, then die */
            CHILD_CHECK(wait_noprogress([&] {
                            return __atomic_load_n(&shm->blocked,
                                                   __ATOMIC_ACQUIRE) ==
                                   nprocs - 1;
                        }), "senders did not block");
            __atomic_store_n(&shm->t_event_ns, mono_ns(), __ATOMIC_RELEASE);
            kill(getpid(), SIGKILL);
            pause();
        }

        ep = m.create_ok(g, make_group_id(6, 0));
        memset(&comp, 0, sizeof(comp));
        comp.super.func  = zcopy_comp_cb;
        comp.super.count = 1;
        for (k = 0; k <= fifo_depth; ++k) {
            bufs[k].resize(100 + k);
            make_contribution(g, rank, k, bufs[k].size(), bufs[k].data());
        }
        for (k = 0; k < fifo_depth; ++k) {
            send_method method = (k == 1) ? SEND_ZCOPY : SEND_BCOPY;
            CHILD_CHECK(wait_progress(m.env(), [&] {
                            st = send_contribution(ep, 1, method,
                                                   bufs[k].data(),
                                                   bufs[k].size(), k,
                                                   &comp.super);
                            return st != UCS_ERR_NO_RESOURCE;
                        }), "round %u: no resources", k);
            CHILD_CHECK((st == UCS_OK) || (st == UCS_INPROGRESS),
                        "round %u: %s", k, ucs_status_string(st));
        }

        st = send_contribution(ep, 1, SEND_BCOPY, bufs[k].data(),
                               bufs[k].size(), k, NULL);
        CHILD_CHECK(st == UCS_ERR_NO_RESOURCE, "send on a full ring: %s",
                    ucs_status_string(st));
        st = pending_add(&req, ep, 1, SEND_BCOPY, bufs[k].data(),
                         bufs[k].size(), k, NULL);
        CHILD_CHECK(st == UCS_OK, "pending_add: %s", ucs_status_string(st));
        __atomic_fetch_add(&shm->blocked, 1, __ATOMIC_ACQ_REL);

        scoped_log_capture quiet;
        CHILD_CHECK(wait_progress(m.env(),
                                  [&] { return !m.env().errors.empty(); },
                                  10),
                    "rank %u: no error 10 s after the root was killed",
                    rank);
        elapsed = (mono_ns() - __atomic_load_n(&shm->t_event_ns,
                                               __ATOMIC_ACQUIRE)) * 1e-9;
        CHILD_CHECK(elapsed < kill_detect_bound, "rank %u: error after "
                    "%.3f s", rank, elapsed);
        CHILD_CHECK(UCS_STATUS_IS_ERR(m.env().errors[0]), "error %s",
                    ucs_status_string(m.env().errors[0]));

        /* The zcopy completes once, with an error; the pending request is
         * never dispatched and comes back through purge; later operations
         * fail */
        m.env().progress();
        CHILD_CHECK(comp.fired == 1, "zcopy completion fired %d times",
                    comp.fired);
        CHILD_CHECK(UCS_STATUS_IS_ERR(comp.status), "zcopy completion: %s",
                    ucs_status_string(comp.status));
        CHILD_CHECK(!req.done, "pending request ran on a failed group: %s",
                    ucs_status_string(req.status));
        uct_ep_pending_purge(ep, purge_cb, &purged);
        CHILD_CHECK(purged.calls == 1, "purged %d requests", purged.calls);
        st = send_contribution(ep, 1, SEND_BCOPY, bufs[0].data(),
                               bufs[0].size(), 0, NULL);
        CHILD_CHECK(UCS_STATUS_IS_ERR(st) && (st != UCS_ERR_NO_RESOURCE),
                    "send after the root died: %s", ucs_status_string(st));
        st = uct_ep_flush(ep, 0, NULL);
        CHILD_CHECK(UCS_STATUS_IS_ERR(st) && (st != UCS_ERR_NO_RESOURCE),
                    "flush after the root died: %s", ucs_status_string(st));
        uct_ep_destroy(ep);
        m.close();
    });
}

INSTANTIATE_TEST_SUITE_P(Incast, IncastKill, ::testing::ValuesIn(all_modes),
                         mode_param_name);


/*
 * uct_o2m_ep_create() refuses exactly the (mode, op, dtype) that
 * uct_o2m_op_supported() refuses, with UCS_ERR_UNSUPPORTED; the query is
 * what o2m_reduce.h documents.  Other refused parameters of sm_incast.
 */
TEST(IncastParams, create_agrees_with_query)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) {
        member m(pg, rank);
        uct_o2m_group_params_t params;
        unsigned seq = 0, refused = 0;
        ucs_status_t status;
        group_desc g;
        uct_ep_h ep;
        bool fp, bitwise;
        int query;

        g.size    = 2;
        g.root    = 0;
        g.hdr_len = 0;
        scoped_log_capture quiet;
        for (uct_o2m_mode_t mode : all_modes) {
            for (uct_o2m_op_t op : all_ops) {
                for (uct_o2m_dtype_t dtype : all_dtypes) {
                    fp      = (dtype == UCT_O2M_DT_FLOAT) ||
                              (dtype == UCT_O2M_DT_DOUBLE);
                    bitwise = (op == UCT_O2M_OP_BAND) ||
                              (op == UCT_O2M_OP_BOR) ||
                              (op == UCT_O2M_OP_BXOR);
                    query   = uct_o2m_op_supported(mode, op, dtype);
                    g.mode  = mode;
                    g.op    = op;
                    g.dtype = dtype;

                    if (mode != UCT_O2M_MODE_ATOMIC) {
                        CHILD_CHECK(query == !(bitwise && fp), "%s: query %d",
                                    g.name().c_str(), query);
                    } else {
                        /* A subset; gather always; bitwise never on floats */
                        CHILD_CHECK(!query || !(bitwise && fp), "%s: query "
                                    "%d", g.name().c_str(), query);
                    }
                    if (op == UCT_O2M_OP_GATHER) {
                        CHILD_CHECK(query, "%s not supported",
                                    g.name().c_str());
                    }

                    /* As the root, and as a member (own interface as the
                     * root's address: nothing is rooted there) */
                    for (unsigned idx : {0u, 1u}) {
                        status = m.create(g, make_group_id(7, seq++), &ep,
                                          idx);
                        CHILD_CHECK(status == (query ? UCS_OK :
                                                       UCS_ERR_UNSUPPORTED),
                                    "%s as member %u: query %d, "
                                    "uct_o2m_ep_create: %s",
                                    g.name().c_str(), idx, query,
                                    ucs_status_string(status));
                        if (status == UCS_OK) {
                            uct_ep_destroy(ep);
                        } else {
                            ++refused;
                        }
                    }
                }
            }
        }
        /* BAND/BOR/BXOR x FLOAT/DOUBLE x 4 modes, as root and as member */
        CHILD_CHECK(refused >= 2 * 3 * 2 * 4, "only %u refused", refused);

        /* ATOMIC: hdr_len must be whole elements of the dtype */
        g.op    = UCT_O2M_OP_SUM;
        g.dtype = UCT_O2M_DT_INT32;
        for (uct_o2m_mode_t mode : all_modes) {
            g.mode    = mode;
            g.hdr_len = 2;
            status    = m.create(g, make_group_id(7, seq++), &ep);
            CHILD_CHECK(status == ((mode == UCT_O2M_MODE_ATOMIC) ?
                                   UCS_ERR_UNSUPPORTED : UCS_OK),
                        "%s: %s", g.name().c_str(), ucs_status_string(status));
            if (status == UCS_OK) {
                uct_ep_destroy(ep);
            }
            g.hdr_len = m.attr().max_short + 8; /* whole elements */
            status    = m.create(g, make_group_id(7, seq++), &ep);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "%s: %s",
                        g.name().c_str(), ucs_status_string(status));
        }

        /* Bad mode / op / dtype values, size, indices, root address */
        g.mode    = UCT_O2M_MODE_BATCHED;
        g.hdr_len = 0;
        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_O2M_GROUP_FIELD_MODE | UCT_O2M_GROUP_FIELD_OP |
                            UCT_O2M_GROUP_FIELD_DTYPE;
        params.group_id   = make_group_id(7, seq++);
        params.size       = 2;
        params.my_index   = 0;
        params.root_index = 0;
        params.mode       = UCT_O2M_MODE_LAST;
        params.op         = UCT_O2M_OP_SUM;
        params.dtype      = UCT_O2M_DT_INT32;
        status = uct_o2m_ep_create(m.env().iface(), &params, &ep);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "mode LAST: %s",
                    ucs_status_string(status));
        params.mode = UCT_O2M_MODE_BATCHED;
        params.op   = UCT_O2M_OP_LAST;
        status = uct_o2m_ep_create(m.env().iface(), &params, &ep);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "op LAST: %s",
                    ucs_status_string(status));
        params.op    = UCT_O2M_OP_SUM;
        params.dtype = UCT_O2M_DT_LAST;
        status = uct_o2m_ep_create(m.env().iface(), &params, &ep);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "dtype LAST: %s",
                    ucs_status_string(status));
        params.dtype = UCT_O2M_DT_INT32;
        params.size  = 1;
        status = uct_o2m_ep_create(m.env().iface(), &params, &ep);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "size 1: %s",
                    ucs_status_string(status));
        params.size       = 3;
        params.root_index = 3;
        status = uct_o2m_ep_create(m.env().iface(), &params, &ep);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "root index 3 of 3: %s",
                    ucs_status_string(status));
        params.root_index = 0;
        params.my_index   = 1; /* A member without the root's address */
        status = uct_o2m_ep_create(m.env().iface(), &params, &ep);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "no root address: %s",
                    ucs_status_string(status));
        params.my_index = 0;
        params.size     = m.attr().max_members + 1;
        status = uct_o2m_ep_create(m.env().iface(), &params, &ep);
        CHILD_CHECK(status == UCS_ERR_EXCEEDS_LIMIT, "size %u: %s",
                    params.size, ucs_status_string(status));
        m.close();
    }, 60);
}


/*
 * Semantics that must not depend on the mode: the same contributions give
 * the same delivered bytes in every mode.  A logical op over a single
 * contributor (group of two) is where the modes could differ: a copy of
 * the contribution in one mode, a 0/1 result in another.  o2m_reduce.h
 * says the result of LAND/LOR/LXOR is 1 or 0.
 */
TEST(IncastSemantics, logical_ops_single_contributor)
{
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        const double dvals[] = {5.0, 0.0, -0.0, -2.5, 0.5};
        const int32_t ivals[] = {5, 0, -3, 1, 256};
        member m(pg, rank);
        unsigned seq = 0;
        std::string report;

        for (uct_o2m_op_t op : {UCT_O2M_OP_LAND, UCT_O2M_OP_LOR,
                                UCT_O2M_OP_LXOR}) {
            for (uct_o2m_dtype_t dtype : {UCT_O2M_DT_INT32,
                                          UCT_O2M_DT_DOUBLE}) {
                size_t count = 5, dt = uct_o2m_dtype_size(dtype);
                std::vector<uint8_t> input(count * dt), expected(count * dt);
                for (size_t i = 0; i < count; ++i) {
                    if (dtype == UCT_O2M_DT_INT32) {
                        int32_t one = ivals[i] != 0;
                        memcpy(&input[i * dt], &ivals[i], dt);
                        memcpy(&expected[i * dt], &one, dt);
                    } else {
                        double one = dvals[i] != 0.0;
                        memcpy(&input[i * dt], &dvals[i], dt);
                        memcpy(&expected[i * dt], &one, dt);
                    }
                }

                for (uct_o2m_mode_t mode : all_modes) {
                    group_desc g = {mode, op, dtype, 0, 2, 0};
                    uct_ep_h ep;
                    std::vector<uint8_t> got;
                    bool have = false;
                    uint64_t gid = make_group_id(8, seq++);

                    if (rank == 0) {
                        static std::vector<uint8_t> *out;
                        static bool *flag;
                        out  = &got;
                        flag = &have;
                        m.env().set_am_handler(5,
                            [](void *arg, void *data, size_t length,
                               unsigned flags) -> ucs_status_t {
                                out->assign((uint8_t*)data,
                                            (uint8_t*)data + length);
                                *flag = true;
                                return UCS_OK;
                            }, NULL);
                        ep = m.create_ok(g, gid);
                        CHILD_CHECK(wait_progress(m.env(),
                                                  [&] { return have; }),
                                    "%s: nothing delivered",
                                    g.name().c_str());
                        if (got != expected) {
                            report += " " + g.name();
                        }
                    } else {
                        sender_stats stats;
                        ucs_status_t st;
                        ep = m.create_ok(g, gid);
                        st = send_retry(m, ep, 5, SEND_BCOPY, input.data(),
                                        input.size(), 0, NULL, false, &stats);
                        CHILD_CHECK(st == UCS_OK, "%s", ucs_status_string(st));
                        flush_ok(m, ep, g.name().c_str());
                    }
                    uct_ep_destroy(ep);
                }
            }
        }
        CHILD_CHECK(report.empty(), "a single nonzero contribution is not "
                    "delivered as 1 (0 as 0) in:%s", report.c_str());
        m.close();
    }, 60);
}

/*
 * A member may create its endpoint before the root created the group (it
 * joins from progress): until then every send is "no resources", never an
 * error, and a pending request goes out once it joined.
 */
TEST(IncastLateRoot, send_before_root_creates_group)
{
    run_incast(2, [&](proc_group &pg, unsigned rank, shared_state *shm) {
        member m(pg, rank);
        unsigned seq = 0;

        set_am_handlers(m, 1, 3);
        for (uct_o2m_mode_t mode : all_modes) {
            for (send_method method : {SEND_SHORT, SEND_BCOPY, SEND_ZCOPY}) {
                group_desc g = {mode, UCT_O2M_OP_SUM, UCT_O2M_DT_INT32, 8, 2,
                                0};
                std::vector<round_desc> plan = {{24, method, 2}};
                std::string what = g.name() + "/" + method_name(method);
                uint64_t gid     = make_group_id(9, seq);
                root_ctx ctx;
                uct_ep_h ep;

                pg.barrier(rank);
                if (rank == 1) {
                    std::vector<uint8_t> buf(24);
                    zcopy_comp comp;
                    pending_send req;
                    ucs_status_t st;

                    memset(&comp, 0, sizeof(comp));
                    comp.super.func  = zcopy_comp_cb;
                    comp.super.count = 1;
                    make_contribution(g, rank, 0, buf.size(), buf.data());
                    ep = m.create_ok(g, gid);
                    st = send_contribution(ep, 2, method, buf.data(),
                                           buf.size(), 0, &comp.super);
                    CHILD_CHECK(st == UCS_ERR_NO_RESOURCE, "%s before the "
                                "root created the group: %s, expected %s",
                                what.c_str(), ucs_status_string(st),
                                ucs_status_string(UCS_ERR_NO_RESOURCE));
                    st = pending_add(&req, ep, 2, method, buf.data(),
                                     buf.size(), 0, &comp.super);
                    CHILD_CHECK(st == UCS_OK, "%s: pending_add: %s",
                                what.c_str(), ucs_status_string(st));
                    pg.barrier(rank);
                    CHILD_CHECK(wait_progress(m.env(),
                                              [&] { return req.done; }),
                                "%s: pending request not dispatched",
                                what.c_str());
                    CHILD_CHECK((req.status == UCS_OK) ||
                                (req.status == UCS_INPROGRESS), "%s: %s",
                                what.c_str(), ucs_status_string(req.status));
                    flush_ok(m, ep, what.c_str());
                    CHILD_CHECK((method != SEND_ZCOPY) || (comp.fired == 1),
                                "%s: completion fired %d times",
                                what.c_str(), comp.fired);
                } else {
                    ctx.g         = g;
                    ctx.plan      = &plan;
                    ctx.count     = 0;
                    ctx.group_seq = seq;
                    ctx.shm       = shm;
                    am_slots[2]   = &ctx;
                    pg.barrier(rank); /* The member's endpoint exists */
                    ep = m.create_ok(g, gid);
                    CHILD_CHECK(wait_progress(m.env(),
                                              [&] { return ctx.count == 1; }),
                                "%s: nothing delivered", what.c_str());
                    am_slots[2] = NULL;
                }
                pg.barrier(rank);
                uct_ep_destroy(ep);
                ++seq;
            }
        }
        m.close();
    }, 60);
}


/*
 * Empty contributions (hdr_len 0, no element) through every method, on a
 * root that has not received anything before, in every mode.
 */
TEST(IncastZeroLength, empty_contributions_fresh_root)
{
    run_incast(3, [&](proc_group &pg, unsigned rank, shared_state *shm) {
        unsigned seq = 0;

        for (uct_o2m_mode_t mode : all_modes) {
            for (uct_o2m_op_t op : {UCT_O2M_OP_SUM, UCT_O2M_OP_GATHER}) {
                /* A new interface each time: nothing received before */
                member m(pg, rank);
                group_desc g = {mode, op, UCT_O2M_DT_INT32, 0, 3, seq % 3};
                std::vector<round_desc> plan = {{0, SEND_ZCOPY, 1},
                                                {0, SEND_BCOPY, 2},
                                                {0, SEND_ZCOPY, 3},
                                                {4, SEND_ZCOPY, 1}};
                set_am_handlers(m, 1, 3);
                run_group(m, g, make_group_id(10, seq), seq, plan, shm);
                pg.barrier(rank);
                ++seq;
            }
        }
    }, 60);
}

/*
 * uct_o2m_ep_rx_watch (API 1.8) at a fan-in root of 3 members, in a mode
 * that counts arrivals (BATCHED) and in one that stamps each slot
 * (CENTRALIZED): the word changes with each contribution, reads BUSY once
 * the round is complete and until progress delivers it, then watches the
 * next round; a sender has no word.
 */
ucs_status_t rx_watch_count_cb(void *arg, void *data, size_t length,
                               unsigned flags)
{
    ++*static_cast<unsigned*>(arg);
    return UCS_OK;
}

TEST(IncastRxWatch, root_word_per_contribution)
{
    run_incast(3, [&](proc_group &pg, unsigned rank, shared_state *shm) {
        unsigned seq = 0;

        for (uct_o2m_mode_t mode : {UCT_O2M_MODE_BATCHED,
                                    UCT_O2M_MODE_CENTRALIZED}) {
            member m(pg, rank);
            group_desc g = {mode, UCT_O2M_OP_GATHER, UCT_O2M_DT_INT32, 0, 3,
                            0};
            const uint64_t payload = 0x5eed0000 + rank;
            uct_o2m_rx_watch_t watch;
            unsigned delivered = 0;
            uct_ep_h ep;
            double end;

            m.env().set_am_handler(7, rx_watch_count_cb, &delivered);
            if (rank == 0) {
                ep = m.create_ok(g, make_group_id(11, seq));
            }
            pg.barrier(rank);
            if (rank != 0) {
                ep = m.create_ok(g, make_group_id(11, seq));
                CHILD_CHECK(m.env().progress_until([&]() {
                                return uct_o2m_ep_state(ep, NULL) ==
                                       UCT_O2M_EP_STATE_READY;
                            }), "%s: member %u did not join",
                            g.name().c_str(), rank);
                CHILD_CHECK(uct_o2m_ep_rx_watch(ep, &watch) ==
                            UCS_ERR_UNSUPPORTED, "%s: a sender has a word",
                            g.name().c_str());
            } else {
                CHILD_CHECK_OK(uct_o2m_ep_rx_watch(ep, &watch));
            }
            pg.barrier(rank);

            for (unsigned sender = 1; sender <= 2; ++sender) {
                if (rank == sender) {
                    CHILD_CHECK_OK(uct_ep_am_short(ep, 7, payload, NULL, 0));
                }
                pg.barrier(rank);
                if (rank == 0) {
                    end = now_sec() + wait_timeout;
                    while (!uct_o2m_rx_watch_changed(&watch)) {
                        CHILD_CHECK(now_sec() < end, "%s: the word did not "
                                    "change with contribution %u",
                                    g.name().c_str(), sender);
                        sched_yield();
                    }
                    if (sender == 1) {
                        /* half the round: the next contribution's word */
                        CHILD_CHECK_OK(uct_o2m_ep_rx_watch(ep, &watch));
                        CHILD_CHECK(!uct_o2m_rx_watch_changed(&watch),
                                    "%s: the word moved without a "
                                    "contribution", g.name().c_str());
                    }
                }
                pg.barrier(rank); /* the next sender sends after this */
            }

            if (rank == 0) {
                CHILD_CHECK(uct_o2m_ep_rx_watch(ep, &watch) == UCS_ERR_BUSY,
                            "%s: a complete round is not reported ready",
                            g.name().c_str());
                CHILD_CHECK(delivered == 0, "delivered without progress");
                CHILD_CHECK(m.env().progress_until([&]() {
                                return delivered == 1;
                            }), "%s: the round was not delivered",
                            g.name().c_str());
                CHILD_CHECK_OK(uct_o2m_ep_rx_watch(ep, &watch));
                CHILD_CHECK(!uct_o2m_rx_watch_changed(&watch),
                            "%s: the next round's word changed",
                            g.name().c_str());
            }
            pg.barrier(rank);
            uct_ep_destroy(ep);
            pg.barrier(rank);
            ++seq;
        }
    }, 60);
}

} // namespace


/*
 * RING_MAX bounds the fan-in ring of a large group: with 4 senders and a
 * 64 KiB budget, a ring of FIFO_SIZE 64 elements of 4 x 8 KiB slots shrinks
 * to 2 elements.  Exactly 2 rounds fit before the senders get
 * UCS_ERR_NO_RESOURCE, and 20 rounds still reduce correctly.
 */
TEST(IncastRingMax, large_group_gets_fewer_elements)
{
    static const unsigned nprocs = 5, rounds = 20, count = 16;
    std::vector<std::string> shm_before = o2m_test::dev_shm_files();
    o2m_test::proc_group pg(nprocs);

    pg.run_ok([&](unsigned rank) {
        struct ctx_t {
            unsigned rounds;
            bool     bad;
        } ctx = {0, false};
        o2m_test::uct_env env("sm_incast", {{"O2M_FIFO_SIZE", "64"},
                                            {"O2M_RING_MAX", "64k"}});
        std::vector<char> root_addr(env.attr().iface_addr_len);
        uct_o2m_group_params_t params = {};
        std::vector<int32_t> data(count);
        ucs_status_t status;
        uct_ep_h ep;

        env.set_am_handler(7, [](void *arg, void *buf, size_t length,
                                 unsigned flags) -> ucs_status_t {
            ctx_t *c         = static_cast<ctx_t*>(arg);
            const int32_t *v = static_cast<const int32_t*>(buf);

            for (unsigned i = 0; i < count; ++i) {
                /* senders 1..4 contribute round * 100 + rank + i */
                int32_t expect = 4 * (c->rounds * 100 + i) + (1 + 2 + 3 + 4);
                c->bad |= (length != count * 4) || (v[i] != expect);
            }
            ++c->rounds;
            return UCS_OK;
        }, &ctx);

        if (rank == 0) {
            std::vector<char> addr = env.iface_addr();
            memcpy(pg.shared(), addr.data(), addr.size());
        }
        pg.barrier(rank);
        memcpy(root_addr.data(), pg.shared(), root_addr.size());

        params.field_mask      = UCT_O2M_GROUP_FIELD_MODE |
                                 UCT_O2M_GROUP_FIELD_OP |
                                 UCT_O2M_GROUP_FIELD_DTYPE |
                                 UCT_O2M_GROUP_FIELD_ROOT_ADDR;
        params.group_id        = 0x7177;
        params.size            = nprocs;
        params.my_index        = rank;
        params.root_index      = 0;
        params.mode            = UCT_O2M_MODE_BATCHED;
        params.op              = UCT_O2M_OP_SUM;
        params.dtype           = UCT_O2M_DT_INT32;
        params.root_iface_addr = (const uct_iface_addr_t*)root_addr.data();
        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
        pg.barrier(rank);

        if (rank == 0) {
            /* Hold back until every sender saw the ring full */
            pg.barrier(rank);
            CHILD_CHECK(env.progress_until([&] {
                return ctx.rounds == rounds;
            }), "root got %u of %u rounds", ctx.rounds, rounds);
            CHILD_CHECK(!ctx.bad, "wrong reduction result");
        } else {
            for (unsigned r = 0; r < rounds; ++r) {
                for (unsigned i = 0; i < count; ++i) {
                    data[i] = r * 100 + rank + i;
                }
                if (r == 2) {
                    status = uct_ep_am_short(ep, 7, 0, data.data(),
                                             count * 4 - 8);
                    CHILD_CHECK(status == UCS_ERR_NO_RESOURCE,
                                "round 2 with a 2-element ring: %s",
                                ucs_status_string(status));
                    pg.barrier(rank);
                }
                CHILD_CHECK(env.progress_until([&] {
                    uint64_t hdr;
                    memcpy(&hdr, data.data(), sizeof(hdr));
                    return uct_ep_am_short(ep, 7, hdr, data.data() + 2,
                                           count * 4 - 8) == UCS_OK;
                }), "rank %u round %u not sent", rank, r);
            }
            CHILD_CHECK(env.progress_until([&] {
                return uct_ep_flush(ep, 0, NULL) == UCS_OK;
            }), "flush");
        }

        pg.barrier(rank);
        uct_ep_destroy(ep);
    });

    EXPECT_EQ(shm_before, o2m_test::dev_shm_files());
}
