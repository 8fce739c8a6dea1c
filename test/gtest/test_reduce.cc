/**
 * ucx-o2m: tests of the reduction kernels (o2m_reduce.h) and of the small
 * public helpers of uct_o2m.h (op_supported, dtype_size, names).
 *
 * Every (op, dtype) is checked against a reference written here, for the
 * plain kernels (any alignment, sizes around the vector block) and for the
 * atomic ones (single thread, and 4 threads reducing into one destination).
 */
#include "common/o2m_values.h"

#include <gtest/gtest.h>

extern "C" {
#include "o2m_reduce.h"
}

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using o2m_test::all_dtypes;
using o2m_test::all_modes;
using o2m_test::all_ops;

namespace {

/* The reductions (GATHER excluded) */
const uct_o2m_op_t reduce_ops[] = {
    UCT_O2M_OP_SUM,  UCT_O2M_OP_PROD, UCT_O2M_OP_MIN,  UCT_O2M_OP_MAX,
    UCT_O2M_OP_BAND, UCT_O2M_OP_BOR,  UCT_O2M_OP_BXOR, UCT_O2M_OP_LAND,
    UCT_O2M_OP_LOR,  UCT_O2M_OP_LXOR
};

bool is_bitwise(uct_o2m_op_t op)
{
    return (op == UCT_O2M_OP_BAND) || (op == UCT_O2M_OP_BOR) ||
           (op == UCT_O2M_OP_BXOR);
}

bool is_fp(uct_o2m_dtype_t dtype)
{
    return (dtype == UCT_O2M_DT_FLOAT) || (dtype == UCT_O2M_DT_DOUBLE);
}

/* Element counts: around the 256-byte inner block of every element size */
const size_t test_counts[] = {0, 1, 2, 3, 7, 8, 15, 31, 32, 33, 63, 64, 65,
                              127, 128, 129, 255, 256, 257, 1000, 4099};


template <typename T> struct dtype_of;
#define O2M_DTYPE_OF(_type, _dt) \
    template <> struct dtype_of<_type> { \
        static constexpr uct_o2m_dtype_t value = _dt; \
    };
O2M_DTYPE_OF(int8_t,   UCT_O2M_DT_INT8)
O2M_DTYPE_OF(uint8_t,  UCT_O2M_DT_UINT8)
O2M_DTYPE_OF(int16_t,  UCT_O2M_DT_INT16)
O2M_DTYPE_OF(uint16_t, UCT_O2M_DT_UINT16)
O2M_DTYPE_OF(int32_t,  UCT_O2M_DT_INT32)
O2M_DTYPE_OF(uint32_t, UCT_O2M_DT_UINT32)
O2M_DTYPE_OF(int64_t,  UCT_O2M_DT_INT64)
O2M_DTYPE_OF(uint64_t, UCT_O2M_DT_UINT64)
O2M_DTYPE_OF(float,    UCT_O2M_DT_FLOAT)
O2M_DTYPE_OF(double,   UCT_O2M_DT_DOUBLE)
#undef O2M_DTYPE_OF


/*
 * Reference implementation, on purpose not the one of o2m_reduce.c:
 * integers wrap through 64-bit unsigned arithmetic, min/max through
 * std::min/std::max (no -0.0 in the inputs), NaN handled explicitly.
 */
template <typename T, bool = std::is_integral<T>::value> struct ref;

template <typename T> struct ref<T, true> {
    static T apply(uct_o2m_op_t op, T a, T b)
    {
        uint64_t ua = static_cast<uint64_t>(a); /* sign-extends */
        uint64_t ub = static_cast<uint64_t>(b);

        switch (op) {
        case UCT_O2M_OP_SUM:  return static_cast<T>(ua + ub);
        case UCT_O2M_OP_PROD: return static_cast<T>(ua * ub);
        case UCT_O2M_OP_MIN:  return std::min(a, b);
        case UCT_O2M_OP_MAX:  return std::max(a, b);
        case UCT_O2M_OP_BAND: return static_cast<T>(ua & ub);
        case UCT_O2M_OP_BOR:  return static_cast<T>(ua | ub);
        case UCT_O2M_OP_BXOR: return static_cast<T>(ua ^ ub);
        case UCT_O2M_OP_LAND: return (a && b) ? 1 : 0;
        case UCT_O2M_OP_LOR:  return (a || b) ? 1 : 0;
        case UCT_O2M_OP_LXOR: return ((a == 0) != (b == 0)) ? 1 : 0;
        default:
            ADD_FAILURE() << "no reference for op " << op;
            return 0;
        }
    }

    static T identity(uct_o2m_op_t op)
    {
        switch (op) {
        case UCT_O2M_OP_MIN:  return std::numeric_limits<T>::max();
        case UCT_O2M_OP_MAX:  return std::numeric_limits<T>::min();
        case UCT_O2M_OP_PROD:
        case UCT_O2M_OP_LAND: return 1;
        case UCT_O2M_OP_BAND: return static_cast<T>(~static_cast<uint64_t>(0));
        default:              return 0;
        }
    }

    static bool equal(T a, T b)
    {
        return a == b;
    }
};

template <typename T> struct ref<T, false> {
    static T apply(uct_o2m_op_t op, T a, T b)
    {
        const bool ta = !(a == T(0)); /* NaN is true */
        const bool tb = !(b == T(0));

        switch (op) {
        case UCT_O2M_OP_SUM:  return a + b;
        case UCT_O2M_OP_PROD: return a * b;
        /* Documented: src when either is NaN, the C comparison otherwise */
        case UCT_O2M_OP_MIN:
            return (std::isnan(a) || std::isnan(b)) ? b : std::min(a, b);
        case UCT_O2M_OP_MAX:
            return (std::isnan(a) || std::isnan(b)) ? b : std::max(a, b);
        case UCT_O2M_OP_LAND: return (ta && tb) ? T(1) : T(0);
        case UCT_O2M_OP_LOR:  return (ta || tb) ? T(1) : T(0);
        case UCT_O2M_OP_LXOR: return (ta != tb) ? T(1) : T(0);
        default:
            ADD_FAILURE() << "no reference for op " << op;
            return 0;
        }
    }

    static T identity(uct_o2m_op_t op)
    {
        switch (op) {
        case UCT_O2M_OP_MIN:  return std::numeric_limits<T>::infinity();
        case UCT_O2M_OP_MAX:  return -std::numeric_limits<T>::infinity();
        case UCT_O2M_OP_PROD:
        case UCT_O2M_OP_LAND: return 1;
        default:              return 0;
        }
    }

    /* +0.0 == -0.0, and a NaN equals a NaN */
    static bool equal(T a, T b)
    {
        return (a == b) || (std::isnan(a) && std::isnan(b));
    }
};


template <typename T>
std::string to_str(T v)
{
    return std::is_integral<T>::value ?
           std::to_string(static_cast<long long>(v)) +
           (std::is_unsigned<T>::value ?
            " (u" + std::to_string(static_cast<unsigned long long>(v)) + ")" :
            "") :
           std::to_string(static_cast<double>(v));
}

template <typename T>
T load(const void *p, size_t i)
{
    T v;
    memcpy(&v, static_cast<const char*>(p) + i * sizeof(T), sizeof(T));
    return v;
}

template <typename T>
void store(void *p, size_t i, T v)
{
    memcpy(static_cast<char*>(p) + i * sizeof(T), &v, sizeof(T));
}


/* Inputs: full range with edge values, or small exact values */
enum input_kind {
    INPUT_FULL,
    INPUT_SMALL
};

template <typename T, bool = std::is_integral<T>::value> struct gen;

template <typename T> struct gen<T, true> {
    typedef typename std::conditional<std::is_signed<T>::value, long long,
                                      unsigned long long>::type wide_t;

    static T value(std::mt19937_64 &rng, input_kind kind)
    {
        typedef std::numeric_limits<T> lim;
        const T edges[] = {lim::min(), lim::max(), T(0), T(1), T(-1),
                           T(lim::min() + 1), T(lim::max() - 1), T(2)};
        std::uniform_int_distribution<wide_t> full(lim::min(), lim::max());
        std::uniform_int_distribution<int> small(std::is_signed<T>::value ?
                                                 -2 : 0, 3);
        unsigned r = rng() % 8;

        if (kind == INPUT_SMALL) {
            return static_cast<T>(small(rng));
        } else if (r < 2) {
            return 0;
        } else if (r < 4) {
            return edges[rng() % (sizeof(edges) / sizeof(edges[0]))];
        } else {
            return static_cast<T>(full(rng));
        }
    }
};

template <typename T> struct gen<T, false> {
    static T value(std::mt19937_64 &rng, input_kind kind)
    {
        typedef std::numeric_limits<T> lim;
        const T edges[] = {lim::max(), lim::lowest(), lim::min(),
                           lim::denorm_min(), lim::infinity(),
                           -lim::infinity(), lim::quiet_NaN(), T(0), T(1),
                           T(-1)};
        /* Exact with each other: small powers of two and their sums */
        const T smalls[] = {T(-2), T(-1), T(-0.5), T(0), T(0.5), T(1), T(2)};
        std::uniform_int_distribution<int> eighths(-64, 64);
        unsigned r = rng() % 8;

        if (kind == INPUT_SMALL) {
            return smalls[rng() % (sizeof(smalls) / sizeof(smalls[0]))];
        } else if (r < 1) {
            return 0;
        } else if (r < 2) {
            return edges[rng() % (sizeof(edges) / sizeof(edges[0]))];
        } else {
            /* k/8: sums and products of two are exact */
            return T(eighths(rng)) / T(8);
        }
    }
};

template <typename T>
std::vector<T> make_input(std::mt19937_64 &rng, size_t count,
                          input_kind kind)
{
    std::vector<T> v(count);

    for (size_t i = 0; i < count; ++i) {
        v[i] = gen<T>::value(rng, kind);
    }
    return v;
}


template <typename T>
class test_o2m_reduce : public ::testing::Test {
protected:
    typedef ref<T> ref_t;
    static constexpr uct_o2m_dtype_t dtype = dtype_of<T>::value;

