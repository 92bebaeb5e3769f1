#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws `receive_bench` CSV as <stem>.png: million messages a second that one rank validates, moves and applies, by
the number of receive threads and the kind of traffic, and the same as wire GB/s beside the rate of copying those
bytes into device memory in one piece and the rate of one 64 MiB copy (the link's ceiling), both measured in the
same run."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import ScalarFormatter

src = sys.argv[1] if len(sys.argv) > 1 else "receive_bench.csv"
stem = src[: -len(".csv")] if src.endswith(".csv") else src
rows = list(csv.DictReader(open(src)))
if not rows or "copy_gb_per_s" not in rows[0]:
    sys.exit(f"{src}: not the CSV of receive_bench")
kinds = list(dict.fromkeys(r["kind"] for r in rows))
fig, (rate, wire) = plt.subplots(1, 2, figsize=(11, 4.8))
for kind in kinds:
    mine = [r for r in rows if r["kind"] == kind]
    threads = [int(r["threads"]) for r in mine]
    rate.plot(threads, [float(r["msgs_per_s"]) / 1e6 for r in mine], "o-", label=kind)
    line = wire.plot(threads, [float(r["wire_gb_per_s"]) for r in mine], "o-", label=f"{kind}: applied")[0]
    wire.plot(threads, [float(r["copy_gb_per_s"]) for r in mine], "--", color=line.get_color(),
              label=f"{kind}: copy of the same bytes")
if "link_gb_per_s" in rows[0]:
    link = sorted(float(r["link_gb_per_s"]) for r in rows)[len(rows) // 2]
    wire.axhline(link, color="k", linestyle=":", label=f"one 64 MiB copy (median), {link:.1f} GB/s")
for ax in (rate, wire):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({int(r["threads"]) for r in rows}))
    ax.xaxis.set_major_formatter(ScalarFormatter())
wire.yaxis.set_major_formatter(ScalarFormatter())
rate.axhline(400, color="k", linestyle=":", label="target, 400 M/s")
rate.set_xlabel("receive threads (GRAIN_RECV_THREADS)")
rate.set_ylabel("million messages / s applied")
rate.set_ylim(bottom=0)
rate.legend(fontsize="small")
wire.set_xlabel("receive threads (GRAIN_RECV_THREADS)")
wire.set_ylabel("wire GB/s")
wire.set_yscale("log")
wire.legend(fontsize="small")
layout = f", {rows[0]['wire']} on the wire" if "wire" in rows[0] else ""  # CSVs from before runs have none
fig.suptitle(f"grain receive path alone, {rows[0]['sources']} sources{layout}")
fig.tight_layout()
fig.savefig(stem + ".png", dpi=120)
print("wrote", stem + ".png")
