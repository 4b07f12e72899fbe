"""Reductions streamed over regions: chunk -> combine -> aggregate.

``sum prod mean std var min max any all argmin argmax count_nonzero`` with NumPy's
semantics (``axis`` int/tuple/None, ``keepdims``, ``dtype``, ``ddof``, ``where=``,
result dtypes, NaN propagation) over NDArrays, LazyExprs and any array-like with
``shape``, ``dtype`` and ``__getitem__`` (NumPy, h5py, zarr).

The input is never materialized.  It is read region by region -- the chunks of an
NDArray operand (special chunks, e.g. all zeros, contribute from their header without
being decoded), the chunks of a foreign operand grown to a few MiB, or ~16 MiB slabs
of an expression -- with the reduced axes innermost, so only one output tile is open at
a time.  Each region gives a *partial* of the output tile's shape; partials of one tile
are combined (float sums pairwise, by a binary counter, so the error grows like
log(number of regions); variances by Chan's update of count/mean/M2) and the tile is
written into an accumulator the size of the *result*.

Inside expressions a :class:`Reduce` node knows its shape and dtype without reading
data; :func:`ndpack.engine.compute.prepare` (run once per evaluation, before the
elementwise chunk loop) calls :func:`compute_reduction` on each, children prepared
first, and replaces it by an operand holding the result.  The public functions are in
:mod:`ndpack.engine.statistical`.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> a = asarray(np.arange(24.0).reshape(2, 3, 4), chunks=(1, 2, 3))
>>> compute_reduction(Reduce("sum", Operand(a), axis=(0, 2))).tolist()
[60.0, 92.0, 124.0]
"""

from __future__ import annotations

import builtins
import collections
import itertools
import math
import threading

import numpy as np

from ndpack.codecs import get_nthreads
from ndpack.engine.expr.nodes import NUMPY_REDUCTIONS as _NUMPY
from ndpack.engine.expr.nodes import Constant, Node, Operand, Reduce, numpy_call, operands_of
from ndpack.engine.ops.chunksum import applies as fused_sum_applies
from ndpack.engine.ops.chunksum import fused_sum
from ndpack.engine.run import plan
from ndpack.engine.run.foreign import read_new, reader
from ndpack.engine.run.regions import evaluate_region
from ndpack.engine.run.workers import submit, workers
from ndpack.storage.ndarray import NDArray

__all__ = ["compute_reduction"]


# ---------------------------------------------------------------------------------------
# per-operation partials (each has the output tile's shape, reduced dims of size 1)


class _Ufunc:
    """sum prod min max any all count_nonzero: one array per partial."""

    _COMBINE = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
                "any": np.logical_or, "all": np.logical_and, "count_nonzero": np.add}

    def __init__(self, red: Reduce):
        self.red, self.op, self.axes = red, red.op, red.axis
        self.combine_fn = self._COMBINE[red.op]
        self.pairwise = red.op == "sum" and red.dtype.kind in "fc"

    def partial(self, data, w, region):
        if self.op == "count_nonzero":
            return np.count_nonzero(data, axis=self.axes, keepdims=True).astype(np.intp)
        if w is None and self.red.initial is None and data.dtype == self.red.dtype and \
                self.op in ("sum", "prod", "min", "max") and \
                builtins.all(data.shape[d] == 1 for d in self.axes):
            return data                       # nothing to reduce: borrowed, not copied
        kw = {"axis": self.axes, "keepdims": True}
        if self.op in ("sum", "prod"):
            kw["dtype"] = self.red.dtype
        if w is not None:
            kw["where"] = w
        if self.red.initial is not None:
            kw["initial"] = self.red.initial
        return _NUMPY[self.op](data, **kw)

    def special(self, value, region):
        shape = _extent(region)
        if self.op in ("min", "max", "any", "all"):            # idempotent
            return self.partial(np.broadcast_to(value, _collapsed(shape, self.axes)), None,
                                region)
        m = math.prod(shape[d] for d in self.axes)
        tile = _collapsed(shape, self.axes)
        if self.op == "sum":
            return np.full(tile, np.asarray(value).astype(self.red.dtype) * m, self.red.dtype)
        if self.op == "count_nonzero":
            return np.full(tile, m if value != 0 else 0, np.intp)
        return self.partial(np.broadcast_to(value, shape), None, region)

    def combine(self, a, b, inplace=False):
        if inplace and isinstance(a, np.ndarray) and a.ndim and a.flags.writeable:
            return self.combine_fn(a, b, out=a)
        return self.combine_fn(a, b)

    def final(self, p):
        return np.asarray(p).astype(self.red.dtype, copy=False)


