/*
 * Collective latency benchmark, OSU micro-benchmarks methodology:
 * per message size, warm-up iterations, then timed iterations of the
 * collective alone with an MPI_Barrier between iterations outside the timed
 * region; each rank's latency is its own average (with -M: the median of
 * its calls, which the few calls preempted on a loaded machine do not move,
 * where they can multiply an average); the average, minimum and maximum
 * over ranks are reported (gathered with MPI_Reduce).  After the timed loop
 * one untimed call validates the data.
 *
 * -G (ranks on one machine, such as the hosts of contrib/multihost.sh,
 * which share one CLOCK_MONOTONIC): instead of each rank's own time, each
 * call's span on the common clock, from the root's call (rank 0's; the
 * last rank's call in a collective without a root) to the last rank's
 * return; the line's avg/min/max are the median, 10th and 90th percentile
 * of the spans.  OSU's per-rank time also holds how long each rank waited
 * for a root that left the barrier before it later than it did (a
 * barrier's exit order differs between implementations); the span does
 * not.
 *
 * The nonblocking forms (ibcast, iallreduce, ireduce, ibarrier, igather,
 * iscatter, iallgather, ialltoall) are timed
 * as the call and its MPI_Wait, and then, as OSU's osu_i* do, with a
 * computation as long as that time between the call and the wait: overall
 * time, the computation's, and the overlap, max(0, 100 - (overall -
 * compute) / pure * 100) %, averaged over ranks (with -M from each rank's
 * median overall and computation times).
 *
 * reduce_scatter_block's size is each rank's block (its send buffer holds
 * one per rank); so is that of gatherv, scatterv and allgatherv (bytes,
 * equal counts: the vector forms' cost against the same data), and of
 * alltoall, alltoallv and ialltoall (the block each rank sends each rank);
 * gather, scatter, allgather and their nonblocking forms: the block of one
 * rank, as OSU's.  barrier and ibarrier have no size: they run once, as
 * size 0, whatever -s says.
 *
 * Usage: coll_bench [-c bcast,allreduce,reduce,ibcast,iallreduce,ireduce,
 *                       reduce_scatter_block,scan,gatherv,scatterv,
 *                       allgatherv,alltoall,alltoallv,ialltoall,barrier,
 *                       gather,scatter,allgather,ibarrier,igather,iscatter,
 *                       iallgather]
 *                   [-s MIN:MAX] [-i ITERS] [-I LARGE_ITERS] [-w WARMUP]
 *                   [-M]
 * Output (rank 0): one line per collective and size:
 *   <coll> <bytes> <avg_us> <min_us> <max_us> <iterations>
 * and for a nonblocking one also
 *   overlap <coll> <bytes> <overall_us> <compute_us> <pure_us> <overlap_%>
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LARGE_SIZE 8192   /* above it, use the large iteration count */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x < y) ? -1 : (x > y);
}

/* Median of @a n values (sorted in place) */
static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return (n % 2) ? v[n / 2] : (v[(n / 2) - 1] + v[n / 2]) / 2;
}

enum { B_BCAST, B_ALLREDUCE, B_REDUCE, B_IBCAST, B_IALLREDUCE, B_IREDUCE,
       B_REDUCE_SCATTER_BLOCK, B_SCAN, B_GATHERV, B_SCATTERV, B_ALLGATHERV,
       B_ALLTOALL, B_ALLTOALLV, B_IALLTOALL, B_BARRIER, B_GATHER, B_SCATTER,
       B_ALLGATHER, B_IBARRIER, B_IGATHER, B_ISCATTER, B_IALLGATHER,
       B_LAST };
static const char *names[] = { "bcast", "allreduce", "reduce", "ibcast",
                               "iallreduce", "ireduce",
                               "reduce_scatter_block", "scan", "gatherv",
                               "scatterv", "allgatherv", "alltoall",
                               "alltoallv", "ialltoall", "barrier",
                               "gather", "scatter", "allgather", "ibarrier",
                               "igather", "iscatter", "iallgather" };

static int rank, size;
static int use_median;           /* -M: per-call medians, not averages */
static int use_span;             /* -G: spans on the common clock */
static int *v_counts, *v_displs; /* [size]: the vector collectives' */

