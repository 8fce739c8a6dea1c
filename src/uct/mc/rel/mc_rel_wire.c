/**
 * ucx-o2m: packing and parsing of the reliable multicast header (the wire
 * format is described in mc_rel_def.h and docs/multicast.md).
 *
 * The parser trusts nothing: a field is read once from the caller's buffer
 * into host order, then checked.  Everything that does not need the stream
 * is checked here; a packet it accepts is still checked against the stream
 * (mc_rel.c) before any of it is used.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mc_rel.h"
#include "../../sm/bcast/o2m_mix.h"

#include <endian.h>
#include <string.h>


static const char *uct_mc_rel_drop_names[] = {
    [UCT_MC_REL_DROP_LENGTH] = "length",
    [UCT_MC_REL_DROP_MAGIC]  = "magic",
    [UCT_MC_REL_DROP_TYPE]   = "type",
    [UCT_MC_REL_DROP_FIELD]  = "field",
    [UCT_MC_REL_DROP_STREAM] = "stream",
    [UCT_MC_REL_DROP_EPOCH]  = "epoch",
    [UCT_MC_REL_DROP_RANK]   = "rank",
    [UCT_MC_REL_DROP_PSN]    = "psn",
    [UCT_MC_REL_DROP_SIZE]   = "size",
    [UCT_MC_REL_DROP_STATE]  = "state"
};

const char *uct_mc_rel_drop_name(uct_mc_rel_drop_t drop)
{
    if ((unsigned)drop >= UCT_MC_REL_DROP_LAST) {
        return "?";
    }
    return uct_mc_rel_drop_names[drop];
}

void uct_mc_rel_pack(const uct_mc_rel_hdr_t *hdr, void *buf)
{
    uct_mc_rel_wire_hdr_t wire;
    uint32_t w0 = 0, w1 = 0, aux = hdr->aux;

    switch (hdr->type) {
    case UCT_MC_REL_PKT_DATA:
        w0 = hdr->msg_len;
        w1 = hdr->offset;
        break;
    case UCT_MC_REL_PKT_NACK:
    case UCT_MC_REL_PKT_SYNC:
        w0 = (uint32_t)hdr->bitmap;
        w1 = (uint32_t)(hdr->bitmap >> 32);
        break;
    case UCT_MC_REL_PKT_ABORT:
        aux = (uint32_t)-(int32_t)hdr->status;
        break;
    default:
        break;
    }

    wire.magic       = htole16(UCT_MC_REL_MAGIC);
    wire.version     = UCT_MC_REL_VERSION;
    wire.type        = hdr->type;
    wire.flags       = htole16(hdr->flags);
    wire.src         = htole16(hdr->src);
    wire.group_id    = htole32(hdr->group_id);
    wire.epoch       = htole32(hdr->epoch);
    wire.root        = htole16(hdr->root);
    wire.payload_len = htole16(hdr->payload_len);
    wire.psn         = htole32(hdr->psn);
    wire.aux         = htole32(aux);
    wire.w0          = htole32(w0);
    wire.w1          = htole32(w1);
    wire.reserved    = 0;
    memcpy(buf, &wire, sizeof(wire));
}

/* Checks of the type-specific fields; returns the drop reason or
 * UCT_MC_REL_DROP_LAST when they are fine */
