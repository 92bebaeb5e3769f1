/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration test under mpirun (1 to 4 ranks): shmem_all.cl sends every kind
 * of message from every active work-item to every rank, for every activity
 * pattern; after grain_barrier every rank checks each counter and slot against
 * values computed from the same pattern.  Exit 0 only if every rank agrees.
 *
 * The heap is read and cleared through grain_memcpy: on GPUs whose ranks map
 * each other's heaps it is device memory.  There grain refuses host
 * handlers, and the messages for one go to the device handler instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ok.h"
#include "grain/grain.h"
#include "shmem_all_pattern.h"

extern const char shmem_all_source[];

#define ITEMS 512
#define WG 64

static void add_at(char *heap, uint32_t src, uint64_t offset, uint64_t value)
{
    (void)src;
    __atomic_fetch_add((int64_t *)(heap + offset), (int64_t)value, __ATOMIC_RELAXED);
}

static int check(int me, const char *what, long long got, long long want, int *bad)
{
    if (got == want)
        return 1;
    if (++*bad <= 10)
        fprintf(stderr, "rank %d: %s is %lld, expected %lld\n", me, what, got, want);
    return 0;
}

/* The heap's words, laid out as the kernel's arguments are, one allocation
 * so that one copy reads (or clears) them all. */
typedef struct words {
    int64_t cnt, sum, am_sum, am_device_sum;
    int32_t cnt32, sum32;
} words_t;

int main(void)
{
    grain_t *g;
    OK(grain_init(NULL, &g));
    int me = grain_my_pe(g), n = grain_n_pes(g);
    uint32_t handler = SHMEM_ALL_HOST_AM;
    if (grain_am_register(g, SHMEM_ALL_HOST_AM, add_at) == GRAIN_ERR_UNSUPPORTED) {
        if (me == 0)
            printf("shmem_all: no host handler (%s); its messages go to the device handler\n",
                   grain_error_message(g));
        handler = SHMEM_ALL_DEVICE_AM;
    }
    size_t n_puts = (size_t)n * ITEMS;
    size_t bytes = sizeof(words_t) + 8 * n_puts + 4 * n_puts + 8 * (size_t)n;
    char *heap, *host = calloc(1, bytes), *zeros = calloc(1, bytes);
    if (host == NULL || zeros == NULL)
        return 2;
    OK(grain_malloc(g, bytes, (void **)&heap));
    words_t *w = (words_t *)host, *dw = (words_t *)heap;
    int64_t *puts = (int64_t *)(host + sizeof(words_t));
    int32_t *puts32 = (int32_t *)(puts + n_puts);
    int64_t *divergent = (int64_t *)(puts32 + n_puts);
    char *dev_puts = heap + sizeof(words_t), *dev_puts32 = dev_puts + 8 * n_puts;
    grain_program_t *prog;
    grain_kernel_t *k;
    OK(grain_program_create(g, shmem_all_source, NULL, &prog));
    OK(grain_am_register_program(g, prog));
    OK(grain_kernel_create(prog, "shmem_all", &k));
    void *ptrs[8] = {&dw->cnt, &dw->cnt32, &dw->sum, &dw->sum32, dev_puts, dev_puts32, &dw->am_sum,
                     dev_puts32 + 4 * n_puts};
    for (unsigned i = 0; i < 8; i++)
        OK(grain_kernel_set_arg_ptr(k, 1 + i, ptrs[i]));
    OK(grain_kernel_set_arg(k, 10, sizeof handler, &handler));
    OK(grain_kernel_set_arg_ptr(k, 11, &dw->am_device_sum));

    int bad = 0;
    for (uint32_t pattern = 0; pattern < PATTERNS; pattern++) {
        OK(grain_memcpy(g, heap, zeros, bytes));
        OK(grain_barrier_all(g));
        OK(grain_kernel_set_arg(k, 9, sizeof pattern, &pattern));
        size_t global = ITEMS, local = WG;
        OK(grain_launch(k, 1, &global, &local));
        OK(grain_barrier_all(g));
        OK(grain_memcpy(g, host, heap, bytes));

        long long want_cnt = 0, want_sum = 0, want_sum32 = 0, want_am = 0, want_div = 0;
        for (int r = 0; r < n; r++) {
            for (uint64_t gid = 0; gid < ITEMS; gid++) {
                int act = pattern_active(pattern, (uint32_t)r, gid, (uint32_t)(gid % WG));
                uint64_t slot = (uint64_t)r * ITEMS + gid;
                check(me, "a put64 slot", puts[slot], act ? put_value((uint32_t)r, gid) : 0, &bad);
                check(me, "a put32 slot", puts32[slot], act ? (int32_t)put_value((uint32_t)r, gid) : 0, &bad);
                if (!act)
                    continue;
                want_cnt++;
                want_sum += (long long)gid + 1;
                want_sum32 += (long long)(gid % 1000);
                want_am += r + 1;
                if (gid % (uint64_t)n == (uint64_t)me)
                    want_div += lane_trips((uint32_t)r, gid);
            }
        }
        check(me, "the inc64 counter", w->cnt, want_cnt, &bad);
        check(me, "the inc32 counter", w->cnt32, want_cnt, &bad);
        check(me, "the add64 sum", w->sum, want_sum, &bad);
        check(me, "the add32 sum", w->sum32, want_sum32, &bad);
        check(me, "the host handler's sum", w->am_sum, want_am, &bad);
        check(me, "the device handler's sum", w->am_device_sum, want_am, &bad);
        check(me, "the divergent-loop counter", divergent[me], want_div, &bad);
    }
    uint64_t total_bad = (uint64_t)bad;
    OK(grain_allreduce(g, &total_bad, 1, GRAIN_UINT64, GRAIN_SUM));
    if (me == 0)
        printf("shmem_all: %d ranks, %d patterns: %s (%llu mismatches)\n", n, PATTERNS,
               total_bad ? "FAILED" : "passed", (unsigned long long)total_bad);
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    OK(grain_free(g, heap));
    OK(grain_finalize(g));
    free(host);
    free(zeros);
    return total_bad ? 1 : 0;
}
