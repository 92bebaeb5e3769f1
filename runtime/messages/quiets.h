/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Work-group quiets on the receiving side (docs/shmem-api.md, "Quiet and
 * fence"): a quiet request from rank s is answered once every buffer that
 * reached this rank before it is applied.
 *
 * The sender makes "before" enough: the request leaves after every buffer
 * that holds the work-group's earlier messages to this rank (aggregator.c),
 * and buffers of one source are handed over in the order of their sequence
 * numbers (the transport's contract).  Here buffers are applied out of that
 * order (receive threads, stages of the apply kernel and the resident
 * agent, buffers kept in host memory for later), so a count of applied
 * messages cannot say that the ones before a request are done.  Instead
 * arriving buffers join the current epoch, and a request closes it: the
 * request is answered when its epoch and every older one have no buffer
 * left unapplied.  Epochs begin only at requests, so without quiets one
 * epoch takes every buffer, and a request waits for nothing that arrived
 * after it.
 *
 * Any thread; one lock, taken twice a buffer.
 */
#ifndef GRAIN_RUNTIME_MESSAGES_QUIETS_H
#define GRAIN_RUNTIME_MESSAGES_QUIETS_H

#include <stdint.h>

#include "grain/grain.h"
#include "transports/wire.h"

typedef struct grain_quiets grain_quiets_t;
typedef struct grain_epoch grain_epoch_t;

/* Answers go to `sink->answer`. */
grain_status_t grain_quiets_create(const grain_wire_replies_t *sink, grain_quiets_t **q_p);
/* Requests still waiting are dropped: nobody is left to answer them. */
void grain_quiets_destroy(grain_quiets_t *q);

/* A buffer arrived, in its source's order; returns what it holds until
 * grain_quiets_applied. */
grain_epoch_t *grain_quiets_arrived(grain_quiets_t *q);
/* Every message of the buffer is applied (or will never be: refused, or
 * lost with a failed kernel, and reported). */
void grain_quiets_applied(grain_quiets_t *q, grain_epoch_t *e);
/* Rank `src`'s request with reply ticket `ticket` (its first wire word).
 * Without memory to hold it, it is answered at once and the error returned:
 * a lane waits for the answer. */
grain_status_t grain_quiets_request(grain_quiets_t *q, uint32_t src, uint64_t ticket);
/* Requests not answered yet: while there are any, whoever polls looks for
 * applied stages. */
unsigned grain_quiets_waiting(const grain_quiets_t *q);

#endif
