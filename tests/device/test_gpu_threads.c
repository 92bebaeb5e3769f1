/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA backend on device 1 of a machine with two GPUs or more: the
 * runtime's own threads launch apply kernels (here, active messages for a
 * device handler that the sending program lacks, which an aggregator thread
 * hands to an apply kernel), and they must do it on the rank's device.  A
 * thread that never chose a device works on device 0, and a rank whose
 * threads did so launched each apply kernel 300 times slower (gpu_backend.c,
 * on_device).  What shows it without a clock: the process never opens a
 * context on device 0.
 *
 * The driver is opened with dlopen, so that a machine without one (CI) skips
 * the test, with the reason, instead of failing to load it.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grain/grain.h"
#include "tests/device/send_to_handler.h"

#define SKIP 77

extern const char gpu_threads_source[];

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_ctx_state_fn)(int, unsigned *, int *);

static cu_ctx_state_fn ctx_state;

static int fail(grain_t *g, const char *what, grain_status_t st)
{
    fprintf(stderr, "test_gpu_threads: %s: %s (%s)\n", what, grain_strerror(st),
            g ? grain_error_message(g) : "");
    return 1;
}

/* Whether this process has device 0's primary context open. */
static int device0_active(void)
{
    unsigned flags = 0;
    int active = 0;
    return ctx_state(0, &flags, &active) == 0 && active;
}

int main(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == NULL) {
        printf("skipped: no CUDA driver (%s)\n", dlerror());
        return SKIP;
    }
    cu_init_fn cu_init = (cu_init_fn)dlsym(driver, "cuInit");
    cu_count_fn cu_count = (cu_count_fn)dlsym(driver, "cuDeviceGetCount");
    ctx_state = (cu_ctx_state_fn)dlsym(driver, "cuDevicePrimaryCtxGetState");
    int devices = 0;
    if (!cu_init || !cu_count || !ctx_state || cu_init(0) != 0 || cu_count(&devices) != 0 || devices < 2) {
        printf("skipped: needs two CUDA devices, the driver lists %d\n", devices);
        return SKIP;
    }

    grain_config_t *c;
    grain_t *g = NULL;
    grain_status_t st = grain_config_create(&c);
    if (st == GRAIN_OK)
        st = grain_config_set(c, "backend", "cuda");
    if (st == GRAIN_OK)
        st = grain_config_set(c, "gpu_device", "1");
    if (st == GRAIN_OK)
        st = grain_config_set(c, "transport", "self");
    if (st == GRAIN_OK)
        st = grain_config_set(c, "heap_size", "1M");
    if (st == GRAIN_OK)
        st = grain_init(c, &g);
    grain_config_destroy(c);
    if (st == GRAIN_ERR_NO_BACKEND) {
        printf("skipped: this grain has no CUDA backend\n");
        return SKIP;
    }
    if (st != GRAIN_OK)
        return fail(g, "grain_init on device 1", st);

    grain_program_t *with = NULL, *lacking = NULL;
    int64_t got = 0;
    st = grain_program_create(g, gpu_threads_source, NULL, &with);
    if (st == GRAIN_OK)
        st = grain_program_create(g, gpu_threads_source, "-DTEST_NO_AM_TABLE", &lacking);
    if (st == GRAIN_OK)
        st = grain_am_register_program(g, with);
    if (st == GRAIN_OK)
        st = send_to_handler(g, lacking, 2, &got);
    if (st != GRAIN_OK)
        return fail(g, "active messages through an apply kernel", st);
    int rc = 0;
    if (got != 2 * 128) {
        fprintf(stderr, "test_gpu_threads: the handler ran %lld times over, expected 256\n", (long long)got);
        rc = 1;
    }
    if (device0_active()) {
        fprintf(stderr, "test_gpu_threads: a rank on device 1 opened a context on device 0: one of its "
                        "threads called the driver without making device 1 current\n");
        rc = 1;
    }
    grain_program_destroy(lacking);
    grain_program_destroy(with);
    st = grain_finalize(g);
    if (st != GRAIN_OK)
        return fail(NULL, "grain_finalize", st);
    if (rc == 0)
        printf("test_gpu_threads: 256 handler runs through apply kernels on device 1, no context on device 0\n");
    return rc;
}
