/**
 * ucx-o2m tests: UCG contexts and groups (ucg_context.c, ucg_group.c):
 * configuration of the o2m transports, group creation and ids, host
 * layouts, endpoint caches, liveness of members, and what is left behind.
 */
#include "common/harness.h"
#include "common/residue.h"

extern "C" {
#include "api/ucg.h"
#include "ucg_group.h"
#include "ucg_coll.h"
#include <ucs/time/time.h>
}

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <signal.h>
#include <string>
#include <vector>

using namespace o2m_test;

namespace {

/* The harness's shared-memory allgather as UCG's out-of-band allgather */
struct oob_ctx {
    proc_group *pg;
    unsigned   rank;
};

ucs_status_t oob_allgather(void *arg, const void *sbuf, void *rbuf,
                           size_t len)
{
    oob_ctx *oob = static_cast<oob_ctx*>(arg);

    oob->pg->allgather(oob->rank, sbuf, len, rbuf);
    return UCS_OK;
}

/* A group of one: the allgather is a copy */
ucs_status_t self_allgather(void *arg, const void *sbuf, void *rbuf,
                            size_t len)
{
    memcpy(rbuf, sbuf, len);
    return UCS_OK;
}

ucg_context_h make_context(const ucg_context_params_t *params = NULL)
{
    ucg_context_h context = NULL;

    CHILD_CHECK_OK(ucg_context_create(params, NULL, &context));
    return context;
}

ucg_group_params_t group_params(oob_ctx &oob)
{
    ucg_group_params_t params;

    memset(&params, 0, sizeof(params));
    params.size          = oob.pg->size();
    params.rank          = oob.rank;
    params.oob_allgather = oob_allgather;
    params.oob_arg       = &oob;
    return params;
}

ucg_group_h make_group(ucg_context_h context, oob_ctx &oob)
{
    ucg_group_params_t params = group_params(oob);
    ucg_group_h group         = NULL;

    CHILD_CHECK_OK(ucg_group_create(context, &params, &group));
    CHILD_CHECK(group->size == oob.pg->size(), "size %u", group->size);
    CHILD_CHECK(group->rank == oob.rank, "rank %u", group->rank);
    return group;
}

ucg_group_h make_self_group(ucg_context_h context)
{
    ucg_group_params_t params;
    ucg_group_h group = NULL;

    memset(&params, 0, sizeof(params));
    params.size          = 1;
    params.rank          = 0;
    params.oob_allgather = self_allgather;
    CHILD_CHECK_OK(ucg_group_create(context, &params, &group));
    return group;
}

/* The same value on every member */
template <typename T>
void check_same(oob_ctx &oob, T value, const char *what)
{
    std::vector<T> all(oob.pg->size());

    oob.pg->allgather(oob.rank, &value, sizeof(value), all.data());
    for (unsigned i = 0; i < all.size(); ++i) {
        CHILD_CHECK(all[i] == value, "rank %u: %s differs from rank %u's",
                    oob.rank, what, i);
    }
}

/* Progress the UCP worker until a request completes */
void wait_ucp_request(ucg_context_h context, ucs_status_ptr_t req,
                      const char *what)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(wait_timeout);
    ucs_status_t status;

    CHILD_CHECK(!UCS_PTR_IS_ERR(req), "%s: %s", what,
                ucs_status_string(UCS_PTR_STATUS(req)));
    if (req == NULL) {
        return;
    }

    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        CHILD_CHECK(ucs_get_time() < deadline, "%s timed out", what);
        ucp_worker_progress(context->ucp_worker);
    }
    ucp_request_free(req);
    CHILD_CHECK_OK(status);
}

/* Tag messages around the ring through ucg_group_p2p_ep(): proves every
 * member got the right worker addresses */
void p2p_ring(ucg_group_h group, uint64_t tag, bool check_bad = false)
{
    const unsigned size = group->size, rank = group->rank;
    const unsigned next = (rank + 1) % size, prev = (rank + size - 1) % size;
    ucp_request_param_t param;
    uint64_t out, in = 0;
    ucs_status_ptr_t sreq, rreq;
    ucp_ep_h ep, ep2;

    CHILD_CHECK_OK(ucg_group_p2p_ep(group, next, &ep));
    CHILD_CHECK_OK(ucg_group_p2p_ep(group, next, &ep2));
    CHILD_CHECK(ep == ep2, "the endpoint is not cached");
    if (check_bad) {
        CHILD_CHECK(ucg_group_p2p_ep(group, size, &ep2) ==
                    UCS_ERR_INVALID_PARAM, "rank out of range accepted");
    }

    memset(&param, 0, sizeof(param));
    out  = (tag << 32) | rank;
    rreq = ucp_tag_recv_nbx(group->context->ucp_worker, &in, sizeof(in),
                            tag + prev, UINT64_MAX, &param);
    sreq = ucp_tag_send_nbx(ep, &out, sizeof(out), tag + rank, &param);
    wait_ucp_request(group->context, sreq, "ring send");
    wait_ucp_request(group->context, rreq, "ring receive");
    CHILD_CHECK(in == ((tag << 32) | prev), "rank %u got 0x%lx from %u",
                rank, (unsigned long)in, prev);
}

/* Run @a fn in one child with @a env set (the parent keeps its own) */
void run_with_env(const std::vector<std::pair<const char*, const char*>> &env,
                  const std::function<void()> &fn)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) {
        for (const auto &kv : env) {
            setenv(kv.first, kv.second, 1);
        }
        fn();
    }, 60);
}

/* Runs @a fn in @a n children, each with its UCG context (destroyed after
 * @a fn) and its out-of-band channel */
