/**
 * coll/ucg: the collectives with a count per rank, MPI_Gatherv,
 * MPI_Scatterv, MPI_Allgatherv, and their nonblocking forms, on UCG.
 *
 * Which path a call takes must be the same on every rank, and here no size
 * is: a rank knows its own count, and only the root (every rank in
 * allgatherv) the others'.  So the choice uses what all ranks share: the
 * communicator's group, the <coll>_enable parameters, and the tuning rules
 * looked up with 0 bytes (a rule for these collectives gives bytes 0 or *);
 * no <coll>_max_bytes.  The data move as bytes: a datatype that is not
 * contiguous is packed (the vector buffer block by block), so the ranks'
 * datatypes may differ as MPI allows (equal type signatures).  The first
 * call of each type and root is agreed on by all ranks (coll_ucg_decide);
 * later ones are not, and a rank that then cannot prepare one (memory for
 * a packed copy) fails it on every rank through UCG's abort.  UCG checks
 * the counts (overflow, this rank's own entry) and the length of every
 * message it receives against what this rank expects.
 */
#include "coll_ucg_int.h"

#include "opal/util/output.h"
#include "ompi/datatype/ompi_datatype.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>


/* Whether UCG takes a call of @a type; then the call's common parameters
 * are set and its preparation begins */
static bool coll_ucg_v_call(mca_coll_ucg_module_t *m, int coll,
                            ucg_coll_type_t type, int root,
                            coll_ucg_call_t *call)
{
    if ((m->group == NULL) || !mca_coll_ucg_component.coll_enable[coll]) {
        ++m->n_delegated[coll];
        return false;
    }
    if (!coll_ucg_rule_plan(m, coll, 0, call)) {
        return false;
    }

    call->params.type  = type;
    call->params.dtype = UCG_DT_UINT8;
    call->params.root  = root;
    coll_ucg_call_init(m, coll, call, 0);
    call->v.active = true;
    call->v.size   = m->comm_size;
    return true;
}

/* Pack (@a pack) or unpack block @a i of the vector buffer between the
 * user's buffer and the packed copy; false on failure */
static bool coll_ucg_v_block(coll_ucg_v_t *v, int i, bool pack)
{
    size_t *bytes = v->bytes;
    ptrdiff_t lb, extent;
    char *user, *packed;
    int pos = 0;

    if (bytes[i] == 0) {
        return true;
    }
    ompi_datatype_get_extent(v->dtype, &lb, &extent);
    user   = (char*)v->buf + (ptrdiff_t)v->displs[i] * extent;
    packed = (char*)v->packed + bytes[v->size + i];
    return pack ? (PMPI_Pack(user, v->counts[i], v->dtype, packed,
                             (int)bytes[i], &pos, MPI_COMM_SELF) ==
                   MPI_SUCCESS) :
                  (PMPI_Unpack(packed, (int)bytes[i], &pos, user,
                               v->counts[i], v->dtype, MPI_COMM_SELF) ==
                   MPI_SUCCESS);
}

/*
 * The vector buffer @a buf (@a counts, @a displs of @a dtype) as UCG gets
 * it: byte counts and displacements in call->v.bytes, returned the base
 * they are relative to.  A contiguous datatype: the user's buffer (based
 * at its lowest displacement, which MPI allows to be negative); else a
 * packed copy, the blocks one after another, into which @a pack blocks are
 * packed (-1: all, -2: none, else that one) and from which, when
 * @a unpack, they are unpacked at the end.  NULL with call->ok false on
 * failure.
 */
