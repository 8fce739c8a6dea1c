/**
 * ucx-o2m: the mc_udp transport - UDP/IP multicast made reliable by the
 * engine of mc/rel/ (docs/multicast.md, "The mc_udp transport").
 *
 * One interface is one non-blocking UDP socket bound to the device's IPv4
 * address: it sends everything (unicast and multicast, so that the source
 * address of any packet of a member is its unicast address) and receives
 * the unicast packets.  A group endpoint adds a socket bound to the group's
 * multicast address and port, a member of the group on the device.
 *
 * Every datagram is an 8-byte transport header (uct_mc_udp_hdr_t) followed
 * by an engine packet (or a small control payload for WHO, HELLO, PING).
 * A message is an 8-byte AM header (the id, 7 bytes 0:
 * UCT_MC_REL_EP_AM_HDR_LEN, so that the data stays 8-byte aligned)
 * followed by the AM data; the engine fragments it.
 *
 *  - point-to-point (uct_ep_create to an interface address): a stream of
 *    two members, the creator root (rank 0); the receiver opens its end
 *    when the root's join probe arrives.
 *  - group (uct_o2m_ep_create): the members' ranks; the multicast address
 *    and port come from the group id; members learn each other's unicast
 *    addresses from HELLO (multicast at creation, and the answer to a WHO
 *    multicast when the engine sends to a member not known yet).
 *
 * Liveness: a peer is gone when a packet to it came back as ICMP port
 * unreachable (IP_RECVERR): its socket is closed, so its process exited or
 * closed the interface.  When the engine asks whether a member it waits on
 * is alive, the transport sends it a PING to learn that.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_udp.h"
#include "../common/mc_rel_ep.h"
#include "../rel/mc_rel.h"
#include "../../sm/bcast/o2m_mix.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_component.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/errqueue.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>


#define UCT_MC_UDP_MAGIC      0x554d  /* "MU" little-endian */
#define UCT_MC_UDP_HDR_LEN    8
#define UCT_MC_UDP_IP_HDRS    28      /* IPv4 + UDP */
#define UCT_MC_UDP_RX_BURST   64      /* datagrams per socket per progress */
#define UCT_MC_UDP_RX_VLEN    16      /* datagrams per recvmmsg() */
#define UCT_MC_UDP_RX_EVENTS  8       /* epoll events per progress */
#define UCT_MC_UDP_PACE_BURST 16      /* packets the pacer lets out at once */
#define UCT_MC_UDP_WHO_GAP    100000  /* ns between WHOs for one member */


/* Kinds of datagram */
enum {
    UCT_MC_UDP_KIND_TO_RECV = 1, /* p2p: root -> receiver (engine packet) */
    UCT_MC_UDP_KIND_TO_ROOT = 2, /* p2p: receiver -> root (engine packet) */
    UCT_MC_UDP_KIND_GROUP   = 3, /* group stream (engine packet) */
    UCT_MC_UDP_KIND_WHO     = 4, /* group: who has this rank? (multicast) */
    UCT_MC_UDP_KIND_HELLO   = 5, /* group: I have this rank */
    UCT_MC_UDP_KIND_PING    = 6, /* liveness: answered by the kernel only
                                    when nobody listens (ICMP) */
    UCT_MC_UDP_KIND_CLOSE   = 7, /* p2p: the root destroyed its endpoint;
                                    the receiver frees its end */
    UCT_MC_UDP_KIND_LAST
};


/* Transport header, little-endian */
typedef struct __attribute__((packed)) uct_mc_udp_hdr {
    uint16_t magic;
    uint8_t  kind;
    uint8_t  reserved;  /* 0 */
    uint32_t conn;      /* p2p: the root's connection id; group: group id */
} uct_mc_udp_hdr_t;

/* WHO and HELLO payload */
typedef struct __attribute__((packed)) uct_mc_udp_who {
    uint32_t epoch;
    uint16_t rank;      /* WHO: the rank asked for; HELLO: the sender's */
    uint16_t reserved;  /* 0 */
} uct_mc_udp_who_t;


typedef struct uct_mc_udp_iface_addr {
    uint16_t port;      /* network order */
} UCS_S_PACKED uct_mc_udp_iface_addr_t;

typedef struct uct_mc_udp_dev_addr {
    struct in_addr addr;
} UCS_S_PACKED uct_mc_udp_dev_addr_t;


typedef struct uct_mc_udp_iface_config {
    uct_iface_config_t     super;
    uct_mc_rel_ep_config_t mc;
    size_t                 rcvbuf;
    unsigned               mcast_port;
    double                 pace_rate;
    unsigned               max_conns;
} uct_mc_udp_iface_config_t;


typedef struct uct_mc_udp_peer {
    struct sockaddr_in addr;
    uint8_t            known;
    uint8_t            gone;
    uint64_t           last_who;   /* ns */
} uct_mc_udp_peer_t;

typedef struct uct_mc_udp_iface uct_mc_udp_iface_t;
typedef struct uct_mc_udp_ep    uct_mc_udp_ep_t;

/* One stream end: a p2p root or group endpoint, or a p2p receiver */
typedef struct uct_mc_udp_stream {
    ucs_list_link_t     list;         /* iface->streams */
    uct_mc_udp_iface_t  *iface;
    uct_mc_udp_ep_t     *ep;          /* NULL: a p2p receiver */
    uct_mc_rel_stream_t *rel;
    uint8_t             kind;         /* of the packets it sends */
    uint32_t            conn;
    uint32_t            epoch;
    unsigned            num_members;
    unsigned            my_rank;
    unsigned            root;
    uct_mc_udp_peer_t   *peers;       /* num_members */
    struct sockaddr_in  mc_addr;      /* group: multicast address */
    int                 mc_fd;        /* group: multicast socket, or -1 */
    int                 rx_ready;     /* mc_fd has datagrams (progress) */
    ucs_status_t        status;
    int                 err_reported; /* p2p: the error handler was called */
} uct_mc_udp_stream_t;

struct uct_mc_udp_ep {
    uct_mc_rel_ep_t     super;        /* super.rel: s.rel */
    uct_mc_udp_stream_t s;
    int                 is_group;
};

struct uct_mc_udp_iface {
    uct_base_iface_t      super;
    int                   fd;
    int                   epfd;       /* event fd: sockets and timer */
    int                   timer_fd;   /* the streams' next deadline */
    struct sockaddr_in    addr;       /* bound unicast address */
    int                   is_loopback;
    uct_mc_rel_config_t   rel;
    struct in_addr        mc_base;    /* host order */
    unsigned              mc_count;
    uint16_t              mc_port;
    size_t                seg_size;   /* largest AM payload */
    unsigned              max_conns;
    size_t                rcvbuf;     /* SO_RCVBUF of its sockets */
    unsigned              seg_frags;  /* packets of the largest message */
    unsigned              num_rconns;
    uint32_t              nonce;      /* epoch of its p2p streams */
    uint32_t              next_conn;
    ucs_list_link_t       streams;
    double                pace_rate;  /* bytes/ns, 0: off */
    double                tokens;
    uint64_t              pace_last;
    void                  *rx_buf;    /* UCT_MC_UDP_RX_VLEN datagrams */
    size_t                rx_len;     /* the largest datagram */
    size_t                rx_stride;  /* rx_len, 8-byte aligned */
    uct_mc_udp_counters_t cnt;
    uct_mc_udp_repair_stats_t repair; /* of its closed streams */
};


static uct_component_t uct_mc_udp_component;
static uct_iface_ops_t uct_mc_udp_iface_ops;

static ucs_config_field_t uct_mc_udp_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_mc_udp_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"WINDOW", "256",
     "Packets a stream's root may have outstanding (not acknowledged by "
     "every member): a power of two, 2..32768. Memory per stream and member "
     "is about WINDOW * MTU bytes.",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.window), UCS_CONFIG_TYPE_UINT},

    {"MTU", "0",
     "Largest IP datagram sent, headers included (IPv4 + UDP + 48 bytes of "
     "transport and engine headers); at most the device's MTU; 0: the "
     "device's MTU, at most 1500. Larger messages are fragmented by the "
     "engine.",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.mtu), UCS_CONFIG_TYPE_MEMUNITS},

    {"SEG_SIZE", "8k",
     "Largest active message (am_bcopy), 1..1m; a message must also fit the "
     "window.",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.seg_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"RCVBUF", "4m",
     "SO_RCVBUF of the sockets (SO_RCVBUFFORCE when net.core.rmem_max is "
     "lower and the process may): what a receiver buffers between two "
     "progress calls.",
     ucs_offsetof(uct_mc_udp_iface_config_t, rcvbuf), UCS_CONFIG_TYPE_MEMUNITS},

    {"RTO_MIN", "20us",
     "Shortest retransmission timeout (NACK retry, SYNC, probes).",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.rto_min), UCS_CONFIG_TYPE_TIME},

    {"RTO_MAX", "8ms",
     "Longest retransmission timeout after back-off: the longest a waiting "
     "member stays silent.",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.rto_max), UCS_CONFIG_TYPE_TIME},

    {"REORDER_SLACK", "10us",
     "How long a gap may stay open before it is NACKed.",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.reorder_slack),
     UCS_CONFIG_TYPE_TIME},

    {"PEER_TIMEOUT", "0",
     "How long a member waited on may stay silent before its streams fail "
     "(0: no bound; a member whose socket is closed - ICMP port unreachable "
     "- fails them in any case).",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.peer_timeout),
     UCS_CONFIG_TYPE_TIME},

    {"RADIX", "4",
     "Fan-in of a group's ACK tree, 1..64.",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.radix), UCS_CONFIG_TYPE_UINT},

    {"MCAST_BASE", "239.255.64.0",
     "First multicast address of the range groups use (administratively "
     "scoped 239.0.0.0/8 recommended); a group's address is MCAST_BASE + "
     "hash(group id) mod MCAST_COUNT.",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.mcast_base),
     UCS_CONFIG_TYPE_STRING},

    {"MCAST_COUNT", "1024",
     "Number of multicast addresses in the range, 1..65536.",
     ucs_offsetof(uct_mc_udp_iface_config_t, mc.mcast_count),
     UCS_CONFIG_TYPE_UINT},

    {"MCAST_PORT", "47011",
     "UDP port of every group's multicast address, 1..65535.",
     ucs_offsetof(uct_mc_udp_iface_config_t, mcast_port),
     UCS_CONFIG_TYPE_UINT},

    {"PACE_RATE", "400MBs",
     "Data a stream's root sends per second at most (bursts of 16 packets), "
     "so that it does not overrun the receivers' buffers; \"auto\": no "
     "pacing (a number needs its unit, e.g. \"1GBs\").",
     ucs_offsetof(uct_mc_udp_iface_config_t, pace_rate), UCS_CONFIG_TYPE_BW},

    {"MAX_CONNS", "1024",
     "Point-to-point streams from other interfaces this interface receives "
     "at once; probes beyond it are dropped.",
     ucs_offsetof(uct_mc_udp_iface_config_t, max_conns),
     UCS_CONFIG_TYPE_UINT},

    {NULL}
};



