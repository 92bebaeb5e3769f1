#include "runtime/transport.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/log.h"

/* Open MPI, MPICH and Slurm each export one of these into every rank. */
static int started_by_launcher(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]) != NULL)
            return 1;
    return 0;
}

grain_status_t grain_transport_select(const char *name, const grain_transport_ops_t **ops_p)
{
    if (strcmp(name, "self") == 0) {
        *ops_p = &grain_transport_self;
        return GRAIN_OK;
    }
#ifdef GRAIN_HAVE_MPI
    if (strcmp(name, "mpi") == 0 || started_by_launcher()) {
        *ops_p = &grain_transport_mpi;
        return GRAIN_OK;
    }
#else
    if (strcmp(name, "mpi") == 0)
        return grain_fail(GRAIN_ERR_CONFIG,
                          "GRAIN_TRANSPORT=mpi, but this grain was built without MPI "
                          "(install libopenmpi-dev and configure with -DGRAIN_WITH_MPI=ON)");
    if (started_by_launcher())
        grain_warn("started by an MPI launcher, but grain was built without MPI: every rank runs alone");
#endif
    *ops_p = &grain_transport_self;
    return GRAIN_OK;
}
