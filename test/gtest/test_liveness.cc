/**
 * ucx-o2m tests: liveness of peer processes (uct_o2m_watch_*), the one
 * implementation the transports and UCG share.
 *
 *  - liveness.<mode>: a watched live peer is alive, also while stopped;
 *    the same process is watched once per table; a pid with another start
 *    time is not taken for the process; a killed peer is detected.  Modes:
 *    a normal process; pidfd_open failing with ENOSYS (seccomp, as on
 *    kernels before 5.3); the fd limit reached (RLIMIT_NOFILE, EMFILE).
 *  - liveness.group_no_pidfd_open: sm_bcast group and point-to-point
 *    endpoints are created without pidfd_open (they failed before), live
 *    members are not declared dead over many CHECK_INTERVALs, and a killed
 *    member fails the group.
 *  - p2p_claimer.<killed|stopped>: a point-to-point sender claims an
 *    element of the receiver's FIFO and dies (SIGKILL) or stops (SIGSTOP)
 *    before publishing it, from inside its bcopy pack callback.  Killed:
 *    the receiver skips the element and keeps receiving another sender's
 *    messages.  Stopped: nothing is skipped; once it continues, its message
 *    arrives, then the other sender's, in claim order.
 */
#include "common/harness.h"
#include "common/uct_env.h"
#include "common/peers.h"
#include "common/residue.h"
#include "common/sandbox.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <signal.h>
#include <cstring>

using namespace o2m_test;

