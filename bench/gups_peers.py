#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""GUPS on 1, 2, 4... GPUs of one host: grain against its peers, in one run.

For each GPU count N (one rank a GPU, 2^log2-per-gpu counters a GPU, 4
updates a counter, the HPCC stream), every repeat runs, in this order:
  grain            graphapps/gups on the direct path (GRAIN_PEER=auto); on
                   one GPU also its --baseline, plain device atomics ("plain")
  grain_transport  the same with GRAIN_PEER=off: every remote update through
                   the queue, the aggregators and MPI (N > 1)
  ipc              bench/peers gups_ipc: the owners' tables mapped by CUDA
                   IPC, one atomicAdd an update, no runtime: the ceiling
  nvshmem          bench/peers gups_nvshmem: nvshmem_uint64_atomic_add
Peers that are not built (bench/peers/build.sh) are reported and left out.
The first repeat of each is verified against the replayed stream; the
later ones only timed.

Writes <out>/gups_peers.csv (a row per run, flushed as it ends),
<out>/gups_peers.json and <out>/gups_peers.png, and prints the median GUP/s
with grain / nvshmem (target >= 0.9) and grain / ipc (target >= 0.8).

  bench/gups_peers.py [--bin build/bin] [--peers build/peers] [--gpus 1,2,4]
                      [--log2-per-gpu 26] [--repeat 3] [--variants grain,...]
                      [--out bench-results/gups_peers] [--mpirun "mpirun ..."]
                      [--timeout 600] [-- extra grain options]
  bench/gups_peers.py --replot [--out DIR]"""
import argparse
import csv
import json
import os
import shlex
import sys

from driver import Progress, median, pyplot, require_built, run_app, split_extra

VARIANTS = ("grain", "grain_transport", "ipc", "nvshmem")
FIELDS = ("gpus", "variant", "repeat", "verified", "seconds", "gups", "device", "error")
TARGETS = {"nvshmem": 0.9, "ipc": 0.8}  # grain's GUP/s over theirs


def command(args, variant, gpus, verify, extra):
    log2 = args.log2_per_gpu + (gpus - 1).bit_length()
    cmd = shlex.split(args.mpirun) + ["-np", str(gpus)]
    if variant.startswith("grain"):
        heap = (8 << args.log2_per_gpu) + (64 << 20)
        peer = "auto" if variant == "grain" else "off"
        cmd += ["-x", f"GRAIN_PEER={peer}", os.path.join(args.bin, "gups"), "--heap-size", str(heap)] + extra
        cmd += ["--baseline"] if gpus == 1 else []
    else:
        cmd.append(os.path.join(args.peers, f"gups_{variant}"))
    return cmd + ["--log2-table", str(log2), "--json"] + (["--verify"] if verify else [])


def runs(args, variant, gpus, repeat, extra):
    """The rows of one run: grain on one GPU gives its plain baseline too."""
    row = {"gpus": gpus, "variant": variant, "repeat": repeat, "verified": None, "device": "", "error": ""}
    program = "gups" if variant.startswith("grain") else f"gups_{variant}"
    d, row["error"] = run_app(command(args, variant, gpus, repeat == 0, extra), program, args.timeout)
    if d is None:
        return [row]
    row.update(verified=d.get("verified"), seconds=d["seconds"], gups=d["gups"], device=d.get("device", ""))
    if row["verified"] is False:
        row["error"] = "did not verify"
    out = [row]
    if "baseline" in d:
        b = d["baseline"]
        out.append(dict(row, variant="plain", verified=b.get("verified"), seconds=b["seconds"], gups=b["gups"],
                        error="" if b.get("verified") is not False else "did not verify"))
    return out


def measure(args, variants, gpus_list, extra):
    os.makedirs(args.out, exist_ok=True)
    rows = []
    plan = [(g, r, v) for g in gpus_list for r in range(args.repeat) for v in variants
            if not (v == "grain_transport" and g == 1)]
    progress = Progress(len(plan))
    with open(os.path.join(args.out, "gups_peers.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, extrasaction="ignore")
        w.writeheader()
        for gpus, repeat, variant in plan:
            progress.start(f"{variant} on {gpus} GPU{'s' if gpus > 1 else ''}, repeat {repeat}")
            got = runs(args, variant, gpus, repeat, extra)
            progress.finish(got[0]["error"] or f"{got[0]['gups']:.3f} GUP/s")
            for row in got:
                w.writerow(row)
                rows.append(row)
            f.flush()
    return rows


def report(rows, gpus_list, variants, log2, out):
    names = [v for v in ("plain",) + VARIANTS if v in variants or v == "plain"]
    best = {(g, v): median(rows, gpus=g, variant=v) for g in gpus_list for v in names}
    names = [v for v in names if any(best[(g, v)] for g in gpus_list)]
    print("\nGUP/s, median of the repeats\n" + f"{'':8}" + "".join(f"{v:>16}" for v in names) +
          "".join(f"{'grain/' + v:>14}" for v in TARGETS if v in names))
    missed = []
    for g in gpus_list:
        line = f"{g} GPU{'s' if g > 1 else ' '}" + " " * (4 - len(str(g)))
        for v in names:
            b = best[(g, v)]
            line += f"{b['gups']:16.3f}" if b else f"{'-':>16}"
        for v, target in TARGETS.items():
            if v not in names:
                continue
            mine, theirs = best.get((g, "grain")), best[(g, v)]
            if mine and theirs:
                ratio = mine["gups"] / theirs["gups"]
                line += f"{ratio:13.3f}{'' if ratio >= target else '!'}"
                if ratio < target:
                    missed.append(f"{g} GPUs: grain is {ratio:.3f}x {v} (target {target}x)")
            else:
                line += f"{'-':>14}"
        print(line)
    for r in rows:
        if r["error"]:
            print(f"gups_peers: {r['variant']} on {r['gpus']} GPUs, repeat {r['repeat']}: {r['error']}")
    for m in missed:
        print(f"gups_peers: target missed: {m}")
    plot(best, gpus_list, names, log2, os.path.join(out, "gups_peers.png"))


def plot(best, gpus_list, names, log2, path):
    plt = pyplot("gups_peers")
    if plt is None:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for v in names:
        pts = [(g, best[(g, v)]["gups"]) for g in gpus_list if best.get((g, v))]
        if pts:
            left.plot(*zip(*pts), marker="o", label=v)
    left.set(xlabel="GPUs", ylabel="GUP/s (median)", yscale="log", title=f"GUPS, 2^{log2} counters a GPU",
             xticks=gpus_list)
    left.legend(fontsize=8)
    for v, target in TARGETS.items():
        pts = [(g, best[(g, "grain")]["gups"] / best[(g, v)]["gups"]) for g in gpus_list
               if best.get((g, "grain")) and best.get((g, v))]
        if pts:
            line, = right.plot(*zip(*pts), marker="o", label=f"grain / {v}")
            right.axhline(target, color=line.get_color(), linestyle=":", linewidth=1)
    right.set(xlabel="GPUs", ylabel="ratio (dotted: target)", title="grain's GUP/s over the peers'",
              xticks=gpus_list)
    if right.lines:
        right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"gups_peers: wrote {path}")


def main():
    argv, extra = split_extra(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--peers", default="build/peers")
    ap.add_argument("--gpus", default="1,2,4")
    ap.add_argument("--log2-per-gpu", type=int, default=26)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", default="bench-results/gups_peers")
    ap.add_argument("--mpirun", default="mpirun --bind-to none --oversubscribe")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--replot", action="store_true")
    args = ap.parse_args(argv)
    path = os.path.join(args.out, "gups_peers.json")
    if args.replot:
        if not os.path.exists(path):
            sys.exit(f"gups_peers: {path}: no saved run to draw again (run without --replot first)")
        with open(path) as f:
            saved = json.load(f)
        report(saved["rows"], saved["gpus"], saved["variants"], saved["log2_per_gpu"], args.out)
        return 0
    gpus_list = [int(x) for x in args.gpus.split(",")]
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants or min(gpus_list) < 1:
        sys.exit(f"gups_peers: variants are {', '.join(VARIANTS)}; GPU counts at least 1")
    require_built("gups_peers", args.bin, ["gups"])
    for v in [v for v in variants if not v.startswith("grain")]:
        if not os.access(os.path.join(args.peers, f"gups_{v}"), os.X_OK):
            print(f"gups_peers: {args.peers}/gups_{v} is not built (bench/peers/build.sh): left out")
            variants.remove(v)
    rows = measure(args, variants, gpus_list, extra)
    with open(path, "w") as f:
        json.dump({"gpus": gpus_list, "variants": variants, "log2_per_gpu": args.log2_per_gpu, "rows": rows}, f,
                  indent=1)
    report(rows, gpus_list, variants, args.log2_per_gpu, args.out)
    return 1 if any(r["error"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
