/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA and HIP backends: one source, built once with GRAIN_GPU_CUDA and
 * once with GRAIN_GPU_HIP (gpu_api.h maps the names).
 *
 * Device code is grain's one dialect (include/grain/device/port.h), compiled
 * at run time by NVRTC or hiprtc for the device in hand, like the OpenCL
 * backend compiles it, so apps ship one source for every backend.  The queue's
 * slots live in pinned host memory that kernels write over the host link and
 * the aggregator threads read while the kernel runs; the device context and
 * the rings' producer state live in device memory.
 *
 * With GRAIN_APPLY=device (the default where the device allows concurrent
 * managed access) the symmetric heap is managed memory that stays on the
 * device while kernels apply messages to it: the runtime's apply kernels run
 * on a second stream beside the application's, and host threads (active
 * message handlers, the application between kernels) still reach it through
 * unified memory.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/gpu/gpu_api.h"
#include "grain/sched.h"
#include "services/config.h"
#include "services/log.h"

#define MAX_ARGS 32
#define MAX_ARG_BYTES 64
#define MARK_EVENTS 64u

/* Points of an in-order stream, numbered from 1, each recorded in the
 * event n % MARK_EVENTS, reused round robin: that event then stands for
 * the newest point recorded in it, n or later, and when that one is done,
 * so is n. */
typedef struct mark_ring {
    gpu_event_t events[MARK_EVENTS];
    unsigned n_events; /* created */
    uint64_t marked;
} mark_ring_t;

struct grain_backend {
    int device;
    gpu_props_t props;
    gpu_stream_t stream; /* the application's kernels */
    gpu_stream_t side;   /* the runtime's apply kernels */
    gpu_stream_t agent;  /* the device transfer agent */
    /* Transfer agents' copies and the receiving thread's (the last),
     * made on first use (under the lock: the threads of several regions
     * share lane numbers). */
    gpu_stream_t lanes[GRAIN_LANES];
    mark_ring_t lane_marks[GRAIN_LANES];
    pthread_mutex_t lanes_lock;
    mark_ring_t side_marks; /* the apply kernels' completions */
    unsigned launch_pending; /* GRAIN_LAUNCH_PENDING: fixed room for launches from kernels, or 0 */
    gpu_blas_t *blas;        /* the vendor's BLAS, or NULL (info.blas empty) */
    int blas_tried;          /* blas_load looked for it */
    grain_backend_info_t info;
    char arch[320]; /* the compiler's target option */
};

struct grain_bprogram {
    grain_backend_t *backend;
    gpu_module_t module;
};

struct grain_bkernel {
    grain_backend_t *backend;
    gpu_function_t function;
    char name[128];
    unsigned n_params; /* what the kernel takes, where the runtime says (else 0) */
    unsigned n_args;   /* one past the highest argument set */
    unsigned char set[MAX_ARGS];
    _Alignas(16) unsigned char values[MAX_ARGS][MAX_ARG_BYTES];
};

static grain_status_t gpu_fail(gpu_err_t err, const char *what)
{
    return grain_fail(GRAIN_ERR_BACKEND, GPU_NAME ": %s failed: %s", what, gpuGetErrorString(err));
}

/*
 * CUDA and HIP keep a current device per host thread, and a thread that never
 * chose one works on device 0.  The runtime's network and aggregator threads
 * call in here too (apply kernels, their events): from device 0 each call
 * reached this rank's device across contexts, and a rank on any other GPU
 * spent 3.6 ms in every apply-kernel launch against 10 us on device 0 (gups,
 * 2^20 updates on four H200s: 0.38 s of a 0.39 s run).  So every entry point
 * makes the rank's device current on the calling thread first; asking costs
 * a thread-local read.
 */
static gpu_err_t on_device(const grain_backend_t *b)
{
    int current = -1;
    if (gpuGetDevice(&current) == GPU_SUCCESS && current == b->device)
        return GPU_SUCCESS;
    return gpuSetDevice(b->device);
}

/* The rank's index among the ranks of its node, from the launcher. */
static int local_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                       "SLURM_LOCALID", "PMI_LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL)
            return atoi(v);
    }
    return 0;
}

static int gpu_select_device(grain_config_t *config, unsigned index)
{
    int count = 0;
    if (gpuGetDeviceCount(&count) != GPU_SUCCESS || index >= (unsigned)count)
        return 0;
    snprintf(config->gpu_device, sizeof config->gpu_device, "%u", index);
    return 1;
}

