"""The statistical functions: ``sum prod mean std var min max any all argmin argmax
count_nonzero``, computed at once and streamed chunk by chunk.

NumPy's semantics (``axis`` int/tuple/None, ``keepdims``, ``dtype``, ``ddof`` /
``correction``, ``where=``, result dtypes, NaN propagation) over NDArrays, LazyExprs
and any array-like with ``shape``, ``dtype`` and ``__getitem__`` (NumPy, h5py, zarr).
Each call builds a :class:`~ndpack.engine.expr.nodes.Reduce` node and prepares it
(:func:`ndpack.engine.compute.prepare`: sub-expressions first, then the streamed
reduction of :mod:`ndpack.engine.ops.reductions`).  Inside expressions
(``lazyexpr("a - mean(a)")``) the same nodes are prepared once per evaluation.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> x = np.arange(24.0).reshape(2, 3, 4)
>>> a = asarray(x, chunks=(1, 2, 3))
>>> float(sum(a)), sum(a, axis=(0, 2)).tolist()
(276.0, [60.0, 92.0, 124.0])
>>> bool(np.allclose(std(a, axis=1, ddof=1), x.std(axis=1, ddof=1)))
True
>>> int(argmax(a)), argmin(a, axis=2, keepdims=True).shape
(23, (2, 3, 1))
"""

from __future__ import annotations

import numpy as np

from ndpack.reporting import task
from ndpack.engine.compute import prepare
from ndpack.engine.expr.accuracy import check_fp_accuracy
from ndpack.engine.expr.lazyexpr import as_node
from ndpack.engine.expr.nodes import Reduce
from ndpack.engine.expr.views import SliceView
from ndpack.engine.ops.cumulative import cumulative_prod, cumulative_sum

# the cumulative functions are here too, so that the arrays' methods (python-blosc2's
# ``expr.cumulative_sum(axis=0)``) find them beside the reductions
__all__ = ["sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin",
           "argmax", "count_nonzero", "cumulative_sum", "cumulative_prod"]


def _reduce(op, x, axis=None, keepdims=False, dtype=None, ddof=0, where=None,
            initial=None, out=None, fp_accuracy=None, **kwargs):
    check_fp_accuracy(fp_accuracy)
    item = kwargs.pop("item", None)       # python-blosc2's item=: reduce x[item]
    if item is not None and item != ():
        x = SliceView(x, item)
    if kwargs:
        raise TypeError(f"{op}() got unexpected keyword argument(s) "
                        f"{', '.join(sorted(kwargs))}")
    wnode = None if where is None else as_node(where)
    red = Reduce(op, as_node(x), axis=axis, keepdims=keepdims, dtype=dtype, ddof=ddof,
                 where=wnode, initial=initial)
    with task(1):                                  # one call (ndpack.progress)
        res = np.asarray(prepare(red).array)
    if out is not None:
        out[...] = res
        return out
    return res[()] if res.ndim == 0 else res


def _doc(op, extra=""):
    return (f"``{op}`` of an array or expression, streamed chunk by chunk (NumPy's "
            f"semantics).\n\n    Parameters\n    ----------\n    ndarr : NDArray, "
            f"LazyExpr or array-like\n        Anything with shape, dtype and __getitem__."
            f"\n    axis : int, tuple of ints or None\n    keepdims : bool\n{extra}"
            f"    fp_accuracy : FPAccuracy, optional\n        python-blosc2's accuracy "
            f"mode; ndpack always computes at ``HIGH``.\n"
            f"\n    Returns\n    -------\n    numpy.ndarray, or a NumPy scalar when every "
            f"axis is reduced.\n")


def sum(ndarr, axis=None, dtype=None, keepdims=False, where=None, **kwargs):
    return _reduce("sum", ndarr, axis, keepdims, dtype, where=where, **kwargs)


def prod(ndarr, axis=None, dtype=None, keepdims=False, where=None, **kwargs):
    return _reduce("prod", ndarr, axis, keepdims, dtype, where=where, **kwargs)


def mean(ndarr, axis=None, dtype=None, keepdims=False, where=None, **kwargs):
    return _reduce("mean", ndarr, axis, keepdims, dtype, where=where, **kwargs)


def _ddof(ddof, correction):
    """NumPy's `ddof` or the array API's `correction` (the same number; not both)."""
    if correction is None or (correction == 0 and ddof != 0):
        return ddof
    if ddof not in (0, correction):
        raise TypeError(f"ddof={ddof!r} and correction={correction!r} disagree: give one")
    return correction


def std(ndarr, axis=None, dtype=None, ddof=0, keepdims=False, where=None, *,
        correction=0.0, **kwargs):
    return _reduce("std", ndarr, axis, keepdims, dtype, _ddof(ddof, correction),
                   where=where, **kwargs)


def var(ndarr, axis=None, dtype=None, ddof=0, keepdims=False, where=None, *,
        correction=0.0, **kwargs):
    return _reduce("var", ndarr, axis, keepdims, dtype, _ddof(ddof, correction),
                   where=where, **kwargs)


def min(ndarr, axis=None, keepdims=False, where=None, initial=None, **kwargs):
    return _reduce("min", ndarr, axis, keepdims, where=where, initial=initial, **kwargs)


def max(ndarr, axis=None, keepdims=False, where=None, initial=None, **kwargs):
    return _reduce("max", ndarr, axis, keepdims, where=where, initial=initial, **kwargs)


def any(ndarr, axis=None, keepdims=False, where=None, **kwargs):
    return _reduce("any", ndarr, axis, keepdims, where=where, **kwargs)


def all(ndarr, axis=None, keepdims=False, where=None, **kwargs):
    return _reduce("all", ndarr, axis, keepdims, where=where, **kwargs)


def argmin(ndarr, axis=None, keepdims=False, **kwargs):
    return _reduce("argmin", ndarr, axis, keepdims, **kwargs)


def argmax(ndarr, axis=None, keepdims=False, **kwargs):
    return _reduce("argmax", ndarr, axis, keepdims, **kwargs)


def count_nonzero(ndarr, axis=None, keepdims=False, **kwargs):
    return _reduce("count_nonzero", ndarr, axis, keepdims, **kwargs)


_DTYPE = "    dtype : dtype, optional\n        Accumulator and result dtype.\n"


_DDOF = ("    ddof, correction : int or float\n        Delta degrees of freedom (divisor "
         "``N - ddof``); ``correction`` is the array API's name for it.\n")


_WHERE = "    where : bool array or expression, optional\n        Elements to include.\n"


_INITIAL = "    initial : scalar, optional\n        Needed with ``where``.\n"


for _f, _extra in [(sum, _DTYPE + _WHERE), (prod, _DTYPE + _WHERE), (mean, _DTYPE + _WHERE),
                   (std, _DTYPE + _DDOF + _WHERE), (var, _DTYPE + _DDOF + _WHERE),
                   (min, _WHERE + _INITIAL), (max, _WHERE + _INITIAL), (any, _WHERE),
                   (all, _WHERE), (argmin, ""), (argmax, ""), (count_nonzero, "")]:
    _f.__doc__ = _doc(_f.__name__, _extra) + f"""
    Examples
    --------
    >>> import numpy as np
    >>> from ndpack.storage.constructors import asarray
    >>> x = np.arange(12.0).reshape(3, 4) - 5
    >>> a = asarray(x, chunks=(2, 3))
    >>> bool(np.allclose({_f.__name__}(a, axis=1), np.{_f.__name__}(x, axis=1)))
    True
"""
del _f, _extra
