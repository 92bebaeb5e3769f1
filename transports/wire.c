/* SPDX-License-Identifier: BSD-3-Clause */
#include "transports/wire.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "grain/device/apply.h"

int grain_wire_check_origin(const char *what, uint32_t src, size_t len, uint32_t said_src, uint32_t said_bytes,
                            char *why, size_t why_size)
{
    if (said_src != src)
        snprintf(why, why_size, "a %s that arrived from rank %u says it comes from rank %u", what, src, said_src);
    else if (said_bytes != len)
        snprintf(why, why_size, "a %s from rank %u says it is %u bytes, but %zu bytes arrived", what, src,
                 said_bytes, len);
    else
        return 0;
    return -1;
}

_Static_assert(GRAIN_APPLY_LOOKAHEAD + 1 >= GRAIN_RUN_WORDS_MAX, "the apply kernel's tiles must hold a whole run");

/* Checks the run at `p`, message `i` of the buffer's `count`, `left` bytes
 * before the buffer's end; sets its wire bytes and messages. */
static grain_status_t check_run(const uint8_t *p, size_t left, uint32_t i, uint32_t count, uint32_t src_pe,
                                uint64_t heap_size, size_t *size, uint32_t *n, char *why, size_t why_size)
{
    uint64_t w0;
    memcpy(&w0, p, sizeof w0);
    uint32_t cmd = GRAIN_RUN_CMD(w0), k = GRAIN_RUN_COUNT(w0);
    if (!grain_cmd_runs(cmd) || k < 2 || k > GRAIN_RUN_MAX || k > count - i ||
        GRAIN_RUN_RESERVED(w0) != 0) {
        snprintf(why, why_size,
                 "a run at message %u of %u from rank %u has command %u, %u messages and reserved bits 0x%x (runs "
                 "are of commands %u to %u, 2 to %u messages, reserved bits 0)",
                 i, count, src_pe, cmd, k, GRAIN_RUN_RESERVED(w0), GRAIN_CMD_PUT32, GRAIN_CMD_INC64, GRAIN_RUN_MAX);
        return GRAIN_ERR_BAD_MESSAGE;
    }
    size_t bytes = 8u * grain_run_words(cmd, k, GRAIN_RUN_NARROW(w0));
    if (left < bytes) {
        snprintf(why, why_size, "a buffer from rank %u ends inside the run at message %u of %u", src_pe, i, count);
        return GRAIN_ERR_BAD_MESSAGE;
    }
    uint64_t width = grain_cmd_width(cmd), hi = w0 >> 32 << 32;
    uint64_t limit = heap_size >= width ? heap_size - width : 0;
    /* The run's offsets share `hi`: its largest low word and the union of
     * their bits say whether all fit, in a loop without exits that the
     * compiler vectorizes (the walk is most of a receiving thread's time;
     * 64 KiB of increments in runs took 8.0 us to check one by one, 4.5 us
     * so, on one core of the development machine). */
    uint32_t lo_max = 0, lo_any = 0;
    for (uint32_t j = 0; j < k; j++) {
        uint32_t lo;
        memcpy(&lo, p + 8 + 4 * j, sizeof lo);
        lo_max = lo > lo_max ? lo : lo_max;
        lo_any |= lo;
    }
    if ((hi | lo_max) > limit || (lo_any & (width - 1)) != 0 || heap_size < width) {
        uint32_t j = 0, lo = 0;
        for (; j < k; j++) { /* the first that does not fit, for the error */
            memcpy(&lo, p + 8 + 4 * j, sizeof lo);
            if ((hi | lo) > limit || (lo & (width - 1)) != 0 || heap_size < width)
                break;
        }
        snprintf(why, why_size,
                 "message %u from rank %u writes %llu bytes at heap offset %llu, outside the %llu-byte "
                 "symmetric heap or misaligned",
                 i + j, src_pe, (unsigned long long)width, (unsigned long long)(hi | lo),
                 (unsigned long long)heap_size);
        return GRAIN_ERR_BAD_OFFSET;
    }
    *size = bytes;
    *n = k;
    return GRAIN_OK;
}