class _Moments:
    """mean (count, sum) and var/std (count, mean, M2), combined with Chan's update."""

    def __init__(self, red: Reduce, arg_dtype: np.dtype):
        self.red, self.axes = red, red.axis
        kind = np.result_type(arg_dtype, red.dtype).kind
        self.acc = np.complex128 if kind == "c" else np.float64
        if red.dtype in (np.longdouble, np.clongdouble):
            self.acc = red.dtype
        self.m2 = np.longdouble if self.acc in (np.longdouble, np.clongdouble) else np.float64
        self.mean_only = red.op == "mean"
        self.pairwise = self.mean_only

    def _count(self, w, shape):
        if w is None:
            return np.full(_collapsed(shape, self.axes),
                           math.prod(shape[d] for d in self.axes), np.float64)
        return np.sum(np.broadcast_to(w, shape), axis=self.axes, keepdims=True,
                      dtype=np.float64)

    def partial(self, data, w, region):
        n = self._count(w, data.shape)
        kw = {"axis": self.axes, "keepdims": True}
        if w is not None:                      # (where=True would take a slower loop)
            kw["where"] = w
        s = np.sum(data, dtype=self.acc, **kw)
        if self.mean_only:
            return n, s
        mu = np.divide(s, n, out=np.zeros_like(s), where=n > 0)
        d = data - mu
        sq = d.real * d.real + d.imag * d.imag if d.dtype.kind == "c" else d * d
        return n, mu, np.sum(sq, dtype=self.m2, **kw)

    def special(self, value, region):
        shape = _extent(region)
        n = self._count(None, shape)
        v = np.asarray(value).astype(self.acc)
        if self.mean_only:
            return n, v * n
        return n, np.full(n.shape, v), np.zeros(n.shape)

    def combine(self, a, b, inplace=False):
        if self.mean_only:
            return a[0] + b[0], a[1] + b[1]
        (na, ma, qa), (nb, mb, qb) = a, b
        n = na + nb
        frac = np.divide(nb, n, out=np.zeros_like(n), where=n > 0)
        delta = mb - ma
        d2 = delta.real * delta.real + delta.imag * delta.imag if delta.dtype.kind == "c" \
            else delta * delta
        return n, ma + delta * frac, qa + qb + d2 * na * frac

    def final(self, p):
        with np.errstate(all="ignore"):
            if self.mean_only:
                return (p[1] / p[0]).astype(self.red.dtype)
            n, _, q = p
            res = q / np.maximum(n - self.red.ddof, 0)
            if self.red.op == "std":
                res = np.sqrt(res)
            return res.astype(self.red.dtype)