namespace {

enum class impair { none, enosys, emfile };

/* A forked peer that reports who it is and waits until killed */
struct peer_proc {
    pid_t          pid;
    uct_o2m_proc_t proc;
};

peer_proc fork_peer()
{
    peer_proc peer;
    int fds[2];

    CHILD_CHECK(pipe(fds) == 0, "pipe: %m");
    peer.pid = fork();
    CHILD_CHECK(peer.pid >= 0, "fork: %m");
    if (peer.pid == 0) {
        uct_o2m_proc_t self;

        /* Not left behind, stopped or not, by a failing test */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        uct_o2m_proc_self(&self);
        if (write(fds[1], &self, sizeof(self)) != sizeof(self)) {
            _exit(1);
        }
        for (;;) {
            pause();
        }
    }

    close(fds[1]);
    CHILD_CHECK(read(fds[0], &peer.proc, sizeof(peer.proc)) ==
                sizeof(peer.proc), "peer did not report: %m");
    close(fds[0]);
    CHILD_CHECK(peer.proc.pid == peer.pid, "peer pid %d != %d",
                peer.proc.pid, peer.pid);
    CHILD_CHECK(peer.proc.start_time != 0, "no start time");
    return peer;
}

/* Whether our child @a pid is stopped (no file descriptor needed) */
bool is_stopped(pid_t pid)
{
    siginfo_t si;

    memset(&si, 0, sizeof(si));
    return (waitid(P_PID, pid, &si, WSTOPPED | WNOHANG | WNOWAIT) == 0) &&
           (si.si_pid == pid);
}

template<typename F> bool wait_for(F cond)
{
    for (double t = 0; t < wait_timeout; t += 0.001) {
        if (cond()) {
            return true;
        }
        usleep(1000);
    }
    return cond();
}

/* Use up every file descriptor below a lowered RLIMIT_NOFILE */
void exhaust_fds()
{
    struct rlimit rl;

    CHILD_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit: %m");
    rl.rlim_cur = 256;
    CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit: %m");
    while (dup(0) >= 0) {
    }
    CHILD_CHECK(errno == EMFILE, "dup stopped with %m, not EMFILE");
}

void check_liveness(impair mode)
{
    uct_o2m_watch_table_t *table;
    uct_o2m_watch_t *watch, *again, *other;
    uct_o2m_proc_t reused;
    peer_proc peer;
    int status;

    if (mode == impair::enosys) {
        CHILD_CHECK(deny_syscall(SYS_pidfd_open, ENOSYS), "seccomp: %m");
        CHILD_CHECK((syscall(SYS_pidfd_open, getpid(), 0) < 0) &&
                    (errno == ENOSYS), "pidfd_open still works");
    }

    peer = fork_peer();
    CHILD_CHECK_OK(uct_o2m_watch_table_create(&table));
    if (mode == impair::emfile) {
        exhaust_fds();
    }

    CHILD_CHECK_OK(uct_o2m_watch_get(table, &peer.proc, &watch));
    if (mode != impair::none) {
        CHILD_CHECK(!uct_o2m_watch_has_pidfd(watch), "a pidfd while "
                    "pidfd_open cannot work");
    }

    /* Alive, also when asked again and again */
    for (int i = 0; i < 20; ++i) {
        CHILD_CHECK(!uct_o2m_watch_has_exited(watch), "a live peer is "
                    "declared dead (check %d)", i);
        usleep(1000);
    }

    /* Watched once per table */
    CHILD_CHECK_OK(uct_o2m_watch_get(table, &peer.proc, &again));
    CHILD_CHECK(again == watch, "second watch of the same process");
    uct_o2m_watch_put(table, again);

    /* Stopped is not dead */
    CHILD_CHECK(kill(peer.pid, SIGSTOP) == 0, "SIGSTOP: %m");
    CHILD_CHECK(wait_for([&] { return is_stopped(peer.pid); }),
                "peer did not stop");
    CHILD_CHECK(!uct_o2m_watch_has_exited(watch), "a stopped peer is "
                "declared dead");
    CHILD_CHECK(kill(peer.pid, SIGCONT) == 0, "SIGCONT: %m");

    /* The same pid started at another time is another process (at the fd
     * limit /proc cannot be read: then kill(pid, 0) alone decides) */
    reused             = peer.proc;
    reused.start_time += 1;
    CHILD_CHECK_OK(uct_o2m_watch_get(table, &reused, &other));
    CHILD_CHECK(other != watch, "start time ignored");
    CHILD_CHECK((mode == impair::emfile) || uct_o2m_watch_has_exited(other),
                "a reused pid is taken for the process that had it");
    uct_o2m_watch_put(table, other);

    CHILD_CHECK(kill(peer.pid, SIGKILL) == 0, "SIGKILL: %m");
    if (mode == impair::emfile) {
        /* /proc cannot be read at the fd limit: a zombie is not seen, a
         * reaped process is (kill(pid, 0) fails) */
        CHILD_CHECK(waitpid(peer.pid, &status, 0) == peer.pid, "waitpid: %m");
    }
    CHILD_CHECK(wait_for([&] { return uct_o2m_watch_has_exited(watch); }),
                "killed peer %d not detected", peer.pid);
    if (mode != impair::emfile) {
        /* Detected before it was reaped: a zombie has exited */
        CHILD_CHECK(waitpid(peer.pid, &status, 0) == peer.pid, "waitpid: %m");
    }

    uct_o2m_watch_put(table, watch);
    uct_o2m_watch_table_destroy(table);
}

class liveness : public ::testing::Test {
protected:
    shm_residue_check m_shm;
};

TEST_F(liveness, pidfd)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) { check_liveness(impair::none); }, 60);
}

TEST_F(liveness, no_pidfd_open)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) { check_liveness(impair::enosys); }, 60);
}

TEST_F(liveness, fd_limit)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) { check_liveness(impair::emfile); }, 60);
}


/* Point-to-point messages seen by the receiver: (sender, index) */
struct claim_msg {
    uint32_t sender;
    uint32_t index;
};

ucs_status_t claim_am_cb(void *arg, void *data, size_t length,
                         unsigned flags)
{
    auto *log = static_cast<std::vector<claim_msg>*>(arg);
    claim_msg msg;

    CHILD_CHECK(length == sizeof(uint64_t) + sizeof(msg), "length %zu",
                length);
    memcpy(&msg, UCS_PTR_BYTE_OFFSET(data, sizeof(uint64_t)), sizeof(msg));
    log->push_back(msg);
    return UCS_OK;
}

struct claim_shared {
    volatile int claimed;     /* Sender 1 is inside its pack callback */
};

claim_shared *g_claim_shared;
bool          g_claim_kill;

