/**
 * ucx-o2m tests: the point-to-point phase algorithms of phase/ucg_p2p_*.c
 * against a simulated network, inside one process (no UCP).
 *
 * This program defines the primitives they use (ucg_p2p_send/recv/
 * test, ucg_coll_scratch).  p2p_sim runs one phase on N virtual members,
 * each with its own ucg_coll_t: messages match by (source, destination,
 * step) in posting order and are delivered by copy, in a random (seeded)
 * interleaving of starts, progress calls and deliveries.  Sends are eager
 * (copied and completed when posted) or rendezvous (read when delivered,
 * complete then), at random.  The simulator reports:
 *  - deadlock: no delivery possible and no member posts or finishes;
 *  - truncation (receive shorter than the message; the receive fails as in
 *    UCP) and any size mismatch;
 *  - a send buffer changed while its send is in flight, a receive buffer
 *    read before completion (receive buffers are poisoned when posted, so
 *    the result is then wrong);
 *  - a phase returning UCS_OK with requests outstanding, a message to a
 *    rank outside the member's set, messages left unmatched.
 * Modes: uniform random choice among all possible actions; random delays
 * on every request; deliveries first (fast network).
 *
 * Tests: every P2P_* method (alltoall's with random per-pair counts too)
 * for set sizes 1..17, several roots, counts
 * 0 / 1 / odd / large, radices, fragment sizes, owner layouts (identity,
 * contiguous hosts, interleaved hosts, random hosts), several sets in one
 * phase, bit-identical results across interleavings, error propagation,
 * and the simulator's own detection of the failures above.
 */
