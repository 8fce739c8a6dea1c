/**
 * UCG executor: collective requests and the phase machine.  The phases are
 * in phase/, each known here only through its row in ucg_phase_table.
 *
 * A collective is a plan (ucg_plan.h) run phase by phase.  A member that is
 * in no set of a phase skips it.  Phases post nonblocking operations and are
 * advanced from ucg_progress(), so any number of collectives (on different
 * groups, or started one after another on one group) progress together.
 */
#include "ucg_coll.h"
#include "phase/ucg_p2p.h"

#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#include <math.h>
#include <string.h>

/* Scratch bytes (per buffer) a group's spare collective keeps */
#define UCG_COLL_SPARE_SCRATCH_MAX (64 * 1024)

/* Progress calls between two reads of the clock for members' liveness */
#define UCG_COLL_CHECK_SKIP 64


void ucg_coll_find_mine(const ucg_coll_t *coll)
{
    /* the plan cache's, written once for its group's member */
    ucg_plan_t *plan = (ucg_plan_t*)coll->plan;
    const ucg_phase_set_t *set;
    unsigned i;

    for (i = 0; i < plan->num_phases; ++i) {
        set = ucg_phase_find_set(&plan->phases[i], coll->group->rank,
                                 &plan->mine[i].idx);
        plan->mine[i].set = (set == NULL) ? -1 :
                            (int)(set - plan->phases[i].sets);
    }
    plan->mine_known = 1;
}

/* Phases with host-local endpoints start once their endpoints are joined
 * (ucg_sm_gate.c) */
static ucs_status_t ucg_coll_phase_start(ucg_coll_t *coll)
{
    const ucg_phase_ops_t *ops = ucg_coll_phase_ops(coll);

    return (ops->sm_eps != NULL) ? ucg_sm_gate_start(coll) : ops->start(coll);
}