void run_with_context(unsigned n,
                      const std::function<void(proc_group&, unsigned,
                                               oob_ctx&, ucg_context_h)> &fn)
{
    proc_group pg(n);

    pg.run_ok([&](unsigned rank) {
        oob_ctx oob           = {&pg, rank};
        ucg_context_h context = make_context();

        fn(pg, rank, oob, context);
        ucg_context_destroy(context);
    }, 60);
}

/* Every test: nothing of the project's left in /dev/shm, and no process
 * of the test holds a segment once its children exited */
class ucg_group_test : public ::testing::Test {
protected:
    shm_residue_check m_shm;
};


/*
 * Many groups over all members, created and destroyed in orders that differ
 * between members, with groups of one interleaved: ids agree and are never
 * in use on any member, uids agree, the addresses work, nothing leaks.
 */
TEST_F(ucg_group_test, create_destroy_many)
{
    proc_group pg(3);

    pg.run_ok([&](unsigned rank) {
        oob_ctx oob = {&pg, rank};
        unsigned fds;

        /* UCX's own descriptors that stay after a first use */
        ucg_context_destroy(make_context());
        fds = count_fds();

        ucg_context_h context = make_context();
        std::vector<ucg_group_h> live;

        for (unsigned round = 0; round < 6; ++round) {
            /* Members have created different numbers of groups, so they
             * propose different ids */
            for (unsigned i = 0; i < (rank + round) % 3; ++i) {
                live.push_back(make_self_group(context));
                CHILD_CHECK(live.back()->size == 1, "self group size");
                CHILD_CHECK(ucg_group_size(live.back()) == 1, "size");
                CHILD_CHECK(ucg_group_rank(live.back()) == 0, "rank");
            }

            ucg_group_h a = make_group(context, oob);
            ucg_group_h b = make_group(context, oob);
            CHILD_CHECK(ucg_group_size(a) == pg.size(), "size");
            CHILD_CHECK(ucg_group_rank(a) == rank, "rank");
            check_same(oob, a->id, "id of a");
            check_same(oob, b->id, "id of b");
            check_same(oob, a->uid, "uid of a");
            check_same(oob, b->uid, "uid of b");
            check_same(oob, a->epoch, "epoch of a");
            check_same(oob, b->epoch, "epoch of b");
            CHILD_CHECK(a->epoch != b->epoch, "two groups with epoch %u",
                        a->epoch);
            CHILD_CHECK(a->uid != b->uid, "two groups with uid 0x%lx",
                        (unsigned long)a->uid);
            CHILD_CHECK(a->failed == UCS_OK, "a failed");

            /* Unique among this member's groups */
            for (ucg_group_h g : live) {
                CHILD_CHECK((g->id != a->id) && (g->id != b->id),
                            "round %u: id %u reused", round, g->id);
            }
            CHILD_CHECK(a->id != b->id, "a and b share id %u", a->id);
            CHILD_CHECK(ucg_context_find_group(context, a->id) == a,
                        "find a");
            CHILD_CHECK(ucg_context_find_group(context, b->id) == b,
                        "find b");

            p2p_ring(a, 0x100 + round * 0x10, round == 0);
            p2p_ring(b, 0x1000 + round * 0x10);
            pg.barrier(rank);

            /* Destruction is not collective: any order */
            if ((rank + round) % 2) {
                ucg_group_destroy(a);
                live.push_back(b);
            } else {
                ucg_group_destroy(b);
                live.push_back(a);
            }

            /* Drop some of the older groups, differently on each member */
            while (live.size() > 2 + rank) {
                size_t idx = (round + rank) % live.size();
                ucg_group_destroy(live[idx]);
                live.erase(live.begin() + idx);
            }
            pg.barrier(rank);
        }

        /* Groups left to ucg_context_destroy() (with a warning) */
        ucg_context_destroy(context);
        CHILD_CHECK(count_fds() == fds, "%u descriptors before, %u after",
                    fds, count_fds());
        CHILD_CHECK(o2m_held(getpid()).empty(), "o2m segments left behind");
    }, 120);
}

/*
 * An sm message whose group is unknown is dropped, not kept: a later group
 * with the same 16-bit id must never take a message of an earlier one.
 * Nor does a live group take a message with its id but an earlier group's
 * epoch (an endpoint of the earlier group that outlived it).
 */
TEST_F(ucg_group_test, sm_messages_of_earlier_groups)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) {
        ucg_context_h context = make_context();
        struct {
            ucg_sm_hdr_t hdr;
            uint64_t     payload;
        } msg;

        ucg_group_h a   = make_self_group(context);
        uint16_t id     = a->id;
        uint32_t epoch  = a->epoch;

        memset(&msg, 0, sizeof(msg));
        msg.hdr.group_id = id + 1; /* no such group */
        msg.hdr.epoch    = epoch;
        msg.hdr.seq      = 3;
        CHILD_CHECK_OK(ucg_sm_am_cb(context, &msg, sizeof(msg), 0));
        CHILD_CHECK(context->sm_dropped == 1, "%lu dropped",
                    context->sm_dropped);

        /* a's own message, early: kept for its collective */
        msg.hdr.group_id = id;
        CHILD_CHECK_OK(ucg_sm_am_cb(context, &msg, sizeof(msg), 0));
        CHILD_CHECK(!ucs_queue_is_empty(&a->sm_unexp), "a's message");
        ucg_group_destroy(a);

        /* a is gone: its messages go nowhere */
        CHILD_CHECK_OK(ucg_sm_am_cb(context, &msg, sizeof(msg), 0));
        CHILD_CHECK(context->sm_dropped == 2, "%lu dropped",
                    context->sm_dropped);

        /* b gets a's id again, with a later epoch */
        context->next_group_id = id;
        ucg_group_h b          = make_self_group(context);
        CHILD_CHECK(b->id == id, "b has id %u, not %u", b->id, id);
        CHILD_CHECK(b->epoch != epoch, "b has a's epoch %u", epoch);
        CHILD_CHECK(ucs_queue_is_empty(&b->sm_unexp), "b took a message "
                    "of a");

        CHILD_CHECK_OK(ucg_sm_am_cb(context, &msg, sizeof(msg), 0));
        CHILD_CHECK(ucs_queue_is_empty(&b->sm_unexp), "b took a message "
                    "with a's epoch");
        CHILD_CHECK(context->sm_dropped == 3, "%lu dropped",
                    context->sm_dropped);

        msg.hdr.epoch = b->epoch;
        CHILD_CHECK_OK(ucg_sm_am_cb(context, &msg, sizeof(msg), 0));
        CHILD_CHECK(!ucs_queue_is_empty(&b->sm_unexp), "b's message");
        CHILD_CHECK(context->sm_dropped == 3, "%lu dropped",
                    context->sm_dropped);

        ucg_group_destroy(b);
        ucg_context_destroy(context);
    }, 60);
}

