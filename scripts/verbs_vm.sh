#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs a command inside a Debian 12 virtual machine that has an RDMA device:
# Soft-RoCE (rdma_rxe) on its loopback, for machines whose own kernel has no
# rdma_rxe (containers, most CI).  The checkout is shared with the VM at the
# same path, so a build made here runs there if it links only what the VM
# has (OpenCL, Open MPI, libibverbs: no CUDA, HIP or CLBlast).
#   scripts/verbs_vm.sh                the verbs tests, built here into build-vm/ without the GPU backends
#   scripts/verbs_vm.sh COMMAND...     any command, from the top of the checkout
#   scripts/verbs_vm.sh --disk         only the VM's disk, if it is not made yet (scripts/test.sh makes it
#                                      while its builds run: debootstrap mostly waits for the network)
# Exits with the command's status; 77 (skipped) when the VM cannot be made or
# booted here, saying why.  The VM's disk is kept in $GRAIN_VM_DIR (default
# /var/tmp/grain-verbs-vm) and made once (debootstrap, a few minutes).
# GRAIN_VM_ACCEL=kvm uses KVM (default tcg: emulation, slower, but it works
# wherever qemu does, nested virtualization or not).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
dir=${GRAIN_VM_DIR:-/var/tmp/grain-verbs-vm}
accel=${GRAIN_VM_ACCEL:-tcg}
timeout_s=${GRAIN_VM_TIMEOUT:-1200}
disk_only=0
[ "${1:-}" = --disk ] && disk_only=1 && shift
if [ "$disk_only" = 0 ] && [ $# -eq 0 ]; then
    cmake -S . -B build-vm -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAIN_WITH_CUDA=OFF -DGRAIN_WITH_HIP=OFF \
        -DGRAIN_WITH_CLBLAST=OFF >/dev/null
    cmake --build build-vm -j "$(nproc)" --target gups jacobi chunks fetch ep_run test_verbs_proto >/dev/null
    # Emulated, PoCL compiles a program for a minute or more, and the ranks
    # of a test compile the same one side by side: one rank of each of the
    # tests' programs first, two programs at a time, compiles each once into
    # PoCL's cache (below), from which the tests' ranks take it.
    run1="mpirun --bind-to none -np 1 --mca pml ob1 -x GRAIN_PEER=off" # ob1, as the tests name it
    bin=$repo/build-vm/bin
    warm="$run1 $bin/fetch & ($run1 $bin/gups --log2-table 10; $run1 -x GRAIN_EP_COLL_MESSAGES=1 $bin/ep_run 2) & wait;"
    warm+=" $run1 $bin/jacobi --n 130 --iterations 1 --agent host --chunk-size 1000 &"
    warm+=" $run1 $bin/chunks bulk 4096 3000 & wait"
    tests="ctest --test-dir $repo/build-vm -R verbs --output-on-failure --timeout 600"
    # One line: the VM's sh reads it as printf %q writes it (no $'...').
    set -- sh -c "($warm) >/dev/null 2>&1; exec $tests"
fi

skip() { echo "verbs VM skipped: $*"; exit 77; }

# debootstrap mounts proc and sys in its target while it configures packages,
# and leaves them mounted when it is killed or fails: mkfs.ext4 -d would then
# copy the host's /proc and rm -rf would walk into it.
unmount_root() {
    awk -v r="$dir/root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts |
        sort -r | while read -r m; do umount -l "$m" || true; done
}
drop_root() {
    unmount_root
    rm -rf --one-file-system "$dir/root"
}

# What the tests need at run time: the libraries the build links, the ranks'
# launcher, the OpenCL device, the RDMA user space, python3 for the benchmarks.
packages=kmod,iproute2,rdma-core,ibverbs-providers,ibverbs-utils,libibverbs1,openmpi-bin,libopenmpi3,
packages+=ocl-icd-libopencl1,pocl-opencl-icd,libcmocka0,cmake,procps,python3,linux-image-amd64

if ! command -v qemu-system-x86_64 >/dev/null || ! command -v debootstrap >/dev/null ||
    ! command -v mkfs.ext4 >/dev/null; then
    [ "$(id -u)" = 0 ] || skip "needs qemu-system-x86, debootstrap and e2fsprogs (apt-get install them as root)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 debootstrap e2fsprogs >/dev/null || skip "cannot install qemu and debootstrap"
fi

if [ ! -f "$dir/root.img" ]; then
    [ "$(id -u)" = 0 ] || skip "making the VM's disk needs root (debootstrap)"
    mkdir -p "$dir"
    drop_root
    echo "verbs VM: making its disk in $dir (debootstrap bookworm)"
    timeout 600 debootstrap --variant=minbase --include="$packages" bookworm "$dir/root" http://deb.debian.org/debian \
        >"$dir/debootstrap.log" 2>&1 || {
        drop_root
        # Its last words say why, where a CI log is all there is to read.
        skip "debootstrap failed or took over 10 minutes ($dir/debootstrap.log ends:" \
            "$(tail -n 3 "$dir/debootstrap.log" | tr '\n' ' '))"
    }
    unmount_root
    # PID 1: mounts, the checkout and the job's folder over 9p, Soft-RoCE on lo,
    # the job, power off.
    cat >"$dir/root/grain-init" <<'EOF'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm; mount -t tmpfs tmpfs /tmp
modprobe 9pnet_virtio; modprobe 9p
mkdir -p /job /cache && mount -t 9p -o trans=virtio,version=9p2000.L job /job
mount -t 9p -o trans=virtio,version=9p2000.L cache /cache
repo=$(cat /job/repo)
mkdir -p "$repo" && mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 repo "$repo"
ip link set lo up
hostname grain-vm
modprobe rdma_rxe && rdma link add rxe0 type rxe netdev lo
cd "$repo" && sh /job/job.sh >/job/out 2>&1
echo $? >/job/rc
sync
echo o >/proc/sysrq-trigger
sleep 60
EOF
    chmod +x "$dir/root/grain-init"
    cp "$dir"/root/boot/vmlinuz-* "$dir/vmlinuz"
    cp "$dir"/root/boot/initrd.img-* "$dir/initrd"
    mkfs.ext4 -q -F -d "$dir/root" "$dir/root.img.new" 3G >/dev/null || { drop_root; skip "mkfs.ext4 -d failed"; }
    mv "$dir/root.img.new" "$dir/root.img"
    drop_root
fi
if [ "$disk_only" = 1 ]; then
    echo "verbs VM: its disk is ready in $dir"
    exit 0
fi

mkdir -p "$dir/cache"
job=$(mktemp -d)
trap 'rm -rf "$job"' EXIT
echo "$repo" >"$job/repo"
{
    # Emulated, PoCL takes minutes to compile a kernel: its cache outlives the VM.
    echo "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 POCL_CACHE_DIR=/cache/pocl"
    echo "echo \"verbs VM: \$(uname -r), RDMA devices: \$(ls /sys/class/infiniband)\""
    printf '%q ' "$@"
    echo
} >"$job/job.sh"
cpu=max
[ "$accel" = kvm ] && cpu=host,-arch-capabilities # the MSR nested KVM refuses
timeout "$timeout_s" qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -smp "$(nproc)" -m 6G -nographic -no-reboot \
    -kernel "$dir/vmlinuz" -initrd "$dir/initrd" -drive "file=$dir/root.img,format=raw,if=virtio,snapshot=on" \
    -virtfs "local,path=$repo,mount_tag=repo,security_model=passthrough,id=repo" \
    -virtfs "local,path=$job,mount_tag=job,security_model=passthrough,id=job" \
    -virtfs "local,path=$dir/cache,mount_tag=cache,security_model=passthrough,id=cache" \
    -append "root=/dev/vda rw console=ttyS0 init=/grain-init quiet panic=-1" >"$dir/console.log" 2>&1 || true
[ -f "$job/rc" ] || skip "the VM did not run the command (console: $dir/console.log)"
cat "$job/out"
exit "$(cat "$job/rc")"
