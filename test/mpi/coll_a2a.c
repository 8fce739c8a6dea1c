/*
 * MPI_Alltoall and MPI_Alltoallv (and MPI_Ialltoall, MPI_Ialltoallv),
 * results checked against a local reference: types (predefined of 1, 4, 8
 * and 16 bytes, a contiguous derived type, a derived type with gaps) x
 * block sizes (0 .. 1 MiB, -q: up to 10 KB) x in place or not x
 * communicators (world, a dup, halves of a split - odd sizes with np odd -,
 * every rank but the first) x blocking or nonblocking (several outstanding
 * on several communicators, completed in another order than started).
 *
 * Every byte a rank sends is a hash of (sender, receiver, element, byte,
 * seed), so every rank knows what it must receive; the bytes a datatype
 * skips (its gaps), and alltoallv's gaps between blocks, must keep their
 * sentinel.  Alltoallv's counts are a hash of (sender, receiver, seed),
 * symmetric in place (MPI: what a rank sends j is what it receives from
 * j); its blocks are laid out in another order than the ranks', with
 * gaps, at displacements that run backwards in the receive buffer.
 *
 * Usage: coll_a2a [-q] [-w] (-q: blocks up to 10 KB, -w: MPI_COMM_WORLD
 * only; other arguments are ignored); prints "coll_a2a: OK" (rank 0) when every check
 * passed on every rank, exits 1 otherwise.  With coll/ucg and
 * coll_ucg_verbose 1 its counters show alltoall, alltoallv, ialltoall and
 * ialltoallv served by UCG (test/mpi/run.sh).
 */
#include "mpi_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL 0xa5
#define MAX_NB   6   /* nonblocking calls outstanding at once */

typedef struct {
    const char   *name;
    MPI_Datatype dt;
    size_t       extent;     /* bytes */
    size_t       nseg;       /* data segments in an element */
    size_t       seg_off[2]; /* byte offset of each */
    size_t       seg_len[2];
} type_t;

static type_t types[8];
static int num_types;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Byte @a b of the data (all segments together) of element @a k that
 * @a src sends @a dst */
static uint8_t gen(int src, int dst, size_t k, size_t b, int seed)
{
    return (uint8_t)mix(((uint64_t)src << 52) ^ ((uint64_t)dst << 40) ^
                        ((uint64_t)seed << 28) ^ (k * 64 + b));
}

/* Fill (or with @a check, check) @a count elements at @a buf as what
 * @a src sends @a dst; returns the number of wrong bytes */
static size_t elems(const type_t *t, char *buf, size_t count, int src,
                    int dst, int seed, int check)
{
    size_t k, s, b, d, bad = 0;
    uint8_t v;

    for (k = 0; k < count; ++k) {
        d = 0;
        for (s = 0; s < t->nseg; ++s) {
            for (b = 0; b < t->seg_len[s]; ++b, ++d) {
                v = gen(src, dst, k, d, seed);
                char *p = buf + k * t->extent + t->seg_off[s] + b;
                if (check) {
                    bad += ((uint8_t)*p != v);
                } else {
                    *p = (char)v;
                }
            }
        }
    }
    return bad;
}

/* The bytes of @a count elements at @a buf that are no data (the type's
 * gaps) are still the sentinel */
static size_t gaps_ok(const type_t *t, const char *buf, size_t count)
{
    size_t k, s, b, bad = 0;

    for (k = 0; k < count; ++k) {
        for (b = 0; b < t->extent; ++b) {
            int data = 0;
            for (s = 0; s < t->nseg; ++s) {
                data |= (b >= t->seg_off[s]) &&
                        (b < t->seg_off[s] + t->seg_len[s]);
            }
            bad += !data && ((uint8_t)buf[k * t->extent + b] != SENTINEL);
        }
    }
    return bad;
}

