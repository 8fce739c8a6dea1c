/**
 * UCG executor: aborts.  A member that cannot run a collective tells the
 * others, so that nobody waits for it (docs/ucg.md, "Failures").
 */
#include "ucg_coll.h"

#include <ucs/debug/log.h>
#include <string.h>


/*
 * A collective that fails on one member only (out of memory at its start,
 * a send UCP refused, a start on a group that failed here) would leave the
 * other members waiting for it.  That member sends every other member an
 * abort message (a tagged message with a tag no collective uses, found by
 * a probe at the liveness checks of a group with started collectives:
 * nothing is posted on the way of the collectives), and on every member
 * the collectives of the group from that one on fail: what the members of
 * the failed collective had already sent (a fan-in slot filled by some
 * members only, messages nobody will receive) would be taken by a later
 * collective.  Earlier collectives (nonblocking, still running) are not
 * affected.  A member whose collectives fail by an abort message sends
 * none for them; one whose collective failed here sends one at each later
 * start too, for members that completed the failed collective without it
 * (a bcast leaf) before its first abort reached them.
 */
typedef struct ucg_coll_abort_msg {
    uint32_t epoch;    /* of the group (its id and the seq: in the tag) */
    uint32_t rank;     /* the sender's rank in the group */
    int32_t  status;   /* its error, for the log line */
} UCS_S_PACKED ucg_coll_abort_msg_t;

/* Tag of the abort of collective @a seq of group @a id: phase, step and
 * source all ones (no plan has 16 phases: UCG_PLAN_MAX_PHASES) */
static ucp_tag_t ucg_coll_abort_tag(uint16_t id, uint16_t seq)
{
    UCS_STATIC_ASSERT(UCG_PLAN_MAX_PHASES < 16);
    return ((uint64_t)id << 48) | ((uint64_t)seq << 32) |
           UCS_MASK(UCG_TAG_SRC_BITS + UCG_TAG_STEP_BITS + 4);
}

/* Collectives from @a seq on fail (or from an earlier one already) */
static void ucg_coll_abort_from(ucg_group_h group, uint16_t seq, int local)
{
    if (!group->aborted ||
        ((uint16_t)(seq - group->abort_seq) >= UCG_COLL_SEQ_HALF)) {
        group->aborted     = 1;
        group->abort_seq   = seq;
        group->abort_local = local;
    }
}

static void ucg_coll_abort_sent(void *request, ucs_status_t status,
                                void *user_data)
{
    ucs_free(user_data);
    ucp_request_free(request);
}

void ucg_coll_abort_send(ucg_group_h group, uint16_t seq, ucs_status_t reason)
{
    ucp_request_param_t param;
    ucg_coll_abort_msg_t *msg;
    ucs_status_ptr_t req;
    unsigned r;
    ucp_ep_h ep;

    ucg_coll_abort_from(group, seq, 1);
    for (r = 0; r < group->size; ++r) {
        if ((r == group->rank) || ucg_group_member_exited(group, r) ||
            (ucg_group_p2p_ep(group, r, &ep) != UCS_OK)) {
            continue;
        }

        msg = ucs_malloc(sizeof(*msg), "ucg abort");
        if (msg == NULL) {
            ucs_error("ucg group %u: out of memory for the abort of seq %u; "
                      "members may wait for this one", group->id, seq);
            return;
        }
        msg->epoch  = group->epoch;
        msg->rank   = group->rank;
        msg->status = reason;

        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send      = ucg_coll_abort_sent;
        param.user_data    = msg;
        req = ucp_tag_send_nbx(ep, msg, sizeof(*msg),
                               ucg_coll_abort_tag(group->id, seq), &param);
        if (UCS_PTR_IS_ERR(req)) {
            ucs_diag("ucg group %u: abort of seq %u to rank %u: %s",
                     group->id, seq, r,
                     ucs_status_string(UCS_PTR_STATUS(req)));
            ucs_free(msg);
        } else if (req == NULL) {
            ucs_free(msg);
        } /* else ucg_coll_abort_sent releases both */
    }
}

/* Any seq, any sender */
void ucg_coll_abort_probe(ucg_group_h group)
{
    ucp_worker_h worker     = group->context->ucp_worker;
    const ucp_tag_t mask    = ~((ucp_tag_t)UCS_MASK(16) << 32);
    ucp_request_param_t param;
    ucg_coll_abort_msg_t msg;
    ucp_tag_recv_info_t info;
    ucp_tag_message_h probe;
    ucs_status_ptr_t req;
    ucs_status_t status;
    uint16_t seq;

    for (;;) {
        probe = ucp_tag_probe_nb(worker, ucg_coll_abort_tag(group->id, 0),
                                 mask, 1, &info);
        if (probe == NULL) {
            return;
        }

        memset(&param, 0, sizeof(param));
        memset(&msg, 0, sizeof(msg));
        req = ucp_tag_msg_recv_nbx(worker, &msg, sizeof(msg), probe, &param);
        if (UCS_PTR_IS_PTR(req)) {
            /* an eager message of a few bytes: complete or about to be */
            do {
                ucp_worker_progress(worker);
                status = ucp_request_check_status(req);
            } while (status == UCS_INPROGRESS);
            ucp_request_free(req);
        } else {
            status = UCS_PTR_STATUS(req);
        }

        seq = (uint16_t)(info.sender_tag >> 32);
        if ((status != UCS_OK) || (info.length != sizeof(msg))) {
            ucs_error("ucg group %u: dropping an abort message of %zu "
                      "bytes (expected %zu): %s", group->id, info.length,
                      sizeof(msg), ucs_status_string(status));
            continue;
        }

        /* one of an earlier group with this id, or from nobody */
        if ((msg.epoch != group->epoch) || (msg.rank >= group->size) ||
            (msg.rank == group->rank)) {
            ucs_debug("ucg group %u: dropping an abort of epoch %u rank %u",
                      group->id, msg.epoch, msg.rank);
            continue;
        }

        if (!group->aborted) {
            ucs_error("UCG group %u rank %u: rank %u could not run "
                      "collective seq %u (%s): it and the later ones fail",
                      group->id, group->rank, msg.rank, seq,
                      ucs_status_string((ucs_status_t)msg.status));
        }
        ucg_coll_abort_from(group, seq, 0);
    }
}

void ucg_group_abort_next(ucg_group_h group, ucs_status_t reason)
{
    uint16_t seq = group->next_seq++;

    ucs_diag("ucg group %u rank %u: seq %u is not run here (%s); the other "
             "members are told", group->id, group->rank, seq,
             ucs_status_string(reason));
    ucg_coll_abort_send(group, seq, reason);
}
