/**
 * UCG planner: plans in words (ucg_info, LOG_PLANS; format in docs/ucg.md).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_plan_int.h"
#include "ucg_def.h"
#include "ucg_dt.h"

#include <limits.h>
#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* Printing                                                                 */
/* ------------------------------------------------------------------------ */

/* Consecutive runs of at least this many ranks print as "first-last" */
#define UCG_PLAN_PRINT_MIN_RUN 3

/* Ranks separated by commas; runs compressed; @a mark (if < count) gets
 * a '*' and is never inside a run */
static void ucg_plan_print_ranks(FILE *stream, const unsigned *ranks,
                                 unsigned count, unsigned mark)
{
    unsigned i, j;

    for (i = 0; i < count; i = j) {
        if (i > 0) {
            fputc(',', stream);
        }

        if (i == mark) {
            fprintf(stream, "%u*", ranks[i]);
            j = i + 1;
            continue;
        }

        for (j = i + 1; (j < count) && (j != mark) &&
                        (ranks[j] == ranks[j - 1] + 1); ++j) {
        }

        if (j - i >= UCG_PLAN_PRINT_MIN_RUN) {
            fprintf(stream, "%u-%u", ranks[i], ranks[j - 1]);
        } else {
            fprintf(stream, "%u", ranks[i]);
            j = i + 1;
        }
    }
}

void ucg_plan_print(const ucg_plan_t *plan, const ucg_topo_t *topo,
                    FILE *stream)
{
    const ucg_plan_key_t *key = &plan->key;
    static const ucg_plan_phase_info_t unknown = {"ucp", 0};
    const ucg_plan_phase_info_t *info;
    const ucg_phase_t *phase;
    char attrs[128];
    size_t len;
    unsigned h, i, s, r;
    int leader_owned;

    /* Header: what, and on which layout */
    fprintf(stream, "%s", ((unsigned)key->type < UCG_COLL_LAST) ?
                          ucg_coll_name(key->type) : "?");
    if (ucg_coll_type_is_vblock(key->type)) {
        /* the same plan for every count (ucg_plan_vblock.c) */
        fprintf(stream, " any counts");
    } else {
        fprintf(stream, " %zu bytes", key->msg_size);
    }
    if (ucg_coll_type_is_reduction(key->type)) {
        fprintf(stream, " %s on %s%s", ucg_op_name(key->op),
                ucg_dtype_name(key->dtype),
                key->commutative ? "" : " (non-commutative)");
    }
    if (ucg_coll_type_is_rooted(key->type)) {
        fprintf(stream, " root %u", key->root);
    }

    fprintf(stream, ", %u rank%s on %u host%s ", topo->size,
            (topo->size == 1) ? "" : "s", topo->num_hosts,
            (topo->num_hosts == 1) ? "" : "s");
    for (h = 0; h < topo->num_hosts; ++h) {
        fputc('[', stream);
        ucg_plan_print_ranks(stream, &topo->host_ranks[topo->host_first[h]],
                             topo->host_size[h], UINT_MAX);
        fputc(']', stream);
    }
    fprintf(stream, ": %s, %u phase%s\n", plan->hier ? "hierarchical" : "flat",
            plan->num_phases, (plan->num_phases == 1) ? "" : "s");

    for (i = 0; i < plan->num_phases; ++i) {
        phase   = &plan->phases[i];
        attrs[0] = '\0';
        len      = 0;

        info     = ((unsigned)phase->method < UCG_PHASE_LAST) ?
                   &ucg_plan_phase_info[phase->method] : &unknown;

        if (info->flags & UCG_PHASE_INFO_SM) {
            len += snprintf(attrs + len, sizeof(attrs) - len, " %s",
                            uct_o2m_mode_name(phase->sm_mode));
            if (info->flags & UCG_PHASE_INFO_NATIVE) {
                len += snprintf(attrs + len, sizeof(attrs) - len, " %s",
                                phase->sm_native ? "native" :
                                                   "gather-reduce");
            } else if (info->flags & UCG_PHASE_INFO_ACK) {
                len += snprintf(attrs + len, sizeof(attrs) - len,
                                " ack %s",
                                uct_o2m_mode_name(phase->sm_ack_mode));
            }
        }
        if (info->flags & UCG_PHASE_INFO_STANDIN) {
            /* multicast fragments are agreed when the leaders join */
        } else if (phase->radix != 0) {
            len += snprintf(attrs + len, sizeof(attrs) - len, " radix %u",
                            phase->radix);
        }
        if ((phase->frag_size != 0) &&
            !(info->flags & UCG_PHASE_INFO_STANDIN)) {
            len += snprintf(attrs + len, sizeof(attrs) - len, " frag %zu",
                            phase->frag_size);
        }
        if (phase->owner != NULL) {
            leader_owned = 0;
            for (r = 0; r < topo->size; ++r) {
                leader_owned |= (phase->owner[r] != r);
            }
            if (leader_owned) {
                len += snprintf(attrs + len, sizeof(attrs) - len,
                                " blocks@leaders");
            }
        }

        fprintf(stream, "  %u: %-20s %-9s %-34s", i,
                ((unsigned)phase->method < UCG_PHASE_LAST) ?
                ucg_phase_method_names[phase->method] : "?",
                ((phase->method == UCG_PHASE_MC_BCAST) &&
                 (topo->mc_tl < UCG_MC_TL_LAST)) ?
                ucg_mc_tl_names[topo->mc_tl] : info->transport,
                (attrs[0] == ' ') ? attrs + 1 : attrs);
        for (s = 0; s < phase->num_sets; ++s) {
            fputs(" {", stream);
            ucg_plan_print_ranks(stream, phase->sets[s].ranks,
                                 phase->sets[s].count, phase->sets[s].root);
            fputc('}', stream);
        }
        fputc('\n', stream);
    }
}
