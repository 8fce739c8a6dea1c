/**
 * ucx-o2m: UCG tuning rules (api/ucg_rules.h): the parser of rules files,
 * the built-in table, lookup and printing.
 *
 * A rules file comes from wherever the user's MCA parameter points, so the
 * parser trusts nothing in it: bounded sizes (file, line, rule count),
 * numbers checked for overflow, every field validated, and the first error
 * ends the parse with "<file>:<line>: <what>" and an empty table (a caller
 * then uses the built-in table: never half a file).  The table is hashed
 * from its parsed rules, not its text, so that ranks whose files differ
 * only in comments or spacing agree.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "api/ucg_rules.h"

#include <ucs/debug/assert.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define UCG_RULES_MAX_FIELDS 6   /* one more than a rule has: to say so */

/*
 * The built-in tables: measured on the development machine (2 cores, one
 * host, Open MPI 4.1.4 and tuned as the previous module; numbers and
 * method in docs/performance.md, "The built-in table, measured", "A
 * cheaper handover", "From 8 B to 4 MiB" and "Over pml ucx").  They hand to
 * the previous module the sizes where coll/ucg was slower there, or no
 * faster, at np=2 on one host; every other shape runs on UCG as without a
 * table.  Tuned over pml ucx is faster than over ob1 from 512 B (bcast up
 * to 8 KiB, allreduce and reduce up to 128 KiB), so that table hands more
 * sizes over.
 */
static const char ucg_rules_builtin_ob1_src[] =
    "ucg-rules 1\n"
    "# coll     np   ppn  bytes        action\n"
    "bcast      2    2    1-256        prev\n"
    "bcast      2    2    16k-256k     prev\n"
    "scatter    2    2    1-256        prev\n"
    "allgather  2    2    1-2k         prev\n"
    "allreduce  2    2    1-256        prev\n"
    "reduce     2    2    1-1k         prev\n"
    "reduce     2    2    256k-inf     prev\n"
    "barrier    2    2    0            prev\n";

static const char ucg_rules_builtin_ucx_src[] =
    "ucg-rules 1\n"
    "# coll     np   ppn  bytes        action\n"
    "bcast      2    2    1-256k       prev\n"
    "scatter    2    2    1-256        prev\n"
    "allgather  2    2    1-2k         prev\n"
    "allreduce  2    2    1-2k         prev\n"
    "reduce     2    2    1-2k         prev\n"
    "reduce     2    2    256k-inf     prev\n"
    "barrier    2    2    0            prev\n";

static const char *ucg_rules_action_names[] = {
    [UCG_RULE_UCG]  = "ucg",
    [UCG_RULE_FLAT] = "flat",
    [UCG_RULE_PREV] = "prev"
};

typedef struct {
    const char *source;
    unsigned   line;
    char       *err;
    size_t     err_len;
} ucg_rules_parser_t;

static ucs_status_t ucg_rules_error(ucg_rules_parser_t *p, const char *fmt,
                                    ...) UCS_F_PRINTF(2, 3);

