/**
 * ucg_info: UCG configuration and plans.
 *
 *   ucg_info -c       the UCX_UCG_* variables, their values and docs
 *   ucg_info -p ...   the plan of a collective on a given topology, computed
 *                     by the planner alone (nothing runs)
 *   ucg_info -R       the tuning rules coll/ucg applies (api/ucg_rules.h)
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_config.h"
#include "ucg_plan.h"
#include "ucg_def.h"
#include "ucg_dt.h"
#include "api/ucg_rules.h"

#include <ucs/sys/string.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <limits.h>

/* sm_bcast / sm_incast largest bcopy message with their default SEG_SIZE */
#define UCG_INFO_DEFAULT_SM_MAX_BCOPY 8240

enum {
    OPT_HOSTS = 256,
    OPT_NO_O2M,
    OPT_MC,
    OPT_NONCOMM,
    OPT_SM_MAX_BCOPY,
    OPT_DT_SIZE,
    OPT_RULES,
    OPT_PML
};

typedef struct {
    int         print_config;
    int         print_plan;
    int         print_rules;
    const char  *rules_file;    /* --rules, else coll/ucg's MCA variable */
    const char  *pml;           /* --pml, else OMPI_MCA_pml */
    unsigned    size;
    const char  *hosts;
    int         coll;           /* ucg_coll_type_t, or -1: all */
    size_t      msg_size;
    unsigned    root;
    int         dtype_set;
    ucg_dtype_t dtype;
    size_t      dt_size;        /* UCG_DT_BYTES */
    ucg_op_t    op;
    int         op_set;
    int         no_o2m;
    int         mc;
    int         mc_tl;      /* --mc=TL: ucg_mc_tl_t; -1: MC_TL's */
    int         noncommutative;
    size_t      sm_max_bcopy;
} ucg_info_opts_t;


#define UCG_INFO_HELP_INDENT 22
#define UCG_INFO_HELP_WIDTH  78

/* Names separated by spaces, wrapped under the option descriptions */
static void ucg_info_print_names(FILE *stream, const char **names,
                                 unsigned count)
{
    unsigned i, col = UCG_INFO_HELP_WIDTH;

    for (i = 0; i < count; ++i) {
        if (col + 1 + strlen(names[i]) > UCG_INFO_HELP_WIDTH) {
            fprintf(stream, "%s%*s", (i > 0) ? "\n" : "",
                    UCG_INFO_HELP_INDENT, "");
            col = UCG_INFO_HELP_INDENT;
        } else {
            fputc(' ', stream);
            ++col;
        }
        fputs(names[i], stream);
        col += strlen(names[i]);
    }
    fputc('\n', stream);
}