    test_o2m_reduce() : m_rng(0x5eed0000u + dtype)
    {
    }

    /* Reduce with the plain (atomic=false) or atomic kernel, dst at offset
     * dst_off and src at offset src_off from a malloc-aligned address, and
     * compare with the reference. */
    void check(uct_o2m_op_t op, size_t count, size_t dst_off, size_t src_off,
               bool atomic)
    {
        std::vector<T> a = make_input<T>(m_rng, count, INPUT_FULL);
        std::vector<T> b = make_input<T>(m_rng, count, INPUT_FULL);
        /* One guard element after the end of dst */
        std::vector<char> dst_buf((count + 1) * sizeof(T) + dst_off);
        std::vector<char> src_buf(count * sizeof(T) + src_off + 1);
        void *dst = &dst_buf[dst_off];
        void *src = &src_buf[src_off];
        const T guard = T(42);

        for (size_t i = 0; i < count; ++i) {
            store(dst, i, a[i]);
            store(src, i, b[i]);
        }
        store(dst, count, guard);

        if (atomic) {
            uct_o2m_reduce_atomic(op, dtype, dst, src, count);
        } else {
            uct_o2m_reduce(op, dtype, dst, src, count);
        }

        for (size_t i = 0; i < count; ++i) {
            T expected = ref_t::apply(op, a[i], b[i]);
            T actual   = load<T>(dst, i);
            ASSERT_TRUE(ref_t::equal(expected, actual))
                << uct_o2m_op_name(op) << "/" << uct_o2m_dtype_name(dtype)
                << (atomic ? " atomic" : "") << " count " << count
                << " dst_off " << dst_off << " src_off " << src_off
                << " [" << i << "]: " << to_str(a[i]) << " op "
                << to_str(b[i]) << " = " << to_str(actual) << ", expected "
                << to_str(expected);
            /* src is not modified */
            ASSERT_EQ(0, memcmp(&b[i], static_cast<char*>(src) + i * sizeof(T),
                                sizeof(T)));
        }
        ASSERT_TRUE(ref_t::equal(guard, load<T>(dst, count)))
            << "wrote past the end";
    }

