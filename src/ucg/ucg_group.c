/**
 * ucx-o2m: UCG groups: creation and destruction (the steps are in
 * ucg_group_exchange.c, ucg_group_sm.c and ucg_group_failure.c), the UCP
 * endpoints to the members, the plan cache.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_group_int.h"
#include "ucg_mc.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>


/* Bits of a uid that hold the creator's group counter */
#define UCG_GROUP_UID_CNT_BITS 24

static ucs_status_t ucg_group_check_params(const ucg_group_params_t *params)
{
    if (params == NULL) {
        ucs_error("UCG group: params is NULL");
        return UCS_ERR_INVALID_PARAM;
    }

    if ((params->size < 1) || (params->size > UCG_TAG_MAX_RANKS)) {
        ucs_error("UCG group: size %u is not in 1..%u", params->size,
                  UCG_TAG_MAX_RANKS);
        return UCS_ERR_INVALID_PARAM;
    }

    if (params->rank >= params->size) {
        ucs_error("UCG group: rank %u is not below size %u", params->rank,
                  params->size);
        return UCS_ERR_INVALID_PARAM;
    }

    if (params->oob_allgather == NULL) {
        ucs_error("UCG group: no out-of-band allgather function");
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}


/* Whether every member can use sm_bcast / sm_incast; logs why not */
static int ucg_group_o2m_usable(const ucg_group_t *group,
                                const ucg_group_rec_t *recs,
                                size_t *max_bcopy_p)
{
    const ucg_group_rec_t *mine = &recs[group->rank];
    size_t max_bcopy            = SIZE_MAX;
    ucg_sm_tl_t tl;
    unsigned i;

    for (i = 0; i < group->size; ++i) {
        if (!recs[i].o2m) {
            if (mine->o2m) {
                ucs_diag("UCG group rank %u: rank %u cannot use %s/%s, "
                         "neither does the group", group->rank, i,
                         UCT_O2M_BCAST_TL_NAME, UCT_O2M_INCAST_TL_NAME);
            }
            return 0;
        }

        for (tl = 0; tl < UCG_SM_LAST; ++tl) {
            if ((recs[i].sm_iface_addr_len[tl] !=
                 mine->sm_iface_addr_len[tl]) ||
                (recs[i].sm_dev_addr_len[tl] != mine->sm_dev_addr_len[tl])) {
                ucs_diag("UCG group rank %u: %s addresses of rank %u differ "
                         "in length from ours: not using the o2m transports",
                         group->rank, ucg_sm_tl_name(tl), i);
                return 0;
            }
        }

        max_bcopy = ucs_min(max_bcopy, recs[i].sm_max_bcopy);
    }

    *max_bcopy_p = max_bcopy;
    return 1;
}

/*
 * The configuration the group's plans follow, the same on every member:
 * members that plan differently wait for each other forever (e.g. one
 * multicasts a broadcast the others send point-to-point, with MC_MAX_SIZE
 * set on some of them only).  Every member has the same records, so all
 * take the context's configuration when every member's planner variables
 * hash alike, else all take the defaults (once per context, a warning).
 */
static ucs_status_t ucg_group_agree_config(ucg_group_t *group,
                                           const ucg_group_rec_t *recs)
{
    ucg_context_t *context = group->context;
    ucs_status_t status;
    unsigned i;

    group->config = context->config;
    for (i = 1; i < group->size; ++i) {
        if (recs[i].plan_hash != recs[0].plan_hash) {
            break;
        }
    }
    if (i == group->size) {
        return UCS_OK;
    }

    if (context->plan_defaults == NULL) {
        status = ucg_config_plan_defaults(context->config,
                                          &context->plan_defaults);
        if (status != UCS_OK) {
            return status;
        }
    }
    group->config = context->plan_defaults;

    ucs_log((context->plan_mismatch_warned || (group->rank != 0)) ?
            UCS_LOG_LEVEL_DIAG : UCS_LOG_LEVEL_WARN,
            "UCG group rank %u/%u: the members' planner settings "
            "(%sUCG_* variables) differ between rank 0 and rank %u: every "
            "member plans with the defaults", group->rank, group->size,
            context->config->env_prefix, i);
    if (group->rank == 0) {
        context->plan_mismatch_warned = 1;
    }
    return UCS_OK;
}

/* The multicast transport of the group's broadcasts between hosts, from
 * what every member has (ucg_mc_select), or UCG_MC_TL_LAST; an error fails
 * the group's creation on every member (the id agreement shares it) */
static ucs_status_t ucg_group_mc_select(ucg_group_t *group,
                                        const ucg_group_rec_t *recs)
{
    ucg_mc_avail_t *avail;
    unsigned i;

    group->topo.mc_tl = UCG_MC_TL_LAST;
    if ((group->config->mc == UCS_NO) || (group->topo.num_hosts < 2)) {
        return UCS_OK;
    }

    avail = ucs_malloc(group->size * sizeof(*avail), "ucg mc avail");
    if (avail == NULL) {
        ucs_error("UCG group rank %u: out of memory", group->rank);
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < group->size; ++i) {
        avail[i].tls       = recs[i].mc_tls;
        avail[i].lo_tls    = recs[i].mc_lo_tls;
        avail[i].real_host = group->members[i].real_host;
    }
    group->topo.mc_tl = ucg_mc_select(group->config->mc,
                                      group->topo.num_hosts, avail,
                                      group->size, group->rank);
    group->topo.mc    = (group->topo.mc_tl != UCG_MC_TL_LAST);
    ucs_free(avail);
    return UCS_OK;
}

ucs_status_t ucg_group_create(ucg_context_h context,
                              const ucg_group_params_t *params,
                              ucg_group_h *group_p)
{
    ucg_group_rec_t *recs = NULL;
    void *var             = NULL;
    void *var_send        = NULL;
    ucg_group_rec_t mine;
    size_t stride, sm_max_bcopy;
    ucs_status_t status, local_status;
    uint64_t *labels;
    ucg_group_t *group;
    unsigned i, rank;
    int o2m, oob_ok, topo_ok = 0;

    if ((context == NULL) || (group_p == NULL)) {
        ucs_error("UCG group: context or group_p is NULL");
        return UCS_ERR_INVALID_PARAM;
    }

    status = ucg_group_check_params(params);
    if (status != UCS_OK) {
        return status;
    }

    group = ucs_calloc(1, sizeof(*group), "ucg group");
    if (group == NULL) {
        goto err_no_memory;
    }

    group->context = context;
    group->config  = context->config;
    group->size    = params->size;
    group->rank    = params->rank;
    group->failed  = UCS_OK;
    ucs_list_head_init(&group->sm_eps);
    ucg_plan_cache_init(&group->plans);
    ucs_list_head_init(&group->colls);
    ucs_queue_head_init(&group->sm_unexp);

    group->members = ucs_calloc(params->size, sizeof(*group->members),
                                "ucg members");
    recs           = ucs_malloc(params->size * sizeof(*recs), "ucg records");
    if ((group->members == NULL) || (recs == NULL)) {
        goto err_no_memory;
    }

    /* Round 1: fixed-size records; a local failure is reported, not
     * returned, so that no member waits for us forever.  Send and receive
     * buffers never overlap (the allgather may be MPI's). */
    local_status = ucg_group_pack_local(group, params, &mine, &var);
    if (local_status != UCS_OK) {
        memset(&mine, 0, sizeof(mine));
        mine.status = local_status;
    }

    status = ucg_group_oob(params, &mine, recs, sizeof(*recs));
    if (status != UCS_OK) {
        goto err_free;
    }

    status = ucg_group_any_error(&recs[0].status, sizeof(*recs), group->size,
                                 &rank);
    if (status != UCS_OK) {
        ucs_debug("UCG group rank %u: rank %u failed: %s", group->rank, rank,
                  ucs_status_string(status));
        goto err_free;
    }

    /* Round 2: the addresses, padded to the longest */
    stride = 1;
    for (i = 0; i < group->size; ++i) {
        stride = ucs_max(stride, ucg_group_var_len(&recs[i]));
    }

    group->addr_blob = ucs_calloc(group->size, stride, "ucg address blob");
    var_send         = ucs_calloc(1, stride, "ucg addresses");
    if ((group->addr_blob == NULL) || (var_send == NULL)) {
        goto err_no_memory;
    }

    memcpy(var_send, var, ucg_group_var_len(&mine));
    status = ucg_group_oob(params, var_send, group->addr_blob, stride);
    if (status != UCS_OK) {
        goto err_free;
    }

    /* Two members with one rank, or an allgather that misplaces blocks */
    oob_ok = !memcmp(&recs[group->rank], &mine, sizeof(mine)) &&
             !memcmp(UCS_PTR_BYTE_OFFSET(group->addr_blob,
                                         group->rank * stride),
                     var_send, stride);
    ucs_free(var_send);
    var_send = NULL;

    ucg_group_unpack(group, recs, stride);

    /* Local steps; their status is shared in the id agreement */
    sm_max_bcopy = 0;
    o2m          = ucg_group_o2m_usable(group, recs, &sm_max_bcopy);
    labels       = ucs_malloc(group->size * sizeof(*labels), "ucg labels");
    if (labels != NULL) {
        for (i = 0; i < group->size; ++i) {
            labels[i] = recs[i].host_label;
        }
        local_status = ucg_topo_init(&group->topo, group->size, labels, o2m,
                                     sm_max_bcopy);
        topo_ok      = (local_status == UCS_OK);
        ucs_free(labels);
    } else {
        ucs_error("UCG group: out of memory");
        local_status = UCS_ERR_NO_MEMORY;
    }

    if (!oob_ok) {
        ucs_error("UCG group rank %u/%u: the out-of-band allgather did not "
                  "return this member's data at its rank (ranks not "
                  "unique?)", group->rank, group->size);
        local_status = UCS_ERR_INVALID_PARAM;
    } else if (local_status == UCS_OK) {
        if (o2m && !ucg_group_hosts_are_real(group)) {
            group->topo.o2m = 0;
        }
        local_status = ucg_group_agree_config(group, recs);
        if (local_status == UCS_OK) {
            local_status = ucg_group_mc_select(group, recs);
        }
        if (local_status == UCS_OK) {
            local_status = ucg_group_sm_limits(group, recs);
        }
        if (local_status == UCS_OK) {
            local_status = ucg_group_watch_members(group);
        }
    }

    status = ucg_group_agree_id(group, params, recs, local_status);
    if (status != UCS_OK) {
        goto err_free;
    }

    /* Every member takes rank 0's */
    group->uid = ((uint64_t)recs[0].pid << UCG_GROUP_UID_CNT_BITS) |
                 (recs[0].created_count &
                  UCS_MASK(UCG_GROUP_UID_CNT_BITS));

    /* Higher than the epoch of every earlier group of every member (until
     * 2^24 groups later), so that no member takes a message of an earlier
     * group that had this id for one of this group */
    group->epoch = 0;
    for (i = 0; i < group->size; ++i) {
        group->epoch = ucs_max(group->epoch,
                               recs[i].proposed_epoch &
                               UCS_MASK(UCG_GROUP_EPOCH_BITS));
    }
    context->next_group_epoch = (group->epoch + 1) &
                                UCS_MASK(UCG_GROUP_EPOCH_BITS);

    group->next_check = ucs_get_time();
    ucs_list_add_tail(&context->groups, &group->list);
    ucg_coll_group_init(group);

    ucs_debug("UCG group %u (uid 0x%" PRIx64 "): rank %u of %u, %u hosts, "
              "o2m %d", group->id, group->uid, group->rank, group->size,
              group->topo.num_hosts, group->topo.o2m);

    ucs_free(var);
    ucs_free(recs);
    *group_p = group;
    return UCS_OK;

err_no_memory:
    ucs_error("UCG group: out of memory");
    status = UCS_ERR_NO_MEMORY;
err_free:
    if (group != NULL) {
        ucg_group_sm_cleanup(group);
        if (topo_ok) {
            ucg_topo_cleanup(&group->topo);
        }
        if (group->members != NULL) {
            ucg_group_unwatch_members(group);
        }
        ucs_free(group->addr_blob);
        ucs_free(group->members);
    }
    ucs_free(group);
    ucs_free(var_send);
    ucs_free(var);
    ucs_free(recs);
    return status;
}

void ucg_group_destroy(ucg_group_h group)
{
    if (group == NULL) {
        return;
    }

    ucg_coll_group_cleanup(group);
    /* A member known dead makes the flushes below skip waiting for it; a
     * member that left after the last collective is not a failure to log */
    group->destroying = 1;
    ucg_group_check_now(group);
    ucg_group_destroy_sm_eps(group);
    ucg_mc_group_cleanup(group);
    /* Drop what arrived for the group while flushing */
    ucg_coll_group_cleanup(group);
    ucg_plan_cache_cleanup(&group->plans);
    ucg_group_sm_cleanup(group);
    ucg_group_unwatch_members(group);
    ucg_topo_cleanup(&group->topo);
    ucs_list_del(&group->list);

    ucs_debug("UCG group %u rank %u destroyed", group->id, group->rank);
    ucs_free(group->addr_blob);
    ucs_free(group->members);
    ucs_free(group);
}

unsigned ucg_group_size(ucg_group_h group)
{
    return group->size;
}

unsigned ucg_group_max_ppn(ucg_group_h group)
{
    return group->topo.max_ppn;
}

unsigned ucg_group_rank(ucg_group_h group)
{
    return group->rank;
}

ucs_status_t ucg_group_p2p_ep(ucg_group_h group, unsigned rank,
                              ucp_ep_h *ep_p)
{
    uct_o2m_proc_t proc;
    ucg_member_t *member;
    ucs_status_t status;

    if (rank >= group->size) {
        ucs_error("UCG group %u: no rank %u in a group of %u", group->id,
                  rank, group->size);
        return UCS_ERR_INVALID_PARAM;
    }

    member = &group->members[rank];
    if (member->ep == NULL) {
        /* Another host of the group's topology: real, or virtual (HOSTS),
         * which then behaves as a host of its own */
        proc.pid        = member->pid;
        proc.start_time = member->start_time;
        status = ucg_p2p_conn_get(group->context, member->worker_addr,
                                  member->worker_addr_len,
                                  group->topo.host_of[rank] !=
                                  group->topo.host_of[group->rank],
                                  (member->watch != NULL) ? &proc : NULL,
                                  &member->ep);
        if (status != UCS_OK) {
            ucs_error("UCG group %u rank %u: failed to connect to rank %u: "
                      "%s", group->id, group->rank, rank,
                      ucs_status_string(status));
            member->ep = NULL;
            return status;
        }
    }

    *ep_p = member->ep;
    return UCS_OK;
}

/* LOG_PLANS: the plan, one ucs_info line per line of ucg_plan_print() */
static void ucg_group_log_plan(const ucg_group_t *group,
                               const ucg_plan_t *plan)
{
    char *text = NULL, *line, *saveptr;
    size_t text_len;
    FILE *stream;

    if (!ucs_log_is_enabled(UCS_LOG_LEVEL_INFO)) {
        return;
    }

    stream = open_memstream(&text, &text_len);
    if (stream == NULL) {
        return;
    }

    ucg_plan_print(plan, &group->topo, stream);
    fclose(stream);

    ucs_info("UCG group %u rank %u/%u: new plan for %s of %zu bytes:",
             group->id, group->rank, group->size,
             ucg_coll_name(plan->key.type), plan->key.msg_size);
    for (line = strtok_r(text, "\n", &saveptr); line != NULL;
         line = strtok_r(NULL, "\n", &saveptr)) {
        ucs_info("  %s", line);
    }
    free(text);
}

ucs_status_t ucg_group_plan(ucg_group_h group, const ucg_plan_key_t *key,
                            const ucg_plan_t **plan_p)
{
    ucs_status_t status;
    int created;

    status = ucg_plan_cache_get(&group->plans, group->config, &group->topo,
                                key, plan_p, &created);
    if ((status == UCS_OK) && created &&
        group->context->config->log_plans) {
        ucg_group_log_plan(group, *plan_p);
    }
    return status;
}
