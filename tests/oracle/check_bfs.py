#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""BFS parents against networkx, an oracle grain did not write, by Graph500's
rules for a parent array.

    check_bfs.py GRAPH -- COMMAND...

runs COMMAND (an mpirun line ending in build/bin/bfs, with its --root if
any) on GRAPH with --out.  On the input's undirected simple graph (edges both
ways, no self loops), networkx.single_source_shortest_path_length gives every
vertex's level; then the root must be its own parent, every other vertex
networkx reaches must have a parent that is its neighbour and one level
closer to the root, and the vertices networkx does not reach must have -1.
The root is the command's --root, else the first vertex."""
import sys

import networkx as nx

from oracle_common import networkx_graph, run_app, split_command

graph, command = split_command(sys.argv, __doc__)
g = nx.Graph(networkx_graph(graph).to_undirected())
g.remove_edges_from(list(nx.selfloop_edges(g)))
root = int(command[command.index("--root") + 1]) if "--root" in command else min(g.nodes)
ours = {v: int(float(x)) for v, x in run_app(command, graph).items()}
level = nx.single_source_shortest_path_length(g, root)
if set(ours) != set(g.nodes):
    sys.exit(f"FAILED: vertex ids differ: {len(ours)} written, the graph has {g.number_of_nodes()}")


def broken(v):
    p = ours[v]
    if v not in level:
        return None if p == -1 else "has a parent but networkx does not reach it"
    if v == root:
        return None if p == root else "is the root, whose parent must be itself"
    if p not in level or not g.has_edge(p, v):
        return "has a parent that is not its neighbour"
    return None if level[p] == level[v] - 1 else "has a parent that is not one level closer to the root"


wrong = [(v, why) for v in g.nodes if (why := broken(v)) is not None]
print(f"{graph}: from {root}, {len(level)} of {len(ours)} vertices reached, {len(wrong)} parents break the rules")
if wrong:
    v, why = wrong[0]
    sys.exit(f"FAILED: vertex {v} (parent {ours[v]}) {why}")
