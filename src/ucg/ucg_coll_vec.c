/**
 * UCG executor: the per-member counts and displacements (API 1.3) of the
 * collectives that have them, and what GATHERV, SCATTERV and ALLGATHERV add
 * to ucg_coll_init and to a start.
 *
 * ucg_coll_init reads the caller's arrays here and nowhere else: it checks
 * them and copies them, in bytes, into the blocks of the buffer each array
 * cuts (ucg_coll_blocks_t: coll->gblk of gbuf, coll->dblk of data; see
 * ucg_coll.h), and drops the pointers from coll->params.  So the caller's
 * arrays need not outlive ucg_coll_init, every start of a persistent
 * collective sees the same counts, and the phases (the block phases of
 * phase/ucg_p2p_block.c, alltoallv, reduce_scatter) read lengths and
 * offsets whose ends are known to fit in size_t.
 *
 * A member that does not know the other members' counts (a non-root of
 * gatherv or scatterv) knows its own, and each receive is checked against
 * the length this member expects (ucg_p2p_recv): a peer that sends another
 * count fails the collective.
 */
#include "ucg_coll.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <stdio.h>
#include <string.h>


/* Where the memory of gblk and dblk comes from: 4 x group size, kept with
 * the group's spare collective (no allocation per call of a loop) */
static ucs_status_t ucg_coll_vec_mem(ucg_coll_t *coll)
{
    unsigned size = coll->group->size;

    if (coll->vec_size != size) {
        ucs_free(coll->vec_mem);
        coll->vec_size = 0;
        coll->vec_mem  = ucs_malloc(4 * sizeof(size_t) * size, "ucg vec");
        if (coll->vec_mem == NULL) {
            ucs_error("ucg %s: out of memory for the counts of %u members",
                      ucg_coll_name(coll->params.type), size);
            return UCS_ERR_NO_MEMORY;
        }
        coll->vec_size = size;
    }

    coll->gblk.len = coll->vec_mem;
    coll->gblk.off = coll->vec_mem + size;
    coll->dblk.len = coll->vec_mem + 2 * (size_t)size;
    coll->dblk.off = coll->vec_mem + 3 * (size_t)size;
    return UCS_OK;
}

/*
 * Check and copy one buffer's blocks into @a blk: member i's counts[i]
 * elements at element displs[i].  @a counts_name NULL: params.count
 * elements each (counts not read); @a displs_name NULL: each block right
 * after the previous one (displs not read).  A NULL array that is read,
 * and a block whose end (displ + count) * dt_size overflows size_t, are
 * UCS_ERR_INVALID_PARAM with one log line.  *any_p: non-zero when some
 * block is not empty.
 */
static ucs_status_t
ucg_coll_vec_blocks(ucg_coll_t *coll, ucg_coll_blocks_t *blk,
                    const char *counts_name, const size_t *counts,
                    const char *displs_name, const size_t *displs,
                    size_t *any_p)
{
    const char *name = ucg_coll_name(coll->params.type);
    size_t max       = SIZE_MAX / coll->dt_size;
    size_t next      = 0;
    size_t any       = 0;
    char clabel[64], dlabel[64];
    size_t count, displ;
    unsigned i;

    if (((counts_name != NULL) && (counts == NULL)) ||
        ((displs_name != NULL) && (displs == NULL))) {
        ucs_error("ucg %s: %s is NULL", name,
                  ((counts_name != NULL) && (counts == NULL)) ?
                  counts_name : displs_name);
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < coll->group->size; ++i) {
        count = (counts_name != NULL) ? counts[i] : coll->params.count;
        displ = (displs_name != NULL) ? displs[i] : next;
        if ((count > max) || (displ > max - count)) {
            if (counts_name != NULL) {
                snprintf(clabel, sizeof(clabel), "%s[%u]", counts_name, i);
            } else {
                snprintf(clabel, sizeof(clabel), "count");
            }
            if (displs_name != NULL) {
                snprintf(dlabel, sizeof(dlabel), "%s[%u]", displs_name, i);
            } else {
                snprintf(dlabel, sizeof(dlabel), "the blocks before %u", i);
            }
            ucs_error("ucg %s: %s %zu + %s %zu elements of %zu bytes "
                      "overflow", name, dlabel, displ, clabel, count,
                      coll->dt_size);
            return UCS_ERR_INVALID_PARAM;
        }

        blk->len[i] = count * coll->dt_size;
        blk->off[i] = displ * coll->dt_size;
        any        |= blk->len[i];
        next        = displ + count;
    }

    *any_p = any;
    return UCS_OK;
}

