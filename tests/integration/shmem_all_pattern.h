/* SPDX-License-Identifier: BSD-3-Clause */
/* Which lanes are active, and the values they send: shared by the kernel and
 * the host's expectations. */
#ifndef SHMEM_ALL_PATTERN_H
#define SHMEM_ALL_PATTERN_H

#include "grain/device/port.h"

#define PATTERNS 5 /* all, none, one per work-group, alternating, hashed */
#define SHMEM_ALL_HOST_AM 3
#define SHMEM_ALL_DEVICE_AM 4

GRAIN_INLINE int pattern_active(grain_u32 pattern, grain_u32 rank, grain_u64 gid, grain_u32 lid)
{
    switch (pattern) {
    case 0: return 1;
    case 1: return 0;
    case 2: return lid == 0;
    case 3: return (gid + rank) % 2 == 0;
    default: return (((gid + 1) * 2654435761u + rank * 97u) >> 5) % 3 == 0;
    }
}

/* Trip count of the divergent per-lane loop. */
GRAIN_INLINE grain_i64 lane_trips(grain_u32 rank, grain_u64 gid)
{
    return (grain_i64)((gid * 7 + rank) % 5);
}

GRAIN_INLINE grain_i64 put_value(grain_u32 rank, grain_u64 gid)
{
    return ((grain_i64)rank << 40) + (grain_i64)gid + 1;
}

#endif
