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

#include "grain/device/apply.h"
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
    /* 24-byte header + room for a run of 7 increments (8 B and 4 B each,
     * 8 B a pair) before less than the largest message (32 B) remains. */
    assert_int_equal(grain_packer_init(&p, 0, 2, 24 + 8 * 8, 1, 1000, seq, NULL, sink_send, &s), GRAIN_OK);
    for (int i = 0; i < 6; i++)
        assert_int_equal(grain_packer_append(&p, 1, inc, 8 * i, 0, 0, 0, 0), GRAIN_OK);
    assert_int_equal(s.n, 0);
    assert_int_equal(grain_packer_append(&p, 1, inc, 64, 0, 0, 0, 0), GRAIN_OK);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.hdrs[0].count, 7);
    assert_int_equal(s.hdrs[0].bytes, 24 + 40);
    assert_int_equal(s.hdrs[0].src_pe, 0);
    assert_int_equal(s.hdrs[0].seq, 0);
    assert_int_equal(p.stats.flushes[GRAIN_FLUSH_FULL], 1);
    assert_int_equal(p.dest_msgs[1], 7);
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

/* A partly filled buffer waits past the timeout while one of its
 * destination's buffers is in flight, up to GRAIN_FLUSH_PATIENCE timeouts;
 * it goes at the next check once that one returns.  Other destinations keep
 * the plain timeout. */
static void test_timeout_waits_for_one_in_flight(void **state)
{
    memset(seq, 0, sizeof seq);
    sink_t s = {.release = 0};
    grain_packer_t p;
    assert_int_equal(grain_packer_init(&p, 0, 3, 1024, 3, 1000, seq, NULL, sink_send, &s), GRAIN_OK);
    grain_packer_append(&p, 1, inc, 0, 0, 0, 0, 0);
    grain_packer_flush_all(&p, GRAIN_FLUSH_QUIET); /* in flight until released */
    grain_packer_append(&p, 1, inc, 8, 0, 0, 0, 10000);
    grain_packer_append(&p, 2, inc, 8, 0, 0, 0, 10000);
    grain_packer_flush_expired(&p, 11000);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.bufs[1]->dest, 2);
    grain_packer_flush_expired(&p, 10000 + GRAIN_FLUSH_PATIENCE * 1000 - 1);
    assert_int_equal(s.n, 2);
    grain_packer_flush_expired(&p, 10000 + GRAIN_FLUSH_PATIENCE * 1000);
    assert_int_equal(s.n, 3); /* waited long enough */
    assert_int_equal(s.bufs[2]->dest, 1);

    grain_packer_append(&p, 1, inc, 16, 0, 0, 0, 20000);
    grain_packer_flush_expired(&p, 21000);
    assert_int_equal(s.n, 3);
    grain_packer_release(s.bufs[0]);
    grain_packer_flush_expired(&p, 21000);
    assert_int_equal(s.n, 3); /* the one the patience sent is still out */
    grain_packer_release(s.bufs[2]);
    grain_packer_flush_expired(&p, 21000);
    assert_int_equal(s.n, 4);
    assert_int_equal(p.stats.flushes[GRAIN_FLUSH_TIMEOUT], 3);
    for (int i = 1; i < s.n; i++)
        if (i != 2)
            grain_packer_release(s.bufs[i]);
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

#define HEAP 4096
#define SIG(op, offset) ((op) | (uint64_t)(offset) << 8)

/* A buffer to rank 1, validated, applied by the host's walk and decoded as
 * the apply kernel decodes it (a message or run at each marked word), into
 * `host` and `device` (neither when NULL). */
static void receive_one(const uint8_t *buf, uint64_t heap_size, char *host, char *device)
{
    static grain_am_table_t am;
    const grain_wire_limits_t limits = {2, heap_size, 8, &am};
    const grain_wire_replies_t replies = {0};
    grain_wire_hdr_t h;
    memcpy(&h, buf, sizeof h);
    uint32_t marks[64];
    char why[256] = "";
    grain_wire_marks_t m = {marks, 1, 0, 0};
    assert_true(grain_wire_mark_words(grain_wire_words(h.bytes)) <= 64);
    if (grain_wire_validate(buf, h.bytes, 0, &limits, &m, why, sizeof why) != GRAIN_OK)
        fail_msg("a buffer refused: %s", why);
    assert_int_equal(m.staged, h.count);
    if (host == NULL)
        return;
    grain_wire_apply(buf, host, &am, &replies, 0);
    const uint64_t *words = (const uint64_t *)(buf + sizeof h);
    for (size_t j = 0; j < grain_wire_words(h.bytes); j++) {
        if (((marks[j / 32] >> (j % 32)) & 1u) == 0)
            continue;
        uint32_t cmd = (uint32_t)(words[j] & 0xff);
        if (cmd == GRAIN_CMD_RUN)
            grain_apply_run(device, words + j);
        else if (cmd == GRAIN_CMD_PUT64_SIGNAL)
            grain_apply_put_signal(device, words[j] >> 8, words[j + 1], words[j + 2], words[j + 3]);
        else
            grain_apply_msg(device, cmd, words[j] >> 8,
                            grain_cmd_valueless(cmd) ? 0 : words[j + 1]);
    }
}

