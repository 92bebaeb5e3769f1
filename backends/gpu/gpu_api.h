/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA and HIP runtimes under one set of names, so that gpu_backend.c is
 * one source compiled once against each (alpaka's uniform CUDA/HIP layer):
 * the build defines GRAIN_GPU_CUDA or GRAIN_GPU_HIP.  Only calls whose
 * meaning is the same in both are mapped; where the two differ (loading a
 * module, launching from it, the compiler's target option), a small function
 * here says it once per API.
 */
#ifndef GRAIN_BACKENDS_GPU_API_H
#define GRAIN_BACKENDS_GPU_API_H

#include <stdio.h>
#include <stdlib.h>

#if defined(GRAIN_GPU_CUDA)

#include <cuda_runtime_api.h>

#include "backends/gpu/cuda_blas.h"
#include "backends/gpu/cuda_devrt.h"
#include "backends/gpu/cuda_libs.h"

#define GPU_NAME "cuda"
#define GPU_VENDOR "CUDA"
/* Volta and later schedule a warp's threads independently. */
#define GPU_INDEPENDENT_LANES(props) ((props)->major >= 7)

typedef cudaError_t gpu_err_t;
typedef struct cudaDeviceProp gpu_props_t;
typedef cudaStream_t gpu_stream_t;
typedef cudaLibrary_t gpu_module_t;
typedef cudaKernel_t gpu_function_t;
#define GPU_SUCCESS cudaSuccess
#define GPU_NOT_READY cudaErrorNotReady
#define gpuGetErrorString cudaGetErrorString
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuFreeHost cudaFreeHost
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamDestroy cudaStreamDestroy
#define gpuGetLastError cudaGetLastError
#define gpuMemsetAsync cudaMemsetAsync
typedef cudaEvent_t gpu_event_t;
#define gpuEventRecord cudaEventRecord
#define gpuEventQuery cudaEventQuery
#define gpuStreamQuery cudaStreamQuery
#define gpuEventDestroy cudaEventDestroy

static inline gpu_err_t gpuEventCreate(gpu_event_t *e)
{
    return cudaEventCreateWithFlags(e, cudaEventDisableTiming);
}

static inline gpu_err_t gpuMallocManaged(void **p, size_t n)
{
    return cudaMallocManaged(p, n, cudaMemAttachGlobal);
}

/* Migrates managed memory to `device` (-1: the host), in order on `s`.
 * CUDA 13 names the place by a cudaMemLocation. */
static inline gpu_err_t gpuPrefetch(const void *p, size_t n, int device, gpu_stream_t s)
{
#if CUDART_VERSION >= 13000
    struct cudaMemLocation at = {.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice,
                                 .id = device < 0 ? 0 : device};
    return cudaMemPrefetchAsync(p, n, at, 0, s);
#else
    return cudaMemPrefetchAsync(p, n, device < 0 ? cudaCpuDeviceId : device, s);
#endif
}

typedef enum cudaMemoryAdvise gpu_advice_t;
#define gpuAdviseSetReadMostly cudaMemAdviseSetReadMostly
#define gpuAdviseUnsetReadMostly cudaMemAdviseUnsetReadMostly
#define gpuAdviseSetPreferredLocation cudaMemAdviseSetPreferredLocation
#define gpuAdviseUnsetPreferredLocation cudaMemAdviseUnsetPreferredLocation
#define gpuAdviseSetAccessedBy cudaMemAdviseSetAccessedBy
#define gpuAdviseUnsetAccessedBy cudaMemAdviseUnsetAccessedBy

/* Advice on managed memory for `device` (-1: the host), as gpuPrefetch
 * names the place. */
static inline gpu_err_t gpuMemAdvise(const void *p, size_t n, gpu_advice_t advice, int device)
{
#if CUDART_VERSION >= 13000
    struct cudaMemLocation at = {.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice,
                                 .id = device < 0 ? 0 : device};
    return cudaMemAdvise(p, n, advice, at);
#else
    return cudaMemAdvise(p, n, advice, device < 0 ? cudaCpuDeviceId : device);
#endif
}

static inline gpu_err_t gpuHostAllocShared(void **p, size_t n)
{
    /* mapped: kernels reach it at the same address (unified addressing) */
    return cudaHostAlloc(p, n, cudaHostAllocMapped | cudaHostAllocPortable);
}

/* Whether host memory at p is page-locked for the device's copies
 * (cudaHostAlloc, cudaMallocHost or cudaHostRegister). */
static inline int gpuHostPinned(const void *p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        return 0;
    }
    return a.type == cudaMemoryTypeHost;
}

/* urgent: the device's greatest priority (see gpu_backend.c) */
static inline gpu_err_t gpuStreamCreate(gpu_stream_t *s, int urgent)
{
    int least = 0, greatest = 0;
    gpu_err_t err = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    return err != cudaSuccess ? err : cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, urgent ? greatest : least);
}

