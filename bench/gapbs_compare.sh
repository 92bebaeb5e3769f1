#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gapbs_compare.sh [SCALE] [RANKS]: grain's pagerank and sssp against the GAP
# Benchmark Suite's pr and sssp on the same Kronecker graph, on this node.
# gapbs is built from its public source (GAPBS_DIR, else a clone of
# GAPBS_GIT, github.com/sbeamer/gapbs by default) under bench-results/, never
# committed; grain's apps are built in BUILD_DIR (build).  Both PageRanks run exactly 20 iterations (gapbs: -i 20 -t 0;
# its Gauss-Seidel pull differs from grain's push, so this compares time per
# iteration); both SSSPs start at the graph's first vertex.  Times exclude
# loading; each is the mean of three runs.  Writes
# bench-results/gapbs/compare.csv with gapbs's time over grain's: above 1,
# grain is faster.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-16}
ranks=${2:-1}
out=bench-results/gapbs
mkdir -p "$out"
src=${GAPBS_DIR:-$out/src}
[ -d "$src" ] || git clone --depth 1 "${GAPBS_GIT:-https://github.com/sbeamer/gapbs.git}" "$src"
make -C "$src" pr sssp > "$out/build.log"
bin=${BUILD_DIR:-build}
cmake -S . -B "$bin" > /dev/null
cmake --build "$bin" -j "$(nproc)" --target pagerank sssp graphgen > /dev/null
graph=$out/kronecker-$scale.mtx
[ -f "$graph" ] || "$bin/bin/graphgen" --kronecker "$scale" --out "$graph"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The mean of three runs of grain's app: its "seconds" from --json.
grain_seconds() {
    for _ in 1 2 3; do
        mpirun --oversubscribe --bind-to none -np "$ranks" "$bin/bin/$1" --graph "$graph" --json "${@:2}" |
            /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["seconds"])'
    done | awk '{ s += $1 } END { printf "%.6f", s / NR }'
}

gapbs_seconds() {
    "$src/$1" -f "$graph" -n 3 "${@:2}" | awk '/Average Time/ { printf "%.6f", $3 }'
}

echo "app,scale,ranks,grain_seconds,gapbs_seconds,gapbs_over_grain" > "$out/compare.csv"
for app in pagerank sssp; do
    echo "gapbs_compare: $app on $graph, $ranks ranks ..." >&2
    if [ "$app" = pagerank ]; then
        g=$(grain_seconds pagerank --iterations 20)
        b=$(gapbs_seconds pr -i 20 -t 0)
    else
        g=$(grain_seconds sssp --source 1)
        b=$(gapbs_seconds sssp -r 0)
    fi
    ratio=$(awk -v g="$g" -v b="$b" 'BEGIN { printf "%.4f", b / g }')
    echo "$app,$scale,$ranks,$g,$b,$ratio" >> "$out/compare.csv"
    printf '%-9s grain %9.4f s  gapbs %9.4f s  gapbs/grain %7.4f\n' "$app" "$g" "$b" "$ratio"
done
echo "wrote $out/compare.csv"
