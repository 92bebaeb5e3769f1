# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the scripts: installs the Debian packages a command needs that
# are missing (root, or sudo), and lets Open MPI run as root with more ranks
# than cores, as on CI machines.
#   grain_install_deps run    what scripts/run.sh needs: a compiler, CMake,
#                             OpenCL with PoCL, Open MPI
#   grain_install_deps test   and what the tests need besides: cmocka, clang
#                             with libFuzzer, hipcc and libamdhip64-dev (the
#                             HIP backend is built and its device code
#                             checked: Debian's ROCm 5.2), libibverbs, the
#                             oracles' Python packages, jellyfish and velvet's
#                             reads
# The CUDA backend is built when a CUDA toolkit is installed (/usr/local/cuda).
grain_run_packages="build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
libopenmpi-dev openmpi-bin libclblast-dev"
grain_test_packages="$grain_run_packages clinfo libcmocka-dev python3 python3-numpy python3-matplotlib hipcc libamdhip64-dev
clang libclang-rt-14-dev libibverbs-dev python3-networkx python3-scipy python3-sklearn jellyfish velvet-example xz-utils"

grain_install_deps() { # run | test
    local wanted
    case "${1:-}" in
        run) wanted=$grain_run_packages ;;
        test) wanted=$grain_test_packages ;;
        *) echo "grain_install_deps: run or test, not '${1:-}'" >&2; return 2 ;;
    esac
    missing=""
    for p in $wanted; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        echo "grain: installing Debian packages for scripts/$1.sh:$missing"
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
    fi
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Several ranks on a machine with fewer cores, and no fast-path transports that
# containers often forbid (ptrace-based single copy).
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
