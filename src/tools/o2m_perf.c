/**
 * ucx-o2m: ucx_o2m_perf, the benchmark of the one-to-many transports.
 *
 * Forks N processes on this host for every group size N and measures, in
 * the same run and with the same traffic:
 *  - a cache-line reference: one cache line ping-ponged between two
 *    processes (one-way time = RTT/2);
 *  - fan-out latency: the root sends a message to the N-1 others, each
 *    replies with 8 bytes; sm_bcast (each mode) with the replies on an
 *    sm_incast gather group, against N-1 point-to-point posix messages with
 *    posix replies;
 *  - fan-in latency: each non-root member contributes a message (INT64 SUM),
 *    the root releases them with 8 bytes once it has the result; sm_incast
 *    (each mode) with an sm_bcast release, against posix messages that the
 *    root reduces itself, with posix releases;
 *  - fan-out and fan-in bandwidth: a stream of back-to-back messages timed
 *    until the last one is consumed (a final 8-byte reply or release).
 *
 * Everything is at the UCT level.  Every message is an 8-byte header
 * (sequence, fragment, sender) followed by the payload; a transport sends it
 * with am_short when it fits, else am_bcopy, else am_zcopy, and posix, which
 * has no am_zcopy, in max_bcopy fragments that the receiver reassembles.
 * Receivers copy the payload out of the transport (or reduce it) in their
 * active-message handler, as a user of the transport would.
 *
 * Correctness: every message's header is checked (sequence, fragment,
 * sender, length), the first and last words of every latency message, the
 * whole payload of every warm-up message and of the last message of every
 * latency measurement, the last message of every fan-out stream and the
 * accumulated sum of every fan-in stream.  Every wait is bounded; a
 * failure stops all the processes of the run, and the tool exits non-zero.
 */
#ifdef HAVE_CONFIG_H
#  include "o2m_config.h"
#endif

#include "uct_o2m.h"
#include "perf_lib.h"

#include <uct/api/uct.h>
#include <ucp/api/ucp.h>
#include <ucs/async/async_fwd.h>
#include <ucs/sys/math.h>
#include <ucs/type/status.h>

#include <sys/mman.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define O2M_PERF_MAX_PROCS       128
#define O2M_PERF_MAX_NLIST       16
#define O2M_PERF_MAX_SIZES       32
#define O2M_PERF_ADDR_MAX        256
#define O2M_PERF_LINE            64
#define O2M_PERF_HDR_LEN         sizeof(uint64_t)
#define O2M_PERF_MAX_SIZE        (64ul << 20)

/* Active-message ids, the same on every interface */
#define O2M_PERF_AM_DATA         10 /* fan-out payload, at receivers */
#define O2M_PERF_AM_REPLY        11 /* fan-out 8-byte reply, at the root */
#define O2M_PERF_AM_FANIN        12 /* fan-in contribution/result, root */
#define O2M_PERF_AM_RELEASE      13 /* fan-in 8-byte release, at senders */

/* Cache-line reference */
#define O2M_PERF_CL_ITERS        200000
#define O2M_PERF_CL_WARMUP       20000

/* Latency iterations are scaled down above this size */
#define O2M_PERF_LAT_FULL_SIZE   (16ul << 10)
#define O2M_PERF_LAT_MIN_ITERS   20
/* Bandwidth: a stream of at most this many bytes per receiver */
#define O2M_PERF_BW_BYTES        (32ul << 20)
#define O2M_PERF_BW_MIN_MSGS     20

/* Timed batches (latency) and streams (bandwidth); the median is kept */
#define O2M_PERF_MAX_BATCHES     64

/* zcopy completions are counted down from this */
#define O2M_PERF_COMP_COUNT      (1 << 30)

/* Header: sequence (32 bits), fragment (16), sender rank (16) */
#define O2M_PERF_HDR(_seq, _frag, _rank) \
    (((uint64_t)(_seq) << 32) | ((uint64_t)(_frag) << 16) | (_rank))
#define O2M_PERF_HDR_SEQ(_hdr)   ((_hdr) >> 32)
#define O2M_PERF_HDR_FRAG(_hdr)  (((_hdr) >> 16) & 0xffff)
#define O2M_PERF_HDR_RANK(_hdr)  ((_hdr) & 0xffff)


/* Transports each process opens */
typedef enum {
    O2M_PERF_TL_BCAST,
    O2M_PERF_TL_INCAST,
    O2M_PERF_TL_POSIX,
    O2M_PERF_TL_LAST
} o2m_perf_tl_id_t;

/* Tests selected with -t */
enum {
    O2M_PERF_TEST_CL     = 1 << 0,
    O2M_PERF_TEST_FANOUT = 1 << 1,
    O2M_PERF_TEST_FANIN  = 1 << 2,
    O2M_PERF_TEST_BW     = 1 << 3,
    O2M_PERF_TEST_ALL    = 0xf
};

/* Result tables */
typedef enum {
    O2M_PERF_TAB_FANOUT_LAT,
    O2M_PERF_TAB_FANIN_LAT,
    O2M_PERF_TAB_FANOUT_BW,
    O2M_PERF_TAB_FANIN_BW,
    O2M_PERF_TAB_LAST
} o2m_perf_tab_t;

/* Columns of a table: the o2m modes (uct_o2m_mode_t), then posix, then
 * (fan-out, above sm_bcast's max_bcopy) sm_bcast batched with the message
 * in max_bcopy fragments through the ring instead of one am_zcopy */
#define O2M_PERF_VAR_POSIX       UCT_O2M_MODE_LAST
#define O2M_PERF_VAR_FRAGS       (UCT_O2M_MODE_LAST + 1)
#define O2M_PERF_VAR_LAST        (UCT_O2M_MODE_LAST + 2)

/* Result cell values besides a measurement */
#define O2M_PERF_RES_NA          (-1.0) /* mode does not support the op */

/* How a message goes out */
typedef enum {
    O2M_PERF_PATH_SHORT,
    O2M_PERF_PATH_BCOPY,
    O2M_PERF_PATH_ZCOPY
} o2m_perf_path_t;

/* Which interfaces a loop progresses: a wait progresses the interface of
 * the message it waits for; a send that finds no room, every interface of
 * its kind */
typedef enum {
    O2M_PERF_PROG_O2M,   /* sm_bcast and sm_incast */
    O2M_PERF_PROG_BCAST,
    O2M_PERF_PROG_INCAST,
    O2M_PERF_PROG_POSIX
} o2m_perf_prog_t;


typedef struct {
    const char *name;
    const char *title;
    const char *unit;
    int        is_bw;     /* Higher is better */
    int        is_fanin;  /* Columns: the four modes, else two */
} o2m_perf_tab_desc_t;

static const o2m_perf_tab_desc_t o2m_perf_tabs[O2M_PERF_TAB_LAST] = {
    [O2M_PERF_TAB_FANOUT_LAT] = {
        "fan-out latency",
        "Fan-out latency: root sends one message to N-1 receivers, each "
        "replies 8 B",
        "RTT/2, usec, lower is better", 0, 0
    },
    [O2M_PERF_TAB_FANIN_LAT] = {
        "fan-in latency",
        "Fan-in latency: N-1 senders contribute (INT64 SUM), the root "
        "releases them with 8 B",
        "RTT/2, usec, lower is better", 0, 1
    },
    [O2M_PERF_TAB_FANOUT_BW] = {
        "fan-out bandwidth",
        "Fan-out bandwidth: back-to-back messages from the root to N-1 "
        "receivers",
        "MB/s of payload per receiver, higher is better", 1, 0
    },
    [O2M_PERF_TAB_FANIN_BW] = {
        "fan-in bandwidth",
        "Fan-in bandwidth: back-to-back contributions (INT64 SUM) of N-1 "
        "senders",
        "MB/s of payload per sender, higher is better", 1, 1
    }
};

static const char *o2m_perf_tl_names[O2M_PERF_TL_LAST] = {
    [O2M_PERF_TL_BCAST]  = UCT_O2M_BCAST_TL_NAME,
    [O2M_PERF_TL_INCAST] = UCT_O2M_INCAST_TL_NAME,
    [O2M_PERF_TL_POSIX]  = "posix"
};


static const char *o2m_perf_var_name(unsigned var)
{
    return (var == O2M_PERF_VAR_POSIX) ? "posix" :
           (var == O2M_PERF_VAR_FRAGS) ? "frags" : uct_o2m_mode_name(var);
}


typedef struct {
    unsigned nprocs[O2M_PERF_MAX_NLIST];
    unsigned num_nprocs;
    size_t   sizes[O2M_PERF_MAX_SIZES];
    unsigned num_sizes;
    unsigned iters;        /* Latency iterations, small messages */
    unsigned warmup;       /* Latency warm-up iterations (0: iters / 10) */
    unsigned bw_msgs;      /* Bandwidth stream, small messages */
    unsigned batches;      /* Timed batches/streams, median reported */
    unsigned tests;
    double   timeout;      /* The whole run, seconds */
    int      bind;         /* Pin processes to CPUs when N <= CPUs */
    unsigned ncpus;        /* CPUs this process may run on */
    int      cpus[CPU_SETSIZE];
} o2m_perf_opts_t;


typedef struct {
    uint8_t iface[O2M_PERF_ADDR_MAX];
    uint8_t dev[O2M_PERF_ADDR_MAX];
} o2m_perf_addr_t;


/* Anonymous shared memory, mapped before the fork */
typedef struct {
    perf_barrier_t    barrier;
    volatile int32_t  failed     __attribute__((aligned(O2M_PERF_LINE)));
    volatile uint64_t line       __attribute__((aligned(O2M_PERF_LINE)));
    uint8_t           pad[O2M_PERF_LINE - sizeof(uint64_t)];
    o2m_perf_addr_t   addr[O2M_PERF_MAX_PROCS][O2M_PERF_TL_LAST];
    double            results[O2M_PERF_MAX_NLIST][O2M_PERF_MAX_SIZES]
                             [O2M_PERF_TAB_LAST][O2M_PERF_VAR_LAST];
    double            cl_oneway;  /* Seconds */
    /* How each size goes out on each transport, for the output */
    struct {
        int           valid;
        int           path;   /* o2m_perf_path_t */
        unsigned      nfrags;
        size_t        chunk;
    } paths[O2M_PERF_MAX_SIZES][O2M_PERF_TL_LAST];
} o2m_perf_shared_t;


/* One measurement, described the same way on every process */
typedef struct {
    o2m_perf_tab_t  tab;
    unsigned        var;       /* uct_o2m_mode_t or O2M_PERF_VAR_* */
    int             posix;
    int             is_bw;
    int             is_fanin;
    unsigned        nprocs;
    size_t          size;      /* Payload bytes */
    size_t          nwords;
    o2m_perf_path_t path;      /* Of each fragment */
    size_t          chunk;     /* Payload bytes of a fragment */
    unsigned        nfrags;    /* 1 but for posix and frags above
                                  max_bcopy */
    uint64_t        stamp;     /* Makes the payload of this measurement
                                  unlike any other */
    unsigned        iters;     /* Latency iterations or stream messages */
    unsigned        warmup;
} o2m_perf_meas_t;


/* Receive state of a process, updated by the AM handlers */
typedef struct {
    const o2m_perf_meas_t *m;
    int                   check_words; /* Check first/last word of each */
    uint64_t              msgs;        /* Messages/rounds received */
    uint64_t              replies;     /* 8-byte replies/releases */
    uint64_t              reply_seq;   /* Sequence they must carry */
    unsigned              frag;        /* Next fragment (fan-out) */
    unsigned              got;         /* Fragments of this round (fan-in
                                          posix latency) */
    uint64_t              done;        /* Contributions complete (fan-in
                                          posix bandwidth) */
    uint64_t              errors;
    char                  error[256];  /* The first one */
} o2m_perf_rx_t;


typedef struct {
    uct_md_h         md;
    uct_iface_h      iface;
    uct_iface_attr_t attr;
} o2m_perf_tl_t;


