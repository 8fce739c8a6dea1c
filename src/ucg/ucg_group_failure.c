/**
 * ucx-o2m: UCG group failures: liveness of the members on this real host,
 * UCP's error handling for the others, the force-close of an endpoint.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_group_int.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>


/* Shared memory within a topology host needs one real host */
int ucg_group_hosts_are_real(const ucg_group_t *group)
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
ucs_status_t ucg_group_watch_members(ucg_group_t *group)
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

void ucg_group_unwatch_members(ucg_group_t *group)
{
    unsigned i;

    for (i = 0; i < group->size; ++i) {
        uct_o2m_watch_put(group->context->watches, group->members[i].watch);
        group->members[i].watch = NULL;
    }
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
            ucg_group_member_failed(group, i, 0, UCS_ERR_CONNECTION_RESET);
            break;
        }
    }

    return group->failed;
}

ucs_status_t ucg_group_check_now(ucg_group_h group)
{
    group->next_check = 0;
    return ucg_group_check(group);
}

void ucg_group_failure_log(ucg_group_h group)
{
    unsigned rank = group->failure.rank;

    if (!group->failure.unlogged) {
        return;
    }

    group->failure.unlogged = 0;
    if (group->failure.conn) {
        ucs_error("UCG group %u rank %u: the connection to rank %u (pid %d, "
                  "another host) failed: %s", group->id, group->rank, rank,
                  group->members[rank].pid, ucs_status_string(group->failed));
    } else {
        ucs_error("UCG group %u rank %u: rank %u (pid %d) has exited",
                  group->id, group->rank, rank, group->members[rank].pid);
    }
}

void ucg_group_member_failed(ucg_group_h group, unsigned rank, int conn,
                             ucs_status_t status)
{
    if (group->failed != UCS_OK) {
        return;
    }

    group->failed           = status;
    group->failure.conn     = conn;
    group->failure.rank     = rank;
    group->failure.unlogged = 1;
    if (!group->destroying && !ucs_list_is_empty(&group->colls)) {
        ucg_group_failure_log(group);
        return;
    }

    ucs_debug("UCG group %u rank %u: rank %u %s (%s) while no collective "
              "was started: reported if the group is used again", group->id,
              group->rank, rank, conn ? "lost its connection" : "exited",
              ucs_status_string(status));
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
