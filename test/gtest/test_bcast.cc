/**
 * ucx-o2m tests: sm_bcast (fan-out) groups between forked processes.
 *
 *  - every size class, every member as root, group sizes 2..8, both modes,
 *    ring wrap-around with back-pressure and pending, flush, zcopy
 *    completions (bcast_traffic)
 *  - several concurrent groups on the same interfaces (bcast_concurrent)
 *  - members that create their endpoint before / after the root
 *    (bcast_attach)
 *  - bad parameters (bcast_bad_input)
 *  - kill -9 of a receiver or of the root, members that never join
 *    (bcast_failure)
 * Every multi-process test also checks that /dev/shm gained no file.
 */
#include "common/log_capture.h"
#include "common/harness.h"
#include "common/uct_env.h"
#include "common/traffic.h"
#include "common/peers.h"
#include "common/residue.h"
#include "common/o2m_values.h"

#include <signal.h>
#include <tuple>

using namespace o2m_test;

namespace {

const uint8_t AM_BASE = 10;

/* Per rank: messages its receiver consumed (see traffic_receiver::publish) */
volatile size_t *consumed_slots(proc_group &pg)
{
    return static_cast<volatile size_t*>(pg.shared());
}

uct_ep_h create_group_ep(uct_env &env, const peer_addrs &addrs,
                         uint64_t group_id, unsigned size, unsigned my_index,
                         unsigned root_index, unsigned root_rank,
                         uct_o2m_mode_t mode, ucs_status_t *status_p = NULL)
{
    uct_o2m_group_params_t params = addrs.group_params(group_id, size,
                                                       my_index, root_index,
                                                       root_rank);
    ucs_status_t status;
    uct_ep_h ep = NULL;

    params.field_mask |= UCT_O2M_GROUP_FIELD_MODE;
    params.mode        = mode;

    status = uct_o2m_ep_create(env.iface(), &params, &ep);
    if (status_p != NULL) {
        *status_p = status;
        return (status == UCS_OK) ? ep : NULL;
    }

    CHILD_CHECK(status == UCS_OK, "uct_o2m_ep_create(group 0x%lx, %u/%u, "
                "root %u, %s): %s", (unsigned long)group_id, my_index, size,
                root_index, uct_o2m_mode_name(mode),
                ucs_status_string(status));
    CHILD_CHECK(ep != NULL, "no endpoint");
    return ep;
}

uint64_t stream_salt(uint64_t a, uint64_t b, uint64_t c)
{
    return mix64(a * 1000003 + b * 10007 + c);
}

std::map<std::string, std::string> small_ring_config()
{
    return {{"FIFO_SIZE", "8"}};
}

std::map<std::string, std::string> failure_config()
{
    return {{"FIFO_SIZE", "8"}, {"CHECK_INTERVAL", "10ms"},
            {"PEER_TIMEOUT", "10s"}};
}


/*
 * Traffic: every size class, every member as root, back-to-back streams
 */
typedef std::tuple<uct_o2m_mode_t, unsigned> traffic_param_t;

class bcast_traffic : public ::testing::TestWithParam<traffic_param_t> {
protected:
    shm_residue_check m_shm;
};

/*
 * One root's turn.  The root first fills the ring while the receivers are
 * held at a barrier: exactly fifo_depth messages fit, flush is in progress,
 * and a pending request is accepted; then everything else goes out.
 */
void bcast_one_root(proc_group &pg, unsigned rank, uct_env &env,
                    const peer_addrs &addrs, traffic_receiver &rx,
                    uct_o2m_mode_t mode, unsigned root)
{
    const unsigned nprocs = pg.size();
    uct_o2m_iface_attr_t oattr;
    ucs_status_t status;
    uct_ep_h ep = NULL; /* the root creates it first, then the others */

    CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
    const unsigned depth = oattr.fifo_depth;

    /* Small messages first (they fill the ring), then the size classes
     * (large ones from one root only, to keep the run short), then a
     * stream of more than 10x the ring depth */
    schedule_t sched = stream_schedule(depth + 1, oattr.max_short, root);
    append(sched, size_class_schedule(oattr.max_short, oattr.max_bcopy,
                                      root == (nprocs - 1)));
    append(sched, stream_schedule(12 * depth, oattr.max_short, root + 100));

    const uint64_t group_id = 0x100 + root;
    const uint64_t salt     = stream_salt(mode, nprocs, root);

    rx.expect(salt, (rank == root) ? NULL : &sched);

    /* Root first, receivers after it (the other order: bcast_attach) */
    if (rank == root) {
        ep = create_group_ep(env, addrs, group_id, nprocs, rank, root, root,
                             mode);
    }
    pg.barrier(rank);
    if (rank != root) {
        ep = create_group_ep(env, addrs, group_id, nprocs, rank, root, root,
                             mode);
    }
    pg.barrier(rank);

    if (rank == root) {
        traffic_sender tx(env, ep, AM_BASE, salt, &sched);
        unsigned i;

        tx.check_consumed(min_consumed(consumed_slots(pg), nprocs, root));

        /* Receivers do not progress yet: the ring takes exactly depth */
        for (i = 0; i < depth; ++i) {
            status = tx.post_next();
            CHILD_CHECK(status == UCS_OK, "root %u: message %u of an empty "
                        "ring of %u: %s", root, i, depth,
                        ucs_status_string(status));
        }
        status = tx.post_next();
        CHILD_CHECK(status == UCS_ERR_NO_RESOURCE, "root %u: send into a "
                    "full ring of %u returned %s", root, depth,
                    ucs_status_string(status));
        status = uct_ep_flush(ep, 0, NULL);
        CHILD_CHECK(status == UCS_INPROGRESS, "root %u: flush with %u "
                    "unconsumed messages returned %s", root, depth,
                    ucs_status_string(status));
        CHILD_CHECK(tx.add_pending(1), "pending_add on a full ring: BUSY");
        pg.barrier(rank); /* Receivers start */
        tx.wait_pending();

        /* A message longer than max_short is refused by am_short, and
         * invalid zcopy requests are refused, without consuming anything */
        std::vector<uint8_t> big(oattr.max_short + 1);
        {
            /* UCX's length check (when built with parameter checks) says
             * why in one line: at most that, kept out of the output */
            scoped_log_capture cap;

            status = uct_ep_am_short(ep, AM_BASE + MSG_SHORT, 0, big.data(),
                                     (unsigned)(oattr.max_short -
                                                sizeof(uint64_t) + 1));
            CHILD_CHECK(is_error(status), "am_short of max_short + 1 bytes "
                        "returned %s", ucs_status_string(status));
            CHILD_CHECK(cap.lines().size() <= 1, "%zu log lines:\n%s",
                        cap.lines().size(), cap.all().c_str());
        }

        /* Everything else, with a batch of 3 pending requests at the first
         * NO_RESOURCE */
        tx.send_until(sched.size(), 3);
        CHILD_CHECK(tx.pending_used() >= 1, "pending used %u times",
                    tx.pending_used());
        tx.flush();
        tx.wait_zcopy();
        tx.check_completions();
        pg.barrier(rank); /* All consumed */
    } else {
        pg.barrier(rank);
        rx.wait_all();
        pg.barrier(rank);
    }

    /* Nothing more, no duplicate */
    progress_for(env, 0.005);
    CHILD_CHECK(rx.complete(), "rank %u root %u: %zu messages instead of %zu",
                rank, root, rx.received(),
                (rank == root) ? (size_t)0 : sched.size());
    CHILD_CHECK(env.errors.empty(), "rank %u: %zu errors (first %s)", rank,
                env.errors.size(),
                env.errors.empty() ? "" :
                ucs_status_string(env.errors.front()));

    uct_ep_destroy(ep);
    pg.barrier(rank);
}

TEST_P(bcast_traffic, all_sizes_every_root)
{
    const uct_o2m_mode_t mode = std::get<0>(GetParam());
    const unsigned nprocs     = std::get<1>(GetParam());
    proc_group pg(nprocs);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast", small_ring_config());
        traffic_receiver rx(env, AM_BASE, "receiver");
        uct_o2m_iface_attr_t oattr;
        peer_addrs addrs;

        rx.publish(&consumed_slots(pg)[rank]);
        CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
        CHILD_CHECK(oattr.fifo_depth == 8, "fifo_depth %u", oattr.fifo_depth);
        CHILD_CHECK(oattr.is_incast == 0, "is_incast %d", oattr.is_incast);
        CHILD_CHECK(oattr.max_short == env.attr().cap.am.max_short,
                    "max_short %zu vs %zu", oattr.max_short,
                    env.attr().cap.am.max_short);
        CHILD_CHECK(oattr.max_bcopy == env.attr().cap.am.max_bcopy,
                    "max_bcopy %zu vs %zu", oattr.max_bcopy,
                    env.attr().cap.am.max_bcopy);
        CHILD_CHECK(oattr.max_zcopy == env.attr().cap.am.max_zcopy,
                    "max_zcopy %zu vs %zu", oattr.max_zcopy,
                    env.attr().cap.am.max_zcopy);
        CHILD_CHECK(oattr.max_zcopy >= (4u << 20), "max_zcopy %zu",
                    oattr.max_zcopy);

        addrs.exchange(pg, rank, env);
        for (unsigned root = 0; root < nprocs; ++root) {
            bcast_one_root(pg, rank, env, addrs, rx, mode, root);
        }
    }, 120);
}

