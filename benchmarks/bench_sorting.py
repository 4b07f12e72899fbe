"""Sorting, set functions, nonzero and quantiles of compressed arrays (issue 22): ndpack
vs NumPy on the decoded array, python-blosc2 and dask where they have a counterpart.

Cases (``--quick`` sizes in brackets):

* ``sort`` / ``argsort`` of 1-D float64, 10^8 [10^6] items (random, and nearly sorted:
  0.1% of the items swapped), default chunks, LZ4 clevel 1 + shuffle: ndpack (result
  compressed) vs ``np.sort`` / ``np.argsort(kind="stable")`` of the decoded array;
  python-blosc2 ``argsort`` (its ``sort`` of a plain array returns the array unsorted:
  it sorts only structured arrays by field);
* ``sort`` of a (4000, 4000) [(1000, 1000)] float64 array along each axis, chunks of
  a quarter of each side;
* the 1000 largest values: ``sort(descending=True)[:1000]`` vs dask's ``topk``
  (threads, chunks of the input) and ``np.partition``;
* ``unique_counts`` of 10^8 [10^6] int64 in [0, 10^6), ``nonzero`` of a 10%-dense
  (4000, 4000) [(1000, 1000)] mask, ``quantile`` (1%, 50%, 99%) and ``median`` of the
  random 1-D array, vs NumPy on the decoded arrays;
* (not ``--quick``) the random 1-D array sorted into a file (``urlpath=``);
* range query ``a[(a > lo) & (a < hi)]`` selecting 0.1% (and 0.01%, 1%) of 10^8 [10^6]
  random float64 on disk: with the sorted index (``create_index``) vs the same query
  without it (``scan``: the mask evaluated, then the array read by it), NumPy on the
  array in memory, and python-blosc2 with its ``FULL`` index (``blosc2``) and without
  one (``b2 scan``); the build of both indexes; bytes read (``rchar`` of
  /proc/self/io: every byte read by a system call, page cache included; python-blosc2
  reads its files through a memory map, which rchar does not see), CPU time of the
  ndpack queries and peak RSS.

Each ndpack row also gives its peak RSS growth (``rss MB``).  Timings are the best of
interleaved rounds; ratios are peer time / ndpack time (> 1: ndpack faster).  The
machine is shared: numbers are indicative.

    python benchmarks/bench_sorting.py [--quick] [--reps N] [--json out.json]
    python benchmarks/bench_sorting.py --huge 1e9 [--dir /big/disk]   # 8 GB sorted on disk:
                                            # time, CPU, peak RSS of a fresh process
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time

import numpy as np
from timing import best_times, optional, peak_rss_during, write_json

import ndpack
from ndpack.engine.ops import index as index_ops

blosc2 = optional("blosc2")
da = optional("dask.array")

CPARAMS = {"codec": ndpack.Codec.LZ4, "clevel": 1}


def row(name, fns, reps, rows, rss=None):
    ts = best_times(list(fns.values()), reps, budget=20.0)
    t = dict(zip(fns, ts))
    nd = t["ndpack"]
    cells = "  ".join(f"{k} {v * 1e3:8.1f} ms" for k, v in t.items())
    ratios = "  ".join(f"{k}/nd {v / nd:5.2f}" for k, v in t.items() if k != "ndpack")
    extra = f"  rss {rss / 2**20:6.0f} MB" if rss is not None else ""
    print(f"{name:<30} {cells}  | {ratios}{extra}", flush=True)
    rows.append({"case": name, "ms": {k: v * 1e3 for k, v in t.items()},
                 "ratio_vs_ndpack": {k: v / nd for k, v in t.items() if k != "ndpack"},
                 "ndpack_rss_mb": None if rss is None else rss / 2**20})


def rss_of(fn) -> int:
    return peak_rss_during(fn)[1]


def run_1d(n, reps, rows):
    rng = np.random.default_rng(0)
    x = rng.random(n)
    near = np.sort(x)
    i, j = rng.integers(0, n, (2, max(1, n // 1000)))
    near[i], near[j] = near[j], near[i]
    print(f"1-D float64, {n} items ({x.nbytes / 1e6:.0f} MB), LZ4 1")
    for label, v in (("random", x), ("nearly sorted", near)):
        a = ndpack.asarray(v, cparams=CPARAMS)
        d = a[()]
        assert np.array_equal(ndpack.sort(a)[-5:], np.sort(v)[-5:])
        fns = {"numpy": lambda d=d: np.sort(d), "ndpack": lambda a=a: ndpack.sort(a)}
        row(f"sort 1-D {label}", fns, reps, rows, rss_of(lambda a=a: ndpack.sort(a)))
        fns = {"numpy": lambda d=d: np.argsort(d, kind="stable"),
               "ndpack": lambda a=a: ndpack.argsort(a)}
        if blosc2 is not None:
            b = blosc2.asarray(v, cparams=blosc2.CParams(codec=blosc2.Codec.LZ4, clevel=1))
            fns["blosc2"] = lambda b=b: blosc2.argsort(b)
        row(f"argsort 1-D {label}", fns, reps, rows, rss_of(lambda a=a: ndpack.argsort(a)))
    return x


def run_2d(n, reps, rows):
    x = np.random.default_rng(1).random((n, n))
    chunks = (n // 4, n // 4)
    a = ndpack.asarray(x, chunks=chunks, cparams=CPARAMS)
    print(f"({n}, {n}) float64, chunks {chunks}")
    for axis in (0, 1):
        assert np.array_equal(ndpack.sort(a, axis=axis)[:3], np.sort(x, axis=axis)[:3])
        fns = {"numpy": lambda axis=axis: np.sort(x, axis=axis),
               "ndpack": lambda axis=axis: ndpack.sort(a, axis=axis)}
        row(f"sort 2-D axis {axis}", fns, reps, rows,
            rss_of(lambda axis=axis: ndpack.sort(a, axis=axis)))


def run_topk(x, reps, rows, k=1000):
    a = ndpack.asarray(x, cparams=CPARAMS)
    want = np.sort(x)[::-1][:k]
    assert np.array_equal(ndpack.sort(a, descending=True)[:k], want)
    fns = {"numpy": lambda: np.partition(x, -k)[-k:],
           "ndpack": lambda: ndpack.sort(a, descending=True)[:k]}
    if da is not None:
        dx = da.from_array(x, chunks=a.chunks)
        assert np.array_equal(da.topk(dx, k).compute(scheduler="threads"), want)
        fns["dask"] = lambda: da.topk(dx, k).compute(scheduler="threads")
    row(f"top {k} (sort descending)", fns, reps, rows)


def run_sets(x, n, m2, reps, rows):
    ints = np.random.default_rng(2).integers(0, 10**6, n)
    ai = ndpack.asarray(ints, cparams=CPARAMS)
    di = ai[()]
    assert np.array_equal(ndpack.unique_counts(ai).counts[:5], np.unique_counts(di).counts[:5])
    row("unique_counts int64", {"numpy": lambda: np.unique_counts(di),
                                "ndpack": lambda: ndpack.unique_counts(ai)}, reps, rows,
        rss_of(lambda: ndpack.unique_counts(ai)))
    mask = np.random.default_rng(3).random((m2, m2)) < 0.1
    am = ndpack.asarray(mask, cparams=CPARAMS)
    dm = am[()]
    row("nonzero 10% mask", {"numpy": lambda: np.nonzero(dm),
                             "ndpack": lambda: ndpack.nonzero(am)}, reps, rows,
        rss_of(lambda: ndpack.nonzero(am)))
    a = ndpack.asarray(x, cparams=CPARAMS)
    d = a[()]
    q = [0.01, 0.5, 0.99]
    assert np.array_equal(ndpack.quantile(a, q), np.quantile(d, q))
    row("quantile 1/50/99%", {"numpy": lambda: np.quantile(d, q),
                              "ndpack": lambda: ndpack.quantile(a, q)}, reps, rows,
        rss_of(lambda: ndpack.quantile(a, q)))
    row("median", {"numpy": lambda: np.median(d), "ndpack": lambda: ndpack.median(a)},
        reps, rows, rss_of(lambda: ndpack.median(a)))


def run_disk(x, reps, rows):
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        src = os.path.join(tmp, "x.b2nd")
        a = ndpack.asarray(x, cparams=CPARAMS, urlpath=src, mode="w")
        a = ndpack.open(src)
        out = os.path.join(tmp, "s.b2nd")
        fns = {"numpy": lambda: np.sort(a[()]),
               "ndpack": lambda: ndpack.sort(a, urlpath=out, cparams=CPARAMS)}
        row("sort 1-D file -> file", fns, reps, rows,
            rss_of(lambda: ndpack.sort(a, urlpath=out, cparams=CPARAMS)))


def _rchar() -> int:
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def read_bytes(fn) -> int:
    """Bytes read by system calls while `fn` runs once (Linux; 0 elsewhere)."""
    before = _rchar()
    fn()
    return _rchar() - before


def cpu_time(fn, reps: int) -> float:
    """The least process CPU time (all threads) of `reps` calls of `fn`."""
    best = float("inf")
    for _ in range(max(1, reps)):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


@contextlib.contextmanager
def scanning():
    """ndpack's queries without the index (the plain scan it falls back to)."""
    old = index_ops.MAX_FRACTION
    index_ops.MAX_FRACTION = 0.0
    try:
        yield
    finally:
        index_ops.MAX_FRACTION = old


