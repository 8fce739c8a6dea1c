/**
 * coll/ucg persistent collectives (MPI 4.0, Open MPI 5): MPI_Bcast_init,
 * MPI_Allreduce_init, MPI_Reduce_init, MPI_Barrier_init, MPI_Gather_init,
 * MPI_Scatter_init, MPI_Allgather_init, MPI_Reduce_scatter_init,
 * MPI_Reduce_scatter_block_init, MPI_Scan_init, MPI_Exscan_init,
 * MPI_Gatherv_init, MPI_Scatterv_init, MPI_Allgatherv_init,
 * MPI_Alltoall_init and MPI_Alltoallv_init on UCG's persistent collectives:
 * the MPI_*_init call prepares the call and its UCG collective once
 * (ucg_coll_init_plan), each MPI_Start / MPI_Startall starts it
 * (ucg_coll_start), Open MPI's progress engine completes it, MPI_Wait* /
 * MPI_Test* see it complete, and MPI_Request_free releases it.
 *
 * Open MPI hands a persistent collective to the communicator's
 * coll_<name>_init function, which returns an inactive persistent request
 * of type OMPI_REQUEST_COLL (complete, req_persistent); MPI_Start calls its
 * req_start, the wait functions make it inactive again on completion.
 *
 * Which calls run on UCG is decided at MPI_*_init from values equal on all
 * ranks, as for the nonblocking calls (coll_ucg_nb.c); the others go to
 * the previous module's MPI_*_init.  No agreement can wait there (the
 * init call must not block on the other ranks): a rank that cannot prepare
 * a call UCG takes still returns a request, whose every start takes the
 * call's place in the group's order (ucg_group_abort_next) and fails, so
 * that the other ranks' instance fails too and nobody waits.
 *
 * Each call is prepared by the preparation its blocking and nonblocking
 * forms share (coll_ucg_int.h), which also records what it packed:
 * non-contiguous buffers are packed into buffers of the request, the data
 * a rank sends packed again at every start (coll_ucg_call_repack: the user
 * may change it between starts), what it receives unpacked at every
 * completion (coll_ucg_call_unpack).  The count and displacement arrays
 * of the vector collectives are the user's, which MPI requires unchanged
 * until the request is freed; UCG keeps its own copy in bytes.
 * Open MPI 5.0 does not keep the datatypes and op of a persistent
 * collective alive for it (ompi_coll_base_retain_* skip a request that is
 * complete, as an inactive persistent one is): the request retains the
 * ones it packs with or reduces with itself, until it is freed.
 */
#include "coll_ucg_int.h"

#if COLL_UCG_HAVE_PERSISTENT

#include "opal/util/output.h"
#include "opal/runtime/opal_progress.h"
#include "ompi/request/request.h"
#include "ompi/datatype/ompi_datatype.h"

#include <string.h>


typedef struct {
    ompi_coll_base_nbc_request_t super;
    ucs_list_link_t         list;     /* component's persist_active, while
                                         started */
    mca_coll_ucg_module_t   *module;  /* retained until the request is
                                         freed */
    int                     coll;
    coll_ucg_call_t         call;     /* call.req NULL: this rank could not
                                         prepare it */
    /* the call's derived datatypes (call.dtypes) and user op, retained by
     * the request */
    opal_object_t           *retained[COLL_UCG_CALL_DTYPES + 1];
    bool                    active;   /* started, not completed */
    bool                    freed;    /* freed while active */
} coll_ucg_persist_req_t;

static void coll_ucg_persist_construct(coll_ucg_persist_req_t *req)
{
    memset((char*)req + sizeof(req->super), 0,
           sizeof(*req) - sizeof(req->super));
}

OBJ_CLASS_INSTANCE(coll_ucg_persist_req_t, ompi_coll_base_nbc_request_t,
                   coll_ucg_persist_construct, NULL);


/* What the call uses after MPI_*_init: its derived datatypes (packed and
 * unpacked with at each start, or a user op's) and its user op */
