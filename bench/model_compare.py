#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Gravel's evaluation of the GPU networking models (Gravel, sections 3, 7.1
and 7.2): gups and pagerank under every --model, on 1, 2, 4... ranks and, for
GUPS, over per-destination buffer sizes; every run verified.

Writes <out>/models.csv (a row per run, flushed as it ends), <out>/models.json,
and three plots:
  fig12_speedup.png  speedup over one rank of each app under each model
  fig14_buffer.png   GUPS rate by per-destination buffer (grain: GRAIN_BUFFER_SIZE;
                     coprocessor: its per-node queues), at the most ranks
  fig15_models.png   the models side by side at the most ranks, time over grain's
and prints, per app at the most ranks, each model's time over the fastest's.

  bench/model_compare.py [--bin build/bin] [--apps gups,pagerank] [--models all]
                         [--ranks 1,2,4] [--buffers 1K,4K,16K,64K,256K,1M]
                         [--log2-table 22] [--scale 16] [--iterations 5] [--repeat 3]
                         [--out bench-results/models] [--mpirun "mpirun ..."] [--timeout 600]
                         [--no-buffer-sweep]
  bench/model_compare.py --replot [--out DIR]"""
import argparse
import csv
import json
import os
import shlex
import sys

from driver import Progress, median, pyplot, run_app

MODELS = ("grain", "msg-per-lane", "coalesced", "coalesced-aggregated", "coprocessor", "coprocessor-buffered")
FIELDS = ("app", "model", "ranks", "buffer", "repeat", "verified", "seconds", "rate", "remote_fraction",
          "messages_on_wire", "mean_message_bytes", "backend", "device", "error")


def size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1].upper(), 1)
    return int(text[:-1] if mult > 1 else text) * mult


def app_args(args, app, ranks):
    if app == "gups":
        # Each rank's share of the table lives in the symmetric heap: past the
        # default 64 MiB, ask for room (one rank of --log2-table 24 needs 128).
        table = (8 << args.log2_table) // ranks
        heap = ["--heap-size", f"{(table >> 20) + 16}M"] if table > 48 << 20 else []
        return ["--log2-table", str(args.log2_table)] + heap
    return ["--kronecker", str(args.scale), "--iterations", str(args.iterations)]


def run_one(args, app, model, ranks, buffer, repeat):
    # The models differ in what crosses the network, so the ranks of this
    # host stand for nodes: grain's too sends to them through the transport
    # (the other models set GRAIN_PEER=off themselves).
    cmd = shlex.split(args.mpirun) + ["-np", str(ranks), "-x", "GRAIN_PEER=off", os.path.join(args.bin, app)]
    cmd += app_args(args, app, ranks)
    cmd += ["--model", model, "--json", "--verify"]
    if buffer:
        cmd += ["--pernode-bytes", str(buffer)] if model.startswith("coprocessor") else ["--buffer-size", str(buffer)]
    row = {"app": app, "model": model, "ranks": ranks, "buffer": buffer, "repeat": repeat, "error": ""}
    d, row["error"] = run_app(cmd, app, args.timeout)
    if d is None:
        return row
    t = d["stats"]["total"]
    if "coprocessor" in d:  # shipped by the host, outside grain's buffers
        wire, mean = d["coprocessor"]["sends"], d["coprocessor"]["mean_message_bytes"]
    else:
        wire, mean = t["buffers_sent"], t["mean_buffer_bytes"]
    work = d["updates"] if app == "gups" else d["edges"] * d["iterations"]
    row.update(verified=d.get("verified"), seconds=d["seconds"], rate=work / d["seconds"] / 1e6,
               remote_fraction=t["remote_fraction"], messages_on_wire=wire, mean_message_bytes=mean,
               backend=d["backend"], device=d["device"])
    return row


def plots(rows, apps, models, ranks, buffers, out):
    plt = pyplot("model_compare")
    if plt is None:
        return
    top = max(ranks)
    fig, axes = plt.subplots(1, len(apps), figsize=(4.2 * len(apps), 3.6), squeeze=False)
    for ax, app in zip(axes[0], apps):
        for m in models:
            one = median(rows, app=app, model=m, ranks=1, buffer=0)
            pts = [(r, one["seconds"] / x["seconds"]) for r in ranks
                   if one and (x := median(rows, app=app, model=m, ranks=r, buffer=0))]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=m)
        ax.plot(ranks, ranks, ":", color="gray", label="ideal")
        # One rank applies everything in place, so remote traffic can cost 1000x: log scale.
        ax.set(title=f"{app}: speedup over 1 rank", xlabel="ranks", xticks=ranks, yscale="log")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig12_speedup.png"), dpi=120)
    if buffers:
        fig, ax = plt.subplots(figsize=(5, 3.6))
        for m in ("grain", "coprocessor"):
            pts = [(b / 1024, x["rate"]) for b in buffers if (x := median(rows, app="gups", model=m, ranks=top, buffer=b))]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=m)
        ax.set(xscale="log", xlabel="per-destination buffer (KiB)", ylabel="M updates/s",
               title=f"GUPS on {top} ranks by buffer size")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "fig14_buffer.png"), dpi=120)
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(apps) * len(models) / 3, 3.6))
    width = 0.8 / len(models)
    for i, m in enumerate(models):
        ys = []
        for app in apps:
            base, x = median(rows, app=app, model="grain", ranks=top, buffer=0), median(rows, app=app, model=m, ranks=top, buffer=0)
            ys.append(x["seconds"] / base["seconds"] if base and x else 0)
        ax.bar([a + i * width for a in range(len(apps))], ys, width, label=m)
    ax.axhline(1, color="gray", lw=0.8)
    ax.set(xticks=[a + 0.4 - width / 2 for a in range(len(apps))], xticklabels=apps, yscale="log",
           ylabel="time / grain's", title=f"models on {top} ranks (lower is faster)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fig15_models.png"), dpi=120)
    print(f"model_compare: wrote {out}/fig12_speedup.png, fig14_buffer.png, fig15_models.png")


def report(rows, apps, models, ranks):
    top = max(ranks)
    print(f"\n{'app':9} {'model':22} {'ranks':>5} {'seconds':>9} {'/fastest':>8} {'wire msgs':>10} {'mean B':>9}")
    for app in apps:
        best = {m: x for m in models if (x := median(rows, app=app, model=m, ranks=top, buffer=0))}
        if not best:
            continue
        fastest = min(x["seconds"] for x in best.values())
        for m, x in best.items():
            print(f"{app:9} {m:22} {top:5} {x['seconds']:9.4f} {x['seconds'] / fastest:8.2f} "
                  f"{x['messages_on_wire']:10} {x['mean_message_bytes']:9.1f}")
        if "grain" in best:
            g = best["grain"]["seconds"] / fastest
            print(f"  grain is {'the fastest' if g == 1 else f'{g:.2f}x the fastest'}"
                  f"{'' if g <= 1.05 else ' (more than 5% behind)'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--apps", default="gups,pagerank")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--buffers", default="1K,4K,16K,64K,256K,1M")
    ap.add_argument("--no-buffer-sweep", action="store_true")
    ap.add_argument("--log2-table", type=int, default=22)
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="bench-results/models")
    ap.add_argument("--mpirun", default="mpirun --bind-to none --oversubscribe")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--replot", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    apps, models = args.apps.split(","), args.models.split(",")
    ranks = [int(r) for r in args.ranks.split(",")]
    buffers = [] if args.no_buffer_sweep else [size(b) for b in args.buffers.split(",")]
    for m in models:
        if m not in MODELS:
            sys.exit(f"model_compare: unknown model {m!r}; expected {', '.join(MODELS)}")
    if args.replot:
        saved = json.load(open(os.path.join(args.out, "models.json")))
        plots(saved["rows"], saved["apps"], saved["models"], saved["ranks"], saved["buffers"], args.out)
        report(saved["rows"], saved["apps"], saved["models"], saved["ranks"])
        return
    points = [(a, m, r, 0) for a in apps for m in models for r in ranks]
    points += [("gups", m, max(ranks), b) for m in ("grain", "coprocessor") if m in models for b in buffers]
    rows, progress = [], Progress(len(points) * args.repeat)
    with open(os.path.join(args.out, "models.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, extrasaction="ignore")
        w.writeheader()
        for i, (app, m, r, b) in enumerate((p for p in points for _ in range(args.repeat))):
            rep = i % args.repeat
            progress.start(f"{app} {m} on {r} ranks{f', buffer {b} B' if b else ''}")
            row = run_one(args, app, m, r, b, rep)
            progress.finish(row["error"] or f"{row['seconds']:.4f} s, verified {row['verified']}")
            rows.append(row)
            w.writerow(row)
            f.flush()
    json.dump({"apps": apps, "models": models, "ranks": ranks, "buffers": buffers, "rows": rows},
              open(os.path.join(args.out, "models.json"), "w"), indent=1)
    report(rows, apps, models, ranks)
    plots(rows, apps, models, ranks, buffers, args.out)
    bad = [r for r in rows if r["error"] or r["verified"] is not True]
    if bad:
        sys.exit(f"model_compare: {len(bad)} runs failed or did not verify")


if __name__ == "__main__":
    main()