static int uct_mc_udp_sa_equal(const struct sockaddr_in *a,
                               const struct sockaddr_in *b)
{
    return (a->sin_addr.s_addr == b->sin_addr.s_addr) &&
           (a->sin_port == b->sin_port);
}

static void uct_mc_udp_fill_hdr(uct_mc_udp_hdr_t *hdr, uint8_t kind,
                                uint32_t conn)
{
    hdr->magic    = htole16(UCT_MC_UDP_MAGIC);
    hdr->kind     = kind;
    hdr->reserved = 0;
    hdr->conn     = htole32(conn);
}


/* ------------------------------------------------------------------------ */
/* Sending                                                                 */

static void uct_mc_udp_pace_refill(uct_mc_udp_iface_t *iface, uint64_t now)
{
    double burst;

    if (iface->pace_rate == 0) {
        return;
    }

    burst          = UCT_MC_UDP_PACE_BURST * (double)(iface->rel.mtu + 48);
    iface->tokens += (now - iface->pace_last) * iface->pace_rate;
    if (iface->tokens > burst) {
        iface->tokens = burst;
    }
    iface->pace_last = now;
}

static void uct_mc_udp_read_errqueue(uct_mc_udp_iface_t *iface);

static ucs_status_t uct_mc_udp_sendv(uct_mc_udp_iface_t *iface,
                                     const struct sockaddr_in *dest,
                                     const void *hdr, size_t hdr_len,
                                     const void *b1, size_t l1,
                                     const void *b2, size_t l2)
{
    struct iovec iov[3] = {{(void*)hdr, hdr_len}, {(void*)b1, l1},
                           {(void*)b2, l2}};
    struct msghdr msg   = {0};
    ssize_t ret;

    msg.msg_name    = (void*)dest;
    msg.msg_namelen = sizeof(*dest);
    msg.msg_iov     = iov;
    msg.msg_iovlen  = 3;

    ret = sendmsg(iface->fd, &msg, MSG_DONTWAIT);
    if (ret >= 0) {
        ++iface->cnt.tx_packets;
        return UCS_OK;
    }

    if ((errno == EAGAIN) || (errno == EWOULDBLOCK) || (errno == ENOBUFS)) {
        return UCS_ERR_NO_RESOURCE;
    }

    /* An ICMP error of an earlier packet (ECONNREFUSED...: the send
     * reports the socket's pending error and clears it, so its queue entry
     * is read here) or a route problem: the packet is lost, the engine
     * recovers or the liveness check decides */
    uct_mc_udp_read_errqueue(iface);
    return UCS_OK;
}

/* WHO: ask the group who has @a rank (answered by a unicast HELLO) */
static void uct_mc_udp_send_who(uct_mc_udp_stream_t *s, unsigned rank,
                                uint64_t now)
{
    uct_mc_udp_peer_t *peer = &s->peers[rank];
    uct_mc_udp_hdr_t hdr;
    uct_mc_udp_who_t who;

    if ((peer->last_who != 0) && (now - peer->last_who < UCT_MC_UDP_WHO_GAP)) {
        return;
    }
    peer->last_who = now ? now : 1;

    uct_mc_udp_fill_hdr(&hdr, UCT_MC_UDP_KIND_WHO, s->conn);
    who.epoch    = htole32(s->epoch);
    who.rank     = htole16(rank);
    who.reserved = 0;
    (void)uct_mc_udp_sendv(s->iface, &s->mc_addr, &hdr, sizeof(hdr), &who,
                           sizeof(who), NULL, 0);
}

static void uct_mc_udp_send_hello(uct_mc_udp_stream_t *s,
                                  const struct sockaddr_in *dest)
{
    uct_mc_udp_hdr_t hdr;
    uct_mc_udp_who_t who;

    uct_mc_udp_fill_hdr(&hdr, UCT_MC_UDP_KIND_HELLO, s->conn);
    who.epoch    = htole32(s->epoch);
    who.rank     = htole16(s->my_rank);
    who.reserved = 0;
    (void)uct_mc_udp_sendv(s->iface, dest, &hdr, sizeof(hdr), &who,
                           sizeof(who), NULL, 0);
}

/* Engine callback: one packet to a member or to the multicast address */
static ucs_status_t uct_mc_udp_rel_send(void *arg, int dest, const void *hdr,
                                        const void *payload, size_t length)
{
    uct_mc_udp_stream_t *s    = arg;
    uct_mc_udp_iface_t *iface = s->iface;
    const struct sockaddr_in *to;
    uct_mc_udp_hdr_t thdr;
    uint64_t now;
    size_t bytes;
    unsigned rank;

    if (dest == UCT_MC_REL_DEST_MCAST) {
        /* A stream of two has no multicast address: its receiver */
        to = (s->kind == UCT_MC_UDP_KIND_GROUP) ? &s->mc_addr :
             &s->peers[1 - s->my_rank].addr;
    } else if ((dest >= 0) && ((unsigned)dest < s->num_members)) {
        rank = dest;
        if (!s->peers[rank].known) {
            uct_mc_udp_send_who(s, rank, uct_mc_rel_ep_now());
            return UCS_OK; /* lost: the engine's timers send it again */
        }
        to = &s->peers[rank].addr;
    } else {
        return UCS_OK;
    }

    /* Pacing applies to data only: control packets are small and their
     * timers must not wait behind the data */
    bytes = UCT_MC_REL_HDR_LEN + length + UCT_MC_UDP_HDR_LEN +
            UCT_MC_UDP_IP_HDRS;
    if ((iface->pace_rate != 0) && (length > 0)) {
        now = uct_mc_rel_ep_now();
        uct_mc_udp_pace_refill(iface, now);
        if (iface->tokens < bytes) {
            ++iface->cnt.tx_paced;
            return UCS_ERR_NO_RESOURCE;
        }
        iface->tokens -= bytes;
    }

    uct_mc_udp_fill_hdr(&thdr, s->kind, s->conn);
    return uct_mc_udp_sendv(iface, to, &thdr, sizeof(thdr), hdr,
                            UCT_MC_REL_HDR_LEN, payload, length);
}

/* Engine callback: a whole message, AM header first */
static void uct_mc_udp_rel_deliver(void *arg, const void *data,
                                   size_t length)
{
    uct_mc_udp_stream_t *s = arg;

    if (uct_mc_rel_ep_deliver(&s->iface->super, data, length) != UCS_OK) {
        ++s->iface->cnt.rx_bad;
    }
}

/* Engine callback: 0 when the member's socket is closed */
static int uct_mc_udp_rel_is_alive(void *arg, unsigned rank)
{
    uct_mc_udp_stream_t *s = arg;
    uct_mc_udp_peer_t *peer;
    uct_mc_udp_hdr_t hdr;

    if (rank >= s->num_members) {
        return 1;
    }

    peer = &s->peers[rank];
    if (peer->gone) {
        return 0;
    }

    if (!peer->known) {
        uct_mc_udp_send_who(s, rank, uct_mc_rel_ep_now());
    } else {
        /* The answer, if the port is closed, is an ICMP error that the
         * next progress reads; the next call returns it */
        uct_mc_udp_fill_hdr(&hdr, UCT_MC_UDP_KIND_PING, s->conn);
        (void)uct_mc_udp_sendv(s->iface, &peer->addr, &hdr, sizeof(hdr),
                               NULL, 0, NULL, 0);
    }
    return 1;
}

static void uct_mc_udp_rel_failed(void *arg, ucs_status_t status)
{
    uct_mc_udp_stream_t *s = arg;

    s->status = status;
}

static const uct_mc_rel_ops_t uct_mc_udp_rel_ops = {
    .send     = uct_mc_udp_rel_send,
    .deliver  = uct_mc_udp_rel_deliver,
    .is_alive = uct_mc_udp_rel_is_alive,
    .failed   = uct_mc_udp_rel_failed
};


/* ------------------------------------------------------------------------ */
/* Streams                                                                 */