std::string traffic_param_name(
        const ::testing::TestParamInfo<traffic_param_t> &info)
{
    return std::string(uct_o2m_mode_name(std::get<0>(info.param))) + "_np" +
           std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(modes, bcast_traffic,
                         ::testing::Combine(
                                 ::testing::ValuesIn(bcast_modes),
                                 ::testing::Range(2u, 9u)),
                         traffic_param_name);


/*
 * Concurrent groups on the same interfaces, interleaved traffic:
 *   A: id 0xA, ranks 0..3, root rank 0, BATCHED
 *   B: id 0xB, ranks 0..3, root rank 1, CENTRALIZED
 *   C: id 0xC, ranks 0..3, root rank 0 (a second group of A's root),
 *      CENTRALIZED
 *   D: id 0xA (the same id as A, on another root), ranks 3, 2, 0 as
 *      members 0, 1, 2, root rank 3, BATCHED
 */
struct group_def {
    uint64_t              id;
    uct_o2m_mode_t        mode;
    std::vector<unsigned> ranks; /* member index -> rank; [0] is the root */
    uint8_t               am_base;
};

TEST(bcast_concurrent, four_groups_interleaved)
{
    shm_residue_check shm;
    proc_group pg(4);

    pg.run_ok([&](unsigned rank) {
        const std::vector<group_def> groups = {
            {0xA, UCT_O2M_MODE_BATCHED,     {0, 1, 2, 3}, 16},
            {0xB, UCT_O2M_MODE_CENTRALIZED, {1, 0, 2, 3}, 20},
            {0xC, UCT_O2M_MODE_CENTRALIZED, {0, 3, 1, 2}, 24},
            {0xA, UCT_O2M_MODE_BATCHED,     {3, 2, 0},    28}
        };
        uct_env env("sm_bcast", small_ring_config());
        uct_o2m_iface_attr_t oattr;
        peer_addrs addrs;

        CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
        addrs.exchange(pg, rank, env);

        std::vector<schedule_t> scheds;
        std::vector<uct_ep_h> eps(groups.size(), NULL);
        std::vector<std::unique_ptr<traffic_sender>> txs;
        std::vector<std::unique_ptr<traffic_receiver>> rxs;

        for (unsigned g = 0; g < groups.size(); ++g) {
            scheds.push_back(stream_schedule(150, oattr.max_short, g + 7));
            if (g == 1) {
                scheds.back().push_back(msg_zcopy(1 << 20, 8, 4));
                append(scheds.back(),
                       stream_schedule(20, oattr.max_short, 99));
            }
        }

        /* Roots first, then the members */
        for (int pass = 0; pass < 2; ++pass) {
            for (unsigned g = 0; g < groups.size(); ++g) {
                const group_def &gd = groups[g];
                auto it = std::find(gd.ranks.begin(), gd.ranks.end(), rank);
                if (it == gd.ranks.end()) {
                    continue;
                }
                unsigned index = it - gd.ranks.begin();
                if ((index == 0) != (pass == 0)) {
                    continue;
                }
                eps[g] = create_group_ep(env, addrs, gd.id, gd.ranks.size(),
                                         index, 0, gd.ranks[0], gd.mode);
            }
            pg.barrier(rank);
        }

        for (unsigned g = 0; g < groups.size(); ++g) {
            uint64_t salt = stream_salt(g, groups[g].id, 77);
            if (eps[g] == NULL) {
                continue;
            }
            if (groups[g].ranks[0] == rank) {
                txs.emplace_back(new traffic_sender(env, eps[g],
                                                    groups[g].am_base, salt,
                                                    &scheds[g]));
            } else {
                rxs.emplace_back(new traffic_receiver(env, groups[g].am_base,
                                                      "group"));
                rxs.back()->expect(salt, &scheds[g]);
            }
        }

        /* Round robin: one attempt per sender, then progress */
        double end = now_sec() + wait_timeout;
        for (;;) {
            bool busy = false;
            for (auto &tx : txs) {
                if (!tx->done()) {
                    ucs_status_t status = tx->post_next();
                    CHILD_CHECK((status == UCS_OK) ||
                                (status == UCS_ERR_NO_RESOURCE),
                                "send: %s", ucs_status_string(status));
                    busy = true;
                }
            }
            for (auto &rx : rxs) {
                busy = busy || !rx->complete();
            }
            if (!busy) {
                break;
            }
            CHILD_CHECK(now_sec() < end, "rank %u: traffic of 4 groups did "
                        "not finish in %.0f s", rank, wait_timeout);
            progress_once(env);
        }

        for (auto &tx : txs) {
            tx->flush();
            tx->wait_zcopy();
            tx->check_completions();
        }
        pg.barrier(rank);
        progress_for(env, 0.005);
        for (auto &rx : rxs) {
            CHILD_CHECK(rx->complete(), "extra messages: %zu",
                        rx->received());
        }
        CHILD_CHECK(env.errors.empty(), "%zu errors", env.errors.size());
        txs.clear();
        for (uct_ep_h ep : eps) {
            if (ep != NULL) {
                uct_ep_destroy(ep);
            }
        }
        pg.barrier(rank);
    }, 120);
}


/*
 * Members that create their endpoint before the root created the group
 * (the attach is retried from progress), a member that creates it after
 * the root already sent, and the root index in the middle.
 */
class bcast_attach : public ::testing::TestWithParam<uct_o2m_mode_t> {
protected:
    shm_residue_check m_shm;
};

TEST_P(bcast_attach, before_and_after_root)
{
    const uct_o2m_mode_t mode = GetParam();
    const unsigned nprocs     = 4;
    proc_group pg(nprocs);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast", small_ring_config());
        traffic_receiver rx(env, AM_BASE, "receiver");
        uct_o2m_iface_attr_t oattr;
        peer_addrs addrs;
        uct_ep_h ep = NULL;

        CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
        addrs.exchange(pg, rank, env);
        rx.publish(&consumed_slots(pg)[rank]);

        for (unsigned root : {0u, 2u}) {
            const unsigned early = (root + 1) % nprocs; /* before the root */
            const unsigned late  = (root + 3) % nprocs; /* after it sent */
            const unsigned depth = oattr.fifo_depth;
            schedule_t sched     = stream_schedule(12 * depth,
                                                   oattr.max_short, root);
            const uint64_t salt  = stream_salt(root, mode, 5);
            const uint64_t gid   = 0x5000 + root;

            rx.expect(salt, (rank == root) ? NULL : &sched);

            /* 1. the early member (and the middle one) before the root */
            if ((rank != root) && (rank != late)) {
                ep = create_group_ep(env, addrs, gid, nprocs, rank, root,
                                     root, mode);
                progress_for(env, 0.02);
                CHILD_CHECK(rx.received() == 0, "received before the root");
                CHILD_CHECK(env.errors.empty(), "error before the root");
                CHILD_CHECK(uct_ep_flush(ep, 0, NULL) == UCS_OK,
                            "receiver flush");
            }
            pg.barrier(rank);

            /* 2. the root creates and sends what fits (depth - 1) */
            std::unique_ptr<traffic_sender> tx;
            if (rank == root) {
                ep = create_group_ep(env, addrs, gid, nprocs, rank, root,
                                     root, mode);
                tx.reset(new traffic_sender(env, ep, AM_BASE, salt, &sched));
                tx->check_consumed(min_consumed(consumed_slots(pg), nprocs,
                                                root));
                for (unsigned i = 0; i + 1 < depth; ++i) {
                    CHILD_CHECK(tx->post_next() == UCS_OK, "send %u", i);
                }
            }
            pg.barrier(rank);

            /* 3. the late member joins and gets everything from message 0 */
            if (rank == late) {
                ep = create_group_ep(env, addrs, gid, nprocs, rank, root,
                                     root, mode);
            }
            (void)early;

            if (rank == root) {
                tx->send_until(sched.size(), 2);
                tx->flush();
                tx->wait_zcopy();
                tx->check_completions();
            } else {
                rx.wait_all();
            }
            pg.barrier(rank);

            progress_for(env, 0.005);
            CHILD_CHECK(rx.complete(), "duplicates");
            CHILD_CHECK(env.errors.empty(), "%zu errors", env.errors.size());
            tx.reset();
            uct_ep_destroy(ep);
            pg.barrier(rank);
        }
    }, 60);
}

