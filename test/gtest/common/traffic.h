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

#include "uct_env.h"

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>
#include <cstring>

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

void fill_pattern(void *buf, size_t length, uint64_t key);

/* Offset of the first byte that differs from the pattern, or length */
size_t check_pattern(const void *buf, size_t length,
                     uint64_t key);

/*
 * Schedules
 */

/* Every size class and boundary that @a max_short / @a max_bcopy define;
 * @a large adds 1 MiB and 4 MiB zcopy messages */
schedule_t size_class_schedule(size_t max_short,
                               size_t max_bcopy, bool large);

/* @a count small messages of mixed kinds and sizes, for back-to-back
 * streams; every 37th is a zcopy larger than an element */
schedule_t stream_schedule(size_t count, size_t max_short,
                           uint64_t seed = 1);

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
                   uint64_t salt, const schedule_t *sched);

    ~traffic_sender();

    size_t next() const { return m_next; }
    bool done() const { return m_next == m_sched->size(); }

    /*
     * @a consumed returns how many messages every receiver has consumed
     * (the minimum over them, from shared memory): a zcopy completion of
     * message k, or a flush completion, before they consumed it is an error
     */
    void check_consumed(std::function<size_t()> consumed);
    unsigned pending_used() const { return m_pending_used; }

    /*
     * One attempt to send the next message of the schedule.  Returns
     * UCS_OK when it went (m_next advances), UCS_ERR_NO_RESOURCE, or
     * the error of the transport.
     */
    ucs_status_t post_next();

    /* Send the next message, retrying with progress on NO_RESOURCE */
    void send_next();

    /*
     * Send up to message @a end (exclusive).  With @a pending_batch > 0,
     * the first time a send returns NO_RESOURCE the next @a pending_batch
     * messages are queued with uct_ep_pending_add instead, and the call
     * waits until all of them went out.
     */
    void send_until(size_t end, unsigned pending_batch = 0);

    /*
     * Queue the next @a count messages with uct_ep_pending_add.  Returns
     * false (and queues nothing) when the transport says UCS_ERR_BUSY: it
     * has resources now.
     */
    bool add_pending(size_t count);

    /* Progress until every queued pending request has sent its message
     * (the receivers progress: this takes milliseconds) */
    void wait_pending(double timeout = 10);

    /* Progress until every zcopy completion fired */
    void wait_zcopy();

    /*
     * Flush: once with a completion (which must fire exactly once, with
     * UCS_OK) and then without one until UCS_OK, with progress, bounded.
     */
    void flush();

    /*
     * Every zcopy completion fired exactly once, with @a expected (UCS_OK)
     * or, when @a allow_error, with any error
     */
    void check_completions(bool allow_error = false) const;

    size_t zcopy_count() const { return m_zreqs.size(); }

    /* Every receiver has consumed the first @a count messages */
    void check_consumed_upto(size_t count, const char *what) const;

    /* Post message @a k of the schedule once */
    ucs_status_t post(const msg_desc &m, uint64_t k);

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

    static size_t bcopy_pack(void *dest, void *arg);

    static void zcopy_cb(uct_completion_t *self);

    static ucs_status_t pending_cb(uct_pending_req_t *req);

    ucs_status_t post_zcopy(const msg_desc &m, uint64_t k, uint8_t am_id,
                            uint64_t key);

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
    traffic_receiver(uct_env &env, uint8_t am_base, const char *name = "");

    /* Expect the stream (@a salt, @a sched) from now on */
    void expect(uint64_t salt, const schedule_t *sched);

    /* Also store the count of messages received in @a slot (shared
     * memory), before the transport learns they were consumed */
    void publish(volatile size_t *slot);

    size_t received() const { return m_received; }
    bool complete() const { return m_received == m_sched->size(); }

    /* Progress until the whole schedule arrived */
    void wait_all(double timeout = 0);

    /* Progress until @a count messages arrived */
    void wait_count(size_t count, double timeout = 0);

private:
    struct handler_t {
        traffic_receiver *self;
        msg_kind         kind;
    };

    void publish_count();

    static ucs_status_t am_cb(void *arg, void *data, size_t length,
                              unsigned flags);

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
std::function<size_t()>
min_consumed(volatile size_t *slots, unsigned nprocs, unsigned except);

} // namespace o2m_test

#endif
