#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# ok_lines.sh N COMMAND...: runs a job whose ranks each print a line ending
# in ": ok" or ": FAILED" (peer_failure.c, wire_corrupt.c gap), shows what
# it printed, and passes when exactly N lines say ok and none FAILED.
# mpirun's own status says nothing here: these jobs end with a rank failed,
# and the others leave without MPI_Finalize.
want=$1
shift
out=$("$@" 2>&1)
printf '%s\n' "$out"
ok=$(printf '%s\n' "$out" | grep -c ': ok$')
failed=$(printf '%s\n' "$out" | grep -c 'FAILED')
if [ "$ok" -ne "$want" ] || [ "$failed" -ne 0 ]; then
    echo "ok_lines.sh: $ok of $want ranks ended as they must, $failed said FAILED"
    exit 1
fi
echo "ok_lines.sh: all $want ranks ended as they must"