INSTANTIATE_TEST_SUITE_P(modes, bcast_attach,
                         ::testing::ValuesIn(bcast_modes), mode_param_name);


/*
 * Bad input
 */
uct_o2m_group_params_t group_params(uint64_t id, unsigned size,
                                    unsigned my_index, unsigned root_index)
{
    uct_o2m_group_params_t params;

    memset(&params, 0, sizeof(params));
    params.group_id   = id;
    params.size       = size;
    params.my_index   = my_index;
    params.root_index = root_index;
    return params;
}

ucs_status_t try_create(uct_iface_h iface, const uct_o2m_group_params_t &p)
{
    uct_ep_h ep         = NULL;
    ucs_status_t status = uct_o2m_ep_create(iface, &p, &ep);

    if (status == UCS_OK) {
        uct_ep_destroy(ep);
    }
    return status;
}

#define EXPECT_CREATE(_expected, _iface, _params) \
    do { \
        ucs_status_t _s = try_create(_iface, _params); \
        CHILD_CHECK(_s == (_expected), "%s: got %s, expected %s", \
                    #_params, ucs_status_string(_s), \
                    ucs_status_string(_expected)); \
    } while (0)

/* An interface of UCX's own "self" transport */
struct self_iface : public uct_md_env {
    uct_iface_h iface = NULL;