/*
 * What a module leaves with the context for its destroy (the requests a
 * failed collective left to UCP) is ended by the module's own closer, which
 * the context calls without knowing it: every closer at the UCP stage
 * while the worker exists, then every closer at the FREE stage once it is
 * destroyed, in the order they were added; one removed before the destroy
 * is not called.
 */
namespace {

struct closer_event {
    int  id;
    int  stage;
    bool worker; /* context->ucp_worker was there */

    bool operator==(const closer_event &other) const {
        return (id == other.id) && (stage == other.stage) &&
               (worker == other.worker);
    }
};

struct fake_closer {
    ucg_context_closer_t      closer;
    ucg_context_h             context;
    int                       id;
    std::vector<closer_event> *events;
};

void fake_close_cb(ucg_context_closer_t *closer,
                   ucg_context_close_stage_t stage)
{
    fake_closer *f = ucs_container_of(closer, fake_closer, closer);

    f->events->push_back({f->id, (int)stage,
                          f->context->ucp_worker != NULL});
    if (stage == UCG_CONTEXT_CLOSE_FREE) {
        ucg_context_closer_remove(closer);
    }
}

} // namespace

TEST_F(ucg_group_test, context_closers)
{
    proc_group pg(1);

    pg.run_ok([&](unsigned rank) {
        std::vector<closer_event> events;
        ucg_context_h context = make_context();
        fake_closer f[3];

        for (int i = 0; i < 3; ++i) {
            f[i].context = context;
            f[i].id      = i;
            f[i].events  = &events;
            ucg_context_closer_add(context, &f[i].closer, fake_close_cb);
        }
        ucg_context_closer_remove(&f[1].closer);

        ucg_context_destroy(context);
        std::vector<closer_event> expected = {
            {0, UCG_CONTEXT_CLOSE_UCP, true},
            {2, UCG_CONTEXT_CLOSE_UCP, true},
            {0, UCG_CONTEXT_CLOSE_FREE, false},
            {2, UCG_CONTEXT_CLOSE_FREE, false}
        };
        std::string got;
        for (const auto &e : events) {
            got += " " + std::to_string(e.id) + ":" +
                   std::to_string(e.stage) + (e.worker ? "w" : "");
        }
        CHILD_CHECK(events == expected, "closer calls (id:stage, w: with "
                    "the worker):%s", got.c_str());
    }, 60);
}

/* A proposed id already in use on another member is skipped */
TEST_F(ucg_group_test, id_in_use_elsewhere)
{
    run_with_context(2, [&](proc_group &pg, unsigned rank, oob_ctx &oob,
                            ucg_context_h context) {
        std::vector<ucg_group_h> self;

        /* Rank 1 holds ids 0..4; rank 0 proposes 0 and holds none */
        for (unsigned i = 0; (rank == 1) && (i < 5); ++i) {
            self.push_back(make_self_group(context));
            CHILD_CHECK(self.back()->id == i, "self group id %u",
                        self.back()->id);
        }
        for (ucg_group_h g : self) {
            if (g->id != 2) {
                ucg_group_destroy(g);
            }
        }
        /* A new group: the same id on every member, @a expected */
        auto group_with_id = [&](unsigned expected, const char *why) {
            ucg_group_h g = make_group(context, oob);
            check_same(oob, g->id, "id");
            CHILD_CHECK(g->id == expected, "id %u%s", g->id, why);
            return g;
        };

        /* Rank 1 now holds only id 2, proposes 5 */
        context->next_group_id = 0;

        ucg_group_h a = group_with_id(0, "");
        ucg_group_h b = group_with_id(1, "");
        ucg_group_h c = group_with_id(3, " (2 is in use on rank 1)");
        CHILD_CHECK(context->next_group_id == 4, "next id %u",
                    context->next_group_id);

        /* Wrap-around: proposals at the end of the id space */
        context->next_group_id = 0xffff;
        ucg_group_h d = group_with_id(0xffff, "");
        ucg_group_h e = group_with_id(4, " after the wrap");

        pg.barrier(rank);
        for (ucg_group_h g : {a, b, c, d, e}) {
            ucg_group_destroy(g);
        }
        ucg_group_destroy(ucg_context_find_group(context, 2));
        CHILD_CHECK(ucs_list_is_empty(&context->groups), "groups left");
    });
}

