/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint collectives (GMH III-B5, fig. 4): synchronous, over every
 * endpoint of the job.  Each endpoint copies its part to the host; the last
 * endpoint of a rank to arrive leads: it combines the rank's parts, agrees
 * with the other ranks that all called the same collective, and runs grain's
 * host collective on the result; then every endpoint copies the result back
 * to its device.  Large collectives, every one but the barrier, move as
 * messages between the endpoints instead (ep_coll_messages.c), between two
 * agreements.
 *
 * Why it cannot hang: every collective costs each rank one agreement (an
 * allreduce of thirteen words), or two where it moves as messages and the
 * first found every endpoint agreed (the same answer on every rank), each
 * led by whichever of its endpoints arrives last, including after others
 * of the rank have returned (the collective then fails there: an endpoint
 * is missing).  A rank whose
 * endpoints have all returned answers the others' agreements from
 * grain_ep_run (grain_ep_team_finish) until every rank's have returned, so a
 * collective that some rank will never call fails everywhere instead of
 * waiting.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/endpoints/endpoint.h"
#include "runtime/grain_impl.h"
#include "services/log.h"

typedef struct grain_ep_result {
    grain_status_t status;
    char why[512];
    int kept;         /* the one result for when there is no memory for any: never freed */
    unsigned readers; /* endpoints that have yet to read it */
    size_t size;
    unsigned char *data;
    grain_ep_stage_t *stage; /* data's pinned memory, from the leader's pool; NULL: malloc'ed */
} result_t;

enum { COLL_BARRIER = 1, COLL_ALLREDUCE, COLL_REDUCE, COLL_BROADCAST, COLL_ALLGATHER, COLL_GATHER, COLL_SCATTER,
       COLL_ALLTOALL, COLL_MESSAGES_DONE };

grain_status_t grain_ep_agree(grain_t *g, int done, uint64_t key, grain_status_t st, const void *carry,
                              size_t carry_bytes, int64_t a[A_WORDS])
{
    int64_t k = (int64_t)(key & INT64_MAX);
    for (unsigned i = A_CARRY; i < A_WORDS; i++)
        a[i] = INT64_MIN;
    if (carry != NULL)
        memcpy(&a[A_CARRY], carry, carry_bytes);
    a[A_DONE] = done;
    a[A_ALL_DONE_NEG] = -done;
    a[A_KEY] = k;
    a[A_KEY_NEG] = -k;
    a[A_STATUS_NEG] = -(int64_t)st;
    return grain_allreduce(g, a, A_WORDS, GRAIN_INT64, GRAIN_MAX);
}

/* One word for a collective and its arguments (splitmix64's mixing). */
static uint64_t key_of(uint64_t kind, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t k = kind;
    const uint64_t in[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        k += in[i] + 0x9e3779b97f4a7c15ull;
        k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ull;
        k = (k ^ (k >> 27)) * 0x94d049bb133111ebull;
        k ^= k >> 31;
    }
    return k;
}

/* Host memory the leader q works in: a pinned stage of its pool where
 * there is one (*stage), kept there for the next collective, else
 * malloc'ed; NULL without either.  In fresh memory each time, whose pages
 * each collective faulted in, a 64 MiB broadcast through the host between
 * two H200s took 128-136 ms, where the host's broadcast and the copies took
 * 37-40: now 37-44 ms, as the endpoints also copy a pinned result to their
 * devices without a copy into their own memory first; a gather of 32 MiB
 * slots 46-55 ms instead of 151-163. */
static unsigned char *scratch_take(grain_cmdq_t *q, size_t bytes, grain_ep_stage_t **stage)
{
    *stage = bytes > 0 ? grain_ep_stage_take(q, &q->host_pool, bytes) : NULL;
    return *stage != NULL ? (*stage)->device : malloc(bytes > 0 ? bytes : 1);
}

static void scratch_give(grain_ep_team_t *t, unsigned char *p, grain_ep_stage_t *stage, int locked)
{
    if (stage != NULL)
        grain_ep_stage_give(t, stage, locked);
    else
        free(p);
}

/* A result no endpoint reads any more: its pinned memory back to the
 * leader's pool (with the team's lock held), whose close waits for it, so
 * that one left to grain_ep_team_destroy holds none; or freed. */
