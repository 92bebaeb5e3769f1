/* What MPI alone moves between 4 ranks of one host, as grain's pieces do
 * (1 MiB pieces, each rank's 4 MiB slice to every other rank, 20 steps). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t piece = argc > 1 ? strtoull(argv[1], 0, 0) : 1 << 20, slice = argc > 2 ? strtoull(argv[2], 0, 0) : 4 << 20;
    int steps = 20, per = (int)(slice / piece);
    char *sbuf = malloc(slice), *rbuf = malloc(slice * n);
    memset(sbuf, 1, slice); memset(rbuf, 0, slice * n);
    MPI_Request *rq = malloc(sizeof *rq * 2 * per * n);
    double best = 1e9, sum = 0;
    for (int s = 0; s < steps + 2; s++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        int k = 0;
        for (int p = 0; p < n; p++) {
            if (p == me) continue;
            for (int i = 0; i < per; i++) {
                MPI_Irecv(rbuf + p * slice + i * piece, (int)piece, MPI_BYTE, p, i, MPI_COMM_WORLD, &rq[k++]);
                MPI_Isend(sbuf + i * piece, (int)piece, MPI_BYTE, p, i, MPI_COMM_WORLD, &rq[k++]);
            }
        }
        MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        if (s >= 2) { sum += t; if (t < best) best = t; }
    }
    if (me == 0)
        printf("%d ranks, %zu-byte pieces, %zu-byte slices to every other rank: %.3f ms a step (best %.3f), "
               "%.2f GB/s received per rank\n", n, piece, slice, sum / steps * 1e3, best * 1e3,
               (double)slice * (n - 1) / (sum / steps) / 1e9);
    MPI_Finalize();
    return 0;
}
