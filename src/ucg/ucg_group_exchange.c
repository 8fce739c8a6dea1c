/**
 * ucx-o2m: UCG group creation, what the members tell each other over the
 * caller's out-of-band allgather: the fixed records, the variable part
 * (UCP worker and sm interface addresses), the group id agreement.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_group_int.h"
#include "ucg_mc.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>


/* Groups created by this process: with its pid, makes uids unique on the
 * host over time (a pid is reused only after its groups are gone) */
static uint32_t ucg_group_created_count = 0;


/* A member's answer in a round of the group id agreement */
typedef struct ucg_group_id_reply {
    int32_t  status;
    uint32_t distance;         /* to the next id free here; NUM_IDS: none */
} ucg_group_id_reply_t;


ucs_status_t ucg_group_oob(const ucg_group_params_t *params,
                           const void *sbuf, void *rbuf, size_t len)
{
    ucs_status_t status;

    status = params->oob_allgather(params->oob_arg, sbuf, rbuf, len);
    if (status == UCS_ERR_CANCELED) {
        /* the caller stopped the creation (another member failed) */
        ucs_debug("UCG group rank %u/%u: out-of-band allgather cancelled",
                  params->rank, params->size);
    } else if (status != UCS_OK) {
        ucs_error("UCG group rank %u/%u: out-of-band allgather of %zu bytes "
                  "failed: %s", params->rank, params->size, len,
                  ucs_status_string(status));
    }
    return status;
}

/* The first error reported by a member, UCS_OK if none */
ucs_status_t ucg_group_any_error(const int32_t *status, size_t stride,
                                 unsigned size, unsigned *rank_p)
{
    unsigned i;

    for (i = 0; i < size; ++i) {
        if (*(const int32_t*)UCS_PTR_BYTE_OFFSET(status, i * stride) !=
            UCS_OK) {
            *rank_p = i;
            return (ucs_status_t)*(const int32_t*)UCS_PTR_BYTE_OFFSET(
                    status, i * stride);
        }
    }
    return UCS_OK;
}

/* This member's host label: the caller's, the HOSTS layout's, or the real
 * host */
static ucs_status_t ucg_group_host_label(ucg_context_t *context,
                                         const ucg_group_params_t *params,
                                         uint64_t *label_p)
{
    unsigned global_rank;
    ucs_status_t status;
    int is_auto;

    if (params->field_mask & UCG_GROUP_PARAM_FIELD_HOST_ID) {
        *label_p = params->host_id;
        return UCS_OK;
    }

    global_rank = (params->field_mask & UCG_GROUP_PARAM_FIELD_GLOBAL_RANK) ?
                  params->global_rank : params->rank;
    status      = ucg_hosts_label(context->config->hosts, global_rank,
                                  label_p, &is_auto);
    if (status != UCS_OK) {
        return status;
    }

    if (is_auto) {
        *label_p = context->host_id;
    }
    return UCS_OK;
}

/* Fill my record and the variable part (UCP worker address, then the
 * interface and device addresses of sm_bcast and sm_incast) */
