/*
 * MPI_Gatherv, MPI_Scatterv, MPI_Allgatherv and their nonblocking forms,
 * checked against a local reference: every rank generates every rank's
 * blocks, and the whole receive buffer (gaps between the blocks, and the
 * holes of a strided type, included) must be what the reference says.
 *
 * Matrix: the three collectives x blocking / nonblocking (the nonblocking
 * calls of a group outstanding together, waited for in reverse order) x
 * types (int, double, char, a strided derived type: 2 ints with a hole
 * between them, packed by coll/ucg, and that type on the vector buffer's
 * side with twice as many MPI_INT on the other: datatypes that differ
 * between ranks with one signature) x counts per rank (all empty; mixed
 * with zeros; one rank larger; rising) x sizes (1 and 300 elements a unit)
 * x roots (0 and the last rank) x in place or not x communicators
 * (MPI_COMM_WORLD, halves of a split: odd sizes when the world's is, and
 * the world reversed).  The blocks lie in reverse rank order in the vector
 * buffer, one element apart.  Then the same buffers call after call with
 * counts that change between calls.
 *
 * Usage: coll_vcoll [ROUNDS]   (default 1)
 * Prints "coll_vcoll: OK" on rank 0 when every check passed.
 */
#include "mpi_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { C_GATHERV, C_SCATTERV, C_ALLGATHERV, C_LAST };
static const char *coll_names[] = {"gatherv", "scatterv", "allgatherv"};

enum { T_INT, T_DOUBLE, T_CHAR, T_STRIDED, T_MIXED, T_LAST };
static const char *type_names[] = {"int", "double", "char",
                                   "strided 2 int", "strided/2 x int"};

#define FILL 0x5a
#define NUM_PATTERNS 4

static MPI_Datatype g_strided; /* int, hole, int: extent 3 ints */

/* The datatype of the vector buffer (@a own: of this rank's own block) */
static MPI_Datatype mpi_type(int t, int own)
{
    const MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_CHAR, g_strided,
                                  g_strided};
    return ((t == T_MIXED) && own) ? MPI_INT : types[t];
}

/* Elements of this rank's own block for @a count in the vector buffer */
static int own_count(int t, int count)
{
    return (t == T_MIXED) ? 2 * count : count;
}

/* Bytes an element spans in a buffer (@a own: an element's worth of the
 * own block's datatype) */
static size_t extent_of(int t, int own)
{
    const size_t ext[] = {sizeof(int), sizeof(double), 1, 3 * sizeof(int),
                          3 * sizeof(int)};
    return ((t == T_MIXED) && own) ? 2 * sizeof(int) : ext[t];
}

static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352d;
    x ^= x >> 15;
    x *= 0x846ca68b;
    return x ^ (x >> 16);
}

/* Element @a i of rank @a rank's block, written at @a e (the hole of a
 * strided element is left as it is; @a own: in the own block's layout) */
static void gen(int t, int own, int rank, size_t i, int seed, char *e)
{
    uint32_t h = mix((uint32_t)rank * 7919u + (uint32_t)i * 131u +
                     (uint32_t)seed * 1000003u);
    int v[2] = {(int)h, (int)mix(h)};
    double d = (double)(int)(h % 100000) / 4.0;

    switch (t) {
    case T_INT:
        memcpy(e, &v[0], sizeof(int));
        break;
    case T_DOUBLE:
        memcpy(e, &d, sizeof(d));
        break;
    case T_CHAR:
        *e = (char)h;
        break;
    default:
        memcpy(e, &v[0], sizeof(int));
        memcpy(e + ((own && (t == T_MIXED)) ? 1 : 2) * sizeof(int), &v[1],
               sizeof(int));
        break;
    }
}

static void gen_block(int t, int own, int rank, int count, int seed,
                      char *buf)
{
    int i;

    for (i = 0; i < count; ++i) {
        gen(t, own, rank, i, seed, buf + (size_t)i * extent_of(t, own));
    }
}

static int v_count(int pattern, int r, int size, int n)
{
    switch (pattern) {
    case 0:  return 0;                             /* all empty */
    case 1:  return ((r * 5 + 3) % 7 == 0) ? 0 : ((r * 5 + 3) % 7) * n;
    case 2:  return (r == size - 1) ? 3 * n : 1;   /* one larger */
    default: return r + n;                         /* rising */
    }
}

typedef struct {
    int         coll, t, pattern, n, root, in_place, seed;
    int         *counts, *displs;
    int         vec;               /* elements of the vector buffer */
    char        *sbuf, *rbuf;
    size_t      slen, rlen;        /* bytes */
    MPI_Request req;
    int         keep;              /* the caller's buffers: not freed */
} call_t;

/* Buffers kept from call to call (run_same_buffers), large enough */
static char *g_keep_sbuf, *g_keep_rbuf;

