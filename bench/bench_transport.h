/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport of benchmarks that take the network out: one process stands
 * for `pes` ranks, rank 0 the only real one.  What rank 0 sends is handed
 * back at once; what the others send is only what the benchmark replays
 * into rank 0's receive path (bench_transport_deliver), as a network thread
 * would, buffer by buffer from receive buffers the runtime allocated.
 */
#ifndef GRAIN_BENCH_TRANSPORT_H
#define GRAIN_BENCH_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "transports/transport.h"

extern const grain_transport_ops_t bench_transport_ops;

/* Before grain_init_transport: the ranks the next job has. */
void bench_transport_set_pes(unsigned pes);

/* After grain_init_transport: the receive buffers the runtime asked for,
 * `recv_size` bytes each, in the memory it asked for (pinned where the
 * device has its own).  NULL when that memory cannot be had. */
void **bench_transport_recv_buffers(unsigned *count_p, size_t *recv_size_p);

/* Hands buffer `i` (a packed buffer of its header's `bytes`, from its
 * header's `src_pe`) to the runtime, as arriving from the network; waits
 * first, returning earlier held buffers to the pool, until `i` is not held
 * by the runtime.  Buffers are delivered in pool order, 0, 1, ... */
void bench_transport_deliver(unsigned i);
/* Waits until the runtime holds none of the pool. */
void bench_transport_settle_all(void);

#endif
