/**
 * ucx-o2m tests: a root that cannot create a group segment (out of memory),
 * made so for real with a seccomp filter (memfd_create fails with ENOMEM in
 * the root's process only, after its interfaces are open) or with the fd
 * limit (EMFILE).
 *
 *  - sm_refused.root_out_of_memory/<tl>: the root's endpoint is created
 *    REFUSED with UCS_ERR_NO_MEMORY; a member that created its endpoint
 *    before the root learns it from progress (error handler, once), one
 *    that creates it after the root destroyed its own gets it at creation;
 *    every wait is bounded (before, the members waited forever).  The
 *    refusal stays listed until both members saw it, then the root's
 *    interface drops it.
 *  - sm_refused.bad_refusal: a refusal whose status (written by the root)
 *    is not an error code members can act on fails the members with
 *    UCS_ERR_INVALID_PARAM, at creation and from progress.
 *  - sm_refused.joining_state_peer_timeout: a fan-in member that waits for
 *    its group through uct_o2m_ep_state() is bounded by PEER_TIMEOUT.
 *  - sm_refused.seg_size_matches_created: uct_o2m_group_seg_size() is the
 *    size of the segment a root creates (what UCG's SM_GROUP_MEM counts).
 *  - sm_refused.fd_limit_then_same_id: memfd_create fails with EMFILE: the
 *    members get UCS_ERR_EXCEEDS_LIMIT; once the root has fds again, a new
 *    group with the same id works (its members are not told the old
 *    refusal).
 *  - ucg_coll_exhaustion.root_out_of_memory: in UCG, rank 0 cannot create
 *    any segment: bcast, allreduce, reduce, gather, scatter, allgather and
 *    barrier with every root give the right result on every member (the
 *    phases rooted at rank 0 run point-to-point on their set, the others
 *    stay host-local), on one host and on two virtual hosts.
 *  - ucg_sm_gate.fanin_order_while_joining: a collective waiting for its
 *    fan-in endpoint keeps its place in the fan-in order.
 */
#include "common/harness.h"
#include "common/uct_env.h"
#include "common/peers.h"
#include "common/residue.h"
#include "common/sandbox.h"
#include "common/ucg_harness.h"

extern "C" {
#include "o2m_group.h"
#include "ucg_group.h"
}

#include <sys/resource.h>
#include <sys/syscall.h>
#include <cstring>

using namespace o2m_test;

namespace {

class sm_refused : public ::testing::TestWithParam<const char*> {
protected:
    shm_residue_check m_shm;
};

class sm_refused_uct : public ::testing::Test {
protected:
    shm_residue_check m_shm;
};

void deny_memfd()
{
    CHILD_CHECK(deny_syscall(SYS_memfd_create, ENOMEM), "seccomp: %m");
}

ucs_status_t count_am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    ++*static_cast<unsigned*>(arg);
    return UCS_OK;
}

/* @a received counts what this process's interface receives (AM id 1);
 * once every rank knows every address: this rank's parameters of group
 * @a id of all the processes */
uct_o2m_group_params_t counting_member(proc_group &pg, unsigned rank,
                                       uct_env &env, unsigned *received,
                                       peer_addrs &addrs, uint64_t id)
{
    env.set_am_handler(1, count_am_cb, received);
    addrs.exchange(pg, rank, env);
    return addrs.group_params(id, pg.size(), rank);
}

/* The directory entry of @a group_id in our own interface, or NULL */
uct_o2m_dir_entry_t *own_dir_entry(const uct_env &env, uint64_t group_id)
{
    uct_o2m_iface_t *iface = ucs_derived_of(env.iface(), uct_o2m_iface_t);

    for (unsigned i = 0; i < iface->config.dir_entries; ++i) {
        if (iface->dir[i].in_use && (iface->dir[i].group_id == group_id)) {
            return &iface->dir[i];
        }
    }
    return NULL;
}

