/**
 * ucx-o2m: mc_mlx5's pure parts - the send work request of a group
 * datagram (control, datagram and data segments, in the layout of the
 * mlx5 PRM as rdma-core's mlx5dv.h declares it), the destination's
 * address vector (DQPN, Q_Key) and the send completion check.  No device:
 * the host tests run them on plain memory (test_mc_mlx5.cc);
 * mc_mlx5_dp.c applies them to the group QP's send queue.
 */
#ifndef UCT_MC_MLX5_WIRE_H_
#define UCT_MC_MLX5_WIRE_H_

#include <infiniband/mlx5dv.h>
#include <stddef.h>
#include <stdint.h>


/* A group datagram's work request: control (16 bytes), datagram (the
 * 48-byte address vector) and one data segment (16): two basic blocks,
 * the data segment starting the second one */
#define UCT_MC_MLX5_WQE_SIZE  (sizeof(struct mlx5_wqe_ctrl_seg) + \
                               sizeof(struct mlx5_wqe_datagram_seg) + \
                               sizeof(struct mlx5_wqe_data_seg))
#define UCT_MC_MLX5_WQE_BBS   2


/* Outcome of a look at a send completion queue entry */
typedef enum {
    UCT_MC_MLX5_CQE_NONE, /* still the hardware's: nothing completed */
    UCT_MC_MLX5_CQE_OK,   /* a work request completed */
    UCT_MC_MLX5_CQE_ERROR /* a work request failed: the QP is in error */
} uct_mc_mlx5_cqe_t;


/**
 * The address vector of a destination, from the one the device built for
 * its address handle (@a ah_av, mlx5dv_init_obj(MLX5DV_OBJ_AH)): the
 * extended form (with its GRH: the group's MGID, a member's GID) and
 * destination QP @a qpn (0xFFFFFF: the multicast group).
 */
void uct_mc_mlx5_av_init(struct mlx5_wqe_av *av,
                         const struct mlx5_wqe_av *ah_av, uint32_t qpn);

/**
 * Fill a send work request at @a ctrl (its first basic block) whose data
 * segment is at @a dseg (the second basic block, after the send queue's
 * wrap): producer index @a pi, the sending QP @a qp_num, a completion
 * requested, destination @a av with Q_Key @a qkey, @a length bytes at
 * @a addr of memory key @a lkey.  Returns its size, UCT_MC_MLX5_WQE_SIZE.
 */
size_t uct_mc_mlx5_wqe_pack(void *ctrl, void *dseg, uint16_t pi,
                            uint32_t qp_num, const struct mlx5_wqe_av *av,
                            uint32_t qkey, const void *addr, uint32_t length,
                            uint32_t lkey);

/**
 * Look at the send completion queue entry @a cqe at consumer index @a ci
 * of a queue of @a cq_length entries (a power of two): the owner bit of an
 * entry the hardware wrote flips on every pass over the queue.
 */
uct_mc_mlx5_cqe_t uct_mc_mlx5_cqe_check(const struct mlx5_cqe64 *cqe,
                                        unsigned ci, unsigned cq_length);

#endif