size_t ucg_coll_blocks_extent(const ucg_coll_t *coll,
                              const ucg_coll_blocks_t *blk)
{
    size_t ext = 0;
    unsigned i;

    for (i = 0; i < coll->group->size; ++i) {
        if (blk->len[i] > 0) {
            ext = ucs_max(ext, blk->off[i] + blk->len[i]);
        }
    }
    return ext;
}

/* GATHERV, SCATTERV, ALLGATHERV: the in-place markers, the blocks of gbuf
 * and the buffers that must be there */
static ucs_status_t ucg_coll_vblock_init(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    unsigned size                   = coll->group->size;
    unsigned me                     = coll->group->rank;
    ucg_coll_type_t type            = params->type;
    int sv                          = (type == UCG_COLL_SCATTERV);
    int is_root                     = (type == UCG_COLL_ALLGATHERV) ||
                                      (params->root == me);
    size_t any                      = 0;
    ucs_status_t status;
    int own_in_place;

    /* In-place markers where MPI allows them */
    own_in_place = sv ? (params->rbuf == UCG_IN_PLACE) :
                        (params->sbuf == UCG_IN_PLACE);
    if ((sv ? (params->sbuf == UCG_IN_PLACE) :
              (params->rbuf == UCG_IN_PLACE)) ||
        (own_in_place && !is_root)) {
        ucs_error("ucg %s: UCG_IN_PLACE is only valid as the %s buffer%s",
                  ucg_coll_name(type), sv ? "receive" : "send",
                  (type == UCG_COLL_ALLGATHERV) ? "" : " at the root");
        return UCS_ERR_INVALID_PARAM;
    }

    status = ucg_coll_vec_mem(coll);
    if (status != UCS_OK) {
        return status;
    }

    if (!is_root) {
        /* Only its own block, at the start of its own buffer */
        memset(coll->gblk.len, 0, 2 * sizeof(size_t) * size);
        coll->gblk.len[me] = coll->len;
        if ((coll->len > 0) &&
            ((sv ? params->rbuf : params->sbuf) == NULL)) {
            goto err_null;
        }
        return UCS_OK;
    }

    status = sv ? ucg_coll_vec_blocks(coll, &coll->gblk,
                                      "scounts", params->scounts,
                                      "sdispls", params->sdispls, &any) :
                  ucg_coll_vec_blocks(coll, &coll->gblk,
                                      "rcounts", params->rcounts,
                                      "rdispls", params->rdispls, &any);
    if (status != UCS_OK) {
        return status;
    }

    /* The vector buffer: the root's sbuf (scatterv), rbuf (the others) */
    if ((any != 0) && ((sv ? params->sbuf : params->rbuf) == NULL)) {
        goto err_null;
    }

    if (own_in_place) {
        return UCS_OK;
    }

    /* Its own block also goes through its count and its own buffer */
    if (coll->len != coll->gblk.len[me]) {
        ucs_error("ucg %s: count %zu of member %u differs from its entry "
                  "%zu of %s", ucg_coll_name(type), params->count, me,
                  coll->gblk.len[me] / coll->dt_size,
                  sv ? "scounts" : "rcounts");
        return UCS_ERR_INVALID_PARAM;
    }
    if ((coll->len > 0) && ((sv ? params->rbuf : params->sbuf) == NULL)) {
        goto err_null;
    }
    return UCS_OK;

err_null:
    ucs_error("ucg %s: NULL buffer with %zu elements", ucg_coll_name(type),
              params->count);
    return UCS_ERR_INVALID_PARAM;
}

