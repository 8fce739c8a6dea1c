/* Small check of coll/ucg: results of the collectives it runs.  Not built
 * by default: make coll_ucg_test; see README.md for the mpirun line. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errors;

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            printf("rank %d: FAIL: ", rank); printf(__VA_ARGS__); printf("\n"); \
            ++errors; \
        } \
    } while (0)

static void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    for (int i = 0; i < *len; ++i) {
        ((int*)inout)[i] += ((int*)in)[i];
    }
}

int main(int argc, char **argv)
{
    int rank, size, i, n = 1000, all_errors;
    int buf[1000], out[1000], big[8 * 1000];
    double d, dsum;
    MPI_Op op;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (i = 0; i < n; ++i) buf[i] = (rank == 1) ? i * 3 : -1;
    MPI_Bcast(buf, n, MPI_INT, 1 % size, MPI_COMM_WORLD);
    for (i = 0; i < n; ++i) CHECK(buf[i] == i * 3, "bcast [%d]=%d", i, buf[i]);

    for (i = 0; i < n; ++i) buf[i] = rank + i;
    MPI_Allreduce(buf, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < n; ++i)
        CHECK(out[i] == size * i + size * (size - 1) / 2, "allreduce [%d]=%d", i, out[i]);

    d = rank + 0.5;
    MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(d == size - 0.5, "allreduce max in place %f", d);

    MPI_Reduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) CHECK(dsum == size * (size - 0.5), "reduce %f", dsum);

    MPI_Op_create(my_sum, 1, &op);
    for (i = 0; i < n; ++i) buf[i] = rank * i;
    MPI_Allreduce(buf, out, n, MPI_INT, op, MPI_COMM_WORLD);
    for (i = 0; i < n; ++i)
        CHECK(out[i] == i * size * (size - 1) / 2, "user op [%d]=%d", i, out[i]);
    MPI_Op_free(&op);

    MPI_Barrier(MPI_COMM_WORLD);

    for (i = 0; i < n; ++i) buf[i] = rank * 10000 + i;
    MPI_Gather(buf, n, MPI_INT, big, n, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0 && size <= 8)
        for (i = 0; i < n * size; ++i)
            CHECK(big[i] == (i / n) * 10000 + i % n, "gather [%d]=%d", i, big[i]);

    if (size <= 8) {
        for (i = 0; i < n * size; ++i) big[i] = i;
        MPI_Scatter(big, n, MPI_INT, out, n, MPI_INT, 0, MPI_COMM_WORLD);
        for (i = 0; i < n; ++i) CHECK(out[i] == rank * n + i, "scatter [%d]=%d", i, out[i]);

        for (i = 0; i < n; ++i) buf[i] = rank * 10000 + i;
        MPI_Allgather(buf, n, MPI_INT, big, n, MPI_INT, MPI_COMM_WORLD);
        for (i = 0; i < n * size; ++i)
            CHECK(big[i] == (i / n) * 10000 + i % n, "allgather [%d]=%d", i, big[i]);
    }

    /* in place */
    if (size <= 8) {
        for (i = 0; i < n * size; ++i) big[i] = (i / n == rank) ? i : -1;
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, big, n, MPI_INT, MPI_COMM_WORLD);
        for (i = 0; i < n * size; ++i) CHECK(big[i] == i, "allgather in place [%d]=%d", i, big[i]);

        for (i = 0; i < n * size; ++i) big[i] = (rank == 0) ? i : -1;
        for (i = 0; i < n; ++i) out[i] = (rank + 1) * n + i;
        if (rank == 0) {
            MPI_Gather(MPI_IN_PLACE, n, MPI_INT, big, n, MPI_INT, 0, MPI_COMM_WORLD);
            for (i = 0; i < n * size; ++i)
                CHECK(big[i] == (i < n ? i : (i / n + 1) * n + i % n), "gather in place [%d]=%d", i, big[i]);
            MPI_Scatter(big, n, MPI_INT, MPI_IN_PLACE, n, MPI_INT, 0, MPI_COMM_WORLD);
        } else {
            MPI_Gather(out, n, MPI_INT, NULL, n, MPI_INT, 0, MPI_COMM_WORLD);
            MPI_Scatter(NULL, n, MPI_INT, out, n, MPI_INT, 0, MPI_COMM_WORLD);
            for (i = 0; i < n; ++i) CHECK(out[i] == (rank + 1) * n + i, "scatter in place [%d]=%d", i, out[i]);
        }
    }

    /* a user op on a contiguous derived type (3 ints) */
    {
        MPI_Datatype t3;
        int a[3 * 10], r[3 * 10];
        MPI_Type_contiguous(3, MPI_INT, &t3);
        MPI_Type_commit(&t3);
        MPI_Op_create(my_sum, 1, &op);
        for (i = 0; i < 30; ++i) a[i] = rank + i;
        MPI_Reduce(a, r, 30, MPI_INT, op, 0, MPI_COMM_WORLD);
        if (rank == 0) for (i = 0; i < 30; ++i)
            CHECK(r[i] == size * i + size * (size - 1) / 2, "user reduce [%d]=%d", i, r[i]);
        MPI_Op_free(&op);
        MPI_Type_free(&t3);
    }

    /* MINLOC on a pair type */
    {
        struct { double v; int i; } p = { (double)(rank % 2), rank }, q;
        MPI_Allreduce(&p, &q, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
        CHECK(q.v == 0.0 && q.i == 0, "minloc %f %d", q.v, q.i);
    }

    /* a non-contiguous type: packed by the component */
    {
        MPI_Datatype vec;
        int v[2 * 100];
        MPI_Type_vector(100, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        for (i = 0; i < 200; ++i) v[i] = (rank == 0) ? i : -1;
        MPI_Bcast(v, 1, vec, 0, MPI_COMM_WORLD);
        for (i = 0; i < 200; ++i)
            CHECK(v[i] == ((i % 2 == 0 || rank == 0) ? i : -1), "vector bcast [%d]=%d", i, v[i]);
        MPI_Type_free(&vec);
    }

    /* a split communicator */
    {
        MPI_Comm sub;
        int s;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
        s = 1;
        MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_SUM, sub);
        CHECK(s == (size + 1 - rank % 2) / 2, "split allreduce %d", s);
        MPI_Comm_free(&sub);
    }

    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("coll_ucg_test: %s (%d errors, %d ranks)\n",
                          all_errors ? "FAILED" : "OK", all_errors, size);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
