"""Blocked linear algebra: ndpack vs NumPy, python-blosc2 and dask.

* tensordot of two (n, n, n) float64 arrays over ((0,1),(0,1)), ((1,2),(1,2)) and
  ((2,0),(2,0)): ndpack on its own .b2nd files (LZ4 clevel 1), ndpack over h5py
  operands, python-blosc2 on its files, dask over the h5py datasets; NumPy in memory
  is the baseline.  Time and the peak resident-memory growth of each.
* ``evaluate("tensordot(a, b, axes=...)")`` over zarr (its default codec) and h5py
  (uncompressed) operands of (n, n, n) float64 with chunks (10, n, n), the same three
  axis pairs, vs python-blosc2's ``evaluate`` of the same text (issue 26): time, CPU
  time and the peak RSS growth of warm calls; the ratio printed is python-blosc2's
  time / ndpack's.
* matmul of two (m, m) float64 arrays, compressed in memory (LZ4 clevel 1), vs NumPy and
  python-blosc2.

Ratios are speed relative to NumPy (NumPy time / time), best of 5 runs (1 with
``--quick``: n = 100, m = 1000).  The machine must be quiet: BLAS threads that wait for
a descheduled partner make every product several times slower under load.

Each table ends with ndpack's floor on this machine: the CPU time of the work that
cannot be avoided -- decoding the operands (tensordot: each once; matmul: the first
once, the second once per tile of result rows computed at once), the BLAS products on
one thread, and for matmul compressing the result -- spread over the cores.  A target
above NumPy time / floor, or dask time / floor, cannot be met here.

    python benchmarks/bench_linalg.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import warnings

import numpy as np
from timing import best, best_with_rss, compress_pieces, decode_all, write_json

import ndpack
from ndpack.engine.ops import blas
from ndpack.engine.ops import contract
from ndpack.engine.ops import linalg

try:
    import blosc2
except ImportError:
    blosc2 = None

AXES = [((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 0), (2, 0))]


def tensordots(n, reps, rows):
    import h5py
    try:
        import dask
        import dask.array as da
    except ImportError:
        da = None
    rng = np.random.default_rng(0)
    x, y = rng.random((n, n, n)), rng.random((n, n, n))
    with tempfile.TemporaryDirectory() as tmp:
        def p(name):
            return os.path.join(tmp, name)
        cp = {"codec": ndpack.Codec.LZ4, "clevel": 1}
        a = ndpack.asarray(x, cparams=cp, urlpath=p("a.b2nd"), mode="w")
        b = ndpack.asarray(y, cparams=cp, urlpath=p("b.b2nd"), mode="w")
        h5 = h5py.File(p("ops.h5"), "w")
        hx = h5.create_dataset("x", data=x, chunks=a.chunks)
        hy = h5.create_dataset("y", data=y, chunks=b.chunks)
        if blosc2 is not None:
            cp2 = {"codec": blosc2.Codec.LZ4, "clevel": 1}
            ba = blosc2.asarray(x, cparams=cp2, urlpath=p("ba.b2nd"), mode="w")
            bb = blosc2.asarray(y, cparams=cp2, urlpath=p("bb.b2nd"), mode="w")
        print(f"\n[tensordot] 2 x ({n},)*3 float64, chunks {a.chunks}; time ms / peak RSS "
              f"growth MB; speed vs NumPy")
        print(f"{'axes':<22}" + "".join(f"{h:>18}" for h in
                                        ("numpy", "nd native", "nd h5py", "b2", "dask h5py")))
        decode_cpu, floors = _cpu(lambda: decode_all(a, b), reps), []
        for axes in AXES:
            want = np.tensordot(x, y, axes=axes)
            res = {"numpy": best_with_rss(lambda axes=axes: np.tensordot(x, y, axes=axes), reps),
                   "nd": best_with_rss(lambda axes=axes: ndpack.tensordot(a, b, axes=axes), reps),
                   "nd_h5": best_with_rss(lambda axes=axes: ndpack.tensordot(hx, hy, axes=axes),
                                     reps)}
            np.testing.assert_allclose(ndpack.tensordot(a, b, axes=axes)[()], want, rtol=1e-9)
            if blosc2 is not None:
                res["b2"] = best_with_rss(lambda axes=axes: blosc2.tensordot(ba, bb, axes=axes),
                                     reps)
            if da is not None:
                dx, dy = da.from_array(hx, chunks=a.chunks), da.from_array(hy, chunks=b.chunks)
                with dask.config.set(scheduler="threads"):
                    res["dask"] = best_with_rss(
                        lambda dx=dx, dy=dy, axes=axes: da.tensordot(dx, dy, axes).compute(),
                        reps)
            t0 = res["numpy"][0]
            cells = "".join((f"{res[k][0] * 1e3:.0f}/{res[k][1] / 2**20:.0f} "
                             f"{t0 / res[k][0]:.2f}x").rjust(18) if k in res else f"{'-':>18}"
                            for k in ("numpy", "nd", "nd_h5", "b2", "dask"))
            print(f"{axes!s:<22}{cells}")
            floors.append((axes, _tensordot_floor(a, b, x, y, axes, decode_cpu, reps), res))
            rows.append(dict(kind="tensordot", axes=str(axes), floor_s=floors[-1][1],
                             **{f"{k}_s": v[0] for k, v in res.items()},
                             **{f"{k}_rss": v[1] for k, v in res.items()}))
        h5.close()
    print(f"floor: decoding both operands {decode_cpu * 1e3:.0f} ms of CPU, plus the BLAS "
          f"products on one thread, over {CORES} cores")
    for axes, floor, res in floors:
        line = f"  {axes!s:<22}{floor * 1e3:6.0f} ms: {res['numpy'][0] / floor:.2f}x NumPy"
        if "dask" in res:
            line += f", {res['dask'][0] / floor:.2f}x dask at most"
        print(line + f" (ndpack {floor / res['nd'][0]:.0%} of it)")


CORES = max(1, ndpack.nthreads)


def _cpu(fn, reps):
    """Best process CPU time (all threads) of `fn`, in seconds."""
    import time
    return best(fn, reps, clock=time.process_time)


def _tensordot_floor(a, b, x, y, axes, decode_cpu, reps) -> float:
    """(decode CPU + BLAS CPU on one thread, as ndpack cuts the products) / cores."""
    acc = np.empty(tuple(n for d, n in enumerate(x.shape) if d not in axes[0]) +
                   tuple(n for d, n in enumerate(y.shape) if d not in axes[1]))
    with blas.one_thread():
        gemm = _cpu(lambda: contract.contract_into(acc, x, y, list(axes[0]), list(axes[1]),
                                                   True, {}), reps)
    return (decode_cpu + gemm) / CORES


def foreign_tensordots(n, reps, rows):
    import h5py
    import zarr
    rng = np.random.default_rng(1)
    x, y = rng.random((n, n, n)), rng.random((n, n, n))
    chunks = (min(n, 10), n, n)
    with tempfile.TemporaryDirectory() as tmp:
        h5 = h5py.File(os.path.join(tmp, "ops.h5"), "w")
        sources = {"zarr": {k: zarr.create_array(os.path.join(tmp, f"{k}.zarr"), data=v,
                                                 chunks=chunks)
                            for k, v in (("a", x), ("b", y))},
                   "h5py": {"a": h5.create_dataset("a", data=x, chunks=chunks),
                            "b": h5.create_dataset("b", data=y, chunks=chunks)}}
        print(f"\n[evaluate tensordot over foreign operands] 2 x ({n},)*3 float64, chunks "
              f"{chunks}; ms (CPU ms) / peak RSS growth MB of warm calls")
        for src, ops in sources.items():
            for axes in AXES:
                text = f"tensordot(a, b, axes={axes})"
                want = np.tensordot(x, y, axes=axes)
                fns = {"nd": lambda: ndpack.evaluate(text, local_dict=ops)}
                if blosc2 is not None:
                    fns["b2"] = lambda: blosc2.evaluate(text, local_dict=ops)
                res = {}
                for k, fn in fns.items():
                    np.testing.assert_allclose(fn(), want, rtol=1e-9)   # also warms
                    cpu = _cpu(fn, reps)
                    t, rss = best_with_rss(fn, reps)
                    res[k] = (t, cpu, rss)
                cells = "  ".join(f"{k} {v[0] * 1e3:6.0f} ({v[1] * 1e3:6.0f}) / "
                                  f"{v[2] / 2**20:4.0f}" for k, v in res.items())
                ratio = res["b2"][0] / res["nd"][0] if "b2" in res else float("nan")
                print(f"{src:<6}{axes!s:<22}{cells}   b2/nd {ratio:5.2f}", flush=True)
                rows.append(dict(kind="tensordot foreign", source=src, axes=str(axes),
                                 **{f"{k}_s": v[0] for k, v in res.items()},
                                 **{f"{k}_cpu_s": v[1] for k, v in res.items()},
                                 **{f"{k}_rss": v[2] for k, v in res.items()}))
        h5.close()


def matmuls(m, reps, rows):
    rng = np.random.default_rng(1)
    x, y = rng.random((m, m)), rng.random((m, m))
    cp = {"codec": ndpack.Codec.LZ4, "clevel": 1}
    a, b = ndpack.asarray(x, cparams=cp), ndpack.asarray(y, cparams=cp)
    res = {"numpy": best_with_rss(lambda: x @ y, reps), "nd": best_with_rss(lambda: ndpack.matmul(a, b),
                                                                  reps)}
    np.testing.assert_allclose(ndpack.matmul(a, b)[()], x @ y, rtol=1e-9)
    if blosc2 is not None:
        cp2 = {"codec": blosc2.Codec.LZ4, "clevel": 1}
        ba, bb = blosc2.asarray(x, cparams=cp2), blosc2.asarray(y, cparams=cp2)
        res["b2"] = best_with_rss(lambda: blosc2.matmul(ba, bb), reps)
    t0 = res["numpy"][0]
    print(f"\n[matmul] ({m}, {m}) float64, chunks {a.chunks}, LZ4 clevel 1")
    for k, (t, r) in res.items():
        print(f"  {k:<8}{t * 1e3:>9.0f} ms  {r / 2**20:>6.0f} MB  {t0 / t:>5.2f}x NumPy speed")
    # the floor: decode a once and b once per tile of rows, BLAS on one thread, compress
    tile_rows = linalg._tile_shape((m, m), ndpack.matmul(a, b).chunks, np.dtype("f8"))[0]
    tiles = -(-m // tile_rows)
    decode = _cpu(lambda: decode_all(a, *[b] * tiles), reps)
    with blas.one_thread():
        gemm = _cpu(lambda: x @ y, reps)
    z = x @ y
    squeeze = _cpu(lambda: compress_pieces(z, 16 * 2**20, a.cparams), reps)
    floor = (decode + gemm + squeeze) / CORES
    print(f"  floor {floor * 1e3:6.0f} ms = (decode {decode * 1e3:.0f} + BLAS {gemm * 1e3:.0f} "
          f"+ compress {squeeze * 1e3:.0f} ms of CPU) / {CORES} cores: {t0 / floor:.2f}x NumPy "
          f"(ndpack {floor / res['nd'][0]:.0%} of it)")
    rows.append(dict(kind="matmul", m=m, floor_s=floor,
                     **{f"{k}_s": v[0] for k, v in res.items()}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    reps = 1 if args.quick else 5
    warnings.filterwarnings("ignore", message="Increasing number of chunks")   # dask's
    rows: list = []
    tensordots(100 if args.quick else 300, reps, rows)
    foreign_tensordots(60 if args.quick else 300, reps, rows)
    matmuls(1000 if args.quick else 4000, reps, rows)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
