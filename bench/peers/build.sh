#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the programs grain is measured against into OUT_DIR:
#   gups_ipc      always (nvcc, an MPI's mpicc): GUPS without a runtime (gups_peer.c, gups_peer.cu);
#   peer_copy     always: cudaMemcpyPeer between two GPUs, for the endpoints' messages;
#   nccl_coll     when NCCL is found: $NCCL_HOME, else the nvidia-nccl wheel of a python3 on
#                 PATH: NCCL's broadcast and allreduce, for the endpoints' collectives;
#   gups_nvshmem  when NVSHMEM is found: $NVSHMEM_HOME, else the nvidia-nvshmem
#                 wheel of a python3 on PATH (pip's nvidia/nvshmem: include/, lib/).
# Exit 77 without nvcc or mpicc (nothing to build here), 1 on a failed build.
#
#   bench/peers/build.sh [OUT_DIR]      (default build/peers)
#   GRAIN_PEERS_ARCH=sm_90 ...          (default: the GPU here, else sm_90)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "${1:-build/peers}" && cd "${1:-build/peers}" && pwd)"

cuda="${CUDA_HOME:-/usr/local/cuda}"
nvcc="$(command -v nvcc || true)"
[ -n "$nvcc" ] || { [ -x "$cuda/bin/nvcc" ] && nvcc="$cuda/bin/nvcc"; } || true
if [ -z "$nvcc" ] || ! command -v mpicc > /dev/null; then
    echo "peers: no nvcc or no mpicc: nothing built (install the CUDA toolkit and Open MPI)"
    exit 77
fi
# nvcc may be a wrapper script elsewhere on PATH (/usr/local/bin/nvcc on some
# images), so its own directory says nothing: ask nvcc where its toolkit is.
top_dir="$("$nvcc" --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -1)"
cuda="$(cd "${top_dir:-$(dirname "$nvcc")/..}" && pwd)"
# The first of the toolkit's folders (under $cuda) that holds a file; else
# exits saying which folders were searched.
toolkit_dir() {
    local file="$1" dir
    shift
    for dir in "$@"; do
        if [ -e "$cuda/$dir/$file" ]; then
            echo "$cuda/$dir"
            return
        fi
    done
    echo "peers: nvcc ($nvcc) has no $file under $cuda ($*): is the toolkit whole?" >&2
    exit 1
}
targets="targets/$(uname -m)-linux"
cuda_lib="$(toolkit_dir libcudart.so lib64 lib "$targets/lib")"
cuda_inc="$(toolkit_dir cuda_runtime_api.h include "$targets/include")"
if [ -n "${GRAIN_PEERS_ARCH:-}" ]; then
    arch="$GRAIN_PEERS_ARCH"
elif nvidia-smi -L > /dev/null 2>&1; then
    arch=native
else
    arch=sm_90
fi

# A library's include/ and lib/: $<NAME>_HOME, else the nvidia.<module> wheel
# of a python3 on PATH; nothing where neither is.
wheel_home() {
    local given="$1" module="$2" py
    if [ -n "$given" ]; then
        echo "$given"
        return
    fi
    for py in $(type -ap python3); do
        "$py" -c "import nvidia.$module as m; print(list(m.__path__)[0])" 2> /dev/null && return
    done
}
nvshmem="$(wheel_home "${NVSHMEM_HOME:-}" nvshmem || true)"
nccl="$(wheel_home "${NCCL_HOME:-}" nccl || true)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mpi_cflags="$(mpicc --showme:compile)"
includes=(-I"$top/include" -I"$top/graphapps/gups" -I"$top")
# As CMakeLists.txt builds every C file: C11 and POSIX 2008 (clock_gettime).
cflags=(-std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra)
mpicc "${cflags[@]}" "${includes[@]}" -c "$here/gups_peer.c" -o "$tmp/host.o"
mpicc "${cflags[@]}" "${includes[@]}" -c "$top/tools/cli/cli.c" -o "$tmp/cli.o"
cuda_link=(-L"$cuda_lib" -Wl,-rpath,"$cuda_lib" -lcudart -lstdc++)

# shellcheck disable=SC2086 # mpi_cflags is a list of flags
"$nvcc" -O3 -arch="$arch" "${includes[@]}" $mpi_cflags -c "$here/gups_peer.cu" -o "$tmp/ipc.o"
mpicc -o "$out/gups_ipc" "$tmp/host.o" "$tmp/cli.o" "$tmp/ipc.o" "${cuda_link[@]}"
echo "peers: built $out/gups_ipc ($arch)"
cc "${cflags[@]}" "${includes[@]}" -I"$cuda_inc" -o "$out/peer_copy" "$here/peer_copy.c" "$tmp/cli.o" \
    "${cuda_link[@]}"
echo "peers: built $out/peer_copy"

nccl_lib="$(ls "$nccl"/lib/libnccl.so* 2> /dev/null | head -1 || true)"
if [ -n "$nccl" ] && [ -f "$nccl/include/nccl.h" ] && [ -n "$nccl_lib" ]; then
    mpicc "${cflags[@]}" "${includes[@]}" -I"$cuda_inc" -I"$nccl/include" -o "$out/nccl_coll" \
        "$here/nccl_coll.c" "$tmp/cli.o" "$nccl_lib" -Wl,-rpath,"$(dirname "$nccl_lib")" "${cuda_link[@]}"
    echo "peers: built $out/nccl_coll with NCCL from $nccl"
else
    echo "peers: no NCCL (set NCCL_HOME, or pip install nvidia-nccl-cu13): nccl_coll not built"
fi

if [ -z "$nvshmem" ] || [ ! -f "$nvshmem/include/nvshmem.h" ]; then
    echo "peers: no NVSHMEM (set NVSHMEM_HOME, or pip install nvidia-nvshmem-cu13): gups_nvshmem not built"
    exit 0
fi
host_lib="$(ls "$nvshmem"/lib/libnvshmem_host.so* | head -1)"
# Device calls need relocatable device code, linked with NVSHMEM's device
# library; its bootstrap plugins are loaded from the same lib/ at run time.
# shellcheck disable=SC2086
"$nvcc" -O3 -arch="$arch" -rdc=true -DGUPS_PEER_NVSHMEM "${includes[@]}" -I"$nvshmem/include" $mpi_cflags \
    -c "$here/gups_peer.cu" -o "$tmp/nvshmem.o"
"$nvcc" -arch="$arch" -dlink "$tmp/nvshmem.o" "$nvshmem/lib/libnvshmem_device.a" -o "$tmp/dlink.o"
mpicc -o "$out/gups_nvshmem" "$tmp/host.o" "$tmp/cli.o" "$tmp/nvshmem.o" "$tmp/dlink.o" \
    "$nvshmem/lib/libnvshmem_device.a" "$host_lib" -Wl,--disable-new-dtags,-rpath,"$nvshmem/lib" \
    -L"$cuda_lib/stubs" -lcuda "${cuda_link[@]}"
echo "peers: built $out/gups_nvshmem with NVSHMEM from $nvshmem"
