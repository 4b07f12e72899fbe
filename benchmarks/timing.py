"""Timing helpers shared by the benchmarks (run them from the repository root).

Importing this module prints the host line (:func:`host_line`) first, so that every
benchmark's table says where its ratios were measured.
"""

from __future__ import annotations

import os
import sys
import time


def host_line() -> str:
    """One line naming the host: CPU model, cores, cache sizes as ndpack sees them,
    the ISA of the filters, the crc32c kernel, and the environment overrides set."""
    import io
    import ndpack
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    model = fields.get("model name", "unknown CPU")
    words = set(fields.get("flags", "").split())
    flags = " ".join(w for w in ("avx2", "fma", "avx512f", "vpclmulqdq") if w in words)
    info = ndpack.cpu_info
    cfg = io.StringIO()
    ndpack.show_config(file=cfg)
    crc = next((ln.split(":", 1)[1].split("(")[0].strip() for ln in cfg.getvalue().splitlines()
                if ln.strip().startswith("crc32c")), "?")
    env = " ".join(f"{k}={os.environ[k]}" for k in ("NDPACK_ISA", "NDPACK_NTHREADS",
                                                      "NDPACK_CACHE_SIZES", "NDPACK_MEMORY")
                   if k in os.environ)
    return (f"host: {model}, {info['count']} cores, L1d {info['l1_data_cache_size'] >> 10} KiB"
            f" / L2 {info['l2_cache_size'] >> 10} KiB / L3 {info['l3_cache_size'] >> 20} MiB,"
            f" CPU flags [{flags}], filters {info['isa']}, crc32c {crc}"
            + (f", {env}" if env else ""))


if os.environ.get("NDPACK_BENCH_HOST", "1") != "0":
    print(host_line(), flush=True)


def best(fn, reps: int = 3, clock=time.perf_counter) -> float:
    """Best time of `reps` calls of `fn`, in seconds (wall time, or `clock`, e.g.
    ``time.process_time`` for the CPU time of all threads)."""
    t = float("inf")
    for _ in range(reps):
        t0 = clock()
        fn()
        t = min(t, clock() - t0)
    return t


def decode_all(*arrays) -> None:
    """Decode every chunk of each NDArray into one reused buffer (two C threads, no
    other work): the floor of anything that reads them."""
    buf = bytearray(max(a.schunk.chunksize for a in arrays))
    for a in arrays:
        dst = memoryview(buf)[:a.schunk.chunksize]
        for n in range(a.schunk.nchunks):       # (no copy of the chunk: a view of it)
            a.schunk.decompress_chunk(n, dst)


def compress_pieces(x, step: int, cparams) -> None:
    """Compress the bytes of array `x` in pieces of `step` bytes with `cparams` (C
    threads, in memory, no I/O): the floor of writing it compressed."""
    from ndpack.chunks import compress2
    flat = x.reshape(-1).view("u1")
    for i in range(0, flat.size, step):
        compress2(flat[i:i + step], cparams=cparams)


def best_times(fns, reps: int, budget: float = 3.0, first=None,
               interleave: bool = True) -> list[float]:
    """Best time of each function, running them interleaved (so that machine noise hits
    all peers alike), `reps` rounds or until `budget` seconds have passed.  `first`
    holds times already measured (a round that counts), else one round always runs.

    ``interleave=False`` runs each function's rounds one after another instead (each
    with its share of the budget): for calls of a millisecond, where the threads a peer
    leaves spinning after its call (zarr's event loop, python-blosc2's pool) slow down
    whichever peer runs next."""
    if not interleave:
        return [best_times([fn], reps, budget / len(fns))[0] for fn in fns]
    out = list(first) if first is not None else [float("inf")] * len(fns)
    spent = sum(first) if first is not None else 0.0
    for _ in range(reps):
        if spent > budget:
            break
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            out[i] = min(out[i], dt)
            spent += dt
    return out


def write_json(path, rows) -> None:
    """Write benchmark rows to `path` (no-op when `path` is None)."""
    if path:
        import json
        with open(path, "w") as f:
            json.dump(rows, f, indent=1, default=str)


def peak_rss_during(fn) -> tuple[float, int]:
    """Run `fn` once; return its wall time (s) and the growth of this process's resident
    memory above the level at the start (bytes), sampled every 2 ms (Linux)."""
    import threading

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    base = rss()
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss())
            done.wait(0.002)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.perf_counter()
    try:
        fn()
    finally:
        dt = time.perf_counter() - t0
        done.set()
        t.join()
    return dt, max(peak[0], rss()) - base


def best_with_rss(fn, reps: int) -> tuple[float, int]:
    """Best wall time (s) and the largest peak-RSS growth (bytes) over `reps` runs."""
    best_t, rss = float("inf"), 0
    for _ in range(reps):
        t, r = peak_rss_during(fn)
        best_t, rss = min(best_t, t), max(rss, r)
    return best_t, rss


def optional(name: str):
    """The module `name` when it is installed (a peer of the benchmarks), else None."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def run_timed(main) -> None:
    """Run a benchmark's ``main()``, print its wall time on stderr, exit with its status."""
    t0 = time.perf_counter()
    rc = main()
    print(f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    sys.exit(rc)
