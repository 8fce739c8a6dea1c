/**
 * ucx-o2m: the UCT component "o2m" with the transports sm_bcast and
 * sm_incast, registered by the library's constructor.
 *
 * UCX loads only the modules it was built with, so this library takes part
 * by being loaded before UCX lists its components (LD_PRELOAD, or as a
 * dependency of the program).  It is never unloaded (-z nodelete): UCX keeps
 * pointers to the component.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_iface.h"
#include "o2m_p2p.h"
#include "../../mc/udp/mc_udp.h"
#ifdef O2M_MC_VERBS
#  include "../../mc/verbs/mc_verbs.h"
#endif
#ifdef O2M_MC_MLX5
#  include "../../mc/mlx5/mc_mlx5.h"
#endif

#include <ucp/api/ucp.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_component.h>
#include <ucs/sys/module.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <stdio.h>
#include <string.h>
#include <limits.h>


#define UCT_O2M_COMPONENT_NAME "o2m"

#if !defined(UCT_O2M_UCX_MAJOR) || !defined(UCT_O2M_UCX_MINOR) || \
    !defined(UCT_O2M_UCX_PATCH)
#  error "configure must define the UCX version built against"
#endif


typedef struct uct_o2m_md_config {
    uct_md_config_t super;
} uct_o2m_md_config_t;


static uct_component_t uct_o2m_component;

static ucs_config_field_t uct_o2m_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_o2m_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {NULL}
};

/* Each transport has its own variables (UCX_SM_BCAST_FIFO_SIZE); one of the
 * common table (UCX_O2M_FIFO_SIZE) sets both.  sm_bcast: its defaults. */
static ucs_config_field_t uct_o2m_bcast_config_table[] = {
    {"O2M_", "", NULL, 0, UCS_CONFIG_TYPE_TABLE(uct_o2m_iface_config_table)},

    {NULL}
};

/* sm_incast: the same defaults; RING_MAX bounds its rings for large groups */
static ucs_config_field_t uct_o2m_incast_config_table[] = {
    {"O2M_", "", NULL, 0, UCS_CONFIG_TYPE_TABLE(uct_o2m_iface_config_table)},

    {NULL}
};


static ucs_status_t uct_o2m_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    memset(attr, 0, sizeof(*attr));
    /* Registration is a no-op: large messages are read with
     * process_vm_readv, which needs no pinned or registered memory.
     * Announcing it lets UCP use the zcopy path. */
    attr->cap.flags            = UCT_MD_FLAG_REG;
    attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.max_reg          = ULONG_MAX;
    attr->rkey_packed_size     = 0;
    attr->reg_cost             = ucs_linear_func_make(0, 0);
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t uct_o2m_mem_reg(uct_md_h md, void *address, size_t length,
                                    unsigned flags, uct_mem_h *memh_p)
{
    /* Any non-NULL handle: there is nothing to register */
    *memh_p = (uct_mem_h)address;
    return UCS_OK;
}

static void uct_o2m_md_close(uct_md_h md)
{
    ucs_free(md);
}

static uct_md_ops_t uct_o2m_md_ops = {
    .close              = uct_o2m_md_close,
    .query              = uct_o2m_md_query,
    .mkey_pack          = (uct_md_mkey_pack_func_t)
            ucs_empty_function_return_success,
    .mem_reg            = uct_o2m_mem_reg,
    .mem_dereg          = (uct_md_mem_dereg_func_t)
            ucs_empty_function_return_success,
    .detect_memory_type = (uct_md_detect_memory_type_func_t)
            ucs_empty_function_return_unsupported
};

static ucs_status_t uct_o2m_md_open(uct_component_t *component,
                                    const char *md_name,
                                    const uct_md_config_t *config,
                                    uct_md_h *md_p)
{
    uct_md_t *md = ucs_calloc(1, sizeof(*md), "o2m md");

    if (md == NULL) {
        ucs_error("failed to allocate the %s memory domain", md_name);
        return UCS_ERR_NO_MEMORY;
    }

    md->ops       = &uct_o2m_md_ops;
    md->component = &uct_o2m_component;
    *md_p         = md;
    return UCS_OK;
}

static ucs_status_t uct_o2m_rkey_unpack(uct_component_t *component,
                                        const void *rkey_buffer,
                                        uct_rkey_t *rkey_p, void **handle_p)
{
    *rkey_p   = 0;
    *handle_p = NULL;
    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* Transports                                                              */

#define UCT_O2M_IFACE_OPS_INITIALIZER(_iface_class) { \
    .ep_am_short              = uct_o2m_ep_am_short, \
    .ep_am_short_iov          = uct_base_ep_am_short_iov, \
    .ep_am_bcopy              = uct_o2m_ep_am_bcopy, \
    .ep_am_zcopy              = uct_o2m_ep_am_zcopy, \
    .ep_pending_add           = uct_o2m_ep_pending_add, \
    .ep_pending_purge         = uct_o2m_ep_pending_purge, \
    .ep_flush                 = uct_o2m_ep_flush, \
    .ep_fence                 = uct_sm_ep_fence, \
    .ep_check                 = uct_o2m_ep_check, \
    .ep_create                = uct_o2m_ep_create_p2p, \
    .ep_destroy               = uct_o2m_ep_destroy, \
    .iface_flush              = uct_o2m_iface_flush, \
    .iface_fence              = uct_sm_iface_fence, \
    .iface_progress_enable    = uct_base_iface_progress_enable, \
    .iface_progress_disable   = uct_base_iface_progress_disable, \
    .iface_progress           = uct_o2m_iface_progress, \
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(_iface_class), \
    .iface_query              = uct_o2m_iface_query_common, \
    .iface_get_device_address = uct_sm_iface_get_device_address, \
    .iface_get_address        = uct_o2m_iface_get_address, \
    .iface_is_reachable       = uct_o2m_iface_is_reachable \
}