/* Host layouts of UCX_UCG_HOSTS, global ranks and caller host ids */
TEST_F(ucg_group_test, host_layout)
{
    struct layout {
        const char *hosts;     /* UCX_UCG_HOSTS */
        int        host_id;    /* 1: HOST_ID = rank % 2 */
        int        reverse;    /* 1: global rank = size - 1 - rank */
        unsigned   num_hosts;
        unsigned   host_of[4];
    };
    static const layout layouts[] = {
        {"auto", 0, 0, 1, {0, 0, 0, 0}},
        {"2",    0, 0, 2, {0, 0, 1, 1}},
        {"1",    0, 0, 4, {0, 1, 2, 3}},
        {"1,3",  0, 0, 2, {0, 1, 1, 1}},
        {"3,1",  0, 0, 2, {0, 0, 0, 1}},
        {"1,3",  0, 1, 2, {0, 0, 0, 1}},
        {"auto", 1, 0, 2, {0, 1, 0, 1}},
        {"1",    1, 0, 2, {0, 1, 0, 1}}  /* the caller's id wins */
    };

    for (const layout &l : layouts) {
        proc_group pg(4);

        pg.run_ok([&](unsigned rank) {
            oob_ctx oob = {&pg, rank};
            ucg_group_params_t params = group_params(oob);
            ucg_group_h group;

            setenv("UCX_UCG_HOSTS", l.hosts, 1);
            ucg_context_h context = make_context();

            if (l.host_id) {
                params.field_mask |= UCG_GROUP_PARAM_FIELD_HOST_ID;
                params.host_id     = 1000 + (rank % 2);
            }
            if (l.reverse) {
                params.field_mask |= UCG_GROUP_PARAM_FIELD_GLOBAL_RANK;
                params.global_rank = pg.size() - 1 - rank;
            }
            CHILD_CHECK_OK(ucg_group_create(context, &params, &group));

            CHILD_CHECK(group->topo.size == 4, "topo size");
            CHILD_CHECK(group->topo.num_hosts == l.num_hosts,
                        "HOSTS=%s: %u hosts, expected %u", l.hosts,
                        group->topo.num_hosts, l.num_hosts);
            for (unsigned r = 0; r < 4; ++r) {
                CHILD_CHECK(group->topo.host_of[r] == l.host_of[r],
                            "HOSTS=%s: rank %u on host %u, expected %u",
                            l.hosts, r, group->topo.host_of[r],
                            l.host_of[r]);
            }

            /* Virtual hosts within one real host keep shared memory */
            CHILD_CHECK(group->topo.o2m == context->o2m, "topo o2m %d",
                        group->topo.o2m);
            CHILD_CHECK(context->o2m, "o2m is off by default");

            /* Every other member is on this real host: watched */
            for (unsigned r = 0; r < 4; ++r) {
                CHILD_CHECK((r == rank) == (group->members[r].watch == NULL),
                            "watch of rank %u: %p", r,
                            group->members[r].watch);
                CHILD_CHECK(group->members[r].start_time != 0,
                            "start time of rank %u", r);
                CHILD_CHECK(group->members[r].pid == pg.pids()[r],
                            "pid of rank %u", r);
            }

            pg.barrier(rank);
            ucg_group_destroy(group);
            ucg_context_destroy(context);
        }, 60);
    }
}

/*
 * Members on different real hosts (simulated: the host id of two members is
 * changed) are not watched, and a virtual host spanning two real hosts
 * turns shared memory off.
 */
TEST_F(ucg_group_test, real_hosts)
{
    for (const char *hosts : {"auto", "4", "2"}) {
        proc_group pg(4);

        pg.run_ok([&](unsigned rank) {
            oob_ctx oob = {&pg, rank};

            setenv("UCX_UCG_HOSTS", hosts, 1);
            ucg_context_h context = make_context();
            CHILD_CHECK(context->o2m, "o2m is off by default");
            context->host_id ^= (rank >= 2) ? 0x5a5a : 0;

            ucg_group_h group = make_group(context, oob);
            if (!strcmp(hosts, "auto")) {
                /* Real hosts {0,1} and {2,3} */
                CHILD_CHECK(group->topo.num_hosts == 2, "%u hosts",
                            group->topo.num_hosts);
                CHILD_CHECK(group->topo.o2m, "o2m off");
            } else if (!strcmp(hosts, "4")) {
                /* One virtual host on two real hosts */
                CHILD_CHECK(group->topo.num_hosts == 1, "%u hosts",
                            group->topo.num_hosts);
                CHILD_CHECK(!group->topo.o2m, "o2m on across real hosts");
            } else {
                CHILD_CHECK(group->topo.num_hosts == 2, "%u hosts",
                            group->topo.num_hosts);
                CHILD_CHECK(group->topo.o2m, "o2m off");
            }

            for (unsigned r = 0; r < 4; ++r) {
                bool same = ((r >= 2) == (rank >= 2)) && (r != rank);
                CHILD_CHECK(same == (group->members[r].watch != NULL),
                            "HOSTS=%s: watch of rank %u: %p", hosts, r,
                            group->members[r].watch);
            }

            pg.barrier(rank);
            ucg_group_destroy(group);
            ucg_context_destroy(context);
        }, 60);
    }
}