static void coll_ucg_persist_retain(coll_ucg_persist_req_t *req)
{
    coll_ucg_call_t *call = &req->call;
    unsigned i;

    for (i = 0; (i < COLL_UCG_CALL_DTYPES) && (call->dtypes[i] != NULL);
         ++i) {
        OBJ_RETAIN(call->dtypes[i]);
        req->retained[i] = (opal_object_t*)call->dtypes[i];
    }
    if (call->params.op == UCG_OP_USER) {
        /* (an ompi_op_t starts with its opal_object_t) */
        OBJ_RETAIN((opal_object_t*)call->user_arg.op);
        req->retained[COLL_UCG_CALL_DTYPES] =
            (opal_object_t*)call->user_arg.op;
    }
}

static void coll_ucg_persist_release(coll_ucg_persist_req_t *req)
{
    mca_coll_ucg_module_t *m = req->module;
    unsigned i;

    coll_ucg_release_req(m, req->coll, &req->call);
    coll_ucg_call_release(&req->call);
    for (i = 0; i <= COLL_UCG_CALL_DTYPES; ++i) {
        if (req->retained[i] != NULL) {
            OBJ_RELEASE(req->retained[i]);
        }
    }
    OMPI_REQUEST_FINI(&req->super.super);
    OBJ_RELEASE(req);
    OBJ_RELEASE(m);
}

static int coll_ucg_persist_free(ompi_request_t **rptr)
{
    coll_ucg_persist_req_t *req = (coll_ucg_persist_req_t*)*rptr;

    if (req->active) {
        req->freed = true; /* released when it completes */
    } else {
        coll_ucg_persist_release(req);
    }
    *rptr = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* A started collective cannot be taken back: cancelling it does nothing */
static int coll_ucg_persist_cancel(ompi_request_t *request, int flag)
{
    return OMPI_SUCCESS;
}

static void coll_ucg_persist_complete(coll_ucg_persist_req_t *req,
                                      ucs_status_t status)
{
    mca_coll_ucg_module_t *m = req->module;
    int ret = OMPI_ERROR;

    ucs_list_del(&req->list);
    req->active = false;
    if (status != UCS_OK) {
        opal_output(0, "coll:ucg: %s on comm %s failed: %s",
                    mca_coll_ucg_coll_names[req->coll], m->comm_name,
                    ucs_status_string(status));
    } else {
        ret = coll_ucg_call_unpack(&req->call);
        if (ret == OMPI_SUCCESS) {
            ++m->n_ucg[req->coll];
            if (req->call.plan == UCG_PLAN_FLAT) {
                ++m->n_flat[req->coll];
            }
        }
    }

    if (req->freed) {
        coll_ucg_persist_release(req);
        return;
    }
    req->super.super.req_status.MPI_ERROR = (ret == OMPI_SUCCESS) ?
                                            MPI_SUCCESS : MPI_ERR_INTERN;
    ompi_request_complete(&req->super.super, true);
}

/* Open MPI's progress engine: completes the instances UCG finished */
static int coll_ucg_persist_progress(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;
    coll_ucg_persist_req_t *req, *tmp;
    ucs_status_t status;
    int count = 0;

    ucs_list_for_each_safe(req, tmp, &c->persist_active, list) {
        status = ucg_coll_test(req->call.req);
        if (status != UCS_INPROGRESS) {
            coll_ucg_persist_complete(req, status);
            ++count;
        }
    }
    return count;
}

/* Start one instance; on an error nothing is active, and the instance's
 * place in the group's order is taken (the others' instance fails) */
static int coll_ucg_persist_start_one(coll_ucg_persist_req_t *req)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;
    mca_coll_ucg_module_t *m    = req->module;
    ucs_status_t status;

    if (req->active) {
        return OMPI_ERR_REQUEST; /* started twice: erroneous in MPI */
    }

    if ((req->call.req == NULL) || !coll_ucg_call_repack(&req->call)) {
        status = UCS_ERR_NO_MEMORY;
        ucg_group_abort_next(m->group, status);
    } else if (coll_ucg_test_fail_at(COLL_UCG_TEST_FAIL_NB_START,
                                     &c->test_nb_started,
                                     "the start of persistent call")) {
        status = UCS_ERR_NO_MEMORY;
        ucg_group_abort_next(m->group, status);
    } else {
        status = ucg_coll_start(req->call.req);
    }
    if (status != UCS_OK) {
        opal_output(0, "coll:ucg: %s on comm %s could not start on this "
                    "rank: %s; the call fails on the other ranks too",
                    mca_coll_ucg_coll_names[req->coll], m->comm_name,
                    ucs_status_string(status));
        return OMPI_ERR_OUT_OF_RESOURCE;
    }

    req->super.super.req_state            = OMPI_REQUEST_ACTIVE;
    req->super.super.req_complete         = REQUEST_PENDING;
    req->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    req->active                           = true;
    ucs_list_add_tail(&c->persist_active, &req->list);
    if (!c->persist_progress) {
        opal_progress_register(coll_ucg_persist_progress);
        c->persist_progress = true;
    }
    return OMPI_SUCCESS;
}

