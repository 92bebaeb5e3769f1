#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""random_graph.py OUT VERTICES EDGES SEED: a directed edge list with real
weights in [0, 1), from Python's own generator, for the weighted oracles."""
import random
import sys

out, n, m, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
with open(out, "w") as f:
    f.write(f"# {n} vertices, {m} random edges, seed {seed}\n")
    for _ in range(m):
        f.write(f"{rng.randrange(n)} {rng.randrange(n)} {rng.random()!r}\n")
