#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Random combinations of grain's settings, each run for real.

Every setting of services/config_vars.h is drawn over its whole range (a
number log-uniformly between its minimum and maximum, a word from the values
it takes) or left at its default, and shmem_all or gups --verify runs with
the combination on 1 to 4 ranks under a time limit.  Each run must be exact
(exit 0: both programs check every value) or refused at start-up with one
sentence (grain_init, grain_program_create or the first grain_launch
failing, exit 2).  A hang, a crash, a wrong value or a refusal with no
sentence fails the sweep, which prints the command that replays the run.

    tests/settings_sweep.py --build build --runs 8 --seed 1     (CI)
    tests/settings_sweep.py --build build --runs 500            (a long sweep)
"""
import argparse
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The words each STR setting takes, a wrong one where it names something on
# the machine.  A STR setting missing here stops the sweep: a new setting
# must say what to draw.
WORDS = {
    "backend": ["auto", "opencl", "cuda", "hip"],
    "transport": ["auto", "mpi", "self", "verbs", "verbs,mpi"],
    "ib_device": ["", "no_such_device0"],
    "ib_gid_index": ["auto", "0", "3"],
    "ib_opcode": ["write_imm", "send"],
    "queue": ["ring", "paper"],
    "aggregation": ["gpu", "wg", "none"],
    "apply": ["auto", "device", "host"],
    "apply_agent": ["auto", "off", "0", "4", "32"],
    "peer": ["auto", "off"],
    "mpi_threads": ["auto", "multiple", "serialized"],
    "mpi_buffers": ["auto", "put", "send", "rdma"],
    "transfer_agent": ["auto", "bulk", "host", "device", "launch", "inline", "ideal"],
    "transfer_profile": ["", "none"],
    "log_level": ["error", "warn", "info"],
    "opencl_platform": ["", "0", "Portable", "no such platform"],
    "opencl_device": ["", "0", "no such device"],
    "gpu_device": ["", "0", "7"],
    "reserve": ["wg", "sg", "wi"],
    "sched": ["async", "sync", "serial", "eager"],
    "sched_memory": ["replicas", "managed", "unified"],
    "sched_profile": ["", "none"],
    "blas_profile": ["", "none"],
    "blas_kernels": ["auto", "grain", "vendor", "fast"],
    "blas_stage": ["auto", "on", "off", "pinned"],
    "blas_model": ["auto", "schedule", "dr", "bts", "eq9"],
    # Read only for sources that include grain's headers; the app's are embedded.
    "include_dir": ["", "/no/such/include"],
}

# A refusal names the call that refused (check_ok.h, app_check): start-up,
# or the launch of a kernel whose fixed work-group the settings cannot take.
REFUSAL = re.compile(r"grain_(init|program_create|launch)\b[^\n]*(failed|: )")


def settings(path):
    text = open(path).read()
    pattern = re.compile(r'X\((\w+),\s*(\w+),\s*(STR|UINT|SIZE|BOOL),\s*"([^"]*)",\s*([^,]+?),\s*([^,]+?),')
    out = []
    for field, env, kind, default, lo, hi in pattern.findall(text):
        num = lambda e: eval(re.sub(r"(\d+)u?l*l*", r"\1", e.strip()))  # "1ull << 40"
        out.append({"field": field, "env": "GRAIN_" + env, "kind": kind, "default": default,
                    "lo": num(lo), "hi": num(hi)})
    if len(out) < 30:
        sys.exit("settings_sweep: read only %d settings from %s" % (len(out), path))
    return out


def draw_number(rng, lo, hi):
    """Log-uniform over [lo, hi], the ends themselves one time in five."""
    r = rng.random()
    if r < 0.1:
        return lo
    if r < 0.2:
        return hi
    a, b = math.log(max(lo, 1)), math.log(hi)
    return max(lo, min(hi, int(round(math.exp(rng.uniform(a, b))))))


def size_text(rng, v):
    for suffix, unit in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v % unit == 0 and rng.random() < 0.5:
            return "%d%s" % (v // unit, suffix)
    return str(v)


def draw(rng, table, keep):
    env = {}
    for s in table:
        if rng.random() < keep:
            continue
        if s["kind"] == "STR":
            if s["field"] not in WORDS:
                sys.exit("settings_sweep: no words to draw for %s (a STR setting): add them" % s["env"])
            env[s["env"]] = rng.choice(WORDS[s["field"]])
        elif s["kind"] == "BOOL":
            env[s["env"]] = rng.choice(["0", "1"])
        else:
            v = draw_number(rng, s["lo"], s["hi"])
            env[s["env"]] = size_text(rng, v) if s["kind"] == "SIZE" else str(v)
    return env


def command(rng, build, mpirun, ranks):
    app = rng.choice(["shmem_all", "gups"])
    argv = [os.path.join(build, "bin", app)]
    if app == "gups":
        argv += ["--log2-table", str(rng.choice([8, 12, 14])), "--verify"]
    if ranks == 1 and rng.random() < 0.5:
        return argv
    return [mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(ranks)] + argv


def run(cmd, env, timeout):
    full = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_btl_vader_single_copy_mechanism="none")
    for k in [k for k in full if k.startswith("GRAIN_")]:
        del full[k]
    full.update(env)
    if cmd[0].endswith("mpirun"):  # mpirun forwards only what it is told
        cmd = cmd[:1] + sum((["-x", k] for k in sorted(env)), []) + cmd[1:]
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode(errors="replace"), time.monotonic() - start
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out.decode(errors="replace"), time.monotonic() - start


def verdict(rc, out):
    if rc == 0:
        return "exact", None
    if rc is None:
        return "FAILED", "did not end within the time limit"
    if rc == 2 and REFUSAL.search(out):
        line = REFUSAL.search(out)
        sentence = out[line.start():out.find("\n", line.start())]
        if "()" in sentence or sentence.rstrip().endswith("(null)"):
            return "FAILED", "refused without a sentence"
        return "refused", sentence[:200]
    return "FAILED", "exit status %s" % rc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--seed", type=int, default=None, help="default: from the clock (printed)")
    ap.add_argument("--max-ranks", type=int, default=4)
    ap.add_argument("--keep", type=float, default=0.8, help="chance that a setting keeps its default")
    ap.add_argument("--timeout", type=float, default=180, help="seconds a run may take")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        sys.exit("settings_sweep: no mpirun")
    table = settings(os.path.join(ROOT, "services", "config_vars.h"))
    print("settings_sweep: seed %d, %d runs over %d settings (replay: --seed %d)" % (seed, a.runs, len(table), seed),
          flush=True)
    failed = 0
    tally = {"exact": 0, "refused": 0, "FAILED": 0}
    for i in range(a.runs):
        rng = random.Random("%d/%d" % (seed, i))
        env = draw(rng, table, a.keep)
        ranks = rng.randint(1, a.max_ranks)
        cmd = command(rng, a.build, mpirun, ranks)
        rc, out, secs = run(cmd, env, a.timeout)
        kind, why = verdict(rc, out)
        tally[kind] += 1
        replay = " ".join("%s='%s'" % kv for kv in sorted(env.items())) + " " + " ".join(cmd)
        print("[%d/%d] %s in %.1f s%s: %s" % (i + 1, a.runs, kind, secs, "" if why is None else " (%s)" % why, replay),
              flush=True)
        if kind == "FAILED":
            failed += 1
            print("  its output, last lines:\n    " + "\n    ".join(out.strip().splitlines()[-15:]), flush=True)
    print("settings_sweep: seed %d: %d exact, %d refused with a sentence, %d failed" %
          (seed, tally["exact"], tally["refused"], tally["FAILED"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
