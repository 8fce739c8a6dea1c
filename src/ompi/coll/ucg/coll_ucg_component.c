/**
 * coll/ucg component: MCA parameters and the process-wide UCG context.
 */
#include "coll_ucg_int.h"
#include "opal/runtime/opal_progress.h"

#include "opal/util/output.h"
#include "opal/mca/base/mca_base_var.h"
#include "ompi/mca/pml/base/base.h"

#include <stdio.h>
#include <string.h>

const char *mca_coll_ucg_coll_names[COLL_UCG_NUM] = {
    [COLL_UCG_BCAST]     = "bcast",
    [COLL_UCG_ALLREDUCE] = "allreduce",
    [COLL_UCG_REDUCE]    = "reduce",
    [COLL_UCG_BARRIER]   = "barrier",
    [COLL_UCG_GATHER]    = "gather",
    [COLL_UCG_SCATTER]   = "scatter",
    [COLL_UCG_ALLGATHER] = "allgather",
    [COLL_UCG_REDUCE_SCATTER]       = "reduce_scatter",
    [COLL_UCG_REDUCE_SCATTER_BLOCK] = "reduce_scatter_block",
    [COLL_UCG_SCAN]                 = "scan",
    [COLL_UCG_EXSCAN]               = "exscan",
    [COLL_UCG_GATHERV]   = "gatherv",
    [COLL_UCG_SCATTERV]  = "scatterv",
    [COLL_UCG_ALLGATHERV] = "allgatherv",
    [COLL_UCG_ALLTOALL]  = "alltoall",
    [COLL_UCG_ALLTOALLV] = "alltoallv",
    [COLL_UCG_IBCAST]     = "ibcast",
    [COLL_UCG_IALLREDUCE] = "iallreduce",
    [COLL_UCG_IREDUCE]    = "ireduce",
    [COLL_UCG_IBARRIER]   = "ibarrier",
    [COLL_UCG_IGATHER]    = "igather",
    [COLL_UCG_ISCATTER]   = "iscatter",
    [COLL_UCG_IALLGATHER] = "iallgather",
    [COLL_UCG_IREDUCE_SCATTER]       = "ireduce_scatter",
    [COLL_UCG_IREDUCE_SCATTER_BLOCK] = "ireduce_scatter_block",
    [COLL_UCG_ISCAN]                 = "iscan",
    [COLL_UCG_IEXSCAN]               = "iexscan",
    [COLL_UCG_IGATHERV]   = "igatherv",
    [COLL_UCG_ISCATTERV]  = "iscatterv",
    [COLL_UCG_IALLGATHERV] = "iallgatherv",
    [COLL_UCG_IALLTOALL]  = "ialltoall",
    [COLL_UCG_IALLTOALLV] = "ialltoallv",
    [COLL_UCG_BCAST_INIT]     = "bcast_init",
    [COLL_UCG_ALLREDUCE_INIT] = "allreduce_init",
    [COLL_UCG_REDUCE_INIT]    = "reduce_init",
    [COLL_UCG_BARRIER_INIT]   = "barrier_init",
    [COLL_UCG_GATHER_INIT]    = "gather_init",
    [COLL_UCG_SCATTER_INIT]   = "scatter_init",
    [COLL_UCG_ALLGATHER_INIT] = "allgather_init",
    [COLL_UCG_REDUCE_SCATTER_INIT]       = "reduce_scatter_init",
    [COLL_UCG_REDUCE_SCATTER_BLOCK_INIT] = "reduce_scatter_block_init",
    [COLL_UCG_SCAN_INIT]                 = "scan_init",
    [COLL_UCG_EXSCAN_INIT]               = "exscan_init",
    [COLL_UCG_GATHERV_INIT]    = "gatherv_init",
    [COLL_UCG_SCATTERV_INIT]   = "scatterv_init",
    [COLL_UCG_ALLGATHERV_INIT] = "allgatherv_init",
    [COLL_UCG_ALLTOALL_INIT]   = "alltoall_init",
    [COLL_UCG_ALLTOALLV_INIT]  = "alltoallv_init"
};

