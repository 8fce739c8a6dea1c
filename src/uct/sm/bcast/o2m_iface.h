/**
 * ucx-o2m: the interface shared by sm_bcast and sm_incast.
 *
 * Every interface owns one segment ("iface segment") holding
 *  - a multi-producer FIFO that point-to-point endpoints of other processes
 *    write into (what UCP uses), and
 *  - the directory of the groups rooted at this interface: each group has a
 *    segment of its own, created by the root, that members look up here by
 *    group id and map.
 * A peer learns everything about a segment's geometry from the segment's own
 * header, never from its own configuration.
 */
#ifndef UCT_O2M_IFACE_H_
#define UCT_O2M_IFACE_H_

#include "uct_o2m.h"
#include "o2m_seg.h"

#include <uct/base/uct_iface.h>
#include <uct/sm/base/sm_iface.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <ucs/time/time.h>
#include <ucs/arch/atomic.h>
#include <ucs/arch/bitops.h>
#include <ucs/arch/cpu.h>

#include <string.h>


#define UCT_O2M_IFACE_MAGIC     0x6f326d2d69666163ull /* "o2m-ifac" */
#define UCT_O2M_GROUP_MAGIC     0x6f326d2d67727570ull /* "o2m-grup" */
#define UCT_O2M_LAYOUT_VERSION  4
#define UCT_O2M_ZERR_RING       7    /* Failed zcopy reads kept for senders */
#define UCT_O2M_MAX_IOV         16
#define UCT_O2M_MAX_ZCOPY_HDR   256
#define UCT_O2M_MAX_AM_PER_PROG 16   /* Messages delivered per progress call */
#define UCT_O2M_IDLE_POLLS      16   /* Idle progress calls between clock reads */

/* A cache line; every field written by a different process gets its own */
#define UCT_O2M_LINE            UCS_SYS_CACHE_LINE_SIZE


/** Address of an interface: where its segment is. */
typedef struct uct_o2m_iface_addr {
    int32_t  pid;
    int32_t  seg_fd;
    uint64_t uuid;
} UCS_S_PACKED uct_o2m_iface_addr_t;


enum {
    UCT_O2M_ELEM_FLAG_ZCOPY  = UCS_BIT(0), /* data is a uct_o2m_zdesc_t */
    UCT_O2M_ELEM_FLAG_SHARED = UCS_BIT(1)  /* fan-in: reduced into the
                                              element's shared buffer */
};


/**
 * One message slot of a ring or FIFO.  The header shares its cache line with
 * the first bytes of data, so a short message costs one line transfer.  The
 * writer fills length/am_id/flags/data, then stores seq with release
 * semantics; readers acquire seq and compare with the sequence they expect.
 */
typedef struct uct_o2m_elem {
    volatile uint64_t seq;    /* Sequence number + 1 once published */
    uint32_t          length; /* Bytes of active-message data */
    uint8_t           am_id;
    uint8_t           flags;
    uint16_t          reserved;
} uct_o2m_elem_t;

#define UCT_O2M_ELEM_DATA(_elem) ((void*)((uct_o2m_elem_t*)(_elem) + 1))


/**
 * A large message: the reader copies it with process_vm_readv straight from
 * the writer's buffer.  The header bytes follow the iov array.
 */
typedef struct uct_o2m_zdesc {
    int32_t  pid;
    uint32_t iovcnt;
    uint32_t header_length;
    uint32_t reserved;
    uint64_t length;          /* header + iov bytes */
    struct {
        uint64_t base;
        uint64_t len;
    } iov[UCT_O2M_MAX_IOV];
    uint8_t  header[UCT_O2M_MAX_ZCOPY_HDR];
} uct_o2m_zdesc_t;


/** A private copy of a ring or FIFO element header. */
typedef struct uct_o2m_elem_info {
    uint64_t length;  /* Inline: from the element; zcopy: from the zdesc */
    uint8_t  am_id;
    uint8_t  flags;
} uct_o2m_elem_info_t;


/**
 * Geometry of a peer's interface segment, checked against the mapped size:
 * what a sender or a group member uses of it.
 */
typedef struct uct_o2m_iface_geom {
    uint64_t dir_offset;
    uint64_t fifo_offset;
    unsigned max_groups;
    unsigned fifo_depth;
    size_t   elem_size;
} uct_o2m_iface_geom_t;


/**
 * Group directory entry in the root's iface segment.  A root that could not
 * create the group segment (out of memory) lists a refusal instead: seg_fd
 * -1 and its ucs_status_t in "refused", so that the members fail with it
 * instead of waiting for a segment that will never come.  Each member that
 * saw the refusal adds one to "seen"; the root reclaims the entry when all
 * of them have.
 */
