/*
 * MPI_Reduce_scatter, MPI_Reduce_scatter_block, MPI_Scan, MPI_Exscan and
 * their nonblocking forms, checked against a local reference: every rank
 * computes every rank's input and folds them in rank order.
 *
 * Matrix: the four collectives x blocking / nonblocking (the nonblocking
 * ones of a round outstanding together, waited for at once) x type/op
 * (int sum, double max, unsigned bxor, long long min, and a
 * non-commutative user op on 2x2 matrices of unsigned, a contiguous
 * derived type) x sizes (1, 37 and 700 elements per rank) x in place or
 * not x communicators (MPI_COMM_WORLD, halves of a split: odd sizes when
 * the world's is, and the world reversed).  reduce_scatter's counts differ
 * by rank, some 0.  Exscan's rank 0 result is undefined in MPI: not
 * checked.
 *
 * Usage: coll_redscan [ROUNDS]   (default 2)
 * Prints "coll_redscan: OK" on rank 0 when every check passed.
 */
#include "mpi_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { C_RS, C_RSB, C_SCAN, C_EXSCAN, C_LAST };
static const char *coll_names[] = {"reduce_scatter", "reduce_scatter_block",
                                   "scan", "exscan"};

enum { T_INT_SUM, T_DOUBLE_MAX, T_UNSIGNED_BXOR, T_LL_MIN, T_MAT2, T_LAST };
static const char *type_names[] = {"int sum", "double max", "unsigned bxor",
                                   "long long min", "mat2 (user)"};

static MPI_Datatype g_mat2;  /* 4 unsigned: a 2x2 matrix */
static MPI_Op g_mat2_op;     /* matrix product, not commutative */

static void mat2_mul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const unsigned *a = in;
    unsigned *b = inout, r[4];
    int i;

    /* inout = in * inout (in holds lower ranks) */
    for (i = 0; i < *len; ++i, a += 4, b += 4) {
        r[0] = a[0] * b[0] + a[1] * b[2];
        r[1] = a[0] * b[1] + a[1] * b[3];
        r[2] = a[2] * b[0] + a[3] * b[2];
        r[3] = a[2] * b[1] + a[3] * b[3];
        memcpy(b, r, sizeof(r));
    }
}

static size_t elem_size(int t)
{
    switch (t) {
    case T_INT_SUM:       return sizeof(int);
    case T_DOUBLE_MAX:    return sizeof(double);
    case T_UNSIGNED_BXOR: return sizeof(unsigned);
    case T_LL_MIN:        return sizeof(long long);
    default:              return 4 * sizeof(unsigned);
    }
}

static MPI_Datatype mpi_type(int t)
{
    const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_UNSIGNED,
                                  MPI_LONG_LONG, g_mat2};
    return types[t];
}

static MPI_Op mpi_op(int t)
{
    const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_BXOR, MPI_MIN, g_mat2_op};
    return ops[t];
}

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352d;
    x ^= x >> 15;
    x *= 0x846ca68b;
    return x ^ (x >> 16);
}

/* Element @a i of rank @a rank's input (seed @a seed) */
static void gen(int t, int rank, size_t i, int seed, void *e)
{
    uint32_t h = mix((uint32_t)rank * 7919u + (uint32_t)i * 131u +
                     (uint32_t)seed * 1000003u);
    unsigned m[4];
    int k;

    switch (t) {
    case T_INT_SUM:
        *(int*)e = (int)(h % 2001) - 1000;
        break;
    case T_DOUBLE_MAX:
        *(double*)e = (double)(int)(h % 100000) / 8.0 - 5000.0;
        break;
    case T_UNSIGNED_BXOR:
        *(unsigned*)e = h;
        break;
    case T_LL_MIN:
        *(long long*)e = (long long)h * 1000003LL - (1LL << 40);
        break;
    default:
        for (k = 0; k < 4; ++k) {
            m[k] = mix(h + k) % 7;
        }
        memcpy(e, m, sizeof(m));
        break;
    }
}

