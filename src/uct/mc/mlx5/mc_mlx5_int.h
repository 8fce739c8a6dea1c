/**
 * ucx-o2m: mc_mlx5 internals shared by the interface (mc_mlx5_iface.c)
 * and the datapath of its group endpoints (mc_mlx5_dp.c).
 */
#ifndef UCT_MC_MLX5_INT_H_
#define UCT_MC_MLX5_INT_H_

#include "mc_mlx5.h"
#include "../common/mc_ib_group.h"

#include <uct/ib/ud/accel/ud_mlx5.h>


typedef struct uct_mc_mlx5_iface_config {
    uct_ud_mlx5_iface_config_t super;
    uct_mc_ib_group_config_t   mc;
} uct_mc_mlx5_iface_config_t;

typedef struct uct_mc_mlx5_iface {
    uct_ud_mlx5_iface_t     super;
    uct_mc_ib_ext_t         mc;
    uct_ib_mlx5_mmio_mode_t mmio_mode;  /* for the groups' send queues */
} uct_mc_mlx5_iface_t;


/* Group datagrams as mlx5 work requests on the group QP's send queue */
extern const uct_mc_ib_datapath_t uct_mc_mlx5_datapath;

#endif
