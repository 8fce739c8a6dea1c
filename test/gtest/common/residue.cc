/**
 * ucx-o2m tests: what the project left behind (residue.h).
 */
#include "residue.h"
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

const char *const o2m_name_prefix = "ucx-o2m";

std::vector<std::string> dev_shm_files()
{
    std::vector<std::string> files;
    struct dirent *entry;
    DIR *dir = opendir("/dev/shm");

    if (dir == NULL) {
        return files;
    }

    while ((entry = readdir(dir)) != NULL) {
        if (!strncmp(entry->d_name, o2m_name_prefix,
                     strlen(o2m_name_prefix))) {
            files.push_back(entry->d_name);
        }
    }
    closedir(dir);
    return files;
}

std::vector<std::string> o2m_fds(pid_t pid)
{
    std::string dir = "/proc/" + std::to_string(pid);
    std::string pattern = std::string("/memfd:") + o2m_name_prefix;
    std::vector<std::string> open;
    struct dirent *entry;
    char link[4096];
    ssize_t len;
    DIR *fds;

    /* A process that exits meanwhile simply has nothing */
    fds = opendir((dir + "/fd").c_str());
    while ((fds != NULL) && ((entry = readdir(fds)) != NULL)) {
        len = readlink((dir + "/fd/" + entry->d_name).c_str(), link,
                       sizeof(link) - 1);
        if (len > 0) {
            link[len] = '\0';
            if (strstr(link, pattern.c_str()) != NULL) {
                open.push_back(std::string(entry->d_name) + " -> " + link);
            }
        }
    }
    if (fds != NULL) {
        closedir(fds);
    }
    return open;
}

std::vector<std::string> o2m_maps(pid_t pid)
{
    std::string path = "/proc/" + std::to_string(pid) + "/maps";
    std::string pattern = std::string("/memfd:") + o2m_name_prefix;
    std::vector<std::string> mapped;
    char line[4096];
    FILE *maps;

    maps = fopen(path.c_str(), "r");
    while ((maps != NULL) && (fgets(line, sizeof(line), maps) != NULL)) {
        if (strstr(line, pattern.c_str()) != NULL) {
            line[strcspn(line, "\n")] = '\0';
            mapped.push_back(line);
        }
    }
    if (maps != NULL) {
        fclose(maps);
    }
    return mapped;
}

std::vector<std::string> o2m_held(pid_t pid)
{
    std::vector<std::string> held;

    for (const std::string &fd : o2m_fds(pid)) {
        held.push_back("fd " + fd);
    }
    for (const std::string &line : o2m_maps(pid)) {
        held.push_back(line);
    }
    return held;
}

/* Parent pid of @a pid from /proc/<pid>/stat, 0 if unknown */
static pid_t parent_of(pid_t pid)
{
    std::string path = "/proc/" + std::to_string(pid) + "/stat";
    FILE *f          = fopen(path.c_str(), "r");
    char buf[1024], *p;
    size_t n;
    int ppid;

    if (f == NULL) {
        return 0;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
    p = strrchr(buf, ')');
    if ((p == NULL) || (sscanf(p + 1, " %*c %d", &ppid) != 1)) {
        return 0;
    }
    return ppid;
}

std::vector<pid_t> test_processes()
{
    std::multimap<pid_t, pid_t> children;
    std::vector<pid_t> procs = {getpid()};
    struct dirent *entry;
    DIR *proc = opendir("/proc");
    pid_t pid;
    size_t i;

    while ((proc != NULL) && ((entry = readdir(proc)) != NULL)) {
        pid = (pid_t)atoi(entry->d_name);
        if (pid > 0) {
            children.insert(std::make_pair(parent_of(pid), pid));
        }
    }
    if (proc != NULL) {
        closedir(proc);
    }

    for (i = 0; i < procs.size(); ++i) {
        auto range = children.equal_range(procs[i]);
        for (auto it = range.first; it != range.second; ++it) {
            procs.push_back(it->second);
        }
    }
    return procs;
}

std::vector<std::string> o2m_held_by_test()
{
    std::vector<std::string> all;

    for (pid_t pid : test_processes()) {
        for (const std::string &what : o2m_held(pid)) {
            all.push_back("pid " + std::to_string(pid) + ": " + what);
        }
    }
    return all;
}

shm_residue_check::~shm_residue_check()
{
    std::vector<std::string> added = residue();

    if (!added.empty()) {
        usleep(200000); /* a child may be on its way out */
        added = residue();
    }

    std::string names;
    for (const std::string &name : added) {
        names += "\n  " + name;
    }
    EXPECT_TRUE(added.empty()) << "left behind:" << names;
}

std::set<std::string> shm_residue_check::files()
{
    std::vector<std::string> v = dev_shm_files();
    return std::set<std::string>(v.begin(), v.end());
}

std::vector<std::string> shm_residue_check::residue() const
{
    std::vector<std::string> added = o2m_held_by_test();

    for (const std::string &name : files()) {
        if (!m_before.count(name)) {
            added.push_back("/dev/shm/" + name);
        }
    }
    return added;
}

unsigned count_fds()
{
    unsigned count = 0;
    char path[64];
    int fd;

    for (fd = 0; fd < 4096; ++fd) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (access(path, F_OK) == 0) {
            ++count;
        }
    }
    return count;
}

} // namespace o2m_test