/* A process of the group */
typedef struct {
    unsigned            rank;
    unsigned            nprocs;
    unsigned            n_idx;
    int                 oversub;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    o2m_perf_tl_t       tl[O2M_PERF_TL_LAST];
    uct_o2m_iface_attr_t o2m_attr[2];
    uct_ep_h            posix_eps[O2M_PERF_MAX_PROCS];
    uint64_t            group_id;
    uint64_t            *send_buf;
    uint64_t            *recv_buf;
    uint64_t            *accum;
    uint32_t            *frag_seen;     /* Per fragment (fan-in root) */
    uint64_t            *sender_round;  /* Per sender (fan-in root) */
    unsigned            *sender_frag;
    size_t              buf_size;
    uct_completion_t    comp;
    uint64_t            zcopy_issued;
    o2m_perf_rx_t       rx;
} o2m_perf_proc_t;


static void o2m_perf_record_paths(o2m_perf_proc_t *p);


static o2m_perf_opts_t   o2m_perf_opts;
static o2m_perf_shared_t *o2m_perf_shm;


#define O2M_PERF_CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            perf_die(__VA_ARGS__); \
        } \
    } while (0)


static void o2m_perf_relax(int oversub)
{
    if (oversub) {
        sched_yield();
    } else {
        uct_o2m_cpu_relax();
    }
}

/* What a process has received, in the message of a stopped or timed-out
 * wait */
static void o2m_perf_rx_detail(const void *arg, int timed_out, char *buf,
                               size_t max)
{
    const o2m_perf_rx_t *rx = arg;

    if (timed_out) {
        snprintf(buf, max, "received %" PRIu64 " messages, %" PRIu64
                 " replies; expecting replies to %" PRIu64,
                 rx->msgs + rx->done, rx->replies, rx->reply_seq);
    } else {
        snprintf(buf, max, "received %" PRIu64 " messages, %" PRIu64
                 " replies", rx->msgs + rx->done, rx->replies);
    }
}

/* A bounded wait, spinning politely (sched_yield when oversubscribed) */
static inline void o2m_perf_waiter_check(perf_waiter_t *w, int oversub)
{
    perf_waiter_check(w);
    o2m_perf_relax(oversub);
}

static void o2m_perf_barrier(o2m_perf_proc_t *p, const char *what)
{
    perf_barrier(&o2m_perf_shm->barrier, p->nprocs, what, NULL, NULL);
}


/* ------------------------------------------------------------------------ */
/* Payload                                                                  */

/*
 * Word @a j of the payload that @a rank sends in message @a seq.  The first
 * and last words change with every message; the others with the
 * measurement (stamp) and the sender.
 */
static inline uint64_t o2m_perf_word(uint64_t stamp, unsigned rank, size_t j,
                                     size_t nwords, uint64_t seq)
{
    if (j == 0) {
        return ((seq + 1) * (rank + 1)) + stamp;
    } else if (j == (nwords - 1)) {
        return (seq ^ stamp) + (rank * 7);
    }

    return stamp + ((j * 2654435761ull) % 1000003) + (rank * 13);
}

/* What a receiver expects at word @a j: the root's word (fan-out) or the
 * sum of the senders' words (fan-in) */
static inline uint64_t o2m_perf_expected(const o2m_perf_meas_t *m, size_t j,
                                         uint64_t seq)
{
    uint64_t sum = 0;
    unsigned rank;

    if (!m->is_fanin) {
        return o2m_perf_word(m->stamp, 0, j, m->nwords, seq);
    }

    for (rank = 1; rank < m->nprocs; ++rank) {
        sum += o2m_perf_word(m->stamp, rank, j, m->nwords, seq);
    }
    return sum;
}

static void o2m_perf_fill(const o2m_perf_meas_t *m, uint64_t *buf,
                          unsigned rank, uint64_t seq)
{
    size_t j;

    for (j = 0; j < m->nwords; ++j) {
        buf[j] = o2m_perf_word(m->stamp, rank, j, m->nwords, seq);
    }
}

/* Only the words that change with the message */
static inline void o2m_perf_update(const o2m_perf_meas_t *m, uint64_t *buf,
                                   unsigned rank, uint64_t seq)
{
    buf[0]              = o2m_perf_word(m->stamp, rank, 0, m->nwords, seq);
    buf[m->nwords - 1]  = o2m_perf_word(m->stamp, rank, m->nwords - 1,
                                        m->nwords, seq);
}

static void o2m_perf_rx_error(o2m_perf_rx_t *rx, const char *fmt, ...)
{
    va_list ap;

    if (rx->errors++ == 0) {
        va_start(ap, fmt);
        vsnprintf(rx->error, sizeof(rx->error), fmt, ap);
        va_end(ap);
    }
}

/* Spot check of one message: its first and last words */
static inline void o2m_perf_check_words(o2m_perf_rx_t *rx,
                                        const uint64_t *buf, uint64_t seq)
{
    const o2m_perf_meas_t *m = rx->m;
    size_t last              = m->nwords - 1;
    uint64_t first_exp       = o2m_perf_expected(m, 0, seq);
    uint64_t last_exp        = o2m_perf_expected(m, last, seq);

    if ((buf[0] != first_exp) || (buf[last] != last_exp)) {
        o2m_perf_rx_error(rx, "message %" PRIu64 ": words 0 and %zu are "
                          "0x%" PRIx64 " 0x%" PRIx64 ", expected 0x%" PRIx64
                          " 0x%" PRIx64, seq, last, buf[0], buf[last],
                          first_exp, last_exp);
    }
}

/* Full check of a received message (or of @a times accumulated ones) */
static void o2m_perf_verify(o2m_perf_proc_t *p, const o2m_perf_meas_t *m,
                            const uint64_t *buf, uint64_t seq, uint64_t times,
                            const char *what)
{
    uint64_t expected;
    size_t j;

    for (j = 0; j < m->nwords; ++j) {
        expected = o2m_perf_expected(m, j, seq) * times;
        O2M_PERF_CHECK(buf[j] == expected, "%s %s N=%u size %zu: word %zu "
                       "of %s %" PRIu64 " is 0x%" PRIx64 ", expected 0x%"
                       PRIx64, o2m_perf_tabs[m->tab].name,
                       o2m_perf_var_name(m->var), m->nprocs, m->size, j,
                       what, seq, buf[j], expected);
    }
}


/* ------------------------------------------------------------------------ */
/* Active-message handlers                                                  */

static inline uint64_t o2m_perf_get_hdr(const void *data)
{
    uint64_t hdr;

    memcpy(&hdr, data, sizeof(hdr));
    return hdr;
}

static inline size_t o2m_perf_frag_len(const o2m_perf_meas_t *m,
                                       unsigned frag)
{
    return ucs_min(m->chunk, m->size - (frag * m->chunk));
}

/* dst += src, word by word; src may be unaligned (a posix FIFO element) */
static inline void o2m_perf_add(uint64_t *dst, const void *src, size_t bytes)
{
    size_t i, n = bytes / sizeof(uint64_t);
    uint64_t word;

    for (i = 0; i < n; ++i) {
        memcpy(&word, UCS_PTR_BYTE_OFFSET(src, i * sizeof(word)),
               sizeof(word));
        dst[i] += word;
    }
}

/* Fan-out payload, at a receiver: reassemble into recv_buf */
static ucs_status_t o2m_perf_am_data(void *arg, void *data, size_t length,
                                     unsigned flags)
{
    o2m_perf_proc_t *p       = arg;
    o2m_perf_rx_t *rx        = &p->rx;
    const o2m_perf_meas_t *m = rx->m;
    uint64_t hdr             = o2m_perf_get_hdr(data);
    uint64_t seq             = O2M_PERF_HDR_SEQ(hdr);
    unsigned frag            = O2M_PERF_HDR_FRAG(hdr);
    size_t len;

    if ((m == NULL) || (m->is_fanin)) {
        o2m_perf_rx_error(rx, "unexpected fan-out message");
        return UCS_OK;
    }

    len = o2m_perf_frag_len(m, rx->frag);
    if ((seq != (rx->msgs & 0xffffffffull)) || (frag != rx->frag) ||
        (O2M_PERF_HDR_RANK(hdr) != 0) ||
        (length != (O2M_PERF_HDR_LEN + len))) {
        o2m_perf_rx_error(rx, "fan-out message %" PRIu64 " fragment %u "
                          "length %zu, expected %" PRIu64 "/%u/%zu", seq,
                          frag, length, rx->msgs, rx->frag,
                          O2M_PERF_HDR_LEN + len);
        return UCS_OK;
    }

    memcpy(UCS_PTR_BYTE_OFFSET(p->recv_buf, frag * m->chunk),
           UCS_PTR_BYTE_OFFSET(data, O2M_PERF_HDR_LEN), len);
    if (++rx->frag < m->nfrags) {
        return UCS_OK;
    }

    rx->frag = 0;
    if (rx->check_words) {
        o2m_perf_check_words(rx, p->recv_buf, rx->msgs);
    }
    ++rx->msgs;
    return UCS_OK;
}

/* 8-byte replies at the fan-out root: one per posix message, all of a round
 * side by side from the sm_incast gather */
static ucs_status_t o2m_perf_am_reply(void *arg, void *data, size_t length,
                                      unsigned flags)
{
    o2m_perf_proc_t *p = arg;
    o2m_perf_rx_t *rx  = &p->rx;
    size_t i, n        = length / O2M_PERF_HDR_LEN;
    uint64_t hdr;

    if ((rx->m == NULL) || (length % O2M_PERF_HDR_LEN) ||
        (n != (rx->m->posix ? 1 : (p->nprocs - 1)))) {
        o2m_perf_rx_error(rx, "reply of unexpected length %zu", length);
        return UCS_OK;
    }

    for (i = 0; i < n; ++i) {
        hdr = o2m_perf_get_hdr(UCS_PTR_BYTE_OFFSET(data, i * 8));
        if ((O2M_PERF_HDR_SEQ(hdr) != (rx->reply_seq & 0xffffffffull)) ||
            (!rx->m->posix && (O2M_PERF_HDR_RANK(hdr) != (i + 1))) ||
            (O2M_PERF_HDR_RANK(hdr) == 0) ||
            (O2M_PERF_HDR_RANK(hdr) >= p->nprocs)) {
            o2m_perf_rx_error(rx, "reply %zu for message %" PRIu64
                              " from rank %u, expected message %" PRIu64,
                              i, O2M_PERF_HDR_SEQ(hdr),
                              (unsigned)O2M_PERF_HDR_RANK(hdr),
                              rx->reply_seq);
        }
    }

    rx->replies += n;
    return UCS_OK;
}

