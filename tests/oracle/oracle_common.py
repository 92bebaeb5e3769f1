# SPDX-License-Identifier: BSD-3-Clause
"""What the oracle checks share: reading a test graph with tools grain did not
write (scipy.io.mmread for Matrix Market, networkx.read_edgelist otherwise),
and running an app with --out to read back one value per vertex."""
import os
import subprocess
import sys
import tempfile

import networkx as nx


def networkx_graph(path):
    """The graph as a networkx MultiDiGraph with the input's vertex ids and a
    'weight' on every edge (1 where the file gives none)."""
    g = nx.MultiDiGraph()
    if path.endswith(".mtx"):
        import scipy.io
        a = scipy.io.mmread(path).tocoo()  # a symmetric file comes back with both triangles
        g.add_nodes_from(range(1, a.shape[0] + 1))  # Matrix Market ids start at 1
        g.add_weighted_edges_from(zip((int(i) + 1 for i in a.row), (int(j) + 1 for j in a.col),
                                      (float(x) for x in a.data)))
        return g
    lines = [l.split() for l in open(path) if l.strip() and l.split()[0][0] not in "#%"]
    weighted = nx.read_edgelist(path, nodetype=int, create_using=nx.MultiDiGraph, comments="#",
                                data=(("weight", float),) if lines and len(lines[0]) == 3 else False)
    g.add_nodes_from(range(max(weighted.nodes) + 1))  # ids with no edge are vertices too
    for u, v, w in weighted.edges(data="weight", default=1.0):
        g.add_edge(u, v, weight=w)
    return g


def run_app(command, graph, *options):
    """Runs COMMAND --graph GRAPH OPTIONS --out FILE; returns {vertex id: value text}."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "values.txt")
        subprocess.run(command + ["--graph", graph, *options, "--out", out], check=True)
        values = {}
        for line in open(out):
            v, x = line.split()
            if int(v) in values:
                sys.exit(f"FAILED: vertex {v} written twice")
            values[int(v)] = x
    return values


def split_command(argv, doc):
    """GRAPH -- COMMAND... from the command line."""
    if len(argv) < 4 or argv[2] != "--":
        sys.exit(doc)
    return argv[1], argv[3:]
