/*
 * Persistent collectives (MPI 4.0): MPI_Bcast_init, MPI_Allreduce_init,
 * MPI_Reduce_init, MPI_Barrier_init, MPI_Gather_init, MPI_Scatter_init and
 * MPI_Allgather_init, each initialized once per communicator and started
 * many times (MPI_Startall of all of them, then MPI_Start one by one),
 * with the input changed between starts, results checked against a local
 * reference after every completion.
 *
 * Variants: contiguous and strided (packed) datatypes, in place, roots
 * that move between requests, on MPI_COMM_WORLD, a duplicate, a reversed
 * split and an odd-sized subset.
 *
 * Usage: coll_persist [ROUNDS [free]]    (default 20)
 *   free: the strided datatype is freed once the requests exist, as MPI
 *   allows (the requests keep it alive); Open MPI 5.0.7's own libnbc
 *   crashes then (its persistent requests do not retain their datatypes:
 *   ompi_coll_base_retain_datatypes skips a complete request, as an
 *   inactive persistent one is), so only with coll/ucg
 * Prints "coll_persist: OK" on rank 0 when every check passed; with an MPI
 * older than 4.0 (no persistent collectives) it prints "coll_persist: MPI
 * < 4.0" and fails: test/mpi/run.sh runs it on Open MPI 5 only.
 */
#include "mpi_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* MPI 4.0 persistent collectives: Open MPI 5.0 has them (though it reports
 * MPI 3.1) */
#if (MPI_VERSION >= 4) || \
    (defined(OMPI_MAJOR_VERSION) && (OMPI_MAJOR_VERSION >= 5))

#define MAX_OPS 16

enum { K_BCAST, K_BCAST_STRIDED, K_ALLREDUCE, K_ALLREDUCE_INPLACE,
       K_REDUCE, K_BARRIER, K_GATHER, K_GATHER_INPLACE, K_SCATTER,
       K_SCATTER_INPLACE, K_ALLGATHER, K_ALLGATHER_INPLACE,
       K_ALLGATHER_STRIDED, K_LAST };

static const char *kind_names[] = {
    "bcast_init", "bcast_init(strided)", "allreduce_init",
    "allreduce_init(in place)", "reduce_init", "barrier_init",
    "gather_init", "gather_init(in place)", "scatter_init",
    "scatter_init(in place)", "allgather_init", "allgather_init(in place)",
    "allgather_init(strided)"
};

typedef struct {
    MPI_Comm    comm;
    const char  *comm_name;
    int         rank, size;
    int         kind, root, count;
    int         *in, *out;       /* what the request was created with */
    MPI_Request req;
} op_t;

static MPI_Datatype g_strided; /* an int with the extent of two: a count
                                  of it is every other int */

static int val(int rank, int i, int seed)
{
    uint32_t x = (uint32_t)rank * 2654435761u ^ (uint32_t)i * 40503u ^
                 (uint32_t)seed * 97u;

    x ^= x >> 13;
    return (int)(x % 1000) - 500;
}