    /*
     * nthreads threads reduce their own arrays into one destination,
     * initialised with the identity, with the atomic kernel, in rounds of
     * chunk elements, every thread over the same elements in the same
     * order (to collide).  Inputs are small and exact, so that the result
     * does not depend on the order.
     */
    void check_concurrent(uct_o2m_op_t op)
    {
        const unsigned nthreads = 4;
        const unsigned rounds   = 6;
        const size_t count      = 1031;
        const size_t chunk      = 64;
        std::vector<std::vector<T>> src(nthreads);
        std::vector<T> dst(count), expected(count);
        std::atomic<unsigned> ready(0);
        std::vector<std::thread> threads;

        for (unsigned t = 0; t < nthreads; ++t) {
            src[t] = make_input<T>(m_rng, count, INPUT_SMALL);
        }

        uct_o2m_reduce_identity(op, dtype, dst.data(), count);
        for (size_t i = 0; i < count; ++i) {
            expected[i] = ref_t::identity(op);
            for (unsigned r = 0; r < rounds; ++r) {
                for (unsigned t = 0; t < nthreads; ++t) {
                    expected[i] = ref_t::apply(op, expected[i], src[t][i]);
                }
            }
        }

        for (unsigned t = 0; t < nthreads; ++t) {
            threads.emplace_back([&, t]() {
                ready.fetch_add(1);
                while (ready.load() < nthreads) {
                }
                for (unsigned r = 0; r < rounds; ++r) {
                    for (size_t i = 0; i < count; i += chunk) {
                        uct_o2m_reduce_atomic(op, dtype, &dst[i], &src[t][i],
                                              std::min(chunk, count - i));
                    }
                }
            });
        }
        for (auto &th : threads) {
            th.join();
        }

        for (size_t i = 0; i < count; ++i) {
            ASSERT_TRUE(ref_t::equal(expected[i], dst[i]))
                << uct_o2m_op_name(op) << "/" << uct_o2m_dtype_name(dtype)
                << " concurrent [" << i << "]: " << to_str(dst[i])
                << ", expected " << to_str(expected[i]);
        }
    }

