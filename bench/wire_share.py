#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What share of the wire grain's transport path fills: GUPS on N ranks with
GRAIN_PEER=off (every message to another rank through the queue, the
aggregators, MPI and the receive path), its applied wire bytes a second and a
rank, over what MPI itself carries between the same ranks in the same run
(mpi_bandwidth: every rank sends 64 KiB buffers to every other and receives
theirs at once, 3 in flight a peer, as grain does).  The issue's target: 0.8.
Since increments travel in runs (4.5 wire bytes each instead of 8), the same
share carries more messages than before: each row also gives the messages a
second and a rank and `plain_share`, the share those messages would fill at 8
bytes each, the size of a plain increment.

MPI is measured twice: as said, one thread a rank sending from one buffer
and receiving into a window, both hot in its cache (the ceiling, the
issue's denominator), and the way grain's transport drives it
(mpi_bandwidth --threads, --mpi-threads sender threads writing their own
buffers and one thread testing everything): `threaded_share` is the applied
wire over that, what is left to grain once MPI's cost of being driven that
way is counted.

Each repeat measures MPI first, then GUPS once for each pair of
GRAIN_AGGREGATORS and GRAIN_RECV_THREADS values, every run verified: the send
side and the receive side each take cores of the rank's share, and which
split fills the wire depends on the machine.  Writes <out>/wire.csv (a row per
run, flushed as it ends), <out>/wire.json and <out>/wire.png (the share by
setting; 0, the runtime's choice, is the default of both).

  bench/wire_share.py [--bin build/bin] [--ranks 2] [--log2-table 26]
                      [--aggregators 0] [--recv-threads 0,1,4] [--repeat 3] [--mpi-threads 6]
                      [--out bench-results/wire]
                      [--mpirun "mpirun ..."] [--timeout 900] [-- extra gups options]
  bench/wire_share.py --replot [--out DIR]   (table and plot again from DIR/wire.json)

--log2-table is per rank; the heap holds it."""
import argparse
import csv
import json
import os
import shlex
import subprocess
import sys

from driver import Progress, pyplot, require_built, run_app, split_extra

FIELDS = ("repeat", "aggregators", "recv_threads", "verified", "seconds", "gups", "wire_gb_per_s_per_rank",
          "mpi_gb_per_s_per_rank", "share", "mpi_threaded_gb_per_s_per_rank", "threaded_share", "msgs_per_s_per_rank",
          "wire_bytes_per_message", "plain_share",
          "remote_messages", "received_bytes", "apply_messages_kept", "queue_full_waits", "aggregator_busy_s",
          "aggregator_buffer_wait_s", "aggregator_send_s", "aggregator_busy_max_s", "network_progress_s",
          "receive_busy_s", "receive_threads_busy_s", "backend", "device", "error")
TARGET = 0.8
PLAIN_INC_BYTES = 8  # a 64-bit increment outside a run


def mpi_rate(args, threads):
    """MPI's GB/s received a rank, from `threads` sender threads (0: one
    thread, hot buffers), or None and why."""
    cmd = shlex.split(args.mpirun) + ["-np", str(args.ranks), os.path.join(args.bin, "mpi_bandwidth"),
                                      "--bytes", "65536", "--window", "4" if threads else "3", "--seconds", "2",
                                      "--threads", str(threads), "--json"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=args.timeout)
        return json.loads(p.stdout.strip().splitlines()[-1])["recv_gb_per_s_per_rank"], ""
    except (subprocess.TimeoutExpired, IndexError, ValueError, KeyError) as e:
        return None, f"mpi_bandwidth gave no figure ({type(e).__name__})"


def gups_run(args, aggs, threads, mpi, mpi_threaded, extra):
    table = args.log2_table + (args.ranks - 1).bit_length()
    heap = (8 << args.log2_table) + (64 << 20)
    cmd = shlex.split(args.mpirun) + ["-np", str(args.ranks), "-x", "GRAIN_PEER=off", "-x",
                                      f"GRAIN_AGGREGATORS={aggs}", "-x", f"GRAIN_RECV_THREADS={threads}",
                                      os.path.join(args.bin, "gups"),
                                      "--log2-table", str(table), "--heap-size", str(heap)] + extra + [
                                          "--json", "--verify"]
    row = {"aggregators": aggs, "recv_threads": threads, "mpi_gb_per_s_per_rank": mpi,
           "mpi_threaded_gb_per_s_per_rank": mpi_threaded, "error": ""}
    d, row["error"] = run_app(cmd, "gups", args.timeout)
    if d is None:
        return row
    t = d["stats"]["total"]
    wire = t["received_bytes"] / args.ranks / d["seconds"] / 1e9
    msgs = t["remote_messages"] / args.ranks / d["seconds"]
    row.update(verified=d.get("verified"), seconds=d["seconds"], gups=d["gups"], wire_gb_per_s_per_rank=wire,
               share=wire / mpi if mpi else None, threaded_share=wire / mpi_threaded if mpi_threaded else None,
               msgs_per_s_per_rank=msgs,
               wire_bytes_per_message=t["received_bytes"] / t["remote_messages"] if t["remote_messages"] else None,
               plain_share=msgs * PLAIN_INC_BYTES / 1e9 / mpi if mpi else None, backend=d["backend"],
               device=d["device"])
    row.update({k: t.get(k) for k in ("remote_messages", "received_bytes", "apply_messages_kept",
                                      "queue_full_waits", "aggregator_busy_s", "aggregator_buffer_wait_s",
                                      "aggregator_send_s", "aggregator_busy_max_s", "network_progress_s",
                                      "receive_busy_s", "receive_threads_busy_s")})
    if row["verified"] is False:
        row["error"] = "did not verify"
    return row


def median_of(rows, setting):
    runs = sorted((r for r in rows if not r["error"] and (r.get("aggregators", 1), r["recv_threads"]) == setting),
                  key=lambda r: r["share"])
    return runs[len(runs) // 2] if runs else None


def figure(value, width, digits):
    return f"{value:{width}.{digits}f}" if value is not None else f"{'-':>{width}}"


def label(setting):
    return " / ".join("auto" if n == 0 else str(n) for n in setting)


def report(args, rows, settings):
    print(f"\n{'aggregators / recv threads':>26} {'GUP/s':>8} {'M msg/s':>8} {'B/msg':>6} {'wire GB/s':>10} "
          f"{'MPI GB/s':>9} {'share':>6} {'target':>7} {'at 8 B':>7} {'MPI thr.':>9} {'share':>6}")
    best = {}
    for setting in settings:
        b = median_of(rows, setting)
        if b is None:
            print(f"{label(setting):>26} failed")
            continue
        best[setting] = b
        mark = "met" if b["share"] >= TARGET else "missed"
        msgs = b.get("msgs_per_s_per_rank")  # absent from files written before runs
        print(f"{label(setting):>26} {b['gups']:8.3f} {figure(msgs and msgs / 1e6, 8, 1)} "
              f"{figure(b.get('wire_bytes_per_message'), 6, 2)} {b['wire_gb_per_s_per_rank']:10.3f} "
              f"{b['mpi_gb_per_s_per_rank']:9.3f} {b['share']:6.3f} {mark:>7} {figure(b.get('plain_share'), 7, 3)} "
              f"{figure(b.get('mpi_threaded_gb_per_s_per_rank'), 9, 3)} {figure(b.get('threaded_share'), 6, 3)}")
    if best:
        plot(best, os.path.join(args.out, "wire.png"))
    failed = [r for r in rows if r["error"]]
    for r in failed:
        print(f"wire_share: GRAIN_AGGREGATORS={r.get('aggregators', 1)} GRAIN_RECV_THREADS={r['recv_threads']} "
              f"repeat {r.get('repeat')}: {r['error']}")
    return 1 if failed else 0


def plot(best, path):
    plt = pyplot("wire_share")
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(best), 3.6))
    labels = [label(s) for s in best]
    shares = [b["share"] for b in best.values()]
    ax.bar(labels, shares, color="#4c72b0")
    for i, s in enumerate(shares):
        ax.annotate(f"{s:.3f}", (i, s), ha="center", va="bottom", fontsize=8)
    ax.axhline(TARGET, color="#444444", linestyle="--", linewidth=0.8, label=f"target {TARGET}")
    ax.set_ylim(0, 1)
    ax.set_xlabel("GRAIN_AGGREGATORS / GRAIN_RECV_THREADS")
    ax.set_ylabel("applied wire bytes / MPI's, a rank")
    first = next(iter(best.values()))
    ax.set_title(f"GUPS through MPI ({first['backend']}, {first['device']})", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wire_share: wrote {path}")


def counts(text):
    return [int(n) for n in text.split(",")]


def main():
    argv, extra = split_extra(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--log2-table", type=int, default=26)
    ap.add_argument("--aggregators", type=counts, default=[0])
    ap.add_argument("--recv-threads", type=counts, default=[0, 1, 4])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="bench-results/wire")
    ap.add_argument("--mpirun", default="mpirun --bind-to none --oversubscribe")
    ap.add_argument("--mpi-threads", type=int, default=6)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--replot", action="store_true")
    args = ap.parse_args(argv)
    if args.replot:
        saved = json.load(open(os.path.join(args.out, "wire.json")))
        return report(args, saved["runs"], [tuple(s) for s in saved["settings"]])
    settings = [(a, n) for a in args.aggregators for n in args.recv_threads]
    if (args.ranks < 2 or args.repeat < 1 or not 1 <= args.log2_table <= 36 or min(args.recv_threads) < 0
            or min(args.aggregators) < 0 or not 1 <= args.mpi_threads <= 64):
        sys.exit("wire_share: --ranks >= 2, --repeat >= 1, --log2-table 1..36, --aggregators and --recv-threads "
                 "of counts >= 0 (0: the runtime's choice), --mpi-threads 1..64")
    require_built("wire_share", args.bin, ["gups", "mpi_bandwidth"])
    os.makedirs(args.out, exist_ok=True)
    rows, progress = [], Progress(args.repeat * (1 + len(settings)))
    with open(os.path.join(args.out, "wire.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for rep in range(args.repeat):
            progress.start(f"MPI alone, {args.ranks} ranks")
            mpi, why = mpi_rate(args, 0)
            threaded, why_threaded = mpi_rate(args, args.mpi_threads) if mpi else (None, "")
            progress.finish(why or f"{mpi:.3f} GB/s a rank, {figure(threaded, 0, 3)} driven as grain drives it"
                            + (f" ({why_threaded})" if why_threaded else ""))
            for aggs, n in settings:
                progress.start(f"gups, GRAIN_AGGREGATORS={aggs} GRAIN_RECV_THREADS={n}")
                row = gups_run(args, aggs, n, mpi, threaded, extra) if mpi else {"aggregators": aggs,
                                                                                  "recv_threads": n, "error": why}
                row["repeat"] = rep
                rows.append(row)
                w.writerow(row)
                f.flush()
                with open(os.path.join(args.out, "wire.json"), "w") as j:
                    json.dump({"ranks": args.ranks, "log2_table": args.log2_table, "settings": settings,
                               "runs": rows}, j, indent=1)
                progress.finish(row["error"] or f"{row['gups']:.3f} GUP/s, share {row['share']:.3f}")
    return report(args, rows, settings)


if __name__ == "__main__":
    sys.exit(main())
