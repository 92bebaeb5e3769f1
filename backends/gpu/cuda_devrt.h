/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CUDA's device runtime, which lets kernels launch kernels (dynamic
 * parallelism; the launch transfer agent): NVRTC compiles programs as
 * relocatable code and nvJitLink links them with libcudadevrt.a.  HIP has
 * no counterpart, so only the CUDA build of gpu_backend.c calls these.
 */
#ifndef GRAIN_BACKENDS_GPU_CUDA_DEVRT_H
#define GRAIN_BACKENDS_GPU_CUDA_DEVRT_H

#include <stddef.h>

#include "grain/grain.h"

/* Writes why kernels cannot launch kernels with this build on this machine,
 * or "" when they can. */
void grain_cuda_devrt_check(char *why, size_t size);

/* Links `code` (NVRTC's relocatable cubin for sm_<arch>) with the device
 * runtime into a cubin the driver loads; free *linked_p. */
grain_status_t grain_cuda_devrt_link(unsigned arch, const void *code, size_t size, void **linked_p);

#endif
