/**
 * ucx-o2m tests: multi-process harness and UCT helpers.
 */
#include "test_common.h"

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

double wait_timeout = 30.0;

static const unsigned max_procs   = 256;
static const size_t   gather_size = 64 * 1024;

struct proc_group::control {
    volatile unsigned count;
    volatile unsigned generation;
    pid_t             pids[max_procs];
    char              gather[gather_size];
};

proc_group::proc_group(unsigned nprocs, size_t shared_size) :
    m_nprocs(nprocs), m_size(sizeof(control) + shared_size)
{
    void *ptr;

    EXPECT_LE(nprocs, max_procs);
    ptr = mmap(NULL, m_size, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) {
        ADD_FAILURE() << "mmap failed: " << strerror(errno);
        abort();
    }

    m_ctl  = static_cast<control*>(ptr);
    m_user = m_ctl + 1;
}

proc_group::~proc_group()
{
    munmap(m_ctl, m_size);
}

std::vector<pid_t> proc_group::pids() const
{
    return std::vector<pid_t>(m_ctl->pids, m_ctl->pids + m_nprocs);
}

std::vector<int> proc_group::run(const std::function<void(unsigned)> &fn,
                                 double timeout)
{
    std::vector<int> status(m_nprocs, -1);
    unsigned rank, left;
    int wstatus;
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    for (rank = 0; rank < m_nprocs; ++rank) {
        pid = fork();
        if (pid == 0) {
            m_ctl->pids[rank] = getpid();
            fn(rank);
            fflush(stdout);
            fflush(stderr);
            _exit(0);
        } else if (pid < 0) {
            ADD_FAILURE() << "fork failed: " << strerror(errno);
            break;
        }
        m_ctl->pids[rank] = pid;
    }

    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds((long)(timeout * 1000));
    left = rank;
    while (left > 0) {
        pid = waitpid(-1, &wstatus, WNOHANG);
        if (pid > 0) {
            for (unsigned r = 0; r < m_nprocs; ++r) {
                if (m_ctl->pids[r] == pid) {
                    status[r] = WIFEXITED(wstatus) ?
                                WEXITSTATUS(wstatus) :
                                128 + WTERMSIG(wstatus);
                    --left;
                }
            }
            continue;
        }

        if (std::chrono::steady_clock::now() > deadline) {
            ADD_FAILURE() << "children still running after " << timeout
                          << " s: killing them";
            for (unsigned r = 0; r < m_nprocs; ++r) {
                if (status[r] == -1) {
                    kill(m_ctl->pids[r], SIGKILL);
                }
            }
            deadline = std::chrono::steady_clock::now() +
                       std::chrono::hours(1);
            continue;
        }

        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    return status;
}

void proc_group::run_ok(const std::function<void(unsigned)> &fn,
                        double timeout)
{
    std::vector<int> status = run(fn, timeout);

    for (unsigned r = 0; r < status.size(); ++r) {
        EXPECT_EQ(0, status[r]) << "child rank " << r;
    }
}

void proc_group::barrier(unsigned rank)
{
    unsigned gen = __atomic_load_n(&m_ctl->generation, __ATOMIC_ACQUIRE);
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds((long)(wait_timeout * 1000));

    if (__atomic_add_fetch(&m_ctl->count, 1, __ATOMIC_ACQ_REL) == m_nprocs) {
        m_ctl->count = 0;
        __atomic_store_n(&m_ctl->generation, gen + 1, __ATOMIC_RELEASE);
        return;
    }

    while (__atomic_load_n(&m_ctl->generation, __ATOMIC_ACQUIRE) == gen) {
        CHILD_CHECK(std::chrono::steady_clock::now() < deadline,
                    "rank %u: barrier timed out", rank);
        sched_yield();
    }
}

void proc_group::allgather(unsigned rank, const void *mine, size_t length,
                           void *all)
{
    CHILD_CHECK(length * m_nprocs <= gather_size, "allgather too large");
    memcpy(m_ctl->gather + (rank * length), mine, length);
    barrier(rank);
    memcpy(all, m_ctl->gather, length * m_nprocs);
    barrier(rank);
}


uct_env::uct_env(const std::string &tl_name,
                 const std::map<std::string, std::string> &config)
{
    uct_md_config_t *md_config;
    uct_iface_config_t *iface_config;
    uct_iface_params_t params;
    ucs_status_t status;

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &m_async);
    CHILD_CHECK_OK(status);
    status = uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE, &m_worker);
    CHILD_CHECK_OK(status);

    /* mc_udp is a component of its own, on the loopback device: tests
     * send only on this host */
    const bool is_udp = (tl_name == UCT_MC_UDP_TL_NAME);
    const char *md_name = is_udp ? UCT_MC_UDP_TL_NAME : "o2m";

    m_component = find_component(md_name);

    status = uct_md_config_read(m_component, NULL, NULL, &md_config);
    CHILD_CHECK_OK(status);
    status = uct_md_open(m_component, md_name, md_config, &m_md);
    uct_config_release(md_config);
    CHILD_CHECK_OK(status);

    status = uct_md_iface_config_read(m_md, tl_name.c_str(), NULL, NULL,
                                      &iface_config);
    CHILD_CHECK_OK(status);
    for (const auto &kv : config) {
        status = uct_config_modify(iface_config, kv.first.c_str(),
                                   kv.second.c_str());
        if (status == UCS_ERR_NO_ELEM) {
            /* The transport's own variables live in a sub-table with the
             * prefix "O2M_" (UCX_O2M_FIFO_SIZE / UCX_SM_BCAST_FIFO_SIZE in
             * the environment); uct_config_modify() wants that prefix */
            status = uct_config_modify(iface_config,
                                       ("O2M_" + kv.first).c_str(),
                                       kv.second.c_str());
        }
        CHILD_CHECK(status == UCS_OK, "config %s=%s: %s", kv.first.c_str(),
                    kv.second.c_str(), ucs_status_string(status));
    }

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                  UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl_name.c_str();
    params.mode.device.dev_name = is_udp ? "lo" : "memory";
    params.err_handler          = err_handler;
    params.err_handler_arg      = this;
    params.err_handler_flags    = 0;

    status = uct_iface_open(m_md, m_worker, &params, iface_config, &m_iface);
    uct_config_release(iface_config);
    CHILD_CHECK_OK(status);

    uct_iface_progress_enable(m_iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    status = uct_iface_query(m_iface, &m_attr);
    CHILD_CHECK_OK(status);
}