    self_iface() : uct_md_env("self")
    {
        uct_iface_config_t *config;
        uct_iface_params_t params;
        uct_tl_resource_desc_t *resources;
        unsigned num_res;

        CHILD_CHECK_OK(uct_md_query_tl_resources(m_md, &resources,
                                                 &num_res));
        CHILD_CHECK(num_res > 0, "no self resource");
        config = iface_config(resources[0].tl_name);
        memset(&params, 0, sizeof(params));
        params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                      UCT_IFACE_PARAM_FIELD_DEVICE;
        params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
        params.mode.device.tl_name  = resources[0].tl_name;
        params.mode.device.dev_name = resources[0].dev_name;
        CHILD_CHECK_OK(uct_iface_open(m_md, m_worker, &params, config,
                                      &iface));
        uct_config_release(config);
        uct_release_tl_resource_list(resources);
    }

    ~self_iface()
    {
        uct_iface_close(iface);
    }
};

/*
 * uct_o2m_ep_rx_watch (API 1.8): a member's word changes when the root
 * sends, then reads BUSY until progress delivers the message, and watches
 * the next message after; the root, a NULL endpoint and a point-to-point
 * endpoint have no word.  Both modes.
 */
class bcast_rx_watch : public ::testing::TestWithParam<uct_o2m_mode_t> {
protected:
    shm_residue_check m_shm;
};

TEST_P(bcast_rx_watch, member)
{
    const uct_o2m_mode_t mode = GetParam();
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        const uint64_t group_id = 0x51;
        uct_env env("sm_bcast");
        uct_o2m_iface_attr_t oattr;
        uct_o2m_rx_watch_t watch;
        uct_ep_h ep = NULL, p2p_ep = NULL;
        peer_addrs addrs;
        double end;

        CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
        addrs.exchange(pg, rank, env);
        const schedule_t sched = stream_schedule(2, oattr.max_short, 3);
        const uint64_t salt    = stream_salt(mode, group_id, 5);

        if (rank == 0) {
            ep = create_group_ep(env, addrs, group_id, 2, 0, 0, 0, mode);
        }
        pg.barrier(rank);
        if (rank == 1) {
            ep = create_group_ep(env, addrs, group_id, 2, 1, 0, 0, mode);
            CHILD_CHECK(env.progress_until([&]() {
                            return uct_o2m_ep_state(ep, NULL) ==
                                   UCT_O2M_EP_STATE_READY;
                        }), "the member did not join");
        }

        if (rank == 0) {
            CHILD_CHECK(uct_o2m_ep_rx_watch(ep, &watch) ==
                        UCS_ERR_UNSUPPORTED, "the root has a word");
            CHILD_CHECK(uct_o2m_ep_rx_watch(NULL, &watch) ==
                        UCS_ERR_UNSUPPORTED, "a NULL endpoint has a word");
            p2p_ep = create_p2p_ep(env, addrs, 1);
            CHILD_CHECK(uct_o2m_ep_rx_watch(p2p_ep, &watch) ==
                        UCS_ERR_UNSUPPORTED,
                        "a point-to-point endpoint has a word");
            uct_ep_destroy(p2p_ep);

            traffic_sender tx(env, ep, AM_BASE, salt, &sched);
            pg.barrier(rank); /* the member watches */
            tx.send_next();
            pg.barrier(rank); /* it saw the word change, took the message */
            tx.send_next();
            tx.flush();
            pg.barrier(rank);
        } else {
            traffic_receiver rx(env, AM_BASE, "member");
            rx.expect(salt, &sched);

            CHILD_CHECK_OK(uct_o2m_ep_rx_watch(ep, &watch));
            CHILD_CHECK(!uct_o2m_rx_watch_changed(&watch),
                        "the word changed before anything was sent");
            pg.barrier(rank);

            /* no progress: only the root's send changes the word */
            end = now_sec() + wait_timeout;
            while (!uct_o2m_rx_watch_changed(&watch)) {
                CHILD_CHECK(now_sec() < end, "the word did not change in "
                            "%.0f s", wait_timeout);
                sched_yield();
            }
            CHILD_CHECK(uct_o2m_ep_rx_watch(ep, &watch) == UCS_ERR_BUSY,
                        "a sent message is not reported ready");
            CHILD_CHECK(rx.received() == 0, "delivered without progress");
            CHILD_CHECK(env.progress_until([&]() {
                            return rx.received() == 1;
                        }), "the message was not delivered");
            CHILD_CHECK_OK(uct_o2m_ep_rx_watch(ep, &watch));
            CHILD_CHECK(!uct_o2m_rx_watch_changed(&watch),
                        "the word of the next message changed");
            pg.barrier(rank);

            CHILD_CHECK(env.progress_until([&]() { return rx.complete(); }),
                        "the second message was not delivered");
            pg.barrier(rank);
        }

        CHILD_CHECK(env.errors.empty(), "%zu errors", env.errors.size());
        uct_ep_destroy(ep);
        pg.barrier(rank);
    }, 60);
}

