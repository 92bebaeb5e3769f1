#!/usr/bin/env python3
"""Draws spread.png from this directory's CSVs: every run of each configuration
beside its median, to show the spread against the differences."""
import csv, os, statistics
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = os.path.dirname(os.path.abspath(__file__))


def groups(name, label, value, scale):
    out = {}
    with open(os.path.join(here, name)) as f:
        for row in csv.DictReader(f):
            out.setdefault(row[label], []).append(float(row[value]) * scale)
    return out


panels = [("pagerank-s22e4-rounds.csv", "producer_s", 1e3, "pagerank Kronecker 22,4: producer of 100 steps (ms)\n4 interleaved rounds, one process a point"),
          ("pagerank-s22e4-ncu.csv", "pr_pull_us", 1e-3, "pagerank: one pull step alone under ncu (ms)\n8 launches x 2 ranks x 2 processes"),
          ("jacobi-n8192-tail.csv", "producer_s", 1e3, "jacobi 8192²: producer of 200 sweeps (ms)\n4 interleaved rounds")]
fig, axes = plt.subplots(1, 3, figsize=(17, 5.5))
for ax, (name, value, scale, title) in zip(axes, panels):
    data = groups(name, "label", value, scale)
    for i, (label, vals) in enumerate(data.items()):
        ax.scatter([i] * len(vals), vals, s=14, alpha=0.6, color="tab:blue")
        ax.hlines(statistics.median(vals), i - 0.3, i + 0.3, color="tab:red")
    ax.set_xticks(range(len(data)), list(data), rotation=60, ha="right", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
axes[0].set_ylabel("blue: runs, red: median")
fig.tight_layout()
fig.savefig(os.path.join(here, "spread.png"), dpi=100)
print("wrote", os.path.join(here, "spread.png"))
