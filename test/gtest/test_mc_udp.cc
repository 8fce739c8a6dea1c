/**
 * ucx-o2m tests: the mc_udp transport (UDP/IP multicast on the reliable
 * multicast engine), between forked processes on the loopback device.
 *
 *  - mc_udp.p2p_*: a plain uct_ep_create to a peer's interface address
 *    (what UCP uses): am_short and am_bcopy of every size up to SEG_SIZE,
 *    both ways, in order and exact, flush; a small window and MTU so that
 *    messages are fragmented and the window fills
 *  - mc_udp.group_*: uct_o2m_ep_create groups of 2..5 members: every member
 *    receives every message of the root once, in order, exact; a member
 *    killed fails the group on every other member; a rogue sender's
 *    garbage and forged packets to the unicast and multicast ports are
 *    dropped and counted, and the traffic around them is still exact
 *
 * Skipped when multicast on the loopback device does not work here.
 */
#include "common/harness.h"
#include "common/am_msgs.h"
#include "common/uct_env.h"
#include "common/traffic.h"
#include "common/peers.h"
#include "common/tools.h"
#include "common/multicast.h"
#include "common/log_capture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <fstream>
#include <random>
#include <sstream>

using namespace o2m_test;

namespace {

const char *MC_BASE = "239.255.64.0";

using rx_log = am_rx_log;

const uint8_t AM_ID = 7;

/* Message k: 8-byte index, then a pattern of key (salt, k) */
size_t msg_size(unsigned k, size_t max)
{
    static const size_t sizes[] = {8, 9, 64, 100, 1000, 1400, 1500, 3000,
                                   5000};
    size_t s = sizes[k % (sizeof(sizes) / sizeof(sizes[0]))] + (k % 13);

    return std::min(s, max);
}

/* ... exact, in order, and each handed to the AM handler 8-byte aligned
 * (the 8-byte AM header: the AM id alone put it one byte off) */
void check_msgs(const rx_log &log, uint64_t salt, unsigned count,
                size_t max, const char *what)
{
    am_msgs_check(log, salt, count, msg_size, max, what);
    am_msgs_check_aligned(log, what);
}

/* Send message k: am_short when it fits, else am_bcopy; retried on
 * NO_RESOURCE with progress, bounded */
ucs_status_t send_msg(uct_env &env, uct_ep_h ep, uint64_t salt, unsigned k,
                      size_t max)
{
    return am_msg_send(env, ep, AM_ID, salt, k, msg_size(k, max),
                       env.attr().cap.am.max_short);
}

/* Sends message @a k and flushes, again and again, until that fails
 * (bounded: a CHILD_CHECK failure); the error */
ucs_status_t send_until_failed(uct_env &env, uct_ep_h ep, uint64_t salt,
                               unsigned k, size_t max, const char *who)
{
    ucs_status_t status = UCS_OK;

    CHILD_CHECK(env.progress_until([&] {
                    status = send_msg(env, ep, salt, k, max);
                    if (status == UCS_OK) {
                        status = am_ep_flush(env, ep);
                    }
                    return status != UCS_OK;
                }), "%s: the endpoint did not fail", who);
    return status;
}

/* Progress until group member @a ep reports its group failed (bounded) */
void wait_group_failed(uct_env &env, uct_ep_h ep, unsigned rank)
{
    ucs_status_t status = UCS_OK;

    CHILD_CHECK(env.progress_until([&] {
                    (void)uct_o2m_ep_state(ep, &status);
                    return status != UCS_OK;
                }), "member %u: the group did not fail", rank);
}

/* @a log records what this process's interface receives; then every rank
 * of @a pg learns every interface's address */
void log_and_exchange(proc_group &pg, unsigned rank, uct_env &env,
                      rx_log &log, peer_addrs &addrs)
{
    env.set_am_handler(AM_ID, rx_log::cb, &log);
    addrs.exchange(pg, rank, env);
}

class mc_udp : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::string why;
        std::random_device rd;