/* MPI_Start / MPI_Startall of requests of this component */
static int coll_ucg_persist_start(size_t count, ompi_request_t **requests)
{
    int ret = OMPI_SUCCESS, r;
    size_t i;

    /* every request is started even if one fails: the others' ranks
     * wait for them */
    for (i = 0; i < count; ++i) {
        r = coll_ucg_persist_start_one((coll_ucg_persist_req_t*)requests[i]);
        if (r != OMPI_SUCCESS) {
            ret = r;
        }
    }
    return ret;
}

/* A new inactive persistent request for a call prepared in req->call (by
 * the caller, call.ok says whether it could); its UCG collective is made
 * here.  A rank that could not prepare still returns the request (its
 * starts fail, see above); only no memory for the request itself is an
 * error of the init call. */
static int coll_ucg_persist_finish_init(mca_coll_ucg_module_t *m,
                                        coll_ucg_persist_req_t *req,
                                        struct ompi_communicator_t *comm,
                                        ompi_request_t **request)
{
    coll_ucg_call_t *call = &req->call;
    ucs_status_t status;

    coll_ucg_persist_retain(req);
    if (call->ok) {
        status = ucg_coll_init_plan(m->group, &call->params, call->plan,
                                    &call->req);
        if (status != UCS_OK) {
            opal_output(0, "coll:ucg: %s on comm %s: ucg_coll_init failed: "
                        "%s; its starts fail on every rank",
                        mca_coll_ucg_coll_names[req->coll], m->comm_name,
                        ucs_status_string(status));
            call->req = NULL;
        }
    } else {
        opal_output(0, "coll:ucg: %s on comm %s could not be prepared on "
                    "this rank; its starts fail on every rank",
                    mca_coll_ucg_coll_names[req->coll], m->comm_name);
        call->req = NULL;
    }

    OMPI_REQUEST_INIT(&req->super.super, true);
    req->super.super.req_type            = OMPI_REQUEST_COLL;
    req->super.super.req_start           = coll_ucg_persist_start;
    req->super.super.req_free            = coll_ucg_persist_free;
    req->super.super.req_cancel          = coll_ucg_persist_cancel;
    req->super.super.req_mpi_object.comm = comm;
    req->module                          = m;
    OBJ_RETAIN(m);
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

/* A new request for @a coll; NULL (with one line) when out of memory */
static coll_ucg_persist_req_t *
coll_ucg_persist_new(mca_coll_ucg_module_t *m, int coll)
{
    coll_ucg_persist_req_t *req = OBJ_NEW(coll_ucg_persist_req_t);

    if (req == NULL) {
        opal_output(0, "coll:ucg: %s on comm %s: no memory for its request",
                    mca_coll_ucg_coll_names[coll], m->comm_name);
        return NULL;
    }
    req->coll    = coll;
    req->call.nb = true; /* packs into buffers of its own */
    return req;
}

/* A request whose call UCG does not take (the previous module's then) */
static void coll_ucg_persist_drop(coll_ucg_persist_req_t *req)
{
    coll_ucg_call_release(&req->call);
    OBJ_RELEASE(req);
}

/*
 * The body of each persistent collective's MPI_*_init: a request, the call
 * prepared into it by the preparation its blocking and nonblocking forms
 * share (@a _prep with the arguments after the call; what it packs from the
 * user's buffers it packs again at each start, what it unpacks it unpacks
 * at each completion), its UCG collective made; or the previous module's
 * MPI_*_init (@a _prev_args) when UCG does not take the call, decided as
 * for the other forms from what is equal on all ranks.
 */
#define COLL_UCG_PERSIST(_coll, _name, _prep, _prep_args, _prev_args) \
    do { \
        mca_coll_ucg_module_t *m = UCG_MOD(module); \
        coll_ucg_persist_req_t *req; \
        \
        if (m->nb_disabled) { \
            return m->prev_##_name _prev_args; \
        } \
        req = coll_ucg_persist_new(m, _coll); \
        if (req == NULL) { \
            return OMPI_ERR_OUT_OF_RESOURCE; \
        } \
        if (!(_prep _prep_args)) { \
            coll_ucg_persist_drop(req); \
            return m->prev_##_name _prev_args; \
        } \
        return coll_ucg_persist_finish_init(m, req, comm, request); \
    } while (0)

static int coll_ucg_bcast_init(void *buff, int count,
                               struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm,
                               struct ompi_info_t *info,
                               ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_BCAST_INIT, bcast_init, coll_ucg_bcast_prep,
                     (m, COLL_UCG_BCAST_INIT, buff, count, dtype, root,
                      &req->call),
                     (buff, count, dtype, root, comm, info, request,
                      m->prev_bcast_init_module));
}

