"""Direct readers: h5py and zarr operands read and decoded on our own threads.

``obj[region]`` is slow for the two most common foreign arrays: h5py holds the GIL
while HDF5 reads, and zarr v3 decodes every chunk in its one event-loop thread.  For
the simple storage layouts a *direct reader* finds each chunk in the file itself and
reads it with ``os.preadv`` (h5py) or from its chunk file (zarr), decoding with
codecs that release the GIL (our C core for Blosc and zstd chunks, straight into place;
zlib), so several chunks are read at once on the engine's reader threads.

:func:`reader` returns a reader, or None when the array is not one it is sure to read
right -- the caller then keeps ``obj[region]``:

* **h5py**: a Dataset of a file opened with the default ``sec2`` driver (no user
  block, no SWMR), chunked with no filter, deflate alone or the Blosc2 filter (HDF5
  filter 32026, as hdf5plugin and PyTables write it: each chunk a Blosc2 frame, a
  b2nd array for chunks of 2 or more dimensions, of which only the blocks a region
  touches are decoded), or contiguous; a numeric
  type whose file layout is NumPy's (byte order included); a defined fill value
  (unallocated chunks read as it).  A file open for writing is flushed first.
* **zarr** (formats 2 and 3): an array of a ``LocalStore``, regular chunk grid, C
  order, no filters and no sharding, with no compressor or one of zstd, Blosc,
  gzip or zlib; missing chunk files read as the fill value.

An array that :func:`writing` marks as the output being written is never read
directly.  A chunk whose bytes do not decode to the expected size is read through
``obj[key]`` instead: never silently wrong data.  ``READS`` counts the chunks read
directly, by kind (``"h5py"``, ``"zarr"``), and those that fell back
(``"zarr fallback"``, ...).

Examples
--------
>>> import os, tempfile, numpy as np, h5py
>>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
>>> with h5py.File(path, "w") as f:
...     _ = f.create_dataset("x", data=np.arange(20.0).reshape(4, 5), chunks=(3, 2))
>>> f = h5py.File(path, "r")
>>> read = reader(f["x"])
>>> dst = np.empty((2, 3))
>>> read((slice(1, 3), slice(2, 5)), dst)
>>> dst.tolist()
[[7.0, 8.0, 9.0], [12.0, 13.0, 14.0]]
>>> f.close()
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import math
import os
import sys
import threading
import weakref
import zlib

import numpy as np

from ndpack.chunks import chunk_info, decompress2
from ndpack.codecs import get_nthreads, zstd_frame_decompress
from ndpack.engine.run.workers import run_leaves
from ndpack.errors import FormatError
from ndpack.resources import buffers, memory_limit, pool, scratch
from ndpack.storage.ndarray import NDArray
from ndpack.storage.schunk import schunk_from_cframe

__all__ = ["READS", "BLOSC2_FILTER", "read_new", "reader", "writing"]

BLOSC2_FILTER = 32026          # the HDF5 filter id of Blosc2 (hdf5plugin, PyTables)

READS: collections.Counter = collections.Counter()   # chunks read directly, by kind
_GROUP_BYTES = 1 << 20         # chunks handed to one reader thread at a time, at least
_VIRTUAL_BYTES = 4 << 20       # pieces of a contiguous HDF5 dataset read at once
_OUTPUTS: list = []            # arrays being written (never read directly)
_LOCK = threading.Lock()


class _Fallback(Exception):
    """A chunk the direct reader will not vouch for: read it through ``obj[key]``."""


# ---------------------------------------------------------------------------------------
# entry points

def reader(arr):
    """A direct reader of the foreign array `arr`, or None when none applies.

    The reader is called as ``read(key, dst, nthreads=1)``: `key` a tuple of step-1
    slices (one per dimension), `dst` an array of the key's shape (any dtype NumPy
    can assign to); chunks are read on up to `nthreads` reader threads.  Make one
    per evaluation: it reflects the file as it is when made (a writable h5py file is
    flushed then).

    Examples
    --------
    >>> import numpy as np
    >>> reader(np.arange(3)) is None
    True
    """
    if isinstance(arr, np.ndarray) or _is_output(arr):
        return None
    make = None
    mod = type(arr).__module__ or ""
    if mod.startswith("h5py") and "h5py" in sys.modules:
        make = _H5Reader.make
    elif mod.startswith("zarr") and "zarr" in sys.modules:
        make = _ZarrReader.make
    elif mod.startswith("tables") and "tables" in sys.modules:
        make = _TablesReader.make
    if make is None:
        return None
    try:
        return make(arr)
    except Exception:            # noqa: BLE001 -- unexpected metadata: the general path
        return None


def read_new(read, arr, key: tuple, nthreads: int = 1) -> np.ndarray:
    """``arr[key]`` (step-1 slices) through the direct reader `read` into a new array.

    Examples
    --------
    >>> import numpy as np
    >>> read_new(lambda key, dst, nthreads=1: dst.fill(1), np.zeros(4), (slice(1, 3),))
    array([1., 1.])
    """
    dst = np.empty(tuple(s.stop - s.start for s in key), arr.dtype)
    read(key, dst, nthreads)
    return dst


@contextlib.contextmanager
def writing(out):
    """Mark `out` as the output being written for the duration: :func:`reader` gives
    no direct reader of it (its chunks change while the expression runs).

    Examples
    --------
    >>> import numpy as np
    >>> with writing(np.zeros(2)):
    ...     pass
    """
    with _LOCK:
        _OUTPUTS.append(out)
    try:
        yield out
    finally:
        with _LOCK:
            _OUTPUTS.remove(out) if any(o is out for o in _OUTPUTS) else None


def _is_output(arr) -> bool:
    with _LOCK:
        outs = list(_OUTPUTS)
    ident = _identity(arr)
    return any(o is arr or (ident is not None and _identity(o) == ident) for o in outs)


def _identity(arr):
    """What names the stored array behind `arr` (two handles of one dataset match)."""
    try:
        mod = type(arr).__module__ or ""
        if mod.startswith("h5py") and hasattr(arr, "id") and hasattr(arr, "file"):
            import h5py
            info = h5py.h5o.get_info(arr.id)
            return ("h5", os.path.realpath(arr.file.filename), info.fileno, info.addr)
        if mod.startswith("tables") and hasattr(arr, "_v_pathname"):
            return ("h5", os.path.realpath(arr._v_file.filename), arr._v_pathname)
        if mod.startswith("zarr") and hasattr(arr, "store_path"):
            root = getattr(arr.store, "root", None)
            where = str(arr.store_path) if root is None else os.path.realpath(str(root))
            return ("zarr", where, arr.path)
    except Exception:            # noqa: BLE001,S110 -- unknown: compared by identity only
        pass
    return None


# ---------------------------------------------------------------------------------------
# the chunk grid, shared by both kinds

class _GridReader:
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
    buffers, for the regions that follow (:meth:`_GridReader._read_ahead`).  A chunk
    asked for is copied from its buffer once decoded; one still queued is cancelled
    and decoded by the caller straight into place.  Nothing waits on a queued task, so
    any thread may ask."""

    def __init__(self, owner: _GridReader, depth: int):
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

    def __init__(self, owner: _GridReader, jobs: list):
        self.owner, self.jobs = owner, jobs

    def __call__(self):
        owner = self.owner
        for coords, local, dstv in self.jobs:
            try:
                owner.load(coords, local, dstv, self.threads)
            except Exception as exc:   # noqa: BLE001 -- _Fallback, a codec error: the library decides
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


