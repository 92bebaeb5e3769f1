/* SPDX-License-Identifier: BSD-3-Clause */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "app.h"

const char *const app_model_names[APP_MODELS] = {"grain", "msg-per-lane", "coalesced", "coalesced-aggregated",
                                                  "coprocessor", "coprocessor-buffered"};

/* APP_COALESCED_MAX_PES in model_send.h */
#define COALESCED_MAX_PES 256
#define EXTRA_BUFFERING (1u << 20)
/* grain's per-destination buffer (GRAIN_BUFFER_SIZE's default), as the
 * paper gives its coprocessor model "the same amount of buffering". */
#define GRAIN_BUFFERING (64u << 10)

enum { MODEL_MODEL, MODEL_PERNODE_BYTES };

static void take_model(void *state, int key, const char *option, const char *value)
{
    app_model_options_t *m = state;
    if (key == MODEL_PERNODE_BYTES) {
        m->pernode_bytes = (size_t)cli_u64(option, value);
        if (m->pernode_bytes < 16) {
            fprintf(stderr, "--pernode-bytes must hold one 16-byte message\n");
            exit(APP_EXIT_ERROR);
        }
        return;
    }
    for (int k = 0; k < APP_MODELS; k++)
        if (strcmp(value, app_model_names[k]) == 0) {
            m->model = (app_model_t)k;
            return;
        }
    fprintf(stderr, "--model %s: expected one of grain, msg-per-lane, coalesced, coalesced-aggregated, "
                    "coprocessor, coprocessor-buffered\n", value);
    exit(APP_EXIT_ERROR);
}

cli_group_t app_model_group(app_model_options_t *m)
{
    static const cli_option_t options[] = {{"model", 1, MODEL_MODEL}, {"pernode-bytes", 1, MODEL_PERNODE_BYTES}};
    return CLI_GROUP(options, take_model, m);
}

void app_model_usage(FILE *out)
{
    fprintf(out, "  --model M           networking model (Gravel, section 3): grain (default), msg-per-lane,\n"
                 "                      coalesced, coalesced-aggregated, coprocessor, coprocessor-buffered;\n"
                 "                      all but grain send to other ranks through the network (GRAIN_PEER=off)\n"
                 "  --pernode-bytes N   coprocessor models: bytes of each per-node queue (default\n"
                 "                      64K, grain's default buffer; 1M for coprocessor-buffered)\n");
}

void app_model_configure(const char *app, app_model_options_t *m, grain_config_t *config)
{
    const char *aggregation = m->model == APP_MSG_PER_LANE ? "none" : m->model == APP_COALESCED ? "wg" : NULL;
    if (aggregation != NULL && grain_config_set(config, "aggregation", aggregation) != GRAIN_OK) {
        fprintf(stderr, "%s: --model %s: cannot set GRAIN_AGGREGATION\n", app, app_model_names[m->model]);
        exit(APP_EXIT_ERROR);
    }
    /* The prior models put every message to another rank on the network,
     * ranks of one node too: what they differ in is what crosses it. */
    if (m->model != APP_GRAIN && grain_config_set(config, "peer", "off") != GRAIN_OK) {
        fprintf(stderr, "%s: --model %s: cannot set GRAIN_PEER\n", app, app_model_names[m->model]);
        exit(APP_EXIT_ERROR);
    }
    if (m->pernode_bytes == 0)
        m->pernode_bytes = m->model == APP_COPROCESSOR_BUFFERED ? EXTRA_BUFFERING : GRAIN_BUFFERING;
}

void app_model_check(grain_t *g, const char *app, const app_model_options_t *m)
{
    char why[128];
    if ((m->model == APP_COALESCED || m->model == APP_COALESCED_AGGREGATED) && grain_n_pes(g) > COALESCED_MAX_PES) {
        snprintf(why, sizeof why, "--model %s sorts into at most %d ranks in local memory, not %d",
                 app_model_names[m->model], COALESCED_MAX_PES, grain_n_pes(g));
        app_fail(g, app, why);
    }
}

int app_model_is_coprocessor(const app_model_options_t *m)
{
    return m->model == APP_COPROCESSOR || m->model == APP_COPROCESSOR_BUFFERED;
}

void app_model_kernel_name(const app_model_options_t *m, const char *name, char *out, size_t size)
{
    const char *suffix = app_model_is_coprocessor(m) ? "_coprocessor"
                         : m->model == APP_COALESCED || m->model == APP_COALESCED_AGGREGATED ? "_coalesced"
                                                                                            : "";
    snprintf(out, size, "%s%s", name, suffix);
}

#define PAIR_BYTES (2 * sizeof(uint64_t))