/* State of @a ep once it is no longer joining (bounded) */
uct_o2m_ep_state_t settled_state(uct_env &env, uct_ep_h ep,
                                 ucs_status_t *status)
{
    uct_o2m_ep_state_t state = UCT_O2M_EP_STATE_JOINING;

    env.progress_until([&] {
        state = uct_o2m_ep_state(ep, status);
        return state != UCT_O2M_EP_STATE_JOINING;
    });
    return state;
}

TEST_P(sm_refused, root_out_of_memory)
{
    const std::string tl = GetParam();
    const uint64_t id    = 0x7e0001;
    proc_group pg(3);

    pg.run_ok([&](unsigned rank) {
        uct_env env(tl, {{"CHECK_INTERVAL", "10ms"}});
        uct_o2m_group_params_t params;
        uct_o2m_ep_state_t state;
        unsigned received = 0;
        ucs_status_t status;
        peer_addrs addrs;
        uct_ep_h ep;

        params = counting_member(pg, rank, env, &received, addrs, id);
        if (rank == 0) {
            deny_memfd(); /* the interface is open: only the group fails */
        }
        pg.barrier(rank);

        /* Member 1 looks for the group before the root created it */
        if (rank == 1) {
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
            CHILD_CHECK(uct_o2m_ep_state(ep, NULL) ==
                        UCT_O2M_EP_STATE_JOINING, "joined a group that "
                        "was never created");
        }
        pg.barrier(rank);

        if (rank == 0) {
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
            state = uct_o2m_ep_state(ep, &status);
            CHILD_CHECK((state == UCT_O2M_EP_STATE_REFUSED) &&
                        (status == UCS_ERR_NO_MEMORY), "root: state %d, %s",
                        state, ucs_status_string(status));
            CHILD_CHECK(uct_ep_am_short(ep, 1, 0, NULL, 0) ==
                        UCS_ERR_NO_MEMORY, "root sends on a refused group");
            CHILD_CHECK(own_dir_entry(env, id) != NULL, "no refusal listed");
        } else if (rank == 1) {
            /* Learnt from progress, in bounded time, reported once */
            state = settled_state(env, ep, &status);
            CHILD_CHECK((state == UCT_O2M_EP_STATE_REFUSED) &&
                        (status == UCS_ERR_NO_MEMORY), "member 1: state %d, "
                        "%s", state, ucs_status_string(status));
            env.progress_until([] { return false; }, 0.1);
            CHILD_CHECK((env.errors.size() == 1) &&
                        (env.errors[0] == UCS_ERR_NO_MEMORY),
                        "member 1: %zu error handler calls", env.errors.size());
            if (tl == "sm_incast") {
                CHILD_CHECK(uct_ep_am_short(ep, 1, 0, NULL, 0) ==
                            UCS_ERR_NO_MEMORY, "contribution to a refused "
                            "group");
            }
            uct_ep_destroy(ep);
        }
        pg.barrier(rank);

        /* The root leaves before member 2 looked: the refusal stays */
        if (rank == 0) {
            uct_ep_destroy(ep);
            CHILD_CHECK(own_dir_entry(env, id) != NULL, "refusal dropped "
                        "before member 2 saw it");
        }
        pg.barrier(rank);

        if (rank == 2) {
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
            state = uct_o2m_ep_state(ep, &status);
            CHILD_CHECK((state == UCT_O2M_EP_STATE_REFUSED) &&
                        (status == UCS_ERR_NO_MEMORY), "member 2: state %d, "
                        "%s", state, ucs_status_string(status));
            CHILD_CHECK(env.errors.empty(), "error handler called for an "
                        "endpoint refused at creation");
            uct_ep_destroy(ep);
        }
        pg.barrier(rank);

        /* Seen by both: the root's interface drops it */
        if (rank == 0) {
            CHILD_CHECK(env.progress_until([&] {
                return own_dir_entry(env, id) == NULL;
            }), "refusal seen by every member still listed");
        }
        CHILD_CHECK(received == 0, "rank %u received %u messages", rank,
                    received);
    }, 60);
}