def _bytes_of(a: np.ndarray) -> memoryview:
    return memoryview(a.reshape(-1).view(np.uint8))


def _pread(fd: int, into: memoryview, offset: int) -> None:
    got = 0
    while got < len(into):
        n = os.preadv(fd, [into[got:]], offset + got)
        if n <= 0:
            raise _Fallback("the file ends before the chunk does")
        got += n


def _numeric(dtype: np.dtype) -> bool:
    return dtype.kind in "iufc" and dtype.fields is None and dtype.subdtype is None \
        and not dtype.metadata


# ---------------------------------------------------------------------------------------
# h5py

class _H5Reader(_GridReader):
    """Chunks of an HDF5 dataset read with ``os.preadv`` from our own descriptor."""

    kind = "h5py"

    @classmethod
    def make(cls, dset):
        import h5py
        if not isinstance(dset, h5py.Dataset) or not dset.shape or 0 in dset.shape:
            return None
        f = dset.file
        if f.driver != "sec2" or f.userblock_size or getattr(f, "swmr_mode", False) \
                or dset.is_virtual or dset.external:
            return None
        dtype = np.dtype(dset.dtype)
        if not _numeric(dtype) or dset.id.get_type() != h5py.h5t.py_create(dtype):
            return None                  # the file's bytes are not NumPy's layout
        dcpl = dset.id.get_create_plist()
        if dcpl.fill_value_defined() == h5py.h5d.FILL_VALUE_UNDEFINED:
            return None
        layout = dcpl.get_layout()
        filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
        if layout == h5py.h5d.CHUNKED:
            if filters not in ([], [h5py.h5z.FILTER_DEFLATE], [BLOSC2_FILTER]):
                return None
        elif layout != h5py.h5d.CONTIGUOUS or filters:
            return None
        if f.mode != "r":
            f.flush()                    # what h5py cached is on disk before we read
        return cls(dset, layout == h5py.h5d.CHUNKED, filters[0] if filters else None)

    def __init__(self, dset, chunked: bool, codec: int | None):
        shape, dtype = tuple(dset.shape), np.dtype(dset.dtype)
        if chunked:
            chunks = tuple(dset.chunks)
        else:                            # contiguous: pieces of whole trailing rows
            chunks = _virtual_chunks(shape, dtype.itemsize)
            self.base = dset.id.get_offset()
        super().__init__(dset, chunks, dtype, dset.fillvalue)
        self.chunked, self.codec, self.info = chunked, codec, {}
        self.fd = os.open(dset.file.filename, os.O_RDONLY)
        weakref.finalize(self, os.close, self.fd)
        mine, theirs = os.fstat(self.fd), os.fstat(dset.file.id.get_vfd_handle())
        if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
            raise OSError("the file's name leads to another file")

    def _locate(self, coords):
        """``(offset or None, stored bytes, filter mask, stored shape)`` of a chunk."""
        origin = tuple(i * c for i, c in zip(coords, self.chunks))
        if not self.chunked:
            stored = tuple(min(c, n - o) for c, n, o in zip(self.chunks, self.shape, origin))
            if self.base is None:
                return None, 0, 0, stored
            flat = int(np.ravel_multi_index(origin, self.shape))
            return self.base + flat * self.raw.itemsize, math.prod(stored) * self.raw.itemsize, \
                0, stored
        got = self.info.get(coords)
        if got is None:
            got = self.info[coords] = self.arr.id.get_chunk_info_by_coord(origin)
        return got.byte_offset, got.size, got.filter_mask, self.chunks

    def load(self, coords, local, dstv, nthreads: int = 1) -> None:
        offset, size, mask, stored = self._locate(coords)
        if offset is None:
            dstv[...] = self.fill
            return
        nbytes = math.prod(stored) * self.raw.itemsize
        if self.codec == BLOSC2_FILTER and not mask & 1:
            src = scratch(size, "foreign-packed")
            _pread(self.fd, memoryview(src), offset)
            _blosc2_frame_into(src, stored, local, dstv, self.raw, nthreads)
            return
        if self.codec is not None and not mask & 1:
            def inflate():
                src = scratch(size, "foreign-packed")
                _pread(self.fd, memoryview(src), offset)
                data = zlib.decompress(src, 15, nbytes)
                if len(data) != nbytes:
                    raise _Fallback("the chunk inflates to the wrong size")
                return np.frombuffer(data, self.raw).reshape(stored)
            whole = all(s.start == 0 and s.stop == n for s, n in zip(local, stored))
            dstv[...] = (inflate() if whole else self.decoded.get(coords, inflate))[local]
            return
        if size != nbytes:
            raise _Fallback("an unfiltered chunk of an unexpected size")
        self._rows(offset, stored, local, dstv)

    def _rows(self, offset, stored, local, dstv) -> None:
        """The rows of the chunk's first dimension longer than 1 that `local` needs:
        straight into `dstv` when they are exactly its bytes, else via a buffer."""
        p = next((d for d, n in enumerate(stored) if n > 1), len(stored) - 1)
        row = math.prod(stored[p + 1:]) * self.raw.itemsize
        rows = local[p]
        start, n = offset + rows.start * row, (rows.stop - rows.start) * row
        whole = all(s.start == 0 and s.stop == m for s, m in zip(local[p + 1:], stored[p + 1:]))
        if whole and dstv.dtype == self.raw and dstv.flags.c_contiguous:
            _pread(self.fd, _bytes_of(dstv), start)
            return
        buf = scratch(n, "foreign-rows")
        inner = stored[p + 1:]
        isz, nrows = self.raw.itemsize, rows.stop - rows.start
        first = int(np.ravel_multi_index([s.start for s in local[p + 1:]], inner)) * isz \
            if inner else 0
        last = (int(np.ravel_multi_index([s.stop - 1 for s in local[p + 1:]], inner)) + 1) \
            * isz if inner else row
        if not whole and 2 * (last - first) <= row and nrows <= 256:
            # each row's span from its first to its last wanted item only (a product's
            # step cutting the chunk's inner dimensions: not the whole rows each step)
            mv = memoryview(buf)
            for r in range(nrows):
                _pread(self.fd, mv[r * row + first:r * row + last], start + r * row + first)
        else:
            _pread(self.fd, memoryview(buf), start)
        view = buf.view(self.raw).reshape((1,) * p + (nrows,) + inner)
        dstv[...] = view[(slice(None),) * (p + 1) + tuple(local[p + 1:])]


