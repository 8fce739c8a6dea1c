/*
 * A member dies during a collective (on real "hosts" of
 * contrib/multihost.sh): the other ranks' collective must return an error
 * in bounded time, never hang.
 *
 *   mpirun --mca orte_abort_on_non_zero_status 0 ... \
 *          ./coll_kill VICTIM FILE [BOUND [bcast]]
 *
 * With "bcast" the loop runs 64 KiB bcasts instead, the root moving by one
 * rank every call (with UCX_UCG_MC=yes: host leaders on mc_udp).
 *
 * Every rank runs allgathers of 64 KiB in all in a loop with
 * MPI_ERRORS_RETURN: small enough for coll/ucg's pack buffers, so that a
 * repeated call needs no agreement through the previous module (Open
 * MPI's own allreduce, which waits forever for a dead rank; see
 * src/ompi/coll/ucg/README.md) and the error can only come from UCG.
 * Rank VICTIM starts a thread that, 0.3 s into the loop, writes the time
 * (CLOCK_REALTIME, the same clock on every "host" of the machine) to FILE
 * and kills its own process with SIGKILL, nearly always inside a
 * collective.  Every survivor stops at its first failed
 * call and prints
 *   coll_kill: rank R on HOST: error S s after the kill: MSG
 * It prints a FAIL line instead when a call failed before the kill, when a
 * call failed or still succeeded more than BOUND s (default 60, a bound
 * against hangs) after it, or when no kill came within BOUND s of the
 * start.  A survivor then exits with status 1 without MPI_Finalize (the
 * dead member could not take part in it, and a survivor waiting there
 * would look alive and slow to the others).  With
 * `--mca orte_abort_on_non_zero_status 0` Open MPI lets the others run on
 * after the kill and these exits (an exit with status 0 without
 * MPI_Finalize would make it kill them); mpirun itself may not end then:
 * the caller stops it once every survivor has printed its line
 * (test/mpi/run-multihost.sh).
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "mpi_check.h"

static const char *kill_file;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The time of the kill, or 0 when it has not happened (yet) */
static double kill_time(void)
{
    double t = 0;
    FILE *f;

    f = fopen(kill_file, "r");
    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%lf", &t) != 1) {
        t = 0;
    }
    fclose(f);
    return t;
}

static void *victim_thread(void *arg)
{
    char tmp[4096];
    FILE *f;

    usleep(300000);
    /* written whole before it is visible under its name */
    snprintf(tmp, sizeof(tmp), "%s.tmp", kill_file);
    f = fopen(tmp, "w");
    if (f != NULL) {
        fprintf(f, "%.6f\n", now());
        fclose(f);
        rename(tmp, kill_file);
    }
    printf("coll_kill: rank %d kills itself\n", check_rank);
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return NULL;
}

int main(int argc, char **argv)
{
    char host[256] = "?", msg[MPI_MAX_ERROR_STRING];
    int rank, size, victim, rc, len, i, iter, wrong, count, bcast, root;
    double bound = 60, start, t, tk;
    int *sbuf, *rbuf;
    pthread_t thread;

    check_init(&argc, &argv, &rank, &size);
    if (argc < 3) {
        if (rank == 0) {
            fprintf(stderr, "usage: coll_kill VICTIM FILE [BOUND [bcast]]"
                    "\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    victim    = atoi(argv[1]);
    kill_file = argv[2];
    if (argc > 3) {
        bound = atof(argv[3]);
    }
    bcast = (argc > 4) && !strcmp(argv[4], "bcast");
    gethostname(host, sizeof(host) - 1);
    count = 16384 / size; /* MPI_INT per rank */

    sbuf = malloc(sizeof(*sbuf) * count);
    rbuf = malloc(sizeof(*rbuf) * count * (size_t)size);
    if ((sbuf == NULL) || (rbuf == NULL) || (victim < 0) ||
        (victim >= size)) {
        printf("coll_kill: rank %d: FAIL: no memory or bad victim %d\n",
               rank, victim);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* connections made, the first liveness checks done */
    for (i = 0; i < 3; ++i) {
        CALL("warm-up allgather",
             MPI_Allgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT,
                           MPI_COMM_WORLD));
    }
    CALL("barrier", MPI_Barrier(MPI_COMM_WORLD));
    if (errors) {
        printf("coll_kill: rank %d: FAIL: warm-up failed\n", rank);
        fflush(stdout);
        _exit(1);
    }

    if ((rank == victim) &&
        (pthread_create(&thread, NULL, victim_thread, NULL) != 0)) {
        printf("coll_kill: rank %d: FAIL: no thread\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    start = now();
    for (iter = 0;; ++iter) {
        for (i = 0; i < count; ++i) {
            sbuf[i] = rank * 7 + i + iter;
        }
        if (bcast) {
            /* the root's blocks as an allgather would leave them */
            root = iter % size;
            for (i = 0; (rank == root) && (i < count * size); ++i) {
                rbuf[i] = (i / count) * 7 + i % count + iter;
            }
            rc = MPI_Bcast(rbuf, count * size, MPI_INT, root,
                           MPI_COMM_WORLD);
        } else {
            rc = MPI_Allgather(sbuf, count, MPI_INT, rbuf, count, MPI_INT,
                               MPI_COMM_WORLD);
        }
        t  = now();
        tk = kill_time();
        if (rc != MPI_SUCCESS) {
            MPI_Error_string(rc, msg, &len);
            if (tk == 0) {
                printf("coll_kill: rank %d on %s: FAIL: error before the "
                       "kill: %s\n", rank, host, msg);
            } else if (t - tk > bound) {
                printf("coll_kill: rank %d on %s: FAIL: error %.1f s after "
                       "the kill: %s\n", rank, host, t - tk, msg);
            } else {
                printf("coll_kill: rank %d on %s: error %.3f s after the "
                       "kill: %s\n", rank, host, t - tk, msg);
            }
            break;
        }
        wrong = 0;
        for (i = 0; (i < count * size) && !wrong; i += 4099) {
            wrong = (rbuf[i] != (i / count) * 7 + i % count + iter);
        }
        if (wrong) {
            printf("coll_kill: rank %d on %s: FAIL: wrong result\n", rank,
                   host);
            break;
        }
        if ((tk != 0) && (t - tk > bound)) {
            printf("coll_kill: rank %d on %s: FAIL: succeeded %.1f s after "
                   "the kill\n", rank, host, t - tk);
            break;
        }
        if ((tk == 0) && (t - start > bound)) {
            printf("coll_kill: rank %d on %s: FAIL: no kill in %.0f s\n",
                   rank, host, bound);
            break;
        }
    }
    fflush(stdout);
    _exit(1);
}
