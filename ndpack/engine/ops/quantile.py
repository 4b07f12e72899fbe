"""``quantile`` and ``median`` (NumPy's ``method="linear"``) with bounded memory.

The reduced dimensions (`axis`; all of them for None) form a *lane* for each index of
the kept ones.  Lanes are taken in *tiles* (chunk-aligned slabs of the kept
dimensions):

* **In memory**: a tile of at most :func:`tile_items` items is read and given to
  ``np.quantile`` / ``np.median`` on an evaluation worker (tiles in parallel): NumPy's
  result by construction.
* **Selection** (lanes longer than that): the order statistics each quantile needs
  are found without sorting, in a few streamed passes over the tile:

  1. per lane: is there a NaN (then the result is NaN, as NumPy's), and the smallest
     and largest *key* (the value's bits mapped to an unsigned integer in the order of
     the values: sign bit flipped for positive floats and signed integers, every bit
     flipped for negative floats);
  2. a histogram of :data:`BINS` buckets of the key interval that holds each wanted
     rank; the bucket that holds it becomes its new interval (its rank within it
     follows from the counts of the buckets below).  Ranks in one interval share
     its histogram; a bucket of one key is the value;
  3. once the intervals hold few enough items (:func:`collect_items`), their items
     are gathered and the ranks picked by ``np.partition``.

  Pass 2 repeats while an interval is too big: 16 bits of key per pass, so at most
  four for 64-bit values (random float64 in [0, 1): three passes in all).  The values
  at the ranks are then interpolated by NumPy's own formulas (``_lerp`` of
  ``np.quantile``, ``np.mean`` of the middle values for ``np.median``), so results are
  NumPy's bits (signed zeros aside: ``np.partition`` picks either of -0.0 and 0.0).

Every pass reads the tile in pieces on the workers; memory holds the pieces in
flight, one histogram per lane and interval, and the gathered items.
:data:`QUANTILE_ITEMS`, :data:`BINS` and :data:`COLLECT_ITEMS` override the sizes
(tests make them small to force every path).

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> a = asarray(np.arange(20.0).reshape(4, 5) ** 2, chunks=(2, 2))
>>> quantile(a, 0.25)
np.float64(22.75)
>>> median(a, axis=0).tolist()
[62.5, 78.5, 96.5, 116.5, 138.5]
"""

from __future__ import annotations

import collections
import itertools
import math

import numpy as np

from ndpack.resources import memory_limit
from ndpack.codecs import get_nthreads
from ndpack.engine.ops.mergesort import Tracked
from ndpack.engine.ops.shape import as_array
from ndpack.engine.run.plan import default_region_shape
from ndpack.engine.run.workers import workers
from ndpack.storage.ndarray import NDArray

__all__ = ["quantile", "median", "tile_items", "collect_items", "QUANTILE_ITEMS", "BINS",
           "COLLECT_ITEMS"]

QUANTILE_ITEMS = None      # items of a tile in memory and of a piece (None: memory limit)
COLLECT_ITEMS = None       # items gathered for the last pass (None: memory limit)
BINS = 1 << 16             # buckets of a histogram pass


