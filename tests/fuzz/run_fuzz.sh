#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run_fuzz.sh graph|wire FUZZER DATA_DIR SECONDS: runs a libFuzzer target for
# SECONDS from seeds.  graph: the input parsers and the graph cache, seeded
# with the test graphs (as Matrix Market), edge lists, points and reads under
# DATA_DIR.  wire: the receiver's checks of wire buffers, seeded with valid
# buffers.  A crash leaves its input in the printed directory.
set -eu
kind=$1 fuzzer=$2 data=$3 seconds=${4:-15}
work=$(mktemp -d /tmp/grain-fuzz-XXXXXX)
mkdir "$work/corpus" "$work/crashes"
c=$work/corpus
case $kind in
graph)
    for f in "$data"/graphs/*.mtx; do
        [ "$(wc -c < "$f")" -le 40000 ] || continue
        { printf '\000'; cat "$f"; } > "$c/$(basename "$f")"
    done
    printf '\001# directed\n0 1\n1 2 \n2 0\n' > "$c/list"
    printf '\002%% weighted, undirected\r\n0 1 0.5\r\n3 2 -2\r\n' > "$c/wlist"
    printf '\003# points\n1.5, -2e3\n0 7\n' > "$c/points"
    for f in "$data"/reads/*.f?; do
        { printf '\004'; cat "$f"; } > "$c/$(basename "$f")"
    done
    # A sealed cache (first byte 131 = 5 mod 7): magic, source size and
    # time, option, n = 3, base 0, unweighted, directed, one edge 0 -> 2.
    z='\000\000\000\000\000\000\000'
    printf "\203RAIN_GC2\001$z\002$z\000$z\003$z\000$z\000$z\000$z\001$z\000$z\000$z\002$z\000\000\000\000\000\000\360\077" \
        > "$c/cache"
    # The same as a cache file app_read_graph loads (first byte 132 = 6 mod
    # 7, sealed): n = 3, base 0, unweighted, directed, one edge 0 -> 2.
    printf "\204\003$z\000$z\000$z\000$z\001$z\000$z\000$z\002$z\000\000\000\000\000\000\360\077" \
        > "$c/cache-file"
    ;;
wire)
    # Header: "GRAN", source rank 1, count, bytes, sequence number 0.
    hdr='GRAN\001\000\000\000'
    z='\000\000\000\000\000\000\000'
    # PUT64 of 42 at offset 64, INC32 at offset 8.
    printf "$hdr\002\000\000\000\060\000\000\000\000$z\002\100\000\000\000\000\000\000\052$z\005\010\000\000\000\000\000\000" \
        > "$c/put-inc"
    # An active message to host handler 3 (9, 10) and one to device handler 5.
    printf "$hdr\002\000\000\000\110\000\000\000\000$z\007\003\000\000\000\000\000\000\011$z\012$z\007\005\000\000\000\000\000\000\000$z\000$z" \
        > "$c/am"
    # Runs: three 64-bit adds of 32-bit values (-2, 5, 1 at 8, 16, 8), then
    # two increments (at 0 and 24).
    printf "$hdr\005\000\000\000\120\000\000\000\000$z\016\004\002\001\000\000\000\000\010\000\000\000\020\000\000\000\010$z\376\377\377\377\005\000\000\000\001$z\016\006\001\001\000\000\000\000\000\000\000\000\030\000\000\000" \
        > "$c/runs"
    ;;
*)
    echo "run_fuzz.sh: unknown target '$kind'" >&2
    exit 2
    ;;
esac
# The cache-file reader makes its files in TMPDIR: removed with the rest.
if TMPDIR=$work "$fuzzer" -max_total_time="$seconds" -max_len=8192 -artifact_prefix="$work/crashes/" \
        "$c" > "$work/log" 2>&1; then
    tail -n 2 "$work/log"
    rm -rf "$work"
else
    tail -n 40 "$work/log"
    echo "fuzz.$kind: failing input kept in $work/crashes"
    exit 1
fi
