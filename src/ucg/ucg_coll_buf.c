/**
 * UCG executor: the buffers of a collective instance, what its phases read
 * and write (ucg_plan.h): the user's buffers where they can be, scratch
 * buffers where a member holds more than its own data.
 */
#include "ucg_coll.h"

#include <string.h>


/* Whether this member must hold blocks of other ranks in some phase */
static int ucg_coll_holds_other_blocks(const ucg_coll_t *coll)
{
    unsigned me = coll->group->rank;
    const ucg_phase_set_t *set;
    const ucg_phase_t *phase;
    unsigned i, r, idx, flags;

    for (i = 0; i < coll->plan->num_phases; ++i) {
        phase = &coll->plan->phases[i];
        set   = ucg_coll_my_set(coll, i, &idx);
        if (set == NULL) {
            continue;
        }
        flags = ucg_phase_table[phase->method].flags;
        if ((set->root == idx) &&
            ((flags & UCG_PHASE_FLAG_ROOT_HOLDS_BLOCKS) ||
             ((flags & UCG_PHASE_FLAG_SCATTERS_BLOCKS) &&
              (coll->params.type == UCG_COLL_SCATTER)))) {
            return 1;
        }
        if (phase->owner != NULL) {
            for (r = 0; r < coll->group->size; ++r) {
                if ((r != me) && (phase->owner[r] == me)) {
                    return 1;
                }
            }
        }
    }

    return 0;
}

/* The first phase from @a i on in which this member has a set (and that
 * set and its index there), or num_phases */
static unsigned ucg_coll_my_phase(const ucg_coll_t *coll, unsigned i,
                                  const ucg_phase_set_t **set_p,
                                  unsigned *idx_p)
{
    for (; i < coll->plan->num_phases; ++i) {
        *set_p = ucg_coll_my_set(coll, i, idx_p);
        if (*set_p != NULL) {
            break;
        }
    }
    return i;
}

/*
 * Whether this member of a reduce only contributes its vector to host-local
 * fan-ins (it is no set's root): it then never writes acc, which can be the
 * user's send buffer instead of a copy.
 */
static int ucg_coll_only_contributes(const ucg_coll_t *coll)
{
    const ucg_phase_set_t *set;
    unsigned i, idx;

    for (i = ucg_coll_my_phase(coll, 0, &set, &idx);
         i < coll->plan->num_phases;
         i = ucg_coll_my_phase(coll, i + 1, &set, &idx)) {
        if (!(ucg_phase_table[coll->plan->phases[i].method].flags &
              UCG_PHASE_FLAG_MEMBER_READS_ACC) || (set->root == idx)) {
            return 0;
        }
    }

    return 1;
}

/*
 * Whether the first phase of this member takes its own vector from
 * coll->own at the set root (SM_REDUCE_CMA: it reads a member's vector
 * straight into acc and reduces this member's own into it, instead of a copy
 * into acc first).
 */
static int ucg_coll_root_takes_own(const ucg_coll_t *coll)
{
    const ucg_phase_set_t *set;
    unsigned i, idx;

    i = ucg_coll_my_phase(coll, 0, &set, &idx);
    return (i < coll->plan->num_phases) &&
           (ucg_phase_table[coll->plan->phases[i].method].flags &
            UCG_PHASE_FLAG_ROOT_TAKES_OWN) &&
           (set->root == idx);
}

/*
 * gbuf for a member that only holds its own block: a base such that
 * gbuf + rank * block is @a own (only that block is ever accessed).
 */
static void *ucg_coll_own_block_base(ucg_coll_t *coll, const void *own)
{
    return (void*)((uintptr_t)own - (uintptr_t)coll->group->rank *
                   coll->block);
}

