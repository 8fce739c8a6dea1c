/**
 * ucx-o2m tests: the IB multicast transports' shared test parts
 * (ib_mc.h).
 */
#include "ib_mc.h"
#include "am_msgs.h"
#include "log_capture.h"
#include "tools.h"
#include "traffic.h"
#include "ucp_pair.h"

extern "C" {
#include <ucp/api/ucp.h>
#include "uct_o2m.h"
#include "mc_ib_wire.h"
}

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <sched.h>
#include <sstream>
#include <vector>

namespace o2m_test {

ib_mc_env::ib_mc_env(const std::string &tl, const std::string &md_name,
                     const std::string &dev_name,
                     const std::map<std::string, std::string> &config)
{
    uct_component_h *comps, component = NULL;
    unsigned ncomps;
    uct_md_config_t *md_config;
    uct_iface_config_t *iface_config;
    uct_iface_params_t params;
    uct_component_attr_t cattr;

    CHILD_CHECK_OK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                            &m_async));
    CHILD_CHECK_OK(uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                     &m_worker));

    CHILD_CHECK_OK(uct_query_components(&comps, &ncomps));
    for (unsigned i = 0; i < ncomps; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        CHILD_CHECK_OK(uct_component_query(comps[i], &cattr));
        if (!strcmp(cattr.name, "ib")) {
            component = comps[i];
        }
    }
    uct_release_component_list(comps);
    CHILD_CHECK(component != NULL, "no 'ib' component");

    CHILD_CHECK_OK(uct_md_config_read(component, NULL, NULL, &md_config));
    ucs_status_t status = uct_md_open(component, md_name.c_str(), md_config,
                                      &m_md);
    uct_config_release(md_config);
    CHILD_CHECK_OK(status);

    CHILD_CHECK_OK(uct_md_iface_config_read(m_md, tl.c_str(), NULL, NULL,
                                            &iface_config));
    for (const auto &kv : config) {
        status = uct_config_modify(iface_config, kv.first.c_str(),
                                   kv.second.c_str());
        CHILD_CHECK(status == UCS_OK, "config %s=%s: %s", kv.first.c_str(),
                    kv.second.c_str(), ucs_status_string(status));
    }

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl.c_str();
    params.mode.device.dev_name = dev_name.c_str();
    status = uct_iface_open(m_md, m_worker, &params, iface_config, &m_iface);
    uct_config_release(iface_config);
    CHILD_CHECK_OK(status);
    CHILD_CHECK_OK(uct_iface_query(m_iface, &m_attr));
    uct_iface_progress_enable(m_iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

ib_mc_env::~ib_mc_env()
{
    uct_iface_close(m_iface);
    uct_md_close(m_md);
    uct_worker_destroy(m_worker);
    ucs_async_context_destroy(m_async);
}

unsigned ib_mc_env::progress()
{
    unsigned count = uct_worker_progress(m_worker);

    if (count == 0) {
        sched_yield();
    }
    return count;
}

namespace {

const uint8_t AM_ID = 9;

using rx_log = am_rx_log;

/* Message k: every size class - header only, one packet, several packets
 * up to @a max - with its index in the first 8 bytes */
size_t msg_size(unsigned k, size_t max)
{
    static const size_t sizes[] = {8, 9, 40, 300, 900, 1000, 2000, 3000,
                                   1u << 20};

    return std::min(sizes[k % (sizeof(sizes) / sizeof(sizes[0]))] + k % 7,
                    max);
}

/* am_short for the small ones, am_bcopy else; retried on NO_RESOURCE */
ucs_status_t send_msg(ib_mc_env &env, uct_ep_h ep, uint64_t salt,
                      unsigned k, size_t max, size_t max_short)
{
    return am_msg_send(env, ep, AM_ID, salt, k, msg_size(k, max), max_short);
}

void check_msgs(const rx_log &log, uint64_t salt, unsigned count,
                size_t max, const char *what)
{
    am_msgs_check(log, salt, count, msg_size, max, what);
}

/* The kernel driver of verbs device @a name; a software device (rxe,
 * siw) has none but the network device it runs on ("?" when unknown) */
std::string device_driver(const char *name)
{
    char path[PATH_MAX], link[PATH_MAX];
    std::string parent;
    ssize_t n;

    snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/driver",
             name);
    n = readlink(path, link, sizeof(link) - 1);
    if (n <= 0) {
        snprintf(path, sizeof(path), "/sys/class/infiniband/%s/parent",
                 name);
        std::ifstream in(path);
        return std::getline(in, parent) ? "software, on " + parent : "?";
    }
    link[n] = '\0';
    return strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
}

} // namespace

void ib_mc_check_config_registered(const std::string &tl,
                                   std::initializer_list<const char*> vars)
{
    int status;

#if defined(__SANITIZE_ADDRESS__)
    /* In the sanitizer build ucx_info (uninstrumented) lists the plugin's
     * own transports but not the IB ones, which join UCX's ib component:
     * not understood yet (the regular build and the device tests cover
     * the registration) */
    GTEST_SKIP() << tl << "'s registration is not checked with sanitizers";
#endif
    std::string out = run_command("LD_PRELOAD='" + plugin_preload() +
                                  "' ucx_info -c -f 2>&1", &status);

    ASSERT_EQ(0, status) << out;
    for (const char *var : vars) {
        EXPECT_NE(std::string::npos, out.find(var)) << var << " missing";
    }
}