static void *coll_ucg_v_buf(coll_ucg_call_t *call, void *buf,
                            const int *counts, const int *displs,
                            struct ompi_datatype_t *dtype, int pack,
                            bool unpack)
{
    coll_ucg_v_t *v = &call->v;
    int n           = v->size;
    ptrdiff_t lb, extent, true_lb, true_extent;
    size_t size, total;
    int i, min_displ;

    v->bytes = malloc(2 * (size_t)n * sizeof(*v->bytes));
    if ((v->bytes == NULL) || (counts == NULL) || (displs == NULL)) {
        goto err;
    }

    ompi_datatype_type_size(dtype, &size);
    ompi_datatype_get_extent(dtype, &lb, &extent);
    min_displ = 0;
    for (i = 0; i < n; ++i) {
        if (counts[i] < 0) {
            goto err;
        }
        v->bytes[i] = (size_t)counts[i] * size;
        min_displ   = ((i == 0) || (displs[i] < min_displ)) ? displs[i] :
                                                           min_displ;
    }

    if (ompi_datatype_is_contiguous_memory_layout(dtype, 2) &&
        ((ptrdiff_t)size == extent)) {
        for (i = 0; i < n; ++i) {
            v->bytes[n + i] = (size_t)((ptrdiff_t)(displs[i] - min_displ) *
                                       extent);
        }
        ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
        return (char*)buf + true_lb + (ptrdiff_t)min_displ * extent;
    }

    total = 0;
    for (i = 0; i < n; ++i) {
        if (v->bytes[i] > INT_MAX) {
            opal_output(0, "coll:ucg: cannot pack %zu bytes", v->bytes[i]);
            goto err;
        }
        v->bytes[n + i] = total;
        total          += v->bytes[i];
    }
    v->packed = malloc((total > 0) ? total : 1);
    if (v->packed == NULL) {
        opal_output(0, "coll:ucg: cannot allocate %zu bytes", total);
        goto err;
    }
    v->buf    = buf;
    v->counts = counts;
    v->displs = displs;
    v->dtype  = dtype;
    v->pack   = pack;
    v->unpack = unpack;
    coll_ucg_call_uses(call, dtype);
    if (!coll_ucg_v_repack(call)) {
        goto err;
    }
    return v->packed;

err:
    call->ok = false;
    return NULL;
}

/* Give UCG the vector buffer's counts: @a send for scatterv's */
static void coll_ucg_v_params(coll_ucg_call_t *call, bool send)
{
    size_t *bytes = call->v.bytes;

    if (bytes == NULL) {
        return;
    }
    if (send) {
        call->params.scounts = bytes;
        call->params.sdispls = bytes + call->v.size;
    } else {
        call->params.rcounts = bytes;
        call->params.rdispls = bytes + call->v.size;
    }
}

bool coll_ucg_v_repack(coll_ucg_call_t *call)
{
    coll_ucg_v_t *v = &call->v;
    int i;

    for (i = 0; (v->packed != NULL) && (i < v->size); ++i) {
        if (((v->pack == -1) || (v->pack == i)) &&
            !coll_ucg_v_block(v, i, true)) {
            return false;
        }
    }
    return true;
}

int coll_ucg_v_unpack(coll_ucg_call_t *call)
{
    coll_ucg_v_t *v = &call->v;
    int i;

    for (i = 0; (v->packed != NULL) && v->unpack && (i < v->size); ++i) {
        if (!coll_ucg_v_block(v, i, false)) {
            return OMPI_ERROR;
        }
    }
    return OMPI_SUCCESS;
}

void coll_ucg_v_release(coll_ucg_call_t *call)
{
    coll_ucg_v_t *v = &call->v;

    free(v->packed);
    free(v->bytes);
    memset(v, 0, sizeof(*v));
}

bool coll_ucg_v_same(const mca_coll_ucg_module_t *m, int coll,
                     const coll_ucg_call_t *call)
{
    return call->v.active && (call->v.bytes != NULL) &&
           (m->cached_v[coll] != NULL) &&
           !memcmp(m->cached_v[coll], call->v.bytes,
                   2 * (size_t)call->v.size * sizeof(*call->v.bytes));
}

bool coll_ucg_v_keep(mca_coll_ucg_module_t *m, int coll,
                     const coll_ucg_call_t *call)
{
    size_t len = 2 * (size_t)call->v.size * sizeof(*call->v.bytes);

    if (!call->v.active || (call->v.bytes == NULL)) {
        return false;
    }
    if (m->cached_v[coll] == NULL) {
        m->cached_v[coll] = malloc(len);
        if (m->cached_v[coll] == NULL) {
            return false; /* only not cached */
        }
    }
    memcpy(m->cached_v[coll], call->v.bytes, len);
    return true;
}

/* Own contribution from @a sbuf (@a count of @a dtype), or in place */
static void coll_ucg_v_own(mca_coll_ucg_module_t *m, coll_ucg_call_t *call,
                           const void *sbuf, int count,
                           struct ompi_datatype_t *dtype)
{
    size_t bytes;

