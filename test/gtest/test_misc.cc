/**
 * ucx-o2m tests: the plugin as UCX tools see it, the version guard,
 * configuration, segments and resource leaks.
 */
#include "common/harness.h"
#include "common/uct_env.h"
#include "common/traffic.h"
#include "common/peers.h"
#include "common/residue.h"
#include "common/tools.h"
#include "common/log_capture.h"

extern "C" {
#include "ucg_group.h"
#include "o2m_mix.h"
#include <ucs/debug/log.h>
}

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <algorithm>
#include <dirent.h>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace o2m_test;

namespace {

class misc : public ::testing::Test {
protected:
    shm_residue_check m_shm;
};

unsigned count_matches(const std::string &text, const std::string &regex)
{
    std::regex re(regex);

    return std::distance(std::sregex_iterator(text.begin(), text.end(), re),
                         std::sregex_iterator());
}

std::string ucx_info(const std::string &preload, const std::string &args,
                     int *status, const std::string &env = "")
{
    return run_command("env LD_PRELOAD=\"" + preload + "\" " + env +
                       " ucx_info " + args, status, 60);
}

const char *TL_LINE_BCAST  = "#[ \\t]+Transport: sm_bcast\\n";
const char *TL_LINE_INCAST = "#[ \\t]+Transport: sm_incast\\n";
const char *WARNING_LINE   = "(^|\\n)\\[ucx-o2m\\] WARNING[^\\n]*";

TEST_F(misc, ucx_info_lists_transports)
{
    int status;
    std::string out = ucx_info(plugin_preload(), "-d", &status);

    EXPECT_EQ(0, status) << out;
    EXPECT_EQ(1u, count_matches(out, TL_LINE_BCAST)) << out;
    EXPECT_EQ(1u, count_matches(out, TL_LINE_INCAST)) << out;
    EXPECT_EQ(0u, count_matches(out, WARNING_LINE)) << out;
    EXPECT_EQ(0u, count_matches(out, "UCX +ERROR")) << out;

    /* Not there without the plugin */
    out = ucx_info("", "-d", &status);
    EXPECT_EQ(0, status) << out;
    EXPECT_EQ(0u, count_matches(out, TL_LINE_BCAST)) << out;
    EXPECT_EQ(0u, count_matches(out, TL_LINE_INCAST)) << out;
    EXPECT_NE(0u, count_matches(out, "Transport: self")) << out;
}

/* The transports' names, as the plugin and UCG name them in logs and use
 * them to open the interfaces, are the ones UCX lists */
TEST(tl_names, plugin_and_ucg)
{
    EXPECT_STREQ("sm_bcast", uct_o2m_tl_name(0));
    EXPECT_STREQ("sm_incast", uct_o2m_tl_name(1));
    EXPECT_STREQ("sm_bcast", ucg_sm_tl_name(UCG_SM_BCAST));
    EXPECT_STREQ("sm_incast", ucg_sm_tl_name(UCG_SM_INCAST));
}

/* The one mixing function of the plugin and UCG (group ids, mc_udp's
 * multicast address of a group) is splitmix64's: its first outputs from
 * seed 0, and no two of a run of consecutive inputs mix to one value */
TEST(o2m_mix64, splitmix64)
{
    const uint64_t gamma = 0x9e3779b97f4a7c15ull;
    std::set<uint64_t> seen;
    uint64_t i;

    EXPECT_EQ(0xe220a8397b1dcdafull, uct_o2m_mix64(gamma));
    EXPECT_EQ(0x6e789e6aa1b965f4ull, uct_o2m_mix64(2 * gamma));
    for (i = 0; i < 4096; ++i) {
        EXPECT_TRUE(seen.insert(uct_o2m_mix64(i)).second) << i;
    }
}

/* The tests' log capture: the innermost capture gets the warnings and
 * errors, the outer one gets them again once the inner one is gone */
TEST(log_capture, innermost_gets_the_lines)
{
    scoped_log_capture outer;

    ucs_error("outer %d", 1);
    {
        scoped_log_capture inner;

        ucs_warn("inner");
        ucs_debug("not captured");
        EXPECT_EQ(1u, inner.lines().size()) << inner.all();
        EXPECT_TRUE(inner.has("inner"));
    }
    ucs_error("outer %d", 2);

    EXPECT_EQ(2u, outer.lines().size()) << outer.all();
    EXPECT_TRUE(outer.has("outer 1"));
    EXPECT_TRUE(outer.has("outer 2"));
    EXPECT_FALSE(outer.has("inner"));
}

TEST_F(misc, ucx_info_lists_config)
{
    int status;
    std::string out = ucx_info(plugin_preload(), "-c -f", &status);

    EXPECT_EQ(0, status) << out;
    for (const char *var : {"UCX_SM_BCAST_FIFO_SIZE=64\n",
                            "UCX_SM_INCAST_FIFO_SIZE=64\n",
                            "UCX_SM_INCAST_RING_MAX=",
                            "UCX_SM_BCAST_SEG_SIZE=",
                            "UCX_SM_BCAST_P2P_FIFO_SIZE=",
                            "UCX_SM_BCAST_MAX_MEMBERS=",
                            "UCX_SM_BCAST_MAX_GROUPS=",
                            "UCX_SM_BCAST_MAX_ZCOPY=",
                            "UCX_SM_BCAST_PEER_TIMEOUT=",
                            "UCX_SM_BCAST_CHECK_INTERVAL=",
                            "UCX_SM_INCAST_PEER_TIMEOUT="}) {
        EXPECT_NE(std::string::npos, out.find(var)) << var;
    }

    /* A transport's own variable, and the common one for both */
    out = ucx_info(plugin_preload(), "-c", &status,
                   "UCX_SM_BCAST_FIFO_SIZE=32");
    EXPECT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("UCX_SM_BCAST_FIFO_SIZE=32\n"));
    EXPECT_NE(std::string::npos, out.find("UCX_SM_INCAST_FIFO_SIZE=64\n"));
    out = ucx_info(plugin_preload(), "-c", &status, "UCX_O2M_FIFO_SIZE=128");
    EXPECT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("UCX_SM_BCAST_FIFO_SIZE=128\n"));
    EXPECT_NE(std::string::npos, out.find("UCX_SM_INCAST_FIFO_SIZE=128\n"));

    /* Not there without the plugin */
    out = ucx_info("", "-c -f", &status);
    EXPECT_EQ(std::string::npos, out.find("UCX_SM_BCAST_FIFO_SIZE"));
}


