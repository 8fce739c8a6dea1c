/**
 * ucx-o2m tests: commands and programs (tools.h).
 */
#include "tools.h"
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

#ifndef O2M_PLUGIN_PATH
#  define O2M_PLUGIN_PATH "libuct_o2m.so"
#endif
#ifndef O2M_SANITIZER_PRELOAD
#  define O2M_SANITIZER_PRELOAD ""
#endif


namespace o2m_test {

std::string run_command(const std::string &cmd, int *status, int timeout)
{
    std::string full = "timeout -s KILL " + std::to_string(timeout) +
                       " sh -c '" + cmd + "' 2>&1";
    std::string output;
    char buf[4096];
    size_t n;
    FILE *pipe;
    int ret;

    pipe = popen(full.c_str(), "r");
    if (pipe == NULL) {
        *status = -1;
        return "";
    }

    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) {
        output.append(buf, n);
    }

    ret     = pclose(pipe);
    *status = WIFEXITED(ret) ? WEXITSTATUS(ret) : 128 + WTERMSIG(ret);
    return output;
}

const char *plugin_path()
{
    return O2M_PLUGIN_PATH;
}

std::string plugin_preload()
{
    std::string preload = O2M_SANITIZER_PRELOAD;

    if (!preload.empty()) {
        preload += " ";
    }
    return preload + plugin_path();
}


} // namespace o2m_test
