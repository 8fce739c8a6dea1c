/*
 * Persistent collectives (MPI 4.0): MPI_Bcast_init, MPI_Allreduce_init,
 * MPI_Reduce_init, MPI_Barrier_init, MPI_Gather_init, MPI_Scatter_init,
 * MPI_Allgather_init, MPI_Gatherv_init, MPI_Scatterv_init,
 * MPI_Allgatherv_init, MPI_Reduce_scatter_init,
 * MPI_Reduce_scatter_block_init, MPI_Scan_init, MPI_Exscan_init,
 * MPI_Alltoall_init and MPI_Alltoallv_init, each initialized once per
 * communicator and started many times (MPI_Startall of all of them, then
 * MPI_Start one by one), with the input changed between starts, results
 * checked against a local reference after every completion (for the nine
 * after MPI_Allgather_init the whole receive buffer: gaps, holes of a
 * strided type and what in place leaves alone included).
 *
 * Variants: contiguous and strided (packed) datatypes, in place, roots
 * that move between requests, empty blocks and blocks in reverse rank
 * order (vector and alltoallv kinds), on MPI_COMM_WORLD, a duplicate, a
 * reversed split and an odd-sized subset.
 *
 * Usage: coll_persist [ROUNDS [free | mismatch]]    (default 20)
 *   free: the strided datatype is freed once the requests exist, as MPI
 *   allows (the requests keep it alive); Open MPI 5.0.7's own libnbc
 *   crashes then (its persistent requests do not retain their datatypes:
 *   ompi_coll_base_retain_datatypes skips a complete request, as an
 *   inactive persistent one is), so only with coll/ucg; without it, the
 *   in-place alltoallv is kept to 300 ints a block (libnbc's bug below)
 *   mismatch: only the test of a persistent alltoallv whose counts differ
 *   on one rank (mismatch(); coll/ucg only: what Open MPI's own modules do
 *   with such an erroneous program is not checked)
 * Prints "coll_persist: OK" on rank 0 when every check passed; with an MPI
 * older than 4.0 (no persistent collectives) it prints "coll_persist: MPI
 * < 4.0" and fails: test/mpi/run.sh runs it on Open MPI 5 only.
 */
#include "mpi_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* MPI 4.0 persistent collectives: Open MPI 5.0 has them (though it reports
 * MPI 3.1) */
#if (MPI_VERSION >= 4) || \
    (defined(OMPI_MAJOR_VERSION) && (OMPI_MAJOR_VERSION >= 5))

#define MAX_OPS 16

enum { K_BCAST, K_BCAST_STRIDED, K_ALLREDUCE, K_ALLREDUCE_INPLACE,
       K_REDUCE, K_BARRIER, K_GATHER, K_GATHER_INPLACE, K_SCATTER,
       K_SCATTER_INPLACE, K_ALLGATHER, K_ALLGATHER_INPLACE,
       K_ALLGATHER_STRIDED,
       /* checked against a whole reference buffer (expect()) */
       K_GATHERV, K_GATHERV_INPLACE, K_GATHERV_STRIDED, K_SCATTERV,
       K_SCATTERV_INPLACE, K_SCATTERV_STRIDED, K_ALLGATHERV,
       K_ALLGATHERV_INPLACE, K_ALLGATHERV_STRIDED, K_REDUCE_SCATTER,
       K_REDUCE_SCATTER_INPLACE, K_REDUCE_SCATTER_BLOCK,
       K_REDUCE_SCATTER_BLOCK_INPLACE, K_SCAN, K_SCAN_INPLACE, K_EXSCAN,
       K_EXSCAN_INPLACE, K_ALLTOALL, K_ALLTOALL_INPLACE, K_ALLTOALL_STRIDED,
       K_ALLTOALLV, K_ALLTOALLV_INPLACE, K_ALLTOALLV_STRIDED, K_LAST };

static const char *kind_names[] = {
    "bcast_init", "bcast_init(strided)", "allreduce_init",
    "allreduce_init(in place)", "reduce_init", "barrier_init",
    "gather_init", "gather_init(in place)", "scatter_init",
    "scatter_init(in place)", "allgather_init", "allgather_init(in place)",
    "allgather_init(strided)",
    "gatherv_init", "gatherv_init(in place)", "gatherv_init(strided)",
    "scatterv_init", "scatterv_init(in place)", "scatterv_init(strided)",
    "allgatherv_init", "allgatherv_init(in place)",
    "allgatherv_init(strided)", "reduce_scatter_init",
    "reduce_scatter_init(in place)", "reduce_scatter_block_init",
    "reduce_scatter_block_init(in place)", "scan_init",
    "scan_init(in place)", "exscan_init", "exscan_init(in place)",
    "alltoall_init", "alltoall_init(in place)", "alltoall_init(strided)",
    "alltoallv_init", "alltoallv_init(in place)", "alltoallv_init(strided)"
};