static void drop_result(grain_ep_team_t *t, result_t *r)
{
    scratch_give(t, r->data, r->stage, 1);
    free(r);
}

grain_status_t grain_ep_team_init(grain_ep_team_t *t, unsigned devices, unsigned ranks)
{
    memset(t, 0, sizeof *t);
    t->devices = devices;
    t->keys = calloc(devices, sizeof *t->keys);
    t->parts = calloc(devices, sizeof *t->parts);
    t->statuses = calloc(devices, sizeof *t->statuses);
    t->gone = calloc(devices, 1);
    t->posted = calloc(devices, sizeof *t->posted);
    t->backends = calloc(devices, sizeof *t->backends);
    t->fins_to = calloc(ranks, sizeof *t->fins_to);
    t->fins_from = calloc(ranks, sizeof *t->fins_from);
    t->mail_tail = &t->mail;
    if (t->keys == NULL || t->parts == NULL || t->statuses == NULL || t->gone == NULL || t->posted == NULL ||
        t->backends == NULL || t->fins_to == NULL || t->fins_from == NULL) {
        grain_ep_team_destroy(t);
        return grain_fail(GRAIN_ERR_NO_MEMORY, "grain_ep_run: no memory for the collectives of %u endpoints", devices);
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    pthread_cond_init(&t->mail_cond, NULL);
    return GRAIN_OK;
}

void grain_ep_team_destroy(grain_ep_team_t *t)
{
    if (t->keys != NULL && t->parts != NULL && t->statuses != NULL && t->gone != NULL && t->posted != NULL &&
        t->backends != NULL && t->fins_to != NULL && t->fins_from != NULL) {
        grain_ep_mail_drop(t);
        pthread_mutex_destroy(&t->lock);
        pthread_cond_destroy(&t->cond);
        pthread_cond_destroy(&t->mail_cond);
    }
    if (t->result != NULL && !t->result->kept)
        drop_result(t, t->result); /* read by no one once the endpoints returned */
    free(t->keys);
    free(t->parts);
    free(t->statuses);
    free(t->gone);
    free(t->posted);
    free(t->backends);
    free(t->fins_to);
    free(t->fins_from);
    memset(t, 0, sizeof *t);
}

void grain_ep_team_depart(grain_ep_team_t *t, unsigned vdev)
{
    pthread_mutex_lock(&t->lock);
    t->departed++;
    t->gone[vdev] = 1;
    t->backends[vdev] = NULL; /* closed next: no sender asks it any more */
    pthread_cond_broadcast(&t->cond);      /* the others may now lack only a leader */
    pthread_cond_broadcast(&t->mail_cond); /* or wait for a message it will never send */
    pthread_mutex_unlock(&t->lock);
}

grain_status_t grain_ep_team_finish(grain_t *g, grain_status_t mine)
{
    int64_t a[A_WORDS];
    do {
        grain_status_t st = grain_ep_agree(g, 1, 0, mine, NULL, 0, a);
        if (st != GRAIN_OK)
            return st;
    } while (a[A_ALL_DONE_NEG] != -1);
    grain_status_t lowest = (grain_status_t)-a[A_STATUS_NEG];
    if (mine == GRAIN_OK && lowest != GRAIN_OK)
        return grain_fail(lowest, "grain_ep_run: an endpoint of another rank failed (%s)", grain_strerror(lowest));
    return mine;
}

/* What one collective asks of the leader. */
typedef struct coll {
    int kind;
    size_t count; /* elements (reductions) or bytes (the others: a slot, one for each endpoint) */
    grain_dtype_t dtype;
    grain_op_t op;
    int root;     /* the root endpoint, where there is one */
    int messages; /* the data moves as messages between the endpoints once the ranks agree (coll_messages) */
} coll_t;

static void reduce_into(void *acc, const void *in, size_t count, grain_dtype_t dtype, grain_op_t op)
{
    for (size_t i = 0; i < count; i++) {
        if (dtype == GRAIN_DOUBLE) {
            double x = ((double *)acc)[i], y = ((const double *)in)[i];
            ((double *)acc)[i] = op == GRAIN_SUM ? x + y : op == GRAIN_MIN ? (y < x ? y : x) : (y > x ? y : x);
        } else if (dtype == GRAIN_INT64) {
            int64_t x = ((int64_t *)acc)[i], y = ((const int64_t *)in)[i];
            /* Sums wrap as MPI's do, without C's signed overflow. */
            ((int64_t *)acc)[i] = op == GRAIN_SUM   ? (int64_t)((uint64_t)x + (uint64_t)y)
                                  : op == GRAIN_MIN ? (y < x ? y : x)
                                                    : (y > x ? y : x);
        } else {
            uint64_t x = ((uint64_t *)acc)[i], y = ((const uint64_t *)in)[i];
            ((uint64_t *)acc)[i] = op == GRAIN_SUM ? x + y : op == GRAIN_MIN ? (y < x ? y : x) : (y > x ? y : x);
        }
    }
}

/* The rank's own check of a collective, then the ranks' agreement, which
 * carries `n` bytes from `carry` on the one rank that gives them into
 * `carried` on every rank; `done`: the agreement after a collective's
 * messages, on how they went. */
static grain_status_t settle(grain_cmdq_t *q, unsigned departed, grain_status_t local, uint64_t key, int done,
                             const void *carry, size_t n, void *carried)
{
    grain_ep_team_t *t = q->team;
    grain_t *g = q->grain;
    grain_status_t st = local;
    if (departed > 0)
        st = grain_fail(GRAIN_ERR_STATE,
                        "endpoint collective: %u endpoint%s of rank %d returned before it (every endpoint calls the "
                        "same collectives in the same order)",
                        departed, departed == 1 ? "" : "s", g->my_pe);
    for (unsigned v = 1; st == GRAIN_OK && v < t->devices; v++)
        if (t->keys[v] != t->keys[0])
            st = grain_fail(GRAIN_ERR_CONFIG,
                            "endpoint collective: endpoints %d and %d called different collectives, or with different "
                            "arguments",
                            q->id - (int)q->vdev, q->id - (int)q->vdev + (int)v);
    for (unsigned v = 0; st == GRAIN_OK && v < t->devices; v++)
        if (t->statuses[v] != GRAIN_OK)
            st = grain_fail(t->statuses[v], "endpoint collective: endpoint %d's %s", q->id - (int)q->vdev + (int)v,
                            done ? "messages failed" : "arguments were refused");
    int64_t a[A_WORDS];
    grain_status_t ranks = grain_ep_agree(g, 0, key, st, carry, n, a);
    if (ranks != GRAIN_OK || st != GRAIN_OK)
        return ranks != GRAIN_OK ? ranks : st;
    if (carried != NULL)
        memcpy(carried, &a[A_CARRY], n);
    if (a[A_DONE])
        return grain_fail(GRAIN_ERR_STATE, "endpoint collective: the endpoints of another rank returned before it");
    if (a[A_KEY] != -a[A_KEY_NEG])
        return grain_fail(GRAIN_ERR_CONFIG,
                          "endpoint collective: the ranks' endpoints called different collectives, or with different "
                          "arguments");
    grain_status_t other = (grain_status_t)-a[A_STATUS_NEG];
    if (other == GRAIN_ERR_STATE)
        return grain_fail(other, "endpoint collective: an endpoint of another rank returned before it");
    if (other == GRAIN_ERR_CONFIG)
        return grain_fail(other, "endpoint collective: the endpoints of another rank called different collectives, "
                                 "or with different arguments");
    if (other != GRAIN_OK)
        return grain_fail(other, "endpoint collective: an endpoint of another rank %s (%s)",
                          done ? "failed in its messages" : "was refused in it", grain_strerror(other));
    return GRAIN_OK;
}

/* A result of `size` bytes for the leader q; without the memory, one that
 * says so (the collective must still be agreed on with the other ranks). */
static result_t *new_result(grain_cmdq_t *q, size_t size)
{
    static result_t no_memory = {.status = GRAIN_ERR_NO_MEMORY, .kept = 1};
    result_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return &no_memory;
    r->size = size;
    if (size > 0 && (r->data = scratch_take(q, size, &r->stage)) == NULL) {
        free(r);
        return &no_memory;
    }
    return r;
}

/* The bytes of a collective's result a rank's endpoints read: n endpoints
 * in the job, D a rank. */
static size_t result_size(const coll_t *c, size_t n, size_t D)
{
    if (c->messages)
        return 0;
    switch (c->kind) {
    case COLL_ALLREDUCE:
    case COLL_REDUCE:
        return c->count * 8u;
    case COLL_BROADCAST:
        return c->count;
    case COLL_ALLGATHER:
    case COLL_GATHER:
        return n * c->count; /* every endpoint's slot, in endpoint order */
    case COLL_SCATTER:
        return D * c->count; /* this rank's endpoints' slots */
    case COLL_ALLTOALL:
        return D * n * c->count; /* per endpoint of the rank, a slot from every endpoint */
    default:
        return 0;
    }
}

/* Between ranks, through grain_alltoallv: allgather and gather send the
 * rank's slots (D of them, the rank's block) to every rank or to the root's;
 * scatter sends the root endpoint's slots, a block to each rank; alltoall
 * sends each rank the D x D slots the rank's endpoints hold for its
 * endpoints, and puts what arrives in each endpoint's order. */
static grain_status_t exchange(grain_cmdq_t *q, const coll_t *c, unsigned char *out)
{
    grain_ep_team_t *t = q->team;
    grain_t *g = q->grain;
    size_t P = (size_t)g->n_pes, D = t->devices, n = P * D, b = c->count, block = D * b;
    int root_rank = c->root / (int)D;
    size_t *bytes = calloc(2 * P, sizeof *bytes);
    /* alltoall: D x D slots for each rank; allgather: the block for each;
     * scatter: the root endpoint's slots, a block for each; gather: one. */
    size_t send_size = c->kind == COLL_ALLTOALL ? P * D * block : c->kind == COLL_GATHER ? block : P * block;
    size_t recv_size = c->kind == COLL_ALLTOALL ? n * block : n * b;
    grain_ep_stage_t *send_stage, *recv_stage;
    unsigned char *send = scratch_take(q, send_size, &send_stage), *recv = scratch_take(q, recv_size, &recv_stage);
    grain_status_t st = GRAIN_OK;
    if (bytes == NULL || send == NULL || recv == NULL) {
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "endpoint collective: no memory for %zu bytes", send_size + recv_size);
        goto out;
    }
    size_t *send_bytes = bytes, *recv_bytes = bytes + P, max = c->kind == COLL_ALLTOALL ? D * block : block;
    for (size_t r = 0; r < P; r++) {
        if (c->kind == COLL_ALLGATHER || c->kind == COLL_GATHER) {
            send_bytes[r] = c->kind == COLL_ALLGATHER || (int)r == root_rank ? block : 0;
            for (size_t v = 0; v < D && (c->kind == COLL_ALLGATHER || r == 0); v++)
                memcpy(send + (c->kind == COLL_ALLGATHER ? r * block : 0) + v * b, t->parts[v], b);
        } else if (c->kind == COLL_SCATTER) {
            send_bytes[r] = g->my_pe == root_rank ? block : 0;
        } else { /* alltoall: [dest rank][source vdev][dest vdev] */
            send_bytes[r] = D * block;
            for (size_t v = 0; v < D; v++)
                for (size_t w = 0; w < D; w++)
                    memcpy(send + r * D * block + (v * D + w) * b, (unsigned char *)t->parts[v] + (r * D + w) * b, b);
        }
    }
    if (c->kind == COLL_SCATTER && g->my_pe == root_rank)
        memcpy(send, t->parts[c->root % (int)D], n * b);
    st = grain_alltoallv(g, send, send_bytes, max, recv, recv_bytes);
    if (st == GRAIN_OK && c->kind == COLL_ALLTOALL) { /* from [source rank][source vdev][dest vdev] */
        for (size_t s = 0; s < P; s++)
            for (size_t v = 0; v < D; v++)
                for (size_t w = 0; w < D; w++)
                    memcpy(out + w * n * b + (s * D + v) * b, recv + s * D * block + (v * D + w) * b, b);
    } else if (st == GRAIN_OK) {
        memcpy(out, recv, c->kind == COLL_SCATTER ? block : n * b);
    }
out:
    free(bytes);
    scratch_give(t, send, send_stage, 0);
    scratch_give(t, recv, recv_stage, 0);
    return st;
}

