/**
 * ucx-o2m tests: UCG tuning rules (src/ucg/ucg_rules.c, api/ucg_rules.h),
 * the file coll/ucg reads from coll_ucg_rules_file.
 *
 *  - ucg_rules.good_*: files of every form parse, the first matching rule
 *    decides, no match is "ucg", the hash ignores comments and spacing;
 *  - ucg_rules.builtin*: the built-in table parses and hands to the
 *    previous module what docs/ucg.md says;
 *  - ucg_rules.bad_*: every kind of bad file fails with one error naming
 *    file:line and leaves an empty table (never half a file);
 *  - ucg_rules.ucg_info_*: ucg_info -R prints the table in force, and the
 *    built-in one (exit status 1) for a bad file;
 *  - ucg_rules.plan_choice: what a rule's "flat" asks of UCG
 *    (ucg_coll_init_plan) and the "ppn" of its groups (ucg_group_max_ppn).
 */
#include "common/tools.h"
#include "common/ucg_harness.h"

#include <api/ucg_rules.h>

extern "C" {
#include "ucg_coll.h"
#include "ucg_group.h"
}

#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace o2m_test;
using namespace ucg_test;

namespace {

ucs_status_t parse(const std::string &text, ucg_rules_t *rules,
                   std::string *err)
{
    char buf[512] = "";
    ucs_status_t status;

    status = ucg_rules_parse(text.data(), text.size(), "t.rules", rules, buf,
                             sizeof(buf));
    *err = buf;
    return status;
}

/* A directory of this test's own, removed with its files */
class rules_dir {
public:
    rules_dir() {
        char tmpl[] = "/tmp/ucx-o2m-rules.XXXXXX";
        const char *d = mkdtemp(tmpl);
        EXPECT_NE(nullptr, d);
        m_path = (d != nullptr) ? d : "/nonexistent";
    }

    ~rules_dir() {
        for (const std::string &f : m_files) {
            unlink(f.c_str());
        }
        rmdir(m_path.c_str());
    }

    std::string write(const std::string &name, const std::string &text) {
        std::string path = m_path + "/" + name;
        FILE *f          = fopen(path.c_str(), "w");

        EXPECT_NE(nullptr, f) << path;
        if (f != nullptr) {
            EXPECT_EQ(text.size(), fwrite(text.data(), 1, text.size(), f));
            fclose(f);
        }
        m_files.push_back(path);
        return path;
    }

    const std::string &path() const {
        return m_path;
    }

private:
    std::string              m_path;
    std::vector<std::string> m_files;
};

std::string ucg_info(const std::string &env, const std::string &args,
                     int *status)
{
    return run_command(env + " " + std::string(O2M_BUILD_DIR) +
                       "/src/tools/ucg_info " + args + " 2>&1", status, 120);
}

const char *good_text =
    "# measured on host x\n"
    "\n"
    "  ucg-rules   1   # the header\n"
    "bcast      2   2    1-256        prev\n"
    "reduce     2   2    32k-128K     prev\r\n"
    "allreduce  2-8 *    1m-          flat\n"
    "gather     4-  1-2  0-inf        prev\n"
    "*          *   3    *            flat\n"
    "bcast      *   *    *            ucg\n"
    "\tscatter\t16\t16\t4096\tprev\t\n";

} // namespace

