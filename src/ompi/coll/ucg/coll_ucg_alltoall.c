/**
 * coll/ucg: the preparation of MPI_Alltoall and MPI_Alltoallv (blocking:
 * coll_ucg_module.c, nonblocking: coll_ucg_nb.c) on UCG's alltoall and
 * alltoallv, which move bytes.
 *
 * Alltoall is as allgather: one block size all ranks know, a packed copy
 * of a non-contiguous layout.  Alltoallv's counts differ between ranks, so
 * nothing about them may decide between UCG and the previous module
 * (every rank must take the same path): the decision uses no size (the
 * rules see 0 bytes, there is no max_bytes), and every layout is carried
 * - a contiguous datatype in place in the user's buffers (byte
 * displacements from the lowest block, so that negative ones work too), a
 * non-contiguous one packed block by block into a buffer of its own and
 * unpacked the same way when the call completed.  Its byte arrays are
 * allocated per call (UCG copies them at ucg_coll_init); a rank that cannot
 * allocate them fails the call, and UCG's abort fails it on the others.
 */
#include "coll_ucg_int.h"

#include "opal/util/output.h"
#include "ompi/datatype/ompi_datatype.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>


bool coll_ucg_alltoall_prep(mca_coll_ucg_module_t *m, int coll,
                            const void *sbuf, int scount,
                            struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype,
                            coll_ucg_call_t *call)
{
    /* a block is the same number of bytes everywhere (MPI: matching type
     * signatures); in place, the send count and type are ignored */
    size_t bytes  = coll_ucg_bytes(rdtype, rcount);
    bool in_place = (sbuf == MPI_IN_PLACE);
    int n         = m->comm_size;

    if (!coll_ucg_bytes_call(m, coll, UCG_COLL_ALLTOALL, bytes, 0,
                             bytes * n, call)) {
        return false;
    }

    /* in place, the data to send is in rbuf: packed in too */
    call->params.rbuf = coll_ucg_buf_in(m, call, 1, rbuf, rcount * n, rdtype,
                                        bytes * n, in_place);
    coll_ucg_call_out(call, rbuf, rcount * n, rdtype, bytes * n);
    if (in_place) {
        call->params.sbuf = UCG_IN_PLACE;
    } else {
        call->params.sbuf = coll_ucg_buf_in(m, call, 0, sbuf, scount * n,
                                            sdtype, bytes * n, true);
    }
    return true;
}


/* What an alltoallv allocated, where its packed send blocks come from
 * and its packed receive blocks go */
struct coll_ucg_a2av {
    size_t                 *arrays;  /* scounts, sdispls, rcounts, rdispls
                                        in bytes, of comm_size each */
    void                   *spacked; /* packed copies (non-contiguous */
    void                   *rpacked; /* types), NULL when not packed */
    size_t                 stotal;   /* bytes of spacked */
    size_t                 rtotal;   /* bytes of rpacked */
    bool                   in_place; /* rpacked holds the data sent too */
    const void             *sbuf;    /* the user's send layout */
    const int              *scounts;
    const int              *sdispls;
    struct ompi_datatype_t *sdtype;
    void                   *rbuf;    /* the user's receive layout */
    const int              *rcounts;
    const int              *rdispls;
    struct ompi_datatype_t *rdtype;
    int                    size;
};

/* Pack (@a pack) or unpack the blocks of @a counts / @a displs (elements
 * of @a dtype at @a buf) to or from @a packed (@a total bytes, block i at
 * @a bd[i]); false if that failed */
static bool coll_ucg_a2av_copy(void *buf, const int *counts,
                               const int *displs,
                               struct ompi_datatype_t *dtype, int n,
                               const size_t *bd, void *packed, size_t total,
                               bool pack)
{
    ptrdiff_t lb, extent;
    char *block;
    int i, pos;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    for (i = 0; i < n; ++i) {
        if (counts[i] <= 0) {
            continue;
        }
        pos   = (int)bd[i];
        block = (char*)buf + (ptrdiff_t)displs[i] * extent;
        if ((pack ? PMPI_Pack(block, counts[i], dtype, packed, (int)total,
                              &pos, MPI_COMM_SELF) :
                    PMPI_Unpack(packed, (int)total, &pos, block, counts[i],
                                dtype, MPI_COMM_SELF)) != MPI_SUCCESS) {
            return false;
        }
    }
    return true;
}

/*
 * The blocks of @a counts / @a displs (elements of @a dtype at @a buf) as
 * bytes: *base_p and the byte counts and displacements @a bc, @a bd.  A
 * layout whose elements are contiguous is used where it is; another is
 * packed (when @a copy) into *packed_p, in rank order.  False when out of
 * memory or too large to pack.
 */
