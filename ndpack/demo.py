"""``python -m ndpack.demo``: the main job of ndpack, end to end, with a short report.

1. writes three compressed on-disk operands (about 1.5 GB uncompressed in total),
2. computes ``sum(a, axis=0) + b * sin(c)`` chunk by chunk into a file,
3. evaluates ``a * 2 + b`` with an h5py dataset as the output (when h5py is there),
4. saves the expression, grows an operand, reopens it and recomputes,

and prints timings against NumPy (on the decompressed arrays), the peak memory of the
process, and the compression ratios.  ``--small`` uses ~150 MB (CI, tests).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

import numpy as np

from ndpack.codecs import Codec
from ndpack.engine.api import evaluate, lazyexpr
from ndpack.engine.persist import open as nd_open
from ndpack.storage.constructors import asarray

__all__ = ["main"]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(label, fn, rows):
    t0 = time.perf_counter()
    res = fn()
    rows.append((label, time.perf_counter() - t0))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="~150 MB instead of ~1.5 GB")
    ap.add_argument("--dir", help="where to write (default: a temporary directory)")
    args = ap.parse_args(argv)
    if args.dir is None:
        with tempfile.TemporaryDirectory(prefix="ndpack-demo-") as tmp:
            return _run(args.small, tmp)
    return _run(args.small, args.dir)


def _run(small: bool, work: str) -> int:
    n = 2000 if small else 5000                        # shape (n / 8, n, 20) below
    shape = (n // 8, n, 20)
    p = lambda name: os.path.join(work, name)          # noqa: E731
    rows: list = []
    cp = {"codec": Codec.ZSTD, "clevel": 1}
    chunks = (max(1, shape[0] // 40), n, 20)           # ~16 MB chunks: memory stays low
    print(f"ndpack demo: 3 operands of shape {shape} float64 "
          f"({3 * np.prod(shape) * 8 / 1e9:.2f} GB uncompressed) in {work}")

    def make(name, f):
        # generated slab by slab: the full array is never in memory
        src = _Generated(shape, f)
        return asarray(src, cparams=cp, chunks=chunks, urlpath=p(name), mode="w")
    a = _timed("write a, b, c (compressed)", lambda: [
        make("a.b2nd", lambda i, j, k: np.sin(i / 50.0) + j * 1e-4 + k),
        make("b.b2nd", lambda i, j, k: np.cos(j / 300.0) * (k + 1)),
        make("c.b2nd", lambda i, j, k: (i * 7 + j * 3 + k) % 1000 / 1000.0)], rows)
    a, b, c = (nd_open(p(x)) for x in ("a.b2nd", "b.b2nd", "c.b2nd"))
    expr = lazyexpr("sum(a, axis=0) + b * sin(c)", operands={"a": a, "b": b, "c": c})
    out = _timed("compute sum(a, axis=0) + b * sin(c) -> file",
                 lambda: expr.compute(urlpath=p("out.b2nd"), cparams=cp), rows)
    try:
        import h5py
    except ImportError:
        h5py = None
    if h5py is not None:
        with h5py.File(p("out.h5"), "w") as f:
            ds = f.create_dataset("r", shape=shape, dtype="f8", chunks=(shape[0] // 16, n, 20))
            _timed("evaluate a * 2 + b -> h5py dataset",
                   lambda: evaluate("a * 2 + b", local_dict={"a": a, "b": b}, out=ds), rows)
    engine_peak = _rss_mb()                            # before NumPy gets its slabs
    # NumPy on a slab of the same expression, scaled: the whole thing may not fit
    rows_np = shape[0] // 8
    xa, xb, xc = a[:rows_np], b[:rows_np], c[:rows_np]
    t0 = time.perf_counter()
    ref = xa.sum(axis=0) + xb * np.sin(xc)
    numpy_time = (time.perf_counter() - t0) * shape[0] / rows_np
    check = expr[:rows_np]
    full_sum = a[:].sum(axis=0) if small else None
    if full_sum is not None:
        np.testing.assert_allclose(check, full_sum + xb * np.sin(xc), rtol=1e-10)
    del xa, xb, xc, ref
    expr.save(p("expr.b2nd"))
    grow = nd_open(p("a.b2nd"), mode="a"), nd_open(p("b.b2nd"), mode="a"), \
        nd_open(p("c.b2nd"), mode="a")
    for arr in grow:
        arr.resize((shape[0] + 16,) + shape[1:])
        arr[shape[0]:] = 1.0
    again = nd_open(p("expr.b2nd"))
    _timed(f"reopen saved expression, grown to {again.shape}, recompute",
           lambda: again.compute(urlpath=p("out2.b2nd"), cparams=cp), rows)
    print()
    for label, t in rows:
        print(f"  {label:<58} {t:7.2f} s")
    print(f"  {'NumPy, same expression (estimated from a slab)':<58} {numpy_time:7.2f} s")
    print(f"\n  compression ratios: a {a.cratio:.1f}x, b {b.cratio:.1f}x, c {c.cratio:.1f}x, "
          f"result {out.cratio:.1f}x")
    print(f"  peak memory of the engine's work: {engine_peak:.0f} MB "
          f"(operands: {3 * np.prod(shape) * 8 / 2**20:.0f} MB uncompressed)")
    return 0


class _Generated:
    """An array-like computed from index grids slab by slab (for asarray)."""

    def __init__(self, shape, f):
        self.shape, self.dtype, self.f = shape, np.dtype(np.float64), f

    def __getitem__(self, key):
        grids = np.ogrid[tuple(slice(k.start or 0, k.stop if k.stop is not None else n)
                               for k, n in zip(key, self.shape))]
        return np.broadcast_to(self.f(*grids), tuple(
            (k.stop if k.stop is not None else n) - (k.start or 0)
            for k, n in zip(key, self.shape))).astype(self.dtype)


if __name__ == "__main__":
    raise SystemExit(main())
