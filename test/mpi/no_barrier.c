/**
 * ucx-o2m MPI tests: an MPI_Barrier that lets every rank through at once,
 * preloaded (LD_PRELOAD) into coll_bench to show that its barrier check
 * fails such a barrier (test/mpi/run-multihost.sh -b).  Built by the
 * script with the build's mpicc.
 */
#include <mpi.h>

int MPI_Barrier(MPI_Comm comm)
{
    (void)comm;
    return MPI_SUCCESS;
}