/*
 * The version guard: a shim that makes ucp_get_version() report another
 * version, preloaded before the plugin
 */
class version_guard : public misc {
protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/o2m-version-XXXXXX";

        ASSERT_NE(nullptr, mkdtemp(tmpl));
        m_dir = tmpl;
    }

    void TearDown() override
    {
        int status;

        run_command("rm -rf " + m_dir, &status, 10);
    }

    /* Build a shim reporting @a version ("1, 12, 0") */
    std::string shim(const std::string &name, const std::string &version)
    {
        const std::string src = m_dir + "/" + name + ".c";
        const std::string lib = m_dir + "/" + name + ".so";
        std::ofstream out(src);
        int status;

        out << "void ucp_get_version(unsigned *major, unsigned *minor, "
               "unsigned *patch)\n{\n    unsigned v[] = {" << version
            << "};\n    *major = v[0];\n    *minor = v[1];\n"
               "    *patch = v[2];\n}\n";
        out.close();

        std::string log = run_command("cc -shared -fPIC -o " + lib + " " +
                                      src, &status, 60);
        EXPECT_EQ(0, status) << log;
        return lib;
    }

    /* LD_PRELOAD: sanitizer runtimes (if any), the shim, the plugin */
    static std::string preload_with(const std::string &shim)
    {
        std::string preload = plugin_preload();
        size_t pos          = preload.rfind(plugin_path());

        return preload.substr(0, pos) + shim + " " + plugin_path();
    }

    std::string m_dir;
};

