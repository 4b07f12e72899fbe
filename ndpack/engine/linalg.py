"""Linear algebra out of core: blocked ``tensordot``, ``matmul``, ``vecdot``, ``outer``.

The output is produced one chunk (tile) at a time.  For an output tile, the
contraction runs over blocks of the contracted axes: the matching tiles of both
operands are read (NDArrays decode only the chunks and blocks they touch; any array
with ``shape``, ``dtype`` and ``__getitem__`` works: h5py, zarr, NumPy), multiplied
with NumPy's BLAS-backed ``tensordot``/``matmul``, and accumulated.  Memory stays at a
few tiles whatever the operands' sizes; the result is an NDArray (in memory, or on
disk with ``urlpath=``) or is written into ``out=``.

Tiles follow the operands' own chunks along the contracted axes (each chunk read once
per output tile) and the output's chunks elsewhere.  BLAS threads do the inner
products; nothing else runs in parallel meanwhile (one level of parallelism).

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

import itertools
import math

import numpy as np

from ndpack.storage.grid import compute_chunks_blocks
from ndpack.engine.output import new_output
from ndpack.storage.ndarray import fill_from

__all__ = ["tensordot", "matmul", "vecdot", "outer", "result_shape", "compute_contract",
           "TILE_BYTES"]

TILE_BYTES = 32 * 2**20        # at most this many bytes in one operand tile
OUT_TILE_BYTES = 16 * 2**20    # output tiles of 4-16 MiB


def _shape_dtype(x):
    if not (hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__getitem__")):
        x = np.asarray(x)
    return x, tuple(int(s) for s in x.shape), np.dtype(x.dtype)


def _norm_axes(axes, nd1, nd2):
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(nd1, nd2):
            raise ValueError(f"axes={n} is out of range for arrays of {nd1} and {nd2} dims")
        return list(range(nd1 - n, nd1)), list(range(n))
    try:
        a1, a2 = axes
    except (TypeError, ValueError):
        raise ValueError(f"axes must be an int or a pair of axis sequences, not {axes!r}") \
            from None
    a1 = [a1] if isinstance(a1, (int, np.integer)) else list(a1)
    a2 = [a2] if isinstance(a2, (int, np.integer)) else list(a2)
    if len(a1) != len(a2):
        raise ValueError(f"axes {axes!r}: both sequences need the same length")
    out = []
    for ax, nd in ((a1, nd1), (a2, nd2)):
        norm = []
        for a in ax:
            if not -nd <= a < nd:
                raise ValueError(f"axis {a} is out of range for an array of {nd} dims")
            norm.append(int(a) % nd)
        if len(set(norm)) != len(norm):
            raise ValueError(f"repeated axis in {ax!r}")
        out.append(norm)
    return out[0], out[1]


def _chunks_of(x, shape):
    c = getattr(x, "chunks", None)
    if c is not None and not isinstance(c, str) and len(tuple(c)) == len(shape) and \
            all(isinstance(v, (int, np.integer)) and v > 0 for v in c):
        return tuple(int(v) for v in c)
    return tuple(shape)


def _steps(n: int, c: int) -> list:
    return [slice(s, min(s + c, n)) for s in range(0, n, c)]


def _contract_steps(sizes, chunk1, chunk2, itemsize, budget, axes=None, grains=None):
    """Block length per contracted axis: a multiple of both operands' chunks where
    possible (each chunk read whole), shrunk until one tile fits `budget` bytes."""
    steps = []
    for n, c1, c2 in zip(sizes, chunk1, chunk2):
        c = math.lcm(c1, c2)
        steps.append(min(n, c if c <= n else max(c1, c2)))
    # shrink the outermost contracted axis first (in the first operand's storage
    # order): the blocks of the inner axes stay whole, so each is decoded once
    order = sorted(range(len(steps)), key=lambda k: axes[k]) if axes else range(len(steps))
    grain = list(grains) if grains else [1] * len(steps)
    for strict in (True, False):
        # first keep whole storage blocks (up to 4x the budget), then cut them if needed
        limit = 4 * budget if strict else budget
        for k in order:
            while math.prod(steps) * itemsize > (budget if strict else limit) and steps[k] > 1:
                half = -(-steps[k] // 2)
                g = grain[k] if grain[k] < steps[k] else steps[k]
                if strict and half < g:
                    break                                  # would cut a block
                steps[k] = max(1, half - half % g) if strict else half
        if math.prod(steps) * itemsize <= limit:
            break
    return steps


def tensordot(x1, x2, axes=2, chunks=None, blocks=None, out=None, **storage):
    """``np.tensordot(x1, x2, axes)`` computed tile by tile (see the module docstring).

    Parameters
    ----------
    x1, x2 : array-like
        NDArray, NumPy, h5py, zarr, ... (``shape``, ``dtype``, ``__getitem__``).
    axes : int or (sequence, sequence)
        As in NumPy.
    chunks, blocks, **storage
        Storage of the resulting NDArray (``urlpath=``, ``cparams=``, ...).
    out : array-like, optional
        Write the result there instead (NumPy, NDArray, h5py, zarr: ``__setitem__``).

    Returns
    -------
    NDArray, or `out`.
    """
    x1, s1, d1 = _shape_dtype(x1)
    x2, s2, d2 = _shape_dtype(x2)
    ax1, ax2 = _norm_axes(axes, len(s1), len(s2))
    for a, b in zip(ax1, ax2):
        if s1[a] != s2[b]:
            raise ValueError(f"shape mismatch for sum: axis {a} of x1 has {s1[a]}, axis {b} "
                             f"of x2 has {s2[b]}")
    free1 = [d for d in range(len(s1)) if d not in ax1]
    free2 = [d for d in range(len(s2)) if d not in ax2]
    out_shape = tuple(s1[d] for d in free1) + tuple(s2[d] for d in free2)
    dtype = np.tensordot(np.ones((1,) * len(s1), d1), np.ones((1,) * len(s2), d2),
                         axes=(ax1, ax2)).dtype
    c1, c2 = _chunks_of(x1, s1), _chunks_of(x2, s2)
    out_chunks = _out_chunks(out_shape, free1, free2, c1, c2, dtype, chunks)
    # an operand tile is (its part of the output tile) x (a block of contracted axes):
    # the block is sized so that both tiles stay under TILE_BYTES
    n1 = math.prod(out_chunks[:len(free1)])
    n2 = math.prod(out_chunks[len(free1):])
    budget = max(1, TILE_BYTES // max(d1.itemsize, d2.itemsize) // max(n1, n2, 1))
    b1 = getattr(x1, "blocks", None)
    grains = [int(b1[a]) for a in ax1] if isinstance(b1, tuple) and len(b1) == len(s1) \
        else None
    ksteps = _contract_steps([s1[a] for a in ax1], [c1[a] for a in ax1], [c2[b] for b in ax2],
                             1, budget, ax1, grains)
    kblocks = list(itertools.product(*[_steps(s1[a], k) for a, k in zip(ax1, ksteps)]))

    def tile(region):
        r1, r2 = region[:len(free1)], region[len(free1):]
        acc = None
        for kb in kblocks:
            key1 = [None] * len(s1)
            key2 = [None] * len(s2)
            for d, r in zip(free1, r1):
                key1[d] = r
            for d, r in zip(free2, r2):
                key2[d] = r
            for a, b, k in zip(ax1, ax2, kb):
                key1[a] = k
                key2[b] = k
            t1 = np.asarray(x1[tuple(key1)]) if s1 else np.asarray(x1[()])
            t2 = np.asarray(x2[tuple(key2)]) if s2 else np.asarray(x2[()])
            part = np.tensordot(t1, t2, axes=(ax1, ax2))
            if acc is None:
                acc = part if part.dtype == dtype else part.astype(dtype)
            else:
                acc += part
        if acc is None:                           # no contracted elements
            return np.zeros(tuple(r.stop - r.start for r in region), dtype)
        return acc

    return _emit(out_shape, dtype, tile, out_chunks, blocks, out, storage)


def _out_chunks(out_shape, free1, free2, c1, c2, dtype, chunks):
    """The output's tiles: the operands' chunks along the kept axes, unless given."""
    if chunks is not None:
        return tuple(chunks)
    if not out_shape:
        return ()
    tiles = [min(c, n) for c, n in zip([c1[d] for d in free1] + [c2[d] for d in free2],
                                       out_shape)]
    # tiles of about 4-16 MiB: BLAS calls not too small, memory a few tiles
    while math.prod(tiles) * dtype.itemsize > OUT_TILE_BYTES and max(tiles) > 1:
        k = tiles.index(max(tiles))
        tiles[k] = -(-tiles[k] // 2)
    while math.prod(tiles) * dtype.itemsize * 4 <= OUT_TILE_BYTES and \
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
    c1, c2 = _chunks_of(x1, s1), _chunks_of(x2, s2)
    ks = _contract_steps([s1[-1]], [c1[-1]], [c2[-2] if not v2 else c2[0]],
                         max(d1.itemsize, d2.itemsize), TILE_BYTES)[0]

    def tile(region):
        rb, rm, rn = region[:len(batch)], region[len(batch):len(batch) + len(m)], \
            region[len(batch) + len(m):]
        acc = np.zeros(tuple(r.stop - r.start for r in region), dtype)
        for k in _steps(s1[-1], ks):
            key1 = _batch_key(rb, b1, batch) + tuple(rm) + (k,)
            key2 = _batch_key(rb, b2, batch) + ((k,) + tuple(rn) if not v2 else (k,))
            acc += np.matmul(np.asarray(x1[key1]), np.asarray(x2[key2]))
        return acc

    chunks = chunks or tuple([1] * len(batch) + [min(c1[-2], s1[-2])] * len(m) +
                             [min(c2[-1], s2[-1])] * len(n))
    return _emit(shape, dtype, tile, chunks, blocks, out, storage)


def _batch_key(rb, own, batch):
    """The key of an operand's batch dimensions for output batch region `rb`."""
    lead = len(batch) - len(own)
    return tuple(slice(0, 1) if own[i] == 1 else rb[lead + i] for i in range(len(own)))