extern "C" {
#include "phase/ucg_p2p.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {

const uint8_t POISON_INIT = 0xee; /* bytes a member must not touch */
const uint8_t POISON_RECV = 0xcd; /* receive buffers when posted */

uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint8_t pattern(uint64_t seed, uint64_t a, uint64_t b)
{
    return (uint8_t)mix(seed ^ mix(a * 1000003ull + b));
}


/*
 * The P2P_* rows of ucg_phase_table, start and progress: the table itself
 * (phase/ucg_phase.c) is not linked here, its SM_* rows need UCT.
 * ucg_phase_table.p2p_rows (test_ucg_coll.cc) checks that the table has
 * these functions.
 */
const ucg_phase_ops_t *p2p_row(ucg_phase_method_t method)
{
    static ucg_phase_ops_t rows[UCG_PHASE_LAST];

    if (rows[UCG_PHASE_P2P_BCAST].start == NULL) {
        rows[UCG_PHASE_P2P_BCAST]            = {ucg_p2p_bcast_start,
                                                ucg_p2p_bcast_progress};
        rows[UCG_PHASE_P2P_REDUCE]           = {ucg_p2p_reduce_start,
                                                ucg_p2p_reduce_progress};
        rows[UCG_PHASE_P2P_ALLREDUCE_RD]     = {ucg_p2p_allreduce_rd_start,
                                                ucg_p2p_allreduce_rd_progress};
        rows[UCG_PHASE_P2P_ALLREDUCE_RING]   = {
                ucg_p2p_allreduce_ring_start,
                ucg_p2p_allreduce_ring_progress};
        rows[UCG_PHASE_P2P_GATHER]           = {ucg_p2p_gather_start,
                                                ucg_p2p_wait_progress};
        rows[UCG_PHASE_P2P_SCATTER]          = {ucg_p2p_scatter_start,
                                                ucg_p2p_wait_progress};
        rows[UCG_PHASE_P2P_ALLGATHER_RING]   = {
                ucg_p2p_allgather_ring_start,
                ucg_p2p_allgather_ring_progress};
        rows[UCG_PHASE_P2P_ALLGATHER_LINEAR] = {
                ucg_p2p_allgather_linear_start, ucg_p2p_wait_progress};
        rows[UCG_PHASE_P2P_BARRIER]          = {ucg_p2p_barrier_start,
                                                ucg_p2p_barrier_progress};
        rows[UCG_PHASE_P2P_REDUCE_SCATTER]   = {
                ucg_p2p_reduce_scatter_start,
                ucg_p2p_reduce_scatter_progress};
        rows[UCG_PHASE_P2P_SCAN]             = {ucg_p2p_scan_start,
                                                ucg_p2p_scan_progress};
        rows[UCG_PHASE_P2P_ALLTOALL_LINEAR]  = {
                ucg_p2p_alltoall_linear_start, ucg_p2p_wait_progress};
        rows[UCG_PHASE_P2P_ALLTOALL_PAIRWISE] = {
                ucg_p2p_alltoall_pairwise_start,
                ucg_p2p_alltoall_pairwise_progress};
    }
    return &rows[method];
}


/* A phase with its storage */
struct phase_desc {
    ucg_phase_t                        phase;
    std::vector<std::vector<unsigned>> ranks;
    std::vector<ucg_phase_set_t>       sets;
    std::vector<unsigned>              owner;

    phase_desc(ucg_phase_method_t method, unsigned radix = 2,
               size_t frag_size = 0)
    {
        memset(&phase, 0, sizeof(phase));
        phase.method    = method;
        phase.radix     = radix;
        phase.frag_size = frag_size;
    }

    /* ranks ascending; root_idx: index in it */
    void add_set(const std::vector<unsigned> &set_ranks, unsigned root_idx)
    {
        ranks.push_back(set_ranks);
        std::sort(ranks.back().begin(), ranks.back().end());
        ucg_phase_set_t set;
        set.count = (unsigned)set_ranks.size();
        set.root  = root_idx;
        set.ranks = NULL;
        sets.push_back(set);
    }

    /* Pointers, once all sets are added */
    const ucg_phase_t *get()
    {
        for (size_t i = 0; i < sets.size(); ++i) {
            sets[i].ranks = ranks[i].data();
        }
        phase.num_sets = (unsigned)sets.size();
        phase.sets     = sets.data();
        phase.owner    = owner.empty() ? NULL : owner.data();
        return &phase;
    }
};


struct sim_req {
    unsigned          member;
    bool              is_send;
    unsigned          src, dst, step;
    void              *buf;
    size_t            len;
    bool              rndv;
    std::vector<char> data;     /* eager: the message; rndv: as posted */
    bool              done;
    ucs_status_t      status;
    uint64_t          ready_tick;
};

struct sim_member {
    ucg_coll_t                             coll;
    bool                                   in_set;
    bool                                   started;
    bool                                   done;
    ucs_status_t                           result;
    std::vector<sim_req*>                  reqs;
    std::vector<std::unique_ptr<char[]>>   scratch;
    std::vector<size_t>                    scratch_len;
};

enum sim_mode {
    SIM_UNIFORM,  /* any possible action, uniformly */
    SIM_DELAYS,   /* every request becomes deliverable after a random delay */
    SIM_FAST,     /* deliver everything possible before each progress call */
    SIM_LAST
};

typedef std::tuple<unsigned, unsigned, unsigned> msg_key; /* src dst step */

class p2p_sim;
p2p_sim *g_sim = NULL;

class p2p_sim {
public:
    struct result {
        bool                      deadlock = false;
        bool                      too_long = false;
        std::vector<std::string>  violations;
        std::vector<ucs_status_t> status;  /* per member (UCS_OK if idle) */
        bool                      barrier_early = false;
    };

    p2p_sim(unsigned size, const ucg_phase_t *phase, sim_mode mode,
            uint64_t seed, const ucg_phase_ops_t *ops = NULL) :
        m_size(size), m_phase(phase), m_mode(mode), m_rng(seed),
        m_ops(ops ? ops : p2p_row(phase->method)),
        m_members(size)
    {
        memset(&m_group, 0, sizeof(m_group));
        m_group.size = size;

        for (unsigned r = 0; r < size; ++r) {
            m_members[r].reset(new sim_member());
            sim_member &m = *m_members[r];
            memset(&m.coll, 0, sizeof(m.coll));
            m.coll.group   = &m_group;
            m.coll.phase   = phase;
            m.coll.set     = find_set(r, &m.coll.my_idx);
            m.coll.status  = UCS_INPROGRESS;
            m.in_set       = (m.coll.set != NULL);
            m.started      = false;
            m.done         = !m.in_set;
            m.result       = UCS_OK;
            m.scratch.resize(UCG_COLL_MAX_SCRATCH);
            m.scratch_len.resize(UCG_COLL_MAX_SCRATCH, 0);
            m_by_coll[&m.coll] = r;
        }
    }

    ~p2p_sim()
    {
        for (sim_req *req : m_all_reqs) {
            delete req;
        }
    }

    ucg_coll_t *coll(unsigned rank)
    {
        return &m_members[rank]->coll;
    }

    bool in_set(unsigned rank) const
    {
        return m_members[rank]->in_set;
    }

    /* Failure injection: the n-th post (from 0) fails, or completes with an
     * error */
    void fail_post(int n) { m_fail_post = n; }
    void fail_req(int n)  { m_fail_req = n; }

    result run()
    {
        const uint64_t max_iters = 20000000;
        std::vector<unsigned> actions;
        uint64_t events_before;

        m_result = result();
        g_sim    = this;

        for (uint64_t iter = 0;; ++iter, ++m_tick) {
            if (iter == max_iters) {
                m_result.too_long = true;
                break;
            }

            if (m_mode == SIM_FAST) {
                while (deliver_one()) {
                }
            }

            /* Actions: start or progress a member, or deliver */
            actions.clear();
            for (unsigned r = 0; r < m_size; ++r) {
                if (!m_members[r]->done) {
                    actions.push_back(r);
                }
            }

            if (actions.empty()) {
                break; /* all done */
            }

            size_t ready = count_ready();
            if ((ready == 0) && !any_matchable() && all_started()) {
                /* Nothing can arrive: every member must now do something
                 * by itself, or it never will */
                events_before = m_events;
                for (unsigned r : actions) {
                    call(r);
                }
                if (m_events == events_before) {
                    m_result.deadlock = true;
                    break;
                }
                continue;
            }

            size_t choice = m_rng() % (actions.size() + ready);
            if (choice < actions.size()) {
                call(actions[choice]);
            } else {
                deliver_one();
            }
        }

        /* Leftovers */
        if (!m_result.deadlock && !m_result.too_long) {
            for (auto &q : m_sendq) {
                if (!q.second.empty()) {
                    violation("unmatched send " + key_str(q.first));
                }
            }
            for (auto &q : m_recvq) {
                if (!q.second.empty()) {
                    violation("unmatched receive " + key_str(q.first));
                }
            }
        }

        for (unsigned r = 0; r < m_size; ++r) {
            m_result.status.push_back(m_members[r]->done ?
                                      m_members[r]->result : UCS_INPROGRESS);
        }

        g_sim = NULL;
        return m_result;
    }

    /* ---- primitives ---- */

    ucs_status_t post(ucg_coll_t *coll, bool is_send, unsigned peer,
                      unsigned step, void *buf, size_t len)
    {
        unsigned me = member_of(coll);
        sim_member &m = *m_members[me];

        if (m_in_call != (int)me) {
            violation("member " + std::to_string(me) +
                      " posts outside its start/progress");
        }
        if (peer >= m_size) {
            violation("peer rank " + std::to_string(peer) + " out of range");
            return UCS_ERR_INVALID_PARAM;
        }
        if (peer == me) {
            violation("member " + std::to_string(me) + " messages itself");
        }
        if (step > 255) {
            violation("step " + std::to_string(step) + " > 255");
        }
        if ((m.coll.set == NULL) ||
            !std::binary_search(m.coll.set->ranks,
                                m.coll.set->ranks + m.coll.set->count, peer)) {
            violation("member " + std::to_string(me) + " messages rank " +
                      std::to_string(peer) + " outside its set");
        }
        if ((len > 0) && (buf == NULL)) {
            violation("NULL buffer with length " + std::to_string(len));
            return UCS_ERR_INVALID_PARAM;
        }

        /* An algorithm looping on posts must still end */
        if (++m_call_posts > MAX_CALL_POSTS) {
            violation("member " + std::to_string(me) + " posts more than " +
                      std::to_string(MAX_CALL_POSTS) + " in one call");
            return UCS_ERR_EXCEEDS_LIMIT;
        }

        int post_no = m_posts++;
        if (post_no == m_fail_post) {
            return UCS_ERR_NO_RESOURCE;
        }

        sim_req *req    = new sim_req();
        m_all_reqs.push_back(req);
        req->member     = me;
        req->is_send    = is_send;
        req->src        = is_send ? me : peer;
        req->dst        = is_send ? peer : me;
        req->step       = step;
        req->buf        = buf;
        req->len        = len;
        req->rndv       = is_send && (m_rng() % 2);
        req->done       = false;
        req->status     = UCS_INPROGRESS;
        req->ready_tick = m_tick + ((m_mode == SIM_DELAYS) ?
                                    (m_rng() % 40) : 0);
        m.reqs.push_back(req);
        ++m_events;

        if (post_no == m_fail_req) {
            req->done   = true;
            req->status = UCS_ERR_IO_ERROR;
            return UCS_OK;
        }

        if (is_send) {
            req->data.assign((char*)buf, (char*)buf + len);
            if (!req->rndv) {
                req->done   = true;  /* eager: buffer free at once */
                req->status = UCS_OK;
            }
            m_sendq[key(req)].push_back(req);
        } else {
            memset(buf, POISON_RECV, len);
            m_recvq[key(req)].push_back(req);
        }

        if (!m_recvq[key(req)].empty() && !m_sendq[key(req)].empty()) {
            m_matchable.insert(key(req));
            /* A receive of a message already there completes at once (UCP's
             * unexpected queue) */
            if (!is_send && (m_mode != SIM_DELAYS) && (m_rng() % 3 == 0) &&
                (m_recvq[key(req)].front() == req)) {
                deliver(key(req));
            }
        }
        return UCS_OK;
    }

    ucs_status_t test(ucg_coll_t *coll)
    {
        sim_member &m = *m_members[member_of(coll)];

        /* An algorithm spinning inside one call must still end */
        if (++m_call_tests > MAX_CALL_TESTS) {
            if (m_call_tests == MAX_CALL_TESTS + 1) {
                violation("member " + std::to_string(member_of(coll)) +
                          " spins in one call");
            }
            return UCS_ERR_TIMED_OUT;
        }

        /* The worker may progress in between */
        if ((m_rng() % 4) == 0) {
            deliver_one();
        }

        ucs_status_t status = UCS_OK;
        for (sim_req *req : m.reqs) {
            if (req->done && (req->status != UCS_OK)) {
                return req->status;
            }
            if (!req->done) {
                status = UCS_INPROGRESS;
            }
        }
        return status;
    }

    void *scratch(ucg_coll_t *coll, unsigned idx, size_t size)
    {
        sim_member &m = *m_members[member_of(coll)];

        if ((idx < 2) || (idx >= UCG_COLL_MAX_SCRATCH)) {
            /* 0 and 1 hold the executor's acc and gbuf */
            violation("scratch index " + std::to_string(idx));
            return NULL;
        }
        if (size > m.scratch_len[idx]) {
            m.scratch[idx].reset(new char[size]);
            m.scratch_len[idx] = size;
        }
        /* Content is undefined: make it visible if relied upon */
        memset(m.scratch[idx].get(), 0x5a, m.scratch_len[idx]);
        return m.scratch[idx].get();
    }

private:
    const ucg_phase_set_t *find_set(unsigned rank, unsigned *idx_p)
    {
        for (unsigned s = 0; s < m_phase->num_sets; ++s) {
            const ucg_phase_set_t *set = &m_phase->sets[s];
            for (unsigned i = 0; i < set->count; ++i) {
                if (set->ranks[i] == rank) {
                    *idx_p = i;
                    return set;
                }
            }
        }
        *idx_p = 0;
        return NULL;
    }

    unsigned member_of(const ucg_coll_t *coll)
    {
        auto it = m_by_coll.find(coll);
        if (it == m_by_coll.end()) {
            ADD_FAILURE() << "unknown ucg_coll_t " << coll;
            abort();
        }
        return it->second;
    }

    static msg_key key(const sim_req *req)
    {
        return msg_key(req->src, req->dst, req->step);
    }

    static std::string key_str(const msg_key &k)
    {
        return "(src " + std::to_string(std::get<0>(k)) + ", dst " +
               std::to_string(std::get<1>(k)) + ", step " +
               std::to_string(std::get<2>(k)) + ")";
    }

    void violation(const std::string &what)
    {
        if (m_result.violations.size() < 20) {
            m_result.violations.push_back(what);
        }
    }

    bool all_started() const
    {
        for (auto &m : m_members) {
            if (m->in_set && !m->started) {
                return false;
            }
        }
        return true;
    }

    bool any_matchable() const
    {
        return !m_matchable.empty();
    }

    bool ready(const msg_key &k)
    {
        return (m_sendq[k].front()->ready_tick <= m_tick) &&
               (m_recvq[k].front()->ready_tick <= m_tick);
    }

    size_t count_ready()
    {
        size_t n = 0;
        for (const msg_key &k : m_matchable) {
            n += ready(k);
        }
        return n;
    }

    /* Deliver a random ready message; false if none */
    bool deliver_one()
    {
        std::vector<msg_key> keys;
        for (const msg_key &k : m_matchable) {
            if (ready(k)) {
                keys.push_back(k);
            }
        }
        if (keys.empty()) {
            return false;
        }

        deliver(keys[m_rng() % keys.size()]);
        return true;
    }

    void deliver(msg_key k)
    {
        sim_req *snd = m_sendq[k].front();
        sim_req *rcv = m_recvq[k].front();
        m_sendq[k].pop_front();
        m_recvq[k].pop_front();
        if (m_sendq[k].empty() || m_recvq[k].empty()) {
            m_matchable.erase(k);
        }

        if (snd->rndv && (snd->len > 0) &&
            memcmp(snd->buf, snd->data.data(), snd->len)) {
            violation("send buffer of " + key_str(k) +
                      " changed while in flight");
        }

        const char *src = snd->rndv ? (const char*)snd->buf : snd->data.data();
        if (snd->len > rcv->len) {
            violation("truncated: " + key_str(k) + " sends " +
                      std::to_string(snd->len) + " bytes into " +
                      std::to_string(rcv->len));
            memcpy(rcv->buf, src, rcv->len);
            rcv->status = UCS_ERR_MESSAGE_TRUNCATED;
        } else {
            if (snd->len < rcv->len) {
                violation("size mismatch: " + key_str(k) + " sends " +
                          std::to_string(snd->len) + " bytes, receive of " +
                          std::to_string(rcv->len));
            }
            if (snd->len > 0) {
                memcpy(rcv->buf, src, snd->len);
            }
            rcv->status = UCS_OK;
        }
        rcv->done = true;
        if (!snd->done) {
            snd->done   = true;
            snd->status = UCS_OK;
        }
        ++m_events;
    }

    void call(unsigned r)
    {
        sim_member &m = *m_members[r];
        ucs_status_t status;

        m_in_call    = (int)r;
        m_call_posts = 0;
        m_call_tests = 0;
        if (!m.started) {
            m.started = true;
            ++m_events;
            status = m_ops->start(&m.coll);
        } else {
            status = m_ops->progress(&m.coll);
        }
        m_in_call = -1;

        if (status == UCS_INPROGRESS) {
            return;
        }

        if (status == UCS_OK) {
            for (sim_req *req : m.reqs) {
                if (!req->done) {
                    violation("member " + std::to_string(r) +
                              " completed with a request outstanding");
                    break;
                }
            }
            if (!all_started()) {
                m_result.barrier_early = true;
            }

            /* The executor may call progress() again (after a start()
             * that completed at once): nothing more may happen */
            size_t nreqs = m.reqs.size();
            m_in_call    = (int)r;
            m_call_tests = 0;
            for (int i = 0; i < 2; ++i) {
                status = m_ops->progress(&m.coll);
                if ((status != UCS_OK) || (m.reqs.size() != nreqs)) {
                    violation("member " + std::to_string(r) +
                              ": progress after completion returned " +
                              ucs_status_string(status) + " and posted " +
                              std::to_string(m.reqs.size() - nreqs));
                    break;
                }
            }
            m_in_call = -1;
        }

        m.done   = true;
        m.result = status;
        ++m_events;
    }

    static const int MAX_CALL_POSTS = 1000000;
    static const int MAX_CALL_TESTS = 100000;

    unsigned                                 m_size;
    const ucg_phase_t                        *m_phase;
    sim_mode                                 m_mode;
    std::mt19937_64                          m_rng;
    const ucg_phase_ops_t                    *m_ops;
    ucg_group_t                              m_group;
    std::vector<std::unique_ptr<sim_member>> m_members;
    std::map<const ucg_coll_t*, unsigned>    m_by_coll;
    std::map<msg_key, std::deque<sim_req*>>  m_sendq, m_recvq;
    std::set<msg_key>                        m_matchable;
    std::vector<sim_req*>                    m_all_reqs;
    uint64_t                                 m_tick   = 0;
    uint64_t                                 m_events = 0;
    int                                      m_in_call = -1;
    int                                      m_posts   = 0;
    int                                      m_call_posts = 0;
    int                                      m_call_tests = 0;
    int                                      m_fail_post = -1;
    int                                      m_fail_req  = -1;
    result                                   m_result;
};

} // namespace


