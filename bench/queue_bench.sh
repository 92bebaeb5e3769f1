#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds and runs the queue benchmark (Gravel, figures 6 and 8); writes
# bench-results/queue_bench.csv and queue_bench_fig{6,8}.png.  Arguments go
# to queue_bench (--sweep wg|size, --consumers C, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
grain_install_deps test
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" --target queue_bench
mkdir -p bench-results
build/bin/queue_bench --csv bench-results/queue_bench.csv "$@"
/usr/bin/python3 bench/plot_queue.py bench-results/queue_bench.csv
