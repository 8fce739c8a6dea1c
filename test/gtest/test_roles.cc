/**
 * ucx-o2m tests: the endpoint roles of sm_bcast and sm_incast (each set at
 * creation, see o2m_ep.h): what every role answers to the UCT endpoint
 * operations that are not its own.
 *  - a reader (fan-out receiver, fan-in root) refuses am_short, am_bcopy
 *    and am_zcopy with UCS_ERR_UNSUPPORTED, has nothing to flush, and
 *    pending_add says the endpoint is not busy; it stays usable;
 *  - a sender that has not sent has nothing to flush;
 *  - uct_o2m_ep_state() refuses a point-to-point endpoint.
 */
#include "common/harness.h"
#include "common/uct_env.h"
#include "common/peers.h"
#include "common/residue.h"
#include "common/log_capture.h"

using namespace o2m_test;

namespace {

const uint8_t AM_ID = 12;

size_t pack_nothing(void *dest, void *arg)
{
    return 0;
}

/* The operations a reader must refuse or answer trivially */
void check_reader(uct_ep_h ep, const char *role)
{
    uint64_t word = 0;
    uct_iov_t iov = {&word, sizeof(word), UCT_MEM_HANDLE_NULL, 0, 1};
    uct_pending_req_t req;
    ucs_status_t status;
    ssize_t len;

    {
        scoped_log_capture log;

        status = uct_ep_am_short(ep, AM_ID, 0, &word, sizeof(word));
        CHILD_CHECK(status == UCS_ERR_UNSUPPORTED, "%s: am_short: %s", role,
                    ucs_status_string(status));
        len = uct_ep_am_bcopy(ep, AM_ID, pack_nothing, NULL, 0);
        CHILD_CHECK(len == UCS_ERR_UNSUPPORTED, "%s: am_bcopy: %zd", role,
                    len);
        status = uct_ep_am_zcopy(ep, AM_ID, NULL, 0, &iov, 1, 0, NULL);
        CHILD_CHECK(status == UCS_ERR_UNSUPPORTED, "%s: am_zcopy: %s", role,
                    ucs_status_string(status));
        /* One line per refused send, naming the role */
        CHILD_CHECK((log.lines().size() == 3) && log.has(role),
                    "%s: log of the refused sends:\n%s", role,
                    log.all().c_str());
    }

    status = uct_ep_flush(ep, 0, NULL);
    CHILD_CHECK(status == UCS_OK, "%s: flush: %s", role,
                ucs_status_string(status));
    memset(&req, 0, sizeof(req));
    status = uct_ep_pending_add(ep, &req, 0);
    CHILD_CHECK(status == UCS_ERR_BUSY, "%s: pending_add: %s", role,
                ucs_status_string(status));
    CHILD_CHECK(uct_o2m_ep_state(ep, NULL) != UCT_O2M_EP_STATE_FAILED,
                "%s: failed after refusing sends", role);
}

} // namespace

class roles : public ::testing::TestWithParam<const char*> {
};

/*
 * Rank 0 roots a group of two, rank 1 joins it: on sm_bcast the reader is
 * rank 1, on sm_incast rank 0.  The sender has sent nothing: its flush is
 * done at once, even before it joined.
 */
TEST_P(roles, readers_refuse_sends)
{
    const char *tl = GetParam();
    int is_incast  = (std::string(tl) == "sm_incast");
    shm_residue_check shm;
    proc_group pg(2);

    pg.run_ok([&](unsigned rank) {
        uct_env env(tl);
        uct_o2m_group_params_t p;
        peer_addrs addrs;
        ucs_status_t status;
        uct_ep_h ep = NULL, p2p;

        addrs.exchange(pg, rank, env);
        p = addrs.group_params(0x5e1e, 2, rank);
        if (is_incast) {
            p.field_mask |= UCT_O2M_GROUP_FIELD_MODE | UCT_O2M_GROUP_FIELD_OP |
                            UCT_O2M_GROUP_FIELD_DTYPE;
            p.mode        = UCT_O2M_MODE_BATCHED;
            p.op          = UCT_O2M_OP_SUM;
            p.dtype       = UCT_O2M_DT_INT64;
        }
        group_ep_create_root_first(pg, rank, env, p, &ep);

        if ((rank == 0) == is_incast) {
            check_reader(ep, is_incast ? "fan-in root" : "fan-out receiver");
        } else {
            status = uct_ep_flush(ep, 0, NULL);
            CHILD_CHECK(status == UCS_OK, "%s sender: flush before sending: "
                        "%s", tl, ucs_status_string(status));
        }

        /* A point-to-point endpoint has no group state */
        p2p = create_p2p_ep(env, addrs, 1 - rank);
        {
            scoped_log_capture log;

            CHILD_CHECK(uct_o2m_ep_state(p2p, &status) ==
                        UCT_O2M_EP_STATE_FAILED,
                        "ep_state of a p2p endpoint");
        }
        CHILD_CHECK(status == UCS_ERR_INVALID_PARAM, "ep_state of a p2p "
                    "endpoint: %s", ucs_status_string(status));
        uct_ep_destroy(p2p);

        pg.barrier(rank);
        uct_ep_destroy(ep);
    });
}

INSTANTIATE_TEST_SUITE_P(tl, roles, ::testing::Values("sm_bcast",
                                                      "sm_incast"));
