/* SPDX-License-Identifier: BSD-3-Clause */
#include "services/config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grain/device/queue.h"
#include "services/log.h"

typedef enum { KIND_STR, KIND_UINT, KIND_SIZE, KIND_BOOL } var_kind_t;

typedef struct config_var {
    const char *name; /* field name, e.g. queue_slots */
    const char *env;  /* e.g. GRAIN_QUEUE_SLOTS */
    var_kind_t kind;
    const char *def;
    uint64_t lo, hi;
    const char *doc;
    size_t offset;
    size_t origin_offset;
} config_var_t;

#define CONFIG_VAR(f, e, kind, def, lo, hi, doc)                                              \
    {#f, "GRAIN_" #e, KIND_##kind, def, lo, hi, doc, offsetof(struct grain_config, f),        \
     offsetof(struct grain_config, f##_origin)},
static const config_var_t config_vars[] = {GRAIN_CONFIG_VARS(CONFIG_VAR)};
#undef CONFIG_VAR

#define N_VARS (sizeof config_vars / sizeof config_vars[0])

grain_status_t grain_parse_size(const char *text, uint64_t *value_p)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return GRAIN_ERR_CONFIG;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno == ERANGE)
        return GRAIN_ERR_CONFIG;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (shift && (*end == 'b' || *end == 'B'))
        end++;
    while (isspace((unsigned char)*end))
        end++;
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return GRAIN_ERR_CONFIG;
    *value_p = (uint64_t)v << shift;
    return GRAIN_OK;
}

static grain_status_t parse_bool(const char *text, uint64_t *value_p)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off", ""};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (strcasecmp(text, yes[i]) == 0)
            return *value_p = 1, GRAIN_OK;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (strcasecmp(text, no[i]) == 0)
            return *value_p = 0, GRAIN_OK;
    return GRAIN_ERR_CONFIG;
}

static grain_status_t set_var(grain_config_t *config, const config_var_t *var, const char *text,
                              const char *origin)
{
    char *field = (char *)config + var->offset;
    uint64_t v = 0;
    switch (var->kind) {
    case KIND_STR:
        if (strlen(text) >= GRAIN_CONFIG_STR_MAX)
            return grain_fail(GRAIN_ERR_CONFIG, "%s is longer than %d characters", var->env,
                              GRAIN_CONFIG_STR_MAX - 1);
        strcpy(field, text);
        break;
    case KIND_BOOL:
        if (parse_bool(text, &v) != GRAIN_OK)
            return grain_fail(GRAIN_ERR_CONFIG, "%s=\"%s\": expected 0/1, yes/no, true/false",
                              var->env, text);
        memcpy(field, &v, sizeof v);
        break;
    case KIND_UINT:
    case KIND_SIZE:
        if (var->kind == KIND_UINT ? (grain_parse_size(text, &v) != GRAIN_OK || strpbrk(text, "kKmMgG"))
                                   : grain_parse_size(text, &v) != GRAIN_OK)
            return grain_fail(GRAIN_ERR_CONFIG, "%s=\"%s\": expected a whole number%s", var->env,
                              text, var->kind == KIND_SIZE ? " of bytes (K, M, G suffixes allowed)" : "");
        if (v < var->lo || v > var->hi)
            return grain_fail(GRAIN_ERR_CONFIG, "%s=%s is out of range: it must be %llu to %llu (%s)",
                              var->env, text, (unsigned long long)var->lo,
                              (unsigned long long)var->hi, var->doc);
        memcpy(field, &v, sizeof v);
        break;
    }
    memcpy((char *)config + var->origin_offset, &origin, sizeof origin);
    return GRAIN_OK;
}

static const config_var_t *find_var(const char *name)
{
    for (size_t i = 0; i < N_VARS; i++)
        if (strcasecmp(name, config_vars[i].name) == 0 || strcasecmp(name, config_vars[i].env) == 0)
            return &config_vars[i];
    return NULL;
}

int grain_config_known(const char *name)
{
    return name != NULL && find_var(name) != NULL;
}

const char *grain_config_name(size_t index)
{
    return index < N_VARS ? config_vars[index].name : NULL;
}