static int *alloc_ints(size_t n)
{
    int *p = calloc(n ? n : 1, sizeof(int));

    if (p == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

/* Create op's persistent request (its comm, kind, root, count set) */
static void create(op_t *op)
{
    int n = op->size, c = op->count;

    op->in  = alloc_ints((size_t)c * n * 2);
    op->out = alloc_ints((size_t)c * n * 2);
    switch (op->kind) {
    case K_BCAST:
        CALL("MPI_Bcast_init", MPI_Bcast_init(op->out, c, MPI_INT, op->root,
             op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_BCAST_STRIDED:
        CALL("MPI_Bcast_init", MPI_Bcast_init(op->out, c, g_strided, op->root,
             op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_ALLREDUCE:
        CALL("MPI_Allreduce_init", MPI_Allreduce_init(op->in, op->out, c,
             MPI_INT, MPI_SUM, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_ALLREDUCE_INPLACE:
        CALL("MPI_Allreduce_init", MPI_Allreduce_init(MPI_IN_PLACE, op->out,
             c, MPI_INT, MPI_MAX, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_REDUCE:
        CALL("MPI_Reduce_init", MPI_Reduce_init(op->in, op->out, c, MPI_INT,
             MPI_SUM, op->root, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_BARRIER:
        CALL("MPI_Barrier_init", MPI_Barrier_init(op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_GATHER:
        CALL("MPI_Gather_init", MPI_Gather_init(op->in, c, MPI_INT, op->out,
             c, MPI_INT, op->root, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_GATHER_INPLACE:
        CALL("MPI_Gather_init", MPI_Gather_init(
             (op->rank == op->root) ? MPI_IN_PLACE : op->in, c, MPI_INT,
             op->out, c, MPI_INT, op->root, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_SCATTER:
        CALL("MPI_Scatter_init", MPI_Scatter_init(op->in, c, MPI_INT,
             op->out, c, MPI_INT, op->root, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_SCATTER_INPLACE:
        CALL("MPI_Scatter_init", MPI_Scatter_init(op->in, c, MPI_INT,
             (op->rank == op->root) ? MPI_IN_PLACE : op->out, c, MPI_INT,
             op->root, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_ALLGATHER:
        CALL("MPI_Allgather_init", MPI_Allgather_init(op->in, c, MPI_INT,
             op->out, c, MPI_INT, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_ALLGATHER_INPLACE:
        CALL("MPI_Allgather_init", MPI_Allgather_init(MPI_IN_PLACE, c,
             MPI_INT, op->out, c, MPI_INT, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_ALLGATHER_STRIDED:
        /* a strided send block, contiguous receive blocks */
        CALL("MPI_Allgather_init", MPI_Allgather_init(op->in, c, g_strided,
             op->out, c, MPI_INT, op->comm, MPI_INFO_NULL, &op->req));
        break;
    }
}

/* Fill op's buffers for the start of round @a seed */
static void fill(op_t *op, int seed)
{
    int n = op->size, r = op->rank, c = op->count, i, k;

    memset(op->out, 0x5a, (size_t)c * n * 2 * sizeof(int));
    switch (op->kind) {
    case K_BCAST:
        for (i = 0; (r == op->root) && (i < c); ++i) {
            op->out[i] = val(op->root, i, seed);
        }
        break;
    case K_BCAST_STRIDED:
        for (i = 0; (r == op->root) && (i < c); ++i) {
            op->out[2 * i] = val(op->root, i, seed);
        }
        break;
    case K_ALLREDUCE:
    case K_REDUCE:
        for (i = 0; i < c; ++i) {
            op->in[i] = val(r, i, seed);
        }
        break;
    case K_ALLREDUCE_INPLACE:
        for (i = 0; i < c; ++i) {
            op->out[i] = val(r, i, seed);
        }
        break;
    case K_GATHER:
    case K_ALLGATHER:
        for (i = 0; i < c; ++i) {
            op->in[i] = val(r, i, seed);
        }
        break;
    case K_GATHER_INPLACE:
        for (i = 0; i < c; ++i) {
            op->in[i] = val(r, i, seed);
            if (r == op->root) {
                op->out[r * c + i] = val(r, i, seed);
            }
        }
        break;
    case K_ALLGATHER_INPLACE:
        for (i = 0; i < c; ++i) {
            op->out[r * c + i] = val(r, i, seed);
        }
        break;
    case K_ALLGATHER_STRIDED:
        for (i = 0; i < c; ++i) {
            op->in[2 * i]     = val(r, i, seed);
            op->in[2 * i + 1] = -1; /* not sent */
        }
        break;
    case K_SCATTER:
    case K_SCATTER_INPLACE:
        for (k = 0; (r == op->root) && (k < n); ++k) {
            for (i = 0; i < c; ++i) {
                op->in[k * c + i] = val(k, i, seed);
            }
        }
        break;
    }
}

/* Check op's result of round @a seed */
static void check(op_t *op, int seed)
{
    int n = op->size, r = op->rank, c = op->count, i, k, e, got;

#define EXPECT(_idx, _exp) \
    do { \
        got = op->out[_idx]; \
        e   = (_exp); \
        if (got != e) { \
            check_fail("%s on %s round %d rank %d root %d count %d: " \
                       "[%d] = %d, expected %d", kind_names[op->kind], \
                       op->comm_name, seed, r, op->root, c, (int)(_idx), \
                       got, e); \
            return; \
        } \
    } while (0)

    switch (op->kind) {
    case K_BCAST:
        for (i = 0; i < c; ++i) {
            EXPECT(i, val(op->root, i, seed));
        }
        break;
    case K_BCAST_STRIDED:
        for (i = 0; i < c; ++i) {
            EXPECT(2 * i, val(op->root, i, seed));
            EXPECT(2 * i + 1, 0x5a5a5a5a); /* the gaps untouched */
        }
        break;
    case K_ALLREDUCE:
    case K_REDUCE:
        if ((op->kind == K_REDUCE) && (r != op->root)) {
            break;
        }
        for (i = 0; i < c; ++i) {
            for (k = 0, e = 0; k < n; ++k) {
                e += val(k, i, seed);
            }
            EXPECT(i, e);
        }
        break;
    case K_ALLREDUCE_INPLACE:
        for (i = 0; i < c; ++i) {
            int mx = val(0, i, seed);

            for (k = 1; k < n; ++k) {
                mx = (val(k, i, seed) > mx) ? val(k, i, seed) : mx;
            }
            EXPECT(i, mx);
        }
        break;
    case K_GATHER:
    case K_GATHER_INPLACE:
        if (r != op->root) {
            break;
        }
        /* fall through */
    case K_ALLGATHER:
    case K_ALLGATHER_INPLACE:
    case K_ALLGATHER_STRIDED:
        for (k = 0; k < n; ++k) {
            for (i = 0; i < c; ++i) {
                EXPECT(k * c + i, val(k, i, seed));
            }
        }
        break;
    case K_SCATTER:
        for (i = 0; i < c; ++i) {
            EXPECT(i, val(r, i, seed));
        }
        break;
    case K_SCATTER_INPLACE:
        if (r == op->root) {
            break; /* the root's block stays in its send buffer */
        }
        for (i = 0; i < c; ++i) {
            EXPECT(i, val(r, i, seed));
        }
        break;
    }
#undef EXPECT
}

/* One communicator's requests: every kind, counts and roots varied */
static int setup(op_t *ops, MPI_Comm comm, const char *name, int shift)
{
    static const int counts[] = {1, 7, 300, 2100};
    int n, r, k;

    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    for (k = 0; k < K_LAST; ++k) {
        ops[k].comm      = comm;
        ops[k].comm_name = name;
        ops[k].rank      = r;
        ops[k].size      = n;
        ops[k].kind      = k;
        ops[k].root      = (k + shift) % n;
        ops[k].count     = counts[(k + shift) % 4];
        create(&ops[k]);
    }
    return K_LAST;
}

int main(int argc, char **argv)
{
    int rounds = (argc > 1) ? atoi(argv[1]) : 20;
    int free_early = (argc > 2) && !strcmp(argv[2], "free");
    op_t ops[4 * K_LAST];
    MPI_Request reqs[4 * K_LAST];
    MPI_Comm dup, rev, odd;
    int rank, size, nops = 0, round, i, total;

    check_init(&argc, &argv, &rank, &size);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &g_strided);
    MPI_Type_commit(&g_strided);

    CALL("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CALL("MPI_Comm_split", MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank,
                                          &rev));
    /* an odd-sized subset (all ranks but the last when size is even) */
    CALL("MPI_Comm_split", MPI_Comm_split(MPI_COMM_WORLD,
         ((size % 2 == 0) && (rank == size - 1)) ? MPI_UNDEFINED : 1, rank,
         &odd));
    nops += setup(ops + nops, MPI_COMM_WORLD, "world", 0);
    nops += setup(ops + nops, dup, "dup", 1);
    nops += setup(ops + nops, rev, "reversed", 2);
    if ((odd != MPI_COMM_NULL) && (size > 2)) {
        nops += setup(ops + nops, odd, "odd", 3);
    }
    if (free_early) {
        MPI_Type_free(&g_strided);
    }

    for (round = 0; round < rounds; ++round) {
        for (i = 0; i < nops; ++i) {
            fill(&ops[i], round);
            reqs[i] = ops[i].req;
        }
        if (round % 2 == 0) {
            /* all at once, completed together */
            CALL("MPI_Startall", MPI_Startall(nops, reqs));
            CALL("MPI_Waitall", MPI_Waitall(nops, reqs,
                                            MPI_STATUSES_IGNORE));
        } else {
            /* one by one, completed in reverse order by MPI_Test loops */
            for (i = 0; i < nops; ++i) {
                CALL("MPI_Start", MPI_Start(&reqs[i]));
            }
            for (i = nops - 1; i >= 0; --i) {
                int flag = 0;

                while (!flag) {
                    CALL("MPI_Test", MPI_Test(&reqs[i], &flag,
                                              MPI_STATUS_IGNORE));
                    if (errors) {
                        break;
                    }
                }
            }
        }
        for (i = 0; i < nops; ++i) {
            check(&ops[i], round);
        }
    }

    for (i = 0; i < nops; ++i) {
        CALL("MPI_Request_free", MPI_Request_free(&ops[i].req));
        free(ops[i].in);
        free(ops[i].out);
    }
    if (!free_early) {
        MPI_Type_free(&g_strided);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&rev);
    if (odd != MPI_COMM_NULL) {
        MPI_Comm_free(&odd);
    }

    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_persist: %s (%d ranks, %d requests on rank 0, %d "
               "rounds, %d errors)\n", total ? "FAILED" : "OK", size, nops,
               rounds, total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}

#else /* no MPI_Bcast_init */

int main(int argc, char **argv)
{
    int rank, size;

    check_init(&argc, &argv, &rank, &size);
    (void)calls;
    CHECK(rank != 0, "coll_persist: MPI < 4.0, no persistent collectives");
    MPI_Finalize();
    return 1;
}

#endif
