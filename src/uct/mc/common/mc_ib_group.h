/**
 * ucx-o2m: the group endpoints of the IB multicast transports (mc_verbs,
 * mc_mlx5) - UD multicast made reliable by the engine of mc/rel/
 * (docs/multicast.md, "The mc_verbs transport").
 *
 * Both transports derive from a UCX UD interface (ud_verbs, ud_mlx5) and
 * embed uct_mc_ib_groups_t in it: the group variables, the join through
 * librdmacm, the attach, the members' addresses, the WHO/HELLO exchange,
 * the engine's callbacks and the endpoint operations are this module's.
 * What differs is how a datagram leaves the group's QP: a datapath
 * (uct_mc_ib_datapath_t) - ibv_post_send with an address handle
 * (uct_mc_ib_verbs_datapath, mc_verbs), or mlx5 work requests with the
 * address vector built for the destination (mc_mlx5).
 */
#ifndef UCT_MC_IB_GROUP_H_
#define UCT_MC_IB_GROUP_H_

#include "mc_ib_wire.h"
#include "mc_rel_ep.h"
#include "../rel/mc_rel.h"

#include <uct/ib/base/ib_iface.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/list.h>

#include <netinet/in.h>
#include <rdma/rdma_cma.h>


#define UCT_MC_IB_TX_SLOTS  64      /* sends in flight per group */
#define UCT_MC_IB_RX_SLOTS  256     /* receives posted per group */
#define UCT_MC_IB_AV_WORDS  6       /* room for a datapath's address form */


/* The group variables, the same in both transports */
typedef struct uct_mc_ib_group_config {
    uct_mc_rel_ep_config_t super;
    unsigned               drop;      /* GROUP_TEST_DROP: the engine's
                                         loss hook (config test_drop) */
} uct_mc_ib_group_config_t;

/* The group variables (UCX_<TL>_GROUP_<name>) of a transport's
 * configuration table: the fields of its uct_mc_ib_group_config_t member
 * @a _member of its configuration type @a _type */
