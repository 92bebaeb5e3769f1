/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What device code knows of the runtime: the per-rank device context the
 * runtime passes as every grain kernel's first argument, the message
 * commands, and the device-side error word.
 */
#ifndef GRAIN_DEVICE_CTX_H
#define GRAIN_DEVICE_CTX_H

#include "grain/device/port.h"
#include "grain/device/queue.h"

/* Message commands, as they travel in the queue and on the wire. */
#define GRAIN_CMD_PUT32 1u
#define GRAIN_CMD_PUT64 2u
#define GRAIN_CMD_ADD32 3u
#define GRAIN_CMD_ADD64 4u
#define GRAIN_CMD_INC32 5u
#define GRAIN_CMD_INC64 6u
#define GRAIN_CMD_AM 7u
#define GRAIN_CMD_PUT64_SIGNAL 8u /* a PUT, then a set or add on a signal word */
#define GRAIN_CMD_FETCH32 9u      /* a get or fetching atomic whose old value comes back as a reply */
#define GRAIN_CMD_FETCH64 10u
#define GRAIN_CMD_REPLY 11u       /* the old value, into the requester's reply slot */
#define GRAIN_CMD_QUIET 12u       /* a work-group quiet: answered once all that arrived before it is applied */
/* A quiet's answer from a rank that sent this one data of gets that do not
 * wait (grain_get64_nbi) before it: the slot is filled only once every
 * buffer that arrived before it is applied here. */
#define GRAIN_CMD_REPLY_AFTER 13u
#define GRAIN_CMD_COUNT 14u
/* A run of PUTs, adds or increments of one command (the wire only:
 * grain/device/apply.h). */
#define GRAIN_CMD_RUN 14u
/* A message of four words takes two columns of its slot (never the wire):
 * the first column's handler field names the second, whose command is
 * this, whose handler field holds the signal operation and whose rows hold
 * the signal word's offset and the signal value (a put with signal), or the
 * value compared and the reply ticket (a fetch). */
#define GRAIN_CMD_MORE 0xffu

/* A fetch's reply ticket: the operation (GRAIN_AMO_*), the requester's reply
 * slot and the slot's generation; the wire carries it as the fetch's last
 * word, and the reply its slot and generation in its first. */
#define GRAIN_TICKET(op, slot, gen) ((grain_u64)(op) | ((grain_u64)(slot) << 8) | ((grain_u64)(gen) << 32))
#define GRAIN_TICKET_OP(t) ((grain_u32)((t) & 0xffu))
#define GRAIN_TICKET_SLOT(t) ((grain_u32)(((t) >> 8) & 0xffffffu))
#define GRAIN_TICKET_GEN(t) ((grain_u32)((t) >> 32))
#define GRAIN_REPLY_SLOTS_MAX (1u << 24)

/* Signal operations, OpenSHMEM's SHMEM_SIGNAL_SET and SHMEM_SIGNAL_ADD. */
#define GRAIN_SIGNAL_SET 0u
#define GRAIN_SIGNAL_ADD 1u

/* Rows of a message in the queue: header, offset (or first AM argument),
 * value (or second AM argument). */
#define GRAIN_MSG_ROWS 3u

/* Queue header word: command, handler id, destination PE. */
#define GRAIN_HDR(cmd, handler, pe) \
    ((grain_u64)(cmd) | ((grain_u64)(handler) << 8) | ((grain_u64)(pe) << 32))
#define GRAIN_HDR_CMD(h) ((grain_u32)((h) & 0xffu))
#define GRAIN_HDR_HANDLER(h) ((grain_u32)(((h) >> 8) & 0xffffu))
#define GRAIN_HDR_PE(h) ((grain_u32)((h) >> 32))

#define GRAIN_MAX_HANDLERS 256u

/* Kinds of device-side error: the first one a kernel hits is kept. */
#define GRAIN_DEV_ERR_NONE 0u
#define GRAIN_DEV_ERR_BAD_PE 1u
#define GRAIN_DEV_ERR_BAD_OFFSET 2u
#define GRAIN_DEV_ERR_BAD_HANDLER 3u
#define GRAIN_DEV_ERR_BAD_WAIT 4u /* cmd: the word's width; value: its offset */
#define GRAIN_DEV_ERR_BAD_CMP 5u  /* cmd: the word's width; value: the comparison */
#define GRAIN_DEV_ERR_BAD_SIGNAL 6u    /* value: the signal word's offset */
#define GRAIN_DEV_ERR_BAD_SIGNAL_OP 7u /* value: the operation */
#define GRAIN_DEV_ERR_BAD_SIZE 8u      /* cmd: PUT32 for a bulk put, 0 for a bulk get; value: its bytes */
#define GRAIN_DEV_ERR_BAD_FETCH_PE 9u  /* a get or fetching atomic; cmd: the word's width; value: the PE */
#define GRAIN_DEV_ERR_BAD_FETCH 10u    /* cmd: the word's width; value: its offset */
#define GRAIN_DEV_ERR_BAD_GET_DEST 11u /* a get that does not wait; cmd: the width; value: the destination's offset */
#define GRAIN_DEV_ERR_BAD_COMBINE 12u  /* grain_combine_begin; cmd: the words a key fits; value: the words asked */
#define GRAIN_DEV_ERR_BAD_COMBINE_WORD 13u /* grain_combine_add; cmd: the key's words; value: the word */

