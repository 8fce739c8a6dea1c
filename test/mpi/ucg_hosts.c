/*
 * UCG itself (not coll/ucg) across hosts: MPI only starts the processes,
 * carries UCG's out-of-band allgather and sums the errors.  Each rank
 * creates a UCG context and a group of MPI_COMM_WORLD (UCG finds the
 * hosts itself), prints rank 0's plans of a bcast and an allreduce (they
 * name the multicast transport of the phases between host leaders), then
 * runs bcasts from every root and allreduces (sum of int64 and of
 * double), each of several sizes, ITERS times, every result checked on
 * every rank against the value it must have.
 *
 *   ucg_hosts [ITERS]      (default 3)
 *
 * Prints "ucg_hosts: OK: N bcasts, M allreduces on P ranks" from rank 0,
 * or the first failures and "ucg_hosts: FAILED"; exits 1 on any failure.
 * UCX_UCG_* configure UCG (test/vm/ucg.sh: UCX_UCG_MC=y, MC_TL=mc_verbs,
 * ALLREDUCE_P2P=knomial so that allreduce broadcasts between the
 * leaders); with UCX_LOG_LEVEL=diag UCG prints the counters of its
 * multicast transport when the context is destroyed.
 */
#include "mpi_check.h"

#include <api/ucg.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static ucs_status_t oob_allgather(void *arg, const void *sbuf, void *rbuf,
                                  size_t len)
{
    return (MPI_Allgather(sbuf, (int)len, MPI_BYTE, rbuf, (int)len, MPI_BYTE,
                          MPI_COMM_WORLD) == MPI_SUCCESS) ?
           UCS_OK : UCS_ERR_IO_ERROR;
}

static uint8_t bcast_byte(int root, int iter, size_t i)
{
    return (uint8_t)((root * 131u) ^ (iter * 29u) ^ (i * 7u) ^ (i >> 8));
}