static void init_types(void)
{
    MPI_Datatype vec, contig;

    types[num_types++] = (type_t){"MPI_CHAR", MPI_CHAR, 1, 1, {0}, {1}};
    types[num_types++] = (type_t){"MPI_INT", MPI_INT, 4, 1, {0}, {4}};
    types[num_types++] = (type_t){"MPI_DOUBLE", MPI_DOUBLE, 8, 1, {0}, {8}};
    types[num_types++] = (type_t){"MPI_C_DOUBLE_COMPLEX",
                                  MPI_C_DOUBLE_COMPLEX, 16, 1, {0}, {16}};
    /* 3 ints in a row: contiguous, derived */
    MPI_Type_contiguous(3, MPI_INT, &contig);
    MPI_Type_commit(&contig);
    types[num_types++] = (type_t){"contiguous(3, MPI_INT)", contig, 12, 1,
                                  {0}, {12}};
    /* 2 ints with an int between them: not contiguous (packed by coll/ucg) */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    types[num_types++] = (type_t){"vector(2, 1, 2, MPI_INT)", vec, 12, 2,
                                  {0, 8}, {4, 4}};
}

/* Alltoallv: elements @a i sends @a j (0 .. 2 * base; symmetric in
 * place) */
static int vcount(int i, int j, int base, int seed, int in_place)
{
    uint64_t h = in_place ? mix((uint64_t)(i + j) * 977 + (uint64_t)i * j +
                                (uint64_t)seed) :
                            mix(((uint64_t)i << 20) ^ j ^
                                ((uint64_t)seed << 40));

    return (base == 0) ? 0 : (int)(h % (2 * base + 1));
}

/* One call: its buffers, arrays and request */
typedef struct {
    MPI_Comm    comm;
    const char  *comm_name;
    int         rank, size;
    const type_t *t;
    int         v;          /* alltoallv */
    int         in_place;
    int         base;       /* elements per block (alltoallv: about) */
    int         seed;
    char        *sbuf, *rbuf;
    size_t      slen, rlen; /* bytes */
    int         *sc, *sd, *rc, *rd;
    int         *rdc;       /* alltoallv: rd from the middle of rbuf */
    size_t      roff;       /* elements: where rdc counts from */
    MPI_Request req;
} call_t;

static void call_setup(call_t *c)
{
    int n = c->size, me = c->rank, j, off;
    size_t ext = c->t->extent;

    c->sc  = calloc(5 * n, sizeof(int));
    c->sd  = c->sc + n;
    c->rc  = c->sd + n;
    c->rd  = c->rc + n;
    c->rdc = c->rd + n;
    for (j = 0; j < n; ++j) {
        c->sc[j] = c->v ? vcount(me, j, c->base, c->seed, c->in_place) :
                          c->base;
        c->rc[j] = c->v ? vcount(j, me, c->base, c->seed, c->in_place) :
                          c->base;
    }
    /* alltoall: blocks in rank order; alltoallv: send blocks from the
     * last rank down, receive blocks from rank 0 up, a gap element after
     * each, their displacements given from the middle of the receive
     * buffer (the first ones negative) */
    off = 0;
    for (j = n - 1; j >= 0; --j) {
        c->sd[j] = c->v ? off : j * c->base;
        off     += c->v ? (c->sc[j] + 1) : 0;
    }
    c->slen = (c->v ? (size_t)off : (size_t)n * c->base) * ext;
    off = 0;
    for (j = 0; j < n; ++j) {
        off     += c->v ? (c->rc[j] + 1) : 0;
        c->rd[j] = c->v ? off - (c->rc[j] + 1) : j * c->base;
    }
    c->rlen = (c->v ? (size_t)off : (size_t)n * c->base) * ext;
    c->roff = c->v ? (size_t)off / 2 : 0;
    for (j = 0; j < n; ++j) {
        c->rdc[j] = c->rd[j] - (int)c->roff;
    }

    c->sbuf = malloc(c->slen + 1);
    c->rbuf = malloc(c->rlen + 1);
    memset(c->sbuf, SENTINEL, c->slen + 1);
    memset(c->rbuf, SENTINEL, c->rlen + 1);
    for (j = 0; j < n; ++j) {
        if (c->in_place) {
            /* what goes to j is where what comes from j goes */
            elems(c->t, c->rbuf + (size_t)c->rd[j] * ext, c->rc[j], me, j,
                  c->seed, 0);
        } else {
            elems(c->t, c->sbuf + (size_t)c->sd[j] * ext, c->sc[j], me, j,
                  c->seed, 0);
        }
    }
}