        if (!loopback_multicast_works(&why)) {
            GTEST_SKIP() << "multicast on the loopback device does not "
                            "work here: " << why;
        }
        /* A port and group ids of this run: other jobs may run the same
         * tests on this host at the same time */
        m_port = std::to_string(20000 + (rd() % 30000));
        m_salt = ((uint64_t)rd() << 32) | rd();
    }

    std::map<std::string, std::string> config(
            std::map<std::string, std::string> extra = {}) const
    {
        std::map<std::string, std::string> c = {{"MCAST_PORT", m_port},
                                                {"MCAST_BASE", MC_BASE}};
        for (const auto &kv : extra) {
            c[kv.first] = kv.second;
        }
        return c;
    }

    uct_o2m_group_params_t group(unsigned size, unsigned me, unsigned root,
                                 const peer_addrs &addrs) const
    {
        uct_o2m_group_params_t p;

        memset(&p, 0, sizeof(p));
        p.field_mask      = UCT_O2M_GROUP_FIELD_ROOT_ADDR;
        p.group_id        = m_salt;
        p.size            = size;
        p.my_index        = me;
        p.root_index      = root;
        p.root_iface_addr = (const uct_iface_addr_t*)addrs.iface[root].data();
        p.root_dev_addr   = (const uct_device_addr_t*)addrs.dev[root].data();
        return p;
    }

    /* This rank's endpoint in the test's group of @a size rooted at @a
     * root */
    uct_ep_h group_ep(uct_env &env, unsigned size, unsigned rank,
                      unsigned root, const peer_addrs &addrs) const
    {
        uct_o2m_group_params_t p = group(size, rank, root, addrs);
        uct_ep_h ep;

        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &ep));
        return ep;
    }

    /* What a process of run_members() runs: @a done points to the
     * processes' shared memory (zeroed) */
    typedef std::function<void(proc_group &pg, unsigned rank, uct_env &env,
                               rx_log &log, const peer_addrs &addrs,
                               volatile int *done)>
            member_fn;

    /*
     * Runs @a fn in @a n processes, each with an interface (@a cfg) whose
     * messages @a log records, and the addresses of all; every child must
     * exit with success within @a timeout seconds
     */
    void run_members(unsigned n, const std::map<std::string, std::string> &cfg,
                     double timeout, const member_fn &fn)
    {
        proc_group pg(n);
        volatile int *done = static_cast<volatile int*>(pg.shared());

        pg.run_ok([&](unsigned rank) {
            uct_env env(UCT_MC_UDP_TL_NAME, cfg);
            peer_addrs addrs;
            rx_log log;

            log_and_exchange(pg, rank, env, log, addrs);
            fn(pg, rank, env, log, addrs, done);
        }, timeout);
    }

    /* What a member of run_group() runs on its endpoint @a ep */
    typedef std::function<void(proc_group &pg, unsigned rank, uct_env &env,
                               rx_log &log, const peer_addrs &addrs,
                               uct_ep_h ep, volatile int *done)>
            group_fn;

    /*
     * run_members() (120 s), each with its endpoint in the test's group of
     * @a n rooted at @a root, destroyed after @a fn and a barrier
     */
    void run_group(unsigned n, unsigned root,
                   const std::map<std::string, std::string> &cfg,
                   const group_fn &fn)
    {
        run_members(n, cfg, 120, [&](proc_group &pg, unsigned rank,
                                     uct_env &env, rx_log &log,
                                     const peer_addrs &addrs,
                                     volatile int *done) {
            uct_ep_h ep = group_ep(env, n, rank, root, addrs);

            fn(pg, rank, env, log, addrs, ep, done);
            pg.barrier(rank);
            uct_ep_destroy(ep);
        });
    }

    /*
     * The root (@a root) sends @a count messages on its group endpoint
     * @a ep and flushes: every member has every message; then it runs
     * @a after_flush and raises @a *done.  The members receive and check
     * (@a what) them all, and relay ACKs until the root's flush is done.
     */
    void send_to_group(uct_env &env, uct_ep_h ep, const rx_log &log,
                       unsigned rank, unsigned root, unsigned count,
                       volatile int *done, const char *what,
                       const std::function<void()> &after_flush = [] {})
    {
        const size_t max = env.attr().cap.am.max_bcopy;

        if (rank == root) {
            for (unsigned k = 0; k < count; ++k) {
                CHILD_CHECK_OK(send_msg(env, ep, m_salt, k, max));
            }
            CHILD_CHECK_OK(am_ep_flush(env, ep));
            after_flush();
            *done = 1;
        } else {
            CHILD_CHECK(env.progress_until([&] {
                            return log.msgs.size() >= count; }),
                        "%s: member %u received %zu of %u", what, rank,
                        log.msgs.size(), count);
            check_msgs(log, m_salt, count, max, what);
            CHILD_CHECK(env.progress_until([&] { return *done != 0; }),
                        "%s: the root's flush did not end", what);
        }
    }

    /*
     * Runs @a fn in @a n processes, each with an interface (@a cfg) and the
     * addresses of every rank's; rank @a victim kills itself (SIGKILL) in
     * @a fn: it must end so and the others with success.
     */
    void run_with_victim(unsigned n, unsigned victim,
                         const std::map<std::string, std::string> &cfg,
                         const std::function<void(proc_group&, unsigned,
                                                  uct_env&,
                                                  const peer_addrs&)> &fn)
    {
        proc_group pg(n);

        std::vector<int> st = pg.run([&](unsigned rank) {
            uct_env env(UCT_MC_UDP_TL_NAME, cfg);
            peer_addrs addrs;

            addrs.exchange(pg, rank, env);
            fn(pg, rank, env, addrs);
        }, 120);

        expect_only_killed(st, victim);
    }

    std::string m_port;
    uint64_t    m_salt;
};

} // namespace


