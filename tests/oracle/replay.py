#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Lets the oracle checks judge outputs made on another machine, such as a GPU
machine without networkx, scikit-learn or jellyfish.

  replay.py record DIR TAG -- COMMAND... :: OPTIONS...
      runs COMMAND OPTIONS, where each output path (after --out or
      --centres-out) is written "@", and keeps the outputs in DIR;
  replay.py play DIR TAG OPTIONS...
      stands in for the app in a check script: copies the outputs kept for
      TAG and OPTIONS to OPTIONS' output paths.

Runs are told apart by TAG (say, the app and rank count) and OPTIONS without
the output paths, an input file by its content, so the checks must pass the
options in the order they were recorded in.  On the GPU machine:
  replay.py record out/ sssp.np2 -- mpirun -np 2 build/bin/sssp :: --source 34 --graph karate.mtx --out @
and here, with the outputs copied back:
  check_sssp.py karate.mtx -- replay.py play out/ sssp.np2 --source 34"""
import hashlib, os, shutil, subprocess, sys
OUTS = ("--out", "--centres-out")

def key(tag, extra):
    parts, skip = [tag], False
    for a in extra:
        if skip:
            skip = False
            continue
        if a in OUTS:
            skip = True
            continue
        parts.append(hashlib.md5(open(a, "rb").read()).hexdigest() if os.path.isfile(a) else a)
    return hashlib.md5(" ".join(parts).encode()).hexdigest()

def outs(extra):
    return [(o, extra[extra.index(o) + 1]) for o in OUTS if o in extra]

mode, d, tag = sys.argv[1:4]
rest = sys.argv[4:]
if mode == "record":
    cmd = rest[rest.index("--") + 1:]
    i = cmd.index("::")
    cmd, extra = cmd[:i], cmd[i + 1:]
    k = key(tag, extra)
    os.makedirs(d, exist_ok=True)
    full = [os.path.join(d, k + prev) if a == "@" else a for a, prev in zip(extra, [""] + extra[:-1])]
    r = subprocess.run(cmd + full)
    print(tag, " ".join(os.path.basename(a) for a in extra), "rc", r.returncode, flush=True)
    sys.exit(r.returncode)
k = key(tag, rest)
for o, path in outs(rest):
    shutil.copy(os.path.join(d, k + o), path)