static ucs_status_t
uct_mc_udp_stream_init(uct_mc_udp_stream_t *s, uct_mc_udp_iface_t *iface,
                       uct_mc_udp_ep_t *ep, uint8_t kind, uint32_t conn,
                       uint32_t epoch, unsigned num_members,
                       unsigned my_rank, unsigned root)
{
    uct_mc_rel_config_t rel = iface->rel;
    uct_mc_rel_params_t params;
    ucs_status_t status;

    s->iface       = iface;
    s->ep          = ep;
    s->kind        = kind;
    s->conn        = conn;
    s->epoch       = epoch;
    s->num_members = num_members;
    s->my_rank     = my_rank;
    s->root        = root;
    s->mc_fd       = -1;
    s->rx_ready    = 0;
    s->status      = UCS_OK;
    s->err_reported = 0;
    s->rel         = NULL;
    s->peers       = ucs_calloc(num_members, sizeof(*s->peers),
                                "mc_udp peers");
    if (s->peers == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    s->peers[my_rank].addr  = iface->addr;
    s->peers[my_rank].known = 1;

    params.group_id    = conn;
    params.epoch       = epoch;
    params.num_members = num_members;
    params.my_rank     = my_rank;
    params.root        = root;
    params.init_psn    = (uint32_t)ucs_generate_uuid((uintptr_t)s);
    /* A point-to-point stream is UCP's: it closes its endpoints with a
     * flush and may stop progressing its worker once its own close is
     * done, so its receiver acknowledges each message as it comes (ACKs
     * on demand only in groups) */
    rel.ack_per_msg    = (kind != UCT_MC_UDP_KIND_GROUP);
    params.config      = &rel;
    params.ops         = &uct_mc_udp_rel_ops;
    params.arg         = s;

    status = uct_mc_rel_stream_create(&params, uct_mc_rel_ep_now(), &s->rel);
    if (status != UCS_OK) {
        ucs_free(s->peers);
        return status;
    }

    if (ep != NULL) {
        ep->super.rel     = s->rel;
        ep->super.is_root = (my_rank == root);
    }

    ucs_list_add_tail(&iface->streams, &s->list);
    return UCS_OK;
}

static void uct_mc_udp_add_repair_stats(uct_mc_udp_repair_stats_t *rep,
                                        const uct_mc_rel_stats_t *stats)
{
    unsigned i;

    UCS_STATIC_ASSERT(UCT_MC_UDP_LAT_BUCKETS == UCT_MC_REL_LAT_BUCKETS);
    rep->repaired   += stats->rx_repaired;
    rep->lat_sum_ns += stats->repair_lat_sum;
    rep->lat_max_ns  = ucs_max(rep->lat_max_ns, stats->repair_lat_max);
    for (i = 0; i < UCT_MC_UDP_LAT_BUCKETS; ++i) {
        rep->lat_hist[i] += stats->repair_lat[i];
    }
}

static void uct_mc_udp_add_stats(uct_mc_udp_counters_t *cnt,
                                 const uct_mc_rel_stats_t *stats)
{
    unsigned i;

    for (i = 0; i < UCT_MC_REL_DROP_LAST; ++i) {
        cnt->rx_engine_drop += stats->drop[i];
    }
    cnt->tx_repair_ucast += stats->tx_repair_ucast;
    cnt->tx_repair_mcast += stats->tx_repair_mcast;
    cnt->tx_nack         += stats->tx_nack;
    cnt->rx_dup          += stats->rx_dup;
}

static void uct_mc_udp_stream_cleanup(uct_mc_udp_stream_t *s)
{
    uct_mc_rel_stats_t stats;

    ucs_list_del(&s->list);
    /* a member's final ACK: the root may still flush (ACKs on demand) */
    uct_mc_rel_leave(s->rel, uct_mc_rel_ep_now());
    uct_mc_rel_stats(s->rel, &stats);
    uct_mc_udp_add_stats(&s->iface->cnt, &stats);
    uct_mc_udp_add_repair_stats(&s->iface->repair, &stats);
    uct_mc_rel_stream_destroy(s->rel);
    if (s->mc_fd >= 0) {
        /* Closing the socket leaves the multicast group */
        (void)epoll_ctl(s->iface->epfd, EPOLL_CTL_DEL, s->mc_fd, NULL);
        close(s->mc_fd);
    }
    ucs_free(s->peers);
}

static void uct_mc_udp_rconn_destroy(uct_mc_udp_stream_t *s)
{
    --s->iface->num_rconns;
    uct_mc_udp_stream_cleanup(s);
    ucs_free(s);
}


/* ------------------------------------------------------------------------ */
/* Receiving                                                               */

static void uct_mc_udp_peer_gone(uct_mc_udp_iface_t *iface,
                                 const struct sockaddr_in *addr)
{
    uct_mc_udp_stream_t *s;
    unsigned i;

    ++iface->cnt.peers_gone;
    ucs_list_for_each(s, &iface->streams, list) {
        for (i = 0; i < s->num_members; ++i) {
            if ((i != s->my_rank) && s->peers[i].known &&
                uct_mc_udp_sa_equal(&s->peers[i].addr, addr)) {
                s->peers[i].gone = 1;
            }
        }
    }
}

/* ICMP errors of packets sent by the unicast socket (IP_RECVERR) */
static void uct_mc_udp_read_errqueue(uct_mc_udp_iface_t *iface)
{
    char control[512];
    struct sockaddr_in dest;
    struct sock_extended_err *ee;
    struct cmsghdr *cmsg;
    struct msghdr msg;
    struct iovec iov;
    char data[64];
    int i;

    for (i = 0; i < UCT_MC_UDP_RX_BURST; ++i) {
        memset(&msg, 0, sizeof(msg));
        iov.iov_base       = data;
        iov.iov_len        = sizeof(data);
        msg.msg_name       = &dest;
        msg.msg_namelen    = sizeof(dest);
        msg.msg_iov        = &iov;
        msg.msg_iovlen     = 1;
        msg.msg_control    = control;
        msg.msg_controllen = sizeof(control);
        ++iface->cnt.rx_syscalls;
        if (recvmsg(iface->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
            return;
        }

        for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
             cmsg = CMSG_NXTHDR(&msg, cmsg)) {
            if ((cmsg->cmsg_level != IPPROTO_IP) ||
                (cmsg->cmsg_type != IP_RECVERR)) {
                continue;
            }
            ee = (struct sock_extended_err*)CMSG_DATA(cmsg);
            /* Only "port unreachable": nobody listens at that address.
             * Other errors (no route, host unreachable) may pass. */
            if ((ee->ee_origin == SO_EE_ORIGIN_ICMP) &&
                (ee->ee_errno == ECONNREFUSED) &&
                (msg.msg_namelen >= sizeof(dest)) &&
                (dest.sin_family == AF_INET)) {
                uct_mc_udp_peer_gone(iface, &dest);
            }
        }
    }
}

static uct_mc_udp_stream_t *
uct_mc_udp_find(uct_mc_udp_iface_t *iface, uint8_t kind, uint32_t conn,
                uint32_t epoch, const struct sockaddr_in *from)
{
    uct_mc_udp_stream_t *s;

    ucs_list_for_each(s, &iface->streams, list) {
        if ((s->conn != conn) || (s->epoch != epoch)) {
            continue;
        }
        switch (kind) {
        case UCT_MC_UDP_KIND_TO_RECV:
            /* My receiving end of that root's stream */
            if ((s->ep == NULL) &&
                uct_mc_udp_sa_equal(&s->peers[0].addr, from)) {
                return s;
            }
            break;
        case UCT_MC_UDP_KIND_TO_ROOT:
            if ((s->ep != NULL) && !s->ep->is_group) {
                return s;
            }
            break;
        default:
            if ((s->ep != NULL) && s->ep->is_group) {
                return s;
            }
            break;
        }
    }
    return NULL;
}

/* A probe of a root not known yet opens the receiving end of its stream */
static uct_mc_udp_stream_t *
uct_mc_udp_rconn_open(uct_mc_udp_iface_t *iface, uint32_t conn,
                      const uct_mc_rel_hdr_t *rh,
                      const struct sockaddr_in *from)
{
    uct_mc_udp_stream_t *s;
    ucs_status_t status;

    if ((rh->type != UCT_MC_REL_PKT_PROBE) || (rh->root != 0) ||
        (rh->src != 0) || (iface->num_rconns >= iface->max_conns)) {
        return NULL;
    }

    s = ucs_calloc(1, sizeof(*s), "mc_udp rconn");
    if (s == NULL) {
        return NULL;
    }

    status = uct_mc_udp_stream_init(s, iface, NULL, UCT_MC_UDP_KIND_TO_ROOT,
                                    conn, rh->epoch, 2, 1, 0);
    if (status != UCS_OK) {
        ucs_free(s);
        return NULL;
    }

    s->peers[0].addr  = *from;
    s->peers[0].known = 1;
    ++iface->num_rconns;
    return s;
}

static void uct_mc_udp_rx_who(uct_mc_udp_iface_t *iface, uint8_t kind,
                              uint32_t conn, const void *payload,
                              size_t length, const struct sockaddr_in *from)
{
    const uct_mc_udp_who_t *who = payload;
    uct_mc_udp_stream_t *s;
    unsigned rank;

    if ((length != sizeof(*who)) || (who->reserved != 0)) {
        ++iface->cnt.rx_bad;
        return;
    }

    s = uct_mc_udp_find(iface, UCT_MC_UDP_KIND_GROUP, conn,
                        le32toh(who->epoch), from);
    if (s == NULL) {
        ++iface->cnt.rx_no_stream;
        return;
    }

    rank = le16toh(who->rank);
    if (rank >= s->num_members) {
        ++iface->cnt.rx_bad;
        return;
    }

    if (kind == UCT_MC_UDP_KIND_WHO) {
        if (rank == s->my_rank) {
            uct_mc_udp_send_hello(s, from);
        }
        return;
    }

    /* HELLO: the first address heard for a rank stays (UDP carries no
     * authentication: see docs/multicast.md) */
    if ((rank != s->my_rank) && !s->peers[rank].known) {
        s->peers[rank].addr  = *from;
        s->peers[rank].known = 1;
    }
}

/* The root of a p2p stream destroyed its endpoint: what it had not
 * delivered is discarded (UCT's destroy semantics), its end goes */
static void uct_mc_udp_rx_close(uct_mc_udp_iface_t *iface, uint32_t conn,
                                const void *payload, size_t length,
                                const struct sockaddr_in *from)
{
    const uct_mc_udp_who_t *msg = payload;
    uct_mc_udp_stream_t *s;

    if ((length != sizeof(*msg)) || (msg->reserved != 0) ||
        (msg->rank != 0)) {
        ++iface->cnt.rx_bad;
        return;
    }

    s = uct_mc_udp_find(iface, UCT_MC_UDP_KIND_TO_RECV, conn,
                        le32toh(msg->epoch), from);
    if (s == NULL) {
        ++iface->cnt.rx_no_stream;
        return;
    }

    uct_mc_udp_rconn_destroy(s);
}

static void uct_mc_udp_rx_packet(uct_mc_udp_iface_t *iface, void *buf,
                                 size_t length,
                                 const struct sockaddr_in *from,
                                 int is_mc, uint64_t now, uint64_t arrived)
{
    const uct_mc_udp_hdr_t *hdr = buf;
    uct_mc_udp_stream_t *s;
    uct_mc_rel_hdr_t rh;
    uct_mc_rel_drop_t drop;
    const void *pkt;
    size_t pkt_len;
    uint32_t conn;
    uint8_t kind;

    ++iface->cnt.rx_packets;

    /* My own multicast, looped back (IP_MULTICAST_LOOP) to a member
     * endpoint of another group on the same address; on the unicast
     * socket my own address is an endpoint to this interface itself */
    if (is_mc && uct_mc_udp_sa_equal(from, &iface->addr)) {
        ++iface->cnt.rx_own;
        return;
    }

    if ((length < sizeof(*hdr)) ||
        (le16toh(hdr->magic) != UCT_MC_UDP_MAGIC) || (hdr->reserved != 0) ||
        (hdr->kind == 0) || (hdr->kind >= UCT_MC_UDP_KIND_LAST)) {
        ++iface->cnt.rx_bad;
        return;
    }

    kind    = hdr->kind;
    conn    = le32toh(hdr->conn);
    pkt     = UCS_PTR_BYTE_OFFSET(buf, sizeof(*hdr));
    pkt_len = length - sizeof(*hdr);

    switch (kind) {
    case UCT_MC_UDP_KIND_PING:
        if (pkt_len != 0) {
            ++iface->cnt.rx_bad;
        }
        return;
    case UCT_MC_UDP_KIND_WHO:
    case UCT_MC_UDP_KIND_HELLO:
        uct_mc_udp_rx_who(iface, kind, conn, pkt, pkt_len, from);
        return;
    case UCT_MC_UDP_KIND_CLOSE:
        uct_mc_udp_rx_close(iface, conn, pkt, pkt_len, from);
        return;
    default:
        break;
    }

    /* The engine checks everything again; this parse only finds the
     * stream (its epoch) and the probe that opens a receiver */
    if (uct_mc_rel_parse(pkt, pkt_len, &rh, &drop) != UCS_OK) {
        ++iface->cnt.rx_engine_drop;
        return;
    }

    s = uct_mc_udp_find(iface, kind, conn, rh.epoch, from);
    if ((s == NULL) && (kind == UCT_MC_UDP_KIND_TO_RECV)) {
        s = uct_mc_udp_rconn_open(iface, conn, &rh, from);
    }
    if (s == NULL) {
        ++iface->cnt.rx_no_stream;
        return;
    }

    if ((kind == UCT_MC_UDP_KIND_TO_ROOT) &&
        !uct_mc_udp_sa_equal(&s->peers[1].addr, from)) {
        /* Only the receiver the endpoint was created for */
        ++iface->cnt.rx_bad;
        return;
    }

    /* A member's packets come from its unicast socket: learn its address
     * (a child's ACK tells the parent where the child is, so that the
     * liveness check can reach it); the first address heard stays */
    if ((kind == UCT_MC_UDP_KIND_GROUP) && (rh.src < s->num_members) &&
        !s->peers[rh.src].known) {
        s->peers[rh.src].addr  = *from;
        s->peers[rh.src].known = 1;
    }

    (void)uct_mc_rel_recv_at(s->rel, pkt, pkt_len, now, arrived);
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC, in ns: turns the kernel's receive
 * time stamps (SO_TIMESTAMPNS, real time) into uct_mc_rel_ep_now()'s clock */
static int64_t uct_mc_udp_realtime_offset(void)
{
    struct timespec rt, mono;

    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000ll +
           ((int64_t)rt.tv_nsec - mono.tv_nsec);
}

/* The receive time stamp of @a msg in uct_mc_rel_ep_now()'s clock, or @a now
 * when it has none */
static uint64_t uct_mc_udp_rx_stamp(struct msghdr *msg, int64_t offset,
                                    uint64_t now)
{
    struct cmsghdr *cmsg;
    struct timespec ts;
    int64_t t;

    for (cmsg = CMSG_FIRSTHDR(msg); cmsg != NULL;
         cmsg = CMSG_NXTHDR(msg, cmsg)) {
        if ((cmsg->cmsg_level == SOL_SOCKET) &&
            (cmsg->cmsg_type == SCM_TIMESTAMPNS) &&
            (cmsg->cmsg_len >= CMSG_LEN(sizeof(ts)))) {
            memcpy(&ts, CMSG_DATA(cmsg), sizeof(ts));
            t = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec - offset;
            /* the engine ignores a stamp after now or too old */
            return (t > 0) ? (uint64_t)t : now;
        }
    }
    return now;
}

/*
 * Reads what waits on socket @a fd: up to UCT_MC_UDP_RX_VLEN datagrams per
 * recvmmsg(), so that a datagram alone costs one system call (a recvmsg()
 * loop needs a second one to find the socket empty), and a burst one per
 * UCT_MC_UDP_RX_VLEN; at most UCT_MC_UDP_RX_BURST datagrams per call.
 */
static unsigned uct_mc_udp_rx_fd(uct_mc_udp_iface_t *iface, int fd,
                                 int is_mc, uint64_t now)
{
    char control[UCT_MC_UDP_RX_VLEN][CMSG_SPACE(sizeof(struct timespec))];
    struct sockaddr_in from[UCT_MC_UDP_RX_VLEN];
    struct mmsghdr msgs[UCT_MC_UDP_RX_VLEN];
    struct iovec iov[UCT_MC_UDP_RX_VLEN];
    int have_offset = 0;
    int64_t offset  = 0;
    uint64_t arrived;
    unsigned count, i;
    void *buf;
    int ret;

    count = 0;
    while (count < UCT_MC_UDP_RX_BURST) {
        for (i = 0; i < UCT_MC_UDP_RX_VLEN; ++i) {
            iov[i].iov_base = UCS_PTR_BYTE_OFFSET(iface->rx_buf,
                                                  i * iface->rx_stride);
            iov[i].iov_len  = iface->rx_len;
            memset(&msgs[i], 0, sizeof(msgs[i]));
            msgs[i].msg_hdr.msg_name       = &from[i];
            msgs[i].msg_hdr.msg_namelen    = sizeof(from[i]);
            msgs[i].msg_hdr.msg_iov        = &iov[i];
            msgs[i].msg_hdr.msg_iovlen     = 1;
            msgs[i].msg_hdr.msg_control    = is_mc ? control[i] : NULL;
            msgs[i].msg_hdr.msg_controllen = is_mc ? sizeof(control[i]) : 0;
        }

        ++iface->cnt.rx_syscalls;
        ret = recvmmsg(fd, msgs, UCT_MC_UDP_RX_VLEN,
                       MSG_DONTWAIT | MSG_TRUNC, NULL);
        if (ret <= 0) {
            if ((ret < 0) && (errno != EAGAIN) && (errno != EWOULDBLOCK) &&
                (errno != EINTR)) {
                /* A pending ICMP error (IP_RECVERR): read it */
                uct_mc_udp_read_errqueue(iface);
                ++count;  /* bounded, as a datagram */
                continue;
            }
            break;
        }

        if (is_mc && !have_offset) {
            /* once per call with packets, not per empty poll */
            offset      = uct_mc_udp_realtime_offset();
            have_offset = 1;
        }

        for (i = 0; i < (unsigned)ret; ++i) {
            buf = iov[i].iov_base;
            if ((msgs[i].msg_hdr.msg_namelen < sizeof(from[i])) ||
                (from[i].sin_family != AF_INET) ||
                (msgs[i].msg_len > iface->rx_len)) {
                ++iface->cnt.rx_packets;
                ++iface->cnt.rx_bad;  /* truncated: larger than any we send */
                continue;
            }

            /* Only the multicast socket: the root's packets there come in
             * its order, so none sent before this one is still on its
             * way.  The unicast socket mixes repairs, children's NACKs and
             * (for a stream of two) the root's packets: its gaps keep the
             * slack from the read */
            arrived = is_mc ? uct_mc_udp_rx_stamp(&msgs[i].msg_hdr, offset,
                                                  now) : now;
            uct_mc_udp_rx_packet(iface, buf, msgs[i].msg_len, &from[i],
                                 is_mc, now, arrived);
        }

        count += ret;
        if (ret < UCT_MC_UDP_RX_VLEN) {
            break;  /* the socket was empty */
        }
    }

    return count;
}


/* ------------------------------------------------------------------------ */
/* Endpoints                                                               */

static ucs_status_t uct_mc_udp_ep_alloc(uct_mc_udp_iface_t *iface,
                                        uct_mc_udp_ep_t **ep_p)
{
    uct_mc_udp_ep_t *ep = ucs_calloc(1, sizeof(*ep), "mc_udp ep");
    ucs_status_t status;

    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    /* Whether it sends: uct_mc_udp_stream_init */
    status = uct_mc_rel_ep_init(&ep->super, iface->seg_size,
                                iface->seg_frags, iface->rel.mtu, 0);
    if (status != UCS_OK) {
        ucs_free(ep);
        return status;
    }

    status = UCS_CLASS_INIT(uct_base_ep_t, &ep->super.super.base,
                            &iface->super);
    if (status != UCS_OK) {
        uct_mc_rel_ep_cleanup(&ep->super);
        ucs_free(ep);
        return status;
    }

    *ep_p = ep;
    return UCS_OK;
}

static void uct_mc_udp_ep_free(uct_mc_udp_ep_t *ep)
{
    UCS_CLASS_CLEANUP(uct_base_ep_t, &ep->super.super.base);
    uct_mc_rel_ep_cleanup(&ep->super);
    ucs_free(ep);
}

static ucs_status_t uct_mc_udp_ep_create(const uct_ep_params_t *params,
                                         uct_ep_h *ep_p)
{
    uct_mc_udp_iface_t *iface;
    const uct_mc_udp_iface_addr_t *iface_addr;
    const uct_mc_udp_dev_addr_t *dev_addr;
    uct_mc_udp_ep_t *ep;
    ucs_status_t status;

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE) ||
        !(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) ||
        !(params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR)) {
        return UCS_ERR_INVALID_PARAM;
    }

    iface      = ucs_derived_of(params->iface, uct_mc_udp_iface_t);
    iface_addr = (const void*)params->iface_addr;
    dev_addr   = (const void*)params->dev_addr;

    status = uct_mc_udp_ep_alloc(iface, &ep);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_mc_udp_stream_init(&ep->s, iface, ep,
                                    UCT_MC_UDP_KIND_TO_RECV,
                                    ++iface->next_conn, iface->nonce, 2, 0,
                                    0);
    if (status != UCS_OK) {
        uct_mc_udp_ep_free(ep);
        return status;
    }

    ep->s.peers[1].addr.sin_family = AF_INET;
    ep->s.peers[1].addr.sin_addr   = dev_addr->addr;
    ep->s.peers[1].addr.sin_port   = iface_addr->port;
    ep->s.peers[1].known           = 1;

    *ep_p = &ep->super.super.base.super;
    return UCS_OK;
}

