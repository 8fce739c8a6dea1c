/**
 * ucx-o2m: the reliable multicast engine, shared by the multicast
 * transports (mc_udp; mc_verbs and mc_mlx5 later).
 *
 * A stream is one root sending messages to the other members of a group,
 * identified by (group id, root rank, epoch).  Every member, the root
 * included, creates one uct_mc_rel_stream_t for it and feeds it what the
 * network brings (uct_mc_rel_recv) and the time (uct_mc_rel_progress); the
 * engine sends through the transport's callbacks.  It makes no system call,
 * reads no clock and starts no thread: time is the @a now argument
 * (nanoseconds, any origin, never decreasing), and the transport calls
 * uct_mc_rel_progress when uct_mc_rel_next_deadline says so.  All calls for
 * one stream must come from one thread at a time.
 *
 * Guarantees: a receiver delivers every message of the root exactly once,
 * in order, with the root's bytes, or the stream fails on every member
 * (uct_mc_rel_ops_t::failed) - never a gap, a duplicate or a reordering.
 * The engine fragments a message into packets of at most config->mtu
 * payload bytes and reassembles it; the transport sees packets only.
 *
 * Protocol (state machine, wire format, timers, knobs): docs/multicast.md.
 */
#ifndef UCT_MC_REL_H_
#define UCT_MC_REL_H_

#include "mc_rel_def.h"

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>


/* Destination of uct_mc_rel_ops_t::send: the group's multicast address */
#define UCT_MC_REL_DEST_MCAST (-1)

/* No deadline (uct_mc_rel_next_deadline) */
#define UCT_MC_REL_TIME_INF   UINT64_MAX


typedef struct uct_mc_rel_stream uct_mc_rel_stream_t;


/**
 * Tunables.  uct_mc_rel_config_default() fills the defaults; the transports
 * map their UCX configuration onto these (see docs/multicast.md, "Knobs").
 */
typedef struct uct_mc_rel_config {
    unsigned window;         /* send/receive window in packets, a power of
                                two, 2..32768: bounds the root's packets not
                                acknowledged by every member, and the memory
                                (window * (mtu + 80) bytes per stream) */
    unsigned radix;          /* fan-in of the ACK tree, 1..64: each member
                                handles the ACKs, NACKs and repairs of at
                                most this many children */
    size_t   mtu;            /* payload bytes per packet, 1..65535 - 40
                                (without the 40-byte header) */
    size_t   max_msg;        /* largest message, at most window * mtu (a
                                message is in the window whole); also
                                what a receiver accepts as a message
                                length */
    uint64_t reorder_slack;  /* ns a gap may stay open before its NACK,
                                at most rto_max */
    uint64_t rto_min;        /* ns, lower bound of the retransmission
                                timeout (NACK retry, the root's SYNC) */
    uint64_t rto_max;        /* ns, upper bound after back-off, at most
                                1 hour */
    uint64_t peer_timeout;   /* ns a member may stay silent while it is
                                waited on before the stream fails
                                (UCS_ERR_TIMED_OUT), at most 1 hour; 0:
                                no bound, only a member declared dead
                                fails it */
    unsigned remcast_thresh; /* the root re-multicasts a PSN when NACKs
                                report at least this many members missing
                                it within one RTO (else unicast); 0: auto,
                                max(2, members / 8) */
    unsigned test_drop;      /* testing only, 0..1000: the loss hook - this
                                member drops about this many per mille of
                                the first transmissions of data packets it
                                receives, the same ones on every run
                                (uct_mc_rel_test_drop of its rank and the
                                packet's index in the stream); repairs
                                pass, so every drop is repaired once; 0:
                                off */
    int      ack_per_msg;    /* 1: a member also ACKs the end of every
                                message on its own (a point-to-point
                                stream: UCP closes its endpoint with a
                                flush and may stop progressing its worker
                                once its own close is done, before the
                                root's SYNC could be answered); 0 (the
                                default): ACKs on demand only */
} uct_mc_rel_config_t;


/**
 * Callbacks of the transport.  None may call into the same stream.
 */
typedef struct uct_mc_rel_ops {
    /**
     * Send one packet: @a hdr (UCT_MC_REL_HDR_LEN bytes) followed by
     * @a length bytes of @a payload, to the member of rank @a dest or to
     * the multicast address (UCT_MC_REL_DEST_MCAST).  Returns UCS_OK when
     * sent (or lost: the engine recovers), UCS_ERR_NO_RESOURCE to be called
     * again for this data packet at the next progress (the deadline is then
     * 0: call uct_mc_rel_progress when the transport can send again);
     * repairs and control packets are not repeated, their timers cover
     * them.  The buffers are the engine's and valid only during the call.
     */
    ucs_status_t (*send)(void *arg, int dest, const void *hdr,
                         const void *payload, size_t length);

    /**
     * A whole message, in order: @a data is valid only during the call,
     * and 8-byte aligned.
     */
    void         (*deliver)(void *arg, const void *data, size_t length);

    /**
     * Optional (NULL: every member alive): 0 when the process of member
     * @a rank is gone for sure.  Called only for a member that is waited
     * on, at most once per retransmission timeout.
     */
    int          (*is_alive)(void *arg, unsigned rank);

    /**
     * Optional: the stream failed with @a status (called once); from then
     * on every call returns that status.
     */
    void         (*failed)(void *arg, ucs_status_t status);
} uct_mc_rel_ops_t;


