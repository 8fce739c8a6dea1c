/**
 * coll/ucg: MPI_Reduce_scatter, MPI_Reduce_scatter_block, MPI_Scan,
 * MPI_Exscan and their nonblocking forms on UCG (docs/ucg.md, "Reduce-
 * scatter and scan").  They take the reductions' path (coll_ucg_module.c):
 * the same datatypes and ops (derived datatypes and ops UCG does not have
 * go to the previous module), MPI_IN_PLACE, the tuning rules and the
 * counters; the nonblocking ones start as coll_ucg_nb.c's do.
 *
 * The byte count a call is decided by (the MCA parameters' max_bytes, the
 * rules) is the same on every rank: reduce_scatter_block's and scan's
 * count per rank, reduce_scatter's whole vector (the sum of its counts,
 * which MPI requires equal everywhere).
 */
#include "coll_ucg_int.h"

#include "opal/util/output.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>


/*
 * Reduce_scatter's preparation: its int counts as the size_t array UCG
 * takes (@a counts, comm_size entries, NULL if it could not be allocated:
 * then this rank fails its preparation, which the others learn as for any
 * other).  false (the previous module) for a negative count or a vector of
 * more than INT_MAX elements, decided the same on every rank.
 */
static bool coll_ucg_rs_prep(mca_coll_ucg_module_t *m, int coll,
                             const void *sbuf, void *rbuf,
                             const int *rcounts,
                             struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, size_t *counts,
                             coll_ucg_call_t *call)
{
    size_t total = 0;
    int i;

    for (i = 0; i < m->comm_size; ++i) {
        if (rcounts[i] < 0) {
            ++m->n_delegated[coll];
            return false;
        }
        total += rcounts[i];
        if (counts != NULL) {
            counts[i] = rcounts[i];
        }
    }
    if (total > INT_MAX) {
        ++m->n_delegated[coll];
        return false;
    }

    if (!coll_ucg_reduction_prep(m, coll, UCG_COLL_REDUCE_SCATTER, sbuf,
                                 rbuf, (int)total, dtype, op, 0, call)) {
        return false;
    }
    call->params.rcounts = counts;
    if (counts == NULL) {
        opal_output(0, "coll:ucg: %s on comm %s: no memory for %d counts",
                    mca_coll_ucg_coll_names[coll], m->comm_name,
                    m->comm_size);
        call->ok = false;
    }
    return true;
}


/* Reduce_scatter's preparation with its counts allocated in call->counts
 * (released with the call, also when UCG does not take it) */
bool coll_ucg_reduce_scatter_prep(mca_coll_ucg_module_t *m, int coll,
                                  const void *sbuf, void *rbuf,
                                  const int *rcounts,
                                  struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op,
                                  coll_ucg_call_t *call)
{
    call->counts = malloc(sizeof(*call->counts) * m->comm_size);
    return coll_ucg_rs_prep(m, coll, sbuf, rbuf, rcounts, dtype, op,
                            call->counts, call);
}


/* ---- blocking ---------------------------------------------------------- */

static int coll_ucg_reduce_scatter(const void *sbuf, void *rbuf,
                                   const int *rcounts,
                                   struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call     = {{0}};
    int ret;

    if (coll_ucg_reduce_scatter_prep(m, COLL_UCG_REDUCE_SCATTER, sbuf, rbuf,
                                     rcounts, dtype, op, &call)) {
        ret = coll_ucg_go_out(m, COLL_UCG_REDUCE_SCATTER, comm, &call);
        if (ret != COLL_UCG_DELEGATE) {
            return ret;
        }
    }
    coll_ucg_call_release(&call); /* its counts */
    return m->prev_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                  m->prev_reduce_scatter_module);
}

/* The collectives with one count: reduce_scatter_block (per rank), scan,
 * exscan */
#define COLL_UCG_REDSCAN(_coll, _type, _name) \
    do { \
        mca_coll_ucg_module_t *m = UCG_MOD(module); \
        coll_ucg_call_t call     = {{0}}; \
        int ret; \
        \
        if (coll_ucg_reduction_prep(m, _coll, _type, sbuf, rbuf, count, \
                                    dtype, op, 0, &call)) { \
            ret = coll_ucg_go_out(m, _coll, comm, &call); \
            if (ret != COLL_UCG_DELEGATE) { \
                return ret; \
            } \
        } \
        return m->prev_##_name(sbuf, rbuf, count, dtype, op, comm, \
                               m->prev_##_name##_module); \
    } while (0)

static int coll_ucg_reduce_scatter_block(const void *sbuf, void *rbuf,
                                         int count,
                                         struct ompi_datatype_t *dtype,
                                         struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_base_module_t *module)
{
    COLL_UCG_REDSCAN(COLL_UCG_REDUCE_SCATTER_BLOCK,
                     UCG_COLL_REDUCE_SCATTER_BLOCK, reduce_scatter_block);
}

