/**
 * ucx-o2m: the process supervisor of the benchmarks (see perf_lib.h).
 */
#include "perf_lib.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


perf_sup_t perf_sup = {
    .name         = "perf",
    .wait_timeout = 60
};


double perf_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + (ts.tv_nsec * 1e-9);
}

void perf_kill_children(void)
{
    unsigned i;

    for (i = 0; i < perf_sup.num_children; ++i) {
        if (perf_sup.children[i] > 0) {
            kill(perf_sup.children[i], SIGKILL);
        }
    }
}

/* "rank R (pid P), <context>" of a child's messages */
static void perf_print_origin(void)
{
    fprintf(stderr, "%s: rank %u (pid %d)%s%s: ", perf_sup.name,
            perf_sup.rank, getpid(),
            (perf_sup.context[0] != '\0') ? ", " : "", perf_sup.context);
}

void perf_die(const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    if (perf_sup.is_child) {
        perf_print_origin();
    } else {
        fprintf(stderr, "%s: ", perf_sup.name);
    }
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);

    if (perf_sup.is_child) {
        /* The others stop at their next wait; when a peer failed first,
         * this is a consequence, not the cause */
        if ((perf_sup.failed != NULL) &&
            __atomic_exchange_n(perf_sup.failed, 1, __ATOMIC_ACQ_REL)) {
            _exit(PERF_EXIT_PEER);
        }
        _exit(1);
    }

    perf_kill_children();
    exit(1);
}

static void perf_signal(int signo)
{
    perf_kill_children();
    signal(signo, SIG_DFL);
    raise(signo);
}

void perf_handle_signals(void)
{
    signal(SIGINT, perf_signal);
    signal(SIGTERM, perf_signal);
}

void *perf_map_shared(size_t size)
{
    void *addr = mmap(NULL, size, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (addr == MAP_FAILED) {
        perf_die("mmap: %s", strerror(errno));
    }
    return addr; /* Anonymous mappings are zeroed */
}


void perf_waiter_init(perf_waiter_t *w, const char *what,
                      perf_waiter_detail_t detail, const void *arg)
{
    w->spins    = 0;
    w->deadline = 0;
    w->what     = what;
    w->detail   = detail;
    w->arg      = arg;
}

void perf_waiter_check_slow(perf_waiter_t *w)
{
    double now = perf_now();
    char detail[256];

    if (__atomic_load_n(perf_sup.failed, __ATOMIC_ACQUIRE)) {
        /* Another process failed and said why; where this one was */
        perf_print_origin();
        fprintf(stderr, "stopped (a peer failed) while waiting for %s",
                w->what);
        if (w->detail != NULL) {
            w->detail(w->arg, 0, detail, sizeof(detail));
            fprintf(stderr, " (%s)", detail);
        }
        fprintf(stderr, "\n");
        _exit(PERF_EXIT_PEER);
    }

    if (w->deadline == 0) {
        w->deadline = now + perf_sup.wait_timeout;
    } else if (now > w->deadline) {
        detail[0] = '\0';
        if (w->detail != NULL) {
            w->detail(w->arg, 1, detail, sizeof(detail));
        }
        perf_die("timed out after %.0f s waiting for %s%s%s%s",
                 perf_sup.wait_timeout, w->what,
                 (detail[0] != '\0') ? " (" : "", detail,
                 (detail[0] != '\0') ? ")" : "");
    }
}


void perf_barrier(perf_barrier_t *b, unsigned nprocs, const char *what,
                  void (*progress)(void *arg), void *arg)
{
    uint32_t gen = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
    perf_waiter_t w;

    if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == nprocs) {
        b->count = 0;
        __atomic_store_n(&b->gen, gen + 1, __ATOMIC_RELEASE);
        return;
    }

    perf_waiter_init(&w, what, NULL, NULL);
    while (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == gen) {
        if (progress != NULL) {
            progress(arg);
        }
        perf_waiter_check(&w);
        sched_yield();
    }
}


/* The parent: whether a child that ended with @a wstatus failed, and says
 * so when it is the cause */
