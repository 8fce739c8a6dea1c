/*
 * coll/ucg: a collective that the ranks decided to run on UCG and whose
 * start then fails on one rank only must not leave the others waiting.
 * Run with the component's test-only knobs, e.g.
 *   mpirun -np 3 --mca coll_ucg_test_fail_point 2 \
 *          --mca coll_ucg_test_fail_rank 1 --mca coll_ucg_test_fail_call 9 \
 *          ./coll_abort 1
 * (the argument names the failing rank; a third argument "nb" runs the
 * nonblocking forms, each completed by MPI_Wait, for
 * coll_ucg_test_fail_point 3).  On the communicator of that
 * call, the call returns an error on the failing rank; every rank gets an
 * error from it or from the next call on, and from then on only errors
 * (the UCG group failed everywhere: fail-stop, never a wrong result); on
 * the other communicator every call succeeds with the right result.
 * run.sh bounds each run with timeout: before the abort message the other
 * ranks waited forever.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_check.h"

#define N 16

static int rank, size;

/* Per communicator (0: MPI_COMM_WORLD, 1: its dup): calls made, index of
 * the first that failed (-1: none), and successes after it */
static int ncalls[2], first_failed[2] = {-1, -1}, late_success[2];

static int nb; /* the nonblocking forms, each then waited for */

/* Blocking call @a _blocking, or with @a nb its nonblocking form
 * @a _nonblocking (with its request argument last) and its wait */
#define COLL(_blocking, _nonblocking, ...) \
    (nb ? coll_wait(_nonblocking(__VA_ARGS__, &req)) : \
          _blocking(__VA_ARGS__))

static MPI_Request req;

static int coll_wait(int rc)
{
    return (rc != MPI_SUCCESS) ? rc : MPI_Wait(&req, MPI_STATUS_IGNORE);
}

/* A call whose error is counted; its results are checked if it succeeded */
#define TRY(_c, _call, _check) \
    do { \
        int _rc = (_call); \
        if (_rc != MPI_SUCCESS) { \
            if (first_failed[_c] < 0) first_failed[_c] = ncalls[_c]; \
        } else { \
            if (first_failed[_c] >= 0) ++late_success[_c]; \
            _check; \
        } \
        ++ncalls[_c]; \
    } while (0)

static void round_on(MPI_Comm comm, int c, int r, int *a, int *b, int *big)
{
    int csize, crank, root, i;

    MPI_Comm_size(comm, &csize);
    MPI_Comm_rank(comm, &crank);
    root = r % csize;

    for (i = 0; i < N; ++i) a[i] = (crank == root) ? r * 1000 + i : -1;
    TRY(c, COLL(MPI_Bcast, MPI_Ibcast, a, N, MPI_INT, root, comm),
        for (i = 0; i < N; ++i)
            CHECK(a[i] == r * 1000 + i, "bcast r%d [%d]=%d", r, i, a[i]));

    for (i = 0; i < N; ++i) a[i] = crank + i + r;
    TRY(c, COLL(MPI_Allreduce, MPI_Iallreduce, a, b, N, MPI_INT, MPI_SUM,
                 comm),
        for (i = 0; i < N; ++i)
            CHECK(b[i] == csize * (i + r) + csize * (csize - 1) / 2,
                  "allreduce r%d [%d]=%d", r, i, b[i]));

    TRY(c, COLL(MPI_Reduce, MPI_Ireduce, a, b, N, MPI_INT, MPI_MAX, root,
                 comm),
        if (crank == root)
            for (i = 0; i < N; ++i)
                CHECK(b[i] == csize - 1 + i + r, "reduce r%d [%d]=%d", r, i,
                      b[i]));

    TRY(c, COLL(MPI_Barrier, MPI_Ibarrier, comm), (void)0);

    for (i = 0; i < N; ++i) a[i] = crank * 100000 + i + r;
    TRY(c, COLL(MPI_Allgather, MPI_Iallgather, a, N, MPI_INT, big, N,
                 MPI_INT, comm),
        for (i = 0; i < N * csize; ++i)
            CHECK(big[i] == (i / N) * 100000 + i % N + r,
                  "allgather r%d [%d]=%d", r, i, big[i]));
}

/* What a rank reports to rank 0 */
enum { R_FIRST_WORLD, R_FIRST_DUP, R_LATE_WORLD, R_LATE_DUP, R_WRONG,
       R_CALLS, R_NUM };

int main(int argc, char **argv)
{
    int fail_rank = (argc > 1) ? atoi(argv[1]) : -1;
    int rounds    = (argc > 2) ? atoi(argv[2]) : 6;
    int a[N], b[N], *big, *all, r, c, f, ff, ok = 1;
    int mine[R_NUM];
    MPI_Comm dup;

    nb = (argc > 3) && !strcmp(argv[3], "nb");
    check_init(&argc, &argv, &rank, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);

    big = malloc(sizeof(int) * N * size);
    all = malloc(sizeof(int) * R_NUM * size);
    for (r = 0; r < rounds; ++r) {
        round_on(MPI_COMM_WORLD, 0, r, a, b, big);
        round_on(dup, 1, r, a, b, big);
    }

    /* to rank 0 point-to-point: the collectives of a communicator may
     * fail by now */
    mine[R_FIRST_WORLD] = first_failed[0];
    mine[R_FIRST_DUP]   = first_failed[1];
    mine[R_LATE_WORLD]  = late_success[0];
    mine[R_LATE_DUP]    = late_success[1];
    mine[R_WRONG]       = errors;
    mine[R_CALLS]       = ncalls[0];
    if (rank != 0) {
        MPI_Send(mine, R_NUM, MPI_INT, 0, 7, MPI_COMM_WORLD);
    } else {
        for (r = 0; r < size; ++r) {
            if (r == 0) {
                for (c = 0; c < R_NUM; ++c) all[c] = mine[c];
            } else {
                MPI_Recv(all + r * R_NUM, R_NUM, MPI_INT, r, 7,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        for (r = 0; r < size; ++r) {
            int *x = all + r * R_NUM;
            printf("coll_abort: rank %d: first failed call %d (world) %d "
                   "(dup) of %d each; successes after it %d %d; %d wrong "
                   "results\n", r, x[R_FIRST_WORLD], x[R_FIRST_DUP],
                   x[R_CALLS], x[R_LATE_WORLD], x[R_LATE_DUP], x[R_WRONG]);
            /* fail-stop, and never a wrong result */
            ok &= (x[R_LATE_WORLD] == 0) && (x[R_LATE_DUP] == 0) &&
                  (x[R_WRONG] == 0);
        }
        if ((fail_rank >= 0) && (fail_rank < size)) {
            /* one communicator failed on the failing rank; on it the
             * others failed at that call or the next; the other one never
             * failed */
            ok &= ((all[fail_rank * R_NUM + R_FIRST_WORLD] >= 0) !=
                   (all[fail_rank * R_NUM + R_FIRST_DUP] >= 0));
            for (c = 0; c < 2; ++c) {
                ff = all[fail_rank * R_NUM + c];
                for (r = 0; r < size; ++r) {
                    f   = all[r * R_NUM + c];
                    ok &= (ff < 0) ? (f < 0) : ((f >= ff) && (f <= ff + 1));
                }
            }
        }
        printf("coll_abort: %s (rank %d was to fail a start)\n",
               ok ? "OK" : "FAILED", fail_rank);
    }
    (void)calls;
    free(big);
    free(all);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return (rank == 0) ? !ok : 0;
}
