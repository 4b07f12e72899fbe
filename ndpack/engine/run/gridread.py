"""The chunk-grid reader shared by the direct readers (:mod:`.foreign`): regions of
an array stored as a regular grid of chunks, read on the engine's leaf threads.

A region's chunks are grouped into batches of about a megabyte per reader thread;
a chunk that lands whole in a contiguous part of the destination is decoded straight
into it.  Chunks a region cuts are decoded once per evaluation (:class:`_Decoded`);
costly codecs decode the chunks of a C-order scan ahead (:class:`_Ahead`).  Readers of
one storage (h5py, PyTables, zarr) subclass :class:`GridReader` with ``load``.
``READS`` counts the chunks read directly, by kind, and the fallbacks.

Examples
--------
>>> import numpy as np
>>> class Ones(GridReader):
...     kind = "ones"
...     def load(self, coords, local, dstv, nthreads=1):
...         dstv[...] = 1
>>> read = Ones(np.zeros((4, 4)), (2, 2), np.float64, 0.0)
>>> dst = np.zeros((3, 3))
>>> read((slice(0, 3), slice(1, 4)), dst)
>>> float(dst.sum())
9.0
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import threading
import weakref

import numpy as np

from ndpack.codecs import get_nthreads
from ndpack.engine.run.workers import run_leaves
from ndpack.errors import FormatError
from ndpack.resources import buffers, memory_limit, pool

__all__ = ["READS"]

READS: collections.Counter = collections.Counter()   # chunks read directly, by kind
_GROUP_BYTES = 1 << 20         # chunks handed to one reader thread at a time, at least


class Fallback(Exception):
    """A chunk the direct reader will not vouch for: read it through ``obj[key]``."""



class GridReader:
    """Reads step-1 regions of an array stored as a regular grid of chunks, each chunk
    decoded into `dst` directly when it lands whole in a contiguous part of `dst`."""

    kind = ""
    ahead_ok = False     # chunks worth decoding ahead (costly codecs): ``decode_whole``

    def __init__(self, arr, chunks: tuple, raw: np.dtype, fill):
        self.arr, self.shape, self.chunks = arr, tuple(arr.shape), tuple(chunks)
        self.raw, self.fill = np.dtype(raw), fill
        self.decoded = _Decoded(math.prod(self.chunks) * self.raw.itemsize)
        self.ahead, self.next = None, 0      # (`next`: the chunk a C-order scan reads next)

    def __call__(self, key: tuple, dst: np.ndarray, nthreads: int = 1) -> None:
        if not _plain_key(key, self.shape) or dst.shape != tuple(s.stop - s.start
                                                                 for s in key):
            dst[...] = self.arr[key]
            return
        jobs = list(self._jobs(key, dst))
        ahead = max(nthreads, get_nthreads())     # (the region path reads by pieces)
        if self.ahead_ok and ahead > 1 and len(jobs) < ahead:
            jobs = self._read_ahead(key, jobs, ahead)
        calls, group, size = [], [], 0
        chunk_bytes = math.prod(self.chunks) * self.raw.itemsize
        for job in jobs:                  # groups of >= 1 MiB per reader thread
            group.append(job)
            size += chunk_bytes
            if size >= _GROUP_BYTES:
                calls.append(_Batch(self, group))
                group, size = [], 0
        if group:
            calls.append(_Batch(self, group))
        if len(calls) < nthreads:         # few chunks: threads left decode inside them
            for call in calls:
                call.threads = nthreads // len(calls)
        if nthreads > 1:
            run_leaves(calls, nthreads)
            return
        # one thread: a batch whose chunk another thread is decoding goes after the
        # others (two reads of the same chunks, a product's two lanes, then decode
        # different chunks instead of one trailing the other)
        pending, passed = collections.deque(calls), 0
        while pending:
            call = pending.popleft()
            if passed < len(pending) and any(self.decoded.decoding(job[0])
                                             for job in call.jobs):
                pending.append(call)
                passed += 1
                continue
            passed = 0
            call()

    def _jobs(self, key, dst):
        ranges = [range(s.start // c, (s.stop - 1) // c + 1) for s, c in zip(key, self.chunks)]
        for coords in itertools.product(*ranges):
            local, rel = [], []
            for s, c, i in zip(key, self.chunks, coords):
                lo, hi = max(s.start, i * c), min(s.stop, (i + 1) * c)
                local.append(slice(lo - i * c, hi - i * c))
                rel.append(slice(lo - s.start, hi - s.start))
            yield coords, tuple(local), dst[tuple(rel)]

    def load(self, coords, local, dstv, nthreads: int = 1) -> None:
        """Chunk `coords`, box `local` of it, into `dstv` (`nthreads`: threads that
        may decode inside the chunk, for codecs that can)."""
        raise NotImplementedError

    def _read_ahead(self, key, jobs, nthreads) -> list:
        """Serve `jobs` from the chunks decoded ahead, start decoding the chunks that
        follow `key`'s in C order, and return the jobs left to read.

        A region of fewer chunks than threads (one 25 MB zstd chunk per region of the
        region path) would have its chunks decoded one at a time while the other cores
        wait: the next ones are decoded meanwhile on the leaf threads into pooled
        buffers (``evaluate("z + 1")`` over 8 zstd chunks of 25 MB: 1.4 -> 2.1 times
        zarr's own speed with a core free).  Only for keys of whole chunks, as the
        region path reads them in a scan in C order (from the first chunk or the one
        after the last read); at most `nthreads` chunks (and an eighth of the memory
        limit) ahead."""
        grid = tuple(-(-n // c) for n, c in zip(self.shape, self.chunks))
        first = int(np.ravel_multi_index(jobs[0][0], grid))
        last = int(np.ravel_multi_index(jobs[-1][0], grid))
        scan, self.next = first == self.next, last + 1
        if not scan or any(s.start % c or (s.stop % c and s.stop != n)
                           for s, c, n in zip(key, self.chunks, self.shape)):
            return jobs
        if self.ahead is None:
            depth = min(nthreads, memory_limit() // 8 // max(1, self.decoded.chunk_bytes))
            if depth < 1:
                return jobs
            self.ahead = _Ahead(self, depth)
        left = [job for job in jobs if not self.ahead.serve(*job)]
        follow = [tuple(int(i) for i in np.unravel_index(f, grid))
                  for f in range(last + 1, min(last + 1 + self.ahead.depth, math.prod(grid)))]
        self.ahead.start(follow, nthreads)
        return left

    def straight(self, stored: tuple, local: tuple, dstv: np.ndarray) -> bool:
        """Whether the whole chunk goes as is into `dstv` (same dtype, contiguous)."""
        return (dstv.dtype == self.raw and dstv.flags.c_contiguous
                and all(s.start == 0 and s.stop == n for s, n in zip(local, stored)))


class _Decoded:
    """Whole chunks a reader decoded for regions that cut them, kept while they fit in
    an eighth of the memory limit (least recently used out first): a chunk whose codec
    cannot decode a part is decoded once per evaluation, not once per region that
    touches it (a reader lives for one evaluation).  Two threads asking for the same
    chunk at once (a product reading two steps, or two parts of one, side by side):
    the second waits for the first's decoding instead of decoding it too."""

    def __init__(self, chunk_bytes: int):
        self.chunk_bytes = chunk_bytes
        self.room = max(0, memory_limit() // 8 // max(chunk_bytes, 1))
        self.kept, self.lock = collections.OrderedDict(), threading.Lock()
        self.busy: dict = {}             # coords -> the lock of the thread decoding them
        # buffers from the engine's pool (fresh pages cost 0.2-0.5 ms per MB here),
        # given back when the reader goes (no thread uses its chunks then)
        self.pooled: list = []
        weakref.finalize(self, _give_all, self.pooled)

    def buffer(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """A pooled buffer for one chunk of `shape`, kept until the reader goes."""
        raw = _take(self.chunk_bytes)
        with self.lock:
            self.pooled.append(raw)
        return raw[:self.chunk_bytes].view(dtype).reshape(shape)

    def decoding(self, coords) -> bool:
        """Whether a thread is decoding chunk `coords` now (another chunk first)."""
        return coords in self.busy

    def get(self, coords, decode) -> np.ndarray:
        """Chunk `coords`, from `decode()` the first time."""
        with self.lock:
            got = self.kept.get(coords)
            if got is not None:
                self.kept.move_to_end(coords)
                return got
            mine = self.busy.setdefault(coords, threading.Lock()) if self.room else None
        if mine is None:
            return decode()
        with mine:                       # one decoding per chunk at a time
            with self.lock:
                got = self.kept.get(coords)
            if got is None:
                got = decode()
                with self.lock:
                    self.kept[coords] = got
                    while len(self.kept) > self.room:
                        self.kept.popitem(last=False)
        with self.lock:
            if self.busy.get(coords) is mine:
                del self.busy[coords]
        return got


def _take(nbytes: int) -> np.ndarray:
    """A buffer of the engine's pool, unless only far bigger ones are idle (a product's
    tiles: taking one would make its next tile fresh pages instead)."""
    raw = buffers.take(nbytes)
    if raw.nbytes > 2 * nbytes:
        buffers.give(raw)
        raw = np.empty(nbytes, np.uint8)
    return raw


def _give_all(pooled: list) -> None:
    while pooled:
        buffers.give(pooled.pop())


class _Ahead:
    """Whole chunks decoded ahead on the leaf threads, into the engine's pooled
    buffers, for the regions that follow (:meth:`GridReader._read_ahead`).  A chunk
    asked for is copied from its buffer once decoded; one still queued is cancelled
    and decoded by the caller straight into place.  Nothing waits on a queued task, so
    any thread may ask."""

    def __init__(self, owner: GridReader, depth: int):
        self.owner, self.depth = weakref.proxy(owner), depth
        self.flight: dict = {}           # coords -> (future, pooled buffer)
        self.lock = threading.Lock()
        weakref.finalize(owner, _Ahead._drop, self.flight)

    def serve(self, coords, local, dstv) -> bool:
        """Box `local` of chunk `coords` into `dstv` if it was decoded ahead."""
        with self.lock:
            got = self.flight.pop(coords, None)
        if got is None:
            return False
        fut, raw = got
        try:                             # False: queued (cancelled), no chunk file
            stored = not fut.cancel() and fut.result()   # (the caller fills), ...
        except Exception:                # noqa: BLE001 -- ... or failed: read again
            stored = False
        if stored:
            owner, n = self.owner, self.owner.decoded.chunk_bytes
            dstv[...] = raw[:n].view(owner.raw).reshape(owner.chunks)[local]
            READS[owner.kind] += 1
        buffers.give(raw)                # (the task is done with it)
        return stored

    def start(self, follow: list, nthreads: int) -> None:
        """Decode the chunks `follow` ahead (those not in flight already); drop the
        ones in flight that are not among them (the guess was wrong)."""
        owner, n = self.owner, self.owner.decoded.chunk_bytes
        with self.lock:
            _Ahead._drop(self.flight, [c for c in self.flight if c not in follow])
            for coords in [c for c in follow if c not in self.flight]:
                raw = _take(n)
                self.flight[coords] = (pool("leaf", nthreads).submit(
                    owner.decode_whole, coords, raw[:n].view(owner.raw).reshape(
                        owner.chunks)), raw)

    @staticmethod
    def _drop(flight: dict, which=None) -> None:
        for coords in list(flight) if which is None else which:
            fut, raw = flight.pop(coords)
            if fut.cancel():             # (a running one keeps its buffer: collected)
                buffers.give(raw)


class _Batch:
    """Some chunks of one region, read by one thread (a fallback per chunk)."""

    threads = 1                  # threads decoding inside a chunk (few chunks, big)

    def __init__(self, owner: GridReader, jobs: list):
        self.owner, self.jobs = owner, jobs

    def __call__(self):
        owner = self.owner
        for coords, local, dstv in self.jobs:
            try:
                owner.load(coords, local, dstv, self.threads)
            except Exception as exc:   # noqa: BLE001 -- Fallback, codec error: the library decides
                READS[owner.kind + " fallback"] += 1      # counted even if the library fails
                origin = [i * c for i, c in zip(coords, owner.chunks)]
                try:
                    dstv[...] = owner.arr[tuple(slice(o + s.start, o + s.stop)
                                                for o, s in zip(origin, local))]
                except Exception as again:
                    raise FormatError(
                        f"{owner.kind} array {_name_of(owner.arr)}: the chunk at {tuple(origin)}"
                        f" cannot be read ({exc}; {type(again).__name__}: {again})") from again
                continue
            READS[owner.kind] += 1


def _name_of(arr) -> str:
    """A name for a foreign array in messages: its file and path inside it."""
    for file_attr, path_attr in (("file", "name"), ("_v_file", "_v_pathname")):
        f, path = getattr(arr, file_attr, None), getattr(arr, path_attr, None)
        if f is not None and path is not None:
            return f"{getattr(f, 'filename', '?')}:{path}"
    store = getattr(arr, "store_path", None)
    return repr(str(store)) if store is not None else type(arr).__name__


def _plain_key(key, shape) -> bool:
    return (isinstance(key, tuple) and len(key) == len(shape) and all(
        isinstance(s, slice) and s.step in (None, 1) and isinstance(s.start, (int, np.integer))
        and isinstance(s.stop, (int, np.integer)) and 0 <= s.start < s.stop <= n
        for s, n in zip(key, shape)))


def bytes_of(a: np.ndarray) -> memoryview:
    return memoryview(a.reshape(-1).view(np.uint8))


def pread_into(fd: int, into: memoryview, offset: int) -> None:
    got = 0
    while got < len(into):
        n = os.preadv(fd, [into[got:]], offset + got)
        if n <= 0:
            raise Fallback("the file ends before the chunk does")
        got += n


def is_numeric(dtype: np.dtype) -> bool:
    return dtype.kind in "iufc" and dtype.fields is None and dtype.subdtype is None \
        and not dtype.metadata
