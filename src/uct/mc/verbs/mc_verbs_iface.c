/**
 * ucx-o2m: the mc_verbs interface - UCX's ud_verbs interface, derived
 * through the class object libuct_ib exports, plus the group endpoints of
 * mc_verbs_group.c (docs/multicast.md, "The mc_verbs transport").
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
    {"GROUP_WINDOW", "256",
     "Packets a group's root may have outstanding (not acknowledged by "
     "every member): a power of two, 2..32768. Memory per group and member "
     "is about GROUP_WINDOW * GROUP_MTU bytes.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.window),
     UCS_CONFIG_TYPE_UINT},

    {"GROUP_MTU", "0",
     "Largest datagram of a group, its 48 bytes of headers included; at most "
     "the port's active MTU; 0: the port's active MTU. Larger messages are "
     "fragmented by the engine.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.mtu),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"GROUP_SEG_SIZE", "8k",
     "Largest active message (am_bcopy) of a group endpoint, 1..1m; it must "
     "also fit the window.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.seg_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"GROUP_RTO_MIN", "100us",
     "Shortest retransmission timeout of a group (NACK retry, SYNC, join "
     "probes).",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.rto_min),
     UCS_CONFIG_TYPE_TIME},

    {"GROUP_RTO_MAX", "20ms",
     "Longest retransmission timeout of a group after back-off: the longest "
     "a waiting member stays silent.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.rto_max),
     UCS_CONFIG_TYPE_TIME},

    {"GROUP_REORDER_SLACK", "20us",
     "How long a gap in a group's packets may stay open before it is "
     "NACKed.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.reorder_slack),
     UCS_CONFIG_TYPE_TIME},

    {"GROUP_PEER_TIMEOUT", "0",
     "How long a member waited on may stay silent before its group fails "
     "(0: no bound). UD tells nothing of a peer's exit: this is the only "
     "bound on a wait for a member that is gone.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.peer_timeout),
     UCS_CONFIG_TYPE_TIME},

    {"GROUP_RADIX", "4",
     "Fan-in of a group's ACK tree, 1..64.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.radix),
     UCS_CONFIG_TYPE_UINT},

    {"GROUP_MCAST_BASE", "239.255.80.0",
     "First IPv4 multicast address of the range groups join through "
     "librdmacm (its MGID on IB and RoCE); a group's address is "
     "GROUP_MCAST_BASE + hash(group id) mod GROUP_MCAST_COUNT.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.mcast_base),
     UCS_CONFIG_TYPE_STRING},

    {"GROUP_MCAST_COUNT", "1024",
     "Number of multicast addresses in the range, 1..65536.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.super.mcast_count),
     UCS_CONFIG_TYPE_UINT},

    {"GROUP_TEST_DROP", "0",
     "Testing: a member drops this many per mille of the first transmissions "
     "of data packets it receives, the same ones on every run (a function of "
     "its rank and the packet's PSN); repairs are never dropped. 0..1000.",
     ucs_offsetof(uct_mc_verbs_iface_config_t, mc.drop),
     UCS_CONFIG_TYPE_UINT},

    {NULL}
};

/* The parent's init function, as UCS_CLASS_INIT_FUNC declares it */
typedef ucs_status_t
(*uct_mc_verbs_parent_init_func_t)(void *self, ucs_class_t *cls,
                                   int *init_count, uct_md_h md,
                                   uct_worker_h worker,
                                   const uct_iface_params_t *params,
                                   const uct_iface_config_t *tl_config);

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_mc_verbs_iface_t, uct_iface_t);


static uct_iface_ops_t *uct_mc_verbs_iface_ops(uct_mc_verbs_iface_t *iface)
{
    return &iface->super.super.super.super.super.ops;
}

static ucs_status_t uct_mc_verbs_iface_query(uct_iface_h tl_iface,
                                             uct_iface_attr_t *attr)
{
    uct_mc_verbs_iface_t *iface = ucs_derived_of(tl_iface,
                                                 uct_mc_verbs_iface_t);
    ucs_status_t status;

    status = iface->ud_ops.iface_query(tl_iface, attr);
    if (status != UCS_OK) {
        return status;
    }

    /* The same point-to-point path as ud_verbs, advertised a little slower
     * so that UCP keeps ud_verbs when both are allowed: loading the plugin
     * must not move a job's traffic onto this transport, which is meant
     * for the multicast groups (UCX_TLS=mc_verbs selects it) */
    attr->latency.c += 10e-9;
    attr->overhead  += 10e-9;
    return UCS_OK;
}

static unsigned uct_mc_verbs_iface_progress(uct_iface_h tl_iface)
{
    uct_mc_verbs_iface_t *iface = ucs_derived_of(tl_iface,
                                                 uct_mc_verbs_iface_t);

    return iface->ud_ops.iface_progress(tl_iface) +
           uct_mc_verbs_group_progress(iface);
}

static UCS_CLASS_INIT_FUNC(uct_mc_verbs_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_mc_verbs_iface_config_t *config =
            ucs_derived_of(tl_config, uct_mc_verbs_iface_config_t);
    uct_mc_verbs_parent_init_func_t parent_init =
            (uct_mc_verbs_parent_init_func_t)_myclass->superclass->init;
    uct_ib_device_t *dev;
    uct_iface_ops_t *ops;
    ucs_status_t status;

    status = parent_init(&self->super, _myclass->superclass, _init_count, md,
                         worker, params, tl_config);
    if (status != UCS_OK) {
        return status;
    }
    ++(*_init_count);

    /* UD's Ethernet DGID check reads the RoCE packet type from the
     * completion's SL field, which only Mellanox devices fill that way
     * (PRM); elsewhere (Soft-RoCE) it takes RoCE v2 IPv4 packets for IPv6
     * ones and drops every point-to-point packet.  The group packets come
     * to a QP of their own (mc_verbs_group.c) and are checked there. */
    dev = uct_ib_iface_device(&self->super.super.super);
    if (self->super.super.config.check_grh_dgid &&
        !(dev->flags & UCT_IB_DEVICE_FLAG_MELLANOX)) {
        ucs_debug("mc_verbs: %s is not a Mellanox device: UD's Ethernet "
                  "DGID check is off", uct_ib_device_name(dev));
        self->super.super.config.check_grh_dgid = 0;
    }

    ops          = uct_mc_verbs_iface_ops(self);
    self->ud_ops = *ops;

    status = uct_mc_verbs_group_iface_init(self, &config->mc);
    if (status != UCS_OK) {
        return status;
    }

    ops->iface_query    = uct_mc_verbs_iface_query;
    ops->iface_progress = uct_mc_verbs_iface_progress;
    ops->iface_close    = UCS_CLASS_DELETE_FUNC_NAME(uct_mc_verbs_iface_t);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_mc_verbs_iface_t)
{
    uct_mc_verbs_group_iface_cleanup(self);
}

UCS_CLASS_DEFINE(uct_mc_verbs_iface_t, uct_ud_verbs_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_mc_verbs_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_mc_verbs_iface_t, uct_iface_t);

int uct_mc_verbs_is_iface(uct_iface_h iface)
{
    return (iface != NULL) &&
           (iface->ops.iface_query == uct_mc_verbs_iface_query);
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
