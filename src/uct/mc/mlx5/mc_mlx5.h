/**
 * ucx-o2m: the mc_mlx5 transport - InfiniBand/RoCE UD multicast on the
 * reliable multicast engine of mc/rel/, derived from UCX's ud_mlx5
 * interface (docs/multicast.md, "The mc_mlx5 transport").  Internal entry
 * points for the plugin's constructor and the group-endpoint extension API
 * (uct_o2m.h), which dispatches to this transport when it is given an
 * mc_mlx5 interface.
 */
#ifndef UCT_MC_MLX5_H_
#define UCT_MC_MLX5_H_

#include "../../sm/bcast/uct_o2m.h"

#include <uct/api/uct.h>


#define UCT_MC_MLX5_TL_NAME "mc_mlx5"


/* Register the transport with UCX's "ib" component (constructor) */
void uct_mc_mlx5_register(void);

/* Whether @a iface is an mc_mlx5 interface */
int uct_mc_mlx5_is_iface(uct_iface_h iface);

/* uct_o2m_ep_create() on an mc_mlx5 interface */
ucs_status_t uct_mc_mlx5_group_ep_create(uct_iface_h iface,
                                         const uct_o2m_group_params_t *params,
                                         uct_ep_h *ep_p);

#endif
