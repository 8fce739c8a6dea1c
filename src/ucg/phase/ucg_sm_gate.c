/**
 * UCG host-local phases: their endpoints.  Before an SM phase starts, the
 * endpoints it uses on its set (ucg_phase_ops_t::sm_eps) are created and
 * joined, or the phase runs its point-to-point stand-in when a root refused
 * one; at collective starts, the endpoints of a whole plan are admitted
 * against what their roots reserved (ucg_group_sm_admit).
 */
#include "ucg_sm.h"

#include <ucs/debug/log.h>
#include <string.h>


/*
 * Endpoints refused by their root
 * -------------------------------
 * A root that cannot create a group segment (out of memory) lists a
 * refusal, and every member's endpoint ends REFUSED instead of waiting
 * (uct_o2m_ep_state).  An SM phase therefore creates all the endpoints it
 * will use on its set before it sends anything, and waits until each is
 * READY or one is REFUSED; every member of the set sees the same outcome,
 * so either all run the SM phase or all run, on the same set, the
 * point-to-point phase that does the same (ucg_sm_subst): nothing was sent
 * on the refused endpoint, and members outside the set are not involved.
 * The outcome is kept in the plan: later collectives decide at once, the
 * same way (the endpoints are cached for the group's life).
 */

typedef struct ucg_sm_resolve_arg {
    ucg_coll_t         *coll;
    uct_o2m_ep_state_t worst;
} ucg_sm_resolve_arg_t;

/* Each endpoint of this member's set in the current phase, in the order the
 * phase uses them: its state (the worst so far) */
static ucs_status_t ucg_sm_resolve_ep(void *arg, ucg_sm_tl_t tl,
                                      const ucg_phase_set_t *set,
                                      uct_o2m_mode_t mode, uct_o2m_op_t op,
                                      uct_o2m_dtype_t dtype)
{
    ucg_sm_resolve_arg_t *rarg  = arg;
    ucg_coll_t *coll            = rarg->coll;
    uct_o2m_ep_state_t *worst_p = &rarg->worst;
    uct_o2m_ep_state_t state;
    ucs_status_t status;
    uct_ep_h ep;

    status = ucg_group_sm_ep(coll->group, tl, set, mode, op, dtype, &ep);
    if (status != UCS_OK) {
        return status;
    }

    state = uct_o2m_ep_state(ep, &status);
    if (state == UCT_O2M_EP_STATE_REFUSED) {
        *worst_p = state;
    } else if (state == UCT_O2M_EP_STATE_FAILED) {
        return status;
    } else if ((state == UCT_O2M_EP_STATE_JOINING) &&
               (*worst_p == UCT_O2M_EP_STATE_READY)) {
        *worst_p = state;
    }
    return UCS_OK;
}

/* UCS_OK when every endpoint of the phase is READY or one was refused
 * (*refused_p set), UCS_INPROGRESS while one is joining, or the error of a
 * failed one */
static ucs_status_t ucg_sm_resolve(ucg_coll_t *coll, int *refused_p)
{
    ucg_sm_resolve_arg_t rarg;
    ucs_status_t status;

    rarg.coll  = coll;
    rarg.worst = UCT_O2M_EP_STATE_READY;
    status     = ucg_coll_phase_ops(coll)->sm_eps(coll, coll->phase,
                                                  coll->set,
                                                  ucg_sm_resolve_ep, &rarg);
    *refused_p = (rarg.worst == UCT_O2M_EP_STATE_REFUSED);
    if (status != UCS_OK) {
        return status;
    }

    return (rarg.worst == UCT_O2M_EP_STATE_JOINING) ? UCS_INPROGRESS : UCS_OK;
}

/*
 * Run the current SM phase as the point-to-point phase that does the same on
 * the same set (see ucg_plan.h), with linear trees (radix = set size): a
 * member that only contributes then only sends (its acc may be the user's
 * send buffer), and every member only talks to the set root.
 */
static ucs_status_t ucg_sm_subst(ucg_coll_t *coll)
{
    const ucg_phase_ops_t *ops = ucg_coll_phase_ops(coll);
    ucg_phase_t *subst         = &coll->sm_subst;

    *subst           = *coll->phase;
    subst->owner     = NULL; /* every set member holds its own block */
    subst->frag_size = 0;
    subst->radix     = ucs_max(coll->set->count, 2);
    if (coll->params.type == UCG_COLL_BARRIER) {
        subst->method = UCG_PHASE_P2P_BARRIER;
    } else if ((coll->params.type == UCG_COLL_SCATTER) &&
               (ops->flags & UCG_PHASE_FLAG_SCATTERS_BLOCKS)) {
        subst->method = UCG_PHASE_P2P_SCATTER;
    } else {
        subst->method = ops->standin;
    }

    if (coll->own != NULL) {
        /* The root's own vector was left for this phase (it is the first
         * of this member, UCG_PHASE_FLAG_ROOT_TAKES_OWN): into acc */
        memcpy(coll->acc, coll->own, coll->len);
        coll->own = NULL;
    }

    ucs_debug("ucg group %u %s seq %u phase %u: a host-local endpoint was "
              "refused by its root: %s on the set of %u", coll->group->id,
              ucg_coll_name(coll->params.type), coll->seq, coll->phase_idx,
              ucg_phase_method_names[subst->method], coll->set->count);
    memset(&coll->ps, 0, sizeof(coll->ps));
    coll->phase = subst;
    return ucg_coll_phase_ops(coll)->start(coll);
}

