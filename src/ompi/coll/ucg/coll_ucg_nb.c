/**
 * coll/ucg nonblocking collectives: MPI_Ibcast, MPI_Iallreduce,
 * MPI_Ireduce, MPI_Ibarrier, MPI_Igather, MPI_Iscatter, MPI_Iallgather,
 * MPI_Ialltoall, MPI_Ialltoallv on
 * UCG's nonblocking executor (ucg_coll_start / ucg_coll_test), progressed
 * by Open MPI's progress engine, any number outstanding on one or several
 * communicators, completed by MPI_Wait* / MPI_Test* in any order.
 *
 * Which calls run on UCG is decided, as for the blocking ones, from values
 * equal on all ranks (byte counts, datatype and op, root, the MCA
 * parameters); the others go to the previous module's nonblocking
 * function.  Unlike a blocking call, a nonblocking one cannot wait for an
 * agreement of the ranks (the blocking path's allreduce would make
 * MPI_Ibcast block on the other ranks), so a rank that cannot prepare a
 * call UCG takes (memory for its packed copies or its UCG request) does
 * not delegate it: it returns the error, and UCG's abort
 * (ucg_group_abort_next) makes the same call complete with an error on the
 * other ranks - nobody waits for it.
 */
#include "coll_ucg_int.h"

#include "opal/util/output.h"
#include "opal/runtime/opal_progress.h"
#include "ompi/request/request.h"

#include <string.h>



typedef struct {
    ompi_coll_base_nbc_request_t super;
    ucs_list_link_t       list;     /* component's nb_active, while active */
    mca_coll_ucg_module_t *module;  /* retained until the request is freed */
    int                   coll;
    coll_ucg_call_t       call;
    bool                  freed;    /* MPI_Request_free before completion */
} coll_ucg_nb_req_t;

OBJ_CLASS_INSTANCE(coll_ucg_nb_req_t, ompi_coll_base_nbc_request_t, NULL,
                   NULL);


static void coll_ucg_nb_release(coll_ucg_nb_req_t *req)
{
    mca_coll_ucg_module_t *m = req->module;

    OMPI_REQUEST_FINI(&req->super.super);
    OBJ_RELEASE(req);
    OBJ_RELEASE(m);
}

