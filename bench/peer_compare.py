#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The direct path against the transport path, on the ranks of one machine:
each app on one rank, then on N ranks with GRAIN_PEER=auto (the node's ranks
apply each other's messages themselves) and with GRAIN_PEER=off (every
message to another rank through the queue, the aggregators and MPI), the
three interleaved in every repeat so that they see the same machine.

The figure of merit is speed relative to one rank, measured in the same run:
gups keeps 2^log2-table entries per rank (its N ranks do N times the
updates), so its speed is GUP/s over one rank's; the other apps solve the
same input on every rank count, so theirs is one rank's time over N ranks'.
The targets: gups >= 0.8, the others no slower than 1.25 x one rank
(speed >= 0.8).  On one GPU the N ranks share it: this measures what the
paths cost, not more compute.

Writes <out>/peer.csv (a row per run, flushed as it ends), <out>/peer.json
and <out>/peer.png (speed relative to one rank, per app and path).

  bench/peer_compare.py [--bin build/bin] [--ranks 2] [--log2-table 26]
                        [--scale 20] [--apps gups,pagerank,sssp,kmeans,kmer,color]
                        [--repeat 3] [--out bench-results/peer] [--mpirun "mpirun ..."]
                        [--data DIR] [--timeout 900] [-- extra app options]
  bench/peer_compare.py --replot [--out DIR]   (table and plot again from DIR/peer.json)

