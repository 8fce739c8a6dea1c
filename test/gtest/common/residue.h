/**
 * ucx-o2m tests: what the project left behind (segments held or mapped by a
 * process of the test, files in /dev/shm, descriptors).
 */
#ifndef O2M_TEST_RESIDUE_H_
#define O2M_TEST_RESIDUE_H_

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>
#include <sys/types.h>

namespace o2m_test {

/*
 * What the project creates, and only that: other jobs on the machine (an
 * Open MPI job's vader_segment.* files, another test suite's segments) are
 * none of a test's business.
 */

/* Prefix of every name the project gives: memfd segments ("ucx-o2m-...",
 * seen as "/memfd:ucx-o2m-... (deleted)" in /proc) and any file a test
 * makes */
extern const char *const o2m_name_prefix;

/* Names in /dev/shm that start with o2m_name_prefix */
std::vector<std::string> dev_shm_files();

/* The o2m segments process @a pid has open: "N -> /memfd:ucx-o2m-..." for
 * descriptor N */
std::vector<std::string> o2m_fds(pid_t pid);

/* The /proc/<pid>/maps lines of the o2m segments process @a pid maps */
std::vector<std::string> o2m_maps(pid_t pid);

/* The o2m segments process @a pid holds: "fd N -> /memfd:ucx-o2m-..." for
 * open descriptors and the /proc/<pid>/maps lines of its mappings */
std::vector<std::string> o2m_held(pid_t pid);

/* This process and its descendants (children of the test still alive) */
std::vector<pid_t> test_processes();

/* o2m_held() of every process of the test, each line "pid P: ..." */
std::vector<std::string> o2m_held_by_test();

/*
 * Fails the test when the project left something behind during the
 * object's life: a process of the test (this one or a child still alive)
 * holds or maps an o2m segment, or /dev/shm gained a file with the project's
 * prefix.  Files and segments of other jobs on the machine do not count.
 */
class shm_residue_check {
public:
    shm_residue_check() : m_before(files()) {}

    ~shm_residue_check();

private:
    static std::set<std::string> files();

    std::vector<std::string> residue() const;

    std::set<std::string> m_before;
};

/* Number of open file descriptors of this process */
unsigned count_fds();

} // namespace o2m_test

#endif