static int coll_ucg_nb_free(ompi_request_t **rptr)
{
    coll_ucg_nb_req_t *req = (coll_ucg_nb_req_t*)*rptr;

    if (REQUEST_COMPLETE(&req->super.super)) {
        coll_ucg_nb_release(req);
    } else {
        req->freed = true; /* released when it completes */
    }
    *rptr = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* A started collective cannot be taken back: cancelling it does nothing */
static int coll_ucg_nb_cancel(ompi_request_t *request, int flag)
{
    return OMPI_SUCCESS;
}

static void coll_ucg_nb_complete(coll_ucg_nb_req_t *req, ucs_status_t status)
{
    mca_coll_ucg_module_t *m = req->module;
    int ret;

    ucs_list_del(&req->list);
    coll_ucg_release_req(m, req->coll, &req->call);
    ret = coll_ucg_call_finish(&req->call, (status == UCS_OK) ?
                                           OMPI_SUCCESS : OMPI_ERROR);
    if (status != UCS_OK) {
        opal_output(0, "coll:ucg: %s on comm %s failed: %s",
                    mca_coll_ucg_coll_names[req->coll], m->comm_name,
                    ucs_status_string(status));
    } else if (ret == OMPI_SUCCESS) {
        ++m->n_ucg[req->coll];
        if (req->call.plan == UCG_PLAN_FLAT) {
            ++m->n_flat[req->coll];
        }
    }

    req->super.super.req_status.MPI_ERROR = (ret == OMPI_SUCCESS) ?
                                            MPI_SUCCESS : MPI_ERR_INTERN;
    if (req->freed) {
        coll_ucg_nb_release(req);
    } else {
        ompi_request_complete(&req->super.super, true);
    }
}

/* Open MPI's progress engine: completes the calls UCG finished */
static int coll_ucg_nb_progress(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;
    coll_ucg_nb_req_t *req, *tmp;
    ucs_status_t status;
    int count = 0;

    ucs_list_for_each_safe(req, tmp, &c->nb_active, list) {
        status = ucg_coll_test(req->call.req);
        if (status != UCS_INPROGRESS) {
            coll_ucg_nb_complete(req, status);
            ++count;
        }
    }
    return count;
}

/*
 * Start a call UCG takes (prepared in @a prepared): on success the request
 * is returned in @a request; else this rank's failure is reported to the
 * other ranks (UCG's abort: their instance of the call fails) and an error
 * returned.
 */
int coll_ucg_nb_start(mca_coll_ucg_module_t *m, int coll,
                      struct ompi_communicator_t *comm,
                      const coll_ucg_call_t *prepared,
                      ompi_request_t **request)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;
    ucs_status_t status         = UCS_ERR_NO_MEMORY;
    coll_ucg_nb_req_t *req;
    coll_ucg_call_t *call;

    req = OBJ_NEW(coll_ucg_nb_req_t);
    if (req == NULL) {
        coll_ucg_call_t tmp = *prepared;

        ucg_group_abort_next(m->group, status);
        opal_output(0, "coll:ucg: %s on comm %s: no memory for its request; "
                    "the call fails on the other ranks too",
                    mca_coll_ucg_coll_names[coll], m->comm_name);
        coll_ucg_call_finish(&tmp, OMPI_ERROR);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->call  = *prepared;
    req->freed = false;
    call       = &req->call;
    if (call->params.op == UCG_OP_USER) {
        call->params.user_op.arg = &call->user_arg;
    }

    if (call->ok &&
        !coll_ucg_test_fail_at(COLL_UCG_TEST_FAIL_NB_START,
                               &mca_coll_ucg_component.test_nb_started,
                               "the start of nonblocking call")) {
        status = ucg_coll_init_plan(m->group, &call->params, call->plan,
                                    &call->req);
        if (status != UCS_OK) {
            call->req = NULL;
        }
    }
    if (status != UCS_OK) {
        /* nothing started: the call's place in the group's order is
         * taken so that the others' instance fails */
        ucg_group_abort_next(m->group, status);
    } else {
        status = ucg_coll_start(call->req);
    }
    if (status != UCS_OK) {
        opal_output(0, "coll:ucg: %s on comm %s could not start on this "
                    "rank: %s; the call fails on the other ranks too",
                    mca_coll_ucg_coll_names[coll], m->comm_name,
                    ucs_status_string(status));
        coll_ucg_release_req(m, coll, call);
        coll_ucg_call_finish(call, OMPI_ERROR);
        OBJ_RELEASE(req);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }

    OMPI_REQUEST_INIT(&req->super.super, false);
    req->super.super.req_type             = OMPI_REQUEST_COLL;
    req->super.super.req_state            = OMPI_REQUEST_ACTIVE;
    req->super.super.req_free             = coll_ucg_nb_free;
    req->super.super.req_cancel           = coll_ucg_nb_cancel;
    req->super.super.req_mpi_object.comm  = comm;
    req->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    req->module                           = m;
    req->coll                             = coll;
    OBJ_RETAIN(m);
    ucs_list_add_tail(&c->nb_active, &req->list);
    if (!c->nb_progress) {
        opal_progress_register(coll_ucg_nb_progress);
        c->nb_progress = true;
    }
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

/*
 * The body of each nonblocking collective: prepare (@a _prep with the
 * arguments after the call), start on UCG, or hand the call to the
 * previous module (@a _prev_args).
 */
#define COLL_UCG_NB(_coll, _name, _prep, _prep_args, _prev_args) \
    do { \
        mca_coll_ucg_module_t *m = UCG_MOD(module); \
        coll_ucg_call_t call; \
        \
        memset(&call, 0, sizeof(call)); \
        call.nb = true; \
        if (!m->nb_disabled && (_prep _prep_args)) { \
            return coll_ucg_nb_start(m, _coll, comm, &call, request); \
        } \
        return m->prev_##_name _prev_args; \
    } while (0)

static int coll_ucg_ibcast(void *buff, int count,
                           struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm,
                           ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    COLL_UCG_NB(COLL_UCG_IBCAST, ibcast, coll_ucg_bcast_prep,
                (m, COLL_UCG_IBCAST, buff, count, dtype, root, &call),
                (buff, count, dtype, root, comm, request,
                 m->prev_ibcast_module));
}

static int coll_ucg_iallreduce(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype,
                               struct ompi_op_t *op,
                               struct ompi_communicator_t *comm,
                               ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    COLL_UCG_NB(COLL_UCG_IALLREDUCE, iallreduce, coll_ucg_reduction_prep,
                (m, COLL_UCG_IALLREDUCE, UCG_COLL_ALLREDUCE, sbuf, rbuf,
                 count, dtype, op, 0, &call),
                (sbuf, rbuf, count, dtype, op, comm, request,
                 m->prev_iallreduce_module));
}

static int coll_ucg_ireduce(const void *sbuf, void *rbuf, int count,
                            struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm,
                            ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    COLL_UCG_NB(COLL_UCG_IREDUCE, ireduce, coll_ucg_reduction_prep,
                (m, COLL_UCG_IREDUCE, UCG_COLL_REDUCE, sbuf, rbuf, count,
                 dtype, op, root, &call),
                (sbuf, rbuf, count, dtype, op, root, comm, request,
                 m->prev_ireduce_module));
}

static int coll_ucg_ibarrier(struct ompi_communicator_t *comm,
                             ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    COLL_UCG_NB(COLL_UCG_IBARRIER, ibarrier, coll_ucg_barrier_prep,
                (m, COLL_UCG_IBARRIER, &call),
                (comm, request, m->prev_ibarrier_module));
}

static int coll_ucg_igather(const void *sbuf, int scount,
                            struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype,
                            int root, struct ompi_communicator_t *comm,
                            ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    COLL_UCG_NB(COLL_UCG_IGATHER, igather, coll_ucg_gather_prep,
                (m, COLL_UCG_IGATHER, sbuf, scount, sdtype, rbuf, rcount,
                 rdtype, root, &call),
                (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                 request, m->prev_igather_module));
}

static int coll_ucg_iscatter(const void *sbuf, int scount,
                             struct ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype,
                             int root, struct ompi_communicator_t *comm,
                             ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    COLL_UCG_NB(COLL_UCG_ISCATTER, iscatter, coll_ucg_scatter_prep,
                (m, COLL_UCG_ISCATTER, sbuf, scount, sdtype, rbuf, rcount,
                 rdtype, root, &call),
                (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                 request, m->prev_iscatter_module));
}

static int coll_ucg_iallgather(const void *sbuf, int scount,
                               struct ompi_datatype_t *sdtype, void *rbuf,
                               int rcount, struct ompi_datatype_t *rdtype,
                               struct ompi_communicator_t *comm,
                               ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    COLL_UCG_NB(COLL_UCG_IALLGATHER, iallgather, coll_ucg_allgather_prep,
                (m, COLL_UCG_IALLGATHER, sbuf, scount, sdtype, rbuf, rcount,
                 rdtype, &call),
                (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                 m->prev_iallgather_module));
}

static int coll_ucg_ialltoall(const void *sbuf, int scount,
                              struct ompi_datatype_t *sdtype, void *rbuf,
                              int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm,
                              ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    COLL_UCG_NB(COLL_UCG_IALLTOALL, ialltoall, coll_ucg_alltoall_prep,
                (m, COLL_UCG_IALLTOALL, sbuf, scount, sdtype, rbuf, rcount,
                 rdtype, &call),
                (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                 m->prev_ialltoall_module));
}

static int coll_ucg_ialltoallv(const void *sbuf, const int *scounts,
                               const int *sdispls,
                               struct ompi_datatype_t *sdtype, void *rbuf,
                               const int *rcounts, const int *rdispls,
                               struct ompi_datatype_t *rdtype,
                               struct ompi_communicator_t *comm,
                               ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    COLL_UCG_NB(COLL_UCG_IALLTOALLV, ialltoallv, coll_ucg_alltoallv_prep,
                (m, COLL_UCG_IALLTOALLV, sbuf, scounts, sdispls, sdtype,
                 rbuf, rcounts, rdispls, rdtype, &call),
                (sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                 rdtype, comm, request, m->prev_ialltoallv_module));
}

void coll_ucg_nb_set_ops(mca_coll_ucg_module_t *m)
{
    m->super.coll_ibcast     = coll_ucg_ibcast;
    m->super.coll_iallreduce = coll_ucg_iallreduce;
    m->super.coll_ireduce    = coll_ucg_ireduce;
    m->super.coll_ibarrier   = coll_ucg_ibarrier;
    m->super.coll_igather    = coll_ucg_igather;
    m->super.coll_iscatter   = coll_ucg_iscatter;
    m->super.coll_iallgather = coll_ucg_iallgather;
    m->super.coll_ialltoall  = coll_ucg_ialltoall;
    m->super.coll_ialltoallv = coll_ucg_ialltoallv;
}


int coll_ucg_nb_enable(mca_coll_ucg_module_t *m,
                       struct ompi_communicator_t *comm)
{
    if (ompi_coll_base_nbc_request_t_class.cls_sizeof !=
        sizeof(ompi_coll_base_nbc_request_t)) {
        if (m->comm_rank == 0) {
            opal_output(0, "coll:ucg: Open MPI's nonblocking collective "
                        "requests have %zu bytes, not %zu: the nonblocking "
                        "collectives go to the previous module",
                        ompi_coll_base_nbc_request_t_class.cls_sizeof,
                        sizeof(ompi_coll_base_nbc_request_t));
        }
        m->nb_disabled = true;
    }

    COLL_UCG_SAVE(m, comm, ibcast);
    COLL_UCG_SAVE(m, comm, iallreduce);
    COLL_UCG_SAVE(m, comm, ireduce);
    COLL_UCG_SAVE(m, comm, ibarrier);
    COLL_UCG_SAVE(m, comm, igather);
    COLL_UCG_SAVE(m, comm, iscatter);
    COLL_UCG_SAVE(m, comm, iallgather);
    COLL_UCG_SAVE(m, comm, igatherv);
    COLL_UCG_SAVE(m, comm, iscatterv);
    COLL_UCG_SAVE(m, comm, iallgatherv);
    COLL_UCG_SAVE(m, comm, ialltoall);
    COLL_UCG_SAVE(m, comm, ialltoallv);
    return OMPI_SUCCESS;
}

void coll_ucg_nb_release_prev(mca_coll_ucg_module_t *m)
{
    COLL_UCG_RELEASE_PREV(m, ibcast);
    COLL_UCG_RELEASE_PREV(m, iallreduce);
    COLL_UCG_RELEASE_PREV(m, ireduce);
    COLL_UCG_RELEASE_PREV(m, ibarrier);
    COLL_UCG_RELEASE_PREV(m, igather);
    COLL_UCG_RELEASE_PREV(m, iscatter);
    COLL_UCG_RELEASE_PREV(m, iallgather);
    COLL_UCG_RELEASE_PREV(m, igatherv);
    COLL_UCG_RELEASE_PREV(m, iscatterv);
    COLL_UCG_RELEASE_PREV(m, iallgatherv);
    COLL_UCG_RELEASE_PREV(m, ialltoall);
    COLL_UCG_RELEASE_PREV(m, ialltoallv);
}

void coll_ucg_nb_close(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;

    if (c->nb_progress) {
        opal_progress_unregister(coll_ucg_nb_progress);
        c->nb_progress = false;
    }
}
