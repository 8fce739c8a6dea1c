/**
 * ucx-o2m tests: checked active-message traffic over one UCT endpoint.
 *
 * A schedule is a list of messages (kind, length); message k of a stream
 * carries bytes that depend only on (salt, k, offset), so a receiver that
 * knows the schedule checks kind, length and every byte of each message, and
 * that messages arrive exactly once and in order.
 *
 *  - traffic_sender posts a schedule on an endpoint with am_short, am_bcopy
 *    or am_zcopy, retries on UCS_ERR_NO_RESOURCE with progress (bounded),
 *    can queue messages with uct_ep_pending_add, and counts zcopy
 *    completions (each must fire exactly once).
 *  - traffic_receiver owns 3 active-message ids (am_base + kind) of an
 *    interface and checks what arrives on them against the schedule.
 *
 * Everything here runs in forked children: failures use CHILD_CHECK.
 */
#ifndef O2M_TEST_TRAFFIC_H_
#define O2M_TEST_TRAFFIC_H_

#include "test_common.h"

extern "C" {
#include <ucs/time/time.h>
}

#include <algorithm>
#include <functional>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <vector>
#include <cstring>
#include <sched.h>
#include <dirent.h>
#include <ctype.h>
#include <time.h>

namespace o2m_test {

enum msg_kind { MSG_SHORT = 0, MSG_BCOPY = 1, MSG_ZCOPY = 2, MSG_KINDS = 3 };

struct msg_desc {
    msg_kind kind;
    size_t   length;  /* Bytes the receiver sees (short: 8 + payload) */
    unsigned hdr_len; /* zcopy: bytes passed as the AM header */
    unsigned iovcnt;  /* zcopy: iov entries the rest is split into */
};

typedef std::vector<msg_desc> schedule_t;

static inline const char *msg_kind_name(msg_kind kind)
{
    static const char *names[] = {"short", "bcopy", "zcopy"};
    return (kind < MSG_KINDS) ? names[kind] : "?";
}

static inline msg_desc msg_short(size_t payload)
{
    return {MSG_SHORT, payload + sizeof(uint64_t), 0, 0};
}

static inline msg_desc msg_bcopy(size_t length)
{
    return {MSG_BCOPY, length, 0, 0};
}

static inline msg_desc msg_zcopy(size_t length, unsigned hdr_len = 0,
                                 unsigned iovcnt = 1)
{
    hdr_len = (unsigned)std::min<size_t>(hdr_len, length);
    if (length == hdr_len) {
        iovcnt = 0;
    }
    return {MSG_ZCOPY, length, hdr_len, iovcnt};
}

static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Key of message k of the stream @a salt */
static inline uint64_t msg_key(uint64_t salt, uint64_t k)
{
    return mix64(salt) ^ (k * 0xd6e8feb86659fd93ull);
}

static inline uint64_t pattern_word(uint64_t key, size_t word)
{
    return mix64(key + word * 0x2545f4914f6cdd1dull);
}

static inline void fill_pattern(void *buf, size_t length, uint64_t key)
{
    uint8_t *p = static_cast<uint8_t*>(buf);
    size_t w, nwords = length / 8;
    uint64_t x;

    for (w = 0; w < nwords; ++w) {
        x = pattern_word(key, w);
        memcpy(p + (w * 8), &x, 8);
    }
    if (length % 8) {
        x = pattern_word(key, nwords);
        memcpy(p + (nwords * 8), &x, length % 8);
    }
}

/* Offset of the first byte that differs from the pattern, or length */
static inline size_t check_pattern(const void *buf, size_t length,
                                   uint64_t key)
{
    const uint8_t *p = static_cast<const uint8_t*>(buf);
    uint8_t expected[8];
    size_t w, i, chunk;
    uint64_t x;

    for (w = 0; (w * 8) < length; ++w) {
        x     = pattern_word(key, w);
        chunk = std::min<size_t>(8, length - (w * 8));
        memcpy(expected, &x, 8);
        if (memcmp(p + (w * 8), expected, chunk)) {
            for (i = 0; i < chunk; ++i) {
                if (p[(w * 8) + i] != expected[i]) {
                    return (w * 8) + i;
                }
            }
        }
    }
    return length;
}

static inline double now_sec()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + (ts.tv_nsec * 1e-9);
}

