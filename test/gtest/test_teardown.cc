/**
 * ucx-o2m tests: group teardown and late members of sm_bcast / sm_incast.
 *
 *  - a member that finished (consumed or contributed everything the root
 *    waits for) and destroyed its endpoint while others are still slow is
 *    not a failure (o2m_teardown.finished_member_is_not_failed)
 *  - members that join after the root destroyed its endpoint still get
 *    everything it sent; a member that waits for more, or contributes to a
 *    closed group, gets an error instead of hanging
 *    (o2m_teardown.join_after_root_left)
 *  - with the default configuration, a root and members that arrive 20.5 s
 *    late (twice the old PEER_TIMEOUT) fail nobody (o2m_teardown.late_peers)
 *  - hundreds of rounds of create / use / destroy at different speeds, with
 *    every result checked (o2m_teardown.create_use_destroy_rounds)
 */
#include "common/harness.h"
#include "common/uct_env.h"
#include "common/traffic.h"
#include "common/peers.h"
#include "common/residue.h"

#include <random>

using namespace o2m_test;

namespace {

const uint8_t AM_ID    = 21;
const size_t  NWORDS   = 8;   /* uint64 words of a message */

/* Messages seen by an interface's AM handler, in arrival order */
struct am_log {
    std::vector<std::vector<uint64_t>> msgs;

    static ucs_status_t cb(void *arg, void *data, size_t length,
                           unsigned flags)
    {
        const uint64_t *words = static_cast<const uint64_t*>(data);

        static_cast<am_log*>(arg)->msgs.emplace_back(
                words, words + (length / sizeof(uint64_t)));
        return UCS_OK;
    }
};

/*
 * A child's sm_bcast and sm_incast interfaces (both with @a config), the
 * addresses of every rank's, what each received, and the pids of the
 * test's children (every child has been forked: each pid is known)
 */
struct both_ifaces {
    uct_env            bcast, incast;
    peer_addrs         baddrs, iaddrs;
    am_log             blog, ilog;
    std::vector<pid_t> pids;

