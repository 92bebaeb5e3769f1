#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""SSSP against networkx's Dijkstra, an oracle grain did not write.

    check_sssp.py GRAPH -- COMMAND...

runs COMMAND (an mpirun line ending in build/bin/sssp, with its --source if
any) on GRAPH with --out and requires every distance to equal
networkx.single_source_dijkstra_path_length's exactly, and "inf" exactly
where networkx finds no path.  The source is the command's --source, else
the first vertex."""
import sys

import networkx as nx

from oracle_common import networkx_graph, run_app, split_command

graph, command = split_command(sys.argv, __doc__)
g = networkx_graph(graph)
source = int(command[command.index("--source") + 1]) if "--source" in command else min(g.nodes)
ours = run_app(command, graph)
theirs = nx.single_source_dijkstra_path_length(g, source, weight="weight")
if set(ours) != set(g.nodes):
    sys.exit(f"FAILED: vertex ids differ: {len(ours)} written, the graph has {g.number_of_nodes()}")
wrong = [v for v in g.nodes
         if (ours[v] == "inf") != (v not in theirs) or (v in theirs and float(ours[v]) != theirs[v])]
print(f"{graph}: from {source}, {len(theirs)} of {len(ours)} vertices reached, {len(wrong)} distances differ")
if wrong:
    v = wrong[0]
    sys.exit(f"FAILED: vertex {v}: {ours[v]}, networkx {theirs.get(v, 'unreachable')}")
