/**
 * ucx-o2m tests: single-copy reads (process_vm_readv) that cannot work or
 * fail, made so with a seccomp filter in a forked child (EPERM, as under
 * Yama ptrace_scope 3).
 *
 *  - cma.probe: with process_vm_readv refused before the interface opens,
 *    CMA=try advertises no zcopy (UCT attributes, uct_o2m_iface_query) and
 *    refuses am_zcopy; CMA=y fails the interface open; CMA=n turns zcopy
 *    off where it would work.
 *  - cma.p2p_read_fails: the receiver's reads start failing after its
 *    interface opened: the sender's zcopy completion is an error, and the
 *    FIFO goes on (a later short message arrives).
 *  - cma.bcast_read_fails: one fan-out receiver's reads fail: the root's
 *    zcopy completion and flush end with an error instead of waiting.
 *  - cma.incast_read_fails: the fan-in root's reads fail: the senders'
 *    zcopy completions and flushes end with an error.
 *  - ucg_cma.one_member_cannot_read: UCG plans no sm_*_cma phase on any
 *    member when one member's probe fails, and its copy paths are right.
 *  - cma.read_*: the one read loop of the transports and UCG
 *    (uct_o2m_cma_read_nolog): more entries than one call takes, a read
 *    that stops at an unmapped page, a process that has exited.
 */
#include "common/harness.h"
#include "common/uct_env.h"
#include "common/peers.h"
#include "common/residue.h"
#include "common/sandbox.h"
#include "common/ucg_harness.h"

extern "C" {
#include "ucg_group.h"
#include "o2m_seg.h"
}

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <climits>
#include <unistd.h>
#include <cstring>

using namespace o2m_test;

namespace {

class cma : public ::testing::Test {
protected:
    shm_residue_check m_shm;
};

struct zcomp {
    uct_completion_t super;
    ucs_status_t     status;
    bool             done;

    zcomp() : status(UCS_OK), done(false)
    {
        super.func   = cb;
        super.count  = 1;
        super.status = UCS_OK;
    }