static void uct_mc_udp_ep_destroy(uct_ep_h tl_ep)
{
    uct_mc_udp_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_udp_ep_t);
    uct_mc_udp_hdr_t hdr;
    uct_mc_udp_who_t msg;

    uct_mc_rel_ep_cancel_flushes(&ep->super);

    if (ep->s.rel == NULL) {
        /* Its interface was closed first and freed the stream */
        uct_mc_udp_ep_free(ep);
        return;
    }

    if (!ep->is_group) {
        /* Best effort: a lost CLOSE leaves the receiver's end until its
         * interface closes (at most MAX_CONNS of them) */
        uct_mc_udp_fill_hdr(&hdr, UCT_MC_UDP_KIND_CLOSE, ep->s.conn);
        msg.epoch    = htole32(ep->s.epoch);
        msg.rank     = 0;
        msg.reserved = 0;
        (void)uct_mc_udp_sendv(ep->s.iface, &ep->s.peers[1].addr, &hdr,
                               sizeof(hdr), &msg, sizeof(msg), NULL, 0);
    }

    uct_mc_udp_stream_cleanup(&ep->s);
    uct_mc_udp_ep_free(ep);
}

static ucs_status_t uct_mc_udp_ep_check(uct_ep_h tl_ep, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_mc_udp_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_udp_ep_t);
    ucs_status_t status = uct_mc_rel_status(ep->s.rel);
    uct_mc_udp_hdr_t hdr;

    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        return status;
    }

    /* An idle endpoint: a PING to the peer; when its port is closed, the
     * ICMP error fails the endpoint at a later progress (error handler) */
    if (!ep->is_group) {
        uct_mc_udp_fill_hdr(&hdr, UCT_MC_UDP_KIND_PING, ep->s.conn);
        (void)uct_mc_udp_sendv(ep->s.iface, &ep->s.peers[1].addr, &hdr,
                               sizeof(hdr), NULL, 0, NULL, 0);
    }
    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* Group endpoints (uct_o2m_ep_create on an mc_udp interface)              */

