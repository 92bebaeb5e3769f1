#!/usr/bin/env python3
"""Draws pieces.png from runs.csv: pagerank Kronecker 21,4 through MPI on two
H200s, the host agent at each chunk size on the three trees (a: before,
b: receive buffers lent, c: and staged sends), every run and its median,
with bulk's and the ideal's medians as lines."""
import csv, os, statistics
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = os.path.dirname(os.path.abspath(__file__))
runs = {}
with open(os.path.join(here, "runs.csv")) as f:
    for row in csv.DictReader(f):
        runs.setdefault(row["label"], []).append(float(row["seconds"]) * 1e3)

fig, ax = plt.subplots(figsize=(9, 5))
trees = {"a": ("before (f0599f4)", "tab:gray"), "b": ("+ lent receive buffers (72c92ab)", "tab:blue"),
         "c": ("+ staged sends (1139d39)", "tab:green")}
chunks = ["64K", "256K", "1M"]
for i, chunk in enumerate(chunks):
    for j, (tree, (name, color)) in enumerate(trees.items()):
        vals = runs[f"pr.host{chunk}.{tree}"]
        x = i + (j - 1) * 0.25
        ax.scatter([x] * len(vals), vals, s=16, color=color, alpha=0.6, label=name if i == 0 else None)
        ax.hlines(statistics.median(vals), x - 0.1, x + 0.1, color=color)
for label, style in (("pr.bulk", "--"), ("pr.ideal", ":")):
    ax.axhline(statistics.median(runs[label]), color="black", linestyle=style,
               label=f"{label[3:]} (median)")
ax.set_xticks(range(len(chunks)), [f"host agent, {c} chunks" for c in chunks])
ax.set_ylabel("whole run, 20 steps (ms)")
ax.set_title("pagerank Kronecker 21,4, 2 ranks on 2 H200s through MPI (GRAIN_PEER_MEMORY=0)\n"
             "dots: runs (3 interleaved rounds), ticks: medians", fontsize=9)
ax.legend(fontsize=8)
ax.grid(axis="y", alpha=0.3)
fig.tight_layout()
fig.savefig(os.path.join(here, "pieces.png"), dpi=100)
print("wrote", os.path.join(here, "pieces.png"))
