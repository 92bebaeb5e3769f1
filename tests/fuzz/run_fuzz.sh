#!/bin/sh
# run_fuzz.sh FUZZER GRAPH_DIR SECONDS: fuzzes the graph parsers for SECONDS,
# seeded with the test graphs (as Matrix Market) and edge lists (directed and
# undirected).  A crash leaves its input in the printed directory.
set -eu
fuzzer=$1 graphs=$2 seconds=${3:-15}
work=$(mktemp -d /tmp/grain-fuzz-XXXXXX)
mkdir "$work/corpus" "$work/crashes"
for f in "$graphs"/*.mtx; do
    [ "$(wc -c < "$f")" -le 40000 ] || continue
    { printf '\000'; cat "$f"; } > "$work/corpus/$(basename "$f")"
done
printf '\001# directed\n0 1\n1 2 \n2 0\n' > "$work/corpus/list"
printf '\002%% weighted, undirected\r\n0 1 0.5\r\n3 2 -2\r\n' > "$work/corpus/wlist"
printf '\003# points\n1.5, -2e3\n0 7\n' > "$work/corpus/points"
for f in "$graphs"/../reads/*.f?; do
    { printf '\004'; cat "$f"; } > "$work/corpus/$(basename "$f")"
done
if "$fuzzer" -max_total_time="$seconds" -max_len=8192 -artifact_prefix="$work/crashes/" \
        "$work/corpus" > "$work/log" 2>&1; then
    tail -n 2 "$work/log"
    rm -rf "$work"
else
    tail -n 40 "$work/log"
    echo "fuzz.graph: failing input kept in $work/crashes"
    exit 1
fi