/* inout = in op inout, @a n elements */
static void reduce_local(int t, const void *in, void *inout, int n)
{
    int i;

    for (i = 0; i < n; ++i) {
        switch (t) {
        case T_INT_SUM:
            ((int*)inout)[i] += ((const int*)in)[i];
            break;
        case T_DOUBLE_MAX:
            if (((const double*)in)[i] > ((double*)inout)[i]) {
                ((double*)inout)[i] = ((const double*)in)[i];
            }
            break;
        case T_UNSIGNED_BXOR:
            ((unsigned*)inout)[i] ^= ((const unsigned*)in)[i];
            break;
        case T_LL_MIN:
            if (((const long long*)in)[i] < ((long long*)inout)[i]) {
                ((long long*)inout)[i] = ((const long long*)in)[i];
            }
            break;
        default: {
            int one = 1;
            MPI_Datatype dt = g_mat2;
            mat2_mul((char*)in + 16 * i, (char*)inout + 16 * i, &one, &dt);
            break;
        }
        }
    }
}

/* Expected: ranks [first, last] folded, elements [from, from + n) */
static void expect_fold(int t, int first, int last, size_t from, int n,
                        int seed, char *out, char *tmp)
{
    size_t es = elem_size(t);
    int r, i;

    for (i = 0; i < n; ++i) {
        gen(t, last, from + i, seed, out + i * es);
    }
    for (r = last - 1; r >= first; --r) {
        for (i = 0; i < n; ++i) {
            gen(t, r, from + i, seed, tmp + i * es);
        }
        reduce_local(t, tmp, out, n);
    }
}

typedef struct {
    int          coll, t, n, in_place;
    int          seed;
    int          *rcounts;
    size_t       vec;     /* elements of the input vector */
    char         *sbuf, *rbuf;
    MPI_Request  req;
} call_t;

static int rs_count(int c, int r, int n)
{
    if (c == C_RSB) {
        return n;
    }
    return (r % 3 == 1) ? 0 : n + r;  /* some ranks get nothing */
}

static void call_setup(call_t *x, MPI_Comm comm, int coll, int t, int n,
                       int in_place, int seed)
{
    int rank, size, r;
    size_t es = elem_size(t), i, rlen;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    memset(x, 0, sizeof(*x));
    x->coll = coll; x->t = t; x->n = n; x->in_place = in_place;
    x->seed = seed;
    x->rcounts = malloc(sizeof(int) * size);
    x->vec = 0;
    for (r = 0; r < size; ++r) {
        x->rcounts[r] = rs_count(coll, r, n);
        x->vec += x->rcounts[r];
    }
    if ((coll == C_SCAN) || (coll == C_EXSCAN)) {
        x->vec = n;
    }
    rlen = ((coll == C_RS) || (coll == C_RSB)) ?
           (in_place ? x->vec : (size_t)x->rcounts[rank]) : (size_t)n;
    x->sbuf = malloc(x->vec * es + 1);
    x->rbuf = malloc(rlen * es + 1);
    for (i = 0; i < x->vec; ++i) {
        gen(t, rank, i, seed, (in_place ? x->rbuf : x->sbuf) + i * es);
    }
}

static int call_post(call_t *x, MPI_Comm comm, int nb)
{
    const void *sb = x->in_place ? MPI_IN_PLACE : x->sbuf;
    MPI_Datatype dt = mpi_type(x->t);
    MPI_Op op = mpi_op(x->t);
    int rank;

    MPI_Comm_rank(comm, &rank);
    switch (x->coll) {
    case C_RS:
        return nb ? MPI_Ireduce_scatter(sb, x->rbuf, x->rcounts, dt, op, comm,
                                        &x->req) :
                    MPI_Reduce_scatter(sb, x->rbuf, x->rcounts, dt, op, comm);
    case C_RSB:
        return nb ? MPI_Ireduce_scatter_block(sb, x->rbuf, x->n, dt, op, comm,
                                              &x->req) :
                    MPI_Reduce_scatter_block(sb, x->rbuf, x->n, dt, op, comm);
    case C_SCAN:
        return nb ? MPI_Iscan(sb, x->rbuf, x->n, dt, op, comm, &x->req) :
                    MPI_Scan(sb, x->rbuf, x->n, dt, op, comm);
    default:
        return nb ? MPI_Iexscan(sb, x->rbuf, x->n, dt, op, comm, &x->req) :
                    MPI_Exscan(sb, x->rbuf, x->n, dt, op, comm);
    }
}

