/**
 * ucx-o2m: shared segments, peer processes and single-copy reads.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE /* memfd_create, process_vm_readv */
#endif
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_seg.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include <limits.h>


/* A segment's size never changes once created */
#define UCT_O2M_SEG_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)


ucs_status_t uct_o2m_seg_create(const char *name, size_t size, int *fd_p,
                                void **addr_p)
{
    void *addr;
    int fd;

    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        ucs_error("memfd_create(%s) failed: %m", name);
        return (errno == ENOMEM) ? UCS_ERR_NO_MEMORY :
               ((errno == EMFILE) || (errno == ENFILE)) ?
               UCS_ERR_EXCEEDS_LIMIT : UCS_ERR_IO_ERROR;
    }

    /* Owner-only, also for peers that open it through /proc */
    if (fchmod(fd, S_IRUSR | S_IWUSR) != 0) {
        ucs_error("fchmod(memfd %s) failed: %m", name);
        goto err_close;
    }

    if (ftruncate(fd, size) != 0) {
        ucs_error("ftruncate(memfd %s, %zu) failed: %m", name, size);
        goto err_close;
    }

    /* A segment that shrank under a mapping would raise SIGBUS in every
     * process that maps it: nobody may resize it (peers check the seals) */
    if (fcntl(fd, F_ADD_SEALS, UCT_O2M_SEG_SEALS) != 0) {
        ucs_error("sealing memfd %s failed: %m", name);
        goto err_close;
    }

    addr = mmap(NULL, size, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_POPULATE, fd, 0);
    if (addr == MAP_FAILED) {
        ucs_error("mmap(memfd %s, %zu) failed: %m", name, size);
        goto err_close;
    }

    *fd_p   = fd;
    *addr_p = addr;
    return UCS_OK;

err_close:
    close(fd);
    return UCS_ERR_NO_MEMORY;
}

void uct_o2m_seg_destroy(int fd, void *addr, size_t size)
{
    uct_o2m_seg_detach(addr, size);
    close(fd);
}

ucs_status_t uct_o2m_seg_attach(pid_t pid, int fd, void **addr_p,
                                size_t *size_p)
{
    char path[64];
    struct stat st;
    void *addr;
    int local_fd, seals;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
    local_fd = open(path, O_RDWR | O_CLOEXEC);
    if (local_fd < 0) {
        /* The owner may have exited or closed it: the caller decides */
        ucs_debug("open(%s) failed: %m", path);
        return (errno == ENOENT) ? UCS_ERR_UNREACHABLE : UCS_ERR_IO_ERROR;
    }

    if (fstat(local_fd, &st) != 0) {
        ucs_error("fstat(%s) failed: %m", path);
        goto err_close;
    }

    /* Its size is the one checked against its header only if it is fixed */
    seals = fcntl(local_fd, F_GET_SEALS);
    if ((seals < 0) ||
        ((seals & UCT_O2M_SEG_SEALS) != UCT_O2M_SEG_SEALS)) {
        ucs_error("%s is not a sealed o2m segment (seals 0x%x)", path,
                  seals);
        close(local_fd);
        return UCS_ERR_INVALID_PARAM;
    }

    addr = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_POPULATE,
                local_fd, 0);
    if (addr == MAP_FAILED) {
        ucs_error("mmap(%s, %zu) failed: %m", path, (size_t)st.st_size);
        goto err_close;
    }

    close(local_fd);
    *addr_p = addr;
    *size_p = st.st_size;
    return UCS_OK;

err_close:
    close(local_fd);
    return UCS_ERR_IO_ERROR;
}

void uct_o2m_seg_detach(void *addr, size_t size)
{
    if (munmap(addr, size) != 0) {
        ucs_warn("munmap(%p, %zu) failed: %m", addr, size);
    }
}

