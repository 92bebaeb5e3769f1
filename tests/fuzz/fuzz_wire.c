/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the receiver's checks of a wire buffer
 * (grain_wire_validate) and what it then applies (grain_wire_apply): a
 * buffer that passes must apply inside the heap and call only registered
 * handlers; one that fails must say why.  The input is the buffer as it
 * arrived from rank 1 of 4, at a rank with a 4 KiB heap, a host handler
 * (id 3) and a device handler (id 5).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transports/wire.h"

#define HEAP_BYTES 4096u

/* From the sender (a quiet request) or this rank, 0 (a reply after). */
static void quiet(void *arg, uint32_t src, uint64_t ticket)
{
    (void)arg;
    if (src > 1 || GRAIN_TICKET_SLOT(ticket) >= 8)
        abort();
}

/* A get's word goes back to the sender, into its heap. */
static void put(void *arg, uint32_t dest, uint32_t cmd, uint64_t offset, uint64_t value)
{
    (void)arg, (void)value;
    uint32_t width = cmd == GRAIN_CMD_PUT64 ? 8 : 4;
    if (dest != 1 || (cmd != GRAIN_CMD_PUT64 && cmd != GRAIN_CMD_PUT32) || offset > HEAP_BYTES - width ||
        offset % width != 0)
        abort();
}

/* Only the quiets ledger answers, never a buffer's walk. */
static void answer(void *arg, uint32_t dest, uint64_t ticket)
{
    (void)arg, (void)dest, (void)ticket;
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void handler(char *heap, uint32_t src_pe, uint64_t a0, uint64_t a1)
{
    if (src_pe != 1)
        abort();
    heap[a0 % HEAP_BYTES] ^= (char)a1;
}

static void reply(void *arg, uint32_t dest, uint64_t ticket, uint64_t value)
{
    (void)arg, (void)value;
    if (dest != 1 || GRAIN_TICKET_SLOT(ticket) >= 8)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static grain_am_table_t am = {.host = {[3] = handler}, .device = {1u << 5}};
    static uint64_t slots[16];
    static const grain_wire_replies_t replies = {
        .slots = slots, .self = 0, .send = reply, .put = put, .quiet = quiet, .answer = answer};
    grain_wire_limits_t limits = {4, HEAP_BYTES, 8, &am};
    char why[256] = "";
    /* Copied: the receiver reads buffers of its own, 8-byte aligned. */
    uint64_t *buf = malloc(size + 8);
    memcpy(buf, data, size);
    /* Exactly sized: ASan sees a mark beyond them. */
    size_t mark_words = size >= sizeof(grain_wire_hdr_t) ? grain_wire_mark_words(grain_wire_words(size)) : 0;
    uint32_t *marks = malloc(mark_words * sizeof *marks + 1);
    int stage_puts = size > 24 && ((const uint8_t *)data)[24] & 0x80;
    grain_wire_marks_t m = {marks, stage_puts, 0, 0};
    if (grain_wire_validate(buf, size, 1, &limits, &m, why, sizeof why) != GRAIN_OK) {
        if (why[0] == '\0')
            abort();
        free(marks);
        free(buf);
        return 0;
    }
    grain_wire_hdr_t h;
    memcpy(&h, buf, sizeof h);
    if (m.staged > h.count)
        abort();
    /* Exactly sized: ASan sees a heap write beyond it. */
    char *heap = aligned_alloc(64, HEAP_BYTES);
    memset(heap, 0, HEAP_BYTES);
    grain_wire_apply(buf, heap, &am, &replies, stage_puts);
    free(marks);
    free(heap);
    free(buf);
    return 0;
}
