/*
 * The wire format of per-destination buffers, and the receiver's checks.
 *
 * A buffer is a 24-byte header and packed messages of 8 (increment), 16 (PUT,
 * add) or 24 bytes (active message).  The first word of a message is the
 * command in its low 8 bits and the heap offset (or handler id) above.
 */
#ifndef GRAIN_RUNTIME_WIRE_H
#define GRAIN_RUNTIME_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "grain/device/ctx.h"
#include "grain/grain.h"

#define GRAIN_WIRE_MAGIC 0x4e415247u /* "GRAN" */
#define GRAIN_WIRE_MAX_MSG 24u
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
        [GRAIN_CMD_INC32] = 8,  [GRAIN_CMD_INC64] = 8,  [GRAIN_CMD_AM] = 24,
    };
    return cmd < GRAIN_CMD_COUNT ? sizes[cmd] : 0;
}

/* Encodes the queue message (hdr, w1, w2) at `dst`; returns its wire size,
 * 0 if the command is unknown or the offset does not fit. */
size_t grain_wire_encode(uint8_t *dst, uint64_t hdr, uint64_t w1, uint64_t w2);

/* What a receiver accepts. */
typedef struct grain_wire_limits {
    uint32_t n_pes;
    uint64_t heap_size;
    grain_am_fn const *handlers; /* GRAIN_MAX_HANDLERS entries, NULL = unregistered */
} grain_wire_limits_t;

/*
 * Checks a whole received buffer before anything of it is applied: header,
 * sizes, every command, offset, alignment and handler.  On error returns
 * GRAIN_ERR_BAD_MESSAGE, GRAIN_ERR_BAD_OFFSET or GRAIN_ERR_BAD_HANDLER and
 * writes a sentence naming the message and field to `why`.
 */
grain_status_t grain_wire_validate(const void *buf, size_t len, uint32_t src_pe,
                                   const grain_wire_limits_t *limits, char *why, size_t why_size);

/* Applies a validated buffer from a host thread.  PUTs, adds and increments
 * go into `heap`, or, where `records` is not NULL, to `records` as pairs of
 * words (command | offset << 8, value) for the apply kernel (room for one
 * pair per message); active messages run their handlers either way.
 * Returns the pairs written. */
size_t grain_wire_apply(const void *buf, char *heap, grain_am_fn const *handlers, uint64_t *records);

/* Applies one queue message addressed to this rank (already checked by the
 * device; `hdr` carries the command). */
void grain_apply_one(char *heap, grain_am_fn const *handlers, uint32_t src_pe, uint64_t hdr,
                     uint64_t w1, uint64_t w2);

#endif