/* One progress call; yields the CPU when nothing happened (the tests run
 * more busy processes than there are cores) */
static inline unsigned progress_once(uct_env &env)
{
    unsigned count = env.progress();

    if (count == 0) {
        sched_yield();
    }
    return count;
}

/* Progress for @a seconds */
static inline void progress_for(uct_env &env, double seconds)
{
    double end = now_sec() + seconds;

    while (now_sec() < end) {
        progress_once(env);
    }
}

/* Progress until cond() (true) or the timeout (false) */
template <typename Cond>
static inline bool progress_wait(uct_env &env, Cond cond,
                                 double timeout = 0)
{
    double end = now_sec() + ((timeout > 0) ? timeout : wait_timeout);

    while (!cond()) {
        if (now_sec() > end) {
            return false;
        }
        progress_once(env);
    }
    return true;
}

static inline bool is_error(ucs_status_t status)
{
    return UCS_STATUS_IS_ERR(status) && (status != UCS_ERR_NO_RESOURCE);
}

static inline bool has_error(const uct_env &env, ucs_status_t status)
{
    return std::find(env.errors.begin(), env.errors.end(), status) !=
           env.errors.end();
}


/*
 * Schedules
 */

/* Every size class and boundary that @a max_short / @a max_bcopy define;
 * @a large adds 1 MiB and 4 MiB zcopy messages */
static inline schedule_t size_class_schedule(size_t max_short,
                                             size_t max_bcopy, bool large)
{
    const size_t sizes[] = {0, 1, 7, 8, 63, 64};
    schedule_t sched;
    unsigned i = 0;

    for (size_t size : sizes) {
        sched.push_back(msg_short(size));
        sched.push_back(msg_bcopy(size));
        sched.push_back(msg_zcopy(size, (i++ % 2) ? 8 : 0, 1));
    }

    sched.push_back(msg_short(max_short - sizeof(uint64_t) - 1));
    sched.push_back(msg_short(max_short - sizeof(uint64_t)));
    sched.push_back(msg_bcopy(max_bcopy - 1));
    sched.push_back(msg_bcopy(max_bcopy));
    sched.push_back(msg_zcopy(max_short + 1, 0, 1));
    sched.push_back(msg_zcopy(max_bcopy - 1, 16, 2));
    sched.push_back(msg_zcopy(max_bcopy, 0, 3));
    sched.push_back(msg_zcopy(max_bcopy + 1, 256, 16));
    sched.push_back(msg_zcopy(64 * 1024 + 3, 8, 5));
    if (large) {
        sched.push_back(msg_zcopy(1 << 20, 0, 1));
        sched.push_back(msg_zcopy(4 << 20, 64, 16));
        sched.push_back(msg_short(1));     /* Right behind a large one */
        sched.push_back(msg_zcopy((1 << 20) + 1, 8, 7));
    }
    return sched;
}

/* @a count small messages of mixed kinds and sizes, for back-to-back
 * streams; every 37th is a zcopy larger than an element */
static inline schedule_t stream_schedule(size_t count, size_t max_short,
                                         uint64_t seed = 1)
{
    schedule_t sched;
    uint64_t r;
    size_t k;

    for (k = 0; k < count; ++k) {
        r = mix64(seed * 1000003 + k);
        if ((k % 37) == 36) {
            sched.push_back(msg_zcopy(max_short + 1 + (r % 5000),
                                      (unsigned)(r >> 32) % 64,
                                      1 + (unsigned)(r >> 40) % 4));
            continue;
        }
        switch (r % 3) {
        case 0:
            sched.push_back(msg_short((r >> 8) % 120));
            break;
        case 1:
            sched.push_back(msg_bcopy((r >> 8) % 300));
            break;
        default:
            sched.push_back(msg_zcopy((r >> 8) % 2000,
                                      (unsigned)(r >> 32) % 32,
                                      1 + (unsigned)(r >> 40) % 3));
            break;
        }
    }
    return sched;
}

static inline void append(schedule_t &dst, const schedule_t &src)
{
    dst.insert(dst.end(), src.begin(), src.end());
}


/*
 * Sender
 */