static grain_status_t pick_device(const grain_config_t *config, int *device_p)
{
    int count = 0;
    gpu_err_t err = gpuGetDeviceCount(&count);
    if (err != GPU_SUCCESS || count == 0)
        return grain_fail(GRAIN_ERR_NO_DEVICE, GPU_NAME ": no " GPU_VENDOR " device (%s)",
                          err != GPU_SUCCESS ? gpuGetErrorString(err) : "the driver lists none");
    if (config->gpu_device[0] == '\0') {
        *device_p = local_rank() % count; /* one GPU per rank of a node, round robin */
        return GRAIN_OK;
    }
    char *end;
    long d = strtol(config->gpu_device, &end, 10);
    if (*end != '\0' || d < 0 || d >= count)
        return grain_fail(GRAIN_ERR_CONFIG,
                          "GRAIN_GPU_DEVICE=\"%s\": expected a device index from 0 to %d",
                          config->gpu_device, count - 1);
    *device_p = (int)d;
    return GRAIN_OK;
}

static void ring_destroy(mark_ring_t *m)
{
    for (unsigned i = 0; i < m->n_events; i++)
        gpuEventDestroy(m->events[i]);
    m->n_events = 0;
}

static gpu_err_t ring_create(mark_ring_t *m)
{
    gpu_err_t err = GPU_SUCCESS;
    for (; err == GPU_SUCCESS && m->n_events < MARK_EVENTS; m->n_events++)
        err = gpuEventCreate(&m->events[m->n_events]);
    if (err != GPU_SUCCESS) {
        m->n_events--;
        ring_destroy(m);
    }
    return err;
}

static gpu_err_t ring_mark(mark_ring_t *m, gpu_stream_t s, uint64_t *n_p)
{
    uint64_t n = m->marked + 1;
    gpu_err_t err = gpuEventRecord(m->events[n % MARK_EVENTS], s);
    if (err == GPU_SUCCESS)
        *n_p = m->marked = n;
    return err;
}

/* 1 done, 0 not yet, -1 failed. */
static int ring_done(const mark_ring_t *m, uint64_t n)
{
    gpu_err_t err = gpuEventQuery(m->events[n % MARK_EVENTS]);
    return err == GPU_SUCCESS ? 1 : err == GPU_NOT_READY ? 0 : -1;
}

static void gpu_close(grain_backend_t *b)
{
    on_device(b);
    gpuBlasClose(b->blas);
    ring_destroy(&b->side_marks);
    for (unsigned i = 0; i < GRAIN_LANES; i++) {
        ring_destroy(&b->lane_marks[i]);
        if (b->lanes[i] != NULL)
            gpuStreamDestroy(b->lanes[i]);
    }
    if (b->agent != NULL)
        gpuStreamDestroy(b->agent);
    gpuStreamDestroy(b->side);
    gpuStreamDestroy(b->stream);
    pthread_mutex_destroy(&b->lanes_lock);
    free(b);
}

static grain_status_t gpu_open(const grain_config_t *config, unsigned host_threads,
                               grain_backend_t **backend_p)
{
    (void)host_threads; /* the device has cores of its own */
    grain_backend_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, GPU_NAME ": no memory for the backend");
    pthread_mutex_init(&b->lanes_lock, NULL);
    gpuLoadEagerly();
    grain_status_t st = pick_device(config, &b->device);
    gpu_err_t err = GPU_SUCCESS;
    if (st == GRAIN_OK && (err = gpuSetDevice(b->device)) != GPU_SUCCESS)
        st = gpu_fail(err, "selecting the device");
    if (st == GRAIN_OK && (err = gpuGetDeviceProperties(&b->props, b->device)) != GPU_SUCCESS)
        st = gpu_fail(err, "reading the device's properties");
    /* The apply stream is urgent, so that the block scheduler may start an
     * apply kernel's blocks before the not yet started blocks of a producer
     * grid, which wait for the queue that waits for this apply.  Two gups
     * ranks on two H200s, 2^27 updates: 1.58 s at normal priority with 64 M
     * records kept waiting for a stage; urgent, 1.13 and 1.18 s with 7-10 M. */
    if (st == GRAIN_OK && (err = gpuStreamCreate(&b->stream, 0)) != GPU_SUCCESS)
        st = gpu_fail(err, "creating a stream");
    if (st == GRAIN_OK && (err = gpuStreamCreate(&b->side, 1)) != GPU_SUCCESS) {
        gpuStreamDestroy(b->stream);
        st = gpu_fail(err, "creating the apply stream");
    }
    if (st == GRAIN_OK && (err = gpuStreamCreate(&b->agent, 0)) != GPU_SUCCESS) {
        gpuStreamDestroy(b->side);
        gpuStreamDestroy(b->stream);
        st = gpu_fail(err, "creating the agent stream");
    }
    if (st == GRAIN_OK && (err = ring_create(&b->side_marks)) != GPU_SUCCESS) {
        st = gpu_fail(err, "creating events");
        gpu_close(b);
        return st;
    }
    if (st != GRAIN_OK) {
        pthread_mutex_destroy(&b->lanes_lock);
        free(b);
        return st;
    }
    snprintf(b->info.device_name, sizeof b->info.device_name, "%s", b->props.name);
    b->info.max_wg_size = (size_t)b->props.maxThreadsPerBlock;
    b->info.subgroup_width = (unsigned)b->props.warpSize;
    b->info.compute_units = (unsigned)b->props.multiProcessorCount;
    b->info.cpu_device = 0;
    b->info.device_memory = (uint64_t)b->props.totalGlobalMem;
    b->info.independent_lanes = GPU_INDEPENDENT_LANES(&b->props);
    b->info.prefers_device_apply = b->props.concurrentManagedAccess != 0;
    gpuArchOption(&b->props, b->arch, sizeof b->arch);
    snprintf(b->info.shared_memory, sizeof b->info.shared_memory,
             "pinned host memory, system-scope 64-bit atomics; device code compiled with %.160s", b->arch);
    b->launch_pending = config->launch_pending;
    if (config->device_launch)
        gpuDeviceLaunchCheck(b->info.no_device_launch, sizeof b->info.no_device_launch);
    else
        snprintf(b->info.no_device_launch, sizeof b->info.no_device_launch,
                 "GRAIN_DEVICE_LAUNCH=0 builds programs without the device runtime");
    grain_info(GPU_NAME ": using device %d, \"%s\" (%s, %s)", b->device, b->props.name, b->arch,
               b->info.no_device_launch[0] == '\0' ? "kernels launch kernels" : b->info.no_device_launch);
    *backend_p = b;
    return GRAIN_OK;
}