static int perf_child_ended(unsigned rank, int wstatus, int killed,
                            const char *label)
{
    if (WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0)) {
        return 0;
    }

    /* The others stop at their next wait */
    *perf_sup.failed = 1;
    if (killed || (WIFEXITED(wstatus) &&
                   (WEXITSTATUS(wstatus) == PERF_EXIT_PEER))) {
        return -1; /* Not the cause */
    }
    fprintf(stderr, "%s: %s: rank %u %s %d\n", perf_sup.name, label, rank,
            WIFEXITED(wstatus) ? "exited with status" :
            "was killed by signal",
            WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus));
    return -1;
}

int perf_run_procs(unsigned nprocs, const int *cpus, int bind,
                   double deadline, double timeout, const char *label,
                   void (*child)(unsigned rank, void *arg), void *arg)
{
    unsigned rank, left;
    int wstatus, ret = 0, killed = 0;
    cpu_set_t set;
    pid_t pid;

    *perf_sup.failed = 0;
    fflush(stdout);
    fflush(stderr);
    perf_sup.num_children = 0;
    for (rank = 0; rank < nprocs; ++rank) {
        pid = fork();
        if (pid == 0) {
            perf_sup.is_child = 1;
            perf_sup.rank     = rank;
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (bind) {
                CPU_ZERO(&set);
                CPU_SET(cpus[rank], &set);
                if (sched_setaffinity(0, sizeof(set), &set) != 0) {
                    perf_die("sched_setaffinity: %m");
                }
            }
            child(rank, arg);
            fflush(stdout);
            fflush(stderr);
            _exit(0);
        } else if (pid < 0) {
            fprintf(stderr, "%s: fork: %s\n", perf_sup.name,
                    strerror(errno));
            *perf_sup.failed = 1;
            ret              = -1;
            break;
        }
        perf_sup.children[perf_sup.num_children++] = pid;
    }

    left = perf_sup.num_children;
    while (left > 0) {
        pid = waitpid(-1, &wstatus, WNOHANG);
        if (pid > 0) {
            for (rank = 0; rank < perf_sup.num_children; ++rank) {
                if (perf_sup.children[rank] == pid) {
                    perf_sup.children[rank] = 0;
                    --left;
                    if (perf_child_ended(rank, wstatus, killed, label) != 0) {
                        ret = -1;
                    }
                }
            }
            continue;
        }

        if (!killed && (perf_now() > deadline)) {
            fprintf(stderr, "%s: %s still running at the timeout (-T %.0f "
                    "s): killing it\n", perf_sup.name, label, timeout);
            perf_kill_children();
            killed = 1;
            ret    = -1;
        }
        usleep(2000);
    }

    perf_sup.num_children = 0;
    return ret;
}

int perf_usable_cpus(int *cpus, unsigned *ncpus_p)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned ncpus = 0;
    cpu_set_t set;
    int cpu;

    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        for (cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
            if (CPU_ISSET(cpu, &set)) {
                cpus[ncpus++] = cpu;
            }
        }
    }
    if (ncpus == 0) {
        cpus[0]  = 0;
        *ncpus_p = 1;
        return 0;
    }
    if ((online > 0) && (ncpus > (unsigned)online)) {
        ncpus = online;
    }
    *ncpus_p = ncpus;
    return 1;
}


static int perf_cpu_read(perf_cpu_t *cpu)
{
    unsigned long long v[8] = {0};
    double hz               = sysconf(_SC_CLK_TCK);
    FILE *f                 = fopen("/proc/stat", "r");
    int n;

    if (f == NULL) {
        return -1;
    }
    n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
               &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4) {
        return -1;
    }

    /* user nice system idle iowait irq softirq steal */
    cpu->busy  = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
    cpu->total = (v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) /
                 hz;
    cpu->steal = v[7] / hz;
    return 0;
}

/* CPU time of this process and its children so far, seconds */
static double perf_own_cpu(void)
{
    struct rusage self, children;

    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    return self.ru_utime.tv_sec + (self.ru_utime.tv_usec * 1e-6) +
           self.ru_stime.tv_sec + (self.ru_stime.tv_usec * 1e-6) +
           children.ru_utime.tv_sec + (children.ru_utime.tv_usec * 1e-6) +
           children.ru_stime.tv_sec + (children.ru_stime.tv_usec * 1e-6);
}