class traffic_sender {
public:
    traffic_sender(uct_env &env, uct_ep_h ep, uint8_t am_base,
                   uint64_t salt, const schedule_t *sched) :
        m_env(env), m_ep(ep), m_am_base(am_base), m_salt(salt),
        m_sched(sched), m_next(0), m_pending_used(0)
    {
    }

    ~traffic_sender()
    {
        /* Buffers of zcopy sends that never completed are leaked on
         * purpose: the transport may still read them */
        for (auto &z : m_zreqs) {
            if (!z->done()) {
                z.release();
            }
        }
    }

    size_t next() const { return m_next; }
    bool done() const { return m_next == m_sched->size(); }

    /*
     * @a consumed returns how many messages every receiver has consumed
     * (the minimum over them, from shared memory): a zcopy completion of
     * message k, or a flush completion, before they consumed it is an error
     */
    void check_consumed(std::function<size_t()> consumed)
    {
        m_consumed = consumed;
    }
    unsigned pending_used() const { return m_pending_used; }

    /*
     * One attempt to send the next message of the schedule.  Returns
     * UCS_OK when it went (m_next advances), UCS_ERR_NO_RESOURCE, or
     * the error of the transport.
     */
    ucs_status_t post_next()
    {
        ucs_status_t status;

        CHILD_CHECK(!done(), "post_next() past the end of the schedule");
        status = post((*m_sched)[m_next], m_next);
        if (!UCS_STATUS_IS_ERR(status)) {
            ++m_next;
            return UCS_OK;
        }
        return status;
    }

    /* Send the next message, retrying with progress on NO_RESOURCE */
    void send_next()
    {
        double end = now_sec() + wait_timeout;
        ucs_status_t status;

        while ((status = post_next()) == UCS_ERR_NO_RESOURCE) {
            CHILD_CHECK(now_sec() < end, "send of message %zu (%s, %zu "
                        "bytes) got NO_RESOURCE for %.0f s", m_next,
                        msg_kind_name((*m_sched)[m_next].kind),
                        (*m_sched)[m_next].length, wait_timeout);
            progress_once(m_env);
        }
        CHILD_CHECK(status == UCS_OK, "send of message %zu (%s, %zu bytes): "
                    "%s", m_next, msg_kind_name((*m_sched)[m_next].kind),
                    (*m_sched)[m_next].length, ucs_status_string(status));
    }

    /*
     * Send up to message @a end (exclusive).  With @a pending_batch > 0,
     * the first time a send returns NO_RESOURCE the next @a pending_batch
     * messages are queued with uct_ep_pending_add instead, and the call
     * waits until all of them went out.
     */
    void send_until(size_t end, unsigned pending_batch = 0)
    {
        double deadline = now_sec() + wait_timeout;
        ucs_status_t status;

        end = std::min(end, m_sched->size());
        while (m_next < end) {
            status = post_next();
            if (status == UCS_OK) {
                continue;
            }

            CHILD_CHECK(status == UCS_ERR_NO_RESOURCE, "send of message %zu "
                        "(%s, %zu bytes): %s", m_next,
                        msg_kind_name((*m_sched)[m_next].kind),
                        (*m_sched)[m_next].length, ucs_status_string(status));
            CHILD_CHECK(now_sec() < deadline, "sending %zu messages took "
                        "more than %.0f s (at %zu)", end, wait_timeout,
                        m_next);
            if (pending_batch > 0) {
                if (add_pending(std::min<size_t>(pending_batch,
                                                 end - m_next))) {
                    wait_pending();
                    pending_batch = 0;
                }
                continue;
            }
            progress_once(m_env);
        }
    }