typedef struct uct_o2m_bcast_iface {
    uct_o2m_iface_t super;
} uct_o2m_bcast_iface_t;

typedef struct uct_o2m_incast_iface {
    uct_o2m_iface_t super;
} uct_o2m_incast_iface_t;

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_o2m_bcast_iface_t, uct_iface_t);
static UCS_CLASS_DECLARE_DELETE_FUNC(uct_o2m_incast_iface_t, uct_iface_t);

static uct_iface_ops_t uct_o2m_bcast_iface_ops =
        UCT_O2M_IFACE_OPS_INITIALIZER(uct_o2m_bcast_iface_t);
static uct_iface_ops_t uct_o2m_incast_iface_ops =
        UCT_O2M_IFACE_OPS_INITIALIZER(uct_o2m_incast_iface_t);

static UCS_CLASS_INIT_FUNC(uct_o2m_bcast_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_o2m_iface_t, &uct_o2m_bcast_iface_ops, md,
                              worker, params, tl_config, 0);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_bcast_iface_t)
{
}

UCS_CLASS_DEFINE(uct_o2m_bcast_iface_t, uct_o2m_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_o2m_bcast_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_o2m_bcast_iface_t, uct_iface_t);

static UCS_CLASS_INIT_FUNC(uct_o2m_incast_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_o2m_iface_t, &uct_o2m_incast_iface_ops, md,
                              worker, params, tl_config, 1);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_o2m_incast_iface_t)
{
}

UCS_CLASS_DEFINE(uct_o2m_incast_iface_t, uct_o2m_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_o2m_incast_iface_t, uct_iface_t,
                                 uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_o2m_incast_iface_t, uct_iface_t);


static uct_component_t uct_o2m_component = {
    .query_md_resources = uct_md_query_single_md_resource,
    .md_open            = uct_o2m_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
            ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_o2m_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
            ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)
            ucs_empty_function_return_success,
    .name               = UCT_O2M_COMPONENT_NAME,
    .md_config          = {
        .name           = "One-to-many shared memory domain",
        .prefix         = "O2M_",
        .table          = uct_o2m_md_config_table,
        .size           = sizeof(uct_o2m_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_o2m_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
            ucs_empty_function
};

UCT_TL_DEFINE_ENTRY(&uct_o2m_component, sm_bcast,
                    uct_sm_base_query_tl_devices, uct_o2m_bcast_iface_t,
                    "SM_BCAST_", uct_o2m_bcast_config_table,
                    uct_o2m_iface_config_t);

UCT_TL_DEFINE_ENTRY(&uct_o2m_component, sm_incast,
                    uct_sm_base_query_tl_devices, uct_o2m_incast_iface_t,
                    "SM_INCAST_", uct_o2m_incast_config_table,
                    uct_o2m_iface_config_t);


/* ------------------------------------------------------------------------ */
/* Opening the transports (uct_o2m.h)                                       */

uct_component_h uct_o2m_component_find(const char *name)
{
    uct_component_h *components, found = NULL;
    uct_component_attr_t attr;
    ucs_status_t status;
    unsigned num, i;

    status = uct_query_components(&components, &num);
    if (status != UCS_OK) {
        ucs_diag("failed to query UCT components: %s",
                 ucs_status_string(status));
        return NULL;
    }

    for (i = 0; (i < num) && (found == NULL); ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, name)) {
            found = components[i];
        }
    }

    uct_release_component_list(components);
    return found;
}

ucs_status_t uct_o2m_iface_open_dev(uct_md_h md, uct_worker_h worker,
                                    const char *tl_name, const char *dev_name,
                                    const uct_iface_config_t *config,
                                    uct_error_handler_t err_handler,
                                    void *err_arg, uct_iface_h *iface_p)
{
    uct_iface_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl_name;
    params.mode.device.dev_name = dev_name;
    params.err_handler          = err_handler;
    params.err_handler_arg      = err_arg;
    params.err_handler_flags    = 0;
    return uct_iface_open(md, worker, &params, config, iface_p);
}


/* Internal structures of UCT change between releases: refuse any other */
static int uct_o2m_runtime_version_ok(void)
{
    unsigned major, minor, patch;

    ucp_get_version(&major, &minor, &patch);
    if ((major == UCT_O2M_UCX_MAJOR) && (minor == UCT_O2M_UCX_MINOR) &&
        (patch == UCT_O2M_UCX_PATCH)) {
        return 1;
    }

    /* The logger may not be set up yet in a constructor */
    fprintf(stderr, "[ucx-o2m] WARNING: built for UCX %d.%d.%d but the "
            "runtime UCX is %u.%u.%u: sm_bcast and sm_incast are not "
            "registered\n", UCT_O2M_UCX_MAJOR, UCT_O2M_UCX_MINOR,
            UCT_O2M_UCX_PATCH, major, minor, patch);
    return 0;
}

static void UCS_F_CTOR uct_o2m_init(void)
{
    if (!uct_o2m_runtime_version_ok()) {
        return;
    }

    uct_component_register(&uct_o2m_component);
    uct_tl_register(&uct_o2m_component, &UCT_TL_NAME(sm_bcast));
    uct_tl_register(&uct_o2m_component, &UCT_TL_NAME(sm_incast));
    uct_mc_udp_register();
#ifdef O2M_MC_VERBS
    uct_mc_verbs_register();
#endif
#ifdef O2M_MC_MLX5
    uct_mc_mlx5_register();
#endif
}
