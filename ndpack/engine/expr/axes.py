"""The axis rule, written once: an axis of an ``ndim``-d array as ``0 .. ndim-1``.

Every function taking ``axis=`` (reductions, cumulative sums, shape operations, take,
sorting, linear algebra) normalizes it here, as NumPy's ``normalize_axis_index``:
a negative axis counts from the end, one out of ``[-ndim, ndim)`` is NumPy's
``AxisError``, one that is not an integer a TypeError.  NumPy itself is of two minds
about bools (``np.sum(a, axis=True)`` refuses them, ``np.expand_dims(a, True)`` takes
them): ``strict`` says which rule a caller keeps.

Examples
--------
>>> from ndpack.engine.expr.axes import normalize_axis, normalize_axes
>>> normalize_axis(-1, 3), normalize_axes((0, -1), 3)
(2, (0, 2))
>>> normalize_axis(3, 3)
Traceback (most recent call last):
...
numpy.exceptions.AxisError: axis 3 is out of bounds for array of dimension 3
"""

from __future__ import annotations

import operator

import numpy as np

__all__ = ["normalize_axis", "normalize_axes"]


def normalize_axis(axis, ndim: int, name: str = "axis", *, strict: bool = False,
                   message: str | None = None) -> int:
    """`axis` of an `ndim`-d array as ``0 .. ndim-1``.

    `strict`: only Python and NumPy integers, bools refused (NumPy's reductions); else
    anything with ``__index__`` (NumPy's shape functions).  `message`: the TypeError's
    text for a non-integer (default: ``"<name> must be an integer, not ..."``).
    """
    if strict:
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise TypeError(message or f"{name} must be an integer, not {axis!r:.40}")
        a = int(axis)
    else:
        try:
            a = operator.index(axis)
        except TypeError:
            raise TypeError(message or f"{name} must be an integer, not {axis!r:.40}") \
                from None
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(a, ndim)
    return a % ndim


def normalize_axes(axis, ndim: int) -> tuple:
    """An axis or a tuple/list of them, each normalized (:func:`normalize_axis`);
    ValueError when one is repeated."""
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis!r}")
    return out