static void gpu_query(grain_backend_t *b, grain_backend_info_t *info)
{
    *info = b->info;
}

static grain_status_t gpu_alloc_shared(grain_backend_t *b, size_t size, void **ptr_p)
{
    void *p = NULL;
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = gpuHostAllocShared(&p, size);
    if (err != GPU_SUCCESS)
        return grain_fail(GRAIN_ERR_NO_MEMORY, GPU_NAME ": pinned host allocation of %zu bytes failed: %s",
                          size, gpuGetErrorString(err));
    memset(p, 0, size);
    *ptr_p = p;
    return GRAIN_OK;
}

static void gpu_free_shared(grain_backend_t *b, void *ptr)
{
    on_device(b);
    gpuFreeHost(ptr);
}

/* A plain memset may still be running when a kernel of the non-blocking
 * stream starts: zero in that stream's order, and wait for it, so that host
 * reads see the zeros too. */
static gpu_err_t zero_on_stream(grain_backend_t *b, void *p, size_t size)
{
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = gpuMemsetAsync(p, 0, size, b->stream);
    return err == GPU_SUCCESS ? gpuStreamSynchronize(b->stream) : err;
}

static grain_status_t gpu_zero(grain_backend_t *b, void *ptr, size_t size)
{
    gpu_err_t err = zero_on_stream(b, ptr, size);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "zeroing memory");
}

static grain_status_t alloc_zeroed(grain_backend_t *b, size_t size, void **ptr_p, int managed)
{
    void *p = NULL;
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = managed ? gpuMallocManaged(&p, size) : gpuMalloc(&p, size);
    if (err == GPU_SUCCESS && (err = zero_on_stream(b, p, size)) != GPU_SUCCESS)
        gpuFree(p);
    if (err != GPU_SUCCESS)
        return grain_fail(GRAIN_ERR_NO_MEMORY, GPU_NAME ": %s allocation of %zu bytes failed: %s",
                          managed ? "managed" : "device", size, gpuGetErrorString(err));
    *ptr_p = p;
    return GRAIN_OK;
}

static grain_status_t gpu_alloc_device(grain_backend_t *b, size_t size, void **ptr_p)
{
    return alloc_zeroed(b, size, ptr_p, 0);
}

/* Zeroed by the device, so that its pages start there. */
static grain_status_t gpu_alloc_heap(grain_backend_t *b, size_t size, void **ptr_p)
{
    if (!b->props.concurrentManagedAccess)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          GPU_NAME ": device %d cannot share managed memory with host threads while "
                                   "kernels run (concurrentManagedAccess is 0), which a heap in device "
                                   "memory needs; set GRAIN_APPLY=host",
                          b->device);
    return alloc_zeroed(b, size, ptr_p, 1);
}

/* The task scheduler's arrays under GRAIN_SCHED_MEMORY=managed: every
 * device of the process and host threads reach them while kernels run. */
