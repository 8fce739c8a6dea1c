/**
 * ucx-o2m: tests of UCG datatypes and reductions (src/ucg/ucg_dt.c).
 *
 *  - ucg_op_valid() against the MPI 3.1 table (5.9.2), written out here;
 *  - ucg_op_reduce() on every valid predefined (op, dtype) against a
 *    reference written here: random data (negative values, ties of
 *    MINLOC/MAXLOC values and indices), aligned, unaligned and aliased
 *    buffers, several counts, guard bytes around the output;
 *  - user operations: argument passing, in/inout order (non-commutative
 *    ops), commutativity flag, any dtype including UCG_DT_BYTES;
 *  - ucg_op_desc_init() on every valid and invalid combination (error code
 *    and exactly one log line naming the op and dtype);
 *  - ucg_op_to_o2m(): which pairs map, that UCG reduces them with the
 *    sm_incast kernel exported by libuct_o2m (uct_o2m_reduce_func), and
 *    that it gives bit-identical results;
 *  - names, sizes, and parsing names back.
 */
#include "common/log_capture.h"
#include <gtest/gtest.h>

extern "C" {
#include "ucg_dt.h"
#include "o2m_reduce.h"
#include <ucs/debug/log_def.h>
}

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

/* ------------------------------------------------------------------------ */
/* The MPI table, independent of the implementation                         */

/* MINLOC/MAXLOC pairs, as MPI defines them in C (index int) and Fortran
 * (MPI_2REAL, MPI_2DOUBLE_PRECISION: index of the value's type) */
template <typename V, typename I = int> struct dt_pair {
    V v;
    I i;
};

bool dt_is_int(ucg_dtype_t dt)
{
    return (dt >= UCG_DT_INT8) && (dt <= UCG_DT_UINT64);
}

bool dt_is_fp(ucg_dtype_t dt)
{
    return (dt == UCG_DT_FLOAT) || (dt == UCG_DT_DOUBLE) ||
           (dt == UCG_DT_LONG_DOUBLE);
}

bool dt_is_complex(ucg_dtype_t dt)
{
    return (dt == UCG_DT_FLOAT_COMPLEX) || (dt == UCG_DT_DOUBLE_COMPLEX) ||
           (dt == UCG_DT_LONG_DOUBLE_COMPLEX);
}

bool dt_is_pair(ucg_dtype_t dt)
{
    return ((dt >= UCG_DT_FLOAT_INT) && (dt <= UCG_DT_LONG_DOUBLE_INT)) ||
           (dt == UCG_DT_2FLOAT) || (dt == UCG_DT_2DOUBLE);
}

bool mpi_valid(ucg_op_t op, ucg_dtype_t dt)
{
    switch (op) {
    case UCG_OP_SUM:
    case UCG_OP_PROD:
        return dt_is_int(dt) || dt_is_fp(dt) || dt_is_complex(dt);
    case UCG_OP_MIN:
    case UCG_OP_MAX:
        return dt_is_int(dt) || dt_is_fp(dt);
    case UCG_OP_LAND:
    case UCG_OP_LOR:
    case UCG_OP_LXOR:
    case UCG_OP_BAND:
    case UCG_OP_BOR:
    case UCG_OP_BXOR:
        return dt_is_int(dt);
    case UCG_OP_MINLOC:
    case UCG_OP_MAXLOC:
        return dt_is_pair(dt);
    case UCG_OP_USER:
        return true;
    default:
        return false;
    }
}

/* Pairs the sm_incast transport computes identically */
bool o2m_expected(ucg_op_t op, ucg_dtype_t dt)
{
    if (!mpi_valid(op, dt) || (op == UCG_OP_USER) ||
        (op == UCG_OP_MINLOC) || (op == UCG_OP_MAXLOC)) {
        return false;
    }
    return dt_is_int(dt) || (dt == UCG_DT_FLOAT) || (dt == UCG_DT_DOUBLE);
}

size_t expected_size(ucg_dtype_t dt)
{
    switch (dt) {
    case UCG_DT_INT8:                return sizeof(int8_t);
    case UCG_DT_UINT8:               return sizeof(uint8_t);
    case UCG_DT_INT16:               return sizeof(int16_t);
    case UCG_DT_UINT16:              return sizeof(uint16_t);
    case UCG_DT_INT32:               return sizeof(int32_t);
    case UCG_DT_UINT32:              return sizeof(uint32_t);
    case UCG_DT_INT64:               return sizeof(int64_t);
    case UCG_DT_UINT64:              return sizeof(uint64_t);
    case UCG_DT_FLOAT:               return sizeof(float);
    case UCG_DT_DOUBLE:              return sizeof(double);
    case UCG_DT_LONG_DOUBLE:         return sizeof(long double);
    case UCG_DT_FLOAT_COMPLEX:       return sizeof(std::complex<float>);
    case UCG_DT_DOUBLE_COMPLEX:      return sizeof(std::complex<double>);
    case UCG_DT_LONG_DOUBLE_COMPLEX: return sizeof(std::complex<long double>);
    case UCG_DT_FLOAT_INT:           return sizeof(dt_pair<float>);
    case UCG_DT_DOUBLE_INT:          return sizeof(dt_pair<double>);
    case UCG_DT_LONG_INT:            return sizeof(dt_pair<long>);
    case UCG_DT_2INT:                return sizeof(dt_pair<int>);
    case UCG_DT_SHORT_INT:           return sizeof(dt_pair<short>);
    case UCG_DT_LONG_DOUBLE_INT:     return sizeof(dt_pair<long double>);
    case UCG_DT_2FLOAT:              return 2 * sizeof(float);
    case UCG_DT_2DOUBLE:             return 2 * sizeof(double);
    default:                         return 0;
    }
}