static void receive_all(const sink_t *s, uint64_t heap_size, char *host, char *device)
{
    for (int b = 0; b < s->n; b++)
        receive_one(s->bufs[b]->data, heap_size, host, device);
}

/* Runs of every command, narrow and wide values, a run cut at its longest
 * and by other commands: the heap comes out as if each message were applied
 * alone, by the host's walk and by the apply kernel's decoding alike. */
static void test_runs_apply_like_messages(void **state)
{
    memset(seq, 0, sizeof seq);
    sink_t s = {.release = 0};
    grain_packer_t p;
    assert_int_equal(grain_packer_init(&p, 0, 2, 4096, 4, 1000, seq, NULL, sink_send, &s), GRAIN_OK);
    uint64_t m[40][5];
    unsigned n = 0;
#define MSG(cmd, off, val) (m[n][0] = GRAIN_HDR(cmd, 0, 1), m[n][1] = (off), m[n][2] = (val), m[n][3] = 0, m[n++][4] = 0)
    for (unsigned i = 0; i < 5; i++)
        MSG(GRAIN_CMD_INC64, 8 * (i % 3), 0);
    MSG(GRAIN_CMD_ADD64, 32, 7); /* alone: written as a message */
    m[n][0] = GRAIN_HDR(GRAIN_CMD_PUT64_SIGNAL, 0, 1), m[n][1] = 40, m[n][2] = 11, m[n][3] = SIG(GRAIN_SIGNAL_ADD, 48),
    m[n++][4] = 1;
    MSG(GRAIN_CMD_ADD64, 56, (uint64_t)-3); /* narrow */
    MSG(GRAIN_CMD_ADD64, 64, 0x7fffffff);
    MSG(GRAIN_CMD_ADD64, 56, (uint64_t)INT32_MIN);
    MSG(GRAIN_CMD_ADD32, 72, 5);
    MSG(GRAIN_CMD_ADD32, 76, 0xffffffffu);
    MSG(GRAIN_CMD_ADD64, 80, 1); /* one wide value widens the run */
    MSG(GRAIN_CMD_ADD64, 88, 1ull << 40);
    MSG(GRAIN_CMD_ADD64, 80, (uint64_t)-1 << 31 >> 1);
    for (unsigned i = 0; i < GRAIN_RUN_MAX + 1; i++) /* the longest run, then one more */
        MSG(GRAIN_CMD_PUT32, 100 + 4 * i, 0x01010101u * i);
    MSG(GRAIN_CMD_INC32, 200, 0);
    MSG(GRAIN_CMD_INC32, 200, 0);
    MSG(GRAIN_CMD_PUT64, 208, 0x1122334455667788ull);
    MSG(GRAIN_CMD_PUT64, 216, 5);
#undef MSG
    _Alignas(8) static char direct[HEAP], host[HEAP], device[HEAP];
    size_t plain = 0;
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(grain_packer_append(&p, 1, m[i][0], m[i][1], m[i][2], m[i][3], m[i][4], 0), GRAIN_OK);
        grain_apply_one(direct, NULL, 0, m[i][0], m[i][1], m[i][2], m[i][3], m[i][4]);
        plain += grain_wire_msg_size(GRAIN_HDR_CMD(m[i][0]));
    }
    grain_packer_flush_all(&p, GRAIN_FLUSH_QUIET);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.hdrs[0].count, n);
    uint64_t w0;
    memcpy(&w0, s.bufs[0]->data + sizeof(grain_wire_hdr_t), 8);
    assert_int_equal(w0, GRAIN_RUN_HDR(GRAIN_CMD_INC64, 5, 1, 0));
    /* 5 increments in 32 bytes, not 40; every run here is shorter than its messages. */
    assert_true(s.hdrs[0].bytes - sizeof(grain_wire_hdr_t) < plain);
    receive_all(&s, HEAP, host, device);
    assert_memory_equal(host, direct, HEAP);
    assert_memory_equal(device, direct, HEAP);
    grain_packer_destroy(&p);
}

