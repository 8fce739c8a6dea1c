/*
 * MPI collective correctness suite.
 *
 * Written against plain MPI: it runs with Open MPI's default coll components
 * and, unchanged, with coll/ucg selected (see run.sh).  Inputs are generated
 * deterministically from (comm rank, element index, seed), so every rank can
 * compute the expected result locally.  Floating point inputs are small
 * integers, so sums and products are exact and compared with ==.
 * Non-commutative user ops must give the rank-order result exactly.
 *
 * Usage: coll_test [-v] [-q] [-F] [-w]
 *   -v: print every failing case, -q: quick (no 8 KiB..4 MiB sizes), -F:
 *   only the Fortran predefined types and MPI_C_BOOL (their sizes in this
 *   Open MPI must be those of the C types used for the reference; a type
 *   of another size, or of size 0 when Open MPI has no Fortran, is skipped
 *   with a note), -w: MPI_COMM_WORLD only (no dup, split and subset
 *   communicators: the bounded run across the VM bed's guests,
 *   test/vm/guest-ucg.sh)
 */
#include <mpi.h>
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    OP_NONE, OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_LAND, OP_LOR, OP_LXOR,
    OP_BAND, OP_BOR, OP_BXOR, OP_MINLOC, OP_MAXLOC, OP_UCOMM, OP_UNCOMM,
    OP_LAST
};

static const char *op_names[] = {
    "none", "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND",
    "BOR", "BXOR", "MINLOC", "MAXLOC", "user_comm", "user_noncomm"
};

#define OPS_ARITH   ((1u << OP_SUM) | (1u << OP_PROD))
#define OPS_MINMAX  ((1u << OP_MIN) | (1u << OP_MAX))
#define OPS_LOGIC   ((1u << OP_LAND) | (1u << OP_LOR) | (1u << OP_LXOR))
#define OPS_BIT     ((1u << OP_BAND) | (1u << OP_BOR) | (1u << OP_BXOR))
#define OPS_INT     (OPS_ARITH | OPS_MINMAX | OPS_LOGIC | OPS_BIT)
#define OPS_FLOAT   (OPS_ARITH | OPS_MINMAX)
#define OPS_LOC     ((1u << OP_MINLOC) | (1u << OP_MAXLOC))

/* Type flags: which subsets of the matrix a type takes part in */
#define T_SUB   1   /* also tested on the sub-communicators */
#define T_BIG   2   /* also tested at 8 KiB / 64 KiB boundaries */
#define T_HUGE  4   /* also tested at 1 MiB / 4 MiB */
#define T_GATH  8   /* tested with gather/scatter/allgather */
#define T_FORT  16  /* Fortran type or C bool: only with -F */

typedef struct {
    const char   *name;
    MPI_Datatype dt;
    size_t       ext;
    unsigned     ops;
    unsigned     flags;
    void         (*gen)(void *buf, size_t n, int rank, int seed, int op);
    void         (*ref)(int op, const void *in, void *inout, size_t n);
    long         (*cmp)(const void *a, const void *b, size_t n);
    void         (*fmt)(const void *buf, size_t i, char *out, size_t len);
} tdesc_t;

static int g_verbose;
static int g_quick;
static int g_fort;
static int g_world_only;
static int g_world_rank;
static MPI_Op g_op_ucomm, g_op_uncomm;

