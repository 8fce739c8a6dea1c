/**
 * ucx-o2m: the mc_mlx5 interface - UCX's ud_mlx5 interface, derived
 * through the class object libuct_ib exports, plus the group endpoints of
 * mc/common/mc_ib_group.c with the mlx5 datapath of mc_mlx5_dp.c
 * (docs/multicast.md, "The mc_mlx5 transport").
 *
 * Built like mc_verbs (mc/verbs/mc_verbs_iface.c): one more entry in the
 * transport list of UCX's "ib" component, on the devices ud_mlx5 runs on
 * (its own device query: the mlx5 memory domain, ports with the mlx5
 * PRM), so `ucx_info -d` lists it next to ud_mlx5 and UCX_TLS selects it.
 * The parent's init function is static in UCX 1.13; the exported class
 * object uct_ud_mlx5_iface_t_class holds it.  Point-to-point endpoints
 * are ud_mlx5's, with its reliability; group endpoints are the IB
 * multicast transports' (uct_o2m_ep_create), their datagrams mlx5 work
 * requests.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_mlx5_int.h"

#include <uct/ib/base/ib_md.h>
#include <ucs/debug/log.h>


/* ud_mlx5's transport entry: exported by libuct_ib, not declared in its
 * headers; its device query is the one mc_mlx5 runs on */
extern uct_tl_t uct_ud_mlx5_tl;


static ucs_config_field_t uct_mc_mlx5_iface_config_table[] = {
    /* ud_mlx5's variables (UCX_MC_MLX5_<name>, also UCX_UD_<name> and
     * UCX_IB_<name>), in the parent's configuration layout */
    {"UD_", "", NULL,
     ucs_offsetof(uct_mc_mlx5_iface_config_t, super.super),
     UCS_CONFIG_TYPE_TABLE(uct_ud_iface_config_table)},

    {UCT_IB_CONFIG_PREFIX, "", NULL,
     ucs_offsetof(uct_mc_mlx5_iface_config_t, super.mlx5_common),
     UCS_CONFIG_TYPE_TABLE(uct_ib_mlx5_iface_config_table)},

    {"UD_", "", NULL,
     ucs_offsetof(uct_mc_mlx5_iface_config_t, super.ud_mlx5_common),
     UCS_CONFIG_TYPE_TABLE(uct_ud_mlx5_iface_common_config_table)},

    /* Group endpoints (GROUP_: UD and IB have their own MTU, SEG_SIZE) */
    UCT_MC_IB_GROUP_CONFIG_FIELDS(uct_mc_mlx5_iface_config_t, mc)

    {NULL}
};

UCT_MC_IB_IFACE_OPS_DEFINE(uct_mc_mlx5_iface_t);

static UCS_CLASS_INIT_FUNC(uct_mc_mlx5_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_mc_mlx5_iface_config_t *config =
            ucs_derived_of(tl_config, uct_mc_mlx5_iface_config_t);

    /* The groups' send queues ring their doorbells as UD's does; no group
     * exists before init returns */
    self->mmio_mode = config->super.mlx5_common.mmio_mode;

    /* UD's Ethernet DGID check stays: an mlx5 device fills the completion
     * the way it reads it */
    return uct_mc_ib_iface_init(self, _myclass, _init_count, &self->mc,
                                UCT_MC_MLX5_TL_NAME, &uct_mc_mlx5_datapath,
                                &config->mc, &uct_mc_mlx5_iface_t_mc_ops,
                                md, worker, params, tl_config);
}

static UCS_CLASS_CLEANUP_FUNC(uct_mc_mlx5_iface_t)
{
    uct_mc_ib_groups_cleanup(&self->mc.groups);
}

UCS_CLASS_DEFINE(uct_mc_mlx5_iface_t, uct_ud_mlx5_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_mc_mlx5_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_mc_mlx5_iface_t, uct_iface_t);

int uct_mc_mlx5_is_iface(uct_iface_h iface)
{
    return (iface != NULL) &&
           (iface->ops.iface_query == uct_mc_mlx5_iface_t_query);
}

ucs_status_t uct_mc_mlx5_group_ep_create(uct_iface_h tl_iface,
                                         const uct_o2m_group_params_t *params,
                                         uct_ep_h *ep_p)
{
    uct_mc_mlx5_iface_t *iface = ucs_derived_of(tl_iface,
                                                uct_mc_mlx5_iface_t);

    return uct_mc_ib_group_ep_create(&iface->mc.groups, params, ep_p);
}

static ucs_status_t
uct_mc_mlx5_query_tl_devices(uct_md_h md,
                             uct_tl_device_resource_t **tl_devices_p,
                             unsigned *num_tl_devices_p)
{
    /* The ports ud_mlx5 runs on (none on other devices, Soft-RoCE too) */
    return uct_ud_mlx5_tl.query_devices(md, tl_devices_p, num_tl_devices_p);
}

UCT_TL_DEFINE_ENTRY(&uct_ib_component, mc_mlx5,
                    uct_mc_mlx5_query_tl_devices, uct_mc_mlx5_iface_t,
                    "MC_MLX5_", uct_mc_mlx5_iface_config_table,
                    uct_mc_mlx5_iface_config_t);

void uct_mc_mlx5_register(void)
{
    uct_tl_register(&uct_ib_component, &UCT_TL_NAME(mc_mlx5));
}
