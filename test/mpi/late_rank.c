/*
 * Slow is not dead: a rank that arrives late at its
 * first collective on a communicator must not fail anyone.  With
 * MPI_ERRORS_RETURN, every rank checks that every call succeeds and its
 * result.
 *
 *   mpirun -np 3 ./late_rank [SECONDS (12)]
 *
 * MPI_COMM_WORLD: rank 0 sleeps SECONDS before its first collective, a
 * bcast it is the root of (the others wait for it), then allreduce, reduce,
 * barrier.  Then rank 1 sleeps before the same calls again (repeated
 * parameters and buffers: no agreement in coll/ucg).  A dup: the last
 * rank sleeps SECONDS before its first collective there, a 1 MiB
 * allreduce (paths whose endpoints are made on first use), then a bcast
 * from rank 0, reduce, barrier.  SECONDS is longer than the old
 * default timeouts (UCX_UCG_PEER_TIMEOUT / UCX_O2M_PEER_TIMEOUT were
 * 10 s).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "mpi_check.h"

static int rank, size;

static void late(const char *comm_name, int who, unsigned seconds)
{
    if (rank == who) {
        printf("late_rank: rank %d sleeps %u s before its next collective "
               "on %s\n", rank, seconds, comm_name);
        fflush(stdout);
        sleep(seconds);
    }
}

static void small_colls(MPI_Comm comm, int root, int salt)
{
    int v[16], r[16], i;

    for (i = 0; i < 16; ++i) v[i] = (rank == root) ? salt + i : -1;
    CALL("bcast", MPI_Bcast(v, 16, MPI_INT, root, comm));
    for (i = 0; i < 16; ++i) CHECK(v[i] == salt + i, "bcast [%d]=%d", i, v[i]);

    for (i = 0; i < 16; ++i) v[i] = rank + i + salt;
    CALL("allreduce", MPI_Allreduce(v, r, 16, MPI_INT, MPI_SUM, comm));
    for (i = 0; i < 16; ++i)
        CHECK(r[i] == size * (i + salt) + size * (size - 1) / 2,
              "allreduce [%d]=%d", i, r[i]);

    CALL("reduce", MPI_Reduce(v, r, 16, MPI_INT, MPI_MAX, root, comm));
    if (rank == root)
        for (i = 0; i < 16; ++i)
            CHECK(r[i] == size - 1 + i + salt, "reduce [%d]=%d", i, r[i]);

    CALL("barrier", MPI_Barrier(comm));
}

int main(int argc, char **argv)
{
    unsigned seconds = (argc > 1) ? (unsigned)atoi(argv[1]) : 12;
    const int n = 256 * 1024; /* ints: 1 MiB */
    int *a, *b, i, all_errors;
    MPI_Comm dup;

    check_init(&argc, &argv, &rank, &size);

    /* MPI_COMM_WORLD: the root of the first bcast is late */
    late("MPI_COMM_WORLD", 0, seconds);
    small_colls(MPI_COMM_WORLD, 0, 100);

    /* late at a call that repeats the previous one (same parameters and
     * buffers: coll/ucg runs it without agreeing first, UCG itself waits) */
    small_colls(MPI_COMM_WORLD, 0, 100);
    late("MPI_COMM_WORLD (a repeated call)", 1 % size, seconds);
    small_colls(MPI_COMM_WORLD, 0, 100);

    /* a dup (inherits MPI_ERRORS_RETURN): a non-root is late */
    CALL("dup", MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    a = malloc(n * sizeof(int));
    b = malloc(n * sizeof(int));
    for (i = 0; i < n; ++i) a[i] = rank + i % 1000;
    late("a dup of MPI_COMM_WORLD", size - 1, seconds);
    CALL("allreduce 1 MiB", MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, dup));
    for (i = 0; i < n; ++i) {
        if (b[i] != size * (i % 1000) + size * (size - 1) / 2) {
            CHECK(0, "allreduce 1 MiB [%d]=%d", i, b[i]);
            break;
        }
    }
    small_colls(dup, 0, 200);
    MPI_Comm_free(&dup);
    free(a);
    free(b);

    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("late_rank: %s (%d errors, %d ranks, %u s late)\n",
               all_errors ? "FAILED" : "OK", all_errors, size, seconds);
    }
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