TEST_F(version_guard, other_version_refused)
{
    for (const char *version : {"1, 12, 0", "1, 13, 2", "2, 13, 1"}) {
        std::string lib = shim("other", version);
        int status;
        std::string out = ucx_info(preload_with(lib), "-d", &status);

        EXPECT_EQ(0, status) << version << ":\n" << out;
        EXPECT_EQ(1u, count_matches(out, WARNING_LINE)) << version << ":\n"
                                                        << out;
        EXPECT_EQ(0u, count_matches(out, "Transport: sm_bcast")) << out;
        EXPECT_EQ(0u, count_matches(out, "Transport: sm_incast")) << out;
        EXPECT_NE(0u, count_matches(out, "Transport: self")) << out;
        /* The warning names both versions */
        std::string ver = std::regex_replace(std::string(version),
                                             std::regex(", "), ".");
        EXPECT_NE(std::string::npos, out.find("1.13.1")) << out;
        EXPECT_NE(std::string::npos, out.find(ver)) << out;
    }
}

/* The same shim reporting the right version changes nothing: the test
 * above fails for the guard's reason, not the shim's */
TEST_F(version_guard, same_version_accepted)
{
    std::string lib = shim("same", "1, 13, 1");
    int status;
    std::string out = ucx_info(preload_with(lib), "-d", &status);

    EXPECT_EQ(0, status) << out;
    EXPECT_EQ(0u, count_matches(out, WARNING_LINE)) << out;
    EXPECT_EQ(1u, count_matches(out, TL_LINE_BCAST)) << out;
    EXPECT_EQ(1u, count_matches(out, TL_LINE_INCAST)) << out;
}


/*
 * Configuration errors and values
 */
ucs_status_t open_with(const std::string &tl, const std::string &name,
                       const std::string &value)
{
    uct_md_env domain("o2m");
    uct_iface_config_t *config = domain.iface_config(tl.c_str());
    uct_iface_params_t params;
    uct_iface_h iface;
    ucs_status_t status;

    status = uct_config_modify(config, ("O2M_" + name).c_str(),
                               value.c_str());
    CHILD_CHECK(status == UCS_OK, "%s=%s: %s", name.c_str(), value.c_str(),
                ucs_status_string(status));

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl.c_str();
    params.mode.device.dev_name = "memory";
    iface                       = NULL;
    status = uct_iface_open(domain.md(), domain.worker(), &params, config,
                            &iface);
    uct_config_release(config);
    if (status == UCS_OK) {
        uct_iface_close(iface);
    }
    return status;
}

TEST_F(misc, bad_config_fails_cleanly)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) {
        const struct {
            const char *name;
            const char *value;
        } bad[] = {
            {"SEG_SIZE", "100"},    {"SEG_SIZE", "1000"},
            {"SEG_SIZE", "1100"},   {"SEG_SIZE", "8g"},
            {"MAX_MEMBERS", "1"},   {"MAX_MEMBERS", "100000"},
            {"MAX_GROUPS", "0"},    {"MAX_GROUPS", "100000"}
        };

        /* Warm up: UCX opens its own descriptors once */
        CHILD_CHECK_OK(open_with("sm_bcast", "FIFO_SIZE", "8"));
        unsigned fds = count_fds();

        for (const char *tl : {"sm_bcast", "sm_incast"}) {
            for (const auto &b : bad) {
                ucs_status_t status = open_with(tl, b.name, b.value);
                CHILD_CHECK(is_error(status), "%s with %s=%s: %s", tl,
                            b.name, b.value, ucs_status_string(status));
            }
        }
        CHILD_CHECK(count_fds() == fds, "%u descriptors before, %u after",
                    fds, count_fds());
        CHILD_CHECK(o2m_held(getpid()).empty(), "segments left behind");

        /* Odd values that are fine */
        CHILD_CHECK_OK(open_with("sm_bcast", "SEG_SIZE", "1k"));
        CHILD_CHECK_OK(open_with("sm_incast", "FIFO_SIZE", "3"));
        CHILD_CHECK(count_fds() == fds, "descriptors leaked");
    }, 60);
}