/* ---- the primitives phase/ucg_p2p_*.c link against ---- */

extern "C" ucs_status_t ucg_p2p_send(ucg_coll_t *coll, unsigned peer,
                                     unsigned step, const void *buf,
                                     size_t len)
{
    return g_sim->post(coll, true, peer, step, const_cast<void*>(buf), len);
}

extern "C" ucs_status_t ucg_p2p_recv(ucg_coll_t *coll, unsigned peer,
                                     unsigned step, void *buf, size_t len)
{
    return g_sim->post(coll, false, peer, step, buf, len);
}

extern "C" ucs_status_t ucg_p2p_test(ucg_coll_t *coll)
{
    return g_sim->test(coll);
}

extern "C" void *ucg_coll_scratch(ucg_coll_t *coll, unsigned idx, size_t size)
{
    return g_sim->scratch(coll, idx, size);
}


namespace {

std::string describe(const p2p_sim::result &res)
{
    std::string s;
    if (res.deadlock) {
        s += "deadlock; ";
    }
    if (res.too_long) {
        s += "did not finish; ";
    }
    for (const std::string &v : res.violations) {
        s += v + "; ";
    }
    for (size_t r = 0; r < res.status.size(); ++r) {
        if (res.status[r] != UCS_OK) {
            s += "rank " + std::to_string(r) + ": " +
                 ucs_status_string(res.status[r]) + "; ";
        }
    }
    return s;
}

bool clean(const p2p_sim::result &res)
{
    if (res.deadlock || res.too_long || !res.violations.empty()) {
        return false;
    }
    for (ucs_status_t status : res.status) {
        if (status != UCS_OK) {
            return false;
        }
    }
    return true;
}

#define EXPECT_CLEAN(_res, _what) \
    EXPECT_TRUE(clean(_res)) << (_what) << ": " << describe(_res)

std::string params_str(const char *name, unsigned size, unsigned root,
                       size_t count, unsigned radix, size_t frag,
                       sim_mode mode, uint64_t seed)
{
    return std::string(name) + " size " + std::to_string(size) + " root " +
           std::to_string(root) + " count " + std::to_string(count) +
           " radix " + std::to_string(radix) + " frag " +
           std::to_string(frag) + " mode " + std::to_string(mode) +
           " seed " + std::to_string(seed);
}

std::vector<unsigned> iota(unsigned n, unsigned first = 0)
{
    std::vector<unsigned> v(n);
    for (unsigned i = 0; i < n; ++i) {
        v[i] = first + i;
    }
    return v;
}

std::vector<unsigned> roots_of(unsigned n)
{
    std::set<unsigned> roots = {0, n / 2, n - 1};
    return std::vector<unsigned>(roots.begin(), roots.end());
}

/* Failures of one test stop after a few, to keep logs short */
bool too_many_failures()
{
    return ::testing::Test::HasFailure() &&
           (::testing::UnitTest::GetInstance()->current_test_info()
                    ->result()->total_part_count() > 10);
}


/* ------------------------------------------------------------------------
 * Broadcast
 * ---------------------------------------------------------------------- */

/* Runs a P2P_BCAST phase: each set of @a pd broadcasts from its root */
void run_bcast(phase_desc &pd, unsigned size, size_t len, sim_mode mode,
               uint64_t seed, const std::string &what)
{
    const ucg_phase_t *phase = pd.get();
    p2p_sim sim(size, phase, mode, seed);
    std::vector<std::vector<uint8_t>> bufs(size);

    for (unsigned r = 0; r < size; ++r) {
        bufs[r].assign(len + 1, POISON_INIT); /* +1: never written */
        ucg_coll_t *coll = sim.coll(r);
        coll->data       = bufs[r].data();
        coll->data_len   = len;
        if (sim.in_set(r) && (coll->set->ranks[coll->set->root] == r)) {
            for (size_t i = 0; i < len; ++i) {
                bufs[r][i] = pattern(seed, coll->set->ranks[0], i);
            }
        }
    }

    p2p_sim::result res = sim.run();
    EXPECT_CLEAN(res, what);

    for (unsigned r = 0; r < size; ++r) {
        ucg_coll_t *coll = sim.coll(r);
        for (size_t i = 0; i <= len; ++i) {
            uint8_t exp = (!sim.in_set(r) || (i == len)) ? POISON_INIT :
                          pattern(seed, coll->set->ranks[0], i);
            if (bufs[r][i] != exp) {
                ADD_FAILURE() << what << ": rank " << r << " byte " << i
                              << ": " << (int)bufs[r][i] << " expected "
                              << (int)exp;
                break;
            }
        }
    }
}

TEST(ucg_p2p_sim, bcast)
{
    const size_t lens[]  = {0, 1, 77, 1000};
    const size_t frags[] = {0, 64, 333};
    uint64_t seed        = 1;

    for (unsigned n = 1; n <= 17; ++n) {
        for (unsigned root : roots_of(n)) {
            for (unsigned radix : {2u, 3u, 4u, 8u}) {
                for (size_t len : lens) {
                    for (size_t frag : frags) {
                        sim_mode mode = (sim_mode)(seed % SIM_LAST);
                        phase_desc pd(UCG_PHASE_P2P_BCAST, radix, frag);
                        pd.add_set(iota(n), root);
                        run_bcast(pd, n, len, mode, seed,
                                  params_str("bcast", n, root, len, radix,
                                             frag, mode, seed));
                        ++seed;
                        if (too_many_failures()) {
                            return;
                        }
                    }
                }
            }
        }
    }
}

/* Many fragments per member, and fragments of 1 byte */
TEST(ucg_p2p_sim, bcast_pipeline)
{
    uint64_t seed = 1000;

    for (unsigned n : {2u, 5u, 9u, 16u}) {
        for (size_t frag : {1ul, 3ul, 10ul}) {
            for (int mode = 0; mode < SIM_LAST; ++mode) {
                phase_desc pd(UCG_PHASE_P2P_BCAST, 2 + (seed % 3), frag);
                pd.add_set(iota(n), seed % n);
                run_bcast(pd, n, 61, (sim_mode)mode, seed,
                          params_str("bcast_pipeline", n, seed % n, 61,
                                     pd.phase.radix, frag, (sim_mode)mode,
                                     seed));
                ++seed;
            }
        }
    }
}

/* Several sets in one phase (as per-host phases), members outside all
 * sets, sets of non-consecutive ranks */
TEST(ucg_p2p_sim, bcast_multi_set)
{
    uint64_t seed = 2000;

    for (int mode = 0; mode < SIM_LAST; ++mode) {
        for (size_t frag : {0ul, 16ul}) {
            phase_desc pd(UCG_PHASE_P2P_BCAST, 3, frag);
            pd.add_set({0, 3, 6, 9, 12}, 2);
            pd.add_set({1, 2, 4, 5}, 3);
            pd.add_set({7}, 0);
            pd.add_set({8, 10, 11, 13, 14, 15, 16}, 0);
            run_bcast(pd, 18, 100, (sim_mode)mode, seed,
                      "bcast_multi_set mode " + std::to_string(mode));
            ++seed;
        }
    }
}


/* ------------------------------------------------------------------------
 * Reductions
 * ---------------------------------------------------------------------- */

struct red_type {
    ucg_dtype_t dtype;
    ucg_op_t    op;
};

const red_type red_types[] = {
    {UCG_DT_INT32,  UCG_OP_SUM},
    {UCG_DT_UINT8,  UCG_OP_BXOR},
    {UCG_DT_2INT,   UCG_OP_MINLOC},
    {UCG_DT_DOUBLE, UCG_OP_SUM},    /* integer values: exact */
    {UCG_DT_INT16,  UCG_OP_MAX}
};

/* Element i of member r's vector */
void fill_elem(const red_type &t, uint64_t seed, unsigned r, size_t i,
               void *elem)
{
    uint64_t h = mix(seed ^ mix((r * 1000003ull) + i));

    switch (t.dtype) {
    case UCG_DT_INT32:
        *(int32_t*)elem = (int32_t)h;
        break;
    case UCG_DT_UINT8:
        *(uint8_t*)elem = (uint8_t)h;
        break;
    case UCG_DT_INT16:
        *(int16_t*)elem = (int16_t)h;
        break;
    case UCG_DT_DOUBLE:
        *(double*)elem = (double)((int64_t)(h % 2000001) - 1000000);
        break;
    case UCG_DT_2INT: {
        /* few distinct values: ties exercise the index rule */
        int pair[2] = {(int)(h % 5), (int)r};
        memcpy(elem, pair, sizeof(pair));
        break;
    }
    default:
        abort();
    }
}

/* Random doubles: sums depend on the order of operations */
void fill_random_double(const red_type &t, uint64_t seed, unsigned r,
                        size_t i, void *elem)
{
    uint64_t h      = mix(seed ^ mix((r * 1000003ull) + i));
    *(double*)elem = (double)(h >> 11) / (double)(1ull << 53) * 1e3 - 1e2;
}

typedef void (*fill_func_t)(const red_type&, uint64_t, unsigned, size_t,
                            void*);

/* Runs a reduction phase; returns each member's acc after it */
std::vector<std::vector<uint8_t>>
run_reduction(phase_desc &pd, unsigned size, const red_type &t, size_t count,
              sim_mode mode, uint64_t data_seed, uint64_t sim_seed,
              const std::string &what, fill_func_t fill = fill_elem)
{
    const ucg_phase_t *phase = pd.get();
    p2p_sim sim(size, phase, mode, sim_seed);
    ucg_op_desc_t desc;

    ucs_status_t status = ucg_op_desc_init(&desc, t.op, t.dtype, 0, NULL);
    EXPECT_EQ(UCS_OK, status);
    size_t dt_size = desc.dt_size;

    std::vector<std::vector<uint8_t>> acc(size);
    for (unsigned r = 0; r < size; ++r) {
        acc[r].assign((count * dt_size) + 1, POISON_INIT);
        for (size_t i = 0; i < count; ++i) {
            fill(t, data_seed, r, i, &acc[r][i * dt_size]);
        }
        ucg_coll_t *coll   = sim.coll(r);
        coll->op           = desc;
        coll->dt_size      = dt_size;
        coll->params.count = count;
        coll->params.dtype = t.dtype;
        coll->params.op    = t.op;
        coll->len          = count * dt_size;
        coll->acc          = acc[r].data();
    }

    p2p_sim::result res = sim.run();
    EXPECT_CLEAN(res, what);

    for (unsigned r = 0; r < size; ++r) {
        EXPECT_EQ(POISON_INIT, acc[r][count * dt_size])
                << what << ": rank " << r << " wrote past its vector";
        acc[r].pop_back();
    }
    return acc;
}

/* The reduction of the set members' vectors, in set order */
std::vector<uint8_t> reference(const red_type &t, const ucg_phase_set_t *set,
                               size_t count, uint64_t data_seed,
                               fill_func_t fill = fill_elem)
{
    ucg_op_desc_t desc;
    ucg_op_desc_init(&desc, t.op, t.dtype, 0, NULL);
    std::vector<uint8_t> res(count * desc.dt_size), in(res.size());

    for (unsigned i = 0; i < set->count; ++i) {
        std::vector<uint8_t> &dst = (i == 0) ? res : in;
        for (size_t e = 0; e < count; ++e) {
            fill(t, data_seed, set->ranks[i], e, &dst[e * desc.dt_size]);
        }
        if (i > 0) {
            /* lower ranks are "in" */
            ucg_op_reduce(&desc, res.data(), in.data(), count);
            res.swap(in);
        }
    }
    return res;
}

void check_reduction(ucg_phase_method_t method, unsigned n, unsigned root,
                     size_t count, unsigned radix, size_t frag, sim_mode mode,
                     uint64_t seed, const red_type &t)
{
    std::string what = params_str(ucg_op_name(t.op), n, root, count, radix,
                                  frag, mode, seed) + " " +
                       ucg_dtype_name(t.dtype) + " method " +
                       std::to_string(method);
    phase_desc pd(method, radix, frag);
    pd.add_set(iota(n), root);

    auto acc = run_reduction(pd, n, t, count, mode, seed, seed, what);
    auto ref = reference(t, &pd.sets[0], count, seed);

    for (unsigned r = 0; r < n; ++r) {
        if ((method == UCG_PHASE_P2P_REDUCE) && (r != root)) {
            continue; /* undefined elsewhere */
        }
        if (acc[r] != ref) {
            ADD_FAILURE() << what << ": wrong result at rank " << r;
            return;
        }
    }
}

TEST(ucg_p2p_sim, reduce)
{
    uint64_t seed = 3000;

    for (unsigned n = 1; n <= 17; ++n) {
        for (unsigned root : roots_of(n)) {
            for (unsigned radix : {2u, 3u, 5u}) {
                for (size_t count : {0ul, 1ul, 7ul, 300ul}) {
                    for (size_t frag : {0ul, 40ul}) {
                        check_reduction(UCG_PHASE_P2P_REDUCE, n, root, count,
                                        radix, frag,
                                        (sim_mode)(seed % SIM_LAST), seed,
                                        red_types[seed % 5]);
                        ++seed;
                        if (too_many_failures()) {
                            return;
                        }
                    }
                }
            }
        }
    }
}

/* Fragments of one element, fragments not a multiple of the element size */
TEST(ucg_p2p_sim, reduce_fragments)
{
    uint64_t seed = 4000;

    for (unsigned n : {2u, 3u, 7u, 12u}) {
        for (size_t frag : {1ul, 4ul, 13ul}) {
            for (const red_type &t : red_types) {
                check_reduction(UCG_PHASE_P2P_REDUCE, n, seed % n, 29,
                                2 + (seed % 3), frag,
                                (sim_mode)(seed % SIM_LAST), seed, t);
                ++seed;
            }
        }
    }
}

/* Vectors larger than the largest reduce fragment (256 KiB): fragments
 * without a frag_size, and a frag_size above the cap */
TEST(ucg_p2p_sim, reduce_large)
{
    check_reduction(UCG_PHASE_P2P_REDUCE, 6, 4, 150001, 2, 0, SIM_UNIFORM,
                    4500, red_types[0]);
    check_reduction(UCG_PHASE_P2P_REDUCE, 5, 0, 70001, 3, 1 << 20, SIM_FAST,
                    4501, red_types[3]);
}

TEST(ucg_p2p_sim, allreduce_rd)
{
    uint64_t seed = 5000;

    for (unsigned n = 1; n <= 17; ++n) {
        for (size_t count : {0ul, 1ul, 7ul, 300ul}) {
            for (const red_type &t : red_types) {
                check_reduction(UCG_PHASE_P2P_ALLREDUCE_RD, n, 0, count, 2,
                                0, (sim_mode)(seed % SIM_LAST), seed, t);
                ++seed;
                if (too_many_failures()) {
                    return;
                }
            }
        }
    }
}

TEST(ucg_p2p_sim, allreduce_ring)
{
    uint64_t seed = 6000;

    for (unsigned n = 1; n <= 17; ++n) {
        /* count < n: empty segments */
        for (size_t count : {0ul, 1ul, 7ul, 16ul, 17ul, 300ul}) {
            for (const red_type &t : red_types) {
                check_reduction(UCG_PHASE_P2P_ALLREDUCE_RING, n, 0, count, 2,
                                0, (sim_mode)(seed % SIM_LAST), seed, t);
                ++seed;
                if (too_many_failures()) {
                    return;
                }
            }
        }
    }
}

/* More than 256 ring stages: step values wrap around */
TEST(ucg_p2p_sim, allreduce_ring_large)
{
    check_reduction(UCG_PHASE_P2P_ALLREDUCE_RING, 150, 0, 1000, 2, 0,
                    SIM_FAST, 7000, red_types[0]);
}

TEST(ucg_p2p_sim, reductions_multi_set)
{
    uint64_t seed = 8000;

    for (ucg_phase_method_t method : {UCG_PHASE_P2P_REDUCE,
                                      UCG_PHASE_P2P_ALLREDUCE_RD,
                                      UCG_PHASE_P2P_ALLREDUCE_RING}) {
        for (int mode = 0; mode < SIM_LAST; ++mode) {
            std::string what = "multi_set method " + std::to_string(method) +
                               " mode " + std::to_string(mode);
            phase_desc pd(method, 3, 8);
            pd.add_set({0, 3, 6, 9, 12, 15}, 4);
            pd.add_set({1, 2, 4, 5, 7}, 1);
            pd.add_set({8}, 0);
            pd.add_set({10, 11, 13}, 2);
            auto acc = run_reduction(pd, 17, red_types[0], 11,
                                     (sim_mode)mode, seed, seed, what);
            for (const ucg_phase_set_t &set : pd.sets) {
                auto ref = reference(red_types[0], &set, 11, seed);
                for (unsigned i = 0; i < set.count; ++i) {
                    if ((method == UCG_PHASE_P2P_REDUCE) && (i != set.root)) {
                        continue;
                    }
                    EXPECT_TRUE(acc[set.ranks[i]] == ref)
                            << what << ": rank " << set.ranks[i];
                }
            }
            /* rank 14 and 16 are in no set: untouched */
            for (unsigned r : {14u, 16u}) {
                for (size_t e = 0; e < 11; ++e) {
                    int32_t exp;
                    fill_elem(red_types[0], seed, r, e, &exp);
                    EXPECT_EQ(0, memcmp(&exp, &acc[r][e * 4], 4)) << what;
                }
            }
            ++seed;
        }
    }
}

/* Floating-point sums depend on the order of operations: results must not
 * depend on the interleaving, and allreduce results must be identical on
 * every member */

/* ------------------------------------------------------------------------
 * Reduce-scatter and scans (phase/ucg_redscan.c)
 * ---------------------------------------------------------------------- */

/* Elements [from, from + count) of members first..last folded in rank
 * order, v_first op (... op v_last) */
std::vector<uint8_t> fold_ref(const red_type &t, unsigned first,
                              unsigned last, size_t from, size_t count,
                              uint64_t seed)
{
    ucg_op_desc_t desc;
    ucg_op_desc_init(&desc, t.op, t.dtype, 0, NULL);
    size_t es = desc.dt_size;
    std::vector<uint8_t> acc(count * es), in(count * es);

    for (size_t e = 0; e < count; ++e) {
        fill_elem(t, seed, last, from + e, &acc[e * es]);
    }
    for (unsigned r = last; r-- > first;) {
        for (size_t e = 0; e < count; ++e) {
            fill_elem(t, seed, r, from + e, &in[e * es]);
        }
        ucg_op_reduce(&desc, in.data(), acc.data(), count);
    }
    return acc;
}

/* P2P_REDUCE_SCATTER on n members, blocks of base + i elements, every third
 * (depending on the seed) empty */
void check_reduce_scatter(unsigned n, size_t base, sim_mode mode,
                          uint64_t seed, const red_type &t)
{
    std::string what = params_str("reduce_scatter", n, 0, base, 0, 0, mode,
                                  seed) + " " + ucg_dtype_name(t.dtype);
    phase_desc pd(UCG_PHASE_P2P_REDUCE_SCATTER);
    pd.add_set(iota(n), 0);
    p2p_sim sim(n, pd.get(), mode, seed);
    std::vector<size_t> counts(2 * n), bytes(2 * n);
    std::vector<std::vector<uint8_t>> vec(n), res(n);
    ucg_op_desc_t desc;
    size_t total = 0, es;

    ucg_op_desc_init(&desc, t.op, t.dtype, 0, NULL);
    es = desc.dt_size;
    for (unsigned i = 0; i < n; ++i) {
        counts[i]     = ((seed + i) % 3 == 0) ? 0 : base + i;
        counts[n + i] = total;
        total        += counts[i];
        bytes[i]      = counts[i] * es;
        bytes[n + i]  = counts[n + i] * es;
    }
    for (unsigned r = 0; r < n; ++r) {
        vec[r].assign(total * es + 1, POISON_INIT);
        for (size_t e = 0; e < total; ++e) {
            fill_elem(t, seed, r, e, &vec[r][e * es]);
        }
        res[r].assign(counts[r] * es + 1, POISON_INIT);
        ucg_coll_t *coll  = sim.coll(r);
        coll->op          = desc;
        coll->dt_size     = es;
        coll->params.type = UCG_COLL_REDUCE_SCATTER;
        coll->params.op   = t.op;
        coll->params.rbuf = res[r].data();
        coll->dblk.len    = bytes.data();
        coll->dblk.off    = bytes.data() + n;
        coll->data        = vec[r].data();
        coll->acc         = vec[r].data();
        coll->len         = total * es;
    }

    p2p_sim::result res_sim = sim.run();
    EXPECT_CLEAN(res_sim, what);
    for (unsigned r = 0; r < n; ++r) {
        EXPECT_EQ(POISON_INIT, res[r].back())
                << what << ": rank " << r << " wrote past its block";
        res[r].pop_back();
        if (res[r] != fold_ref(t, 0, n - 1, counts[n + r], counts[r], seed)) {
            ADD_FAILURE() << what << ": wrong result at rank " << r;
            return;
        }
    }
}

/* P2P_SCAN (scan or exscan) on n members; as the executor: scan's acc is
 * its receive buffer, exscan's is not */
void check_scan(ucg_coll_type_t type, unsigned n, size_t count, sim_mode mode,
                uint64_t seed, const red_type &t)
{
    std::string what = params_str((type == UCG_COLL_SCAN) ? "scan" : "exscan",
                                  n, 0, count, 0, 0,
                                  mode, seed) + " " + ucg_dtype_name(t.dtype);
    phase_desc pd(UCG_PHASE_P2P_SCAN);
    pd.add_set(iota(n), 0);
    p2p_sim sim(n, pd.get(), mode, seed);
    std::vector<std::vector<uint8_t>> acc(n), res(n);
    ucg_op_desc_t desc;
    size_t es;

    ucg_op_desc_init(&desc, t.op, t.dtype, 0, NULL);
    es = desc.dt_size;
    for (unsigned r = 0; r < n; ++r) {
        acc[r].assign(count * es + 1, POISON_INIT);
        for (size_t e = 0; e < count; ++e) {
            fill_elem(t, seed, r, e, &acc[r][e * es]);
        }
        res[r].assign(count * es + 1, POISON_INIT);
        ucg_coll_t *coll   = sim.coll(r);
        coll->op           = desc;
        coll->dt_size      = es;
        coll->params.type  = type;
        coll->params.op    = t.op;
        coll->params.count = count;
        coll->len          = count * es;
        coll->acc          = acc[r].data();
        coll->params.rbuf  = (type == UCG_COLL_SCAN) ? acc[r].data() :
                                                       res[r].data();
    }

    p2p_sim::result res_sim = sim.run();
    EXPECT_CLEAN(res_sim, what);
    for (unsigned r = 0; r < n; ++r) {
        std::vector<uint8_t> &out = (type == UCG_COLL_SCAN) ? acc[r] : res[r];
        EXPECT_EQ(POISON_INIT, out.back())
                << what << ": rank " << r << " wrote past its vector";
        out.pop_back();
        if ((type == UCG_COLL_EXSCAN) && (r == 0)) {
            /* not written */
            EXPECT_EQ(std::vector<uint8_t>(count * es, POISON_INIT), out)
                    << what << ": rank 0's exscan result written";
            continue;
        }
        if (out != fold_ref(t, 0, (type == UCG_COLL_SCAN) ? r : r - 1, 0,
                            count, seed)) {
            ADD_FAILURE() << what << ": wrong result at rank " << r;
            return;
        }
    }
}

TEST(ucg_p2p_sim, reduce_scatter)
{
    uint64_t seed = 5500;

    for (unsigned n = 1; n <= 17; ++n) {
        for (size_t base : {0ul, 1ul, 7ul, 300ul}) {
            check_reduce_scatter(n, base, (sim_mode)(seed % SIM_LAST), seed,
                                 red_types[seed % 5]);
            ++seed;
            if (too_many_failures()) {
                return;
            }
        }
    }
}

TEST(ucg_p2p_sim, scan)
{
    uint64_t seed = 5700;

    for (ucg_coll_type_t type : {UCG_COLL_SCAN, UCG_COLL_EXSCAN}) {
        for (unsigned n = 1; n <= 17; ++n) {
            for (size_t count : {0ul, 1ul, 7ul, 300ul}) {
                check_scan(type, n, count, (sim_mode)(seed % SIM_LAST), seed,
                           red_types[seed % 5]);
                ++seed;
                if (too_many_failures()) {
                    return;
                }
            }
        }
    }
}

TEST(ucg_p2p_sim, deterministic)
{
    const red_type t = {UCG_DT_DOUBLE, UCG_OP_SUM};

    for (ucg_phase_method_t method : {UCG_PHASE_P2P_REDUCE,
                                      UCG_PHASE_P2P_ALLREDUCE_RD,
                                      UCG_PHASE_P2P_ALLREDUCE_RING}) {
        for (unsigned n : {3u, 6u, 11u, 16u}) {
            std::vector<uint8_t> first;
            for (uint64_t sim_seed = 1; sim_seed <= 6; ++sim_seed) {
                std::string what = "deterministic method " +
                                   std::to_string(method) + " size " +
                                   std::to_string(n) + " seed " +
                                   std::to_string(sim_seed);
                phase_desc pd(method, 3, (sim_seed % 2) ? 0 : 48);
                pd.add_set(iota(n), 1);
                auto acc = run_reduction(pd, n, t, 50,
                                         (sim_mode)(sim_seed % SIM_LAST),
                                         42, sim_seed, what,
                                         fill_random_double);
                auto ref = reference(t, &pd.sets[0], 50, 42,
                                     fill_random_double);
                const std::vector<uint8_t> &res = acc[1];
                if (first.empty()) {
                    first = res;
                }
                EXPECT_TRUE(res == first) << what << ": differs from seed 1";
                for (unsigned r = 0; r < n; ++r) {
                    if (method != UCG_PHASE_P2P_REDUCE) {
                        EXPECT_TRUE(acc[r] == res) << what << ": rank " << r;
                    }
                }
                for (size_t e = 0; e < 50; ++e) {
                    double got, exp;
                    memcpy(&got, &res[e * 8], 8);
                    memcpy(&exp, &ref[e * 8], 8);
                    EXPECT_NEAR(exp, got, 1e-9 * n * 1e3) << what;
                }
            }
        }
    }
}


/* ------------------------------------------------------------------------
 * Block phases
 * ---------------------------------------------------------------------- */

enum layout_t {
    LAYOUT_FLAT,        /* every rank in the set, owns itself */
    LAYOUT_HOSTS,       /* hosts of consecutive ranks, set: their leaders */
    LAYOUT_INTERLEAVED, /* host of r: r % hosts */
    LAYOUT_RANDOM,      /* random host sizes and placement */
    LAYOUT_LAST
};

/* Builds a block phase over @a size ranks with about @a nset members;
 * leaders are the lowest rank of each host */
void build_layout(phase_desc &pd, layout_t layout, unsigned size,
                  unsigned nset, unsigned root_pos, uint64_t seed)
{
    std::vector<unsigned> host_of(size);
    std::mt19937_64 rng(seed);

    for (unsigned r = 0; r < size; ++r) {
        switch (layout) {
        case LAYOUT_FLAT:
            host_of[r] = r;
            break;
        case LAYOUT_HOSTS:
            host_of[r] = (unsigned)(((uint64_t)r * nset) / size);
            break;
        case LAYOUT_INTERLEAVED:
            host_of[r] = r % nset;
            break;
        default:
            host_of[r] = (r < nset) ? r : (unsigned)(rng() % nset);
            break;
        }
    }

    std::map<unsigned, unsigned> leader;
    for (unsigned r = 0; r < size; ++r) {
        if (!leader.count(host_of[r])) {
            leader[host_of[r]] = r;
        }
    }

    std::vector<unsigned> ranks;
    for (auto &l : leader) {
        ranks.push_back(l.second);
    }
    std::sort(ranks.begin(), ranks.end());

    pd.owner.resize(size);
    for (unsigned r = 0; r < size; ++r) {
        pd.owner[r] = leader[host_of[r]];
    }
    pd.add_set(ranks, root_pos % ranks.size());
}

enum block_kind { BLOCK_GATHER, BLOCK_SCATTER, BLOCK_ALLGATHER };

const char *method_name(ucg_phase_method_t method)
{
    switch (method) {
    case UCG_PHASE_P2P_GATHER:
        return "gather";
    case UCG_PHASE_P2P_SCATTER:
        return "scatter";
    case UCG_PHASE_P2P_ALLGATHER_RING:
        return "allgather_ring";
    case UCG_PHASE_P2P_ALLGATHER_LINEAR:
        return "allgather_linear";
    default:
        return "?";
    }
}

block_kind kind_of(ucg_phase_method_t method)
{
    switch (method) {
    case UCG_PHASE_P2P_GATHER:
        return BLOCK_GATHER;
    case UCG_PHASE_P2P_SCATTER:
        return BLOCK_SCATTER;
    default:
        return BLOCK_ALLGATHER;
    }
}

void run_blocks(phase_desc &pd, unsigned size, size_t block, sim_mode mode,
                uint64_t seed, const std::string &what)
{
    const ucg_phase_t *phase = pd.get();
    block_kind kind          = kind_of(phase->method);
    p2p_sim sim(size, phase, mode, seed);
    std::vector<std::vector<uint8_t>> gbuf(size);

    auto owner = [&](unsigned r) {
        return phase->owner ? phase->owner[r] : r;
    };
    auto set_of = [&](unsigned rank) -> const ucg_phase_set_t* {
        for (unsigned s = 0; s < phase->num_sets; ++s) {
            const ucg_phase_set_t *set = &phase->sets[s];
            if (std::binary_search(set->ranks, set->ranks + set->count,
                                   rank)) {
                return set;
            }
        }
        return NULL;
    };
    auto is_root = [&](unsigned rank) {
        const ucg_phase_set_t *set = set_of(rank);
        return set && (set->ranks[set->root] == rank);
    };

    /* Before: own blocks, and all blocks at a scatter root */
    for (unsigned m = 0; m < size; ++m) {
        gbuf[m].assign((size * block) + 1, POISON_INIT);
        for (unsigned r = 0; r < size; ++r) {
            bool has = (owner(r) == m) ||
                       ((kind == BLOCK_SCATTER) && is_root(m));
            for (size_t b = 0; has && (b < block); ++b) {
                gbuf[m][(r * block) + b] = pattern(seed, r, b);
            }
        }
        ucg_coll_t *coll = sim.coll(m);
        coll->gbuf       = gbuf[m].data();
        coll->block      = block;
    }

    p2p_sim::result res = sim.run();
    EXPECT_CLEAN(res, what);

    /* After: which blocks member m must hold; all others untouched */
    for (unsigned m = 0; m < size; ++m) {
        const ucg_phase_set_t *set = set_of(m);
        for (unsigned r = 0; r < size; ++r) {
            bool own     = (owner(r) == m);
            bool in_set  = set && (set_of(owner(r)) == set);
            bool has;
            switch (kind) {
            case BLOCK_GATHER:
                has = own || (is_root(m) && in_set);
                break;
            case BLOCK_SCATTER:
                has = own || is_root(m);
                break;
            default:
                has = own || in_set;
                break;
            }
            for (size_t b = 0; b < block; ++b) {
                uint8_t exp = has ? pattern(seed, r, b) : POISON_INIT;
                if (gbuf[m][(r * block) + b] != exp) {
                    ADD_FAILURE() << what << ": member " << m << " block "
                                  << r << " byte " << b << ": "
                                  << (int)gbuf[m][(r * block) + b]
                                  << " expected " << (int)exp;
                    return;
                }
            }
        }
        EXPECT_EQ(POISON_INIT, gbuf[m][size * block]) << what;
    }
}

void check_block_method(ucg_phase_method_t method, uint64_t seed)
{
    for (unsigned nset = 1; nset <= 17; ++nset) {
        for (int layout = 0; layout < LAYOUT_LAST; ++layout) {
            unsigned size = (layout == LAYOUT_FLAT) ? nset :
                            nset + (unsigned)(seed % (2 * nset + 3));
            for (unsigned root : roots_of(nset)) {
                for (size_t block : {0ul, 1ul, 3ul, 40ul}) {
                    sim_mode mode = (sim_mode)(seed % SIM_LAST);
                    phase_desc pd(method);
                    build_layout(pd, (layout_t)layout, size, nset, root,
                                 seed);
                    run_blocks(pd, size, block, mode, seed,
                               params_str(method_name(method),
                                          size, root, block, 0, 0, mode,
                                          seed) +
                               " layout " + std::to_string(layout) +
                               " set " + std::to_string(pd.sets[0].count));
                    ++seed;
                    if (too_many_failures()) {
                        return;
                    }
                }
            }
        }
    }
}

TEST(ucg_p2p_sim, gather)
{
    check_block_method(UCG_PHASE_P2P_GATHER, 9000);
}

TEST(ucg_p2p_sim, scatter)
{
    check_block_method(UCG_PHASE_P2P_SCATTER, 10000);
}

TEST(ucg_p2p_sim, allgather_ring)
{
    check_block_method(UCG_PHASE_P2P_ALLGATHER_RING, 11000);
}

TEST(ucg_p2p_sim, allgather_linear)
{
    check_block_method(UCG_PHASE_P2P_ALLGATHER_LINEAR, 12000);
}

/* Several sets in a block phase: owners in other sets are not ours */
TEST(ucg_p2p_sim, blocks_multi_set)
{
    uint64_t seed = 13000;

    for (ucg_phase_method_t method : {UCG_PHASE_P2P_GATHER,
                                      UCG_PHASE_P2P_SCATTER,
                                      UCG_PHASE_P2P_ALLGATHER_RING,
                                      UCG_PHASE_P2P_ALLGATHER_LINEAR}) {
        for (int mode = 0; mode < SIM_LAST; ++mode) {
            /* 16 ranks on 8 hosts of 2; sets: leaders of hosts 0-3 and
             * of hosts 4-7, the last one interleaved */
            phase_desc pd(method);
            pd.owner = {0, 0, 2, 2, 4, 4, 6, 6, 8, 10, 8, 10, 12, 14, 12, 14};
            pd.add_set({0, 2, 4, 6}, 1);
            pd.add_set({8, 10, 12, 14}, 3);
            run_blocks(pd, 16, 5, (sim_mode)mode, seed,
                       "blocks_multi_set method " + std::to_string(method) +
                       " mode " + std::to_string(mode));
            ++seed;
        }
    }
}

/* Without an owner table every rank owns its block */
TEST(ucg_p2p_sim, blocks_no_owner)
{
    phase_desc pd(UCG_PHASE_P2P_ALLGATHER_RING);
    pd.add_set(iota(6), 0);
    run_blocks(pd, 6, 8, SIM_UNIFORM, 14000, "blocks_no_owner");
}

/* More than 256 ring stages */
TEST(ucg_p2p_sim, allgather_ring_large)
{
    phase_desc pd(UCG_PHASE_P2P_ALLGATHER_RING);
    pd.add_set(iota(270), 0);
    run_blocks(pd, 270, 2, SIM_FAST, 15000, "allgather_ring_large");
}


/* ------------------------------------------------------------------------
 * Barrier
 * ---------------------------------------------------------------------- */

/* ------------------------------------------------------------------------
 * Alltoall phases: every member's block of every other member, alltoall
 * (blocks of count bytes by rank) or alltoallv (random counts per pair,
 * send blocks in rank order and receive blocks in reverse order, each
 * followed by a gap byte that must stay).  The executor copies the own
 * block; here it stays poisoned.
 * ---------------------------------------------------------------------- */

void run_alltoall(ucg_phase_method_t method, unsigned n, bool vector,
                  size_t count, sim_mode mode, uint64_t seed,
                  const std::string &what)
{
    phase_desc pd(method);
    std::vector<std::vector<uint8_t>> sbuf(n), rbuf(n);
    std::vector<std::vector<size_t>> sc(n), sd(n), rc(n), rd(n);

    auto cnt = [&](unsigned i, unsigned j) -> size_t {
        return vector ? (size_t)(mix(seed ^ ((uint64_t)i * 1031 + j)) %
                                 (count + 1)) : count;
    };

    pd.add_set(iota(n), 0);
    p2p_sim sim(n, pd.get(), mode, seed);
    for (unsigned m = 0; m < n; ++m) {
        size_t soff = 0, roff = 0;

        sc[m].resize(n);
        sd[m].resize(n);
        rc[m].resize(n);
        rd[m].resize(n);
        for (unsigned j = 0; j < n; ++j) {
            sc[m][j] = cnt(m, j);
            sd[m][j] = vector ? soff : (size_t)j * count;
            soff    += sc[m][j] + (vector ? 1 : 0);
        }
        for (unsigned i = n; i-- > 0;) {
            rc[m][i] = cnt(i, m);
            rd[m][i] = vector ? roff : (size_t)i * count;
            roff    += rc[m][i] + (vector ? 1 : 0);
        }
        sbuf[m].resize(soff + 1);
        for (size_t b = 0; b < sbuf[m].size(); ++b) {
            sbuf[m][b] = pattern(seed, m, b);
        }
        rbuf[m].assign(roff + 1, POISON_INIT);

        ucg_coll_t *coll     = sim.coll(m);
        coll->params.type    = vector ? UCG_COLL_ALLTOALLV : UCG_COLL_ALLTOALL;
        if (vector) { /* the executor's copies, in bytes of 1-byte elements */
            coll->dblk.len = sc[m].data();
            coll->dblk.off = sd[m].data();
            coll->gblk.len = rc[m].data();
            coll->gblk.off = rd[m].data();
        }
        coll->dt_size        = 1;
        coll->len            = count;
        coll->block          = count;
        coll->data           = sbuf[m].data();
        coll->gbuf           = rbuf[m].data();
    }

    p2p_sim::result res = sim.run();
    EXPECT_CLEAN(res, what);

    for (unsigned m = 0; m < n; ++m) {
        std::vector<uint8_t> exp(rbuf[m].size(), POISON_INIT);
        for (unsigned i = 0; i < n; ++i) {
            for (size_t b = 0; (i != m) && (b < rc[m][i]); ++b) {
                exp[rd[m][i] + b] = sbuf[i][sd[i][m] + b];
            }
        }
        if (rbuf[m] != exp) {
            ADD_FAILURE() << what << ": member " << m << " received wrong "
                          << "data";
            return;
        }
    }
}

void check_alltoall_method(ucg_phase_method_t method, uint64_t seed)
{
    for (unsigned n = 1; n <= 17; ++n) {
        for (int vector = 0; vector < 2; ++vector) {
            for (size_t count : {0ul, 1ul, 5ul, 40ul}) {
                sim_mode mode = (sim_mode)(seed % SIM_LAST);
                run_alltoall(method, n, vector, count, mode, seed,
                             params_str((method ==
                                         UCG_PHASE_P2P_ALLTOALL_LINEAR) ?
                                        "alltoall_linear" :
                                        "alltoall_pairwise", n, 0, count,
                                        0, 0, mode, seed) +
                             (vector ? " vector" : ""));
                ++seed;
                if (too_many_failures()) {
                    return;
                }
            }
        }
    }
}

TEST(ucg_p2p_sim, alltoall_linear)
{
    check_alltoall_method(UCG_PHASE_P2P_ALLTOALL_LINEAR, 12000);
}

TEST(ucg_p2p_sim, alltoall_pairwise)
{
    check_alltoall_method(UCG_PHASE_P2P_ALLTOALL_PAIRWISE, 13000);
}

TEST(ucg_p2p_sim, barrier)
{
    uint64_t seed = 16000;

    for (unsigned n = 1; n <= 33; ++n) {
        for (int mode = 0; mode < SIM_LAST; ++mode) {
            phase_desc pd(UCG_PHASE_P2P_BARRIER);
            pd.add_set(iota(n), 0);
            p2p_sim sim(n, pd.get(), (sim_mode)mode, seed);
            p2p_sim::result res = sim.run();
            std::string what = "barrier size " + std::to_string(n) +
                               " mode " + std::to_string(mode);
            EXPECT_CLEAN(res, what);
            /* Nobody leaves before everybody arrived */
            EXPECT_FALSE(res.barrier_early) << what;
            ++seed;
        }
    }
}


/* ------------------------------------------------------------------------
 * Errors: a failed post or a failed request ends the member's phase with
 * that error
 * ---------------------------------------------------------------------- */

TEST(ucg_p2p_sim, errors)
{
    const ucg_phase_method_t methods[] = {
        UCG_PHASE_P2P_BCAST, UCG_PHASE_P2P_REDUCE,
        UCG_PHASE_P2P_ALLREDUCE_RD, UCG_PHASE_P2P_ALLREDUCE_RING,
        UCG_PHASE_P2P_GATHER, UCG_PHASE_P2P_SCATTER,
        UCG_PHASE_P2P_ALLGATHER_RING, UCG_PHASE_P2P_ALLGATHER_LINEAR,
        UCG_PHASE_P2P_BARRIER
    };
    const unsigned n = 7;
    ucg_op_desc_t desc;

    ucg_op_desc_init(&desc, UCG_OP_SUM, UCG_DT_INT32, 0, NULL);

    for (ucg_phase_method_t method : methods) {
        for (int fail = 0; fail < 12; ++fail) {
            for (int as_req = 0; as_req < 2; ++as_req) {
                phase_desc pd(method, 2, 8);
                pd.add_set(iota(n), 2);
                p2p_sim sim(n, pd.get(), SIM_UNIFORM, fail * 2 + as_req);
                std::vector<std::vector<uint8_t>> bufs(n);
                for (unsigned r = 0; r < n; ++r) {
                    bufs[r].assign(n * 40, 1);
                    ucg_coll_t *coll   = sim.coll(r);
                    coll->data         = bufs[r].data();
                    coll->data_len     = 40;
                    coll->acc          = bufs[r].data();
                    coll->op           = desc;
                    coll->dt_size      = 4;
                    coll->params.count = 10;
                    coll->len          = 40;
                    coll->gbuf         = bufs[r].data();
                    coll->block        = 40;
                }
                if (as_req) {
                    sim.fail_req(fail);
                } else {
                    sim.fail_post(fail);
                }
                p2p_sim::result res = sim.run();
                std::string what = "errors method " + std::to_string(method) +
                                   " fail " + std::to_string(fail) +
                                   (as_req ? " request" : " post");

                /* Peers of the failed member may finish and leave
                 * messages unmatched; anything else is a bug */
                for (const std::string &v : res.violations) {
                    EXPECT_EQ(0u, v.find("unmatched ")) << what << ": " << v;
                }
                /* The failure reached exactly one member, which reports it
                 * (unless fewer operations were posted in all) */
                unsigned failed = 0;
                for (ucs_status_t status : res.status) {
                    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
                        EXPECT_EQ(as_req ? UCS_ERR_IO_ERROR :
                                           UCS_ERR_NO_RESOURCE, status)
                                << what;
                        ++failed;
                    }
                }
                EXPECT_LE(failed, 1u) << what;
                if (failed == 0) {
                    EXPECT_TRUE(clean(res)) << what << ": " << describe(res);
                }
            }
        }
    }
}