class _TablesReader(_H5Reader):
    """Chunks of a PyTables ``CArray``/``EArray`` (no filter, or Blosc2 alone), read
    with ``os.preadv`` at the offsets PyTables' ``chunk_info`` gives."""

    kind = "tables"

    @classmethod
    def make(cls, arr):
        import tables
        if not isinstance(arr, tables.Leaf) or not isinstance(arr, tables.Array) \
                or arr.chunkshape is None or not arr.shape or 0 in arr.shape:
            return None
        dtype, flt = np.dtype(arr.dtype), arr.filters
        order = {"little": "<", "big": ">"}.get(arr.byteorder, "=")
        if not _numeric(dtype) or dtype.newbyteorder(order) != dtype \
                and dtype.itemsize > 1 or flt.fletcher32:
            return None
        if flt.complevel and not (flt.complib or "").startswith("blosc2"):
            return None
        if arr._v_file.mode != "r":
            arr._v_file.flush()
        return cls(arr, BLOSC2_FILTER if flt.complevel else None)

    def __init__(self, arr, codec):
        _GridReader.__init__(self, arr, tuple(arr.chunkshape), np.dtype(arr.dtype),
                             np.asarray(arr.atom.dflt, arr.dtype))
        self.chunked, self.codec, self.info, self.base = True, codec, {}, None
        self.fd = os.open(arr._v_file.filename, os.O_RDONLY)
        weakref.finalize(self, os.close, self.fd)

    def _locate(self, coords):
        got = self.info.get(coords)
        if got is None:
            origin = tuple(i * c for i, c in zip(coords, self.chunks))
            got = self.info[coords] = self.arr.chunk_info(origin)
        return got.offset, got.size, got.filter_mask, self.chunks