static inline gpu_err_t gpuMemcpyAny(void *dst, const void *src, size_t n)
{
    return cudaMemcpy(dst, src, n, cudaMemcpyDefault);
}

static inline gpu_err_t gpuMemcpyAnyAsync(void *dst, const void *src, size_t n, gpu_stream_t s)
{
    return cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s);
}

static inline gpu_err_t gpuMemcpyRectAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                           size_t rows, gpu_stream_t s)
{
    return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDefault, s);
}

static inline gpu_err_t gpuStreamWaitEvent(gpu_stream_t s, gpu_event_t e)
{
    return cudaStreamWaitEvent(s, e, 0);
}

typedef cudaIpcMemHandle_t gpu_ipc_handle_t;
#define gpuIpcGetMemHandle cudaIpcGetMemHandle
#define gpuIpcCloseMemHandle cudaIpcCloseMemHandle
#define gpuDeviceGetByPCIBusId cudaDeviceGetByPCIBusId
#define gpuDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define GPU_PEER_ALREADY_ENABLED cudaErrorPeerAccessAlreadyEnabled

static inline gpu_err_t gpuIpcOpenMemHandle(void **p, gpu_ipc_handle_t h)
{
    return cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess);
}

static inline gpu_err_t gpuModuleLoad(gpu_module_t *m, const void *image)
{
    return cudaLibraryLoadData(m, image, NULL, NULL, 0, NULL, NULL, 0);
}

static inline gpu_err_t gpuModuleUnload(gpu_module_t m) { return cudaLibraryUnload(m); }

/*
 * Before the first CUDA call: a program's kernels load with it, not one by
 * one when first used.  Loading waits for the kernels running in the
 * context, the resident apply agent among them, and under lazy loading a
 * kernel created while the agent ran never loaded: two ranks through MPI
 * that created each kernel just before its launch (wg_quiet host) hung on
 * two H200s, and passed with CUDA_MODULE_LOADING=EAGER.  A user's own
 * setting stands.
 */
static inline void gpuLoadEagerly(void)
{
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
}

/* The kernel, loaded into the device now, should lazy loading be on: CUDA
 * then loads at the first launch, and loading waits for the kernels running
 * in the context; a producer launched beside the device transfer agent,
 * which waits for that producer, would never start.  Reading an attribute
 * loads it. */
static inline gpu_err_t gpuModuleFunction(gpu_function_t *f, gpu_module_t m, const char *name)
{
    struct cudaFuncAttributes attr;
    gpu_err_t err = cudaLibraryGetKernel(f, m, name);
    return err == cudaSuccess ? cudaFuncGetAttributes(&attr, (const void *)*f) : err;
}

/* How many parameters the kernel takes, 0 where the runtime cannot say:
 * a launch reads that many argument pointers, whatever was set. */
static inline unsigned gpuKernelParams(gpu_function_t f)
{
    unsigned n = 0;
#if CUDART_VERSION >= 12040
    size_t offset, size;
    while (n < 1024 && cudaFuncGetParamInfo((const void *)f, n, &offset, &size) == cudaSuccess)
        n++;
    cudaGetLastError(); /* the index past the last one is an error, not sticky but kept until read */
#else
    (void)f;
#endif
    return n;
}

