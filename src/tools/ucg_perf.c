/**
 * ucx-o2m: ucg_perf, latency of the UCG collectives with and without the
 * one-to-many transports.
 *
 * For every group size N it forks N processes on this host.  Each process
 * opens two UCG contexts through the public API only (api/ucg.h):
 *  - "o2m": the default configuration (UCX_UCG_* from the environment), so
 *    host-local phases may use sm_bcast / sm_incast;
 *  - "p2p": the same configuration with O2M=n, so every plan is
 *    point-to-point over UCP,
 * and creates one group over the N processes on each.  Both variants are
 * measured in the same run, in alternating blocks of iterations (the order
 * flips every round), so that they see the same machine noise.
 *
 * Method (as the OSU micro-benchmarks): per block, warm-up iterations, then
 * timed iterations, each preceded by a barrier of the same variant outside
 * the timed region (none for the barrier itself).  Each process averages
 * its own timed iterations over all blocks; the table shows the average,
 * minimum and maximum of these per-process latencies.
 *
 * Correctness: the first iteration of every block works on fresh data (a
 * new stamp, receive buffers poisoned) and its result is checked in full
 * against values computed locally; a mismatch, an error or a wait longer
 * than -W seconds stops the run, and the tool exits non-zero.
 *
 * The out-of-band allgather of group creation, the barriers between blocks
 * and the results use an anonymous shared mapping made before the fork.
 */
#include "api/ucg.h"
#include "perf_lib.h"

#include <ucp/api/ucp.h>
#include <ucs/type/status.h>

#include <sys/mman.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define UCG_PERF_MAX_PROCS      128
#define UCG_PERF_MAX_NLIST      16
#define UCG_PERF_MAX_SIZES      32
#define UCG_PERF_MAX_SIZE       (64ul << 20)
#define UCG_PERF_LINE           64
/* One member's share of an out-of-band allgather (group addresses) */
#define UCG_PERF_OOB_SLOT       (64ul << 10)
/* Plans printed by rank 0, shown by the parent */
#define UCG_PERF_PLAN_TEXT      (256ul << 10)

/* Iterations are scaled down above this size */
#define UCG_PERF_FULL_SIZE      (8ul << 10)
#define UCG_PERF_MIN_ITERS      100

/* Element values are below this prime, so sums over 128 members fit int32 */
#define UCG_PERF_VALUE_MOD      1048573ull

typedef enum {
    UCG_PERF_VAR_O2M,
    UCG_PERF_VAR_P2P,
    UCG_PERF_VAR_LAST
} ucg_perf_var_t;

static const char *ucg_perf_var_names[UCG_PERF_VAR_LAST] = {
    [UCG_PERF_VAR_O2M] = "o2m",
    [UCG_PERF_VAR_P2P] = "p2p"
};

/* Collectives in the order they run and are printed, with their -c names */
static const struct {
    ucg_coll_type_t type;
    const char      *name;
} ucg_perf_colls[] = {
    {UCG_COLL_BCAST,     "bcast"},
    {UCG_COLL_ALLREDUCE, "allreduce"},
    {UCG_COLL_REDUCE,    "reduce"},
    {UCG_COLL_BARRIER,   "barrier"},
    {UCG_COLL_GATHER,    "gather"},
    {UCG_COLL_SCATTER,   "scatter"},
    {UCG_COLL_ALLGATHER, "allgather"},
    /* size: each member's block */
    {UCG_COLL_REDUCE_SCATTER_BLOCK, "reduce_scatter_block"},
    {UCG_COLL_SCAN,      "scan"},
    {UCG_COLL_EXSCAN,    "exscan"},
    /* every member's count the same (the layout of allgather) */
    {UCG_COLL_ALLGATHERV, "allgatherv"}
};

#define UCG_PERF_NUM_COLLS (sizeof(ucg_perf_colls) / sizeof(ucg_perf_colls[0]))

/* Without -c: the collectives up to allgather (the others with -c) */
#define UCG_PERF_DEFAULT_COLLS ((1u << 7) - 1)


typedef struct {
    unsigned    nprocs[UCG_PERF_MAX_NLIST];
    unsigned    num_nprocs;
    size_t      sizes[UCG_PERF_MAX_SIZES];
    unsigned    num_sizes;
    unsigned    colls;        /* Bit i: ucg_perf_colls[i] */
    unsigned    iters;        /* Timed iterations per variant, small sizes */
    unsigned    warmup;       /* Warm-up iterations per variant (0: auto) */
    unsigned    rounds;       /* Blocks per variant */
    ucg_dtype_t dtype;        /* UCG_DT_INT32 or UCG_DT_DOUBLE */
    unsigned    root;
    int         quiet;        /* No plans */
    const char  *csv;
    double      timeout;      /* One group size, seconds */
    int         bind;         /* Pin processes to CPUs when N <= CPUs */
    unsigned    ncpus;        /* Online CPUs this process may run on */
    int         cpus[CPU_SETSIZE];
} ucg_perf_opts_t;


/* Anonymous shared memory, mapped before the fork */
typedef struct {
    perf_barrier_t    barrier;
    volatile int32_t  failed     __attribute__((aligned(UCG_PERF_LINE)));
    /* Arrivals at checked barrier iterations */
    volatile uint32_t arrived    __attribute__((aligned(UCG_PERF_LINE)));
    /* Per-process average latency (seconds), NAN when not measured */
    double            lat[UCG_PERF_MAX_NLIST][UCG_PERF_NUM_COLLS]
                         [UCG_PERF_MAX_SIZES][UCG_PERF_VAR_LAST]
                         [UCG_PERF_MAX_PROCS];
    unsigned          iters[UCG_PERF_MAX_NLIST][UCG_PERF_NUM_COLLS]
                           [UCG_PERF_MAX_SIZES];
    size_t            plan_len;
    char              plans[UCG_PERF_PLAN_TEXT];
    uint8_t           oob[UCG_PERF_MAX_PROCS][UCG_PERF_OOB_SLOT]
                      __attribute__((aligned(UCG_PERF_LINE)));
} ucg_perf_shared_t;