static void call_setup(call_t *x, MPI_Comm comm, int coll, int t,
                       int pattern, int n, int root, int in_place, int seed)
{
    size_t ext = extent_of(t, 0), oext = extent_of(t, 1);
    int rank, size, r, pos, vroot;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    memset(x, 0, sizeof(*x));
    x->coll = coll; x->t = t; x->pattern = pattern; x->n = n;
    x->root = root; x->in_place = in_place; x->seed = seed;
    x->counts = malloc(sizeof(int) * size);
    x->displs = malloc(sizeof(int) * size);
    pos = 0;
    for (r = size; r-- > 0;) {
        x->counts[r] = v_count(pattern, r, size, n);
        x->displs[r] = pos;
        pos         += x->counts[r] + 1;
    }
    x->vec = pos;

    /* the vector buffer: the root's (every rank's in allgatherv) */
    vroot  = (coll == C_ALLGATHERV) || (rank == root);
    x->slen = ((coll == C_SCATTERV) && vroot) ? x->vec * ext :
              x->counts[rank] * oext;
    x->rlen = ((coll != C_SCATTERV) && vroot) ? x->vec * ext :
              x->counts[rank] * oext;
    if (g_keep_sbuf != NULL) {
        x->keep = 1;
        x->sbuf = g_keep_sbuf;
        x->rbuf = g_keep_rbuf;
    } else {
        x->sbuf = malloc(x->slen + 1);
        x->rbuf = malloc(x->rlen + 1);
    }
    memset(x->sbuf, FILL, x->slen + 1);
    memset(x->rbuf, FILL, x->rlen + 1);

    if (coll == C_SCATTERV) {
        if (rank == root) {
            for (r = 0; r < size; ++r) {
                gen_block(t, 0, r, x->counts[r], seed,
                          x->sbuf + (size_t)x->displs[r] * ext);
            }
        }
    } else if (in_place && vroot) {
        gen_block(t, 0, rank, x->counts[rank], seed,
                  x->rbuf + (size_t)x->displs[rank] * ext);
    } else {
        gen_block(t, 1, rank, x->counts[rank], seed, x->sbuf);
    }
}

static int call_post(call_t *x, MPI_Comm comm, int nb)
{
    MPI_Datatype dt = mpi_type(x->t, 0), odt = mpi_type(x->t, 1);
    int rank, ip, oc;

    MPI_Comm_rank(comm, &rank);
    oc = own_count(x->t, x->counts[rank]);
    ip = x->in_place && ((x->coll == C_ALLGATHERV) || (rank == x->root));
    switch (x->coll) {
    case C_GATHERV:
        return nb ? MPI_Igatherv(ip ? MPI_IN_PLACE : x->sbuf, oc, odt,
                                 x->rbuf, x->counts, x->displs, dt, x->root,
                                 comm, &x->req) :
                    MPI_Gatherv(ip ? MPI_IN_PLACE : x->sbuf, oc, odt,
                                x->rbuf, x->counts, x->displs, dt, x->root,
                                comm);
    case C_SCATTERV:
        return nb ? MPI_Iscatterv(x->sbuf, x->counts, x->displs, dt,
                                  ip ? MPI_IN_PLACE : x->rbuf, oc, odt,
                                  x->root, comm, &x->req) :
                    MPI_Scatterv(x->sbuf, x->counts, x->displs, dt,
                                 ip ? MPI_IN_PLACE : x->rbuf, oc, odt,
                                 x->root, comm);
    default:
        return nb ? MPI_Iallgatherv(ip ? MPI_IN_PLACE : x->sbuf, oc, odt,
                                    x->rbuf, x->counts, x->displs, dt, comm,
                                    &x->req) :
                    MPI_Allgatherv(ip ? MPI_IN_PLACE : x->sbuf, oc, odt,
                                   x->rbuf, x->counts, x->displs, dt, comm);
    }
}

static void call_check(call_t *x, MPI_Comm comm, const char *cname, int nb)
{
    size_t ext = extent_of(x->t, 0);
    int rank, size, r, vroot;
    char *exp;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    vroot = (x->coll == C_ALLGATHERV) || (rank == x->root);
    exp   = malloc(x->rlen + 1);
    memset(exp, FILL, x->rlen + 1);
    if (x->coll == C_SCATTERV) {
        if (!(x->in_place && (rank == x->root))) {
            gen_block(x->t, 1, rank, x->counts[rank], x->seed, exp);
        }
    } else if (vroot) {
        for (r = 0; r < size; ++r) {
            gen_block(x->t, 0, r, x->counts[r], x->seed,
                      exp + (size_t)x->displs[r] * ext);
        }
    }
    /* the byte after the buffer too: nothing written past it */
    CHECK(!memcmp(exp, x->rbuf, x->rlen + 1), "%s %s%s %s pattern %d x%d "
          "root %d on %s rank %d/%d: wrong result",
          nb ? "nonblocking" : "blocking", coll_names[x->coll],
          x->in_place ? " in place" : "", type_names[x->t], x->pattern,
          x->n, x->root, cname, rank, size);
    free(exp);
    if (!x->keep) {
        free(x->sbuf);
        free(x->rbuf);
    }
    free(x->counts);
    free(x->displs);
}

