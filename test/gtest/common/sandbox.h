/**
 * ucx-o2m tests: make a system call fail in this process only.
 *
 * deny_syscall() installs a seccomp filter that makes system call @a nr
 * return -1 with errno @a err in the calling process and in the children it
 * forks afterwards; call it in a forked test child only.  This is how the
 * tests play an old kernel (pidfd_open: ENOSYS) or a hardened one
 * (process_vm_readv: EPERM) without root and without LD_PRELOAD.
 */
#ifndef O2M_TEST_SANDBOX_H_
#define O2M_TEST_SANDBOX_H_

namespace o2m_test {

/* false (errno set) when seccomp is not available here */
bool deny_syscall(long nr, int err);

} // namespace o2m_test

#endif