TEST_F(misc, config_from_environment)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) {
        uct_o2m_iface_attr_t oattr;

        setenv("UCX_SM_BCAST_FIFO_SIZE", "5", 1);
        setenv("UCX_SM_BCAST_SEG_SIZE", "2k", 1);
        setenv("UCX_O2M_MAX_GROUPS", "7", 1);
        {
            uct_env env("sm_bcast");
            CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
            CHILD_CHECK(oattr.fifo_depth == 8, "FIFO_SIZE 5: %u",
                        oattr.fifo_depth);
            CHILD_CHECK(oattr.max_short == 2048 - 16, "max_short %zu",
                        oattr.max_short);
            CHILD_CHECK(env.attr().cap.am.max_short == 2048 - 16,
                        "iface attr max_short %zu",
                        env.attr().cap.am.max_short);
            CHILD_CHECK(oattr.max_groups == 7, "max_groups %u",
                        oattr.max_groups);
        }
        {
            uct_env env("sm_incast");
            CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
            CHILD_CHECK(oattr.fifo_depth == 64, "incast FIFO_SIZE %u",
                        oattr.fifo_depth);
            CHILD_CHECK(oattr.max_groups == 7, "max_groups %u",
                        oattr.max_groups);
            CHILD_CHECK(oattr.is_incast == 1, "is_incast");
        }
    }, 60);
}


/*
 * Segments: owner-only, and nothing left after the endpoints and the
 * interface are gone (descriptors, mappings)
 */
TEST_F(misc, segments_private_and_released)
{
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        {
            /* Warm-up of UCX's own descriptors */
            uct_env warm("sm_bcast");
        }
        const unsigned fds = count_fds();

        {
            uct_env env("sm_bcast");
            traffic_receiver rx(env, 1, "receiver");
            peer_addrs addrs;
            uct_o2m_group_params_t p;
            uct_ep_h group_ep, p2p_ep;

            addrs.exchange(pg, rank, env);
            memset(&p, 0, sizeof(p));
            p.field_mask      = UCT_O2M_GROUP_FIELD_ROOT_ADDR;
            p.group_id        = 1;
            p.size            = 2;
            p.my_index        = rank;
            p.root_index      = 0;
            p.root_iface_addr = (const uct_iface_addr_t*)
                                addrs.iface[0].data();
            p.root_dev_addr   = (const uct_device_addr_t*)
                                addrs.dev[0].data();
            if (rank == 0) {
                CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &group_ep));
            }
            pg.barrier(rank);
            if (rank == 1) {
                CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, &group_ep));
            }

            CHILD_CHECK_OK(addrs.p2p_ep_create(env, 1 - rank, &p2p_ep));

            /* Every segment this process owns is owner-only */
            std::vector<std::string> mine = o2m_fds(getpid());
            CHILD_CHECK(mine.size() == ((rank == 0) ? 2u : 1u),
                        "rank %u owns %zu segments", rank, mine.size());
            for (const std::string &fd : mine) {
                struct stat st;
                std::string path = "/proc/self/fd/" +
                                   fd.substr(0, fd.find(' '));
                CHILD_CHECK(stat(path.c_str(), &st) == 0, "stat %s",
                            path.c_str());
                CHILD_CHECK((st.st_mode & 0777) == 0600, "%s: mode %o",
                            fd.c_str(), st.st_mode & 0777);
                CHILD_CHECK(st.st_uid == getuid(), "owner");
            }
            CHILD_CHECK(o2m_maps(getpid()).size() >= mine.size() + 1,
                        "mappings");

            /* A message each way, so everything is really in use */
            schedule_t sched = {msg_short(1), msg_zcopy(20000, 4)};
            rx.expect(3, (rank == 1) ? &sched : NULL);
            if (rank == 0) {
                traffic_sender tx(env, group_ep, 1, 3, &sched);
                tx.send_until(sched.size());
                tx.flush();
                tx.wait_zcopy();
            } else {
                rx.wait_all();
            }
            pg.barrier(rank);

            uct_ep_destroy(p2p_ep);
            uct_ep_destroy(group_ep);
            pg.barrier(rank);
        }

        CHILD_CHECK(o2m_fds(getpid()).empty(), "descriptors left: %s",
                    o2m_fds(getpid()).front().c_str());
        CHILD_CHECK(o2m_maps(getpid()).empty(), "%zu mappings left",
                    o2m_maps(getpid()).size());
        CHILD_CHECK(count_fds() == fds, "%u descriptors before, %u after",
                    fds, count_fds());
    }, 60);
}