grain_status_t grain_wire_validate(const void *buf, size_t len, uint32_t src_pe,
                                   const grain_wire_limits_t *limits, grain_wire_marks_t *marks, char *why,
                                   size_t why_size)
{
    grain_wire_hdr_t h;
    if (len < sizeof h) {
        snprintf(why, why_size, "a %zu-byte buffer from rank %u is shorter than its header", len, src_pe);
        return GRAIN_ERR_BAD_MESSAGE;
    }
    memcpy(&h, buf, sizeof h);
    if (h.magic != GRAIN_WIRE_MAGIC) {
        snprintf(why, why_size, "a buffer from rank %u has no grain header (magic 0x%08x)", src_pe, h.magic);
        return GRAIN_ERR_BAD_MESSAGE;
    }
    if (grain_wire_check_origin("buffer", src_pe, len, h.src_pe, h.bytes, why, why_size) != 0)
        return GRAIN_ERR_BAD_MESSAGE;
    const uint8_t *data = (const uint8_t *)buf + sizeof h, *p = data;
    const uint8_t *end = (const uint8_t *)buf + len;
    uint32_t *bits = marks != NULL ? marks->bits : NULL;
    size_t staged = 0;
    /* The bitmap word being built, stored whole when the walk leaves it: a
     * read-modify-write of memory per message tripled the walk's time for
     * 16-byte adds (10.6 against 3.4 ns a message on one core). */
    uint32_t cur = 0;
    size_t cur_at = 0;
    if (bits != NULL)
        memset(bits, 0, grain_wire_mark_words(grain_wire_words(len)) * sizeof *bits);
    if (marks != NULL)
        marks->fetches = 0;
    /* What depends only on the command, for the run of messages that share
     * the last one's.  A branch on a change of command, not a lookup per
     * message: the predictor follows a run, so that the next message's
     * address does not wait for this one's load (a buffer is walked as a
     * chain of loads otherwise). */
    uint32_t last = UINT32_MAX;
    size_t size = 0;
    uint64_t align = 0, limit = 0;
    for (uint32_t i = 0, n = 1; i < h.count; i += n) {
        uint64_t w0;
        if ((size_t)(end - p) < sizeof w0) {
            snprintf(why, why_size, "a buffer from rank %u ends inside message %u of %u", src_pe, i, h.count);
            return GRAIN_ERR_BAD_MESSAGE;
        }
        memcpy(&w0, p, sizeof w0);
        uint32_t cmd = (uint32_t)(w0 & 0xff);
        uint64_t arg = w0 >> 8;
        n = 1;
        if (cmd == GRAIN_CMD_RUN) {
            grain_status_t st =
                check_run(p, (size_t)(end - p), i, h.count, src_pe, limits->heap_size, &size, &n, why, why_size);
            if (st != GRAIN_OK)
                return st;
            last = GRAIN_CMD_RUN; /* what follows holds for the last plain command only */
        } else {
            if (cmd != last) {
                if ((size = grain_wire_msg_size(cmd)) == 0) {
                    snprintf(why, why_size, "message %u from rank %u has unknown command %u", i, src_pe, cmd);
                    return GRAIN_ERR_BAD_MESSAGE;
                }
                uint64_t width = cmd == GRAIN_CMD_AM || cmd >= GRAIN_CMD_REPLY ? 1 : grain_cmd_width(cmd);
                align = width - 1;
                limit = limits->heap_size >= width ? limits->heap_size - width : 0;
                last = cmd;
            }
            if ((size_t)(end - p) < size) {
                snprintf(why, why_size, "a buffer from rank %u ends inside message %u of %u", src_pe, i, h.count);
                return GRAIN_ERR_BAD_MESSAGE;
            }
            if (__builtin_expect(cmd >= GRAIN_CMD_REPLY, 0)) {
                if (GRAIN_TICKET_SLOT(w0) >= limits->reply_slots) {
                    snprintf(why, why_size, "%s %u from rank %u is for reply slot %u; ranks have %u",
                             cmd == GRAIN_CMD_QUIET ? "quiet request" : "reply", i, src_pe, GRAIN_TICKET_SLOT(w0),
                             limits->reply_slots);
                    return GRAIN_ERR_BAD_MESSAGE;
                }
            } else if (cmd == GRAIN_CMD_AM) {
                if (!grain_am_registered(limits->am, arg)) {
                    snprintf(why, why_size,
                             "active message %u from rank %u names handler %llu, which is not registered",
                             i, src_pe, (unsigned long long)arg);
                    return GRAIN_ERR_BAD_HANDLER;
                }
            } else if (arg > limit || (arg & align) != 0 || limits->heap_size <= align) {
                snprintf(why, why_size,
                         "message %u from rank %u writes %llu bytes at heap offset %llu, outside the "
                         "%llu-byte symmetric heap or misaligned",
                         i, src_pe, (unsigned long long)align + 1, (unsigned long long)arg,
                         (unsigned long long)limits->heap_size);
                return GRAIN_ERR_BAD_OFFSET;
            } else if (__builtin_expect(cmd == GRAIN_CMD_PUT64_SIGNAL, 0)) {
                uint64_t sig;
                memcpy(&sig, p + 16, sizeof sig);
                if ((sig & 0xff) > GRAIN_SIGNAL_ADD) {
                    snprintf(why, why_size, "put with signal %u from rank %u names signal operation %llu", i, src_pe,
                             (unsigned long long)(sig & 0xff));
                    return GRAIN_ERR_BAD_MESSAGE;
                }
                if ((sig >> 8) > limit || ((sig >> 8) & 7) != 0) {
                    snprintf(why, why_size,
                             "put with signal %u from rank %u signals the word at heap offset %llu, outside the "
                             "%llu-byte symmetric heap or misaligned",
                             i, src_pe, (unsigned long long)(sig >> 8), (unsigned long long)limits->heap_size);
                    return GRAIN_ERR_BAD_OFFSET;
                }
            } else if (__builtin_expect(cmd == GRAIN_CMD_FETCH32 || cmd == GRAIN_CMD_FETCH64, 0)) {
                uint64_t cond, ticket;
                memcpy(&cond, p + 16, sizeof cond);
                memcpy(&ticket, p + 24, sizeof ticket);
                if (GRAIN_TICKET_OP(ticket) > GRAIN_AMO_GET_NBI || GRAIN_TICKET_SLOT(ticket) >= limits->reply_slots) {
                    snprintf(why, why_size,
                             "fetch %u from rank %u names operation %u and reply slot %u (operations 0 to %u, %u slots)",
                             i, src_pe, GRAIN_TICKET_OP(ticket), GRAIN_TICKET_SLOT(ticket), GRAIN_AMO_GET_NBI,
                             limits->reply_slots);
                    return GRAIN_ERR_BAD_MESSAGE;
                }
                /* The heap is symmetric: where the word goes back to is checked
                 * here, before a reply the requester would refuse. */
                if (GRAIN_TICKET_OP(ticket) == GRAIN_AMO_GET_NBI && (cond > limit || (cond & align) != 0)) {
                    snprintf(why, why_size,
                             "get %u from rank %u sends its word back to heap offset %llu, outside the %llu-byte "
                             "symmetric heap or misaligned",
                             i, src_pe, (unsigned long long)cond, (unsigned long long)limits->heap_size);
                    return GRAIN_ERR_BAD_OFFSET;
                }
                if (marks != NULL)
                    marks->fetches += marks->stage_puts;
            }
        }
        /* Marked in the same walk: the walk is most of a receiving
         * thread's time. */
        if (bits != NULL && grain_wire_staged(limits->am, cmd, arg, marks->stage_puts)) {
            size_t word = (size_t)(p - data) / 8;
            if (word / 32 != cur_at) {
                bits[cur_at] = cur;
                cur_at = word / 32;
                cur = 0;
            }
            cur |= 1u << (word % 32);
            staged += n;
        }
        p += size;
    }
    if (p != end) {
        snprintf(why, why_size, "a buffer from rank %u has %zu bytes after its %u messages", src_pe,
                 (size_t)(end - p), h.count);
        return GRAIN_ERR_BAD_MESSAGE;
    }
    if (bits != NULL && staged > 0)
        bits[cur_at] = cur;
    if (marks != NULL)
        marks->staged = staged;
    return GRAIN_OK;
}

