#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The scheduler's bandwidth profile: a first run measures the matrix and
# writes it to GRAIN_SCHED_PROFILE, a second takes it from there, and a
# damaged line for the same devices is ignored with a warning.
#   sched_profile.sh <dir> <mpirun line of sched_oracle ...>
dir=$1
shift
profile="$dir/sched-profile-test/sched-bandwidth.tsv"
rm -rf "$dir/sched-profile-test"
fail() { echo "sched_profile: $*"; exit 1; }
first=$(GRAIN_SCHED_PROFILE="$profile" GRAIN_LOG_LEVEL=info "$@" 2>&1) || fail "the first run failed: $first"
echo "$first" | grep -q "host to device" || fail "the first run measured nothing: $first"
lines=$(grep -c "	" "$profile") || fail "no matrix in $profile"
[ "$lines" -eq 1 ] || fail "$lines matrices in $profile after one run"
second=$(GRAIN_SCHED_PROFILE="$profile" GRAIN_LOG_LEVEL=info "$@" 2>&1) || fail "the second run failed: $second"
echo "$second" | grep -q "bandwidth matrix of these .* from $profile" || fail "the second run measured again: $second"
key=$(cut -f1-3 "$profile" | grep -v '^#' | head -1)
printf '%s\t1,2\n' "$key" >> "$profile"
third=$(GRAIN_SCHED_PROFILE="$profile" GRAIN_LOG_LEVEL=info "$@" 2>&1) || fail "the third run failed: $third"
echo "$third" | grep -q "line 3: not a bandwidth matrix" || fail "the damaged line went unnoticed: $third"
echo "$third" | grep -q "from $profile" || fail "the good line was not used: $third"
echo "sched_profile: measured, kept, read back, a damaged line ignored: ok"
