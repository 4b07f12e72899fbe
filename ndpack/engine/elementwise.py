"""The array API standard's elementwise functions: each builds a lazy expression.

``ndpack.sin(a) + ndpack.cos(b)`` is the same tree as ``lazyexpr("sin(a) + cos(b)")``:
nothing is read until it is computed, and it is evaluated in one pass, chunk by chunk.
Operands may be NDArrays, lazy expressions, NumPy arrays, any array-like with ``shape``,
``dtype`` and ``__getitem__`` (h5py, zarr), and -- in binary functions, next to an
array -- Python scalars, which take the array's dtype (no value-based casting).  A
unary function of a Python scalar is a 0-d expression (``ndpack.sin(2)[()]`` is
``np.sin(2)``).

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.linspace(0, 1, 5))
>>> e = ndpack.sin(a) ** 2 + ndpack.cos(a) ** 2
>>> type(e).__name__
'LazyExpr'
>>> bool(np.allclose(e[()], 1.0))
True
>>> ndpack.add(ndpack.asarray(np.arange(3, dtype=np.int8)), 1).dtype
dtype('int8')
"""

from __future__ import annotations

import numpy as np

from ndpack.engine.expr.lazyexpr import LazyExpr, as_node
from ndpack.engine.expr.nodes import Apply
from ndpack.inspection import check_device
from ndpack.storage.ndarray import NDArray

__all__ = [
    "clip", "where", "astype",
    # the standard's unary functions
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil",
    "conj", "cos", "cosh", "exp", "expm1", "floor", "imag", "isfinite", "isinf", "isnan",
    "log", "log1p", "log2", "log10", "logical_not", "negative", "positive", "real",
    "reciprocal", "round", "sign", "signbit", "sin", "sinh", "sqrt", "square", "tan",
    "tanh", "trunc",
    # binary
    "add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "copysign", "divide", "equal", "floor_divide",
    "greater", "greater_equal", "hypot", "less", "less_equal", "logaddexp", "logical_and",
    "logical_or", "logical_xor", "maximum", "minimum", "multiply", "nextafter",
    "not_equal", "pow", "remainder", "subtract",
    # NumPy's names
    "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "arctan2",
    # python-blosc2's string functions
    "startswith", "endswith", "contains", "lower", "upper",
]

#: The standard's unary elementwise functions (name in the engine's function table).
UNARY = {
    "abs": "abs", "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh",
    "atan": "atan", "atanh": "atanh", "bitwise_invert": "bitwise_invert", "ceil": "ceil",
    "conj": "conj", "cos": "cos", "cosh": "cosh", "exp": "exp", "expm1": "expm1",
    "floor": "floor", "imag": "imag", "isfinite": "isfinite", "isinf": "isinf",
    "isnan": "isnan", "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10",
    "logical_not": "logical_not", "negative": "negative", "positive": "positive",
    "real": "real", "reciprocal": "reciprocal", "round": "round", "sign": "sign",
    "signbit": "signbit", "sin": "sin", "sinh": "sinh", "sqrt": "sqrt",
    "square": "square", "tan": "tan", "tanh": "tanh", "trunc": "trunc",
}

#: The standard's binary elementwise functions.
BINARY = {
    "add": "add", "atan2": "atan2", "bitwise_and": "bitwise_and",
    "bitwise_left_shift": "bitwise_left_shift", "bitwise_or": "bitwise_or",
    "bitwise_right_shift": "bitwise_right_shift", "bitwise_xor": "bitwise_xor",
    "copysign": "copysign", "divide": "divide", "equal": "equal",
    "floor_divide": "floor_divide", "greater": "greater", "greater_equal": "greater_equal",
    "hypot": "hypot", "less": "less", "less_equal": "less_equal", "logaddexp": "logaddexp",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "maximum": "maximum", "minimum": "minimum", "multiply": "multiply",
    "nextafter": "nextafter", "not_equal": "not_equal", "pow": "pow",
    "remainder": "remainder", "subtract": "subtract",
}


_PY_SCALARS = (bool, int, float, complex)


def _array_arg(x, name: str):
    """The argument of a unary function: a Python scalar alone is a 0-d array of
    NumPy's dtype for it (``sin(2)`` is float64 ``np.sin(2)``, as NumPy and
    python-blosc2 give), not a weak constant."""
    if type(x) in _PY_SCALARS:
        return as_node(np.asarray(x))
    return as_node(x)


