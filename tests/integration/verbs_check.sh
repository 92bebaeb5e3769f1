#!/bin/sh
# The verbs transport on this machine:
#   verbs_check.sh gups COMMAND...      GUPS over verbs (tiny rings: credits run out), verified,
#                                       where an RDMA device exists; skipped (77) with the reason elsewhere
#   verbs_check.sh no-device COMMAND... without a device: the error that names what is missing, and
#                                       GRAIN_TRANSPORT=verbs,mpi running over MPI with a warning
# COMMAND is the mpirun line of build/bin/gups.
mode=$1
shift
have_device() { [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; }
case $mode in
gups)
    if ! have_device; then
        echo "skipped: no RDMA device (/sys/class/infiniband is empty; Soft-RoCE adds one where the kernel has" \
             "rdma_rxe: rdma link add rxe0 type rxe netdev eth0)"
        exit 77
    fi
    out=$("$@" -x GRAIN_TRANSPORT=verbs -x GRAIN_BUFFER_SIZE=512 -x GRAIN_RECV_BUFFERS=2 \
          "$GUPS" --log2-table 14 --verify --json) || { echo "FAILED: $out"; exit 1; }
    echo "$out"
    echo "$out" | grep -q '"transport":"verbs"' || { echo "FAILED: not over verbs"; exit 1; }
    echo "$out" | grep -q '"verified":true' || { echo "FAILED: not verified"; exit 1; }
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
    echo "usage: verbs_check.sh gups|no-device MPIRUN..." >&2
    exit 2
    ;;
esac