/* The leader's part: the rank's parts combined, the ranks' collective. */
static result_t *lead(grain_cmdq_t *q, unsigned departed, const coll_t *c, uint64_t key)
{
    grain_ep_team_t *t = q->team;
    grain_t *g = q->grain;
    /* A broadcast that fits the agreement rides with it.  Where the root is
     * a rank's only endpoint, the ranks' broadcast takes its part as it is:
     * no endpoint of that rank reads the result. */
    int root_rank = c->root / (int)t->devices;
    int riding = c->kind == COLL_BROADCAST && !c->messages && c->count <= A_CARRY_BYTES;
    int from_part = c->kind == COLL_BROADCAST && !c->messages && !riding && root_rank == g->my_pe && t->devices == 1;
    size_t size = from_part ? 0 : result_size(c, (size_t)q->count, t->devices);
    result_t *r = new_result(q, size);
    grain_status_t st = r->kept ? grain_fail(GRAIN_ERR_NO_MEMORY, "endpoint collective: no memory for %zu bytes", size)
                                : GRAIN_OK;
    const void *carry = riding && root_rank == g->my_pe ? t->parts[c->root % (int)t->devices] : NULL;
    st = settle(q, departed, st, key, c->kind == COLL_MESSAGES_DONE, carry, riding ? size : 0,
                riding && !r->kept ? r->data : NULL);
    if (r->kept || c->messages || c->kind == COLL_MESSAGES_DONE) {
        r->status = r->kept ? r->status : st;
        if (!r->kept && st != GRAIN_OK)
            snprintf(r->why, sizeof r->why, "%s", grain_error_message(NULL));
        return r;
    }
    if (st == GRAIN_OK && (c->kind == COLL_ALLREDUCE || c->kind == COLL_REDUCE)) {
        memcpy(r->data, t->parts[0], size);
        for (unsigned v = 1; v < t->devices; v++)
            reduce_into(r->data, t->parts[v], c->count, c->dtype, c->op);
        st = grain_allreduce(g, r->data, c->count, c->dtype, c->op);
    } else if (st == GRAIN_OK && c->kind == COLL_BROADCAST && !riding) {
        if (root_rank == g->my_pe && !from_part)
            memcpy(r->data, t->parts[c->root % (int)t->devices], size);
        st = grain_broadcast(g, from_part ? t->parts[0] : r->data, c->count, root_rank);
    } else if (st == GRAIN_OK && c->kind != COLL_BARRIER && c->kind != COLL_BROADCAST) {
        st = exchange(q, c, r->data);
    }
    r->status = st;
    if (st != GRAIN_OK)
        snprintf(r->why, sizeof r->why, "%s", grain_error_message(NULL));
    return r;
}

