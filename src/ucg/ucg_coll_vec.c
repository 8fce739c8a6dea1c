/**
 * UCG executor: the collectives with a count per member (GATHERV, SCATTERV,
 * ALLGATHERV).  Their arguments are checked and their counts and
 * displacements copied here, in bytes (coll->vlen, coll->voff); they run
 * the block phases (phase/ucg_p2p_block.c), which cut gbuf by vlen / voff
 * instead of equal blocks.  A member that does not know the other members'
 * counts (a non-root of gatherv or scatterv) knows its own, and each
 * receive is checked against the length this member expects
 * (ucg_p2p_recv): a peer that sends another count fails the collective.
 */
#include "ucg_coll.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/* Bytes of @a count elements at element offset @a displ, checked against
 * size_t overflow of the end (displ + count) * dt_size */
static ucs_status_t ucg_coll_vec_entry(const ucg_coll_t *coll,
                                       const char *what, unsigned i,
                                       size_t count, size_t displ,
                                       size_t *len_p, size_t *off_p)
{
    size_t dt_size = coll->dt_size;

    if ((count > SIZE_MAX / dt_size) || (displ > SIZE_MAX / dt_size) ||
        (displ * dt_size > SIZE_MAX - count * dt_size)) {
        ucs_error("ucg %s: %s of member %u: %zu elements of %zu bytes at "
                  "%zu overflow", ucg_coll_name(coll->params.type), what, i,
                  count, dt_size, displ);
        return UCS_ERR_INVALID_PARAM;
    }

    *len_p = count * dt_size;
    *off_p = displ * dt_size;
    return UCS_OK;
}

/* Copy every member's count and displacement (@a what names them) */
static ucs_status_t ucg_coll_vec_copy(ucg_coll_t *coll, const char *what,
                                      const size_t *counts,
                                      const size_t *displs, size_t *total_p)
{
    unsigned size = coll->group->size;
    size_t total  = 0;
    ucs_status_t status;
    unsigned i;

    if ((counts == NULL) || (displs == NULL)) {
        ucs_error("ucg %s: %s: NULL counts or displacements",
                  ucg_coll_name(coll->params.type), what);
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < size; ++i) {
        status = ucg_coll_vec_entry(coll, what, i, counts[i], displs[i],
                                    &coll->vlen[i], &coll->voff[i]);
        if (status != UCS_OK) {
            return status;
        }
        total |= coll->vlen[i];
    }

    *total_p = total; /* non-zero when some block is */
    return UCS_OK;
}

ucs_status_t ucg_coll_vec_init(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    unsigned size                   = coll->group->size;
    unsigned me                     = coll->group->rank;
    ucg_coll_type_t type            = params->type;
    int is_root                     = (type == UCG_COLL_ALLGATHERV) ||
                                      (params->root == me);
    size_t any                      = 0;
    const char *what;
    const size_t *counts, *displs;
    ucs_status_t status;
    int own_in_place;

    coll->vlen = ucs_calloc(2 * (size_t)size, sizeof(*coll->vlen),
                            "ucg vector counts");
    if (coll->vlen == NULL) {
        ucs_error("ucg %s: out of memory for the counts of %u members",
                  ucg_coll_name(type), size);
        return UCS_ERR_NO_MEMORY;
    }
    coll->voff = coll->vlen + size;

    /* In-place markers where MPI allows them */
    own_in_place = (type == UCG_COLL_SCATTERV) ?
                   (params->rbuf == UCG_IN_PLACE) :
                   (params->sbuf == UCG_IN_PLACE);
    if (((type == UCG_COLL_SCATTERV) ? (params->sbuf == UCG_IN_PLACE) :
                                       (params->rbuf == UCG_IN_PLACE)) ||
        (own_in_place && !is_root)) {
        ucs_error("ucg %s: UCG_IN_PLACE is only valid as the %s buffer%s",
                  ucg_coll_name(type),
                  (type == UCG_COLL_SCATTERV) ? "receive" : "send",
                  (type == UCG_COLL_ALLGATHERV) ? "" : " at the root");
        return UCS_ERR_INVALID_PARAM;
    }

    if (!is_root) {
        /* Only its own block, in its own buffer */
        coll->vlen[me] = coll->len;
        if ((coll->len > 0) &&
            (((type == UCG_COLL_GATHERV) ? params->sbuf : params->rbuf) ==
             NULL)) {
            goto err_null;
        }
        return UCS_OK;
    }

    if (type == UCG_COLL_SCATTERV) {
        what   = "scounts/sdispls";
        counts = params->scounts;
        displs = params->sdispls;
    } else {
        what   = "rcounts/rdispls";
        counts = params->rcounts;
        displs = params->rdispls;
    }

    status = ucg_coll_vec_copy(coll, what, counts, displs, &any);
    if (status != UCS_OK) {
        return status;
    }

    /* The vector buffer: the root's sbuf (scatterv), rbuf (the others) */
    if ((any != 0) &&
        (((type == UCG_COLL_SCATTERV) ? params->sbuf : params->rbuf) ==
         NULL)) {
        goto err_null;
    }

    if (own_in_place) {
        return UCS_OK;
    }

    /* Its own block also goes through its count and its own buffer */
    if (coll->len != coll->vlen[me]) {
        ucs_error("ucg %s: count %zu of member %u differs from its entry "
                  "%zu of %s", ucg_coll_name(type), params->count, me,
                  coll->vlen[me] / coll->dt_size, what);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((coll->len > 0) &&
        (((type == UCG_COLL_SCATTERV) ? params->rbuf : params->sbuf) ==
         NULL)) {
        goto err_null;
    }
    return UCS_OK;

err_null:
    ucs_error("ucg %s: NULL buffer with %zu elements", ucg_coll_name(type),
              params->count);
    return UCS_ERR_INVALID_PARAM;
}

void ucg_coll_vec_cleanup(ucg_coll_t *coll)
{
    ucs_free(coll->vlen);
    coll->vlen = NULL;
    coll->voff = NULL;
}

ucs_status_t ucg_coll_vec_setup_buffers(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    unsigned me                     = coll->group->rank;
    int is_root                     = (params->root == me);
    size_t len                      = coll->vlen[me];

    switch (params->type) {
    case UCG_COLL_GATHERV:
        if (!is_root) {
            coll->gbuf = (void*)params->sbuf;
            return UCS_OK;
        }
        coll->gbuf = params->rbuf;
        if ((params->sbuf != UCG_IN_PLACE) && (len > 0)) {
            memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, coll->voff[me]),
                   params->sbuf, len);
        }
        return UCS_OK;
    case UCG_COLL_SCATTERV:
        if (!is_root) {
            coll->gbuf = params->rbuf;
            return UCS_OK;
        }
        coll->gbuf = (void*)params->sbuf;
        if ((params->rbuf != UCG_IN_PLACE) && (len > 0)) {
            memcpy(params->rbuf,
                   UCS_PTR_BYTE_OFFSET(coll->gbuf, coll->voff[me]), len);
        }
        return UCS_OK;
    case UCG_COLL_ALLGATHERV:
        coll->gbuf = params->rbuf;
        if ((params->sbuf != UCG_IN_PLACE) && (len > 0)) {
            memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, coll->voff[me]),
                   params->sbuf, len);
        }
        return UCS_OK;
    default:
        return UCS_ERR_INVALID_PARAM;
    }
}
