#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The scheduler's exported graph against the program it ran, with networkx.

    check_sched_dot.py -- COMMAND...

Runs COMMAND (an mpirun line of one rank ending in build/bin/sched_oracle)
with --dot FILE and --trace FILE, then checks the DOT: one node per element
of the trace, acyclic, every edge from an earlier element to a later one,
every node with its device and stream, and every pair of elements that
conflict (one writes an array the other uses) ordered by a path, which is
what running the program in order needs, unless the earlier was done before
the later was placed (the nodes' placed and done ticks say so: the graph
then leaves the dependency out).  Pairs that only read an array
must not be ordered through that array alone: an edge between two elements
that share no conflicting array is reported."""
import os
import re
import subprocess
import sys
import tempfile

import networkx as nx


def main():
    if "--" not in sys.argv:
        sys.exit(__doc__)
    cmd = sys.argv[sys.argv.index("--") + 1:]
    with tempfile.TemporaryDirectory() as tmp:
        dot, trace = os.path.join(tmp, "g.dot"), os.path.join(tmp, "trace.txt")
        run = subprocess.run(cmd + ["--dot", dot, "--trace", trace], capture_output=True, text=True)
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            sys.exit("check_sched_dot: the program failed (%d)" % run.returncode)
        text = open(dot).read()
        uses = []
        for line in open(trace):
            words = line.split()
            access = {}
            for w in words[1:]:
                a, how = w.split(":")
                access[int(a)] = access.get(int(a), "") + how
            uses.append({a: "w" in how for a, how in access.items()})
    g = nx.DiGraph()
    nodes = re.findall(r'^\s*e(\d+) \[label="[^"]*", device=(-?\d+), stream=(\d+), bytes=(\d+), '
                       r'placed=(\d+), done=(\d+)', text, re.M)
    for n, device, stream, _, placed, done in nodes:
        g.add_node(int(n), device=int(device), stream=int(stream), placed=int(placed), done=int(done))
    g.add_edges_from((int(a), int(b)) for a, b in re.findall(r"^\s*e(\d+) -> e(\d+);", text, re.M))
    problems = []
    if g.number_of_nodes() != len(uses):
        problems.append("%d nodes for %d elements" % (g.number_of_nodes(), len(uses)))
    if not nx.is_directed_acyclic_graph(g):
        problems.append("the graph has a cycle")
    for a, b in g.edges:
        if a >= b:
            problems.append("edge e%d -> e%d points back" % (a, b))
        elif not any(x in uses[b] and (uses[a][x] or uses[b][x]) for x in uses[a]):
            problems.append("edge e%d -> e%d joins elements with no conflicting array" % (a, b))
    later = {n: nx.descendants(g, n) for n in g.nodes}
    conflicts = retired = 0
    for j in range(len(uses)):
        for i in range(j):
            if any(x in uses[j] and (uses[i][x] or uses[j][x]) for x in uses[i]):
                conflicts += 1
                if j in later.get(i, ()):
                    continue
                done, placed = g.nodes[i].get("done", 0), g.nodes[j].get("placed", 0)
                if 0 < done < placed:
                    retired += 1
                else:
                    problems.append("e%d and e%d conflict but no path orders them" % (i, j))
    for p in problems[:10]:
        print("check_sched_dot: " + p)
    if problems:
        sys.exit("check_sched_dot: %d problems" % len(problems))
    print("check_sched_dot: %d elements, %d edges, %d conflicting pairs all ordered (%d by an element done "
          "before the other was placed): ok" % (len(uses), g.number_of_edges(), conflicts, retired))


if __name__ == "__main__":
    main()
