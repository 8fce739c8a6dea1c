/**
 * UCG group internals shared by the files of the group: the record every
 * member sends at creation and the steps of creation and destruction that
 * live in ucg_group_exchange.c, ucg_group_sm.c and ucg_group_failure.c.
 */
#ifndef UCG_GROUP_INT_H_
#define UCG_GROUP_INT_H_

#include "ucg_group.h"
#include "ucg_coll.h"

/* Number of distinct group ids */
#define UCG_GROUP_NUM_IDS      65536u

/* What every member tells the others first: fixed size, so that the
 * variable part can then be exchanged padded to the longest one */
typedef struct ucg_group_rec {
    uint64_t real_host;
    uint64_t host_label;
    uint64_t sm_max_bcopy;
    uint64_t start_time;       /* with pid: see uct_o2m_proc_t */
    int32_t  status;           /* a local failure makes every member fail */
    uint32_t pid;
    uint32_t created_count;    /* rank 0's makes the uid */
    uint32_t worker_addr_len;
    uint32_t sm_iface_addr_len[UCG_SM_LAST];
    uint32_t sm_dev_addr_len[UCG_SM_LAST];
    uint16_t proposed_id;
    uint8_t  o2m;
    uint8_t  sm_cma;           /* the sm interfaces read with single copy */
    uint32_t proposed_epoch;   /* the group's is the largest */
    uint32_t sm_max_members;   /* MAX_MEMBERS of the sm interfaces */
    uint32_t sm_budget[UCG_SM_LAST]; /* directory entries reserved for the
                                        endpoints this member roots */
    uint8_t  mc_tls;           /* multicast transports open: bits
                                  UCG_MC_TL_BIT(ucg_mc_tl_t) */
    uint8_t  mc_lo_tls;        /* of those, the ones on loopback */
    uint8_t  reserved2[2];
    /* Ring geometry of the sm interfaces: what the segments this member
     * roots cost; and its SM_GROUP_MEM */
    uint64_t sm_ring_max[UCG_SM_LAST];
    uint32_t sm_fifo_depth[UCG_SM_LAST];
    uint32_t sm_seg_bcopy[UCG_SM_LAST];
    uint64_t sm_group_mem;
    uint64_t plan_hash;        /* ucg_config_plan_hash: the planner's
                                  variables */
} ucg_group_rec_t;


/* Creation: what the members tell each other (ucg_group_exchange.c) */
ucs_status_t ucg_group_oob(const ucg_group_params_t *params,
                           const void *sbuf, void *rbuf, size_t len);
ucs_status_t ucg_group_any_error(const int32_t *status, size_t stride,
                                 unsigned size, unsigned *rank_p);
ucs_status_t ucg_group_pack_local(ucg_group_t *group,
                                  const ucg_group_params_t *params,
                                  ucg_group_rec_t *rec, void **var_p);
size_t ucg_group_var_len(const ucg_group_rec_t *rec);
void ucg_group_unpack(ucg_group_t *group, const ucg_group_rec_t *recs,
                      size_t stride);
ucs_status_t ucg_group_agree_id(ucg_group_t *group,
                                const ucg_group_params_t *params,
                                const ucg_group_rec_t *recs,
                                ucs_status_t local_status);

/* Host-local endpoints (ucg_group_sm.c) */
void ucg_group_sm_reserve(ucg_group_t *group, unsigned size);
ucs_status_t ucg_group_sm_limits(ucg_group_t *group,
                                 const ucg_group_rec_t *recs);
void ucg_group_sm_cleanup(ucg_group_t *group);
void ucg_group_destroy_sm_eps(ucg_group_t *group);

/* Liveness (ucg_group_failure.c) */
int ucg_group_hosts_are_real(const ucg_group_t *group);
ucs_status_t ucg_group_watch_members(ucg_group_t *group);
void ucg_group_unwatch_members(ucg_group_t *group);

#endif