typedef struct uct_o2m_dir_entry {
    volatile uint64_t group_id;
    volatile uint32_t in_use;  /* Set last, cleared first */
    int32_t           seg_fd;  /* -1 for a refusal */
    uint64_t          uuid;    /* Of the group segment, or of the refusal */
    int32_t           refused; /* UCS_OK, or the root's error */
    volatile uint32_t seen;    /* Refusal: members that saw it (written by
                                  them) */
} uct_o2m_dir_entry_t;


typedef struct uct_o2m_iface_seg {
    uint64_t          magic;
    uint64_t          uuid;
    uint32_t          version;
    uint32_t          fifo_depth; /* Power of 2 */
    uint32_t          elem_size;
    uint32_t          max_groups;
    uint64_t          dir_offset;
    uint64_t          fifo_offset;
    uct_o2m_proc_t    owner;
    /* Written by senders: next FIFO sequence to claim */
    volatile uint64_t head UCS_V_ALIGNED(UCT_O2M_LINE);
    /* Written by the owner: next FIFO sequence to consume */
    volatile uint64_t tail UCS_V_ALIGNED(UCT_O2M_LINE);
    /* Written by the owner: zcopy messages of the FIFO it could not read,
     * zerr[i % UCT_O2M_ZERR_RING] = ((seq + 1) << 8) | -status for the i-th
     * failure; written before tail moves past seq */
    volatile uint64_t zerr_count UCS_V_ALIGNED(UCT_O2M_LINE);
    volatile uint64_t zerr[UCT_O2M_ZERR_RING];
} UCS_V_ALIGNED(UCT_O2M_LINE) uct_o2m_iface_seg_t;


/** Configuration, common to sm_bcast and sm_incast. */
typedef struct uct_o2m_iface_config {
    uct_sm_iface_config_t super;
    unsigned              fifo_size;       /* Group ring depth */
    size_t                elem_size;       /* Ring element size (SEG_SIZE) */
    unsigned              p2p_fifo_size;   /* Point-to-point FIFO depth */
    unsigned              max_members;
    unsigned              max_groups;
    size_t                max_zcopy;
    size_t                ring_max;
    ucs_time_t            peer_timeout;    /* UCS_TIME_INFINITY: none */
    double                check_interval;
    ucs_ternary_auto_value_t cma;          /* Single-copy reads: y/n/try */
} uct_o2m_iface_config_t;


/** A peer's iface segment, mapped once per interface and shared by eps. */
typedef struct uct_o2m_peer_seg {
    ucs_list_link_t      list;
    uct_o2m_iface_addr_t addr;
    uct_o2m_iface_seg_t  *seg;
    size_t               size;
    unsigned             refcount;
    /* Private copies, checked when mapped: never read again from seg */
    uct_o2m_iface_geom_t geom;
    uct_o2m_proc_t       owner;
    void                 *fifo;
    uct_o2m_dir_entry_t  *dir;
} uct_o2m_peer_seg_t;



typedef struct uct_o2m_iface {
    uct_sm_iface_t        super;
    int                   is_incast;
    uct_o2m_proc_t        self;
    int                   seg_fd;
    uct_o2m_iface_seg_t   *seg;
    size_t                seg_size;  /* Bytes of the interface segment */
    uct_o2m_dir_entry_t   *dir;
    void                  *fifo;     /* Our point-to-point receive FIFO */
    uint64_t              rx_tail;   /* Next FIFO element to consume (the
                                        segment's tail is only published) */
    uint64_t              rx_dropped; /* FIFO elements dropped as corrupt */
    ucs_list_link_t       peer_segs; /* uct_o2m_peer_seg_t */
    ucs_list_link_t       eps;       /* All endpoints, see uct_o2m_ep_t */
    uct_o2m_watch_table_t *watches;  /* Peer processes, each watched once */
    /* Receive FIFO element claimed and not published: its claimer */
    struct {
        uint64_t          seq;
        uct_o2m_watch_t   *watch;    /* NULL when no element is stuck */
    } rx_stall;
    ucs_list_link_t       retired;   /* uct_o2m_retired_group_t */
    /* Private buffers for large messages and fan-in results; grown on
     * demand up to the configured max_zcopy (times members for gather) */
    void                  *rx_buf[2];
    size_t                rx_buf_size[2];
    ucs_time_t            next_check;
    unsigned              idle_polls;
    int                   cma;       /* Single-copy (zcopy) paths enabled */
    struct {
        unsigned          fifo_size;
        size_t            elem_size;      /* Ring element (SEG_SIZE) */
        unsigned          p2p_fifo_size;
        unsigned          max_members;
        unsigned          max_groups;
        unsigned          dir_entries;    /* Directory: max_groups live
                                             groups, the rest for retired */
        size_t            max_zcopy;
        size_t            ring_max;
        ucs_time_t        peer_timeout;   /* UCS_TIME_INFINITY: none */
        ucs_time_t        check_interval;
    } config;
} uct_o2m_iface_t;


extern ucs_config_field_t uct_o2m_iface_config_table[];

