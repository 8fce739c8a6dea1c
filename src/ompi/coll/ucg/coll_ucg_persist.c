/**
 * coll/ucg persistent collectives (MPI 4.0, Open MPI 5): MPI_Bcast_init,
 * MPI_Allreduce_init, MPI_Reduce_init, MPI_Barrier_init, MPI_Gather_init,
 * MPI_Scatter_init, MPI_Allgather_init on UCG's persistent collectives:
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
 * Non-contiguous buffers are packed into buffers of the request: the data
 * a rank sends is packed again at every start (the user may change it
 * between starts), what it receives is unpacked at every completion.
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


/* What a rank packs at each start into one of the call's packed buffers
 * (slot 0: call->sb, 1: call->rb); buf NULL: nothing */
typedef struct {
    const void             *buf;
    int                    count;
    struct ompi_datatype_t *dtype;
    size_t                 bytes;
} coll_ucg_persist_pack_t;

typedef struct {
    ompi_coll_base_nbc_request_t super;
    ucs_list_link_t         list;     /* component's persist_active, while
                                         started */
    mca_coll_ucg_module_t   *module;  /* retained until the request is
                                         freed */
    int                     coll;
    coll_ucg_call_t         call;     /* call.req NULL: this rank could not
                                         prepare it */
    coll_ucg_persist_pack_t pack[2];
    /* in-place gather (root) / allgather: the own block of rbuf goes into
     * the packed receive buffer at each start, at own_idx */
    bool                    own_block;
    int                     own_idx;
    const void              *own_rbuf;
    int                     own_rcount;
    struct ompi_datatype_t  *own_rdtype;
    size_t                  own_bytes;
    /* derived datatypes (0, 1) and user op (2) retained by the request */
    opal_object_t           *retained[3];
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


static void coll_ucg_persist_retain(coll_ucg_persist_req_t *req,
                                    struct ompi_datatype_t *dtype)
{
    unsigned i;

    if ((dtype == NULL) || ompi_datatype_is_predefined(dtype)) {
        return;
    }
    for (i = 0; i < 2; ++i) {
        if (req->retained[i] == (opal_object_t*)dtype) {
            return;
        }
        if (req->retained[i] == NULL) {
            OBJ_RETAIN(dtype);
            req->retained[i] = (opal_object_t*)dtype;
            return;
        }
    }
}

static void coll_ucg_persist_release(coll_ucg_persist_req_t *req)
{
    mca_coll_ucg_module_t *m = req->module;
    unsigned i;

    coll_ucg_release_req(m, req->coll, &req->call);
    coll_ucg_call_finish(&req->call, OMPI_ERROR); /* frees, no unpack */
    for (i = 0; i < 3; ++i) {
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

/* What this rank received, into the user's buffer (a packed copy is kept
 * for the next start) */
static int coll_ucg_persist_unpack(coll_ucg_call_t *call)
{
    int pos = 0;

    if (!call->out.recv || (call->rb.tmp == NULL)) {
        return OMPI_SUCCESS;
    }
    return (PMPI_Unpack(call->rb.tmp, (int)call->out.bytes, &pos,
                        call->out.buf, call->out.count, call->out.dtype,
                        MPI_COMM_SELF) == MPI_SUCCESS) ?
           OMPI_SUCCESS : OMPI_ERROR;
}

/* What this rank sends, from the user's buffers into the packed ones */
static bool coll_ucg_persist_repack(coll_ucg_persist_req_t *req)
{
    coll_ucg_call_t *call = &req->call;
    coll_ucg_buf_t *bufs[2] = {&call->sb, &call->rb};
    int slot, pos;

    for (slot = 0; slot < 2; ++slot) {
        if ((req->pack[slot].buf == NULL) || (bufs[slot]->tmp == NULL)) {
            continue;
        }
        pos = 0;
        if (PMPI_Pack(req->pack[slot].buf, req->pack[slot].count,
                      req->pack[slot].dtype, bufs[slot]->tmp,
                      (int)req->pack[slot].bytes, &pos,
                      MPI_COMM_SELF) != MPI_SUCCESS) {
            return false;
        }
    }
    if (req->own_block) {
        coll_ucg_pack_own_block(call, req->own_rbuf, req->own_rcount,
                                req->own_rdtype, req->own_bytes,
                                req->own_idx);
    }
    return call->ok;
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
        ret = coll_ucg_persist_unpack(&req->call);
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

    if ((req->call.req == NULL) || !coll_ucg_persist_repack(req)) {
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

/* The derived datatype and user op of a reduction */
static void coll_ucg_persist_retain_op(coll_ucg_persist_req_t *req,
                                       struct ompi_datatype_t *dtype,
                                       struct ompi_op_t *op)
{
    coll_ucg_persist_retain(req, dtype);
    if (req->call.params.op == UCG_OP_USER) {
        /* (an ompi_op_t starts with its opal_object_t) */
        OBJ_RETAIN((opal_object_t*)op);
        req->retained[2] = (opal_object_t*)op;
    }
}

/* What slot @a slot (0: the send buffer, 1: the receive buffer) packs from
 * the user's buffer at each start */
static void coll_ucg_persist_pack_at_start(coll_ucg_persist_req_t *req,
                                           int slot, const void *buf,
                                           int count,
                                           struct ompi_datatype_t *dtype,
                                           size_t bytes)
{
    req->pack[slot].buf   = buf;
    req->pack[slot].count = count;
    req->pack[slot].dtype = dtype;
    req->pack[slot].bytes = bytes;
    coll_ucg_persist_retain(req, dtype);
}

/* The own block of an in-place gather (root) or allgather, packed at each
 * start */
static void coll_ucg_persist_own_block(coll_ucg_persist_req_t *req,
                                       const void *rbuf, int rcount,
                                       struct ompi_datatype_t *rdtype,
                                       int idx)
{
    req->own_block  = true;
    req->own_rbuf   = rbuf;
    req->own_rcount = rcount;
    req->own_rdtype = rdtype;
    req->own_bytes  = coll_ucg_bytes(rdtype, rcount);
    req->own_idx    = idx;
}

/*
 * The start of each persistent collective: a request, the call prepared
 * into it (@a _prep with the arguments after the call); or the previous
 * module's MPI_*_init (@a _prev_args).  The caller then says what is
 * packed at each start and returns coll_ucg_persist_finish_init().
 */
#define COLL_UCG_PERSIST_PREP(_coll, _name, _prep, _prep_args, _prev_args) \
    do { \
        if (m->nb_disabled) { \
            return m->prev_##_name _prev_args; \
        } \
        req = OBJ_NEW(coll_ucg_persist_req_t); \
        if (req == NULL) { \
            opal_output(0, "coll:ucg: %s on comm %s: no memory for its " \
                        "request", mca_coll_ucg_coll_names[_coll], \
                        m->comm_name); \
            return OMPI_ERR_OUT_OF_RESOURCE; \
        } \
        req->coll    = (_coll); \
        req->call.nb = true; \
        if (!(_prep _prep_args)) { \
            OBJ_RELEASE(req); \
            return m->prev_##_name _prev_args; \
        } \
    } while (0)

static int coll_ucg_bcast_init(void *buff, int count,
                               struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm,
                               struct ompi_info_t *info,
                               ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_persist_req_t *req;

    COLL_UCG_PERSIST_PREP(COLL_UCG_BCAST_INIT, bcast_init,
                          coll_ucg_bcast_prep,
                          (m, COLL_UCG_BCAST_INIT, buff, count, dtype, root,
                           &req->call),
                          (buff, count, dtype, root, comm, info, request,
                           m->prev_bcast_init_module));
    coll_ucg_persist_retain(req, dtype);
    if (m->comm_rank == root) {
        coll_ucg_persist_pack_at_start(req, 1, buff, count, dtype,
                                       coll_ucg_bytes(dtype, count));
    }
    return coll_ucg_persist_finish_init(m, req, comm, request);
}

static int coll_ucg_allreduce_init(const void *sbuf, void *rbuf, int count,
                                   struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm,
                                   struct ompi_info_t *info,
                                   ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_persist_req_t *req;

    COLL_UCG_PERSIST_PREP(COLL_UCG_ALLREDUCE_INIT, allreduce_init,
                          coll_ucg_reduction_prep,
                          (m, COLL_UCG_ALLREDUCE_INIT, UCG_COLL_ALLREDUCE,
                           sbuf, rbuf, count, dtype, op, 0, &req->call),
                          (sbuf, rbuf, count, dtype, op, comm, info, request,
                           m->prev_allreduce_init_module));
    coll_ucg_persist_retain_op(req, dtype, op);
    return coll_ucg_persist_finish_init(m, req, comm, request);
}

static int coll_ucg_reduce_init(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op, int root,
                                struct ompi_communicator_t *comm,
                                struct ompi_info_t *info,
                                ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_persist_req_t *req;

    COLL_UCG_PERSIST_PREP(COLL_UCG_REDUCE_INIT, reduce_init,
                          coll_ucg_reduction_prep,
                          (m, COLL_UCG_REDUCE_INIT, UCG_COLL_REDUCE, sbuf,
                           rbuf, count, dtype, op, root, &req->call),
                          (sbuf, rbuf, count, dtype, op, root, comm, info,
                           request, m->prev_reduce_init_module));
    coll_ucg_persist_retain_op(req, dtype, op);
    return coll_ucg_persist_finish_init(m, req, comm, request);
}

static int coll_ucg_barrier_init(struct ompi_communicator_t *comm,
                                 struct ompi_info_t *info,
                                 ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_persist_req_t *req;

    COLL_UCG_PERSIST_PREP(COLL_UCG_BARRIER_INIT, barrier_init,
                          coll_ucg_barrier_prep,
                          (m, COLL_UCG_BARRIER_INIT, &req->call),
                          (comm, info, request,
                           m->prev_barrier_init_module));
    return coll_ucg_persist_finish_init(m, req, comm, request);
}

static int coll_ucg_gather_init(const void *sbuf, int scount,
                                struct ompi_datatype_t *sdtype, void *rbuf,
                                int rcount, struct ompi_datatype_t *rdtype,
                                int root, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info,
                                ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_persist_req_t *req;

    COLL_UCG_PERSIST_PREP(COLL_UCG_GATHER_INIT, gather_init,
                          coll_ucg_gather_prep,
                          (m, COLL_UCG_GATHER_INIT, sbuf, scount, sdtype,
                           rbuf, rcount, rdtype, root, &req->call),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                           comm, info, request,
                           m->prev_gather_init_module));
    if (m->comm_rank == root) {
        coll_ucg_persist_retain(req, rdtype);
    }
    if (sbuf != MPI_IN_PLACE) {
        coll_ucg_persist_pack_at_start(req, 0, sbuf, scount, sdtype,
                                       coll_ucg_bytes(sdtype, scount));
    } else if (m->comm_rank == root) {
        coll_ucg_persist_own_block(req, rbuf, rcount, rdtype, root);
    }
    return coll_ucg_persist_finish_init(m, req, comm, request);
}

static int coll_ucg_scatter_init(const void *sbuf, int scount,
                                 struct ompi_datatype_t *sdtype, void *rbuf,
                                 int rcount, struct ompi_datatype_t *rdtype,
                                 int root, struct ompi_communicator_t *comm,
                                 struct ompi_info_t *info,
                                 ompi_request_t **request,
                                 mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_persist_req_t *req;

    COLL_UCG_PERSIST_PREP(COLL_UCG_SCATTER_INIT, scatter_init,
                          coll_ucg_scatter_prep,
                          (m, COLL_UCG_SCATTER_INIT, sbuf, scount, sdtype,
                           rbuf, rcount, rdtype, root, &req->call),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                           comm, info, request,
                           m->prev_scatter_init_module));
    if (rbuf != MPI_IN_PLACE) {
        coll_ucg_persist_retain(req, rdtype);
    }
    if (m->comm_rank == root) {
        coll_ucg_persist_pack_at_start(req, 0, sbuf, scount * m->comm_size,
                                       sdtype,
                                       coll_ucg_bytes(sdtype, scount) *
                                       m->comm_size);
    }
    return coll_ucg_persist_finish_init(m, req, comm, request);
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
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_persist_req_t *req;

    COLL_UCG_PERSIST_PREP(COLL_UCG_ALLGATHER_INIT, allgather_init,
                          coll_ucg_allgather_prep,
                          (m, COLL_UCG_ALLGATHER_INIT, sbuf, scount, sdtype,
                           rbuf, rcount, rdtype, &req->call),
                          (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                           info, request, m->prev_allgather_init_module));
    coll_ucg_persist_retain(req, rdtype);
    if (sbuf != MPI_IN_PLACE) {
        coll_ucg_persist_pack_at_start(req, 0, sbuf, scount, sdtype,
                                       coll_ucg_bytes(sdtype, scount));
    } else {
        coll_ucg_persist_own_block(req, rbuf, rcount, rdtype, m->comm_rank);
    }
    return coll_ucg_persist_finish_init(m, req, comm, request);
}

void coll_ucg_persist_set_ops(mca_coll_ucg_module_t *m)
{
    m->super.coll_bcast_init     = coll_ucg_bcast_init;
    m->super.coll_allreduce_init = coll_ucg_allreduce_init;
    m->super.coll_reduce_init    = coll_ucg_reduce_init;
    m->super.coll_barrier_init   = coll_ucg_barrier_init;
    m->super.coll_gather_init    = coll_ucg_gather_init;
    m->super.coll_scatter_init   = coll_ucg_scatter_init;
    m->super.coll_allgather_init = coll_ucg_allgather_init;
}

int coll_ucg_persist_enable(mca_coll_ucg_module_t *m,
                            struct ompi_communicator_t *comm)
{
    COLL_UCG_SAVE(m, comm, bcast_init);
    COLL_UCG_SAVE(m, comm, allreduce_init);
    COLL_UCG_SAVE(m, comm, reduce_init);
    COLL_UCG_SAVE(m, comm, barrier_init);
    COLL_UCG_SAVE(m, comm, gather_init);
    COLL_UCG_SAVE(m, comm, scatter_init);
    COLL_UCG_SAVE(m, comm, allgather_init);
    return OMPI_SUCCESS;
}

void coll_ucg_persist_release_prev(mca_coll_ucg_module_t *m)
{
    COLL_UCG_RELEASE_PREV(m, bcast_init);
    COLL_UCG_RELEASE_PREV(m, allreduce_init);
    COLL_UCG_RELEASE_PREV(m, reduce_init);
    COLL_UCG_RELEASE_PREV(m, barrier_init);
    COLL_UCG_RELEASE_PREV(m, gather_init);
    COLL_UCG_RELEASE_PREV(m, scatter_init);
    COLL_UCG_RELEASE_PREV(m, allgather_init);
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