#define UCT_MC_IB_GROUP_CONFIG_FIELDS(_type, _member) \
    {"GROUP_WINDOW", "256",                                                   \
     "Packets a group's root may have outstanding (not acknowledged by "      \
     "every member): a power of two, 2..32768. Memory per group and member "  \
     "is about GROUP_WINDOW * GROUP_MTU bytes.",                              \
     ucs_offsetof(_type, _member.super.window),                               \
     UCS_CONFIG_TYPE_UINT},                                                   \
                                                                              \
    {"GROUP_MTU", "0",                                                        \
     "Largest datagram of a group, its 48 bytes of headers included; at "     \
     "most "                                                                  \
     "the port's active MTU; 0: the port's active MTU. Larger messages are "  \
     "fragmented by the engine.",                                             \
     ucs_offsetof(_type, _member.super.mtu),                                  \
     UCS_CONFIG_TYPE_MEMUNITS},                                               \
                                                                              \
    {"GROUP_SEG_SIZE", "8k",                                                  \
     "Largest active message (am_bcopy) of a group endpoint, 1..1m; it must " \
     "also fit the window.",                                                  \
     ucs_offsetof(_type, _member.super.seg_size),                             \
     UCS_CONFIG_TYPE_MEMUNITS},                                               \
                                                                              \
    {"GROUP_RTO_MIN", "100us",                                                \
     "Shortest retransmission timeout of a group (NACK retry, SYNC, join "    \
     "probes).",                                                              \
     ucs_offsetof(_type, _member.super.rto_min),                              \
     UCS_CONFIG_TYPE_TIME},                                                   \
                                                                              \
    {"GROUP_RTO_MAX", "20ms",                                                 \
     "Longest retransmission timeout of a group after back-off: the longest " \
     "a waiting member stays silent.",                                        \
     ucs_offsetof(_type, _member.super.rto_max),                              \
     UCS_CONFIG_TYPE_TIME},                                                   \
                                                                              \
    {"GROUP_REORDER_SLACK", "20us",                                           \
     "How long a gap in a group's packets may stay open before it is "        \
     "NACKed.",                                                               \
     ucs_offsetof(_type, _member.super.reorder_slack),                        \
     UCS_CONFIG_TYPE_TIME},                                                   \
                                                                              \
    {"GROUP_PEER_TIMEOUT", "30s",                                             \
     "How long a member waited on may stay silent before its group fails "    \
     "with UCS_ERR_TIMED_OUT on every member (0: no bound, at most 1h). UD "  \
     "tells nothing of a peer's exit: this is the only bound on a wait for "  \
     "a member that is gone (killed, its host down). The default is UD's "    \
     "own peer timeout (UCX_UD_TIMEOUT, 30s): how long UCX lets a UD peer "   \
     "leave its packets unacknowledged. Only a member the group waits for "   \
     "is timed (a child that has not acknowledged data, the root while a "    \
     "member expects a message, which pings it), from the start of that "     \
     "wait: an idle group is never failed, but a process that does not "      \
     "progress its worker for longer while it is waited on is taken for "     \
     "gone.",                                                                 \
     ucs_offsetof(_type, _member.super.peer_timeout),                         \
     UCS_CONFIG_TYPE_TIME},                                                   \
                                                                              \
    {"GROUP_RADIX", "4",                                                      \
     "Fan-in of a group's ACK tree, 1..64.",                                  \
     ucs_offsetof(_type, _member.super.radix),                                \
     UCS_CONFIG_TYPE_UINT},                                                   \
                                                                              \
    {"GROUP_MCAST_BASE", "239.255.80.0",                                      \
     "First IPv4 multicast address of the range groups join through "         \
     "librdmacm (its MGID on IB and RoCE); a group's address is "             \
     "GROUP_MCAST_BASE + hash(group id) mod GROUP_MCAST_COUNT.",              \
     ucs_offsetof(_type, _member.super.mcast_base),                           \
     UCS_CONFIG_TYPE_STRING},                                                 \
                                                                              \
    {"GROUP_MCAST_COUNT", "1024",                                             \
     "Number of multicast addresses in the range, 1..65536.",                 \
     ucs_offsetof(_type, _member.super.mcast_count),                          \
     UCS_CONFIG_TYPE_UINT},                                                   \
                                                                              \
    {"GROUP_TEST_DROP", "0",                                                  \
     "Testing only (the engine's loss hook): a member drops this many per "   \
     "mille of the first transmissions of data packets it receives, the "     \
     "same ones on every run (a function of its rank and the packet's index " \
     "in the stream); repairs are never dropped. 0..1000.",                   \
     ucs_offsetof(_type, _member.drop),                                       \
     UCS_CONFIG_TYPE_UINT},


typedef struct uct_mc_ib_ep uct_mc_ib_ep_t;

/* Where a datagram goes: a member's QP, or the group (QPN 0xFFFFFF) */
typedef struct uct_mc_ib_dest {
    struct ibv_ah *ah;                      /* NULL: not known yet */
    uint32_t      qpn;
    uint64_t      av[UCT_MC_IB_AV_WORDS];   /* the datapath's form of ah */
} uct_mc_ib_dest_t;

/* How datagrams leave a group's QP */
typedef struct uct_mc_ib_datapath {
    /* Sends complete on a CQ of their own (ep->tx_cq), which tx_poll reads;
     * else on the group's CQ with the receives (wr_id: the slot) */
    int          own_tx_cq;
    /* The QP is ready to send (RTS): take over what the datapath needs */
    ucs_status_t (*qp_init)(uct_mc_ib_ep_t *ep);
    /* @a dest->ah exists: fill dest->av */
    ucs_status_t (*dest_init)(uct_mc_ib_ep_t *ep, uct_mc_ib_dest_t *dest);
    /* Send @a length bytes of tx slot @a slot to @a dest with the group's
     * Q_Key; the slot is the datapath's until its completion */
    ucs_status_t (*post)(uct_mc_ib_ep_t *ep, const uct_mc_ib_dest_t *dest,
                         unsigned slot, size_t length);
    /* Completed sends: their slots back (uct_mc_ib_ep_tx_done) */
    unsigned     (*tx_poll)(uct_mc_ib_ep_t *ep, uint64_t now);
    /* Before the QP is destroyed: release what qp_init took */
    void         (*cleanup)(uct_mc_ib_ep_t *ep);
} uct_mc_ib_datapath_t;

