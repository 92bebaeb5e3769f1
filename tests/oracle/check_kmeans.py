#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""k-means against scikit-learn, an oracle grain did not write.

    check_kmeans.py DATASET K -- COMMAND...

DATASET is iris, wine or digits (scikit-learn's copies of the UCI data) or
blobs:N,D,C,SEED (sklearn.datasets.make_blobs).  Writes the points to a
file, runs COMMAND (an mpirun line ending in build/bin/kmeans) with --points
FILE --k K, and compares with KMeans(init=X[:K], n_init=1, algorithm="lloyd",
tol=0), which like grain iterates from the first K points until no point
moves: every point's cluster must be the same, the centres within 1e-9
(relative), the inertia within 1e-9 (relative)."""
import os
import subprocess
import sys
import tempfile

import numpy as np
from sklearn import datasets
from sklearn.cluster import KMeans


def points(name):
    if name.startswith("blobs:"):
        n, d, c, seed = (int(v) for v in name[6:].split(","))
        return datasets.make_blobs(n_samples=n, n_features=d, centers=c, random_state=seed)[0]
    return {"iris": datasets.load_iris, "wine": datasets.load_wine, "digits": datasets.load_digits}[name]().data


if len(sys.argv) < 5 or sys.argv[3] != "--":
    sys.exit(__doc__)
name, k, command = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
x = np.asarray(points(name), dtype=np.float64)
with tempfile.TemporaryDirectory() as tmp:
    data, labels, centres = (os.path.join(tmp, f) for f in ("points.txt", "labels.txt", "centres.txt"))
    np.savetxt(data, x, fmt="%.17g")
    subprocess.run(command + ["--points", data, "--k", str(k), "--out", labels, "--centres-out", centres],
                   check=True)
    ours = dict(map(int, line.split()) for line in open(labels))
    our_centres = np.loadtxt(centres, ndmin=2)
km = KMeans(n_clusters=k, init=x[:k], n_init=1, algorithm="lloyd", tol=0, max_iter=300).fit(x)
if sorted(ours) != list(range(len(x))):
    sys.exit(f"FAILED: {len(ours)} points written, the data has {len(x)}")
moved = sum(ours[i] != km.labels_[i] for i in range(len(x)))
inertia = sum(float(np.sum((x[i] - our_centres[ours[i]]) ** 2)) for i in range(len(x)))
print(f"{name}: {len(x)} points, k={k}, {km.n_iter_} sklearn iterations, {moved} points in another cluster, "
      f"centres max difference {np.max(np.abs(our_centres - km.cluster_centers_)):.3g}, "
      f"inertia {inertia:.12g} vs {km.inertia_:.12g}")
if moved or not np.allclose(our_centres, km.cluster_centers_, rtol=1e-9, atol=1e-12) \
        or abs(inertia - km.inertia_) > 1e-9 * km.inertia_:
    sys.exit("FAILED")
