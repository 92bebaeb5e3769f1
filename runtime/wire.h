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
#include <string.h>

#include "grain/device/apply.h" /* the records of grain_wire_apply */
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
 * 0 if the command is unknown or the offset does not fit.  Inline: the
 * aggregator calls it once per message. */
static inline size_t grain_wire_encode(uint8_t *dst, uint64_t hdr, uint64_t w1, uint64_t w2)
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
        memcpy(dst + 16, &w2, 8);
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
    const grain_am_table_t *am;
} grain_wire_limits_t;

/* Whether a received `what` ("buffer", "chunk piece") of `len` bytes from
 * rank `src` says so itself (`said_src`, `said_bytes`): 0, or -1 with a
 * sentence in `why` naming the field that disagrees. */
int grain_wire_check_origin(const char *what, uint32_t src, size_t len, uint32_t said_src, uint32_t said_bytes,
                            char *why, size_t why_size);

/*
 * Checks a whole received buffer before anything of it is applied: header,
 * sizes, every command, offset, alignment and handler.  On error returns
 * GRAIN_ERR_BAD_MESSAGE, GRAIN_ERR_BAD_OFFSET or GRAIN_ERR_BAD_HANDLER and
 * writes a sentence naming the message and field to `why`.
 */
grain_status_t grain_wire_validate(const void *buf, size_t len, uint32_t src_pe,
                                   const grain_wire_limits_t *limits, char *why, size_t why_size);

/*
 * Applies a validated buffer from a host thread, or stages its messages as
 * records for the apply kernel (grain/device/apply.h): active messages for
 * device handlers always, PUTs, adds and increments when `stage_puts`; the
 * rest is applied here, into `heap` or by host handlers.  `records` has room
 * for one record per message (it may be NULL when nothing is staged).
 * Returns the records written.
 */
size_t grain_wire_apply(const void *buf, char *heap, const grain_am_table_t *am, uint64_t *records,
                        int stage_puts);

/* Applies one queue message addressed to this rank on this thread (already
 * checked by the device; `hdr` carries the command; an active message's
 * handler is a host function). */
void grain_apply_one(char *heap, const grain_am_table_t *am, uint32_t src_pe, uint64_t hdr, uint64_t w1,
                     uint64_t w2);

#endif
