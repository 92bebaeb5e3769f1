#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole test suite: unit tests (cmocka), device tests on PoCL and
# multi-rank integration tests under mpirun, all through CTest, each run
# once: the benchmarks' checks and the fuzz targets on a Release build with
# -Werror, the rest on a build with AddressSanitizer and
# UndefinedBehaviorSanitizer; the static library installed and used by a
# program; the verbs tests again in a VM with Soft-RoCE
# (scripts/verbs_vm.sh).
#   scripts/test.sh            every build
#   scripts/test.sh --quick    the plain and static builds only, every test
#                              on the plain one
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's time, printed last (also when a step fails), where CI's log
# tail shows it: the suite must stay well inside CI's time.
steps="" current="" current_start=0
timed() { # <name> <command...>
    current=$1 current_start=$SECONDS
    shift
    # Plain, so that set -e holds inside a function it runs: a failure ends
    # the script here (summary names the step) unless the caller tests it.
    "$@"
    local status=$?
    steps+="  $current: $((SECONDS - current_start)) s (exit $status)"$'\n'
    current=""
    return $status
}
summary() {
    local status=$?
    [ -z "$current" ] || steps+="  $current: $((SECONDS - current_start)) s (stopped here)"$'\n'
    # A step that fails before the VM's still leaves no debootstrap behind.
    [ -z "${vm_disk:-}" ] || wait "$vm_disk" 2>/dev/null || true
    printf 'scripts/test.sh: %s s in all (exit %s)\n%s' "$SECONDS" "$status" "$steps"
    exit $status
}
trap summary EXIT

. scripts/deps.sh
timed "Debian packages" grain_install_deps test
jobs=$(nproc)

# CTest lists the tests it skipped without their reason; each says why in
# the last line of its output that speaks of skipping (else its last line).
show_skips() { # <build dir> <ctest's output>
    grep -oE '^[[:space:]]+[0-9]+ - [^ ]+ \(Skipped\)' "$2" | awk '{print $3}' | while read -r t; do
        awk -v t="$t" '{ line = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", line) }
                       line == t && /Test: / { f = 1; next }
                       f && /^<end of output>/ { print "  " t ": " (why != "" ? why : last); exit }
                       f && out && NF { last = $0; if (tolower($0) ~ /skip/) why = $0 }
                       f && /^Output:/ { out = 1; getline }' \
            "$1/Testing/Temporary/LastTest.log"
    done
}

# Two tests at a time: those of one process (tests/CMakeLists.txt,
# grain_add_test), which CTest starts first; then, one by one, those that
# start several.  Most of a lone test's time is PoCL compiling its kernels
# on one core (LLVM under ASan's allocator, in the sanitized build).  On 2
# cores with PoCL's cache empty, 210 sanitized tests without a rank count
# above 1 in their names took 448 s two at a time against 587 s one at a
# time; the whole sanitized step, 1465 s against 1518.
run_ctest() { # <build dir> <ctest args>
    ctest --test-dir "$1" -j2 --output-on-failure --timeout 300 $2 | tee "$1/ctest.log"
}

run_suite() { # <build dir> <ctest args> <cmake args...>
    local dir=$1 select=$2 status=0
    shift 2
    timed "$dir: configure" cmake -S . -B "$dir" -DGRAIN_WERROR=ON -DGRAIN_BUILD_TESTS=ON -DGRAIN_DEVICE_CHECKS=ON \
        "$@" >/dev/null
    timed "$dir: build" cmake --build "$dir" -j "$jobs"
    timed "$dir: tests" run_ctest "$dir" "$select" || status=$?
    if grep -q '(Skipped)' "$dir/ctest.log"; then
        echo "Why each skipped test did not run:"
        show_skips "$dir" "$dir/ctest.log"
    fi
    return $status
}

# Release: -O3 is where GCC's flow warnings (-Werror) see the most.  Its
# tests are only those the sanitized build leaves out, unless that one does
# not run: the suite twice took twice the time on CI's 2 cores (17 and 20
# minutes).
quick=0
[ "${1:-}" = "--quick" ] && quick=1
# The verbs transport on an RDMA device: where this kernel has none, in a VM
# with Soft-RoCE (skipped, saying why, where no VM can run; GRAIN_VERBS_VM=0).
# Its disk is made while the builds run: debootstrap mostly waits for
# downloads (90 s on a 2-core machine).
vm=0
if [ "${GRAIN_VERBS_VM:-1}" != 0 ] && [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
    vm=1
    vm_log=$(mktemp)
    scripts/verbs_vm.sh --disk </dev/null >"$vm_log" 2>&1 &
    vm_disk=$!
    vm_disk_start=$SECONDS
fi
plain_tests="-R ^(bench|fuzz)\."
[ "$quick" = 1 ] && plain_tests=""
run_suite build "$plain_tests" -DCMAKE_BUILD_TYPE=Release
# The static libgrain, installed and used by a program as a user would:
# the library and its tools alone, then tests/consumer against them.
cmake -S . -B build-static -DGRAIN_WERROR=ON -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGRAIN_BUILD_APPS=OFF -DGRAIN_BUILD_TESTS=OFF -DGRAIN_DEVICE_CHECKS=OFF >/dev/null
timed "build-static: build" cmake --build build-static -j "$jobs"
timed "build-static: consumer" tests/consumer/check.sh build-static . mpiexec
if [ "$vm" = 1 ]; then
    disk_status=0
    wait "$vm_disk" || disk_status=$?
    vm_disk=""
    steps+="  verbs VM: disk: $((SECONDS - vm_disk_start)) s since the start (exit $disk_status)"$'\n'
    cat "$vm_log"
    status=$disk_status
    # A disk that could not be made was skipped, saying why; asking again
    # would run debootstrap a second time for the same answer.
    run_vm() { scripts/verbs_vm.sh 2>&1 | tee "$vm_log"; }
    [ "$status" != 0 ] || timed "verbs VM: build and tests" run_vm || status=$?
    # Why it was skipped, in the summary too.
    [ "$status" != 77 ] || steps+="    $(grep 'verbs VM skipped' "$vm_log" | tail -n 1)"$'\n'
    rm -f "$vm_log"
    [ "$status" = 0 ] || [ "$status" = 77 ] || exit "$status"
fi
if [ "$quick" = 0 ]; then
    # PoCL and Open MPI keep allocations until exit by design: leak checks
    # would report theirs, not grain's.  The benchmarks' checks ran above,
    # and the fuzz targets are built with the sanitizers in either build.
    # Optimized (-O2), since these are the only runs of most tests: code
    # that is wrong only once the compiler reorders or hoists (a spin on a
    # plain load) must fail here.  The device sources' checks as CUDA, HIP
    # and OpenCL C ran in the Release build: the same compilers on the same
    # sources, about 320 of their runs, most of a build on 2 cores.
    # PoCL compiles each kernel in the test's process, and LLVM, which
    # allocates and frees without pause, slowed under ASan's default 256 MiB
    # quarantine of freed memory: a first pagerank run on 2 cores took 7.0 s,
    # 4.35 s with 64 MiB (0.70 s against 0.91 once PoCL had the kernels);
    # a freed block still waits behind 64 MiB of others before its reuse.
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:quarantine_size_mb=64 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_suite build-sanitize "-E ^(bench|fuzz)\." -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAIN_SANITIZE=ON \
        -DGRAIN_DEVICE_CHECKS=OFF
fi
