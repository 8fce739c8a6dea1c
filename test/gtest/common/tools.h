/**
 * ucx-o2m tests: running commands and the project's programs.
 */
#ifndef O2M_TEST_TOOLS_H_
#define O2M_TEST_TOOLS_H_

#include <string>

namespace o2m_test {

/* Run a shell command with a timeout (seconds); returns its output and
 * sets *status to its exit status (124 on timeout) */
std::string run_command(const std::string &cmd, int *status,
                        int timeout = 60);

/* Path of the plugin in the build tree */
const char *plugin_path();

/* LD_PRELOAD value for running an uninstrumented UCX tool with the plugin */
std::string plugin_preload();


} // namespace o2m_test

#endif