UCS_CLASS_DECLARE(uct_o2m_iface_t, uct_iface_ops_t*, uct_md_h, uct_worker_h,
                  const uct_iface_params_t*, const uct_iface_config_t*, int);


/* Interface operations shared by both transports */
ucs_status_t uct_o2m_iface_query_common(uct_iface_h tl_iface,
                                        uct_iface_attr_t *attr);
ucs_status_t uct_o2m_iface_get_address(uct_iface_h tl_iface,
                                       uct_iface_addr_t *addr);
int uct_o2m_iface_is_reachable(const uct_iface_h tl_iface,
                               const uct_device_addr_t *dev_addr,
                               const uct_iface_addr_t *iface_addr);
unsigned uct_o2m_iface_progress(uct_iface_h tl_iface);
ucs_status_t uct_o2m_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                 uct_completion_t *comp);

/* Peer iface segments */
ucs_status_t uct_o2m_iface_map_peer(uct_o2m_iface_t *iface,
                                    const uct_o2m_iface_addr_t *addr,
                                    uct_o2m_peer_seg_t **peer_p);
void uct_o2m_iface_unmap_peer(uct_o2m_iface_t *iface,
                              uct_o2m_peer_seg_t *peer);

/* Group directory of this interface */
/* @a refused: UCS_OK for a group segment, else the error that kept the
 * root from creating it (a refusal, seg_fd -1) */
ucs_status_t uct_o2m_iface_dir_add(uct_o2m_iface_t *iface, uint64_t group_id,
                                   int seg_fd, uint64_t uuid,
                                   ucs_status_t refused);
void uct_o2m_iface_dir_remove(uct_o2m_iface_t *iface, uint64_t group_id);
/* Members that saw the refusal listed for @a group_id (0 if none) */
unsigned uct_o2m_iface_dir_seen(uct_o2m_iface_t *iface, uint64_t group_id);

/* Check the peers of the interface's endpoints and of its receive FIFO */
void uct_o2m_iface_check_peers(uct_o2m_iface_t *iface);

/* Receive side (o2m_rx.c) */
/* Private receive buffer @a idx of at least @a size bytes */
void *uct_o2m_iface_rx_buf(uct_o2m_iface_t *iface, int idx, size_t size);

/* Read a large message described by @a zdesc into @a dst */
ucs_status_t uct_o2m_zcopy_read(const uct_o2m_zdesc_t *zdesc, void *dst);

/* Deliver what arrived in this interface's own receive FIFO */
unsigned uct_o2m_iface_rx_progress(uct_o2m_iface_t *iface);

/* Periodic: skip a receive FIFO element whose claimer died */
void uct_o2m_iface_rx_check(uct_o2m_iface_t *iface);

/* Deliver one element (also used by the fan-out receivers), inline data of
 * at most @a max_inline bytes.  A corrupt element: UCS_ERR_INVALID_PARAM
 * and *why_p says what is wrong; other errors leave it NULL.  @a failed
 * (NULL: none) is the writer's "failed" word: a large message read while
 * it became set is not delivered (see uct_o2m_ep_set_failed). */
ucs_status_t uct_o2m_deliver_elem(uct_o2m_iface_t *iface,
                                  uct_o2m_elem_t *elem, size_t max_inline,
                                  const volatile int32_t *failed,
                                  const char **why_p);

/* memcpy that accepts a NULL buffer with a zero length (am_short with no
 * payload, zcopy with no header) */
static UCS_F_ALWAYS_INLINE void uct_o2m_memcpy(void *dst, const void *src,
                                               size_t length)
{
    if (length > 0) {
        memcpy(dst, src, length);
    }
}


static UCS_F_ALWAYS_INLINE uct_o2m_elem_t *
uct_o2m_elem_at(void *base, size_t stride, uint64_t seq, unsigned depth)
{
    return (uct_o2m_elem_t*)UCS_PTR_BYTE_OFFSET(base,
                                                (seq & (depth - 1)) * stride);
}


/* Publish an element: everything written before becomes visible first */
static UCS_F_ALWAYS_INLINE void uct_o2m_elem_publish(uct_o2m_elem_t *elem,
                                                     uint64_t seq)
{
    __atomic_store_n(&elem->seq, seq + 1, __ATOMIC_RELEASE);
}


static UCS_F_ALWAYS_INLINE int uct_o2m_elem_ready(const uct_o2m_elem_t *elem,
                                                  uint64_t seq)
{
    return __atomic_load_n(&elem->seq, __ATOMIC_ACQUIRE) == (seq + 1);
}


/* The element of this interface's receive FIFO that message @a seq takes */
static UCS_F_ALWAYS_INLINE uct_o2m_elem_t *
uct_o2m_iface_fifo_elem(uct_o2m_iface_t *iface, uint64_t seq)
{
    return uct_o2m_elem_at(iface->fifo, iface->config.elem_size, seq,
                           iface->config.p2p_fifo_size);
}

#endif