/* The value, then the tag that says it is in.  A slot that waits for
 * another generation (or none) is left alone: a late or forged reply must
 * not overwrite what a lane is about to read. */
int grain_wire_fill_reply(const grain_wire_replies_t *r, uint64_t w0, uint64_t value)
{
    uint32_t slot = GRAIN_TICKET_SLOT(w0), gen = GRAIN_TICKET_GEN(w0);
    _Atomic uint64_t *tag = (_Atomic uint64_t *)&r->slots[2 * slot + 1];
    if ((uint32_t)atomic_load_explicit(tag, memory_order_relaxed) != 2u * gen)
        return 0;
    r->slots[2 * slot] = value;
    atomic_store_explicit(tag, 2u * gen + 1u, memory_order_release);
    return 1;
}

/* A fetch's old value, as it goes back to `src_pe`: a reply into the slot
 * its ticket names, or a PUT of the word a get that does not wait asked for
 * to the offset it named (`cond`). */
static void reply(const grain_wire_replies_t *r, uint32_t src_pe, uint32_t cmd, uint64_t old, uint64_t cond,
                  uint64_t ticket)
{
    if (GRAIN_TICKET_OP(ticket) == GRAIN_AMO_GET_NBI)
        r->put(r->arg, src_pe, cmd == GRAIN_CMD_FETCH64 ? GRAIN_CMD_PUT64 : GRAIN_CMD_PUT32, cond, old);
    else
        r->send(r->arg, src_pe, ticket, old);
}

