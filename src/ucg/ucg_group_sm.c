/**
 * ucx-o2m: UCG group host-local endpoints: the directory entries reserved
 * at creation and the limits the members agreed on, the admission of the
 * endpoints of a plan (the same decision on every member), the endpoint
 * cache.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_group_int.h"
#include "o2m_mix.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>


/*
 * Directory entries of this member's sm interfaces for the endpoints the
 * group roots here: SM_GROUP_EPS per interface, or as many as the live
 * groups left of SM_MAX_GROUPS.  UCG is the only user of its interfaces,
 * so a reserved entry is free when the endpoint is created.
 */
void ucg_group_sm_reserve(ucg_group_t *group, unsigned size)
{
    ucg_context_t *context     = group->context;
    const ucg_config_t *config = context->config;
    unsigned free_entries;
    ucg_sm_tl_t tl;

    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        free_entries = config->sm_max_groups -
                       ucs_min(config->sm_max_groups,
                               context->sm_reserved[tl]);
        group->sm_reserved[tl]    = (size > 1) ?
                                    ucs_min(config->sm_group_eps,
                                            free_entries) : 0;
        context->sm_reserved[tl] += group->sm_reserved[tl];
    }
}

static void ucg_group_sm_release(ucg_group_t *group)
{
    ucg_sm_tl_t tl;

    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        group->context->sm_reserved[tl] -= group->sm_reserved[tl];
        group->sm_reserved[tl]           = 0;
    }
}

/* What the members reserved, and the largest group every member's
 * interfaces accept (both agreed: every member has every record) */
ucs_status_t ucg_group_sm_limits(ucg_group_t *group,
                                 const ucg_group_rec_t *recs)
{
    unsigned max_members = UINT_MAX;
    ucg_sm_tl_t tl;
    unsigned i;

    group->sm_mem_limit  = SIZE_MAX;
    group->sm_host_bytes = ucs_calloc(group->topo.num_hosts, sizeof(size_t),
                                      "ucg sm host bytes");
    if (group->sm_host_bytes == NULL) {
        ucs_error("UCG group: out of memory");
        return UCS_ERR_NO_MEMORY;
    }

    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        group->sm_budget[tl] = ucs_calloc(group->size, sizeof(unsigned),
                                          "ucg sm budget");
        group->sm_geom[tl]   = ucs_calloc(group->size,
                                          sizeof(*group->sm_geom[tl]),
                                          "ucg sm geometry");
        if ((group->sm_budget[tl] == NULL) || (group->sm_geom[tl] == NULL)) {
            ucs_error("UCG group: out of memory");
            return UCS_ERR_NO_MEMORY;
        }
        for (i = 0; i < group->size; ++i) {
            group->sm_budget[tl][i]           = recs[i].sm_budget[tl];
            group->sm_geom[tl][i].is_incast   = (tl == UCG_SM_INCAST);
            group->sm_geom[tl][i].ring_max    = recs[i].sm_ring_max[tl];
            group->sm_geom[tl][i].fifo_depth  = recs[i].sm_fifo_depth[tl];
            group->sm_geom[tl][i].max_bcopy   = recs[i].sm_seg_bcopy[tl];
        }
    }

    for (i = 0; i < group->size; ++i) {
        group->sm_mem_limit = ucs_min(group->sm_mem_limit,
                                      recs[i].sm_group_mem);
    }

    for (i = 0; i < group->size; ++i) {
        max_members = ucs_min(max_members, recs[i].sm_max_members);
        /* The sm_*_cma phases only where every member can read and be
         * read: the same plans on every member */
        group->topo.sm_cma &= !!recs[i].sm_cma;
    }
    group->topo.sm_max_members = max_members;

    if (!ucg_plan_topo_hier(group->config, &group->topo)) {
        ucg_group_sm_release(group); /* no host-local endpoint, ever */
    }
    return UCS_OK;
}

void ucg_group_sm_cleanup(ucg_group_t *group)
{
    ucg_sm_tl_t tl;

    ucg_group_sm_release(group);
    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        ucs_free(group->sm_budget[tl]);
        ucs_free(group->sm_geom[tl]);
        group->sm_budget[tl] = NULL;
        group->sm_geom[tl]   = NULL;
    }
    ucs_free(group->sm_host_bytes);
    group->sm_host_bytes = NULL;
    ucs_free(group->sm_slots);
    group->sm_slots     = NULL;
    group->num_sm_slots = 0;
    group->max_sm_slots = 0;
}

