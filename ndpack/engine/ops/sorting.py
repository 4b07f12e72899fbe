"""Sorting, searching and set functions of the array API standard.

``sort``, ``argsort``, ``searchsorted``, ``nonzero`` and the ``unique_*`` functions
follow the standard's semantics (stable sorts, NaNs last when ascending and first when
descending, every NaN its own unique value, int64 indices) and return NDArrays.

* ``sort``/``argsort`` run out of core (:mod:`~ndpack.engine.ops.mergesort`): tiles of
  whole lanes in parallel, longer lanes as compressed runs and a k-way merge
  (:mod:`~ndpack.engine.ops.merge`).
* the ``unique_*`` functions are run lengths over the sorted stream of the flattened
  input (:mod:`~ndpack.engine.ops.uniques`).
* ``searchsorted`` of a sorted 1-d NDArray reads only the blocks the values fall in.
* ``nonzero`` streams its input twice (:mod:`~ndpack.engine.ops.nonzero`).

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.array([3.0, 1.0, np.nan, 2.0, 1.0]))
>>> ndpack.sort(a)[()].tolist()
[1.0, 1.0, 2.0, 3.0, nan]
>>> ndpack.argsort(a, descending=True)[()].tolist()
[2, 0, 3, 1, 4]
>>> ndpack.unique_counts(a).counts[()].tolist()
[2, 1, 1, 1]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ndpack.engine.ops import index as _index   # the sorted index (searchsorted, nonzero)
from ndpack.engine.ops.mergesort import sort_array
from ndpack.engine.ops.nonzero import nonzero as _nonzero
from ndpack.engine.ops.uniques import unique
from ndpack.storage.constructors import asarray
from ndpack.storage.ndarray import NDArray

__all__ = ["sort", "argsort", "searchsorted", "nonzero", "unique_all", "unique_counts",
           "unique_inverse", "unique_values", "UniqueAllResult", "UniqueCountsResult",
           "UniqueInverseResult"]


def _values(x, name: str) -> np.ndarray:
    """The whole input as NumPy (NDArray, LazyExpr, any array-like)."""
    if isinstance(x, (bool, int, float, complex)):
        raise TypeError(f"{name}() takes an array, not a Python {type(x).__name__}")
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__getitem__"):
        return np.asarray(x[...])
    return np.asarray(x)


def _result(values: np.ndarray, like=None) -> NDArray:
    """An NDArray of `values`, stored with `like`'s chunks when shapes agree."""
    if isinstance(like, NDArray) and like.shape == values.shape and values.ndim:
        return asarray(values, chunks=like.chunks, blocks=like.blocks)
    return asarray(values)


def sort(x, /, *, axis=-1, descending=False, stable=True, urlpath=None, order=None,
         **kwargs) -> NDArray:
    """`x` sorted along `axis`, out of core.

    Parameters
    ----------
    x : NDArray, LazyExpr or array-like
        Anything with ``shape``, ``dtype`` and ``__getitem__`` (NumPy, h5py, zarr), of
        at least one dimension; structured dtypes sort in memory by their fields.
    axis : int
        The axis to sort along (an AxisError when out of range).
    descending : bool
        Largest first; equal values keep their order (NaNs come first).
    stable : bool
        Equal values keep their order (the default; ``False`` allows any order of
        equal values, which only shows for -0.0/0.0 and NaNs).
    urlpath : str, optional
        Write the result to this file (``mode='w'`` replaces an existing one; it
        appears under its name only once complete).
    order : str or list of str, optional
        python-blosc2's and NumPy's: the fields of a structured dtype to sort by, first
        to last, ties broken by the other fields in turn (NumPy's rule, which
        python-blosc2's argsort follows; its sort keeps ties in their order); without
        it every field in turn.  Other dtypes refuse it (ValueError, as NumPy).
    **kwargs
        Storage of the result: ``chunks``, ``blocks`` (default: the input's),
        ``cparams``, ``dparams``, ``contiguous``, ``mode``.

    Returns
    -------
    NDArray
        NaNs last (first when descending), as NumPy.  Tiles of the array holding whole
        lines along `axis` are sorted in parallel; lines longer than the memory budget
        are sorted as runs merged on disk (see :mod:`ndpack.engine.ops.mergesort`).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.array([[2.0, np.nan, -1.0], [0.0, 3.0, 0.5]]), chunks=(1, 2))
    >>> ndpack.sort(a)[()].tolist()
    [[-1.0, 2.0, nan], [0.0, 0.5, 3.0]]
    >>> ndpack.sort(a, axis=0, descending=True)[()].tolist()
    [[2.0, nan, 0.5], [0.0, 3.0, -1.0]]
    >>> r = np.array([(3, 1.0), (1, 5.0), (1, 2.0)], dtype=[("a", "i4"), ("b", "f8")])
    >>> ndpack.sort(r, order="a")[()].tolist()
    [(1, 2.0), (1, 5.0), (3, 1.0)]
    """
    if order is not None or getattr(getattr(x, "dtype", None), "names", None) is not None:
        return _by_fields(x, order, axis, descending, False, urlpath, kwargs)
    return sort_array(x, axis, descending, stable, False, urlpath, "sort", **kwargs)