static ucs_status_t ucg_rules_error(ucg_rules_parser_t *p, const char *fmt,
                                    ...)
{
    char what[160];
    va_list ap;

    if ((p->err == NULL) || (p->err_len == 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (p->line > 0) {
        snprintf(p->err, p->err_len, "%s:%u: %s", p->source, p->line, what);
    } else {
        snprintf(p->err, p->err_len, "%s: %s", p->source, what);
    }
    return UCS_ERR_INVALID_PARAM;
}

const char *ucg_rule_action_name(ucg_rule_action_t action)
{
    return ((unsigned)action < UCG_RULE_LAST) ?
           ucg_rules_action_names[action] : "invalid";
}

/* A decimal number with an optional k/m/g suffix (@a suffix allowed); 0
 * on success, -1 when it is not one or does not fit a size_t */
static int ucg_rules_number(const char *s, int suffix, size_t *value_p)
{
    size_t v = 0;
    unsigned shift = 0;
    const char *c;

    if ((*s < '0') || (*s > '9')) {
        return -1;
    }
    for (c = s; (*c >= '0') && (*c <= '9'); ++c) {
        if (v > (SIZE_MAX - (size_t)(*c - '0')) / 10) {
            return -1;
        }
        v = v * 10 + (size_t)(*c - '0');
    }
    if (suffix && (*c != '\0') && (c[1] == '\0')) {
        switch (*c) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return -1;
        }
        ++c;
    }
    if ((*c != '\0') || (v > (SIZE_MAX >> shift))) {
        return -1;
    }
    *value_p = v << shift;
    return 0;
}

/*
 * A range field: "*", "N", "N-M", "N-" (and "N-inf" with @a bytes); numbers
 * with suffixes when @a bytes, else at least 1 and at most UINT_MAX.
 */
static ucs_status_t ucg_rules_range(ucg_rules_parser_t *p, const char *what,
                                    char *field, int bytes, size_t *min_p,
                                    size_t *max_p)
{
    size_t limit = bytes ? SIZE_MAX : UINT_MAX;
    size_t lowest = bytes ? 0 : 1;
    char *dash;

    if (!strcmp(field, "*")) {
        *min_p = lowest;
        *max_p = limit;
        return UCS_OK;
    }

    dash = strchr(field, '-');
    if (dash != NULL) {
        *dash = '\0';
    }
    if ((ucg_rules_number(field, bytes, min_p) != 0) || (*min_p > limit)) {
        return ucg_rules_error(p, "%s: '%s' is not a number%s", what, field,
                               bytes ? " (with k, m or g)" :
                               " of at most 4294967295");
    }
    if (dash == NULL) {
        *max_p = *min_p;
    } else if ((dash[1] == '\0') || (bytes && !strcmp(dash + 1, "inf"))) {
        *max_p = limit;
    } else if ((ucg_rules_number(dash + 1, bytes, max_p) != 0) ||
               (*max_p > limit)) {
        return ucg_rules_error(p, "%s: '%s' is not a number%s", what,
                               dash + 1, bytes ? " (with k, m or g) or inf" :
                               " of at most 4294967295");
    }
    if (*min_p < lowest) {
        return ucg_rules_error(p, "%s: must be at least %zu", what, lowest);
    }
    if (*min_p > *max_p) {
        return ucg_rules_error(p, "%s: range %zu-%zu is empty", what, *min_p,
                               *max_p);
    }
    return UCS_OK;
}

static ucs_status_t ucg_rules_rule(ucg_rules_parser_t *p, char **fields,
                                   ucg_rule_t *rule)
{
    size_t min, max;
    ucs_status_t status;
    int t, a;

    rule->line = p->line;
    rule->type = UCG_COLL_LAST;
    if (strcmp(fields[0], "*")) {
        for (t = 0; t < UCG_COLL_LAST; ++t) {
            if (!strcmp(fields[0], ucg_coll_name((ucg_coll_type_t)t))) {
                break;
            }
        }
        if (t == UCG_COLL_LAST) {
            return ucg_rules_error(p, "unknown collective '%s' (bcast, "
                                   "reduce, allreduce, barrier, gather, "
                                   "scatter, allgather or *)", fields[0]);
        }
        rule->type = (ucg_coll_type_t)t;
    }

    status = ucg_rules_range(p, "np", fields[1], 0, &min, &max);
    if (status != UCS_OK) {
        return status;
    }
    rule->np_min = (unsigned)min;
    rule->np_max = (unsigned)max;

    status = ucg_rules_range(p, "ppn", fields[2], 0, &min, &max);
    if (status != UCS_OK) {
        return status;
    }
    rule->ppn_min = (unsigned)min;
    rule->ppn_max = (unsigned)max;

    status = ucg_rules_range(p, "bytes", fields[3], 1, &rule->bytes_min,
                             &rule->bytes_max);
    if (status != UCS_OK) {
        return status;
    }

    for (a = 0; a < UCG_RULE_LAST; ++a) {
        if (!strcmp(fields[4], ucg_rules_action_names[a])) {
            rule->action = (ucg_rule_action_t)a;
            return UCS_OK;
        }
    }
    return ucg_rules_error(p, "unknown action '%s' (ucg, flat or prev)",
                           fields[4]);
}

/* FNV-1a over the parsed rules: equal tables, equal hashes */
static void ucg_rules_hash_u64(uint64_t *hash, uint64_t value)
{
    int i;

    for (i = 0; i < 8; ++i) {
        *hash ^= (value >> (8 * i)) & 0xff;
        *hash *= 0x100000001b3ull;
    }
}

static uint64_t ucg_rules_hash(const ucg_rules_t *rules)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    const ucg_rule_t *r;
    unsigned i;

    ucg_rules_hash_u64(&hash, rules->count);
    for (i = 0; i < rules->count; ++i) {
        r = &rules->rules[i];
        ucg_rules_hash_u64(&hash, r->type);
        ucg_rules_hash_u64(&hash, r->np_min);
        ucg_rules_hash_u64(&hash, r->np_max);
        ucg_rules_hash_u64(&hash, r->ppn_min);
        ucg_rules_hash_u64(&hash, r->ppn_max);
        ucg_rules_hash_u64(&hash, r->bytes_min);
        ucg_rules_hash_u64(&hash, r->bytes_max);
        ucg_rules_hash_u64(&hash, r->action);
    }
    return hash;
}

