/**
 * UCG executor: collective requests and the phase machine (the
 * point-to-point primitives the phase algorithms use: ucg_p2p_ucp.c).
 *
 * A collective is a plan (ucg_plan.h) run phase by phase.  A member that is
 * in no set of a phase skips it.  Phases post nonblocking operations and are
 * advanced from ucg_progress(), so any number of collectives (on different
 * groups, or started one after another on one group) progress together.
 */
#include "ucg_coll.h"

#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#include <math.h>
#include <string.h>

/* Scratch bytes (per buffer) a group's spare collective keeps */
#define UCG_COLL_SPARE_SCRATCH_MAX (64 * 1024)

/* Sequence numbers at most this far after a collective's are later ones */
#define UCG_COLL_SEQ_HALF 0x8000

/* Progress calls between two reads of the clock for members' liveness */
#define UCG_COLL_CHECK_SKIP 64


static const ucg_phase_ops_t *ucg_coll_phase_ops(ucg_phase_method_t method)
{
    if (ucg_sm_phase_ops[method].start != NULL) {
        return &ucg_sm_phase_ops[method];
    }
    return &ucg_p2p_phase_ops[method];
}

/* ------------------------------------------------------------------------ */
/* Scratch buffers                                                          */
/* ------------------------------------------------------------------------ */

void *ucg_coll_scratch(ucg_coll_t *coll, unsigned idx, size_t size)
{
    void *buf;

    ucs_assert(idx < UCG_COLL_MAX_SCRATCH);
    if (coll->scratch_len[idx] >= size) {
        return coll->scratch[idx];
    }

    buf = ucs_malloc(ucs_max(size, 1), "ucg scratch");
    if (buf == NULL) {
        ucs_error("ucg: out of memory for a scratch buffer of %zu bytes",
                  size);
        return NULL;
    }

    ucs_free(coll->scratch[idx]);
    coll->scratch[idx]     = buf;
    coll->scratch_len[idx] = size;
    return buf;
}


/* ------------------------------------------------------------------------ */
/* Abort: a member that cannot run a collective tells the others            */
/* ------------------------------------------------------------------------ */

/*
 * A collective that fails on one member only (out of memory at its start,
 * a send UCP refused, a start on a group that failed here) would leave the
 * other members waiting for it.  That member sends every other member an
 * abort message (a tagged message with a tag no collective uses, found by
 * a probe at the liveness checks of a group with started collectives:
 * nothing is posted on the way of the collectives), and on every member
 * the collectives of the group from that one on fail: what the members of
 * the failed collective had already sent (a fan-in slot filled by some
 * members only, messages nobody will receive) would be taken by a later
 * collective.  Earlier collectives (nonblocking, still running) are not
 * affected.  A member whose collectives fail by an abort message sends
 * none for them; one whose collective failed here sends one at each later
 * start too, for members that completed the failed collective without it
 * (a bcast leaf) before its first abort reached them.
 */
typedef struct ucg_coll_abort_msg {
    uint32_t epoch;    /* of the group (its id and the seq: in the tag) */
    uint32_t rank;     /* the sender's rank in the group */
    int32_t  status;   /* its error, for the log line */
} UCS_S_PACKED ucg_coll_abort_msg_t;

/* Tag of the abort of collective @a seq of group @a id: phase, step and
 * source all ones (no plan has 16 phases: UCG_PLAN_MAX_PHASES) */
static ucp_tag_t ucg_coll_abort_tag(uint16_t id, uint16_t seq)
{
    UCS_STATIC_ASSERT(UCG_PLAN_MAX_PHASES < 16);
    return ((uint64_t)id << 48) | ((uint64_t)seq << 32) |
           UCS_MASK(UCG_TAG_SRC_BITS + UCG_TAG_STEP_BITS + 4);
}

/* Whether the collective @a seq of @a group is at or after an abort */
static int ucg_coll_seq_aborted(const ucg_group_t *group, uint16_t seq)
{
    return group->aborted &&
           ((uint16_t)(seq - group->abort_seq) < UCG_COLL_SEQ_HALF);
}

