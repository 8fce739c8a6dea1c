/**
 * ucx-o2m: mc_verbs internals - the interface (mc_verbs_iface.c): UCX's
 * ud_verbs interface with the group part of the IB multicast transports
 * (mc/common/mc_ib_group.h).
 */
#ifndef UCT_MC_VERBS_INT_H_
#define UCT_MC_VERBS_INT_H_

#include "mc_verbs.h"
#include "../common/mc_ib_group.h"

#include <uct/ib/ud/verbs/ud_verbs.h>


typedef struct uct_mc_verbs_iface_config {
    uct_ud_iface_config_t    super;
    uct_mc_ib_group_config_t mc;
} uct_mc_verbs_iface_config_t;

typedef struct uct_mc_verbs_iface {
    uct_ud_verbs_iface_t super;
    uct_mc_ib_ext_t      mc;
} uct_mc_verbs_iface_t;

#endif