    if (sbuf == MPI_IN_PLACE) {
        call->params.sbuf = UCG_IN_PLACE;
        return;
    }
    bytes               = coll_ucg_bytes(dtype, count);
    call->params.count  = bytes;
    call->params.sbuf   = coll_ucg_buf_in(m, call, 0, sbuf, count, dtype,
                                          bytes, true);
}


/* ---- preparation (shared with the nonblocking forms) -------------------- */

bool coll_ucg_gatherv_prep(mca_coll_ucg_module_t *m, int coll,
                           const void *sbuf, int scount,
                           struct ompi_datatype_t *sdtype, void *rbuf,
                           const int *rcounts, const int *displs,
                           struct ompi_datatype_t *rdtype, int root,
                           coll_ucg_call_t *call)
{
    bool in_place = (sbuf == MPI_IN_PLACE);

    if (!coll_ucg_v_call(m, coll, UCG_COLL_GATHERV, root, call)) {
        return false;
    }

    if (m->comm_rank == root) {
        call->params.rbuf = coll_ucg_v_buf(call, rbuf, rcounts, displs,
                                           rdtype, in_place ? root : -2,
                                           true);
        coll_ucg_v_params(call, false);
    }
    coll_ucg_v_own(m, call, sbuf, scount, sdtype);
    return true;
}

bool coll_ucg_scatterv_prep(mca_coll_ucg_module_t *m, int coll,
                            const void *sbuf, const int *scounts,
                            const int *displs,
                            struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype,
                            int root, coll_ucg_call_t *call)
{
    size_t bytes;

    if (!coll_ucg_v_call(m, coll, UCG_COLL_SCATTERV, root, call)) {
        return false;
    }

    if (m->comm_rank == root) {
        call->params.sbuf = coll_ucg_v_buf(call, (void*)sbuf, scounts,
                                           displs, sdtype, -1, false);
        coll_ucg_v_params(call, true);
    }
    if (rbuf == MPI_IN_PLACE) {
        call->params.rbuf = UCG_IN_PLACE;
        return true;
    }

    bytes              = coll_ucg_bytes(rdtype, rcount);
    call->params.count = bytes;
    call->params.rbuf  = coll_ucg_buf_in(m, call, 1, rbuf, rcount, rdtype,
                                         bytes, false);
    /* unpacked from the packed copy, if any, at the end */
    coll_ucg_call_out(call, rbuf, rcount, rdtype, bytes);
    return true;
}

bool coll_ucg_allgatherv_prep(mca_coll_ucg_module_t *m, int coll,
                              const void *sbuf, int scount,
                              struct ompi_datatype_t *sdtype, void *rbuf,
                              const int *rcounts, const int *displs,
                              struct ompi_datatype_t *rdtype,
                              coll_ucg_call_t *call)
{
    bool in_place = (sbuf == MPI_IN_PLACE);

    if (!coll_ucg_v_call(m, coll, UCG_COLL_ALLGATHERV, 0, call)) {
        return false;
    }

    call->params.rbuf = coll_ucg_v_buf(call, rbuf, rcounts, displs, rdtype,
                                       in_place ? m->comm_rank : -2, true);
    coll_ucg_v_params(call, false);
    coll_ucg_v_own(m, call, sbuf, scount, sdtype);
    return true;
}


/* ---- blocking ----------------------------------------------------------- */

static int coll_ucg_gatherv(const void *sbuf, int scount,
                            struct ompi_datatype_t *sdtype, void *rbuf,
                            const int *rcounts, const int *displs,
                            struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call;
    int ret;

    memset(&call, 0, sizeof(call));
    if (coll_ucg_gatherv_prep(m, COLL_UCG_GATHERV, sbuf, scount, sdtype,
                              rbuf, rcounts, displs, rdtype, root, &call)) {
        ret = coll_ucg_go_out(m, COLL_UCG_GATHERV, comm, &call);
        if (ret != COLL_UCG_DELEGATE) {
            return ret;
        }
    }
    return m->prev_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs,
                           rdtype, root, comm, m->prev_gatherv_module);
}

static int coll_ucg_scatterv(const void *sbuf, const int *scounts,
                             const int *displs,
                             struct ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype,
                             int root, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call;
    int ret;

    memset(&call, 0, sizeof(call));
    if (coll_ucg_scatterv_prep(m, COLL_UCG_SCATTERV, sbuf, scounts, displs,
                               sdtype, rbuf, rcount, rdtype, root, &call)) {
        ret = coll_ucg_go_out(m, COLL_UCG_SCATTERV, comm, &call);
        if (ret != COLL_UCG_DELEGATE) {
            return ret;
        }
    }
    return m->prev_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount,
                            rdtype, root, comm, m->prev_scatterv_module);
}

