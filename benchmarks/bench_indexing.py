"""Fancy indexing: ndpack vs NumPy, python-blosc2, zarr and h5py (issue 8, part 2).

A (20000, 5000) float64 array (``--quick``: (2000, 1000)), smooth data with a little
noise, is stored in memory by each library with the same chunks (500, 1000) and
LZ4 clevel 5 + shuffle (ndpack and python-blosc2 also with the same blocks
(50, 100); h5py through hdf5plugin's Blosc2 filter when installed, else gzip 1, in
an in-memory file).  The cases of the issue are timed side by side in one process:

    a[row]               1000 random rows (repeated, unsorted)
    a[row, col]          1000 random points
    a[row[:, None], col] a 100 x 100 grid of random rows and columns
    a[[[1, 2], [0, 1]]]  a 2-D integer array over rows
    a[1:9, col]          a slice and 1000 random columns
    a[1, col]            an integer and 1000 random columns
    a[rowmask]           a per-axis mask (1 % of the rows)
    a[mask]              a full-shape mask (1 in 10^4 items)
    a[row, col] = v      setting 1000 points

zarr and h5py are called the way their users would write each case (zarr's
``oindex``/``vindex``; h5py takes one sorted list per read, so the result is
rearranged with NumPy afterwards; "-" where a library has no way).  Ratios are
peer time / ndpack time (> 1: ndpack faster).  ``floor`` decodes exactly the blocks
each key touches, each up to its last wanted item only (two C threads, nothing
gathered): no reader of these chunks can be faster, so a peer can be beaten by at
most peer/floor.  The machine is shared: numbers are
indicative.

    python benchmarks/bench_indexing.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from timing import best_times, optional, write_json

import ndpack

blosc2 = optional("blosc2")
zarr = optional("zarr")
h5py = optional("h5py")
hdf5plugin = optional("hdf5plugin")

CHUNKS, BLOCKS = (500, 1000), (50, 100)


def make_data(shape) -> np.ndarray:
    n = int(np.prod(shape))
    x = np.sin(np.arange(n) * 1e-4)
    x += np.random.default_rng(0).normal(0, 1e-6, n)
    return x.reshape(shape)


def build(x) -> dict:
    peers = {"numpy": x}
    peers["ndpack"] = ndpack.asarray(x, chunks=CHUNKS, blocks=BLOCKS, cparams=ndpack.CParams(
        codec=ndpack.Codec.LZ4, clevel=5, filters=[ndpack.Filter.SHUFFLE], filters_meta=[0]))
    if blosc2 is not None:
        peers["blosc2"] = blosc2.asarray(x, chunks=CHUNKS, blocks=BLOCKS, cparams=blosc2.CParams(
            codec=blosc2.Codec.LZ4, clevel=5, filters=[blosc2.Filter.SHUFFLE], filters_meta=[0]))
    if zarr is not None:
        from zarr.codecs import BloscCodec
        z = zarr.create_array(store=zarr.storage.MemoryStore(), shape=x.shape, dtype=x.dtype,
                              chunks=CHUNKS, compressors=BloscCodec(cname="lz4", clevel=5,
                                                                    shuffle="shuffle"))
        z[...] = x
        peers["zarr"] = z
    if h5py is not None:
        f = h5py.File("bench_indexing.h5", "w", driver="core", backing_store=False)
        filt = (hdf5plugin.Blosc2(cname="lz4", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)
                if hdf5plugin is not None
                else {"compression": "gzip", "compression_opts": 1, "shuffle": True})
        peers["h5py"] = f.create_dataset("x", data=x, chunks=CHUNKS, **filt)
    return peers


def _h5_rows(ds, rows, rest=()):
    """h5py reads increasing unique lists only: read those, rearrange with NumPy."""
    u, inv = np.unique(rows, return_inverse=True)
    return ds[(u,) + rest][inv]


def _h5_cols(ds, first, cols):
    u, inv = np.unique(cols, return_inverse=True)
    return ds[first, u][..., inv]


def cases(shape):
    rng = np.random.default_rng(1)
    R, C = shape
    row = rng.integers(0, R, 1000)
    col = rng.integers(0, C, 1000)
    r100, c100 = row[:100], col[:100]
    rowmask = rng.random(R) < 0.01
    mask = rng.random(shape) < 1e-4
    two = np.array([[1, 2], [0, 1]])
    gen = [
        ("a[row]", row, lambda z: z.oindex[row], lambda d: _h5_rows(d, row)),
        ("a[row, col]", (row, col), lambda z: z.vindex[row, col], None),
        ("a[row[:,None], col]", (r100[:, None], c100), lambda z: z.oindex[r100, c100],
         lambda d: _h5_rows(d, r100)[:, c100]),
        ("a[[[1,2],[0,1]]]", two, lambda z: z.oindex[two.ravel()].reshape(2, 2, -1),
         lambda d: _h5_rows(d, two.ravel()).reshape(2, 2, -1)),
        ("a[1:9, col]", (slice(1, 9), col), lambda z: z.oindex[1:9, col],
         lambda d: _h5_cols(d, slice(1, 9), col)),
        ("a[1, col]", (1, col), lambda z: z.oindex[1, col], lambda d: _h5_cols(d, 1, col)),
        ("a[rowmask]", rowmask, lambda z: z.oindex[rowmask],
         lambda d: d[np.flatnonzero(rowmask)]),
        ("a[mask]", mask, lambda z: z.vindex[mask], None),
    ]
    return gen, (row, col)


def decode_floor(a, shape, key):
    """A function decoding exactly the blocks that `key` touches, each only up to its
    last wanted item (two threads, reused buffers, no gathering): what any reader of
    these chunks must at least do (LZ4 streams cannot be entered midway).  Several
    chunks are shared between two Python threads (the decoder releases the GIL), a
    chunk or two are decoded by the C core's threads."""
    from ndpack.chunks import decompress_blocks
    ri = np.broadcast_to(np.arange(shape[0], dtype=np.int64)[:, None], shape)[key]
    ci = np.broadcast_to(np.arange(shape[1], dtype=np.int64)[None, :], shape)[key]
    ri, ci = np.asarray(ri).ravel(), np.asarray(ci).ravel()
    br, bc = ri // BLOCKS[0], ci // BLOCKS[1]
    width = shape[1] // BLOCKS[1] + 1
    pair = br * width + bc
    pairs, inv = np.unique(pair, return_inverse=True)
    last = np.zeros(len(pairs), np.int64)        # last wanted item of each block
    np.maximum.at(last, inv, (ri % BLOCKS[0]) * BLOCKS[1] + ci % BLOCKS[1])
    br, bc = pairs // width, pairs % width
    per = (CHUNKS[0] // BLOCKS[0], CHUNKS[1] // BLOCKS[1])
    gcols = -(-shape[1] // CHUNKS[1])
    nchunk = (br // per[0]) * gcols + bc // per[1]
    nblock = (br % per[0]) * per[1] + bc % per[1]
    work = [(a.schunk.get_chunk(int(n)), nblock[nchunk == n].tolist(),
             ((last[nchunk == n] + 1) * 8).tolist()) for n in np.unique(nchunk)]
    bsize = int(np.prod(BLOCKS)) * 8
    buf = np.empty(max(len(b) for _, b, _ in work) * bsize, np.uint8)

    bufs = [buf, buf.copy()]

    def half(h):
        for chunk, blocks, needs in work[h::2]:
            decompress_blocks(chunk, blocks, nthreads=1, dst=bufs[h][:len(blocks) * bsize],
                              needs=needs)

    def run():                     # two threads, each decoding every other chunk
        with ThreadPoolExecutor(2) as ex:
            list(ex.map(half, (0, 1)))

    def run_each():                # or each chunk's blocks on two threads
        for chunk, blocks, needs in work:
            decompress_blocks(chunk, blocks, nthreads=2, dst=buf[:len(blocks) * bsize],
                              needs=needs)
    import time

    def best(fn):
        t = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
        return min(t)
    return min((run, run_each), key=best)             # the faster way for this key


def fns_for(peers, key, zfn, hfn):
    out = {}
    for name, arr in peers.items():
        if name == "zarr":
            out[name] = lambda z=arr: zfn(z)
        elif name == "h5py":
            if hfn is not None:
                out[name] = lambda d=arr: hfn(d)
        else:
            out[name] = lambda a=arr: a[key]
    return out


def run(quick: bool, reps: int) -> list[dict]:
    shape = (2000, 1000) if quick else (20000, 5000)
    x = make_data(shape)
    peers = build(x)
    print(f"fancy indexing: shape {shape} float64 ({x.nbytes / 1e6:.0f} MB), chunks {CHUNKS}, "
          f"blocks {BLOCKS}, LZ4 5 + shuffle; ndpack {ndpack.__version__}, "
          f"blosc2 {getattr(blosc2, '__version__', '-')}, zarr {getattr(zarr, '__version__', '-')}"
          f", h5py {getattr(h5py, '__version__', '-')} "
          f"({'Blosc2 filter' if hdf5plugin else 'gzip'})")
    names = [n for n in ("numpy", "ndpack", "blosc2", "zarr", "h5py") if n in peers] + ["floor"]
    hdr = (f"{'case':<22}" + "".join(f"{n + ' ms':>12}" for n in names) + "  | "
           + " ".join(f"{n + '/nd':>10}" for n in names if n != "ndpack"))
    print(hdr)
    print("-" * len(hdr))
    gen, (row, col) = cases(shape)
    rows = []
    for cname, key, zfn, hfn in gen:
        fns = fns_for(peers, key, zfn, hfn)
        floor = decode_floor(peers["ndpack"], shape, key)
        ref = x[key]
        for n, fn in list(fns.items()):
            try:
                got = np.asarray(fn())
            except Exception as exc:  # noqa: BLE001 (a peer without this form)
                print(f"  ({n}: {type(exc).__name__}: {str(exc)[:60]})", file=sys.stderr)
                del fns[n]
                continue
            if n == "ndpack":
                assert np.array_equal(got, ref), (cname, "ndpack wrong result")
        fns["floor"] = floor
        rows.append(_time_row(cname, fns, names, reps))
    # setting points
    v = np.arange(len(row), dtype=x.dtype)
    fns = {n: (lambda a=peers[n]: a.__setitem__((row, col), v)) for n in names
           if n in ("numpy", "ndpack", "blosc2")}
    if "zarr" in peers:
        fns["zarr"] = lambda z=peers["zarr"]: z.vindex.__setitem__((row, col), v)
    for n, fn in list(fns.items()):
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 (a peer without this form)
            print(f"  ({n}: {type(exc).__name__}: {str(exc)[:60]})", file=sys.stderr)
            del fns[n]
    assert np.array_equal(peers["ndpack"][row, col], x[row, col])
    rows.append(_time_row("a[row, col] = v", fns, names, reps))
    return rows


def _time_row(cname, fns, names, reps) -> dict:
    present = [n for n in names if n in fns]
    ts = dict(zip(present, best_times([fns[n] for n in present], reps, budget=8.0,
                                      interleave=False)))
    t_nd = ts["ndpack"]
    cells = "".join(f"{ts[n] * 1e3:>12.2f}" if n in ts else f"{'-':>12}" for n in names)
    ratios = " ".join(f"{ts[n] / t_nd:>10.2f}" if n in ts else f"{'-':>10}"
                      for n in names if n != "ndpack")
    print(f"{cname:<22}{cells}  | {ratios}", flush=True)
    return {"case": cname, "ms": {n: t * 1e3 for n, t in ts.items()},
            "ratio_vs_ndpack": {n: t / t_nd for n, t in ts.items() if n != "ndpack"}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small array, for CI")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--json", help="write the rows to this file")
    args = p.parse_args(argv)
    rows = run(args.quick, args.reps)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