INSTANTIATE_TEST_SUITE_P(modes, bcast_rx_watch,
                         ::testing::Values(UCT_O2M_MODE_BATCHED,
                                           UCT_O2M_MODE_CENTRALIZED));


TEST(bcast_bad_input, parameters)
{
    shm_residue_check shm;
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast", {{"FIFO_SIZE", "5"}, {"MAX_MEMBERS", "4"},
                                 {"MAX_GROUPS", "3"}});
        traffic_receiver rx(env, AM_BASE, "receiver");
        uct_iface_h iface = env.iface();
        uct_o2m_iface_attr_t oattr;
        uct_o2m_group_params_t p;
        peer_addrs addrs;
        ucs_status_t status;
        uct_ep_h ep = NULL, ep2;

        CHILD_CHECK_OK(uct_o2m_iface_query(iface, &oattr));
        CHILD_CHECK(oattr.fifo_depth == 8, "FIFO_SIZE 5 -> depth %u",
                    oattr.fifo_depth);
        CHILD_CHECK(oattr.max_members == 4, "max_members %u",
                    oattr.max_members);
        CHILD_CHECK(oattr.max_groups == 3, "max_groups %u", oattr.max_groups);
        addrs.exchange(pg, rank, env);

        if (rank == 0) {
            /* Invalid size / index / mode / op */
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface,
                          group_params(1, 0, 0, 0));
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface,
                          group_params(1, 1, 0, 0));
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface,
                          group_params(1, 2, 2, 2));
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface,
                          group_params(1, 2, 0, 2));
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface,
                          group_params(1, 3, 3, 0));
            EXPECT_CREATE(UCS_ERR_EXCEEDS_LIMIT, iface,
                          group_params(1, 5, 0, 0));
            EXPECT_CREATE(UCS_ERR_EXCEEDS_LIMIT, iface,
                          group_params(1, 129, 0, 0));

            p            = group_params(1, 2, 0, 0);
            p.field_mask = UCT_O2M_GROUP_FIELD_MODE;
            p.mode       = UCT_O2M_MODE_LOCKED;
            EXPECT_CREATE(UCS_ERR_UNSUPPORTED, iface, p);
            p.mode       = UCT_O2M_MODE_ATOMIC;
            EXPECT_CREATE(UCS_ERR_UNSUPPORTED, iface, p);
            p.mode       = UCT_O2M_MODE_LAST;
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface, p);
            p.mode       = (uct_o2m_mode_t)1000;
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface, p);

            p            = group_params(1, 2, 0, 0);
            p.field_mask = UCT_O2M_GROUP_FIELD_OP;
            p.op         = UCT_O2M_OP_SUM;
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface, p);

            /* Not an o2m interface, or NULL arguments */
            p = group_params(1, 2, 0, 0);
            {
                self_iface other;
                uct_o2m_iface_attr_t a;

                status = uct_o2m_ep_create(other.iface, &p, &ep2);
                CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                            "ep_create on a self iface: %s",
                            ucs_status_string(status));
                status = uct_o2m_iface_query(other.iface, &a);
                CHILD_CHECK(status == UCS_ERR_INVALID_PARAM,
                            "iface_query on a self iface: %s",
                            ucs_status_string(status));
            }
            CHILD_CHECK(uct_o2m_ep_create(NULL, &p, &ep2) ==
                        UCS_ERR_INVALID_PARAM, "NULL iface");
            CHILD_CHECK(uct_o2m_ep_create(iface, NULL, &ep2) ==
                        UCS_ERR_INVALID_PARAM, "NULL params");
            CHILD_CHECK(uct_o2m_ep_create(iface, &p, NULL) ==
                        UCS_ERR_INVALID_PARAM, "NULL ep_p");
            CHILD_CHECK(uct_o2m_iface_query(NULL, &oattr) ==
                        UCS_ERR_INVALID_PARAM, "query NULL iface");

            /* Non-root without the root's address */
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface,
                          group_params(1, 2, 1, 0));
            p                 = group_params(1, 2, 1, 0);
            p.field_mask      = UCT_O2M_GROUP_FIELD_ROOT_ADDR;
            p.root_iface_addr = NULL;
            EXPECT_CREATE(UCS_ERR_INVALID_PARAM, iface, p);

            /* Duplicate id on the same root; MAX_GROUPS */
            ep = create_group_ep(env, addrs, 0x77, 2, 0, 0, 0,
                                 UCT_O2M_MODE_BATCHED);
            status = UCS_OK;
            ep2    = create_group_ep(env, addrs, 0x77, 2, 0, 0, 0,
                                     UCT_O2M_MODE_CENTRALIZED, &status);
            CHILD_CHECK(status == UCS_ERR_ALREADY_EXISTS, "duplicate group "
                        "id: %s", ucs_status_string(status));
            uct_ep_h g2 = create_group_ep(env, addrs, 0x78, 2, 0, 0, 0,
                                          UCT_O2M_MODE_BATCHED);
            uct_ep_h g3 = create_group_ep(env, addrs, 0x79, 3, 1, 1, 0,
                                          UCT_O2M_MODE_BATCHED);
            ep2 = create_group_ep(env, addrs, 0x7a, 2, 0, 0, 0,
                                  UCT_O2M_MODE_BATCHED, &status);
            CHILD_CHECK(status == UCS_ERR_EXCEEDS_LIMIT, "4th group with "
                        "MAX_GROUPS 3: %s", ucs_status_string(status));
            uct_ep_destroy(g2);
            ep2 = create_group_ep(env, addrs, 0x7a, 2, 0, 0, 0,
                                  UCT_O2M_MODE_BATCHED);
            uct_ep_destroy(ep2);
            uct_ep_destroy(g3);
            /* A destroyed group's id can be used again */
            ep2 = create_group_ep(env, addrs, 0x78, 2, 0, 0, 0,
                                  UCT_O2M_MODE_BATCHED);
            uct_ep_destroy(ep2);
        }
        pg.barrier(rank);

        if (rank == 1) {
            /* Parameters that differ from the root's */
            ep2 = create_group_ep(env, addrs, 0x77, 2, 1, 0, 0,
                                  UCT_O2M_MODE_CENTRALIZED, &status);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "mode mismatch: %s",
                        ucs_status_string(status));
            ep2 = create_group_ep(env, addrs, 0x77, 3, 1, 0, 0,
                                  UCT_O2M_MODE_BATCHED, &status);
            CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "size mismatch: %s",
                        ucs_status_string(status));

            /* An address that is no o2m interface */
            std::vector<char> bogus(addrs.iface[0]);
            int32_t pid = 0x7ffffff0;
            memcpy(bogus.data(), &pid, sizeof(pid));
            p                 = group_params(0x77, 2, 1, 0);
            p.field_mask      = UCT_O2M_GROUP_FIELD_ROOT_ADDR;
            p.root_iface_addr = (const uct_iface_addr_t*)bogus.data();
            status = try_create(iface, p);
            CHILD_CHECK(is_error(status), "bogus root address: %s",
                        ucs_status_string(status));

            ep = create_group_ep(env, addrs, 0x77, 2, 1, 0, 0,
                                 UCT_O2M_MODE_BATCHED);

            /* A receiver does not send */
            uint64_t word = 0;
            status = uct_ep_am_short(ep, AM_BASE, 0, &word, sizeof(word));
            CHILD_CHECK(is_error(status), "am_short on a receiver: %s",
                        ucs_status_string(status));
            ssize_t len = uct_ep_am_bcopy(ep, AM_BASE, [](void *dest,
                                                           void *arg) {
                return (size_t)0;
            }, NULL, 0);
            CHILD_CHECK((len < 0) && is_error((ucs_status_t)len),
                        "am_bcopy on a receiver: %zd", len);
            uct_iov_t iov = {&word, sizeof(word), UCT_MEM_HANDLE_NULL, 0, 1};
            status = uct_ep_am_zcopy(ep, AM_BASE, NULL, 0, &iov, 1, 0, NULL);
            CHILD_CHECK(is_error(status), "am_zcopy on a receiver: %s",
                        ucs_status_string(status));
        }
        pg.barrier(rank);

        /* The group works after all that */
        schedule_t sched = {msg_short(3), msg_bcopy(100), msg_zcopy(20000)};
        rx.expect(42, (rank == 0) ? NULL : &sched);
        if (rank == 0) {
            traffic_sender tx(env, ep, AM_BASE, 42, &sched);
            std::vector<uint8_t> buf(16);
            uct_iov_t iov[17];

            /* Invalid zcopy requests are refused */
            for (auto &v : iov) {
                v = {buf.data(), 1, UCT_MEM_HANDLE_NULL, 0, 1};
            }
            status = uct_ep_am_zcopy(ep, AM_BASE, NULL, 0, iov, 17, 0, NULL);
            CHILD_CHECK(is_error(status), "zcopy with 17 iovs: %s",
                        ucs_status_string(status));
            std::vector<uint8_t> hdr(oattr.max_short);
            status = uct_ep_am_zcopy(ep, AM_BASE, hdr.data(),
                                     env.attr().cap.am.max_hdr + 1, iov, 1, 0,
                                     NULL);
            CHILD_CHECK(is_error(status), "zcopy with a %zu-byte header: %s",
                        env.attr().cap.am.max_hdr + 1,
                        ucs_status_string(status));
            iov[0].length = oattr.max_zcopy + 1; /* never read */
            status = uct_ep_am_zcopy(ep, AM_BASE, NULL, 0, iov, 1, 0, NULL);
            CHILD_CHECK(is_error(status), "zcopy of max_zcopy + 1: %s",
                        ucs_status_string(status));

            tx.send_until(sched.size());
            tx.flush();
            tx.wait_zcopy();
            tx.check_completions();
        } else {
            rx.wait_all();
        }
        pg.barrier(rank);
        progress_for(env, 0.005);
        CHILD_CHECK(rx.complete(), "extra messages");
        uct_ep_destroy(ep);
        pg.barrier(rank);
    }, 60);
}