void app_coprocessor_init(grain_t *g, grain_program_t *prog, const app_model_options_t *m, app_coprocessor_t *c)
{
    size_t n = (size_t)grain_n_pes(g);
    memset(c, 0, sizeof *c);
    c->capacity = m->pernode_bytes / PAIR_BYTES;
    size_t queues = n * c->capacity * PAIR_BYTES;
    app_check(grain_mem_alloc(g, queues, (void **)&c->queue), "allocating the per-node queues");
    app_check(grain_mem_alloc(g, queues, (void **)&c->arrived), "allocating the arrival buffer");
    app_check(grain_mem_alloc(g, n * sizeof *c->tails, (void **)&c->tails), "allocating the queue tails");
    c->host_tails = app_malloc(n * sizeof *c->host_tails);
    c->zeros = app_malloc(n * sizeof *c->zeros);
    memset(c->zeros, 0, n * sizeof *c->zeros);
    c->outgoing = app_malloc(queues);
    c->incoming = app_malloc(queues);
    c->send_bytes = app_malloc(n * sizeof *c->send_bytes);
    c->recv_bytes = app_malloc(n * sizeof *c->recv_bytes);
    app_check(grain_memcpy(g, c->tails, c->zeros, n * sizeof *c->tails), "zeroing the queue tails");
    app_check(grain_kernel_create(prog, "app_pernode_apply", &c->apply), "creating the apply kernel");
}

void app_coprocessor_args(app_coprocessor_t *c, grain_kernel_t *k, unsigned first)
{
    app_kernel_ptrs(k, first, 2, (void *const[]){c->queue, c->tails});
    app_check(grain_kernel_set_arg(k, first + 2, sizeof c->capacity, &c->capacity), "setting kernel arguments");
}

void app_coprocessor_exchange(grain_t *g, app_coprocessor_t *c, void *base)
{
    size_t n = (size_t)grain_n_pes(g), at = 0;
    app_check(grain_wait(g), "waiting for the chunk's kernels");
    app_check(grain_memcpy(g, c->host_tails, c->tails, n * sizeof *c->tails), "reading the queue tails");
    app_check(grain_memcpy(g, c->tails, c->zeros, n * sizeof *c->tails), "zeroing the queue tails");
    for (size_t p = 0; p < n; p++) {
        c->send_bytes[p] = (size_t)c->host_tails[p] * PAIR_BYTES;
        if (c->send_bytes[p] > 0) {
            app_check(grain_memcpy(g, (char *)c->outgoing + at, c->queue + p * c->capacity * 2, c->send_bytes[p]),
                      "reading a per-node queue");
            c->sends++;
            c->bytes += c->send_bytes[p];
        }
        at += c->send_bytes[p];
    }
    app_check(grain_alltoallv(g, c->outgoing, c->send_bytes, c->capacity * PAIR_BYTES, c->incoming, c->recv_bytes),
              "exchanging the per-node queues");
    c->rounds++;
    uint64_t pairs = 0;
    for (size_t p = 0; p < n; p++)
        pairs += c->recv_bytes[p] / PAIR_BYTES;
    if (pairs == 0)
        return;
    app_check(grain_memcpy(g, c->arrived, c->incoming, pairs * PAIR_BYTES), "copying the arrived messages");
    app_kernel_ptrs(c->apply, 1, 2, (void *const[]){base, c->arrived});
    app_check(grain_kernel_set_arg(c->apply, 3, sizeof pairs, &pairs), "setting kernel arguments");
    size_t wg = 256, global = app_grid(pairs, wg);
    app_check(grain_launch(c->apply, 1, &global, &wg), "launching the apply kernel");
    app_check(grain_wait(g), "applying the arrived messages");
}

void app_coprocessor_json(grain_t *g, FILE *out, const app_coprocessor_t *c)
{
    uint64_t total[2] = {c->sends, c->bytes};
    app_check(grain_allreduce(g, total, 2, GRAIN_UINT64, GRAIN_SUM), "summing the per-node sends");
    if (out != NULL)
        fprintf(out,
                ",\"coprocessor\":{\"capacity\":%llu,\"rounds\":%llu,\"sends\":%llu,\"bytes\":%llu,"
                "\"mean_message_bytes\":%.1f}",
                (unsigned long long)c->capacity, (unsigned long long)c->rounds, (unsigned long long)total[0],
                (unsigned long long)total[1], total[0] ? (double)total[1] / (double)total[0] : 0.0);
}

void app_coprocessor_free(grain_t *g, app_coprocessor_t *c)
{
    grain_kernel_destroy(c->apply);
    app_device_free(g, c->queue);
    app_device_free(g, c->arrived);
    app_device_free(g, c->tails);
    free(c->host_tails);
    free(c->zeros);
    free(c->outgoing);
    free(c->incoming);
    free(c->send_bytes);
    free(c->recv_bytes);
    memset(c, 0, sizeof *c);
}
