/**
 * ucx-o2m: the receive side of an interface: messages of its own
 * point-to-point FIFO and of the fan-out rings it reads are delivered here
 * to the active-message handlers (see o2m_p2p.h for the FIFO protocol).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "o2m_iface.h"
#include "o2m_p2p.h"
#include "o2m_check.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


void *uct_o2m_iface_rx_buf(uct_o2m_iface_t *iface, int idx, size_t size)
{
    void *buf;

    if ((iface->rx_buf[idx] != NULL) && (size <= iface->rx_buf_size[idx])) {
        return iface->rx_buf[idx];
    }

    /* Never NULL for an empty message either */
    size = ucs_max(size, UCT_O2M_LINE);
    buf  = ucs_malloc(size, "o2m rx buffer");
    if (buf == NULL) {
        ucs_error("failed to allocate a %zu-byte receive buffer", size);
        return NULL;
    }

    ucs_free(iface->rx_buf[idx]);
    iface->rx_buf[idx]      = buf;
    iface->rx_buf_size[idx] = size;
    return buf;
}

ucs_status_t uct_o2m_zcopy_read(const uct_o2m_zdesc_t *zdesc, void *dst)
{
    struct iovec riov[UCT_O2M_MAX_IOV];
    uint32_t i;

    /* A private copy checked by uct_o2m_zdesc_check(): iovcnt and
     * header_length fit the arrays, the parts add up to length */
    ucs_assert(zdesc->iovcnt <= UCT_O2M_MAX_IOV);
    ucs_assert(zdesc->header_length <= zdesc->length);
    memcpy(dst, zdesc->header, zdesc->header_length);
    for (i = 0; i < zdesc->iovcnt; ++i) {
        riov[i].iov_base = (void*)(uintptr_t)zdesc->iov[i].base;
        riov[i].iov_len  = zdesc->iov[i].len;
    }

    return uct_o2m_cma_read(zdesc->pid,
                            UCS_PTR_BYTE_OFFSET(dst, zdesc->header_length),
                            riov, zdesc->iovcnt,
                            zdesc->length - zdesc->header_length);
}

ucs_status_t uct_o2m_deliver_elem(uct_o2m_iface_t *iface,
                                  uct_o2m_elem_t *elem, size_t max_inline,
                                  const volatile int32_t *failed,
                                  const char **why_p)
{
    ucs_status_t writer_status;
    uct_o2m_elem_info_t info;
    uct_o2m_zdesc_t zdesc;
    ucs_status_t status;
    void *data;

    *why_p = NULL;
    status = uct_o2m_elem_parse(elem, max_inline, &info, why_p);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    if (ucs_likely(!(info.flags & UCT_O2M_ELEM_FLAG_ZCOPY))) {
        uct_iface_invoke_am(&iface->super.super, info.am_id,
                            UCT_O2M_ELEM_DATA(elem), info.length, 0);
        return UCS_OK;
    }

    status = uct_o2m_zdesc_copy(UCT_O2M_ELEM_DATA(elem),
                                iface->config.max_zcopy, &zdesc, why_p);
    if (status != UCS_OK) {
        return status;
    }

    data = uct_o2m_iface_rx_buf(iface, 0, ucs_max(zdesc.length, 1));
    if (data == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_o2m_zcopy_read(&zdesc, data);
    if (status != UCS_OK) {
        return status;
    }

    /*
     * A writer that failed has completed its sends with an error and its
     * user may already rewrite the buffer we just read: the copy is good
     * only if the writer had not failed when the read ended.  Pairs with
     * the fence in uct_o2m_ep_set_failed (both sides store, then load).
     */
    if (failed != NULL) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        writer_status = (ucs_status_t)__atomic_load_n(failed,
                                                      __ATOMIC_RELAXED);
        if (writer_status != UCS_OK) {
            return (writer_status < 0) ? writer_status :
                                         UCS_ERR_INVALID_PARAM;
        }
    }

    uct_iface_invoke_am(&iface->super.super, info.am_id, data, zdesc.length,
                        0);
    return UCS_OK;
}

/* A corrupt element of our FIFO: its sender is unknown, so nobody can be
 * failed; the FIFO goes on */
static void uct_o2m_p2p_rx_drop(uct_o2m_iface_t *iface, uint64_t seq,
                                const char *why)
{
    if (iface->rx_dropped++ == 0) {
        ucs_error("%s iface %p: dropped corrupt element %" PRIu64 " of the "
                  "receive FIFO (%s); further drops are counted silently",
                  uct_o2m_tl_name(iface->is_incast), iface, seq, why);
    } else {
        ucs_debug("iface %p: dropped corrupt FIFO element %" PRIu64 " (%s), "
                  "%" PRIu64 " so far", iface, seq, why, iface->rx_dropped);
    }
}