static grain_status_t gpu_alloc_managed(grain_backend_t *b, size_t size, void **ptr_p)
{
    if (!b->props.concurrentManagedAccess)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          GPU_NAME ": device %d cannot share managed memory with host threads while kernels run "
                                   "(concurrentManagedAccess is 0); set GRAIN_SCHED_MEMORY=replicas",
                          b->device);
    return alloc_zeroed(b, size, ptr_p, 1);
}

static void gpu_free_device(grain_backend_t *b, void *ptr)
{
    on_device(b);
    gpuFree(ptr);
}

static grain_status_t gpu_copy(grain_backend_t *b, void *dst, const void *src, size_t size)
{
    /* Unified addressing: the driver knows where each pointer lives.  From
     * pageable host memory the copy returns once the bytes are staged, not
     * landed; another rank may write the destination as soon as this one
     * returns (the direct path), and a late landing would overwrite that:
     * so wait for the default stream, which carries it. */
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = gpuMemcpyAny(dst, src, size);
    if (err == GPU_SUCCESS)
        err = gpuStreamSynchronize(0);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "a copy");
}

/* Splits the runtime's "-DA=1 -DB=2" into the compiler's argument list. */
static int split_options(char *options, const char **argv, int max)
{
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(options, " ", &save); tok != NULL && n < max;
         tok = strtok_r(NULL, " ", &save))
        argv[n++] = tok;
    return n;
}

static grain_status_t gpu_program_build(grain_backend_t *b, const char *source, const char *options,
                                        grain_bprogram_t **program_p)
{
    /* Where kernels may launch kernels, every program can: the launch agent's
     * producer is the application's kernel, built before any region. */
    int device_launch = b->info.no_device_launch[0] == '\0';
    char opts[2048];
    snprintf(opts, sizeof opts, "%s -std=c++17 %s %s", b->arch, device_launch ? GPU_DEVICE_LAUNCH_OPTIONS : "",
             options ? options : "");
    char split[2048];
    memcpy(split, opts, sizeof split);
    const char *argv[64];
    int argc = split_options(split, argv, 64);

    const rtc_lib_t *rtc_lib = rtcLoad();
    if (rtc_lib == NULL)
        return GRAIN_ERR_NO_BACKEND;
    rtc_program_t rtc;
    rtc_result_t r = rtcCreateProgram(&rtc, source, "grain_program", 0, NULL, NULL);
    if (r != RTC_SUCCESS)
        return grain_fail(GRAIN_ERR_BUILD, GPU_NAME ": creating the program failed: %s",
                          rtcGetErrorString(r));
    r = rtcCompileProgram(rtc, argc, argv);
    if (r != RTC_SUCCESS) {
        size_t n = 0;
        rtcGetProgramLogSize(rtc, &n);
        char *log = malloc(n + 1);
        if (log != NULL) {
            rtcGetProgramLog(rtc, log);
            log[n] = '\0';
        }
        grain_status_t st = grain_fail(GRAIN_ERR_BUILD, GPU_NAME ": the kernel did not build (%s, options %s):\n%s",
                                       rtcGetErrorString(r), opts, log ? log : "(no build log)");
        free(log);
        rtcDestroyProgram(&rtc);
        return st;
    }
    size_t size = 0;
    char *code = NULL;
    if (rtcGetCodeSize(rtc, &size) == RTC_SUCCESS)
        code = malloc(size);
    if (code == NULL || rtcGetCode(rtc, code) != RTC_SUCCESS) {
        free(code);
        rtcDestroyProgram(&rtc);
        return grain_fail(GRAIN_ERR_BUILD, GPU_NAME ": could not read the compiled code");
    }
    rtcDestroyProgram(&rtc);
    if (device_launch) {
        void *linked = NULL;
        grain_status_t st = gpuLinkDeviceRuntime(&b->props, code, size, &linked);
        free(code);
        if (st != GRAIN_OK)
            return st;
        code = linked;
    }

    grain_bprogram_t *prog = calloc(1, sizeof *prog);
    gpu_err_t err = on_device(b);
    if (prog != NULL && err == GPU_SUCCESS)
        err = gpuModuleLoad(&prog->module, code);
    free(code);
    if (prog == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, GPU_NAME ": no memory for a program");
    if (err != GPU_SUCCESS) {
        free(prog);
        return gpu_fail(err, "loading the compiled program");
    }
    prog->backend = b;
    *program_p = prog;
    return GRAIN_OK;
}

static void gpu_program_release(grain_bprogram_t *prog)
{
    on_device(prog->backend);
    gpuModuleUnload(prog->module);
    free(prog);
}

