/**
 * ucx-o2m: UCG groups: creation by address exchange over the caller's
 * out-of-band allgather, agreement on the group id, endpoint and plan
 * caches, liveness of the members on this host.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_group.h"
#include "ucg_coll.h"
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


/* Number of distinct group ids */
#define UCG_GROUP_NUM_IDS      65536u

/* Bits of a uid that hold the creator's group counter */
#define UCG_GROUP_UID_CNT_BITS 24

/* Groups created by this process: with its pid, makes uids unique on the
 * host over time (a pid is reused only after its groups are gone) */
static uint32_t ucg_group_created_count = 0;


/* What every member tells the others first: fixed size, so that the
 * variable part can then be exchanged padded to the longest one */
typedef struct ucg_group_rec {
    uint64_t real_host;
    uint64_t host_label;
    uint64_t sm_max_bcopy;
    uint64_t start_time;       /* with pid: see uct_o2m_proc_t */
    int32_t  status;           /* a local failure makes every member fail */
    uint32_t pid;
    uint32_t created_count;    /* rank 0's makes the uid */
    uint32_t worker_addr_len;
    uint32_t sm_iface_addr_len[UCG_SM_LAST];
    uint32_t sm_dev_addr_len[UCG_SM_LAST];
    uint16_t proposed_id;
    uint8_t  o2m;
    uint8_t  sm_cma;           /* the sm interfaces read with single copy */
    uint32_t proposed_epoch;   /* the group's is the largest */
    uint32_t sm_max_members;   /* MAX_MEMBERS of the sm interfaces */
    uint32_t sm_budget[UCG_SM_LAST]; /* directory entries reserved for the
                                        endpoints this member roots */
    uint8_t  mc;               /* UCG_MC_NONE, _NET or _LOOPBACK */
    uint8_t  reserved2[3];
    /* Ring geometry of the sm interfaces: what the segments this member
     * roots cost; and its SM_GROUP_MEM */
    uint64_t sm_ring_max[UCG_SM_LAST];
    uint32_t sm_fifo_depth[UCG_SM_LAST];
    uint32_t sm_seg_bcopy[UCG_SM_LAST];
    uint64_t sm_group_mem;
} ucg_group_rec_t;

/* A member's answer in a round of the group id agreement */
typedef struct ucg_group_id_reply {
    int32_t  status;
    uint32_t distance;         /* to the next id free here; NUM_IDS: none */
} ucg_group_id_reply_t;


