"""Sorted indexes: range queries that read only what can match.

``a.create_index()`` stores the items of ``a`` sorted (stably, NaNs last) with their
flat C-order positions, both compressed, and the first value of every block of the
sorted values (built by the out-of-core sort,
:func:`~ndpack.engine.ops.mergesort.sorted_stream`, so arrays larger than memory are
indexed in bounded memory).  A zone map of per-block minima and maxima prunes nothing
on unordered data; the sorted copy answers any range from a few blocks:

* ``a[cond]`` for a boolean expression ``cond`` of comparisons of ``a`` with scalars
  joined by ``&``, ``|`` and ``~`` (:mod:`~ndpack.engine.ops.ranges`): binary searches
  over the sorted values (the blocks' first values, then one block decoded) give
  ranges of the sorted order; their values and positions
  are read (only the blocks holding them) and put back in position order, which is
  NumPy's ``a[mask]`` order.  The array itself is not read.  ``b[cond]`` for another
  array ``b`` of the same shape reads ``b`` at those positions (point reads: only the
  blocks holding them); ``ndpack.nonzero(cond)`` gives them as coordinates.
* ``ndpack.searchsorted(a, v)`` of a 1-d ``a`` is answered from the sorted values: NumPy's
  result when ``a`` is sorted, and the positions in ``sort(a)`` when it is not (what
  ``np.searchsorted(a, v, sorter=np.argsort(a))`` gives).
* When the selection holds more than :data:`MAX_FRACTION` of the items the plain scan
  is cheaper (it decodes the array once; the index decodes values and int64 positions
  and sorts the positions), and it runs instead.

Never stale (the rules; docs/array_api.md has them too):

1. Writes through ndpack in this process: every chunk change of the frame is reported
   to the index (``FrameBase.changed``).  Updated chunks are *dirty*, appended chunks
   are the *tail*, an insert or delete makes every chunk from there dirty.  A query
   takes index hits only in clean chunks and scans the dirty chunks and the tail (so an
   index stays right through appends and writes, and gets slower as they grow:
   ``rebuild_index()`` makes it whole again).  A change of the shape other than along
   the first axis, or of the dtype, makes the index unusable.
2. On disk (``a.b2nd.ndpack-index``, :mod:`ndpack.storage.sidecar`, written
   crash-atomically), the index records the crc32c of every chunk it covers (the
   frame's checksum record).  When the array is opened again, chunks whose checksum
   differs are dirty and new chunks are the tail, whoever wrote them.  A frame whose
   checksum record is gone or stale -- python-blosc2 or C-Blosc2 rewrote it, which
   clears the record's mark (:mod:`ndpack.storage.checksums`), or checksums are off --
   cannot prove which chunks are unchanged, and its index is ignored (``a.indexes``
   says why) until ``rebuild_index()``.
3. An index that cannot be used is never used: the query scans the array as without one.

Examples
--------
>>> import numpy as np, ndpack
>>> x = np.random.default_rng(0).random(10_000)
>>> a = ndpack.asarray(x, chunks=(1000,), blocks=(250,))
>>> d = a.create_index()
>>> d["kind"], d["size"], d["stale"]
('full', 10000, False)
>>> r = a[(a > 0.5) & (a < 0.501)]
>>> bool(np.array_equal(r, x[(x > 0.5) & (x < 0.501)]))
True
>>> a[9999] = 0.5005                      # a write: chunk 9 is scanned from now on
>>> x[9999] = 0.5005
>>> bool(np.array_equal(a[(a > 0.5) & (a < 0.501)], x[(x > 0.5) & (x < 0.501)]))
True
>>> a.indexes[0]["scan_chunks"]
1
"""

from __future__ import annotations

import math
import os
import weakref

import numpy as np

from ndpack.codecs import Codec, Filter
from ndpack.engine.expr.nodes import Apply, Operand
from ndpack.engine.ops.mergesort import sorted_stream
from ndpack.engine.ops.ranges import analyse
from ndpack.engine.ops.spool import Spool
from ndpack.engine.run.output import new_output
from ndpack.errors import ParameterError
from ndpack.storage import sidecar
from ndpack.storage.dispatch import open as open_array
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.storage.ndarray import NDArray, fill_from