/* Both ways at once, fragmented messages, a window that fills */
TEST_F(mc_udp, p2p_exact_both_ways)
{
    const unsigned count = 600;

    run_members(2, config({{"WINDOW", "16"}, {"MTU", "600"},
                           {"SEG_SIZE", "5100"}}), 120,
                [&](proc_group &pg, unsigned rank, uct_env &env, rx_log &log,
                    const peer_addrs &addrs, volatile int *done) {
        const size_t max = env.attr().cap.am.max_bcopy;

        CHILD_CHECK(max == 5100, "max_bcopy %zu", max);
        uct_ep_h ep = create_p2p_ep(env, addrs, 1 - rank);

        for (unsigned k = 0; k < count; ++k) {
            CHILD_CHECK_OK(send_msg(env, ep, m_salt + rank, k, max));
        }
        CHILD_CHECK_OK(am_ep_flush(env, ep));
        CHILD_CHECK(env.progress_until([&] {
                        return log.msgs.size() >= count; }),
                    "received %zu of %u", log.msgs.size(), count);
        check_msgs(log, m_salt + 1 - rank, count, max, "p2p");

        uct_mc_udp_counters_t c;
        CHILD_CHECK_OK(uct_mc_udp_iface_counters(env.iface(), &c));
        CHILD_CHECK(c.rx_bad == 0, "%lu bad packets", c.rx_bad);

        pg.barrier(rank);
        uct_ep_destroy(ep);
    });
}

/* A receiver that sleeps in poll() on the event fd between datagrams: it
 * wakes for every message (and its timers), no busy polling.  The sender
 * starts once the receiver has armed the fd and is about to sleep, so the
 * receiver sleeps at least once however the processes are scheduled (on a
 * loaded machine it may otherwise find every message already there) */
TEST_F(mc_udp, p2p_event_fd)
{
    const unsigned count = 300;

    run_members(2, config({{"WINDOW", "16"}}), 120,
                [&](proc_group &pg, unsigned rank, uct_env &env, rx_log &log,
                    const peer_addrs &addrs, volatile int *done) {
        const size_t max    = env.attr().cap.am.max_bcopy;
        volatile int *armed = done + 1;

        CHILD_CHECK(env.attr().cap.event_flags & UCT_IFACE_FLAG_EVENT_FD,
                    "no event fd");
        if (rank == 0) {
            uct_ep_h ep = create_p2p_ep(env, addrs, 1);
            double deadline = now_sec() + wait_timeout;

            while (!*armed) {
                CHILD_CHECK(now_sec() < deadline, "the receiver "
                            "did not arm its event fd in %.0f s",
                            wait_timeout);
                sched_yield();
            }
            for (unsigned k = 0; k < count; ++k) {
                CHILD_CHECK_OK(send_msg(env, ep, m_salt, k, max));
            }
            CHILD_CHECK_OK(am_ep_flush(env, ep));
            *done = 1;
            uct_ep_destroy(ep);
        } else {
            unsigned sleeps = 0;
            int fd;

            CHILD_CHECK_OK(uct_iface_event_fd_get(env.iface(), &fd));
            while (!*done) {
                ucs_status_t status = uct_iface_event_arm(env.iface(),
                        UCT_EVENT_RECV | UCT_EVENT_SEND_COMP);
                if (status == UCS_OK) {
                    struct pollfd pfd = {fd, POLLIN, 0};
                    int ret;

                    *armed = 1;
                    ret    = poll(&pfd, 1, (int)(wait_timeout * 1000));
                    CHILD_CHECK(ret == 1, "no event in %.0f s (%zu of %u "
                                "messages)", wait_timeout, log.msgs.size(),
                                count);
                    ++sleeps;
                } else {
                    CHILD_CHECK(status == UCS_ERR_BUSY, "arm: %s",
                                ucs_status_string(status));
                }
                env.progress();
            }
            check_msgs(log, m_salt, count, max, "event fd");
            CHILD_CHECK(sleeps > 0, "never slept on the event fd");
        }
        pg.barrier(rank);
    });
}

/* The receiving process killed: the sender's endpoint fails, with one call
 * of the interface's error handler (UCP's path to the failure) */