TEST(ucg_rules, good_file)
{
    ucg_rules_t rules;
    std::string err;

    ASSERT_EQ(UCS_OK, parse(good_text, &rules, &err)) << err;
    ASSERT_EQ(7u, rules.count);
    EXPECT_STREQ("t.rules", rules.source);

    const ucg_rule_t &r0 = rules.rules[0];
    EXPECT_EQ(UCG_COLL_BCAST, r0.type);
    EXPECT_EQ(2u, r0.np_min);
    EXPECT_EQ(2u, r0.np_max);
    EXPECT_EQ(1u, r0.bytes_min);
    EXPECT_EQ(256u, r0.bytes_max);
    EXPECT_EQ(UCG_RULE_PREV, r0.action);
    EXPECT_EQ(4u, r0.line);
    EXPECT_EQ(32768u, rules.rules[1].bytes_min);
    EXPECT_EQ(131072u, rules.rules[1].bytes_max);
    EXPECT_EQ(SIZE_MAX, rules.rules[2].bytes_max);
    EXPECT_EQ(UINT_MAX, rules.rules[2].ppn_max);
    EXPECT_EQ(1u, rules.rules[2].ppn_min);
    EXPECT_EQ(UINT_MAX, rules.rules[3].np_max);
    EXPECT_EQ(UCG_COLL_LAST, rules.rules[4].type);
    EXPECT_EQ(10u, rules.rules[6].line);

    /* the first rule that matches decides */
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2,
                                              8));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2,
                                              256));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2,
                                             257));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2,
                                             0));
    EXPECT_EQ(UCG_RULE_FLAT, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 3, 3,
                                              8));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 2, 2,
                                              64 * 1024));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 2, 2,
                                             128 * 1024 + 1));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 4, 2,
                                             64 * 1024));
    EXPECT_EQ(UCG_RULE_FLAT, ucg_rules_lookup(&rules, UCG_COLL_ALLREDUCE, 8,
                                              8, SIZE_MAX));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_ALLREDUCE, 9,
                                             8, 1 << 20));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_GATHER, 1000,
                                              2, 0));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_GATHER, 1000,
                                             4, 0));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_SCATTER, 16,
                                              16, 4096));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_SCATTER, 16,
                                             16, 4097));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BARRIER, 2, 2,
                                             0));
}

TEST(ucg_rules, good_empty_table)
{
    ucg_rules_t rules;
    std::string err;

    ASSERT_EQ(UCS_OK, parse("ucg-rules 1", &rules, &err)) << err;
    EXPECT_EQ(0u, rules.count);
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 2, 2,
                                             65536));
}

TEST(ucg_rules, good_hash)
{
    ucg_rules_t a, b, c;
    std::string err;

    ASSERT_EQ(UCS_OK, parse("ucg-rules 1\nbcast 2 2 1-256 prev\n", &a,
                            &err)) << err;
    /* comments, spacing and number spelling do not count */
    ASSERT_EQ(UCS_OK, parse("# other\nucg-rules 1\n\n bcast\t2-2  2 "
                            "1-0256 prev # x\n", &b, &err)) << err;
    EXPECT_EQ(a.hash, b.hash);
    /* the content does */
    ASSERT_EQ(UCS_OK, parse("ucg-rules 1\nbcast 2 2 1-257 prev\n", &c,
                            &err)) << err;
    EXPECT_NE(a.hash, c.hash);
    ASSERT_EQ(UCS_OK, parse("ucg-rules 1\nbcast 2 2 1-256 flat\n", &c,
                            &err)) << err;
    EXPECT_NE(a.hash, c.hash);
    ASSERT_EQ(UCS_OK, parse("ucg-rules 1\n", &c, &err)) << err;
    EXPECT_NE(a.hash, c.hash);
}

TEST(ucg_rules, good_print_parses_back)
{
    ucg_rules_t rules, again;
    std::string err;
    char *text   = NULL;
    size_t size  = 0;
    FILE *stream;

    ASSERT_EQ(UCS_OK, parse(good_text, &rules, &err)) << err;
    stream = open_memstream(&text, &size);
    ASSERT_NE(nullptr, stream);
    ucg_rules_print(&rules, stream);
    fclose(stream);
    std::string printed(text, size);
    free(text);

    ASSERT_EQ(UCS_OK, parse(printed, &again, &err)) << err << printed;
    EXPECT_EQ(rules.count, again.count) << printed;
    EXPECT_EQ(rules.hash, again.hash) << printed;
}

