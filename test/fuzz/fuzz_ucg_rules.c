/**
 * ucx-o2m: libFuzzer target for the UCG tuning rules parser
 * (src/ucg/ucg_rules.c), which reads whatever file coll_ucg_rules_file
 * names.
 *
 * Every input is parsed as a rules file.  An accepted table must be
 * well-formed (count within bounds, every range non-empty, known types and
 * actions), every lookup must return a valid action, and the table printed
 * by ucg_rules_print must parse back to the same hash.  A rejected one
 * must leave an empty table and a one-line error naming the source.
 * AddressSanitizer watches every byte the parser reads.  Built and run by
 * test/fuzz/fuzz.sh.
 */
#include "api/ucg_rules.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fuzz_check_table(const ucg_rules_t *rules)
{
    static ucg_rules_t again;
    const ucg_rule_t *r;
    char err[512], *text = NULL;
    size_t size = 0;
    unsigned i, t;
    FILE *stream;

    if (rules->count > UCG_RULES_MAX) {
        abort();
    }
    for (i = 0; i < rules->count; ++i) {
        r = &rules->rules[i];
        if ((r->type > UCG_COLL_LAST) || (r->action >= UCG_RULE_LAST) ||
            (r->np_min < 1) || (r->np_min > r->np_max) ||
            (r->ppn_min < 1) || (r->ppn_min > r->ppn_max) ||
            (r->bytes_min > r->bytes_max) || (r->line == 0)) {
            abort();
        }
        for (t = 0; t <= UCG_COLL_LAST; ++t) {
            if (ucg_rules_lookup(rules, (ucg_coll_type_t)t, r->np_min,
                                 r->ppn_max, r->bytes_max) >=
                UCG_RULE_LAST) {
                abort();
            }
        }
    }

    stream = open_memstream(&text, &size);
    if (stream == NULL) {
        return;
    }
    ucg_rules_print(rules, stream);
    fclose(stream);
    if ((ucg_rules_parse(text, size, "printed", &again, err,
                         sizeof(err)) != UCS_OK) ||
        (again.hash != rules->hash) || (again.count != rules->count)) {
        fprintf(stderr, "printed table does not parse back: %s\n%s\n", err,
                text);
        abort();
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static ucg_rules_t rules;
    char err[512];

    err[0] = '\0';
    if (ucg_rules_parse((const char*)data, size, "fuzz", &rules, err,
                        sizeof(err)) == UCS_OK) {
        fuzz_check_table(&rules);
        return 0;
    }
    if ((rules.count != 0) || strncmp(err, "fuzz:", 5) ||
        (strchr(err, '\n') != NULL)) {
        abort();
    }
    return 0;
}