std::string ib_mc_devices_found()
{
    struct ibv_device **list;
    std::string found;
    int num = 0;

    list = ibv_get_device_list(&num);
    for (int i = 0; i < num; ++i) {
        found += std::string(found.empty() ? "" : ", ") +
                 ibv_get_device_name(list[i]) + " (" +
                 device_driver(ibv_get_device_name(list[i])) + ")";
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    return found.empty() ? "none" : found;
}

ib_mc_test::ib_mc_test(const std::string &tl, const std::string &device_kind,
                       ib_mc_device_filter_t filter) :
    m_tl(tl), m_device_kind(device_kind), m_filter(filter), m_salt(0)
{
}

void ib_mc_test::SetUp()
{
    struct ibv_device **list;
    std::random_device rd;
    int num = 0;

    /* Without UCX (the children use it): libibverbs only */
    list = ibv_get_device_list(&num);
    for (int i = 0; (i < num) && m_md.empty(); ++i) {
        if (m_filter(list[i])) {
            m_md = ibv_get_device_name(list[i]);
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    if (m_md.empty()) {
        GTEST_SKIP() << "no " << m_device_kind << " on this host, the "
                     << m_tl << " device tests need one (verbs devices "
                     << "found: " << ib_mc_devices_found() << ")";
    }
    m_dev  = m_md + ":1";
    m_salt = ((uint64_t)rd() << 32) | rd();
}

namespace {

/* One group of group_run: every member knows it from these alone */
struct group_case {
    uint64_t group_id;
    unsigned n;
    unsigned root;
    unsigned drop;      /* GROUP_TEST_DROP, per mille */
    unsigned count;     /* messages */
};

/* How a member of group_run meets the others: the root says its flush is
 * over, the members wait for that (progressing: they relay ACKs until
 * then), and everyone meets before destroying */
class member_sync {
public:
    virtual ~member_sync() {}
    virtual void root_done() = 0;
    virtual bool root_is_done() = 0;
    virtual void barrier() = 0;
};

/* Members of one guest: shared memory */
class local_sync : public member_sync {
public:
    local_sync(proc_group &pg, unsigned rank) :
        m_pg(pg), m_rank(rank),
        m_done(static_cast<volatile int*>(pg.shared()))
    {
    }

    void root_done() override { *m_done = 1; }
    bool root_is_done() override { return *m_done != 0; }
    void barrier() override { m_pg.barrier(m_rank); }

private:
    proc_group   &m_pg;
    unsigned     m_rank;
    volatile int *m_done;
};

/* A TCP connection carrying lines, every wait bounded */
class line_conn {
public:
    explicit line_conn(int fd) : m_fd(fd) {}
    ~line_conn() { close(m_fd); }

    void send_line(const std::string &line)
    {
        std::string l = line + "\n";

        CHILD_CHECK(send(m_fd, l.data(), l.size(), MSG_NOSIGNAL) ==
                    (ssize_t)l.size(), "sending '%s': %m", line.c_str());
    }

    /* 1: a line in *line; 0: none within @a timeout s; -1: closed */
    int recv_line(std::string *line, double timeout)
    {
        double end = now_sec() + timeout;
        struct pollfd pfd = {m_fd, POLLIN, 0};
        size_t pos;
        char buf[256];
        ssize_t ret;

        while ((pos = m_buf.find('\n')) == std::string::npos) {
            /* At least one look, also with no time left */
            double left = std::max(0.0, end - now_sec());
            if (poll(&pfd, 1, (int)(left * 1000)) <= 0) {
                if (now_sec() >= end) {
                    return 0;
                }
                continue;
            }
            ret = recv(m_fd, buf, sizeof(buf), 0);
            if (ret <= 0) {
                return -1;
            }
            m_buf.append(buf, ret);
        }
        *line = m_buf.substr(0, pos);
        m_buf.erase(0, pos + 1);
        return 1;
    }

    /* The next line, which must be @a expected */
    void expect_line(const std::string &expected, double timeout)
    {
        std::string line;
        int ret = recv_line(&line, timeout);

        CHILD_CHECK(ret == 1, "waiting for '%s': %s", expected.c_str(),
                    (ret == 0) ? "timed out" : "connection closed");
        CHILD_CHECK(line == expected, "'%s' instead of '%s'", line.c_str(),
                    expected.c_str());
    }

private:
    int         m_fd;
    std::string m_buf;
};

/* A member in the other guest: a line to its proxy in this one */
class remote_sync : public member_sync {
public:
    explicit remote_sync(line_conn &conn) : m_conn(conn), m_done(false) {}

    void root_done() override { m_conn.send_line("root-done"); }

    bool root_is_done() override
    {
        std::string line;
        int ret;

        if (!m_done) {
            ret = m_conn.recv_line(&line, 0);
            CHILD_CHECK(ret >= 0, "the proxy closed the connection");
            m_done = (ret == 1) && (line == "done");
            CHILD_CHECK((ret == 0) || m_done, "'%s' instead of 'done'",
                        line.c_str());
        }
        return m_done;
    }

    void barrier() override
    {
        m_conn.send_line("barrier");
        m_conn.expect_line("go", wait_timeout);
    }

private:
    line_conn &m_conn;
    bool      m_done;
};

/* Member @a rank of @a gc: the root sends the messages (every size class up
 * to 4 KiB) and flushes; the others receive them, exactly once, in order,
 * bytes checked, and show data by multicast and every forced drop
 * repaired */
void group_member(const std::string &tl, const std::string &md,
                  const std::string &dev, const group_case &gc, unsigned rank,
                  member_sync &sync)
{
    const size_t max = 4096;
    ib_mc_env env(tl, md, dev,
                  {{"GROUP_WINDOW", "32"}, {"GROUP_RADIX", "2"},
                   {"GROUP_SEG_SIZE", "4k"},
                   {"GROUP_TEST_DROP", std::to_string(gc.drop)}});
    uct_o2m_group_params_t p;
    rx_log log;
    uct_ep_h ep;
    char what[80];

    CHILD_CHECK_OK(uct_iface_set_am_handler(env.iface(), AM_ID, rx_log::cb,
                                            &log, 0));
    memset(&p, 0, sizeof(p));
    p.group_id   = gc.group_id;
    p.size       = gc.n;
    p.my_index   = rank;
    p.root_index = gc.root;
    CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &ep));

    snprintf(what, sizeof(what), "group of %u, root %u, drop %u, member %u",
             gc.n, gc.root, gc.drop, rank);
    if (rank == gc.root) {
        for (unsigned k = 0; k < gc.count; ++k) {
            CHILD_CHECK_OK(send_msg(env, ep, gc.group_id, k, max, 64));
        }
        CHILD_CHECK_OK(am_ep_flush(env, ep));
        CHILD_CHECK(uct_o2m_ep_state(ep, NULL) == UCT_O2M_EP_STATE_READY,
                    "%s: root not ready", what);
        sync.root_done();
    } else {
        CHILD_CHECK(uct_ep_am_short(ep, AM_ID, 0, NULL, 0) ==
                    UCS_ERR_UNSUPPORTED, "%s: a member sent", what);
        CHILD_CHECK(env.progress_until([&] {
                        return log.msgs.size() >= gc.count; }),
                    "%s: received %zu of %u", what, log.msgs.size(),
                    gc.count);
        /* Members relay ACKs until the root's flush is done */
        CHILD_CHECK(env.progress_until([&] { return sync.root_is_done(); }),
                    "%s: the root's flush did not end", what);
        check_msgs(log, gc.group_id, gc.count, max, what);
        /* the engine-backed endpoint keeps the AM data aligned (UD's
         * point-to-point endpoints have their own layout) */
        am_msgs_check_aligned(log, what);

        /* The data came by multicast; forced losses were repaired */
        uct_mc_verbs_ep_counters_t cnt;
        CHILD_CHECK_OK(uct_mc_verbs_ep_counters(ep, &cnt));
        CHILD_CHECK(cnt.rx_mcast_data > 0, "%s: no multicast data", what);
        if (gc.drop > 0) {
            CHILD_CHECK((cnt.rx_test_drop > 0) &&
                        (cnt.rx_repaired >= cnt.rx_test_drop),
                        "%s: %lu dropped, %lu repaired", what,
                        cnt.rx_test_drop, cnt.rx_repaired);
        } else {
            CHILD_CHECK(cnt.rx_test_drop == 0, "%s: dropped", what);
        }
    }
    sync.barrier();
    uct_ep_destroy(ep);
}

/* The other guest of a two-guest bed (contrib/vmbed.sh run -n 2), or ""
 * when this is not one */
std::string peer_guest()
{
    const char *n    = getenv("VMBED_N");
    const char *peer = getenv("VMBED_PEER_ADDR");
    const char *addr = getenv("VMBED_ADDR");

    if ((n == NULL) || strcmp(n, "2") || (peer == NULL) || !*peer ||
        (addr == NULL) || !*addr) {
        return "";
    }
    return peer;
}

const char *remote_env = "O2M_IB_MC_MEMBER";

/*
 * Rank @a rank of @a gc runs in the other guest (vmbed-exec starts this
 * program there, <tl>_member.DISABLED_run): this child is its proxy
 * in the group of this guest - it listens on this guest's address, hands
 * the member the address and the group, and carries the member's sync
 * over the connection.  Fails (CHILD_CHECK) when the member fails, exits
 * or does not answer in time.
 */
void remote_member(const std::string &tl, proc_group &pg,
                   const group_case &gc, unsigned rank)
{
    volatile int *done = static_cast<volatile int*>(pg.shared());
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    char exe[4096], spec[256], filter[128];
    pid_t pid;
    int lfd, fd, status, ret;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    CHILD_CHECK(inet_pton(AF_INET, getenv("VMBED_ADDR"), &sa.sin_addr) == 1,
                "VMBED_ADDR '%s'", getenv("VMBED_ADDR"));
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHILD_CHECK((lfd >= 0) && (bind(lfd, (struct sockaddr*)&sa,
                                    sizeof(sa)) == 0) &&
                (listen(lfd, 1) == 0) &&
                (getsockname(lfd, (struct sockaddr*)&sa, &len) == 0),
                "listening socket: %m");
    ret = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    CHILD_CHECK((ret > 0) && (ret < (int)sizeof(exe) - 1), "readlink: %m");
    exe[ret] = '\0';
    /* Words vmbed-exec joins and runs with sh -c: no character the shell
     * would interpret */
    snprintf(spec, sizeof(spec), "%s=%s:%u:%lu:%u:%u:%u:%u:%u", remote_env,
             getenv("VMBED_ADDR"), ntohs(sa.sin_port),
             (unsigned long)gc.group_id, gc.n, rank, gc.root, gc.drop,
             gc.count);

    snprintf(filter, sizeof(filter), "--gtest_filter=%s_member.DISABLED_run",
             tl.c_str());

    pid = fork();
    CHILD_CHECK(pid >= 0, "fork: %m");
    if (pid == 0) {
        /* The member's output is a whole gtest run: its errors (stderr)
         * are what matters here */
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execlp("vmbed-exec", "vmbed-exec", getenv("VMBED_PEER_ADDR"), "env",
               spec, exe, "--gtest_also_run_disabled_tests", filter,
               (char*)NULL);
        fprintf(stderr, "vmbed-exec: %m\n");
        _exit(127);
    }

    /* Any failure below stops the remote member too (vmbed-exec kills its
     * command when it goes away) */
    auto check = [&](bool cond, const char *why) {
        if (!cond) {
            kill(pid, SIGTERM);
            waitpid(pid, &status, 0);
            CHILD_CHECK(false, "member %u in the other guest: %s", rank,
                        why);
        }
    };

    struct pollfd pfd = {lfd, POLLIN, 0};
    check(poll(&pfd, 1, (int)(wait_timeout * 1000)) == 1,
          "it did not connect");
    fd = accept(lfd, NULL, NULL);
    check(fd >= 0, "accept failed");
    close(lfd);

    line_conn conn(fd);
    std::string line;
    if (rank == gc.root) {
        check(conn.recv_line(&line, wait_timeout) == 1,
              "no word from the root");
        check(line == "root-done", "the root did not finish");
        *done = 1;
    } else {
        double end = now_sec() + wait_timeout;
        while (!*done && (now_sec() < end)) {
            usleep(1000);
        }
        check(*done, "the root's flush did not end");
        conn.send_line("done");
    }
    check(conn.recv_line(&line, wait_timeout) == 1,
          "it did not reach the barrier");
    check(line == "barrier", "it did not reach the barrier");
    pg.barrier(rank);
    conn.send_line("go");

    check(waitpid(pid, &status, 0) == pid, "waitpid failed");
    CHILD_CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0),
                "member %u in the other guest: exit status 0x%x", rank,
                status);
}

} // namespace