static int coll_ucg_scan(const void *sbuf, void *rbuf, int count,
                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                         struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    COLL_UCG_REDSCAN(COLL_UCG_SCAN, UCG_COLL_SCAN, scan);
}

static int coll_ucg_exscan(const void *sbuf, void *rbuf, int count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    COLL_UCG_REDSCAN(COLL_UCG_EXSCAN, UCG_COLL_EXSCAN, exscan);
}


/* ---- nonblocking ------------------------------------------------------- */

static int coll_ucg_ireduce_scatter(const void *sbuf, void *rbuf,
                                    const int *rcounts,
                                    struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call;

    memset(&call, 0, sizeof(call));
    call.nb = true;
    if (!m->nb_disabled &&
        coll_ucg_reduce_scatter_prep(m, COLL_UCG_IREDUCE_SCATTER, sbuf, rbuf,
                                     rcounts, dtype, op, &call)) {
        /* the counts are released when the call completes */
        return coll_ucg_nb_start(m, COLL_UCG_IREDUCE_SCATTER, comm, &call,
                                 request);
    }
    coll_ucg_call_release(&call);
    return m->prev_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                   request, m->prev_ireduce_scatter_module);
}

#define COLL_UCG_IREDSCAN(_coll, _type, _name) \
    do { \
        mca_coll_ucg_module_t *m = UCG_MOD(module); \
        coll_ucg_call_t call; \
        \
        memset(&call, 0, sizeof(call)); \
        call.nb = true; \
        if (!m->nb_disabled && \
            coll_ucg_reduction_prep(m, _coll, _type, sbuf, rbuf, count, \
                                    dtype, op, 0, &call)) { \
            return coll_ucg_nb_start(m, _coll, comm, &call, request); \
        } \
        return m->prev_##_name(sbuf, rbuf, count, dtype, op, comm, request, \
                               m->prev_##_name##_module); \
    } while (0)

static int coll_ucg_ireduce_scatter_block(const void *sbuf, void *rbuf,
                                          int count,
                                          struct ompi_datatype_t *dtype,
                                          struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm,
                                          ompi_request_t **request,
                                          mca_coll_base_module_t *module)
{
    COLL_UCG_IREDSCAN(COLL_UCG_IREDUCE_SCATTER_BLOCK,
                      UCG_COLL_REDUCE_SCATTER_BLOCK, ireduce_scatter_block);
}

static int coll_ucg_iscan(const void *sbuf, void *rbuf, int count,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                          struct ompi_communicator_t *comm,
                          ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    COLL_UCG_IREDSCAN(COLL_UCG_ISCAN, UCG_COLL_SCAN, iscan);
}

static int coll_ucg_iexscan(const void *sbuf, void *rbuf, int count,
                            struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op,
                            struct ompi_communicator_t *comm,
                            ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    COLL_UCG_IREDSCAN(COLL_UCG_IEXSCAN, UCG_COLL_EXSCAN, iexscan);
}


void coll_ucg_redscan_set_ops(mca_coll_ucg_module_t *m)
{
    m->super.coll_reduce_scatter        = coll_ucg_reduce_scatter;
    m->super.coll_reduce_scatter_block  = coll_ucg_reduce_scatter_block;
    m->super.coll_scan                  = coll_ucg_scan;
    m->super.coll_exscan                = coll_ucg_exscan;
    m->super.coll_ireduce_scatter       = coll_ucg_ireduce_scatter;
    m->super.coll_ireduce_scatter_block = coll_ucg_ireduce_scatter_block;
    m->super.coll_iscan                 = coll_ucg_iscan;
    m->super.coll_iexscan               = coll_ucg_iexscan;
}

int coll_ucg_redscan_enable(mca_coll_ucg_module_t *m,
                            struct ompi_communicator_t *comm)
{
    COLL_UCG_SAVE(m, comm, reduce_scatter);
    COLL_UCG_SAVE(m, comm, reduce_scatter_block);
    COLL_UCG_SAVE(m, comm, scan);
    COLL_UCG_SAVE(m, comm, exscan);
    COLL_UCG_SAVE(m, comm, ireduce_scatter);
    COLL_UCG_SAVE(m, comm, ireduce_scatter_block);
    COLL_UCG_SAVE(m, comm, iscan);
    COLL_UCG_SAVE(m, comm, iexscan);
    return OMPI_SUCCESS;
}

void coll_ucg_redscan_release_prev(mca_coll_ucg_module_t *m)
{
    COLL_UCG_RELEASE_PREV(m, reduce_scatter);
    COLL_UCG_RELEASE_PREV(m, reduce_scatter_block);
    COLL_UCG_RELEASE_PREV(m, scan);
    COLL_UCG_RELEASE_PREV(m, exscan);
    COLL_UCG_RELEASE_PREV(m, ireduce_scatter);
    COLL_UCG_RELEASE_PREV(m, ireduce_scatter_block);
    COLL_UCG_RELEASE_PREV(m, iscan);
    COLL_UCG_RELEASE_PREV(m, iexscan);
}
