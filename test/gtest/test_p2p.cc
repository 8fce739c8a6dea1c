/**
 * ucx-o2m tests: point-to-point endpoints (plain uct_ep_create to a peer's
 * interface address, what UCP uses) and UCP over sm_bcast / sm_incast.
 *
 *  - p2p_traffic: every size class up to 4 MiB, FIFO wrap-around with a
 *    small P2P_FIFO_SIZE, exact FIFO capacity, pending, flush, zcopy
 *    completions; 2 processes both ways, and 3 senders into 1 receiver
 *  - p2p_failure: the receiving process is killed; bad addresses
 *  - p2p_ucp: UCP tag send/receive between 2 processes with
 *    UCX_TLS=<tl>,self, data checked, and the UCP endpoint's lane is ours
 *  - p2p_perftest: ucx_perftest tag latency/bandwidth between 2 processes
 *    with the plugin preloaded, and the same run failing without it
 */
#include "common/harness.h"
#include "common/uct_env.h"
#include "common/traffic.h"
#include "common/peers.h"
#include "common/residue.h"
#include "common/tools.h"
#include "common/ucp_pair.h"

extern "C" {
#include <ucp/api/ucp.h>
}

#include <signal.h>
#include <sys/wait.h>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

using namespace o2m_test;

namespace {

const unsigned P2P_DEPTH = 8;

std::map<std::string, std::string> p2p_config()
{
    return {{"P2P_FIFO_SIZE", std::to_string(P2P_DEPTH)},
            {"CHECK_INTERVAL", "10ms"}};
}

/* Per rank (or sender): messages its receiver consumed, in the proc_group's
 * shared memory after the first 256 bytes */
volatile size_t *consumed_slots(proc_group &pg)
{
    return reinterpret_cast<volatile size_t*>(
            static_cast<char*>(pg.shared()) + 256);
}

uint8_t am_base_of(unsigned sender)
{
    return 1 + (4 * sender);
}


class p2p_traffic : public ::testing::TestWithParam<std::string> {
protected:
    shm_residue_check m_shm;
};

/*
 * 2 processes.  First one way with the receiver held at a barrier: exactly
 * P2P_FIFO_SIZE messages fit, flush is in progress, pending is accepted.
 * Then both ways at once: every size class and a back-to-back stream.
 */
TEST_P(p2p_traffic, two_procs)
{
    const std::string tl = GetParam();
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        uct_env env(tl, p2p_config());
        const unsigned peer = 1 - rank;
        uct_o2m_iface_attr_t oattr;
        peer_addrs addrs;
        ucs_status_t status;

        CHILD_CHECK(env.attr().cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE,
                    "no CONNECT_TO_IFACE");
        CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
        addrs.exchange(pg, rank, env);

        traffic_receiver rx(env, am_base_of(peer), "p2p receiver");
        uct_ep_h ep = create_p2p_ep(env, addrs, peer);

        rx.publish(&consumed_slots(pg)[rank]);

        /* Phase 1: rank 1 -> rank 0, rank 0 not progressing */
        schedule_t sched1 = stream_schedule(10 * P2P_DEPTH, oattr.max_short,
                                            11);
        const uint64_t salt1 = 0x1000 + rank;
        rx.expect(0x1000 + peer, (rank == 0) ? &sched1 : NULL);
        if (rank == 1) {
            traffic_sender tx(env, ep, am_base_of(rank), salt1, &sched1);
            tx.check_consumed(min_consumed(consumed_slots(pg), 2, rank));
            for (unsigned i = 0; i < P2P_DEPTH; ++i) {
                status = tx.post_next();
                CHILD_CHECK(status == UCS_OK, "message %u into an empty FIFO "
                            "of %u: %s", i, P2P_DEPTH,
                            ucs_status_string(status));
            }
            status = tx.post_next();
            CHILD_CHECK(status == UCS_ERR_NO_RESOURCE, "send into a full "
                        "FIFO: %s", ucs_status_string(status));
            status = uct_ep_flush(ep, 0, NULL);
            CHILD_CHECK(status == UCS_INPROGRESS, "flush of a full FIFO: %s",
                        ucs_status_string(status));
            CHILD_CHECK(tx.add_pending(3), "pending_add: BUSY on a full "
                        "FIFO");
            pg.barrier(rank);
            tx.wait_pending();
            tx.send_until(sched1.size(), 4);
            tx.flush();
            tx.wait_zcopy();
            tx.check_completions();
        } else {
            pg.barrier(rank);
            rx.wait_all();
        }
        pg.barrier(rank);
        progress_for(env, 0.005);
        CHILD_CHECK(rx.complete(), "phase 1: extra messages");
        /* Phase 2 sends on the same AM ids: not before the peer checked */
        pg.barrier(rank);

        /* Phase 2: both ways at once */
        schedule_t sched = size_class_schedule(oattr.max_short,
                                               oattr.max_bcopy, true);
        append(sched, stream_schedule(12 * P2P_DEPTH, oattr.max_short, 12));
        rx.expect(0x2000 + peer, &sched);
        {
            traffic_sender tx(env, ep, am_base_of(rank), 0x2000 + rank,
                              &sched);
            tx.check_consumed(min_consumed(consumed_slots(pg), 2, rank));
            std::vector<uint8_t> big(oattr.max_short + 1);

            status = uct_ep_am_short(ep, am_base_of(rank), 0, big.data(),
                                     (unsigned)(oattr.max_short -
                                                sizeof(uint64_t) + 1));
            CHILD_CHECK(is_error(status), "am_short of max_short + 1: %s",
                        ucs_status_string(status));

            tx.send_until(sched.size(), 2);
            tx.flush();
            tx.wait_zcopy();
            tx.check_completions();
            rx.wait_all();
        }
        pg.barrier(rank);
        progress_for(env, 0.005);
        CHILD_CHECK(rx.complete(), "phase 2: extra messages");
        CHILD_CHECK(env.errors.empty(), "%zu errors", env.errors.size());
        uct_ep_destroy(ep);
        pg.barrier(rank);
    }, 60);
}

