/**
 * ucx-o2m: the mc_udp transport (UDP/IP multicast on the reliable multicast
 * engine of mc/rel/).  Internal entry points for the plugin's constructor
 * and for the group-endpoint extension API (uct_o2m.h), which dispatches to
 * this transport when it is given an mc_udp interface.
 */
#ifndef UCT_MC_UDP_H_
#define UCT_MC_UDP_H_

#include "../../sm/bcast/uct_o2m.h"

#include <uct/api/uct.h>


/* Register the component and its transport with UCX (constructor) */
void uct_mc_udp_register(void);

/* Whether @a iface is an mc_udp interface */
int uct_mc_udp_is_iface(uct_iface_h iface);

/* Whether @a ep is an mc_udp endpoint */
int uct_mc_udp_is_ep(uct_ep_h ep);

/* uct_o2m_ep_create() on an mc_udp interface */
ucs_status_t uct_mc_udp_group_ep_create(uct_iface_h iface,
                                        const uct_o2m_group_params_t *params,
                                        uct_ep_h *ep_p);

/* uct_o2m_ep_expect() and uct_o2m_ep_state() on an mc_udp endpoint: the
 * engine-backed endpoint's (mc/common/mc_rel_ep.h) */

#endif
