/**
 * UCG planner: a group's plans, found again by key and size range.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

/* ------------------------------------------------------------------------ */
/* Plan cache                                                               */
/* ------------------------------------------------------------------------ */

/* A cached plan and the key it was asked for (plan->key is normalized) */
typedef struct ucg_plan_entry {
    ucs_list_link_t list;
    ucg_plan_key_t  key;
    ucg_plan_t      *plan;
} ucg_plan_entry_t;

void ucg_plan_cache_init(ucg_plan_cache_t *cache)
{
    ucs_list_head_init(&cache->plans);
}

void ucg_plan_cache_cleanup(ucg_plan_cache_t *cache)
{
    ucg_plan_entry_t *entry, *tmp;

    ucs_list_for_each_safe(entry, tmp, &cache->plans, list) {
        ucg_plan_destroy(entry->plan);
        ucs_list_del(&entry->list);
        ucs_free(entry);
    }
}

/* Whether the plan of @a entry is the plan of @a key */
static int ucg_plan_entry_match(const ucg_plan_entry_t *entry,
                                const ucg_plan_key_t *key)
{
    const ucg_plan_key_t *ek = &entry->key;

    return (ek->type == key->type) && (ek->root == key->root) &&
           (ek->op == key->op) && (ek->dtype == key->dtype) &&
           (ek->dt_size == key->dt_size) &&
           (ek->commutative == key->commutative) &&
           (ek->flat == key->flat) &&
           (key->msg_size >= entry->plan->size_min) &&
           (key->msg_size <= entry->plan->size_max);
}

ucs_status_t ucg_plan_cache_get(ucg_plan_cache_t *cache,
                                const ucg_config_t *config,
                                const ucg_topo_t *topo,
                                const ucg_plan_key_t *key,
                                const ucg_plan_t **plan_p, int *created_p)
{
    ucg_plan_entry_t *entry;
    ucs_status_t status;

    ucs_list_for_each(entry, &cache->plans, list) {
        if (ucg_plan_entry_match(entry, key)) {
            *plan_p = entry->plan;
            if (created_p != NULL) {
                *created_p = 0;
            }
            return UCS_OK;
        }
    }

    entry = ucs_malloc(sizeof(*entry), "ucg_plan_entry");
    if (entry == NULL) {
        ucs_error("failed to allocate a plan cache entry");
        return UCS_ERR_NO_MEMORY;
    }

    status = ucg_plan_create(config, topo, key, &entry->plan);
    if (status != UCS_OK) {
        ucs_free(entry);
        return status;
    }

    entry->key = *key;
    ucs_list_add_tail(&cache->plans, &entry->list);
    *plan_p = entry->plan;
    if (created_p != NULL) {
        *created_p = 1;
    }
    return UCS_OK;
}