static void ucg_info_usage(FILE *stream)
{
    const char *names[UCG_DT_LAST + UCG_OP_LAST];
    unsigned i;

    fprintf(stream,
"Usage: ucg_info -c\n"
"       ucg_info -p -n <ranks> [options]\n"
"       ucg_info -R [--rules <file>] [--pml <name>]\n"
"       ucg_info -h\n"
"\n"
"  -c                  print the UCG configuration (UCX_UCG_* variables)\n"
"  -p                  print the plan of a collective (nothing runs)\n"
"  -R                  print the tuning rules coll/ucg applies: those of\n"
"                      --rules <file>, else of the file that\n"
"                      OMPI_MCA_coll_ucg_rules_file names (\"none\": no\n"
"                      rules), else the built-in table; a bad file is\n"
"                      reported (exit status 1) and the built-in table,\n"
"                      which coll/ucg then uses, printed.  The built-in\n"
"                      table is that of the pml Open MPI selects:\n"
"                      --pml <name>, else OMPI_MCA_pml (ucx, or the\n"
"                      table measured with ob1 for any other)\n"
"  -h                  this help\n"
"\n"
"Plan options:\n"
"  -n <ranks>          group size (required)\n"
"  --hosts <layout>    host layout, as UCX_UCG_HOSTS: <k> (every k\n"
"                      consecutive ranks share a host) or <n1>,<n2>,...\n"
"                      (host sizes, the last repeated); default:\n"
"                      UCX_UCG_HOSTS, or one host when that is auto\n"
"  -C <collective>     collective, or all of them (default: all):\n");
    for (i = 0; i < UCG_COLL_LAST; ++i) {
        names[i] = ucg_coll_name((ucg_coll_type_t)i);
    }
    names[UCG_COLL_LAST] = "all";
    ucg_info_print_names(stream, names, UCG_COLL_LAST + 1);
    fprintf(stream,
"  -s <size>           bytes per member, e.g. 8, 64k (default: 8)\n"
"  -r <root>           root of bcast, reduce, gather(v), scatter(v) (default:\n"
"                      0); the vector collectives' plans do not depend on\n"
"                      -s\n"
"  -d <dtype>          element type of reductions (default: int32):\n");
    for (i = 0; i < UCG_DT_LAST; ++i) {
        names[i] = ucg_dtype_name((ucg_dtype_t)i);
    }
    ucg_info_print_names(stream, names, UCG_DT_LAST);
    fprintf(stream,
"  --dt-size <bytes>   element size of -d bytes (default: 1)\n"
"  -o <op>             reduction (default: sum):\n");
    for (i = 0; i < UCG_OP_LAST; ++i) {
        names[i] = ucg_op_name((ucg_op_t)i);
    }
    ucg_info_print_names(stream, names, UCG_OP_LAST);
    fprintf(stream,
"  --noncommutative    the reduction is not commutative (a user op)\n"
"  --no-o2m            sm_bcast / sm_incast unavailable: flat plans\n"
"  --mc[=<tl>]         the hosts are real hosts and every member has\n"
"                      multicast transport <tl> (mc_mlx5, mc_verbs,\n"
"                      mc_udp; default: UCX_UCG_MC_TL, mc_udp when that\n"
"                      is auto; as with UCX_UCG_MC=yes; never with MC=no)\n"
"  --sm-max-bcopy <n>  their largest bcopy message (default: %d)\n"
"\n"
"The configuration comes from the UCX_UCG_* environment variables.\n",
            UCG_INFO_DEFAULT_SM_MAX_BCOPY);
}

static int ucg_info_parse_uint(const char *opt, const char *arg,
                               unsigned min, unsigned *value_p)
{
    unsigned long value;
    char *end;

    errno = 0;
    value = strtoul(arg, &end, 10);
    if ((arg[0] == '\0') || (arg[0] == '-') || (*end != '\0') ||
        (errno != 0) || (value > UINT_MAX) || (value < min)) {
        fprintf(stderr, "ucg_info: invalid %s '%s' (expected an integer "
                "from %u)\n", opt, arg, min);
        return -1;
    }

    *value_p = value;
    return 0;
}

static int ucg_info_parse_size(const char *opt, const char *arg,
                               size_t *value_p)
{
    size_t value;

    if ((ucs_str_to_memunits(arg, &value) != UCS_OK) ||
        (value == UCS_MEMUNITS_INF) || (value == UCS_MEMUNITS_AUTO) ||
        (arg[0] == '-')) {
        fprintf(stderr, "ucg_info: invalid %s '%s' (expected a size, e.g. "
                "8, 4k, 1m)\n", opt, arg);
        return -1;
    }

    *value_p = value;
    return 0;
}

