/* SPDX-License-Identifier: BSD-3-Clause */
#include "tools/cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* getopt_long's values for the options: 256 + the option's place in the
 * flattened table, above every short option's character. */
#define CLI_FIRST 256

static void usage_error(const char *prog, const char *what)
{
    fprintf(stderr, "%s: %s (%s --help lists the options)\n", prog, what, prog);
    exit(CLI_EXIT_USAGE);
}

int cli_parse(const char *prog, int argc, char **argv, const cli_group_t *groups, size_t n_groups, int operands,
              void (*usage)(FILE *out))
{
    size_t n = 0;
    for (size_t g = 0; g < n_groups; g++)
        n += groups[g].count;
    struct option *longs = calloc(n + 2, sizeof *longs);
    size_t *group_of = calloc(n + 1, sizeof *group_of);
    const cli_option_t **option_of = calloc(n + 1, sizeof *option_of);
    if (longs == NULL || group_of == NULL || option_of == NULL) {
        fprintf(stderr, "%s: no memory for the options\n", prog);
        exit(CLI_EXIT_USAGE);
    }
    size_t k = 0;
    for (size_t g = 0; g < n_groups; g++)
        for (size_t i = 0; i < groups[g].count; i++) {
            const cli_option_t *o = &groups[g].options[i];
            /* getopt_long matches the first of two equal names, as the
             * groups' order says. */
            longs[k] = (struct option){o->name, o->has_value ? required_argument : no_argument, NULL,
                                       CLI_FIRST + (int)k};
            group_of[k] = g;
            option_of[k++] = o;
        }
    longs[k] = (struct option){"help", no_argument, NULL, 'h'};
    opterr = 0; /* its messages name no way out; ours name --help */
    optind = 1;
    int c;
    char what[512];
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            exit(0);
        }
        const char *arg = argv[optind - 1];
        if (c == ':') {
            snprintf(what, sizeof what, "%s needs a value", arg);
            usage_error(prog, what);
        }
        if (c == '?' && optopt >= CLI_FIRST) { /* --flag=value */
            snprintf(what, sizeof what, "--%s takes no value", option_of[optopt - CLI_FIRST]->name);
            usage_error(prog, what);
        }
        if (c == '?' && optopt > 0) {
            snprintf(what, sizeof what, "unknown option -%c", (char)optopt);
            usage_error(prog, what);
        }
        if (c == '?') {
            snprintf(what, sizeof what, "unknown or ambiguous option %s", arg);
            usage_error(prog, what);
        }
        size_t i = (size_t)(c - CLI_FIRST);
        char option[256];
        snprintf(option, sizeof option, "--%s", option_of[i]->name);
        const cli_group_t *group = &groups[group_of[i]];
        group->take(group->state, option_of[i]->key, option, option_of[i]->has_value ? optarg : NULL);
    }
    free(longs);
    free(group_of);
    free(option_of);
    int extra = argc - optind;
    if (operands >= 0 && extra != operands) {
        if (extra > operands)
            snprintf(what, sizeof what, "unexpected argument %s", argv[optind + operands]);
        else
            snprintf(what, sizeof what, "%d argument%s missing", operands - extra, operands - extra == 1 ? "" : "s");
        usage_error(prog, what);
    }
    return optind;
}

static void bad_value(const char *option, const char *value, const char *expected)
{
    fprintf(stderr, "%s: \"%s\" is not %s\n", option, value, expected);
    exit(CLI_EXIT_USAGE);
}

unsigned long long cli_u64(const char *option, const char *value)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || value[0] == '-')
        bad_value(option, value, "a whole number");
    return v;
}

unsigned long long cli_u64_in(const char *option, const char *value, unsigned long long lo, unsigned long long hi)
{
    unsigned long long v = cli_u64(option, value);
    if (v < lo || v > hi) {
        char expected[96];
        snprintf(expected, sizeof expected, "from %llu to %llu", lo, hi);
        bad_value(option, value, expected);
    }
    return v;
}

double cli_real(const char *option, const char *value, double lo, double hi)
{
    char *end;
    double v = strtod(value, &end);
    if (end == value || *end != '\0' || !(v >= lo && v <= hi)) {
        char expected[96];
        snprintf(expected, sizeof expected, "a number from %g to %g", lo, hi);
        bad_value(option, value, expected);
    }
    return v;
}

unsigned long long cli_bytes(const char *option, const char *value)
{
    static const char suffixes[] = "KMG";
    size_t len = strlen(value);
    const char *unit = len > 0 ? strchr(suffixes, value[len - 1]) : NULL;
    if (unit == NULL || *unit == '\0')
        return cli_u64(option, value);
    char number[64];
    if (len >= sizeof number)
        bad_value(option, value, "a byte count");
    memcpy(number, value, len - 1);
    number[len - 1] = '\0';
    unsigned shift = 10 * (unsigned)(unit - suffixes + 1);
    unsigned long long v = cli_u64(option, number);
    if (v > ~0ull >> shift)
        bad_value(option, value, "a byte count below 2^64");
    return v << shift;
}

double cli_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { SWEEP_MIN, SWEEP_MAX, SWEEP_ITERS };

static void take_sweep(void *state, int key, const char *option, const char *value)
{
    cli_sweep_t *sweep = state;
    if (key == SWEEP_MIN)
        sweep->min_bytes = cli_bytes(option, value);
    else if (key == SWEEP_MAX)
        sweep->max_bytes = cli_bytes(option, value);
    else
        sweep->iters = cli_u64_in(option, value, 1, 1000000);
}

cli_group_t cli_sweep_group(cli_sweep_t *sweep)
{
    static const cli_option_t options[] = {
        {"min-bytes", 1, SWEEP_MIN}, {"max-bytes", 1, SWEEP_MAX}, {"iters", 1, SWEEP_ITERS}};
    return CLI_GROUP(options, take_sweep, sweep);
}

int cli_sweep_check(const char *prog, const cli_sweep_t *sweep)
{
    if (sweep->max_bytes > 0 && sweep->min_bytes <= sweep->max_bytes)
        return 1;
    fprintf(stderr, "%s: --min-bytes %llu and --max-bytes %llu: no size between them\n", prog, sweep->min_bytes,
            sweep->max_bytes);
    return 0;
}
