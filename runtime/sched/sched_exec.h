/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The task scheduler's executor (include/grain/sched.h, docs/scheduler.md):
 * what a scheduler, an array, an element and a scheduler kernel hold, and
 * how the files of runtime/sched/ share them.
 *
 * Locations are numbered as sched_place.h numbers them: 0 the host, 1 + d
 * device d.  Every element (a kernel launch, a host access, a prefetch) is
 * placed and its coherence settled when it is added: its location, its
 * stream, the copies it makes (each from a location valid at that time) and
 * the elements it waits for, which are its parents in the graph and the
 * elements whose copies made valid the copies it reads.  It is submitted
 * once every one of those is done or runs earlier on its own stream (a
 * stream keeps its order), and done once its stream's mark after it is.
 * An element done implies every element before it in the graph is done,
 * which is what lets a copy overwrite a stale copy at once.
 */
#ifndef GRAIN_RUNTIME_SCHED_SCHED_EXEC_H
#define GRAIN_RUNTIME_SCHED_SCHED_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "grain/blas.h"
#include "grain/sched.h"
#include "runtime/sched/sched_dag.h"
#include "runtime/sched/sched_place.h"
#include "services/config.h"

#define SCHED_NONE UINT32_MAX
#define SCHED_ARGS 32u
#define SCHED_ARG_BYTES 64u
/* Streams a device gives the scheduler: its backend's lanes, all of them
 * the scheduler's (the backend is its own). */
#define SCHED_STREAMS GRAIN_COPY_LANES
/* The lane a device copies arrays down to the host on, beside its streams
 * (the scheduler's backends are its own: no receiving thread uses it). */
#define SCHED_HOST_LANE GRAIN_RECV_LANE

typedef struct sched_stream {
    uint32_t placed; /* elements placed on it and not done */
    int used;        /* ran anything */
} sched_stream_t;

typedef struct sched_device {
    unsigned node_index; /* among the backend's devices on this node */
    grain_backend_t *backend;
    grain_backend_info_t info;
    /* Lanes where the backend launches kernels on them (all of grain's);
     * else one stream, the device's own queue, where copies are
     * synchronous and the queue's being idle says its kernels are done. */
    int lanes;
    unsigned streams;
    sched_stream_t stream[SCHED_STREAMS];
    int blas_told; /* the info log said who runs its gemm elements */
    /* Without lanes: elements submitted (their marks), those the idle
     * queue finished and its status then. */
    uint64_t submitted, finished;
    grain_status_t status;
    char why[256];
} sched_device_t;

typedef struct sched_argval {
    size_t size; /* 0: never set */
    grain_array_t *array;
    unsigned access;
    unsigned char value[SCHED_ARG_BYTES];
} sched_argval_t;

typedef struct sched_program {
    struct sched_program *next; /* in its scheduler's list */
    grain_sched_t *sched;       /* NULL once the scheduler is gone */
    grain_bprogram_t **per_device;
    struct sched_kernel *kernels;
    unsigned refs; /* the application's and its kernels' */
} sched_program_t;

typedef struct sched_kernel {
    struct sched_kernel *next; /* in its program's list */
    sched_program_t *program;
    grain_bkernel_t **per_device;
    char name[128]; /* its own: a kernel may outlive its scheduler */
    const char *interned; /* the scheduler's copy, which its elements name (launches need a scheduler) */
    unsigned refs;  /* the application's and its launches not yet done */
    unsigned n_args;
    sched_argval_t args[SCHED_ARGS];
    size_t gemm_es; /* a BLAS element's gemm kernel (sched_blas.c): the bytes of its elements; else 0 */
} sched_kernel_t;

enum { ELEM_KERNEL, ELEM_HOST, ELEM_PREFETCH, ELEM_ADVICE };
enum { ELEM_PLACED, ELEM_SUBMITTED, ELEM_DONE };

typedef struct sched_copy {
    grain_array_t *array;
    unsigned from; /* a location; from a device to a device: through the host */
} sched_copy_t;

