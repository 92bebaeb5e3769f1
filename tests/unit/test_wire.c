/* SPDX-License-Identifier: BSD-3-Clause */
/* Message encoding, the receiver's validation (every bad field rejected with
 * a sentence naming it) and host apply. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "grain/device/apply.h"
#include "transports/wire.h"

#define HEAP 4096

static uint64_t am_sum;
static uint32_t am_src;

static void am_handler(char *heap, uint32_t src, uint64_t a0, uint64_t a1)
{
    (void)heap;
    am_src = src;
    am_sum += a0 * a1;
}

static grain_am_table_t am;
static const grain_wire_limits_t limits = {4, HEAP, 8, &am};

/* Replies the host's apply sends, and this rank's reply slots. */
static uint64_t reply_slots[16];
static struct {
    uint32_t dest;
    uint64_t ticket, value;
} sent[8];
static unsigned n_sent;

static void send_reply(void *arg, uint32_t dest, uint64_t ticket, uint64_t value)
{
    (void)arg;
    assert_true(n_sent < 8);
    sent[n_sent].dest = dest;
    sent[n_sent].ticket = ticket;
    sent[n_sent++].value = value;
}

/* Words of gets that do not wait, sent back as PUTs. */
static struct {
    uint32_t dest, cmd;
    uint64_t offset, value;
} puts_sent[4];
static unsigned n_puts;

static void send_put(void *arg, uint32_t dest, uint32_t cmd, uint64_t offset, uint64_t value)
{
    (void)arg;
    assert_true(n_puts < 4);
    puts_sent[n_puts].dest = dest;
    puts_sent[n_puts].cmd = cmd;
    puts_sent[n_puts].offset = offset;
    puts_sent[n_puts++].value = value;
}

/* Quiet requests the host's apply hands on: from rank 2, or from this rank
 * (0) for a reply after. */
static uint64_t quiets[4];
static uint32_t quiet_srcs[4];
static unsigned n_quiets;

static void quiet_request(void *arg, uint32_t src, uint64_t ticket)
{
    (void)arg;
    assert_true(n_quiets < 4);
    quiet_srcs[n_quiets] = src;
    quiets[n_quiets++] = ticket;
}

/* Only the quiets ledger answers. */
static void answer(void *arg, uint32_t dest, uint64_t ticket)
{
    (void)arg, (void)dest, (void)ticket;
    fail_msg("a buffer's walk answered a quiet request itself");
}

static const grain_wire_replies_t replies = {.slots = reply_slots,
                                             .self = 0,
                                             .send = send_reply,
                                             .put = send_put,
                                             .quiet = quiet_request,
                                             .answer = answer};

/* Builds a buffer from rank 2 with the given queue messages. */
static size_t build(uint8_t *buf, const uint64_t (*msgs)[3], unsigned n)
{
    size_t used = sizeof(grain_wire_hdr_t);
    for (unsigned i = 0; i < n; i++) {
        size_t k = grain_wire_encode(buf + used, msgs[i][0], msgs[i][1], msgs[i][2], 0, 0);
        assert_true(k > 0);
        used += k;
    }
    grain_wire_hdr_t h = {GRAIN_WIRE_MAGIC, 2, n, (uint32_t)used, 0};
    memcpy(buf, &h, sizeof h);
    return used;
}

static grain_status_t check(const uint8_t *buf, size_t len, char *why)
{
    return grain_wire_validate(buf, len, 2, &limits, NULL, why, 256);
}

static void test_sizes(void **state)
{
    assert_int_equal(grain_wire_msg_size(GRAIN_CMD_INC64), 8);
    assert_int_equal(grain_wire_msg_size(GRAIN_CMD_PUT32), 16);
    assert_int_equal(grain_wire_msg_size(GRAIN_CMD_AM), 24);
    assert_int_equal(grain_wire_msg_size(GRAIN_CMD_PUT64_SIGNAL), 32);
    assert_int_equal(grain_wire_msg_size(0), 0);
    assert_int_equal(grain_wire_msg_size(99), 0);
    uint8_t b[24];
    assert_int_equal(grain_wire_encode(b, GRAIN_HDR(GRAIN_CMD_PUT64, 0, 1), 1ull << 57, 0, 0, 0), 0);
}