def _unary(name: str, func: str):
    def fn(x, /):
        return LazyExpr(Apply(func, (_array_arg(x, name),)))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise ``{name}`` of `x` (array API standard), as a lazy "
                  f"expression; nothing is computed until it is read.")
    return fn


def _binary(name: str, func: str):
    def fn(x1, x2, /):
        if type(x1) in _PY_SCALARS and type(x2) in _PY_SCALARS:
            raise TypeError(f"{name}() needs at least one array argument")
        return LazyExpr(Apply(func, (as_node(x1), as_node(x2))))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise ``{name}`` of `x1` and `x2` (array API standard; they "
                  f"broadcast, and one may be a Python scalar), as a lazy expression.")
    return fn


#: NumPy's (and python-blosc2's) names of some of them.
ALIASES = {"arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
           "arctan": "atan", "arctanh": "atanh", "arctan2": "atan2"}

for _name, _func in UNARY.items():
    globals()[_name] = _unary(_name, _func)
for _name, _func in BINARY.items():
    globals()[_name] = _binary(_name, _func)
for _name, _func in ALIASES.items():
    globals()[_name] = (_binary if _func in BINARY else _unary)(_name, _func)
del _name, _func


def clip(x, /, min=None, max=None):  # noqa: A002 -- the standard's parameter names
    """`x` with its elements limited to ``[min, max]`` (either bound may be None, an
    array that broadcasts with `x`, or a scalar); the result keeps `x`'s dtype.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> ndpack.clip(ndpack.asarray(np.arange(6)), 1, 4)[()].tolist()
    [1, 1, 2, 3, 4, 4]
    """
    node = _array_arg(x, "clip")
    dtype = LazyExpr(node).dtype
    if min is not None:
        node = Apply("maximum", (node, as_node(min)))
    if max is not None:
        node = Apply("minimum", (node, as_node(max)))
    out = LazyExpr(node)
    return out if out.dtype == dtype else out.astype(dtype)


def where(condition, x1, x2, /):
    """Elements of `x1` where `condition` is true, else of `x2` (they broadcast; `x1`
    and `x2` may be Python scalars), as a lazy expression.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(5.0))
    >>> ndpack.where(a > 2, a, 0.0)[()].tolist()
    [0.0, 0.0, 0.0, 3.0, 4.0]
    """
    return LazyExpr(Apply("where", (_array_arg(condition, "where"), as_node(x1), as_node(x2))))


def astype(x, dtype, /, *, copy=True, device=None):
    """`x` cast to `dtype`: lazy for expressions, computed (an NDArray with the same
    chunks) for NDArrays, as python-blosc2's ``NDArray.astype`` does.

    ``copy=False`` returns `x` itself when it already has `dtype`.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(4.0))
    >>> ndpack.astype(a, ndpack.int32)[()].tolist()
    [0, 1, 2, 3]
    """
    check_device(device)
    dtype = np.dtype(dtype)
    if not copy and getattr(x, "dtype", None) == dtype:
        return x
    if isinstance(x, NDArray):
        cast = LazyExpr(as_node(x)).astype(dtype)
        return cast.compute(chunks=x.chunks, blocks=x.blocks)
    return LazyExpr(_array_arg(x, "astype")).astype(dtype)


def _string_function(name: str, nargs: int, what: str):
    def fn(*args):
        if len(args) != nargs:
            raise TypeError(f"{name}() takes {nargs} argument{'s' * (nargs > 1)}, "
                            f"got {len(args)}")
        return LazyExpr(Apply(name, tuple(as_node(a) for a in args)))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{what} of fixed-width strings (python-blosc2's ``{name}``; NumPy's "
                  f"``np.strings``), elementwise, as a lazy expression.")
    return fn


startswith = _string_function("startswith", 2, "Whether each string starts with a prefix")
endswith = _string_function("endswith", 2, "Whether each string ends with a suffix")
contains = _string_function("contains", 2, "Whether each string contains a substring")
lower = _string_function("lower", 1, "The lower-case version")
upper = _string_function("upper", 1, "The upper-case version")