static int ucg_info_parse_args(int argc, char **argv, ucg_info_opts_t *opts)
{
    static const struct option long_opts[] = {
        {"hosts",           required_argument, NULL, OPT_HOSTS},
        {"no-o2m",          no_argument,       NULL, OPT_NO_O2M},
        {"mc",              optional_argument, NULL, OPT_MC},
        {"noncommutative",  no_argument,       NULL, OPT_NONCOMM},
        {"sm-max-bcopy",    required_argument, NULL, OPT_SM_MAX_BCOPY},
        {"dt-size",         required_argument, NULL, OPT_DT_SIZE},
        {"rules",           required_argument, NULL, OPT_RULES},
        {"pml",             required_argument, NULL, OPT_PML},
        {"help",            no_argument,       NULL, 'h'},
        {NULL,              0,                 NULL, 0}
    };
    unsigned value;
    int c, i;

    memset(opts, 0, sizeof(*opts));
    opts->coll         = -1;
    opts->mc_tl        = -1;
    opts->msg_size     = 8;
    opts->dtype        = UCG_DT_INT32;
    opts->dt_size      = 1;
    opts->op           = UCG_OP_SUM;
    opts->sm_max_bcopy = UCG_INFO_DEFAULT_SM_MAX_BCOPY;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":cpRhn:C:s:r:d:o:", long_opts,
                            NULL)) != -1) {
        switch (c) {
        case 'c':
            opts->print_config = 1;
            break;
        case 'R':
            opts->print_rules = 1;
            break;
        case OPT_RULES:
            opts->rules_file = optarg;
            break;
        case OPT_PML:
            opts->pml = optarg;
            break;
        case 'p':
            opts->print_plan = 1;
            break;
        case 'h':
            ucg_info_usage(stdout);
            exit(0);
        case 'n':
            if (ucg_info_parse_uint("number of ranks (-n)", optarg, 1,
                                    &opts->size) != 0) {
                return -1;
            }
            break;
        case OPT_HOSTS:
            opts->hosts = optarg;
            break;
        case 'C':
            if (!strcasecmp(optarg, "all")) {
                opts->coll = -1;
                break;
            }
            for (i = 0; i < UCG_COLL_LAST; ++i) {
                if (!strcasecmp(optarg, ucg_coll_name((ucg_coll_type_t)i))) {
                    break;
                }
            }
            if (i == UCG_COLL_LAST) {
                fprintf(stderr, "ucg_info: unknown collective '%s'\n",
                        optarg);
                return -1;
            }
            opts->coll = i;
            break;
        case 's':
            if (ucg_info_parse_size("message size (-s)", optarg,
                                    &opts->msg_size) != 0) {
                return -1;
            }
            break;
        case 'r':
            if (ucg_info_parse_uint("root (-r)", optarg, 0, &opts->root) != 0) {
                return -1;
            }
            break;
        case 'd':
            if (!ucg_dtype_from_name(optarg, &opts->dtype)) {
                fprintf(stderr, "ucg_info: unknown datatype '%s'\n", optarg);
                return -1;
            }
            opts->dtype_set = 1;
            break;
        case OPT_DT_SIZE:
            if (ucg_info_parse_uint("element size (--dt-size)", optarg, 1,
                                    &value) != 0) {
                return -1;
            }
            opts->dt_size = value;
            break;
        case 'o':
            if (!ucg_op_from_name(optarg, &opts->op)) {
                fprintf(stderr, "ucg_info: unknown reduction '%s'\n", optarg);
                return -1;
            }
            opts->op_set = 1;
            break;
        case OPT_NO_O2M:
            opts->no_o2m = 1;
            break;
        case OPT_MC:
            opts->mc = 1;
            if (optarg == NULL) {
                break;
            }
            for (opts->mc_tl = 0; opts->mc_tl < UCG_MC_TL_LAST;
                 ++opts->mc_tl) {
                if (!strcmp(optarg, ucg_mc_tl_names[opts->mc_tl])) {
                    break;
                }
            }
            if (opts->mc_tl == UCG_MC_TL_LAST) {
                fprintf(stderr, "ucg_info: unknown multicast transport "
                        "'%s'\n", optarg);
                return -1;
            }
            break;
        case OPT_NONCOMM:
            opts->noncommutative = 1;
            break;
        case OPT_SM_MAX_BCOPY:
            if (ucg_info_parse_size("--sm-max-bcopy", optarg,
                                    &opts->sm_max_bcopy) != 0) {
                return -1;
            }
            break;
        case ':':
            fprintf(stderr, "ucg_info: option '%s' needs an argument\n",
                    argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "ucg_info: unknown option '%s'\n",
                    argv[optind - 1]);
            return -1;
        }
    }

    if (optind < argc) {
        fprintf(stderr, "ucg_info: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }

    if (!opts->print_config && !opts->print_plan && !opts->print_rules) {
        fprintf(stderr, "ucg_info: nothing to do: give -c, -p or -R "
                "(-h: help)\n");
        return -1;
    }

    if (opts->print_plan) {
        if (opts->size == 0) {
            fprintf(stderr, "ucg_info: -p needs the number of ranks (-n)\n");
            return -1;
        }
        if (opts->root >= opts->size) {
            fprintf(stderr, "ucg_info: root %u is not a rank of a group of "
                    "%u\n", opts->root, opts->size);
            return -1;
        }
    }

    return 0;
}

static int ucg_info_print_plan(const ucg_info_opts_t *opts,
                               const ucg_config_t *config,
                               const ucg_topo_t *topo, ucg_coll_type_t type)
{
    ucg_plan_key_t key;
    ucg_plan_t *plan;
    size_t elem_size;

    memset(&key, 0, sizeof(key));
    key.type        = type;
    key.root        = ucg_coll_type_is_rooted(type) ? opts->root : 0;
    /* no size for barrier; alltoallv has none every member knows */
    key.msg_size    = ((type == UCG_COLL_BARRIER) ||
                       (type == UCG_COLL_ALLTOALLV)) ? 0 : opts->msg_size;
    key.commutative = 1;

    if (ucg_coll_type_is_reduction(type)) {
        elem_size = (opts->dtype == UCG_DT_BYTES) ?
                    opts->dt_size : ucg_dtype_size(opts->dtype);
        if (!ucg_op_valid(opts->op, opts->dtype)) {
            fprintf(stderr, "ucg_info: %s is not defined on %s\n",
                    ucg_op_name(opts->op), ucg_dtype_name(opts->dtype));
            return -1;
        }
        if (key.msg_size % elem_size) {
            fprintf(stderr, "ucg_info: size %zu is not a multiple of the %s "
                    "element size %zu\n", key.msg_size,
                    ucg_dtype_name(opts->dtype), elem_size);
            return -1;
        }
        key.op          = opts->op;
        key.dtype       = opts->dtype;
        key.dt_size     = elem_size;
        key.commutative = !opts->noncommutative;
    } else {
        key.op      = UCG_OP_LAST;
        key.dtype   = opts->dtype_set ? opts->dtype : UCG_DT_UINT8;
        key.dt_size = (key.dtype == UCG_DT_BYTES) ? opts->dt_size :
                                                    ucg_dtype_size(key.dtype);
    }

    if (ucg_plan_create(config, topo, &key, &plan) != UCS_OK) {
        fprintf(stderr, "ucg_info: no plan for %s\n",
                ucg_coll_name((ucg_coll_type_t)type));
        return -1;
    }

    ucg_plan_print(plan, topo, stdout);
    ucg_plan_destroy(plan);
    return 0;
}

static int ucg_info_plans(const ucg_info_opts_t *opts,
                          const ucg_config_t *config)
{
    const char *hosts;
    uint64_t *labels;
    ucg_topo_t topo;
    unsigned r;
    int is_auto, o2m, type, ret;

    /* --hosts, else UCX_UCG_HOSTS; "auto" (real hosts) is this host */
    hosts  = (opts->hosts != NULL) ? opts->hosts : config->hosts;
    labels = calloc(opts->size, sizeof(*labels));
    if (labels == NULL) {
        fprintf(stderr, "ucg_info: out of memory\n");
        return -1;
    }

    for (r = 0; r < opts->size; ++r) {
        if (ucg_hosts_label(hosts, r, &labels[r], &is_auto) != UCS_OK) {
            fprintf(stderr, "ucg_info: invalid host layout '%s'\n", hosts);
            free(labels);
            return -1;
        }
        if (is_auto) {
            labels[r] = 0;
        }
    }

    o2m = !opts->no_o2m && (config->o2m != UCS_NO);
    if (ucg_topo_init(&topo, opts->size, labels, o2m,
                      opts->sm_max_bcopy) != UCS_OK) {
        fprintf(stderr, "ucg_info: invalid topology\n");
        free(labels);
        return -1;
    }
    free(labels);
    /* As ucg_group_create decides for a group that spans hosts */
    topo.mc = (config->mc != UCS_NO) &&
              (opts->mc || (config->mc == UCS_YES)) && (topo.num_hosts > 1);
    if (topo.mc) {
        topo.mc_tl = (opts->mc_tl >= 0) ? opts->mc_tl :
                     (config->mc_tl != UCG_MC_TL_AUTO) ? config->mc_tl :
                     UCG_MC_TL_UDP;
    }

    ret = 0;
    for (type = 0; (type < UCG_COLL_LAST) && (ret == 0); ++type) {
        if ((opts->coll >= 0) && (opts->coll != type)) {
            continue;
        }
        if ((opts->coll < 0) && (type > 0)) {
            printf("\n");
        }
        ret = ucg_info_print_plan(opts, config, &topo, (ucg_coll_type_t)type);
    }

    ucg_topo_cleanup(&topo);
    return ret;
}

/* The rules coll/ucg would apply (mca_coll_ucg_get_rules): 0, or 1 when
 * the file is bad (the built-in table is printed, as coll/ucg uses it) */
static int ucg_info_rules(const ucg_info_opts_t *opts)
{
    static ucg_rules_t rules;
    const char *file = opts->rules_file;
    const char *pml  = (opts->pml != NULL) ? opts->pml :
                       getenv("OMPI_MCA_pml");
    char err[512];
    int ret = 0;

    if (file == NULL) {
        file = getenv("OMPI_MCA_coll_ucg_rules_file");
    }
    if ((file == NULL) || (file[0] == '\0')) {
        ucg_rules_builtin(pml, &rules);
    } else if (!strcmp(file, "none")) {
        if (ucg_rules_parse("ucg-rules 1\n", 12, "none", &rules, err,
                            sizeof(err)) != UCS_OK) {
            fprintf(stderr, "ucg_info: %s\n", err);
            return 1;
        }
    } else if (ucg_rules_load(file, &rules, err, sizeof(err)) != UCS_OK) {
        fprintf(stderr, "ucg_info: %s; coll/ucg would use the built-in "
                "rules:\n", err);
        ucg_rules_builtin(pml, &rules);
        ret = 1;
    }
    ucg_rules_print(&rules, stdout);
    return ret;
}

int main(int argc, char **argv)
{
    ucg_info_opts_t opts;
    ucg_config_t *config;
    int ret = 0;

    if (ucg_info_parse_args(argc, argv, &opts) != 0) {
        return 1;
    }

    if (ucg_config_read(NULL, &config) != UCS_OK) {
        fprintf(stderr, "ucg_info: failed to read the UCG configuration\n");
        return 1;
    }

    if (opts.print_config) {
        ucg_config_print(config, stdout, "UCG configuration",
                         UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_DOC |
                         UCS_CONFIG_PRINT_HEADER);
    }

    if (opts.print_plan) {
        if (ucg_config_check(config) != UCS_OK) {
            fprintf(stderr, "ucg_info: invalid UCG configuration\n");
            ret = 1;
        } else if (ucg_info_plans(&opts, config) != 0) {
            ret = 1;
        }
    }

    if (opts.print_rules && (ucg_info_rules(&opts) != 0)) {
        ret = 1;
    }

    ucg_config_release(config);
    return ret;
}
