/**
 * ucx-o2m tests: multi-process harness (harness.h).
 */
#include "harness.h"

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

double wait_timeout = 30.0;

double now_sec()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + (ts.tv_nsec * 1e-9);
}

static const unsigned max_procs   = 256;
static const size_t   gather_size = 64 * 1024;

struct proc_group::control {
    volatile unsigned count;
    volatile unsigned generation;
    pid_t             pids[max_procs];
    char              gather[gather_size];
};

proc_group::proc_group(unsigned nprocs, size_t shared_size) :
    m_nprocs(nprocs), m_size(sizeof(control) + shared_size)
{
    void *ptr;

    EXPECT_LE(nprocs, max_procs);
    ptr = mmap(NULL, m_size, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) {
        ADD_FAILURE() << "mmap failed: " << strerror(errno);
        abort();
    }

    m_ctl  = static_cast<control*>(ptr);
    m_user = m_ctl + 1;
}

proc_group::~proc_group()
{
    munmap(m_ctl, m_size);
}

std::vector<pid_t> proc_group::pids() const
{
    return std::vector<pid_t>(m_ctl->pids, m_ctl->pids + m_nprocs);
}

std::vector<int> proc_group::run(const std::function<void(unsigned)> &fn,
                                 double timeout)
{
    std::vector<int> status(m_nprocs, -1);
    unsigned rank, left;
    int wstatus;
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    for (rank = 0; rank < m_nprocs; ++rank) {
        pid = fork();
        if (pid == 0) {
            m_ctl->pids[rank] = getpid();
            fn(rank);
            fflush(stdout);
            fflush(stderr);
            _exit(0);
        } else if (pid < 0) {
            ADD_FAILURE() << "fork failed: " << strerror(errno);
            break;
        }
        m_ctl->pids[rank] = pid;
    }

    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds((long)(timeout * 1000));
    left = rank;
    while (left > 0) {
        pid = waitpid(-1, &wstatus, WNOHANG);
        if (pid > 0) {
            for (unsigned r = 0; r < m_nprocs; ++r) {
                if (m_ctl->pids[r] == pid) {
                    status[r] = WIFEXITED(wstatus) ?
                                WEXITSTATUS(wstatus) :
                                128 + WTERMSIG(wstatus);
                    --left;
                }
            }
            continue;
        }

        if (std::chrono::steady_clock::now() > deadline) {
            ADD_FAILURE() << "children still running after " << timeout
                          << " s: killing them";
            for (unsigned r = 0; r < m_nprocs; ++r) {
                if (status[r] == -1) {
                    kill(m_ctl->pids[r], SIGKILL);
                }
            }
            deadline = std::chrono::steady_clock::now() +
                       std::chrono::hours(1);
            continue;
        }

        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    return status;
}

void expect_only_killed(const std::vector<int> &status, unsigned victim,
                        const std::string &label)
{
    for (unsigned r = 0; r < status.size(); ++r) {
        EXPECT_EQ((r == victim) ? (128 + SIGKILL) : 0, status[r])
            << label << ": child rank " << r;
    }
}

void proc_group::run_ok(const std::function<void(unsigned)> &fn,
                        double timeout)
{
    std::vector<int> status = run(fn, timeout);

    for (unsigned r = 0; r < status.size(); ++r) {
        EXPECT_EQ(0, status[r]) << "child rank " << r;
    }
}

void proc_group::barrier(unsigned rank)
{
    unsigned gen = __atomic_load_n(&m_ctl->generation, __ATOMIC_ACQUIRE);
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds((long)(wait_timeout * 1000));

    if (__atomic_add_fetch(&m_ctl->count, 1, __ATOMIC_ACQ_REL) == m_nprocs) {
        m_ctl->count = 0;
        __atomic_store_n(&m_ctl->generation, gen + 1, __ATOMIC_RELEASE);
        return;
    }

    while (__atomic_load_n(&m_ctl->generation, __ATOMIC_ACQUIRE) == gen) {
        CHILD_CHECK(std::chrono::steady_clock::now() < deadline,
                    "rank %u: barrier timed out", rank);
        sched_yield();
    }
}

void proc_group::allgather(unsigned rank, const void *mine, size_t length,
                           void *all)
{
    CHILD_CHECK(length * m_nprocs <= gather_size, "allgather too large");
    memcpy(m_ctl->gather + (rank * length), mine, length);
    barrier(rank);
    memcpy(all, m_ctl->gather, length * m_nprocs);
    barrier(rank);
}

} // namespace o2m_test
