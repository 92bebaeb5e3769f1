#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The tiled BLAS's profile: one run deploys and selects, a second selects the
# same tiles from the profile the first kept, without deploying.
#   blas_select.sh <dir> <mpirun line of blas_select>
dir=$1
shift
export GRAIN_BLAS_PROFILE="$dir/blas-select-test/blas-profile.tsv"
rm -rf "$dir/blas-select-test"
fail() { echo "blas_select: $*"; exit 1; }
first=$("$@" deploy 2>&1) || fail "the deployment failed: $first"
echo "$first"
grep -q "	link	h2d	" "$GRAIN_BLAS_PROFILE" && grep -q "	kernel	dgemm	" "$GRAIN_BLAS_PROFILE" &&
    grep -q "	tiles	d2h	" "$GRAIN_BLAS_PROFILE" || fail "no links, kernels or tile copies in $GRAIN_BLAS_PROFILE"
second=$("$@" reuse 2>&1) || fail "the run on the profile failed: $second"
echo "$second"
[ "$(echo "$first" | grep 'tile ' | sed 's/, [^,]* s predicted//')" = \
  "$(echo "$second" | grep 'tile ' | sed 's/, [^,]* s predicted//')" ] ||
    fail "the run on the profile selected other tiles"
# A tile-copies line with one time a tile size is damaged: the profile is
# then as if absent, with a sentence that names the line.
device=$(grep "	tiles	h2d	" "$GRAIN_BLAS_PROFILE" | cut -f1)
printf '%s\ttiles\th2d\t64:0.5\n' "$device" >> "$GRAIN_BLAS_PROFILE"
third=$("$@" reuse 2>&1) && fail "a damaged tile-copies line went unnoticed: $third"
echo "$third" | grep -q "not a line of a BLAS profile" || fail "no sentence for the damaged line: $third"
echo "blas_select: deployed, kept, the same tiles selected from the profile, a damaged line refused: ok"
