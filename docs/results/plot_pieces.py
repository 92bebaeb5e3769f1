#!/usr/bin/env python3
"""Draws the host agent's whole-run times at each chunk size for several
trees of grain, from a probe CSV (round,label,seconds,...; labels
pr.host<chunk>.<tree>, pr.bulk and pr.ideal): every run and its median,
with bulk's and the ideal's medians as lines.

usage: plot_pieces.py DIR TITLE TREE=NAME [TREE=NAME ...]
reads DIR/runs.csv and writes DIR/pieces.png, e.g. from docs/results:
  python3 plot_pieces.py transfers-2xh200-session20 \\
      "pagerank Kronecker 21,4, 2 ranks on 2 H200s through MPI (GRAIN_PEER_MEMORY=0)" \\
      "a=before (f0599f4)" "b=+ lent receive buffers (72c92ab)" "c=+ staged sends (1139d39)"
"""
import csv, os, statistics, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

if len(sys.argv) < 4:
    sys.exit(__doc__)
here, title = sys.argv[1], sys.argv[2]
trees = dict(arg.split("=", 1) for arg in sys.argv[3:])
runs = {}
with open(os.path.join(here, "runs.csv")) as f:
    for row in csv.DictReader(f):
        runs.setdefault(row["label"], []).append(float(row["seconds"]) * 1e3)

fig, ax = plt.subplots(figsize=(9, 5))
chunks = ["64K", "256K", "1M"]
colors = ["tab:gray", "tab:blue", "tab:green", "tab:orange"]
width = 0.75 / len(trees)
for i, chunk in enumerate(chunks):
    for j, (tree, name) in enumerate(trees.items()):
        vals = runs[f"pr.host{chunk}.{tree}"]
        x = i + (j - (len(trees) - 1) / 2) * width
        ax.scatter([x] * len(vals), vals, s=16, color=colors[j], alpha=0.6, label=name if i == 0 else None)
        ax.hlines(statistics.median(vals), x - 0.4 * width, x + 0.4 * width, color=colors[j])
for label, style in (("pr.bulk", "--"), ("pr.ideal", ":")):
    ax.axhline(statistics.median(runs[label]), color="black", linestyle=style, label=f"{label[3:]} (median)")
ax.set_xticks(range(len(chunks)), [f"host agent, {c} chunks" for c in chunks])
ax.set_ylabel("whole run, 20 steps (ms)")
ax.set_title(f"{title}\ndots: runs (interleaved rounds), ticks: medians", fontsize=9)
ax.legend(fontsize=8)
ax.grid(axis="y", alpha=0.3)
fig.tight_layout()
fig.savefig(os.path.join(here, "pieces.png"), dpi=100)
print("wrote", os.path.join(here, "pieces.png"))
