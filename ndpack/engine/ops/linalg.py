"""Linear algebra out of core: blocked ``tensordot``, ``matmul``, ``vecdot``, ``outer``.

The output is produced one tile at a time (a tile is a chunk of the result).  For an
output tile, the contraction runs over steps of the contracted axes: the matching
tiles of both operands are read (NDArrays decode only the blocks they touch, into
reused buffers; any array with ``shape``, ``dtype`` and ``__getitem__`` works: h5py,
zarr, NumPy), multiplied by BLAS, and accumulated.  Memory stays at a few tiles
whatever the operands' sizes; the result is an NDArray (in memory, or on disk with
``urlpath=``; it inherits the first operand's ``cparams`` unless given) or is written
into ``out=``.

How the work is cut (more in docs/linalg.md):

* **Steps keep whole storage blocks.**  A step along a contracted axis is a multiple
  of both operands' blocks (chunks for foreign arrays), so each stored block is
  decoded once per output tile; steps follow the streamed operand's storage order.
* **Operands that fit are read once per output tile.**  An operand whose part for the
  output tile (all contracted elements) fits in :data:`TILE_BYTES` is read whole and
  sliced in memory; only the other one streams.  Two small operands: one BLAS call.
* **No transposing copies.**  Each step is one matrix product of views (``A @ B``,
  either transposed); when the axes do not merge into matrices the leading axis is
  looped over (a sum of smaller products), and only as a last resort does
  ``np.tensordot`` copy.  Products add into the tile by accumulating BLAS calls
  (``beta = 1``) through NumPy's OpenBLAS (:mod:`ndpack.engine.ops.blas`), else through
  a reused scratch buffer.
* **The workers multiply.**  While a product runs BLAS is held at one thread and the
  engine's workers run the products themselves (:mod:`ndpack.engine.ops.contract`): in
  lanes (each worker reads and multiplies its own steps, into its own accumulator)
  for small tiles, else each step cut into one part per worker.
* **Reads in parallel, ahead.**  Both operands' tiles of a step are read at once on
  the engine's evaluation workers (decoding releases the GIL); when two steps fit in a
  third of :data:`LIVE_BYTES`, the next step is read while the current one is
  multiplied.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(12.0).reshape(3, 4), chunks=(2, 2))
>>> b = ndpack.asarray(np.ones((4, 5)), chunks=(2, 5))
>>> ndpack.matmul(a, b)[:, 0].tolist()
[6.0, 22.0, 38.0]
>>> ndpack.tensordot(a, a, axes=((0, 1), (0, 1)))[()]
array(506.)
"""

from __future__ import annotations

import contextlib
import itertools
import math

import numpy as np

from ndpack.codecs import CParams, get_nthreads
from ndpack.engine.expr.lazyexpr import LazyExpr, as_node
from ndpack.engine.expr.nodes import Apply, Node, Operand, Reduce, elementwise, norm_axes, result_shape
from ndpack.engine.ops.reductions import compute_reduction
from ndpack.engine.ops import blas, contract
from ndpack.engine.run import workers
from ndpack.engine.run.output import new_output
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.storage.ndarray import fill_from

__all__ = ["LIVE_BYTES", "TILE_BYTES", "compute_contract", "matmul", "outer",
           "tensordot", "vecdot"]

TILE_BYTES = 64 * 2**20        # at most this many bytes in one operand read
LIVE_BYTES = 128 * 2**20       # operand tiles held at once (the current and next step)
OUT_CHUNK_BYTES = 16 * 2**20   # the result's chunks: 4-16 MiB
OUT_TILE_BYTES = 64 * 2**20    # computed at once: up to 64 MiB of whole chunks
MIN_STEP = 2048                # contracted elements per step, budget permitting


