"""Views for subscripts and ``.T`` inside string expressions.

``lazyexpr("a[1:3, ::2] + b.T")`` reads ``a`` and ``b`` through a :class:`SliceView`
and a :class:`TransposeView`.  A view has ``shape``, ``dtype`` and ``__getitem__``, so
it is an ordinary operand to the evaluator: a request on the view is composed with the
view's own key (slices compose arithmetically, a transpose reverses the key and
transposes the result) and only the needed part of the base is read.  The base is
anything with ``shape``, ``dtype`` and ``__getitem__`` (an NDArray, a NumPy, h5py or
zarr array, or a LazyExpr for a subscripted sub-expression).  Only constant integers,
slices (any step, negative too), ``None`` and ``...`` are accepted.

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.expr.views import SliceView, TransposeView
>>> x = np.arange(24).reshape(4, 6)
>>> v = SliceView(x, (slice(None, None, -1), slice(1, 6, 2)))
>>> v.shape, v[1:3, 1].tolist() == x[::-1, 1:6:2][1:3, 1].tolist()
((4, 3), True)
>>> t = TransposeView(v)
>>> t.shape, bool((t[:, ::2] == x[::-1, 1:6:2].T[:, ::2]).all())
((3, 4), True)
"""

from __future__ import annotations

import operator

import numpy as np

__all__ = ["SliceView", "TransposeView", "normalize_key"]


def normalize_key(key, shape: tuple) -> list:
    """`key` expanded against `shape`: a list with, per entry, an ``int`` (a
    dimension dropped), a ``range`` (the indices a slice selects) or ``None`` (a new
    axis).  Anything else (arrays, booleans, floats) is a ValueError or IndexError."""
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_real > len(shape):
        raise IndexError(f"too many indices: {n_real} for {len(shape)} dimensions")
    out, d = [], 0
    for k in key:
        if k is Ellipsis:
            for _ in range(len(shape) - n_real):
                out.append(range(shape[d]))
                d += 1
        elif k is None:
            out.append(None)
        elif isinstance(k, slice):
            out.append(range(shape[d])[k])
            d += 1
        elif isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise ValueError(f"only integers, slices, None and ... index a view, not "
                             f"{type(k).__name__}")
        else:
            i = operator.index(k)
            if not -shape[d] <= i < shape[d]:
                raise IndexError(f"index {i} is out of bounds for axis {d} with size "
                                 f"{shape[d]}")
            out.append(i % shape[d])
            d += 1
    while d < len(shape):
        out.append(range(shape[d]))
        d += 1
    return out


def _as_slice(r: range) -> slice:
    """A positive-step slice holding the indices of `r` (in increasing order)."""
    if len(r) == 0:
        return slice(0, 0)
    if r.step < 0:
        r = r[::-1]
    return slice(r.start, r[-1] + 1, r.step)


def _compose(own: range, req: range) -> range:
    """The indices ``own[i] for i in req`` as a range."""
    if len(req) == 0:
        return range(0)
    start, step = own[req.start], own.step * req.step
    return range(start, start + step * len(req), step)


def read(base, items: list) -> np.ndarray:
    """``base[items]`` for items from :func:`normalize_key` (no ``None``): the base is
    asked only positive-step slices and integers (h5py accepts nothing else);
    negative steps are applied here by flipping."""
    key, flip = [], []
    for it in items:
        if isinstance(it, range):
            key.append(_as_slice(it))
            flip.append(slice(None, None, -1) if it.step < 0 and len(it) > 1 else slice(None))
        else:
            key.append(it)
    if any(len(r) == 0 for r in items if isinstance(r, range)):
        shape = [len(r) for r in items if isinstance(r, range)]
        return np.empty(shape, np.dtype(base.dtype))
    res = np.asarray(base[tuple(key)])
    if any(f.step for f in flip):
        res = res[tuple(flip)]
    return res


class _View:
    """Common part: metadata of the view."""

    __array_priority__ = 0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __array__(self, dtype=None, copy=None):
        res = self[()]
        return res if dtype is None else res.astype(dtype)

    def __getitem__(self, key) -> np.ndarray:
        items = normalize_key(key, self.shape)
        # the view's own dimensions, then new axes put back by a reshape
        inner = [it for it in items if it is not None]
        out_shape = tuple(1 if it is None else len(it) for it in items
                          if not isinstance(it, int))
        return self._get(inner).reshape(out_shape)


class SliceView(_View):
    """``base[key]`` for a constant key of integers, slices, ``None`` and ``...``.

    Parameters
    ----------
    base : array-like
        Anything with ``shape``, ``dtype`` and ``__getitem__``.
    key : index
        A basic index (no arrays).
    """

    def __init__(self, base, key):
        self.base = base
        self.key = key
        self.dtype = np.dtype(base.dtype)
        base_shape = tuple(int(s) for s in base.shape)
        self._items = normalize_key(key, base_shape)
        # per view dimension: the position in _items it comes from
        self._dims = [i for i, it in enumerate(self._items) if not isinstance(it, int)]
        self.shape = tuple(1 if self._items[i] is None else len(self._items[i])
                           for i in self._dims)

    def _get(self, request: list) -> np.ndarray:
        items = list(self._items)
        for pos, req in zip(self._dims, request):
            own = items[pos]
            if own is None:                  # a new axis of size 1
                items[pos] = None if isinstance(req, range) else "drop"
                if isinstance(req, range) and len(req) == 0:
                    items[pos] = "empty"
            else:
                items[pos] = _compose(own, req) if isinstance(req, range) else own[req]
        if "empty" in items:
            shape = [0 if it == "empty" else len(it) for it in items
                     if isinstance(it, range) or it == "empty"]
            return np.empty(shape, self.dtype)
        base_items = [it for it in items if it is not None and not isinstance(it, str)]
        res = read(self.base, base_items)
        out_shape = tuple(1 if it is None else len(it) for it in items
                          if it is None or isinstance(it, range))
        return res.reshape(out_shape)

    def __repr__(self):
        return f"SliceView({type(self.base).__name__}, {self.key!r}, shape={self.shape})"


class TransposeView(_View):
    """``base.T``: the dimensions of `base` in reverse order.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(6).reshape(2, 3)
    >>> TransposeView(x)[1:, 0].tolist()
    [1, 2]
    """

    def __init__(self, base):
        self.base = base
        self.dtype = np.dtype(base.dtype)
        self.shape = tuple(int(s) for s in base.shape)[::-1]

    def _get(self, request: list) -> np.ndarray:
        return read(self.base, request[::-1]).T

    def __repr__(self):
        return f"TransposeView({type(self.base).__name__}, shape={self.shape})"
