/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grain beside an application's own MPI (docs/mpi-interop.md): the
 * application initializes MPI, splits MPI_COMM_WORLD into two halves whose
 * ranks run in the reverse order of the world's, and starts grain on its
 * half.  Each half is a grain job of its own: its PEs are the half's ranks
 * in the half's order, and every work-item of every PE increments a counter
 * on every PE of its half alone.  The application calls MPI on the world
 * while kernels run and after grain_finalize, which leaves MPI to it.
 *
 *   mpi_comm             the above (run on 2 ranks or more)
 *   mpi_comm self        GRAIN_TRANSPORT=self with a communicator: refused
 *   mpi_comm early       a communicator before MPI_Init: refused
 *   mpi_comm bad-size    an attribute struct without its size: refused
 * Prints "mpi_comm <mode>: passed" on every rank that passed.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "grain/grain.h"
#include "tests/integration/check_ok.h"

extern const char hello_source[];

/* Expects `call` to fail with `want` and a sentence holding `words`. */
static int refused(const char *mode, grain_status_t st, grain_status_t want, const char *words)
{
    if (st == want && strstr(grain_error_message(NULL), words) != NULL)
        return 0;
    fprintf(stderr, "mpi_comm %s: got %s (%s), expected %s saying \"%s\"\n", mode, grain_strerror(st),
            grain_error_message(NULL), grain_strerror(want), words);
    return 1;
}

static int run_halves(int world_rank, int world_size)
{
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_size - world_rank, &half);
    int half_rank, half_size;
    MPI_Comm_rank(half, &half_rank);
    MPI_Comm_size(half, &half_size);

    grain_init_attr_t attr = {.size = sizeof attr, .mpi_comm = &half};
    grain_t *g;
    OK(grain_init_attr(NULL, &attr, &g));
    int bad = grain_my_pe(g) != half_rank || grain_n_pes(g) != half_size;
    if (bad)
        fprintf(stderr, "mpi_comm: world rank %d is PE %d of %d, expected %d of %d\n", world_rank, grain_my_pe(g),
                grain_n_pes(g), half_rank, half_size);

    int64_t *counter, got = 0;
    OK(grain_malloc(g, sizeof *counter, (void **)&counter));
    OK(grain_memcpy(g, counter, &got, sizeof got));
    OK(grain_barrier_all(g));
    grain_program_t *prog;
    grain_kernel_t *k;
    OK(grain_program_create(g, hello_source, NULL, &prog));
    OK(grain_kernel_create(prog, "hello", &k));
    OK(grain_kernel_set_arg_ptr(k, 1, counter));
    size_t global = 256, local = 64;
    OK(grain_launch(k, 1, &global, &local));
    /* The application's own collective on the world while grain's threads
     * carry the kernel's messages on their duplicate of the half. */
    int ranks = 0;
    MPI_Allreduce(&(int){1}, &ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad |= ranks != world_size;
    OK(grain_barrier_all(g));
    OK(grain_memcpy(g, &got, counter, sizeof got));
    int64_t want = (int64_t)global * half_size;
    if (got != want) {
        fprintf(stderr, "mpi_comm: PE %d of half %d counted %lld increments, expected %lld\n", half_rank,
                world_rank % 2, (long long)got, (long long)want);
        bad = 1;
    }
    grain_kernel_destroy(k);
    grain_program_destroy(prog);
    OK(grain_free(g, counter));
    OK(grain_finalize(g));

    /* MPI is still the application's. */
    int all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_free(&half);
    return all_bad;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "halves";
    grain_t *g;
    int bad = 0;
    if (strcmp(mode, "early") == 0) {
        MPI_Comm world = MPI_COMM_WORLD;
        grain_init_attr_t attr = {.size = sizeof attr, .mpi_comm = &world};
        bad = refused(mode, grain_init_attr(NULL, &attr, &g), GRAIN_ERR_STATE, "before MPI_Init");
        printf("mpi_comm %s: %s\n", mode, bad ? "FAILED" : "passed");
        return bad;
    }
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int world_rank, world_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm world = MPI_COMM_WORLD;
    if (strcmp(mode, "self") == 0) {
        grain_config_t *config;
        OK(grain_config_create(&config));
        OK(grain_config_set(config, "transport", "self"));
        grain_init_attr_t attr = {.size = sizeof attr, .mpi_comm = &world};
        bad = refused(mode, grain_init_attr(config, &attr, &g), GRAIN_ERR_CONFIG, "GRAIN_TRANSPORT=self");
        grain_config_destroy(config);
    } else if (strcmp(mode, "bad-size") == 0) {
        grain_init_attr_t attr = {.mpi_comm = &world};
        bad = refused(mode, grain_init_attr(NULL, &attr, &g), GRAIN_ERR_INVALID, "sizeof(grain_init_attr_t)");
    } else if (strcmp(mode, "halves") == 0) {
        bad = run_halves(world_rank, world_size);
    } else {
        fprintf(stderr, "usage: mpi_comm [self|early|bad-size]\n");
        bad = 2;
    }
    MPI_Finalize();
    printf("mpi_comm %s: %s\n", mode, bad ? "FAILED" : "passed");
    return bad;
}
