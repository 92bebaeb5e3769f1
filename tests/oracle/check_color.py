#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Graph coloring checked with networkx, an oracle grain did not write.

    check_color.py GRAPH -- COMMAND...

runs COMMAND (an mpirun line ending in build/bin/color) on GRAPH with --out
and requires a proper coloring of the simple undirected graph under GRAPH:
every vertex a color >= 0, no edge between two vertices of one color, and
at most max degree + 1 colors (what any greedy order guarantees).  Prints the
number of colors beside networkx.greedy_color(strategy="largest_first")'s."""
import sys

import networkx as nx

from oracle_common import networkx_graph, run_app, split_command

graph, command = split_command(sys.argv, __doc__)
g = nx.Graph(networkx_graph(graph).to_undirected())
g.remove_edges_from(list(nx.selfloop_edges(g)))
ours = {v: int(c) for v, c in run_app(command, graph).items()}
if set(ours) != set(g.nodes):
    sys.exit(f"FAILED: vertex ids differ: {len(ours)} written, the graph has {g.number_of_nodes()}")
bad = [(u, v) for u, v in g.edges if ours[u] == ours[v]]
negative = [v for v in ours if ours[v] < 0]
used = len(set(ours.values()))
bound = max((d for _, d in g.degree), default=0) + 1
theirs = len(set(nx.greedy_color(g, strategy="largest_first").values()))
print(f"{graph}: {used} colors (networkx greedy largest_first: {theirs}, bound {bound}), "
      f"{len(bad)} edges join one color, {len(negative)} vertices without a color")
if bad or negative or used > bound:
    sys.exit("FAILED: not a proper coloring within max degree + 1 colors")
