/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which agent, chunk size and transfer threads a region gets (grain.h,
 * grain_region_desc_t): the description's, the settings', the transfer
 * profile's, the defaults, in that order, field by field.
 *
 * The transfer profile is a text file that bench/transfer_profile.py keeps:
 * '#' comments and one line per (device, app),
 *
 *   device <TAB> app <TAB> agent <TAB> chunk bytes <TAB> threads [<TAB> anything]
 *
 * where the rest of a line records how the choice was measured.  The last
 * line for a key wins.  A line that is not of this form is an error that
 * names the file and the line: a profile that silently did nothing would
 * leave a run slower with nobody the wiser.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/grain_impl.h"
#include "runtime/transfers/region.h"
#include "services/cache_path.h"
#include "services/log.h"

#define DEFAULT_CHUNK_BYTES (256u << 10)
#define DEFAULT_HOST_THREADS 1u
#define DEFAULT_DEVICE_GROUPS 16u

/* Indexed by grain_agent_t; GRAIN_TRANSFER_AGENT takes these words. */
const char *const grain_agent_names[GRAIN_AGENT_COUNT + 1] = {"auto",   "bulk",   "host", "device",
                                                              "launch", "inline", "ideal", NULL};

const char *grain_agent_name(grain_agent_t agent)
{
    return (unsigned)agent < GRAIN_AGENT_COUNT ? grain_agent_names[agent] : "?";
}

/* GRAIN_AGENT_COUNT for a name that is none. */
static grain_agent_t agent_of(const char *name)
{
    unsigned a = 0;
    while (name != NULL && a < GRAIN_AGENT_COUNT && strcmp(name, grain_agent_names[a]) != 0)
        a++;
    return name != NULL ? (grain_agent_t)a : GRAIN_AGENT_COUNT;
}

grain_status_t grain_agent_parse(const char *name, grain_agent_t *agent_p)
{
    grain_agent_t a = agent_of(name);
    if (a == GRAIN_AGENT_COUNT)
        return grain_fail(GRAIN_ERR_INVALID,
                          "unknown transfer agent \"%s\": expected auto, bulk, host, device, launch, inline or ideal",
                          name ? name : "(null)");
    *agent_p = a;
    return GRAIN_OK;
}

typedef struct profile_entry {
    grain_agent_t agent;
    uint64_t chunk_bytes;
    unsigned threads;
} profile_entry_t;

/* The profile's path in `out` (empty: none). */
static void profile_path(const grain_t *g, char *out, size_t size)
{
    grain_cache_path(g->config.transfer_profile, "transfer-profile.tsv", out, size);
}

static int parse_entry(char **f, profile_entry_t *e)
{
    char *end;
    e->agent = agent_of(f[2]);
    if (e->agent == GRAIN_AGENT_COUNT || e->agent == GRAIN_AGENT_AUTO)
        return 0;
    errno = 0;
    e->chunk_bytes = strtoull(f[3], &end, 10);
    if (errno != 0 || end == f[3] || *end != '\0' || e->chunk_bytes < 8)
        return 0;
    unsigned long threads = strtoul(f[4], &end, 10);
    if (errno != 0 || end == f[4] || *end != '\0' || threads == 0 || threads > 1024)
        return 0;
    e->threads = (unsigned)threads;
    return 1;
}