    both_ifaces(proc_group &pg, unsigned rank,
                const std::map<std::string, std::string> &config = {}) :
        bcast("sm_bcast", config), incast("sm_incast", config)
    {
        bcast.set_am_handler(AM_ID, am_log::cb, &blog);
        incast.set_am_handler(AM_ID, am_log::cb, &ilog);
        baddrs.exchange(pg, rank, bcast);
        iaddrs.exchange(pg, rank, incast);
        pids = pg.pids();
    }
};

/* Word j of message k of group @a id, or of sender @a rank's contribution */
uint64_t word(uint64_t id, uint64_t k, unsigned rank, size_t j)
{
    return mix64((id << 20) ^ (k << 8) ^ (rank << 4) ^ j) >> 8;
}

struct group_desc {
    uint64_t        id;
    unsigned        size;
    unsigned        root;
    uct_o2m_mode_t  mode;
    bool            incast;
};

uct_ep_h create_ep(uct_env &env, const peer_addrs &addrs,
                   const group_desc &g, unsigned rank,
                   const std::vector<pid_t> &pids)
{
    uct_o2m_group_params_t params;
    ucs_status_t status;
    uct_ep_h ep = NULL;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_O2M_GROUP_FIELD_MODE;
    params.group_id   = g.id;
    params.size       = g.size;
    params.my_index   = rank;
    params.root_index = g.root;
    params.mode       = g.mode;
    if (g.incast) {
        params.field_mask |= UCT_O2M_GROUP_FIELD_OP |
                             UCT_O2M_GROUP_FIELD_DTYPE;
        params.op          = UCT_O2M_OP_SUM;
        params.dtype       = UCT_O2M_DT_UINT64;
    }
    if (rank == g.root) {
        params.field_mask  |= UCT_O2M_GROUP_FIELD_MEMBER_PIDS;
        params.member_pids  = pids.data();
    } else {
        params.field_mask     |= UCT_O2M_GROUP_FIELD_ROOT_ADDR;
        params.root_iface_addr = (const uct_iface_addr_t*)
                                 addrs.iface[g.root].data();
        params.root_dev_addr   = (const uct_device_addr_t*)
                                 addrs.dev[g.root].data();
    }

    status = uct_o2m_ep_create(env.iface(), &params, &ep);
    CHILD_CHECK(status == UCS_OK, "group 0x%lx rank %u: %s",
                (unsigned long)g.id, rank, ucs_status_string(status));
    return ep;
}

/* Send message (or contribution) @a k of group @a g: retries while the ring
 * is full or the group is not joined yet */
ucs_status_t send_msg(uct_env &env, uct_ep_h ep, const group_desc &g,
                      unsigned rank, uint64_t k, double timeout = 60)
{
    uint64_t words[NWORDS];
    ucs_status_t status;
    double end = now_sec() + timeout;

    for (size_t j = 0; j < NWORDS; ++j) {
        words[j] = word(g.id, k, g.incast ? rank : 0, j);
    }

    do {
        status = uct_ep_am_short(ep, AM_ID, words[0], &words[1],
                                 sizeof(words) - sizeof(words[0]));
        if (status != UCS_ERR_NO_RESOURCE) {
            return status;
        }
        progress_once(env);
    } while (now_sec() < end);

    return UCS_ERR_TIMED_OUT;
}

/* What the root of @a g (or a receiver) must see as message @a k */
std::vector<uint64_t> expected_msg(const group_desc &g, uint64_t k)
{
    std::vector<uint64_t> words(NWORDS, 0);

    for (size_t j = 0; j < NWORDS; ++j) {
        if (!g.incast) {
            words[j] = word(g.id, k, 0, j);
            continue;
        }
        for (unsigned r = 0; r < g.size; ++r) {
            if (r != g.root) {
                words[j] += word(g.id, k, r, j);
            }
        }
    }
    return words;
}

/* Wait for @a count messages in @a log and check them against the reference
 * (@a first: index of the first one in @a log) */
void check_msgs(uct_env &env, am_log &log, size_t first, const group_desc &g,
                uint64_t count, unsigned rank, double timeout = 60)
{
    bool ok = progress_wait(env, [&]() {
        return log.msgs.size() >= first + count;
    }, timeout);

    CHILD_CHECK(ok, "rank %u group 0x%lx: %zu of %lu messages", rank,
                (unsigned long)g.id, log.msgs.size() - first,
                (unsigned long)count);
    for (uint64_t k = 0; k < count; ++k) {
        CHILD_CHECK(log.msgs[first + k] == expected_msg(g, k),
                    "rank %u group 0x%lx: message %lu differs", rank,
                    (unsigned long)g.id, (unsigned long)k);
    }
}

ucs_status_t flush_ep(uct_env &env, uct_ep_h ep, double timeout = 60)
{
    double end = now_sec() + timeout;
    ucs_status_t status;

    do {
        status = uct_ep_flush(ep, 0, NULL);
        if ((status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE)) {
            return status;
        }
        progress_once(env);
    } while (now_sec() < end);

    return UCS_ERR_TIMED_OUT;
}

void check_no_errors(const uct_env &env, unsigned rank, const char *what)
{
    CHILD_CHECK(env.errors.empty(), "rank %u, %s: %zu errors (first %s)",
                rank, what, env.errors.size(),
                env.errors.empty() ? "" :
                ucs_status_string(env.errors.front()));
}

const char *tl_name(bool incast)
{
    return incast ? "sm_incast" : "sm_bcast";
}

std::string group_name(const group_desc &g)
{
    return std::string(tl_name(g.incast)) + "/" + uct_o2m_mode_name(g.mode);
}

/* Runs @a fn in @a nprocs processes, which must all exit with success
 * within @a timeout seconds and leave no shared memory behind */
void run_checked(unsigned nprocs, double timeout,
                 const std::function<void(proc_group&, unsigned)> &fn)
{
    shm_residue_check shm;
    proc_group pg(nprocs);

    pg.run_ok([&](unsigned rank) { fn(pg, rank); }, timeout);
}

} // namespace


/*
 * Member 1 consumes (contributes) everything and destroys its endpoint at
 * once; members 2 and 3 are still asleep.  The root waits for them, and
 * member 1's leaving is no failure.
 */
