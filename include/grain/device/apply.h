/*
 * Applying one PUT, add or increment to this rank's symmetric heap: the same
 * code for host threads (received buffers on shared-memory devices), for the
 * runtime's apply kernel (received buffers on discrete GPUs) and for a
 * producer that applies its own rank's messages in place.
 *
 * Every store and add is atomic and relaxed: concurrent appliers of one rank
 * may hit the same word, and quiet orders them for readers.  Active messages
 * are not applied here: their handlers are the host's functions or the
 * registered program's (grain/device/runtime_kernels.h).
 */
#ifndef GRAIN_DEVICE_APPLY_H
#define GRAIN_DEVICE_APPLY_H

#include "grain/device/ctx.h"

/*
 * A message staged for the apply kernel is a record of three words: a PUT,
 * add or increment is (command | offset << 8, value, 0); an active message is
 * GRAIN_HDR(command, handler, source PE), a0, a1.  Records carry their source,
 * so records of several buffers can share a launch.
 */
#define GRAIN_RECORD_WORDS 3u

/* `offset` was checked against the heap by the sender and the receiver. */
GRAIN_INLINE void grain_apply_msg(GRAIN_GLOBAL char *heap, grain_u32 cmd, grain_u64 offset, grain_u64 value)
{
    GRAIN_GLOBAL char *p = heap + offset;
    switch (cmd) {
    case GRAIN_CMD_PUT32:
        grain_heap_store_u32(p, (grain_u32)value);
        break;
    case GRAIN_CMD_PUT64:
        grain_heap_store_u64(p, value);
        break;
    case GRAIN_CMD_ADD32:
        grain_heap_add_u32(p, (grain_u32)value);
        break;
    case GRAIN_CMD_ADD64:
        grain_heap_add_u64(p, value);
        break;
    case GRAIN_CMD_INC32:
        grain_heap_add_u32(p, 1u);
        break;
    case GRAIN_CMD_INC64:
        grain_heap_add_u64(p, 1u);
        break;
    default:
        break;
    }
}

#endif /* GRAIN_DEVICE_APPLY_H */