static int ucg_sm_slot_equal(const ucg_sm_slot_t *a, const ucg_sm_slot_t *b)
{
    return (a->tl == b->tl) && (a->root == b->root) &&
           (a->set_key == b->set_key) && (a->mode == b->mode) &&
           (a->op == b->op) && (a->dtype == b->dtype);
}

static int ucg_group_sm_admitted(const ucg_group_t *group,
                                 const ucg_sm_slot_t *slot)
{
    unsigned i;

    for (i = 0; i < group->num_sm_slots; ++i) {
        if (ucg_sm_slot_equal(&group->sm_slots[i], slot)) {
            return 1;
        }
    }
    return 0;
}

/* Admitted endpoints rooted at @a slot's root on its interface */
static unsigned ucg_group_sm_used(const ucg_group_t *group,
                                  const ucg_sm_slot_t *slot)
{
    unsigned i, used = 0;

    for (i = 0; i < group->num_sm_slots; ++i) {
        used += (group->sm_slots[i].tl == slot->tl) &&
                (group->sm_slots[i].root == slot->root);
    }
    return used;
}

/*
 * Bytes of the segment of the endpoint @a slot: its root's interface
 * geometry (as that member told) for its set (at most the root's host: the
 * count comes from the plan, the bound makes it one), UCG's header on
 * fan-in.  The same on every member.
 */
static size_t ucg_group_sm_slot_bytes(const ucg_group_t *group,
                                      const ucg_sm_slot_t *slot)
{
    uct_o2m_group_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_O2M_GROUP_FIELD_MODE | UCT_O2M_GROUP_FIELD_OP |
                        UCT_O2M_GROUP_FIELD_HDR_LEN;
    params.size       = ucs_min(slot->count,
                                group->topo.host_size[group->topo.host_of[
                                                      slot->root]]);
    params.mode       = slot->mode;
    params.op         = slot->op;
    params.hdr_len    = (slot->tl == UCG_SM_INCAST) ? sizeof(ucg_sm_hdr_t) :
                                                      0;
    return uct_o2m_group_seg_size(&group->sm_geom[slot->tl][slot->root],
                                  &params);
}

/* Whether the new endpoints of @a slots (with their bytes) fit in
 * SM_GROUP_MEM on each host, with those admitted before */
static int ucg_group_sm_mem_fits(const ucg_group_t *group,
                                 const ucg_sm_slot_t *slots, unsigned count)
{
    unsigned i, j, host;
    size_t total;

    for (i = 0; i < count; ++i) {
        host  = group->topo.host_of[slots[i].root];
        total = group->sm_host_bytes[host]; /* within the limit */
        for (j = 0; j < count; ++j) {
            if (group->topo.host_of[slots[j].root] != host) {
                continue;
            }
            /* Sizes from the members' records: no overflow */
            if (slots[j].bytes > group->sm_mem_limit - total) {
                return 0;
            }
            total += slots[j].bytes;
        }
    }
    return 1;
}