static int coll_ucg_register(void);
static int coll_ucg_open(void);
static int coll_ucg_close(void);
static int coll_ucg_init_query(bool enable_progress_threads,
                               bool enable_mpi_threads);

mca_coll_ucg_component_t mca_coll_ucg_component = {
    .super = {
        .collm_version = {
            COLL_UCG_BASE_VERSION,
            .mca_component_name            = "ucg",
            MCA_BASE_MAKE_VERSION(component, 1, 0, 0),
            .mca_open_component            = coll_ucg_open,
            .mca_close_component           = coll_ucg_close,
            .mca_register_component_params = coll_ucg_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = coll_ucg_init_query,
        .collm_comm_query = mca_coll_ucg_comm_query,
    },
    .priority = 90,
    .enable   = true,
    .verbose  = 0,
};

/*
 * The Open MPI this process runs must be the one coll/ucg was built
 * against (coll_ucg.h): one built against 4.1 and loaded by 5.0 (both
 * libmpi.so.40, both searching ~/.openmpi/components) would read
 * structures of another layout.  Checked first, before anything else of
 * the component runs; on a mismatch it is not used (one line).
 */
static int coll_ucg_check_ompi_version(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len, major, minor;

    if ((PMPI_Get_library_version(version, &len) != MPI_SUCCESS) ||
        (sscanf(version, "Open MPI v%d.%d", &major, &minor) != 2)) {
        opal_output(0, "coll:ucg: cannot tell the version of this Open MPI "
                    "('%.60s'); built against %d.%d: not used", version,
                    OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION);
        return OMPI_ERROR;
    }
    if ((major != OMPI_MAJOR_VERSION) || (minor != OMPI_MINOR_VERSION)) {
        opal_output(0, "coll:ucg: built against Open MPI %d.%d, loaded by "
                    "Open MPI %d.%d: not used", OMPI_MAJOR_VERSION,
                    OMPI_MINOR_VERSION, major, minor);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

static int coll_ucg_register(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;
    const mca_base_component_t *v = &c->super.collm_version;
    char name[64], desc[256];
    int i;

    if (coll_ucg_check_ompi_version() != OMPI_SUCCESS) {
        return OMPI_ERROR;
    }

    c->priority = 90;
    mca_base_component_var_register(v, "priority",
            "Priority of the ucg coll component (higher than tuned's, so it "
            "is enabled last and delegates to the module before it)",
            MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
            MCA_BASE_VAR_SCOPE_READONLY, &c->priority);

    c->enable = true;
    mca_base_component_var_register(v, "enable",
            "Use UCG for collectives (0: the component gives no module)",
            MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4,
            MCA_BASE_VAR_SCOPE_READONLY, &c->enable);

    c->verbose = 0;
    mca_base_component_var_register(v, "verbose",
            "Verbosity: 1 prints per-communicator counts of collectives run "
            "by UCG and delegated when the communicator is freed; 2 also "
            "logs module selection",
            MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
            MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose);

    c->rules_file = "";
    mca_base_component_var_register(v, "rules_file",
            "Tuning rules (docs/ucg.md, \"Tuning rules\"; written by "
            "contrib/ucg-tune.sh): per collective, group size, processes "
            "per host and message size, whether a call runs on UCG (its "
            "planner's plan or the flat one) or goes to the previous "
            "module.  Empty: the built-in table of the selected pml "
            "(ucx, or the one measured with ob1 for any other; ucg_info "
            "-R [--pml ucx] prints it); "
            "\"none\": no rules, every call on UCG.  Every rank must read "
            "the same rules: where they differ, or a file is bad, the "
            "built-in table is used, with one warning",
            MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4,
            MCA_BASE_VAR_SCOPE_READONLY, &c->rules_file);

    c->test_fail_rank = -1;
    mca_base_component_var_register(v, "test_fail_rank",
            "Test only: the MPI_COMM_WORLD rank on which the preparation of "
            "a call fails (see test_fail_call; -1: none)",
            MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
            MCA_BASE_VAR_SCOPE_READONLY, &c->test_fail_rank);

    c->test_fail_call = 1;
    mca_base_component_var_register(v, "test_fail_call",
            "Test only: on test_fail_rank, the preparation (buffers, UCG "
            "request) of this call among the calls that need an agreement "
            "(counted from 1 over all communicators) fails as if out of "
            "memory; with test_fail_point 1 or 2, which group creation or "
            "start fails",
            MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
            MCA_BASE_VAR_SCOPE_READONLY, &c->test_fail_call);

    c->test_fail_point = COLL_UCG_TEST_FAIL_PREPARE;
    mca_base_component_var_register(v, "test_fail_point",
            "Test only: what fails on test_fail_rank at the test_fail_call-"
            "th time: 0 the preparation of a call that needs an agreement, "
            "1 the creation of a UCG group (its second out-of-band round, "
            "counted over communicators), 2 the start of a call that the "
            "ranks run on UCG (counted over those calls), 3 the start of a "
            "nonblocking call run on UCG (counted over those, Open MPI's "
            "own at communicator creation included)",
            MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9,
            MCA_BASE_VAR_SCOPE_READONLY, &c->test_fail_point);

    for (i = 0; i < COLL_UCG_NUM; ++i) {
        c->coll_enable[i] = true;
        c->coll_max_bytes[i] = 0;
        if (!COLL_UCG_HAVE_PERSISTENT && COLL_UCG_IS_PERSISTENT(i)) {
            continue; /* the previous module's with this Open MPI */
        }
        snprintf(name, sizeof(name), "%s_enable", mca_coll_ucg_coll_names[i]);
        snprintf(desc, sizeof(desc), "Run %s on UCG (0: always "
                 "delegate to the previous module)", mca_coll_ucg_coll_names[i]);
        mca_base_component_var_register(v, name, desc, MCA_BASE_VAR_TYPE_BOOL,
                NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                &c->coll_enable[i]);

        if ((i == COLL_UCG_BARRIER) || (i == COLL_UCG_BARRIER_INIT) ||
            mca_coll_ucg_coll_is_v(i) || mca_coll_ucg_coll_is_alltoallv(i)) {
            continue; /* no data, or no size common to all ranks */
        }
        snprintf(name, sizeof(name), "%s_max_bytes", mca_coll_ucg_coll_names[i]);
        snprintf(desc, sizeof(desc), "Largest %s message (bytes %s) run "
                 "on UCG; larger ones are delegated (0: no limit)",
                 mca_coll_ucg_coll_names[i],
                 ((i == COLL_UCG_REDUCE_SCATTER) ||
                  (i == COLL_UCG_IREDUCE_SCATTER) ||
                  (i == COLL_UCG_REDUCE_SCATTER_INIT)) ?
                 "of the whole vector" :
                                                     "per member");
        mca_base_component_var_register(v, name, desc,
                MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5,
                MCA_BASE_VAR_SCOPE_READONLY, &c->coll_max_bytes[i]);
    }
    return OMPI_SUCCESS;
}

static int coll_ucg_open(void)
{
    mca_coll_ucg_component.ucg_context    = NULL;
    mca_coll_ucg_component.context_failed = false;
    mca_coll_ucg_component.num_groups     = 0;
    mca_coll_ucg_component.test_agreed_calls = 0;
    mca_coll_ucg_component.rules_loaded      = false;
    mca_coll_ucg_component.rules_mismatch_warned = false;
    mca_coll_ucg_component.nb_progress    = false;
    ucs_list_head_init(&mca_coll_ucg_component.nb_active);
    mca_coll_ucg_component.persist_progress = false;
    ucs_list_head_init(&mca_coll_ucg_component.persist_active);
    return OMPI_SUCCESS;
}

/*
 * UCG progressed by Open MPI's progress engine (low priority: every few
 * opal_progress() calls), also while this process waits in something else
 * (a delegated collective, a point-to-point wait): a member of one of UCG's
 * multicast groups acknowledges there what it received, else the group's root
 * could wait for it (its window full) while it waits for that root in
 * Open MPI.  A UCG collective that runs progresses UCG itself.
 */
static int coll_ucg_progress_cb(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;

    return (c->ucg_context != NULL) ? (int)ucg_progress(c->ucg_context) : 0;
}

static int coll_ucg_close(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;

    coll_ucg_nb_close();
    coll_ucg_persist_close();
    if (c->ucg_context == NULL) {
        return OMPI_SUCCESS;
    }
    if (c->num_groups != 0) {
        /* a communicator was never freed: its group still uses the context */
        opal_output(0, "coll:ucg: %d UCG groups still exist at close, "
                    "not destroying the UCG context", c->num_groups);
        return OMPI_SUCCESS;
    }
    opal_progress_unregister(coll_ucg_progress_cb);
    ucg_context_destroy(c->ucg_context);
    c->ucg_context = NULL;
    return OMPI_SUCCESS;
}

static int coll_ucg_init_query(bool enable_progress_threads,
                               bool enable_mpi_threads)
{
    /* a UCG context is used by one thread at a time (api/ucg.h) */
    return enable_mpi_threads ? OMPI_ERR_NOT_SUPPORTED : OMPI_SUCCESS;
}

ucg_context_h mca_coll_ucg_get_context(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;
    ucs_status_t status;

    if ((c->ucg_context == NULL) && !c->context_failed) {
        status = ucg_context_create(NULL, NULL, &c->ucg_context);
        if (status != UCS_OK) {
            opal_output(0, "coll:ucg: ucg_context_create failed: %s; "
                        "delegating all collectives",
                        ucs_status_string(status));
            c->ucg_context    = NULL;
            c->context_failed = true;
        } else {
            opal_progress_register_lp(coll_ucg_progress_cb);
        }
    }
    return c->ucg_context;
}

const ucg_rules_t *mca_coll_ucg_get_rules(void)
{
    mca_coll_ucg_component_t *c = &mca_coll_ucg_component;
    const char *file            = c->rules_file;
    char err[512];
    ucs_status_t status;

    if (c->rules_loaded) {
        return &c->rules;
    }
    c->rules_loaded = true;
    /* Rules are looked up once the pml is selected (at communicator
     * creation): its table, since the previous module runs over it */
    ucg_rules_builtin(mca_pml_base_selected_component.pmlm_version
                              .mca_component_name,
                      &c->builtin_rules);

    if ((file == NULL) || (file[0] == '\0')) {
        c->rules = c->builtin_rules;
    } else if (!strcmp(file, "none")) {
        /* no rule: every call runs on UCG, the planner's plan */
        status = ucg_rules_parse("ucg-rules 1\n", 12, "none", &c->rules,
                                 err, sizeof(err));
        if (status != UCS_OK) {
            c->rules = c->builtin_rules;
        }
    } else {
        status = ucg_rules_load(file, &c->rules, err, sizeof(err));
        if (status != UCS_OK) {
            /* One warning per job when every rank reads the same bad
             * file; a rank alone with a bad file is found at the
             * agreement of the tables (coll_ucg_module_enable) */
            if ((ompi_comm_rank(&ompi_mpi_comm_world.comm) == 0) ||
                (c->verbose >= 1)) {
                opal_output(0, "coll:ucg: %s; using the built-in tuning "
                            "rules", err);
            }
            c->rules = c->builtin_rules;
        }
    }
    return &c->rules;
}
