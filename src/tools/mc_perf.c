/**
 * ucx-o2m: ucx_mc_perf, the benchmark of the mc_udp transport (reliable
 * UDP/IP multicast, docs/multicast.md).
 *
 * Forks a root (rank 0) and N receivers on this machine with the
 * benchmarks' supervisor (perf_lib.h).  With -N, rank r first enters the
 * r-th network namespace given, so that the processes run on the hosts of
 * the multi-host bed (contrib/multihost.sh; contrib/bench-mc.sh does it):
 * they share this machine's memory (addresses, results and the failure flag
 * go through it, no MPI) and its monotonic clock, but their packets go
 * through each host's own network stack and the bed's loss rules.
 *
 * Tests (-t):
 *  - fanout: one root to N receivers, in the same run and with the same
 *    data: an mc_udp group (each message sent once, by multicast), the same
 *    messages sent N times on mc_udp point-to-point endpoints, and N times
 *    on UCX's tcp transport.  The root sends a stream of messages back to
 *    back; timed from its first send until every receiver has had the last
 *    one.  Printed: MB/s of payload per receiver, and the root's CPU time
 *    (getrusage, user + system of the whole process) per MB sent to all.
 *  - repair: the root sends messages at a fixed rate to an mc_udp group;
 *    the loss is the bed's (nftables rules the caller set).  Printed per
 *    receiver: repairs received and their latency as the engine measured
 *    it (uct_mc_udp_iface_repair_stats: from learning of the missing packet
 *    to the repair's arrival), the one-way latency of every message (root's
 *    send call to the receiver's delivery, on the shared clock), the NACKs
 *    sent; and the repairs sent by unicast and by re-multicast.
 *
 * Correctness: every message carries its sequence number and variant; each
 * receiver checks that they come in order, with the right length, the first
 * and last payload words of every message and every word of one message in
 * 64 (and of the last).  A wrong message, a transport error or a wait past
 * -T fails the run (exit status 1): `ucx_mc_perf -q` is a data check too.
 */
#ifdef HAVE_CONFIG_H
#  include "o2m_config.h"
#endif

#include "uct_o2m.h"
#include "perf_lib.h"

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/sys/math.h>
#include <ucs/type/status.h>

#include <sys/mman.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#define MC_PERF_MAX_PROCS   64
#define MC_PERF_MAX_NLIST   8
#define MC_PERF_MAX_SIZES   8
#define MC_PERF_ADDR_MAX    128
#define MC_PERF_HDR_LEN     16     /* header word + send time */
#define MC_PERF_AM_ID       7
#define MC_PERF_FULL_CHECK  64     /* every word of one message in this many */
#define MC_PERF_LAT_BUCKETS UCT_MC_UDP_LAT_BUCKETS

/* Header word: sequence (32 bits), variant (8) */
#define MC_PERF_HDR(_seq, _var)  (((uint64_t)(_seq) << 8) | (_var))


typedef enum {
    MC_PERF_TL_MC_UDP,
    MC_PERF_TL_TCP,
    MC_PERF_TL_LAST
} mc_perf_tl_id_t;

static const char *mc_perf_tl_names[MC_PERF_TL_LAST] = {
    [MC_PERF_TL_MC_UDP] = UCT_MC_UDP_TL_NAME,
    [MC_PERF_TL_TCP]    = "tcp"
};

/* Fan-out variants, the columns of the table */
typedef enum {
    MC_PERF_VAR_MCAST,   /* mc_udp group: one multicast send */
    MC_PERF_VAR_P2P,     /* mc_udp point-to-point: N sends */
    MC_PERF_VAR_TCP,     /* UCX tcp: N sends */
    MC_PERF_VAR_LAST
} mc_perf_var_t;

static const char *mc_perf_var_names[MC_PERF_VAR_LAST] = {
    [MC_PERF_VAR_MCAST] = "mc_udp group",
    [MC_PERF_VAR_P2P]   = "mc_udp p2p xN",
    [MC_PERF_VAR_TCP]   = "tcp xN"
};

enum {
    MC_PERF_TEST_FANOUT = 1 << 0,
    MC_PERF_TEST_REPAIR = 1 << 1
};


typedef struct {
    uint8_t dev[MC_PERF_ADDR_MAX];
    uint8_t iface[MC_PERF_ADDR_MAX];
} mc_perf_addr_t;

typedef struct {
    double mbps;      /* payload per receiver */
    double cpu_s;     /* root's CPU time */
    double wall_s;
    double mbytes;    /* payload sent to all receivers, MB */
    uint64_t msgs;    /* messages of the cell */
    uint64_t root_rx; /* mc_udp: datagrams the root read (its own
                         multicast looped back included) */
    uint64_t recv_tx; /* mc_udp: datagrams the receivers sent (control
                         only: ACKs, NACKs, pings, liveness) */
} mc_perf_result_t;

/* What a receiver of the repair test reports */
typedef struct {
    uct_mc_udp_repair_stats_t rep;
    uct_mc_udp_counters_t     cnt;
    uint64_t                  lat[MC_PERF_LAT_BUCKETS]; /* one-way */
    uint64_t                  lat_max;
    uint64_t                  lat_count;
} mc_perf_rx_report_t;

/* Shared by the parent and every process (zeroed before the forks) */
typedef struct {
    volatile int32_t    failed;
    perf_barrier_t      barrier;
    mc_perf_addr_t      addr[MC_PERF_MAX_PROCS][MC_PERF_TL_LAST];
    volatile uint64_t   done[MC_PERF_MAX_PROCS]; /* messages received */
    mc_perf_result_t    res[MC_PERF_MAX_NLIST][MC_PERF_MAX_SIZES]
                           [MC_PERF_VAR_LAST];
    mc_perf_rx_report_t rx[MC_PERF_MAX_PROCS];
    uct_mc_udp_counters_t root_cnt;
    double              repair_wall;
    uint64_t            group_base; /* group ids: this run's own */
} mc_perf_shm_t;