TEST(ucg_rules, builtin)
{
    ucg_rules_t rules, again;
    std::string err;

    ucg_rules_builtin(NULL, &rules);
    EXPECT_STREQ("built-in", rules.source);
    ASSERT_EQ(UCS_OK, parse(ucg_rules_builtin_text(NULL), &again, &err))
        << err;
    EXPECT_EQ(rules.hash, again.hash);
    /* every pml but ucx gets the table measured with ob1 */
    ucg_rules_builtin("ob1", &again);
    EXPECT_EQ(rules.hash, again.hash);
    ucg_rules_builtin("cm", &again);
    EXPECT_EQ(rules.hash, again.hash);

    /* docs/ucg.md, "Tuning rules": np=2 on one host, where coll/ucg was
     * slower than Open MPI's tuned (docs/performance.md) */
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2,
                                              256));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2,
                                             512));
    /* mid-size reduce runs on UCG: its ring through sm_incast is faster
     * than tuned over ob1 or UCX at 16-128 KiB (docs/performance.md,
     * "Mid-size reduce back on UCG"); from 256 KiB, where UCG reduces
     * with a single copy and was no faster, and mid-size bcasts, which
     * UCG reads with a single copy too, go to the previous module
     * (docs/performance.md, "From 8 B to 4 MiB") */
    for (size_t bytes = 2 * 1024; bytes <= 4 * 1024 * 1024; bytes *= 2) {
        EXPECT_EQ((bytes >= 256 * 1024) ? UCG_RULE_PREV : UCG_RULE_UCG,
                  ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 2, 2, bytes))
                << bytes;
        EXPECT_EQ(((bytes >= 16 * 1024) && (bytes <= 256 * 1024)) ?
                  UCG_RULE_PREV : UCG_RULE_UCG,
                  ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2, bytes))
                << bytes;
    }
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2,
                                             16 * 1024 - 1));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2,
                                             256 * 1024 + 1));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 2, 2,
                                             256 * 1024 - 1));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2,
                                              8));
    /* small allreduce and reduce: handed over since the handover costs
     * 3-8 % (docs/performance.md, "A cheaper handover") */
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_ALLREDUCE, 2,
                                              2, 8));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_ALLREDUCE, 2,
                                              2, 128));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 2,
                                              2, 8));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 2,
                                              2, 1024));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 2,
                                             2, 2048));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_ALLREDUCE, 2,
                                              2, 256));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_ALLREDUCE, 2,
                                             2, 512));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_SCATTER, 2,
                                              2, 256));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_SCATTER, 2,
                                             2, 512));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_ALLGATHER, 2,
                                              2, 8));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_GATHER, 2, 2,
                                             8));
    /* UCG's barrier at np=2 took 1.5-1.7x of tuned's, and a barrier on
     * UCG before a handed call cost that call 20-30 % more */
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_BARRIER, 2,
                                              2, 0));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BARRIER, 4, 4,
                                             0));
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_ALLGATHER, 2,
                                              2, 2048));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_ALLGATHER, 2,
                                             2, 4096));
    /* other shapes run on UCG, as without a table */
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 4, 4,
                                             64 * 1024));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 1,
                                             8));
}

/* docs/ucg.md, "The built-in tables": over pml ucx, tuned is faster than
 * over ob1 from 512 B (bcast to 8 KiB, the reductions to 128 KiB), and
 * more sizes go to it
 * (docs/performance.md, "Over pml ucx") */
TEST(ucg_rules, builtin_ucx)
{
    ucg_rules_t rules, ob1, again;
    std::string err;

    ucg_rules_builtin("ucx", &rules);
    ucg_rules_builtin(NULL, &ob1);
    EXPECT_STREQ("built-in (pml ucx)", rules.source);
    EXPECT_NE(ob1.hash, rules.hash);
    ASSERT_EQ(UCS_OK, parse(ucg_rules_builtin_text("ucx"), &again, &err))
        << err;
    EXPECT_EQ(rules.hash, again.hash);

    for (size_t bytes = 8; bytes <= 4 * 1024 * 1024; bytes *= 2) {
        EXPECT_EQ((bytes <= 256 * 1024) ? UCG_RULE_PREV : UCG_RULE_UCG,
                  ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 2, bytes))
                << bytes;
        EXPECT_EQ((bytes <= 2048) ? UCG_RULE_PREV : UCG_RULE_UCG,
                  ucg_rules_lookup(&rules, UCG_COLL_ALLREDUCE, 2, 2, bytes))
                << bytes;
        EXPECT_EQ(((bytes <= 2048) || (bytes >= 256 * 1024)) ?
                  UCG_RULE_PREV : UCG_RULE_UCG,
                  ucg_rules_lookup(&rules, UCG_COLL_REDUCE, 2, 2, bytes))
                << bytes;
        /* where UCG wins over ob1's tuned, the other table keeps it */
        if ((bytes >= 4096) && (bytes <= 8192)) {
            EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&ob1, UCG_COLL_BCAST, 2,
                                                     2, bytes)) << bytes;
        }
    }
    EXPECT_EQ(UCG_RULE_PREV, ucg_rules_lookup(&rules, UCG_COLL_BARRIER, 2,
                                              2, 0));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_ALLREDUCE, 4,
                                             4, 8));
    EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2, 1,
                                             8));
}

