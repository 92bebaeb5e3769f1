#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""An analysis of call 3's page-locked dgemm runs: grain's tile schedule (blas_run.c's gemm_tiles: C tiles column by
column, three C slots, each A and B tile copied once, C back after its last K step) simulated lane by lane from the
deployed profile, with two effects no model has yet, measured in calls 4 and 6:
  - a tile copy is a 2-D copy out of a wider matrix, slower than the deployment's contiguous copies at T <= 2048
    (copies-2d.txt: 48.8 GB/s against 55.1 at T = 2048);
  - a copy is slower while a dgemm kernel runs (call 6: 1.68x at T = 2048, 1.19x at T = 4096).
A copy is slowed by sl while the other direction copies, and by the kernel factor while a kernel runs; kernels keep
their deployed time. Prints each run's measured time against the simulation's with and without the two effects, and
dr's prediction from the run.

    python3 docs/results/blas-1xh200-s53/simulate.py [--kernel-slowdown 1.68,1.19] [--no-2d]
"""
import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = os.path.join(HERE, "call3-pinned-links", "dgemm")


def read_profile(path):
    links, kernels = {}, {}
    for line in open(path):
        if line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        if f[1] == "link":
            links[f[2]] = tuple(float(x) for x in f[3:6])
        else:
            kernels[f[2]] = {int(a.split(":")[0]): float(a.split(":")[1]) for a in f[3].split(",")}
    return links, kernels


def schedule(where, m, n, k, T):
    """grain's gemm_tiles in issue order: (lane, what, deps), lanes H (in), R (kernels), D (back)."""
    mt, nt, kt = -(-m // T), -(-n // T), -(-k // T)
    ops, last, copied, slot_back, pending, count = [], {"H": None, "R": None, "D": None}, set(), [None] * 3, None, 0

    def op(lane, what, deps):
        ops.append((lane, what, [d for d in deps if d is not None]))
        last[lane] = len(ops) - 1
        return last[lane]

    for j in range(nt):
        for i in range(mt):
            slot, count = count % 3, count + 1
            fresh = where[2] != "g"
            if fresh:
                op("H", "copy", [slot_back[slot]])
            for step in range(kt):
                for name, key, here in (("A", (i, step), where[0]), ("B", (step, j), where[1])):
                    if here != "g" and (name, key) not in copied:
                        copied.add((name, key))
                        op("H", "copy", [])
                        fresh = True
                op("R", "kernel", [last["H"] if fresh else None])
                fresh = False
            if pending is not None:
                slot_back[pending[0]] = op("D", "copy", [pending[1]])
            pending = (slot, last["R"]) if where[2] != "g" else None
    if pending is not None:
        op("D", "copy", [pending[1]])
    return ops


def simulate(ops, copy_in, copy_out, sl_in, sl_out, kernel, beside):
    queue = {lane: [i for i, o in enumerate(ops) if o[0] == lane] for lane in "HRD"}
    at, done, active, t = {lane: 0 for lane in "HRD"}, [False] * len(ops), {}, 0.0
    while True:
        for lane in "HRD":
            if lane not in active and at[lane] < len(queue[lane]):
                i = queue[lane][at[lane]]
                if all(done[d] for d in ops[i][2]):
                    active[lane] = [i, kernel if lane == "R" else copy_in if lane == "H" else copy_out]
                    at[lane] += 1
        if not active:
            return t
        rate = {}
        for lane in active:
            slow = 1.0
            if lane != "R":
                if ("D" if lane == "H" else "H") in active:
                    slow *= sl_in if lane == "H" else sl_out
                if "R" in active:
                    slow *= beside
            rate[lane] = 1.0 / slow
        dt = min(rem / rate[lane] for lane, (i, rem) in active.items())
        t += dt
        for lane in list(active):
            active[lane][1] -= dt * rate[lane]
            if active[lane][1] <= 1e-12:
                done[active[lane][0]] = True
                del active[lane]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel-slowdown", default="1.68,1.19", help="copies beside kernels at T = 2048, 4096")
    ap.add_argument("--no-2d", action="store_true", help="tile copies at the deployment's contiguous speed")
    args = ap.parse_args()
    beside = dict(zip((2048, 4096), (float(x) for x in args.kernel_slowdown.split(","))))
    two_d = {2048: 1.0, 4096: 1.0} if args.no_2d else {2048: 55.1 / 48.8, 4096: 55.4 / 55.2}
    links, kernels = read_profile(os.path.join(RUNS, "blas-profile.tsv"))
    (ti, tbi, sli), (to, tbo, slo) = links["h2d-pinned"], links["d2h-pinned"]
    runs = json.load(open(os.path.join(RUNS, "blas.json")))["rows"]
    errors = {"simulated": [], "without the two effects": [], "dr": []}
    for r in (r for r in runs if r["who"] == "grain" and "h" not in r["where"]):
        T, bytes_ = r["tile"], r["tile"] * r["tile"] * 8
        ops = schedule(r["where"], r["m"], r["n"], r["k"], T)
        full = simulate(ops, (ti + tbi * bytes_) * two_d[T], (to + tbo * bytes_) * two_d[T], sli, slo,
                        kernels["dgemm"][T], beside[T])
        plain = simulate(ops, ti + tbi * bytes_, to + tbo * bytes_, sli, slo, kernels["dgemm"][T], 1.0)
        s = r["seconds"]
        for name, p in (("simulated", full), ("without the two effects", plain), ("dr", r["models"]["dr"])):
            errors[name].append((p - s) / s)
        print(f"{r['where']} {r['m']}x{r['n']}x{r['k']} T={T}: measured {s:.4f} s, simulated {full:.4f} "
              f"({(full - s) / s:+.0%}), without the two effects {plain:.4f} ({(plain - s) / s:+.0%}), "
              f"dr {r['models']['dr']:.4f} ({(r['models']['dr'] - s) / s:+.0%})")
    for name, e in errors.items():
        inside = sum(-0.05 <= x <= 0.02 for x in e)
        print(f"{name:>24}: mean |error| {sum(map(abs, e)) / len(e):.1%}, mean {sum(e) / len(e):+.1%}, "
              f"worst {max(e, key=abs):+.1%}, within [-5%, +2%] {inside} of {len(e)}")


if __name__ == "__main__":
    main()