static grain_status_t gpu_kernel_create(grain_bprogram_t *prog, const char *name,
                                        grain_bkernel_t **kernel_p)
{
    grain_bkernel_t *k = calloc(1, sizeof *k);
    if (k == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, GPU_NAME ": no memory for a kernel");
    gpu_err_t err = on_device(prog->backend);
    if (err == GPU_SUCCESS)
        err = gpuModuleFunction(&k->function, prog->module, name);
    if (err != GPU_SUCCESS) {
        free(k);
        gpuGetLastError(); /* the runtime API keeps the error sticky until read */
        return grain_fail(GRAIN_ERR_INVALID, GPU_NAME ": the program has no kernel named \"%s\" (%s)",
                          name, gpuGetErrorString(err));
    }
    k->backend = prog->backend;
    k->n_params = gpuKernelParams(k->function);
    snprintf(k->name, sizeof k->name, "%s", name);
    *kernel_p = k;
    return GRAIN_OK;
}

static void gpu_kernel_release(grain_bkernel_t *k)
{
    free(k);
}

static grain_status_t gpu_kernel_set_arg(grain_bkernel_t *k, unsigned index, size_t size,
                                         const void *value)
{
    if (index >= MAX_ARGS || size == 0 || size > MAX_ARG_BYTES || value == NULL)
        return grain_fail(GRAIN_ERR_INVALID,
                          GPU_NAME ": kernel %s argument %u of %zu bytes: at most %d arguments of 1 to "
                          "%d bytes",
                          k->name, index, size, MAX_ARGS, MAX_ARG_BYTES);
    memcpy(k->values[index], value, size);
    k->set[index] = 1;
    if (index >= k->n_args)
        k->n_args = index + 1;
    return GRAIN_OK;
}

static grain_status_t gpu_kernel_set_arg_ptr(grain_bkernel_t *k, unsigned index, void *ptr)
{
    return gpu_kernel_set_arg(k, index, sizeof ptr, &ptr);
}

static grain_status_t launch_on(grain_bkernel_t *k, unsigned dims, const size_t *global,
                                const size_t *local, gpu_stream_t stream)
{
    void *args[MAX_ARGS];
    unsigned n = k->n_params > k->n_args ? k->n_params : k->n_args;
    if (n > MAX_ARGS)
        return grain_fail(GRAIN_ERR_INVALID, GPU_NAME ": kernel %s takes %u arguments; at most %d are supported",
                          k->name, n, MAX_ARGS);
    for (unsigned i = 0; i < n; i++) {
        if (!k->set[i])
            return grain_fail(GRAIN_ERR_INVALID, GPU_NAME ": kernel %s: argument %u was never set",
                              k->name, i);
        args[i] = k->values[i];
    }
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    for (unsigned d = 0; d < dims; d++) {
        block[d] = (unsigned)local[d]; /* the runtime checked that it divides global */
        grid[d] = (unsigned)(global[d] / local[d]);
    }
    gpu_err_t err = on_device(k->backend);
    if (err == GPU_SUCCESS)
        err = gpuLaunch(k->function, grid, block, args, stream);
    if (err != GPU_SUCCESS)
        return gpu_fail(err, "launching a kernel");
    return GRAIN_OK;
}

static grain_status_t gpu_launch(grain_bkernel_t *k, unsigned dims, const size_t *global,
                                 const size_t *local)
{
    return launch_on(k, dims, global, local, k->backend->stream);
}

static grain_status_t gpu_synchronize(grain_backend_t *b)
{
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = gpuStreamSynchronize(b->stream);
    if (err != GPU_SUCCESS)
        return gpu_fail(err, "waiting for the kernels");
    return GRAIN_OK;
}

/* Any status but "not ready" (an error included: synchronize reports it)
 * means nothing runs any more. */
static int gpu_busy(grain_backend_t *b)
{
    on_device(b);
    return gpuStreamQuery(b->stream) == GPU_NOT_READY;
}

static grain_status_t gpu_launch_side(grain_bkernel_t *k, size_t global, size_t local, uint64_t *n_p)
{
    grain_backend_t *b = k->backend;
    grain_status_t st = launch_on(k, 1, &global, &local, b->side);
    if (st != GRAIN_OK)
        return st;
    gpu_err_t err = ring_mark(&b->side_marks, b->side, n_p);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "recording an apply kernel's completion");
}

/* A failed launch counts as finished; side_synchronize reports it. */
static int gpu_side_done(grain_backend_t *b, uint64_t n)
{
    on_device(b);
    return ring_done(&b->side_marks, n) != 0;
}