TEST_F(mc_udp, p2p_peer_killed)
{
    run_with_victim(2, 1, config(), [&](proc_group &pg, unsigned rank,
                                        uct_env &env,
                                        const peer_addrs &addrs) {
        const size_t max = env.attr().cap.am.max_bcopy;
        rx_log log;

        env.set_am_handler(AM_ID, rx_log::cb, &log);
        if (rank == 1) {
            CHILD_CHECK(env.progress_until([&] {
                            return log.msgs.size() >= 1; }), "no message");
            pg.barrier(rank);
            kill(getpid(), SIGKILL);
        }

        uct_ep_h ep = create_p2p_ep(env, addrs, 1);
        CHILD_CHECK_OK(send_msg(env, ep, m_salt, 0, max));
        CHILD_CHECK_OK(am_ep_flush(env, ep));
        pg.barrier(rank);

        ucs_status_t status = send_until_failed(env, ep, m_salt, 1, max,
                                                "sender");
        uct_mc_udp_counters_t c;
        CHILD_CHECK_OK(uct_mc_udp_iface_counters(env.iface(), &c));
        CHILD_CHECK(status == UCS_ERR_CONNECTION_RESET, "failed with %s "
                    "(%lu peers gone, tx %lu)", ucs_status_string(status),
                    c.peers_gone, c.tx_packets);
        CHILD_CHECK(env.errors.size() == 1, "%zu error handler calls",
                    env.errors.size());
        uct_ep_destroy(ep);
    });
}

/* The receiving process killed while the sender's endpoint is idle:
 * uct_ep_check (UCP's keepalive) finds it, the error handler is called */
TEST_F(mc_udp, p2p_idle_peer_killed)
{
    run_with_victim(2, 1, config(), [&](proc_group &pg, unsigned rank,
                                        uct_env &env,
                                        const peer_addrs &addrs) {
        CHILD_CHECK(env.attr().cap.flags &
                    UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE, "no peer failure");
        if (rank == 1) {
            pg.barrier(rank);
            kill(getpid(), SIGKILL);
        }

        uct_ep_h ep = create_p2p_ep(env, addrs, 1);
        CHILD_CHECK_OK(uct_ep_check(ep, 0, NULL));
        pg.barrier(rank);
        CHILD_CHECK(env.progress_until([&] {
                        (void)uct_ep_check(ep, 0, NULL);
                        return !env.errors.empty(); }),
                    "the error handler was not called");
        CHILD_CHECK(env.errors.size() == 1 &&
                    env.errors[0] == UCS_ERR_CONNECTION_RESET,
                    "%zu error handler calls, %s", env.errors.size(),
                    ucs_status_string(env.errors[0]));
        CHILD_CHECK(uct_ep_check(ep, 0, NULL) == UCS_ERR_CONNECTION_RESET,
                    "ep_check after the failure");
        uct_ep_destroy(ep);
    });
}

/* An endpoint to its own interface (UCP's endpoint to its own worker when
 * UCX_TLS has no self): its packets come from its own address */
TEST_F(mc_udp, p2p_to_self)
{
    const unsigned count = 300;

    run_members(1, config({{"WINDOW", "16"}}), 60,
                [&](proc_group &pg, unsigned rank, uct_env &env, rx_log &log,
                    const peer_addrs &addrs, volatile int *done) {
        const size_t max = env.attr().cap.am.max_bcopy;
        uct_ep_h ep      = create_p2p_ep(env, addrs, 0);

        for (unsigned k = 0; k < count; ++k) {
            CHILD_CHECK_OK(send_msg(env, ep, m_salt, k, max));
        }
        CHILD_CHECK_OK(am_ep_flush(env, ep));
        check_msgs(log, m_salt, count, max, "to self");
        uct_ep_destroy(ep);
    });
}

/* UCP's lanes (ucx_info -e: an endpoint to its own worker): mc_udp when
 * UCX_TLS names it alone, tcp when both are allowed (loading the plugin
 * must not move point-to-point traffic onto mc_udp) */
TEST_F(mc_udp, ucp_lane_choice)
{
    /* Quoted: with sanitizers the preload list has a space (the
     * sanitizer libraries, then the plugin).  No leak check in ucx_info:
     * it leaks a few bytes of its own also with UCX_TLS=tcp and no plugin
     * (UCX 1.13.1), and its lane choice is what this test looks at */
    const std::string env = "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" "
                            "LD_PRELOAD=\"" + plugin_preload() +
                            "\" UCX_NET_DEVICES=lo UCX_TLS=";
    int status;

    std::string out = run_command(env + "mc_udp ucx_info -e -u t", &status);
    EXPECT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("mc_udp/lo")) << out;

    out = run_command(env + "tcp,mc_udp ucx_info -e -u t", &status);
    EXPECT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("tcp/lo")) << out;
    EXPECT_EQ(std::string::npos, out.find("mc_udp")) << out;
}

