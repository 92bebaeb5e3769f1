#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# check.sh BUILD_DIR SOURCE_DIR MPIEXEC [subdirectory]: installs the grain
# built in BUILD_DIR into a fresh prefix, as a user would (cmake --install),
# then builds tests/consumer against that prefix twice, with
# find_package(grain) and with pkg-config, and runs each build on two ranks;
# the first also with its device source read at run time, its headers found
# by default and named by GRAIN_INCLUDE_DIR.
# With "subdirectory": builds tests/consumer with grain's sources added by
# add_subdirectory instead, and runs it on two ranks.
set -euo pipefail
build=$1 src=$2 mpiexec=$3 mode=${4:-installed}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { # run LOG COMMAND...: the log is shown only if the command fails
    local log=$1
    shift
    "$@" > "$work/$log" 2>&1 || { cat "$work/$log"; echo "check.sh: failed: $*" >&2; exit 1; }
}
if [ "$mode" = subdirectory ]; then
    run configure.log cmake -S "$src/tests/consumer" -B "$work/cmake" -DGRAIN_SOURCE_DIR="$src"
    run build.log cmake --build "$work/cmake" --parallel 2
    "$mpiexec" --oversubscribe --bind-to none -np 2 "$work/cmake/hello"
    echo "check.sh: a program that adds grain's sources with add_subdirectory builds and runs"
    exit 0
fi
run install.log cmake --install "$build" --prefix "$work/prefix"
run configure.log cmake -S "$src/tests/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix"
run build.log cmake --build "$work/cmake"
"$mpiexec" --oversubscribe --bind-to none -np 2 "$work/cmake/hello"
# The device source read at run time: the runtime compiler finds grain's
# headers itself (the build tree's here), or where GRAIN_INCLUDE_DIR says.
"$mpiexec" --oversubscribe --bind-to none -np 2 "$work/cmake/hello" "$src/tests/consumer/hello.cl"
"$mpiexec" --oversubscribe --bind-to none -np 2 -x GRAIN_INCLUDE_DIR="$work/prefix/include" "$work/cmake/hello" \
    "$src/tests/consumer/hello.cl"

pc=$(dirname "$(find "$work/prefix" -name grain.pc)")
"$work/prefix/bin/grain_embed" "$work/prefix/include" "$src/tests/consumer/hello.cl" hello_source "$work/hello_source.c"
# A shared libgrain is found through the run path; a static one needs the
# libraries it links (Libs.private, --static).
libdir=$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir grain)
if [ -e "$libdir/libgrain.so" ]; then
    pcflags=(--cflags --libs) ldflags=(-Wl,-rpath,"$libdir")
else
    pcflags=(--cflags --libs --static) ldflags=()
fi
# shellcheck disable=SC2046 # pkg-config's words are separate arguments
cc -std=c11 -o "$work/hello_pc" "$src/tests/consumer/hello.c" "$work/hello_source.c" \
    $(PKG_CONFIG_PATH="$pc" pkg-config "${pcflags[@]}" grain) "${ldflags[@]}"
"$mpiexec" --oversubscribe --bind-to none -np 2 "$work/hello_pc"
echo "check.sh: the installed grain builds and runs a program with find_package and with pkg-config"
