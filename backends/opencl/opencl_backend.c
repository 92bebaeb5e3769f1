/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The OpenCL backend: fine-grained buffer SVM with SVM atomics, so host
 * threads consume the queue while the kernel fills it and apply received
 * messages straight into the heap.  Runs on PoCL (CPU) and on any OpenCL 2.0+
 * device that has those capabilities; a device without them is refused with
 * the capability it lacks.
 *
 * Peer memory (the direct path's heaps, regions in peer memory) is POSIX
 * shared memory that every process of the node maps.  A CPU device runs
 * kernels in this process, on its addresses, so its kernels reach any
 * mapping; other devices reach one only with fine-grained system SVM.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#ifdef GRAIN_HAVE_CLBLAST
#include <clblast_c.h>
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "services/backoff.h" /* grain_now_ns */
#include "services/config.h"
#include "services/cores.h"
#include "services/log.h"
#include "services/turns.h"

#define MARK_EVENTS 64u

/* Points of an in-order queue (the side queue's launches, a lane's
 * markers), numbered from 1, each kept in event n % MARK_EVENTS, reused
 * round robin: that event then stands for the newest point recorded in
 * it, n or later, and when that one is done, so is n. */
typedef struct ocl_marks {
    cl_event events[MARK_EVENTS];
    uint64_t n;
} ocl_marks_t;

/* A transfer lane: an in-order queue, made on first use, and its marks. */
typedef struct ocl_lane {
    cl_command_queue queue;
    ocl_marks_t marks;
} ocl_lane_t;

/* A shared-memory object as another process finds it. */
typedef struct shm_handle {
    char name[64];
    uint64_t size;
} shm_handle_t;
_Static_assert(sizeof(shm_handle_t) <= GRAIN_PEER_HANDLE_BYTES, "peer handle too large");

/* A mapping of one: exported here (its name, until sealed) or imported (""). */
typedef struct shm_map {
    void *ptr;
    size_t size;
    char name[64];
} shm_map_t;

struct grain_backend {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue; /* the application's kernels */
    cl_command_queue side;  /* the runtime's apply kernels */
    cl_command_queue on_device; /* the launch agent's default device queue, made when a region needs it */
    ocl_marks_t side_marks;
    /* Under lanes_lock: the threads of several regions share lane numbers,
     * and a mark replaces the event in its slot. */
    ocl_lane_t lanes[GRAIN_LANES];
    pthread_mutex_t lanes_lock;
    grain_backend_info_t info;
    char cl_std[16]; /* -cl-std= value */
    /* Every live SVM allocation: kernels reach the heap and the queue through
     * pointers stored in the device context, which OpenCL requires to be
     * declared with CL_KERNEL_EXEC_INFO_SVM_PTRS.  The lock also guards
     * last_launch, which runtime threads query. */
    pthread_mutex_t lock;
    void **svm;
    size_t n_svm, cap_svm;
    cl_event last_launch; /* the application's newest kernel */
    /* Peer memory, under the lock too; no_peer says why there is none. */
    shm_map_t *maps;
    size_t n_maps, cap_maps;
    atomic_uint peer_names;
    char no_peer[320];
};

struct grain_bprogram {
    grain_backend_t *backend;
    cl_program program;
    uint64_t key; /* its compile's (services/turns.h): device, options, source */
};

/* The work-group sizes a kernel remembers having launched at, each first
 * launch taking a turn (services/turns.h); a kernel launched at more sizes
 * takes no turn for the others, rather than one at every launch. */
#define OCL_SHAPES 8

struct grain_bkernel {
    grain_backend_t *backend;
    cl_kernel kernel;
    uint64_t key;
    size_t shapes[OCL_SHAPES][3]; /* under the backend's lock */
    unsigned n_shapes;
};

static const char *cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x;
    E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_BUILD_PROGRAM_FAILURE) E(CL_INVALID_VALUE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE)
    E(CL_INVALID_CONTEXT) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL)
    E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_OPERATION)
    E(CL_INVALID_BUILD_OPTIONS)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL error";
    }
}

#define CL_FAIL(err, what) \
    grain_fail(GRAIN_ERR_BACKEND, "opencl: %s failed: %s (%d)", (what), cl_error_name(err), (int)(err))

static void device_string(cl_device_id dev, cl_device_info param, char *buf, size_t size)
{
    if (clGetDeviceInfo(dev, param, size, buf, NULL) != CL_SUCCESS)
        snprintf(buf, size, "?");
}

/* Whether kernels may launch kernels (the launch agent): where `dev` has
 * device-side enqueue, programs are built with GRAIN_DEVICE_LAUNCH so that
 * the work-group completing a chunk enqueues its copy (OpenCL C 2.0's
 * enqueue_kernel).  Otherwise `out` says why not; PoCL and NVIDIA's OpenCL
 * have no device-side enqueue. */
static void device_launch_check(cl_device_id dev, const char *name, int wanted, char *out, size_t size)
{
    cl_device_device_enqueue_capabilities caps = 0;
    cl_uint queues = 0;
    /* OpenCL 3.0 asks the first; a 2.x device answers only the second. */
    int has = (clGetDeviceInfo(dev, CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES, sizeof caps, &caps, NULL) == CL_SUCCESS
                   ? (caps & CL_DEVICE_QUEUE_SUPPORTED) != 0
                   : clGetDeviceInfo(dev, CL_DEVICE_MAX_ON_DEVICE_QUEUES, sizeof queues, &queues, NULL) == CL_SUCCESS &&
                         queues > 0);
    if (!has)
        snprintf(out, size, "opencl: \"%.160s\" has no device-side enqueue (CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES)",
                 name);
    else if (!wanted)
        snprintf(out, size, "GRAIN_DEVICE_LAUNCH=0 builds programs without device-side enqueue");
    else
        out[0] = '\0';
}