int ucg_group_sm_admit(ucg_group_h group, const ucg_sm_slot_t *slots,
                       unsigned count)
{
    unsigned i, j, needed, new_max;
    ucg_sm_slot_t *new_slots, *pending;
    int fits;

    /* All or none: check every new endpoint against its root's budget */
    for (i = 0; i < count; ++i) {
        if ((slots[i].tl >= UCG_SM_LAST) || (slots[i].root >= group->size)) {
            return 0;
        }
        if (ucg_group_sm_admitted(group, &slots[i])) {
            continue;
        }

        needed = 1;
        for (j = 0; j < i; ++j) {
            if (ucg_sm_slot_equal(&slots[j], &slots[i])) {
                break; /* counted with j */
            }
            needed += (slots[j].tl == slots[i].tl) &&
                      (slots[j].root == slots[i].root) &&
                      !ucg_group_sm_admitted(group, &slots[j]);
        }
        if ((j == i) && (ucg_group_sm_used(group, &slots[i]) + needed >
                         group->sm_budget[slots[i].tl][slots[i].root])) {
            return 0;
        }
    }

    /* The segment bytes of the new ones (0: admitted, or counted before) */
    pending = ucs_malloc(count * sizeof(*pending), "ucg sm pending slots");
    if (pending == NULL) {
        ucs_error("UCG group %u: out of memory for %u endpoint slots",
                  group->id, count);
        return 0;
    }
    for (i = 0; i < count; ++i) {
        pending[i]       = slots[i];
        pending[i].bytes = 0;
        if (ucg_group_sm_admitted(group, &slots[i])) {
            continue;
        }
        for (j = 0; (j < i) && !ucg_sm_slot_equal(&slots[j], &slots[i]);
             ++j) {
        }
        if (j == i) {
            pending[i].bytes = ucg_group_sm_slot_bytes(group, &slots[i]);
        }
    }

    fits = ucg_group_sm_mem_fits(group, pending, count);
    if (!fits) {
        ucs_free(pending);
        return 0;
    }

    if (group->num_sm_slots + count > group->max_sm_slots) {
        new_max   = ucs_max(2 * group->max_sm_slots,
                            group->num_sm_slots + count);
        new_slots = ucs_realloc(group->sm_slots, new_max * sizeof(*new_slots),
                                "ucg sm slots");
        if (new_slots == NULL) {
            /* The other members may decide otherwise: no way to agree */
            ucs_error("UCG group %u: out of memory for %u endpoint slots",
                      group->id, new_max);
            ucs_free(pending);
            return 0;
        }
        group->sm_slots     = new_slots;
        group->max_sm_slots = new_max;
    }

    for (i = 0; i < count; ++i) {
        if (pending[i].bytes > 0) {
            group->sm_slots[group->num_sm_slots++] = pending[i];
            group->sm_host_bytes[group->topo.host_of[pending[i].root]] +=
                    pending[i].bytes;
        }
    }

    ucs_free(pending);
    return 1;
}

/*
 * Members may still be reading what we sent (fan-out root), or the root may
 * not have delivered what we contributed (fan-in sender).  Slow is not dead
 * and finished is not failed: each flush waits while the members are alive.
 * It ends on completion, on an error of the endpoint (the transport fails
 * it when a member it waits for has exited, or left before consuming what
 * it waits for), when a member on this host has exited (ucg_group_check),
 * or at the PEER_TIMEOUT deadline when one is set.  The transport keeps a
 * root's group for members that have not joined it yet after the endpoint
 * is destroyed.
 */
void ucg_group_destroy_sm_eps(ucg_group_t *group)
{
    ucg_context_t *context = group->context;
    double timeout         = context->config->peer_timeout;
    ucg_sm_ep_t *sm_ep, *tmp;
    ucs_time_t deadline;
    ucs_status_t status;

    deadline = isfinite(timeout) ?
               (ucs_get_time() + ucs_time_from_sec(timeout)) :
               UCS_TIME_INFINITY;
    ucs_list_for_each_safe(sm_ep, tmp, &group->sm_eps, list) {
        for (;;) {
            status = uct_ep_flush(sm_ep->ep, UCT_FLUSH_FLAG_LOCAL, NULL);
            if ((status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE)) {
                break;
            }

            if (ucg_group_check(group) != UCS_OK) {
                break; /* a member is gone: nobody left to wait for */
            }

            if ((deadline != UCS_TIME_INFINITY) &&
                (ucs_get_time() > deadline)) {
                ucs_diag("UCG group %u rank %u: flush of the %s endpoint "
                         "(root %u) did not complete in PEER_TIMEOUT",
                         group->id, group->rank,
                         ucg_sm_tl_name(sm_ep->tl), sm_ep->root);
                break;
            }
            uct_worker_progress(context->uct_worker);
        }

        if ((status != UCS_OK) && (status != UCS_INPROGRESS) &&
            (status != UCS_ERR_NO_RESOURCE)) {
            ucs_debug("UCG group %u rank %u: flush of the %s endpoint (root "
                      "%u): %s", group->id, group->rank,
                      ucg_sm_tl_name(sm_ep->tl), sm_ep->root,
                      ucs_status_string(status));
        }

        uct_ep_destroy(sm_ep->ep);
        ucs_list_del(&sm_ep->list);
        ucs_free(sm_ep);
    }
}