static int coll_ucg_allgatherv(const void *sbuf, int scount,
                               struct ompi_datatype_t *sdtype, void *rbuf,
                               const int *rcounts, const int *displs,
                               struct ompi_datatype_t *rdtype,
                               struct ompi_communicator_t *comm,
                               mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call;
    int ret;

    memset(&call, 0, sizeof(call));
    if (coll_ucg_allgatherv_prep(m, COLL_UCG_ALLGATHERV, sbuf, scount,
                                 sdtype, rbuf, rcounts, displs, rdtype,
                                 &call)) {
        ret = coll_ucg_go_out(m, COLL_UCG_ALLGATHERV, comm, &call);
        if (ret != COLL_UCG_DELEGATE) {
            return ret;
        }
    }
    return m->prev_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs,
                              rdtype, comm, m->prev_allgatherv_module);
}


/* ---- nonblocking (coll_ucg_nb.c runs them) ------------------------------ */

static int coll_ucg_igatherv(const void *sbuf, int scount,
                             struct ompi_datatype_t *sdtype, void *rbuf,
                             const int *rcounts, const int *displs,
                             struct ompi_datatype_t *rdtype, int root,
                             struct ompi_communicator_t *comm,
                             ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call;

    memset(&call, 0, sizeof(call));
    call.nb = true;
    if (!m->nb_disabled &&
        coll_ucg_gatherv_prep(m, COLL_UCG_IGATHERV, sbuf, scount, sdtype,
                              rbuf, rcounts, displs, rdtype, root, &call)) {
        return coll_ucg_nb_start(m, COLL_UCG_IGATHERV, comm, &call, request);
    }
    return m->prev_igatherv(sbuf, scount, sdtype, rbuf, rcounts, displs,
                            rdtype, root, comm, request,
                            m->prev_igatherv_module);
}

static int coll_ucg_iscatterv(const void *sbuf, const int *scounts,
                              const int *displs,
                              struct ompi_datatype_t *sdtype, void *rbuf,
                              int rcount, struct ompi_datatype_t *rdtype,
                              int root, struct ompi_communicator_t *comm,
                              ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call;

    memset(&call, 0, sizeof(call));
    call.nb = true;
    if (!m->nb_disabled &&
        coll_ucg_scatterv_prep(m, COLL_UCG_ISCATTERV, sbuf, scounts, displs,
                               sdtype, rbuf, rcount, rdtype, root, &call)) {
        return coll_ucg_nb_start(m, COLL_UCG_ISCATTERV, comm, &call,
                                 request);
    }
    return m->prev_iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount,
                             rdtype, root, comm, request,
                             m->prev_iscatterv_module);
}

static int coll_ucg_iallgatherv(const void *sbuf, int scount,
                                struct ompi_datatype_t *sdtype, void *rbuf,
                                const int *rcounts, const int *displs,
                                struct ompi_datatype_t *rdtype,
                                struct ompi_communicator_t *comm,
                                ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    mca_coll_ucg_module_t *m = UCG_MOD(module);
    coll_ucg_call_t call;

    memset(&call, 0, sizeof(call));
    call.nb = true;
    if (!m->nb_disabled &&
        coll_ucg_allgatherv_prep(m, COLL_UCG_IALLGATHERV, sbuf, scount,
                                 sdtype, rbuf, rcounts, displs, rdtype,
                                 &call)) {
        return coll_ucg_nb_start(m, COLL_UCG_IALLGATHERV, comm, &call,
                                 request);
    }
    return m->prev_iallgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs,
                               rdtype, comm, request,
                               m->prev_iallgatherv_module);
}

void coll_ucg_v_set_ops(mca_coll_ucg_module_t *m)
{
    m->super.coll_gatherv     = coll_ucg_gatherv;
    m->super.coll_scatterv    = coll_ucg_scatterv;
    m->super.coll_allgatherv  = coll_ucg_allgatherv;
    m->super.coll_igatherv    = coll_ucg_igatherv;
    m->super.coll_iscatterv   = coll_ucg_iscatterv;
    m->super.coll_iallgatherv = coll_ucg_iallgatherv;
}