/* Why `dev` cannot run grain, or NULL when it can; fills the -cl-std value. */
static const char *device_shortfall(cl_device_id dev, char *cl_std, size_t cl_std_size)
{
    cl_device_svm_capabilities svm = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL) != CL_SUCCESS)
        svm = 0;
    if (!(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER))
        return "fine-grained buffer SVM (CL_DEVICE_SVM_FINE_GRAIN_BUFFER), which the host-device "
               "queue needs";
    if (!(svm & CL_DEVICE_SVM_ATOMICS))
        return "SVM atomics (CL_DEVICE_SVM_ATOMICS), which the host-device queue needs";

    char ext[8192];
    device_string(dev, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    if (!strstr(ext, "cl_khr_int64_base_atomics") || !strstr(ext, "cl_khr_int64_extended_atomics"))
        return "64-bit atomics (cl_khr_int64_base_atomics and cl_khr_int64_extended_atomics)";

    char cver[256];
    device_string(dev, CL_DEVICE_OPENCL_C_VERSION, cver, sizeof cver);
    int major = 0, minor = 0;
    sscanf(cver, "OpenCL C %d.%d", &major, &minor);
    if (major >= 2) {
        snprintf(cl_std, cl_std_size, "CL2.0");
        return NULL;
    }
    /* OpenCL 3.0 devices may report OpenCL C 1.2 and list 3.0 with features. */
    char dver[256];
    device_string(dev, CL_DEVICE_VERSION, dver, sizeof dver);
    if (sscanf(dver, "OpenCL %d.%d", &major, &minor) == 2 && major >= 3) {
        size_t n = 0;
        if (clGetDeviceInfo(dev, CL_DEVICE_OPENCL_C_FEATURES, 0, NULL, &n) == CL_SUCCESS && n > 0) {
            cl_name_version *f = malloc(n);
            int acq_rel = 0, dev_scope = 0;
            if (f != NULL && clGetDeviceInfo(dev, CL_DEVICE_OPENCL_C_FEATURES, n, f, NULL) == CL_SUCCESS) {
                for (size_t i = 0; i < n / sizeof *f; i++) {
                    acq_rel |= strcmp(f[i].name, "__opencl_c_atomic_order_acq_rel") == 0;
                    dev_scope |= strcmp(f[i].name, "__opencl_c_atomic_scope_device") == 0;
                }
            }
            free(f);
            if (acq_rel && dev_scope) {
                snprintf(cl_std, cl_std_size, "CL3.0");
                return NULL;
            }
        }
    }
    return "OpenCL C 2.0 atomics (or OpenCL C 3.0 with __opencl_c_atomic_order_acq_rel and "
           "__opencl_c_atomic_scope_device)";
}

/* Does `selector` (an index or part of a name; empty matches all) pick item
 * `index` named `name`? */
static int selected(const char *selector, unsigned index, const char *name)
{
    if (selector[0] == '\0')
        return 1;
    char *end;
    unsigned long want = strtoul(selector, &end, 10);
    if (*end == '\0')
        return want == index;
    return strstr(name, selector) != NULL;
}

/* Holds the probe's threads alive until all have started. */
static void *probe_thread(void *gate)
{
    pthread_rwlock_rdlock(gate);
    pthread_rwlock_unlock(gate);
    return NULL;
}

/* PoCL aborts the process when it cannot start its worker threads (a
 * memory or thread limit): start as many first, alive at once, so that a
 * number this process cannot have is an error that says so. */
static grain_status_t probe_threads(long threads)
{
    pthread_rwlock_t gate;
    pthread_t *ids = malloc((size_t)threads * sizeof *ids);
    if (ids == NULL || pthread_rwlock_init(&gate, NULL) != 0) {
        free(ids);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "opencl: no memory to check GRAIN_CPU_DEVICE_THREADS");
    }
    pthread_rwlock_wrlock(&gate);
    long started = 0;
    int err = 0;
    while (started < threads && (err = pthread_create(&ids[started], NULL, probe_thread, &gate)) == 0)
        started++;
    pthread_rwlock_unlock(&gate);
    for (long i = 0; i < started; i++)
        pthread_join(ids[i], NULL);
    pthread_rwlock_destroy(&gate);
    free(ids);
    if (started < threads)
        return grain_fail(GRAIN_ERR_INVALID,
                          "GRAIN_CPU_DEVICE_THREADS=%ld: this process could start only %ld threads (%s), and the "
                          "CPU device would abort without them: ask for fewer (0: one per free core)",
                          threads, started, strerror(err));
    return GRAIN_OK;
}

/*
 * PoCL's worker threads and grain's host threads share the cores of a CPU
 * device; with one worker per core the consumer starves (Gravel's queue with
 * 64-lane work-groups on 2 cores: 1.1 M msg/s with PoCL's default worker
 * count, 106 M with one worker).  PoCL reads its thread count when the
 * platform loads, so it is set before the first OpenCL call, unless the user
 * set it.  The cores
 * are those this process may run on: mpirun binds a rank to one core by
 * default, where a CPU device and grain's threads take turns (pagerank on a
 * scale-14 graph: 2.56 s bound against 0.16 s with --bind-to none).
 */
static grain_status_t limit_cpu_device_threads(const grain_config_t *config, unsigned host_threads)
{
    if (getenv("POCL_MAX_PTHREAD_COUNT") != NULL)
        return GRAIN_OK;
    grain_cores_t c = grain_rank_cores();
    long online = c.online, cores = c.mine;
    if (cores == 1 && online > 1 && c.bound)
        grain_warn("this rank may run on 1 of the %ld cores, which the CPU device and grain's %u host threads "
                   "share; start it with mpirun --bind-to none (or bind it to more cores)",
                   online, host_threads);
    else if (cores == 1 && online > 1)
        grain_warn("this rank's share of the %ld cores is %.2g (%ld ranks on this node), which the CPU device and "
                   "grain's %u host threads share: expect it to run slowly; start fewer ranks a node",
                   online, (double)online / (double)(c.ranks > 0 ? c.ranks : 1), c.ranks, host_threads);
    long threads = (long)config->cpu_device_threads;
    if (threads == 0)
        threads = cores - (long)host_threads;
    if (threads < 1)
        threads = 1;
    if (threads > online) {
        grain_status_t st = probe_threads(threads);
        if (st != GRAIN_OK)
            return st;
    }
    char text[32];
    snprintf(text, sizeof text, "%ld", threads);
    setenv("POCL_MAX_PTHREAD_COUNT", text, 0);
    return GRAIN_OK;
}

static int ocl_select_device(grain_config_t *config, unsigned index)
{
    cl_platform_id platforms[64];
    cl_uint n_platforms = 0;
    if (clGetPlatformIDs(64, platforms, &n_platforms) != CL_SUCCESS)
        return 0;
    for (cl_uint p = 0; p < n_platforms && p < 64; p++) {
        cl_uint n_devices = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n_devices) != CL_SUCCESS)
            continue;
        if (index < n_devices) {
            snprintf(config->opencl_platform, sizeof config->opencl_platform, "%u", (unsigned)p);
            snprintf(config->opencl_device, sizeof config->opencl_device, "%u", index);
            return 1;
        }
        index -= n_devices;
    }
    return 0;
}

