"""The dask backend: local engine vs ``scheduler=`` threads vs a LocalCluster vs dask+zarr.

Two expressions, ``sum(a, axis=0) + b*sin(c)`` and ``a + b + c``, over three float64
operands on disk (sin/cos ramps with noise), each computed into a new file on disk:

* ``local``: ``LazyExpr.compute(urlpath=...)`` with our engine;
* ``dask thr``: ``compute(urlpath=..., scheduler="threads")``: reductions as dask tree
  reductions, then one task per output chunk running our engine, written in order by
  this process;
* ``cluster``: the same with a ``distributed.Client`` of a LocalCluster (2 worker
  processes, 1 thread each; start-up not timed);
* ``dask+zarr``: plain dask over zarr arrays of the same chunks and codec (Blosc zstd
  clevel 1 + shuffle), ``to_zarr`` of the result, threaded scheduler.

Operands and outputs use ZSTD clevel 1 + shuffle and the same chunks everywhere.  Best
of N, peers interleaved in one process, ratios against the local engine and against
dask+zarr; ``tasks`` is the size of each graph (ours: reductions, operand reads and one
task per output chunk; dask+zarr: reads, operations and writes).

    python benchmarks/bench_dask.py [--quick] [--json f]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile

import numpy as np
from bench_expr import operands      # the same fields as the expression benchmark
from timing import best_times, write_json

import ndpack

EXPRESSIONS = ["sum(a, axis=0) + b*sin(c)", "a + b + c"]


def _dask_text(text):
    return text.replace("sum(", "da.sum(").replace("sin(", "da.sin(")


def run(shape, chunks, reps, rows, workers=2):
    import dask
    import dask.array as da
    import zarr
    from zarr.codecs import BloscCodec
    try:
        import distributed
    except ImportError:                 # the cluster column is left out
        distributed = None
        print("distributed is not installed: no LocalCluster column")

    raw = operands(shape)
    cp = {"codec": ndpack.Codec.ZSTD, "clevel": 1}
    blocks = (1,) + tuple(chunks[1:])
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        client = None
        if distributed is not None:
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True,
                dashboard_address=":0"))
            client = stack.enter_context(distributed.Client(cluster))
        p = lambda name: os.path.join(tmp, name)
        nd, zr = {}, {}
        for k, v in raw.items():
            ndpack.asarray(v, urlpath=p(f"{k}.b2nd"), mode="w", chunks=chunks,
                           blocks=blocks, cparams=cp)
            nd[k] = ndpack.open(p(f"{k}.b2nd"))
            zr[k] = zarr.create_array(p(f"{k}.zarr"), shape=shape, dtype=v.dtype,
                                      chunks=chunks,
                                      compressors=BloscCodec(cname="zstd", clevel=1,
                                                             shuffle="shuffle"))
            zr[k][...] = v
        nbytes = raw["a"].nbytes
        del raw
        print(f"\n3 x {shape} float64 on disk ({nbytes / 2**20:.0f} MB each), chunks {chunks}, "
              f"ZSTD clevel 1 + shuffle; cluster: {workers} processes x 1 thread")
        print(f"{'expression':<28}{'local':>8}{'dask thr':>9}{'cluster':>9}{'dask+zarr':>10}"
              f"   thr/local cluster/local | thr/zarr cluster/zarr |  tasks ours/zarr")
        for text in EXPRESSIONS:
            e = ndpack.lazyexpr(text, operands=nd)
            dops = {k: da.from_array(v, chunks=chunks) for k, v in zr.items()}
            lazy = eval(_dask_text(text), {"da": da}, dops)    # our own benchmark text
            out_z = zarr.create_array(p("out.zarr"), shape=lazy.shape, dtype=lazy.dtype,
                                      chunks=chunks, overwrite=True,
                                      compressors=BloscCodec(cname="zstd", clevel=1,
                                                             shuffle="shuffle"))

            def zarr_run():
                with dask.config.set(scheduler="threads"):
                    da.store(lazy, out_z, lock=False)

            fns = [lambda: e.compute(urlpath=p("out_local.b2nd"), cparams=cp),
                   lambda: e.compute(urlpath=p("out_thr.b2nd"), cparams=cp, scheduler="threads"),
                   lambda: e.compute(urlpath=p("out_cluster.b2nd"), cparams=cp, scheduler=client),
                   zarr_run]
            if client is None:
                fns[2] = lambda: None
            times = best_times(fns, reps, budget=120)
            if client is None:
                times[2] = float("nan")
            want = ndpack.open(p("out_local.b2nd"))[()]
            for f in ("out_thr.b2nd", "out_cluster.b2nd")[:2 if client else 1]:
                np.testing.assert_allclose(ndpack.open(p(f))[()], want, rtol=1e-12)
            np.testing.assert_allclose(out_z[...], want, rtol=1e-12)
            ours = len(ndpack.to_dask(e).__dask_graph__())
            theirs = len(da.store(lazy, out_z, lock=False, compute=False).__dask_graph__())
            t = dict(zip(["local", "threads", "cluster", "zarr"], times))
            print(f"{text:<28}" + "".join(f"{t[k] * 1e3:>{w}.0f}" for k, w in
                                          (("local", 8), ("threads", 9), ("cluster", 9),
                                           ("zarr", 10)))
                  + f"   {t['threads'] / t['local']:>8.2f}x {t['cluster'] / t['local']:>8.2f}x |"
                  f" {t['threads'] / t['zarr']:>7.2f}x {t['cluster'] / t['zarr']:>7.2f}x |"
                  f" {ours:>6} / {theirs}")
            rows.append(dict(expression=text, shape=shape, chunks=chunks, tasks_ours=ours,
                             tasks_zarr=theirs, **{f"{k}_s": v for k, v in t.items()}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small arrays, one round (CI)")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    rows = []
    if args.quick:
        run((64, 128, 128), (16, 128, 128), 2, rows)
    else:
        run((256, 256, 256), (32, 256, 256), 3, rows)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
