/*
 * coll/ucg: a failure on one rank only must not leave the others waiting.
 * Run with the component's test-only knobs, e.g.
 *   mpirun -np 3 --mca coll_ucg_test_fail_rank 1 \
 *          --mca coll_ucg_test_fail_call 4 ./coll_fault
 * which make one rank's preparation of one call fail (as if out of memory).
 * Every collective below must then return MPI_SUCCESS on every rank with
 * the right result (the ranks fall back together), or return an error on
 * every rank; never hang (run.sh bounds each run with timeout).
 *
 * The calls vary their parameters (count, root, datatype layout, sizes
 * beyond the component's scratch buffers), on MPI_COMM_WORLD and on a dup,
 * so that many of them need the component's agreement.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_check.h"

static int rank, size;

static void round_on(MPI_Comm comm, int r, int *a, int *b, int *big, int n)
{
    int csize, crank, root, i, count = 1 + (r * 37) % n;
    MPI_Datatype vec;

    MPI_Comm_size(comm, &csize);
    MPI_Comm_rank(comm, &crank);
    root = r % csize;

    for (i = 0; i < count; ++i) a[i] = (crank == root) ? r * 1000 + i : -1;
    CALL("bcast", MPI_Bcast(a, count, MPI_INT, root, comm));
    for (i = 0; i < count; ++i)
        CHECK(a[i] == r * 1000 + i, "bcast r%d [%d]=%d", r, i, a[i]);

    for (i = 0; i < count; ++i) a[i] = crank + i + r;
    CALL("allreduce", MPI_Allreduce(a, b, count, MPI_INT, MPI_SUM, comm));
    for (i = 0; i < count; ++i)
        CHECK(b[i] == csize * (i + r) + csize * (csize - 1) / 2,
              "allreduce r%d [%d]=%d", r, i, b[i]);

    for (i = 0; i < count; ++i) b[i] = -1;
    CALL("reduce", MPI_Reduce(a, b, count, MPI_INT, MPI_MAX, root, comm));
    if (crank == root)
        for (i = 0; i < count; ++i)
            CHECK(b[i] == csize - 1 + i + r, "reduce r%d [%d]=%d", r, i,
                  b[i]);

    CALL("barrier", MPI_Barrier(comm));

    for (i = 0; i < count; ++i) a[i] = crank * 100000 + i;
    CALL("gather",
         MPI_Gather(a, count, MPI_INT, big, count, MPI_INT, root, comm));
    if (crank == root)
        for (i = 0; i < count * csize; ++i)
            CHECK(big[i] == (i / count) * 100000 + i % count,
                  "gather r%d [%d]=%d", r, i, big[i]);

    for (i = 0; i < count * csize; ++i) big[i] = (crank == root) ? i + r : -1;
    CALL("scatter",
         MPI_Scatter(big, count, MPI_INT, b, count, MPI_INT, root, comm));
    for (i = 0; i < count; ++i)
        CHECK(b[i] == crank * count + i + r, "scatter r%d [%d]=%d", r, i,
              b[i]);

    for (i = 0; i < count; ++i) a[i] = crank * 100000 + i + r;
    CALL("allgather",
         MPI_Allgather(a, count, MPI_INT, big, count, MPI_INT, comm));
    for (i = 0; i < count * csize; ++i)
        CHECK(big[i] == (i / count) * 100000 + i % count + r,
              "allgather r%d [%d]=%d", r, i, big[i]);

    /* packed: a strided type, beyond the scratch buffers every 4th round */
    count = (r % 4 == 0) ? n / 2 : count / 2 + 1;
    MPI_Type_vector(count, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (i = 0; i < 2 * count; ++i) a[i] = (crank == root) ? i - r : -7;
    CALL("vector bcast", MPI_Bcast(a, 1, vec, root, comm));
    for (i = 0; i < 2 * count; ++i)
        CHECK(a[i] == ((i % 2 == 0 || crank == root) ? i - r : -7),
              "vector bcast r%d [%d]=%d", r, i, a[i]);
    MPI_Type_free(&vec);
}

int main(int argc, char **argv)
{
    const int n = 64 * 1024; /* ints: 256 KiB, beyond the scratch buffers */
    int rounds = (argc > 1) ? atoi(argv[1]) : 12;
    int *a, *b, *big, r, all_errors;
    MPI_Comm dup;

    check_init(&argc, &argv, &rank, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);

    a   = malloc(2 * n * sizeof(int));
    b   = malloc(2 * n * sizeof(int));
    big = malloc((size_t)n * size * sizeof(int));
    for (r = 0; r < rounds; ++r) {
        round_on(MPI_COMM_WORLD, r, a, b, big, n);
        round_on(dup, r, a, b, big, n);
        round_on(dup, r, a, b, big, n); /* the same parameters again */
    }

    MPI_Comm_free(&dup);
    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_fault: %s (%d errors, %d calls per rank, %d ranks)\n",
               all_errors ? "FAILED" : "OK", all_errors, calls, size);
    }
    free(a); free(b); free(big);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
