"""Chunk codec throughput: ndpack vs python-blosc2 (same process, same parameters) and memcpy.

For each input (float64: linspace, sin + noise, random), codec (blosclz, lz4, zstd),
clevel (1, 5, 9; every clevel 1-9 for linspace with blosclz and lz4, the smooth-data row
of issue 26) and thread count (1, 2) it compresses the whole buffer into one chunk
with SHUFFLE and typesize 8, decompresses it, and prints GB/s for both libraries,
the ratio ndpack / python-blosc2 (> 1 means ndpack is faster), and the compression
ratios.  The best of several repetitions is reported.

C-Blosc2's n-d codecs (ZFP_ACC, ZFP_PREC, ZFP_RATE on smooth 2-d float64, NDLZ on
smooth 2-d uint8) need the array's block shape, so they are timed on arrays:
``asarray`` of an in-memory NumPy array (compress) and ``[:]`` (decompress), same
chunks, blocks, codec_meta and threads in both libraries (no filters).

    python benchmarks/bench_codecs.py            # 100 MB inputs
    python benchmarks/bench_codecs.py --quick    # 8 MB inputs, fewer repetitions (CI)
    python benchmarks/bench_codecs.py --json out.json
    python benchmarks/bench_codecs.py --nd-only  # the n-d codecs only
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import ndpack
from timing import best_times, write_json

try:
    import blosc2
except ImportError:  # the peer is a test/bench dependency
    blosc2 = None


def inputs(nbytes: int) -> dict[str, np.ndarray]:
    n = nbytes // 8
    rng = np.random.default_rng(0)
    return {
        "linspace": np.linspace(0, 1, n),
        "sin+noise": np.sin(np.arange(n) * 1e-4) + rng.normal(0, 1e-6, n),
        "random": rng.random(n),
    }


def measure_pair(libs, codec_name: str, clevel: int, nthreads: int, x: np.ndarray, reps: int):
    """(comp GB/s, decomp GB/s, cratio) for each library, timed interleaved."""
    kws, chunks, outs, first = [], [], [], []
    for lib in libs:
        kw = dict(codec=getattr(lib.Codec, codec_name), clevel=clevel, typesize=8,
                  nthreads=nthreads, filters=[lib.Filter.SHUFFLE], filters_meta=[0])
        kws.append(kw)
        t0 = time.perf_counter()
        chunks.append(lib.compress2(x, **kw))
        first.append(time.perf_counter() - t0)
        outs.append(np.empty_like(x))
    tc = best_times([lambda lib=lib, kw=kw: lib.compress2(x, **kw)
                     for lib, kw in zip(libs, kws)], reps, first=first)
    td = best_times([lambda lib=lib, c=c, o=o: lib.decompress2(c, dst=o, nthreads=nthreads)
                     for lib, c, o in zip(libs, chunks, outs)], reps)
    for lib, o in zip(libs, outs):
        assert np.array_equal(o, x), f"{lib.__name__} round trip failed"
    return [(x.nbytes / a / 1e9, x.nbytes / b / 1e9, x.nbytes / len(c))
            for a, b, c in zip(tc, td, chunks)]


def run(quick: bool) -> list[dict]:
    size = 8 * 2**20 if quick else 100 * 10**6
    reps = 2 if quick else 5
    codecs = ["BLOSCLZ", "LZ4", "ZSTD"]
    clevels = [1, 5] if quick else [1, 5, 9]
    threads = [1, 2]
    rows = []
    data = inputs(size)
    memcpy_dst = np.empty_like(data["linspace"])
    t_memcpy = best_times([lambda: np.copyto(memcpy_dst, data["linspace"])], reps + 2)[0]
    memcpy_gbs = data["linspace"].nbytes / t_memcpy / 1e9
    print(f"inputs {size / 1e6:.0f} MB float64, SHUFFLE, typesize 8; memcpy {memcpy_gbs:.1f} GB/s")
    print(f"ndpack {ndpack.__version__} (isa {ndpack._core.isa()}); "
          f"python-blosc2 {blosc2.__version__ if blosc2 else 'missing'}")
    hdr = (f"{'input':<10} {'codec':<8} {'cl':>2} {'th':>2} | {'comp GB/s nd/b2':>16} {'ratio':>6} | "
           f"{'decomp GB/s nd/b2':>18} {'ratio':>6} | {'cratio nd/b2':>14} {'diff':>6}")
    print(hdr)
    print("-" * len(hdr))
    for name, x in data.items():
        for codec in codecs:
            levels = range(1, 10) if (not quick and name == "linspace" and
                                      codec in ("BLOSCLZ", "LZ4")) else clevels
            for clevel in levels:
                if clevel == 9 and codec == "ZSTD" and quick:
                    continue
                for nthreads in threads:
                    if blosc2 is not None:
                        nd, b2 = measure_pair([ndpack, blosc2], codec, clevel, nthreads, x, reps)
                    else:
                        nd, b2 = measure_pair([ndpack], codec, clevel, nthreads, x, reps)[0], (np.nan,) * 3
                    row = dict(input=name, codec=codec, clevel=clevel, nthreads=nthreads,
                               nd_comp=nd[0], b2_comp=b2[0], nd_decomp=nd[1], b2_decomp=b2[1],
                               nd_cratio=nd[2], b2_cratio=b2[2], memcpy=memcpy_gbs)
                    rows.append(row)
                    print(f"{name:<10} {codec:<8} {clevel:>2} {nthreads:>2} | "
                          f"{nd[0]:>7.2f} /{b2[0]:>7.2f} {nd[0] / b2[0]:>6.2f} | "
                          f"{nd[1]:>8.2f} /{b2[1]:>8.2f} {nd[1] / b2[1]:>6.2f} | "
                          f"{nd[2]:>6.2f} /{b2[2]:>6.2f} {100 * (nd[2] / b2[2] - 1):>+5.1f}%")
                    sys.stdout.flush()
    return rows


ND_CASES = [("ZFP_ACC", 256 - 3), ("ZFP_PREC", 16), ("ZFP_RATE", 37), ("NDLZ", 4),
            ("NDLZ", 8)]


def nd_inputs(quick: bool) -> tuple[np.ndarray, np.ndarray]:
    """Smooth 2-d float64 (and the same quantized to uint8 for NDLZ)."""
    shape = (1024, 1024) if quick else (3500, 3500)
    i, j = np.ogrid[:shape[0], :shape[1]]
    x = np.sin(i / 97.0) * np.cos(j / 61.0) + 1e-3 * np.sin((i + 2 * j) / 7.0)
    return x, ((x + 1.1) * 100).astype(np.uint8)


def run_nd(quick: bool) -> list[dict]:
    reps = 2 if quick else 5
    xf, xb = nd_inputs(quick)
    chunks, blocks = (512, 512), (64, 64)
    print(f"\nn-d codecs: {xf.shape} arrays, chunks {chunks}, blocks {blocks}, no filters; "
          f"asarray (comp) and [:] (decomp), in memory")
    hdr = (f"{'codec':<9} {'meta':>4} {'th':>2} | {'comp GB/s nd/b2':>16} {'ratio':>6} | "
           f"{'decomp GB/s nd/b2':>18} {'ratio':>6} | {'cratio nd/b2':>14} {'same':>5}")
    print(hdr)
    print("-" * len(hdr))
    rows = []
    for codec, meta in ND_CASES:
        x = xb if codec == "NDLZ" else xf
        for nthreads in (1, 2):
            arrs, kws = [], []
            libs = [ndpack] + ([blosc2] if blosc2 is not None else [])
            for lib in libs:
                cp = {"codec": getattr(lib.Codec, codec), "codec_meta": meta, "filters": [],
                      "filters_meta": [], "nthreads": nthreads}
                kw = dict(chunks=chunks, blocks=blocks, cparams=cp,
                          dparams={"nthreads": nthreads})
                kws.append(kw)
                arrs.append(lib.asarray(x, **kw))
            tc = best_times([lambda lib=lib, kw=kw: lib.asarray(x, **kw)
                             for lib, kw in zip(libs, kws)], reps)
            td = best_times([lambda a=a: a[:] for a in arrs], reps)
            res = [(x.nbytes / c / 1e9, x.nbytes / d / 1e9, x.nbytes / a.schunk.cbytes)
                   for c, d, a in zip(tc, td, arrs)]
            nd, b2 = res[0], res[1] if len(res) > 1 else (np.nan,) * 3
            same = len(arrs) > 1 and bool(np.array_equal(arrs[0][:], arrs[1][:]))
            rows.append(dict(input="nd-smooth", codec=codec, clevel=meta, nthreads=nthreads,
                             nd_comp=nd[0], b2_comp=b2[0], nd_decomp=nd[1], b2_decomp=b2[1],
                             nd_cratio=nd[2], b2_cratio=b2[2], same_values=same))
            print(f"{codec:<9} {meta:>4} {nthreads:>2} | {nd[0]:>7.2f} /{b2[0]:>7.2f} "
                  f"{nd[0] / b2[0]:>6.2f} | {nd[1]:>8.2f} /{b2[1]:>8.2f} {nd[1] / b2[1]:>6.2f} | "
                  f"{nd[2]:>6.2f} /{b2[2]:>6.2f} {str(same):>5}")
            sys.stdout.flush()
    return rows


def summarize(rows: list[dict]) -> None:
    for codec in ("LZ4", "ZSTD", "BLOSCLZ", "ZFP_ACC", "ZFP_PREC", "ZFP_RATE", "NDLZ"):
        sel = [r for r in rows if r["codec"] == codec]
        if not sel:
            continue
        c = [r["nd_comp"] / r["b2_comp"] for r in sel]
        d = [r["nd_decomp"] / r["b2_decomp"] for r in sel]
        cr = [r["nd_cratio"] / r["b2_cratio"] - 1 for r in sel]
        print(f"{codec:<8} compress ratio min {min(c):.2f} geomean {np.exp(np.mean(np.log(c))):.2f} | "
              f"decompress min {min(d):.2f} geomean {np.exp(np.mean(np.log(d))):.2f} | "
              f"cratio diff {100 * min(cr):+.1f}% .. {100 * max(cr):+.1f}%")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small inputs, for CI")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--nd-only", action="store_true", help="only the n-d codecs (ZFP, NDLZ)")
    args = ap.parse_args(argv)
    rows = [] if args.nd_only else run(args.quick)
    if "ZFP_RATE" in ndpack.codecs.codec_status() and \
            ndpack.codecs.codec_status()["ZFP_RATE"] == "built in":
        rows += run_nd(args.quick)
    else:
        print("\nn-d codecs skipped: ndpack was built without libzfp")
    print()
    summarize(rows)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
