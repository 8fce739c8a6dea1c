/**
 * ucx-o2m: retired groups: a root that destroys its endpoint while members
 * have not joined (or not seen its refusal) keeps the segment and its
 * directory entry on the interface until they have, or their processes
 * exited; the directory and interface close give them up when they must.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_group.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <unistd.h>

/* Release a retired group; its directory entry is removed unless
 * @a keep_entry */
static void uct_o2m_retired_release(uct_o2m_iface_t *iface,
                                    uct_o2m_retired_group_t *rg,
                                    int keep_entry)
{
    unsigned i;

    ucs_list_del(&rg->list);
    if (!keep_entry) {
        uct_o2m_iface_dir_remove(iface, rg->group_id);
    }
    if (rg->seg != NULL) {
        uct_o2m_seg_destroy(rg->seg_fd, rg->seg, rg->seg_size);
    }
    for (i = 0; i < rg->size; ++i) {
        uct_o2m_watch_put(iface->watches, rg->watches[i]);
    }
    ucs_free(rg->watches);
    ucs_free(rg->procs);
    ucs_free(rg);
}

static void uct_o2m_retired_destroy(uct_o2m_iface_t *iface,
                                    uct_o2m_retired_group_t *rg)
{
    uct_o2m_retired_release(iface, rg, 0);
}

/*
 * The first member of a destroyed group that may still have to join it:
 * not joined and alive, or (unless @a known_only) not joined with an
 * unknown process.  -1 when every member has joined or exited: those who
 * joined map the segment themselves, the root's copy is no longer needed.
 */
static int uct_o2m_retired_waits_for(uct_o2m_iface_t *iface,
                                     uct_o2m_retired_group_t *rg,
                                     int known_only)
{
    uct_o2m_member_t *member;
    uint32_t state;
    unsigned i;

    /* A refusal that every member saw has told all it had to */
    if ((rg->seg == NULL) &&
        (uct_o2m_iface_dir_seen(iface, rg->group_id) >= rg->size - 1)) {
        return -1;
    }

    for (i = 0; i < rg->size; ++i) {
        member = (rg->members != NULL) ? &rg->members[i] : NULL;
        state  = (member != NULL) ?
                 __atomic_load_n(&member->state, __ATOMIC_ACQUIRE) :
                 UCT_O2M_MEMBER_FREE;
        if ((i == rg->root_index) || (state != UCT_O2M_MEMBER_FREE)) {
            continue;
        }

        if ((rg->procs == NULL) || (rg->procs[i].pid == 0)) {
            if (!known_only) {
                return i;
            }
        } else if (!uct_o2m_group_member_exited(iface, rg->watches, rg->procs,
                                                member, i, state)) {
            return i;
        }
    }

    return -1;
}

static unsigned uct_o2m_iface_reap(uct_o2m_iface_t *iface, int known_only)
{
    uct_o2m_retired_group_t *rg, *tmp;
    unsigned count = 0;

    ucs_list_for_each_safe(rg, tmp, &iface->retired, list) {
        if (uct_o2m_retired_waits_for(iface, rg, known_only) < 0) {
            ucs_debug("group 0x%" PRIx64 ": every member joined or exited, "
                      "segment released", rg->group_id);
            uct_o2m_retired_destroy(iface, rg);
            ++count;
        }
    }

    return count;
}

unsigned uct_o2m_iface_reap_retired(uct_o2m_iface_t *iface)
{
    return uct_o2m_iface_reap(iface, 0);
}

int uct_o2m_iface_evict_retired(uct_o2m_iface_t *iface, int by_id,
                                uint64_t group_id)
{
    uct_o2m_retired_group_t *rg, *victim = NULL;

    ucs_list_for_each(rg, &iface->retired, list) {
        if (by_id ? (rg->group_id == group_id) :
                    (uct_o2m_retired_waits_for(iface, rg, 1) < 0)) {
            victim = rg;
            break;
        }
    }

    /* Else the oldest: the directory is bounded */
    if (!by_id && (victim == NULL) && !ucs_list_is_empty(&iface->retired)) {
        victim = ucs_list_head(&iface->retired, uct_o2m_retired_group_t,
                               list);
    }

    if (victim == NULL) {
        return 0;
    }

    ucs_diag("group 0x%" PRIx64 ": destroyed %s given up for %s before "
             "member %d %s", victim->group_id,
             (victim->seg == NULL) ? "refusal" : "group",
             by_id ? "a new group with its id" : "a new group",
             uct_o2m_retired_waits_for(iface, victim, 0),
             (victim->seg == NULL) ? "saw it" : "joined");
    uct_o2m_retired_destroy(iface, victim);
    return 1;
}