static uint64_t hash3(int rank, size_t i, int seed)
{
    uint64_t x = ((uint64_t)rank << 48) ^ ((uint64_t)seed << 32) ^ (uint64_t)i;
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Value for element i of rank's input, chosen so that the reduction over up
 * to a few dozen ranks cannot overflow even int8 and stays exact in float */
static int64_t small_val(int op, int rank, size_t i, int seed, int is_unsigned)
{
    uint64_t h = hash3(rank, i, seed);
    int64_t v;

    switch (op) {
    case OP_SUM:
        v = (int64_t)(h % 11);
        return is_unsigned ? v : v - 5;
    case OP_PROD:
        /* at most 3 of 8 consecutive ranks contribute a factor 2 */
        v = ((rank + i + seed) % 3 == 0) ? 2 : 1;
        return (!is_unsigned && ((h >> 8) & 1)) ? -v : v;
    case OP_MIN:
    case OP_MAX:
        v = (int64_t)(h % 100);
        return is_unsigned ? v : v - 50;
    case OP_LAND:
        return (h % 13 == 0) ? 0 : (int64_t)(h % 7) + 1;
    case OP_LOR:
        return (h % 13 == 0) ? (int64_t)(h % 7) + 1 : 0;
    case OP_LXOR:
        return (h & 1) ? (int64_t)((h >> 1) % 5) + 1 : 0;
    default:
        return (int64_t)(h % 2000) - 1000;
    }
}

#define FOR_I for (size_t i = 0; i < n; ++i)

/* Element by element with != (not memcmp: neither padding bytes nor the
 * sign of a zero count); the index of the first difference, or -1 */
#define DEF_CMP(NAME, T) \
static long cmp_##NAME(const void *a_, const void *b_, size_t n) \
{ \
    const T *a = a_, *b = b_; \
    FOR_I if (a[i] != b[i]) return (long)i; \
    return -1; \
}

/* The reference of the arithmetic ops, in a switch on the op (the cast
 * wraps integer sums and products to the type) */
#define REF_SUM_PROD(T) \
    case OP_SUM:  FOR_I io[i] = (T)(in[i] + io[i]); break; \
    case OP_PROD: FOR_I io[i] = (T)(in[i] * io[i]); break;
#define REF_MIN_MAX \
    case OP_MIN:  FOR_I io[i] = in[i] < io[i] ? in[i] : io[i]; break; \
    case OP_MAX:  FOR_I io[i] = in[i] > io[i] ? in[i] : io[i]; break;

/* A type's functions of the table (tdesc_t): the body (after the macro's
 * arguments) sees its buffer as T *p, or T *in and *io */
#define DEF_GEN(NAME, T, ...) \
static void gen_##NAME(void *b, size_t n, int rank, int seed, int op) \
{ \
    T *p = b; \
    __VA_ARGS__ \
}
#define DEF_REF(NAME, T, ...) \
static void ref_##NAME(int op, const void *in_, void *io_, size_t n) \
{ \
    const T *in = in_; T *io = io_; \
    switch (op) { \
    __VA_ARGS__ \
    default: abort(); \
    } \
}
#define DEF_FMT(NAME, T, ...) \
static void fmt_##NAME(const void *b, size_t i, char *out, size_t len) \
{ \
    const T *p = b; \
    __VA_ARGS__; \
}

/* ---- integer types ---- */
#define DEF_INT(NAME, T, UNS) \
DEF_GEN(NAME, T, \
    if ((op == OP_NONE) || (op >= OP_BAND && op <= OP_BXOR) || \
        (op == OP_MIN) || (op == OP_MAX)) { \
        /* full-width bit patterns: exercises sign and high bits */ \
        FOR_I p[i] = (T)hash3(rank, i, seed); \
    } else { \
        FOR_I p[i] = (T)small_val(op, rank, i, seed, UNS); \
    }) \
DEF_REF(NAME, T, \
    REF_SUM_PROD(T) \
    REF_MIN_MAX \
    case OP_LAND: FOR_I io[i] = (T)(in[i] && io[i]); break; \
    case OP_LOR:  FOR_I io[i] = (T)(in[i] || io[i]); break; \
    case OP_LXOR: FOR_I io[i] = (T)(!in[i] != !io[i]); break; \
    case OP_BAND: FOR_I io[i] = (T)(in[i] & io[i]); break; \
    case OP_BOR:  FOR_I io[i] = (T)(in[i] | io[i]); break; \
    case OP_BXOR: FOR_I io[i] = (T)(in[i] ^ io[i]); break;) \
DEF_CMP(NAME, T) \
DEF_FMT(NAME, T, \
    if (UNS) snprintf(out, len, "%llu", (unsigned long long)p[i]); \
    else     snprintf(out, len, "%lld", (long long)p[i]))

DEF_INT(schar, signed char, 0)
DEF_INT(uchar, unsigned char, 1)
DEF_INT(short, short, 0)
DEF_INT(ushort, unsigned short, 1)
DEF_INT(int, int, 0)
DEF_INT(uint, unsigned, 1)
DEF_INT(long, long, 0)
DEF_INT(ulong, unsigned long, 1)
DEF_INT(llong, long long, 0)
DEF_INT(ullong, unsigned long long, 1)
DEF_INT(i8, int8_t, 0)
DEF_INT(u8, uint8_t, 1)
DEF_INT(i16, int16_t, 0)
DEF_INT(u16, uint16_t, 1)
DEF_INT(i32, int32_t, 0)
DEF_INT(u32, uint32_t, 1)
DEF_INT(i64, int64_t, 0)
DEF_INT(u64, uint64_t, 1)
DEF_INT(aint, MPI_Aint, 0)

/* Open MPI <= 4.1.4 reduces MPI_UNSIGNED_LONG MIN/MAX as signed long
 * (open-mpi/ompi#10525, fixed by #10527/#10538).  Keep the top bit clear for
 * those two ops unless MPI_TEST_STRICT_ULONG=1, so that the suite checks the
 * collectives rather than that known op bug. */
static int g_strict_ulong;
static void gen_ulong_mm(void *b, size_t n, int rank, int seed, int op)
{
    unsigned long *p = b;
    gen_ulong(b, n, rank, seed, op);
    if (!g_strict_ulong && ((op == OP_MIN) || (op == OP_MAX))) {
        FOR_I p[i] &= ~(1ul << 63);
    }
}
DEF_INT(char, char, 0)

static void gen_bool(void *b, size_t n, int rank, int seed, int op)
{
    bool *p = b;
    FOR_I p[i] = small_val(op == OP_NONE ? OP_LXOR : op, rank, i, seed, 1) != 0;
}
static void ref_bool(int op, const void *in_, void *io_, size_t n)
{
    const bool *in = in_; bool *io = io_;
    switch (op) {
    case OP_LAND: FOR_I io[i] = in[i] && io[i]; break;
    case OP_LOR:  FOR_I io[i] = in[i] || io[i]; break;
    case OP_LXOR: FOR_I io[i] = in[i] != io[i]; break;
    default: abort();
    }
}
DEF_CMP(bool, bool)
static void fmt_bool(const void *b, size_t i, char *out, size_t len)
{
    snprintf(out, len, "%d", (int)((const bool*)b)[i]);
}

/* ---- floating point ---- */
#define DEF_FLT(NAME, T) \
DEF_GEN(NAME, T, FOR_I p[i] = (T)small_val(op, rank, i, seed, 0);) \
DEF_REF(NAME, T, REF_SUM_PROD(T) REF_MIN_MAX) \
DEF_CMP(NAME, T) \
DEF_FMT(NAME, T, snprintf(out, len, "%Lg", (long double)p[i]))

DEF_FLT(float, float)
DEF_FLT(double, double)
DEF_FLT(ldouble, long double)

/* ---- complex: SUM and PROD ---- */
#define DEF_CPLX(NAME, T, RT) \
DEF_GEN(NAME, T, \
    static const RT re[] = {1, 0, -1, 1, 2, 0}; \
    static const RT im[] = {0, 1, 0, 1, 0, -1}; \
    FOR_I { \
        uint64_t h = hash3(rank, i, seed); \
        if (op == OP_PROD) { \
            /* unit-like factors keep products exact */ \
            p[i] = re[h % 6] + im[h % 6] * (T)I; \
        } else { \
            p[i] = (RT)((int)(h % 11) - 5) + \
                   (RT)((int)((h >> 8) % 11) - 5) * (T)I; \
        } \
    }) \
DEF_REF(NAME, T, REF_SUM_PROD(T)) \
DEF_CMP(NAME, T) \
DEF_FMT(NAME, T, \
    snprintf(out, len, "(%Lg,%Lg)", (long double)creall(p[i]), \
             (long double)cimagl(p[i])))

DEF_CPLX(cfloat, float _Complex, float)
DEF_CPLX(cdouble, double _Complex, double)
DEF_CPLX(cldouble, long double _Complex, long double)

/* ---- value/index pairs: MINLOC and MAXLOC (C's index is an int;
 * Fortran's MPI_2REAL, MPI_2DOUBLE_PRECISION have one of the value's type) */
#define DEF_PAIR(NAME, VT, IT) \
typedef struct { VT v; IT i; } NAME##_t; \
DEF_GEN(NAME, NAME##_t, \
    memset(b, 0, n * sizeof(*p)); \
    FOR_I { \
        uint64_t h = hash3(rank, i, seed); \
        /* few distinct values: ties exercise the smaller-index rule */ \
        p[i].v = (VT)((int)(h % 5) - 2); \
        p[i].i = (IT)((int)((h >> 16) % 7) + rank); \
    }) \
static void ref_##NAME(int op, const void *in_, void *io_, size_t n) \
{ \
    const NAME##_t *in = in_; NAME##_t *io = io_; \
    FOR_I { \
        int better = (op == OP_MINLOC) ? (in[i].v < io[i].v) : \
                                         (in[i].v > io[i].v); \
        if (better) { \
            io[i] = in[i]; \
        } else if (in[i].v == io[i].v && in[i].i < io[i].i) { \
            io[i].i = in[i].i; \
        } \
    } \
} \
static long cmp_##NAME(const void *a_, const void *b_, size_t n) \
{ \
    const NAME##_t *a = a_, *b = b_; \
    FOR_I if (a[i].v != b[i].v || a[i].i != b[i].i) return (long)i; \
    return -1; \
} \
DEF_FMT(NAME, NAME##_t, \
    snprintf(out, len, "(%Lg,%Lg)", (long double)p[i].v, \
             (long double)p[i].i))

DEF_PAIR(float_int, float, int)
DEF_PAIR(double_int, double, int)
DEF_PAIR(long_int, long, int)
DEF_PAIR(two_int, int, int)
DEF_PAIR(short_int, short, int)
DEF_PAIR(ldouble_int, long double, int)
DEF_PAIR(two_float, float, float)
DEF_PAIR(two_double, double, double)

/* ---- user commutative op on MPI_INT: addition modulo a prime ---- */
#define UMOD 10007
static void gen_uint_c(void *b, size_t n, int rank, int seed, int op)
{
    int *p = b;
    FOR_I p[i] = (int)(hash3(rank, i, seed) % UMOD);
}
static void ref_uint_c(int op, const void *in_, void *io_, size_t n)
{
    const int *in = in_; int *io = io_;
    FOR_I io[i] = (in[i] + io[i]) % UMOD;
}
#define cmp_uint_c cmp_int
#define fmt_uint_c fmt_int
static void user_comm_fn(void *in, void *io, int *len, MPI_Datatype *dt)
{
    ref_uint_c(OP_UCOMM, in, io, (size_t)*len);
}

/* ---- user non-commutative op: 2x2 matrix product over Z_p, on a
 * contiguous type of 4 MPI_INT.  MPI computes inout = in * inout where in
 * comes from the lower ranks, so the result is A_0 * A_1 * ... * A_{n-1}. */
#define MMOD 1009
typedef struct { int a[4]; } mat_t;
static void gen_mat(void *b, size_t n, int rank, int seed, int op)
{
    mat_t *p = b;
    FOR_I {
        uint64_t h = hash3(rank, i, seed);
        for (int k = 0; k < 4; ++k) {
            p[i].a[k] = (int)((h >> (k * 12)) % MMOD);
        }
    }
}
static void ref_mat(int op, const void *in_, void *io_, size_t n)
{
    const mat_t *x = in_; mat_t *y = io_;
    FOR_I {
        const int *a = x[i].a, *b = y[i].a;
        long long r0 = ((long long)a[0] * b[0] + (long long)a[1] * b[2]) % MMOD;
        long long r1 = ((long long)a[0] * b[1] + (long long)a[1] * b[3]) % MMOD;
        long long r2 = ((long long)a[2] * b[0] + (long long)a[3] * b[2]) % MMOD;
        long long r3 = ((long long)a[2] * b[1] + (long long)a[3] * b[3]) % MMOD;
        y[i].a[0] = (int)r0; y[i].a[1] = (int)r1;
        y[i].a[2] = (int)r2; y[i].a[3] = (int)r3;
    }
}
static long cmp_mat(const void *a, const void *b, size_t n)
{
    FOR_I if (memcmp((const mat_t*)a + i, (const mat_t*)b + i,
                     sizeof(mat_t))) return (long)i;
    return -1;
}
static void fmt_mat(const void *b, size_t i, char *out, size_t len)
{
    const mat_t *p = b;
    snprintf(out, len, "[%d %d; %d %d]", p[i].a[0], p[i].a[1], p[i].a[2],
             p[i].a[3]);
}
static void user_noncomm_fn(void *in, void *io, int *len, MPI_Datatype *dt)
{
    ref_mat(OP_UNCOMM, in, io, (size_t)*len);
}

#define TD(NAME, DT, CT, OPS, FL) \
    { #DT, DT, sizeof(CT), OPS, FL, gen_##NAME, ref_##NAME, cmp_##NAME, \
      fmt_##NAME }

static tdesc_t *g_types;
static int g_ntypes;
static MPI_Datatype g_mat_dt;

static void init_types(void)
{
    MPI_Type_contiguous(4, MPI_INT, &g_mat_dt);
    MPI_Type_commit(&g_mat_dt);
    MPI_Op_create(user_comm_fn, 1, &g_op_ucomm);
    MPI_Op_create(user_noncomm_fn, 0, &g_op_uncomm);

    tdesc_t t[] = {
        TD(char, MPI_CHAR, char, 0, T_SUB | T_GATH),
        TD(schar, MPI_SIGNED_CHAR, signed char, OPS_INT, T_SUB | T_BIG),
        TD(uchar, MPI_UNSIGNED_CHAR, unsigned char, OPS_INT, T_GATH),
        TD(u8, MPI_BYTE, uint8_t, OPS_BIT, T_SUB | T_BIG | T_HUGE | T_GATH),
        TD(short, MPI_SHORT, short, OPS_INT, T_GATH),
        TD(ushort, MPI_UNSIGNED_SHORT, unsigned short, OPS_INT, 0),
        TD(int, MPI_INT, int, OPS_INT, T_SUB | T_BIG | T_HUGE | T_GATH),
        TD(uint, MPI_UNSIGNED, unsigned, OPS_INT, 0),
        TD(long, MPI_LONG, long, OPS_INT, T_BIG),
        TD(ulong, MPI_UNSIGNED_LONG, unsigned long, OPS_INT, 0),
        TD(llong, MPI_LONG_LONG, long long, OPS_INT, 0),
        TD(ullong, MPI_UNSIGNED_LONG_LONG, unsigned long long, OPS_INT, 0),
        TD(i8, MPI_INT8_T, int8_t, OPS_INT, 0),
        TD(u8, MPI_UINT8_T, uint8_t, OPS_INT, T_BIG),
        TD(i16, MPI_INT16_T, int16_t, OPS_INT, 0),
        TD(u16, MPI_UINT16_T, uint16_t, OPS_INT, 0),
        TD(i32, MPI_INT32_T, int32_t, OPS_INT, 0),
        TD(u32, MPI_UINT32_T, uint32_t, OPS_INT, 0),
        TD(i64, MPI_INT64_T, int64_t, OPS_INT, T_SUB),
        TD(u64, MPI_UINT64_T, uint64_t, OPS_INT, T_BIG | T_GATH),
        TD(aint, MPI_AINT, MPI_Aint, OPS_INT, 0),
        TD(float, MPI_FLOAT, float, OPS_FLOAT, T_BIG | T_GATH),
        TD(double, MPI_DOUBLE, double, OPS_FLOAT,
           T_SUB | T_BIG | T_HUGE | T_GATH),
        TD(ldouble, MPI_LONG_DOUBLE, long double, OPS_FLOAT,
           T_SUB | T_BIG | T_GATH),
        TD(cfloat, MPI_C_FLOAT_COMPLEX, float _Complex, OPS_ARITH, 0),
        TD(cdouble, MPI_C_DOUBLE_COMPLEX, double _Complex, OPS_ARITH,
           T_SUB | T_BIG | T_GATH),
        TD(cldouble, MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex,
           OPS_ARITH, 0),
        TD(float_int, MPI_FLOAT_INT, float_int_t, OPS_LOC, 0),
        TD(double_int, MPI_DOUBLE_INT, double_int_t, OPS_LOC,
           T_SUB | T_BIG | T_GATH),
        TD(long_int, MPI_LONG_INT, long_int_t, OPS_LOC, 0),
        TD(two_int, MPI_2INT, two_int_t, OPS_LOC, T_SUB),
        TD(short_int, MPI_SHORT_INT, short_int_t, OPS_LOC, 0),
        TD(ldouble_int, MPI_LONG_DOUBLE_INT, ldouble_int_t, OPS_LOC, T_GATH),
        TD(uint_c, MPI_INT, int, 1u << OP_UCOMM, T_SUB | T_BIG | T_HUGE),
        /* -F: Fortran types by their usual sizes, and C bool */
        TD(bool, MPI_C_BOOL, bool, OPS_LOGIC, T_FORT | T_SUB | T_GATH),
        TD(i32, MPI_LOGICAL, int32_t, OPS_LOGIC, T_FORT | T_SUB),
        TD(i32, MPI_INTEGER, int32_t, OPS_ARITH | OPS_MINMAX | OPS_BIT,
           T_FORT | T_SUB | T_BIG | T_GATH),
        TD(i8, MPI_INTEGER1, int8_t, OPS_ARITH | OPS_MINMAX | OPS_BIT,
           T_FORT),
        TD(i16, MPI_INTEGER2, int16_t, OPS_ARITH | OPS_MINMAX | OPS_BIT,
           T_FORT),
        TD(i32, MPI_INTEGER4, int32_t, OPS_ARITH | OPS_MINMAX | OPS_BIT,
           T_FORT),
        TD(i64, MPI_INTEGER8, int64_t, OPS_ARITH | OPS_MINMAX | OPS_BIT,
           T_FORT | T_SUB),
        TD(float, MPI_REAL, float, OPS_FLOAT, T_FORT | T_SUB | T_GATH),
        TD(float, MPI_REAL4, float, OPS_FLOAT, T_FORT),
        TD(double, MPI_REAL8, double, OPS_FLOAT, T_FORT),
        TD(double, MPI_DOUBLE_PRECISION, double, OPS_FLOAT,
           T_FORT | T_SUB | T_BIG | T_GATH),
        TD(cfloat, MPI_COMPLEX, float _Complex, OPS_ARITH, T_FORT | T_SUB),
        TD(cfloat, MPI_COMPLEX8, float _Complex, OPS_ARITH, T_FORT),
        TD(cdouble, MPI_COMPLEX16, double _Complex, OPS_ARITH, T_FORT),
        TD(cdouble, MPI_DOUBLE_COMPLEX, double _Complex, OPS_ARITH,
           T_FORT | T_SUB | T_BIG),
        TD(two_int, MPI_2INTEGER, two_int_t, OPS_LOC, T_FORT | T_SUB),
        TD(two_float, MPI_2REAL, two_float_t, OPS_LOC, T_FORT),
        TD(two_double, MPI_2DOUBLE_PRECISION, two_double_t, OPS_LOC,
           T_FORT | T_SUB | T_GATH),
        TD(mat, MPI_DATATYPE_NULL, mat_t, 1u << OP_UNCOMM,
           T_SUB | T_BIG | T_HUGE | T_GATH),
    };
    g_ntypes = sizeof(t) / sizeof(t[0]);
    g_strict_ulong = getenv("MPI_TEST_STRICT_ULONG") != NULL &&
                     atoi(getenv("MPI_TEST_STRICT_ULONG")) != 0;
    for (int k = 0; k < g_ntypes; ++k) {
        if (t[k].dt == MPI_UNSIGNED_LONG) {
            t[k].gen = gen_ulong_mm;
        }
    }
    g_types  = malloc(sizeof(t));
    memcpy(g_types, t, sizeof(t));
    for (int k = 0; k < g_ntypes; ++k) {
        MPI_Aint lb, ext;
        if (g_types[k].dt == MPI_DATATYPE_NULL) {
            g_types[k].dt   = g_mat_dt;
            g_types[k].name = "int[4]";
        }
        if (!strcmp(g_types[k].name, "MPI_INT") &&
            (g_types[k].ops == (1u << OP_UCOMM))) {
            g_types[k].name = "MPI_INT(user)";
        }
        MPI_Type_get_extent(g_types[k].dt, &lb, &ext);
        if ((g_types[k].flags & T_FORT) && ((size_t)ext != g_types[k].ext)) {
            if (g_fort && (g_world_rank == 0)) {
                printf("note: %s skipped: %ld bytes here, the test's C type "
                       "has %zu\n", g_types[k].name, (long)ext,
                       g_types[k].ext);
            }
            g_types[k].flags = 0; /* never selected (use_type) */
            continue;
        }
        if ((size_t)ext != g_types[k].ext) {
            fprintf(stderr, "%s: extent %ld != C size %zu\n",
                    g_types[k].name, (long)ext, g_types[k].ext);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
}

static MPI_Op mpi_op(int op)
{
    switch (op) {
    case OP_SUM:    return MPI_SUM;
    case OP_PROD:   return MPI_PROD;
    case OP_MIN:    return MPI_MIN;
    case OP_MAX:    return MPI_MAX;
    case OP_LAND:   return MPI_LAND;
    case OP_LOR:    return MPI_LOR;
    case OP_LXOR:   return MPI_LXOR;
    case OP_BAND:   return MPI_BAND;
    case OP_BOR:    return MPI_BOR;
    case OP_BXOR:   return MPI_BXOR;
    case OP_MINLOC: return MPI_MINLOC;
    case OP_MAXLOC: return MPI_MAXLOC;
    case OP_UCOMM:  return g_op_ucomm;
    case OP_UNCOMM: return g_op_uncomm;
    default:        abort();
    }
}

/* ---- bookkeeping ---- */
enum { C_BCAST, C_ALLREDUCE, C_REDUCE, C_BARRIER, C_GATHER, C_SCATTER,
       C_ALLGATHER, C_LAST };
static const char *coll_names[] = {
    "MPI_Bcast", "MPI_Allreduce", "MPI_Reduce", "MPI_Barrier", "MPI_Gather",
    "MPI_Scatter", "MPI_Allgather"
};
static long g_ncases[C_LAST], g_nfail[C_LAST];

typedef struct {
    MPI_Comm   comm;
    const char *name;
    int        rank, size;
    int        full;   /* full matrix (world) or reduced one */
} ctx_t;

static void *xmalloc(size_t sz)
{
    void *p = malloc(sz ? sz : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu bytes)\n", sz);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

/* Compare got/exp; count and report the case.  Returns 0 when equal. */
static int check(int coll, const ctx_t *c, const tdesc_t *t, int op,
                 size_t count, int root, int inplace, const void *got,
                 const void *exp, size_t n, const char *what)
{
    long bad = t->cmp(got, exp, n);
    char g[96], e[96];

    if (bad < 0) {
        return 0;
    }
    g_nfail[coll]++;
    if ((g_nfail[coll] == 1) || g_verbose) {
        t->fmt(got, (size_t)bad, g, sizeof(g));
        t->fmt(exp, (size_t)bad, e, sizeof(e));
        fprintf(stderr, "MISMATCH %s comm=%s(size %d) rank=%d type=%s op=%s "
                "count=%zu root=%d in_place=%d %s[%ld]: got %s expected %s\n",
                coll_names[coll], c->name, c->size, c->rank, t->name,
                op_names[op], count, root, inplace, what, bad, g, e);
    }
    return 1;
}

/* Expected reduction x_0 op x_1 op ... op x_{n-1}, in rank order */
static void reference(const ctx_t *c, const tdesc_t *t, int op, size_t count,
                      int seed, void *acc, void *tmp)
{
    t->gen(acc, count, c->size - 1, seed, op);
    for (int r = c->size - 2; r >= 0; --r) {
        t->gen(tmp, count, r, seed, op);
        t->ref(op, tmp, acc, count);
    }
}

/* Element counts to test for a type: small ones always, boundaries and big
 * ones for a few types.  Returns the number of counts written. */
static int counts_for(const ctx_t *c, const tdesc_t *t, int coll,
                      size_t *out)
{
    static const size_t kb[] = {8192, 65536};
    int n = 0;

    if (!g_fort) {
        out[n++] = 0; /* (-F: no empty calls, which coll/ucg hands over) */
    }
    out[n++] = 1;
    out[n++] = 7;
    out[n++] = 1000;
    if ((t->flags & T_BIG) && !g_quick) {
        for (int k = 0; k < 2; ++k) {
            size_t e = kb[k] / t->ext;
            if (c->full) {
                out[n++] = e - 1;
            }
            out[n++] = e;
            if (c->full) {
                out[n++] = e + 1;
            }
        }
    }
    if ((t->flags & T_HUGE) && c->full && !g_quick) {
        out[n++] = (1u << 20) / t->ext;
        /* 4 MiB only for the rooted/replicated single-buffer collectives */
        if ((coll == C_BCAST) || (coll == C_ALLREDUCE)) {
            out[n++] = (4u << 20) / t->ext;
        }
    }
    return n;
}

static int use_type(const ctx_t *c, const tdesc_t *t)
{
    if (!g_fort != !(t->flags & T_FORT)) {
        return 0; /* -F: those only; else all others */
    }
    return c->full || (t->flags & T_SUB);
}

/* Roots to test: every root for small counts, else first and last */
static int roots_for(const ctx_t *c, size_t count, int *out)
{
    int n = 0;
    if (count <= 7) {
        for (int r = 0; r < c->size; ++r) {
            out[n++] = r;
        }
    } else {
        out[n++] = 0;
        if (c->size > 1) {
            out[n++] = c->size - 1;
        }
    }
    return n;
}

static int g_seed;

/* The cases of collective @a coll on type @a t, with the @a nc element
 * counts @a counts */
typedef void (*type_cases_fn_t)(const ctx_t *c, int coll, const tdesc_t *t,
                                const size_t *counts, int nc);

/* Runs @a fn on every type this run tests that has all of @a flags */
static void for_each_type(const ctx_t *c, int coll, unsigned flags,
                          type_cases_fn_t fn)
{
    size_t counts[16];

    for (int k = 0; k < g_ntypes; ++k) {
        const tdesc_t *t = &g_types[k];
        if (((t->flags & flags) != flags) || !use_type(c, t)) {
            continue;
        }
        fn(c, coll, t, counts, counts_for(c, t, coll, counts));
    }
}

static void bcast_cases(const ctx_t *c, int coll, const tdesc_t *t,
                        const size_t *counts, int nc)
{
    int roots[64];

    for (int ci = 0; ci < nc; ++ci) {
        size_t count = counts[ci];
        int nr = roots_for(c, count, roots);
        void *buf = xmalloc(count * t->ext);
        void *exp = xmalloc(count * t->ext);
        for (int ri = 0; ri < nr; ++ri) {
            int root = roots[ri], seed = ++g_seed;
            t->gen(exp, count, root, seed, OP_NONE);
            if (c->rank == root) {
                memcpy(buf, exp, count * t->ext);
            } else {
                memset(buf, 0xa5, count * t->ext);
            }
            MPI_Bcast(buf, (int)count, t->dt, root, c->comm);
            g_ncases[C_BCAST]++;
            check(C_BCAST, c, t, OP_NONE, count, root, 0, buf, exp,
                  count, "buf");
        }
        free(buf);
        free(exp);
    }
}

static void test_bcast(const ctx_t *c)
{
    for_each_type(c, C_BCAST, 0, bcast_cases);
}

/* Allreduce (root < 0) or Reduce to root */
static void do_reduce(const ctx_t *c, const tdesc_t *t, int op, size_t count,
                      int root, int inplace)
{
    int coll = (root < 0) ? C_ALLREDUCE : C_REDUCE;
    int seed = ++g_seed;
    size_t bytes = count * t->ext;
    void *sbuf = xmalloc(bytes), *rbuf = xmalloc(bytes);
    void *exp = xmalloc(bytes), *tmp = xmalloc(bytes);
    int receives = (root < 0) || (c->rank == root);
    int ip = inplace && receives;

    t->gen(ip ? rbuf : sbuf, count, c->rank, seed, op);
    if (!ip) {
        memset(rbuf, 0x5a, bytes);
    }
    if (root < 0) {
        MPI_Allreduce(ip ? MPI_IN_PLACE : sbuf, rbuf, (int)count, t->dt,
                      mpi_op(op), c->comm);
    } else {
        MPI_Reduce(ip ? MPI_IN_PLACE : sbuf, receives ? rbuf : NULL,
                   (int)count, t->dt, mpi_op(op), root, c->comm);
    }
    g_ncases[coll]++;
    if (receives) {
        reference(c, t, op, count, seed, exp, tmp);
        check(coll, c, t, op, count, root, inplace, rbuf, exp, count,
              "recvbuf");
    }
    if (!ip) {
        /* the send buffer must be left untouched */
        t->gen(tmp, count, c->rank, seed, op);
        check(coll, c, t, op, count, root, inplace, sbuf, tmp, count,
              "sendbuf");
    }
    free(sbuf);
    free(rbuf);
    free(exp);
    free(tmp);
}

static void reduce_cases(const ctx_t *c, int coll, const tdesc_t *t,
                         const size_t *counts, int nc)
{
    int roots[64];

    for (int op = OP_SUM; op < OP_LAST; ++op) {
        if (!(t->ops & (1u << op))) {
            continue;
        }
        for (int ci = 0; ci < nc; ++ci) {
            size_t count = counts[ci];
            int small = ci < 4;
            if (coll == C_ALLREDUCE) {
                /* both in-place variants for small counts, alternate for
                 * the big ones to bound the run time */
                if (small) {
                    do_reduce(c, t, op, count, -1, 0);
                    do_reduce(c, t, op, count, -1, 1);
                } else {
                    do_reduce(c, t, op, count, -1, ci & 1);
                }
                continue;
            }
            int nr = roots_for(c, count, roots);
            for (int ri = 0; ri < nr; ++ri) {
                if (small && count > 7) {
                    do_reduce(c, t, op, count, roots[ri], 0);
                    do_reduce(c, t, op, count, roots[ri], 1);
                } else {
                    do_reduce(c, t, op, count, roots[ri],
                              (roots[ri] + ci) & 1);
                }
            }
        }
    }
}

static void test_reductions(const ctx_t *c, int coll)
{
    for_each_type(c, coll, 0, reduce_cases);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* This rank's clock minus rank 0's (ranks on other hosts do not share a
 * clock: the VM bed's guests booted at different times) and how far off
 * that may be, from the fastest of a few ping-pongs with rank 0
 * (point-to-point only) */
static void clock_offset(const ctx_t *c, double *offset, double *err)
{
    double t[2], best, t0, t1;

    *offset = 0;
    *err    = 0;
    for (int r = 1; r < c->size; ++r) {
        if (c->rank == 0) {
            best = 1e9;
            for (int k = 0; k < 8; ++k) {
                t0 = now_s();
                MPI_Send(&t0, 1, MPI_DOUBLE, r, 78, c->comm);
                MPI_Recv(&t1, 1, MPI_DOUBLE, r, 79, c->comm,
                         MPI_STATUS_IGNORE);
                t[0] = t1;
                t1   = now_s();
                if (t1 - t0 < best) {
                    best = t1 - t0;
                    t[1] = t[0] - (t0 + t1) / 2;
                }
            }
            t[0] = t[1];
            t[1] = best / 2;
            MPI_Send(t, 2, MPI_DOUBLE, r, 80, c->comm);
        } else if (c->rank == r) {
            for (int k = 0; k < 8; ++k) {
                MPI_Recv(&t0, 1, MPI_DOUBLE, 0, 78, c->comm,
                         MPI_STATUS_IGNORE);
                t1 = now_s();
                MPI_Send(&t1, 1, MPI_DOUBLE, 0, 79, c->comm);
            }
            MPI_Recv(t, 2, MPI_DOUBLE, 0, 80, c->comm, MPI_STATUS_IGNORE);
            *offset = t[0];
            *err    = t[1];
        }
    }
}

/* Barrier: no rank may leave before the last one entered.  One rank per
 * iteration arrives late; times are exchanged with point-to-point only,
 * on rank 0's clock, and a rank counts as early only by more than the
 * uncertainty of the clock offsets. */
static void test_barrier(const ctx_t *c)
{
    int iters = c->full ? 2 * c->size : c->size;
    double offset, err;

    clock_offset(c, &offset, &err);
    for (int it = 0; it < iters; ++it) {
        double t[3], all[3];
        int late = it % c->size;
        if (c->rank == late) {
            usleep(2000);
        }
        t[0] = now_s();
        MPI_Barrier(c->comm);
        t[1] = now_s();
        t[0] -= offset;
        t[1] -= offset;
        t[2]  = err;
        g_ncases[C_BARRIER]++;
        if (c->rank == 0) {
            double max_in = t[0], min_out = t[1], max_err = 0;
            for (int r = 1; r < c->size; ++r) {
                MPI_Recv(all, 3, MPI_DOUBLE, r, 77, c->comm,
                         MPI_STATUS_IGNORE);
                if (all[0] > max_in)  max_in  = all[0];
                if (all[1] < min_out) min_out = all[1];
                if (all[2] > max_err) max_err = all[2];
            }
            if (max_in > min_out + 2 * max_err) {
                g_nfail[C_BARRIER]++;
                fprintf(stderr, "MISMATCH MPI_Barrier comm=%s(size %d): a "
                        "rank left %.1f us before the last one entered "
                        "(late rank %d; clocks known to %.1f us)\n",
                        c->name, c->size, (max_in - min_out) * 1e6, late,
                        max_err * 1e6);
            }
        } else {
            MPI_Send(t, 3, MPI_DOUBLE, 0, 77, c->comm);
        }
    }
}

/* Gather (root >= 0, scatter=0), Scatter (scatter=1), Allgather (root < 0) */
static void do_gather(const ctx_t *c, const tdesc_t *t, size_t count,
                      int root, int inplace, int scatter)
{
    int coll = scatter ? C_SCATTER : ((root < 0) ? C_ALLGATHER : C_GATHER);
    int seed = ++g_seed, n = c->size;
    size_t bytes = count * t->ext;
    int is_root = (root < 0) || (c->rank == root);
    int ip = inplace && is_root;
    char *all = xmalloc(bytes * n), *exp = xmalloc(bytes * n);
    char *one = xmalloc(bytes);

    for (int r = 0; r < n; ++r) {
        t->gen(exp + r * bytes, count, r, seed, OP_NONE);
    }
    if (coll == C_SCATTER) {
        if (is_root) {
            memcpy(all, exp, bytes * n);
        }
        memset(one, 0xc3, bytes);
        MPI_Scatter(is_root ? all : NULL, (int)count, t->dt,
                    ip ? MPI_IN_PLACE : one, (int)count, t->dt, root,
                    c->comm);
        g_ncases[coll]++;
        if (ip) {
            check(coll, c, t, OP_NONE, count, root, inplace, all, exp,
                  count * n, "sendbuf");
        } else {
            check(coll, c, t, OP_NONE, count, root, inplace, one,
                  exp + c->rank * bytes, count, "recvbuf");
        }
    } else {
        memset(all, 0x3c, bytes * n);
        if (ip) {
            memcpy(all + c->rank * bytes, exp + c->rank * bytes, bytes);
        } else {
            memcpy(one, exp + c->rank * bytes, bytes);
        }
        if (root < 0) {
            MPI_Allgather(ip ? MPI_IN_PLACE : one, (int)count, t->dt, all,
                          (int)count, t->dt, c->comm);
        } else {
            MPI_Gather(ip ? MPI_IN_PLACE : one, (int)count, t->dt,
                       is_root ? all : NULL, (int)count, t->dt, root,
                       c->comm);
        }
        g_ncases[coll]++;
        if (is_root) {
            check(coll, c, t, OP_NONE, count, root, inplace, all, exp,
                  count * n, "recvbuf");
        }
    }
    free(all);
    free(exp);
    free(one);
}

static void gather_cases(const ctx_t *c, int coll, const tdesc_t *t,
                         const size_t *counts, int nc)
{
    int roots[64];

    for (int ci = 0; ci < nc; ++ci) {
        size_t count = counts[ci];
        if (coll == C_ALLGATHER) {
            do_gather(c, t, count, -1, 0, 0);
            do_gather(c, t, count, -1, 1, 0);
            continue;
        }
        int nr = roots_for(c, count, roots);
        for (int ri = 0; ri < nr; ++ri) {
            int ip = (roots[ri] + ci) & 1;
            do_gather(c, t, count, roots[ri], ip, coll == C_SCATTER);
            if (count == 1000) {
                do_gather(c, t, count, roots[ri], !ip, coll == C_SCATTER);
            }
        }
    }
}

static void test_gathers(const ctx_t *c, int coll)
{
    for_each_type(c, coll, T_GATH, gather_cases);
}

/*
 * The same call several times on the same buffers with new data each time,
 * as loops do (coll/ucg keeps the last collective of each type initialized
 * for exactly this); a stale result or buffer would show here.
 */
static void test_repeat(const ctx_t *c)
{
    static const size_t counts[] = {1, 1000, 100000};
    const tdesc_t *t = NULL;
    int root         = c->size - 1;

    for (int k = 0; (k < g_ntypes) && (t == NULL); ++k) {
        if (!strcmp(g_types[k].name, "MPI_INT")) {
            t = &g_types[k];
        }
    }
    for (int ci = 0; ci < 3; ++ci) {
        size_t count = counts[ci], bytes = count * t->ext;
        void *sbuf = xmalloc(bytes), *rbuf = xmalloc(bytes);
        void *exp = xmalloc(bytes), *tmp = xmalloc(bytes);

        for (int it = 0; it < 3; ++it) {
            int seed = ++g_seed;

            t->gen(exp, count, root, seed, OP_NONE);
            if (c->rank == root) {
                memcpy(rbuf, exp, bytes);
            } else {
                memset(rbuf, 0xa5, bytes);
            }
            MPI_Bcast(rbuf, (int)count, t->dt, root, c->comm);
            g_ncases[C_BCAST]++;
            check(C_BCAST, c, t, OP_NONE, count, root, 0, rbuf, exp, count,
                  "repeated buf");

            seed = ++g_seed;
            t->gen(sbuf, count, c->rank, seed, OP_SUM);
            memset(rbuf, 0x5a, bytes);
            MPI_Allreduce(sbuf, rbuf, (int)count, t->dt, MPI_SUM, c->comm);
            g_ncases[C_ALLREDUCE]++;
            reference(c, t, OP_SUM, count, seed, exp, tmp);
            check(C_ALLREDUCE, c, t, OP_SUM, count, -1, 0, rbuf, exp, count,
                  "repeated recvbuf");

            seed = ++g_seed;
            t->gen(sbuf, count, c->rank, seed, OP_MAX);
            memset(rbuf, 0x5a, bytes);
            MPI_Reduce(sbuf, rbuf, (int)count, t->dt, MPI_MAX, root,
                       c->comm);
            g_ncases[C_REDUCE]++;
            if (c->rank == root) {
                reference(c, t, OP_MAX, count, seed, exp, tmp);
                check(C_REDUCE, c, t, OP_MAX, count, root, 0, rbuf, exp,
                      count, "repeated recvbuf");
            }
        }
        free(sbuf);
        free(rbuf);
        free(exp);
        free(tmp);
    }
}

static void run_all(const ctx_t *c)
{
    if (!g_fort) {
        test_repeat(c);
    }
    test_bcast(c);
    test_reductions(c, C_ALLREDUCE);
    test_reductions(c, C_REDUCE);
    test_barrier(c);
    test_gathers(c, C_GATHER);
    test_gathers(c, C_SCATTER);
    test_gathers(c, C_ALLGATHER);
}

static void run_comm(MPI_Comm comm, const char *name, int full)
{
    ctx_t c = { comm, name, 0, 0, full };

    if (comm == MPI_COMM_NULL) {
        return;
    }
    MPI_Comm_rank(comm, &c.rank);
    MPI_Comm_size(comm, &c.size);
    if (c.size > 64) {
        return;
    }
    /* same seed sequence on every member, whatever ran on other comms */
    g_seed = 1000;
    run_all(&c);
}

/* Sum the counters on world rank 0 with point-to-point only, so that a
 * broken collective cannot hide its own failures */
static void sum_counters(long *v, int n)
{
    int rank, size;
    long tmp[2 * C_LAST];

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        for (int r = 1; r < size; ++r) {
            MPI_Recv(tmp, n, MPI_LONG, r, 99, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            for (int k = 0; k < n; ++k) {
                v[k] += tmp[k];
            }
        }
    } else {
        MPI_Send(v, n, MPI_LONG, 0, 99, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    int rank, size, opt, total_fail = 0;
    MPI_Comm dup, eo, rev, sub;
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_world_rank = rank;
    while ((opt = getopt(argc, argv, "vqFw")) != -1) {
        switch (opt) {
        case 'v': g_verbose = 1; break;
        case 'q': g_quick = 1; break;
        case 'F': g_fort = 1; break;
        case 'w': g_world_only = 1; break;
        default:
            if (rank == 0) {
                fprintf(stderr, "usage: %s [-v] [-q] [-F] [-w]\n", argv[0]);
            }
            MPI_Finalize();
            return 2;
        }
    }
    init_types();
    t0 = MPI_Wtime();

    run_comm(MPI_COMM_WORLD, "world", 1);
    if (g_world_only) {
        goto out;
    }

    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_comm(dup, "dup", 0);

    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &eo);
    run_comm(eo, rank % 2 ? "odd" : "even", 0);

    /* reversed key order: comm rank i is world rank size-1-i */
    MPI_Comm_split(dup, 0, size - rank, &rev);
    run_comm(rev, "reversed", 0);

    /* non-contiguous subset (world ranks 0,2,3,5,6,...), reversed too */
    MPI_Comm_split(MPI_COMM_WORLD, (rank % 3 != 1) ? 0 : MPI_UNDEFINED,
                   -rank, &sub);
    run_comm(sub, "subset", 0);

    MPI_Comm_free(&dup);
    MPI_Comm_free(&eo);
    MPI_Comm_free(&rev);
    if (sub != MPI_COMM_NULL) {
        MPI_Comm_free(&sub);
    }

out:;
    long v[2 * C_LAST];
    memcpy(v, g_ncases, sizeof(g_ncases));
    memcpy(v + C_LAST, g_nfail, sizeof(g_nfail));
    sum_counters(v, 2 * C_LAST);
    if (rank == 0) {
        for (int k = 0; k < C_LAST; ++k) {
            printf("np=%d %-14s %7ld checks (over all ranks) %5ld failed  "
                   "%s\n", size, coll_names[k], v[k], v[C_LAST + k],
                   v[C_LAST + k] ? "FAIL" : "ok");
            total_fail += v[C_LAST + k] != 0;
        }
        printf("np=%d %s in %.1f s\n", size, total_fail ? "FAILED" : "PASSED",
               MPI_Wtime() - t0);
        fflush(stdout);
    }
    MPI_Bcast(&total_fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Op_free(&g_op_ucomm);
    MPI_Op_free(&g_op_uncomm);
    MPI_Type_free(&g_mat_dt);
    free(g_types);
    MPI_Finalize();
    return total_fail ? 1 : 0;
}
