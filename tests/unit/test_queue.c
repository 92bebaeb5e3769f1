/*
 * The Gravel queue (producer side from grain/device/queue.h, consumer side
 * from runtime/queue_consumer.h) under many host producer and consumer
 * threads: every message arrives exactly once, full slots make producers
 * wait instead of dropping, wraparound works for sizes that are not powers of
 * two, and tickets are consumed in the order producers took them.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/queue_consumer.h"

#define ROWS 2u

typedef struct {
    grain_queue_t *q;
    unsigned id, n_slots_to_write, width;
    _Atomic unsigned *produced_done;
} producer_t;

typedef struct {
    grain_queue_t *q;
    unsigned producers;
    _Atomic unsigned *producers_done;
    /* seen[p][seq] counts deliveries of message seq of producer p */
    _Atomic unsigned char **seen;
    /* per consumer: the last ticket it processed (tickets must increase) */
    int order_ok;
    uint64_t processed;
} consumer_t;

/* Producer `id` writes slots of 1..width messages; message k of producer p
 * carries (p, k) so that the consumers can account for it. */
static void *produce(void *arg)
{
    producer_t *p = arg;
    unsigned seq = 0, r = p->id * 7919u + 1;
    for (unsigned s = 0; s < p->n_slots_to_write; s++) {
        r = r * 1103515245u + 12345u;
        unsigned count = 1 + (r >> 16) % p->width;
        grain_u64 ticket = grain_queue_reserve(p->q);
        grain_u64 *payload = grain_queue_payload(p->q, ticket);
        for (unsigned c = 0; c < count; c++) {
            payload[c] = p->id;
            payload[p->width + c] = seq++;
        }
        grain_queue_publish(p->q, ticket, count);
    }
    p->n_slots_to_write = seq; /* messages written, for the checker */
    atomic_fetch_add(p->produced_done, 1);
    return NULL;
}

static void *consume(void *arg)
{
    consumer_t *c = arg;
    grain_u64 last = 0;
    int first = 1;
    for (;;) {
        grain_u64 ticket;
        if (!grain_queue_try_claim(c->q, &ticket)) {
            if (atomic_load(c->producers_done) == c->producers &&
                atomic_load(GRAIN_A64(&c->q->read_idx)) == atomic_load(GRAIN_A64(&c->q->write_idx)))
                break;
            continue;
        }
        if (!first && ticket <= last)
            c->order_ok = 0;
        first = 0;
        last = ticket;
        while (!grain_queue_is_full(c->q, ticket)) {
        }
        unsigned count = grain_queue_count(c->q, ticket);
        grain_u64 *payload = grain_queue_payload(c->q, ticket);
        for (unsigned k = 0; k < count; k++)
            atomic_fetch_add(&c->seen[payload[k]][payload[c->q->width + k]], 1);
        c->processed += count;
        grain_queue_release(c->q, ticket);
    }
    return NULL;
}

static void run(unsigned nslots, unsigned width, unsigned n_prod, unsigned n_cons, unsigned slots_each)
{
    size_t bytes = grain_queue_bytes(nslots, width, ROWS);
    grain_queue_t *q = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    assert_non_null(q);
    memset(q, 0, bytes);
    grain_queue_init(q, nslots, width, ROWS);

    _Atomic unsigned done = 0;
    producer_t prod[16];
    consumer_t cons[16];
    pthread_t pt[16], ct[16];
    _Atomic unsigned char *seen[16];
    for (unsigned i = 0; i < n_prod; i++) {
        seen[i] = calloc((size_t)slots_each * width, 1);
        prod[i] = (producer_t){q, i, slots_each, width, &done};
    }
    for (unsigned i = 0; i < n_cons; i++) {
        cons[i] = (consumer_t){q, n_prod, &done, seen, 1, 0};
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
        processed += cons[i].processed;
    }
    assert_int_equal(processed, total);
    assert_int_equal(q->write_idx, (uint64_t)n_prod * slots_each);
    assert_int_equal(q->read_idx, q->write_idx);
    free(q);
}

static void test_one_slot_wraps(void **state)
{
    run(1, 4, 2, 1, 5000);
}

static void test_odd_sizes_many_threads(void **state)
{
    run(3, 5, 4, 3, 3000);
    run(7, 1, 3, 2, 3000);
}

static void test_large_queue(void **state)
{
    run(1000, 64, 3, 2, 1000);
}

static void test_full_queue_makes_producer_wait(void **state)
{
    size_t bytes = grain_queue_bytes(2, 4, ROWS);
    grain_queue_t *q = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    memset(q, 0, bytes);
    grain_queue_init(q, 2, 4, ROWS);
    for (int i = 0; i < 2; i++)
        grain_queue_publish(q, grain_queue_reserve(q), 1);
    assert_int_equal(q->full_waits, 0);
    _Atomic unsigned done = 0;
    producer_t p = {q, 0, 1, 1, &done};
    pthread_t t;
    pthread_create(&t, NULL, produce, &p); /* its slot is full: it must wait */
    struct timespec nap = {0, 20000000};
    nanosleep(&nap, NULL);
    assert_int_equal(atomic_load(&done), 0);
    grain_u64 ticket = ~0ull;
    assert_true(grain_queue_try_claim(q, &ticket));
    assert_int_equal(ticket, 0);
    grain_queue_release(q, ticket);
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&done), 1);
    assert_int_equal(q->full_waits, 1);
    free(q);
}

static void test_empty_queue_claims_nothing(void **state)
{
    size_t bytes = grain_queue_bytes(4, 8, ROWS);
    grain_queue_t *q = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    memset(q, 0, bytes);
    grain_queue_init(q, 4, 8, ROWS);
    grain_u64 ticket = ~0ull;
    assert_false(grain_queue_try_claim(q, &ticket));
    grain_u64 t = grain_queue_reserve(q);
    assert_true(grain_queue_try_claim(q, &ticket));
    assert_int_equal(ticket, t);
    assert_false(grain_queue_is_full(q, ticket)); /* reserved, not yet published */
    grain_queue_publish(q, t, 3);
    assert_true(grain_queue_is_full(q, ticket));
    assert_int_equal(grain_queue_count(q, ticket), 3);
    free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_queue_claims_nothing),
        cmocka_unit_test(test_full_queue_makes_producer_wait),
        cmocka_unit_test(test_one_slot_wraps),
        cmocka_unit_test(test_odd_sizes_many_threads),
        cmocka_unit_test(test_large_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