static void test_valid_buffer_applies_every_command(void **state)
{
    _Alignas(8) char heap[HEAP] = {0};
    am.host[5] = am_handler;
    const uint64_t msgs[][3] = {
        {GRAIN_HDR(GRAIN_CMD_PUT64, 0, 1), 0, 0x1122334455667788ull},
        {GRAIN_HDR(GRAIN_CMD_PUT32, 0, 1), 8, 0xdeadbeef},
        {GRAIN_HDR(GRAIN_CMD_ADD64, 0, 1), 16, (uint64_t)-5},
        {GRAIN_HDR(GRAIN_CMD_ADD32, 0, 1), 24, 7},
        {GRAIN_HDR(GRAIN_CMD_INC64, 0, 1), 32, 0},
        {GRAIN_HDR(GRAIN_CMD_INC64, 0, 1), 32, 0},
        {GRAIN_HDR(GRAIN_CMD_INC32, 0, 1), HEAP - 4, 0},
        {GRAIN_HDR(GRAIN_CMD_AM, 5, 1), 6, 7},
    };
    uint8_t buf[512];
    char why[256];
    size_t len = build(buf, msgs, 8);
    assert_int_equal(check(buf, len, why), GRAIN_OK);
    am_sum = 0;
    grain_wire_apply(buf, heap, &am, &replies, 0);
    uint64_t u64;
    uint32_t u32;
    int64_t i64;
    memcpy(&u64, heap, 8);
    assert_int_equal(u64, 0x1122334455667788ull);
    memcpy(&u32, heap + 8, 4);
    assert_int_equal(u32, 0xdeadbeef);
    memcpy(&i64, heap + 16, 8);
    assert_int_equal(i64, -5);
    memcpy(&u32, heap + 24, 4);
    assert_int_equal(u32, 7);
    memcpy(&u64, heap + 32, 8);
    assert_int_equal(u64, 2);
    memcpy(&u32, heap + HEAP - 4, 4);
    assert_int_equal(u32, 1);
    assert_int_equal(am_sum, 42);
    assert_int_equal(am_src, 2);
}

/* The apply kernel's path: the buffer's words with the bitmap of message
 * starts that validation marks, decoded and applied by grain_apply_msg as
 * the kernel does, give the same heap; active messages for host handlers
 * run on the receiving thread, those for device handlers are left to the
 * kernel. */