    /*
     * Queue the next @a count messages with uct_ep_pending_add.  Returns
     * false (and queues nothing) when the transport says UCS_ERR_BUSY: it
     * has resources now.
     */
    bool add_pending(size_t count)
    {
        ucs_status_t status;
        size_t i;

        CHILD_CHECK(m_preqs.empty(), "pending requests already queued");
        CHILD_CHECK(m_next + count <= m_sched->size(), "past the schedule");
        for (i = 0; i < count; ++i) {
            m_preqs.emplace_back(new preq_t);
            preq_t *p   = m_preqs.back().get();
            p->req.func = pending_cb;
            p->self     = this;
            p->index    = m_next + i;
            p->calls    = 0;
            p->sent     = false;
            status      = uct_ep_pending_add(m_ep, &p->req, 0);
            if ((status == UCS_ERR_BUSY) && (i == 0)) {
                m_preqs.clear();
                return false;
            }
            CHILD_CHECK(status == UCS_OK, "uct_ep_pending_add #%zu: %s", i,
                        ucs_status_string(status));
        }

        /* The pending requests own these messages now */
        m_pending_end = m_next + count;
        ++m_pending_used;
        return true;
    }

    /* Progress until every queued pending request has sent its message
     * (the receivers progress: this takes milliseconds) */
    void wait_pending(double timeout = 10)
    {
        bool ok = progress_wait(m_env, [this]() {
            return std::all_of(m_preqs.begin(), m_preqs.end(),
                               [](const std::unique_ptr<preq_t> &p) {
                                   return p->sent;
                               });
        }, timeout);
        unsigned calls = 0;

        for (auto &p : m_preqs) {
            calls += p->calls;
        }
        CHILD_CHECK(ok, "%zu pending requests (messages %zu..) not all sent "
                    "in %.0f s; their callbacks ran %u times", m_preqs.size(),
                    m_next, timeout, calls);
        for (auto &p : m_preqs) {
            CHILD_CHECK(p->calls >= 1, "pending callback never called");
        }
        m_next = m_pending_end;
        m_preqs.clear();
    }

    /* Progress until every zcopy completion fired */
    void wait_zcopy()
    {
        bool ok = progress_wait(m_env, [this]() {
            return std::all_of(m_zreqs.begin(), m_zreqs.end(),
                               [](const std::unique_ptr<zreq_t> &z) {
                                   return z->done();
                               });
        });

        CHILD_CHECK(ok, "zcopy completions missing after %.0f s",
                    wait_timeout);
    }

    /*
     * Flush: once with a completion (which must fire exactly once, with
     * UCS_OK) and then without one until UCS_OK, with progress, bounded.
     */
    void flush()
    {
        struct flush_comp_t {
            uct_completion_t comp;
            int              fired;
        } fc;
        ucs_status_t status;
        double end;

        fc.comp.func   = [](uct_completion_t *self) {
            ucs_container_of(self, flush_comp_t, comp)->fired++;
        };
        fc.comp.count  = 1;
        fc.comp.status = UCS_OK;
        fc.fired       = 0;

        end = now_sec() + wait_timeout;
        while ((status = uct_ep_flush(m_ep, 0, &fc.comp)) ==
               UCS_ERR_NO_RESOURCE) {
            CHILD_CHECK(now_sec() < end, "flush: NO_RESOURCE for %.0f s",
                        wait_timeout);
            progress_once(m_env);
        }

        if (status == UCS_INPROGRESS) {
            CHILD_CHECK(progress_wait(m_env, [&fc]() {
                            return fc.fired > 0;
                        }), "flush completion did not fire in %.0f s",
                        wait_timeout);
            CHILD_CHECK(fc.comp.status == UCS_OK, "flush completion: %s",
                        ucs_status_string(fc.comp.status));
        } else {
            CHILD_CHECK(status == UCS_OK, "uct_ep_flush: %s",
                        ucs_status_string(status));
        }
        check_consumed_upto(m_next, "flush");

        /* A flush of an idle endpoint is done at once */
        end = now_sec() + wait_timeout;
        while ((status = uct_ep_flush(m_ep, 0, NULL)) != UCS_OK) {
            CHILD_CHECK((status == UCS_INPROGRESS) ||
                        (status == UCS_ERR_NO_RESOURCE), "uct_ep_flush: %s",
                        ucs_status_string(status));
            CHILD_CHECK(now_sec() < end, "flush not UCS_OK in %.0f s",
                        wait_timeout);
            progress_once(m_env);
        }

        progress_for(m_env, 0.001);
        CHILD_CHECK(fc.fired <= 1, "flush completion fired %d times",
                    fc.fired);
    }