ucs_status_t ucg_group_pack_local(ucg_group_t *group,
                                  const ucg_group_params_t *params,
                                  ucg_group_rec_t *rec, void **var_p)
{
    ucg_context_t *context = group->context;
    uct_iface_attr_t attr;
    uct_o2m_proc_t self;
    ucp_address_t *worker_addr;
    size_t worker_addr_len, var_len;
    ucs_status_t status;
    ucg_sm_tl_t tl;
    void *var, *p;

    memset(rec, 0, sizeof(*rec));
    rec->real_host   = context->host_id;
    uct_o2m_proc_self(&self);
    rec->pid         = self.pid;
    rec->start_time  = self.start_time;
    rec->proposed_id = context->next_group_id;
    rec->proposed_epoch = context->next_group_epoch;
    rec->o2m         = context->o2m;
    rec->plan_hash   = context->plan_hash;
    ucg_mc_local_tls(context, &rec->mc_tls, &rec->mc_lo_tls);
    rec->created_count = __atomic_fetch_add(&ucg_group_created_count, 1,
                                            __ATOMIC_RELAXED);

    status = ucg_group_host_label(context, params, &rec->host_label);
    if (status != UCS_OK) {
        return status;
    }

    if (context->o2m) {
        rec->sm_max_bcopy   = context->sm_max_bcopy;
        rec->sm_max_members = context->sm_max_members;
        rec->sm_cma         = context->sm_cma;
        ucg_group_sm_reserve(group, params->size);
        rec->sm_group_mem   = context->config->sm_group_mem;
        for (tl = 0; tl < UCG_SM_LAST; ++tl) {
            rec->sm_budget[tl]     = group->sm_reserved[tl];
            rec->sm_ring_max[tl]   = context->sm_attr[tl].ring_max;
            rec->sm_fifo_depth[tl] = context->sm_attr[tl].fifo_depth;
            rec->sm_seg_bcopy[tl]  = context->sm_attr[tl].max_bcopy;
        }
        for (tl = 0; tl < UCG_SM_LAST; ++tl) {
            status = uct_iface_query(context->sm_iface[tl], &attr);
            if (status != UCS_OK) {
                ucs_error("UCG group: failed to query %s: %s",
                          ucg_sm_tl_name(tl), ucs_status_string(status));
                return status;
            }
            rec->sm_iface_addr_len[tl] = attr.iface_addr_len;
            rec->sm_dev_addr_len[tl]   = attr.device_addr_len;
        }
    }

    status = ucp_worker_get_address(context->ucp_worker, &worker_addr,
                                    &worker_addr_len);
    if (status != UCS_OK) {
        ucs_error("UCG group: failed to get the UCP worker address: %s",
                  ucs_status_string(status));
        return status;
    }

    rec->worker_addr_len = worker_addr_len;
    var_len              = worker_addr_len;
    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        var_len += rec->sm_iface_addr_len[tl] + rec->sm_dev_addr_len[tl];
    }

    var = ucs_calloc(1, ucs_max(var_len, 1), "ucg group addresses");
    if (var == NULL) {
        ucs_error("UCG group: out of memory");
        status = UCS_ERR_NO_MEMORY;
        goto out_release;
    }

    memcpy(var, worker_addr, worker_addr_len);
    p = UCS_PTR_BYTE_OFFSET(var, worker_addr_len);
    for (tl = 0; (tl < UCG_SM_LAST) && context->o2m; ++tl) {
        status = uct_iface_get_address(context->sm_iface[tl], p);
        if (status != UCS_OK) {
            break;
        }
        p      = UCS_PTR_BYTE_OFFSET(p, rec->sm_iface_addr_len[tl]);
        status = uct_iface_get_device_address(context->sm_iface[tl], p);
        if (status != UCS_OK) {
            break;
        }
        p      = UCS_PTR_BYTE_OFFSET(p, rec->sm_dev_addr_len[tl]);
    }

    if (status != UCS_OK) {
        ucs_error("UCG group: failed to get the %s addresses: %s",
                  ucg_sm_tl_name(tl), ucs_status_string(status));
        ucs_free(var);
        goto out_release;
    }

    *var_p = var;

out_release:
    ucp_worker_release_address(context->ucp_worker, worker_addr);
    return status;
}

size_t ucg_group_var_len(const ucg_group_rec_t *rec)
{
    size_t len = rec->worker_addr_len;
    ucg_sm_tl_t tl;

    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        len += rec->sm_iface_addr_len[tl] + rec->sm_dev_addr_len[tl];
    }
    return len;
}

