"""python-blosc2's floating-point accuracy modes (``FPAccuracy``, ``fp_accuracy=``).

python-blosc2 lets its miniexpr kernels trade accuracy for speed: ``HIGH`` asks for
functions within 1 ulp, ``MEDIUM`` (its ``DEFAULT``) within 3.5 ulp.  ndpack has one
mode, ``HIGH``: NumPy's results, and its own float64 sin/cos within 1 ulp of glibc.  A
``MEDIUM`` request gets results at least as accurate.  Every function of python-blosc2
that takes ``fp_accuracy=`` (``evaluate``, ``LazyExpr.compute``, the reductions and the
cumulative functions, as functions and as methods) takes it here and checks it with
:func:`check_fp_accuracy`.

Examples
--------
>>> FPAccuracy.DEFAULT is FPAccuracy.MEDIUM
True
>>> check_fp_accuracy(FPAccuracy.HIGH), check_fp_accuracy(2), check_fp_accuracy(None)
(None, None, None)
>>> check_fp_accuracy("fast")
Traceback (most recent call last):
...
ndpack.errors.ParameterError: fp_accuracy must be an FPAccuracy, not 'fast'
"""

from __future__ import annotations

import enum

from ndpack.errors import ParameterError

__all__ = ["FPAccuracy", "check_fp_accuracy"]


class FPAccuracy(enum.Enum):
    """python-blosc2's floating-point accuracy modes of expressions.  ndpack computes
    at ``HIGH`` always (NumPy's results; its own sin/cos within 1 ulp of glibc): a
    ``MEDIUM`` request gets results at least as accurate."""

    HIGH = 1
    MEDIUM = 2
    DEFAULT = MEDIUM


def check_fp_accuracy(value) -> None:
    """None or an FPAccuracy member (or its value): anything else is a ParameterError."""
    if value is None or isinstance(value, FPAccuracy):
        return
    try:
        FPAccuracy(value)
    except (ValueError, TypeError):
        raise ParameterError(f"fp_accuracy must be an FPAccuracy, not {value!r}") from None
