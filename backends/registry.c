/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "services/config.h"
#include "services/log.h"

#ifdef GRAIN_HAVE_OPENCL
extern const grain_backend_ops_t grain_opencl_ops;
#endif
#ifdef GRAIN_HAVE_CUDA
extern const grain_backend_ops_t grain_cuda_ops;
#endif
#ifdef GRAIN_HAVE_HIP
extern const grain_backend_ops_t grain_hip_ops;
#endif

/* In order of preference for "auto": a discrete GPU's own API first. */
static const grain_backend_ops_t *const backends[] = {
#ifdef GRAIN_HAVE_CUDA
    &grain_cuda_ops,
#endif
#ifdef GRAIN_HAVE_HIP
    &grain_hip_ops,
#endif
#ifdef GRAIN_HAVE_OPENCL
    &grain_opencl_ops,
#endif
    NULL,
};

const grain_backend_ops_t *const *grain_backends_built(void)
{
    return backends;
}

/* Every backend grain knows of, built in or not, for the error message. */
static const char *const known_backends[] = {"opencl", "cuda", "hip", NULL};

grain_status_t grain_backend_open(const grain_config_t *config, unsigned host_threads,
                                  const grain_backend_ops_t **ops_p, grain_backend_t **backend_p)
{
    const char *name = config->backend;
    int automatic = strcmp(name, "auto") == 0;
    grain_status_t last_error = GRAIN_ERR_NO_BACKEND;

    /* "auto" tries each backend quietly and, only when none opens, says why
     * each could not: a machine without CUDA is no error. */
    char why[2048] = "";
    size_t used = 0;
    for (const grain_backend_ops_t *const *ops = backends; *ops != NULL; ops++) {
        if (!automatic && strcmp((*ops)->name, name) != 0)
            continue;
        grain_backend_t *backend;
        grain_log_quiet(automatic);
        grain_status_t st = (*ops)->open(config, host_threads, &backend);
        grain_log_quiet(0);
        if (st == GRAIN_OK) {
            *ops_p = *ops;
            *backend_p = backend;
            return GRAIN_OK;
        }
        if (!automatic)
            return st;
        grain_info("backend %s did not open: %s", (*ops)->name, grain_error_message(NULL));
        last_error = st;
        if (used < sizeof why)
            used += (size_t)snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "",
                                     grain_error_message(NULL));
    }
    if (automatic) {
        if (backends[0] == NULL)
            return grain_fail(GRAIN_ERR_NO_BACKEND,
                              "grain was built without any backend: configure with "
                              "-DGRAIN_WITH_OPENCL=ON (and install ocl-icd-opencl-dev)");
        return grain_fail(last_error, "no backend could open a device: %s", why);
    }
    for (const char *const *k = known_backends; *k != NULL; k++)
        if (strcmp(*k, name) == 0)
            return grain_fail(GRAIN_ERR_NO_BACKEND,
                              "GRAIN_BACKEND=%s, but this grain was built without the %s backend",
                              name, name);
    return grain_fail(GRAIN_ERR_NO_BACKEND,
                      "GRAIN_BACKEND=\"%s\" names no backend: expected auto, opencl, cuda or hip",
                      name);
}
