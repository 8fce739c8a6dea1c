/**
 * ucx-o2m: the mc_verbs interface - UCX's ud_verbs interface, derived
 * through the class object libuct_ib exports, plus the group endpoints of
 * mc/common/mc_ib_group.c (docs/multicast.md, "The mc_verbs transport").
 *
 * The transport is one more entry in the transport list of UCX's own "ib"
 * component: its memory domain is the IB one and its devices the IB ports,
 * so `ucx_info -d` lists it next to ud_verbs and UCX_TLS selects it.  The
 * plugin links libuct_ib (the module UCX would dlopen anyway), so the
 * component exists when the plugin's constructor adds the transport.
 *
 * Deriving: uct_ud_verbs_iface_t's init function is static in UCX 1.13,
 * but the exported class object uct_ud_verbs_iface_t_class holds it, and
 * UCS_CLASS_DEFINE below makes that class our superclass.  The parent
 * fills the interface's operations (a copy inside the object, uct_iface_t)
 * with its own; we keep that copy for the point-to-point path and replace
 * the entries whose behaviour differs.  A plain uct_ep_create() is UD's:
 * point-to-point endpoints are UD's, with its reliability.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_verbs_int.h"

#include <uct/ib/base/ib_md.h>
#include <ucs/debug/log.h>


static ucs_config_field_t uct_mc_verbs_iface_config_table[] = {
    /* UD's variables (UCX_MC_VERBS_<name>, also UCX_UD_<name>) */
    {"UD_", "", NULL, ucs_offsetof(uct_mc_verbs_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_ud_iface_config_table)},

    /* Group endpoints (GROUP_: UD and IB have their own MTU, SEG_SIZE) */
    UCT_MC_IB_GROUP_CONFIG_FIELDS(uct_mc_verbs_iface_config_t, mc)

    {NULL}
};

UCT_MC_IB_IFACE_OPS_DEFINE(uct_mc_verbs_iface_t);

static UCS_CLASS_INIT_FUNC(uct_mc_verbs_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_ib_device_t *dev;
    ucs_status_t status;

    status = uct_mc_ib_iface_init(
            self, _myclass, _init_count, &self->mc, UCT_MC_VERBS_TL_NAME,
            &uct_mc_ib_verbs_datapath,
            &ucs_derived_of(tl_config, uct_mc_verbs_iface_config_t)->mc,
            &uct_mc_verbs_iface_t_mc_ops, md, worker, params, tl_config);
    if (status != UCS_OK) {
        return status;
    }

    /* UD's Ethernet DGID check reads the RoCE packet type from the
     * completion's SL field, which only Mellanox devices fill that way
     * (PRM); elsewhere (Soft-RoCE) it takes RoCE v2 IPv4 packets for IPv6
     * ones and drops every point-to-point packet.  The group packets come
     * to a QP of their own (mc_ib_group.c) and are checked there. */
    dev = uct_ib_iface_device(&self->super.super.super);
    if (self->super.super.config.check_grh_dgid &&
        !(dev->flags & UCT_IB_DEVICE_FLAG_MELLANOX)) {
        ucs_debug("mc_verbs: %s is not a Mellanox device: UD's Ethernet "
                  "DGID check is off", uct_ib_device_name(dev));
        self->super.super.config.check_grh_dgid = 0;
    }
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_mc_verbs_iface_t)
{
    uct_mc_ib_groups_cleanup(&self->mc.groups);
}

UCS_CLASS_DEFINE(uct_mc_verbs_iface_t, uct_ud_verbs_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_mc_verbs_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_mc_verbs_iface_t, uct_iface_t);

int uct_mc_verbs_is_iface(uct_iface_h iface)
{
    return (iface != NULL) &&
           (iface->ops.iface_query == uct_mc_verbs_iface_t_query);
}

static ucs_status_t
uct_mc_verbs_query_tl_devices(uct_md_h md,
                              uct_tl_device_resource_t **tl_devices_p,
                              unsigned *num_tl_devices_p)
{
    uct_ib_md_t *ib_md = ucs_derived_of(md, uct_ib_md_t);

    /* Every port UD runs on: IB and RoCE both have multicast */
    return uct_ib_device_query_ports(&ib_md->dev, 0, tl_devices_p,
                                     num_tl_devices_p);
}

UCT_TL_DEFINE_ENTRY(&uct_ib_component, mc_verbs,
                    uct_mc_verbs_query_tl_devices, uct_mc_verbs_iface_t,
                    "MC_VERBS_", uct_mc_verbs_iface_config_table,
                    uct_mc_verbs_iface_config_t);

void uct_mc_verbs_register(void)
{
    uct_tl_register(&uct_ib_component, &UCT_TL_NAME(mc_verbs));
}

ucs_status_t uct_mc_verbs_group_ep_create(uct_iface_h tl_iface,
                                          const uct_o2m_group_params_t *params,
                                          uct_ep_h *ep_p)
{
    uct_mc_verbs_iface_t *iface = ucs_derived_of(tl_iface,
                                                 uct_mc_verbs_iface_t);

    return uct_mc_ib_group_ep_create(&iface->mc.groups, params, ep_p);
}