TEST(o2m_teardown, finished_member_is_not_failed)
{
    const unsigned nprocs = 4;
    const uint64_t count  = 12;
    shm_residue_check shm;
    proc_group pg(nprocs);

    for (bool incast : {false, true}) {
        for (uct_o2m_mode_t mode : {UCT_O2M_MODE_BATCHED,
                                    UCT_O2M_MODE_CENTRALIZED}) {
            group_desc g = {0x500u + (incast * 2) + mode, nprocs, 0, mode,
                            incast};

            pg.run_ok([&](unsigned rank) {
                uct_env env(tl_name(incast), {{"CHECK_INTERVAL", "10ms"}});
                        peer_addrs addrs;
                am_log log;

                env.set_am_handler(AM_ID, am_log::cb, &log);
                addrs.exchange(pg, rank, env);
                std::vector<pid_t> pids = pg.pids();
                uct_ep_h ep = create_ep(env, addrs, g, rank, pids);
                pg.barrier(rank);

                if (rank >= 2) {
                    usleep(600 * 1000); /* slow members */
                }

                if (rank == 0) {
                    if (incast) {
                        check_msgs(env, log, 0, g, count, rank);
                    } else {
                        for (uint64_t k = 0; k < count; ++k) {
                            CHILD_CHECK_OK(send_msg(env, ep, g, rank, k));
                        }
                        CHILD_CHECK_OK(flush_ep(env, ep));
                    }
                    /* Every member left by now: still no failure */
                    progress_for(env, 0.05);
                } else if (incast) {
                    for (uint64_t k = 0; k < count; ++k) {
                        CHILD_CHECK_OK(send_msg(env, ep, g, rank, k));
                    }
                    if (rank >= 2) {
                        CHILD_CHECK_OK(flush_ep(env, ep));
                    }
                } else {
                    check_msgs(env, log, 0, g, count, rank);
                }

                check_no_errors(env, rank, group_name(g).c_str());
                uct_ep_destroy(ep);
                pg.barrier(rank);
            }, 120);
        }
    }
}

/*
 * The roots send (contribute to nothing) and destroy their endpoints before
 * member 2 has created its own: member 2 still finds the groups and reads
 * every message; it then gets an error where it waits for more, or
 * contributes to the closed fan-in group.  The root's interface close waits
 * for it (its pid is known).
 */
TEST(o2m_teardown, join_after_root_left)
{
    const unsigned nprocs = 3;
    const uint64_t count  = 10;

    run_checked(nprocs, 120, [&](proc_group &pg, unsigned rank) {
        group_desc gb = {0x610, nprocs, 0, UCT_O2M_MODE_BATCHED, false};
        group_desc gi = {0x611, nprocs, 0, UCT_O2M_MODE_BATCHED, true};
        both_ifaces w(pg, rank, {{"CHECK_INTERVAL", "10ms"}});

        if (rank == 0) {
            uct_ep_h ep  = create_ep(w.bcast, w.baddrs, gb, rank, w.pids);
            uct_ep_h iep = create_ep(w.incast, w.iaddrs, gi, rank, w.pids);
            pg.barrier(rank);
            for (uint64_t k = 0; k < count; ++k) {
                CHILD_CHECK_OK(send_msg(w.bcast, ep, gb, rank, k));
            }
            /* No flush: the segment outlives the endpoint */
            uct_ep_destroy(ep);
            uct_ep_destroy(iep);
            check_no_errors(w.bcast, rank, "root");
            return; /* interfaces close: wait for member 2 */
        }

        pg.barrier(rank);
        if (rank == 2) {
            usleep(300 * 1000);
        }

        uct_ep_h ep = create_ep(w.bcast, w.baddrs, gb, rank, w.pids);
        check_msgs(w.bcast, w.blog, 0, gb, count, rank);
        progress_for(w.bcast, 0.05);
        check_no_errors(w.bcast, rank, "all consumed");

        /* Waiting for an 11th message that will never come */
        CHILD_CHECK_OK(uct_ep_check(ep, 0, NULL));
        bool ok = progress_wait(w.bcast, [&]() {
            return !w.bcast.errors.empty();
        }, 30);
        CHILD_CHECK(ok, "rank %u: no error waiting on a closed group", rank);
        CHILD_CHECK(has_error(w.bcast, UCS_ERR_CONNECTION_RESET), "error %s",
                    ucs_status_string(w.bcast.errors.front()));
        uct_ep_destroy(ep);

        /* A contribution to a closed fan-in group fails */
        uct_ep_h iep = create_ep(w.incast, w.iaddrs, gi, rank, w.pids);
        ucs_status_t status = send_msg(w.incast, iep, gi, rank, 0, 30);
        CHILD_CHECK(status == UCS_ERR_CONNECTION_RESET, "rank %u: send to a "
                    "closed group: %s", rank, ucs_status_string(status));
        uct_ep_destroy(iep);
    });
}

/*
 * Rank 0 sleeps 20.5 s (twice the old default PEER_TIMEOUT) before it
 * creates its endpoints, with the default configuration:
 *  - group A (fan-out, root 0): the receivers wait for the root;
 *  - group B (fan-out, root 1): the root waits for receiver 0;
 *  - group C (fan-in, root 2): the root waits for sender 0.
 * Everything completes, correctly and without an error.
 */
