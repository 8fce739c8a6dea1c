/**
 * ucx-o2m tests: UCS log lines kept instead of printed.
 */
#ifndef O2M_TEST_LOG_CAPTURE_H_
#define O2M_TEST_LOG_CAPTURE_H_

extern "C" {
#include <ucs/debug/log_def.h>
}

#include <string>
#include <vector>
#include <cstdarg>

namespace o2m_test {

/*
 * While it lives, the warnings and errors UCS would log in this process are
 * kept here instead of printed (a test that provokes an error checks its
 * one log line, or just keeps the output clean); lower levels go on as
 * usual.  Captures nest: the innermost one gets the lines.
 */
class scoped_log_capture {
public:
    scoped_log_capture();
    ~scoped_log_capture();

    const std::vector<std::string> &lines() const { return m_lines; }

    /* Whether some captured line contains @a text */
    bool has(const std::string &text) const;

    /* The captured lines, one per line */
    std::string all() const;

private:
    static ucs_log_func_rc_t handler(const char *file, unsigned line,
                                     const char *function,
                                     ucs_log_level_t level,
                                     const ucs_log_component_config_t *comp,
                                     const char *message, va_list ap);

    std::vector<std::string> m_lines;
    scoped_log_capture       *m_outer;

    static scoped_log_capture *s_current;
};

} // namespace o2m_test

#endif