static ucs_status_t uct_mc_udp_open_mc_socket(uct_mc_udp_iface_t *iface,
                                              uct_mc_udp_stream_t *s)
{
    struct ip_mreq mreq;
    int fd, one = 1;

    fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("mc_udp: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    /* Every member on a host binds the same address and port: each
     * socket gets its copy of a multicast packet */
    if ((setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) ||
        (bind(fd, (const struct sockaddr*)&s->mc_addr,
              sizeof(s->mc_addr)) < 0)) {
        ucs_error("mc_udp: binding %s:%u failed: %m",
                  inet_ntoa(s->mc_addr.sin_addr), ntohs(s->mc_addr.sin_port));
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    /* The kernel's receive time of each packet (SO_TIMESTAMPNS): a gap
     * it reveals is NACKed the reorder slack after it arrived, not after
     * the process read it (uct_mc_rel_recv_at).  Without it the time of
     * the read is used */
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0) {
        ucs_debug("mc_udp: SO_TIMESTAMPNS failed: %m");
    }

    mreq.imr_multiaddr = s->mc_addr.sin_addr;
    mreq.imr_interface = iface->addr.sin_addr;
    if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq,
                   sizeof(mreq)) < 0) {
        ucs_error("mc_udp: joining multicast group %s failed: %m",
                  inet_ntoa(s->mc_addr.sin_addr));
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    if (epoll_ctl(iface->epfd, EPOLL_CTL_ADD, fd,
                  &(struct epoll_event){.events  = EPOLLIN,
                                        .data.fd = fd}) < 0) {
        ucs_error("mc_udp: epoll_ctl() failed: %m");
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    s->mc_fd = fd;
    return UCS_OK;
}

static void uct_mc_udp_set_rcvbuf(int fd, size_t size)
{
    int val = (int)ucs_min(size, (size_t)INT_MAX / 2);
    int got;
    socklen_t len = sizeof(got);

    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &val, sizeof(val));
    if ((getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len) == 0) &&
        (got / 2 < val)) {
        /* net.core.rmem_max is lower: a privileged process may pass it */
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &val, sizeof(val));
    }
}

