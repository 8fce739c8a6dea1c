/**
 * MC_BCAST: the set root sends the phase's data (coll->data) once, by
 * multicast on the set's group endpoint of the group's multicast transport
 * (mc_mlx5, mc_verbs or mc_udp: ../ucg_mc.c, ../ucg_mc_agree.c), and the
 * engine of mc/rel/ makes it reliable.  The data is the stream of the SM_*
 * phases (ucg_sm.c): fragments of the agreed size behind the sm header, so
 * the sm receive path (ucg_sm_am_cb, the AM handler of the multicast
 * interfaces too) delivers them, and keeps those that arrive before their
 * collective reaches the phase.
 *
 * Before the stream the set agrees on its endpoint (once per group and
 * set, see ucg_mc_agree.c); where a member could not create its endpoint,
 * every member of the set runs P2P_BCAST (the phase's radix and fragments)
 * instead, in the same collective.
 *
 * A member waits for data with uct_o2m_ep_expect(ep, 1) set: the endpoint
 * then fails when its root or its parent in the ACK tree is gone, and the
 * phase with it.  It stops waiting when the last collective waiting on the
 * endpoint got its data; it sends nothing then (the engine's ACKs are on
 * demand: the root's window does not wait for them, its SYNC asks when it
 * needs them, and the endpoint's destroy sends the last one).
 */
#include "ucg_coll.h"
#include "ucg_mc.h"
#include "ucg_sm.h"

#include <ucs/debug/log.h>
#include <string.h>


static void ucg_mc_bcast_pack(const ucg_coll_t *coll, void *payload,
                              size_t offset, size_t length)
{
    if (length > 0) {
        memcpy(payload, UCS_PTR_BYTE_OFFSET(coll->data, offset), length);
    }
}

static ucs_status_t ucg_mc_bcast_recv(ucg_coll_t *coll, const void *data,
                                      size_t length, size_t frag_len,
                                      size_t offset)
{
    if (length != sizeof(ucg_sm_hdr_t) + frag_len) {
        return ucg_sm_recv_error(coll, "multicast fragment of unexpected "
                                 "length", length);
    }
    if (frag_len > 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(coll->data, offset),
               UCS_PTR_BYTE_OFFSET(data, sizeof(ucg_sm_hdr_t)), frag_len);
    }
    return UCS_OK;
}

void ucg_mc_bcast_deliver(ucg_coll_t *coll, const void *data, size_t length)
{
    ucg_sm_stream_deliver(coll, data, length, ucg_mc_bcast_recv);
}

/* The member stops waiting on the endpoint (when the last of its
 * collectives that waited got its data) */
static void ucg_mc_bcast_unwait(ucg_coll_t *coll)
{
    ucg_mc_ep_t *mc_ep = coll->ps.mc.ep;

    if (!coll->ps.mc.waits) {
        return;
    }
    coll->ps.mc.waits = 0;
    if ((--mc_ep->waiters == 0) && (mc_ep->ep != NULL)) {
        (void)uct_o2m_ep_expect(mc_ep->ep, 0);
    }
}

/* The point-to-point bcast the planner would have used, on the same set */
static ucs_status_t ucg_mc_bcast_standin(ucg_coll_t *coll)
{
    ucg_phase_t *subst = &coll->sm_subst;

    *subst        = *coll->phase;
    subst->method = ucg_coll_phase_ops(coll)->standin;
    ucs_debug("ucg group %u %s seq %u phase %u: %s refused, %s on the set "
              "of %u", coll->group->id, ucg_coll_name(coll->params.type),
              coll->seq, coll->phase_idx,
              ucg_mc_tl_name(coll->ps.mc.ep->tl),
              ucg_phase_method_names[subst->method], coll->set->count);
    memset(&coll->ps, 0, sizeof(coll->ps));
    coll->phase = subst;
    return ucg_phase_table[subst->method].start(coll);
}

/* The set agreed: begin the stream */
static ucs_status_t ucg_mc_bcast_open(ucg_coll_t *coll)
{
    ucg_mc_ep_t *mc_ep  = coll->ps.mc.ep;
    ucg_sm_state_t *sm  = &coll->ps.mc.stream;

    sm->open     = 1;
    sm->ep       = mc_ep->ep;
    sm->total    = coll->data_len;
    sm->frag_len = mc_ep->frag;
    sm->nfrags   = ucs_max(1, ucs_div_round_up(coll->data_len, mc_ep->frag));
    sm->next     = 0;
    sm->turn     = 1; /* no fan-in */
    sm->pack     = ucg_mc_bcast_pack;
    sm->status   = UCS_OK;
    sm->role     = (coll->my_idx == coll->set->root) ? UCG_SM_ROLE_SEND :
                   UCG_SM_ROLE_RECV;
    if (sm->role == UCG_SM_ROLE_RECV) {
        coll->ps.mc.waits = 1;
        if (mc_ep->waiters++ == 0) {
            (void)uct_o2m_ep_expect(mc_ep->ep, 1);
        }
        ucg_sm_take_early(coll);
    }
    return UCS_OK;
}

ucs_status_t ucg_mc_bcast_progress(ucg_coll_t *coll)
{
    ucg_mc_ep_t *mc_ep = coll->ps.mc.ep;
    ucs_status_t status;

    if (!coll->ps.mc.stream.open) {
        status = ucg_mc_ep_agree(coll->group, mc_ep);
        if (status != UCS_OK) {
            return status;
        } else if (mc_ep->state == UCG_MC_EP_REFUSED) {
            status = ucg_mc_bcast_standin(coll);
            return (status == UCS_OK) ?
                   ucg_coll_phase_ops(coll)->progress(coll) : status;
        }
        ucg_mc_bcast_open(coll);
    }

    if (coll->ps.mc.stream.role == UCG_SM_ROLE_SEND) {
        return ucg_sm_send(coll);
    }

    status = coll->ps.mc.stream.status;
    if ((status == UCS_OK) &&
        (coll->ps.mc.stream.next < coll->ps.mc.stream.nfrags)) {
        /* The engine failed the group: the root or a member on the way is
         * gone (or silent past PEER_TIMEOUT) */
        if (uct_o2m_ep_state(mc_ep->ep, &status) !=
            UCT_O2M_EP_STATE_FAILED) {
            return UCS_INPROGRESS;
        }
        ucs_error("ucg group %u %s seq %u: the %s group of rank %u "
                  "failed: %s", coll->group->id,
                  ucg_coll_name(coll->params.type), coll->seq,
                  ucg_mc_tl_name(mc_ep->tl),
                  mc_ep->ranks[mc_ep->root_idx], ucs_status_string(status));
    }

    ucg_mc_bcast_unwait(coll);
    return status;
}

ucs_status_t ucg_mc_bcast_start(ucg_coll_t *coll)
{
    /* progress() agrees on the endpoint, then sends or receives */
    return ucg_mc_ep_get(coll->group, coll->set, coll->my_idx,
                         &coll->ps.mc.ep);
}
