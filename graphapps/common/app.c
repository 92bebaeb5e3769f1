#include "app.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int app_config_option(grain_config_t *config, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    if (strncmp(arg, "--", 2) != 0)
        return 0;
    char name[128];
    snprintf(name, sizeof name, "%s", arg + 2);
    for (char *p = name; *p; p++)
        if (*p == '-')
            *p = '_';
    if (!grain_config_known(name))
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s needs a value\n", arg);
        return -1;
    }
    if (grain_config_set(config, name, argv[*i + 1]) != GRAIN_OK)
        return -1;
    *i += 1;
    return 1;
}

void app_config_usage(FILE *out)
{
    grain_config_t *config;
    if (grain_config_create(&config) != GRAIN_OK)
        return;
    fprintf(out, "\nEvery grain setting is also an option: --queue-slots N, --buffer-size 256, "
                 "--reserve sg, ...\n(GRAIN_QUEUE_SLOTS becomes --queue-slots). The settings:\n\n");
    grain_config_print(config, out);
    grain_config_destroy(config);
}

unsigned long long app_parse_u64(const char *option, const char *text)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-') {
        fprintf(stderr, "%s: \"%s\" is not a whole number\n", option, text);
        exit(APP_EXIT_ERROR);
    }
    return v;
}

double app_parse_real(const char *option, const char *text, double lo, double hi)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "%s \"%s\" must be a number from %g to %g\n", option, text, lo, hi);
        exit(APP_EXIT_ERROR);
    }
    return v;
}

void *app_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL) {
        fprintf(stderr, "no memory for %zu bytes\n", size);
        exit(APP_EXIT_ERROR);
    }
    return p;
}

void app_check(grain_status_t st, const char *what)
{
    if (st == GRAIN_OK)
        return;
    fprintf(stderr, "%s failed: %s (%s)\n", what, grain_strerror(st), grain_error_message(NULL));
    exit(APP_EXIT_ERROR);
}

double app_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void app_json_common(FILE *out, grain_t *g, const char *app)
{
    fprintf(out, "\"app\":\"%s\",\"ranks\":%d,\"backend\":\"%s\",\"device\":\"%s\",\"transport\":\"%s\"",
            app, grain_n_pes(g), grain_backend_name(g), grain_device_name(g), grain_transport_name(g));
}