ucs_status_t ucg_coll_vec_init(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    size_t any;
    ucs_status_t status;

    if (ucg_coll_type_is_vblock(params->type)) {
        return ucg_coll_vblock_init(coll);
    }

    /* The others have no blocks (the block phases cut their gbuf in equal
     * blocks when gblk.len is NULL) */
    if ((params->type != UCG_COLL_ALLTOALLV) &&
        !ucg_coll_type_is_reduce_scatter(params->type)) {
        return UCS_OK;
    }

    status = ucg_coll_vec_mem(coll);
    if (status != UCS_OK) {
        return status;
    }

    switch (params->type) {
    case UCG_COLL_ALLTOALLV:
        status = ucg_coll_vec_blocks(coll, &coll->gblk,
                                     "rcounts", params->rcounts,
                                     "rdispls", params->rdispls, &any);
        if (status != UCS_OK) {
            return status;
        }
        if (params->sbuf == UCG_IN_PLACE) {
            /* what goes to member i is where what comes from i goes; the
             * send arrays are ignored */
            coll->dblk = coll->gblk;
        } else {
            status = ucg_coll_vec_blocks(coll, &coll->dblk,
                                         "scounts", params->scounts,
                                         "sdispls", params->sdispls, &any);
            if (status != UCS_OK) {
                return status;
            }
        }
        return ucg_coll_check_alltoall(coll);
    case UCG_COLL_REDUCE_SCATTER:
    case UCG_COLL_REDUCE_SCATTER_BLOCK:
        /* The blocks follow each other in the vector, which is their sum */
        status = ucg_coll_vec_blocks(coll, &coll->dblk,
                                     (params->type ==
                                      UCG_COLL_REDUCE_SCATTER) ?
                                     "rcounts" : NULL, params->rcounts,
                                     NULL, NULL, &any);
        if (status != UCS_OK) {
            return status;
        }
        coll->len = ucg_coll_blocks_extent(coll, &coll->dblk);
        return UCS_OK;
    default:
        return UCS_OK;
    }
}

void ucg_coll_vec_release(ucg_coll_t *coll)
{
    memset(&coll->gblk, 0, sizeof(coll->gblk));
    memset(&coll->dblk, 0, sizeof(coll->dblk));
}

ucs_status_t ucg_coll_vec_setup_buffers(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    unsigned me                     = coll->group->rank;
    int is_root                     = (params->root == me);
    size_t len                      = coll->gblk.len[me];
    size_t off                      = coll->gblk.off[me];

    switch (params->type) {
    case UCG_COLL_GATHERV:
        if (!is_root) {
            coll->gbuf = (void*)params->sbuf;
            return UCS_OK;
        }
        coll->gbuf = params->rbuf;
        if ((params->sbuf != UCG_IN_PLACE) && (len > 0)) {
            memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, off), params->sbuf, len);
        }
        return UCS_OK;
    case UCG_COLL_SCATTERV:
        if (!is_root) {
            coll->gbuf = params->rbuf;
            return UCS_OK;
        }
        coll->gbuf = (void*)params->sbuf;
        if ((params->rbuf != UCG_IN_PLACE) && (len > 0)) {
            memcpy(params->rbuf, UCS_PTR_BYTE_OFFSET(coll->gbuf, off), len);
        }
        return UCS_OK;
    case UCG_COLL_ALLGATHERV:
        coll->gbuf = params->rbuf;
        if ((params->sbuf != UCG_IN_PLACE) && (len > 0)) {
            memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, off), params->sbuf, len);
        }
        return UCS_OK;
    default:
        return UCS_ERR_INVALID_PARAM;
    }
}
