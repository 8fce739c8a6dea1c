/**
 * ucx-o2m: the mc_verbs transport - InfiniBand/RoCE UD multicast on the
 * reliable multicast engine of mc/rel/, derived from UCX's ud_verbs
 * interface (docs/multicast.md, "The mc_verbs transport").  Internal entry
 * points for the plugin's constructor and the group-endpoint extension API
 * (uct_o2m.h), which dispatches to this transport when it is given an
 * mc_verbs interface.
 */
#ifndef UCT_MC_VERBS_H_
#define UCT_MC_VERBS_H_

#include "../../sm/bcast/uct_o2m.h"

#include <uct/api/uct.h>


#define UCT_MC_VERBS_TL_NAME "mc_verbs"


/* Register the transport with UCX's "ib" component (constructor) */
void uct_mc_verbs_register(void);

/* Whether @a iface is an mc_verbs interface */
int uct_mc_verbs_is_iface(uct_iface_h iface);

/* Whether @a ep is a group endpoint of mc_verbs or mc_mlx5 (their group
 * endpoints are mc/common/mc_ib_group.c's) */
int uct_mc_ib_is_ep(uct_ep_h ep);

/* uct_o2m_ep_create() on an mc_verbs interface */
ucs_status_t uct_mc_verbs_group_ep_create(uct_iface_h iface,
                                          const uct_o2m_group_params_t *params,
                                          uct_ep_h *ep_p);

/* uct_o2m_ep_expect() and uct_o2m_ep_state() on an mc_verbs or mc_mlx5
 * group endpoint: the engine-backed endpoint's (mc/common/mc_rel_ep.h) */

#endif