size_t claim_pack_and_die(void *dest, void *arg)
{
    claim_msg msg = {1, 3};
    uint64_t hdr  = 0;

    __atomic_store_n(&g_claim_shared->claimed, 1, __ATOMIC_RELEASE);
    /* Between claim and publish */
    kill(getpid(), g_claim_kill ? SIGKILL : SIGSTOP);
    memcpy(dest, &hdr, sizeof(hdr));
    memcpy(UCS_PTR_BYTE_OFFSET(dest, sizeof(hdr)), &msg, sizeof(msg));
    return sizeof(hdr) + sizeof(msg);
}

uct_ep_h claim_ep(uct_env &env, const peer_addrs &addrs, unsigned peer)
{
    uct_ep_h ep;

    CHILD_CHECK_OK(addrs.p2p_ep_create(env, peer, &ep));
    return ep;
}

void claim_send(uct_env &env, uct_ep_h ep, uint32_t sender, uint32_t index)
{
    claim_msg msg = {sender, index};
    ucs_status_t status;

    CHILD_CHECK(env.progress_until([&] {
        status = uct_ep_am_short(ep, 1, 0, &msg, sizeof(msg));
        return status != UCS_ERR_NO_RESOURCE;
    }), "sender %u: message %u not sent", sender, index);
    CHILD_CHECK_OK(status);
}

class p2p_claimer : public ::testing::TestWithParam<bool> {
protected:
    shm_residue_check m_shm;
};

TEST_P(p2p_claimer, receiver_goes_on)
{
    const bool killed     = GetParam();
    const unsigned first  = 3;  /* Sender 1's messages before the claim */
    const unsigned others = 20; /* Sender 2's: more than the FIFO holds */
    proc_group pg(3);

    g_claim_shared = static_cast<claim_shared*>(pg.shared());
    g_claim_kill   = killed;

    std::vector<int> status = pg.run([&](unsigned rank) {
        uct_env env("sm_bcast", {{"P2P_FIFO_SIZE", "8"},
                                 {"CHECK_INTERVAL", "10ms"}});
        std::vector<claim_msg> log;
        peer_addrs addrs;

        env.set_am_handler(1, claim_am_cb, &log);
        addrs.exchange(pg, rank, env);

        if (rank == 0) {
            auto count = [&](uint32_t sender) {
                unsigned n = 0;
                for (const claim_msg &m : log) {
                    n += (m.sender == sender);
                }
                return n;
            };

            CHILD_CHECK(env.progress_until([&] { return count(1) == first; }),
                        "sender 1's first messages");
            if (!killed) {
                /* Many CHECK_INTERVALs: the stopped claimer is waited for,
                 * and sender 2 is behind it */
                CHILD_CHECK(env.progress_until([&] {
                    return __atomic_load_n(&g_claim_shared->claimed,
                                           __ATOMIC_ACQUIRE) != 0;
                }), "no claim");
                for (int i = 0; i < 30; ++i) {
                    env.progress_until([] { return false; }, 0.01);
                }
                CHILD_CHECK(log.size() == first, "%zu messages passed a "
                            "stopped claimer", log.size());
                CHILD_CHECK(kill(pg.pids()[1], SIGCONT) == 0, "SIGCONT: %m");
            }

            CHILD_CHECK(env.progress_until([&] {
                return count(2) == others;
            }), "sender 2: %u of %u messages", count(2), others);
            CHILD_CHECK(count(1) == first + !killed, "sender 1: %u messages",
                        count(1));
            for (size_t i = 0, n1 = 0, n2 = 0; i < log.size(); ++i) {
                size_t &n = (log[i].sender == 1) ? n1 : n2;
                CHILD_CHECK(log[i].index == n, "sender %u: message %u at "
                            "%zu", log[i].sender, log[i].index, n);
                ++n;
                /* Claim order: the stopped claimer's message first */
                CHILD_CHECK(killed || (log[i].sender == 2) || (n2 == 0),
                            "sender 2 passed the stopped claimer");
            }
            return;
        }

        uct_ep_h ep = claim_ep(env, addrs, 0);
        if (rank == 1) {
            for (unsigned i = 0; i < first; ++i) {
                claim_send(env, ep, 1, i);
            }
            CHILD_CHECK(uct_ep_am_bcopy(ep, 1, claim_pack_and_die, NULL, 0) >
                        0, "bcopy");
            CHILD_CHECK(!killed, "alive after SIGKILL");
        } else {
            CHILD_CHECK(env.progress_until([&] {
                return __atomic_load_n(&g_claim_shared->claimed,
                                       __ATOMIC_ACQUIRE) != 0;
            }), "no claim");
            for (unsigned i = 0; i < others; ++i) {
                claim_send(env, ep, 2, i);
            }
        }
        CHILD_CHECK(env.progress_until([&] {
            return uct_ep_flush(ep, 0, NULL) == UCS_OK;
        }), "flush");
        uct_ep_destroy(ep);
    }, 120);

    EXPECT_EQ(0, status[0]);
    EXPECT_EQ(killed ? 128 + SIGKILL : 0, status[1]);
    EXPECT_EQ(0, status[2]);
}

