#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""grain's tiled gemm on operands in the host's pageable memory, or some in
grain's heap (blas_bench), against the baseline measured in the same run on the same shapes and
memory: cuBLASXt on the GPU grain runs on where libcublas loads (its best
of its default block, each of --xt-blocks, and the fastest of those with
its own pinning of the operands' pages), else the host's own BLAS
(numpy's).  "CoCoPeLia: Communication-Computation Overlap Prediction for
Efficient Linear Algebra on GPUs" (figs. 4-7) sets its tiles against
cuBLASXt's on data that starts on the host; here C = A B + C, by default
all three on the host.

For each shape: grain with the tile it selects from the device's profile
(tile 0; --deploy measures the profile first, kept under --out, and the
deployment's time and links are reported, table II), and with each fixed
tile of --tiles (GFLOP/s by tile: fig. 1); the baseline's time; the ratio
baseline / grain (above 1: grain is faster) of grain's selected tile and of
its best; the model's predicted time of the selected tile against the
measured one, and every model's error over every run of grain (figs. 4-6).
--routine daxpy or saxpy times y = x + y on vectors of N elements instead,
beside cuBLAS's axpy on CUDA managed memory, whose pages are prefetched to
the GPU and y's back (the paper's axpy baseline), else numpy's y += x.

--where puts operands in grain's heap (g) or in page-locked host memory
(p, grain_mem_alloc) instead of the host's pageable memory (h): a letter
an operand, A B C (axpy x y), a set a comma, "all" for every set of h
and g but all-g, or "all-pinned" for every set of p and g but all-g (the
paper's host operands are page-locked).  The baseline then takes g from
device memory (cuBLASXt), or prefetched there beforehand (managed
memory), and p from the host's memory registered with CUDA (cuBLASXt;
managed memory has no such place, so p is h there); numpy takes the
host's.  Sets without g are full offload, any other set partial (table
IV: the geometric mean of baseline / grain over each kind).  The models'
errors are given apart for sets with pageable operands (staged) and
without.
Every grain call checks 64 entries of its output against the host's sums.
Writes <out>/blas.csv and blas.json after each problem, and blas.png at the end.

  bench/blas_bench.py [--bin build/bin] [--routine dgemm|sgemm|daxpy|saxpy] [--shapes MxNxK,... | N,...]
                      [--tiles 1024,2048,4096]
                      [--reps 5] [--deploy] [--xt-blocks 1024,1536,...,8192] [--where hhh,ghh,pph,...|all|all-pinned]
                      [--no-xt | --no-baseline] [--tiny] [--out bench-results/blas]
                      [--mpirun "mpirun ..."] [--timeout 900]
  bench/blas_bench.py --replot [--out DIR]
  bench/blas_bench.py [--routine ...] --merge DIR,DIR,... --out DIR"""
import argparse
import csv
import ctypes
import glob
import itertools
import json
import math
import os
import shlex
import shutil
import statistics
import sys
import time

from driver import add_run_options, Progress, pyplot, require_built, run_app

# Square, fat-by-thin (k small) and thin-by-fat (k large), as the paper's figs. 5-6; and for CI.
SHAPES = "4096x4096x4096,8192x8192x8192,12288x12288x12288,16384x16384x4096,4096x4096x16384"
TINY = "256x256x256,300x200x500"
# axpy's N (the paper's 8M-256M elements), and for CI.
AXPY_SHAPES = "8388608,67108864,134217728,268435456"
AXPY_TINY = "100000,1000000"


def shapes_of(text):
    """MxNxK (gemm) or N (axpy, as N x 1 x 1) shapes."""
    return [tuple(int(d) for d in s.split("x")) + (1, 1) * ("x" not in s) for s in text.split(",")]


def shape_arg(args, shape):
    return str(shape[0]) if args.routine.endswith("axpy") else "x".join(map(str, shape))


def cuda_lib(name):
    """A CUDA toolkit library (libcublas, libcudart) by ctypes, or None."""
    names = [f"{name}.so"] + [f"{name}.so.{v}" for v in range(20, 10, -1)]
    dirs = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    for path in names + [p for d in dirs if d for p in sorted(glob.glob(os.path.join(d, "lib64", f"{name}.so.*")))]:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]  # CUDA 13's cudaMemLocation


class Cuda:
    """The CUDA runtime on device 0: device and managed memory for the baselines' operands."""

    def __init__(self, rt):
        self.rt, v = rt, ctypes.c_int()
        rt.cudaRuntimeGetVersion(ctypes.byref(v))
        self.version = v.value
        rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        if self.version >= 13000:
            rt.cudaMemPrefetchAsync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, Location, ctypes.c_uint,
                                                ctypes.c_void_p]
        else:
            rt.cudaMemPrefetchAsync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]

    def check(self, err, what):
        if err != 0:
            raise OSError(f"{what} returned CUDA error {err}")

    def alloc(self, nbytes, managed=False):
        p = ctypes.c_void_p()
        if managed:
            self.check(self.rt.cudaMallocManaged(ctypes.byref(p), ctypes.c_size_t(nbytes), 1), "cudaMallocManaged")
        else:
            self.check(self.rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(nbytes)), "cudaMalloc")
        return p.value

    def free(self, p):
        self.rt.cudaFree(ctypes.c_void_p(p))

    def copy(self, dst, src, nbytes):
        self.check(self.rt.cudaMemcpy(dst, src, nbytes, 4), "cudaMemcpy")  # cudaMemcpyDefault

    def prefetch(self, p, nbytes, to_device):
        """Managed pages to device 0 or to the host, on the legacy stream (which cuBLAS's handle uses too)."""
        if self.version >= 13000:
            at = Location(1, 0) if to_device else Location(2, 0)  # cudaMemLocationTypeDevice / Host
            err = self.rt.cudaMemPrefetchAsync(p, nbytes, at, 0, None)
        else:
            err = self.rt.cudaMemPrefetchAsync(p, nbytes, 0 if to_device else -1, None)  # -1: cudaCpuDeviceId
        self.check(err, "cudaMemPrefetchAsync")

    def register(self, p, nbytes):
        self.check(self.rt.cudaHostRegister(ctypes.c_void_p(p), ctypes.c_size_t(nbytes), 0), "cudaHostRegister")

    def unregister(self, p):
        self.rt.cudaHostUnregister(ctypes.c_void_p(p))

    def sync(self):
        self.check(self.rt.cudaDeviceSynchronize(), "cudaDeviceSynchronize")


