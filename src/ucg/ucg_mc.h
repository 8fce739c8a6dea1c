/**
 * UCG broadcasts between hosts over IP multicast: the mc_udp interface of a
 * context (ucg_mc.c), and the group endpoints of the sets of MC_BCAST
 * phases, agreed all or none (ucg_mc_agree.c).  The phase is phase/ucg_mc_bcast.c.
 */
#ifndef UCG_MC_H_
#define UCG_MC_H_

#include "ucg_group.h"

/** What a member tells the others at group creation (ucg_group_rec_t) */
enum {
    UCG_MC_NONE     = 0,  /* no mc_udp interface */
    UCG_MC_NET      = 1,  /* on a device that reaches other hosts */
    UCG_MC_LOOPBACK = 2   /* on the loopback device: this host only */
};

/** Active-message id of UCG's messages on its mc_udp interface: they have
 *  the sm header and take the sm receive path (ucg_sm_am_cb) */
#define UCG_MC_AM_ID UCG_SM_AM_ID

/** State of a set's group endpoint */
enum {
    UCG_MC_EP_SETUP,      /* the set is agreeing (ucg_mc_ep_agree) */
    UCG_MC_EP_READY,      /* every member has its endpoint */
    UCG_MC_EP_REFUSED,    /* one could not: point-to-point on this set */
    UCG_MC_EP_FAILED      /* the agreement failed (a member gone, a bad
                             message): status says why */
};

/** The mc_udp group endpoint of a set, cached in its group */
typedef struct ucg_mc_ep {
    ucs_list_link_t     list;
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

/** Open mc_udp as the MC setting and UCX_TLS say (ucg_context_create);
 *  UCS_ERR_UNSUPPORTED (and a log line) when MC=yes and it cannot be */
ucs_status_t ucg_mc_context_init(ucg_context_h context);

/** Close it: the endpoints members keep after their group is destroyed,
 *  then the interface (ucg_context_destroy, after the groups) */
void ucg_mc_context_cleanup(ucg_context_h context);

/** Progress the mc_udp interface (ucg_progress) */
unsigned ucg_mc_progress(ucg_context_h context);

/** UCG_MC_NONE, UCG_MC_NET or UCG_MC_LOOPBACK for this member */
uint8_t ucg_mc_local_kind(ucg_context_h context);

/**
 * Whether the plans of @a group may use MC_BCAST, from what every member
 * said (@a kind of rank 0, each next rank @a stride bytes further); the
 * same on every member.  Logs why not (diag) when this member could.
 */
int ucg_mc_group_usable(ucg_group_h group, const uint8_t *kind,
                        size_t stride);

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

/** Counters of the context's mc_udp interface; UCS_ERR_UNSUPPORTED when it
 *  has none (tests, tools) */
ucs_status_t ucg_mc_counters(ucg_context_h context,
                             uct_mc_udp_counters_t *counters);

#endif