TEST(ucg_p2p_sim, bad_radix)
{
    phase_desc pd(UCG_PHASE_P2P_BCAST, 1, 0);
    pd.add_set(iota(3), 0);
    p2p_sim sim(3, pd.get(), SIM_UNIFORM, 1);
    char buf[8] = {0};
    for (unsigned r = 0; r < 3; ++r) {
        sim.coll(r)->data     = buf;
        sim.coll(r)->data_len = sizeof(buf);
    }
    p2p_sim::result res = sim.run();
    for (ucs_status_t status : res.status) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, status);
    }
}

/* ------------------------------------------------------------------------
 * The simulator itself: it must catch the failures it promises to
 * ---------------------------------------------------------------------- */

namespace bad {

char buf[2][64];

/* Every member receives from its left neighbour, nobody sends */
ucs_status_t recv_only_start(ucg_coll_t *coll)
{
    unsigned n = coll->set->count;
    ucg_p2p_recv(coll, coll->set->ranks[(coll->my_idx + n - 1) % n], 0,
                 buf[0], 4);
    return ucg_p2p_test(coll);
}

/* Sends 8 bytes into 4-byte receives */
ucs_status_t truncate_start(ucg_coll_t *coll)
{
    if (coll->my_idx == 0) {
        ucg_p2p_send(coll, coll->set->ranks[1], 0, buf[0], 8);
    } else {
        ucg_p2p_recv(coll, coll->set->ranks[0], 0, buf[1], 4);
    }
    return ucg_p2p_test(coll);
}

/* Changes the send buffer right after posting */
ucs_status_t scribble_start(ucg_coll_t *coll)
{
    if (coll->my_idx == 0) {
        for (int i = 0; i < 40; ++i) {
            ucg_p2p_send(coll, coll->set->ranks[1], 0, buf[0], 8);
            buf[0][0]++;
        }
    } else {
        for (int i = 0; i < 40; ++i) {
            ucg_p2p_recv(coll, coll->set->ranks[0], 0, buf[1], 8);
        }
    }
    return ucg_p2p_test(coll);
}

/* Returns OK without waiting */
ucs_status_t no_wait_start(ucg_coll_t *coll)
{
    if (coll->my_idx == 0) {
        ucg_p2p_recv(coll, coll->set->ranks[1], 0, buf[1], 8);
    } else {
        ucg_p2p_send(coll, coll->set->ranks[0], 0, buf[0], 8);
    }
    return UCS_OK;
}

/* Reads the receive buffer before completion: takes what is there */
uint8_t early_value;
ucs_status_t early_read_start(ucg_coll_t *coll)
{
    if (coll->my_idx == 0) {
        buf[0][0] = 42;
        ucg_p2p_send(coll, coll->set->ranks[1], 0, buf[0], 1);
    } else {
        ucg_p2p_recv(coll, coll->set->ranks[0], 0, buf[1], 1);
        early_value = buf[1][0];
    }
    return ucg_p2p_test(coll);
}

/* Never finishes a call */
ucs_status_t spin_start(ucg_coll_t *coll)
{
    ucs_status_t status;

    while ((status = ucg_p2p_test(coll)) == UCS_OK) {
    }
    return status;
}

/* Posts without end */
ucs_status_t post_loop_start(ucg_coll_t *coll)
{
    ucs_status_t status;
    unsigned peer = coll->set->ranks[(coll->my_idx + 1) % coll->set->count];

    while ((status = ucg_p2p_recv(coll, peer, 0, buf[1], 0)) == UCS_OK) {
    }
    return status;
}

ucs_status_t wait_progress(ucg_coll_t *coll)
{
    return ucg_p2p_test(coll);
}

} // namespace bad

} // namespace

