"""The door one floor down: what a :class:`LazyExpr` asks of the engine that computes it.

``LazyExpr`` lives in ``engine/expr/``, below the floors that compute (the driver, the
entry points, persistence, the NumPy protocols).  It reaches them through this
interface, never through imports that point up (zarr's ``abc/`` pattern: interfaces
below, implementations above).  The engine's top (:mod:`ndpack.engine.bind`) registers
its implementation once, when ``ndpack`` is imported; the optional schedulers
(dask, :mod:`ndpack.engine.backends.dask`) come through the same door.

Examples
--------
>>> import ndpack
>>> from ndpack.engine.expr.door import Evaluator, evaluator
>>> isinstance(evaluator(), Evaluator)
True
"""

from __future__ import annotations

import abc

__all__ = ["Evaluator", "evaluator", "register"]


class Evaluator(abc.ABC):
    """The engine's services below the engine: each method is one way of computing."""

    @abc.abstractmethod
    def compute(self, expr, **kwargs):
        """`expr` computed into a new NDArray (``LazyExpr.compute``'s arguments)."""

    @abc.abstractmethod
    def box(self, expr, box: tuple):
        """``expr[box]`` as NumPy, for a tuple of step-1 slices."""

    @abc.abstractmethod
    def masked(self, expr, mask):
        """``expr[mask]`` as NumPy, for a boolean mask of the whole shape."""

    @abc.abstractmethod
    def into(self, expr, out):
        """`expr` written into the existing array `out` (returned)."""

    @abc.abstractmethod
    def explain(self, expr, out=None, **kwargs):
        """The plan of computing `expr` (``ndpack.explain``), nothing read or computed."""

    @abc.abstractmethod
    def save(self, expr, urlpath, **kwargs) -> None:
        """The expression (not its values) saved to a carrier at `urlpath`."""

    @abc.abstractmethod
    def reduce(self, name: str, x, *args, **kwargs):
        """The reduction or cumulative function `name` (``sum``, ``argmax``, ...) of `x`."""

    @abc.abstractmethod
    def array_function(self, func, types, args, kwargs):
        """NumPy's ``__array_function__`` protocol for ndpack's arrays."""

    @abc.abstractmethod
    def scheduled_compute(self, expr, scheduler, **kwargs):
        """``compute(scheduler=...)``: `expr` run as a graph of another scheduler."""

    @abc.abstractmethod
    def scheduled_evaluate(self, expression, local_dict=None, global_dict=None, out=None,
                           scheduler=None, _depth=0, **kwargs):
        """``evaluate(scheduler=...)``; names resolve `_depth` frames above the caller."""


_REGISTERED: list = []


def register(impl: Evaluator) -> None:
    """Make `impl` the engine behind every LazyExpr (the last registration wins)."""
    if not isinstance(impl, Evaluator):
        raise TypeError(f"register() needs an Evaluator, not {type(impl).__name__}")
    _REGISTERED[:] = [impl]


def evaluator() -> Evaluator:
    """The registered engine; RuntimeError when none is (``ndpack`` not imported)."""
    if not _REGISTERED:
        raise RuntimeError("no evaluator registered: import ndpack")
    return _REGISTERED[0]