typedef struct sched_elem {
    int kind, state, failed;
    unsigned location, stream;
    unsigned down_from; /* a host element whose copy runs on this device's SCHED_HOST_LANE, else 0 */
    int stream_taken; /* a child took its stream */
    uint64_t mark;
    uint64_t bytes_in;
    uint64_t placed_tick, done_tick; /* the scheduler's clock: adds and finishes */
    const char *name; /* interned by the scheduler */
    uint32_t *waits; /* parents first, then the elements whose copies it reads */
    size_t n_parents, n_waits;
    sched_copy_t *copies;
    size_t n_copies;
    grain_array_t *array; /* a host access's, a prefetch's or an advice's */
    int advice, advice_set; /* an advice's (grain_array_advise), for location advice_at */
    unsigned advice_at;
    sched_kernel_t *kernel; /* a launch's, held until done */
    unsigned dims;
    size_t global[3], local[3];
    int has_local;
    sched_argval_t *args;
    unsigned n_args;
} sched_elem_t;

struct grain_array {
    struct grain_array *next, **prev; /* in its scheduler's list */
    grain_sched_t *sched;
    uint32_t id; /* the graph's index */
    size_t bytes;
    unsigned char *host;  /* its host copy, or under managed memory the one allocation */
    int host_pinned;
    void **replica;       /* per location, [0] unused: the device's copy, allocated at first use (none if managed) */
    sched_where_t where;  /* where the copy is valid, as of the elements placed so far */
    uint32_t *producer;   /* per location: the element whose submission makes it valid there */
    uint32_t users;       /* elements placed and not done that use it */
};

typedef struct sched_name {
    struct sched_name *next;
    char text[];
} sched_name_t;

struct grain_sched {
    grain_t *grain;
    grain_policy_t policy;
    grain_sched_mode_t mode;
    /* GRAIN_SCHED_MEMORY=managed: an array is one allocation of managed
     * memory, `host` its address everywhere, and a copy migrates it. */
    int managed;
    double threshold;
    const grain_backend_ops_t *bops;
    unsigned n_dev;
    sched_device_t *dev;
    sched_dag_t *dag;
    sched_elem_t *elems;
    size_t n_elems, cap_elems;
    uint32_t *live; /* the elements not done, in the order added */
    size_t n_live, cap_live;
    unsigned next_rr;
    uint64_t tick;
    double *bw; /* (n_dev + 1)^2 bytes a second, NULL until measured */
    /* n_dev^2: [from * n_dev + to] whether device to's lanes copy straight
     * from device from (backend reach_peer); else through the host. */
    unsigned char *peer;
    grain_array_t *arrays;
    uint32_t n_array_ids;
    sched_program_t *programs;
    /* The BLAS elements' kernels (sched_blas.c), built at their first call. */
    grain_program_t *blas_program;
    grain_kernel_t *blas_kernel[GRAIN_BLAS_SAXPY + 1]; /* by grain_blas_routine_t */
    sched_name_t *names;
    grain_status_t status; /* the first failure since the last wait */
    char why[512];
    unsigned failures;
    grain_sched_stats_t stats;
};

static inline sched_device_t *sched_device_at(grain_sched_t *s, unsigned location)
{
    return &s->dev[location - 1];
}

/* Whether a copy from location `from` to `to`, both devices, goes straight. */
static inline int sched_peer(const grain_sched_t *s, unsigned from, unsigned to)
{
    return from != 0 && to != 0 && s->peer[(from - 1) * s->n_dev + (to - 1)];
}

/* Whether a copy from location `from` down to the host runs on that
 * device's SCHED_HOST_LANE (its element then done with the lane's mark),
 * rather than at once. */
static inline int sched_down_on_lane(const grain_sched_t *s, unsigned from, unsigned to)
{
    return from != 0 && to == 0 && s->dev[from - 1].lanes;
}

