"""Shape operations: ndpack vs NumPy and python-blosc2 (issue 8, parts 3 and 4).

1. concat and stack of 3 x (8000, 8000) float32 (``--quick``: (800, 800)) along
   axis 0, LZ4 clevel 5 + shuffle:
   * aligned: chunks (1000, 1000), blocks (100, 1000) — 8000 is a multiple of 1000, so
     ndpack copies compressed chunks; python-blosc2 with its defaults (it keeps the
     inputs' chunks but recompresses unless the output's cparams match) and with the
     inputs' cparams passed explicitly (its own copy path);
   * unaligned: chunks (1500, 1000) — written chunk by chunk.
   NumPy: ``np.concatenate`` / ``np.stack`` of the uncompressed arrays.
2. permute_dims of (8000, 8000) float64 (``--quick``: (1000, 1000)), chunks
   (1000, 1000), blocks (100, 1000), LZ4 5, vs ``a.T.copy()`` and python-blosc2 with its
   default cparams (ZSTD 5) and with the input's (LZ4 5: the same settings, issue 26);
   sin + noise and a linspace (cratio ~7.7), the output's cratios printed.
3. reshape (8000, 8000) float32 -> (4000, 16000), flip along axis 0, roll by 1000
   along axis 1, vs the NumPy copies and python-blosc2 where it has the function.
4. ``squeeze(expand_dims(a, 0), 0)`` of the same array (issue 26): both libraries
   return views sharing the super-chunk, so the time is per call, whatever the size
   (loops of calls, best of the rounds), wall and process CPU time side by side (the
   machine is shared: CPU time is what the call itself costs); NumPy's views for
   scale.  The view is checked against the data first.

Timings are the best of interleaved rounds; ratios are peer time / ndpack time
(> 1: ndpack faster).  The machine is shared: numbers are indicative.

    python benchmarks/bench_shape.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from timing import best_times, compress_pieces, decode_all, write_json

import ndpack

try:
    import blosc2
except ImportError:
    blosc2 = None


def cparams(lib):
    return lib.CParams(codec=lib.Codec.LZ4, clevel=5, filters=[lib.Filter.SHUFFLE],
                       filters_meta=[0])


def make_data(shape, dtype, seed) -> np.ndarray:
    n = int(np.prod(shape))
    x = np.sin(np.arange(n, dtype=np.float64) * 1e-4 + seed)
    x += np.random.default_rng(seed).normal(0, 1e-4, n)
    return x.astype(dtype).reshape(shape)


def row(name, fns, reps, rows):
    ts = best_times(list(fns.values()), reps, budget=10.0)
    t = dict(zip(fns, ts))
    nd = t["ndpack"]
    cells = "  ".join(f"{k} {v * 1e3:8.1f} ms" for k, v in t.items())
    ratios = "  ".join(f"{k}/nd {v / nd:6.2f}" for k, v in t.items() if k != "ndpack")
    print(f"{name:<28} {cells}  | {ratios}", flush=True)
    rows.append({"case": name, "ms": {k: v * 1e3 for k, v in t.items()},
                 "ratio_vs_ndpack": {k: v / nd for k, v in t.items() if k != "ndpack"}})


def _try(fn):
    """fn if it runs (python-blosc2 lacks some forms), else None."""
    try:
        fn()
        return fn
    except Exception as exc:  # noqa: BLE001 (a peer lacking a form is reported)
        print(f"  (blosc2: {type(exc).__name__}: {str(exc)[:70]})", file=sys.stderr)
        return None


def run_concat(quick, reps, rows):
    n = 800 if quick else 8000
    xs = [make_data((n, n), np.float32, s) for s in range(3)]
    print(f"concat/stack: 3 x ({n}, {n}) float32 ({3 * xs[0].nbytes / 1e6:.0f} MB), LZ4 5")
    for label, chunks in (("aligned", (n // 8, n // 8)), ("unaligned", (3 * n // 16, n // 8))):
        blocks = (chunks[0] // 10, chunks[1])
        nds = [ndpack.asarray(x, chunks=chunks, blocks=blocks, cparams=cparams(ndpack))
               for x in xs]
        out = ndpack.concat(nds)
        assert np.array_equal(out[-5:], xs[-1][-5:])
        fns = {"numpy": lambda: np.concatenate(xs),
               "ndpack": lambda nds=nds: ndpack.concat(nds)}
        if label == "unaligned":
            # the floor of re-chunking: decode every input chunk, compress every output
            # chunk (no slicing, no copies; the inputs' bytes in pieces of an output
            # chunk: a concatenated copy held here would cost NumPy its huge pages)
            fns["floor"] = lambda nds=nds, out=out: (
                decode_all(*nds),
                [compress_pieces(x, out.schunk.chunksize, out.cparams) for x in xs])
        b2 = None
        if blosc2 is not None:
            b2 = [blosc2.asarray(x, chunks=chunks, blocks=blocks, cparams=cparams(blosc2))
                  for x in xs]
            f = _try(lambda b2=b2: blosc2.concat(b2))
            if f:
                fns["blosc2"] = f
            f = _try(lambda b2=b2: blosc2.concat(b2, cparams=cparams(blosc2)))
            if f:
                fns["blosc2-cp"] = f
        row(f"concat {label} {chunks}", fns, reps, rows)
        fns = {"numpy": lambda: np.stack(xs), "ndpack": lambda nds=nds: ndpack.stack(nds)}
        if b2 is not None:
            f = _try(lambda b2=b2: blosc2.stack(b2))
            if f:
                fns["blosc2"] = f
        row(f"stack {label}", fns, reps, rows)


def run_permute(quick, reps, rows):
    n = 1000 if quick else 8000
    chunks, blocks = (n // 8, n // 8), (n // 80, n // 8)
    for label in ("sin+noise", "linspace"):
        x = make_data((n, n), np.float64, 7) if label == "sin+noise" else \
            np.linspace(0, 1, n * n).reshape(n, n)
        a = ndpack.asarray(x, chunks=chunks, blocks=blocks, cparams=cparams(ndpack))
        p = ndpack.permute_dims(a)
        assert np.array_equal(p[:7], x.T[:7]) and np.array_equal(p[-3:], x.T[-3:])
        print(f"permute_dims {label}: ({n}, {n}) float64 ({x.nbytes / 1e6:.0f} MB), "
              f"chunks {chunks}, blocks {blocks}, LZ4 5; output blocks {p.blocks}, "
              f"cratio {p.cratio:.2f}")
        fns = {"numpy": lambda x=x: x.T.copy(), "ndpack": lambda a=a: ndpack.permute_dims(a)}
        if blosc2 is not None:
            b = blosc2.asarray(x, chunks=chunks, blocks=blocks, cparams=cparams(blosc2))
            f = _try(lambda b=b: blosc2.permute_dims(b))
            if f:
                fns["blosc2"] = f
            f = _try(lambda b=b: blosc2.permute_dims(b, cparams=cparams(blosc2)))
            if f:
                fns["blosc2-cp"] = f
                q = f()
                assert np.array_equal(q[-3:], x.T[-3:])
                print(f"  python-blosc2 (same cparams): blocks {q.blocks}, "
                      f"cratio {q.schunk.cratio:.2f}")
        row(f"permute_dims {label}", fns, reps, rows)


def run_others(quick, reps, rows):
    n = 800 if quick else 8000
    x = make_data((n, n), np.float32, 3)
    chunks, blocks = (n // 8, n // 8), (n // 80, n // 8)
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks, cparams=cparams(ndpack))
    b = blosc2.asarray(x, chunks=chunks, blocks=blocks, cparams=cparams(blosc2)) \
        if blosc2 is not None else None
    print(f"others: ({n}, {n}) float32, chunks {chunks}, blocks {blocks}, LZ4 5")
    new = (n // 2, 2 * n)
    cases = [
        ("reshape", lambda: x.reshape(new).copy(), lambda: ndpack.reshape(a, new),
         lambda: blosc2.reshape(b, new)),
        ("flip axis 0", lambda: np.flip(x, 0).copy(), lambda: ndpack.flip(a, 0), None),
        ("roll 1000 axis 1", lambda: np.roll(x, 1000, 1), lambda: ndpack.roll(a, 1000, 1),
         None),
    ]
    assert np.array_equal(ndpack.reshape(a, new)[-3:], x.reshape(new)[-3:])
    for name, fnp, fnd, fb2 in cases:
        fns = {"numpy": fnp, "ndpack": fnd}
        if b is not None and fb2 is not None:
            f = _try(fb2)
            if f:
                fns["blosc2"] = f
        row(name, fns, reps, rows)


def _per_call(fn, calls: int, reps: int) -> tuple[float, float]:
    """Best (wall, process CPU) seconds per call over `reps` rounds of `calls` calls."""
    wall = cpu = float("inf")
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fn()
        wall = min(wall, (time.perf_counter() - w0) / calls)
        cpu = min(cpu, (time.process_time() - c0) / calls)
    return wall, cpu


def run_views(quick, reps, rows):
    n = 800 if quick else 8000
    x = make_data((n, n), np.float32, 3)
    chunks, blocks = (n // 8, n // 8), (n // 80, n // 8)
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks, cparams=cparams(ndpack))
    v = ndpack.squeeze(ndpack.expand_dims(a, 0), 0)
    assert v.base is a and np.array_equal(v[-3:], x[-3:])
    fns = {"numpy": lambda: np.squeeze(np.expand_dims(x, 0), 0),
           "ndpack": lambda: ndpack.squeeze(ndpack.expand_dims(a, 0), 0)}
    if blosc2 is not None:
        b = blosc2.asarray(x, chunks=chunks, blocks=blocks, cparams=cparams(blosc2))
        f = _try(lambda: blosc2.squeeze(blosc2.expand_dims(b, 0), 0))
        if f:
            assert np.array_equal(f()[-3:], x[-3:])
            fns["blosc2"] = f
    calls = 20 if quick else 200
    t = {k: _per_call(fn, calls, max(reps, 3)) for k, fn in fns.items()}
    nd_wall, nd_cpu = t["ndpack"]
    print(f"expand_dims+squeeze views: ({n}, {n}) float32, chunks {chunks}, per call")
    cells = "  ".join(f"{k} {w * 1e6:7.1f} us (cpu {c * 1e6:7.1f})" for k, (w, c) in t.items())
    ratios = "  ".join(f"{k}/nd {w / nd_wall:6.2f} (cpu {c / max(nd_cpu, 1e-9):6.2f})"
                       for k, (w, c) in t.items() if k != "ndpack")
    print(f"{'expand_dims+squeeze':<28} {cells}  | {ratios}", flush=True)
    rows.append({"case": "expand_dims+squeeze (views)",
                 "ms": {k: w * 1e3 for k, (w, _) in t.items()},
                 "cpu_ms": {k: c * 1e3 for k, (_, c) in t.items()},
                 "ratio_vs_ndpack": {k: w / nd_wall for k, (w, _) in t.items()
                                     if k != "ndpack"}})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small arrays, for CI")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", help="write the rows to this file")
    args = p.parse_args(argv)
    rows = []
    run_concat(args.quick, args.reps, rows)
    run_permute(args.quick, args.reps, rows)
    run_others(args.quick, args.reps, rows)
    run_views(args.quick, args.reps, rows)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