void ib_mc_test::group_run(unsigned n, unsigned root, unsigned drop_permille,
                           unsigned count, unsigned remote)
{
    proc_group pg(n);
    group_case gc;

    m_salt      += 0x10001;
    gc.group_id  = m_salt;
    gc.n         = n;
    gc.root      = root;
    gc.drop      = drop_permille;
    gc.count     = count;
    pg.run_ok([&](unsigned rank) {
        if (remote != 0) {
            /* The members in the other guest start seconds later */
            wait_timeout *= 3;
        }
        if (remote & (1u << rank)) {
            remote_member(m_tl, pg, gc, rank);
        } else {
            local_sync sync(pg, rank);

            group_member(m_tl, m_md, m_dev, gc, rank, sync);
        }
    }, 300 + ((remote != 0) ? 300 : 0));
}

void ib_mc_test::check_groups_two_guests()
{
    static const struct {
        unsigned n, root, drop, remote;
    } cases[] = {
        {2, 0, 0,   0x2}, /* root in this guest */
        {2, 1, 100, 0x2}, /* root in the other */
        {3, 0, 100, 0x6},
        {3, 1, 300, 0x2},
        {4, 2, 100, 0xc},
        {4, 0, 100, 0xa}
    };

    if (peer_guest().empty()) {
        GTEST_SKIP() << "needs the two guests of contrib/vmbed.sh run -n 2 "
                        "(VMBED_N=2, VMBED_ADDR, VMBED_PEER_ADDR, "
                        "vmbed-exec)";
    }
    for (const auto &c : cases) {
        SCOPED_TRACE("group of " + std::to_string(c.n) + ", root " +
                     std::to_string(c.root) + ", mask of the other "
                     "guest's ranks " + std::to_string(c.remote));
        group_run(c.n, c.root, c.drop, 120, c.remote);
    }
}

