#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# One of grain's GUPS peers (bench/peers) on a GPU machine, checked against
# the replayed stream; a skip where it is not built or there is no GPU.
#   peer_gups.sh BINARY mpirun [args...]
peer="$1"
shift
[ -x "$peer" ] || { echo "$peer: not built (bench/peers/build.sh)"; exit 77; }
nvidia-smi -L > /dev/null 2>&1 || { echo "$peer: no GPU here"; exit 77; }
exec "$@" "$peer" --log2-table 20 --verify
