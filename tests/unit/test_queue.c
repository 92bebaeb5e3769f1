/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device-to-host queue (producer side from grain/device/queue.h,
 * consumer side from runtime/messages/queue_consumer.h) in both protocols, under many
 * host producer and consumer threads: every message arrives exactly once,
 * full slots make producers wait instead of dropping, wraparound works for
 * sizes that are not powers of two, and tickets are consumed in the order
 * producers took them (per ring).  In the ring protocol each ring has one
 * reader, so a producer's messages also come out in the order it sent them.
 * Producers that reserve several tickets at once, many to a small ring,
 * check that a ring's waiters always leave one of them polling the host's
 * word (grain_queue_reserve_ring).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/messages/queue_consumer.h"

#define ROWS 2u

/* A queue in plain host memory; the producer state, device memory on a GPU,
 * is plain memory here too. */
typedef struct {
    grain_queue_t *q;
    grain_queue_desc_t d;
} test_queue_t;

static test_queue_t make_queue(unsigned protocol, unsigned nrings, unsigned nslots, unsigned width)
{
    grain_queue_geom_t g = grain_queue_geom(protocol, nrings, nslots, width, ROWS);
    size_t bytes = (grain_queue_bytes(g) + 63) & ~(size_t)63;
    test_queue_t t;
    t.q = aligned_alloc(64, bytes);
    assert_non_null(t.q);
    memset(t.q, 0, bytes);
    grain_queue_init(t.q, g);
    t.d = (grain_queue_desc_t){t.q, calloc(g.nrings, sizeof(grain_ring_prod_t)), g};
    assert_non_null(t.d.prod);
    return t;
}

static void free_queue(test_queue_t *t)
{
    free(t->d.prod);
    free(t->q);
}

static grain_u64 reserve(grain_queue_desc_t d, grain_u32 ring, grain_u32 n)
{
    return d.geom.protocol == GRAIN_QUEUE_PAPER ? grain_queue_reserve_paper(&d, n)
                                                : grain_queue_reserve_ring(&d, ring, n);
}

static void publish(grain_queue_desc_t d, grain_u32 ring, grain_u64 ticket, grain_u32 count)
{
    grain_queue_publish(d.shared, &d.geom, ring, ticket, count);
}

typedef struct {
    grain_queue_desc_t d;
    unsigned id, n_slots_to_write, width;
    unsigned tickets; /* the most one reservation takes, at most the ring's slots */
    _Atomic unsigned *produced_done;
} producer_t;

typedef struct {
    grain_queue_reader_t reader;
    unsigned producers;
    _Atomic unsigned *producers_done;
    /* seen[p][seq] counts deliveries of message seq of producer p */
    _Atomic unsigned char **seen;
    unsigned last_seq[16]; /* per producer: 1 + the last seq this consumer saw */
    grain_u64 last_ticket[64]; /* per ring: 1 + the last ticket this consumer took */
    int order_ok, fifo_ok;
    uint64_t processed;
} consumer_t;

/* Producer `id` writes slots of 1..width messages into ring id % nrings,
 * reserving 1..tickets slots at a time; message k of producer p carries
 * (p, k) so that consumers can account for it. */
static void *produce(void *arg)
{
    producer_t *p = arg;
    grain_u32 ring = grain_queue_ring_of(&p->d.geom, p->id);
    unsigned seq = 0, r = p->id * 7919u + 1;
    for (unsigned s = 0; s < p->n_slots_to_write;) {
        r = r * 1103515245u + 12345u;
        unsigned n = 1 + (r >> 8) % p->tickets;
        n = n < p->n_slots_to_write - s ? n : p->n_slots_to_write - s;
        grain_u64 first = reserve(p->d, ring, n);
        for (grain_u64 ticket = first; ticket < first + n; ticket++, s++) {
            r = r * 1103515245u + 12345u;
            unsigned count = 1 + (r >> 16) % p->width;
            grain_u64 *payload = grain_queue_payload(p->d.shared, &p->d.geom, ring, ticket);
            for (unsigned c = 0; c < count; c++) {
                payload[c] = p->id;
                payload[p->width + c] = seq++;
            }
            publish(p->d, ring, ticket, count);
        }
    }
    p->n_slots_to_write = seq; /* messages written, for the checker */
    atomic_fetch_add(p->produced_done, 1);
    return NULL;
}