const char *const expected_dtype_names[UCG_DT_LAST] = {
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float", "double", "long_double", "float_complex", "double_complex",
    "long_double_complex", "float_int", "double_int", "long_int", "2int",
    "short_int", "long_double_int", "2float", "2double", "bytes"
};

const char *const expected_op_names[UCG_OP_LAST] = {
    "sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor",
    "minloc", "maxloc", "user"
};


/* ------------------------------------------------------------------------ */
/* Element kinds: random values, reference, comparison                      */

struct int_tag {};
struct fp_tag {};
struct cplx_tag {};
struct pair_tag {};

template <typename T> struct is_complex : std::false_type {};
template <typename T> struct is_complex<std::complex<T>> : std::true_type {};

template <typename T> struct kind_of {
    typedef typename std::conditional<
        std::is_integral<T>::value, int_tag,
        typename std::conditional<
            std::is_floating_point<T>::value, fp_tag,
            typename std::conditional<is_complex<T>::value, cplx_tag,
                                      pair_tag>::type>::type>::type type;
};

typedef std::mt19937_64 rng_t;

/* Integers: zeros (for the logical ops), small values of both signs, and
 * arbitrary bit patterns (wrap-around of SUM/PROD) */
template <typename T> T gen_value(rng_t &rng, int_tag)
{
    switch (rng() % 4) {
    case 0:
        return 0;
    case 1:
        return (T)((int)(rng() % 7) - 3);
    default:
        return (T)rng();
    }
}

/* Floating point, NaN-free, exactly representable small values (so the
 * reference is exact whatever the evaluation), with negative values, -0.0
 * and ties */
template <typename T> T gen_fp(rng_t &rng)
{
    switch (rng() % 8) {
    case 0:
        return (T)0.0;
    case 1:
        return -(T)0.0;
    default:
        return (T)((int)(rng() % 257) - 128) / (T)4;
    }
}

template <typename T> T gen_value(rng_t &rng, fp_tag)
{
    return gen_fp<T>(rng);
}

template <typename T> T gen_value(rng_t &rng, cplx_tag)
{
    typedef typename T::value_type R;
    R re = gen_fp<R>(rng);
    R im = gen_fp<R>(rng);
    return T(re, im);
}

/* Pairs: few distinct values and indices, so that value and index ties are
 * frequent */
template <typename T> T gen_value(rng_t &rng, pair_tag)
{
    T p;
    memset(&p, 0, sizeof(p));
    p.v = (decltype(p.v))((int)(rng() % 7) - 3);
    p.i = (decltype(p.i))((int)(rng() % 9) - 2);
    return p;
}

template <typename T> T ref_op(ucg_op_t op, T a, T b, int_tag)
{
    typedef typename std::make_unsigned<T>::type U;
    U ua = (U)a, ub = (U)b;

    switch (op) {
    case UCG_OP_SUM:  return (T)(uint64_t)((uint64_t)ua + (uint64_t)ub);
    case UCG_OP_PROD: return (T)(uint64_t)((uint64_t)ua * (uint64_t)ub);
    case UCG_OP_MIN:  return (a < b) ? a : b;
    case UCG_OP_MAX:  return (a > b) ? a : b;
    case UCG_OP_LAND: return (T)((a != 0) && (b != 0));
    case UCG_OP_LOR:  return (T)((a != 0) || (b != 0));
    case UCG_OP_LXOR: return (T)((a != 0) != (b != 0));
    case UCG_OP_BAND: return (T)(ua & ub);
    case UCG_OP_BOR:  return (T)(ua | ub);
    case UCG_OP_BXOR: return (T)(ua ^ ub);
    default:          ADD_FAILURE() << "no reference"; return 0;
    }
}

template <typename T> T ref_op(ucg_op_t op, T a, T b, fp_tag)
{
    switch (op) {
    /* MIN/MAX of equal values (-0.0 and +0.0) give in, as the sm_incast
     * kernels do (so that both compute bit-identical results) */
    case UCG_OP_SUM:  return a + b;
    case UCG_OP_PROD: return a * b;
    case UCG_OP_MIN:  return (b < a) ? b : a;
    case UCG_OP_MAX:  return (b > a) ? b : a;
    default:          ADD_FAILURE() << "no reference"; return 0;
    }
}

template <typename T> T ref_op(ucg_op_t op, T a, T b, cplx_tag)
{
    switch (op) {
    case UCG_OP_SUM:
        return T(a.real() + b.real(), a.imag() + b.imag());
    case UCG_OP_PROD:
        return T(a.real() * b.real() - a.imag() * b.imag(),
                 a.real() * b.imag() + a.imag() * b.real());
    default:
        ADD_FAILURE() << "no reference";
        return T();
    }
}

template <typename T> T ref_op(ucg_op_t op, T a, T b, pair_tag)
{
    T r;
    memset(&r, 0, sizeof(r));
    if (op == UCG_OP_MINLOC) {
        r.v = (a.v < b.v) ? a.v : b.v;
    } else if (op == UCG_OP_MAXLOC) {
        r.v = (a.v > b.v) ? a.v : b.v;
    } else {
        ADD_FAILURE() << "no reference";
        return r;
    }
    if (a.v == b.v) {
        r.i = (a.i < b.i) ? a.i : b.i;
    } else {
        r.i = (r.v == a.v) ? a.i : b.i;
    }
    return r;
}

/* Values only (long double padding and struct padding are not compared) */
template <typename T> bool same(const T &a, const T &b, int_tag)
{
    return a == b;
}

