/**
 * ucx-o2m tests: UCT interface of a test (uct_env.h).
 */
#include "uct_env.h"

extern "C" {
#include <ucs/time/time.h>
}

#include <sys/mman.h>
#include <sched.h>
#include <sys/wait.h>
#include <dirent.h>
#include <signal.h>
#include <cstring>
#include <chrono>
#include <thread>

namespace o2m_test {

uct_md_env::uct_md_env(const char *md_name)
{
    uct_md_config_t *md_config;
    ucs_status_t status;

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &m_async);
    CHILD_CHECK_OK(status);
    status = uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE, &m_worker);
    CHILD_CHECK_OK(status);

    m_component = find_component(md_name);

    status = uct_md_config_read(m_component, NULL, NULL, &md_config);
    CHILD_CHECK_OK(status);
    status = uct_md_open(m_component, md_name, md_config, &m_md);
    uct_config_release(md_config);
    CHILD_CHECK_OK(status);
}

uct_md_env::~uct_md_env()
{
    uct_md_close(m_md);
    uct_worker_destroy(m_worker);
    ucs_async_context_destroy(m_async);
}

uct_iface_config_t *uct_md_env::iface_config(const char *tl_name) const
{
    uct_iface_config_t *config;

    CHILD_CHECK_OK(uct_md_iface_config_read(m_md, tl_name, NULL, NULL,
                                            &config));
    return config;
}

/* mc_udp is a component of its own, on the loopback device: tests send
 * only on this host */
uct_env::uct_env(const std::string &tl_name,
                 const std::map<std::string, std::string> &config) :
    uct_md_env((tl_name == UCT_MC_UDP_TL_NAME) ? UCT_MC_UDP_TL_NAME : "o2m")
{
    const bool is_udp                = (tl_name == UCT_MC_UDP_TL_NAME);
    uct_iface_config_t *iface_config = uct_md_env::iface_config(
                                               tl_name.c_str());
    ucs_status_t status;

    for (const auto &kv : config) {
        status = uct_config_modify(iface_config, kv.first.c_str(),
                                   kv.second.c_str());
        if (status == UCS_ERR_NO_ELEM) {
            /* The transport's own variables live in a sub-table with the
             * prefix "O2M_" (UCX_O2M_FIFO_SIZE / UCX_SM_BCAST_FIFO_SIZE in
             * the environment); uct_config_modify() wants that prefix */
            status = uct_config_modify(iface_config,
                                       ("O2M_" + kv.first).c_str(),
                                       kv.second.c_str());
        }
        CHILD_CHECK(status == UCS_OK, "config %s=%s: %s", kv.first.c_str(),
                    kv.second.c_str(), ucs_status_string(status));
    }

    /* As UCG and the benchmarks open the plugin's transports */
    status = uct_o2m_iface_open_dev(m_md, m_worker, tl_name.c_str(),
                                    is_udp ? "lo" : "memory", iface_config,
                                    err_handler, this, &m_iface);
    uct_config_release(iface_config);
    CHILD_CHECK_OK(status);

    uct_iface_progress_enable(m_iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    status = uct_iface_query(m_iface, &m_attr);
    CHILD_CHECK_OK(status);
}

uct_env::~uct_env()
{
    uct_iface_close(m_iface);
}

std::vector<char> uct_env::iface_addr() const
{
    std::vector<char> addr(m_attr.iface_addr_len);
    ucs_status_t status;

    status = uct_iface_get_address(m_iface, (uct_iface_addr_t*)addr.data());
    CHILD_CHECK_OK(status);
    return addr;
}

std::vector<char> uct_env::dev_addr() const
{
    std::vector<char> addr(m_attr.device_addr_len);
    ucs_status_t status;

    status = uct_iface_get_device_address(m_iface,
                                          (uct_device_addr_t*)addr.data());
    CHILD_CHECK_OK(status);
    return addr;
}

unsigned uct_env::progress()
{
    return uct_worker_progress(m_worker);
}

bool uct_env::progress_until(const std::function<bool()> &cond,
                             double timeout)
{
    ucs_time_t deadline = ucs_get_time() +
                          ucs_time_from_sec((timeout > 0) ? timeout :
                                                            wait_timeout);

    while (!cond()) {
        if (ucs_get_time() > deadline) {
            return false;
        }
        if (progress() == 0) {
            /* Tests run more processes than cores: let the others run */
            sched_yield();
        }
    }
    return true;
}

void uct_env::set_am_handler(uint8_t id, uct_am_callback_t cb, void *arg)
{
    ucs_status_t status = uct_iface_set_am_handler(m_iface, id, cb, arg, 0);

    CHILD_CHECK_OK(status);
}

ucs_status_t uct_env::ep_create(const void *dev_addr, const void *iface_addr,
                                uct_ep_h *ep) const
{
    uct_ep_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = m_iface;
    params.dev_addr   = (const uct_device_addr_t*)dev_addr;
    params.iface_addr = (const uct_iface_addr_t*)iface_addr;
    return uct_ep_create(&params, ep);
}

ucs_status_t uct_env::err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    static_cast<uct_env*>(arg)->errors.push_back(status);
    return UCS_OK;
}

uct_component_h find_component(const char *name)
{
    uct_component_h found = uct_o2m_component_find(name);

    CHILD_CHECK(found != NULL, "component %s is not registered", name);
    return found;
}

unsigned progress_once(uct_env &env)
{
    unsigned count = env.progress();

    if (count == 0) {
        sched_yield();
    }
    return count;
}

void progress_for(uct_env &env, double seconds)
{
    double end = now_sec() + seconds;

    while (now_sec() < end) {
        progress_once(env);
    }
}

} // namespace o2m_test