/* A pack callback that writes *(size_t*)arg bytes, the most it may, and
 * claims one more: the transport must refuse the message */
static size_t pack_oversized(void *dest, void *arg)
{
    size_t max = *static_cast<size_t*>(arg);

    memset(dest, 0xa5, max);
    return max + 1;
}

/* Message limits: above SEG_SIZE is refused, not cut */
TEST_F(mc_udp, p2p_limits)
{
    run_members(2, config({{"SEG_SIZE", "2000"}}), 60,
                [&](proc_group &pg, unsigned rank, uct_env &env, rx_log &log,
                    const peer_addrs &addrs, volatile int *done) {
        CHILD_CHECK(env.attr().cap.am.max_bcopy == 2000, "max_bcopy");
        if (rank == 0) {
            uct_ep_h ep = create_p2p_ep(env, addrs, 1);
            /* The pack callback fills max_bcopy bytes (no more: the
             * buffer is that long) and reports one byte more */
            size_t max  = env.attr().cap.am.max_bcopy;
            ssize_t ret = uct_ep_am_bcopy(ep, AM_ID, pack_oversized, &max,
                                          0);
            CHILD_CHECK(ret == UCS_ERR_EXCEEDS_LIMIT, "oversized bcopy: %zd",
                        ret);
            std::vector<uint8_t> big(env.attr().cap.am.max_short + 1);
            CHILD_CHECK(uct_ep_am_short(ep, AM_ID, 0, big.data(),
                                        big.size() - 7) ==
                        UCS_ERR_INVALID_PARAM, "oversized short");
            CHILD_CHECK_OK(am_ep_flush(env, ep));
            uct_ep_destroy(ep);
            *done = 1;
        } else {
            /* The receiver answers the join until the sender is done */
            CHILD_CHECK(env.progress_until([&] { return *done != 0; }),
                        "sender not done");
            /* and frees its end of the stream when the sender's endpoint
             * is gone (CLOSE) */
            uct_mc_udp_counters_t c;
            CHILD_CHECK(env.progress_until([&] {
                            uct_mc_udp_iface_counters(env.iface(), &c);
                            return c.rx_conns == 0; }),
                        "%lu receiving ends left", c.rx_conns);
        }
        pg.barrier(rank);
        CHILD_CHECK(log.msgs.empty(), "%zu messages", log.msgs.size());
    });
}

/* A group of 2..5: every member gets every message once, in order */
TEST_F(mc_udp, group_bcast_exact)
{
    for (unsigned n : {2u, 3u, 5u}) {
        const unsigned count = 400;
        const unsigned root  = n - 1;

        m_salt += 0x10001;
        run_group(n, root, config({{"WINDOW", "32"}, {"RADIX", "2"}}),
                  [&](proc_group &pg, unsigned rank, uct_env &env,
                      rx_log &log, const peer_addrs &addrs, uct_ep_h ep,
                      volatile int *done) {
            uct_o2m_group_params_t p = group(n, rank, root, addrs);
            uct_ep_h dup;
            CHILD_CHECK(uct_o2m_ep_create(env.iface(), &p, &dup) ==
                        UCS_ERR_ALREADY_EXISTS, "group created twice");

            if (rank != root) {
                CHILD_CHECK(uct_ep_am_short(ep, AM_ID, 0, NULL, 0) ==
                            UCS_ERR_UNSUPPORTED, "a member sent");
            }
            send_to_group(env, ep, log, rank, root, count, done, "group",
                          [&] {
                uct_mc_udp_counters_t c;

                CHILD_CHECK(uct_o2m_ep_state(ep, NULL) ==
                            UCT_O2M_EP_STATE_READY, "root not ready");
                /* the root does not listen to its own multicast */
                CHILD_CHECK_OK(uct_mc_udp_iface_counters(env.iface(), &c));
                CHILD_CHECK(c.rx_own == 0, "the root read %lu copies of "
                            "its own multicast", (unsigned long)c.rx_own);
            });
        });
    }
}

/*
 * What a member's progress costs in system calls: one epoll_wait() that
 * finds the sockets with datagrams, whatever number of sockets the
 * interface has (its unicast one and the group's multicast one), and a
 * recvmmsg() per socket that has some.  The root sends one message at a
 * time and waits until both members have it, so that every message finds
 * them idle (as an 8-byte MPI_Bcast does); then the members progress on
 * with nothing to read.  Reading every socket on every progress (two
 * recvmsg() calls here, and one more to find a socket empty after a
 * datagram) fails the bound.
 */
