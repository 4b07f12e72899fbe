"""``sort`` and ``argsort`` of arrays larger than memory, into compressed NDArrays.

The output is cut into *tiles*: along the sorted axis a tile spans the whole array,
along the other dimensions it is one output chunk, so that a tile holds whole *lanes*
(the 1-D lines that are sorted) and the output chunks ``(tile, j)``, ``j`` along the
axis, are all of its data.

* A tile of at most :func:`run_items` items (always, when the axis lies within one
  output chunk) is sorted in memory on an evaluation worker: read (only that region of
  the input is decoded), sorted along the axis, cut into its output chunks and
  compressed there; tiles run in parallel, a bounded window of them at a time.
* A larger tile is sorted externally: its axis is cut into runs of about
  :func:`run_items` items, each read, sorted lane by lane and written compressed
  (:mod:`~ndpack.engine.ops.spool`: in memory, or an unnamed file in the output's
  folder) on the workers; then each lane's runs are merged
  (:class:`~ndpack.engine.ops.merge.LaneMerge`, at most two pieces of each run in
  memory) and the output chunks are compressed on the workers as they fill.

``argsort`` carries int64 positions through the same steps; runs keep them relative to
the run's start in the smallest integer type that holds them.  Order and stability are
NumPy's stable sort's (:mod:`~ndpack.engine.ops.merge`); ``descending=True`` reverses
the order of the values, ties still in the order of their positions.

Output chunks are written in C order when the tiles give them in that order (one
dimension, the last axis, or an axis within one chunk); otherwise the output is first
laid out as special chunks (no data) and each chunk replaces its place.  On disk the
output appears under its name only once complete (:func:`ndpack.engine.run.output.
new_output`), and the runs never have a name in the folder.

Memory: :func:`run_items` and :func:`piece_items` derive from
:func:`ndpack.resources.memory_limit` (a quarter of it for the sort's buffers);
:data:`RUN_ITEMS` and :data:`PIECE_ITEMS` override them (tests set them small to
force many runs).

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> x = np.array([[3, 1, 2, 1], [0, 5, 5, 4]])
>>> a = asarray(x, chunks=(1, 2))
>>> sort_array(a, axis=1)[()].tolist()
[[1, 1, 2, 3], [0, 4, 5, 5]]
>>> sort_array(a, axis=0, descending=True, positions=True)[()].tolist()
[[0, 1, 1, 1], [1, 0, 0, 0]]
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import math
import os

import numpy as np

from ndpack.resources import memory_limit
from ndpack.codecs import SpecialValue, get_nthreads
from ndpack.engine.ops.merge import LaneMerge, make_run, order, sorted_values
from ndpack.engine.expr.axes import normalize_axis
from ndpack.engine.ops.shape import as_array, flat_read
from ndpack.engine.ops.spool import Spool
from ndpack.engine.run.output import new_output
from ndpack.engine.run.workers import submit, workers
from ndpack.storage.ndarray import NDArray, fill_from

__all__ = ["sort_array", "sorted_stream", "run_items", "piece_items", "check_sortable",
           "Tracked", "RUN_ITEMS", "PIECE_ITEMS"]

RUN_ITEMS = None       # items of a sorted run (None: from the memory limit)
PIECE_ITEMS = None     # items of a piece of a run read at once by the merge (None: idem)

# A tile of few lanes and at least SPLIT_ITEMS items, when there are fewer tiles than
# threads, is sorted as runs of about a quarter of its share of a thread, sorted in
# parallel and merged: 10M random float64 on 2 threads, 8-16 runs, sort 0.61 s and
# argsort 1.2 s vs 0.91 and 1.88 s sorting the tile in one piece (np.sort 0.67 s,
# np.argsort stable 1.83 s).
SPLIT_ITEMS = 1 << 21
SPLIT_LANES = 8


def _budget() -> int:
    """Bytes the buffers of one sort may hold: a quarter of the memory limit."""
    return memory_limit() // 4


# Runs longer than this are not sorted faster: 4e7 random float64 on 2 threads, argsort
# 5.3-5.7 s with runs of 1-2M items vs 9.6 s with 10M (np.argsort stable: 9.2 s), sort
# 2.6-2.7 s with 2-4M vs 3.0 s (np.sort 3.1 s): small runs sort in cache, and the wider
# merge costs less than that.
RUN_CAP = {False: 1 << 22, True: 1 << 21}      # values only / with positions


def run_items(itemsize: int, positions: bool, nthreads: int) -> int:
    """Items of the largest piece sorted at once (a tile sorted in memory):
    ``nthreads + 1`` in flight, each held as its input, its sorted copy and, for
    positions, two int64 arrays."""
    if RUN_ITEMS:
        return int(RUN_ITEMS)
    per = 2 * itemsize + (16 if positions else 0)
    return max(1024, _budget() // ((nthreads + 1) * per))


def _run_cap(limit: int, positions: bool) -> int:
    """Items of one run of an external sort: the limit, at most RUN_CAP."""
    return limit if RUN_ITEMS else min(limit, RUN_CAP[positions])


# The merge's pieces of all runs together: more does not merge faster (1e9 random
# float64 on disk, 250 runs: 182 s and 404 MB peak RSS with 100 MB of pieces vs 203 s
# and 783 MB with the 1.5 GB of a quarter of the default limit, on a loaded machine).
MERGE_BYTES = 64 << 20


def piece_items(nruns: int, lanes: int, itemsize: int, positions: bool) -> int:
    """Items of a piece of a run: the merge holds up to two pieces of every run of the
    `lanes` merged together."""
    if PIECE_ITEMS:
        return int(PIECE_ITEMS)
    per = itemsize + (8 if positions else 0)
    budget = min(_budget(), MERGE_BYTES)
    return int(min(1 << 16, max(256, budget // (2 * max(1, nruns * lanes) * per))))


def check_sortable(dtype, name: str) -> np.dtype:
    """`dtype` if NumPy can sort it and ndpack store it (a clear TypeError otherwise)."""
    dtype = np.dtype(dtype)
    if dtype.names is not None or dtype.kind == "V":
        raise TypeError(f"{name}() does not sort structured dtypes ({dtype}); sort a "
                        f"field, e.g. {name}(x['f0'])")
    if dtype.hasobject:
        raise TypeError(f"{name}() cannot sort Python objects (dtype {dtype})")
    return dtype


def _storage(x, kwargs: dict) -> dict:
    """The output's storage keywords: the input's chunks (and blocks for an NDArray)
    unless given."""
    kw = dict(kwargs)
    if "chunks" not in kw and "blocks" not in kw:
        if isinstance(x, NDArray):
            kw["chunks"], kw["blocks"] = x.chunks, x.blocks
        else:
            ch = getattr(x, "chunks", None)
            if isinstance(ch, tuple) and len(ch) == len(x.shape) and \
                    all(isinstance(c, (int, np.integer)) and c > 0 for c in ch):
                kw["chunks"] = tuple(int(c) for c in ch)
    return kw


def sort_array(x, axis=-1, descending=False, stable=True, positions=False, urlpath=None,
               name="sort", **kwargs) -> NDArray:
    """`x` sorted along `axis` (or, with `positions`, the int64 positions that sort it)
    as an NDArray: in memory, or in `urlpath` (``mode`` 'w' by default); the other
    keywords are the output's storage (chunks, blocks, cparams, ...)."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        raise TypeError(f"{name}() takes an array, not a Python {type(x).__name__}")
    x = as_array(x)
    shape = tuple(int(s) for s in x.shape)
    if not shape:
        raise ValueError(f"{name} needs an array of at least one dimension")
    dtype = check_sortable(x.dtype, name)
    ax = normalize_axis(axis, len(shape))
    mode = kwargs.pop("mode", "w")
    odtype = np.dtype(np.int64) if positions else dtype
    job = _Sort(x, ax, bool(descending), bool(stable), positions)
    return new_output(shape, odtype, urlpath, mode, job.into, **_storage(x, kwargs))


