/**
 * ucx-o2m: mc_verbs internals shared by the interface (mc_verbs_iface.c)
 * and the group endpoints (mc_verbs_group.c).
 */
#ifndef UCT_MC_VERBS_INT_H_
#define UCT_MC_VERBS_INT_H_

#include "mc_verbs.h"
#include "mc_verbs_wire.h"
#include "../common/mc_rel_ep.h"
#include "../rel/mc_rel.h"

#include <uct/ib/ud/verbs/ud_verbs.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>


/* The group variables (UCX_MC_VERBS_GROUP_<name>) */
typedef struct uct_mc_verbs_group_config {
    uct_mc_rel_ep_config_t super;
    unsigned               drop;
} uct_mc_verbs_group_config_t;

typedef struct uct_mc_verbs_iface_config {
    uct_ud_iface_config_t       super;
    uct_mc_verbs_group_config_t mc;
} uct_mc_verbs_iface_config_t;

typedef struct uct_mc_verbs_iface {
    uct_ud_verbs_iface_t super;
    uct_iface_ops_t      ud_ops;      /* the parent's, as it set them */
    /* What group endpoints point to as their interface: the operations of
     * a group endpoint (a UD endpoint keeps the interface's own) */
    uct_iface_t          group_iface;
    struct {
        uct_mc_rel_config_t rel;
        uint32_t            mc_base;   /* host order */
        unsigned            mc_count;
        size_t              seg_size;  /* largest AM payload */
        unsigned            seg_frags; /* packets of the largest message */
        size_t              dgram_len; /* largest datagram, headers incl. */
        unsigned            drop;      /* test drops, per mille */
        int                 is_roce;
        uint32_t            bind_ip;   /* network order, 0: not usable */
        ucs_list_link_t     list;      /* uct_mc_verbs_ep_t */
    } groups;
} uct_mc_verbs_iface_t;


ucs_status_t
uct_mc_verbs_group_iface_init(uct_mc_verbs_iface_t *iface,
                              const uct_mc_verbs_group_config_t *config);

void uct_mc_verbs_group_iface_cleanup(uct_mc_verbs_iface_t *iface);

unsigned uct_mc_verbs_group_progress(uct_mc_verbs_iface_t *iface);

#endif