/* A process of the group */
typedef struct {
    unsigned      rank;
    unsigned      nprocs;
    unsigned      n_idx;
    int           oversub;
    int           ready;          /* Contexts may be progressed */
    ucg_context_h ctx[UCG_PERF_VAR_LAST];
    ucg_group_h   group[UCG_PERF_VAR_LAST];
    ucg_coll_h    barrier[UCG_PERF_VAR_LAST];
    void          *sbuf;
    void          *rbuf;
    size_t        es;             /* Element size */
    uint64_t      stamp;          /* Of the current block, same everywhere */
    unsigned      barriers_checked;
} ucg_perf_proc_t;

/* One measured cell */
typedef struct {
    unsigned          c_idx;
    unsigned          s_idx;
    ucg_coll_type_t   type;
    size_t            size;       /* Bytes per member */
    size_t            count;      /* Elements per member */
    unsigned          iters;      /* Timed, per block */
    unsigned          warmup;     /* Per block */
    ucg_coll_params_t params;
    size_t            vcounts[UCG_PERF_MAX_PROCS]; /* allgatherv */
    size_t            vdispls[UCG_PERF_MAX_PROCS];
} ucg_perf_cell_t;


static ucg_perf_opts_t   ucg_perf_opts;
static ucg_perf_shared_t *ucg_perf_shm;


/*
 * Barrier of the processes on the shared mapping.  Between blocks it also
 * progresses both contexts, so that a member never waits here for a peer
 * that needs its progress to complete a collective; during group creation
 * (inside ucg_group_create) it does not.
 */
static void ucg_perf_progress(void *arg)
{
    ucg_perf_proc_t *p = arg;
    unsigned var;

    if (p->ready) {
        for (var = 0; var < UCG_PERF_VAR_LAST; ++var) {
            ucg_progress(p->ctx[var]);
        }
    }
}

static void ucg_perf_shm_barrier(ucg_perf_proc_t *p, const char *what)
{
    perf_barrier(&ucg_perf_shm->barrier, p->nprocs, what, ucg_perf_progress,
                 p);
}

