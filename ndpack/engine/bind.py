"""The engine's top: the door's implementation, registered once.

:class:`Engine` implements :class:`~ndpack.engine.expr.door.Evaluator` with the floors
that compute (the driver :mod:`~ndpack.engine.compute`, :mod:`~ndpack.engine.statistical`,
:mod:`~ndpack.engine.persist`, :mod:`~ndpack.engine.protocols`, the dask backend), and
:func:`install` registers it.  ``ndpack/__init__.py`` calls :func:`install` once; it is
idempotent.

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

from ndpack.engine import statistical
from ndpack.engine.backends.dask import compute_with_dask, evaluate_with_dask
from ndpack.engine.compute import compute, compute_box, compute_masked, evaluate_into
from ndpack.engine.expr.door import Evaluator, register
from ndpack.engine.persist import save_expr
from ndpack.engine.protocols import array_function

__all__ = ["Engine", "install"]


class Engine(Evaluator):
    """The evaluator behind every LazyExpr: each method is one function of a floor above
    ``engine/expr/`` (static, so that no frame is added: ``evaluate(scheduler=)`` finds
    the caller's names by depth)."""

    compute = staticmethod(compute)
    box = staticmethod(compute_box)
    masked = staticmethod(compute_masked)
    into = staticmethod(evaluate_into)
    save = staticmethod(save_expr)
    array_function = staticmethod(array_function)
    scheduled_compute = staticmethod(compute_with_dask)
    scheduled_evaluate = staticmethod(evaluate_with_dask)

    @staticmethod
    def reduce(name, x, *args, **kwargs):
        return getattr(statistical, name)(x, *args, **kwargs)


def install() -> None:
    """Register the engine behind the door (idempotent)."""
    register(Engine())