def tile_items(itemsize: int, nthreads: int) -> int:
    """Items of a tile sorted in memory (and of a piece read by a selection pass):
    ``nthreads + 1`` in flight, each with NumPy's partitioned copy."""
    if QUANTILE_ITEMS:
        return int(QUANTILE_ITEMS)
    return max(1024, memory_limit() // 4 // ((nthreads + 1) * (3 * itemsize + 8)))


def collect_items() -> int:
    """Items (keys) gathered at most for the last pass of a selection."""
    if COLLECT_ITEMS:
        return int(COLLECT_ITEMS)
    return max(1024, memory_limit() // 16 // 8)


def _check(x):
    """`x` as an array-like (Python scalars as 0-d NumPy arrays, as NumPy takes them)."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return np.asarray(x)
    return as_array(x)


def quantile(x, q, axis=None, keepdims=False, method="linear"):
    """The `q`-th quantiles of `x` along `axis` (NumPy's ``np.quantile`` with
    ``method="linear"``: NaN where a lane holds a NaN), computed with bounded memory.

    Parameters
    ----------
    x : NDArray, LazyExpr or array-like
        Anything with ``shape``, ``dtype`` and ``__getitem__`` (real numbers).
    q : float or array-like of float
        Quantiles in [0, 1]; their shape comes first in the result.
    axis : int, tuple of int or None
        Dimensions reduced (None: all).
    keepdims : bool
        Keep the reduced dimensions with size one.
    method : str
        ``"linear"`` only.

    Returns
    -------
    numpy.ndarray or NumPy scalar
        As ``np.quantile`` returns.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> ndpack.quantile(np.array([[1, 7, 3], [4, 2, 8]]), [0.5, 1.0], axis=1).tolist()
    [[3.0, 4.0], [7.0, 8.0]]
    """
    if method != "linear":
        raise ValueError(f"quantile() computes method='linear' only, not {method!r}")
    return _Job(_check(x), q, axis, keepdims, "quantile").run()


def median(x, axis=None, keepdims=False):
    """The median of `x` along `axis` (``np.median``'s result: the mean of the middle
    values, NaN where a lane holds a NaN), computed with bounded memory.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> ndpack.median(np.array([[1.0, 9.0, 3.0, 4.0], [2.0, 2.0, 5.0, 1.0]]), axis=1).tolist()
    [3.5, 2.0]
    """
    return _Job(_check(x), None, axis, keepdims, "median").run()


def _keys(v: np.ndarray) -> np.ndarray:
    """uint64 keys in the order of the values (NaN-free lanes only): 1.5 ns per float64
    here (a ``np.where`` version took 7.7)."""
    kind, size = v.dtype.kind, v.dtype.itemsize
    u, i = np.dtype(f"u{size}"), np.dtype(f"i{size}")
    if not v.dtype.isnative:
        v = v.astype(v.dtype.newbyteorder("="))
    bits = v.view(u)
    top = u.type(1 << (8 * size - 1))
    if kind == "f":                    # negative: every bit flipped; else the sign bit
        k = (bits.view(i) >> (8 * size - 1)).view(u)
        k |= top
        k ^= bits
    elif kind in "im":
        k = bits ^ top
    else:
        k = bits
    return k if size == 8 else k.astype(np.uint64)


def _values(keys: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The values of `keys` (inverse of :func:`_keys`)."""
    kind, size = dtype.kind, dtype.itemsize
    u = np.dtype(f"u{size}")
    bits = keys.astype(u)
    top = u.type(1 << (8 * size - 1))
    if kind == "f":
        pos = (bits & top) != 0
        bits = np.where(pos, bits ^ top, ~bits)
    elif kind in "im":
        bits = bits ^ top
    return bits.view(dtype.newbyteorder("=")).astype(dtype)


class _Job:
    """One quantile or median: the plan (kept and reduced dimensions, tiles) and the
    two ways of computing a tile."""

    def __init__(self, x, q, axis, keepdims, name):
        self.x, self.q, self.keepdims, self.name = x, q, keepdims, name
        self.shape = tuple(int(s) for s in x.shape)
        nd = len(self.shape)
        self.dtype = np.dtype(x.dtype)
        probe = np.zeros(1, self.dtype)          # NumPy's errors and result type
        self.rtype = np.asarray(np.median(probe) if name == "median" else
                                np.quantile(probe, q)).dtype
        if axis is None:
            red = tuple(range(nd))
        else:
            red = np.lib.array_utils.normalize_axis_tuple(axis, nd)
        self.red, self.kept = tuple(sorted(red)), tuple(d for d in range(nd) if d not in red)
        self.axis = None if axis is None else self.red
        self.n = math.prod(self.shape[d] for d in self.red)
        self.nthreads = max(1, get_nthreads())
        self.limit = tile_items(self.dtype.itemsize, self.nthreads)

    # --- plan ---------------------------------------------------------------------------
    def run(self):
        kshape = tuple(self.shape[d] for d in self.kept)
        qshape = () if self.name == "median" else np.shape(self.q)
        out = np.empty(qshape + kshape, self.rtype)
        lanes = max(1, self.limit // max(self.n, 1))
        tiles = self._tiles(kshape, lanes)
        if self.n <= self.limit or math.prod(self.shape) == 0:
            results = self._in_memory(tiles)
        else:
            results = ((t, self._select(t)) for t in tiles)
        scalar = None
        for t, r in results:
            if not kshape:
                scalar = r
            else:
                out[(Ellipsis,) + t] = r
        res = scalar if not kshape else out
        if self.keepdims:
            res = np.asarray(res)
            idx = tuple(np.newaxis if d in self.red else slice(None)
                        for d in range(len(self.shape)))
            res = res[(Ellipsis,) + idx]
        return res

    def _tiles(self, kshape: tuple, lanes: int) -> list:
        """Slabs of the kept dimensions (tuples of slices) of at most `lanes` lanes,
        multiples of an NDArray's chunks where they fit."""
        if not kshape:
            return [()]
        if 0 in kshape:
            return []
        kchunks = tuple(self.x.chunks[d] for d in self.kept) \
            if isinstance(self.x, NDArray) else None
        if kchunks and math.prod(kchunks) <= lanes:
            tile = list(kchunks)
            for d in reversed(range(len(kshape))):       # grow trailing dims first
                rest = math.prod(tile) // tile[d]
                tile[d] = min(kshape[d], max(tile[d], lanes // rest // tile[d] * tile[d]))
                if tile[d] < kshape[d]:
                    break
        else:
            tile = default_region_shape(kshape, 1, lanes)
        starts = [range(0, s, c) for s, c in zip(kshape, tile)]
        return [tuple(slice(a, min(a + c, s)) for a, c, s in zip(st, tile, kshape))
                for st in itertools.product(*starts)]

    def _region(self, tile: tuple, red=None) -> tuple:
        """The input region of `tile` (kept slices), all of the reduced dimensions or
        `red` (slices of them)."""
        region, k, r = [], iter(tile), iter(red or ())
        for d in range(len(self.shape)):
            if d in self.red:
                region.append(next(r) if red else slice(None))
            else:
                region.append(next(k))
        return tuple(region)

    # --- tiles in memory ----------------------------------------------------------------
    def _numpy(self, v):
        if self.name == "median":
            return np.median(v, axis=self.axis)
        return np.quantile(v, self.q, axis=self.axis)

    def _in_memory(self, tiles):
        with Tracked(workers(self.nthreads)) as pool:
            window = collections.deque()
            for t in tiles:
                window.append((t, pool.submit(
                    lambda t=t: self._numpy(np.asarray(self.x[self._region(t)])))))
                while len(window) > self.nthreads:
                    t0, f = window.popleft()
                    yield t0, f.result()
            while window:
                t0, f = window.popleft()
                yield t0, f.result()

    # --- selection ----------------------------------------------------------------------
    def _pieces(self, tile: tuple) -> list:
        """Regions of `tile`, cut along the reduced dimensions."""
        lanes = math.prod(s.stop - s.start for s in tile)
        rshape = tuple(self.shape[d] for d in self.red)
        budget = max(1, self.limit // lanes)
        rch = tuple(self.x.chunks[d] for d in self.red) if isinstance(self.x, NDArray) \
            else None
        if not rch or math.prod(rch) > budget:
            rch = default_region_shape(rshape, 1, budget)
        starts = [range(0, s, c) for s, c in zip(rshape, rch)]
        return [self._region(tile, tuple(slice(a, min(a + c, s))
                                         for a, c, s in zip(st, rch, rshape)))
                for st in itertools.product(*starts)]

    def _lanes(self, region) -> np.ndarray:
        """The values of `region` as (lanes, items)."""
        v = np.asarray(self.x[region])
        if v.ndim == 0:
            return v.reshape(1, 1)
        nk = len(self.kept)
        v = np.moveaxis(v, self.kept, range(nk))
        return v.reshape(math.prod(v.shape[:nk]), -1)

    def _pass(self, pieces, fn, combine) -> None:
        """``combine(fn(lanes of piece))`` for every piece, in order (read and computed
        on the workers)."""
        with Tracked(workers(self.nthreads)) as pool:
            window = collections.deque()
            for p in pieces:
                window.append(pool.submit(lambda p=p: fn(self._lanes(p))))
                while len(window) > self.nthreads:
                    combine(window.popleft().result())
            while window:
                combine(window.popleft().result())

    def _ranks(self) -> np.ndarray:
        """The ranks (0-based, in the sorted lane) whose values the result needs."""
        n = self.n
        if self.name == "median":
            return np.array([n // 2 - 1, n // 2] if n % 2 == 0 else [(n - 1) // 2])
        virtual = np.asanyarray((n - 1) * np.asanyarray(self.q))
        if np.issubdtype(virtual.dtype, np.integer):
            return np.unique(virtual.reshape(-1) % n)
        prev, nxt = _indexes(virtual, n)
        return np.unique(np.concatenate([prev.reshape(-1), nxt.reshape(-1)]) % n)

    def _select(self, tile: tuple):
        pieces = self._pieces(tile)
        nlanes = math.prod(s.stop - s.start for s in tile) if tile else 1
        floats = self.dtype.kind == "f"
        stats = {"nan": np.zeros(nlanes, bool),
                 "lo": np.full(nlanes, np.iinfo(np.uint64).max, np.uint64),
                 "hi": np.zeros(nlanes, np.uint64)}

        def minmax(v):
            nan = np.isnan(v).any(axis=1) if floats else np.zeros(len(v), bool)
            k = _keys(v)
            return nan, k.min(axis=1), k.max(axis=1)

        def add_minmax(r):
            stats["nan"] |= r[0]
            np.minimum(stats["lo"], r[1], out=stats["lo"])
            np.maximum(stats["hi"], r[2], out=stats["hi"])

        self._pass(pieces, minmax, add_minmax)
        ranks = self._ranks()
        found = np.zeros((nlanes, len(ranks)), np.uint64)
        # targets: [lane, rank index, lo, hi, rank within [lo, hi], items in [lo, hi]]
        targets = [[ln, i, int(stats["lo"][ln]), int(stats["hi"][ln]), int(r), self.n]
                   for ln in range(nlanes) if not stats["nan"][ln]
                   for i, r in enumerate(ranks)]
        whole = [(int(a), int(b)) for a, b in zip(stats["lo"], stats["hi"])]
        while targets:
            for t in targets:
                if t[2] == t[3]:
                    found[t[0], t[1]] = t[2]            # an interval of one key
            targets = [t for t in targets if t[2] != t[3]]
            if not targets:
                break
            if sum(_groups(targets).values()) <= collect_items():
                self._collect(pieces, targets, found)
                break
            self._histogram(pieces, targets, whole)
        return self._finish(found, stats["nan"], tile)

    def _histogram(self, pieces, targets, whole) -> None:
        """One pass: each target's interval becomes the bucket holding its rank
        (`whole`: each lane's first interval, its smallest and largest keys)."""
        groups = list(_groups(targets))
        bits = BINS.bit_length() - 1
        shifts = {g: max(0, (g[2] - g[1]).bit_length() - bits) for g in groups}
        sizes = {g: ((g[2] - g[1]) >> shifts[g]) + 1 for g in groups}
        hists: dict = {}

        def count(v):
            k = _keys(v)
            out = {}
            for g in groups:
                row = k[g[0]]
                sel = row[(row >= g[1]) & (row <= g[2])] if (g[1], g[2]) != whole[g[0]] \
                    else row.copy()
                sel -= np.uint64(g[1])
                sel >>= np.uint64(shifts[g])
                out[g] = np.bincount(sel.view(np.int64), minlength=sizes[g])
            return out

        def add(r):
            for g, h in r.items():
                hists[g] = h if g not in hists else hists[g] + h

        self._pass(pieces, count, add)
        for t in targets:
            g = (t[0], t[2], t[3])
            h, sh = hists[g], shifts[g]
            cum = np.cumsum(h)
            b = int(np.searchsorted(cum, t[4], side="right"))
            t[4] -= int(cum[b - 1]) if b else 0
            t[2], t[3] = t[2] + (b << sh), min(t[3], t[2] + ((b + 1) << sh) - 1)
            t[5] = int(h[b])

    def _collect(self, pieces, targets, found) -> None:
        """The last pass: gather the keys of every interval and pick the ranks."""
        groups = list(_groups(targets))
        got: dict = {g: [] for g in groups}

        def gather(v):
            k = _keys(v)
            return {g: k[g[0]][(k[g[0]] >= g[1]) & (k[g[0]] <= g[2])] for g in groups}

        self._pass(pieces, gather, lambda r: [got[g].append(a) for g, a in r.items()])
        for t in targets:
            keys = np.concatenate(got[(t[0], t[2], t[3])])
            found[t[0], t[1]] = np.partition(keys, t[4])[t[4]]

    def _finish(self, found, nan, tile):
        """NumPy's result for the lanes of `tile` from the values at the ranks."""
        vals = _values(found.reshape(-1), self.dtype).reshape(found.shape)
        kshape = tuple(s.stop - s.start for s in tile)
        if self.name == "median":
            res = np.mean(vals, axis=-1)                         # the middle values
        else:
            res = _linear(self.n, self.q, vals, self._ranks())  # q.shape + (lanes,)
        res = np.array(res)
        if nan.any():
            res[..., nan] = np.nan
        res = res.reshape(res.shape[:-1] + kshape)
        if res.ndim:
            return res
        if nan.any():                       # NumPy returns the lane's NaN, in its dtype
            return np.array(np.nan, self.dtype)[()]
        return res[()]


def _groups(targets) -> dict:
    """The distinct intervals ``(lane, lo, hi)`` of `targets` and their item counts."""
    out: dict = {}
    for t in targets:
        out.setdefault((t[0], t[2], t[3]), t[5])
    return out


def _indexes(virtual: np.ndarray, n: int):
    """``np.quantile``'s neighbouring ranks of the virtual indexes (``-1``: the last)."""
    prev = np.floor(virtual, out=...)
    nxt = np.add(prev, 1, out=...)
    above = virtual >= n - 1
    prev[above] = -1
    nxt[above] = -1
    below = virtual < 0
    prev[below] = 0
    nxt[below] = 0
    bad = np.isnan(virtual)
    prev[bad] = -1
    nxt[bad] = -1
    return prev.astype(np.intp), nxt.astype(np.intp)


def _linear(n: int, q, vals: np.ndarray, ranks: np.ndarray):
    """``np.quantile(lane, q)`` for every lane from the values at the needed `ranks`
    (`vals`: lanes x ranks), by NumPy's own steps: q.shape + (lanes,)."""
    weak = type(q) in (int, float)
    virtual = np.asanyarray((n - 1) * np.asanyarray(q))

    def at(idx):
        cols = np.searchsorted(ranks, np.asarray(idx) % n)
        return np.moveaxis(vals[:, cols], 0, -1)

    if np.issubdtype(virtual.dtype, np.integer):
        return at(virtual)
    prev_i, next_i = _indexes(virtual, n)
    prev, nxt = at(prev_i), at(next_i)
    gamma = np.asanyarray(np.asanyarray(virtual - prev_i), dtype=virtual.dtype)
    gamma = float(gamma) if weak else gamma.reshape(virtual.shape + (1,))
    diff = nxt - prev
    res = np.add(prev, diff * gamma, out=...)
    np.subtract(nxt, diff * (1 - gamma), out=res, where=gamma >= 0.5, casting="unsafe",
                dtype=type(res.dtype))
    return res
