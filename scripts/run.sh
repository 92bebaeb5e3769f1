#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: builds grain and runs GUPS on 4 MPI ranks over the OpenCL
# backend (PoCL on a machine without a GPU), verified, with statistics.
#   scripts/run.sh [gups options...]
# Only GUPS writes to standard output (with --json, only its JSON); the
# packages installed, the build and the command go to standard error.
set -euo pipefail
cd "$(dirname "$0")/.."
{
    . scripts/deps.sh
    grain_install_deps run
    # A first build here leaves out the tests and the device checks, which
    # scripts/test.sh turns on (and installs the packages for).
    light=()
    [ -e build/CMakeCache.txt ] || light=(-DGRAIN_BUILD_TESTS=OFF -DGRAIN_DEVICE_CHECKS=OFF)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${light[@]}" >/dev/null
    cmake --build build -j "$(nproc)"
} >&2
ranks=${GRAIN_RANKS:-4}
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--log2-table 20 --verify)
echo "grain: mpirun --bind-to none -np $ranks build/bin/gups ${args[*]}" >&2
GRAIN_STATS=${GRAIN_STATS:-1} mpirun --bind-to none -np "$ranks" build/bin/gups "${args[@]}"