TEST_F(mc_udp, group_rx_syscalls)
{
    const unsigned n = 3, root = 0, count = 200, idle = 2000;

    run_group(n, root, config(), [&](proc_group &pg, unsigned rank,
                                     uct_env &env, rx_log &log,
                                     const peer_addrs &addrs, uct_ep_h ep,
                                     volatile int *done) {
        volatile int *got = done + 1; /* messages each member has */
        const size_t max  = env.attr().cap.am.max_bcopy;
        uct_mc_udp_counters_t c0, c1;
        uint64_t polls = 0, idle_polls = 0, syscalls, packets;
        double end;

        if (rank == root) {
            for (unsigned k = 0; k < count; ++k) {
                CHILD_CHECK_OK(am_msg_send(env, ep, AM_ID, m_salt, k, 8,
                                           env.attr().cap.am.max_short));
                CHILD_CHECK(env.progress_until([&] {
                                for (unsigned r = 1; r < n; ++r) {
                                    if ((unsigned)got[r] <= k) {
                                        return false;
                                    }
                                }
                                return true;
                            }), "message %u did not reach every member", k);
            }
            CHILD_CHECK_OK(am_ep_flush(env, ep));
            *done = 1;
            return;
        }

        CHILD_CHECK_OK(uct_mc_udp_iface_counters(env.iface(), &c0));
        end = now_sec() + wait_timeout;
        while (idle_polls < idle) {
            CHILD_CHECK(now_sec() < end, "member %u: %zu of %u messages, "
                        "root done %d", rank, log.msgs.size(), count, *done);
            if (uct_iface_progress(env.iface()) == 0) {
                sched_yield();
            }
            ++polls;
            got[rank] = (int)log.msgs.size();
            if (*done != 0) {
                ++idle_polls; /* the root's flush is done: nothing comes */
            }
        }
        CHILD_CHECK_OK(uct_mc_udp_iface_counters(env.iface(), &c1));
        am_msgs_check(log, m_salt, count,
                      [](unsigned, size_t) { return (size_t)8; }, max,
                      "syscalls");

        syscalls = c1.rx_syscalls - c0.rx_syscalls;
        packets  = c1.rx_packets - c0.rx_packets;
        printf("member %u: %lu progress calls (%u idle at the end), %lu "
               "datagrams, %lu receive system calls\n", rank,
               (unsigned long)polls, idle, (unsigned long)packets,
               (unsigned long)syscalls);
        CHILD_CHECK(packets >= count, "member %u read %lu datagrams for "
                    "%u messages", rank, (unsigned long)packets, count);
        /* generous: one per progress, one per datagram, a few more */
        CHILD_CHECK(syscalls <= polls + packets + packets / 8 + 16,
                    "member %u: %lu receive system calls for %lu progress "
                    "calls and %lu datagrams", rank,
                    (unsigned long)syscalls, (unsigned long)polls,
                    (unsigned long)packets);
    });
}

/* Whether the loopback device is a member of the multicast group @a addr
 * (/proc/net/igmp: groups in hex, in memory order, under their device) */
bool lo_joined(const struct in_addr &addr)
{
    std::ifstream in("/proc/net/igmp");
    std::string line, dev;
    char hex[16];

    snprintf(hex, sizeof(hex), "%08X", addr.s_addr);
    while (std::getline(in, line)) {
        if (!line.empty() && (line[0] != '\t') && (line[0] != 'I')) {
            std::istringstream f(line);
            std::string idx;
            f >> idx >> dev;
        } else if ((dev == "lo") && (line.find(hex) != std::string::npos)) {
            return true;
        }
    }
    return false;
}

/* A member's group endpoint joins its multicast group on the device, and
 * leaves it when destroyed; a root's does not join (it sends there and
 * hears its members by unicast) */
TEST_F(mc_udp, group_membership_left)
{
    proc_group pg(1);
    std::random_device rd;
    char base[32];

    snprintf(base, sizeof(base), "239.255.%u.%u", 128 + (rd() % 100),
             1 + (rd() % 250));
    pg.run_ok([&](unsigned rank) {
        uct_env env(UCT_MC_UDP_TL_NAME,
                    config({{"MCAST_BASE", base}, {"MCAST_COUNT", "1"}}));
        struct in_addr addr;
        peer_addrs addrs;
        uct_ep_h ep;

        inet_pton(AF_INET, base, &addr);
        addrs.exchange(pg, rank, env);
        CHILD_CHECK(!lo_joined(addr), "%s joined before", base);
        ep = group_ep(env, 2, 0, 0, addrs);
        CHILD_CHECK(!lo_joined(addr), "the root joined %s", base);
        uct_ep_destroy(ep);
        ep = group_ep(env, 2, 1, 0, addrs);
        CHILD_CHECK(lo_joined(addr), "%s not joined on lo", base);
        uct_ep_destroy(ep);
        CHILD_CHECK(!lo_joined(addr), "%s still joined", base);
    }, 60);
}