ucs_status_t uct_mc_udp_group_ep_create(uct_iface_h tl_iface,
                                        const uct_o2m_group_params_t *params,
                                        uct_ep_h *ep_p)
{
    uct_mc_udp_iface_t *iface = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);
    const uct_mc_udp_iface_addr_t *root_iface;
    const uct_mc_udp_dev_addr_t *root_dev;
    uct_mc_udp_ep_t *ep;
    ucs_status_t status;
    uint64_t h;
    int is_root;

    if ((params->size < 2) || (params->size > UCT_MC_REL_MAX_MEMBERS) ||
        (params->my_index >= params->size) ||
        (params->root_index >= params->size)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if ((params->field_mask & UCT_O2M_GROUP_FIELD_MODE) &&
        (params->mode != UCT_O2M_MODE_BATCHED) &&
        (params->mode != UCT_O2M_MODE_CENTRALIZED)) {
        return UCS_ERR_UNSUPPORTED;
    }

    is_root = (params->my_index == params->root_index);
    if (!is_root && (!(params->field_mask & UCT_O2M_GROUP_FIELD_ROOT_ADDR) ||
                     (params->root_iface_addr == NULL) ||
                     (params->root_dev_addr == NULL))) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (uct_mc_udp_find(iface, UCT_MC_UDP_KIND_GROUP,
                        (uint32_t)params->group_id,
                        (uint32_t)(params->group_id >> 32), NULL) != NULL) {
        return UCS_ERR_ALREADY_EXISTS;
    }

    status = uct_mc_udp_ep_alloc(iface, &ep);
    if (status != UCS_OK) {
        return status;
    }

    ep->is_group = 1;
    /* Stream id and epoch from the 64-bit group id */
    status = uct_mc_udp_stream_init(&ep->s, iface, ep, UCT_MC_UDP_KIND_GROUP,
                                    (uint32_t)params->group_id,
                                    (uint32_t)(params->group_id >> 32),
                                    params->size, params->my_index,
                                    params->root_index);
    if (status != UCS_OK) {
        uct_mc_udp_ep_free(ep);
        return status;
    }

    /* A deterministic multicast address, inside [MCAST_BASE, +MCAST_COUNT) */
    h = uct_o2m_mix64(params->group_id);
    ep->s.mc_addr.sin_family      = AF_INET;
    ep->s.mc_addr.sin_addr.s_addr = htonl(iface->mc_base.s_addr +
                                          (uint32_t)(h % iface->mc_count));
    ep->s.mc_addr.sin_port        = htons(iface->mc_port);

    if (!is_root) {
        root_iface = (const void*)params->root_iface_addr;
        root_dev   = (const void*)params->root_dev_addr;
        ep->s.peers[params->root_index].addr.sin_family = AF_INET;
        ep->s.peers[params->root_index].addr.sin_addr   = root_dev->addr;
        ep->s.peers[params->root_index].addr.sin_port   = root_iface->port;
        ep->s.peers[params->root_index].known           = 1;
    }

    /* The root receives only control, on the unicast socket: a multicast
     * socket would wake it for a looped-back copy of each of its own
     * packets (and for the members' HELLOs, which it does not need: a
     * member's control packets tell where it is) */
    if (!is_root) {
        status = uct_mc_udp_open_mc_socket(iface, &ep->s);
        if (status != UCS_OK) {
            uct_mc_udp_stream_cleanup(&ep->s);
            uct_mc_udp_ep_free(ep);
            return status;
        }
        uct_mc_udp_set_rcvbuf(ep->s.mc_fd, iface->rcvbuf);
    }

    /* Tell the group who I am, and the root directly (it does not listen
     * to the multicast address); WHO covers a lost HELLO */
    uct_mc_udp_send_hello(&ep->s, &ep->s.mc_addr);
    if (!is_root) {
        uct_mc_udp_send_hello(&ep->s, &ep->s.peers[params->root_index].addr);
    }

    *ep_p = &ep->super.super.base.super;
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Interface                                                               */

/*
 * Reads the sockets that have datagrams: one epoll_wait() on the event fd
 * (the unicast socket, every member endpoint's multicast socket, the timer
 * fd) tells which, so that a progress that finds nothing costs one system
 * call however many sockets the interface has.  The sockets are found by
 * their fd after the wait, before any is read: a datagram's handler may
 * destroy an endpoint, and its fd number may be reused.  When the wait
 * fails, every socket is read as if ready.
 */
static unsigned uct_mc_udp_rx_ready(uct_mc_udp_iface_t *iface, uint64_t now)
{
    struct epoll_event ev[UCT_MC_UDP_RX_EVENTS];
    uct_mc_udp_stream_t *s, *tmp;
    uint64_t expirations;
    unsigned count = 0;
    int n, i, all, ucast;

    ++iface->cnt.rx_syscalls;
    n     = epoll_wait(iface->epfd, ev, UCT_MC_UDP_RX_EVENTS, 0);
    all   = (n < 0);
    ucast = all;
    ucs_list_for_each(s, &iface->streams, list) {
        s->rx_ready = all;
    }

    for (i = 0; i < n; ++i) {
        if (ev[i].data.fd == iface->fd) {
            ucast = 1;
        } else if (ev[i].data.fd == iface->timer_fd) {
            /* Expired (armed by event_arm): the fd is level-triggered;
             * the timers run below in any case */
            ++iface->cnt.rx_syscalls;
            (void)!read(iface->timer_fd, &expirations, sizeof(expirations));
        } else {
            ucs_list_for_each(s, &iface->streams, list) {
                if (s->mc_fd == ev[i].data.fd) {
                    s->rx_ready = 1;
                    break;
                }
            }
        }
    }

    if (ucast) {
        count += uct_mc_udp_rx_fd(iface, iface->fd, 0, now);
    }
    ucs_list_for_each_safe(s, tmp, &iface->streams, list) {
        if ((s->mc_fd >= 0) && s->rx_ready) {
            s->rx_ready = 0;
            count      += uct_mc_udp_rx_fd(iface, s->mc_fd, 1, now);
        }
    }
    return count;
}

static unsigned uct_mc_udp_iface_progress(uct_iface_h tl_iface)
{
    uct_mc_udp_iface_t *iface = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);
    uint64_t now              = uct_mc_rel_ep_now();
    uct_mc_udp_stream_t *s, *tmp;
    unsigned count, rx;

    rx    = uct_mc_udp_rx_ready(iface, now);
    count = rx;

    if (rx > 0) {
        /* the handlers took time: the timers below see it */
        now = uct_mc_rel_ep_now();
    }
    ucs_list_for_each_safe(s, tmp, &iface->streams, list) {
        if (uct_mc_rel_next_deadline(s->rel) <= now) {
            (void)uct_mc_rel_progress(s->rel, now);
        }

        if ((s->ep != NULL) && !s->ep->is_group && s->peers[1].gone &&
            (s->status == UCS_OK)) {
            /* The peer's port is closed (ep_check, or a packet to it): the
             * endpoint fails also when it waits for nothing */
            uct_mc_rel_fail(s->rel, UCS_ERR_CONNECTION_RESET, now);
            s->status = uct_mc_rel_status(s->rel);
        }

        if (s->ep != NULL) {
            count += uct_mc_rel_ep_progress(&s->ep->super);
            if ((s->status != UCS_OK) && !s->ep->is_group &&
                !s->err_reported) {
                /* A p2p endpoint whose peer is gone: UCP's error path */
                s->err_reported = 1;
                (void)uct_iface_handle_ep_err(&iface->super.super,
                                              &s->ep->super.super.base.super,
                                              s->status);
            }
        } else if ((s->status != UCS_OK) &&
                   (uct_mc_rel_next_deadline(s->rel) ==
                    UCT_MC_REL_TIME_INF)) {
            /* A receiving end whose root failed or left: nothing more
             * can come on it */
            uct_mc_udp_rconn_destroy(s);
        }
    }

    return count;
}

static ucs_status_t uct_mc_udp_iface_flush(uct_iface_h tl_iface,
                                           unsigned flags,
                                           uct_completion_t *comp)
{
    uct_mc_udp_iface_t *iface = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);
    uct_mc_udp_stream_t *s;
    ucs_status_t status;

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_list_for_each(s, &iface->streams, list) {
        if ((s->ep == NULL) || (s->my_rank != s->root)) {
            continue;
        }
        if (!ucs_queue_is_empty(&s->ep->super.pending)) {
            return UCS_INPROGRESS;
        }
        status = uct_mc_rel_flush(s->rel);
        if (status == UCS_INPROGRESS) {
            return status;
        }
    }
    return UCS_OK;
}

static ucs_status_t uct_mc_udp_iface_event_fd_get(uct_iface_h tl_iface,
                                                  int *fd_p)
{
    *fd_p = ucs_derived_of(tl_iface, uct_mc_udp_iface_t)->epfd;
    return UCS_OK;
}

/*
 * Arm: BUSY while a socket has a datagram, a stream's timer is due or a
 * pending request can go; else the timer fd is set to the earliest
 * deadline of the streams (their NACK, SYNC and liveness timers must run
 * while the caller sleeps), and the event fd fires on a datagram or then.
 */
static ucs_status_t uct_mc_udp_iface_event_arm(uct_iface_h tl_iface,
                                               unsigned events)
{
    uct_mc_udp_iface_t *iface = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);
    uint64_t deadline         = UCT_MC_REL_TIME_INF;
    struct itimerspec its     = {};
    struct epoll_event ev;
    uct_mc_udp_stream_t *s;
    uint64_t expirations, now;

    /* Clear an expired timer: the fd is level-triggered */
    (void)!read(iface->timer_fd, &expirations, sizeof(expirations));

    ucs_list_for_each(s, &iface->streams, list) {
        deadline = ucs_min(deadline, uct_mc_rel_next_deadline(s->rel));
        if ((s->ep != NULL) && !ucs_queue_is_empty(&s->ep->super.pending) &&
            uct_mc_rel_ep_has_room(&s->ep->super)) {
            return UCS_ERR_BUSY;
        }
    }

    now = uct_mc_rel_ep_now();
    if (deadline <= now) {
        return UCS_ERR_BUSY;
    }

    if (deadline != UCT_MC_REL_TIME_INF) {
        its.it_value.tv_sec  = deadline / 1000000000ull;
        its.it_value.tv_nsec = deadline % 1000000000ull;
    }
    if (timerfd_settime(iface->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        return UCS_ERR_IO_ERROR;
    }

    /* A datagram that came before the arm */
    if (epoll_wait(iface->epfd, &ev, 1, 0) > 0) {
        return UCS_ERR_BUSY;
    }
    return UCS_OK;
}

static ucs_status_t uct_mc_udp_iface_query(uct_iface_h tl_iface,
                                           uct_iface_attr_t *attr)
{
    uct_mc_udp_iface_t *iface = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);

    uct_base_iface_query(&iface->super, attr);

    attr->iface_addr_len  = sizeof(uct_mc_udp_iface_addr_t);
    attr->device_addr_len = sizeof(uct_mc_udp_dev_addr_t);
    attr->ep_addr_len     = 0;
    attr->max_conn_priv   = 0;
    attr->cap.flags       = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                            UCT_IFACE_FLAG_AM_SHORT |
                            UCT_IFACE_FLAG_AM_BCOPY |
                            UCT_IFACE_FLAG_PENDING |
                            UCT_IFACE_FLAG_CB_SYNC |
                            UCT_IFACE_FLAG_EP_CHECK |
                            UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                            UCT_IFACE_FLAG_EVENT_RECV |
                            UCT_IFACE_FLAG_EVENT_FD;

    /* A short message is one packet: AM header + 8-byte header + data */
    attr->cap.am.max_short       = iface->rel.mtu - UCT_MC_REL_EP_AM_HDR_LEN;
    attr->cap.am.max_bcopy       = iface->seg_size;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = 0;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = 1;
    attr->cap.am.max_hdr         = 0;
    attr->cap.am.max_iov         = 1;

    /* Advertised slower than UCX's tcp (11 us + 50 us overhead, about
     * 11 MB/s), so that UCP keeps tcp for point-to-point traffic unless
     * UCX_TLS names mc_udp and not tcp: the multicast groups are what this
     * transport is for, and loading the plugin must not move a job's
     * traffic between hosts onto it */
    attr->latency             = ucs_linear_func_make(100e-6, 0);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = 10e6;
    attr->overhead            = 60e-6;
    attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t uct_mc_udp_iface_get_address(uct_iface_h tl_iface,
                                                 uct_iface_addr_t *addr)
{
    uct_mc_udp_iface_t *iface = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);

    ((uct_mc_udp_iface_addr_t*)addr)->port = iface->addr.sin_port;
    return UCS_OK;
}