typedef struct uct_mc_rel_params {
    uint32_t                   group_id;
    uint32_t                   epoch;
    unsigned                   num_members; /* 2..UCT_MC_REL_MAX_MEMBERS */
    unsigned                   my_rank;     /* 0..num_members - 1 */
    unsigned                   root;        /* 0..num_members - 1 */
    uint32_t                   init_psn;    /* root: PSN of its first
                                               packet (receivers learn it
                                               from the join probe) */
    const uct_mc_rel_config_t  *config;
    const uct_mc_rel_ops_t     *ops;
    void                       *arg;        /* passed to every callback */
} uct_mc_rel_params_t;


/*
 * Repair latency histogram (docs/multicast.md "Counters"): 4 buckets per
 * doubling from 1024 ns, so a bucket is at most 19 % wide.  Bucket 0 holds
 * latencies below 1024 ns; bucket i >= 1 holds [lo(i), lo(i + 1)) with
 * lo(i) = 2^(10 + (i - 1) / 4) * (4 + (i - 1) % 4) / 4; the last one also
 * everything above (from about 12.9 s).
 */
#define UCT_MC_REL_LAT_BUCKETS 96

static inline unsigned uct_mc_rel_lat_bucket(uint64_t ns)
{
    unsigned e, i;

    if (ns < 1024) {
        return 0;
    }
    e = 63 - __builtin_clzll(ns);
    i = 1 + (e - 10) * 4 + (unsigned)((ns >> (e - 2)) & 3);
    return (i < UCT_MC_REL_LAT_BUCKETS) ? i : UCT_MC_REL_LAT_BUCKETS - 1;
}

/* Lower bound of bucket @a i in ns (0 for bucket 0) */
static inline uint64_t uct_mc_rel_lat_bucket_low(unsigned i)
{
    return (i == 0) ? 0 :
           ((4ull + (i - 1) % 4) << (10 + (i - 1) / 4)) / 4;
}


/* Counters; drop[] by reason of uct_mc_rel_drop_t */
typedef struct uct_mc_rel_stats {
    uint64_t tx_data;         /* root: first transmissions of a packet */
    uint64_t tx_msgs;         /* root: messages accepted */
    uint64_t tx_repair_ucast; /* repairs sent by unicast (root or parent) */
    uint64_t tx_repair_mcast; /* root: PSNs re-multicast */
    uint64_t tx_nack;         /* NACK packets sent */
    uint64_t tx_ack;          /* ACK packets sent */
    uint64_t tx_sync;         /* PROBE and SYNC packets sent */
    uint64_t rx_data;         /* data packets stored (first copy) */
    uint64_t rx_dup;          /* data packets already had (harmless) */
    uint64_t rx_nack;         /* NACK packets received */
    uint64_t rx_msgs;         /* messages delivered */
    uint64_t drop[UCT_MC_REL_DROP_LAST];
    uint64_t test_drop;       /* first transmissions dropped by the loss
                                 hook (config test_drop) */
    /* Repairs received: packets whose first copy at this member was a
     * repair (the original was lost, or late past the repair).  Repair
     * latency of such a packet: from the @a now at which this member
     * learned the PSN exists without having it (a later packet's next-PSN
     * field, a SYNC, or a child's NACK) to the @a now of the repair's
     * arrival; 0 when the repair itself brought the news. */
    uint64_t rx_repaired;
    uint64_t repair_lat_sum;  /* ns, over rx_repaired packets */
    uint64_t repair_lat_max;  /* ns */
    uint64_t repair_lat[UCT_MC_REL_LAT_BUCKETS]; /* histogram */
} uct_mc_rel_stats_t;


/**
 * Fill @a config with the defaults (window 256, radix 4, mtu 1432,
 * max_msg 256 KiB, reorder slack 10 us, RTO 20 us .. 8 ms, no peer timeout,
 * automatic re-multicast threshold, no test drops).
 */
void uct_mc_rel_config_default(uct_mc_rel_config_t *config);

/**
 * Create this member's end of a stream and start the join: the root
 * multicasts probes until every member has answered through the tree;
 * uct_mc_rel_status() is UCS_INPROGRESS until then on the root.
 * Returns UCS_ERR_INVALID_PARAM for parameters out of range,
 * UCS_ERR_NO_MEMORY.
 */
ucs_status_t uct_mc_rel_stream_create(const uct_mc_rel_params_t *params,
                                      uint64_t now,
                                      uct_mc_rel_stream_t **stream_p);

/* Free the stream.  Nothing is sent: a member still waiting on it relies
 * on the liveness callback or the peer timeout. */
void uct_mc_rel_stream_destroy(uct_mc_rel_stream_t *stream);

