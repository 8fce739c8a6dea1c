/**
 * ucx-o2m tests: log capture (log_capture.h).
 */
#include "log_capture.h"

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

scoped_log_capture *scoped_log_capture::s_current = NULL;

scoped_log_capture::scoped_log_capture() : m_outer(s_current)
{
    s_current = this;
    ucs_log_push_handler(handler);
}

scoped_log_capture::~scoped_log_capture()
{
    ucs_log_pop_handler();
    s_current = m_outer;
}

ucs_log_func_rc_t
scoped_log_capture::handler(const char *file, unsigned line,
                            const char *function, ucs_log_level_t level,
                            const ucs_log_component_config_t *comp,
                            const char *message, va_list ap)
{
    char buf[512];
    va_list aq;

    if ((level > UCS_LOG_LEVEL_WARN) || (s_current == NULL)) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }

    va_copy(aq, ap);
    vsnprintf(buf, sizeof(buf), message, aq);
    va_end(aq);
    s_current->m_lines.push_back(buf);
    return UCS_LOG_FUNC_RC_STOP;
}

bool scoped_log_capture::has(const std::string &text) const
{
    for (const std::string &l : m_lines) {
        if (l.find(text) != std::string::npos) {
            return true;
        }
    }
    return false;
}

std::string scoped_log_capture::all() const
{
    std::string s;

    for (const std::string &l : m_lines) {
        s += l + "\n";
    }
    return s;
}

} // namespace o2m_test
