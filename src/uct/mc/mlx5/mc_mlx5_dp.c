/**
 * ucx-o2m: mc_mlx5's datapath - a group's datagrams as mlx5 work requests
 * on the send queue of the group QP (mc/common/mc_ib_group.c creates it,
 * attaches it and receives on it through verbs).
 *
 * Every destination has an mlx5 address vector, built once from the
 * address handle the device made for it: the group's (the join's
 * MGID/MLID, DQPN 0xFFFFFF) and each member's (its GID, its group QP).  A
 * send writes control, datagram (that vector and the group's Q_Key) and
 * data segments into the send queue and rings the doorbell the way UD's
 * own queue does (uct_ib_mlx5_post_send).  The sends complete on a CQ of
 * their own, read here entry by entry: every request asks for a
 * completion, and they complete in order, so each entry gives back the
 * oldest slot in flight.  Receives stay verbs' (ibv_post_recv and
 * ibv_poll_cq on the other CQ).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_mlx5_int.h"
#include "mc_mlx5_wire.h"

#include <uct/ib/mlx5/ib_mlx5.inl>
#include <uct/ib/mlx5/dv/ib_mlx5_dv.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>


typedef struct uct_mc_mlx5_ep_dp {
    uct_ib_mlx5_txwq_t txwq;
    uct_ib_mlx5_cq_t   tx_cq;
    unsigned           max_posted;  /* requests the send queue holds */
    unsigned           posted;      /* in flight */
    unsigned           head;        /* oldest in flight in slots[] */
    unsigned           slots[UCT_MC_IB_TX_SLOTS];
} uct_mc_mlx5_ep_dp_t;

_Static_assert(sizeof(struct mlx5_wqe_av) <=
               sizeof(((uct_mc_ib_dest_t*)NULL)->av),
               "an mlx5 address vector fits a destination");
_Static_assert(UCT_MC_MLX5_WQE_BBS * MLX5_SEND_WQE_BB >= UCT_MC_MLX5_WQE_SIZE,
               "a work request fits its basic blocks");


static uct_mc_mlx5_iface_t *uct_mc_mlx5_ep_iface(uct_mc_ib_ep_t *ep)
{
    return ucs_container_of(ep->groups, uct_mc_mlx5_iface_t, mc.groups);
}