/* Fan-in at the root: the reduced round (o2m) or one sender's fragment */
static ucs_status_t o2m_perf_am_fanin(void *arg, void *data, size_t length,
                                      unsigned flags)
{
    o2m_perf_proc_t *p       = arg;
    o2m_perf_rx_t *rx        = &p->rx;
    const o2m_perf_meas_t *m = rx->m;
    uint64_t hdr             = o2m_perf_get_hdr(data);
    uint64_t seq             = O2M_PERF_HDR_SEQ(hdr);
    unsigned frag            = O2M_PERF_HDR_FRAG(hdr);
    unsigned rank            = O2M_PERF_HDR_RANK(hdr);
    const void *payload      = UCS_PTR_BYTE_OFFSET(data, O2M_PERF_HDR_LEN);
    uint64_t expect_seq;
    size_t len, offset;

    if ((m == NULL) || !m->is_fanin) {
        o2m_perf_rx_error(rx, "unexpected fan-in message");
        return UCS_OK;
    }

    if (!m->posix) {
        /* The header is the lowest-index sender's: rank 1 */
        if ((seq != (rx->msgs & 0xffffffffull)) || (frag != 0) ||
            (rank != 1) || (length != (O2M_PERF_HDR_LEN + m->size))) {
            o2m_perf_rx_error(rx, "fan-in result %" PRIu64 "/%u/%u length "
                              "%zu, expected %" PRIu64 "/0/1/%zu", seq, frag,
                              rank, length, rx->msgs,
                              O2M_PERF_HDR_LEN + m->size);
            return UCS_OK;
        }

        if (m->is_bw) {
            o2m_perf_add(p->accum, payload, m->size);
        } else {
            memcpy(p->recv_buf, payload, m->size);
            if (rx->check_words) {
                o2m_perf_check_words(rx, p->recv_buf, rx->msgs);
            }
        }
        ++rx->msgs;
        return UCS_OK;
    }

    if ((rank == 0) || (rank >= p->nprocs) || (frag >= m->nfrags)) {
        o2m_perf_rx_error(rx, "fan-in fragment %u from rank %u", frag, rank);
        return UCS_OK;
    }

    expect_seq = m->is_bw ? p->sender_round[rank] : rx->msgs;
    len        = o2m_perf_frag_len(m, frag);
    offset     = frag * m->chunk;
    if ((seq != (expect_seq & 0xffffffffull)) ||
        (length != (O2M_PERF_HDR_LEN + len)) ||
        (m->is_bw && (frag != p->sender_frag[rank]))) {
        o2m_perf_rx_error(rx, "fan-in fragment %" PRIu64 "/%u from rank %u "
                          "length %zu, expected message %" PRIu64, seq, frag,
                          rank, length, expect_seq);
        return UCS_OK;
    }

    if (m->is_bw) {
        o2m_perf_add(UCS_PTR_BYTE_OFFSET(p->accum, offset), payload, len);
        if (++p->sender_frag[rank] == m->nfrags) {
            p->sender_frag[rank] = 0;
            ++p->sender_round[rank];
            ++rx->done;
        }
        return UCS_OK;
    }

    /* Latency: the round's result, reduced as the fragments come */
    if (p->frag_seen[frag]++ == 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(p->recv_buf, offset), payload, len);
    } else {
        o2m_perf_add(UCS_PTR_BYTE_OFFSET(p->recv_buf, offset), payload, len);
    }

    if (++rx->got == ((p->nprocs - 1) * m->nfrags)) {
        rx->got = 0;
        memset(p->frag_seen, 0, m->nfrags * sizeof(*p->frag_seen));
        if (rx->check_words) {
            o2m_perf_check_words(rx, p->recv_buf, rx->msgs);
        }
        ++rx->msgs;
    }
    return UCS_OK;
}