def run_query(n, reps, rows):
    """Range queries selecting 0.01%, 0.1% and 1% of `n` random float64 on disk."""
    x = np.random.default_rng(7).random(n)
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        path = os.path.join(tmp, "q.b2nd")
        ndpack.asarray(x, cparams=CPARAMS, urlpath=path, mode="w")
        a = ndpack.open(path)
        t, rss = peak_rss_during(lambda: a.create_index())
        print(f"range queries, {n} random float64 on disk (LZ4 1); ndpack create_index "
              f"{t:.2f} s (rss {rss / 2**20:.0f} MB, index {a.indexes[0]['cbytes'] / 1e6:.0f} "
              f"MB)", flush=True)
        b = None
        if blosc2 is not None:
            bpath = os.path.join(tmp, "b.b2nd")
            blosc2.asarray(x, urlpath=bpath, mode="w",
                           cparams=blosc2.CParams(codec=blosc2.Codec.LZ4, clevel=1))
            b = blosc2.open(bpath, mode="a")
            t, rss = peak_rss_during(lambda: b.create_index(kind=blosc2.IndexKind.FULL))
            print(f"python-blosc2 create_index(kind=FULL) {t:.2f} s (rss "
                  f"{rss / 2**20:.0f} MB)", flush=True)
            bplain = os.path.join(tmp, "c.b2nd")
            blosc2.asarray(x, urlpath=bplain, mode="w",
                           cparams=blosc2.CParams(codec=blosc2.Codec.LZ4, clevel=1))
            bs = blosc2.open(bplain, mode="r")
        for frac in (1e-4, 1e-3, 1e-2):
            lo = 0.5
            hi = lo + frac
            want = x[(x > lo) & (x < hi)]

            def nd():
                return a[(a > lo) & (a < hi)]

            def scan():
                with scanning():
                    return a[(a > lo) & (a < hi)]
            assert np.array_equal(nd(), want) and np.array_equal(scan(), want)
            fns = {"ndpack": nd, "scan": scan,
                   "numpy": lambda: x[(x > lo) & (x < hi)]}
            if b is not None:
                def b2():
                    return b[(b > lo) & (b < hi)][:]

                def b2scan():
                    return bs[(bs > lo) & (bs < hi)][:]
                assert np.array_equal(b2(), want)
                fns["blosc2"] = b2
                fns["b2 scan"] = b2scan
            name = f"range {frac * 100:g}% (index)"
            row(name, fns, reps, rows, rss_of(nd))
            got = {k: read_bytes(fns[k]) for k in fns if k != "numpy"}
            cpu = {k: cpu_time(fns[k], reps) for k in ("ndpack", "scan")}
            rows[-1]["bytes_read"] = got
            rows[-1]["cpu_ms"] = {k: v * 1e3 for k, v in cpu.items()}
            print("    bytes read: " + "  ".join(f"{k} {v / 1e6:.1f} MB"
                                                 for k, v in got.items())
                  + "  | cpu: " + "  ".join(f"{k} {v * 1e3:.1f} ms" for k, v in cpu.items())
                  + f"  scan/nd {cpu['scan'] / cpu['ndpack']:.1f}", flush=True)


