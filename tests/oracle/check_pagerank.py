#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""PageRank against networkx, an oracle grain did not write.

    check_pagerank.py GRAPH -- COMMAND...

runs COMMAND (an mpirun line ending in build/bin/pagerank) on GRAPH with
--out and requires the L1 distance to networkx.pagerank to be <= 1e-6 with
the same vertex ids.  Both run to a tolerance of 1e-12, networkx's own
convergence test, on the unweighted multigraph (parallel edges count)."""
import sys

import networkx as nx

from oracle_common import networkx_graph, run_app, split_command

graph, command = split_command(sys.argv, __doc__)
ours = {v: float(x) for v, x in run_app(command, graph, "--tolerance", "1e-12", "--max-iterations", "1000").items()}
theirs = nx.pagerank(networkx_graph(graph), alpha=0.85, tol=1e-12, max_iter=1000, weight=None)
if set(ours) != set(theirs):
    sys.exit(f"FAILED: vertex ids differ: {len(ours)} written, networkx has {len(theirs)}")
l1 = sum(abs(ours[v] - theirs[v]) for v in theirs)
print(f"{graph}: {len(theirs)} vertices, L1 distance to networkx.pagerank {l1:.3g}, sum {sum(ours.values()):.15f}")
if not l1 <= 1e-6:
    sys.exit("FAILED: L1 distance above 1e-6")
