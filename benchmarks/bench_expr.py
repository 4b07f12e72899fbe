"""Lazy expressions: ndpack vs NumPy, numexpr, python-blosc2, np.memmap and dask.

Three expressions (``a + b + c``, ``sqrt(a + 2*b + c/2)**1.2``,
``sin(a)**2 + cos(b)*exp(-c) + arctan2(a, b)``) over three float64 operands
(sin/cos ramps with noise), best of N, peers in one process, ratios printed:

* ``memory``: (4000, 4000) operands compressed in memory (LZ4 clevel 5 and zstd
  clevel 1, shuffle); NumPy and numexpr on the decompressed arrays are the baselines;
  ``[()]`` (result as NumPy) and ``compute()`` (compressed result, same cparams) for
  ndpack and python-blosc2.
* ``compute``: issue 26's row, ``compute()`` of ``a + b + c`` over three (4000, 4000)
  float64 arrays in memory (``linspace(i, i + 1) + normal(0, 1e-3)``, LZ4 clevel 5 +
  shuffle, default chunks (256, 4000) and blocks (8, 4000) in both libraries), the
  result at the same cparams: ndpack and python-blosc2 alternated, wall and process CPU
  time, best and median of N runs each (the last two results kept alive, as a caller
  keeps them).
* ``disk``: (7500, 5000) operands in .b2nd files (zstd clevel 1); ndpack and
  python-blosc2 ``[()]`` and ``compute(urlpath=...)`` vs a chunked numexpr loop over
  ``np.memmap`` views of .npy files.
* ``write``: ``compute(urlpath=...)`` of ``a*2 + b`` over two (10000, 10000) float64
  .b2nd files (800 MB each) with the default chunks and blocks (python-blosc2's and
  ndpack's agree at this shape), the result written with identical cparams in both
  libraries (ZSTD clevel 1 and 5, shuffle); wall and process CPU time (issue 26).
* ``foreign``: ``evaluate()`` over h5py and zarr operands (uncompressed HDF5 chunks;
  zarr with its default codec), result to NumPy, vs python-blosc2's ``evaluate`` and
  dask (``from_array`` with the datasets' chunks, threaded scheduler); time and peak
  resident-memory growth of each, on warm calls (after one unmeasured call each).

``--quick`` shrinks every size (CI).

    python benchmarks/bench_expr.py [--quick] [--section memory|compute|disk|write|foreign]
                                    [--json f]
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numexpr
import numpy as np

import ndpack
from timing import best, best_times, best_with_rss, compress_pieces, decode_all, write_json

try:
    import blosc2
except ImportError:
    blosc2 = None

EXPRESSIONS = ["a + b + c", "sqrt(a + 2*b + c/2)**1.2",
               "sin(a)**2 + cos(b)*exp(-c) + arctan2(a, b)"]
_NP_NAMES = ("sqrt", "sin", "cos", "exp", "arctan2")


def _module_text(text: str, module: str) -> str:
    for name in _NP_NAMES:
        text = text.replace(f"{name}(", f"{module}.{name}(")
    return text


def operands(shape):
    rng = np.random.default_rng(0)
    x = np.linspace(0, 20, int(np.prod(shape))).reshape(shape)
    return {"a": np.sin(x) + rng.normal(0, 1e-3, shape),
            "b": np.cos(x) + 1.5,
            "c": x / 20 + rng.normal(0, 1e-3, shape)}


def cpu_floor(ops: dict, raw: dict, text: str, reps: int) -> float:
    """The least time of ``[()]`` on this machine: the CPU time of decoding every
    operand plus numexpr's CPU time evaluating into a preallocated array, spread over
    two cores, plus the first touch of a fresh result array."""
    import time
    out = np.empty(next(iter(raw.values())).shape)
    work = best(lambda: decode_all(*ops.values()), reps, time.process_time) + \
        best(lambda: numexpr.evaluate(text, local_dict=raw, out=out), reps, time.process_time)
    touch = best_times([lambda: np.empty(out.shape).fill(0)], reps)[0]
    return work / 2 + touch


def _cpu_times(fns, reps) -> list:
    """Least process CPU time (all threads) of each function: on a shared machine the
    wall time moves with the other tenants, the CPU a call needs much less."""
    import time
    return [best(fn, reps, time.process_time) for fn in fns]


def _cpu_text(cpu) -> str:
    return "/".join(f"{c * 1e3:.0f}" for c in cpu)


def _row(text, t, cols):
    ms = "".join(f"{t[c] * 1e3:>9.0f}" for c in cols)
    print(f"{text[:42]:<43}{ms}", end="")


def memory(n, reps, rows):
    raw = operands((n, n))
    for codec, clevel in (("LZ4", 5), ("ZSTD", 1)):
        cp_nd = {"codec": ndpack.Codec[codec], "clevel": clevel}
        nd_ops = {k: ndpack.asarray(v, cparams=cp_nd) for k, v in raw.items()}
        if blosc2 is not None:
            cp_b2 = {"codec": blosc2.Codec[codec], "clevel": clevel}
            b2_ops = {k: blosc2.asarray(v, cparams=cp_b2) for k, v in raw.items()}
        print(f"\n[memory] 3 x ({n}, {n}) float64, {codec} clevel {clevel} + shuffle, chunks "
              f"{nd_ops['a'].chunks}, blocks {nd_ops['a'].blocks}; numexpr threads "
              f"{numexpr.get_num_threads()}")
        floor = best_times([lambda: decode_all(*nd_ops.values())], reps)[0]
        print(f"decoding the three operands alone (the floor of any evaluation): "
              f"{floor * 1e3:.0f} ms; a + b + c [()] cannot beat (decode + numexpr CPU on "
              f"2 cores + first touch of the result) "
              f"{cpu_floor(nd_ops, raw, EXPRESSIONS[0], reps) * 1e3:.0f} ms")
        print(f"{'expression':<43}{'numpy':>9}{'numexpr':>9}{'nd [()]':>9}{'nd comp':>9}"
              f"{'b2 [()]':>9}{'b2 comp':>9}   nd/numexpr [()] comp | b2/nd [()] comp "
              f"| floors/numexpr [()] comp | process CPU of compute()")
        for text in EXPRESSIONS:
            np_text = _module_text(text, "np")
            e = ndpack.lazyexpr(text, operands=nd_ops)
            fns = [lambda: eval(np_text, {"np": np}, raw),        # our own benchmark text
                   lambda: numexpr.evaluate(text, local_dict=raw),
                   lambda: e[()], lambda: e.compute(cparams=cp_nd)]
            if blosc2 is not None:
                e2 = blosc2.lazyexpr(text, operands=b2_ops)
                fns += [lambda: e2[()], lambda: e2.compute(cparams=cp_b2)]
            times = best_times(fns, reps, budget=60)
            cpu = _cpu_times(fns[3::2], reps)                    # nd comp, b2 comp
            # NumPy is the oracle (numexpr's libm and our sin/cos differ in the last
            # bits: absolute tolerance where the sum cancels)
            res = e[()]
            np.testing.assert_allclose(res, eval(np_text, {"np": np}, raw), rtol=1e-12,
                                       atol=1e-14)
            like = e.compute(cparams=cp_nd)
            cfloor = floor + best_times(
                [lambda: compress_pieces(res, like.schunk.chunksize, like.cparams)], reps)[0]
            t = dict(zip(["numpy", "numexpr", "nd_get", "nd_compute", "b2_get", "b2_compute"],
                         times + [float("nan")] * (6 - len(times))))
            _row(text, t, ["numpy", "numexpr", "nd_get", "nd_compute", "b2_get", "b2_compute"])
            print(f"   {t['nd_get'] / t['numexpr']:>5.2f}x {t['nd_compute'] / t['numexpr']:>5.2f}x"
                  f" | {t['b2_get'] / t['nd_get']:>5.2f}x {t['b2_compute'] / t['nd_compute']:>5.2f}x"
                  f" | {floor / t['numexpr']:>5.2f}x {cfloor / t['numexpr']:>5.2f}x"
                  f" | CPU ms nd/b2 comp {_cpu_text(cpu)}")
            rows.append(dict(section="memory", codec=codec, expression=text, decode_floor=floor,
                             compute_floor=cfloor, cpu_compute=cpu, **t))


COMPUTE_CASES = [("a + b + c", "float64"), ("a + b + c", "float32"),
                 ("a**2 + b**2 + 2*a*b + 1", "float64")]


def compute_row(n, reps, rows):
    """Issue 26's row: in-memory ``compute()`` of ``a + b + c`` (and python-blosc2's
    classic ``a**2 + b**2 + 2*a*b + 1``; float32 too), ndpack and python-blosc2 at the
    same cparams, best and median of wall and process CPU time, in two orders: each
    run of one followed by a run of the other (both see the same machine), and all
    runs of one then all of the other (python-blosc2's threads keep spinning for a
    while after its calls and slow down whatever runs right after them)."""
    import statistics
    import time
    rng = np.random.default_rng(0)
    raw64 = [np.linspace(i, i + 1, n * n).reshape(n, n) + rng.normal(0, 1e-3, (n, n))
             for i in range(3)]
    med = statistics.median
    for text, dtype in COMPUTE_CASES:
        raw = [x.astype(dtype) for x in raw64]
        cp_nd = {"codec": ndpack.Codec.LZ4, "clevel": 5}
        nd_ops = dict(zip("abc", [ndpack.asarray(x, cparams=cp_nd) for x in raw]))
        nd = ndpack.lazyexpr(text, operands=nd_ops)
        fns = {"nd": lambda nd=nd, cp=cp_nd: nd.compute(cparams=cp)}
        if blosc2 is not None:
            cp_b2 = {"codec": blosc2.Codec.LZ4, "clevel": 5}
            b2_ops = dict(zip("abc", [blosc2.asarray(x, cparams=cp_b2) for x in raw]))
            b2 = blosc2.lazyexpr(text, operands=b2_ops)
            fns["b2"] = lambda b2=b2, cp=cp_b2: b2.compute(cparams=cp)
        expected = numexpr.evaluate(text, local_dict=dict(zip("abc", raw)))
        np.testing.assert_allclose(fns["nd"]()[()], expected,
                                   rtol=1e-6 if dtype == "float32" else 1e-15)
        del raw, expected
        a = nd_ops["a"]
        print(f"\n[compute] {text}, 3 x ({n}, {n}) {dtype} in memory, LZ4 clevel 5 + "
              f"shuffle, chunks {a.chunks}, blocks {a.blocks}; {reps} runs each, ms")
        print(f"{'':18}{'wall best':>10}{'median':>8}{'CPU best':>10}{'median':>8}")
        for order in ("alternated", "grouped"):
            wall = {k: [] for k in fns}
            cpu = {k: [] for k in fns}
            kept: list = []
            seq = [k for _ in range(reps) for k in fns] if order == "alternated" \
                else [k for k in fns for _ in range(reps)]
            for k in seq:
                t0, c0 = time.perf_counter(), time.process_time()
                kept.append(fns[k]())
                cpu[k].append(time.process_time() - c0)
                wall[k].append(time.perf_counter() - t0)
                kept = kept[-2:]
            for k in fns:
                print(f"{k + ' ' + order:18}{min(wall[k]) * 1e3:>10.1f}"
                      f"{med(wall[k]) * 1e3:>8.1f}{min(cpu[k]) * 1e3:>10.1f}"
                      f"{med(cpu[k]) * 1e3:>8.1f}")
            row = dict(section="compute", expression=text, dtype=dtype, order=order, n=n,
                       **{f"{k}_{m}": f(v[k]) for k in fns for m, f, v in
                          (("wall_best", min, wall), ("wall_median", med, wall),
                           ("cpu_best", min, cpu), ("cpu_median", med, cpu))})
            if "b2" in fns:
                print(f"{'b2/nd ' + order:18}{min(wall['b2']) / min(wall['nd']):>10.2f}"
                      f"{med(wall['b2']) / med(wall['nd']):>8.2f}"
                      f"{min(cpu['b2']) / min(cpu['nd']):>10.2f}"
                      f"{med(cpu['b2']) / med(cpu['nd']):>8.2f}")
            rows.append(row)


def _memmap_loop(text, mms, out, rows_per_slab):
    for s in range(0, out.shape[0], rows_per_slab):
        sl = slice(s, s + rows_per_slab)
        numexpr.evaluate(text, local_dict={k: v[sl] for k, v in mms.items()}, out=out[sl])
    return out


def disk(shape, reps, rows):
    raw = operands(shape)
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda name: os.path.join(tmp, name)              # noqa: E731
        cp_nd = {"codec": ndpack.Codec.ZSTD, "clevel": 1}
        nd_ops, mm_ops, b2_ops, mms = {}, {}, {}, {}
        for k, v in raw.items():
            ndpack.asarray(v, cparams=cp_nd, urlpath=p(f"nd_{k}.b2nd"), mode="w")
            nd_ops[k] = ndpack.open(p(f"nd_{k}.b2nd"))
            mm_ops[k] = ndpack.open(p(f"nd_{k}.b2nd"), mmap_mode="r")
            np.save(p(f"{k}.npy"), v)
            mms[k] = np.load(p(f"{k}.npy"), mmap_mode="r")
            if blosc2 is not None:
                blosc2.asarray(v, cparams={"codec": blosc2.Codec.ZSTD, "clevel": 1},
                               urlpath=p(f"b2_{k}.b2nd"), mode="w")
                b2_ops[k] = blosc2.open(p(f"b2_{k}.b2nd"))
        del raw
        slab = max(1, (8 << 20) // (shape[1] * 8))
        print(f"\n[disk] 3 x {shape} float64 .b2nd files, ZSTD clevel 1 + shuffle, chunks "
              f"{nd_ops['a'].chunks}; memmap loop: numexpr over {slab}-row slabs")
        floor = best_times([lambda: decode_all(*mm_ops.values())], reps)[0]
        print(f"decoding the three files alone (mmap_mode='r', the floor of any evaluation): "
              f"{floor * 1e3:.0f} ms; 'nd mmap' opens them with mmap_mode='r' (as the "
              f"memmap loop maps its .npy files)")
        print(f"{'expression':<43}{'memmap':>9}{'nd [()]':>9}{'nd out=':>9}{'nd mmap':>9}"
              f"{'nd comp':>9}{'b2 [()]':>9}{'b2 comp':>9}   memmap/nd [()] out= mmap "
              f"| b2/nd [()] comp | process CPU of compute()")
        for text in EXPRESSIONS:
            out, out2 = np.empty(shape), np.empty(shape)
            e = ndpack.lazyexpr(text, operands=nd_ops)
            # the memmap loop writes into a preallocated array: so does "nd out="
            fns = [lambda: _memmap_loop(text, mms, out, slab), lambda: e[()],
                   lambda: ndpack.evaluate(text, local_dict=nd_ops, out=out2),
                   lambda: ndpack.evaluate(text, local_dict=mm_ops, out=out2),
                   lambda: e.compute(urlpath=p("nd_out.b2nd"), cparams=cp_nd)]
            if blosc2 is not None:
                e2 = blosc2.lazyexpr(text, operands=b2_ops)
                fns += [lambda: e2[()],
                        lambda: e2.compute(urlpath=p("b2_out.b2nd"), mode="w",
                                           cparams={"codec": blosc2.Codec.ZSTD, "clevel": 1})]
            times = best_times(fns, reps, budget=60)
            cpu = _cpu_times(fns[4::2], reps)                    # nd comp, b2 comp
            np.testing.assert_allclose(e[()], _memmap_loop(text, mms, out, slab), rtol=1e-9,
                                       atol=1e-12)     # numexpr's libm vs NumPy's
            cols = ["memmap", "nd_get", "nd_out", "nd_mmap", "nd_compute", "b2_get",
                    "b2_compute"]
            t = dict(zip(cols, times + [float("nan")] * (len(cols) - len(times))))
            _row(text, t, cols)
            print(f"   {t['memmap'] / t['nd_get']:>5.2f}x {t['memmap'] / t['nd_out']:>5.2f}x "
                  f"{t['memmap'] / t['nd_mmap']:>5.2f}x | "
                  f"{t['b2_get'] / t['nd_get']:>5.2f}x {t['b2_compute'] / t['nd_compute']:>5.2f}x"
                  f" | CPU ms nd/b2 comp {_cpu_text(cpu)}")
            rows.append(dict(section="disk", expression=text, decode_floor=floor,
                             cpu_compute=cpu, **t))
        del nd_ops, mm_ops, b2_ops, mms


def write(shape, reps, rows):
    """compute(urlpath=...) of a*2 + b over two .b2nd files, default layout, the
    result at identical cparams in both libraries (issue 26)."""
    import time
    rng = np.random.default_rng(0)
    x = np.linspace(0, 20, int(np.prod(shape))).reshape(shape)
    raw = {"a": np.sin(x) + rng.normal(0, 1e-3, shape), "b": np.cos(x) + 1.5}
    del x
    text = "a*2 + b"
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda name: os.path.join(tmp, name)              # noqa: E731
        nd_ops, b2_ops = {}, {}
        for k, v in raw.items():
            ndpack.asarray(v, urlpath=p(f"nd_{k}.b2nd"), mode="w")
            nd_ops[k] = ndpack.open(p(f"nd_{k}.b2nd"))
            if blosc2 is not None:
                blosc2.asarray(v, urlpath=p(f"b2_{k}.b2nd"), mode="w")
                b2_ops[k] = blosc2.open(p(f"b2_{k}.b2nd"))
        expected = raw["a"] * 2 + raw["b"]
        del raw
        a = nd_ops["a"]
        print(f"\n[write] compute(urlpath=) of {text} over 2 x {shape} float64 .b2nd files "
              f"({a.nbytes / 1e6:.0f} MB each, default cparams: ZSTD clevel {a.cparams.clevel}"
              f" + shuffle), default chunks {a.chunks}, blocks {a.blocks}"
              + (f" (python-blosc2: {b2_ops['a'].chunks}, {b2_ops['a'].blocks})"
                 if blosc2 is not None else ""))
        print(f"{'result cparams':<22}{'nd':>9}{'b2':>9}   b2/nd  | process CPU ms nd/b2")
        e = ndpack.lazyexpr(text, operands=nd_ops)
        e2 = blosc2.lazyexpr(text, operands=b2_ops) if blosc2 is not None else None
        for clevel in (1, 5):
            cp_nd = {"codec": ndpack.Codec.ZSTD, "clevel": clevel}
            fns = [lambda: e.compute(urlpath=p("nd_out.b2nd"), mode="w", cparams=cp_nd)]
            if e2 is not None:
                cp_b2 = {"codec": blosc2.Codec.ZSTD, "clevel": clevel}
                fns.append(lambda: e2.compute(urlpath=p("b2_out.b2nd"), mode="w",
                                              cparams=cp_b2))
            np.testing.assert_array_equal(fns[0]()[()], expected)
            times = best_times(fns, reps, budget=60)
            cpu = [best(fn, reps, time.process_time) for fn in fns]
            times += [float("nan")] * (2 - len(times))
            print(f"{'ZSTD clevel ' + str(clevel):<22}{times[0] * 1e3:>9.0f}{times[1] * 1e3:>9.0f}"
                  f"   {times[1] / times[0]:>5.2f}x | {_cpu_text(cpu)}")
            rows.append(dict(section="write", expression=text, clevel=clevel, nd=times[0],
                             b2=times[1], cpu=cpu))
        del nd_ops, b2_ops, e, e2


def _warm_rss(fn, reps):
    """Best time and largest peak-RSS growth of warm calls: one call first, not
    measured, so that every implementation has its caches, pools and threads (the
    growth is then what a call needs, not what a process keeps)."""
    fn()
    return best_with_rss(fn, reps)


def foreign(shape, reps, rows):
    import h5py
    import zarr
    try:
        import dask
        import dask.array as da
    except ImportError:
        da = None
    raw = operands(shape)
    chunks = (min(shape[0], max(1, (8 << 20) // (shape[1] * 8))), shape[1])
    with tempfile.TemporaryDirectory() as tmp:
        h5 = h5py.File(os.path.join(tmp, "ops.h5"), "w")
        sources = {"h5py": {k: h5.create_dataset(k, data=v, chunks=chunks) for k, v in raw.items()},
                   "zarr": {k: zarr.create_array(os.path.join(tmp, f"{k}.zarr"), data=v,
                                                 chunks=chunks) for k, v in raw.items()}}
        del raw
        print(f"\n[foreign] evaluate() over 3 x {shape} float64, chunks {chunks} (h5py "
              f"uncompressed, zarr default codec); time ms / peak RSS growth MB")
        print(f"{'source':<8}{'expression':<43}{'nd':>13}{'b2':>13}{'dask':>13}"
              "   dask/nd time  b2/nd time")
        for src, ops in sources.items():
            for text in EXPRESSIONS:
                res = {}
                res["nd"] = _warm_rss(lambda: ndpack.evaluate(text, local_dict=ops), reps)
                if blosc2 is not None:
                    res["b2"] = _warm_rss(lambda: blosc2.evaluate(text, local_dict=ops), reps)
                if da is not None:
                    dops = {k: da.from_array(v, chunks=chunks) for k, v in ops.items()}
                    lazy = eval(_module_text(text, "da"), {"da": da}, dops)  # our own text
                    with dask.config.set(scheduler="threads"):
                        res["dask"] = _warm_rss(lambda: lazy.compute(), reps)
                cells = "".join(f"{res[k][0] * 1e3:>7.0f}/{res[k][1] / 2**20:<5.0f}"
                                if k in res else f"{'-':>13}" for k in ("nd", "b2", "dask"))
                nan = (float("nan"), 0)
                print(f"{src:<8}{text[:42]:<43}{cells}   {res.get('dask', nan)[0] / res['nd'][0]:>8.2f}x"
                      f"  {res.get('b2', nan)[0] / res['nd'][0]:>8.2f}x")
                rows.append(dict(section="foreign", source=src, expression=text,
                                 **{f"{k}_s": v[0] for k, v in res.items()},
                                 **{f"{k}_rss": v[1] for k, v in res.items()}))
        h5.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--section", choices=["memory", "compute", "disk", "write", "foreign"],
                    action="append")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    sections = args.section or ["memory", "compute", "disk", "write", "foreign"]
    reps = 2 if args.quick else 5
    rows: list = []
    if "memory" in sections:
        memory(1000 if args.quick else 4000, reps, rows)
    if "compute" in sections:
        compute_row(1000 if args.quick else 4000, 3 if args.quick else 15, rows)
    if "disk" in sections:
        disk((750, 500) if args.quick else (7500, 5000), reps, rows)
    if "write" in sections:
        write((1000, 1000) if args.quick else (10000, 10000), 2 if args.quick else 3, rows)
    if "foreign" in sections:
        foreign((1000, 1000) if args.quick else (4000, 4000), reps, rows)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
