/**
 * ucx-o2m: the interface shared by sm_bcast and sm_incast: configuration,
 * its segment, peer segments, the group directory, progress.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_iface.h"
#include "o2m_group.h"
#include "o2m_check.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/string.h>
#include <uct/base/uct_md.h>

#include <string.h>
#include <stdlib.h>
#include <unistd.h>


ucs_config_field_t uct_o2m_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_o2m_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_sm_iface_config_table)},

    {"FIFO_SIZE", "64",
     "Elements of the ring of a group (rounded up to a power of 2): how many\n"
     "operations of one group can be in flight before the root (fan-out) or\n"
     "the senders (fan-in) get UCS_ERR_NO_RESOURCE.",
     ucs_offsetof(uct_o2m_iface_config_t, fifo_size), UCS_CONFIG_TYPE_UINT},

    /* SEG_SIZE, as UCX's mm transports call their FIFO element; inside the
     * plugin it is elem_size, segments being the shared memory files */
    {"SEG_SIZE", "8256",
     "Size of a ring element, a multiple of 64: the largest short/bcopy\n"
     "message is this minus 16 bytes (the default fits 8 KiB of payload and\n"
     "a protocol header); larger ones go through the single-copy zcopy path.",
     ucs_offsetof(uct_o2m_iface_config_t, elem_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"P2P_FIFO_SIZE", "64",
     "Elements of the receive FIFO of point-to-point endpoints (the ones UCP\n"
     "creates), shared by all the senders to this interface.",
     ucs_offsetof(uct_o2m_iface_config_t, p2p_fifo_size),
     UCS_CONFIG_TYPE_UINT},

    {"MAX_MEMBERS", "128",
     "Largest group size accepted by uct_o2m_ep_create().",
     ucs_offsetof(uct_o2m_iface_config_t, max_members), UCS_CONFIG_TYPE_UINT},

    {"MAX_GROUPS", "64",
     "Groups rooted at one interface at the same time.  The group directory\n"
     "has twice as many entries: the others hold destroyed groups whose\n"
     "members have not all joined yet (the oldest is given up when they are\n"
     "all taken).",
     ucs_offsetof(uct_o2m_iface_config_t, max_groups), UCS_CONFIG_TYPE_UINT},

    {"MAX_ZCOPY", "64m",
     "Largest zcopy message; receivers allocate private buffers up to this\n"
     "size (times the group size for a fan-in gather).",
     ucs_offsetof(uct_o2m_iface_config_t, max_zcopy),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"RING_MAX", "16m",
     "Largest ring of a group: a fan-in ring holds a slot per sender in each\n"
     "element, so large groups get fewer than FIFO_SIZE elements (at least\n"
     "2) to stay within this size.",
     ucs_offsetof(uct_o2m_iface_config_t, ring_max), UCS_CONFIG_TYPE_MEMUNITS},

    {"PEER_TIMEOUT", "inf",
     "Opt-in bound on waiting for a member that has not joined a group; inf\n"
     "(the default): wait as long as its process lives.  When set, a root\n"
     "whose operation has made no progress for this long while a member has\n"
     "not joined, and a member that has looked for the group for this long\n"
     "(a fan-out receiver from its creation, a fan-in sender from its first\n"
     "send or uct_o2m_ep_state() call), fail with UCS_ERR_TIMED_OUT;\n"
     "closing the interface waits this long at most for members of\n"
     "destroyed groups that have not joined.\n"
     "A member whose process exited is detected within CHECK_INTERVAL\n"
     "whatever this value.",
     ucs_offsetof(uct_o2m_iface_config_t, peer_timeout),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"CMA", "try",
     "Single-copy reads (process_vm_readv) of zcopy messages, the only way\n"
     "large messages travel without an intermediate copy:\n"
     " y   - required: opening the interface fails when they cannot work;\n"
     " n   - off: no zcopy is advertised (UCP and UCG use their copy paths)\n"
     "       and the process does not call prctl(PR_SET_PTRACER);\n"
     " try - probe at interface open (process_vm_readv on ourselves, the\n"
     "       process is dumpable, Yama ptrace_scope) and use them when the\n"
     "       probe passes; one log line says when it does not.\n"
     "With y or try, PR_SET_PTRACER_ANY lets the peers read this process\n"
     "under Yama ptrace_scope=1, as Open MPI's CMA path does.",
     ucs_offsetof(uct_o2m_iface_config_t, cma), UCS_CONFIG_TYPE_TERNARY},

    {"CHECK_INTERVAL", "50ms",
     "How often progress checks that the peers of its groups are alive.",
     ucs_offsetof(uct_o2m_iface_config_t, check_interval),
     UCS_CONFIG_TYPE_TIME},

    {NULL}
};


