#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The tiled BLAS against scipy.linalg.blas, an oracle grain did not write.

    check_blas.py -- COMMAND...

Runs COMMAND (an mpirun line ending in build/bin/blas_cases) with a
directory, then recomputes every case from its operands with scipy's own
dgemm, sgemm, daxpy and saxpy: integer data must match bit for bit, real
data within K eps |alpha| |A| |B| + eps |beta C| (the rounding of sums in
another order); the rows past m in C's leading dimension, and the elements
between an increment's, must be as they were."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.linalg import blas


def matrix(flat, ld, rows, cols):
    """The rows x cols matrix of a column-major buffer, ld apart."""
    return flat[:ld * cols].reshape(cols, ld).T[:rows, :] if cols else np.zeros((rows, 0), flat.dtype)


def check_gemm(c, raw):
    dt = np.float32 if c["routine"] == "sgemm" else np.float64
    ta, tb = c["ta"] in "TtCc", c["tb"] in "TtCc"
    m, n, k = c["m"], c["n"], c["k"]
    a_rows, a_cols = (k, m) if ta else (m, k)
    b_rows, b_cols = (n, k) if tb else (k, n)
    na, nb, nc = c["lda"] * a_cols, c["ldb"] * b_cols, c["ldc"] * n
    data = np.frombuffer(raw, dtype=dt)
    if data.size != na + nb + 2 * nc:
        return "the file holds %d elements, not %d" % (data.size, na + nb + 2 * nc)
    a = matrix(data[:na], c["lda"], a_rows, a_cols)
    b = matrix(data[na:na + nb], c["ldb"], b_rows, b_cols)
    before = data[na + nb:na + nb + nc]
    after = data[na + nb + nc:]
    c0, c1 = matrix(before, c["ldc"], m, n), matrix(after, c["ldc"], m, n)
    gemm = blas.sgemm if dt == np.float32 else blas.dgemm
    c_in = np.asfortranarray(np.nan_to_num(c0) if c["beta"] == 0 else c0.copy())
    want = gemm(c["alpha"], a, b, c["beta"], c_in, trans_a=int(ta), trans_b=int(tb)) if k and c["alpha"] else \
        (c["beta"] * c0 if c["beta"] else np.zeros_like(c0))
    pad_b = before.reshape(n, c["ldc"])[:, m:] if n else before[:0]
    pad_a = after.reshape(n, c["ldc"])[:, m:] if n else after[:0]
    if not np.array_equal(pad_a, pad_b, equal_nan=True):
        return "rows past m in C's leading dimension changed"
    if c["integer"]:
        if not np.array_equal(c1, want):
            bad = np.argwhere(c1 != want)[0]
            return "C%s = %r, scipy %r" % (tuple(bad), c1[tuple(bad)], want[tuple(bad)])
        return None
    eps = np.finfo(dt).eps
    bound = (max(k, 1) * eps * abs(c["alpha"]) * (np.abs(a.T if ta else a) @ np.abs(b.T if tb else b)) +
             eps * abs(c["beta"]) * np.abs(np.nan_to_num(c0)) + np.finfo(dt).tiny) * 4
    err = np.abs(c1.astype(np.float64) - want)
    if not np.all(err <= bound):
        bad = np.argwhere(err > bound)[0]
        return "C%s = %r, scipy %r, off by %g past %g" % (tuple(bad), c1[tuple(bad)], want[tuple(bad)],
                                                          err[tuple(bad)], bound[tuple(bad)])
    return None


def check_axpy(c, raw):
    dt = np.float32 if c["routine"] == "saxpy" else np.float64
    n, incx, incy = c["n"], c["incx"], c["incy"]
    nx, ny = (n - 1) * incx + 1, (n - 1) * incy + 1
    data = np.frombuffer(raw, dtype=dt)
    if data.size != nx + 2 * ny:
        return "the file holds %d elements, not %d" % (data.size, nx + 2 * ny)
    x, before, after = data[:nx], data[nx:nx + ny], data[nx + ny:]
    axpy = blas.saxpy if dt == np.float32 else blas.daxpy
    want = axpy(x.copy(), before.copy(), n=n, a=c["alpha"], incx=incx, incy=incy)
    skipped = np.ones(ny, bool)
    skipped[::incy] = False
    if not np.array_equal(after[skipped], before[skipped]):
        return "elements between the increments changed"
    # One multiply and one add each: a rounding or two apart from scipy's, with or without a fused multiply-add.
    xs, yb, ya, w = x[::incx][:n], before[::incy][:n], after[::incy][:n], want[::incy][:n]
    err = np.abs(ya.astype(np.float64) - w)
    bound = 2 * np.finfo(dt).eps * (np.abs(c["alpha"] * xs.astype(np.float64)) + np.abs(yb)) + np.finfo(dt).tiny
    if not np.all(err <= bound):
        i = int(np.argmax(err - bound))
        return "y[%d] = %r, scipy %r" % (i * incy, ya[i], w[i])
    return None


def main():
    if "--" not in sys.argv:
        sys.exit(__doc__)
    cmd = sys.argv[sys.argv.index("--") + 1:]
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(cmd + [tmp], capture_output=True, text=True)
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            sys.exit("check_blas: the program failed (%d)" % run.returncode)
        failed = 0
        cases = [json.loads(line) for line in open(os.path.join(tmp, "cases.jsonl"))]
        for c in cases:
            raw = open(os.path.join(tmp, c["file"]), "rb").read()
            why = check_gemm(c, raw) if c["routine"].endswith("gemm") else check_axpy(c, raw)
            shape = ("%s%s %dx%dx%d" % (c["ta"], c["tb"], c["m"], c["n"], c["k"]) if "m" in c
                     else "n %d, inc %d/%d" % (c["n"], c["incx"], c["incy"]))
            print("check_blas: case %d, %s %s, tile %d, operands %s: %s"
                  % (c["case"], c["routine"], shape, c["tile"], c["where"], why or "ok"))
            failed += why is not None
    if failed:
        sys.exit("check_blas: %d of %d cases differ from scipy" % (failed, len(cases)))
    print("check_blas: %d cases equal scipy's: ok" % len(cases))


if __name__ == "__main__":
    main()