/* Point the members at their addresses in the blob */
void ucg_group_unpack(ucg_group_t *group, const ucg_group_rec_t *recs,
                      size_t stride)
{
    const ucg_group_rec_t *rec;
    ucg_member_t *member;
    ucg_sm_tl_t tl;
    const void *p;
    unsigned i;

    for (i = 0; i < group->size; ++i) {
        rec                = &recs[i];
        member             = &group->members[i];
        member->host_label = rec->host_label;
        member->real_host  = rec->real_host;
        member->pid        = rec->pid;
        member->start_time = rec->start_time;
        member->watch      = NULL;
        member->ep         = NULL;

        p                   = UCS_PTR_BYTE_OFFSET(group->addr_blob,
                                                  i * stride);
        member->worker_addr     = p;
        member->worker_addr_len = rec->worker_addr_len;
        p                   = UCS_PTR_BYTE_OFFSET(p, rec->worker_addr_len);
        for (tl = 0; tl < UCG_SM_LAST; ++tl) {
            member->sm_iface_addr[tl] = rec->sm_iface_addr_len[tl] ? p : NULL;
            p                         = UCS_PTR_BYTE_OFFSET(
                    p, rec->sm_iface_addr_len[tl]);
            member->sm_dev_addr[tl]   = rec->sm_dev_addr_len[tl] ? p : NULL;
            p                         = UCS_PTR_BYTE_OFFSET(
                    p, rec->sm_dev_addr_len[tl]);
        }
    }
}

/* Cyclic distance from @a id to the next id no group of the context uses */
static uint32_t ucg_group_free_distance(ucg_context_t *context, uint16_t id)
{
    uint32_t distance;

    for (distance = 0; distance < UCG_GROUP_NUM_IDS; ++distance) {
        if (ucg_context_find_group(context,
                                   (uint16_t)(id + distance)) == NULL) {
            return distance;
        }
    }
    return UCG_GROUP_NUM_IDS;
}

/*
 * Agree on an id no member uses: start from the largest proposal; in each
 * round every member reports how far the next id free locally is, and all
 * move the candidate by the largest distance, until it is free everywhere.
 * The candidate only moves forward, so the rounds are bounded.  A local
 * failure (@a local_status) makes every member fail.
 */
ucs_status_t ucg_group_agree_id(ucg_group_t *group,
                                const ucg_group_params_t *params,
                                const ucg_group_rec_t *recs,
                                ucs_status_t local_status)
{
    ucg_group_id_reply_t mine, *replies;
    uint32_t advanced, max_distance;
    ucs_status_t status;
    uint16_t candidate;
    unsigned i, rank;

    replies = ucs_malloc(sizeof(*replies) * group->size, "ucg id replies");
    if (replies == NULL) {
        ucs_error("UCG group: out of memory");
        return UCS_ERR_NO_MEMORY;
    }

    candidate = recs[0].proposed_id;
    for (i = 1; i < group->size; ++i) {
        candidate = ucs_max(candidate, recs[i].proposed_id);
    }

    advanced = 0;
    for (;;) {
        mine.status   = local_status;
        mine.distance = ucg_group_free_distance(group->context, candidate);

        status = ucg_group_oob(params, &mine, replies, sizeof(mine));
        if (status != UCS_OK) {
            goto out;
        }

        status = ucg_group_any_error(&replies[0].status, sizeof(*replies),
                                     group->size, &rank);
        if (status != UCS_OK) {
            ucs_debug("UCG group rank %u: rank %u failed: %s", group->rank,
                      rank, ucs_status_string(status));
            goto out;
        }

        max_distance = 0;
        for (i = 0; i < group->size; ++i) {
            max_distance = ucs_max(max_distance, replies[i].distance);
        }

        if (max_distance == 0) {
            break;
        }

        advanced += max_distance;
        if (advanced >= UCG_GROUP_NUM_IDS) {
            ucs_error("UCG group rank %u: no group id is free on every "
                      "member", group->rank);
            status = UCS_ERR_EXCEEDS_LIMIT;
            goto out;
        }
        candidate += max_distance;
    }

    group->id                      = candidate;
    group->context->next_group_id  = (uint16_t)(candidate + 1);
    status                         = UCS_OK;

out:
    ucs_free(replies);
    return status;
}