static grain_status_t pick_device(grain_backend_t *b, const grain_config_t *config)
{
    cl_uint n_platforms = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &n_platforms);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && n_platforms == 0)) {
        const char *vendors = getenv("OCL_ICD_VENDORS");
        return grain_fail(GRAIN_ERR_NO_DEVICE,
                          "opencl: no OpenCL platform found: the ICD loader found no driver in %s; "
                          "install one (for CPUs: apt-get install pocl-opencl-icd)",
                          vendors ? vendors : "/etc/OpenCL/vendors");
    }
    if (err != CL_SUCCESS)
        return CL_FAIL(err, "clGetPlatformIDs");
    cl_platform_id platforms[64];
    if (n_platforms > 64)
        n_platforms = 64;
    clGetPlatformIDs(n_platforms, platforms, NULL);

    char why[1024] = "";
    for (cl_uint p = 0; p < n_platforms; p++) {
        char pname[256];
        if (clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL) != CL_SUCCESS)
            continue;
        if (!selected(config->opencl_platform, p, pname))
            continue;
        cl_uint n_devices = 0;
        cl_device_id devices[64];
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 64, devices, &n_devices) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < n_devices && d < 64; d++) {
            char dname[256];
            device_string(devices[d], CL_DEVICE_NAME, dname, sizeof dname);
            if (!selected(config->opencl_device, d, dname))
                continue;
            const char *lack = device_shortfall(devices[d], b->cl_std, sizeof b->cl_std);
            if (lack != NULL) {
                snprintf(why, sizeof why, "device \"%s\" of platform \"%s\" lacks %s", dname, pname,
                         lack);
                grain_info("opencl: skipping a device: %s", why);
                continue;
            }
            b->platform = platforms[p];
            b->device = devices[d];
            snprintf(b->info.device_name, sizeof b->info.device_name, "%s", dname);
            return GRAIN_OK;
        }
    }
    if (why[0] != '\0')
        return grain_fail(GRAIN_ERR_UNSUPPORTED, "opencl: no usable device: %s", why);
    return grain_fail(GRAIN_ERR_NO_DEVICE,
                      "opencl: no device matches GRAIN_OPENCL_PLATFORM=\"%s\" and "
                      "GRAIN_OPENCL_DEVICE=\"%s\" (clinfo lists what there is)",
                      config->opencl_platform, config->opencl_device);
}

