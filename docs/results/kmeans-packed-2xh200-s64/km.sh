#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# k-means: main before (base) and packed combine, with 9, 12 and 16 words a key at most (README.md here).
# .dev/base held af9be63's include/grain/device/combine.h and graphapps/kmeans/kmeans.cl.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
src=$PWD
b() { # tree source
    cmake -S $2 -B $1 -DCMAKE_BUILD_TYPE=Release -DGRAIN_BUILD_TESTS=OFF -DGRAIN_DEVICE_CHECKS=OFF \
        > $OUT/cfg-$(basename $1).log 2>&1 &&
        cmake --build $1 -j16 --target kmeans > $OUT/build-$(basename $1).log 2>&1 || { tail -20 $OUT/build-$(basename $1).log; exit 1; }
}
mkdir -p /tmp/s
for v in base w9 w16; do rm -rf /tmp/s/$v; cp -r $src /tmp/s/$v; rm -rf /tmp/s/$v/.dev; done
cp -r .dev/base/* /tmp/s/base/
sed -i 's/KM_MAX_KEY_WORDS = 12/KM_MAX_KEY_WORDS = 9/' /tmp/s/w9/graphapps/kmeans/kmeans.c
sed -i 's/KM_MAX_KEY_WORDS = 12/KM_MAX_KEY_WORDS = 16/' /tmp/s/w16/graphapps/kmeans/kmeans.c
grep -c "KM_MAX_KEY_WORDS = 9" /tmp/s/w9/graphapps/kmeans/kmeans.c; grep -c "KM_MAX_KEY_WORDS = 16" /tmp/s/w16/graphapps/kmeans/kmeans.c
b /tmp/b-w12 $src & b /tmp/b-base /tmp/s/base & b /tmp/b-w9 /tmp/s/w9 & b /tmp/b-w16 /tmp/s/w16 & wait
summary='import sys, json
d = json.loads(sys.stdin.read()); t = d["stats"]["total"]
print(d["seconds"], d["verified"], d["time_split"]["compute_s"], "slots", t["slots"],
      "qfull", t["queue_full_waits"], "remote", t["remote_messages"], "bufs", t["buffers_sent"],
      "fill", t["mean_buffer_fill"])'
run() { # label tree np settings...
  local label=$1 tree=$2 np=$3; shift 3
  local x=""; for s in "$@"; do x+=" -x $s"; done
  for rep in $(seq 1 $reps); do
    out=$(timeout 100 mpirun --bind-to none -np $np $x $tree/bin/kmeans $args 2>>$OUT/err.txt)
    echo "$label rep$rep $(echo "$out" | python3 -c "$summary" 2>&1 | head -c 400)"
  done
}
reps=2
args="--blobs 4194304,8,16 --k 16 --max-iterations 20 --verify --json"
for v in base w12; do
  run "$v np1" /tmp/b-$v 1
  run "$v np2-direct" /tmp/b-$v 2
  run "$v np2-mpi" /tmp/b-$v 2 GRAIN_PEER=off
done
reps=1
args="--blobs 524288,64,10 --k 10 --max-iterations 10 --verify --json"
for v in base w9 w12 w16; do
  run "$v d64 np1" /tmp/b-$v 1
  run "$v d64 np2-direct" /tmp/b-$v 2
  run "$v d64 np2-mpi" /tmp/b-$v 2 GRAIN_PEER=off
done