/* Collectives from @a seq on fail (or from an earlier one already) */
static void ucg_coll_abort_from(ucg_group_h group, uint16_t seq, int local)
{
    if (!group->aborted ||
        ((uint16_t)(seq - group->abort_seq) >= UCG_COLL_SEQ_HALF)) {
        group->aborted     = 1;
        group->abort_seq   = seq;
        group->abort_local = local;
    }
}

static void ucg_coll_abort_sent(void *request, ucs_status_t status,
                                void *user_data)
{
    ucs_free(user_data);
    ucp_request_free(request);
}

/* The collective @a seq failed here (@a reason), or was not run: tell the
 * members of @a group (but those that exited); from it on, collectives of
 * the group fail here too */
static void ucg_coll_abort_send(ucg_group_h group, uint16_t seq,
                                ucs_status_t reason)
{
    ucp_request_param_t param;
    ucg_coll_abort_msg_t *msg;
    ucs_status_ptr_t req;
    unsigned r;
    ucp_ep_h ep;

    ucg_coll_abort_from(group, seq, 1);
    for (r = 0; r < group->size; ++r) {
        if ((r == group->rank) || ucg_group_member_exited(group, r) ||
            (ucg_group_p2p_ep(group, r, &ep) != UCS_OK)) {
            continue;
        }

        msg = ucs_malloc(sizeof(*msg), "ucg abort");
        if (msg == NULL) {
            ucs_error("ucg group %u: out of memory for the abort of seq %u; "
                      "members may wait for this one", group->id, seq);
            return;
        }
        msg->epoch  = group->epoch;
        msg->rank   = group->rank;
        msg->status = reason;

        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send      = ucg_coll_abort_sent;
        param.user_data    = msg;
        req = ucp_tag_send_nbx(ep, msg, sizeof(*msg),
                               ucg_coll_abort_tag(group->id, seq), &param);
        if (UCS_PTR_IS_ERR(req)) {
            ucs_diag("ucg group %u: abort of seq %u to rank %u: %s",
                     group->id, seq, r,
                     ucs_status_string(UCS_PTR_STATUS(req)));
            ucs_free(msg);
        } else if (req == NULL) {
            ucs_free(msg);
        } /* else ucg_coll_abort_sent releases both */
    }
}

/* Take the abort messages UCP has for @a group (any seq, any sender) */
static void ucg_coll_abort_probe(ucg_group_h group)
{
    ucp_worker_h worker     = group->context->ucp_worker;
    const ucp_tag_t mask    = ~((ucp_tag_t)UCS_MASK(16) << 32);
    ucp_request_param_t param;
    ucg_coll_abort_msg_t msg;
    ucp_tag_recv_info_t info;
    ucp_tag_message_h probe;
    ucs_status_ptr_t req;
    ucs_status_t status;
    uint16_t seq;

    for (;;) {
        probe = ucp_tag_probe_nb(worker, ucg_coll_abort_tag(group->id, 0),
                                 mask, 1, &info);
        if (probe == NULL) {
            return;
        }

        memset(&param, 0, sizeof(param));
        memset(&msg, 0, sizeof(msg));
        req = ucp_tag_msg_recv_nbx(worker, &msg, sizeof(msg), probe, &param);
        if (UCS_PTR_IS_PTR(req)) {
            /* an eager message of a few bytes: complete or about to be */
            do {
                ucp_worker_progress(worker);
                status = ucp_request_check_status(req);
            } while (status == UCS_INPROGRESS);
            ucp_request_free(req);
        } else {
            status = UCS_PTR_STATUS(req);
        }

        seq = (uint16_t)(info.sender_tag >> 32);
        if ((status != UCS_OK) || (info.length != sizeof(msg))) {
            ucs_error("ucg group %u: dropping an abort message of %zu "
                      "bytes (expected %zu): %s", group->id, info.length,
                      sizeof(msg), ucs_status_string(status));
            continue;
        }

        /* one of an earlier group with this id, or from nobody */
        if ((msg.epoch != group->epoch) || (msg.rank >= group->size) ||
            (msg.rank == group->rank)) {
            ucs_debug("ucg group %u: dropping an abort of epoch %u rank %u",
                      group->id, msg.epoch, msg.rank);
            continue;
        }

        if (!group->aborted) {
            ucs_error("UCG group %u rank %u: rank %u could not run "
                      "collective seq %u (%s): it and the later ones fail",
                      group->id, group->rank, msg.rank, seq,
                      ucs_status_string((ucs_status_t)msg.status));
        }
        ucg_coll_abort_from(group, seq, 0);
    }
}

