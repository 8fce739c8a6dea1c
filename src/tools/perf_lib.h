/**
 * ucx-o2m: the process supervisor of the benchmarks (ucx_o2m_perf,
 * ucg_perf, ucx_mc_perf), and the opening of a UCT interface for the
 * transport-level ones.
 *
 * A benchmark forks one process per rank on this host, pins them one per
 * CPU when there are enough, and waits for them with a deadline.  Every
 * wait inside a process is bounded (perf_waiter_t): a process that fails
 * says why, raises a flag in memory shared by all of them, and the others
 * stop at their next wait with PERF_EXIT_PEER, so that the parent reports
 * the process that failed first and not the ones it took down.
 *
 * One supervisor per program (perf_sup), set up by the tool: its name (the
 * prefix of every message), where the shared failure flag is, and how long
 * one wait may last.
 */
#ifndef O2M_PERF_LIB_H_
#define O2M_PERF_LIB_H_

#include <ucs/type/status.h>
#include <uct/api/uct.h>

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>


/* Exit status of a process that stopped because another one failed */
#define PERF_EXIT_PEER  3

#define PERF_MAX_PROCS  128


typedef struct {
    const char       *name;          /* Prefix of messages */
    volatile int32_t *failed;        /* Shared by all processes */
    double           wait_timeout;   /* Seconds one bounded wait may last */
    /* In a child */
    int              is_child;
    unsigned         rank;
    char             context[160];   /* Current measurement, for messages */
    /* In the parent */
    pid_t            children[PERF_MAX_PROCS];
    unsigned         num_children;
} perf_sup_t;

extern perf_sup_t perf_sup;


/** Monotonic time, seconds. */
double perf_now(void);

/**
 * Print "<name>: [rank R (pid P), <context>: ]<message>" on stderr and end:
 * a child exits (PERF_EXIT_PEER when another one failed first), the parent
 * kills the children and exits with 1.
 */
void __attribute__((noreturn, format(printf, 1, 2)))
perf_die(const char *fmt, ...);

/** perf_die() with "<what>: <status>" unless @a _status is UCS_OK. */
#define PERF_CHECK_OK(_status, _what) \
    do { \
        ucs_status_t _s = (_status); \
        if (_s != UCS_OK) { \
            perf_die("%s: %s", (_what), ucs_status_string(_s)); \
        } \
    } while (0)

/**
 * Open the interface @a tl_name on device @a dev_name of the UCT component
 * @a comp_name (its memory domain has the component's name) on @a worker,
 * with @a err_handler (its argument: @a tl_name), or perf_die() saying why.
 */
void perf_uct_iface_open(const char *comp_name, const char *tl_name,
                         const char *dev_name, uct_worker_h worker,
                         uct_error_handler_t err_handler,
                         uct_md_h *md_p, uct_iface_h *iface_p);

/** The parent: SIGKILL every child still running. */
void perf_kill_children(void);

/** SIGINT and SIGTERM kill the children before the parent goes. */
void perf_handle_signals(void);

/** Anonymous memory shared with the children forked later, zeroed. */
void *perf_map_shared(size_t size);


/*
 * Bounded wait: call perf_waiter_check() on every spin; it looks at the
 * clock only every 256 spins, so that it costs nothing in a latency loop.
 * @a detail, when set, adds what the process has seen so far to the
 * message of a timeout or of a stop (timed_out 0).
 */
typedef void (*perf_waiter_detail_t)(const void *arg, int timed_out,
                                     char *buf, size_t max);

typedef struct {
    unsigned             spins;
    double               deadline;
    const char           *what;
    perf_waiter_detail_t detail;
    const void           *arg;
} perf_waiter_t;

void perf_waiter_init(perf_waiter_t *w, const char *what,
                      perf_waiter_detail_t detail, const void *arg);

void perf_waiter_check_slow(perf_waiter_t *w);

static inline void perf_waiter_check(perf_waiter_t *w)
{
    if (__builtin_expect((++w->spins & 255) == 0, 0)) {
        perf_waiter_check_slow(w);
    }
}


/*
 * Barrier of the processes, in the memory they share (zeroed before the
 * fork).  Waits are bounded and yield the CPU; @a progress, when set, is
 * called while waiting, so that a process never waits here for a peer that
 * needs its progress.
 */
typedef struct {
    volatile uint32_t count __attribute__((aligned(64)));
    volatile uint32_t gen   __attribute__((aligned(64)));
} perf_barrier_t;

void perf_barrier(perf_barrier_t *b, unsigned nprocs, const char *what,
                  void (*progress)(void *arg), void *arg);


/**
 * Fork @a nprocs processes running @a child(rank, arg), each pinned to
 * cpus[rank] when @a bind; wait for all of them, killing them at
 * @a deadline (perf_now() time).  @a label names the group in messages
 * ("N=4"), @a timeout is the -T value they quote.
 * @return 0 when every process exited with 0.
 */
int perf_run_procs(unsigned nprocs, const int *cpus, int bind,
                   double deadline, double timeout, const char *label,
                   void (*child)(unsigned rank, void *arg), void *arg);

/** The CPUs this process may run on (at most the online ones); when none
 *  can be read, CPU 0 and a return value of 0 (do not bind). */
int perf_usable_cpus(int *cpus, unsigned *ncpus_p);


/* CPU time of the whole machine, from /proc/stat, in seconds */
typedef struct {
    double busy;   /* Everything but idle and iowait */
    double total;
    double steal;  /* Taken by the hypervisor */
} perf_cpu_t;

/** The machine's CPU time now; zeroes when /proc/stat cannot be read. */
void perf_cpu_start(perf_cpu_t *cpu, double *own_p);

/** How much the rest of the machine ran since perf_cpu_start(). */
void perf_print_noise(const perf_cpu_t *start, double own_start);

/** "  machine: ..." and "  date: ..." lines of a report header. */
void perf_print_machine(unsigned ncpus);


/** Parse "<n>[k|K|m|M][b|B]"; 0 on success. */
int perf_parse_size(const char *str, size_t *size_p);

/** Option -s: sizes in bytes, multiples of 8 up to @a max_size, at most
 *  @a max_num of them (perf_die() otherwise). */
void perf_parse_sizes(const char *arg, size_t *sizes, unsigned *num_p,
                      unsigned max_num, size_t max_size);

/** A number of option -@a opt, at least @a min (perf_die() otherwise). */
unsigned perf_parse_uint(const char *arg, char opt, unsigned min);

/** "64", "8K", "1M" */
void perf_size_str(size_t size, char *buf, size_t max);

#endif
