/**
 * ucx-o2m tests: numbered active messages over a UCT endpoint, the same in
 * the multicast transports' tests (mc_udp, mc_verbs): message k is its
 * 8-byte index and a pattern of key (salt, k); a test picks the sizes.
 */
#ifndef O2M_TEST_AM_MSGS_H_
#define O2M_TEST_AM_MSGS_H_

#include "harness.h"
#include "traffic.h"

extern "C" {
#include <uct/api/uct.h>
}

#include <string.h>
#include <vector>

namespace o2m_test {

/* Received messages: AM data copied, in arrival order; how many came at
 * an address that is not 8-byte aligned (the multicast transports keep
 * their AM data aligned: am_msgs_check_aligned) */
struct am_rx_log {
    std::vector<std::vector<uint8_t>> msgs;
    unsigned                          misaligned = 0;

    static ucs_status_t cb(void *arg, void *data, size_t length,
                           unsigned flags)
    {
        auto log = static_cast<am_rx_log*>(arg);
        auto p   = static_cast<uint8_t*>(data);

        log->msgs.emplace_back(p, p + length);
        log->misaligned += ((uintptr_t)data % 8) != 0;
        return UCS_OK;
    }
};

struct am_msg_arg {
    uint64_t salt;
    uint64_t k;
    size_t   length;
};

/* uct_pack_callback_t of message @a arg (an am_msg_arg) */
static inline size_t am_msg_pack(void *dest, void *arg)
{
    auto a = static_cast<am_msg_arg*>(arg);

    memcpy(dest, &a->k, 8);
    fill_pattern(static_cast<uint8_t*>(dest) + 8, a->length - 8,
                 msg_key(a->salt, a->k));
    return a->length;
}

/* Send message @a k of @a length bytes: am_short up to @a max_short, else
 * am_bcopy; retried on NO_RESOURCE with env.progress(), bounded */
template <typename Env>
ucs_status_t am_msg_send(Env &env, uct_ep_h ep, uint8_t am_id, uint64_t salt,
                         unsigned k, size_t length, size_t max_short)
{
    am_msg_arg a = {salt, k, length};
    std::vector<uint8_t> buf(a.length);
    double end = now_sec() + wait_timeout;
    ucs_status_t status;
    uint64_t hdr;

    am_msg_pack(buf.data(), &a);
    memcpy(&hdr, buf.data(), 8);
    for (;;) {
        if (a.length <= max_short) {
            status = uct_ep_am_short(ep, am_id, hdr, buf.data() + 8,
                                     a.length - 8);
        } else {
            ssize_t ret = uct_ep_am_bcopy(ep, am_id, am_msg_pack, &a, 0);
            status = (ret < 0) ? (ucs_status_t)ret : UCS_OK;
        }
        if ((status != UCS_ERR_NO_RESOURCE) || (now_sec() > end)) {
            return status;
        }
        env.progress();
    }
}

/* Flush @a ep, progressing, bounded; the flush's status */
template <typename Env>
ucs_status_t am_ep_flush(Env &env, uct_ep_h ep)
{
    double end = now_sec() + wait_timeout;
    ucs_status_t status;

    do {
        status = uct_ep_flush(ep, 0, NULL);
        if ((status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE)) {
            return status;
        }
        env.progress();
    } while (now_sec() < end);
    return UCS_ERR_TIMED_OUT;
}

/* Messages 0..count-1 of @a salt, sized size(k, max), exact and in order;
 * a CHILD_CHECK failure else */
static inline void am_msgs_check(const am_rx_log &log, uint64_t salt,
                                 unsigned count,
                                 size_t (*size)(unsigned, size_t),
                                 size_t max, const char *what)
{
    CHILD_CHECK(log.msgs.size() == count, "%s: %zu messages instead of %u",
                what, log.msgs.size(), count);
    for (unsigned k = 0; k < count; ++k) {
        const std::vector<uint8_t> &m = log.msgs[k];
        uint64_t idx;

        CHILD_CHECK(m.size() == size(k, max), "%s: message %u has %zu "
                    "bytes instead of %zu", what, k, m.size(), size(k, max));
        memcpy(&idx, m.data(), 8);
        CHILD_CHECK(idx == k, "%s: message %u is #%lu", what, k, idx);
        size_t bad = check_pattern(m.data() + 8, m.size() - 8,
                                   msg_key(salt, k));
        CHILD_CHECK(bad == m.size() - 8, "%s: message %u: wrong byte at %zu",
                    what, k, bad + 8);
    }
}

/* Every message of @a log came 8-byte aligned to the AM handler; a
 * CHILD_CHECK failure else */
static inline void am_msgs_check_aligned(const am_rx_log &log,
                                         const char *what)
{
    CHILD_CHECK(log.misaligned == 0, "%s: %u of %zu messages' data not "
                "8-byte aligned", what, log.misaligned, log.msgs.size());
}

} // namespace o2m_test

#endif
