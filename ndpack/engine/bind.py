"""The engine's top: the door's implementation and NDArray's surface, installed once.

* :class:`Engine` implements :class:`~ndpack.engine.expr.door.Evaluator` with the floors
  that compute (the driver :mod:`~ndpack.engine.compute`,
  :mod:`~ndpack.engine.statistical`, :mod:`~ndpack.engine.persist`,
  :mod:`~ndpack.engine.protocols`, the dask backend);
* :data:`NDARRAY_SURFACE` is every member that NDArray gets from outside its class body
  (storage does not know the engine), one table built from the lists of the modules that
  define them, in which no name may come twice; :data:`LAZYEXPR_SURFACE` is LazyExpr's
  array object protocol.  ``expr_key`` is the one hook whose storage default (None) the
  engine replaces (:data:`HOOKS`); any other name already in the class is an error.

``ndpack/__init__.py`` calls :func:`install` once (it is idempotent), so every way in
(``import ndpack``, ``import ndpack.storage``) gives the complete NDArray.

Examples
--------
>>> import numpy as np, ndpack
>>> from ndpack.engine.expr.door import evaluator
>>> type(evaluator()).__name__
'Engine'
>>> float(evaluator().reduce("sum", ndpack.asarray(np.arange(4.0))))
6.0
"""

from __future__ import annotations

from ndpack.engine import arrayobject, operators, persist, statistical
from ndpack.engine.backends import dask
from ndpack.engine.backends.dask import compute_with_dask, evaluate_with_dask
from ndpack.engine.compute import compute, compute_box, compute_masked, evaluate_into, explain
from ndpack.engine.expr.door import Evaluator, register
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.engine.ops import index, indexhandle
from ndpack.engine.persist import save_expr
from ndpack.engine.protocols import array_function
from ndpack.storage import ndfield
from ndpack.storage.ndarray import NDArray

__all__ = ["Engine", "install", "NDARRAY_SURFACE", "LAZYEXPR_SURFACE", "HOOKS"]


class Engine(Evaluator):
    """The evaluator behind every LazyExpr: each method is one function of a floor above
    ``engine/expr/`` (static, so that no frame is added: ``evaluate(scheduler=)`` finds
    the caller's names by depth)."""

    compute = staticmethod(compute)
    box = staticmethod(compute_box)
    masked = staticmethod(compute_masked)
    into = staticmethod(evaluate_into)
    explain = staticmethod(explain)
    save = staticmethod(save_expr)
    array_function = staticmethod(array_function)
    scheduled_compute = staticmethod(compute_with_dask)
    scheduled_evaluate = staticmethod(evaluate_with_dask)

    @staticmethod
    def reduce(name, x, *args, **kwargs):
        return getattr(statistical, name)(x, *args, **kwargs)


def surface(*groups) -> dict:
    """``{name: member}`` of lists of ``(name, member)``; a name given twice is an error."""
    table = {}
    for group in groups:
        for name, member in group:
            if name in table:
                raise AssertionError(f"{name!r} is bound twice")
            table[name] = member
    return table


#: NDArray's members from outside its class body, by the module that defines them
NDARRAY_SURFACE = surface(
    operators.NDARRAY_MEMBERS,      # lazy operators, reductions, compute, in place
    arrayobject.NDARRAY_MEMBERS,    # the array API's array object protocol, astype, take
    index.NDARRAY_MEMBERS,          # create_index, drop_index, rebuild_index, expr_key
    indexhandle.NDARRAY_MEMBERS,    # index(), indexes
    dask.NDARRAY_MEMBERS,           # to_dask
    ndfield.NDARRAY_MEMBERS,        # fields (storage's, bound here with the rest)
)

#: LazyExpr's members from outside its class body
LAZYEXPR_SURFACE = surface(arrayobject.LAZYEXPR_MEMBERS,
                           persist.LAZYEXPR_MEMBERS)    # expression (python-blosc2's)

#: class attributes storage declares for the engine to replace
HOOKS = {NDArray: ("expr_key",), LazyExpr: ()}


def _bind(cls, table: dict) -> None:
    for name, member in table.items():
        own = cls.__dict__.get(name, member)
        if own is not member and name not in HOOKS[cls]:
            raise AssertionError(f"{cls.__name__}.{name} is already defined")
        setattr(cls, name, member)


def install() -> None:
    """Register the engine behind the door and bind the surfaces (idempotent)."""
    register(Engine())
    _bind(NDArray, NDARRAY_SURFACE)
    _bind(LazyExpr, LAZYEXPR_SURFACE)