uct_env::~uct_env()
{
    uct_iface_close(m_iface);
    uct_md_close(m_md);
    uct_worker_destroy(m_worker);
    ucs_async_context_destroy(m_async);
}

std::vector<char> uct_env::iface_addr() const
{
    std::vector<char> addr(m_attr.iface_addr_len);
    ucs_status_t status;

    status = uct_iface_get_address(m_iface, (uct_iface_addr_t*)addr.data());
    CHILD_CHECK_OK(status);
    return addr;
}

std::vector<char> uct_env::dev_addr() const
{
    std::vector<char> addr(m_attr.device_addr_len);
    ucs_status_t status;

    status = uct_iface_get_device_address(m_iface,
                                          (uct_device_addr_t*)addr.data());
    CHILD_CHECK_OK(status);
    return addr;
}

unsigned uct_env::progress()
{
    return uct_worker_progress(m_worker);
}

bool uct_env::progress_until(const std::function<bool()> &cond,
                             double timeout)
{
    ucs_time_t deadline = ucs_get_time() +
                          ucs_time_from_sec((timeout > 0) ? timeout :
                                                            wait_timeout);

    while (!cond()) {
        if (ucs_get_time() > deadline) {
            return false;
        }
        if (progress() == 0) {
            /* Tests run more processes than cores: let the others run */
            sched_yield();
        }
    }
    return true;
}

void uct_env::set_am_handler(uint8_t id, uct_am_callback_t cb, void *arg)
{
    ucs_status_t status = uct_iface_set_am_handler(m_iface, id, cb, arg, 0);

    CHILD_CHECK_OK(status);
}

ucs_status_t uct_env::err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    static_cast<uct_env*>(arg)->errors.push_back(status);
    return UCS_OK;
}


uct_component_h find_component(const char *name)
{
    uct_component_h *components, found = NULL;
    uct_component_attr_t attr;
    unsigned num, i;

    CHILD_CHECK_OK(uct_query_components(&components, &num));
    for (i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        CHILD_CHECK_OK(uct_component_query(components[i], &attr));
        if (!strcmp(attr.name, name)) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    CHILD_CHECK(found != NULL, "component %s is not registered", name);
    return found;
}

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

std::vector<std::string> o2m_held(pid_t pid)
{
    std::string dir = "/proc/" + std::to_string(pid);
    std::string pattern = std::string("/memfd:") + o2m_name_prefix;
    std::vector<std::string> held;
    struct dirent *entry;
    char link[4096], line[4096];
    ssize_t len;
    FILE *maps;
    DIR *fds;

    /* A process that exits meanwhile simply has nothing */
    fds = opendir((dir + "/fd").c_str());
    while ((fds != NULL) && ((entry = readdir(fds)) != NULL)) {
        len = readlink((dir + "/fd/" + entry->d_name).c_str(), link,
                       sizeof(link) - 1);
        if (len > 0) {
            link[len] = '\0';
            if (strstr(link, pattern.c_str()) != NULL) {
                held.push_back(std::string("fd ") + entry->d_name + " -> " +
                               link);
            }
        }
    }
    if (fds != NULL) {
        closedir(fds);
    }

    maps = fopen((dir + "/maps").c_str(), "r");
    while ((maps != NULL) && (fgets(line, sizeof(line), maps) != NULL)) {
        if (strstr(line, pattern.c_str()) != NULL) {
            line[strcspn(line, "\n")] = '\0';
            held.push_back(line);
        }
    }
    if (maps != NULL) {
        fclose(maps);
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

scoped_log_capture *scoped_log_capture::s_current = NULL;

scoped_log_capture::scoped_log_capture() : m_outer(s_current)
{
    s_current = this;
    ucs_log_push_handler(handler);
}

scoped_log_capture::~scoped_log_capture()
{
    ucs_log_pop_handler();
    s_current = m_outer;
}

ucs_log_func_rc_t
scoped_log_capture::handler(const char *file, unsigned line,
                            const char *function, ucs_log_level_t level,
                            const ucs_log_component_config_t *comp,
                            const char *message, va_list ap)
{
    char buf[512];
    va_list aq;

    if ((level > UCS_LOG_LEVEL_WARN) || (s_current == NULL)) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }

    va_copy(aq, ap);
    vsnprintf(buf, sizeof(buf), message, aq);
    va_end(aq);
    s_current->m_lines.push_back(buf);
    return UCS_LOG_FUNC_RC_STOP;
}

bool scoped_log_capture::has(const std::string &text) const
{
    for (const std::string &l : m_lines) {
        if (l.find(text) != std::string::npos) {
            return true;
        }
    }
    return false;
}

std::string scoped_log_capture::all() const
{
    std::string s;

    for (const std::string &l : m_lines) {
        s += l + "\n";
    }
    return s;
}

} // namespace o2m_test
