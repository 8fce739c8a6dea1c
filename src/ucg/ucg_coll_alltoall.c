/**
 * UCG executor: what alltoall and alltoallv add to the checks of
 * ucg_coll_init and to the buffers of a start (phases:
 * phase/ucg_p2p_alltoall.c).
 */
#include "ucg_coll.h"

#include <ucs/debug/log.h>
#include <string.h>


/* Whether @a count elements at @a displ, of @a dt_size bytes, end within
 * SIZE_MAX bytes; *end_p gets their end in elements */
static int ucg_coll_a2a_fits(size_t displ, size_t count, size_t dt_size,
                             size_t *end_p)
{
    size_t max = SIZE_MAX / dt_size;

    if ((displ > max) || (count > max - displ)) {
        return 0;
    }

    *end_p = displ + count;
    return 1;
}

/* The end, in elements, of the furthest block of @a counts / @a displs
 * (checked by ucg_coll_check_alltoall) */
static size_t ucg_coll_a2a_extent(const ucg_coll_t *coll,
                                  const size_t *counts, const size_t *displs)
{
    size_t ext = 0;
    unsigned i;

    for (i = 0; i < coll->group->size; ++i) {
        if (counts[i] > 0) {
            ext = ucs_max(ext, displs[i] + counts[i]);
        }
    }
    return ext;
}

ucs_status_t ucg_coll_check_alltoall(ucg_coll_t *coll)
{
    ucg_coll_params_t *params = &coll->params;
    unsigned me               = coll->group->rank;
    int in_place              = (params->sbuf == UCG_IN_PLACE);
    size_t end;
    unsigned i;

    if (in_place) {
        /* what goes to member i is where what comes from i goes */
        params->scounts = params->rcounts;
        params->sdispls = params->rdispls;
    }

    for (i = 0; i < coll->group->size; ++i) {
        if (!ucg_coll_a2a_fits(params->sdispls[i], params->scounts[i],
                               coll->dt_size, &end)) {
            ucs_error("ucg alltoallv: sdispls[%u] %zu + scounts[%u] %zu "
                      "elements of %zu bytes overflow", i,
                      params->sdispls[i], i, params->scounts[i],
                      coll->dt_size);
            return UCS_ERR_INVALID_PARAM;
        }
        if (!ucg_coll_a2a_fits(params->rdispls[i], params->rcounts[i],
                               coll->dt_size, &end)) {
            ucs_error("ucg alltoallv: rdispls[%u] %zu + rcounts[%u] %zu "
                      "elements of %zu bytes overflow", i,
                      params->rdispls[i], i, params->rcounts[i],
                      coll->dt_size);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    if (params->scounts[me] != params->rcounts[me]) {
        ucs_error("ucg alltoallv: rank %u sends itself %zu elements but "
                  "receives %zu", me, params->scounts[me],
                  params->rcounts[me]);
        return UCS_ERR_INVALID_PARAM;
    }

    if (((params->rbuf == NULL) &&
         (ucg_coll_a2a_extent(coll, params->rcounts, params->rdispls) > 0)) ||
        (!in_place && (params->sbuf == NULL) &&
         (ucg_coll_a2a_extent(coll, params->scounts, params->sdispls) > 0))) {
        ucs_error("ucg alltoallv: NULL buffer with elements to %s",
                  (params->rbuf == NULL) ? "receive" : "send");
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

static void ucg_coll_a2a_own(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    unsigned me                     = coll->group->rank;
    size_t soff, roff, len;

    if (params->type == UCG_COLL_ALLTOALLV) {
        soff = params->sdispls[me] * coll->dt_size;
        roff = params->rdispls[me] * coll->dt_size;
        len  = params->rcounts[me] * coll->dt_size;
    } else {
        soff = roff = (size_t)me * coll->len;
        len  = coll->len;
    }

    if (len > 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, roff),
               UCS_PTR_BYTE_OFFSET(coll->data, soff), len);
    }
}

ucs_status_t ucg_coll_setup_alltoall(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    size_t ext;

    coll->gbuf  = params->rbuf;
    coll->block = coll->len;
    if (params->sbuf != UCG_IN_PLACE) {
        /* this member's own block (the lengths are equal: checked by
         * ucg_coll_check_alltoall); the phases move the others */
        coll->data = (void*)params->sbuf;
        ucg_coll_a2a_own(coll);
        return UCS_OK;
    }

    /* In place: what is sent is read from a copy, since what is received
     * replaces it; the own block stays where it is */
    ext = (params->type == UCG_COLL_ALLTOALLV) ?
          ucg_coll_a2a_extent(coll, params->rcounts, params->rdispls) *
          coll->dt_size :
          (size_t)coll->group->size * coll->len;
    coll->data = ucg_coll_scratch(coll, 0, ucs_max(ext, (size_t)1));
    if (coll->data == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    if (ext > 0) {
        memcpy(coll->data, params->rbuf, ext);
    }
    return UCS_OK;
}
