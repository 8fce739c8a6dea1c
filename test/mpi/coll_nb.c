/*
 * Nonblocking collectives: many outstanding at once on several
 * communicators, completed in an order that differs between ranks and
 * rounds (MPI_Testany, MPI_Waitsome, MPI_Test, MPI_Waitall), with
 * point-to-point traffic between posting and completing, results checked
 * against a local reference.
 *
 * Each round posts, in the same order on every rank (as MPI requires),
 * MPI_Ibcast (contiguous and a strided datatype), MPI_Iallreduce (also in
 * place), MPI_Ireduce, MPI_Ibarrier, MPI_Igather, MPI_Iscatter and
 * MPI_Iallgather, spread over MPI_COMM_WORLD, a duplicate of it and a
 * reversed one.
 *
 * Usage: coll_nb [ROUNDS]    (default 40)
 * Prints "coll_nb: OK" on rank 0 when every check passed.
 */
#include "mpi_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS  16
#define BIG      5000  /* elements of the larger operations */

typedef struct {
    const char   *what;
    MPI_Comm     comm;
    int          rank, size;
    int          kind;
    int          root;
    int          count;
    int          *in, *out, *exp;  /* exp: NULL when nothing to check */
    size_t       nout;             /* ints of out to check */
    MPI_Request  req;
} op_t;

enum { K_BCAST, K_BCAST_STRIDED, K_ALLREDUCE, K_ALLREDUCE_INPLACE, K_REDUCE,
       K_BARRIER, K_GATHER, K_SCATTER, K_ALLGATHER, K_LAST };

static const char *kind_names[] = {
    "ibcast", "ibcast(strided)", "iallreduce", "iallreduce(in place)",
    "ireduce", "ibarrier", "igather", "iscatter", "iallgather"
};

static MPI_Datatype g_strided;  /* every other int of 2 * count */

static int val(int rank, int i, int seed)
{
    uint32_t x = (uint32_t)rank * 2654435761u ^ (uint32_t)i * 40503u ^
                 (uint32_t)seed * 97u;

    x ^= x >> 13;
    return (int)(x % 1000) - 500;
}

