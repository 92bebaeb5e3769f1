#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Who should call MPI_Isend: grain's network thread (GRAIN_MPI_THREADS=serialized) or each
aggregator under MPI_THREAD_MULTIPLE (multiple)?  Runs gups --verify --json through mpirun for both
modes by rank and aggregator count, median of --reps runs, and prints multiple's rate as a ratio to
serialized's measured in the same run.  Writes <out>.csv and <out>.png.

  mpi_threads_bench.py [--gups build/bin/gups] [--log2-table 22] [--ranks 2,4]
                       [--aggregators 1,2] [--reps 3] [--out bench-results/mpi_threads]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

from driver import Progress

ap = argparse.ArgumentParser()
ap.add_argument("--gups", default="build/bin/gups")
ap.add_argument("--log2-table", type=int, default=22)
ap.add_argument("--ranks", default="2,4")
ap.add_argument("--aggregators", default="1,2")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--out", default="bench-results/mpi_threads")
args = ap.parse_args()

env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
modes = ("serialized", "multiple")
ranks = [int(r) for r in args.ranks.split(",")]
aggs = [int(a) for a in args.aggregators.split(",")]
progress = Progress(len(ranks) * len(aggs) * len(modes) * args.reps, out=sys.stderr)


def gups(np_, agg, mode):
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(np_), args.gups,
           "--log2-table", str(args.log2_table), "--verify", "--json", "--aggregators", str(agg), "--mpi-threads", mode,
           "--peer", "off"]  # the ranks share this host: keep their messages on MPI
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (out.returncode, " ".join(cmd), out.stderr))
    r = json.loads(out.stdout.strip().splitlines()[-1])
    if r["verified"] is not True:
        sys.exit("not verified: " + " ".join(cmd))
    return r["gups"]


rows = []
for np_ in ranks:
    for agg in aggs:
        med = {}
        for mode in modes:
            runs = []
            for _ in range(args.reps):
                progress.start("ranks %d aggregators %d %s" % (np_, agg, mode))
                runs.append(gups(np_, agg, mode))
                progress.finish("%.4f GUP/s" % runs[-1])
            med[mode] = statistics.median(runs)
        for mode in modes:
            rows.append({"ranks": np_, "aggregators": agg, "mpi_threads": mode, "gups": med[mode],
                         "ratio_to_serialized": med[mode] / med["serialized"]})

os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
with open(args.out + ".csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
print("%5s %11s %-10s %10s %12s" % ("ranks", "aggregators", "mode", "GUP/s", "x serialized"))
for r in rows:
    print("%5d %11d %-10s %10.5f %12.3f" % (r["ranks"], r["aggregators"], r["mpi_threads"], r["gups"],
                                             r["ratio_to_serialized"]))
print("wrote", args.out + ".csv")

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 4))
labels = ["%d ranks, %d agg" % (n, a) for n in ranks for a in aggs]
x = range(len(labels))
for i, mode in enumerate(modes):
    ys = [r["gups"] for r in rows if r["mpi_threads"] == mode]
    ax.bar([v + 0.4 * i - 0.2 for v in x], ys, width=0.4, label="GRAIN_MPI_THREADS=" + mode)
ax.set_xticks(list(x))
ax.set_xticklabels(labels)
ax.set_ylabel("GUP/s (gups --verify, median of %d)" % args.reps)
ax.set_title("MPI thread mode: network thread vs MPI_THREAD_MULTIPLE")
ax.legend()
fig.tight_layout()
fig.savefig(args.out + ".png", dpi=120)
print("wrote", args.out + ".png")
