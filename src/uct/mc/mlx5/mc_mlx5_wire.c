/**
 * ucx-o2m: mc_mlx5's pure parts (mc_mlx5_wire.h): the work request, the
 * address vector, the completion check.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_mlx5_wire.h"

#include <endian.h>
#include <string.h>


void uct_mc_mlx5_av_init(struct mlx5_wqe_av *av,
                         const struct mlx5_wqe_av *ah_av, uint32_t qpn)
{
    *av               = *ah_av;
    av->key.qkey.qkey = 0; /* the group's, set on every send */
    av->dqp_dct       = htobe32(MLX5_EXTENDED_UD_AV | (qpn & 0xffffff));
}

size_t uct_mc_mlx5_wqe_pack(void *ctrl, void *dseg, uint16_t pi,
                            uint32_t qp_num, const struct mlx5_wqe_av *av,
                            uint32_t qkey, const void *addr, uint32_t length,
                            uint32_t lkey)
{
    struct mlx5_wqe_datagram_seg *dgram = (void*)((char*)ctrl +
                                          sizeof(struct mlx5_wqe_ctrl_seg));

    /* ds: the size in 16-byte units */
    mlx5dv_set_ctrl_seg(ctrl, pi, MLX5_OPCODE_SEND, 0, qp_num,
                        MLX5_WQE_CTRL_CQ_UPDATE, UCT_MC_MLX5_WQE_SIZE / 16,
                        0, 0);
    memcpy(&dgram->av, av, sizeof(dgram->av));
    dgram->av.key.qkey.qkey = htobe32(qkey);
    mlx5dv_set_data_seg(dseg, length, lkey, (uintptr_t)addr);
    return UCT_MC_MLX5_WQE_SIZE;
}

uct_mc_mlx5_cqe_t uct_mc_mlx5_cqe_check(const struct mlx5_cqe64 *cqe,
                                        unsigned ci, unsigned cq_length)
{
    uint8_t op_own = cqe->op_own;

    /* Software owns the entry once the hardware wrote it (not the invalid
     * opcode the queue starts with) with the owner bit of this pass */
    if (((op_own >> 4) == MLX5_CQE_INVALID) ||
        ((op_own & MLX5_CQE_OWNER_MASK) == !(ci & cq_length))) {
        return UCT_MC_MLX5_CQE_NONE;
    }

    return ((op_own >> 4) == MLX5_CQE_REQ_ERR) ? UCT_MC_MLX5_CQE_ERROR :
                                                 UCT_MC_MLX5_CQE_OK;
}