/* A close that waits this long for late members says so, once */
#define UCT_O2M_DRAIN_NOTICE_SEC 10.0

void uct_o2m_iface_drain_retired(uct_o2m_iface_t *iface)
{
    ucs_time_t timeout = iface->config.peer_timeout;
    ucs_time_t start   = ucs_get_time();
    int told           = 0;
    uct_o2m_retired_group_t *rg, *tmp;
    int member;

    /* A refusal holds no segment: its entry stays listed, for the members
     * that have this segment mapped and have not looked yet */
    ucs_list_for_each_safe(rg, tmp, &iface->retired, list) {
        if (rg->seg == NULL) {
            uct_o2m_retired_release(iface, rg, 1);
        }
    }

    /* Members of unknown process cannot be told from ones that will never
     * come: not waited for (see UCT_O2M_GROUP_FIELD_MEMBER_PIDS) */
    while ((uct_o2m_iface_reap(iface, 1), !ucs_list_is_empty(&iface->retired))
           && ((timeout == UCS_TIME_INFINITY) ||
               ((ucs_get_time() - start) <= timeout))) {
        /* Not an error, but whoever sees the close wait should know why */
        if (!told && ((ucs_get_time() - start) >
                      ucs_time_from_sec(UCT_O2M_DRAIN_NOTICE_SEC))) {
            rg     = ucs_list_head(&iface->retired, uct_o2m_retired_group_t,
                                   list);
            member = uct_o2m_retired_waits_for(iface, rg, 1);
            ucs_warn("interface close waits for %zu destroyed group(s) "
                     "whose members are alive and have not joined (group "
                     "0x%" PRIx64 " member %d, pid %d); PEER_TIMEOUT bounds "
                     "this wait", ucs_list_length(&iface->retired),
                     rg->group_id, member,
                     (member >= 0) ? rg->procs[member].pid : 0);
            told = 1;
        }
        usleep(1000);
    }

    ucs_list_for_each_safe(rg, tmp, &iface->retired, list) {
        member = uct_o2m_retired_waits_for(iface, rg, 0);
        if (member < 0) {
            uct_o2m_retired_destroy(iface, rg);
            continue;
        }
        ucs_diag("group 0x%" PRIx64 ": interface closed before member %d "
                 "joined the destroyed group (%s)", rg->group_id, member,
                 ((rg->procs != NULL) && (rg->procs[member].pid != 0)) ?
                 "PEER_TIMEOUT" : "process unknown");
        uct_o2m_retired_destroy(iface, rg);
    }
}

/*
 * The root leaves its group: members that have not joined yet may still be
 * on their way, so the segment and its directory entry are kept (retired)
 * until they joined or exited.  What the root sent or delivered is final.
 */
void uct_o2m_group_root_close(uct_o2m_group_ep_t *ep)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    uct_o2m_retired_group_t *rg;

    /* A refusal (no segment) that every member saw is over */
    if (ep->seg == NULL) {
        if (uct_o2m_iface_dir_seen(iface, ep->group_id) >=
            uct_o2m_group_num_peers(ep)) {
            goto destroy;
        }
    } else {
        ep->seg->final_seq = uct_o2m_group_done(ep);
        __atomic_store_n(&ep->seg->closed, 1, __ATOMIC_RELEASE);
    }

    rg = ucs_malloc(sizeof(*rg), "o2m retired group");
    if (rg == NULL) {
        ucs_diag("group 0x%" PRIx64 ": no memory to keep it for members "
                 "that have not joined", ep->group_id);
        goto destroy;
    }

    rg->group_id   = ep->group_id;
    rg->seg        = ep->seg;
    rg->seg_size   = ep->seg_size;
    rg->seg_fd     = ep->seg_fd;
    rg->size       = ep->size;
    rg->root_index = ep->root_index;
    rg->members    = (ep->seg != NULL) ? ep->members : NULL;
    rg->watches    = ep->watches;
    rg->procs      = ep->procs;
    ep->watches    = NULL;
    ep->procs      = NULL;
    if (uct_o2m_retired_waits_for(iface, rg, 0) < 0) {
        ep->watches = rg->watches;
        ep->procs  = rg->procs;
        ucs_free(rg);
        goto destroy;
    }

    ucs_list_add_tail(&iface->retired, &rg->list);
    ucs_debug("group 0x%" PRIx64 ": root left, %s kept for members that "
              "have not %s", ep->group_id,
              (ep->seg == NULL) ? "refusal" : "group",
              (ep->seg == NULL) ? "seen it" : "joined");
    return;

destroy:
    uct_o2m_iface_dir_remove(iface, ep->group_id);
    if (ep->seg != NULL) {
        uct_o2m_seg_destroy(ep->seg_fd, ep->seg, ep->seg_size);
    }
}
