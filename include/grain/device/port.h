/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Portability layer for grain device code.
 *
 * Every device source of grain (the device API, the apps' kernels and their
 * active-message handlers) is written once in the dialect this header defines
 * and compiled at run time as OpenCL C (OpenCL backend) or as CUDA or HIP C++
 * (NVRTC, hiprtc), or as host C11 where the host applies messages itself and
 * in unit tests.
 *
 * Pointer arguments carry an explicit address space because OpenCL C without
 * the generic address space (PoCL 3.1) needs it: GRAIN_GLOBAL and GRAIN_LOCAL
 * qualify pointers, GRAIN_LOCAL_DECL declares a work-group-shared array.
 * Device functions take structs by pointer, never by value: PoCL 3.1 lost
 * stores made after a by-value struct argument in a kernel whose sends sit
 * in several branches between barriers (tests/device, send_bad).
 */
#ifndef GRAIN_DEVICE_PORT_H
#define GRAIN_DEVICE_PORT_H

/*
 * Where other devices of the node map this rank's heap (the direct path),
 * the runtime builds programs with GRAIN_HEAP_SCOPE_SYSTEM=1: a scoped
 * atomic is atomic only against those whose scope includes it, so the
 * heap's atomics then have system scope on every side, the owner's too.
 * Ranks that share one device (or a CPU device) keep device scope.
 */
#ifndef GRAIN_HEAP_SCOPE_SYSTEM
#define GRAIN_HEAP_SCOPE_SYSTEM 0
#endif

#if defined(__OPENCL_C_VERSION__) || defined(__OPENCL_VERSION__)
#define GRAIN_DIALECT_OPENCL 1
#elif defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(__HIPCC__) || defined(__HIPCC_RTC__)
#define GRAIN_DIALECT_GPU 1 /* CUDA and HIP: one C++ dialect */
#else
#define GRAIN_DIALECT_HOST 1
#endif

/* ------------------------------------------------------------------------ */
#if defined(GRAIN_DIALECT_OPENCL)

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

typedef ulong grain_u64;
typedef long grain_i64;
typedef uint grain_u32;
typedef int grain_i32;

#define GRAIN_GLOBAL __global
#define GRAIN_LOCAL __local
#define GRAIN_LOCAL_DECL __local
#define GRAIN_KERNEL __kernel
#define GRAIN_INLINE static inline
#define GRAIN_DPTR(T) __global T *
#define GRAIN_RESTRICT restrict

/*
 * The host reads the queue concurrently with the kernel, so queue atomics need
 * a scope that includes the host.  PoCL 3.1 does not know
 * memory_scope_all_svm_devices; on a CPU device the device scope already
 * covers the host threads that consume the queue.
 */
#if defined(__opencl_c_atomic_scope_all_devices)
#define GRAIN_SCOPE_SYSTEM memory_scope_all_svm_devices
#else
#define GRAIN_SCOPE_SYSTEM memory_scope_device
#endif

#define GRAIN_A32(p) ((volatile __global atomic_uint *)(p))
#define GRAIN_A64(p) ((volatile __global atomic_ulong *)(p))

