/**
 * ucx-o2m: group endpoints of the IB multicast transports (mc_verbs,
 * mc_mlx5) - UD multicast made reliable by the engine of mc/rel/
 * (docs/multicast.md, "The mc_verbs transport"; mc_ib_group.h).
 *
 * A group endpoint (uct_o2m_ep_create on an mc_verbs or mc_mlx5
 * interface) has a UD QP and CQs of its own, on the interface's protection
 * domain and port: UD's point-to-point QP and its completion accounting
 * stay untouched, and UD's Ethernet DGID check (which drops packets sent to
 * a multicast GID) never sees a group packet.  Every datagram is an 8-byte
 * header (mc_ib_wire.h) and an engine packet, or a WHO/HELLO.
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
 * Data to the group: the multicast destination (the join's MGID/MLID,
 * QPN 0xFFFFFF, the group's Q_Key), in the form the transport's datapath
 * sends with.  ACK, NACK and repairs: UD datagrams to the member's QP;
 * members learn each other's QPN and GID from a HELLO each multicasts once
 * joined, from the source of any packet, and from a WHO's answer.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_ib_group.h"

#include <uct/ib/base/ib_md.h>
#include <uct/ib/base/ib_iface.h>
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


#define UCT_MC_IB_POLL      16      /* completions per poll */
#define UCT_MC_IB_WHO_GAP   100000  /* ns between WHOs for one member */


static void uct_mc_ib_ep_destroy(uct_ep_h tl_ep);


/* ------------------------------------------------------------------------ */
/* Datagrams                                                               */

static ucs_status_t uct_mc_ib_ep_post(uct_mc_ib_ep_t *ep,
                                      const uct_mc_ib_dest_t *dest,
                                      uint8_t kind, const void *b1,
                                      size_t l1, const void *b2, size_t l2)
{
    ucs_status_t status;
    unsigned slot;
    void *buf;

    if (UCT_MC_IB_HDR_LEN + l1 + l2 > ep->groups->dgram_len) {
        return UCS_ERR_INVALID_PARAM; /* never by our own engine */
    }
    if (ep->tx_nfree == 0) {
        return UCS_ERR_NO_RESOURCE;
    }

    slot = ep->tx_free[--ep->tx_nfree];
    buf  = uct_mc_ib_ep_slot(ep, slot);
    uct_mc_ib_hdr_pack(buf, kind, ep->conn);
    memcpy(UCS_PTR_BYTE_OFFSET(buf, UCT_MC_IB_HDR_LEN), b1, l1);
    if (l2 > 0) {
        memcpy(UCS_PTR_BYTE_OFFSET(buf, UCT_MC_IB_HDR_LEN + l1), b2, l2);
    }

    status = ep->groups->dp->post(ep, dest, slot, UCT_MC_IB_HDR_LEN + l1 + l2);
    if (status != UCS_OK) {
        uct_mc_ib_ep_tx_done(ep, slot);
    }
    return status;
}