static void ucg_rules_reset(ucg_rules_t *rules, const char *source)
{
    snprintf(rules->source, sizeof(rules->source), "%s", source);
    rules->count = 0;
    rules->hash  = ucg_rules_hash(rules);
}

ucs_status_t ucg_rules_parse(const char *text, size_t len, const char *source,
                             ucg_rules_t *rules, char *err, size_t err_len)
{
    ucg_rules_parser_t p = { source, 0, err, err_len };
    char line[UCG_RULES_LINE_MAX + 1];
    char *fields[UCG_RULES_MAX_FIELDS];
    size_t pos = 0, n, end;
    unsigned nfields;
    int header = 0;
    ucs_status_t status;
    char *c, *save;

    ucg_rules_reset(rules, source);
    if (len > UCG_RULES_FILE_MAX) {
        status = ucg_rules_error(&p, "larger than %d bytes",
                                 UCG_RULES_FILE_MAX);
        goto err;
    }

    while (pos < len) {
        ++p.line;
        for (end = pos; (end < len) && (text[end] != '\n'); ++end) {
        }
        n = end - pos;
        if (n > UCG_RULES_LINE_MAX) {
            status = ucg_rules_error(&p, "line longer than %d characters",
                                     UCG_RULES_LINE_MAX);
            goto err;
        }
        memcpy(line, text + pos, n);
        line[n] = '\0';
        pos     = end + 1;
        if (strlen(line) != n) {
            status = ucg_rules_error(&p, "NUL byte in the line");
            goto err;
        }

        c = strchr(line, '#');
        if (c != NULL) {
            *c = '\0';
        }
        nfields = 0;
        for (c = strtok_r(line, " \t\r\v\f", &save);
             (c != NULL) && (nfields < UCG_RULES_MAX_FIELDS);
             c = strtok_r(NULL, " \t\r\v\f", &save)) {
            fields[nfields++] = c;
        }
        if (nfields == 0) {
            continue;
        }

        if (!header) {
            if ((nfields != 2) || strcmp(fields[0], "ucg-rules")) {
                status = ucg_rules_error(&p, "expected the header "
                                         "'ucg-rules 1' before any rule");
                goto err;
            }
            if (strcmp(fields[1], "1")) {
                status = ucg_rules_error(&p, "format version '%s' is not "
                                         "supported (only 1)", fields[1]);
                goto err;
            }
            header = 1;
            continue;
        }

        if (nfields != 5) {
            status = ucg_rules_error(&p, "%s%u field%s, a rule has 5: "
                                     "<coll> <np> <ppn> <bytes> <action>",
                                     (nfields > 5) ? "more than " : "",
                                     (nfields > 5) ? 5 : nfields,
                                     (nfields == 1) ? "" : "s");
            goto err;
        }
        if (rules->count == UCG_RULES_MAX) {
            status = ucg_rules_error(&p, "more than %d rules",
                                     UCG_RULES_MAX);
            goto err;
        }
        status = ucg_rules_rule(&p, fields, &rules->rules[rules->count]);
        if (status != UCS_OK) {
            goto err;
        }
        ++rules->count;
    }

    if (!header) {
        p.line = 0;
        status = ucg_rules_error(&p, "no 'ucg-rules 1' header (empty, or "
                                 "only comments)");
        goto err;
    }
    rules->hash = ucg_rules_hash(rules);
    return UCS_OK;

err:
    ucg_rules_reset(rules, source);
    return status;
}

ucs_status_t ucg_rules_load(const char *path, ucg_rules_t *rules, char *err,
                            size_t err_len)
{
    /* one byte more than allowed: to tell a file that is too large */
    size_t size = UCG_RULES_FILE_MAX + 1, len = 0;
    ucs_status_t status;
    ssize_t ret;
    char *buf;
    int fd;

    ucg_rules_reset(rules, path);
    buf = malloc(size);
    if (buf == NULL) {
        if ((err != NULL) && (err_len > 0)) {
            snprintf(err, err_len, "%s: no memory to read it", path);
        }
        return UCS_ERR_NO_MEMORY;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        goto err_io;
    }
    while (len < size) {
        ret = read(fd, buf + len, size - len);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            close(fd);
            goto err_io;
        }
        if (ret == 0) {
            break;
        }
        len += ret;
    }
    close(fd);
    status = ucg_rules_parse(buf, len, path, rules, err, err_len);
    free(buf);
    return status;