/*
 * 3 senders into 1 receiver: they share its FIFO (exactly P2P_FIFO_SIZE
 * messages in all while it does not progress), each sender's messages
 * arrive in order.
 */
TEST_P(p2p_traffic, three_senders_one_receiver)
{
    const std::string tl = GetParam();
    proc_group pg(4);
    volatile unsigned *accepted = static_cast<unsigned*>(pg.shared());

    pg.run_ok([&](unsigned rank) {
        uct_env env(tl, p2p_config());
        uct_o2m_iface_attr_t oattr;
        peer_addrs addrs;

        CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
        addrs.exchange(pg, rank, env);

        std::vector<schedule_t> scheds(4);
        for (unsigned s = 1; s < 4; ++s) {
            scheds[s] = stream_schedule(12 * P2P_DEPTH, oattr.max_short, s);
            append(scheds[s], size_class_schedule(oattr.max_short,
                                                  oattr.max_bcopy, s == 2));
            append(scheds[s], stream_schedule(4 * P2P_DEPTH, oattr.max_short,
                                              s + 10));
        }

        if (rank == 0) {
            std::vector<std::unique_ptr<traffic_receiver>> rxs;
            for (unsigned s = 1; s < 4; ++s) {
                rxs.emplace_back(new traffic_receiver(env, am_base_of(s),
                                                      "sender"));
                rxs.back()->expect(0x300 + s, &scheds[s]);
                rxs.back()->publish(&consumed_slots(pg)[s]);
            }
            pg.barrier(rank); /* eps created */
            pg.barrier(rank); /* sender 1 filled the FIFO */
            pg.barrier(rank); /* senders 2, 3 got NO_RESOURCE */
            pg.barrier(rank); /* go */
            for (auto &rx : rxs) {
                rx->wait_all();
            }
            pg.barrier(rank);
            progress_for(env, 0.005);
            for (auto &rx : rxs) {
                CHILD_CHECK(rx->complete(), "extra messages");
            }
            CHILD_CHECK(env.errors.empty(), "%zu errors", env.errors.size());
            pg.barrier(rank);
            return;
        }

        uct_ep_h ep = create_p2p_ep(env, addrs, 0);
        traffic_sender tx(env, ep, am_base_of(rank), 0x300 + rank,
                          &scheds[rank]);
        volatile size_t *slot = &consumed_slots(pg)[rank];
        ucs_status_t status;

        tx.check_consumed([slot]() {
            return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        });
        pg.barrier(rank);

        /* Sender 1 takes the whole FIFO, the others find it full */
        if (rank == 1) {
            while ((status = tx.post_next()) == UCS_OK) {
                CHILD_CHECK(tx.next() <= P2P_DEPTH, "more than %u messages "
                            "in the FIFO", P2P_DEPTH);
            }
            CHILD_CHECK(status == UCS_ERR_NO_RESOURCE, "%s",
                        ucs_status_string(status));
            accepted[1] = tx.next();
        }
        pg.barrier(rank);
        if (rank != 1) {
            status = tx.post_next();
            CHILD_CHECK(status == UCS_ERR_NO_RESOURCE, "sender %u into a "
                        "full FIFO: %s", rank, ucs_status_string(status));
        }
        CHILD_CHECK(accepted[1] == P2P_DEPTH, "the FIFO took %u messages",
                    accepted[1]);
        CHILD_CHECK(tx.add_pending(2), "pending_add: BUSY");
        pg.barrier(rank);
        pg.barrier(rank); /* go */

        tx.wait_pending();
        tx.send_until(scheds[rank].size(), 3);
        tx.flush();
        tx.wait_zcopy();
        tx.check_completions();
        pg.barrier(rank);
        CHILD_CHECK(env.errors.empty(), "%zu errors", env.errors.size());
        uct_ep_destroy(ep);
        pg.barrier(rank);
    }, 60);
}