/* 8-byte release at a fan-in sender */
static ucs_status_t o2m_perf_am_release(void *arg, void *data, size_t length,
                                        unsigned flags)
{
    o2m_perf_proc_t *p = arg;
    o2m_perf_rx_t *rx  = &p->rx;
    uint64_t hdr       = o2m_perf_get_hdr(data);

    if ((length != O2M_PERF_HDR_LEN) ||
        (O2M_PERF_HDR_SEQ(hdr) != (rx->reply_seq & 0xffffffffull)) ||
        (O2M_PERF_HDR_RANK(hdr) != 0)) {
        o2m_perf_rx_error(rx, "release for message %" PRIu64 " length %zu, "
                          "expected %" PRIu64, O2M_PERF_HDR_SEQ(hdr), length,
                          rx->reply_seq);
    }

    ++rx->replies;
    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* Sending and progress                                                     */

static inline void o2m_perf_progress(o2m_perf_proc_t *p,
                                     o2m_perf_prog_t prog)
{
    switch (prog) {
    case O2M_PERF_PROG_POSIX:
        uct_iface_progress(p->tl[O2M_PERF_TL_POSIX].iface);
        break;
    case O2M_PERF_PROG_BCAST:
        uct_iface_progress(p->tl[O2M_PERF_TL_BCAST].iface);
        break;
    case O2M_PERF_PROG_INCAST:
        uct_iface_progress(p->tl[O2M_PERF_TL_INCAST].iface);
        break;
    default:
        uct_iface_progress(p->tl[O2M_PERF_TL_BCAST].iface);
        uct_iface_progress(p->tl[O2M_PERF_TL_INCAST].iface);
        break;
    }
}

/* A message was refused: the condition waited for may never come */
static void __attribute__((noreturn)) o2m_perf_rx_failed(o2m_perf_proc_t *p)
{
    perf_die("%" PRIu64 " bad messages; first: %s", p->rx.errors,
             p->rx.error);
}

/* Progress until @a _cond, bounded */
#define O2M_PERF_WAIT(_p, _prog, _cond, _what) \
    do { \
        perf_waiter_t _w; \
        perf_waiter_init(&_w, _what, o2m_perf_rx_detail, &(_p)->rx); \
        while (!(_cond)) { \
            o2m_perf_progress(_p, _prog); \
            if (_cond) { \
                break; \
            } \
            if (ucs_unlikely((_p)->rx.errors > 0)) { \
                o2m_perf_rx_failed(_p); \
            } \
            o2m_perf_waiter_check(&_w, (_p)->oversub); \
        } \
    } while (0)

typedef struct {
    uint64_t   hdr;
    const void *payload;
    size_t     length;
} o2m_perf_pack_arg_t;

static size_t o2m_perf_pack(void *dest, void *arg)
{
    o2m_perf_pack_arg_t *pack = arg;

    memcpy(dest, &pack->hdr, sizeof(pack->hdr));
    memcpy(UCS_PTR_BYTE_OFFSET(dest, sizeof(pack->hdr)), pack->payload,
           pack->length);
    return sizeof(pack->hdr) + pack->length;
}

static void o2m_perf_comp_cb(uct_completion_t *comp)
{
}

static inline uint64_t o2m_perf_zcopy_outstanding(o2m_perf_proc_t *p)
{
    return p->zcopy_issued - (O2M_PERF_COMP_COUNT - p->comp.count);
}

static inline ucs_status_t
o2m_perf_send_once(o2m_perf_proc_t *p, uct_ep_h ep, o2m_perf_path_t path,
                   uint8_t am_id, uint64_t hdr, const void *payload,
                   size_t length)
{
    o2m_perf_pack_arg_t pack;
    ucs_status_t status;
    uct_iov_t iov;
    ssize_t ret;

    switch (path) {
    case O2M_PERF_PATH_SHORT:
        return uct_ep_am_short(ep, am_id, hdr, payload, length);
    case O2M_PERF_PATH_BCOPY:
        pack.hdr     = hdr;
        pack.payload = payload;
        pack.length  = length;
        ret          = uct_ep_am_bcopy(ep, am_id, o2m_perf_pack, &pack, 0);
        return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
    default:
        iov.buffer = (void*)payload;
        iov.length = length;
        iov.memh   = UCT_MEM_HANDLE_NULL;
        iov.stride = 0;
        iov.count  = 1;
        status     = uct_ep_am_zcopy(ep, am_id, &hdr, sizeof(hdr), &iov, 1,
                                     0, &p->comp);
        if (status == UCS_INPROGRESS) {
            ++p->zcopy_issued;
            return UCS_OK;
        }
        return status;
    }
}

/* Send one message (or fragment), progressing while there is no room */
static inline void o2m_perf_send(o2m_perf_proc_t *p, o2m_perf_prog_t prog,
                                 uct_ep_h ep, o2m_perf_path_t path,
                                 uint8_t am_id, uint64_t hdr,
                                 const void *payload, size_t length)
{
    ucs_status_t status;
    perf_waiter_t w;

    status = o2m_perf_send_once(p, ep, path, am_id, hdr, payload, length);
    if (ucs_likely(status == UCS_OK)) {
        return;
    }

    perf_waiter_init(&w, "room to send", o2m_perf_rx_detail, &p->rx);
    while (status == UCS_ERR_NO_RESOURCE) {
        o2m_perf_progress(p, prog);
        status = o2m_perf_send_once(p, ep, path, am_id, hdr, payload, length);
        if (status == UCS_ERR_NO_RESOURCE) {
            o2m_perf_waiter_check(&w, p->oversub);
        }
    }

    PERF_CHECK_OK(status, "send");
}

/* What a wait of measurement @a m progresses: the posix transport, or
 * @a o2m_prog */
static inline o2m_perf_prog_t o2m_perf_prog(const o2m_perf_meas_t *m,
                                            o2m_perf_prog_t o2m_prog)
{
    return m->posix ? O2M_PERF_PROG_POSIX : o2m_prog;
}

/* A sender's endpoint to the root: @a o2m_ep of an sm group, or posix */
static inline uct_ep_h o2m_perf_root_ep(const o2m_perf_proc_t *p,
                                        const o2m_perf_meas_t *m,
                                        uct_ep_h o2m_ep)
{
    return m->posix ? p->posix_eps[0] : o2m_ep;
}

/* Send the whole payload of a message: one send, or posix fragments */
static inline void o2m_perf_send_msg(o2m_perf_proc_t *p,
                                     const o2m_perf_meas_t *m, uct_ep_h ep,
                                     uint8_t am_id, uint64_t seq,
                                     const uint64_t *buf)
{
    unsigned frag;

    for (frag = 0; frag < m->nfrags; ++frag) {
        o2m_perf_send(p, o2m_perf_prog(m, O2M_PERF_PROG_O2M), ep, m->path,
                      am_id, O2M_PERF_HDR(seq, frag, p->rank),
                      UCS_PTR_BYTE_OFFSET(buf, frag * m->chunk),
                      o2m_perf_frag_len(m, frag));
    }
}

/* posix fan-out: the same message to every receiver, fragment by fragment
 * so that the receivers work in parallel */
static inline void o2m_perf_posix_send_all(o2m_perf_proc_t *p,
                                           const o2m_perf_meas_t *m,
                                           uint8_t am_id, uint64_t seq,
                                           const uint64_t *buf)
{
    unsigned frag, rank;

    for (frag = 0; frag < m->nfrags; ++frag) {
        for (rank = 1; rank < p->nprocs; ++rank) {
            o2m_perf_send(p, O2M_PERF_PROG_POSIX, p->posix_eps[rank],
                          m->path, am_id, O2M_PERF_HDR(seq, frag, 0),
                          UCS_PTR_BYTE_OFFSET(buf, frag * m->chunk),
                          o2m_perf_frag_len(m, frag));
        }
    }
}

/* 8-byte message: a reply or a release */
static inline void o2m_perf_send_8(o2m_perf_proc_t *p, o2m_perf_prog_t prog,
                                   uct_ep_h ep, uint8_t am_id, uint64_t seq)
{
    o2m_perf_send(p, prog, ep, O2M_PERF_PATH_SHORT, am_id,
                  O2M_PERF_HDR(seq, 0, p->rank), NULL, 0);
}

/* The root's message @a seq to every receiver: on the sm_bcast group
 * @a data_ep, or posix messages */
static inline void o2m_perf_fanout_send(o2m_perf_proc_t *p,
                                        const o2m_perf_meas_t *m,
                                        uct_ep_h data_ep, uint64_t seq)
{
    if (m->posix) {
        o2m_perf_posix_send_all(p, m, O2M_PERF_AM_DATA, seq, p->send_buf);
    } else {
        o2m_perf_send_msg(p, m, data_ep, O2M_PERF_AM_DATA, seq, p->send_buf);
    }
}

/* The root releases the fan-in senders after their message @a seq: on the
 * sm_bcast group @a release_ep, or posix messages */
static inline void o2m_perf_release_all(o2m_perf_proc_t *p,
                                        const o2m_perf_meas_t *m,
                                        uct_ep_h release_ep, uint64_t seq)
{
    o2m_perf_prog_t prog = o2m_perf_prog(m, O2M_PERF_PROG_O2M);
    unsigned rank;

    if (!m->posix) {
        o2m_perf_send_8(p, prog, release_ep, O2M_PERF_AM_RELEASE, seq);
        return;
    }

    for (rank = 1; rank < p->nprocs; ++rank) {
        o2m_perf_send_8(p, prog, p->posix_eps[rank], O2M_PERF_AM_RELEASE,
                        seq);
    }
}


/* ------------------------------------------------------------------------ */
/* Set-up                                                                   */

static ucs_status_t o2m_perf_err_handler(void *arg, uct_ep_h ep,
                                         ucs_status_t status)
{
    if (__atomic_load_n(&o2m_perf_shm->failed, __ATOMIC_ACQUIRE)) {
        /* A peer failed first and said why */
        _exit(PERF_EXIT_PEER);
    }
    perf_die("transport error on %s: %s", (const char*)arg,
             ucs_status_string(status));
    return status;
}

static void o2m_perf_tl_open(o2m_perf_proc_t *p, o2m_perf_tl_id_t id,
                             const char *comp_name)
{
    o2m_perf_tl_t *tl    = &p->tl[id];
    const char *tl_name  = o2m_perf_tl_names[id];
    ucs_status_t status;

    perf_uct_iface_open(comp_name, tl_name, "memory", p->worker,
                        o2m_perf_err_handler, &tl->md, &tl->iface);

    status = uct_iface_query(tl->iface, &tl->attr);
    PERF_CHECK_OK(status, "uct_iface_query");
    O2M_PERF_CHECK((tl->attr.iface_addr_len <= O2M_PERF_ADDR_MAX) &&
                   (tl->attr.device_addr_len <= O2M_PERF_ADDR_MAX),
                   "%s addresses too long", tl_name);
    O2M_PERF_CHECK(tl->attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT,
                   "%s has no am_short", tl_name);
    O2M_PERF_CHECK(tl->attr.cap.am.max_short >= O2M_PERF_HDR_LEN,
                   "%s max_short %zu", tl_name, tl->attr.cap.am.max_short);

    status = uct_iface_get_address(tl->iface, (uct_iface_addr_t*)
                                   o2m_perf_shm->addr[p->rank][id].iface);
    PERF_CHECK_OK(status, "uct_iface_get_address");
    status = uct_iface_get_device_address(tl->iface, (uct_device_addr_t*)
                                          o2m_perf_shm->addr[p->rank][id].dev);
    PERF_CHECK_OK(status, "uct_iface_get_device_address");

    uct_iface_progress_enable(tl->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

static void o2m_perf_set_am(o2m_perf_proc_t *p, o2m_perf_tl_id_t id,
                            uint8_t am_id, uct_am_callback_t cb)
{
    ucs_status_t status;

    status = uct_iface_set_am_handler(p->tl[id].iface, am_id, cb, p, 0);
    PERF_CHECK_OK(status, "uct_iface_set_am_handler");
}

static void o2m_perf_posix_connect(o2m_perf_proc_t *p, unsigned peer)
{
    o2m_perf_addr_t *addr = &o2m_perf_shm->addr[peer][O2M_PERF_TL_POSIX];
    uct_ep_params_t params;
    ucs_status_t status;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = p->tl[O2M_PERF_TL_POSIX].iface;
    params.dev_addr   = (const uct_device_addr_t*)addr->dev;
    params.iface_addr = (const uct_iface_addr_t*)addr->iface;
    status = uct_ep_create(&params, &p->posix_eps[peer]);
    PERF_CHECK_OK(status, "posix uct_ep_create");
}

static void *o2m_perf_alloc(size_t size)
{
    void *ptr = NULL;

    O2M_PERF_CHECK(posix_memalign(&ptr, 4096, ucs_max(size, 64)) == 0,
                   "out of memory (%zu bytes)", size);
    memset(ptr, 0, ucs_max(size, 64));
    return ptr;
}

static void o2m_perf_proc_init(o2m_perf_proc_t *p, unsigned rank,
                               unsigned nprocs, unsigned n_idx)
{
    size_t max_size = 0;
    ucs_status_t status;
    unsigned i;
    int t;

    memset(p, 0, sizeof(*p));
    p->rank    = rank;
    p->nprocs  = nprocs;
    p->n_idx   = n_idx;
    p->oversub = nprocs > o2m_perf_opts.ncpus;

    for (i = 0; i < o2m_perf_opts.num_sizes; ++i) {
        max_size = ucs_max(max_size, o2m_perf_opts.sizes[i]);
    }
    p->buf_size     = max_size;
    p->send_buf     = o2m_perf_alloc(max_size);
    p->recv_buf     = o2m_perf_alloc(max_size);
    p->accum        = o2m_perf_alloc(max_size);
    p->frag_seen    = o2m_perf_alloc(max_size);
    p->sender_round = o2m_perf_alloc(nprocs * sizeof(uint64_t));
    p->sender_frag  = o2m_perf_alloc(nprocs * sizeof(unsigned));

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &p->async);
    PERF_CHECK_OK(status, "ucs_async_context_create");
    status = uct_worker_create(p->async, UCS_THREAD_MODE_SINGLE, &p->worker);
    PERF_CHECK_OK(status, "uct_worker_create");

    o2m_perf_tl_open(p, O2M_PERF_TL_BCAST, "o2m");
    o2m_perf_tl_open(p, O2M_PERF_TL_INCAST, "o2m");
    o2m_perf_tl_open(p, O2M_PERF_TL_POSIX, "posix");
    for (t = O2M_PERF_TL_BCAST; t <= O2M_PERF_TL_INCAST; ++t) {
        status = uct_o2m_iface_query(p->tl[t].iface, &p->o2m_attr[t]);
        PERF_CHECK_OK(status, "uct_o2m_iface_query");
        O2M_PERF_CHECK(p->o2m_attr[t].max_members >= nprocs,
                       "%s supports groups of up to %u", o2m_perf_tl_names[t],
                       p->o2m_attr[t].max_members);
    }

    o2m_perf_set_am(p, O2M_PERF_TL_BCAST, O2M_PERF_AM_DATA, o2m_perf_am_data);
    o2m_perf_set_am(p, O2M_PERF_TL_BCAST, O2M_PERF_AM_RELEASE,
                    o2m_perf_am_release);
    o2m_perf_set_am(p, O2M_PERF_TL_INCAST, O2M_PERF_AM_REPLY,
                    o2m_perf_am_reply);
    o2m_perf_set_am(p, O2M_PERF_TL_INCAST, O2M_PERF_AM_FANIN,
                    o2m_perf_am_fanin);
    o2m_perf_set_am(p, O2M_PERF_TL_POSIX, O2M_PERF_AM_DATA, o2m_perf_am_data);
    o2m_perf_set_am(p, O2M_PERF_TL_POSIX, O2M_PERF_AM_REPLY,
                    o2m_perf_am_reply);
    o2m_perf_set_am(p, O2M_PERF_TL_POSIX, O2M_PERF_AM_FANIN,
                    o2m_perf_am_fanin);
    o2m_perf_set_am(p, O2M_PERF_TL_POSIX, O2M_PERF_AM_RELEASE,
                    o2m_perf_am_release);

    if (rank == 0) {
        o2m_perf_record_paths(p);
    }

    o2m_perf_barrier(p, "the addresses");
    if (rank == 0) {
        for (i = 1; i < nprocs; ++i) {
            o2m_perf_posix_connect(p, i);
        }
    } else {
        o2m_perf_posix_connect(p, 0);
    }
    o2m_perf_barrier(p, "the posix connections");
}

static void o2m_perf_proc_cleanup(o2m_perf_proc_t *p)
{
    unsigned i;
    int t;

    for (i = 0; i < p->nprocs; ++i) {
        if (p->posix_eps[i] != NULL) {
            uct_ep_destroy(p->posix_eps[i]);
        }
    }

    for (t = 0; t < O2M_PERF_TL_LAST; ++t) {
        uct_iface_close(p->tl[t].iface);
        uct_md_close(p->tl[t].md);
    }
    uct_worker_destroy(p->worker);
    ucs_async_context_destroy(p->async);
    free(p->send_buf);
    free(p->recv_buf);
    free(p->accum);
    free(p->frag_seen);
    free(p->sender_round);
    free(p->sender_frag);
}

/* Group endpoint of every process, rooted at rank 0 */
static uct_ep_h o2m_perf_group_create(o2m_perf_proc_t *p, o2m_perf_tl_id_t id,
                                      uct_o2m_mode_t mode, uct_o2m_op_t op,
                                      size_t hdr_len)
{
    o2m_perf_addr_t *root_addr = &o2m_perf_shm->addr[0][id];
    uct_o2m_group_params_t params;
    ucs_status_t status;
    uct_ep_h ep = NULL;

    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_O2M_GROUP_FIELD_MODE |
                             UCT_O2M_GROUP_FIELD_ROOT_ADDR;
    params.group_id        = ++p->group_id;
    params.size            = p->nprocs;
    params.my_index        = p->rank;
    params.root_index      = 0;
    params.mode            = mode;
    params.root_iface_addr = (const uct_iface_addr_t*)root_addr->iface;
    params.root_dev_addr   = (const uct_device_addr_t*)root_addr->dev;
    if (id == O2M_PERF_TL_INCAST) {
        params.field_mask |= UCT_O2M_GROUP_FIELD_OP |
                             UCT_O2M_GROUP_FIELD_DTYPE |
                             UCT_O2M_GROUP_FIELD_HDR_LEN;
        params.op          = op;
        params.dtype       = UCT_O2M_DT_INT64;
        params.hdr_len     = hdr_len;
    }

    /* The root first: the others look its group up when they join */
    if (p->rank == 0) {
        status = uct_o2m_ep_create(p->tl[id].iface, &params, &ep);
        PERF_CHECK_OK(status, "uct_o2m_ep_create (root)");
    }
    o2m_perf_barrier(p, "the group root");
    if (p->rank != 0) {
        status = uct_o2m_ep_create(p->tl[id].iface, &params, &ep);
        PERF_CHECK_OK(status, "uct_o2m_ep_create");
    }
    return ep;
}


/* ------------------------------------------------------------------------ */
/* Measurements                                                             */

static unsigned o2m_perf_lat_iters(size_t size)
{
    unsigned iters = o2m_perf_opts.iters;

    if (size <= O2M_PERF_LAT_FULL_SIZE) {
        return iters;
    }

    return ucs_max(iters / (size / O2M_PERF_LAT_FULL_SIZE),
                   ucs_min(iters, O2M_PERF_LAT_MIN_ITERS));
}

static unsigned o2m_perf_bw_msgs(size_t size)
{
    unsigned msgs = o2m_perf_opts.bw_msgs;

    return ucs_max(ucs_min(msgs, O2M_PERF_BW_BYTES / size),
                   ucs_min(msgs, O2M_PERF_BW_MIN_MSGS));
}

/* How transport @a id sends @a size payload bytes; @a no_zcopy: above
 * max_bcopy in fragments even if it has am_zcopy */
static void o2m_perf_path(const uct_iface_attr_t *attr, size_t size,
                          int no_zcopy, o2m_perf_path_t *path_p,
                          size_t *chunk_p, unsigned *nfrags_p)
{
    size_t total = size + O2M_PERF_HDR_LEN;

    *chunk_p  = size;
    *nfrags_p = 1;
    if (total <= attr->cap.am.max_short) {
        *path_p = O2M_PERF_PATH_SHORT;
    } else if ((attr->cap.flags & UCT_IFACE_FLAG_AM_BCOPY) &&
               (total <= attr->cap.am.max_bcopy)) {
        *path_p = O2M_PERF_PATH_BCOPY;
    } else if (!no_zcopy && (attr->cap.flags & UCT_IFACE_FLAG_AM_ZCOPY) &&
               (size <= attr->cap.am.max_zcopy - O2M_PERF_HDR_LEN)) {
        *path_p = O2M_PERF_PATH_ZCOPY;
    } else {
        /* Fragments of whole words: the reduction works on any of them */
        *path_p   = O2M_PERF_PATH_BCOPY;
        *chunk_p  = (attr->cap.am.max_bcopy - O2M_PERF_HDR_LEN) &
                    ~(sizeof(uint64_t) - 1);
        *nfrags_p = (size + *chunk_p - 1) / *chunk_p;
    }
}

static void o2m_perf_record_paths(o2m_perf_proc_t *p)
{
    o2m_perf_path_t path;
    unsigned s_idx, t;

    for (s_idx = 0; s_idx < o2m_perf_opts.num_sizes; ++s_idx) {
        for (t = 0; t < O2M_PERF_TL_LAST; ++t) {
            o2m_perf_path(&p->tl[t].attr, o2m_perf_opts.sizes[s_idx], 0,
                          &path,
                          &o2m_perf_shm->paths[s_idx][t].chunk,
                          &o2m_perf_shm->paths[s_idx][t].nfrags);
            o2m_perf_shm->paths[s_idx][t].path  = path;
            o2m_perf_shm->paths[s_idx][t].valid = 1;
        }
    }
}

static void o2m_perf_meas_init(o2m_perf_proc_t *p, o2m_perf_meas_t *m,
                               o2m_perf_tab_t tab, unsigned var,
                               unsigned s_idx)
{
    size_t size = o2m_perf_opts.sizes[s_idx];
    const uct_iface_attr_t *attr;

    memset(m, 0, sizeof(*m));
    m->tab      = tab;
    m->var      = var;
    m->posix    = (var == O2M_PERF_VAR_POSIX);
    m->is_bw    = o2m_perf_tabs[tab].is_bw;
    m->is_fanin = o2m_perf_tabs[tab].is_fanin;
    m->nprocs   = p->nprocs;
    m->size     = size;
    m->nwords   = size / sizeof(uint64_t);
    m->stamp    = ((((p->n_idx * O2M_PERF_MAX_SIZES) + s_idx) *
                    O2M_PERF_TAB_LAST + tab) * O2M_PERF_VAR_LAST + var) *
                  7919 % 1000003 + 1;

    if (m->posix) {
        attr = &p->tl[O2M_PERF_TL_POSIX].attr;
    } else if (m->is_fanin) {
        attr = &p->tl[O2M_PERF_TL_INCAST].attr;
    } else {
        attr = &p->tl[O2M_PERF_TL_BCAST].attr;
    }
    o2m_perf_path(attr, size, var == O2M_PERF_VAR_FRAGS, &m->path,
                  &m->chunk, &m->nfrags);
    O2M_PERF_CHECK(m->nfrags <= 0xffff, "%zu bytes is too many fragments",
                   size);
    /* A group message is one round: it cannot be split, but where frags
     * asks for it */
    O2M_PERF_CHECK(m->posix || (var == O2M_PERF_VAR_FRAGS) ||
                   (m->nfrags == 1), "%zu bytes exceed the "
                   "largest %s message (max_zcopy %zu)", size,
                   m->is_fanin ? UCT_O2M_INCAST_TL_NAME :
                                 UCT_O2M_BCAST_TL_NAME,
                   attr->cap.am.max_zcopy);

    if (m->is_bw) {
        m->iters  = o2m_perf_bw_msgs(size);
        m->warmup = ucs_max(m->iters / 10, 2);
    } else {
        m->iters  = o2m_perf_lat_iters(size);
        m->warmup = o2m_perf_opts.warmup ? o2m_perf_opts.warmup :
                    ucs_max(m->iters / 10, 2);
    }
}

/* Before a measurement: the receive state and the buffers */
static void o2m_perf_meas_start(o2m_perf_proc_t *p, const o2m_perf_meas_t *m)
{
    snprintf(perf_sup.context, sizeof(perf_sup.context),
             "%s %s N=%u size %zu", o2m_perf_tabs[m->tab].name,
             o2m_perf_var_name(m->var), m->nprocs, m->size);
    memset(&p->rx, 0, sizeof(p->rx));
    p->rx.m              = m;
    p->rx.check_words    = !m->is_bw;
    p->zcopy_issued      = 0;
    p->comp.func         = o2m_perf_comp_cb;
    p->comp.count        = O2M_PERF_COMP_COUNT;
    p->comp.status       = UCS_OK;
    memset(p->recv_buf, 0xa5, m->size);
    memset(p->accum, 0, m->size);
    memset(p->frag_seen, 0, m->nfrags * sizeof(*p->frag_seen));
    memset(p->sender_round, 0, p->nprocs * sizeof(*p->sender_round));
    memset(p->sender_frag, 0, p->nprocs * sizeof(*p->sender_frag));
}

/* After a measurement: no errors, no zcopy in flight */
static void o2m_perf_meas_end(o2m_perf_proc_t *p, const o2m_perf_meas_t *m)
{
    o2m_perf_prog_t prog = o2m_perf_prog(m, O2M_PERF_PROG_O2M);

    O2M_PERF_WAIT(p, prog, o2m_perf_zcopy_outstanding(p) == 0,
                  "zcopy completions");
    O2M_PERF_CHECK(p->comp.status == UCS_OK, "zcopy completed with %s",
                   ucs_status_string(p->comp.status));
    O2M_PERF_CHECK(p->rx.errors == 0, "%s %s N=%u size %zu: %" PRIu64
                   " bad messages; first: %s", o2m_perf_tabs[m->tab].name,
                   o2m_perf_var_name(m->var), m->nprocs, m->size,
                   p->rx.errors, p->rx.error);
    p->rx.m = NULL;
    o2m_perf_barrier(p, "the end of a measurement");
    perf_sup.context[0] = '\0';
}

static void o2m_perf_set_result(o2m_perf_proc_t *p, const o2m_perf_meas_t *m,
                                unsigned s_idx, double value)
{
    o2m_perf_shm->results[p->n_idx][s_idx][m->tab][m->var] = value;
}

/*
 * Timing in batches: the iterations after the warm-up are split into
 * batches; a result is the median of the batch averages, which a burst of
 * noise from the rest of the machine does not move much.
 */
typedef struct {
    unsigned num;      /* Batches */
    unsigned next;     /* Next batch to start */
    uint64_t next_at;  /* Iteration it starts at */
    uint64_t first;    /* First timed iteration */
    unsigned iters;    /* Timed iterations */
    double   t[O2M_PERF_MAX_BATCHES + 1];
} o2m_perf_timer_t;

static uint64_t o2m_perf_batch_start(const o2m_perf_timer_t *t, unsigned b)
{
    return t->first + (((uint64_t)b * t->iters) / t->num);
}

static void o2m_perf_timer_init(o2m_perf_timer_t *t, uint64_t first,
                                unsigned iters)
{
    t->num     = ucs_max(ucs_min(o2m_perf_opts.batches, iters), 1);
    t->first   = first;
    t->iters   = iters;
    t->next    = 0;
    t->next_at = o2m_perf_batch_start(t, 0);
}

/* Call at the start of every iteration */
static inline void o2m_perf_timer_mark(o2m_perf_timer_t *t, uint64_t i)
{
    if (ucs_unlikely(i == t->next_at) && (t->next < t->num)) {
        t->t[t->next++] = perf_now();
        t->next_at      = (t->next < t->num) ?
                          o2m_perf_batch_start(t, t->next) : UINT64_MAX;
    }
}

static int o2m_perf_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x < y) ? -1 : (x > y);
}

