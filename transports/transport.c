/* SPDX-License-Identifier: BSD-3-Clause */
#include "transports/transport.h"

#include <stdlib.h>
#include <string.h>

#include "services/log.h"

/* Open MPI, MPICH and Slurm each export one of these into every rank. */
static int started_by_launcher(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]) != NULL)
            return 1;
    return 0;
}

const char *const *grain_transports_built(void)
{
    static const char *const names[] = {"self",
#ifdef GRAIN_HAVE_MPI
                                        "mpi",
#endif
#ifdef GRAIN_HAVE_VERBS_TRANSPORT
                                        "verbs",
#endif
                                        NULL};
    return names;
}

static grain_status_t select_one(const char *name, const void *mpi_comm, const grain_transport_ops_t **ops_p)
{
    if (strcmp(name, "verbs") == 0) {
#ifdef GRAIN_HAVE_VERBS_TRANSPORT
        *ops_p = &grain_transport_verbs;
        return GRAIN_OK;
#else
        return grain_fail(GRAIN_ERR_CONFIG,
                          "GRAIN_TRANSPORT=verbs, but this grain was built without the verbs transport, which "
                          "needs libibverbs and MPI (apt-get install libibverbs-dev libopenmpi-dev; "
                          "-DGRAIN_WITH_VERBS=ON)");
#endif
    }
    if (strcmp(name, "self") == 0) {
        if (mpi_comm != NULL)
            return grain_fail(GRAIN_ERR_CONFIG, "grain_init_attr was given an MPI communicator, but "
                                                "GRAIN_TRANSPORT=self runs one rank alone: use mpi or verbs (or auto)");
        *ops_p = &grain_transport_self;
        return GRAIN_OK;
    }
#ifdef GRAIN_HAVE_MPI
    if (strcmp(name, "mpi") == 0 || mpi_comm != NULL || started_by_launcher()) {
        *ops_p = &grain_transport_mpi;
        return GRAIN_OK;
    }
#else
    if (strcmp(name, "mpi") == 0 || mpi_comm != NULL)
        return grain_fail(GRAIN_ERR_CONFIG,
                          "%s, but this grain was built without MPI "
                          "(install libopenmpi-dev and configure with -DGRAIN_WITH_MPI=ON)",
                          mpi_comm != NULL ? "grain_init_attr was given an MPI communicator" : "GRAIN_TRANSPORT=mpi");
    if (started_by_launcher())
        grain_warn("started by an MPI launcher, but grain was built without MPI: every rank runs alone");
#endif
    *ops_p = &grain_transport_self;
    return GRAIN_OK;
}

grain_status_t grain_transport_open(const char *names, const grain_config_t *config, const void *mpi_comm,
                                    const grain_transport_ops_t **ops_p, grain_transport_t **t_p, int *my_pe_p,
                                    int *n_pes_p)
{
    char list[256], failed[512] = "";
    snprintf(list, sizeof list, "%s", names);
    char *save = NULL, *name = strtok_r(list, ",", &save);
    const char *first = name;
    grain_status_t st = GRAIN_ERR_CONFIG; /* grain_config_check refused lists without a name */
    while (name != NULL) {
        char *next = strtok_r(NULL, ",", &save);
        grain_log_quiet(next != NULL); /* a failure with a fallback is a warning, below */
        st = select_one(name, mpi_comm, ops_p);
        if (st == GRAIN_OK)
            st = (*ops_p)->open(t_p, config, mpi_comm, my_pe_p, n_pes_p);
        grain_log_quiet(0);
        if (st == GRAIN_OK) {
            if (name != first)
                grain_warn("GRAIN_TRANSPORT=%s: %s did not open (%s); running over %s", names, first, failed, name);
            return GRAIN_OK;
        }
        if (name == first)
            snprintf(failed, sizeof failed, "%s", grain_error_message(NULL));
        name = next;
    }
    return st;
}