/* gbuf of the block collectives and of rank-ordered (FOLD) reductions */
static ucs_status_t ucg_coll_setup_gbuf(ucg_coll_t *coll, const void *own,
                                        int own_in_place)
{
    size_t size = coll->group->size;
    void *own_slot;

    coll->block = coll->len;
    if (!ucg_coll_holds_other_blocks(coll)) {
        coll->gbuf = ucg_coll_own_block_base(coll, own);
        return UCS_OK;
    }

    coll->gbuf = ucg_coll_scratch(coll, 1, size * coll->block);
    if (coll->gbuf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    own_slot = UCS_PTR_BYTE_OFFSET(coll->gbuf,
                                   coll->group->rank * coll->block);
    if (!own_in_place || (own != own_slot)) {
        memcpy(own_slot, own, coll->block);
    }
    return UCS_OK;
}

ucs_status_t ucg_coll_setup_buffers(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    unsigned me                     = coll->group->rank;
    int is_root                     = (params->root == me);
    size_t size                     = coll->group->size;
    const void *src;

    coll->data     = NULL;
    coll->data_len = 0;
    coll->acc      = NULL;
    coll->own      = NULL;
    coll->gbuf     = NULL;
    coll->block    = coll->len;

    switch (params->type) {
    case UCG_COLL_BARRIER:
        return UCS_OK;
    case UCG_COLL_BCAST:
        coll->data     = params->rbuf;
        coll->data_len = coll->len;
        return UCS_OK;
    case UCG_COLL_REDUCE:
    case UCG_COLL_ALLREDUCE:
        src = (params->sbuf == UCG_IN_PLACE) ? params->rbuf : params->sbuf;
        if ((params->type == UCG_COLL_ALLREDUCE) || is_root) {
            coll->acc = params->rbuf;
        } else if (ucg_op_is_commutative(&coll->op) &&
                   ucg_coll_only_contributes(coll)) {
            coll->acc = (void*)src; /* only read: see above */
        } else {
            coll->acc = ucg_coll_scratch(coll, 0, coll->len);
            if (coll->acc == NULL) {
                return UCS_ERR_NO_MEMORY;
            }
        }
        coll->data     = coll->acc;
        coll->data_len = coll->len;
        if (!ucg_op_is_commutative(&coll->op) && (size > 1)) {
            /* Rank-ordered: gather every member's vector, then FOLD */
            return ucg_coll_setup_gbuf(coll, src, 0);
        }
        if (src == coll->acc) {
            return UCS_OK;
        } else if ((params->type == UCG_COLL_REDUCE) &&
                   ucg_coll_root_takes_own(coll)) {
            coll->own = src;
            return UCS_OK;
        }
        memcpy(coll->acc, src, coll->len);
        return UCS_OK;
    case UCG_COLL_GATHER:
        if (is_root) {
            coll->gbuf = params->rbuf;
            if (params->sbuf != UCG_IN_PLACE) {
                memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, me * coll->len),
                       params->sbuf, coll->len);
            }
            return UCS_OK;
        }
        return ucg_coll_setup_gbuf(coll, params->sbuf, 0);
    case UCG_COLL_SCATTER:
        if (is_root) {
            coll->gbuf = (void*)params->sbuf;
            if (params->rbuf != UCG_IN_PLACE) {
                memcpy(params->rbuf,
                       UCS_PTR_BYTE_OFFSET(coll->gbuf, me * coll->len),
                       coll->len);
            }
        } else if (ucg_coll_holds_other_blocks(coll)) {
            coll->gbuf = ucg_coll_scratch(coll, 1, size * coll->len);
            if (coll->gbuf == NULL) {
                return UCS_ERR_NO_MEMORY;
            }
        } else {
            coll->gbuf = ucg_coll_own_block_base(coll, params->rbuf);
        }
        return UCS_OK;
    case UCG_COLL_REDUCE_SCATTER:
    case UCG_COLL_REDUCE_SCATTER_BLOCK:
        /* The vector, only read (sent, this member's block copied) until
         * every block is in; then the phase folds the result into rbuf */
        src            = (params->sbuf == UCG_IN_PLACE) ? params->rbuf :
                         params->sbuf;
        coll->data     = (void*)src;
        coll->data_len = coll->len;
        coll->acc      = (void*)src;
        if ((size == 1) && (src != params->rbuf)) {
            memcpy(params->rbuf, src, coll->len); /* no phase: its block */
        }
        return UCS_OK;
    case UCG_COLL_SCAN:
    case UCG_COLL_EXSCAN:
        /* acc: this member's partial prefix, sent on; scan's is its
         * result, exscan's is not (member 0's rbuf is not written) */
        src = (params->sbuf == UCG_IN_PLACE) ? params->rbuf : params->sbuf;
        if (params->type == UCG_COLL_SCAN) {
            coll->acc = params->rbuf;
        } else {
            coll->acc = ucg_coll_scratch(coll, 0, coll->len);
            if (coll->acc == NULL) {
                return UCS_ERR_NO_MEMORY;
            }
        }
        if (src != coll->acc) {
            memcpy(coll->acc, src, coll->len);
        }
        coll->data     = coll->acc;
        coll->data_len = coll->len;
        return UCS_OK;
    case UCG_COLL_GATHERV:
    case UCG_COLL_SCATTERV:
    case UCG_COLL_ALLGATHERV:
        return ucg_coll_vec_setup_buffers(coll);
    case UCG_COLL_ALLGATHER:
        coll->gbuf = params->rbuf;
        if (params->sbuf != UCG_IN_PLACE) {
            memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, me * coll->len),
                   params->sbuf, coll->len);
        }
        coll->data     = coll->gbuf;
        coll->data_len = size * coll->len;
        return UCS_OK;
    case UCG_COLL_ALLTOALL:
    case UCG_COLL_ALLTOALLV:
        return ucg_coll_setup_alltoall(coll);
    default:
        return UCS_ERR_INVALID_PARAM;
    }
}

void ucg_coll_finish_buffers(ucg_coll_t *coll)
{
    const ucg_coll_params_t *params = &coll->params;
    unsigned me                     = coll->group->rank;

    if ((params->type == UCG_COLL_SCATTER) && (params->root != me) &&
        (coll->len > 0) && (coll->gbuf == coll->scratch[1])) {
        /* A leader received its host's blocks in its scratch */
        memcpy(params->rbuf, UCS_PTR_BYTE_OFFSET(coll->gbuf, me * coll->len),
               coll->len);
    }
}
