#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws endpoints.png from this directory's CSVs: messages between two
endpoints by placement beside cudaMemcpyPeer (half round trip, bandwidth),
the collectives on four GPUs (as messages and through the host) beside
NCCL, and dslash's D by run.

usage: python3 plot.py   (in docs/results/endpoints-4xh100-s42)"""
import csv
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


fig, (lat, bw, coll, ds) = plt.subplots(1, 4, figsize=(22, 4.5))
for path, label in (("ep_win2.csv", "two ranks, windows"), ("ep_host2.csv", "two ranks, through the host"),
                    ("ep_rank2.csv", "one rank, two endpoints"), ("peer_copy.csv", "cudaMemcpyPeer (no grain)")):
    r = [x for x in rows(path) if int(x["bytes"]) > 0]
    b = [int(x["bytes"]) for x in r]
    lat.plot(b, [float(x["half_rtt_us"]) for x in r], "o-", markersize=3, label=label)
    bw.plot(b, [float(x["gb_per_s"]) for x in r], "o-", markersize=3, label=label)
for path, label in (("coll_tree4.csv", "4 ranks, as messages"), ("coll_host4.csv", "4 ranks, host collective"),
                    ("coll_rank4.csv", "1 rank x 4 endpoints, as messages")):
    r = rows(path)
    b = [int(x["bytes"]) for x in r]
    line, = coll.plot(b, [float(x["bcast_us"]) for x in r], "o-", markersize=3, label=f"broadcast, {label}")
    coll.plot(b, [float(x["allreduce_us"]) for x in r], "s--", markersize=3, color=line.get_color(),
              label=f"allreduce, {label}")
r = rows("coll_nccl_np4.csv")
b = [int(x["bytes"]) for x in r]
coll.plot(b, [float(x["bcast_us"]) for x in r], "k-", label="NCCL broadcast, 4 GPUs")
coll.plot(b, [float(x["allreduce_us"]) for x in r], "k--", label="NCCL allreduce, 4 GPUs")
for ax, label in ((lat, "half round trip (us)"), (bw, "GB/s"), (coll, "collective (us)")):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes")
    ax.set_ylabel(label)
    ax.legend(fontsize=7)
lat.set_yscale("log")
coll.set_yscale("log")
lat.set_title("messages between two endpoints")
bw.set_title("bandwidth of the bounce")
coll.set_title("collectives over four H100s")
runs = {}
for x in rows("dslash.csv"):
    runs.setdefault(x["run"].split(".")[0], []).append(float(x["dslash_gflops"]))
order = [k for k in ("gpu1", "weak2", "weak4", "weak4host", "ep4", "strong4", "strong4host", "strong4ep")
         if k in runs]
ds.bar(range(len(order)), [statistics.median(runs[k]) for k in order], color="tab:blue")
for i, k in enumerate(order):
    ds.plot([i] * len(runs[k]), runs[k], "k.")
ds.set_xticks(range(len(order)))
ds.set_xticklabels(order, rotation=30, fontsize=8)
ds.set_ylabel("D alone (GFLOP/s)")
ds.set_title("dslash: 4 ranks (windows, host) and 4 endpoints")
fig.tight_layout()
fig.savefig("endpoints.png", dpi=110)