static int coll_ucg_allreduce_init(const void *sbuf, void *rbuf, int count,
                                   struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm,
                                   struct ompi_info_t *info,
                                   ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_ALLREDUCE_INIT, allreduce_init,
                     coll_ucg_reduction_prep,
                     (m, COLL_UCG_ALLREDUCE_INIT, UCG_COLL_ALLREDUCE, sbuf,
                      rbuf, count, dtype, op, 0, &req->call),
                     (sbuf, rbuf, count, dtype, op, comm, info, request,
                      m->prev_allreduce_init_module));
}

static int coll_ucg_reduce_init(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op, int root,
                                struct ompi_communicator_t *comm,
                                struct ompi_info_t *info,
                                ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_REDUCE_INIT, reduce_init,
                     coll_ucg_reduction_prep,
                     (m, COLL_UCG_REDUCE_INIT, UCG_COLL_REDUCE, sbuf, rbuf,
                      count, dtype, op, root, &req->call),
                     (sbuf, rbuf, count, dtype, op, root, comm, info,
                      request, m->prev_reduce_init_module));
}

static int coll_ucg_barrier_init(struct ompi_communicator_t *comm,
                                 struct ompi_info_t *info,
                                 ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_BARRIER_INIT, barrier_init,
                     coll_ucg_barrier_prep,
                     (m, COLL_UCG_BARRIER_INIT, &req->call),
                     (comm, info, request, m->prev_barrier_init_module));
}

static int coll_ucg_gather_init(const void *sbuf, int scount,
                                struct ompi_datatype_t *sdtype, void *rbuf,
                                int rcount, struct ompi_datatype_t *rdtype,
                                int root, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info,
                                ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_GATHER_INIT, gather_init, coll_ucg_gather_prep,
                     (m, COLL_UCG_GATHER_INIT, sbuf, scount, sdtype, rbuf,
                      rcount, rdtype, root, &req->call),
                     (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                      info, request, m->prev_gather_init_module));
}

static int coll_ucg_scatter_init(const void *sbuf, int scount,
                                 struct ompi_datatype_t *sdtype, void *rbuf,
                                 int rcount, struct ompi_datatype_t *rdtype,
                                 int root, struct ompi_communicator_t *comm,
                                 struct ompi_info_t *info,
                                 ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_SCATTER_INIT, scatter_init,
                     coll_ucg_scatter_prep,
                     (m, COLL_UCG_SCATTER_INIT, sbuf, scount, sdtype, rbuf,
                      rcount, rdtype, root, &req->call),
                     (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                      info, request, m->prev_scatter_init_module));
}