/* Every kind of bad file: one error naming the file and line, and an empty
 * table */
TEST(ucg_rules, bad_files)
{
    static const char nul_text[] = "ucg-rules 1\nbcast 2 2 8\0 prev\n";
    struct {
        std::string text;
        std::string error;  /* what the error must start with */
    } cases[] = {
        {"",                                    "t.rules: no 'ucg-rules 1'"},
        {"# only a comment\n\n",                "t.rules: no 'ucg-rules 1'"},
        {"bcast 2 2 8 prev\n",                  "t.rules:1: expected the header"},
        {"ucg-rules\n",                         "t.rules:1: expected the header"},
        {"ucg-rules 2\n",                       "t.rules:1: format version '2'"},
        {"ucg-rules 1 x\n",                     "t.rules:1: expected the header"},
        {"ucg-rules 1\nbcast 2 2 8\n",          "t.rules:2: 4 fields"},
        {"ucg-rules 1\nbcast\n",                "t.rules:2: 1 field,"},
        {"ucg-rules 1\nbcast 2 2 8 prev x\n",   "t.rules:2: more than 5 fields"},
        {"ucg-rules 1\n\nalltoallw 2 2 8 prev\n", "t.rules:3: unknown collective 'alltoallw'"},
        {"ucg-rules 1\nbcast 2 2 8 fast\n",     "t.rules:2: unknown action 'fast'"},
        {"ucg-rules 1\nbcast 0 2 8 prev\n",     "t.rules:2: np: must be at least 1"},
        {"ucg-rules 1\nbcast 2 0-4 8 prev\n",   "t.rules:2: ppn: must be at least 1"},
        {"ucg-rules 1\nbcast x 2 8 prev\n",     "t.rules:2: np: 'x' is not a number"},
        {"ucg-rules 1\nbcast -2 2 8 prev\n",    "t.rules:2: np: '' is not a number"},
        {"ucg-rules 1\nbcast 2k 2 8 prev\n",    "t.rules:2: np: '2k' is not a number"},
        {"ucg-rules 1\nbcast 4294967296 2 8 prev\n", "t.rules:2: np: '4294967296'"},
        {"ucg-rules 1\nbcast 2-inf 2 8 prev\n", "t.rules:2: np: 'inf' is not a number"},
        {"ucg-rules 1\nbcast 4-2 2 8 prev\n",   "t.rules:2: np: range 4-2 is empty"},
        {"ucg-rules 1\nbcast 2 2 8x prev\n",    "t.rules:2: bytes: '8x' is not a number"},
        {"ucg-rules 1\nbcast 2 2 8kk prev\n",   "t.rules:2: bytes: '8kk' is not a number"},
        {"ucg-rules 1\nbcast 2 2 inf prev\n",   "t.rules:2: bytes: 'inf' is not a number"},
        {"ucg-rules 1\nbcast 2 2 1-2-3 prev\n", "t.rules:2: bytes: '2-3' is not a number"},
        {"ucg-rules 1\nbcast 2 2 99999999999999999999 prev\n",
                                                "t.rules:2: bytes: '99999999999999999999'"},
        {"ucg-rules 1\nbcast 2 2 17179869184g prev\n",
                                                "t.rules:2: bytes: '17179869184g'"},
        {"ucg-rules 1\nbcast 2 2 1m-1k prev\n", "t.rules:2: bytes: range 1048576-1024 is empty"},
        {"ucg-rules 1\nbcast 2 2 8 prev\n" + std::string(300, 'x') + "\n",
                                                "t.rules:3: line longer than 256"},
        {std::string(nul_text, sizeof(nul_text) - 1), "t.rules:2: NUL byte"},
    };
    ucg_rules_t rules;
    std::string err;

    for (const auto &c : cases) {
        SCOPED_TRACE(c.text.substr(0, 80));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, parse(c.text, &rules, &err));
        EXPECT_EQ(0u, err.find(c.error)) << "error: " << err;
        EXPECT_EQ(std::string::npos, err.find('\n')) << err;
        EXPECT_EQ(0u, rules.count);
        EXPECT_EQ(UCG_RULE_UCG, ucg_rules_lookup(&rules, UCG_COLL_BCAST, 2,
                                                 2, 8));
    }
}