/* O2M and UCX_TLS decide whether sm_bcast / sm_incast are opened */
TEST_F(ucg_group_test, o2m_settings)
{
    struct setting {
        const char  *o2m;   /* UCX_UCG_O2M, NULL: unset */
        const char  *tls;   /* UCX_TLS, NULL: unset */
        ucs_status_t status;
        int          o2m_on;
    };
    static const setting settings[] = {
        {NULL, NULL,                  UCS_OK,                 1},
        {"try", "all",                UCS_OK,                 1},
        {NULL, "^tcp",                UCS_OK,                 1},
        {NULL, "posix,self",          UCS_OK,                 0},
        {NULL, "^sm_incast",          UCS_OK,                 0},
        {NULL, "posix,self,sm_bcast", UCS_OK,                 0},
        {NULL, "posix,self,sm_bcast,sm_incast:aux", UCS_OK,   1},
        {"n",  NULL,                  UCS_OK,                 0},
        {"y",  NULL,                  UCS_OK,                 1},
        {"y",  "posix,self",          UCS_ERR_UNSUPPORTED,    0},
        {"y",  "posix,self,sm_incast", UCS_ERR_UNSUPPORTED,   0},
        {"y",  "^sm_bcast",           UCS_ERR_UNSUPPORTED,    0}
    };

    for (const setting &s : settings) {
        std::vector<std::pair<const char*, const char*>> env;
        std::string what = std::string("O2M=") + (s.o2m ? s.o2m : "-") +
                           " TLS=" + (s.tls ? s.tls : "-");

        if (s.o2m != NULL) {
            env.push_back({"UCX_UCG_O2M", s.o2m});
        }
        if (s.tls != NULL) {
            env.push_back({"UCX_TLS", s.tls});
        }

        run_with_env(env, [&]() {
            ucg_context_h context = NULL;
            ucs_status_t status;
            unsigned fds;

            /* Warm-up: UCX's descriptors that stay after a first use */
            if (ucg_context_create(NULL, NULL, &context) == UCS_OK) {
                ucg_context_destroy(context);
            }
            fds    = count_fds();
            status = ucg_context_create(NULL, NULL, &context);
            CHILD_CHECK(status == s.status, "%s: %s", what.c_str(),
                        ucs_status_string(status));
            if (status != UCS_OK) {
                CHILD_CHECK(count_fds() == fds, "%s: descriptors leaked",
                            what.c_str());
                CHILD_CHECK(o2m_held(getpid()).empty(), "%s: segments leaked",
                            what.c_str());
                return;
            }

            CHILD_CHECK(context->o2m == s.o2m_on, "%s: o2m %d",
                        what.c_str(), context->o2m);
            CHILD_CHECK((context->sm_iface[UCG_SM_BCAST] != NULL) ==
                        (s.o2m_on != 0), "%s: bcast iface", what.c_str());
            CHILD_CHECK((context->sm_iface[UCG_SM_INCAST] != NULL) ==
                        (s.o2m_on != 0), "%s: incast iface", what.c_str());
            if (s.o2m_on) {
                CHILD_CHECK(context->sm_max_bcopy > sizeof(ucg_sm_hdr_t),
                            "%s: max bcopy %zu", what.c_str(),
                            context->sm_max_bcopy);
            }

            ucg_group_h group = make_self_group(context);
            CHILD_CHECK(group->topo.o2m == s.o2m_on, "%s: topo o2m",
                        what.c_str());
            CHILD_CHECK(group->topo.num_hosts == 1, "hosts");
            ucg_group_destroy(group);
            ucg_context_destroy(context);
        });
    }
}

/* The configuration reaches the interfaces UCG opens */
TEST_F(ucg_group_test, o2m_iface_config)
{
    run_with_env({{"UCX_UCG_SM_MAX_GROUPS", "5"},
                  {"UCX_SM_BCAST_SEG_SIZE", "4k"}}, [&]() {
        ucg_context_h context = make_context();
        uct_o2m_iface_attr_t attr;

        CHILD_CHECK(context->o2m, "o2m off");
        for (int tl = 0; tl < UCG_SM_LAST; ++tl) {
            CHILD_CHECK_OK(uct_o2m_iface_query(context->sm_iface[tl], &attr));
            CHILD_CHECK(attr.max_groups == 5, "max groups %u",
                        attr.max_groups);
            CHILD_CHECK(attr.is_incast == (tl == UCG_SM_INCAST), "tl");
        }

        /* The smaller of the two */
        CHILD_CHECK(context->sm_max_bcopy < 4096, "max bcopy %zu",
                    context->sm_max_bcopy);
        ucg_context_destroy(context);
    });
}

/* Bad parameters: an error and a log line, nothing created */
TEST_F(ucg_group_test, bad_params)
{
    run_with_env({}, [&]() {
        ucg_context_params_t cparams;
        ucg_group_params_t params;
        ucg_context_h context;
        ucg_group_h group = NULL;

        CHILD_CHECK(ucg_context_create(NULL, NULL, NULL) ==
                    UCS_ERR_INVALID_PARAM, "NULL context_p");
        memset(&cparams, 0, sizeof(cparams));
        cparams.field_mask = UCG_CONTEXT_PARAM_FIELD_UCP_WORKER;
        CHILD_CHECK(ucg_context_create(&cparams, NULL, &context) ==
                    UCS_ERR_INVALID_PARAM, "NULL worker");

        context = make_context();
        memset(&params, 0, sizeof(params));
        params.size          = 2;
        params.rank          = 0;
        params.oob_allgather = self_allgather;

        ucg_group_params_t bad = params;
        bad.size = 0;
        CHILD_CHECK(ucg_group_create(context, &bad, &group) ==
                    UCS_ERR_INVALID_PARAM, "size 0");
        bad      = params;
        bad.rank = 2;
        CHILD_CHECK(ucg_group_create(context, &bad, &group) ==
                    UCS_ERR_INVALID_PARAM, "rank == size");
        bad      = params;
        bad.size = UCG_TAG_MAX_RANKS + 1;
        CHILD_CHECK(ucg_group_create(context, &bad, &group) ==
                    UCS_ERR_INVALID_PARAM, "size too large");
        bad               = params;
        bad.oob_allgather = NULL;
        CHILD_CHECK(ucg_group_create(context, &bad, &group) ==
                    UCS_ERR_INVALID_PARAM, "no allgather");
        CHILD_CHECK(ucg_group_create(context, NULL, &group) ==
                    UCS_ERR_INVALID_PARAM, "NULL params");
        CHILD_CHECK(ucg_group_create(context, &params, NULL) ==
                    UCS_ERR_INVALID_PARAM, "NULL group_p");
        CHILD_CHECK(group == NULL, "a group was returned");
        CHILD_CHECK(ucs_list_is_empty(&context->groups), "a group was kept");
        ucg_context_destroy(context);
    });

    /* A bad configuration fails the context */
    run_with_env({{"UCX_UCG_HOSTS", "2,x"}}, [&]() {
        ucg_context_h context = NULL;

        CHILD_CHECK(ucg_context_create(NULL, NULL, &context) ==
                    UCS_ERR_INVALID_PARAM, "HOSTS=2,x accepted");
    });
}

