/**
 * Internal to ucg_mc.c (the context's multicast interfaces) and
 * ucg_mc_agree.c (the group endpoints and their agreement).
 */
#ifndef UCG_MC_INT_H_
#define UCG_MC_INT_H_

#include "ucg_mc.h"

#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <ucs/datastruct/list.h>

#define UCG_MC_MAX_RANKS     (1u << 16)
#define UCG_MC_ADDR_MAX      48

/* One open multicast transport of a context */
typedef struct ucg_mc_iface {
    ucg_mc_tl_t         tl;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_md_h            md;
    uct_iface_h         iface;        /* NULL: not open */
    char                dev[UCT_DEVICE_NAME_MAX];
    int                 loopback;
    size_t              max_frag;     /* largest bcopy minus UCG's header */
    size_t              iface_addr_len;
    size_t              dev_addr_len;
    uint8_t             iface_addr[UCG_MC_ADDR_MAX];
    uint8_t             dev_addr[UCG_MC_ADDR_MAX];
    /* Group endpoints that exist: without any, the interface is not
     * progressed (mc_udp's progress reads sockets: a system call per
     * ucg_progress otherwise) */
    unsigned            num_eps;
    /* Transports that count per endpoint: what the destroyed ones did */
    ucg_mc_counters_t   gone;
} ucg_mc_iface_t;

struct ucg_mc_ctx {
    ucg_mc_iface_t      ifaces[UCG_MC_TL_LAST];
    /* The sum of their num_eps: on a single host, or before a group took
     * multicast, ucg_progress looks no further */
    unsigned            num_eps;
    /* Endpoints of destroyed groups that keep acknowledging */
    ucs_list_link_t     lingering;    /* ucg_mc_ep_t */
};

/* A group's multicast endpoints */
struct ucg_mc_group {
    ucs_list_link_t     eps;          /* ucg_mc_ep_t */
};

/* The open interface of @a tl, or NULL */
static inline ucg_mc_iface_t *ucg_mc_iface(struct ucg_mc_ctx *mc,
                                           ucg_mc_tl_t tl)
{
    return ((mc == NULL) || ((unsigned)tl >= UCG_MC_TL_LAST) ||
            (mc->ifaces[tl].iface == NULL)) ? NULL : &mc->ifaces[tl];
}

/* Adds the counters of group endpoint @a ep of @a mci to @a counters
 * (transports that count per endpoint; nothing for the others) */
void ucg_mc_ep_counters_add(const ucg_mc_iface_t *mci, uct_ep_h ep,
                            ucg_mc_counters_t *counters);

/* Frees a group endpoint (its UCP requests first) */
void ucg_mc_ep_free(ucg_context_h context, ucg_mc_ep_t *mc_ep);

#endif
