#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""How well each model ranks the tiles and predicts the times of a stored blas_bench run (blas.json).

For every problem (shape and placement): the tile each model predicts fastest among the fixed tiles that ran, and
its measured time over the best fixed tile's (CoCoPeLia fig. 6); each model's error over every run (figs. 4-5), apart
for runs with pageable operands; and, where the run has a selected tile (tile 0), its time against the fixed tile
dr picks (the selection before session 54).

    python3 rank.py <dir with blas.json> [--models dr,dr-link,schedule]
"""
import argparse
import collections
import json
import math
import os


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--models", default="dr,dr-link,schedule")
    args = ap.parse_args()
    models = args.models.split(",")
    with open(os.path.join(args.dir, "blas.json")) as f:
        rows = [r for r in json.load(f)["rows"] if r.get("who") == "grain"]
    problems = collections.defaultdict(list)
    for r in rows:
        problems[(r["m"], r["n"], r["k"], r["where"])].append(r)
    picks = collections.defaultdict(list)
    errors = collections.defaultdict(list)
    gains, against_best = [], []
    for key, runs in problems.items():
        fixed = [r for r in runs if r["tile_asked"]]
        best = min(fixed, key=lambda r: r["seconds"])
        for m in models:
            pick = min(fixed, key=lambda r: r["models"][m])
            picks[m].append(pick["seconds"] / best["seconds"])
        for r in runs:
            for m in models:
                errors[(m, "h" in key[3])].append(r["models"][m] / r["seconds"] - 1)
        sel = next((r for r in runs if r["tile_asked"] == 0), None)
        dr = min(fixed, key=lambda r: r["models"]["dr"])
        if sel is not None:
            gains.append(dr["seconds"] / sel["seconds"])
            against_best.append(sel["seconds"] / best["seconds"])
            print(f"{key[0]}x{key[1]}x{key[2]} {key[3]}: selected T {sel['tile']} {sel['seconds']:.4f} s, best fixed "
                  f"T {best['tile']} {best['seconds']:.4f} s, dr's fixed T {dr['tile']} {dr['seconds']:.4f} s")
    for m in models:
        p = picks[m]
        print(f"{m:>9}: its tile within 2% of the best fixed tile in {sum(x <= 1.02 for x in p)} of {len(p)} "
              f"problems, worst {max(p):.3f}, geometric mean {math.exp(sum(map(math.log, p)) / len(p)):.3f}")
    for (m, pageable), e in sorted(errors.items()):
        within = sum(-0.05 <= x <= 0.02 for x in e)
        print(f"{m:>9}, {'pageable' if pageable else 'page-locked':>11}: mean |error| "
              f"{sum(map(abs, e)) / len(e):.1%}, mean {sum(e) / len(e):+.1%}, worst {max(e, key=abs):+.1%}, "
              f"{within} of {len(e)} within -5% to +2%")
    if gains:
        print(f"selected tile's time over the best fixed tile's: "
              f"{math.exp(sum(map(math.log, against_best)) / len(against_best)):.3f} geometric mean "
              f"({min(against_best):.3f} to {max(against_best):.3f}), within 2% in "
              f"{sum(x <= 1.02 for x in against_best)} of {len(against_best)}")
        print(f"selected tile against dr's fixed tile: {math.exp(sum(map(math.log, gains)) / len(gains)):.3f} "
              f"geometric mean ({min(gains):.3f} to {max(gains):.3f}) over {len(gains)} problems")


if __name__ == "__main__":
    main()