/*
 * o2m group id of an endpoint: (tl, root, mode, op, dtype) are packed into
 * 36 bits, which, with the group's uid, go through bijections: two endpoints
 * of one UCG group on whole hosts (set key 0) never get the same id, and
 * ids of different UCG groups (different uids) coincide with probability
 * 2^-64.  The set key of a sub-group (a hash of its ranks) goes in before
 * the last bijection: its endpoints differ from the others of the group
 * with the same probability.
 */
static uint64_t ucg_group_sm_id(const ucg_group_t *group, ucg_sm_tl_t tl,
                                unsigned root, uint64_t set_key,
                                uct_o2m_mode_t mode, uct_o2m_op_t op,
                                uct_o2m_dtype_t dtype)
{
    uint64_t info = ((uint64_t)root << 16) | ((uint64_t)tl << 12) |
                    ((uint64_t)mode << 8) | ((uint64_t)op << 4) |
                    (uint64_t)dtype;

    return uct_o2m_mix64(group->uid ^ uct_o2m_mix64(info) ^ set_key);
}

uint64_t ucg_group_sm_set_key(const ucg_topo_t *topo,
                              const ucg_phase_set_t *set)
{
    unsigned root = set->ranks[set->root];
    uint64_t key;
    unsigned i;

    /* The sets of a plan lie within one host: as many as the host has is
     * the whole host */
    if ((root < topo->size) &&
        (set->count == topo->host_size[topo->host_of[root]])) {
        return 0;
    }

    key = uct_o2m_mix64(set->count);
    for (i = 0; i < set->count; ++i) {
        key = uct_o2m_mix64(key ^ set->ranks[i]);
    }
    return key | 1;
}