/* The group part of an interface */
typedef struct uct_mc_ib_groups {
    const char                 *tl_name;   /* in messages */
    uct_ib_iface_t             *ib_iface;
    const uct_mc_ib_datapath_t *dp;
    /* What group endpoints point to as their interface: the operations of
     * a group endpoint (a UD endpoint keeps the interface's own) */
    uct_iface_t                group_iface;
    uct_mc_rel_config_t        rel;
    uint32_t                   mc_base;    /* host order */
    unsigned                   mc_count;
    size_t                     seg_size;   /* largest AM payload */
    unsigned                   seg_frags;  /* packets of the largest msg */
    size_t                     dgram_len;  /* largest datagram, headers
                                              incl. */
    int                        is_roce;
    uint32_t                   bind_ip;    /* network order, 0: none */
    ucs_list_link_t            list;       /* uct_mc_ib_ep_t */
} uct_mc_ib_groups_t;

typedef struct uct_mc_ib_peer {
    uct_mc_ib_dest_t dest;
    uint64_t         last_who;   /* ns */
} uct_mc_ib_peer_t;

struct uct_mc_ib_ep {
    uct_mc_rel_ep_t            super;      /* super.super.ep.iface:
                                              &groups->group_iface */
    ucs_list_link_t            list;       /* groups->list */
    uct_mc_ib_groups_t         *groups;    /* NULL: the interface was
                                              closed, super.rel too */
    uint32_t                   conn;
    uint32_t                   epoch;
    unsigned                   num_members;
    unsigned                   my_rank;
    unsigned                   root;
    uct_mc_ib_peer_t           *peers;
    ucs_status_t               status;
    /* Join */
    struct rdma_event_channel  *cm_channel;
    struct rdma_cm_id          *cm_id;
    struct sockaddr_in         mc_addr;
    int                        cm_joined;  /* rdma_join_multicast() done */
    int                        attached;   /* QP attached to the group */
    union ibv_gid              mgid;
    uint16_t                   mlid;
    uint32_t                   qkey;
    uct_mc_ib_dest_t           mc_dest;    /* ah NULL until joined */
    /* Datagrams */
    struct ibv_cq              *cq;
    struct ibv_cq              *tx_cq;     /* cq, or the datapath's own */
    struct ibv_qp              *qp;
    struct ibv_mr              *mr;
    void                       *buf;       /* tx slots, then rx slots */
    size_t                     slot_len;
    unsigned                   tx_free[UCT_MC_IB_TX_SLOTS];
    unsigned                   tx_nfree;
    void                       *dp_priv;   /* the datapath's */
    uct_mc_verbs_ep_counters_t cnt;        /* the transport's share */
};


/* Datagrams through ibv_post_send() and an address handle (mc_verbs) */
extern const uct_mc_ib_datapath_t uct_mc_ib_verbs_datapath;


static inline void *uct_mc_ib_ep_slot(uct_mc_ib_ep_t *ep, unsigned index)
{
    return UCS_PTR_BYTE_OFFSET(ep->buf, (size_t)index * ep->slot_len);
}

/* A datapath's send of tx slot @a slot completed */
static inline void uct_mc_ib_ep_tx_done(uct_mc_ib_ep_t *ep, unsigned slot)
{
    ep->tx_free[ep->tx_nfree++] = slot;
}

/* The group's stream failed (the datapath's errors) */
void uct_mc_ib_ep_fail(uct_mc_ib_ep_t *ep, ucs_status_t status,
                       uint64_t now);

/* The group part of an interface, after its UD parent's init; groups
 * stay unusable (uct_mc_ib_group_ep_create fails with a message) when
 * the port has no IPv4 address to join from */
ucs_status_t uct_mc_ib_groups_init(uct_mc_ib_groups_t *groups,
                                   const char *tl_name,
                                   uct_ib_iface_t *ib_iface,
                                   const uct_mc_ib_datapath_t *dp,
                                   const uct_mc_ib_group_config_t *config);