/* What uct_o2m_group_seg_size() says a root's segment costs is what the
 * root creates (UCG bounds a group's memory with it) */
TEST_F(sm_refused_uct, seg_size_matches_created)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) {
        const std::map<std::string, std::string> configs[] = {
            {},
            {{"FIFO_SIZE", "16"}, {"SEG_SIZE", "4160"}, {"RING_MAX", "256k"}}
        };
        uint64_t id = 0x7e0300;

        for (const auto &config : configs) {
            for (const char *tl : {"sm_bcast", "sm_incast"}) {
                uct_env env(tl, config);
                bool incast = !strcmp(tl, "sm_incast");
                uct_o2m_iface_attr_t attr;

                CHILD_CHECK_OK(uct_o2m_iface_query(env.iface(), &attr));
                for (unsigned size : {2u, 3u, 8u, 64u}) {
                    for (int mode = 0; mode < UCT_O2M_MODE_LAST; ++mode) {
                        uct_o2m_group_params_t params;
                        uct_ep_h ep;

                        if (!incast && (mode > UCT_O2M_MODE_CENTRALIZED)) {
                            continue;
                        }
                        memset(&params, 0, sizeof(params));
                        params.field_mask = UCT_O2M_GROUP_FIELD_MODE;
                        params.group_id   = id++;
                        params.size       = size;
                        params.mode       = (uct_o2m_mode_t)mode;
                        if (incast) {
                            params.field_mask |= UCT_O2M_GROUP_FIELD_OP |
                                                 UCT_O2M_GROUP_FIELD_DTYPE |
                                                 UCT_O2M_GROUP_FIELD_HDR_LEN;
                            params.op          = (mode >= UCT_O2M_MODE_LOCKED) ?
                                                 UCT_O2M_OP_SUM :
                                                 UCT_O2M_OP_GATHER;
                            params.dtype       = UCT_O2M_DT_INT32;
                            params.hdr_len     = 16;
                        }
                        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params,
                                                         &ep));
                        size_t made = ucs_derived_of(ep, uct_o2m_group_ep_t)
                                              ->seg_size;
                        size_t said = uct_o2m_group_seg_size(&attr, &params);
                        CHILD_CHECK(made == said, "%s size %u mode %d: "
                                    "created %zu bytes, said %zu", tl, size,
                                    mode, made, said);
                        uct_ep_destroy(ep);
                    }
                }
            }
        }
    }, 60);
}

/* A fan-in sender that waits for the group through uct_o2m_ep_state()
 * (without sending, as UCG does) is bounded by an opt-in PEER_TIMEOUT like
 * one that tries to send; without it, it waits while the root lives */
TEST_F(sm_refused_uct, joining_state_peer_timeout)
{
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_incast", {{"CHECK_INTERVAL", "10ms"},
                                  {"PEER_TIMEOUT", "300ms"}});
        uct_o2m_group_params_t params;
        uct_o2m_ep_state_t state;
        ucs_status_t status;
        peer_addrs addrs;
        uct_ep_h ep;

        addrs.exchange(pg, rank, env);
        params = addrs.group_params(0x7e0400, 2, rank);
        if (rank == 1) {
            /* The root never creates the group */
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
            state = settled_state(env, ep, &status);
            CHILD_CHECK((state == UCT_O2M_EP_STATE_FAILED) &&
                        (status == UCS_ERR_TIMED_OUT), "state %d, %s", state,
                        ucs_status_string(status));
            uct_ep_destroy(ep);
        }
        pg.barrier(rank);
    }, 60);
}

INSTANTIATE_TEST_SUITE_P(tl, sm_refused,
                         ::testing::Values("sm_bcast", "sm_incast"),
                         [](const ::testing::TestParamInfo<const char*> &i) {
                             return std::string(i.param);
                         });