static inline gpu_err_t gpuLaunch(gpu_function_t f, const unsigned grid[3], const unsigned block[3],
                                   void **args, gpu_stream_t s)
{
    dim3 g = {grid[0], grid[1], grid[2]}, b = {block[0], block[1], block[2]};
    return cudaLaunchKernel((const void *)f, g, b, args, 0, s);
}

/* The compiler's target: the device's own SASS. */
static inline void gpuArchOption(const gpu_props_t *p, char *out, size_t n)
{
    snprintf(out, n, "--gpu-architecture=sm_%d%d", p->major, p->minor);
}

/* Kernels launching kernels: dynamic parallelism, through the device
 * runtime that every program is then linked with (cuda_devrt.h). */
static inline void gpuDeviceLaunchCheck(char *why, size_t n) { grain_cuda_devrt_check(why, n); }

#define GPU_DEVICE_LAUNCH_OPTIONS "-rdc=true -DGRAIN_DEVICE_LAUNCH=1"

/* The vendor's BLAS for gemm tiles: cuBLAS, loaded at open (cuda_blas.h). */
typedef grain_cublas_t gpu_blas_t;
#define gpuBlasOpen grain_cublas_open
#define gpuBlasClose grain_cublas_close
#define gpuBlasGemm grain_cublas_gemm

static inline grain_status_t gpuLinkDeviceRuntime(const gpu_props_t *p, const void *code, size_t size,
                                                  void **linked_p)
{
    return grain_cuda_devrt_link((unsigned)(p->major * 10 + p->minor), code, size, linked_p);
}

/* Room for `n` launches from kernels not yet started or finished: at least
 * `n`, or exactly `n`. */
static inline gpu_err_t gpuReserveDeviceLaunches(size_t n, int exactly)
{
    size_t now = 0;
    gpu_err_t err = cudaDeviceGetLimit(&now, cudaLimitDevRuntimePendingLaunchCount);
    if (err != cudaSuccess || now == n || (now > n && !exactly))
        return err;
    return cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, n);
}

/* NVRTC is loaded by the first build (cuda_libs.h): rtc_lib is its table. */
typedef nvrtcProgram rtc_program_t;
typedef nvrtcResult rtc_result_t;
typedef grain_nvrtc_t rtc_lib_t;
#define RTC_SUCCESS NVRTC_SUCCESS
#define rtcLoad grain_nvrtc
#define rtcCreateProgram rtc_lib->create
#define rtcCompileProgram rtc_lib->compile
#define rtcGetProgramLogSize rtc_lib->log_size
#define rtcGetProgramLog rtc_lib->log
#define rtcGetCodeSize rtc_lib->code_size
#define rtcGetCode rtc_lib->code
#define rtcDestroyProgram rtc_lib->destroy
#define rtcGetErrorString rtc_lib->error_string

#elif defined(GRAIN_GPU_HIP)

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>

#include "services/log.h"

/* hipModuleLoadData is not known to defer loading a kernel (never run on AMD hardware here). */
static inline void gpuLoadEagerly(void) {}

#define GPU_NAME "hip"
#define GPU_VENDOR "HIP"
/* A wavefront's lanes run in lockstep. */
#define GPU_INDEPENDENT_LANES(props) ((void)(props), 0)

typedef hipError_t gpu_err_t;
typedef hipDeviceProp_t gpu_props_t;
typedef hipStream_t gpu_stream_t;
typedef hipModule_t gpu_module_t;
typedef hipFunction_t gpu_function_t;
#define GPU_SUCCESS hipSuccess
#define GPU_NOT_READY hipErrorNotReady
#define gpuGetErrorString hipGetErrorString
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuGetDevice hipGetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuFreeHost hipHostFree
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamDestroy hipStreamDestroy
#define gpuGetLastError hipGetLastError
#define gpuMemsetAsync hipMemsetAsync
typedef hipEvent_t gpu_event_t;
#define gpuEventRecord hipEventRecord
#define gpuEventQuery hipEventQuery
#define gpuStreamQuery hipStreamQuery
#define gpuEventDestroy hipEventDestroy

