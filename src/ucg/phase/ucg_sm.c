/**
 * UCG host-local phases: what they share.
 *
 * Every SM phase moves a "stream" of bytes in fragments of at most
 * phase->frag_size bytes, each behind a ucg_sm_hdr_t, on the sm_bcast or
 * sm_incast endpoints of its set (the phases: ucg_sm_bcast.c,
 * ucg_sm_fanin.c, ucg_sm_allreduce.c, ucg_sm_cma.c; their endpoints:
 * ucg_sm_gate.c).  A stream of 0 bytes is one message with only the header
 * (barriers).  Here: the stream (begin, send, progress), the order of
 * contributions to fan-in endpoints, and the receive path of the sm
 * interfaces (the AM handler, messages that arrive early).
 *
 * Fan-in rounds are formed by the transport from the k-th contribution of
 * every sender, so all senders must contribute to a fan-in endpoint in the
 * same order.  Collectives start in the same order on every member, so a
 * collective contributes to an endpoint only when no collective started
 * before it still has to: contributions then go in start order everywhere.
 * Fan-out needs no such rule: messages carry their collective's sequence.
 */
#include "ucg_sm.h"

#include <ucs/debug/log.h>
#include <string.h>


/* Which fan-in endpoint a member contributes to in a phase */
typedef struct ucg_sm_key {
    unsigned        root;
    uct_o2m_mode_t  mode;
    uct_o2m_op_t    op;
    uct_o2m_dtype_t dtype;
} ucg_sm_key_t;

typedef struct ucg_sm_key_arg {
    ucg_sm_key_t key;
    int          found;
} ucg_sm_key_arg_t;

typedef struct ucg_sm_pack_arg {
    ucg_coll_t *coll;
    size_t     offset;
    size_t     length;
} ucg_sm_pack_arg_t;


/* ------------------------------------------------------------------------ */
/* Order of fan-in contributions                                            */
/* ------------------------------------------------------------------------ */

static ucs_status_t ucg_sm_key_cb(void *arg, ucg_sm_tl_t tl,
                                  const ucg_phase_set_t *set,
                                  uct_o2m_mode_t mode, uct_o2m_op_t op,
                                  uct_o2m_dtype_t dtype)
{
    ucg_sm_key_arg_t *karg = arg;

    if ((tl == UCG_SM_INCAST) && !karg->found) {
        karg->key.root  = set->ranks[set->root];
        karg->key.mode  = mode;
        karg->key.op    = op;
        karg->key.dtype = dtype;
        karg->found     = 1;
    }
    return UCS_OK;
}

/* The fan-in endpoint this member of @a coll contributes to in phase
 * @a phase_idx (the first sm_incast endpoint of its set, when it is not the
 * set root): 0 if none */
static int ucg_sm_contrib_key(const ucg_coll_t *coll, unsigned phase_idx,
                              ucg_sm_key_t *key)
{
    const ucg_phase_t *phase   = &coll->plan->phases[phase_idx];
    const ucg_phase_ops_t *ops = &ucg_phase_table[phase->method];
    const ucg_phase_set_t *set;
    ucg_sm_key_arg_t karg;
    unsigned idx;

    if (ops->contributed == NULL) {
        return 0;
    }

    set = ucg_coll_my_set(coll, phase_idx, &idx);
    if ((set == NULL) || (idx == set->root)) {
        return 0;
    }

    memset(&karg, 0, sizeof(karg));
    ops->sm_eps(coll, phase, set, ucg_sm_key_cb, &karg);
    *key = karg.key;
    return karg.found;
}

/* Whether @a coll, in a fan-in phase, has made all its contributions */
static int ucg_sm_contributed(const ucg_coll_t *coll)
{
    /* Still waiting for its endpoints: it has not even begun */
    if (!coll->ps.sm.open) {
        return 0;
    }

    return ucg_coll_phase_ops(coll)->contributed(coll);
}

/* Whether every collective started before @a coll is done contributing to
 * the fan-in endpoint of @a key */