/* A refusal must carry an error code members can act on */
TEST_F(sm_refused_uct, bad_refusal)
{
    const int32_t bad[] = {5, UCS_ERR_NO_RESOURCE, UCS_ERR_LAST - 1};
    proc_group pg(3);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast", {{"CHECK_INTERVAL", "10ms"}});
        peer_addrs addrs;

        addrs.exchange(pg, rank, env);
        if (rank == 0) {
            deny_memfd();
        }

        for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
            uct_o2m_group_params_t params = addrs.group_params(0x7e0100 + i,
                                                               3, rank);
            ucs_status_t status;
            uct_ep_h ep = NULL;

            if (rank == 1) {
                CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
            }
            pg.barrier(rank);
            if (rank == 0) {
                /* A root (or whoever writes its segment) lists garbage */
                CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
                own_dir_entry(env, params.group_id)->refused = bad[i];
            }
            pg.barrier(rank);
            if (rank == 1) {
                CHILD_CHECK(settled_state(env, ep, &status) ==
                            UCT_O2M_EP_STATE_FAILED, "bad refusal %d taken",
                            bad[i]);
                CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "%d: %s", bad[i],
                            ucs_status_string(status));
            } else if (rank == 2) {
                status = uct_o2m_ep_create(env.iface(), &params, &ep);
                CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "%d: %s", bad[i],
                            ucs_status_string(status));
                ep = NULL;
            }
            pg.barrier(rank);
            if (ep != NULL) {
                uct_ep_destroy(ep);
            }
        }
    }, 60);
}

/* Out of file descriptors, then not: the id is used again */
TEST_F(sm_refused_uct, fd_limit_then_same_id)
{
    const uint64_t id = 0x7e0200;
    proc_group pg(3);

    pg.run_ok([&](unsigned rank) {
        uct_env env("sm_bcast", {{"CHECK_INTERVAL", "10ms"}});
        uct_o2m_group_params_t params;
        std::vector<int> fds;
        unsigned received = 0;
        ucs_status_t status;
        struct rlimit rl;
        peer_addrs addrs;
        uct_ep_h ep;
        int fd;

        params = counting_member(pg, rank, env, &received, addrs, id);
        if (rank == 0) {
            CHILD_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit: %m");
            rl.rlim_cur = 256;
            CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit: %m");
            while ((fd = dup(0)) >= 0) {
                fds.push_back(fd);
            }
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
            CHILD_CHECK(uct_o2m_ep_state(ep, &status) ==
                        UCT_O2M_EP_STATE_REFUSED, "root not refused");
            CHILD_CHECK(status == UCS_ERR_EXCEEDS_LIMIT, "root: %s",
                        ucs_status_string(status));
        }
        pg.barrier(rank);

        if (rank != 0) {
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
            CHILD_CHECK(uct_o2m_ep_state(ep, &status) ==
                        UCT_O2M_EP_STATE_REFUSED, "member %u not refused",
                        rank);
            CHILD_CHECK(status == UCS_ERR_EXCEEDS_LIMIT, "member %u: %s",
                        rank, ucs_status_string(status));
        }
        pg.barrier(rank);
        uct_ep_destroy(ep);
        pg.barrier(rank);

        /* Seen by all and destroyed: gone, and the id is free again */
        if (rank == 0) {
            CHILD_CHECK(own_dir_entry(env, id) == NULL, "refusal kept");
            for (int f : fds) {
                close(f);
            }
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
            CHILD_CHECK(uct_o2m_ep_state(ep, NULL) == UCT_O2M_EP_STATE_READY,
                        "root of the new group not ready");
        }
        pg.barrier(rank);
        if (rank != 0) {
            CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &params, &ep));
            CHILD_CHECK(uct_o2m_ep_state(ep, NULL) == UCT_O2M_EP_STATE_READY,
                        "member %u of the new group not ready", rank);
        }
        pg.barrier(rank);

        if (rank == 0) {
            for (unsigned i = 0; i < 5; ++i) {
                CHILD_CHECK(env.progress_until([&] {
                    status = uct_ep_am_short(ep, 1, i, NULL, 0);
                    return status != UCS_ERR_NO_RESOURCE;
                }), "send %u", i);
                CHILD_CHECK_OK(status);
            }
            CHILD_CHECK(env.progress_until([&] {
                return uct_ep_flush(ep, 0, NULL) == UCS_OK;
            }), "flush");
        } else {
            CHILD_CHECK(env.progress_until([&] { return received == 5; }),
                        "member %u: %u of 5 messages", rank, received);
        }
        pg.barrier(rank);
        uct_ep_destroy(ep);
        CHILD_CHECK(env.errors.empty(), "rank %u: %zu errors", rank,
                    env.errors.size());
    }, 60);
}


