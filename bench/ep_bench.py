#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Two-sided messages between device endpoints in both places they can be:
two endpoints of one rank (the rank's mailbox) and one endpoint on each of
two ranks (the transport's endpoint channel), each run by ep_bench, whose
baseline is the device-host copy each way measured in the same run; beside
it the same copies as stream commands with their events (GMH fig. 6), and
the bandwidth both ways at once over the bounce's (fig. 8); each from memory
with its pinned shadow (messages pass through it) and without (pageable).
Then a broadcast to every endpoint against the ranks' host broadcast plus the
copies (fig. 9), and the other collectives of section III-B5 (reduce,
gather, scatter, alltoall beside the allreduce); the two-rank placement runs
once more with GRAIN_EP_COLL_MESSAGES=0, so that every collective crosses the
host's, against which the collectives as messages between the endpoints (of
GRAIN_EP_COLL_MESSAGES bytes and more) compare.

Writes <out>/ep.csv, <out>/ep.json and <out>/ep.png (half round trip and
bandwidth by message size, both placements beside the copies; the broadcast;
the other collectives on two ranks, as messages and through the host).

  bench/ep_bench.py [--bin build/bin] [--max-bytes 64M] [--iters 1000]
                    [--out bench-results/ep] [--mpirun "mpirun ..."] [--timeout 900]
  bench/ep_bench.py --replot [--out DIR]   (the plot again from DIR/ep.json)"""
import argparse
import csv
import json
import os
import shlex
import sys

from driver import add_run_options, Progress, pyplot, require_built, run_app

# (mode, ranks, ep_bench's arguments, mpirun's)
PLACEMENTS = (("same rank", 1, ["--endpoints", "2"], []), ("two ranks", 2, [], []),
              ("same rank, no shadow", 1, ["--endpoints", "2", "--no-shadow"], []),
              ("two ranks, no shadow", 2, ["--no-shadow"], []),
              ("two ranks, host collectives", 2, [], ["-x", "GRAIN_EP_COLL_MESSAGES=0"]))
COLLECTIVES = ("allreduce", "reduce", "gather", "scatter", "alltoall")


def run(args, ranks, extra, mpirun_extra):
    cmd = shlex.split(args.mpirun) + mpirun_extra + ["-np", str(ranks), os.path.join(args.bin, "ep_bench"),
                                                     "--max-bytes", args.max_bytes, "--iters", str(args.iters),
                                                     "--json"] + extra
    return run_app(cmd, "ep_bench", args.timeout)


def plot(runs, path):
    plt = pyplot("ep_bench")
    if plt is None or not runs:
        return
    fig, (lat, bw, bc, co) = plt.subplots(1, 4, figsize=(21, 4))
    for r in runs:
        if r["mode"].endswith("host collectives"):
            continue
        sizes = [max(x["bytes"], 1) for x in r["rows"]]
        lat.plot(sizes, [x["half_rtt_us"] for x in r["rows"]], "o-", markersize=3, label=f"message, {r['mode']}")
        bw.plot(sizes, [x["gb_per_s"] for x in r["rows"]], "o-", markersize=3, label=f"message, {r['mode']}")
        line, = bc.plot(sizes, [x["bcast_us"] for x in r["rows"]], "o-", markersize=3, label=f"broadcast, {r['mode']}")
        bc.plot(sizes, [x["host_bcast_us"] + x["copies_us"] for x in r["rows"]], "--", linewidth=0.8,
                color=line.get_color(), label=f"host broadcast + copies, {r['mode']}")
    first = runs[0]
    sizes = [max(x["bytes"], 1) for x in first["rows"]]
    lat.plot(sizes, [x["copies_us"] for x in first["rows"]], "k--", linewidth=0.8,
             label="device-host copy each way (baseline)")
    lat.plot(sizes, [x["stream_us"] for x in first["rows"]], "k:", linewidth=0.8,
             label="the same copies as stream commands, each waited")
    bw.plot(sizes, [x["bytes"] / x["copies_us"] / 1e3 for x in first["rows"]], "k--", linewidth=0.8,
            label="device-host copy each way (baseline)")
    by_mode = {r["mode"]: r for r in runs}
    for mode, style in (("two ranks", "o-"), ("two ranks, host collectives", "--")):
        for c, color in zip(COLLECTIVES, ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")):
            rows = by_mode[mode]["rows"] if mode in by_mode else []
            if rows and f"{c}_us" in rows[0]:  # --replot of results from before these collectives has none
                co.plot([max(x["bytes"], 1) for x in rows], [x[f"{c}_us"] for x in rows], style, markersize=3,
                        linewidth=0.8 if style == "--" else 1.5, color=color, label=f"{c}, {mode}")
    for ax, label in ((lat, "half round trip (us)"), (bw, "GB/s"), (bc, "broadcast to every endpoint (us)"),
                      (co, "collective over every endpoint (us)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message bytes")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    fig.suptitle(f"endpoint messages, ep_bench ({first['backend']}, {first['device']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"ep_bench: wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--max-bytes", default="64M")
    ap.add_argument("--iters", type=int, default=1000)
    add_run_options(ap, "bench-results/ep")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "ep.json")
    if args.replot:
        with open(path) as f:
            plot(json.load(f), os.path.join(args.out, "ep.png"))
        return 0
    require_built("ep_bench", args.bin, ["ep_bench"])
    runs, failed = [], 0
    progress = Progress(len(PLACEMENTS))
    for mode, ranks, extra, mpirun_extra in PLACEMENTS:
        progress.start(mode)
        r, why = run(args, ranks, extra, mpirun_extra)
        progress.finish(why or f"{len(r['rows'])} sizes")
        if r is None:
            failed = 1
            continue
        r["mode"] = mode
        runs.append(r)
    with open(path, "w") as f:
        json.dump(runs, f, indent=1)
    with open(os.path.join(args.out, "ep.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "backend", "device", "bytes", "iters", "half_rtt_us", "gb_per_s", "copies_us", "ratio",
                    "stream_us", "stream_ratio", "both_us", "both_gain", "bcast_us", "host_bcast_us", "bcast_ratio"] +
                   [f"{c}_us" for c in COLLECTIVES])
        for r in runs:
            for x in r["rows"]:
                w.writerow([r["mode"], r["backend"], r["device"], x["bytes"], x["iters"], x["half_rtt_us"],
                            x["gb_per_s"], x["copies_us"], x["ratio"], x["stream_us"], x["stream_ratio"],
                            x["both_us"], x["both_gain"], x["bcast_us"], x["host_bcast_us"], x["bcast_ratio"]] +
                           [x[f"{c}_us"] for c in COLLECTIVES])
    # ratio: the half round trip over the copies; both ways: the bandwidth both ways at once over the
    # bounce's; bcast: the broadcast over the host broadcast plus the copies.
    print(f"\n{'bytes':>10} " + " ".join(f"{r['mode'] + ' us':>24} {'ratio':>6} {'both':>6} {'bcast':>6}"
                                         for r in runs) + f" {'stream copies':>14}")
    for i in range(min((len(r["rows"]) for r in runs), default=0)):
        print(f"{runs[0]['rows'][i]['bytes']:>10} " +
              " ".join(f"{r['rows'][i]['half_rtt_us']:24.2f} {r['rows'][i]['ratio']:6.2f} "
                       f"{r['rows'][i]['both_gain']:6.2f} {r['rows'][i]['bcast_ratio']:6.2f}" for r in runs) +
              f" {runs[0]['rows'][i]['stream_ratio']:14.2f}")
    by_mode = {r["mode"]: r for r in runs}
    msg, host = by_mode.get("two ranks"), by_mode.get("two ranks, host collectives")
    if msg is not None and host is not None:
        # Below GRAIN_EP_COLL_MESSAGES both runs take the host's path, so their ratio there is the noise.
        print("\ntwo ranks, each collective's time over the host's path in the same run (GRAIN_EP_COLL_MESSAGES=0):")
        print(f"{'bytes':>10} " + " ".join(f"{c:>10}" for c in ("broadcast",) + COLLECTIVES))
        for a, b in zip(msg["rows"], host["rows"]):
            print(f"{a['bytes']:>10} " + " ".join(f"{a[k] / b[k]:10.2f}" if b[k] > 0 else f"{'-':>10}"
                                                  for k in ["bcast_us"] + [f"{c}_us" for c in COLLECTIVES]))
    plot(runs, os.path.join(args.out, "ep.png"))
    return failed


if __name__ == "__main__":
    sys.exit(main())
