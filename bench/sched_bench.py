#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The task scheduler's benchmarks (GrCUDA's VEC, B&S, ML, CG and MUL) through
the scheduler, against the same steps hand-written on one device endpoint's
streams and measured in the same run (sched_bench; "Taming Multi-GPU Greedy
Scheduling Through a Polyglot Runtime", figs. 1, 2, 8-11, 13):

  hand       the baseline: the description's own streams and events, pinned
             copies, one device; and on D devices (its streams dealt over D
             device endpoints, arrays sent between them where a step needs
             another device's results), the hand-written multi-GPU version;
  1 device   the scheduler on one device (GRAIN_SCHED_DEVICES=1): scheduler
             over hand is fig. 9's ratio (target >= 0.90, geomean);
  D devices  every policy on each device count of --devices: speedup over
             hand on one device (figs. 1, 8, 11), and the scheduler over
             hand on as many devices (the issue's >= 0.9 geomean);
  sync       GRAIN_SCHED=sync on one device, over async (fig. 10);
  by memory  hand and the scheduler on one device at each share of the
             device's memory that --memory lists (fig. 10: ~10% to ~90%;
             sched_bench refuses a share whose arrays the host cannot hold
             three times, and the row says so);
  MUL by P   MUL's partitions on the most devices, min-max-transfer-time
             (fig. 13), beside P = 1 on one device;
  B          the bandwidth matrix the scheduler measured (fig. 2).

Every run checks its outputs against the host's run of the same steps.
Writes <out>/sched.csv, sched.json and sched.png.

  bench/sched_bench.py [--bin build/bin] [--benches vec,bs,ml,cg,mul] [--devices 1,2]
                       [--partitions 1,2,4,8,16,32] [--memory 0.05,0.1,0.2] [--reps 5] [--tiny]
                       [--out bench-results/sched]
                       [--mpirun "mpirun ..."] [--timeout 900]
  bench/sched_bench.py --replot [--out DIR]"""
import argparse
import csv
import json
import math
import os
import shlex
import sys

from driver import add_run_options, Progress, pyplot, require_built, run_app

POLICIES = ("round-robin", "stream-aware", "min-transfer-size", "min-max-transfer-time")
# CI's sizes (vector length; CG and MUL: the matrix's rows); without --tiny sched_bench's own, for a GPU of tens
# of GiB.
TINY = {"vec": 4096, "bs": 2048, "ml": 512, "cg": 128, "mul": 256}


def run(args, bench, sizing, mode, env, policy=None, partitions=None, devices=None):
    """Every report of one sched_bench (a policy each), or (None, why);
    `sizing`: its size options."""
    cmd = shlex.split(args.mpirun) + ["-np", "1"]
    for k, v in env.items():
        cmd += ["-x", f"{k}={v}"]
    cmd += [os.path.join(args.bin, "sched_bench"), "--bench", bench] + sizing + ["--mode", mode,
                                                                                  "--reps", str(args.reps), "--json"]
    if policy:
        cmd += ["--policy", policy]
    if partitions:
        cmd += ["--partitions", str(partitions)]
    if devices:
        cmd += ["--devices", str(devices)]
    reports, why = run_app(cmd, "sched_bench", args.timeout, every=True)
    for r in reports or []:
        r["env"] = " ".join(f"{k}={v}" for k, v in env.items())
    return reports, why


def grid(args):
    """(label, bench, mode, env, policy, partitions, devices, sizing) of every
    run; the policies side by side in one run, which builds the inputs once."""
    runs = []
    most = max(args.devices)
    one = {"GRAIN_SCHED_DEVICES": "1"}
    for b in args.benches:
        size = ["--size", str(TINY[b])] if args.tiny else []
        runs.append(("hand", b, "hand", {}, None, None, 1, size))
        runs.append(("1 device", b, "sched", one, "min-max-transfer-time", None, None, size))
        runs.append(("sync", b, "sched", dict(one, GRAIN_SCHED="sync"), "min-max-transfer-time", None, None, size))
        for d in args.devices:
            if d == 1:
                continue
            runs.append((f"hand {d} devices", b, "hand", {}, None, None, d, size))
            runs.append((f"{d} devices", b, "sched", {"GRAIN_SCHED_DEVICES": str(d)}, ",".join(POLICIES), None,
                         None, size))
    if "mul" in args.benches:
        size = ["--size", str(TINY["mul"])] if args.tiny else []
        for p in args.partitions:
            runs.append(("MUL by P", "mul", "sched", {"GRAIN_SCHED_DEVICES": str(most)}, "min-max-transfer-time", p,
                         None, size))
    for share in sorted(args.memory):  # the longest runs last: a grid cut short keeps the rest
        sizing = ["--memory-share", str(share)]
        for b in args.benches:
            runs.append((f"hand at {share}", b, "hand", {}, None, None, 1, sizing))
            runs.append((f"1 device at {share}", b, "sched", one, "min-max-transfer-time", None, None, sizing))
    return runs


def memory_share(r):
    """The share of the device's memory (a CPU device: the host's) the run's
    arrays took, or None where a CPU device ran at its own size."""
    if r.get("device_bytes"):
        return r["bytes"] / r["device_bytes"]
    share = r["label"].rsplit(" ", 1)[1]
    return None if share == "default" else float(share)


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summarize(rows):
    """The ratios the figures show, from the rows of one run."""
    hand = {r["bench"]: r["median_s"] for r in rows if r["label"] == "hand"}
    one = {r["bench"]: r["median_s"] for r in rows if r["label"] == "1 device"}
    out = {"sched_over_hand_1dev": {b: hand[b] / one[b] for b in one if b in hand}}
    out["geomean_sched_over_hand_1dev"] = geomean(out["sched_over_hand_1dev"].values())
    out["sync_slowdown"] = {r["bench"]: r["median_s"] / one[r["bench"]] for r in rows
                            if r["label"] == "sync" and r["bench"] in one}
    out["speedup_over_hand"] = {}
    out["sched_over_hand_multi"] = {}
    out["hand_speedup"] = {}
    def on_devices(r):  # the hand-written version on several devices
        return r["mode"] == "hand" and r["label"].endswith(" devices")

    hand_multi = {(r["label"][len("hand "):], r["bench"]): r["median_s"] for r in rows if on_devices(r)}
    for r in rows:
        if on_devices(r) and r["bench"] in hand:
            out["hand_speedup"].setdefault(r["label"][len("hand "):], {})[r["bench"]] = hand[r["bench"]] / r["median_s"]
        if not r["label"].endswith("devices") or r["mode"] != "sched":
            continue
        if r["bench"] in hand:
            out["speedup_over_hand"].setdefault(r["label"], {}).setdefault(r["policy"], {})[r["bench"]] = \
                hand[r["bench"]] / r["median_s"]
        if (r["label"], r["bench"]) in hand_multi:
            out["sched_over_hand_multi"].setdefault(r["label"], {}).setdefault(r["policy"], {})[r["bench"]] = \
                hand_multi[(r["label"], r["bench"])] / r["median_s"]
    out["geomean_sched_over_hand_multi"] = {label: {p: geomean(by.values()) for p, by in ps.items()}
                                            for label, ps in out["sched_over_hand_multi"].items()}
    # fig. 10: the scheduler over hand by how much of the device's memory the arrays take
    hand_at = {(r["bench"], r["label"][len("hand at "):]): r["median_s"] for r in rows
               if r["label"].startswith("hand at ")}
    out["sched_over_hand_by_memory"] = {}
    swept = bool(hand_at)
    for r in rows:  # with a sweep, the benchmarks' own sizes are a point too
        if swept and r["label"] == "1 device" and r["bench"] in hand and "bytes" in r:
            hand_at[(r["bench"], "default")] = hand[r["bench"]]
            r = dict(r, label="1 device at default")
        share = r["label"][len("1 device at "):]
        if r["label"].startswith("1 device at ") and (r["bench"], share) in hand_at:
            out["sched_over_hand_by_memory"].setdefault(r["bench"], {})[share] = {
                "ratio": hand_at[(r["bench"], share)] / r["median_s"], "memory_share": memory_share(r),
                "bytes": r["bytes"]}
    return out


def plot(rows, summary, path):
    plt = pyplot("sched_bench")
    if plt is None or not rows:
        return
    by_memory = summary.get("sched_over_hand_by_memory", {})
    fig, axes = plt.subplots(1, 5 if by_memory else 4, figsize=(25 if by_memory else 20, 4.2))
    ratio, speed, mul, heat = axes[:4]
    if by_memory:
        memory = axes[4]
        for b, by in by_memory.items():
            points = sorted((v["memory_share"] * 100, v["ratio"]) for v in by.values() if v["memory_share"])
            memory.plot([x for x, _ in points], [y for _, y in points], "o-", label=b)
        memory.axhline(0.9, color="tab:red", linestyle="--", linewidth=0.8, label="target 0.90")
        memory.ticklabel_format(axis="x", useOffset=False)
        memory.set_xlabel("arrays, % of the device's memory")
        memory.set_ylabel("scheduler / hand, one device")
        memory.set_title("by input size (fig. 10)", fontsize=9)
        memory.legend(fontsize=7)
    benches = list(summary["sched_over_hand_1dev"])
    series = [("1 device", summary["sched_over_hand_1dev"])]
    for label, ps in summary.get("sched_over_hand_multi", {}).items():
        best = max(summary["geomean_sched_over_hand_multi"][label].items(), key=lambda kv: kv[1])[0]
        series.append((f"{label}, {best}", ps[best]))
    width = 0.8 / len(series)
    for i, (name, by) in enumerate(series):
        ratio.bar([j + i * width for j in range(len(benches))], [by.get(b, 0) for b in benches], width, label=name)
    ratio.set_xticks([j + 0.4 - width / 2 for j in range(len(benches))])
    ratio.set_xticklabels(benches)
    ratio.axhline(1.0, color="k", linewidth=0.8)
    ratio.axhline(0.9, color="tab:red", linestyle="--", linewidth=0.8, label="target 0.90")
    ratio.set_title(f"scheduler / hand on as many devices (one device: geomean "
                    f"{summary['geomean_sched_over_hand_1dev']:.2f})", fontsize=9)
    ratio.legend(fontsize=7)
    groups = [(f"{p}, {label}", by, None) for label, ps in summary["speedup_over_hand"].items()
              for p, by in ps.items()]
    groups += [(f"hand-written, {label}", by, "//") for label, by in summary.get("hand_speedup", {}).items()]
    width = 0.8 / max(len(groups), 1)
    for i, (name, by, hatch) in enumerate(groups):
        speed.bar([j + i * width for j in range(len(benches))], [by.get(b, 0) for b in benches], width,
                  label=name, hatch=hatch)
    speed.set_xticks([j + 0.4 - width / 2 for j in range(len(benches))])
    speed.set_xticklabels(benches)
    speed.axhline(1.0, color="k", linewidth=0.8)
    speed.set_title("speedup over hand on one device", fontsize=9)
    speed.legend(fontsize=6)
    by_p = sorted((r["partitions"], r["median_s"]) for r in rows if r["label"] == "MUL by P")
    hand_mul = [r["median_s"] for r in rows if r["label"] == "hand" and r["bench"] == "mul"]
    if by_p and hand_mul:
        mul.plot([p for p, _ in by_p], [hand_mul[0] / t for _, t in by_p], "o-")
        mul.set_xscale("log", base=2)
    mul.set_xlabel("MUL partitions P")
    mul.set_ylabel("speedup over hand (P from the run's default)")
    mul.set_title("MUL by partitions, the most devices", fontsize=9)
    bw = max((r for r in rows if r.get("bandwidth_gbps")), key=lambda r: len(r["bandwidth_gbps"]), default=None)
    if bw:
        n = int(round(math.sqrt(len(bw["bandwidth_gbps"]))))
        m = [[bw["bandwidth_gbps"][i * n + j] for j in range(n)] for i in range(n)]
        im = heat.imshow(m, cmap="viridis")
        names = ["host"] + [f"dev {d}" for d in range(n - 1)]
        heat.set_xticks(range(n))
        heat.set_xticklabels(names, fontsize=7)
        heat.set_yticks(range(n))
        heat.set_yticklabels(names, fontsize=7)
        for i in range(n):
            for j in range(n):
                heat.text(j, i, f"{m[i][j]:.1f}", ha="center", va="center", fontsize=7, color="w")
        fig.colorbar(im, ax=heat, label="GB/s, from row to column")
        heat.set_title("bandwidth matrix B", fontsize=9)
    first = rows[0]
    fig.suptitle(f"task scheduler, sched_bench ({first['backend']}, {first['device']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"sched_bench: wrote {path}")


def save(rows, out):
    """sched.json and sched.csv of the rows so far; returns their summary."""
    summary = summarize(rows)
    with open(os.path.join(out, "sched.json"), "w") as f:
        json.dump({"rows": rows, "summary": summary}, f, indent=1)
    with open(os.path.join(out, "sched.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "bench", "size", "partitions", "mode", "policy", "env", "devices", "backend", "device",
                    "median_s", "copies", "bytes_copied", "bytes_peer", "streams_used"])
        for r in rows:
            w.writerow([r["label"], r["bench"], r["size"], r["partitions"], r["mode"], r["policy"], r["env"],
                        r["devices"], r["backend"], r["device"], r["median_s"], r["copies"], r["bytes_copied"],
                        r.get("bytes_peer", 0), r["streams_used"]])
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--benches", default="vec,bs,ml,cg,mul")
    ap.add_argument("--devices", default="1,2")
    ap.add_argument("--partitions", default="1,2,4,8,16,32")
    ap.add_argument("--memory", default="", help="shares of the device's memory for fig. 10, e.g. 0.05,0.1,0.2")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tiny", action="store_true", help="CI's sizes")
    add_run_options(ap, "bench-results/sched")
    args = ap.parse_args()
    args.benches = [b for b in args.benches.split(",") if b]
    args.devices = [int(d) for d in args.devices.split(",")]
    args.partitions = [int(p) for p in args.partitions.split(",")]
    args.memory = [float(m) for m in args.memory.split(",") if m]
    if any(not 0 < m <= 1 for m in args.memory):
        sys.exit("sched_bench: --memory: shares of the device's memory, each in (0, 1]")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "sched.json")
    if args.replot:
        if not os.path.exists(path):
            sys.exit(f"sched_bench: no saved run in {args.out} (sched.json): run it first")
        with open(path) as f:
            saved = json.load(f)
        plot(saved["rows"], summarize(saved["rows"]), os.path.join(args.out, "sched.png"))
        return 0
    require_built("sched_bench", args.bin, ["sched_bench"])
    rows, failed, summary = [], 0, summarize([])
    runs = grid(args)
    progress = Progress(len(runs))
    for label, bench, mode, env, policy, partitions, devices, sizing in runs:
        progress.start(f"{bench} {label} {'all policies' if ',' in (policy or '') else policy or ''} "
                       f"{f'P={partitions}' if partitions else ''}".strip())
        reports, why = run(args, bench, sizing, mode, env, policy, partitions, devices)
        if reports is None or not all(r["verified"] for r in reports):
            failed = 1
            progress.finish(why or "WRONG outputs")
            continue
        for r in reports:
            r["label"] = label
        rows += reports
        progress.finish(", ".join(f"{r['median_s'] * 1e3:.3f} ms" for r in reports))
        summary = save(rows, args.out)  # after every run: a long grid cut short keeps what it measured
    print(f"\n{'bench':<6} {'sched/hand (1 dev)':>19} {'sync/async':>11}  best speedup over hand")
    for b in summary["sched_over_hand_1dev"]:
        best = max(((by[b], f"{p}, {label}") for label, ps in summary["speedup_over_hand"].items()
                    for p, by in ps.items() if b in by), default=(float("nan"), "-"))
        print(f"{b:<6} {summary['sched_over_hand_1dev'][b]:19.2f} {summary['sync_slowdown'].get(b, float('nan')):11.2f}"
              f"  {best[0]:.2f} ({best[1]})")
    print(f"geomean sched/hand on one device: {summary['geomean_sched_over_hand_1dev']:.2f} (target >= 0.90)")
    for b, by in summary["sched_over_hand_by_memory"].items():
        ratios = [v["ratio"] for v in by.values()]
        points = [f"{v['ratio']:.2f} at " + (f"{v['memory_share'] * 100:.3g}%" if v["memory_share"] else "its size")
                  for v in by.values()]
        print(f"{b:<6} sched/hand by memory: {', '.join(points)} (spread {max(ratios) / min(ratios):.2f})")
    for label, ps in summary["geomean_sched_over_hand_multi"].items():
        best = max(ps.items(), key=lambda kv: kv[1])
        hs = summary["hand_speedup"].get(label, {})
        print(f"on {label}: hand-written {' '.join(f'{b} {x:.2f}x' for b, x in hs.items())} over one device; "
              f"geomean sched/hand {best[1]:.2f} ({best[0]}; target >= 0.90)")
    plot(rows, summary, os.path.join(args.out, "sched.png"))
    return failed


if __name__ == "__main__":
    sys.exit(main())