static size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': v <<= 10; break;
    case 'm': case 'M': v <<= 20; break;
    default: break;
    }
    return v;
}

static int is_bcast(int coll)
{
    return (coll == B_BCAST) || (coll == B_IBCAST);
}

/* Moves bytes per rank (not floats) */
static int is_bytes(int coll)
{
    return is_bcast(coll) || (coll == B_GATHERV) || (coll == B_SCATTERV) ||
           (coll == B_ALLGATHERV) || (coll == B_ALLTOALL) ||
           (coll == B_ALLTOALLV) || (coll == B_IALLTOALL) ||
           (coll == B_GATHER) || (coll == B_SCATTER) ||
           (coll == B_ALLGATHER) || (coll == B_IGATHER) ||
           (coll == B_ISCATTER) || (coll == B_IALLGATHER);
}

static int is_nb(int coll)
{
    return (coll == B_IBCAST) || (coll == B_IALLREDUCE) ||
           (coll == B_IREDUCE) || (coll == B_IALLTOALL) ||
           (coll == B_IBARRIER) || (coll == B_IGATHER) ||
           (coll == B_ISCATTER) || (coll == B_IALLGATHER);
}

static int is_barrier(int coll)
{
    return (coll == B_BARRIER) || (coll == B_IBARRIER);
}

/* Has a root (rank 0) */
static int is_rooted(int coll)
{
    return is_bcast(coll) || (coll == B_REDUCE) || (coll == B_IREDUCE) ||
           (coll == B_GATHERV) || (coll == B_SCATTERV) ||
           (coll == B_GATHER) || (coll == B_SCATTER) ||
           (coll == B_IGATHER) || (coll == B_ISCATTER);
}