/* Looks up (this device, name); *found says whether a line matched. */
static grain_status_t profile_lookup(grain_t *g, const char *name, profile_entry_t *e, int *found)
{
    char path[4096], *line = NULL;
    size_t cap = 0;
    *found = 0;
    profile_path(g, path, sizeof path);
    FILE *f = path[0] != '\0' ? fopen(path, "r") : NULL;
    /* No profile at the default place is the usual case; one named that is
     * not there is a mistake. */
    if (f == NULL && path[0] != '\0' && g->config.transfer_profile[0] != '\0')
        return grain_fail(GRAIN_ERR_CONFIG, "GRAIN_TRANSFER_PROFILE=%s: cannot read it (%s)", path, strerror(errno));
    if (f == NULL)
        return GRAIN_OK;
    const char *device = grain_device_name(g);
    grain_status_t st = GRAIN_OK;
    for (unsigned number = 1; st == GRAIN_OK && getline(&line, &cap, f) >= 0; number++) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *fields[6];
        profile_entry_t entry;
        if (grain_cache_fields(line, fields, 6) < 5 || !parse_entry(fields, &entry))
            st = grain_fail(GRAIN_ERR_CONFIG,
                            "transfer profile %s, line %u: expected device, app, agent (bulk, host, device, "
                            "launch, inline, ideal), chunk bytes (at least 8) and threads (1 to 1024), separated by "
                            "tabs (GRAIN_TRANSFER_PROFILE=none ignores the file)",
                            path, number);
        else if (strcmp(fields[0], device) == 0 && strcmp(fields[1], name) == 0)
            *e = entry, *found = 1;
    }
    free(line);
    fclose(f);
    if (st == GRAIN_OK && *found)
        grain_info("transfer profile %s: %s on %s: %s agent, chunks of %llu bytes, %u threads", path, name, device,
                   grain_agent_name(e->agent), (unsigned long long)e->chunk_bytes, e->threads);
    return st;
}

grain_status_t grain_region_settings(grain_t *g, const grain_region_desc_t *d, grain_region_settings_t *s)
{
    *s = (grain_region_settings_t){.agent = d->agent, .chunk_bytes = d->chunk_bytes,
                                   .threads = d->transfer_threads};
    if ((unsigned)d->agent >= GRAIN_AGENT_COUNT)
        return grain_fail(GRAIN_ERR_INVALID, "region: unknown transfer agent %d", (int)d->agent);
    if (s->agent == GRAIN_AGENT_AUTO) /* grain_config_check took only agents' names */
        s->agent = agent_of(g->config.transfer_agent);
    if (s->chunk_bytes == 0)
        s->chunk_bytes = g->config.chunk_size;
    if (s->threads == 0)
        s->threads = (unsigned)g->config.transfer_threads;

    profile_entry_t e;
    int found = 0;
    int open = s->agent == GRAIN_AGENT_AUTO || s->chunk_bytes == 0 || s->threads == 0;
    grain_status_t st = open && d->name != NULL ? profile_lookup(g, d->name, &e, &found) : GRAIN_OK;
    if (st != GRAIN_OK)
        return st;
    /* The profile's chunk size and threads were measured with its agent. */
    if (found && (s->agent == GRAIN_AGENT_AUTO || s->agent == e.agent)) {
        s->profiled = s->agent == GRAIN_AGENT_AUTO || s->chunk_bytes == 0 || s->threads == 0;
        s->agent = e.agent;
        s->chunk_bytes = s->chunk_bytes ? s->chunk_bytes : e.chunk_bytes;
        s->threads = s->threads ? s->threads : e.threads;
    }
    if (s->agent == GRAIN_AGENT_AUTO)
        s->agent = GRAIN_AGENT_HOST;
    if (s->chunk_bytes == 0)
        s->chunk_bytes = DEFAULT_CHUNK_BYTES;
    if (s->threads == 0)
        s->threads = s->agent == GRAIN_AGENT_DEVICE || s->agent == GRAIN_AGENT_LAUNCH ? DEFAULT_DEVICE_GROUPS
                                                                                      : DEFAULT_HOST_THREADS;
    if (s->chunk_bytes < 8)
        return grain_fail(GRAIN_ERR_INVALID, "region: chunks of %llu bytes; at least 8",
                          (unsigned long long)s->chunk_bytes);
    if (s->agent == GRAIN_AGENT_HOST && s->threads > GRAIN_COPY_LANES)
        return grain_fail(GRAIN_ERR_INVALID, "region: %u host agent threads; at most %u", s->threads,
                          GRAIN_COPY_LANES);
    return GRAIN_OK;
}
