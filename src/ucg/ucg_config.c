/**
 * UCG configuration: the UCX_UCG_* variables, read through UCX's parser.
 * What the parser cannot check is in ucg_config_check.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucg_config.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>

#include <string.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>


/* The default environment prefix: UCX_UCG_<NAME> */
#define UCG_CONFIG_ENV_PREFIX "UCX_"


const char *ucg_p2p_method_names[] = {
    [UCG_P2P_AUTO]               = "auto",
    [UCG_P2P_KNOMIAL]            = "knomial",
    [UCG_P2P_RECURSIVE_DOUBLING] = "recursive_doubling",
    [UCG_P2P_RING]               = "ring",
    [UCG_P2P_LINEAR]             = "linear",
    [UCG_P2P_DISSEMINATION]      = "dissemination",
    [UCG_P2P_PAIRWISE]           = "pairwise",
    [UCG_P2P_LAST]               = NULL
};

const char *ucg_hier_names[] = {
    [UCG_HIER_AUTO] = "auto",
    [UCG_HIER_ON]   = "on",
    [UCG_HIER_OFF]  = "off",
    [UCG_HIER_LAST] = NULL
};

const char *ucg_mc_tl_names[] = {
    [UCG_MC_TL_MLX5]  = "mc_mlx5",
    [UCG_MC_TL_VERBS] = "mc_verbs",
    [UCG_MC_TL_UDP]   = "mc_udp",
    [UCG_MC_TL_AUTO]  = "auto",
    [UCG_MC_TL_AUTO + 1] = NULL
};

const char *ucg_sm_mode_names[] = {
    [UCT_O2M_MODE_BATCHED]     = "batched",
    [UCT_O2M_MODE_CENTRALIZED] = "centralized",
    [UCT_O2M_MODE_LOCKED]      = "locked",
    [UCT_O2M_MODE_ATOMIC]      = "atomic",
    [UCG_SM_MODE_AUTO]         = "auto",
    [UCG_SM_MODE_AUTO + 1]     = NULL
};


/* A time in seconds, or "inf" (printed as such, not as "infus") */
static int ucg_config_sscanf_timeout(const char *buf, void *dest,
                                     const void *arg)
{
    if (!strcasecmp(buf, "inf")) {
        *(double*)dest = INFINITY;
        return 1;
    }

    return ucs_config_sscanf_time(buf, dest, arg);
}

static int ucg_config_sprintf_timeout(char *buf, size_t max, const void *src,
                                      const void *arg)
{
    double value = *(const double*)src;

    return isinf(value) ? snprintf(buf, max, "inf") :
                          snprintf(buf, max, "%.9gs", value);
}

#define UCG_CONFIG_TYPE_TIMEOUT \
    {ucg_config_sscanf_timeout, ucg_config_sprintf_timeout, \
     ucs_config_clone_double,   ucs_config_release_nop, \
     ucs_config_help_generic,   "time value: <number>[s|us|ms|ns], or inf"}