static double o2m_perf_median(double *values, unsigned num)
{
    qsort(values, num, sizeof(*values), o2m_perf_cmp_double);
    return (num % 2) ? values[num / 2] :
           ((values[(num / 2) - 1] + values[num / 2]) / 2);
}

/* After the last iteration: median seconds per iteration */
static double o2m_perf_timer_end(o2m_perf_timer_t *t)
{
    double per_iter[O2M_PERF_MAX_BATCHES];
    unsigned b;

    t->t[t->num] = perf_now();
    for (b = 0; b < t->num; ++b) {
        per_iter[b] = (t->t[b + 1] - t->t[b]) /
                      (o2m_perf_batch_start(t, b + 1) -
                       o2m_perf_batch_start(t, b));
    }
    return o2m_perf_median(per_iter, t->num);
}

/* MB/s of a timed stream of @a m that started at @a t0 */
static double o2m_perf_stream_mbps(const o2m_perf_meas_t *m, double t0)
{
    return m->size * (double)m->iters / (perf_now() - t0) / 1e6;
}

/*
 * Fan-out latency.  o2m: sm_bcast group of the mode, replies on an
 * sm_incast gather group.  posix: N-1 messages, N-1 replies.  Timed at the
 * root.
 */
static void o2m_perf_fanout_lat(o2m_perf_proc_t *p, const o2m_perf_meas_t *m,
                                uct_ep_h data_ep, uct_ep_h reply_ep,
                                unsigned s_idx)
{
    o2m_perf_prog_t prog       = o2m_perf_prog(m, O2M_PERF_PROG_O2M);
    o2m_perf_prog_t data_prog  = o2m_perf_prog(m, O2M_PERF_PROG_BCAST);
    o2m_perf_prog_t reply_prog = o2m_perf_prog(m, O2M_PERF_PROG_INCAST);
    unsigned total             = m->warmup + m->iters;
    unsigned peers             = p->nprocs - 1;
    o2m_perf_timer_t timer;
    uint64_t i;

    o2m_perf_meas_start(p, m);
    if (p->rank == 0) {
        o2m_perf_fill(m, p->send_buf, 0, 0);
    }
    o2m_perf_barrier(p, "the start of fan-out latency");

    if (p->rank == 0) {
        o2m_perf_timer_init(&timer, m->warmup, m->iters);
        for (i = 0; i < total; ++i) {
            o2m_perf_timer_mark(&timer, i);
            o2m_perf_update(m, p->send_buf, 0, i);
            p->rx.reply_seq = i;
            o2m_perf_fanout_send(p, m, data_ep, i);
            O2M_PERF_WAIT(p, reply_prog, p->rx.replies >= ((i + 1) * peers),
                          "fan-out replies");
        }
        o2m_perf_set_result(p, m, s_idx,
                            o2m_perf_timer_end(&timer) * 1e6 / 2);
    } else {
        for (i = 0; i < total; ++i) {
            O2M_PERF_WAIT(p, data_prog, p->rx.msgs > i, "fan-out message");
            /* Whole payload: the warm-up messages (not timed), the last */
            if ((i < m->warmup) || (i == (total - 1))) {
                o2m_perf_verify(p, m, p->recv_buf, i, 1, "message");
            }
            o2m_perf_send_8(p, prog, o2m_perf_root_ep(p, m, reply_ep),
                            O2M_PERF_AM_REPLY, i);
        }
    }

    o2m_perf_meas_end(p, m);
}

/*
 * Fan-in latency.  o2m: sm_incast group of the mode (INT64 SUM, 8-byte
 * header not reduced), released by an sm_bcast group.  posix: N-1 messages
 * reduced by the root, N-1 releases.  Timed at rank 1.
 */
static void o2m_perf_fanin_lat(o2m_perf_proc_t *p, const o2m_perf_meas_t *m,
                               uct_ep_h data_ep, uct_ep_h release_ep,
                               unsigned s_idx)
{
    o2m_perf_prog_t data_prog = o2m_perf_prog(m, O2M_PERF_PROG_INCAST);
    o2m_perf_prog_t rel_prog  = o2m_perf_prog(m, O2M_PERF_PROG_BCAST);
    unsigned total            = m->warmup + m->iters;
    o2m_perf_timer_t timer;
    uint64_t i;
    double t;

    o2m_perf_meas_start(p, m);
    if (p->rank != 0) {
        o2m_perf_fill(m, p->send_buf, p->rank, 0);
    }
    o2m_perf_barrier(p, "the start of fan-in latency");

    if (p->rank == 0) {
        for (i = 0; i < total; ++i) {
            O2M_PERF_WAIT(p, data_prog, p->rx.msgs > i, "fan-in round");
            /* Whole result: the warm-up rounds (not timed), the last */
            if ((i < m->warmup) || (i == (total - 1))) {
                o2m_perf_verify(p, m, p->recv_buf, i, 1, "round");
            }
            o2m_perf_release_all(p, m, release_ep, i);
        }
    } else {
        o2m_perf_timer_init(&timer, m->warmup, m->iters);
        for (i = 0; i < total; ++i) {
            o2m_perf_timer_mark(&timer, i);
            o2m_perf_update(m, p->send_buf, p->rank, i);
            p->rx.reply_seq = i;
            o2m_perf_send_msg(p, m, o2m_perf_root_ep(p, m, data_ep),
                              O2M_PERF_AM_FANIN, i, p->send_buf);
            O2M_PERF_WAIT(p, rel_prog, p->rx.replies > i, "fan-in release");
        }
        t = o2m_perf_timer_end(&timer);
        if (p->rank == 1) {
            o2m_perf_set_result(p, m, s_idx, t * 1e6 / 2);
        }
    }

    o2m_perf_meas_end(p, m);
}

/*
 * Fan-out bandwidth: a warm-up stream, then the timed ones (the result is
 * the median); each ends with an 8-byte reply of every receiver once it
 * consumed the last message.
 */