static void test_marks_apply_like_the_host(void **state)
{
    _Alignas(8) char direct[HEAP] = {0}, staged[HEAP] = {0};
    am.host[5] = am_handler;
    am.device[0] = 1u << 9;
    const uint64_t msgs[][3] = {
        {GRAIN_HDR(GRAIN_CMD_PUT64, 0, 1), 0, 0x1122334455667788ull},
        {GRAIN_HDR(GRAIN_CMD_AM, 5, 1), 6, 7},
        {GRAIN_HDR(GRAIN_CMD_PUT32, 0, 1), 8, 0xdeadbeef},
        {GRAIN_HDR(GRAIN_CMD_ADD64, 0, 1), 16, (uint64_t)-5},
        {GRAIN_HDR(GRAIN_CMD_AM, 9, 1), 100, 200},
        {GRAIN_HDR(GRAIN_CMD_INC32, 0, 1), HEAP - 4, 0},
        {GRAIN_HDR(GRAIN_CMD_ADD32, 0, 1), 24, 7},
        {GRAIN_HDR(GRAIN_CMD_INC64, 0, 1), 32, 0},
    };
    _Alignas(8) uint8_t buf[512];
    char why[256];
    size_t len = build(buf, msgs, 8);
    uint32_t marks[4];
    memset(marks, 0xff, sizeof marks); /* validation clears them */
    const uint64_t *words = (const uint64_t *)(buf + sizeof(grain_wire_hdr_t));
    size_t n_words = grain_wire_words(len);
    /* Host apply: only the device handler's message is marked, where it
     * starts (after 2 + 3 + 2 + 2 words). */
    grain_wire_marks_t m = {marks, 0, 0, 0};
    assert_int_equal(grain_wire_validate(buf, len, 2, &limits, &m, why, sizeof why), GRAIN_OK);
    assert_int_equal(m.staged, 1);
    assert_int_equal(marks[0], 1u << 9);
    assert_int_equal(words[9], GRAIN_CMD_AM | (9u << 8));
    assert_int_equal(words[10], 100);
    assert_int_equal(words[11], 200);
    grain_wire_apply(buf, direct, &am, &replies, 0);
    am_sum = 0;
    m = (grain_wire_marks_t){marks, 1, 0, 0};
    assert_int_equal(grain_wire_validate(buf, len, 2, &limits, &m, why, sizeof why), GRAIN_OK);
    size_t n = m.staged;
    assert_int_equal(n, 7);
    grain_wire_apply(buf, staged, &am, &replies, 1);
    assert_int_equal(am_sum, 42);
    /* Decoded as the apply kernel decodes: a message at every marked word. */
    int device_ams = 0;
    size_t marked = 0;
    for (size_t i = 0; i < n_words; i++) {
        if (((marks[i / 32] >> (i % 32)) & 1u) == 0)
            continue;
        marked++;
        uint32_t cmd = (uint32_t)(words[i] & 0xff);
        if (cmd == GRAIN_CMD_AM) {
            assert_int_equal(words[i] >> 8, 9);
            device_ams++;
            continue;
        }
        grain_apply_msg(staged, cmd, words[i] >> 8,
                        grain_cmd_valueless(cmd) ? 0 : words[i + 1]);
    }
    assert_int_equal(marked, n);
    assert_int_equal(device_ams, 1);
    assert_memory_equal(direct, staged, HEAP);
    am.device[0] = 0;
}

static void expect_rejected(const uint8_t *buf, size_t len, grain_status_t want, const char *phrase)
{
    char why[256] = "";
    assert_int_equal(check(buf, len, why), want);
    if (strstr(why, phrase) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", why, phrase);
}

static void test_each_bad_field_is_rejected(void **state)
{
    am.host[5] = am_handler;
    const uint64_t good[][3] = {{GRAIN_HDR(GRAIN_CMD_ADD64, 0, 1), 64, 1}};
    uint8_t buf[256];
    size_t len = build(buf, good, 1);
    grain_wire_hdr_t h;

    expect_rejected(buf, 10, GRAIN_ERR_BAD_MESSAGE, "shorter than its header");

    memcpy(buf, &(uint32_t){0x12345678}, 4);
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, "no grain header");
    len = build(buf, good, 1);

    memcpy(&h, buf, sizeof h);
    h.src_pe = 3;
    memcpy(buf, &h, sizeof h);
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, "says it comes from rank 3");
    len = build(buf, good, 1);

    expect_rejected(buf, len - 1, GRAIN_ERR_BAD_MESSAGE, "bytes arrived");

    memcpy(&h, buf, sizeof h);
    h.count = 2;
    memcpy(buf, &h, sizeof h);
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, "ends inside message 1");

    const uint64_t bad_offset[][3] = {{GRAIN_HDR(GRAIN_CMD_PUT64, 0, 1), HEAP, 1}};
    len = build(buf, bad_offset, 1);
    expect_rejected(buf, len, GRAIN_ERR_BAD_OFFSET, "heap offset 4096");

    const uint64_t straddle[][3] = {{GRAIN_HDR(GRAIN_CMD_PUT64, 0, 1), HEAP - 4, 1}};
    len = build(buf, straddle, 1);
    expect_rejected(buf, len, GRAIN_ERR_BAD_OFFSET, "outside the 4096-byte symmetric heap");

    const uint64_t misaligned[][3] = {{GRAIN_HDR(GRAIN_CMD_ADD32, 0, 1), 6, 1}};
    len = build(buf, misaligned, 1);
    expect_rejected(buf, len, GRAIN_ERR_BAD_OFFSET, "misaligned");

    const uint64_t bad_handler[][3] = {{GRAIN_HDR(GRAIN_CMD_AM, 6, 1), 0, 0}};
    len = build(buf, bad_handler, 1);
    expect_rejected(buf, len, GRAIN_ERR_BAD_HANDLER, "handler 6");
    am.device[0] = 1u << 6; /* a device handler is registered too */
    assert_int_equal(check(buf, len, (char[256]){0}), GRAIN_OK);
    am.device[0] = 0;

    len = build(buf, good, 1);
    uint64_t w0 = (GRAIN_CMD_RUN + 1) | (64ull << 8);
    memcpy(buf + sizeof h, &w0, 8);
    char unknown[32];
    snprintf(unknown, sizeof unknown, "unknown command %u", GRAIN_CMD_RUN + 1);
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, unknown);

    len = build(buf, good, 1);
    memset(buf + len, 0, 8);
    memcpy(&h, buf, sizeof h);
    h.bytes = (uint32_t)len + 8;
    memcpy(buf, &h, sizeof h);
    expect_rejected(buf, len + 8, GRAIN_ERR_BAD_MESSAGE, "after its 1 messages");
}

