/**
 * UCG point-to-point barrier phase: P2P_BARRIER (dissemination).  State:
 * coll->ps.barrier.
 */
#include "ucg_p2p.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>

/* Target of 0-byte messages (never written) */
static char ucg_p2p_dummy;


/* -------------------------------------------------------------------------
 * P2P_BARRIER: dissemination.  Round k: 0 bytes to me + 2^k, from me - 2^k;
 * after ceil(log2 n) rounds every member has heard, directly or not, from
 * all others.  ps.barrier.round: the posted round (== rounds: done).
 * ---------------------------------------------------------------------- */

static ucs_status_t ucg_p2p_barrier_post(ucg_coll_t *coll)
{
    unsigned n    = coll->set->count;
    unsigned dist = UCS_BIT(coll->ps.barrier.round);
    ucs_status_t status;

    status = ucg_p2p_send(coll,
                          ucg_p2p_rank(coll, (coll->my_idx + dist) % n),
                          coll->ps.barrier.round, &ucg_p2p_dummy, 0);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_recv(coll,
                        ucg_p2p_rank(coll, (coll->my_idx + n - dist) % n),
                        coll->ps.barrier.round, &ucg_p2p_dummy, 0);
}

ucs_status_t ucg_p2p_barrier_progress(ucg_coll_t *coll)
{
    ucg_p2p_barrier_state_t *ps = &coll->ps.barrier;
    ucs_status_t status;

    for (;;) {
        status = ucg_p2p_test(coll);
        if ((status != UCS_OK) || (ps->round == ps->rounds)) {
            return status;
        }

        if (++ps->round < ps->rounds) {
            status = ucg_p2p_barrier_post(coll);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
}

ucs_status_t ucg_p2p_barrier_start(ucg_coll_t *coll)
{
    ucg_p2p_barrier_state_t *ps = &coll->ps.barrier;
    ucs_status_t status;

    for (ps->rounds = 0; UCS_BIT(ps->rounds) < coll->set->count;
         ++ps->rounds) {
    }

    ps->round = 0;
    if (ps->rounds == 0) {
        return UCS_OK; /* alone */
    }

    status = ucg_p2p_barrier_post(coll);
    if (status != UCS_OK) {
        return status;
    }

    return ucg_p2p_barrier_progress(coll);
}