static void o2m_perf_fanout_bw(o2m_perf_proc_t *p, const o2m_perf_meas_t *m,
                               uct_ep_h data_ep, uct_ep_h reply_ep,
                               unsigned s_idx)
{
    o2m_perf_prog_t prog       = o2m_perf_prog(m, O2M_PERF_PROG_O2M);
    o2m_perf_prog_t data_prog  = o2m_perf_prog(m, O2M_PERF_PROG_BCAST);
    o2m_perf_prog_t reply_prog = o2m_perf_prog(m, O2M_PERF_PROG_INCAST);
    unsigned peers             = p->nprocs - 1;
    unsigned runs              = 1 + o2m_perf_opts.batches;
    uint64_t seq               = 0;
    double bw[O2M_PERF_MAX_BATCHES];
    unsigned run;
    double t0;
    uint64_t end;

    o2m_perf_meas_start(p, m);
    if (p->rank == 0) {
        /* The payload does not change: zcopy buffers stay in flight */
        o2m_perf_fill(m, p->send_buf, 0, 0);
    }

    for (run = 0; run < runs; ++run) {
        end = seq + ((run == 0) ? m->warmup : m->iters);
        memset(p->recv_buf, 0xa5, m->size);
        o2m_perf_barrier(p, "the start of a fan-out stream");
        if (p->rank == 0) {
            p->rx.reply_seq = end - 1;
            t0              = perf_now();
            for (; seq < end; ++seq) {
                o2m_perf_fanout_send(p, m, data_ep, seq);
            }
            O2M_PERF_WAIT(p, reply_prog,
                          p->rx.replies >= ((run + 1) * peers),
                          "the replies to a fan-out stream");
            if (run > 0) {
                bw[run - 1] = o2m_perf_stream_mbps(m, t0);
            }
        } else {
            O2M_PERF_WAIT(p, data_prog, p->rx.msgs >= end,
                          "a fan-out stream");
            /* Every message carries the payload of message 0 */
            o2m_perf_verify(p, m, p->recv_buf, 0, 1, "stream");
            o2m_perf_send_8(p, prog, o2m_perf_root_ep(p, m, reply_ep),
                            O2M_PERF_AM_REPLY, end - 1);
            seq = end;
        }
    }

    if (p->rank == 0) {
        o2m_perf_set_result(p, m, s_idx, o2m_perf_median(bw, runs - 1));
    }
    o2m_perf_meas_end(p, m);
}

/*
 * Fan-in bandwidth: senders stream contributions, the root accumulates the
 * results (o2m) or the contributions (posix) into one sum, then releases
 * the senders with 8 bytes.  A warm-up stream, then the timed ones (the
 * result is the median), timed at rank 1.
 */
static void o2m_perf_fanin_bw(o2m_perf_proc_t *p, const o2m_perf_meas_t *m,
                              uct_ep_h data_ep, uct_ep_h release_ep,
                              unsigned s_idx)
{
    o2m_perf_prog_t data_prog = o2m_perf_prog(m, O2M_PERF_PROG_INCAST);
    o2m_perf_prog_t rel_prog  = o2m_perf_prog(m, O2M_PERF_PROG_BCAST);
    unsigned peers            = p->nprocs - 1;
    unsigned runs             = 1 + o2m_perf_opts.batches;
    uint64_t seq              = 0;
    double bw[O2M_PERF_MAX_BATCHES];
    uint64_t end, count;
    unsigned run;
    double t0;

    o2m_perf_meas_start(p, m);
    if (p->rank != 0) {
        o2m_perf_fill(m, p->send_buf, p->rank, 0);
    }

    for (run = 0; run < runs; ++run) {
        count = (run == 0) ? m->warmup : m->iters;
        end   = seq + count;
        memset(p->accum, 0, m->size);
        o2m_perf_barrier(p, "the start of a fan-in stream");
        if (p->rank == 0) {
            if (m->posix) {
                O2M_PERF_WAIT(p, data_prog, p->rx.done >= (end * peers),
                              "a fan-in stream");
            } else {
                O2M_PERF_WAIT(p, data_prog, p->rx.msgs >= end,
                              "a fan-in stream");
            }
            o2m_perf_verify(p, m, p->accum, 0, count, "stream sum");
            o2m_perf_release_all(p, m, release_ep, end - 1);
            seq = end;
        } else {
            p->rx.reply_seq = end - 1;
            t0              = perf_now();
            for (; seq < end; ++seq) {
                o2m_perf_send_msg(p, m, o2m_perf_root_ep(p, m, data_ep),
                                  O2M_PERF_AM_FANIN, seq, p->send_buf);
            }
            O2M_PERF_WAIT(p, rel_prog, p->rx.replies > run,
                          "the release of a fan-in stream");
            if (run > 0) {
                bw[run - 1] = o2m_perf_stream_mbps(m, t0);
            }
        }
    }

    if (p->rank == 1) {
        o2m_perf_set_result(p, m, s_idx, o2m_perf_median(bw, runs - 1));
    }
    o2m_perf_meas_end(p, m);
}

typedef void (*o2m_perf_func_t)(o2m_perf_proc_t *p, const o2m_perf_meas_t *m,
                                uct_ep_h data_ep, uct_ep_h ctl_ep,
                                unsigned s_idx);

/* One table cell: create the groups it needs, measure, destroy them */
static void o2m_perf_run_cell(o2m_perf_proc_t *p, o2m_perf_tab_t tab,
                              unsigned var, unsigned s_idx)
{
    static const o2m_perf_func_t funcs[O2M_PERF_TAB_LAST] = {
        [O2M_PERF_TAB_FANOUT_LAT] = o2m_perf_fanout_lat,
        [O2M_PERF_TAB_FANIN_LAT]  = o2m_perf_fanin_lat,
        [O2M_PERF_TAB_FANOUT_BW]  = o2m_perf_fanout_bw,
        [O2M_PERF_TAB_FANIN_BW]   = o2m_perf_fanin_bw
    };
    uct_ep_h data_ep = NULL, ctl_ep = NULL;
    o2m_perf_meas_t m;

    o2m_perf_meas_init(p, &m, tab, var, s_idx);
    if (!m.posix) {
        if (m.is_fanin) {
            if (!uct_o2m_op_supported(var, UCT_O2M_OP_SUM,
                                      UCT_O2M_DT_INT64)) {
                o2m_perf_set_result(p, &m, s_idx, O2M_PERF_RES_NA);
                return;
            }
            data_ep = o2m_perf_group_create(p, O2M_PERF_TL_INCAST, var,
                                            UCT_O2M_OP_SUM, O2M_PERF_HDR_LEN);
            ctl_ep  = o2m_perf_group_create(p, O2M_PERF_TL_BCAST,
                                            UCT_O2M_MODE_BATCHED,
                                            UCT_O2M_OP_GATHER, 0);
        } else {
            data_ep = o2m_perf_group_create(p, O2M_PERF_TL_BCAST,
                                            (var == O2M_PERF_VAR_FRAGS) ?
                                            UCT_O2M_MODE_BATCHED : var,
                                            UCT_O2M_OP_GATHER, 0);
            ctl_ep  = o2m_perf_group_create(p, O2M_PERF_TL_INCAST,
                                            UCT_O2M_MODE_BATCHED,
                                            UCT_O2M_OP_GATHER, 0);
        }
        o2m_perf_barrier(p, "the group members");
    }

    funcs[tab](p, &m, data_ep, ctl_ep, s_idx);

    if (!m.posix) {
        uct_ep_destroy(data_ep);
        uct_ep_destroy(ctl_ep);
        o2m_perf_barrier(p, "the group destruction");
    }
}

/* Whether sm_bcast sends @a size as one am_zcopy (frags is measured then) */
static int o2m_perf_bcast_zcopy(const o2m_perf_proc_t *p, size_t size)
{
    o2m_perf_path_t path;
    unsigned nfrags;
    size_t chunk;

    o2m_perf_path(&p->tl[O2M_PERF_TL_BCAST].attr, size, 0, &path, &chunk,
                  &nfrags);
    return path == O2M_PERF_PATH_ZCOPY;
}

static void o2m_perf_run_tab(o2m_perf_proc_t *p, o2m_perf_tab_t tab)
{
    int is_fanin = o2m_perf_tabs[tab].is_fanin;
    unsigned s_idx, var;

    for (s_idx = 0; s_idx < o2m_perf_opts.num_sizes; ++s_idx) {
        for (var = 0; var < O2M_PERF_VAR_LAST; ++var) {
            if (var == O2M_PERF_VAR_FRAGS) {
                if (is_fanin ||
                    !o2m_perf_bcast_zcopy(p, o2m_perf_opts.sizes[s_idx])) {
                    continue;
                }
            } else if (!is_fanin && (var != UCT_O2M_MODE_BATCHED) &&
                       (var != UCT_O2M_MODE_CENTRALIZED) &&
                       (var != O2M_PERF_VAR_POSIX)) {
                continue;
            }
            o2m_perf_run_cell(p, tab, var, s_idx);
        }
    }
}

static void o2m_perf_cache_line(unsigned rank, int oversub)
{
    volatile uint64_t *line = &o2m_perf_shm->line;
    unsigned total          = O2M_PERF_CL_WARMUP + O2M_PERF_CL_ITERS;
    o2m_perf_timer_t timer;
    perf_waiter_t w;
    uint64_t i;

    o2m_perf_timer_init(&timer, O2M_PERF_CL_WARMUP, O2M_PERF_CL_ITERS);
    perf_waiter_init(&w, "the cache-line peer", NULL, NULL);
    for (i = 0; i < total; ++i) {
        if (rank == 0) {
            o2m_perf_timer_mark(&timer, i);
            __atomic_store_n(line, (2 * i) + 1, __ATOMIC_RELEASE);
            while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != ((2 * i) + 2)) {
                o2m_perf_waiter_check(&w, oversub);
            }
        } else {
            while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != ((2 * i) + 1)) {
                o2m_perf_waiter_check(&w, oversub);
            }
            __atomic_store_n(line, (2 * i) + 2, __ATOMIC_RELEASE);
        }
        w.deadline = 0;
    }

    if (rank == 0) {
        o2m_perf_shm->cl_oneway = o2m_perf_timer_end(&timer) / 2;
    }
}

static void o2m_perf_child(unsigned rank, unsigned nprocs, unsigned n_idx,
                           int cl_only)
{
    o2m_perf_proc_t proc;
    o2m_perf_tab_t tab;

    if (cl_only) {
        o2m_perf_cache_line(rank, nprocs > o2m_perf_opts.ncpus);
        return;
    }

    o2m_perf_proc_init(&proc, rank, nprocs, n_idx);
    for (tab = 0; tab < O2M_PERF_TAB_LAST; ++tab) {
        if (((tab == O2M_PERF_TAB_FANOUT_LAT) &&
             (o2m_perf_opts.tests & O2M_PERF_TEST_FANOUT)) ||
            ((tab == O2M_PERF_TAB_FANIN_LAT) &&
             (o2m_perf_opts.tests & O2M_PERF_TEST_FANIN)) ||
            (((tab == O2M_PERF_TAB_FANOUT_BW) ||
              (tab == O2M_PERF_TAB_FANIN_BW)) &&
             (o2m_perf_opts.tests & O2M_PERF_TEST_BW))) {
            o2m_perf_run_tab(&proc, tab);
        }
    }
    o2m_perf_barrier(&proc, "the end of the run");
    o2m_perf_proc_cleanup(&proc);

}


/* ------------------------------------------------------------------------ */
/* Parent: fork, wait, print                                                */

typedef struct {
    unsigned nprocs;
    unsigned n_idx;
    int      cl_only;
} o2m_perf_group_t;

static void o2m_perf_group_child(unsigned rank, void *arg)
{
    const o2m_perf_group_t *g = arg;

    o2m_perf_child(rank, g->nprocs, g->n_idx, g->cl_only);
}

/* Fork @a nprocs children; returns 0 when all exited with 0 */
static int o2m_perf_run_group(unsigned nprocs, unsigned n_idx, int cl_only,
                              double deadline)
{
    int bind           = o2m_perf_opts.bind && (nprocs <= o2m_perf_opts.ncpus);
    o2m_perf_group_t g = {nprocs, n_idx, cl_only};
    char label[32];

    o2m_perf_shm->barrier.count = 0;
    o2m_perf_shm->line      = 0;

    snprintf(label, sizeof(label), "N=%u", nprocs);
    return perf_run_procs(nprocs, o2m_perf_opts.cpus, bind, deadline,
                          o2m_perf_opts.timeout, label, o2m_perf_group_child,
                          &g);
}