/* Where a kernel reports its first bad call; in host memory, which the host
 * reads after the kernel. */
typedef struct grain_dev_err {
    grain_u32 kind;    /* GRAIN_DEV_ERR_*, set once */
    grain_u32 cmd;
    grain_u64 value;   /* the bad PE, offset or handler id */
    grain_u64 item;    /* global linear id of the work-item */
    grain_i32 pe;      /* the destination the message named */
    grain_u32 pad;
} grain_dev_err_t;

/* Another rank's heap as this rank's kernels reach it (the direct path). */
typedef struct grain_peer {
    GRAIN_DPTR(char) heap; /* mapped here; 0: messages to that rank go through the queue */
} grain_peer_t;

/*
 * The device context: what every send reads, so it lives where kernels read
 * fastest (device memory on discrete GPUs) and never changes while kernels
 * run; the runtime uploads it again when a handler is registered.
 */
typedef struct grain_dev {
    GRAIN_DPTR(char) heap;           /* this rank's copy of the symmetric heap */
    grain_u64 heap_size;
    grain_queue_desc_t queue;        /* this rank's device-to-host queue */
    GRAIN_DPTR(grain_dev_err_t) err;
    GRAIN_DPTR(grain_peer_t) peers;  /* n_pes entries: the ranks whose heaps are mapped here */
    /* Reply slots of this rank's gets and fetching atomics through the
     * transport: a value and a tag a slot, in memory the host and apply
     * kernels write; the tag is 2 x generation while the slot is free for
     * that generation, one more once its reply is in.  reply_next, in
     * device memory, hands out slot and generation. */
    GRAIN_DPTR(grain_u64) replies;
    GRAIN_DPTR(grain_u64) reply_next;
    grain_u32 reply_slots;
    grain_u32 my_pe;
    grain_u32 n_pes;
    grain_u32 handlers[GRAIN_MAX_HANDLERS / 32];        /* bit set: handler id registered */
    grain_u32 device_handlers[GRAIN_MAX_HANDLERS / 32]; /* bit set: it runs on the device */
} grain_dev_t;

GRAIN_INLINE void grain_dev_error(GRAIN_GLOBAL grain_dev_t *ctx, grain_u32 kind, grain_u32 cmd, grain_i32 pe,
                                  grain_u64 value, grain_u64 item)
{
    GRAIN_GLOBAL grain_dev_err_t *e = ctx->err;
    grain_u32 none = GRAIN_DEV_ERR_NONE;
    if (grain_atomic_cas_u32(&e->kind, &none, kind)) {
        e->cmd = cmd;
        e->pe = pe;
        e->value = value;
        e->item = item;
    }
}

/* Whether the `width` bytes at heap offset `offset` are an aligned word of
 * the heap, as every destination, signal word, fetched word, get's
 * destination and waited-on word must be. */
GRAIN_INLINE int grain_heap_word_(GRAIN_GLOBAL grain_dev_t *ctx, grain_u64 offset, grain_u32 width)
{
    return offset <= ctx->heap_size - width && offset % width == 0;
}

GRAIN_INLINE int grain_handler_bit_(GRAIN_GLOBAL const grain_u32 *bits, grain_u32 id)
{
    return id < GRAIN_MAX_HANDLERS && ((bits[id / 32] >> (id % 32)) & 1u);
}

GRAIN_INLINE int grain_handler_registered(GRAIN_GLOBAL grain_dev_t *ctx, grain_u32 id)
{
    return grain_handler_bit_(ctx->handlers, id);
}

/* Registered with grain_am_register_program: the program's own copy runs it. */
GRAIN_INLINE int grain_handler_on_device(GRAIN_GLOBAL grain_dev_t *ctx, grain_u32 id)
{
    return grain_handler_bit_(ctx->device_handlers, id);
}

/* An increment carries no value: its queue message leaves the value row
 * unwritten (a third of the bytes a slot moves over the host link), so
 * that no reader may look at it, and the wire and runs carry none. */
GRAIN_INLINE grain_u32 grain_cmd_valueless(grain_u32 cmd)
{
    return cmd == GRAIN_CMD_INC32 || cmd == GRAIN_CMD_INC64;
}

/* The rows of its slot a message of `cmd` fills: all but an increment's
 * value row. */
GRAIN_INLINE grain_u32 grain_cmd_rows(grain_u32 cmd)
{
    return grain_cmd_valueless(cmd) ? GRAIN_MSG_ROWS - 1u : GRAIN_MSG_ROWS;
}

/* Bytes a command touches at its destination (0 for active messages). */
GRAIN_INLINE grain_u32 grain_cmd_width(grain_u32 cmd)
{
    switch (cmd) {
    case GRAIN_CMD_PUT32:
    case GRAIN_CMD_ADD32:
    case GRAIN_CMD_INC32:
    case GRAIN_CMD_FETCH32:
        return 4;
    case GRAIN_CMD_PUT64:
    case GRAIN_CMD_ADD64:
    case GRAIN_CMD_INC64:
    case GRAIN_CMD_PUT64_SIGNAL: /* its data word; the signal word is 64-bit too */
    case GRAIN_CMD_FETCH64:
        return 8;
    default:
        return 0;
    }
}

#endif /* GRAIN_DEVICE_CTX_H */
