/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ibverbs transport's protocol apart from the device (docs/design.md,
 * send path 5): flow control, receive rings, the bootstrap record
 * and completion errors, which the unit tests check without an RDMA device.
 *
 * Every rank keeps, for each peer, a ring of `slots` receive slots of
 * `slot_bytes` in registered memory.  The peer RDMA-writes a buffer into the
 * next slot with the buffer's length as immediate data; RC delivers writes
 * in order, so the receiver knows the slot from its own count of arrivals.
 * A sender may have at most `slots` writes in a ring that the receiver has
 * not consumed (its credits).  The receiver returns credits by RDMA-writing
 * its running count of consumed slots into a word of the sender's memory,
 * once half a ring has been consumed since the last return or when it has
 * nothing else to do: a count, not an increment, so that a return written
 * twice or overtaken by a later one never frees a slot twice.
 */
#ifndef GRAIN_TRANSPORTS_VERBS_PROTO_H
#define GRAIN_TRANSPORTS_VERBS_PROTO_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "grain/grain.h"

/* The sender's side of one peer's ring. */
/* Counts are compared by their differences, so they may wrap; slots have
 * their own index, since 2^64 is no multiple of a ring's size. */
typedef struct grain_verbs_credits {
    uint64_t sent;     /* writes posted into the ring */
    uint64_t consumed; /* the slots the peer says it has consumed */
    uint32_t slots, next_slot;
} grain_verbs_credits_t;

void grain_verbs_credits_init(grain_verbs_credits_t *c, uint32_t slots);
uint32_t grain_verbs_credits_available(const grain_verbs_credits_t *c);
/* Takes a credit and gives the slot to write; 0 when there is none (the
 * send waits for a return). */
int grain_verbs_credits_take(grain_verbs_credits_t *c, uint32_t *slot_p);
/* The count the peer returned.  GRAIN_ERR_TRANSPORT, with a sentence, for
 * one that goes back or counts slots never written: a peer that breaks the
 * protocol, whose credits can no longer be trusted. */
grain_status_t grain_verbs_credits_returned(grain_verbs_credits_t *c, uint64_t consumed, uint32_t peer);

/* The receiver's side of one peer's ring. */
typedef struct grain_verbs_ring {
    uint64_t arrived, consumed, returned;
    uint32_t slots, next_slot;
    uint32_t slot_bytes;
} grain_verbs_ring_t;

void grain_verbs_ring_init(grain_verbs_ring_t *r, uint32_t slots, uint32_t slot_bytes);
/* A write of `bytes` arrived: gives its slot.  GRAIN_ERR_TRANSPORT when it
 * cannot be one the sender was allowed to make (longer than a slot, or into
 * a full ring). */
grain_status_t grain_verbs_ring_arrive(grain_verbs_ring_t *r, uint32_t bytes, uint32_t peer, uint32_t *slot_p);
/* The oldest arrived slot is free again. */
void grain_verbs_ring_consume(grain_verbs_ring_t *r);
/* Whether to return credits now: half a ring consumed since the last
 * return, or any when `idle`. */
int grain_verbs_ring_should_return(const grain_verbs_ring_t *r, int idle);
/* The count to write back; it is then the last returned. */
uint64_t grain_verbs_ring_return(grain_verbs_ring_t *r);
static inline size_t grain_verbs_ring_offset(const grain_verbs_ring_t *r, uint32_t slot)
{
    return (size_t)slot * r->slot_bytes;
}

/* Registered send buffers of one size, taken and given back from any thread. */
typedef struct grain_verbs_pool {
    pthread_mutex_t lock;
    uint8_t *base;
    size_t buf_bytes;
    uint32_t n, n_free;
    uint32_t *free; /* a stack of free indices */
} grain_verbs_pool_t;

/* Over `n` buffers of `buf_bytes` from `base` (memory the caller registers). */
grain_status_t grain_verbs_pool_init(grain_verbs_pool_t *p, void *base, size_t buf_bytes, uint32_t n);
void grain_verbs_pool_destroy(grain_verbs_pool_t *p);
/* A free buffer, or NULL when all are in flight. */
void *grain_verbs_pool_take(grain_verbs_pool_t *p);
/* GRAIN_ERR_INVALID for a pointer that is not a buffer of the pool, or one already free. */
grain_status_t grain_verbs_pool_give(grain_verbs_pool_t *p, void *buf);

/* What a rank tells one peer at bootstrap: its end of their queue pair
 * and where the peer writes (its ring here, its credit word here). */
typedef struct grain_verbs_peer_info {
    uint32_t qp_num; /* 24 bits */
    uint32_t psn;    /* 24 bits */
    uint16_t lid;
    uint8_t port;
    uint8_t gid[16];
    uint64_t ring_addr;
    uint32_t ring_rkey;
    uint64_t credit_addr;
    uint32_t credit_rkey;
    uint32_t slots, slot_bytes;
} grain_verbs_peer_info_t;

#define GRAIN_VERBS_INFO_BYTES 72u /* packed: magic, version, the fields, little-endian */

void grain_verbs_info_pack(const grain_verbs_peer_info_t *info, uint8_t out[GRAIN_VERBS_INFO_BYTES]);
/* GRAIN_ERR_TRANSPORT, naming `from` and the field, for a record that is
 * short, of another protocol or version, or out of range. */
grain_status_t grain_verbs_info_unpack(const uint8_t *in, size_t len, uint32_t from, grain_verbs_peer_info_t *info);

/* Where a rank's symmetric heap takes RDMA writes of chunks, as the two
 * words of an all-to-all sent to every peer: its address, then its rkey,
 * whether it registered at all, and a tag that catches a peer of another
 * protocol. */
void grain_verbs_heap_words(uint64_t addr, uint32_t rkey, int registered, uint64_t words[2]);
/* GRAIN_ERR_TRANSPORT, naming `from`, for words that are not such a record. */
grain_status_t grain_verbs_heap_unwords(const uint64_t words[2], uint32_t from, uint64_t *addr_p, uint32_t *rkey_p,
                                        int *registered_p);

/* The GID to route by on RoCE, from a port's table (ibv_query_gid_table):
 * RoCE v2 before v1, since it crosses IP routers; an IPv4-mapped address
 * before an IPv6 one, and a global one before a link-local one, which the
 * netdev may not even have (Soft-RoCE on lo); the lowest index among equals.
 * -1 when no entry of `port` has an address. */
struct ibv_gid_entry;
int grain_verbs_gid_pick(const struct ibv_gid_entry *entries, size_t n, uint32_t port);

/* A failed work completion (an enum ibv_wc_status): the status and a
 * sentence naming the peer, what failed and the status's name. */
grain_status_t grain_verbs_wc_error(int wc_status, uint32_t peer, const char *what);

#endif
