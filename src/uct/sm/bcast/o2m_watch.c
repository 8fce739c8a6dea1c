/**
 * ucx-o2m: liveness of the processes on this host, see uct_o2m.h.
 *
 * A watch has three ways to learn that its process exited, best first:
 *  - a pidfd, readable once the process has exited (zombie included);
 *  - without one (no pidfd_open before Linux 5.3, fd limit, seccomp),
 *    kill(pid, 0) failing with ESRCH, or /proc/<pid>/stat missing, showing a
 *    zombie, or showing another start time (the pid was reused).
 * Not being able to watch is never taken for an exit.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_seg.h"

#include <ucs/datastruct/list.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

#include <sys/syscall.h>
#include <poll.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


struct uct_o2m_watch {
    ucs_list_link_t list;
    uct_o2m_proc_t  proc;
    int             pidfd;    /* -1: the kill(pid, 0) fallback */
    int             exited;
    unsigned        refcount;
};

struct uct_o2m_watch_table {
    ucs_list_link_t watches;  /* uct_o2m_watch_t */
};


ucs_status_t uct_o2m_proc_stat(pid_t pid, char *state_p,
                               uint64_t *start_time_p)
{
    unsigned long long start_time;
    char path[64], buf[1024];
    const char *fields;
    ssize_t len;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        /* At the fd limit we know nothing about the process */
        return ((errno == ENOENT) || (errno == ESRCH)) ? UCS_ERR_NO_ELEM :
                                                         UCS_ERR_IO_ERROR;
    }

    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0) {
        return UCS_ERR_NO_ELEM;
    }
    buf[len] = '\0';

    /* The command name may hold spaces and parentheses: skip to its end */
    fields = strrchr(buf, ')');
    if ((fields == NULL) ||
        (sscanf(fields, ") %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
                "%*u %*d %*d %*d %*d %*d %*d %llu", state_p,
                &start_time) != 2)) {
        ucs_debug("cannot parse %s", path);
        return UCS_ERR_NO_ELEM;
    }

    *start_time_p = start_time;
    return UCS_OK;
}

void uct_o2m_proc_self(uct_o2m_proc_t *proc)
{
    char state;

    proc->pid = getpid();
    if (uct_o2m_proc_stat(proc->pid, &state, &proc->start_time) != UCS_OK) {
        proc->start_time = 0;
    }
}

/* Without a pidfd: whether @a proc is gone, a zombie, or another process */
static int uct_o2m_proc_is_gone(const uct_o2m_proc_t *proc)
{
    ucs_status_t status;
    uint64_t start_time;
    char state;

    if ((kill(proc->pid, 0) != 0) && (errno == ESRCH)) {
        return 1;
    }

    /* EPERM from kill: it exists, another user's; /proc tells which.
     * When /proc cannot be read (fd limit), kill() has the last word. */
    status = uct_o2m_proc_stat(proc->pid, &state, &start_time);
    if (status != UCS_OK) {
        return status == UCS_ERR_NO_ELEM;
    }

    return (state == 'Z') || (state == 'X') ||
           ((proc->start_time != 0) && (start_time != proc->start_time));
}

static void uct_o2m_watch_open(uct_o2m_watch_t *watch)
{
    static int logged_errno = 0;
    int pidfd;

#ifdef SYS_pidfd_open
    pidfd = syscall(SYS_pidfd_open, watch->proc.pid, 0);
#else
    pidfd = -1;
    errno = ENOSYS;
#endif
    if (pidfd < 0) {
        if (errno == ESRCH) {
            watch->exited = 1;
            return;
        }

        /* Cannot watch is not dead: poll with kill() and /proc instead */
        if (logged_errno != errno) {
            logged_errno = errno;
            ucs_diag("pidfd_open(%d) failed: %m; watching processes with "
                     "kill() and /proc instead", watch->proc.pid);
        }
        watch->exited = uct_o2m_proc_is_gone(&watch->proc);
        return;
    }

    /* The pid may have been reused since its owner published it */
    if (uct_o2m_proc_is_gone(&watch->proc)) {
        close(pidfd);
        watch->exited = 1;
        return;
    }

    (void)fcntl(pidfd, F_SETFD, FD_CLOEXEC);
    watch->pidfd = pidfd;
}

ucs_status_t uct_o2m_watch_table_create(uct_o2m_watch_table_t **table_p)
{
    uct_o2m_watch_table_t *table;

    table = ucs_malloc(sizeof(*table), "o2m watch table");
    if (table == NULL) {
        ucs_error("failed to allocate a process watch table");
        return UCS_ERR_NO_MEMORY;
    }

    ucs_list_head_init(&table->watches);
    *table_p = table;
    return UCS_OK;
}

void uct_o2m_watch_table_destroy(uct_o2m_watch_table_t *table)
{
    uct_o2m_watch_t *watch, *tmp;

    if (table == NULL) {
        return;
    }

    ucs_list_for_each_safe(watch, tmp, &table->watches, list) {
        ucs_warn("watch of pid %d destroyed with %u references",
                 watch->proc.pid, watch->refcount);
        if (watch->pidfd >= 0) {
            close(watch->pidfd);
        }
        ucs_free(watch);
    }
    ucs_free(table);
}

ucs_status_t uct_o2m_watch_get(uct_o2m_watch_table_t *table,
                               const uct_o2m_proc_t *proc,
                               uct_o2m_watch_t **watch_p)
{
    uct_o2m_watch_t *watch;

    ucs_list_for_each(watch, &table->watches, list) {
        if ((watch->proc.pid == proc->pid) &&
            (watch->proc.start_time == proc->start_time)) {
            ++watch->refcount;
            *watch_p = watch;
            return UCS_OK;
        }
    }

    watch = ucs_malloc(sizeof(*watch), "o2m watch");
    if (watch == NULL) {
        ucs_error("failed to allocate a process watch");
        return UCS_ERR_NO_MEMORY;
    }

    watch->proc     = *proc;
    watch->pidfd    = -1;
    watch->exited   = 0;
    watch->refcount = 1;
    uct_o2m_watch_open(watch);
    ucs_list_add_tail(&table->watches, &watch->list);
    *watch_p = watch;
    return UCS_OK;
}

void uct_o2m_watch_put(uct_o2m_watch_table_t *table, uct_o2m_watch_t *watch)
{
    if ((watch == NULL) || (--watch->refcount > 0)) {
        return;
    }

    ucs_list_del(&watch->list);
    if (watch->pidfd >= 0) {
        close(watch->pidfd);
    }
    ucs_free(watch);
}

int uct_o2m_watch_has_exited(uct_o2m_watch_t *watch)
{
    struct pollfd pfd;

    if (watch->exited) {
        return 1;
    }

    if (watch->pidfd >= 0) {
        pfd.fd      = watch->pidfd;
        pfd.events  = POLLIN;
        pfd.revents = 0;
        watch->exited = (poll(&pfd, 1, 0) > 0);
    } else {
        watch->exited = uct_o2m_proc_is_gone(&watch->proc);
    }

    return watch->exited;
}

int uct_o2m_watch_has_pidfd(const uct_o2m_watch_t *watch)
{
    return watch->pidfd >= 0;
}
