/**
 * ucx-o2m: UCG tuning rules - which plan a collective takes, or whether the
 * caller hands it to another implementation (coll/ucg: Open MPI's module
 * selected before it), by collective, group size, processes per host and
 * message size.  Written by contrib/ucg-tune.sh from measurements, read by
 * coll/ucg (MCA parameter coll_ucg_rules_file) and printed by ucg_info -R.
 *
 * File format (docs/ucg.md, "Tuning rules"), text, one rule a line:
 *
 *   # comment (to the end of a line); blank lines are ignored
 *   ucg-rules 1                        the first line that is not a comment
 *   <coll> <np> <ppn> <bytes> <action>
 *
 *   coll    bcast reduce allreduce barrier gather scatter allgather, or *
 *   np      group size: N, N-M, N- (N or more) or *
 *   ppn     processes on the largest host of the group: the same forms
 *   bytes   bytes per member (per block for gather/scatter/allgather; 0 for
 *           barrier): the same forms, with k/m/g suffixes (x 1024^n) and
 *           "inf" as an upper bound
 *   action  ucg (UCG's planner), flat (UCG's point-to-point plan) or prev
 *           (the caller's other implementation)
 *
 * The first rule that matches a call decides; a call no rule matches runs
 * on UCG (action ucg).  The parser reads untrusted text: every error names
 * the file and line, and a table that fails to parse is never half used.
 */
#ifndef UCG_O2M_RULES_H_
#define UCG_O2M_RULES_H_

#include "ucg.h"

BEGIN_C_DECLS

typedef enum {
    UCG_RULE_UCG,    /**< UCG, the plan its planner makes */
    UCG_RULE_FLAT,   /**< UCG, the point-to-point (flat) plan */
    UCG_RULE_PREV,   /**< not UCG: the caller's previous implementation */
    UCG_RULE_LAST
} ucg_rule_action_t;

/** Largest number of rules in a table, bytes of a file and of a line */
#define UCG_RULES_MAX       256
#define UCG_RULES_FILE_MAX  (64 * 1024)
#define UCG_RULES_LINE_MAX  256

typedef struct ucg_rule {
    ucg_coll_type_t   type;       /**< UCG_COLL_LAST: any collective */
    unsigned          np_min, np_max;
    unsigned          ppn_min, ppn_max;
    size_t            bytes_min, bytes_max;  /**< SIZE_MAX: no bound */
    ucg_rule_action_t action;
    unsigned          line;       /**< in its source */
} ucg_rule_t;

typedef struct ucg_rules {
    char       source[256];  /**< the file, or "built-in" */
    unsigned   count;
    uint64_t   hash;         /**< of the rules (not of comments, spacing) */
    ucg_rule_t rules[UCG_RULES_MAX];
} ucg_rules_t;

/**
 * Parse @a len bytes of @a text, named @a source in errors.  On error the
 * table is left empty and @a err (if not NULL) holds one line
 * "<source>:<line>: <what>" (UCS_ERR_INVALID_PARAM).
 */
UCG_API ucs_status_t ucg_rules_parse(const char *text, size_t len,
                                     const char *source, ucg_rules_t *rules,
                                     char *err, size_t err_len);

/** Read and parse the file @a path (at most UCG_RULES_FILE_MAX bytes);
 *  errors as ucg_rules_parse, "<path>: <why>" when it cannot be read
 *  (UCS_ERR_IO_ERROR). */
UCG_API ucs_status_t ucg_rules_load(const char *path, ucg_rules_t *rules,
                                    char *err, size_t err_len);

/**
 * The built-in table for a previous implementation that runs over the
 * point-to-point layer @a p2p (Open MPI's pml): "ucx", or the one measured
 * with ob1 for any other name and for NULL (docs/ucg.md says what they
 * cover and why).  Its source is "built-in", or "built-in (pml ucx)".
 */
UCG_API void ucg_rules_builtin(const char *p2p, ucg_rules_t *rules);

/** The text of the built-in table for @a p2p, as a file would hold it. */
UCG_API const char *ucg_rules_builtin_text(const char *p2p);

/** The action of a @a type call of @a bytes per member on a group of @a np
 *  members with at most @a ppn on a host: the first rule that matches, or
 *  UCG_RULE_UCG. */
UCG_API ucg_rule_action_t ucg_rules_lookup(const ucg_rules_t *rules,
                                           ucg_coll_type_t type, unsigned np,
                                           unsigned ppn, size_t bytes);

/** Name of an action ("ucg", "flat", "prev"). */
UCG_API const char *ucg_rule_action_name(ucg_rule_action_t action);

/** Print the table as a file that parses to the same table. */
UCG_API void ucg_rules_print(const ucg_rules_t *rules, FILE *stream);

END_C_DECLS

#endif