static ucs_status_t uct_mc_ib_verbs_post(uct_mc_ib_ep_t *ep,
                                         const uct_mc_ib_dest_t *dest,
                                         unsigned slot, size_t length)
{
    struct ibv_send_wr wr = {}, *bad_wr;
    struct ibv_sge sge;
    int ret;

    sge.addr              = (uintptr_t)uct_mc_ib_ep_slot(ep, slot);
    sge.length            = length;
    sge.lkey              = ep->mr->lkey;
    wr.wr_id              = slot;
    wr.sg_list            = &sge;
    wr.num_sge            = 1;
    wr.opcode             = IBV_WR_SEND;
    wr.send_flags         = IBV_SEND_SIGNALED;
    wr.wr.ud.ah           = dest->ah;
    wr.wr.ud.remote_qpn   = dest->qpn;
    wr.wr.ud.remote_qkey  = ep->qkey;

    ret = ibv_post_send(ep->qp, &wr, &bad_wr);
    if (ret != 0) {
        ucs_diag("%s: ibv_post_send() failed: %s", ep->groups->tl_name,
                 strerror(ret));
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

static ucs_status_t uct_mc_ib_verbs_dest_init(uct_mc_ib_ep_t *ep,
                                              uct_mc_ib_dest_t *dest)
{
    return UCS_OK; /* the address handle is all ibv_post_send() needs */
}

const uct_mc_ib_datapath_t uct_mc_ib_verbs_datapath = {
    .own_tx_cq = 0,
    .qp_init   = NULL,
    .dest_init = uct_mc_ib_verbs_dest_init,
    .post      = uct_mc_ib_verbs_post,
    .tx_poll   = NULL,
    .cleanup   = NULL
};

static ucs_status_t uct_mc_ib_ep_post_rx(uct_mc_ib_ep_t *ep, unsigned slot)
{
    struct ibv_recv_wr wr = {}, *bad_wr;
    struct ibv_sge sge;
    int ret;

    sge.addr   = (uintptr_t)uct_mc_ib_ep_slot(ep, slot);
    sge.length = ep->slot_len;
    sge.lkey   = ep->mr->lkey;
    wr.wr_id   = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;

    ret = ibv_post_recv(ep->qp, &wr, &bad_wr);
    if (ret != 0) {
        ucs_error("%s: ibv_post_recv() failed: %s", ep->groups->tl_name,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static void uct_mc_ib_send_who_hello(uct_mc_ib_ep_t *ep, uint8_t kind,
                                     unsigned rank)
{
    uct_mc_ib_who_t who;

    if (ep->mc_dest.ah == NULL) {
        return;
    }

    who.epoch    = htole32(ep->epoch);
    who.rank     = htole16(rank);
    who.reserved = 0;
    (void)uct_mc_ib_ep_post(ep, &ep->mc_dest, kind, &who, sizeof(who), NULL,
                            0);
}

/* WHO: ask the group for the address of @a rank (answered by a HELLO) */
static void uct_mc_ib_send_who(uct_mc_ib_ep_t *ep, unsigned rank)
{
    uct_mc_ib_peer_t *peer = &ep->peers[rank];
    uint64_t now           = uct_mc_rel_ep_now();

    if ((peer->last_who != 0) &&
        (now - peer->last_who < UCT_MC_IB_WHO_GAP)) {
        return;
    }
    peer->last_who = now;
    uct_mc_ib_send_who_hello(ep, UCT_MC_IB_KIND_WHO, rank);
}

/* Engine callback: one packet to a member or to the group */
static ucs_status_t uct_mc_ib_rel_send(void *arg, int dest,
                                       const void *hdr,
                                       const void *payload, size_t length)
{
    uct_mc_ib_ep_t *ep = arg;
    uct_mc_ib_peer_t *peer;

    if (ep->mc_dest.ah == NULL) {
        return UCS_OK; /* not joined yet: lost, the engine's timers repeat */
    }

    if (dest == UCT_MC_REL_DEST_MCAST) {
        return uct_mc_ib_ep_post(ep, &ep->mc_dest, UCT_MC_IB_KIND_GROUP, hdr,
                                 UCT_MC_REL_HDR_LEN, payload, length);
    }

    if ((dest < 0) || ((unsigned)dest >= ep->num_members)) {
        return UCS_OK;
    }

    peer = &ep->peers[dest];
    if (peer->dest.ah == NULL) {
        uct_mc_ib_send_who(ep, dest);
        return UCS_OK; /* lost: the engine's timers send it again */
    }

    return uct_mc_ib_ep_post(ep, &peer->dest, UCT_MC_IB_KIND_GROUP, hdr,
                             UCT_MC_REL_HDR_LEN, payload, length);
}

/* Engine callback: a whole message, AM header first */
static void uct_mc_ib_rel_deliver(void *arg, const void *data,
                                  size_t length)
{
    uct_mc_ib_ep_t *ep = arg;

    /* A message that is not valid: only a broken or forged root sends it */
    (void)uct_mc_rel_ep_deliver(&ep->groups->ib_iface->super, data, length);
}

static void uct_mc_ib_rel_failed(void *arg, ucs_status_t status)
{
    uct_mc_ib_ep_t *ep = arg;

    ep->status = status;
    if (status == UCS_ERR_TIMED_OUT) {
        /* Its one line (the engine's says more at diag level): a member
         * was silent past the bound, here or at the member that decided */
        ucs_warn("%s: group 0x%x epoch %u: member %u of %u (root %u) "
                 "fails: a member waited on was silent past "
                 "GROUP_PEER_TIMEOUT (%.3g s)", ep->groups->tl_name,
                 ep->conn, ep->epoch, ep->my_rank, ep->num_members,
                 ep->root, ep->groups->rel.peer_timeout / 1e9);
    }
}

static const uct_mc_rel_ops_t uct_mc_ib_rel_ops = {
    .send     = uct_mc_ib_rel_send,
    .deliver  = uct_mc_ib_rel_deliver,
    .is_alive = NULL, /* no liveness on UD: GROUP_PEER_TIMEOUT bounds the
                         waits (the engine's pings keep a live one) */
    .failed   = uct_mc_ib_rel_failed
};


/* ------------------------------------------------------------------------ */
/* Receiving                                                               */

/* Learn the address of member @a rank from a packet it sent */
static void uct_mc_ib_learn(uct_mc_ib_ep_t *ep, unsigned rank,
                            const struct ibv_wc *wc, const void *grh)
{
    uct_ib_iface_t *ib_iface = ep->groups->ib_iface;
    uct_mc_ib_peer_t *peer;
    struct ibv_ah_attr ah_attr;
    union ibv_gid sgid;

    if ((rank >= ep->num_members) || (rank == ep->my_rank)) {
        return;
    }

    /* The first address heard for a rank stays */
    peer = &ep->peers[rank];
    if (peer->dest.ah != NULL) {
        return;
    }

    if (uct_mc_ib_grh_sgid(grh, wc->wc_flags & IBV_WC_GRH,
                           ep->groups->is_roce, &ib_iface->gid_info.gid,
                           &sgid) != UCS_OK) {
        return;
    }

    uct_ib_iface_fill_ah_attr_from_gid_lid(ib_iface, wc->slid, &sgid,
                                           ib_iface->gid_info.gid_index, 0,
                                           &ah_attr);
    /* Cached by the device, released with it */
    if (uct_ib_iface_create_ah(ib_iface, &ah_attr, "multicast group member",
                               &peer->dest.ah) != UCS_OK) {
        peer->dest.ah = NULL;
        return;
    }
    peer->dest.qpn = wc->src_qp;
    if (ep->groups->dp->dest_init(ep, &peer->dest) != UCS_OK) {
        peer->dest.ah = NULL; /* the device's cache keeps the handle */
    }
}

static void uct_mc_ib_ep_rx(uct_mc_ib_ep_t *ep, const struct ibv_wc *wc,
                            const void *grh, uint64_t now)
{
    const uct_mc_ib_who_t *who;
    const void *payload;
    uct_mc_rel_drop_t drop;
    uct_mc_rel_hdr_t rh;
    size_t payload_len;
    uint32_t conn;
    unsigned rank;
    uint8_t kind;

    ++ep->cnt.rx_datagrams;
    if ((wc->byte_len < UCT_IB_GRH_LEN) ||
        (uct_mc_ib_hdr_parse(UCS_PTR_BYTE_OFFSET(grh, UCT_IB_GRH_LEN),
                             wc->byte_len - UCT_IB_GRH_LEN, &kind, &conn,
                             &payload, &payload_len) != UCS_OK) ||
        (conn != ep->conn)) {
        return; /* not of this group: dropped */
    }

    if (kind != UCT_MC_IB_KIND_GROUP) {
        who  = payload;
        rank = le16toh(who->rank);
        if ((le32toh(who->epoch) != ep->epoch) ||
            (rank >= ep->num_members)) {
            return;
        }
        if (kind == UCT_MC_IB_KIND_HELLO) {
            uct_mc_ib_learn(ep, rank, wc, grh);
        } else if (rank == ep->my_rank) {
            /* Multicast: the asker, and everyone else, learns it */
            uct_mc_ib_send_who_hello(ep, UCT_MC_IB_KIND_HELLO, ep->my_rank);
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
        uct_mc_ib_learn(ep, rh.src, wc, grh);
    }

    /* First transmissions: the root's multicast (GROUP_TEST_DROP's losses
     * are the engine's loss hook, in uct_mc_rel_recv) */
    if ((rh.type == UCT_MC_REL_PKT_DATA) &&
        !(rh.flags & UCT_MC_REL_FLAG_REPAIR)) {
        ++ep->cnt.rx_mcast_data;
    }

    (void)uct_mc_rel_recv(ep->super.rel, payload, payload_len, now);
}

static unsigned uct_mc_ib_ep_poll(uct_mc_ib_ep_t *ep, uint64_t now)
{
    struct ibv_wc wc[UCT_MC_IB_POLL];
    unsigned count = 0;
    int i, n;

    if (ep->groups->dp->own_tx_cq) {
        count += ep->groups->dp->tx_poll(ep, now);
    }

    do {
        n = ibv_poll_cq(ep->cq, UCT_MC_IB_POLL, wc);
        if (n < 0) {
            ucs_error("%s: ibv_poll_cq() failed: %d", ep->groups->tl_name, n);
            uct_mc_rel_fail(ep->super.rel, UCS_ERR_IO_ERROR, now);
            return count;
        }

        for (i = 0; i < n; ++i) {
            if (wc[i].wr_id < UCT_MC_IB_TX_SLOTS) {
                uct_mc_ib_ep_tx_done(ep, wc[i].wr_id);
                if (wc[i].status != IBV_WC_SUCCESS) {
                    /* A UD send that failed is a lost packet, unless the
                     * QP itself broke: then the next post fails too */
                    ucs_diag("%s: send completion: %s", ep->groups->tl_name,
                             ibv_wc_status_str(wc[i].status));
                }
                continue;
            }

            if (wc[i].status == IBV_WC_SUCCESS) {
                uct_mc_ib_ep_rx(ep, &wc[i],
                                uct_mc_ib_ep_slot(ep, wc[i].wr_id), now);
            } else if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
                continue; /* the QP is being destroyed */
            }

            if (uct_mc_ib_ep_post_rx(ep, wc[i].wr_id) != UCS_OK) {
                uct_mc_rel_fail(ep->super.rel, UCS_ERR_IO_ERROR, now);
            }
        }
        count += n;
    } while (n == UCT_MC_IB_POLL);

    return count;
}


/* ------------------------------------------------------------------------ */
/* Join                                                                    */

static void uct_mc_ib_ep_joined(uct_mc_ib_ep_t *ep,
                                const struct rdma_ud_param *ud, uint64_t now)
{
    uct_ib_iface_t *ib_iface = ep->groups->ib_iface;
    struct ibv_pd *pd        = uct_ib_iface_md(ib_iface)->pd;
    struct ibv_ah_attr ah_attr;
    struct ibv_qp_attr qp_attr;
    ucs_status_t status;
    int ret;

    status = uct_mc_ib_mc_ah_attr(&ud->ah_attr, ep->groups->is_roce,
                                  ib_iface->config.port_num,
                                  ib_iface->gid_info.gid_index,
                                  ib_iface->config.sl, &ah_attr);
    if (status != UCS_OK) {
        ucs_error("%s: the join of %s reported no multicast group "
                  "(dlid 0x%x)", ep->groups->tl_name,
                  inet_ntoa(ep->mc_addr.sin_addr), ud->ah_attr.dlid);
        goto err;
    }

    /* The group's Q_Key: what its members' QPs accept */
    if (ud->qkey != ep->qkey) {
        memset(&qp_attr, 0, sizeof(qp_attr));
        qp_attr.qkey = ud->qkey;
        ret = ibv_modify_qp(ep->qp, &qp_attr, IBV_QP_QKEY);
        if (ret != 0) {
            ucs_error("%s: setting Q_Key 0x%x failed: %s",
                      ep->groups->tl_name, ud->qkey, strerror(ret));
            status = UCS_ERR_IO_ERROR;
            goto err;
        }
        ep->qkey = ud->qkey;
    }

    ep->mgid = ah_attr.grh.dgid;
    ep->mlid = ah_attr.dlid;
    ret      = ibv_attach_mcast(ep->qp, &ep->mgid, ep->mlid);
    if (ret != 0) {
        ucs_error("%s: ibv_attach_mcast() failed: %s", ep->groups->tl_name,
                  strerror(ret));
        status = UCS_ERR_IO_ERROR;
        goto err;
    }
    ep->attached = 1;

    ep->mc_dest.ah = ibv_create_ah(pd, &ah_attr);
    if (ep->mc_dest.ah == NULL) {
        ucs_error("%s: ibv_create_ah() of the group failed: %m",
                  ep->groups->tl_name);
        status = UCS_ERR_IO_ERROR;
        goto err;
    }
    ep->mc_dest.qpn = UCT_MC_IB_MCAST_QPN;

    /* The group's destination in the datapath's form (mc_mlx5: the mlx5
     * address vector of the MGID/MLID and QPN 0xFFFFFF) */
    status = ep->groups->dp->dest_init(ep, &ep->mc_dest);
    if (status != UCS_OK) {
        ibv_destroy_ah(ep->mc_dest.ah);
        ep->mc_dest.ah = NULL;
        goto err;
    }

    ucs_debug("%s: group 0x%x:%u joined %s, qkey 0x%x, mlid 0x%x",
              ep->groups->tl_name, ep->conn, ep->epoch,
              inet_ntoa(ep->mc_addr.sin_addr), ep->qkey, ep->mlid);
    /* Tell the group who I am; WHO covers a lost HELLO */
    uct_mc_ib_send_who_hello(ep, UCT_MC_IB_KIND_HELLO, ep->my_rank);
    return;

err:
    uct_mc_rel_fail(ep->super.rel, status, now);
}

static void uct_mc_ib_ep_cm_progress(uct_mc_ib_ep_t *ep, uint64_t now)
{
    struct rdma_cm_event *event;

    while ((ep->cm_channel != NULL) &&
           (rdma_get_cm_event(ep->cm_channel, &event) == 0)) {
        switch (event->event) {
        case RDMA_CM_EVENT_MULTICAST_JOIN:
            if (ep->mc_dest.ah == NULL) {
                uct_mc_ib_ep_joined(ep, &event->param.ud, now);
            }
            break;
        case RDMA_CM_EVENT_MULTICAST_ERROR:
        case RDMA_CM_EVENT_ADDR_CHANGE:
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
            ucs_error("%s: group %s: %s (status %d)", ep->groups->tl_name,
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

static ucs_status_t uct_mc_ib_ep_join(uct_mc_ib_ep_t *ep)
{
    uct_ib_iface_t *ib_iface = ep->groups->ib_iface;
    const char *dev_name     = uct_ib_device_name(uct_ib_iface_device(ib_iface));
    struct sockaddr_in local = {};
    int flags;

    ep->cm_channel = rdma_create_event_channel();
    if (ep->cm_channel == NULL) {
        ucs_error("%s: rdma_create_event_channel() failed: %m",
                  ep->groups->tl_name);
        return UCS_ERR_IO_ERROR;
    }

    flags = fcntl(ep->cm_channel->fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(ep->cm_channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("%s: fcntl(O_NONBLOCK) failed: %m", ep->groups->tl_name);
        return UCS_ERR_IO_ERROR;
    }

    if (rdma_create_id(ep->cm_channel, &ep->cm_id, ep, RDMA_PS_UDP) != 0) {
        ucs_error("%s: rdma_create_id() failed: %m", ep->groups->tl_name);
        return UCS_ERR_IO_ERROR;
    }

    /* Bound to the port's own IPv4 address: the join goes through this
     * device and port */
    local.sin_family      = AF_INET;
    local.sin_addr.s_addr = ep->groups->bind_ip;
    if (rdma_bind_addr(ep->cm_id, (struct sockaddr*)&local) != 0) {
        ucs_error("%s: rdma_bind_addr(%s) failed: %m", ep->groups->tl_name,
                  inet_ntoa(local.sin_addr));
        return UCS_ERR_IO_ERROR;
    }

    if ((ep->cm_id->verbs == NULL) ||
        strcmp(ibv_get_device_name(ep->cm_id->verbs->device), dev_name) ||
        (ep->cm_id->port_num != ib_iface->config.port_num)) {
        ucs_error("%s: %s is not the address of %s:%u", ep->groups->tl_name,
                  inet_ntoa(local.sin_addr), dev_name,
                  ib_iface->config.port_num);
        return UCS_ERR_NO_DEVICE;
    }

    if (rdma_join_multicast(ep->cm_id, (struct sockaddr*)&ep->mc_addr,
                            ep) != 0) {
        ucs_error("%s: rdma_join_multicast(%s) failed: %m", ep->groups->tl_name,
                  inet_ntoa(ep->mc_addr.sin_addr));
        return UCS_ERR_IO_ERROR;
    }
    ep->cm_joined = 1;
    return UCS_OK;
}


/* ------------------------------------------------------------------------ */
/* The endpoint's QP                                                       */

static ucs_status_t uct_mc_ib_ep_qp_create(uct_mc_ib_ep_t *ep)
{
    uct_ib_iface_t *ib_iface = ep->groups->ib_iface;
    uct_ib_md_t *md          = uct_ib_iface_md(ib_iface);
    struct ibv_qp_init_attr init_attr = {};
    struct ibv_qp_attr attr;
    unsigned num_slots, i;
    ucs_status_t status;
    size_t size;
    int ret;

    num_slots    = UCT_MC_IB_TX_SLOTS + UCT_MC_IB_RX_SLOTS;
    /* A multiple of 8: every slot's datagram, after the 40-byte GRH,
     * starts 8-byte aligned, and so do the engine header and the AM data
     * in it (UCT_MC_REL_EP_AM_HDR_LEN) */
    ep->slot_len = ucs_align_up_pow2(UCT_IB_GRH_LEN + ep->groups->dgram_len,
                                     8);
    size         = (size_t)num_slots * ep->slot_len;
    if (ucs_posix_memalign(&ep->buf, ucs_get_page_size(), size,
                           "mc_ib slots") != 0) {
        return UCS_ERR_NO_MEMORY;
    }

    ep->mr = ibv_reg_mr(md->pd, ep->buf, size, IBV_ACCESS_LOCAL_WRITE);
    if (ep->mr == NULL) {
        ucs_error("%s: ibv_reg_mr(%zu) failed: %m", ep->groups->tl_name,
                  size);
        return UCS_ERR_IO_ERROR;
    }

    ep->cq = ibv_create_cq(md->dev.ibv_context, num_slots, NULL, NULL, 0);
    if (ep->cq == NULL) {
        ucs_error("%s: ibv_create_cq(%u) failed: %m", ep->groups->tl_name,
                  num_slots);
        return UCS_ERR_IO_ERROR;
    }

    ep->tx_cq = ep->cq;
    if (ep->groups->dp->own_tx_cq) {
        ep->tx_cq = ibv_create_cq(md->dev.ibv_context, UCT_MC_IB_TX_SLOTS,
                                  NULL, NULL, 0);
        if (ep->tx_cq == NULL) {
            ucs_error("%s: ibv_create_cq(%u) failed: %m",
                      ep->groups->tl_name, UCT_MC_IB_TX_SLOTS);
            return UCS_ERR_IO_ERROR;
        }
    }

    init_attr.send_cq          = ep->tx_cq;
    init_attr.recv_cq          = ep->cq;
    init_attr.qp_type          = IBV_QPT_UD;
    init_attr.cap.max_send_wr  = UCT_MC_IB_TX_SLOTS;
    init_attr.cap.max_recv_wr  = UCT_MC_IB_RX_SLOTS;
    init_attr.cap.max_send_sge = 1;
    init_attr.cap.max_recv_sge = 1;
    ep->qp = ibv_create_qp(md->pd, &init_attr);
    if (ep->qp == NULL) {
        ucs_error("%s: ibv_create_qp(UD) failed: %m", ep->groups->tl_name);
        return UCS_ERR_IO_ERROR;
    }

    /* librdmacm's Q_Key for its UDP groups; the join may report another,
     * which replaces it (uct_mc_ib_ep_joined) */
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
        ucs_error("%s: bringing up the UD QP failed: %s", ep->groups->tl_name,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    if (ep->groups->dp->qp_init != NULL) {
        status = ep->groups->dp->qp_init(ep);
        if (status != UCS_OK) {
            return status;
        }
    }

    for (i = 0; i < UCT_MC_IB_TX_SLOTS; ++i) {
        ep->tx_free[i] = UCT_MC_IB_TX_SLOTS - 1 - i;
    }
    ep->tx_nfree = UCT_MC_IB_TX_SLOTS;

    for (i = UCT_MC_IB_TX_SLOTS; i < num_slots; ++i) {
        if (uct_mc_ib_ep_post_rx(ep, i) != UCS_OK) {
            return UCS_ERR_IO_ERROR;
        }
    }
    return UCS_OK;
}

/* Everything the endpoint holds on the device and the fabric; the
 * endpoint itself stays until uct_ep_destroy() */
static void uct_mc_ib_ep_release(uct_mc_ib_ep_t *ep)
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
            ucs_warn("%s: ibv_detach_mcast() failed: %s", ep->groups->tl_name,
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
    if (ep->mc_dest.ah != NULL) {
        ibv_destroy_ah(ep->mc_dest.ah);
        ep->mc_dest.ah = NULL;
    }
    if (ep->qp != NULL) {
        if ((ep->groups != NULL) && (ep->groups->dp->cleanup != NULL)) {
            ep->groups->dp->cleanup(ep);
        }
        ibv_destroy_qp(ep->qp);
        ep->qp = NULL;
    }
    if ((ep->tx_cq != NULL) && (ep->tx_cq != ep->cq)) {
        ibv_destroy_cq(ep->tx_cq);
    }
    ep->tx_cq = NULL;
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

    if (ep->groups != NULL) {
        ucs_list_del(&ep->list);
        ep->groups = NULL;
    }
}


/* ------------------------------------------------------------------------ */
/* Endpoint operations                                                     */

static void uct_mc_ib_ep_destroy(uct_ep_h tl_ep)
{
    uct_mc_ib_ep_t *ep = ucs_derived_of(tl_ep, uct_mc_ib_ep_t);

    if ((ep->super.rel != NULL) && (ep->qp != NULL)) {
        /* a member's final ACK: the root may still flush (ACKs on
         * demand); best effort, the QP goes right after */
        uct_mc_rel_leave(ep->super.rel, uct_mc_rel_ep_now());
    }
    uct_mc_ib_ep_release(ep);
    uct_mc_rel_ep_cleanup(&ep->super);
    ucs_free(ep->peers);
    ucs_free(ep);
}

static uct_iface_ops_t uct_mc_ib_group_ops = {
    .ep_am_short      = uct_mc_rel_ep_am_short,
    .ep_am_short_iov  = uct_base_ep_am_short_iov,
    .ep_am_bcopy      = uct_mc_rel_ep_am_bcopy,
    .ep_pending_add   = uct_mc_rel_ep_pending_add,
    .ep_pending_purge = uct_mc_rel_ep_pending_purge,
    .ep_flush         = uct_mc_rel_ep_flush,
    .ep_fence         = uct_base_ep_fence,
    .ep_destroy       = uct_mc_ib_ep_destroy
};


/* ------------------------------------------------------------------------ */
/* The extension API (uct_o2m.h)                                           */

int uct_mc_ib_is_ep(uct_ep_h ep)
{
    return (ep != NULL) &&
           (ep->iface->ops.ep_destroy == uct_mc_ib_ep_destroy);
}

ucs_status_t uct_mc_ib_group_ep_create(uct_mc_ib_groups_t *groups,
                                       const uct_o2m_group_params_t *params,
                                       uct_ep_h *ep_p)
{
    uct_mc_rel_params_t rel_params;
    uct_mc_ib_ep_t *ep;
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
    if (groups->bind_ip == 0) {
        ucs_error("%s: %s:%u has no IPv4 address to join groups with "
                  "(RoCE: a RoCE v2 IPv4 GID, UCX_IB_GID_INDEX; IB: an IPoIB "
                  "interface)", groups->tl_name,
                  uct_ib_device_name(uct_ib_iface_device(groups->ib_iface)),
                  groups->ib_iface->config.port_num);
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_list_for_each(ep, &groups->list, list) {
        if ((ep->conn == (uint32_t)params->group_id) &&
            (ep->epoch == (uint32_t)(params->group_id >> 32))) {
            return UCS_ERR_ALREADY_EXISTS;
        }
    }

    ep = ucs_calloc(1, sizeof(*ep), "mc_ib ep");
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ep->super.super.ep.iface = &groups->group_iface;
    ep->groups               = groups;
    ep->conn                 = (uint32_t)params->group_id;
    ep->epoch                = (uint32_t)(params->group_id >> 32);
    ep->num_members          = params->size;
    ep->my_rank              = params->my_index;
    ep->root                 = params->root_index;
    ep->status               = UCS_OK;
    ucs_list_add_tail(&groups->list, &ep->list);

    ep->mc_addr.sin_family      = AF_INET;
    ep->mc_addr.sin_addr.s_addr = htonl(uct_mc_ib_group_ip(
            params->group_id, groups->mc_base, groups->mc_count));

    status = uct_mc_rel_ep_init(&ep->super, groups->seg_size,
                                groups->seg_frags, groups->rel.mtu,
                                params->my_index == params->root_index);
    ep->peers = ucs_calloc(params->size, sizeof(*ep->peers),
                           "mc_ib peers");
    if ((status != UCS_OK) || (ep->peers == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    status = uct_mc_ib_ep_qp_create(ep);
    if (status != UCS_OK) {
        goto err;
    }

    rel_params.group_id    = ep->conn;
    rel_params.epoch       = ep->epoch;
    rel_params.num_members = ep->num_members;
    rel_params.my_rank     = ep->my_rank;
    rel_params.root        = ep->root;
    rel_params.init_psn    = (uint32_t)ucs_generate_uuid((uintptr_t)ep);
    rel_params.config      = &groups->rel;
    rel_params.ops         = &uct_mc_ib_rel_ops;
    rel_params.arg         = ep;
    status = uct_mc_rel_stream_create(&rel_params, uct_mc_rel_ep_now(),
                                      &ep->super.rel);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_mc_ib_ep_join(ep);
    if (status != UCS_OK) {
        goto err;
    }

    *ep_p = &ep->super.super.ep;
    return UCS_OK;

err:
    uct_mc_ib_ep_destroy(&ep->super.super.ep);
    return status;
}

ucs_status_t uct_mc_verbs_ep_counters(uct_ep_h tl_ep,
                                      uct_mc_verbs_ep_counters_t *counters)
{
    uct_mc_ib_ep_t *ep;
    uct_mc_rel_stats_t stats;

    if (!uct_mc_ib_is_ep(tl_ep) || (counters == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    ep        = ucs_derived_of(tl_ep, uct_mc_ib_ep_t);
    *counters = ep->cnt;
    if (ep->super.rel != NULL) {
        uct_mc_rel_stats(ep->super.rel, &stats);
        counters->rx_test_drop    = stats.test_drop;
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

void uct_mc_ib_ep_fail(uct_mc_ib_ep_t *ep, ucs_status_t status, uint64_t now)
{
    uct_mc_rel_fail(ep->super.rel, status, now);
}

/* The parent's init function, as UCS_CLASS_INIT_FUNC declares it */
typedef ucs_status_t
(*uct_mc_ib_parent_init_func_t)(void *self, ucs_class_t *cls,
                                int *init_count, uct_md_h md,
                                uct_worker_h worker,
                                const uct_iface_params_t *params,
                                const uct_iface_config_t *tl_config);

ucs_status_t uct_mc_ib_iface_init(void *self, ucs_class_t *cls,
                                  int *init_count, uct_mc_ib_ext_t *ext,
                                  const char *tl_name,
                                  const uct_mc_ib_datapath_t *dp,
                                  const uct_mc_ib_group_config_t *config,
                                  const uct_mc_ib_iface_ops_t *ops,
                                  uct_md_h md, uct_worker_h worker,
                                  const uct_iface_params_t *params,
                                  const uct_iface_config_t *tl_config)
{
    uct_mc_ib_parent_init_func_t parent_init =
            (uct_mc_ib_parent_init_func_t)cls->superclass->init;
    uct_iface_ops_t *iface_ops = &((uct_iface_t*)self)->ops;
    ucs_status_t status;

    status = parent_init(self, cls->superclass, init_count, md, worker,
                         params, tl_config);
    if (status != UCS_OK) {
        return status;
    }
    ++(*init_count);

    ext->ud_ops = *iface_ops;
    status      = uct_mc_ib_groups_init(&ext->groups, tl_name,
                                        (uct_ib_iface_t*)self, dp, config);
    if (status != UCS_OK) {
        return status;
    }

    iface_ops->iface_query    = ops->iface_query;
    iface_ops->iface_progress = ops->iface_progress;
    iface_ops->iface_close    = ops->iface_close;
    return UCS_OK;
}

ucs_status_t uct_mc_ib_iface_query(uct_mc_ib_ext_t *ext, uct_iface_h tl_iface,
                                   uct_iface_attr_t *attr)
{
    ucs_status_t status;

    status = ext->ud_ops.iface_query(tl_iface, attr);
    if (status != UCS_OK) {
        return status;
    }

    attr->latency.c += 10e-9;
    attr->overhead  += 10e-9;
    return UCS_OK;
}

unsigned uct_mc_ib_iface_progress(uct_mc_ib_ext_t *ext, uct_iface_h tl_iface)
{
    return ext->ud_ops.iface_progress(tl_iface) +
           uct_mc_ib_groups_progress(&ext->groups);
}

unsigned uct_mc_ib_groups_progress(uct_mc_ib_groups_t *groups)
{
    uct_mc_ib_ep_t *ep, *tmp;
    unsigned count = 0;
    uint64_t now;

    ucs_list_for_each_safe(ep, tmp, &groups->list, list) {
        now = uct_mc_rel_ep_now();
        uct_mc_ib_ep_cm_progress(ep, now);
        count += uct_mc_ib_ep_poll(ep, now);

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
static uint32_t uct_mc_ib_ipoib_addr(const union ibv_gid *gid)
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
static uint32_t uct_mc_ib_roce_addr(uct_ib_iface_t *ib_iface)
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

ucs_status_t uct_mc_ib_groups_init(uct_mc_ib_groups_t *groups,
                                   const char *tl_name,
                                   uct_ib_iface_t *ib_iface,
                                   const uct_mc_ib_datapath_t *dp,
                                   const uct_mc_ib_group_config_t *config)
{
    uct_mc_rel_config_t *rel = &groups->rel;
    size_t overhead          = UCT_MC_IB_HDR_LEN + UCT_MC_REL_HDR_LEN;
    struct in_addr base;
    size_t dev_mtu, mtu;
    ucs_status_t status;

    groups->tl_name          = tl_name;
    groups->ib_iface         = ib_iface;
    groups->dp               = dp;
    groups->group_iface.ops  = uct_mc_ib_group_ops;
    ucs_list_head_init(&groups->list);

    /* A UD datagram is at most the port's MTU */
    dev_mtu = 128ul << uct_ib_iface_port_attr(ib_iface)->active_mtu;
    mtu     = (config->super.mtu == 0) ? dev_mtu : config->super.mtu;
    if ((mtu > dev_mtu) || (mtu < overhead + 64)) {
        ucs_error("%s: GROUP_MTU %zu must be in %zu..%zu (the port's MTU)",
                  tl_name, mtu, overhead + 64, dev_mtu);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->super.seg_size < 1) || (config->super.seg_size > UCS_MBYTE)) {
        ucs_error("%s: GROUP_SEG_SIZE %zu must be in 1..1m", tl_name,
                  config->super.seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->drop > 1000) || (config->super.mcast_count < 1) ||
        (config->super.mcast_count > 65536)) {
        ucs_error("%s: GROUP_TEST_DROP %u must be in 0..1000, "
                  "GROUP_MCAST_COUNT %u in 1..65536", tl_name, config->drop,
                  config->super.mcast_count);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_mc_rel_ep_config_rel(&config->super, tl_name, "GROUP_",
                                      mtu, overhead, rel);
    if (status != UCS_OK) {
        return status;
    }
    rel->test_drop = config->drop; /* the engine's loss hook */

    if ((inet_pton(AF_INET, config->super.mcast_base, &base) != 1) ||
        !IN_MULTICAST(ntohl(base.s_addr)) ||
        !IN_MULTICAST(ntohl(base.s_addr) + config->super.mcast_count - 1)) {
        ucs_error("%s: GROUP_MCAST_BASE '%s' + GROUP_MCAST_COUNT %u is "
                  "not a range of IPv4 multicast addresses", tl_name,
                  config->super.mcast_base, config->super.mcast_count);
        return UCS_ERR_INVALID_PARAM;
    }

    groups->mc_base   = ntohl(base.s_addr);
    groups->mc_count  = config->super.mcast_count;
    groups->seg_size  = config->super.seg_size;
    groups->seg_frags = uct_mc_rel_ep_frags(config->super.seg_size,
                                            rel->mtu);
    groups->dgram_len = mtu;
    groups->is_roce   = uct_ib_iface_is_roce(ib_iface);

    /* The GID the groups' packets come from: RoCE v2 IPv4 or link-local
     * (the port's IPv4 address is then found like on IB), else the
     * interface serves point-to-point only */
    if (uct_mc_ib_check_gid(&ib_iface->gid_info.gid, groups->is_roce,
                            &groups->bind_ip) != UCS_OK) {
        ucs_debug("%s: GID index %u is neither RoCE v2 IPv4 nor "
                  "link-local: no groups on this interface", tl_name,
                  ib_iface->gid_info.gid_index);
        groups->bind_ip = 0;
    } else if (groups->bind_ip == 0) {
        groups->bind_ip = groups->is_roce ?
                          uct_mc_ib_roce_addr(ib_iface) :
                          uct_mc_ib_ipoib_addr(&ib_iface->gid_info.gid);
    }
    return UCS_OK;
}

void uct_mc_ib_groups_cleanup(uct_mc_ib_groups_t *groups)
{
    uct_mc_ib_ep_t *ep, *tmp;

    ucs_list_for_each_safe(ep, tmp, &groups->list, list) {
        ucs_warn("%s: interface closed with a group endpoint",
                 groups->tl_name);
        uct_mc_ib_ep_release(ep);
    }
}