static grain_status_t gpu_side_synchronize(grain_backend_t *b)
{
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = gpuStreamSynchronize(b->side);
    if (err != GPU_SUCCESS)
        return gpu_fail(err, "waiting for the apply kernels");
    return GRAIN_OK;
}

/*
 * Peer memory: device memory exported with an IPC handle.  The handle also
 * names the exporting device by PCI address, so that the importer can ask
 * whether its own device reaches it before mapping (opening a handle of a
 * device without peer access succeeds, and the kernels' stores then fault).
 */
typedef struct peer_handle {
    gpu_ipc_handle_t ipc;
    char pci[32];
} peer_handle_t;
_Static_assert(sizeof(peer_handle_t) <= GRAIN_PEER_HANDLE_BYTES, "peer handle too large");

static grain_status_t gpu_alloc_peer(grain_backend_t *b, size_t size, void **ptr_p, void *handle)
{
    void *p = NULL; /* set by alloc_zeroed, which GCC cannot see at -O3 */
    grain_status_t st = alloc_zeroed(b, size, &p, 0);
    if (st != GRAIN_OK)
        return st;
    peer_handle_t h;
    memset(&h, 0, sizeof h);
    snprintf(h.pci, sizeof h.pci, "%04x:%02x:%02x.0", (unsigned)b->props.pciDomainID,
             (unsigned)b->props.pciBusID, (unsigned)b->props.pciDeviceID);
    gpu_err_t err = gpuIpcGetMemHandle(&h.ipc, p);
    if (err != GPU_SUCCESS) {
        gpuFree(p);
        return gpu_fail(err, "exporting device memory to the other ranks of the node");
    }
    memcpy(handle, &h, sizeof h);
    *ptr_p = p;
    return GRAIN_OK;
}

static grain_status_t gpu_map_peer(grain_backend_t *b, const void *handle, void **ptr_p, int *remote_p)
{
    peer_handle_t h;
    memcpy(&h, handle, sizeof h);
    h.pci[sizeof h.pci - 1] = '\0';
    int peer = -1, reach = 0;
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = gpuDeviceGetByPCIBusId(&peer, h.pci);
    if (err != GPU_SUCCESS)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, GPU_NAME ": device %s is not visible here: %s", h.pci,
                          gpuGetErrorString(err));
    if (peer != b->device && ((err = gpuDeviceCanAccessPeer(&reach, b->device, peer)) != GPU_SUCCESS || !reach))
        return grain_fail(GRAIN_ERR_UNSUPPORTED, GPU_NAME ": device %d has no peer access to device %d (%s)",
                          b->device, peer, h.pci);
    void *p = NULL;
    if ((err = gpuIpcOpenMemHandle(&p, h.ipc)) != GPU_SUCCESS)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, GPU_NAME ": mapping device %s's memory failed: %s", h.pci,
                          gpuGetErrorString(err));
    *ptr_p = p;
    *remote_p = peer != b->device;
    return GRAIN_OK;
}

static void gpu_unmap_peer(grain_backend_t *b, void *ptr)
{
    on_device(b);
    gpuIpcCloseMemHandle(ptr);
}

/* The lane's stream, created on its first use. */
static gpu_err_t lane_stream(grain_backend_t *b, unsigned lane, gpu_stream_t *s_p)
{
    gpu_err_t err = on_device(b);
    pthread_mutex_lock(&b->lanes_lock);
    if (err == GPU_SUCCESS && b->lanes[lane] == NULL && (err = ring_create(&b->lane_marks[lane])) == GPU_SUCCESS &&
        (err = gpuStreamCreate(&b->lanes[lane], 0)) != GPU_SUCCESS)
        ring_destroy(&b->lane_marks[lane]);
    *s_p = b->lanes[lane];
    pthread_mutex_unlock(&b->lanes_lock);
    return err;
}

static grain_status_t gpu_copy_async(grain_backend_t *b, unsigned lane, void *dst, const void *src, size_t size)
{
    gpu_stream_t s = NULL;
    gpu_err_t err = lane_stream(b, lane, &s);
    if (err == GPU_SUCCESS)
        err = gpuMemcpyAnyAsync(dst, src, size, s);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "an asynchronous copy");
}

static grain_status_t gpu_launch_lane(grain_bkernel_t *k, unsigned lane, unsigned dims, const size_t *global,
                                      const size_t *local)
{
    gpu_stream_t s = NULL;
    gpu_err_t err = lane_stream(k->backend, lane, &s);
    return err == GPU_SUCCESS ? launch_on(k, dims, global, local, s) : gpu_fail(err, "creating a stream");
}