static mc_perf_shm_t *mc_perf_shm;


static struct {
    unsigned   tests;
    unsigned   nrecv[MC_PERF_MAX_NLIST];
    unsigned   num_nrecv;
    size_t     sizes[MC_PERF_MAX_SIZES];
    unsigned   num_sizes;
    unsigned   vars;         /* bit per mc_perf_var_t */
    const char *dev;
    char       *netns[MC_PERF_MAX_PROCS];
    unsigned   num_netns;
    const char *label;
    size_t     repair_size;
    unsigned   repair_msgs;
    double     repair_rate;  /* messages/s, 0: back to back */
    size_t     fanout_bytes; /* per receiver and cell */
    double     timeout;
    int        quick;
    int        cpus[MC_PERF_MAX_PROCS];
    unsigned   ncpus;
    int        bind;
    int        no_bind;
} mc_perf_opts;


/* One process */
typedef struct {
    unsigned           rank;
    unsigned           nprocs;
    unsigned           n_idx;
    int                oversub;
    ucs_async_context_t *async;
    uct_worker_h       worker;
    uct_md_h           md[MC_PERF_TL_LAST];
    uct_iface_h        iface[MC_PERF_TL_LAST];
    uct_iface_attr_t   attr[MC_PERF_TL_LAST];
    uct_ep_h           eps[MC_PERF_TL_LAST][MC_PERF_MAX_PROCS];
    uct_ep_h           group;
    uint8_t            *buf;
    size_t             buf_size;
    /* receiver: the stream in progress */
    unsigned           var;
    size_t             size;
    uint64_t           expected;  /* next sequence */
    uint64_t           bad;
    int                record_lat;
    mc_perf_rx_report_t *report;
} mc_perf_proc_t;


static uint64_t mc_perf_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Payload word @a j (from 2) of message @a seq */
static inline uint64_t mc_perf_word(uint64_t seq, size_t j)
{
    return (seq * 0x9e3779b97f4a7c15ull) ^ (j * 0xbf58476d1ce4e5b9ull);
}

static void mc_perf_barrier_progress(void *arg)
{
    mc_perf_proc_t *p = arg;

    uct_worker_progress(p->worker);
}

static void mc_perf_barrier(mc_perf_proc_t *p, const char *what)
{
    perf_barrier(&mc_perf_shm->barrier, p->nprocs, what,
                 mc_perf_barrier_progress, p);
}

static void mc_perf_relax(const mc_perf_proc_t *p)
{
    if (p->oversub) {
        /* more processes than CPUs: the peer needs this one's CPU */
        sched_yield();
    }
}

