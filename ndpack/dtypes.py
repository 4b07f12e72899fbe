"""Data types of the array API standard: names, promotion, casting rules, limits.

The dtype names are NumPy's scalar types (``ndpack.float64 is numpy.float64``), as in
NumPy's and python-blosc2's namespaces, so they compare equal to the ``dtype`` of every
array and are accepted wherever NumPy takes a dtype.

Promotion follows the standard's table where it is defined (no value-based casting;
a Python scalar takes the dtype of the array it meets) and NumPy 2 where the standard
leaves a combination undefined (``int64`` with ``uint64`` gives ``float64``, an integer
array with a Python float gives ``float64``), which is what the engine computes.  A
Python integer outside the range of the integer dtype it meets is an ``OverflowError``,
as in NumPy arithmetic.

Examples
--------
>>> from ndpack import dtypes
>>> dtypes.result_type(dtypes.int8, dtypes.uint8)
dtype('int16')
>>> dtypes.result_type(dtypes.float32, 1.0)
dtype('float32')
>>> dtypes.isdtype(dtypes.int16, "integral")
True
>>> dtypes.can_cast(dtypes.float64, dtypes.float32)
False
"""

from __future__ import annotations

import builtins

import numpy as np

__all__ = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
    "can_cast", "finfo", "iinfo", "isdtype", "result_type", "DTYPES", "KINDS",
]

bool = np.bool_          # noqa: A001 -- the standard's name
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

#: The standard's dtypes by name, in the standard's order.
DTYPES = {np.dtype(t).name: t for t in (
    bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float32, float64, complex64, complex128)}

_SIGNED = frozenset(np.dtype(t) for t in (int8, int16, int32, int64))
_UNSIGNED = frozenset(np.dtype(t) for t in (uint8, uint16, uint32, uint64))
_REAL = frozenset(np.dtype(t) for t in (float32, float64))
_COMPLEX = frozenset(np.dtype(t) for t in (complex64, complex128))

#: The kinds ``isdtype`` knows, and the dtypes of each.
KINDS = {
    "bool": frozenset([np.dtype(bool)]),
    "signed integer": _SIGNED,
    "unsigned integer": _UNSIGNED,
    "integral": _SIGNED | _UNSIGNED,
    "real floating": _REAL,
    "complex floating": _COMPLEX,
    "numeric": _SIGNED | _UNSIGNED | _REAL | _COMPLEX,
}


def _as_dtype(value, what: str) -> np.dtype:
    """A NumPy dtype from a dtype, a scalar type or an array (anything with ``dtype``)."""
    if isinstance(value, type):
        if issubclass(value, np.generic):
            return np.dtype(value)
    else:
        dt = getattr(value, "dtype", value)
        if isinstance(dt, np.dtype):
            return dt
    raise TypeError(f"{what} must be a dtype or an array, not {type(value).__name__}")


def isdtype(dtype, kind) -> builtins.bool:
    """Whether `dtype` is of `kind`: a dtype, a kind name, or a tuple of those.

    Kind names: ``"bool"``, ``"signed integer"``, ``"unsigned integer"``, ``"integral"``,
    ``"real floating"``, ``"complex floating"``, ``"numeric"``.

    Examples
    --------
    >>> isdtype(float32, ("integral", "real floating"))
    True
    >>> isdtype(complex64, complex64)
    True
    """
    if not (isinstance(dtype, np.dtype)
            or isinstance(dtype, type) and issubclass(dtype, np.generic)):
        raise TypeError(f"dtype must be a dtype, not {type(dtype).__name__}")
    dt = np.dtype(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in KINDS:
            raise ValueError(f"kind must be a dtype or one of {sorted(KINDS)}, not {kind!r}")
        return dt in KINDS[kind]
    return dt == _as_dtype(kind, "kind")


def _scalar_dtype(value, dt: np.dtype) -> np.dtype:
    """The dtype a Python scalar takes next to an array of `dt` (the standard's rule,
    NumPy 2's where the standard has none)."""
    if isinstance(value, builtins.bool):
        return dt
    if isinstance(value, int):
        if dt.kind in "iu":
            info = np.iinfo(dt)
            if not info.min <= value <= info.max:
                raise OverflowError(f"Python integer {value} out of bounds for {dt.name}")
            return dt
        return dt if dt.kind in "fc" else np.dtype(int64)
    if isinstance(value, float):
        return dt if dt.kind in "fc" else np.dtype(float64)
    if dt.kind == "c":
        return dt
    return np.result_type(dt, np.complex64) if dt.kind == "f" else np.dtype(complex128)


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype of an operation on these arrays, dtypes and Python scalars.

    At least one argument must be an array or a dtype; Python scalars never widen the
    result (``result_type(int8, 1) == int8``).

    Examples
    --------
    >>> result_type(int32, uint32)
    dtype('int64')
    >>> result_type(int8, 1)
    dtype('int8')
    >>> result_type(complex64, float64)
    dtype('complex128')
    """
    typed, scalars = [], []
    for x in arrays_and_dtypes:
        if isinstance(x, (builtins.bool, int, float, complex)):
            scalars.append(x)
        else:
            typed.append(_as_dtype(x, "every argument"))
    if not typed:
        raise ValueError("result_type needs at least one array or dtype")
    dt = np.result_type(*typed)
    for value in scalars:
        dt = np.result_type(dt, _scalar_dtype(value, dt))
    return dt


def _family(dt: np.dtype) -> str:
    return {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "float"}.get(dt.kind, "")


def can_cast(from_, to, /) -> builtins.bool:
    """Whether `from_` (a dtype or an array) casts to `to` by the standard's promotion
    rules: within a family (booleans; integers; real and complex floating) when
    promoting the two gives `to`.  Casts across families (``bool`` to ``int8``,
    ``int8`` to ``float32``) are not promotions, so False, as the standard says; other
    NumPy dtypes follow NumPy's ``"safe"`` casting.

    Examples
    --------
    >>> can_cast(int8, int16), can_cast(uint64, int64), can_cast(float32, complex128)
    (True, False, True)
    """
    src, dst = _as_dtype(from_, "from_"), _as_dtype(to, "to")
    family = _family(src)
    if src.name in DTYPES and dst.name in DTYPES:
        return family == _family(dst) and np.result_type(src, dst) == dst
    return builtins.bool(np.can_cast(src, dst, casting="safe"))


def finfo(type, /):  # noqa: A002 -- the standard's parameter name
    """Machine limits of a floating dtype (``bits``, ``eps``, ``max``, ``min``,
    ``smallest_normal``, ``dtype``; for complex dtypes, those of their real part).

    Examples
    --------
    >>> finfo(float32).bits, finfo(complex128).dtype
    (32, dtype('float64'))
    """
    dt = _as_dtype(type, "type")
    if dt.kind not in "fc":
        raise ValueError(f"finfo needs a floating dtype, not {dt.name}")
    return np.finfo(dt)


def iinfo(type, /):  # noqa: A002 -- the standard's parameter name
    """Machine limits of an integer dtype (``bits``, ``max``, ``min``, ``dtype``).

    Examples
    --------
    >>> iinfo(int8).min, iinfo(uint16).max
    (-128, 65535)
    """
    dt = _as_dtype(type, "type")
    if dt.kind not in "iu":
        raise ValueError(f"iinfo needs an integer dtype, not {dt.name}")
    return np.iinfo(dt)
