/**
 * ucx-o2m: liveness of group endpoints: members whose process died, that
 * left before what the root waits for, or did not join in PEER_TIMEOUT; a
 * root that failed, closed or died.  Called from progress every
 * CHECK_INTERVAL and from uct_ep_check().
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_group.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>


void uct_o2m_group_fail(uct_o2m_group_ep_t *ep, ucs_status_t status,
                        const char *why, unsigned member)
{
    ucs_diag("group 0x%" PRIx64 " member %u: %s (member %u): %s",
             ep->group_id, ep->my_index, why, member,
             ucs_status_string(status));

    /* Tell the other members, who may be waiting on us */
    if ((ep->seg != NULL) && uct_o2m_group_is_root(ep)) {
        __atomic_store_n(&ep->seg->failed, status, __ATOMIC_RELEASE);
    }
    uct_o2m_ep_set_failed(&ep->super, status);
}

/*
 * Whether the process of member @a i is known to have exited: from its
 * member line once it joined, else from the process the root was given
 * (unknown: 0).  Not being able to watch it is no exit.
 */
int uct_o2m_group_member_exited(uct_o2m_iface_t *iface,
                                uct_o2m_watch_t **watches,
                                const uct_o2m_proc_t *procs,
                                const uct_o2m_member_t *member, unsigned i,
                                uint32_t state)
{
    uct_o2m_proc_t proc;

    if (watches[i] == NULL) {
        if (state != UCT_O2M_MEMBER_FREE) {
            proc = member->proc;
        } else if ((procs != NULL) && (procs[i].pid != 0)) {
            proc = procs[i];
        } else {
            return 0;
        }

        if (uct_o2m_watch_get(iface->watches, &proc, &watches[i]) != UCS_OK) {
            return 0;
        }
    }

    return uct_o2m_watch_has_exited(watches[i]);
}

/*
 * Opt-in PEER_TIMEOUT: whether the current wait (@a waiting) has seen no
 * progress (@a mark unchanged) for longer than the timeout.  A wait starts
 * when an operation needs a member, not when the endpoint was created.
 */
static int uct_o2m_group_wait_expired(uct_o2m_group_ep_t *ep, int waiting,
                                      uint64_t mark)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    ucs_time_t now;

    if (!waiting || (iface->config.peer_timeout == UCS_TIME_INFINITY)) {
        ep->wait_since = 0;
        return 0;
    }

    now = ucs_get_time();
    if ((ep->wait_since == 0) || (mark != ep->wait_mark)) {
        ep->wait_since = now;
        ep->wait_mark  = mark;
        return 0;
    }

    return (now - ep->wait_since) > iface->config.peer_timeout;
}

static void uct_o2m_group_check_members(uct_o2m_group_ep_t *ep, int stalled)
{
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    const uct_o2m_group_ops_t *ops = uct_o2m_group_ops(ep);
    int waiting       = stalled || ops->root_waiting(ep);
    int unjoined      = -1;
    uct_o2m_member_t *member;
    uint32_t state;
    unsigned i;

    for (i = 0; i < ep->size; ++i) {
        if (i == ep->my_index) {
            continue;
        }

        member = &ep->members[i];
        state  = __atomic_load_n(&member->state, __ATOMIC_ACQUIRE);
        switch (state) {
        case UCT_O2M_MEMBER_ATTACHED:
            if (uct_o2m_group_member_exited(iface, ep->watches, ep->procs,
                                            member, i, state)) {
                uct_o2m_group_fail(ep, UCS_ERR_CONNECTION_RESET,
                                   "member process died", i);
                return;
            }
            break;
        case UCT_O2M_MEMBER_LEFT:
            /* Only a member that left before consuming (fan-out) or
             * contributing (fan-in) what the root waits for has failed */
            if (ops->left_early(ep, __atomic_load_n(&member->done,
                                                    __ATOMIC_RELAXED),
                                waiting)) {
                uct_o2m_group_fail(ep, UCS_ERR_CONNECTION_RESET,
                                   "member left the group before consuming "
                                   "or contributing what the root waits for",
                                   i);
                return;
            }
            break;
        default:
            if (waiting &&
                uct_o2m_group_member_exited(iface, ep->watches, ep->procs,
                                            member, i, state)) {
                uct_o2m_group_fail(ep, UCS_ERR_CONNECTION_RESET,
                                   "member process exited before joining", i);
                return;
            }
            if (unjoined < 0) {
                unjoined = i;
            }
            break;
        }
    }

    if (uct_o2m_group_wait_expired(ep, waiting && (unjoined >= 0),
                                   ops->root_mark(ep))) {
        uct_o2m_group_fail(ep, UCS_ERR_TIMED_OUT,
                           "member did not join in PEER_TIMEOUT", unjoined);
    }
}

void uct_o2m_group_check(uct_o2m_ep_t *o2m_ep, int stalled)
{
    uct_o2m_group_ep_t *ep = ucs_derived_of(o2m_ep, uct_o2m_group_ep_t);
    uct_o2m_iface_t *iface = ucs_derived_of(ep->super.super.super.iface,
                                            uct_o2m_iface_t);
    ucs_status_t failed;

    if (ep->super.status != UCS_OK) {
        return;
    }

    if (uct_o2m_group_is_root(ep)) {
        uct_o2m_group_check_members(ep, stalled);
        return;
    }

    if (ep->seg == NULL) {
        if (uct_o2m_group_try_attach(ep) || (ep->super.status != UCS_OK)) {
            return;
        }

        if (uct_o2m_watch_has_exited(ep->watches[ep->root_index])) {
            uct_o2m_group_fail(ep, UCS_ERR_CONNECTION_RESET,
                               "root process exited before the member found "
                               "the group", ep->root_index);
        } else if ((ep->wait_since != 0) &&
                   (iface->config.peer_timeout != UCS_TIME_INFINITY) &&
                   ((ucs_get_time() - ep->wait_since) >
                    iface->config.peer_timeout)) {
            uct_o2m_group_fail(ep, UCS_ERR_TIMED_OUT,
                               "root did not create the group in "
                               "PEER_TIMEOUT", ep->root_index);
        }
        return;
    }

    failed = __atomic_load_n(&ep->seg->failed, __ATOMIC_ACQUIRE);
    if (failed != UCS_OK) {
        /* Written by the root: pass on error codes only */
        if ((failed > 0) || (failed <= UCS_ERR_LAST)) {
            failed = UCS_ERR_INVALID_PARAM;
        }
        uct_o2m_group_fail(ep, failed, "root reported a failed group",
                           ep->root_index);
    } else if (__atomic_load_n(&ep->seg->closed, __ATOMIC_ACQUIRE)) {
        /* Written by the root before "closed" */
        uct_o2m_group_ops(ep)->root_closed(
                ep, __atomic_load_n(&ep->seg->final_seq, __ATOMIC_RELAXED),
                stalled);
    } else if (uct_o2m_watch_has_exited(ep->watches[ep->root_index])) {
        uct_o2m_group_fail(ep, UCS_ERR_CONNECTION_RESET, "root process died",
                           ep->root_index);
    }
}
