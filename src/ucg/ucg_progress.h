/**
 * UCG progress queue: what ucg_progress() advances after the transports.
 * A started collective (and a record of requests parked after a failure)
 * enqueues itself with its own progress function, and leaves the queue when
 * it is done; the context drains the queue and knows nothing of what is in
 * it.  So the executor calls the context (ucg_coll_test progresses the
 * context) and the context calls the executor only through the queue (and
 * through what the executor registered: the AM handler of the sm
 * interfaces, the closers of the context's destroy).
 */
#ifndef UCG_PROGRESS_H_
#define UCG_PROGRESS_H_

#include <ucs/datastruct/list.h>

typedef struct ucg_progress_elem ucg_progress_elem_t;

/* What a progress function returns: 0 while the element stays in progress
 * and needs nothing of the context, else these flags */
enum {
    UCG_PROGRESS_COMPLETED = UCS_BIT(0), /* a collective completed (counted
                                            by ucg_progress) */
    UCG_PROGRESS_UCP       = UCS_BIT(1)  /* it waits for UCP: progress UCP
                                            at every call */
};

/** Advances @a elem; may dequeue it (and no other element).  Returns
 *  UCG_PROGRESS_* flags. */
typedef unsigned (*ucg_progress_cb_t)(ucg_progress_elem_t *elem);

struct ucg_progress_elem {
    ucs_list_link_t   list;    /* in ucg_progress_queue_t::elems */
    ucg_progress_cb_t cb;
};

typedef struct ucg_progress_queue {
    ucs_list_link_t   elems;   /* in the order they were enqueued */
    unsigned          gen;     /* drains so far: an element can tell the
                                  first visit of a drain */
} ucg_progress_queue_t;

static inline void ucg_progress_queue_init(ucg_progress_queue_t *queue)
{
    ucs_list_head_init(&queue->elems);
    queue->gen = 0;
}

static inline void ucg_progress_enqueue(ucg_progress_queue_t *queue,
                                        ucg_progress_elem_t *elem,
                                        ucg_progress_cb_t cb)
{
    elem->cb = cb;
    ucs_list_add_tail(&queue->elems, &elem->list);
}

static inline void ucg_progress_dequeue(ucg_progress_elem_t *elem)
{
    ucs_list_del(&elem->list);
}

/**
 * Call every element of @a queue once, in order (one enqueued meanwhile
 * may wait for the next drain).  Returns the number of collectives that
 * completed; *need_ucp_p says whether an element waits for UCP (then UCP
 * should be progressed at every call).
 */
unsigned ucg_progress_drain(ucg_progress_queue_t *queue, int *need_ucp_p);

#endif
