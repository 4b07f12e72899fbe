"""NDArray's operators: the lazy ones of LazyExpr, the reduction methods, and in place.

``NDArray`` gets the same ``+ - * / // % ** & | ^ ~ << >>``, comparisons, unary
``-``/``+``/``abs``, ``@``, ``__array_ufunc__`` and ``__array_function__`` as
:class:`~ndpack.engine.expr.lazyexpr.LazyExpr` (each returns a new LazyExpr and reads
nothing), the reduction methods (``a.sum(axis=0)``, ``a.argmax()``, ...; see
:mod:`ndpack.engine.statistical`), and in-place operators (``a += b``) that compute at
once and write the result back chunk by chunk, and ``compute()`` (a computed copy,
as an expression's).  The storage layer does not know the engine (imports point
down): this module lists the members (:data:`NDARRAY_MEMBERS`) and
:mod:`ndpack.engine.bind` binds them, with the rest of NDArray's surface, once.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(4.0))
>>> e = np.sin(a) + 2 * a
>>> type(e).__name__, e.shape
('LazyExpr', (4,))
>>> float((a * 2).sum()), int(a.argmax())
(12.0, 3)
>>> a += 1
>>> a[:].tolist()
[1.0, 2.0, 3.0, 4.0]
"""

from __future__ import annotations

import numpy as np

from ndpack.engine import statistical
from ndpack.engine.compute import evaluate_into
from ndpack.engine.expr.lazyexpr import OPERATORS, REDUCTION_METHODS, LazyExpr, as_node
from ndpack.engine.expr.nodes import Apply

__all__ = ["NDARRAY_MEMBERS", "install"]

_INPLACE = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift", "matmul": "matmul",
}


def _inplace(func):
    def method(self, other):
        if func == "matmul":        # computed whole by prepare() before anything is written
            expr = LazyExpr(as_node(self)) @ other
        else:
            expr = LazyExpr(Apply(func, (as_node(self), as_node(other))))
        if expr.shape != self.shape:
            raise ValueError(f"in-place {func}: the result's shape {expr.shape} is not the "
                             f"array's {self.shape}")
        if not np.can_cast(expr.dtype, self.dtype, "same_kind"):     # NumPy's rule
            raise TypeError(f"in-place {func}: cannot cast the result's dtype {expr.dtype} "
                            f"to the array's {self.dtype} with casting rule 'same_kind'")
        evaluate_into(expr, self)    # chunk by chunk; same_kind casting, as NumPy's
        return self
    method.__name__ = f"i{func}"
    method.__doc__ = (f"``self = {func}(self, other)`` written back chunk by chunk (the "
                      f"result must keep the array's shape and cast to its dtype).")
    return method


def _reduction_method(name):
    func = getattr(statistical, name)

    def method(self, *args, **kwargs):
        return func(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"``{name}`` of the array (see :func:`ndpack.{name}`)."
    return method


def _compute(self, *args, **kwargs):
    """A computed copy of the array (same arguments as :meth:`LazyExpr.compute`:
    ``item``, ``urlpath``, storage, ``out``, ...), so code that rebinds ``a += 1`` to an
    expression under python-blosc2 may call ``a.compute()`` either way."""
    return LazyExpr(as_node(self)).compute(*args, **kwargs)


def lazy_members() -> list:
    """``(name, member)`` of LazyExpr's lazy operators and the reduction methods."""
    return ([(name, LazyExpr.__dict__[name]) for name in OPERATORS] +
            [(name, _reduction_method(name)) for name in REDUCTION_METHODS])


def install(cls) -> None:
    """Give `cls` (a LazyUDF) LazyExpr's lazy operators and the reduction methods."""
    for name, member in lazy_members():
        setattr(cls, name, member)


#: NDArray's members from here: the lazy operators, the reductions, ``compute`` and the
#: in-place operators (NDArray only: an expression is rebound)
NDARRAY_MEMBERS = (lazy_members() + [("compute", _compute)] +
                   [(f"__i{s}__", _inplace(f)) for s, f in _INPLACE.items()])
