#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The transfer profiler: sweeps one app's counter-triggered transfers over
agents, chunk sizes and transfer threads on this machine, runs the sweep's
fastest points (--finalists, 3 by default) --repeat times more, in turns,
and stores the fastest of that final round in the transfer profile under
(device, app), where the runtime takes it by default
(GRAIN_TRANSFER_AGENT=auto, chunk size and threads 0); then runs the app
with nothing set and reports how close that run comes to the best.  The
final round is there because the lowest of many medians of a few noisy
runs is a low draw (a 20-step pagerank on two H200s: the default run took
8% longer than the sweep's best); a round of the finalists alone draws
afresh.

  bench/transfer_profile.py --app jacobi|pagerank [--ranks 2]
                            [--agents bulk,host,device,launch,inline]
                            [--chunks 4K,16K,64K,256K,1M,4M,16M] [--threads 1,2,4]
                            [--device-groups 4,16,64] [--n 4096] [--scale 20]
                            [--iterations 100] [--repeat 3] [--finalists 3] [--profile FILE]
                            [--out bench-results/transfer-profile] [--mpirun "mpirun ..."]
                            [--verify one-rank|host|none] [--require-within 0.05]
                            [-- extra app options]

The profile is GRAIN_TRANSFER_PROFILE's file, else
$XDG_CACHE_HOME/grain/transfer-profile.tsv (~/.cache/grain/...), the
runtime's own default.  Writes the sweep as bench/transfer_compare.py does
(<out>/transfers.csv, .json, .png, summary.json) and <out>/profile.json: the
choice, the check run's median and its ratio to the best (the final
round's, else the sweep's).

