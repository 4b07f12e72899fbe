"""Python-level fuzzing of everything ndpack reads from disk (issue 23, item 7).

Seeds are the golden vectors (chunks and frames written by python-blosc2, found
through ``tests/conftest.py``'s ``vectors_dir()``) and files ndpack writes here: a
``.b2nd`` array, a sparse array directory, a super-chunk frame with vlmeta, ``.b2z``
and ``.b2d`` stores and a saved expression with its operand files.  Each case takes
one seed, applies 1-4 mutations (bit flips, interesting bytes, interesting 32/64-bit
integers, truncation, garbage appended, a range copied over another, a range
deleted) to one of its files, and opens and reads the result the way a user would.

Cases run in worker subprocesses, in batches; a worker prints one line per case, so
a crash (the worker dies) or a hang (no line within the deadline) is charged to the
case being run, counted, and the batch goes on in a new worker.  Outcomes:

``ok``        the input opened and read (mutations can leave data valid)
``error``     a clean error: an :class:`ndpack.NdpackError` or a builtin
              ``ValueError``/``TypeError``/``KeyError``/``IndexError``/``OSError``/
              ``OverflowError`` (``foreign`` records which, for the report)
``memory``    MemoryError (workers run with a 4 GiB address-space limit)
``recursion`` RecursionError
``other``     any other exception (a bug: AttributeError, AssertionError, ...)
``hang``      no answer within the deadline
``crash``     the worker died (signal, abort)

Run ``python -m tests.tools.fuzzing --cases 20000`` (``--jobs``, ``--seed``, ``--batch``,
``--deadline``); it prints the counts and the first failures and exits 1 when a case
crashed, hung, ran out of memory or raised something other than a clean error.
``tests/tools/test_fuzz.py`` runs a quick sample; ``NDPACK_FUZZ_CASES`` sets its size.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CLEAN = ("ValueError", "TypeError", "KeyError", "IndexError", "OSError",
         "FileNotFoundError", "IsADirectoryError", "NotADirectoryError", "OverflowError",
         "UnicodeDecodeError", "EOFError", "ZeroDivisionError")
FAILURES = ("memory", "recursion", "other", "hang", "crash")
READ_CAP = 64 << 20            # bytes read whole from an opened object; larger: a corner
INTERESTING8 = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x10, 0x20, 0x40)
INTERESTING32 = (0, 1, -1, 2**31 - 1, -2**31, 0x7FFF, 0xFFFF, 16, 2**24)
INTERESTING64 = (0, 1, -1, 2**63 - 1, -2**63, 2**32, 2**40, 2**62)


# ---------------------------------------------------------------------------------------
# the corpus (built in the parent process)


def _own_seeds(root: str, sub: str) -> list:
    """Files ndpack writes: arrays (contiguous, sparse, special chunks), a super-chunk
    with vlmeta, stores and a saved expression with its operands, under `root`/`sub`."""
    import numpy as np

    import ndpack

    own = os.path.join(root, sub)
    os.makedirs(own)
    entries = []

    def add(name, kind="frame", opened=""):
        entries.append({"name": f"{sub}/{name}", "kind": kind, "path": f"{sub}/{name}",
                        "open": opened})
    x = np.arange(600, dtype="f8").reshape(20, 30)
    ndpack.asarray(x, chunks=(8, 16), blocks=(4, 8), urlpath=os.path.join(own, "a.b2nd"),
                   mode="w")
    add("a.b2nd")
    ndpack.asarray(x.astype("i4"), chunks=(10, 10), blocks=(5, 10), contiguous=False,
                   urlpath=os.path.join(own, "sparse.b2nd"), mode="w")
    add("sparse.b2nd")
    s = ndpack.SChunk(chunksize=400, data=np.arange(300, dtype="i4"),
                      urlpath=os.path.join(own, "s.b2frame"), mode="w")
    s.vlmeta["note"] = {"a": [1, 2.5, "x"]}
    s.vlmeta["arr"] = np.arange(4)
    del s
    add("s.b2frame")
    z = ndpack.zeros((50, 40), dtype="f4", chunks=(10, 40), blocks=(5, 40),
                     urlpath=os.path.join(own, "z.b2nd"), mode="w")
    z[3:7] = 1.5
    del z
    add("z.b2nd")
    for name in ("t.b2z", "t.b2d"):
        with ndpack.TreeStore(os.path.join(own, name), mode="w", threshold=1000) as ts:
            ts["/a"] = np.arange(50.0)                      # embedded
            ts["/g/b"] = np.arange(400, dtype="i8").reshape(20, 20)   # its own file
            ts.vlmeta["who"] = "fuzz"
        add(name, "store")
    ex = os.path.join(own, "expr")
    os.makedirs(ex)
    a = ndpack.asarray(x, chunks=(10, 10), urlpath=os.path.join(ex, "a.b2nd"), mode="w")
    b = ndpack.asarray(x * 2, chunks=(10, 10), urlpath=os.path.join(ex, "b.b2nd"),
                       mode="w")
    ndpack.lazyexpr("sin(a) + b * 2 + sum(a, axis=0)",
                    operands={"a": a, "b": b}).save(os.path.join(ex, "e.b2nd"))
    add("expr", "expr", "e.b2nd")
    return entries


def _with_vlmeta(arr):
    arr.vlmeta["k"] = {"v": [1, 2]}
    return arr


def _peer_seeds(root: str) -> list:
    """Files python-blosc2 writes (when it is installed): index-only special chunks,
    repeated-value chunks, a resized array, a sparse array, vlmeta."""
    try:
        import blosc2
    except ImportError:
        return []
    import numpy as np

    peer = os.path.join(root, "peer")
    os.makedirs(peer)
    x = np.arange(5000.0).reshape(100, 50)
    made = {
        "empty.b2nd": lambda p: blosc2.empty((100, 50), chunks=(30, 20), urlpath=p),
        "full.b2nd": lambda p: blosc2.full((100, 50), 3.5, chunks=(30, 20), urlpath=p),
        "sparse.b2nd": lambda p: blosc2.asarray(x, chunks=(30, 20), urlpath=p,
                                                contiguous=False),
        "resized.b2nd": lambda p: blosc2.asarray(x, chunks=(30, 20), urlpath=p)
        .resize((130, 70)),
        "vlmeta.b2nd": lambda p: _with_vlmeta(
            blosc2.asarray(x.astype("i2"), chunks=(50, 50), urlpath=p)),
    }
    out = []
    for name, make in made.items():
        make(os.path.join(peer, name))
        out.append({"name": f"peer/{name}", "kind": "frame", "path": f"peer/{name}",
                    "open": ""})
    return out


def build_corpus(root: str) -> list:
    """Write the seeds under `root`; returns the entries ``{name, kind, path, open}``
    (`path`: the file or directory mutated; `open`: what is opened, relative to it)."""
    from tests.conftest import vectors_dir

    entries = []
    vec = vectors_dir()
    for dirpath, dirs, files in os.walk(vec):
        for d in sorted(dirs):
            if d.endswith((".b2frame", ".b2nd")):            # sparse frames: whole
                rel = os.path.relpath(os.path.join(dirpath, d), vec)
                dst = os.path.join(root, "vec_" + rel.replace(os.sep, "_"))
                shutil.copytree(os.path.join(dirpath, d), dst)
                entries.append({"name": rel, "kind": "frame", "path": os.path.basename(dst),
                                "open": ""})
        dirs[:] = [d for d in dirs if not d.endswith((".b2frame", ".b2nd"))]
        for f in sorted(files):
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, vec)
            if f.endswith(".cdata"):
                kind = "chunk"
            elif f.endswith((".b2frame", ".b2nd")):
                kind = "frame"
            else:
                continue
            dst = os.path.join(root, "vec_" + rel.replace(os.sep, "_"))
            shutil.copyfile(full, dst)
            entries.append({"name": rel, "kind": kind, "path": os.path.basename(dst),
                            "open": ""})
    entries += _own_seeds(root, "own")
    entries += _peer_seeds(root)
    os.makedirs(os.path.join(root, "text"))
    for k, text in enumerate(EXPRESSIONS):
        with open(os.path.join(root, "text", f"{k}.txt"), "w") as f:
            f.write(text)
        entries.append({"name": f"text/{k}", "kind": "text", "path": f"text/{k}.txt",
                        "open": ""})
    old = os.environ.get("NDPACK_CHECKSUMS")
    os.environ["NDPACK_CHECKSUMS"] = "0"          # no checksums: mutations reach decoders
    try:
        entries += _own_seeds(root, "own_nocrc")
    finally:
        if old is None:
            del os.environ["NDPACK_CHECKSUMS"]
        else:
            os.environ["NDPACK_CHECKSUMS"] = old
    return entries


# ---------------------------------------------------------------------------------------
# mutations


def mutate(data: bytes, rng: random.Random) -> bytes:
    """1-4 random mutations of `data`."""
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        n = len(buf)
        op = rng.randrange(8)
        if n == 0:
            buf += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
            continue
        pos = rng.randrange(n)
        if op == 0:
            buf[pos] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[pos] = rng.choice(INTERESTING8)
        elif op == 2 and n >= 4:
            pos = rng.randrange(n - 3)
            v = rng.choice(INTERESTING32) & 0xFFFFFFFF
            buf[pos:pos + 4] = v.to_bytes(4, rng.choice(("little", "big")))
        elif op == 3 and n >= 8:
            pos = rng.randrange(n - 7)
            v = rng.choice(INTERESTING64) & 0xFFFFFFFFFFFFFFFF
            buf[pos:pos + 8] = v.to_bytes(8, rng.choice(("little", "big")))
        elif op == 4:
            del buf[rng.randrange(n):]                          # truncate
        elif op == 5:
            buf += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        elif op == 6:
            a, b = sorted(rng.randrange(n + 1) for _ in range(2))
            dst = rng.randrange(n)
            piece = buf[a:b]
            buf[dst:dst + len(piece)] = piece                    # copy a range over
        else:
            buf[pos] = rng.randrange(256)
    return bytes(buf)


KIND_WEIGHTS = {"chunk": 20, "frame": 40, "store": 15, "expr": 15, "text": 10}
# expression strings (mutated as bytes, read as UTF-8 with replacement characters)
EXPRESSIONS = [
    "a + b * 2", "sin(a) ** 2 + cos(b) - 1.5e3", "where(a > b, a, 2**40) // 7",
    "sum(a, axis=1) + b[:, ::2].T[1, ::-1].T[0]", "a[1:3, ::-1] * 1e308 + (b[1:3] % 3)",
    "(c & 3) << 2 | ~c ^ 255", "mean(a, axis=1, keepdims=True) - std(b)",
    "arctan2(a, b + 1) ** 0.5 + exp(-abs(a))", "c ** 2 ** 3 + 9223372036854775807",
    "(a > 1) & (b < 2) | ~(c == 0)", "matmul(a, b.T) + 1", "max(a) - min(b, axis=0)",
]


def pick(entries: list, rng: random.Random) -> dict:
    """A seed: its kind by :data:`KIND_WEIGHTS` (the vectors are mostly chunks), then
    one of that kind."""
    kinds = sorted({e["kind"] for e in entries})
    kind = rng.choices(kinds, [KIND_WEIGHTS.get(k, 10) for k in kinds])[0]
    return rng.choice([e for e in entries if e["kind"] == kind])


def _case_files(entry: dict, corpus: str, scratch: str, rng: random.Random) -> str:
    """Copy the entry into `scratch`, mutate one of its files; returns what to open."""
    src = os.path.join(corpus, entry["path"])
    dst = os.path.join(scratch, os.path.basename(entry["path"]))
    if os.path.isdir(src):
        shutil.copytree(src, dst)
        files = sorted(os.path.relpath(os.path.join(d, f), dst)
                       for d, _, fs in os.walk(dst) for f in fs)
        victim = os.path.join(dst, rng.choice(files))
    else:
        shutil.copyfile(src, dst)
        victim = dst
    with open(victim, "rb") as f:
        data = f.read()
    with open(victim, "wb") as f:
        f.write(mutate(data, rng))
    return os.path.join(dst, entry["open"]) if entry["open"] else dst


# ---------------------------------------------------------------------------------------
# exercising what was opened (in the worker)


def _read(obj, depth: int = 0):
    import numpy as np

    import ndpack

    if depth > 3:
        return
    if isinstance(obj, (ndpack.NDArray, ndpack.LazyExpr)):
        nbytes = int(np.prod(obj.shape, dtype=object)) * obj.dtype.itemsize
        if nbytes <= READ_CAP:
            obj[...] if isinstance(obj, ndpack.NDArray) else obj[()]
            if obj.ndim and obj.shape[0] > 1:
                obj[::2]
        elif obj.ndim and all(obj.shape):
            obj[(slice(0, 1),) * obj.ndim]
        if isinstance(obj, ndpack.NDArray):
            obj.vlmeta.getall()
            obj.meta.getall()
        return
    if isinstance(obj, ndpack.SChunk):
        for i in range(min(obj.nchunks, 64)):
            obj.decompress_chunk(i)
        if obj.nbytes <= READ_CAP:
            obj[:]
        obj.vlmeta.getall()
        return
    if hasattr(obj, "keys"):
        for k in list(obj.keys())[:32]:
            _read(obj[k], depth + 1)
        vl = getattr(obj, "vlmeta", None)
        if vl is not None:
            vl[:]


def run_case(entry: dict, path: str) -> None:
    """Open and read a mutated input; exceptions propagate to the caller."""
    import ndpack

    if entry["kind"] == "chunk":
        with open(path, "rb") as f:
            data = f.read()
        info = ndpack.chunk_info(data)
        if info["nbytes"] <= READ_CAP:
            ndpack.decompress(data)
            from ndpack.chunks import decompress_blocks
            if info["blocksize"] > 0 and info["nbytes"] > 0 and not info["vlblocks"]:
                decompress_blocks(data, [0], nthreads=1)
        return
    if entry["kind"] == "text":
        import numpy as np
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        x = np.arange(20.0).reshape(4, 5) - 7.5
        names = {"a": ndpack.asarray(x, chunks=(2, 5)), "b": x[::-1] * 0.5,
                 "c": np.arange(20, dtype=np.int64).reshape(4, 5)}
        _read(ndpack.lazyexpr(text, local_dict=names))
        ndpack.evaluate(text, local_dict=names)
        return
    if entry["kind"] == "store":
        with ndpack.TreeStore(path, mode="r") as ts:
            _read(ts)
        return
    obj = ndpack.open(path, mode="r")
    _read(obj)
    if entry["kind"] == "frame" and os.path.isfile(path):
        with open(path, "rb") as f:
            data = f.read()
        _read(ndpack.schunk_from_cframe(data))


def check_corpus(root: str, entries: list) -> list:
    """The unmutated seeds must open and read: ``[(name, error)]`` of those that do not."""
    bad = []
    for e in entries:
        path = os.path.join(root, e["path"], e["open"]) if e["open"] else \
            os.path.join(root, e["path"])
        try:
            run_case(e, path)
        except Exception as exc:                       # noqa: BLE001 (reported)
            bad.append((e["name"], f"{type(exc).__name__}: {exc}"))
    return bad


def _classify(exc: BaseException, kind: str = "") -> tuple[str, str]:
    """``(outcome, detail)``; a builtin error from a file is ``foreign:`` (reported: files
    should give ndpack's errors), from an expression string ``text:`` (the parser's
    documented ValueError, NumPy's TypeError/OverflowError)."""
    import ndpack

    name = type(exc).__name__
    if isinstance(exc, MemoryError):
        return "memory", name
    if isinstance(exc, RecursionError):
        return "recursion", name
    if isinstance(exc, ndpack.NdpackError):
        return "error", name
    if name in CLEAN or isinstance(exc, (ValueError, TypeError, KeyError, IndexError,
                                         OSError, OverflowError)):
        return "error", ("text:" if kind == "text" else "foreign:") + name
    return "other", name


def worker(job: dict) -> None:
    """Run cases ``start..stop`` of `job`, one output line each: ``i outcome detail``."""
    import resource
    import warnings

    import ndpack  # noqa: F401  (an import failure is the worker's, not a case's)

    warnings.simplefilter("ignore")
    limit = job.get("as_limit", 4 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    entries = job["entries"]
    scratch_root = tempfile.mkdtemp(prefix="w", dir=job["scratch"])
    try:
        for i in range(job["start"], job["stop"]):
            rng = random.Random(job["seed"] * 1_000_003 + i)
            entry = pick(entries, rng)
            scratch = os.path.join(scratch_root, str(i))
            os.makedirs(scratch)
            print(f"{i} start {entry['name']}", flush=True)
            selftest = os.environ.get("NDPACK_FUZZ_SELFTEST")     # tests of the harness
            if selftest == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            elif selftest == "hang":
                time.sleep(3600)
            try:
                path = _case_files(entry, job["corpus"], scratch, rng)
                run_case(entry, path)
                outcome, detail = "ok", "-"
            except BaseException as exc:           # noqa: BLE001 (classified)
                if isinstance(exc, KeyboardInterrupt):
                    raise
                outcome, detail = _classify(exc, entry["kind"])
                if outcome != "error":
                    detail += ":" + repr(str(exc)[:200])
            shutil.rmtree(scratch, ignore_errors=True)
            print(f"{i} {outcome} {detail}", flush=True)
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# the parent: batches of cases in workers, crashes and hangs charged to their case


def _run_batch(job: dict, deadline: float, results: dict, names: dict) -> int:
    """Run cases from job['start']; returns the first case not finished (the batch's
    stop when all finished)."""
    cmd = [sys.executable, "-c", "import json, sys; from tests.tools.fuzzing import worker; "
           "worker(json.loads(sys.stdin.read()))"]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=repo, env=env, text=True)
    proc.stdin.write(json.dumps(job))
    proc.stdin.close()
    current, last = None, time.monotonic()
    pending = ""
    try:
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 65536).decode(errors="replace")
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split("\n")
                for line in lines:
                    i, outcome, detail = (line.split(" ", 2) + ["", ""])[:3]
                    if outcome == "start":
                        current, last = int(i), time.monotonic()
                        names[int(i)] = detail
                    elif i.isdigit():
                        results[int(i)] = (outcome, detail)
                        current = None
            elif current is not None and time.monotonic() - last > deadline:
                proc.kill()
                results[current] = ("hang", names.get(current, "?"))
                proc.wait()
                return current + 1
            if proc.poll() is not None and not ready:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    if current is not None:                        # died while running `current`
        results[current] = ("crash", f"{names.get(current, '?')} rc={proc.returncode}")
        return current + 1
    if proc.returncode and not any(job["start"] <= i < job["stop"] for i in results):
        return job["start"]                        # died before its first case: retry
    return job["stop"]