static inline gpu_err_t gpuEventCreate(gpu_event_t *e)
{
    return hipEventCreateWithFlags(e, hipEventDisableTiming);
}

static inline gpu_err_t gpuMallocManaged(void **p, size_t n)
{
    return hipMallocManaged(p, n, hipMemAttachGlobal);
}

/* Migrates managed memory to `device` (-1: the host), in order on `s`. */
static inline gpu_err_t gpuPrefetch(const void *p, size_t n, int device, gpu_stream_t s)
{
    return hipMemPrefetchAsync(p, n, device < 0 ? hipCpuDeviceId : device, s);
}

typedef hipMemoryAdvise gpu_advice_t;
#define gpuAdviseSetReadMostly hipMemAdviseSetReadMostly
#define gpuAdviseUnsetReadMostly hipMemAdviseUnsetReadMostly
#define gpuAdviseSetPreferredLocation hipMemAdviseSetPreferredLocation
#define gpuAdviseUnsetPreferredLocation hipMemAdviseUnsetPreferredLocation
#define gpuAdviseSetAccessedBy hipMemAdviseSetAccessedBy
#define gpuAdviseUnsetAccessedBy hipMemAdviseUnsetAccessedBy

/* Advice on managed memory for `device` (-1: the host). */
static inline gpu_err_t gpuMemAdvise(const void *p, size_t n, gpu_advice_t advice, int device)
{
    return hipMemAdvise(p, n, advice, device < 0 ? hipCpuDeviceId : device);
}

static inline gpu_err_t gpuHostAllocShared(void **p, size_t n)
{
    /* coherent: host and kernel see each other's stores while the kernel runs */
    return hipHostMalloc(p, n, hipHostMallocMapped | hipHostMallocCoherent | hipHostMallocPortable);
}

/* As CUDA's; HIP before 6 names the field memoryType. */
static inline int gpuHostPinned(const void *p)
{
    hipPointerAttribute_t a;
    if (hipPointerGetAttributes(&a, p) != hipSuccess) {
        (void)hipGetLastError();
        return 0;
    }
#if HIP_VERSION_MAJOR >= 6
    return a.type == hipMemoryTypeHost;
#else
    return a.memoryType == hipMemoryTypeHost;
#endif
}

static inline gpu_err_t gpuStreamCreate(gpu_stream_t *s, int urgent)
{
    int least = 0, greatest = 0;
    gpu_err_t err = hipDeviceGetStreamPriorityRange(&least, &greatest);
    return err != hipSuccess ? err : hipStreamCreateWithPriority(s, hipStreamNonBlocking, urgent ? greatest : least);
}

static inline gpu_err_t gpuMemcpyAny(void *dst, const void *src, size_t n)
{
    return hipMemcpy(dst, src, n, hipMemcpyDefault);
}

static inline gpu_err_t gpuMemcpyAnyAsync(void *dst, const void *src, size_t n, gpu_stream_t s)
{
    return hipMemcpyAsync(dst, src, n, hipMemcpyDefault, s);
}

static inline gpu_err_t gpuMemcpyRectAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                           size_t rows, gpu_stream_t s)
{
    return hipMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, hipMemcpyDefault, s);
}

static inline gpu_err_t gpuStreamWaitEvent(gpu_stream_t s, gpu_event_t e)
{
    return hipStreamWaitEvent(s, e, 0);
}

typedef hipIpcMemHandle_t gpu_ipc_handle_t;
#define gpuIpcGetMemHandle hipIpcGetMemHandle
#define gpuIpcCloseMemHandle hipIpcCloseMemHandle
#define gpuDeviceGetByPCIBusId hipDeviceGetByPCIBusId
#define gpuDeviceCanAccessPeer hipDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define GPU_PEER_ALREADY_ENABLED hipErrorPeerAccessAlreadyEnabled

