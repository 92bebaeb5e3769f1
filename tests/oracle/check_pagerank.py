#!/usr/bin/python3
"""PageRank against networkx, an oracle grain did not write.

    check_pagerank.py GRAPH -- COMMAND...

runs COMMAND (an mpirun line ending in build/bin/pagerank) on GRAPH with
--out, reads GRAPH with scipy.io.mmread (.mtx) or networkx.read_edgelist,
and requires the L1 distance between the two rank vectors to be <= 1e-6 with
the same vertex ids.  Both run to a tolerance of 1e-12, networkx's own
convergence test, on the unweighted multigraph (parallel edges count)."""
import os
import subprocess
import sys
import tempfile

import networkx as nx


def networkx_graph(path):
    if path.endswith(".mtx"):
        import scipy.io
        a = scipy.io.mmread(path).tocoo()  # a symmetric file comes back with both triangles
        g = nx.MultiDiGraph()
        g.add_nodes_from(range(1, a.shape[0] + 1))  # Matrix Market ids start at 1
        g.add_edges_from(zip((int(i) + 1 for i in a.row), (int(j) + 1 for j in a.col)))
        return g
    g = nx.read_edgelist(path, nodetype=int, create_using=nx.MultiDiGraph, data=False, comments="#")
    g.add_nodes_from(range(max(g.nodes) + 1))  # ids with no edge are vertices too
    return g


def main():
    graph, sep, command = sys.argv[1], sys.argv[2], sys.argv[3:]
    assert sep == "--" and command, __doc__
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ranks.txt")
        run = command + ["--graph", graph, "--tolerance", "1e-12", "--max-iterations", "1000", "--out", out]
        subprocess.run(run, check=True)
        ours = {}
        for line in open(out):
            v, x = line.split()
            assert int(v) not in ours, f"vertex {v} written twice"
            ours[int(v)] = float(x)
    theirs = nx.pagerank(networkx_graph(graph), alpha=0.85, tol=1e-12, max_iter=1000, weight=None)
    if set(ours) != set(theirs):
        sys.exit(f"vertex ids differ: {len(ours)} written, networkx has {len(theirs)}")
    l1 = sum(abs(ours[v] - theirs[v]) for v in theirs)
    print(f"{graph}: {len(theirs)} vertices, L1 distance to networkx.pagerank {l1:.3g}, sum {sum(ours.values()):.15f}")
    if not l1 <= 1e-6:
        sys.exit("FAILED: L1 distance above 1e-6")


main()
