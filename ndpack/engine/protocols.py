"""NumPy's ``__array_function__`` protocol for LazyExpr and NDArray.

NumPy functions that have a lazy or streaming counterpart dispatch to it:

* elementwise functions of the expression table (``np.where``, ``np.clip``, ...)
  return a :class:`~ndpack.engine.expr.lazyexpr.LazyExpr` and read nothing;
* reductions (``np.sum``, ``np.mean``, ``np.std``, ``np.max``, ``np.argmin``, ...)
  stream over the chunks (:mod:`ndpack.engine.ops.reductions`), and so do the NaN-skipping
  ones (``np.nansum``, ``np.nanmean``, ``np.nanmax``, ...;
  :mod:`ndpack.engine.nanreductions`);
* ``np.cumulative_sum``/``np.cumulative_prod`` (and ``np.cumsum``/``np.cumprod``)
  carry totals from chunk to chunk (:mod:`ndpack.engine.ops.cumulative`);
* ``np.tensordot``, ``np.matmul``, ``np.vecdot``, ``np.outer`` become lazy products
  computed tile by tile (:mod:`ndpack.engine.ops.linalg`).

Any other NumPy function gets the arrays converted with ``np.asarray`` (computed or
decompressed whole), which is what NumPy does for objects without the protocol.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(6.0).reshape(2, 3))
>>> type(np.where(a > 2, a, 0)).__name__
'LazyExpr'
>>> float(np.sum(a * 2))
30.0
>>> np.concatenate([a, a]).shape            # no lazy counterpart: computed
(4, 3)
"""

from __future__ import annotations

import numpy as np

from ndpack.engine import statistical
from ndpack.engine.expr.functions import FUNCTIONS
from ndpack.engine.expr.lazyexpr import LazyExpr, as_node
from ndpack.engine.expr.nodes import LINALG, Apply, Contract
from ndpack.engine.nanreductions import NAN_REDUCTIONS, nan_reduction
from ndpack.engine.ops import cumulative

__all__ = ["array_function"]

_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "std": "std", "var": "var",
               "min": "min", "max": "max", "amin": "min", "amax": "max", "any": "any",
               "all": "all", "argmin": "argmin", "argmax": "argmax",
               "count_nonzero": "count_nonzero"}
_CUMULATIVE = {"cumulative_sum": "cumulative_sum", "cumulative_prod": "cumulative_prod",
               "cumsum": "cumulative_sum", "cumprod": "cumulative_prod"}


def array_function(func, types, args, kwargs):
    """Dispatch NumPy function `func` called on LazyExpr/NDArray arguments."""
    name = func.__name__
    if name in NAN_REDUCTIONS and args:
        res = nan_reduction(name, args[0], *args[1:2], **kwargs)
        if res is not None:
            return res
        return _materialized(func, args, kwargs)
    if name in _REDUCTIONS:
        return getattr(statistical, _REDUCTIONS[name])(*args, **kwargs)
    if name in _CUMULATIVE:
        x, rest = args[0], args[1:]
        if name in ("cumsum", "cumprod"):          # old signature: (a, axis, dtype, out)
            if rest or kwargs.get("out") is not None:
                return _materialized(func, args, kwargs)
            axis = kwargs.get("axis")
            if axis is None:                       # flattened, as NumPy does
                return func(np.asarray(x), dtype=kwargs.get("dtype"))
            return getattr(cumulative, _CUMULATIVE[name])(x, axis=axis,
                                                          dtype=kwargs.get("dtype"))
        return getattr(cumulative, _CUMULATIVE[name])(x, *rest, **kwargs)
    if name in LINALG and len(args) == 2 and set(kwargs) <= set(LINALG[name]):
        return LazyExpr(Contract(name, tuple(as_node(a) for a in args), kwargs))
    fn = FUNCTIONS.get(name)
    if fn is not None and len(args) in fn.nargs and set(kwargs) <= set(fn.keywords):
        return LazyExpr(Apply(name, tuple(as_node(a) for a in args), kwargs))
    return _materialized(func, args, kwargs)


def _materialized(func, args, kwargs):
    """`func` on the arguments converted to NumPy (what NumPy does without the
    protocol)."""
    def conv(x):
        if hasattr(x, "__array_function__") and not isinstance(x, np.ndarray) \
                and hasattr(x, "shape") and hasattr(x, "dtype"):
            return np.asarray(x)
        if isinstance(x, (list, tuple)):
            return type(x)(conv(i) for i in x)
        return x
    return func(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
