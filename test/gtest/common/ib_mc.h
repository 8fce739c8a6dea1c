/**
 * ucx-o2m tests: what the IB multicast transports' tests (mc_verbs,
 * mc_mlx5: test_mc_verbs.cc, test_mc_mlx5.cc) share - the device to run
 * on (or why the device tests skip), an interface of the transport in a
 * child process, and the device tests themselves as fixture methods: the
 * listing by `ucx_info -d`, UD's point-to-point endpoint, groups of 2..4
 * processes with every member as root and every size class (with and
 * without forced losses), the group's IP membership held and left,
 * UCP tag send/receive with UCX_TLS=<transport>, and the peer timeout (a
 * stopped member fails the group, an idle group stays healthy).
 */
#ifndef O2M_TEST_IB_MC_H_
#define O2M_TEST_IB_MC_H_

#include "harness.h"

#include <gtest/gtest.h>

extern "C" {
#include <uct/api/uct.h>
#include <ucs/async/async.h>
}

#include <infiniband/verbs.h>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>

namespace o2m_test {

/* An interface of transport @a tl on device @a dev of memory domain @a md,
 * in this (child) process; CHILD_CHECK on every failure */
class ib_mc_env {
public:
    ib_mc_env(const std::string &tl, const std::string &md_name,
              const std::string &dev_name,
              const std::map<std::string, std::string> &config = {});
    ~ib_mc_env();

    uct_iface_h iface() const { return m_iface; }
    const uct_iface_attr_t &attr() const { return m_attr; }

    unsigned progress();

    /* Progress until cond() (true) or the wait timeout (false) */
    template <typename Cond> bool progress_until(Cond cond)
    {
        double end = now_sec() + wait_timeout;

        while (!cond()) {
            if (now_sec() > end) {
                return false;
            }
            progress();
        }
        return true;
    }

private:
    ucs_async_context_t *m_async;
    uct_worker_h        m_worker;
    uct_md_h            m_md;
    uct_iface_h         m_iface;
    uct_iface_attr_t    m_attr;
};

/* The plugin adds transport @a tl's variables @a vars to UCX's
 * configuration (`ucx_info -c`), device or not */
void ib_mc_check_config_registered(const std::string &tl,
                                   std::initializer_list<const char*> vars);

/* The body of <tl>_member.DISABLED_run: a member of a group of
 * check_groups_two_guests in the other guest, its group and its proxy's
 * address in the environment (O2M_IB_MC_MEMBER) */
void ib_mc_remote_member(const std::string &tl);

/* Which verbs devices a transport runs on */
typedef std::function<bool(struct ibv_device*)> ib_mc_device_filter_t;

/* The verbs devices of this host, each with its kernel driver, for skip
 * messages ("rxe0 (rdma_rxe)"); "none" when there is none */
std::string ib_mc_devices_found();

/*
 * The device tests of an IB multicast transport: SetUp() picks the first
 * device the filter accepts (port 1) or skips the test, saying which
 * device is missing and which were found.  No UCX in the parent: the
 * children open the interfaces.
 */
class ib_mc_test : public ::testing::Test {
protected:
    ib_mc_test(const std::string &tl, const std::string &device_kind,
               ib_mc_device_filter_t filter);

    void SetUp() override;

    /* `ucx_info -d` lists the transport on the device */
    void check_listed();

    /* uct_ep_create to a peer's interface: UD's endpoint, exact and in
     * order */
    void check_p2p_exact();

    /* Groups of 2..4, every member as root, @a drop_permille of the first
     * transmissions dropped at every member: exactly once, in order */
    void check_groups(unsigned drop_permille);

    /* One group of @a n, root @a root; the ranks in the bit mask
     * @a remote run in the other guest of a two-guest bed */
    void group_run(unsigned n, unsigned root, unsigned drop_permille,
                   unsigned count, unsigned remote = 0);

    /* Groups across the two guests of the bed (contrib/vmbed.sh run -n 2;
     * skips elsewhere): members in both, the root in either, 2..4
     * processes, 8 B..4 KiB, with and without forced losses; the other
     * guest's members are this program's <tl>_member.DISABLED_run there
     * (ib_mc_remote_member), started with vmbed-exec */
    void check_groups_two_guests();

    /* The group holds its IP group while it lives and leaves it on
     * destroy and on a process kill */
    void check_membership_left();

    /* UCP tag send/receive over the transport alone (UCX_TLS) */
    void check_ucp_tag();

    /* A member stops responding (SIGSTOP) while the root waits for its
     * ACKs: after GROUP_PEER_TIMEOUT every member fails with
     * UCS_ERR_TIMED_OUT (the root's flush too), one log line each */
    void check_peer_timeout_stopped();

    /* A group idle for longer than GROUP_PEER_TIMEOUT stays healthy and
     * delivers its next messages */
    void check_peer_timeout_idle();

    std::string           m_tl;
    std::string           m_device_kind;
    ib_mc_device_filter_t m_filter;
    std::string           m_md;
    std::string           m_dev;
    uint64_t              m_salt;
};

} // namespace o2m_test

#endif
