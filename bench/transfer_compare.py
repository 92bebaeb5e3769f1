#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Counter-triggered transfers against the bulk copy (ProACT's comparison):
each app with every transfer agent, chunk size and thread count asked for,
beside the bulk baseline (a copy after each kernel) and the ideal (nothing
moves: the time free transfers would give), all measured in this run.

Prints, per app, each agent's speedup over bulk and the fraction of the
ideal's gain it captures, (bulk - agent) / (bulk - ideal).  Writes
<out>/transfers.csv (a row per run, flushed as it ends), <out>/transfers.json
and <out>/transfers.png (time per agent at its best chunk size, and time
against chunk size).

  bench/transfer_compare.py [--bin build/bin] [--ranks 2] [--apps jacobi,pagerank]
                            [--agents bulk,host,device,launch,inline,ideal] [--chunks 64K,1M]
                            [--threads 0] [--device-groups 0] [--n 4096] [--scale 20[,16]] [--iterations 100] [--repeat 3]
                            [--verify one-rank|host|none]
                            [--out bench-results/transfers] [--mpirun "mpirun ..."]
                            [--timeout 600] [-- extra app options]
  bench/transfer_compare.py --replot [--out DIR]    (from transfers.json, else transfers.csv)

jacobi sweeps an n x n grid; pagerank runs the replicated formulation on a
Kronecker graph of 2^scale vertices (--iterations steps, not to a tolerance).
Every run is checked against a one-rank run of the same app and size
measured first (--verify one-rank, the default: its checksum, to 1e-9), or by
the app's own host replay (--verify host: exact, but the host takes minutes
on large grids).  The ideal's result is not a solution and is not checked.
An agent the backend lacks (device and launch on OpenCL) gives error rows,
not a stop."""
import argparse
import csv
import json
import os
import shlex
import sys

from driver import Progress, median, pyplot, run_app

FIELDS = ("app", "ranks", "agent", "chunk", "threads", "repeat", "verified", "seconds", "checksum", "chunk_moves",
          "bytes_sent", "mapped_peers", "producer_wait_s", "drain_s", "others_s", "backend", "device", "error")
# grain_region_end's split (mean over ranks): the producer, the transfers it left (what the agent did not
# hide), the other ranks'.
END_SPLIT = ("producer_wait_s", "drain_s", "others_s")


def size_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def app_command(args, app, ranks, agent, chunk, threads):
    """The mpirun line; an agent, chunk or thread count of None is left to
    the runtime (its settings, then the transfer profile)."""
    cmd = shlex.split(args.mpirun) + ["-np", str(ranks), os.path.join(args.bin, app), "--json",
                                      "--agent", agent or "auto"]
    if chunk is not None:
        cmd += ["--chunk-size", str(chunk)]
    if threads is not None:
        cmd += ["--transfer-threads", str(threads)]
    if app == "jacobi":
        # Two grids of a rank's rows, in the symmetric heap where the ranks
        # cannot map each other's memory (and on one rank).
        rows = -(-(args.n - 2) // ranks) + 2
        cmd += ["--n", str(args.n), "--iterations", str(args.iterations),
                "--heap-size", str(2 * rows * args.n * 8 + (64 << 20))]
    elif app == "pagerank":
        # Two vectors of shares, 8 bytes a vertex, replicated on every rank.
        scale = int(args.scale.split(",")[0])
        cmd += ["--kronecker", args.scale, "--iterations", str(args.iterations),
                "--heap-size", str(2 * (8 << scale) + (64 << 20))]
    if agent != "ideal" and args.verify == "host":
        cmd.append("--verify")
    return cmd + args.extra


# The agents that move chunks one by one, for which chunk size and threads matter.
CHUNKED = ("host", "device", "launch")


def agent_threads(args, agent):
    """Host threads, or the work-groups of the device agent or of each launched copy."""
    return args.device_groups if agent in ("device", "launch") else args.threads


def one_rank_checksums(args):
    """The checksum each app's one-rank run gives (nothing moves between ranks)."""
    sums = {}
    if args.verify != "one-rank":
        return sums
    for app in args.apps:
        report, error = run_app(app_command(args, app, 1, "bulk", args.chunks[0], args.threads[0]), app, args.timeout)
        if report is None:
            sys.exit(f"transfer_compare: the one-rank {app} run failed: {error}")
        sums[app] = report["checksum"]
        print(f"{app}: one rank, checksum {sums[app]:.15g} in {report['seconds']:.4f} s")
    return sums