/*
 * The residue checks see what the project leaves behind and nothing else:
 * an o2m memfd held or mapped by this process or by a child, a /dev/shm
 * file with the project's prefix; not another job's /dev/shm file (Open
 * MPI's vader_segment.*) nor a segment of a process outside the test.
 */
TEST(residue_check, sees_own_leftovers_only)
{
    const std::string tag = "selftest-" + std::to_string(getpid());
    const std::string own = std::string(o2m_name_prefix) + "-" + tag;
    const std::string other = "vader_segment." + tag;
    const size_t size = 4096;
    int fd, ready[2], release[2], status;
    char c;
    void *ptr;
    pid_t pid;

    ASSERT_TRUE(o2m_held_by_test().empty());

    /* held by this process: open, then mapped only */
    fd = memfd_create(own.c_str(), MFD_CLOEXEC);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(0, ftruncate(fd, size));
    ptr = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    ASSERT_NE(MAP_FAILED, ptr);
    EXPECT_EQ(2u, o2m_held(getpid()).size()); /* fd and mapping */
    close(fd);
    EXPECT_EQ(1u, o2m_held_by_test().size());
    munmap(ptr, size);
    EXPECT_TRUE(o2m_held_by_test().empty());

    /* held by a child, and by a process that is no longer ours (its parent
     * exited: reparented, as another job's process would be) */
    ASSERT_EQ(0, pipe(ready));
    ASSERT_EQ(0, pipe(release));
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        bool orphan = false;
        close(ready[0]);
        close(release[1]);
        if (memfd_create(own.c_str(), 0) < 0) {
            _exit(1);
        }
        if (write(ready[1], "1", 1) != 1) {
            _exit(1);
        }
        /* parent says: '1' exit, '2' fork a grandchild that holds the
         * segment, then exit */
        if ((read(release[0], &c, 1) == 1) && (c == '2')) {
            orphan = (fork() == 0);
        }
        if (orphan) {
            if (write(ready[1], "2", 1) != 1) {
                _exit(1);
            }
            /* until the test closes the pipe, at most 30 s */
            alarm(30);
            (void)!read(release[0], &c, 1);
        }
        _exit(0);
    }
    close(ready[1]);
    close(release[0]);
    ASSERT_EQ(1, read(ready[0], &c, 1));
    EXPECT_FALSE(o2m_held_by_test().empty()) << "a child's segment is missed";

    ASSERT_EQ(1, write(release[1], "2", 1));
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0));
    ASSERT_EQ(1, read(ready[0], &c, 1)); /* the grandchild holds it */
    EXPECT_TRUE(o2m_held_by_test().empty()) << o2m_held_by_test()[0];
    close(release[1]); /* the grandchild exits */
    close(ready[0]);

    /* /dev/shm: the project's prefix only */
    for (const std::string &name : {own, other}) {
        fd = open(("/dev/shm/" + name).c_str(), O_CREAT | O_EXCL | O_RDWR,
                  0600);
        ASSERT_GE(fd, 0) << name << ": " << strerror(errno);
        close(fd);
    }
    std::vector<std::string> files = dev_shm_files();
    unlink(("/dev/shm/" + own).c_str());
    unlink(("/dev/shm/" + other).c_str());
    EXPECT_EQ(1, std::count(files.begin(), files.end(), own));
    EXPECT_EQ(0, std::count(files.begin(), files.end(), other));
}

} // namespace