static void *consume(void *arg)
{
    consumer_t *c = arg;
    grain_queue_t *q = c->reader.q;
    for (;;) {
        /* Producers done before the take that fails: nothing can be left. */
        int done = atomic_load(c->producers_done) == c->producers;
        grain_queue_slot_t s = {0, 0};
        if (!grain_queue_take(&c->reader, &s)) {
            if (done)
                break;
            sched_yield();
            continue;
        }
        if (s.ticket + 1 <= c->last_ticket[s.ring])
            c->order_ok = 0;
        c->last_ticket[s.ring] = s.ticket + 1;
        while (!grain_queue_is_full(q, s))
            sched_yield();
        unsigned count = grain_queue_count(q, s);
        const grain_u64 *payload = grain_queue_slot_payload(q, s);
        for (unsigned k = 0; k < count; k++) {
            grain_u64 prod = payload[k], seq = payload[q->geom.width + k];
            atomic_fetch_add(&c->seen[prod][seq], 1);
            if (seq + 1 <= c->last_seq[prod])
                c->fifo_ok = 0;
            c->last_seq[prod] = (unsigned)seq + 1;
        }
        c->processed += count;
        grain_queue_done(&c->reader, s);
    }
    return NULL;
}

static void run(unsigned protocol, unsigned nrings, unsigned nslots, unsigned width, unsigned n_prod,
                unsigned n_cons, unsigned slots_each, unsigned tickets)
{
    test_queue_t tq = make_queue(protocol, nrings, nslots, width);
    _Atomic unsigned done = 0;
    producer_t prod[16];
    consumer_t cons[16];
    pthread_t pt[16], ct[16];
    _Atomic unsigned char *seen[16];
    for (unsigned i = 0; i < n_prod; i++) {
        seen[i] = calloc((size_t)slots_each * width, 1);
        prod[i] = (producer_t){tq.d, i, slots_each, width, tickets, &done};
    }
    for (unsigned i = 0; i < n_cons; i++) {
        cons[i] = (consumer_t){.producers = n_prod, .producers_done = &done, .seen = seen,
                               .order_ok = 1, .fifo_ok = 1};
        assert_true(grain_queue_reader_init(&cons[i].reader, tq.q, i, n_cons));
        pthread_create(&ct[i], NULL, consume, &cons[i]);
    }
    for (unsigned i = 0; i < n_prod; i++)
        pthread_create(&pt[i], NULL, produce, &prod[i]);
    for (unsigned i = 0; i < n_prod; i++)
        pthread_join(pt[i], NULL);
    for (unsigned i = 0; i < n_cons; i++)
        pthread_join(ct[i], NULL);

    uint64_t total = 0, processed = 0;
    for (unsigned i = 0; i < n_prod; i++) {
        for (unsigned k = 0; k < prod[i].n_slots_to_write; k++)
            assert_int_equal(seen[i][k], 1); /* no loss, no duplicate */
        for (unsigned k = prod[i].n_slots_to_write; k < slots_each * width; k++)
            assert_int_equal(seen[i][k], 0);
        total += prod[i].n_slots_to_write;
        free(seen[i]);
    }
    for (unsigned i = 0; i < n_cons; i++) {
        assert_true(cons[i].order_ok);
        if (protocol == GRAIN_QUEUE_RING)
            assert_true(cons[i].fifo_ok);
        processed += cons[i].processed;
        grain_queue_reader_destroy(&cons[i].reader);
    }
    assert_int_equal(processed, total);
    if (protocol == GRAIN_QUEUE_PAPER) {
        assert_int_equal(tq.q->write_idx, (uint64_t)n_prod * slots_each);
        assert_int_equal(tq.q->read_idx, tq.q->write_idx);
    } else {
        uint64_t reserved = 0;
        for (unsigned r = 0; r < tq.d.geom.nrings; r++) {
            reserved += tq.d.prod[r].reserved;
            assert_int_equal(grain_ring_ctrl(tq.q, &tq.d.geom, r)->consumed, tq.d.prod[r].reserved);
        }
        assert_int_equal(reserved, (uint64_t)n_prod * slots_each);
    }
    free_queue(&tq);
}

static void test_one_slot_wraps(void **state)
{
    run(GRAIN_QUEUE_PAPER, 1, 1, 4, 2, 1, 5000, 1);
    run(GRAIN_QUEUE_RING, 1, 1, 4, 2, 1, 5000, 1);
}

static void test_odd_sizes_many_threads(void **state)
{
    run(GRAIN_QUEUE_PAPER, 1, 3, 5, 4, 3, 3000, 1);
    run(GRAIN_QUEUE_PAPER, 1, 7, 1, 3, 2, 3000, 1);
    /* rings shared by producers, readers owning several rings, one idle reader */
    run(GRAIN_QUEUE_RING, 3, 3, 5, 7, 2, 3000, 1);
    run(GRAIN_QUEUE_RING, 2, 7, 1, 3, 3, 3000, 1);
}