static void call_check(call_t *x, MPI_Comm comm, const char *cname, int nb)
{
    size_t es = elem_size(x->t), from = 0;
    int rank, size, r, n = x->n;
    char *exp, *tmp;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    exp = malloc(x->vec * es + 1);
    tmp = malloc(x->vec * es + 1);
    if ((x->coll == C_RS) || (x->coll == C_RSB)) {
        for (r = 0; r < rank; ++r) {
            from += x->rcounts[r];
        }
        n = x->rcounts[rank];
        expect_fold(x->t, 0, size - 1, from, n, x->seed, exp, tmp);
    } else if (x->coll == C_SCAN) {
        expect_fold(x->t, 0, rank, 0, n, x->seed, exp, tmp);
    } else if (rank > 0) {
        expect_fold(x->t, 0, rank - 1, 0, n, x->seed, exp, tmp);
    } else {
        n = 0;
    }
    CHECK(!memcmp(exp, x->rbuf, n * es), "%s %s%s %s count %d%s rank %d/%d: "
          "wrong result", nb ? "nonblocking" : "blocking",
          coll_names[x->coll], x->in_place ? " in place" : "",
          type_names[x->t], x->n, "", rank, size);
    (void)cname;
    free(exp);
    free(tmp);
    free(x->sbuf);
    free(x->rbuf);
    free(x->rcounts);
}

static void run_comm(MPI_Comm comm, const char *cname, int round)
{
    const int sizes[] = {1, 37, 700};
    call_t calls_nb[C_LAST * 2];
    int c, t, s, ip, nb, k, seed = round * 100000;

    for (t = 0; t < T_LAST; ++t) {
        for (s = 0; s < 3; ++s) {
            for (nb = 0; nb < 2; ++nb) {
                k = 0;
                for (c = 0; c < C_LAST; ++c) {
                    for (ip = 0; ip < 2; ++ip) {
                        call_t *x = &calls_nb[k++];
                        call_setup(x, comm, c, t, sizes[s], ip, ++seed);
                        CALLF(call_post(x, comm, nb), "%s %s%s %s count %d "
                              "on %s", nb ? "posting" : "calling",
                              coll_names[c], ip ? " in place" : "",
                              type_names[t], sizes[s], cname);
                        if (!nb) {
                            call_check(x, comm, cname, 0);
                        }
                    }
                }
                if (nb) {
                    /* all outstanding together; completed in reverse */
                    for (k = C_LAST * 2; k-- > 0;) {
                        CALL("MPI_Wait", MPI_Wait(&calls_nb[k].req,
                                                  MPI_STATUS_IGNORE));
                    }
                    for (k = 0; k < C_LAST * 2; ++k) {
                        call_check(&calls_nb[k], comm, cname, 1);
                    }
                }
            }
        }
    }
}

int main(int argc, char **argv)
{
    int rank, size, rounds = (argc > 1) ? atoi(argv[1]) : 2, i, total;
    MPI_Comm half, rev;

    check_init(&argc, &argv, &rank, &size);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &g_mat2);
    MPI_Type_commit(&g_mat2);
    MPI_Op_create(mat2_mul, 0, &g_mat2_op);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(rev, MPI_ERRORS_RETURN);

    for (i = 0; i < rounds; ++i) {
        run_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD", i);
        run_comm(half, "half", i);
        run_comm(rev, "reversed", i);
    }

    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    MPI_Op_free(&g_mat2_op);
    MPI_Type_free(&g_mat2);
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_redscan: %s (%d calls checked on rank 0, %d failures)\n",
               total ? "FAILED" : "OK", calls, total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
