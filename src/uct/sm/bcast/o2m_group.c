/**
 * ucx-o2m: group endpoints: creation, joining, destruction, and the
 * group calls of uct_o2m.h (liveness: o2m_liveness.c; destroyed groups
 * kept for late members: o2m_retired.c).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_group.h"
#include "o2m_p2p.h"
#include "o2m_reduce.h"
#include "o2m_check.h"
#include "../../mc/udp/mc_udp.h"
#include "../../mc/common/mc_rel_ep.h"
#ifdef O2M_MC_VERBS
#  include "../../mc/verbs/mc_verbs.h"
#endif
#ifdef O2M_MC_MLX5
#  include "../../mc/mlx5/mc_mlx5.h"
#endif

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/string.h>
#include <string.h>
#include <unistd.h>


static ucs_status_t uct_o2m_group_create_seg(uct_o2m_group_ep_t *ep)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    uct_o2m_group_seg_t hdr;
    ucs_status_t status;
    const char *why;
    char name[64];

    memset(&hdr, 0, sizeof(hdr));
    hdr.magic      = UCT_O2M_GROUP_MAGIC;
    hdr.version    = UCT_O2M_LAYOUT_VERSION;
    hdr.group_id   = ep->group_id;
    hdr.is_incast  = iface->is_incast;
    hdr.size       = ep->size;
    hdr.root_index = ep->root_index;
    hdr.mode       = ep->mode;
    hdr.op         = ep->op;
    hdr.dtype      = ep->dtype;
    hdr.hdr_len    = ep->hdr_len;
    hdr.depth      = iface->config.fifo_size;
    hdr.root       = iface->self;
    hdr.uuid       = ucs_generate_uuid((uintptr_t)ep);

    ep->seg_size = iface->is_incast ?
                   uct_o2m_incast_seg_layout(&hdr, iface->config.elem_size,
                                             iface->config.ring_max) :
                   uct_o2m_bcast_seg_layout(&hdr, iface->config.elem_size);

    /* The members check the same; the root keeps its private copy too */
    status = uct_o2m_group_geom_check(&hdr, ep->seg_size,
                                      uct_o2m_group_seg_shared(&hdr),
                                      &ep->geom, &why);
    if (status != UCS_OK) {
        ucs_error("group 0x%" PRIx64 ": invalid layout (%s)", ep->group_id,
                  why);
        return status;
    }

    ucs_snprintf_safe(name, sizeof(name), "ucx-o2m-group-%" PRIx64,
                      ep->group_id);
    status = uct_o2m_seg_create(name, ep->seg_size, &ep->seg_fd,
                                (void**)&ep->seg);
    if (status != UCS_OK) {
        return status;
    }

    memcpy(ep->seg, &hdr, sizeof(hdr));
    return UCS_OK;
}

/* Pointers into an attached (or created) group segment, from the checked
 * private copy of its geometry */
static void uct_o2m_group_set_layout(uct_o2m_group_ep_t *ep)
{
    ep->members     = UCS_PTR_BYTE_OFFSET(ep->seg, ep->geom.members_offset);
    ep->elems       = UCS_PTR_BYTE_OFFSET(ep->seg, ep->geom.elems_offset);
    ep->acks        = UCS_PTR_BYTE_OFFSET(ep->seg, ep->geom.acks_offset);
    ep->depth       = ep->geom.depth;
    ep->elem_stride = ep->geom.elem_stride;
    ep->max_length  = ep->geom.max_length;
}

static void uct_o2m_group_join(uct_o2m_group_ep_t *ep)
{
    uct_o2m_iface_t *iface   = ucs_derived_of(ep->super.super.super.iface,
                                              uct_o2m_iface_t);
    uct_o2m_member_t *member = &ep->members[ep->my_index];

    member->proc = iface->self;
    __atomic_store_n(&member->state, UCT_O2M_MEMBER_ATTACHED,
                     __ATOMIC_RELEASE);
}

