/**
 * ucx-o2m: the pure parts of the IB multicast transports (mc_verbs,
 * mc_mlx5) - the datagram header, the group's multicast address from the
 * group parameters, the GID and address handle checks (GROUP_TEST_DROP's
 * decision is the engine's loss hook, uct_mc_rel_test_drop).  No verbs
 * call and no device: the host tests run them
 * (test_mc_verbs.cc); mc_ib_group.c applies them.
 */
#ifndef UCT_MC_IB_WIRE_H_
#define UCT_MC_IB_WIRE_H_

#include <ucs/type/status.h>

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>


#define UCT_MC_IB_MAGIC      0x564d   /* "MV" little-endian */
#define UCT_MC_IB_HDR_LEN    8
#define UCT_MC_IB_MCAST_QPN  0xffffff /* a UD send to a multicast group */
#define UCT_MC_IB_IB_MLID_MIN 0xc000  /* IB multicast LIDs: 0xc000.. */
#define UCT_MC_IB_IB_MLID_MAX 0xfffe  /*                    ..0xfffe */


/* Kinds of datagram */
enum {
    UCT_MC_IB_KIND_GROUP = 1, /* an engine packet of the group stream */
    UCT_MC_IB_KIND_WHO   = 2, /* who has this rank? (multicast) */
    UCT_MC_IB_KIND_HELLO = 3, /* I have this rank (multicast at join,
                                    unicast as the answer to a WHO) */
    UCT_MC_IB_KIND_LAST
};


/* Datagram header, little-endian; WHO and HELLO carry uct_mc_ib_who_t */
typedef struct __attribute__((packed)) uct_mc_ib_hdr {
    uint16_t magic;
    uint8_t  kind;
    uint8_t  reserved;  /* 0 */
    uint32_t conn;      /* low 32 bits of the group id */
} uct_mc_ib_hdr_t;

typedef struct __attribute__((packed)) uct_mc_ib_who {
    uint32_t epoch;     /* high 32 bits of the group id */
    uint16_t rank;      /* WHO: the rank asked for; HELLO: the sender's */
    uint16_t reserved;  /* 0 */
} uct_mc_ib_who_t;


void uct_mc_ib_hdr_pack(uct_mc_ib_hdr_t *hdr, uint8_t kind,
                           uint32_t conn);

/**
 * Check a received datagram's header: UCS_OK and its kind, connection id
 * and payload, or UCS_ERR_INVALID_PARAM (too short, bad magic, reserved
 * bits or kind).  A WHO or HELLO must carry exactly a uct_mc_ib_who_t
 * with reserved 0.
 */
ucs_status_t uct_mc_ib_hdr_parse(const void *buf, size_t length,
                                    uint8_t *kind_p, uint32_t *conn_p,
                                    const void **payload_p,
                                    size_t *payload_len_p);

/**
 * The group's IPv4 multicast address (host order): @a base + a hash of
 * the 64-bit group id modulo @a count.  Every member computes the same one
 * from the group parameters; librdmacm maps it to the MGID.
 */
uint32_t uct_mc_ib_group_ip(uint64_t group_id, uint32_t base,
                               unsigned count);

/**
 * Whether a port's GID can carry the groups: on RoCE only a RoCE v2 IPv4
 * GID (::ffff:a.b.c.d, whose IPv4 address is returned in @a ipv4_p, network
 * order) or the link-local one (fe80::/64, @a ipv4_p 0); on InfiniBand any
 * GID.  UCS_ERR_UNSUPPORTED otherwise.
 */
ucs_status_t uct_mc_ib_check_gid(const union ibv_gid *gid, int is_roce,
                                    uint32_t *ipv4_p);

/**
 * The address handle of the group, from what the join reported
 * (@a join: librdmacm's rdma_ud_param.ah_attr), for sending from
 * @a port_num with the interface's GID index @a gid_index and service
 * level @a sl.  Checks that the join names a multicast group - a global
 * route to a multicast GID (ff00::/8, or on RoCE an IPv4-mapped
 * 224.0.0.0/4 address) and on InfiniBand a multicast LID - and returns
 * UCS_ERR_INVALID_PARAM otherwise.
 */
ucs_status_t uct_mc_ib_mc_ah_attr(const struct ibv_ah_attr *join,
                                     int is_roce, uint8_t port_num,
                                     uint8_t gid_index, uint8_t sl,
                                     struct ibv_ah_attr *ah_attr);

/**
 * The source GID of a received UD packet, from the 40 bytes in front of it
 * (@a has_grh: the completion's IBV_WC_GRH).  On RoCE v2 IPv4 those bytes
 * end with the IPv4 header (the source address gives an IPv4-mapped GID);
 * otherwise they are a GRH.  On InfiniBand without a GRH the sender is in
 * the subnet: @a own_gid.  UCS_ERR_INVALID_PARAM for RoCE without a GRH or
 * an IP header of another version.
 */
ucs_status_t uct_mc_ib_grh_sgid(const void *grh, int has_grh, int is_roce,
                                   const union ibv_gid *own_gid,
                                   union ibv_gid *sgid);

#endif
