#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws a results directory's endpoints figure from its CSVs: messages
between two endpoints by placement beside cudaMemcpyPeer (half round trip,
bandwidth; ep_win2.csv, ep_host2.csv, ep_rank2.csv, peer_copy.csv), the
collectives beside NCCL (the --coll and --nccl files), and dslash's D by run
(dslash.csv: a run's name before its first dot is its group).  The
peers' files (peer_copy.csv, --nccl) are left out where they are missing,
as on a machine without CUDA.

usage: python3 plot_endpoints.py DIR --title "four H100s" \\
           --coll FILE:LABEL [--coll ...] [--nccl FILE:LABEL] --dslash GROUP,GROUP,... [--out endpoints.png]"""
import argparse
import csv
import os
import statistics
import sys

from driver import pyplot

MESSAGES = (("ep_win2.csv", "two ranks, windows"), ("ep_host2.csv", "two ranks, through the host"),
            ("ep_rank2.csv", "one rank, two endpoints"), ("peer_copy.csv", "cudaMemcpyPeer (no grain)"))


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def file_label(text):
    path, _, label = text.partition(":")
    return path, label or path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--title", required=True, help="the machine, e.g. 'two H200s'")
    ap.add_argument("--coll", action="append", default=[], type=file_label)
    ap.add_argument("--nccl", type=file_label)
    ap.add_argument("--dslash", required=True, help="dslash.csv's groups, in order")
    ap.add_argument("--out", default="endpoints.png")
    args = ap.parse_args()
    plt = pyplot("plot_endpoints")
    if plt is None:
        return 1
    os.chdir(args.dir)

    fig, (lat, bw, coll, ds) = plt.subplots(1, 4, figsize=(22, 4.5))
    for path, label in MESSAGES:
        if path == "peer_copy.csv" and not os.path.exists(path):
            continue
        r = [x for x in rows(path) if int(x["bytes"]) > 0]
        b = [int(x["bytes"]) for x in r]
        lat.plot(b, [float(x["half_rtt_us"]) for x in r], "o-", markersize=3, label=label)
        bw.plot(b, [float(x["gb_per_s"]) for x in r], "o-", markersize=3, label=label)
    for path, label in args.coll:
        r = rows(path)
        b = [int(x["bytes"]) for x in r]
        line, = coll.plot(b, [float(x["bcast_us"]) for x in r], "o-", markersize=3, label=f"broadcast, {label}")
        coll.plot(b, [float(x["allreduce_us"]) for x in r], "s--", markersize=3, color=line.get_color(),
                  label=f"allreduce, {label}")
    if args.nccl is not None and os.path.exists(args.nccl[0]):
        path, label = args.nccl
        r = rows(path)
        b = [int(x["bytes"]) for x in r]
        coll.plot(b, [float(x["bcast_us"]) for x in r], "k-", label=f"NCCL broadcast, {label}")
        coll.plot(b, [float(x["allreduce_us"]) for x in r], "k--", label=f"NCCL allreduce, {label}")
    for ax, label in ((lat, "half round trip (us)"), (bw, "GB/s"), (coll, "collective (us)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    lat.set_yscale("log")
    coll.set_yscale("log")
    lat.set_title("messages between two endpoints")
    bw.set_title("bandwidth of the bounce")
    coll.set_title(f"collectives over {args.title}")
    runs = {}
    for x in rows("dslash.csv"):
        runs.setdefault(x["run"].split(".")[0], []).append(float(x["dslash_gflops"]))
    order = [k for k in args.dslash.split(",") if k in runs]
    ds.bar(range(len(order)), [statistics.median(runs[k]) for k in order], color="tab:blue")
    for i, k in enumerate(order):
        ds.plot([i] * len(runs[k]), runs[k], "k.")
    ds.set_xticks(range(len(order)))
    ds.set_xticklabels(order, rotation=30, fontsize=8)
    ds.set_ylabel("D alone (GFLOP/s)")
    ds.set_title(f"dslash on {args.title}")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {os.path.join(args.dir, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
