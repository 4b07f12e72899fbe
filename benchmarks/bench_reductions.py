"""Reductions and cumulative sums over compressed arrays: ndpack vs NumPy, python-blosc2
and dask.

* ``sum`` along axis 0, 1, 2 and None of an (N, N, N) float64 array (N = 600), LZ4
  clevel 5 and clevel 0 (+ shuffle), default chunks and (100, 100, 100), vs NumPy on
  the decompressed array and python-blosc2 on the same data and layout;
* ``sum(a, axis=0) + b * sin(c)`` (three (N, N, N) operands, result as NumPy) vs
  NumPy, dask (``chunks="auto"``, threaded scheduler) and python-blosc2;
* ``cumulative_sum`` of an (M, M, M) array (M = 400) along each axis vs ``np.cumsum``
  and python-blosc2 (both compressed results with LZ4 clevel 5).

Best of a few interleaved runs in one process; ratios are speed relative to NumPy
(> 1 is faster than NumPy) and to python-blosc2.  ``--quick`` uses N = 200, M = 160
(CI, < 30 s).

    python benchmarks/bench_reductions.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc

import numpy as np

import ndpack
from timing import best_times, compress_pieces, decode_all, write_json

try:
    import blosc2
except ImportError:
    blosc2 = None
try:
    import dask
    import dask.array as da
except ImportError:
    da = None


def data(n, seed=0):
    """A smooth field (LZ4 5 + shuffle compresses it ~2.3x)."""
    x = np.linspace(seed, 30 + seed, n ** 3).reshape(n, n, n)
    return np.sin(x, out=x)


def _cp(lib, clevel):
    return {"codec": lib.Codec.LZ4, "clevel": clevel}


def _row(rows, label, t, keys, budget_note=""):
    base = t["numpy"]
    parts = "".join(f"{t[k] * 1e3:>9.0f}" for k in keys)
    ratios = f"nd {base / t['nd']:>5.2f}x numpy"
    if "b2" in t and t["b2"] == t["b2"]:
        ratios += f", {t['b2'] / t['nd']:>5.2f}x b2 (b2 {base / t['b2']:.2f}x numpy)"
    if "dask" in t and t["dask"] == t["dask"]:
        ratios += f", {t['dask'] / t['nd']:>5.2f}x dask"
    if "floor" in t:
        ratios += f"; floor {base / t['floor']:.2f}x numpy"
    print(f"{label:<34}{parts}   {ratios}", flush=True)
    rows.append(dict(case=label, **t))


def bench_sums(n, reps, rows):
    x = data(n)
    print(f"\nsum of ({n}, {n}, {n}) float64 ({x.nbytes / 2**20:.0f} MiB); floor: decoding "
          f"every chunk, nothing else")
    print(f"{'case':<34}{'numpy':>9}{'ndpack':>9}{'blosc2':>9}{'floor':>9}   (ms)")
    for clevel in (5, 0):
        for chunks in (None, (100, 100, 100)):
            kw = {} if chunks is None else {"chunks": chunks}
            a = ndpack.asarray(x, cparams=_cp(ndpack, clevel), **kw)
            b = blosc2.asarray(x, cparams=_cp(blosc2, clevel), **kw) if blosc2 else None
            floor = best_times([lambda: decode_all(a)], reps)[0]
            for axis in (0, 1, 2, None):
                np.testing.assert_allclose(ndpack.sum(a, axis=axis), x.sum(axis=axis),
                                           rtol=1e-12)
                fns = [lambda: x.sum(axis=axis), lambda: ndpack.sum(a, axis=axis)]
                if b is not None:
                    fns.append(lambda: blosc2.sum(b, axis=axis))
                ts = best_times(fns, reps)
                t = {"numpy": ts[0], "nd": ts[1], "b2": ts[2] if b is not None else np.nan,
                     "floor": floor}
                _row(rows, f"LZ4 {clevel} {a.chunks} ax {axis}", t,
                     ["numpy", "nd", "b2", "floor"])
            a = b = None                      # free before the next layout
            gc.collect()


def bench_reduce_expr(n, reps, rows):
    xs = {k: data(n, i) for i, k in enumerate("abc")}
    text = "sum(a, axis=0) + b * sin(c)"
    print(f"\n{text}, three ({n}, {n}, {n}) float64, LZ4 5, result as NumPy")
    print(f"{'case':<34}{'numpy':>9}{'ndpack':>9}{'blosc2':>9}{'dask':>9}   (ms)")
    nd = {k: ndpack.asarray(v, cparams=_cp(ndpack, 5)) for k, v in xs.items()}
    e = ndpack.lazyexpr(text, operands=nd)
    ref = xs["a"].sum(axis=0) + xs["b"] * np.sin(xs["c"])
    np.testing.assert_allclose(e[()], ref, rtol=1e-10)
    fns = [lambda: xs["a"].sum(axis=0) + xs["b"] * np.sin(xs["c"]), lambda: e[()]]
    if blosc2 is not None:
        b2 = {k: blosc2.asarray(v, cparams=_cp(blosc2, 5)) for k, v in xs.items()}
        e2 = blosc2.lazyexpr(text, operands=b2)
        fns.append(lambda: e2[()])
    if da is not None:
        dd = {k: da.from_array(v, chunks="auto") for k, v in xs.items()}
        de = da.sum(dd["a"], axis=0) + dd["b"] * da.sin(dd["c"])
        fns.append(lambda: de.compute(scheduler="threads"))
    ts = best_times(fns, reps, budget=60)
    t = {"numpy": ts[0], "nd": ts[1], "b2": ts[2] if blosc2 else np.nan,
         "dask": ts[-1] if da is not None else np.nan}
    _row(rows, "reduce-expr", t, ["numpy", "nd", "b2", "dask"])


def bench_cumsum(m, reps, rows):
    x = data(m)
    print(f"\ncumulative_sum of ({m}, {m}, {m}) float64, LZ4 5 in and out; floor: "
          f"decoding the input + compressing the result (2 C threads, no other work)")
    print(f"{'case':<34}{'numpy':>9}{'ndpack':>9}{'blosc2':>9}{'floor':>9}   (ms)")
    a = ndpack.asarray(x, cparams=_cp(ndpack, 5))
    b = blosc2.asarray(x, cparams=_cp(blosc2, 5)) if blosc2 else None
    decode = best_times([lambda: decode_all(a)], reps)[0]
    for axis in (0, 1, 2):
        y = np.cumsum(x, axis=axis)
        np.testing.assert_array_equal(ndpack.cumulative_sum(a, axis=axis)[()], y)
        step = a.schunk.chunksize
        cp = dict(_cp(ndpack, 5), typesize=8, nthreads=2)
        floor = decode + best_times([lambda: compress_pieces(y, step, cp)], reps)[0]
        y = None
        fns = [lambda: np.cumsum(x, axis=axis),
               lambda: ndpack.cumulative_sum(a, axis=axis, cparams=_cp(ndpack, 5))]
        if b is not None:
            fns.append(lambda: blosc2.cumulative_sum(b, axis=axis, cparams=_cp(blosc2, 5)))
        ts = best_times(fns, reps)
        t = {"numpy": ts[0], "nd": ts[1], "b2": ts[2] if b is not None else np.nan,
             "floor": floor}
        _row(rows, f"cumulative_sum axis {axis}", t, ["numpy", "nd", "b2", "floor"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--only", choices=["sum", "expr", "cumsum"])
    args = ap.parse_args(argv)
    n, m, reps = (200, 160, 3) if args.quick else (600, 400, 3)
    if da is not None:
        dask.config.set(num_workers=ndpack.nthreads)
    print(f"ndpack threads {ndpack.nthreads}; python-blosc2 "
          f"{getattr(blosc2, '__version__', 'absent')}; dask "
          f"{getattr(dask, '__version__', 'absent') if da is not None else 'absent'}")
    rows = []
    if args.only in (None, "sum"):
        bench_sums(n, reps, rows)
    if args.only in (None, "expr"):
        bench_reduce_expr(n, reps, rows)
    if args.only in (None, "cumsum"):
        bench_cumsum(m, reps, rows)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