/* A failing out-of-band allgather fails the group everywhere */
TEST_F(ucg_group_test, oob_failure)
{
    run_with_env({}, [&]() {
        ucg_context_h context = make_context();
        ucg_group_params_t params;
        ucg_group_h group = NULL;

        memset(&params, 0, sizeof(params));
        params.size          = 1;
        params.oob_allgather = [](void *arg, const void *sbuf, void *rbuf,
                                  size_t len) -> ucs_status_t {
            return UCS_ERR_IO_ERROR;
        };
        CHILD_CHECK(ucg_group_create(context, &params, &group) ==
                    UCS_ERR_IO_ERROR, "allgather error not returned");
        CHILD_CHECK(ucs_list_is_empty(&context->groups), "a group was kept");

        /* And the id is still free */
        group = make_self_group(context);
        CHILD_CHECK(group->id == 0, "id %u", group->id);
        ucg_context_destroy(context);
    });
}

/* Two members claiming one rank: every member fails, none hangs */
TEST_F(ucg_group_test, duplicate_rank)
{
    run_with_context(2, [&](proc_group &pg, unsigned rank, oob_ctx &oob,
                            ucg_context_h context) {
        ucg_group_params_t params = group_params(oob);
        ucg_group_h group         = NULL;
        ucs_status_t status;

        params.rank = 0;
        status      = ucg_group_create(context, &params, &group);
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "rank %u: %s", rank,
                    ucs_status_string(status));
        CHILD_CHECK(ucs_list_is_empty(&context->groups), "a group was kept");

        /* The context is still fine */
        group = make_group(context, oob);
        p2p_ring(group, 0x77);
        pg.barrier(rank);
        ucg_group_destroy(group);
    });
}

/* A UCP worker given by the caller is used and left to the caller */
TEST_F(ucg_group_test, user_worker)
{
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        oob_ctx oob = {&pg, rank};
        ucp_worker_params_t wparams;
        ucg_context_params_t params;
        ucp_params_t ucp_params;
        ucp_config_t *config;
        ucp_context_h ucp_context;
        ucp_worker_h worker;

        CHILD_CHECK_OK(ucp_config_read(NULL, NULL, &config));
        memset(&ucp_params, 0, sizeof(ucp_params));
        ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES;
        ucp_params.features   = UCP_FEATURE_TAG | UCP_FEATURE_AM;
        CHILD_CHECK_OK(ucp_init(&ucp_params, config, &ucp_context));
        ucp_config_release(config);
        memset(&wparams, 0, sizeof(wparams));
        CHILD_CHECK_OK(ucp_worker_create(ucp_context, &wparams, &worker));

        memset(&params, 0, sizeof(params));
        params.field_mask  = UCG_CONTEXT_PARAM_FIELD_UCP_WORKER;
        params.ucp_context = ucp_context;
        params.ucp_worker  = worker;

        for (int i = 0; i < 2; ++i) {
            ucg_context_h context = make_context(&params);
            CHILD_CHECK(context->ucp_worker == worker, "worker");
            CHILD_CHECK(!context->own_ucp, "owns the caller's worker");

            ucg_group_h group = make_group(context, oob);
            p2p_ring(group, 0x10 + i);
            pg.barrier(rank);
            ucg_group_destroy(group);
            ucg_context_destroy(context);
            pg.barrier(rank);
        }

        /* Still usable */
        ucp_worker_progress(worker);
        ucp_worker_destroy(worker);
        ucp_cleanup(ucp_context);
    }, 60);
}


/* What the test's AM handlers saw */
struct am_log {
    unsigned          count;
    std::vector<char> last;
};

ucs_status_t am_log_cb(void *arg, void *data, size_t length, unsigned flags)
{
    am_log *log = static_cast<am_log*>(arg);

    log->count++;
    log->last.assign((char*)data, (char*)data + length);
    return UCS_OK;
}

struct pack_arg {
    const void *buf;
    size_t     len;
};

size_t pack_cb(void *dest, void *arg)
{
    pack_arg *p = static_cast<pack_arg*>(arg);

    memcpy(dest, p->buf, p->len);
    return p->len;
}

/* bcopy on an o2m endpoint, retried while the ring is full or the group
 * is not joined yet */
void send_bcopy(ucg_context_h context, uct_ep_h ep, const void *buf,
                size_t len)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(wait_timeout);
    pack_arg arg        = {buf, len};
    ssize_t ret;

    while ((ret = uct_ep_am_bcopy(ep, UCG_SM_AM_ID, pack_cb, &arg, 0)) ==
           UCS_ERR_NO_RESOURCE) {
        CHILD_CHECK(ucs_get_time() < deadline, "send timed out");
        uct_worker_progress(context->uct_worker);
    }
    CHILD_CHECK(ret == (ssize_t)len, "am_bcopy: %zd", ret);
}

void progress_until(ucg_context_h context, const std::function<bool()> &cond,
                    const char *what)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(wait_timeout);

    while (!cond()) {
        CHILD_CHECK(ucs_get_time() < deadline, "%s timed out", what);
        if (uct_worker_progress(context->uct_worker) == 0) {
            sched_yield();
        }
    }
}

