/**
 * UCG: the names of the collective types, one table for the library, its
 * tools and the tuning rules' fuzz target (which links nothing else of
 * UCG).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "api/ucg.h"

#include <stddef.h>


static const char *ucg_coll_names[] = {
    [UCG_COLL_BCAST]                = "bcast",
    [UCG_COLL_REDUCE]               = "reduce",
    [UCG_COLL_ALLREDUCE]            = "allreduce",
    [UCG_COLL_BARRIER]              = "barrier",
    [UCG_COLL_GATHER]               = "gather",
    [UCG_COLL_SCATTER]              = "scatter",
    [UCG_COLL_ALLGATHER]            = "allgather",
    [UCG_COLL_REDUCE_SCATTER]       = "reduce_scatter",
    [UCG_COLL_REDUCE_SCATTER_BLOCK] = "reduce_scatter_block",
    [UCG_COLL_SCAN]                 = "scan",
    [UCG_COLL_EXSCAN]               = "exscan",
    [UCG_COLL_GATHERV]              = "gatherv",
    [UCG_COLL_SCATTERV]             = "scatterv",
    [UCG_COLL_ALLGATHERV]           = "allgatherv",
    [UCG_COLL_ALLTOALL]             = "alltoall",
    [UCG_COLL_ALLTOALLV]            = "alltoallv"
};

/* A type added to the enum needs its name here (the tuning rules and the
 * printed plans name collectives by it) */
_Static_assert(sizeof(ucg_coll_names) / sizeof(ucg_coll_names[0]) ==
               UCG_COLL_LAST, "a collective type has no name");

const char *ucg_coll_name(ucg_coll_type_t type)
{
    return (((unsigned)type < UCG_COLL_LAST) &&
            (ucg_coll_names[type] != NULL)) ? ucg_coll_names[type] :
           "invalid";
}