void ib_mc_remote_member(const std::string &tl)
{
    const char *spec = getenv(remote_env);
    unsigned long long group_id;
    char addr[64];
    unsigned port, rank;
    struct sockaddr_in sa;
    struct ibv_device **list;
    group_case gc;
    int num = 0, fd;

    if (spec == NULL) {
        GTEST_SKIP() << "started by " << tl << ".group_two_guests only";
    }
    ASSERT_EQ(8, sscanf(spec, "%63[0-9.]:%u:%llu:%u:%u:%u:%u:%u", addr,
                        &port, &group_id, &gc.n, &rank, &gc.root, &gc.drop,
                        &gc.count)) << spec;
    gc.group_id = group_id;
    ASSERT_TRUE((gc.n >= 2) && (gc.n <= 4) && (rank < gc.n) &&
                (gc.root < gc.n) && (gc.drop <= 1000)) << spec;

    /* The first device, as the proxy's guest takes its first */
    list = ibv_get_device_list(&num);
    ASSERT_TRUE((list != NULL) && (num > 0)) << "no verbs device";
    std::string md = ibv_get_device_name(list[0]);
    ibv_free_device_list(list);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port   = htons(port);
    ASSERT_EQ(1, inet_pton(AF_INET, addr, &sa.sin_addr)) << addr;
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(0, connect(fd, (struct sockaddr*)&sa, sizeof(sa)))
            << addr << ":" << port << ": " << strerror(errno);

    line_conn conn(fd);
    remote_sync sync(conn);
    wait_timeout *= 3; /* as the members in the proxy's guest */
    group_member(tl, md, md + ":1", gc, rank, sync);
}

