#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The verbs transport on this machine:
#   verbs_check.sh gups COMMAND...      GUPS over verbs (tiny rings: credits run out), verified, with the
#                                       network thread applying and with receive threads, where an RDMA
#                                       device exists; skipped (77) with the reason elsewhere
#   verbs_check.sh chunks COMMAND...    counter-triggered transfers over verbs, verified: jacobi's halos and
#                                       the chunks test's slices RDMA-written into the peers' heaps
#                                       (bytes_written), and with GRAIN_IB_PUT=0 sent as pieces instead
#   verbs_check.sh fetch COMMAND...     gets and fetching atomics over verbs: requests and replies (tiny
#                                       rings), every old value checked by the fetch test
#   verbs_check.sh endpoints COMMAND... device endpoints' messages and collectives between the ranks over the
#                                       verbs transport's endpoint channel (no windows; every collective as
#                                       messages, then through the host): ep_run's checks
#   verbs_check.sh no-device COMMAND... without a device: the error that names what is missing, and
#                                       GRAIN_TRANSPORT=verbs,mpi running over MPI with a warning
# COMMAND is an mpirun line; $GUPS, $JACOBI, $CHUNKS, $FETCH and $EP_RUN are the programs.  The ranks share this
# host, so GRAIN_PEER=off keeps what they send each other on the transport (not the direct path, not peer memory).
mode=$1
shift
set -- "$@" -x GRAIN_PEER=off
have_device() { [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; }
need_device() {
    if ! have_device; then
        echo "skipped: no RDMA device (/sys/class/infiniband is empty; Soft-RoCE adds one where the kernel has" \
             "rdma_rxe: rdma link add rxe0 type rxe netdev eth0)"
        exit 77
    fi
}
# field JSON NAME: the first value NAME has in an app's --json line (the statistics after it reuse names)
field() { echo "$1" | tr ',' '\n' | sed -n "s/.*\"$2\":\([^}]*\).*/\1/p" | head -n 1; }
# transfers WHAT PUT VERIFIED WRITTEN SENT: the run verified, and moved its chunks by puts (PUT=1) or pieces
transfers() {
    [ "$3" = true ] || { echo "FAILED: $1, GRAIN_IB_PUT=$2: not verified: $out"; exit 1; }
    if [ "$2" = 1 ]; then
        [ "$4" -gt 0 ] && [ "$5" -eq 0 ] || { echo "FAILED: $1 did not put its chunks: $out"; exit 1; }
    else
        [ "$4" -eq 0 ] && [ "$5" -gt 0 ] || { echo "FAILED: $1 did not send pieces: $out"; exit 1; }
    fi
    echo "$1, GRAIN_IB_PUT=$2: verified, $4 bytes written, $5 sent as pieces"
}
case $mode in
gups)
    need_device
    # The network thread applying, then 3 receive threads holding ring slots until they are done.
    for threads in 1 3; do
        out=$("$@" -x GRAIN_TRANSPORT=verbs -x GRAIN_BUFFER_SIZE=512 -x GRAIN_RECV_BUFFERS=2 \
              -x GRAIN_RECV_THREADS=$threads "$GUPS" --log2-table 14 --verify --json) || { echo "FAILED: $out"; exit 1; }
        echo "$out"
        echo "$out" | grep -q '"transport":"verbs"' || { echo "FAILED: not over verbs"; exit 1; }
        echo "$out" | grep -q '"verified":true' || { echo "FAILED: not verified"; exit 1; }
        [ "$threads" = 1 ] || echo "$out" | grep -q "\"receive_threads\":$threads," ||
            { echo "FAILED: not $threads receive threads"; exit 1; }
    done
    ;;
fetch)
    need_device
    out=$("$@" -x GRAIN_TRANSPORT=verbs -x GRAIN_BUFFER_SIZE=512 -x GRAIN_RECV_BUFFERS=2 -x GRAIN_LOG_LEVEL=info \
          "$FETCH" 2>&1) || { echo "FAILED: $out"; exit 1; }
    echo "$out" | grep -q "transport verbs" || { echo "FAILED: not over verbs: $out"; exit 1; }
    echo "$out" | grep -q "^fetch: .* passed" || { echo "FAILED: $out"; exit 1; }
    echo "$out" | grep "^fetch:"
    ;;