def _blosc2_frame_into(src, stored: tuple, local: tuple, dstv: np.ndarray, raw,
                       nthreads: int = 1) -> None:
    """Box `local` of an HDF5 chunk stored by the Blosc2 filter (a Blosc2 frame in
    `src`: a b2nd array of the chunk's shape, or a super-chunk of one chunk for 1-d
    datasets) into `dstv` with `nthreads` decoding threads; a b2nd chunk decodes only
    the blocks `local` touches."""
    schunk = schunk_from_cframe(src)               # views of `src`: decoded right away
    nbytes = math.prod(stored) * raw.itemsize
    if "b2nd" in schunk.meta:
        arr = NDArray(schunk)
        if arr.shape != stored or arr.dtype.itemsize != raw.itemsize:
            raise _Fallback("a Blosc2 frame of another shape or item size")
        if dstv.dtype == raw and dstv.flags.c_contiguous:
            arr.read_into(local, dstv.view(arr.dtype), nthreads)
        else:
            dstv[...] = arr[local].view(raw)
        return
    if schunk.nchunks != 1 or schunk.nbytes != nbytes:
        raise _Fallback("a Blosc2 frame that is not one chunk of the dataset's")
    if dstv.dtype == raw and dstv.flags.c_contiguous and tuple(dstv.shape) == stored:
        if nthreads > 1:
            schunk.dparams = {"nthreads": nthreads}
        schunk.decompress_chunk(0, _bytes_of(dstv))      # checked, straight into place
        return
    data = np.frombuffer(schunk.decompress_chunk(0), raw).reshape(stored)
    dstv[...] = data[local]


