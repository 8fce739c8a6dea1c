/**
 * ucx-o2m tests: multi-process harness and UCT helpers.
 *
 * A test that needs several processes builds a proc_group before it touches
 * UCX, then run()s a function in N forked children.  Children exchange
 * addresses and synchronize through an anonymous shared mapping made before
 * the fork.  Every wait is bounded: a child that blocks too long fails, and
 * the parent kills children that outlive the test's timeout.
 *
 * Inside a child, gtest assertions do not reach the parent: use CHILD_CHECK,
 * which prints the failure and exits the child with status 1.
 */
#ifndef O2M_TEST_COMMON_H_
#define O2M_TEST_COMMON_H_

extern "C" {
#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <ucs/debug/log_def.h>
#include "uct_o2m.h"
}

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>


#define CHILD_CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "[pid %d] %s:%d: CHILD_CHECK(%s) failed: ", \
                    getpid(), __FILE__, __LINE__, #_cond); \
            fprintf(stderr, "" __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            fflush(stderr); \
            _exit(1); \
        } \
    } while (0)

/* Evaluates @a _status once: a failed call is not made again to print it */
#define CHILD_CHECK_OK(_status) \
    do { \
        ucs_status_t _child_st = (_status); \
        CHILD_CHECK(_child_st == UCS_OK, "%s: %s", #_status, \
                    ucs_status_string(_child_st)); \
    } while (0)


namespace o2m_test {

/* Seconds a single wait inside a child may last before the child fails */
extern double wait_timeout;


class proc_group {
public:
    /* @a shared_size bytes of zeroed memory shared by all children */
    explicit proc_group(unsigned nprocs, size_t shared_size = 1 << 20);
    ~proc_group();

    /*
     * Fork nprocs children running fn(rank) and wait for all of them, at
     * most @a timeout seconds (then they are killed).  Returns the exit
     * status of each child: 0 when fn returned, 1 on CHILD_CHECK failure,
     * 128 + signal number when killed.
     */
    std::vector<int> run(const std::function<void(unsigned)> &fn,
                         double timeout = 120);

    /* Same, and fails the test unless every child exited with 0 */
    void run_ok(const std::function<void(unsigned)> &fn,
                double timeout = 120);

    unsigned size() const { return m_nprocs; }

    /* Child side */
    void barrier(unsigned rank);
    void allgather(unsigned rank, const void *mine, size_t length,
                   void *all);
    void *shared() { return m_user; }
    std::vector<pid_t> pids() const;

private:
    struct control;

    unsigned m_nprocs;
    size_t   m_size;
    control  *m_ctl;
    void     *m_user;
};


/* One UCT interface of the o2m component in this process */
class uct_env {
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

    /* Error handler calls seen on this interface */
    std::vector<ucs_status_t> errors;

private:
    static ucs_status_t err_handler(void *arg, uct_ep_h ep,
                                    ucs_status_t status);

    ucs_async_context_t *m_async;
    uct_worker_h        m_worker;
    uct_component_h     m_component;
    uct_md_h            m_md;
    uct_iface_h         m_iface;
    uct_iface_attr_t    m_attr;
};


/* The UCT component called @a name (CHILD_CHECK fails when absent) */
uct_component_h find_component(const char *name);

/*
 * What the project creates, and only that: other jobs on the machine (an
 * Open MPI job's vader_segment.* files, another test suite's segments) are
 * none of a test's business.
 */

/* Prefix of every name the project gives: memfd segments ("ucx-o2m-...",
 * seen as "/memfd:ucx-o2m-... (deleted)" in /proc) and any file a test
 * makes */
extern const char *const o2m_name_prefix;

/* Names in /dev/shm that start with o2m_name_prefix */
std::vector<std::string> dev_shm_files();

/* The o2m segments process @a pid holds: "fd N -> /memfd:ucx-o2m-..." for
 * open descriptors and the /proc/<pid>/maps lines of its mappings */
std::vector<std::string> o2m_held(pid_t pid);

/* This process and its descendants (children of the test still alive) */
std::vector<pid_t> test_processes();

/* o2m_held() of every process of the test, each line "pid P: ..." */
std::vector<std::string> o2m_held_by_test();

/* Run a shell command with a timeout (seconds); returns its output and
 * sets *status to its exit status (124 on timeout) */
std::string run_command(const std::string &cmd, int *status,
                        int timeout = 60);

/* Path of the plugin in the build tree */
const char *plugin_path();

/* LD_PRELOAD value for running an uninstrumented UCX tool with the plugin */
std::string plugin_preload();

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