/*
 * ucg_group_sm_ep(): cached, distinct per mode, and working: a fan-out from
 * rank 1 and a fan-in sum to rank 1 through UCG's interfaces, with UCG's
 * header (hdr_len) kept out of the reduction.
 */
TEST_F(ucg_group_test, sm_ep)
{
    proc_group pg(3);

    pg.run_ok([&](unsigned rank) {
        oob_ctx oob = {&pg, rank};
        ucg_context_h context = make_context();
        unsigned fds;

        fds = count_fds();
        {
            ucg_group_h group = make_group(context, oob);
            unsigned ranks[3] = {0, 1, 2}, other[2] = {0, 2};
            ucg_phase_set_t set = {3, 1, ranks};
            ucg_phase_set_t not_mine = {2, 0, other};
            am_log bcast_log = {0, {}}, incast_log = {0, {}};
            uct_ep_h ep, ep2, ep_c, ep_in;

            CHILD_CHECK(group->topo.o2m, "o2m off");
            CHILD_CHECK_OK(uct_iface_set_am_handler(
                    context->sm_iface[UCG_SM_BCAST], UCG_SM_AM_ID, am_log_cb,
                    &bcast_log, 0));
            CHILD_CHECK_OK(uct_iface_set_am_handler(
                    context->sm_iface[UCG_SM_INCAST], UCG_SM_AM_ID,
                    am_log_cb, &incast_log, 0));

            CHILD_CHECK_OK(ucg_group_sm_ep(group, UCG_SM_BCAST, &set,
                                           UCT_O2M_MODE_BATCHED,
                                           UCT_O2M_OP_SUM, UCT_O2M_DT_INT32,
                                           &ep));
            /* op / dtype do not matter for fan-out */
            CHILD_CHECK_OK(ucg_group_sm_ep(group, UCG_SM_BCAST, &set,
                                           UCT_O2M_MODE_BATCHED,
                                           UCT_O2M_OP_GATHER,
                                           UCT_O2M_DT_INT8, &ep2));
            CHILD_CHECK(ep == ep2, "bcast endpoint not cached");
            CHILD_CHECK_OK(ucg_group_sm_ep(group, UCG_SM_BCAST, &set,
                                           UCT_O2M_MODE_CENTRALIZED,
                                           UCT_O2M_OP_GATHER,
                                           UCT_O2M_DT_INT8, &ep_c));
            CHILD_CHECK(ep_c != ep, "one endpoint for two modes");
            CHILD_CHECK_OK(ucg_group_sm_ep(group, UCG_SM_INCAST, &set,
                                           UCT_O2M_MODE_BATCHED,
                                           UCT_O2M_OP_SUM, UCT_O2M_DT_INT32,
                                           &ep_in));
            CHILD_CHECK_OK(ucg_group_sm_ep(group, UCG_SM_INCAST, &set,
                                           UCT_O2M_MODE_BATCHED,
                                           UCT_O2M_OP_SUM, UCT_O2M_DT_INT32,
                                           &ep2));
            CHILD_CHECK(ep_in == ep2, "incast endpoint not cached");
            CHILD_CHECK(ucs_list_length(&group->sm_eps) == 3, "%zu sm eps",
                        ucs_list_length(&group->sm_eps));

            if (rank != 1) {
                CHILD_CHECK(ucg_group_sm_ep(group, UCG_SM_BCAST, &not_mine,
                                            UCT_O2M_MODE_BATCHED,
                                            UCT_O2M_OP_GATHER,
                                            UCT_O2M_DT_INT8, &ep2) == UCS_OK,
                            "own set refused");
            } else {
                CHILD_CHECK(ucg_group_sm_ep(group, UCG_SM_BCAST, &not_mine,
                                            UCT_O2M_MODE_BATCHED,
                                            UCT_O2M_OP_GATHER,
                                            UCT_O2M_DT_INT8, &ep2) ==
                            UCS_ERR_INVALID_PARAM, "a set without me");
            }

            /* Fan-out from rank 1 */
            char msg[100];
            for (unsigned i = 0; i < sizeof(msg); ++i) {
                msg[i] = (char)(i * 7 + 3);
            }
            if (rank == 1) {
                send_bcopy(context, ep, msg, sizeof(msg));
            } else {
                progress_until(context, [&]() {
                    return bcast_log.count > 0;
                }, "bcast receive");
                CHILD_CHECK(bcast_log.count == 1, "%u messages",
                            bcast_log.count);
                CHILD_CHECK((bcast_log.last.size() == sizeof(msg)) &&
                            !memcmp(bcast_log.last.data(), msg, sizeof(msg)),
                            "bcast data");
            }

            /* Fan-in sum to rank 1: header + 4 int32 */
            struct {
                ucg_sm_hdr_t hdr;
                int32_t      v[4];
            } contrib;
            memset(&contrib, 0, sizeof(contrib));
            contrib.hdr.group_id = group->id;
            contrib.hdr.seq      = 7 + rank;
            contrib.hdr.frag     = 100 + rank;
            for (int i = 0; i < 4; ++i) {
                contrib.v[i] = (rank + 1) * (i + 1);
            }
            if (rank != 1) {
                send_bcopy(context, ep_in, &contrib, sizeof(contrib));
            } else {
                progress_until(context, [&]() {
                    return incast_log.count > 0;
                }, "incast receive");
                CHILD_CHECK(incast_log.last.size() == sizeof(contrib),
                            "incast length %zu", incast_log.last.size());
                memcpy(&contrib, incast_log.last.data(), sizeof(contrib));
                /* Header of the lowest contributor (rank 0) */
                CHILD_CHECK((contrib.hdr.group_id == group->id) &&
                            (contrib.hdr.seq == 7) &&
                            (contrib.hdr.frag == 100), "incast header");
                for (int i = 0; i < 4; ++i) {
                    CHILD_CHECK(contrib.v[i] == (1 + 3) * (i + 1),
                                "sum[%d] = %d", i, contrib.v[i]);
                }
            }

            pg.barrier(rank);
            ucg_group_destroy(group);
        }

        /* A group without the transports refuses */
        {
            ucg_group_h group = make_self_group(context);
            unsigned ranks[1] = {0};
            ucg_phase_set_t set = {1, 0, ranks};
            uct_ep_h ep;

            group->topo.o2m = 0;
            CHILD_CHECK(ucg_group_sm_ep(group, UCG_SM_BCAST, &set,
                                        UCT_O2M_MODE_BATCHED,
                                        UCT_O2M_OP_GATHER, UCT_O2M_DT_INT8,
                                        &ep) == UCS_ERR_UNSUPPORTED,
                        "sm ep without o2m");
            ucg_group_destroy(group);
        }

        /* A root keeps a destroyed group until every member has left it
         * (they may still be joining): released by progress */
        pg.barrier(rank);
        progress_until(context, [&]() { return count_fds() == fds; },
                       "descriptors back to what they were");
        ucg_context_destroy(context);
        CHILD_CHECK(o2m_held(getpid()).empty(), "o2m segments left behind");
    }, 60);
}