Inputs are bench/app_scaling.py's at --scale; gups takes --log2-table per
rank with a heap to hold it."""
import argparse
import csv
import json
import os
import shlex
import sys

from app_scaling import app_command
from driver import Progress, add_app_options, median, pyplot, require_built, run_app, split_extra

SPLIT = ("compute_s", "queue_s", "aggregation_s", "network_s", "host_s")
FIELDS = ("app", "config", "ranks", "peer", "repeat", "verified", "seconds", "gups", "plain_gups", "rounds",
          "local_messages", "remote_messages", "direct_messages", "queue_full_waits", "direct_peers") + SPLIT + (
    "backend", "device", "error")
TARGET = 0.8  # speed relative to one rank: gups's 0.8x, the apps' 1.25x time


def configs(ranks):
    """(name, ranks, GRAIN_PEER) in the order every repeat runs them."""
    return [("1 rank", 1, "auto"), (f"{ranks} direct", ranks, "auto"), (f"{ranks} transport", ranks, "off")]


def command(args, app, ranks, peer, extra):
    cmd = shlex.split(args.mpirun) + ["-np", str(ranks), "-x", f"GRAIN_PEER={peer}", os.path.join(args.bin, app)]
    if app == "gups":
        table = args.log2_table + (ranks - 1).bit_length()
        heap = max(64 << 20, (8 << args.log2_table) + (64 << 20))
        cmd += ["--log2-table", str(table), "--heap-size", str(heap)]
        cmd += ["--baseline"] if ranks == 1 else []
    else:
        cmd += app_command(app, args.scale, args.data)
    return cmd + extra + ["--json", "--verify"]


def run_one(args, app, name, ranks, peer, extra):
    row = {"app": app, "config": name, "ranks": ranks, "peer": peer, "error": ""}
    d, row["error"] = run_app(command(args, app, ranks, peer, extra), app, args.timeout)
    if d is None:
        return row
    t = d["stats"]["total"]
    row.update({k: d["time_split"][k] for k in SPLIT})
    row.update({k: t[k] for k in ("local_messages", "remote_messages", "direct_messages", "queue_full_waits")})
    row.update(verified=d.get("verified"), seconds=d["seconds"], gups=d.get("gups"), rounds=d.get("rounds"),
               plain_gups=d.get("baseline", {}).get("gups"), direct_peers=d["stats"].get("direct_peers"),
               backend=d["backend"], device=d["device"])
    if row["verified"] is False:
        row["error"] = "did not verify"
    return row


def speed(app, run, base):
    """Speed relative to one rank (see the top)."""
    if app == "gups":
        return run["gups"] / base["gups"]
    return base["seconds"] / run["seconds"]


def report(args, apps, ranks, rows):
    names = [c[0] for c in configs(ranks)]
    best = {(a, n): median(rows, app=a, config=n) for a in apps for n in names}
    print(f"\n{'app':9} {'path':14} {'seconds':>8} {'GUP/s':>8} {'speed':>6} {'target':>6} {'direct':>12} "
          f"{'transport':>12} {'q-waits':>8}")
    speeds, missed = {}, []
    for app in apps:
        base = best.get((app, names[0]))
        for name in names:
            b = best.get((app, name))
            if b is None:
                print(f"{app:9} {name:14} failed")
                missed.append(f"{app} {name}: no run")
                continue
            s = speed(app, b, base) if base else float("nan")
            speeds[(app, name)] = s
            mark = "" if name == names[0] else "met" if s >= TARGET else "missed"
            if name == names[1] and s < TARGET:
                missed.append(f"{app}: {s:.3f}x one rank's speed on the direct path")
            gups = f"{b['gups']:8.3f}" if b.get("gups") is not None else f"{'':8}"
            print(f"{app:9} {name:14} {b['seconds']:8.3f} {gups} {s:6.3f} {mark:>6} {b['direct_messages']:12} "
                  f"{b['remote_messages']:12} {b['queue_full_waits']:8}")
        if base and base.get("plain_gups"):
            print(f"{'':9} (one rank, plain device atomics without grain: {base['plain_gups']:.3f} GUP/s)")
    if speeds:
        plot(apps, names, speeds, best, os.path.join(args.out, "peer.png"))
    failed = [r for r in rows if r["error"]]
    for r in failed:
        print(f"peer_compare: {r['app']} {r['config']} repeat {r.get('repeat')}: {r['error']}")
    for m in missed:
        print(f"peer_compare: target missed: {m}")
    return 1 if failed else 0


def plot(apps, names, speeds, best, path):
    plt = pyplot("peer_compare")
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(1.4 + 1.1 * len(apps), 3.8))
    width = 0.38
    for i, (name, color) in enumerate(zip(names[1:], ("#55a868", "#c44e52"))):
        xs = [k + (i - 0.5) * width for k in range(len(apps))]
        ys = [speeds.get((a, name), 0) for a in apps]
        ax.bar(xs, ys, width, color=color, label=name)
        for x, y in zip(xs, ys):
            if y > 0:
                ax.annotate(f"{y:.2f}", (x, y), ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="#444444", linewidth=0.8)
    ax.axhline(TARGET, color="#444444", linewidth=0.8, linestyle="--", label=f"target {TARGET}")
    ax.set_yscale("log")
    ax.set_xticks(range(len(apps)))
    ax.set_xticklabels(apps)
    ax.set_ylabel("speed relative to one rank")
    first = next(iter(b for b in best.values() if b))
    ax.set_title(f"direct path vs transport ({first['backend']}, {first['device']})", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"peer_compare: wrote {path}")


def main():
    argv, extra = split_extra(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_app_options(ap, "gups,pagerank,sssp,kmeans,kmer,color", 3, "bench-results/peer")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--log2-table", type=int, default=26)
    args = ap.parse_args(argv)
    apps = args.apps.split(",")
    if args.replot:
        saved = json.load(open(os.path.join(args.out, "peer.json")))
        rows = saved["runs"]
        return report(args, list(dict.fromkeys(r["app"] for r in rows)), saved["ranks"], rows)
    if args.ranks < 2 or args.repeat < 1 or not 1 <= args.log2_table <= 36 or not 1 <= args.scale <= 40:
        sys.exit("peer_compare: --ranks >= 2, --repeat >= 1, --log2-table 1..36, --scale 1..40")
    require_built("peer_compare", args.bin, apps)
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.data, exist_ok=True)

    rows, runs = [], configs(args.ranks)
    progress = Progress(len(apps) * len(runs) * args.repeat)
    with open(os.path.join(args.out, "peer.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for app in apps:
            for rep in range(args.repeat):
                for name, ranks, peer in runs:
                    progress.start(f"{app}, {name}")
                    row = run_one(args, app, name, ranks, peer, extra)
                    row["repeat"] = rep
                    rows.append(row)
                    w.writerow(row)
                    f.flush()
                    with open(os.path.join(args.out, "peer.json"), "w") as j:
                        json.dump({"ranks": args.ranks, "log2_table": args.log2_table, "scale": args.scale,
                                   "runs": rows}, j, indent=1)
                    progress.finish(row["error"] or f"{row['seconds']:.3f} s")
    return report(args, apps, args.ranks, rows)


if __name__ == "__main__":
    sys.exit(main())
