#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# kmeans through MPI on two GPUs: which queue settings fill the slots better
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGRAIN_BUILD_TESTS=OFF -DGRAIN_DEVICE_CHECKS=OFF \
    > $OUT/cfg.log 2>&1 || { tail $OUT/cfg.log; exit 1; }
cmake --build build -j16 --target kmeans > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
# One line a run: seconds, verified, compute seconds and the queue's statistics.
summary='import sys, json
d = json.loads(sys.stdin.read()); t = d["stats"]["total"]
print(d["seconds"], d["verified"], d["time_split"]["compute_s"], "slots", t["slots"],
      "qfull", t["queue_full_waits"], "remote", t["remote_messages"], "bufs", t["buffers_sent"],
      "fill", t["mean_buffer_fill"])'
args="--blobs 4194304,8,16 --k 16 --max-iterations 20 --verify --json"
run() { # label np settings...
  local label=$1 np=$2; shift 2
  local x=""; for s in "$@"; do x+=" -x $s"; done
  for rep in 1 2; do
    out=$(timeout 200 mpirun --bind-to none -np $np $x build/bin/kmeans $args 2>$OUT/err.txt)
    echo "$label rep$rep $(echo "$out" | python3 -c "$summary" 2>&1 | head -c 400)"
  done
}
run np1 1
run np2-direct 2
run np2-mpi 2 GRAIN_PEER=off
run np2-mpi-agg4 2 GRAIN_PEER=off GRAIN_AGGREGATORS=4
run np2-mpi-slots4x 2 GRAIN_PEER=off GRAIN_QUEUE_SLOTS=1024
run np2-mpi-sg 2 GRAIN_PEER=off GRAIN_RESERVE=sg
run np2-mpi-buf256k 2 GRAIN_PEER=off GRAIN_BUFFER_SIZE=262144
mpirun --bind-to none -np 2 -x GRAIN_PEER=off build/bin/kmeans $args > $OUT/full_mpi.json 2>&1
mpirun --bind-to none -np 1 build/bin/kmeans $args > $OUT/full_np1.json 2>&1