static bool coll_ucg_a2av_layout(const void *buf, const int *counts,
                                 const int *displs,
                                 struct ompi_datatype_t *dtype, int n,
                                 bool copy, size_t *bc, size_t *bd,
                                 void **base_p, void **packed_p,
                                 size_t *total_p)
{
    ptrdiff_t lb, extent, true_lb, true_extent, off, min_off = 0;
    size_t size, total = 0;
    bool first = true;
    int i;

    ompi_datatype_type_size(dtype, &size);
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    *packed_p = NULL;
    *total_p  = 0;

    if ((size == 0) || ompi_datatype_is_contiguous_memory_layout(dtype, 2)) {
        /* element k of block i at buf + (displs[i] + k) * extent + true_lb,
         * extent == size */
        for (i = 0; i < n; ++i) {
            if (counts[i] <= 0) {
                continue;
            }
            off = (ptrdiff_t)displs[i] * extent + true_lb;
            if (first || (off < min_off)) {
                min_off = off;
                first   = false;
            }
        }
        for (i = 0; i < n; ++i) {
            bc[i] = (counts[i] > 0) ? (size_t)counts[i] * size : 0;
            bd[i] = (bc[i] > 0) ?
                    (size_t)((ptrdiff_t)displs[i] * extent + true_lb -
                             min_off) : 0;
        }
        *base_p = (char*)buf + min_off;
        return true;
    }

    for (i = 0; i < n; ++i) {
        bc[i]  = (counts[i] > 0) ? (size_t)counts[i] * size : 0;
        bd[i]  = total;
        total += bc[i];
    }
    if (total > INT_MAX) {
        opal_output(0, "coll:ucg: cannot pack %zu bytes", total);
        return false;
    }
    *packed_p = malloc((total > 0) ? total : 1);
    if (*packed_p == NULL) {
        opal_output(0, "coll:ucg: cannot allocate %zu bytes", total);
        return false;
    }
    *base_p  = *packed_p;
    *total_p = total;
    return !copy || coll_ucg_a2av_copy((void*)buf, counts, displs, dtype, n,
                                       bd, *packed_p, total, true);
}

bool coll_ucg_alltoallv_prep(mca_coll_ucg_module_t *m, int coll,
                             const void *sbuf, const int *scounts,
                             const int *sdispls,
                             struct ompi_datatype_t *sdtype, void *rbuf,
                             const int *rcounts, const int *rdispls,
                             struct ompi_datatype_t *rdtype,
                             coll_ucg_call_t *call)
{
    bool in_place = (sbuf == MPI_IN_PLACE);
    int n         = m->comm_size;
    struct coll_ucg_a2av *a;
    size_t *arr;
    void *base;

    if (!coll_ucg_use(m, coll, 0)) {
        ++m->n_delegated[coll];
        return false;
    }
    if (!coll_ucg_rule_plan(m, coll, 0, call)) {
        return false;
    }

    call->params.type  = UCG_COLL_ALLTOALLV;
    call->params.dtype = UCG_DT_UINT8;
    /* nothing packs into the module's scratch: no size bound to agree on */
    coll_ucg_call_init(m, coll, call, 0);

    a = calloc(1, sizeof(*a));
    if (a != NULL) {
        a->arrays = malloc(4 * sizeof(size_t) * n);
    }
    if ((a == NULL) || (a->arrays == NULL)) {
        opal_output(0, "coll:ucg: alltoallv: no memory for the arrays of "
                    "%d ranks", n);
        free(a);
        call->ok = false;
        return true;
    }
    call->a2av  = a;
    arr         = a->arrays;
    a->in_place = in_place;
    a->sbuf     = sbuf;
    a->scounts  = scounts;
    a->sdispls  = sdispls;
    a->sdtype   = sdtype;
    a->rbuf     = rbuf;
    a->rcounts  = rcounts;
    a->rdispls  = rdispls;
    a->rdtype   = rdtype;
    a->size     = n;

    /* in place, the data to send is in the receive layout: packed too */
    if (!coll_ucg_a2av_layout(rbuf, rcounts, rdispls, rdtype, n, in_place,
                              arr + 2 * n, arr + 3 * n, &base, &a->rpacked,
                              &a->rtotal)) {
        call->ok = false;
        return true;
    }
    call->params.rbuf    = base;
    call->params.rcounts = arr + 2 * n;
    call->params.rdispls = arr + 3 * n;
    if (a->rpacked != NULL) {
        coll_ucg_call_uses(call, rdtype);
    }

    if (in_place) {
        call->params.sbuf = UCG_IN_PLACE;
        return true;
    }
    if (!coll_ucg_a2av_layout(sbuf, scounts, sdispls, sdtype, n, true, arr,
                              arr + n, &base, &a->spacked, &a->stotal)) {
        call->ok = false;
        return true;
    }
    if (a->spacked != NULL) {
        coll_ucg_call_uses(call, sdtype);
    }
    call->params.sbuf    = base;
    call->params.scounts = arr;
    call->params.sdispls = arr + n;
    return true;
}

bool coll_ucg_alltoallv_repack(coll_ucg_call_t *call)
{
    struct coll_ucg_a2av *a = call->a2av;
    const size_t *arr       = a->arrays;
    int n                   = a->size;

    if ((a->spacked != NULL) &&
        !coll_ucg_a2av_copy((void*)a->sbuf, a->scounts, a->sdispls,
                            a->sdtype, n, arr + n, a->spacked, a->stotal,
                            true)) {
        return false;
    }
    return !a->in_place || (a->rpacked == NULL) ||
           coll_ucg_a2av_copy(a->rbuf, a->rcounts, a->rdispls, a->rdtype, n,
                              arr + 3 * n, a->rpacked, a->rtotal, true);
}

int coll_ucg_alltoallv_unpack(coll_ucg_call_t *call)
{
    struct coll_ucg_a2av *a = call->a2av;

    return ((a->rpacked == NULL) ||
            coll_ucg_a2av_copy(a->rbuf, a->rcounts, a->rdispls, a->rdtype,
                               a->size, a->arrays + 3 * a->size, a->rpacked,
                               a->rtotal, false)) ?
           OMPI_SUCCESS : OMPI_ERROR;
}

void coll_ucg_alltoallv_release(coll_ucg_call_t *call)
{
    struct coll_ucg_a2av *a = call->a2av;

    free(a->spacked);
    free(a->rpacked);
    free(a->arrays);
    free(a);
    call->a2av = NULL;
}