namespace {

/* Whether a device of this host holds the IPv4 multicast group @a ip
 * (host order; /proc/net/igmp: groups in hex, in memory order) */
bool igmp_joined(uint32_t ip)
{
    std::ifstream in("/proc/net/igmp");
    uint32_t net = htonl(ip);
    std::string line;
    char hex[16];

    snprintf(hex, sizeof(hex), "%08X", net);
    while (std::getline(in, line)) {
        if (!line.empty() && (line[0] == '\t') &&
            (line.find(hex) != std::string::npos)) {
            return true;
        }
    }
    return false;
}

/* The multicast address of group @a group_id with the default range */
uint32_t default_group_ip(uint64_t group_id)
{
    return uct_mc_ib_group_ip(group_id, ntohl(inet_addr("239.255.80.0")),
                              1024);
}

} // namespace


/* A group holds its IP group (RoCE: the kernel's membership that the join
 * made) while it lives, and leaves it on destroy and on a process exit */
void ib_mc_test::check_membership_left()
{
    for (bool kill_member : {false, true}) {
        proc_group pg(2);
        const uint32_t ip  = default_group_ip(++m_salt);
        volatile int *done = static_cast<volatile int*>(pg.shared());

        ASSERT_FALSE(igmp_joined(ip));
        std::vector<int> st = pg.run([&](unsigned rank) {
            ib_mc_env env(m_tl, m_md, m_dev);
            uct_o2m_group_params_t p;
            uct_ep_h ep;

            memset(&p, 0, sizeof(p));
            p.group_id   = m_salt;
            p.size       = 2;
            p.my_index   = rank;
            p.root_index = 0;
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &ep));
            if (rank == 0) {
                /* Ready: the member answered the probe, so both joined */
                CHILD_CHECK(env.progress_until([&] {
                                return uct_o2m_ep_state(ep, NULL) ==
                                       UCT_O2M_EP_STATE_READY; }),
                            "the group did not get ready");
                CHILD_CHECK(igmp_joined(ip), "the group is not joined");
                *done = 1;
            } else {
                /* Answers the root's probes */
                CHILD_CHECK(env.progress_until([&] { return *done != 0; }),
                            "the root did not get ready");
            }
            pg.barrier(rank);
            if (kill_member && (rank == 1)) {
                kill(getpid(), SIGKILL);
            }
            uct_ep_destroy(ep);
        }, 120);

        EXPECT_EQ(0, st[0]);
        EXPECT_EQ(kill_member ? 128 + SIGKILL : 0, st[1]);
        /* Nothing left joined, also after a killed member */
        EXPECT_FALSE(igmp_joined(ip)) << "kill_member " << kill_member;
    }
}

void ib_mc_test::check_listed()
{
    int status;
    std::string out = run_command("LD_PRELOAD='" + plugin_preload() +
                                  "' ucx_info -d 2>&1", &status);

    ASSERT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("Transport: " + m_tl)) << out;
    EXPECT_NE(std::string::npos, out.find("Device: " + m_dev)) << out;
}