chunks)
    need_device
    for put in 1 0; do
        out=$("$@" -x GRAIN_TRANSPORT=verbs -x GRAIN_IB_PUT=$put "$JACOBI" --n 130 --iterations 6 --agent host \
              --chunk-size 1000 --verify --json) || { echo "FAILED: $out"; exit 1; }
        [ "$(field "$out" transport)" = '"verbs"' ] || { echo "FAILED: not over verbs: $out"; exit 1; }
        transfers "jacobi, host agent" $put "$(field "$out" verified)" "$(field "$out" bytes_written)" \
            "$(field "$out" bytes_sent)"
        # Rank 0's slices to every peer, to one peer and to the host copy, checked word by word.
        out=$("$@" -x GRAIN_TRANSPORT=verbs -x GRAIN_IB_PUT=$put "$CHUNKS" bulk 4096 3000) ||
            { echo "FAILED: $out"; exit 1; }
        verified=false
        case $out in *": ok") verified=true ;; esac
        transfers "chunks, bulk agent" $put $verified "$(echo "$out" | sed -n 's/.* \([0-9]*\) written.*/\1/p')" \
            "$(echo "$out" | sed -n 's/.* \([0-9]*\) bytes sent.*/\1/p')"
    done
    # A rank whose heap is not registered (here: GRAIN_IB_PUT=0 on rank 1 alone, as a GPU heap without
    # GPUDirect RDMA would be) makes every rank send pieces, and says so.
    out=$("$@" -x GRAIN_TRANSPORT=verbs -x GRAIN_LOG_LEVEL=info sh -c \
          '[ "$OMPI_COMM_WORLD_RANK" != 1 ] || export GRAIN_IB_PUT=0; exec "$0" "$@"' \
          "$JACOBI" --n 130 --iterations 6 --agent host --chunk-size 1000 --verify --json 2>&1) ||
        { echo "FAILED: $out"; exit 1; }
    echo "$out" | grep -q "rank 1 did not register its heap; chunks go through the receive rings" ||
        { echo "FAILED: no word of rank 1's heap: $out"; exit 1; }
    out=$(echo "$out" | grep '^{')
    transfers "jacobi, rank 1 without puts" 0 "$(field "$out" verified)" "$(field "$out" bytes_written)" \
        "$(field "$out" bytes_sent)"
    ;;
endpoints)
    need_device
    for coll in 1 0; do
        out=$("$@" -x GRAIN_TRANSPORT=verbs -x GRAIN_EP_WINDOW=0 -x GRAIN_EP_COLL_MESSAGES=$coll \
              -x GRAIN_LOG_LEVEL=info "$EP_RUN" 1 2>&1) || { echo "FAILED: $out"; exit 1; }
        echo "$out" | grep -q "transport verbs" || { echo "FAILED: not over verbs: $out"; exit 1; }
        echo "$out" | grep -q "^ep_run: ok" || { echo "FAILED: $out"; exit 1; }
        echo "endpoints over verbs, GRAIN_EP_COLL_MESSAGES=$coll: ep_run: ok"
    done
    ;;
no-device)
    if have_device; then
        echo "skipped: this machine has an RDMA device ($(ls /sys/class/infiniband | tr '\n' ' '))"
        exit 77
    fi
    err=$("$@" -x GRAIN_TRANSPORT=verbs "$GUPS" --log2-table 10 2>&1) && { echo "FAILED: ran without a device"; exit 1; }
    echo "$err" | grep -q "GRAIN_TRANSPORT=verbs: no RDMA device" || { echo "FAILED: $err"; exit 1; }
    out=$("$@" -x GRAIN_TRANSPORT=verbs,mpi "$GUPS" --log2-table 10 --verify --json 2>&1) || { echo "FAILED: $out"; exit 1; }
    echo "$out" | grep -q "verbs did not open (GRAIN_TRANSPORT=verbs: no RDMA device" || { echo "FAILED: no warning: $out"; exit 1; }
    echo "$out" | grep -q '"transport":"mpi"' || { echo "FAILED: not over MPI: $out"; exit 1; }
    echo "$out" | grep -q '"verified":true' || { echo "FAILED: not verified: $out"; exit 1; }
    echo "no device: the error names it, and verbs,mpi ran over MPI with a warning"
    ;;
*)
    echo "usage: verbs_check.sh gups|chunks|fetch|endpoints|no-device MPIRUN..." >&2
    exit 2
    ;;
esac