TEST(ucg_rules, bad_too_many_rules)
{
    std::string text = "ucg-rules 1\n";
    ucg_rules_t rules;
    std::string err;
    unsigned i;

    for (i = 0; i < UCG_RULES_MAX; ++i) {
        text += "bcast 2 2 " + std::to_string(i) + " prev\n";
    }
    ASSERT_EQ(UCS_OK, parse(text, &rules, &err)) << err;
    EXPECT_EQ(unsigned(UCG_RULES_MAX), rules.count);

    text += "reduce 2 2 8 prev\n";
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, parse(text, &rules, &err));
    EXPECT_EQ(0u, err.find("t.rules:" + std::to_string(UCG_RULES_MAX + 2) +
                           ": more than"))
        << err;
    EXPECT_EQ(0u, rules.count);
}

TEST(ucg_rules, bad_too_large)
{
    std::string text = "ucg-rules 1\n";
    ucg_rules_t rules;
    std::string err;

    while (text.size() <= UCG_RULES_FILE_MAX) {
        text += "# padding padding padding padding padding padding\n";
    }
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, parse(text, &rules, &err));
    EXPECT_EQ(0u, err.find("t.rules: larger than")) << err;
}

TEST(ucg_rules, load)
{
    rules_dir dir;
    ucg_rules_t rules;
    char err[512];
    std::string good = dir.write("good.rules", good_text);
    std::string bad  = dir.write("bad.rules",
                                 "ucg-rules 1\nbcast 2 2 8 prev\n"
                                 "reduce 2 2 32k-128k slow\n");
    std::string big  = dir.write("big.rules",
                                 std::string(UCG_RULES_FILE_MAX + 1, '#'));

    ASSERT_EQ(UCS_OK, ucg_rules_load(good.c_str(), &rules, err,
                                     sizeof(err))) << err;
    EXPECT_EQ(7u, rules.count);
    EXPECT_EQ(good, rules.source);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_rules_load(bad.c_str(), &rules, err,
                                                    sizeof(err)));
    EXPECT_EQ(bad + ":3: unknown action 'slow' (ucg, flat or prev)",
              std::string(err));
    EXPECT_EQ(0u, rules.count);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucg_rules_load(big.c_str(), &rules, err,
                                                    sizeof(err)));
    EXPECT_EQ(big + ": larger than 65536 bytes", std::string(err));

    std::string missing = dir.path() + "/missing.rules";
    EXPECT_EQ(UCS_ERR_IO_ERROR, ucg_rules_load(missing.c_str(), &rules, err,
                                               sizeof(err)));
    EXPECT_EQ(missing + ": No such file or directory", std::string(err));

    EXPECT_EQ(UCS_ERR_IO_ERROR, ucg_rules_load(dir.path().c_str(), &rules,
                                               err, sizeof(err)));
    EXPECT_EQ(0u, std::string(err).find(dir.path() + ": ")) << err;
    EXPECT_EQ(0u, rules.count);
}