static void o2m_perf_print_cell(double value, int is_bw)
{
    if (isnan(value)) {
        printf(" %11s", "-");
    } else if (value == O2M_PERF_RES_NA) {
        printf(" %11s", "n/a");
    } else if (is_bw) {
        printf(" %11.0f", value);
    } else {
        printf(" %11.3f", value);
    }
}

/* Whether column @a var of a row is an o2m measurement */
static int o2m_perf_is_o2m(const double *row, unsigned var)
{
    return (var != O2M_PERF_VAR_POSIX) && !isnan(row[var]) &&
           (row[var] != O2M_PERF_RES_NA);
}

/* Best o2m column (mode or frags) of a cell row, NAN if none */
static double o2m_perf_best(const double *row, int is_bw, unsigned *var_p)
{
    double best = NAN;
    unsigned var;

    for (var = 0; var < O2M_PERF_VAR_LAST; ++var) {
        if (!o2m_perf_is_o2m(row, var)) {
            continue;
        }
        if (isnan(best) || (is_bw ? (row[var] > best) : (row[var] < best))) {
            best = row[var];
            if (var_p != NULL) {
                *var_p = var;
            }
        }
    }
    return best;
}

static void o2m_perf_print_tab(o2m_perf_tab_t tab)
{
    const o2m_perf_tab_desc_t *desc = &o2m_perf_tabs[tab];
    unsigned num_modes = desc->is_fanin ? UCT_O2M_MODE_LAST : 2;
    unsigned n_idx, s_idx, var;
    const double *row;
    double best;
    char size[32];

    printf("\n%s\n  (%s; o2m/posix = best o2m column / posix, %s)\n",
           desc->title, desc->unit,
           desc->is_bw ? "> 1: o2m faster" : "< 1: o2m faster");
    printf("%4s %6s", "N", "size");
    for (var = 0; var < num_modes; ++var) {
        printf(" %11s", uct_o2m_mode_name(var));
    }
    if (!desc->is_fanin) {
        printf(" %11s", o2m_perf_var_name(O2M_PERF_VAR_FRAGS));
    }
    printf(" %11s %10s\n", "posix", "o2m/posix");

    for (n_idx = 0; n_idx < o2m_perf_opts.num_nprocs; ++n_idx) {
        for (s_idx = 0; s_idx < o2m_perf_opts.num_sizes; ++s_idx) {
            row = o2m_perf_shm->results[n_idx][s_idx][tab];
            perf_size_str(o2m_perf_opts.sizes[s_idx], size,
                          sizeof(size));
            printf("%4u %6s", o2m_perf_opts.nprocs[n_idx], size);
            for (var = 0; var < num_modes; ++var) {
                o2m_perf_print_cell(row[var], desc->is_bw);
            }
            if (!desc->is_fanin) {
                o2m_perf_print_cell(row[O2M_PERF_VAR_FRAGS], desc->is_bw);
            }
            o2m_perf_print_cell(row[O2M_PERF_VAR_POSIX], desc->is_bw);
            best = o2m_perf_best(row, desc->is_bw, NULL);
            if (isnan(best) || isnan(row[O2M_PERF_VAR_POSIX]) ||
                (row[O2M_PERF_VAR_POSIX] <= 0)) {
                printf(" %10s\n", "-");
            } else {
                printf(" %10.2f\n", best / row[O2M_PERF_VAR_POSIX]);
            }
        }
    }
}

/* Issue 14: 1 MiB fan-out at most 1.0x posix, at each N measured */
static void o2m_perf_print_large_target(void)
{
    unsigned n_idx, s_idx, var = 0;
    const double *row;
    double best, ratio;

    for (s_idx = 0; s_idx < o2m_perf_opts.num_sizes; ++s_idx) {
        if (o2m_perf_opts.sizes[s_idx] == (1ul << 20)) {
            break;
        }
    }
    if ((s_idx == o2m_perf_opts.num_sizes) ||
        !(o2m_perf_opts.tests & O2M_PERF_TEST_FANOUT)) {
        printf("  1 MiB fan-out vs posix: not measured (needs -t fanout and "
               "size 1M)\n");
        return;
    }

    for (n_idx = 0; n_idx < o2m_perf_opts.num_nprocs; ++n_idx) {
        row  = o2m_perf_shm->results[n_idx][s_idx][O2M_PERF_TAB_FANOUT_LAT];
        best = o2m_perf_best(row, 0, &var);
        if (isnan(best) || isnan(row[O2M_PERF_VAR_POSIX]) ||
            (row[O2M_PERF_VAR_POSIX] <= 0)) {
            continue;
        }
        ratio = best / row[O2M_PERF_VAR_POSIX];
        printf("  1 MiB fan-out latency, N=%u (%s): %.3f us = %.2fx posix "
               "%.3f us (target <= 1.0x): %s\n",
               o2m_perf_opts.nprocs[n_idx], o2m_perf_var_name(var), best,
               ratio, row[O2M_PERF_VAR_POSIX],
               (ratio <= 1.0) ? "met" : "NOT met");
    }
}

/* The transports' design targets (docs/performance.md), from this run's
 * numbers */
static void o2m_perf_print_targets(void)
{
    double cl = o2m_perf_shm->cl_oneway * 1e6;
    unsigned n_idx, s_idx, var = 0, tab, num_bad = 0, checked = 0;
    const o2m_perf_tab_desc_t *desc;
    const double *row;
    double fanout8, ratio;
    char size[32];

    printf("\nDesign targets\n");
    for (n_idx = 0; n_idx < o2m_perf_opts.num_nprocs; ++n_idx) {
        if (o2m_perf_opts.nprocs[n_idx] == 2) {
            break;
        }
    }
    if (n_idx == o2m_perf_opts.num_nprocs) {
        printf("  (N=2 not measured)\n");
        return;
    }

    for (s_idx = 0; s_idx < o2m_perf_opts.num_sizes; ++s_idx) {
        if (o2m_perf_opts.sizes[s_idx] == 8) {
            break;
        }
    }
    row = (s_idx < o2m_perf_opts.num_sizes) ?
          o2m_perf_shm->results[n_idx][s_idx][O2M_PERF_TAB_FANOUT_LAT] :
          NULL;
    fanout8 = (row != NULL) ? o2m_perf_best(row, 0, &var) : NAN;
    if (isnan(fanout8) || !(o2m_perf_opts.tests & O2M_PERF_TEST_CL)) {
        printf("  8-byte fan-out to one receiver vs cache line: not "
               "measured (needs -t cl,fanout and size 8)\n");
    } else {
        ratio = fanout8 / cl;
        printf("  8-byte fan-out to one receiver (N=2, %s): %.1f ns = "
               "%.2fx the cache-line one-way time %.1f ns (target <= 2x): "
               "%s\n", uct_o2m_mode_name(var), fanout8 * 1e3, ratio,
               cl * 1e3, (ratio <= 2.0) ? "met" : "NOT met");
    }

    o2m_perf_print_large_target();

    printf("  N=2, sizes <= 64K, every o2m mode at least as fast as posix:");
    for (tab = 0; tab < O2M_PERF_TAB_LAST; ++tab) {
        desc = &o2m_perf_tabs[tab];
        for (s_idx = 0; s_idx < o2m_perf_opts.num_sizes; ++s_idx) {
            if (o2m_perf_opts.sizes[s_idx] > (64ul << 10)) {
                continue;
            }
            row = o2m_perf_shm->results[n_idx][s_idx][tab];
            if (isnan(row[O2M_PERF_VAR_POSIX])) {
                continue;
            }
            for (var = 0; var < O2M_PERF_VAR_LAST; ++var) {
                if (!o2m_perf_is_o2m(row, var)) {
                    continue;
                }
                ++checked;
                if (desc->is_bw ? (row[var] >= row[O2M_PERF_VAR_POSIX]) :
                                  (row[var] <= row[O2M_PERF_VAR_POSIX])) {
                    continue;
                }
                if (num_bad++ == 0) {
                    printf(" NOT met:\n");
                }
                perf_size_str(o2m_perf_opts.sizes[s_idx], size,
                              sizeof(size));
                printf("    %-17s %-11s %4s: %.3f vs posix %.3f (%s)\n",
                       desc->name, o2m_perf_var_name(var), size, row[var],
                       row[O2M_PERF_VAR_POSIX], desc->is_bw ? "MB/s" : "us");
            }
        }
    }
    if (checked == 0) {
        printf(" not measured\n");
    } else if (num_bad == 0) {
        printf(" met (%u cells)\n", checked);
    }
}

static void o2m_perf_print_header(void)
{
    char size[32];
    unsigned i;

    printf("ucx_o2m_perf: one-to-many shared-memory transports vs posix "
           "point-to-point (UCT level)\n");
    printf("  UCX %s (runtime)", ucp_get_version_string());
#ifdef O2M_UCX_VERSION_STRING
    printf(", plugin built against %s", O2M_UCX_VERSION_STRING);
#endif
    printf("\n");
    perf_print_machine(o2m_perf_opts.ncpus);
    printf("  group sizes N:");
    for (i = 0; i < o2m_perf_opts.num_nprocs; ++i) {
        printf(" %u%s", o2m_perf_opts.nprocs[i],
               (o2m_perf_opts.nprocs[i] > o2m_perf_opts.ncpus) ?
               " (oversubscribed)" : "");
    }
    printf("\n  sizes:");
    for (i = 0; i < o2m_perf_opts.num_sizes; ++i) {
        perf_size_str(o2m_perf_opts.sizes[i], size, sizeof(size));
        printf(" %s", size);
    }
    printf("\n  latency: %u iterations (fewer above %luK, at least %u) "
           "after %s warm-up ones,\n    in %u batches: the median batch "
           "average is reported\n", o2m_perf_opts.iters,
           O2M_PERF_LAT_FULL_SIZE >> 10,
           ucs_min(o2m_perf_opts.iters, O2M_PERF_LAT_MIN_ITERS),
           o2m_perf_opts.warmup ? "-w" : "1/10 as many",
           o2m_perf_opts.batches);
    printf("  bandwidth: a warm-up stream, then %u timed streams of %u "
           "messages (at most %lu MB,\n    at least %u messages): the "
           "median stream is reported\n", o2m_perf_opts.batches,
           o2m_perf_opts.bw_msgs, O2M_PERF_BW_BYTES >> 20,
           O2M_PERF_BW_MIN_MSGS);
    printf("  processes pinned one per CPU: %s; wait loops %s\n",
           o2m_perf_opts.bind ? "when N <= usable CPUs" : "no (-B)",
           "spin when N <= usable CPUs, else sched_yield");
}

/* How each size went out, as recorded by a child */
static void o2m_perf_print_paths(void)
{
    static const char *names[] = {"am_short", "am_bcopy", "am_zcopy"};
    unsigned s_idx, t;
    char size[32], path[64];

    printf("\nColumns: batched ... atomic = the mode of the sm_bcast "
           "(fan-out) or sm_incast\n(fan-in) group; fan-out replies go "
           "through an sm_incast gather group and\nfan-in releases through "
           "an sm_bcast group (both batched).  frags = sm_bcast\nbatched "
           "with a message above its max_bcopy sent as posix sends it: "
           "max_bcopy\nfragments through the ring, reassembled by the "
           "receiver, instead of one am_zcopy.\nposix = N-1 "
           "point-to-point messages each way.  Receivers copy (or reduce) "
           "the\npayload out of the transport in their AM handler.\n");
    printf("\nMessage paths: 8-byte header + payload with am_short if it "
           "fits, else am_bcopy,\nelse am_zcopy; posix has no am_zcopy, so "
           "above its max_bcopy the payload goes in\nmax_bcopy fragments "
           "(whole words), which the receiver reassembles or reduces\n");
    printf("%6s", "size");
    for (t = 0; t < O2M_PERF_TL_LAST; ++t) {
        printf("  %-30s", o2m_perf_tl_names[t]);
    }
    printf("\n");
    for (s_idx = 0; s_idx < o2m_perf_opts.num_sizes; ++s_idx) {
        perf_size_str(o2m_perf_opts.sizes[s_idx], size, sizeof(size));
        printf("%6s", size);
        for (t = 0; t < O2M_PERF_TL_LAST; ++t) {
            if (!o2m_perf_shm->paths[s_idx][t].valid) {
                snprintf(path, sizeof(path), "-");
            } else if (o2m_perf_shm->paths[s_idx][t].nfrags == 1) {
                snprintf(path, sizeof(path), "%s",
                         names[o2m_perf_shm->paths[s_idx][t].path]);
            } else {
                snprintf(path, sizeof(path), "%u x %s of %zu B",
                         o2m_perf_shm->paths[s_idx][t].nfrags,
                         names[o2m_perf_shm->paths[s_idx][t].path],
                         o2m_perf_shm->paths[s_idx][t].chunk);
            }
            printf("  %-30s", path);
        }
        printf("\n");
    }
}