__all__ = ["create_index", "drop_index", "rebuild_index", "indexes", "select",
           "sorted_values", "whole_sorted_values", "positions_where", "NDARRAY_MEMBERS",
           "MAX_FRACTION", "INDEX_CPARAMS"]

# Above this fraction of the items selected (or scanned because dirty), the plain scan
# runs instead.  1e7 random float64 on disk (LZ4 1, loaded machine, best of 3), CPU
# time: index 12 / 33 / 82 / 145 / 365 ms at 2 / 5 / 10 / 20 / 40% selected vs the scan
# 96 / 118 / 139 / 180 / 241 ms (wall 26 / 73 / 207 / 326 / 529 vs 155 / 245 / 282 /
# 235 / 343 ms): values and int64 positions decoded, positions sorted; the crossover
# is near 15-20%.
MAX_FRACTION = 0.1

# Compression of the index arrays.  4e6 random float64 (chunks of 1024000, blocks of
# 16384): LZ4 5 + shuffle gives ratios 1.63 (sorted values) and 2.66 (positions) and
# decodes in 7.4 / 4.7 ms of CPU; ZSTD 1 + shuffle 1.74 / 2.91 in 11.8 / 8.7 ms; LZ4 +
# bitshuffle 1.69 / 2.87 in 8.1 / 11.0 ms.  Queries decode: LZ4 + shuffle.
INDEX_CPARAMS = {"codec": Codec.LZ4, "clevel": 5,
                 "filters": [Filter.NOFILTER] * 5 + [Filter.SHUFFLE], "filters_meta": [0] * 6}

# Items of a block of the index arrays: a search decodes one block, a range decodes its
# blocks, so smaller blocks read less around a small selection (the default blocks of
# 32000 int64 items decode 256 KB for one value).
INDEX_BLOCK = 16384

_KINDS = ("full",)
_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # frame -> _State


def check_indexable(dtype) -> np.dtype:
    """`dtype` if an index can order it: booleans, integers and reals (a TypeError
    otherwise).  Complex numbers have no order in the array API (NumPy's lexicographic
    one, real part first, is not what ``<`` means to most queries); structured dtypes
    would need a field (index ``a[field]`` computed as its own array); strings and
    datetimes are not computed on by the engine."""
    dtype = np.dtype(dtype)
    if dtype.names is not None:
        raise TypeError(f"cannot index a structured dtype ({dtype}); index one field "
                        "stored as its own array")
    if dtype.kind == "c":
        raise TypeError(f"cannot index complex values ({dtype}): they have no order for "
                        "range queries (NumPy orders them by real, then imaginary part)")
    if dtype.kind not in "biuf":
        raise TypeError(f"cannot index dtype {dtype}: indexes take booleans, integers "
                        "and real floats")
    return dtype


# ---------------------------------------------------------------------------------------
# the state of one index


