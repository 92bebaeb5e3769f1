#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Strong scaling of the graph apps: each app on the same input at 1, 2, 4...
ranks, every run verified, with the runtime's time split (compute, queue,
aggregation, network, host) and the network statistics of Gravel's table 5
(remote access fraction, mean message size on the wire).

Writes <out>/scaling.csv (a row per run, flushed as it ends), <out>/scaling.json
and <out>/scaling.png (the split of each run, stacked, one panel per app), and
prints the speedups over one rank measured in the same run.

  bench/app_scaling.py [--bin build/bin] [--scale 20] [--ranks 1,2,4]
                       [--apps pagerank,sssp,color,kmeans,kmer] [--repeat 1]
                       [--out bench-results/app_scaling] [--mpirun "mpirun ..."]
                       [--data DIR] [--no-verify] [--timeout 900] [-- extra app options]
  bench/app_scaling.py --replot [--out DIR]   (table and plot again from DIR/scaling.json)

Inputs at scale S: pagerank (20 iterations), sssp and color on the Kronecker
graph S (16 x 2^S edges); kmeans on 2^S points in 8 dimensions around 16
centres, 20 iterations; kmer on reads of 100 bases drawn at coverage 16 from a
random genome of 2^S bases (written once to --data, by default
bench-results/inputs, apart from the results; seeded), k = 31."""
import argparse
import csv
import json
import os
import random
import shlex
import sys

from driver import Progress, add_app_options, median, pyplot, require_built, run_app, split_extra

SPLIT = ("compute_s", "queue_s", "aggregation_s", "network_s", "host_s")
FIELDS = ("app", "ranks", "repeat", "verified", "seconds") + SPLIT + (
    "remote_fraction", "mean_buffer_bytes", "messages", "buffers_sent", "aggregator_busy_s", "queue_full_waits",
    "apply_kernels_overlapped", "backend", "device", "error")


def genome_reads(path, scale, seed=1, length=100, coverage=16):
    """Error-free reads of both strands of a random genome: a k-mer input whose
    size doubles with the scale, like the graphs'."""
    if os.path.exists(path):
        return
    rng = random.Random(seed)
    n = 1 << scale
    genome = "".join(rng.choice("ACGT") for _ in range(n))
    flip = str.maketrans("ACGT", "TGCA")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for r in range(n * coverage // length):
            start = rng.randrange(n - length)
            read = genome[start:start + length]
            if rng.random() < 0.5:
                read = read.translate(flip)[::-1]
            f.write(f">r{r}\n{read}\n")
    os.replace(tmp, path)


def app_command(app, scale, data):
    if app in ("pagerank", "sssp", "color"):
        cmd = ["--kronecker", str(scale)]
        return cmd + ["--iterations", "20"] if app == "pagerank" else cmd
    if app == "kmeans":
        return ["--blobs", f"{1 << scale},8,16", "--k", "16", "--max-iterations", "20"]
    if app == "kmer":
        reads = os.path.join(data, f"genome-{scale}.fa")
        genome_reads(reads, scale)
        return ["--reads", reads, "--k", "31", "--heap-size", "1G"]
    sys.exit(f"app_scaling: no input for app {app!r}")


def run_one(args, app, ranks, extra):
    cmd = shlex.split(args.mpirun) + ["-np", str(ranks), os.path.join(args.bin, app)]
    cmd += app_command(app, args.scale, args.data) + extra + ["--json"]
    cmd += ["--verify"] if args.verify else []
    row = {"app": app, "ranks": ranks, "error": ""}
    d, row["error"] = run_app(cmd, app, args.timeout)
    if d is None:
        return row
    t = d["stats"]["total"]
    row.update({k: d["time_split"][k] for k in SPLIT})
    row.update(verified=d.get("verified"), seconds=d["seconds"], remote_fraction=t["remote_fraction"],
               mean_buffer_bytes=t["mean_buffer_bytes"],
               messages=t["local_messages"] + t["remote_messages"] + t["direct_messages"],
               buffers_sent=t["buffers_sent"], aggregator_busy_s=t["aggregator_busy_s"],
               queue_full_waits=t["queue_full_waits"], apply_kernels_overlapped=t["apply_kernels_overlapped"],
               backend=d["backend"], device=d["device"])
    return row


def median_rows(rows):
    """The run of median time of each (app, ranks)."""
    keys = {(r["app"], r["ranks"]) for r in rows if not r["error"]}
    return {(app, n): median(rows, app=app, ranks=n) for app, n in keys}


def plot(best, apps, ranks, path):
    plt = pyplot("app_scaling")
    if plt is None:
        return
    fig, axes = plt.subplots(1, len(apps), figsize=(3.2 * len(apps), 3.8), squeeze=False)
    colors = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8c8c8c")
    for ax, app in zip(axes[0], apps):
        xs = [r for r in ranks if (app, r) in best]
        bottom = [0.0] * len(xs)
        for part, color in zip(SPLIT, colors):
            h = [best[(app, r)][part] for r in xs]
            ax.bar([str(r) for r in xs], h, bottom=bottom, color=color, label=part[:-2])
            bottom = [b + x for b, x in zip(bottom, h)]
        base = best.get((app, xs[0])) if xs else None
        for i, r in enumerate(xs):
            if base:
                ax.annotate(f"{base['seconds'] / best[(app, r)]['seconds']:.2f}x", (i, bottom[i]),
                            ha="center", va="bottom", fontsize=8)
        ax.set_title(app)
        ax.set_xlabel("ranks")
    axes[0][0].set_ylabel("seconds (mean over ranks)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(SPLIT), fontsize=8)
    first = next(iter(best.values()))
    fig.suptitle(f"strong scaling, speedup over {ranks[0]} rank(s) on top ({first['backend']}, {first['device']})",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    print(f"app_scaling: wrote {path}")


def main():
    argv, extra = split_extra(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_app_options(ap, "pagerank,sssp,color,kmeans,kmer", 1, "bench-results/app_scaling")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--no-verify", dest="verify", action="store_false")
    args = ap.parse_args(argv)
    ranks = [int(r) for r in args.ranks.split(",")]
    apps = args.apps.split(",")
    if args.replot:
        saved = json.load(open(os.path.join(args.out, "scaling.json")))
        ranks, rows = saved["ranks"], saved["runs"]
        apps = list(dict.fromkeys(r["app"] for r in rows))
        return report(args, apps, ranks, rows)
    if args.scale < 1 or args.scale > 40 or not ranks or min(ranks) < 1 or args.repeat < 1:
        sys.exit("app_scaling: --scale 1..40, --ranks of positive counts, --repeat >= 1")
    require_built("app_scaling", args.bin, apps)
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.data, exist_ok=True)

    rows, progress = [], Progress(len(apps) * len(ranks) * args.repeat)
    with open(os.path.join(args.out, "scaling.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for app in apps:
            for r in ranks:
                for rep in range(args.repeat):
                    progress.start(f"{app} on {r} ranks")
                    row = run_one(args, app, r, extra)
                    row["repeat"] = rep
                    rows.append(row)
                    w.writerow(row)
                    f.flush()
                    with open(os.path.join(args.out, "scaling.json"), "w") as j:
                        json.dump({"scale": args.scale, "ranks": ranks, "runs": rows}, j, indent=1)
                    progress.finish(row["error"] or f"{row['seconds']:.3f} s, verified {row['verified']}")

    return report(args, apps, ranks, rows)


def report(args, apps, ranks, rows):
    best = median_rows(rows)
    print(f"\n{'app':9} {'ranks':>5} {'seconds':>8} {'speedup':>7} {'compute':>8} {'queue':>8} {'aggreg.':>8} "
          f"{'network':>8} {'host':>8} {'remote%':>8} {'msg B':>8}")
    for app in apps:
        base = best.get((app, ranks[0]))
        for r in ranks:
            b = best.get((app, r))
            if b is None:
                print(f"{app:9} {r:5} failed")
                continue
            speedup = base["seconds"] / b["seconds"] if base else float("nan")
            print(f"{app:9} {r:5} {b['seconds']:8.3f} {speedup:7.2f} " +
                  " ".join(f"{b[k]:8.3f}" for k in SPLIT) +
                  f" {100 * b['remote_fraction']:7.1f}% {b['mean_buffer_bytes']:8.0f}")
    if best:
        plot(best, [a for a in apps if any(k[0] == a for k in best)], ranks, os.path.join(args.out, "scaling.png"))
    failed = [r for r in rows if r["error"] or r.get("verified") is False]
    if failed:
        print(f"app_scaling: {len(failed)} run(s) failed or did not verify")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