INSTANTIATE_TEST_SUITE_P(tls, p2p_traffic,
                         ::testing::Values("sm_bcast", "sm_incast"));


/*
 * Failures
 */
class p2p_failure : public ::testing::Test {
protected:
    shm_residue_check m_shm;
};

/* The receiving process dies while the FIFO is full and a zcopy waits */
TEST_F(p2p_failure, receiver_killed)
{
    proc_group pg(2);

    std::vector<int> status = pg.run([&](unsigned rank) {
        uct_env env("sm_bcast", p2p_config());
        uct_o2m_iface_attr_t oattr;
        peer_addrs addrs;

        CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
        addrs.exchange(pg, rank, env);
        if (rank == 0) {
            pg.barrier(rank);
            sleep(60); /* Never progresses; killed here */
            CHILD_CHECK(0, "not killed");
        }

        uct_ep_h ep = create_p2p_ep(env, addrs, 0);
        schedule_t sched = {msg_zcopy(100000, 8, 2)};
        append(sched, stream_schedule(1000, oattr.max_short, 3));
        traffic_sender tx(env, ep, 1, 5, &sched);
        ucs_status_t st;

        pg.barrier(rank);
        while ((st = tx.post_next()) == UCS_OK) {
        }
        CHILD_CHECK(st == UCS_ERR_NO_RESOURCE, "%s", ucs_status_string(st));
        CHILD_CHECK(tx.next() == P2P_DEPTH, "%zu messages fit",
                    tx.next());

        double kill_time = now_sec();
        CHILD_CHECK(kill(pg.pids()[0], SIGKILL) == 0, "kill");
        bool ok = progress_wait(env, [&]() {
            st = tx.post_next();
            return is_error(st);
        }, 5);
        CHILD_CHECK(ok, "send still %s 5 s after the peer died",
                    ucs_status_string(st));
        CHILD_CHECK(now_sec() - kill_time < 3, "noticed after %.2f s",
                    now_sec() - kill_time);
        CHILD_CHECK(st == UCS_ERR_CONNECTION_RESET, "send: %s",
                    ucs_status_string(st));
        CHILD_CHECK(has_error(env, UCS_ERR_CONNECTION_RESET),
                    "error handler not called");
        CHILD_CHECK(is_error(uct_ep_flush(ep, 0, NULL)), "flush");
        tx.check_completions(true);
        uct_ep_destroy(ep);
    }, 60);

    EXPECT_EQ(128 + SIGKILL, status[0]);
    EXPECT_EQ(0, status[1]);
}

