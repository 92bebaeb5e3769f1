#!/usr/bin/python3
"""Draws queue_bench.csv as Gravel figure 6: throughput by work-group size per reservation mode,
with the CPU-only queue of the same run as a line."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src = sys.argv[1] if len(sys.argv) > 1 else "queue_bench.csv"
dst = sys.argv[2] if len(sys.argv) > 2 else src.replace(".csv", ".png")
rows = list(csv.DictReader(open(src)))
cpu = [float(r["msgs_per_s"]) for r in rows if r["queue"] == "cpu-mpmc"][0]
fig, ax = plt.subplots(figsize=(7, 4.5))
for mode, label in (("wg", "work-group reservation"), ("sg", "sub-group reservation"), ("wi", "work-item reservation")):
    pts = [(int(r["wg_size"]), float(r["msgs_per_s"]) / 1e6) for r in rows if r["reserve"] == mode]
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
ax.axhline(cpu / 1e6, color="gray", linestyle="--", label="CPU-only MPMC queue (same run)")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("work-group size (lanes)")
ax.set_ylabel("million 24-byte messages / s")
ax.set_title("grain send path throughput (queue + aggregator + apply)")
ax.legend()
fig.tight_layout()
fig.savefig(dst, dpi=120)
print("wrote", dst)