/* Hands this endpoint's part to the team and waits for the leader (or
 * leads); returns the result, which the caller gives back with put_result. */
static result_t *gather(grain_cmdq_t *q, const coll_t *c, uint64_t key, void *part, grain_status_t st)
{
    grain_ep_team_t *t = q->team;
    pthread_mutex_lock(&t->lock);
    t->keys[q->vdev] = key;
    t->parts[q->vdev] = part;
    t->statuses[q->vdev] = st;
    uint64_t gen = t->generation;
    t->arrived++;
    while (t->generation == gen) {
        if (!t->leading && t->arrived + t->departed == t->devices) {
            t->leading = 1;
            unsigned departed = t->departed;
            pthread_mutex_unlock(&t->lock);
            result_t *r = lead(q, departed, c, key);
            pthread_mutex_lock(&t->lock);
            if (!r->kept)
                r->readers = t->arrived;
            t->result = r;
            t->arrived = 0;
            t->leading = 0;
            t->generation++;
            pthread_cond_broadcast(&t->cond);
            break;
        }
        pthread_cond_wait(&t->cond, &t->lock);
    }
    result_t *r = t->result; /* no later collective can start before this endpoint arrives at it */
    pthread_mutex_unlock(&t->lock);
    return r;
}

static void put_result(grain_ep_team_t *t, result_t *r)
{
    pthread_mutex_lock(&t->lock);
    if (!r->kept && --r->readers == 0) {
        if (t->result == r)
            t->result = NULL;
        drop_result(t, r);
    }
    pthread_mutex_unlock(&t->lock);
}