/*
 * Failures: kill -9 of a receiver or of the root, members that never join
 */
class bcast_failure : public ::testing::TestWithParam<uct_o2m_mode_t> {
protected:
    shm_residue_check m_shm;
};

struct kill_shared {
    volatile int    victim_ready;
    volatile int    killed;
    volatile double kill_time;
};

/* Bound on noticing a dead member with CHECK_INTERVAL=10ms */
const double DETECT_TIMEOUT = 3.0;

/* Every rank's endpoint of group @a id of all the children, rooted at 0:
 * the root creates its endpoint first */
uct_ep_h create_group_root_first(proc_group &pg, unsigned rank, uct_env &env,
                                 const peer_addrs &addrs, uint64_t id,
                                 uct_o2m_mode_t mode)
{
    uct_ep_h ep = NULL;

    if (rank == 0) {
        ep = create_group_ep(env, addrs, id, pg.size(), 0, 0, 0, mode);
    }
    pg.barrier(rank);
    if (rank != 0) {
        ep = create_group_ep(env, addrs, id, pg.size(), rank, 0, 0, mode);
    }
    return ep;
}

/*
 * A survivor: progress until this process sees an error; rank @a killer
 * kills rank @a victim once it is ready (the kill is published first: the
 * others may notice at once).  The error must come after the kill, and
 * within DETECT_TIMEOUT of it.
 */
