/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-destination packing: capacity, the three flush causes, sequence
 * numbers, counts per destination, and waiting for a returned buffer. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "runtime/messages/packer.h"

#define MAX_SENT 64

typedef struct {
    grain_outbuf_t *bufs[MAX_SENT];
    grain_wire_hdr_t hdrs[MAX_SENT];
    int n;
    int release; /* hand buffers back at once, as a fast transport would */
} sink_t;

static void sink_send(void *arg, grain_outbuf_t *b)
{
    sink_t *s = arg;
    assert_true(s->n < MAX_SENT);
    s->bufs[s->n] = b;
    memcpy(&s->hdrs[s->n], b->data, sizeof s->hdrs[0]);
    s->n++;
    if (s->release)
        grain_packer_release(b);
}

static _Atomic uint64_t seq[4];

static const uint64_t inc = GRAIN_HDR(GRAIN_CMD_INC64, 0, 1);

static void test_full_flush_at_capacity(void **state)
{
    memset(seq, 0, sizeof seq);
    sink_t s = {.release = 1};
    grain_packer_t p;
    /* 24-byte header + room for 5 increments (8 B) before less than the
     * largest message (32 B) remains. */
    assert_int_equal(grain_packer_init(&p, 0, 2, 24 + 8 * 8, 1, 1000, seq, NULL, sink_send, &s), GRAIN_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(grain_packer_append(&p, 1, inc, 8 * i, 0, 0, 0, 0), GRAIN_OK);
    assert_int_equal(s.n, 0);
    assert_int_equal(grain_packer_append(&p, 1, inc, 64, 0, 0, 0, 0), GRAIN_OK);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.hdrs[0].count, 5);
    assert_int_equal(s.hdrs[0].bytes, 24 + 40);
    assert_int_equal(s.hdrs[0].src_pe, 0);
    assert_int_equal(s.hdrs[0].seq, 0);
    assert_int_equal(p.stats.flushes[GRAIN_FLUSH_FULL], 1);
    assert_int_equal(p.dest_msgs[1], 5);
    grain_packer_destroy(&p);
}

static void test_timeout_and_quiet(void **state)
{
    memset(seq, 0, sizeof seq);
    sink_t s = {.release = 1};
    grain_packer_t p;
    assert_int_equal(grain_packer_init(&p, 1, 3, 1024, 3, 1000, seq, NULL, sink_send, &s), GRAIN_OK);
    grain_packer_append(&p, 0, inc, 0, 0, 0, 0, 5000);
    grain_packer_append(&p, 2, GRAIN_HDR(GRAIN_CMD_AM, 3, 2), 1, 2, 0, 0, 5500);
    grain_packer_flush_expired(&p, 5999); /* neither is 1000 ns old */
    assert_int_equal(s.n, 0);
    grain_packer_flush_expired(&p, 6000);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.bufs[0]->dest, 0);
    assert_int_equal(p.stats.flushes[GRAIN_FLUSH_TIMEOUT], 1);
    grain_packer_flush_all(&p, GRAIN_FLUSH_QUIET);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.bufs[1]->dest, 2);
    assert_int_equal(s.hdrs[1].bytes, 24 + 24);
    assert_int_equal(p.stats.flushes[GRAIN_FLUSH_QUIET], 1);
    grain_packer_flush_all(&p, GRAIN_FLUSH_QUIET); /* nothing left: nothing sent */
    assert_int_equal(s.n, 2);
    grain_packer_append(&p, 0, inc, 8, 0, 0, 0, 7000);
    grain_packer_flush_all(&p, GRAIN_FLUSH_QUIET);
    assert_int_equal(s.hdrs[2].seq, 1); /* second buffer to rank 0 */
    assert_int_equal(p.stats.buffers, 3);
    assert_int_equal(p.stats.msgs, 3);
    grain_packer_destroy(&p);
}

static void test_rejects_unencodable(void **state)
{
    sink_t s = {.release = 1};
    grain_packer_t p;
    assert_int_equal(grain_packer_init(&p, 0, 2, 256, 1, 1000, seq, NULL, sink_send, &s), GRAIN_OK);
    assert_int_equal(grain_packer_append(&p, 1, GRAIN_HDR(0, 0, 1), 0, 0, 0, 0, 0), GRAIN_ERR_BAD_MESSAGE);
    assert_int_equal(grain_packer_append(&p, 1, inc, 1ull << 60, 0, 0, 0, 0), GRAIN_ERR_BAD_MESSAGE);
    grain_packer_destroy(&p);
    assert_int_equal(grain_packer_init(&p, 0, 2, 40, 1, 1000, seq, NULL, sink_send, &s), GRAIN_ERR_CONFIG);
}

static void *release_later(void *arg)
{
    struct timespec nap = {0, 20000000};
    nanosleep(&nap, NULL);
    grain_packer_release(arg);
    return NULL;
}

static void test_waits_for_a_returned_buffer(void **state)
{
    sink_t s = {.release = 0};
    grain_packer_t p;
    assert_int_equal(grain_packer_init(&p, 0, 2, 72, 1, 1000, seq, NULL, sink_send, &s), GRAIN_OK);
    for (int i = 0; i < 3; i++) /* 24 + 3 x 8 leaves less than 32 of 72: full after 3 */
        grain_packer_append(&p, 1, inc, 0, 0, 0, 0, 0);
    assert_int_equal(s.n, 1);
    pthread_t t;
    pthread_create(&t, NULL, release_later, s.bufs[0]);
    grain_packer_append(&p, 1, inc, 0, 0, 0, 0, 0); /* blocks until the release */
    pthread_join(t, NULL);
    assert_int_equal(p.stats.buffer_waits, 1);
    grain_packer_flush_all(&p, GRAIN_FLUSH_QUIET);
    assert_int_equal(s.n, 2);
    assert_ptr_equal(s.bufs[1], s.bufs[0]);
    grain_packer_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_flush_at_capacity),
        cmocka_unit_test(test_timeout_and_quiet),
        cmocka_unit_test(test_rejects_unencodable),
        cmocka_unit_test(test_waits_for_a_returned_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