/* A buffer from rank 2 of one run: its header word `w0`, then `n_words`
 * words, said to hold `count` messages. */
static size_t build_run(uint8_t *buf, uint64_t w0, const uint64_t *words, unsigned n_words, uint32_t count)
{
    size_t used = sizeof(grain_wire_hdr_t);
    memcpy(buf + used, &w0, 8);
    memcpy(buf + used + 8, words, 8u * n_words);
    used += 8u * (1 + n_words);
    grain_wire_hdr_t h = {GRAIN_WIRE_MAGIC, 2, count, (uint32_t)used, 0};
    memcpy(buf, &h, sizeof h);
    return used;
}

#define PAIR(a, b) ((uint64_t)(a) | (uint64_t)(b) << 32)

/* A run applies its entries; each of its fields is checked, and an offset
 * outside the heap is named by its message's number. */
static void test_runs(void **state)
{
    _Alignas(8) char heap[HEAP] = {0};
    _Alignas(8) uint8_t buf[512];
    /* Three narrow adds of 64 bits: offsets 8, 16, 8; values -2, 5, 1. */
    const uint64_t adds[] = {PAIR(8, 16), PAIR(8, 0), PAIR((uint32_t)-2, 5), PAIR(1, 0)};
    size_t len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_ADD64, 3, 1, 0), adds, 4, 3);
    char why[256] = "";
    uint32_t marks[1];
    grain_wire_marks_t m = {marks, 1, 0, 0};
    assert_int_equal(grain_wire_validate(buf, len, 2, &limits, &m, why, sizeof why), GRAIN_OK);
    assert_int_equal(m.staged, 3);
    assert_int_equal(marks[0], 1);
    grain_wire_apply(buf, heap, &am, &replies, 0);
    int64_t v[2];
    memcpy(v, heap + 8, sizeof v);
    assert_int_equal(v[0], -1);
    assert_int_equal(v[1], 5);

    const uint64_t incs[] = {PAIR(0, 8)};
    len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_AM, 2, 1, 0), incs, 1, 2);
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, "has command 7, 2 messages");
    len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_INC64, 1, 1, 0), incs, 1, 1);
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, "1 messages and");
    len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_INC64, GRAIN_RUN_MAX + 1, 1, 0), incs, 1, GRAIN_RUN_MAX + 1);
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, "2 to 16 messages");
    len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_INC64, 2, 1, 0) | 1u << 30, incs, 1, 2);
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, "reserved bits 0x20");
    len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_INC64, 2, 1, 0), incs, 1, 1);
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, "at message 0 of 1");
    len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_ADD64, 2, 0, 0), incs, 1, 2); /* its two values are missing */
    expect_rejected(buf, len, GRAIN_ERR_BAD_MESSAGE, "ends inside the run at message 0");
    const uint64_t outside[] = {PAIR(0, HEAP)};
    len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_INC64, 2, 1, 0), outside, 1, 2);
    expect_rejected(buf, len, GRAIN_ERR_BAD_OFFSET, "message 1 from rank 2 writes 8 bytes at heap offset 4096");
    const uint64_t misaligned[] = {PAIR(4, 0)};
    len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_INC64, 2, 1, 0), misaligned, 1, 2);
    expect_rejected(buf, len, GRAIN_ERR_BAD_OFFSET, "message 0 from rank 2 writes 8 bytes at heap offset 4");
    len = build_run(buf, GRAIN_RUN_HDR(GRAIN_CMD_INC32, 2, 1, 1), misaligned, 1, 2); /* 4 GiB up */
    expect_rejected(buf, len, GRAIN_ERR_BAD_OFFSET, "heap offset 4294967300");
}

