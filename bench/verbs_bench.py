#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The verbs transport against the MPI transport, measured in the same run:
  - GUPS (aggregated buffers): MPI, then verbs with buffers as RDMA writes with immediate data
    (GRAIN_IB_OPCODE=write_imm) and as send/receive (send): GUP/s and the ratio to MPI's;
  - jacobi's halos (counter-triggered chunks, host agent): MPI pieces, verbs pieces through the rings
    (GRAIN_IB_PUT=0) and verbs puts into the peers' heaps (GRAIN_IB_PUT=1): seconds and MPI's time over
    each one's.
Every run is verified; the median of --reps is kept.  Needs an RDMA device (scripts/verbs_vm.sh
python3 bench/verbs_bench.py runs it on Soft-RoCE).  Writes <out>.csv, <out>.json and, with
matplotlib, <out>.png; --plot CSV draws the PNG again from a CSV (where the runs had no matplotlib).

  verbs_bench.py [--bin build-vm/bin] [--ranks 2] [--log2-table 20] [--n 1026] [--iterations 100]
                 [--reps 3] [--out bench-results/verbs]
"""
import argparse
import csv
import json
import os
import statistics
import sys

from driver import Progress, pyplot, run_app

ap = argparse.ArgumentParser()
ap.add_argument("--bin", default="build-vm/bin")
ap.add_argument("--ranks", type=int, default=2)
ap.add_argument("--log2-table", type=int, default=20)
ap.add_argument("--n", type=int, default=1026)
ap.add_argument("--iterations", type=int, default=100)
ap.add_argument("--chunk-size", default="16K")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--out", default="bench-results/verbs")
ap.add_argument("--plot", metavar="CSV", help="only draw the PNG of an earlier run's CSV")
args = ap.parse_args()

# (workload, configuration, environment); the first of each workload is its baseline.
CASES = [
    ("gups", "mpi", {"GRAIN_TRANSPORT": "mpi"}),
    ("gups", "verbs write_imm", {"GRAIN_TRANSPORT": "verbs", "GRAIN_IB_OPCODE": "write_imm"}),
    ("gups", "verbs send", {"GRAIN_TRANSPORT": "verbs", "GRAIN_IB_OPCODE": "send"}),
    ("jacobi", "mpi pieces", {"GRAIN_TRANSPORT": "mpi"}),
    ("jacobi", "verbs pieces", {"GRAIN_TRANSPORT": "verbs", "GRAIN_IB_PUT": "0"}),
    ("jacobi", "verbs puts", {"GRAIN_TRANSPORT": "verbs", "GRAIN_IB_PUT": "1"}),
]


def command(workload, env):
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(args.ranks)]
    for k, v in env.items():
        cmd += ["-x", f"{k}={v}"]
    if workload == "gups":
        return cmd + [os.path.join(args.bin, "gups"), "--log2-table", str(args.log2_table), "--verify", "--json"]
    return cmd + [os.path.join(args.bin, "jacobi"), "--n", str(args.n), "--iterations", str(args.iterations),
                  "--agent", "host", "--chunk-size", args.chunk_size, "--verify", "--json"]


def measure():
    progress = Progress(len(CASES) * args.reps, out=sys.stderr)
    rows, base = [], {}
    for workload, config, env in CASES:
        values, report = [], None
        for _ in range(args.reps):
            progress.start(f"{workload}, {config}")
            report, why = run_app(command(workload, env), workload, timeout=600)
            if report is None or report.get("verified") is not True:
                sys.exit(f"verbs_bench: {workload} with {config}: {why or 'not verified'}")
            values.append(report["gups"] if workload == "gups" else report["seconds"])
            progress.finish(f"{values[-1]:.5g} {'GUP/s' if workload == 'gups' else 's'}")
        value = statistics.median(values)
        base.setdefault(workload, value)
        # Faster is more: GUP/s over the baseline's, or the baseline's seconds over these.
        ratio = value / base[workload] if workload == "gups" else base[workload] / value
        rows.append({"workload": workload, "config": config, "ranks": args.ranks, "transport": report["transport"],
                     "value": value, "unit": "GUP/s" if workload == "gups" else "s", "speedup_vs_mpi": ratio,
                     "bytes_written": report.get("bytes_written", 0), "bytes_sent": report.get("bytes_sent", 0),
                     "device": report["device"]})
    return rows


def plot(rows, path):
    plt = pyplot("verbs_bench")
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{r['workload']}\n{r['config']}" for r in rows]
    colors = ["#888888" if r["config"].startswith("mpi") else "#1f77b4" for r in rows]
    ax.bar(range(len(rows)), [float(r["speedup_vs_mpi"]) for r in rows], color=colors)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("speed relative to the MPI transport (same run)")
    ax.set_title(f"verbs vs MPI, {rows[0]['ranks']} ranks ({rows[0]['device']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print("wrote", path)


if args.plot:
    with open(args.plot) as f:
        plot(list(csv.DictReader(f)), os.path.splitext(args.plot)[0] + ".png")
    sys.exit(0)
rows = measure()
os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
with open(args.out + ".csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
with open(args.out + ".json", "w") as f:
    json.dump(rows, f, indent=1)
print(f"{'workload':8} {'configuration':16} {'value':>10} {'unit':6} {'x mpi':>7} {'written':>10} {'pieces':>10}")
for r in rows:
    print(f"{r['workload']:8} {r['config']:16} {r['value']:10.5g} {r['unit']:6} {r['speedup_vs_mpi']:7.3f} "
          f"{r['bytes_written']:10} {r['bytes_sent']:10}")
print("wrote", args.out + ".csv", args.out + ".json")
plot(rows, args.out + ".png")