def run_matrix(args, points=None, reference=None):
    """Runs `points`, (app, ranks, agent, chunk, threads, repeat) each, by
    default the matrix args give, checked against `reference` (by default
    the one-rank runs); writes transfers.csv as it goes, appending to it
    when `points` are given."""
    os.makedirs(args.out, exist_ok=True)
    more = points is not None
    if not more:
        points = [(app, r, agent, chunk, threads, rep)
                  for app in args.apps for r in args.ranks for agent in args.agents
                  for chunk in (args.chunks if agent in CHUNKED else args.chunks[:1])
                  for threads in (agent_threads(args, agent) if agent in CHUNKED else args.threads[:1])
                  for rep in range(args.repeat)]
    if reference is None:
        reference = one_rank_checksums(args)
    rows = []
    progress = Progress(len(points))
    with open(os.path.join(args.out, "transfers.csv"), "a" if more else "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        if not more:
            w.writeheader()
        refused = {}  # (app, ranks, agent): why the backend refused the agent
        for app, ranks, agent, chunk, threads, rep in points:
            progress.start(f"{app} {ranks} ranks, {agent}, chunks {chunk}, {threads} threads")
            report, error = None, refused.get((app, ranks, agent))
            if error is None:
                report, error = run_app(app_command(args, app, ranks, agent, chunk, threads), app, args.timeout)
            if "lacks a required capability" in error or "needs a backend" in error:
                refused[(app, ranks, agent)] = error
            row = dict.fromkeys(FIELDS, "")
            row.update(app=app, ranks=ranks, agent=agent, chunk=size_bytes(chunk), threads=threads, repeat=rep,
                       error=error)
            if report is not None:
                row.update({k: report.get(k, "") for k in ("verified", "seconds", "checksum", "chunk_moves",
                                                           "bytes_sent", "mapped_peers", "backend", "device")})
                row.update({k: report.get("end_split", {}).get(k, "") for k in END_SPLIT})
                # What "0" (the runtime's default) turned out to be.
                row["threads"] = report.get("transfer_threads", threads)
                if agent != "ideal" and report.get("verified") is False:
                    row["error"] = "verification failed"
                want = reference.get(app)
                if agent != "ideal" and want is not None:
                    same = abs(report["checksum"] - want) <= 1e-9 * max(abs(want), 1.0)
                    row["verified"] = same
                    if not same:
                        row["error"] = "verification failed"
            rows.append(row)
            w.writerow(row)
            f.flush()
            progress.finish(row["error"] or f"{row['seconds']:.4f} s")
    return rows


def summarize(rows):
    """Per (app, ranks): bulk and ideal, and each agent at its best chunk and
    thread count, as speedup over bulk and fraction of the ideal captured."""
    out = []
    for app, ranks in sorted({(r["app"], r["ranks"]) for r in rows}):
        bulk, ideal = median(rows, app=app, ranks=ranks, agent="bulk"), median(rows, app=app, ranks=ranks,
                                                                                 agent="ideal")
        for agent in sorted({r["agent"] for r in rows if r["app"] == app and r["ranks"] == ranks}):
            best = None
            for chunk, threads in sorted({(r["chunk"], r["threads"]) for r in rows if r["agent"] == agent}):
                m = median(rows, app=app, ranks=ranks, agent=agent, chunk=chunk, threads=threads)
                if m is not None and (best is None or m["seconds"] < best["seconds"]):
                    best = m
            if best is None:
                continue
            s = {"app": app, "ranks": ranks, "agent": agent, "chunk": best["chunk"], "threads": best["threads"],
                 "seconds": best["seconds"]}
            s.update({k: best[k] for k in END_SPLIT if isinstance(best.get(k), float)})
            if bulk is not None:
                s["speedup_over_bulk"] = bulk["seconds"] / best["seconds"]
                if ideal is not None and bulk["seconds"] > ideal["seconds"]:
                    s["ideal_captured"] = (bulk["seconds"] - best["seconds"]) / (bulk["seconds"] - ideal["seconds"])
            out.append(s)
    return out


def report(rows, out_dir):
    with open(os.path.join(out_dir, "transfers.json"), "w") as f:
        json.dump(rows, f, indent=1)
    summary = summarize(rows)
    for s in summary:
        extra = ""
        if "speedup_over_bulk" in s:
            extra = f"  {s['speedup_over_bulk']:.3f}x bulk"
        if "ideal_captured" in s:
            extra += f", {100 * s['ideal_captured']:.0f}% of the ideal's gain"
        if "drain_s" in s:
            extra += f"; left after the producer {s['drain_s']:.4f} s, waiting for the others {s['others_s']:.4f} s"
        print(f"{s['app']:8} {s['ranks']} ranks  {s['agent']:7} chunk {s['chunk']:>9} threads {s['threads']:>2}  "
              f"{s['seconds']:.4f} s{extra}")
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    plot(rows, summary, out_dir)


def plot(rows, summary, out_dir):
    plt = pyplot("transfer_compare")
    if plt is None or not summary:
        return
    groups = sorted({(s["app"], s["ranks"]) for s in summary})
    fig, axes = plt.subplots(len(groups), 2, figsize=(11, 3.6 * len(groups)), squeeze=False)
    for (app, ranks), (bars, sweep) in zip(groups, axes):
        mine = [s for s in summary if s["app"] == app and s["ranks"] == ranks]
        bars.bar([s["agent"] for s in mine], [s["seconds"] for s in mine],
                 color=["0.6" if s["agent"] in ("bulk", "ideal") else "C0" for s in mine])
        for s, x in zip(mine, range(len(mine))):
            if "speedup_over_bulk" in s:
                bars.text(x, s["seconds"], f"{s['speedup_over_bulk']:.2f}x", ha="center", va="bottom", fontsize=8)
        bars.set_ylabel("seconds (median, best chunk)")
        bars.set_title(f"{app}, {ranks} ranks")
        for agent in CHUNKED:
            pts = sorted({r["chunk"] for r in rows if r["app"] == app and r["agent"] == agent and not r["error"]})
            ys = [min((m["seconds"] for t in {r["threads"] for r in rows}
                       if (m := median(rows, app=app, ranks=ranks, agent=agent, chunk=c, threads=t))), default=None)
                  for c in pts]
            if pts:
                sweep.plot(pts, ys, marker="o", label=agent)
        for agent, style in (("bulk", "--"), ("ideal", ":")):
            m = median(rows, app=app, ranks=ranks, agent=agent)
            if m is not None:
                sweep.axhline(m["seconds"], linestyle=style, color="0.4", label=agent)
        sweep.set_xscale("log", base=2)
        sweep.set_xlabel("chunk bytes")
        sweep.set_ylabel("seconds (median)")
        sweep.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "transfers.png"), dpi=110)
    print(f"wrote {os.path.join(out_dir, 'transfers.png')}")