static inline gpu_err_t gpuIpcOpenMemHandle(void **p, gpu_ipc_handle_t h)
{
    return hipIpcOpenMemHandle(p, h, hipIpcMemLazyEnablePeerAccess);
}

static inline gpu_err_t gpuModuleLoad(gpu_module_t *m, const void *image)
{
    return hipModuleLoadData(m, image);
}

static inline gpu_err_t gpuModuleUnload(gpu_module_t m) { return hipModuleUnload(m); }

static inline gpu_err_t gpuModuleFunction(gpu_function_t *f, gpu_module_t m, const char *name)
{
    return hipModuleGetFunction(f, m, name);
}

/* HIP has no query of a kernel's parameters: only the arguments set are
 * checked. */
static inline unsigned gpuKernelParams(gpu_function_t f)
{
    (void)f;
    return 0;
}

static inline gpu_err_t gpuLaunch(gpu_function_t f, const unsigned grid[3], const unsigned block[3],
                                   void **args, gpu_stream_t s)
{
    return hipModuleLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, s,
                                 args, NULL);
}

static inline void gpuArchOption(const gpu_props_t *p, char *out, size_t n)
{
    snprintf(out, n, "--offload-arch=%s", p->gcnArchName);
}

static inline void gpuDeviceLaunchCheck(char *why, size_t n)
{
    snprintf(why, n, "hip: HIP has no device-side kernel launch (CUDA's dynamic parallelism)");
}

#define GPU_DEVICE_LAUNCH_OPTIONS ""

/* No vendor BLAS (Debian 12 has no rocBLAS): gemm tiles by grain's kernels. */
typedef struct gpu_blas gpu_blas_t;
static inline gpu_blas_t *gpuBlasOpen(char *name, size_t n)
{
    (void)n;
    name[0] = '\0';
    return NULL;
}
static inline void gpuBlasClose(gpu_blas_t *h) { (void)h; }
static inline grain_status_t gpuBlasGemm(gpu_blas_t *h, gpu_stream_t s, size_t es, int ta, int tb, size_t m,
                                         size_t n, size_t k, const void *alpha, const void *a, size_t lda,
                                         const void *b, size_t ldb, const void *beta, void *c, size_t ldc)
{
    (void)h, (void)s, (void)es, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b;
    (void)ldb, (void)beta, (void)c, (void)ldc;
    return grain_fail(GRAIN_ERR_UNSUPPORTED, "hip: no vendor BLAS for gemm tiles");
}

static inline grain_status_t gpuLinkDeviceRuntime(const gpu_props_t *p, const void *code, size_t size,
                                                  void **linked_p)
{
    (void)p, (void)code, (void)size, (void)linked_p;
    return grain_fail(GRAIN_ERR_UNSUPPORTED, "hip: HIP has no device-side kernel launch");
}

static inline gpu_err_t gpuReserveDeviceLaunches(size_t n, int exactly)
{
    (void)n, (void)exactly;
    return hipErrorNotSupported;
}

/* hiprtc comes with the HIP runtime, linked: nothing to load. */
typedef hiprtcProgram rtc_program_t;
typedef hiprtcResult rtc_result_t;
typedef int rtc_lib_t;
#define RTC_SUCCESS HIPRTC_SUCCESS

static inline const rtc_lib_t *rtcLoad(void)
{
    static const rtc_lib_t linked = 1;
    return &linked;
}

#define rtcCreateProgram hiprtcCreateProgram
#define rtcCompileProgram hiprtcCompileProgram
#define rtcGetProgramLogSize hiprtcGetProgramLogSize
#define rtcGetProgramLog hiprtcGetProgramLog
#define rtcGetCodeSize hiprtcGetCodeSize
#define rtcGetCode hiprtcGetCode
#define rtcDestroyProgram hiprtcDestroyProgram
#define rtcGetErrorString hiprtcGetErrorString

#else
#error "gpu_backend.c is built with GRAIN_GPU_CUDA or GRAIN_GPU_HIP"
#endif

#endif