    std::mt19937_64 m_rng;
};

template <typename T> constexpr uct_o2m_dtype_t test_o2m_reduce<T>::dtype;

typedef ::testing::Types<int8_t, uint8_t, int16_t, uint16_t, int32_t,
                         uint32_t, int64_t, uint64_t, float, double>
        o2m_reduce_types;
TYPED_TEST_SUITE(test_o2m_reduce, o2m_reduce_types);


TYPED_TEST(test_o2m_reduce, plain_aligned)
{
    for (uct_o2m_op_t op : reduce_ops) {
        if (!uct_o2m_reduce_supported(op, this->dtype)) {
            continue;
        }
        for (size_t count : test_counts) {
            ASSERT_NO_FATAL_FAILURE(this->check(op, count, 0, 0, false));
        }
    }
}

TYPED_TEST(test_o2m_reduce, plain_unaligned)
{
    for (uct_o2m_op_t op : reduce_ops) {
        if (!uct_o2m_reduce_supported(op, this->dtype)) {
            continue;
        }
        for (size_t dst_off = 0; dst_off < 8; ++dst_off) {
            for (size_t src_off = 0; src_off < 8; src_off += 3) {
                for (size_t count : {5, 129, 1000}) {
                    ASSERT_NO_FATAL_FAILURE(
                        this->check(op, count, dst_off, src_off, false));
                }
            }
        }
    }
}

TYPED_TEST(test_o2m_reduce, atomic_single_thread)
{
    for (uct_o2m_op_t op : reduce_ops) {
        if (!uct_o2m_atomic_supported(op, this->dtype)) {
            continue;
        }
        for (size_t count : test_counts) {
            ASSERT_NO_FATAL_FAILURE(this->check(op, count, 0, 0, true));
        }
        /* dst aligned to the element size, src unaligned */
        for (size_t src_off = 1; src_off < 8; src_off += 2) {
            ASSERT_NO_FATAL_FAILURE(
                this->check(op, 257, sizeof(TypeParam), src_off, true));
        }
    }
}

TYPED_TEST(test_o2m_reduce, atomic_concurrent)
{
    for (uct_o2m_op_t op : reduce_ops) {
        if (!uct_o2m_atomic_supported(op, this->dtype)) {
            continue;
        }
        ASSERT_NO_FATAL_FAILURE(this->check_concurrent(op));
    }
}

TYPED_TEST(test_o2m_reduce, identity)
{
    typedef TypeParam T;
    const size_t count = 300;

    for (uct_o2m_op_t op : reduce_ops) {
        for (size_t off = 0; off < 2; ++off) {
            std::vector<char> buf((count + 1) * sizeof(T) + off, 0x5a);
            std::vector<char> orig(buf);
            void *dst = &buf[off];

            uct_o2m_reduce_identity(op, this->dtype, dst, count);
            if (!uct_o2m_reduce_supported(op, this->dtype)) {
                EXPECT_EQ(orig, buf) << "unsupported "
                                     << uct_o2m_op_name(op) << " wrote";
                continue;
            }

            for (size_t i = 0; i < count; ++i) {
                T expected = ref<T>::identity(op);
                T actual   = load<T>(dst, i);
                ASSERT_EQ(0, memcmp(&expected, &actual, sizeof(T)))
                    << uct_o2m_op_name(op) << "/"
                    << uct_o2m_dtype_name(this->dtype) << " [" << i
                    << "]: " << to_str(actual) << ", expected "
                    << to_str(expected);
            }
            EXPECT_EQ(0x5a, buf[off + count * sizeof(T)])
                << "wrote past the end";
        }
    }

    /* GATHER: zeroes */
    std::vector<T> v(count, T(7));
    uct_o2m_reduce_identity(UCT_O2M_OP_GATHER, this->dtype, v.data(), count);
    for (size_t i = 0; i < count; ++i) {
        EXPECT_EQ(T(0), v[i]);
    }
}

/* identity op x == x (logical ops: the truth value of x) */
TYPED_TEST(test_o2m_reduce, identity_is_neutral)
{
    typedef TypeParam T;
    const size_t count = 517;

    for (uct_o2m_op_t op : reduce_ops) {
        if (!uct_o2m_reduce_supported(op, this->dtype)) {
            continue;
        }

        for (bool atomic : {false, true}) {
            std::vector<T> x = make_input<T>(this->m_rng, count, INPUT_FULL);
            std::vector<T> dst(count);

            uct_o2m_reduce_identity(op, this->dtype, dst.data(), count);
            if (atomic) {
                uct_o2m_reduce_atomic(op, this->dtype, dst.data(), x.data(),
                                      count);
            } else {
                uct_o2m_reduce(op, this->dtype, dst.data(), x.data(), count);
            }

            for (size_t i = 0; i < count; ++i) {
                bool logical = (op == UCT_O2M_OP_LAND) ||
                               (op == UCT_O2M_OP_LOR) ||
                               (op == UCT_O2M_OP_LXOR);
                T expected   = logical ? (x[i] == T(0) ? T(0) : T(1)) : x[i];
                ASSERT_TRUE(ref<T>::equal(expected, dst[i]))
                    << uct_o2m_op_name(op) << "/"
                    << uct_o2m_dtype_name(this->dtype)
                    << (atomic ? " atomic" : "") << " [" << i << "]: "
                    << to_str(dst[i]) << ", expected " << to_str(expected);
            }
        }
    }
}

/* Unsupported pairs and GATHER leave dst alone */
TYPED_TEST(test_o2m_reduce, unsupported_is_noop)
{
    typedef TypeParam T;
    const size_t count = 64;
    std::vector<T> src = make_input<T>(this->m_rng, count, INPUT_FULL);

    for (uct_o2m_op_t op : all_ops) {
        bool plain_ok  = uct_o2m_reduce_supported(op, this->dtype) &&
                         (op != UCT_O2M_OP_GATHER);
        bool atomic_ok = uct_o2m_atomic_supported(op, this->dtype) &&
                         (op != UCT_O2M_OP_GATHER);

        EXPECT_EQ(plain_ok,
                  uct_o2m_reduce_func(op, this->dtype) != NULL);
        EXPECT_EQ(atomic_ok,
                  uct_o2m_reduce_atomic_func(op, this->dtype) != NULL);

        std::vector<T> dst(count, T(3)), orig(dst);
        if (!plain_ok) {
            uct_o2m_reduce(op, this->dtype, dst.data(), src.data(), count);
            EXPECT_EQ(0, memcmp(orig.data(), dst.data(), count * sizeof(T)))
                << uct_o2m_op_name(op);
        }
        if (!atomic_ok) {
            uct_o2m_reduce_atomic(op, this->dtype, dst.data(), src.data(),
                                  count);
            EXPECT_EQ(0, memcmp(orig.data(), dst.data(), count * sizeof(T)))
                << uct_o2m_op_name(op);
        }
    }
}

TYPED_TEST(test_o2m_reduce, dtype_size)
{
    EXPECT_EQ(sizeof(TypeParam), uct_o2m_dtype_size(this->dtype));
}


/* Heavy contention on a few elements: lost updates would show */
template <typename T>
void hammer(uct_o2m_op_t op, T init, T value, T expected)
{
    const unsigned nthreads = 4;
    const unsigned iters    = 20000;
    const size_t count      = 8;
    const uct_o2m_dtype_t dtype = dtype_of<T>::value;
    std::vector<T> dst(count, init);
    std::vector<T> src(count, value);
    std::atomic<unsigned> ready(0);
    std::vector<std::thread> threads;

    for (unsigned t = 0; t < nthreads; ++t) {
        threads.emplace_back([&]() {
            ready.fetch_add(1);
            while (ready.load() < nthreads) {
            }
            for (unsigned i = 0; i < iters; ++i) {
                uct_o2m_reduce_atomic(op, dtype, dst.data(), src.data(),
                                      count);
            }
        });
    }
    for (auto &th : threads) {
        th.join();
    }

    for (size_t i = 0; i < count; ++i) {
        EXPECT_TRUE(ref<T>::equal(expected, dst[i]))
            << uct_o2m_op_name(op) << "/" << uct_o2m_dtype_name(dtype) << " ["
            << i << "]: " << to_str(dst[i]) << ", expected "
            << to_str(expected);
    }
}

TEST(test_o2m_reduce_atomic, hammer)
{
    const uint64_t n = 4 * 20000;
    uint64_t pow3    = 1;

    for (uint64_t i = 0; i < n; ++i) {
        pow3 *= 3;
    }

    /* native fetch-add, with and without wrap-around */
    hammer<int32_t>(UCT_O2M_OP_SUM, 0, 1, int32_t(n));
    hammer<uint8_t>(UCT_O2M_OP_SUM, 0, 1, uint8_t(n & 0xff));
    hammer<int16_t>(UCT_O2M_OP_SUM, 0, -3, int16_t(uint16_t(-3 * int64_t(n))));
    /* native fetch-xor: an even number of flips */
    hammer<uint64_t>(UCT_O2M_OP_BXOR, 0x1234, 0xff00ff00ff00ff00ull, 0x1234);
    /* CAS loops */
    hammer<float>(UCT_O2M_OP_SUM, 0.0f, 1.0f, float(n));
    hammer<double>(UCT_O2M_OP_SUM, 0.5, -0.25, 0.5 - 0.25 * double(n));
    hammer<double>(UCT_O2M_OP_PROD, 1.0, -1.0, 1.0);
    hammer<uint64_t>(UCT_O2M_OP_PROD, 1, 3, pow3);
    hammer<int8_t>(UCT_O2M_OP_LXOR, 1, 1, 1);
}

/* Concurrent max with increasing values: the largest must win */
TEST(test_o2m_reduce_atomic, max_race)
{
    const unsigned nthreads = 4;
    const int32_t iters     = 20000;
    int64_t dst             = std::numeric_limits<int64_t>::min();
    double fdst             = -std::numeric_limits<double>::infinity();
    std::atomic<unsigned> ready(0);
    std::vector<std::thread> threads;

    for (unsigned t = 0; t < nthreads; ++t) {
        threads.emplace_back([&, t]() {
            ready.fetch_add(1);
            while (ready.load() < nthreads) {
            }
            for (int32_t i = 0; i < iters; ++i) {
                int64_t v  = int64_t(i) * nthreads + t;
                double  fv = double(v);
                uct_o2m_reduce_atomic(UCT_O2M_OP_MAX, UCT_O2M_DT_INT64, &dst,
                                      &v, 1);
                uct_o2m_reduce_atomic(UCT_O2M_OP_MAX, UCT_O2M_DT_DOUBLE,
                                      &fdst, &fv, 1);
            }
        });
    }
    for (auto &th : threads) {
        th.join();
    }

    EXPECT_EQ(int64_t(iters) * nthreads - 1, dst);
    EXPECT_EQ(double(int64_t(iters) * nthreads - 1), fdst);
}


/* Documented corner cases of float min/max and logical ops */
TEST(test_o2m_reduce_fp, corner_cases)
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const size_t n  = 300; /* through the vectorized blocks and the tail */

