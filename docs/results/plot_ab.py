#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws an A/B of two trees of grain (or two settings of one) run side by
side in device calls: for each CSV (rows tree,app,ranks[,env][,machine],rep,
seconds,gups,...; trees `base` and `new`, or any two names, in the order
they first appear), pagerank's seconds and gups' GUP/s on more than one
rank (a panel for each of them that ran), every run a dot and the median a bar, one group a call (machine,
ranks other than two, setting other than the default) where both ran.

usage: plot_ab.py OUT.png TITLE LABEL=FILE.csv [LABEL=FILE.csv ...]
e.g. from docs/results/transport-2xh100-runs:
  python3 ../plot_ab.py ab.png "2 ranks through MPI on two H100s" \\
      "staged=ab-1-staged.csv" "gathered=ab-2-gathered.csv"
"""
import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

if len(sys.argv) < 4:
    sys.exit(__doc__)
out, title = sys.argv[1], sys.argv[2]
calls = [arg.split("=", 1) for arg in sys.argv[3:]]

# (app, group label) -> tree -> values
runs = {}
trees = []
for label, path in calls:
    with open(path) as f:
        for row in csv.DictReader(f):
            if row.get("ranks") in (None, "", "1"):
                continue
            env = row.get("env", "-")
            group = label if env in ("-", "", None) else f"{label}\n{env.replace('GRAIN_', '')}"
            if row.get("machine"):
                group = f"{group}\n{row['machine']}"
            if row["ranks"] != "2":
                group = f"{group}\n{row['ranks']} ranks"
            key = "gups" if row["app"] == "gups" else "seconds"
            try:
                value = float(row[key])
            except (KeyError, ValueError):
                continue
            runs.setdefault((row["app"], group), {}).setdefault(row["tree"], []).append(value)
            if row["tree"] not in trees:
                trees.append(row["tree"])

apps = [(app, ylabel)
        for app, ylabel in (("pagerank", "seconds (lower is better)"), ("gups", "GUP/s (higher is better)"))
        if any(a == app for a, _ in runs)]
fig, axes = plt.subplots(1, len(apps), figsize=(6.5 * len(apps), 4.8), squeeze=False)
axes = axes[0]
pair = ("base", "new") if {"base", "new"} <= set(trees) else tuple(trees[:2])
colors = dict(zip(pair, ("tab:gray", "tab:blue")))
for ax, (app, ylabel) in zip(axes, apps):
    groups = [g for (a, g) in runs if a == app and len(runs[(a, g)]) == 2]
    for i, group in enumerate(groups):
        for j, tree in enumerate(pair):
            values = runs[(app, group)].get(tree, [])
            if not values:
                continue
            x = i + (j - 0.5) * 0.38
            ax.bar(x, statistics.median(values), width=0.36, color=colors[tree], alpha=0.6,
                   label=tree if i == 0 else None)
            ax.plot([x] * len(values), values, "o", color=colors[tree], markersize=4)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(app, fontsize=10)
    ax.legend(fontsize=8)
fig.suptitle(title, fontsize=10)
fig.tight_layout()
fig.savefig(out, dpi=120)
print(f"plot_ab: wrote {out}")