class Xt:
    """cuBLASXt on device 0 of those this process sees, on numpy's host arrays."""

    def __init__(self, lib):
        self.lib, self.h = lib, ctypes.c_void_p()
        if lib.cublasXtCreate(ctypes.byref(self.h)) != 0:
            raise OSError("cublasXtCreate failed")
        devices = (ctypes.c_int * 1)(0)
        if lib.cublasXtDeviceSelect(self.h, 1, devices) != 0:
            raise OSError("cublasXtDeviceSelect failed")
        version = ctypes.c_int()
        self.name = "cuBLASXt"
        if lib.cublasGetProperty(0, ctypes.byref(version)) == 0:  # MAJOR_VERSION
            minor = ctypes.c_int()
            lib.cublasGetProperty(1, ctypes.byref(minor))
            self.name = f"cuBLASXt {version.value}.{minor.value}"

    def gemm(self, single, shape, a, b, c, block, pin):
        """C = A B + C on m x k, k x n and m x n operands at the addresses a, b and c, in host or device memory,
        waited for (cuBLASXt's calls return with C in place); `pin`: cuBLASXt pins host operands' pages itself
        for the call (CUBLASXT_PINNING_ENABLED)."""
        if block and self.lib.cublasXtSetBlockDim(self.h, block) != 0:
            raise OSError(f"cublasXtSetBlockDim({block}) failed")
        if self.lib.cublasXtSetPinningMemMode(self.h, 1 if pin else 0) != 0:
            raise OSError("cublasXtSetPinningMemMode failed")
        m, n, k = shape
        ctype = ctypes.c_float if single else ctypes.c_double
        one = ctype(1.0)
        fn = self.lib.cublasXtSgemm if single else self.lib.cublasXtDgemm
        size = ctypes.c_size_t
        ptr = ctypes.c_void_p
        st = fn(self.h, 0, 0, size(m), size(n), size(k), ctypes.byref(one), ptr(a), size(m), ptr(b), size(k),
                ctypes.byref(one), ptr(c), size(m))
        if st != 0:
            raise OSError(f"cublasXt gemm returned {st}")

    def close(self):
        self.lib.cublasXtDestroy(self.h)

    def block(self):
        b = ctypes.c_int()
        self.lib.cublasXtGetBlockDim(self.h, ctypes.byref(b))
        return b.value


