# Sourced by the scripts: installs the Debian packages grain needs that are
# missing (root, or sudo), and lets Open MPI run as root with more ranks than
# cores, as on CI machines.  hipcc and libamdhip64-dev build the HIP backend
# (compile and link: Debian's ROCm 5.2); the CUDA backend is built when a CUDA
# toolkit is installed (/usr/local/cuda).
grain_packages="build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
clinfo libopenmpi-dev openmpi-bin libcmocka-dev python3 python3-matplotlib hipcc libamdhip64-dev
clang libclang-rt-14-dev libibverbs-dev python3-networkx python3-scipy python3-sklearn jellyfish velvet-example xz-utils"

grain_install_deps() {
    missing=""
    for p in $grain_packages; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        echo "grain: installing Debian packages:$missing"
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
