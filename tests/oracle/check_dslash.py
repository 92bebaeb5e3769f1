#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""dslash's solution against numpy, an oracle grain did not write.

    check_dslash.py X,Y,Z,T MASS SEED -- COMMAND...

Runs COMMAND (an mpirun line ending in build/bin/dslash) with --lattice,
--mass, --seed, --tol 1e-11 and --out FILE, then builds the same links and
source (the SplitMix64 draws of graphapps/dslash/lattice.c), the hopping
operator D with numpy's rolls along each axis, A = m^2 - D^2, and solves
A x = b with numpy's own conjugate gradient: grain's x must satisfy
|b - A x| / |b| <= 1e-9 and equal numpy's to 1e-8 (relative)."""
import os
import subprocess
import sys
import tempfile

import numpy as np

M64 = (1 << 64) - 1


def draws(seed, stream, count):
    """lattice.c's draw(seed, stream, i) for i < count, in [-1, 1)."""
    i = np.arange(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.uint64((stream * 0x9E3779B97F4A7C15) & M64) + i * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 * 2.0 - 1.0


def fields(dims, seed):
    """Links U[mu] (T, Z, Y, X, 3, 3) and the source b (T, Z, Y, X, 3), complex."""
    x, y, z, t = dims
    volume = x * y * z * t
    raw = 0.25 * draws(seed, 1, volume * 4 * 18).reshape(t, z, y, x, 4, 3, 3, 2)
    links = raw[..., 0] + 1j * raw[..., 1]
    src = draws(seed, 2, volume * 6).reshape(t, z, y, x, 3, 2)
    return [links[..., mu, :, :] for mu in range(4)], src[..., 0] + 1j * src[..., 1]


AXIS = {0: 3, 1: 2, 2: 1, 3: 0}  # mu = x, y, z, t: the array's axes run t, z, y, x


def dslash(links, psi):
    out = np.zeros_like(psi)
    for mu, u in enumerate(links):
        ax = AXIS[mu]
        fwd = np.roll(psi, -1, axis=ax)                     # psi(s + mu)
        back_u = np.roll(u, 1, axis=ax).conj().swapaxes(-1, -2)  # U_mu(s - mu)^+
        out += np.einsum("...ij,...j->...i", u, fwd)
        out -= np.einsum("...ij,...j->...i", back_u, np.roll(psi, 1, axis=ax))
    return 0.5 * out


def normal(links, mass, psi):
    return mass * mass * psi - dslash(links, dslash(links, psi))


def cg(links, mass, b, tol=1e-13, most=5000):
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = np.vdot(r, r).real
    bb = rr
    for _ in range(most):
        ap = normal(links, mass, p)
        alpha = rr / np.vdot(p, ap).real
        x += alpha * p
        r -= alpha * ap
        new = np.vdot(r, r).real
        if np.sqrt(new / bb) <= tol:
            break
        p = r + (new / rr) * p
        rr = new
    return x


if len(sys.argv) < 6 or sys.argv[4] != "--":
    sys.exit(__doc__)
dims = [int(v) for v in sys.argv[1].split(",")]
mass, seed, command = float(sys.argv[2]), int(sys.argv[3]), sys.argv[5:]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "x.txt")
    subprocess.run(command + ["--lattice", sys.argv[1], "--mass", str(mass), "--seed", str(seed), "--tol", "1e-11",
                              "--dslash-reps", "0", "--out", out], check=True)
    rows = np.loadtxt(out, ndmin=2)
volume = dims[0] * dims[1] * dims[2] * dims[3]
if rows.shape != (volume, 7) or not np.array_equal(rows[:, 0], np.arange(volume)):
    sys.exit(f"FAILED: {rows.shape[0]} sites written, the lattice has {volume}")
ours = (rows[:, 1::2] + 1j * rows[:, 2::2]).reshape(dims[3], dims[2], dims[1], dims[0], 3)
links, b = fields(dims, seed)
residual = np.linalg.norm(b - normal(links, mass, ours)) / np.linalg.norm(b)
theirs = cg(links, mass, b)
diff = np.linalg.norm(ours - theirs) / np.linalg.norm(theirs)
print(f"{sys.argv[1]} lattice, m = {mass}: |b - A x| / |b| = {residual:.3g} with numpy's A, "
      f"|x - x_numpy| / |x_numpy| = {diff:.3g}")
if not residual <= 1e-9 or not diff <= 1e-8:
    sys.exit("FAILED")
