"""HDF5 and Zarr as homes: evaluate into them, and read operands from them.

**Writes**: ``evaluate("a*2 + b", out=target)`` over two float64 ``.b2nd`` operands in
ndpack's default chunks, into an HDF5 dataset (no filter, the Blosc2 filter of
hdf5plugin at LZ4 5 + shuffle, gzip 1) or a zarr v3 array (default codec: zstd 0;
Blosc LZ4 5 + shuffle), chunks of ~25 MB (``--quick``: ~10 MB; ``--large``: 2 x 800 MB
operands and 100 MB chunks, the issue's case).  Native: ``compute(urlpath=".b2nd")`` of
the same expression.  Peers: python-blosc2's ``evaluate(..., out=)`` over the same
files, dask (``da.from_array`` of the operands, ``da.store``), and the library's own
``out[...] = a[()] * 2 + b[()]`` ("own": NumPy in memory, then h5py/zarr compress).

**Reads**: ``evaluate("h + 1")`` into NumPy where ``h`` is the first operand stored in
HDF5 with the Blosc2 filter, or in zarr (Blosc LZ4, default zstd); native: the ``.b2nd``
operand.  Peers: h5py / zarr's own ``[...]`` plus NumPy, python-blosc2, dask.  Peak RSS
(growth of the process during one call) for ndpack and python-blosc2.

Times are best of interleaved rounds; ratios are peer time / ndpack time (> 1: ndpack
faster); "nd CPU" / "own CPU" the process CPU time (all threads) of ndpack's call and of
the library's own, which a loaded machine does not hide; "native" is ndpack's time on ``.b2nd`` divided by its time here (the target is
1 / 1.2 for writes and 1 / 1.3 for reads).

    python benchmarks/bench_foreign.py            # 2 x 200 MB operands (~2 minutes)
    python benchmarks/bench_foreign.py --quick    # 2 x 40 MB, for CI
    python benchmarks/bench_foreign.py --large    # 2 x 800 MB, 100 MB chunks (~15 minutes)
    python benchmarks/bench_foreign.py --json out.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import numpy as np
import time

from timing import best, best_times, optional, peak_rss_during, write_json

import ndpack

blosc2 = optional("blosc2")
h5py = optional("h5py")
hdf5plugin = optional("hdf5plugin")
zarr = optional("zarr")
da = optional("dask.array")


def _signal(shape, seed):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 30, int(np.prod(shape))).reshape(shape)
    return (np.sin(t) + rng.normal(0, 0.01, shape)).round(3)


def _h5_target(path, name, shape, chunks, kind):
    f = h5py.File(path, "a")
    if name in f:
        del f[name]
    kw = {"none": {}, "gzip 1": {"compression": "gzip", "compression_opts": 1},
          "Blosc2 LZ4-5": dict(hdf5plugin.Blosc2(cname="lz4", clevel=5,
                                                 filters=hdf5plugin.Blosc2.SHUFFLE))}[kind]
    return f, f.create_dataset(name, shape=shape, dtype="f8", chunks=chunks, **kw)


def _zarr_target(path, shape, chunks, kind):
    shutil.rmtree(path, ignore_errors=True)
    kw = {}
    if kind == "Blosc LZ4-5":
        kw["compressors"] = zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")
    return zarr.create_array(path, shape=shape, chunks=chunks, dtype="f8", **kw)


def _rss(row, fns, names):
    """Peak RSS growth of one call of ndpack and of python-blosc2; the process CPU
    time (all threads, best of 2) of ndpack and of the library's own."""
    for fn, name in zip(fns, names):
        if name in ("nd_s", "b2_s"):
            _, row[name.replace("_s", "_rss")] = peak_rss_during(fn)
        if name in ("nd_s", "own_s"):
            row[name.replace("_s", "_cpu")] = best(fn, 2, clock=time.process_time)


def writes(tmp, shape, out_chunks, reps, own=True):
    a_path, b_path = os.path.join(tmp, "a.b2nd"), os.path.join(tmp, "b.b2nd")
    ndpack.asarray(_signal(shape, 0), urlpath=a_path, mode="w")
    ndpack.asarray(_signal(shape, 1), urlpath=b_path, mode="w")
    a, b = ndpack.open(a_path), ndpack.open(b_path)
    ba, bb = (blosc2.open(a_path), blosc2.open(b_path)) if blosc2 else (None, None)
    ops, bops = {"a": a, "b": b}, {"a": ba, "b": bb}
    native = best_times([lambda: ndpack.lazyexpr("a*2 + b", operands=ops).compute(
        urlpath=os.path.join(tmp, "n.b2nd"), mode="w")], reps)[0]
    rows = [{"direction": "write", "target": ".b2nd (native)", "nd_s": native,
             "native_s": native}]
    targets = []
    if h5py and hdf5plugin:
        targets += [("HDF5 " + k, lambda k=k, n=i: _h5_target(
            os.path.join(tmp, "o.h5"), f"o{n}", shape, out_chunks, k)[1])
            for i, k in enumerate(("none", "Blosc2 LZ4-5", "gzip 1"))]
    if zarr:
        targets += [("zarr v3 " + k, lambda k=k: _zarr_target(
            os.path.join(tmp, "o.zarr"), shape, out_chunks, k))
            for k in ("default codec", "Blosc LZ4-5")]
    for label, make in targets:
        out = make()
        fns = [lambda: ndpack.evaluate("a*2 + b", local_dict=ops, out=out)]
        names = ["nd_s"]
        if own:
            def own_write():
                out[...] = a[()] * 2 + b[()]
            fns.append(own_write)
            names.append("own_s")
        if blosc2:
            fns.append(lambda: blosc2.evaluate("a*2 + b", local_dict=bops, out=out))
            names.append("b2_s")
        if da:
            def dask_store():
                x = da.from_array(a, chunks=a.chunks)
                y = da.from_array(b, chunks=b.chunks)
                da.store(x * 2 + y, out, lock=h5py is not None and "HDF5" in label)
            fns.append(dask_store)
            names.append("dask_s")
        times = best_times(fns, reps, budget=60)
        row = {"direction": "write", "target": label, **dict(zip(names, times)),
               "native_s": native}
        _rss(row, fns, names)
        check = np.asarray(out[-2:]) if "zarr" in label else out[-2:]
        np.testing.assert_allclose(check, _signal(shape, 0)[-2:] * 2 + _signal(shape, 1)[-2:])
        rows.append(row)
    return rows, a