void uct_o2m_iface_rx_check(uct_o2m_iface_t *iface)
{
    uct_o2m_iface_seg_t *seg = iface->seg;
    uint64_t tail            = iface->rx_tail;
    uct_o2m_proc_t claimer;
    uct_o2m_elem_t *elem;
    uint64_t word;
    char state;

    elem = uct_o2m_iface_fifo_elem(iface, tail);
    word = __atomic_load_n(&elem->seq, __ATOMIC_ACQUIRE);
    if (!(word & UCT_O2M_CLAIM_FLAG) ||
        (((word >> UCT_O2M_CLAIM_PID_BITS) & UCT_O2M_CLAIM_SEQ_MASK) !=
         (tail & UCT_O2M_CLAIM_SEQ_MASK))) {
        /* Empty or published: nothing is stuck */
        uct_o2m_watch_put(iface->watches, iface->rx_stall.watch);
        iface->rx_stall.watch = NULL;
        return;
    }

    claimer.pid = word & UCS_MASK(UCT_O2M_CLAIM_PID_BITS);
    if ((iface->rx_stall.watch == NULL) || (iface->rx_stall.seq != tail)) {
        /* First seen stuck: the claimer is whoever has that pid now (a
         * claimer that died and whose pid was reused before this check is
         * taken for alive) */
        uct_o2m_watch_put(iface->watches, iface->rx_stall.watch);
        iface->rx_stall.watch = NULL;
        if (uct_o2m_proc_stat(claimer.pid, &state, &claimer.start_time) !=
            UCS_OK) {
            claimer.start_time = 0; /* Unknown; a free pid reads as exited */
        }
        if (uct_o2m_watch_get(iface->watches, &claimer,
                              &iface->rx_stall.watch) != UCS_OK) {
            return;
        }
        iface->rx_stall.seq = tail;
    }

    if (!uct_o2m_watch_has_exited(iface->rx_stall.watch)) {
        return; /* Slow is not dead */
    }

    ucs_error("receive FIFO: sender pid %d died while writing message %"
              PRIu64 "; skipped it", claimer.pid, tail);
    uct_o2m_watch_put(iface->watches, iface->rx_stall.watch);
    iface->rx_stall.watch = NULL;
    /* Free for the next round, then consumed */
    __atomic_store_n(&elem->seq, tail + 1, __ATOMIC_RELAXED);
    iface->rx_tail = tail + 1;
    __atomic_store_n(&seg->tail, tail + 1, __ATOMIC_RELEASE);
}

/* Tell the sender of FIFO message @a seq that it was not delivered */
static void uct_o2m_p2p_rx_lost(uct_o2m_iface_t *iface, uint64_t seq,
                                ucs_status_t status)
{
    uct_o2m_iface_seg_t *seg = iface->seg;
    uint64_t count           = seg->zerr_count; /* Only we write it */

    seg->zerr[count % UCT_O2M_ZERR_RING] = ((seq + 1) << 8) |
                                           (uint8_t)-status;
    __atomic_store_n(&seg->zerr_count, count + 1, __ATOMIC_RELEASE);
}

unsigned uct_o2m_iface_rx_progress(uct_o2m_iface_t *iface)
{
    uct_o2m_iface_seg_t *seg = iface->seg;
    uint64_t tail            = iface->rx_tail;
    size_t max_inline        = iface->config.elem_size -
                               sizeof(uct_o2m_elem_t);
    unsigned count           = 0;
    uct_o2m_elem_t *elem;
    ucs_status_t status;
    const char *why;

    while (count < UCT_O2M_MAX_AM_PER_PROG) {
        elem = uct_o2m_iface_fifo_elem(iface, tail);
        if (!uct_o2m_elem_ready(elem, tail)) {
            break;
        }

        status = uct_o2m_deliver_elem(iface, elem, max_inline, NULL, &why);
        if (ucs_unlikely(status != UCS_OK)) {
            if (why != NULL) {
                uct_o2m_p2p_rx_drop(iface, tail, why);
            } else {
                /* Its sender's completion says so, see uct_o2m_iface_seg_t */
                ucs_error("dropped a message (am_id %d) from the receive "
                          "FIFO: %s", elem->am_id, ucs_status_string(status));
                uct_o2m_p2p_rx_lost(iface, tail, status);
            }
        }

        ++tail;
        ++count;
        iface->rx_tail = tail;
        __atomic_store_n(&seg->tail, tail, __ATOMIC_RELEASE);
    }

    return count;
}