def vecdot(x1, x2, axis=-1, **storage):
    """``sum(conj(x1) * x2, axis=axis)`` (array API), streamed: returns NumPy."""
    from ndpack.engine.lazyexpr import LazyExpr, _node
    from ndpack.engine.reductions import sum as nd_sum
    from ndpack.engine.tree import Apply
    e = LazyExpr(Apply("multiply", (Apply("conj", (_node(x1),)), _node(x2))))
    return nd_sum(e, axis=axis)


def outer(x1, x2, **storage):
    """The outer product of two vectors (flattened as in NumPy), chunk by chunk."""
    x1, s1, _ = _shape_dtype(x1)
    x2, s2, _ = _shape_dtype(x2)
    if len(s1) != 1 or len(s2) != 1:
        raise ValueError("outer: takes 1-D arrays (use tensordot(x1, x2, axes=0) for more)")
    return tensordot(x1, x2, axes=0, **storage)


def result_shape(op: str, s1: tuple, s2: tuple, kwargs: dict) -> tuple:
    """Shape of ``op(x1, x2, **kwargs)`` for operands of shapes `s1`, `s2` (checks
    that they fit, with NumPy's messages)."""
    s1, s2 = tuple(s1), tuple(s2)
    if op == "tensordot":
        ax1, ax2 = _norm_axes(kwargs.get("axes", 2), len(s1), len(s2))
        for a, b in zip(ax1, ax2):
            if s1[a] != s2[b]:
                raise ValueError(f"tensordot: axis {a} of the first array has {s1[a]}, "
                                 f"axis {b} of the second {s2[b]}")
        return tuple(n for d, n in enumerate(s1) if d not in ax1) + \
            tuple(n for d, n in enumerate(s2) if d not in ax2)
    if op == "outer":
        if len(s1) != 1 or len(s2) != 1:
            raise ValueError("outer: takes 1-D arrays")
        return s1 + s2
    if op == "vecdot":
        try:
            full = tuple(np.broadcast_shapes(s1, s2))
        except ValueError:
            raise ValueError(f"vecdot: shapes {s1} and {s2} do not broadcast") from None
        axis = kwargs.get("axis", -1)
        if not full or not -len(full) <= axis < len(full):
            raise ValueError(f"vecdot: axis {axis} out of range for shape {full}")
        axis %= len(full)
        if s1[axis - len(full)] != s2[axis - len(full)]:
            raise ValueError(f"vecdot: the arrays differ along axis {axis}")
        return full[:axis] + full[axis + 1:]
    if op == "matmul":
        if not s1 or not s2:
            raise ValueError("matmul: operands must have at least one dimension")
        k2 = s2[-2] if len(s2) > 1 else s2[0]
        if s1[-1] != k2:
            raise ValueError(f"matmul: the first array has {s1[-1]} columns, the second "
                             f"{k2} rows")
        b1 = s1[:-2] if len(s1) > 1 else ()
        b2 = s2[:-2] if len(s2) > 1 else ()
        try:
            batch = tuple(np.broadcast_shapes(b1, b2))
        except ValueError:
            raise ValueError(f"matmul: batch dimensions {b1} and {b2} do not broadcast") \
                from None
        return batch + ((s1[-2],) if len(s1) > 1 else ()) + ((s2[-1],) if len(s2) > 1 else ())
    raise ValueError(f"unknown product {op!r}")


def compute_contract(node, operand):
    """Compute a Contract node; `operand(child)` turns a child node into an
    array-like (an operand's array, or a lazy expression)."""
    x1, x2 = (operand(a) for a in node.args)
    fn = {"matmul": matmul, "tensordot": tensordot, "vecdot": vecdot, "outer": outer}[node.op]
    return fn(x1, x2, **node.kwargs)