err_io:
    if ((err != NULL) && (err_len > 0)) {
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
    }
    free(buf);
    return UCS_ERR_IO_ERROR;
}

static int ucg_rules_builtin_is_ucx(const char *p2p)
{
    return (p2p != NULL) && !strcmp(p2p, "ucx");
}

const char *ucg_rules_builtin_text(const char *p2p)
{
    return ucg_rules_builtin_is_ucx(p2p) ? ucg_rules_builtin_ucx_src :
                                           ucg_rules_builtin_ob1_src;
}

void ucg_rules_builtin(const char *p2p, ucg_rules_t *rules)
{
    const char *text = ucg_rules_builtin_text(p2p);
    char err[256];
    ucs_status_t status;

    status = ucg_rules_parse(text, strlen(text),
                             ucg_rules_builtin_is_ucx(p2p) ?
                             "built-in (pml ucx)" : "built-in", rules, err,
                             sizeof(err));
    /* the texts are ours, and test_ucg_rules parses them */
    ucs_assert_always(status == UCS_OK);
}

ucg_rule_action_t ucg_rules_lookup(const ucg_rules_t *rules,
                                   ucg_coll_type_t type, unsigned np,
                                   unsigned ppn, size_t bytes)
{
    const ucg_rule_t *r;
    unsigned i;

    for (i = 0; i < rules->count; ++i) {
        r = &rules->rules[i];
        if (((r->type == UCG_COLL_LAST) || (r->type == type)) &&
            (np >= r->np_min) && (np <= r->np_max) &&
            (ppn >= r->ppn_min) && (ppn <= r->ppn_max) &&
            (bytes >= r->bytes_min) && (bytes <= r->bytes_max)) {
            return r->action;
        }
    }
    return UCG_RULE_UCG;
}

/* @a value with the largest k/m/g suffix that divides it (bytes only) */
static void ucg_rules_print_number(char *buf, size_t len, size_t value,
                                   int bytes)
{
    static const char suffixes[] = "gmk";
    int i;

    for (i = 0; bytes && (value > 0) && (i < 3); ++i) {
        if ((value % ((size_t)1 << (10 * (3 - i)))) == 0) {
            snprintf(buf, len, "%zu%c", value >> (10 * (3 - i)),
                     suffixes[i]);
            return;
        }
    }
    snprintf(buf, len, "%zu", value);
}

static void ucg_rules_print_range(FILE *stream, size_t min, size_t max,
                                  size_t lowest, size_t limit, int bytes,
                                  int width)
{
    char buf[64], lo[24], hi[24];

    ucg_rules_print_number(lo, sizeof(lo), min, bytes);
    ucg_rules_print_number(hi, sizeof(hi), max, bytes);
    if ((min == lowest) && (max == limit)) {
        snprintf(buf, sizeof(buf), "*");
    } else if (min == max) {
        snprintf(buf, sizeof(buf), "%s", lo);
    } else if (max == limit) {
        snprintf(buf, sizeof(buf), "%s-", lo);
    } else {
        snprintf(buf, sizeof(buf), "%s-%s", lo, hi);
    }
    fprintf(stream, " %-*s", width, buf);
}

void ucg_rules_print(const ucg_rules_t *rules, FILE *stream)
{
    const ucg_rule_t *r;
    unsigned i;

    fprintf(stream, "# UCG tuning rules from %s: %u rule%s, hash %016llx\n"
            "# the first rule that matches decides; no match: ucg\n"
            "ucg-rules 1\n"
            "# %-9s %-5s %-5s %-16s %s\n", rules->source, rules->count,
            (rules->count == 1) ? "" : "s", (unsigned long long)rules->hash,
            "coll", "np", "ppn", "bytes", "action");
    for (i = 0; i < rules->count; ++i) {
        r = &rules->rules[i];
        fprintf(stream, "%-11s", (r->type == UCG_COLL_LAST) ? "*" :
                                 ucg_coll_name(r->type));
        ucg_rules_print_range(stream, r->np_min, r->np_max, 1, UINT_MAX, 0,
                              5);
        ucg_rules_print_range(stream, r->ppn_min, r->ppn_max, 1, UINT_MAX,
                              0, 5);
        ucg_rules_print_range(stream, r->bytes_min, r->bytes_max, 0,
                              SIZE_MAX, 1, 16);
        fprintf(stream, " %s\n", ucg_rule_action_name(r->action));
    }
}