class _State:
    """An index of one frame: the sorted values and positions, what it covers, and the
    chunks changed since (dirty) -- never a reference to the frame itself."""

    def __init__(self, values: NDArray, positions: NDArray, firsts, meta: dict, path):
        self.values, self.positions, self.meta, self.path = values, positions, meta, path
        self.firsts = firsts              # first value of every block of `values`
        self.shape = tuple(meta["shape"])
        self.size = math.prod(self.shape)
        self.chunks = tuple(meta["chunks"])
        self.nchunks = int(meta["nchunks"])
        self.dtype = np.dtype(meta["dtype"])
        sig = meta.get("signature")
        self.sig = None if sig is None else np.asarray(sig, np.uint32)
        self.dirty: set = set()
        self.dirty_from: int | None = None
        self.broken: str | None = None
        self._bfirsts = self._bstarts = None
        self._m = None

    def watch(self, op: str, i: int) -> None:
        """A frame's chunk change (``FrameBase.changed``)."""
        if op == "update":
            self.dirty.add(i)
        elif op in ("insert", "delete"):
            self.dirty_from = i if self.dirty_from is None else min(self.dirty_from, i)

    # --- validity ---------------------------------------------------------------------
    def scan_chunks(self, arr: NDArray):
        """``(chunks to scan, reason)``: the sorted chunk numbers of `arr` the index does
        not describe (dirty and tail), or None and why the index cannot be used."""
        if self.broken:
            return None, self.broken
        lay = arr.layout
        if np.dtype(arr.dtype) != self.dtype or tuple(lay.chunks) != self.chunks or \
                tuple(lay.shape[1:]) != self.shape[1:]:
            return None, "the array's dtype, chunks or shape (beyond the first axis) changed"
        dirty = set(self.dirty)
        if self.sig is not None and arr.urlpath is not None:
            cur = sidecar.signature(arr.schunk.frame)
            if cur is None:
                return None, ("the frame has no valid checksum record: another writer "
                              "changed the file (rebuild_index() to index it again)")
            cur = np.asarray(cur, np.uint32)
            k = min(len(cur), len(self.sig))
            dirty.update(np.flatnonzero(cur[:k] != self.sig[:k]).tolist())
        nnow = lay.nchunks
        start = min(self.nchunks, nnow)
        if self.dirty_from is not None:
            start = min(start, self.dirty_from)
        dirty = sorted(d for d in dirty if d < start)
        return np.asarray(dirty + list(range(start, nnow)), np.int64), None

    # --- searches over the sorted values --------------------------------------------
    def _firsts(self):
        """The first sorted value of every block of the values array and where each
        block starts (kept by the build; read once)."""
        if self._bfirsts is None:
            c, b = self.values.chunks[0], self.values.blocks[0]
            self._bstarts = np.concatenate(
                [np.arange(lo, min(lo + c, self.size), b) for lo in range(0, self.size, c)]
                or [np.empty(0, np.int64)]).astype(np.int64)
            f = self.firsts
            self._bfirsts = np.asarray(f[()] if isinstance(f, NDArray) else f)
            if self._bfirsts.shape != self._bstarts.shape:
                raise ValueError("the index's block firsts do not match its values")
        return self._bfirsts, self._bstarts

    def first(self, pred, m: int) -> int:
        """The first position below `m` of the sorted values where the monotone `pred`
        holds (`m` when none does): a search of the blocks' first values, then one
        block decoded."""
        if m <= 0:
            return 0
        firsts, starts = self._firsts()
        t = pred(firsts) | (starts >= m)
        j = int(np.argmax(t)) if t.any() else len(t)
        if j == 0:
            return 0
        b0 = int(starts[j - 1])
        b1 = min(b0 + self.values.blocks[0], m)
        tt = pred(np.asarray(self.values[b0:b1]))
        return b0 + (int(np.argmax(tt)) if tt.any() else len(tt))

    def nonnan(self) -> int:
        """How many sorted values are not NaN (they come first)."""
        if self._m is None:
            self._m = self.size if self.dtype.kind != "f" else \
                self.first(np.isnan, self.size)
        return self._m


# ---------------------------------------------------------------------------------------
# finding the index of an array


def _frame(arr: NDArray):
    return arr.schunk.frame


def _state(arr: NDArray):
    """The index of `arr` (loaded from its sidecar the first time), or None."""
    frame = _frame(arr)
    st = _STATES.get(frame)
    if st is not None or arr.urlpath is None:
        return st
    path = os.fspath(arr.urlpath)
    if not os.path.isdir(sidecar.sidecar_path(path)):
        return None
    return _load(arr, frame, path)


def _load(arr: NDArray, frame, path: str):
    try:
        meta = sidecar.read_meta(path)
        if meta is None:
            return None
        folder = sidecar.sidecar_path(path)
        values = open_array(os.path.join(folder, "values.b2nd"), mode="r")
        positions = open_array(os.path.join(folder, "positions.b2nd"), mode="r")
        firsts = open_array(os.path.join(folder, "firsts.b2nd"), mode="r")
        st = _State(values, positions, firsts, meta, folder)
        if values.shape != (st.size,) or positions.shape != (st.size,) or \
                positions.dtype != np.int64 or values.dtype != st.dtype or \
                positions.chunks != values.chunks:
            st.broken = f"{folder}: the index files do not match their description"
        elif st.sig is None:
            st.broken = ("the index was built without chunk checksums: changes by other "
                         "writers could not be detected, so it is not used after reopening")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        st = _State(None, None, None, {"shape": [0], "chunks": [0], "nchunks": 0,
                                       "dtype": "u1"}, sidecar.sidecar_path(path))
        st.broken = f"the index cannot be read: {exc}"
    _register(frame, st)
    return st