/* uct_ep_create to a peer's interface: UD's endpoint, exact and in order */
void ib_mc_test::check_p2p_exact()
{
    proc_group pg(2);
    const unsigned count = 300;

    pg.run_ok([&](unsigned rank) {
        ib_mc_env env(m_tl, m_md, m_dev);
        struct {
            uint8_t dev[256];
            uint8_t iface[256];
        } mine, all[2];
        const size_t max = env.attr().cap.am.max_bcopy;
        rx_log log;
        uct_ep_h ep;

        CHILD_CHECK(env.attr().device_addr_len <= sizeof(mine.dev) &&
                    env.attr().iface_addr_len <= sizeof(mine.iface),
                    "addresses too long");
        CHILD_CHECK_OK(uct_iface_get_device_address(
                env.iface(), (uct_device_addr_t*)mine.dev));
        CHILD_CHECK_OK(uct_iface_get_address(env.iface(),
                                             (uct_iface_addr_t*)mine.iface));
        pg.allgather(rank, &mine, sizeof(mine), all);
        CHILD_CHECK_OK(uct_iface_set_am_handler(env.iface(), AM_ID,
                                                rx_log::cb, &log, 0));

        if (rank == 0) {
            uct_ep_params_t ep_params;

            memset(&ep_params, 0, sizeof(ep_params));
            ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                                   UCT_EP_PARAM_FIELD_DEV_ADDR |
                                   UCT_EP_PARAM_FIELD_IFACE_ADDR;
            ep_params.iface      = env.iface();
            ep_params.dev_addr   = (const uct_device_addr_t*)all[1].dev;
            ep_params.iface_addr = (const uct_iface_addr_t*)all[1].iface;
            CHILD_CHECK_OK(uct_ep_create(&ep_params, &ep));
            /* UD's endpoint, on the interface itself (a group endpoint's
             * operations are elsewhere) */
            CHILD_CHECK(ep->iface == env.iface(),
                        "a point-to-point endpoint is not UD's");
            for (unsigned k = 0; k < count; ++k) {
                CHILD_CHECK_OK(send_msg(env, ep, m_salt, k, max,
                                        env.attr().cap.am.max_short));
            }
            CHILD_CHECK_OK(am_ep_flush(env, ep));
        } else {
            CHILD_CHECK(env.progress_until([&] {
                            return log.msgs.size() >= count; }),
                        "received %zu of %u", log.msgs.size(), count);
            check_msgs(log, m_salt, count, max, "p2p");
        }
        pg.barrier(rank);
        if (rank == 0) {
            uct_ep_destroy(ep);
        }
    }, 120);
}

void ib_mc_test::check_groups(unsigned drop_permille)
{
    for (unsigned n = 2; n <= 4; ++n) {
        for (unsigned root = 0; root < n; ++root) {
            group_run(n, root, drop_permille, 120);
        }
    }
}

void ib_mc_test::check_ucp_tag()
{
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        const unsigned peer   = 1 - rank;
        ucp_context_h context = ucp_pair_context(m_tl, m_dev);
        ucp_worker_h worker   = ucp_pair_worker(context);
        ucp_ep_h ep           = ucp_pair_connect(pg, rank, peer, worker);

        std::string lanes = ucp_ep_lanes(ep);
        CHILD_CHECK(lanes.find(m_tl + "/" + m_dev) != std::string::npos,
                    "the UCP endpoint does not use %s:\n%s", m_tl.c_str(),
                    lanes.c_str());

        const size_t sizes[] = {0, 1, 8, 100, 4000, 9000, 70000};
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
            const size_t size  = sizes[i];
            const uint64_t key = msg_key(m_salt + i, size);
            std::vector<uint8_t> buf(std::max<size_t>(size, 1));
            ucp_request_param_t rp;
            ucs_status_t st   = UCS_OK;
            void *req;

            memset(&rp, 0, sizeof(rp));
            if (rank == 0) {
                fill_pattern(buf.data(), size, key);
                req = ucp_tag_send_nbx(ep, buf.data(), size, i, &rp);
            } else {
                req = ucp_tag_recv_nbx(worker, buf.data(), size, i,
                                       (ucp_tag_t)-1, &rp);
            }
            CHILD_CHECK(!UCS_PTR_IS_ERR(req), "tag op: %s",
                        ucs_status_string(UCS_PTR_STATUS(req)));
            double end = now_sec() + wait_timeout;
            while (UCS_PTR_IS_PTR(req) &&
                   ((st = ucp_request_check_status(req)) ==
                    UCS_INPROGRESS)) {
                CHILD_CHECK(now_sec() < end, "%zu bytes: not completed",
                            size);
                ucp_worker_progress(worker);
            }
            CHILD_CHECK(st == UCS_OK, "%zu bytes: %s", size,
                        ucs_status_string(st));
            if (UCS_PTR_IS_PTR(req)) {
                ucp_request_free(req);
            }
            if (rank == 1) {
                size_t bad = check_pattern(buf.data(), size, key);
                CHILD_CHECK(bad == size, "%zu bytes: wrong byte at %zu",
                            size, bad);
            }
        }

        ucp_pair_close(worker, ep);
        pg.barrier(rank);
        ucp_worker_destroy(worker);
        ucp_cleanup(context);
    }, 120);
}

