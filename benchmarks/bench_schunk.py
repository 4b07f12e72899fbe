"""Super-chunk on disk: append throughput, random single-chunk read latency, and
save_array/load_array against np.save/np.load and python-blosc2.

Both libraries, in one process, with the same parameters (LZ4 clevel 5, SHUFFLE,
typesize 8, 2 threads): append N chunks of 1 MB (float64 ramps) to a contiguous frame
on disk, then read chunks in a random order (the same order for both) and report the
median and 99th percentile latency of ``decompress_chunk(i, dst)`` and of
``get_chunk(i)`` (the positioned read alone).  Ratios are python-blosc2 time / ndpack
time, so > 1 means ndpack is faster.

The second part saves and loads 400 MB float64 arrays (arange, sin + noise, random
doubles in [0, 1) -- 1.19x compressible --, and random bytes -- incompressible --)
with ``ndpack.save_array``/``load_array`` (default cparams), ``np.save``/``np.load`` and
``blosc2.save_array``/``load_array``, best of 3, files in the page cache.  The last
part prices crash-atomic writes: ``asarray(urlpath=)``, ``save`` and ``save_array``
with fsync (``NDPACK_FSYNC=1``) against the same calls without (the default).

    python benchmarks/bench_schunk.py            # 10,000 chunks (10 GB logical), 400 MB arrays
    python benchmarks/bench_schunk.py --quick    # 300 chunks, 40 MB arrays (CI)
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np

import ndpack
from timing import best, best_times, compress_pieces

try:
    import blosc2
except ImportError:  # the peer is a bench dependency
    blosc2 = None

CHUNK = 1 << 20


def chunk_data(k: int) -> list[np.ndarray]:
    n = CHUNK // 8
    return [np.linspace(i, i + 1, n) for i in range(k)]


def make(lib, path, nthreads):
    cparams = {"codec": lib.Codec.LZ4, "clevel": 5, "typesize": 8, "nthreads": nthreads}
    return lib.SChunk(chunksize=CHUNK, cparams=cparams, dparams={"nthreads": nthreads},
                      urlpath=path, contiguous=True, mode="w")


def bench_append(lib, path, nchunks, datas, nthreads) -> float:
    s = make(lib, path, nthreads)
    t0 = time.perf_counter()
    for i in range(nchunks):
        s.append_data(datas[i % len(datas)])
    dt = time.perf_counter() - t0
    if hasattr(s, "close"):
        s.close()
    del s
    return dt


def bench_reads(s, order, nthreads) -> tuple[np.ndarray, np.ndarray]:
    dst = np.empty(CHUNK, np.uint8)
    dec, raw = [], []
    for i in order:
        t0 = time.perf_counter()
        s.decompress_chunk(int(i), dst)
        t1 = time.perf_counter()
        s.get_chunk(int(i))
        t2 = time.perf_counter()
        dec.append(t1 - t0)
        raw.append(t2 - t1)
    return np.array(dec), np.array(raw)


def stats(x: np.ndarray) -> tuple[float, float]:
    return float(np.median(x) * 1e6), float(np.percentile(x, 99) * 1e6)


def arrays(nbytes: int) -> dict[str, np.ndarray]:
    n = nbytes // 8
    rng = np.random.default_rng(0)
    return {"arange": np.arange(n, dtype=np.float64),
            "sin+noise": np.sin(np.arange(n) * 1e-4) + rng.normal(0, 1e-6, n),
            "random": rng.random(n),
            # uniformly random bytes: the incompressible case of the save target
            "randbytes": rng.integers(0, 256, n * 8, dtype=np.uint8).view(np.float64)}


def compress_floor(x: np.ndarray, **cparams) -> float:
    """Best time to compress `x` in memory (64 MiB pieces, 2 C threads, no I/O): no
    save with these cparams can be faster."""
    from ndpack.chunks import make_cparams
    cp = make_cparams(typesize=x.dtype.itemsize, nthreads=2, **cparams)
    return best(lambda: compress_pieces(x, 64 * 2**20, cp))


def bench_save_load(tmp: str, nbytes: int) -> None:
    print(f"\nsave/load of {nbytes / 1e6:.0f} MB float64 (best of 3; times in ms; "
          f"ratios = peer time / ndpack time, > 1: ndpack faster; floor = compressing in "
          f"memory, no I/O, default cparams and LZ4 clevel 1)")
    print(f"{'input':<10}{'nd save':>9}{'np.save':>9}{'b2 save':>9}{'nd load':>9}{'np.load':>9}"
          f"{'b2 load':>9}{'cratio':>8}{'floor':>7}{'lz4-1':>7}  save vs np / b2   "
          f"load vs np / b2")
    for name, x in arrays(nbytes).items():
        p_nd, p_np, p_b2 = (os.path.join(tmp, f"a.{ext}") for ext in ("b2frame", "npy", "b2f2"))
        t = dict(zip(["nd_save", "np_save"],
                     best_times([lambda: ndpack.save_array(x, p_nd),
                                 lambda: np.save(p_np, x)], 3, budget=30)))
        t["nd_load"] = best(lambda: ndpack.load_array(p_nd))
        t["np_load"] = best(lambda: np.load(p_np))
        assert ndpack.load_array(p_nd).tobytes() == x.tobytes()      # NaN bit patterns too
        if blosc2 is not None:
            t["b2_save"] = best(lambda: blosc2.save_array(x, p_b2, mode="w"))
            t["b2_load"] = best(lambda: blosc2.load_array(p_b2))
        else:
            t["b2_save"] = t["b2_load"] = float("nan")
        cratio = x.nbytes / os.path.getsize(p_nd)
        t["floor"] = compress_floor(x)
        t["lz4"] = compress_floor(x, codec=ndpack.Codec.LZ4, clevel=1)
        ms = {k: 1e3 * v for k, v in t.items()}
        print(f"{name:<10}{ms['nd_save']:>9.0f}{ms['np_save']:>9.0f}{ms['b2_save']:>9.0f}"
              f"{ms['nd_load']:>9.0f}{ms['np_load']:>9.0f}{ms['b2_load']:>9.0f}{cratio:>8.2f}"
              f"{ms['floor']:>7.0f}{ms['lz4']:>7.0f}"
              f"  {t['np_save'] / t['nd_save']:>5.2f} / {t['b2_save'] / t['nd_save']:<5.2f}"
              f"    {t['np_load'] / t['nd_load']:>5.2f} / {t['b2_load'] / t['nd_load']:<5.2f}")
        for p in (p_nd, p_np, p_b2):
            if os.path.exists(p):
                os.remove(p)


def bench_load_same(tmp: str, nbytes: int) -> None:
    """Issue 26's row: load_array of sin + noise saved by each library with LZ4 clevel 1
    (SHUFFLE, the same chunks in both files' layouts as each library picks them), best
    of 7 interleaved rounds.  ndpack checks every chunk's crc32c by default
    (python-blosc2 checks nothing); "unchecked" (``dparams={"verify": False}``) is the
    same load without the check: the floor both libraries share (decoding, and the
    kernel zeroing the fresh output's pages)."""
    x = arrays(nbytes)["sin+noise"]
    p_nd, p_b2 = os.path.join(tmp, "l.b2frame"), os.path.join(tmp, "l.b2f2")
    ndpack.save_array(x, p_nd, cparams={"codec": ndpack.Codec.LZ4, "clevel": 1})
    fns = [lambda: ndpack.load_array(p_nd),
           lambda: ndpack.load_array(p_nd, dparams={"verify": False})]
    if blosc2 is not None:
        blosc2.save_array(x, p_b2, mode="w",
                          cparams={"codec": blosc2.Codec.LZ4, "clevel": 1})
        fns.append(lambda: blosc2.load_array(p_b2))
    assert ndpack.load_array(p_nd).tobytes() == x.tobytes()
    t = best_times(fns, 7, budget=30) + [float("nan")] * (3 - len(fns))
    print(f"\nload_array of {nbytes / 1e6:.0f} MB sin+noise saved with LZ4 clevel 1 (best of "
          f"7 interleaved, ms): nd {t[0] * 1e3:.1f}, nd unchecked {t[1] * 1e3:.1f}, "
          f"b2 {t[2] * 1e3:.1f}; b2/nd {t[2] / t[0]:.2f}, b2/nd unchecked {t[2] / t[1]:.2f}")
    for p in (p_nd, p_b2):
        if os.path.exists(p):
            os.remove(p)


def bench_atomic(tmp: str, nbytes: int) -> None:
    """The cost of crash-atomic writes (ndpack/storage/atomic.py): each creating call
    writes a temporary, fsyncs it, renames it over the target and fsyncs the directory.
    Compared with the same call under ``NDPACK_FSYNC=0`` (the temporary and the rename
    stay: they cost microseconds, measured apart as "rename"), in one process."""
    print(f"\natomic writes of {nbytes / 1e6:.0f} MB float64 (best of 3, ms; ratio = "
          "with fsync / without, the price of durability)")
    print(f"{'call':<22}{'input':<10}{'fsync':>8}{'no fsync':>9}{'ratio':>7}")
    p = os.path.join(tmp, "t.b2nd")
    for name, x in list(arrays(nbytes).items())[::2]:          # arange, random
        calls = {"asarray(urlpath=)": lambda: ndpack.asarray(x, urlpath=p, mode="w"),
                 "save(NDArray)": lambda a=ndpack.asarray(x): ndpack.save(a, p),
                 "save_array": lambda: ndpack.save_array(x, p)}
        for call, fn in calls.items():
            old = os.environ.get("NDPACK_FSYNC")
            try:
                os.environ["NDPACK_FSYNC"] = "0"
                plain = best(fn)
                os.environ["NDPACK_FSYNC"] = "1"
                synced = best(fn)
            finally:
                os.environ.pop("NDPACK_FSYNC") if old is None else \
                    os.environ.__setitem__("NDPACK_FSYNC", old)
            print(f"{call:<22}{name:<10}{1e3 * synced:>8.1f}{1e3 * plain:>9.1f}"
                  f"{synced / plain:>7.2f}")
            ndpack.remove_urlpath(p)
    from ndpack.storage.atomic import replacing
    q = os.path.join(tmp, "r.bin")

    def empty_commit():
        with replacing(q) as t:
            open(t, "wb").close()
    os.environ["NDPACK_FSYNC"] = "0"
    try:
        print(f"rename + stale scan of one empty file: {1e6 * best(empty_commit):.0f} us")
    finally:
        os.environ.pop("NDPACK_FSYNC")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="300 chunks, 500 reads")
    ap.add_argument("--nchunks", type=int, default=None)
    ap.add_argument("--reads", type=int, default=None)
    ap.add_argument("--nthreads", type=int, default=2)
    ap.add_argument("--dir", default=None, help="where to write the frames (default: a temp dir)")
    args = ap.parse_args(argv)
    nchunks = args.nchunks or (300 if args.quick else 10_000)
    nreads = args.reads or (500 if args.quick else 5_000)
    tmp = tempfile.mkdtemp(prefix="bench_schunk_", dir=args.dir)
    libs = [("ndpack", ndpack)] + ([("blosc2", blosc2)] if blosc2 is not None else [])
    datas = chunk_data(4)
    order = np.random.default_rng(0).integers(0, nchunks, nreads)
    results = {}
    try:
        for name, lib in libs:
            path = os.path.join(tmp, f"{name}.b2frame")
            dt = bench_append(lib, path, nchunks, datas, args.nthreads)
            size = os.path.getsize(path)
            readers = [("", lambda lib=lib, path=path: lib.open(path, mode="r"))]
            if lib is ndpack:
                readers.append(("+mmap", lambda path=path: ndpack.open(path, mmap_mode="r")))
            for suffix, opener in readers:
                s = opener()
                bench_reads(s, order[: min(50, nreads)], args.nthreads)      # warm up
                dec, raw = bench_reads(s, order, args.nthreads)
                results[name + suffix] = dict(append=dt, size=size, dec=stats(dec),
                                              raw=stats(raw))
                del s
            os.remove(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    gb = nchunks * CHUNK / 1e9
    print(f"{nchunks} chunks of 1 MB (LZ4 clevel 5, shuffle, nthreads {args.nthreads}), "
          f"{nreads} random reads")
    print(f"{'library':<14}{'append GB/s':>12}{'file MB':>9}{'decomp med/p99 us':>20}"
          f"{'get_chunk med/p99 us':>23}")
    for name, r in results.items():
        print(f"{name:<14}{gb / r['append']:>12.2f}{r['size'] / 1e6:>9.1f}"
              f"{r['dec'][0]:>11.1f}/{r['dec'][1]:<8.1f}{r['raw'][0]:>14.1f}/{r['raw'][1]:<8.1f}")
    if "blosc2" in results:
        ref = results["blosc2"]
        for name in [n for n in results if n != "blosc2"]:
            r = results[name]
            print(f"ratio blosc2/{name}: append {ref['append'] / r['append']:.2f}x, "
                  f"decompress_chunk median {ref['dec'][0] / r['dec'][0]:.2f}x, "
                  f"get_chunk median {ref['raw'][0] / r['raw'][0]:.2f}x  (> 1: ndpack faster)")
    tmp = tempfile.mkdtemp(prefix="bench_save_", dir=args.dir)
    try:
        bench_save_load(tmp, 40 * 10**6 if args.quick else 400 * 10**6)
        bench_load_same(tmp, 40 * 10**6 if args.quick else 400 * 10**6)
        bench_atomic(tmp, 40 * 10**6 if args.quick else 400 * 10**6)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
