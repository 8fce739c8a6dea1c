/**
 * ucx-o2m: mc_verbs group endpoints - UD multicast made reliable by the
 * engine of mc/rel/ (docs/multicast.md, "The mc_verbs transport").
 *
 * A group endpoint (uct_o2m_ep_create on an mc_verbs interface) has a UD
 * QP and a CQ of its own, on the interface's protection domain and port:
 * UD's point-to-point QP and its completion accounting stay untouched, and
 * UD's Ethernet DGID check (which drops packets sent to a multicast GID)
 * never sees a group packet.  Every datagram is an 8-byte header
 * (mc_verbs_wire.h) and an engine packet, or a WHO/HELLO.
 *
 * Join, without sleeping: the group parameters give the group's IPv4
 * multicast address (MCAST_BASE + hash(group id)), every member joins it
 * through librdmacm - the root's join creates the group, the others' make
 * the fabric (IB: the SA's multicast tree) or the kernel (RoCE: the IP
 * group) deliver to them - and attaches its QP to the MGID/MLID the join
 * reports.  The engine's join probe, repeated on its timer, confirms that
 * every member receives before the first data packet.  Destroy detaches
 * and leaves; a process exit does both in the kernel.
 *
 * Data to the group: the multicast address handle (the join's MGID/MLID,
 * QPN 0xFFFFFF, the group's Q_Key).  ACK, NACK and repairs: UD datagrams
 * to the member's QP; members learn each other's QPN and GID from a HELLO
 * each multicasts once joined, from the source of any packet, and from a
 * WHO's answer.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_verbs_int.h"

#include <uct/ib/base/ib_md.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>
#include <time.h>


#define UCT_MC_VERBS_TX_SLOTS  64      /* sends in flight per group */
#define UCT_MC_VERBS_RX_SLOTS  256     /* receives posted per group */
#define UCT_MC_VERBS_POLL      16      /* completions per poll */
#define UCT_MC_VERBS_WHO_GAP   100000  /* ns between WHOs for one member */


typedef struct uct_mc_verbs_peer {
    struct ibv_ah *ah;        /* NULL: not known yet */
    uint32_t      qpn;
    uint64_t      last_who;   /* ns */
} uct_mc_verbs_peer_t;

typedef struct uct_mc_verbs_ep {
    uct_mc_rel_ep_t           super;   /* super.super.ep.iface:
                                          &iface->group_iface */
    ucs_list_link_t           list;    /* iface->groups.list */
    uct_mc_verbs_iface_t      *iface;  /* NULL: the interface was closed,
                                          super.rel too */
    uint32_t                  conn;
    uint32_t                  epoch;
    unsigned                  num_members;
    unsigned                  my_rank;
    unsigned                  root;
    uct_mc_verbs_peer_t       *peers;
    ucs_status_t              status;
    /* Join */
    struct rdma_event_channel *cm_channel;
    struct rdma_cm_id         *cm_id;
    struct sockaddr_in        mc_addr;
    int                       cm_joined;  /* rdma_join_multicast() done */
    int                       attached;   /* QP attached to the group */
    union ibv_gid             mgid;
    uint16_t                  mlid;
    uint32_t                  qkey;
    struct ibv_ah             *mc_ah;     /* NULL until joined */
    /* Datagrams */
    struct ibv_cq             *cq;
    struct ibv_qp             *qp;
    struct ibv_mr             *mr;
    void                      *buf;       /* tx slots, then rx slots */
    size_t                    slot_len;
    unsigned                  tx_free[UCT_MC_VERBS_TX_SLOTS];
    unsigned                  tx_nfree;
    uct_mc_verbs_ep_counters_t cnt;       /* the transport's share */
} uct_mc_verbs_ep_t;


static void uct_mc_verbs_ep_destroy(uct_ep_h tl_ep);



static uct_ib_iface_t *uct_mc_verbs_ib_iface(uct_mc_verbs_iface_t *iface)
{
    return &iface->super.super.super;
}

static void *uct_mc_verbs_slot(uct_mc_verbs_ep_t *ep, unsigned index)
{
    return UCS_PTR_BYTE_OFFSET(ep->buf, (size_t)index * ep->slot_len);
}


/* ------------------------------------------------------------------------ */
/* Datagrams                                                               */