/* A run holds offsets that agree above bit 32: another starts where they
 * differ, and the receiver checks each offset whole against its heap. */
static void test_run_offsets_above_4gib(void **state)
{
    memset(seq, 0, sizeof seq);
    sink_t s = {.release = 0};
    grain_packer_t p;
    assert_int_equal(grain_packer_init(&p, 0, 2, 1024, 4, 1000, seq, NULL, sink_send, &s), GRAIN_OK);
    const uint64_t put = GRAIN_HDR(GRAIN_CMD_PUT64, 0, 1), at[] = {(1ull << 32) - 8, 1ull << 32, (1ull << 32) + 8};
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(grain_packer_append(&p, 1, put, at[i], i, 0, 0, 0), GRAIN_OK);
    grain_packer_flush_all(&p, GRAIN_FLUSH_QUIET);
    uint64_t w[2];
    memcpy(w, s.bufs[0]->data + sizeof(grain_wire_hdr_t), sizeof w);
    assert_int_equal(w[0], GRAIN_CMD_PUT64 | at[0] << 8); /* alone: a message */
    assert_int_equal(w[1], 0);                           /* its value */
    uint64_t run;
    memcpy(&run, s.bufs[0]->data + sizeof(grain_wire_hdr_t) + 16, 8);
    assert_int_equal(run, GRAIN_RUN_HDR(GRAIN_CMD_PUT64, 2, 1, 1));
    receive_all(&s, 1ull << 33, NULL, NULL);
    static grain_am_table_t am;
    const grain_wire_limits_t small = {2, (1ull << 32) + 8, 8, &am};
    char why[256] = "";
    assert_int_equal(grain_wire_validate(s.bufs[0]->data, s.hdrs[0].bytes, 0, &small, NULL, why, sizeof why),
                     GRAIN_ERR_BAD_OFFSET);
    assert_non_null(strstr(why, "message 2 from rank 0 writes 8 bytes at heap offset 4294967304"));
    grain_packer_destroy(&p);
}

/* A value too wide for a run of 32-bit values widens the run where the
 * buffer has room for it, and else ends it there and starts the next: both
 * apply as the messages do. */
static void test_widening_runs(void **state)
{
    const uint64_t add = GRAIN_HDR(GRAIN_CMD_ADD64, 0, 1), wide = 1ull << 33;
    for (int roomy = 1; roomy >= 0; roomy--) {
        memset(seq, 0, sizeof seq);
        sink_t s = {.release = 0};
        grain_packer_t p;
        /* 88 bytes after the header: 4 narrow adds (40 bytes) leave too
         * little room to widen them and add a fifth (8 + 24 + 40). */
        assert_int_equal(grain_packer_init(&p, 0, 2, roomy ? 1024 : 24 + 88, 2, 1000, seq, NULL, sink_send, &s),
                         GRAIN_OK);
        _Alignas(8) static char direct[HEAP], host[HEAP], device[HEAP];
        memset(direct, 0, HEAP), memset(host, 0, HEAP), memset(device, 0, HEAP);
        const uint64_t values[] = {1, (uint64_t)-7, 3, (uint64_t)INT32_MIN, wide};
        for (unsigned i = 0; i < 5; i++) {
            assert_int_equal(grain_packer_append(&p, 1, add, 8 * i, values[i], 0, 0, 0), GRAIN_OK);
            grain_apply_one(direct, NULL, 0, add, 8 * i, values[i], 0, 0);
        }
        grain_packer_flush_all(&p, GRAIN_FLUSH_QUIET);
        assert_int_equal(s.n, 1);
        assert_int_equal(s.hdrs[0].count, 5);
        uint64_t w0;
        memcpy(&w0, s.bufs[0]->data + sizeof(grain_wire_hdr_t), 8);
        if (roomy) {
            assert_int_equal(w0, GRAIN_RUN_HDR(GRAIN_CMD_ADD64, 5, 0, 0));
            assert_int_equal(s.hdrs[0].bytes, 24 + 8 + 24 + 40);
        } else { /* the narrow run, then the wide add alone */
            assert_int_equal(w0, GRAIN_RUN_HDR(GRAIN_CMD_ADD64, 4, 1, 0));
            assert_int_equal(s.hdrs[0].bytes, 24 + 40 + 16);
        }
        receive_all(&s, HEAP, host, device);
        assert_memory_equal(host, direct, HEAP);
        assert_memory_equal(device, direct, HEAP);
        grain_packer_destroy(&p);
    }
}