/* The status an endpoint returns from a collective: its own refusal's, or
 * the collective's (its sentence kept, logged once by the leader). */
static grain_status_t finish(grain_cmdq_t *q, grain_status_t mine, const char *my_why, result_t *r)
{
    grain_status_t st = mine != GRAIN_OK ? mine : r->status;
    if (mine != GRAIN_OK && my_why[0] != '\0')
        grain_error_keep(my_why); /* refused before the collective: leading may have left another sentence */
    else if (st != GRAIN_OK)
        grain_error_keep(r->kept ? "endpoint collective: no memory for the result" : r->why);
    put_result(q->team, r);
    return st;
}

/* What one endpoint brings to a collective and takes from it, in bytes of
 * its memory from the call's offset: the part it copies out before, and the
 * range it copies in after, from byte `from` of the result. */
typedef struct side {
    size_t out_at, out_bytes;
    size_t in_at, in_bytes, from;
    unsigned needs;
} side_t;

static uint64_t key_of_coll(const coll_t *c)
{
    return key_of((uint64_t)c->kind | (uint64_t)c->messages << 8, c->count,
                  (uint64_t)c->dtype << 8 | (uint64_t)c->op, (uint64_t)(int64_t)c->root);
}

/* A collective whose data moves as messages: the ranks agree on it (as
 * every collective does, so that one some endpoint never calls fails
 * everywhere), the endpoints run its schedule, and the ranks agree once
 * more, on how it went: every endpoint returns the same status. */