TEST(o2m_teardown, late_peers)
{
    const unsigned nprocs = 3;
    const uint64_t count  = 6;
    const double late     = 20.5;

    run_checked(nprocs, 120, [&](proc_group &pg, unsigned rank) {
        group_desc ga = {0x700, nprocs, 0, UCT_O2M_MODE_BATCHED, false};
        group_desc gb = {0x701, nprocs, 1, UCT_O2M_MODE_CENTRALIZED, false};
        group_desc gc = {0x702, nprocs, 2, UCT_O2M_MODE_BATCHED, true};
        both_ifaces w(pg, rank);
        pg.barrier(rank);

        if (rank == 0) {
            usleep((useconds_t)(late * 1e6));
        }
        uct_ep_h a = create_ep(w.bcast, w.baddrs, ga, rank, w.pids);
        uct_ep_h b = create_ep(w.bcast, w.baddrs, gb, rank, w.pids);
        uct_ep_h c = create_ep(w.incast, w.iaddrs, gc, rank, w.pids);
        if (rank == 0) {
            for (uint64_t k = 0; k < count; ++k) {
                CHILD_CHECK_OK(send_msg(w.bcast, a, ga, rank, k));
                CHILD_CHECK_OK(send_msg(w.incast, c, gc, rank, k));
            }
            check_msgs(w.bcast, w.blog, 0, gb, count, rank);
            CHILD_CHECK_OK(flush_ep(w.bcast, a));
            CHILD_CHECK_OK(flush_ep(w.incast, c));
        } else if (rank == 1) {
            for (uint64_t k = 0; k < count; ++k) {
                CHILD_CHECK_OK(send_msg(w.bcast, b, gb, rank, k));
                CHILD_CHECK_OK(send_msg(w.incast, c, gc, rank, k));
            }
            CHILD_CHECK_OK(flush_ep(w.bcast, b, late + 30));
            CHILD_CHECK_OK(flush_ep(w.incast, c, late + 30));
            check_msgs(w.bcast, w.blog, 0, ga, count, rank, late + 30);
        } else {
            check_msgs(w.incast, w.ilog, 0, gc, count, rank, late + 30);
            /* Group A's messages and group B's are interleaved: sort */
            bool ok = progress_wait(w.bcast, [&]() {
                return w.blog.msgs.size() >= 2 * count;
            }, late + 30);
            CHILD_CHECK(ok, "rank 2: %zu bcast messages", w.blog.msgs.size());
            am_log la, lb;
            for (const auto &m : w.blog.msgs) {
                bool in_a = false;
                for (uint64_t k = 0; k < count; ++k) {
                    in_a |= (m == expected_msg(ga, k));
                }
                (in_a ? la : lb).msgs.push_back(m);
            }
            check_msgs(w.bcast, la, 0, ga, count, rank, 1);
            check_msgs(w.bcast, lb, 0, gb, count, rank, 1);
        }
        check_no_errors(w.bcast, rank, "sm_bcast");
        check_no_errors(w.incast, rank, "sm_incast");
        pg.barrier(rank);
        uct_ep_destroy(a);
        uct_ep_destroy(b);
        uct_ep_destroy(c);
    });
}

/*
 * Rounds of: a fan-out group (root r) whose root sends 2 messages and
 * destroys its endpoint at once, and a fan-in group (root r + 1) whose
 * senders contribute once and destroy theirs at once; members create and
 * destroy their endpoints after random sleeps.  Every message and result is
 * checked, and nobody sees an error.
 */
TEST(o2m_teardown, create_use_destroy_rounds)
{
    const unsigned nprocs = 4;
    const unsigned rounds = 300;

    run_checked(nprocs, 180, [&](proc_group &pg, unsigned rank) {
        both_ifaces w(pg, rank, {{"CHECK_INTERVAL", "1ms"},
                                 {"MAX_GROUPS", "8"}});
        std::mt19937 rng(rank * 7919 + 1);
        pg.barrier(rank);

        auto nap = [&]() {
            unsigned r = rng() % 16;
            if (r < 3) {
                usleep(r * 1500); /* a slow member now and then */
            }
        };

        for (unsigned round = 0; round < rounds; ++round) {
            uct_o2m_mode_t mode = (round & 1) ? UCT_O2M_MODE_CENTRALIZED :
                                               UCT_O2M_MODE_BATCHED;
            group_desc gb = {0x10000u + round, nprocs, round % nprocs, mode,
                             false};
            group_desc gi = {0x20000u + round, nprocs,
                             (round + 1) % nprocs, mode, true};
            size_t bfirst = w.blog.msgs.size(), ifirst = w.ilog.msgs.size();

            nap();
            uct_ep_h be = create_ep(w.bcast, w.baddrs, gb, rank, w.pids);
            uct_ep_h ie = create_ep(w.incast, w.iaddrs, gi, rank, w.pids);
            if (rank == gb.root) {
                for (uint64_t k = 0; k < 2; ++k) {
                    CHILD_CHECK_OK(send_msg(w.bcast, be, gb, rank, k));
                }
                uct_ep_destroy(be);
            }
            if (rank != gi.root) {
                CHILD_CHECK_OK(send_msg(w.incast, ie, gi, rank, 0));
                nap();
                uct_ep_destroy(ie);
            }
            if (rank != gb.root) {
                check_msgs(w.bcast, w.blog, bfirst, gb, 2, rank);
                nap();
                uct_ep_destroy(be);
            }
            if (rank == gi.root) {
                check_msgs(w.incast, w.ilog, ifirst, gi, 1, rank);
                uct_ep_destroy(ie);
            }
            CHILD_CHECK(w.blog.msgs.size() ==
                        bfirst + ((rank != gb.root) ? 2 : 0),
                        "round %u: %zu bcast messages", round,
                        w.blog.msgs.size() - bfirst);
            CHILD_CHECK(w.ilog.msgs.size() == ifirst + (rank == gi.root),
                        "round %u: %zu incast results", round,
                        w.ilog.msgs.size() - ifirst);
            check_no_errors(w.bcast, rank, "sm_bcast round");
            check_no_errors(w.incast, rank, "sm_incast round");
        }
        pg.barrier(rank);
    });
}