/* A member killed while the root waits for it: every other member fails */
TEST_F(mc_udp, group_member_killed)
{
    const unsigned n = 4, victim = 2;

    run_with_victim(n, victim, config(), [&](proc_group &pg, unsigned rank,
                                             uct_env &env,
                                             const peer_addrs &addrs) {
        const size_t max = env.attr().cap.am.max_bcopy;
        volatile int *flushed = static_cast<volatile int*>(pg.shared());
        rx_log log;
        uct_ep_h ep;

        env.set_am_handler(AM_ID, rx_log::cb, &log);
        ep = group_ep(env, n, rank, 0, addrs);

        if (rank == 0) {
            CHILD_CHECK_OK(send_msg(env, ep, m_salt, 0, max));
            CHILD_CHECK_OK(am_ep_flush(env, ep));
            *flushed = 1;
        } else {
            /* ACKs are on demand: the root's flush needs the members'
             * answers to its SYNC, so they progress until it ended */
            CHILD_CHECK(env.progress_until([&] {
                            return (log.msgs.size() >= 1) && *flushed; }),
                        "no message, or the root's flush did not end");
        }
        pg.barrier(rank);
        if (rank == victim) {
            kill(getpid(), SIGKILL);
        }

        /* The root sends on until its group fails; members wait for it */
        if (rank == 0) {
            (void)send_until_failed(env, ep, m_salt, 1, max, "root");
        } else {
            wait_group_failed(env, ep, rank);
        }
        CHILD_CHECK(uct_o2m_ep_state(ep, NULL) == UCT_O2M_EP_STATE_FAILED,
                    "member %u not failed", rank);
        uct_ep_destroy(ep);
    });
}

/* A member that exits right after joining the group, before it received
 * anything (as a process killed by a sanitizer does): the root heard its
 * HELLO, so the group fails on the root and on the other member instead of
 * the root's window waiting for it */
TEST_F(mc_udp, group_member_exits_at_join)
{
    const unsigned n = 3, victim = 0, root = 2;

    run_with_victim(n, victim, config({{"WINDOW", "32"}}),
                    [&](proc_group &pg, unsigned rank, uct_env &env,
                        const peer_addrs &addrs) {
        uct_ep_h ep = NULL;

        uct_o2m_group_params_t p = group(n, rank, root, addrs);
        if (rank == root) {
            /* the root listens before the members say HELLO */
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &ep));
        }
        pg.barrier(rank);
        if (rank != root) {
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &ep));
        }
        if (rank == victim) {
            kill(getpid(), SIGKILL);
        }

        if (rank == root) {
            ucs_status_t status = UCS_OK;
            unsigned k          = 0;

            CHILD_CHECK(env.progress_until([&] {
                            /* header-only messages (payload NULL) */
                            status = uct_ep_am_short(ep, AM_ID, k, NULL, 0);
                            k     += (status == UCS_OK);
                            return (status != UCS_OK) &&
                                   (status != UCS_ERR_NO_RESOURCE);
                        }), "root: the group did not fail");
        } else {
            wait_group_failed(env, ep, rank);
        }
        uct_ep_destroy(ep);
    });
}