static grain_status_t ocl_open(const grain_config_t *config, unsigned host_threads,
                               grain_backend_t **backend_p)
{
    grain_status_t st = limit_cpu_device_threads(config, host_threads);
    if (st != GRAIN_OK)
        return st;
    grain_backend_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "opencl: no memory for the backend");
    pthread_mutex_init(&b->lock, NULL);
    pthread_mutex_init(&b->lanes_lock, NULL);
    st = pick_device(b, config);
    if (st != GRAIN_OK)
        goto err_free;

    cl_int err;
    b->context = clCreateContext(NULL, 1, &b->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        st = CL_FAIL(err, "clCreateContext");
        goto err_free;
    }
    b->queue = clCreateCommandQueueWithProperties(b->context, b->device, NULL, &err);
    if (err != CL_SUCCESS) {
        st = CL_FAIL(err, "clCreateCommandQueueWithProperties");
        goto err_context;
    }
    b->side = clCreateCommandQueueWithProperties(b->context, b->device, NULL, &err);
    if (err != CL_SUCCESS) {
        st = CL_FAIL(err, "clCreateCommandQueueWithProperties");
        clReleaseCommandQueue(b->queue);
        goto err_context;
    }
    cl_device_type type = 0;
    size_t max_wg = 0, multiple = 0;
    clGetDeviceInfo(b->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(b->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL);
    b->info.max_wg_size = max_wg;
    b->info.cpu_device = (type & CL_DEVICE_TYPE_CPU) != 0;
    /* A CPU device runs a work-item's code between barriers as a loop body,
     * never a spin loop in lockstep with other work-items; GPUs' OpenCL makes
     * no such promise. */
    b->info.independent_lanes = b->info.cpu_device;
    cl_uint units = 1;
    clGetDeviceInfo(b->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    b->info.compute_units = units > 0 ? units : 1;
    cl_ulong memory = 0;
    clGetDeviceInfo(b->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof memory, &memory, NULL);
    b->info.device_memory = b->info.cpu_device ? 0 : (uint64_t)memory;
    b->info.prefers_device_apply = 0; /* fine-grained SVM: host and kernels share one memory */
    b->info.subgroup_width = 32;
    /* The preferred multiple is the SIMD width the compiler vectorizes for:
     * the warp on NVIDIA, the wavefront on AMD. */
    if (clGetDeviceInfo(b->device, CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof multiple,
                        &multiple, NULL) == CL_SUCCESS &&
        multiple > 0)
        b->info.subgroup_width = (unsigned)multiple;
    device_launch_check(b->device, b->info.device_name, config->device_launch, b->info.no_device_launch,
                        sizeof b->info.no_device_launch);
    cl_device_svm_capabilities svm = 0;
    clGetDeviceInfo(b->device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
    snprintf(b->info.shared_memory, sizeof b->info.shared_memory,
             "fine-grained buffer SVM with SVM atomics%s, 64-bit atomics; device code as OpenCL C %s",
             svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM ? ", fine-grained system SVM" : "", b->cl_std + 2);
    b->info.peer_host_access = 1;
    b->info.host_copies = 1; /* fine-grained SVM throughout: ocl_copy is memmove */
#ifdef GRAIN_HAVE_CLBLAST
    snprintf(b->info.blas, sizeof b->info.blas, "CLBlast");
#endif
    if (!b->info.cpu_device && !(svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM))
        snprintf(b->no_peer, sizeof b->no_peer,
                 "opencl: \"%.160s\" cannot address memory another process maps (it is no CPU device and "
                 "has no fine-grained system SVM)",
                 b->info.device_name);
    grain_info("opencl: using \"%s\" (%s, %s)", b->info.device_name, b->cl_std,
               b->info.no_device_launch[0] == '\0' ? "kernels launch kernels" : b->info.no_device_launch);
    *backend_p = b;
    return GRAIN_OK;

err_context:
    clReleaseContext(b->context);
err_free:
    pthread_mutex_destroy(&b->lanes_lock);
    pthread_mutex_destroy(&b->lock);
    free(b);
    return st;
}

/* Records `event` as the next point; returns its number. */
static uint64_t marks_add(ocl_marks_t *m, cl_event event)
{
    cl_event *slot = &m->events[(m->n + 1) % MARK_EVENTS];
    if (*slot != NULL)
        clReleaseEvent(*slot);
    *slot = event;
    return ++m->n;
}

/* Point n's execution status: CL_COMPLETE done, above it not yet,
 * negative failed (or not to be asked). */
static cl_int marks_status(const ocl_marks_t *m, uint64_t n)
{
    cl_event event = m->events[n % MARK_EVENTS];
    cl_int status = CL_COMPLETE;
    if (event != NULL &&
        clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) != CL_SUCCESS)
        status = -1;
    return status;
}

static void marks_release(ocl_marks_t *m)
{
    for (unsigned i = 0; i < MARK_EVENTS; i++)
        if (m->events[i] != NULL)
            clReleaseEvent(m->events[i]);
}

static void ocl_close(grain_backend_t *b)
{
    for (size_t i = 0; i < b->n_svm; i++)
        clSVMFree(b->context, b->svm[i]);
    free(b->svm);
    for (size_t i = 0; i < b->n_maps; i++) {
        munmap(b->maps[i].ptr, b->maps[i].size);
        if (b->maps[i].name[0] != '\0')
            shm_unlink(b->maps[i].name);
    }
    free(b->maps);
    marks_release(&b->side_marks);
    for (unsigned l = 0; l < GRAIN_LANES; l++) {
        if (b->lanes[l].queue != NULL) {
            clFinish(b->lanes[l].queue);
            clReleaseCommandQueue(b->lanes[l].queue);
        }
        marks_release(&b->lanes[l].marks);
    }
    if (b->last_launch != NULL)
        clReleaseEvent(b->last_launch);
    if (b->on_device != NULL)
        clReleaseCommandQueue(b->on_device);
    clReleaseCommandQueue(b->side);
    clReleaseCommandQueue(b->queue);
    clReleaseContext(b->context);
    pthread_mutex_destroy(&b->lanes_lock);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

static void ocl_query(grain_backend_t *b, grain_backend_info_t *info)
{
    *info = b->info;
}

static grain_status_t ocl_alloc_shared(grain_backend_t *b, size_t size, void **ptr_p)
{
    void *p = clSVMAlloc(b->context, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS,
                         size, 64);
    if (p == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "opencl: clSVMAlloc of %zu bytes failed", size);
    pthread_mutex_lock(&b->lock);
    if (b->n_svm == b->cap_svm) {
        size_t cap = b->cap_svm ? 2 * b->cap_svm : 16;
        void **svm = realloc(b->svm, cap * sizeof *svm);
        if (svm == NULL) {
            pthread_mutex_unlock(&b->lock);
            clSVMFree(b->context, p);
            return grain_fail(GRAIN_ERR_NO_MEMORY, "opencl: no memory to track an SVM allocation");
        }
        b->svm = svm;
        b->cap_svm = cap;
    }
    b->svm[b->n_svm++] = p;
    pthread_mutex_unlock(&b->lock);
    memset(p, 0, size);
    *ptr_p = p;
    return GRAIN_OK;
}

static void ocl_free_shared(grain_backend_t *b, void *ptr)
{
    pthread_mutex_lock(&b->lock);
    for (size_t i = 0; i < b->n_svm; i++) {
        if (b->svm[i] == ptr) {
            b->svm[i] = b->svm[--b->n_svm];
            break;
        }
    }
    pthread_mutex_unlock(&b->lock);
    clSVMFree(b->context, ptr);
}

static grain_status_t track_map(grain_backend_t *b, void *ptr, size_t size, const char *name)
{
    pthread_mutex_lock(&b->lock);
    if (b->n_maps == b->cap_maps) {
        size_t cap = b->cap_maps ? 2 * b->cap_maps : 16;
        shm_map_t *maps = realloc(b->maps, cap * sizeof *maps);
        if (maps == NULL) {
            pthread_mutex_unlock(&b->lock);
            return grain_fail(GRAIN_ERR_NO_MEMORY, "opencl: no memory to track a shared mapping");
        }
        b->maps = maps;
        b->cap_maps = cap;
    }
    shm_map_t *m = &b->maps[b->n_maps++];
    m->ptr = ptr;
    m->size = size;
    snprintf(m->name, sizeof m->name, "%s", name);
    pthread_mutex_unlock(&b->lock);
    return GRAIN_OK;
}

/* Removes `ptr`'s entry, unmapping it (`unmap`) and unlinking its name
 * where it still has one; or only unlinks it (sealing). */
static void forget_map(grain_backend_t *b, void *ptr, int unmap)
{
    pthread_mutex_lock(&b->lock);
    for (size_t i = 0; i < b->n_maps; i++) {
        shm_map_t *m = &b->maps[i];
        if (m->ptr != ptr)
            continue;
        if (m->name[0] != '\0')
            shm_unlink(m->name);
        m->name[0] = '\0';
        if (unmap) {
            munmap(m->ptr, m->size);
            *m = b->maps[--b->n_maps];
        }
        break;
    }
    pthread_mutex_unlock(&b->lock);
}

static void *map_shared(int fd, size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

static grain_status_t ocl_alloc_peer(grain_backend_t *b, size_t size, void **ptr_p, void *handle)
{
    if (b->no_peer[0] != '\0')
        return grain_fail(GRAIN_ERR_UNSUPPORTED, "%s", b->no_peer);
    shm_handle_t h;
    memset(&h, 0, sizeof h);
    int fd = -1;
    for (unsigned tries = 0; fd < 0 && tries < 64; tries++) {
        snprintf(h.name, sizeof h.name, "/grain-%ld-%u", (long)getpid(), atomic_fetch_add(&b->peer_names, 1));
        fd = shm_open(h.name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, "opencl: shared memory %s could not be created: %s", h.name,
                          strerror(errno));
    /* Reserves the pages now: a full /dev/shm fails here, not with SIGBUS
     * at a kernel's first store. */
    int err = posix_fallocate(fd, 0, (off_t)size);
    void *p = err == 0 ? map_shared(fd, size) : NULL;
    int map_err = errno;
    close(fd);
    grain_status_t st = GRAIN_OK;
    if (p == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "opencl: %zu bytes of shared memory (%s) could not be %s: %s", size,
                        h.name, err != 0 ? "reserved in /dev/shm" : "mapped", strerror(err != 0 ? err : map_err));
    else if ((st = track_map(b, p, size, h.name)) != GRAIN_OK)
        munmap(p, size);
    if (st != GRAIN_OK) {
        shm_unlink(h.name);
        return st;
    }
    h.size = size;
    memcpy(handle, &h, sizeof h);
    *ptr_p = p; /* a new object reads as zeros */
    return GRAIN_OK;
}

static grain_status_t ocl_map_peer(grain_backend_t *b, const void *handle, void **ptr_p, int *remote_p)
{
    if (b->no_peer[0] != '\0')
        return grain_fail(GRAIN_ERR_UNSUPPORTED, "%s", b->no_peer);
    shm_handle_t h;
    memcpy(&h, handle, sizeof h);
    h.name[sizeof h.name - 1] = '\0';
    int fd = shm_open(h.name, O_RDWR, 0);
    if (fd < 0)
        return grain_fail(GRAIN_ERR_UNSUPPORTED,
                          "opencl: shared memory %s is not visible here (%s): another host, or another IPC "
                          "namespace",
                          h.name, strerror(errno));
    struct stat stat_buf;
    int whole = fstat(fd, &stat_buf) == 0 && (uint64_t)stat_buf.st_size >= h.size;
    void *p = whole ? map_shared(fd, h.size) : NULL;
    int map_err = whole ? errno : EINVAL; /* shorter than its handle says */
    close(fd);
    if (p == NULL)
        return grain_fail(GRAIN_ERR_UNSUPPORTED, "opencl: shared memory %s (%llu bytes) could not be mapped: %s",
                          h.name, (unsigned long long)h.size, strerror(map_err));
    grain_status_t st = track_map(b, p, h.size, "");
    if (st != GRAIN_OK) {
        munmap(p, h.size);
        return st;
    }
    *ptr_p = p;
    /* Another device's kernels (fine-grained system SVM) work on it too;
     * a CPU device's are this process's threads. */
    *remote_p = !b->info.cpu_device;
    return GRAIN_OK;
}

static void ocl_free_peer(grain_backend_t *b, void *ptr)
{
    forget_map(b, ptr, 1);
}

static void ocl_seal_peer(grain_backend_t *b, void *ptr)
{
    forget_map(b, ptr, 0);
}

static grain_status_t ocl_copy(grain_backend_t *b, void *dst, const void *src, size_t size)
{
    (void)b; /* fine-grained SVM is coherent host memory */
    memmove(dst, src, size);
    return GRAIN_OK;
}

static grain_status_t ocl_zero(grain_backend_t *b, void *ptr, size_t size)
{
    (void)b;
    memset(ptr, 0, size);
    return GRAIN_OK;
}

static grain_status_t ocl_program_build(grain_backend_t *b, const char *source, const char *options,
                                        grain_bprogram_t **program_p)
{
    grain_bprogram_t *prog = calloc(1, sizeof *prog);
    if (prog == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "opencl: no memory for a program");
    prog->backend = b;
    cl_int err;
    prog->program = clCreateProgramWithSource(b->context, 1, &source, NULL, &err);
    if (err != CL_SUCCESS) {
        free(prog);
        return CL_FAIL(err, "clCreateProgramWithSource");
    }
    char opts[2048];
    snprintf(opts, sizeof opts, "-cl-std=%s%s %s", b->cl_std,
             b->info.no_device_launch[0] == '\0' ? " -DGRAIN_DEVICE_LAUNCH=1" : "", options ? options : "");
    prog->key = grain_turn_key(GRAIN_TURN_KEY_START, b->info.device_name, strlen(b->info.device_name));
    prog->key = grain_turn_key(prog->key, opts, strlen(opts));
    prog->key = grain_turn_key(prog->key, source, strlen(source));
    grain_turn_t turn;
    grain_turn_take(&turn, prog->key);
    err = clBuildProgram(prog->program, 1, &b->device, opts, NULL, NULL);
    /* PoCL's kernel cache races when processes build the same program at
     * once (pocl/pocl#1480): a rank's build fails with no diagnostics while
     * the others' succeed.  Turns keep grain's processes apart where the
     * lock file opens; otherwise one more build, once the entry is written,
     * passes; a real error fails again the same way. */
    if (err == CL_BUILD_PROGRAM_FAILURE)
        err = clBuildProgram(prog->program, 1, &b->device, opts, NULL, NULL);
    grain_turn_give(&turn);
    if (err != CL_SUCCESS) {
        size_t n = 0;
        clGetProgramBuildInfo(prog->program, b->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
        char *log = malloc(n + 1);
        if (log != NULL) {
            clGetProgramBuildInfo(prog->program, b->device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
            log[n] = '\0';
        }
        grain_status_t st = grain_fail(GRAIN_ERR_BUILD, "opencl: the kernel did not build (%s, options %s):\n%s",
                                       cl_error_name(err), opts, log ? log : "(no build log)");
        free(log);
        clReleaseProgram(prog->program);
        free(prog);
        return st;
    }
    *program_p = prog;
    return GRAIN_OK;
}

static void ocl_program_release(grain_bprogram_t *prog)
{
    clReleaseProgram(prog->program);
    free(prog);
}

static grain_status_t ocl_kernel_create(grain_bprogram_t *prog, const char *name,
                                        grain_bkernel_t **kernel_p)
{
    grain_bkernel_t *k = calloc(1, sizeof *k);
    if (k == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "opencl: no memory for a kernel");
    cl_int err;
    k->backend = prog->backend;
    k->key = grain_turn_key(prog->key, name, strlen(name));
    k->kernel = clCreateKernel(prog->program, name, &err);
    if (err != CL_SUCCESS) {
        free(k);
        if (err == CL_INVALID_KERNEL_NAME)
            return grain_fail(GRAIN_ERR_INVALID, "opencl: the program has no kernel named \"%s\"", name);
        return CL_FAIL(err, "clCreateKernel");
    }
    *kernel_p = k;
    return GRAIN_OK;
}

static void ocl_kernel_release(grain_bkernel_t *k)
{
    clReleaseKernel(k->kernel);
    free(k);
}

static grain_status_t ocl_kernel_set_arg(grain_bkernel_t *k, unsigned index, size_t size,
                                         const void *value)
{
    cl_int err = clSetKernelArg(k->kernel, index, size, value);
    if (err != CL_SUCCESS)
        return grain_fail(GRAIN_ERR_INVALID, "opencl: setting kernel argument %u (%zu bytes): %s",
                          index, size, cl_error_name(err));
    return GRAIN_OK;
}

static grain_status_t ocl_kernel_set_arg_ptr(grain_bkernel_t *k, unsigned index, void *ptr)
{
    cl_int err = clSetKernelArgSVMPointer(k->kernel, index, ptr);
    if (err != CL_SUCCESS)
        return grain_fail(GRAIN_ERR_INVALID, "opencl: setting kernel argument %u to pointer %p: %s",
                          index, ptr, cl_error_name(err));
    return GRAIN_OK;
}

/* Whether this is the kernel's first launch at work-group size `shape`
 * (zeros: the implementation's choice), which it then remembers, while it
 * has room. */
static int new_shape(grain_bkernel_t *k, const size_t shape[3])
{
    grain_backend_t *b = k->backend;
    pthread_mutex_lock(&b->lock);
    int seen = 0;
    for (unsigned i = 0; i < k->n_shapes && !seen; i++)
        seen = memcmp(k->shapes[i], shape, sizeof k->shapes[i]) == 0;
    int remembered = !seen && k->n_shapes < OCL_SHAPES;
    if (remembered)
        memcpy(k->shapes[k->n_shapes++], shape, sizeof k->shapes[0]);
    pthread_mutex_unlock(&b->lock);
    return remembered;
}

/* How long a first launch keeps its turn (services/turns.h).  PoCL compiles a
 * kernel for a work-group size once the launch is ready to run
 * (CL_SUBMITTED) and sets it running when the compile is done, so the turn
 * lasts while the launch is submitted, up to a compile's worst time.  A
 * launch still queued behind earlier commands keeps it only briefly: those
 * may wait for other ranks, which may be waiting for this turn. */
#define OCL_TURN_QUEUED_NS 250000000ull
#define OCL_TURN_SUBMITTED_NS 60000000000ull

static void wait_compiled(cl_event event)
{
    uint64_t start = grain_now_ns();
    for (;;) {
        cl_int status;
        if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) != CL_SUCCESS)
            return;
        uint64_t waited = grain_now_ns() - start;
        if (status == CL_QUEUED ? waited >= OCL_TURN_QUEUED_NS
                                : status != CL_SUBMITTED || waited >= OCL_TURN_SUBMITTED_NS)
            return;
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
}

static grain_status_t enqueue(grain_bkernel_t *k, cl_command_queue queue, unsigned dims,
                              const size_t *global, const size_t *local, cl_event *event)
{
    grain_backend_t *b = k->backend;
    pthread_mutex_lock(&b->lock);
    cl_int err = clSetKernelExecInfo(k->kernel, CL_KERNEL_EXEC_INFO_SVM_PTRS, b->n_svm * sizeof(void *),
                                     b->svm);
    pthread_mutex_unlock(&b->lock);
    if (err != CL_SUCCESS)
        return CL_FAIL(err, "clSetKernelExecInfo(CL_KERNEL_EXEC_INFO_SVM_PTRS)");
    /* The ranks of a node take turns at compiles (services/turns.h): at a
     * program's build, and on a CPU device at a kernel's first launch at
     * each work-group size, where PoCL compiles it again.  Otherwise every
     * rank compiles the same kernel at once, on the cores the kernels need:
     * pagerank on 3 ranks of a 2-core machine, PoCL's cache empty, under
     * AddressSanitizer, took 192 s against 20 s for one rank; 154 s with
     * turns, and 31 s with the longer naps of a CPU device's idle threads
     * too (services/backoff.h). */
    size_t shape[3] = {0, 0, 0};
    for (unsigned d = 0; local != NULL && d < dims; d++)
        shape[d] = local[d];
    int turn_taken = b->info.cpu_device && new_shape(k, shape);
    grain_turn_t turn;
    cl_event mine = NULL;
    if (turn_taken) {
        grain_turn_take(&turn, grain_turn_key(k->key, shape, sizeof shape));
        if (event == NULL)
            event = &mine;
    }
    err = clEnqueueNDRangeKernel(queue, k->kernel, dims, NULL, global, local, 0, NULL, event);
    const char *call = "clEnqueueNDRangeKernel";
    /* Start it now: the host threads drain its queue while it runs. */
    if (err == CL_SUCCESS) {
        err = clFlush(queue);
        call = "clFlush";
    }
    if (turn_taken) {
        if (err == CL_SUCCESS)
            wait_compiled(*event);
        grain_turn_give(&turn);
        if (mine != NULL)
            clReleaseEvent(mine);
    }
    return err == CL_SUCCESS ? GRAIN_OK : CL_FAIL(err, call);
}

static grain_status_t ocl_launch(grain_bkernel_t *k, unsigned dims, const size_t *global,
                                 const size_t *local)
{
    grain_backend_t *b = k->backend;
    cl_event event;
    grain_status_t st = enqueue(k, b->queue, dims, global, local, &event);
    if (st != GRAIN_OK)
        return st;
    pthread_mutex_lock(&b->lock);
    if (b->last_launch != NULL)
        clReleaseEvent(b->last_launch);
    b->last_launch = event;
    pthread_mutex_unlock(&b->lock);
    return GRAIN_OK;
}

/* The queue is in order: its newest kernel runs last. */
static int ocl_busy(grain_backend_t *b)
{
    cl_int status = CL_COMPLETE;
    pthread_mutex_lock(&b->lock);
    if (b->last_launch != NULL &&
        clGetEventInfo(b->last_launch, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) !=
            CL_SUCCESS)
        status = CL_COMPLETE;
    pthread_mutex_unlock(&b->lock);
    return status > CL_COMPLETE;
}

static grain_status_t ocl_launch_side(grain_bkernel_t *k, size_t global, size_t local, uint64_t *n_p)
{
    grain_backend_t *b = k->backend;
    cl_event event;
    grain_status_t st = enqueue(k, b->side, 1, &global, &local, &event);
    if (st != GRAIN_OK)
        return st;
    *n_p = marks_add(&b->side_marks, event);
    return GRAIN_OK;
}

/* A failed launch counts as finished; side_synchronize reports it. */
static int ocl_side_done(grain_backend_t *b, uint64_t n)
{
    return marks_status(&b->side_marks, n) <= CL_COMPLETE;
}

static grain_status_t ocl_side_synchronize(grain_backend_t *b)
{
    cl_int err = clFinish(b->side);
    if (err != CL_SUCCESS)
        return CL_FAIL(err, "clFinish of the apply queue");
    return GRAIN_OK;
}

/* The lane's queue, made on its first use. */
static grain_status_t lane_queue(grain_backend_t *b, unsigned lane, cl_command_queue *queue_p)
{
    cl_int err = CL_SUCCESS;
    pthread_mutex_lock(&b->lanes_lock);
    if (b->lanes[lane].queue == NULL)
        b->lanes[lane].queue = clCreateCommandQueueWithProperties(b->context, b->device, NULL, &err);
    *queue_p = b->lanes[lane].queue;
    pthread_mutex_unlock(&b->lanes_lock);
    return err == CL_SUCCESS ? GRAIN_OK : CL_FAIL(err, "clCreateCommandQueueWithProperties of a transfer lane");
}

/* The device's own copy, in order with the lane's kernels, though the
 * host could reach both sides (fine-grained SVM): an endpoint's or the
 * scheduler's copy must wait for the kernel before it on its stream. */
static grain_status_t ocl_copy_async(grain_backend_t *b, unsigned lane, void *dst, const void *src, size_t size)
{
    cl_command_queue queue;
    grain_status_t st = lane_queue(b, lane, &queue);
    if (st != GRAIN_OK || size == 0) /* nothing to copy; the lane is made for the marks that follow */
        return st;
    cl_int err = clEnqueueSVMMemcpy(queue, CL_FALSE, dst, src, size, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFlush(queue);
    return err == CL_SUCCESS ? GRAIN_OK : CL_FAIL(err, "clEnqueueSVMMemcpy on a transfer lane");
}

/* OpenCL copies rectangles only between buffers and host memory, and SVM
 * memory is neither, so a rectangle is a copy per row: the tiled BLAS's
 * tiles are a row per column. */
static grain_status_t ocl_copy_rect_async(grain_backend_t *b, unsigned lane, void *dst, size_t dpitch,
                                          const void *src, size_t spitch, size_t width, size_t rows)
{
    cl_command_queue queue;
    grain_status_t st = lane_queue(b, lane, &queue);
    if (st != GRAIN_OK || width == 0)
        return st;
    if (dpitch == width && spitch == width) {
        width *= rows;
        rows = 1;
    }
    cl_int err = CL_SUCCESS;
    for (size_t r = 0; r < rows && err == CL_SUCCESS; r++)
        err = clEnqueueSVMMemcpy(queue, CL_FALSE, (char *)dst + r * dpitch, (const char *)src + r * spitch, width, 0,
                                 NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFlush(queue);
    return err == CL_SUCCESS ? GRAIN_OK : CL_FAIL(err, "clEnqueueSVMMemcpy of a rectangle on a transfer lane");
}

/* A barrier on the lane's queue, after the event of mark n on lane `on`
 * (retained under the lock: a mark may replace it in its slot). */
static grain_status_t ocl_lane_wait(grain_backend_t *b, unsigned lane, unsigned on, uint64_t n)
{
    cl_command_queue queue;
    grain_status_t st = lane_queue(b, lane, &queue);
    if (st != GRAIN_OK || n == 0)
        return st;
    pthread_mutex_lock(&b->lanes_lock);
    cl_event event = b->lanes[on].marks.events[n % MARK_EVENTS];
    if (event != NULL)
        clRetainEvent(event);
    pthread_mutex_unlock(&b->lanes_lock);
    if (event == NULL)
        return GRAIN_OK;
    cl_int err = clEnqueueBarrierWithWaitList(queue, 1, &event, NULL);
    clReleaseEvent(event);
    return err == CL_SUCCESS ? GRAIN_OK : CL_FAIL(err, "clEnqueueBarrierWithWaitList of a lane waiting for another");
}

static grain_status_t ocl_launch_lane(grain_bkernel_t *k, unsigned lane, unsigned dims, const size_t *global,
                                      const size_t *local)
{
    cl_command_queue queue;
    grain_status_t st = lane_queue(k->backend, lane, &queue);
    return st == GRAIN_OK ? enqueue(k, queue, dims, global, local, NULL) : st;
}

static grain_status_t ocl_copy_mark(grain_backend_t *b, unsigned lane, uint64_t *n_p)
{
    ocl_lane_t *l = &b->lanes[lane];
    cl_int err = CL_SUCCESS;
    cl_event event;
    pthread_mutex_lock(&b->lanes_lock);
    *n_p = 0; /* no copy yet: nothing to wait for */
    if (l->queue != NULL && (err = clEnqueueMarkerWithWaitList(l->queue, 0, NULL, &event)) == CL_SUCCESS) {
        *n_p = marks_add(&l->marks, event);
        err = clFlush(l->queue);
    }
    pthread_mutex_unlock(&b->lanes_lock);
    return err == CL_SUCCESS ? GRAIN_OK : CL_FAIL(err, "marking a transfer lane");
}

static int ocl_copy_done(grain_backend_t *b, unsigned lane, uint64_t n)
{
    if (n == 0)
        return 1;
    pthread_mutex_lock(&b->lanes_lock); /* a mark may replace the event meanwhile */
    cl_int status = marks_status(&b->lanes[lane].marks, n);
    pthread_mutex_unlock(&b->lanes_lock);
    return status < 0 ? -1 : status == CL_COMPLETE;
}

static grain_status_t ocl_copy_wait(grain_backend_t *b, unsigned lane)
{
    pthread_mutex_lock(&b->lanes_lock);
    cl_command_queue queue = b->lanes[lane].queue;
    pthread_mutex_unlock(&b->lanes_lock);
    cl_int err = queue != NULL ? clFinish(queue) : CL_SUCCESS;
    return err == CL_SUCCESS ? GRAIN_OK : CL_FAIL(err, "clFinish of a transfer lane");
}

/* Fine-grained SVM of any context is memory the host addresses, and a CPU
 * device's queue copies as the host does; a GPU's may not reach another
 * context's allocations. */
static grain_status_t ocl_reach_peer(grain_backend_t *b, grain_backend_t *peer)
{
    if (b->info.cpu_device && peer->info.cpu_device)
        return GRAIN_OK;
    return grain_fail(GRAIN_ERR_UNSUPPORTED, "opencl: \"%.160s\" and \"%.160s\" are not both CPU devices, whose queues "
                                             "copy any memory of the process", b->info.device_name,
                      peer->info.device_name);
}

static grain_status_t ocl_synchronize(grain_backend_t *b)
{
    cl_int err = clFinish(b->queue);
    if (err != CL_SUCCESS)
        return CL_FAIL(err, "clFinish");
    return GRAIN_OK;
}

/*
 * The default device queue, which the producers' enqueue_kernel takes.
 * Its size is in bytes of the implementation's own records, not launches,
 * so `pending` cannot size it: it gets the device's largest, and a copy
 * that finds it full is refused on the device and made by the host.
 */
static grain_status_t ocl_reserve_launches(grain_backend_t *b, size_t pending)
{
    (void)pending;
    if (b->on_device != NULL)
        return GRAIN_OK;
    cl_uint bytes = 0;
    clGetDeviceInfo(b->device, CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE, sizeof bytes, &bytes, NULL);
    cl_queue_properties props[] = {
        CL_QUEUE_PROPERTIES,
        CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_ON_DEVICE | CL_QUEUE_ON_DEVICE_DEFAULT,
        bytes != 0 ? CL_QUEUE_SIZE : 0, bytes, 0};
    cl_int err;
    b->on_device = clCreateCommandQueueWithProperties(b->context, b->device, props, &err);
    if (err != CL_SUCCESS) {
        b->on_device = NULL;
        return CL_FAIL(err, "clCreateCommandQueueWithProperties of the default device queue (the launch agent's)");
    }
    return GRAIN_OK;
}

#ifdef GRAIN_HAVE_CLBLAST
/* A buffer over `bytes` of the SVM memory at p (OpenCL 2.0: a buffer made
 * with CL_MEM_USE_HOST_PTR from SVM memory uses it), which CLBlast takes;
 * the command that uses it keeps it while it runs. */
static cl_mem svm_buffer(grain_backend_t *b, const void *p, size_t bytes, cl_int *err)
{
    return clCreateBuffer(b->context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, (void *)p, err);
}

static grain_status_t ocl_gemm_tile(grain_backend_t *b, unsigned lane, size_t es, int ta, int tb, size_t m, size_t n,
                                    size_t k, const void *alpha, const void *a, size_t lda, const void *bm, size_t ldb,
                                    const void *beta, void *c, size_t ldc)
{
    cl_command_queue queue;
    grain_status_t st = lane_queue(b, lane, &queue);
    if (st != GRAIN_OK)
        return st;
    size_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
    cl_int err[3] = {CL_SUCCESS, CL_SUCCESS, CL_SUCCESS};
    cl_mem ba = svm_buffer(b, a, ((a_cols - 1) * lda + a_rows) * es, &err[0]);
    cl_mem bb = svm_buffer(b, bm, ((b_cols - 1) * ldb + b_rows) * es, &err[1]);
    cl_mem bc = svm_buffer(b, c, ((n - 1) * ldc + m) * es, &err[2]);
    CLBlastTranspose oa = ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose ob = tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode code = CLBlastSuccess;
    cl_event event = NULL;
    if (err[0] == CL_SUCCESS && err[1] == CL_SUCCESS && err[2] == CL_SUCCESS)
        code = es == 8 ? CLBlastDgemm(CLBlastLayoutColMajor, oa, ob, m, n, k, *(const double *)alpha, ba, 0, lda, bb, 0,
                                      ldb, *(const double *)beta, bc, 0, ldc, &queue, &event)
                       : CLBlastSgemm(CLBlastLayoutColMajor, oa, ob, m, n, k, *(const float *)alpha, ba, 0, lda, bb, 0,
                                      ldb, *(const float *)beta, bc, 0, ldc, &queue, &event);
    for (int i = 0; i < 3; i++) {
        cl_mem buf = i == 0 ? ba : i == 1 ? bb : bc;
        if (buf != NULL)
            clReleaseMemObject(buf);
    }
    if (err[0] != CL_SUCCESS || err[1] != CL_SUCCESS || err[2] != CL_SUCCESS)
        return grain_fail(GRAIN_ERR_BACKEND, "opencl: clCreateBuffer over SVM memory for CLBlast failed: %s",
                          cl_error_name(err[0] != CL_SUCCESS ? err[0] : err[1] != CL_SUCCESS ? err[1] : err[2]));
    if (code != CLBlastSuccess)
        return grain_fail(GRAIN_ERR_BACKEND, "opencl: CLBlast %cgemm of %zu x %zu x %zu failed (status %d)",
                          es == 8 ? 'd' : 's', m, n, k, (int)code);
    if (event != NULL)
        clReleaseEvent(event); /* the lane's marks count it */
    return clFlush(queue) == CL_SUCCESS ? GRAIN_OK : grain_fail(GRAIN_ERR_BACKEND, "opencl: clFlush after CLBlast");
}
#endif

const grain_backend_ops_t grain_opencl_ops = {
    .size = sizeof(grain_backend_ops_t),
    .name = "opencl",
    .open = ocl_open,
    .close = ocl_close,
    .query = ocl_query,
    .select_device = ocl_select_device,
    .alloc_shared = ocl_alloc_shared,
    .free_shared = ocl_free_shared,
    /* fine-grained SVM is what this backend requires, so kernels' private
     * state may live there as well */
    .alloc_device = ocl_alloc_shared,
    .free_device = ocl_free_shared,
    .alloc_heap = ocl_alloc_shared,
    .free_heap = ocl_free_shared,
    .copy = ocl_copy,
    .zero = ocl_zero,
    .program_build = ocl_program_build,
    .program_release = ocl_program_release,
    .kernel_create = ocl_kernel_create,
    .kernel_release = ocl_kernel_release,
    .kernel_set_arg = ocl_kernel_set_arg,
    .kernel_set_arg_ptr = ocl_kernel_set_arg_ptr,
    .launch = ocl_launch,
    .synchronize = ocl_synchronize,
    .busy = ocl_busy,
    .launch_side = ocl_launch_side,
    .side_done = ocl_side_done,
    .side_synchronize = ocl_side_synchronize,
    .copy_async = ocl_copy_async,
    .launch_lane = ocl_launch_lane,
    .copy_wait = ocl_copy_wait,
    .copy_mark = ocl_copy_mark,
    .copy_done = ocl_copy_done,
    .copy_rect_async = ocl_copy_rect_async,
    .lane_wait = ocl_lane_wait,
    .reach_peer = ocl_reach_peer,
    .alloc_peer = ocl_alloc_peer,
    .free_peer = ocl_free_peer,
    .map_peer = ocl_map_peer,
    .unmap_peer = ocl_free_peer,
    .seal_peer = ocl_seal_peer,
    .reserve_launches = ocl_reserve_launches,
#ifdef GRAIN_HAVE_CLBLAST
    .gemm_tile = ocl_gemm_tile,
#endif
};
