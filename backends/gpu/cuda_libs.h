/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA toolkit's libraries that only some processes need, loaded on
 * first use instead of linked: NVRTC (building a program), nvJitLink
 * (linking one with the device runtime) and cuBLAS (gemm tiles).  Linked,
 * NVRTC and nvJitLink cost every process that starts 0.07 s in a Release
 * build and 0.09 s under ASan on a 2-core machine, GPU or not, and a
 * machine without them could not start grain's programs at all; loaded,
 * only a CUDA program build pays, and their absence is an error that says
 * what to install.
 */
#ifndef GRAIN_BACKENDS_GPU_CUDA_LIBS_H
#define GRAIN_BACKENDS_GPU_CUDA_LIBS_H

#include <stddef.h>

#include <nvrtc.h>

#include "grain/grain.h"

/* dlopen of `soname`, then of the toolkit's library folder the build used
 * (often not on the loader's path); NULL with why in `why`. */
void *grain_cuda_lib_open(const char *soname, char *why, size_t size);

typedef struct grain_nvrtc {
    __typeof__(nvrtcCreateProgram) *create;
    __typeof__(nvrtcCompileProgram) *compile;
    __typeof__(nvrtcGetProgramLogSize) *log_size;
    __typeof__(nvrtcGetProgramLog) *log;
    __typeof__(nvrtcGetCUBINSize) *code_size;
    __typeof__(nvrtcGetCUBIN) *code;
    __typeof__(nvrtcDestroyProgram) *destroy;
    __typeof__(nvrtcGetErrorString) *error_string;
} grain_nvrtc_t;

/* NVRTC, loaded once a process; NULL after grain_fail saying why. */
const grain_nvrtc_t *grain_nvrtc(void);

#if defined(GRAIN_CUDA_DEVRT)
#include <nvJitLink.h>

typedef struct grain_nvjitlink {
    __typeof__(nvJitLinkCreate) *create;
    __typeof__(nvJitLinkAddData) *add_data;
    __typeof__(nvJitLinkAddFile) *add_file;
    __typeof__(nvJitLinkComplete) *complete;
    __typeof__(nvJitLinkGetLinkedCubinSize) *cubin_size;
    __typeof__(nvJitLinkGetLinkedCubin) *cubin;
    __typeof__(nvJitLinkGetErrorLogSize) *log_size;
    __typeof__(nvJitLinkGetErrorLog) *log;
    __typeof__(nvJitLinkDestroy) *destroy;
} grain_nvjitlink_t;

/* nvJitLink, loaded once a process; NULL with why in `why`. */
const grain_nvjitlink_t *grain_nvjitlink(char *why, size_t size);
#endif

#endif