/* ucg_oob_allgather_func_t over the shared mapping */
static ucs_status_t ucg_perf_oob_allgather(void *arg, const void *sbuf,
                                           void *rbuf, size_t len)
{
    ucg_perf_proc_t *p = arg;
    unsigned rank;

    if (len > UCG_PERF_OOB_SLOT) {
        /* The others would wait for ever: stop them all */
        perf_die("out-of-band allgather of %zu bytes, at most %lu",
                 len, UCG_PERF_OOB_SLOT);
    }

    memcpy(ucg_perf_shm->oob[p->rank], sbuf, len);
    ucg_perf_shm_barrier(p, "the out-of-band allgather (in)");
    for (rank = 0; rank < p->nprocs; ++rank) {
        memcpy((char*)rbuf + (rank * len), ucg_perf_shm->oob[rank], len);
    }
    /* Nobody writes the next allgather's data before all have read */
    ucg_perf_shm_barrier(p, "the out-of-band allgather (out)");
    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* Data and checks                                                          */

/* Element @a i of member @a rank's data in the block of @a stamp */
static inline uint64_t ucg_perf_value(uint64_t stamp, unsigned rank, size_t i)
{
    return ((stamp * 1000003ull) + (rank * 7919ull) +
            (i * 2654435761ull)) % UCG_PERF_VALUE_MOD;
}

static inline void ucg_perf_set(void *buf, size_t i, uint64_t value)
{
    if (ucg_perf_opts.dtype == UCG_DT_INT32) {
        ((int32_t*)buf)[i] = (int32_t)value;
    } else {
        ((double*)buf)[i] = (double)value;
    }
}

/* Every int32 value is exact in a double */
static inline double ucg_perf_get(const void *buf, size_t i)
{
    if (ucg_perf_opts.dtype == UCG_DT_INT32) {
        return ((const int32_t*)buf)[i];
    }
    return ((const double*)buf)[i];
}

static int ucg_perf_is_root(const ucg_perf_proc_t *p)
{
    return p->rank == ucg_perf_opts.root;
}

/* Fresh data for the first iteration of a block: inputs of this stamp,
 * receive buffers poisoned (0xff bytes: -1 or NaN, never expected) */
static void ucg_perf_prepare(ucg_perf_proc_t *p, const ucg_perf_cell_t *cell)
{
    size_t count = cell->count, bytes = cell->size, i;
    unsigned rank;

    switch (cell->type) {
    case UCG_COLL_BCAST:
        if (ucg_perf_is_root(p)) {
            for (i = 0; i < count; ++i) {
                ucg_perf_set(p->rbuf, i, ucg_perf_value(p->stamp, p->rank,
                                                        i));
            }
        } else {
            memset(p->rbuf, 0xff, bytes);
        }
        break;
    case UCG_COLL_REDUCE:
    case UCG_COLL_ALLREDUCE:
    case UCG_COLL_GATHER:
    case UCG_COLL_ALLGATHER:
    case UCG_COLL_ALLGATHERV:
        for (i = 0; i < count; ++i) {
            ucg_perf_set(p->sbuf, i, ucg_perf_value(p->stamp, p->rank, i));
        }
        memset(p->rbuf, 0xff, ((cell->type == UCG_COLL_GATHER) ||
                               (cell->type == UCG_COLL_ALLGATHER) ||
                               (cell->type == UCG_COLL_ALLGATHERV)) ?
                              (bytes * p->nprocs) : bytes);
        break;
    case UCG_COLL_SCAN:
    case UCG_COLL_EXSCAN:
    case UCG_COLL_REDUCE_SCATTER_BLOCK:
        /* reduce_scatter_block: a block for every member */
        if (cell->type == UCG_COLL_REDUCE_SCATTER_BLOCK) {
            count *= p->nprocs;
        }
        for (i = 0; i < count; ++i) {
            ucg_perf_set(p->sbuf, i, ucg_perf_value(p->stamp, p->rank, i));
        }
        memset(p->rbuf, 0xff, bytes);
        break;
    case UCG_COLL_SCATTER:
        if (ucg_perf_is_root(p)) {
            for (rank = 0; rank < p->nprocs; ++rank) {
                for (i = 0; i < count; ++i) {
                    ucg_perf_set(p->sbuf, (rank * count) + i,
                                 ucg_perf_value(p->stamp, rank, i));
                }
            }
        }
        memset(p->rbuf, 0xff, bytes);
        break;
    default:
        break;
    }
}

static void __attribute__((noreturn))
ucg_perf_mismatch(const ucg_perf_cell_t *cell, const char *buf_name,
                  size_t idx, double got, double expected)
{
    perf_die("WRONG RESULT: %s element %zu is %.17g, expected %.17g "
             "(%s %s, count %zu)", buf_name, idx, got, expected,
             ucg_perf_colls[cell->c_idx].name,
             ucg_dtype_name(ucg_perf_opts.dtype), cell->count);
}

/* Check @a nblocks blocks of rbuf: block b holds member b's data (or
 * @a only_rank's when it is not -1) */
static void ucg_perf_check_blocks(ucg_perf_proc_t *p,
                                  const ucg_perf_cell_t *cell,
                                  unsigned nblocks, int only_rank)
{
    size_t count = cell->count, i;
    unsigned b, rank;
    double expected, got;

    for (b = 0; b < nblocks; ++b) {
        rank = (only_rank >= 0) ? (unsigned)only_rank : b;
        for (i = 0; i < count; ++i) {
            expected = (double)ucg_perf_value(p->stamp, rank, i);
            got      = ucg_perf_get(p->rbuf, (b * count) + i);
            if (got != expected) {
                ucg_perf_mismatch(cell, "rbuf", (b * count) + i, got,
                                  expected);
            }
        }
    }
}

static void ucg_perf_check(ucg_perf_proc_t *p, const ucg_perf_cell_t *cell)
{
    size_t count = cell->count, i;
    uint64_t sum;
    unsigned rank;
    double got;

    switch (cell->type) {
    case UCG_COLL_BCAST:
        ucg_perf_check_blocks(p, cell, 1, ucg_perf_opts.root);
        break;
    case UCG_COLL_REDUCE:
    case UCG_COLL_ALLREDUCE:
        if ((cell->type == UCG_COLL_REDUCE) && !ucg_perf_is_root(p)) {
            break;
        }
        for (i = 0; i < count; ++i) {
            for (sum = 0, rank = 0; rank < p->nprocs; ++rank) {
                sum += ucg_perf_value(p->stamp, rank, i);
            }
            got = ucg_perf_get(p->rbuf, i);
            if (got != (double)sum) {
                ucg_perf_mismatch(cell, "rbuf", i, got, (double)sum);
            }
        }
        break;
    case UCG_COLL_SCAN:
    case UCG_COLL_EXSCAN:
    case UCG_COLL_REDUCE_SCATTER_BLOCK:
        /* scan: members 0..rank; exscan: 0..rank-1 (member 0: nothing);
         * reduce_scatter_block: every member's block of this member */
        if ((cell->type == UCG_COLL_EXSCAN) && (p->rank == 0)) {
            break;
        }
        for (i = 0; i < count; ++i) {
            for (sum = 0, rank = 0;
                 rank < ((cell->type == UCG_COLL_SCAN) ? p->rank + 1 :
                         (cell->type == UCG_COLL_EXSCAN) ? p->rank :
                         p->nprocs);
                 ++rank) {
                sum += ucg_perf_value(p->stamp, rank,
                                      (cell->type ==
                                       UCG_COLL_REDUCE_SCATTER_BLOCK) ?
                                      (p->rank * count) + i : i);
            }
            got = ucg_perf_get(p->rbuf, i);
            if (got != (double)sum) {
                ucg_perf_mismatch(cell, "rbuf", i, got, (double)sum);
            }
        }
        break;
    case UCG_COLL_GATHER:
        if (ucg_perf_is_root(p)) {
            ucg_perf_check_blocks(p, cell, p->nprocs, -1);
        }
        break;
    case UCG_COLL_SCATTER:
        ucg_perf_check_blocks(p, cell, 1, p->rank);
        break;
    case UCG_COLL_ALLGATHER:
    case UCG_COLL_ALLGATHERV:
        ucg_perf_check_blocks(p, cell, p->nprocs, -1);
        break;
    case UCG_COLL_BARRIER:
        /* Every member arrived before anyone left */
        ++p->barriers_checked;
        if (__atomic_load_n(&ucg_perf_shm->arrived, __ATOMIC_ACQUIRE) <
            (p->barriers_checked * p->nprocs)) {
            perf_die("WRONG RESULT: barrier completed before all members "
                     "entered it (%u of %u arrivals)",
                     __atomic_load_n(&ucg_perf_shm->arrived,
                                     __ATOMIC_ACQUIRE),
                     p->barriers_checked * p->nprocs);
        }
        break;
    default:
        break;
    }
}


/* ------------------------------------------------------------------------ */
/* Measurement, in a child                                                  */

/* Start, or wait for, a collective: bounded, yielding when oversubscribed */
static inline void ucg_perf_wait(ucg_perf_proc_t *p, ucg_coll_h coll,
                                 const char *what)
{
    perf_waiter_t w;
    ucs_status_t status;

    perf_waiter_init(&w, what, NULL, NULL);
    while ((status = ucg_coll_test(coll)) == UCS_INPROGRESS) {
        if (p->oversub) {
            sched_yield();
        }
        perf_waiter_check(&w);
    }
    if (status != UCS_OK) {
        perf_die("%s failed: %s", what, ucs_status_string(status));
    }
}

static inline void ucg_perf_run_once(ucg_perf_proc_t *p, ucg_coll_h coll,
                                     const char *what)
{
    ucs_status_t status = ucg_coll_start(coll);

    if (status != UCS_OK) {
        perf_die("ucg_coll_start(%s): %s", what,
                 ucs_status_string(status));
    }
    ucg_perf_wait(p, coll, what);
}

/* One block: returns the time of its timed iterations, seconds */
static double ucg_perf_block(ucg_perf_proc_t *p, const ucg_perf_cell_t *cell,
                             ucg_perf_var_t var, ucg_coll_h coll)
{
    int is_barrier = (cell->type == UCG_COLL_BARRIER);
    unsigned it, total = cell->warmup + cell->iters;
    double t0, elapsed = 0;

    ucg_perf_prepare(p, cell);
    for (it = 0; it < total; ++it) {
        if (!is_barrier) {
            ucg_perf_run_once(p, p->barrier[var], "the barrier before an "
                              "iteration");
        } else if (it == 0) {
            __atomic_add_fetch(&ucg_perf_shm->arrived, 1, __ATOMIC_ACQ_REL);
        }

        t0 = perf_now();
        ucg_perf_run_once(p, coll, "the measured collective");
        if (it >= cell->warmup) {
            elapsed += perf_now() - t0;
        }

        if (it == 0) {
            ucg_perf_check(p, cell);
        }
    }
    return elapsed;
}

/* Rank 0: this variant's plan of @a cell, into the shared text */
static void ucg_perf_save_plan(ucg_perf_proc_t *p, const ucg_perf_cell_t *cell,
                               ucg_perf_var_t var)
{
    ucg_perf_shared_t *shm = ucg_perf_shm;
    char size[32], *text = NULL;
    size_t len = 0, room;
    ucs_status_t status;
    FILE *stream;

    stream = open_memstream(&text, &len);
    if (stream == NULL) {
        perf_die("open_memstream: %m");
    }

    if (cell->type == UCG_COLL_BARRIER) {
        snprintf(size, sizeof(size), "-");
    } else {
        snprintf(size, sizeof(size), "%zu B", cell->size);
    }
    fprintf(stream, "%s, %s, %s:\n", ucg_perf_colls[cell->c_idx].name, size,
            ucg_perf_var_names[var]);
    status = ucg_coll_plan_print(p->group[var], &cell->params, stream);
    if (status != UCS_OK) {
        fprintf(stream, "  (ucg_coll_plan_print: %s)\n",
                ucs_status_string(status));
    }
    fclose(stream);

    room = sizeof(shm->plans) - 1 - shm->plan_len;
    len  = (len < room) ? len : room;
    memcpy(shm->plans + shm->plan_len, text, len);
    shm->plan_len += len;
    shm->plans[shm->plan_len] = '\0';
    free(text);
}

static unsigned ucg_perf_cell_iters(size_t size)
{
    unsigned iters = ucg_perf_opts.iters;
    unsigned min   = (iters < UCG_PERF_MIN_ITERS) ? iters : UCG_PERF_MIN_ITERS;
    double scaled;

    if (size <= UCG_PERF_FULL_SIZE) {
        return iters;
    }
    scaled = (double)iters * UCG_PERF_FULL_SIZE / size;
    return (scaled < min) ? min : (unsigned)scaled;
}

static unsigned ucg_perf_div_up(unsigned a, unsigned b)
{
    return (a + b - 1) / b;
}

static void ucg_perf_cell_init(ucg_perf_proc_t *p, ucg_perf_cell_t *cell,
                               unsigned c_idx, unsigned s_idx)
{
    unsigned rounds = ucg_perf_opts.rounds;
    unsigned iters, warmup, i;

    memset(cell, 0, sizeof(*cell));
    cell->c_idx = c_idx;
    cell->s_idx = s_idx;
    cell->type  = ucg_perf_colls[c_idx].type;
    cell->size  = (cell->type == UCG_COLL_BARRIER) ? 0 :
                  ucg_perf_opts.sizes[s_idx];
    cell->count = cell->size / p->es;

    iters  = ucg_perf_cell_iters(cell->size);
    warmup = ucg_perf_opts.warmup ? ucg_perf_opts.warmup : (iters / 10);
    cell->iters  = ucg_perf_div_up(iters, rounds);
    /* At least one: the checked first iteration of the block */
    cell->warmup = ucg_perf_div_up(warmup, rounds);
    if (cell->warmup == 0) {
        cell->warmup = 1;
    }

    cell->params.type  = cell->type;
    cell->params.root  = ucg_perf_opts.root;
    cell->params.count = cell->count;
    cell->params.dtype = ucg_perf_opts.dtype;
    cell->params.op    = UCG_OP_SUM;
    if (cell->type != UCG_COLL_BARRIER) {
        cell->params.sbuf = p->sbuf;
        cell->params.rbuf = p->rbuf;
    }
    if (cell->type == UCG_COLL_ALLGATHERV) {
        for (i = 0; i < p->nprocs; ++i) {
            cell->vcounts[i] = cell->count;
            cell->vdispls[i] = (size_t)i * cell->count;
        }
        cell->params.rcounts = cell->vcounts;
        cell->params.rdispls = cell->vdispls;
    }
}

static void ucg_perf_run_cell(ucg_perf_proc_t *p, unsigned c_idx,
                              unsigned s_idx)
{
    ucg_coll_h coll[UCG_PERF_VAR_LAST];
    double elapsed[UCG_PERF_VAR_LAST] = {0};
    ucg_perf_cell_t cell;
    unsigned round, i, var;

    ucg_perf_cell_init(p, &cell, c_idx, s_idx);
    snprintf(perf_sup.context, sizeof(perf_sup.context), "N=%u %s %zu B",
             p->nprocs, ucg_perf_colls[c_idx].name, cell.size);

    for (var = 0; var < UCG_PERF_VAR_LAST; ++var) {
        PERF_CHECK_OK(ucg_coll_init(p->group[var], &cell.params,
                                        &coll[var]), "ucg_coll_init");
        if ((p->rank == 0) && (s_idx == 0) && !ucg_perf_opts.quiet) {
            ucg_perf_save_plan(p, &cell, var);
        }
    }

    for (round = 0; round < ucg_perf_opts.rounds; ++round) {
        for (i = 0; i < UCG_PERF_VAR_LAST; ++i) {
            /* ABBA: neither variant always runs right after the other */
            var = (round & 1) ? (UCG_PERF_VAR_LAST - 1 - i) : i;
            snprintf(perf_sup.context, sizeof(perf_sup.context),
                     "N=%u %s %zu B, %s, round %u", p->nprocs,
                     ucg_perf_colls[c_idx].name, cell.size,
                     ucg_perf_var_names[var], round);
            ++p->stamp;
            elapsed[var] += ucg_perf_block(p, &cell, var, coll[var]);
            /* Blocks never overlap: all members finished this one */
            ucg_perf_shm_barrier(p, "the end of a block");
        }
    }

    for (var = 0; var < UCG_PERF_VAR_LAST; ++var) {
        ucg_perf_shm->lat[p->n_idx][c_idx][s_idx][var][p->rank] =
            elapsed[var] / ((double)cell.iters * ucg_perf_opts.rounds);
        ucg_coll_finalize(coll[var]);
    }
    if (p->rank == 0) {
        ucg_perf_shm->iters[p->n_idx][c_idx][s_idx] =
            cell.iters * ucg_perf_opts.rounds;
    }
    perf_sup.context[0] = '\0';
}

static void *ucg_perf_alloc(size_t size)
{
    void *ptr;

    if (posix_memalign(&ptr, 4096, size) != 0) {
        perf_die("cannot allocate %zu bytes", size);
    }
    memset(ptr, 0, size);
    return ptr;
}

static void ucg_perf_proc_init(ucg_perf_proc_t *p, unsigned rank,
                               unsigned nprocs, unsigned n_idx)
{
    ucg_coll_params_t bparams = {0};
    ucg_group_params_t gparams;
    ucg_context_params_t cparams;
    ucg_config_t *config;
    size_t max_size = 8;
    unsigned var, i;

    memset(p, 0, sizeof(*p));
    p->rank    = rank;
    p->nprocs  = nprocs;
    p->n_idx   = n_idx;
    p->oversub = nprocs > ucg_perf_opts.ncpus;
    p->es      = ucg_dtype_size(ucg_perf_opts.dtype);

    for (i = 0; i < ucg_perf_opts.num_sizes; ++i) {
        if (ucg_perf_opts.sizes[i] > max_size) {
            max_size = ucg_perf_opts.sizes[i];
        }
    }
    /* Scatter's send buffer and gather's receive buffer hold N blocks */
    p->sbuf = ucg_perf_alloc(max_size * nprocs);
    p->rbuf = ucg_perf_alloc(max_size * nprocs);

    snprintf(perf_sup.context, sizeof(perf_sup.context), "N=%u setup",
             nprocs);
    for (var = 0; var < UCG_PERF_VAR_LAST; ++var) {
        PERF_CHECK_OK(ucg_config_read(NULL, &config), "ucg_config_read");
        if (var == UCG_PERF_VAR_P2P) {
            PERF_CHECK_OK(ucg_config_modify(config, "O2M", "n"),
                              "ucg_config_modify(O2M=n)");
        }
        memset(&cparams, 0, sizeof(cparams));
        PERF_CHECK_OK(ucg_context_create(&cparams, config, &p->ctx[var]),
                          "ucg_context_create");
        ucg_config_release(config);
    }

    for (var = 0; var < UCG_PERF_VAR_LAST; ++var) {
        memset(&gparams, 0, sizeof(gparams));
        gparams.size          = nprocs;
        gparams.rank          = rank;
        gparams.oob_allgather = ucg_perf_oob_allgather;
        gparams.oob_arg       = p;
        PERF_CHECK_OK(ucg_group_create(p->ctx[var], &gparams,
                                           &p->group[var]),
                          "ucg_group_create");
        if ((ucg_group_size(p->group[var]) != nprocs) ||
            (ucg_group_rank(p->group[var]) != rank)) {
            perf_die("%s group: size %u rank %u, expected %u %u",
                     ucg_perf_var_names[var],
                     ucg_group_size(p->group[var]),
                     ucg_group_rank(p->group[var]), nprocs, rank);
        }

        bparams.type = UCG_COLL_BARRIER;
        PERF_CHECK_OK(ucg_coll_init(p->group[var], &bparams,
                                        &p->barrier[var]),
                          "ucg_coll_init(barrier)");
    }
    p->ready = 1;
    perf_sup.context[0] = '\0';
}

static void ucg_perf_proc_cleanup(ucg_perf_proc_t *p)
{
    unsigned var;

    /* Every collective completed everywhere before the groups go */
    ucg_perf_shm_barrier(p, "the end of the run");
    p->ready = 0;
    for (var = 0; var < UCG_PERF_VAR_LAST; ++var) {
        ucg_coll_finalize(p->barrier[var]);
        ucg_group_destroy(p->group[var]);
    }
    for (var = 0; var < UCG_PERF_VAR_LAST; ++var) {
        ucg_context_destroy(p->ctx[var]);
    }
    free(p->sbuf);
    free(p->rbuf);
}

static void ucg_perf_child(unsigned rank, void *arg)
{
    const unsigned *n_idx_p = arg;
    unsigned nprocs         = ucg_perf_opts.nprocs[*n_idx_p];
    ucg_perf_proc_t proc;
    unsigned c_idx, s_idx, num_sizes;

    ucg_perf_proc_init(&proc, rank, nprocs, *n_idx_p);
    for (c_idx = 0; c_idx < UCG_PERF_NUM_COLLS; ++c_idx) {
        if (!(ucg_perf_opts.colls & (1u << c_idx))) {
            continue;
        }
        num_sizes = (ucg_perf_colls[c_idx].type == UCG_COLL_BARRIER) ? 1 :
                    ucg_perf_opts.num_sizes;
        for (s_idx = 0; s_idx < num_sizes; ++s_idx) {
            ucg_perf_run_cell(&proc, c_idx, s_idx);
        }
    }
    ucg_perf_proc_cleanup(&proc);
}


/* ------------------------------------------------------------------------ */
/* Parent: fork, wait, print                                                */

/* Fork the processes of np @a n_idx; returns 0 when all exited with 0 */
static int ucg_perf_run_group(unsigned n_idx)
{
    unsigned nprocs = ucg_perf_opts.nprocs[n_idx];
    int bind        = ucg_perf_opts.bind && (nprocs <= ucg_perf_opts.ncpus);
    char label[32];

    ucg_perf_shm->barrier.count = 0;
    ucg_perf_shm->arrived   = 0;
    ucg_perf_shm->plan_len  = 0;
    ucg_perf_shm->plans[0]  = '\0';

    snprintf(label, sizeof(label), "N=%u", nprocs);
    return perf_run_procs(nprocs, ucg_perf_opts.cpus, bind,
                          perf_now() + ucg_perf_opts.timeout,
                          ucg_perf_opts.timeout, label, ucg_perf_child,
                          &n_idx);
}

/* Average, min and max over the ranks, microseconds; 0 if not measured */
static int ucg_perf_stats(const double *lat, unsigned nprocs, double *avg,
                          double *min, double *max)
{
    unsigned rank;

    *avg = 0;
    *min = INFINITY;
    *max = 0;
    for (rank = 0; rank < nprocs; ++rank) {
        if (isnan(lat[rank])) {
            return 0;
        }
        *avg += lat[rank];
        *min  = (lat[rank] < *min) ? lat[rank] : *min;
        *max  = (lat[rank] > *max) ? lat[rank] : *max;
    }
    *avg = *avg * 1e6 / nprocs;
    *min *= 1e6;
    *max *= 1e6;
    return 1;
}

static void ucg_perf_print_results(unsigned n_idx, FILE *csv)
{
    unsigned nprocs = ucg_perf_opts.nprocs[n_idx];
    double avg[UCG_PERF_VAR_LAST], min[UCG_PERF_VAR_LAST],
           max[UCG_PERF_VAR_LAST];
    unsigned c_idx, s_idx, num_sizes, var, ok;
    size_t size;
    char size_str[32];

    if (!ucg_perf_opts.quiet && (ucg_perf_shm->plan_len > 0)) {
        printf("\nN=%u: plans (rank 0's view) for the first size of each "
               "collective\n%s", nprocs, ucg_perf_shm->plans);
    }

    printf("\nN=%u%s: latency, usec (average over ranks of each rank's "
           "average; min/max over ranks)\n", nprocs,
           (nprocs > ucg_perf_opts.ncpus) ? " (oversubscribed)" : "");
    printf("%-10s %6s %6s | %9s %9s %9s | %9s %9s %9s | %7s\n", "collective",
           "size", "iters", "o2m avg", "min", "max", "p2p avg", "min", "max",
           "o2m/p2p");

    for (c_idx = 0; c_idx < UCG_PERF_NUM_COLLS; ++c_idx) {
        if (!(ucg_perf_opts.colls & (1u << c_idx))) {
            continue;
        }
        num_sizes = (ucg_perf_colls[c_idx].type == UCG_COLL_BARRIER) ? 1 :
                    ucg_perf_opts.num_sizes;
        for (s_idx = 0; s_idx < num_sizes; ++s_idx) {
            size = (ucg_perf_colls[c_idx].type == UCG_COLL_BARRIER) ? 0 :
                   ucg_perf_opts.sizes[s_idx];
            if (size == 0) {
                snprintf(size_str, sizeof(size_str), "-");
            } else {
                perf_size_str(size, size_str, sizeof(size_str));
            }

            ok = 1;
            for (var = 0; var < UCG_PERF_VAR_LAST; ++var) {
                ok &= ucg_perf_stats(ucg_perf_shm->lat[n_idx][c_idx][s_idx]
                                                      [var], nprocs,
                                     &avg[var], &min[var], &max[var]);
            }
            if (!ok) {
                printf("%-10s %6s %6s | %9s %9s %9s | %9s %9s %9s | %7s\n",
                       ucg_perf_colls[c_idx].name, size_str, "-", "-", "-",
                       "-", "-", "-", "-", "-");
                continue;
            }

            printf("%-10s %6s %6u | %9.2f %9.2f %9.2f | %9.2f %9.2f %9.2f | "
                   "%7.2f\n", ucg_perf_colls[c_idx].name, size_str,
                   ucg_perf_shm->iters[n_idx][c_idx][s_idx],
                   avg[UCG_PERF_VAR_O2M], min[UCG_PERF_VAR_O2M],
                   max[UCG_PERF_VAR_O2M], avg[UCG_PERF_VAR_P2P],
                   min[UCG_PERF_VAR_P2P], max[UCG_PERF_VAR_P2P],
                   avg[UCG_PERF_VAR_O2M] / avg[UCG_PERF_VAR_P2P]);
            if (csv != NULL) {
                fprintf(csv, "%u,%s,%zu,%s,%u,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
                        "%.4f\n", nprocs, ucg_perf_colls[c_idx].name, size,
                        ucg_dtype_name(ucg_perf_opts.dtype),
                        ucg_perf_shm->iters[n_idx][c_idx][s_idx],
                        avg[UCG_PERF_VAR_O2M], min[UCG_PERF_VAR_O2M],
                        max[UCG_PERF_VAR_O2M], avg[UCG_PERF_VAR_P2P],
                        min[UCG_PERF_VAR_P2P], max[UCG_PERF_VAR_P2P],
                        avg[UCG_PERF_VAR_O2M] / avg[UCG_PERF_VAR_P2P]);
            }
        }
    }
    if (csv != NULL) {
        fflush(csv);
    }
}


static void ucg_perf_print_header(void)
{
    extern char **environ;
    unsigned i, num_env = 0;
    char size[32];
    char **env;

    printf("ucg_perf: UCG collectives, one-to-many transports (o2m: default "
           "configuration)\n          vs point-to-point only (p2p: "
           "O2M=n), measured in the same run\n");
    printf("  UCX %s, UCG API %d.%d\n", ucp_get_version_string(),
           UCG_API_MAJOR, UCG_API_MINOR);
    perf_print_machine(ucg_perf_opts.ncpus);
    printf("  np:");
    for (i = 0; i < ucg_perf_opts.num_nprocs; ++i) {
        printf(" %u%s", ucg_perf_opts.nprocs[i],
               (ucg_perf_opts.nprocs[i] > ucg_perf_opts.ncpus) ?
               " (oversubscribed)" : "");
    }
    printf("\n  collectives:");
    for (i = 0; i < UCG_PERF_NUM_COLLS; ++i) {
        if (ucg_perf_opts.colls & (1u << i)) {
            printf(" %s", ucg_perf_colls[i].name);
        }
    }
    printf("\n  sizes (bytes per member):");
    for (i = 0; i < ucg_perf_opts.num_sizes; ++i) {
        perf_size_str(ucg_perf_opts.sizes[i], size, sizeof(size));
        printf(" %s", size);
    }
    printf("\n  datatype %s, reductions SUM, root %u\n",
           ucg_dtype_name(ucg_perf_opts.dtype), ucg_perf_opts.root);
    printf("  iterations per variant: %u timed (fewer above %luK, at least "
           "%u), %s warm-up;\n    split over %u rounds of {o2m block, p2p "
           "block} (order flipped every other round);\n    each timed "
           "iteration follows a barrier of the same variant (untimed)\n",
           ucg_perf_opts.iters, UCG_PERF_FULL_SIZE >> 10,
           (ucg_perf_opts.iters < UCG_PERF_MIN_ITERS) ? ucg_perf_opts.iters :
           UCG_PERF_MIN_ITERS, ucg_perf_opts.warmup ? "-w" : "1/10 as many",
           ucg_perf_opts.rounds);
    printf("  results of the first iteration of every block are checked\n");
    printf("  processes pinned one per CPU: %s; wait loops: busy polling of "
           "ucg_coll_test()\n    when np <= %u usable CPUs, else "
           "sched_yield() between ucg_coll_test() calls\n",
           ucg_perf_opts.bind ? "when np <= usable CPUs" : "no (-B)",
           ucg_perf_opts.ncpus);
    for (env = environ; *env != NULL; ++env) {
        if (!strncmp(*env, "UCX_", 4)) {
            printf("%s %s", (num_env++ == 0) ? "  environment:" : "",
                   *env);
        }
    }
    if (num_env > 0) {
        printf("\n");
    }
}


/* ------------------------------------------------------------------------ */
/* Options                                                                  */

static void ucg_perf_usage(FILE *stream)
{
    fprintf(stream,
"Usage: ucg_perf [options]\n"
"\n"
"Latency of the UCG collectives with the one-to-many transports (o2m: the\n"
"default configuration, UCX_UCG_* from the environment) against the same\n"
"configuration restricted to point-to-point (p2p: O2M=n), in the same run.\n"
"For every np it forks np processes on this host; each creates both\n"
"contexts and a group over the np processes on each.\n"
"\n"
"Options:\n"
"  -n LIST   numbers of processes, comma-separated, 2..%d (default 2,3,4,8)\n"
"  -c LIST   collectives: bcast,allreduce,reduce,barrier,gather,scatter,\n"
"            allgather,reduce_scatter_block (size: each member's block),\n"
"            scan,exscan,allgatherv (every member's count the same) or all\n"
"            (default: bcast..allgather)\n"
"  -s LIST   sizes in bytes per member, multiples of 8 with an optional K/M\n"
"            suffix (default 8,32,128,512,2K,8K,32K,128K,512K,1M)\n"
"  -i N      timed iterations per variant (default 1000); above %luK they\n"
"            are scaled down with the size, to at least %d\n"
"  -w N      warm-up iterations per variant (default: a tenth of the timed\n"
"            ones; at least 1 per block)\n"
"  -r N      rounds: blocks of each variant, alternating (default 5)\n"
"  -d TYPE   datatype: int32 or double (default int32)\n"
"  -R ROOT   root of bcast, reduce, gather, scatter (default 0)\n"
"  -o FILE   also write the results as CSV to FILE\n"
"  -q        do not print the plans\n"
"  -T SEC    timeout of each np; its processes are killed after it\n"
"            (default 900)\n"
"  -W SEC    timeout of one wait inside a process (default 60)\n"
"  -B        do not pin processes to CPUs (default: pinned when np <= CPUs)\n"
"  -h        this help\n"
"\n"
"Latency: each timed iteration follows a barrier of the same variant (none\n"
"for barrier); each process averages its timed iterations; the table shows\n"
"the average, min and max over processes, in usec, and o2m avg / p2p avg\n"
"(< 1: the one-to-many transports are faster).  The first iteration of\n"
"every block runs on fresh data and its result is checked in full.\n"
"Exit status: 0 when every measurement ran and checked its results.\n",
            UCG_PERF_MAX_PROCS, UCG_PERF_FULL_SIZE >> 10, UCG_PERF_MIN_ITERS);
}

static void ucg_perf_parse_nprocs(const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL, *end;
    unsigned long value;

    ucg_perf_opts.num_nprocs = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        value = strtoul(tok, &end, 10);
        if ((*end != '\0') || (value < 2) || (value > UCG_PERF_MAX_PROCS)) {
            perf_die("-n: '%s' is not a number of processes in 2..%d",
                     tok, UCG_PERF_MAX_PROCS);
        }
        if (ucg_perf_opts.num_nprocs == UCG_PERF_MAX_NLIST) {
            perf_die("-n: at most %d values", UCG_PERF_MAX_NLIST);
        }
        ucg_perf_opts.nprocs[ucg_perf_opts.num_nprocs++] = value;
    }
    free(copy);
    if (ucg_perf_opts.num_nprocs == 0) {
        perf_die("-n: no values");
    }
}