def _shape_dtype(x):
    if not (hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__getitem__")):
        x = np.asarray(x)
    return x, tuple(int(s) for s in x.shape), np.dtype(x.dtype)



def _fit(sizes, grain, chunk, order, per: int, limit: int, keep: bool):
    """Steps along the contracted axes so that ``prod(steps) * per <= limit``: the axes
    in `order` (outermost in storage first) are cut, to multiples of the chunks when
    possible, else of the grain (`keep`: never below it, else down to 1).  None when
    that does not fit."""
    steps = list(sizes)
    for p in order:
        rest = per * math.prod(s for q, s in enumerate(steps) if q != p)
        allowed = limit // rest if rest else steps[p]
        if allowed >= steps[p]:
            break
        low = grain[p] if keep else 1
        if allowed < low:
            steps[p] = low
            continue
        # whole chunks decode straight into the tile: blocks of a cut chunk are decoded
        # aside and copied
        unit = chunk[p] if allowed >= chunk[p] else grain[p] if allowed >= grain[p] else 1
        steps[p] = allowed - allowed % unit
        break
    return steps if math.prod(steps) * per <= limit else None


def _plan(op1, op2, ax1, ax2, n1: int, n2: int) -> dict:
    """How an output tile of ``n1 x n2`` elements (parts of operand 1 and 2) is computed:
    ``steps`` (per contracted axis), which operands are read whole (all contracted
    elements, once per tile), and whether the next step is prefetched."""
    sizes = [op1.shape[a] for a in ax1]
    ktot = math.prod(sizes)
    i1, i2 = op1.dtype.itemsize, op2.dtype.itemsize
    whole1 = n1 * ktot * i1 <= TILE_BYTES
    whole2 = n2 * ktot * i2 <= TILE_BYTES
    fixed = whole1 * n1 * ktot * i1 + whole2 * n2 * ktot * i2
    per = (not whole1) * n1 * i1 + (not whole2) * n2 * i2
    plan = {"steps": sizes, "whole": (whole1, whole2), "ahead": False}
    if not per or not sizes:
        return plan
    # the streamed operands' blocks and chunks (a whole operand is cut in memory)
    streamed = [(op, ax) for op, ax, w in ((op1, ax1, whole1), (op2, ax2, whole2)) if not w]
    grain = [min(n, math.lcm(*[op.grain[ax[p]] for op, ax in streamed]))
             for p, n in enumerate(sizes)]
    chunk = [min(n, math.lcm(g, *[op.chunks[ax[p]] for op, ax in streamed]))
             for p, (n, g) in enumerate(zip(sizes, grain))]
    # cut the streamed operand's outermost axes first (each stored block whole)
    storage = ax2 if whole1 else ax1
    order = sorted(range(len(sizes)), key=lambda p: storage[p])
    tile = TILE_BYTES // max((not whole1) * i1 * n1, (not whole2) * i2 * n2) * per
    room = max(LIVE_BYTES - fixed, per)
    low = min(tile, MIN_STEP * per)           # smaller steps: many small products and adds
    # read ahead: two steps in two thirds of the room (the rest: compressed chunks and
    # decoding buffers in flight); else one step at a time; else cut the blocks
    for limit, keep, ahead in ((room // 3, True, True), (room, True, False),
                               (room // 3, False, True)):
        if keep and ahead and limit < low:
            continue                              # two steps would be too small
        limit = max(min(tile, limit), low if keep else 0, per)
        steps = _fit(sizes, grain, chunk, order, per, limit, keep)
        if steps is not None:
            n = math.prod(-(-s // k) for s, k in zip(sizes, steps))
            plan.update(steps=steps, ahead=ahead and n > 1, order=order)
            return plan
    plan.update(steps=[1] * len(sizes), ahead=True, order=order)
    return plan


def tensordot(x1, x2, axes=2, chunks=None, blocks=None, out=None, **storage):
    """``np.tensordot(x1, x2, axes)`` computed tile by tile (see the module docstring).

    Parameters
    ----------
    x1, x2 : array-like
        NDArray, NumPy, h5py, zarr, ... (``shape``, ``dtype``, ``__getitem__``).
    axes : int or (sequence, sequence)
        As in NumPy.
    chunks, blocks, **storage
        Storage of the resulting NDArray (``urlpath=``, ``cparams=``, ...); the
        cparams default to those of the first NDArray operand of the result's dtype.
    out : array-like, optional
        Write the result there instead (NumPy, NDArray, h5py, zarr: ``__setitem__``).

    Returns
    -------
    NDArray, or `out`.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> x = np.arange(60.0).reshape(3, 4, 5)
    >>> a = ndpack.asarray(x, chunks=(2, 2, 5), blocks=(1, 2, 5))
    >>> r = ndpack.tensordot(a, a, axes=((2, 0), (2, 0)))
    >>> bool(np.allclose(r[()], np.tensordot(x, x, axes=((2, 0), (2, 0)))))
    True
    """
    storage.pop("fast_path", None)      # python-blosc2's testing switch: no effect here
    x1, s1, d1 = _shape_dtype(x1)
    x2, s2, d2 = _shape_dtype(x2)
    ax1, ax2 = norm_axes(axes, len(s1), len(s2))
    for a, b in zip(ax1, ax2):
        if s1[a] != s2[b]:
            raise ValueError(f"shape mismatch for sum: axis {a} of x1 has {s1[a]}, axis {b} "
                             f"of x2 has {s2[b]}")
    free1 = [d for d in range(len(s1)) if d not in ax1]
    free2 = [d for d in range(len(s2)) if d not in ax2]
    out_shape = tuple(s1[d] for d in free1) + tuple(s2[d] for d in free2)
    dtype = np.tensordot(np.ones((1,) * len(s1), d1), np.ones((1,) * len(s2), d2),
                         axes=(ax1, ax2)).dtype
    op1, op2 = contract.Operand(x1, s1, d1, 0), contract.Operand(x2, s2, d2, 1)
    out_chunks = _out_chunks(out_shape, free1, free2, op1.chunks, op2.chunks, dtype, chunks)
    tile_shape = _tile_shape(out_shape, out_chunks, dtype)
    n1 = math.prod(tile_shape[:len(free1)])
    n2 = math.prod(tile_shape[len(free1):])
    plan = _plan(op1, op2, ax1, ax2, n1, n2)
    if out is None and "cparams" not in storage:
        storage["cparams"] = _inherited_cparams((x1, x2), dtype)
    nthreads = get_nthreads()
    tiler = contract.Tiler(op1, op2, ax1, ax2, free1, free2, dtype, plan, nthreads)
    split = nthreads > 1 and not workers.on_engine_thread()
    try:
        with blas.one_thread() if split else contextlib.nullcontext(False) as held:
            if held:                             # BLAS at one thread: the workers multiply
                tiler.use_workers(nthreads, n1, n2)
            if out is not None:
                return _emit(out_shape, dtype, tiler, tile_shape, blocks, out, storage)
            return _emit(out_shape, dtype, _TileCache(tiler, out_shape, tile_shape),
                         out_chunks, blocks, out, storage)
    finally:
        tiler.release()                          # every tile is written by now


def _tile_shape(shape, chunks, dtype) -> tuple:
    """What is computed at once: several of the result's chunks along the first axis
    (up to :data:`OUT_TILE_BYTES`) when a chunk spans the other axes whole (so that the
    chunks, written in C order, come one tile after another), else one chunk."""
    if not shape or tuple(chunks[1:]) != tuple(shape[1:]):
        return tuple(chunks)
    nbytes = math.prod(chunks) * dtype.itemsize
    m = max(1, OUT_TILE_BYTES // max(1, nbytes))
    return (min(shape[0], chunks[0] * m),) + tuple(shape[1:])


class _TileCache:
    """``producer(region)`` for a chunk region, answered from the output tile holding it
    (computed once, when its first chunk is asked for)."""

    def __init__(self, tiler, shape, tile):
        self.tiler, self.shape, self.tile = tiler, shape, tile
        self.start, self.values = None, None

    def __call__(self, region) -> np.ndarray:
        if not region or tuple(self.tile) == tuple(r.stop - r.start for r in region):
            self.start = None
            return self.tiler(region)
        t0 = region[0].start - region[0].start % self.tile[0]
        stop = min(t0 + self.tile[0], self.shape[0])
        if region[0].stop > stop or any(r.start or r.stop != n
                                        for r, n in zip(region[1:], self.shape[1:])):
            self.start = None                    # not inside one tile: computed alone
            return self.tiler(region)
        if self.start != t0:
            big = (slice(t0, stop),) + tuple(slice(0, n) for n in self.shape[1:])
            self.values, self.start = self.tiler(big), t0
        return self.values[region[0].start - t0:region[0].stop - t0]


def _inherited_cparams(operands, dtype):
    """The cparams of the first NDArray operand of `dtype` (None: the defaults)."""
    for x in operands:
        cp = getattr(x, "cparams", None)
        if isinstance(cp, CParams) and getattr(x, "dtype", None) == dtype:
            return cp
    return None


def _out_chunks(out_shape, free1, free2, c1, c2, dtype, chunks):
    """The result's chunks: the operands' chunks along the kept axes, unless given."""
    if chunks is not None:
        return tuple(chunks)
    if not out_shape:
        return ()
    tiles = [min(c, n) for c, n in zip([c1[d] for d in free1] + [c2[d] for d in free2],
                                       out_shape)]
    # chunks of about 4-16 MiB
    while math.prod(tiles) * dtype.itemsize > OUT_CHUNK_BYTES and max(tiles) > 1:
        k = tiles.index(max(tiles))
        tiles[k] = -(-tiles[k] // 2)
    while math.prod(tiles) * dtype.itemsize * 4 <= OUT_CHUNK_BYTES and \
            any(t < n for t, n in zip(tiles, out_shape)):
        k = min((t / n, i) for i, (t, n) in enumerate(zip(tiles, out_shape)) if t < n)[1]
        tiles[k] = min(out_shape[k], tiles[k] * 2)
    return tuple(max(1, min(t, n)) for t, n in zip(tiles, out_shape))


def _emit(shape, dtype, tile, chunks, blocks, out, storage):
    if out is not None:
        if tuple(out.shape) != shape:
            raise ValueError(f"out has shape {tuple(out.shape)}, the result {shape}")
        for region in _regions(shape, chunks or shape):
            out[region] = tile(region)
        return out
    if chunks is not None and not shape:
        chunks = None
    chunks, blocks = compute_chunks_blocks(shape, chunks, blocks, dtype=dtype)
    urlpath, mode = storage.pop("urlpath", None), storage.pop("mode", "w")
    return new_output(shape, dtype, urlpath, mode, lambda res: fill_from(res, tile),
                      chunks=chunks, blocks=blocks, **storage)


def _regions(shape, chunks):
    if not shape:
        yield ()
        return
    for starts in itertools.product(*[range(0, n, c) for n, c in zip(shape, chunks)]):
        yield tuple(slice(s, min(s + c, n)) for s, c, n in zip(starts, chunks, shape))


def matmul(x1, x2, chunks=None, blocks=None, out=None, **storage):
    """``np.matmul(x1, x2)``: 2-D products and stacks of them (batch dimensions
    broadcast), tile by tile; 1-D operands as in NumPy."""
    storage.pop("fast_path", None)      # python-blosc2's testing switch: no effect here
    x1, s1, d1 = _shape_dtype(x1)
    x2, s2, d2 = _shape_dtype(x2)
    result_shape("matmul", s1, s2, {})          # checks, with matmul's messages
    if len(s1) <= 2 and len(s2) <= 2:
        return tensordot(x1, x2, axes=([len(s1) - 1], [0]), chunks=chunks, blocks=blocks,
                         out=out, **storage)
    if s1[-1] != s2[-2 if len(s2) > 1 else 0]:
        raise ValueError(f"matmul: x1 has {s1[-1]} columns, x2 {s2[-2]} rows")
    v1, v2 = len(s1) == 1, len(s2) == 1
    b1, b2 = (s1[:-2] if not v1 else ()), (s2[:-2] if not v2 else ())
    try:
        batch = tuple(np.broadcast_shapes(b1, b2))
    except ValueError:
        raise ValueError(f"matmul: batch dimensions {b1} and {b2} do not broadcast") from None
    m = () if v1 else (s1[-2],)
    n = () if v2 else (s2[-1],)
    shape = batch + m + n
    dtype = np.matmul(np.ones((1,) * len(s1), d1), np.ones((1,) * len(s2), d2)).dtype
    c1, c2 = contract.chunks_of(x1, s1), contract.chunks_of(x2, s2)
    chunks = chunks or tuple([1] * len(batch) + [min(c1[-2], s1[-2])] * len(m) +
                             [min(c2[-1], s2[-1])] * len(n))
    # one batch element of the tile per step: rows x k and k x columns under TILE_BYTES
    per = max(d1.itemsize, d2.itemsize) * max(chunks[len(batch)] if m else 1, chunks[-1]
                                              if n else 1)
    kc = math.lcm(c1[-1], c2[-2] if not v2 else c2[0])
    ks = max(1, _fit([s1[-1]], [1], [max(1, min(kc, s1[-1]))], [0], per, max(TILE_BYTES, per),
                     False)[0])

    def tile(region):
        rb, rm, rn = region[:len(batch)], region[len(batch):len(batch) + len(m)], \
            region[len(batch) + len(m):]
        acc = np.empty(tuple(r.stop - r.start for r in region), dtype)
        for i, k in enumerate(contract.steps_of(s1[-1], ks)):
            key1 = _batch_key(rb, b1, batch) + tuple(rm) + (k,)
            key2 = _batch_key(rb, b2, batch) + ((k,) + tuple(rn) if not v2 else (k,))
            part = np.matmul(np.asarray(x1[key1]), np.asarray(x2[key2]))
            if i:
                acc += part
            else:
                acc[...] = part
        if not s1[-1]:
            acc[...] = 0
        return acc

    return _emit(shape, dtype, tile, chunks, blocks, out, storage)


def _batch_key(rb, own, batch):
    """The key of an operand's batch dimensions for output batch region `rb`."""
    lead = len(batch) - len(own)
    return tuple(slice(0, 1) if own[i] == 1 else rb[lead + i] for i in range(len(own)))


def vecdot(x1, x2, axis=-1, **storage):
    """``sum(conj(x1) * x2, axis=axis)`` (array API), streamed: returns NumPy.

    The sum keeps the product's dtype (the standard's type promotion of `x1` and `x2`:
    ``vecdot(uint8, uint8)`` is uint8, wrapping as NumPy's ``matmul`` does), not
    ``sum``'s widening of small integers; booleans sum to NumPy's default integer.
    """
    storage.pop("fast_path", None)      # python-blosc2's testing switch: no effect here
    prod = Apply("multiply", (Apply("conj", (_leaf(x1),)), _leaf(x2)))
    dtype = None if prod.dtype == np.bool_ else prod.dtype
    res = compute_reduction(Reduce("sum", prod, axis=axis, dtype=dtype))
    return res[()] if res.ndim == 0 else res


def _leaf(x) -> Node:
    """`x` as a node the reduction can run: an expression with reductions or products
    inside is read as an operand (its own ``[key]`` prepares it)."""
    if isinstance(x, LazyExpr) and not elementwise(x.node):
        return Operand(x)
    return as_node(x)


def outer(x1, x2, **storage):
    """The outer product of two vectors (flattened as in NumPy), chunk by chunk."""
    storage.pop("fast_path", None)      # python-blosc2's testing switch: no effect here
    x1, s1, _ = _shape_dtype(x1)
    x2, s2, _ = _shape_dtype(x2)
    if len(s1) != 1 or len(s2) != 1:
        raise ValueError("outer: takes 1-D arrays (use tensordot(x1, x2, axes=0) for more)")
    return tensordot(x1, x2, axes=0, **storage)


def compute_contract(node, operand):
    """Compute a Contract node; `operand(child)` turns a child node into an
    array-like (an operand's array, or a lazy expression)."""
    x1, x2 = (operand(a) for a in node.args)
    fn = {"matmul": matmul, "tensordot": tensordot, "vecdot": vecdot, "outer": outer}[node.op]
    return fn(x1, x2, **node.kwargs)