def fuzz(cases: int, seed: int = 0, jobs: int = 1, batch: int = 500,
         deadline: float = 30.0, as_limit: int = 4 << 30, log=None) -> dict:
    """Run `cases` cases; returns ``{"counts", "failures", "foreign", "by_seed"}``."""
    from concurrent.futures import ThreadPoolExecutor

    top = tempfile.mkdtemp(prefix="ndpfuzz")
    corpus, scratch = os.path.join(top, "corpus"), os.path.join(top, "scratch")
    os.makedirs(corpus)
    os.makedirs(scratch)
    try:
        entries = build_corpus(corpus)
        bad = check_corpus(corpus, entries)
        if bad:
            raise RuntimeError(f"seeds that do not read unmutated: {bad}")
        results, names = {}, {}
        starts = list(range(0, cases, batch))

        def run_range(lo):
            hi = min(lo + batch, cases)
            retries, mine = 3, tempfile.mkdtemp(dir=scratch)     # this range's files
            while lo < hi:
                job = dict(corpus=corpus, entries=entries, seed=seed, start=lo, stop=hi,
                           as_limit=as_limit, scratch=mine)
                nxt = _run_batch(job, deadline, results, names)
                if nxt == lo:                         # the worker did not start
                    retries -= 1
                    if not retries:
                        break                          # the cases count as lost
                    time.sleep(5)
                lo = nxt
                for leftover in os.listdir(mine):        # a crashed worker's files
                    shutil.rmtree(os.path.join(mine, leftover), ignore_errors=True)
            shutil.rmtree(mine, ignore_errors=True)
            if log:
                log(f"cases {hi}/{cases}")

        with ThreadPoolExecutor(max(1, jobs)) as pool:
            list(pool.map(run_range, starts))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    counts = collections.Counter(o for o, _ in results.values())
    missing = cases - len(results)
    if missing:
        counts["lost"] = missing
    foreign = collections.Counter(d for o, d in results.values()
                                  if o == "error" and d.startswith("foreign:"))
    failures = sorted((i, o, d) for i, (o, d) in results.items() if o in FAILURES)
    foreign_cases = sorted((i, d, names.get(i, "?")) for i, (o, d) in results.items()
                           if o == "error" and d.startswith("foreign:"))
    by_seed = collections.Counter()
    for i, (o, _) in results.items():
        by_seed[(names.get(i, "?"), o)] += 1
    return {"counts": dict(counts), "failures": failures, "foreign": dict(foreign),
            "foreign_cases": foreign_cases, "by_seed": by_seed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--deadline", type=float, default=30.0,
                    help="seconds a case may run before it counts as a hang")
    args = ap.parse_args(argv)
    t = time.time()
    rep = fuzz(args.cases, args.seed, args.jobs, args.batch, args.deadline,
               log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"fuzz: {args.cases} cases in {time.time() - t:.0f} s, seed {args.seed}")
    print("outcomes:", json.dumps(rep["counts"], sort_keys=True))
    print("builtin errors:", json.dumps(rep["foreign"], sort_keys=True))
    for i, d, name in rep["foreign_cases"][:20]:
        print(f"  case {i}: {d} ({name})")
    for i, o, d in rep["failures"][:50]:
        print(f"  case {i}: {o} {d}")
    bad = sum(rep["counts"].get(k, 0) for k in FAILURES + ("lost",))
    print(f"failures: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