static ucs_status_t ucg_group_oob(const ucg_group_params_t *params,
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
static ucs_status_t ucg_group_any_error(const int32_t *status, size_t stride,
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

/*
 * Directory entries of this member's sm interfaces for the endpoints the
 * group roots here: SM_GROUP_EPS per interface, or as many as the live
 * groups left of SM_MAX_GROUPS.  UCG is the only user of its interfaces,
 * so a reserved entry is free when the endpoint is created.
 */
static void ucg_group_sm_reserve(ucg_group_t *group, unsigned size)
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
static ucs_status_t ucg_group_sm_limits(ucg_group_t *group,
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

    if (!ucg_plan_topo_hier(group->context->config, &group->topo)) {
        ucg_group_sm_release(group); /* no host-local endpoint, ever */
    }
    return UCS_OK;
}

static void ucg_group_sm_cleanup(ucg_group_t *group)
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
    return (a->tl == b->tl) && (a->root == b->root) && (a->mode == b->mode) &&
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
 * geometry (as that member told) for a set of the root's host, UCG's
 * header on fan-in.  The same on every member.
 */
static size_t ucg_group_sm_slot_bytes(const ucg_group_t *group,
                                      const ucg_sm_slot_t *slot)
{
    uct_o2m_group_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_O2M_GROUP_FIELD_MODE | UCT_O2M_GROUP_FIELD_OP |
                        UCT_O2M_GROUP_FIELD_HDR_LEN;
    params.size       = group->topo.host_size[group->topo.host_of[slot->root]];
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


/* Fill my record and the variable part (UCP worker address, then the
 * interface and device addresses of sm_bcast and sm_incast) */
static ucs_status_t ucg_group_pack_local(ucg_group_t *group,
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
    rec->mc          = ucg_mc_local_kind(context);
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

static size_t ucg_group_var_len(const ucg_group_rec_t *rec)
{
    size_t len = rec->worker_addr_len;
    ucg_sm_tl_t tl;

    for (tl = 0; tl < UCG_SM_LAST; ++tl) {
        len += rec->sm_iface_addr_len[tl] + rec->sm_dev_addr_len[tl];
    }
    return len;
}

/* Point the members at their addresses in the blob */
static void ucg_group_unpack(ucg_group_t *group, const ucg_group_rec_t *recs,
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

/* Shared memory within a topology host needs one real host */
static int ucg_group_hosts_are_real(const ucg_group_t *group)
{
    const ucg_topo_t *topo = &group->topo;
    unsigned h, j, first, rank;

    for (h = 0; h < topo->num_hosts; ++h) {
        first = topo->host_ranks[topo->host_first[h]];
        for (j = topo->host_first[h] + 1; j < topo->host_first[h + 1]; ++j) {
            rank = topo->host_ranks[j];
            if (group->members[rank].real_host !=
                group->members[first].real_host) {
                ucs_diag("UCG group rank %u: ranks %u and %u share host label "
                         "0x%" PRIx64 " but not a real host: not using the "
                         "o2m transports", group->rank, first, rank,
                         group->members[first].host_label);
                return 0;
            }
        }
    }
    return 1;
}

/* Watch the other members on this real host */
static ucs_status_t ucg_group_watch_members(ucg_group_t *group)
{
    ucg_member_t *me = &group->members[group->rank];
    uct_o2m_proc_t proc;
    ucg_member_t *member;
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < group->size; ++i) {
        member = &group->members[i];
        if ((i == group->rank) || (member->real_host != me->real_host)) {
            continue;
        }

        proc.pid        = member->pid;
        proc.start_time = member->start_time;
        status          = uct_o2m_watch_get(group->context->watches, &proc,
                                            &member->watch);
        if (status != UCS_OK) {
            return status;
        }

        if (uct_o2m_watch_has_exited(member->watch)) {
            ucs_error("UCG group rank %u: rank %u (pid %d) has already "
                      "exited", group->rank, i, member->pid);
            return UCS_ERR_CONNECTION_RESET;
        }
    }
    return UCS_OK;
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
static ucs_status_t ucg_group_agree_id(ucg_group_t *group,
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

static void ucg_group_unwatch_members(ucg_group_t *group)
{
    unsigned i;

    for (i = 0; i < group->size; ++i) {
        uct_o2m_watch_put(group->context->watches, group->members[i].watch);
        group->members[i].watch = NULL;
    }
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
        group->topo.mc = ucg_mc_group_usable(group, &recs[0].mc,
                                             sizeof(*recs));
        local_status = ucg_group_sm_limits(group, recs);
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
static void ucg_group_destroy_sm_eps(ucg_group_t *group)
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

void ucg_group_destroy(ucg_group_h group)
{
    if (group == NULL) {
        return;
    }

    ucg_coll_group_cleanup(group);
    /* A member known dead makes the flushes below skip waiting for it */
    group->next_check = 0;
    ucg_group_check(group);
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

/* splitmix64's finalizer: a bijection of 64-bit values */
static uint64_t ucg_group_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/*
 * o2m group id of an endpoint: (tl, root, mode, op, dtype) are packed into
 * 36 bits, which, with the group's uid, go through bijections: two endpoints
 * of one UCG group never get the same id, and ids of different UCG groups
 * (different uids) coincide with probability 2^-64.
 */
static uint64_t ucg_group_sm_id(const ucg_group_t *group, ucg_sm_tl_t tl,
                                unsigned root, uct_o2m_mode_t mode,
                                uct_o2m_op_t op, uct_o2m_dtype_t dtype)
{
    uint64_t info = ((uint64_t)root << 16) | ((uint64_t)tl << 12) |
                    ((uint64_t)mode << 8) | ((uint64_t)op << 4) |
                    (uint64_t)dtype;

    return ucg_group_mix64(group->uid ^ ucg_group_mix64(info));
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

    ucs_list_for_each(sm_ep, &group->sm_eps, list) {
        if ((sm_ep->tl == tl) && (sm_ep->host == host) &&
            (sm_ep->root == root_rank) && (sm_ep->mode == mode) &&
            (sm_ep->op == op) && (sm_ep->dtype == dtype)) {
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
    params.group_id        = ucg_group_sm_id(group, tl, root_rank, mode, op,
                                             dtype);
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

    sm_ep->tl    = tl;
    sm_ep->host  = host;
    sm_ep->root  = root_rank;
    sm_ep->mode  = mode;
    sm_ep->op    = op;
    sm_ep->dtype = dtype;
    ucs_list_add_tail(&group->sm_eps, &sm_ep->list);

    ucs_debug("UCG group %u rank %u: %s endpoint %p, o2m group 0x%" PRIx64
              " (%u of %u, root %u)", group->id, group->rank,
              ucg_sm_tl_name(tl), sm_ep->ep, params.group_id, my_index,
              set->count, set->root);
    *ep_p = sm_ep->ep;
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
    const ucg_config_t *config = group->context->config;
    ucs_status_t status;
    int created;

    status = ucg_plan_cache_get(&group->plans, config, &group->topo, key,
                                plan_p, &created);
    if ((status == UCS_OK) && created && config->log_plans) {
        ucg_group_log_plan(group, *plan_p);
    }
    return status;
}

ucs_status_t ucg_group_check(ucg_group_h group)
{
    ucs_time_t now = ucs_get_time();
    ucg_member_t *member;
    unsigned i;

    if ((group->failed != UCS_OK) || (now < group->next_check)) {
        return group->failed;
    }

    group->next_check = now +
                        ucs_time_from_sec(group->context->config->check_interval);

    for (i = 0; i < group->size; ++i) {
        member = &group->members[i];
        if ((member->watch != NULL) &&
            uct_o2m_watch_has_exited(member->watch)) {
            ucs_error("UCG group %u rank %u: rank %u (pid %d) has exited",
                      group->id, group->rank, i, member->pid);
            group->failed = UCS_ERR_CONNECTION_RESET;
            break;
        }
    }

    return group->failed;
}

int ucg_group_member_exited(ucg_group_h group, unsigned rank)
{
    const ucg_member_t *member;

    if (rank >= group->size) {
        return 0;
    }

    member = &group->members[rank];
    if (member->ep_failed) {
        return 1;
    }

    return (member->watch != NULL) && uct_o2m_watch_has_exited(member->watch);
}

ucs_status_t ucg_group_p2p_force_close(ucg_group_h group, unsigned rank)
{
    ucg_member_t *member;
    ucg_p2p_conn_t *conn;

    if (rank >= group->size) {
        return UCS_ERR_INVALID_PARAM;
    }

    member = &group->members[rank];
    if (member->ep == NULL) {
        return UCS_ERR_NO_ELEM;
    }

    ucs_list_for_each(conn, &group->context->p2p_conns, list) {
        if (conn->ep != member->ep) {
            continue;
        }
        if (!conn->peer_err) {
            return UCS_ERR_UNSUPPORTED;
        }
        ucs_warn("UCG group %u rank %u: closing the connection to rank %u "
                 "(pid %d) with requests of a failed collective on it; "
                 "the groups using it fail", group->id, group->rank, rank,
                 member->pid);
        ucg_p2p_conn_drop(conn);
        return UCS_OK;
    }

    return UCS_ERR_NO_ELEM;
}

ucs_status_t ucg_group_p2p_watch(ucg_group_h group, unsigned rank)
{
    ucp_ep_h ep;

    if ((rank >= group->size) ||
        (group->topo.host_of[rank] == group->topo.host_of[group->rank])) {
        return UCS_OK;
    }

    return ucg_group_p2p_ep(group, rank, &ep);
}
