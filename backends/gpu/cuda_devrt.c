/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA's device runtime: linking programs with libcudadevrt.a (cuda_devrt.h). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "backends/gpu/cuda_devrt.h"
#include "services/log.h"

#if defined(GRAIN_CUDA_DEVRT)

#include "backends/gpu/cuda_libs.h"

void grain_cuda_devrt_check(char *why, size_t size)
{
    /* The build found the library and nvJitLink; a machine that runs the
     * binary may not have the toolkit where the build had it. */
    char lib[512];
    if (access(GRAIN_CUDA_DEVRT, R_OK) != 0)
        snprintf(why, size,
                 "cuda: kernels launch kernels only when linked with the device runtime, %s, which cannot "
                 "be read here (install the CUDA toolkit the build used)",
                 GRAIN_CUDA_DEVRT);
    else if (grain_nvjitlink(lib, sizeof lib) == NULL)
        snprintf(why, size, "cuda: kernels launch kernels only when linked with the device runtime by nvJitLink, "
                 "but %s", lib);
    else
        why[0] = '\0';
}

grain_status_t grain_cuda_devrt_link(unsigned arch, const void *code, size_t size, void **linked_p)
{
    char option[32];
    snprintf(option, sizeof option, "-arch=sm_%u", arch);
    const char *options[] = {option};
    char why[512];
    const grain_nvjitlink_t *j = grain_nvjitlink(why, sizeof why);
    if (j == NULL)
        return grain_fail(GRAIN_ERR_NO_BACKEND, "cuda: %s", why);
    nvJitLinkHandle link;
    nvJitLinkResult r = j->create(&link, 1, options);
    if (r != NVJITLINK_SUCCESS)
        return grain_fail(GRAIN_ERR_BUILD, "cuda: nvJitLinkCreate failed (%d)", (int)r);
    const char *step = "adding the program";
    r = j->add_data(link, NVJITLINK_INPUT_CUBIN, code, size, "grain_program");
    if (r == NVJITLINK_SUCCESS) {
        step = "adding " GRAIN_CUDA_DEVRT;
        r = j->add_file(link, NVJITLINK_INPUT_LIBRARY, GRAIN_CUDA_DEVRT);
    }
    if (r == NVJITLINK_SUCCESS) {
        step = "linking";
        r = j->complete(link);
    }
    size_t linked_size = 0;
    void *linked = NULL;
    if (r == NVJITLINK_SUCCESS && (r = j->cubin_size(link, &linked_size)) == NVJITLINK_SUCCESS &&
        (linked = malloc(linked_size)) != NULL)
        r = j->cubin(link, linked);
    grain_status_t st = GRAIN_OK;
    if (r != NVJITLINK_SUCCESS) {
        size_t n = 0;
        char *log = j->log_size(link, &n) == NVJITLINK_SUCCESS ? malloc(n + 1) : NULL;
        if (log != NULL && j->log(link, log) != NVJITLINK_SUCCESS)
            log[0] = '\0';
        st = grain_fail(GRAIN_ERR_BUILD, "cuda: %s with the device runtime failed (nvJitLink %d):\n%s", step, (int)r,
                        log != NULL ? log : "(no log)");
        free(log);
        free(linked);
    } else if (linked == NULL) {
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "cuda: no memory for a linked program of %zu bytes", linked_size);
    } else {
        *linked_p = linked;
    }
    j->destroy(&link);
    return st;
}

#else

void grain_cuda_devrt_check(char *why, size_t size)
{
    snprintf(why, size,
             "cuda: kernels launch kernels only when linked with the device runtime, and this build found no "
             "nvJitLink or libcudadevrt.a (CUDA 12 or later)");
}

grain_status_t grain_cuda_devrt_link(unsigned arch, const void *code, size_t size, void **linked_p)
{
    (void)arch, (void)code, (void)size, (void)linked_p;
    return grain_fail(GRAIN_ERR_UNSUPPORTED, "cuda: this build cannot link the device runtime");
}

#endif
