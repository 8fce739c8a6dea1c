/**
 * ucx-o2m tests: contrib/hw-suite.sh, the hardware suite (docs/hardware.md),
 * as far as it runs without a device: its usage errors, its message and
 * status when the host has no RDMA device, its dry run over a fake sysfs
 * tree with an mlx5 and a Soft-RoCE device (what it finds, what it would
 * run, nothing written), and the time limit of a step (a step that hangs
 * fails at the limit).  HW_SUITE_SYSFS points the script at the fake tree.
 */
#include "common/harness.h"
#include "common/tools.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdlib.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace o2m_test;

namespace {

class hw_suite : public ::testing::Test {
protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/o2m-hw-suite.XXXXXX";

        ASSERT_NE(nullptr, mkdtemp(tmpl));
        m_dir = tmpl;
        ASSERT_EQ(0, mkdir((m_dir + "/sysfs").c_str(), 0755));
    }

    void TearDown() override
    {
        int status;

        if (!m_dir.empty()) {
            run_command("rm -rf " + m_dir, &status);
        }
    }

    /* A device of the fake sysfs tree with one port; @a driver "": a
     * software one (Soft-RoCE: no driver, its parent network device) */
    void add_device(const std::string &name, const std::string &driver,
                    const std::string &state, const std::string &link_layer,
                    const std::string &netdev)
    {
        std::string d = m_dir + "/sysfs/" + name;
        int status;

        run_command("mkdir -p " + d + "/ports/1/gid_attrs/ndevs", &status);
        ASSERT_EQ(0, status);
        if (driver.empty()) {
            std::ofstream(d + "/parent") << netdev << "\n";
        } else {
            run_command("mkdir -p " + m_dir + "/drivers/" + driver + " " + d +
                        "/device && ln -s " + m_dir + "/drivers/" + driver +
                        " " + d + "/device/driver", &status);
            ASSERT_EQ(0, status);
        }
        std::ofstream(d + "/ports/1/state") << state << "\n";
        std::ofstream(d + "/ports/1/link_layer") << link_layer << "\n";
        std::ofstream(d + "/ports/1/gid_attrs/ndevs/0") << netdev << "\n";
    }

    /* The script's output; @a status: its exit status (run_command's
     * "sh -c '...'": no single quotes in @a args) */
    std::string suite(const std::string &args, int *status,
                      int timeout = 60)
    {
        return run_command("HW_SUITE_SYSFS=" + m_dir + "/sysfs bash " +
                           std::string(O2M_SRC_DIR) + "/contrib/hw-suite.sh " +
                           args, status, timeout);
    }

    std::string m_dir;
};

} // namespace

TEST_F(hw_suite, usage_errors)
{
    int status;

    for (const char *args : {"--bogus", "-p 0", "-p x", "-t 0",
                             "-s devices,nothing", "-H a,b/c", "-H",
                             "--netdev a/b"}) {
        std::string out = suite(args, &status);
        EXPECT_EQ(2, status) << args << ":\n" << out;
        EXPECT_NE(std::string::npos, out.find("hw-suite: ")) << out;
    }

    std::string help = suite("--help", &status);
    EXPECT_EQ(0, status) << help;
    EXPECT_NE(std::string::npos, help.find("--dry-run")) << help;
}

/* No device: a clear message, status 77, the summary says so */
TEST_F(hw_suite, no_device)
{
    int status;
    std::string out = suite("-o " + m_dir + "/out", &status);

    EXPECT_EQ(77, status) << out;
    EXPECT_NE(std::string::npos, out.find("no RDMA device on this host: " +
                                          m_dir + "/sysfs")) << out;
    std::ifstream summary(m_dir + "/out/summary.txt");
    std::string line;
    ASSERT_TRUE(std::getline(summary, line));
    EXPECT_EQ("devices: SKIP (no RDMA device)", line);

    /* A dry run needs no device */
    out = suite("--dry-run -o " + m_dir + "/dry", &status);
    EXPECT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("no RDMA device")) << out;
    EXPECT_NE(std::string::npos, out.find("devices: DRY (0 port(s)")) << out;
}

/* Dry run on an mlx5 and a Soft-RoCE device across two hosts: what it
 * found, the commands with their limits, nothing run or written */
TEST_F(hw_suite, dry_run)
{
    int status;

    add_device("mlx5_0", "mlx5_core", "4: ACTIVE", "Ethernet", "enp1s0f0");
    add_device("rxe0", "", "4: ACTIVE", "Ethernet", "eth0");

    std::string out = suite("-n -H node1,node2 -p 2 -t 77 -o " + m_dir +
                            "/dry --build-dir /nonexistent/build", &status);
    EXPECT_EQ(0, status) << out;
    for (const char *expect : {
             "mlx5_0 mlx5_core 1 ACTIVE Ethernet",
             "rxe0 software 1 ACTIVE Ethernet",
             "mlx5 devices (mc_mlx5 runs there): mlx5_0",
             "devices: DRY (2 port(s), 1 mlx5 device(s) found)",
             "would run: timeout 77 env LD_PRELOAD=/nonexistent/build/src/"
             "uct/.libs/libuct_o2m.so ucx_info -d",
             "/nonexistent/build/test/gtest/o2m_gtest "
             "--gtest_filter=mc_ib_wire\\*:mc_verbs\\*:mc_mlx5\\*",
             "--host node1:2\\,node2:2",
             "-n 4",
             "ucx_mc_perf -q -d enp1s0f0",
             "bench: DRY (not run)", "mc_perf: DRY (not run)"}) {
        EXPECT_NE(std::string::npos, out.find(expect)) << expect << " in:\n"
                                                       << out;
    }
    EXPECT_EQ(std::string::npos, out.find("FAIL")) << out;
    struct stat st;
    EXPECT_NE(0, stat((m_dir + "/dry").c_str(), &st)) << "dry run wrote";

    /* One host: the cross-host steps say why they skip */
    out = suite("-n -s devices,mpi,ucg,bench", &status);
    EXPECT_EQ(0, status) << out;
    for (const char *step : {"mpi", "ucg", "bench"}) {
        EXPECT_NE(std::string::npos,
                  out.find(std::string(step) + ": SKIP (one host (-H))"))
                << step << " in:\n" << out;
    }
}

/* A step that hangs fails at its time limit; the suite goes on and exits
 * with 1, the tarball made */
TEST_F(hw_suite, step_bounded)
{
    std::string build = m_dir + "/build";
    int status;

    add_device("mlx5_0", "mlx5_core", "4: ACTIVE", "InfiniBand", "ib0");
    run_command("mkdir -p " + build + "/test/gtest", &status);
    ASSERT_EQ(0, status);
    std::ofstream(build + "/test/gtest/o2m_gtest") << "#!/bin/sh\nsleep 600\n";
    ASSERT_EQ(0, chmod((build + "/test/gtest/o2m_gtest").c_str(), 0755));

    double start     = now_sec();
    std::string out  = suite("-s gtest,mpi -t 2 --build-dir " + build +
                             " -o " + m_dir + "/out", &status, 120);
    EXPECT_EQ(1, status) << out;
    /* Against a hang only: the step's limit, not the sleep */
    EXPECT_LT(now_sec() - start, 100) << out;
    EXPECT_NE(std::string::npos, out.find("gtest: FAIL (exit 124")) << out;
    EXPECT_NE(std::string::npos, out.find("mpi: SKIP (one host (-H))"))
            << out;
    struct stat st;
    EXPECT_EQ(0, stat((m_dir + "/out.tar.gz").c_str(), &st)) << out;
    run_command("rm -f " + m_dir + "/out.tar.gz", &status);
}