    /*
     * Every zcopy completion fired exactly once, with @a expected (UCS_OK)
     * or, when @a allow_error, with any error
     */
    void check_completions(bool allow_error = false) const
    {
        for (auto &z : m_zreqs) {
            if (z->immediate) {
                CHILD_CHECK(z->fired == 0, "zcopy %zu returned UCS_OK and "
                            "its completion fired", z->index);
            } else {
                CHILD_CHECK(z->fired == 1, "zcopy %zu completion fired %d "
                            "times", z->index, z->fired);
                CHILD_CHECK((z->comp.status == UCS_OK) ||
                            (allow_error && is_error(z->comp.status)),
                            "zcopy %zu completed with %s", z->index,
                            ucs_status_string(z->comp.status));
            }
        }
    }

    size_t zcopy_count() const { return m_zreqs.size(); }

    /* Every receiver has consumed the first @a count messages */
    void check_consumed_upto(size_t count, const char *what) const
    {
        size_t consumed;

        if (m_consumed) {
            consumed = m_consumed();
            CHILD_CHECK(consumed >= count, "%s completed when receivers had "
                        "consumed %zu of %zu messages", what, consumed,
                        count);
        }
    }

    /* Post message @a k of the schedule once */
    ucs_status_t post(const msg_desc &m, uint64_t k)
    {
        uint8_t am_id = m_am_base + m.kind;
        uint64_t key  = msg_key(m_salt, k);

        switch (m.kind) {
        case MSG_SHORT: {
            std::vector<uint8_t> image(m.length);
            uint64_t header;

            fill_pattern(image.data(), m.length, key);
            memcpy(&header, image.data(), sizeof(header));
            /* No payload: NULL, as the API allows */
            return uct_ep_am_short(m_ep, am_id, header,
                                   (m.length > sizeof(header)) ?
                                   image.data() + sizeof(header) : NULL,
                                   (unsigned)(m.length - sizeof(header)));
        }
        case MSG_BCOPY: {
            bcopy_arg_t arg = {m.length, key};
            ssize_t ret     = uct_ep_am_bcopy(m_ep, am_id, bcopy_pack, &arg,
                                              0);
            if (ret >= 0) {
                CHILD_CHECK((size_t)ret == m.length, "am_bcopy returned %zd, "
                            "packed %zu", ret, m.length);
                return UCS_OK;
            }
            return (ucs_status_t)ret;
        }
        case MSG_ZCOPY:
            return post_zcopy(m, k, am_id, key);
        default:
            CHILD_CHECK(0, "bad message kind %d", m.kind);
            return UCS_ERR_INVALID_PARAM;
        }
    }

private:
    struct bcopy_arg_t {
        size_t   length;
        uint64_t key;
    };

    struct zreq_t {
        uct_completion_t     comp;
        traffic_sender       *owner;
        int                  fired;
        bool                 immediate;
        size_t               index;
        std::vector<uint8_t> buf;

        bool done() const { return immediate || (fired > 0); }
    };

    struct preq_t {
        uct_pending_req_t req;
        traffic_sender    *self;
        size_t            index;
        int               calls;
        bool              sent;
    };

    static size_t bcopy_pack(void *dest, void *arg)
    {
        const bcopy_arg_t *a = static_cast<const bcopy_arg_t*>(arg);

        fill_pattern(dest, a->length, a->key);
        return a->length;
    }

    static void zcopy_cb(uct_completion_t *self)
    {
        zreq_t *z = ucs_container_of(self, zreq_t, comp);

        z->fired++;
        if (self->status == UCS_OK) {
            z->owner->check_consumed_upto(z->index + 1, "zcopy");
        }
        /* The transport is done with the buffer: a late reader would see
         * this instead of the pattern */
        memset(z->buf.data(), 0xee, z->buf.size());
    }

    static ucs_status_t pending_cb(uct_pending_req_t *req)
    {
        preq_t *p = ucs_container_of(req, preq_t, req);
        traffic_sender *s = p->self;
        ucs_status_t status;

        ++p->calls;
        /* Pending requests run in order: all before this one went */
        for (auto &other : s->m_preqs) {
            if (other.get() == p) {
                break;
            }
            CHILD_CHECK(other->sent, "pending request %zu dispatched before "
                        "%zu", p->index, other->index);
        }

        status = s->post((*s->m_sched)[p->index], p->index);
        if (status == UCS_OK || status == UCS_INPROGRESS) {
            p->sent = true;
            return UCS_OK;
        }

        CHILD_CHECK(status == UCS_ERR_NO_RESOURCE, "send %zu from pending: "
                    "%s", p->index, ucs_status_string(status));
        return status;
    }

