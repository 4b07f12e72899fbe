"""More manipulation functions of the array API standard, written chunk by chunk.

``broadcast_arrays``, ``meshgrid``, ``tile``, ``repeat``, ``unstack``, ``tril``,
``triu`` and ``diff`` build NDArrays one output chunk at a time: each chunk reads only
the part of the input it needs (for ``tile`` and ``repeat``, the source positions of
its region, read as a few contiguous boxes), so memory stays at a few chunks whatever
the sizes.  Inputs are NDArrays, lazy expressions or any array-like; the results keep
an NDArray input's compression parameters and take ``chunks=``, ``urlpath=`` and the
other storage keywords of the constructors.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(6).reshape(2, 3))
>>> ndpack.tile(a, (1, 2))[()].tolist()
[[0, 1, 2, 0, 1, 2], [3, 4, 5, 3, 4, 5]]
>>> ndpack.repeat(a, 2, axis=0)[()].tolist()
[[0, 1, 2], [0, 1, 2], [3, 4, 5], [3, 4, 5]]
>>> ndpack.triu(a, k=1)[()].tolist()
[[0, 1, 2], [0, 0, 5]]
"""

from __future__ import annotations

import itertools
import operator

import numpy as np

from ndpack.engine.expr.axes import normalize_axis
from ndpack.engine.ops.shape import (as_array, broadcast_to, concat, fill_chunks,
                                     layout_keywords, read_values, reshape)
from ndpack.engine.ops.sorting import unique_values
from ndpack.storage.ndarray import NDArray, create

__all__ = ["broadcast_arrays", "broadcast_shapes", "meshgrid", "tile", "repeat", "unstack",
           "tril", "triu", "diff", "isin"]


def _new(shape, x, kwargs) -> NDArray:
    """An empty NDArray of `shape` for results of `x` (its cparams unless given)."""
    return create(tuple(int(s) for s in shape), x.dtype, **layout_keywords(x, kwargs))


def _runs(sorted_unique: np.ndarray) -> list:
    """``(src_start, src_stop, dst_start)`` of the runs of consecutive values."""
    if sorted_unique.size == 0:
        return []
    cuts = np.flatnonzero(np.diff(sorted_unique) != 1) + 1
    starts = np.concatenate(([0], cuts))
    stops = np.concatenate((cuts, [sorted_unique.size]))
    return [(int(sorted_unique[a]), int(sorted_unique[b - 1]) + 1, int(a))
            for a, b in zip(starts, stops)]


def _gather(x, maps) -> np.ndarray:
    """``x[np.ix_(*maps)]`` reading only the distinct source positions, as boxes of
    consecutive positions (one or two per dimension for tile and repeat)."""
    uniq = [np.unique(m) for m in maps]
    buf = np.empty(tuple(u.size for u in uniq), dtype=x.dtype)
    for combo in itertools.product(*[_runs(u) for u in uniq]):
        src = tuple(slice(a, b) for a, b, _ in combo)
        dst = tuple(slice(d, d + b - a) for a, b, d in combo)
        buf[dst] = read_values(x, src)
    pos = [np.searchsorted(u, m) for u, m in zip(uniq, maps)]
    return buf[np.ix_(*pos)]


def broadcast_arrays(*arrays) -> list:
    """The arrays broadcast against each other (NumPy's rules), as NDArrays."""
    arrays = [as_array(a) for a in arrays]
    shape = np.broadcast_shapes(*[tuple(a.shape) for a in arrays])
    return [broadcast_to(a, shape) for a in arrays]


