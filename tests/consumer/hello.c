/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The smallest grain program: every work-item of every rank increments a
 * counter on every rank; each rank checks that its counter saw them all, and
 * that the library is the version of the headers it was compiled with.
 *
 *   hello              the device source embedded by grain_embed
 *   hello FILE.cl      read at run time, its #include "grain/device.h" found
 *                      by the runtime compiler
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grain/grain.h"
#include "grain/version.h"

extern const char hello_source[];

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        grain_status_t st_ = (call);                                                                   \
        if (st_ != GRAIN_OK) {                                                                         \
            fprintf(stderr, "hello: %s: %s (%s)\n", #call, grain_strerror(st_), grain_error_message(NULL)); \
            return 1;                                                                                  \
        }                                                                                              \
    } while (0)

/* The whole file, NUL-terminated; NULL if it cannot be read. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long size = -1;
    if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)size + 1)) != NULL && fread(text, 1, (size_t)size, f) == (size_t)size)
        text[size] = '\0';
    else if (text != NULL) {
        free(text);
        text = NULL;
    }
    if (f != NULL)
        fclose(f);
    return text;
}

int main(int argc, char **argv)
{
    if (strcmp(grain_version(), GRAIN_VERSION_STRING) != 0) {
        fprintf(stderr, "hello: library %s, headers %s\n", grain_version(), GRAIN_VERSION_STRING);
        return 1;
    }
    char *file = argc > 1 ? read_file(argv[1]) : NULL;
    if (argc > 1 && file == NULL) {
        fprintf(stderr, "hello: cannot read %s\n", argv[1]);
        return 1;
    }
    grain_t *g;
    CHECK(grain_init(NULL, &g));
    int64_t *counter, got = 0;
    CHECK(grain_malloc(g, sizeof *counter, (void **)&counter));
    CHECK(grain_memcpy(g, counter, &got, sizeof got));
    CHECK(grain_barrier_all(g));
    grain_program_t *prog;
    grain_kernel_t *k;
    CHECK(grain_program_create(g, file != NULL ? file : hello_source, NULL, &prog));
    CHECK(grain_kernel_create(prog, "hello", &k));
    CHECK(grain_kernel_set_arg_ptr(k, 1, counter));
    size_t global = 256, local = 64;
    CHECK(grain_launch(k, 1, &global, &local));
    CHECK(grain_barrier_all(g));
    CHECK(grain_memcpy(g, &got, counter, sizeof got));
    int64_t want = (int64_t)global * grain_n_pes(g);
    printf("hello: grain %s, rank %d of %d: %lld increments, expected %lld\n", grain_version(), grain_my_pe(g),
           grain_n_pes(g), (long long)got, (long long)want);
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    CHECK(grain_free(g, counter));
    CHECK(grain_finalize(g));
    free(file);
    return got == want ? 0 : 1;
}
