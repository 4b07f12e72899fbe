"""Remote arrays over HTTP: ndpack vs python-blosc2 ``open(url)`` and zarr v3 over
``FsspecStore`` (Blosc zstd 1 + shuffle, the frames' codec), against the test suite's object server on 127.0.0.1 with 0 and 20 ms
of latency injected before every answer.

Workloads, on a float64 array (and a second one for the expression):

* **open**: open the URL (metadata only);
* **point**: one item in the middle;
* **window**: a 1% window (a tenth of each axis) in the middle;
* **sum**: the full-array sum;
* **a*2+b**: an expression over two remote operands, written to a local file.

Each cell is the best wall time of a few rounds (a fresh open each round, so nothing is
cached between rounds), with the requests the server answered and the bytes it sent in
the last round.  Ratios are peer time / ndpack time (> 1: ndpack faster).  Peers that
cannot run a workload say ``n/a``.  The server runs in this process (its threads share
the GIL with the client): absolute times are pessimistic for every peer alike.

    python benchmarks/bench_remote.py --quick    # 1000 x 1000 (8 MB), for CI
    python benchmarks/bench_remote.py            # 4000 x 4000 (128 MB)
    python benchmarks/bench_remote.py --json out.json
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import sys
import tempfile
import time

import numpy as np
from timing import best_times, optional, write_json, run_timed

import ndpack

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from servers import ObjectServer  # noqa: E402

blosc2 = optional("blosc2")
zarr = optional("zarr")


def make(shape, seed):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 40, shape[0] * shape[1]).reshape(shape)
    return np.round(np.sin(t) + rng.normal(0, 0.1, shape), 2)


class Peer:
    name = "?"

    def __init__(self, srv, names, tmp):
        self.srv, self.names, self.tmp = srv, names, tmp

    def run(self, work: str, shape):
        c = tuple(s // 2 for s in shape)
        w = tuple(slice(s // 2, s // 2 + max(1, s // 10)) for s in shape)
        a = self.open(0)
        if work == "open":
            return None
        if work == "point":
            return float(a[c])
        if work == "window":
            return np.asarray(a[w]).sum()
        if work == "sum":
            return float(self.sum(a))
        return self.expr(a, self.open(1))


class NdpackPeer(Peer):
    name = "ndpack"

    def open(self, k):
        return ndpack.open(self.srv.url(self.names["b2"][k]))

    def sum(self, a):
        return ndpack.sum(a)

    def expr(self, a, b):
        out = os.path.join(self.tmp, "nd-out.b2nd")
        (a * 2 + b).compute(urlpath=out, mode="w")
        return float(ndpack.open(out)[0, 0])


class Blosc2Peer(Peer):
    name = "blosc2"

    def open(self, k):
        return blosc2.open(self.srv.url(self.names["b2"][k]), mode="r")

    def sum(self, a):
        return a.sum() if hasattr(a, "sum") else blosc2.sum(a)

    def expr(self, a, b):
        out = os.path.join(self.tmp, "b2-out.b2nd")
        blosc2.lazyexpr("a * 2 + b", operands={"a": a, "b": b}).compute(urlpath=out,
                                                                       mode="w")
        return float(blosc2.open(out)[0, 0])


class ZarrPeer(Peer):
    name = "zarr"

    def open(self, k):
        from zarr.storage import FsspecStore
        store = FsspecStore.from_url(self.srv.url(self.names["zarr"][k]), read_only=True)
        return zarr.open_array(store=store, mode="r")

    def sum(self, a):
        total = 0.0                     # chunk by chunk: what a zarr user writes
        step = a.chunks[0]
        for i in range(0, a.shape[0], step):
            total += float(a[i:i + step].sum())
        return total

    def expr(self, a, b):
        out = zarr.open_array(os.path.join(self.tmp, "z-out.zarr"), mode="w",
                              shape=a.shape, chunks=a.chunks, dtype=a.dtype)
        step = a.chunks[0]
        for i in range(0, a.shape[0], step):
            out[i:i + step] = a[i:i + step] * 2 + b[i:i + step]
        return float(out[0, 0])


def upload(srv, arrays, chunks, blocks, tmp) -> dict:
    names = {"b2": [], "zarr": []}
    for k, x in enumerate(arrays):
        nd = ndpack.asarray(x, chunks=chunks, blocks=blocks,
                            cparams={"codec": ndpack.Codec.ZSTD, "clevel": 1})
        names["b2"].append(f"a{k}.b2nd")
        srv.put(f"a{k}.b2nd", nd.to_cframe())
        if zarr is not None:
            path = os.path.join(tmp, f"z{k}.zarr")
            from zarr.codecs import BloscCodec     # the same codec as the frames
            z = zarr.create_array(path, shape=x.shape, chunks=chunks, dtype=x.dtype,
                                  compressors=BloscCodec(cname="zstd", clevel=1,
                                                         shuffle="shuffle"))
            z[:] = x
            for f in pathlib.Path(path).rglob("*"):
                if f.is_file():
                    srv.put(f"z{k}.zarr/{f.relative_to(path).as_posix()}", f.read_bytes())
            names["zarr"].append(f"z{k}.zarr")
    return names


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small inputs, for CI")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    shape = (1000, 1000) if args.quick else (4000, 4000)
    chunks, blocks = (shape[0] // 8, shape[1]), (shape[0] // 80, shape[1])
    reps = 2 if args.quick else 3
    arrays = [make(shape, 0), make(shape, 1)]
    print(f"ndpack {ndpack.__version__}: 2 x {shape} float64 ({arrays[0].nbytes / 1e6:.0f} "
          f"MB each), chunks {chunks}, blocks {blocks} (--quick: {args.quick}); "
          f"load average {os.getloadavg()[0]:.1f}")
    tmp = tempfile.mkdtemp(prefix="bench_remote_", dir=os.environ.get("BENCH_TMP"))
    rows = []
    with ObjectServer() as srv:
        names = upload(srv, arrays, chunks, blocks, tmp)
        peers = [NdpackPeer(srv, names, tmp)]
        if blosc2 is not None:
            peers.append(Blosc2Peer(srv, names, tmp))
        if zarr is not None:
            peers.append(ZarrPeer(srv, names, tmp))
        works = ["open", "point", "window", "sum", "a*2+b"]
        try:
            for latency in (0.0, 0.02):
                srv.faults.latency = latency
                for work in works:
                    cells, fns = [], []
                    for p in peers:
                        def fn(p=p, work=work):
                            srv.stats.reset()
                            p.run(work, shape)
                        try:
                            fn()
                            fns.append(fn)
                        except Exception as exc:    # noqa: BLE001  (a peer's limit)
                            fns.append(None)
                            print(f"  {p.name} {work}: n/a ({type(exc).__name__}: "
                                  f"{str(exc)[:80]})")
                    ok = [f for f in fns if f is not None]
                    times = iter(best_times(ok, reps, budget=30 if args.quick else 120))
                    for p, f in zip(peers, fns):
                        if f is None:
                            cells.append(None)
                            continue
                        t = next(times)
                        f()                      # the counted round
                        cells.append((t, srv.stats.requests, srv.stats.bytes))
                    for p, cell in zip(peers, cells):
                        row = {"latency_ms": latency * 1e3, "work": work, "peer": p.name}
                        if cell is not None:
                            row.update(time=cell[0], requests=cell[1], bytes=cell[2])
                            if cells[0] is not None:
                                row["ratio"] = cell[0] / cells[0][0]
                        rows.append(row)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    hdr = (f"{'latency':>7} {'work':<7} {'peer':<7} {'time ms':>9} {'requests':>8} "
           f"{'MB':>8} {'ratio':>6}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        if "time" not in r:
            print(f"{r['latency_ms']:>5.0f}ms {r['work']:<7} {r['peer']:<7} {'n/a':>9}")
            continue
        print(f"{r['latency_ms']:>5.0f}ms {r['work']:<7} {r['peer']:<7} "
              f"{1e3 * r['time']:>9.1f} {r['requests']:>8} {r['bytes'] / 1e6:>8.2f} "
              f"{r.get('ratio', float('nan')):>6.2f}")
    print("\nratio: peer time / ndpack time (> 1: ndpack faster)")
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    run_timed(main)
