/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire format of per-destination buffers, and the receiver's checks.
 *
 * A buffer is a 24-byte header and packed messages of 8 (increment, quiet
 * request, reply after), 16 (PUT, add, reply), 24 (active message) or 32 bytes (PUT with signal: then the
 * signal word, its operation in the low 8 bits and its offset above, and
 * the signal value; fetch: the operand, the value compared and the reply
 * ticket).  The first word of a message is the command in its low 8 bits
 * and the heap offset (or handler id) above; a reply's holds the ticket's
 * slot and generation (GRAIN_TICKET) above its command, then the value, and
 * a quiet request's and a reply after's the slot and generation its reply
 * goes to.  A get that does not wait (GRAIN_AMO_GET_NBI) is a fetch whose
 * value compared is the heap offset its word goes back to, as a PUT.  Runs
 * of 2 to GRAIN_RUN_MAX PUTs, adds or increments of one command take fewer
 * bytes a message (GRAIN_CMD_RUN, grain/device/apply.h; the aggregators pack
 * them, runtime/messages/packer.h).
 */
#ifndef GRAIN_TRANSPORTS_WIRE_H
#define GRAIN_TRANSPORTS_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "grain/device/apply.h"
#include "grain/grain.h"

#define GRAIN_WIRE_MAGIC 0x4e415247u /* "GRAN" */
#define GRAIN_WIRE_MAX_MSG 32u
#define GRAIN_WIRE_MAX_OFFSET ((1ull << 56) - 1)

typedef struct grain_wire_hdr {
    uint32_t magic;
    uint32_t src_pe;
    uint32_t count; /* messages */
    uint32_t bytes; /* header included */
    uint64_t seq;   /* per (source, destination) buffer number, from 0 */
} grain_wire_hdr_t;

/* Wire bytes of a message with command `cmd`; 0 for an unknown command.
 * Inline: the aggregator asks once per message. */
static inline size_t grain_wire_msg_size(uint32_t cmd)
{
    static const uint8_t sizes[GRAIN_CMD_COUNT] = {
        [GRAIN_CMD_PUT32] = 16, [GRAIN_CMD_PUT64] = 16, [GRAIN_CMD_ADD32] = 16, [GRAIN_CMD_ADD64] = 16,
        [GRAIN_CMD_INC32] = 8,  [GRAIN_CMD_INC64] = 8,  [GRAIN_CMD_AM] = 24, [GRAIN_CMD_PUT64_SIGNAL] = 32,
        [GRAIN_CMD_FETCH32] = 32, [GRAIN_CMD_FETCH64] = 32, [GRAIN_CMD_REPLY] = 16,
        [GRAIN_CMD_QUIET] = 8, [GRAIN_CMD_REPLY_AFTER] = 8,
    };
    return cmd < GRAIN_CMD_COUNT ? sizes[cmd] : 0;
}

/* Encodes the queue message (hdr, w1, w2) at `dst`, with a PUT's signal
 * word and value, or a fetch's value compared and ticket (`sig`,
 * `sig_value`, as on the wire, a signal's offset checked by the caller; 0
 * for the others); returns its wire size, 0 if the command is unknown or
 * the offset does not fit.  Inline: the aggregator calls it once per
 * message. */
static inline size_t grain_wire_encode(uint8_t *dst, uint64_t hdr, uint64_t w1, uint64_t w2, uint64_t sig,
                                       uint64_t sig_value)
{
    uint32_t cmd = GRAIN_HDR_CMD(hdr);
    size_t size = grain_wire_msg_size(cmd);
    uint64_t first;
    if (size == 0)
        return 0;
    if (cmd == GRAIN_CMD_AM) {
        first = cmd | ((uint64_t)GRAIN_HDR_HANDLER(hdr) << 8);
    } else {
        if (w1 > GRAIN_WIRE_MAX_OFFSET)
            return 0;
        first = cmd | (w1 << 8);
        w1 = w2;
    }
    /* Copies of a fixed size compile to plain stores; one memcpy of `size`
     * bytes was the aggregator's largest cost (a libc call per message). */
    memcpy(dst, &first, 8);
    if (size > 8)
        memcpy(dst + 8, &w1, 8);
    if (size > 16)
        memcpy(dst + 16, size > 24 ? &sig : &w2, 8);
    if (size > 24)
        memcpy(dst + 24, &sig_value, 8);
    return size;
}

/* A rank's active-message handlers: a host function, or a device function
 * of the program registered with grain_am_register_program (which wins). */
typedef struct grain_am_table {
    grain_am_fn host[GRAIN_MAX_HANDLERS];       /* NULL: none */
    uint32_t device[GRAIN_MAX_HANDLERS / 32];   /* bit set: an apply kernel runs it */
} grain_am_table_t;

static inline int grain_am_on_device(const grain_am_table_t *am, uint64_t id)
{
    return id < GRAIN_MAX_HANDLERS && ((am->device[id / 32] >> (id % 32)) & 1u);
}

static inline int grain_am_registered(const grain_am_table_t *am, uint64_t id)
{
    return id < GRAIN_MAX_HANDLERS && (am->host[id] != NULL || grain_am_on_device(am, id));
}

