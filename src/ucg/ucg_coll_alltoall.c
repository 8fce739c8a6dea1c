/**
 * UCG executor: what alltoall and alltoallv add to the checks of
 * ucg_coll_init (alltoallv's arrays are checked and copied into coll->dblk
 * and coll->gblk by ucg_coll_vec.c) and to the buffers of a start (phases:
 * phase/ucg_p2p_alltoall.c).
 */
#include "ucg_coll.h"

#include <ucs/debug/log.h>
#include <string.h>


ucs_status_t ucg_coll_check_alltoall(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    unsigned me                     = coll->group->rank;

    if (coll->dblk.len[me] != coll->gblk.len[me]) {
        ucs_error("ucg alltoallv: rank %u sends itself %zu elements but "
                  "receives %zu", me, coll->dblk.len[me] / coll->dt_size,
                  coll->gblk.len[me] / coll->dt_size);
        return UCS_ERR_INVALID_PARAM;
    }

    if (((params->rbuf == NULL) &&
         (ucg_coll_blocks_extent(coll, &coll->gblk) > 0)) ||
        ((params->sbuf == NULL) &&
         (ucg_coll_blocks_extent(coll, &coll->dblk) > 0))) {
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
        soff = coll->dblk.off[me];
        roff = coll->gblk.off[me];
        len  = coll->gblk.len[me];
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
          ucg_coll_blocks_extent(coll, &coll->gblk) :
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
