/**
 * ucx-o2m tests: checked active-message traffic (traffic.h).
 */
#include "traffic.h"

#include <algorithm>

namespace o2m_test {

void fill_pattern(void *buf, size_t length, uint64_t key)
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

size_t check_pattern(const void *buf, size_t length,
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

schedule_t size_class_schedule(size_t max_short,
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

schedule_t stream_schedule(size_t count, size_t max_short,
                           uint64_t seed)
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

traffic_sender::traffic_sender(uct_env &env, uct_ep_h ep, uint8_t am_base,
                               uint64_t salt, const schedule_t *sched) :
    m_env(env), m_ep(ep), m_am_base(am_base), m_salt(salt),
    m_sched(sched), m_next(0), m_pending_used(0)
{
}

traffic_sender::~traffic_sender()
{
    /* Buffers of zcopy sends that never completed are leaked on
     * purpose: the transport may still read them */
    for (auto &z : m_zreqs) {
        if (!z->done()) {
            z.release();
        }
    }
}

void traffic_sender::check_consumed(std::function<size_t()> consumed)
{
    m_consumed = consumed;
}

ucs_status_t traffic_sender::post_next()
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

void traffic_sender::send_next()
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

void traffic_sender::send_until(size_t end, unsigned pending_batch)
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

bool traffic_sender::add_pending(size_t count)
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

void traffic_sender::wait_pending(double timeout)
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

void traffic_sender::wait_zcopy()
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

void traffic_sender::flush()
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

void traffic_sender::check_completions(bool allow_error) const
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

void traffic_sender::check_consumed_upto(size_t count, const char *what) const
{
    size_t consumed;

    if (m_consumed) {
        consumed = m_consumed();
        CHILD_CHECK(consumed >= count, "%s completed when receivers had "
                    "consumed %zu of %zu messages", what, consumed,
                    count);
    }
}

ucs_status_t traffic_sender::post(const msg_desc &m, uint64_t k)
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

size_t traffic_sender::bcopy_pack(void *dest, void *arg)
{
    const bcopy_arg_t *a = static_cast<const bcopy_arg_t*>(arg);

    fill_pattern(dest, a->length, a->key);
    return a->length;
}

void traffic_sender::zcopy_cb(uct_completion_t *self)
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

ucs_status_t traffic_sender::pending_cb(uct_pending_req_t *req)
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

ucs_status_t traffic_sender::post_zcopy(const msg_desc &m, uint64_t k,
                                        uint8_t am_id, uint64_t key)
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

traffic_receiver::traffic_receiver(uct_env &env, uint8_t am_base,
                                   const char *name) :
    m_env(env), m_am_base(am_base), m_name(name), m_salt(0),
    m_sched(&m_empty), m_received(0), m_slot(NULL)
{
    for (unsigned kind = 0; kind < MSG_KINDS; ++kind) {
        m_handlers[kind].self = this;
        m_handlers[kind].kind = (msg_kind)kind;
        env.set_am_handler(am_base + kind, am_cb, &m_handlers[kind]);
    }
}

void traffic_receiver::expect(uint64_t salt, const schedule_t *sched)
{
    m_salt     = salt;
    m_sched    = (sched != NULL) ? sched : &m_empty;
    m_received = 0;
    publish_count();
}

void traffic_receiver::publish(volatile size_t *slot)
{
    m_slot = slot;
    publish_count();
}

void traffic_receiver::wait_all(double timeout)
{
    bool ok = progress_wait(m_env, [this]() { return complete(); },
                            timeout);

    CHILD_CHECK(ok, "%s: received %zu of %zu messages in %.0f s",
                m_name.c_str(), m_received, m_sched->size(),
                (timeout > 0) ? timeout : wait_timeout);
}

void traffic_receiver::wait_count(size_t count, double timeout)
{
    bool ok = progress_wait(m_env, [this, count]() {
        return m_received >= count;
    }, timeout);

    CHILD_CHECK(ok, "%s: received %zu of %zu messages in time",
                m_name.c_str(), m_received, count);
}

void traffic_receiver::publish_count()
{
    if (m_slot != NULL) {
        __atomic_store_n(m_slot, m_received, __ATOMIC_RELEASE);
    }
}

ucs_status_t traffic_receiver::am_cb(void *arg, void *data, size_t length,
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

std::function<size_t()>
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

} // namespace o2m_test
