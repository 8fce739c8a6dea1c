/**
 * Internal to ucg_mc.c (the context's mc_udp interface) and ucg_mc_agree.c
 * (the group endpoints and their agreement).
 */
#ifndef UCG_MC_INT_H_
#define UCG_MC_INT_H_

#include "ucg_mc.h"

#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <ucs/datastruct/list.h>

#define UCG_MC_MAX_RANKS     (1u << 16)
#define UCG_MC_ADDR_MAX      48

struct ucg_mc_ctx {
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_md_h            md;
    uct_iface_h         iface;
    int                 loopback;
    size_t              max_frag;    /* largest bcopy minus UCG's header */
    size_t              iface_addr_len;
    size_t              dev_addr_len;
    uint8_t             iface_addr[UCG_MC_ADDR_MAX];
    uint8_t             dev_addr[UCG_MC_ADDR_MAX];
    /* Endpoints of destroyed groups that keep acknowledging */
    ucs_list_link_t     lingering;   /* ucg_mc_ep_t */
    /* Group endpoints that exist: without any, the interface is not
     * progressed (its progress reads sockets: a system call per
     * ucg_progress otherwise) */
    unsigned            num_eps;
};

/* Frees a group endpoint (its UCP requests first) */
void ucg_mc_ep_free(ucg_context_h context, ucg_mc_ep_t *mc_ep);

#endif