/* Frees the BLAS elements' kernels and program, once none runs. */
void sched_blas_release(grain_sched_t *s);
/* A gemm element given to its device's vendor BLAS, where it has one that
 * may run it (*ran_p then 1); else left to grain's kernel. */
grain_status_t sched_blas_vendor(grain_sched_t *s, sched_elem_t *el, int *ran_p);

/* Counts `n` of `what` (GRAIN_SCHED_*, grain_impl.h) in the scheduler's own
 * statistics and in its rank's (grain_stats_json's "sched"). */
void sched_count(grain_sched_t *s, unsigned what, uint64_t n, unsigned device);

/* sched_exec.c: an element added with `args` (arrays by the graph's index,
 * and their accesses; `arrays` the same arrays), placed and given its
 * copies and waits; then run as the mode says.  `proto` gives its kind,
 * a prefetch's location, and a launch's kernel (held) and arguments
 * (allocated), which the element owns from then on, failure or not. */
grain_status_t sched_add(grain_sched_t *s, sched_elem_t *proto, const sched_arg_t *args, size_t n_args,
                         grain_array_t *const *arrays, uint32_t *index_p);
/* Submits what can be and notes what finished; returns how many are not done. */
size_t sched_progress(grain_sched_t *s);
/* Progresses until element `e` is done (SCHED_NONE: every element). */
void sched_wait_for(grain_sched_t *s, uint32_t e);
/* Frees what a done element holds beyond what the export needs. */
void sched_elem_release(grain_sched_t *s, sched_elem_t *el);

/* sched_array.c: copies between locations, synchronous (the caller knows
 * the source is final) except into a device with lanes, which goes on
 * `stream` of that device; the replica at `location`, allocated if need be.
 * Under managed memory a copy is a prefetch on the same lane, and every
 * location's replica is the one allocation. */
grain_status_t sched_copy(grain_sched_t *s, grain_array_t *a, unsigned from, unsigned to, unsigned stream);
grain_status_t sched_replica(grain_sched_t *s, grain_array_t *a, unsigned location, void **ptr_p);
/* An advice element's effect, once the elements it follows are done. */
grain_status_t sched_advise(grain_sched_t *s, const sched_elem_t *el);
/* Zeroed host memory for an array's host copy, pinned where the devices
 * copy on lanes (*pinned_p says which); NULL without memory. */
void *sched_host_alloc(grain_sched_t *s, size_t bytes, int *pinned_p);
void sched_host_free(grain_sched_t *s, void *p, int pinned);
void sched_arrays_free(grain_sched_t *s);

/* sched_kernel.c: a kernel held and let go; the programs' device builds
 * let go when the scheduler goes (their shells live on until destroyed). */
void sched_kernel_hold(sched_kernel_t *k);
void sched_kernel_let_go(sched_kernel_t *k);
void sched_programs_orphan(grain_sched_t *s);
/* The scheduler's copy of `name`, kept while it lives. */
const char *sched_intern(grain_sched_t *s, const char *name);

/* sched_bandwidth.c: s->bw measured (host to and from each device, device
 * to device through the host as the copies go); from the profile unless
 * `measure`, else measured and kept there. */
grain_status_t sched_measure_bandwidth(grain_sched_t *s);
grain_status_t sched_load_bandwidth(grain_sched_t *s, int measure);

/* program.c's side: a scheduler program or kernel behind grain_program_t
 * and grain_kernel_t. */
sched_program_t *grain_program_sched(const grain_program_t *p);
sched_kernel_t *grain_kernel_sched(const grain_kernel_t *k);
grain_status_t grain_program_wrap_sched(sched_program_t *sp, grain_program_t **program_p);
grain_status_t sched_kernel_create(sched_program_t *sp, const char *name, sched_kernel_t **k_p);
grain_status_t sched_kernel_set_arg(sched_kernel_t *k, unsigned index, size_t size, const void *value);
void sched_program_release(sched_program_t *sp);

#endif