/* The common clock of -G, in seconds */
static double common_clock(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * -G: each call's span, from the root's call (the last call without a
 * root) to the last return, from every rank's @a start and @a end of its
 * @a n calls, gathered at rank 0 (@a spans: n of them); returns in @a med,
 * @a lo, @a hi the median, 10th and 90th percentile, in us, at rank 0
 */
static void spans(int coll, const double *start, const double *end, int n,
                  double *med, double *lo, double *hi)
{
    double *all = NULL, *span = NULL, ref, last;
    int i, r;

    if (rank == 0) {
        all  = malloc(sizeof(double) * 2 * n * size);
        span = malloc(sizeof(double) * n);
        if (!all || !span) {
            fprintf(stderr, "out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    MPI_Gather(start, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(end, n, MPI_DOUBLE, all ? all + (size_t)n * size : NULL, n,
               MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank != 0) {
        return;
    }
    for (i = 0; i < n; ++i) {
        ref  = all[i];
        last = all[(size_t)n * size + i];
        for (r = 1; r < size; ++r) {
            if (!is_rooted(coll) && (all[(size_t)r * n + i] > ref)) {
                ref = all[(size_t)r * n + i];
            }
            if (all[(size_t)n * size + (size_t)r * n + i] > last) {
                last = all[(size_t)n * size + (size_t)r * n + i];
            }
        }
        span[i] = (last - ref) * 1e6;
    }
    qsort(span, n, sizeof(*span), cmp_double);
    *med = median(span, n);
    *lo  = span[n / 10];
    *hi  = span[(n * 9) / 10];
    free(span);
    free(all);
}

/* Receives a block per rank at the root (or everywhere) / sends one per
 * rank from the root: the validation's data layout */
static int is_gather(int coll)
{
    return (coll == B_GATHERV) || (coll == B_GATHER) || (coll == B_IGATHER);
}

static int is_scatter(int coll)
{
    return (coll == B_SCATTERV) || (coll == B_SCATTER) ||
           (coll == B_ISCATTER);
}

static int is_allgather(int coll)
{
    return (coll == B_ALLGATHERV) || (coll == B_ALLGATHER) ||
           (coll == B_IALLGATHER);
}

/* Start the collective on 'bytes' bytes (floats for reductions): blocking
 * ones complete here, nonblocking ones return their request */
static MPI_Request start(int coll, void *sbuf, void *rbuf, size_t bytes)
{
    int count = is_bytes(coll) ? (int)bytes : (int)(bytes / sizeof(float));
    MPI_Request req = MPI_REQUEST_NULL;

    if (is_bytes(coll) && !is_bcast(coll)) {
        for (int r = 0; r < size; ++r) {
            v_counts[r] = count;
            v_displs[r] = r * count;
        }
    }

    switch (coll) {
    case B_BCAST:
        MPI_Bcast(sbuf, count, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case B_ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case B_REDUCE:
        MPI_Reduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case B_IBCAST:
        MPI_Ibcast(sbuf, count, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
        break;
    case B_IALLREDUCE:
        MPI_Iallreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                       &req);
        break;
    case B_IREDUCE:
        MPI_Ireduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD,
                    &req);
        break;
    case B_REDUCE_SCATTER_BLOCK: /* bytes: each rank's block */
        MPI_Reduce_scatter_block(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM,
                                 MPI_COMM_WORLD);
        break;
    case B_SCAN:
        MPI_Scan(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case B_GATHERV:
        MPI_Gatherv(sbuf, count, MPI_CHAR, rbuf, v_counts, v_displs,
                    MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case B_SCATTERV:
        MPI_Scatterv(sbuf, v_counts, v_displs, MPI_CHAR, rbuf, count,
                     MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case B_ALLGATHERV:
        MPI_Allgatherv(sbuf, count, MPI_CHAR, rbuf, v_counts, v_displs,
                       MPI_CHAR, MPI_COMM_WORLD);
        break;
    case B_ALLTOALL: /* bytes: each block */
        MPI_Alltoall(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR,
                     MPI_COMM_WORLD);
        break;
    case B_ALLTOALLV:
        MPI_Alltoallv(sbuf, v_counts, v_displs, MPI_CHAR, rbuf, v_counts,
                      v_displs, MPI_CHAR, MPI_COMM_WORLD);
        break;
    case B_IALLTOALL:
        MPI_Ialltoall(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR,
                      MPI_COMM_WORLD, &req);
        break;
    case B_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case B_GATHER:
        MPI_Gather(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR, 0,
                   MPI_COMM_WORLD);
        break;
    case B_SCATTER:
        MPI_Scatter(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR, 0,
                    MPI_COMM_WORLD);
        break;
    case B_ALLGATHER:
        MPI_Allgather(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR,
                      MPI_COMM_WORLD);
        break;
    case B_IBARRIER:
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        break;
    case B_IGATHER:
        MPI_Igather(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR, 0,
                    MPI_COMM_WORLD, &req);
        break;
    case B_ISCATTER:
        MPI_Iscatter(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR, 0,
                     MPI_COMM_WORLD, &req);
        break;
    case B_IALLGATHER:
        MPI_Iallgather(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR,
                       MPI_COMM_WORLD, &req);
        break;
    }
    return req;
}

/* One call of the collective, completed */
static void run_once(int coll, void *sbuf, void *rbuf, size_t bytes)
{
    MPI_Request req = start(coll, sbuf, rbuf, bytes);

    MPI_Wait(&req, MPI_STATUS_IGNORE);
}

/* Computation of @a sec seconds that makes no MPI call (OSU's dummy
 * compute: the overlap measures what progresses without the caller) */
static double compute(double sec)
{
    double t0 = MPI_Wtime(), x = 1.0;

    while (MPI_Wtime() - t0 < sec) {
        for (int k = 0; k < 64; ++k) {
            x = x * 1.0000001 + 1e-9;
        }
    }
    return x;
}

/* Overlap of a nonblocking collective (OSU): @a n iterations with a
 * computation of @a pure_us between the call and its wait; prints the
 * averages over ranks on rank 0 of each rank's average (with -M: median)
 * overall and computation times.  @a overall and @a comp: room for @a n */
static void overlap(int coll, void *sbuf, void *rbuf, size_t bytes, int n,
                    double pure_us, double *overall, double *comp)
{
    double v[3], sum[3], pct;
    volatile double sink = 0;

    for (int i = 0; i < n; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Request req = start(coll, sbuf, rbuf, bytes);
        double t1 = MPI_Wtime();
        sink += compute(pure_us * 1e-6);
        comp[i] = MPI_Wtime() - t1;
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        overall[i] = MPI_Wtime() - t0;
    }
    v[0] = v[1] = 0;
    if (use_median) {
        v[0] = median(overall, n);
        v[1] = median(comp, n);
    } else {
        for (int i = 0; i < n; ++i) {
            v[0] += overall[i] / n;
            v[1] += comp[i] / n;
        }
    }
    v[0] *= 1e6;
    v[1] *= 1e6;
    v[2]  = pure_us;
    MPI_Reduce(v, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int k = 0; k < 3; ++k) {
            sum[k] /= size;
        }
        pct = 100.0 - (sum[0] - sum[1]) / sum[2] * 100.0;
        printf("overlap %s %zu %.3f %.3f %.3f %.1f\n", names[coll], bytes,
               sum[0], sum[1], sum[2], (pct < 0) ? 0.0 : pct);
        fflush(stdout);
    }
    (void)sink;
}

/*
 * Where Open MPI has no one-sided component for the communicator (ob1
 * across hosts: no osc for btl tcp), the ordering is seen through each
 * rank's own clock instead: rank 0 tells every rank to enter (a message),
 * waits 20 ms and only then enters; a barrier that waits for it holds some
 * rank at least 10 ms (every rank would have to get the message over 10 ms
 * late otherwise), one that lets the ranks through at once holds none.
 * Three tries, so that a loaded machine's delays cannot fail a right
 * barrier.  Returns 1 on the rank 0 if the barrier let every rank through.
 */
static long validate_barrier_timed(int coll)
{
    int tries, r, go = 1, ok = 0;
    double t, held, most;

    for (tries = 0; (tries < 3) && !ok; ++tries) {
        if (rank == 0) {
            for (r = 1; r < size; ++r) {
                MPI_Send(&go, 1, MPI_INT, r, 77, MPI_COMM_WORLD);
            }
            usleep(20000);
            run_once(coll, NULL, NULL, 0);
            most = 0;
            for (r = 1; r < size; ++r) {
                MPI_Recv(&held, 1, MPI_DOUBLE, r, 78, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                most = (held > most) ? held : most;
            }
            ok = most >= 0.010;
        } else {
            MPI_Recv(&go, 1, MPI_INT, 0, 77, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            t = MPI_Wtime();
            run_once(coll, NULL, NULL, 0);
            held = MPI_Wtime() - t;
            MPI_Send(&held, 1, MPI_DOUBLE, 0, 78, MPI_COMM_WORLD);
        }
        MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    return (rank == 0) && !ok;
}

/* A barrier's semantics, checked untimed: rank 0 raises a flag in its
 * window (published by its own exclusive lock epoch) 20 ms after the
 * others are ready, and only then enters the barrier; a rank that leaves
 * the barrier and reads the flag still down found a barrier that let it
 * through early.  Returns 1 if so */
static long validate_barrier(int coll)
{
    int flag = 0, seen = 1, one = 1, rc, all_rc;
    MPI_Win win;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Win_create(&flag, sizeof(int), sizeof(int), MPI_INFO_NULL,
                        MPI_COMM_WORLD, &win);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    rc = (rc == MPI_SUCCESS) ? 0 : 1;
    MPI_Allreduce(&rc, &all_rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (all_rc != 0) {
        /* a window only some ranks created stays: freeing is collective */
        return validate_barrier_timed(coll);
    }

    if (rank == 0) {
        usleep(20000);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    run_once(coll, NULL, NULL, 0);
    if (rank != 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(&seen, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Win_free(&win);
    return seen != 1;
}

/* Untimed validation call; returns the number of wrong elements here */
static long validate(int coll, char *sbuf, char *rbuf, size_t bytes)
{
    size_t n = bytes / sizeof(float);
    float *s = (float*)sbuf, *r = (float*)rbuf;
    float expect = (float)size * (size + 1) / 2;
    long bad = 0;

    if (is_barrier(coll)) {
        return validate_barrier(coll);
    }
    if (is_bcast(coll)) {
        for (size_t i = 0; i < bytes; ++i) {
            sbuf[i] = (rank == 0) ? (char)(i * 7 + 1) : 0;
        }
        run_once(coll, sbuf, rbuf, bytes);
        for (size_t i = 0; i < bytes; ++i) {
            bad += sbuf[i] != (char)(i * 7 + 1);
        }
        return bad;
    }
    if (is_bytes(coll)) {
        /* block r: (char)(r + 1); alltoall: block r of rank q
         * (char)(q * size + r + 1) */
        int a2a = (coll == B_ALLTOALL) || (coll == B_ALLTOALLV) ||
                  (coll == B_IALLTOALL);
        for (size_t i = 0; i < bytes * size; ++i) {
            sbuf[i] = (char)((is_scatter(coll) ? i / bytes :
                              a2a ? (size_t)rank * size + i / bytes :
                                    (size_t)rank) + 1);
            rbuf[i] = 0;
        }
        run_once(coll, sbuf, rbuf, bytes);
        if (a2a) {
            for (size_t i = 0; i < bytes * size; ++i) {
                bad += rbuf[i] != (char)((i / bytes) * size + rank + 1);
            }
        } else if (is_scatter(coll)) {
            for (size_t i = 0; i < bytes; ++i) {
                bad += rbuf[i] != (char)(rank + 1);
            }
        } else if (is_allgather(coll) || (is_gather(coll) && (rank == 0))) {
            for (size_t i = 0; i < bytes * size; ++i) {
                bad += rbuf[i] != (char)(i / bytes + 1);
            }
        }
        return bad;
    }
    for (size_t i = 0; i < n * size; ++i) {
        s[i] = (float)(rank + 1);
    }
    for (size_t i = 0; i < n; ++i) {
        r[i] = -1;
    }
    run_once(coll, sbuf, rbuf, bytes);
    if (coll == B_SCAN) {
        expect = (float)(rank + 1) * (rank + 2) / 2;
    }
    if ((coll == B_ALLREDUCE) || (coll == B_IALLREDUCE) ||
        (coll == B_REDUCE_SCATTER_BLOCK) || (coll == B_SCAN) ||
        (rank == 0)) {
        for (size_t i = 0; i < n; ++i) {
            bad += r[i] != expect;
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    size_t min_size = 8, max_size = 1u << 20;
    int iters = 1000, large_iters = 100, warmup = 100, opt;
    int colls[B_LAST], ncolls = 0;
    char list[256] = "bcast,allreduce";
    long bad_total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    while ((opt = getopt(argc, argv, "c:s:i:I:w:MGh")) != -1) {
        switch (opt) {
        case 'c':
            snprintf(list, sizeof(list), "%s", optarg);
            break;
        case 's': {
            char *colon = strchr(optarg, ':');
            min_size = parse_size(optarg);
            max_size = colon ? parse_size(colon + 1) : min_size;
            break;
        }
        case 'i': iters = atoi(optarg); break;
        case 'I': large_iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'M': use_median = 1; break;
        case 'G': use_span = 1; break;
        default:
            if (rank == 0) {
                fprintf(stderr, "usage: %s [-c bcast,allreduce,reduce,"
                        "ibcast,iallreduce,ireduce,reduce_scatter_block,"
                        "scan,gatherv,scatterv,allgatherv,alltoall,"
                        "alltoallv,ialltoall,barrier,gather,scatter,"
                        "allgather,ibarrier,igather,iscatter,iallgather] "
                        "[-s MIN:MAX bytes, k/m suffix] [-i ITERS] "
                        "[-I ITERS above %d B] [-w WARMUP] [-M: per-rank "
                        "median, not average] [-G: spans on the common "
                        "clock of one machine]\n", argv[0],
                        LARGE_SIZE);
            }
            MPI_Finalize();
            return opt == 'h' ? 0 : 2;
        }
    }
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int k;
        for (k = 0; k < B_LAST && strcmp(tok, names[k]); ++k);
        if ((k == B_LAST) || (ncolls == B_LAST)) {
            if (rank == 0) {
                fprintf(stderr, "unknown or repeated collective '%s'\n", tok);
            }
            MPI_Finalize();
            return 2;
        }
        colls[ncolls++] = k;
    }
    if ((min_size == 0) || (min_size > max_size) || (iters < 1) ||
        (large_iters < 1) || (warmup < 0)) {
        if (rank == 0) {
            fprintf(stderr, "bad sizes or iteration counts\n");
        }
        MPI_Finalize();
        return 2;
    }

    /* reduce_scatter_block sends a block per rank, gatherv and allgatherv
     * receive one */
    char *sbuf = malloc(max_size * size), *rbuf = malloc(max_size * size);
    double *times  = malloc(sizeof(*times) *
                            (iters > large_iters ? iters : large_iters));
    double *times2 = malloc(sizeof(*times2) *
                            (iters > large_iters ? iters : large_iters));
    double *starts = malloc(sizeof(*starts) *
                            (iters > large_iters ? iters : large_iters));
    double *ends   = malloc(sizeof(*ends) *
                            (iters > large_iters ? iters : large_iters));
    v_counts = malloc(sizeof(int) * size);
    v_displs = malloc(sizeof(int) * size);
    if (!sbuf || !rbuf || !v_counts || !v_displs || !times || !times2 ||
        !starts || !ends) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    memset(sbuf, 1, max_size * size);
    memset(rbuf, 0, max_size * size);

    if ((rank == 0) && use_span) {
        printf("# np=%d; latency in us: span of each call on the common "
               "clock (root's call to the last return), median, 10th and "
               "90th percentile\n# coll bytes median_us p10_us p90_us "
               "iterations\n", size);
        fflush(stdout);
    } else if (rank == 0) {
        printf("# np=%d; latency in us: per-rank %s, then avg/min/max "
               "over ranks\n# coll bytes avg_us min_us max_us iterations\n",
               size, use_median ? "median" : "average");
        fflush(stdout);
    }
    for (int c = 0; c < ncolls; ++c) {
        int coll = colls[c];
        /* reductions need whole floats; a barrier has no size */
        size_t first = is_barrier(coll) ? 0 : is_bytes(coll) ? min_size :
                       (min_size < sizeof(float) ? sizeof(float) : min_size);
        size_t last  = is_barrier(coll) ? 0 : max_size;
        for (size_t bytes = first; bytes <= last;
             bytes = (bytes == 0) ? last + 1 : bytes * 2) {
            int n = (bytes > LARGE_SIZE) ? large_iters : iters;
            int w = (bytes > LARGE_SIZE) ? (warmup + 9) / 10 : warmup;
            double total = 0, lat, sum, avg, mn, mx;

            for (int i = 0; i < w; ++i) {
                run_once(coll, sbuf, rbuf, bytes);
            }
            for (int i = 0; i < n; ++i) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                starts[i] = use_span ? common_clock() : 0;
                run_once(coll, sbuf, rbuf, bytes);
                ends[i]  = use_span ? common_clock() : 0;
                times[i] = MPI_Wtime() - t0;
                total   += times[i];
            }
            lat = (use_median ? median(times, n) : total / n) * 1e6;
            MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            MPI_Reduce(&lat, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
            MPI_Reduce(&lat, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            avg = sum / size;
            if (use_span) {
                spans(coll, starts, ends, n, &avg, &mn, &mx);
            }
            bad_total += validate(coll, sbuf, rbuf, bytes);
            if (rank == 0) {
                printf("%s %zu %.3f %.3f %.3f %d\n", names[coll], bytes,
                       avg, mn, mx, n);
                fflush(stdout);
            }
            if (is_nb(coll)) {
                /* every rank computes for the same time: the average */
                MPI_Bcast(&avg, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
                overlap(coll, sbuf, rbuf, bytes, n, avg, times, times2);
            }
        }
    }

    long bad = 0;
    MPI_Reduce(&bad_total, &bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if ((rank == 0) && bad) {
        fprintf(stderr, "coll_bench: validation FAILED: %ld wrong elements\n",
                bad);
    }
    MPI_Bcast(&bad, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    free(times);
    free(times2);
    free(starts);
    free(ends);
    free(sbuf);
    free(rbuf);
    free(v_counts);
    free(v_displs);
    MPI_Finalize();
    return bad ? 1 : 0;
}