/* Garbage and forged packets from a raw socket: dropped, counted */
TEST_F(mc_udp, rogue_sender)
{
    const unsigned n = 3, count = 200;
    const uint64_t gid = m_salt;

    run_group(n, 0, config({{"WINDOW", "32"}, {"MCAST_COUNT", "1"}}),
              [&](proc_group &pg, unsigned rank, uct_env &env, rx_log &log,
                  const peer_addrs &addrs, uct_ep_h ep, volatile int *done) {

        /* Rank 1 is also the rogue: every other member's unicast port and
         * the group's multicast port get garbage and forged headers */
        if (rank == 1) {
            int fd = socket(AF_INET, SOCK_DGRAM, 0);
            struct in_addr lo;
            std::mt19937_64 rnd(gid);
            std::vector<struct sockaddr_in> targets;

            lo.s_addr = htonl(INADDR_LOOPBACK);
            CHILD_CHECK(fd >= 0, "socket: %m");
            CHILD_CHECK(setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo,
                                   sizeof(lo)) == 0, "IP_MULTICAST_IF");
            for (unsigned r = 0; r < n; ++r) {
                struct sockaddr_in sa = {};
                sa.sin_family = AF_INET;
                memcpy(&sa.sin_addr, addrs.dev[r].data(), 4);
                memcpy(&sa.sin_port, addrs.iface[r].data(), 2);
                targets.push_back(sa);
            }
            /* The group's multicast address (MCAST_COUNT 1: the base) */
            struct sockaddr_in mc = {};
            mc.sin_family = AF_INET;
            mc.sin_port   = htons(atoi(m_port.c_str()));
            for (unsigned i = 0; i < 4; ++i) {
                inet_pton(AF_INET, MC_BASE, &mc.sin_addr);
                targets.push_back(mc);
            }

            for (unsigned i = 0; i < 3000; ++i) {
                uint8_t pkt[128];
                size_t len = 1 + (rnd() % sizeof(pkt));
                for (size_t b = 0; b < sizeof(pkt); ++b) {
                    pkt[b] = rnd();
                }
                if (i % 3 == 1) {
                    /* A valid transport header, kind random, the group's
                     * id: the engine's checks must catch the rest */
                    uint16_t magic = 0x554d;
                    uint32_t conn  = (uint32_t)gid;
                    memcpy(pkt, &magic, 2);
                    pkt[2] = 1 + (rnd() % 6);
                    pkt[3] = 0;
                    memcpy(pkt + 4, &conn, 4);
                    len = std::max<size_t>(len, 8);
                }
                const struct sockaddr_in &to = targets[i % targets.size()];
                if ((i % targets.size()) == 1) {
                    continue; /* not to myself */
                }
                (void)sendto(fd, pkt, len, 0, (const struct sockaddr*)&to,
                             sizeof(to));
                if (i % 64 == 0) {
                    env.progress();
                }
            }
            close(fd);
        }
        pg.barrier(rank);

        send_to_group(env, ep, log, rank, 0, count, done,
                      "group with a rogue");

        uct_mc_udp_counters_t c;
        CHILD_CHECK_OK(uct_mc_udp_iface_counters(env.iface(), &c));
        if (rank != 1) {
            CHILD_CHECK(c.rx_bad + c.rx_engine_drop + c.rx_no_stream >= 300,
                        "rank %u: only %lu bad + %lu engine drops + %lu "
                        "unknown of the rogue's packets", rank, c.rx_bad,
                        c.rx_engine_drop, c.rx_no_stream);
        }
        CHILD_CHECK(uct_o2m_ep_state(ep, NULL) == UCT_O2M_EP_STATE_READY,
                    "member %u failed", rank);
    });
}

/* PACE_RATE: the value docs/multicast.md and the config table give for "no
 * pacing" (auto) is accepted and turns pacing off (40 messages back to back,
 * 66 packets, four times the pacer's burst, go out with none held back); "inf"
 * alone is not a bandwidth to UCX's parser (it wants a unit), which is why
 * the documentation must not offer it */
TEST_F(mc_udp, pace_rate_documented_values)
{
    uct_component_h comp = find_component(UCT_MC_UDP_TL_NAME);
    uct_md_config_t *md_config;
    uct_iface_config_t *iface_config;
    uct_md_h md;

    ASSERT_EQ(UCS_OK, uct_md_config_read(comp, NULL, NULL, &md_config));
    ucs_status_t status = uct_md_open(comp, UCT_MC_UDP_TL_NAME, md_config,
                                      &md);
    uct_config_release(md_config);
    ASSERT_EQ(UCS_OK, status);
    ASSERT_EQ(UCS_OK, uct_md_iface_config_read(md, UCT_MC_UDP_TL_NAME, NULL,
                                               NULL, &iface_config));
    {
        /* first: UCX restores the previous value after a refused one, and
         * cannot parse back what it prints for infBs */
        scoped_log_capture quiet; /* the parser's complaint */
        EXPECT_NE(UCS_OK, uct_config_modify(iface_config, "PACE_RATE",
                                            "inf"));
    }
    for (const char *ok : {"auto", "400MBs", "1GBs", "infBs"}) {
        EXPECT_EQ(UCS_OK, uct_config_modify(iface_config, "PACE_RATE", ok))
            << ok;
    }
    uct_config_release(iface_config);
    uct_md_close(md);

    run_group(2, 0, config({{"PACE_RATE", "auto"}}),
              [&](proc_group &pg, unsigned rank, uct_env &env, rx_log &log,
                  const peer_addrs &addrs, uct_ep_h ep, volatile int *done) {
        /* 40 messages: 66 packets */
        send_to_group(env, ep, log, rank, 0, 40, done, "group", [&] {
            uct_mc_udp_counters_t c;
            CHILD_CHECK_OK(uct_mc_udp_iface_counters(env.iface(), &c));
            CHILD_CHECK(c.tx_paced == 0, "%lu packets paced with "
                        "PACE_RATE=auto", c.tx_paced);
        });
    });
}