/* What a receiver accepts. */
typedef struct grain_wire_limits {
    uint32_t n_pes;
    uint64_t heap_size;
    uint32_t reply_slots; /* every rank's GRAIN_REPLY_SLOTS */
    const grain_am_table_t *am;
} grain_wire_limits_t;

/* Where a host thread's fetches and replies go: this rank's reply slots and
 * number, the sender of replies to other ranks' fetches (`send`) and of the
 * words their gets that do not wait asked for (`put`, a PUT32 or PUT64 to
 * `offset`), the ledger that holds quiet requests until what arrived before
 * them is applied (`quiet`: from rank `src`, or from `self` for a reply
 * after, the ticket being the message's first word), and who sends the
 * ledger's answers (`answer`, to `self` too). */
typedef struct grain_wire_replies {
    uint64_t *slots;
    uint32_t self;
    void (*send)(void *arg, uint32_t dest, uint64_t ticket, uint64_t value);
    void (*put)(void *arg, uint32_t dest, uint32_t cmd, uint64_t offset, uint64_t value);
    void (*quiet)(void *arg, uint32_t src, uint64_t ticket);
    void (*answer)(void *arg, uint32_t dest, uint64_t ticket);
    void *arg;
} grain_wire_replies_t;

/* Writes a reply into this rank's slot, for the lane that waits there;
 * returns 0, writing nothing, where the slot waits for no reply of that
 * generation. */
int grain_wire_fill_reply(const grain_wire_replies_t *r, uint64_t ticket, uint64_t value);

/* Whether a received `what` ("buffer", "chunk piece") of `len` bytes from
 * rank `src` says so itself (`said_src`, `said_bytes`): 0, or -1 with a
 * sentence in `why` naming the field that disagrees. */
int grain_wire_check_origin(const char *what, uint32_t src, size_t len, uint32_t said_src, uint32_t said_bytes,
                            char *why, size_t why_size);

/* Data words of a buffer of `bytes` bytes (header included), and the
 * 32-bit words of a bitmap with a bit for each. */
static inline size_t grain_wire_words(size_t bytes)
{
    return (bytes - sizeof(grain_wire_hdr_t)) / 8;
}

static inline size_t grain_wire_mark_words(size_t words)
{
    return (words + 31) / 32;
}

/* Whether the apply kernel takes a message (grain/device/runtime_kernels.h):
 * active messages for device handlers always, PUTs, adds, increments and
 * fetches when `stage_puts` (the heap in device memory); host threads apply
 * the rest (replies, quiet requests, host handlers). */
static inline int grain_wire_staged(const grain_am_table_t *am, uint32_t cmd, uint64_t arg, int stage_puts)
{
    return cmd == GRAIN_CMD_AM ? grain_am_on_device(am, arg) : (cmd < GRAIN_CMD_REPLY || cmd == GRAIN_CMD_RUN) && stage_puts;
}

/* Where a buffer's messages for the apply kernel start, which the kernel
 * cannot find itself: values are arbitrary words, so only a walk through
 * the buffer from its first message knows where messages start.  Bit i of
 * `bits` (grain_wire_mark_words of the buffer's words) is set where data
 * word i starts one; the kernel's work-items then take a word each. */
typedef struct grain_wire_marks {
    uint32_t *bits;
    int stage_puts; /* as grain_wire_staged */
    size_t staged;  /* set by grain_wire_validate: the bits it set */
    size_t fetches; /* and the fetches among them, whose replies go out once applied */
} grain_wire_marks_t;

/*
 * Checks a whole received buffer before anything of it is applied: header,
 * sizes, every command, offset, alignment and handler.  On error returns
 * GRAIN_ERR_BAD_MESSAGE, GRAIN_ERR_BAD_OFFSET or GRAIN_ERR_BAD_HANDLER and
 * writes a sentence naming the message and field to `why`.  With `marks`,
 * the same walk marks the messages for the apply kernel (the bitmap is
 * zeroed first; it means nothing when the buffer is refused).
 */
grain_status_t grain_wire_validate(const void *buf, size_t len, uint32_t src_pe,
                                   const grain_wire_limits_t *limits, grain_wire_marks_t *marks, char *why,
                                   size_t why_size);

/* Applies from a host thread the messages of a validated buffer that the
 * apply kernel does not take (grain_wire_staged), into `heap` or by host
 * handlers; fetches send their replies, and replies fill this rank's slots.
 * Returns the replies that found their slot waiting for none, which it
 * left alone. */
unsigned grain_wire_apply(const void *buf, char *heap, const grain_am_table_t *am,
                          const grain_wire_replies_t *replies, int stage_puts);

/* The replies of a stage's fetches, which an apply kernel applied and
 * left their old values in place of their operands: `words` as the stage
 * holds them, `bits` as grain_wire_validate marked them. */
void grain_wire_stage_replies(const uint64_t *words, size_t n_words, const uint32_t *bits, uint32_t src_pe,
                              const grain_wire_replies_t *replies);

/* Applies one queue message addressed to this rank on this thread (already
 * checked by the device; `hdr` carries the command; an active message's
 * handler is a host function). */
void grain_apply_one(char *heap, const grain_am_table_t *am, uint32_t src_pe, uint64_t hdr, uint64_t w1,
                     uint64_t w2, uint64_t sig, uint64_t sig_value);

#endif