#define MAX_OUTSTANDING (C_LAST * 2 * 2)

static void run_comm(MPI_Comm comm, const char *cname, int round)
{
    const int sizes[] = {1, 300};
    call_t pend[MAX_OUTSTANDING];
    int size, c, t, p, s, ip, nb, k, ri, seed = round * 1000000;
    int roots[2];

    MPI_Comm_size(comm, &size);
    roots[0] = 0;
    roots[1] = size - 1;
    for (t = 0; t < T_LAST; ++t) {
        for (p = 0; p < NUM_PATTERNS; ++p) {
            for (s = 0; s < 2; ++s) {
                for (nb = 0; nb < 2; ++nb) {
                    k = 0;
                    for (c = 0; c < C_LAST; ++c) {
                        for (ri = 0; ri < 2; ++ri) {
                            for (ip = 0; ip < 2; ++ip) {
                                call_t *x = &pend[k++];
                                call_setup(x, comm, c, t, p, sizes[s],
                                           roots[ri], ip, ++seed);
                                CALLF(call_post(x, comm, nb), "%s %s%s %s "
                                      "pattern %d x%d root %d on %s",
                                      nb ? "posting" : "calling",
                                      coll_names[c], ip ? " in place" : "",
                                      type_names[t], p, sizes[s], roots[ri],
                                      cname);
                                if (!nb) {
                                    call_check(x, comm, cname, 0);
                                }
                            }
                        }
                    }
                    if (nb) {
                        /* all outstanding together; completed in reverse */
                        for (k = MAX_OUTSTANDING; k-- > 0;) {
                            CALL("MPI_Wait", MPI_Wait(&pend[k].req,
                                                      MPI_STATUS_IGNORE));
                        }
                        for (k = 0; k < MAX_OUTSTANDING; ++k) {
                            call_check(&pend[k], comm, cname, 1);
                        }
                    }
                }
            }
        }
    }
}

/*
 * The same buffers call after call, as loops do (coll/ucg then reuses the
 * request it made, when the counts are the same too): three calls with
 * one set of counts, then three with others, then the first again; every
 * result checked, so a request reused with other counts shows
 */
static void run_same_buffers(MPI_Comm comm, const char *cname, int round)
{
    const int patterns[] = {1, 1, 1, 3, 3, 3, 1, 2};
    int c, i, nb, seed = round * 1000000 + 900000;
    call_t x;

    g_keep_sbuf = malloc(1 << 20);
    g_keep_rbuf = malloc(1 << 20);
    for (c = 0; c < C_LAST; ++c) {
        for (nb = 0; nb < 2; ++nb) {
            for (i = 0; i < (int)(sizeof(patterns) / sizeof(*patterns));
                 ++i) {
                call_setup(&x, comm, c, T_INT, patterns[i], 5, 0, 0,
                           ++seed);
                CALLF(call_post(&x, comm, nb), "%s same buffers call %d on "
                      "%s", coll_names[c], i, cname);
                if (nb) {
                    CALL("MPI_Wait", MPI_Wait(&x.req, MPI_STATUS_IGNORE));
                }
                call_check(&x, comm, cname, nb);
            }
        }
    }
    free(g_keep_sbuf);
    free(g_keep_rbuf);
    g_keep_sbuf = g_keep_rbuf = NULL;
}

int main(int argc, char **argv)
{
    int rank, size, rounds = (argc > 1) ? atoi(argv[1]) : 1, i, total;
    MPI_Comm half, rev;
    MPI_Datatype vec;

    check_init(&argc, &argv, &rank, &size);
    /* int, hole, int; resized so that consecutive elements follow the
     * second int's hole: extent 3 ints */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 3 * sizeof(int), &g_strided);
    MPI_Type_commit(&g_strided);
    MPI_Type_free(&vec);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(rev, MPI_ERRORS_RETURN);

    for (i = 0; i < rounds; ++i) {
        run_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD", i);
        run_comm(half, "half", i);
        run_comm(rev, "reversed", i);
        run_same_buffers(MPI_COMM_WORLD, "MPI_COMM_WORLD", i);
        run_same_buffers(half, "half", i);
    }

    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    MPI_Type_free(&g_strided);
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_vcoll: %s (%d calls checked on rank 0, %d failures)\n",
               total ? "FAILED" : "OK", calls, total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