def reads(tmp, a, chunks, reps):
    x = a[()]
    rows = []
    dst = np.empty(a.shape)
    native = best_times([lambda: ndpack.evaluate("h + 1", local_dict={"h": a}, out=dst)],
                        reps)[0]
    rows.append({"direction": "read", "target": ".b2nd (native)", "nd_s": native,
                 "native_s": native})
    sources = []
    if h5py and hdf5plugin:
        f, ds = _h5_target(os.path.join(tmp, "r.h5"), "h", a.shape, chunks, "Blosc2 LZ4-5")
        ds[...] = x
        f.close()
        sources.append(("HDF5 Blosc2 LZ4-5", h5py.File(os.path.join(tmp, "r.h5"), "r")["h"]))
    if zarr:
        z = _zarr_target(os.path.join(tmp, "r.zarr"), a.shape, chunks, "Blosc LZ4-5")
        z[...] = x
        sources.append(("zarr v3 Blosc LZ4-5", zarr.open_array(os.path.join(tmp, "r.zarr"),
                                                                mode="r")))
        z = _zarr_target(os.path.join(tmp, "rz.zarr"), a.shape, chunks, "default codec")
        z[...] = x
        sources.append(("zarr v3 default codec",
                        zarr.open_array(os.path.join(tmp, "rz.zarr"), mode="r")))
    for label, h in sources:
        fns = [lambda: ndpack.evaluate("h + 1", local_dict={"h": h}, out=dst),
               lambda: np.add(h[...], 1, out=dst)]
        names = ["nd_s", "own_s"]
        if blosc2:
            fns.append(lambda: blosc2.evaluate("h + 1", local_dict={"h": h}, out=dst))
            names.append("b2_s")
        if da:
            fns.append(lambda: da.store(da.from_array(h, chunks=h.chunks) + 1, dst))
            names.append("dask_s")
        times = best_times(fns, reps, budget=60)
        row = {"direction": "read", "target": label, **dict(zip(names, times)),
               "native_s": native}
        _rss(row, fns, names)
        np.testing.assert_allclose(dst, x + 1)
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--large", action="store_true",
                    help="2 x 800 MB operands, 100 MB foreign chunks")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args()
    shape, out_chunks, reps = ((40, 500, 250), (10, 500, 250), 2) if args.quick else \
        ((400, 1000, 250), (50, 1000, 250), 2) if args.large else \
        ((200, 500, 250), (25, 500, 250), 3)
    tmp = tempfile.mkdtemp(prefix="ndpack-bench-foreign-")
    try:
        rows, a = writes(tmp, shape, out_chunks, reps, own=not args.large)
        rows += reads(tmp, a, out_chunks, reps)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"ndpack {ndpack.__version__}: a*2 + b over 2 x {np.prod(shape) * 8 / 1e6:.0f} MB "
          f"(float64), foreign chunks {out_chunks}")
    print(f"{'direction':<9} {'target':<22} {'ndpack':>8} {'b2':>8} {'dask':>8} {'own':>8}"
          f" {'vs b2':>7} {'vs dask':>8} {'vs own':>7} {'native':>7} {'RSS MB':>7}"
          f" {'b2 RSS':>7} {'nd CPU':>7} {'own CPU':>8}")
    for r in rows:
        def ms(k):
            return f"{r[k] * 1e3:8.0f}" if k in r else f"{'-':>8}"

        def mb(k):
            return f"{r[k] / 1e6:7.0f}" if k in r else f"{'-':>7}"

        def ratio(k):
            return f"{r[k] / r['nd_s']:6.2f}x" if k in r else f"{'-':>7}"
        print(f"{r['direction']:<9} {r['target']:<22} {ms('nd_s')} {ms('b2_s')} "
              f"{ms('dask_s')} {ms('own_s')} {ratio('b2_s')} {ratio('dask_s'):>8} "
              f"{ratio('own_s')} {r['native_s'] / r['nd_s']:6.2f}x {mb('nd_rss')} "
              f"{mb('b2_rss')} {ms('nd_cpu'):>7} {ms('own_cpu'):>8}")
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