static grain_status_t by_messages(grain_cmdq_t *q, const char *what, grain_ep_mem_t *mem, size_t offset,
                                  const coll_t *c, size_t end, unsigned needs, grain_status_t st)
{
    if (st == GRAIN_OK)
        st = grain_ep_mem_check(q, mem, offset, end, needs, what);
    char why[1024] = "";
    if (st != GRAIN_OK)
        snprintf(why, sizeof why, "%s", grain_error_message(NULL));
    result_t *r = gather(q, c, key_of_coll(c), NULL, st);
    if (st != GRAIN_OK || r->status != GRAIN_OK)
        return finish(q, st, why, r);
    put_result(q->team, r);
    if (c->kind == COLL_BROADCAST)
        st = grain_ep_tree_broadcast(q, mem, offset, c->count, c->root);
    else if (c->kind == COLL_ALLGATHER)
        st = grain_ep_ring_allgather(q, mem, offset, c->count);
    else if (c->kind == COLL_GATHER || c->kind == COLL_SCATTER)
        st = grain_ep_root_slots(q, mem, offset, c->count, c->root, c->kind == COLL_SCATTER);
    else if (c->kind == COLL_ALLTOALL)
        st = grain_ep_pairwise_alltoall(q, mem, offset, c->count);
    else if (c->kind == COLL_REDUCE)
        st = grain_ep_tree_reduce(q, mem, offset, c->count, c->dtype, c->op, c->root);
    else
        st = grain_ep_ring_allreduce(q, mem, offset, c->count, c->dtype, c->op);
    if (st != GRAIN_OK)
        snprintf(why, sizeof why, "%s", grain_error_message(NULL));
    coll_t done = {.kind = COLL_MESSAGES_DONE, .root = INT_MIN};
    return finish(q, st, why, gather(q, &done, key_of_coll(&done), NULL, st));
}

/* Whether a collective of `bytes` (a broadcast's or a reduction's, a slot
 * collective's slot) moves as messages: GRAIN_EP_COLL_MESSAGES's choice, the same on every
 * rank with the same settings (a rank that differs makes the agreement
 * fail, naming different arguments). */
static int as_messages(const grain_cmdq_t *q, size_t bytes)
{
    size_t from = q->grain->config.ep_coll_messages;
    return from > 0 && bytes >= from && q->count > 1;
}

/* An endpoint's collective: its checks, its part out, the gathering, the
 * result in.  `st` is the refusal of its arguments, if any. */