def place_of(where, operand, axpy):
    """Where operand 0, 1 or 2 (A, B, C; axpy x in A, y in C) is, as blas_bench reads --where: its letter."""
    return ("h" if operand == 1 else where[operand // 2]) if axpy else where[operand]


def wheres_of(text, axpy):
    """--where's placements; "all": every one but all in the heap (the paper's 7 for gemm, 3 for axpy), the host's
    operands pageable; "all-pinned": the same, page-locked (the paper's setup)."""
    letters, out = 2 if axpy else 3, []
    for w in text.split(","):
        host = {"all": "h", "all-pinned": "p"}.get(w)
        if host:
            out += ["".join(p) for p in itertools.product(host + "g", repeat=letters) if host in p]
        elif len(w) != letters or set(w) - set("hgp"):
            raise SystemExit(f"blas_bench: --where {text}: {letters} letters a set, h (host), g (grain's heap) or p "
                             f"(page-locked), or all or all-pinned")
        else:
            out.append(w)
    return out


class ManagedAxpy:
    """The paper's axpy baseline: cuBLAS's axpy on CUDA managed memory, the pages of operands on the host prefetched
    to the GPU first and y's back after."""

    def __init__(self, lib, cuda):
        self.lib, self.cuda, self.h = lib, cuda, ctypes.c_void_p()
        if lib.cublasCreate_v2(ctypes.byref(self.h)) != 0:
            raise OSError("cublasCreate failed")
        version = ctypes.c_int()
        lib.cublasGetVersion_v2(self.h, ctypes.byref(version))
        self.name = f"managed + prefetch, cuBLAS {version.value // 10000}.{version.value // 100 % 100}"

    def close(self):
        self.lib.cublasDestroy_v2(self.h)

    def axpy(self, single, n, x, y, where):
        """y = x + y on managed x and y, each first placed as `where` says (untimed); the seconds it took."""
        es = 4 if single else 8
        where = where.replace("p", "h")  # managed memory is never page-locked
        for p, w in ((x, where[0]), (y, where[1])):
            self.cuda.prefetch(p, n * es, w == "g")
        self.cuda.sync()
        ctype = ctypes.c_float if single else ctypes.c_double
        one = ctype(1.0)
        t0 = time.perf_counter()
        for p, w in ((x, where[0]), (y, where[1])):
            if w == "h":
                self.cuda.prefetch(p, n * es, True)
        fn = self.lib.cublasSaxpy_v2 if single else self.lib.cublasDaxpy_v2
        st = fn(self.h, ctypes.c_int(n), ctypes.byref(one), ctypes.c_void_p(x), 1, ctypes.c_void_p(y), 1)
        if st != 0:
            raise OSError(f"cublas axpy returned {st}")
        if where[1] == "h":
            self.cuda.prefetch(y, n * es, False)
        self.cuda.sync()
        return time.perf_counter() - t0


def baseline(args, shape, where, backend, progress):
    """The baseline's rows for one shape and placement: where grain ran on CUDA and libcublas loads, cuBLASXt at
    each block size (and its default) on operands in the host's memory or, for `where`'s g, the device's; for axpy
    cuBLAS on managed memory; else numpy's BLAS (and for axpy numpy's y += x) on the host's."""
    import numpy as np
    m, n, k = shape
    dtype = np.float32 if args.routine[0] == "s" else np.float64
    rng = np.random.default_rng(7)
    a = np.asfortranarray(rng.uniform(-1, 1, (m, k)).astype(dtype))
    b = np.asfortranarray(rng.uniform(-1, 1, (k, n)).astype(dtype))
    c = np.asfortranarray(rng.uniform(-1, 1, (m, n)).astype(dtype))
    axpy = args.routine.endswith("axpy")
    lib = cuda_lib("libcublas") if backend == "cuda" and not args.no_xt else None
    rt = cuda_lib("libcudart") if lib is not None else None
    cuda = xt = managed = None
    if lib is not None and rt is not None:
        try:
            cuda = Cuda(rt)
            if axpy:
                managed = ManagedAxpy(lib, cuda)
            else:
                xt = Xt(lib)
        except (OSError, AttributeError) as e:
            print(f"blas_bench: cuBLAS did not start ({e}): the host's BLAS is the baseline")
    gpu = xt or managed
    # cuBLASXt's default block and each of --xt-blocks, then the fastest of those with its own pinning of the
    # operands' pages.
    runs = [(xt.name, bl, False) for bl in [0] + args.xt_blocks] if xt else [
        (managed.name if managed else "host (numpy y += x)" if axpy else "host BLAS (numpy)", None, False)]
    progress.start(f"{shape_arg(args, shape)} {where} {runs[0][0]}")
    # Operands where the baseline takes them: under cuBLASXt device memory for g and registered host memory for p,
    # managed memory for axpy.
    arrays, owned, registered = (a, b, c), [], []
    places = [x.ctypes.data for x in arrays]
    if xt:
        for i, x in enumerate(arrays):
            if place_of(where, i, axpy) == "p":
                cuda.register(places[i], x.nbytes)
                registered.append(places[i])
    if gpu:
        for i, x in enumerate(arrays):
            if (i != 1 or not axpy) and (managed or place_of(where, i, axpy) == "g"):
                places[i] = cuda.alloc(x.nbytes, managed=managed is not None)
                owned.append(places[i])
                if managed:
                    ctypes.memmove(places[i], x.ctypes.data, x.nbytes)
                else:
                    cuda.copy(places[i], x.ctypes.data, x.nbytes)
    rows = []

    def run(who, block, pin):
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            if managed:
                times.append(managed.axpy(args.routine == "saxpy", m, places[0], places[2], where))
                continue
            if xt:
                xt.gemm(args.routine == "sgemm", shape, *places, block, pin)
            elif axpy:
                c[...] += a
            else:
                c[...] += a @ b
            times.append(time.perf_counter() - t0)
        row = {"who": who, "where": where, "m": m, "n": n, "k": k, "tile_asked": block or 0,
               "tile": xt.block() if xt else 0, "pinning": pin, "seconds": statistics.median(times),
               "best_s": min(times)}
        row["gflops"] = 2.0 * m * n * k / row["seconds"] * 1e-9
        rows.append(row)

    try:
        for who, block, pin in runs:
            run(who, block, pin)
        if xt and "h" in where:  # cuBLASXt's pinning of what is pageable
            run(xt.name, min(rows, key=lambda r: r["seconds"])["tile"], True)
    finally:
        for p in owned:
            cuda.free(p)
        for p in registered:
            cuda.unregister(p)
        if gpu:
            gpu.close()
    progress.finish(", ".join(f"{'block ' + str(r['tile']) + (' pinning ' if r['pinning'] else ' ') if xt else ''}"
                              f"{r['seconds']:.4f} s" for r in rows))
    return rows


def grain_rows(args, shape, where, progress, deploy):
    cmd = shlex.split(args.mpirun) + ["-np", "1", "-x", f"GRAIN_BLAS_PROFILE={args.profile}",
                                      os.path.join(args.bin, "blas_bench"), "--routine", args.routine,
                                      "--shapes", shape_arg(args, shape), "--where", where,
                                      "--tiles", ",".join(str(t) for t in [0] + args.tiles), "--reps", str(args.reps)]
    if deploy:
        cmd.append("--deploy")
    progress.start(f"{shape_arg(args, shape)} {where} grain, tiles 0 (selected),{','.join(map(str, args.tiles))}"
                   f"{', deploying first' if deploy else ''}")
    reports, why = run_app(cmd, "blas_bench", args.timeout, every=True)
    if reports is None:
        progress.finish(f"failed: {why}")
        return []
    for r in [r for r in reports if "deploy_s" in r]:
        args.deployment = {"seconds": r["deploy_s"], "links": links(args.profile, r["device"])}
    reports = [r for r in reports if "deploy_s" not in r]
    for r in reports:
        r["who"] = "grain"
    bad = [r for r in reports if not r["verified"]]
    # The bench's own time beside the calls (filling and copying the operands, checking C): the device machine's
    # time a problem takes besides grain's.
    host = ""
    if reports:
        bench_s = reports[0].get("fill_s", 0) + sum(r.get("prep_s", 0) + r.get("check_s", 0) for r in reports)
        host = f"; bench {bench_s:.1f} s"
    progress.finish(", ".join(f"T={r['tile']}{'*' if r['tile_asked'] == 0 else ''} {r['seconds']:.4f} s" for r in
                              reports) + host + (f"; {len(bad)} NOT VERIFIED" if bad else ""))
    return reports


def tile_copy(entry):
    """A tile-copies entry of the profile, "TxLD:alone:beside" (or "T:alone:beside", measured at LD = 2T)."""
    key, alone, beside = entry.split(":")
    t, _, ld = key.partition("x")
    return {"tile": int(t), "ld": int(ld) if ld else 2 * int(t), "alone_s": float(alone), "beside_s": float(beside),
            "beside_kernels": float(beside) / float(alone)}


def links(profile, device):
    """The device's links from the profile (table II): t_i in us, 1 / t_b in GB/s, sl, and where deployed its tile
    copies by tile side and host leading dimension, alone and beside the tile kernel; the last line of each wins."""
    out, tiles = {}, {}
    with open(profile) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) == 6 and p[0] == device and p[1] == "link":
                out[p[2]] = {"t_i_us": float(p[3]) * 1e6, "gb_s": 1e-9 / float(p[4]), "sl": float(p[5])}
            elif len(p) == 4 and p[0] == device and p[1] == "tiles":
                tiles[p[2]] = [tile_copy(e) for e in p[3].split(",")]
    for way, copies in tiles.items():
        out.setdefault(way, {})["tile_copies"] = copies
    return out


def beside_summary(copies):
    """Per tile side, the tile copies' slowdown beside the tile kernel from the tightest host matrix to the widest."""
    sides = {}
    for c in copies:
        sides.setdefault(c["tile"], []).append(c)
    return ", ".join(f"T {t} x{cs[0]['beside_kernels']:.2f} (ld {cs[0]['ld']})" +
                     (f" to x{cs[-1]['beside_kernels']:.2f} (ld {cs[-1]['ld']})" if len(cs) > 1 else "")
                     for t, cs in sorted(sides.items()))


def summarize(rows):
    out = []
    for key in sorted({(r["m"], r["n"], r["k"], r["where"]) for r in rows},
                      key=lambda s: (s[0] * s[1] * s[2], s[3].count("g"), s[3][::-1])):
        shape, where = key[:3], key[3]
        here = [r for r in rows if (r["m"], r["n"], r["k"], r["where"]) == key]
        ours = [r for r in here if r["who"] == "grain"]
        base = [r for r in here if r["who"] != "grain"]
        if not ours or not base:
            continue
        sel = next((r for r in ours if r["tile_asked"] == 0), None)
        best = min(ours, key=lambda r: r["seconds"])
        bbest = min(base, key=lambda r: r["seconds"])
        bdef = next((r for r in base if r["tile_asked"] == 0), bbest)
        s = {"shape": "x".join(map(str, shape)) if shape[1:] != (1, 1) else str(shape[0]), "where": where,
             "flops": 2.0 * shape[0] * shape[1] * shape[2],
             "baseline": bbest["who"], "baseline_best_s": bbest["seconds"],
             "baseline_best_tile": bbest["tile"], "baseline_best_pinning": bbest.get("pinning", False),
             "baseline_default_s": bdef["seconds"],
             "grain_best_s": best["seconds"], "grain_best_tile": best["tile"],
             "best_over_best": bbest["seconds"] / best["seconds"], "verified": all(r["verified"] for r in ours)}
        if sel:
            s.update({"grain_selected_s": sel["seconds"], "grain_selected_tile": sel["tile"],
                      "selected_over_best": bbest["seconds"] / sel["seconds"],
                      "predicted_s": sel["predicted_s"],
                      "account": {x: sel.get(x, 0.0) for x in ("pack_s", "unpack_s", "wait_s")},
                      "prediction_error": (sel["predicted_s"] - sel["seconds"]) / sel["seconds"]
                      if sel["predicted_s"] > 0 else None})
        out.append(s)
    return out


def offload_geomeans(summary):
    """Table IV: the geometric mean over problems of the baseline's best time over grain's selected one, for full
    offload (every operand on the host) and partial (some in grain's heap)."""
    out = {}
    for kind, full in (("full", True), ("partial", False)):
        r = [s["selected_over_best"] for s in summary if "selected_over_best" in s and ("g" not in s["where"]) == full]
        if r:
            out[kind] = {"problems": len(r), "geomean": math.exp(sum(math.log(x) for x in r) / len(r))}
    return out


def model_errors(rows):
    """Each model's mean and largest relative error, (predicted - measured) / measured, over grain's runs that have
    predictions (CoCoPeLia figs. 4-6), apart for runs with an operand in pageable memory, which grain stages, and
    runs with every host operand page-locked, as the paper's are."""
    out = {}
    for r in rows:
        memory = "pageable" if "h" in r.get("where", "h") else "page-locked"
        for model, t in (r.get("models") or {}).items():
            if t > 0:
                out.setdefault(memory, {}).setdefault(model, []).append((t - r["seconds"]) / r["seconds"])
    return {memory: {m: {"runs": len(e), "mean_abs": sum(abs(x) for x in e) / len(e), "mean": sum(e) / len(e),
                         "worst": max(e, key=abs)} for m, e in models.items()} for memory, models in out.items()}


def label(s):
    """A problem's name: its shape, and where its operands are unless all in the host's pageable memory."""
    where = s.get("where", "h")  # results from before --where: all on the host
    return s["shape"] + (f" {where}" if set(where) != {"h"} else "")


def plot(rows, summary, path):
    """Draws the figures into path; whether it did (not without matplotlib, nor without a baseline's summary)."""
    plt = pyplot("blas_bench")
    if plt is None or not summary:
        return False
    fig, (speed, by_tile, ratio, models) = plt.subplots(1, 4, figsize=(26, 4.5))
    for s in summary:  # fig. 1: GFLOP/s against the tile, a line a shape
        fixed = sorted((r["tile"], r["gflops"]) for r in rows if r["who"] == "grain" and r["tile_asked"] > 0 and
                       r.get("where") == s.get("where") and
                       ("x".join(map(str, (r["m"], r["n"], r["k"]))) == s["shape"] or str(r["m"]) == s["shape"]))
        by_tile.plot([t for t, _ in fixed], [f for _, f in fixed], "o-", label=label(s))
    by_tile.set_xscale("log", base=2)
    by_tile.set_xlabel("tile T (fixed)")
    by_tile.set_ylabel("GFLOP/s")
    by_tile.legend(fontsize=7)
    by_tile.set_title("GFLOP/s by fixed tile (fig. 1)", fontsize=9)
    shapes = [label(s) for s in summary]
    series = [("grain, selected tile", [s.get("grain_selected_s") for s in summary]),
              ("grain, best tile", [s["grain_best_s"] for s in summary]),
              (f"{summary[0]['baseline']}, best block", [s["baseline_best_s"] for s in summary]),
              (f"{summary[0]['baseline']}, default", [s["baseline_default_s"] for s in summary])]
    width = 0.8 / len(series)
    for i, (name, secs) in enumerate(series):
        speed.bar([j + i * width for j in range(len(shapes))],
                  [s["flops"] / t * 1e-9 if t else 0 for s, t in zip(summary, secs)], width, label=name)
    speed.set_xticks([j + 0.4 - width / 2 for j in range(len(shapes))])
    speed.set_xticklabels(shapes, fontsize=7)
    speed.set_ylabel("GFLOP/s (operands on the host)")
    speed.legend(fontsize=7)
    rows_sel = [(label(s), s.get("selected_over_best", 0), s["best_over_best"]) for s in summary]
    ratio.bar([j - 0.2 for j in range(len(rows_sel))], [r[1] for r in rows_sel], 0.4, label="grain's selected tile")
    ratio.bar([j + 0.2 for j in range(len(rows_sel))], [r[2] for r in rows_sel], 0.4, label="grain's best tile")
    ratio.axhline(1.0, color="k", linewidth=0.8)
    ratio.set_xticks(range(len(rows_sel)))
    ratio.set_xticklabels([r[0] for r in rows_sel], fontsize=7)
    ratio.set_ylabel(f"{summary[0]['baseline']} (best block) time / grain's")
    ratio.legend(fontsize=7)
    ours = [r for r in rows if r.get("models")]
    for model, marker in zip(sorted({m for r in ours for m in r["models"]}), "o^sDx"):
        models.scatter([r["seconds"] for r in ours], [r["models"][model] for r in ours], s=16, marker=marker,
                       label=model, alpha=0.7)
    if ours:
        top = max(max(r["seconds"], *r["models"].values()) for r in ours)
        models.plot([0, top], [0, top], "k-", linewidth=0.8)
        models.legend(fontsize=7)
    models.set_xlabel("measured s (every tile)")
    models.set_ylabel("predicted s")
    models.set_title("the models against the measured time", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def write(args, rows, draw=True):
    """The CSV and JSON of what ran so far (after each problem, so that a run cut short keeps them), and the figure;
    the summary, the models' errors, table IV and whether the figure was drawn."""
    for r in rows:
        r.setdefault("routine", args.routine)
    summary = summarize(rows)
    errors, offload = model_errors(rows), offload_geomeans(summary)
    fields = ["who", "routine", "where", "m", "n", "k", "tile_asked", "tile", "pinning", "seconds", "best_s", "gflops",
              "predicted_s", "pack_s", "unpack_s", "wait_s", "max_rel_err", "verified"]
    with open(os.path.join(args.out, "blas.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(args.out, "blas.json"), "w") as f:
        json.dump({"routine": args.routine, "deployment": args.deployment, "rows": rows, "summary": summary,
                   "model_errors": errors, "offload": offload}, f, indent=1)
    drawn = draw and plot(rows, summary, os.path.join(args.out, "blas.png"))
    return summary, errors, offload, drawn


def report(args, rows):
    """Writes what ran and prints its tables: grain against the baseline, where each selected call's time went,
    the deployment (table II), the models' errors (figs. 4-5) and table IV; the summary."""
    summary, errors, offload, drawn = write(args, rows)
    if summary:
        print(f"\n{'shape':>24} {'baseline':>18} {'best s':>9} {'grain sel':>10} {'T':>5} {'ratio':>6} "
              f"{'grain best':>10} {'T':>5} {'ratio':>6} {'predicted':>10}")
    for s in summary:
        pred = f"{s['prediction_error']:+.0%}" if s.get("prediction_error") is not None else "no profile"
        print(f"{label(s):>24} {s['baseline'][:18]:>18} {s['baseline_best_s']:9.4f} "
              f"{s.get('grain_selected_s', 0):10.4f} {s.get('grain_selected_tile', 0):5d} "
              f"{s.get('selected_over_best', 0):6.2f} {s['grain_best_s']:10.4f} {s['grain_best_tile']:5d} "
              f"{s['best_over_best']:6.2f} {pred:>10}")
    for s in summary:
        a = s.get("account")
        if a and s.get("grain_selected_s"):
            t = s["grain_selected_s"]
            print(f"{label(s):>24}: grain's selected call: packing {a['pack_s'] / t:.0%}, unpacking "
                  f"{a['unpack_s'] / t:.0%}, waiting for the device {a['wait_s'] / t:.0%}, queueing the rest")
    if args.deployment:
        print(f"deployed in {args.deployment['seconds']:.1f} s: " + ", ".join(
            f"{way} t_i {l['t_i_us']:.1f} us, {l['gb_s']:.1f} GB/s, sl {l['sl']:.2f}"
            for way, l in sorted(args.deployment["links"].items()) if "sl" in l))
        for way, l in sorted(args.deployment["links"].items()):
            if "tile_copies" in l:
                print(f"  {way}: tile copies beside the tile kernel " + beside_summary(l["tile_copies"]))
    for memory, models in sorted(errors.items()):
        for model, e in sorted(models.items(), key=lambda kv: kv[1]["mean_abs"]):
            print(f"model {model:>8}, {memory:>11}: mean |error| {e['mean_abs']:.0%}, mean {e['mean']:+.0%}, "
                  f"worst {e['worst']:+.0%} over {e['runs']} runs")
    for kind, o in offload.items():
        print(f"table IV, {kind} offload: grain's selected tile {o['geomean'] - 1:+.1%} against the baseline's best "
              f"(geometric mean over {o['problems']} problems)")
    print(("ratio: the baseline's best time over grain's (above 1: grain is faster). " if summary else "") +
          f"Wrote {args.out}/blas.csv, blas.json{', blas.png' if drawn else ''}")
    return summary


def merge(args):
    """One result of the runs kept under each of --merge's directories (the parts of a run too long for one
    call), under --out: their rows, the first one's deployment and profile."""
    rows, args.deployment = [], None
    for d in args.merge.split(","):
        with open(os.path.join(d, "blas.json")) as f:
            data = json.load(f)
        if data["routine"] != args.routine:
            sys.exit(f"blas_bench: {d} ran {data['routine']}, not {args.routine} (--routine)")
        rows += data["rows"]
        args.deployment = args.deployment or data.get("deployment")
        profile = os.path.join(d, "blas-profile.tsv")
        if os.path.exists(profile) and not os.path.exists(os.path.join(args.out, "blas-profile.tsv")):
            shutil.copy(profile, args.out)
    report(args, rows)
    return 0 if all(r.get("verified", True) for r in rows) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--routine", default="dgemm", choices=("dgemm", "sgemm", "daxpy", "saxpy"))
    ap.add_argument("--shapes", default=None)
    ap.add_argument("--tiles", default="1024,2048,4096")
    # Ten blocks, as the paper takes cuBLASXt's best of ten tiles (fig. 7, table IV).
    ap.add_argument("--xt-blocks", default="1024,1536,2048,2560,3072,3584,4096,5120,6144,8192")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--where", default=None, help="operand placements, h host, g heap, p page-locked, a letter an "
                    "operand: hhh,ghh,pph,... (axpy hh,gh,...), all or all-pinned; default all on the host")
    ap.add_argument("--deploy", action="store_true")
    ap.add_argument("--no-xt", action="store_true", help="the host's BLAS as the baseline, though cuBLAS loads")
    ap.add_argument("--no-baseline", action="store_true",
                    help="grain's runs only, for the models' errors and tiles (blas_replay.py), no ratios")
    ap.add_argument("--tiny", action="store_true", help="small shapes and tiles, for CI")
    ap.add_argument("--merge", help="DIR,DIR,...: one result under --out of the runs kept in each")
    add_run_options(ap, "bench-results/blas")
    args = ap.parse_args()
    if args.replot:
        with open(os.path.join(args.out, "blas.json")) as f:
            data = json.load(f)
        plot(data["rows"], data["summary"], os.path.join(args.out, "blas.png"))
        return 0
    if args.merge:
        os.makedirs(args.out, exist_ok=True)
        return merge(args)
    axpy = args.routine.endswith("axpy")
    if args.tiles == "1024,2048,4096":
        args.tiles = ("16384,65536" if args.tiny else "1048576,4194304,16777216") if axpy else \
            "64,128" if args.tiny else args.tiles
    args.tiles = [int(t) for t in args.tiles.split(",") if t]
    args.xt_blocks = [int(t) for t in args.xt_blocks.split(",") if t]
    shapes = shapes_of(args.shapes or ((AXPY_TINY if args.tiny else AXPY_SHAPES) if axpy else
                                       (TINY if args.tiny else SHAPES)))
    wheres = wheres_of(args.where or ("hh" if axpy else "hhh"), axpy)
    args.deployment = None
    require_built("blas_bench", args.bin, ["blas_bench"])
    os.makedirs(args.out, exist_ok=True)
    args.profile = os.path.abspath(os.path.join(args.out, "blas-profile.tsv"))
    progress = Progress((1 if args.no_baseline else 2) * len(shapes) * len(wheres))
    rows = []
    for i, (shape, where) in enumerate(itertools.product(shapes, wheres)):
        ours = grain_rows(args, shape, where, progress, args.deploy and i == 0)
        rows += ours
        if not args.no_baseline:
            rows += baseline(args, shape, where, ours[0]["backend"] if ours else "", progress)
        write(args, rows, draw=False)
    summary = report(args, rows)
    ok = rows and all(r.get("verified", True) for r in rows) and \
        (args.no_baseline or len(summary) == len(shapes) * len(wheres))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
