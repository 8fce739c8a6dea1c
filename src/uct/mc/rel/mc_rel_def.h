/**
 * ucx-o2m: wire format of the reliable multicast engine (mc_rel.c).
 *
 * Every packet of a stream - data on the multicast address, repairs and
 * control on unicast - starts with the same 40-byte header, little-endian,
 * followed by payload_len bytes of data (DATA only).  The parser
 * (uct_mc_rel_parse) checks everything that can be checked without a
 * stream: the checks that need one (group, root, epoch, sender rank and
 * role, PSN window, MTU) are in mc_rel.c.  Field by field, with its check,
 * in docs/multicast.md.
 */
#ifndef UCT_MC_REL_DEF_H_
#define UCT_MC_REL_DEF_H_

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>


#define UCT_MC_REL_MAGIC       0x4c52  /* "RL" little-endian */
#define UCT_MC_REL_VERSION     2       /* 2: the transports' messages
                                          carry an 8-byte AM header
                                          (mc_rel_ep.h), the data aligned */
#define UCT_MC_REL_HDR_LEN     40
#define UCT_MC_REL_MAX_MEMBERS 65535   /* ranks are 16 bits */
#define UCT_MC_REL_NACK_BITS   64      /* PSNs one NACK can name */


/* Packet types */
typedef enum {
    UCT_MC_REL_PKT_DATA  = 1, /* a fragment; root (multicast or repair) or
                                 parent (unicast repair) */
    UCT_MC_REL_PKT_PROBE = 2, /* join probe, root -> all (multicast) */
    UCT_MC_REL_PKT_SYNC  = 3, /* the root's window: tail detection, answer
                                 to a WANT_SYNC (multicast or unicast) */
    UCT_MC_REL_PKT_ACK   = 4, /* child -> parent: subtree cumulative ACK */
    UCT_MC_REL_PKT_NACK  = 5, /* child -> parent: missing PSNs */
    UCT_MC_REL_PKT_ABORT = 6, /* any -> any: the stream failed */
    UCT_MC_REL_PKT_LAST
} uct_mc_rel_pkt_type_t;


/* Flags, per type (any other bit drops the packet) */
enum {
    UCT_MC_REL_FLAG_REPAIR    = 1u << 0, /* DATA: a retransmission */
    UCT_MC_REL_FLAG_ACK_REQ   = 1u << 1, /* DATA: last fragment of a message,
                                            ACK when it is in */
    UCT_MC_REL_FLAG_JOINED    = 1u << 2, /* ACK: the whole subtree joined */
    UCT_MC_REL_FLAG_WANT_SYNC = 1u << 3, /* ACK: the sender waits for news
                                            from the root (silence) */
    UCT_MC_REL_FLAG_CONFIRM   = 1u << 4  /* ABORT: the answer to an ABORT
                                            (never answered itself) */
};

#define UCT_MC_REL_DATA_FLAGS  (UCT_MC_REL_FLAG_REPAIR | \
                                UCT_MC_REL_FLAG_ACK_REQ)
#define UCT_MC_REL_ACK_FLAGS   (UCT_MC_REL_FLAG_JOINED | \
                                UCT_MC_REL_FLAG_WANT_SYNC)


/**
 * The header as it is on the wire (little-endian, packed, 40 bytes).
 *
 *   type   psn                 aux              w0          w1
 *   DATA   PSN of the fragment next PSN known   msg_len     offset
 *   PROBE  first PSN           = psn            0           0
 *   SYNC   acked (window tail) next PSN         lagging low lagging high
 *                                               (bit i: the root's child
 *                                               i's subtree holds acked)
 *   ACK    cumulative (all     0                0           0
 *          before it received in the subtree)
 *   NACK   base                count (members   bitmap low  bitmap high
 *                              missing, >= 1)   (bit i: base + i missing)
 *   ABORT  0                   -status          0           0
 */
typedef struct __attribute__((packed)) uct_mc_rel_wire_hdr {
    uint16_t magic;
    uint8_t  version;
    uint8_t  type;
    uint16_t flags;
    uint16_t src;          /* sender's rank in the group */
    uint32_t group_id;
    uint32_t epoch;
    uint16_t root;         /* root rank: with group_id and epoch, the stream */
    uint16_t payload_len;  /* bytes after the header (DATA only) */
    uint32_t psn;
    uint32_t aux;
    uint32_t w0;
    uint32_t w1;
    uint32_t reserved;     /* 0 */
} uct_mc_rel_wire_hdr_t;


/* A parsed header (host order) */
typedef struct uct_mc_rel_hdr {
    uint8_t  type;
    uint16_t flags;
    uint16_t src;
    uint32_t group_id;
    uint32_t epoch;
    uint16_t root;
    uint16_t payload_len;
    uint32_t psn;
    uint32_t aux;
    uint32_t msg_len;      /* DATA */
    uint32_t offset;       /* DATA */
    uint64_t bitmap;       /* NACK: PSNs missing; SYNC: the root's
                              children whose subtree holds its window */
    ucs_status_t status;   /* ABORT */
} uct_mc_rel_hdr_t;


/* Why a packet was dropped (counters in uct_mc_rel_stats_t) */
typedef enum {
    UCT_MC_REL_DROP_LENGTH,  /* shorter than the header, or the length is
                                not header + payload_len */
    UCT_MC_REL_DROP_MAGIC,   /* magic or version */
    UCT_MC_REL_DROP_TYPE,    /* unknown type, or flags not of that type */
    UCT_MC_REL_DROP_FIELD,   /* fields inconsistent: a fragment beyond its
                                message, NACK without bits, a reserved or
                                unused field not 0, bad ABORT status */
    UCT_MC_REL_DROP_STREAM,  /* another group or root */
    UCT_MC_REL_DROP_EPOCH,   /* another epoch (an old or a new stream) */
    UCT_MC_REL_DROP_RANK,    /* sender out of range, or not allowed to send
                                this type to this member (tree role) */
    UCT_MC_REL_DROP_PSN,     /* PSN outside the window */
    UCT_MC_REL_DROP_SIZE,    /* payload above the MTU, message above the
                                maximum, fragment not matching its message */
    UCT_MC_REL_DROP_STATE,   /* not expected now (data before the join) */
    UCT_MC_REL_DROP_LAST
} uct_mc_rel_drop_t;


/* PSN comparisons, correct across the 32-bit wraparound as long as the
 * PSNs compared are less than 2^31 apart (windows are much smaller) */
static inline int uct_mc_rel_psn_lt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

static inline int uct_mc_rel_psn_le(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) <= 0;
}


/**
 * Parse and check the packet @a buf of @a length bytes.  Fills @a hdr and
 * returns UCS_OK, or returns UCS_ERR_INVALID_PARAM with *drop_p set to the
 * reason.  Pure: no logging, no allocation; the payload, if any, is at
 * buf + UCT_MC_REL_HDR_LEN, hdr->payload_len bytes.
 */
ucs_status_t uct_mc_rel_parse(const void *buf, size_t length,
                              uct_mc_rel_hdr_t *hdr,
                              uct_mc_rel_drop_t *drop_p);

/**
 * Write @a hdr in wire format to @a buf (UCT_MC_REL_HDR_LEN bytes).
 */
void uct_mc_rel_pack(const uct_mc_rel_hdr_t *hdr, void *buf);

/* Name of a drop reason, for logs and tests */
const char *uct_mc_rel_drop_name(uct_mc_rel_drop_t drop);

#endif