class Tracked:
    """A pool whose tasks still queued are cancelled, and running ones waited for, when
    the block ends (an error must not leave tasks writing into a closed spool)."""

    def __init__(self, pool):
        self.pool, self.futures = pool, []

    def submit(self, fn, *args):
        f = submit(self.pool, fn, *args)
        self.futures = [g for g in self.futures if not g.done()]
        self.futures.append(f)
        return f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for f in self.futures:
            f.cancel()
        concurrent.futures.wait(self.futures)


class _Sort:
    """One sort: the input, the order asked, and the pieces of the work."""

    def __init__(self, x, axis: int, descending: bool, stable: bool, positions: bool):
        self.x, self.axis, self.descending = x, axis, descending
        self.stable, self.positions = stable, positions
        self.nthreads = max(1, get_nthreads())

    # --- the plan ---------------------------------------------------------------------
    def into(self, out: NDArray) -> None:
        lay = out.layout
        if lay.nchunks == 0 or 0 in lay.shape:
            fill_from(out, lambda region: np.empty(
                tuple(s.stop - s.start for s in region), out.dtype))
            return
        self.out, self.lay, ax = out, lay, self.axis
        self.n, self.ch = lay.shape[ax], lay.chunks[ax]
        self.nj = lay.grid[ax]
        others = [d for d in range(lay.ndim) if d != ax]
        tiles = list(itertools.product(*(range(lay.grid[d]) for d in others)))
        emitted = [self._number(t, j) for t in tiles for j in range(self.nj)]
        self.ordered = emitted == list(range(lay.nchunks))
        if not self.ordered:           # placeholders, replaced chunk by chunk
            fill_from(out, special=SpecialValue.ZERO)
        limit = run_items(lay.dtype.itemsize, self.positions, self.nthreads)
        folder = None if out.urlpath is None else \
            os.path.dirname(os.path.abspath(os.fspath(out.urlpath)))
        pool = self.pool = Tracked(workers(self.nthreads))
        window: collections.deque = collections.deque()
        with Spool(folder) as spool, pool:
            for t in tiles:
                region = self._tile_region(t)
                lanes = math.prod(s.stop - s.start for d, s in enumerate(region) if d != ax)
                size = lanes * self.n
                if len(tiles) < self.nthreads and lanes <= SPLIT_LANES \
                        and size >= SPLIT_ITEMS:       # runs in parallel, then a merge
                    self._drain(window)
                    self._tile_external(t, region, lanes, spool, pool, max(
                        SPLIT_ITEMS // 4, min(_run_cap(limit, self.positions),
                                              -(-size // (4 * self.nthreads)))))
                elif self.nj == 1 or size <= limit:
                    window.append(pool.submit(self._tile_in_memory, t, region))
                    while len(window) > self.nthreads:
                        self._put_all(window.popleft().result())
                    continue
                else:
                    self._drain(window)
                    self._tile_external(t, region, lanes, spool, pool,
                                        _run_cap(limit, self.positions))
            self._drain(window)

    def _number(self, tile: tuple, j: int) -> int:
        coords = list(tile)
        coords.insert(self.axis, j)
        return self.lay.chunk_number(coords)

    def _tile_region(self, tile: tuple) -> tuple:
        coords = list(tile)
        coords.insert(self.axis, 0)
        region = list(self.lay.region(coords))
        region[self.axis] = slice(0, self.n)
        return tuple(region)

    def _drain(self, window) -> None:
        while window:
            self._put_all(window.popleft().result())

    def _put_all(self, chunks: list) -> None:
        for n, chunk in chunks:
            self.out.write_encoded(n, chunk)

    def _encode(self, data: np.ndarray) -> bytes:
        """An output chunk from its valid part `data` (padded to the extended shape),
        compressed with one C thread (we run on a worker)."""
        lay, out = self.lay, self.out
        if data.shape != lay.ext_chunks:
            buf = np.zeros(lay.ext_chunks, lay.dtype)
            buf[tuple(slice(0, s) for s in data.shape)] = data
            data = buf
        if lay.stored_c_order:
            return out.encode_stored(np.ascontiguousarray(data, lay.dtype).reshape(-1),
                                     nthreads=1)
        return out.encode_chunk(data)

    def _along(self, lo: int, hi: int, region: tuple) -> tuple:
        return tuple(slice(lo, hi) if d == self.axis else s for d, s in enumerate(region))

    # --- tiles in memory --------------------------------------------------------------
    def _tile_in_memory(self, tile: tuple, region: tuple) -> list:
        """Read, sort and compress one tile: ``[(chunk number, chunk)]``."""
        v = np.asarray(self.x[region])
        ax = self.axis
        if self.positions:
            res = order(v, ax, self.descending, self.stable).astype(np.int64, copy=False)
        else:
            res = sorted_values(v, ax, self.descending, self.stable)
        del v
        chunks = []
        for j in range(self.nj):
            lo = j * self.ch
            part = res[self._along(lo, min(lo + self.ch, self.n), (slice(None),) * res.ndim)]
            chunks.append((self._number(tile, j), self._encode(part)))
        return chunks

    # --- tiles sorted externally ------------------------------------------------------
    def _run_length(self, lanes: int, limit: int) -> int:
        """Positions along the axis of one run: about `limit` items, a multiple of the
        input's chunks along the axis when they are smaller."""
        m = max(1, limit // lanes)
        c = self.x.chunks[self.axis] if isinstance(self.x, NDArray) else 0
        if 0 < c <= m:
            m -= m % c
        return min(m, self.n)

    def _tile_external(self, tile, region, lanes, spool, pool, limit) -> None:
        ax, n = self.axis, self.n
        m = self._run_length(lanes, limit)
        starts = list(range(0, n, m))
        piece = piece_items(len(starts), lanes, self.lay.dtype.itemsize, self.positions)
        runs: list = [None] * len(starts)        # per run: a Run per lane
        window: collections.deque = collections.deque()
        for i, a in enumerate(starts):
            window.append((i, pool.submit(self._make_runs, region, a, min(a + m, n),
                                     spool, piece)))
            while len(window) > self.nthreads:
                k, f = window.popleft()
                runs[k] = f.result()
        for k, f in window:
            runs[k] = f.result()
        dtype = np.dtype(self.x.dtype)
        merges = [LaneMerge(spool, [r[lane] for r in runs], self.descending, dtype)
                  for lane in range(lanes)]
        del runs
        tshape = tuple(s.stop - s.start for d, s in enumerate(region) if d != ax)
        window = collections.deque()
        for j in range(self.nj):
            w = min(self.ch, n - j * self.ch)
            parts = [mg.take(w)[1 if self.positions else 0] for mg in merges]
            data = parts[0] if lanes == 1 else np.stack(parts)
            del parts
            data = np.moveaxis(data.reshape(tshape + (w,)), -1, ax)
            window.append(pool.submit(lambda d, t=tile, jj=j: [(self._number(t, jj),
                                                                 self._encode(d))], data))
            while len(window) > self.nthreads:
                self._put_all(window.popleft().result())
        self._drain(window)

    def _make_runs(self, region, a: int, b: int, spool, piece: int) -> list:
        """Sorted runs of positions ``a:b`` along the axis, one per lane of the tile."""
        v = np.asarray(self.x[self._along(a, b, region)])
        v = np.moveaxis(v, self.axis, -1).reshape(-1, b - a)
        if self.positions:
            o = order(v, -1, self.descending, self.stable)
            vals = np.take_along_axis(v, o, -1)
            return [make_run(spool, vals[i], o[i], piece, offset=a) for i in range(len(v))]
        vals = sorted_values(v, -1, self.descending, self.stable)
        return [make_run(spool, vals[i], None, piece) for i in range(len(v))]


# ---------------------------------------------------------------------------------------
# the sorted stream of a flattened array (unique_*, quantiles)


def _split(n: int, limit: int, nthreads: int, positions: bool) -> int:
    """Items of each run of `n` items: runs of the limit (at most RUN_CAP), or a quarter
    of a thread's share when `n` fits but is large enough to sort in parallel (see
    SPLIT_ITEMS)."""
    if n > limit:
        return _run_cap(limit, positions)
    if n >= SPLIT_ITEMS and nthreads > 1:
        return max(SPLIT_ITEMS // 4, -(-n // (4 * nthreads)))
    return max(n, 1)


def sorted_stream(x, positions: bool, spool, step: int | None = None):
    """The items of `x` flattened in C order and sorted stably (NaNs last), as pieces
    ``(values, positions)`` of about `step` items (positions: int64 flat positions, or
    None).  Runs are flat ranges read and sorted on the workers and written to `spool`;
    one run is sorted in memory and never written."""
    shape = tuple(int(s) for s in x.shape)
    n = math.prod(shape)
    itemsize = np.dtype(x.dtype).itemsize
    nthreads = max(1, get_nthreads())
    m = _split(n, run_items(itemsize, positions, nthreads), nthreads, positions)
    starts = list(range(0, n, m))
    piece = piece_items(len(starts), 1, itemsize, positions)
    step = step or max(piece, 1 << 16)

    def run(a: int, b: int, keep: bool):
        v = np.asarray(flat_read(x, shape, a, b)).reshape(-1)
        o = order(v) if positions else None
        vals = v[o] if positions else sorted_values(v)
        if keep:
            return vals, None if o is None else o.astype(np.int64) + a
        return make_run(spool, vals, o, piece, offset=a)

    if len(starts) <= 1:
        vals, pos = run(0, n, True)
        for i in range(0, n, step):
            yield vals[i:i + step], None if pos is None else pos[i:i + step]
        return
    runs: list = [None] * len(starts)
    with Tracked(workers(nthreads)) as pool:
        window: collections.deque = collections.deque()
        for i, a in enumerate(starts):
            window.append((i, pool.submit(run, a, min(a + m, n), False)))
            while len(window) > nthreads:
                k, f = window.popleft()
                runs[k] = f.result()
        for k, f in window:
            runs[k] = f.result()
    merge = LaneMerge(spool, runs, False, np.dtype(x.dtype))
    while True:
        vals, pos = merge.take(step)
        if not len(vals):
            return
        yield vals, pos