static ucs_status_t uct_mc_udp_iface_get_device_address(uct_iface_h tl_iface,
                                                        uct_device_addr_t *addr)
{
    uct_mc_udp_iface_t *iface = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);

    ((uct_mc_udp_dev_addr_t*)addr)->addr = iface->addr.sin_addr;
    return UCS_OK;
}

static int uct_mc_udp_iface_is_reachable(const uct_iface_h tl_iface,
                                         const uct_device_addr_t *dev_addr,
                                         const uct_iface_addr_t *iface_addr)
{
    uct_mc_udp_iface_t *iface = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);
    const uct_mc_udp_dev_addr_t *dev = (const void*)dev_addr;
    int peer_loopback;

    if (dev == NULL) {
        return 0;
    }

    /* A loopback address reaches this host only, and this host's loopback
     * interface is what reaches it */
    peer_loopback = (ntohl(dev->addr.s_addr) >> 24) == 127;
    return peer_loopback == iface->is_loopback;
}

/* The IPv4 address, flags and MTU of a device */
static ucs_status_t uct_mc_udp_dev_info(const char *name,
                                        struct in_addr *addr,
                                        unsigned *flags, int *mtu)
{
    struct ifaddrs *ifa_list, *ifa;
    ucs_status_t status = UCS_ERR_NO_DEVICE;
    struct ifreq ifr;
    int fd;

    if (getifaddrs(&ifa_list) < 0) {
        return UCS_ERR_IO_ERROR;
    }

    for (ifa = ifa_list; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) || (ifa->ifa_addr->sa_family != AF_INET) ||
            strcmp(ifa->ifa_name, name)) {
            continue;
        }
        *addr  = ((struct sockaddr_in*)ifa->ifa_addr)->sin_addr;
        *flags = ifa->ifa_flags;
        status = UCS_OK;
        break;
    }
    freeifaddrs(ifa_list);

    if ((status != UCS_OK) || (mtu == NULL)) {
        return status;
    }

    *mtu = 1500;
    fd   = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        memset(&ifr, 0, sizeof(ifr));
        ucs_strncpy_zero(ifr.ifr_name, name, sizeof(ifr.ifr_name));
        if (ioctl(fd, SIOCGIFMTU, &ifr) == 0) {
            *mtu = ifr.ifr_mtu;
        }
        close(fd);
    }
    return UCS_OK;
}

/* Devices: up, with an IPv4 address, and multicast capable (or the
 * loopback device, which carries multicast between the processes of a
 * host when it is chosen as IP_MULTICAST_IF) */
static int uct_mc_udp_dev_qualifies(unsigned flags)
{
    return (flags & IFF_UP) && (flags & IFF_RUNNING) &&
           (flags & (IFF_MULTICAST | IFF_LOOPBACK));
}

static ucs_status_t uct_mc_udp_query_devices(uct_md_h md,
                                             uct_tl_device_resource_t **devs_p,
                                             unsigned *num_p)
{
    struct ifaddrs *ifa_list, *ifa;
    uct_tl_device_resource_t *devs = NULL, *tmp;
    unsigned num = 0, i;

    if (getifaddrs(&ifa_list) < 0) {
        ucs_error("mc_udp: getifaddrs() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    for (ifa = ifa_list; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) ||
            (ifa->ifa_addr->sa_family != AF_INET) ||
            !uct_mc_udp_dev_qualifies(ifa->ifa_flags)) {
            continue;
        }

        /* One resource per device, also with several addresses */
        for (i = 0; i < num; ++i) {
            if (!strcmp(devs[i].name, ifa->ifa_name)) {
                break;
            }
        }
        if (i < num) {
            continue;
        }

        tmp = ucs_realloc(devs, sizeof(*devs) * (num + 1), "mc_udp devs");
        if (tmp == NULL) {
            ucs_free(devs);
            freeifaddrs(ifa_list);
            return UCS_ERR_NO_MEMORY;
        }
        devs = tmp;
        ucs_strncpy_zero(devs[num].name, ifa->ifa_name,
                         sizeof(devs[num].name));
        devs[num].type       = UCT_DEVICE_TYPE_NET;
        devs[num].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        ++num;
    }

    freeifaddrs(ifa_list);
    *devs_p = devs;
    *num_p  = num;
    return UCS_OK;
}

static ucs_status_t
uct_mc_udp_iface_config_rel(uct_mc_udp_iface_t *iface,
                            const uct_mc_udp_iface_config_t *config,
                            int dev_mtu)
{
    uct_mc_rel_config_t *rel = &iface->rel;
    size_t overhead          = UCT_MC_UDP_IP_HDRS + UCT_MC_UDP_HDR_LEN +
                               UCT_MC_REL_HDR_LEN;
    size_t mtu;

    mtu = (config->mc.mtu == 0) ? ucs_min(dev_mtu, 1500) : config->mc.mtu;
    if ((mtu > (size_t)dev_mtu) || (mtu < overhead + 64) || (mtu > 65535)) {
        ucs_error("mc_udp: MTU %zu must be in %zu..%d (the device's MTU)",
                  mtu, overhead + 64, ucs_min(dev_mtu, 65535));
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->mc.seg_size < 1) || (config->mc.seg_size > UCS_MBYTE)) {
        ucs_error("mc_udp: SEG_SIZE %zu must be in 1..1m", config->mc.seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->mc.mcast_count < 1) || (config->mc.mcast_count > 65536) ||
        (config->mcast_port < 1) || (config->mcast_port > 65535)) {
        ucs_error("mc_udp: MCAST_COUNT %u must be in 1..65536, MCAST_PORT "
                  "%u in 1..65535", config->mc.mcast_count, config->mcast_port);
        return UCS_ERR_INVALID_PARAM;
    }

    return uct_mc_rel_ep_config_rel(&config->mc, "mc_udp", "", mtu, overhead,
                                    rel);
}