class _Arg:
    """argmin/argmax: (value, index) per output element; first occurrence wins, NaN
    beats everything (NumPy's rules)."""

    pairwise = False

    def __init__(self, red: Reduce, shape: tuple):
        self.red, self.shape = red, shape
        self.is_max = red.op == "argmax"
        self.fn = np.argmax if self.is_max else np.argmin

    def partial(self, data, w, region):
        if self.red.flat:
            i = int(self.fn(data))
            local = np.unravel_index(i, data.shape)
            gi = np.ravel_multi_index(tuple(int(c) + s.start for c, s in zip(local, region)),
                                      self.shape) if self.shape else 0
            tile = (1,) * data.ndim
            return (np.full(tile, data.reshape(-1)[i], data.dtype),
                    np.full(tile, gi, np.intp))
        k = self.red.axis[0]
        li = self.fn(data, axis=k, keepdims=True)
        return np.take_along_axis(data, li, k), li.astype(np.intp) + region[k].start

    def special(self, value, region):
        shape = _extent(region)
        sub = tuple(slice(s.start, s.start + 1) if d in self.red.axis else s
                    for d, s in enumerate(region))
        return self.partial(np.broadcast_to(value, _collapsed(shape, self.red.axis)), None,
                            sub)

    def combine(self, a, b, inplace=False):
        (va, ia), (vb, ib) = a, b
        first = ib < ia
        with np.errstate(invalid="ignore"):
            wins = (vb > va) if self.is_max else (vb < va)
            tie = vb == va
        if va.dtype.kind in "fc":
            na, nb = np.isnan(va), np.isnan(vb)
            wins = np.where(na | nb, nb & (~na | first), wins | (tie & first))
        else:
            wins = wins | (tie & first)
        return np.where(wins, vb, va), np.where(wins, ib, ia)

    def final(self, p):
        return p[1]


def _extent(region) -> tuple:
    return tuple(s.stop - s.start for s in region)


def _collapsed(shape, axes) -> tuple:
    return tuple(1 if d in axes else n for d, n in enumerate(shape))


def _reducer(red: Reduce, arg: Node):
    if red.op in ("mean", "std", "var"):
        return _Moments(red, arg.dtype)
    if red.op in ("argmin", "argmax"):
        return _Arg(red, arg.shape)
    return _Ufunc(red)


# ---------------------------------------------------------------------------------------
# sources: region grid and how to read a region


def _chunks_of(a, shape):
    chunks = getattr(a, "chunks", None)
    if isinstance(chunks, tuple) and len(chunks) == len(shape) and shape and builtins.all(
            isinstance(c, (int, np.integer)) and c > 0 for c in chunks):
        return tuple(int(c) for c in chunks)
    return None


def _source(arg: Node, flat: bool = False, min_rows: int = 1):
    """``(grid, read)``: the region shape, and ``read(region) -> (parallel, parts)``
    where each part is ``(subregion, thunk)`` and ``thunk() -> (values, is_special)``;
    `parallel` parts may run on worker threads.  `flat`: every axis is reduced and
    the order of the elements does not matter (values may come in stored order).
    `min_rows`: fewest leading indices per part of a chunk."""
    shape, itemsize = arg.shape, builtins.max(arg.dtype.itemsize, 1)
    if isinstance(arg, Operand):
        a = arg.array
        chunks = _chunks_of(a, shape)
        if isinstance(a, NDArray) and chunks and \
                math.prod(chunks) * itemsize >= plan.CHUNK_MIN_BYTES:
            return chunks, _chunk_reader(a, flat, min_rows)
        grid = plan.grow(chunks, shape, itemsize) if chunks else \
            plan.default_region_shape(shape, itemsize)
        return grid, _plain_reader(a)
    for op in operands_of(arg):          # read along the chunks of an operand
        chunks = _chunks_of(op.array, shape) if op.shape == shape else None
        if chunks:
            grid = plan.grow(chunks, shape, itemsize)
            break
    else:
        grid = plan.default_region_shape(shape, itemsize)
    return grid, lambda region: (False, [(region, lambda: (evaluate_region(arg, region,
                                                                            shape), False))])


def _plain_reader(a):
    fast = reader(a)                   # h5py, zarr: chunks read on our own threads

    def read(region):
        if fast is not None and region:
            return False, [(region, lambda: (read_new(fast, a, region, get_nthreads()), False))]
        return False, [(region, lambda: (np.asarray(a[region] if region else a[()]), False))]
    return read