static grain_status_t run(grain_cmdq_t *q, const char *what, grain_ep_mem_t *mem, size_t offset, const coll_t *c,
                          side_t s, grain_status_t st)
{
    size_t end = s.out_at + s.out_bytes > s.in_at + s.in_bytes ? s.out_at + s.out_bytes : s.in_at + s.in_bytes;
    if (c->messages)
        return by_messages(q, what, mem, offset, c, end, s.needs, st);
    if (st == GRAIN_OK && c->kind != COLL_BARRIER)
        st = grain_ep_mem_check(q, mem, offset, end, s.needs, what);
    void *own = NULL;
    unsigned char *part = NULL;
    if (st == GRAIN_OK && s.out_bytes > 0 &&
        (part = grain_ep_mem_staging(mem, offset + s.out_at, s.out_bytes, &own)) == NULL)
        st = grain_fail(GRAIN_ERR_NO_MEMORY, "%s: no memory for %zu bytes", what, s.out_bytes);
    unsigned char *dev = mem != NULL ? (unsigned char *)mem->device + offset : NULL;
    if (st == GRAIN_OK && s.out_bytes > 0)
        st = q->bops->copy(q->backend, part, dev + s.out_at, s.out_bytes);
    char why[1024] = "";
    if (st != GRAIN_OK)
        snprintf(why, sizeof why, "%s", grain_error_message(NULL));
    result_t *r = gather(q, c, key_of_coll(c), part, st);
    if (st == GRAIN_OK && r->status == GRAIN_OK && s.in_bytes > 0)
        st = r->stage != NULL ? q->bops->copy(q->backend, dev + s.in_at, r->data + s.from, s.in_bytes)
                              : grain_ep_mem_in(q, mem, offset + s.in_at, r->data + s.from, s.in_bytes);
    free(own);
    return finish(q, st, why, r);
}

/* The checks every collective's scalar arguments pass. */
static grain_status_t check_args(const grain_cmdq_t *q, const char *what, size_t items, size_t item_bytes, int root)
{
    grain_status_t st = grain_ep_check_thread(q, what);
    if (st != GRAIN_OK)
        return st;
    if (item_bytes > 0 && items > SIZE_MAX / item_bytes)
        return grain_fail(GRAIN_ERR_INVALID, "%s: %zu items of %zu bytes overflow", what, items, item_bytes);
    if (root != INT_MIN && (root < 0 || root >= q->count))
        return grain_fail(GRAIN_ERR_INVALID, "%s: root endpoint %d; the job has endpoints 0 to %d", what, root,
                          q->count - 1);
    return GRAIN_OK;
}

static grain_status_t check_reduction(const char *what, grain_dtype_t dtype, grain_op_t op)
{
    if ((dtype != GRAIN_INT64 && dtype != GRAIN_UINT64 && dtype != GRAIN_DOUBLE) ||
        (op != GRAIN_SUM && op != GRAIN_MIN && op != GRAIN_MAX))
        return grain_fail(GRAIN_ERR_INVALID, "%s: type %d with operation %d; grain reduces GRAIN_INT64, "
                                             "GRAIN_UINT64 and GRAIN_DOUBLE with GRAIN_SUM, GRAIN_MIN and GRAIN_MAX",
                          what, (int)dtype, (int)op);
    return GRAIN_OK;
}

/* A call on the wrong thread takes no part: the endpoint's own thread will. */
#define ON_ITS_THREAD(q, what)                                                                                  \
    do {                                                                                                        \
        grain_status_t thread_st_ = grain_ep_check_thread(q, what);                                             \
        if (thread_st_ != GRAIN_OK)                                                                             \
            return thread_st_;                                                                                  \
    } while (0)

grain_status_t grain_ep_barrier(grain_cmdq_t *q)
{
    ON_ITS_THREAD(q, "grain_ep_barrier");
    coll_t c = {.kind = COLL_BARRIER, .root = INT_MIN};
    return run(q, "grain_ep_barrier", NULL, 0, &c, (side_t){0}, GRAIN_OK);
}