/* Resolve the endpoints of the phase; start it, or its stand-in, once
 * they are */
static ucs_status_t ucg_sm_gate(ucg_coll_t *coll)
{
    uint8_t *known = &((ucg_plan_t*)coll->plan)->sm_eps[coll->phase_idx];
    ucs_status_t status;
    int refused;

    if (*known == UCG_SM_EPS_REFUSED) {
        return ucg_sm_subst(coll);
    }

    if (*known != UCG_SM_EPS_READY) {
        /* A refusal decides even while another endpoint fails or joins:
         * every member of the set sees it */
        status = ucg_sm_resolve(coll, &refused);
        if (refused) {
            *known = UCG_SM_EPS_REFUSED;
            return ucg_sm_subst(coll);
        } else if (status != UCS_OK) {
            return status;
        }
        *known = UCG_SM_EPS_READY;
    }

    coll->ps.sm.open = 1;
    return ucg_coll_phase_ops(coll)->start(coll);
}

ucs_status_t ucg_sm_gate_start(ucg_coll_t *coll)
{
    return ucg_sm_gate(coll);
}

ucs_status_t ucg_sm_gate_progress(ucg_coll_t *coll)
{
    ucs_status_t status;

    if (!coll->ps.sm.open) {
        status = ucg_sm_gate(coll);
        if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
            return status;
        }

        if (!coll->ps.sm.open && (coll->phase != &coll->sm_subst)) {
            return UCS_INPROGRESS;
        }
    }

    /* the phase, or its stand-in */
    return ucg_coll_phase_ops(coll)->progress(coll);
}


/* ------------------------------------------------------------------------ */
/* Admission of a plan's endpoints                                          */
/* ------------------------------------------------------------------------ */

typedef struct ucg_sm_slots_arg {
    const ucg_topo_t *topo;
    ucg_sm_slot_t    *slots;     /* NULL: only count */
    unsigned         count;
} ucg_sm_slots_arg_t;

/* The host-local endpoint @a tl of @a set, as the endpoint cache of
 * ucg_group_sm_ep() keys it */
static void ucg_sm_slot_add(ucg_sm_slots_arg_t *sarg, ucg_sm_tl_t tl,
                            const ucg_phase_set_t *set, uct_o2m_mode_t mode,
                            uct_o2m_op_t op, uct_o2m_dtype_t dtype)
{
    ucg_sm_slot_t *slot = &sarg->slots[sarg->count++];

    if (tl == UCG_SM_BCAST) {
        op = UCT_O2M_OP_GATHER;
    }
    slot->tl      = tl;
    slot->root    = set->ranks[set->root];
    slot->set_key = ucg_group_sm_set_key(sarg->topo, set);
    slot->count   = set->count;
    slot->mode    = mode;
    slot->op      = op;
    slot->dtype   = (op == UCT_O2M_OP_GATHER) ? UCT_O2M_DT_INT8 : dtype;
}

static ucs_status_t ucg_sm_slot_cb(void *arg, ucg_sm_tl_t tl,
                                   const ucg_phase_set_t *set,
                                   uct_o2m_mode_t mode, uct_o2m_op_t op,
                                   uct_o2m_dtype_t dtype)
{
    ucg_sm_slots_arg_t *sarg = arg;

    if (sarg->slots == NULL) {
        ++sarg->count;
    } else {
        ucg_sm_slot_add(sarg, tl, set, mode, op, dtype);
    }
    return UCS_OK;
}

/* Endpoints the phases of @a coll's plan create, on every host; with
 * @a slots NULL, only counts them */
static unsigned ucg_sm_plan_slots(const ucg_coll_t *coll, ucg_sm_slot_t *slots)
{
    ucg_sm_slots_arg_t sarg = {&coll->group->topo, slots, 0};
    const ucg_phase_ops_t *ops;
    const ucg_phase_t *phase;
    unsigned i, s;

    for (i = 0; i < coll->plan->num_phases; ++i) {
        phase = &coll->plan->phases[i];
        ops   = &ucg_phase_table[phase->method];
        if (ops->sm_eps == NULL) {
            continue;
        }
        for (s = 0; s < phase->num_sets; ++s) {
            ops->sm_eps(coll, phase, &phase->sets[s], ucg_sm_slot_cb, &sarg);
        }
    }

    return sarg.count;
}

int ucg_sm_admit(ucg_coll_t *coll)
{
    ucg_sm_slot_t *slots;
    unsigned count;
    int admitted;

    count = ucg_sm_plan_slots(coll, NULL);
    if (count == 0) {
        return 1;
    }

    slots = ucs_malloc(count * sizeof(*slots), "ucg sm slots");
    if (slots == NULL) {
        ucs_error("ucg: out of memory for %u endpoint slots", count);
        return 0;
    }

    ucg_sm_plan_slots(coll, slots);
    admitted = ucg_group_sm_admit(coll->group, slots, count);
    ucs_free(slots);
    return admitted;
}