/* Addresses that are not a live o2m interface */
TEST_F(p2p_failure, bad_address)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast");
        std::vector<char> dev = env.dev_addr();
        std::vector<char> good = env.iface_addr();
        uct_ep_params_t params;
        ucs_status_t status;
        uct_ep_h ep;
        struct {
            int32_t  pid;
            int32_t  fd;
            uint64_t uuid;
        } __attribute__((packed)) bad;

        CHILD_CHECK(good.size() == sizeof(bad), "address length %zu",
                    good.size());
        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = env.iface();
        params.dev_addr   = (const uct_device_addr_t*)dev.data();
        params.iface_addr = (const uct_iface_addr_t*)&bad;

        /* A process that does not exist */
        memcpy(&bad, good.data(), sizeof(bad));
        bad.pid = 0x7ffffff0;
        CHILD_CHECK(!uct_iface_is_reachable(env.iface(), params.dev_addr,
                                            params.iface_addr),
                    "dead pid reachable");
        status = uct_ep_create(&params, &ep);
        CHILD_CHECK(is_error(status), "dead pid: %s",
                    ucs_status_string(status));

        /* Our own process, another uuid */
        memcpy(&bad, good.data(), sizeof(bad));
        bad.uuid ^= 0x5555;
        status = uct_ep_create(&params, &ep);
        CHILD_CHECK(is_error(status), "wrong uuid: %s",
                    ucs_status_string(status));

        /* Our own process, a file descriptor that is no segment */
        memcpy(&bad, good.data(), sizeof(bad));
        bad.fd = 2;
        status = uct_ep_create(&params, &ep);
        CHILD_CHECK(is_error(status), "stderr as segment: %s",
                    ucs_status_string(status));

        /* No interface address */
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR;
        status = uct_ep_create(&params, &ep);
        CHILD_CHECK(is_error(status), "no iface address: %s",
                    ucs_status_string(status));

        /* The good one (a loopback endpoint) works */
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface_addr = (const uct_iface_addr_t*)good.data();
        CHILD_CHECK_OK(uct_ep_create(&params, &ep));
        schedule_t sched = {msg_short(5), msg_bcopy(77), msg_zcopy(9000, 3)};
        traffic_receiver rx(env, 1, "loopback");
        traffic_sender tx(env, ep, 1, 8, &sched);
        rx.expect(8, &sched);
        tx.send_until(sched.size());
        tx.flush();
        rx.wait_all();
        tx.check_completions();
        uct_ep_destroy(ep);
    }, 30);
}


/*
 * UCP over the transport, in two forked processes
 */
class p2p_ucp : public ::testing::TestWithParam<std::string> {
protected:
    shm_residue_check m_shm;
};

struct ucp_req_state {
    int          done;
    ucs_status_t status;
    size_t       length;
};

void ucp_wait(ucp_worker_h worker, void *req, ucp_req_state &state,
              const char *what)
{
    double end = now_sec() + wait_timeout;

    if (req == NULL) {
        return; /* Completed in place */
    }
    CHILD_CHECK(!UCS_PTR_IS_ERR(req), "%s: %s", what,
                ucs_status_string(UCS_PTR_STATUS(req)));
    while (!state.done) {
        CHILD_CHECK(now_sec() < end, "%s: not completed in %.0f s", what,
                    wait_timeout);
        if (ucp_worker_progress(worker) == 0) {
            sched_yield();
        }
    }
    CHILD_CHECK(state.status == UCS_OK, "%s: %s", what,
                ucs_status_string(state.status));
    ucp_request_free(req);
}