static uct_mc_rel_drop_t
uct_mc_rel_check_fields(uct_mc_rel_hdr_t *hdr, uint32_t w0, uint32_t w1)
{
    int32_t status;

    if ((hdr->type != UCT_MC_REL_PKT_DATA) && (hdr->payload_len != 0)) {
        return UCT_MC_REL_DROP_LENGTH;
    }

    switch (hdr->type) {
    case UCT_MC_REL_PKT_DATA:
        hdr->msg_len = w0;
        hdr->offset  = w1;
        /* within its message, not empty unless the message is, the last
         * fragment (and only it) asks for an ACK, not beyond what the sender
         * says it sent */
        if ((hdr->offset > hdr->msg_len) ||
            (hdr->payload_len > hdr->msg_len - hdr->offset) ||
            ((hdr->payload_len == 0) && (hdr->msg_len != 0)) ||
            (!!(hdr->flags & UCT_MC_REL_FLAG_ACK_REQ) !=
             (hdr->offset + hdr->payload_len == hdr->msg_len)) ||
            !uct_mc_rel_psn_lt(hdr->psn, hdr->aux)) {
            return UCT_MC_REL_DROP_FIELD;
        }
        return UCT_MC_REL_DROP_LAST;
    case UCT_MC_REL_PKT_PROBE:
        if ((hdr->aux != hdr->psn) || (w0 != 0) || (w1 != 0)) {
            return UCT_MC_REL_DROP_FIELD;
        }
        return UCT_MC_REL_DROP_LAST;
    case UCT_MC_REL_PKT_SYNC:
        /* a drained window (acked == next) waits for no subtree */
        hdr->bitmap = ((uint64_t)w1 << 32) | w0;
        if (!uct_mc_rel_psn_le(hdr->psn, hdr->aux) ||
            ((hdr->psn == hdr->aux) && (hdr->bitmap != 0))) {
            return UCT_MC_REL_DROP_FIELD;
        }
        return UCT_MC_REL_DROP_LAST;
    case UCT_MC_REL_PKT_ACK:
        if ((hdr->aux != 0) || (w0 != 0) || (w1 != 0)) {
            return UCT_MC_REL_DROP_FIELD;
        }
        return UCT_MC_REL_DROP_LAST;
    case UCT_MC_REL_PKT_NACK:
        hdr->bitmap = ((uint64_t)w1 << 32) | w0;
        if ((hdr->aux == 0) || (hdr->aux > UCT_MC_REL_MAX_MEMBERS) ||
            (hdr->bitmap == 0)) {
            return UCT_MC_REL_DROP_FIELD;
        }
        return UCT_MC_REL_DROP_LAST;
    case UCT_MC_REL_PKT_ABORT:
        /* aux = -status, an error code: 1 .. -(UCS_ERR_LAST + 1) */
        if ((hdr->psn != 0) || (w0 != 0) || (w1 != 0) ||
            (hdr->aux == 0) || (hdr->aux >= (uint32_t)-UCS_ERR_LAST)) {
            return UCT_MC_REL_DROP_FIELD;
        }
        status      = -(int32_t)hdr->aux;
        hdr->status = (ucs_status_t)status;
        return UCT_MC_REL_DROP_LAST;
    default:
        return UCT_MC_REL_DROP_TYPE;
    }
}

ucs_status_t uct_mc_rel_parse(const void *buf, size_t length,
                              uct_mc_rel_hdr_t *hdr,
                              uct_mc_rel_drop_t *drop_p)
{
    uct_mc_rel_wire_hdr_t wire;
    uct_mc_rel_drop_t drop;
    uint16_t allowed;

    if (length < sizeof(wire)) {
        drop = UCT_MC_REL_DROP_LENGTH;
        goto out_drop;
    }

    memcpy(&wire, buf, sizeof(wire));
    if ((le16toh(wire.magic) != UCT_MC_REL_MAGIC) ||
        (wire.version != UCT_MC_REL_VERSION)) {
        drop = UCT_MC_REL_DROP_MAGIC;
        goto out_drop;
    }

    memset(hdr, 0, sizeof(*hdr));
    hdr->type        = wire.type;
    hdr->flags       = le16toh(wire.flags);
    hdr->src         = le16toh(wire.src);
    hdr->group_id    = le32toh(wire.group_id);
    hdr->epoch       = le32toh(wire.epoch);
    hdr->root        = le16toh(wire.root);
    hdr->payload_len = le16toh(wire.payload_len);
    hdr->psn         = le32toh(wire.psn);
    hdr->aux         = le32toh(wire.aux);

    switch (hdr->type) {
    case UCT_MC_REL_PKT_DATA:
        allowed = UCT_MC_REL_DATA_FLAGS;
        break;
    case UCT_MC_REL_PKT_ACK:
        allowed = UCT_MC_REL_ACK_FLAGS;
        break;
    case UCT_MC_REL_PKT_ABORT:
        allowed = UCT_MC_REL_FLAG_CONFIRM;
        break;
    case UCT_MC_REL_PKT_PROBE:
    case UCT_MC_REL_PKT_SYNC:
    case UCT_MC_REL_PKT_NACK:
        allowed = 0;
        break;
    default:
        drop = UCT_MC_REL_DROP_TYPE;
        goto out_drop;
    }

    if (hdr->flags & ~allowed) {
        drop = UCT_MC_REL_DROP_TYPE;
        goto out_drop;
    }

    if (length != sizeof(wire) + hdr->payload_len) {
        drop = UCT_MC_REL_DROP_LENGTH;
        goto out_drop;
    }

    if (wire.reserved != 0) {
        drop = UCT_MC_REL_DROP_FIELD;
        goto out_drop;
    }

    drop = uct_mc_rel_check_fields(hdr, le32toh(wire.w0), le32toh(wire.w1));
    if (drop != UCT_MC_REL_DROP_LAST) {
        goto out_drop;
    }

    return UCS_OK;

out_drop:
    *drop_p = drop;
    return UCS_ERR_INVALID_PARAM;
}

int uct_mc_rel_test_drop(unsigned rank, uint32_t index, unsigned permille)
{
    return (permille > 0) &&
           ((uct_o2m_mix64(((uint64_t)rank << 32) | index) % 1000) <
            permille);
}