template <typename T> bool same(const T &a, const T &b, fp_tag)
{
    return (a == b) && (std::signbit(a) == std::signbit(b));
}

template <typename T> bool same(const T &a, const T &b, cplx_tag)
{
    return (a.real() == b.real()) && (a.imag() == b.imag());
}

template <typename T> bool same(const T &a, const T &b, pair_tag)
{
    return (a.v == b.v) && (a.i == b.i);
}

template <typename T> std::string str(const T &a, int_tag)
{
    return std::to_string((long long)a);
}

template <typename T> std::string str(const T &a, fp_tag)
{
    std::ostringstream os;
    os << a;
    return os.str();
}

template <typename T> std::string str(const T &a, cplx_tag)
{
    std::ostringstream os;
    os << a;
    return os.str();
}

template <typename T> std::string str(const T &a, pair_tag)
{
    std::ostringstream os;
    os << "{" << a.v << ", " << a.i << "}";
    return os.str();
}

template <typename T> T gen(rng_t &rng)
{
    return gen_value<T>(rng, typename kind_of<T>::type());
}

template <typename T> T ref(ucg_op_t op, const T &in, const T &inout)
{
    return ref_op<T>(op, in, inout, typename kind_of<T>::type());
}


/* ------------------------------------------------------------------------ */
/* Buffers at a chosen misalignment, with guard bytes                       */

const size_t GUARD      = 64;
const uint8_t GUARD_VAL = 0xa5;

class test_buffer {
public:
    test_buffer(size_t len, size_t misalign) :
        m_len(len), m_raw(len + 3 * GUARD)
    {
        uintptr_t base = (uintptr_t)m_raw.data() + GUARD;
        base           = (base + GUARD - 1) & ~(uintptr_t)(GUARD - 1);
        m_ptr          = (uint8_t*)base + misalign;
        memset(m_raw.data(), GUARD_VAL, m_raw.size());
    }

    uint8_t *ptr() { return m_ptr; }

    bool guards_intact() const
    {
        const uint8_t *begin = m_raw.data();
        const uint8_t *end   = begin + m_raw.size();
        const uint8_t *p;

        for (p = begin; p < m_ptr; ++p) {
            if (*p != GUARD_VAL) {
                return false;
            }
        }
        for (p = m_ptr + m_len; p < end; ++p) {
            if (*p != GUARD_VAL) {
                return false;
            }
        }
        return true;
    }

private:
    size_t               m_len;
    std::vector<uint8_t> m_raw;
    uint8_t              *m_ptr;
};

/* Random bytes everywhere (padding included), then the values */
template <typename T>
void store_values(rng_t &rng, uint8_t *dst, const std::vector<T> &vals)
{
    for (size_t b = 0; b < vals.size() * sizeof(T); ++b) {
        dst[b] = (uint8_t)rng();
    }
    for (size_t k = 0; k < vals.size(); ++k) {
        memcpy(dst + k * sizeof(T), &vals[k], sizeof(T));
    }
}

template <typename T> T load_value(const uint8_t *src, size_t k)
{
    T v;
    memcpy(&v, src + k * sizeof(T), sizeof(T));
    return v;
}

const size_t test_counts[] = {0, 1, 7, 33, 1000};

struct misalign_case {
    size_t in;
    size_t inout;
};

const misalign_case misalign_cases[] = {{0, 0}, {1, 3}, {0, 1}, {5, 0},
                                        {8, 8}};

ucg_op_desc_t make_desc(ucg_op_t op, ucg_dtype_t dt)
{
    ucg_op_desc_t desc;
    ucs_status_t status = ucg_op_desc_init(&desc, op, dt, 0, NULL);
    EXPECT_EQ(UCS_OK, status) << ucg_op_name(op) << " " << ucg_dtype_name(dt);
    return desc;
}