typedef struct {
    MPI_Comm    comm;
    const char  *comm_name;
    int         rank, size;
    int         kind, root, count;
    int         *in, *out;       /* what the request was created with */
    int         *filled;         /* out as filled before the start */
    size_t      len;             /* ints of in, out and filled */
    int         *scnt, *sdsp;    /* count / displacement arrays of the */
    int         *rcnt, *rdsp;    /* vector kinds (comm size each) */
    MPI_Request req;
} op_t;

static MPI_Datatype g_strided; /* an int with the extent of two: a count
                                  of it is every other int */

static int g_ucg; /* run with coll/ucg ("free"): no cap for libnbc */

static int val(int rank, int i, int seed)
{
    uint32_t x = (uint32_t)rank * 2654435761u ^ (uint32_t)i * 40503u ^
                 (uint32_t)seed * 97u;

    x ^= x >> 13;
    return (int)(x % 1000) - 500;
}

static int *alloc_ints(size_t n)
{
    int *p = calloc(n ? n : 1, sizeof(int));

    if (p == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

/* Elements of rank @a k's block in the vector collectives: some empty */
static int vcnt(int k, int c)
{
    return (k % 3 == 1) ? 0 : c + k;
}

/* Elements rank @a src sends rank @a dst in alltoallv (@a sym: as many
 * both ways, as in place requires); some empty */
static int a2c(int src, int dst, int c, int sym)
{
    int x = sym ? src + dst : src + 2 * dst;

    return (x % 4 == 3) ? 0 : c + x % 5;
}

/* Displacements of @a n blocks of @a cnt: in reverse rank order, one
 * element apart */
static void layout(int n, const int *cnt, int *dsp)
{
    int k, pos = 1;

    for (k = n - 1; k >= 0; --k) {
        dsp[k] = pos;
        pos   += cnt[k] + 1;
    }
}

static int is_inplace(int kind)
{
    return (kind == K_GATHERV_INPLACE) || (kind == K_SCATTERV_INPLACE) ||
           (kind == K_ALLGATHERV_INPLACE) ||
           (kind == K_REDUCE_SCATTER_INPLACE) ||
           (kind == K_REDUCE_SCATTER_BLOCK_INPLACE) ||
           (kind == K_SCAN_INPLACE) || (kind == K_EXSCAN_INPLACE) ||
           (kind == K_ALLTOALL_INPLACE) || (kind == K_ALLTOALLV_INPLACE);
}

static int is_strided(int kind)
{
    return (kind == K_GATHERV_STRIDED) || (kind == K_SCATTERV_STRIDED) ||
           (kind == K_ALLGATHERV_STRIDED) || (kind == K_ALLTOALL_STRIDED) ||
           (kind == K_ALLTOALLV_STRIDED);
}

/* Where element @a x of a (possibly strided) buffer lies, in ints */
#define POS(_op, _x) (is_strided((_op)->kind) ? 2 * (_x) : (_x))

/* The persistent request of a kind checked against a reference */
static void create_ref_kind(op_t *op)
{
    int n = op->size, r = op->rank, c = op->count, k;
    int inplace    = is_inplace(op->kind);
    MPI_Datatype v = is_strided(op->kind) ? g_strided : MPI_INT;
    const void *sb = inplace ? MPI_IN_PLACE : op->in;
    const void *sb_root = (inplace && (r == op->root)) ? MPI_IN_PLACE :
                                                         op->in;

    for (k = 0; k < n; ++k) {
        op->scnt[k] = op->rcnt[k] = vcnt(k, c);
        if ((op->kind >= K_ALLTOALLV) && (op->kind <= K_ALLTOALLV_STRIDED)) {
            op->scnt[k] = a2c(r, k, c, inplace);
            op->rcnt[k] = a2c(k, r, c, inplace);
        }
    }
    layout(n, op->scnt, op->sdsp);
    layout(n, op->rcnt, op->rdsp);

    switch (op->kind) {
    case K_GATHERV:
    case K_GATHERV_INPLACE:
    case K_GATHERV_STRIDED:
        CALL("MPI_Gatherv_init", MPI_Gatherv_init(sb_root, vcnt(r, c),
             MPI_INT, op->out, op->rcnt, op->rdsp, v, op->root, op->comm,
             MPI_INFO_NULL, &op->req));
        break;
    case K_SCATTERV:
    case K_SCATTERV_INPLACE:
    case K_SCATTERV_STRIDED:
        CALL("MPI_Scatterv_init", MPI_Scatterv_init(op->in, op->scnt,
             op->sdsp, v, (inplace && (r == op->root)) ? MPI_IN_PLACE :
             op->out, vcnt(r, c), MPI_INT, op->root, op->comm,
             MPI_INFO_NULL, &op->req));
        break;
    case K_ALLGATHERV:
    case K_ALLGATHERV_INPLACE:
    case K_ALLGATHERV_STRIDED:
        CALL("MPI_Allgatherv_init", MPI_Allgatherv_init(sb, vcnt(r, c),
             MPI_INT, op->out, op->rcnt, op->rdsp, v, op->comm,
             MPI_INFO_NULL, &op->req));
        break;
    case K_REDUCE_SCATTER:
    case K_REDUCE_SCATTER_INPLACE:
        CALL("MPI_Reduce_scatter_init", MPI_Reduce_scatter_init(sb, op->out,
             op->rcnt, MPI_INT, MPI_SUM, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_REDUCE_SCATTER_BLOCK:
    case K_REDUCE_SCATTER_BLOCK_INPLACE:
        CALL("MPI_Reduce_scatter_block_init", MPI_Reduce_scatter_block_init(
             sb, op->out, c, MPI_INT, MPI_MAX, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_SCAN:
    case K_SCAN_INPLACE:
        CALL("MPI_Scan_init", MPI_Scan_init(sb, op->out, c, MPI_INT,
             inplace ? MPI_MIN : MPI_SUM, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_EXSCAN:
    case K_EXSCAN_INPLACE:
        CALL("MPI_Exscan_init", MPI_Exscan_init(sb, op->out, c, MPI_INT,
             inplace ? MPI_MAX : MPI_SUM, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_ALLTOALL:
    case K_ALLTOALL_INPLACE:
    case K_ALLTOALL_STRIDED:
        /* a strided send block, contiguous receive blocks */
        CALL("MPI_Alltoall_init", MPI_Alltoall_init(sb, c, v, op->out, c,
             MPI_INT, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_ALLTOALLV:
    case K_ALLTOALLV_INPLACE:
    case K_ALLTOALLV_STRIDED:
        /* contiguous send blocks, strided receive blocks */
        CALL("MPI_Alltoallv_init", MPI_Alltoallv_init(sb, op->scnt,
             op->sdsp, MPI_INT, op->out, op->rcnt, op->rdsp, v, op->comm,
             MPI_INFO_NULL, &op->req));
        break;
    }
}

/* Create op's persistent request (its comm, kind, root, count set) */
static void create(op_t *op)
{
    int n = op->size, c = op->count;

    /* the largest layout: n blocks of up to c + n + 4 elements one apart,
     * strided */
    op->len  = ((size_t)c + n + 6) * n * 2 + 16;
    op->in     = alloc_ints(op->len);
    op->out    = alloc_ints(op->len);
    op->filled = alloc_ints(op->len);
    op->scnt = alloc_ints(n);
    op->sdsp = alloc_ints(n);
    op->rcnt = alloc_ints(n);
    op->rdsp = alloc_ints(n);
    if (op->kind >= K_GATHERV) {
        create_ref_kind(op);
        return;
    }
    switch (op->kind) {
    case K_BCAST:
        CALL("MPI_Bcast_init", MPI_Bcast_init(op->out, c, MPI_INT, op->root,
             op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_BCAST_STRIDED:
        CALL("MPI_Bcast_init", MPI_Bcast_init(op->out, c, g_strided, op->root,
             op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_ALLREDUCE:
        CALL("MPI_Allreduce_init", MPI_Allreduce_init(op->in, op->out, c,
             MPI_INT, MPI_SUM, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_ALLREDUCE_INPLACE:
        CALL("MPI_Allreduce_init", MPI_Allreduce_init(MPI_IN_PLACE, op->out,
             c, MPI_INT, MPI_MAX, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_REDUCE:
        CALL("MPI_Reduce_init", MPI_Reduce_init(op->in, op->out, c, MPI_INT,
             MPI_SUM, op->root, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_BARRIER:
        CALL("MPI_Barrier_init", MPI_Barrier_init(op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_GATHER:
        CALL("MPI_Gather_init", MPI_Gather_init(op->in, c, MPI_INT, op->out,
             c, MPI_INT, op->root, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_GATHER_INPLACE:
        CALL("MPI_Gather_init", MPI_Gather_init(
             (op->rank == op->root) ? MPI_IN_PLACE : op->in, c, MPI_INT,
             op->out, c, MPI_INT, op->root, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_SCATTER:
        CALL("MPI_Scatter_init", MPI_Scatter_init(op->in, c, MPI_INT,
             op->out, c, MPI_INT, op->root, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_SCATTER_INPLACE:
        CALL("MPI_Scatter_init", MPI_Scatter_init(op->in, c, MPI_INT,
             (op->rank == op->root) ? MPI_IN_PLACE : op->out, c, MPI_INT,
             op->root, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_ALLGATHER:
        CALL("MPI_Allgather_init", MPI_Allgather_init(op->in, c, MPI_INT,
             op->out, c, MPI_INT, op->comm, MPI_INFO_NULL, &op->req));
        break;
    case K_ALLGATHER_INPLACE:
        CALL("MPI_Allgather_init", MPI_Allgather_init(MPI_IN_PLACE, c,
             MPI_INT, op->out, c, MPI_INT, op->comm, MPI_INFO_NULL,
             &op->req));
        break;
    case K_ALLGATHER_STRIDED:
        /* a strided send block, contiguous receive blocks */
        CALL("MPI_Allgather_init", MPI_Allgather_init(op->in, c, g_strided,
             op->out, c, MPI_INT, op->comm, MPI_INFO_NULL, &op->req));
        break;
    }
}

/* Fill the buffers of a kind checked against a reference */
static void fill_ref_kind(op_t *op, int seed)
{
    int n = op->size, r = op->rank, c = op->count, i, k, total = 0;
    int inplace = is_inplace(op->kind);
    int *src    = inplace ? op->out : op->in;

    for (k = 0; k < n; ++k) {
        total += op->rcnt[k];
    }
    switch (op->kind) {
    case K_GATHERV:
    case K_GATHERV_STRIDED:
    case K_ALLGATHERV:
    case K_ALLGATHERV_STRIDED:
        for (i = 0; i < vcnt(r, c); ++i) {
            op->in[i] = val(r, i, seed);
        }
        break;
    case K_GATHERV_INPLACE:
    case K_ALLGATHERV_INPLACE:
        for (i = 0; i < vcnt(r, c); ++i) {
            op->in[i] = val(r, i, seed); /* a non-root gatherv's */
            if ((op->kind == K_ALLGATHERV_INPLACE) || (r == op->root)) {
                op->out[op->rdsp[r] + i] = val(r, i, seed);
            }
        }
        break;
    case K_SCATTERV:
    case K_SCATTERV_INPLACE:
    case K_SCATTERV_STRIDED:
        for (k = 0; (r == op->root) && (k < n); ++k) {
            for (i = 0; i < op->scnt[k]; ++i) {
                op->in[POS(op, op->sdsp[k] + i)] = val(k, i, seed);
            }
        }
        break;
    case K_REDUCE_SCATTER:
    case K_REDUCE_SCATTER_INPLACE:
        for (i = 0; i < total; ++i) {
            src[i] = val(r, i, seed);
        }
        break;
    case K_REDUCE_SCATTER_BLOCK:
    case K_REDUCE_SCATTER_BLOCK_INPLACE:
        for (i = 0; i < n * c; ++i) {
            src[i] = val(r, i, seed);
        }
        break;
    case K_SCAN:
    case K_SCAN_INPLACE:
    case K_EXSCAN:
    case K_EXSCAN_INPLACE:
        for (i = 0; i < c; ++i) {
            src[i] = val(r, i, seed);
        }
        break;
    case K_ALLTOALL:
    case K_ALLTOALL_INPLACE:
    case K_ALLTOALL_STRIDED:
        for (k = 0; k < n; ++k) {
            for (i = 0; i < c; ++i) {
                src[POS(op, k * c + i)] = val(r, k * 4096 + i, seed);
            }
        }
        break;
    case K_ALLTOALLV:
    case K_ALLTOALLV_INPLACE:
    case K_ALLTOALLV_STRIDED:
        /* in place: the data to send laid out as what is received */
        for (k = 0; k < n; ++k) {
            for (i = 0; i < op->scnt[k]; ++i) {
                src[inplace ? op->rdsp[k] + i : op->sdsp[k] + i] =
                    val(r, k * 4096 + i, seed);
            }
        }
        break;
    }
}

/* Fill op's buffers for the start of round @a seed */
static void fill(op_t *op, int seed)
{
    int n = op->size, r = op->rank, c = op->count, i, k;

    memset(op->out, 0x5a, op->len * sizeof(int));
    if (op->kind >= K_GATHERV) {
        memset(op->in, 0x5a, op->len * sizeof(int));
        fill_ref_kind(op, seed);
        return;
    }
    switch (op->kind) {
    case K_BCAST:
        for (i = 0; (r == op->root) && (i < c); ++i) {
            op->out[i] = val(op->root, i, seed);
        }
        break;
    case K_BCAST_STRIDED:
        for (i = 0; (r == op->root) && (i < c); ++i) {
            op->out[2 * i] = val(op->root, i, seed);
        }
        break;
    case K_ALLREDUCE:
    case K_REDUCE:
        for (i = 0; i < c; ++i) {
            op->in[i] = val(r, i, seed);
        }
        break;
    case K_ALLREDUCE_INPLACE:
        for (i = 0; i < c; ++i) {
            op->out[i] = val(r, i, seed);
        }
        break;
    case K_GATHER:
    case K_ALLGATHER:
        for (i = 0; i < c; ++i) {
            op->in[i] = val(r, i, seed);
        }
        break;
    case K_GATHER_INPLACE:
        for (i = 0; i < c; ++i) {
            op->in[i] = val(r, i, seed);
            if (r == op->root) {
                op->out[r * c + i] = val(r, i, seed);
            }
        }
        break;
    case K_ALLGATHER_INPLACE:
        for (i = 0; i < c; ++i) {
            op->out[r * c + i] = val(r, i, seed);
        }
        break;
    case K_ALLGATHER_STRIDED:
        for (i = 0; i < c; ++i) {
            op->in[2 * i]     = val(r, i, seed);
            op->in[2 * i + 1] = -1; /* not sent */
        }
        break;
    case K_SCATTER:
    case K_SCATTER_INPLACE:
        for (k = 0; (r == op->root) && (k < n); ++k) {
            for (i = 0; i < c; ++i) {
                op->in[k * c + i] = val(k, i, seed);
            }
        }
        break;
    }
}

/* The reduction of every rank's element @a j of round @a seed over the
 * ranks [@a lo, @a hi): 0 sum, 1 max, 2 min */
static int reduced(int lo, int hi, int j, int seed, int how)
{
    int q, x, e = (how == 0) ? 0 : val(lo, j, seed);

    for (q = lo; q < hi; ++q) {
        x = val(q, j, seed);
        e = (how == 0) ? e + x : (how == 1) ? ((x > e) ? x : e) :
                                               ((x < e) ? x : e);
    }
    return e;
}

/* What a kind checked against a reference must find in its receive buffer
 * after round @a seed: @a ref, from the buffer as filled (@a ref on entry)
 * with what it receives written over it; the ints to compare (the rest is
 * undefined by MPI) */
static size_t expect(const op_t *op, int seed, int *ref)
{
    int n = op->size, r = op->rank, c = op->count, i, k, off = 0;
    int inplace = is_inplace(op->kind);

    switch (op->kind) {
    case K_GATHERV:
    case K_GATHERV_INPLACE:
    case K_GATHERV_STRIDED:
    case K_ALLGATHERV:
    case K_ALLGATHERV_INPLACE:
    case K_ALLGATHERV_STRIDED:
        if ((op->kind <= K_GATHERV_STRIDED) && (r != op->root)) {
            break;
        }
        for (k = 0; k < n; ++k) {
            for (i = 0; i < op->rcnt[k]; ++i) {
                ref[POS(op, op->rdsp[k] + i)] = val(k, i, seed);
            }
        }
        break;
    case K_SCATTERV:
    case K_SCATTERV_INPLACE:
    case K_SCATTERV_STRIDED:
        for (i = 0; !(inplace && (r == op->root)) && (i < vcnt(r, c)); ++i) {
            ref[i] = val(r, i, seed);
        }
        break;
    case K_REDUCE_SCATTER:
    case K_REDUCE_SCATTER_INPLACE:
        for (k = 0; k < r; ++k) {
            off += op->rcnt[k];
        }
        for (i = 0; i < op->rcnt[r]; ++i) {
            ref[i] = reduced(0, n, off + i, seed, 0);
        }
        return inplace ? (size_t)op->rcnt[r] : op->len;
    case K_REDUCE_SCATTER_BLOCK:
    case K_REDUCE_SCATTER_BLOCK_INPLACE:
        for (i = 0; i < c; ++i) {
            ref[i] = reduced(0, n, r * c + i, seed, 1);
        }
        return inplace ? (size_t)c : op->len;
    case K_SCAN:
    case K_SCAN_INPLACE:
        for (i = 0; i < c; ++i) {
            ref[i] = reduced(0, r + 1, i, seed, inplace ? 2 : 0);
        }
        break;
    case K_EXSCAN:
    case K_EXSCAN_INPLACE:
        if (r == 0) {
            return 0; /* rank 0's result is undefined */
        }
        for (i = 0; i < c; ++i) {
            ref[i] = reduced(0, r, i, seed, inplace ? 1 : 0);
        }
        break;
    case K_ALLTOALL:
    case K_ALLTOALL_INPLACE:
    case K_ALLTOALL_STRIDED:
        for (k = 0; k < n; ++k) {
            for (i = 0; i < c; ++i) {
                ref[k * c + i] = val(k, r * 4096 + i, seed);
            }
        }
        break;
    case K_ALLTOALLV:
    case K_ALLTOALLV_INPLACE:
    case K_ALLTOALLV_STRIDED:
        for (k = 0; k < n; ++k) {
            for (i = 0; i < op->rcnt[k]; ++i) {
                ref[POS(op, op->rdsp[k] + i)] = val(k, r * 4096 + i, seed);
            }
        }
        break;
    }
    return op->len;
}

/* Check the result of a kind checked against a reference; @a filled: its
 * receive buffer as filled before the start */
static void check_ref_kind(const op_t *op, int seed, const int *filled)
{
    int *ref = alloc_ints(op->len);
    size_t chk, i;

    memcpy(ref, filled, op->len * sizeof(int));
    chk = expect(op, seed, ref);
    for (i = 0; i < chk; ++i) {
        if (op->out[i] != ref[i]) {
            check_fail("%s on %s round %d rank %d root %d count %d: [%zu] "
                       "= %d, expected %d", kind_names[op->kind],
                       op->comm_name, seed, op->rank, op->root, op->count, i,
                       op->out[i], ref[i]);
            break;
        }
    }
    free(ref);
}

/* Check op's result of round @a seed (@a filled: its receive buffer as
 * filled before the start) */
static void check(op_t *op, int seed, const int *filled)
{
    int n = op->size, r = op->rank, c = op->count, i, k, e, got;

    if (op->kind >= K_GATHERV) {
        check_ref_kind(op, seed, filled);
        return;
    }

#define EXPECT(_idx, _exp) \
    do { \
        got = op->out[_idx]; \
        e   = (_exp); \
        if (got != e) { \
            check_fail("%s on %s round %d rank %d root %d count %d: " \
                       "[%d] = %d, expected %d", kind_names[op->kind], \
                       op->comm_name, seed, r, op->root, c, (int)(_idx), \
                       got, e); \
            return; \
        } \
    } while (0)

    switch (op->kind) {
    case K_BCAST:
        for (i = 0; i < c; ++i) {
            EXPECT(i, val(op->root, i, seed));
        }
        break;
    case K_BCAST_STRIDED:
        for (i = 0; i < c; ++i) {
            EXPECT(2 * i, val(op->root, i, seed));
            EXPECT(2 * i + 1, 0x5a5a5a5a); /* the gaps untouched */
        }
        break;
    case K_ALLREDUCE:
    case K_REDUCE:
        if ((op->kind == K_REDUCE) && (r != op->root)) {
            break;
        }
        for (i = 0; i < c; ++i) {
            for (k = 0, e = 0; k < n; ++k) {
                e += val(k, i, seed);
            }
            EXPECT(i, e);
        }
        break;
    case K_ALLREDUCE_INPLACE:
        for (i = 0; i < c; ++i) {
            int mx = val(0, i, seed);

            for (k = 1; k < n; ++k) {
                mx = (val(k, i, seed) > mx) ? val(k, i, seed) : mx;
            }
            EXPECT(i, mx);
        }
        break;
    case K_GATHER:
    case K_GATHER_INPLACE:
        if (r != op->root) {
            break;
        }
        /* fall through */
    case K_ALLGATHER:
    case K_ALLGATHER_INPLACE:
    case K_ALLGATHER_STRIDED:
        for (k = 0; k < n; ++k) {
            for (i = 0; i < c; ++i) {
                EXPECT(k * c + i, val(k, i, seed));
            }
        }
        break;
    case K_SCATTER:
        for (i = 0; i < c; ++i) {
            EXPECT(i, val(r, i, seed));
        }
        break;
    case K_SCATTER_INPLACE:
        if (r == op->root) {
            break; /* the root's block stays in its send buffer */
        }
        for (i = 0; i < c; ++i) {
            EXPECT(i, val(r, i, seed));
        }
        break;
    }
#undef EXPECT
}

/* One communicator's requests: every kind, counts and roots varied */
static int setup(op_t *ops, MPI_Comm comm, const char *name, int shift)
{
    static const int counts[] = {1, 7, 300, 2100};
    int n, r, k;

    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    for (k = 0; k < K_LAST; ++k) {
        ops[k].comm      = comm;
        ops[k].comm_name = name;
        ops[k].rank      = r;
        ops[k].size      = n;
        ops[k].kind      = k;
        ops[k].root      = (k + shift) % n;
        ops[k].count     = counts[(k + shift) % 4];
        if (!g_ucg && (k == K_ALLTOALLV_INPLACE) && (ops[k].count > 300)) {
            /* Open MPI 5.0.7's libnbc mixes the blocks of an in-place
             * alltoallv up at 4 ranks and 2100 ints (rank 0 receives from
             * rank 1 the block meant for rank 3; MPI_Ialltoallv too) */
            ops[k].count = 300;
        }
        create(&ops[k]);
    }
    return K_LAST;
}

/* MPI_Start, then MPI_Wait if it started: the first error */
static int start_wait(MPI_Request *req)
{
    int rc = MPI_Start(req);

    return (rc != MPI_SUCCESS) ? rc : MPI_Wait(req, MPI_STATUS_IGNORE);
}

/*
 * "mismatch": a persistent alltoallv whose counts are larger on one rank
 * (the last: C + 1 elements to and from every rank, C on the others; an
 * erroneous program, which must not hang): every rank's start or wait of
 * it returns an error (every receive checks the length its peer sent;
 * docs/ucg.md).  Then, as docs/ucg.md says of a group whose collective
 * failed, every later collective on that communicator fails on every rank
 * (a restart of that request, another persistent request, a blocking
 * barrier), while on another communicator a persistent allgatherv started
 * @a rounds times gives the right results.
 */
static void mismatch(int rank, int size, int rounds)
{
    enum { C = 64 };
    int c = (rank == size - 1) ? C + 1 : C;
    int *cnt = alloc_ints(size), *dsp = alloc_ints(size);
    int *sb = alloc_ints((size_t)size * (C + 1));
    int *rb = alloc_ints((size_t)size * (C + 1));
    int *gcnt = alloc_ints(size), *gdsp = alloc_ints(size);
    int *gin  = alloc_ints(C + size);
    int *gout = alloc_ints((size_t)size * (2 * C + size));
    MPI_Request a2av, ar, agv;
    MPI_Comm bad, good;
    int one = 1, sum = 0, round, k, i, rc;

    CALL("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &bad));
    CALL("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &good));
    for (k = 0; k < size; ++k) {
        cnt[k] = c;
        dsp[k] = k * (C + 1);
        gcnt[k] = vcnt(k, C);
    }
    layout(size, gcnt, gdsp);
    CALL("MPI_Alltoallv_init", MPI_Alltoallv_init(sb, cnt, dsp, MPI_INT, rb,
         cnt, dsp, MPI_INT, bad, MPI_INFO_NULL, &a2av));
    CALL("MPI_Allreduce_init", MPI_Allreduce_init(&one, &sum, 1, MPI_INT,
         MPI_SUM, bad, MPI_INFO_NULL, &ar));
    CALL("MPI_Allgatherv_init", MPI_Allgatherv_init(gin, vcnt(rank, C),
         MPI_INT, gout, gcnt, gdsp, MPI_INT, good, MPI_INFO_NULL, &agv));

    rc = start_wait(&a2av);
    CHECK(rc != MPI_SUCCESS, "mismatch: the alltoallv_init with a larger "
          "count on rank %d succeeded on rank %d", size - 1, rank);
    for (round = 0; round < rounds; ++round) {
        /* a request whose MPI_Wait failed was freed by Open MPI (its
         * error handling frees requests with errors): started again only
         * if its start failed */
        if (a2av != MPI_REQUEST_NULL) {
            rc = start_wait(&a2av);
            CHECK(rc != MPI_SUCCESS, "mismatch: the failed alltoallv_init "
                  "started again succeeded (round %d)", round);
        }
        rc = start_wait(&ar);
        CHECK(rc != MPI_SUCCESS, "mismatch: an allreduce_init on the "
              "failed communicator succeeded (round %d)", round);
        for (i = 0; i < vcnt(rank, C); ++i) {
            gin[i] = val(rank, i, round);
        }
        CALL("mismatch: allgatherv_init on another communicator",
             start_wait(&agv));
        for (k = 0; k < size; ++k) {
            for (i = 0; i < gcnt[k]; ++i) {
                CHECK(gout[gdsp[k] + i] == val(k, i, round), "mismatch: "
                      "allgatherv_init round %d [%d][%d] = %d, expected %d",
                      round, k, i, gout[gdsp[k] + i], val(k, i, round));
            }
        }
    }
    rc = MPI_Barrier(bad);
    CHECK(rc != MPI_SUCCESS, "mismatch: a barrier on the failed "
          "communicator succeeded");

    if (a2av != MPI_REQUEST_NULL) {
        CALL("MPI_Request_free", MPI_Request_free(&a2av));
    }
    if (ar != MPI_REQUEST_NULL) {
        CALL("MPI_Request_free", MPI_Request_free(&ar));
    }
    CALL("MPI_Request_free", MPI_Request_free(&agv));
    MPI_Comm_free(&bad);
    MPI_Comm_free(&good);
    free(cnt);
    free(dsp);
    free(sb);
    free(rb);
    free(gcnt);
    free(gdsp);
    free(gin);
    free(gout);
}

int main(int argc, char **argv)
{
    int rounds = (argc > 1) ? atoi(argv[1]) : 20;
    int free_early = (argc > 2) && !strcmp(argv[2], "free");
    int mismatch_only = (argc > 2) && !strcmp(argv[2], "mismatch");
    op_t ops[4 * K_LAST];
    MPI_Request reqs[4 * K_LAST];
    MPI_Comm dup, rev, odd;
    int rank, size, nops = 0, round, i, total;

    g_ucg = free_early;
    check_init(&argc, &argv, &rank, &size);
    if (mismatch_only) {
        mismatch(rank, size, rounds);
        MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("coll_persist mismatch: %s (%d ranks, %d rounds, %d "
                   "errors)\n", total ? "FAILED" : "OK", size, rounds,
                   total);
        }
        MPI_Finalize();
        return total ? 1 : 0;
    }
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &g_strided);
    MPI_Type_commit(&g_strided);

    CALL("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CALL("MPI_Comm_split", MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank,
                                          &rev));
    /* an odd-sized subset (all ranks but the last when size is even) */
    CALL("MPI_Comm_split", MPI_Comm_split(MPI_COMM_WORLD,
         ((size % 2 == 0) && (rank == size - 1)) ? MPI_UNDEFINED : 1, rank,
         &odd));
    nops += setup(ops + nops, MPI_COMM_WORLD, "world", 0);
    nops += setup(ops + nops, dup, "dup", 1);
    nops += setup(ops + nops, rev, "reversed", 2);
    if ((odd != MPI_COMM_NULL) && (size > 2)) {
        nops += setup(ops + nops, odd, "odd", 3);
    }
    if (free_early) {
        MPI_Type_free(&g_strided);
    }

    for (round = 0; round < rounds; ++round) {
        for (i = 0; i < nops; ++i) {
            fill(&ops[i], round);
            memcpy(ops[i].filled, ops[i].out, ops[i].len * sizeof(int));
            reqs[i] = ops[i].req;
        }
        if (round % 2 == 0) {
            /* all at once, completed together */
            CALL("MPI_Startall", MPI_Startall(nops, reqs));
            CALL("MPI_Waitall", MPI_Waitall(nops, reqs,
                                            MPI_STATUSES_IGNORE));
        } else {
            /* one by one, completed in reverse order by MPI_Test loops */
            for (i = 0; i < nops; ++i) {
                CALL("MPI_Start", MPI_Start(&reqs[i]));
            }
            for (i = nops - 1; i >= 0; --i) {
                int flag = 0;

                while (!flag) {
                    CALL("MPI_Test", MPI_Test(&reqs[i], &flag,
                                              MPI_STATUS_IGNORE));
                    if (errors) {
                        break;
                    }
                }
            }
        }
        for (i = 0; i < nops; ++i) {
            check(&ops[i], round, ops[i].filled);
        }
    }

    for (i = 0; i < nops; ++i) {
        CALL("MPI_Request_free", MPI_Request_free(&ops[i].req));
        free(ops[i].in);
        free(ops[i].out);
        free(ops[i].filled);
        free(ops[i].scnt);
        free(ops[i].sdsp);
        free(ops[i].rcnt);
        free(ops[i].rdsp);
    }
    if (!free_early) {
        MPI_Type_free(&g_strided);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&rev);
    if (odd != MPI_COMM_NULL) {
        MPI_Comm_free(&odd);
    }

    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_persist: %s (%d ranks, %d requests on rank 0, %d "
               "rounds, %d errors)\n", total ? "FAILED" : "OK", size, nops,
               rounds, total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}

#else /* no MPI_Bcast_init */

int main(int argc, char **argv)
{
    int rank, size;

    check_init(&argc, &argv, &rank, &size);
    (void)calls;
    CHECK(rank != 0, "coll_persist: MPI < 4.0, no persistent collectives");
    MPI_Finalize();
    return 1;
}

#endif
