/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every setting of grain, once: name, GRAIN_<ENV> variable, kind, default and
 * one line of documentation.  config.c turns this table into the struct, the
 * parser, the API setter and grain_config_print().
 */
#ifndef GRAIN_SERVICES_CONFIG_VARS_H
#define GRAIN_SERVICES_CONFIG_VARS_H

/* X(field, ENV, kind, default, minimum, maximum, doc); kind is STR, UINT, SIZE or BOOL. */
#define GRAIN_CONFIG_VARS(X)                                                                      \
    X(backend, BACKEND, STR, "auto", 0, 0,                                                        \
      "GPU API: auto (the first built-in one with a device: cuda, hip, opencl), cuda, hip, opencl") \
    X(transport, TRANSPORT, STR, "auto", 0, 0,                                                    \
      "how ranks talk: auto (mpi when built in and started by mpirun, else self), mpi, self, "   \
      "verbs (InfiniBand/RoCE, bootstrapped over MPI); a list (verbs,mpi) takes the first that " \
      "opens, with a warning")                                                                   \
    X(ib_device, IB_DEVICE, STR, "", 0, 0, "RDMA device of the verbs transport (default: the first)") \
    X(ib_port, IB_PORT, UINT, "1", 1, 255, "port of that device")                                  \
    X(ib_gid_index, IB_GID_INDEX, STR, "auto", 0, 0,                                              \
      "GID table entry the verbs transport routes by on RoCE: a number, or auto (RoCE v2 with "    \
      "an IPv4 address first, as ibv_devinfo -v lists them)")                                    \
    X(ib_opcode, IB_OPCODE, STR, "write_imm", 0, 0,                                               \
      "how the verbs transport moves buffers into a peer's ring: write_imm (RDMA write with the "  \
      "length as immediate data) or send (send/receive into the posted slots)")                 \
    X(ib_put, IB_PUT, BOOL, "1", 0, 1,                                                            \
      "the verbs transport RDMA-writes chunks of counter-triggered transfers from the symmetric "  \
      "heap straight into the destinations' (0: as pieces through the receive rings)")          \
    X(queue, QUEUE, STR, "ring", 0, 0,                                                            \
      "device-to-host queue: ring (a ring per group of work-groups, host-returned credits) or "  \
      "paper (Gravel's one queue of system-scope tickets, the baseline)")                      \
    X(queue_rings, QUEUE_RINGS, UINT, "0", 0, 65536,                                              \
      "rings of the ring queue; 0: one per compute unit of the device")                          \
    X(queue_slots, QUEUE_SLOTS, UINT, "0", 0, 1u << 24,                                           \
      "slots per ring; one work-group send fills one slot; 0: 64 per ring of the ring queue, "   \
      "256 in the paper's queue (one ring)")                                                     \
    X(queue_width, QUEUE_WIDTH, UINT, "256", 2, 4096,                                             \
      "messages per slot, and so the largest work-group size a grain kernel may use; at least "  \
      "2, the columns of a put with signal")                                                     \
    X(aggregators, AGGREGATORS, UINT, "0", 0, 64,                                                 \
      "aggregator threads draining the queue (more than one may reorder messages between quiets; " \
      "at most one a ring of the ring queue); 0: on a GPU, half the cores this rank's share "      \
      "leaves, at most 6, or where peers put buffers into this rank's memory all but the receive " \
      "threads' half, at most 10; 1 on a CPU device")                                             \
    X(buffer_size, BUFFER_SIZE, SIZE, "64K", 64, 1u << 30,                                        \
      "bytes of one per-destination buffer, the largest network message")                        \
    X(buffers_per_dest, BUFFERS_PER_DEST, UINT, "3", 1, 1024,                                     \
      "per-destination buffers (one filling, the others in flight)")                             \
    X(aggregation, AGGREGATION, STR, "gpu", 0, 0,                                                 \
      "what one network message combines: gpu (messages from the whole device to a destination, " \
      "the default), wg (one work-group send's messages to a destination: the coalesced-API "  \
      "model), none (one message each: the message-per-lane model)")                            \
    X(flush_timeout_us, FLUSH_TIMEOUT_US, UINT, "125", 1, 60000000,                               \
      "microseconds after its first message that a partly filled buffer is sent, once none of "  \
      "its destination's buffers is in flight (at most 8 times as long)")                        \
    X(heap_size, HEAP_SIZE, SIZE, "64M", 4096, 1ull << 40,                                        \
      "bytes of symmetric heap per rank")                                                        \
    X(apply, APPLY, STR, "auto", 0, 0,                                                            \
      "who applies messages to the heap: device (the heap in device memory, received buffers "   \
      "applied by a kernel, the rank's own messages in place by their sender), host (the heap "  \
      "in host memory, the rank's own messages and received buffers applied by host threads), " \
      "auto (device on GPUs with memory of their own)")                                          \
    X(apply_agent, APPLY_AGENT, STR, "auto", 0, 0,                                                \
      "work-groups of the resident apply agent, a kernel that applies received buffers beside "   \
      "the producers instead of after them (CUDA, HIP, GRAIN_APPLY=device): a number, off, or "    \
      "auto (32 where ranks are reached through the transport, else off)")                        \
    X(apply_stages, APPLY_STAGES, UINT, "0", 0, 4096,                                             \
      "stages of the device apply path, each a buffer's worth of pinned memory that a received "  \
      "buffer is copied into for an apply kernel or the agent; a buffer that finds none free "    \
      "waits in host memory and is copied again; 0: on a GPU as many as 256 MiB hold (4096 at "  \
      "most), on a CPU device twice the posted receives, 32 to 256")                              \
    X(reply_slots, REPLY_SLOTS, UINT, "4096", 1, 1u << 24,                                        \
      "gets and fetching atomics through the transport a rank may have waiting for their replies "  \
      "at once; a lane that finds none free waits for one")                                       \
    X(peer, PEER, STR, "auto", 0, 0,                                                              \
      "the direct path: auto (the ranks of a node map each other's heaps and a work-item "       \
      "applies a message to such a rank itself, never through the queue; on CUDA and HIP the "   \
      "heap is then device memory that host threads reach only through grain_memcpy), off "     \
      "(every message to another rank, and every region's chunks, through the transport)")      \
    X(node_ranks, NODE_RANKS, UINT, "0", 0, 1u << 24,                                             \
      "ranks that count as one node: 0, those on one host; N, also only ranks r and s with "     \
      "r / N == s / N (emulated nodes, so that one host tests direct and transport paths "       \
      "together)")                                                                               \
    X(mpi_threads, MPI_THREADS, STR, "auto", 0, 0,                                                \
      "who calls MPI_Isend: multiple (each aggregator, under MPI_THREAD_MULTIPLE), serialized "   \
      "(the network thread only), auto (multiple when the MPI library provides it)")             \
    X(mpi_buffers, MPI_BUFFERS, STR, "auto", 0, 0,                                                \
      "how the MPI transport moves packed buffers: put (MPI_Put into a ring of the peer's window: "  \
      "the sending thread copies, the receiver polls), send (MPI_Isend into posted receives), "    \
      "auto (put where the ranks share one node and their windows allow it, else send)")         \
    X(recv_buffers, RECV_BUFFERS, UINT, "0", 0, 65536,                                            \
      "receives kept posted by the network thread (verbs: slots of each peer's ring; MPI puts: "  \
      "the slots of all peers' rings); 0: "                                                      \
      "buffers_per_dest x aggregators for each peer, plus one per receive thread, 4 to 256")    \
    X(recv_threads, RECV_THREADS, UINT, "0", 0, 64,                                               \
      "threads that validate and apply received buffers: 1, the network thread itself; more, "   \
      "that many threads beside it, to which it hands the buffers; 0: the cores this rank's "    \
      "share leaves after its other threads, at most 4, on a GPU; 1 on a CPU device")            \
    X(transfer_agent, TRANSFER_AGENT, STR, "auto", 0, 0,                                          \
      "who moves the chunks of a region that does not say: bulk, host, device, launch, inline, "  \
      "ideal, or auto (the transfer profile's for this device and app, else host)")             \
    X(chunk_size, CHUNK_SIZE, SIZE, "0", 0, 1ull << 40,                                           \
      "bytes of a chunk of counter-triggered transfers, where a region does not say; 0: the "   \
      "transfer profile's, else 256K")                                                           \
    X(transfer_threads, TRANSFER_THREADS, UINT, "0", 0, 1024,                                     \
      "host threads (host agent) or work-groups (device agent, each launched copy) that move "  \
      "chunks; 0: the transfer profile's, else 1 host thread, 16 work-groups")                 \
    X(peer_memory, PEER_MEMORY, BOOL, "1", 0, 1,                                                  \
      "regions in memory the ranks of one node map (CUDA/HIP IPC; shared memory on a CPU "       \
      "OpenCL device), chunks moving device to device; 0, or GRAIN_PEER=off: in the symmetric "  \
      "heap, chunks through the transport as between nodes")                                    \
    X(device_launch, DEVICE_LAUNCH, BOOL, "1", 0, 1,                                              \
      "build programs so that kernels launch kernels, which the launch agent needs (CUDA: "      \
      "relocatable code linked with the device runtime; OpenCL: enqueue_kernel, where the "       \
      "device has device-side enqueue); 0: plain builds")                                         \
    X(launch_pending, LAUNCH_PENDING, UINT, "0", 0, 1u << 24,                                     \
      "CUDA: launches from kernels the device keeps room for (the launch agent's copies not yet " \
      "done); 0: as many as the largest region has chunks; fewer save device memory, and the "   \
      "host makes the copies the device had no room for (OpenCL's device queue takes the "        \
      "device's largest size)")                                                                   \
    X(transfer_profile, TRANSFER_PROFILE, STR, "", 0, 0,                                          \
      "the best transfer settings per (device, app), as bench/transfer_profile.py writes them; " \
      "empty: $XDG_CACHE_HOME/grain/transfer-profile.tsv (~/.cache/grain/...); none: no profile") \
    X(peer_timeout_s, PEER_TIMEOUT_S, UINT, "60", 0, 86400,                                       \
      "seconds after which a rank that sends nothing (not even the heartbeat every quarter of "   \
      "it), accepts none of the buffers sent to it, or leaves a gap in its buffers ends the job "  \
      "on every rank with GRAIN_ERR_PEER naming it; 0: wait forever")                           \
    X(ep_devices, EP_DEVICES, UINT, "0", 0, 1024,                                                 \
      "device endpoints grain_ep_run starts on each rank where the call says 0 (grain/ep.h): 0, "   \
      "the rank's share of its node's devices, at least 1; more than there are share devices")   \
    X(ep_staging, EP_STAGING, SIZE, "2G", 0, 1ull << 50,                                          \
      "memory each endpoint keeps, and reuses, for its messages in flight (grain/ep.h), of each "  \
      "kind: on its device for those waiting for an endpoint of its rank to post the receive, "   \
      "pinned for those between ranks; a message that finds no room takes malloc'ed memory, as "  \
      "every one does with 0")                                                                    \
    X(ep_window, EP_WINDOW, SIZE, "256M", 0, 1ull << 40,                                          \
      "device memory each endpoint offers the other ranks of its node (grain/ep.h): a message "    \
      "to one of their endpoints of at least GRAIN_EP_WINDOW_MIN bytes is copied into it, and "   \
      "the receiver's device copies it out, no host byte between; at most 4M on a CPU device, "   \
      "where it saves no copy; 0: every message between ranks crosses the host")                \
    X(ep_window_min, EP_WINDOW_MIN, SIZE, "64K", 0, 1ull << 40,                                   \
      "the smallest message between endpoints of ranks of one node that takes the sender's "      \
      "window; smaller ones cross the host, which costs them less")                              \
    X(ep_coll_messages, EP_COLL_MESSAGES, SIZE, "256K", 0, 1ull << 40,                             \
      "the smallest endpoint collective but the barrier (a broadcast's or a reduction's bytes, a "  \
      "slot's for allgather, gather, scatter and alltoall) that moves as messages between the "    \
      "endpoints, device to device where they can, once the ranks agree on it, instead of "       \
      "through the host's collective; 0: none does")                                              \
    X(sched_devices, SCHED_DEVICES, UINT, "0", 0, 63,                                             \
      "devices grain_sched_create opens (grain/sched.h): 0, every device of the backend on the "  \
      "node; more than there are share devices")                                                  \
    X(sched, SCHED, STR, "async", 0, 0,                                                           \
      "how the task scheduler runs its elements: async (at once where their dependencies "        \
      "allow), sync (each waited for when it starts), serial (in order on the first device and "  \
      "one stream: the oracle)")                                                                  \
    X(sched_memory, SCHED_MEMORY, STR, "replicas", 0, 0,                                          \
      "where the task scheduler keeps its arrays: replicas (a host copy and one on each device "   \
      "that uses the array, copied as elements need them), managed (one allocation of CUDA or HIP " \
      "managed memory, migrated by the driver, prefetched where elements run)")                   \
    X(sched_profile, SCHED_PROFILE, STR, "", 0, 0,                                                 \
      "where the task scheduler keeps the bandwidth matrices it measured, one per set of devices; "\
      "empty: $XDG_CACHE_HOME/grain/sched-bandwidth.tsv (~/.cache/grain/...); none: measure in "   \
      "every run")                                                                                 \
    X(sched_threshold, SCHED_THRESHOLD, UINT, "10", 0, 100,                                        \
      "percent of the bytes a kernel reads that a device must hold for the data-aware policies "  \
      "to consider it (GrCUDA's exploration threshold)")                                          \
    X(blas_tile, BLAS_TILE, UINT, "0", 0, 1u << 30,                                                \
      "the tiled BLAS's tile side (axpy: elements) where a call gives 0 (grain/blas.h); 0: the "  \
      "deployed selection where the device has a profile, else 2048 for gemm, 4M elements for axpy") \
    X(blas_model, BLAS_MODEL, STR, "auto", 0, 0,                                                   \
      "the model a tiled BLAS call given tile 0 selects its tile by (grain/blas.h): auto (schedule "\
      "for gemm, bts for axpy), cso, baseline, dataloc, bts, dr, dr-link or schedule")            \
    X(blas_kernels, BLAS_KERNELS, STR, "auto", 0, 0,                                               \
      "the tiled BLAS's gemm tiles and the scheduler's gemm elements: auto (the backend's vendor "  \
      "BLAS where it loads: cuBLAS on CUDA, CLBlast on OpenCL; grain's kernels otherwise), grain, " \
      "vendor (refused without one)")                                                              \
    X(blas_stage, BLAS_STAGE, STR, "auto", 0, 0,                                                   \
      "the tiled BLAS's host operands: through pinned chunks packed by host threads (on), copied "  \
      "straight (off), or auto: staged where the backend's copies are not the host's own")        \
    X(blas_profile, BLAS_PROFILE, STR, "", 0, 0,                                                   \
      "where grain_blas_deploy keeps the devices' BLAS profiles (links and tile kernels); empty: "  \
      "$XDG_CACHE_HOME/grain/blas-profile.tsv (~/.cache/grain/...); none: kept nowhere")          \
    X(stats, STATS, BOOL, "0", 0, 1, "print statistics at finalize")                              \
    X(log_level, LOG_LEVEL, STR, "warn", 0, 0, "error, warn, info or debug")                     \
    X(opencl_platform, OPENCL_PLATFORM, STR, "", 0, 0,                                            \
      "OpenCL platform: index or part of its name (default: the first with a usable device)")    \
    X(opencl_device, OPENCL_DEVICE, STR, "", 0, 0,                                                \
      "OpenCL device of that platform: index or part of its name (default: the first usable)")   \
    X(gpu_device, GPU_DEVICE, STR, "", 0, 0,                                                      \
      "CUDA/HIP device index (default: the rank's index on its node, modulo the devices)")       \
    X(cpu_device_threads, CPU_DEVICE_THREADS, UINT, "0", 0, 4096,                                 \
      "worker threads of a CPU OpenCL device (PoCL); 0: the cores left after one per "           \
      "aggregator and one for the network thread, at least 1")                                   \
    X(include_dir, INCLUDE_DIR, STR, "", 0, 0,                                                    \
      "where the runtime compiler finds grain/device.h for a source that includes it instead of "  \
      "having it inlined by grain_embed; default: the build tree's headers, else the installed "   \
      "ones; an -I in grain_program_create's options comes first")                               \
    X(reserve, RESERVE, STR, "wg", 0, 0,                                                          \
      "queue reservation compiled into kernels: wg (work-group), sg (sub-group), wi (work-item)") \
    X(subgroup_width, SUBGROUP_WIDTH, UINT, "0", 0, 4096,                                         \
      "lanes per sub-group for reserve=sg; 0: the device's native or preferred width")

/* GRAIN_* variables read outside the table above: by the graph apps and by
 * the scripts that build and test grain.  grain_init warns of any other. */
#define GRAIN_OTHER_VARS(X)                                                                       \
    X(GRAPH_CACHE, "the graph apps' cache of parsed graphs (default: $XDG_CACHE_HOME/grain)")     \
    X(GRAPH_CACHE_MAX, "the bytes the graph apps' cache may take (default 4G)")                   \
    X(RANKS, "ranks of scripts/run.sh")                                                           \
    X(VERBS_VM, "scripts/test.sh: 0 skips the virtual machine that runs the verbs tests")          \
    X(VM_ACCEL, "scripts/test.sh: the virtual machine's accelerator")                             \
    X(VM_DIR, "scripts/test.sh: where the virtual machine's image is kept")                       \
    X(VM_TIMEOUT, "scripts/test.sh: seconds the virtual machine may run")

#endif