static int call_start(call_t *c, int nb)
{
    const void *sbuf = c->in_place ? MPI_IN_PLACE : c->sbuf;
    MPI_Datatype dt  = c->t->dt;

    char *rbuf       = c->rbuf + c->roff * c->t->extent;

    if (c->v) {
        return nb ? MPI_Ialltoallv(sbuf, c->sc, c->sd, dt, rbuf, c->rc,
                                   c->rdc, dt, c->comm, &c->req) :
                    MPI_Alltoallv(sbuf, c->sc, c->sd, dt, rbuf, c->rc,
                                  c->rdc, dt, c->comm);
    }
    return nb ? MPI_Ialltoall(sbuf, c->base, dt, c->rbuf, c->base, dt,
                              c->comm, &c->req) :
                MPI_Alltoall(sbuf, c->base, dt, c->rbuf, c->base, dt,
                             c->comm);
}

static void call_check(call_t *c, int nb)
{
    size_t ext = c->t->extent, bad = 0, gaps = 0, k;
    int n = c->size, me = c->rank, j;
    char *end;

    for (j = 0; j < n; ++j) {
        bad  += elems(c->t, c->rbuf + (size_t)c->rd[j] * ext, c->rc[j], j,
                      me, c->seed, 1);
        gaps += gaps_ok(c->t, c->rbuf + (size_t)c->rd[j] * ext, c->rc[j]);
        if (c->v) {
            /* the gap element after the block */
            end = c->rbuf + ((size_t)c->rd[j] + c->rc[j]) * ext;
            for (k = 0; k < ext; ++k) {
                gaps += ((uint8_t)end[k] != SENTINEL);
            }
        }
    }
    gaps += ((uint8_t)c->rbuf[c->rlen] != SENTINEL);
    CHECK((bad == 0) && (gaps == 0),
          "%s%s%s on %s (%d of %d) %s x %d seed %d: %zu wrong bytes, %zu "
          "gap bytes written", nb ? "i" : "", c->v ? "alltoallv" : "alltoall",
          c->in_place ? " in place" : "", c->comm_name, me, n, c->t->name,
          c->base, c->seed, bad, gaps);
    if (!c->in_place) {
        for (j = 0, bad = 0; j < n; ++j) {
            bad += elems(c->t, c->sbuf + (size_t)c->sd[j] * ext, c->sc[j],
                         me, j, c->seed, 1);
        }
        CHECK(bad == 0, "%s on %s: the send buffer changed",
              c->v ? "alltoallv" : "alltoall", c->comm_name);
    }
}

static void call_free(call_t *c)
{
    free(c->sc);
    free(c->sbuf);
    free(c->rbuf);
}