    for (bool atomic : {false, true}) {
        auto reduce = [atomic](uct_o2m_op_t op, float *d, const float *s,
                               size_t count) {
            if (atomic) {
                uct_o2m_reduce_atomic(op, UCT_O2M_DT_FLOAT, d, s, count);
            } else {
                uct_o2m_reduce(op, UCT_O2M_DT_FLOAT, d, s, count);
            }
        };

        for (uct_o2m_op_t op : {UCT_O2M_OP_MIN, UCT_O2M_OP_MAX}) {
            std::vector<float> d(n, nan), s(n, 1.0f);
            reduce(op, d.data(), s.data(), n);
            for (size_t i = 0; i < n; ++i) {
                EXPECT_EQ(1.0f, d[i]) << "NaN in dst " << atomic;
            }

            std::fill(d.begin(), d.end(), 1.0f);
            std::fill(s.begin(), s.end(), nan);
            reduce(op, d.data(), s.data(), n);
            for (size_t i = 0; i < n; ++i) {
                EXPECT_TRUE(std::isnan(d[i])) << "NaN in src " << atomic;
            }

            /* equal: src wins, so min(-0.0, +0.0) = +0.0 */
            std::fill(d.begin(), d.end(), -0.0f);
            std::fill(s.begin(), s.end(), 0.0f);
            reduce(op, d.data(), s.data(), n);
            for (size_t i = 0; i < n; ++i) {
                EXPECT_FALSE(std::signbit(d[i])) << "signed zero " << atomic;
            }
        }

        /* -0.0 is false, NaN is true */
        std::vector<float> d(n, -0.0f), s(n, nan);
        reduce(UCT_O2M_OP_LOR, d.data(), s.data(), n);
        for (size_t i = 0; i < n; ++i) {
            EXPECT_EQ(1.0f, d[i]);
        }
        std::fill(d.begin(), d.end(), -0.0f);
        reduce(UCT_O2M_OP_LAND, d.data(), s.data(), n);
        for (size_t i = 0; i < n; ++i) {
            EXPECT_EQ(0.0f, d[i]);
        }
    }
}