void uct_mc_ib_groups_cleanup(uct_mc_ib_groups_t *groups);

unsigned uct_mc_ib_groups_progress(uct_mc_ib_groups_t *groups);

/* uct_o2m_ep_create() on the interface of @a groups */
ucs_status_t uct_mc_ib_group_ep_create(uct_mc_ib_groups_t *groups,
                                       const uct_o2m_group_params_t *params,
                                       uct_ep_h *ep_p);

/* Whether @a ep is a group endpoint of mc_verbs or mc_mlx5 */
int uct_mc_ib_is_ep(uct_ep_h ep);


/* What a transport adds to the UD interface it derives from */
typedef struct uct_mc_ib_ext {
    uct_iface_ops_t    ud_ops;   /* the parent's, as it set them */
    uct_mc_ib_groups_t groups;
} uct_mc_ib_ext_t;

/* The interface operations a transport replaces: its own functions (it
 * recognizes its interfaces by them), which call the ones below */
typedef struct uct_mc_ib_iface_ops {
    uct_iface_query_func_t    iface_query;
    uct_iface_progress_func_t iface_progress;
    uct_iface_close_func_t    iface_close;
} uct_mc_ib_iface_ops_t;

/*
 * The init function of a transport's interface class @a cls, derived from
 * a UD interface class (cls->superclass: ud_verbs, ud_mlx5): the parent's
 * init, which UCX 1.13 keeps static but its exported class object holds,
 * then the group part in @a ext, then @a ops in the interface's operations
 * (the parent's kept in ext->ud_ops for the point-to-point path).
 * @a self is the object (its UD and IB interfaces at its start).
 */
ucs_status_t uct_mc_ib_iface_init(void *self, ucs_class_t *cls,
                                  int *init_count, uct_mc_ib_ext_t *ext,
                                  const char *tl_name,
                                  const uct_mc_ib_datapath_t *dp,
                                  const uct_mc_ib_group_config_t *config,
                                  const uct_mc_ib_iface_ops_t *ops,
                                  uct_md_h md, uct_worker_h worker,
                                  const uct_iface_params_t *params,
                                  const uct_iface_config_t *tl_config);

/* The parent's query, with the point-to-point path advertised a little
 * slower, so that UCP keeps the parent when both are allowed: loading the
 * plugin must not move a job's traffic onto a transport meant for the
 * multicast groups (UCX_TLS selects it) */
ucs_status_t uct_mc_ib_iface_query(uct_mc_ib_ext_t *ext, uct_iface_h tl_iface,
                                   uct_iface_attr_t *attr);

/* The parent's progress, then the groups' */
unsigned uct_mc_ib_iface_progress(uct_mc_ib_ext_t *ext, uct_iface_h tl_iface);

/* A transport's replaced operations, for its interface type @a _type (a
 * UCS class whose uct_mc_ib_ext_t is its member "mc"): _type##_query and
 * _type##_progress, and the table _type##_mc_ops with them and the class's
 * delete function, for uct_mc_ib_iface_init() */
#define UCT_MC_IB_IFACE_OPS_DEFINE(_type) \
    static UCS_CLASS_DECLARE_DELETE_FUNC(_type, uct_iface_t); \
                                                                              \
    static ucs_status_t _type##_query(uct_iface_h tl_iface, \
                                      uct_iface_attr_t *attr) \
    { \
        return uct_mc_ib_iface_query(&ucs_derived_of(tl_iface, _type)->mc, \
                                     tl_iface, attr); \
    } \
                                                                              \
    static unsigned _type##_progress(uct_iface_h tl_iface) \
    { \
        return uct_mc_ib_iface_progress( \
                &ucs_derived_of(tl_iface, _type)->mc, tl_iface); \
    } \
                                                                              \
    static const uct_mc_ib_iface_ops_t _type##_mc_ops = { \
        .iface_query    = _type##_query, \
        .iface_progress = _type##_progress, \
        .iface_close    = UCS_CLASS_DELETE_FUNC_NAME(_type) \
    }

#endif