/* A fetch applied here. */
static void fetch(char *heap, const grain_wire_replies_t *r, uint32_t src_pe, uint32_t cmd, uint64_t offset,
                  uint64_t operand, uint64_t cond, uint64_t ticket)
{
    uint32_t op = GRAIN_TICKET_OP(ticket);
    uint64_t old = cmd == GRAIN_CMD_FETCH64
                       ? grain_apply_amo64(heap + offset, op, operand, cond)
                       : grain_apply_amo32(heap + offset, op, (uint32_t)operand, (uint32_t)cond);
    reply(r, src_pe, cmd, old, cond, ticket);
}

/* Returns 0 for a reply that found its slot waiting for no reply. */
static int apply(char *heap, const grain_am_table_t *am, const grain_wire_replies_t *r, uint32_t src_pe,
                 uint32_t cmd, uint64_t w0, uint64_t v1, uint64_t v2, uint64_t v3)
{
    uint64_t arg = w0 >> 8;
    if (cmd == GRAIN_CMD_AM)
        am->host[arg](heap, src_pe, v1, v2);
    else if (cmd == GRAIN_CMD_PUT64_SIGNAL)
        grain_apply_put_signal(heap, arg, v1, v2, v3);
    else if (cmd == GRAIN_CMD_FETCH32 || cmd == GRAIN_CMD_FETCH64)
        fetch(heap, r, src_pe, cmd, arg, v1, v2, v3);
    else if (cmd == GRAIN_CMD_REPLY)
        return grain_wire_fill_reply(r, w0, v1);
    else if (cmd == GRAIN_CMD_QUIET)
        r->quiet(r->arg, src_pe, w0);
    else if (cmd == GRAIN_CMD_REPLY_AFTER)
        r->quiet(r->arg, r->self, w0); /* the ledger fills the slot once what came before is applied */
    else
        grain_apply_msg(heap, cmd, arg, v1);
    return 1;
}

