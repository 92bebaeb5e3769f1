#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The shared libgrain exports exactly the functions that grain.h declares:
# nothing of the runtime's internals (or of the static libraries it links),
# and nothing of the public API left hidden.
#   exports.sh <libgrain.so> <grain.h>
lib=$1 header=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u > "$work/exported"
# Declarations start a line: a return type, then the name and its '('.
grep -E '^[A-Za-z].*\<grain_[a-z0-9_]+\(' "$header" | grep -v '^typedef' |
    sed -E 's/^.*\<(grain_[a-z0-9_]+)\(.*$/\1/' | sort -u > "$work/declared"
if ! diff -u "$work/declared" "$work/exported" > "$work/diff"; then
    echo "exports: '-' lines are declared in grain.h but not exported, '+' lines exported but not declared:"
    grep -E '^[-+][a-z_]' "$work/diff"
    exit 1
fi
echo "exports: $(wc -l < "$work/exported") symbols, exactly the functions grain.h declares"
