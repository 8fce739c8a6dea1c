/**
 * ucx-o2m tests: the benchmarks' process supervisor (src/tools/perf_lib.c)
 * as ucx_o2m_perf and ucg_perf use it.
 *
 *  - tools.*_runs: a small run forks its processes, measures, checks its
 *    data and exits with 0;
 *  - tools.*_reports_first_failure: when every process fails (a bad
 *    configuration), the tool exits with 1, names exactly one process as
 *    the cause (the others stop because a peer failed) and says FAILED.
 */
#include "common/tools.h"
#include <gtest/gtest.h>

#include <regex>

using namespace o2m_test;

namespace {

unsigned count_lines(const std::string &text, const std::string &regex)
{
    std::regex re(regex);

    return std::distance(std::sregex_iterator(text.begin(), text.end(), re),
                         std::sregex_iterator());
}

/* Output of tool @a name of the build tree, run with @a env before it */
std::string run_tool(const std::string &env, const std::string &name,
                     const std::string &args, int *status)
{
    return run_command(env + " " + std::string(O2M_BUILD_DIR) +
                       "/src/tools/" + name + " " + args +
                       " -T 240 -W 120", status, 300);
}

/* Every process failed: the tool exits with 1, one process is named as the
 * cause (@a cause), none was killed, and the run says it failed */
void expect_first_failure(const std::string &out, int status,
                          const std::string &cause,
                          const std::string &failed)
{
    EXPECT_EQ(1, status) << out;
    EXPECT_EQ(1u, count_lines(out, cause)) << out;
    EXPECT_EQ(0u, count_lines(out, "killed by signal")) << out;
    EXPECT_EQ(1u, count_lines(out, failed)) << out;
}

}

TEST(tools, o2m_perf_runs)
{
    int status;
    std::string out = run_tool("", "ucx_o2m_perf",
                               "-n 2 -s 8 -t fanout -i 100 -r 1", &status);

    EXPECT_EQ(0, status) << out;
    /* batched, centralized, frags (not measured: sm_bcast sends 8 bytes
     * with am_short), posix */
    EXPECT_EQ(1u, count_lines(out,
                              "\\n +2 +8 +[0-9.]+ +[0-9.]+ +- +[0-9.]+"))
        << out;
    EXPECT_EQ(0u, count_lines(out, "FAILED")) << out;
}

/*
 * The frags column: above sm_bcast's max_bcopy (8240 bytes by default; a
 * fragment carries 8232 payload bytes after the tool's 8-byte header) the
 * message also goes in fragments through the ring, reassembled and checked
 * by the receivers: one fragment and a bit, exactly three, three and one
 * word, many; latency and bandwidth.  8 KiB still fits one am_short.
 */
TEST(tools, o2m_perf_frags)
{
    int status;
    std::string out = run_tool("", "ucx_o2m_perf",
                               "-n 2 -s 8K,16K,24696,24704,256K "
                               "-t fanout,bw -i 200 -m 40 -r 1", &status);
    const std::string num = " +[0-9.]+";

    EXPECT_EQ(0, status) << out;
    /* Fan-out latency and bandwidth; fan-in has no frags column */
    EXPECT_EQ(2u, count_lines(out, "\\n +N +size +batched +centralized "
                                   "+frags +posix +o2m/posix\\n"))
        << out;
    /* batched, centralized, frags, posix, o2m/posix: frags only where
     * sm_bcast uses am_zcopy */
    EXPECT_EQ(2u, count_lines(out, "\\n +2 +8K" + num + num + " +-" + num +
                                   num + "\\n"))
        << out;
    for (const char *size : {"16K", "24696", "24704", "256K"}) {
        EXPECT_EQ(2u, count_lines(out, std::string("\\n +2 +") + size +
                                       num + num + num + num + num + "\\n"))
            << size << "\n" << out;
    }
    EXPECT_EQ(0u, count_lines(out, "FAILED")) << out;
}

TEST(tools, o2m_perf_reports_first_failure)
{
    int status;
    std::string out = run_tool("UCX_SM_BCAST_SEG_SIZE=100", "ucx_o2m_perf",
                               "-n 3 -s 8 -t fanout -i 100 -r 1", &status);

    expect_first_failure(out, status,
                         "o2m_perf: N=2: rank [01] exited with status 1\\n",
                         "FAILED: see the errors above");
}

TEST(tools, ucg_perf_runs)
{
    int status;
    std::string out = run_tool("", "ucg_perf",
                               "-n 2 -c barrier,allreduce -s 8 -i 20 -r 1 -q",
                               &status);

    EXPECT_EQ(0, status) << out;
    EXPECT_EQ(1u, count_lines(out, "\\nallreduce +8 +[0-9]+ \\|")) << out;
    EXPECT_EQ(1u, count_lines(out, "\\nbarrier +- +[0-9]+ \\|")) << out;
    EXPECT_EQ(0u, count_lines(out, "FAILED")) << out;
}

TEST(tools, ucg_perf_reports_first_failure)
{
    int status;
    std::string out = run_tool("UCX_UCG_KNOMIAL_RADIX=1", "ucg_perf",
                               "-n 3 -c barrier -i 10 -r 1 -q", &status);

    expect_first_failure(out, status,
                         "ucg_perf: N=3: rank [012] exited with status 1\\n",
                         "ucg_perf: np=3 FAILED");
}