unsigned grain_wire_apply(const void *buf, char *heap, const grain_am_table_t *am,
                          const grain_wire_replies_t *replies, int stage_puts)
{
    unsigned stray = 0;
    grain_wire_hdr_t h;
    memcpy(&h, buf, sizeof h);
    const uint8_t *p = (const uint8_t *)buf + sizeof h;
    uint32_t last = UINT32_MAX;
    size_t size = 0;
    for (uint32_t i = 0; i < h.count; i++) {
        /* Word by word: a memcpy of the message's size is a library call
         * per message, and this loop runs once per received message (6.1 ns
         * a message that way, 2.5 ns so, 16-byte adds on one EPYC core). */
        uint64_t w[4] = {0, 0, 0, 0};
        memcpy(&w[0], p, sizeof w[0]);
        uint32_t cmd = (uint32_t)(w[0] & 0xff);
        if (cmd == GRAIN_CMD_RUN) {
            uint32_t rc = GRAIN_RUN_CMD(w[0]), n = GRAIN_RUN_COUNT(w[0]);
            size_t bytes = 8u * grain_run_words(rc, n, GRAIN_RUN_NARROW(w[0]));
            if (!stage_puts) {
                uint64_t run[GRAIN_RUN_WORDS_MAX];
                memcpy(run, p, bytes);
                grain_apply_run(heap, run);
            }
            p += bytes;
            i += n - 1;
            last = GRAIN_CMD_RUN;
            continue;
        }
        if (__builtin_expect(cmd != last, 0)) { /* a branch, as in grain_wire_validate */
            size = grain_wire_msg_size(cmd);
            last = cmd;
        }
        uint64_t arg = w[0] >> 8;
        if (!grain_wire_staged(am, cmd, arg, stage_puts)) {
            if (size > 8)
                memcpy(&w[1], p + 8, sizeof w[1]);
            if (size > 16)
                memcpy(&w[2], p + 16, sizeof w[2]);
            if (size > 24)
                memcpy(&w[3], p + 24, sizeof w[3]);
            stray += !apply(heap, am, replies, h.src_pe, cmd, w[0], w[1], w[2], w[3]);
        }
        p += size;
    }
    return stray;
}

void grain_apply_one(char *heap, const grain_am_table_t *am, uint32_t src_pe, uint64_t hdr, uint64_t w1,
                     uint64_t w2, uint64_t sig, uint64_t sig_value)
{
    uint32_t cmd = GRAIN_HDR_CMD(hdr);
    if (cmd == GRAIN_CMD_AM)
        apply(heap, am, NULL, src_pe, cmd, (uint64_t)GRAIN_HDR_HANDLER(hdr) << 8, w1, w2, 0);
    else
        apply(heap, am, NULL, src_pe, cmd, w1 << 8 | cmd, w2, sig, sig_value);
}

void grain_wire_stage_replies(const uint64_t *words, size_t n_words, const uint32_t *bits, uint32_t src_pe,
                              const grain_wire_replies_t *replies)
{
    for (size_t j = 0; j < n_words; j++) {
        if (((bits[j / 32] >> (j % 32)) & 1u) == 0)
            continue;
        uint32_t cmd = (uint32_t)(words[j] & 0xff);
        if (cmd == GRAIN_CMD_FETCH32 || cmd == GRAIN_CMD_FETCH64)
            reply(replies, src_pe, cmd, words[j + 1], words[j + 2], words[j + 3]);
    }
}