#define grain_atomic_load_acquire_u32(p) \
    atomic_load_explicit(GRAIN_A32(p), memory_order_acquire, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_load_relaxed_u32(p) \
    atomic_load_explicit(GRAIN_A32(p), memory_order_relaxed, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_store_release_u32(p, v) \
    atomic_store_explicit(GRAIN_A32(p), (uint)(v), memory_order_release, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_store_relaxed_u32(p, v) \
    atomic_store_explicit(GRAIN_A32(p), (uint)(v), memory_order_relaxed, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_cas_u32(p, expected_p, desired) \
    atomic_compare_exchange_strong_explicit(GRAIN_A32(p), (expected_p), (desired), \
        memory_order_acq_rel, memory_order_relaxed, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_fetch_add_u32(p, v) \
    atomic_fetch_add_explicit(GRAIN_A32(p), (uint)(v), memory_order_relaxed, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_fetch_add_u64(p, v) \
    atomic_fetch_add_explicit(GRAIN_A64(p), (ulong)(v), memory_order_relaxed, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_load_acquire_u64(p) \
    atomic_load_explicit(GRAIN_A64(p), memory_order_acquire, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_load_relaxed_u64(p) \
    atomic_load_explicit(GRAIN_A64(p), memory_order_relaxed, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_fetch_min_i64(p, v) \
    atomic_fetch_min_explicit((volatile __global atomic_long *)(p), (long)(v), \
        memory_order_relaxed, GRAIN_SCOPE_SYSTEM)
#define grain_atomic_fetch_max_i64(p, v) \
    atomic_fetch_max_explicit((volatile __global atomic_long *)(p), (long)(v), \
        memory_order_relaxed, GRAIN_SCOPE_SYSTEM)

/*
 * Chunk readiness (grain/device/chunks.h): a work-group's decrement of a
 * chunk counter releases its writes, and the one that takes it to zero
 * acquires the others' (the decrements form one release sequence); the
 * ready word it then stores releases them all to the transfer agent.  Only
 * that last one pays for the acquire: every work-group of a producer
 * counts down, one in hundreds finishes a chunk.
 */
GRAIN_INLINE uint grain_atomic_count_down_dev_u32(__global void *p)
{
    uint old = atomic_fetch_sub_explicit(GRAIN_A32(p), 1u, memory_order_release, memory_scope_device);
    if (old == 1u)
        atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acquire, memory_scope_device);
    return old;
}

/*
 * Device scope: words only kernels touch while they run (the rings' producer
 * state in device memory).  Acquire and release here order a work-group's
 * queue writes after the credit another work-group fetched from the host.
 */
#define grain_atomic_fetch_add_dev_u64(p, v) \
    atomic_fetch_add_explicit(GRAIN_A64(p), (ulong)(v), memory_order_relaxed, memory_scope_device)
#define grain_atomic_load_acquire_dev_u64(p) \
    atomic_load_explicit(GRAIN_A64(p), memory_order_acquire, memory_scope_device)
#define grain_atomic_load_relaxed_dev_u64(p) \
    atomic_load_explicit(GRAIN_A64(p), memory_order_relaxed, memory_scope_device)
#define grain_atomic_max_release_dev_u64(p, v) \
    atomic_fetch_max_explicit(GRAIN_A64(p), (ulong)(v), memory_order_release, memory_scope_device)
/* Chunks' ready words in device memory, which only this device's kernels
 * read (a chunk's last writer, the device agent). */
#define grain_atomic_load_acquire_dev_u32(p) \
    atomic_load_explicit(GRAIN_A32(p), memory_order_acquire, memory_scope_device)
#define grain_atomic_load_relaxed_dev_u32(p) \
    atomic_load_explicit(GRAIN_A32(p), memory_order_relaxed, memory_scope_device)
#define grain_atomic_store_release_dev_u32(p, v) \
    atomic_store_explicit(GRAIN_A32(p), (uint)(v), memory_order_release, memory_scope_device)
#define grain_atomic_store_release_dev_u64(p, v) \
    atomic_store_explicit(GRAIN_A64(p), (ulong)(v), memory_order_release, memory_scope_device)

/* The symmetric heap where kernels apply messages to it: relaxed (see
 * grain/device/apply.h), at the scope GRAIN_HEAP_SCOPE_SYSTEM says. */
#if GRAIN_HEAP_SCOPE_SYSTEM
#define GRAIN_HEAP_SCOPE GRAIN_SCOPE_SYSTEM
#else
#define GRAIN_HEAP_SCOPE memory_scope_device
#endif
#define grain_heap_store_u32(p, v) \
    atomic_store_explicit(GRAIN_A32(p), (uint)(v), memory_order_relaxed, GRAIN_HEAP_SCOPE)
#define grain_heap_store_u64(p, v) \
    atomic_store_explicit(GRAIN_A64(p), (ulong)(v), memory_order_relaxed, GRAIN_HEAP_SCOPE)
#define grain_heap_add_u32(p, v) \
    atomic_fetch_add_explicit(GRAIN_A32(p), (uint)(v), memory_order_relaxed, GRAIN_HEAP_SCOPE)
#define grain_heap_add_u64(p, v) \
    atomic_fetch_add_explicit(GRAIN_A64(p), (ulong)(v), memory_order_relaxed, GRAIN_HEAP_SCOPE)
/* For active-message handlers: min-updates (SSSP, connected components). */
#define grain_heap_fetch_min_i64(p, v) \
    atomic_fetch_min_explicit((volatile __global atomic_long *)(p), (long)(v), memory_order_relaxed, \
                              GRAIN_HEAP_SCOPE)
/* Orders this work-item's heap writes before its later ones for every
 * reader in the heap's scope (a signal after its data). */
#define grain_heap_fence_release() \
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, GRAIN_HEAP_SCOPE)
/* Claims of hash-table slots: the value seen, `expected` when it swapped. */
GRAIN_INLINE grain_u64 grain_heap_cas_u64(__global void *p, grain_u64 expected, grain_u64 desired)
{
    ulong seen = expected;
    atomic_compare_exchange_strong_explicit(GRAIN_A64(p), &seen, desired, memory_order_relaxed,
                                            memory_order_relaxed, GRAIN_HEAP_SCOPE);
    return seen;
}

GRAIN_INLINE grain_u32 grain_heap_cas_u32(__global void *p, grain_u32 expected, grain_u32 desired)
{
    uint seen = expected;
    atomic_compare_exchange_strong_explicit(GRAIN_A32(p), &seen, desired, memory_order_relaxed,
                                            memory_order_relaxed, GRAIN_HEAP_SCOPE);
    return seen;
}
/* Fetching atomics (grain_apply_amo*): `op` is exchange, fetch_add,
 * fetch_and, fetch_or or fetch_xor; the old value comes back. */
#define grain_heap_rmw_u32(op, p, v) \
    atomic_##op##_explicit(GRAIN_A32(p), (uint)(v), memory_order_relaxed, GRAIN_HEAP_SCOPE)
#define grain_heap_rmw_u64(op, p, v) \
    atomic_##op##_explicit(GRAIN_A64(p), (ulong)(v), memory_order_relaxed, GRAIN_HEAP_SCOPE)
#define grain_heap_load_u32(p) atomic_load_explicit(GRAIN_A32(p), memory_order_relaxed, GRAIN_HEAP_SCOPE)
#define grain_heap_load_u64(p) atomic_load_explicit(GRAIN_A64(p), memory_order_relaxed, GRAIN_HEAP_SCOPE)

/* A double's bits and back: a message word carries a double this way, and
 * the bits of non-negative doubles order as the numbers do, so an integer
 * min-update is a min-update of distances. */
#define grain_f64_bits(x) as_long((double)(x))
#define grain_bits_f64(b) as_double((long)(b))

/* Work-item ids flattened over all three dimensions. */
GRAIN_INLINE grain_u32 grain_local_linear_id(void)
{
    return (grain_u32)(get_local_id(2) * get_local_size(1) * get_local_size(0) +
                       get_local_id(1) * get_local_size(0) + get_local_id(0));
}

GRAIN_INLINE grain_u32 grain_local_linear_size(void)
{
    return (grain_u32)(get_local_size(0) * get_local_size(1) * get_local_size(2));
}

GRAIN_INLINE grain_u64 grain_global_linear_id(void)
{
    return (grain_u64)(get_global_id(2) - get_global_offset(2)) * get_global_size(1) *
               get_global_size(0) +
           (grain_u64)(get_global_id(1) - get_global_offset(1)) * get_global_size(0) +
           (grain_u64)(get_global_id(0) - get_global_offset(0));
}

GRAIN_INLINE grain_u64 grain_global_linear_size(void)
{
    return (grain_u64)get_global_size(0) * get_global_size(1) * get_global_size(2);
}

GRAIN_INLINE grain_u64 grain_group_linear_id(void)
{
    return ((grain_u64)get_group_id(2) * get_num_groups(1) + get_group_id(1)) * get_num_groups(0) +
           get_group_id(0);
}

GRAIN_INLINE grain_u64 grain_group_linear_count(void)
{
    return (grain_u64)get_num_groups(0) * get_num_groups(1) * get_num_groups(2);
}

/* Per dimension (0, 1 or 2), as OpenCL names them. */
#define grain_local_id(d) ((grain_u64)get_local_id(d))
#define grain_local_size(d) ((grain_u64)get_local_size(d))
#define grain_group_id(d) ((grain_u64)get_group_id(d))

/* One index of *counter per active lane (see the GPU dialect); OpenCL C
 * before 2.1 has no portable ballot, so each lane takes its own. */
GRAIN_INLINE grain_u32 grain_local_claim_u32(GRAIN_LOCAL grain_u32 *counter, int active, grain_u32 group)
{
    (void)group;
    return active ? atomic_fetch_add_explicit((volatile __local atomic_uint *)counter, 1u,
                                              memory_order_relaxed, memory_scope_work_group)
                  : 0u;
}

/* *p = min(*p, v) for the work-group's lanes. */
#define grain_local_min_u32(p, v) \
    ((void)atomic_fetch_min_explicit((volatile __local atomic_uint *)(p), (uint)(v), memory_order_relaxed, \
                                     memory_scope_work_group))

/* Compare-and-swap on a work-group word, returning the word it found. */
GRAIN_INLINE grain_u32 grain_local_cas_u32(GRAIN_LOCAL grain_u32 *p, grain_u32 expected, grain_u32 desired)
{
    atomic_compare_exchange_strong_explicit((volatile __local atomic_uint *)p, &expected, desired,
                                            memory_order_relaxed, memory_order_relaxed, memory_scope_work_group);
    return expected;
}

#define grain_local_add_i64(p, v) \
    ((void)atomic_fetch_add_explicit((volatile __local atomic_long *)(p), (long)(v), memory_order_relaxed, \
                                     memory_scope_work_group))

#define grain_wg_barrier() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
/*
 * Ends a work-group call whose last statements only some lanes run (the
 * publisher's store of a wide send, whose passes are a loop with barriers).
 * PoCL 3.1 put an implicit barrier at the start of the branch arm that led
 * to the next barrier it deemed conditional, and then took the branch as
 * uniform, decided by one work-item: the publisher's store was skipped when
 * the last work-item was not the publisher, and lanes waited for ever for
 * replies to requests never published.  A barrier here closes the branch
 * before any later one.  GPUs need none.
 */
#define grain_wg_rejoin() grain_wg_barrier()
#define grain_poll_nap() ((void)0)
#define grain_fence_release() \
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, GRAIN_SCOPE_SYSTEM)
#define grain_fence_acquire() \
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acquire, GRAIN_SCOPE_SYSTEM)
#define grain_fence_acquire_dev() \
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acquire, memory_scope_device)

/* ------------------------------------------------------------------------ */
#elif defined(GRAIN_DIALECT_GPU)

#if defined(__HIPCC__) && !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h> /* hiprtc and nvcc have their builtins without it */
#endif

typedef unsigned long long grain_u64;
typedef long long grain_i64;
typedef unsigned int grain_u32;
typedef int grain_i32;

#define GRAIN_GLOBAL
#define GRAIN_LOCAL
#define GRAIN_LOCAL_DECL __shared__
#define GRAIN_KERNEL extern "C" __global__
#define GRAIN_INLINE static __device__ inline
#define GRAIN_DPTR(T) T *
#define GRAIN_RESTRICT __restrict__

/*
 * The queue lives in pinned host memory that the host's threads read while
 * the kernel runs, so its atomics have system scope.  Acquire and release
 * are single instructions (PTX ld.acquire / st.release, HIP's scoped atomic
 * builtins), not a volatile access beside a full fence: a fence.sc after
 * every work-group send held the ring queue to 7 GB/s on an H200.  PTX
 * release is cumulative, so after a barrier the leader's release store
 * publishes the stores of the whole work-group.
 */
#define GRAIN_A32(p) ((volatile unsigned int *)(p))
#define GRAIN_A64(p) ((volatile unsigned long long *)(p))

/* Acquire and relaxed loads and release stores of `bits`-bit words at a
 * scope: sys (the host too) or dev (this device's kernels).  grain's own
 * polling loops load relaxed and fence once (grain_fence_acquire) when they
 * see what they wait for: an idle apply agent of 128 work-groups whose first
 * work-items polled with acquire loads, even with a nap between polls, held
 * one rank's GUPS beside it to 0.5 G updates a second on an H200, against
 * 16 G with relaxed polls and 16.6 G without the agent.  An application's
 * waits (grain/device/sync.h) still poll with acquire. */
#if defined(__HIPCC__) || defined(__HIPCC_RTC__)
#define GRAIN_HIP_SCOPE_sys __HIP_MEMORY_SCOPE_SYSTEM
#define GRAIN_HIP_SCOPE_dev __HIP_MEMORY_SCOPE_AGENT
#define GRAIN_HIP_ORDER_acquire __ATOMIC_ACQUIRE
#define GRAIN_HIP_ORDER_relaxed __ATOMIC_RELAXED
#define GRAIN_LOAD_(name, type, bits, order, scope)                                            \
    GRAIN_INLINE type name(GRAIN_GLOBAL void *p)                                                \
    {                                                                                           \
        return __hip_atomic_load((type *)p, GRAIN_HIP_ORDER_##order, GRAIN_HIP_SCOPE_##scope);  \
    }
#define GRAIN_STORE_RELEASE_(name, type, bits, scope)                                      \
    GRAIN_INLINE void name(GRAIN_GLOBAL void *p, type v)                                    \
    {                                                                                       \
        __hip_atomic_store((type *)p, v, __ATOMIC_RELEASE, GRAIN_HIP_SCOPE_##scope);        \
    }
#else
#define GRAIN_PTX_SCOPE_sys "sys"
#define GRAIN_PTX_SCOPE_dev "gpu"
#define GRAIN_PTX_REG_32 "r"
#define GRAIN_PTX_REG_64 "l"
#define GRAIN_LOAD_(name, type, bits, order, scope)                                              \
    GRAIN_INLINE type name(GRAIN_GLOBAL void *p)                                                  \
    {                                                                                             \
        type v;                                                                                   \
        asm volatile("ld." #order "." GRAIN_PTX_SCOPE_##scope ".global.u" #bits " %0, [%1];"      \
                     : "=" GRAIN_PTX_REG_##bits(v) : "l"(p) : "memory");                          \
        return v;                                                                                 \
    }
#define GRAIN_STORE_RELEASE_(name, type, bits, scope)                                      \
    GRAIN_INLINE void name(GRAIN_GLOBAL void *p, type v)                                    \
    {                                                                                       \
        asm volatile("st.release." GRAIN_PTX_SCOPE_##scope ".global.u" #bits " [%0], %1;"   \
                     : : "l"(p), GRAIN_PTX_REG_##bits(v) : "memory");                       \
    }
#endif
GRAIN_LOAD_(grain_atomic_load_acquire_u32, grain_u32, 32, acquire, sys)
GRAIN_LOAD_(grain_atomic_load_acquire_u64, grain_u64, 64, acquire, sys)
GRAIN_LOAD_(grain_atomic_load_acquire_dev_u32, grain_u32, 32, acquire, dev)
GRAIN_LOAD_(grain_atomic_load_acquire_dev_u64, grain_u64, 64, acquire, dev)
GRAIN_LOAD_(grain_atomic_load_relaxed_u64, grain_u64, 64, relaxed, sys)
GRAIN_LOAD_(grain_atomic_load_relaxed_dev_u32, grain_u32, 32, relaxed, dev)
GRAIN_LOAD_(grain_atomic_load_relaxed_dev_u64, grain_u64, 64, relaxed, dev)
GRAIN_STORE_RELEASE_(grain_atomic_store_release_u32, grain_u32, 32, sys)
GRAIN_STORE_RELEASE_(grain_atomic_store_release_dev_u32, grain_u32, 32, dev)
GRAIN_STORE_RELEASE_(grain_atomic_store_release_dev_u64, grain_u64, 64, dev)

GRAIN_INLINE grain_u32 grain_atomic_load_relaxed_u32(GRAIN_GLOBAL void *p) { return *GRAIN_A32(p); }

GRAIN_INLINE void grain_atomic_store_relaxed_u32(GRAIN_GLOBAL void *p, grain_u32 v) { *GRAIN_A32(p) = v; }

GRAIN_INLINE int grain_atomic_cas_u32(GRAIN_GLOBAL void *p, grain_u32 *expected, grain_u32 desired)
{
    grain_u32 old = atomicCAS_system((unsigned int *)p, *expected, desired);
    int ok = old == *expected;
    *expected = old;
    return ok;
}

#define grain_atomic_fetch_add_u32(p, v) atomicAdd_system((unsigned int *)(p), (unsigned int)(v))
#define grain_atomic_fetch_add_u64(p, v) \
    atomicAdd_system((unsigned long long *)(p), (unsigned long long)(v))
#define grain_atomic_fetch_min_i64(p, v) atomicMin_system((long long *)(p), (long long)(v))
#define grain_atomic_fetch_max_i64(p, v) atomicMax_system((long long *)(p), (long long)(v))

/* Chunk readiness (see the OpenCL dialect): a device-scope atomic after a
 * fence, and a second fence for the last writer only, so that it acquires
 * the other work-groups' writes before its release store to the ready word
 * (cumulative in PTX). */
GRAIN_INLINE grain_u32 grain_atomic_count_down_dev_u32(GRAIN_GLOBAL void *p)
{
    __threadfence();
    grain_u32 old = atomicSub((unsigned int *)p, 1u);
    if (old == 1u)
        __threadfence();
    return old;
}

/* Device scope: the rings' producer state, in device memory (L2 atomics).
 * The slow path's release may stay a fence. */
#define grain_atomic_fetch_add_dev_u64(p, v) atomicAdd((unsigned long long *)(p), (unsigned long long)(v))

GRAIN_INLINE void grain_atomic_max_release_dev_u64(GRAIN_GLOBAL void *p, grain_u64 v)
{
    __threadfence();
    atomicMax((unsigned long long *)p, v);
}

/* The heap, where kernels apply messages: device memory, at the scope
 * GRAIN_HEAP_SCOPE_SYSTEM says. */
#if GRAIN_HEAP_SCOPE_SYSTEM
#define GRAIN_HEAP_ATOMIC_(op) op##_system
#define grain_heap_fence_release() __threadfence_system()
#else
#define GRAIN_HEAP_ATOMIC_(op) op
#define grain_heap_fence_release() __threadfence()
#endif
#define grain_heap_store_u32(p, v) (*GRAIN_A32(p) = (unsigned int)(v))
#define grain_heap_store_u64(p, v) (*GRAIN_A64(p) = (unsigned long long)(v))
#define grain_heap_add_u32(p, v) GRAIN_HEAP_ATOMIC_(atomicAdd)((unsigned int *)(p), (unsigned int)(v))
#define grain_heap_add_u64(p, v) \
    GRAIN_HEAP_ATOMIC_(atomicAdd)((unsigned long long *)(p), (unsigned long long)(v))
#if defined(__HIPCC__) || defined(__HIPCC_RTC__)
/* HIP 5.2 has no signed 64-bit atomicMin. */
GRAIN_INLINE grain_i64 grain_heap_fetch_min_i64(GRAIN_GLOBAL void *p, grain_i64 v)
{
    unsigned long long *a = (unsigned long long *)p;
    unsigned long long old = *(volatile unsigned long long *)a, seen;
    while ((grain_i64)old > v && (seen = GRAIN_HEAP_ATOMIC_(atomicCAS)(a, old, (unsigned long long)v)) != old)
        old = seen;
    return (grain_i64)old;
}
#else
#define grain_heap_fetch_min_i64(p, v) GRAIN_HEAP_ATOMIC_(atomicMin)((long long *)(p), (long long)(v))
#endif
#define grain_heap_cas_u64(p, expected, desired)                                              \
    ((grain_u64)GRAIN_HEAP_ATOMIC_(atomicCAS)((unsigned long long *)(p), (unsigned long long)(expected), \
                                              (unsigned long long)(desired)))
#define grain_heap_cas_u32(p, expected, desired) \
    ((grain_u32)GRAIN_HEAP_ATOMIC_(atomicCAS)((unsigned int *)(p), (unsigned int)(expected), (unsigned int)(desired)))
#define GRAIN_HEAP_RMW_exchange GRAIN_HEAP_ATOMIC_(atomicExch)
#define GRAIN_HEAP_RMW_fetch_add GRAIN_HEAP_ATOMIC_(atomicAdd)
#define GRAIN_HEAP_RMW_fetch_and GRAIN_HEAP_ATOMIC_(atomicAnd)
#define GRAIN_HEAP_RMW_fetch_or GRAIN_HEAP_ATOMIC_(atomicOr)
#define GRAIN_HEAP_RMW_fetch_xor GRAIN_HEAP_ATOMIC_(atomicXor)
#define grain_heap_rmw_u32(op, p, v) ((grain_u32)GRAIN_HEAP_RMW_##op((unsigned int *)(p), (unsigned int)(v)))
#define grain_heap_rmw_u64(op, p, v) \
    ((grain_u64)GRAIN_HEAP_RMW_##op((unsigned long long *)(p), (unsigned long long)(v)))
#define grain_heap_load_u32(p) ((grain_u32)*GRAIN_A32(p))
#define grain_heap_load_u64(p) ((grain_u64)*GRAIN_A64(p))
#define grain_f64_bits(x) ((grain_i64)__double_as_longlong((double)(x)))
#define grain_bits_f64(b) __longlong_as_double((long long)(b))

GRAIN_INLINE grain_u32 grain_local_linear_id(void)
{
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}

GRAIN_INLINE grain_u32 grain_local_linear_size(void) { return blockDim.x * blockDim.y * blockDim.z; }

/* The OpenCL order: dimension 0 varies fastest. */
GRAIN_INLINE grain_u64 grain_global_linear_id(void)
{
    grain_u64 x = (grain_u64)blockIdx.x * blockDim.x + threadIdx.x;
    grain_u64 y = (grain_u64)blockIdx.y * blockDim.y + threadIdx.y;
    grain_u64 z = (grain_u64)blockIdx.z * blockDim.z + threadIdx.z;
    grain_u64 nx = (grain_u64)gridDim.x * blockDim.x, ny = (grain_u64)gridDim.y * blockDim.y;
    return (z * ny + y) * nx + x;
}

GRAIN_INLINE grain_u64 grain_global_linear_size(void)
{
    return (grain_u64)gridDim.x * blockDim.x * gridDim.y * blockDim.y * gridDim.z * blockDim.z;
}

GRAIN_INLINE grain_u64 grain_group_linear_id(void)
{
    return ((grain_u64)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
}

GRAIN_INLINE grain_u64 grain_group_linear_count(void) { return (grain_u64)gridDim.x * gridDim.y * gridDim.z; }

/* Per dimension (0, 1 or 2), as OpenCL names them. */
GRAIN_INLINE grain_u64 grain_local_id(unsigned d) { return d == 0 ? threadIdx.x : d == 1 ? threadIdx.y : threadIdx.z; }
GRAIN_INLINE grain_u64 grain_local_size(unsigned d) { return d == 0 ? blockDim.x : d == 1 ? blockDim.y : blockDim.z; }
GRAIN_INLINE grain_u64 grain_group_id(unsigned d) { return d == 0 ? blockIdx.x : d == 1 ? blockIdx.y : blockIdx.z; }

/*
 * Sub-group (warp, wavefront) intrinsics.  The width is the hardware's
 * warpSize (32 on NVIDIA, 64 on most AMD GPUs), never a constant; a warp is
 * `width` consecutive linear local ids.  Every lane of the warp that exists
 * must make the call: CUDA's *_sync forms name exactly those lanes, so a
 * partial last warp of a work-group works too.
 */
GRAIN_INLINE grain_u32 grain_sg_width(void) { return (grain_u32)warpSize; }
GRAIN_INLINE grain_u32 grain_sg_lane(void) { return grain_local_linear_id() % grain_sg_width(); }

/* Lanes of the caller's warp that exist in its work-group. */
GRAIN_INLINE grain_u32 grain_sg_present(void)
{
    grain_u32 lid = grain_local_linear_id();
    grain_u32 n = grain_local_linear_size() - (lid - lid % grain_sg_width());
    return n < grain_sg_width() ? n : grain_sg_width();
}

#if defined(__HIPCC__) || defined(__HIPCC_RTC__)
#define grain_sg_ballot(pred) ((grain_u64)__ballot(pred))
#define grain_sg_shfl(v, src) __shfl((v), (int)(src))
#define grain_sg_shfl_up(v, d) __shfl_up((v), (unsigned)(d))
#else
GRAIN_INLINE unsigned grain_sg_mask_(void)
{
    grain_u32 n = grain_sg_present();
    return n >= 32 ? 0xffffffffu : (1u << n) - 1u;
}
#define grain_sg_ballot(pred) ((grain_u64)__ballot_sync(grain_sg_mask_(), (pred)))
#define grain_sg_shfl(v, src) __shfl_sync(grain_sg_mask_(), (v), (int)(src))
#define grain_sg_shfl_up(v, d) __shfl_up_sync(grain_sg_mask_(), (v), (unsigned)(d))
#endif

/*
 * Claims one index of *counter per active lane, with one shared-memory
 * atomic per warp (per piece of a warp, where a group boundary splits it);
 * the active lanes of a warp get consecutive indices in lane order.
 * Per-lane atomics on one word serialize and hand out indices in no useful
 * order: a warp's stores to the claimed queue columns then scatter into
 * partial lines, which the host link carries as small writes (8.9 GB/s of
 * 32-byte messages on an H100, against 40 GB/s with claims per warp).
 * Groups are runs of `group` consecutive linear ids, whatever their
 * alignment to warps; all present lanes call.
 */
GRAIN_INLINE grain_u32 grain_local_claim_u32(GRAIN_LOCAL grain_u32 *counter, int active, grain_u32 group)
{
    grain_u32 lid = grain_local_linear_id(), width = grain_sg_width();
    grain_u32 lane = lid % width, warp_first = lid - lane, group_first = lid / group * group;
    /* the caller's group, as lanes [lo, hi) of its warp */
    grain_u32 lo = group_first > warp_first ? group_first - warp_first : 0u;
    grain_u32 hi = group_first + group - warp_first < width ? group_first + group - warp_first : width;
    grain_u64 span = hi - lo >= 64u ? ~0ull : ((1ull << (hi - lo)) - 1ull) << lo;
    grain_u64 mine = grain_sg_ballot(active) & span;
    grain_u32 leader = mine != 0 ? (grain_u32)__ffsll((long long)mine) - 1u : lane;
    grain_u32 base = 0;
    if (mine != 0 && lane == leader)
        base = atomicAdd((unsigned int *)counter, (unsigned int)__popcll(mine));
    base = grain_sg_shfl(base, leader);
    return base + (grain_u32)__popcll(mine & ((1ull << lane) - 1ull));
}
#define grain_local_min_u32(p, v) ((void)atomicMin((unsigned int *)(p), (unsigned int)(v)))
#define grain_local_cas_u32(p, expected, desired) \
    ((grain_u32)atomicCAS((unsigned int *)(p), (unsigned int)(expected), (unsigned int)(desired)))
#define grain_local_add_i64(p, v) ((void)atomicAdd((unsigned long long *)(p), (unsigned long long)(v)))
#define grain_wg_barrier() __syncthreads()
#define grain_wg_rejoin() ((void)0)
/* Between polls of a work-item that waits for the producer beside it (the
 * device agent): a spinning work-item takes issue slots from the producer's
 * work-groups on its compute unit. */
#if defined(__HIPCC__) || defined(__HIPCC_RTC__)
#define grain_poll_nap() __builtin_amdgcn_s_sleep(4)
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
#define grain_poll_nap() __nanosleep(256)
#else
#define grain_poll_nap() ((void)0)
#endif
/* The publishing release store is cumulative here: no separate fence. */
#define grain_fence_release() ((void)0)
#if defined(__HIPCC__) || defined(__HIPCC_RTC__)
#define grain_fence_acquire() __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "")
#define grain_fence_acquire_dev() __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent")
#else
#define grain_fence_acquire() asm volatile("fence.acq_rel.sys;" ::: "memory")
#define grain_fence_acquire_dev() asm volatile("fence.acq_rel.gpu;" ::: "memory")
#endif

/* ------------------------------------------------------------------------ */
#elif defined(GRAIN_DIALECT_HOST)

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

typedef uint64_t grain_u64;
typedef int64_t grain_i64;
typedef uint32_t grain_u32;
typedef int32_t grain_i32;

#define GRAIN_GLOBAL
#define GRAIN_LOCAL
#define GRAIN_LOCAL_DECL
#define GRAIN_INLINE static inline
#define GRAIN_DPTR(T) T *
#define GRAIN_RESTRICT restrict

/* Plain words reinterpreted as atomics: lock-free 4- and 8-byte atomics have
 * the representation of the plain type on every platform grain supports. */
#define GRAIN_A32(p) ((_Atomic grain_u32 *)(p))
#define GRAIN_A64(p) ((_Atomic grain_u64 *)(p))

#define grain_atomic_load_acquire_u32(p) atomic_load_explicit(GRAIN_A32(p), memory_order_acquire)
#define grain_atomic_load_relaxed_u32(p) atomic_load_explicit(GRAIN_A32(p), memory_order_relaxed)
#define grain_atomic_store_release_u32(p, v) \
    atomic_store_explicit(GRAIN_A32(p), (v), memory_order_release)
#define grain_atomic_store_relaxed_u32(p, v) \
    atomic_store_explicit(GRAIN_A32(p), (v), memory_order_relaxed)
#define grain_atomic_cas_u32(p, expected_p, desired) \
    atomic_compare_exchange_strong_explicit(GRAIN_A32(p), (expected_p), (desired), \
        memory_order_acq_rel, memory_order_relaxed)
#define grain_atomic_fetch_add_u32(p, v) \
    atomic_fetch_add_explicit(GRAIN_A32(p), (v), memory_order_relaxed)
#define grain_atomic_fetch_add_u64(p, v) \
    atomic_fetch_add_explicit(GRAIN_A64(p), (v), memory_order_relaxed)
#define grain_atomic_load_acquire_u64(p) atomic_load_explicit(GRAIN_A64(p), memory_order_acquire)
#define grain_atomic_load_relaxed_u64(p) atomic_load_explicit(GRAIN_A64(p), memory_order_relaxed)
#define grain_atomic_fetch_add_dev_u64 grain_atomic_fetch_add_u64
#define grain_atomic_load_acquire_dev_u64 grain_atomic_load_acquire_u64
#define grain_atomic_load_acquire_dev_u32 grain_atomic_load_acquire_u32
#define grain_atomic_load_relaxed_dev_u32 grain_atomic_load_relaxed_u32
#define grain_atomic_load_relaxed_dev_u64 grain_atomic_load_relaxed_u64
#define grain_atomic_store_release_dev_u32 grain_atomic_store_release_u32
#define grain_atomic_store_release_dev_u64(p, v) atomic_store_explicit(GRAIN_A64(p), (v), memory_order_release)
GRAIN_INLINE grain_u32 grain_atomic_count_down_dev_u32(void *p)
{
    grain_u32 old = atomic_fetch_sub_explicit(GRAIN_A32(p), 1u, memory_order_release);
    if (old == 1u)
        atomic_thread_fence(memory_order_acquire);
    return old;
}

GRAIN_INLINE void grain_atomic_max_release_dev_u64(grain_u64 *p, grain_u64 v)
{
    grain_u64 old = atomic_load_explicit(GRAIN_A64(p), memory_order_relaxed);
    while (v > old && !atomic_compare_exchange_weak_explicit(GRAIN_A64(p), &old, v, memory_order_release,
                                                             memory_order_relaxed)) {
    }
}

#define grain_heap_store_u32(p, v) atomic_store_explicit(GRAIN_A32(p), (v), memory_order_relaxed)
#define grain_heap_store_u64(p, v) atomic_store_explicit(GRAIN_A64(p), (v), memory_order_relaxed)
#define grain_heap_add_u32 grain_atomic_fetch_add_u32
#define grain_heap_add_u64 grain_atomic_fetch_add_u64

GRAIN_INLINE grain_i64 grain_host_fetch_min_i64(grain_i64 *p, grain_i64 v)
{
    _Atomic grain_i64 *a = (_Atomic grain_i64 *)p;
    grain_i64 old = atomic_load_explicit(a, memory_order_relaxed);
    while (v < old &&
           !atomic_compare_exchange_weak_explicit(a, &old, v, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
    return old;
}

GRAIN_INLINE grain_i64 grain_host_fetch_max_i64(grain_i64 *p, grain_i64 v)
{
    _Atomic grain_i64 *a = (_Atomic grain_i64 *)p;
    grain_i64 old = atomic_load_explicit(a, memory_order_relaxed);
    while (v > old &&
           !atomic_compare_exchange_weak_explicit(a, &old, v, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
    return old;
}

#define grain_atomic_fetch_min_i64(p, v) grain_host_fetch_min_i64((p), (v))
#define grain_atomic_fetch_max_i64(p, v) grain_host_fetch_max_i64((p), (v))
#define grain_heap_fetch_min_i64(p, v) grain_host_fetch_min_i64((p), (v))

GRAIN_INLINE grain_u64 grain_heap_cas_u64(void *p, grain_u64 expected, grain_u64 desired)
{
    atomic_compare_exchange_strong_explicit(GRAIN_A64(p), &expected, desired, memory_order_relaxed,
                                            memory_order_relaxed);
    return expected;
}

GRAIN_INLINE grain_u32 grain_heap_cas_u32(void *p, grain_u32 expected, grain_u32 desired)
{
    atomic_compare_exchange_strong_explicit(GRAIN_A32(p), &expected, desired, memory_order_relaxed,
                                            memory_order_relaxed);
    return expected;
}

#define grain_heap_rmw_u32(op, p, v) atomic_##op##_explicit(GRAIN_A32(p), (grain_u32)(v), memory_order_relaxed)
#define grain_heap_rmw_u64(op, p, v) atomic_##op##_explicit(GRAIN_A64(p), (grain_u64)(v), memory_order_relaxed)
#define grain_heap_load_u32(p) atomic_load_explicit(GRAIN_A32(p), memory_order_relaxed)
#define grain_heap_load_u64(p) atomic_load_explicit(GRAIN_A64(p), memory_order_relaxed)

GRAIN_INLINE grain_i64 grain_f64_bits(double x)
{
    grain_i64 b;
    memcpy(&b, &x, sizeof b);
    return b;
}

GRAIN_INLINE double grain_bits_f64(grain_i64 b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

#define grain_fence_release() atomic_thread_fence(memory_order_release)
#define grain_fence_acquire() atomic_thread_fence(memory_order_acquire)
#define grain_fence_acquire_dev grain_fence_acquire
#define grain_heap_fence_release() atomic_thread_fence(memory_order_release)
/* Host threads play producers in tests and CPU baselines, often more of them
 * than cores: a waiting one lets the thread it waits for run. */
#define grain_poll_nap() sched_yield()

#endif /* dialect */

#endif /* GRAIN_DEVICE_PORT_H */
