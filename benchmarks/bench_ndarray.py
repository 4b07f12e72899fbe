"""NDArray slicing and full reads: ndpack vs python-blosc2, zarr, h5py and NumPy.

The "Blosc2 NDim" benchmark (issue 4).

1. Slicing.  A (50, 100, 300, 250) float64 array (``--quick``: (20, 40, 120, 100)) is
   stored with the same chunks, blocks and cparams by ndpack and python-blosc2, in
   memory and on disk, and by zarr (Blosc codec) and h5py (Blosc2 filter of
   hdf5plugin, else gzip) on disk with the same chunks.  For each dimension ``d``,
   ``a[..., i, ...]`` (one index along ``d``, the full extent along the others) is read
   at three positions (first, middle, last); "ndindex" reads single elements
   ``a[i, j, k, l]`` (a batch of 20 random points per timing).  zarr and h5py are
   built for both cparams with ``--quick``, for LZ4 only at full size (their reads of
   whole chunks make the full run long).  Layouts, the same for every library: the
   default of python-blosc2 for that shape (``compute_chunks_blocks(policy="blosc2")``),
   ndpack's default (chunks capped at 16 MiB; when it differs), a cubic-ish one
   (chunks (10, 25, 50, 50), blocks (5, 5, 25, 25)) and issue 26's "odd blocks" (chunks
   (10, 25, 50, 50), blocks (3, 5, 10, 20), LZ4 only); two cparams: LZ4 clevel 5 +
   shuffle, and the libraries' default CParams() (ZSTD clevel 5 + shuffle).  On disk
   the arrays are written, then reopened read-only with ``open(path, mode="r")``.

2. ``asarray`` of a 1 GB float64 array (``--quick``: 100 MB) with LZ4 and with the
   defaults, and the full read ``[:]``, vs python-blosc2, ``np.array(np.memmap)`` of a
   file in the page cache, and a plain NumPy copy (``np.copyto`` into a preallocated
   array); the fraction of memcpy speed is printed.

3. ``--part verify``: the cost of chunk checksums (docs/storage.md).  The same 1 GB
   (``--quick``: 100 MB) arrays -- sin + noise (LZ4 ratio ~1.4) and a linspace (ratio
   > 10) -- written to disk with checksums, LZ4 and ZSTD, read whole ``[:]`` with
   ``dparams={"verify": True}`` and ``{"verify": False}`` (interleaved rounds); the
   ratio is the time with verification over the time without (1.05 = 5% cost), in wall
   time and in CPU time of all threads, and per chunk ("1-thr": one thread reads each
   chunk from the file and decodes it, the best of several tries per chunk, summed --
   the steadiest on a loaded machine).  The crc32c kernel's speed on the compressed
   bytes is printed beside it.

4. ``--part partial``: the cost of checking what partial reads decode (block
   checksums, issue 41).  A 2-D float64 array (noisy and smooth data, LZ4 and ZSTD,
   on disk: positioned reads of the wanted blocks, and memory-mapped) read by a slice
   of two blocks, a point and a box across chunks, with ``verify=False``, ``True`` (the
   default: the blocks' checksums) and ``"full"`` (whole chunks read and hashed); the
   ratios are the times over ``verify=False`` (1.05 = 5% cost), one thread, best of
   interleaved rounds.

Timings are the best of several interleaved rounds (machine noise hits all peers
alike).  Ratios are peer time / ndpack time: > 1 means ndpack is faster.

    python benchmarks/bench_ndarray.py            # full size
    python benchmarks/bench_ndarray.py --quick    # small, for CI
    python benchmarks/bench_ndarray.py --json out.json
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import ndpack
from timing import write_json, optional

blosc2 = optional("blosc2")
zarr = optional("zarr")
h5py = optional("h5py")
hdf5plugin = optional("hdf5plugin")


def best_times(fns, reps: int, budget: float = 3.0) -> list[float]:
    """Best time of each function, interleaved, `reps` rounds or until `budget` s."""
    best = [float("inf")] * len(fns)
    spent = 0.0
    for r in range(reps):
        if spent > budget and r >= 1:
            break
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            best[i] = min(best[i], dt)
            spent += dt
    return best


def cparams_for(lib, name: str):
    if name == "lz4":
        return lib.CParams(codec=lib.Codec.LZ4, clevel=5, filters=[lib.Filter.SHUFFLE],
                           filters_meta=[0])
    return lib.CParams()                         # the library default (ZSTD, clevel 5)


def make_data(shape) -> np.ndarray:
    n = int(np.prod(shape))
    rng = np.random.default_rng(0)
    x = np.sin(np.arange(n) * 1e-4)
    x += rng.normal(0, 1e-6, n)
    return x.reshape(shape)


def slice_cases(shape, npoints: int):
    """(name, key or list of keys) pairs."""
    cases = []
    for d, n in enumerate(shape):
        for pos in (0, n // 2, n - 1):
            key = (slice(None),) * d + (pos,)
            cases.append((f"dim{d}[{pos}]", key))
    rng = np.random.default_rng(1)
    pts = [tuple(int(rng.integers(0, n)) for n in shape) for _ in range(npoints)]
    cases.append((f"ndindex x{npoints}", pts))
    return cases


def reader(arr, key):
    if isinstance(key, list):
        return lambda: [arr[k] for k in key]
    return lambda: arr[key]


def build_peers(x, chunks, blocks, cpname, tmp, others: bool):
    """{name: array-like} for the peers of one layout and one cparams."""
    peers = {}
    kw = {"chunks": chunks, "blocks": blocks}
    peers["nd-mem"] = ndpack.asarray(x, cparams=cparams_for(ndpack, cpname), **kw)
    # on disk: written, then reopened read-only (the usual way to read a stored array)
    path = os.path.join(tmp, f"nd-{cpname}.b2nd")
    ndpack.asarray(x, cparams=cparams_for(ndpack, cpname), urlpath=path, mode="w", **kw)
    peers["nd-disk"] = ndpack.open(path, mode="r")
    peers["nd-mmap"] = ndpack.open(path, mmap_mode="r")
    if blosc2 is not None:
        peers["b2-mem"] = blosc2.asarray(x, cparams=cparams_for(blosc2, cpname), **kw)
        path = os.path.join(tmp, f"b2-{cpname}.b2nd")
        blosc2.asarray(x, cparams=cparams_for(blosc2, cpname), urlpath=path, mode="w", **kw)
        peers["b2-disk"] = blosc2.open(path, mode="r")
    if not others:
        return peers
    cname = "lz4" if cpname == "lz4" else "zstd"
    if zarr is not None:
        path = os.path.join(tmp, f"z-{cpname}.zarr")
        if int(zarr.__version__.split(".")[0]) >= 3:
            from zarr.codecs import BloscCodec
            z = zarr.create_array(store=path, shape=x.shape, chunks=chunks, dtype=x.dtype,
                                  compressors=BloscCodec(cname=cname, clevel=5,
                                                         shuffle="shuffle"),
                                  overwrite=True)
        else:
            from numcodecs import Blosc
            z = zarr.open(path, mode="w", shape=x.shape, chunks=chunks, dtype=x.dtype,
                          compressor=Blosc(cname=cname, clevel=5, shuffle=Blosc.SHUFFLE))
        z[...] = x
        peers["zarr"] = z
    if h5py is not None:
        path = os.path.join(tmp, f"h5-{cpname}.h5")
        f = h5py.File(path, "w")
        if hdf5plugin is not None:
            filt = hdf5plugin.Blosc2(cname=cname, clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)
        else:
            filt = {"compression": "gzip", "compression_opts": 1, "shuffle": True}
        peers["h5py"] = f.create_dataset("x", data=x, chunks=chunks, **filt)
    return peers


def close_peers(peers):
    for name, p in peers.items():
        if name == "h5py":
            p.file.close()


def run_slices(quick: bool, reps: int) -> list[dict]:
    shape = (20, 40, 120, 100) if quick else (50, 100, 300, 250)
    x = make_data(shape)
    layouts = {"default": ndpack.compute_chunks_blocks(shape, dtype=x.dtype, policy="blosc2"),
               "ndpack": ndpack.compute_chunks_blocks(shape, dtype=x.dtype),
               "cubic": ((10, 25, 50, 50), (5, 5, 25, 25)),
               # issue 26: blocks that do not divide the chunks (padded edge blocks)
               "odd blocks": ((10, 25, 50, 50), (3, 5, 10, 20))}
    if layouts["ndpack"] == layouts["default"]:
        del layouts["ndpack"]                  # small shapes: the cap changes nothing
    if blosc2 is not None:
        assert tuple(map(tuple, blosc2.compute_chunks_blocks(shape, dtype=x.dtype))) == \
            tuple(map(tuple, layouts["default"])), "default layouts differ"
    npoints = 20
    cases = slice_cases(shape, npoints)
    print(f"slicing: shape {shape} float64 ({x.nbytes / 1e6:.0f} MB); "
          f"zarr {getattr(zarr, '__version__', 'missing')}, "
          f"h5py {getattr(h5py, '__version__', 'missing')} "
          f"({'Blosc2 filter' if hdf5plugin else 'gzip'})")
    rows = []
    for lname, (chunks, blocks) in layouts.items():
        for cpname in ("lz4",) if lname == "odd blocks" else ("lz4", "default"):
            tmp = tempfile.mkdtemp(prefix="bench_ndarray")
            try:
                peers = build_peers(x, chunks, blocks, cpname, tmp,
                                    others=cpname == "lz4" and lname != "odd blocks")
                os.sync()             # write the new files back now, not while timing
                names = list(peers)
                print(f"\nlayout {lname}: chunks {chunks} blocks {blocks}, cparams {cpname}"
                      f" (cratio nd {peers['nd-mem'].cratio:.2f})")
                hdr = (f"{'case':<14} " + " ".join(f"{n + ' ms':>11}" for n in names)
                       + " | " + " ".join(f"{r:>9}" for r in _ratio_names(names)))
                print(hdr)
                print("-" * len(hdr))
                for cname, key in cases:
                    ref = np.asarray(peers["nd-mem"][key] if not isinstance(key, list)
                                     else [peers["nd-mem"][k] for k in key])
                    exp = x[key] if not isinstance(key, list) else np.array([x[k] for k in key])
                    assert np.array_equal(ref, exp), (cname, "ndpack wrong result")
                    ts = best_times([reader(peers[n], key) for n in names], reps)
                    t = dict(zip(names, ts))
                    ratios = _ratios(t)
                    rows.append({"part": "slice", "layout": lname, "chunks": chunks, "blocks": blocks,
                                     "cparams": cpname, "case": cname, "times": t, "ratios": ratios})
                    print(f"{cname:<14} " + " ".join(f"{1e3 * t[n]:>11.3f}" for n in names)
                          + " | " + " ".join(f"{ratios[r]:>9.2f}" for r in _ratio_names(names)))
                    sys.stdout.flush()
                close_peers(peers)
                del peers
                gc.collect()
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return rows


_RATIOS = [("b2/nd mem", "b2-mem", "nd-mem"), ("b2/nd dsk", "b2-disk", "nd-disk"),
           ("b2/nd mmap", "b2-disk", "nd-mmap"),
           ("zarr/nd", "zarr", "nd-disk"), ("h5py/nd", "h5py", "nd-disk")]


def _ratio_names(names):
    return [r for r, a, b in _RATIOS if a in names and b in names]


def _ratios(t):
    return {r: t[a] / t[b] for r, a, b in _RATIOS if a in t and b in t}


def run_full(quick: bool, reps: int) -> list[dict]:
    nbytes = 100 * 10**6 if quick else 10**9
    n = nbytes // 8
    shape = (n,)
    x = make_data(shape)
    rows = []
    # Warm the guest memory first: on a VM, memory the guest never touched since boot
    # costs a host page fault per page on first use (here 0.3-1 GB/s), whichever
    # library touches it first; memory the guest freed before is cheap to reuse.
    warm = np.ones(6 * x.nbytes // 8)
    del warm
    dst = np.empty_like(x)
    t_memcpy, t_npcopy = best_times([lambda: np.copyto(dst, x), lambda: np.copy(x)], reps + 2)
    memcpy_gbs = x.nbytes / t_memcpy / 1e9
    tmp = tempfile.mkdtemp(prefix="bench_ndarray")
    try:
        mpath = os.path.join(tmp, "x.raw")
        x.tofile(mpath)
        mm = np.memmap(mpath, dtype=x.dtype, mode="r", shape=shape)
        np.array(mm)                                     # into the page cache
        t_mmap = best_times([lambda: np.array(mm)], reps)[0]
        print(f"\nasarray / full read: {x.nbytes / 1e6:.0f} MB float64 (sin + noise), "
              f"memcpy (np.copyto, preallocated) {memcpy_gbs:.2f} GB/s, np.copy (allocates) "
              f"{x.nbytes / t_npcopy / 1e9:.2f} GB/s, np.array(memmap) "
              f"{x.nbytes / t_mmap / 1e9:.2f} GB/s")
        hdr = (f"{'cparams':<8} | {'asarray s nd/b2':>16} {'ratio':>6} | "
               f"{'read [:] s nd/b2':>17} {'ratio':>6} {'mmap/nd':>8} | "
               f"{'nd GB/s':>8} {'b2 GB/s':>8} {'nd/memcpy':>9} {'nd/npcopy':>9} | {'cratio nd/b2':>13}")
        print(hdr)
        print("-" * len(hdr))
        for cpname in ("lz4", "default"):
            libs = [ndpack] + ([blosc2] if blosc2 is not None else [])
            arrs, tc = [None] * len(libs), [float("inf")] * len(libs)
            for r in range(max(2, reps // 2)):
                for i, lib in enumerate(libs):
                    arrs[i] = None
                    gc.collect()
                    t0 = time.perf_counter()
                    arrs[i] = lib.asarray(x, cparams=cparams_for(lib, cpname))
                    tc[i] = min(tc[i], time.perf_counter() - t0)
            outs = [None] * len(libs)

            def rd(i, outs=outs, arrs=arrs):
                outs[i] = None
                outs[i] = arrs[i][:]
            td = best_times([lambda i=i: rd(i) for i in range(len(libs))], reps)
            for o in outs:
                assert np.array_equal(o, x)
            if blosc2 is None:
                tc.append(np.nan)
                td.append(np.nan)
            crs = [a.cratio for a in arrs] + ([np.nan] if blosc2 is None else [])
            row = {"part": "full", "cparams": cpname, "nbytes": x.nbytes, "nd_asarray": tc[0],
                       "b2_asarray": tc[1], "nd_read": td[0], "b2_read": td[1], "mmap_read": t_mmap,
                       "memcpy": t_memcpy, "npcopy": t_npcopy, "nd_cratio": crs[0], "b2_cratio": crs[1],
                       "chunks": arrs[0].chunks, "blocks": arrs[0].blocks}
            rows.append(row)
            print(f"{cpname:<8} | {tc[0]:>7.3f} /{tc[1]:>7.3f} {tc[1] / tc[0]:>6.2f} | "
                  f"{td[0]:>8.3f} /{td[1]:>7.3f} {td[1] / td[0]:>6.2f} "
                  f"{t_mmap / td[0]:>8.2f} | {x.nbytes / td[0] / 1e9:>8.2f} "
                  f"{x.nbytes / td[1] / 1e9:>8.2f} {t_memcpy / td[0]:>9.2f} {t_npcopy / td[0]:>9.2f} | "
                  f"{crs[0]:>6.2f} /{crs[1]:>6.2f}")
            sys.stdout.flush()
            arrs = outs = None
            gc.collect()
        mm = None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def _wall_and_cpu(fns, reps: int, budget: float = 8.0):
    """Best wall time and best CPU time (all threads: robust when other processes
    load the machine) of each function, interleaved rounds."""
    wall, cpu = [float("inf")] * len(fns), [float("inf")] * len(fns)
    spent = 0.0
    for _ in range(reps):
        if spent > budget:
            break
        for i, fn in enumerate(fns):
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            wall[i], cpu[i] = min(wall[i], dt), min(cpu[i], dc)
            spent += dt
    return wall, cpu


def _per_chunk(off, on, reps: int) -> tuple[float, float]:
    """One thread: each chunk read from the file into a reused buffer and decoded into
    another, without (`off`) and with (`on`) verification, alternately; the sums over
    the chunks of each chunk's best time (robust when other processes load the
    machine: every chunk only needs one quiet moment)."""
    fo, fn = off.schunk._frame, on.schunk._frame
    src = bytearray(on.schunk.chunksize + 64)
    dst = bytearray(on.schunk.chunksize)
    t_off = t_on = 0.0
    for i in range(fn.nchunks):
        b_off = b_on = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            ndpack.decompress2(fo.get(i, src), dst=dst, nthreads=1)
            t1 = time.perf_counter()
            ndpack.decompress2(fn.get(i, src), dst=dst, nthreads=1)
            t2 = time.perf_counter()
            b_off, b_on = min(b_off, t1 - t0), min(b_on, t2 - t1)
        t_off += b_off
        t_on += b_on
    return t_off, t_on


def run_verify(quick: bool, reps: int) -> list[dict]:
    """Full reads of on-disk arrays with and without checksum verification."""
    from ndpack.chunks import crc32c

    n = (100 * 10**6 if quick else 10**9) // 8
    datas = {"sin+noise": make_data((n,)), "linspace": np.linspace(0, 1, n)}
    warm = np.ones(4 * n)
    del warm
    rows = []
    tmp = tempfile.mkdtemp(prefix="bench_verify")
    print(f"\nchecksum verification on full reads [:] ({8 * n / 1e6:.0f} MB float64 on disk, "
          f"crc32c kernel {ndpack._core.crc32c_kernel()}, nthreads {ndpack.DParams().nthreads})")
    hdr = (f"{'data':<10} {'cparams':<8} {'cratio':>7} | {'verify=False s':>14} "
           f"{'verify=True s':>14} {'ratio':>6} | {'CPU off':>8} {'CPU on':>8} {'ratio':>6} | "
           f"{'1-thr':>6} | {'crc32c GB/s':>11}")
    print(hdr)
    print("-" * len(hdr))
    try:
        for dname, x in datas.items():
            for cpname in ("lz4", "default"):
                path = os.path.join(tmp, f"{dname}-{cpname}.b2nd")
                ndpack.asarray(x, urlpath=path, mode="w",
                               cparams=cparams_for(ndpack, cpname)).schunk.close()
                on = ndpack.open(path, mode="r")
                off = ndpack.open(path, mode="r", dparams={"verify": False})
                assert on.schunk._frame.crcs is not None, "written without checksums"
                (t_off, t_on), (c_off, c_on) = _wall_and_cpu([lambda: off[:], lambda: on[:]],
                                                             3 * reps + 5)
                l_off, l_on = _per_chunk(off, on, 3 * reps + 5)
                chunks = [on.schunk.get_chunk(i) for i in range(on.schunk.nchunks)]
                cbytes = sum(len(c) for c in chunks)
                t_crc = best_times([lambda: [crc32c(c) for c in chunks]], reps + 3)[0]
                row = {"part": "verify", "data": dname, "cparams": cpname,
                       "cratio": on.cratio, "read_noverify": t_off, "read_verify": t_on,
                       "ratio": t_on / t_off, "cpu_noverify": c_off, "cpu_verify": c_on,
                       "cpu_ratio": c_on / c_off, "loop_noverify": l_off, "loop_verify": l_on,
                       "loop_ratio": l_on / l_off, "crc_gbs": cbytes / t_crc / 1e9}
                rows.append(row)
                print(f"{dname:<10} {cpname:<8} {on.cratio:>7.2f} | {t_off:>14.4f} "
                      f"{t_on:>14.4f} {t_on / t_off:>6.3f} | {c_off:>8.4f} {c_on:>8.4f} "
                      f"{c_on / c_off:>6.3f} | {l_on / l_off:>6.3f} | {row['crc_gbs']:>11.1f}")
                on.schunk.close()
                off.schunk.close()
                chunks = None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def run_partial(quick: bool, reps: int) -> list[dict]:
    """Slice, point and box reads with verify False / True (block checksums) / "full"."""
    rows_n = 2_000 if quick else 20_000
    shape, chunks, blocks = (rows_n, 1_000), (200, 1_000), (10, 1_000)
    rng = np.random.default_rng(0)
    datas = {"noise": rng.normal(size=shape),
             "smooth": np.cumsum(rng.normal(size=shape), axis=1)}
    keys = {"slice 2 blocks": np.s_[1_210:1_230], "point": np.s_[1_257, 333],
            "box 3 chunks": np.s_[190:610, 100:140], "column": np.s_[:, 7]}
    modes = (False, True, "full")
    print(f"\npartial reads and their checks ({8 * shape[0] * shape[1] / 1e6:.0f} MB float64 "
          f"on disk, chunks {chunks}, blocks {blocks}, one thread): time with verify=True "
          f"(block checksums) and 'full' over verify=False")
    columns = [("data", "<7"), ("cparams", "<5"), ("read", "<5"), ("key", "<15"),
               ("|", ""), ("False us", ">9"), ("True us", ">9"), ("full us", ">9"), ("|", ""),
               ("True", ">6"), ("full", ">6")]
    hdr = " ".join(f"{name:{fmt}}" for name, fmt in columns)
    print(hdr + "\n" + "-" * len(hdr))
    tmp, rows = tempfile.mkdtemp(prefix="bench_partial"), []
    try:
        for dname, x in datas.items():
            for cpname, codec in (("lz4", ndpack.Codec.LZ4), ("zstd", ndpack.Codec.ZSTD)):
                path = os.path.join(tmp, f"{dname}-{cpname}.b2nd")
                ndpack.asarray(x, urlpath=path, mode="w", chunks=chunks, blocks=blocks,
                               cparams={"codec": codec, "clevel": 5}).schunk.close()
                for read in ("file", "mmap"):
                    arrs = [ndpack.open(path, mode="r", mmap_mode="r" if read == "mmap" else None,
                                        dparams={"verify": m, "nthreads": 1}) for m in modes]
                    for kname, key in keys.items():
                        fns = [lambda a=a: a[key] for a in arrs]
                        for fn in fns:
                            fn()
                        t = best_times(fns, 10 * reps, budget=1.0)
                        row = {"part": "partial", "data": dname, "cparams": cpname,
                               "read": read, "key": kname, "t_false": t[0], "t_true": t[1],
                               "t_full": t[2], "ratio_true": t[1] / t[0],
                               "ratio_full": t[2] / t[0]}
                        rows.append(row)
                        print(f"{dname:<7} {cpname:<5} {read:<5} {kname:<15} | "
                              f"{1e6 * t[0]:>9.1f} {1e6 * t[1]:>9.1f} {1e6 * t[2]:>9.1f} | "
                              f"{t[1] / t[0]:>6.3f} {t[2] / t[0]:>6.3f}")
                    for a in arrs:
                        a.schunk.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def summarize(rows: list[dict]) -> None:
    sl = [r for r in rows if r["part"] == "slice"]
    if sl:
        for key in [r[0] for r in _RATIOS]:
            v = [r["ratios"][key] for r in sl if key in r["ratios"]]
            if not v:
                continue
            worst = min(sl, key=lambda r: r["ratios"].get(key, np.inf))
            print(f"{key:<11} min {min(v):.2f} ({worst['layout']}/{worst['cparams']}/"
                  f"{worst['case']}) geomean {np.exp(np.mean(np.log(v))):.2f}")
    part = [r for r in rows if r["part"] == "partial"]
    if part:
        v = [r["ratio_true"] for r in part]
        worst = max(part, key=lambda r: r["ratio_true"])
        print(f"partial reads, block checksums (verify=True) over verify=False: geomean "
              f"{np.exp(np.mean(np.log(v))):.3f}, max {max(v):.3f} ({worst['data']}/"
              f"{worst['cparams']}/{worst['read']}/{worst['key']}); verify='full' geomean "
              f"{np.exp(np.mean(np.log([r['ratio_full'] for r in part]))):.3f}")
    for r in rows:
        if r["part"] == "verify":
            print(f"verify {r['data']} {r['cparams']}: read with/without checksum "
                  f"verification {r['ratio']:.3f} (wall), {r['cpu_ratio']:.3f} (CPU), "
                  f"{r['loop_ratio']:.3f} (per chunk, one thread)")
        if r["part"] == "full":
            print(f"full read {r['cparams']}: b2/nd {r['b2_read'] / r['nd_read']:.2f}, "
                  f"fraction of memcpy {r['memcpy'] / r['nd_read']:.2f} (of np.copy "
                  f"{r['npcopy'] / r['nd_read']:.2f}); asarray b2/nd "
                  f"{r['b2_asarray'] / r['nd_asarray']:.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small inputs, for CI")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--part", choices=["all", "slice", "full", "verify", "partial"],
                    default="all")
    args = ap.parse_args(argv)
    reps = 2 if args.quick else 5
    print(f"ndpack {ndpack.__version__} (isa {ndpack._core.isa()}, nthreads "
          f"{ndpack.DParams().nthreads}); python-blosc2 "
          f"{blosc2.__version__ if blosc2 else 'missing'} (nthreads "
          f"{blosc2.nthreads if blosc2 else '-'})")
    rows = []
    # the full-read part first: on a machine whose memory has been churned by the
    # slicing part, allocating 1 GB outputs (transparent huge pages) gets noisy
    if args.part in ("all", "full"):
        rows += run_full(args.quick, reps)
    if args.part in ("all", "verify"):
        rows += run_verify(args.quick, reps)
    if args.part in ("all", "partial"):
        rows += run_partial(args.quick, reps)
    if args.part in ("all", "slice"):
        rows += run_slices(args.quick, reps)
    print()
    summarize(rows)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