/* ---- UCG: every member decides the same, results correct ---- */

using namespace ucg_test;

std::vector<coll_desc> refused_colls(unsigned size)
{
    std::vector<coll_desc> list;

    for (unsigned root = 0; root < size; ++root) {
        list.push_back(coll_desc(UCG_COLL_BCAST, 3000, UCG_DT_UINT8,
                                 UCG_OP_LAST, root));
        list.push_back(coll_desc(UCG_COLL_BCAST, 40000, UCG_DT_UINT8,
                                 UCG_OP_LAST, root)); /* sm_bcast_cma */
        list.push_back(coll_desc(UCG_COLL_REDUCE, 1000, UCG_DT_INT32,
                                 UCG_OP_SUM, root));
        list.push_back(coll_desc(UCG_COLL_REDUCE, 70000, UCG_DT_FLOAT,
                                 UCG_OP_SUM, root)); /* sm_reduce_cma */
        list.push_back(coll_desc(UCG_COLL_GATHER, 500, UCG_DT_INT32,
                                 UCG_OP_LAST, root));
        list.push_back(coll_desc(UCG_COLL_SCATTER, 500, UCG_DT_INT32,
                                 UCG_OP_LAST, root));
    }
    list.push_back(coll_desc(UCG_COLL_ALLREDUCE, 16, UCG_DT_INT32,
                             UCG_OP_SUM)); /* sm_allreduce */
    list.push_back(coll_desc(UCG_COLL_ALLREDUCE, 3000, UCG_DT_DOUBLE,
                             UCG_OP_MAX));
    list.push_back(coll_desc(UCG_COLL_ALLREDUCE, 3000, UCG_DT_INT64,
                             UCG_OP_SUM, 0, true));
    list.push_back(coll_desc(UCG_COLL_ALLGATHER, 300, UCG_DT_INT32));
    list.push_back(coll_desc(UCG_COLL_BARRIER, 0, UCG_DT_UINT8));
    for (size_t i = 0; i < list.size(); ++i) {
        list[i].seed = 900 + i;
    }
    return list;
}

/* Host-local endpoints of @a group in @a state */
unsigned sm_eps_in(ucg_group_h group, uct_o2m_ep_state_t state)
{
    ucg_sm_ep_t *sm_ep;
    unsigned count = 0;

    ucs_list_for_each(sm_ep, &group->sm_eps, list) {
        count += (uct_o2m_ep_state(sm_ep->ep, NULL) == state);
    }
    return count;
}

