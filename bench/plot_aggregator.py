#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws `aggregator_bench --gpu` CSV as <stem>.png: GB/s from the kernel into per-destination buffers by the
number of aggregator threads (queue bytes and wire bytes), with the kernel-store ceiling of the same run, and
messages per second per aggregator thread on a second axis."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src = sys.argv[1] if len(sys.argv) > 1 else "aggregator_bench.csv"
stem = src[: -len(".csv")] if src.endswith(".csv") else src
rows = list(csv.DictReader(open(src)))
if not rows or "queue_gb_per_s" not in rows[0]:
    sys.exit(f"{src}: not the CSV of aggregator_bench --gpu")
aggs = [int(r["aggregators"]) for r in rows]
fig, ax = plt.subplots(figsize=(7, 5.2))
cmd = rows[0].get("command", "add64")  # increments leave their value row unwritten
ax.plot(aggs, [float(r["queue_gb_per_s"]) for r in rows], "o-",
        label=f"queue bytes ({16 if cmd == 'inc64' else 24} B a message)")
ax.plot(aggs, [float(r["wire_gb_per_s"]) for r in rows], "s-", label="wire bytes in per-destination buffers")
ax.plot(aggs, [float(r["store_gb_per_s"]) for r in rows], "k--", label="kernel stores alone (the link's ceiling)")
ax.set_xlabel("aggregator threads")
ax.set_ylabel("GB/s, kernel to per-destination buffers")
ax.set_ylim(bottom=0)
rate = ax.twinx()
rate.plot(aggs, [float(r["msgs_per_s_per_thread"]) / 1e6 for r in rows], "^:", color="tab:red",
          label="million messages / s per aggregator thread")
rate.set_ylabel("million messages / s per thread", color="tab:red")
rate.set_ylim(bottom=0)
lines = ax.get_legend_handles_labels()[0] + rate.get_legend_handles_labels()[0]
ax.legend(lines, [line.get_label() for line in lines], fontsize="small", loc="upper center",
          bbox_to_anchor=(0.5, -0.15), ncol=2)
ax.set_title(f"grain send path end to end, {cmd}, {rows[0]['dests']} destinations")
fig.tight_layout()
fig.savefig(stem + ".png", dpi=120)
print("wrote", stem + ".png")