/* The tests' random numbers: xorshift64. */
static void xorshift(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
}

/* Receives each buffer as it is sent, and hands it back. */
static char *sink_host, *sink_device;
static unsigned sink_buffers;

static void applying_send(void *arg, grain_outbuf_t *b)
{
    (void)arg;
    receive_one(b->data, HEAP, sink_host, sink_device);
    sink_buffers++;
    grain_packer_release(b);
}

/* Random messages of every kind the wire carries in runs, with a put with
 * signal now and then, offsets and values of every width, into buffers from
 * the smallest to a few KiB: whatever the runs, the heap comes out as the
 * messages applied one by one. */
static void test_random_runs(void **state)
{
    static const uint32_t cmds[] = {GRAIN_CMD_PUT32, GRAIN_CMD_PUT64, GRAIN_CMD_ADD32,
                                    GRAIN_CMD_ADD64, GRAIN_CMD_INC32, GRAIN_CMD_INC64};
    const size_t sizes[] = {24 + GRAIN_WIRE_MAX_MSG, 100, 256, 1000, 4096};
    _Alignas(8) static char direct[HEAP], host[HEAP], device[HEAP];
    uint64_t x = 88172645463325252ull;
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        memset(seq, 0, sizeof seq);
        memset(direct, 0, HEAP), memset(host, 0, HEAP), memset(device, 0, HEAP);
        sink_host = host, sink_device = device, sink_buffers = 0;
        grain_packer_t p;
        assert_int_equal(grain_packer_init(&p, 0, 2, sizes[k], 2, 1000, seq, NULL, applying_send, NULL), GRAIN_OK);
        unsigned same = 0;
        uint32_t cmd = GRAIN_CMD_INC64;
        for (unsigned i = 0; i < 3000; i++) {
            xorshift(&x);
            if (same == 0) { /* a stretch of one command, as a work-group sends */
                cmd = cmds[x % 6];
                same = 1 + (unsigned)(x >> 8) % 40;
            }
            same--;
            uint64_t width = grain_cmd_width(cmd), offset = (x >> 16) % (HEAP / width) * width;
            uint64_t value = (x >> 40) % 4 == 0 ? x * 0x9e3779b97f4a7c15ull : (uint64_t)(int64_t)(int16_t)(x >> 24);
            uint64_t hdr = GRAIN_HDR(cmd, 0, 1), sig = 0, sig_value = 0;
            if ((x >> 50) % 64 == 0) {
                hdr = GRAIN_HDR(GRAIN_CMD_PUT64_SIGNAL, 0, 1);
                offset &= ~(uint64_t)7;
                sig = SIG((x >> 45) & 1, (x >> 20) % (HEAP / 8) * 8);
                sig_value = x >> 33;
            }
            assert_int_equal(grain_packer_append(&p, 1, hdr, offset, value, sig, sig_value, 0), GRAIN_OK);
            grain_apply_one(direct, NULL, 0, hdr, offset, value, sig, sig_value);
        }
        grain_packer_flush_all(&p, GRAIN_FLUSH_QUIET);
        assert_int_equal(p.stats.msgs, 3000);
        assert_true(sink_buffers > 0);
        assert_memory_equal(host, direct, HEAP);
        assert_memory_equal(device, direct, HEAP);
        grain_packer_destroy(&p);
    }
}

/* Every byte a packer sends, in order. */
typedef struct {
    uint8_t bytes[1 << 20];
    size_t used;
} capture_t;

static void capture_send(void *arg, grain_outbuf_t *b)
{
    capture_t *c = arg;
    size_t n = ((const grain_wire_hdr_t *)(const void *)b->data)->bytes;
    assert_true(c->used + n <= sizeof c->bytes);
    memcpy(c->bytes + c->used, b->data, n);
    c->used += n;
    grain_packer_release(b);
}

/* Stretches of one command, as the aggregators take them from a slot (runs
 * kept in registers through a stretch), send the very bytes that the same
 * messages appended one by one send: runs cut at their longest, by offsets
 * that differ above bit 32, by a value too wide for a narrow run and by a
 * full buffer (and values at a narrow run's bounds and just past them),
 * into buffers from the smallest to a few KiB; an offset the
 * wire cannot carry stops a stretch where append refuses it.  Increments'
 * stretches have no values to read, as their slots' value rows are never
 * written, while one by one they come with random ones. */