TEST(ucg_p2p_sim, self_test)
{
    {
        ucg_phase_ops_t ops = {bad::recv_only_start, bad::wait_progress};
        phase_desc pd(UCG_PHASE_P2P_BCAST);
        pd.add_set(iota(3), 0);
        p2p_sim sim(3, pd.get(), SIM_UNIFORM, 1, &ops);
        EXPECT_TRUE(sim.run().deadlock);
    }
    {
        ucg_phase_ops_t ops = {bad::truncate_start, bad::wait_progress};
        phase_desc pd(UCG_PHASE_P2P_BCAST);
        pd.add_set(iota(2), 0);
        p2p_sim sim(2, pd.get(), SIM_UNIFORM, 1, &ops);
        p2p_sim::result res = sim.run();
        EXPECT_FALSE(res.violations.empty());
        EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, res.status[1]);
    }
    {
        ucg_phase_ops_t ops = {bad::scribble_start, bad::wait_progress};
        phase_desc pd(UCG_PHASE_P2P_BCAST);
        pd.add_set(iota(2), 0);
        p2p_sim sim(2, pd.get(), SIM_UNIFORM, 1, &ops);
        p2p_sim::result res = sim.run();
        EXPECT_FALSE(res.violations.empty()) << "scribble not detected";
    }
    {
        ucg_phase_ops_t ops = {bad::no_wait_start, bad::wait_progress};
        phase_desc pd(UCG_PHASE_P2P_BCAST);
        pd.add_set(iota(2), 0);
        p2p_sim sim(2, pd.get(), SIM_DELAYS, 1, &ops);
        p2p_sim::result res = sim.run();
        EXPECT_FALSE(res.violations.empty()) << "early OK not detected";
    }
    for (auto start : {bad::spin_start, bad::post_loop_start}) {
        ucg_phase_ops_t ops = {start, bad::wait_progress};
        phase_desc pd(UCG_PHASE_P2P_BCAST);
        pd.add_set(iota(2), 0);
        p2p_sim sim(2, pd.get(), SIM_UNIFORM, 1, &ops);
        p2p_sim::result res = sim.run();
        EXPECT_FALSE(res.violations.empty()) << "endless call not detected";
        EXPECT_NE(UCS_OK, res.status[0]);
    }
    {
        ucg_phase_ops_t ops = {bad::early_read_start, bad::wait_progress};
        phase_desc pd(UCG_PHASE_P2P_BCAST);
        pd.add_set(iota(2), 0);
        /* Nothing is delivered inside a post in this mode: the receiver
         * reads the poison */
        p2p_sim sim(2, pd.get(), SIM_DELAYS, 3, &ops);
        p2p_sim::result res = sim.run();
        EXPECT_TRUE(clean(res)) << describe(res);
        EXPECT_EQ(POISON_RECV, bad::early_value);
    }
}