static int coll_ucg_allgather_init(const void *sbuf, int scount,
                                   struct ompi_datatype_t *sdtype,
                                   void *rbuf, int rcount,
                                   struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm,
                                   struct ompi_info_t *info,
                                   ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_ALLGATHER_INIT, allgather_init,
                     coll_ucg_allgather_prep,
                     (m, COLL_UCG_ALLGATHER_INIT, sbuf, scount, sdtype, rbuf,
                      rcount, rdtype, &req->call),
                     (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info,
                      request, m->prev_allgather_init_module));
}

static int coll_ucg_reduce_scatter_init(const void *sbuf, void *rbuf,
                                        const int *rcounts,
                                        struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        struct ompi_info_t *info,
                                        ompi_request_t **request,
                                        mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_REDUCE_SCATTER_INIT, reduce_scatter_init,
                     coll_ucg_reduce_scatter_prep,
                     (m, COLL_UCG_REDUCE_SCATTER_INIT, sbuf, rbuf, rcounts,
                      dtype, op, &req->call),
                     (sbuf, rbuf, rcounts, dtype, op, comm, info, request,
                      m->prev_reduce_scatter_init_module));
}

/* The reductions with one count: reduce_scatter_block (per rank), scan,
 * exscan */
#define COLL_UCG_PERSIST_REDSCAN(_coll, _type, _name) \
    COLL_UCG_PERSIST(_coll, _name, coll_ucg_reduction_prep, \
                     (m, _coll, _type, sbuf, rbuf, count, dtype, op, 0, \
                      &req->call), \
                     (sbuf, rbuf, count, dtype, op, comm, info, request, \
                      m->prev_##_name##_module))

static int coll_ucg_reduce_scatter_block_init(const void *sbuf, void *rbuf,
                                              int count,
                                              struct ompi_datatype_t *dtype,
                                              struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm,
                                              struct ompi_info_t *info,
                                              ompi_request_t **request,
                                              mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST_REDSCAN(COLL_UCG_REDUCE_SCATTER_BLOCK_INIT,
                             UCG_COLL_REDUCE_SCATTER_BLOCK,
                             reduce_scatter_block_init);
}

static int coll_ucg_scan_init(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op,
                              struct ompi_communicator_t *comm,
                              struct ompi_info_t *info,
                              ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST_REDSCAN(COLL_UCG_SCAN_INIT, UCG_COLL_SCAN, scan_init);
}

static int coll_ucg_exscan_init(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op,
                                struct ompi_communicator_t *comm,
                                struct ompi_info_t *info,
                                ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST_REDSCAN(COLL_UCG_EXSCAN_INIT, UCG_COLL_EXSCAN,
                             exscan_init);
}

static int coll_ucg_gatherv_init(const void *sbuf, int scount,
                                 struct ompi_datatype_t *sdtype, void *rbuf,
                                 const int *rcounts, const int *displs,
                                 struct ompi_datatype_t *rdtype, int root,
                                 struct ompi_communicator_t *comm,
                                 struct ompi_info_t *info,
                                 ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_GATHERV_INIT, gatherv_init,
                     coll_ucg_gatherv_prep,
                     (m, COLL_UCG_GATHERV_INIT, sbuf, scount, sdtype, rbuf,
                      rcounts, displs, rdtype, root, &req->call),
                     (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                      root, comm, info, request,
                      m->prev_gatherv_init_module));
}

static int coll_ucg_scatterv_init(const void *sbuf, const int *scounts,
                                  const int *displs,
                                  struct ompi_datatype_t *sdtype, void *rbuf,
                                  int rcount, struct ompi_datatype_t *rdtype,
                                  int root, struct ompi_communicator_t *comm,
                                  struct ompi_info_t *info,
                                  ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_SCATTERV_INIT, scatterv_init,
                     coll_ucg_scatterv_prep,
                     (m, COLL_UCG_SCATTERV_INIT, sbuf, scounts, displs,
                      sdtype, rbuf, rcount, rdtype, root, &req->call),
                     (sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype,
                      root, comm, info, request,
                      m->prev_scatterv_init_module));
}

