/**
 * UCG broadcasts between hosts over multicast: the interfaces of a
 * context's multicast transports (mc_mlx5, mc_verbs, mc_udp) and the
 * choice of a group's (ucg_mc.c), and the group endpoints of the sets of
 * MC_BCAST phases, agreed all or none (ucg_mc_agree.c).  The phase is
 * phase/ucg_mc_bcast.c.
 */
#ifndef UCG_MC_H_
#define UCG_MC_H_

#include "ucg_group.h"

/** What a member tells the others at group creation (ucg_group_rec_t):
 *  a bit (1 << ucg_mc_tl_t) per multicast transport it has open, and the
 *  same bit again for those of them on the loopback device (this host
 *  only) */
#define UCG_MC_TL_BIT(_tl) ((uint8_t)(1u << (_tl)))

/** Active-message id of UCG's messages on its multicast interfaces: they
 *  have the sm header and take the sm receive path (ucg_sm_am_cb) */
#define UCG_MC_AM_ID UCG_SM_AM_ID

/** A member's multicast transports, as the group's choice sees them */
typedef struct ucg_mc_avail {
    uint8_t  tls;         /* UCG_MC_TL_BIT()s of the transports it has */
    uint8_t  lo_tls;      /* of those, the ones on a loopback device */
    uint64_t real_host;   /* its real host */
} ucg_mc_avail_t;

/** What a context's multicast transport did, for tests and the diag line
 *  at context destroy: the transport's own counters, summed over its
 *  interface (mc_udp) or its group endpoints, destroyed ones included
 *  (mc_verbs and mc_mlx5); 0 where a transport does not count it */
typedef struct ucg_mc_counters {
    uint64_t tx_packets;      /* datagrams sent (mc_udp) */
    uint64_t rx_packets;      /* datagrams received */
    uint64_t rx_mcast_data;   /* data packets received by multicast
                                 (mc_verbs, mc_mlx5) */
    uint64_t rx_repaired;     /* packets received first as a repair */
    uint64_t rx_dup;          /* data packets received again */
    uint64_t tx_nack;         /* NACK packets sent */
    uint64_t tx_repair_ucast; /* repairs sent by unicast */
    uint64_t tx_repair_mcast; /* PSNs re-multicast by a root */
    uint64_t rx_syscalls;     /* system calls of the receive path
                                 (mc_udp) */
} ucg_mc_counters_t;

/** State of a set's group endpoint */
enum {
    UCG_MC_EP_SETUP,      /* the set is agreeing (ucg_mc_ep_agree) */
    UCG_MC_EP_READY,      /* every member has its endpoint */
    UCG_MC_EP_REFUSED,    /* one could not: point-to-point on this set */
    UCG_MC_EP_FAILED      /* the agreement failed (a member gone, a bad
                             message): status says why */
};

/** The multicast group endpoint of a set, cached in its group */
typedef struct ucg_mc_ep {
    ucs_list_link_t     list;
    ucg_mc_tl_t         tl;           /* the group's transport */
    unsigned            count;
    unsigned            *ranks;       /* [count], group ranks */
    unsigned            root_idx;
    unsigned            my_idx;
    int                 state;        /* UCG_MC_EP_* */
    ucs_status_t        status;       /* FAILED: why */
    unsigned            step;         /* of the agreement */
    ucs_status_t        local;        /* creating this member's endpoint */
    uct_ep_h            ep;           /* READY: this member's endpoint */
    size_t              frag;         /* READY: agreed payload per message */
    unsigned            waiters;      /* collectives waiting for its data */
    struct ucg_mc_setup *setup;       /* UCP requests of the agreement;
                                         NULL once UCP is done with them */
} ucg_mc_ep_t;

/** Open the multicast transports MC, MC_TL and UCX_TLS allow, each that
 *  has a device (ucg_context_create); UCS_ERR_UNSUPPORTED (and a log line)
 *  when MC=yes and none can be opened */
ucs_status_t ucg_mc_context_init(ucg_context_h context);

/** Close it: the endpoints members keep after their group is destroyed,
 *  then the interface (ucg_context_destroy, after the groups) */
void ucg_mc_context_cleanup(ucg_context_h context);

/** Progress the multicast interfaces (ucg_progress) */
unsigned ucg_mc_progress(ucg_context_h context);

/** This member's transports: UCG_MC_TL_BIT()s of those open in
 *  @a tls_p, of those on loopback in @a lo_tls_p */
void ucg_mc_local_tls(ucg_context_h context, uint8_t *tls_p,
                      uint8_t *lo_tls_p);

/**
 * The multicast transport of a group's MC_BCAST phases, from what every
 * member has (@a avail[size]), or UCG_MC_TL_LAST: none (point-to-point).
 * The first transport of ucg_mc_tl_t that every member has, skipping one
 * that some member has only on loopback when the group spans real hosts;
 * between virtual hosts of one real host (@a num_hosts > 1) only with
 * @a mode UCS_YES.  The same on every member; logs why not (diag) when
 * member @a me has some transport.
 */
ucg_mc_tl_t ucg_mc_select(ucs_ternary_auto_value_t mode, unsigned num_hosts,
                          const ucg_mc_avail_t *avail, unsigned size,
                          unsigned me);

/** Which transports a context tries to open, by MC, MC_TL and UCX_TLS:
 *  UCG_MC_TL_BIT()s; logs (diag) what UCX_TLS excludes */
uint8_t ucg_mc_tls_wanted(const ucg_config_t *config);

/**
 * The value UCG gives the variable @a var of transport @a tl_name that
 * bounds a silent group member (uct_config_modify): @a peer_timeout (UCG's
 * PEER_TIMEOUT, seconds) when finite; when it is inf, "0" - no bound, as
 * UCG waits as long as the members live (a member late to its collective
 * is not a dead one; one that died is found through UCP's connection to
 * it) - unless the user set the variable (UCX_<TL>_<VAR>), then NULL:
 * left as set.  @a buf holds the value.
 */
const char *ucg_mc_peer_timeout_value(double peer_timeout,
                                      const char *tl_name, const char *var,
                                      char *buf, size_t max);

/** Name of a transport (UCG_MC_TL_LAST: "none") */
const char *ucg_mc_tl_name(ucg_mc_tl_t tl);

/** Flush the group endpoints this member roots, hand those it joined to
 *  the context (they keep acknowledging for a root that flushes), free
 *  the rest (ucg_group_destroy) */
void ucg_mc_group_cleanup(ucg_group_h group);

/** The cached endpoint of @a set (this member at @a my_idx), or a new one
 *  whose agreement begins */
ucs_status_t ucg_mc_ep_get(ucg_group_h group, const ucg_phase_set_t *set,
                           unsigned my_idx, ucg_mc_ep_t **mc_ep_p);

/** Advance the agreement of @a mc_ep: UCS_OK once the set decided (READY
 *  or REFUSED), UCS_INPROGRESS, or the error it failed with */
ucs_status_t ucg_mc_ep_agree(ucg_group_h group, ucg_mc_ep_t *mc_ep);

/** Counters of the context's transport @a tl (tests, tools);
 *  UCS_ERR_UNSUPPORTED when it does not have it open */
ucs_status_t ucg_mc_counters(ucg_context_h context, ucg_mc_tl_t tl,
                             ucg_mc_counters_t *counters);

#endif