def _register(frame, st: _State) -> None:
    old = _STATES.get(frame)
    if old is not None:
        _unregister(frame, old)
    frame.watchers = tuple(frame.watchers) + (st.watch,)
    _STATES[frame] = st


def _unregister(frame, st: _State) -> None:
    frame.watchers = tuple(w for w in frame.watchers if getattr(w, "__self__", None) is not st)
    _STATES.pop(frame, None)


# ---------------------------------------------------------------------------------------
# building


def create_index(arr: NDArray, field=None, *, kind="full", persistent=None, name=None,
                 tmpdir=None, cparams=None, **kwargs) -> dict:
    """Build (or replace) the sorted index of `arr`; see :meth:`NDArray.create_index`."""
    if kwargs:
        raise TypeError(f"create_index() got unexpected keywords {sorted(kwargs)}")
    if field is not None:
        raise TypeError("ndpack indexes plain arrays: field= needs a structured dtype, "
                        "which cannot be indexed (store the field as its own array)")
    kind = getattr(kind, "value", kind)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS} (a sorted index of the values and "
                         f"their positions), not {kind!r}")
    dtype = check_indexable(arr.dtype)
    if persistent is None:
        persistent = arr.urlpath is not None
    if persistent and arr.urlpath is None:
        raise ParameterError("an in-memory array keeps its index in memory: "
                             "persistent=True needs an array on disk")
    frame = _frame(arr)
    meta = {"kind": "full", "name": name, "dtype": dtype.str,
            "shape": list(arr.shape), "chunks": list(arr.chunks),
            "nchunks": arr.layout.nchunks, "signature": sidecar.signature(frame)}
    storage = {"cparams": dict(cparams) if cparams is not None else dict(INDEX_CPARAMS)}
    n = math.prod(arr.shape)
    chunks, blocks = compute_chunks_blocks((n,), dtype=np.int64)
    storage["chunks"], storage["blocks"] = chunks, (min(blocks[0], INDEX_BLOCK),)
    old = _STATES.get(frame)
    if old is not None:
        _unregister(frame, old)
    if persistent:
        path = os.fspath(arr.urlpath)
        with sidecar.building(path) as tmp:
            _write(arr, tmp, tmpdir or tmp, storage)
            sidecar.write_meta(tmp, meta)
        folder = sidecar.sidecar_path(path)
        values, positions, firsts = (open_array(os.path.join(folder, f + ".b2nd"), mode="r")
                                     for f in ("values", "positions", "firsts"))
    else:
        if arr.urlpath is not None:
            sidecar.remove(arr.urlpath)          # an older persisted one would be stale
        folder = None
        values, positions, firsts = _write(arr, None, tmpdir, storage)
    st = _State(values, positions, firsts, meta, folder)
    _register(frame, st)
    return _describe(arr, st)


def _write(arr: NDArray, folder, runs, storage: dict):
    """The sorted values of `arr`, their positions and the first value of every block
    of the values array, as NDArrays (files of `folder`, or in memory); sorted runs go
    to `runs` (a folder, or memory)."""
    n = math.prod(arr.shape)
    b = storage["blocks"][0]
    firsts: list = []

    def values_of(region):
        v = feed.take(region[0].stop - region[0].start)
        firsts.append(v[::b].copy())
        return v

    def path(name):
        return None if folder is None else os.path.join(folder, name + ".b2nd")

    with Spool(runs) as spool:
        feed = _Feed(sorted_stream(arr, True, spool), spool)
        values = new_output((n,), arr.dtype, path("values"), "w",
                            lambda out: fill_from(out, values_of), **storage)
        positions = new_output((n,), np.int64, path("positions"), "w", lambda out: fill_from(
            out, lambda region: feed.take_positions(region[0].stop - region[0].start)),
            **storage)
    f = np.concatenate(firsts) if firsts else np.empty(0, arr.dtype)
    first = new_output(f.shape, f.dtype, path("firsts"), "w",
                       lambda out: fill_from(out, lambda region: f[region]))
    return values, positions, first