TEST(test_o2m_reduce_tables, reduce_supported)
{
    for (uct_o2m_op_t op : all_ops) {
        for (uct_o2m_dtype_t dtype : all_dtypes) {
            int expected = !(is_bitwise(op) && is_fp(dtype));
            EXPECT_EQ(expected, uct_o2m_reduce_supported(op, dtype))
                << uct_o2m_op_name(op) << "/" << uct_o2m_dtype_name(dtype);
            /* x86_64 / aarch64: every size is lock-free */
            EXPECT_EQ(expected, uct_o2m_atomic_supported(op, dtype))
                << uct_o2m_op_name(op) << "/" << uct_o2m_dtype_name(dtype);
        }
    }

    EXPECT_FALSE(uct_o2m_reduce_supported(UCT_O2M_OP_BAND, UCT_O2M_DT_FLOAT));
    EXPECT_FALSE(uct_o2m_atomic_supported(UCT_O2M_OP_BXOR,
                                          UCT_O2M_DT_DOUBLE));
    EXPECT_TRUE(uct_o2m_atomic_supported(UCT_O2M_OP_PROD, UCT_O2M_DT_FLOAT));

    /* Invalid values (within the range of the enum: UBSan checks loads of
     * C++ enums; negative values are not representable) */
    const uct_o2m_op_t bad_ops[]       = {UCT_O2M_OP_LAST,
                                          static_cast<uct_o2m_op_t>(15)};
    const uct_o2m_dtype_t bad_dtypes[] = {UCT_O2M_DT_LAST,
                                          static_cast<uct_o2m_dtype_t>(15)};
    for (uct_o2m_op_t op : bad_ops) {
        EXPECT_FALSE(uct_o2m_reduce_supported(op, UCT_O2M_DT_INT32));
        EXPECT_FALSE(uct_o2m_atomic_supported(op, UCT_O2M_DT_INT32));
        EXPECT_TRUE(uct_o2m_reduce_func(op, UCT_O2M_DT_INT32) == NULL);
    }
    for (uct_o2m_dtype_t dtype : bad_dtypes) {
        EXPECT_FALSE(uct_o2m_reduce_supported(UCT_O2M_OP_SUM, dtype));
        EXPECT_FALSE(uct_o2m_atomic_supported(UCT_O2M_OP_SUM, dtype));
        EXPECT_TRUE(uct_o2m_reduce_atomic_func(UCT_O2M_OP_SUM, dtype) ==
                    NULL);
        /* GATHER ignores the dtype */
        EXPECT_TRUE(uct_o2m_reduce_supported(UCT_O2M_OP_GATHER, dtype));
        EXPECT_TRUE(uct_o2m_atomic_supported(UCT_O2M_OP_GATHER, dtype));
    }
}