template <typename T> void check_reduce(ucg_op_t op, ucg_dtype_t dt)
{
    typedef typename kind_of<T>::type K;
    ucg_op_desc_t desc = make_desc(op, dt);
    rng_t rng(1000 * op + dt);

    ASSERT_EQ(sizeof(T), desc.dt_size);

    for (size_t count : test_counts) {
        for (const misalign_case &mc : misalign_cases) {
            SCOPED_TRACE("count " + std::to_string(count) + " misalign " +
                         std::to_string(mc.in) + "/" +
                         std::to_string(mc.inout));
            std::vector<T> in_vals(count), io_vals(count);
            test_buffer in(count * sizeof(T), mc.in);
            test_buffer io(count * sizeof(T), mc.inout);

            for (size_t k = 0; k < count; ++k) {
                in_vals[k] = gen<T>(rng);
                io_vals[k] = gen<T>(rng);
            }
            store_values(rng, in.ptr(), in_vals);
            store_values(rng, io.ptr(), io_vals);
            std::vector<uint8_t> in_copy(in.ptr(),
                                         in.ptr() + count * sizeof(T));

            ucg_op_reduce(&desc, in.ptr(), io.ptr(), count);

            size_t errors = 0;
            for (size_t k = 0; k < count; ++k) {
                T expected = ref(op, in_vals[k], io_vals[k]);
                T result   = load_value<T>(io.ptr(), k);
                if (!same(result, expected, K()) && (++errors <= 5)) {
                    ADD_FAILURE() << "element " << k << ": "
                                  << str(in_vals[k], K()) << " op "
                                  << str(io_vals[k], K()) << " = "
                                  << str(result, K()) << ", expected "
                                  << str(expected, K());
                }
            }
            EXPECT_EQ(0u, errors);
            EXPECT_TRUE(in.guards_intact());
            EXPECT_TRUE(io.guards_intact());
            EXPECT_TRUE(std::equal(in_copy.begin(), in_copy.end(), in.ptr()))
                << "in was modified";
        }
    }

    /* in == inout: every element combined with itself */
    for (size_t count : {7, 1000}) {
        SCOPED_TRACE("aliased, count " + std::to_string(count));
        std::vector<T> vals(count);
        test_buffer buf(count * sizeof(T), 0);

        for (size_t k = 0; k < count; ++k) {
            vals[k] = gen<T>(rng);
        }
        store_values(rng, buf.ptr(), vals);
        ucg_op_reduce(&desc, buf.ptr(), buf.ptr(), count);

        size_t errors = 0;
        for (size_t k = 0; k < count; ++k) {
            if (!same(load_value<T>(buf.ptr(), k), ref(op, vals[k], vals[k]),
                      K())) {
                ++errors;
            }
        }
        EXPECT_EQ(0u, errors);
        EXPECT_TRUE(buf.guards_intact());
    }

    /*
     * Partly overlapping: inout ahead of in (a plain loop reads elements of
     * in that it has already written as inout) or behind it, by distances
     * below and above the chunks the reduction works in.  Elements whose
     * expected value is a NaN (chained products) are not compared.
     */
    const size_t count = 1000;
    for (size_t dist : {1, 3, 200}) {
        for (bool ahead : {true, false}) {
            SCOPED_TRACE("overlap " + std::to_string(dist) +
                         (ahead ? " ahead" : " behind"));
            std::vector<T> vals(count + dist);
            test_buffer buf((count + dist) * sizeof(T), 0);
            size_t in_pos = ahead ? 0 : dist;
            size_t io_pos = ahead ? dist : 0;

            for (size_t k = 0; k < count + dist; ++k) {
                vals[k] = gen<T>(rng);
            }
            store_values(rng, buf.ptr(), vals);
            ucg_op_reduce(&desc, buf.ptr() + in_pos * sizeof(T),
                          buf.ptr() + io_pos * sizeof(T), count);

            /* The plain loop, on the values */
            for (size_t k = 0; k < count; ++k) {
                vals[io_pos + k] = ref(op, vals[in_pos + k], vals[io_pos + k]);
            }

            size_t errors = 0;
            for (size_t k = 0; k < count + dist; ++k) {
                if (same(vals[k], vals[k], K()) &&
                    !same(load_value<T>(buf.ptr(), k), vals[k], K()) &&
                    (++errors <= 5)) {
                    ADD_FAILURE() << "element " << k << ": "
                                  << str(load_value<T>(buf.ptr(), k), K())
                                  << ", expected " << str(vals[k], K());
                }
            }
            EXPECT_EQ(0u, errors);
            EXPECT_TRUE(buf.guards_intact());
        }
    }
}

void check_reduce_dispatch(ucg_op_t op, ucg_dtype_t dt)
{
    switch (dt) {
    case UCG_DT_INT8:   return check_reduce<int8_t>(op, dt);
    case UCG_DT_UINT8:  return check_reduce<uint8_t>(op, dt);
    case UCG_DT_INT16:  return check_reduce<int16_t>(op, dt);
    case UCG_DT_UINT16: return check_reduce<uint16_t>(op, dt);
    case UCG_DT_INT32:  return check_reduce<int32_t>(op, dt);
    case UCG_DT_UINT32: return check_reduce<uint32_t>(op, dt);
    case UCG_DT_INT64:  return check_reduce<int64_t>(op, dt);
    case UCG_DT_UINT64: return check_reduce<uint64_t>(op, dt);
    case UCG_DT_FLOAT:  return check_reduce<float>(op, dt);
    case UCG_DT_DOUBLE: return check_reduce<double>(op, dt);
    case UCG_DT_LONG_DOUBLE:
        return check_reduce<long double>(op, dt);
    case UCG_DT_FLOAT_COMPLEX:
        return check_reduce<std::complex<float>>(op, dt);
    case UCG_DT_DOUBLE_COMPLEX:
        return check_reduce<std::complex<double>>(op, dt);
    case UCG_DT_LONG_DOUBLE_COMPLEX:
        return check_reduce<std::complex<long double>>(op, dt);
    case UCG_DT_FLOAT_INT:
        return check_reduce<dt_pair<float>>(op, dt);
    case UCG_DT_DOUBLE_INT:
        return check_reduce<dt_pair<double>>(op, dt);
    case UCG_DT_LONG_INT:
        return check_reduce<dt_pair<long>>(op, dt);
    case UCG_DT_2INT:
        return check_reduce<dt_pair<int>>(op, dt);
    case UCG_DT_SHORT_INT:
        return check_reduce<dt_pair<short>>(op, dt);
    case UCG_DT_LONG_DOUBLE_INT:
        return check_reduce<dt_pair<long double>>(op, dt);
    case UCG_DT_2FLOAT:
        return check_reduce<dt_pair<float, float>>(op, dt);
    case UCG_DT_2DOUBLE:
        return check_reduce<dt_pair<double, double>>(op, dt);
    default:
        FAIL() << "no typed test for " << ucg_dtype_name(dt);
    }
}


/* ------------------------------------------------------------------------ */
/* Every valid predefined (op, dtype)                                       */

struct op_dt {
    ucg_op_t    op;
    ucg_dtype_t dt;
};

std::vector<op_dt> predefined_pairs()
{
    std::vector<op_dt> pairs;

    for (int op = 0; op < UCG_OP_LAST; ++op) {
        for (int dt = 0; dt < UCG_DT_LAST; ++dt) {
            if ((op != UCG_OP_USER) && mpi_valid((ucg_op_t)op,
                                                 (ucg_dtype_t)dt)) {
                pairs.push_back({(ucg_op_t)op, (ucg_dtype_t)dt});
            }
        }
    }
    return pairs;
}