/* Whether a mapped segment is the group segment the directory named */
static int uct_o2m_group_seg_matches(const uct_o2m_group_ep_t *ep,
                                     const uct_o2m_group_seg_t *seg,
                                     size_t size)
{
    return (size >= sizeof(*seg)) && (seg->magic == UCT_O2M_GROUP_MAGIC) &&
           (seg->version == UCT_O2M_LAYOUT_VERSION) &&
           (seg->group_id == ep->group_id);
}

/*
 * A refusal listed by the root for our group: its status, written by the
 * root, is checked (an error code members can act on; UCS_ERR_NO_RESOURCE
 * would read as "not created yet"), and the first time this endpoint sees
 * it, it says so to the root (which reclaims the entry when every member
 * has).
 */
static ucs_status_t uct_o2m_group_refusal(uct_o2m_group_ep_t *ep,
                                          uct_o2m_dir_entry_t *entry,
                                          int32_t refused)
{
    if ((refused >= 0) || (refused <= UCS_ERR_LAST) ||
        (refused == UCS_ERR_NO_RESOURCE)) {
        ucs_error("group 0x%" PRIx64 " member %u: the root (pid %d) lists "
                  "a refusal with an invalid status %d", ep->group_id,
                  ep->my_index, ep->root_proc.pid, refused);
        return UCS_ERR_INVALID_PARAM;
    }

    if (ep->refused == UCS_OK) {
        ep->refused = (ucs_status_t)refused;
        __atomic_fetch_add(&entry->seen, 1, __ATOMIC_RELEASE);
    }
    return ep->refused;
}

/*
 * The directory entry of our group in the root's interface segment, copied
 * out: UCS_OK with its segment, UCS_ERR_NO_RESOURCE while the root has not
 * listed it, or the error of a root that could not create it (a refusal:
 * ep->refused is set).
 */
static ucs_status_t uct_o2m_group_find(uct_o2m_group_ep_t *ep, int *fd_p,
                                       uint64_t *uuid_p)
{
    uct_o2m_peer_seg_t *root = ep->root_peer;
    uct_o2m_dir_entry_t *entry;
    int32_t refused;
    unsigned i;

    for (i = 0; i < root->geom.max_groups; ++i) {
        entry = &root->dir[i];
        if (!__atomic_load_n(&entry->in_use, __ATOMIC_ACQUIRE) ||
            (entry->group_id != ep->group_id)) {
            continue;
        }

        *fd_p   = entry->seg_fd;
        *uuid_p = entry->uuid;
        refused = entry->refused;

        /* The root may have reused the entry while we copied it */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (!__atomic_load_n(&entry->in_use, __ATOMIC_RELAXED) ||
            (entry->group_id != ep->group_id)) {
            return UCS_ERR_NO_RESOURCE;
        }

        return (refused == UCS_OK) ? UCS_OK :
               uct_o2m_group_refusal(ep, entry, refused);
    }

    return UCS_ERR_NO_RESOURCE;
}