/* Under the lock: threads of several regions share lane numbers. */
static grain_status_t gpu_copy_mark(grain_backend_t *b, unsigned lane, uint64_t *n_p)
{
    gpu_err_t err = on_device(b);
    pthread_mutex_lock(&b->lanes_lock);
    if (err == GPU_SUCCESS && b->lanes[lane] != NULL)
        err = ring_mark(&b->lane_marks[lane], b->lanes[lane], n_p);
    else if (err == GPU_SUCCESS)
        *n_p = 0; /* no copy yet: nothing to wait for */
    pthread_mutex_unlock(&b->lanes_lock);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "marking transfers");
}

/* The events never move once the lane exists, so no lock. */
static int gpu_copy_done(grain_backend_t *b, unsigned lane, uint64_t n)
{
    if (n == 0)
        return 1;
    on_device(b);
    return ring_done(&b->lane_marks[lane], n);
}

static grain_status_t gpu_copy_wait(grain_backend_t *b, unsigned lane)
{
    gpu_err_t err = on_device(b);
    pthread_mutex_lock(&b->lanes_lock);
    gpu_stream_t s = b->lanes[lane];
    pthread_mutex_unlock(&b->lanes_lock);
    if (err == GPU_SUCCESS && s != NULL)
        err = gpuStreamSynchronize(s);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "waiting for transfers");
}

static grain_status_t gpu_prefetch(grain_backend_t *b, unsigned lane, const void *ptr, size_t size, int to_host)
{
    gpu_stream_t s = NULL;
    gpu_err_t err = lane_stream(b, lane, &s);
    if (err == GPU_SUCCESS)
        err = gpuPrefetch(ptr, size, to_host ? -1 : b->device, s);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "prefetching managed memory");
}

static grain_status_t gpu_advise(grain_backend_t *b, const void *ptr, size_t size, int advice, int to_host, int set)
{
    static const gpu_advice_t on[] = {[GRAIN_ADVISE_READ_MOSTLY] = gpuAdviseSetReadMostly,
                                      [GRAIN_ADVISE_PREFERRED_LOCATION] = gpuAdviseSetPreferredLocation,
                                      [GRAIN_ADVISE_ACCESSED_BY] = gpuAdviseSetAccessedBy};
    static const gpu_advice_t off[] = {[GRAIN_ADVISE_READ_MOSTLY] = gpuAdviseUnsetReadMostly,
                                       [GRAIN_ADVISE_PREFERRED_LOCATION] = gpuAdviseUnsetPreferredLocation,
                                       [GRAIN_ADVISE_ACCESSED_BY] = gpuAdviseUnsetAccessedBy};
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = gpuMemAdvise(ptr, size, set ? on[advice] : off[advice], to_host ? -1 : b->device);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "advice on managed memory");
}

static grain_status_t gpu_copy_rect_async(grain_backend_t *b, unsigned lane, void *dst, size_t dpitch,
                                          const void *src, size_t spitch, size_t width, size_t rows)
{
    gpu_stream_t s = NULL;
    gpu_err_t err = lane_stream(b, lane, &s);
    if (err == GPU_SUCCESS)
        err = gpuMemcpyRectAsync(dst, dpitch, src, spitch, width, rows, s);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "an asynchronous copy of a rectangle");
}

/* The event is read under the lock: a mark may record into its slot. */
static grain_status_t gpu_lane_wait(grain_backend_t *b, unsigned lane, unsigned on, uint64_t n)
{
    gpu_stream_t s = NULL;
    gpu_err_t err = lane_stream(b, lane, &s);
    pthread_mutex_lock(&b->lanes_lock);
    if (err == GPU_SUCCESS && n > 0 && b->lanes[on] != NULL)
        err = gpuStreamWaitEvent(s, b->lane_marks[on].events[n % MARK_EVENTS]);
    pthread_mutex_unlock(&b->lanes_lock);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "a lane waiting for another");
}

static void gpu_blas_load(grain_backend_t *b, char *name, size_t size)
{
    if (!b->blas_tried && on_device(b) == GPU_SUCCESS) { /* a handle serves the device current at its creation */
        b->blas_tried = 1;
        b->blas = gpuBlasOpen(b->info.blas, sizeof b->info.blas);
    }
    snprintf(name, size, "%s", b->info.blas);
}

/* Both ends: a range that starts and ends in page-locked memory is taken
 * as one allocation or registration. */
static int gpu_host_pinned(grain_backend_t *b, const void *ptr, size_t bytes)
{
    (void)b;
    return bytes > 0 && gpuHostPinned(ptr) && gpuHostPinned((const unsigned char *)ptr + bytes - 1);
}