std::string pair_name(const testing::TestParamInfo<op_dt> &info)
{
    return std::string(expected_op_names[info.param.op]) + "_" +
           expected_dtype_names[info.param.dt];
}

class test_ucg_dt_reduce : public testing::TestWithParam<op_dt> {
};

TEST_P(test_ucg_dt_reduce, reference)
{
    check_reduce_dispatch(GetParam().op, GetParam().dt);
}

TEST_P(test_ucg_dt_reduce, properties)
{
    ucg_op_desc_t desc = make_desc(GetParam().op, GetParam().dt);

    EXPECT_EQ(GetParam().op, desc.op);
    EXPECT_EQ(GetParam().dt, desc.dtype);
    EXPECT_EQ(expected_size(GetParam().dt), desc.dt_size);
    EXPECT_TRUE(ucg_op_is_commutative(&desc));
}

INSTANTIATE_TEST_SUITE_P(all, test_ucg_dt_reduce,
                         testing::ValuesIn(predefined_pairs()), pair_name);


/* ------------------------------------------------------------------------ */
/* Validity, sizes, names                                                    */

TEST(test_ucg_dt, valid_matrix)
{
    for (int op = 0; op < UCG_OP_LAST; ++op) {
        for (int dt = 0; dt < UCG_DT_LAST; ++dt) {
            EXPECT_EQ(mpi_valid((ucg_op_t)op, (ucg_dtype_t)dt),
                      !!ucg_op_valid((ucg_op_t)op, (ucg_dtype_t)dt))
                << expected_op_names[op] << " on " << expected_dtype_names[dt];
        }
        EXPECT_FALSE(ucg_op_valid((ucg_op_t)op, UCG_DT_LAST));
        EXPECT_FALSE(ucg_op_valid((ucg_op_t)op, (ucg_dtype_t)-1));
    }
    for (int dt = 0; dt <= UCG_DT_LAST; ++dt) {
        EXPECT_FALSE(ucg_op_valid(UCG_OP_LAST, (ucg_dtype_t)dt));
        EXPECT_FALSE(ucg_op_valid((ucg_op_t)-1, (ucg_dtype_t)dt));
    }
}

TEST(test_ucg_dt, sizes)
{
    for (int dt = 0; dt < UCG_DT_LAST; ++dt) {
        EXPECT_EQ(expected_size((ucg_dtype_t)dt),
                  ucg_dtype_size((ucg_dtype_t)dt))
            << expected_dtype_names[dt];
    }
    EXPECT_EQ(0u, ucg_dtype_size(UCG_DT_BYTES));
    EXPECT_EQ(0u, ucg_dtype_size(UCG_DT_LAST));
    EXPECT_EQ(0u, ucg_dtype_size((ucg_dtype_t)-1));
    /* The C layouts MPI defines */
    EXPECT_EQ(2 * sizeof(float), ucg_dtype_size(UCG_DT_FLOAT_INT));
    EXPECT_EQ(2 * sizeof(int), ucg_dtype_size(UCG_DT_2INT));
    EXPECT_EQ(2 * sizeof(long double), ucg_dtype_size(UCG_DT_LONG_DOUBLE_INT));
}

TEST(test_ucg_dt, names)
{
    for (int dt = 0; dt < UCG_DT_LAST; ++dt) {
        ucg_dtype_t parsed = UCG_DT_LAST;

        EXPECT_STREQ(expected_dtype_names[dt],
                     ucg_dtype_name((ucg_dtype_t)dt));
        EXPECT_EQ(1, ucg_dtype_from_name(expected_dtype_names[dt], &parsed));
        EXPECT_EQ(dt, (int)parsed);
    }
    for (int op = 0; op < UCG_OP_LAST; ++op) {
        ucg_op_t parsed = UCG_OP_LAST;

        EXPECT_STREQ(expected_op_names[op], ucg_op_name((ucg_op_t)op));
        EXPECT_EQ(1, ucg_op_from_name(expected_op_names[op], &parsed));
        EXPECT_EQ(op, (int)parsed);
    }

    ucg_dtype_t dt = UCG_DT_INT8;
    ucg_op_t op    = UCG_OP_SUM;
    EXPECT_EQ(1, ucg_dtype_from_name("DOUBLE", &dt));
    EXPECT_EQ(UCG_DT_DOUBLE, dt);
    EXPECT_EQ(1, ucg_op_from_name("MaxLoc", &op));
    EXPECT_EQ(UCG_OP_MAXLOC, op);

    dt = UCG_DT_INT8;
    op = UCG_OP_SUM;
    EXPECT_EQ(0, ucg_dtype_from_name("int", &dt));
    EXPECT_EQ(0, ucg_dtype_from_name("", &dt));
    EXPECT_EQ(0, ucg_dtype_from_name(NULL, &dt));
    EXPECT_EQ(0, ucg_op_from_name("add", &op));
    EXPECT_EQ(0, ucg_op_from_name(NULL, &op));
    EXPECT_EQ(UCG_DT_INT8, dt);
    EXPECT_EQ(UCG_OP_SUM, op);

    /* Out of range: a printable name, not a crash */
    ASSERT_NE(nullptr, ucg_dtype_name(UCG_DT_LAST));
    ASSERT_NE(nullptr, ucg_op_name(UCG_OP_LAST));
    ASSERT_NE(nullptr, ucg_dtype_name((ucg_dtype_t)-1));
    ASSERT_NE(nullptr, ucg_op_name((ucg_op_t)12345));
    for (int dt2 = 0; dt2 < UCG_DT_LAST; ++dt2) {
        EXPECT_STRNE(ucg_dtype_name((ucg_dtype_t)dt2),
                     ucg_dtype_name(UCG_DT_LAST));
    }
}