void ucg_group_abort_next(ucg_group_h group, ucs_status_t reason)
{
    uint16_t seq = group->next_seq++;

    ucs_diag("ucg group %u rank %u: seq %u is not run here (%s); the other "
             "members are told", group->id, group->rank, seq,
             ucs_status_string(reason));
    ucg_coll_abort_send(group, seq, reason);
}


/* ------------------------------------------------------------------------ */
/* Parameters                                                               */
/* ------------------------------------------------------------------------ */

static ucs_status_t ucg_coll_check_params(ucg_group_h group,
                                          const ucg_coll_params_t *params,
                                          ucg_coll_t *coll)
{
    int is_root = ucg_coll_type_is_rooted(params->type) &&
                  (params->root == group->rank);
    ucs_status_t status;
    size_t len;

    if (params->type >= UCG_COLL_LAST) {
        ucs_error("ucg: invalid collective type %d", params->type);
        return UCS_ERR_INVALID_PARAM;
    }

    if (ucg_coll_type_is_rooted(params->type) && (params->root >= group->size)) {
        ucs_error("ucg %s: root %u is not a rank of a group of %u",
                  ucg_coll_name(params->type), params->root, group->size);
        return UCS_ERR_INVALID_PARAM;
    }

    if (params->type == UCG_COLL_BARRIER) {
        coll->dt_size = 1;
        coll->len     = 0;
        return UCS_OK;
    }

    if (ucg_coll_type_is_reduction(params->type)) {
        status = ucg_op_desc_init(&coll->op, params->op, params->dtype,
                                  params->dt_size, &params->user_op);
        if (status != UCS_OK) {
            return status;
        }
        coll->dt_size = coll->op.dt_size;
    } else if (params->dtype == UCG_DT_BYTES) {
        if (params->dt_size == 0) {
            ucs_error("ucg %s: UCG_DT_BYTES with dt_size 0",
                      ucg_coll_name(params->type));
            return UCS_ERR_INVALID_PARAM;
        }
        coll->dt_size = params->dt_size;
    } else {
        coll->dt_size = ucg_dtype_size(params->dtype);
        if (coll->dt_size == 0) {
            ucs_error("ucg %s: invalid datatype %d",
                      ucg_coll_name(params->type), params->dtype);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    if ((params->count > SIZE_MAX / coll->dt_size / group->size)) {
        ucs_error("ucg %s: %zu elements of %zu bytes overflow",
                  ucg_coll_name(params->type), params->count, coll->dt_size);
        return UCS_ERR_INVALID_PARAM;
    }
    len       = params->count * coll->dt_size;
    coll->len = len;

    /* In-place markers where MPI allows them */
    if ((params->rbuf == UCG_IN_PLACE) &&
        !((params->type == UCG_COLL_SCATTER) && is_root)) {
        ucs_error("ucg %s: UCG_IN_PLACE as receive buffer is only valid for "
                  "scatter at the root", ucg_coll_name(params->type));
        return UCS_ERR_INVALID_PARAM;
    }
    if ((params->sbuf == UCG_IN_PLACE) &&
        !((params->type == UCG_COLL_ALLREDUCE) ||
          (params->type == UCG_COLL_ALLGATHER) ||
          (((params->type == UCG_COLL_REDUCE) ||
            (params->type == UCG_COLL_GATHER)) && is_root))) {
        ucs_error("ucg %s: UCG_IN_PLACE as send buffer is not valid here%s",
                  ucg_coll_name(params->type),
                  ucg_coll_type_is_rooted(params->type) ? " (root only)" : "");
        return UCS_ERR_INVALID_PARAM;
    }

    if (len == 0) {
        return UCS_OK;
    }

    /* Buffers that must be there */
    switch (params->type) {
    case UCG_COLL_BCAST:
        if (params->rbuf == NULL) {
            goto err_null;
        }
        break;
    case UCG_COLL_REDUCE:
    case UCG_COLL_GATHER:
        if ((params->sbuf == NULL) || (is_root && (params->rbuf == NULL))) {
            goto err_null;
        }
        break;
    case UCG_COLL_SCATTER:
        if ((params->rbuf == NULL) || (is_root && (params->sbuf == NULL))) {
            goto err_null;
        }
        break;
    default:
        if ((params->sbuf == NULL) || (params->rbuf == NULL)) {
            goto err_null;
        }
        break;
    }
    return UCS_OK;

err_null:
    ucs_error("ucg %s: NULL buffer with %zu elements",
              ucg_coll_name(params->type), params->count);
    return UCS_ERR_INVALID_PARAM;
}

/*
 * A zeroed collective: the group's spare one (kept by the last
 * ucg_coll_finalize, with its request array and small scratch buffers) or a
 * new one.  Blocking collectives called in a loop then allocate nothing.
 */
static ucg_coll_t *ucg_coll_alloc(ucg_group_h group)
{
    ucg_coll_t *coll = group->spare_coll;
    void *scratch[UCG_COLL_MAX_SCRATCH];
    size_t scratch_len[UCG_COLL_MAX_SCRATCH];
    unsigned max_reqs;
    void **reqs;

    if (coll == NULL) {
        return ucs_calloc(1, sizeof(*coll), "ucg coll");
    }

    group->spare_coll = NULL;
    memcpy(scratch, coll->scratch, sizeof(scratch));
    memcpy(scratch_len, coll->scratch_len, sizeof(scratch_len));
    reqs     = coll->reqs;
    max_reqs = coll->max_reqs;

    memset(coll, 0, sizeof(*coll));
    memcpy(coll->scratch, scratch, sizeof(scratch));
    memcpy(coll->scratch_len, scratch_len, sizeof(scratch_len));
    coll->reqs     = reqs;
    coll->max_reqs = max_reqs;
    return coll;
}

static void ucg_coll_free(ucg_coll_t *coll)
{
    unsigned i;

    for (i = 0; i < UCG_COLL_MAX_SCRATCH; ++i) {
        ucs_free(coll->scratch[i]);
    }
    ucs_free(coll->reqs);
    ucs_free(coll);
}

/* Keep @a coll (not in progress) as its group's spare, or free it */
static void ucg_coll_release(ucg_coll_t *coll)
{
    ucg_group_h group = coll->group;
    unsigned i;

    if (group->spare_coll != NULL) {
        ucg_coll_free(coll);
        return;
    }

    /* The spare holds on to little memory: large scratch buffers go */
    for (i = 0; i < UCG_COLL_MAX_SCRATCH; ++i) {
        if (coll->scratch_len[i] > UCG_COLL_SPARE_SCRATCH_MAX) {
            ucs_free(coll->scratch[i]);
            coll->scratch[i]     = NULL;
            coll->scratch_len[i] = 0;
        }
    }
    group->spare_coll = coll;
}

static void ucg_coll_plan_key(const ucg_coll_t *coll, ucg_plan_key_t *key)
{
    const ucg_coll_params_t *params = &coll->params;

    memset(key, 0, sizeof(*key));
    key->type     = params->type;
    key->root     = ucg_coll_type_is_rooted(params->type) ? params->root : 0;
    key->msg_size = coll->len;
    if (ucg_coll_type_is_reduction(params->type)) {
        key->op          = coll->op.op;
        key->dtype       = coll->op.dtype;
        key->dt_size     = coll->dt_size;
        key->commutative = ucg_op_is_commutative(&coll->op);
    } else {
        /* Data movement does not depend on the element type */
        key->op          = UCG_OP_LAST;
        key->dtype       = UCG_DT_UINT8;
        key->dt_size     = 1;
        key->commutative = 1;
    }
}

ucs_status_t ucg_coll_init(ucg_group_h group, const ucg_coll_params_t *params,
                           ucg_coll_h *coll_p)
{
    ucg_plan_key_t key;
    ucs_status_t status;
    ucg_coll_t *coll;

    if ((group == NULL) || (params == NULL) || (coll_p == NULL)) {
        ucs_error("ucg_coll_init: NULL argument");
        return UCS_ERR_INVALID_PARAM;
    }

    coll = ucg_coll_alloc(group);
    if (coll == NULL) {
        ucs_error("ucg: out of memory for a collective");
        return UCS_ERR_NO_MEMORY;
    }

    coll->group  = group;
    coll->params = *params;
    coll->status = UCS_OK;
    status       = ucg_coll_check_params(group, params, coll);
    if (status != UCS_OK) {
        goto err;
    }

    ucg_coll_plan_key(coll, &key);
    status = ucg_group_plan(group, &key, &coll->plan);
    if (status != UCS_OK) {
        goto err;
    }

    *coll_p = coll;
    return UCS_OK;

err:
    ucg_coll_release(coll);
    return status;
}


/* ------------------------------------------------------------------------ */
/* Buffers of an instance                                                   */
/* ------------------------------------------------------------------------ */

/* Whether this member must hold blocks of other ranks in some phase */
static int ucg_coll_holds_other_blocks(const ucg_coll_t *coll)
{
    unsigned me = coll->group->rank;
    const ucg_phase_set_t *set;
    const ucg_phase_t *phase;
    unsigned i, r, idx;

    for (i = 0; i < coll->plan->num_phases; ++i) {
        phase = &coll->plan->phases[i];
        set   = ucg_phase_find_set(phase, me, &idx);
        if (set == NULL) {
            continue;
        }
        if (((phase->method == UCG_PHASE_SM_GATHER) ||
             (phase->method == UCG_PHASE_P2P_GATHER) ||
             (phase->method == UCG_PHASE_P2P_SCATTER) ||
             (phase->method == UCG_PHASE_FOLD)) && (set->root == idx)) {
            return 1;
        }
        if ((phase->method == UCG_PHASE_SM_BCAST) &&
            (coll->params.type == UCG_COLL_SCATTER) && (set->root == idx)) {
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
        *set_p = ucg_phase_find_set(&coll->plan->phases[i], coll->group->rank,
                                    idx_p);
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
    ucg_phase_method_t method;
    unsigned i, idx;

    for (i = ucg_coll_my_phase(coll, 0, &set, &idx);
         i < coll->plan->num_phases;
         i = ucg_coll_my_phase(coll, i + 1, &set, &idx)) {
        method = coll->plan->phases[i].method;
        if (((method != UCG_PHASE_SM_REDUCE) &&
             (method != UCG_PHASE_SM_REDUCE_CMA)) || (set->root == idx)) {
            return 0;
        }
    }

    return 1;
}

/*
 * Whether the first phase of this member is an SM_REDUCE_CMA of which it is
 * the root: that phase reads a member's vector straight into acc and
 * reduces this member's own into it, instead of a copy into acc first.
 */
static int ucg_coll_cma_root_first(const ucg_coll_t *coll)
{
    const ucg_phase_set_t *set;
    unsigned i, idx;

    i = ucg_coll_my_phase(coll, 0, &set, &idx);
    return (i < coll->plan->num_phases) &&
           (coll->plan->phases[i].method == UCG_PHASE_SM_REDUCE_CMA) &&
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

static ucs_status_t ucg_coll_setup_buffers(ucg_coll_t *coll)
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
                   ucg_coll_cma_root_first(coll)) {
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
    case UCG_COLL_ALLGATHER:
        coll->gbuf = params->rbuf;
        if (params->sbuf != UCG_IN_PLACE) {
            memcpy(UCS_PTR_BYTE_OFFSET(coll->gbuf, me * coll->len),
                   params->sbuf, coll->len);
        }
        coll->data     = coll->gbuf;
        coll->data_len = size * coll->len;
        return UCS_OK;
    default:
        return UCS_ERR_INVALID_PARAM;
    }
}

/* Results that the phases leave elsewhere than the user's buffers */
static void ucg_coll_finish_buffers(ucg_coll_t *coll)
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


/* ------------------------------------------------------------------------ */
/* Phase machine                                                            */
/* ------------------------------------------------------------------------ */

static void ucg_coll_complete(ucg_coll_t *coll, ucs_status_t status)
{
    if (status != UCS_OK) {
        /* before the endpoints of its sends may be closed; not when it
         * fails by another member's abort */
        if (!ucg_coll_seq_aborted(coll->group, coll->seq) ||
            coll->group->abort_local) {
            ucg_coll_abort_send(coll->group, coll->seq, status);
        }
        ucg_p2p_cancel_all(coll);
    } else {
        ucg_coll_finish_buffers(coll);
    }

    coll->status = status;
    coll->active = 0;
    ucs_list_del(&coll->list);
}

/* Enter the phases from phase_idx on until one is in progress */
static ucs_status_t ucg_coll_advance(ucg_coll_t *coll)
{
    const ucg_phase_ops_t *ops;
    ucs_status_t status;

    for (;;) {
        if (coll->set != NULL) {
            ops    = ucg_coll_phase_ops(coll->phase->method);
            status = ops->progress(coll);
            if (status == UCS_OK) {
                /* A phase is over when its requests are */
                status = ucg_p2p_test(coll);
            }
            if (status != UCS_OK) {
                return status;
            }
        }

        if (++coll->phase_idx >= coll->plan->num_phases) {
            return UCS_OK;
        }

        coll->phase = &coll->plan->phases[coll->phase_idx];
        coll->set   = ucg_phase_find_set(coll->phase, coll->group->rank,
                                         &coll->my_idx);
        memset(&coll->ps, 0, sizeof(coll->ps));
        if (coll->set == NULL) {
            continue;
        }

        /* start() posts what it can; progress() says when it is over */
        ops    = ucg_coll_phase_ops(coll->phase->method);
        status = ops->start(coll);
        if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
            return status;
        }
    }
}

static void ucg_coll_progress_one(ucg_coll_t *coll)
{
    ucs_status_t status;

    if (ucs_unlikely(coll->group->aborted) &&
        ucg_coll_seq_aborted(coll->group, coll->seq)) {
        ucg_coll_complete(coll, UCS_ERR_CANCELED);
        return;
    }

    status = coll->group->failed;
    if (status == UCS_OK) {
        status = ucg_coll_advance(coll);
        if (status == UCS_INPROGRESS) {
            return;
        }
    }

    ucg_coll_complete(coll, status);
}

/*
 * The host-local endpoints of the plan must fit in what their roots
 * reserved (SM_GROUP_EPS of SM_MAX_GROUPS, agreed at group creation);
 * when they do not, the collective takes the flat plan.  Decided at the
 * start, where collectives are in the same order on every member, from
 * state every member has: every member decides the same.
 */
static ucs_status_t ucg_coll_sm_admit(ucg_coll_t *coll)
{
    ucg_group_h group = coll->group;
    ucg_plan_key_t key;

    if (!coll->plan->hier || coll->plan->sm_admitted) {
        return UCS_OK;
    }

    if (ucg_sm_admit(coll)) {
        /* The plan cache's: admitted for the group's lifetime */
        ((ucg_plan_t*)coll->plan)->sm_admitted = 1;
        return UCS_OK;
    }

    if (!group->sm_denied_logged) {
        ucs_diag("UCG group %u rank %u: %s of %zu bytes needs more host-local "
                 "endpoints or segment memory than the group has "
                 "(SM_GROUP_EPS, SM_MAX_GROUPS, SM_GROUP_MEM): "
                 "point-to-point", group->id, group->rank,
                 ucg_coll_name(coll->params.type), coll->len);
        group->sm_denied_logged = 1;
    }

    ucg_coll_plan_key(coll, &key);
    key.flat = 1;
    return ucg_group_plan(group, &key, &coll->plan);
}

ucs_status_t ucg_coll_start(ucg_coll_h coll)
{
    ucg_group_h group = coll->group;
    ucs_status_t status;
    uint16_t seq;

    if (coll->active) {
        ucs_error("ucg %s: started again before it completed",
                  ucg_coll_name(coll->params.type));
        return UCS_ERR_BUSY;
    }

    if (group->failed != UCS_OK) {
        /* the others (whose group may not have failed) do not wait */
        ucg_coll_abort_send(group, group->next_seq++, group->failed);
        return group->failed;
    }

    if (ucs_unlikely(group->aborted) &&
        ucg_coll_seq_aborted(group, group->next_seq)) {
        seq = group->next_seq++;
        if (group->abort_local) {
            ucg_coll_abort_send(group, seq, UCS_ERR_CANCELED);
        }
        return UCS_ERR_CANCELED;
    }

    group->context->need_ucp = 1; /* until ucg_coll_progress_all knows */
    coll->seq       = group->next_seq++;
    coll->status    = UCS_INPROGRESS;
    coll->active    = 1;
    coll->phase_idx = -1;   /* ucg_coll_advance enters phase 0 */
    coll->phase     = NULL;
    coll->set       = NULL;
    ucs_list_add_tail(&group->colls, &coll->list);

    if ((coll->len == 0) && (coll->params.type != UCG_COLL_BARRIER)) {
        /* Zero bytes everywhere (MPI requires matching signatures) */
        ucg_coll_complete(coll, UCS_OK);
        return UCS_OK;
    }

    status = ucg_coll_sm_admit(coll);
    if (status == UCS_OK) {
        status = ucg_coll_setup_buffers(coll);
    }
    if (status != UCS_OK) {
        /* its sequence number stays taken: the others started it, and
         * ucg_coll_complete tells them it fails */
        ucg_coll_complete(coll, status);
        return status;
    }

    ucg_coll_progress_one(coll);
    return UCS_OK;
}

/* Whether @a coll (started) waits for UCP: it is in a UCP phase or has UCP
 * requests outstanding */
static int ucg_coll_uses_ucp(const ucg_coll_t *coll)
{
    return (coll->num_reqs > 0) || (coll->phase == NULL) ||
           (ucg_sm_phase_ops[coll->phase->method].start == NULL);
}

unsigned ucg_coll_progress_all(ucg_context_h context)
{
    unsigned count = 0;
    int started    = 0;
    int need_ucp   = 0;
    ucg_coll_t *coll, *tmp;
    ucg_group_t *group;

    ucs_list_for_each(group, &context->groups, list) {
        if (ucs_list_is_empty(&group->colls)) {
            continue;
        }

        /* Reading the clock on every call costs more than the check */
        if (group->check_skip > 0) {
            --group->check_skip;
        } else {
            group->check_skip = UCG_COLL_CHECK_SKIP;
            ucg_group_check(group);
            ucg_coll_abort_probe(group);
        }

        if (group->failed != UCS_OK) {
            ucs_list_for_each_safe(coll, tmp, &group->colls, list) {
                ucg_coll_complete(coll, group->failed);
                ++count;
            }
            continue;
        }

        ucs_list_for_each_safe(coll, tmp, &group->colls, list) {
            ucg_coll_progress_one(coll);
            if (coll->active) {
                started   = 1;
                need_ucp |= ucg_coll_uses_ucp(coll);
            } else {
                ++count;
            }
        }
    }

    if (!ucs_list_is_empty(&context->parked)) {
        ucg_coll_parked_progress(context, 0);
        need_ucp = 1;
    }

    /* Read by the next ucg_progress (ucg_coll_start sets it too) */
    context->need_ucp = need_ucp || !started;
    return count;
}

ucs_status_t ucg_coll_test(ucg_coll_h coll)
{
    if (coll->active) {
        ucg_progress(coll->group->context);
    }
    return coll->status;
}

ucs_status_t ucg_coll_wait(ucg_coll_h coll)
{
    ucs_status_t status;

    do {
        status = ucg_coll_test(coll);
    } while (status == UCS_INPROGRESS);

    return status;
}

void ucg_coll_finalize(ucg_coll_h coll)
{
    if (coll == NULL) {
        return;
    }

    if (coll->active) {
        ucs_warn("ucg %s seq %u finalized while in progress: cancelled",
                 ucg_coll_name(coll->params.type), coll->seq);
        ucg_coll_complete(coll, UCS_ERR_CANCELED);
    }

    ucg_coll_release(coll);
}

ucs_status_t ucg_coll_run(ucg_group_h group, const ucg_coll_params_t *params)
{
    ucs_status_t status;
    ucg_coll_h coll;

    status = ucg_coll_init(group, params, &coll);
    if (status != UCS_OK) {
        return status;
    }

    status = ucg_coll_start(coll);
    if (status == UCS_OK) {
        status = ucg_coll_wait(coll);
    }

    ucg_coll_finalize(coll);
    return status;
}

ucs_status_t ucg_bcast(ucg_group_h group, void *buf, size_t count,
                       ucg_dtype_t dtype, unsigned root)
{
    ucg_coll_params_t params = {0};

    params.type  = UCG_COLL_BCAST;
    params.root  = root;
    params.rbuf  = buf;
    params.count = count;
    params.dtype = dtype;
    return ucg_coll_run(group, &params);
}

ucs_status_t ucg_allreduce(ucg_group_h group, const void *sbuf, void *rbuf,
                           size_t count, ucg_dtype_t dtype, ucg_op_t op)
{
    ucg_coll_params_t params = {0};

    params.type  = UCG_COLL_ALLREDUCE;
    params.sbuf  = sbuf;
    params.rbuf  = rbuf;
    params.count = count;
    params.dtype = dtype;
    params.op    = op;
    return ucg_coll_run(group, &params);
}

ucs_status_t ucg_reduce(ucg_group_h group, const void *sbuf, void *rbuf,
                        size_t count, ucg_dtype_t dtype, ucg_op_t op,
                        unsigned root)
{
    ucg_coll_params_t params = {0};

    params.type  = UCG_COLL_REDUCE;
    params.root  = root;
    params.sbuf  = sbuf;
    params.rbuf  = rbuf;
    params.count = count;
    params.dtype = dtype;
    params.op    = op;
    return ucg_coll_run(group, &params);
}

ucs_status_t ucg_barrier(ucg_group_h group)
{
    ucg_coll_params_t params = {0};

    params.type = UCG_COLL_BARRIER;
    return ucg_coll_run(group, &params);
}

ucs_status_t ucg_coll_plan_print(ucg_group_h group,
                                 const ucg_coll_params_t *params,
                                 FILE *stream)
{
    ucs_status_t status;
    ucg_coll_h coll;

    status = ucg_coll_init(group, params, &coll);
    if (status != UCS_OK) {
        return status;
    }

    ucg_plan_print(coll->plan, &group->topo, stream);
    ucg_coll_finalize(coll);
    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* Groups                                                                   */
/* ------------------------------------------------------------------------ */

void ucg_coll_group_init(ucg_group_h group)
{
    ucs_list_head_init(&group->colls);
    ucs_queue_head_init(&group->sm_unexp);
    group->next_seq    = 0;
    group->failed      = UCS_OK;
    group->aborted     = 0;
    group->abort_local = 0;
    group->abort_seq   = 0;
}

void ucg_coll_group_cleanup(ucg_group_h group)
{
    ucg_coll_t *coll, *tmp;
    ucg_sm_unexp_t *msg;

    ucs_list_for_each_safe(coll, tmp, &group->colls, list) {
        ucs_warn("ucg group %u destroyed with %s seq %u in progress",
                 group->id, ucg_coll_name(coll->params.type), coll->seq);
        ucg_coll_complete(coll, UCS_ERR_CANCELED);
    }

    while (!ucs_queue_is_empty(&group->sm_unexp)) {
        msg = ucs_queue_pull_elem_non_empty(&group->sm_unexp, ucg_sm_unexp_t,
                                            queue);
        ucs_debug("ucg group %u: dropping an unmatched message of seq %u",
                  group->id, msg->hdr.seq);
        ucs_free(msg);
    }

    if (group->spare_coll != NULL) {
        ucg_coll_free(group->spare_coll);
        group->spare_coll = NULL;
    }
}
