"""Helpers shared by the test files: the same values as the operand kinds ndpack takes."""

import numpy as np

import ndpack

KINDS = ("ndarray", "lazyexpr", "numpy")


def as_operand(x, kind: str = "ndarray"):
    """`x` (NumPy or array_api_strict) as a NumPy array, an NDArray of several chunks
    (each dimension cut in two), or a LazyExpr over that NDArray; 0-d inputs stay NumPy."""
    a = np.asarray(x)
    if kind == "numpy" or a.ndim == 0:
        return a
    nd = ndpack.asarray(a, chunks=tuple(max(1, (s + 1) // 2) for s in a.shape))
    if kind == "ndarray":
        return nd
    if kind == "lazyexpr":
        return ndpack.lazyexpr("a", operands={"a": nd})
    raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