namespace {

/* What the members of a peer timeout test share */
struct timeout_shared {
    volatile int phase;       /* root: 1 after the first batch's flush, 2
                                 after the idle time / the member stopped */
    volatile int done;        /* root: finished (its last flush ended) */
    volatile int failed[4];   /* member: its endpoint failed as expected */
};

struct flush_comp {
    uct_completion_t comp;
    volatile int     done;

    static void cb(uct_completion_t *c)
    {
        ucs_container_of(c, flush_comp, comp)->done = 1;
    }
};

/* The lines of @a cap naming GROUP_PEER_TIMEOUT */
unsigned timeout_lines(const scoped_log_capture &cap)
{
    unsigned n = 0;

    for (const std::string &line : cap.lines()) {
        n += (line.find("GROUP_PEER_TIMEOUT") != std::string::npos);
    }
    return n;
}

} // namespace

/* A member that stops responding (SIGSTOP: alive, but silent) while the
 * root waits for its ACKs: once GROUP_PEER_TIMEOUT passes, the group fails
 * with UCS_ERR_TIMED_OUT on every member - the root's flush completes with
 * it, the other member that waits for a message learns it (ABORT), and
 * the stopped one too once continued - with one log line each */
void ib_mc_test::check_peer_timeout_stopped()
{
    proc_group pg(3);
    auto sh            = static_cast<timeout_shared*>(pg.shared());
    const size_t max   = 900; /* a message is a packet or two: the second
                                 batch fits the window */
    const unsigned cnt = 10;

    m_salt += 0x10001;
    pg.run_ok([&](unsigned rank) {
        scoped_log_capture cap;
        wait_timeout *= 2; /* member 2's waits include its stop */
        ib_mc_env env(m_tl, m_md, m_dev,
                      {{"GROUP_WINDOW", "32"}, {"GROUP_RADIX", "2"},
                       {"GROUP_PEER_TIMEOUT", "4s"}});
        uct_o2m_group_params_t p;
        ucs_status_t status;
        rx_log log;
        uct_ep_h ep;

        CHILD_CHECK_OK(uct_iface_set_am_handler(env.iface(), AM_ID,
                                                rx_log::cb, &log, 0));
        memset(&p, 0, sizeof(p));
        p.group_id   = m_salt;
        p.size       = 3;
        p.my_index   = rank;
        p.root_index = 0;
        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &ep));

        if (rank == 0) {
            flush_comp fc;

            for (unsigned k = 0; k < cnt; ++k) {
                CHILD_CHECK_OK(send_msg(env, ep, m_salt, k, max, 64));
            }
            CHILD_CHECK_OK(am_ep_flush(env, ep));
            sh->phase = 1;

            /* Member 2 stops; the next batch waits for its ACKs */
            CHILD_CHECK(kill(pg.pids()[2], SIGSTOP) == 0, "SIGSTOP: %m");
            sh->phase = 2;
            for (unsigned k = cnt; k < 2 * cnt; ++k) {
                CHILD_CHECK_OK(send_msg(env, ep, m_salt, k, max, 64));
            }
            fc.comp.func   = flush_comp::cb;
            fc.comp.count  = 1;
            fc.comp.status = UCS_OK;
            fc.done        = 0;
            status = uct_ep_flush(ep, 0, &fc.comp);
            CHILD_CHECK(status == UCS_INPROGRESS, "flush: %s",
                        ucs_status_string(status));
            CHILD_CHECK(env.progress_until([&] { return fc.done != 0; }),
                        "the root's flush did not complete");
            CHILD_CHECK(fc.comp.status == UCS_ERR_TIMED_OUT,
                        "the root's flush completed with %s",
                        ucs_status_string(fc.comp.status));
            CHILD_CHECK((uct_o2m_ep_state(ep, &status) ==
                         UCT_O2M_EP_STATE_FAILED) &&
                        (status == UCS_ERR_TIMED_OUT),
                        "the root's endpoint: %s",
                        ucs_status_string(status));
            CHILD_CHECK(send_msg(env, ep, m_salt, 2 * cnt, max, 64) ==
                        UCS_ERR_TIMED_OUT, "a send after the failure");
            CHILD_CHECK(kill(pg.pids()[2], SIGCONT) == 0, "SIGCONT: %m");
            /* The failed root answers the members with ABORT */
            CHILD_CHECK(env.progress_until([&] {
                            return sh->failed[1] && sh->failed[2]; }),
                        "the members did not fail");
            sh->failed[0] = 1;
        } else {
            /* Member 1 waits for a message all along (it pings the root,
             * which answers while it lives); member 2 too once continued */
            CHILD_CHECK_OK(uct_o2m_ep_expect(ep, 1));
            CHILD_CHECK(env.progress_until([&] {
                            return uct_o2m_ep_state(ep, NULL) ==
                                   UCT_O2M_EP_STATE_FAILED; }),
                        "member %u: the group did not fail (%zu messages)",
                        rank, log.msgs.size());
            CHILD_CHECK((uct_o2m_ep_state(ep, &status) ==
                         UCT_O2M_EP_STATE_FAILED) &&
                        (status == UCS_ERR_TIMED_OUT),
                        "member %u: %s", rank, ucs_status_string(status));
            CHILD_CHECK(sh->phase == 2, "member %u failed in phase %d",
                        rank, sh->phase);
            /* What it received is the root's messages, in order */
            CHILD_CHECK(log.msgs.size() >= cnt, "member %u: %zu messages",
                        rank, log.msgs.size());
            check_msgs(log, m_salt, log.msgs.size(), max, "member");
            sh->failed[rank] = 1;
            CHILD_CHECK(env.progress_until([&] { return sh->failed[0]; }),
                        "member %u: the root did not end", rank);
        }
        CHILD_CHECK(timeout_lines(cap) == 1, "member %u: %u log lines on "
                    "the timeout:\n%s", rank, timeout_lines(cap),
                    cap.all().c_str());
        pg.barrier(rank);
        uct_ep_destroy(ep);
    }, 300);
}