TEST_P(p2p_ucp, tag_send_recv)
{
    const std::string tl = GetParam();
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        const unsigned peer = 1 - rank;
        /* mc_udp: the loopback device only (nothing leaves the host) */
        ucp_context_h context = ucp_pair_context(tl + ",self", "lo");
        ucp_worker_h worker   = ucp_pair_worker(context);
        ucp_ep_h ep           = ucp_pair_connect(pg, rank, peer, worker);

        /* The endpoint's lanes, built from the peer's address, are ours */
        std::string lanes = ucp_ep_lanes(ep);
        const std::string dev = (tl == UCT_MC_UDP_TL_NAME) ? "/lo" :
                                                            "/memory";
        CHILD_CHECK(lanes.find(tl + dev) != std::string::npos,
                    "the UCP endpoint does not use %s:\n%s", tl.c_str(),
                    lanes.c_str());

        /* Tag messages both ways: eager short/bcopy/zcopy and rendezvous */
        const size_t sizes[] = {0, 1, 8, 100, 8000, 8177, 8200, 65536,
                                (1 << 20) + 3, 4 << 20};
        for (int dir = 0; dir < 2; ++dir) {
            const bool sender = ((unsigned)dir == rank);
            for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
                const size_t size  = sizes[i];
                const uint64_t key = msg_key(dir * 100 + i, size);
                std::vector<uint8_t> buf(std::max<size_t>(size, 1));
                ucp_request_param_t rp;
                ucp_req_state state = {0, UCS_OK, 0};
                void *req;

                memset(&rp, 0, sizeof(rp));
                rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                  UCP_OP_ATTR_FIELD_USER_DATA;
                rp.user_data    = &state;
                if (sender) {
                    fill_pattern(buf.data(), size, key);
                    rp.cb.send = [](void *request, ucs_status_t status,
                                    void *user_data) {
                        auto s    = static_cast<ucp_req_state*>(user_data);
                        s->status = status;
                        s->done   = 1;
                    };
                    req = ucp_tag_send_nbx(ep, buf.data(), size, i, &rp);
                    ucp_wait(worker, req, state, "tag send");
                } else {
                    rp.cb.recv = [](void *request, ucs_status_t status,
                                    const ucp_tag_recv_info_t *info,
                                    void *user_data) {
                        auto s    = static_cast<ucp_req_state*>(user_data);
                        s->status = status;
                        s->length = info->length;
                        s->done   = 1;
                    };
                    /* UCP 1.13 reports no length for a receive that
                     * completes in place: always get the callback */
                    rp.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
                    req = ucp_tag_recv_nbx(worker, buf.data(), size, i,
                                           (ucp_tag_t)-1, &rp);
                    CHILD_CHECK(req != NULL, "recv completed in place");
                    ucp_wait(worker, req, state, "tag recv");
                    CHILD_CHECK(state.length == size, "received %zu bytes "
                                "instead of %zu", state.length, size);
                    size_t bad = check_pattern(buf.data(), size, key);
                    CHILD_CHECK(bad == size, "%zu-byte message: wrong byte "
                                "at %zu", size, bad);
                }
            }
        }

        /* Close with flush, both sides progressing */
        ucp_pair_close(worker, ep);
        pg.barrier(rank);
        ucp_worker_destroy(worker);
        ucp_cleanup(context);
    }, 60);
}

INSTANTIATE_TEST_SUITE_P(tls, p2p_ucp,
                         ::testing::Values("sm_bcast", "sm_incast",
                                           UCT_MC_UDP_TL_NAME));


/*
 * ucx_perftest: a server and a client process on localhost
 */
bool port_listening(unsigned port)
{
    char local[16];

    snprintf(local, sizeof(local), ":%04X", port);
    for (const char *file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(file);
        std::string line;

        std::getline(in, line); /* header */
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string sl, laddr, raddr, state;

            fields >> sl >> laddr >> raddr >> state;
            if ((laddr.size() > 5) &&
                (laddr.compare(laddr.size() - 5, 5, local) == 0) &&
                (state == "0A")) {
                return true;
            }
        }
    }
    return false;
}

unsigned random_port()
{
    std::random_device rd;
    unsigned port;

    do {
        port = 30000 + (rd() % 30000);
    } while (port_listening(port));
    return port;
}

std::string read_file(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream ss;

    ss << in.rdbuf();
    return ss.str();
}