/* A buffer from rank 2 of 32- and 16-byte messages, each row the arguments
 * of grain_wire_encode after the header's: (command, w1, w2, sig,
 * sig_value).  A put with signal's sig is its operation | its offset << 8;
 * a fetch's w1 its offset, w2 its operand, then the value compared and the
 * ticket; a reply's w1 its ticket >> 8 (slot and generation, as the replier
 * packs it), w2 its value. */
static size_t build_wide(uint8_t *buf, const uint64_t (*msgs)[5], unsigned n)
{
    size_t used = sizeof(grain_wire_hdr_t);
    for (unsigned i = 0; i < n; i++) {
        size_t k = grain_wire_encode(buf + used, GRAIN_HDR(msgs[i][0], 0, 1), msgs[i][1], msgs[i][2], msgs[i][3],
                                     msgs[i][4]);
        assert_int_equal(k, grain_wire_msg_size((uint32_t)msgs[i][0]));
        assert_true(k > 0);
        used += k;
    }
    grain_wire_hdr_t h = {GRAIN_WIRE_MAGIC, 2, n, (uint32_t)used, 0};
    memcpy(buf, &h, sizeof h);
    return used;
}

/* A buffer of the one wide-layout message `msg` is refused with `want`, the
 * reason saying `phrase`. */
static void expect_wide_rejected(const uint64_t (*msg)[5], grain_status_t want, const char *phrase)
{
    _Alignas(8) uint8_t buf[64];
    expect_rejected(buf, build_wide(buf, msg, 1), want, phrase);
}

#define SIGNAL(op, offset) ((op) | (uint64_t)(offset) << 8)

/* Data, then its signal: added to twice, then set; the same heap from the
 * host's apply and from the words the apply kernel decodes. */
