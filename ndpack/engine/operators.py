"""Python operators and NumPy protocols that turn arrays into lazy expressions.

``LazyExpr`` and ``NDArray`` get ``+ - * / // % ** & | ^ ~ << >>``, comparisons,
unary ``-``/``+``/``abs`` and ``__array_ufunc__``: each returns a new
:class:`~ndpack.engine.lazyexpr.LazyExpr` and reads nothing.  NDArray's in-place
operators (``a += b``) compute at once and write the result back chunk by chunk.  They also get the
reduction methods (``a.sum(axis=0)``, ``e.mean()``, ``a.argmax()``, ...; see
:mod:`ndpack.engine.reductions`), computed at once, streamed chunk by chunk.  The
storage layer does not know the engine (imports point down), so the engine installs
these methods on ``NDArray`` here, once, when ``ndpack.engine`` is imported.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(4.0))
>>> e = np.sin(a) + 2 * a
>>> type(e).__name__, e.shape
('LazyExpr', (4,))
>>> float((a * 2).sum()), int(a.argmax())
(12.0, 3)
"""

from __future__ import annotations

import numpy as np

from ndpack.engine import reductions
from ndpack.engine.lazyexpr import LazyExpr, _node, _ufunc, evaluate
from ndpack.engine.tree import Apply, Contract
from ndpack.storage.ndarray import NDArray

__all__ = ["install"]

_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}
_COMPARE = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
            "eq": "equal", "ne": "not_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "invert": "invert", "abs": "abs"}


def _binary(func, reverse=False):
    def method(self, other):
        a, b = (_node(other), _node(self)) if reverse else (_node(self), _node(other))
        return LazyExpr(Apply(func, (a, b)))
    method.__name__ = func
    return method


def _unary(func):
    def method(self):
        return LazyExpr(Apply(func, (_node(self),)))
    method.__name__ = func
    return method


def _inplace(func):
    def method(self, other):
        expr = LazyExpr(Apply(func, (_node(self), _node(other))))
        if expr.shape != self.shape:
            raise ValueError(f"in-place {func}: the result's shape {expr.shape} is not the "
                             f"array's {self.shape}")
        if not np.can_cast(expr.dtype, self.dtype, "same_kind"):     # NumPy's rule
            raise TypeError(f"in-place {func}: cannot cast the result's dtype {expr.dtype} "
                            f"to the array's {self.dtype} with casting rule 'same_kind'")
        evaluate(expr, out=self)     # chunk by chunk; same_kind casting, as NumPy's
        return self
    method.__name__ = f"i{func}"
    method.__doc__ = (f"``self = {func}(self, other)`` written back chunk by chunk (the "
                      f"result must keep the array's shape and cast to its dtype).")
    return method


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return _ufunc(ufunc, method, inputs, kwargs)


def _reduction_method(name):
    func = getattr(reductions, name)

    def method(self, *args, **kwargs):
        return func(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``{name}`` of the array (see :func:`ndpack.{name}`)."
    return method


def _product(op, reverse=False):
    def method(self, other):
        a, b = (_node(other), _node(self)) if reverse else (_node(self), _node(other))
        return LazyExpr(Contract(op, (a, b)))
    method.__name__ = op
    return method


def _array_function(self, func, types, args, kwargs):
    from ndpack.engine.protocols import array_function
    return array_function(func, types, args, kwargs)


def install(cls) -> None:
    """Give `cls` the lazy operators (idempotent)."""
    for short, func in _BINARY.items():
        setattr(cls, f"__{short}__", _binary(func))
        setattr(cls, f"__r{short}__", _binary(func, reverse=True))
    for short, func in _COMPARE.items():
        setattr(cls, f"__{short}__", _binary(func))
    for short, func in _UNARY.items():
        setattr(cls, f"__{short}__", _unary(func))
    for name in reductions.__all__[3:]:
        setattr(cls, name, _reduction_method(name))
    cls.__matmul__ = _product("matmul")
    cls.__rmatmul__ = _product("matmul", reverse=True)
    cls.__array_ufunc__ = _array_ufunc
    cls.__array_function__ = _array_function
    cls.__hash__ = object.__hash__      # __eq__ is elementwise now


install(LazyExpr)
install(NDArray)
for _short, _func in _BINARY.items():          # NDArray only: an expression is rebound
    setattr(NDArray, f"__i{_short}__", _inplace(_func))
del _short, _func