    ucs_status_t post_zcopy(const msg_desc &m, uint64_t k, uint8_t am_id,
                            uint64_t key)
    {
        uct_iov_t iov[16];
        ucs_status_t status;
        size_t rest, off, piece;
        unsigned i;

        /* Keep the prepared buffer across NO_RESOURCE retries */
        if (!m_zprep || (m_zprep->index != k)) {
            m_zprep.reset(new zreq_t);
            m_zprep->owner     = this;
            m_zprep->fired     = 0;
            m_zprep->immediate = false;
            m_zprep->index     = k;
            m_zprep->buf.resize(std::max<size_t>(m.length, 1));
            fill_pattern(m_zprep->buf.data(), m.length, key);
        }

        zreq_t *z = m_zprep.get();
        CHILD_CHECK(m.iovcnt <= 16, "iovcnt %u", m.iovcnt);
        rest = m.length - m.hdr_len;
        off  = m.hdr_len;
        for (i = 0; i < m.iovcnt; ++i) {
            piece = (i == m.iovcnt - 1) ? rest : (rest / m.iovcnt);
            iov[i].buffer = z->buf.data() + off;
            iov[i].length = piece;
            iov[i].memh   = UCT_MEM_HANDLE_NULL;
            iov[i].stride = 0;
            iov[i].count  = 1;
            off          += piece;
            rest         -= piece;
        }

        z->comp.func   = zcopy_cb;
        z->comp.count  = 1;
        z->comp.status = UCS_OK;
        /* No header: NULL, as the API allows */
        status = uct_ep_am_zcopy(m_ep, am_id,
                                 (m.hdr_len > 0) ? z->buf.data() : NULL,
                                 m.hdr_len, iov, m.iovcnt, 0, &z->comp);
        if ((status == UCS_OK) || (status == UCS_INPROGRESS)) {
            z->immediate = (status == UCS_OK);
            m_zreqs.push_back(std::move(m_zprep));
        }
        return status;
    }

    uct_env                              &m_env;
    uct_ep_h                             m_ep;
    uint8_t                              m_am_base;
    uint64_t                             m_salt;
    const schedule_t                     *m_sched;
    size_t                               m_next;
    size_t                               m_pending_end;
    unsigned                             m_pending_used;
    std::function<size_t()>              m_consumed;
    std::unique_ptr<zreq_t>              m_zprep;
    std::list<std::unique_ptr<zreq_t>>   m_zreqs;
    std::vector<std::unique_ptr<preq_t>> m_preqs;
};


/*
 * Receiver
 */
class traffic_receiver {
public:
    traffic_receiver(uct_env &env, uint8_t am_base, const char *name = "") :
        m_env(env), m_am_base(am_base), m_name(name), m_salt(0),
        m_sched(&m_empty), m_received(0), m_slot(NULL)
    {
        for (unsigned kind = 0; kind < MSG_KINDS; ++kind) {
            m_handlers[kind].self = this;
            m_handlers[kind].kind = (msg_kind)kind;
            env.set_am_handler(am_base + kind, am_cb, &m_handlers[kind]);
        }
    }

    /* Expect the stream (@a salt, @a sched) from now on */
    void expect(uint64_t salt, const schedule_t *sched)
    {
        m_salt     = salt;
        m_sched    = (sched != NULL) ? sched : &m_empty;
        m_received = 0;
        publish_count();
    }

    /* Also store the count of messages received in @a slot (shared
     * memory), before the transport learns they were consumed */
    void publish(volatile size_t *slot)
    {
        m_slot = slot;
        publish_count();
    }

    size_t received() const { return m_received; }
    bool complete() const { return m_received == m_sched->size(); }

    /* Progress until the whole schedule arrived */
    void wait_all(double timeout = 0)
    {
        bool ok = progress_wait(m_env, [this]() { return complete(); },
                                timeout);

        CHILD_CHECK(ok, "%s: received %zu of %zu messages in %.0f s",
                    m_name.c_str(), m_received, m_sched->size(),
                    (timeout > 0) ? timeout : wait_timeout);
    }