ucs_config_field_t ucg_config_table[] = {
    {"HOSTS", "auto",
     "Which members share a host, for planning:\n"
     " auto           - the real hosts (members with shared memory);\n"
     " <k>            - every k consecutive global ranks form a host;\n"
     " <n1>,...,<nm>  - consecutive hosts of n1, n2, ... members in global\n"
     "                  rank order, the last size repeated.\n"
     "A layout other than auto makes virtual hosts: host-local phases then\n"
     "run inside each virtual host (all members must really share memory).",
     ucs_offsetof(ucg_config_t, hosts), UCS_CONFIG_TYPE_STRING},

    {"O2M", "try",
     "Use the one-to-many transports sm_bcast / sm_incast for host-local\n"
     "phases:\n"
     " try - when they are available and UCX_TLS allows them;\n"
     " yes - fail when they are not available;\n"
     " no  - never: every plan is point-to-point.",
     ucs_offsetof(ucg_config_t, o2m), UCS_CONFIG_TYPE_TERNARY},

    {"HIER", "auto",
     "Hierarchical plans (host-local sm phases + point-to-point between host\n"
     "leaders):\n"
     " auto - when the transports are usable and a host has several members;\n"
     " on   - whenever the transports are usable and hosts are shared;\n"
     " off  - always flat point-to-point plans.",
     ucs_offsetof(ucg_config_t, hier), UCS_CONFIG_TYPE_ENUM(ucg_hier_names)},

    {"BCAST_P2P", "auto",
     "Point-to-point method of bcast between host leaders (or between all\n"
     "members in a flat plan): auto or knomial (k-nomial tree, pipelined).",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_BCAST]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"REDUCE_P2P", "auto",
     "Point-to-point method of reduce: auto or knomial (k-nomial tree).\n"
     "Non-commutative reductions always gather and fold at the root.",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_REDUCE]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"ALLREDUCE_P2P", "auto",
     "Point-to-point method of allreduce:\n"
     " auto               - ring from ALLREDUCE_RING_THRESH bytes with more\n"
     "                      than 2 participants, else recursive doubling;\n"
     " recursive_doubling - always recursive doubling;\n"
     " ring               - always ring reduce-scatter + allgather;\n"
     " knomial            - k-nomial reduce to one member + k-nomial bcast.\n"
     "Non-commutative reductions always gather, fold at rank 0 and bcast.",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_ALLREDUCE]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"BARRIER_P2P", "auto",
     "Point-to-point method of barrier: auto or dissemination.",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_BARRIER]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"GATHER_P2P", "auto",
     "Point-to-point method of gather: auto or linear.",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_GATHER]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"SCATTER_P2P", "auto",
     "Point-to-point method of scatter: auto or linear.",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_SCATTER]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"ALLGATHER_P2P", "auto",
     "Point-to-point method of allgather:\n"
     " auto   - ring when (bytes per member) x (members) reaches\n"
     "          ALLGATHER_RING_THRESH, else linear;\n"
     " ring   - always the ring;\n"
     " linear - always every participant to every participant.",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_ALLGATHER]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"GATHERV_P2P", "auto",
     "Point-to-point method of gatherv (always flat): auto or linear.",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_GATHERV]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"SCATTERV_P2P", "auto",
     "Point-to-point method of scatterv (always flat): auto or linear.",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_SCATTERV]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"ALLGATHERV_P2P", "auto",
     "Method of allgatherv (the plan does not depend on the counts, which\n"
     "only the caller vouches for):\n"
     " auto   - sm_allgatherv on one host of at most SM_ALLREDUCE_MAX_PPN\n"
     "          members (every member fans out its block on sm_bcast),\n"
     "          else linear;\n"
     " linear - point-to-point, every member to every member;\n"
     " ring   - point-to-point ring (n - 1 steps, each block forwarded).",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_ALLGATHERV]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"ALLTOALL_P2P", "auto",
     "Method of alltoall (always point-to-point):\n"
     " auto     - pairwise from ALLTOALL_PAIRWISE_THRESH bytes per block\n"
     "            with more than 2 members, else linear;\n"
     " linear   - every send and receive posted at once;\n"
     " pairwise - size - 1 rounds, one send and one receive each.",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_ALLTOALL]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"ALLTOALLV_P2P", "auto",
     "Method of alltoallv (always point-to-point): auto (linear: the counts\n"
     "differ between members, which must all choose the same), linear or\n"
     "pairwise (as ALLTOALL_P2P).",
     ucs_offsetof(ucg_config_t, p2p_method[UCG_COLL_ALLTOALLV]),
     UCS_CONFIG_TYPE_ENUM(ucg_p2p_method_names)},

    {"SM_BCAST_MODE", "auto",
     "Mode of the host-local sm_bcast groups: batched, centralized, or auto\n"
     "(batched up to SM_BATCHED_MAX_PPN members per host, else centralized).",
     ucs_offsetof(ucg_config_t, sm_bcast_mode),
     UCS_CONFIG_TYPE_ENUM(ucg_sm_mode_names)},

    {"SM_INCAST_MODE", "auto",
     "Mode of the host-local sm_incast groups: batched, centralized, locked,\n"
     "atomic, or auto.  Gathers use batched or centralized only (a forced\n"
     "locked or atomic mode applies to reductions; gathers then follow the\n"
     "auto rule).  auto: reductions of at least SM_LOCKED_THRESH bytes on\n"
     "hosts of more than 2 members use locked; otherwise batched up to\n"
     "SM_BATCHED_MAX_PPN members per host, else centralized.  When the mode\n"
     "cannot reduce the operation and type itself, the transport gathers\n"
     "and the host leader reduces.",
     ucs_offsetof(ucg_config_t, sm_incast_mode),
     UCS_CONFIG_TYPE_ENUM(ucg_sm_mode_names)},

    {"KNOMIAL_RADIX", "4",
     "Radix of the k-nomial trees of bcast and reduce (at least 2).",
     ucs_offsetof(ucg_config_t, knomial_radix), UCS_CONFIG_TYPE_UINT},

    {"P2P_FRAG_SIZE", "64k",
     "Fragment size of the pipelined point-to-point bcast: messages larger\n"
     "than twice this size are sent in fragments of this size; inf: never.",
     ucs_offsetof(ucg_config_t, p2p_frag_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"SM_FRAG_SIZE", "auto",
     "Fragment size of host-local phases.  auto: the largest bcopy message of\n"
     "sm_bcast / sm_incast minus UCG's 16-byte header.  Reductions use a\n"
     "multiple of the element size.",
     ucs_offsetof(ucg_config_t, sm_frag_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"ALLREDUCE_RING_THRESH", "64k",
     "Allreduce messages of at least this many bytes use the ring between\n"
     "more than 2 participants (with ALLREDUCE_P2P=auto); inf: never.",
     ucs_offsetof(ucg_config_t, allreduce_ring_thresh),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"ALLGATHER_RING_THRESH", "64k",
     "Allgathers whose result (bytes per member x members) is at least this\n"
     "size use the ring (with ALLGATHER_P2P=auto); inf: never.",
     ucs_offsetof(ucg_config_t, allgather_ring_thresh),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"ALLTOALL_PAIRWISE_THRESH", "inf",
     "Alltoalls of at least this many bytes per member pair (count x element\n"
     "size) use the pairwise exchange between more than 2 members (with\n"
     "ALLTOALL_P2P=auto): one round at a time bounds what is in flight;\n"
     "smaller ones post everything at once.  inf (the default): never - on\n"
     "one host linear was faster at every size (docs/ucg.md).",
     ucs_offsetof(ucg_config_t, alltoall_pairwise_thresh),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"SM_BATCHED_MAX_PPN", "8",
     "Hosts with at most this many members use the batched mode of the sm\n"
     "transports (with SM_*_MODE=auto); larger ones use centralized.",
     ucs_offsetof(ucg_config_t, sm_batched_max_ppn), UCS_CONFIG_TYPE_UINT},

    {"SM_ALLREDUCE_MAX", "2k",
     "Allreduce of at most this many bytes per member on one host of at most\n"
     "SM_ALLREDUCE_MAX_PPN members (commutative operations, ALLREDUCE_P2P=auto)\n"
     "is one sm_allreduce phase: every member fans out its vector and every\n"
     "member reduces all of them in rank order (one hop instead of a fan-in\n"
     "and a fan-out).  The same bound (bytes of the whole vector) makes\n"
     "reduce_scatter, reduce_scatter_block, scan and exscan on such a host\n"
     "sm_reduce_scatter / sm_scan (any operation).  0: never.",
     ucs_offsetof(ucg_config_t, sm_allreduce_max), UCS_CONFIG_TYPE_MEMUNITS},

    {"SM_SCATTER_MAX", "4k",
     "Scatter of more bytes per member than this is flat point-to-point:\n"
     "the host-local phase (sm_bcast) gives every member all the blocks of\n"
     "its host.  inf: no limit.",
     ucs_offsetof(ucg_config_t, sm_scatter_max), UCS_CONFIG_TYPE_MEMUNITS},

    {"SM_ALLGATHER_MAX", "64k",
     "Allgather of more bytes per member than this is flat point-to-point:\n"
     "the host-local phases (sm_gather, sm_bcast) copy the whole result twice.\n"
     "inf: no limit.",
     ucs_offsetof(ucg_config_t, sm_allgather_max), UCS_CONFIG_TYPE_MEMUNITS},

    {"SM_ALLREDUCE_MAX_PPN", "4",
     "Largest host for sm_allreduce (see SM_ALLREDUCE_MAX), also used by\n"
     "barriers on one host (BARRIER_P2P=auto), sm_reduce_scatter, sm_scan\n"
     "and sm_allgatherv: every member receives from every other one.",
     ucs_offsetof(ucg_config_t, sm_allreduce_max_ppn), UCS_CONFIG_TYPE_UINT},

    {"SM_LOCKED_THRESH", "inf",
     "Host-local reductions of at least this many bytes per member use the\n"
     "locked mode of sm_incast on hosts of more than 2 members (with\n"
     "SM_INCAST_MODE=auto); inf: never.",
     ucs_offsetof(ucg_config_t, sm_locked_thresh), UCS_CONFIG_TYPE_MEMUNITS},

    {"SM_BCAST_CMA_THRESH", "16k",
     "Host-local bcast of at least this many bytes is single-copy: the root\n"
     "sends the address of its buffer (sm_bcast), every member reads it with\n"
     "process_vm_readv and acknowledges (sm_incast), instead of two copies\n"
     "through shared memory.  inf: never (where process_vm_readv between the\n"
     "processes is not permitted).",
     ucs_offsetof(ucg_config_t, sm_bcast_cma_thresh), UCS_CONFIG_TYPE_MEMUNITS},

    {"SM_BCAST_2LEVEL_PPN", "32",
     "Hosts of at least this many members get a two-level host-local bcast:\n"
     "the members are cut into ceil(sqrt(members)) sub-groups, the root fans\n"
     "out on sm_bcast to the leaders of the others, then each leader, and the\n"
     "root, to its own (one more hop, fewer readers of each line).  Bcast\n"
     "only, on hosts of at least 4 members, below\n"
     "SM_BCAST_CMA_THRESH.  The default comes from the model of\n"
     "docs/performance.md (two levels beat one from 16 to 32 processes per\n"
     "host, by the cost of one more reader of a line), not from a\n"
     "measurement: a 2-core machine cannot run 16 processes per host.\n"
     "2: every host of 4 or more members (tests); inf: never.",
     ucs_offsetof(ucg_config_t, sm_bcast_2level_ppn), UCS_CONFIG_TYPE_UINT},

    {"SM_REDUCE_CMA_THRESH", "256k",
     "Host-local reduce (MPI_Reduce; commutative operations) of at least this\n"
     "many bytes per member is single-copy: every member sends the address of\n"
     "its vector (sm_incast), the root reads each one with process_vm_readv\n"
     "and reduces it, then releases the members (sm_bcast), instead of a copy\n"
     "through shared memory that the root reads from the other core's cache.\n"
     "Below it the members copy their vectors through the fan-in ring and\n"
     "leave, while the root reduces the fragments as they come: at 32-128\n"
     "KiB that was 3-4x faster than the single copy, which waits for the\n"
     "whole read (docs/performance.md).  inf: never (where process_vm_readv\n"
     "between the processes is not permitted).",
     ucs_offsetof(ucg_config_t, sm_reduce_cma_thresh), UCS_CONFIG_TYPE_MEMUNITS},

    {"PEER_TIMEOUT", "inf",
     "Opt-in deadline for waits on members that do not answer where waiting\n"
     "is not the application's choice; inf (the default): wait as long as\n"
     "the members live.  When set, it bounds: a host-local (sm) operation\n"
     "waiting for a member that has not joined its group (counted from when\n"
     "the operation started waiting, not from the group's creation), each\n"
     "flush when a group is destroyed, and the interfaces' wait for members\n"
     "that join a destroyed group late when the context is destroyed, and\n"
     "the sends of a collective that failed.  When inf, closing the context\n"
     "waits at most 24 hours for peers on other hosts, and a failed\n"
     "collective waits 10 s for its sends.  A collective itself waits as\n"
     "long as its members take to arrive; a member that exited on this host\n"
     "fails it within CHECK_INTERVAL, and a member that finished and left\n"
     "is never a failure.",
     ucs_offsetof(ucg_config_t, peer_timeout), UCG_CONFIG_TYPE_TIMEOUT},

    {"CHECK_INTERVAL", "100ms",
     "How often a waiting collective checks that the members on this host\n"
     "are alive.",
     ucs_offsetof(ucg_config_t, check_interval), UCS_CONFIG_TYPE_TIME},

    {"RX_WATCH_POLLS", "128",
     "A collective that waits for the next message of one host-local\n"
     "fan-out endpoint (an sm_bcast member, a two-member exchange)\n"
     "polls the word of shared memory that message changes, and progresses\n"
     "everything (all interfaces, UCP, the other collectives, the liveness\n"
     "checks) after this many polls: a full poll costs hundreds of\n"
     "instructions, which delay seeing the message.  When the word changes,\n"
     "it progresses that endpoint's interface and the collectives only,\n"
     "and everything at least once in this many such polls.  0: progress\n"
     "everything on every poll.",
     ucs_offsetof(ucg_config_t, rx_watch_polls), UCS_CONFIG_TYPE_UINT},

    {"SM_MAX_GROUPS", "256",
     "Host-local groups that can be rooted at each of the sm_bcast /\n"
     "sm_incast interfaces UCG opens at the same time (their MAX_GROUPS).",
     ucs_offsetof(ucg_config_t, sm_max_groups), UCS_CONFIG_TYPE_UINT},

    {"SM_GROUP_EPS", "8",
     "Host-local endpoints a UCG group may root at each member, per sm\n"
     "interface: reserved out of SM_MAX_GROUPS when the group is created (as\n"
     "many as are left), agreed by all members.  A collective whose plan\n"
     "needs more uses point-to-point messages instead.  With SM_MAX_GROUPS,\n"
     "bounds the shared memory a group keeps mapped (docs/ucg.md).",
     ucs_offsetof(ucg_config_t, sm_group_eps), UCS_CONFIG_TYPE_UINT},

    {"SM_GROUP_MEM", "256m",
     "Bytes of host-local segments a UCG group may have on one host: the\n"
     "segments of the endpoints rooted at the members of the host (each\n"
     "pre-faulted, a fan-in ring up to the transports' RING_MAX, 16 MiB).\n"
     "The smallest value of all members applies.  A collective whose plan\n"
     "would exceed it uses point-to-point messages instead, decided alike on\n"
     "every member; inf: no bound but SM_GROUP_EPS.",
     ucs_offsetof(ucg_config_t, sm_group_mem), UCS_CONFIG_TYPE_MEMUNITS},

    {"MC", "try",
     "Broadcasts between host leaders over multicast (the mc_mlx5, mc_verbs\n"
     "or mc_udp transport, MC_TL; docs/multicast.md):\n"
     " try - when the group spans real hosts and every leader has one of\n"
     "       them open (UCX_TLS allows it, it has a device);\n"
     " yes - also between virtual hosts (HOSTS); creating a context fails\n"
     "       when none can be opened;\n"
     " no  - never: the leaders broadcast point-to-point.\n"
     "A leader that cannot join a group makes every leader of that\n"
     "broadcast use point-to-point instead (all or none).",
     ucs_offsetof(ucg_config_t, mc), UCS_CONFIG_TYPE_TERNARY},

    {"MC_TL", "auto",
     "Multicast transport of the broadcasts between host leaders:\n"
     " auto     - a context opens every one of mc_mlx5, mc_verbs and mc_udp\n"
     "            that UCX_TLS allows and that has a device, and a group\n"
     "            takes the first of them, in that order, that every\n"
     "            member has (point-to-point when there is none);\n"
     " mc_mlx5, mc_verbs, mc_udp - that one only.",
     ucs_offsetof(ucg_config_t, mc_tl),
     UCS_CONFIG_TYPE_ENUM(ucg_mc_tl_names)},

    {"MC_DEVICE", "auto",
     "Device of the multicast transports (e.g. eth0 for mc_udp, mlx5_0:1\n"
     "or rxe0:1 for mc_verbs; a transport without it is not opened).\n"
     "auto: for each transport, the first device of UCX_NET_DEVICES that it\n"
     "has, else its first device other than loopback, else loopback (which\n"
     "reaches this host only).",
     ucs_offsetof(ucg_config_t, mc_device), UCS_CONFIG_TYPE_STRING},

    {"MC_MAX_SIZE", "4k",
     "Broadcasts between host leaders of at most this many bytes use\n"
     "multicast; larger ones stay point-to-point (pipelined k-nomial tree).\n"
     "Across 3 hosts multicast was slower than point-to-point from 8 KiB\n"
     "(docs/performance.md); inf: every size.",
     ucs_offsetof(ucg_config_t, mc_max_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"LOG_PLANS", "n",
     "Print every new plan (ucs_info level, visible with UCX_LOG_LEVEL=info).",
     ucs_offsetof(ucg_config_t, log_plans), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};


ucs_status_t ucg_config_read(const char *env_prefix, ucg_config_t **config_p)
{
    ucg_config_t *config;
    ucs_status_t status;
    size_t len;

    if (config_p == NULL) {
        ucs_error("ucg_config_read: config_p is NULL");
        return UCS_ERR_INVALID_PARAM;
    }

    config = ucs_calloc(1, sizeof(*config), "ucg_config");
    if (config == NULL) {
        ucs_error("failed to allocate the UCG configuration");
        return UCS_ERR_NO_MEMORY;
    }

    if (env_prefix == NULL) {
        env_prefix = UCG_CONFIG_ENV_PREFIX;
    }

    /* The parser wants the prefix to end with '_' */
    len = strlen(env_prefix);
    if ((len == 0) || ((len == 1) && (env_prefix[0] == '_'))) {
        ucs_error("invalid UCG environment prefix '%s'", env_prefix);
        status = UCS_ERR_INVALID_PARAM;
        goto err_free;
    }

    config->env_prefix = ucs_malloc(len + 2, "ucg_config_prefix");
    if (config->env_prefix == NULL) {
        ucs_error("failed to allocate the UCG configuration prefix");
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }

    memcpy(config->env_prefix, env_prefix, len + 1);
    if (env_prefix[len - 1] != '_') {
        strcat(config->env_prefix, "_");
    }

    status = ucs_config_parser_fill_opts(config, ucg_config_table,
                                         config->env_prefix,
                                         UCG_CONFIG_TABLE_PREFIX, 0);
    if (status != UCS_OK) {
        ucs_error("failed to read the UCG configuration (%sUCG_*): %s",
                  config->env_prefix, ucs_status_string(status));
        goto err_free_prefix;
    }

    *config_p = config;
    return UCS_OK;

err_free_prefix:
    ucs_free(config->env_prefix);
err_free:
    ucs_free(config);
    return status;
}

void ucg_config_release(ucg_config_t *config)
{
    if (config == NULL) {
        return;
    }

    ucs_config_parser_release_opts(config, ucg_config_table);
    ucs_free(config->env_prefix);
    ucs_free(config);
}

ucs_status_t ucg_config_modify(ucg_config_t *config, const char *name,
                               const char *value)
{
    ucs_status_t status;

    if ((config == NULL) || (name == NULL) || (value == NULL)) {
        ucs_error("ucg_config_modify: NULL argument");
        return UCS_ERR_INVALID_PARAM;
    }

    status = ucs_config_parser_set_value(config, ucg_config_table, name,
                                         value);
    if (status == UCS_ERR_NO_ELEM) {
        ucs_error("no UCG configuration variable '%s'", name);
    } else if (status != UCS_OK) {
        ucs_error("invalid value '%s' for %s%s%s: %s", value,
                  config->env_prefix, UCG_CONFIG_TABLE_PREFIX, name,
                  ucs_status_string(status));
    }

    return status;
}

void ucg_config_print(const ucg_config_t *config, FILE *stream,
                      const char *title, ucs_config_print_flags_t print_flags)
{
    if ((config == NULL) || (stream == NULL)) {
        return;
    }

    ucs_config_parser_print_opts(stream,
                                 (title != NULL) ? title : "UCG configuration",
                                 config, ucg_config_table,
                                 UCG_CONFIG_TABLE_PREFIX, config->env_prefix,
                                 print_flags);
}

/*
 * A configuration to be filled from @a src, in *@a dst_p: zeroed, with
 * @a src's environment prefix (not a table field: the parser does not copy
 * it).  @a func names the caller, whose output argument @a out is checked
 * too, in the log line of a NULL argument.
 */
static ucs_status_t ucg_config_alloc(const ucg_config_t *src,
                                     ucg_config_t **out, const char *func,
                                     ucg_config_t **dst_p)
{
    ucg_config_t *dst;

    if ((src == NULL) || (out == NULL)) {
        ucs_error("%s: NULL argument", func);
        return UCS_ERR_INVALID_PARAM;
    }

    dst = ucs_calloc(1, sizeof(*dst), "ucg_config");
    if (dst == NULL) {
        ucs_error("%s: failed to allocate a UCG configuration", func);
        return UCS_ERR_NO_MEMORY;
    }

    dst->env_prefix = ucs_strdup(src->env_prefix, "ucg_config_prefix");
    if (dst->env_prefix == NULL) {
        ucs_error("%s: failed to copy the UCG configuration prefix", func);
        ucs_free(dst);
        return UCS_ERR_NO_MEMORY;
    }

    *dst_p = dst;
    return UCS_OK;
}

/* Undo a ucg_config_alloc whose fields were filled up to a failure (the
 * fields not reached are zero, which the release skips) */
static void ucg_config_free_partial(ucg_config_t *dst)
{
    ucs_config_parser_release_opts(dst, ucg_config_table);
    ucs_free(dst->env_prefix);
    ucs_free(dst);
}

ucs_status_t ucg_config_dup(const ucg_config_t *src, ucg_config_t **dst_p)
{
    ucg_config_t *dst;
    ucs_status_t status;

    status = ucg_config_alloc(src, dst_p, "ucg_config_dup", &dst);
    if (status != UCS_OK) {
        return status;
    }

    status = ucs_config_parser_clone_opts(src, dst, ucg_config_table);
    if (status != UCS_OK) {
        ucg_config_free_partial(dst);
        return status;
    }

    *dst_p = dst;
    return UCS_OK;
}


/*
 * Variables whose value may differ between the members of a group without
 * making them plan differently: what the members exchange and agree on at
 * creation (HOSTS gives each member's host label, O2M and MC_TL what it
 * opened, SM_GROUP_MEM the smallest of all), what applies to this process
 * only (timeouts, how it waits, sm resources of its interfaces, MC_DEVICE,
 * LOG_PLANS).
 * Every other variable is the planner's: the members must agree on it
 * (ucg_config_plan_hash), so a new variable is one by default.
 */
static const char *ucg_config_local_vars[] = {
    "HOSTS", "O2M", "PEER_TIMEOUT", "CHECK_INTERVAL", "RX_WATCH_POLLS",
    "SM_MAX_GROUPS",
    "SM_GROUP_EPS", "SM_GROUP_MEM", "MC_TL", "MC_DEVICE", "LOG_PLANS", NULL
};

int ucg_config_is_plan_var(const char *name)
{
    const char **var;

    for (var = ucg_config_local_vars; *var != NULL; ++var) {
        if (!strcmp(*var, name)) {
            return 0;
        }
    }
    return 1;
}

/* FNV-1a over @a str and its terminating zero, chained through @a hash */
static uint64_t ucg_config_hash_str(uint64_t hash, const char *str)
{
    const char *p = str;

    do {
        hash = (hash ^ (uint8_t)*p) * 0x100000001b3ull;
    } while (*(p++) != '\0');
    return hash;
}

uint64_t ucg_config_plan_hash(const ucg_config_t *config)
{
    uint64_t hash = 0xcbf29ce484222325ull; /* FNV-1a */
    const ucs_config_field_t *field;
    char value[256];

    for (field = ucg_config_table; field->name != NULL; ++field) {
        if (!ucg_config_is_plan_var(field->name)) {
            continue;
        }
        /* "NAME=value": the text, not the bytes, so that padding and
         * unused bits of a field do not count */
        value[0] = '\0';
        field->parser.write(value, sizeof(value),
                            UCS_PTR_BYTE_OFFSET(config, field->offset),
                            field->parser.arg);
        hash = ucg_config_hash_str(hash, field->name);
        hash = ucg_config_hash_str(hash, value);
    }
    return hash;
}

ucs_status_t ucg_config_plan_defaults(const ucg_config_t *src,
                                      ucg_config_t **dst_p)
{
    const ucs_config_field_t *field;
    ucg_config_t *dst;
    ucs_status_t status;
    const void *from;
    void *to;

    status = ucg_config_alloc(src, dst_p, "ucg_config_plan_defaults",
                              &dst);
    if (status != UCS_OK) {
        return status;
    }

    /* The planner's variables from the table's defaults, the others
     * copied; on failure the fields not reached are zero */
    status = UCS_OK;
    for (field = ucg_config_table; field->name != NULL; ++field) {
        to = UCS_PTR_BYTE_OFFSET(dst, field->offset);
        if (ucg_config_is_plan_var(field->name)) {
            if (!field->parser.read(field->dfl_value, to,
                                    field->parser.arg)) {
                ucs_error("UCG: bad default '%s' of %s", field->dfl_value,
                          field->name);
                status = UCS_ERR_INVALID_PARAM;
                break;
            }
        } else {
            from   = UCS_PTR_BYTE_OFFSET(src, field->offset);
            status = field->parser.clone(from, to, field->parser.arg);
            if (status != UCS_OK) {
                break;
            }
        }
    }
    if (status != UCS_OK) {
        ucg_config_free_partial(dst);
        return status;
    }

    *dst_p = dst;
    return UCS_OK;
}