static unsigned mc_perf_bucket(uint64_t ns)
{
    unsigned lo = 0, hi = MC_PERF_LAT_BUCKETS - 1, mid;

    while (lo < hi) {
        mid = (lo + hi + 1) / 2;
        if (uct_mc_udp_lat_bucket_low(mid) <= ns) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}


/* ------------------------------------------------------------------------ */
/* Receiving                                                                */

static ucs_status_t mc_perf_am(void *arg, void *data, size_t length,
                               unsigned flags)
{
    mc_perf_proc_t *p = arg;
    const uint8_t *d  = data;
    uint64_t hdr, ts, w, now;
    size_t nwords, j;
    int full;

    memcpy(&hdr, d, 8);
    memcpy(&ts, d + 8, 8);
    if ((hdr != MC_PERF_HDR(p->expected, p->var)) || (length != p->size)) {
        perf_die("%s: message %" PRIu64 " of %zu B expected, got header "
                 "%#" PRIx64 " (message %" PRIu64 ", variant %u), %zu B",
                 mc_perf_var_names[p->var], p->expected, p->size, hdr,
                 hdr >> 8, (unsigned)(hdr & 0xff), length);
    }

    nwords = length / 8;
    full   = ((p->expected % MC_PERF_FULL_CHECK) == 0);
    for (j = 2; j < nwords; ++j) {
        if (!full && (j != 2) && (j != nwords - 1)) {
            continue;
        }
        memcpy(&w, d + j * 8, 8);
        if (w != mc_perf_word(p->expected, j)) {
            perf_die("%s: message %" PRIu64 ": word %zu is %#" PRIx64
                     ", sent %#" PRIx64, mc_perf_var_names[p->var],
                     p->expected, j, w, mc_perf_word(p->expected, j));
        }
    }

    if (p->record_lat) {
        now = mc_perf_ns();
        w   = (now > ts) ? now - ts : 0;
        ++p->report->lat[mc_perf_bucket(w)];
        ++p->report->lat_count;
        if (w > p->report->lat_max) {
            p->report->lat_max = w;
        }
    }
    ++p->expected;
    return UCS_OK;
}

/* Receive @a count messages of variant @a var, @a size bytes */
static void mc_perf_receive(mc_perf_proc_t *p, unsigned var, size_t size,
                            uint64_t count, const char *what)
{
    perf_waiter_t w;

    perf_waiter_init(&w, what, NULL, NULL);
    while (p->expected < count) {
        uct_worker_progress(p->worker);
        perf_waiter_check(&w);
        mc_perf_relax(p);
    }
    __atomic_store_n(&mc_perf_shm->done[p->rank], p->expected,
                     __ATOMIC_RELEASE);
}

static void mc_perf_rx_start(mc_perf_proc_t *p, unsigned var, size_t size)
{
    p->var      = var;
    p->size     = size;
    p->expected = 0;
}


/* ------------------------------------------------------------------------ */
/* Sending                                                                  */

typedef struct {
    const uint8_t *buf;
    size_t        len;
} mc_perf_pack_arg_t;

static size_t mc_perf_pack(void *dest, void *arg)
{
    mc_perf_pack_arg_t *a = arg;

    memcpy(dest, a->buf, a->len);
    return a->len;
}

static void mc_perf_fill(mc_perf_proc_t *p, uint64_t seq, unsigned var,
                         size_t size)
{
    uint64_t hdr = MC_PERF_HDR(seq, var), ts = mc_perf_ns(), w;
    size_t nwords = size / 8, j;
    int full = ((seq % MC_PERF_FULL_CHECK) == 0);

    memcpy(p->buf, &hdr, 8);
    memcpy(p->buf + 8, &ts, 8);
    for (j = 2; j < nwords; ++j) {
        if (full || (j == 2) || (j == nwords - 1) || (seq == 0)) {
            w = mc_perf_word(seq, j);
            memcpy(p->buf + j * 8, &w, 8);
        }
    }
}

/* Send the message in the buffer on @a ep (of interface @a tl), retrying
 * while the transport has no room */
static void mc_perf_send(mc_perf_proc_t *p, mc_perf_tl_id_t tl, uct_ep_h ep,
                         size_t size, perf_waiter_t *w)
{
    mc_perf_pack_arg_t arg = {p->buf, size};
    ucs_status_t status;
    uint64_t hdr;
    ssize_t ret;

    for (;;) {
        if (size <= p->attr[tl].cap.am.max_short) {
            memcpy(&hdr, p->buf, 8);
            status = uct_ep_am_short(ep, MC_PERF_AM_ID, hdr, p->buf + 8,
                                     size - 8);
        } else {
            ret    = uct_ep_am_bcopy(ep, MC_PERF_AM_ID, mc_perf_pack, &arg,
                                     0);
            status = (ret < 0) ? (ucs_status_t)ret : UCS_OK;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            break;
        }
        uct_worker_progress(p->worker);
        perf_waiter_check(w);
    }
    PERF_CHECK_OK(status, "send");
}

static void mc_perf_flush(mc_perf_proc_t *p, uct_ep_h ep, const char *what)
{
    ucs_status_t status;
    perf_waiter_t w;

    perf_waiter_init(&w, what, NULL, NULL);
    do {
        status = uct_ep_flush(ep, 0, NULL);
        uct_worker_progress(p->worker);
        perf_waiter_check(&w);
    } while ((status == UCS_INPROGRESS) || (status == UCS_ERR_NO_RESOURCE));
    PERF_CHECK_OK(status, what);
}

/* Root: wait until every receiver has @a count messages */
static void mc_perf_wait_done(mc_perf_proc_t *p, uint64_t count)
{
    perf_waiter_t w;
    unsigned r;

    perf_waiter_init(&w, "the receivers", NULL, NULL);
    for (r = 1; r < p->nprocs; ++r) {
        while (__atomic_load_n(&mc_perf_shm->done[r], __ATOMIC_ACQUIRE) <
               count) {
            uct_worker_progress(p->worker);
            perf_waiter_check(&w);
            mc_perf_relax(p);
        }
    }
}

static double mc_perf_cpu(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}


/* ------------------------------------------------------------------------ */
/* Setup                                                                    */

static ucs_status_t mc_perf_err_handler(void *arg, uct_ep_h ep,
                                        ucs_status_t status)
{
    if (__atomic_load_n(&mc_perf_shm->failed, __ATOMIC_ACQUIRE)) {
        _exit(PERF_EXIT_PEER); /* a peer failed first and said why */
    }
    perf_die("transport error on %s: %s", (const char*)arg,
             ucs_status_string(status));
    return status;
}

static void mc_perf_tl_open(mc_perf_proc_t *p, mc_perf_tl_id_t id)
{
    const char *name = mc_perf_tl_names[id];
    ucs_status_t status;

    perf_uct_iface_open(name, name, mc_perf_opts.dev, p->worker,
                        mc_perf_err_handler, &p->md[id], &p->iface[id]);

    status = uct_iface_query(p->iface[id], &p->attr[id]);
    PERF_CHECK_OK(status, "uct_iface_query");
    if ((p->attr[id].iface_addr_len > MC_PERF_ADDR_MAX) ||
        (p->attr[id].device_addr_len > MC_PERF_ADDR_MAX) ||
        !(p->attr[id].cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) ||
        !(p->attr[id].cap.flags & UCT_IFACE_FLAG_AM_BCOPY)) {
        perf_die("%s: addresses too long, or no connect to interface or "
                 "am_bcopy", name);
    }
    status = uct_iface_get_address(p->iface[id], (uct_iface_addr_t*)
                                   mc_perf_shm->addr[p->rank][id].iface);
    PERF_CHECK_OK(status, "uct_iface_get_address");
    status = uct_iface_get_device_address(p->iface[id], (uct_device_addr_t*)
                                          mc_perf_shm->addr[p->rank][id].dev);
    PERF_CHECK_OK(status, "uct_iface_get_device_address");
    status = uct_iface_set_am_handler(p->iface[id], MC_PERF_AM_ID, mc_perf_am,
                                      p, 0);
    PERF_CHECK_OK(status, "uct_iface_set_am_handler");
    uct_iface_progress_enable(p->iface[id],
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

static void mc_perf_connect(mc_perf_proc_t *p, mc_perf_tl_id_t id,
                            unsigned peer)
{
    mc_perf_addr_t *addr = &mc_perf_shm->addr[peer][id];
    uct_ep_params_t params;
    ucs_status_t status;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = p->iface[id];
    params.dev_addr   = (const uct_device_addr_t*)addr->dev;
    params.iface_addr = (const uct_iface_addr_t*)addr->iface;
    status = uct_ep_create(&params, &p->eps[id][peer]);
    PERF_CHECK_OK(status, "uct_ep_create");
}

/* The mc_udp group of every process, rooted at rank 0 */
static void mc_perf_group_create(mc_perf_proc_t *p, uint64_t group_id)
{
    mc_perf_addr_t *root = &mc_perf_shm->addr[0][MC_PERF_TL_MC_UDP];
    uct_o2m_group_params_t params;
    ucs_status_t status;

    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_O2M_GROUP_FIELD_ROOT_ADDR;
    params.group_id        = group_id;
    params.size            = p->nprocs;
    params.my_index        = p->rank;
    params.root_index      = 0;
    params.root_iface_addr = (const uct_iface_addr_t*)root->iface;
    params.root_dev_addr   = (const uct_device_addr_t*)root->dev;
    status = uct_o2m_ep_create(p->iface[MC_PERF_TL_MC_UDP], &params,
                               &p->group);
    PERF_CHECK_OK(status, "uct_o2m_ep_create");
}

/* Rank @a rank enters its network namespace (-N) */
static void mc_perf_enter_netns(unsigned rank)
{
    int fd;

    if (mc_perf_opts.num_netns == 0) {
        return;
    }
    fd = open(mc_perf_opts.netns[rank], O_RDONLY | O_CLOEXEC);
    if ((fd < 0) || (setns(fd, CLONE_NEWNET) != 0)) {
        perf_die("cannot enter the network namespace %s: %m",
                 mc_perf_opts.netns[rank]);
    }
    close(fd);
}

static void mc_perf_proc_init(mc_perf_proc_t *p, unsigned rank,
                              unsigned nprocs, unsigned n_idx,
                              uint64_t group_id)
{
    ucs_status_t status;
    unsigned i, t;

    memset(p, 0, sizeof(*p));
    p->rank    = rank;
    p->nprocs  = nprocs;
    p->n_idx   = n_idx;
    p->oversub = nprocs > mc_perf_opts.ncpus;
    p->report  = &mc_perf_shm->rx[rank];
    mc_perf_enter_netns(rank);

    p->buf_size = mc_perf_opts.repair_size;
    for (i = 0; i < mc_perf_opts.num_sizes; ++i) {
        p->buf_size = ucs_max(p->buf_size, mc_perf_opts.sizes[i]);
    }
    p->buf = calloc(1, p->buf_size);
    if (p->buf == NULL) {
        perf_die("out of memory");
    }

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &p->async);
    PERF_CHECK_OK(status, "ucs_async_context_create");
    status = uct_worker_create(p->async, UCS_THREAD_MODE_SINGLE, &p->worker);
    PERF_CHECK_OK(status, "uct_worker_create");
    for (t = 0; t < MC_PERF_TL_LAST; ++t) {
        if ((t == MC_PERF_TL_TCP) &&
            !(mc_perf_opts.vars & (1u << MC_PERF_VAR_TCP))) {
            continue;
        }
        mc_perf_tl_open(p, t);
        for (i = 0; i < mc_perf_opts.num_sizes; ++i) {
            if (mc_perf_opts.sizes[i] > p->attr[t].cap.am.max_bcopy) {
                perf_die("%s: size %zu above its max_bcopy %zu",
                         mc_perf_tl_names[t], mc_perf_opts.sizes[i],
                         p->attr[t].cap.am.max_bcopy);
            }
        }
    }

    mc_perf_barrier(p, "the addresses");
    if (rank == 0) {
        for (i = 1; i < nprocs; ++i) {
            for (t = 0; t < MC_PERF_TL_LAST; ++t) {
                if (p->iface[t] != NULL) {
                    mc_perf_connect(p, t, i);
                }
            }
        }
        /* the root's group first: the members look it up */
        mc_perf_group_create(p, group_id);
    }
    mc_perf_barrier(p, "the group root");
    if (rank != 0) {
        mc_perf_group_create(p, group_id);
    }
    mc_perf_barrier(p, "the endpoints");
}

static void mc_perf_proc_cleanup(mc_perf_proc_t *p)
{
    unsigned i, t;

    uct_ep_destroy(p->group);
    for (t = 0; t < MC_PERF_TL_LAST; ++t) {
        for (i = 0; i < p->nprocs; ++i) {
            if (p->eps[t][i] != NULL) {
                uct_ep_destroy(p->eps[t][i]);
            }
        }
        if (p->iface[t] != NULL) {
            uct_iface_close(p->iface[t]);
            uct_md_close(p->md[t]);
        }
    }
    uct_worker_destroy(p->worker);
    ucs_async_context_destroy(p->async);
    free(p->buf);
}


/* ------------------------------------------------------------------------ */
/* Tests                                                                    */

static uint64_t mc_perf_fanout_msgs(size_t size)
{
    uint64_t n = mc_perf_opts.fanout_bytes / size;

    return ucs_max(n, 50);
}

/* One cell: variant @a var, @a size bytes, to every receiver */
static void mc_perf_fanout_cell(mc_perf_proc_t *p, unsigned var,
                                unsigned s_idx)
{
    size_t size    = mc_perf_opts.sizes[s_idx];
    uint64_t count = mc_perf_fanout_msgs(size), seq;
    mc_perf_tl_id_t tl = (var == MC_PERF_VAR_TCP) ? MC_PERF_TL_TCP :
                         MC_PERF_TL_MC_UDP;
    mc_perf_result_t *res = &mc_perf_shm->res[p->n_idx][s_idx][var];
    uct_mc_udp_counters_t cnt0, cnt1;
    double t0, c0, t1, c1;
    perf_waiter_t w;
    ucs_status_t status;
    unsigned r;

    snprintf(perf_sup.context, sizeof(perf_sup.context), "N=%u %s %zu B",
             p->nprocs - 1, mc_perf_var_names[var], size);
    status = uct_mc_udp_iface_counters(p->iface[MC_PERF_TL_MC_UDP], &cnt0);
    PERF_CHECK_OK(status, "uct_mc_udp_iface_counters");
    if (p->rank != 0) {
        mc_perf_rx_start(p, var, size);
    } else {
        for (r = 1; r < p->nprocs; ++r) {
            mc_perf_shm->done[r] = 0;
        }
    }
    mc_perf_barrier(p, "the start of a stream");

    if (p->rank != 0) {
        mc_perf_receive(p, var, size, count, "the stream");
        mc_perf_barrier(p, "the end of a stream");
        status = uct_mc_udp_iface_counters(p->iface[MC_PERF_TL_MC_UDP],
                                           &cnt1);
        PERF_CHECK_OK(status, "uct_mc_udp_iface_counters");
        __atomic_fetch_add(&res->recv_tx, cnt1.tx_packets - cnt0.tx_packets,
                           __ATOMIC_RELAXED);
        mc_perf_barrier(p, "the counters of a stream");
        return;
    }

    perf_waiter_init(&w, "room to send", NULL, NULL);
    t0 = perf_now();
    c0 = mc_perf_cpu();
    for (seq = 0; seq < count; ++seq) {
        mc_perf_fill(p, seq, var, size);
        if (var == MC_PERF_VAR_MCAST) {
            mc_perf_send(p, tl, p->group, size, &w);
        } else {
            for (r = 1; r < p->nprocs; ++r) {
                mc_perf_send(p, tl, p->eps[tl][r], size, &w);
            }
        }
    }
    mc_perf_wait_done(p, count);
    t1 = perf_now();
    c1 = mc_perf_cpu();

    res->wall_s = t1 - t0;
    res->cpu_s  = c1 - c0;
    res->mbytes = (double)count * size * (p->nprocs - 1) / 1e6;
    res->mbps   = (double)count * size / 1e6 / res->wall_s;

    /* every message acknowledged before the next cell */
    if (var == MC_PERF_VAR_MCAST) {
        mc_perf_flush(p, p->group, "the group's flush");
    } else {
        for (r = 1; r < p->nprocs; ++r) {
            mc_perf_flush(p, p->eps[tl][r], "a flush");
        }
    }
    status = uct_mc_udp_iface_counters(p->iface[MC_PERF_TL_MC_UDP], &cnt1);
    PERF_CHECK_OK(status, "uct_mc_udp_iface_counters");
    res->msgs    = count;
    res->root_rx = cnt1.rx_packets - cnt0.rx_packets;
    mc_perf_barrier(p, "the end of a stream");
    mc_perf_barrier(p, "the counters of a stream");
}

static void mc_perf_repair(mc_perf_proc_t *p)
{
    size_t size    = mc_perf_opts.repair_size;
    uint64_t count = mc_perf_opts.repair_msgs, seq;
    double t0, due, gap;
    perf_waiter_t w;
    ucs_status_t status;

    snprintf(perf_sup.context, sizeof(perf_sup.context), "repair N=%u",
             p->nprocs - 1);
    if (p->rank != 0) {
        mc_perf_rx_start(p, MC_PERF_VAR_MCAST, size);
        p->record_lat = 1;
        memset(p->report, 0, sizeof(*p->report));
    }
    mc_perf_barrier(p, "the start of the repair stream");

    if (p->rank != 0) {
        mc_perf_receive(p, MC_PERF_VAR_MCAST, size, count,
                        "the repair stream");
        p->record_lat = 0;
    } else {
        gap = (mc_perf_opts.repair_rate > 0) ?
              1.0 / mc_perf_opts.repair_rate : 0;
        perf_waiter_init(&w, "room to send", NULL, NULL);
        t0 = perf_now();
        for (seq = 0; seq < count; ++seq) {
            due = t0 + seq * gap;
            while (perf_now() < due) {
                uct_worker_progress(p->worker);
                perf_waiter_check(&w);
            }
            mc_perf_fill(p, seq, MC_PERF_VAR_MCAST, size);
            mc_perf_send(p, MC_PERF_TL_MC_UDP, p->group, size, &w);
        }
        mc_perf_flush(p, p->group, "the group's flush");
        mc_perf_shm->repair_wall = perf_now() - t0;
    }
    mc_perf_barrier(p, "the end of the repair stream");

    status = uct_mc_udp_iface_counters(p->iface[MC_PERF_TL_MC_UDP],
                                       (p->rank == 0) ?
                                       &mc_perf_shm->root_cnt :
                                       &p->report->cnt);
    PERF_CHECK_OK(status, "uct_mc_udp_iface_counters");
    if (p->rank != 0) {
        status = uct_mc_udp_iface_repair_stats(p->iface[MC_PERF_TL_MC_UDP],
                                               &p->report->rep);
        PERF_CHECK_OK(status, "uct_mc_udp_iface_repair_stats");
    }
    mc_perf_barrier(p, "the counters");
}

static void mc_perf_child(unsigned rank, void *arg)
{
    unsigned n_idx = *(unsigned*)arg, nprocs, var, s;
    mc_perf_proc_t p;

    nprocs = mc_perf_opts.nrecv[n_idx] + 1;
    mc_perf_proc_init(&p, rank, nprocs, n_idx,
                      mc_perf_shm->group_base + n_idx);
    if (mc_perf_opts.tests & MC_PERF_TEST_REPAIR) {
        mc_perf_repair(&p);
    }
    if (mc_perf_opts.tests & MC_PERF_TEST_FANOUT) {
        for (s = 0; s < mc_perf_opts.num_sizes; ++s) {
            for (var = 0; var < MC_PERF_VAR_LAST; ++var) {
                if (mc_perf_opts.vars & (1u << var)) {
                    mc_perf_fanout_cell(&p, var, s);
                }
            }
        }
    }
    perf_sup.context[0] = '\0';
    mc_perf_barrier(&p, "the end of the run");
    mc_perf_proc_cleanup(&p);
}


/* ------------------------------------------------------------------------ */
/* Printing                                                                 */

/* The value at fraction @a q of a histogram (the middle of its bucket) */
static double mc_perf_quantile_us(const uint64_t *hist, uint64_t count,
                                  uint64_t max, double q)
{
    uint64_t need = (uint64_t)ceil(q * count), seen = 0;
    double lo, hi;
    unsigned i;

    if (count == 0) {
        return NAN;
    }
    need = ucs_max(need, 1);
    for (i = 0; i < MC_PERF_LAT_BUCKETS; ++i) {
        seen += hist[i];
        if (seen >= need) {
            break;
        }
    }
    lo = uct_mc_udp_lat_bucket_low(i);
    hi = (i + 1 < MC_PERF_LAT_BUCKETS) ? uct_mc_udp_lat_bucket_low(i + 1) :
         max;
    return ucs_min((lo + hi) / 2, (double)max) / 1e3;
}

static const char *mc_perf_host(unsigned rank, char *buf, size_t max)
{
    const char *slash;

    if (mc_perf_opts.num_netns == 0) {
        snprintf(buf, max, "%s", mc_perf_opts.dev);
    } else {
        slash = strrchr(mc_perf_opts.netns[rank], '/');
        snprintf(buf, max, "%s", (slash != NULL) ? slash + 1 :
                 mc_perf_opts.netns[rank]);
    }
    return buf;
}

static void mc_perf_print_repair(unsigned n_idx)
{
    unsigned nrecv = mc_perf_opts.nrecv[n_idx], r, i;
    uint64_t rep_all[MC_PERF_LAT_BUCKETS] = {0};
    uint64_t rep_count = 0, rep_max = 0, rep_sum = 0;
    uint64_t ucast, mcast, nacks = 0;
    mc_perf_rx_report_t *x;
    char host[64];

    printf("\nRepair latency%s%s: %u receiver(s), %u messages of %zu B",
           mc_perf_opts.label ? ", " : "",
           mc_perf_opts.label ? mc_perf_opts.label : "", nrecv,
           mc_perf_opts.repair_msgs, mc_perf_opts.repair_size);
    if (mc_perf_opts.repair_rate > 0) {
        printf(" at %.0f/s", mc_perf_opts.repair_rate);
    }
    printf(" (%.2f s)\n", mc_perf_shm->repair_wall);
    printf("  repair: member learns of a missing packet -> its repair "
           "arrives (engine);\n  one-way: root's send -> delivery, every "
           "message; us, p50/p99 +-10 %%\n");
    printf("  %-16s %8s %8s %8s %8s %8s | %8s %8s %8s | %6s\n", "receiver",
           "repaired", "p50", "p99", "max", "mean", "1way p50", "p99",
           "max", "nacks");

    ucast = mc_perf_shm->root_cnt.tx_repair_ucast;
    mcast = mc_perf_shm->root_cnt.tx_repair_mcast;
    for (r = 1; r <= nrecv; ++r) {
        x = &mc_perf_shm->rx[r];
        printf("  %-16s %8" PRIu64 " %8.0f %8.0f %8.0f %8.0f | %8.0f %8.0f "
               "%8.0f | %6" PRIu64 "\n", mc_perf_host(r, host, sizeof(host)),
               x->rep.repaired,
               mc_perf_quantile_us(x->rep.lat_hist, x->rep.repaired,
                                   x->rep.lat_max_ns, 0.5),
               mc_perf_quantile_us(x->rep.lat_hist, x->rep.repaired,
                                   x->rep.lat_max_ns, 0.99),
               x->rep.repaired ? x->rep.lat_max_ns / 1e3 : NAN,
               x->rep.repaired ?
               x->rep.lat_sum_ns / 1e3 / x->rep.repaired : NAN,
               mc_perf_quantile_us(x->lat, x->lat_count, x->lat_max, 0.5),
               mc_perf_quantile_us(x->lat, x->lat_count, x->lat_max, 0.99),
               x->lat_max / 1e3, x->cnt.tx_nack);
        for (i = 0; i < MC_PERF_LAT_BUCKETS; ++i) {
            rep_all[i] += x->rep.lat_hist[i];
        }
        rep_count += x->rep.repaired;
        rep_sum   += x->rep.lat_sum_ns;
        rep_max    = ucs_max(rep_max, x->rep.lat_max_ns);
        ucast     += x->cnt.tx_repair_ucast; /* as parents */
        mcast     += x->cnt.tx_repair_mcast;
        nacks     += x->cnt.tx_nack;
    }
    printf("  %-16s %8" PRIu64 " %8.0f %8.0f %8.0f %8.0f | %8s %8s %8s | "
           "%6" PRIu64 "\n", "all", rep_count,
           mc_perf_quantile_us(rep_all, rep_count, rep_max, 0.5),
           mc_perf_quantile_us(rep_all, rep_count, rep_max, 0.99),
           rep_count ? rep_max / 1e3 : NAN,
           rep_count ? rep_sum / 1e3 / rep_count : NAN, "", "", "", nacks);
    printf("  repairs sent: %" PRIu64 " unicast (root %" PRIu64 ", parents %"
           PRIu64 "), %" PRIu64 " re-multicast; root paced %" PRIu64
           " times\n", ucast, mc_perf_shm->root_cnt.tx_repair_ucast,
           ucast - mc_perf_shm->root_cnt.tx_repair_ucast, mcast,
           mc_perf_shm->root_cnt.tx_paced);
}

static void mc_perf_print_fanout(void)
{
    unsigned n, s, var;
    mc_perf_result_t *res;
    char size_str[16];

    printf("\nOne root to N receivers: a stream of back-to-back messages, "
           "until every receiver has the last\n");
    printf("  MB/s of payload per receiver (higher is better) / root CPU "
           "ms per MB sent to all (lower is better)\n");
    printf("  %-4s %-6s", "N", "size");
    for (var = 0; var < MC_PERF_VAR_LAST; ++var) {
        if (mc_perf_opts.vars & (1u << var)) {
            printf(" | %22s", mc_perf_var_names[var]);
        }
    }
    printf("\n");
    for (n = 0; n < mc_perf_opts.num_nrecv; ++n) {
        for (s = 0; s < mc_perf_opts.num_sizes; ++s) {
            perf_size_str(mc_perf_opts.sizes[s], size_str, sizeof(size_str));
            printf("  %-4u %-6s", mc_perf_opts.nrecv[n], size_str);
            for (var = 0; var < MC_PERF_VAR_LAST; ++var) {
                if (!(mc_perf_opts.vars & (1u << var))) {
                    continue;
                }
                res = &mc_perf_shm->res[n][s][var];
                if (res->wall_s <= 0) {
                    printf(" | %22s", "-");
                } else {
                    printf(" | %8.1f MB/s %6.2f ms", res->mbps,
                           res->cpu_s * 1e3 / res->mbytes);
                }
            }
            printf("\n");
        }
    }

    if (!(mc_perf_opts.vars & (1u << MC_PERF_VAR_MCAST))) {
        return;
    }
    printf("\nmc_udp group, datagrams per message: the root read (its own "
           "multicast looped\n  back included: one per data packet) / "
           "the receivers sent (all control)\n");
    for (n = 0; n < mc_perf_opts.num_nrecv; ++n) {
        for (s = 0; s < mc_perf_opts.num_sizes; ++s) {
            res = &mc_perf_shm->res[n][s][MC_PERF_VAR_MCAST];
            if (res->msgs == 0) {
                continue;
            }
            perf_size_str(mc_perf_opts.sizes[s], size_str, sizeof(size_str));
            printf("  %-4u %-6s %8.2f / %8.2f\n", mc_perf_opts.nrecv[n],
                   size_str, (double)res->root_rx / res->msgs,
                   (double)res->recv_tx / res->msgs);
        }
    }
}


/* ------------------------------------------------------------------------ */
/* Options                                                                  */

static void mc_perf_usage(FILE *stream)
{
    fprintf(stream,
"Usage: ucx_mc_perf [options]\n"
"Benchmark of mc_udp: one root (rank 0) and N receivers, forked here.\n"
"  -t TESTS     fanout,repair (default fanout)\n"
"  -n N,...     receivers per run (default 1,2,3); more processes than\n"
"               CPUs measure the scheduler too\n"
"  -s SIZES     fanout message sizes, 16 B .. 8 KiB (default 64,1k,8k)\n"
"  -v VARIANTS  fanout variants: mcast,p2p,tcp (default all)\n"
"  -b BYTES     fanout bytes per receiver and cell (default 8m)\n"
"  -m MSGS      repair: messages (default 10000)\n"
"  -S SIZE      repair: message size (default 1k)\n"
"  -r RATE      repair: messages per second (default 2000; 0: back to\n"
"               back)\n"
"  -d DEV       network device (default lo; eth0 on the multi-host bed)\n"
"  -N NS,...    network namespace of rank 0, 1, ... (a path, or a name\n"
"               under /var/run/netns): run the ranks on the bed's hosts\n"
"  -L LABEL     printed with the repair results (e.g. the loss applied)\n"
"  -q           quick: little data (a check that every byte arrives)\n"
"  -U           do not pin the processes (by default, one per CPU when\n"
"               they are not more than the CPUs)\n"
"  -T SECONDS   bound of every wait and of the whole run (default 300)\n"
"  -h           this help\n"
"Environment: UCX_MC_UDP_* configure the transport (docs/multicast.md).\n");
}

static void mc_perf_parse_list(const char *arg, unsigned *vals,
                               unsigned *num_p, unsigned max, char opt,
                               unsigned min)
{
    char *copy = strdup(arg), *tok, *save = NULL;

    *num_p = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (*num_p >= max) {
            perf_die("-%c: at most %u values", opt, max);
        }
        vals[(*num_p)++] = perf_parse_uint(tok, opt, min);
    }
    free(copy);
    if (*num_p == 0) {
        perf_die("-%c needs a value", opt);
    }
}

static unsigned mc_perf_parse_names(const char *arg, const char **names,
                                    unsigned num, char opt)
{
    char *copy = strdup(arg), *tok, *save = NULL;
    unsigned mask = 0, i;

    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; (i < num) && strcmp(tok, names[i]); ++i) {
        }
        if (i == num) {
            perf_die("-%c: unknown '%s'", opt, tok);
        }
        mask |= 1u << i;
    }
    free(copy);
    return mask;
}