def argsort(x, /, *, axis=-1, descending=False, stable=True, urlpath=None, order=None,
            **kwargs) -> NDArray:
    """Positions (int64) that sort `x` along `axis`, as :func:`sort` orders it, out of
    core (parameters as :func:`sort`).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> ndpack.argsort(np.array([3, 1, 2, 1]))[()].tolist()
    [1, 3, 2, 0]
    >>> ndpack.argsort(np.array([3, 1, 2, 1]), descending=True)[()].tolist()
    [0, 2, 1, 3]
    """
    if order is not None or getattr(getattr(x, "dtype", None), "names", None) is not None:
        return _by_fields(x, order, axis, descending, True, urlpath, kwargs)
    return sort_array(x, axis, descending, stable, True, urlpath, "argsort", **kwargs)


def _by_fields(x, order, axis, descending, positions, urlpath, kwargs) -> NDArray:
    """sort/argsort of a structured array by the fields `order` (all when None), in
    memory; ties keep their order."""
    names = np.dtype(x.dtype).names
    if names is None:
        raise ValueError("order= needs a structured dtype (an array with fields), not "
                         f"{np.dtype(x.dtype)}")
    fields = list(names) if order is None else [order] if isinstance(order, str) else list(order)
    for f in fields:
        if f not in names:
            raise ValueError(f"order={order!r}: no field named {f!r} (fields: {names})")
    values = np.asarray(x[()])
    if values.ndim == 0:
        raise ValueError("sort needs at least one dimension")
    idx = np.argsort(values, axis=axis, kind="stable", order=fields)
    if descending:                  # largest first, ties still in their order
        idx = np.flip(np.argsort(np.flip(values, axis), axis=axis, kind="stable",
                                 order=fields), axis)
        idx = values.shape[axis] - 1 - idx
    out = idx.astype(np.int64) if positions else np.take_along_axis(values, idx, axis)
    return asarray(out, urlpath=urlpath, **kwargs)


def searchsorted(x1, x2, /, *, side="left", sorter=None) -> NDArray:
    """Positions (int64) where the values of `x2` would be inserted into the sorted
    1-d `x1` (`sorter`: positions that sort `x1`) to keep it sorted.

    A 1-d NDArray `x1` (without `sorter`) is searched where it is stored: the first
    items of its chunks and of the touched chunks' blocks are read, and only the blocks
    the values fall in are decoded; other inputs are searched in memory.  An `x1` with
    an index (:meth:`NDArray.create_index`, not stale and with no chunk written since)
    is searched in the index's sorted values, with or without `sorter`: the result is
    NumPy's when `x1` is sorted and, when it is not, the positions in ``sort(x1)``
    (``np.searchsorted(x1, x2, sorter=np.argsort(x1))``).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.array([1.0, 2.0, 2.0, 5.0]))
    >>> ndpack.searchsorted(a, np.array([2.0, 6.0]), side="right")[()].tolist()
    [3, 4]
    >>> b = ndpack.asarray(np.array([5.0, 1.0, 2.0, 2.0]))
    >>> _ = b.create_index()
    >>> ndpack.searchsorted(b, np.array([2.0, 6.0]))[()].tolist()
    [1, 4]
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', not {side!r}")
    v = np.asarray(x2) if isinstance(x2, (int, float, bool)) else _values(x2, "searchsorted")
    if isinstance(x1, NDArray) and x1.ndim == 1:
        indexed = _index.sorted_values(x1)        # a whole index: its sorted values
        if indexed is not None:
            return _result(np.asarray(_search_stored(indexed, v, side)))
    if isinstance(x1, NDArray) and x1.ndim == 1 and sorter is None:
        return _result(np.asarray(_search_stored(x1, v, side)))
    a = _values(x1, "searchsorted")
    if a.ndim != 1:
        raise ValueError(f"searchsorted needs a 1-d x1, not {a.ndim}-d")
    s = None if sorter is None else _values(sorter, "searchsorted")
    out = np.searchsorted(a, v, side=side, sorter=s).astype(np.int64)
    return _result(np.asarray(out))


def _search_stored(x: NDArray, v: np.ndarray, side: str) -> np.ndarray:
    """``np.searchsorted(x, v, side)`` for a sorted 1-d NDArray without decoding it:
    the first item of every chunk (one batch of point reads), then the first item of
    every block of the chunks the values fall in, then only the blocks they fall in.

    For each level, the answer lies in the part before the first one whose first item
    is >= the value (``"left"``; > for ``"right"``): that part's own search, offset by
    its start, or the next part's start when every item of it is smaller."""
    n = x.shape[0]
    flat = v.reshape(-1)
    out = np.zeros(flat.shape, dtype=np.int64)
    if n == 0 or flat.size == 0:
        return out.reshape(v.shape)
    chunk, block = x.chunks[0], x.blocks[0]
    starts = np.arange(0, n, chunk)
    firsts = np.asarray(x[starts])
    k = np.searchsorted(firsts, flat, side=side) - 1           # the part before
    inside = k >= 0                                             # else: position 0
    for c in np.unique(k[inside]):
        sel = np.flatnonzero(k == c)
        lo, hi = int(starts[c]), min(int(starts[c]) + chunk, n)
        bstarts = np.arange(lo, hi, block)
        bfirsts = np.asarray(x[bstarts])
        b = np.searchsorted(bfirsts, flat[sel], side=side) - 1  # >= 0: bfirsts[0] is
        for j in np.unique(b):                                  # firsts[c], already below
            bsel = sel[b == j]
            b0, b1 = int(bstarts[j]), min(int(bstarts[j]) + block, hi)
            items = np.asarray(x[b0:b1])                       # decodes that block only
            out[bsel] = b0 + np.searchsorted(items, flat[bsel], side=side)
    return out.reshape(v.shape)