void wait_error_after_kill(proc_group &pg, unsigned rank, uct_env &env,
                           kill_shared *sh, unsigned killer, unsigned victim,
                           const std::function<size_t()> &received)
{
    bool ok = progress_wait(env, [&]() {
        if ((rank == killer) && sh->victim_ready && !sh->killed) {
            sh->kill_time = now_sec();
            __atomic_store_n(&sh->killed, 1, __ATOMIC_SEQ_CST);
            CHILD_CHECK(kill(pg.pids()[victim], SIGKILL) == 0, "kill");
        }
        return !env.errors.empty();
    });
    CHILD_CHECK(ok, "rank %u: no error in %.0f s after rank %u's death "
                "(received %zu)", rank, wait_timeout, victim, received());
    CHILD_CHECK(sh->killed, "rank %u: error before the kill", rank);
    CHILD_CHECK(now_sec() - sh->kill_time < DETECT_TIMEOUT,
                "rank %u: rank %u's death noticed after %.2f s", rank,
                victim, now_sec() - sh->kill_time);
}

/* The part of a kill test that differs: what each rank does once the group
 * exists, with the schedule the root sends */
typedef std::function<void(proc_group &pg, unsigned rank, uct_env &env,
                           traffic_receiver &rx, kill_shared *sh,
                           uct_ep_h ep, const schedule_t &sched)>
        kill_fn;

/*
 * A group @a id of 4 processes rooted at 0 over sm_bcast (failure_config(),
 * @a mode): the members expect the messages of @a make_sched (seed @a seed);
 * once every endpoint exists, @a fn runs in each process.  Every child must
 * exit with success but @a victim, killed.
 */
void run_kill_test(uct_o2m_mode_t mode, unsigned victim, uint64_t id,
                   unsigned seed,
                   const std::function<schedule_t(size_t max_short)>
                           &make_sched,
                   const kill_fn &fn)
{
    proc_group pg(4);
    kill_shared *sh = static_cast<kill_shared*>(pg.shared());

    std::vector<int> status = pg.run([&](unsigned rank) {
        uct_env env("sm_bcast", failure_config());
        traffic_receiver rx(env, AM_BASE, "receiver");
        uct_o2m_iface_attr_t oattr;
        peer_addrs addrs;
        uct_ep_h ep;

        CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
        addrs.exchange(pg, rank, env);
        schedule_t sched = make_sched(oattr.max_short);
        rx.expect(seed, (rank == 0) ? NULL : &sched);

        ep = create_group_root_first(pg, rank, env, addrs, id, mode);
        pg.barrier(rank); /* The last barrier: the victim dies after it */
        fn(pg, rank, env, rx, sh, ep, sched);
    }, 60);

    expect_only_killed(status, victim);
}

TEST_P(bcast_failure, kill_receiver)
{
    auto make_sched = [](size_t max_short) {
        return stream_schedule(100000, max_short, 3);
    };

    run_kill_test(GetParam(), 3, 0x99, 9, make_sched,
                  [&](proc_group &pg, unsigned rank, uct_env &env,
                      traffic_receiver &rx, kill_shared *sh, uct_ep_h ep,
                      const schedule_t &sched) {
        if (rank == 0) {
            traffic_sender tx(env, ep, AM_BASE, 9, &sched);
            ucs_status_t st = UCS_OK;
            double end      = now_sec() + wait_timeout;

            /* Send until the group fails */
            while (!tx.done()) {
                st = tx.post_next();
                if (is_error(st)) {
                    break;
                }
                CHILD_CHECK(now_sec() < end, "no error after %zu messages "
                            "in %.0f s (victim killed: %d)", tx.next(),
                            wait_timeout, sh->killed);
                if (st == UCS_ERR_NO_RESOURCE) {
                    progress_once(env);
                }
            }
            double detected = now_sec();
            CHILD_CHECK(sh->killed, "send failed (%s) before the kill",
                        ucs_status_string(st));
            CHILD_CHECK(detected - sh->kill_time < DETECT_TIMEOUT,
                        "dead receiver noticed after %.2f s",
                        detected - sh->kill_time);
            CHILD_CHECK(st == UCS_ERR_CONNECTION_RESET, "send: %s",
                        ucs_status_string(st));
            CHILD_CHECK(has_error(env, UCS_ERR_CONNECTION_RESET),
                        "root: error handler not called (%zu calls)",
                        env.errors.size());

            /* Later operations fail too, zcopy completions all fired */
            CHILD_CHECK(is_error(uct_ep_flush(ep, 0, NULL)), "flush");
            CHILD_CHECK(is_error(tx.post_next()), "send after failure");
            progress_for(env, 0.01);
            tx.check_completions(true);
            CHILD_CHECK(tx.zcopy_count() > 0, "no zcopy was sent");
            uct_ep_destroy(ep);
        } else if (rank == 3) {
            rx.wait_count(20);
            sh->victim_ready = 1;
            sleep(60); /* Killed here */
            CHILD_CHECK(0, "victim was not killed");
        } else {
            /* Receive until the group fails */
            wait_error_after_kill(pg, rank, env, sh, 2, 3,
                                  [&]() { return rx.received(); });
            CHILD_CHECK(is_error(uct_ep_flush(ep, 0, NULL)), "flush");
            uct_ep_destroy(ep);
        }
    });
}

