#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One rank's GUPS beside an idle resident apply agent (runs.csv, ranks 1):
GUP/s by the agent's work-groups (the best run of each), a group for each way of polling.

usage: plot_idle.py [runs.csv] [idle.png]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src = sys.argv[1] if len(sys.argv) > 1 else "runs.csv"
out = sys.argv[2] if len(sys.argv) > 2 else "idle.png"
rows = [r for r in csv.DictReader(open(src)) if r["ranks"] == "1" and r["app"] == "gups"]
for r in rows:  # main polled with acquire loads; this session's trees with relaxed ones
    r["tree"] = {"main": "acquire polls (main)", "relaxed polls": "relaxed polls (this session)",
                 "relaxed polls + ring head": "relaxed polls (this session)"}.get(r["tree"], r["tree"])
trees = list(dict.fromkeys(r["tree"] for r in rows))
agents = ["off", "1", "32", "128"]
fig, ax = plt.subplots(figsize=(12, 5.5))
width = 0.8 / len(agents)
for j, agent in enumerate(agents):
    xs, ys = [], []
    for i, tree in enumerate(trees):
        vals = [float(r["gups"]) for r in rows if r["tree"] == tree and r["agent"] == agent]
        if vals:
            xs.append(i + (j - (len(agents) - 1) / 2) * width)
            ys.append(max(vals))
    ax.bar(xs, ys, width, label=f"agent {agent}" if agent != "off" else "no agent")
ax.set_xticks(range(len(trees)))
ax.set_xticklabels([t.replace("; ", "\n") for t in trees], fontsize=8, rotation=30, ha="right")
ax.set_ylabel("GUP/s, one rank (2^26 entries)")
ax.set_title("One H200's GUPS beside an idle apply agent, by how its work-groups poll")
ax.legend()
fig.tight_layout()
fig.savefig(out, dpi=120)
print("wrote", out)