static void test_put_signal(void **state)
{
    _Alignas(8) char host[HEAP] = {0}, staged[HEAP] = {0};
    const uint64_t msgs[][5] = {
        {GRAIN_CMD_PUT64_SIGNAL, 0, 11, SIGNAL(GRAIN_SIGNAL_ADD, 64), 1},
        {GRAIN_CMD_PUT64_SIGNAL, 8, 22, SIGNAL(GRAIN_SIGNAL_ADD, 64), 1},
        {GRAIN_CMD_PUT64_SIGNAL, 16, 33, SIGNAL(GRAIN_SIGNAL_SET, 72), 99},
    };
    _Alignas(8) uint8_t buf[256];
    char why[256];
    size_t len = build_wide(buf, msgs, 3);
    uint32_t marks[2];
    grain_wire_marks_t m = {marks, 1, 0, 0};
    assert_int_equal(grain_wire_validate(buf, len, 2, &limits, &m, why, sizeof why), GRAIN_OK);
    assert_int_equal(m.staged, 3);
    assert_int_equal(marks[0], 1u | 1u << 4 | 1u << 8);
    grain_wire_apply(buf, host, &am, &replies, 0);
    const uint64_t *words = (const uint64_t *)(buf + sizeof(grain_wire_hdr_t));
    for (size_t i = 0; i < grain_wire_words(len); i++)
        if ((marks[i / 32] >> (i % 32)) & 1u)
            grain_apply_put_signal(staged, words[i] >> 8, words[i + 1], words[i + 2], words[i + 3]);
    uint64_t v[3], sig[2];
    memcpy(v, host, sizeof v);
    memcpy(sig, host + 64, sizeof sig);
    assert_int_equal(v[0], 11);
    assert_int_equal(v[1], 22);
    assert_int_equal(v[2], 33);
    assert_int_equal(sig[0], 2);
    assert_int_equal(sig[1], 99);
    assert_memory_equal(host, staged, HEAP);

    const uint64_t bad_op[][5] = {{GRAIN_CMD_PUT64_SIGNAL, 0, 1, SIGNAL(2, 64), 1}};
    expect_wide_rejected(bad_op, GRAIN_ERR_BAD_MESSAGE, "signal operation 2");
    const uint64_t outside[][5] = {{GRAIN_CMD_PUT64_SIGNAL, 0, 1, SIGNAL(GRAIN_SIGNAL_ADD, HEAP), 1}};
    expect_wide_rejected(outside, GRAIN_ERR_BAD_OFFSET, "signals the word at heap offset 4096");
    const uint64_t misaligned[][5] = {{GRAIN_CMD_PUT64_SIGNAL, 0, 1, SIGNAL(GRAIN_SIGNAL_SET, 68), 1}};
    expect_wide_rejected(misaligned, GRAIN_ERR_BAD_OFFSET, "misaligned");
}

/* A host thread applies fetches and sends each old value to the requester
 * with its ticket; a reply fills its slot only when the slot waits for that
 * generation; an apply kernel's fetches are marked and counted, and their
 * replies read from the words it leaves. */
