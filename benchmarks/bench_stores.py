"""Hierarchical stores: ndpack TreeStore vs python-blosc2 TreeStore, h5py and zarr v3.

The TreeStore blog scenario (issue 10) scaled to this machine: a tree of 20 arrays of
~10 MB and 3 arrays of ~100 MB (float64, a sine plus noise rounded to 0.1, 2-D), in groups
``/small/gNN/aNN`` and ``/large/aN`` (``--quick``: 6 arrays of ~2 MB and 2 of ~20 MB).

* **create**: write every array from NumPy and close the file;
* **list**: open the file and list every node (walk / visit);
* **full read**: open and read every array whole;
* **slice**: open and read a 10 x 10 slice in the middle of every array;
* **size** of the file on disk.

Peers: ndpack and python-blosc2 TreeStore in a ``.b2z`` (default CParams: ZSTD 5 +
shuffle, default chunks and blocks), ndpack also in a ``.b2d``; h5py with the Blosc2
filter of hdf5plugin (zstd 5 + shuffle, ~1 MB chunks); zarr v3 with BloscCodec (zstd 5
+ shuffle, the same chunks).  Times are the best of interleaved rounds; ratios are
peer time / ndpack time (> 1: ndpack faster) and peer size / ndpack size.

    python benchmarks/bench_stores.py            # full size (< 3 minutes here)
    python benchmarks/bench_stores.py --quick    # small, for CI (< 30 s)
    python benchmarks/bench_stores.py --json out.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
from timing import best_times, write_json, run_timed

import ndpack

try:
    import blosc2
except ImportError:  # the peers are bench dependencies
    blosc2 = None
try:
    import h5py
    import hdf5plugin
except ImportError:
    h5py = hdf5plugin = None
try:
    import zarr
except ImportError:
    zarr = None


def make_arrays(quick: bool) -> dict:
    rng = np.random.default_rng(0)
    small = (250, 1000) if quick else (1250, 1000)        # 2 MB / 10 MB of float64
    large = (2500, 1000) if quick else (12500, 1000)      # 20 MB / 100 MB
    nsmall, nlarge = (6, 2) if quick else (20, 3)

    def signal(shape, i):
        t = np.linspace(0, 20 + i, shape[0] * shape[1]).reshape(shape)
        return (np.sin(t) * 100 + rng.normal(0, 0.1, shape)).round(1)   # 0.1 resolution

    out = {f"/small/g{i // 5:02d}/a{i:02d}": signal(small, i) for i in range(nsmall)}
    out.update({f"/large/a{i}": signal(large, i) for i in range(nlarge)})
    return out


def _mid(shape):
    return tuple(slice(s // 2, s // 2 + 10) for s in shape)


def _size(path) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path)
                   for f in fs)
    return os.path.getsize(path)


def _clear(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


class TreePeer:
    """ndpack or python-blosc2 TreeStore."""

    def __init__(self, name, mod, path):
        self.name, self.mod, self.path = name, mod, path

    def create(self, arrays):
        _clear(self.path)
        with self.mod.TreeStore(self.path, mode="w") as ts:
            for k, v in arrays.items():
                ts[k] = v

    def list(self):
        with self.mod.TreeStore(self.path, mode="r") as ts:
            return sum(len(n) for _, _, n in ts.walk("/"))

    def read(self, keys):
        with self.mod.TreeStore(self.path, mode="r") as ts:
            return sum(float(ts[k][:][0, 0]) for k in keys)

    def slice(self, keys):
        with self.mod.TreeStore(self.path, mode="r") as ts:
            return sum(float(ts[k][_mid(ts[k].shape)].sum()) for k in keys)


class H5Peer:
    name = "h5py"

    def __init__(self, path, chunks):
        self.path, self.chunks = path, chunks

    def create(self, arrays):
        _clear(self.path)
        comp = hdf5plugin.Blosc2(cname="zstd", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE)
        with h5py.File(self.path, "w") as f:
            for k, v in arrays.items():
                f.create_dataset(k, data=v, chunks=self.chunks, **comp)

    def list(self):
        names = []
        with h5py.File(self.path, "r") as f:
            f.visit(names.append)
        return len(names)

    def read(self, keys):
        with h5py.File(self.path, "r") as f:
            return sum(float(f[k][()][0, 0]) for k in keys)

    def slice(self, keys):
        with h5py.File(self.path, "r") as f:
            return sum(float(f[k][_mid(f[k].shape)].sum()) for k in keys)


class ZarrPeer:
    name = "zarr"

    def __init__(self, path, chunks):
        self.path, self.chunks = path, chunks

    def create(self, arrays):
        _clear(self.path)
        codec = zarr.codecs.BloscCodec(cname="zstd", clevel=5, shuffle="shuffle", typesize=8)
        root = zarr.open_group(self.path, mode="w")
        for k, v in arrays.items():
            a = root.create_array(k.lstrip("/"), shape=v.shape, dtype=v.dtype,
                                  chunks=self.chunks, compressors=[codec])
            a[...] = v

    def list(self):
        root = zarr.open_group(self.path, mode="r")
        return len(list(root.members(max_depth=None)))

    def read(self, keys):
        root = zarr.open_group(self.path, mode="r")
        return sum(float(root[k.lstrip("/")][...][0, 0]) for k in keys)

    def slice(self, keys):
        root = zarr.open_group(self.path, mode="r")
        out = 0.0
        for k in keys:
            a = root[k.lstrip("/")]
            out += float(a[_mid(a.shape)].sum())
        return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small inputs, for CI")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    reps = 3 if args.quick else 2
    arrays = make_arrays(args.quick)
    keys = list(arrays)
    total = sum(v.nbytes for v in arrays.values())
    print(f"ndpack {ndpack.__version__}: {len(arrays)} float64 arrays, {total / 1e6:.0f} MB "
          f"(--quick: {args.quick})")
    tmp = tempfile.mkdtemp(prefix="bench_stores_", dir=os.environ.get("BENCH_TMP"))
    chunks = (125, 1000)                                   # ~1 MB for h5py and zarr
    peers = [TreePeer("ndpack b2z", ndpack, os.path.join(tmp, "nd.b2z")),
             TreePeer("ndpack b2d", ndpack, os.path.join(tmp, "nd.b2d"))]
    if blosc2 is not None:
        peers.append(TreePeer("blosc2 b2z", blosc2, os.path.join(tmp, "b2.b2z")))
    if h5py is not None:
        peers.append(H5Peer(os.path.join(tmp, "h5.h5"), chunks))
    if zarr is not None:
        peers.append(ZarrPeer(os.path.join(tmp, "z.zarr"), chunks))
    rows = []
    try:
        create = best_times([lambda p=p: p.create(arrays) for p in peers], reps, budget=60)
        for p in peers:                  # every peer reads back what it wrote
            assert p.list() >= len(keys), p.name
            np.testing.assert_allclose(p.slice(keys[:1]), arrays[keys[0]][_mid(
                arrays[keys[0]].shape)].sum())
        lst = best_times([lambda p=p: p.list() for p in peers], reps * 3, budget=10)
        full = best_times([lambda p=p: p.read(keys) for p in peers], 3, budget=40)
        sl = best_times([lambda p=p: p.slice(keys) for p in peers], reps * 3, budget=15)
        sizes = [_size(p.path) for p in peers]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    hdr = (f"{'peer':<12} {'create s':>9} {'list ms':>9} {'read s':>8} {'slice ms':>9} "
           f"{'size MB':>8} {'ratio':>6} | vs ndpack b2z: create  list  read  slice  size")
    print(hdr)
    print("-" * len(hdr))
    for i, p in enumerate(peers):
        r = {"peer": p.name, "create": create[i], "list": lst[i], "read": full[i],
             "slice": sl[i], "size": sizes[i], "cratio": total / sizes[i]}
        rows.append(r)
        print(f"{p.name:<12} {create[i]:>9.3f} {1e3 * lst[i]:>9.2f} {full[i]:>8.3f} "
              f"{1e3 * sl[i]:>9.2f} {sizes[i] / 1e6:>8.1f} {total / sizes[i]:>6.1f} | "
              f"{' ' * 14}{create[i] / create[0]:>6.2f} {lst[i] / lst[0]:>5.2f} "
              f"{full[i] / full[0]:>5.2f} {sl[i] / sl[0]:>6.2f} {sizes[i] / sizes[0]:>5.2f}")
    print("\nratios are peer / ndpack b2z (> 1: ndpack faster or smaller)")
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    run_timed(main)
