/* What every graphapp shares: grain settings as command-line options, exit
 * codes, timing and the common part of the --json object. */
#ifndef GRAIN_GRAPHAPPS_APP_H
#define GRAIN_GRAPHAPPS_APP_H

#include <stdio.h>

#include "grain/grain.h"

/* Exit codes of every app. */
#define APP_EXIT_OK 0
#define APP_EXIT_VERIFY_FAILED 1
#define APP_EXIT_ERROR 2

/* If argv[*i] is "--<grain setting>" (e.g. --queue-slots 64, --buffer-size
 * 256), applies it to `config`, advances *i past its value and returns 1;
 * returns 0 for other options and -1 after printing an error. */
int app_config_option(grain_config_t *config, int argc, char **argv, int *i);
/* Prints the grain settings an app accepts as options. */
void app_config_usage(FILE *out);

/* Parses an unsigned decimal option value or exits with a message. */
unsigned long long app_parse_u64(const char *option, const char *text);
/* Parses a number from lo to hi or exits with a message. */
double app_parse_real(const char *option, const char *text, double lo, double hi);

/* malloc that exits with a message when there is no memory (0 bytes: 1). */
void *app_malloc(size_t size);

/* Prints `what` failed with grain's explanation and exits with APP_EXIT_ERROR. */
void app_check(grain_status_t st, const char *what);

double app_seconds(void);

/* Writes the fields every app's --json object starts with (no braces). */
void app_json_common(FILE *out, grain_t *g, const char *app);

#endif
