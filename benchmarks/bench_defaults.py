"""The sweep that chose ndpack's default chunk size (issue 4, "benchmarks decide the
defaults").

python-blosc2 sizes default chunks from a quarter of the L3 cache; on this VM (L3
reported as 480 MB) that gives ~100 MB chunks.  ndpack keeps python-blosc2's
algorithm and caps the chunk bytes (``NDPACK_CHUNK_BYTES``, default 16 MiB).  This
benchmark runs, for each cap (one process per cap, arrays created with the default
chunks under that cap), the workloads the default has to serve:

* ``expr [()]`` / ``expr compute``: ``a + b + c`` of 3 x (4000, 4000) float64 (LZ4 5,
  in memory), result as NumPy and as an NDArray;
* ``expr to disk RSS``: peak RSS growth of ``compute(urlpath=)`` of that expression;
* ``sum ax0/ax2/None``: sums of a (400, 400, 400) float64 array (LZ4 5);
* ``cumsum ax0/ax2``: ``cumulative_sum`` of a (300, 300, 300) float64 array;
* ``slice d0..d3``: one index along each dimension of a (20, 50, 300, 250) array on
  disk, the "Blosc2 NDim" benchmark's trailing shape (mean over four indices);
* ``full read``: ``[:]`` of the (4000, 4000) operand.

Times are the best of a few repeats; the table gives each cap's time relative to
python-blosc2's policy (no cap; > 1: faster), and the geometric mean over the timed
workloads.  ``--quick``: smaller arrays, caps 8/16 MiB and no cap.

    python benchmarks/bench_defaults.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from timing import best, peak_rss_during, write_json

CAPS = ["4M", "8M", "16M", "32M", "64M", "blosc2"]
QUICK_CAPS = ["8M", "16M", "blosc2"]


def data(shape, seed) -> np.ndarray:
    n = math.prod(shape)
    x = np.sin(np.arange(n, dtype=np.float64) * 1e-4 + seed)
    x += np.random.default_rng(seed).normal(0, 1e-4, n)
    return x.reshape(shape)


def one(cap: str, quick: bool) -> dict:
    """Every workload under one chunk cap (run in its own process)."""
    import ndpack
    from ndpack.storage import grid
    if cap == "blosc2":
        policy = "blosc2"
    else:
        os.environ["NDPACK_CHUNK_BYTES"] = cap
        policy = "ndpack"
    cp = {"codec": ndpack.Codec.LZ4, "clevel": 5}

    def arr(x, **kw):
        chunks, blocks = grid.compute_chunks_blocks(x.shape, dtype=x.dtype, policy=policy)
        return ndpack.asarray(x, chunks=chunks, blocks=blocks, cparams=cp, **kw)

    reps = 2 if quick else 3
    out = {}
    out.update(_expressions(ndpack, arr, 1000 if quick else 4000, reps))
    out.update(_reductions(ndpack, arr, 200 if quick else 400, 150 if quick else 300, reps))
    out.update(_slices(ndpack, arr, (10, 20, 60, 50) if quick else (20, 50, 300, 250), reps))
    return out


def _expressions(ndpack, arr, n, reps) -> dict:
    ops = {k: arr(data((n, n), s)) for s, k in enumerate("abc")}
    out = {"chunk MB (expr)": math.prod(ops["a"].chunks) * 8 / 1e6}
    e = ndpack.lazyexpr("a + b + c", ops)
    with tempfile.TemporaryDirectory() as tmp:      # first: buffers not yet pooled
        path = os.path.join(tmp, "r.b2nd")
        out["expr to disk RSS MB"] = peak_rss_during(
            lambda: e.compute(urlpath=path, mode="w"))[1] / 1e6
    out["expr [()]"] = best(lambda: e[()], reps)
    out["expr compute"] = best(lambda: e.compute(), reps)
    out["full read"] = best(lambda: ops["a"][:], reps)
    return out


def _reductions(ndpack, arr, m, k, reps) -> dict:
    s = arr(data((m, m, m), 3))
    out = {"chunk MB (sum)": math.prod(s.chunks) * 8 / 1e6}
    for axis in (0, 2, None):
        out[f"sum ax{axis}"] = best(lambda axis=axis: ndpack.sum(s, axis=axis), reps)
    q = arr(data((k, k, k), 4))
    for axis in (0, 2):
        out[f"cumsum ax{axis}"] = best(
            lambda axis=axis: ndpack.cumulative_sum(q, axis=axis), reps)
    return out


def _slices(ndpack, arr, shape, reps) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        arr(data(shape, 5), urlpath=os.path.join(tmp, "nd.b2nd"), mode="w")
        d4 = ndpack.open(os.path.join(tmp, "nd.b2nd"))
        rng = np.random.default_rng(0)
        for dim in range(4):
            idx = rng.integers(0, shape[dim], 4)
            keys = [tuple(slice(None) if d != dim else int(i) for d in range(4)) for i in idx]
            out[f"slice d{dim}"] = sum(best(lambda key=key: d4[key], reps) for key in keys) / 4
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.quick)))
        return 0
    caps = QUICK_CAPS if args.quick else CAPS
    res = {}
    for cap in caps:
        cmd = [sys.executable, __file__, "--one", cap] + (["--quick"] if args.quick else [])
        run = subprocess.run(cmd, capture_output=True, text=True, check=True)
        res[cap] = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"  cap {cap}: done", flush=True)
    base = res["blosc2"]
    names = list(base)
    print("\ndefault chunks under each cap (time ms; in brackets the speed vs python-blosc2's "
          "policy, > 1 faster)")
    print(f"{'workload':<22}" + "".join(f"{c:>16}" for c in caps))
    timed = [k for k in names if "MB" not in k]
    for k in names:
        cells = []
        for cap in caps:
            v = res[cap][k]
            if "MB" in k:
                cells.append(f"{v:16.1f}")
            else:
                cells.append(f"{v * 1e3:9.1f} ({base[k] / v:4.2f})")
        print(f"{k:<22}" + "".join(cells))
    rows = []
    geo = {cap: math.exp(sum(math.log(base[k] / res[cap][k]) for k in timed) / len(timed))
           for cap in caps}
    print(f"{'geometric mean':<22}" + "".join(f"{geo[c]:16.2f}" for c in caps))
    for cap in caps:
        rows.append({"cap": cap, "geomean_speed_vs_blosc2_policy": geo[cap], **res[cap]})
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