def _chunk_reader(a: NDArray, flat: bool = False, min_rows: int = 1):
    """Chunk by chunk; special chunks come back as their scalar, undecoded.  With the
    stored-order API and C-order blocks, a chunk is cut into groups of rows of about
    ``plan.REDUCE_GROUP_BYTES`` that worker threads decode (one C thread each) into their own buffers
    and reduce while the data is in their cache."""
    grid = tuple(-(-s // c) for s, c in zip(a.shape, a.chunks))
    ext = tuple(-(-c // b) * b for c, b in zip(a.chunks, a.blocks))
    per_block = math.prod(a.blocks)
    # big chunks are cut into row groups; smaller ones go whole to one worker each
    grouped = hasattr(a, "special_value") and getattr(a, "stored_c_order", False) and \
        a.stored_elements * a.dtype.itemsize >= plan.REDUCE_GROUP_MULT * plan.REDUCE_GROUP_BYTES
    row = math.prod(ext[1:]) * a.dtype.itemsize            # bytes of one leading index
    step = builtins.max(min_rows, plan.REDUCE_GROUP_BYTES // builtins.max(row * a.blocks[0], 1))
    step = -(-step // a.blocks[0]) * a.blocks[0]
    blocks_per_row = math.prod(ext[1:]) // per_block if a.blocks[0] == 1 else None
    local = threading.local()

    def whole(chunk, region):
        def thunk():
            if hasattr(a, "special_value"):     # on a worker: one C thread, own buffer
                buf = getattr(local, "whole", None)
                if buf is None:
                    buf = local.whole = np.empty(a.stored_elements, a.dtype)
                v = a.decode_stored(chunk, out=buf, nthreads=1)
            else:
                v = a.decode_stored(chunk)
            if v.ndim == 0:
                return v, True
            if flat and tuple(s.stop - s.start for s in region) == ext:
                # every axis reduced, order irrelevant, no padding: stored order as is
                return v.reshape((1,) * (len(ext) - 1) + (-1,)), False
            full = a.stored_as_chunk(v)
            return full[tuple(slice(0, s.stop - s.start) for s in region)], False
        return thunk

    def group(chunk, region, r0, r1):
        def thunk():
            if a.blocks[0] == 1:
                g = range(r0 * blocks_per_row, r1 * blocks_per_row)
            else:
                g = range(r0 // a.blocks[0] * (math.prod(ext[1:]) * a.blocks[0] // per_block),
                          -(-r1 // a.blocks[0]) * (math.prod(ext[1:]) * a.blocks[0]
                                                   // per_block))
            m = len(g) * per_block
            buf = getattr(local, "buf", None)
            if buf is None or buf.size < m:
                buf = local.buf = np.empty(builtins.max(m, step * row // a.dtype.itemsize),
                                           a.dtype)
            v = a.decode_stored(chunk, out=buf[:m], blocks=g, nthreads=1)
            lead = (g.start * per_block) // math.prod(ext[1:])
            arr = v.reshape((-1,) + ext[1:])[r0 - lead:r1 - lead]
            return arr[(slice(None),) + tuple(slice(0, s.stop - s.start)
                                              for s in region[1:])], False
        return thunk

    def read(region):
        coords = tuple(s.start // c for s, c in zip(region, a.chunks))
        chunk = a.get_chunk(int(np.ravel_multi_index(coords, grid)))
        if not grouped:
            return ("regions" if hasattr(a, "special_value") else False), \
                [(region, whole(chunk, region))]
        fill = a.special_value(chunk)
        if fill is not None:
            return False, [(region, lambda: (fill, True))]
        rows = region[0].stop - region[0].start
        parts = []
        for r0 in range(0, rows, step):
            r1 = builtins.min(r0 + step, rows)
            sub = (slice(region[0].start + r0, region[0].start + r1),) + tuple(region[1:])
            parts.append((sub, group(chunk, region, r0, r1)))
        return len(parts) > 1, parts
    return read


_PAIRWISE_MAX = 1 << 14          # partials up to this size are combined pairwise


class _Fold:
    """Combines the partials of one output tile, in order: pairwise (a binary counter,
    error ~ log of their number) while they are small, else in place one after
    another (large partials come from reducing leading axes, where NumPy too adds
    one row after the other)."""

    def __init__(self, reducer):
        self.r, self.stack, self.total = reducer, [], None

    def push(self, p):
        r = self.r
        big = (p[0] if isinstance(p, tuple) else np.asarray(p)).size > _PAIRWISE_MAX
        if r.pairwise and not big:
            p = _own(p)
            level = 0
            while self.stack and self.stack[-1][0] == level:
                p = r.combine(self.stack.pop()[1], p)
                level += 1
            self.stack.append((level, p))
        elif self.total is None:
            self.total = _own(p)
        else:
            self.total = r.combine(self.total, p, inplace=True)

    def result(self):
        total = None
        while self.stack:
            total = self.stack.pop()[1] if total is None else \
                self.r.combine(self.stack.pop()[1], total)
        if total is None:
            return self.total
        return total if self.total is None else self.r.combine(self.total, total)


def _own(p):
    """`p` as arrays that no buffer reuse can change."""
    if isinstance(p, np.ndarray) and not p.flags.owndata:
        return p.copy()
    return p


# ---------------------------------------------------------------------------------------
# the driver


def compute_reduction(red: Reduce) -> np.ndarray:
    """The value of reduction node `red` as a NumPy array of ``red.shape``.

    `red`'s children must be prepared (no reduction or product left under it:
    :func:`ndpack.engine.compute.prepare` does that first).

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack.engine.expr.nodes import Operand
    >>> compute_reduction(Reduce("sum", Operand(np.ones((2, 3))), axis=0)).tolist()
    [2.0, 2.0, 2.0]
    """
    arg, where = red.arg, red.where
    shape = arg.shape
    if 0 in shape or (isinstance(arg, Operand) and isinstance(arg.array, np.ndarray)
                      and (where is None or isinstance(where, Constant) or
                           (isinstance(where, Operand) and isinstance(where.array,
                                                                      np.ndarray)))):
        data = np.asarray(arg.array) if 0 not in shape else np.zeros(shape, arg.dtype)
        w = None
        if where is not None:
            w = where.value if isinstance(where, Constant) else np.asarray(where.array)
        res = numpy_call(red, data, w)
        return res.astype(red.dtype, copy=False).reshape(red.shape)
    if fused_sum_applies(red, arg):
        return fused_sum(red, arg)
    flat = len(red.axis) == len(shape) and red.op not in ("argmin", "argmax") and \
        where is None
    # moments merge a tile-sized partial per part: reducing the leading axis, make
    # parts of several rows so that there are fewer merges
    min_rows = 16 if red.op in ("std", "var", "mean") and 0 in red.axis and \
        len(red.axis) < len(shape) else 1
    grid, read = _source(arg, flat, min_rows)
    reducer = _reducer(red, arg)
    raxes = set(red.axis)
    kept = [d for d in range(len(shape)) if d not in raxes]
    rdims = sorted(raxes)
    acc = np.empty(_collapsed(shape, raxes), red.dtype)
    starts = [range(0, n, g) for n, g in zip(shape, grid)]
    nthreads = getattr(getattr(arg, "array", None), "dparams", None)
    nthreads = builtins.max(1, getattr(nthreads, "nthreads", 1))

    def partial_of(sub, thunk):
        with np.errstate(all="ignore"):
            data, special = thunk()
            w = None if where is None else evaluate_region(where, sub, shape)
            if special and w is None:
                return reducer.special(data, sub)
            if special:
                data = np.broadcast_to(data, _extent(sub))
            return reducer.partial(data, w, sub)

    def owned_partial(sub, thunk):
        # partials that cross threads must not be views of a worker's reused buffer
        return _own(partial_of(sub, thunk))

    def fold_parts(parts):
        fold = _Fold(reducer)
        for sub, thunk in parts:
            fold.push(partial_of(sub, thunk))
        return fold.result()

    # Parts of a region split its leading dimension.  When that dimension is reduced,
    # all parts feed the tile's one fold; when it is kept, part i of every region of
    # the tile feeds fold i, and the folds' results are stacked along it.
    split = 0 not in raxes

    def do_tile(ostart):
        """``(tile, value)``: the reduction of every region of one output tile.

        Whole chunks ("regions") and runs of parts of a region whose leading axis is
        reduced stream through the workers across regions (at most 2 per worker in
        flight, folded in order, so no worker waits at a chunk's end); parts that
        feed separate folds (leading axis kept) are gathered region by region."""
        folds, pos = [], dict(zip(kept, ostart))
        pool = workers(nthreads) if nthreads > 1 and where is None else None
        inflight = collections.deque()

        def drain(limit):
            while len(inflight) > limit:
                folds[0].push(inflight.popleft().result())

        for rstart in itertools.product(*[starts[d] for d in rdims]):
            pos.update(zip(rdims, rstart))
            region = tuple(slice(pos[d], builtins.min(pos[d] + grid[d], shape[d]))
                           for d in range(len(shape)))
            parallel, parts = read(region)
            if not folds:
                folds = [_Fold(reducer) for _ in (parts if split else [0])]
            if parallel == "regions" or (parallel and not split):
                if pool is None:
                    for sub, thunk in parts:
                        folds[0].push(partial_of(sub, thunk))
                elif parallel == "regions":      # a whole chunk: one worker decodes it
                    inflight.append(submit(pool, owned_partial, *parts[0]))
                else:                            # contiguous runs, folded on the workers
                    k = -(-len(parts) // nthreads)
                    inflight.extend(submit(pool, fold_parts, parts[i:i + k])
                                    for i in range(0, len(parts), k))
                drain(2 * nthreads)
                continue
            drain(0)
            if split and parallel and pool is not None:
                partials = [f.result() for f in
                            [submit(pool, owned_partial, sub, th) for sub, th in parts]]
                for fold, p in zip(folds, partials):
                    fold.push(p)
            elif split:
                for fold, (sub, thunk) in zip(folds, parts):
                    fold.push(partial_of(sub, thunk))
            else:
                for sub, thunk in parts:
                    folds[0].push(partial_of(sub, thunk))
        drain(0)
        tile = tuple(slice(0, 1) if d in raxes else
                     slice(pos[d], builtins.min(pos[d] + grid[d], shape[d]))
                     for d in range(len(shape)))
        results = [_own(reducer.final(f.result())) for f in folds]
        return tile, results[0] if len(results) == 1 else np.concatenate(results, axis=0)

    tiles = itertools.product(*[starts[d] for d in kept])
    ntiles = math.prod(len(starts[d]) for d in kept)
    per_tile = math.prod(len(starts[d]) for d in rdims)
    with np.errstate(all="ignore"):
        if nthreads > 1 and where is None and ntiles > 1 and per_tile < 2 * nthreads:
            # few regions per tile (e.g. whole chunks reduced along trailing axes):
            # the tiles are the parallel work, one per worker, in order
            pool, pending = workers(nthreads), collections.deque()
            for ostart in tiles:
                pending.append(submit(pool, do_tile, ostart))
                if len(pending) > nthreads:
                    tile, value = pending.popleft().result()
                    acc[tile] = value
            while pending:
                tile, value = pending.popleft().result()
                acc[tile] = value
        else:
            for ostart in tiles:
                tile, value = do_tile(ostart)
                acc[tile] = value
    return acc.reshape(red.shape)
