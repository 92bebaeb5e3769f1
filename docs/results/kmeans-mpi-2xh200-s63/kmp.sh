#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
b() {
    cmake -S . -B $1 -DCMAKE_BUILD_TYPE=Release -DGRAIN_BUILD_TESTS=OFF -DGRAIN_DEVICE_CHECKS=OFF \
        > $OUT/cfg-$1.log 2>&1 &&
        cmake --build $1 -j16 --target kmeans > $OUT/build-$1.log 2>&1 || { tail -20 $OUT/build-$1.log; exit 1; }
}
b build
cp docs/results/kmeans-mpi-2xh200-s63/kmeans_packed.cl graphapps/kmeans/kmeans.cl
b build-p
# One line a run: seconds, verified, compute seconds and the queue's statistics.
summary='import sys, json
d = json.loads(sys.stdin.read()); t = d["stats"]["total"]
print(d["seconds"], d["verified"], d["time_split"]["compute_s"], "slots", t["slots"],
      "qfull", t["queue_full_waits"], "remote", t["remote_messages"], "bufs", t["buffers_sent"],
      "fill", t["mean_buffer_fill"])'
args="--blobs 4194304,8,16 --k 16 --max-iterations 20 --verify --json"
run() { # label tree np settings...
  local label=$1 tree=$2 np=$3; shift 3
  local x=""; for s in "$@"; do x+=" -x $s"; done
  for rep in 1 2; do
    out=$(timeout 200 mpirun --bind-to none -np $np $x $tree/bin/kmeans $args 2>>$OUT/err.txt)
    echo "$label rep$rep $(echo "$out" | python3 -c "$summary" 2>&1 | head -c 400)"
  done
}
for tree in build build-p; do
  run "$tree np1" $tree 1
  run "$tree np2-direct" $tree 2
  run "$tree np2-mpi" $tree 2 GRAIN_PEER=off
done