/* ------------------------------------------------------------------------ */
/* Invalid parameters                                                        */

void expect_invalid(ucg_op_t op, ucg_dtype_t dt, size_t dt_size,
                    const ucg_user_op_t *user_op)
{
    std::vector<std::string> captured_errors;
    ucg_op_desc_t desc;
    ucs_status_t status;

    {
        o2m_test::scoped_log_capture capture;
        status          = ucg_op_desc_init(&desc, op, dt, dt_size, user_op);
        captured_errors = capture.lines();
    }

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, status)
        << "op " << (int)op << " dtype " << (int)dt;
    ASSERT_EQ(1u, captured_errors.size())
        << "op " << (int)op << " dtype " << (int)dt;
    if (((unsigned)op < UCG_OP_LAST) && ((unsigned)dt < UCG_DT_LAST)) {
        EXPECT_NE(std::string::npos,
                  captured_errors[0].find(expected_op_names[op]))
            << captured_errors[0];
        EXPECT_NE(std::string::npos,
                  captured_errors[0].find(expected_dtype_names[dt]))
            << captured_errors[0];
    }
}

void dummy_user_func(void *arg, const void *in, void *inout, size_t count)
{
}

TEST(test_ucg_dt, invalid)
{
    for (int op = 0; op < UCG_OP_LAST; ++op) {
        for (int dt = 0; dt < UCG_DT_LAST; ++dt) {
            if (!mpi_valid((ucg_op_t)op, (ucg_dtype_t)dt) ||
                (dt == UCG_DT_BYTES)) {
                /* BYTES with a size: still only USER */
                if (op != UCG_OP_USER) {
                    expect_invalid((ucg_op_t)op, (ucg_dtype_t)dt, 4, NULL);
                }
            }
        }
    }

    ucg_user_op_t user = {dummy_user_func, NULL, 1};
    ucg_user_op_t nofunc = {NULL, NULL, 1};

    /* Out of range */
    expect_invalid(UCG_OP_LAST, UCG_DT_INT32, 0, NULL);
    expect_invalid((ucg_op_t)-1, UCG_DT_INT32, 0, NULL);
    expect_invalid(UCG_OP_SUM, UCG_DT_LAST, 0, NULL);
    expect_invalid(UCG_OP_SUM, (ucg_dtype_t)1000, 0, NULL);
    expect_invalid(UCG_OP_USER, UCG_DT_LAST, 4, &user);
    /* User op without function */
    expect_invalid(UCG_OP_USER, UCG_DT_INT32, 0, NULL);
    expect_invalid(UCG_OP_USER, UCG_DT_INT32, 0, &nofunc);
    expect_invalid(UCG_OP_USER, UCG_DT_BYTES, 8, &nofunc);
    /* Opaque bytes need a size */
    expect_invalid(UCG_OP_USER, UCG_DT_BYTES, 0, &user);
}


/* ------------------------------------------------------------------------ */
/* User operations                                                           */

struct user_call {
    int         calls;
    const void  *in;
    void        *inout;
    size_t      count;
    size_t      dt_size;
};

/* Byte-wise inout = in * 3 + inout: order matters */
void bytes_user_func(void *arg, const void *in, void *inout, size_t count)
{
    user_call *c = (user_call*)arg;
    const uint8_t *src = (const uint8_t*)in;
    uint8_t *dst       = (uint8_t*)inout;

    ++c->calls;
    c->in    = in;
    c->inout = inout;
    c->count = count;
    for (size_t b = 0; b < count * c->dt_size; ++b) {
        dst[b] = (uint8_t)(src[b] * 3 + dst[b]);
    }
}

TEST(test_ucg_dt, user_any_dtype)
{
    for (int dt = 0; dt < UCG_DT_LAST; ++dt) {
        SCOPED_TRACE(expected_dtype_names[dt]);
        const size_t count  = 13;
        size_t dt_size      = (dt == UCG_DT_BYTES) ? 3 : expected_size(
                                                      (ucg_dtype_t)dt);
        user_call call      = {};
        call.dt_size        = dt_size;
        ucg_user_op_t user  = {bytes_user_func, &call, 0};
        ucg_op_desc_t desc;

        /* dt_size is ignored except for BYTES */
        ASSERT_EQ(UCS_OK, ucg_op_desc_init(&desc, UCG_OP_USER,
                                           (ucg_dtype_t)dt,
                                           (dt == UCG_DT_BYTES) ? 3 : 999,
                                           &user));
        EXPECT_EQ(dt_size, desc.dt_size);
        EXPECT_FALSE(ucg_op_is_commutative(&desc));

        std::vector<uint8_t> in(count * dt_size), io(count * dt_size);
        for (size_t b = 0; b < in.size(); ++b) {
            in[b] = (uint8_t)(b * 7 + 1);
            io[b] = (uint8_t)(b * 5 + 2);
        }
        std::vector<uint8_t> expected(io.size());
        for (size_t b = 0; b < io.size(); ++b) {
            expected[b] = (uint8_t)(in[b] * 3 + io[b]);
        }

        ucg_op_reduce(&desc, in.data() + 0, io.data(), count);
        EXPECT_EQ(1, call.calls);
        EXPECT_EQ(in.data(), call.in);
        EXPECT_EQ(io.data(), call.inout);
        EXPECT_EQ(count, call.count);
        EXPECT_EQ(expected, io);

        /* The user's flag decides */
        user.commutative = 1;
        ASSERT_EQ(UCS_OK, ucg_op_desc_init(&desc, UCG_OP_USER,
                                           (ucg_dtype_t)dt, dt_size, &user));
        EXPECT_TRUE(ucg_op_is_commutative(&desc));
    }
}

