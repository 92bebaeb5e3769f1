#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws endpoint collectives of two trees (or settings) side by side from
ep_bench --json reports: for each placement (the file name up to its first
'-': np2, np1x2, ...) and each collective, microseconds by bytes, a line a
tree at the median of its runs; the broadcast's panel adds its baseline, the
ranks' host broadcast plus the copies (fig. 9 of the GMH paper), dashed.
Also writes the medians to OUT.csv beside OUT.png.

usage: plot_ep_ab.py OUT.png TITLE TREE=FILE.json [TREE=FILE.json ...]
e.g. from docs/results/endpoints-2xh200-s47:
  python3 ../plot_ep_ab.py host.png "Collectives through the host" main=np2-main-r1.json new=np2-new-r1.json ...
"""
import csv
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLLECTIVES = ("bcast", "allreduce", "reduce", "gather", "scatter", "alltoall")

if len(sys.argv) < 4:
    sys.exit(__doc__)
out, title = sys.argv[1], sys.argv[2]
# (placement, tree) -> bytes -> field -> values
runs = {}
for arg in sys.argv[3:]:
    tree, path = arg.split("=", 1)
    placement = os.path.basename(path).split("-")[0]
    report = json.loads(open(path).read().strip().splitlines()[-1])
    for row in report["rows"]:
        cell = runs.setdefault((placement, tree), {}).setdefault(row["bytes"], {})
        for c in COLLECTIVES:
            cell.setdefault(c, []).append(row[f"{c}_us"])
        cell.setdefault("baseline", []).append(row["host_bcast_us"] + row["copies_us"])

placements = sorted({p for p, _ in runs})
trees = list(dict.fromkeys(t for _, t in runs))
with open(os.path.splitext(out)[0] + ".csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["placement", "tree", "bytes", "runs"] + [f"{c}_us" for c in COLLECTIVES] + ["bcast_baseline_us"])
    for (placement, tree), sizes in sorted(runs.items()):
        for b, cell in sorted(sizes.items()):
            w.writerow([placement, tree, b, len(cell["bcast"])] +
                       [round(statistics.median(cell[c]), 2) for c in COLLECTIVES + ("baseline",)])

fig, axes = plt.subplots(len(placements), len(COLLECTIVES), figsize=(3.6 * len(COLLECTIVES), 3.2 * len(placements)),
                         squeeze=False)
for row, placement in zip(axes, placements):
    for ax, c in zip(row, COLLECTIVES):
        for tree in trees:
            sizes = runs.get((placement, tree))
            if not sizes:
                continue
            xs = sorted(sizes)
            line, = ax.plot(xs, [statistics.median(sizes[b][c]) for b in xs], "o-", markersize=3, label=tree)
            if c == "bcast":
                ax.plot(xs, [statistics.median(sizes[b]["baseline"]) for b in xs], "--", linewidth=0.8,
                        color=line.get_color(), label=f"{tree}: host broadcast + copies")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{placement}: {c}", fontsize=9)
        ax.set_xlabel("bytes", fontsize=8)
        ax.set_ylabel("us", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
fig.suptitle(title)
fig.tight_layout()
fig.savefig(out, dpi=100)
print(f"plot_ep_ab: wrote {out}")