Exits 1 when a run fails verification or the check run did not take the
profile's configuration; with --require-within F, also when the check run's
median is more than F above the best (timing is not checked by
default: a loaded machine is not a broken profiler)."""
import argparse
import json
import os
import sys
import time

from driver import median, run_app
from transfer_compare import app_command, one_rank_checksums, report, run_matrix

SETTINGS = ("GRAIN_TRANSFER_AGENT", "GRAIN_CHUNK_SIZE", "GRAIN_TRANSFER_THREADS")


def profile_path(given):
    if given:
        return given
    env = os.environ.get("GRAIN_TRANSFER_PROFILE", "")
    if env == "none":
        sys.exit("transfer_profile: GRAIN_TRANSFER_PROFILE=none: the runtime reads no profile; give --profile FILE")
    if env:
        return env
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "grain", "transfer-profile.tsv")


def fastest(rows, n):
    """The n fastest (agent, chunk, threads) by median over their runs, each
    as its median run, fastest first."""
    points = sorted({(r["agent"], r["chunk"], r["threads"]) for r in rows if not r["error"]})
    return sorted((median(rows, agent=a, chunk=c, threads=t) for a, c, t in points), key=lambda m: m["seconds"])[:n]


def final_round(args, rows, reference):
    """Runs the sweep's fastest points args.repeat times more, in turns, so
    that drift on the machine touches them alike; returns the new rows
    (none with fewer than two finalists)."""
    finalists = [(m["agent"], m["chunk"], m["threads"]) for m in fastest(rows, args.finalists)]
    if len(finalists) < 2:
        return []
    print(f"transfer_profile: the {len(finalists)} fastest points, {args.repeat} runs more each, in turns")
    points = [(args.app, args.ranks[0], agent, str(chunk), threads, args.repeat + rep)
              for rep in range(args.repeat) for agent, chunk, threads in finalists]
    return run_matrix(args, points, reference)


def store(path, device, app, best, note):
    """Replaces the profile's line for (device, app), keeping the others."""
    if "\t" in device or "\n" in device:
        sys.exit(f"transfer_profile: the device name {device!r} cannot be a profile key")
    lines = []
    if os.path.exists(path):
        with open(path) as f:
            lines = [x for x in f.read().splitlines() if x.split("\t")[:2] != [device, app]]
    if not lines:
        lines = ["# grain transfer profile: device, app, agent, chunk bytes, threads, how it was measured",
                 "# written by bench/transfer_profile.py; GRAIN_TRANSFER_PROFILE=none ignores it"]
    lines.append("\t".join([device, app, best["agent"], str(best["chunk"]), str(best["threads"]), note]))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def check_runs(args, path, best):
    """The app with nothing set, as a user would run it, args.repeat times."""
    saved = {k: os.environ.pop(k) for k in SETTINGS if k in os.environ}
    if saved:
        print(f"transfer_profile: the check runs leave out {', '.join(saved)}, which would override the profile")
    os.environ["GRAIN_TRANSFER_PROFILE"] = path
    runs = []
    for rep in range(args.repeat):
        rep_report, error = run_app(app_command(args, args.app, args.ranks[0], None, None, None), args.app,
                                    args.timeout)
        if rep_report is None:
            sys.exit(f"transfer_profile: the check run failed: {error}")
        runs.append(rep_report)
        print(f"check run {rep + 1}/{args.repeat}: {rep_report['agent']} agent, chunks of "
              f"{rep_report['chunk_bytes']}, {rep_report['transfer_threads']} threads, "
              f"{rep_report['seconds']:.4f} s")
    os.environ.update(saved)
    took = all(r.get("profiled") and r["agent"] == best["agent"] and r["chunk_bytes"] == best["chunk"]
               and r["transfer_threads"] == best["threads"] for r in runs)
    return runs, took


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--app", required=True, choices=("jacobi", "pagerank"))
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--agents", default="bulk,host,device,launch,inline")
    p.add_argument("--chunks", default="4K,16K,64K,256K,1M,4M,16M")
    p.add_argument("--threads", default="1,2,4")
    p.add_argument("--device-groups", default="4,16,64")
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--scale", default="20", help="Kronecker SCALE[,EDGEFACTOR] for pagerank")
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--finalists", type=int, default=3, help="the sweep's fastest points run again (0: none)")
    p.add_argument("--profile", default="")
    p.add_argument("--out", default="bench-results/transfer-profile")
    p.add_argument("--mpirun", default="mpirun --oversubscribe --bind-to none")
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--verify", choices=("one-rank", "host", "none"), default="one-rank")
    p.add_argument("--require-within", type=float, default=None)
    p.add_argument("extra", nargs="*")
    args = p.parse_args()
    if "ideal" in args.agents.split(","):
        sys.exit("transfer_profile: the ideal agent moves nothing and cannot be a choice; leave it out")
    # The sweep is transfer_compare's matrix for one app and rank count.
    args.apps, args.ranks = [args.app], [args.ranks]
    args.agents, args.chunks = args.agents.split(","), args.chunks.split(",")
    args.threads = [int(x) for x in args.threads.split(",")]
    args.device_groups = [int(x) for x in args.device_groups.split(",")]
    path = profile_path(args.profile)

    reference = one_rank_checksums(args)
    rows = run_matrix(args, reference=reference)
    final = final_round(args, rows, reference)
    rows += final
    report(rows, args.out)
    failed = any(r["error"] == "verification failed" for r in rows)
    chosen = fastest(final, 1)
    best = (chosen or fastest(rows, 1) or [None])[0]
    if best is None:
        sys.exit("transfer_profile: no run of the sweep succeeded")
    where = "the final round's best" if chosen else "the sweep's best"
    size = f"n {args.n}" if args.app == "jacobi" else f"scale {args.scale}"
    note = (f"{best['seconds']:.6g} s median of {args.repeat}{' in a final round' if chosen else ''}, "
            f"{args.ranks[0]} ranks, {size}, {args.iterations} iterations, {time.strftime('%Y-%m-%d')}")
    store(path, best["device"], args.app, best, note)
    print(f"{args.app} on {best['device']}: best {best['agent']} agent, chunks of {best['chunk']} bytes, "
          f"{best['threads']} threads, {best['seconds']:.4f} s; stored in {path}")

    runs, took = check_runs(args, path, best)
    check = sorted(r["seconds"] for r in runs)[len(runs) // 2]
    ratio = check / best["seconds"]
    print(f"check run median {check:.4f} s: {100 * (ratio - 1):+.1f}% against {where} "
          f"({'took' if took else 'did NOT take'} the profile's configuration)")
    result = {"app": args.app, "device": best["device"], "backend": best["backend"], "ranks": args.ranks[0],
              "profile": path, "choice": {k: best[k] for k in ("agent", "chunk", "threads", "seconds")},
              "check_seconds": [r["seconds"] for r in runs], "check_median": check, "ratio_to_best": ratio,
              "took_profile": took, "within_5_percent": ratio <= 1.05, "final_round": bool(chosen)}
    with open(os.path.join(args.out, "profile.json"), "w") as f:
        json.dump(result, f, indent=1)
    if failed or not took:
        return 1
    if args.require_within is not None and ratio > 1 + args.require_within:
        print(f"transfer_profile: the check run is more than {100 * args.require_within:.0f}% above the best")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