static void test_stretches_pack_as_messages(void **state)
{
    static const uint32_t cmds[] = {GRAIN_CMD_PUT32, GRAIN_CMD_PUT64, GRAIN_CMD_ADD32,
                                    GRAIN_CMD_ADD64, GRAIN_CMD_INC32, GRAIN_CMD_INC64};
    const size_t sizes[] = {24 + GRAIN_WIRE_MAX_MSG, 100, 256, 1000, 4096};
    static _Atomic uint64_t seq_one[2], seq_stretch[2];
    static capture_t one, stretched;
    /* The narrow values' bounds and the first values past them. */
    static const uint64_t edges[] = {(uint64_t)INT32_MAX, (uint64_t)(int64_t)INT32_MIN, (uint64_t)INT32_MAX + 1,
                                     (uint64_t)((int64_t)INT32_MIN - 1)};
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        memset(seq_one, 0, sizeof seq_one), memset(seq_stretch, 0, sizeof seq_stretch);
        one.used = stretched.used = 0;
        grain_packer_t a, b;
        assert_int_equal(grain_packer_init(&a, 0, 2, sizes[k], 2, 1000, seq_one, NULL, capture_send, &one),
                         GRAIN_OK);
        assert_int_equal(grain_packer_init(&b, 0, 2, sizes[k], 2, 1000, seq_stretch, NULL, capture_send, &stretched),
                         GRAIN_OK);
        unsigned refused = 0;
        for (unsigned s = 0; s < 200; s++) {
            uint64_t offsets[40], values[40];
            xorshift(&x);
            uint32_t cmd = cmds[x % 6];
            size_t n = 1 + (x >> 8) % 40;
            uint64_t width = grain_cmd_width(cmd), high = (x >> 20) % 4 == 0 ? 1ull << 32 : 0;
            for (size_t i = 0; i < n; i++) {
                xorshift(&x);
                offsets[i] = ((x >> 16) % 64 * width) | ((x >> 60) == 0 ? high ^ 1ull << 32 : high);
                values[i] = (x >> 40) % 16 == 0 ? x * 0x9e3779b97f4a7c15ull
                            : (x >> 40) % 16 == 1 ? edges[(x >> 44) % 4]
                                                  : (uint64_t)(int64_t)(int16_t)(x >> 24);
                if ((x >> 52) % 128 == 0)
                    offsets[i] = GRAIN_WIRE_MAX_OFFSET + 1;
            }
            for (size_t i = 0; i < n; i++) {
                grain_status_t st = grain_packer_append(&a, 1, GRAIN_HDR(cmd, 0, 1), offsets[i], values[i], 0, 0, 0);
                assert_int_equal(st, offsets[i] > GRAIN_WIRE_MAX_OFFSET ? GRAIN_ERR_BAD_MESSAGE : GRAIN_OK);
            }
            uint64_t lost = 0;
            for (size_t i = 0; i < n;) {
                /* No value row to read for increments (grain_cmd_valueless). */
                const uint64_t *v = grain_cmd_valueless(cmd) ? NULL : values + i;
                i += grain_packer_append_stretch(&b, 1, cmd, offsets + i, v, n - i, 0, &lost);
                if (i < n) { /* stopped before the offset append refused */
                    assert_true(offsets[i] > GRAIN_WIRE_MAX_OFFSET);
                    i++;
                    refused++;
                }
            }
            assert_int_equal(lost, 0);
        }
        grain_packer_flush_all(&a, GRAIN_FLUSH_QUIET);
        grain_packer_flush_all(&b, GRAIN_FLUSH_QUIET);
        assert_true(refused > 0);
        assert_int_equal(b.stats.msgs, a.stats.msgs);
        assert_int_equal(stretched.used, one.used);
        assert_memory_equal(stretched.bytes, one.bytes, one.used);
        grain_packer_destroy(&a);
        grain_packer_destroy(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_flush_at_capacity),
        cmocka_unit_test(test_timeout_and_quiet),
        cmocka_unit_test(test_timeout_waits_for_one_in_flight),
        cmocka_unit_test(test_rejects_unencodable),
        cmocka_unit_test(test_waits_for_a_returned_buffer),
        cmocka_unit_test(test_runs_apply_like_messages),
        cmocka_unit_test(test_run_offsets_above_4gib),
        cmocka_unit_test(test_widening_runs),
        cmocka_unit_test(test_random_runs),
        cmocka_unit_test(test_stretches_pack_as_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