    static void cb(uct_completion_t *self)
    {
        zcomp *c  = ucs_container_of(self, zcomp, super);
        c->status = self->status;
        c->done   = true;
    }
};

void deny_cma()
{
    CHILD_CHECK(deny_syscall(SYS_process_vm_readv, EPERM), "seccomp: %m");
}

ucs_status_t ignore_am(void *arg, void *data, size_t length, unsigned flags)
{
    return UCS_OK;
}

/*
 * Rank @a rank's endpoint of group @a id of the 3 children over @a env
 * (sm_bcast; sm_incast: a gather), the root (rank 0) created first; the
 * messages on AM id 1 are dropped
 */
uct_ep_h join_group(proc_group &pg, unsigned rank, uct_env &env, uint64_t id,
                    bool incast)
{
    uct_o2m_group_params_t params;
    peer_addrs addrs;
    uct_ep_h ep;

    env.set_am_handler(1, ignore_am, NULL);
    addrs.exchange(pg, rank, env);
    params = addrs.group_params(id, 3, rank);
    if (incast) {
        params.field_mask |= UCT_O2M_GROUP_FIELD_OP;
        params.op          = UCT_O2M_OP_GATHER;
    }
    group_ep_create_root_first(pg, rank, env, params, &ep);
    return ep;
}

/* A zcopy of @a length bytes (AM id @a am_id) on @a ep that the receiver
 * cannot read: it completes (bounded) with an error */
void zcopy_unread(uct_env &env, uct_ep_h ep, uint8_t am_id, size_t length,
                  char fill, unsigned rank)
{
    std::vector<char> buf(length, fill);
    uct_iov_t iov = {buf.data(), buf.size(), NULL, 1, 0};
    ucs_status_t status;
    zcomp comp;

    status = uct_ep_am_zcopy(ep, am_id, NULL, 0, &iov, 1, 0, &comp.super);
    CHILD_CHECK(status == UCS_INPROGRESS, "rank %u: am_zcopy: %s", rank,
                ucs_status_string(status));
    CHILD_CHECK(env.progress_until([&] { return comp.done; }),
                "rank %u: zcopy completion (the receiver could not read)",
                rank);
    CHILD_CHECK(is_error(comp.status), "rank %u: the zcopy the receiver "
                "could not read completed with %s", rank,
                ucs_status_string(comp.status));
}

TEST_F(cma, probe)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) {
        {
            /* Where it would work, CMA=n turns it off */
            uct_env env("sm_incast", {{"CMA", "n"}});
            uct_o2m_iface_attr_t oattr;

            CHILD_CHECK(!(env.attr().cap.flags & UCT_IFACE_FLAG_AM_ZCOPY),
                        "zcopy with CMA=n");
            CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
            CHILD_CHECK(oattr.max_zcopy == 0, "max_zcopy %zu", oattr.max_zcopy);
        }
        {
            uct_env env("sm_bcast");

            CHILD_CHECK(env.attr().cap.flags & UCT_IFACE_FLAG_AM_ZCOPY,
                        "no zcopy where single-copy reads work");
        }

        deny_cma();
        for (const char *tl : {"sm_bcast", "sm_incast"}) {
            uct_env env(tl);
            uct_o2m_iface_attr_t oattr;
            std::vector<char> buf(1 << 20);
            uct_iov_t iov = {buf.data(), buf.size(), NULL, 1, 0};
            peer_addrs addrs;
            uct_ep_h ep;

            CHILD_CHECK(!(env.attr().cap.flags & UCT_IFACE_FLAG_AM_ZCOPY),
                        "%s: zcopy advertised while process_vm_readv fails",
                        tl);
            CHILD_CHECK(env.attr().cap.am.max_zcopy == 0, "%s: max_zcopy %zu",
                        tl, env.attr().cap.am.max_zcopy);
            CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
            CHILD_CHECK(oattr.max_zcopy == 0, "%s: o2m max_zcopy %zu", tl,
                        oattr.max_zcopy);

            /* A point-to-point ep to ourselves refuses zcopy */
            addrs.exchange(pg, rank, env);
            CHILD_CHECK_OK(addrs.p2p_ep_create(env, 0, &ep));
            CHILD_CHECK(uct_ep_am_zcopy(ep, 1, NULL, 0, &iov, 1, 0, NULL) ==
                        UCS_ERR_UNSUPPORTED, "%s: am_zcopy accepted", tl);
            uct_ep_destroy(ep);
        }
    }, 60);

    /* CMA=y: the interface does not open */
    std::vector<int> status = pg.run([&](unsigned rank) {
        deny_cma();
        uct_env env("sm_bcast", {{"CMA", "y"}});
        _exit(2); /* Opened: wrong */
    }, 60);
    EXPECT_EQ(1, status[0]) << "CMA=y with process_vm_readv refused: the "
                               "interface must not open";
}

TEST_F(cma, p2p_read_fails)
{
    proc_group pg(2);
    volatile int *shared = static_cast<volatile int*>(pg.shared());

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast", {{"CHECK_INTERVAL", "10ms"}});
        unsigned shorts = 0;
        peer_addrs addrs;

        CHILD_CHECK(env.attr().cap.flags & UCT_IFACE_FLAG_AM_ZCOPY,
                    "no zcopy");
        env.set_am_handler(1, [](void *arg, void *data, size_t length,
                                 unsigned flags) {
            ++*static_cast<unsigned*>(arg);
            return UCS_OK;
        }, &shorts);
        addrs.exchange(pg, rank, env);

        if (rank == 0) {
            /* Opened with single-copy reads; now they fail */
            deny_cma();
            pg.barrier(rank);
            CHILD_CHECK(env.progress_until([&] { return shorts > 0; }),
                        "the short message after the lost zcopy");
            CHILD_CHECK(shorts == 1, "%u messages delivered", shorts);
            __atomic_store_n(shared, 1, __ATOMIC_RELEASE);
            return;
        }

        uct_ep_h ep;

        pg.barrier(rank);
        CHILD_CHECK_OK(addrs.p2p_ep_create(env, 0, &ep));
        zcopy_unread(env, ep, 2, 256 << 10, 'x', rank);

        CHILD_CHECK_OK(uct_ep_am_short(ep, 1, 0, NULL, 0));
        CHILD_CHECK(env.progress_until([&] {
            return __atomic_load_n(shared, __ATOMIC_ACQUIRE) != 0;
        }), "receiver done");
        uct_ep_destroy(ep);
    }, 60);
}