static void mc_perf_parse_netns(const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL, path[512];

    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (mc_perf_opts.num_netns >= MC_PERF_MAX_PROCS) {
            perf_die("-N: at most %u namespaces", MC_PERF_MAX_PROCS);
        }
        snprintf(path, sizeof(path), "%s%s",
                 strchr(tok, '/') ? "" : "/var/run/netns/", tok);
        mc_perf_opts.netns[mc_perf_opts.num_netns++] = strdup(path);
    }
    free(copy);
}

static void mc_perf_parse_opts(int argc, char **argv)
{
    static const char *tests[] = {"fanout", "repair"};
    static const char *vars[]  = {"mcast", "p2p", "tcp"};
    size_t size;
    unsigned i;
    int c;

    mc_perf_opts.tests        = MC_PERF_TEST_FANOUT;
    mc_perf_opts.nrecv[0]     = 1;
    mc_perf_opts.nrecv[1]     = 2;
    mc_perf_opts.nrecv[2]     = 3;
    mc_perf_opts.num_nrecv    = 3;
    mc_perf_opts.sizes[0]     = 64;
    mc_perf_opts.sizes[1]     = 1024;
    mc_perf_opts.sizes[2]     = 8192;
    mc_perf_opts.num_sizes    = 3;
    mc_perf_opts.vars         = (1u << MC_PERF_VAR_LAST) - 1;
    mc_perf_opts.dev          = "lo";
    mc_perf_opts.repair_size  = 1024;
    mc_perf_opts.repair_msgs  = 10000;
    mc_perf_opts.repair_rate  = 2000;
    mc_perf_opts.fanout_bytes = 8ul << 20;
    mc_perf_opts.timeout      = 300;

    while ((c = getopt(argc, argv, "t:n:s:v:b:m:S:r:d:N:L:qUT:h")) != -1) {
        switch (c) {
        case 't':
            mc_perf_opts.tests = mc_perf_parse_names(optarg, tests, 2, 't');
            break;
        case 'n':
            mc_perf_parse_list(optarg, mc_perf_opts.nrecv,
                               &mc_perf_opts.num_nrecv, MC_PERF_MAX_NLIST,
                               'n', 1);
            break;
        case 's':
            perf_parse_sizes(optarg, mc_perf_opts.sizes,
                             &mc_perf_opts.num_sizes, MC_PERF_MAX_SIZES,
                             64ul << 10);
            break;
        case 'v':
            mc_perf_opts.vars = mc_perf_parse_names(optarg, vars, 3, 'v');
            break;
        case 'b':
            if (perf_parse_size(optarg, &mc_perf_opts.fanout_bytes)) {
                perf_die("-b: bad size '%s'", optarg);
            }
            break;
        case 'm':
            mc_perf_opts.repair_msgs = perf_parse_uint(optarg, 'm', 1);
            break;
        case 'S':
            if (perf_parse_size(optarg, &size) || (size < MC_PERF_HDR_LEN) ||
                (size % 8 != 0)) {
                perf_die("-S: a multiple of 8, at least %d", MC_PERF_HDR_LEN);
            }
            mc_perf_opts.repair_size = size;
            break;
        case 'r':
            mc_perf_opts.repair_rate = atof(optarg);
            break;
        case 'd':
            mc_perf_opts.dev = optarg;
            break;
        case 'N':
            mc_perf_parse_netns(optarg);
            break;
        case 'L':
            mc_perf_opts.label = optarg;
            break;
        case 'q':
            mc_perf_opts.quick = 1;
            break;
        case 'U':
            mc_perf_opts.no_bind = 1;
            break;
        case 'T':
            mc_perf_opts.timeout = atof(optarg);
            break;
        case 'h':
            mc_perf_usage(stdout);
            exit(0);
        default:
            mc_perf_usage(stderr);
            exit(1);
        }
    }

    for (i = 0; i < mc_perf_opts.num_sizes; ++i) {
        if (mc_perf_opts.sizes[i] < MC_PERF_HDR_LEN) {
            perf_die("-s: sizes of at least %d bytes", MC_PERF_HDR_LEN);
        }
    }
    for (i = 0; i < mc_perf_opts.num_nrecv; ++i) {
        if (mc_perf_opts.nrecv[i] + 1 > MC_PERF_MAX_PROCS) {
            perf_die("-n: at most %u receivers", MC_PERF_MAX_PROCS - 1);
        }
        if ((mc_perf_opts.num_netns > 0) &&
            (mc_perf_opts.nrecv[i] + 1 > mc_perf_opts.num_netns)) {
            perf_die("-n %u needs %u namespaces in -N", mc_perf_opts.nrecv[i],
                     mc_perf_opts.nrecv[i] + 1);
        }
    }
    if (mc_perf_opts.quick) {
        mc_perf_opts.fanout_bytes = 256ul << 10;
        mc_perf_opts.repair_msgs  = ucs_min(mc_perf_opts.repair_msgs, 2000);
    }
    perf_sup.wait_timeout = mc_perf_opts.timeout;
    mc_perf_opts.bind     = perf_usable_cpus(mc_perf_opts.cpus,
                                             &mc_perf_opts.ncpus) &&
                            !mc_perf_opts.no_bind;
}


