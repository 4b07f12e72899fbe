"""The engine's two entry points by string: :func:`lazyexpr` and :func:`evaluate`.

Names in the string resolve from `operands`, then `local_dict`/`global_dict`, then the
caller's locals and globals.  The string is parsed with a whitelist
(:mod:`ndpack.engine.expr.parse`) and never evaluated as Python.

Examples
--------
>>> import numpy as np
>>> a = np.arange(5.0)
>>> evaluate("a * 2 + 1")
array([1., 3., 5., 7., 9.])
>>> e = lazyexpr("sum(a) - a")
>>> e.shape, e[()].tolist()
((5,), [10.0, 9.0, 8.0, 7.0, 6.0])
>>> o = np.zeros(5)
>>> lazyexpr("a + 1", out=o).compute() is o, o.tolist()
(True, [1.0, 2.0, 3.0, 4.0, 5.0])
"""

from __future__ import annotations

import sys

from ndpack.engine.compute import check_fp_accuracy, evaluate_into
from ndpack.engine.expr.door import evaluator
from ndpack.engine.expr.lazyexpr import LazyExpr, as_node
from ndpack.engine.expr.parse import parse
from ndpack.errors import ParameterError

__all__ = ["lazyexpr", "evaluate", "explain"]


def _caller_names(depth: int) -> dict:
    frame = sys._getframe(depth + 1)
    names = dict(frame.f_globals)
    names.update(frame.f_locals)
    return names


def lazyexpr(expression, operands=None, out=None, local_dict=None, global_dict=None):
    """A lazy expression from a string (or an existing LazyExpr/array).

    Parameters
    ----------
    expression : str or LazyExpr
    operands : dict, optional
    out : array-like, optional
        An existing array (NumPy, NDArray, h5py, zarr, ...) that
        :meth:`LazyExpr.compute` fills and returns instead of making a new NDArray.

    Returns
    -------
    LazyExpr
    """
    if isinstance(expression, LazyExpr) and out is None:
        return expression
    if isinstance(expression, LazyExpr):
        expr = LazyExpr(expression.node) if type(expression) is LazyExpr else expression
    elif not isinstance(expression, str):
        expr = LazyExpr(as_node(expression))
    else:
        names = {}
        if global_dict is None and local_dict is None and operands is None:
            names.update(_caller_names(1))
        names.update(global_dict or {})
        names.update(local_dict or {})
        names.update(operands or {})
        expr = LazyExpr(parse(expression, names))
    if out is not None:
        if tuple(out.shape) != expr.shape:
            raise ValueError(f"out has shape {tuple(out.shape)}, the expression {expr.shape}")
        expr.output = out            # compute() fills it (python-blosc2's lazyexpr(out=))
    return expr


def evaluate(expression, local_dict=None, global_dict=None, out=None, scheduler=None,
             **kwargs):
    """Evaluate an expression chunk by chunk: a drop-in for ``numexpr.evaluate`` that
    works on any array with ``shape``/``dtype``/``__getitem__`` and writes into `out` of
    any kind (NumPy, NDArray, h5py Dataset, zarr Array).

    numexpr's ``optimization=`` ('none', 'moderate', 'aggressive') is accepted and has
    no effect.

    Returns
    -------
    numpy.ndarray, or `out` when given.
    """
    if scheduler is not None:       # run as dask graphs (ndpack.engine.backends.dask)
        return evaluator().scheduled_evaluate(expression, local_dict, global_dict, out,
                                              scheduler=scheduler, _depth=1, **kwargs)
    check_fp_accuracy(kwargs.pop("fp_accuracy", None))
    # numexpr's tuning knobs (python-blosc2 passes them on): checked, no effect here
    if kwargs.pop("optimization", "aggressive") not in ("none", "moderate", "aggressive"):
        raise ParameterError("optimization must be 'none', 'moderate' or 'aggressive'")
    if kwargs:
        raise ParameterError(f"unknown argument(s) {sorted(kwargs)}")
    if isinstance(expression, str):
        names = {}
        if local_dict is None and global_dict is None:
            names.update(_caller_names(1))
        names.update(global_dict or {})
        names.update(local_dict or {})
        expr = LazyExpr(parse(expression, names))
    else:
        expr = lazyexpr(expression)
    if out is None:
        return expr[()]
    return evaluate_into(expr, out)


def explain(expression, operands=None, out=None, local_dict=None, global_dict=None,
            chunks=None, blocks=None, cparams=None, urlpath=None):
    """How ndpack will compute `expression`, known before anything is read or computed.

    Parameters
    ----------
    expression : str or LazyExpr
        As :func:`lazyexpr` takes it (a string's names resolve as there).
    out : array-like, optional
        Plan ``evaluate(..., out=out)`` instead of ``compute()`` into a new array.
    chunks, blocks, cparams, urlpath : optional
        The new array's, as ``compute()`` takes them.

    Returns
    -------
    Plan
        A mapping (:class:`ndpack.engine.run.plan.Plan`): ``path`` and ``why``, the
        output's layout, ``nregions`` pieces of ``region_shape``, ``threads``, the
        ``operands``, ``bytes_read``/``bytes_decoded``/``bytes_written``,
        ``projected_peak_bytes`` and what it is made of (``peak_terms``), and the
        ``steps`` computed first (reductions, products); ``str(plan)`` says it in words.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.ones((1000, 1000)), chunks=(250, 1000), blocks=(25, 1000))
    >>> b = ndpack.asarray(np.ones((1000, 1000)), chunks=(100, 1000))
    >>> plan = ndpack.explain("a * b - mean(a)")
    >>> plan["path"], len(plan["steps"]), plan["steps"][0]["path"]
    ('regions', 1, 'reduction mean')
    >>> plan["projected_peak_bytes"] < ndpack.memory_limit()
    True
    """
    if isinstance(expression, str) and global_dict is None and local_dict is None and \
            operands is None:
        local_dict = _caller_names(1)
    expr = lazyexpr(expression, operands=operands, local_dict=local_dict,
                    global_dict=global_dict)
    return expr.explain(out=out, chunks=chunks, blocks=blocks, cparams=cparams,
                        urlpath=urlpath)