static int ucg_sm_my_turn(const ucg_coll_t *coll, const ucg_sm_key_t *key)
{
    const ucg_coll_t *prev;
    ucg_sm_key_t prev_key;
    unsigned p;

    ucs_list_for_each(prev, &coll->group->colls, list) {
        if (prev == coll) {
            return 1;
        }

        for (p = prev->phase_idx; p < prev->plan->num_phases; ++p) {
            /* A phase that runs point-to-point contributes nothing */
            if (!ucg_sm_contrib_key(prev, p, &prev_key) ||
                ((p == prev->phase_idx) &&
                 ((prev->phase == &prev->sm_subst) ||
                  ucg_sm_contributed(prev)))) {
                continue;
            }
            if (!memcmp(&prev_key, key, sizeof(*key))) {
                return 0;
            }
        }
    }

    return 1;
}


/* ------------------------------------------------------------------------ */
/* The stream                                                               */
/* ------------------------------------------------------------------------ */

/* What the current phase's start looks up on every start */
typedef enum {
    UCG_SM_EPS_STREAM,     /* the set root's endpoint (ucg_sm_stream_begin) */
    UCG_SM_EPS_EXCHANGE    /* this member's and the other's
                              (ucg_sm_exchange_eps) */
} ucg_sm_eps_kind_t;

/*
 * The endpoints of the current phase of @a coll that a start of this plan
 * looked up before for the same arguments, into ps.sm.ep and ps.sm.rx_ep;
 * 0 if there are none.  Each start looked them up in the group's list
 * before (100-300 instructions, a third of a small collective's start).
 */
static int ucg_sm_eps_recall(ucg_coll_t *coll, ucg_sm_eps_kind_t kind,
                             ucg_sm_tl_t tl, uct_o2m_mode_t mode,
                             uct_o2m_op_t op, uct_o2m_dtype_t dtype)
{
    const ucg_plan_mine_t *mine = &coll->plan->mine[coll->phase_idx];

    if ((mine->ep == NULL) || (mine->ep_kind != kind) ||
        (mine->ep_tl != tl) || (mine->ep_mode != mode) ||
        (mine->ep_op != op) || (mine->ep_dtype != dtype)) {
        return 0;
    }
    coll->ps.sm.ep    = mine->ep;
    coll->ps.sm.rx_ep = mine->rx_ep;
    return 1;
}

/* Keep ps.sm.ep and ps.sm.rx_ep for ucg_sm_eps_recall */
static void ucg_sm_eps_keep(ucg_coll_t *coll, ucg_sm_eps_kind_t kind,
                            ucg_sm_tl_t tl, uct_o2m_mode_t mode,
                            uct_o2m_op_t op, uct_o2m_dtype_t dtype)
{
    /* the plan cache's: its group has one member, this one */
    ucg_plan_mine_t *mine = &((ucg_plan_t*)coll->plan)->mine[coll->phase_idx];

    mine->ep_kind  = kind;
    mine->ep_tl    = tl;
    mine->ep_mode  = mode;
    mine->ep_op    = op;
    mine->ep_dtype = dtype;
    mine->ep       = coll->ps.sm.ep;
    mine->rx_ep    = coll->ps.sm.rx_ep;
}

ucs_status_t ucg_sm_exchange_eps(ucg_coll_t *coll)
{
    ucg_phase_set_t set = *coll->set;
    ucs_status_t status;
    uct_ep_h ep;

    if (ucg_sm_eps_recall(coll, UCG_SM_EPS_EXCHANGE, UCG_SM_BCAST,
                          coll->phase->sm_mode, UCT_O2M_OP_GATHER,
                          UCT_O2M_DT_UINT8)) {
        return UCS_OK;
    }

    for (set.root = 0; set.root < set.count; ++set.root) {
        status = ucg_group_sm_ep(coll->group, UCG_SM_BCAST, &set,
                                 coll->phase->sm_mode, UCT_O2M_OP_GATHER,
                                 UCT_O2M_DT_UINT8, &ep);
        if (status != UCS_OK) {
            return status;
        }
        if (set.root == coll->my_idx) {
            coll->ps.sm.ep = ep;
        } else {
            /* the other member's, when there is one other */
            coll->ps.sm.rx_ep = (set.count == 2) ? ep : NULL;
        }
    }
    ucg_sm_eps_keep(coll, UCG_SM_EPS_EXCHANGE, UCG_SM_BCAST,
                    coll->phase->sm_mode, UCT_O2M_OP_GATHER, UCT_O2M_DT_UINT8);
    return UCS_OK;
}