    /* Progress until @a count messages arrived */
    void wait_count(size_t count, double timeout = 0)
    {
        bool ok = progress_wait(m_env, [this, count]() {
            return m_received >= count;
        }, timeout);

        CHILD_CHECK(ok, "%s: received %zu of %zu messages in time",
                    m_name.c_str(), m_received, count);
    }

private:
    struct handler_t {
        traffic_receiver *self;
        msg_kind         kind;
    };

    void publish_count()
    {
        if (m_slot != NULL) {
            __atomic_store_n(m_slot, m_received, __ATOMIC_RELEASE);
        }
    }

    static ucs_status_t am_cb(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        handler_t *h           = static_cast<handler_t*>(arg);
        traffic_receiver *self = h->self;
        size_t k               = self->m_received;
        size_t bad;

        CHILD_CHECK(k < self->m_sched->size(), "%s: unexpected message #%zu "
                    "(%s, %zu bytes): only %zu expected (duplicate?)",
                    self->m_name.c_str(), k, msg_kind_name(h->kind), length,
                    self->m_sched->size());

        const msg_desc &m = (*self->m_sched)[k];
        CHILD_CHECK(h->kind == m.kind, "%s: message #%zu arrived as %s, "
                    "sent as %s (%zu/%zu bytes)", self->m_name.c_str(), k,
                    msg_kind_name(h->kind), msg_kind_name(m.kind), length,
                    m.length);
        CHILD_CHECK(length == m.length, "%s: message #%zu (%s): %zu bytes "
                    "instead of %zu", self->m_name.c_str(), k,
                    msg_kind_name(m.kind), length, m.length);
        bad = check_pattern(data, length, msg_key(self->m_salt, k));
        CHILD_CHECK(bad == length, "%s: message #%zu (%s, %zu bytes): "
                    "wrong data at offset %zu", self->m_name.c_str(), k,
                    msg_kind_name(m.kind), length, bad);
        self->m_received = k + 1;
        self->publish_count();
        return UCS_OK;
    }

    uct_env     &m_env;
    uint8_t     m_am_base;
    std::string m_name;
    uint64_t    m_salt;
    schedule_t  m_empty;
    const schedule_t *m_sched;
    size_t      m_received;
    volatile size_t *m_slot;
    handler_t   m_handlers[MSG_KINDS];
};


/* Minimum of the counts in @a slots (of ranks != @a except) */
static inline std::function<size_t()>
min_consumed(volatile size_t *slots, unsigned nprocs, unsigned except)
{
    return [slots, nprocs, except]() {
        size_t min = SIZE_MAX;
        for (unsigned r = 0; r < nprocs; ++r) {
            if (r != except) {
                min = std::min<size_t>(min, __atomic_load_n(&slots[r],
                                                            __ATOMIC_ACQUIRE));
            }
        }
        return min;
    };
}

/*
 * Addresses of every rank's interface, exchanged through a proc_group
 */
struct peer_addrs {
    std::vector<std::vector<char>> iface;
    std::vector<std::vector<char>> dev;

    void exchange(proc_group &pg, unsigned rank, const uct_env &env)
    {
        std::vector<char> mine_if  = env.iface_addr();
        std::vector<char> mine_dev = env.dev_addr();
        std::vector<char> all_if(mine_if.size() * pg.size());
        std::vector<char> all_dev(mine_dev.size() * pg.size());

        pg.allgather(rank, mine_if.data(), mine_if.size(), all_if.data());
        pg.allgather(rank, mine_dev.data(), mine_dev.size(), all_dev.data());
        iface.clear();
        dev.clear();
        for (unsigned r = 0; r < pg.size(); ++r) {
            iface.emplace_back(all_if.begin() + (r * mine_if.size()),
                               all_if.begin() + ((r + 1) * mine_if.size()));
            dev.emplace_back(all_dev.begin() + (r * mine_dev.size()),
                             all_dev.begin() + ((r + 1) * mine_dev.size()));
        }
    }