/*
 * Destroyed groups that wait for a member do not count toward MAX_GROUPS
 * and stay within the directory's spare entries: with MAX_GROUPS 2, the
 * root destroys 5 groups member 1 has not joined (it is alive, asleep at a
 * barrier), then still creates 2 live groups; the oldest destroyed ones are
 * given up, the 2 newest are still there for member 1, which joins them and
 * reads what was sent.
 */
TEST(o2m_teardown, retired_groups_bounded)
{
    const unsigned nprocs = 2, nretired = 5;

    run_checked(nprocs, 120, [&](proc_group &pg, unsigned rank) {
        uct_env env("sm_bcast", {{"MAX_GROUPS", "2"}});
        peer_addrs addrs;
        am_log log;

        env.set_am_handler(AM_ID, am_log::cb, &log);
        addrs.exchange(pg, rank, env);
        std::vector<pid_t> pids = pg.pids();

        if (rank == 0) {
            for (unsigned i = 0; i < nretired; ++i) {
                group_desc g = {0x800u + i, nprocs, 0,
                                UCT_O2M_MODE_BATCHED, false};
                uct_ep_h ep  = create_ep(env, addrs, g, rank, pids);
                CHILD_CHECK_OK(send_msg(env, ep, g, rank, 0));
                uct_ep_destroy(ep);
            }
            std::vector<uct_ep_h> live;
            for (unsigned i = 0; i < 2; ++i) {
                group_desc g = {0x900u + i, nprocs, 0,
                                UCT_O2M_MODE_BATCHED, false};
                live.push_back(create_ep(env, addrs, g, rank, pids));
            }
            group_desc extra = {0x902u, nprocs, 0, UCT_O2M_MODE_BATCHED,
                                false};
            uct_o2m_group_params_t params;
            uct_ep_h ep = NULL;
            memset(&params, 0, sizeof(params));
            params.group_id   = extra.id;
            params.size       = nprocs;
            params.my_index   = 0;
            params.root_index = 0;
            CHILD_CHECK(uct_o2m_ep_create(env.iface(), &params, &ep) ==
                        UCS_ERR_EXCEEDS_LIMIT, "a 3rd live group with "
                        "MAX_GROUPS 2");
            for (uct_ep_h e : live) {
                uct_ep_destroy(e);
            }
            pg.barrier(rank);
            return; /* the interface close waits for member 1 */
        }

        pg.barrier(rank);
        /* The 2 newest destroyed groups (the spare entries) are there */
        for (unsigned i = nretired - 2; i < nretired; ++i) {
            group_desc g = {0x800u + i, nprocs, 0, UCT_O2M_MODE_BATCHED,
                            false};
            size_t first = log.msgs.size();
            uct_ep_h ep  = create_ep(env, addrs, g, rank, pids);
            check_msgs(env, log, first, g, 1, rank);
            uct_ep_destroy(ep);
        }
        /* and the 2 live groups, destroyed since */
        for (unsigned i = 0; i < 2; ++i) {
            group_desc g = {0x900u + i, nprocs, 0, UCT_O2M_MODE_BATCHED,
                            false};
            uct_ep_h ep = create_ep(env, addrs, g, rank, pids);
            progress_for(env, 0.01);
            uct_ep_destroy(ep);
        }
    });
}
