"""NumPy's NaN-skipping reductions (``np.nansum``, ``np.nanmean``, ``np.nanmax``, ...)
streamed over chunks, for NumPy's ``__array_function__`` protocol: xarray and other
libraries call them on the arrays they wrap (``DataArray.mean()`` skips NaNs).

Each is the plain reduction with ``where=~isnan(x)`` (integer and boolean arrays hold no
NaN: the plain reduction); an all-NaN slice gives NaN for ``nanmax``/``nanmin``/
``nanmean``/``nanvar``/``nanstd`` and 0 (1) for ``nansum`` (``nanprod``), as NumPy gives.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.array([[1.0, np.nan], [3.0, 4.0]]))
>>> np.nansum(a, axis=0).tolist(), float(np.nanmean(a)), np.nanmax(a, axis=1).tolist()
([4.0, 4.0], 2.6666666666666665, [1.0, 4.0])
"""

from __future__ import annotations

import numpy as np

from ndpack.engine import statistical
from ndpack.engine.elementwise import isnan, logical_not

__all__ = ["NAN_REDUCTIONS", "nan_reduction"]

#: NumPy's name -> the reduction it skips NaNs of.
NAN_REDUCTIONS = {"nansum": "sum", "nanprod": "prod", "nanmean": "mean", "nanvar": "var",
                  "nanstd": "std", "nanmin": "min", "nanmax": "max"}
_KEYWORDS = {"sum": ("axis", "dtype", "keepdims"), "prod": ("axis", "dtype", "keepdims"),
             "mean": ("axis", "dtype", "keepdims"), "var": ("axis", "dtype", "ddof",
                                                             "keepdims"),
             "std": ("axis", "dtype", "ddof", "keepdims"), "min": ("axis", "keepdims"),
             "max": ("axis", "keepdims")}


def nan_reduction(name: str, x, axis=None, **kwargs):
    """NumPy's `name` (a key of :data:`NAN_REDUCTIONS`) of `x`, streamed; None when a
    keyword is one it does not take here (``out=``, ``where=``, ``initial=``): the
    caller then computes it NumPy's way."""
    op = NAN_REDUCTIONS[name]
    kwargs = {k: v for k, v in kwargs.items() if v is not None and v is not np._NoValue}
    if any(k not in _KEYWORDS[op] for k in kwargs):
        return None
    fn = getattr(statistical, op)
    if np.dtype(x.dtype).kind not in "fc":
        return fn(x, axis=axis, **kwargs)
    keep = logical_not(isnan(x))
    if op in ("min", "max"):
        fill = np.inf if op == "min" else -np.inf
        res = np.asarray(fn(x, axis=axis, where=keep, initial=fill, **kwargs))
        count = np.asarray(statistical.count_nonzero(keep, axis=axis,
                                                     keepdims=kwargs.get("keepdims", False)))
        res = np.where(count == 0, np.nan, res).astype(res.dtype)
        return res[()] if res.ndim == 0 else res
    with np.errstate(invalid="ignore", divide="ignore"):
        return fn(x, axis=axis, where=keep, **kwargs)
