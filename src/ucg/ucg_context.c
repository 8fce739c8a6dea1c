/**
 * ucx-o2m: UCG context: configuration, UCP worker, host identity and
 * progress; the sm_bcast / sm_incast interfaces are in ucg_context_sm.c,
 * the UCP connection cache in ucg_context_conn.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_context.h"
#include "ucg_def.h"
#include "ucg_group.h"
#include "ucg_mc.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* ucg_progress calls between two UCP progress calls while every started
 * collective is in a host-local phase */
#define UCG_UCP_IDLE_POLLS     16
/* ucg_progress calls per progress of the transports while no collective is
 * started */
#define UCG_IDLE_POLLS         16


/* FNV-1a over a byte string, chained through @a hash */
static uint64_t ucg_fnv1a(uint64_t hash, const void *data, size_t len)
{
    const uint8_t *p = data;
    size_t i;

    for (i = 0; i < len; ++i) {
        hash ^= p[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

/* Append the first line of @a path to the hash (nothing when unreadable) */
static uint64_t ucg_hash_file_line(uint64_t hash, const char *path)
{
    char line[256];
    FILE *file;

    file = fopen(path, "r");
    if (file == NULL) {
        return hash;
    }

    if (fgets(line, sizeof(line), file) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        hash = ucg_fnv1a(hash, line, strlen(line) + 1);
    }
    fclose(file);
    return hash;
}

/*
 * Identity of the host, as far as shared memory goes: the hostname, the
 * kernel's boot id (two containers with the same hostname on different
 * machines differ) and the PID namespace (the transports reach their peers
 * through /proc/<pid>, which needs the same one).
 */
static uint64_t ucg_context_host_id(void)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    char buf[256];
    ssize_t len;

    if (gethostname(buf, sizeof(buf)) == 0) {
        buf[sizeof(buf) - 1] = '\0';
        hash = ucg_fnv1a(hash, buf, strlen(buf) + 1);
    }

    hash = ucg_hash_file_line(hash, "/proc/sys/kernel/random/boot_id");

    len = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
    if (len > 0) {
        hash = ucg_fnv1a(hash, buf, len);
    }

    return hash;
}

static ucs_status_t ucg_context_ucp_init(ucg_context_t *context,
                                         const ucg_context_params_t *params)
{
    ucp_worker_params_t worker_params;
    ucp_params_t ucp_params;
    ucp_config_t *ucp_config;
    ucs_status_t status;

    if ((params != NULL) &&
        (params->field_mask & UCG_CONTEXT_PARAM_FIELD_UCP_WORKER)) {
        if (params->ucp_worker == NULL) {
            ucs_error("UCG context: UCP_WORKER is set but ucp_worker is "
                      "NULL");
            return UCS_ERR_INVALID_PARAM;
        }

        /* UCP cannot tell which features a context was created with: a
         * worker without UCP_FEATURE_TAG fails at the first tag send */
        context->ucp_context = params->ucp_context;
        context->ucp_worker  = params->ucp_worker;
        context->own_ucp     = 0;
        return UCS_OK;
    }

    /* UCP's own variables keep UCP's prefix (UCX_) */
    status = ucp_config_read(NULL, NULL, &ucp_config);
    if (status != UCS_OK) {
        ucs_error("UCG context: failed to read the UCP configuration: %s",
                  ucs_status_string(status));
        return status;
    }

    memset(&ucp_params, 0, sizeof(ucp_params));
    ucp_params.field_mask        = UCP_PARAM_FIELD_FEATURES |
                                   UCP_PARAM_FIELD_REQUEST_SIZE |
                                   UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    ucp_params.features          = UCP_FEATURE_TAG;
    ucp_params.request_size      = 0;
    ucp_params.mt_workers_shared = 0;

    status = ucp_init(&ucp_params, ucp_config, &context->ucp_context);
    ucp_config_release(ucp_config);
    if (status != UCS_OK) {
        ucs_error("UCG context: ucp_init failed: %s",
                  ucs_status_string(status));
        return status;
    }

    memset(&worker_params, 0, sizeof(worker_params));
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;

    status = ucp_worker_create(context->ucp_context, &worker_params,
                               &context->ucp_worker);
    if (status != UCS_OK) {
        ucs_error("UCG context: failed to create a UCP worker: %s",
                  ucs_status_string(status));
        ucp_cleanup(context->ucp_context);
        context->ucp_context = NULL;
        return status;
    }

    context->own_ucp = 1;
    return UCS_OK;
}

static void ucg_context_ucp_cleanup(ucg_context_t *context)
{
    if (!context->own_ucp) {
        return;
    }

    ucp_worker_destroy(context->ucp_worker);
    ucp_cleanup(context->ucp_context);
    context->ucp_worker  = NULL;
    context->ucp_context = NULL;
    context->own_ucp     = 0;
}

ucs_status_t ucg_context_create(const ucg_context_params_t *params,
                                const ucg_config_t *config,
                                ucg_context_h *context_p)
{
    ucg_context_t *context;
    ucs_status_t status;

    if (context_p == NULL) {
        ucs_error("UCG context: context_p is NULL");
        return UCS_ERR_INVALID_PARAM;
    }

    context = ucs_calloc(1, sizeof(*context), "ucg context");
    if (context == NULL) {
        ucs_error("UCG context: out of memory");
        return UCS_ERR_NO_MEMORY;
    }

    ucs_list_head_init(&context->groups);
    ucs_list_head_init(&context->p2p_conns);
    ucs_list_head_init(&context->closers);
    ucg_progress_queue_init(&context->progress_q);
    memset(context->sm_reserved, 0, sizeof(context->sm_reserved));
    context->next_group_epoch = 0;
    context->sm_dropped       = 0;
    context->sm_am_cb         = NULL;
    context->next_group_id = 0;
    context->need_ucp      = 1;

    if (config == NULL) {
        status = ucg_config_read(NULL, &context->config);
    } else {
        status = ucg_config_dup(config, &context->config);
    }
    if (status != UCS_OK) {
        ucs_error("UCG context: failed to get the configuration: %s",
                  ucs_status_string(status));
        goto err_free;
    }

    status = ucg_config_check(context->config);
    if (status != UCS_OK) {
        goto err_release_config;
    }
    context->plan_hash = ucg_config_plan_hash(context->config);

    status = uct_o2m_watch_table_create(&context->watches);
    if (status != UCS_OK) {
        goto err_release_config;
    }

    status = ucg_context_ucp_init(context, params);
    if (status != UCS_OK) {
        goto err_destroy_watches;
    }

    context->host_id = ucg_context_host_id();

    status = ucg_context_o2m_init(context);
    if (status != UCS_OK) {
        goto err_ucp_cleanup;
    }

    status = ucg_mc_context_init(context);
    if (status != UCS_OK) {
        ucg_context_o2m_close(context);
        goto err_ucp_cleanup;
    }

    ucs_debug("UCG context %p: ucp worker %p%s, o2m %s, host id 0x%" PRIx64,
              context, context->ucp_worker, context->own_ucp ? " (own)" : "",
              context->o2m ? "on" : "off", context->host_id);
    *context_p = context;
    return UCS_OK;

err_ucp_cleanup:
    ucg_context_ucp_cleanup(context);
err_destroy_watches:
    uct_o2m_watch_table_destroy(context->watches);
err_release_config:
    ucg_config_release(context->config);
err_free:
    ucs_free(context);
    return status;
}

/* Call every closer at @a stage (at the last, each leaves the list) */
static void ucg_context_close_stage(ucg_context_t *context,
                                    ucg_context_close_stage_t stage)
{
    ucg_context_closer_t *closer, *tmp;

    ucs_list_for_each_safe(closer, tmp, &context->closers, list) {
        closer->cb(closer, stage);
    }
}

void ucg_context_destroy(ucg_context_h context)
{
    ucg_group_t *group;

    if (context == NULL) {
        return;
    }

    while (!ucs_list_is_empty(&context->groups)) {
        group = ucs_list_head(&context->groups, ucg_group_t, list);
        ucs_warn("UCG context %p: destroying group %u (rank %u of %u) that "
                 "was not destroyed", context, group->id, group->rank,
                 group->size);
        ucg_group_destroy(group);
    }

    /* Before the UCP connections: setups may have requests on them */
    ucg_mc_context_cleanup(context);
    ucg_context_close_p2p_conns(context);
    ucg_context_close_stage(context, UCG_CONTEXT_CLOSE_UCP);
    /* No message arrives once the interfaces are closed */
    ucg_context_o2m_close(context);
    ucg_context_ucp_cleanup(context);
    ucg_context_close_stage(context, UCG_CONTEXT_CLOSE_FREE);
    ucs_assert(ucs_list_is_empty(&context->closers));
    uct_o2m_watch_table_destroy(context->watches);
    ucg_config_release(context->plan_defaults);
    ucg_config_release(context->config);
    ucs_free(context);
}

unsigned ucg_progress(ucg_context_h context)
{
    unsigned count = 0;

    /* No collective started: nothing of this member waits.  What the
     * transports do meanwhile for others (answer a peer's connection or
     * its teardown, the multicast engine's ACKs and repairs, take early
     * messages of a peer's next collective) can wait a few calls; a caller
     * that polls between its own work (coll/ucg's progress callback while
     * Open MPI runs another module's collective) would otherwise pay for
     * polling every interface on each call */
    if (ucs_list_is_empty(&context->progress_q.elems) &&
        (++context->idle_polls < UCG_IDLE_POLLS)) {
        return 0;
    }
    context->idle_polls = 0;
    context->rx_quick   = 0;

    /* While the started collectives are all in host-local phases, UCP has
     * nothing of theirs to do: it is progressed every UCG_UCP_IDLE_POLLS
     * calls only (its connections, early messages of later phases) */
    if (context->need_ucp || ucs_list_is_empty(&context->progress_q.elems) ||
        (++context->ucp_idle_polls >= UCG_UCP_IDLE_POLLS)) {
        context->ucp_idle_polls = 0;
        count = ucp_worker_progress(context->ucp_worker);
    }
    if (context->uct_worker != NULL) {
        count += uct_worker_progress(context->uct_worker);
    }
    count += ucg_mc_progress(context);

    return count + ucg_progress_drain(&context->progress_q,
                                      &context->need_ucp);
}

unsigned ucg_progress_rx(ucg_context_h context, uct_iface_h iface)
{
    ++context->rx_quick;
    ++context->rx_watch_quick;
    return uct_iface_progress(iface) +
           ucg_progress_drain(&context->progress_q, &context->need_ucp);
}

ucg_group_h ucg_context_find_group(ucg_context_h context, uint16_t id)
{
    ucg_group_t *group;

    ucs_list_for_each(group, &context->groups, list) {
        if (group->id == id) {
            return group;
        }
    }
    return NULL;
}

void ucg_context_sm_drop(ucg_context_t *context, const void *data,
                        size_t length, const ucg_group_t *group)
{
    const ucg_sm_hdr_t *hdr = data;

    if (length < sizeof(*hdr)) {
        ucs_error("ucg: sm message of %zu bytes is shorter than its header",
                  length);
        return;
    }

    ++context->sm_dropped;
    ucs_debug("ucg: dropping an sm message of %zu bytes for group %u "
              "epoch %u (%s)", length, hdr->group_id, (unsigned)hdr->epoch,
              (group == NULL) ? "no such group" :
              "the group has another epoch");
}