TEST_P(bcast_failure, kill_root)
{
    auto make_sched = [](size_t max_short) {
        schedule_t s = stream_schedule(40, max_short, 4);
        s.push_back(msg_zcopy(1 << 20, 0, 2));
        return s;
    };

    run_kill_test(GetParam(), 0, 0x98, 11, make_sched,
                  [&](proc_group &pg, unsigned rank, uct_env &env,
                      traffic_receiver &rx, kill_shared *sh, uct_ep_h ep,
                      const schedule_t &sched) {
        if (rank == 0) {
            traffic_sender tx(env, ep, AM_BASE, 11, &sched);

            tx.send_until(sched.size());
            tx.flush();
            sh->victim_ready = 1;
            sleep(60); /* Killed here */
            CHILD_CHECK(0, "root was not killed");
        } else {
            rx.wait_all();
            wait_error_after_kill(pg, rank, env, sh, 1, 0,
                                  [&]() { return rx.received(); });
            CHILD_CHECK(has_error(env, UCS_ERR_CONNECTION_RESET),
                        "rank %u: error %s", rank,
                        ucs_status_string(env.errors.front()));
            CHILD_CHECK(is_error(uct_ep_flush(ep, 0, NULL)), "flush");
            CHILD_CHECK(rx.complete(), "messages after the end");
            uct_ep_destroy(ep);
        }
    });
}

/* A member that never creates its endpoint: the root fails with
 * UCS_ERR_TIMED_OUT after PEER_TIMEOUT, and so do the other members */
TEST_P(bcast_failure, member_never_joins)
{
    const uct_o2m_mode_t mode = GetParam();
    proc_group pg(3);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast", {{"FIFO_SIZE", "8"},
                                 {"CHECK_INTERVAL", "10ms"},
                                 {"PEER_TIMEOUT", "300ms"}});
        traffic_receiver rx(env, AM_BASE, "receiver");
        uct_o2m_iface_attr_t oattr;
        peer_addrs addrs;
        uct_ep_h ep = NULL;

        CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &oattr));
        addrs.exchange(pg, rank, env);
        schedule_t sched = stream_schedule(1000, oattr.max_short, 5);
        rx.expect(13, &sched);

        if (rank < 2) {
            ep = create_group_ep(env, addrs, 0x97, 3, rank, 0, 0, mode);
        }
        double start = now_sec();

        if (rank == 0) {
            traffic_sender tx(env, ep, AM_BASE, 13, &sched);
            ucs_status_t st = UCS_OK;

            while (!tx.done() && !is_error(st)) {
                st = tx.post_next();
                CHILD_CHECK(now_sec() - start < 5, "no error in 5 s");
                if (st == UCS_ERR_NO_RESOURCE) {
                    progress_once(env);
                }
            }
            CHILD_CHECK(st == UCS_ERR_TIMED_OUT, "send: %s",
                        ucs_status_string(st));
            CHILD_CHECK(tx.next() <= oattr.fifo_depth, "%zu messages went "
                        "out with a member missing", tx.next());
            CHILD_CHECK(now_sec() - start >= 0.25, "timed out after %.3f s, "
                        "before PEER_TIMEOUT", now_sec() - start);
            CHILD_CHECK(has_error(env, UCS_ERR_TIMED_OUT), "error handler");
        } else if (rank == 1) {
            bool ok = progress_wait(env, [&]() {
                return !env.errors.empty();
            }, 5);
            CHILD_CHECK(ok, "the member saw no error");
            CHILD_CHECK(has_error(env, UCS_ERR_TIMED_OUT), "error %s",
                        ucs_status_string(env.errors.front()));
            CHILD_CHECK(rx.received() <= oattr.fifo_depth, "received %zu",
                        rx.received());
        }
        pg.barrier(rank);
        if (ep != NULL) {
            uct_ep_destroy(ep);
        }
        pg.barrier(rank);
    }, 60);
}

/* A member whose root never creates the group fails after PEER_TIMEOUT */
TEST_P(bcast_failure, root_never_creates)
{
    const uct_o2m_mode_t mode = GetParam();
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast", {{"CHECK_INTERVAL", "10ms"},
                                 {"PEER_TIMEOUT", "300ms"}});
        peer_addrs addrs;
        uct_ep_h ep;

        addrs.exchange(pg, rank, env);
        if (rank == 1) {
            double start = now_sec();
            ep = create_group_ep(env, addrs, 0x96, 2, 1, 0, 0, mode);
            bool ok = progress_wait(env, [&]() {
                return !env.errors.empty();
            }, 5);
            CHILD_CHECK(ok, "no error in 5 s");
            CHILD_CHECK(now_sec() - start >= 0.25, "failed after %.3f s",
                        now_sec() - start);
            CHILD_CHECK(has_error(env, UCS_ERR_TIMED_OUT), "error %s",
                        ucs_status_string(env.errors.front()));
            uct_ep_destroy(ep);
        }
        pg.barrier(rank);
    }, 60);
}

INSTANTIATE_TEST_SUITE_P(modes, bcast_failure,
                         ::testing::ValuesIn(bcast_modes), mode_param_name);

} // namespace