static size_t uct_o2m_iface_dir_size(unsigned max_groups)
{
    return ucs_align_up_pow2(max_groups * sizeof(uct_o2m_dir_entry_t),
                             UCT_O2M_LINE);
}

ucs_status_t uct_o2m_iface_query_common(uct_iface_h tl_iface,
                                        uct_iface_attr_t *attr)
{
    uct_o2m_iface_t *iface = ucs_derived_of(tl_iface, uct_o2m_iface_t);
    size_t max_data        = iface->config.elem_size - sizeof(uct_o2m_elem_t);

    uct_base_iface_query(&iface->super.super, attr);

    attr->iface_addr_len  = sizeof(uct_o2m_iface_addr_t);
    attr->device_addr_len = uct_sm_iface_get_device_addr_len();
    attr->ep_addr_len     = 0;
    attr->max_conn_priv   = 0;
    attr->cap.flags       = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                            UCT_IFACE_FLAG_AM_SHORT |
                            UCT_IFACE_FLAG_AM_BCOPY |
                            (iface->cma ? UCT_IFACE_FLAG_AM_ZCOPY : 0) |
                            UCT_IFACE_FLAG_PENDING |
                            UCT_IFACE_FLAG_CB_SYNC |
                            UCT_IFACE_FLAG_EP_CHECK;
    attr->cap.event_flags = 0;

    attr->cap.am.max_short       = max_data;
    attr->cap.am.max_bcopy       = max_data;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = iface->cma ? iface->config.max_zcopy : 0;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = 1;
    attr->cap.am.max_hdr         = UCT_O2M_MAX_ZCOPY_HDR;
    attr->cap.am.max_iov         = UCT_O2M_MAX_IOV;

    /* Advertised a bit slower than UCX's own posix/sysv transports, so that
     * UCP keeps those for point-to-point traffic unless UCX_TLS asks for
     * ours: the one-to-many groups are what this transport is for. */
    attr->latency             = ucs_linear_func_make(100e-9, 0);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = iface->super.config.bandwidth;
    attr->overhead            = 15e-9;
    attr->priority            = 0;
    return UCS_OK;
}

ucs_status_t uct_o2m_iface_get_address(uct_iface_h tl_iface,
                                       uct_iface_addr_t *addr)
{
    uct_o2m_iface_t *iface           = ucs_derived_of(tl_iface,
                                                      uct_o2m_iface_t);
    uct_o2m_iface_addr_t *iface_addr = (uct_o2m_iface_addr_t*)addr;

    iface_addr->pid    = iface->self.pid;
    iface_addr->seg_fd = iface->seg_fd;
    iface_addr->uuid   = iface->seg->uuid;
    return UCS_OK;
}

int uct_o2m_iface_is_reachable(const uct_iface_h tl_iface,
                               const uct_device_addr_t *dev_addr,
                               const uct_iface_addr_t *iface_addr)
{
    const uct_o2m_iface_addr_t *addr = (const void*)iface_addr;
    char path[64];

    if (!uct_sm_iface_is_reachable(tl_iface, dev_addr, iface_addr)) {
        return 0;
    }

    if (addr == NULL) {
        return 1;
    }

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", addr->pid, addr->seg_fd);
    return access(path, R_OK | W_OK) == 0;
}