static int *alloc_ints(size_t n)
{
    int *p = malloc((n ? n : 1) * sizeof(int));

    if (p == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

/* Post operation @a op (its kind, comm, root, count set) */
static void post(op_t *op, int seed)
{
    int n = op->size, r = op->rank, c = op->count, i, k;

    op->in  = alloc_ints((size_t)c * n * 2);
    op->out = alloc_ints((size_t)c * n * 2);
    op->exp = alloc_ints((size_t)c * n * 2);
    op->nout = 0;
    memset(op->out, 0x5a, (size_t)c * n * 2 * sizeof(int));

    switch (op->kind) {
    case K_BCAST:
        for (i = 0; i < c; ++i) {
            op->exp[i] = val(op->root, i, seed);
            op->out[i] = (r == op->root) ? op->exp[i] : -1;
        }
        op->nout = c;
        CALL("MPI_Ibcast", MPI_Ibcast(op->out, c, MPI_INT, op->root,
                                      op->comm, &op->req));
        break;
    case K_BCAST_STRIDED:
        /* the odd ints are not part of the datatype: must stay */
        for (i = 0; i < 2 * c; ++i) {
            op->exp[i] = (i & 1) ? 7000 + r : val(op->root, i, seed);
            op->out[i] = ((r == op->root) || (i & 1)) ? op->exp[i] : -1;
        }
        op->nout = 2 * c;
        /* one element of the vector type: BIG ints, every other one */
        CALL("MPI_Ibcast", MPI_Ibcast(op->out, 1, g_strided, op->root,
                                      op->comm, &op->req));
        break;
    case K_ALLREDUCE:
    case K_ALLREDUCE_INPLACE:
        for (i = 0; i < c; ++i) {
            op->in[i]  = val(r, i, seed);
            op->out[i] = op->in[i];
            op->exp[i] = 0;
            for (k = 0; k < n; ++k) {
                op->exp[i] += val(k, i, seed);
            }
        }
        op->nout = c;
        CALL("MPI_Iallreduce",
             MPI_Iallreduce((op->kind == K_ALLREDUCE_INPLACE) ? MPI_IN_PLACE :
                            op->in, op->out, c, MPI_INT, MPI_SUM, op->comm,
                            &op->req));
        break;
    case K_REDUCE:
        for (i = 0; i < c; ++i) {
            op->in[i]  = val(r, i, seed);
            op->exp[i] = op->in[i];
            for (k = 0; k < n; ++k) {
                if (val(k, i, seed) > op->exp[i]) {
                    op->exp[i] = val(k, i, seed);
                }
            }
        }
        op->nout = (r == op->root) ? c : 0;
        CALL("MPI_Ireduce", MPI_Ireduce(op->in, op->out, c, MPI_INT, MPI_MAX,
                                        op->root, op->comm, &op->req));
        break;
    case K_BARRIER:
        CALL("MPI_Ibarrier", MPI_Ibarrier(op->comm, &op->req));
        break;
    case K_GATHER:
        for (i = 0; i < c; ++i) {
            op->in[i] = val(r, i, seed);
        }
        for (k = 0; k < n; ++k) {
            for (i = 0; i < c; ++i) {
                op->exp[k * c + i] = val(k, i, seed);
            }
        }
        op->nout = (r == op->root) ? (size_t)c * n : 0;
        CALL("MPI_Igather", MPI_Igather(op->in, c, MPI_INT, op->out, c,
                                        MPI_INT, op->root, op->comm,
                                        &op->req));
        break;
    case K_SCATTER:
        for (k = 0; k < n; ++k) {
            for (i = 0; i < c; ++i) {
                op->in[k * c + i] = val(k, i, seed);
            }
        }
        for (i = 0; i < c; ++i) {
            op->exp[i] = val(r, i, seed);
        }
        op->nout = c;
        CALL("MPI_Iscatter", MPI_Iscatter(op->in, c, MPI_INT, op->out, c,
                                          MPI_INT, op->root, op->comm,
                                          &op->req));
        break;
    case K_ALLGATHER:
        for (i = 0; i < c; ++i) {
            op->in[i] = val(r, i, seed);
        }
        for (k = 0; k < n; ++k) {
            for (i = 0; i < c; ++i) {
                op->exp[k * c + i] = val(k, i, seed);
            }
        }
        op->nout = (size_t)c * n;
        CALL("MPI_Iallgather", MPI_Iallgather(op->in, c, MPI_INT, op->out, c,
                                              MPI_INT, op->comm, &op->req));
        break;
    }
}

static void verify(op_t *op, int round)
{
    size_t i;

    for (i = 0; i < op->nout; ++i) {
        if (op->out[i] != op->exp[i]) {
            check_fail("round %d %s on %s (count %d, root %d): element %zu "
                       "is %d, expected %d", round, kind_names[op->kind],
                       op->what, op->count, op->root, i, op->out[i],
                       op->exp[i]);
            break;
        }
    }
    free(op->in);
    free(op->out);
    free(op->exp);
}

int main(int argc, char **argv)
{
    int rounds = (argc > 1) ? atoi(argv[1]) : 40;
    MPI_Comm comms[3];
    const char *names[3] = {"world", "dup", "reversed"};
    op_t ops[MAX_OPS];
    int rank, size, round, i, done, idx, total;

    check_init(&argc, &argv, &rank, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
    comms[0] = MPI_COMM_WORLD;
    for (i = 1; i < 3; ++i) {
        MPI_Comm_set_errhandler(comms[i], MPI_ERRORS_RETURN);
    }
    MPI_Type_vector(BIG, 1, 2, MPI_INT, &g_strided);
    MPI_Type_commit(&g_strided);

    for (round = 0; round < rounds; ++round) {
        int nops = 0, outcount, indices[MAX_OPS];

        /* the same sequence on every rank; sizes and roots vary */
        for (i = 0; i < K_LAST + 3; ++i) {
            op_t *op   = &ops[nops++];
            int c      = (i + round) % 3;

            op->comm   = comms[c];
            op->what   = names[c];
            MPI_Comm_rank(op->comm, &op->rank);
            MPI_Comm_size(op->comm, &op->size);
            op->kind   = (i < K_LAST) ? i : (i + round) % K_LAST;
            op->root   = (round + i) % op->size;
            op->count  = ((round + i) % 4 == 0) ? BIG : 1 + (round + i) % 37;
            if (op->kind == K_BCAST_STRIDED) {
                op->count = BIG;
            }
            post(op, round * 100 + i);
        }

        /* point-to-point between posting and completing: a ring */
        {
            int sendv = rank * 1000 + round, recvv = -1;
            CALL("MPI_Sendrecv",
                 MPI_Sendrecv(&sendv, 1, MPI_INT, (rank + 1) % size, 5,
                              &recvv, 1, MPI_INT, (rank + size - 1) % size, 5,
                              MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(recvv == ((rank + size - 1) % size) * 1000 + round,
                  "ring value %d", recvv);
        }

        /* complete in an order that depends on the rank and the round */
        done = 0;
        {
            MPI_Request reqs[MAX_OPS];
            for (i = 0; i < nops; ++i) {
                reqs[i] = ops[i].req;
            }
            if ((round + rank) % 3 == 1) {
                /* Waitsome until all are done */
                while (done < nops) {
                    CALL("MPI_Waitsome",
                         MPI_Waitsome(nops, reqs, &outcount, indices,
                                      MPI_STATUSES_IGNORE));
                    if (outcount == MPI_UNDEFINED) {
                        break;
                    }
                    done += outcount;
                }
            } else if ((round + rank) % 3 == 2) {
                /* the last posted first, each by MPI_Test polling */
                for (i = nops - 1; i >= 0; --i) {
                    int flag = 0;
                    while (!flag) {
                        CALL("MPI_Test", MPI_Test(&reqs[i], &flag,
                                                  MPI_STATUS_IGNORE));
                    }
                }
            } else {
                /* Testany until all are done */
                while (done < nops) {
                    int flag = 0;
                    CALL("MPI_Testany", MPI_Testany(nops, reqs, &idx, &flag,
                                                    MPI_STATUS_IGNORE));
                    if (flag && (idx == MPI_UNDEFINED)) {
                        break;
                    }
                    done += flag;
                }
            }
            CALL("MPI_Waitall", MPI_Waitall(nops, reqs,
                                            MPI_STATUSES_IGNORE));
        }
        for (i = 0; i < nops; ++i) {
            verify(&ops[i], round);
        }
        CALL("MPI_Barrier", MPI_Barrier(comms[1]));
    }

    MPI_Type_free(&g_strided);
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_nb: %s (%d rounds, %d failed checks)\n",
               total ? "FAILED" : "OK", rounds, total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