ucs_status_t uct_o2m_group_attach(uct_o2m_group_ep_t *ep)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    uct_o2m_group_seg_t *seg, hdr;
    ucs_status_t status;
    const char *why;
    uint64_t uuid;
    size_t size;
    int fd;

    status = uct_o2m_group_find(ep, &fd, &uuid);
    if (status != UCS_OK) {
        return status; /* Not created yet, or refused */
    }

    status = uct_o2m_seg_attach(ep->root_proc.pid, fd, (void**)&seg, &size);
    if (status == UCS_ERR_INVALID_PARAM) {
        return status; /* Not a segment we can trust */
    } else if (status != UCS_OK) {
        return UCS_ERR_NO_RESOURCE; /* Raced with the root closing it */
    }

    if (size < sizeof(hdr)) {
        uct_o2m_seg_detach(seg, size);
        return UCS_ERR_NO_RESOURCE;
    }

    /* Everything used of the header is copied once and checked */
    memcpy(&hdr, seg, sizeof(hdr));
    if (!uct_o2m_group_seg_matches(ep, &hdr, size) || (hdr.uuid != uuid)) {
        uct_o2m_seg_detach(seg, size);
        return UCS_ERR_NO_RESOURCE;
    }

    if ((hdr.is_incast != iface->is_incast) || (hdr.size != ep->size) ||
        (hdr.root_index != ep->root_index) || (hdr.mode != ep->mode) ||
        (hdr.is_incast && ((hdr.op != ep->op) ||
                           (hdr.hdr_len != ep->hdr_len) ||
                           ((ep->op != UCT_O2M_OP_GATHER) &&
                            (hdr.dtype != ep->dtype))))) {
        ucs_error("group 0x%" PRIx64 ": member %u parameters (size %u root "
                  "%u mode %s op %s) differ from the root's (size %u root %u "
                  "mode %s op %s)", ep->group_id, ep->my_index, ep->size,
                  ep->root_index, uct_o2m_mode_name(ep->mode),
                  uct_o2m_op_name(ep->op), hdr.size, hdr.root_index,
                  uct_o2m_mode_name(hdr.mode), uct_o2m_op_name(hdr.op));
        uct_o2m_seg_detach(seg, size);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_o2m_group_geom_check(&hdr, size,
                                      uct_o2m_group_seg_shared(&hdr),
                                      &ep->geom, &why);
    if (status != UCS_OK) {
        ucs_error("group 0x%" PRIx64 " member %u: segment of the root (pid "
                  "%d, %zu bytes) is corrupt: %s", ep->group_id,
                  ep->my_index, ep->root_proc.pid, size, why);
        uct_o2m_seg_detach(seg, size);
        return status;
    }

    ep->seg      = seg;
    ep->seg_size = size;
    uct_o2m_group_set_layout(ep);
    uct_o2m_group_join(ep);
    ucs_debug("group 0x%" PRIx64 ": member %u/%u joined", ep->group_id,
              ep->my_index, ep->size);
    return UCS_OK;
}

static void uct_o2m_group_log_refused(const uct_o2m_group_ep_t *ep)
{
    ucs_diag("group 0x%" PRIx64 " member %u: the root (index %u, pid %d) "
             "could not create the group: %s", ep->group_id, ep->my_index,
             ep->root_index, ep->root_proc.pid,
             ucs_status_string(ep->refused));
}

int uct_o2m_group_try_attach(uct_o2m_group_ep_t *ep)
{
    ucs_status_t status = uct_o2m_group_attach(ep);

    if (status == UCS_OK) {
        return 1;
    }

    /* Parameters that differ from the root's will not get better */
    if (status != UCS_ERR_NO_RESOURCE) {
        if (ep->refused != UCS_OK) {
            uct_o2m_group_log_refused(ep);
        }
        uct_o2m_ep_set_failed(&ep->super, status);
    }
    return 0;
}

/* Watch member @a index through the interface's table */
static ucs_status_t uct_o2m_group_watch(uct_o2m_group_ep_t *ep,
                                        unsigned index,
                                        const uct_o2m_proc_t *proc)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);

    return uct_o2m_watch_get(iface->watches, proc, &ep->watches[index]);
}

ucs_status_t uct_o2m_group_flush_status(uct_o2m_ep_t *o2m_ep)
{
    uct_o2m_group_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_group_ep_t);

    /* A sender that has sent is attached */
    return (uct_o2m_group_ops(ep)->update(ep) >= ep->super.next_seq) ?
           UCS_OK : UCS_INPROGRESS;
}

uint64_t uct_o2m_group_sent(const uct_o2m_group_ep_t *ep)
{
    return ep->super.next_seq;
}

/*
 * The root could not create the group segment (out of memory, say): it
 * lists a refusal with @a reason in its directory, so that the members fail
 * with it instead of waiting for a segment that will never come, and its
 * endpoint is created failed.  When even the directory entry cannot be
 * had, the creation fails with @a reason (the members then wait as for a
 * root that has not created the group).
 */
