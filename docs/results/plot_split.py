#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws where the runs of each setting spent their time, from a runs CSV
(rows app,config,seconds,compute_s,network_s,network_progress_s_per_rank,...):
a panel an app, a bar a setting, split into the producers' phase (compute_s)
and the tail after it (network_s, mean over ranks), the median of the
setting's runs; a cross marks the MPI network thread's time in MPI_Testsome
(a rank's mean), which reaching the bar's top says the network thread was
busy the whole run.

usage: plot_split.py DIR TITLE
reads DIR/runs.csv and writes DIR/split.png, e.g. from docs/results:
  python3 plot_split.py transport-2xh200-s44 "2 ranks through MPI on two H200s"
"""
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if len(sys.argv) != 3:
    sys.exit(__doc__)
here, title = sys.argv[1], sys.argv[2]
runs = {}
with open(os.path.join(here, "runs.csv")) as f:
    for row in csv.DictReader(f):
        if not row.get("error"):
            runs.setdefault(row["app"], {}).setdefault(row["config"], []).append(row)


def median(rows, key):
    return statistics.median(float(r[key]) for r in rows)


fig, axes = plt.subplots(1, len(runs), figsize=(6.5 * len(runs), 4.8), squeeze=False)
for ax, (app, configs) in zip(axes[0], sorted(runs.items())):
    names = list(configs)
    x = range(len(names))
    compute = [median(configs[n], "compute_s") for n in names]
    tail = [median(configs[n], "network_s") for n in names]
    progress = [median(configs[n], "network_progress_s_per_rank") for n in names]
    ax.bar(x, compute, color="tab:blue", label="producers' phase (compute_s)")
    ax.bar(x, tail, bottom=compute, color="tab:orange", label="tail after them (network_s)")
    ax.scatter(x, progress, marker="x", color="black", zorder=3, label="network thread in MPI_Testsome")
    for i, n in enumerate(names):
        count = len(configs[n])
        ax.annotate(f"{count} run" + ("s" if count > 1 else ""), (i, compute[i] + tail[i]), ha="center", va="bottom",
                    fontsize=7)
    ax.set_xticks(list(x))
    ax.set_xticklabels([n.split(" (")[0] for n in names], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("seconds (medians)")
    ax.set_title(app, fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
fig.suptitle(title, fontsize=10)
fig.tight_layout()
fig.savefig(os.path.join(here, "split.png"), dpi=120)
print(f"plot_split: wrote {os.path.join(here, 'split.png')}")