static void ucg_perf_parse_sizes(const char *arg)
{
    perf_parse_sizes(arg, ucg_perf_opts.sizes, &ucg_perf_opts.num_sizes,
                     UCG_PERF_MAX_SIZES, UCG_PERF_MAX_SIZE);
}

static void ucg_perf_parse_colls(const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL;
    unsigned i;

    ucg_perf_opts.colls = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "all")) {
            ucg_perf_opts.colls = (1u << UCG_PERF_NUM_COLLS) - 1;
            continue;
        }
        for (i = 0; i < UCG_PERF_NUM_COLLS; ++i) {
            if (!strcmp(tok, ucg_perf_colls[i].name)) {
                ucg_perf_opts.colls |= 1u << i;
                break;
            }
        }
        if (i == UCG_PERF_NUM_COLLS) {
            perf_die("-c: unknown collective '%s' (bcast, allreduce, "
                     "reduce, barrier, gather, scatter, allgather, "
                     "reduce_scatter_block, scan, exscan, allgatherv, all)",
                     tok);
        }
    }
    free(copy);
    if (ucg_perf_opts.colls == 0) {
        perf_die("-c: no collectives");
    }
}

static void ucg_perf_parse_opts(int argc, char **argv)
{
    unsigned i;
    int c;

    ucg_perf_opts.iters        = 1000;
    ucg_perf_opts.warmup       = 0;
    ucg_perf_opts.rounds       = 5;
    ucg_perf_opts.dtype        = UCG_DT_INT32;
    ucg_perf_opts.root         = 0;
    ucg_perf_opts.quiet        = 0;
    ucg_perf_opts.csv          = NULL;
    ucg_perf_opts.timeout      = 900;
    perf_sup.wait_timeout      = 60;
    ucg_perf_opts.bind         = 1;
    ucg_perf_opts.colls        = UCG_PERF_DEFAULT_COLLS;
    ucg_perf_parse_nprocs("2,3,4,8");
    ucg_perf_parse_sizes("8,32,128,512,2K,8K,32K,128K,512K,1M");

    while ((c = getopt(argc, argv, "n:c:s:i:w:r:d:R:o:qT:W:Bh")) != -1) {
        switch (c) {
        case 'n':
            ucg_perf_parse_nprocs(optarg);
            break;
        case 'c':
            ucg_perf_parse_colls(optarg);
            break;
        case 's':
            ucg_perf_parse_sizes(optarg);
            break;
        case 'i':
            ucg_perf_opts.iters = perf_parse_uint(optarg, c, 1);
            break;
        case 'w':
            ucg_perf_opts.warmup = perf_parse_uint(optarg, c, 1);
            break;
        case 'r':
            ucg_perf_opts.rounds = perf_parse_uint(optarg, c, 1);
            break;
        case 'd':
            if (!strcmp(optarg, "int32")) {
                ucg_perf_opts.dtype = UCG_DT_INT32;
            } else if (!strcmp(optarg, "double")) {
                ucg_perf_opts.dtype = UCG_DT_DOUBLE;
            } else {
                perf_die("-d %s: int32 or double", optarg);
            }
            break;
        case 'R':
            ucg_perf_opts.root = perf_parse_uint(optarg, c, 0);
            break;
        case 'o':
            ucg_perf_opts.csv = optarg;
            break;
        case 'q':
            ucg_perf_opts.quiet = 1;
            break;
        case 'T':
            ucg_perf_opts.timeout = perf_parse_uint(optarg, c, 1);
            break;
        case 'W':
            perf_sup.wait_timeout = perf_parse_uint(optarg, c, 1);
            break;
        case 'B':
            ucg_perf_opts.bind = 0;
            break;
        case 'h':
            ucg_perf_usage(stdout);
            exit(0);
        default:
            ucg_perf_usage(stderr);
            exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ucg_perf: unexpected argument '%s'\n", argv[optind]);
        ucg_perf_usage(stderr);
        exit(2);
    }
    for (i = 0; i < ucg_perf_opts.num_nprocs; ++i) {
        if (ucg_perf_opts.root >= ucg_perf_opts.nprocs[i]) {
            perf_die("-R %u: not a rank of np=%u", ucg_perf_opts.root,
                     ucg_perf_opts.nprocs[i]);
        }
    }

    if (!perf_usable_cpus(ucg_perf_opts.cpus, &ucg_perf_opts.ncpus)) {
        ucg_perf_opts.bind = 0;
    }
}

int main(int argc, char **argv)
{
    double start, t, own_start;
    unsigned n_idx, c_idx, s_idx, var, rank;
    perf_cpu_t cpu_start;
    FILE *csv = NULL;
    int failed = 0;

    /* Progress lines and errors (stderr) come out in order */
    setvbuf(stdout, NULL, _IOLBF, 0);
    perf_sup.name = "ucg_perf";
    ucg_perf_parse_opts(argc, argv);

    ucg_perf_shm    = perf_map_shared(sizeof(*ucg_perf_shm));
    perf_sup.failed = &ucg_perf_shm->failed;
    for (n_idx = 0; n_idx < UCG_PERF_MAX_NLIST; ++n_idx) {
        for (c_idx = 0; c_idx < UCG_PERF_NUM_COLLS; ++c_idx) {
            for (s_idx = 0; s_idx < UCG_PERF_MAX_SIZES; ++s_idx) {
                for (var = 0; var < UCG_PERF_VAR_LAST; ++var) {
                    for (rank = 0; rank < UCG_PERF_MAX_PROCS; ++rank) {
                        ucg_perf_shm->lat[n_idx][c_idx][s_idx][var][rank] =
                            NAN;
                    }
                }
            }
        }
    }

    if (ucg_perf_opts.csv != NULL) {
        csv = fopen(ucg_perf_opts.csv, "w");
        if (csv == NULL) {
            perf_die("-o %s: %s", ucg_perf_opts.csv, strerror(errno));
        }
        fprintf(csv, "np,collective,size_bytes,dtype,iterations,o2m_avg_us,"
                "o2m_min_us,o2m_max_us,p2p_avg_us,p2p_min_us,p2p_max_us,"
                "ratio_o2m_p2p\n");
    }

    perf_handle_signals();

    ucg_perf_print_header();

    perf_cpu_start(&cpu_start, &own_start);
    start     = perf_now();
    for (n_idx = 0; n_idx < ucg_perf_opts.num_nprocs; ++n_idx) {
        t = perf_now();
        if (ucg_perf_run_group(n_idx) != 0) {
            failed = 1;
            fprintf(stderr, "ucg_perf: np=%u FAILED: see the errors above\n",
                    ucg_perf_opts.nprocs[n_idx]);
            break;
        }
        ucg_perf_print_results(n_idx, csv);
        printf("  np=%u measured in %.1f s\n", ucg_perf_opts.nprocs[n_idx],
               perf_now() - t);
    }

    printf("\nTotal time %.1f s%s\n", perf_now() - start,
           failed ? "; FAILED: see the errors above" : "");
    perf_print_noise(&cpu_start, own_start);
    fflush(stdout);
    if (csv != NULL) {
        fclose(csv);
    }
    munmap(ucg_perf_shm, sizeof(*ucg_perf_shm));
    return failed ? 1 : 0;
}
