#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The apps on one H200 and on two (one rank a GPU), the direct path and the transport (README.md here).
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DGRAIN_BUILD_TESTS=OFF -DGRAIN_DEVICE_CHECKS=OFF > $OUT/cfg.log 2>&1 &&
  cmake --build /tmp/b -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
nvidia-smi -L
timeout 480 python3 bench/peer_compare.py --bin /tmp/b/bin --ranks 2 --scale 20 --apps kmeans,pagerank,kmer,sssp \
  --repeat 1 --out $OUT/peer --timeout 200 2>&1 | tail -40
