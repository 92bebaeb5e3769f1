#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws one or more `amo_rate` CSVs (say the direct path's and the transport's) as <stem of the first>.png:
million calls a second per rank of fetch-add and get, by every lane and by one lane a work-group, beside the same
operations as plain atomics and loads on the rank's own device table (the baseline measured in the same run)."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

srcs = sys.argv[1:] or ["amo_rate.csv"]
rows = [r for src in srcs for r in csv.DictReader(open(src))]
if not rows or "baseline_mcalls_per_s" not in rows[0]:
    sys.exit(f"{srcs[0]}: not the CSV of amo_rate")
stem = srcs[0][: -len(".csv")] if srcs[0].endswith(".csv") else srcs[0]
groups = list(dict.fromkeys((r["op"], r["caller"]) for r in rows))
paths = list(dict.fromkeys(r["path"] for r in rows))
width = 0.8 / (len(paths) + 1)
fig, ax = plt.subplots(figsize=(9, 4.8))
for j, path in enumerate(paths):
    mine = {(r["op"], r["caller"]): r for r in rows if r["path"] == path}
    xs = [i + j * width for i, key in enumerate(groups) if key in mine]
    ax.bar(xs, [float(mine[key]["mcalls_per_s"]) for key in groups if key in mine], width, label=f"grain, {path}")
base = {}
for r in rows:  # the baseline of every run, the median where there are several
    base.setdefault((r["op"], r["caller"]), []).append(float(r["baseline_mcalls_per_s"]))
ax.bar([i + len(paths) * width for i in range(len(groups))],
       [sorted(base[key])[len(base[key]) // 2] for key in groups], width, color="0.6",
       label="plain device atomic / load on the own table")
ax.set_xticks([i + len(paths) * width / 2 for i in range(len(groups))])
ax.set_xticklabels([f"{op}\nby every {caller}" for op, caller in groups])
ax.set_yscale("log")
ax.set_ylabel("million calls / s per rank")
ax.set_title(f"grain fetching atomics and gets, {rows[0]['ranks']} ranks, {rows[0]['device']}", fontsize="medium")
fig.legend(fontsize="small", loc="lower center", ncol=len(paths) + 1)
fig.tight_layout(rect=(0, 0.07, 1, 1))
fig.savefig(stem + ".png", dpi=120)
print("wrote", stem + ".png")