static grain_status_t gpu_gemm_tile(grain_backend_t *b, unsigned lane, size_t es, int ta, int tb, size_t m, size_t n,
                                    size_t k, const void *alpha, const void *a, size_t lda, const void *bm, size_t ldb,
                                    const void *beta, void *c, size_t ldc)
{
    if (b->blas == NULL)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, GPU_NAME ": no vendor BLAS was loaded for gemm tiles");
    gpu_stream_t s = NULL;
    gpu_err_t err = lane_stream(b, lane, &s);
    if (err != GPU_SUCCESS)
        return gpu_fail(err, "creating a stream");
    return gpuBlasGemm(b->blas, s, es, ta, tb, m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc);
}

/* Unified addresses let a lane's copy name either device's memory; peer
 * access puts it on the link between them (else the driver stages it). */
static grain_status_t gpu_reach_peer(grain_backend_t *b, grain_backend_t *peer)
{
    if (peer->device == b->device)
        return GRAIN_OK;
    int reach = 0;
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS && (err = gpuDeviceCanAccessPeer(&reach, b->device, peer->device)) == GPU_SUCCESS &&
        !reach)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, GPU_NAME ": device %d has no peer access to device %d", b->device,
                          peer->device);
    if (err == GPU_SUCCESS && (err = gpuDeviceEnablePeerAccess(peer->device, 0)) == GPU_PEER_ALREADY_ENABLED) {
        (void)gpuGetLastError(); /* clears the sticky "already" for the next call's check */
        err = GPU_SUCCESS;
    }
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "enabling peer access between devices");
}

static grain_status_t gpu_launch_agent(grain_bkernel_t *k, size_t global, size_t local)
{
    return launch_on(k, 1, &global, &local, k->backend->agent);
}

static grain_status_t gpu_agent_synchronize(grain_backend_t *b)
{
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = gpuStreamSynchronize(b->agent);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "waiting for the transfer agent");
}

/* GRAIN_LAUNCH_PENDING fixes the room; else it grows to the most any
 * region asked for (the device's limit is one for all its regions). */
static grain_status_t gpu_reserve_launches(grain_backend_t *b, size_t pending)
{
    gpu_err_t err = on_device(b);
    if (err == GPU_SUCCESS)
        err = gpuReserveDeviceLaunches(b->launch_pending ? b->launch_pending : pending, b->launch_pending != 0);
    return err == GPU_SUCCESS ? GRAIN_OK : gpu_fail(err, "reserving room for launches from kernels");
}

#if defined(GRAIN_GPU_CUDA)
const grain_backend_ops_t grain_cuda_ops = {
#else
const grain_backend_ops_t grain_hip_ops = {
#endif
    .size = sizeof(grain_backend_ops_t),
    .name = GPU_NAME,
    .open = gpu_open,
    .close = gpu_close,
    .query = gpu_query,
    .select_device = gpu_select_device,
    .alloc_shared = gpu_alloc_shared,
    .free_shared = gpu_free_shared,
    .alloc_device = gpu_alloc_device,
    .free_device = gpu_free_device,
    .alloc_heap = gpu_alloc_heap,
    .free_heap = gpu_free_device,
    .copy = gpu_copy,
    .zero = gpu_zero,
    .program_build = gpu_program_build,
    .program_release = gpu_program_release,
    .kernel_create = gpu_kernel_create,
    .kernel_release = gpu_kernel_release,
    .kernel_set_arg = gpu_kernel_set_arg,
    .kernel_set_arg_ptr = gpu_kernel_set_arg_ptr,
    .launch = gpu_launch,
    .synchronize = gpu_synchronize,
    .launch_side = gpu_launch_side,
    .busy = gpu_busy,
    .side_done = gpu_side_done,
    .side_synchronize = gpu_side_synchronize,
    .alloc_peer = gpu_alloc_peer,
    .free_peer = gpu_free_device,
    .map_peer = gpu_map_peer,
    .unmap_peer = gpu_unmap_peer,
    .copy_async = gpu_copy_async,
    .copy_wait = gpu_copy_wait,
    .copy_mark = gpu_copy_mark,
    .launch_lane = gpu_launch_lane,
    .copy_done = gpu_copy_done,
    .alloc_managed = gpu_alloc_managed,
    .prefetch = gpu_prefetch,
    .advise = gpu_advise,
    .reach_peer = gpu_reach_peer,
    .launch_agent = gpu_launch_agent,
    .agent_synchronize = gpu_agent_synchronize,
    .reserve_launches = gpu_reserve_launches,
    .copy_rect_async = gpu_copy_rect_async,
    .lane_wait = gpu_lane_wait,
    .gemm_tile = gpu_gemm_tile,
    .blas_load = gpu_blas_load,
    .host_pinned = gpu_host_pinned,
};