static void run_comm(MPI_Comm comm, const char *name, int quick, int *seed)
{
    static const int bases[] = {0, 1, 7, 100, 2500, 16384, 87382};
    int nbases = quick ? 5 : 7;
    call_t calls_nb[MAX_NB];
    int rank, size, ti, bi, v, ip, i, nnb = 0;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (ti = 0; ti < num_types; ++ti) {
        for (bi = 0; bi < nbases; ++bi) {
            /* the largest blocks with one type of each kind only */
            if ((bases[bi] > 2500) && (ti != 1) && (ti != 5)) {
                continue;
            }
            for (v = 0; v < 2; ++v) {
                for (ip = 0; ip < 2; ++ip) {
                    call_t c = {comm, name, rank, size, &types[ti], v, ip,
                                bases[bi], ++*seed};

                    call_setup(&c);
                    CALLF(call_start(&c, 0), "%s on %s", v ? "alltoallv" :
                          "alltoall", name);
                    call_check(&c, 0);
                    call_free(&c);
                }
            }
        }
    }

    /* nonblocking: MAX_NB at once, waited for from the last started */
    for (i = 0; i < 4 * MAX_NB; ++i) {
        call_t *c = &calls_nb[nnb++];
        *c = (call_t){comm, name, rank, size, &types[i % num_types],
                      (i / 2) % 2, (i / 4) % 2, bases[(i % 4) + 1], ++*seed};
        call_setup(c);
        CALLF(call_start(c, 1), "nonblocking %s on %s",
              c->v ? "alltoallv" : "alltoall", name);
        if (nnb == MAX_NB) {
            while (nnb > 0) {
                c = &calls_nb[--nnb];
                CALLF(MPI_Wait(&c->req, MPI_STATUS_IGNORE), "wait on %s",
                      name);
                call_check(c, 1);
                call_free(c);
            }
        }
    }
}

int main(int argc, char **argv)
{
    int quick = 0, world_only = 0;
    int rank, size, total, seed = 0, ti, i;
    MPI_Comm dup, half, sub;
    MPI_Request reqs[2];
    call_t c[2];

    for (i = 1; i < argc; ++i) {
        quick      |= !strcmp(argv[i], "-q");
        world_only |= !strcmp(argv[i], "-w");
    }
    check_init(&argc, &argv, &rank, &size);
    init_types();

    run_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD", quick, &seed);
    if (world_only) {
        goto out;
    }

    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    run_comm(dup, "dup", 1, &seed);

    /* halves: odd sizes when np is odd (or 2 * odd) */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    run_comm(half, "split", 1, &seed);

    /* every rank but the first */
    MPI_Comm_split(MPI_COMM_WORLD, (rank == 0) ? MPI_UNDEFINED : 1, rank,
                   &sub);
    if (sub != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
        run_comm(sub, "subset", 1, &seed);
    }

    /* an alltoall on world and an alltoallv on the dup outstanding at
     * once, completed in either order */
    for (i = 0; i < 4; ++i) {
        c[0] = (call_t){MPI_COMM_WORLD, "MPI_COMM_WORLD", rank, size,
                        &types[1], 0, i % 2, 100, 1000 + i};
        c[1] = (call_t){dup, "dup", rank, size, &types[5], 1, i / 2, 50,
                        2000 + i};
        call_setup(&c[0]);
        call_setup(&c[1]);
        CALL("ialltoall on world", call_start(&c[0], 1));
        CALL("ialltoallv on dup", call_start(&c[1], 1));
        reqs[0] = c[i % 2].req;
        reqs[1] = c[1 - i % 2].req;
        CALL("waitall", MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
        c[i % 2].req     = reqs[0];
        c[1 - i % 2].req = reqs[1];
        call_check(&c[0], 1);
        call_check(&c[1], 1);
        call_free(&c[0]);
        call_free(&c[1]);
    }

    if (sub != MPI_COMM_NULL) {
        MPI_Comm_free(&sub);
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);

out:
    for (ti = 0; ti < num_types; ++ti) {
        if ((types[ti].dt != MPI_CHAR) && (types[ti].dt != MPI_INT) &&
            (types[ti].dt != MPI_DOUBLE) &&
            (types[ti].dt != MPI_C_DOUBLE_COMPLEX)) {
            MPI_Type_free(&types[ti].dt);
        }
    }

    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_a2a: %s (np=%d, %d calls checked, %d errors)\n",
               (total == 0) ? "OK" : "FAILED", size, calls, total);
    }
    MPI_Finalize();
    return (total == 0) ? 0 : 1;
}