TEST(ucg_coll_exhaustion, root_out_of_memory)
{
    for (const char *hosts : {"auto", "2"}) {
        run_opts opts;

        opts.env["UCX_UCG_HOSTS"] = hosts;
        opts.timeout              = 300;
        run_ok(4, opts, [&](member &m) {
            std::vector<coll_desc> list = refused_colls(m.size);

            CHILD_CHECK(m.group->topo.o2m, "no o2m transports");
            if (m.rank == 0) {
                deny_memfd();
            }
            m.procs->barrier(m.rank);

            /* Twice: the second time, the refusals are known at once.  The
             * root comes late to the first: its members look for the
             * group before it is refused */
            for (unsigned round = 0; round < 2; ++round) {
                for (const coll_desc &d : list) {
                    if ((round == 0) && (m.rank == 0) && (d.root == 0)) {
                        usleep(100000);
                    }
                    run_coll(m, d);
                }
            }

            /* Rank 0 roots its sets' endpoints on host 0: all refused, and
             * seen so by its members; the other roots kept theirs */
            unsigned refused = sm_eps_in(m.group, UCT_O2M_EP_STATE_REFUSED);
            unsigned ready   = sm_eps_in(m.group, UCT_O2M_EP_STATE_READY);
            bool on_host0    = m.group->topo.host_of[m.rank] ==
                               m.group->topo.host_of[0];
            CHILD_CHECK(on_host0 == (refused > 0), "hosts %s rank %u: %u "
                        "refused endpoints", hosts, m.rank, refused);
            CHILD_CHECK(ready > 0, "hosts %s rank %u: no host-local endpoint "
                        "left", hosts, m.rank);
            CHILD_CHECK(m.group->failed == UCS_OK, "group failed: %s",
                        ucs_status_string(m.group->failed));
        }, std::string("hosts=") + hosts);
    }
}

/*
 * Host-local endpoints are resolved before a phase sends: a collective that
 * waits for its fan-in endpoint (the root has not created it) has not
 * contributed yet, so a later collective on the same endpoint, started once
 * the root did, waits for it (fan-in rounds are formed in start order).
 * Rank 1 and 2 start gather A while root 0 has not started; root 0 starts
 * A; rank 2 progresses (A contributes), rank 1 does not; then both start
 * gather B (another length).  Before, B contributed first on rank 1 and
 * the root's first round mixed B (rank 1) and A (rank 2).
 */
TEST(ucg_sm_gate, fanin_order_while_joining)
{
    run_opts opts;

    opts.env["UCX_UCG_SM_INCAST_MODE"] = "centralized";
    run_ok(3, opts, [&](member &m) {
        coll_desc da(UCG_COLL_GATHER, 100, UCG_DT_INT32, UCG_OP_LAST, 0);
        coll_desc db(UCG_COLL_GATHER, 1000, UCG_DT_INT32, UCG_OP_LAST, 0);
        ucg_group_h group = create_group(m); /* no endpoint yet */
        ucg_coll_params_t pa, pb;
        ucg_coll_h ca, cb;

        da.seed = 1;
        db.seed = 2;
        coll_bufs ba(da, m.rank, m.size), bb(db, m.rank, m.size);
        pa = ba.params();
        pb = bb.params();
        CHILD_CHECK_OK(ucg_coll_init(group, &pa, &ca));
        CHILD_CHECK_OK(ucg_coll_init(group, &pb, &cb));

        if (m.rank != 0) {
            CHILD_CHECK_OK(ucg_coll_start(ca)); /* waits for the root */
        }
        m.procs->barrier(m.rank);
        if (m.rank == 0) {
            CHILD_CHECK_OK(ucg_coll_start(ca)); /* creates the endpoint */
        }
        m.procs->barrier(m.rank);
        if (m.rank == 2) {
            /* A contributes here first (nothing can complete yet) */
            double end = now_sec() + 0.2;
            while (now_sec() < end) {
                ucg_progress(m.context);
            }
        }
        CHILD_CHECK_OK(ucg_coll_start(cb));

        CHILD_CHECK_OK(wait_coll(cb, "gather B"));
        CHILD_CHECK_OK(wait_coll(ca, "gather A"));
        ba.check("gather A");
        bb.check("gather B");
        ucg_coll_finalize(ca);
        ucg_coll_finalize(cb);
        m.procs->barrier(m.rank);
        ucg_group_destroy(group);
    });
}

} // namespace
