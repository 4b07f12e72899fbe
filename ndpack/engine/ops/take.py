"""Taking items by index: ``take`` (along an axis, or of the flattened array) and
``take_along_axis``, as NumPy's and the array API standard's.  Only the chunks holding
the indices are decoded (fancy indexing of NDArray); a foreign array is read whole.
"""

from __future__ import annotations

import numpy as np

from ndpack.engine.expr.axes import normalize_axis
from ndpack.engine.ops.shape import as_array
from ndpack.storage.constructors import asarray
from ndpack.storage.grid import prod
from ndpack.storage.ndarray import NDArray

__all__ = ["take", "take_along_axis"]


def take(x, indices, axis=None, **kwargs) -> NDArray:
    """Items of `x` at `indices` along `axis` (of the flattened array when None).

    Only the chunks holding the indices are decoded (fancy indexing of NDArray);
    a foreign `x` is read whole.

    Examples
    --------
    >>> import ndpack
    >>> a = ndpack.arange(12, shape=(3, 4))
    >>> take(a, [2, 0], axis=1)[:].tolist()
    [[2, 0], [6, 4], [10, 8]]
    >>> take(a, [[11, 0]])[:].tolist()
    [[11, 0]]
    """
    x = as_array(x)
    idx = np.asarray(indices[()] if isinstance(indices, NDArray) else indices)
    if idx.size == 0 and idx.dtype.kind not in "iu":
        idx = idx.astype(np.intp)           # ``[]`` is float64 to NumPy, but selects nothing
    if idx.dtype.kind not in "iu":          # np.take's exception type
        raise TypeError(f"indices must be integers, not {idx.dtype}")
    if axis is None:
        size = prod(x.shape)
        if idx.size and (idx.min() < -size or idx.max() >= size):
            raise IndexError(f"index out of bounds for an array of size {size}")
        flat = np.unravel_index(idx.reshape(-1) % max(size, 1), tuple(x.shape))
        src = x if isinstance(x, NDArray) else np.asarray(x[()])
        res = src.vindex[flat] if isinstance(src, NDArray) else src[flat]
        res = np.asarray(res).reshape(idx.shape)
    else:
        axis = normalize_axis(axis, len(x.shape))
        key = (slice(None),) * axis + (idx,)
        res = x[key] if isinstance(x, NDArray) else np.asarray(x[()])[key]
    return asarray(np.asarray(res), **kwargs)


def take_along_axis(x, indices, axis=-1, **kwargs) -> NDArray:
    """Items of `x` picked along `axis` by `indices` (same number of dimensions,
    broadcast with `x` along the other axes), as ``np.take_along_axis``.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.array([[10, 30, 20], [60, 40, 50]]))
    >>> take_along_axis(a, np.argsort(a[:], axis=1), axis=1)[:].tolist()
    [[10, 20, 30], [40, 50, 60]]
    """
    x = as_array(x)
    idx = np.asarray(indices[()] if isinstance(indices, NDArray) else indices)
    nd = len(x.shape)
    if idx.ndim != nd:
        raise ValueError(f"indices and x must have the same number of dimensions "
                         f"({idx.ndim} != {nd})")
    if idx.dtype.kind not in "iu":
        raise IndexError(f"indices must be integers, not {idx.dtype}")
    axis = normalize_axis(axis, nd)
    key = []
    for d in range(nd):
        if d == axis:
            key.append(idx)
        else:
            shp = [1] * nd
            shp[d] = x.shape[d]
            key.append(np.arange(x.shape[d]).reshape(shp))
    key = tuple(key)
    res = x[key] if isinstance(x, NDArray) else np.asarray(x[()])[key]
    return asarray(np.asarray(res), **kwargs)
