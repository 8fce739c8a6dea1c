/**
 * ucx-o2m tests: harness for UCG tests in forked children.
 */
#include "ucg_harness.h"

#include <complex>
#include <cinttypes>
#include <cstring>
#include <sstream>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>


/* LeakSanitizer, when the tests are built with it: a child ends with
 * _exit(), which skips LSan's check at exit, so children check by hand */
extern "C" int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

namespace ucg_test {

double coll_timeout = 30.0;

/* Harness's part at the start of the shared memory */
static const size_t harness_shared = 4096;

struct harness_area {
    unsigned long barrier_entered;
};

/* Guard bytes before and after each user buffer */
static const size_t  guard_len  = 64;
static const uint8_t guard_byte = 0x5a;
static const uint8_t fill_byte  = 0xa5;
/* Receive buffer of a member where the API ignores it */
static const size_t  ignored_len = 256;



/* ---- user reductions ---- */

static unsigned long user_calls;

static void check_user_arg(void *arg)
{
    if (arg != &user_calls) {
        fprintf(stderr, "[pid %d] user op called with arg %p instead of %p\n",
                getpid(), arg, (void*)&user_calls);
        fflush(stderr);
        _exit(1);
    }
    ++user_calls;
}

static void user_sum_u64(void *arg, const void *in, void *inout, size_t count)
{
    uint64_t a, b;

    check_user_arg(arg);
    for (size_t i = 0; i < count; ++i) {
        memcpy(&a, (const char*)in + (i * 8), 8);
        memcpy(&b, (char*)inout + (i * 8), 8);
        b += a;
        memcpy((char*)inout + (i * 8), &b, 8);
    }
}

/* inout = in x inout, 2x2 matrices {m00, m01, m10, m11} of uint32 */
static void user_mat2(void *arg, const void *in, void *inout, size_t count)
{
    uint32_t a[4], b[4], c[4];

    check_user_arg(arg);
    for (size_t i = 0; i < count; ++i) {
        memcpy(a, (const char*)in + (i * 16), 16);
        memcpy(b, (char*)inout + (i * 16), 16);
        c[0] = (a[0] * b[0]) + (a[1] * b[2]);
        c[1] = (a[0] * b[1]) + (a[1] * b[3]);
        c[2] = (a[2] * b[0]) + (a[3] * b[2]);
        c[3] = (a[2] * b[1]) + (a[3] * b[3]);
        memcpy((char*)inout + (i * 16), c, 16);
    }
}

size_t user_sum_bytes_dt_size = 1;

static void user_sum_bytes(void *arg, const void *in, void *inout,
                           size_t count)
{
    const uint8_t *a = (const uint8_t*)in;
    uint8_t *b       = (uint8_t*)inout;

    check_user_arg(arg);
    for (size_t i = 0; i < count * user_sum_bytes_dt_size; ++i) {
        b[i] += a[i];
    }
}

ucg_user_op_t user_op(user_op_kind_t kind)
{
    ucg_user_op_t op;

    memset(&op, 0, sizeof(op));
    op.arg = &user_calls;
    switch (kind) {
    case USER_OP_SUM_U64:
        op.func        = user_sum_u64;
        op.commutative = 1;
        break;
    case USER_OP_MAT2:
        op.func        = user_mat2;
        op.commutative = 0;
        break;
    case USER_OP_SUM_BYTES:
        op.func        = user_sum_bytes;
        op.commutative = 1;
        break;
    default:
        break;
    }
    return op;
}

unsigned long user_op_calls()
{
    return user_calls;
}


/* ---- collective descriptions ---- */

bool coll_desc::is_reduction() const
{
    return (type == UCG_COLL_REDUCE) || (type == UCG_COLL_ALLREDUCE);
}

bool coll_desc::rooted() const
{
    return (type == UCG_COLL_BCAST) || (type == UCG_COLL_REDUCE) ||
           (type == UCG_COLL_GATHER) || (type == UCG_COLL_SCATTER);
}

size_t coll_desc::elem_size() const
{
    return (dtype == UCG_DT_BYTES) ? dt_size : ucg_dtype_size(dtype);
}

std::string coll_desc::str() const
{
    std::ostringstream os;

    os << ucg_coll_name(type);
    if (type != UCG_COLL_BARRIER) {
        os << " count=" << count << " (" << (count * elem_size())
           << " bytes) " << ucg_dtype_name(dtype);
        if (dtype == UCG_DT_BYTES) {
            os << "[" << dt_size << "]";
        }
    }
    if (is_reduction()) {
        os << " op=" << ucg_op_name(op);
        if (op == UCG_OP_USER) {
            os << ((user == USER_OP_MAT2)      ? "(mat2, non-commutative)" :
                   (user == USER_OP_SUM_BYTES) ? "(sum_bytes, commutative)" :
                                                 "(sum_u64, commutative)");
        }
    }
    if (rooted()) {
        os << " root=" << root;
    }
    if (in_place) {
        os << " in-place";
    }
    if (misalign) {
        os << " misalign=" << misalign;
    }
    os << " seed=" << seed;
    return os.str();
}


/* ---- deterministic inputs ---- */

static inline uint64_t mix64(uint64_t x)
{
    /* splitmix64 finalizer */
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t rank_base(const coll_desc &d, unsigned rank)
{
    return mix64(mix64(d.seed ^ ((uint64_t)d.type << 56)) + rank + 1);
}

static bool dtype_signed(ucg_dtype_t dt)
{
    return (dt == UCG_DT_INT8) || (dt == UCG_DT_INT16) ||
           (dt == UCG_DT_INT32) || (dt == UCG_DT_INT64);
}

/* An integer in the range that keeps the op exact / meaningful */
static int64_t int_value(ucg_op_t op, bool is_signed, uint64_t h)
{
    static const int64_t prod_s[] = {1, 2, -1, 1};
    static const int64_t prod_u[] = {1, 2, 3, 1};

    switch (op) {
    case UCG_OP_SUM:
        return is_signed ? (int64_t)(h % 16) - 8 : (int64_t)(h % 16);
    case UCG_OP_PROD:
        return is_signed ? prod_s[h % 4] : prod_u[h % 4];
    case UCG_OP_MIN:
    case UCG_OP_MAX:
        return is_signed ? (int64_t)(h % 200) - 100 : (int64_t)(h % 200);
    case UCG_OP_LAND:
    case UCG_OP_LOR:
    case UCG_OP_LXOR:
        return h % 3;
    case UCG_OP_MINLOC:
    case UCG_OP_MAXLOC:
        /* few distinct values: ties, decided by the index */
        return h % 5;
    default:
        /* bitwise ops, data movement, user ops: any bits */
        return (int64_t)h;
    }
}

/* A small number: sums and products of them are exact in any order */
static double fp_value(ucg_op_t op, uint64_t h)
{
    static const double prod[] = {1.0, 2.0, -1.0, 0.5};

    switch (op) {
    case UCG_OP_SUM:
        return (double)((int64_t)(h % 16) - 8);
    case UCG_OP_PROD:
        return prod[h % 4];
    case UCG_OP_MINLOC:
    case UCG_OP_MAXLOC:
        return (double)(h % 5);
    default:
        return (double)((int64_t)(h % 2001) - 1000) * 0.25;
    }
}

static double complex_part(ucg_op_t op, uint64_t h)
{
    static const double prod[] = {1.0, 2.0, -1.0, 0.0};

    return (op == UCG_OP_PROD) ? prod[h % 4] : fp_value(op, h);
}

template <typename T>
static inline void put(void *p, T v)
{
    memcpy(p, &v, sizeof(v));
}

template <typename T>
static inline T get(const void *p)
{
    T v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* The pair types, as in ucg_dt.c (MPI's C structs) */
struct float_int_t       { float       v; int i; };
struct double_int_t      { double      v; int i; };
struct long_int_t        { long        v; int i; };
struct two_int_t         { int         v; int i; };
struct short_int_t       { short       v; int i; };
struct long_double_int_t { long double v; int i; };
struct two_float_t       { float       v; float i; };
struct two_double_t      { double      v; double i; };

template <typename P, typename V>
static void put_pair(void *elem, V v, decltype(P::i) i)
{
    P pair;

    memset(&pair, 0, sizeof(pair));
    pair.v = v;
    pair.i = i;
    memcpy(elem, &pair, sizeof(pair));
}

static void gen_elem_hash(const coll_desc &d, uint64_t h, void *elem)
{
    uint64_t h2 = mix64(h);
    ucg_op_t op = d.is_reduction() ? d.op : UCG_OP_LAST;
    size_t esize = d.elem_size();
    int64_t iv;
    int idx;

    if (op == UCG_OP_USER) {
        /* user functions work on the bits */
        op = UCG_OP_LAST;
    }

    memset(elem, 0, esize);
    switch (d.dtype) {
    case UCG_DT_INT8:
    case UCG_DT_UINT8:
    case UCG_DT_INT16:
    case UCG_DT_UINT16:
    case UCG_DT_INT32:
    case UCG_DT_UINT32:
    case UCG_DT_INT64:
    case UCG_DT_UINT64:
        iv = int_value(op, dtype_signed(d.dtype), h);
        /* little endian: the low bytes */
        memcpy(elem, &iv, esize);
        break;
    case UCG_DT_FLOAT:
        put<float>(elem, (float)fp_value(op, h));
        break;
    case UCG_DT_DOUBLE:
        put<double>(elem, fp_value(op, h));
        break;
    case UCG_DT_LONG_DOUBLE:
        put<long double>(elem, (long double)fp_value(op, h));
        break;
    case UCG_DT_FLOAT_COMPLEX:
        put<float>(elem, (float)complex_part(op, h));
        put<float>((char*)elem + sizeof(float), (float)complex_part(op, h2));
        break;
    case UCG_DT_DOUBLE_COMPLEX:
        put<double>(elem, complex_part(op, h));
        put<double>((char*)elem + sizeof(double), complex_part(op, h2));
        break;
    case UCG_DT_LONG_DOUBLE_COMPLEX:
        put<long double>(elem, (long double)complex_part(op, h));
        put<long double>((char*)elem + sizeof(long double),
                         (long double)complex_part(op, h2));
        break;
    case UCG_DT_FLOAT_INT:
        idx = (int)(h2 % 16);
        put_pair<float_int_t>(elem, (float)fp_value(op, h), idx);
        break;
    case UCG_DT_DOUBLE_INT:
        idx = (int)(h2 % 16);
        put_pair<double_int_t>(elem, fp_value(op, h), idx);
        break;
    case UCG_DT_LONG_INT:
        idx = (int)(h2 % 16);
        put_pair<long_int_t>(elem, (long)int_value(op, true, h), idx);
        break;
    case UCG_DT_2INT:
        idx = (int)(h2 % 16);
        put_pair<two_int_t>(elem, (int)int_value(op, true, h), idx);
        break;
    case UCG_DT_SHORT_INT:
        idx = (int)(h2 % 16);
        put_pair<short_int_t>(elem, (short)int_value(op, true, h), idx);
        break;
    case UCG_DT_LONG_DOUBLE_INT:
        idx = (int)(h2 % 16);
        put_pair<long_double_int_t>(elem, (long double)fp_value(op, h), idx);
        break;
    case UCG_DT_2FLOAT:
        idx = (int)(h2 % 16);
        put_pair<two_float_t>(elem, (float)fp_value(op, h), (float)idx);
        break;
    case UCG_DT_2DOUBLE:
        idx = (int)(h2 % 16);
        put_pair<two_double_t>(elem, fp_value(op, h), (double)idx);
        break;
    case UCG_DT_BYTES:
    default:
        for (size_t j = 0; j < esize; j += 8) {
            uint64_t bits = mix64(h + j);
            memcpy((char*)elem + j, &bits, std::min<size_t>(8, esize - j));
        }
        break;
    }
}

void gen_elem(const coll_desc &d, unsigned rank, size_t idx, void *elem)
{
    gen_elem_hash(d, mix64(rank_base(d, rank) ^ idx), elem);
}

void gen_input(const coll_desc &d, unsigned rank, size_t first, size_t count,
               void *buf)
{
    uint64_t base = rank_base(d, rank);
    size_t esize  = d.elem_size();

    for (size_t i = 0; i < count; ++i) {
        gen_elem_hash(d, mix64(base ^ (first + i)), (char*)buf + (i * esize));
    }
}


/* ---- reference results ---- */

void ref_reduce(const coll_desc &d, unsigned size, void *result)
{
    size_t len = d.count * d.elem_size();
    ucg_user_op_t uop = user_op(d.user);
    std::vector<char> acc(len + 1), tmp(len + 1);
    ucg_op_desc_t desc;
    ucs_status_t status;

    status = ucg_op_desc_init(&desc, d.op, d.dtype, d.dt_size, &uop);
    CHILD_CHECK(status == UCS_OK, "reference of %s: %s", d.str().c_str(),
                ucs_status_string(status));

    gen_input(d, 0, 0, d.count, acc.data());
    for (unsigned r = 1; r < size; ++r) {
        /* tmp = acc op v_r: the lower ranks are the left operand */
        gen_input(d, r, 0, d.count, tmp.data());
        ucg_op_reduce(&desc, acc.data(), tmp.data(), d.count);
        acc.swap(tmp);
    }
    memcpy(result, acc.data(), len);
}

size_t a2av_count(const coll_desc &d, unsigned i, unsigned j)
{
    return (d.count * ((d.in_place ? (i + j) : (i + 2 * j)) % 3)) / 2;
}

std::vector<size_t> a2av_scounts(const coll_desc &d, unsigned rank,
                                 unsigned size)
{
    std::vector<size_t> c(size);

    for (unsigned j = 0; j < size; ++j) {
        c[j] = a2av_count(d, rank, j);
    }
    return c;
}

std::vector<size_t> a2av_sdispls(const coll_desc &d, unsigned rank,
                                 unsigned size)
{
    std::vector<size_t> displs(size);
    size_t off = 0;

    for (unsigned j = 0; j < size; ++j) {
        displs[j] = off;
        off      += a2av_count(d, rank, j) + 1;
    }
    return displs;
}

std::vector<size_t> a2av_rcounts(const coll_desc &d, unsigned rank,
                                 unsigned size)
{
    std::vector<size_t> c(size);

    for (unsigned i = 0; i < size; ++i) {
        c[i] = a2av_count(d, i, rank);
    }
    return c;
}

std::vector<size_t> a2av_rdispls(const coll_desc &d, unsigned rank,
                                 unsigned size)
{
    std::vector<size_t> displs(size);
    size_t off = 0;

    for (unsigned i = size; i-- > 0;) {
        displs[i] = off;
        off      += a2av_count(d, i, rank) + 1;
    }
    return displs;
}

/* Elements of member @a rank's alltoallv send (@a recv: receive) layout */
static size_t a2av_elems(const coll_desc &d, unsigned rank, unsigned size,
                         bool recv)
{
    size_t n = 0;

    for (unsigned j = 0; j < size; ++j) {
        n += (recv ? a2av_count(d, j, rank) : a2av_count(d, rank, j)) + 1;
    }
    return n;
}

size_t rbuf_size(const coll_desc &d, unsigned rank, unsigned size)
{
    size_t len = d.count * d.elem_size();

    switch (d.type) {
    case UCG_COLL_ALLTOALL:
        return len * size;
    case UCG_COLL_ALLTOALLV:
        return a2av_elems(d, rank, size, true) * d.elem_size();
    case UCG_COLL_BCAST:
    case UCG_COLL_ALLREDUCE:
        return len;
    case UCG_COLL_REDUCE:
        return (rank == d.root) ? len : 0;
    case UCG_COLL_GATHER:
        return (rank == d.root) ? (len * size) : 0;
    case UCG_COLL_SCATTER:
        return ((rank == d.root) && d.in_place) ? 0 : len;
    case UCG_COLL_ALLGATHER:
        return len * size;
    default:
        return 0;
    }
}

size_t sbuf_size(const coll_desc &d, unsigned rank, unsigned size)
{
    size_t len = d.count * d.elem_size();

    switch (d.type) {
    case UCG_COLL_REDUCE:
    case UCG_COLL_GATHER:
        return ((rank == d.root) && d.in_place) ? 0 : len;
    case UCG_COLL_ALLREDUCE:
    case UCG_COLL_ALLGATHER:
        return d.in_place ? 0 : len;
    case UCG_COLL_SCATTER:
        return (rank == d.root) ? (len * size) : 0;
    case UCG_COLL_ALLTOALL:
        return d.in_place ? 0 : (len * size);
    case UCG_COLL_ALLTOALLV:
        return d.in_place ? 0 : (a2av_elems(d, rank, size, false) *
                                 d.elem_size());
    default:
        return 0;
    }
}

std::vector<char> ref_result(const coll_desc &d, unsigned rank, unsigned size)
{
    size_t esize = d.elem_size();
    size_t len   = d.count * esize;
    std::vector<char> res(rbuf_size(d, rank, size));

    switch (d.type) {
    case UCG_COLL_BCAST:
        gen_input(d, d.root, 0, d.count, res.data());
        break;
    case UCG_COLL_REDUCE:
    case UCG_COLL_ALLREDUCE:
        if (!res.empty()) {
            ref_reduce(d, size, res.data());
        }
        break;
    case UCG_COLL_GATHER:
    case UCG_COLL_ALLGATHER:
        if (!res.empty()) {
            for (unsigned r = 0; r < size; ++r) {
                gen_input(d, r, 0, d.count, res.data() + (r * len));
            }
        }
        break;
    case UCG_COLL_SCATTER:
        if (!res.empty()) {
            gen_input(d, d.root, rank * d.count, d.count, res.data());
        }
        break;
    case UCG_COLL_ALLTOALL:
        /* member r's input is its send buffer (or its receive buffer in
         * place): block rank of it */
        for (unsigned r = 0; r < size; ++r) {
            gen_input(d, r, rank * d.count, d.count, res.data() + (r * len));
        }
        break;
    case UCG_COLL_ALLTOALLV: {
        std::vector<size_t> rd = a2av_rdispls(d, rank, size);

        /* the gaps: as filled (in place: the input) */
        if (d.in_place) {
            gen_input(d, rank, 0, a2av_elems(d, rank, size, true),
                      res.data());
        } else {
            memset(res.data(), fill_byte, res.size());
        }
        for (unsigned i = 0; i < size; ++i) {
            size_t src = d.in_place ? a2av_rdispls(d, i, size)[rank] :
                                      a2av_sdispls(d, i, size)[rank];
            gen_input(d, i, src, a2av_count(d, i, rank),
                      res.data() + (rd[i] * esize));
        }
        break;
    }
    default:
        break;
    }
    return res;
}


/* ---- comparison ---- */

/* One number as the error messages show it: a float, double or long
 * double with every digit it needs to tell two values apart */
template <typename T>
static std::string printf_str(const char *fmt, T v)
{
    char buf[64];

    snprintf(buf, sizeof(buf), fmt, v);
    return buf;
}

static std::string num_str(int v)         { return std::to_string(v); }
static std::string num_str(long v)        { return std::to_string(v); }
static std::string num_str(float v)       { return printf_str("%.9g", v); }
static std::string num_str(double v)      { return printf_str("%.17g", v); }
static std::string num_str(long double v) { return printf_str("%.21Lg", v); }

/* A complex element of parts @a T: (re,im) */
template <typename T>
static std::string complex_str(const void *p)
{
    return "(" + num_str(get<T>(p)) + "," +
           num_str(get<T>((const char*)p + sizeof(T))) + ")";
}

/* A value/index pair @a P: {v,i} */
template <typename P>
static std::string pair_str(const void *p)
{
    P e = get<P>(p);

    return "{" + num_str(e.v) + "," + num_str(e.i) + "}";
}

static std::string elem_str(const coll_desc &d, const void *p)
{
    char buf[256];
    size_t esize = d.elem_size();

    switch (d.dtype) {
    case UCG_DT_INT8:   return num_str((int)get<int8_t>(p));
    case UCG_DT_UINT8:  return num_str((int)get<uint8_t>(p));
    case UCG_DT_INT16:  return num_str((int)get<int16_t>(p));
    case UCG_DT_UINT16: return num_str((int)get<uint16_t>(p));
    case UCG_DT_INT32:  return num_str((int)get<int32_t>(p));
    case UCG_DT_UINT32: return std::to_string(get<uint32_t>(p));
    case UCG_DT_INT64:  return std::to_string(get<int64_t>(p));
    case UCG_DT_UINT64: return std::to_string(get<uint64_t>(p));
    case UCG_DT_FLOAT:  return num_str(get<float>(p));
    case UCG_DT_DOUBLE: return num_str(get<double>(p));
    case UCG_DT_LONG_DOUBLE:
        return num_str(get<long double>(p));
    case UCG_DT_FLOAT_COMPLEX:
        return complex_str<float>(p);
    case UCG_DT_DOUBLE_COMPLEX:
        return complex_str<double>(p);
    case UCG_DT_LONG_DOUBLE_COMPLEX:
        return complex_str<long double>(p);
    case UCG_DT_FLOAT_INT:
        return pair_str<float_int_t>(p);
    case UCG_DT_DOUBLE_INT:
        return pair_str<double_int_t>(p);
    case UCG_DT_LONG_INT:
        return pair_str<long_int_t>(p);
    case UCG_DT_2INT:
        return pair_str<two_int_t>(p);
    case UCG_DT_SHORT_INT:
        return pair_str<short_int_t>(p);
    case UCG_DT_LONG_DOUBLE_INT:
        return pair_str<long_double_int_t>(p);
    case UCG_DT_2FLOAT:
        return pair_str<two_float_t>(p);
    case UCG_DT_2DOUBLE:
        return pair_str<two_double_t>(p);
    default: {
        std::string s = "0x";
        for (size_t j = 0; (j < esize) && (j < 64); ++j) {
            snprintf(buf, sizeof(buf), "%02x", ((const uint8_t*)p)[j]);
            s += buf;
        }
        return s;
    }
    }
}

/* Types whose elements have padding bytes: compared field by field.
 * Floating-point results of reductions: compared by value, because the
 * sign of an exact zero depends on the order of a commutative reduction
 * (complex products of small integers give (-0, x) or (+0, x)). */
static bool elem_equal(const coll_desc &d, const void *a, const void *b)
{
    if (d.is_reduction()) {
        switch (d.dtype) {
        case UCG_DT_FLOAT:
            return get<float>(a) == get<float>(b);
        case UCG_DT_DOUBLE:
            return get<double>(a) == get<double>(b);
        case UCG_DT_FLOAT_COMPLEX:
            return (get<float>(a) == get<float>(b)) &&
                   (get<float>((const char*)a + sizeof(float)) ==
                    get<float>((const char*)b + sizeof(float)));
        case UCG_DT_DOUBLE_COMPLEX:
            return (get<double>(a) == get<double>(b)) &&
                   (get<double>((const char*)a + sizeof(double)) ==
                    get<double>((const char*)b + sizeof(double)));
        case UCG_DT_FLOAT_INT:
            return (get<float_int_t>(a).v == get<float_int_t>(b).v) &&
                   (get<float_int_t>(a).i == get<float_int_t>(b).i);
        case UCG_DT_2FLOAT:
            return (get<two_float_t>(a).v == get<two_float_t>(b).v) &&
                   (get<two_float_t>(a).i == get<two_float_t>(b).i);
        case UCG_DT_2DOUBLE:
            return (get<two_double_t>(a).v == get<two_double_t>(b).v) &&
                   (get<two_double_t>(a).i == get<two_double_t>(b).i);
        default:
            break;
        }
    }

    switch (d.dtype) {
    case UCG_DT_LONG_DOUBLE:
        return get<long double>(a) == get<long double>(b);
    case UCG_DT_LONG_DOUBLE_COMPLEX:
        return (get<long double>(a) == get<long double>(b)) &&
               (get<long double>((const char*)a + sizeof(long double)) ==
                get<long double>((const char*)b + sizeof(long double)));
    case UCG_DT_DOUBLE_INT:
        return (get<double_int_t>(a).v == get<double_int_t>(b).v) &&
               (get<double_int_t>(a).i == get<double_int_t>(b).i);
    case UCG_DT_LONG_INT:
        return (get<long_int_t>(a).v == get<long_int_t>(b).v) &&
               (get<long_int_t>(a).i == get<long_int_t>(b).i);
    case UCG_DT_SHORT_INT:
        return (get<short_int_t>(a).v == get<short_int_t>(b).v) &&
               (get<short_int_t>(a).i == get<short_int_t>(b).i);
    case UCG_DT_LONG_DOUBLE_INT:
        return (get<long_double_int_t>(a).v == get<long_double_int_t>(b).v) &&
               (get<long_double_int_t>(a).i == get<long_double_int_t>(b).i);
    default:
        return !memcmp(a, b, d.elem_size());
    }
}

std::string compare(const coll_desc &d, const void *expected,
                    const void *actual, size_t len)
{
    size_t esize = d.elem_size();
    size_t num_bad = 0, first_bad = 0;
    std::ostringstream os;

    /* equal bytes are equal values (no NaN in the inputs) */
    if (!memcmp(expected, actual, len)) {
        return "";
    }

    for (size_t i = 0; (i + 1) * esize <= len; ++i) {
        const char *e = (const char*)expected + (i * esize);
        const char *a = (const char*)actual + (i * esize);
        if (!elem_equal(d, e, a)) {
            if (num_bad++ == 0) {
                first_bad = i;
            }
        }
    }
    if (num_bad == 0) {
        return "";
    }

    const char *e = (const char*)expected + (first_bad * esize);
    const char *a = (const char*)actual + (first_bad * esize);
    os << "first mismatch at element " << first_bad << " (byte "
       << (first_bad * esize) << "): expected " << elem_str(d, e)
       << ", got " << elem_str(d, a) << "; " << num_bad << " of "
       << (len / esize) << " elements differ";
    return os.str();
}


/* ---- children ---- */

ucs_status_t oob_allgather(void *arg, const void *sbuf, void *rbuf,
                           size_t len)
{
    oob_arg *oob  = static_cast<oob_arg*>(arg);
    unsigned np   = oob->procs->size();
    /* proc_group::allgather moves at most 64 KiB at once */
    size_t chunk  = (64 * 1024) / np;
    std::vector<char> all(chunk * np);

    if (len == 0) {
        oob->procs->barrier(oob->proc_rank);
        return UCS_OK;
    }

    for (size_t off = 0; off < len; off += chunk) {
        size_t n = std::min(chunk, len - off);
        oob->procs->allgather(oob->proc_rank, (const char*)sbuf + off, n,
                              all.data());
        for (unsigned p = 0; p < np; ++p) {
            unsigned g = oob->group_rank.empty() ? p : oob->group_rank[p];
            memcpy((char*)rbuf + (g * len) + off, all.data() + (p * n), n);
        }
    }
    return UCS_OK;
}

ucg_group_h create_group(member &m, const std::vector<unsigned> &perm)
{
    /* lives as long as the child: a group may keep its OOB argument */
    static std::vector<std::unique_ptr<oob_arg>> oob_args;
    ucg_group_params_t params;
    ucg_group_h group;
    ucs_status_t status;

    oob_args.emplace_back(new oob_arg);
    oob_arg *oob    = oob_args.back().get();
    oob->procs      = m.procs;
    oob->proc_rank  = m.rank;
    oob->group_rank = perm;

    memset(&params, 0, sizeof(params));
    params.field_mask    = UCG_GROUP_PARAM_FIELD_GLOBAL_RANK;
    params.size          = m.size;
    params.rank          = perm.empty() ? m.rank : perm[m.rank];
    params.oob_allgather = oob_allgather;
    params.oob_arg       = oob;
    params.global_rank   = m.rank;

    status = ucg_group_create(m.context, &params, &group);
    CHILD_CHECK(status == UCS_OK, "%s rank %u: ucg_group_create: %s",
                m.label.c_str(), m.rank, ucs_status_string(status));
    CHILD_CHECK(ucg_group_size(group) == m.size, "group size %u",
                ucg_group_size(group));
    CHILD_CHECK(ucg_group_rank(group) == params.rank, "group rank %u != %u",
                ucg_group_rank(group), params.rank);
    return group;
}

static void child_main(o2m_test::proc_group &pg, unsigned rank,
                       const run_opts &opts,
                       const std::function<void(member&)> &fn,
                       const std::string &label)
{
    ucg_context_params_t ctx_params;
    ucp_context_h ucp_context = NULL;
    ucp_worker_h ucp_worker   = NULL;
    ucs_status_t status;
    member m;

    for (const auto &kv : opts.env) {
        setenv(kv.first.c_str(), kv.second.c_str(), 1);
    }
    if (opts.pre_init) {
        opts.pre_init(rank);
    }

    m.procs           = &pg;
    m.rank            = rank;
    m.size            = pg.size();
    m.context         = NULL;
    m.group           = NULL;
    m.label           = label;
    m.shared          = (char*)pg.shared() + harness_shared;
    m.shared_size     = opts.shared_size;
    m.barrier_entered = &static_cast<harness_area*>(pg.shared())->
                                barrier_entered;
    m.barriers_done   = 0;

    memset(&ctx_params, 0, sizeof(ctx_params));
    if (opts.own_ucp) {
        ucp_config_t *config;
        ucp_params_t ucp_params;
        ucp_worker_params_t worker_params;

        status = ucp_config_read(NULL, NULL, &config);
        CHILD_CHECK_OK(status);
        memset(&ucp_params, 0, sizeof(ucp_params));
        ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES;
        ucp_params.features   = UCP_FEATURE_TAG;
        status = ucp_init(&ucp_params, config, &ucp_context);
        ucp_config_release(config);
        CHILD_CHECK_OK(status);

        memset(&worker_params, 0, sizeof(worker_params));
        worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
        status = ucp_worker_create(ucp_context, &worker_params, &ucp_worker);
        CHILD_CHECK_OK(status);

        ctx_params.field_mask  = UCG_CONTEXT_PARAM_FIELD_UCP_WORKER;
        ctx_params.ucp_context = ucp_context;
        ctx_params.ucp_worker  = ucp_worker;
    }

    status = ucg_context_create(&ctx_params, NULL, &m.context);
    CHILD_CHECK(status == UCS_OK, "%s rank %u: ucg_context_create: %s",
                label.c_str(), rank, ucs_status_string(status));

    if (opts.create_group) {
        m.group = create_group(m);
    }

    fn(m);

    if (opts.final_barrier) {
        /* the last collectives completed everywhere before a group goes */
        pg.barrier(rank);
    }
    /* slow teardown is worth a line in the log */
    double t0 = o2m_test::now_sec();
    if (m.group != NULL) {
        ucg_group_destroy(m.group);
    }
    double t1 = o2m_test::now_sec();
    ucg_context_destroy(m.context);
    double t2 = o2m_test::now_sec();
    if ((t2 - t0) > 1.0) {
        printf("[ ucg      ] %s rank %u: ucg_group_destroy %.2f s, "
               "ucg_context_destroy %.2f s\n", label.c_str(), rank, t1 - t0,
               t2 - t1);
        fflush(stdout);
    }

    if (opts.own_ucp) {
        ucp_worker_destroy(ucp_worker);
        ucp_cleanup(ucp_context);
    }

    if ((__lsan_do_recoverable_leak_check != NULL) &&
        (getenv("ASAN_OPTIONS") == NULL ||
         strstr(getenv("ASAN_OPTIONS"), "detect_leaks=0") == NULL)) {
        CHILD_CHECK(__lsan_do_recoverable_leak_check() == 0,
                    "%s rank %u: memory leaks (see above)", label.c_str(),
                    rank);
    }
}

std::vector<int> run(unsigned np, const run_opts &opts,
                     const std::function<void(member&)> &fn,
                     const std::string &label)
{
    o2m_test::proc_group pg(np, harness_shared + opts.shared_size);
    std::vector<int> status;

    status = pg.run([&](unsigned rank) {
                        child_main(pg, rank, opts, fn, label);
                    },
                    opts.timeout);
    if (opts.parent_done) {
        opts.parent_done((const char*)pg.shared() + harness_shared);
    }
    return status;
}

void run_ok(unsigned np, const run_opts &opts,
            const std::function<void(member&)> &fn, const std::string &label)
{
    std::vector<int> status = run(np, opts, fn, label);

    for (unsigned r = 0; r < status.size(); ++r) {
        EXPECT_EQ(0, status[r]) << label << ": child rank " << r;
    }
}


/* ---- collectives ---- */

ucs_status_t wait_coll(ucg_coll_h coll, const std::string &what,
                       double timeout)
{
    double deadline = o2m_test::now_sec() +
                      ((timeout > 0) ? timeout : coll_timeout);
    ucs_status_t status;
    unsigned iter = 0;

    for (;;) {
        status = ucg_coll_test(coll);
        if (status != UCS_INPROGRESS) {
            return status;
        }
        if ((++iter % 64) == 0) {
            CHILD_CHECK(o2m_test::now_sec() < deadline, "%s: not complete after %.1f s",
                        what.c_str(),
                        (timeout > 0) ? timeout : coll_timeout);
        }
        /* more processes than cores: let the others run */
        sched_yield();
    }
}

coll_bufs::coll_bufs(const coll_desc &d, unsigned rank, unsigned size) :
    m_d(d), m_rank(rank), m_size(size), m_sbuf(NULL), m_rbuf(NULL)
{
    m_slen = sbuf_size(d, rank, size);
    m_rlen = rbuf_size(d, rank, size);
    if ((m_rlen == 0) && (d.type != UCG_COLL_BARRIER) && (d.count > 0) &&
        !((d.type == UCG_COLL_SCATTER) && d.in_place)) {
        /* ignored receive buffer: must stay as it is */
        m_rlen = ignored_len;
    }

    m_smem.resize(guard_len + d.misalign + m_slen + guard_len);
    m_rmem.resize(guard_len + d.misalign + m_rlen + guard_len);
    m_sbuf = m_smem.data() + guard_len + d.misalign;
    m_rbuf = m_rmem.data() + guard_len + d.misalign;
    fill(d);
}

void coll_bufs::fill(const coll_desc &d)
{
    size_t len = d.count * d.elem_size();

    m_d = d;
    memset(m_smem.data(), guard_byte, m_smem.size());
    memset(m_rmem.data(), guard_byte, m_rmem.size());
    memset(m_rbuf, fill_byte, m_rlen);

    switch (d.type) {
    case UCG_COLL_BCAST:
        if (m_rank == d.root) {
            gen_input(d, m_rank, 0, d.count, m_rbuf);
        }
        break;
    case UCG_COLL_REDUCE:
    case UCG_COLL_ALLREDUCE:
        if (m_slen > 0) {
            gen_input(d, m_rank, 0, d.count, m_sbuf);
        } else if (d.in_place && ((d.type == UCG_COLL_ALLREDUCE) ||
                                  (m_rank == d.root))) {
            gen_input(d, m_rank, 0, d.count, m_rbuf);
        }
        break;
    case UCG_COLL_GATHER:
    case UCG_COLL_ALLGATHER:
        if (m_slen > 0) {
            gen_input(d, m_rank, 0, d.count, m_sbuf);
        } else if (d.in_place && ((d.type == UCG_COLL_ALLGATHER) ||
                                  (m_rank == d.root))) {
            gen_input(d, m_rank, 0, d.count, m_rbuf + (m_rank * len));
        }
        break;
    case UCG_COLL_SCATTER:
        if (m_rank == d.root) {
            gen_input(d, m_rank, 0, d.count * m_size, m_sbuf);
        }
        break;
    case UCG_COLL_ALLTOALL:
    case UCG_COLL_ALLTOALLV:
        /* the whole send layout, gaps included (in place: the receive
         * buffer) */
        gen_input(d, m_rank, 0, (d.in_place ? m_rlen : m_slen) /
                  d.elem_size(), d.in_place ? m_rbuf : m_sbuf);
        if (d.type == UCG_COLL_ALLTOALLV) {
            m_scounts = a2av_scounts(d, m_rank, m_size);
            m_sdispls = a2av_sdispls(d, m_rank, m_size);
            m_rcounts = a2av_rcounts(d, m_rank, m_size);
            m_rdispls = a2av_rdispls(d, m_rank, m_size);
        }
        break;
    default:
        break;
    }

    m_sref.assign(m_sbuf, m_sbuf + m_slen);
}

ucg_coll_params_t coll_bufs::params() const
{
    ucg_coll_params_t p;
    bool root = (m_rank == m_d.root);

    memset(&p, 0, sizeof(p));
    p.type    = m_d.type;
    p.root    = m_d.root;
    p.count   = m_d.count;
    p.dtype   = m_d.dtype;
    p.dt_size = m_d.dt_size;
    p.op      = m_d.is_reduction() ? m_d.op : UCG_OP_LAST;
    if (m_d.is_reduction() && (m_d.op == UCG_OP_USER)) {
        p.user_op = user_op(m_d.user);
    }

    p.sbuf = (m_slen > 0) ? m_sbuf : NULL;
    p.rbuf = (m_rlen > 0) ? m_rbuf : NULL;
    if (m_d.type == UCG_COLL_ALLTOALLV) {
        p.scounts = m_scounts.data();
        p.sdispls = m_sdispls.data();
        p.rcounts = m_rcounts.data();
        p.rdispls = m_rdispls.data();
    }
    if (m_d.in_place) {
        switch (m_d.type) {
        case UCG_COLL_REDUCE:
        case UCG_COLL_GATHER:
            if (root) {
                p.sbuf = UCG_IN_PLACE;
            }
            break;
        case UCG_COLL_ALLREDUCE:
        case UCG_COLL_ALLGATHER:
        case UCG_COLL_ALLTOALL:
        case UCG_COLL_ALLTOALLV:
            p.sbuf = UCG_IN_PLACE;
            break;
        case UCG_COLL_SCATTER:
            if (root) {
                p.rbuf = UCG_IN_PLACE;
            }
            break;
        default:
            break;
        }
    }
    return p;
}

static bool all_bytes(const char *p, size_t len, uint8_t byte)
{
    for (size_t i = 0; i < len; ++i) {
        if ((uint8_t)p[i] != byte) {
            return false;
        }
    }
    return true;
}

void coll_bufs::check(const std::string &label) const
{
    const char *what = label.c_str();
    size_t pre       = guard_len + m_d.misalign;
    std::vector<char> expected;
    std::string diff;

    CHILD_CHECK(all_bytes(m_smem.data(), pre, guard_byte) &&
                all_bytes(m_sbuf + m_slen, guard_len, guard_byte),
                "%s: rank %u: bytes around the send buffer were written",
                what, m_rank);
    CHILD_CHECK(all_bytes(m_rmem.data(), pre, guard_byte),
                "%s: rank %u: bytes before the receive buffer were written",
                what, m_rank);
    CHILD_CHECK(all_bytes(m_rbuf + m_rlen, guard_len, guard_byte),
                "%s: rank %u: bytes after the receive buffer (%zu bytes) "
                "were written", what, m_rank, m_rlen);
    CHILD_CHECK((m_slen == 0) || !memcmp(m_sbuf, m_sref.data(), m_slen),
                "%s: rank %u: the send buffer changed", what, m_rank);

    expected = ref_result(m_d, m_rank, m_size);
    if (!expected.empty()) {
        CHILD_CHECK(expected.size() == m_rlen, "internal: size mismatch");
        diff = compare(m_d, expected.data(), m_rbuf, m_rlen);
        CHILD_CHECK(diff.empty(), "%s: rank %u of %u: %s", what, m_rank,
                    m_size, diff.c_str());
    } else if ((m_rlen > 0) && (m_d.type != UCG_COLL_BARRIER)) {
        CHILD_CHECK(all_bytes(m_rbuf, m_rlen, fill_byte),
                    "%s: rank %u: the receive buffer, which the API ignores "
                    "on this member, was written", what, m_rank);
    }
}

double run_coll(member &m, ucg_group_h group, const coll_desc &d)
{
    unsigned rank     = ucg_group_rank(group);
    unsigned size     = ucg_group_size(group);
    bool check_barrier = (d.type == UCG_COLL_BARRIER) && (group == m.group);
    std::string label = m.label + ": " + d.str();
    double start      = o2m_test::now_sec();
    coll_bufs bufs(d, rank, size);
    ucg_coll_params_t params = bufs.params();
    ucs_status_t status;
    ucg_coll_h coll;

    status = ucg_coll_init(group, &params, &coll);
    CHILD_CHECK(status == UCS_OK, "%s: rank %u: ucg_coll_init: %s",
                label.c_str(), rank, ucs_status_string(status));

    if (check_barrier) {
        __atomic_add_fetch(m.barrier_entered, 1, __ATOMIC_SEQ_CST);
    }

    status = ucg_coll_start(coll);
    CHILD_CHECK(status == UCS_OK, "%s: rank %u: ucg_coll_start: %s",
                label.c_str(), rank, ucs_status_string(status));
    status = wait_coll(coll, label);
    CHILD_CHECK(status == UCS_OK, "%s: rank %u: completed with %s",
                label.c_str(), rank, ucs_status_string(status));

    if (check_barrier) {
        /* every member entered this barrier before anyone left it */
        unsigned long entered = __atomic_load_n(m.barrier_entered,
                                                __ATOMIC_SEQ_CST);
        ++m.barriers_done;
        CHILD_CHECK(entered >= m.barriers_done * size,
                    "%s: rank %u left barrier #%lu when only %lu entries of "
                    "%lu were made", label.c_str(), rank, m.barriers_done,
                    entered, m.barriers_done * size);
    }

    bufs.check(label);
    ucg_coll_finalize(coll);
    return o2m_test::now_sec() - start;
}

double run_coll(member &m, const coll_desc &d)
{
    return run_coll(m, m.group, d);
}

void die_in_coll(ucg_coll_h coll, kill_shared *sh)
{
    double t;

    for (unsigned i = 0; i < 3; ++i) {
        ucg_coll_test(coll);
    }
    t = o2m_test::now_sec();
    __atomic_store(&sh->kill_time, &t, __ATOMIC_SEQ_CST);
    kill(getpid(), SIGKILL);
    _exit(2); /* not reached */
}

void check_end_after_kill(const member &m, ucs_status_t st, double t,
                          const coll_bufs &bufs, const std::string &label,
                          unsigned victim, double bound, bool print)
{
    kill_shared *sh = static_cast<kill_shared*>(m.shared);
    double kill_time;

    if (st == UCS_OK) {
        /* Finished is not failed: all this member needed arrived before
         * the victim died (between virtual hosts, UCP's tcp delivers an
         * eager message the victim has sent, even after its death); then
         * the data is right */
        bufs.check(label + ": completed although rank " +
                   std::to_string(victim) + " died");
        return;
    }

    __atomic_load(&sh->kill_time, &kill_time, __ATOMIC_SEQ_CST);
    CHILD_CHECK(kill_time > 0, "no kill time");
    CHILD_CHECK(t - kill_time <= bound, "%s: rank %u: error %s came %.2f s "
                "after the kill", label.c_str(), m.rank,
                ucs_status_string(st), t - kill_time);
    if (print) {
        printf("[ ucg      ] %s: rank %u got '%s' %.3f s after the kill\n",
               label.c_str(), m.rank, ucs_status_string(st), t - kill_time);
        fflush(stdout);
    }
}

void check_coll_fails(member &m, const coll_desc &d, const std::string &label,
                      const char *what, double timeout)
{
    coll_bufs bufs(d, m.rank, m.size);
    ucg_coll_params_t params = bufs.params();
    ucg_coll_h coll;
    ucs_status_t st;

    st = ucg_coll_init(m.group, &params, &coll);
    if (st == UCS_OK) {
        st = ucg_coll_start(coll);
        if (st == UCS_OK) {
            st = wait_coll(coll, label + ": " + what + " after the failure",
                           timeout);
        }
        ucg_coll_finalize(coll);
    }
    CHILD_CHECK(st != UCS_OK, "%s: rank %u: a %s after the failure "
                "completed", label.c_str(), m.rank, what);
}

} // namespace ucg_test
