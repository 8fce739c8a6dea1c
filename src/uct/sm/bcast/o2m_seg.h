/**
 * ucx-o2m: shared segments, peer processes and single-copy reads.
 *
 * Segments are anonymous memory files (memfd) with owner-only permissions.
 * A peer maps one by opening /proc/<owner pid>/fd/<fd>, so no name ever
 * appears in /dev/shm and the memory goes away with the last process that
 * maps it, whatever way the processes exit.
 */
#ifndef UCT_O2M_SEG_H_
#define UCT_O2M_SEG_H_

#include "uct_o2m.h"

#include <ucs/type/status.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <stdint.h>
#include <stddef.h>


ucs_status_t uct_o2m_seg_create(const char *name, size_t size, int *fd_p,
                                void **addr_p);

void uct_o2m_seg_destroy(int fd, void *addr, size_t size);

/* Map the segment held open as @a fd by process @a pid: returns its size,
 * which cannot change (UCS_ERR_INVALID_PARAM for a segment not sealed
 * against resizing). */
ucs_status_t uct_o2m_seg_attach(pid_t pid, int fd, void **addr_p,
                                size_t *size_p);

void uct_o2m_seg_detach(void *addr, size_t size);

/**
 * State and start time of process @a pid from /proc/<pid>/stat.
 * @return UCS_OK, UCS_ERR_NO_ELEM when there is no such process, or
 *         UCS_ERR_IO_ERROR when /proc cannot tell (fd limit).
 */
ucs_status_t uct_o2m_proc_stat(pid_t pid, char *state_p,
                               uint64_t *start_time_p);

/**
 * Copy @a length bytes described by @a remote_iov (@a iovcnt entries) from
 * the address space of @a pid to @a dst, with process_vm_readv, partial
 * reads continued.  Logs nothing, so that the caller's one log line can say
 * what was read for what (UCG names the group and the variable that turns
 * single-copy off): on failure, *done_p is what was copied and *error_p the
 * errno of the failed call (0 when a call read nothing).
 * @return UCS_OK, UCS_ERR_CONNECTION_RESET when the process has exited, or
 *         UCS_ERR_IO_ERROR.
 */
UCT_O2M_API ucs_status_t
uct_o2m_cma_read_nolog(pid_t pid, void *dst, const struct iovec *remote_iov,
                       size_t iovcnt, size_t length, size_t *done_p,
                       int *error_p);

/** uct_o2m_cma_read_nolog() with one log line on failure. */
ucs_status_t uct_o2m_cma_read(pid_t pid, void *dst,
                              const struct iovec *remote_iov, size_t iovcnt,
                              size_t length);

/* Allow any process of ours to read our memory (Yama ptrace_scope=1). */
void uct_o2m_cma_allow_peers(void);

/**
 * Whether single-copy reads can work between this process and its peers:
 * process_vm_readv on ourselves (seccomp, ENOSYS), the process is dumpable,
 * Yama ptrace_scope below 2 (or CAP_SYS_PTRACE with 2).
 * @return UCS_OK, or UCS_ERR_UNSUPPORTED with *why_p set.
 */
ucs_status_t uct_o2m_cma_probe(const char **why_p);

#endif