TEST(ucg_rules, ucg_info_prints_rules)
{
    rules_dir dir;
    std::string good = dir.write("good.rules", good_text);
    std::string bad  = dir.write("bad.rules", "ucg-rules 1\nbcast 2 2\n");
    ucg_rules_t builtin, rules;
    std::string out, err;
    int status;

    ucg_rules_builtin(NULL, &builtin);

    /* the built-in table when no file is named */
    out = ucg_info("env -u OMPI_MCA_coll_ucg_rules_file -u OMPI_MCA_pml",
                   "-R", &status);
    EXPECT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("from built-in:")) << out;
    ASSERT_EQ(UCS_OK, parse(out, &rules, &err)) << err << out;
    EXPECT_EQ(builtin.hash, rules.hash) << out;

    /* that of pml ucx, named or in Open MPI's variable */
    ucg_rules_builtin("ucx", &builtin);
    out = ucg_info("env -u OMPI_MCA_coll_ucg_rules_file", "-R --pml ucx",
                   &status);
    EXPECT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("from built-in (pml ucx):"))
        << out;
    ASSERT_EQ(UCS_OK, parse(out, &rules, &err)) << err << out;
    EXPECT_EQ(builtin.hash, rules.hash) << out;
    out = ucg_info("env -u OMPI_MCA_coll_ucg_rules_file OMPI_MCA_pml=ucx",
                   "-R", &status);
    EXPECT_EQ(0, status) << out;
    ASSERT_EQ(UCS_OK, parse(out, &rules, &err)) << err << out;
    EXPECT_EQ(builtin.hash, rules.hash) << out;
    ucg_rules_builtin(NULL, &builtin);

    /* the file coll/ucg's MCA variable names */
    out = ucg_info("OMPI_MCA_coll_ucg_rules_file=" + good, "-R", &status);
    EXPECT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("from " + good + ": 7 rules"))
        << out;

    /* a bad file: its error, and the built-in table coll/ucg would use */
    out = ucg_info("", "-R --rules " + bad, &status);
    EXPECT_EQ(1, status) << out;
    EXPECT_NE(std::string::npos,
              out.find(bad + ":2: 3 fields, a rule has 5")) << out;
    EXPECT_NE(std::string::npos, out.find("from built-in")) << out;

    out = ucg_info("", "-R --rules none", &status);
    EXPECT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find("from none: 0 rules")) << out;
}

/* UCG_PLAN_FLAT gives the point-to-point plan where the planner's own is
 * hierarchical, with the same results; ucg_group_max_ppn is the largest
 * host of the group's topology (real or UCX_UCG_HOSTS) */
TEST(ucg_rules, plan_choice)
{
    for (const char *hosts : {"auto", "1"}) {
        run_opts opts;

        opts.env["UCX_UCG_HOSTS"] = hosts;
        run_ok(2, opts, [&](member &m) {
            bool one_host = !strcmp(hosts, "auto");

            CHILD_CHECK(ucg_group_max_ppn(m.group) == (one_host ? 2u : 1u),
                        "hosts %s: max ppn %u", hosts,
                        ucg_group_max_ppn(m.group));
            for (const coll_desc &d : {
                     coll_desc(UCG_COLL_BCAST, 100, UCG_DT_UINT8),
                     coll_desc(UCG_COLL_REDUCE, 20000, UCG_DT_INT32,
                               UCG_OP_SUM, 1),
                     coll_desc(UCG_COLL_ALLREDUCE, 300, UCG_DT_DOUBLE,
                               UCG_OP_MAX)}) {
                for (ucg_plan_choice_t choice : {UCG_PLAN_AUTO,
                                                 UCG_PLAN_FLAT}) {
                    coll_bufs bufs(d, m.rank, m.size);
                    ucg_coll_params_t params = bufs.params();
                    ucg_coll_h coll;

                    CHILD_CHECK(ucg_coll_init_plan(m.group, &params, choice,
                                                   &coll) == UCS_OK,
                                "%s: init", d.str().c_str());
                    /* hierarchical only with the planner's choice, and on
                     * a host of two */
                    CHILD_CHECK(coll->plan->hier ==
                                ((choice == UCG_PLAN_AUTO) && one_host),
                                "%s choice %d hosts %s: hier %d",
                                d.str().c_str(), choice, hosts,
                                coll->plan->hier);
                    CHILD_CHECK(ucg_coll_start(coll) == UCS_OK, "start");
                    CHILD_CHECK(wait_coll(coll, d.str()) == UCS_OK, "%s",
                                d.str().c_str());
                    bufs.check(d.str());
                    ucg_coll_finalize(coll);
                }
            }

            ucg_coll_params_t params = {};
            ucg_coll_h coll;
            params.type = UCG_COLL_BARRIER;
            CHILD_CHECK(ucg_coll_init_plan(m.group, &params,
                                           (ucg_plan_choice_t)7, &coll) ==
                        UCS_ERR_INVALID_PARAM, "a bad choice was accepted");
        }, hosts);
    }
}