static void test_large_queue(void **state)
{
    run(GRAIN_QUEUE_PAPER, 1, 1000, 64, 3, 2, 1000, 1);
    run(GRAIN_QUEUE_RING, 5, 200, 64, 10, 2, 1000, 1);
}

/* Reservations of up to a whole ring, as a work-group's sends take them,
 * by more producers than a small ring has slots. */
static void test_several_tickets_a_reservation(void **state)
{
    run(GRAIN_QUEUE_PAPER, 1, 4, 3, 4, 2, 2000, 4);
    run(GRAIN_QUEUE_RING, 2, 4, 3, 8, 2, 3000, 4);
    run(GRAIN_QUEUE_RING, 1, 3, 2, 6, 1, 3000, 3);
}

/* Two slots are published and none taken; a third reservation must wait
 * until a reader hands one back, and it is counted as a full-queue wait. */
static void full_queue_makes_producer_wait(unsigned protocol)
{
    test_queue_t tq = make_queue(protocol, 1, 2, 4);
    for (int i = 0; i < 2; i++)
        publish(tq.d, 0, reserve(tq.d, 0, 1), 1);
    assert_int_equal(tq.d.prod->full_waits, 0);
    _Atomic unsigned done = 0;
    producer_t p = {tq.d, 0, 1, 1, 1, &done};
    pthread_t t;
    pthread_create(&t, NULL, produce, &p); /* its slot is full: it must wait */
    struct timespec nap = {0, 20000000};
    nanosleep(&nap, NULL);
    assert_int_equal(atomic_load(&done), 0);
    grain_queue_reader_t r;
    assert_true(grain_queue_reader_init(&r, tq.q, 0, 1));
    grain_queue_slot_t s = {0, 0};
    assert_true(grain_queue_take(&r, &s));
    assert_int_equal(s.ticket, 0);
    grain_queue_done(&r, s);
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&done), 1);
    assert_int_equal(tq.d.prod->full_waits, 1);
    grain_queue_reader_destroy(&r);
    free_queue(&tq);
}

static void test_full_queue_makes_producer_wait(void **state)
{
    full_queue_makes_producer_wait(GRAIN_QUEUE_PAPER);
    full_queue_makes_producer_wait(GRAIN_QUEUE_RING);
}

static void test_empty_queue_takes_nothing(void **state)
{
    test_queue_t tq = make_queue(GRAIN_QUEUE_PAPER, 1, 4, 8);
    grain_queue_reader_t r;
    assert_true(grain_queue_reader_init(&r, tq.q, 0, 1));
    grain_queue_slot_t s = {0, 0};
    assert_false(grain_queue_take(&r, &s));
    grain_u64 t = reserve(tq.d, 0, 1);
    /* the paper's reader claims a reserved ticket before it is published */
    assert_true(grain_queue_take(&r, &s));
    assert_int_equal(s.ticket, t);
    assert_false(grain_queue_is_full(tq.q, s));
    publish(tq.d, 0, t, 3);
    assert_true(grain_queue_is_full(tq.q, s));
    assert_int_equal(grain_queue_count(tq.q, s), 3);
    grain_queue_reader_destroy(&r);
    free_queue(&tq);

    /* the ring reader takes only published slots, of the rings it owns */
    tq = make_queue(GRAIN_QUEUE_RING, 3, 4, 8);
    grain_queue_reader_t mine, other;
    assert_true(grain_queue_reader_init(&mine, tq.q, 1, 2)); /* ring 1 */
    assert_true(grain_queue_reader_init(&other, tq.q, 0, 2)); /* rings 0 and 2 */
    t = reserve(tq.d, 1, 1);
    assert_false(grain_queue_take(&mine, &s));
    publish(tq.d, 1, t, 2);
    assert_false(grain_queue_take(&other, &s));
    assert_true(grain_queue_take(&mine, &s));
    assert_int_equal(s.ring, 1);
    assert_int_equal(grain_queue_count(tq.q, s), 2);
    grain_queue_done(&mine, s);
    assert_false(grain_queue_take(&mine, &s));
    grain_queue_reader_destroy(&mine);
    grain_queue_reader_destroy(&other);
    free_queue(&tq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_queue_takes_nothing),
        cmocka_unit_test(test_full_queue_makes_producer_wait),
        cmocka_unit_test(test_one_slot_wraps),
        cmocka_unit_test(test_odd_sizes_many_threads),
        cmocka_unit_test(test_large_queue),
        cmocka_unit_test(test_several_tickets_a_reservation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