static ucs_status_t uct_o2m_group_refuse(uct_o2m_group_ep_t *ep,
                                         ucs_status_t reason)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);

    /* Members read UCS_ERR_NO_RESOURCE as "not created yet" */
    if ((reason >= 0) || (reason <= UCS_ERR_LAST) ||
        (reason == UCS_ERR_NO_RESOURCE)) {
        reason = UCS_ERR_NO_MEMORY;
    }

    if (uct_o2m_iface_dir_add(iface, ep->group_id, -1,
                              ucs_generate_uuid((uintptr_t)ep),
                              reason) != UCS_OK) {
        return reason;
    }

    ucs_diag("group 0x%" PRIx64 ": the root could not create the group "
             "segment (%s); its %u members are told", ep->group_id,
             ucs_status_string(reason), uct_o2m_group_num_peers(ep));
    ep->refused      = reason;
    ep->super.status = reason;
    return UCS_OK;
}

static ucs_status_t
uct_o2m_group_check_params(uct_o2m_iface_t *iface,
                           const uct_o2m_group_params_t *params,
                           uct_o2m_mode_t mode, uct_o2m_op_t op,
                           uct_o2m_dtype_t dtype, size_t hdr_len)
{
    if ((params->size < 2) || (params->my_index >= params->size) ||
        (params->root_index >= params->size)) {
        ucs_error("invalid group: size %u, my index %u, root index %u",
                  params->size, params->my_index, params->root_index);
        return UCS_ERR_INVALID_PARAM;
    }

    if (params->size > iface->config.max_members) {
        ucs_error("group size %u exceeds MAX_MEMBERS %u", params->size,
                  iface->config.max_members);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    if ((mode >= UCT_O2M_MODE_LAST) || (op >= UCT_O2M_OP_LAST) ||
        (dtype >= UCT_O2M_DT_LAST)) {
        ucs_error("invalid group mode %d, op %d or dtype %d", mode, op,
                  dtype);
        return UCS_ERR_INVALID_PARAM;
    }

    if (!iface->is_incast) {
        if ((mode != UCT_O2M_MODE_BATCHED) &&
            (mode != UCT_O2M_MODE_CENTRALIZED)) {
            ucs_error("%s supports the batched and centralized modes, not %s",
                      UCT_O2M_BCAST_TL_NAME, uct_o2m_mode_name(mode));
            return UCS_ERR_UNSUPPORTED;
        }
        if (op != UCT_O2M_OP_GATHER) {
            ucs_error("%s does not reduce (op %s)", UCT_O2M_BCAST_TL_NAME,
                      uct_o2m_op_name(op));
            return UCS_ERR_INVALID_PARAM;
        }
    } else if (!uct_o2m_op_supported(mode, op, dtype)) {
        ucs_error("%s mode %s does not support %s on %s",
                  UCT_O2M_INCAST_TL_NAME, uct_o2m_mode_name(mode),
                  uct_o2m_op_name(op), uct_o2m_dtype_name(dtype));
        return UCS_ERR_UNSUPPORTED;
    }

    if ((mode == UCT_O2M_MODE_ATOMIC) && (op != UCT_O2M_OP_GATHER) &&
        (hdr_len % uct_o2m_dtype_size(dtype))) {
        ucs_error("atomic mode needs hdr_len (%zu) to be a multiple of the "
                  "%s size", hdr_len, uct_o2m_dtype_name(dtype));
        return UCS_ERR_UNSUPPORTED;
    }

    if (hdr_len > iface->config.elem_size - sizeof(uct_o2m_elem_t)) {
        ucs_error("hdr_len %zu exceeds the largest message %zu", hdr_len,
                  iface->config.elem_size - sizeof(uct_o2m_elem_t));
        return UCS_ERR_INVALID_PARAM;
    }

    if ((params->my_index != params->root_index) &&
        (!(params->field_mask & UCT_O2M_GROUP_FIELD_ROOT_ADDR) ||
         (params->root_iface_addr == NULL))) {
        ucs_error("group member %u needs the root's interface address",
                  params->my_index);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

UCS_CLASS_INIT_FUNC(uct_o2m_group_ep_t, uct_o2m_iface_t *iface,
                    const uct_o2m_group_params_t *params,
                    const uct_o2m_group_ops_t *ops,
                    const uct_o2m_group_args_t *args)
{
    ucs_status_t status;
    unsigned i;

    UCS_CLASS_CALL_SUPER_INIT(uct_o2m_ep_t, iface, &ops->super);

    self->seg        = NULL;
    self->members    = NULL;
    self->seg_fd     = -1;
    self->root_peer  = NULL;
    self->group_id   = params->group_id;
    self->size       = params->size;
    self->my_index   = params->my_index;
    self->root_index = params->root_index;
    self->mode       = args->mode;
    self->op         = args->op;
    self->dtype      = args->dtype;
    self->hdr_len    = args->hdr_len;
    self->dt_size    = (args->op == UCT_O2M_OP_GATHER) ? 1 :
                       uct_o2m_dtype_size(args->dtype);
    self->acks       = NULL;
    self->procs      = NULL;
    self->wait_since = 0;
    self->wait_mark  = 0;
    self->refused    = UCS_OK;

    self->watches = ucs_calloc(params->size, sizeof(*self->watches),
                               "o2m watches");
    if (self->watches == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    if (uct_o2m_group_is_root(self) &&
        (params->field_mask & UCT_O2M_GROUP_FIELD_MEMBER_PIDS) &&
        (params->member_pids != NULL)) {
        self->procs = ucs_calloc(params->size, sizeof(*self->procs),
                                 "o2m member procs");
        if (self->procs == NULL) {
            status = UCS_ERR_NO_MEMORY;
            goto err_free;
        }

        /* The start time, read now, guards the watch against pid reuse */
        for (i = 0; i < params->size; ++i) {
            self->procs[i].pid = params->member_pids[i];
            if ((i != params->my_index) && (self->procs[i].pid > 0)) {
                self->procs[i].start_time =
                        ucs_sys_get_proc_create_time(self->procs[i].pid);
            } else {
                self->procs[i].pid = 0;
            }
        }
    }

    if (uct_o2m_group_is_root(self)) {
        status = uct_o2m_group_create_seg(self);
        if (status != UCS_OK) {
            status = uct_o2m_group_refuse(self, status);
            if (status != UCS_OK) {
                goto err_free;
            }
            goto out;
        }

        uct_o2m_group_set_layout(self);
        if (iface->is_incast) {
            uct_o2m_incast_seg_init(self);
        } else {
            uct_o2m_bcast_seg_init(self);
        }
        uct_o2m_group_join(self);

        status = uct_o2m_iface_dir_add(iface, self->group_id, self->seg_fd,
                                       self->seg->uuid, UCS_OK);
        if (status != UCS_OK) {
            goto err_destroy_seg;
        }
    } else {
        if ((params->root_dev_addr != NULL) &&
            !uct_sm_iface_is_reachable(&iface->super.super.super,
                                       params->root_dev_addr,
                                       params->root_iface_addr)) {
            ucs_error("group 0x%" PRIx64 ": the root is not on this host",
                      self->group_id);
            status = UCS_ERR_UNREACHABLE;
            goto err_free;
        }

        status = uct_o2m_iface_map_peer(
                iface, (const uct_o2m_iface_addr_t*)params->root_iface_addr,
                &self->root_peer);
        if (status != UCS_OK) {
            goto err_free;
        }

        self->root_proc = self->root_peer->owner;
        status          = uct_o2m_group_watch(self, self->root_index,
                                              &self->root_proc);
        if (status != UCS_OK) {
            goto err_unmap;
        }

        if (uct_o2m_watch_has_exited(self->watches[self->root_index])) {
            ucs_error("group 0x%" PRIx64 ": root process %d is gone",
                      self->group_id, self->root_proc.pid);
            status = UCS_ERR_UNREACHABLE;
            goto err_put;
        }

        /* The root may not have created the group yet: progress retries.
         * A receiver waits for the group from now on (opt-in deadline).
         * A root that could not create it: the endpoint is created failed,
         * with the root's error. */
        status = uct_o2m_group_attach(self);
        if (self->refused != UCS_OK) {
            uct_o2m_group_log_refused(self);
            self->super.status = self->refused;
        } else if ((status != UCS_OK) && (status != UCS_ERR_NO_RESOURCE)) {
            goto err_put;
        } else if ((status != UCS_OK) && !uct_o2m_ep_sends(&self->super)) {
            self->wait_since = ucs_get_time();
        }
    }

out:
    ucs_debug("group 0x%" PRIx64 ": ep %p member %u/%u root %u mode %s op %s "
              "dtype %s", self->group_id, self, self->my_index, self->size,
              self->root_index, uct_o2m_mode_name(args->mode),
              uct_o2m_op_name(args->op), uct_o2m_dtype_name(args->dtype));
    return UCS_OK;

err_destroy_seg:
    uct_o2m_seg_destroy(self->seg_fd, self->seg, self->seg_size);
    goto err_free;
err_put:
    uct_o2m_watch_put(iface->watches, self->watches[self->root_index]);
err_unmap:
    uct_o2m_iface_unmap_peer(iface, self->root_peer);
err_free:
    ucs_free(self->procs);
    ucs_free(self->watches);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_group_ep_t)
{
    uct_o2m_iface_t *iface = ucs_derived_of(self->super.super.super.iface,
                                            uct_o2m_iface_t);
    unsigned i;

    if (uct_o2m_group_is_root(self)) {
        uct_o2m_group_root_close(self);
    } else {
        /* A member that never joined says that it left, so that the root
         * does not wait for it (the group may not exist yet: then not) */
        if ((self->seg == NULL) && (self->super.status == UCS_OK)) {
            (void)uct_o2m_group_attach(self);
        }

        if (self->seg != NULL) {
            /* How far we got, for the root to tell finished from failed */
            self->members[self->my_index].done = uct_o2m_group_done(self);
            __atomic_store_n(&self->members[self->my_index].state,
                             UCT_O2M_MEMBER_LEFT, __ATOMIC_RELEASE);
            uct_o2m_seg_detach(self->seg, self->seg_size);
        }
        uct_o2m_iface_unmap_peer(iface, self->root_peer);
    }

    for (i = 0; (self->watches != NULL) && (i < self->size); ++i) {
        uct_o2m_watch_put(iface->watches, self->watches[i]);
    }
    ucs_free(self->watches);
    ucs_free(self->procs);
}

UCS_CLASS_DEFINE(uct_o2m_group_ep_t, uct_o2m_ep_t);

ucs_status_t uct_o2m_ep_create(uct_iface_h tl_iface,
                               const uct_o2m_group_params_t *params,
                               uct_ep_h *ep_p)
{
    uct_o2m_group_args_t args;
    uct_o2m_iface_t *iface;
    uct_o2m_group_ep_t *ep;
    ucs_status_t status;
    int is_root;

    if ((params != NULL) && (ep_p != NULL) && uct_mc_udp_is_iface(tl_iface)) {
        return uct_mc_udp_group_ep_create(tl_iface, params, ep_p);
    }
#ifdef O2M_MC_VERBS
    if ((params != NULL) && (ep_p != NULL) &&
        uct_mc_verbs_is_iface(tl_iface)) {
        return uct_mc_verbs_group_ep_create(tl_iface, params, ep_p);
    }
#endif
#ifdef O2M_MC_MLX5
    if ((params != NULL) && (ep_p != NULL) &&
        uct_mc_mlx5_is_iface(tl_iface)) {
        return uct_mc_mlx5_group_ep_create(tl_iface, params, ep_p);
    }
#endif

    if ((tl_iface == NULL) || (params == NULL) || (ep_p == NULL) ||
        (tl_iface->ops.iface_get_address != uct_o2m_iface_get_address)) {
        ucs_error("uct_o2m_ep_create() needs an %s or %s interface",
                  UCT_O2M_BCAST_TL_NAME, UCT_O2M_INCAST_TL_NAME);
        return UCS_ERR_INVALID_PARAM;
    }

    iface        = ucs_derived_of(tl_iface, uct_o2m_iface_t);
    args.mode    = (params->field_mask & UCT_O2M_GROUP_FIELD_MODE) ?
                   params->mode : UCT_O2M_MODE_BATCHED;
    args.op      = (params->field_mask & UCT_O2M_GROUP_FIELD_OP) ?
                   params->op : UCT_O2M_OP_GATHER;
    args.dtype   = (params->field_mask & UCT_O2M_GROUP_FIELD_DTYPE) ?
                   params->dtype : UCT_O2M_DT_UINT8;
    args.hdr_len = (params->field_mask & UCT_O2M_GROUP_FIELD_HDR_LEN) ?
                   params->hdr_len : 0;

    status = uct_o2m_group_check_params(iface, params, args.mode, args.op,
                                        args.dtype, args.hdr_len);
    if (status != UCS_OK) {
        return status;
    }

    /* The endpoint type of the role, created with its ops */
    is_root = (params->my_index == params->root_index);
    if (iface->is_incast) {
        status = is_root ?
                 UCS_CLASS_NEW_FUNC_NAME(uct_o2m_incast_root_ep_t)(
                         iface, params, &args, &ep) :
                 UCS_CLASS_NEW_FUNC_NAME(uct_o2m_incast_send_ep_t)(
                         iface, params, &args, &ep);
    } else {
        status = is_root ?
                 UCS_CLASS_NEW_FUNC_NAME(uct_o2m_bcast_root_ep_t)(
                         iface, params, &args, &ep) :
                 UCS_CLASS_NEW_FUNC_NAME(uct_o2m_bcast_recv_ep_t)(
                         iface, params, &args, &ep);
    }
    if (status != UCS_OK) {
        return status;
    }

    *ep_p = &ep->super.super.super;
    return UCS_OK;
}

#ifndef O2M_MC_VERBS
ucs_status_t uct_mc_verbs_ep_counters(uct_ep_h ep,
                                      uct_mc_verbs_ep_counters_t *counters)
{
    return UCS_ERR_UNSUPPORTED; /* configure did not build mc_verbs */
}
#endif

/* An endpoint of a transport on the reliable multicast engine */
static int uct_o2m_is_mc_rel_ep(uct_ep_h tl_ep)
{
#ifdef O2M_MC_VERBS
    if (uct_mc_ib_is_ep(tl_ep)) {
        return 1;
    }
#endif
    return uct_mc_udp_is_ep(tl_ep);
}

/* A group endpoint of sm_bcast or sm_incast */
static int uct_o2m_is_group_ep(uct_ep_h tl_ep)
{
    return (tl_ep != NULL) &&
           (tl_ep->iface->ops.iface_get_address ==
            uct_o2m_iface_get_address) &&
           (ucs_derived_of(tl_ep, uct_o2m_ep_t)->ops != &uct_o2m_p2p_ep_ops);
}

ucs_status_t uct_o2m_ep_expect(uct_ep_h tl_ep, int expect)
{
    return uct_o2m_is_mc_rel_ep(tl_ep) ? uct_mc_rel_ep_expect(tl_ep, expect) :
                                         UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_o2m_ep_rx_watch(uct_ep_h tl_ep, uct_o2m_rx_watch_t *watch)
{
    uct_o2m_group_ep_t *ep;

    if ((watch == NULL) || !uct_o2m_is_group_ep(tl_ep)) {
        return UCS_ERR_UNSUPPORTED;
    }

    ep = ucs_derived_of(tl_ep, uct_o2m_group_ep_t);
    if ((ep->seg == NULL) || (ep->super.status != UCS_OK) ||
        (uct_o2m_group_ops(ep)->rx_watch == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }

    return uct_o2m_group_ops(ep)->rx_watch(ep, watch);
}

uct_o2m_ep_state_t uct_o2m_ep_state(uct_ep_h tl_ep, ucs_status_t *status_p)
{
    uct_o2m_group_ep_t *ep;

    if (uct_o2m_is_mc_rel_ep(tl_ep)) {
        return uct_mc_rel_ep_state(tl_ep, status_p);
    }

    if (!uct_o2m_is_group_ep(tl_ep)) {
        ucs_error("uct_o2m_ep_state() needs a group endpoint of %s or %s",
                  UCT_O2M_BCAST_TL_NAME, UCT_O2M_INCAST_TL_NAME);
        if (status_p != NULL) {
            *status_p = UCS_ERR_INVALID_PARAM;
        }
        return UCT_O2M_EP_STATE_FAILED;
    }

    ep = ucs_derived_of(tl_ep, uct_o2m_group_ep_t);
    if ((ep->seg == NULL) && (ep->super.status == UCS_OK) &&
        !uct_o2m_group_is_root(ep) && !uct_o2m_group_try_attach(ep) &&
        (ep->wait_since == 0)) {
        /* The caller waits for the group from now on, as a sender that
         * tries to send would (opt-in PEER_TIMEOUT) */
        ep->wait_since = ucs_get_time();
    }

    if (status_p != NULL) {
        *status_p = ep->super.status;
    }

    if (ep->refused != UCS_OK) {
        return UCT_O2M_EP_STATE_REFUSED;
    } else if (ep->super.status != UCS_OK) {
        return UCT_O2M_EP_STATE_FAILED;
    }

    return (ep->seg != NULL) ? UCT_O2M_EP_STATE_READY :
                               UCT_O2M_EP_STATE_JOINING;
}

ucs_status_t uct_o2m_iface_query(uct_iface_h tl_iface,
                                 uct_o2m_iface_attr_t *attr)
{
    uct_o2m_iface_t *iface;

    if ((tl_iface == NULL) || (attr == NULL) ||
        (tl_iface->ops.iface_get_address != uct_o2m_iface_get_address)) {
        ucs_error("uct_o2m_iface_query() needs an %s or %s interface",
                  UCT_O2M_BCAST_TL_NAME, UCT_O2M_INCAST_TL_NAME);
        return UCS_ERR_INVALID_PARAM;
    }

    iface             = ucs_derived_of(tl_iface, uct_o2m_iface_t);
    attr->max_members = iface->config.max_members;
    attr->max_groups  = iface->config.max_groups;
    attr->max_short   = iface->config.elem_size - sizeof(uct_o2m_elem_t);
    attr->max_bcopy   = attr->max_short;
    attr->max_zcopy   = iface->cma ? iface->config.max_zcopy : 0;
    attr->fifo_depth  = iface->config.fifo_size;
    attr->ring_max    = iface->config.ring_max;
    attr->is_incast   = iface->is_incast;
    return UCS_OK;
}

size_t uct_o2m_group_seg_size(const uct_o2m_iface_attr_t *attr,
                              const uct_o2m_group_params_t *params)
{
    uct_o2m_group_seg_t hdr;

    memset(&hdr, 0, sizeof(hdr));
    hdr.is_incast = attr->is_incast;
    hdr.size      = params->size;
    hdr.depth     = attr->fifo_depth;
    hdr.mode      = (params->field_mask & UCT_O2M_GROUP_FIELD_MODE) ?
                    params->mode : UCT_O2M_MODE_BATCHED;
    hdr.op        = (params->field_mask & UCT_O2M_GROUP_FIELD_OP) ?
                    params->op : UCT_O2M_OP_GATHER;
    hdr.hdr_len   = (params->field_mask & UCT_O2M_GROUP_FIELD_HDR_LEN) ?
                    params->hdr_len : 0;

    /* What uct_o2m_group_create_seg() makes with that configuration */
    return attr->is_incast ?
           uct_o2m_incast_seg_layout(&hdr, attr->max_bcopy +
                                     sizeof(uct_o2m_elem_t), attr->ring_max) :
           uct_o2m_bcast_seg_layout(&hdr, attr->max_bcopy +
                                    sizeof(uct_o2m_elem_t));
}
