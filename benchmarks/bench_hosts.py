"""Issue 40's table: the workloads where python-blosc2 won on an AVX2-only host, each
against python-blosc2 in one process at identical settings (codec, level, filters,
chunks, blocks, threads), results checked against NumPy.  Ratios are python-blosc2
time / ndpack time (> 1: ndpack faster), best of a few interleaved rounds.  The host
line at the top says where they were measured (CPU, caches, ISA).

Rows: the trig expression ``sin(a)**2 + cos(b)*exp(c) + arctan2(a, b)`` in memory
(linspace and random operands), with operands and result uncompressed (clevel 0), and
over .b2nd files into a file; ``compute(clevel=0)`` of ``a + b + c`` and
``sqrt(a + 2*b + c/2)**1.2``; ``save_array``/``load_array`` in a loop that writes and
reads each file in turn (medians); 4-D single-index slices in memory; concat of three
aligned ZSTD-5 inputs (per-call overhead); ZSTD-1 and ZSTD-9 compression, with the
library floor (the system libzstd against the one python-blosc2 bundles, on one
identical block) when the ``zstandard`` package is installed.

    python benchmarks/bench_hosts.py            # the issue's sizes (3 x 4000^2, 400 MB)
    python benchmarks/bench_hosts.py --quick    # small sizes (CI)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import ndpack
from timing import best_times, write_json

try:
    import blosc2
except ImportError:  # the peer is a bench dependency
    blosc2 = None

ROWS: list[dict] = []


def row(name: str, t_nd: float, t_b2: float, note: str = "") -> None:
    ROWS.append({"row": name, "ndpack_s": t_nd, "blosc2_s": t_b2, "ratio": t_b2 / t_nd})
    print(f"{name:58s} nd {t_nd * 1e3:9.2f} ms  b2 {t_b2 * 1e3:9.2f} ms  "
          f"b2/nd {t_b2 / t_nd:5.2f} {note}", flush=True)


def cp(lib, codec="ZSTD", clevel=1, **kw):
    return lib.CParams(codec=getattr(lib.Codec, codec), clevel=clevel, **kw)


def operands(lib, xs, chunks=None, blocks=None, **kw):
    return [lib.asarray(x, chunks=chunks, blocks=blocks, **kw) for x in xs]


TRIG = "sin(a)**2 + cos(b)*exp(c) + arctan2(a, b)"


def trig_ref(a, b, c):
    return np.sin(a) ** 2 + np.cos(b) * np.exp(c) + np.arctan2(a, b)


def bench_expressions(n: int, tmp: str, reps: int) -> None:
    rng = np.random.default_rng(0)
    lin = [np.linspace(-3 + i, 3 + i, n * n).reshape(n, n) for i in range(3)]
    rnd = [rng.uniform(-3, 3, (n, n)) for _ in range(3)]
    for data, xs in (("lin", lin), ("rand", rnd)):
        bb = operands(blosc2, xs, cparams=cp(blosc2))
        chunks, blocks = bb[0].chunks, bb[0].blocks
        nn = operands(ndpack, xs, chunks, blocks, cparams=cp(ndpack))
        e_nd = ndpack.lazyexpr(TRIG, operands=dict(zip("abc", nn)))
        e_b2 = blosc2.lazyexpr(TRIG, operands=dict(zip("abc", bb)))
        np.testing.assert_allclose(e_nd[()], trig_ref(*xs), rtol=1e-12, atol=1e-12)
        t = best_times([lambda: e_nd[()], lambda: e_b2[()]], reps)
        row(f"trig [()] in memory, {data}", *t)
    # uncompressed operands and result
    bb = operands(blosc2, rnd, cparams=cp(blosc2, clevel=0))
    nn = operands(ndpack, rnd, bb[0].chunks, bb[0].blocks, cparams=cp(ndpack, clevel=0))
    e_nd = ndpack.lazyexpr(TRIG, operands=dict(zip("abc", nn)))
    e_b2 = blosc2.lazyexpr(TRIG, operands=dict(zip("abc", bb)))
    t = best_times([lambda: e_nd.compute(cparams=cp(ndpack, clevel=0)),
                    lambda: e_b2.compute(cparams=cp(blosc2, clevel=0))], reps)
    row("trig compute(), clevel 0, rand", *t)
    t = best_times([lambda: e_nd[()], lambda: e_b2[()]], reps)
    row("trig [()], clevel 0 operands, rand", *t)
    # files
    paths = {}
    for lib, name in ((ndpack, "nd"), (blosc2, "b2")):
        paths[name] = []
        for i, x in enumerate(rnd):
            p = os.path.join(tmp, f"{name}{i}.b2nd")
            lib.asarray(x, urlpath=p, mode="w", chunks=bb[0].chunks, blocks=bb[0].blocks,
                        cparams=cp(lib))
            paths[name].append(p)
    fn = [ndpack.open(p) for p in paths["nd"]]
    fb = [blosc2.open(p) for p in paths["b2"]]
    e_nd = ndpack.lazyexpr(TRIG, operands=dict(zip("abc", fn)))
    e_b2 = blosc2.lazyexpr(TRIG, operands=dict(zip("abc", fb)))
    out_nd, out_b2 = os.path.join(tmp, "rn.b2nd"), os.path.join(tmp, "rb.b2nd")
    t = best_times([lambda: e_nd.compute(urlpath=out_nd, mode="w"),
                    lambda: e_b2.compute(urlpath=out_b2, mode="w")], reps)
    row("trig compute(urlpath=) over .b2nd files, warm", *t)
    # clevel 0 compute of plain and power trees, linspace
    bb = operands(blosc2, lin, cparams=cp(blosc2))
    nn = operands(ndpack, lin, bb[0].chunks, bb[0].blocks, cparams=cp(ndpack))
    for text in ("a + b + c", "sqrt(a + 2*b + c/2)**1.2"):
        e_nd = ndpack.lazyexpr(text, operands=dict(zip("abc", nn)))
        e_b2 = blosc2.lazyexpr(text, operands=dict(zip("abc", bb)))
        t = best_times([lambda: e_nd.compute(cparams=cp(ndpack, clevel=0)),
                        lambda: e_b2.compute(cparams=cp(blosc2, clevel=0))], reps)
        row(f"compute(clevel=0) of {text}, lin", *t)


def bench_save_load(nbytes: int, tmp: str, rounds: int) -> None:
    rng = np.random.default_rng(1)
    n = nbytes // 8
    cases = [("random", rng.random(n), c, l) for c, l in
             (("LZ4", 1), ("LZ4", 5), ("ZSTD", 1), ("ZSTD", 5))]
    noisy = np.sin(np.arange(n) * 1e-4) + rng.normal(0, 1e-3, n)
    cases.append(("sin+noise", noisy, "LZ4", 5))
    p_nd, p_b2 = os.path.join(tmp, "s_nd.b2nd"), os.path.join(tmp, "s_b2.b2nd")
    for data, x, codec, clevel in cases:
        ts = {k: [] for k in ("nds", "ndl", "b2s", "b2l")}
        for _ in range(rounds):                      # write, then read, each in turn
            t0 = time.perf_counter()
            ndpack.save_array(x, p_nd, cparams=cp(ndpack, codec, clevel))
            t1 = time.perf_counter()
            y = ndpack.load_array(p_nd)
            t2 = time.perf_counter()
            blosc2.save_array(x, p_b2, mode="w", cparams=cp(blosc2, codec, clevel))
            t3 = time.perf_counter()
            z = blosc2.load_array(p_b2)
            t4 = time.perf_counter()
            ts["nds"].append(t1 - t0), ts["ndl"].append(t2 - t1)
            ts["b2s"].append(t3 - t2), ts["b2l"].append(t4 - t3)
            assert y.tobytes() == x.tobytes() and z.tobytes() == x.tobytes()
            del y, z
        m = {k: statistics.median(v) for k, v in ts.items()}
        row(f"save_array {nbytes >> 20} MB {data}, {codec}-{clevel} (loop median)",
            m["nds"], m["b2s"])
        row(f"load_array {nbytes >> 20} MB {data}, {codec}-{clevel} (loop median)",
            m["ndl"], m["b2l"])


def bench_slices(shape, reps: int) -> None:
    chunks, blocks = (10, 25, 50, 50), (3, 5, 10, 20)
    x = np.linspace(0, 1, int(np.prod(shape))).reshape(shape)
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks, cparams=cp(ndpack, "LZ4", 5))
    b = blosc2.asarray(x, chunks=chunks, blocks=blocks, cparams=cp(blosc2, "LZ4", 5))
    mid = [s // 2 for s in shape]
    for name, key in (("a[i]", (mid[0],)), ("a[:, i]", (slice(None), mid[1])),
                      ("a[:, :, i]", (slice(None), slice(None), mid[2])),
                      ("a[..., i]", (Ellipsis, mid[3]))):
        np.testing.assert_array_equal(a[key], x[key])
        t = best_times([lambda: a[key], lambda: b[key]], reps)
        row(f"4-D slice {name} of {shape}, LZ4-5, in memory", *t)


def bench_concat(n: int, reps: int) -> None:
    xs = [np.linspace(i, i + 1, n * n, dtype=np.float32).reshape(n, n) for i in range(3)]
    nn = [ndpack.asarray(x, cparams=cp(ndpack, "ZSTD", 5)) for x in xs]
    bb = [blosc2.asarray(x, cparams=cp(blosc2, "ZSTD", 5)) for x in xs]
    np.testing.assert_array_equal(ndpack.concat(nn, axis=0)[:], np.concatenate(xs))
    t = best_times([lambda: ndpack.concat(nn, axis=0), lambda: blosc2.concat(bb, axis=0)],
                   reps * 10, interleave=False)
    row(f"concat of 3 aligned ({n}, {n}) float32 ZSTD-5, default call", *t)


def bench_zstd(nbytes: int, reps: int) -> None:
    rng = np.random.default_rng(2)
    n = nbytes // 8
    smooth = np.linspace(0, 1, n)
    noisy = np.sin(np.arange(n) * 1e-3) + rng.normal(0, 1e-3, n)
    for data, x, clevel, size in (("smooth", smooth, 1, n), ("sin+noise", noisy, 9, n // 8)):
        y = x[:size]
        t = best_times([lambda: ndpack.compress2(y, cparams=cp(ndpack, "ZSTD", clevel,
                                                                nthreads=2, typesize=8)),
                        lambda: blosc2.compress2(y, cparams=cp(blosc2, "ZSTD", clevel,
                                                               nthreads=2, typesize=8))],
                       reps)
        note = ""
        floor = _zstd_floor(y, clevel)
        if floor is not None:
            note = (f"(one block, libzstd {floor[0]} {floor[1] * 1e3:.2f} ms vs bundled "
                    f"{floor[2]} {floor[3] * 1e3:.2f} ms: {floor[1] / floor[3]:.2f}x)")
        row(f"compress2 ZSTD-{clevel} {data} {y.nbytes >> 20} MB, 2 threads", *t, note=note)


def _zstd_floor(x, clevel):
    """The system libzstd against zstandard's bundled one on one identical shuffled
    block of `x` (the chunk's first), at the level C-Blosc2 maps `clevel` to."""
    try:
        import ctypes
        import zstandard
        lib = ctypes.CDLL("libzstd.so.1")
    except (ImportError, OSError):
        return None
    level = 22 if clevel == 9 else 2 * clevel - 1
    chunk = ndpack.compress2(x, cparams=cp(ndpack, "ZSTD", clevel, nthreads=1, typesize=8))
    bs = int.from_bytes(chunk[8:12], "little")
    blk = np.ascontiguousarray(x[:bs // 8].view(np.uint8).reshape(-1, 8).T).tobytes()
    lib.ZSTD_createCCtx.restype = ctypes.c_void_p
    lib.ZSTD_compressCCtx.restype = ctypes.c_size_t
    lib.ZSTD_compressCCtx.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                      ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.ZSTD_versionString.restype = ctypes.c_char_p
    cctx = lib.ZSTD_createCCtx()
    dst = ctypes.create_string_buffer(2 * len(blk))
    src = ctypes.create_string_buffer(blk, len(blk))
    zc = zstandard.ZstdCompressor(level=level)
    t_sys, t_bun = best_times([
        lambda: lib.ZSTD_compressCCtx(cctx, dst, 2 * len(blk), src, len(blk), level),
        lambda: zc.compress(blk)], 5)
    return (lib.ZSTD_versionString().decode(), t_sys,
            ".".join(map(str, zstandard.ZSTD_VERSION)), t_bun)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if blosc2 is None:
        print("python-blosc2 is not installed: nothing to compare with")
        return 0
    q = args.quick
    reps = 2 if q else 5
    with tempfile.TemporaryDirectory() as tmp:
        bench_expressions(1000 if q else 4000, tmp, reps)
        bench_save_load((40 if q else 400) << 20, tmp, 3)
        bench_slices((10, 20, 60, 50) if q else (50, 100, 300, 250), 10 if q else reps)
        bench_concat(1000 if q else 3000, reps)
        bench_zstd((16 if q else 64) << 20, reps)
    write_json(args.json, ROWS)
    worst = min(ROWS, key=lambda r: r["ratio"])
    print(f"\nlowest ratio: {worst['ratio']:.2f} ({worst['row']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