static ucs_status_t uct_mc_udp_iface_socket(uct_mc_udp_iface_t *iface,
                                            size_t rcvbuf)
{
    struct sockaddr_in addr = iface->addr;
    socklen_t len           = sizeof(addr);
    unsigned char ttl       = 1;
    unsigned char loop      = 1;
    int one                 = 1;

    iface->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (iface->fd < 0) {
        ucs_error("mc_udp: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    addr.sin_port = 0;
    if (bind(iface->fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
        ucs_error("mc_udp: bind(%s) failed: %m", inet_ntoa(addr.sin_addr));
        goto err_close;
    }
    if (getsockname(iface->fd, (struct sockaddr*)&iface->addr, &len) < 0) {
        ucs_error("mc_udp: getsockname() failed: %m");
        goto err_close;
    }

    /* Multicast leaves by the chosen device only, stays on its link
     * (TTL 1), and reaches the other members of this host (LOOP; a
     * member's own copy is dropped by the source address).  IP_RECVERR:
     * ICMP port unreachable tells that a peer's socket is closed. */
    if ((setsockopt(iface->fd, IPPROTO_IP, IP_MULTICAST_IF,
                    &iface->addr.sin_addr, sizeof(struct in_addr)) < 0) ||
        (setsockopt(iface->fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl,
                    sizeof(ttl)) < 0) ||
        (setsockopt(iface->fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop,
                    sizeof(loop)) < 0) ||
        (setsockopt(iface->fd, IPPROTO_IP, IP_RECVERR, &one,
                    sizeof(one)) < 0)) {
        ucs_error("mc_udp: multicast socket options failed: %m");
        goto err_close;
    }

    uct_mc_udp_set_rcvbuf(iface->fd, rcvbuf);

    iface->timer_fd = timerfd_create(CLOCK_MONOTONIC,
                                     TFD_NONBLOCK | TFD_CLOEXEC);
    if (iface->timer_fd < 0) {
        ucs_error("mc_udp: timerfd_create() failed: %m");
        goto err_close;
    }
    iface->epfd = epoll_create1(EPOLL_CLOEXEC);
    if ((iface->epfd < 0) ||
        (epoll_ctl(iface->epfd, EPOLL_CTL_ADD, iface->fd,
                   &(struct epoll_event){.events  = EPOLLIN,
                                         .data.fd = iface->fd}) < 0) ||
        (epoll_ctl(iface->epfd, EPOLL_CTL_ADD, iface->timer_fd,
                   &(struct epoll_event){.events  = EPOLLIN,
                                         .data.fd = iface->timer_fd}) < 0)) {
        ucs_error("mc_udp: epoll failed: %m");
        if (iface->epfd >= 0) {
            close(iface->epfd);
        }
        close(iface->timer_fd);
        goto err_close;
    }
    return UCS_OK;

err_close:
    close(iface->fd);
    return UCS_ERR_IO_ERROR;
}

static UCS_CLASS_INIT_FUNC(uct_mc_udp_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_mc_udp_iface_config_t *config =
            ucs_derived_of(tl_config, uct_mc_udp_iface_config_t);
    uct_mc_udp_iface_t *iface = self;
    const char *dev_name;
    struct in_addr base;
    ucs_status_t status;
    unsigned flags;
    int dev_mtu;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_mc_udp_iface_ops,
                              &uct_base_iface_internal_ops, md, worker,
                              params, tl_config UCS_STATS_ARG(NULL)
                              UCS_STATS_ARG(UCT_MC_UDP_TL_NAME));

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("mc_udp: only the device open mode is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    dev_name = params->mode.device.dev_name;
    memset(&iface->addr, 0, sizeof(iface->addr));
    iface->addr.sin_family = AF_INET;
    status = uct_mc_udp_dev_info(dev_name, &iface->addr.sin_addr, &flags,
                                 &dev_mtu);
    if (status != UCS_OK) {
        ucs_error("mc_udp: device %s has no IPv4 address", dev_name);
        return status;
    }
    iface->is_loopback = !!(flags & IFF_LOOPBACK);

    status = uct_mc_udp_iface_config_rel(iface, config, dev_mtu);
    if (status != UCS_OK) {
        return status;
    }

    if (inet_pton(AF_INET, config->mc.mcast_base, &base) != 1) {
        ucs_error("mc_udp: MCAST_BASE '%s' is not an IPv4 address",
                  config->mc.mcast_base);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!IN_MULTICAST(ntohl(base.s_addr)) ||
        !IN_MULTICAST(ntohl(base.s_addr) + config->mc.mcast_count - 1)) {
        ucs_error("mc_udp: MCAST_BASE %s + MCAST_COUNT %u leaves the "
                  "multicast range", config->mc.mcast_base,
                  config->mc.mcast_count);
        return UCS_ERR_INVALID_PARAM;
    }

    iface->mc_base.s_addr = ntohl(base.s_addr);
    iface->mc_count       = config->mc.mcast_count;
    iface->mc_port        = config->mcast_port;
    iface->seg_size       = config->mc.seg_size;
    iface->max_conns      = config->max_conns;
    iface->rcvbuf         = config->rcvbuf;
    iface->seg_frags      = uct_mc_rel_ep_frags(iface->seg_size,
                                                iface->rel.mtu);
    iface->num_rconns     = 0;
    iface->nonce          = (uint32_t)ucs_generate_uuid((uintptr_t)iface);
    iface->next_conn      = 0;
    iface->pace_rate      = (config->pace_rate == UCS_CONFIG_BW_AUTO) ||
                            !(config->pace_rate < 1e30) ? 0 :
                            config->pace_rate / 1e9;
    iface->tokens         = 0;
    iface->pace_last      = uct_mc_rel_ep_now();
    iface->rx_len         = iface->rel.mtu + UCT_MC_UDP_HDR_LEN +
                            UCT_MC_REL_HDR_LEN;
    memset(&iface->cnt, 0, sizeof(iface->cnt));
    memset(&iface->repair, 0, sizeof(iface->repair));
    ucs_list_head_init(&iface->streams);

    iface->rx_stride      = ucs_align_up(iface->rx_len, 8);
    iface->rx_buf = ucs_malloc(iface->rx_stride * UCT_MC_UDP_RX_VLEN,
                               "mc_udp rx");
    if (iface->rx_buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_mc_udp_iface_socket(iface, config->rcvbuf);
    if (status != UCS_OK) {
        ucs_free(iface->rx_buf);
        return status;
    }

    ucs_debug("mc_udp: interface %s:%u on %s", inet_ntoa(iface->addr.sin_addr),
              ntohs(iface->addr.sin_port), dev_name);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_mc_udp_iface_t)
{
    uct_mc_udp_stream_t *s, *tmp;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    ucs_list_for_each_safe(s, tmp, &self->streams, list) {
        if (s->ep == NULL) {
            uct_mc_udp_rconn_destroy(s);
        } else {
            ucs_warn("mc_udp: interface closed with an endpoint");
            uct_mc_udp_stream_cleanup(s);
            /* its uct_ep_destroy only frees it */
            s->rel           = NULL;
            s->ep->super.rel = NULL;
        }
    }

    close(self->epfd);
    close(self->timer_fd);
    close(self->fd);
    ucs_free(self->rx_buf);
}

UCS_CLASS_DEFINE(uct_mc_udp_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_mc_udp_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_mc_udp_iface_t, uct_iface_t);

static uct_iface_ops_t uct_mc_udp_iface_ops = {
    .ep_am_short              = uct_mc_rel_ep_am_short,
    .ep_am_short_iov          = uct_base_ep_am_short_iov,
    .ep_am_bcopy              = uct_mc_rel_ep_am_bcopy,
    .ep_pending_add           = uct_mc_rel_ep_pending_add,
    .ep_pending_purge         = uct_mc_rel_ep_pending_purge,
    .ep_flush                 = uct_mc_rel_ep_flush,
    .ep_fence                 = uct_base_ep_fence,
    .ep_check                 = uct_mc_udp_ep_check,
    .ep_create                = uct_mc_udp_ep_create,
    .ep_destroy               = uct_mc_udp_ep_destroy,
    .iface_flush              = uct_mc_udp_iface_flush,
    .iface_fence              = uct_base_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_mc_udp_iface_progress,
    .iface_event_fd_get       = uct_mc_udp_iface_event_fd_get,
    .iface_event_arm          = uct_mc_udp_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_mc_udp_iface_t),
    .iface_query              = uct_mc_udp_iface_query,
    .iface_get_device_address = uct_mc_udp_iface_get_device_address,
    .iface_get_address        = uct_mc_udp_iface_get_address,
    .iface_is_reachable       = uct_mc_udp_iface_is_reachable
};

int uct_mc_udp_is_iface(uct_iface_h iface)
{
    return (iface != NULL) &&
           (iface->ops.iface_get_address == uct_mc_udp_iface_get_address);
}

int uct_mc_udp_is_ep(uct_ep_h ep)
{
    return (ep != NULL) && uct_mc_udp_is_iface(ep->iface);
}

ucs_status_t uct_mc_udp_iface_counters(uct_iface_h tl_iface,
                                       uct_mc_udp_counters_t *counters)
{
    uct_mc_udp_iface_t *iface;
    uct_mc_rel_stats_t stats;
    uct_mc_udp_stream_t *s;

    if (!uct_mc_udp_is_iface(tl_iface) || (counters == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    iface     = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);
    *counters          = iface->cnt;
    counters->rx_conns = iface->num_rconns;
    ucs_list_for_each(s, &iface->streams, list) {
        uct_mc_rel_stats(s->rel, &stats);
        uct_mc_udp_add_stats(counters, &stats);
    }
    return UCS_OK;
}


ucs_status_t uct_mc_udp_iface_repair_stats(uct_iface_h tl_iface,
                                           uct_mc_udp_repair_stats_t *stats)
{
    uct_mc_udp_iface_t *iface;
    uct_mc_rel_stats_t rel;
    uct_mc_udp_stream_t *s;

    if (!uct_mc_udp_is_iface(tl_iface) || (stats == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    iface  = ucs_derived_of(tl_iface, uct_mc_udp_iface_t);
    *stats = iface->repair;
    ucs_list_for_each(s, &iface->streams, list) {
        uct_mc_rel_stats(s->rel, &rel);
        uct_mc_udp_add_repair_stats(stats, &rel);
    }
    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* Component                                                               */

typedef struct uct_mc_udp_md_config {
    uct_md_config_t super;
} uct_mc_udp_md_config_t;

static ucs_config_field_t uct_mc_udp_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_mc_udp_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {NULL}
};

static ucs_status_t uct_mc_udp_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    /* No memory registration: data is copied into packets */
    memset(attr, 0, sizeof(*attr));
    attr->cap.reg_mem_types    = 0;
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->reg_cost             = ucs_linear_func_make(0, 0);
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static void uct_mc_udp_md_close(uct_md_h md)
{
    ucs_free(md);
}

static uct_md_ops_t uct_mc_udp_md_ops = {
    .close              = uct_mc_udp_md_close,
    .query              = uct_mc_udp_md_query,
    .mkey_pack          = (uct_md_mkey_pack_func_t)
            ucs_empty_function_return_unsupported,
    .mem_reg            = (uct_md_mem_reg_func_t)
            ucs_empty_function_return_unsupported,
    .mem_dereg          = (uct_md_mem_dereg_func_t)
            ucs_empty_function_return_unsupported,
    .detect_memory_type = (uct_md_detect_memory_type_func_t)
            ucs_empty_function_return_unsupported
};

static ucs_status_t uct_mc_udp_md_open(uct_component_t *component,
                                       const char *md_name,
                                       const uct_md_config_t *config,
                                       uct_md_h *md_p)
{
    uct_md_t *md = ucs_calloc(1, sizeof(*md), "mc_udp md");

    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->ops       = &uct_mc_udp_md_ops;
    md->component = &uct_mc_udp_component;
    *md_p         = md;
    return UCS_OK;
}

static ucs_status_t uct_mc_udp_rkey_unpack(uct_component_t *component,
                                           const void *rkey_buffer,
                                           uct_rkey_t *rkey_p,
                                           void **handle_p)
{
    return UCS_ERR_UNSUPPORTED;
}

static uct_component_t uct_mc_udp_component = {
    .query_md_resources = uct_md_query_single_md_resource,
    .md_open            = uct_mc_udp_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
            ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_mc_udp_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
            ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)
            ucs_empty_function_return_success,
    .name               = UCT_MC_UDP_TL_NAME,
    .md_config          = {
        .name           = "UDP multicast memory domain",
        .prefix         = "MC_UDP_MD_",
        .table          = uct_mc_udp_md_config_table,
        .size           = sizeof(uct_mc_udp_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_mc_udp_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
            ucs_empty_function
};

UCT_TL_DEFINE_ENTRY(&uct_mc_udp_component, mc_udp, uct_mc_udp_query_devices,
                    uct_mc_udp_iface_t, "MC_UDP_",
                    uct_mc_udp_iface_config_table, uct_mc_udp_iface_config_t);

void uct_mc_udp_register(void)
{
    uct_component_register(&uct_mc_udp_component);
    uct_tl_register(&uct_mc_udp_component, &UCT_TL_NAME(mc_udp));
}