/*
 * A member killed with SIGKILL: ucg_group_check() reports it within
 * CHECK_INTERVAL (plus scheduling slack), the failure sticks, and the group
 * and context are still destroyed in bounded time.
 */
TEST_F(ucg_group_test, check_detects_dead_member)
{
    proc_group pg(3);
    const double interval = 0.05, slack = 2.0, peer_timeout = 2.0;
    std::vector<int> status;

    status = pg.run([&](unsigned rank) {
        oob_ctx oob = {&pg, rank};

        setenv("UCX_UCG_CHECK_INTERVAL", "50ms", 1);
        setenv("UCX_UCG_PEER_TIMEOUT", "2s", 1);
        ucg_context_h context = make_context();
        ucg_group_h group     = make_group(context, oob);
        unsigned ranks[3]     = {0, 1, 2};
        ucg_phase_set_t set   = {3, 0, ranks};
        uct_ep_h sm_ep;
        ucp_ep_h ep;

        /* Endpoints to the member that will die */
        for (unsigned r = 0; r < 3; ++r) {
            CHILD_CHECK_OK(ucg_group_p2p_ep(group, r, &ep));
        }
        CHILD_CHECK_OK(ucg_group_sm_ep(group, UCG_SM_BCAST, &set,
                                       UCT_O2M_MODE_BATCHED,
                                       UCT_O2M_OP_GATHER, UCT_O2M_DT_INT8,
                                       &sm_ep));

        CHILD_CHECK(ucg_group_check(group) == UCS_OK, "all alive");
        pg.barrier(rank);
        if (rank == 2) {
            raise(SIGKILL);
        }

        /* The barrier of the test harness cannot be used any more */
        ucs_time_t start = ucs_get_time();
        ucs_status_t st;
        while ((st = ucg_group_check(group)) == UCS_OK) {
            CHILD_CHECK(ucs_time_to_sec(ucs_get_time() - start) <
                        interval + slack, "death not detected");
            sched_yield();
        }
        CHILD_CHECK(st == UCS_ERR_CONNECTION_RESET, "%s",
                    ucs_status_string(st));
        CHILD_CHECK(group->failed == UCS_ERR_CONNECTION_RESET, "not sticky");
        CHILD_CHECK(ucg_group_check(group) == UCS_ERR_CONNECTION_RESET,
                    "not sticky");

        start = ucs_get_time();
        ucg_group_destroy(group);
        ucg_context_destroy(context);
        CHILD_CHECK(ucs_time_to_sec(ucs_get_time() - start) <
                    2 * peer_timeout + slack, "teardown took %.1f s",
                    ucs_time_to_sec(ucs_get_time() - start));
        CHILD_CHECK(o2m_held(getpid()).empty(), "o2m segments left behind");
    }, 60);

    ASSERT_EQ(3u, status.size());
    EXPECT_EQ(0, status[0]);
    EXPECT_EQ(0, status[1]);
    EXPECT_EQ(128 + SIGKILL, status[2]);
}

/* A check before CHECK_INTERVAL has passed does not poll again */
TEST_F(ucg_group_test, check_interval)
{
    proc_group pg(2);
    std::vector<int> status;

    status = pg.run([&](unsigned rank) {
        oob_ctx oob = {&pg, rank};

        setenv("UCX_UCG_CHECK_INTERVAL", "1s", 1);
        ucg_context_h context = make_context();
        ucg_group_h group     = make_group(context, oob);

        CHILD_CHECK(ucg_group_check(group) == UCS_OK, "alive");
        pg.barrier(rank);
        if (rank == 1) {
            raise(SIGKILL);
        }

        /* Not polled again for 1 s (the first check was just done) */
        usleep(100000);
        CHILD_CHECK(ucg_group_check(group) == UCS_OK, "polled too early");

        ucs_time_t start = ucs_get_time();
        while (ucg_group_check(group) == UCS_OK) {
            CHILD_CHECK(ucs_time_to_sec(ucs_get_time() - start) < 4.0,
                        "death not detected");
            usleep(1000);
        }
        ucg_group_destroy(group);
        ucg_context_destroy(context);
    }, 60);

    ASSERT_EQ(2u, status.size());
    EXPECT_EQ(0, status[0]);
    EXPECT_EQ(128 + SIGKILL, status[1]);
}

} // namespace