def _virtual_chunks(shape: tuple, itemsize: int) -> tuple:
    """Pieces of a C-ordered array that are each one run of bytes of about 4 MiB."""
    budget = max(1, _VIRTUAL_BYTES // itemsize)
    for d in range(len(shape)):
        inner = math.prod(shape[d + 1:])
        if inner <= budget:
            return (1,) * d + (max(1, min(shape[d], budget // inner)),) + tuple(shape[d + 1:])
    return (1,) * len(shape)


# ---------------------------------------------------------------------------------------
# zarr

class _ZarrReader(_GridReader):
    """Chunk files of a zarr array on a local store, decoded on the calling thread."""

    kind = "zarr"

    @classmethod
    def make(cls, arr):
        import zarr
        from zarr.storage import LocalStore
        if not isinstance(arr, zarr.Array) or not arr.shape or 0 in arr.shape \
                or not isinstance(arr.store, LocalStore):
            return None
        meta = arr.metadata
        if meta.zarr_format == 2:
            found = _v2_layout(meta)
        elif meta.zarr_format == 3:
            found = _v3_layout(meta, zarr)
        else:
            return None
        if found is None:
            return None
        codec, raw = found
        if not _numeric(raw) or raw.newbyteorder("=") != np.dtype(arr.dtype).newbyteorder("="):
            return None
        if arr.fill_value is None:
            return None
        return cls(arr, codec, raw)

    def __init__(self, arr, codec: str, raw: np.dtype):
        super().__init__(arr, tuple(arr.chunks), raw, np.asarray(arr.fill_value, raw))
        self.codec = codec
        self.root = os.path.join(str(arr.store.root), arr.path)
        self.key = arr.metadata.encode_chunk_key
        self.ahead_ok = codec != "none"

    def load(self, coords, local, dstv, nthreads: int = 1) -> None:
        path = os.path.join(self.root, self.key(coords))
        if not os.path.exists(path):
            dstv[...] = self.fill
            return
        nbytes = math.prod(self.chunks) * self.raw.itemsize
        if self.straight(self.chunks, local, dstv):
            self._decode(self._read(path), _bytes_of(dstv), nbytes)
            return
        whole = all(s.start == 0 and s.stop == n for s, n in zip(local, self.chunks))

        def decode(into=None):
            into = self.decoded.buffer(self.chunks, self.raw) if into is None else into
            self._decode(self._read(path), _bytes_of(into), nbytes)
            return into
        if whole:            # a whole chunk of another dtype or layout: no keeping
            dstv[...] = decode(scratch(nbytes, "foreign-chunk").view(self.raw)
                               .reshape(self.chunks))
        else:
            dstv[...] = self.decoded.get(coords, decode)[local]

    def decode_whole(self, coords, into: np.ndarray) -> bool:
        """Chunk `coords` decoded into `into`; False when it is not stored."""
        path = os.path.join(self.root, self.key(coords))
        if not os.path.exists(path):
            return False
        self._decode(self._read(path), _bytes_of(into), into.nbytes)
        return True

    @staticmethod
    def _read(path: str) -> np.ndarray:
        """The bytes of the chunk file at `path` (a scratch buffer of this thread)."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise _Fallback("the chunk file went away") from None
        try:
            size = os.fstat(fd).st_size
            src = scratch(size, "foreign-packed")
            _pread(fd, memoryview(src), 0)
        finally:
            os.close(fd)
        return src

    def _decode(self, src: np.ndarray, into: memoryview, nbytes: int) -> None:
        if self.codec == "none":
            if len(src) != nbytes:
                raise _Fallback("a raw chunk of the wrong size")
            into[:] = memoryview(src)
        elif self.codec == "blosc":
            if chunk_info(src)["nbytes"] != nbytes:
                raise _Fallback("a Blosc chunk of the wrong size")
            decompress2(src, into, nthreads=1)
        elif self.codec == "zstd":
            if _zstd_content_size(src) != nbytes:
                raise _Fallback("a zstd frame of another size (or none said)")
            zstd_frame_decompress(src, into)    # the C core, straight into place
        else:
            data = zlib.decompress(src, 31 if self.codec == "gzip" else 15, nbytes)
            if len(data) != nbytes:
                raise _Fallback("a deflate stream of the wrong size")
            into[:] = data


def _v2_layout(meta):
    """``(codec, raw dtype)`` of a zarr v2 array we can read, else None."""
    import numcodecs
    if meta.filters or meta.order != "C":
        return None
    comp = meta.compressor
    kinds = {numcodecs.Zstd: "zstd", numcodecs.Blosc: "blosc", numcodecs.GZip: "gzip",
             numcodecs.Zlib: "zlib"}
    codec = "none" if comp is None else kinds.get(type(comp))
    if codec is None:
        return None
    return codec, np.dtype(meta.dtype.to_native_dtype())


def _v3_layout(meta, zarr):
    """``(codec, raw dtype)`` of a zarr v3 array we can read, else None."""
    from zarr.core.chunk_grids import RegularChunkGrid
    codecs = tuple(meta.codecs)
    if meta.storage_transformers or not isinstance(meta.chunk_grid, RegularChunkGrid) \
            or not codecs or type(codecs[0]) is not zarr.codecs.BytesCodec or len(codecs) > 2:
        return None
    kinds = {zarr.codecs.ZstdCodec: "zstd", zarr.codecs.BloscCodec: "blosc",
             zarr.codecs.GzipCodec: "gzip"}
    codec = "none" if len(codecs) == 1 else kinds.get(type(codecs[1]))
    if codec is None:
        return None
    endian = codecs[0].endian
    raw = np.dtype(meta.data_type.to_native_dtype())
    if endian is not None and raw.itemsize > 1:
        raw = raw.newbyteorder("<" if getattr(endian, "value", endian) == "little" else ">")
    return codec, raw


def _zstd_content_size(src) -> int | None:
    """The content size written in the header of the zstd frame `src` (RFC 8878
    section 3.1.1.1), or None when absent or not a frame."""
    if len(src) < 6 or bytes(src[:4]) != b"\x28\xb5\x2f\xfd":
        return None
    fhd = int(src[4])
    single, dict_flag, fcs_flag = (fhd >> 5) & 1, fhd & 3, fhd >> 6
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if width == 0 or len(src) < pos + width:
        return None
    value = int.from_bytes(bytes(src[pos:pos + width]), "little")
    return value + 256 if width == 2 else value
