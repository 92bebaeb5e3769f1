#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every multi-GPU figure of one machine in one run: the task scheduler's
benchmarks against their hand-written versions, the device endpoints against
cudaMemcpyPeer and NCCL, dslash's weak and strong scaling, GUPS against
NVSHMEM and the CUDA IPC ceiling, and the graph apps' scaling, each on the GPU
counts of --gpus (1, 2, 4... up to the GPUs nvidia-smi lists).

Each part writes under <out>/<part>/: its benchmark's own CSV, JSON and PNG
(sched_bench.py, gups_peers.py, app_scaling.py), and for the endpoints and
dslash one file a run, endpoints/dslash.csv and endpoints/endpoints.png
(plot_endpoints.py).  <out>/steps.csv has every command with its exit status
and seconds; <out>/machine.txt what nvidia-smi says of the GPUs' links.  A
step that fails is reported and the run goes on; the exit status is 1 if any
failed.

  bench/multigpu.py [--bin build/bin] [--peers build/peers] [--gpus 1,2,4,8]
                    [--parts sched,endpoints,dslash,gups,apps] [--scale 22]
                    [--out bench-results/multigpu] [--data DIR] [--mpirun "mpirun ..."]
                    [--tiny] [--dry-run]

--peers: bench/peers/build.sh's folder (peer_copy, nccl_coll, gups_ipc,
gups_nvshmem); the parts leave out what is not built there.  --data: where
app_scaling.py keeps its generated inputs (its default, bench-results/inputs,
apart from <out>).  --mpirun goes to the benchmarks' drivers too.  --tiny:
CI's sizes, for PoCL's devices (the same steps, each in seconds).  --dry-run
prints the commands."""
import argparse
import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

from driver import Progress

PARTS = ("sched", "endpoints", "dslash", "gups", "apps")
HERE = os.path.dirname(os.path.abspath(__file__))

# The sizes of a run, and of --tiny's.
FULL = {"sched": [], "msg_bytes": "256M", "msg_iters": "100", "host_bytes": "64M", "host_iters": "20",
        "coll_bytes": "64M", "coll_iters": "50", "edge": 24, "depth": 32, "reps": "100", "gups": [],
        "kmer": ["--", "--heap-size", "4G"]}
TINY = {"sched": ["--tiny"], "msg_bytes": "64K", "msg_iters": "5", "host_bytes": "64K", "host_iters": "5",
        "coll_bytes": "64K", "coll_iters": "5", "edge": 8, "depth": 8, "reps": "2", "gups": ["--log2-per-gpu", "16"],
        "kmer": []}


class Step:
    """A command of a part; its output goes to <part>/<name>.txt."""

    def __init__(self, part, name, cmd, timeout):
        self.part, self.name, self.cmd, self.timeout = part, name, cmd, timeout


def gpus_here():
    """The GPUs nvidia-smi lists, or 0 without it."""
    if shutil.which("nvidia-smi") is None:
        return 0
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def default_gpus(n):
    counts = [1]
    while counts[-1] * 2 <= n:
        counts.append(counts[-1] * 2)
    return counts if counts[-1] == n else counts + [n]


def peer(args, name):
    path = os.path.join(args.peers, name)
    return path if os.access(path, os.X_OK) else None


def driver(args, script, *options):
    """One of the benchmarks' own drivers, with this run's binaries and mpirun."""
    return [sys.executable, os.path.join(HERE, script), "--bin", args.bin, "--mpirun", args.mpirun, *options]


def sched_steps(args, mpirun, z):
    return [Step("sched", "sched", driver(args, "sched_bench.py", "--devices", ",".join(map(str, args.gpus)),
                                          "--partitions", "1,2,4,8,16,32", "--reps", "3", "--out",
                                          os.path.join(args.out, "sched")) + z["sched"], 3600)]


def endpoint_steps(args, mpirun, z):
    ep, out = os.path.join(args.bin, "ep_bench"), os.path.join(args.out, "endpoints")

    def sweep(name, kind):
        return ["--max-bytes", z[kind + "_bytes"], "--iters", z[kind + "_iters"], "--csv",
                os.path.join(out, name + ".csv")]

    steps = [Step("endpoints", "ep_win2", mpirun + ["-np", "2", ep] + sweep("ep_win2", "msg"), 300),
             Step("endpoints", "ep_host2", mpirun + ["-np", "2", "-x", "GRAIN_EP_WINDOW=0", ep] +
                  sweep("ep_host2", "host"), 300),
             Step("endpoints", "ep_rank2", mpirun + ["-np", "1", ep, "--endpoints", "2"] + sweep("ep_rank2", "msg"),
                  300)]
    if peer(args, "peer_copy"):
        steps.append(Step("endpoints", "peer_copy", [peer(args, "peer_copy")] + sweep("peer_copy", "msg"), 120))
    for n in [n for n in args.gpus if n >= 2]:
        steps.append(Step("endpoints", f"coll_np{n}", mpirun + ["-np", str(n), ep] + sweep(f"coll_np{n}", "coll"),
                          300))
        steps.append(Step("endpoints", f"coll_rank{n}", mpirun + ["-np", "1", ep, "--endpoints", str(n)] +
                          sweep(f"coll_rank{n}", "coll"), 300))
        if peer(args, "nccl_coll"):
            steps.append(Step("endpoints", f"nccl_np{n}", mpirun + ["-np", str(n), peer(args, "nccl_coll")] +
                              sweep(f"nccl_np{n}", "coll"), 300))
    return steps


def dslash_runs(gpus, depth):
    """dslash's runs: (group, ranks, endpoints a rank, T, windows); weak
    scaling gives each GPU a slab `depth` deep, strong splits one."""
    runs = [("gpu1", 1, 1, depth, True)]
    for n in [n for n in gpus if n >= 2]:
        runs += [(f"weak{n}", n, 1, depth * n, True), (f"weak{n}ep", 1, n, depth * n, True),
                 (f"weak{n}host", n, 1, depth * n, False), (f"strong{n}", n, 1, depth, True),
                 (f"strong{n}ep", 1, n, depth, True)]
    return runs


def lattice(z, t):
    return f"{z['edge']},{z['edge']},{z['edge']},{t}"


def dslash_steps(args, mpirun, z):
    ds, steps = os.path.join(args.bin, "dslash"), []
    for rep in (1, 2):
        for group, ranks, devices, t, windows in dslash_runs(args.gpus, z["depth"]):
            env = [] if windows else ["-x", "GRAIN_EP_WINDOW=0"]
            cmd = mpirun + ["-np", str(ranks)] + env + [ds, "--lattice", lattice(z, t), "--devices", str(devices),
                                                        "--dslash-reps", z["reps"], "--json"]
            steps.append(Step("dslash", f"{group}.{rep}", cmd, 300))
    most = max(args.gpus)
    steps.append(Step("dslash", "verify", mpirun + ["-np", str(most), ds, "--lattice", "8,8,8,16", "--devices", "1",
                                                     "--verify"], 300))
    return steps


def gups_steps(args, mpirun, z):
    return [Step("gups", "gups", driver(args, "gups_peers.py", "--peers", args.peers, "--gpus",
                                        ",".join(map(str, args.gpus)), "--repeat", "3", "--out",
                                        os.path.join(args.out, "gups")) + z["gups"], 3600)]


def app_steps(args, mpirun, z):
    common = driver(args, "app_scaling.py", "--scale", str(args.scale), "--ranks", ",".join(map(str, args.gpus)),
                    "--repeat", "1", "--data", args.data)
    # kmer's one-rank table takes 3 GiB at scale 22
    return [Step("apps", "apps", common + ["--apps", "pagerank,sssp,kmeans", "--out", os.path.join(args.out, "apps")],
                 3600),
            Step("apps", "kmer", common + ["--apps", "kmer", "--out", os.path.join(args.out, "kmer")] + z["kmer"],
                 1800)]


BUILDERS = {"sched": sched_steps, "endpoints": endpoint_steps, "dslash": dslash_steps, "gups": gups_steps,
            "apps": app_steps}


def dslash_table(args, z):
    """endpoints/dslash.csv from the dslash runs' JSON lines."""
    rows = []
    for group, _, _, t, _ in dslash_runs(args.gpus, z["depth"]):
        for rep in (1, 2):
            path = os.path.join(args.out, "dslash", f"{group}.{rep}.txt")
            if not os.path.exists(path):
                continue
            with open(path) as f:
                for line in f:
                    if line.startswith("{"):
                        d = json.loads(line)
                        rows.append([f"{group}.{rep}", d.get("ranks"), d.get("endpoints"),
                                     lattice(z, t).replace(",", "x"),
                                     d.get("dslash_gflops"), d.get("cg_gflops")])
    os.makedirs(os.path.join(args.out, "endpoints"), exist_ok=True)
    with open(os.path.join(args.out, "endpoints", "dslash.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "ranks", "endpoints", "lattice", "dslash_gflops", "cg_gflops"])
        w.writerows(rows)
    return rows


def endpoints_figure(args, z):
    """endpoints.png, where the two-endpoint messages and the collectives
    on the most GPUs ran (the peers' runs where they did)."""
    out, most = os.path.join(args.out, "endpoints"), max(args.gpus)
    need = ["ep_win2.csv", "ep_host2.csv", "ep_rank2.csv", "dslash.csv", f"coll_np{most}.csv", f"coll_rank{most}.csv"]
    if most < 2 or not all(os.path.exists(os.path.join(out, n)) for n in need):
        print("multigpu: endpoints.png left out (a run it draws is missing)")
        return 0
    groups = ",".join(g for g, *_ in dslash_runs(args.gpus, z["depth"]))
    return subprocess.run([sys.executable, os.path.join(HERE, "plot_endpoints.py"), out, "--title", f"{most} GPUs",
                           "--coll", f"coll_np{most}.csv:{most} ranks", "--coll",
                           f"coll_rank{most}.csv:1 rank x {most}", "--nccl", f"nccl_np{most}.csv:{most} GPUs",
                           "--dslash", groups]).returncode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--peers", default="build/peers")
    ap.add_argument("--gpus", help="GPU counts, e.g. 1,2,4,8 (default: 1, 2, 4... up to the GPUs here)")
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--scale", type=int, default=22)
    ap.add_argument("--out", default="bench-results/multigpu")
    ap.add_argument("--data", default="bench-results/inputs")
    ap.add_argument("--mpirun", default="mpirun --bind-to none --oversubscribe")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    if not parts or any(p not in PARTS for p in parts):
        sys.exit(f"multigpu: --parts are {', '.join(PARTS)}")
    if args.gpus is None:
        n = gpus_here()
        if n == 0:
            sys.exit("multigpu: nvidia-smi lists no GPU here: give --gpus")
        args.gpus = default_gpus(n)
    else:
        try:
            args.gpus = sorted({int(x) for x in args.gpus.split(",")})
        except ValueError:
            sys.exit(f"multigpu: --gpus \"{args.gpus}\" is not a list of GPU counts")
        if args.gpus[0] < 1:
            sys.exit("multigpu: GPU counts are at least 1")
    mpirun = shlex.split(args.mpirun)
    z = TINY if args.tiny else FULL
    if args.tiny and args.scale == 22:
        args.scale = 10
    steps = [s for p in parts for s in BUILDERS[p](args, mpirun, z)]
    if args.dry_run:
        for s in steps:
            print(f"{s.part}/{s.name}: {shlex.join(s.cmd)}")
        return 0
    for p in parts:
        os.makedirs(os.path.join(args.out, p), exist_ok=True)
    if shutil.which("nvidia-smi"):
        with open(os.path.join(args.out, "machine.txt"), "w") as f:
            for cmd in (["nvidia-smi", "topo", "-m"], ["nvidia-smi", "-L"]):
                f.write(subprocess.run(cmd, capture_output=True, text=True).stdout)
    progress, failed, done = Progress(len(steps)), [], []
    for s in steps:
        progress.start(f"{s.part} {s.name}")
        t0 = time.time()
        with open(os.path.join(args.out, s.part, s.name + ".txt"), "w") as f:
            try:
                rc = subprocess.run(s.cmd, stdout=f, stderr=subprocess.STDOUT, timeout=s.timeout).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        seconds = time.time() - t0
        done.append([s.part, s.name, rc, f"{seconds:.1f}", shlex.join(s.cmd)])
        if rc != 0:
            failed.append(f"{s.part}/{s.name}")
        progress.finish("ok" if rc == 0 else f"failed ({rc}), see {s.part}/{s.name}.txt")
    with open(os.path.join(args.out, "steps.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["part", "name", "rc", "seconds", "command"])
        w.writerows(done)
    if "dslash" in parts:
        dslash_table(args, z)
    if "endpoints" in parts and endpoints_figure(args, z) != 0:
        failed.append("endpoints/endpoints.png")
    if failed:
        print(f"multigpu: {len(failed)} of {len(steps)} steps failed: {', '.join(failed)}")
        return 1
    print(f"multigpu: {len(steps)} steps done; results under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
