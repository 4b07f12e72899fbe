"""Sums and means of stored arrays by the C core's fused decode + sum.

For ``sum`` and ``mean`` of an :class:`~ndpack.storage.ndarray.NDArray` (no ``where``,
no ``initial``; bool, integer or float32/64 elements in native byte order) each chunk
is decoded block by block in a per-thread buffer and its elements are added into the
output at once (``NDArray.sum_chunk_into``): every decoded byte is touched once, in
cache, and Python runs once per chunk instead of once per piece.  Zero chunks add
nothing and are skipped without decoding; blocks that hold only padding are never
decoded.

Scheduling is static, so results do not depend on thread timing:

* many output tiles (the kept part of a chunk's region): tiles are dealt out to the
  threads round robin and each thread adds the chunks of its tiles, in order, straight
  into the result;
* few tiles (summing the leading axis of chunks that span the others): chunk ``i``
  goes to thread ``i % n``, each thread into its own copy of the result (a few tiles:
  a few chunks of memory), added up in thread order at the end;
* every axis reduced: chunk ``i`` goes to thread ``i % n`` and into slot ``i`` of a
  vector, whose elements are added pairwise at the end.

Floats add in float64 (float32 input too; the result is cast back), integers in 64
bits with NumPy's wrap-around.  Inside a block, rows are summed with eight lanes and
consecutive rows of one output element are added together before they reach it; when
every axis is reduced the row sums of a chunk are added pairwise (a binary counter in
the C core), so a full sum's error grows like the logarithm of its length, as NumPy's.

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.tree import Operand, Reduce
>>> from ndpack.storage.constructors import asarray
>>> x = np.arange(60.0).reshape(3, 4, 5)
>>> red = Reduce("sum", Operand(asarray(x, chunks=(2, 3, 5), blocks=(1, 2, 5))), axis=1)
>>> bool(np.array_equal(fused_sum(red), x.sum(axis=1)))
True
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ndpack.engine.tree import Operand, Reduce
from ndpack.engine.workers import run_leaves
from ndpack.storage.ndarray import NDArray

__all__ = ["applies", "fused_sum"]

_PRIVATE_BYTES = 64 * 2**20      # per-thread copies of the result up to this size
_TILES_PER_THREAD = 8            # fewer tiles than this per thread: private copies


def _acc_dtype(red: Reduce, dtype: np.dtype):
    """The accumulator for `red` over elements of `dtype`, or None (general path)."""
    if not dtype.isnative or dtype.kind not in "biuf" or \
            (dtype.kind == "f" and dtype.itemsize not in (4, 8)):
        return None
    out = red.dtype
    if red.op == "mean":
        return np.dtype(np.float64) if out.kind == "f" and out.itemsize in (4, 8) else None
    if out.kind == "f" and out.itemsize in (4, 8):
        return np.dtype(np.float64)
    if out.kind in "iu" and dtype.kind != "f":
        return np.dtype(np.uint64) if out.kind == "u" else np.dtype(np.int64)
    return None


def applies(red: Reduce, arg) -> bool:
    """Whether :func:`fused_sum` computes `red` over the prepared argument `arg`."""
    return (red.op in ("sum", "mean") and red.where is None and red.initial is None and
            isinstance(arg, Operand) and isinstance(arg.array, NDArray) and
            arg.array.ndim >= 1 and arg.array.size > 0 and
            _acc_dtype(red, arg.array.dtype) is not None)


def fused_sum(red: Reduce, arg=None) -> np.ndarray:
    """The value of `red` (``sum`` or ``mean``; :func:`applies` must hold) as a NumPy
    array of ``red.shape``, by the fused decode + sum of every chunk."""
    arg = red.arg if arg is None else arg
    if not applies(red, arg):
        raise ValueError(f"the fused sum does not apply to {red!r}")
    a = arg.array
    acc_dtype = _acc_dtype(red, a.dtype)
    raxes = set(red.axis)
    shape, chunks = a.shape, a.chunks
    grid = tuple(-(-s // c) for s, c in zip(shape, chunks))
    acc_shape = tuple(1 if d in raxes else n for d, n in enumerate(shape))
    kept = [d for d in range(a.ndim) if d not in raxes]
    rdims = sorted(raxes)
    nthreads = max(1, getattr(getattr(a, "dparams", None), "nthreads", 1))
    ntiles = math.prod(grid[d] for d in kept)
    nbytes = math.prod(acc_shape) * 8
    private = nthreads > 1 and ntiles < _TILES_PER_THREAD * nthreads and \
        nbytes * nthreads <= _PRIVATE_BYTES

    def read_buffer():
        # files read each chunk into a reused buffer; in memory, chunks are views
        return bytearray(a.stored_elements * a.dtype.itemsize + 64) \
            if a.urlpath is not None else None

    def tile_chunks(tcoords):
        pos = dict(zip(kept, tcoords))
        for rc in itertools.product(*[range(grid[d]) for d in rdims]):
            pos.update(zip(rdims, rc))
            yield int(np.ravel_multi_index([pos[d] for d in range(a.ndim)], grid))

    def runner(out, nchunks):
        strides = [s // 8 for s in out.strides]
        flat = out.reshape(-1)

        def run():
            buf = read_buffer()
            for n in nchunks:
                coords = np.unravel_index(n, grid)
                off = sum(int(coords[d]) * chunks[d] * strides[d] for d in kept)
                a.sum_chunk_into(n, flat, rdims, strides, off, buf)
        return run

    total = np.zeros(acc_shape, acc_dtype)
    if not kept:
        # a scalar: one slot per chunk, added pairwise in chunk order at the end
        slots = np.zeros(math.prod(grid), acc_dtype)
        order = range(slots.size)

        def slot_runner(nchunks):
            def run():
                buf = read_buffer()
                for n in nchunks:
                    a.sum_chunk_into(n, slots, rdims, [0] * a.ndim, n, buf)
            return run
        run_leaves([slot_runner(order[k::nthreads]) for k in range(nthreads)], nthreads)
        total[...] = np.add.reduce(slots)
    elif private:
        outs = [total] + [np.zeros(acc_shape, acc_dtype) for _ in range(nthreads - 1)]
        order = range(math.prod(grid))
        run_leaves([runner(outs[k], order[k::nthreads]) for k in range(nthreads)],
                   nthreads)
        for o in outs[1:]:
            total += o
    else:
        tiles = list(itertools.product(*[range(grid[d]) for d in kept]))
        k = min(nthreads, len(tiles))
        run_leaves([runner(total, [n for t in tiles[i::k] for n in tile_chunks(t)])
                    for i in range(k)], k)
    if red.op == "mean":
        total /= math.prod(shape[d] for d in raxes)
    res = total.astype(red.dtype, copy=False)
    return res.reshape(red.shape)