grain_status_t grain_config_init_defaults(grain_config_t *config)
{
    memset(config, 0, sizeof *config);
    for (size_t i = 0; i < N_VARS; i++) {
        grain_status_t st = set_var(config, &config_vars[i], config_vars[i].def, "default");
        if (st != GRAIN_OK)
            return st;
    }
    return GRAIN_OK;
}

grain_status_t grain_config_init_env(grain_config_t *config)
{
    grain_status_t st = grain_config_init_defaults(config);
    for (size_t i = 0; st == GRAIN_OK && i < N_VARS; i++) {
        const char *text = getenv(config_vars[i].env);
        if (text != NULL)
            st = set_var(config, &config_vars[i], text, "environment");
    }
    return st;
}

/* A string setting that takes one of a few words: the error lists them. */
static grain_status_t check_choice(const char *env, const char *value, const char *const *choices)
{
    char expected[128] = "";
    for (size_t i = 0; choices[i] != NULL; i++) {
        if (strcmp(value, choices[i]) == 0)
            return GRAIN_OK;
        const char *sep = i == 0 ? "" : choices[i + 1] == NULL ? " or " : ", ";
        size_t len = strlen(expected);
        snprintf(expected + len, sizeof expected - len, "%s%s", sep, choices[i]);
    }
    return grain_fail(GRAIN_ERR_CONFIG, "GRAIN_%s=\"%s\": expected %s", env, value, expected);
}

/* The index of `value` among `names` (NULL-terminated); 0, the default,
 * for any other (grain_config_check refuses those first). */
static unsigned choice_index(const char *value, const char *const *names)
{
    for (unsigned i = 0; names[i] != NULL; i++)
        if (strcmp(value, names[i]) == 0)
            return i;
    return 0;
}

/* Indexed by grain_aggregation_t. */
const char *const grain_aggregation_names[] = {"gpu", "wg", "none", NULL};

grain_aggregation_t grain_config_aggregation(const grain_config_t *c)
{
    return (grain_aggregation_t)choice_index(c->aggregation, grain_aggregation_names);
}

/* Indexed by GRAIN_QUEUE_PAPER and GRAIN_QUEUE_RING. */
const char *const grain_queue_protocol_names[] = {"paper", "ring", NULL};

unsigned grain_config_queue_protocol(const grain_config_t *c)
{
    return strcmp(c->queue, "paper") == 0 ? GRAIN_QUEUE_PAPER : GRAIN_QUEUE_RING;
}

/* Indexed by grain_sched_mode_t. */
const char *const grain_sched_mode_names[] = {"async", "sync", "serial", NULL};

grain_sched_mode_t grain_config_sched_mode(const grain_config_t *c)
{
    return (grain_sched_mode_t)choice_index(c->sched, grain_sched_mode_names);
}

/* Indexed by grain_sched_memory_t. */
const char *const grain_sched_memory_names[] = {"replicas", "managed", NULL};

grain_sched_memory_t grain_config_sched_memory(const grain_config_t *c)
{
    return (grain_sched_memory_t)choice_index(c->sched_memory, grain_sched_memory_names);
}

/* Indexed by grain_mpi_buffers_t. */
const char *const grain_mpi_buffers_names[] = {"auto", "put", "send", NULL};

grain_mpi_buffers_t grain_config_mpi_buffers(const grain_config_t *c)
{
    return (grain_mpi_buffers_t)choice_index(c->mpi_buffers, grain_mpi_buffers_names);
}