static void print_plan(ucg_group_h group, ucg_coll_type_t type, size_t count,
                       ucg_dtype_t dtype, ucg_op_t op, void *buf)
{
    ucg_coll_params_t p;

    memset(&p, 0, sizeof(p));
    p.type  = type;
    p.root  = 0;
    p.sbuf  = buf;
    p.rbuf  = buf;
    p.count = count;
    p.dtype = dtype;
    p.op    = op;
    CHECK(ucg_coll_plan_print(group, &p, stdout) == UCS_OK,
          "ucg_coll_plan_print failed");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static const size_t bcast_sizes[]  = {8, 1000, 5000, 70000};
    static const size_t reduce_counts[] = {1, 300, 3000};
    int iters = (argc > 1) ? atoi(argv[1]) : 3;
    unsigned nbcast = 0, nreduce = 0;
    ucg_group_params_t gp;
    ucg_context_h context;
    ucg_group_h group;
    int rank, size, root, it, total;
    ucs_status_t status;
    int64_t *isbuf, *irbuf;
    double *dsbuf, *drbuf;
    uint8_t *buf;
    size_t s, i, n;

    check_init(&argc, &argv, &rank, &size);

    buf   = malloc(70000);
    isbuf = malloc(3000 * sizeof(*isbuf));
    irbuf = malloc(3000 * sizeof(*irbuf));
    dsbuf = malloc(3000 * sizeof(*dsbuf));
    drbuf = malloc(3000 * sizeof(*drbuf));
    if ((buf == NULL) || (isbuf == NULL) || (irbuf == NULL) ||
        (dsbuf == NULL) || (drbuf == NULL) || (iters < 1)) {
        fprintf(stderr, "ucg_hosts: out of memory or bad ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    status = ucg_context_create(NULL, NULL, &context);
    if (status != UCS_OK) {
        fprintf(stderr, "rank %d: ucg_context_create: %s\n", rank,
                ucs_status_string(status));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    memset(&gp, 0, sizeof(gp));
    gp.field_mask    = UCG_GROUP_PARAM_FIELD_GLOBAL_RANK;
    gp.size          = size;
    gp.rank          = rank;
    gp.global_rank   = rank;
    gp.oob_allgather = oob_allgather;
    gp.oob_arg       = NULL;
    status = ucg_group_create(context, &gp, &group);
    if (status != UCS_OK) {
        fprintf(stderr, "rank %d: ucg_group_create: %s\n", rank,
                ucs_status_string(status));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    if (rank == 0) {
        print_plan(group, UCG_COLL_BCAST, 1000, UCG_DT_UINT8, UCG_OP_LAST,
                   buf);
        print_plan(group, UCG_COLL_ALLREDUCE, 300, UCG_DT_INT64, UCG_OP_SUM,
                   irbuf);
    }

    for (it = 0; it < iters; ++it) {
        for (root = 0; root < size; ++root) {
            for (s = 0; s < sizeof(bcast_sizes) / sizeof(*bcast_sizes); ++s) {
                n = bcast_sizes[s];
                for (i = 0; i < n; ++i) {
                    buf[i] = (rank == root) ? bcast_byte(root, it, i) : 0xee;
                }
                status = ucg_bcast(group, buf, n, UCG_DT_UINT8, root);
                CHECK(status == UCS_OK, "bcast %zu B root %d: %s", n, root,
                      ucs_status_string(status));
                for (i = 0; (status == UCS_OK) && (i < n); ++i) {
                    if (buf[i] != bcast_byte(root, it, i)) {
                        check_fail("bcast %zu B root %d iter %d: byte %zu "
                                   "is 0x%x, not 0x%x", n, root, it, i,
                                   buf[i], bcast_byte(root, it, i));
                        break;
                    }
                }
                ++nbcast;
            }
        }

        for (s = 0; s < sizeof(reduce_counts) / sizeof(*reduce_counts);
             ++s) {
            n = reduce_counts[s];
            for (i = 0; i < n; ++i) {
                isbuf[i] = (int64_t)(rank + 1) * 1000003 + (int64_t)i + it;
                dsbuf[i] = (double)(rank + 1) + (double)(i % 97);
            }
            status = ucg_allreduce(group, isbuf, irbuf, n, UCG_DT_INT64,
                                   UCG_OP_SUM);
            CHECK(status == UCS_OK, "allreduce int64 x %zu: %s", n,
                  ucs_status_string(status));
            for (i = 0; (status == UCS_OK) && (i < n); ++i) {
                /* sum over r of (r + 1) * 1000003 + i + it */
                int64_t want = (int64_t)size * (size + 1) / 2 * 1000003 +
                               ((int64_t)i + it) * size;
                if (irbuf[i] != want) {
                    check_fail("allreduce int64 x %zu iter %d: element %zu "
                               "is %" PRId64 ", not %" PRId64, n, it, i,
                               irbuf[i], want);
                    break;
                }
            }
            status = ucg_allreduce(group, dsbuf, drbuf, n, UCG_DT_DOUBLE,
                                   UCG_OP_SUM);
            CHECK(status == UCS_OK, "allreduce double x %zu: %s", n,
                  ucs_status_string(status));
            for (i = 0; (status == UCS_OK) && (i < n); ++i) {
                /* small integers: exact in any order */
                double want = (double)size * (size + 1) / 2 +
                              (double)(i % 97) * size;
                if (drbuf[i] != want) {
                    check_fail("allreduce double x %zu iter %d: element %zu "
                               "is %g, not %g", n, it, i, drbuf[i], want);
                    break;
                }
            }
            nreduce += 2;
        }
    }

    /* Every collective completed everywhere before the group goes */
    status = ucg_barrier(group);
    CHECK(status == UCS_OK, "barrier: %s", ucs_status_string(status));
    ucg_group_destroy(group);
    ucg_context_destroy(context);

    total = errors;
    CALL("MPI_Allreduce of the failed checks",
         MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0) {
        if (total == 0) {
            printf("ucg_hosts: OK: %u bcasts, %u allreduces on %d ranks\n",
                   nbcast, nreduce, size);
        } else {
            printf("ucg_hosts: FAILED: %d failed checks\n", total);
        }
        fflush(stdout);
    }
    free(buf);
    free(isbuf);
    free(irbuf);
    free(dsbuf);
    free(drbuf);
    MPI_Finalize();
    return (total == 0) ? 0 : 1;
}
