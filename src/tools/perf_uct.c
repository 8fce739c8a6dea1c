/**
 * ucx-o2m: opening a UCT interface for the transport-level benchmarks
 * (perf_lib.h).
 */
#include "perf_lib.h"
#include "uct_o2m.h"

#include <string.h>


void perf_uct_iface_open(const char *comp_name, const char *tl_name,
                         const char *dev_name, uct_worker_h worker,
                         uct_error_handler_t err_handler,
                         uct_md_h *md_p, uct_iface_h *iface_p)
{
    uct_component_h component;
    uct_md_config_t *md_config;
    uct_iface_config_t *iface_config;
    ucs_status_t status;

    component = uct_o2m_component_find(comp_name);
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

    status = uct_o2m_iface_open_dev(*md_p, worker, tl_name, dev_name,
                                    iface_config, err_handler,
                                    (void*)tl_name, iface_p);
    uct_config_release(iface_config);
    if (status != UCS_OK) {
        perf_die("%s on %s: %s", tl_name, dev_name,
                 ucs_status_string(status));
    }
}