def nonzero(x, /) -> tuple:
    """One int64 NDArray per dimension: the coordinates of the nonzero elements of `x`
    (in C order), in two streamed passes (count, then fill: see
    :mod:`ndpack.engine.ops.nonzero`).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> rows, cols = ndpack.nonzero(np.array([[0, 1], [2, 0]]))
    >>> rows[()].tolist(), cols[()].tolist()
    ([0, 1], [1, 0])

    A condition on an array with an index (:meth:`NDArray.create_index`) is answered
    from the index when it selects few items:

    >>> a = ndpack.asarray(np.array([4.0, 9.0, 1.0, 7.0]))
    >>> _ = a.create_index()
    >>> ndpack.nonzero((a > 3) & (a < 8))[0][()].tolist()
    [0, 3]
    """
    if hasattr(x, "node") and getattr(x, "shape", ()):
        pos = _index.positions_where(x)
        if pos is not None:
            coords = np.unravel_index(pos, x.shape) if len(x.shape) > 1 else (pos,)
            return tuple(asarray(np.asarray(c, np.int64)) for c in coords)
    return _nonzero(x)


class UniqueAllResult(NamedTuple):
    values: NDArray
    indices: NDArray
    inverse_indices: NDArray
    counts: NDArray


class UniqueCountsResult(NamedTuple):
    values: NDArray
    counts: NDArray


class UniqueInverseResult(NamedTuple):
    values: NDArray
    inverse_indices: NDArray


def unique_values(x, /) -> NDArray:
    """The distinct values of `x`, sorted, out of core (a 1-d NDArray; -0.0 and 0.0 are
    one value, every NaN is its own, last).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> ndpack.unique_values(np.array([2.0, np.nan, 2.0, -1.0, np.nan]))[()].tolist()
    [-1.0, 2.0, nan, nan]
    """
    return unique("unique_values", x)


def unique_counts(x, /) -> UniqueCountsResult:
    """``(values, counts)``: the distinct values of `x` and how often each occurs (out
    of core, see :func:`unique_values`).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> r = ndpack.unique_counts(np.array([[1, 3], [3, 3]]))
    >>> r.values[()].tolist(), r.counts[()].tolist()
    ([1, 3], [1, 3])
    """
    return UniqueCountsResult(*unique("unique_counts", x))


def unique_inverse(x, /) -> UniqueInverseResult:
    """``(values, inverse_indices)``: the distinct values and, for every element of `x`
    (same shape, and the chunks of an NDArray `x`), the position of its value among
    them (out of core).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> r = ndpack.unique_inverse(np.array([[5, 1], [1, 7]]))
    >>> r.values[()].tolist(), r.inverse_indices[()].tolist()
    ([1, 5, 7], [[1, 0], [0, 2]])
    """
    return UniqueInverseResult(*unique("unique_inverse", x))


def unique_all(x, /) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)``: the distinct values, the first
    position of each in the flattened `x`, the inverse indices and the counts (out of
    core).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> r = ndpack.unique_all(np.array([4, 2, 4, 4]))
    >>> [v[()].tolist() for v in r]
    [[2, 4], [1, 0], [1, 0, 1, 1], [1, 3]]
    """
    return UniqueAllResult(*unique("unique_all", x))
