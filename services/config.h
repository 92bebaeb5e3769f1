/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GRAIN_SERVICES_CONFIG_H
#define GRAIN_SERVICES_CONFIG_H

#include <stdint.h>

#include "grain/grain.h"
#include "services/config_vars.h"

#define GRAIN_CONFIG_STR_MAX 256

#define GRAIN_CONFIG_FIELD_STR(f) char f[GRAIN_CONFIG_STR_MAX];
#define GRAIN_CONFIG_FIELD_UINT(f) uint64_t f;
#define GRAIN_CONFIG_FIELD_SIZE(f) uint64_t f;
#define GRAIN_CONFIG_FIELD_BOOL(f) uint64_t f;
#define GRAIN_CONFIG_FIELD(f, env, kind, def, lo, hi, doc) GRAIN_CONFIG_FIELD_##kind(f)

struct grain_config {
    GRAIN_CONFIG_VARS(GRAIN_CONFIG_FIELD)
    /* Where each value came from: "default", "environment" or "api". */
#define GRAIN_CONFIG_ORIGIN(f, env, kind, def, lo, hi, doc) const char *f##_origin;
    GRAIN_CONFIG_VARS(GRAIN_CONFIG_ORIGIN)
#undef GRAIN_CONFIG_ORIGIN
};

/* Defaults only, no environment: what tests start from. */
grain_status_t grain_config_init_defaults(grain_config_t *config);
/* Defaults overridden by the GRAIN_* environment. */
grain_status_t grain_config_init_env(grain_config_t *config);
/* Checks that hold between settings; fails with a sentence naming them. */
grain_status_t grain_config_check(const grain_config_t *config);

/* GRAIN_QUEUE's words, indexed by the protocol numbers of
 * grain/device/queue.h, and the protocol a checked configuration names. */
extern const char *const grain_queue_protocol_names[];
unsigned grain_config_queue_protocol(const grain_config_t *config);
/* GRAIN_AGGREGATION: how far the aggregators combine messages before a
 * buffer leaves.  The narrower scopes are the prior models of Gravel
 * section 3, for comparison. */
typedef enum grain_aggregation {
    GRAIN_AGGREGATE_GPU = 0,  /* a buffer fills from every slot */
    GRAIN_AGGREGATE_WG = 1,   /* a slot's buffers leave once it is read */
    GRAIN_AGGREGATE_NONE = 2, /* a buffer leaves with its first message */
} grain_aggregation_t;
extern const char *const grain_aggregation_names[];
/* Indexed by grain_agent_t, NULL-terminated (region_settings.c). */
extern const char *const grain_agent_names[];
grain_aggregation_t grain_config_aggregation(const grain_config_t *config);

/* GRAIN_SCHED: how the task scheduler runs its elements (grain/sched.h). */
typedef enum grain_sched_mode {
    GRAIN_SCHED_ASYNC,
    GRAIN_SCHED_SYNC,
    GRAIN_SCHED_SERIAL,
} grain_sched_mode_t;
extern const char *const grain_sched_mode_names[];
grain_sched_mode_t grain_config_sched_mode(const grain_config_t *config);

/* GRAIN_SCHED_MEMORY: where the task scheduler keeps its arrays. */
typedef enum grain_sched_memory {
    GRAIN_SCHED_REPLICAS,
    GRAIN_SCHED_MANAGED,
} grain_sched_memory_t;
extern const char *const grain_sched_memory_names[];
grain_sched_memory_t grain_config_sched_memory(const grain_config_t *config);

/* GRAIN_MPI_BUFFERS: how the MPI transport moves packed buffers. */
typedef enum grain_mpi_buffers {
    GRAIN_MPI_BUFFERS_AUTO,
    GRAIN_MPI_BUFFERS_PUT,
    GRAIN_MPI_BUFFERS_SEND,
} grain_mpi_buffers_t;
extern const char *const grain_mpi_buffers_names[];
grain_mpi_buffers_t grain_config_mpi_buffers(const grain_config_t *config);
/* Parses "123", "64K", "1M", "2G" (powers of 1024). */
grain_status_t grain_parse_size(const char *text, uint64_t *value_p);
/* Warns of each GRAIN_* environment variable that grain reads nowhere,
 * naming the closest one it reads (config_unknown.c). */
void grain_config_warn_unknown_env(void);

#endif