grain_status_t grain_config_check(const grain_config_t *c)
{
    static const char *const reserves[] = {"wg", "sg", "wi", NULL};
    static const char *const transports[] = {"auto", "mpi", "self", "verbs", NULL};
    static const char *const mpi_threads[] = {"auto", "multiple", "serialized", NULL};
    static const char *const applies[] = {"auto", "host", "device", NULL};
    static const char *const ib_opcodes[] = {"write_imm", "send", NULL};
    static const char *const peers[] = {"auto", "off", NULL};
    grain_status_t st = check_choice("RESERVE", c->reserve, reserves);
    if (st == GRAIN_OK)
        st = check_choice("QUEUE", c->queue, grain_queue_protocol_names);
    if (st == GRAIN_OK)
        st = check_choice("APPLY", c->apply, applies);
    if (st == GRAIN_OK)
        st = check_choice("PEER", c->peer, peers);
    if (st == GRAIN_OK)
        st = check_choice("AGGREGATION", c->aggregation, grain_aggregation_names);
    /* A list: each of its names one of the transports, and at least one. */
    char list[GRAIN_CONFIG_STR_MAX], *save = NULL;
    unsigned names = 0;
    snprintf(list, sizeof list, "%s", c->transport);
    for (char *name = strtok_r(list, ",", &save); st == GRAIN_OK && name != NULL; name = strtok_r(NULL, ",", &save)) {
        st = check_choice("TRANSPORT", name, transports);
        names++;
    }
    if (st == GRAIN_OK && names == 0)
        st = check_choice("TRANSPORT", c->transport, transports);
    if (st == GRAIN_OK)
        st = check_choice("MPI_THREADS", c->mpi_threads, mpi_threads);
    if (st == GRAIN_OK)
        st = check_choice("MPI_BUFFERS", c->mpi_buffers, grain_mpi_buffers_names);
    if (st == GRAIN_OK)
        st = check_choice("IB_OPCODE", c->ib_opcode, ib_opcodes);
    if (st == GRAIN_OK)
        st = check_choice("LOG_LEVEL", c->log_level, grain_log_level_names);
    if (st == GRAIN_OK)
        st = check_choice("TRANSFER_AGENT", c->transfer_agent, grain_agent_names);
    if (st == GRAIN_OK)
        st = check_choice("SCHED", c->sched, grain_sched_mode_names);
    if (st == GRAIN_OK)
        st = check_choice("SCHED_MEMORY", c->sched_memory, grain_sched_memory_names);
    static const char *const blas_kernels[] = {"auto", "grain", "vendor", NULL};
    if (st == GRAIN_OK)
        st = check_choice("BLAS_KERNELS", c->blas_kernels, blas_kernels);
    static const char *const blas_stage[] = {"auto", "on", "off", NULL};
    if (st == GRAIN_OK)
        st = check_choice("BLAS_STAGE", c->blas_stage, blas_stage);
    return st;
}

grain_status_t grain_config_create(grain_config_t **config_p)
{
    grain_config_t *config = malloc(sizeof *config);
    if (config == NULL)
        return grain_fail(GRAIN_ERR_NO_MEMORY, "no memory for a configuration");
    grain_status_t st = grain_config_init_env(config);
    if (st != GRAIN_OK) {
        free(config);
        return st;
    }
    *config_p = config;
    return GRAIN_OK;
}

grain_status_t grain_config_set(grain_config_t *config, const char *name, const char *value)
{
    if (config == NULL || name == NULL || value == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_config_set needs a configuration, a name and a value");
    const config_var_t *var = find_var(name);
    if (var == NULL)
        return grain_fail(GRAIN_ERR_CONFIG, "unknown setting \"%s\" (grain_config_print lists them)",
                          name);
    return set_var(config, var, value, "api");
}

void grain_config_print(const grain_config_t *config, FILE *out)
{
    fprintf(out, "grain %s settings: the GRAIN_* variable, its value (where the value came from), what it does\n",
            grain_version());
    for (size_t i = 0; i < N_VARS; i++) {
        const config_var_t *var = &config_vars[i];
        const char *field = (const char *)config + var->offset;
        const char *origin;
        memcpy(&origin, (const char *)config + var->origin_offset, sizeof origin);
        char value[GRAIN_CONFIG_STR_MAX + 2];
        if (var->kind == KIND_STR) {
            snprintf(value, sizeof value, "\"%s\"", field);
        } else {
            uint64_t v;
            memcpy(&v, field, sizeof v);
            snprintf(value, sizeof value, "%llu", (unsigned long long)v);
        }
        fprintf(out, "%-28s %-12s (%s)\n    %s\n", var->env, value, origin, var->doc);
    }
}

void grain_config_destroy(grain_config_t *config)
{
    free(config);
}