_HUGE = """
import os, resource, sys, time
import numpy as np
import ndpack
n, d = int(sys.argv[1]), sys.argv[2]
a = ndpack.empty((n,), dtype="f8", urlpath=os.path.join(d, "x.b2nd"), mode="w",
                 cparams={"codec": ndpack.Codec.LZ4, "clevel": 1})
rng = np.random.default_rng(0)
step = a.chunks[0] * 4
for lo in range(0, n, step):
    a[lo:min(n, lo + step)] = rng.random(min(n, lo + step) - lo)
del a
a = ndpack.open(os.path.join(d, "x.b2nd"))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0, c0 = time.perf_counter(), time.process_time()
s = ndpack.sort(a, urlpath=os.path.join(d, "s.b2nd"), mode="w")
print(time.perf_counter() - t0, time.process_time() - c0,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, base * 1024)
prev = -np.inf
for lo in range(0, n, s.chunks[0] * 8):
    part = s[lo:min(n, lo + s.chunks[0] * 8)]
    assert part[0] >= prev and np.all(np.diff(part) >= 0)
    prev = part[-1]
"""


def run_huge(n: int, where: str, rows: list) -> None:
    """Sort `n` random float64 on disk (10**9: 8 GB) in a fresh process: time, CPU
    and peak RSS of the whole process (the target: <= 500 MB for 10**9)."""
    import subprocess
    d = tempfile.mkdtemp(prefix="ndpack-sort-huge-", dir=where)
    try:
        out = subprocess.run([sys.executable, "-c", _HUGE, str(n), d], check=True,
                             capture_output=True, text=True).stdout.split()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    wall, cpu, peak, base = (float(v) for v in out)
    print(f"sort of {n:.0e} float64 on disk: {wall:.0f} s wall, {cpu:.0f} s CPU, "
          f"peak RSS {peak / 1e6:.0f} MB (before the sort {base / 1e6:.0f} MB)")
    rows.append({"case": f"sort {n:.0e} on disk", "nd_s": wall, "nd_cpu_s": cpu,
                 "peak_rss": peak})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small arrays, for CI")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", help="write the rows to this file")
    p.add_argument("--huge", type=float, metavar="N",
                   help="only sort N random float64 on disk (1e9: 8 GB) in a fresh process")
    p.add_argument("--dir", default=None, help="folder for --huge's files")
    args = p.parse_args(argv)
    if args.huge:
        rows = []
        run_huge(int(args.huge), args.dir, rows)
        write_json(args.json, rows)
        return 0
    n = 10**6 if args.quick else 10**8
    m2 = 1000 if args.quick else 4000
    rows: list = []
    x = run_1d(n, args.reps, rows)
    run_2d(m2, args.reps, rows)
    run_topk(x, args.reps, rows)
    run_sets(x, n, m2, args.reps, rows)
    if not args.quick:
        run_disk(x, args.reps, rows)
    run_query(n, args.reps, rows)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
