/**
 * UCG progress queue (ucg_progress.h).
 */
#include "ucg_progress.h"


unsigned ucg_progress_drain(ucg_progress_queue_t *queue, int *need_ucp_p)
{
    unsigned count = 0;
    int need_ucp   = 0;
    ucg_progress_elem_t *elem, *tmp;
    unsigned flags;

    ++queue->gen;
    ucs_list_for_each_safe(elem, tmp, &queue->elems, list) {
        flags     = elem->cb(elem);
        need_ucp |= !!(flags & UCG_PROGRESS_UCP);
        count    += !!(flags & UCG_PROGRESS_COMPLETED);
    }

    *need_ucp_p = need_ucp;
    return count;
}