TEST(test_o2m_reduce_tables, op_supported)
{
    for (uct_o2m_mode_t mode : all_modes) {
        for (uct_o2m_op_t op : all_ops) {
            for (uct_o2m_dtype_t dtype : all_dtypes) {
                int expected = (mode == UCT_O2M_MODE_ATOMIC) ?
                               uct_o2m_atomic_supported(op, dtype) :
                               uct_o2m_reduce_supported(op, dtype);
                EXPECT_EQ(expected, uct_o2m_op_supported(mode, op, dtype))
                    << uct_o2m_mode_name(mode) << " "
                    << uct_o2m_op_name(op) << "/"
                    << uct_o2m_dtype_name(dtype);
            }
            EXPECT_TRUE(uct_o2m_op_supported(mode, UCT_O2M_OP_GATHER,
                                             UCT_O2M_DT_DOUBLE));
        }
        EXPECT_FALSE(uct_o2m_op_supported(mode, UCT_O2M_OP_BOR,
                                          UCT_O2M_DT_FLOAT));
        EXPECT_TRUE(uct_o2m_op_supported(mode, UCT_O2M_OP_MIN,
                                         UCT_O2M_DT_DOUBLE));
        EXPECT_FALSE(uct_o2m_op_supported(mode, UCT_O2M_OP_LAST,
                                          UCT_O2M_DT_INT8));
        EXPECT_FALSE(uct_o2m_op_supported(mode, UCT_O2M_OP_SUM,
                                          UCT_O2M_DT_LAST));
    }

    for (uct_o2m_mode_t mode : {UCT_O2M_MODE_LAST,
                                static_cast<uct_o2m_mode_t>(7)}) {
        EXPECT_FALSE(uct_o2m_op_supported(mode, UCT_O2M_OP_GATHER,
                                          UCT_O2M_DT_INT8));
        EXPECT_FALSE(uct_o2m_op_supported(mode, UCT_O2M_OP_SUM,
                                          UCT_O2M_DT_INT8));
    }
}