class _Feed:
    """Pieces of the sorted stream handed out by count: values now, positions kept
    compressed in the spool until the positions array is written."""

    def __init__(self, stream, spool):
        self.stream, self.spool = stream, spool
        self.buf = np.empty(0)
        self.kept: list = []
        self.pbuf = np.empty(0, np.int64)

    def take(self, count: int) -> np.ndarray:
        parts, have = [], 0
        while have < count:
            if not len(self.buf):
                vals, pos = next(self.stream)
                self.buf = vals
                self.kept.append(self.spool.append(np.asarray(pos, np.int64)))
            part = self.buf[:count - have]
            self.buf = self.buf[len(part):]
            parts.append(part)
            have += len(part)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def take_positions(self, count: int) -> np.ndarray:
        parts, have = [], 0
        while have < count:
            if not len(self.pbuf):
                self.pbuf = self.spool.read(self.kept.pop(0))
            part = self.pbuf[:count - have]
            self.pbuf = self.pbuf[len(part):]
            parts.append(part)
            have += len(part)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def drop_index(arr: NDArray, field=None, name=None) -> None:
    """Forget the index of `arr` (and remove its files)."""
    frame = _frame(arr)
    st = _state(arr)
    if st is None:
        raise KeyError("the array has no index")
    _unregister(frame, st)
    if arr.urlpath is not None:
        sidecar.remove(arr.urlpath)


def rebuild_index(arr: NDArray, field=None, name=None) -> dict:
    """Build the index of `arr` again, as it was created (keeps its name and where it
    lives)."""
    st = _state(arr)
    if st is None:
        raise KeyError("the array has no index")
    return create_index(arr, kind="full", persistent=st.path is not None,
                        name=st.meta.get("name"))


def indexes(arr: NDArray) -> list:
    """Descriptions of the indexes of `arr` (zero or one)."""
    st = _state(arr)
    return [] if st is None else [_describe(arr, st)]


def _describe(arr: NDArray, st: _State) -> dict:
    scan, why = st.scan_chunks(arr)
    nbytes = cbytes = 0
    if st.values is not None:
        nbytes = st.values.schunk.nbytes + st.positions.schunk.nbytes
        cbytes = st.values.schunk.cbytes + st.positions.schunk.cbytes
    return {"name": st.meta.get("name"), "kind": "full", "field": None,
            "persistent": st.path is not None, "path": st.path,
            "dtype": str(st.dtype), "shape": st.shape, "size": st.size,
            "stale": scan is None, "reason": why,
            "scan_chunks": 0 if scan is None else len(scan),
            "nbytes": nbytes, "cbytes": cbytes}


# ---------------------------------------------------------------------------------------
# queries


def select(arr: NDArray, cond, st: _State | None = None, max_fraction=None):
    """``(positions, values)`` of the items of `arr` that satisfy `cond` (a condition of
    :mod:`~ndpack.engine.ops.ranges`), in position order, from the index; None when the
    index cannot answer or a scan is cheaper."""
    st = st or _state(arr)
    if st is None:
        return None
    scan, _ = st.scan_chunks(arr)
    if scan is None:
        return None
    lay = arr.layout
    size_now = math.prod(lay.shape)
    frac = MAX_FRACTION if max_fraction is None else max_fraction
    per_chunk = math.prod(lay.chunks) if lay.chunks else 1
    budget = frac * max(size_now, 1)
    if len(scan) * per_chunk > budget:
        return None
    m = st.nonnan()
    rs = cond.ranges(lambda pred: st.first(pred, m), m, st.size)
    if sum(b - a for a, b in rs) + len(scan) * per_chunk > budget:
        return None
    pos = [np.asarray(st.positions[a:b]) for a, b in rs]
    vals = [np.asarray(st.values[a:b]) for a, b in rs]
    pos = np.concatenate(pos) if pos else np.empty(0, np.int64)
    vals = np.concatenate(vals) if vals else np.empty(0, st.dtype)
    if len(scan) or size_now < st.size:
        keep = pos < size_now
        if len(scan):
            keep &= ~np.isin(_chunk_of(pos, lay), scan)
        pos, vals = pos[keep], vals[keep]
        more = [_scan_chunk(arr, int(c), cond) for c in scan]
        if more:
            pos = np.concatenate([pos] + [p for p, _ in more])
            vals = np.concatenate([vals] + [v for _, v in more])
    return _by_position(pos, vals)


