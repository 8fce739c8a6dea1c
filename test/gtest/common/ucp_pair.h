/**
 * ucx-o2m tests: two processes of a proc_group connected by UCP (the
 * point-to-point tests of the transports over UCP: mc_udp, sm_bcast,
 * mc_verbs).
 */
#ifndef O2M_TEST_UCP_PAIR_H_
#define O2M_TEST_UCP_PAIR_H_

#include "harness.h"

extern "C" {
#include <ucp/api/ucp.h>
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>

namespace o2m_test {

/* A context for tag messages on the transports @a tls and the devices
 * @a net_devices (UCX_TLS, UCX_NET_DEVICES); a CHILD_CHECK failure else */
static inline ucp_context_h ucp_pair_context(const std::string &tls,
                                             const std::string &net_devices)
{
    ucp_config_t *config;
    ucp_context_h context;
    ucp_params_t params;

    CHILD_CHECK_OK(ucp_config_read(NULL, NULL, &config));
    CHILD_CHECK_OK(ucp_config_modify(config, "TLS", tls.c_str()));
    CHILD_CHECK_OK(ucp_config_modify(config, "NET_DEVICES",
                                     net_devices.c_str()));
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    CHILD_CHECK_OK(ucp_init(&params, config, &context));
    ucp_config_release(config);
    return context;
}

/* A worker of one thread on @a context; a CHILD_CHECK failure else */
static inline ucp_worker_h ucp_pair_worker(ucp_context_h context)
{
    ucp_worker_params_t wparams;
    ucp_worker_h worker;

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    CHILD_CHECK_OK(ucp_worker_create(context, &wparams, &worker));
    return worker;
}

/* The endpoint of @a worker to the one of process @a peer: both exchange
 * their worker addresses through @a pg (every member calls it) */
static inline ucp_ep_h ucp_pair_connect(proc_group &pg, unsigned rank,
                                        unsigned peer, ucp_worker_h worker)
{
    struct {
        size_t length;
        char   data[8192];
    } mine, all[2];
    ucp_ep_params_t eparams;
    ucp_address_t *address;
    size_t address_length;
    ucp_ep_h ep;

    CHILD_CHECK_OK(ucp_worker_get_address(worker, &address,
                                          &address_length));
    CHILD_CHECK(address_length <= sizeof(mine.data), "address %zu",
                address_length);
    memset(&mine, 0, sizeof(mine));
    mine.length = address_length;
    memcpy(mine.data, address, address_length);
    ucp_worker_release_address(worker, address);
    pg.allgather(rank, &mine, sizeof(mine), all);

    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = (const ucp_address_t*)all[peer].data;
    CHILD_CHECK_OK(ucp_ep_create(worker, &eparams, &ep));
    return ep;
}

/* Close @a ep with flush, progressing @a worker, bounded; a CHILD_CHECK
 * failure when it fails or does not end */
static inline void ucp_pair_close(ucp_worker_h worker, ucp_ep_h ep)
{
    ucp_request_param_t cp;
    void *req;
    double end;

    memset(&cp, 0, sizeof(cp));
    req = ucp_ep_close_nbx(ep, &cp);
    end = now_sec() + wait_timeout;
    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            CHILD_CHECK(now_sec() < end, "ep close not done");
            ucp_worker_progress(worker);
        }
        ucp_request_free(req);
    } else {
        CHILD_CHECK(UCS_PTR_STATUS(req) == UCS_OK, "ep close: %s",
                    ucs_status_string(UCS_PTR_STATUS(req)));
    }
}

/* What ucp_ep_print_info() says of @a ep: its lanes and transports */
static inline std::string ucp_ep_lanes(ucp_ep_h ep)
{
    char *info   = NULL;
    size_t isize = 0;
    FILE *stream = open_memstream(&info, &isize);

    ucp_ep_print_info(ep, stream);
    fclose(stream);
    std::string lanes(info, isize);
    free(info);
    return lanes;
}

} // namespace o2m_test

#endif