ucs_status_t uct_o2m_cma_read_nolog(pid_t pid, void *dst,
                                    const struct iovec *remote_iov,
                                    size_t iovcnt, size_t length,
                                    size_t *done_p, int *error_p)
{
    struct iovec riov[ucs_max(iovcnt, 1)];
    struct iovec liov;
    size_t done, skip, i, first;
    ssize_t ret;

    memcpy(riov, remote_iov, sizeof(*riov) * iovcnt);
    done  = 0;
    first = 0;
    while (done < length) {
        liov.iov_base = UCS_PTR_BYTE_OFFSET(dst, done);
        liov.iov_len  = length - done;
        ret = process_vm_readv(pid, &liov, 1, &riov[first],
                               ucs_min(iovcnt - first, IOV_MAX), 0);
        if (ret <= 0) {
            *done_p  = done;
            *error_p = (ret < 0) ? errno : 0;
            return ((ret < 0) && (errno == ESRCH)) ?
                   UCS_ERR_CONNECTION_RESET : UCS_ERR_IO_ERROR;
        }

        /* Skip what the partial read consumed */
        done += ret;
        skip  = ret;
        for (i = first; (i < iovcnt) && (skip > 0); ++i) {
            if (skip >= riov[i].iov_len) {
                skip -= riov[i].iov_len;
                ++first;
            } else {
                riov[i].iov_base = UCS_PTR_BYTE_OFFSET(riov[i].iov_base, skip);
                riov[i].iov_len -= skip;
                skip             = 0;
            }
        }
    }

    *done_p = done;
    return UCS_OK;
}

ucs_status_t uct_o2m_cma_read(pid_t pid, void *dst,
                              const struct iovec *remote_iov, size_t iovcnt,
                              size_t length)
{
    ucs_status_t status;
    size_t done;
    int error;

    if (length == 0) {
        return UCS_OK;
    }

    status = uct_o2m_cma_read_nolog(pid, dst, remote_iov, iovcnt, length,
                                    &done, &error);
    if (status == UCS_OK) {
        return UCS_OK;
    }

    if (error != 0) {
        ucs_error("process_vm_readv(pid %d, %zu bytes) failed: %s",
                  (int)pid, length - done, strerror(error));
    } else {
        ucs_error("process_vm_readv(pid %d) read nothing at %zu/%zu",
                  (int)pid, done, length);
    }
    return status;
}

/* Effective capabilities of this process, 0 when unknown */
static uint64_t uct_o2m_cap_effective(void)
{
    unsigned long long caps = 0;
    char line[256];
    FILE *f;

    f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return 0;
    }

    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "CapEff: %llx", &caps) == 1) {
            break;
        }
    }
    fclose(f);
    return caps;
}

ucs_status_t uct_o2m_cma_probe(const char **why_p)
{
    static const uint64_t cap_sys_ptrace = UCS_BIT(19);
    uint64_t src = 0x6f326d2d636d61ull, dst = 0;
    struct iovec liov, riov;
    int scope;
    FILE *f;

    liov.iov_base = &dst;
    liov.iov_len  = sizeof(dst);
    riov.iov_base = &src;
    riov.iov_len  = sizeof(src);
    if ((process_vm_readv(getpid(), &liov, 1, &riov, 1, 0) != sizeof(dst)) ||
        (dst != src)) {
        *why_p = (errno == ENOSYS) ? "process_vm_readv is not available" :
                                     "process_vm_readv fails in this process";
        return UCS_ERR_UNSUPPORTED;
    }

    /* Peers cannot read a process that is not dumpable (setuid, or
     * PR_SET_DUMPABLE 0) */
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 1) {
        *why_p = "this process is not dumpable";
        return UCS_ERR_UNSUPPORTED;
    }

    f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f != NULL) {
        if (fscanf(f, "%d", &scope) != 1) {
            scope = 0;
        }
        fclose(f);
        /* 1 is handled by PR_SET_PTRACER; 2 needs CAP_SYS_PTRACE; 3: never */
        if ((scope >= 3) ||
            ((scope == 2) && !(uct_o2m_cap_effective() & cap_sys_ptrace))) {
            *why_p = "Yama ptrace_scope forbids reading other processes";
            return UCS_ERR_UNSUPPORTED;
        }
    }

    return UCS_OK;
}

void uct_o2m_cma_allow_peers(void)
{
#if defined(PR_SET_PTRACER)
    /* Needed only with Yama ptrace_scope=1; harmless otherwise */
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
}