def _by_position(pos: np.ndarray, vals: np.ndarray):
    """`pos` (distinct) ascending and `vals` in the same order.  Positions and their
    numbers packed in one int64 and sorted: 1e6 hits 63 ms vs 104 ms by argsort."""
    k = len(pos)
    bits = max(1, (k - 1).bit_length())
    if k < 2 or int(pos.max()).bit_length() + bits > 62:
        order = np.argsort(pos, kind="stable")
        return pos[order], vals[order]
    key = (pos << bits) | np.arange(k, dtype=np.int64)
    key.sort()
    return key >> bits, vals[key & ((1 << bits) - 1)]


def _chunk_of(pos: np.ndarray, lay) -> np.ndarray:
    """The chunk number holding each flat position."""
    if lay.ndim == 1:
        return pos // lay.chunks[0]
    coords = np.unravel_index(pos, lay.shape)
    return np.ravel_multi_index(tuple(c // k for c, k in zip(coords, lay.chunks)), lay.grid)


def _scan_chunk(arr: NDArray, c: int, cond):
    """``(positions, values)`` of the items of chunk `c` satisfying `cond`."""
    lay = arr.layout
    coords = np.unravel_index(c, lay.grid)
    region = lay.region(tuple(int(i) for i in coords))
    v = np.asarray(arr[region])
    hit = np.nonzero(cond.mask(v))
    if lay.ndim == 1:
        return hit[0].astype(np.int64) + region[0].start, v[hit]
    full = tuple(h + r.start for h, r in zip(hit, region))
    return np.ravel_multi_index(full, lay.shape).astype(np.int64), v[hit]


def _indexed_operand(node, shape):
    """``(array, condition)`` for the first NDArray operand of `node` with an index that
    `node` is a condition on, or None."""
    seen = []
    stack = [node]
    while stack:
        nd = stack.pop()
        if isinstance(nd, Operand):
            a = nd.array
            if isinstance(a, NDArray) and tuple(a.shape) == shape and \
                    all(a is not s for s in seen):
                seen.append(a)
        elif isinstance(nd, Apply):
            stack.extend(reversed(nd.args))
    for a in seen:
        if _state(a) is None:
            continue
        cond = analyse(node, a)
        if cond is not None:
            return a, cond
    return None


def positions_where(expr, max_fraction=None):
    """The flat positions (int64, ascending) where the boolean expression `expr` holds,
    from an index of one of its arrays; None when no index answers."""
    if np.dtype(expr.dtype) != bool or not expr.shape:
        return None
    found = _indexed_operand(expr.node, tuple(expr.shape))
    if found is None:
        return None
    got = select(found[0], found[1], max_fraction=max_fraction)
    return None if got is None else got[0]


def _expr_key(self: NDArray, key):
    """``self[key]`` for a boolean expression `key` of self's shape, from an index
    (NDArray.expr_key); None: read by the mask."""
    if np.dtype(key.dtype) != bool or tuple(key.shape) != tuple(self.shape) or not self.ndim:
        return None
    found = _indexed_operand(key.node, tuple(self.shape))
    if found is None:
        return None
    arr, cond = found
    got = select(arr, cond)
    if got is None:
        return None
    pos, vals = got
    if arr is self or arr.schunk.frame is self.schunk.frame:
        return vals
    if self.ndim == 1:
        return np.asarray(self[pos]) if len(pos) else np.empty(0, self.dtype)
    if not len(pos):
        return np.empty(0, self.dtype)
    return np.asarray(self[np.unravel_index(pos, self.shape)])


def sorted_values(arr: NDArray):
    """The sorted values of the 1-d `arr` (an NDArray) from a whole index -- not stale,
    no chunk to scan -- or None."""
    return whole_sorted_values(arr) if arr.ndim == 1 else None


def whole_sorted_values(arr: NDArray):
    """The sorted values (flat C order) of `arr`'s index when it is whole -- not
    stale, no chunk to scan, the same size -- or None."""
    st = _state(arr)
    if st is None:
        return None
    scan, _ = st.scan_chunks(arr)
    if scan is None or len(scan) or math.prod(arr.shape) != st.size:
        return None
    return st.values


# ---------------------------------------------------------------------------------------
# NDArray's methods


def _create_index(self, field=None, *, kind="full", persistent=None, name=None,
                  tmpdir=None, cparams=None, **kwargs) -> dict:
    """Build a sorted index of the array's values, making range queries read only what
    can match.

    Parameters
    ----------
    field : None
        python-blosc2's field of a structured dtype; ndpack indexes plain arrays only.
    kind : {"full"}
        The index kind: the values sorted (stably, NaNs last) with their int64 flat
        C-order positions, compressed.  python-blosc2's ``IndexKind.FULL`` is accepted.
    persistent : bool, optional
        Keep the index beside the array file (``<urlpath>.ndpack-index``, written
        crash-atomically).  Default: when the array is on disk.  In-memory arrays keep
        it in memory.
    name : str, optional
        A label kept in the description.
    tmpdir : str, optional
        Where the sorted runs go while building (default: the index's folder, or
        memory for an in-memory index).
    cparams : dict, optional
        Compression of the index arrays (default LZ4 clevel 5 with shuffle).

    Returns
    -------
    dict
        The index's description (as :attr:`indexes` gives it).

    Notes
    -----
    Booleans, integers and real floats of any number of dimensions (positions are flat
    C-order) can be indexed; complex, structured, string and datetime dtypes are a
    TypeError.  The index answers ``a[cond]`` (comparisons of ``a`` with scalars joined
    by ``&``, ``|``, ``~``), ``ndpack.nonzero(cond)`` and ``ndpack.searchsorted(a, v)``;
    see :mod:`ndpack.engine.ops.index` for the rules that keep it from ever being
    used stale.  Building sorts the array out of core (memory bounded by
    ``ndpack.set_memory_limit``).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> x = np.array([5.0, np.nan, -1.0, 3.0, 0.0, 3.0])
    >>> a = ndpack.asarray(x)
    >>> a.create_index()["size"]
    6
    >>> a[(a >= 0) & (a < 4)].tolist()
    [3.0, 0.0, 3.0]
    >>> a[~(a > 0)].tolist()
    [nan, -1.0, 0.0]
    >>> ndpack.searchsorted(a, np.array([3.0]))[()].tolist()
    [2]
    """
    return create_index(self, field, kind=kind, persistent=persistent, name=name,
                        tmpdir=tmpdir, cparams=cparams, **kwargs)


def _drop_index(self, field=None, name=None) -> None:
    """Remove the array's index (its files too); a KeyError when it has none."""
    drop_index(self, field, name)


def _rebuild_index(self, field=None, name=None) -> dict:
    """Build the array's index again from its current values (after writes, or after
    another writer changed the file); returns its description."""
    return rebuild_index(self, field, name)


#: NDArray's members from here (bound by :mod:`ndpack.engine.bind`): ``create_index``,
#: ``drop_index``, ``rebuild_index`` and the indexed ``a[expr]`` (``expr_key``, the hook
#: storage leaves None); ``indexes`` comes from :mod:`ndpack.engine.ops.indexhandle`
NDARRAY_MEMBERS = [("create_index", _create_index), ("drop_index", _drop_index),
                   ("rebuild_index", _rebuild_index), ("expr_key", _expr_key)]