static grain_status_t reduction(grain_cmdq_t *q, const char *what, int kind, grain_ep_mem_t *mem, size_t offset,
                                size_t count, grain_dtype_t dtype, grain_op_t op, int root)
{
    ON_ITS_THREAD(q, what);
    grain_status_t st = check_args(q, what, count, 8, root);
    if (st == GRAIN_OK)
        st = check_reduction(what, dtype, op);
    int takes = kind == COLL_ALLREDUCE || q->id == root;
    coll_t c = {.kind = kind, .count = count, .dtype = dtype, .op = op, .root = root,
                .messages = count <= SIZE_MAX / 8 && as_messages(q, 8 * count)};
    side_t s = {.out_bytes = 8 * count, .in_bytes = takes ? 8 * count : 0,
                .needs = GRAIN_EP_READ | (takes ? GRAIN_EP_WRITE : 0)};
    return run(q, what, mem, offset, &c, st == GRAIN_OK ? s : (side_t){0}, st);
}

grain_status_t grain_ep_allreduce(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t count,
                                  grain_dtype_t dtype, grain_op_t op)
{
    return reduction(q, "grain_ep_allreduce", COLL_ALLREDUCE, mem, offset, count, dtype, op, INT_MIN);
}

grain_status_t grain_ep_reduce(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t count, grain_dtype_t dtype,
                               grain_op_t op, int root)
{
    return reduction(q, "grain_ep_reduce", COLL_REDUCE, mem, offset, count, dtype, op, root);
}

grain_status_t grain_ep_broadcast(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int root)
{
    const char *what = "grain_ep_broadcast";
    ON_ITS_THREAD(q, what);
    grain_status_t st = check_args(q, what, 1, bytes, root);
    int am_root = q->id == root;
    coll_t c = {.kind = COLL_BROADCAST, .count = bytes, .root = root, .messages = as_messages(q, bytes)};
    side_t s = {.out_bytes = am_root ? bytes : 0, .in_bytes = am_root ? 0 : bytes,
                .needs = am_root ? GRAIN_EP_READ : GRAIN_EP_WRITE};
    return run(q, what, mem, offset, &c, st == GRAIN_OK ? s : (side_t){0}, st);
}

/* The collectives of one slot an endpoint: `bytes` a slot, the slots in
 * endpoint order from the call's offset. */
static grain_status_t slots(grain_cmdq_t *q, const char *what, int kind, grain_ep_mem_t *mem, size_t offset,
                            size_t bytes, int root)
{
    ON_ITS_THREAD(q, what);
    size_t n = (size_t)q->count, mine = (size_t)q->id * bytes;
    grain_status_t st = check_args(q, what, n, bytes, root);
    int am_root = q->id == root;
    coll_t c = {.kind = kind, .count = bytes, .root = root, .messages = as_messages(q, bytes)};
    side_t s = {0};
    if (kind == COLL_ALLGATHER || kind == COLL_GATHER) {
        int takes = kind == COLL_ALLGATHER || am_root;
        s = (side_t){.out_at = mine, .out_bytes = bytes, .in_bytes = takes ? n * bytes : 0,
                     .needs = GRAIN_EP_READ | (takes ? GRAIN_EP_WRITE : 0)};
    } else if (kind == COLL_SCATTER) {
        s = (side_t){.out_bytes = am_root ? n * bytes : 0, .in_at = mine, .in_bytes = am_root ? 0 : bytes,
                     .from = q->vdev * bytes, .needs = am_root ? GRAIN_EP_READ : GRAIN_EP_WRITE};
    } else {
        s = (side_t){.out_bytes = n * bytes, .in_bytes = n * bytes, .from = q->vdev * n * bytes,
                     .needs = GRAIN_EP_READ | GRAIN_EP_WRITE};
    }
    return run(q, what, mem, offset, &c, st == GRAIN_OK ? s : (side_t){0}, st);
}

grain_status_t grain_ep_allgather(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes)
{
    return slots(q, "grain_ep_allgather", COLL_ALLGATHER, mem, offset, bytes, INT_MIN);
}

grain_status_t grain_ep_gather(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int root)
{
    return slots(q, "grain_ep_gather", COLL_GATHER, mem, offset, bytes, root);
}

grain_status_t grain_ep_scatter(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes, int root)
{
    return slots(q, "grain_ep_scatter", COLL_SCATTER, mem, offset, bytes, root);
}

grain_status_t grain_ep_alltoall(grain_cmdq_t *q, grain_ep_mem_t *mem, size_t offset, size_t bytes)
{
    return slots(q, "grain_ep_alltoall", COLL_ALLTOALL, mem, offset, bytes, INT_MIN);
}