void ucg_sm_exchange_begin(ucg_coll_t *coll,
                           void (*pack)(const ucg_coll_t *coll, void *payload,
                                        size_t offset, size_t len))
{
    coll->ps.sm.status = UCS_OK;
    coll->ps.sm.role   = UCG_SM_ROLE_BOTH;
    coll->ps.sm.turn   = 1;
    coll->ps.sm.pack   = pack;
    ucg_sm_take_early(coll);
}

ucs_status_t ucg_sm_exchange_progress(ucg_coll_t *coll)
{
    ucs_status_t status;

    if (coll->ps.sm.next < coll->ps.sm.nfrags) {
        status = ucg_sm_send(coll);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (coll->ps.sm.status != UCS_OK) {
        return coll->ps.sm.status;
    }

    return (coll->ps.sm.allreduce.recvd < coll->ps.sm.allreduce.expect) ?
           UCS_INPROGRESS : UCS_OK;
}

size_t ucg_sm_frag_max(const ucg_coll_t *coll)
{
    size_t frag = coll->phase->frag_size;

    if (frag == 0) {
        frag = coll->group->context->sm_max_bcopy - sizeof(ucg_sm_hdr_t);
    }
    return frag;
}

static size_t ucg_sm_pack(void *dest, void *arg)
{
    ucg_sm_pack_arg_t *pack = arg;
    ucg_coll_t *coll        = pack->coll;
    ucg_sm_hdr_t *hdr       = dest;

    memset(hdr, 0, sizeof(*hdr));
    hdr->group_id = coll->group->id;
    hdr->seq      = coll->seq;
    hdr->phase    = coll->phase_idx;
    hdr->epoch    = coll->group->epoch;
    hdr->frag     = coll->ps.sm.next |
                    ((coll->ps.sm.next + 1 == coll->ps.sm.nfrags) ?
                     UCG_SM_FRAG_LAST : 0);
    hdr->src      = coll->my_idx;

    coll->ps.sm.pack(coll, hdr + 1, pack->offset, pack->length);
    return sizeof(*hdr) + pack->length;
}

ucs_status_t ucg_sm_send(ucg_coll_t *coll)
{
    uct_ep_h ep = coll->ps.sm.ep;
    ucg_sm_pack_arg_t pack;
    ucg_sm_key_t key;
    ssize_t ret;

    if (!coll->ps.sm.turn) {
        /* the first started collective (the only one, mostly) has no one
         * to wait for: its key is not needed */
        if ((ucs_list_head(&coll->group->colls, ucg_coll_t, list) != coll) &&
            ucg_sm_contrib_key(coll, coll->phase_idx, &key) &&
            !ucg_sm_my_turn(coll, &key)) {
            return UCS_INPROGRESS;
        }
        coll->ps.sm.turn = 1;
    }

    pack.coll = coll;
    while (coll->ps.sm.next < coll->ps.sm.nfrags) {
        pack.offset = coll->ps.sm.next * coll->ps.sm.frag_len;
        pack.length = ucs_min(coll->ps.sm.frag_len,
                              coll->ps.sm.total - pack.offset);
        ret         = uct_ep_am_bcopy(ep, UCG_SM_AM_ID, ucg_sm_pack, &pack, 0);
        if (ret == UCS_ERR_NO_RESOURCE) {
            return UCS_INPROGRESS; /* ring full: retried from progress */
        } else if (ret < 0) {
            ucs_error("ucg group %u %s seq %u phase %u: send failed: %s",
                      coll->group->id, ucg_coll_name(coll->params.type),
                      coll->seq, coll->phase_idx,
                      ucs_status_string((ucs_status_t)ret));
            return (ucs_status_t)ret;
        }
        ++coll->ps.sm.next;
    }

    return UCS_OK;
}

ucs_status_t ucg_sm_recv_error(ucg_coll_t *coll, const char *what,
                               size_t value)
{
    ucs_error("ucg group %u %s seq %u phase %u fragment %zu: %s (%zu)",
              coll->group->id, ucg_coll_name(coll->params.type), coll->seq,
              coll->phase_idx, coll->ps.sm.next, what, value);
    return UCS_ERR_IO_ERROR;
}

ucs_status_t ucg_sm_frag_index(ucg_coll_t *coll, const ucg_sm_hdr_t *hdr,
                               unsigned nfrags, uint32_t *index_p)
{
    uint32_t index = hdr->frag & ~UCG_SM_FRAG_LAST;
    int last       = (hdr->frag & UCG_SM_FRAG_LAST) != 0;

    if (index >= nfrags) {
        return ucg_sm_recv_error(coll, "fragment beyond the stream", index);
    }

    if (last != (index + 1 == nfrags)) {
        ucs_error("ucg group %u %s seq %u phase %u: the sender's data %s at "
                  "fragment %u, this member's has %u fragments: counts "
                  "differ", coll->group->id, ucg_coll_name(coll->params.type),
                  coll->seq, coll->phase_idx, last ? "ends" : "goes on",
                  index, nfrags);
        return UCS_ERR_MESSAGE_TRUNCATED;
    }

    *index_p = index;
    return UCS_OK;
}

ucs_status_t ucg_sm_stream_begin(ucg_coll_t *coll, ucg_sm_tl_t tl,
                                 uct_o2m_mode_t mode, uct_o2m_op_t op,
                                 uct_o2m_dtype_t dtype, size_t total,
                                 size_t frag, ucg_sm_pack_t pack)
{
    int is_root = (coll->my_idx == coll->set->root);
    ucs_status_t status;
    uct_ep_h ep;

    if (!ucg_sm_eps_recall(coll, UCG_SM_EPS_STREAM, tl, mode, op, dtype)) {
        status = ucg_group_sm_ep(coll->group, tl, coll->set, mode, op, dtype,
                                 &coll->ps.sm.ep);
        if (status != UCS_OK) {
            return status;
        }
        coll->ps.sm.rx_ep = NULL;
        ucg_sm_eps_keep(coll, UCG_SM_EPS_STREAM, tl, mode, op, dtype);
    }

    ep                   = coll->ps.sm.ep;
    coll->ps.sm.total    = total;
    coll->ps.sm.frag_len = frag;
    coll->ps.sm.nfrags   = ucs_max(1, ucs_div_round_up(total, frag));
    coll->ps.sm.next     = 0;
    coll->ps.sm.turn     = 0;
    coll->ps.sm.pack     = pack;
    coll->ps.sm.role     = ((tl == UCG_SM_BCAST) == is_root) ?
                           UCG_SM_ROLE_SEND : UCG_SM_ROLE_RECV;
    /* A fan-in root does not watch: with the two vCPUs far apart (a cache
     * line in ~200 ns), its tight loads on the slot the sender is writing
     * made MPI_Reduce of 8-128 B 9-15 % slower (docs/performance.md,
     * "Waiting on one word") */
    coll->ps.sm.rx_ep    = ((coll->ps.sm.role == UCG_SM_ROLE_RECV) &&
                            (tl == UCG_SM_BCAST)) ? ep : NULL;

    if (coll->ps.sm.role == UCG_SM_ROLE_RECV) {
        ucg_sm_take_early(coll);
    }
    return UCS_OK;
}

ucs_status_t ucg_sm_stream_progress(ucg_coll_t *coll)
{
    if (coll->ps.sm.role == UCG_SM_ROLE_SEND) {
        return ucg_sm_send(coll);
    }

    if (coll->ps.sm.status != UCS_OK) {
        return coll->ps.sm.status;
    }

    return (coll->ps.sm.next < coll->ps.sm.nfrags) ? UCS_INPROGRESS :
           UCS_OK;
}

uct_ep_h ucg_sm_rx_wait_ep(const ucg_coll_t *coll)
{
    const ucg_phase_ops_t *ops = ucg_coll_phase_ops(coll);

    /* ps is the sm state in a phase with host-local endpoints (not in
     * MC_BCAST, whose messages take the same path) */
    if ((ops->sm_eps == NULL) || (ops->expects == NULL) || !coll->ps.sm.open ||
        (coll->ps.sm.rx_ep == NULL) || (coll->ps.sm.status != UCS_OK) ||
        ((coll->ps.sm.role != UCG_SM_ROLE_RECV) &&
         (coll->ps.sm.next < coll->ps.sm.nfrags)) ||
        !ops->expects(coll)) {
        return NULL;
    }
    return coll->ps.sm.rx_ep;
}

int ucg_sm_stream_expects(const ucg_coll_t *coll)
{
    return (coll->ps.sm.role == UCG_SM_ROLE_RECV) &&
           (coll->ps.sm.next < coll->ps.sm.nfrags);
}

int ucg_sm_stream_contributed(const ucg_coll_t *coll)
{
    return coll->ps.sm.next >= coll->ps.sm.nfrags;
}

/* ------------------------------------------------------------------------ */
/* Receive path: the AM handler of the sm interfaces                        */
/* ------------------------------------------------------------------------ */

/* A message of the current phase of @a coll: an error is kept in the phase
 * state and returned by its progress() */
static void ucg_sm_deliver(ucg_coll_t *coll, const void *data, size_t length)
{
    if (coll->ps.sm.status == UCS_OK) {
        ucg_coll_phase_ops(coll)->deliver(coll, data, length);
    }
}

/* Whether @a coll, in a phase with sm messages, is waiting for some */
static int ucg_sm_expects(const ucg_coll_t *coll)
{
    const ucg_phase_ops_t *ops = ucg_coll_phase_ops(coll);

    return (ops->expects != NULL) && ops->expects(coll);
}

/* Messages of this phase that arrived before it began */
void ucg_sm_take_early(ucg_coll_t *coll)
{
    ucs_queue_head_t *queue = &coll->group->sm_unexp;
    ucs_queue_iter_t iter;
    ucg_sm_unexp_t *msg;

    ucs_queue_for_each_safe(msg, iter, queue, queue) {
        if (!ucg_sm_expects(coll)) {
            break;
        }
        if ((msg->hdr.seq == coll->seq) &&
            (msg->hdr.phase == coll->phase_idx)) {
            ucs_queue_del_iter(queue, iter);
            ucg_sm_deliver(coll, msg->data, msg->length);
            ucs_free(msg);
        }
    }
}

/* A message that no collective is ready for: keep a copy.  Without memory
 * for it the message is lost, and the collective that needs it would wait
 * for it forever: the group fails instead (nothing lost silently). */
static ucs_status_t ucg_sm_keep(ucg_group_h group, const void *data,
                                size_t length)
{
    ucg_sm_unexp_t *msg;

    msg = ucs_malloc(sizeof(*msg) + length, "ucg sm unexp");
    if (msg == NULL) {
        ucs_error("UCG group %u rank %u: out of memory for an early message "
                  "of %zu bytes; the group fails", group->id, group->rank,
                  length);
        if (group->failed == UCS_OK) {
            group->failed = UCS_ERR_NO_MEMORY;
        }
        return UCS_OK;
    }

    memcpy(&msg->hdr, data, sizeof(msg->hdr));
    memcpy(msg->data, data, length);
    msg->length = length;
    ucs_queue_push(&group->sm_unexp, &msg->queue);
    return UCS_OK;
}

ucs_status_t ucg_sm_am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
{
    const ucg_sm_hdr_t *hdr = data;
    ucg_group_h group;
    ucg_coll_t *coll;

    group = ucg_context_sm_group(arg, data, length);
    if (group == NULL) {
        return UCS_OK; /* dropped */
    }

    ucs_list_for_each(coll, &group->colls, list) {
        if (coll->seq != hdr->seq) {
            continue;
        }
        if ((coll->phase_idx == hdr->phase) && (coll->set != NULL) &&
            ucg_sm_expects(coll)) {
            ucg_sm_deliver(coll, data, length);
            return UCS_OK;
        }
        break;
    }

    return ucg_sm_keep(group, data, length);
}