static void test_fetch_and_reply(void **state)
{
    _Alignas(8) char heap[HEAP] = {0};
    uint64_t ten = 10, sixty = 60;
    memcpy(heap + 8, &ten, 8);
    memcpy(heap + 16, &sixty, 8);
    const uint64_t msgs[][5] = {
        {GRAIN_CMD_FETCH64, 8, 5, 0, GRAIN_TICKET(GRAIN_AMO_ADD, 3, 0)},
        {GRAIN_CMD_FETCH64, 16, 7, 60, GRAIN_TICKET(GRAIN_AMO_CSWAP, 4, 9)},
        {GRAIN_CMD_FETCH32, 8, 0, 0, GRAIN_TICKET(GRAIN_AMO_FETCH, 5, 1)},
        {GRAIN_CMD_REPLY, GRAIN_TICKET(0, 6, 2) >> 8, 42, 0, 0},
        {GRAIN_CMD_REPLY, GRAIN_TICKET(0, 7, 1) >> 8, 43, 0, 0},
        {GRAIN_CMD_QUIET, GRAIN_TICKET(0, 2, 5) >> 8, 0, 0, 0},
    };
    _Alignas(8) uint8_t buf[256];
    char why[256];
    size_t len = build_wide(buf, msgs, 6);
    assert_int_equal(len, sizeof(grain_wire_hdr_t) + 3 * 32 + 2 * 16 + 8);
    uint32_t marks[2];
    grain_wire_marks_t m = {marks, 1, 0, 0};
    assert_int_equal(grain_wire_validate(buf, len, 2, &limits, &m, why, sizeof why), GRAIN_OK);
    assert_int_equal(m.staged, 3); /* replies and quiet requests are the host's */
    assert_int_equal(m.fetches, 3);
    memset(reply_slots, 0, sizeof reply_slots);
    reply_slots[2 * 6 + 1] = 4; /* slot 6 waits for generation 2; slot 7 for none */
    n_sent = 0;
    n_quiets = 0;
    grain_wire_apply(buf, heap, &am, &replies, 0);
    assert_int_equal(n_quiets, 1);
    assert_int_equal(GRAIN_TICKET_SLOT(quiets[0]), 2);
    assert_int_equal(GRAIN_TICKET_GEN(quiets[0]), 5);
    assert_int_equal(n_sent, 3);
    assert_int_equal(sent[0].dest, 2);
    assert_int_equal(sent[0].value, 10);
    assert_int_equal(sent[0].ticket, GRAIN_TICKET(GRAIN_AMO_ADD, 3, 0));
    assert_int_equal(sent[1].value, 60);
    assert_int_equal(sent[2].value, 15); /* the low half of the word fetch-add left */
    uint64_t v[2];
    memcpy(v, heap + 8, sizeof v);
    assert_int_equal(v[0], 15);
    assert_int_equal(v[1], 7);
    assert_int_equal(reply_slots[12], 42);
    assert_int_equal(reply_slots[13], 5);
    assert_int_equal(reply_slots[14], 0);
    assert_int_equal(reply_slots[15], 0);

    /* What an apply kernel leaves: old values in place of the operands. */
    uint64_t *words = (uint64_t *)(buf + sizeof(grain_wire_hdr_t));
    words[1] = 111;
    words[5] = 222;
    words[9] = 333;
    n_sent = 0;
    grain_wire_stage_replies(words, grain_wire_words(len), marks, 2, &replies);
    assert_int_equal(n_sent, 3);
    assert_int_equal(sent[0].value, 111);
    assert_int_equal(sent[1].value, 222);
    assert_int_equal(sent[2].value, 333);
    assert_int_equal(sent[2].ticket, GRAIN_TICKET(GRAIN_AMO_FETCH, 5, 1));

    const uint64_t bad_op[][5] = {{GRAIN_CMD_FETCH64, 8, 1, 0, GRAIN_TICKET(8, 0, 0)}};
    expect_wide_rejected(bad_op, GRAIN_ERR_BAD_MESSAGE, "names operation 8 and reply slot 0");
    const uint64_t bad_slot[][5] = {{GRAIN_CMD_FETCH32, 8, 1, 0, GRAIN_TICKET(GRAIN_AMO_ADD, 8, 0)}};
    expect_wide_rejected(bad_slot, GRAIN_ERR_BAD_MESSAGE, "reply slot 8");
    const uint64_t misaligned[][5] = {{GRAIN_CMD_FETCH64, 12, 1, 0, GRAIN_TICKET(GRAIN_AMO_ADD, 0, 0)}};
    expect_wide_rejected(misaligned, GRAIN_ERR_BAD_OFFSET, "misaligned");
    const uint64_t bad_reply[][5] = {{GRAIN_CMD_REPLY, GRAIN_TICKET(0, 8, 0) >> 8, 1, 0, 0}};
    expect_wide_rejected(bad_reply, GRAIN_ERR_BAD_MESSAGE, "is for reply slot 8; ranks have 8");
    const uint64_t bad_quiet[][5] = {{GRAIN_CMD_QUIET, GRAIN_TICKET(0, 9, 0) >> 8, 0, 0, 0}};
    expect_wide_rejected(bad_quiet, GRAIN_ERR_BAD_MESSAGE, "quiet request 0 from rank 2 is for reply slot 9");
}

/* A get that does not wait: its word goes back as a PUT to the offset it
 * named, from a host thread's walk or from what an apply kernel left; a
 * reply after goes to this rank's ledger; a return offset outside the heap
 * or misaligned is refused before anything is read. */