static int coll_ucg_allgatherv_init(const void *sbuf, int scount,
                                    struct ompi_datatype_t *sdtype,
                                    void *rbuf, const int *rcounts,
                                    const int *displs,
                                    struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm,
                                    struct ompi_info_t *info,
                                    ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_ALLGATHERV_INIT, allgatherv_init,
                     coll_ucg_allgatherv_prep,
                     (m, COLL_UCG_ALLGATHERV_INIT, sbuf, scount, sdtype, rbuf,
                      rcounts, displs, rdtype, &req->call),
                     (sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                      comm, info, request, m->prev_allgatherv_init_module));
}

static int coll_ucg_alltoall_init(const void *sbuf, int scount,
                                  struct ompi_datatype_t *sdtype, void *rbuf,
                                  int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm,
                                  struct ompi_info_t *info,
                                  ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_ALLTOALL_INIT, alltoall_init,
                     coll_ucg_alltoall_prep,
                     (m, COLL_UCG_ALLTOALL_INIT, sbuf, scount, sdtype, rbuf,
                      rcount, rdtype, &req->call),
                     (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info,
                      request, m->prev_alltoall_init_module));
}

static int coll_ucg_alltoallv_init(const void *sbuf, const int *scounts,
                                   const int *sdispls,
                                   struct ompi_datatype_t *sdtype,
                                   void *rbuf, const int *rcounts,
                                   const int *rdispls,
                                   struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm,
                                   struct ompi_info_t *info,
                                   ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    COLL_UCG_PERSIST(COLL_UCG_ALLTOALLV_INIT, alltoallv_init,
                     coll_ucg_alltoallv_prep,
                     (m, COLL_UCG_ALLTOALLV_INIT, sbuf, scounts, sdispls,
                      sdtype, rbuf, rcounts, rdispls, rdtype, &req->call),
                     (sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                      rdtype, comm, info, request,
                      m->prev_alltoallv_init_module));
}

/* The persistent collectives this file runs (@a _do for each) */
#define COLL_UCG_PERSIST_EACH(_do) \
    _do(bcast_init) _do(allreduce_init) _do(reduce_init) \
    _do(barrier_init) _do(gather_init) _do(scatter_init) \
    _do(allgather_init) _do(reduce_scatter_init) \
    _do(reduce_scatter_block_init) _do(scan_init) _do(exscan_init) \
    _do(gatherv_init) _do(scatterv_init) _do(allgatherv_init) \
    _do(alltoall_init) _do(alltoallv_init)

void coll_ucg_persist_set_ops(mca_coll_ucg_module_t *m)
{
#define COLL_UCG_PERSIST_SET_OP(_name) \
    m->super.coll_##_name = coll_ucg_##_name;
    COLL_UCG_PERSIST_EACH(COLL_UCG_PERSIST_SET_OP)
}

int coll_ucg_persist_enable(mca_coll_ucg_module_t *m,
                            struct ompi_communicator_t *comm)
{
#define COLL_UCG_PERSIST_SAVE(_name) COLL_UCG_SAVE(m, comm, _name);
    COLL_UCG_PERSIST_EACH(COLL_UCG_PERSIST_SAVE)
    return OMPI_SUCCESS;
}

void coll_ucg_persist_release_prev(mca_coll_ucg_module_t *m)
{
#define COLL_UCG_PERSIST_RELEASE(_name) COLL_UCG_RELEASE_PREV(m, _name);
    COLL_UCG_PERSIST_EACH(COLL_UCG_PERSIST_RELEASE)
}

void coll_ucg_persist_close(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;

    if (c->persist_progress) {
        opal_progress_unregister(coll_ucg_persist_progress);
        c->persist_progress = false;
    }
}

#else /* !COLL_UCG_HAVE_PERSISTENT: the previous module's (coll_ucg.h) */

void coll_ucg_persist_set_ops(mca_coll_ucg_module_t *m)
{
}

int coll_ucg_persist_enable(mca_coll_ucg_module_t *m,
                            struct ompi_communicator_t *comm)
{
    return OMPI_SUCCESS;
}

void coll_ucg_persist_release_prev(mca_coll_ucg_module_t *m)
{
}

void coll_ucg_persist_close(void)
{
}

#endif