/* Slow is not dead: a group idle for longer than GROUP_PEER_TIMEOUT - the
 * root progressing without sending, one member waiting for a message all
 * along (its pings answered), one not progressing at all - stays healthy,
 * and its next batch is delivered exactly and flushed */
void ib_mc_test::check_peer_timeout_idle()
{
    proc_group pg(3);
    auto sh            = static_cast<timeout_shared*>(pg.shared());
    const size_t max   = 4096;
    const unsigned cnt = 20;
    const double bound = 3, idle = 8;

    m_salt += 0x10001;
    pg.run_ok([&](unsigned rank) {
        scoped_log_capture cap;
        wait_timeout += idle; /* the root's flush waits for the idle time */
        ib_mc_env env(m_tl, m_md, m_dev,
                      {{"GROUP_WINDOW", "32"}, {"GROUP_RADIX", "2"},
                       {"GROUP_SEG_SIZE", "4k"},
                       {"GROUP_PEER_TIMEOUT", std::to_string(bound) + "s"}});
        uct_o2m_group_params_t p;
        ucs_status_t status;
        rx_log log;
        uct_ep_h ep;

        CHILD_CHECK_OK(uct_iface_set_am_handler(env.iface(), AM_ID,
                                                rx_log::cb, &log, 0));
        memset(&p, 0, sizeof(p));
        p.group_id   = m_salt;
        p.size       = 3;
        p.my_index   = rank;
        p.root_index = 0;
        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &ep));

        if (rank == 0) {
            for (unsigned k = 0; k < cnt; ++k) {
                CHILD_CHECK_OK(send_msg(env, ep, m_salt, k, max, 64));
            }
            CHILD_CHECK_OK(am_ep_flush(env, ep));
            sh->phase = 1;
            double end = now_sec() + idle;
            while (now_sec() < end) {
                env.progress();
            }
            sh->phase = 2;
            for (unsigned k = cnt; k < 2 * cnt; ++k) {
                CHILD_CHECK_OK(send_msg(env, ep, m_salt, k, max, 64));
            }
            CHILD_CHECK_OK(am_ep_flush(env, ep));
            sh->done = 1;
        } else {
            CHILD_CHECK(env.progress_until([&] {
                            return log.msgs.size() >= cnt; }),
                        "member %u: received %zu of %u", rank,
                        log.msgs.size(), cnt);
            CHILD_CHECK(env.progress_until([&] { return sh->phase >= 1; }),
                        "member %u: the first flush did not end", rank);
            if (rank == 1) {
                CHILD_CHECK_OK(uct_o2m_ep_expect(ep, 1));
                CHILD_CHECK(env.progress_until([&] {
                                return sh->phase >= 2; }),
                            "member 1: the idle time did not end");
                CHILD_CHECK_OK(uct_o2m_ep_expect(ep, 0));
            } else {
                /* Not progressing at all (bounded) */
                double end = now_sec() + wait_timeout;
                while ((sh->phase < 2) && (now_sec() < end)) {
                    usleep(10000);
                }
                CHILD_CHECK(sh->phase >= 2, "member 2: the idle time did "
                            "not end");
            }
            CHILD_CHECK(env.progress_until([&] {
                            return log.msgs.size() >= 2 * cnt; }),
                        "member %u: received %zu of %u", rank,
                        log.msgs.size(), 2 * cnt);
            CHILD_CHECK(env.progress_until([&] { return sh->done != 0; }),
                        "member %u: the root's flush did not end", rank);
            check_msgs(log, m_salt, 2 * cnt, max, "member");
        }
        CHILD_CHECK((uct_o2m_ep_state(ep, &status) ==
                     UCT_O2M_EP_STATE_READY) && (status == UCS_OK),
                    "member %u: %s after the idle time", rank,
                    ucs_status_string(status));
        CHILD_CHECK(timeout_lines(cap) == 0, "member %u:\n%s", rank,
                    cap.all().c_str());
        pg.barrier(rank);
        uct_ep_destroy(ep);
    }, 300);
}

} // namespace o2m_test