ucs_status_t uct_o2m_iface_map_peer(uct_o2m_iface_t *iface,
                                    const uct_o2m_iface_addr_t *addr,
                                    uct_o2m_peer_seg_t **peer_p)
{
    uct_o2m_iface_seg_t hdr;
    uct_o2m_peer_seg_t *peer;
    ucs_status_t status;
    const char *why;

    ucs_list_for_each(peer, &iface->peer_segs, list) {
        if ((peer->addr.pid == addr->pid) && (peer->addr.uuid == addr->uuid)) {
            ++peer->refcount;
            *peer_p = peer;
            return UCS_OK;
        }
    }

    peer = ucs_calloc(1, sizeof(*peer), "o2m peer segment");
    if (peer == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_o2m_seg_attach(addr->pid, addr->seg_fd, (void**)&peer->seg,
                                &peer->size);
    if (status != UCS_OK) {
        /* An untrusted segment was already reported */
        if (status != UCS_ERR_INVALID_PARAM) {
            ucs_error("cannot map the segment of interface pid %d fd %d: %s",
                      addr->pid, addr->seg_fd, ucs_status_string(status));
        }
        goto err_free;
    }

    if (peer->size < sizeof(hdr)) {
        ucs_error("pid %d fd %d is not the o2m interface segment %" PRIx64,
                  addr->pid, addr->seg_fd, addr->uuid);
        status = UCS_ERR_UNREACHABLE;
        goto err_detach;
    }

    /* Everything used of the header is copied once and checked */
    memcpy(&hdr, peer->seg, sizeof(hdr));
    if ((hdr.magic != UCT_O2M_IFACE_MAGIC) || (hdr.uuid != addr->uuid) ||
        (hdr.version != UCT_O2M_LAYOUT_VERSION)) {
        ucs_error("pid %d fd %d is not the o2m interface segment %" PRIx64,
                  addr->pid, addr->seg_fd, addr->uuid);
        status = UCS_ERR_UNREACHABLE;
        goto err_detach;
    }

    status = uct_o2m_iface_geom_check(&hdr, peer->size, &peer->geom, &why);
    if (status != UCS_OK) {
        ucs_error("interface segment of pid %d fd %d (%zu bytes) is corrupt: "
                  "%s", addr->pid, addr->seg_fd, peer->size, why);
        goto err_detach;
    }

    peer->owner    = hdr.owner;
    peer->fifo     = UCS_PTR_BYTE_OFFSET(peer->seg, peer->geom.fifo_offset);
    peer->dir      = UCS_PTR_BYTE_OFFSET(peer->seg, peer->geom.dir_offset);
    peer->addr     = *addr;
    peer->refcount = 1;
    ucs_list_add_tail(&iface->peer_segs, &peer->list);
    *peer_p = peer;
    return UCS_OK;

err_detach:
    uct_o2m_seg_detach(peer->seg, peer->size);
err_free:
    ucs_free(peer);
    return status;
}

void uct_o2m_iface_unmap_peer(uct_o2m_iface_t *iface,
                              uct_o2m_peer_seg_t *peer)
{
    if (--peer->refcount > 0) {
        return;
    }

    ucs_list_del(&peer->list);
    uct_o2m_seg_detach(peer->seg, peer->size);
    ucs_free(peer);
}

ucs_status_t uct_o2m_iface_dir_add(uct_o2m_iface_t *iface, uint64_t group_id,
                                   int seg_fd, uint64_t uuid,
                                   ucs_status_t refused)
{
    uct_o2m_dir_entry_t *entry, *free_entry;
    unsigned i, in_use;

    /* Destroyed groups that are done give their entries (and ids) back */
    uct_o2m_iface_reap_retired(iface);

retry:
    free_entry = NULL;
    in_use     = 0;
    for (i = 0; i < iface->config.dir_entries; ++i) {
        entry = &iface->dir[i];
        if (entry->in_use) {
            ++in_use;
            if (entry->group_id == group_id) {
                /* Reusing the id says the destroyed group is over */
                if (uct_o2m_iface_evict_retired(iface, 1, group_id)) {
                    goto retry;
                }
                ucs_error("group id 0x%" PRIx64 " is already in use on this "
                          "interface", group_id);
                return UCS_ERR_ALREADY_EXISTS;
            }
        } else if (free_entry == NULL) {
            free_entry = entry;
        }
    }

    /* Destroyed groups waiting for late members do not count */
    if ((in_use - ucs_list_length(&iface->retired)) >=
        iface->config.max_groups) {
        ucs_error("interface already roots %u groups (MAX_GROUPS)",
                  iface->config.max_groups);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    /* The spare entries are full of them: the oldest is given up */
    if (free_entry == NULL) {
        if (uct_o2m_iface_evict_retired(iface, 0, 0)) {
            goto retry;
        }
        ucs_error("group directory of %u entries is full",
                  iface->config.dir_entries);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    free_entry->group_id = group_id;
    free_entry->seg_fd   = seg_fd;
    free_entry->uuid     = uuid;
    free_entry->refused  = refused;
    free_entry->seen     = 0;
    __atomic_store_n(&free_entry->in_use, 1, __ATOMIC_RELEASE);
    return UCS_OK;
}

unsigned uct_o2m_iface_dir_seen(uct_o2m_iface_t *iface, uint64_t group_id)
{
    unsigned i;

    for (i = 0; i < iface->config.dir_entries; ++i) {
        if (iface->dir[i].in_use && (iface->dir[i].group_id == group_id)) {
            /* Written by the members: only a count, compared, never used
             * as an index */
            return __atomic_load_n(&iface->dir[i].seen, __ATOMIC_ACQUIRE);
        }
    }

    return 0;
}

void uct_o2m_iface_dir_remove(uct_o2m_iface_t *iface, uint64_t group_id)
{
    unsigned i;

    for (i = 0; i < iface->config.dir_entries; ++i) {
        if (iface->dir[i].in_use && (iface->dir[i].group_id == group_id)) {
            __atomic_store_n(&iface->dir[i].in_use, 0, __ATOMIC_RELEASE);
            return;
        }
    }
}

void uct_o2m_iface_check_peers(uct_o2m_iface_t *iface)
{
    uct_o2m_ep_t *ep, *tmp;

    uct_o2m_iface_rx_check(iface);
    ucs_list_for_each_safe(ep, tmp, &iface->eps, list) {
        if (ep->status != UCS_OK) {
            continue;
        }

        ep->ops->check(ep, 0);
    }
}

unsigned uct_o2m_iface_progress(uct_iface_h tl_iface)
{
    uct_o2m_iface_t *iface = ucs_derived_of(tl_iface, uct_o2m_iface_t);
    uct_o2m_ep_t *ep, *tmp;
    unsigned count;
    ucs_time_t now;

    /* The receive FIFO is mostly empty: look at its head here rather than
     * pay a call for it on every poll */
    count = uct_o2m_elem_ready(uct_o2m_iface_fifo_elem(iface, iface->rx_tail),
                               iface->rx_tail) ?
            uct_o2m_iface_rx_progress(iface) : 0;

    ucs_list_for_each_safe(ep, tmp, &iface->eps, list) {
        if (ep->status == UCS_OK) {
            count += ep->ops->progress(ep);
        }
    }

    /* Reading the clock on every idle call would slow the polling down */
    if ((count == 0) && ((++iface->idle_polls % UCT_O2M_IDLE_POLLS) == 0)) {
        now = ucs_get_time();
        if (now >= iface->next_check) {
            iface->next_check = now + iface->config.check_interval;
            uct_o2m_iface_check_peers(iface);
            uct_o2m_iface_reap_retired(iface);
        }
    }

    return count;
}

ucs_status_t uct_o2m_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                 uct_completion_t *comp)
{
    uct_o2m_iface_t *iface = ucs_derived_of(tl_iface, uct_o2m_iface_t);
    uct_o2m_ep_t *ep;
    ucs_status_t status;

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_list_for_each(ep, &iface->eps, list) {
        status = uct_o2m_ep_flush(&ep->super.super, flags, NULL);
        if (status != UCS_OK) {
            return status;
        }
    }

    return UCS_OK;
}




/* ------------------------------------------------------------------------ */
/* Interface                                                               */

/* Decide whether the single-copy paths are used */
static ucs_status_t uct_o2m_iface_cma_init(uct_o2m_iface_t *iface,
                                           ucs_ternary_auto_value_t mode)
{
    const char *tl_name = uct_o2m_tl_name(iface->is_incast);
    static int logged  = 0;
    const char *why;

    iface->cma = 0;
    if (mode == UCS_NO) {
        return UCS_OK;
    }

    if (uct_o2m_cma_probe(&why) != UCS_OK) {
        if (mode == UCS_YES) {
            ucs_error("%s: CMA=y but single-copy reads cannot work: %s",
                      tl_name, why);
            return UCS_ERR_UNSUPPORTED;
        }
        if (!logged) {
            logged = 1;
            ucs_diag("%s: single-copy reads disabled (%s); large messages "
                     "are copied", tl_name, why);
        }
        return UCS_OK;
    }

    /* Only for Yama ptrace_scope=1: peers of ours may read our buffers */
    uct_o2m_cma_allow_peers();
    iface->cma = 1;
    return UCS_OK;
}

static unsigned uct_o2m_pow2_config(const char *name, unsigned value)
{
    unsigned rounded = ucs_roundup_pow2(ucs_max(value, 2));

    if (rounded != value) {
        ucs_debug("%s %u rounded up to %u", name, value, rounded);
    }
    return rounded;
}

UCS_CLASS_INIT_FUNC(uct_o2m_iface_t, uct_iface_ops_t *ops, uct_md_h md,
                    uct_worker_h worker, const uct_iface_params_t *params,
                    const uct_iface_config_t *tl_config, int is_incast)
{
    uct_o2m_iface_config_t *config = ucs_derived_of(tl_config,
                                                    uct_o2m_iface_config_t);
    size_t dir_size, fifo_size, hdr_size;
    ucs_status_t status;
    char name[64];

    UCS_CLASS_CALL_SUPER_INIT(uct_sm_iface_t, ops, &uct_base_iface_internal_ops,
                              md, worker, params, tl_config);

    if ((config->elem_size < 1024) || (config->elem_size > UINT32_MAX) ||
        (config->elem_size % UCT_O2M_LINE)) {
        ucs_error("SEG_SIZE %zu must be a multiple of %d between 1k and 4g",
                  config->elem_size, UCT_O2M_LINE);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->max_members < 2) || (config->max_groups < 1) ||
        (config->max_groups > 65536) || (config->max_members > 65536)) {
        ucs_error("MAX_MEMBERS %u must be in 2..65536, MAX_GROUPS %u in "
                  "1..65536", config->max_members, config->max_groups);
        return UCS_ERR_INVALID_PARAM;
    }

    self->is_incast             = is_incast;
    self->config.fifo_size      = uct_o2m_pow2_config("FIFO_SIZE",
                                                      config->fifo_size);
    self->config.p2p_fifo_size  = uct_o2m_pow2_config("P2P_FIFO_SIZE",
                                                      config->p2p_fifo_size);
    self->config.elem_size       = config->elem_size;
    self->config.max_members    = config->max_members;
    self->config.max_groups     = config->max_groups;
    /* As many spare entries for destroyed groups waiting for members */
    self->config.dir_entries    = ucs_min(2 * config->max_groups,
                                          UCT_O2M_CHECK_MAX_GROUPS);
    self->config.max_zcopy      = config->max_zcopy;
    self->config.ring_max       = config->ring_max;
    self->config.peer_timeout   = (config->peer_timeout == UCS_TIME_AUTO) ?
                                  UCS_TIME_INFINITY : config->peer_timeout;
    self->config.check_interval = ucs_time_from_sec(config->check_interval);
    self->next_check            = 0;
    self->idle_polls            = 0;
    self->rx_tail               = 0;
    self->rx_dropped            = 0;
    self->rx_buf[0]             = NULL;
    self->rx_buf[1]             = NULL;
    self->rx_buf_size[0]        = 0;
    self->rx_buf_size[1]        = 0;
    ucs_list_head_init(&self->peer_segs);
    ucs_list_head_init(&self->eps);
    ucs_list_head_init(&self->retired);
    uct_o2m_proc_self(&self->self);

    status = uct_o2m_iface_cma_init(self, config->cma);
    if (status != UCS_OK) {
        return status;
    }

    self->rx_stall.watch = NULL;
    status = uct_o2m_watch_table_create(&self->watches);
    if (status != UCS_OK) {
        return status;
    }

    hdr_size       = sizeof(uct_o2m_iface_seg_t);
    dir_size       = uct_o2m_iface_dir_size(self->config.dir_entries);
    fifo_size      = (size_t)self->config.p2p_fifo_size *
                     self->config.elem_size;
    self->seg_size = hdr_size + dir_size + fifo_size;

    ucs_snprintf_safe(name, sizeof(name), "ucx-o2m-%s-%d",
                      is_incast ? "incast" : "bcast", self->self.pid);
    status = uct_o2m_seg_create(name, self->seg_size, &self->seg_fd,
                                (void**)&self->seg);
    if (status != UCS_OK) {
        uct_o2m_watch_table_destroy(self->watches);
        return status;
    }

    /* The segment is zero-filled: a FIFO element with seq 0 is empty */
    self->seg->uuid        = ucs_generate_uuid((uintptr_t)self);
    self->seg->version     = UCT_O2M_LAYOUT_VERSION;
    self->seg->fifo_depth  = self->config.p2p_fifo_size;
    self->seg->elem_size   = self->config.elem_size;
    self->seg->max_groups  = self->config.dir_entries;
    self->seg->dir_offset  = hdr_size;
    self->seg->fifo_offset = hdr_size + dir_size;
    self->seg->owner       = self->self;
    self->seg->head        = 0;
    self->seg->tail        = 0;
    self->dir              = UCS_PTR_BYTE_OFFSET(self->seg, hdr_size);
    self->fifo             = UCS_PTR_BYTE_OFFSET(self->seg,
                                                 self->seg->fifo_offset);
    __atomic_store_n(&self->seg->magic, UCT_O2M_IFACE_MAGIC,
                     __ATOMIC_RELEASE);

    ucs_debug("%s iface %p: segment fd %d, %zu bytes",
              uct_o2m_tl_name(is_incast), self, self->seg_fd, self->seg_size);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_iface_t)
{
    uct_o2m_peer_seg_t *peer, *tmp;

    uct_base_iface_progress_disable(&self->super.super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    if (!ucs_list_is_empty(&self->eps)) {
        ucs_warn("%s iface %p closed with %zu endpoints still open",
                 uct_o2m_tl_name(self->is_incast), self,
                 ucs_list_length(&self->eps));
    }

    /* Slow members of the groups we rooted may still have to join them */
    uct_o2m_iface_drain_retired(self);

    ucs_list_for_each_safe(peer, tmp, &self->peer_segs, list) {
        ucs_list_del(&peer->list);
        uct_o2m_seg_detach(peer->seg, peer->size);
        ucs_free(peer);
    }

    ucs_free(self->rx_buf[0]);
    ucs_free(self->rx_buf[1]);
    uct_o2m_seg_destroy(self->seg_fd, self->seg, self->seg_size);
    uct_o2m_watch_put(self->watches, self->rx_stall.watch);
    uct_o2m_watch_table_destroy(self->watches);
}

UCS_CLASS_DEFINE(uct_o2m_iface_t, uct_sm_iface_t);