TEST(test_o2m_reduce_tables, names)
{
    const char *mode_names[]  = {"batched", "centralized", "locked",
                                 "atomic"};
    const char *op_names[]    = {"gather", "sum", "prod", "min", "max",
                                 "band", "bor", "bxor", "land", "lor",
                                 "lxor"};
    const char *dtype_names[] = {"int8", "uint8", "int16", "uint16",
                                 "int32", "uint32", "int64", "uint64",
                                 "float", "double"};
    const size_t dtype_sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};

    static_assert(sizeof(mode_names) / sizeof(mode_names[0]) ==
                  UCT_O2M_MODE_LAST, "modes");
    static_assert(sizeof(op_names) / sizeof(op_names[0]) ==
                  UCT_O2M_OP_LAST, "ops");
    static_assert(sizeof(dtype_names) / sizeof(dtype_names[0]) ==
                  UCT_O2M_DT_LAST, "dtypes");

    for (int i = 0; i < UCT_O2M_MODE_LAST; ++i) {
        EXPECT_STREQ(mode_names[i],
                     uct_o2m_mode_name(static_cast<uct_o2m_mode_t>(i)));
    }
    for (int i = 0; i < UCT_O2M_OP_LAST; ++i) {
        EXPECT_STREQ(op_names[i],
                     uct_o2m_op_name(static_cast<uct_o2m_op_t>(i)));
    }
    for (int i = 0; i < UCT_O2M_DT_LAST; ++i) {
        uct_o2m_dtype_t dtype = static_cast<uct_o2m_dtype_t>(i);
        EXPECT_STREQ(dtype_names[i], uct_o2m_dtype_name(dtype));
        EXPECT_EQ(dtype_sizes[i], uct_o2m_dtype_size(dtype));
    }

    /* Out of range, but within the range of the C++ enum (UBSan) */
    EXPECT_STREQ("<invalid>", uct_o2m_mode_name(UCT_O2M_MODE_LAST));
    EXPECT_STREQ("<invalid>",
                 uct_o2m_mode_name(static_cast<uct_o2m_mode_t>(7)));
    EXPECT_STREQ("<invalid>", uct_o2m_op_name(UCT_O2M_OP_LAST));
    EXPECT_STREQ("<invalid>", uct_o2m_op_name(static_cast<uct_o2m_op_t>(15)));
    EXPECT_STREQ("<invalid>", uct_o2m_dtype_name(UCT_O2M_DT_LAST));
    EXPECT_STREQ("<invalid>",
                 uct_o2m_dtype_name(static_cast<uct_o2m_dtype_t>(15)));
    EXPECT_EQ(0u, uct_o2m_dtype_size(UCT_O2M_DT_LAST));
    EXPECT_EQ(0u, uct_o2m_dtype_size(static_cast<uct_o2m_dtype_t>(15)));
}

} /* namespace */