def meshgrid(*arrays, indexing="xy", **kwargs) -> list:
    """Coordinate grids from 1-d arrays (``indexing="xy"``: Cartesian, the first two
    axes swapped; ``"ij"``: matrix), each an NDArray of the grid's shape."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', not {indexing!r}")
    arrays = [as_array(a) for a in arrays]
    for a in arrays:
        if len(a.shape) != 1:
            raise ValueError(f"meshgrid takes 1-d arrays, not shape {tuple(a.shape)}")
    if len({np.dtype(a.dtype) for a in arrays}) > 1:
        raise TypeError("meshgrid's arrays must share one dtype")
    n = len(arrays)
    shape = [a.shape[0] for a in arrays]
    axis = list(range(n))
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
        axis[0], axis[1] = 1, 0
    out = []
    for i, a in enumerate(arrays):
        grid = _new(shape, a, kwargs)

        def producer(reg, a=a, d=axis[i]):
            vals = np.asarray(read_values(a, reg[d]))
            view = [1] * n
            view[d] = vals.size
            return np.broadcast_to(vals.reshape(view), tuple(r.stop - r.start for r in reg))
        out.append(fill_chunks(grid, producer))
    return out


def tile(x, repetitions, /, **kwargs) -> NDArray:
    """`x` repeated `repetitions[d]` times along each dimension (NumPy's ``tile``;
    shorter tuples apply to the last dimensions, longer ones add leading ones)."""
    x = as_array(x)
    reps = tuple(operator.index(r) for r in repetitions)
    if any(r < 0 for r in reps):
        raise ValueError(f"repetitions must be non-negative, not {reps}")
    nd = max(len(reps), len(x.shape))
    src = (1,) * (nd - len(x.shape)) + tuple(x.shape)
    reps = (1,) * (nd - len(reps)) + reps
    shape = tuple(s * r for s, r in zip(src, reps))
    out = _new(shape, x, kwargs)
    lead = nd - len(x.shape)

    def producer(reg):
        maps = [np.arange(r.start, r.stop) % src[d] for d, r in enumerate(reg)]
        part = _gather(x, maps[lead:])          # leading dimensions of size 1: broadcast
        return np.broadcast_to(part.reshape((1,) * lead + part.shape),
                               tuple(m.size for m in maps))

    return fill_chunks(out, producer)


def repeat(x, repeats, /, *, axis=None, **kwargs) -> NDArray:
    """Each element of `x` repeated `repeats` times (an int, or one count per element
    along `axis`); ``axis=None`` repeats the flattened array."""
    x = as_array(x)
    if axis is None:                                          # the flattened input
        x = reshape(x, (-1,)) if len(x.shape) != 1 else x
        axis = 0
    ax = normalize_axis(axis, len(x.shape))
    n = x.shape[ax]
    counts = np.asarray(repeats[...] if hasattr(repeats, "__array_namespace__") else repeats)
    if counts.dtype.kind not in "iu":
        raise TypeError(f"repeats must be integers, not {counts.dtype}")
    counts = np.broadcast_to(counts, (n,)) if counts.ndim == 0 else counts
    if counts.shape != (n,):
        raise ValueError(f"repeats has {counts.size} counts for an axis of length {n}")
    if (counts < 0).any():
        raise ValueError("repeats must be non-negative")
    ends = np.cumsum(counts, dtype=np.int64)
    shape = tuple(int(ends[-1]) if d == ax and n else (0 if d == ax else s)
                  for d, s in enumerate(x.shape))
    out = _new(shape, x, kwargs)

    def producer(reg):
        maps = [np.arange(r.start, r.stop) for r in reg]
        maps[ax] = np.searchsorted(ends, maps[ax], side="right")
        return _gather(x, maps)

    return fill_chunks(out, producer)


def unstack(x, /, *, axis=0, **kwargs) -> tuple:
    """The slices of `x` along `axis`, as a tuple of NDArrays."""
    x = as_array(x)
    if not len(x.shape):
        raise ValueError("unstack needs an array of at least one dimension")
    ax = normalize_axis(axis, len(x.shape))
    shape = tuple(s for d, s in enumerate(x.shape) if d != ax)
    parts = []
    for i in range(x.shape[ax]):
        part = _new(shape, x, kwargs)

        def producer(reg, i=i):
            key = list(reg)
            key.insert(ax, i)
            return read_values(x, tuple(key))
        parts.append(fill_chunks(part, producer))
    return tuple(parts)


def _triangle(x, k, lower: bool, kwargs) -> NDArray:
    x = as_array(x)
    if len(x.shape) < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} needs at least 2 dimensions")
    k = operator.index(k)
    out = _new(x.shape, x, kwargs)

    def producer(reg):
        vals = np.asarray(read_values(x, reg))
        rows = np.arange(reg[-2].start, reg[-2].stop)[:, None]
        cols = np.arange(reg[-1].start, reg[-1].stop)[None, :]
        keep = (cols - rows <= k) if lower else (cols - rows >= k)
        return np.where(keep, vals, np.zeros((), vals.dtype))

    return fill_chunks(out, producer)


def tril(x, /, *, k=0, **kwargs) -> NDArray:
    """`x` with the elements above the `k`-th diagonal (of the last two dimensions)
    set to zero."""
    return _triangle(x, k, True, kwargs)


def triu(x, /, *, k=0, **kwargs) -> NDArray:
    """`x` with the elements below the `k`-th diagonal set to zero."""
    return _triangle(x, k, False, kwargs)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None, **kwargs) -> NDArray:
    """The `n`-th discrete difference along `axis` (``out[i] = x[i+1] - x[i]``,
    applied `n` times), after `prepend`/`append` are joined to `x` along it."""
    x = as_array(x)
    if not len(x.shape):
        raise ValueError("diff needs an array of at least one dimension")
    ax = normalize_axis(axis, len(x.shape))
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"n must be non-negative, not {n}")
    if n == 0:                            # NumPy's rule: x itself, prepend/append unused
        return x if isinstance(x, NDArray) else concat([x], axis=ax)
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, x, append) if p is not None]
        x = concat([as_array(p) for p in parts], axis=ax)
    length = max(x.shape[ax] - n, 0)
    shape = tuple(length if d == ax else s for d, s in enumerate(x.shape))
    dtype = np.diff(np.zeros((2,) * len(x.shape), x.dtype), axis=ax).dtype
    out = create(shape, dtype, **layout_keywords(x, kwargs))

    def producer(reg):
        key = list(reg)
        key[ax] = slice(reg[ax].start, reg[ax].stop + n)
        return np.diff(read_values(x, tuple(key)), n=n, axis=ax)

    return fill_chunks(out, producer)


# ---------------------------------------------------------------------------------------
# the standard's 2025.12 additions


def broadcast_shapes(*shapes) -> tuple:
    """The shape that `shapes` broadcast to (array API 2025.12; NumPy's rules): a
    ValueError when they do not broadcast.

    Examples
    --------
    >>> import ndpack
    >>> ndpack.broadcast_shapes((2, 1), (3,), ())
    (2, 3)
    """
    return tuple(int(d) for d in np.broadcast_shapes(*[tuple(s) for s in shapes]))


def isin(x1, x2, /, *, invert=False, **kwargs) -> NDArray:
    """Whether each element of `x1` is among the elements of `x2` (array API 2025.12;
    ``~`` of that with ``invert=True``), as a boolean NDArray of `x1`'s shape.

    `x2`'s distinct values are found first (out of core for big arrays:
    :func:`~ndpack.engine.ops.sorting.unique_values`), then `x1` is tested chunk by
    chunk.  Either argument (not both) may be a Python scalar; NaN is never found.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(6).reshape(2, 3))
    >>> ndpack.isin(a, ndpack.asarray(np.array([1, 4, 9])))[()].tolist()
    [[False, True, False], [False, True, False]]
    >>> ndpack.isin(a, 2, invert=True)[()].tolist()
    [[True, True, False], [True, True, True]]
    """
    scalars = (bool, int, float, complex)
    if type(x1) in scalars and type(x2) in scalars:
        raise TypeError("isin() needs at least one array argument")
    if type(x2) in scalars:
        values = np.asarray([x2], dtype=np.result_type(as_array(x1).dtype, type(x2))
                            if type(x2) is not bool else bool)
    else:
        x2 = as_array(x2)
        values = np.asarray(unique_values(x2)[()]) if x2.ndim and isinstance(
            x2, NDArray) else np.unique(np.asarray(x2[()]))
    if type(x1) in scalars:
        return _scalar_isin(x1, values, invert)
    x1 = as_array(x1)
    out = create(tuple(x1.shape), np.bool_, **layout_keywords(x1, kwargs, cparams=False))
    return fill_chunks(out, lambda reg: np.isin(read_values(x1, reg), values, invert=invert))


def _scalar_isin(x1, values, invert):
    from_value = np.isin(np.asarray(x1), values, invert=invert)
    out = create((), np.bool_)
    return fill_chunks(out, lambda reg: from_value)
