/*
 * A member that finished is not a failed member: many
 * communicators created at once (dup and splits), each used for one
 * collective of each kind (each run twice with the same arguments), then
 * freed at once, with members of very different speeds: each round one
 * rank sleeps (1..8 ms) before one of its collectives on each
 * communicator, so the others - the root among them - finish and free the
 * communicator while it has not read yet.  With
 * MPI_ERRORS_RETURN every call must succeed and every result is checked.
 * test/mpi/run.sh runs it with a CPU hog beside it.
 *
 *   mpirun -np 4 ./comm_churn [ROUNDS (200)]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpi_check.h"

/* Failures name the round and the communicator (r, c where used) */
#undef CALL
#define CALL(_what, _call) \
    CALLF(_call, "round %d comm %d %s", r, c, _what)

#define NCOMMS 4
#define MAXN   (16 * 1024)  /* ints per member: 64 KiB */

static int wrank, wsize;

/* One collective of kind @a k on @a comm; values depend on (r, c, k) */
static void one(MPI_Comm comm, int r, int c, int k, int *a, int *b, int *big)
{
    int size, rank, root, n, i, salt = r * 131 + c * 17 + k;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    root = (r + k + c) % size;
    n    = (r % 5 == 0) ? MAXN : 1 + (r * 13 + k * 7 + c) % 200;

    switch (k) {
    case 0:
        for (i = 0; i < n; ++i) a[i] = (rank == root) ? salt + i : -1;
        CALL("bcast", MPI_Bcast(a, n, MPI_INT, root, comm));
        for (i = 0; i < n; ++i) {
            if (a[i] != salt + i) {
                CHECK(0, "round %d comm %d bcast [%d]=%d", r, c, i, a[i]);
                break;
            }
        }
        break;
    case 1:
        for (i = 0; i < n; ++i) { a[i] = rank + salt + i; b[i] = -1; }
        CALL("reduce", MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, comm));
        for (i = 0; (rank == root) && (i < n); ++i) {
            if (b[i] != size * (salt + i) + size * (size - 1) / 2) {
                CHECK(0, "round %d comm %d reduce [%d]=%d", r, c, i, b[i]);
                break;
            }
        }
        break;
    case 2:
        for (i = 0; i < n; ++i) a[i] = rank * 3 + salt + i;
        CALL("allreduce", MPI_Allreduce(a, b, n, MPI_INT, MPI_MAX, comm));
        for (i = 0; i < n; ++i) {
            if (b[i] != (size - 1) * 3 + salt + i) {
                CHECK(0, "round %d comm %d allreduce [%d]=%d", r, c, i, b[i]);
                break;
            }
        }
        break;
    case 3:
        CALL("barrier", MPI_Barrier(comm));
        break;
    case 4:
        n = n / size + 1;
        for (i = 0; i < n; ++i) a[i] = rank * 100000 + salt + i;
        CALL("gather", MPI_Gather(a, n, MPI_INT, big, n, MPI_INT, root, comm));
        for (i = 0; (rank == root) && (i < n * size); ++i) {
            if (big[i] != (i / n) * 100000 + salt + i % n) {
                CHECK(0, "round %d comm %d gather [%d]=%d", r, c, i, big[i]);
                break;
            }
        }
        break;
    case 5:
        n = n / size + 1;
        for (i = 0; i < n * size; ++i) big[i] = (rank == root) ? salt + i : -1;
        CALL("scatter",
             MPI_Scatter(big, n, MPI_INT, b, n, MPI_INT, root, comm));
        for (i = 0; i < n; ++i) {
            if (b[i] != salt + rank * n + i) {
                CHECK(0, "round %d comm %d scatter [%d]=%d", r, c, i, b[i]);
                break;
            }
        }
        break;
    case 6:
        n = n / size + 1;
        for (i = 0; i < n; ++i) a[i] = rank * 100000 + salt + i;
        CALL("allgather", MPI_Allgather(a, n, MPI_INT, big, n, MPI_INT, comm));
        for (i = 0; i < n * size; ++i) {
            if (big[i] != (i / n) * 100000 + salt + i % n) {
                CHECK(0, "round %d comm %d allgather [%d]=%d", r, c, i, big[i]);
                break;
            }
        }
        break;
    }
}

int main(int argc, char **argv)
{
    int rounds = (argc > 1) ? atoi(argv[1]) : 200;
    int *a, *b, *big, r, c, k, slow, all_errors;
    MPI_Comm comms[NCOMMS];
    double start;

    check_init(&argc, &argv, &wrank, &wsize);
    a   = malloc(MAXN * sizeof(int));
    b   = malloc(MAXN * sizeof(int));
    big = malloc((size_t)(MAXN + wsize) * wsize * sizeof(int));
    start = MPI_Wtime();

    for (r = 0; r < rounds; ++r) {
        c = -1;
        /* created at once; all inherit MPI_ERRORS_RETURN */
        CALL("dup", MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]));
        CALL("split", MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wsize - wrank,
                                     &comms[1]));
        CALL("split", MPI_Comm_split(MPI_COMM_WORLD, ((wrank + r) % 3) != 0,
                                     wrank, &comms[2]));
        CALL("dup", MPI_Comm_dup(comms[1], &comms[3]));

        /* each collective twice with the same arguments: coll/ucg agrees
         * before the first call of a kind on a communicator (which lines
         * the ranks up), not before the repeated one; this round's slow
         * rank sleeps before one repeated collective on each communicator,
         * the last one (allgather) on every other round */
        slow = r % wsize;
        for (c = 0; c < NCOMMS; ++c) {
            for (k = 0; k < 7; ++k) {
                one(comms[c], r, c, k, a, b, big);
                if ((wrank == slow) &&
                    (k == ((r % 2) ? 6 : (r / 2 + c) % 7))) {
                    usleep(1000 * (1 + (r * 7 + c * 3) % 8));
                }
                one(comms[c], r, c, k, a, b, big);
            }
        }

        /* freed at once, in an order that differs from creation */
        for (c = NCOMMS - 1; c >= 0; --c) {
            CALL("free", MPI_Comm_free(&comms[(c + r) % NCOMMS]));
        }
    }

    c = -1;
    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) {
        printf("comm_churn: %s (%d errors, %d rounds, %d calls per rank, "
               "%d ranks, %.1f s)\n", all_errors ? "FAILED" : "OK",
               all_errors, rounds, calls, wsize, MPI_Wtime() - start);
    }
    free(a); free(b); free(big);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