static ucs_status_t uct_mc_verbs_ep_post(uct_mc_verbs_ep_t *ep,
                                         struct ibv_ah *ah, uint32_t qpn,
                                         uint8_t kind, const void *b1,
                                         size_t l1, const void *b2,
                                         size_t l2)
{
    struct ibv_send_wr wr = {}, *bad_wr;
    struct ibv_sge sge;
    unsigned slot;
    void *buf;
    int ret;

    if (UCT_MC_VERBS_HDR_LEN + l1 + l2 > ep->iface->groups.dgram_len) {
        return UCS_ERR_INVALID_PARAM; /* never by our own engine */
    }
    if (ep->tx_nfree == 0) {
        return UCS_ERR_NO_RESOURCE;
    }

    slot = ep->tx_free[--ep->tx_nfree];
    buf  = uct_mc_verbs_slot(ep, slot);
    uct_mc_verbs_hdr_pack(buf, kind, ep->conn);
    memcpy(UCS_PTR_BYTE_OFFSET(buf, UCT_MC_VERBS_HDR_LEN), b1, l1);
    if (l2 > 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(buf, UCT_MC_VERBS_HDR_LEN + l1), b2, l2);
    }

    sge.addr              = (uintptr_t)buf;
    sge.length            = UCT_MC_VERBS_HDR_LEN + l1 + l2;
    sge.lkey              = ep->mr->lkey;
    wr.wr_id              = slot;
    wr.sg_list            = &sge;
    wr.num_sge            = 1;
    wr.opcode             = IBV_WR_SEND;
    wr.send_flags         = IBV_SEND_SIGNALED;
    wr.wr.ud.ah           = ah;
    wr.wr.ud.remote_qpn   = qpn;
    wr.wr.ud.remote_qkey  = ep->qkey;

    ret = ibv_post_send(ep->qp, &wr, &bad_wr);
    if (ret != 0) {
        ep->tx_free[ep->tx_nfree++] = slot;
        ucs_diag("mc_verbs: ibv_post_send() failed: %s", strerror(ret));
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

static ucs_status_t uct_mc_verbs_ep_post_rx(uct_mc_verbs_ep_t *ep,
                                            unsigned slot)
{
    struct ibv_recv_wr wr = {}, *bad_wr;
    struct ibv_sge sge;
    int ret;

    sge.addr   = (uintptr_t)uct_mc_verbs_slot(ep, slot);
    sge.length = ep->slot_len;
    sge.lkey   = ep->mr->lkey;
    wr.wr_id   = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;

    ret = ibv_post_recv(ep->qp, &wr, &bad_wr);
    if (ret != 0) {
        ucs_error("mc_verbs: ibv_post_recv() failed: %s", strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static void uct_mc_verbs_send_who_hello(uct_mc_verbs_ep_t *ep, uint8_t kind,
                                        unsigned rank)
{
    uct_mc_verbs_who_t who;

    if (ep->mc_ah == NULL) {
        return;
    }

    who.epoch    = htole32(ep->epoch);
    who.rank     = htole16(rank);
    who.reserved = 0;
    (void)uct_mc_verbs_ep_post(ep, ep->mc_ah, UCT_MC_VERBS_MCAST_QPN, kind,
                               &who, sizeof(who), NULL, 0);
}

/* WHO: ask the group for the address of @a rank (answered by a HELLO) */
static void uct_mc_verbs_send_who(uct_mc_verbs_ep_t *ep, unsigned rank)
{
    uct_mc_verbs_peer_t *peer = &ep->peers[rank];
    uint64_t now              = uct_mc_rel_ep_now();

    if ((peer->last_who != 0) &&
        (now - peer->last_who < UCT_MC_VERBS_WHO_GAP)) {
        return;
    }
    peer->last_who = now;
    uct_mc_verbs_send_who_hello(ep, UCT_MC_VERBS_KIND_WHO, rank);
}

/* Engine callback: one packet to a member or to the group */
static ucs_status_t uct_mc_verbs_rel_send(void *arg, int dest,
                                          const void *hdr,
                                          const void *payload, size_t length)
{
    uct_mc_verbs_ep_t *ep = arg;
    uct_mc_verbs_peer_t *peer;

    if (ep->mc_ah == NULL) {
        return UCS_OK; /* not joined yet: lost, the engine's timers repeat */
    }

    if (dest == UCT_MC_REL_DEST_MCAST) {
        return uct_mc_verbs_ep_post(ep, ep->mc_ah, UCT_MC_VERBS_MCAST_QPN,
                                    UCT_MC_VERBS_KIND_GROUP, hdr,
                                    UCT_MC_REL_HDR_LEN, payload, length);
    }

    if ((dest < 0) || ((unsigned)dest >= ep->num_members)) {
        return UCS_OK;
    }

    peer = &ep->peers[dest];
    if (peer->ah == NULL) {
        uct_mc_verbs_send_who(ep, dest);
        return UCS_OK; /* lost: the engine's timers send it again */
    }

    return uct_mc_verbs_ep_post(ep, peer->ah, peer->qpn,
                                UCT_MC_VERBS_KIND_GROUP, hdr,
                                UCT_MC_REL_HDR_LEN, payload, length);
}

/* Engine callback: a whole message, AM id first */
static void uct_mc_verbs_rel_deliver(void *arg, const void *data,
                                     size_t length)
{
    uct_mc_verbs_ep_t *ep = arg;

    /* A message that is not valid: only a broken or forged root sends it */
    (void)uct_mc_rel_ep_deliver(&ep->iface->super.super.super.super, data,
                                length);
}

static void uct_mc_verbs_rel_failed(void *arg, ucs_status_t status)
{
    uct_mc_verbs_ep_t *ep = arg;

    ep->status = status;
}

static const uct_mc_rel_ops_t uct_mc_verbs_rel_ops = {
    .send     = uct_mc_verbs_rel_send,
    .deliver  = uct_mc_verbs_rel_deliver,
    .is_alive = NULL, /* no liveness on UD: PEER_TIMEOUT bounds the waits */
    .failed   = uct_mc_verbs_rel_failed
};


/* ------------------------------------------------------------------------ */
/* Receiving                                                               */

/* Learn the address of member @a rank from a packet it sent */
static void uct_mc_verbs_learn(uct_mc_verbs_ep_t *ep, unsigned rank,
                               const struct ibv_wc *wc, const void *grh)
{
    uct_ib_iface_t *ib_iface = uct_mc_verbs_ib_iface(ep->iface);
    uct_mc_verbs_peer_t *peer;
    struct ibv_ah_attr ah_attr;
    union ibv_gid sgid;

    if ((rank >= ep->num_members) || (rank == ep->my_rank)) {
        return;
    }

    /* The first address heard for a rank stays */
    peer = &ep->peers[rank];
    if (peer->ah != NULL) {
        return;
    }

    if (uct_mc_verbs_grh_sgid(grh, wc->wc_flags & IBV_WC_GRH,
                              ep->iface->groups.is_roce,
                              &ib_iface->gid_info.gid, &sgid) != UCS_OK) {
        return;
    }

    uct_ib_iface_fill_ah_attr_from_gid_lid(ib_iface, wc->slid, &sgid,
                                           ib_iface->gid_info.gid_index, 0,
                                           &ah_attr);
    /* Cached by the device, released with it */
    if (uct_ib_iface_create_ah(ib_iface, &ah_attr, "mc_verbs member",
                               &peer->ah) != UCS_OK) {
        peer->ah = NULL;
        return;
    }
    peer->qpn = wc->src_qp;
}

static void uct_mc_verbs_ep_rx(uct_mc_verbs_ep_t *ep, const struct ibv_wc *wc,
                               const void *grh, uint64_t now)
{
    const uct_mc_verbs_who_t *who;
    const void *payload;
    uct_mc_rel_drop_t drop;
    uct_mc_rel_hdr_t rh;
    size_t payload_len;
    uint32_t conn;
    unsigned rank;
    uint8_t kind;

    ++ep->cnt.rx_datagrams;
    if ((wc->byte_len < UCT_IB_GRH_LEN) ||
        (uct_mc_verbs_hdr_parse(UCS_PTR_BYTE_OFFSET(grh, UCT_IB_GRH_LEN),
                                wc->byte_len - UCT_IB_GRH_LEN, &kind, &conn,
                                &payload, &payload_len) != UCS_OK) ||
        (conn != ep->conn)) {
        return; /* not of this group: dropped */
    }

    if (kind != UCT_MC_VERBS_KIND_GROUP) {
        who  = payload;
        rank = le16toh(who->rank);
        if ((le32toh(who->epoch) != ep->epoch) ||
            (rank >= ep->num_members)) {
            return;
        }
        if (kind == UCT_MC_VERBS_KIND_HELLO) {
            uct_mc_verbs_learn(ep, rank, wc, grh);
        } else if (rank == ep->my_rank) {
            /* Multicast: the asker, and everyone else, learns it */
            uct_mc_verbs_send_who_hello(ep, UCT_MC_VERBS_KIND_HELLO,
                                        ep->my_rank);
        }
        return;
    }

    /* The engine checks everything again; this parse finds the sender (to
     * learn its address, and to drop our own multicast looped back) */
    if (uct_mc_rel_parse(payload, payload_len, &rh, &drop) != UCS_OK) {
        /* the engine counts the drop */
        (void)uct_mc_rel_recv(ep->super.rel, payload, payload_len, now);
        return;
    }
    if (rh.src == ep->my_rank) {
        return;
    }
    if (rh.epoch == ep->epoch) {
        uct_mc_verbs_learn(ep, rh.src, wc, grh);
    }

    /* Test losses: only first transmissions (the root's multicast), so
     * that each lost packet is repaired */
    if ((rh.type == UCT_MC_REL_PKT_DATA) &&
        !(rh.flags & UCT_MC_REL_FLAG_REPAIR)) {
        ++ep->cnt.rx_mcast_data;
        if (uct_mc_verbs_test_drop(ep->my_rank, rh.psn,
                                   ep->iface->groups.drop)) {
            ++ep->cnt.rx_test_drop;
            return;
        }
    }

    (void)uct_mc_rel_recv(ep->super.rel, payload, payload_len, now);
}

static unsigned uct_mc_verbs_ep_poll(uct_mc_verbs_ep_t *ep, uint64_t now)
{
    struct ibv_wc wc[UCT_MC_VERBS_POLL];
    unsigned count = 0;
    int i, n;

    do {
        n = ibv_poll_cq(ep->cq, UCT_MC_VERBS_POLL, wc);
        if (n < 0) {
            ucs_error("mc_verbs: ibv_poll_cq() failed: %d", n);
            uct_mc_rel_fail(ep->super.rel, UCS_ERR_IO_ERROR, now);
            return count;
        }

        for (i = 0; i < n; ++i) {
            if (wc[i].wr_id < UCT_MC_VERBS_TX_SLOTS) {
                ep->tx_free[ep->tx_nfree++] = wc[i].wr_id;
                if (wc[i].status != IBV_WC_SUCCESS) {
                    /* A UD send that failed is a lost packet, unless the
                     * QP itself broke: then the next post fails too */
                    ucs_diag("mc_verbs: send completion: %s",
                             ibv_wc_status_str(wc[i].status));
                }
                continue;
            }

            if (wc[i].status == IBV_WC_SUCCESS) {
                uct_mc_verbs_ep_rx(ep, &wc[i],
                                   uct_mc_verbs_slot(ep, wc[i].wr_id), now);
            } else if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
                continue; /* the QP is being destroyed */
            }

            if (uct_mc_verbs_ep_post_rx(ep, wc[i].wr_id) != UCS_OK) {
                uct_mc_rel_fail(ep->super.rel, UCS_ERR_IO_ERROR, now);
            }
        }
        count += n;
    } while (n == UCT_MC_VERBS_POLL);

    return count;
}


/* ------------------------------------------------------------------------ */
/* Join                                                                    */

static void uct_mc_verbs_ep_joined(uct_mc_verbs_ep_t *ep,
                                   const struct rdma_ud_param *ud,
                                   uint64_t now)
{
    uct_ib_iface_t *ib_iface = uct_mc_verbs_ib_iface(ep->iface);
    struct ibv_pd *pd        = uct_ib_iface_md(ib_iface)->pd;
    struct ibv_ah_attr ah_attr;
    struct ibv_qp_attr qp_attr;
    ucs_status_t status;
    int ret;

    status = uct_mc_verbs_mc_ah_attr(&ud->ah_attr, ep->iface->groups.is_roce,
                                     ib_iface->config.port_num,
                                     ib_iface->gid_info.gid_index,
                                     ib_iface->config.sl, &ah_attr);
    if (status != UCS_OK) {
        ucs_error("mc_verbs: the join of %s reported no multicast group "
                  "(dlid 0x%x)", inet_ntoa(ep->mc_addr.sin_addr),
                  ud->ah_attr.dlid);
        goto err;
    }

    /* The group's Q_Key: what its members' QPs accept */
    if (ud->qkey != ep->qkey) {
        memset(&qp_attr, 0, sizeof(qp_attr));
        qp_attr.qkey = ud->qkey;
        ret = ibv_modify_qp(ep->qp, &qp_attr, IBV_QP_QKEY);
        if (ret != 0) {
            ucs_error("mc_verbs: setting Q_Key 0x%x failed: %s", ud->qkey,
                      strerror(ret));
            status = UCS_ERR_IO_ERROR;
            goto err;
        }
        ep->qkey = ud->qkey;
    }

    ep->mgid = ah_attr.grh.dgid;
    ep->mlid = ah_attr.dlid;
    ret      = ibv_attach_mcast(ep->qp, &ep->mgid, ep->mlid);
    if (ret != 0) {
        ucs_error("mc_verbs: ibv_attach_mcast() failed: %s", strerror(ret));
        status = UCS_ERR_IO_ERROR;
        goto err;
    }
    ep->attached = 1;

    ep->mc_ah = ibv_create_ah(pd, &ah_attr);
    if (ep->mc_ah == NULL) {
        ucs_error("mc_verbs: ibv_create_ah() of the group failed: %m");
        status = UCS_ERR_IO_ERROR;
        goto err;
    }

    ucs_debug("mc_verbs: group 0x%x:%u joined %s, qkey 0x%x, mlid 0x%x",
              ep->conn, ep->epoch, inet_ntoa(ep->mc_addr.sin_addr), ep->qkey,
              ep->mlid);
    /* Tell the group who I am; WHO covers a lost HELLO */
    uct_mc_verbs_send_who_hello(ep, UCT_MC_VERBS_KIND_HELLO, ep->my_rank);
    return;

err:
    uct_mc_rel_fail(ep->super.rel, status, now);
}

static void uct_mc_verbs_ep_cm_progress(uct_mc_verbs_ep_t *ep, uint64_t now)
{
    struct rdma_cm_event *event;

    while ((ep->cm_channel != NULL) &&
           (rdma_get_cm_event(ep->cm_channel, &event) == 0)) {
        switch (event->event) {
        case RDMA_CM_EVENT_MULTICAST_JOIN:
            if (ep->mc_ah == NULL) {
                uct_mc_verbs_ep_joined(ep, &event->param.ud, now);
            }
            break;
        case RDMA_CM_EVENT_MULTICAST_ERROR:
        case RDMA_CM_EVENT_ADDR_CHANGE:
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
            ucs_error("mc_verbs: group %s: %s (status %d)",
                      inet_ntoa(ep->mc_addr.sin_addr),
                      rdma_event_str(event->event), event->status);
            uct_mc_rel_fail(ep->super.rel, UCS_ERR_UNREACHABLE, now);
            break;
        default:
            break;
        }
        rdma_ack_cm_event(event);
    }
}

static ucs_status_t uct_mc_verbs_ep_join(uct_mc_verbs_ep_t *ep)
{
    uct_ib_iface_t *ib_iface = uct_mc_verbs_ib_iface(ep->iface);
    const char *dev_name     = uct_ib_device_name(uct_ib_iface_device(ib_iface));
    struct sockaddr_in local = {};
    int flags;

    ep->cm_channel = rdma_create_event_channel();
    if (ep->cm_channel == NULL) {
        ucs_error("mc_verbs: rdma_create_event_channel() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    flags = fcntl(ep->cm_channel->fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(ep->cm_channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("mc_verbs: fcntl(O_NONBLOCK) failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    if (rdma_create_id(ep->cm_channel, &ep->cm_id, ep, RDMA_PS_UDP) != 0) {
        ucs_error("mc_verbs: rdma_create_id() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    /* Bound to the port's own IPv4 address: the join goes through this
     * device and port */
    local.sin_family      = AF_INET;
    local.sin_addr.s_addr = ep->iface->groups.bind_ip;
    if (rdma_bind_addr(ep->cm_id, (struct sockaddr*)&local) != 0) {
        ucs_error("mc_verbs: rdma_bind_addr(%s) failed: %m",
                  inet_ntoa(local.sin_addr));
        return UCS_ERR_IO_ERROR;
    }

    if ((ep->cm_id->verbs == NULL) ||
        strcmp(ibv_get_device_name(ep->cm_id->verbs->device), dev_name) ||
        (ep->cm_id->port_num != ib_iface->config.port_num)) {
        ucs_error("mc_verbs: %s is not the address of %s:%u",
                  inet_ntoa(local.sin_addr), dev_name,
                  ib_iface->config.port_num);
        return UCS_ERR_NO_DEVICE;
    }

    if (rdma_join_multicast(ep->cm_id, (struct sockaddr*)&ep->mc_addr,
                            ep) != 0) {
        ucs_error("mc_verbs: rdma_join_multicast(%s) failed: %m",
                  inet_ntoa(ep->mc_addr.sin_addr));
        return UCS_ERR_IO_ERROR;
    }
    ep->cm_joined = 1;
    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* The endpoint's QP                                                       */

static ucs_status_t uct_mc_verbs_ep_qp_create(uct_mc_verbs_ep_t *ep)
{
    uct_ib_iface_t *ib_iface = uct_mc_verbs_ib_iface(ep->iface);
    uct_ib_md_t *md          = uct_ib_iface_md(ib_iface);
    struct ibv_qp_init_attr init_attr = {};
    struct ibv_qp_attr attr;
    unsigned num_slots, i;
    size_t size;
    int ret;

    num_slots    = UCT_MC_VERBS_TX_SLOTS + UCT_MC_VERBS_RX_SLOTS;
    ep->slot_len = UCT_IB_GRH_LEN + ep->iface->groups.dgram_len;
    size         = (size_t)num_slots * ep->slot_len;
    if (ucs_posix_memalign(&ep->buf, ucs_get_page_size(), size,
                           "mc_verbs slots") != 0) {
        return UCS_ERR_NO_MEMORY;
    }

    ep->mr = ibv_reg_mr(md->pd, ep->buf, size, IBV_ACCESS_LOCAL_WRITE);
    if (ep->mr == NULL) {
        ucs_error("mc_verbs: ibv_reg_mr(%zu) failed: %m", size);
        return UCS_ERR_IO_ERROR;
    }

    ep->cq = ibv_create_cq(md->dev.ibv_context, num_slots, NULL, NULL, 0);
    if (ep->cq == NULL) {
        ucs_error("mc_verbs: ibv_create_cq(%u) failed: %m", num_slots);
        return UCS_ERR_IO_ERROR;
    }

    init_attr.send_cq          = ep->cq;
    init_attr.recv_cq          = ep->cq;
    init_attr.qp_type          = IBV_QPT_UD;
    init_attr.cap.max_send_wr  = UCT_MC_VERBS_TX_SLOTS;
    init_attr.cap.max_recv_wr  = UCT_MC_VERBS_RX_SLOTS;
    init_attr.cap.max_send_sge = 1;
    init_attr.cap.max_recv_sge = 1;
    ep->qp = ibv_create_qp(md->pd, &init_attr);
    if (ep->qp == NULL) {
        ucs_error("mc_verbs: ibv_create_qp(UD) failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    /* librdmacm's Q_Key for its UDP groups; the join may report another,
     * which replaces it (uct_mc_verbs_ep_joined) */
    ep->qkey = RDMA_UDP_QKEY;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state   = IBV_QPS_INIT;
    attr.pkey_index = ib_iface->pkey_index;
    attr.port_num   = ib_iface->config.port_num;
    attr.qkey       = ep->qkey;
    ret = ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                        IBV_QP_PORT | IBV_QP_QKEY);
    if (ret == 0) {
        attr.qp_state = IBV_QPS_RTR;
        ret = ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE);
    }
    if (ret == 0) {
        attr.qp_state = IBV_QPS_RTS;
        attr.sq_psn   = 0;
        ret = ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
    }
    if (ret != 0) {
        ucs_error("mc_verbs: bringing up the UD QP failed: %s",
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    for (i = 0; i < UCT_MC_VERBS_TX_SLOTS; ++i) {
        ep->tx_free[i] = UCT_MC_VERBS_TX_SLOTS - 1 - i;
    }
    ep->tx_nfree = UCT_MC_VERBS_TX_SLOTS;

    for (i = UCT_MC_VERBS_TX_SLOTS; i < num_slots; ++i) {
        if (uct_mc_verbs_ep_post_rx(ep, i) != UCS_OK) {
            return UCS_ERR_IO_ERROR;
        }
    }
    return UCS_OK;
}

/* Everything the endpoint holds on the device and the fabric; the
 * endpoint itself stays until uct_ep_destroy() */
static void uct_mc_verbs_ep_release(uct_mc_verbs_ep_t *ep)
{
    int ret;

    uct_mc_rel_ep_cancel_flushes(&ep->super);
    if (ep->super.rel != NULL) {
        uct_mc_rel_stream_destroy(ep->super.rel);
        ep->super.rel = NULL;
    }

    if (ep->attached) {
        ret = ibv_detach_mcast(ep->qp, &ep->mgid, ep->mlid);
        if (ret != 0) {
            ucs_warn("mc_verbs: ibv_detach_mcast() failed: %s",
                     strerror(ret));
        }
        ep->attached = 0;
    }
    if (ep->cm_joined) {
        (void)rdma_leave_multicast(ep->cm_id,
                                   (struct sockaddr*)&ep->mc_addr);
        ep->cm_joined = 0;
    }
    if (ep->cm_id != NULL) {
        rdma_destroy_id(ep->cm_id);
        ep->cm_id = NULL;
    }
    if (ep->cm_channel != NULL) {
        rdma_destroy_event_channel(ep->cm_channel);
        ep->cm_channel = NULL;
    }
    if (ep->mc_ah != NULL) {
        ibv_destroy_ah(ep->mc_ah);
        ep->mc_ah = NULL;
    }
    if (ep->qp != NULL) {
        ibv_destroy_qp(ep->qp);
        ep->qp = NULL;
    }
    if (ep->cq != NULL) {
        ibv_destroy_cq(ep->cq);
        ep->cq = NULL;
    }
    if (ep->mr != NULL) {
        ibv_dereg_mr(ep->mr);
        ep->mr = NULL;
    }
    ucs_free(ep->buf);
    ep->buf = NULL;

    if (ep->iface != NULL) {
        ucs_list_del(&ep->list);
        ep->iface = NULL;
    }
}


/* ------------------------------------------------------------------------ */
/* Endpoint operations                                                     */

static void uct_mc_verbs_ep_destroy(uct_ep_h tl_ep)
{
    uct_mc_verbs_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_verbs_ep_t);

    uct_mc_verbs_ep_release(ep);
    uct_mc_rel_ep_cleanup(&ep->super);
    ucs_free(ep->peers);
    ucs_free(ep);
}

static uct_iface_ops_t uct_mc_verbs_group_ops = {
    .ep_am_short      = uct_mc_rel_ep_am_short,
    .ep_am_short_iov  = uct_base_ep_am_short_iov,
    .ep_am_bcopy      = uct_mc_rel_ep_am_bcopy,
    .ep_pending_add   = uct_mc_rel_ep_pending_add,
    .ep_pending_purge = uct_mc_rel_ep_pending_purge,
    .ep_flush         = uct_mc_rel_ep_flush,
    .ep_fence         = uct_base_ep_fence,
    .ep_destroy       = uct_mc_verbs_ep_destroy
};


/* ------------------------------------------------------------------------ */
/* The extension API (uct_o2m.h)                                           */

int uct_mc_verbs_is_ep(uct_ep_h ep)
{
    return (ep != NULL) &&
           (ep->iface->ops.ep_destroy == uct_mc_verbs_ep_destroy);
}

ucs_status_t uct_mc_verbs_group_ep_create(uct_iface_h tl_iface,
                                          const uct_o2m_group_params_t *params,
                                          uct_ep_h *ep_p)
{
    uct_mc_verbs_iface_t *iface = ucs_derived_of(tl_iface,
                                                 uct_mc_verbs_iface_t);
    uct_mc_rel_params_t rel_params;
    uct_mc_verbs_ep_t *ep;
    ucs_status_t status;

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
    if (iface->groups.bind_ip == 0) {
        ucs_error("mc_verbs: %s:%u has no IPv4 address to join groups with "
                  "(RoCE: a RoCE v2 IPv4 GID, UCX_IB_GID_INDEX; IB: an IPoIB "
                  "interface)",
                  uct_ib_device_name(uct_ib_iface_device(
                          uct_mc_verbs_ib_iface(iface))),
                  uct_mc_verbs_ib_iface(iface)->config.port_num);
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_list_for_each(ep, &iface->groups.list, list) {
        if ((ep->conn == (uint32_t)params->group_id) &&
            (ep->epoch == (uint32_t)(params->group_id >> 32))) {
            return UCS_ERR_ALREADY_EXISTS;
        }
    }

    ep = ucs_calloc(1, sizeof(*ep), "mc_verbs ep");
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ep->super.super.ep.iface = &iface->group_iface;
    ep->iface        = iface;
    ep->conn         = (uint32_t)params->group_id;
    ep->epoch        = (uint32_t)(params->group_id >> 32);
    ep->num_members  = params->size;
    ep->my_rank      = params->my_index;
    ep->root         = params->root_index;
    ep->status       = UCS_OK;
    ucs_list_add_tail(&iface->groups.list, &ep->list);

    ep->mc_addr.sin_family      = AF_INET;
    ep->mc_addr.sin_addr.s_addr = htonl(uct_mc_verbs_group_ip(
            params->group_id, iface->groups.mc_base, iface->groups.mc_count));

    status = uct_mc_rel_ep_init(&ep->super, iface->groups.seg_size,
                                iface->groups.seg_frags,
                                iface->groups.rel.mtu,
                                params->my_index == params->root_index);
    ep->peers = ucs_calloc(params->size, sizeof(*ep->peers),
                           "mc_verbs peers");
    if ((status != UCS_OK) || (ep->peers == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    status = uct_mc_verbs_ep_qp_create(ep);
    if (status != UCS_OK) {
        goto err;
    }

    rel_params.group_id    = ep->conn;
    rel_params.epoch       = ep->epoch;
    rel_params.num_members = ep->num_members;
    rel_params.my_rank     = ep->my_rank;
    rel_params.root        = ep->root;
    rel_params.init_psn    = (uint32_t)ucs_generate_uuid((uintptr_t)ep);
    rel_params.config      = &iface->groups.rel;
    rel_params.ops         = &uct_mc_verbs_rel_ops;
    rel_params.arg         = ep;
    status = uct_mc_rel_stream_create(&rel_params, uct_mc_rel_ep_now(),
                                      &ep->super.rel);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_mc_verbs_ep_join(ep);
    if (status != UCS_OK) {
        goto err;
    }

    *ep_p = &ep->super.super.ep;
    return UCS_OK;

err:
    uct_mc_verbs_ep_destroy(&ep->super.super.ep);
    return status;
}

ucs_status_t uct_mc_verbs_ep_counters(uct_ep_h tl_ep,
                                      uct_mc_verbs_ep_counters_t *counters)
{
    uct_mc_verbs_ep_t *ep;
    uct_mc_rel_stats_t stats;

    if (!uct_mc_verbs_is_ep(tl_ep) || (counters == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    ep        = ucs_derived_of(tl_ep, uct_mc_verbs_ep_t);
    *counters = ep->cnt;
    if (ep->super.rel != NULL) {
        uct_mc_rel_stats(ep->super.rel, &stats);
        counters->rx_repaired     = stats.rx_repaired;
        counters->rx_dup          = stats.rx_dup;
        counters->tx_repair_ucast = stats.tx_repair_ucast;
        counters->tx_repair_mcast = stats.tx_repair_mcast;
        counters->tx_nack         = stats.tx_nack;
    }
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Interface                                                               */

unsigned uct_mc_verbs_group_progress(uct_mc_verbs_iface_t *iface)
{
    uct_mc_verbs_ep_t *ep, *tmp;
    unsigned count = 0;
    uint64_t now;

    ucs_list_for_each_safe(ep, tmp, &iface->groups.list, list) {
        now = uct_mc_rel_ep_now();
        uct_mc_verbs_ep_cm_progress(ep, now);
        count += uct_mc_verbs_ep_poll(ep, now);

        now = uct_mc_rel_ep_now();
        if (uct_mc_rel_next_deadline(ep->super.rel) <= now) {
            (void)uct_mc_rel_progress(ep->super.rel, now);
        }

        count += uct_mc_rel_ep_progress(&ep->super);
    }
    return count;
}

/* InfiniBand: the IPv4 address of the IPoIB interface of @a gid (its
 * hardware address is 4 bytes of flags and QPN, then the port's GID) */
static uint32_t uct_mc_verbs_ipoib_addr(const union ibv_gid *gid)
{
    struct ifaddrs *ifa_list, *ifa;
    unsigned hw[20];
    uint32_t addr = 0;
    char path[256];
    unsigned i;
    FILE *f;
    int n;

    if (getifaddrs(&ifa_list) < 0) {
        return 0;
    }

    for (ifa = ifa_list; (ifa != NULL) && (addr == 0); ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) || (ifa->ifa_addr->sa_family != AF_INET)) {
            continue;
        }

        snprintf(path, sizeof(path), "/sys/class/net/%s/address",
                 ifa->ifa_name);
        f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        n = fscanf(f, "%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:"
                   "%x:%x:%x", &hw[0], &hw[1], &hw[2], &hw[3], &hw[4],
                   &hw[5], &hw[6], &hw[7], &hw[8], &hw[9], &hw[10], &hw[11],
                   &hw[12], &hw[13], &hw[14], &hw[15], &hw[16], &hw[17],
                   &hw[18], &hw[19]);
        fclose(f);
        if (n != 20) {
            continue;
        }

        for (i = 0; (i < 16) && (hw[4 + i] == gid->raw[i]); ++i) {
        }
        if (i == 16) {
            addr = ((struct sockaddr_in*)ifa->ifa_addr)->sin_addr.s_addr;
        }
    }

    freeifaddrs(ifa_list);
    return addr;
}

/* RoCE: the IPv4 address of the network device of the port's GID */
static uint32_t uct_mc_verbs_roce_addr(uct_ib_iface_t *ib_iface)
{
    struct ifaddrs *ifa_list, *ifa;
    char path[256], ndev[IFNAMSIZ + 1];
    uint32_t addr = 0;
    FILE *f;
    int n;

    snprintf(path, sizeof(path),
             "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%u",
             uct_ib_device_name(uct_ib_iface_device(ib_iface)),
             ib_iface->config.port_num, ib_iface->gid_info.gid_index);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    n = fscanf(f, "%16s", ndev);
    fclose(f);
    if ((n != 1) || (getifaddrs(&ifa_list) < 0)) {
        return 0;
    }

    for (ifa = ifa_list; (ifa != NULL) && (addr == 0); ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr != NULL) && (ifa->ifa_addr->sa_family == AF_INET) &&
            !strcmp(ifa->ifa_name, ndev)) {
            addr = ((struct sockaddr_in*)ifa->ifa_addr)->sin_addr.s_addr;
        }
    }

    freeifaddrs(ifa_list);
    return addr;
}

ucs_status_t
uct_mc_verbs_group_iface_init(uct_mc_verbs_iface_t *iface,
                              const uct_mc_verbs_group_config_t *config)
{
    uct_ib_iface_t *ib_iface = uct_mc_verbs_ib_iface(iface);
    uct_mc_rel_config_t *rel = &iface->groups.rel;
    size_t overhead          = UCT_MC_VERBS_HDR_LEN + UCT_MC_REL_HDR_LEN;
    struct in_addr base;
    size_t dev_mtu, mtu;
    ucs_status_t status;

    ucs_list_head_init(&iface->groups.list);
    iface->group_iface.ops = uct_mc_verbs_group_ops;

    /* A UD datagram is at most the port's MTU */
    dev_mtu = 128ul << uct_ib_iface_port_attr(ib_iface)->active_mtu;
    mtu     = (config->super.mtu == 0) ? dev_mtu : config->super.mtu;
    if ((mtu > dev_mtu) || (mtu < overhead + 64)) {
        ucs_error("mc_verbs: GROUP_MTU %zu must be in %zu..%zu (the port's "
                  "MTU)", mtu, overhead + 64, dev_mtu);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->super.seg_size < 1) || (config->super.seg_size > UCS_MBYTE)) {
        ucs_error("mc_verbs: GROUP_SEG_SIZE %zu must be in 1..1m",
                  config->super.seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->drop > 1000) || (config->super.mcast_count < 1) ||
        (config->super.mcast_count > 65536)) {
        ucs_error("mc_verbs: GROUP_TEST_DROP %u must be in 0..1000, "
                  "GROUP_MCAST_COUNT %u in 1..65536", config->drop,
                  config->super.mcast_count);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_mc_rel_ep_config_rel(&config->super, "mc_verbs", "GROUP_",
                                      mtu, overhead, rel);
    if (status != UCS_OK) {
        return status;
    }

    if ((inet_pton(AF_INET, config->super.mcast_base, &base) != 1) ||
        !IN_MULTICAST(ntohl(base.s_addr)) ||
        !IN_MULTICAST(ntohl(base.s_addr) + config->super.mcast_count - 1)) {
        ucs_error("mc_verbs: GROUP_MCAST_BASE '%s' + GROUP_MCAST_COUNT %u is "
                  "not a range of IPv4 multicast addresses",
                  config->super.mcast_base, config->super.mcast_count);
        return UCS_ERR_INVALID_PARAM;
    }

    iface->groups.mc_base   = ntohl(base.s_addr);
    iface->groups.mc_count  = config->super.mcast_count;
    iface->groups.seg_size  = config->super.seg_size;
    iface->groups.seg_frags = (config->super.seg_size + rel->mtu) / rel->mtu;
    iface->groups.dgram_len = mtu;
    iface->groups.drop      = config->drop;
    iface->groups.is_roce   = uct_ib_iface_is_roce(ib_iface);

    /* The GID the groups' packets come from: RoCE v2 IPv4 or link-local
     * (the port's IPv4 address is then found like on IB), else the
     * interface serves point-to-point only */
    if (uct_mc_verbs_check_gid(&ib_iface->gid_info.gid, iface->groups.is_roce,
                               &iface->groups.bind_ip) != UCS_OK) {
        ucs_debug("mc_verbs: GID index %u is neither RoCE v2 IPv4 nor "
                  "link-local: no groups on this interface",
                  ib_iface->gid_info.gid_index);
        iface->groups.bind_ip = 0;
    } else if (iface->groups.bind_ip == 0) {
        iface->groups.bind_ip = iface->groups.is_roce ?
                                uct_mc_verbs_roce_addr(ib_iface) :
                                uct_mc_verbs_ipoib_addr(
                                        &ib_iface->gid_info.gid);
    }
    return UCS_OK;
}

void uct_mc_verbs_group_iface_cleanup(uct_mc_verbs_iface_t *iface)
{
    uct_mc_verbs_ep_t *ep, *tmp;

    ucs_list_for_each_safe(ep, tmp, &iface->groups.list, list) {
        ucs_warn("mc_verbs: interface closed with a group endpoint");
        uct_mc_verbs_ep_release(ep);
    }
}
