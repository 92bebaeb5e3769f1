#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The shared libgrain exports exactly the functions that its public headers
# declare: nothing of the runtime's internals (or of the static libraries it
# links), and nothing of the public API left hidden.
#   exports.sh <libgrain.so> <header>...
lib=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u > "$work/exported"
# Declarations start a line: a return type, then the name and its '('.
cat "$@" | grep -E '^[A-Za-z].*\<grain_[a-z0-9_]+\(' | grep -v '^typedef' |
    sed -E 's/^.*\<(grain_[a-z0-9_]+)\(.*$/\1/' | sort -u > "$work/declared"
if ! diff -u "$work/declared" "$work/exported" > "$work/diff"; then
    echo "exports: '-' lines are declared in $* but not exported, '+' lines exported but not declared:"
    grep -E '^[-+][a-z_]' "$work/diff"
    exit 1
fi
echo "exports: $(wc -l < "$work/exported") symbols, exactly the functions $(echo "$@" | wc -w) public headers declare"