static ucs_status_t uct_mc_mlx5_dp_qp_init(uct_mc_ib_ep_t *ep)
{
    uct_mc_mlx5_iface_t *iface = uct_mc_mlx5_ep_iface(ep);
    uct_mc_mlx5_ep_dp_t *dp;
    ucs_status_t status;

    dp = ucs_calloc(1, sizeof(*dp), "mc_mlx5 datapath");
    if (dp == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ep->dp_priv = dp;

    /* Not a QP of UCX's (OBJ_TYPE_LAST): only the doorbell register is
     * released with it */
    dp->txwq.super.type   = UCT_IB_MLX5_OBJ_TYPE_LAST;
    dp->txwq.super.qp_num = ep->qp->qp_num;
    status = uct_ib_mlx5_txwq_init(iface->super.super.super.super.worker,
                                   iface->mmio_mode, &dp->txwq, ep->qp);
    if (status != UCS_OK) {
        ucs_error("mc_mlx5: the group QP's send queue is not usable: %s",
                  ucs_status_string(status));
        dp->txwq.reg = NULL;
        return status;
    }

    status = uct_ib_mlx5_get_cq(ep->tx_cq, &dp->tx_cq);
    if (status != UCS_OK) {
        ucs_error("mc_mlx5: the group's send CQ is not usable: %s",
                  ucs_status_string(status));
        return status;
    }

    dp->max_posted = ucs_min(UCT_MC_IB_TX_SLOTS,
                             dp->txwq.bb_max / UCT_MC_MLX5_WQE_BBS);
    if (dp->max_posted == 0) {
        ucs_error("mc_mlx5: the group QP's send queue holds %u basic "
                  "blocks", dp->txwq.bb_max);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static ucs_status_t uct_mc_mlx5_dp_dest_init(uct_mc_ib_ep_t *ep,
                                             uct_mc_ib_dest_t *dest)
{
    struct mlx5_wqe_av ah_av;

    uct_ib_mlx5_get_av(dest->ah, &ah_av);
    uct_mc_mlx5_av_init((struct mlx5_wqe_av*)dest->av, &ah_av, dest->qpn);
    return UCS_OK;
}

static ucs_status_t uct_mc_mlx5_dp_post(uct_mc_ib_ep_t *ep,
                                        const uct_mc_ib_dest_t *dest,
                                        unsigned slot, size_t length)
{
    uct_mc_mlx5_ep_dp_t *dp = ep->dp_priv;
    uct_ib_mlx5_txwq_t *wq  = &dp->txwq;
    struct mlx5_wqe_ctrl_seg *ctrl;
    void *dseg;
    size_t wqe_size;

    if (dp->posted >= dp->max_posted) {
        return UCS_ERR_NO_RESOURCE;
    }

    ctrl     = wq->curr;
    dseg     = uct_ib_mlx5_txwq_wrap_exact(
                   wq, UCS_PTR_BYTE_OFFSET(ctrl, MLX5_SEND_WQE_BB));
    wqe_size = uct_mc_mlx5_wqe_pack(ctrl, dseg, wq->sw_pi, ep->qp->qp_num,
                                    (const struct mlx5_wqe_av*)dest->av,
                                    ep->qkey, uct_mc_ib_ep_slot(ep, slot),
                                    length, ep->mr->lkey);
    uct_ib_mlx5_post_send(wq, ctrl, wqe_size, 1);

    dp->slots[(dp->head + dp->posted) % UCT_MC_IB_TX_SLOTS] = slot;
    ++dp->posted;
    return UCS_OK;
}

static unsigned uct_mc_mlx5_dp_tx_poll(uct_mc_ib_ep_t *ep, uint64_t now)
{
    uct_mc_mlx5_ep_dp_t *dp = ep->dp_priv;
    uct_ib_mlx5_cq_t *cq    = &dp->tx_cq;
    unsigned count          = 0;
    uct_mc_mlx5_cqe_t outcome;
    struct mlx5_cqe64 *cqe;

    while (dp->posted > 0) {
        cqe     = uct_ib_mlx5_get_cqe(cq, cq->cq_ci);
        outcome = uct_mc_mlx5_cqe_check(cqe, cq->cq_ci, cq->cq_length);
        if (outcome == UCT_MC_MLX5_CQE_NONE) {
            break;
        }

        /* The entry's contents after its owner bit */
        ucs_memory_cpu_load_fence();
        ++cq->cq_ci;
        uct_mc_ib_ep_tx_done(ep, dp->slots[dp->head]);
        dp->head = (dp->head + 1) % UCT_MC_IB_TX_SLOTS;
        --dp->posted;
        ++count;

        if (outcome == UCT_MC_MLX5_CQE_ERROR) {
            /* The QP is in error: no later send leaves it */
            ucs_error("mc_mlx5: group 0x%x:%u: send completion with error "
                      "(syndrome 0x%x)", ep->conn, ep->epoch,
                      ((struct mlx5_err_cqe*)cqe)->syndrome);
            uct_mc_ib_ep_fail(ep, UCS_ERR_IO_ERROR, now);
        }
    }

    if (count > 0) {
        /* A verbs CQ checks for overruns: the device must see what was
         * consumed */
        cq->dbrec[UCT_IB_MLX5_CQ_SET_CI] = htobe32(cq->cq_ci & 0xffffff);
    }
    return count;
}

static void uct_mc_mlx5_dp_cleanup(uct_mc_ib_ep_t *ep)
{
    uct_mc_mlx5_ep_dp_t *dp = ep->dp_priv;

    if (dp == NULL) {
        return;
    }
    if (dp->txwq.reg != NULL) {
        uct_ib_mlx5_qp_mmio_cleanup(&dp->txwq.super, dp->txwq.reg);
    }
    ucs_free(dp);
    ep->dp_priv = NULL;
}

const uct_mc_ib_datapath_t uct_mc_mlx5_datapath = {
    .own_tx_cq = 1,
    .qp_init   = uct_mc_mlx5_dp_qp_init,
    .dest_init = uct_mc_mlx5_dp_dest_init,
    .post      = uct_mc_mlx5_dp_post,
    .tx_poll   = uct_mc_mlx5_dp_tx_poll,
    .cleanup   = uct_mc_mlx5_dp_cleanup
};