ucs_status_t ucg_group_sm_ep(ucg_group_h group, ucg_sm_tl_t tl,
                             const ucg_phase_set_t *set, uct_o2m_mode_t mode,
                             uct_o2m_op_t op, uct_o2m_dtype_t dtype,
                             uct_ep_h *ep_p)
{
    ucg_context_t *context = group->context;
    uct_o2m_group_params_t params;
    const ucg_member_t *root, *member;
    unsigned root_rank, host, my_index, i;
    pid_t *member_pids = NULL;
    ucg_sm_ep_t *sm_ep;
    uint64_t set_key;
    ucs_status_t status;

    if (!group->topo.o2m || (context->sm_iface[UCG_SM_BCAST] == NULL)) {
        ucs_error("UCG group %u rank %u: the o2m transports are not used by "
                  "this group", group->id, group->rank);
        return UCS_ERR_UNSUPPORTED;
    }

    if ((tl >= UCG_SM_LAST) || (set == NULL) || (set->count == 0) ||
        (set->root >= set->count) || (set->ranks[set->root] >= group->size) ||
        (mode >= UCT_O2M_MODE_LAST) || (op >= UCT_O2M_OP_LAST) ||
        ((op != UCT_O2M_OP_GATHER) && (dtype >= UCT_O2M_DT_LAST))) {
        ucs_error("UCG group %u rank %u: invalid sm endpoint request",
                  group->id, group->rank);
        return UCS_ERR_INVALID_PARAM;
    }

    /* Normalize what the transport ignores, so that the cache has one
     * endpoint for it */
    if (tl == UCG_SM_BCAST) {
        op = UCT_O2M_OP_GATHER;
    }
    if (op == UCT_O2M_OP_GATHER) {
        dtype = UCT_O2M_DT_INT8;
    }

    root_rank = set->ranks[set->root];
    host      = group->topo.host_of[root_rank];
    set_key   = ucg_group_sm_set_key(&group->topo, set);

    ucs_list_for_each(sm_ep, &group->sm_eps, list) {
        if ((sm_ep->tl == tl) && (sm_ep->host == host) &&
            (sm_ep->root == root_rank) && (sm_ep->set_key == set_key) &&
            (sm_ep->mode == mode) &&
            (sm_ep->op == op) && (sm_ep->dtype == dtype)) {
            /* Every start looks its endpoints up: the ones in use stay
             * first, where the next start finds them at once */
            if (sm_ep->list.prev != &group->sm_eps) {
                ucs_list_del(&sm_ep->list);
                ucs_list_add_head(&group->sm_eps, &sm_ep->list);
            }
            *ep_p = sm_ep->ep;
            return UCS_OK;
        }
    }

    for (my_index = 0; my_index < set->count; ++my_index) {
        if (set->ranks[my_index] == group->rank) {
            break;
        }
    }
    if (my_index == set->count) {
        ucs_error("UCG group %u: rank %u is not in the %s set of root %u",
                  group->id, group->rank, ucg_sm_tl_name(tl), root_rank);
        return UCS_ERR_INVALID_PARAM;
    }

    sm_ep = ucs_malloc(sizeof(*sm_ep), "ucg sm ep");
    if (sm_ep == NULL) {
        ucs_error("UCG group %u rank %u: out of memory", group->id,
                  group->rank);
        return UCS_ERR_NO_MEMORY;
    }

    root = &group->members[root_rank];

    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_O2M_GROUP_FIELD_MODE |
                             UCT_O2M_GROUP_FIELD_ROOT_ADDR;
    params.group_id        = ucg_group_sm_id(group, tl, root_rank, set_key,
                                             mode, op, dtype);
    params.size            = set->count;
    params.my_index        = my_index;
    params.root_index      = set->root;
    params.mode            = mode;
    params.root_iface_addr = root->sm_iface_addr[tl];
    params.root_dev_addr   = root->sm_dev_addr[tl];
    if (tl == UCG_SM_INCAST) {
        params.field_mask |= UCT_O2M_GROUP_FIELD_OP |
                             UCT_O2M_GROUP_FIELD_DTYPE |
                             UCT_O2M_GROUP_FIELD_HDR_LEN;
        params.op          = op;
        params.dtype       = dtype;
        params.hdr_len     = sizeof(ucg_sm_hdr_t);
    }

    /* The root watches the members that have not joined yet: slow ones
     * are waited for, also after the root destroys the endpoint, dead ones
     * fail the group (without them, it could not tell the two apart) */
    if (my_index == set->root) {
        member_pids = ucs_calloc(set->count, sizeof(*member_pids),
                                 "ucg sm member pids");
        if (member_pids != NULL) {
            for (i = 0; i < set->count; ++i) {
                member = &group->members[ucs_min(set->ranks[i],
                                                 group->size - 1)];
                if ((set->ranks[i] < group->size) &&
                    (member->real_host ==
                     group->members[group->rank].real_host)) {
                    member_pids[i] = member->pid;
                }
            }
            params.field_mask  |= UCT_O2M_GROUP_FIELD_MEMBER_PIDS;
            params.member_pids  = member_pids;
        }
    }

    status = uct_o2m_ep_create(context->sm_iface[tl], &params, &sm_ep->ep);
    ucs_free(member_pids);
    if (status != UCS_OK) {
        ucs_error("UCG group %u rank %u: failed to create the %s endpoint "
                  "(o2m group 0x%" PRIx64 ", %u members, root rank %u, mode "
                  "%s, op %s, dtype %s): %s", group->id, group->rank,
                  ucg_sm_tl_name(tl), params.group_id, set->count,
                  root_rank, uct_o2m_mode_name(mode), uct_o2m_op_name(op),
                  uct_o2m_dtype_name(dtype), ucs_status_string(status));
        ucs_free(sm_ep);
        return status;
    }

    sm_ep->tl      = tl;
    sm_ep->host    = host;
    sm_ep->root    = root_rank;
    sm_ep->set_key = set_key;
    sm_ep->mode    = mode;
    sm_ep->op      = op;
    sm_ep->dtype   = dtype;
    ucs_list_add_tail(&group->sm_eps, &sm_ep->list);

    ucs_debug("UCG group %u rank %u: %s endpoint %p, o2m group 0x%" PRIx64
              " (%u of %u, root %u)", group->id, group->rank,
              ucg_sm_tl_name(tl), sm_ep->ep, params.group_id, my_index,
              set->count, set->root);
    *ep_p = sm_ep->ep;
    return UCS_OK;
}