/* 2x2 integer matrices: inout = in x inout (not commutative) */
struct mat2 {
    int64_t m[4];
};

void matmul_user_func(void *arg, const void *in, void *inout, size_t count)
{
    const mat2 *a = (const mat2*)in;
    mat2 *b       = (mat2*)inout;

    *(int*)arg += 1;
    for (size_t k = 0; k < count; ++k) {
        mat2 r;
        r.m[0] = a[k].m[0] * b[k].m[0] + a[k].m[1] * b[k].m[2];
        r.m[1] = a[k].m[0] * b[k].m[1] + a[k].m[1] * b[k].m[3];
        r.m[2] = a[k].m[2] * b[k].m[0] + a[k].m[3] * b[k].m[2];
        r.m[3] = a[k].m[2] * b[k].m[1] + a[k].m[3] * b[k].m[3];
        b[k]   = r;
    }
}

TEST(test_ucg_dt, user_non_commutative_order)
{
    int calls          = 0;
    ucg_user_op_t user = {matmul_user_func, &calls, 0};
    ucg_op_desc_t desc;

    ASSERT_EQ(UCS_OK, ucg_op_desc_init(&desc, UCG_OP_USER, UCG_DT_BYTES,
                                       sizeof(mat2), &user));
    EXPECT_EQ(sizeof(mat2), desc.dt_size);
    EXPECT_FALSE(ucg_op_is_commutative(&desc));
    EXPECT_FALSE(ucg_op_to_o2m(&desc, NULL, NULL));

    /* A = [[1,2],[3,4]], B = [[0,1],[1,0]]: AB = [[2,1],[4,3]],
     * BA = [[3,4],[1,2]] */
    std::vector<mat2> in(5, mat2{{1, 2, 3, 4}});
    std::vector<mat2> io(5, mat2{{0, 1, 1, 0}});

    ucg_op_reduce(&desc, in.data(), io.data(), io.size());
    EXPECT_EQ(1, calls);
    for (const mat2 &r : io) {
        EXPECT_EQ(2, r.m[0]);
        EXPECT_EQ(1, r.m[1]);
        EXPECT_EQ(4, r.m[2]);
        EXPECT_EQ(3, r.m[3]);
    }

    /* count 0 must not make the result differ; the user function may or
     * may not be called, but must see count 0 if it is */
    ucg_op_reduce(&desc, in.data(), io.data(), 0);
    EXPECT_EQ(2, io[0].m[0]);
}

/* inout = in * 10 + inout on int32 */
void decimal_user_func(void *arg, const void *in, void *inout, size_t count)
{
    const int32_t *a = (const int32_t*)in;
    int32_t *b       = (int32_t*)inout;

    for (size_t k = 0; k < count; ++k) {
        b[k] = a[k] * 10 + b[k];
    }
}

TEST(test_ucg_dt, user_fold_in_rank_order)
{
    ucg_user_op_t user = {decimal_user_func, NULL, 0};
    ucg_op_desc_t desc;

    ASSERT_EQ(UCS_OK, ucg_op_desc_init(&desc, UCG_OP_USER, UCG_DT_INT32, 0,
                                       &user));
    EXPECT_EQ(sizeof(int32_t), desc.dt_size);

    /* Fold the contributions of ranks 0..4 (values 1..5) from the highest
     * rank down, lower ranks always in "in":
     * 1*10 + (2*10 + (3*10 + (4*10 + 5))) = 105; with in and inout swapped
     * it would be (((5*10 + 4)*10 + 3)*10 + 2)*10 + 1 = 54321 */
    int32_t acc = 5;
    for (int32_t rank = 3; rank >= 0; --rank) {
        int32_t contrib = rank + 1;
        ucg_op_reduce(&desc, &contrib, &acc, 1);
    }
    EXPECT_EQ(105, acc);
}


/* ------------------------------------------------------------------------ */
/* Mapping to the sm_incast transport                                       */

/* Arbitrary finite values (any exponent, -0.0, denormals), which the
 * transport must round exactly as UCG does; random bits for integers */
template <typename T> void gen_o2m_values(rng_t &rng, T *vals, size_t count)
{
    for (size_t k = 0; k < count; ++k) {
        do {
            uint64_t bits = rng();
            if ((rng() % 8) == 0) {
                bits &= 0xf; /* small values and zeros */
            }
            memcpy(&vals[k], &bits, sizeof(T));
        } while (std::is_floating_point<T>::value &&
                 !std::isfinite((double)vals[k]));
        if (std::is_floating_point<T>::value && ((rng() % 16) == 0)) {
            vals[k] = -vals[k] * 0; /* +-0.0 */
        }
    }
}

