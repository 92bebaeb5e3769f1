/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --model: the prior GPU networking models of Gravel, section 3, for the
 * apps that compare them (gups, pagerank).  Their kernels share one body;
 * the send differs (model_send.h), and so does the host side:
 *
 *   grain                 the runtime as it is: one queue, GPU-wide aggregation
 *   msg-per-lane          the same kernel, every message its own network message
 *                         (GRAIN_AGGREGATION=none)
 *   coalesced             work-groups sort by destination and send a list per
 *                         destination, one network message each (GRAIN_AGGREGATION=wg)
 *   coalesced-aggregated  the same lists, repacked GPU-wide by the aggregators
 *   coprocessor           per-node queues in device memory, shipped by the host
 *                         between launches of chunks that cannot overflow them,
 *                         as much buffering as grain's default buffers (64 KiB)
 *   coprocessor-buffered  the same with 1 MiB per node ("extra buffering")
 */
#ifndef GRAIN_GRAPHAPPS_MODEL_H
#define GRAIN_GRAPHAPPS_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "grain/grain.h"
#include "tools/cli/cli.h"

typedef enum app_model {
    APP_GRAIN,
    APP_MSG_PER_LANE,
    APP_COALESCED,
    APP_COALESCED_AGGREGATED,
    APP_COPROCESSOR,
    APP_COPROCESSOR_BUFFERED,
    APP_MODELS
} app_model_t;

extern const char *const app_model_names[APP_MODELS];

typedef struct app_model_options {
    app_model_t model;
    size_t pernode_bytes; /* --pernode-bytes; 0: the model's default */
} app_model_options_t;

/* --model NAME and --pernode-bytes N; a bad value exits with APP_EXIT_ERROR. */
cli_group_t app_model_group(app_model_options_t *m);
void app_model_usage(FILE *out);
/* Sets what the model changes in grain's settings; call before app_init. */
void app_model_configure(const char *app, app_model_options_t *m, grain_config_t *config);
/* Collective, after app_init: fails the run when the model cannot run on
 * this many ranks. */
void app_model_check(grain_t *g, const char *app, const app_model_options_t *m);
/* The kernel that sends under the model: `name`, name_coalesced or name_coprocessor. */
void app_model_kernel_name(const app_model_options_t *m, const char *name, char *out, size_t size);
int app_model_is_coprocessor(const app_model_options_t *m);

/* The host side of the coprocessor model: n_pes queues of `capacity`
 * (index, value) pairs in device memory, filled by a chunk's kernels, then
 * shipped with grain_alltoallv and applied at their owners by the
 * app_pernode_apply kernel. */
typedef struct app_coprocessor {
    uint64_t capacity; /* pairs per destination: the largest chunk of messages */
    uint64_t *queue, *tails, *arrived; /* device memory */
    uint64_t *host_tails, *zeros, *outgoing, *incoming;
    size_t *send_bytes, *recv_bytes;
    grain_kernel_t *apply;
    uint64_t rounds, sends, bytes; /* per-destination messages this rank shipped */
} app_coprocessor_t;

void app_coprocessor_init(grain_t *g, grain_program_t *prog, const app_model_options_t *m, app_coprocessor_t *c);
/* Sets the producer kernel's queue, tails and capacity arguments, from `first`. */
void app_coprocessor_args(app_coprocessor_t *c, grain_kernel_t *k, unsigned first);
/* Collective, after a chunk's kernels were launched: waits for them, ships
 * the queues and applies what arrived to `base` (symmetric heap). */
void app_coprocessor_exchange(grain_t *g, app_coprocessor_t *c, void *base);
/* Collective: the model's network figures, summed over ranks, as a --json
 * field (leading comma) on `out` where it is not NULL. */
void app_coprocessor_json(grain_t *g, FILE *out, const app_coprocessor_t *c);
void app_coprocessor_free(grain_t *g, app_coprocessor_t *c);

#endif