static ucs_status_t ucg_coll_phase_progress(ucg_coll_t *coll)
{
    const ucg_phase_ops_t *ops = ucg_coll_phase_ops(coll);

    return (ops->sm_eps != NULL) ? ucg_sm_gate_progress(coll) :
           ops->progress(coll);
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

    if (params->type == UCG_COLL_ALLTOALLV) {
        /* count is ignored: the per-member arrays (ucg_coll_vec.c) */
        coll->len = 0;
        if (params->rbuf == UCG_IN_PLACE) {
            ucs_error("ucg %s: UCG_IN_PLACE as receive buffer is only valid "
                      "for scatter at the root", ucg_coll_name(params->type));
            return UCS_ERR_INVALID_PARAM;
        }
        return ucg_coll_vec_init(coll);
    }

    if ((params->count > SIZE_MAX / coll->dt_size / group->size)) {
        ucs_error("ucg %s: %zu elements of %zu bytes overflow",
                  ucg_coll_name(params->type), params->count, coll->dt_size);
        return UCS_ERR_INVALID_PARAM;
    }
    coll->len = params->count * coll->dt_size;

    /* The per-member counts; a REDUCE_SCATTER*'s len becomes the whole
     * vector's */
    status = ucg_coll_vec_init(coll);
    if ((status != UCS_OK) || ucg_coll_type_is_vblock(params->type)) {
        return status;
    }
    len = coll->len;

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
          (params->type == UCG_COLL_REDUCE_SCATTER) ||
          (params->type == UCG_COLL_REDUCE_SCATTER_BLOCK) ||
          (params->type == UCG_COLL_SCAN) ||
          (params->type == UCG_COLL_EXSCAN) ||
          (params->type == UCG_COLL_ALLTOALL) ||
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
    case UCG_COLL_REDUCE_SCATTER:
    case UCG_COLL_REDUCE_SCATTER_BLOCK:
        /* A member whose block is empty needs no receive buffer */
        if ((params->sbuf == NULL) ||
            (((coll->dblk.len[group->rank] > 0) ||
              (params->sbuf == UCG_IN_PLACE)) && (params->rbuf == NULL))) {
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
    unsigned max_reqs, vec_size;
    size_t *vec_mem;
    void **reqs;

    if (coll == NULL) {
        return ucs_calloc(1, sizeof(*coll), "ucg coll");
    }

    group->spare_coll = NULL;
    memcpy(scratch, coll->scratch, sizeof(scratch));
    memcpy(scratch_len, coll->scratch_len, sizeof(scratch_len));
    reqs      = coll->reqs;
    max_reqs  = coll->max_reqs;
    vec_mem   = coll->vec_mem;
    vec_size  = coll->vec_size;

    memset(coll, 0, sizeof(*coll));
    memcpy(coll->scratch, scratch, sizeof(scratch));
    memcpy(coll->scratch_len, scratch_len, sizeof(scratch_len));
    coll->reqs      = reqs;
    coll->max_reqs  = max_reqs;
    coll->vec_mem   = vec_mem;
    coll->vec_size  = vec_size;
    return coll;
}

static void ucg_coll_free(ucg_coll_t *coll)
{
    unsigned i;

    for (i = 0; i < UCG_COLL_MAX_SCRATCH; ++i) {
        ucs_free(coll->scratch[i]);
    }
    ucs_free(coll->reqs);
    ucs_free(coll->vec_mem);
    ucs_free(coll);
}

/* Keep @a coll (not in progress) as its group's spare, or free it */
static void ucg_coll_release(ucg_coll_t *coll)
{
    ucg_group_h group = coll->group;
    unsigned i;

    ucg_coll_vec_release(coll);
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
    /* The vector collectives' plans do not depend on the counts (see
     * ucg_plan_vblock.c): the same on every member */
    key->msg_size = ucg_coll_type_is_vblock(params->type) ? 0 : coll->len;
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
    key->flat = coll->flat;
}

ucs_status_t ucg_coll_init(ucg_group_h group, const ucg_coll_params_t *params,
                           ucg_coll_h *coll_p)
{
    return ucg_coll_init_plan(group, params, UCG_PLAN_AUTO, coll_p);
}

ucs_status_t ucg_coll_init_plan(ucg_group_h group,
                                const ucg_coll_params_t *params,
                                ucg_plan_choice_t choice, ucg_coll_h *coll_p)
{
    ucg_plan_key_t key;
    ucs_status_t status;
    ucg_coll_t *coll;

    if ((group == NULL) || (params == NULL) || (coll_p == NULL)) {
        ucs_error("ucg_coll_init: NULL argument");
        return UCS_ERR_INVALID_PARAM;
    }
    if ((choice != UCG_PLAN_AUTO) && (choice != UCG_PLAN_FLAT)) {
        ucs_error("ucg_coll_init: invalid plan choice %d", (int)choice);
        return UCS_ERR_INVALID_PARAM;
    }

    coll = ucg_coll_alloc(group);
    if (coll == NULL) {
        ucs_error("ucg: out of memory for a collective");
        return UCS_ERR_NO_MEMORY;
    }

    coll->group  = group;
    coll->params = *params;
    coll->flat   = (choice == UCG_PLAN_FLAT);
    coll->status = UCS_OK;
    status       = ucg_coll_check_params(group, params, coll);
    if (status != UCS_OK) {
        goto err;
    }

    /* Copied into gblk / dblk where they are used: the caller's arrays
     * need not outlive this call, and nothing reads them from here on */
    coll->params.scounts = NULL;
    coll->params.sdispls = NULL;
    coll->params.rcounts = NULL;
    coll->params.rdispls = NULL;

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
/* Phase machine                                                            */
/* ------------------------------------------------------------------------ */

static void ucg_coll_complete(ucg_coll_t *coll, ucs_status_t status)
{
    if (status != UCS_OK) {
        /* before the endpoints of its sends may be closed; not when it
         * fails by another member's abort */
        if (!ucg_coll_seq_aborted(coll->group, coll->seq) ||
            coll->group->abort_local) {
            /* A phase that failed because a member exited (its transport
             * found it first): the line names the member */
            ucg_group_check_now(coll->group);
            ucg_coll_abort_send(coll->group, coll->seq, status);
        }
        ucg_p2p_cancel_all(coll);
    } else {
        ucg_coll_finish_buffers(coll);
    }

    coll->status = status;
    coll->active = 0;
    ucs_list_del(&coll->list);
    ucg_progress_dequeue(&coll->progress);
}

/* Enter the phases from phase_idx on until one is in progress */
static ucs_status_t ucg_coll_advance(ucg_coll_t *coll)
{
    ucs_status_t status;

    for (;;) {
        if (coll->set != NULL) {
            status = ucg_coll_phase_progress(coll);
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
        coll->set   = ucg_coll_my_set(coll, coll->phase_idx, &coll->my_idx);
        memset(&coll->ps, 0, sizeof(coll->ps));
        if (coll->set == NULL) {
            continue;
        }

        /* start() posts what it can; progress() says when it is over */
        status = ucg_coll_phase_start(coll);
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

/* Whether @a coll (started) waits for UCP: it is in a UCP phase or has UCP
 * requests outstanding */
static int ucg_coll_uses_ucp(const ucg_coll_t *coll)
{
    return (coll->num_reqs > 0) || (coll->phase == NULL) ||
           (ucg_coll_phase_ops(coll)->flags & UCG_PHASE_FLAG_UCP);
}

/*
 * After a progress of @a coll (still started): whether it now waits for
 * nothing but the next message of one host-local endpoint, all its sends
 * posted and no UCP request outstanding; then the word that message
 * changes goes to coll->rx_watch, for ucg_coll_test to poll.
 */
static void ucg_coll_rx_watch_update(ucg_coll_t *coll)
{
    uct_ep_h ep;

    coll->rx_watch_on    = 0;
    coll->rx_watch_spins = 0;
    if ((coll->group->context->config->rx_watch_polls == 0) ||
        (coll->set == NULL) ||
        (coll->phase == &coll->sm_subst) || (coll->num_reqs > 0)) {
        return;
    }

    ep = ucg_sm_rx_wait_ep(coll);
    coll->rx_watch_on = (ep != NULL) &&
                        (uct_o2m_ep_rx_watch(ep, &coll->rx_watch) == UCS_OK);
    if (coll->rx_watch_on) {
        coll->rx_watch_iface = ep->iface;
    }
}

/*
 * Progress function of a started collective in its context's queue.  The
 * first collective of a group that a drain comes to checks the group first
 * (once per drain, as often as the group is progressed).
 */
static unsigned ucg_coll_progress_cb(ucg_progress_elem_t *elem)
{
    ucg_coll_t *coll  = ucs_container_of(elem, ucg_coll_t, progress);
    ucg_group_h group = coll->group;
    unsigned gen      = group->context->progress_q.gen;

    if (group->checked_gen != gen) {
        group->checked_gen = gen;
        /* Reading the clock on every call costs more than the check */
        if (group->check_skip > 0) {
            --group->check_skip;
        } else {
            group->check_skip = UCG_COLL_CHECK_SKIP;
            ucg_group_check(group);
            ucg_coll_abort_probe(group);
        }
    }

    if (group->failed != UCS_OK) {
        ucg_coll_complete(coll, group->failed);
        return UCG_PROGRESS_COMPLETED;
    }

    ucg_coll_progress_one(coll);
    if (!coll->active) {
        return UCG_PROGRESS_COMPLETED;
    }

    ucg_coll_rx_watch_update(coll);
    return ucg_coll_uses_ucp(coll) ? UCG_PROGRESS_UCP : 0;
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
        ucg_group_failure_log(group);
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

    coll->seq       = group->next_seq++;
    coll->status    = UCS_INPROGRESS;
    coll->active    = 1;
    coll->phase_idx = -1;   /* ucg_coll_advance enters phase 0 */
    coll->phase     = NULL;
    coll->set       = NULL;
    coll->rx_watch_on = 0;
    ucs_list_add_tail(&group->colls, &coll->list);
    ucg_progress_enqueue(&group->context->progress_q, &coll->progress,
                         ucg_coll_progress_cb);

    if ((coll->len == 0) && (coll->params.type != UCG_COLL_BARRIER) &&
        !ucg_coll_type_is_vblock(coll->params.type) &&
        (coll->params.type != UCG_COLL_ALLTOALLV)) {
        /* Zero bytes everywhere (MPI requires matching signatures; not in
         * the vector collectives, where this member's count is only its
         * own) */
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
    if (coll->active) {
        /* until the next drain, which asks every started collective */
        group->context->need_ucp |= ucg_coll_uses_ucp(coll);
        /* a wait that starts now is on the word from its first poll */
        ucg_coll_rx_watch_update(coll);
    }
    return UCS_OK;
}

ucs_status_t ucg_coll_test(ucg_coll_h coll)
{
    ucg_context_h context;

    if (!coll->active) {
        return coll->status;
    }

    context = coll->group->context;
    if (coll->rx_watch_on) {
        if (!uct_o2m_rx_watch_changed(&coll->rx_watch)) {
            if (++coll->rx_watch_spins < context->config->rx_watch_polls) {
                ++context->rx_watch_skips;
                return UCS_INPROGRESS;
            }
        } else if (!context->need_ucp &&
                   (context->rx_quick < context->config->rx_watch_polls)) {
            /* the message is on the watched endpoint's interface: the
             * rest (about a third of a full progress) can wait */
            ucg_progress_rx(context, coll->rx_watch_iface);
            return coll->status;
        }
    }

    ucg_progress(context);
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

/* Allreduce and reduce (root: reduce's; allreduce has none) */
static ucs_status_t ucg_reduction_run(ucg_group_h group, ucg_coll_type_t type,
                                      const void *sbuf, void *rbuf,
                                      size_t count, ucg_dtype_t dtype,
                                      ucg_op_t op, unsigned root)
{
    ucg_coll_params_t params = {0};

    params.type  = type;
    params.root  = root;
    params.sbuf  = sbuf;
    params.rbuf  = rbuf;
    params.count = count;
    params.dtype = dtype;
    params.op    = op;
    return ucg_coll_run(group, &params);
}

ucs_status_t ucg_allreduce(ucg_group_h group, const void *sbuf, void *rbuf,
                           size_t count, ucg_dtype_t dtype, ucg_op_t op)
{
    return ucg_reduction_run(group, UCG_COLL_ALLREDUCE, sbuf, rbuf, count,
                             dtype, op, 0);
}

ucs_status_t ucg_reduce(ucg_group_h group, const void *sbuf, void *rbuf,
                        size_t count, ucg_dtype_t dtype, ucg_op_t op,
                        unsigned root)
{
    return ucg_reduction_run(group, UCG_COLL_REDUCE, sbuf, rbuf, count, dtype,
                             op, root);
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
    /* The sm receive path, installed once per context */
    group->failed      = ucg_context_sm_set_am_handler(group->context,
                                                       ucg_sm_am_cb);
    group->aborted     = 0;
    group->abort_local = 0;
    group->abort_seq   = 0;
    group->checked_gen = group->context->progress_q.gen;
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
