/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cores a rank may count as its own, for the threads grain starts
 * beside the application's (a CPU device's workers, aggregators, receive
 * threads).
 */
#ifndef GRAIN_SERVICES_CORES_H
#define GRAIN_SERVICES_CORES_H

typedef struct grain_cores {
    long online; /* the node's */
    long mine;   /* this rank's share: at least 1 */
    int bound;   /* the rank is bound to fewer than all (mine is then its binding) */
    long ranks;  /* ranks mpirun started on this node; 0: not known */
} grain_cores_t;

/* Those this process is bound to, else the node's online cores over the
 * ranks mpirun started on it (OMPI_COMM_WORLD_LOCAL_SIZE). */
grain_cores_t grain_rank_cores(void);

/* The threads GRAIN_AGGREGATORS=0 and GRAIN_RECV_THREADS=0 start on a GPU
 * rank (cores.c says why): aggregators, of the `spare` cores the
 * application's and the network thread leave, where the buffers this rank
 * receives are `written` into its memory by their senders or copied in by
 * the transport's thread; receive threads, of the `left` cores past every
 * other thread.  At least 1 each. */
unsigned grain_cores_aggregators(long spare, int written);
unsigned grain_cores_receivers(long left);

#endif
