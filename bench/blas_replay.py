#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The tiled BLAS's models against runs that were stored, without the device they ran on.

blas_bench.py keeps every run of grain (blas.json) and the device's profile (blas-profile.tsv) under its --out.
This reads them back, has blas_replay (the models' own C code) predict every run again from that profile, and
reports, per model ("CoCoPeLia", figs. 4-6):
  - its error over the runs (predicted / measured - 1): mean of its magnitude, median of its magnitude, mean, worst,
    and how many runs fall within the paper's target, -5% to +2%; apart for runs with an operand in pageable memory
    (grain stages those) and runs without;
  - the tile it picks among the fixed tiles that ran, per problem (shape and placement), against the best of them;
  - where a run selected its own tile (tile 0), that tile's time against the best fixed tile's, and against the
    fixed tile each model picks.
A change to the models is so checked against every stored run in a second.  --stored takes the predictions the runs
made instead of replaying; --check compares the two and fails where they differ (the same code and profile must give
the same times); --selections gives the tile each model would select now, per problem; --sl replays as if a
link's bidirectional slowdown were another, and --kernels-from with another deployment's kernel times (the runs'
links and tile copies kept).  With --out, writes replay.json
and replay.png (predicted against measured, by model, and fig. 6: each model's pick, the fixed tile of 2048 and
the selected tile against the best fixed tile, per problem).

    bench/blas_replay.py DIR [DIR ...] [--profile FILE] [--bin build/bin] [--models dr,schedule] [--stored]
                         [--check] [--by-placement] [--selections] [--sl LINK=SL ...] [--kernels-from PROFILE]
                         [--out DIR]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

from driver import require_built


def load(d, profile):
    """The grain rows of d/blas.json and the profile they are replayed from."""
    with open(os.path.join(d, "blas.json")) as f:
        rows = [r for r in json.load(f)["rows"] if r.get("who") == "grain"]
    profile = profile or os.path.join(d, "blas-profile.tsv")
    if not os.path.exists(profile):
        sys.exit(f"blas_replay: {d} has no blas-profile.tsv; give the profile its runs used (--profile)")
    return rows, profile


def what_if(profile, overrides, kernels, tmp):
    """A copy of the profile whose links' sl are those of `overrides` ({link: sl}) and, with `kernels` (a profile's
    path), whose kernel lookups are that profile's for the same device and routine: for asking what-if."""
    with open(profile) as f:
        lines = f.read().splitlines()
    theirs = {}
    if kernels:
        with open(kernels) as f:
            for line in f:
                g = line.rstrip("\n").split("\t")
                if len(g) == 4 and g[1] == "kernel":
                    theirs[(g[0], g[2])] = line.rstrip("\n")
    seen, swapped = set(), 0
    for i, line in enumerate(lines):
        f = line.split("\t")
        if len(f) == 6 and f[1] == "link" and f[2] in overrides:
            f[5] = str(overrides[f[2]])
            lines[i] = "\t".join(f)
            seen.add(f[2])
        elif len(f) == 4 and f[1] == "kernel" and (f[0], f[2]) in theirs:
            lines[i] = theirs[(f[0], f[2])]
            swapped += 1
    if set(overrides) - seen:
        sys.exit(f"blas_replay: {profile} has no link {', '.join(sorted(set(overrides) - seen))}")
    if kernels and not swapped:
        sys.exit(f"blas_replay: {kernels} has no kernels of the devices and routines of {profile}")
    path = os.path.join(tmp, f"profile-{len(os.listdir(tmp))}.tsv")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def ask(binary, profile, device, queries):
    """blas_replay's answer to each (routine, m, n, k, where, tile): {model: seconds}, or with tile 0 {model: the
    tile it selects}."""
    lines = "".join(" ".join(map(str, q)) + "\n" for q in queries)
    out = subprocess.run([binary, profile, device], input=lines, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"blas_replay: {out.stderr.strip() or out.returncode}")
    answers = []
    for q, line in zip(queries, out.stdout.splitlines()):
        if line.startswith("error"):
            sys.exit(f"blas_replay: {q[0]} {q[1]}x{q[2]}x{q[3]} {q[4]} T {q[5]}: {line}")
        f = line.split()
        answers.append({f[i]: (int if q[5] == 0 else float)(f[i + 1]) for i in range(0, len(f), 2)})
    return answers


def problem(r):
    return (r["run"], r["routine"], r["m"], r["n"], r["k"], r["where"])


def by_problem(rows):
    """The rows of each problem: one run's shape and placement, its tiles' runs together."""
    problems = {}
    for r in rows:
        problems.setdefault(problem(r), []).append(r)
    return problems


def replay(binary, profile, rows, select):
    """Every model's time for each row, from blas_replay; rows of several devices go to one process each.  With
    `select`, each problem's rows also learn the tile each model selects now (r["selects"])."""
    for device in sorted({r["device"] for r in rows}):
        mine = [r for r in rows if r["device"] == device]
        for r, times in zip(mine, ask(binary, profile, device, [problem(r)[1:] + (r["tile"],) for r in mine])):
            r["replayed"] = times
        keys = sorted({problem(r) for r in mine}) if select else []
        picks = dict(zip(keys, ask(binary, profile, device, [k[1:] + (0,) for k in keys])))
        for r in mine:
            r["selects"] = picks.get(problem(r))


def errors(rows, model, key):
    e = [r[key][model] / r["seconds"] - 1 for r in rows]
    if not e:
        return None
    return {"runs": len(e), "mean_abs": statistics.mean(map(abs, e)), "median_abs": statistics.median(map(abs, e)),
            "mean": statistics.mean(e), "worst": max(e, key=abs), "within": sum(-0.05 <= x <= 0.02 for x in e)}


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def ranking(rows, model, key):
    """Per problem, the model's pick among the fixed tiles over the best fixed tile."""
    problems = by_problem(rows)
    ratios = []
    for runs in problems.values():
        fixed = [r for r in runs if r["tile_asked"]]
        if len(fixed) > 1:
            best = min(r["seconds"] for r in fixed)
            ratios.append(min(fixed, key=lambda r: r[key][model])["seconds"] / best)
    return ratios


def selected(rows, models, key):
    """Per problem with a selected tile, its time over the best fixed tile's, and over the fixed tile each model
    picks."""
    problems = by_problem(rows)
    best, picked = [], {m: [] for m in models}
    for runs in problems.values():
        fixed = [r for r in runs if r["tile_asked"]]
        sel = [r["seconds"] for r in runs if not r["tile_asked"]]
        if fixed and sel:
            best.append(sel[0] / min(r["seconds"] for r in fixed))
            for m in models:
                picked[m].append(sel[0] / min(fixed, key=lambda r: r[key][m])["seconds"])
    return best, picked


def selections(rows, models):
    """Per problem, the tile each model selects now; where a fixed tile of that size ran, its time over the best
    fixed tile's (else None)."""
    problems = by_problem(rows)
    out = {m: [] for m in models}
    for key, runs in sorted(problems.items()):
        fixed = {r["tile"]: r["seconds"] for r in runs if r["tile_asked"]}
        best = min(fixed.values()) if fixed else None
        line = []
        for m in models:
            tile = runs[0]["selects"][m]
            ratio = fixed[tile] / best if tile in fixed else None
            out[m].append({"problem": list(key[1:]), "tile": tile, "over_best": ratio})
            line.append(f"{m} T {tile}" + (f" ({ratio:.3f})" if ratio else " (not run)"))
        print(f"{key[1]} {key[2]}x{key[3]}x{key[4]} {key[5]}: selects " + ", ".join(line))
    for m in models:
        ran = [p["over_best"] for p in out[m] if p["over_best"] is not None]
        print(f"{m:>9}: selects a tile that ran in {len(ran)} of {len(out[m])} problems"
              + (f", within 2% of the best fixed tile in {sum(x <= 1.02 for x in ran)}, worst {max(ran):.3f}"
                 if ran else ""))
    return out


def plot(rows, models, key, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("blas_replay: no matplotlib (python3-matplotlib), no plot")
        return False
    fig, axes = plt.subplots(1, len(models) + 1, figsize=(4.5 * (len(models) + 1), 4.2), squeeze=False)
    for ax, model in zip(axes[0], models):
        for pageable, colour in ((False, "tab:blue"), (True, "tab:orange")):
            mine = [r for r in rows if ("h" in r["where"]) == pageable]
            ax.scatter([r["seconds"] for r in mine], [r[key][model] for r in mine], s=12, c=colour,
                       label="pageable" if pageable else "page-locked / heap")
        lo = min(r["seconds"] for r in rows) / 1.5
        hi = max(r["seconds"] for r in rows) * 1.5
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        ax.fill_between([lo, hi], [lo * 0.95, hi * 0.95], [lo * 1.02, hi * 1.02], color="0.85", label="-5% to +2%")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured (s)",
               ylabel="predicted (s)", title=model)
        ax.legend(fontsize=7)
    tiles(axes[0][-1], rows, models, key)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def tiles(ax, rows, models, key):
    """Fig. 6: per problem, the time of each model's pick among the fixed tiles, of the fixed tile of 2048 and of
    the tile the run selected, over the best fixed tile's; each sorted, so that a curve near 1 is a good pick."""
    curves = {m: ranking(rows, m, key) for m in models}
    fixed = [[r for r in runs if r["tile_asked"]] for runs in by_problem(rows).values()]
    curves["T = 2048"] = [next(r["seconds"] for r in f if r["tile"] == 2048) / min(r["seconds"] for r in f)
                          for f in fixed if any(r["tile"] == 2048 for r in f)]
    curves["selected"] = selected(rows, models, key)[0]
    for name, ratios in curves.items():
        if ratios:
            ax.plot(range(1, len(ratios) + 1), sorted(ratios), "o-" if name in models else "s--", ms=3, label=name)
    ax.axhline(1.02, color="0.6", lw=0.8, ls=":")
    ax.set(xlabel="problems, sorted", ylabel="time over the best fixed tile's", yscale="log",
           title="fig. 6: the tile picked against the best fixed one")
    ax.legend(fontsize=7)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", help="blas_bench.py --out directories")
    ap.add_argument("--profile", help="the profile the runs used, where their directory has none")
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--models", default="dr,dr-link,schedule")
    ap.add_argument("--stored", action="store_true", help="the runs' own predictions, not replayed")
    ap.add_argument("--check", action="store_true", help="fail where a replayed time differs from the stored one")
    ap.add_argument("--by-placement", action="store_true", help="each model's errors by placement too")
    ap.add_argument("--selections", action="store_true",
                    help="the tile each model selects now, per problem, and how the fixed tile that ran fared")
    ap.add_argument("--sl", action="append", default=[], metavar="LINK=SL",
                    help="replay as if the profile's link (h2d, d2h, h2d-pinned, d2h-pinned) had this sl")
    ap.add_argument("--kernels-from", metavar="PROFILE",
                    help="replay with this profile's kernel times for the same device (the runs' links and tile "
                         "copies kept)")
    ap.add_argument("--out")
    args = ap.parse_args()
    models = args.models.split(",")
    binary = os.path.join(args.bin, "blas_replay")
    if not args.stored:
        require_built("blas_replay", args.bin, ["blas_replay"])
    try:
        overrides = {k: float(v) for k, v in (o.split("=") for o in args.sl)}
    except ValueError:
        sys.exit(f"blas_replay: --sl {' '.join(args.sl)}: LINK=SL, SL a number")
    if (overrides or args.selections or args.kernels_from) and args.stored:
        sys.exit("blas_replay: --sl, --kernels-from and --selections replay; --stored does not")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, d in enumerate(args.dirs):
            mine, profile = load(d, args.profile)
            for r in mine:
                r["run"] = i  # a problem is one run's: tiles of two runs are not compared
            if not args.stored:
                changed = overrides or args.kernels_from
                replay(binary, what_if(profile, overrides, args.kernels_from, tmp) if changed else profile, mine,
                       args.selections)
            rows += mine
    if not rows:
        sys.exit("blas_replay: no runs of grain")
    key = "models" if args.stored else "replayed"
    unknown = [m for m in models if m not in rows[0][key]]
    if unknown:
        sys.exit(f"blas_replay: no model {', '.join(unknown)} (models: {', '.join(rows[0][key])})")
    bad = 0
    if args.check:
        for r in rows:
            for m, t in r["models"].items():
                # blas.json keeps microseconds, the profile 6 digits (a run that deployed predicted from all of them)
                if abs(r["replayed"][m] - t) > 1e-6 + 1e-4 * t:
                    print(f"blas_replay: {r['routine']} {r['m']}x{r['n']}x{r['k']} {r['where']} T {r['tile']}: {m} "
                          f"replayed {r['replayed'][m]:.6g} s, stored {t:.6g} s")
                    bad = 1
        print(f"blas_replay: {len(rows)} runs x {len(rows[0]['models'])} models replayed "
              f"{'with differences' if bad else 'as stored'}")
    summary = {"runs": len(rows), "source": "stored" if args.stored else "replayed", "models": {}}
    for m in models:
        s = summary["models"][m] = {}
        for kind, mine in (("page-locked", [r for r in rows if "h" not in r["where"]]),
                           ("pageable", [r for r in rows if "h" in r["where"]])):
            e = errors(mine, m, key)
            if e:
                s[kind] = e
                print(f"{m:>9}, {kind:>11}: mean |error| {e['mean_abs']:.1%}, median {e['median_abs']:.1%}, mean "
                      f"{e['mean']:+.1%}, worst {e['worst']:+.1%}, {e['within']} of {e['runs']} within -5% to +2%")
        for where in sorted({r["where"] for r in rows}) if args.by_placement else []:
            e = errors([r for r in rows if r["where"] == where], m, key)
            print(f"{m:>9}, {where:>11}: mean |error| {e['mean_abs']:.1%}, mean {e['mean']:+.1%}, worst "
                  f"{e['worst']:+.1%}, {e['within']} of {e['runs']} within -5% to +2%")
        ratios = ranking(rows, m, key)
        if ratios:
            s["pick_over_best"] = {"problems": len(ratios), "within_2pct": sum(x <= 1.02 for x in ratios),
                                   "worst": max(ratios), "geomean": geomean(ratios)}
            print(f"{m:>9}: its tile within 2% of the best fixed tile in {sum(x <= 1.02 for x in ratios)} of "
                  f"{len(ratios)} problems, worst {max(ratios):.3f}, geometric mean {geomean(ratios):.3f}")
    if args.selections:
        summary["selections"] = selections(rows, models)
    sel, picked = selected(rows, models, key)
    if sel:
        summary["selected_over_best"] = {"problems": len(sel), "geomean": geomean(sel), "best": min(sel),
                                         "worst": max(sel)}
        summary["selected_over_pick"] = {m: geomean(p) for m, p in picked.items()}
        print(f"the runs' selected tile over the best fixed tile: {geomean(sel):.3f} geometric mean "
              f"({min(sel):.3f} to {max(sel):.3f}) over {len(sel)} problems; over the fixed tile each model picks: "
              + ", ".join(f"{m} {geomean(p):.3f}" for m, p in picked.items()))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "replay.json"), "w") as f:
            json.dump(summary, f, indent=1)
        drawn = plot(rows, models, key, os.path.join(args.out, "replay.png"))
        print(f"blas_replay: wrote {args.out}/replay.json" + (" and replay.png" if drawn else ""))
    return bad


if __name__ == "__main__":
    sys.exit(main())