INSTANTIATE_TEST_SUITE_P(claimer, p2p_claimer, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool> &info) {
                             return std::string(info.param ? "killed" :
                                                             "stopped");
                         });


ucs_status_t count_am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    ++*static_cast<unsigned*>(arg);
    return UCS_OK;
}

TEST_F(liveness, group_no_pidfd_open)
{
    proc_group pg(3);

    std::vector<int> status = pg.run([&](unsigned rank) {
        CHILD_CHECK(deny_syscall(SYS_pidfd_open, ENOSYS), "seccomp: %m");

        uct_env env("sm_bcast", {{"CHECK_INTERVAL", "10ms"}});
        uct_o2m_group_params_t params;
        unsigned received = 0;
        peer_addrs addrs;
        uct_ep_h ep, p2p;

        env.set_am_handler(1, count_am_cb, &received);
        addrs.exchange(pg, rank, env);

        params = addrs.group_params(0x11fe, 3, rank);
        group_ep_create_root_first(pg, rank, env, params, &ep);

        /* And a point-to-point endpoint to the next process */
        CHILD_CHECK_OK(addrs.p2p_ep_create(env, (rank + 1) % 3, &p2p));
        pg.barrier(rank);

        if (rank == 0) {
            for (unsigned i = 0; i < 10; ++i) {
                ucs_status_t st;
                CHILD_CHECK(env.progress_until([&] {
                    st = uct_ep_am_short(ep, 1, i, NULL, 0);
                    return st != UCS_ERR_NO_RESOURCE;
                }), "send %u", i);
                CHILD_CHECK_OK(st);
            }
            CHILD_CHECK(env.progress_until([&] {
                return uct_ep_flush(ep, 0, NULL) == UCS_OK;
            }), "flush");
        } else {
            CHILD_CHECK(env.progress_until([&] { return received == 10; }),
                        "rank %u: %u of 10 messages", rank, received);
        }

        /* Many liveness checks: nobody is declared dead */
        for (int i = 0; i < 30; ++i) {
            env.progress_until([] { return false; }, 0.01);
        }
        CHILD_CHECK(env.errors.empty(), "rank %u: %zu errors with every "
                    "member alive", rank, env.errors.size());
        pg.barrier(rank);

        if (rank == 2) {
            sleep(60); /* Killed here */
            CHILD_CHECK(0, "not killed");
        }
        if (rank == 1) {
            CHILD_CHECK(kill(pg.pids()[2], SIGKILL) == 0, "kill: %m");
        }
        /* The root sees the death; rank 1 learns it from the root */
        CHILD_CHECK(env.progress_until([&] { return !env.errors.empty(); }),
                    "rank %u: the killed member is not detected", rank);
        CHILD_CHECK(env.errors[0] == UCS_ERR_CONNECTION_RESET, "rank %u: %s",
                    rank, ucs_status_string(env.errors[0]));
        uct_ep_destroy(p2p);
        uct_ep_destroy(ep);
    }, 120);

    EXPECT_EQ(0, status[0]);
    EXPECT_EQ(0, status[1]);
    EXPECT_EQ(128 + SIGKILL, status[2]);
}

} // namespace
