/**
 * ucx-o2m tests: one UCT interface of the o2m component in this process,
 * and bounded progress on it.
 */
#ifndef O2M_TEST_UCT_ENV_H_
#define O2M_TEST_UCT_ENV_H_

#include "harness.h"

extern "C" {
#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include "uct_o2m.h"
}

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace o2m_test {

/*
 * The memory domain of UCT component @a md_name in this process, with the
 * async context and the worker an interface on it needs (closed in the
 * reverse order)
 */
class uct_md_env {
public:
    explicit uct_md_env(const char *md_name);
    ~uct_md_env();

    uct_md_h md() const { return m_md; }
    uct_worker_h worker() const { return m_worker; }

    /* Transport @a tl_name's configuration on this domain; the caller
     * releases it (uct_config_release) */
    uct_iface_config_t *iface_config(const char *tl_name) const;

protected:
    ucs_async_context_t *m_async;
    uct_worker_h        m_worker;
    uct_component_h     m_component;
    uct_md_h            m_md;
};

/* One UCT interface of the o2m component in this process */
class uct_env : public uct_md_env {
public:
    uct_env(const std::string &tl_name,
            const std::map<std::string, std::string> &config = {});
    ~uct_env();

    uct_iface_h iface() const { return m_iface; }
    const uct_iface_attr_t &attr() const { return m_attr; }
    std::vector<char> iface_addr() const;
    std::vector<char> dev_addr() const;

    unsigned progress();

    /* Progress until cond() is true; false after wait_timeout seconds */
    bool progress_until(const std::function<bool()> &cond,
                        double timeout = 0);

    void set_am_handler(uint8_t id, uct_am_callback_t cb, void *arg);

    /* A point-to-point endpoint to the interface at these addresses, as
     * UCP creates it; uct_ep_create's status */
    ucs_status_t ep_create(const void *dev_addr, const void *iface_addr,
                           uct_ep_h *ep) const;

    /* Error handler calls seen on this interface */
    std::vector<ucs_status_t> errors;

private:
    static ucs_status_t err_handler(void *arg, uct_ep_h ep,
                                    ucs_status_t status);

    uct_iface_h         m_iface;
    uct_iface_attr_t    m_attr;
};


/* The UCT component called @a name (CHILD_CHECK fails when absent) */
uct_component_h find_component(const char *name);

/* One progress call; yields the CPU when nothing happened (the tests run
 * more busy processes than there are cores) */
unsigned progress_once(uct_env &env);

/* Progress for @a seconds */
void progress_for(uct_env &env, double seconds);

/* Progress until cond() (true) or the timeout (false) */
template <typename Cond>
static inline bool progress_wait(uct_env &env, Cond cond,
                                 double timeout = 0)
{
    double end = now_sec() + ((timeout > 0) ? timeout : wait_timeout);

    while (!cond()) {
        if (now_sec() > end) {
            return false;
        }
        progress_once(env);
    }
    return true;
}

static inline bool is_error(ucs_status_t status)
{
    return UCS_STATUS_IS_ERR(status) && (status != UCS_ERR_NO_RESOURCE);
}

static inline bool has_error(const uct_env &env, ucs_status_t status)
{
    return std::find(env.errors.begin(), env.errors.end(), status) !=
           env.errors.end();
}

} // namespace o2m_test

#endif
