/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The command lines of grain's programs (apps, benchmarks, tools), parsed
 * by getopt_long: every option is long, given as --name=value or --name
 * value; --help (and -h) prints the program's usage to stdout and exits 0;
 * an unknown option, a missing value or a stray argument prints one line
 * and a pointer to --help on stderr and exits 2.  A program gathers its
 * options in groups, each with the function that takes them, so that the
 * options several programs share (the apps' --verify, the graph inputs,
 * grain's settings) are declared once.
 */
#ifndef GRAIN_TOOLS_CLI_H
#define GRAIN_TOOLS_CLI_H

#include <stddef.h>
#include <stdio.h>

#define CLI_EXIT_USAGE 2

typedef struct cli_option {
    const char *name; /* --name */
    int has_value;    /* 1: --name=value or --name value */
    int key;          /* handed to the group's take */
} cli_option_t;

typedef struct cli_group {
    const cli_option_t *options;
    size_t count;
    /* Takes one option: `option` is "--name" (for messages), `value` NULL
     * for an option without one.  A bad value exits with a message. */
    void (*take)(void *state, int key, const char *option, const char *value);
    void *state;
} cli_group_t;

#define CLI_GROUP(table, take, state) ((cli_group_t){(table), sizeof(table) / sizeof((table)[0]), (take), (state)})

/* Parses argv[1..] into the groups, in order; an option that two groups
 * declare goes to the first.  Returns the index in argv of the first of
 * the `operands` arguments that are not options (getopt_long moves them
 * last); other counts of them are an error.  `operands` < 0: any number. */
int cli_parse(const char *prog, int argc, char **argv, const cli_group_t *groups, size_t n_groups, int operands,
              void (*usage)(FILE *out));

/* Values, or exit 2 with a message naming the option: a whole number; one
 * from lo to hi; a real number from lo to hi; a byte count with an optional
 * K, M or G suffix (powers of 1024). */
unsigned long long cli_u64(const char *option, const char *value);
unsigned long long cli_u64_in(const char *option, const char *value, unsigned long long lo, unsigned long long hi);
double cli_real(const char *option, const char *value, double lo, double hi);
unsigned long long cli_bytes(const char *option, const char *value);

/* Seconds on the monotonic clock, for the programs' timings. */
double cli_now_s(void);

/* The options of a sweep over message sizes, from --min-bytes to
 * --max-bytes doubling, --iters times each (ep_bench, and the programs it is
 * set beside in bench/peers): a group that takes them into `sweep`, whose
 * fields hold the defaults; cli_sweep_check says, after parsing, whether
 * the range holds a size (else one line on stderr naming `prog`). */
typedef struct cli_sweep {
    unsigned long long min_bytes, max_bytes, iters;
} cli_sweep_t;
cli_group_t cli_sweep_group(cli_sweep_t *sweep);
int cli_sweep_check(const char *prog, const cli_sweep_t *sweep);

#endif
