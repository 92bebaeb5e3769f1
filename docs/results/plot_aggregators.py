#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws a sweep of GRAIN_AGGREGATORS: for each app of a runs CSV (rows
call,app,buffers,aggregators,repeat,seconds,gups,...), its speed by the
aggregator count, one line a (call, buffers) pair at the medians and every
run a dot: GUP/s for gups, seconds for the others.

usage: plot_aggregators.py RUNS.csv OUT.png TITLE
e.g. from docs/results/transport-2xh200-s47:
  python3 ../plot_aggregators.py runs.csv aggregators.png "2 ranks through MPI on two H200s"
"""
import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

if len(sys.argv) != 4:
    sys.exit(__doc__)
runs_csv, out, title = sys.argv[1:]
# app -> (call, buffers) -> aggregators -> values
by_app = {}
for r in csv.DictReader(open(runs_csv)):
    value = float(r["gups"]) if r["app"] == "gups" else float(r["seconds"])
    line = by_app.setdefault(r["app"], {}).setdefault((r["call"], r["buffers"]), {})
    line.setdefault(int(r["aggregators"]), []).append(value)

apps = sorted(by_app)
fig, axes = plt.subplots(1, len(apps), figsize=(5.5 * len(apps), 4), squeeze=False)
for ax, app in zip(axes[0], apps):
    for (call, buffers), points in sorted(by_app[app].items()):
        counts = sorted(points)
        style = "o-" if buffers == "put" else "s--"
        line, = ax.plot(counts, [statistics.median(points[a]) for a in counts], style,
                        label=f"call {call}, {buffers}s")
        for a in counts:
            ax.plot([a] * len(points[a]), points[a], ".", color=line.get_color(), alpha=0.5)
    ax.set_title(app)
    ax.set_xlabel("aggregator threads a rank")
    ax.set_ylabel("GUP/s (higher is better)" if app == "gups" else "seconds (lower is better)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
fig.suptitle(title)
fig.tight_layout()
fig.savefig(out, dpi=110)
print(f"plot_aggregators: wrote {out}")