int main(int argc, char **argv)
{
    double start, deadline;
    int failed = 0, bind;
    unsigned n_idx, nprocs, i;
    perf_cpu_t cpu_start;
    double own_start;
    char label[32];

    setvbuf(stdout, NULL, _IOLBF, 0);
    perf_sup.name = "mc_perf";
    mc_perf_parse_opts(argc, argv);

    mc_perf_shm     = perf_map_shared(sizeof(*mc_perf_shm));
    perf_sup.failed = &mc_perf_shm->failed;
    /* another run's group on the same multicast address is another
     * stream (group id and epoch differ): it costs no data */
    mc_perf_shm->group_base = ((uint64_t)(mc_perf_ns() ^ getpid()) << 16) &
                              ~0xffffull;
    perf_handle_signals();

    printf("ucx_mc_perf: mc_udp, one root to N receivers\n");
    perf_print_machine(mc_perf_opts.ncpus);
    printf("  device %s; ranks: ", mc_perf_opts.dev);
    if (mc_perf_opts.num_netns == 0) {
        printf("all in this network namespace\n");
    } else {
        for (i = 0; i < mc_perf_opts.num_netns; ++i) {
            printf("%s%s", i ? ", " : "", mc_perf_opts.netns[i]);
        }
        printf("\n");
    }

    perf_cpu_start(&cpu_start, &own_start);
    start    = perf_now();
    deadline = start + mc_perf_opts.timeout;
    for (n_idx = 0; n_idx < mc_perf_opts.num_nrecv; ++n_idx) {
        nprocs = mc_perf_opts.nrecv[n_idx] + 1;
        bind   = mc_perf_opts.bind && (nprocs <= mc_perf_opts.ncpus);
        mc_perf_shm->barrier.count = 0;
        snprintf(label, sizeof(label), "N=%u", nprocs - 1);
        if (perf_run_procs(nprocs, mc_perf_opts.cpus, bind, deadline,
                           mc_perf_opts.timeout, label, mc_perf_child,
                           &n_idx) != 0) {
            failed = 1;
            break;
        }
        if (mc_perf_opts.tests & MC_PERF_TEST_REPAIR) {
            mc_perf_print_repair(n_idx);
        }
    }
    if (!failed && (mc_perf_opts.tests & MC_PERF_TEST_FANOUT)) {
        mc_perf_print_fanout();
    }

    printf("\nTotal time %.1f s%s\n", perf_now() - start,
           failed ? "; FAILED: see the errors above" : "");
    perf_print_noise(&cpu_start, own_start);
    munmap(mc_perf_shm, sizeof(*mc_perf_shm));
    return failed ? 1 : 0;
}