void perf_cpu_start(perf_cpu_t *cpu, double *own_p)
{
    if (perf_cpu_read(cpu) != 0) {
        memset(cpu, 0, sizeof(*cpu));
    }
    *own_p = perf_own_cpu();
}

void perf_print_noise(const perf_cpu_t *start, double own_start)
{
    perf_cpu_t end;
    double other, total;

    if ((start->total == 0) || (perf_cpu_read(&end) != 0) ||
        (end.total <= start->total)) {
        return;
    }

    total = end.total - start->total;
    other = (end.busy - start->busy) - (perf_own_cpu() - own_start);
    other = (other > 0) ? other : 0;
    printf("Other load during the run: %.0f%% of the CPU time went to other "
           "processes (and interrupts), %.0f%% stolen by the hypervisor%s\n",
           other * 100 / total, (end.steal - start->steal) * 100 / total,
           ((other / total) > 0.05) ?
           ": the numbers are disturbed, rerun on a quiet machine" : "");
}

void perf_print_machine(unsigned ncpus)
{
    char model[256] = "unknown", line[512], *p;
    struct utsname uts;
    time_t now = time(NULL);
    FILE *f;

    f = fopen("/proc/cpuinfo", "r");
    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL) {
            if (!strncmp(line, "model name", 10) &&
                ((p = strchr(line, ':')) != NULL)) {
                snprintf(model, sizeof(model), "%s", p + 2);
                model[strcspn(model, "\n")] = '\0';
                break;
            }
        }
        fclose(f);
    }
    uname(&uts);

    printf("  machine: %s, nproc %ld (%u usable), %s, Linux %s\n",
           uts.nodename, sysconf(_SC_NPROCESSORS_ONLN), ncpus, model,
           uts.release);
    printf("  date: %s", ctime(&now));
}


int perf_parse_size(const char *str, size_t *size_p)
{
    char *end;
    unsigned long long value;

    errno = 0;
    value = strtoull(str, &end, 10);
    if ((errno != 0) || (end == str)) {
        return -1;
    }

    switch (*end) {
    case 'k':
    case 'K':
        value <<= 10;
        ++end;
        break;
    case 'm':
    case 'M':
        value <<= 20;
        ++end;
        break;
    default:
        break;
    }
    if ((*end == 'b') || (*end == 'B')) {
        ++end;
    }
    if (*end != '\0') {
        return -1;
    }

    *size_p = value;
    return 0;
}

void perf_parse_sizes(const char *arg, size_t *sizes, unsigned *num_p,
                      unsigned max_num, size_t max_size)
{
    char *copy = strdup(arg), *tok, *save = NULL, max_str[32];
    size_t size;

    perf_size_str(max_size, max_str, sizeof(max_str));
    *num_p = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if ((perf_parse_size(tok, &size) != 0) || (size == 0) ||
            (size % sizeof(uint64_t)) || (size > max_size)) {
            perf_die("-s: size '%s' must be a multiple of 8 in 8..%s", tok,
                     max_str);
        }
        if (*num_p == max_num) {
            perf_die("-s: at most %u sizes", max_num);
        }
        sizes[(*num_p)++] = size;
    }
    free(copy);
    if (*num_p == 0) {
        perf_die("-s: no sizes");
    }
}

unsigned perf_parse_uint(const char *arg, char opt, unsigned min)
{
    char *end;
    unsigned long value = strtoul(arg, &end, 10);

    if ((*end != '\0') || (end == arg) || (value < min) ||
        (value > 100000000ul)) {
        perf_die("-%c %s: expected a number >= %u", opt, arg, min);
    }
    return value;
}

void perf_size_str(size_t size, char *buf, size_t max)
{
    if ((size >= (1ul << 20)) && !(size % (1ul << 20))) {
        snprintf(buf, max, "%zuM", size >> 20);
    } else if ((size >= 1024) && !(size % 1024)) {
        snprintf(buf, max, "%zuK", size >> 10);
    } else {
        snprintf(buf, max, "%zu", size);
    }
}