/**
 * Root only: queue a message of @a length bytes (copied).  While the join
 * is in progress it waits in the window and goes out when the join ends.
 * Returns UCS_OK, UCS_ERR_NO_RESOURCE when the window has not enough free
 * packets (retry after progress), UCS_ERR_INVALID_PARAM for a message above
 * max_msg, or the stream's error.  The transport reports max_msg as its
 * largest message (larger ones are the layer above's to split).
 */
ucs_status_t uct_mc_rel_send(uct_mc_rel_stream_t *stream, const void *data,
                             size_t length, uint64_t now);

/**
 * A packet from the network (multicast or unicast), @a length bytes.  A
 * packet that fails a check is dropped and counted; duplicates are
 * counted and harmless.  Returns the stream's status (UCS_OK, or
 * UCS_INPROGRESS on a root still joining, or its error).
 */
ucs_status_t uct_mc_rel_recv(uct_mc_rel_stream_t *stream, const void *packet,
                             size_t length, uint64_t now);

/**
 * uct_mc_rel_recv() of a packet that reached this host at @a arrived (at
 * most @a now; the transport's receive time stamp, in the clock of @a now)
 * on a path where the root's earlier packets cannot be behind it (its
 * multicast socket: one sender, in order).  A gap it reveals is NACKed
 * reorder_slack after @a arrived rather than after @a now: a packet that
 * waited in the socket while the process had no CPU already gave a
 * reordered one its time, and the NACK goes at the next progress instead
 * of a scheduling slice later.  Repair latency still counts from @a now.
 */
ucs_status_t uct_mc_rel_recv_at(uct_mc_rel_stream_t *stream,
                                const void *packet, size_t length,
                                uint64_t now, uint64_t arrived);

/**
 * Run the timers that are due at @a now (NACK retries, SYNC and probe
 * retransmissions, liveness checks, the peer timeout), and resend data the
 * transport refused.  Returns the stream's status.
 */
ucs_status_t uct_mc_rel_progress(uct_mc_rel_stream_t *stream, uint64_t now);

/* When uct_mc_rel_progress must run next (UCT_MC_REL_TIME_INF: only on
 * uct_mc_rel_recv or uct_mc_rel_send) */
uint64_t uct_mc_rel_next_deadline(const uct_mc_rel_stream_t *stream);

/* UCS_INPROGRESS (root joining), UCS_OK, or the error the stream failed
 * with */
ucs_status_t uct_mc_rel_status(const uct_mc_rel_stream_t *stream);

/**
 * Root: UCS_OK when every message sent has been received by every member,
 * UCS_INPROGRESS before.  Receiver: UCS_OK when its subtree has
 * acknowledged all it received.  Or the stream's error.
 */
ucs_status_t uct_mc_rel_flush(const uct_mc_rel_stream_t *stream);

/**
 * Receiver: the user waits (@a expect != 0) or no longer waits for a
 * message from the root.  While it waits, the member asks the liveness
 * callback about the root after a retransmission timeout, backing off to
 * rto_max, and fails the stream when the root is gone; with peer_timeout
 * it also pings the root through the tree (a quiet root answers) and fails
 * when the root or the parent stays silent past it.  It sends nothing
 * else while it has all it knows of: a lost tail is revealed by the root's
 * SYNC.  Without it, a member that has received everything it heard of
 * cannot tell a root that is quiet from a root that is gone or cut off: it
 * learns of such a failure from the next packet of the group.  Stopping
 * to wait sends nothing: ACKs are on demand (the root's SYNC asks for
 * them), so a user that got its message and does not progress the stream
 * for a while holds nothing up until the root asks.
 */
void uct_mc_rel_expect(uct_mc_rel_stream_t *stream, int expect,
                       uint64_t now);

/**
 * A member is about to destroy its end of the stream: it sends its
 * subtree's cumulative ACK to its parent if the parent does not have it
 * (the final ACK: ACKs are on demand, and a member that is gone cannot
 * answer the root's SYNC).  Best effort, one packet; nothing on the root
 * or a failed stream.  Call it while the send callback still works.
 */
void uct_mc_rel_leave(uct_mc_rel_stream_t *stream, uint64_t now);

/* Root: free packets in the window (a message of n fragments fits when n
 * is at most this) */
unsigned uct_mc_rel_tx_space(const uct_mc_rel_stream_t *stream);

/* Fail the stream on every member with @a status (an error), e.g. when the
 * transport found a member gone */
void uct_mc_rel_fail(uct_mc_rel_stream_t *stream, ucs_status_t status,
                     uint64_t now);

void uct_mc_rel_stats(const uct_mc_rel_stream_t *stream,
                      uct_mc_rel_stats_t *stats);

/**
 * The loss hook's decision (config test_drop, a test facility): whether
 * member @a rank drops the first transmission of the data packet at
 * @a index in its stream (its PSN minus the stream's first): about
 * @a permille of them, a function of rank and index only, so the same
 * packets on every run; members drop different ones.
 */
int uct_mc_rel_test_drop(unsigned rank, uint32_t index, unsigned permille);

#endif
