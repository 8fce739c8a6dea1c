/*
 * An unrelated, busy MPI job: loops small collectives on MPI_COMM_WORLD
 * (with Open MPI's defaults, over vader and its /dev/shm/vader_segment.*
 * files) until STOP_FILE exists, SIGTERM/SIGINT, or for at most MAX_SECONDS.
 * contrib/test.sh runs the gtest suite next to it, to prove that the
 * suite's residue checks see only what the project creates.
 *
 *   mpirun -np 2 ./mpi_busy [MAX_SECONDS (3600) [STOP_FILE [PAUSE_US (1000)]]]
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    stop = 1;
}

int main(int argc, char **argv)
{
    double max_seconds = (argc > 1) ? atof(argv[1]) : 3600;
    const char *stop_file = (argc > 2) ? argv[2] : NULL;
    long pause_us      = (argc > 3) ? atol(argv[3]) : 1000;
    int rank, size, go = 1, sum, iters = 0, bad = 0;
    double start;

    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    start = MPI_Wtime();

    /* Every rank stops at the same iteration: rank 0 decides */
    while (go) {
        go = !stop && (MPI_Wtime() - start < max_seconds) &&
             ((stop_file == NULL) || (access(stop_file, F_OK) != 0));
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        bad += (sum != size * (size - 1) / 2);
        MPI_Barrier(MPI_COMM_WORLD);
        ++iters;
        if (pause_us > 0) {
            usleep(pause_us);
        }
    }
    if (rank == 0) {
        printf("mpi_busy: %d iterations, %d wrong results\n", iters, bad);
    }
    MPI_Finalize();
    return bad != 0;
}
