/**
 * ucx-o2m: opening a UCT interface for the transport-level benchmarks
 * (perf_lib.h).
 */
#include "perf_lib.h"

#include <string.h>


void perf_uct_iface_open(const char *comp_name, const char *tl_name,
                         const char *dev_name, uct_worker_h worker,
                         uct_error_handler_t err_handler,
                         uct_md_h *md_p, uct_iface_h *iface_p)
{
    uct_component_h *components, component = NULL;
    uct_component_attr_t comp_attr;
    uct_md_config_t *md_config;
    uct_iface_config_t *iface_config;
    uct_iface_params_t params;
    unsigned num_components, i;
    ucs_status_t status;

    status = uct_query_components(&components, &num_components);
    PERF_CHECK_OK(status, "uct_query_components");
    for (i = 0; i < num_components; ++i) {
        comp_attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &comp_attr) == UCS_OK) &&
            !strcmp(comp_attr.name, comp_name)) {
            component = components[i];
        }
    }
    uct_release_component_list(components);
    if (component == NULL) {
        /* The components of the plugin are "o2m" and "mc_udp": without
         * them the plugin was not loaded, which is the likely mistake */
        perf_die("UCT component '%s' not found%s", comp_name,
                 (!strcmp(comp_name, "o2m") || !strcmp(comp_name, "mc_udp")) ?
                 " (the plugin libuct_o2m.so is not loaded)" : "");
    }

    status = uct_md_config_read(component, NULL, NULL, &md_config);
    PERF_CHECK_OK(status, "uct_md_config_read");
    status = uct_md_open(component, comp_name, md_config, md_p);
    uct_config_release(md_config);
    PERF_CHECK_OK(status, "uct_md_open");

    status = uct_md_iface_config_read(*md_p, tl_name, NULL, NULL,
                                      &iface_config);
    PERF_CHECK_OK(status, "uct_md_iface_config_read");

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
    params.err_handler_arg      = (void*)tl_name;
    params.err_handler_flags    = 0;
    status = uct_iface_open(*md_p, worker, &params, iface_config, iface_p);
    uct_config_release(iface_config);
    if (status != UCS_OK) {
        perf_die("%s on %s: %s", tl_name, dev_name,
                 ucs_status_string(status));
    }
}