template <typename T>
void check_o2m_kernel(ucg_op_t op, ucg_dtype_t dt, uct_o2m_op_t o2m_op,
                      uct_o2m_dtype_t o2m_dt)
{
    const size_t count = 1000;
    ucg_op_desc_t desc = make_desc(op, dt);
    rng_t rng(77 * op + dt);
    std::vector<T> in(count), io(count);

    gen_o2m_values(rng, in.data(), count);
    gen_o2m_values(rng, io.data(), count);
    /* Some equal elements (ties of MIN/MAX, x op x) */
    for (size_t k = 0; k < count; k += 5) {
        in[k] = io[k];
    }

    std::vector<T> ucg_io(io), o2m_io(io);
    ucg_op_reduce(&desc, in.data(), ucg_io.data(), count);
    uct_o2m_reduce(o2m_op, o2m_dt, o2m_io.data(), in.data(), count);
    EXPECT_EQ(0, memcmp(ucg_io.data(), o2m_io.data(), count * sizeof(T)))
        << ucg_op_name(op) << " " << ucg_dtype_name(dt);

    /* Unaligned UCG buffers too */
    std::vector<uint8_t> raw_in(count * sizeof(T) + 1);
    std::vector<uint8_t> raw_io(count * sizeof(T) + 1);
    memcpy(raw_in.data() + 1, in.data(), count * sizeof(T));
    memcpy(raw_io.data() + 1, io.data(), count * sizeof(T));
    ucg_op_reduce(&desc, raw_in.data() + 1, raw_io.data() + 1, count);
    EXPECT_EQ(0, memcmp(raw_io.data() + 1, o2m_io.data(), count * sizeof(T)))
        << ucg_op_name(op) << " " << ucg_dtype_name(dt) << " unaligned";
}

TEST(test_ucg_dt, to_o2m)
{
    size_t mapped = 0;

    for (int op = 0; op < UCG_OP_LAST; ++op) {
        for (int dt = 0; dt < UCG_DT_LAST; ++dt) {
            if (!mpi_valid((ucg_op_t)op, (ucg_dtype_t)dt)) {
                continue;
            }
            SCOPED_TRACE(std::string(expected_op_names[op]) + " " +
                         expected_dtype_names[dt]);

            ucg_user_op_t user = {dummy_user_func, NULL, 1};
            ucg_op_desc_t desc;
            ASSERT_EQ(UCS_OK, ucg_op_desc_init(&desc, (ucg_op_t)op,
                                               (ucg_dtype_t)dt, 8, &user));

            uct_o2m_op_t o2m_op      = UCT_O2M_OP_LAST;
            uct_o2m_dtype_t o2m_dt   = UCT_O2M_DT_LAST;
            int ret = ucg_op_to_o2m(&desc, &o2m_op, &o2m_dt);
            ASSERT_EQ(o2m_expected((ucg_op_t)op, (ucg_dtype_t)dt), !!ret);
            if (!ret) {
                continue;
            }

            ++mapped;
            /* Same names on both sides: same operation, same type */
            EXPECT_STREQ(ucg_op_name((ucg_op_t)op), uct_o2m_op_name(o2m_op));
            EXPECT_STREQ(ucg_dtype_name((ucg_dtype_t)dt),
                         uct_o2m_dtype_name(o2m_dt));
            EXPECT_EQ(ucg_dtype_size((ucg_dtype_t)dt),
                      uct_o2m_dtype_size(o2m_dt));
            ASSERT_TRUE(uct_o2m_reduce_supported(o2m_op, o2m_dt));
            /* One implementation: UCG reduces with the plugin's kernel */
            EXPECT_EQ((void*)uct_o2m_reduce_func(o2m_op, o2m_dt),
                      (void*)desc.reduce);
            for (int mode = 0; mode < UCT_O2M_MODE_LAST; ++mode) {
                EXPECT_TRUE(uct_o2m_op_supported((uct_o2m_mode_t)mode,
                                                 o2m_op, o2m_dt))
                    << uct_o2m_mode_name((uct_o2m_mode_t)mode);
            }

            switch (dt) {
            case UCG_DT_INT8:
                check_o2m_kernel<int8_t>((ucg_op_t)op, (ucg_dtype_t)dt,
                                         o2m_op, o2m_dt);
                break;
            case UCG_DT_UINT8:
                check_o2m_kernel<uint8_t>((ucg_op_t)op, (ucg_dtype_t)dt,
                                          o2m_op, o2m_dt);
                break;
            case UCG_DT_INT16:
                check_o2m_kernel<int16_t>((ucg_op_t)op, (ucg_dtype_t)dt,
                                          o2m_op, o2m_dt);
                break;
            case UCG_DT_UINT16:
                check_o2m_kernel<uint16_t>((ucg_op_t)op, (ucg_dtype_t)dt,
                                           o2m_op, o2m_dt);
                break;
            case UCG_DT_INT32:
                check_o2m_kernel<int32_t>((ucg_op_t)op, (ucg_dtype_t)dt,
                                          o2m_op, o2m_dt);
                break;
            case UCG_DT_UINT32:
                check_o2m_kernel<uint32_t>((ucg_op_t)op, (ucg_dtype_t)dt,
                                           o2m_op, o2m_dt);
                break;
            case UCG_DT_INT64:
                check_o2m_kernel<int64_t>((ucg_op_t)op, (ucg_dtype_t)dt,
                                          o2m_op, o2m_dt);
                break;
            case UCG_DT_UINT64:
                check_o2m_kernel<uint64_t>((ucg_op_t)op, (ucg_dtype_t)dt,
                                           o2m_op, o2m_dt);
                break;
            case UCG_DT_FLOAT:
                check_o2m_kernel<float>((ucg_op_t)op, (ucg_dtype_t)dt,
                                        o2m_op, o2m_dt);
                break;
            case UCG_DT_DOUBLE:
                check_o2m_kernel<double>((ucg_op_t)op, (ucg_dtype_t)dt,
                                         o2m_op, o2m_dt);
                break;
            default:
                ADD_FAILURE() << "mapped a type the transport does not have";
            }
        }
    }

    /* 8 integer types x 10 ops + float/double x SUM PROD MIN MAX */
    EXPECT_EQ(8u * 10 + 2 * 4, mapped);
}

} // namespace