TEST_F(cma, bcast_read_fails)
{
    proc_group pg(3);
    volatile int *shared = static_cast<volatile int*>(pg.shared());

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast", {{"CHECK_INTERVAL", "10ms"}});
        uct_ep_h ep = join_group(pg, rank, env, 0xc3a, false);

        if (rank == 2) {
            deny_cma();
        }
        pg.barrier(rank);

        if (rank == 0) {
            zcopy_unread(env, ep, 1, 256 << 10, 'y', rank);
            CHILD_CHECK(is_error(uct_ep_flush(ep, 0, NULL)), "flush");
            __atomic_store_n(shared, 1, __ATOMIC_RELEASE);
        } else {
            /* Until the root has its error; the group fails for us too */
            CHILD_CHECK(env.progress_until([&] {
                return __atomic_load_n(shared, __ATOMIC_ACQUIRE) != 0;
            }), "root done");
            CHILD_CHECK(env.progress_until([&] {
                return !env.errors.empty();
            }), "rank %u: no error", rank);
        }
        uct_ep_destroy(ep);
    }, 60);
}

TEST_F(cma, incast_read_fails)
{
    proc_group pg(3);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_incast", {{"CHECK_INTERVAL", "10ms"}});
        uct_ep_h ep = join_group(pg, rank, env, 0xc3b, true);

        if (rank == 0) {
            deny_cma();
        }
        pg.barrier(rank);

        if (rank == 0) {
            CHILD_CHECK(env.progress_until([&] {
                return !env.errors.empty();
            }), "root: no error");
        } else {
            zcopy_unread(env, ep, 1, 128 << 10, 'z', rank);
            CHILD_CHECK(is_error(uct_ep_flush(ep, 0, NULL)), "flush");
        }
        uct_ep_destroy(ep);
    }, 60);
}

} // namespace

namespace {

using namespace ucg_test;

bool plan_has_cma(member &m, ucg_coll_type_t type, size_t bytes)
{
    ucg_plan_key_t key;
    const ucg_plan_t *plan;

    memset(&key, 0, sizeof(key));
    key.type        = type;
    key.op          = (type == UCG_COLL_REDUCE) ? UCG_OP_SUM : UCG_OP_LAST;
    key.dtype       = UCG_DT_INT32;
    key.commutative = 1;
    key.msg_size    = bytes;
    key.dt_size     = 4;
    CHILD_CHECK_OK(ucg_group_plan(m.group, &key, &plan));
    for (unsigned i = 0; i < plan->num_phases; ++i) {
        if ((plan->phases[i].method == UCG_PHASE_SM_BCAST_CMA) ||
            (plan->phases[i].method == UCG_PHASE_SM_REDUCE_CMA)) {
            return true;
        }
    }
    return false;
}

void run_checked(member &m, const coll_desc &d)
{
    coll_bufs bufs(d, m.rank, m.size);
    ucg_coll_params_t params = bufs.params();
    ucg_coll_h coll;

    CHILD_CHECK_OK(ucg_coll_init(m.group, &params, &coll));
    CHILD_CHECK_OK(ucg_coll_start(coll));
    CHILD_CHECK_OK(wait_coll(coll, d.str()));
    ucg_coll_finalize(coll);
    bufs.check(m.label + ": " + d.str());
}

/* More remote entries than one process_vm_readv takes (IOV_MAX) */
TEST_F(cma, read_many_entries)
{
    const size_t iovcnt = IOV_MAX + 7;
    const size_t chunk  = 3;
    std::vector<uint8_t> src(iovcnt * chunk * 2), dst(iovcnt * chunk, 0);
    std::vector<uint8_t> expected;
    std::vector<struct iovec> riov(iovcnt);
    size_t done = 0;
    int error   = -1;

    for (size_t i = 0; i < src.size(); ++i) {
        src[i] = (uint8_t)(i * 13 + 1);
    }
    /* Every other chunk of src, so that the entries cannot merge */
    for (size_t i = 0; i < iovcnt; ++i) {
        riov[i].iov_base = &src[2 * i * chunk];
        riov[i].iov_len  = chunk;
        expected.insert(expected.end(), src.begin() + 2 * i * chunk,
                        src.begin() + (2 * i + 1) * chunk);
    }

    ASSERT_EQ(UCS_OK, uct_o2m_cma_read_nolog(getpid(), dst.data(),
                                             riov.data(), iovcnt, dst.size(),
                                             &done, &error));
    EXPECT_EQ(dst.size(), done);
    EXPECT_TRUE(expected == dst);
}

/* A read that reaches an unmapped page: what was copied, and EFAULT */
TEST_F(cma, read_stops_at_unmapped_page)
{
    const size_t page = sysconf(_SC_PAGESIZE);
    std::vector<uint8_t> dst(2 * page, 0);
    struct iovec riov;
    size_t done = 0;
    int error   = 0;
    void *mem;

    mem = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, mem);
    memset(mem, 0x5a, page);
    ASSERT_EQ(0, munmap((char*)mem + page, page));

