/**
 * ucx-o2m: the IB multicast transports' pure parts (mc_ib_wire.h): header,
 * group address, GID and address handle checks, test drops.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_ib_wire.h"
#include "../../sm/bcast/o2m_mix.h"

#include <arpa/inet.h>
#include <endian.h>
#include <string.h>


void uct_mc_ib_hdr_pack(uct_mc_ib_hdr_t *hdr, uint8_t kind,
                           uint32_t conn)
{
    hdr->magic    = htole16(UCT_MC_IB_MAGIC);
    hdr->kind     = kind;
    hdr->reserved = 0;
    hdr->conn     = htole32(conn);
}

ucs_status_t uct_mc_ib_hdr_parse(const void *buf, size_t length,
                                    uint8_t *kind_p, uint32_t *conn_p,
                                    const void **payload_p,
                                    size_t *payload_len_p)
{
    const uct_mc_ib_hdr_t *hdr = buf;
    const uct_mc_ib_who_t *who;
    size_t payload_len;

    if ((length < sizeof(*hdr)) ||
        (le16toh(hdr->magic) != UCT_MC_IB_MAGIC) ||
        (hdr->reserved != 0) || (hdr->kind == 0) ||
        (hdr->kind >= UCT_MC_IB_KIND_LAST)) {
        return UCS_ERR_INVALID_PARAM;
    }

    payload_len = length - sizeof(*hdr);
    who         = (const void*)(hdr + 1);
    if ((hdr->kind != UCT_MC_IB_KIND_GROUP) &&
        ((payload_len != sizeof(*who)) || (who->reserved != 0))) {
        return UCS_ERR_INVALID_PARAM;
    }

    *kind_p        = hdr->kind;
    *conn_p        = le32toh(hdr->conn);
    *payload_p     = who;
    *payload_len_p = payload_len;
    return UCS_OK;
}

uint32_t uct_mc_ib_group_ip(uint64_t group_id, uint32_t base,
                               unsigned count)
{
    return base + (uint32_t)(uct_o2m_mix64(group_id) % count);
}

static int uct_mc_ib_gid_is_v4mapped(const union ibv_gid *gid)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0xff, 0xff};

    return !memcmp(gid->raw, prefix, sizeof(prefix));
}

ucs_status_t uct_mc_ib_check_gid(const union ibv_gid *gid, int is_roce,
                                    uint32_t *ipv4_p)
{
    static const uint8_t link_local[8] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0};

    *ipv4_p = 0;
    if (!is_roce) {
        return UCS_OK;
    }

    if (uct_mc_ib_gid_is_v4mapped(gid)) {
        memcpy(ipv4_p, &gid->raw[12], sizeof(*ipv4_p));
        return UCS_OK;
    }

    /* A global IPv6 GID (RoCE v2 IPv6 or v1): librdmacm would route the
     * group through another GID than the interface's */
    return memcmp(gid->raw, link_local, sizeof(link_local)) ?
           UCS_ERR_UNSUPPORTED : UCS_OK;
}

ucs_status_t uct_mc_ib_mc_ah_attr(const struct ibv_ah_attr *join,
                                     int is_roce, uint8_t port_num,
                                     uint8_t gid_index, uint8_t sl,
                                     struct ibv_ah_attr *ah_attr)
{
    const union ibv_gid *mgid = &join->grh.dgid;
    uint32_t ipv4;
    int is_mcast_gid;

    if (uct_mc_ib_gid_is_v4mapped(mgid)) {
        /* RoCE v2 IPv4: the group's IPv4 address itself */
        memcpy(&ipv4, &mgid->raw[12], sizeof(ipv4));
        is_mcast_gid = is_roce && IN_MULTICAST(ntohl(ipv4));
    } else {
        is_mcast_gid = (mgid->raw[0] == 0xff);
    }

    if (!join->is_global || !is_mcast_gid ||
        (!is_roce && ((join->dlid < UCT_MC_IB_IB_MLID_MIN) ||
                      (join->dlid > UCT_MC_IB_IB_MLID_MAX)))) {
        return UCS_ERR_INVALID_PARAM;
    }

    memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->is_global      = 1;
    ah_attr->grh.dgid       = *mgid;
    ah_attr->grh.sgid_index = gid_index;
    /* The packets never leave the subnet (IB) or link (RoCE) */
    ah_attr->grh.hop_limit  = 1;
    ah_attr->dlid           = is_roce ? 0 : join->dlid;
    ah_attr->sl             = sl;
    ah_attr->port_num       = port_num;
    return UCS_OK;
}

ucs_status_t uct_mc_ib_grh_sgid(const void *grh, int has_grh, int is_roce,
                                   const union ibv_gid *own_gid,
                                   union ibv_gid *sgid)
{
    const uint8_t *bytes = grh;
    const uint8_t *ip4   = bytes + 20; /* the last 20 of the 40 bytes */

    if (!has_grh) {
        if (is_roce) {
            return UCS_ERR_INVALID_PARAM;
        }
        *sgid = *own_gid;
        return UCS_OK;
    }

    if (is_roce && ((ip4[0] >> 4) == 4)) {
        memset(sgid, 0, sizeof(*sgid));
        sgid->raw[10] = 0xff;
        sgid->raw[11] = 0xff;
        memcpy(&sgid->raw[12], ip4 + 12, 4); /* IPv4 source address */
        return UCS_OK;
    }

    /* GRH: IP version 6 in the first 4 bits, source GID at byte 8 */
    if ((bytes[0] >> 4) != 6) {
        return UCS_ERR_INVALID_PARAM;
    }
    memcpy(sgid->raw, bytes + 8, sizeof(sgid->raw));
    return UCS_OK;
}
