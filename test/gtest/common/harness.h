/**
 * ucx-o2m tests: multi-process harness.
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
#ifndef O2M_TEST_HARNESS_H_
#define O2M_TEST_HARNESS_H_

extern "C" {
#include <ucs/type/status.h>
}

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>
#include <cstdio>
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

/* Seconds on the monotonic clock (the same clock in every process) */
double now_sec();


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

/* In the parent, after proc_group::run(): every child exited with 0 but
 * @a victim, killed (SIGKILL); @a label names the test in the failures */
void expect_only_killed(const std::vector<int> &status, unsigned victim,
                        const std::string &label = "");


} // namespace o2m_test

#endif