    riov.iov_base = mem;
    riov.iov_len  = 2 * page;
    EXPECT_EQ(UCS_ERR_IO_ERROR,
              uct_o2m_cma_read_nolog(getpid(), dst.data(), &riov, 1,
                                     dst.size(), &done, &error));
    EXPECT_EQ(page, done);
    EXPECT_EQ(EFAULT, error);
    EXPECT_EQ(0x5a, dst[page - 1]);
    munmap(mem, page);
}

/* Reading a process that has exited (a zombie of ours: the pid stays ours
 * until it is reaped) is a reset connection, not an I/O error */
TEST_F(cma, read_exited_process)
{
    uint64_t value = 0;
    struct iovec riov;
    siginfo_t info;
    size_t done = 1;
    int error   = 0;
    pid_t pid;

    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        _exit(0);
    }
    ASSERT_EQ(0, waitid(P_PID, pid, &info, WEXITED | WNOWAIT));

    riov.iov_base = &value;
    riov.iov_len  = sizeof(value);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              uct_o2m_cma_read_nolog(pid, &value, &riov, 1, sizeof(value),
                                     &done, &error));
    EXPECT_EQ(0u, done);
    EXPECT_EQ(ESRCH, error);
    EXPECT_EQ(pid, waitpid(pid, NULL, 0));
}

/*
 * UCG: one member's single-copy reads cannot work (seccomp before its
 * context opens the sm interfaces): every member plans without the
 * sm_*_cma phases, and large bcast and reduce are right.  Without the
 * filter the same sizes are single-copy (the test sees the difference).
 */
TEST(ucg_cma, one_member_cannot_read)
{
    const size_t count = 64 << 10; /* int32: above both CMA thresholds */

    for (bool deny : {false, true}) {
        run_opts opts;

        opts.timeout  = 120;
        opts.pre_init = [deny](unsigned rank) {
            if (deny && (rank == 2)) {
                deny_cma();
            }
        };
        run_ok(3, opts, [&](member &m) {
            CHILD_CHECK(m.group->topo.o2m, "o2m off");
            CHILD_CHECK(m.group->topo.sm_cma == !deny, "rank %u: sm_cma %d",
                        m.rank, m.group->topo.sm_cma);
            for (ucg_coll_type_t t : {UCG_COLL_BCAST, UCG_COLL_REDUCE}) {
                CHILD_CHECK(plan_has_cma(m, t, count * 4) == !deny,
                            "rank %u: type %d: single-copy phase %s", m.rank,
                            t, deny ? "planned" : "missing");
            }
            for (unsigned root = 0; root < m.size; ++root) {
                run_checked(m, coll_desc(UCG_COLL_BCAST, count, UCG_DT_INT32,
                                         UCG_OP_LAST, root));
                run_checked(m, coll_desc(UCG_COLL_REDUCE, count, UCG_DT_INT32,
                                         UCG_OP_SUM, root));
            }
        }, deny ? "one member without CMA" : "CMA");
    }
}

} // namespace