static void o2m_perf_usage(FILE *stream)
{
    fprintf(stream,
"Usage: ucx_o2m_perf [options]\n"
"\n"
"Latency and bandwidth of the sm_bcast (fan-out) and sm_incast (fan-in)\n"
"transports, side by side with the same traffic as N-1 point-to-point\n"
"messages over UCX's posix transport.  For every group size N it forks N\n"
"processes on this host (rank 0 is the root).\n"
"\n"
"Options:\n"
"  -n LIST   group sizes, comma-separated (default 2,4,8); a single number\n"
"            K means 2,4,8,... up to K (and K itself)\n"
"  -s LIST   payload sizes in bytes, multiples of 8, with an optional K/M\n"
"            suffix (default 8,64,1K,8K,64K,1M)\n"
"  -i N      latency iterations (default 20000); above 16K they are\n"
"            scaled down with the size, to at least 20\n"
"  -w N      latency warm-up iterations (default: a tenth of -i)\n"
"  -m N      bandwidth stream length in messages (default 2000); at most\n"
"            32 MB per receiver, at least 20 messages\n"
"  -r N      latency: the timed iterations are split into N batches;\n"
"            bandwidth: N timed streams; the median batch average (median\n"
"            stream) is reported (default 5)\n"
"  -t LIST   tests: cl,fanout,fanin,bw or all (default all)\n"
"  -T SEC    timeout of the whole run; the processes are killed after it\n"
"            (default 280)\n"
"  -W SEC    timeout of one wait inside a process (default 60: on a\n"
"            machine shared with other busy programs, a process can get no\n"
"            CPU for many seconds)\n"
"  -B        do not pin processes to CPUs (default: pinned when N <= CPUs)\n"
"  -h        this help\n"
"\n"
"Tests:\n"
"  cl      one cache line ping-ponged between two processes: one-way time\n"
"  fanout  root sends to N-1 receivers, each replies 8 B; RTT/2.\n"
"          sm_bcast batched/centralized, replies on an sm_incast gather\n"
"          group; above sm_bcast's max_bcopy also frags: sm_bcast batched\n"
"          with the message in max_bcopy fragments through the ring (as\n"
"          posix sends it) instead of one am_zcopy; posix: N-1 messages\n"
"          and N-1 posix replies\n"
"  fanin   N-1 senders contribute (INT64 SUM), the root releases them with\n"
"          8 B once it has the result; RTT/2 at rank 1.  sm_incast\n"
"          batched/centralized/locked/atomic, released through sm_bcast;\n"
"          posix: the root reduces the N-1 messages itself\n"
"  bw      fan-out and fan-in streams of back-to-back messages, timed until\n"
"          the last one is consumed (8-byte reply/release); MB/s (1e6 B)\n"
"\n"
"UCX_* variables configure the transports (UCX_SM_BCAST_*, UCX_POSIX_*).\n"
"Exit status: 0 when every measurement ran and checked its data.\n");
}

static void o2m_perf_parse_nprocs(const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL;
    unsigned long value, max;
    unsigned n;

    o2m_perf_opts.num_nprocs = 0;
    if (strchr(arg, ',') == NULL) {
        max = strtoul(arg, NULL, 10);
        if ((max < 2) || (max > O2M_PERF_MAX_PROCS)) {
            perf_die("-n %s: group sizes are 2..%d", arg,
                     O2M_PERF_MAX_PROCS);
        }
        for (n = 2; n < max; n *= 2) {
            o2m_perf_opts.nprocs[o2m_perf_opts.num_nprocs++] = n;
        }
        o2m_perf_opts.nprocs[o2m_perf_opts.num_nprocs++] = max;
        free(copy);
        return;
    }

    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        value = strtoul(tok, NULL, 10);
        if ((value < 2) || (value > O2M_PERF_MAX_PROCS)) {
            perf_die("-n: group size '%s' is not in 2..%d", tok,
                     O2M_PERF_MAX_PROCS);
        }
        if (o2m_perf_opts.num_nprocs == O2M_PERF_MAX_NLIST) {
            perf_die("-n: at most %d group sizes", O2M_PERF_MAX_NLIST);
        }
        o2m_perf_opts.nprocs[o2m_perf_opts.num_nprocs++] = value;
    }
    free(copy);
}

static void o2m_perf_parse_sizes(const char *arg)
{
    perf_parse_sizes(arg, o2m_perf_opts.sizes, &o2m_perf_opts.num_sizes,
                     O2M_PERF_MAX_SIZES, O2M_PERF_MAX_SIZE);
}

static void o2m_perf_parse_tests(const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL;

    o2m_perf_opts.tests = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "cl")) {
            o2m_perf_opts.tests |= O2M_PERF_TEST_CL;
        } else if (!strcmp(tok, "fanout")) {
            o2m_perf_opts.tests |= O2M_PERF_TEST_FANOUT;
        } else if (!strcmp(tok, "fanin")) {
            o2m_perf_opts.tests |= O2M_PERF_TEST_FANIN;
        } else if (!strcmp(tok, "bw")) {
            o2m_perf_opts.tests |= O2M_PERF_TEST_BW;
        } else if (!strcmp(tok, "all")) {
            o2m_perf_opts.tests |= O2M_PERF_TEST_ALL;
        } else {
            perf_die("-t: unknown test '%s' (cl, fanout, fanin, bw, "
                     "all)", tok);
        }
    }
    free(copy);
}

static void o2m_perf_parse_opts(int argc, char **argv)
{
    int c;

    o2m_perf_opts.iters        = 20000;
    o2m_perf_opts.warmup       = 0;
    o2m_perf_opts.bw_msgs      = 2000;
    o2m_perf_opts.batches      = 5;
    o2m_perf_opts.tests        = O2M_PERF_TEST_ALL;
    o2m_perf_opts.timeout      = 280;
    perf_sup.wait_timeout      = 60;
    o2m_perf_opts.bind         = 1;
    o2m_perf_parse_nprocs("2,4,8");
    o2m_perf_parse_sizes("8,64,1K,8K,64K,1M");

    while ((c = getopt(argc, argv, "n:s:i:w:m:r:t:T:W:Bh")) != -1) {
        switch (c) {
        case 'n':
            o2m_perf_parse_nprocs(optarg);
            break;
        case 's':
            o2m_perf_parse_sizes(optarg);
            break;
        case 'i':
            o2m_perf_opts.iters = perf_parse_uint(optarg, c, 1);
            break;
        case 'w':
            o2m_perf_opts.warmup = perf_parse_uint(optarg, c, 1);
            break;
        case 'm':
            o2m_perf_opts.bw_msgs = perf_parse_uint(optarg, c, 1);
            break;
        case 'r':
            o2m_perf_opts.batches = perf_parse_uint(optarg, c, 1);
            if (o2m_perf_opts.batches > O2M_PERF_MAX_BATCHES) {
                perf_die("-r: at most %d", O2M_PERF_MAX_BATCHES);
            }
            break;
        case 't':
            o2m_perf_parse_tests(optarg);
            break;
        case 'T':
            o2m_perf_opts.timeout = perf_parse_uint(optarg, c, 1);
            break;
        case 'W':
            perf_sup.wait_timeout = perf_parse_uint(optarg, c, 1);
            break;
        case 'B':
            o2m_perf_opts.bind = 0;
            break;
        case 'h':
            o2m_perf_usage(stdout);
            exit(0);
        default:
            o2m_perf_usage(stderr);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ucx_o2m_perf: unexpected argument '%s'\n",
                argv[optind]);
        o2m_perf_usage(stderr);
        exit(2);
    }

    if (!perf_usable_cpus(o2m_perf_opts.cpus, &o2m_perf_opts.ncpus)) {
        o2m_perf_opts.bind = 0;
    }
}

int main(int argc, char **argv)
{
    double start, deadline, t, own_start;
    unsigned n_idx, s_idx, tab, var;
    perf_cpu_t cpu_start;
    int failed = 0;

    /* Progress lines and errors (stderr) come out in order */
    setvbuf(stdout, NULL, _IOLBF, 0);
    perf_sup.name = "o2m_perf";
    o2m_perf_parse_opts(argc, argv);

    o2m_perf_shm    = perf_map_shared(sizeof(*o2m_perf_shm));
    perf_sup.failed = &o2m_perf_shm->failed;
    for (n_idx = 0; n_idx < O2M_PERF_MAX_NLIST; ++n_idx) {
        for (s_idx = 0; s_idx < O2M_PERF_MAX_SIZES; ++s_idx) {
            for (tab = 0; tab < O2M_PERF_TAB_LAST; ++tab) {
                for (var = 0; var < O2M_PERF_VAR_LAST; ++var) {
                    o2m_perf_shm->results[n_idx][s_idx][tab][var] = NAN;
                }
            }
        }
    }
    o2m_perf_shm->cl_oneway = NAN;

    perf_handle_signals();

    o2m_perf_print_header();

    perf_cpu_start(&cpu_start, &own_start);
    start     = perf_now();
    deadline  = start + o2m_perf_opts.timeout;
    if (o2m_perf_opts.tests & O2M_PERF_TEST_CL) {
        if (o2m_perf_run_group(2, 0, 1, deadline) != 0) {
            failed = 1;
        }
    }

    if (o2m_perf_opts.tests & ~O2M_PERF_TEST_CL) {
        for (n_idx = 0; n_idx < o2m_perf_opts.num_nprocs; ++n_idx) {
            t = perf_now();
            if (o2m_perf_run_group(o2m_perf_opts.nprocs[n_idx], n_idx, 0,
                                   deadline) != 0) {
                failed = 1;
                break;
            }
            printf("  N=%u measured in %.1f s\n",
                   o2m_perf_opts.nprocs[n_idx], perf_now() - t);
        }
    }

    if (o2m_perf_opts.tests & ~O2M_PERF_TEST_CL) {
        o2m_perf_print_paths();
    }

    if (o2m_perf_opts.tests & O2M_PERF_TEST_CL) {
        printf("\nCache-line reference: one cache line ping-ponged between "
               "2 processes\n");
        if (isnan(o2m_perf_shm->cl_oneway)) {
            printf("  one-way (RTT/2): -\n");
        } else {
            printf("  one-way (RTT/2): %.1f ns\n",
                   o2m_perf_shm->cl_oneway * 1e9);
        }
    }

    if (o2m_perf_opts.tests & O2M_PERF_TEST_FANOUT) {
        o2m_perf_print_tab(O2M_PERF_TAB_FANOUT_LAT);
    }
    if (o2m_perf_opts.tests & O2M_PERF_TEST_FANIN) {
        o2m_perf_print_tab(O2M_PERF_TAB_FANIN_LAT);
    }
    if (o2m_perf_opts.tests & O2M_PERF_TEST_BW) {
        o2m_perf_print_tab(O2M_PERF_TAB_FANOUT_BW);
        o2m_perf_print_tab(O2M_PERF_TAB_FANIN_BW);
    }
    o2m_perf_print_targets();

    printf("\nTotal time %.1f s%s\n", perf_now() - start,
           failed ? "; FAILED: see the errors above" : "");
    perf_print_noise(&cpu_start, own_start);
    fflush(stdout);
    munmap(o2m_perf_shm, sizeof(*o2m_perf_shm));
    return failed ? 1 : 0;
}
