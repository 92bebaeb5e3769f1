#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws queue_bench.csv as Gravel's figures 6 and 8: <stem>_fig6.png (send-path throughput by
work-group size per reservation mode, with the CPU MPMC queue of the same run as a line) and
<stem>_fig8.png (queue throughput by message size against the CPU-only queues)."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

src = sys.argv[1] if len(sys.argv) > 1 else "queue_bench.csv"
stem = src[: -len(".csv")] if src.endswith(".csv") else src
rows = list(csv.DictReader(open(src)))


def points(figure, queue, reserve=None, x="wg_size", y="msgs_per_s", scale=1e6):
    return [(int(r[x]), float(r[y]) / scale) for r in rows
            if r["figure"] == figure and r["queue"] == queue and (reserve is None or r["reserve"] == reserve)]


def save(fig, ax, name):
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(name, dpi=120)
    print("wrote", name)


MODES = (("wg", "work-group"), ("sg", "sub-group"), ("wi", "work-item"))
QUEUES = (("ring", "grain ring queue", "o-"), ("paper", "paper's queue", "x--"))

fig6 = points("fig6", "cpu-mpmc")
if fig6:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for queue, qlabel, style in QUEUES:
        for mode, label in MODES:
            pts = points("fig6", queue, mode)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=f"{qlabel}, {label} reservation")
    ax.axhline(fig6[0][1], color="gray", linestyle="--", label="CPU-only MPMC queue (same run)")
    ax.set_xlabel("work-group size (lanes)")
    ax.set_ylabel("million 24-byte messages / s")
    ax.set_title("grain send path (queue + aggregator + apply)")
    save(fig, ax, stem + "_fig6.png")

if points("fig8", "ring") or points("fig8", "paper"):
    fig, ax = plt.subplots(figsize=(7.5, 5))
    series = [(q, m, f"{ql}, {ml} reservation", st) for q, ql, st in QUEUES for m, ml in MODES]
    series += [("store", None, "kernel stores alone (the link's ceiling)", "k-"),
               ("cpu-mpmc", None, "CPU-only MPMC queue (the paper's algorithm)", "s:"),
               ("cpu-spsc", None, "CPU-only SPSC queue", "^:")]
    for queue, reserve, label, style in series:
        pts = points("fig8", queue, reserve, x="msg_bytes", y="gb_per_s", scale=1)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("GB/s through the queue")
    ax.set_title("device-to-host queue throughput (256-lane work-groups)")
    save(fig, ax, stem + "_fig8.png")