    /*
     * Member @a rank of group @a group_id of @a size members, rooted at rank
     * 0: the members name the root's addresses (which stay ours)
     */
    uct_o2m_group_params_t group_params(uint64_t group_id, unsigned size,
                                        unsigned rank) const
    {
        uct_o2m_group_params_t p;

        memset(&p, 0, sizeof(p));
        p.group_id   = group_id;
        p.size       = size;
        p.my_index   = rank;
        p.root_index = 0;
        if (rank != 0) {
            p.field_mask      = UCT_O2M_GROUP_FIELD_ROOT_ADDR;
            p.root_iface_addr = (const uct_iface_addr_t*)iface[0].data();
            p.root_dev_addr   = (const uct_device_addr_t*)dev[0].data();
        }
        return p;
    }

    /* A point-to-point endpoint of @a env to rank @a peer */
    ucs_status_t p2p_ep_create(const uct_env &env, unsigned peer,
                               uct_ep_h *ep) const
    {
        uct_ep_params_t params;

        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = env.iface();
        params.dev_addr   = (const uct_device_addr_t*)dev[peer].data();
        params.iface_addr = (const uct_iface_addr_t*)iface[peer].data();
        return uct_ep_create(&params, ep);
    }
};

/*
 * A point-to-point endpoint to @a peer, which must be reachable; with
 * @a status_p, uct_ep_create's status is returned there instead of checked
 */
inline uct_ep_h create_p2p_ep(uct_env &env, const peer_addrs &addrs,
                              unsigned peer, ucs_status_t *status_p = NULL)
{
    uct_ep_params_t params;
    ucs_status_t status;
    uct_ep_h ep = NULL;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = env.iface();
    params.dev_addr   = (const uct_device_addr_t*)addrs.dev[peer].data();
    params.iface_addr = (const uct_iface_addr_t*)addrs.iface[peer].data();

    CHILD_CHECK(uct_iface_is_reachable(env.iface(), params.dev_addr,
                                       params.iface_addr),
                "peer %u is not reachable", peer);

    status = uct_ep_create(&params, &ep);
    if (status_p != NULL) {
        *status_p = status;
        return ep;
    }
    CHILD_CHECK(status == UCS_OK, "uct_ep_create to %u: %s", peer,
                ucs_status_string(status));
    return ep;
}

/* The root (rank 0) creates its group endpoint first, then the others */
static inline void group_ep_create_root_first(proc_group &pg, unsigned rank,
                                              const uct_env &env,
                                              const uct_o2m_group_params_t &p,
                                              uct_ep_h *ep)
{
    if (rank == 0) {
        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, ep));
    }
    pg.barrier(rank);
    if (rank != 0) {
        CHILD_CHECK_OK(uct_o2m_ep_create(env.iface(), &p, ep));
    }
}


/*
 * Fails the test when the project left something behind during the
 * object's life: a process of the test (this one or a child still alive)
 * holds or maps an o2m segment, or /dev/shm gained a file with the project's
 * prefix.  Files and segments of other jobs on the machine do not count.
 */
class shm_residue_check {
public:
    shm_residue_check() : m_before(files()) {}

    ~shm_residue_check()
    {
        std::vector<std::string> added = residue();

        if (!added.empty()) {
            usleep(200000); /* a child may be on its way out */
            added = residue();
        }

        std::string names;
        for (const std::string &name : added) {
            names += "\n  " + name;
        }
        EXPECT_TRUE(added.empty()) << "left behind:" << names;
    }

private:
    static std::set<std::string> files()
    {
        std::vector<std::string> v = dev_shm_files();
        return std::set<std::string>(v.begin(), v.end());
    }

    std::vector<std::string> residue() const
    {
        std::vector<std::string> added = o2m_held_by_test();

        for (const std::string &name : files()) {
            if (!m_before.count(name)) {
                added.push_back("/dev/shm/" + name);
            }
        }
        return added;
    }

    std::set<std::string> m_before;
};

/* Number of open file descriptors of this process */
static inline unsigned count_fds()
{
    unsigned count = 0;
    char path[64];
    int fd;

    for (fd = 0; fd < 4096; ++fd) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (access(path, F_OK) == 0) {
            ++count;
        }
    }
    return count;
}

} // namespace o2m_test

#endif