static void test_get_nbi_and_reply_after(void **state)
{
    (void)state;
    _Alignas(8) char heap[HEAP] = {0};
    uint64_t word = 0x1122334455667788ull;
    memcpy(heap + 24, &word, 8);
    const uint64_t msgs[][5] = {
        {GRAIN_CMD_FETCH64, 24, 0, 40, GRAIN_TICKET(GRAIN_AMO_GET_NBI, 0, 0)},
        {GRAIN_CMD_FETCH32, 28, 0, 44, GRAIN_TICKET(GRAIN_AMO_GET_NBI, 0, 0)},
        {GRAIN_CMD_REPLY_AFTER, GRAIN_TICKET(0, 3, 4) >> 8, 0, 0, 0},
    };
    _Alignas(8) uint8_t buf[256];
    char why[256];
    size_t len = build_wide(buf, msgs, 3);
    assert_int_equal(len, sizeof(grain_wire_hdr_t) + 2 * 32 + 8);
    uint32_t marks[2];
    grain_wire_marks_t m = {marks, 1, 0, 0};
    assert_int_equal(grain_wire_validate(buf, len, 2, &limits, &m, why, sizeof why), GRAIN_OK);
    assert_int_equal(m.staged, 2);
    n_sent = n_puts = n_quiets = 0;
    assert_int_equal(grain_wire_apply(buf, heap, &am, &replies, 0), 0);
    assert_int_equal(n_sent, 0);
    assert_int_equal(n_puts, 2);
    assert_int_equal(puts_sent[0].dest, 2);
    assert_int_equal(puts_sent[0].cmd, GRAIN_CMD_PUT64);
    assert_int_equal(puts_sent[0].offset, 40);
    assert_int_equal(puts_sent[0].value, word);
    assert_int_equal(puts_sent[1].cmd, GRAIN_CMD_PUT32);
    assert_int_equal(puts_sent[1].offset, 44);
    assert_int_equal(puts_sent[1].value, 0x11223344u);
    assert_int_equal(n_quiets, 1);
    assert_int_equal(quiet_srcs[0], 0);
    assert_int_equal(GRAIN_TICKET_SLOT(quiets[0]), 3);
    assert_int_equal(GRAIN_TICKET_GEN(quiets[0]), 4);
    memcpy(&word, heap + 24, 8);
    assert_int_equal(word, 0x1122334455667788ull); /* read, not changed */

    uint64_t *words = (uint64_t *)(buf + sizeof(grain_wire_hdr_t));
    words[1] = 777; /* an apply kernel's old value, in place of the operand */
    n_puts = 0;
    grain_wire_stage_replies(words, grain_wire_words(len), marks, 2, &replies);
    assert_int_equal(n_puts, 2);
    assert_int_equal(puts_sent[0].offset, 40);
    assert_int_equal(puts_sent[0].value, 777);

    const uint64_t outside[][5] = {{GRAIN_CMD_FETCH64, 8, 0, HEAP, GRAIN_TICKET(GRAIN_AMO_GET_NBI, 0, 0)}};
    expect_wide_rejected(outside, GRAIN_ERR_BAD_OFFSET, "sends its word back to heap offset");
    const uint64_t misaligned[][5] = {{GRAIN_CMD_FETCH64, 8, 0, 12, GRAIN_TICKET(GRAIN_AMO_GET_NBI, 0, 0)}};
    expect_wide_rejected(misaligned, GRAIN_ERR_BAD_OFFSET, "sends its word back to heap offset 12");
    const uint64_t bad_after[][5] = {{GRAIN_CMD_REPLY_AFTER, GRAIN_TICKET(0, 8, 0) >> 8, 0, 0, 0}};
    expect_wide_rejected(bad_after, GRAIN_ERR_BAD_MESSAGE, "reply 0 from rank 2 is for reply slot 8");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_get_nbi_and_reply_after),
        cmocka_unit_test(test_valid_buffer_applies_every_command),
        cmocka_unit_test(test_marks_apply_like_the_host),
        cmocka_unit_test(test_each_bad_field_is_rejected),
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_put_signal),
        cmocka_unit_test(test_fetch_and_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