def load_rows(out_dir):
    """A run's rows: transfers.json, else the CSV it wrote as it went (a run cut short)."""
    path = os.path.join(out_dir, "transfers.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    rows = []
    with open(os.path.join(out_dir, "transfers.csv"), newline="") as f:
        for r in csv.DictReader(f):
            for k in ("ranks", "chunk", "threads", "repeat", "chunk_moves", "bytes_sent", "mapped_peers"):
                r[k] = int(r[k]) if r[k] else r[k]
            for k in ("seconds", "checksum") + END_SPLIT:
                r[k] = float(r[k]) if r.get(k) else r.get(k, "")
            r["verified"] = {"True": True, "False": False}.get(r["verified"])
            rows.append(r)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--ranks", default="2")
    p.add_argument("--apps", default="jacobi")
    p.add_argument("--agents", default="bulk,host,device,launch,inline,ideal")
    p.add_argument("--chunks", default="64K")
    p.add_argument("--threads", default="0")
    p.add_argument("--device-groups", default="0")
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--scale", default="20", help="Kronecker SCALE[,EDGEFACTOR] for pagerank")
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="bench-results/transfers")
    p.add_argument("--mpirun", default="mpirun --oversubscribe --bind-to none")
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--verify", choices=("one-rank", "host", "none"), default="one-rank")
    p.add_argument("--replot", action="store_true")
    p.add_argument("extra", nargs="*")
    args = p.parse_args()
    if args.replot:
        report(load_rows(args.out), args.out)
        return 0
    args.ranks = [int(x) for x in args.ranks.split(",")]
    args.apps, args.agents, args.chunks = args.apps.split(","), args.agents.split(","), args.chunks.split(",")
    args.threads = [int(x) for x in args.threads.split(",")]
    args.device_groups = [int(x) for x in args.device_groups.split(",")]
    rows = run_matrix(args)
    report(rows, args.out)
    return 1 if any(r["error"] == "verification failed" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