struct perftest_result {
    int         server_status;
    int         client_status;
    std::string server_out;
    std::string client_out;
};

/* Run "ucx_perftest <args>" as server and client with @a env */
perftest_result run_perftest(const std::string &env, const std::string &args)
{
    const unsigned port    = random_port();
    char tmpl[]            = "/tmp/o2m-perftest-XXXXXX";
    const std::string dir  = mkdtemp(tmpl);
    const std::string slog = dir + "/server.log";
    const std::string base = env + " UCX_LOG_LEVEL=info ucx_perftest -p " +
                             std::to_string(port) + " " + args;
    perftest_result result;
    int wstatus;
    pid_t pid;

    pid = fork();
    if (pid == 0) {
        std::string cmd = "exec timeout -s KILL 60 env " + base + " > " +
                          slog + " 2>&1";
        execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)NULL);
        _exit(127);
    }

    /* Wait until the server listens (or dies) */
    double end = now_sec() + 20;
    while (!port_listening(port) && (now_sec() < end) &&
           (waitpid(pid, &wstatus, WNOHANG) == 0)) {
        usleep(10000);
    }

    if (port_listening(port)) {
        result.client_out = run_command("env " + base + " localhost",
                                        &result.client_status, 60);
    } else {
        result.client_out    = "(server never listened)";
        result.client_status = -1;
        kill(pid, SIGKILL);
    }

    /* The server ends with the client (or fails the same way) */
    end = now_sec() + 20;
    while ((waitpid(pid, &wstatus, WNOHANG) == 0)) {
        if (now_sec() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &wstatus, 0);
            break;
        }
        usleep(10000);
    }
    result.server_status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) :
                           128 + WTERMSIG(wstatus);
    result.server_out    = read_file(slog);
    unlink(slog.c_str());
    rmdir(dir.c_str());
    return result;
}

/* "ep_cfg[N]: tag(<tl>/memory" in UCP's info log: the lane it used */
bool uses_tl(const std::string &out, const std::string &tl)
{
    std::regex re("ep_cfg\\[[0-9]+\\]: tag\\(" + tl + "/memory");
    return std::regex_search(out, re);
}

class p2p_perftest : public ::testing::TestWithParam<std::string> {
protected:
    shm_residue_check m_shm;
};

TEST_P(p2p_perftest, tag_lat_and_bw)
{
    const std::string tl  = GetParam();
    const std::string env = "LD_PRELOAD=\"" + plugin_preload() +
                            "\" UCX_TLS=" + tl + ",self";

    for (const std::string args : {"-t tag_lat -n 2000 -s 8",
                                   "-t tag_bw -n 50 -s 1048576"}) {
        perftest_result r = run_perftest(env, args);

        EXPECT_EQ(0, r.client_status) << args << "\n" << r.client_out;
        EXPECT_EQ(0, r.server_status) << args << "\n" << r.server_out;
        EXPECT_NE(std::string::npos, r.client_out.find("Final:"))
                << r.client_out;
        EXPECT_TRUE(uses_tl(r.client_out, tl)) << r.client_out;
        EXPECT_TRUE(uses_tl(r.server_out, tl)) << r.server_out;
    }
}

/* Without the plugin the same command fails: the checks above can fail */
TEST_P(p2p_perftest, fails_without_plugin)
{
    const std::string tl = GetParam();
    perftest_result r    = run_perftest("LD_PRELOAD= UCX_TLS=" + tl + ",self",
                                        "-t tag_lat -n 100 -s 8");

    EXPECT_NE(0, r.client_status) << r.client_out;
    EXPECT_FALSE(uses_tl(r.client_out, tl)) << r.client_out;
    EXPECT_FALSE(uses_tl(r.server_out, tl)) << r.server_out;
    EXPECT_NE(std::string::npos,
              r.client_out.find("transport '" + tl + "' is not available"))
            << r.client_out;
}

INSTANTIATE_TEST_SUITE_P(tls, p2p_perftest,
                         ::testing::Values("sm_bcast", "sm_incast"));

} // namespace
