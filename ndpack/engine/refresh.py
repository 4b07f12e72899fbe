"""Trees that follow their operands: rebuild a tree when an operand changed shape.

Tree nodes compute their shape once, when built.  An expression whose operands are
resized afterwards (``a.resize(...)``, an NDArray grown by ``append``) would keep a
stale shape; :func:`signature` records the shapes of the stored arrays under a tree,
and :func:`rebuild` builds the same tree again over the current shapes (broadcasting
and reductions re-checked, views re-normalized).

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(4.0))
>>> e = ndpack.lazyexpr("a * 2 + sum(a)", operands={"a": a})
>>> e.shape
(4,)
>>> a.resize((6,)); a[4:] = [4, 5]
>>> e.shape, e[()].tolist()
((6,), [15.0, 17.0, 19.0, 21.0, 23.0, 25.0])
"""

from __future__ import annotations

from ndpack.engine.tree import Apply, Constant, Contract, Node, Operand, Reduce
from ndpack.engine.views import SliceView, TransposeView

__all__ = ["signature", "rebuild"]


def _leaf_shapes(node: Node, out: list) -> list:
    from ndpack.engine.lazyexpr import LazyExpr
    if isinstance(node, Operand):
        arr = node.array
        while isinstance(arr, (SliceView, TransposeView)):
            arr = arr.base
        if isinstance(arr, LazyExpr):
            _leaf_shapes(arr._node, out)
        else:
            out.append((id(arr), tuple(arr.shape)))
    elif isinstance(node, Apply):
        for a in node.args:
            _leaf_shapes(a, out)
    elif isinstance(node, (Reduce, Contract)):
        for a in node.children:
            _leaf_shapes(a, out)
    return out


def signature(node: Node) -> tuple:
    """The current shapes of the stored arrays under `node` (a cheap walk)."""
    return tuple(_leaf_shapes(node, []))


def rebuild(node: Node) -> Node:
    """The same tree over the operands' current shapes."""
    if isinstance(node, Constant):
        return node
    if isinstance(node, Operand):
        return Operand(_view(node.array), node.name)
    if isinstance(node, Apply):
        return Apply(node.func.name, tuple(rebuild(a) for a in node.args), node.kwargs)
    if isinstance(node, Reduce):
        return Reduce(node.op, rebuild(node.arg), axis=node.numpy_kwargs()["axis"],
                      keepdims=node.keepdims, dtype=node.req_dtype, ddof=node.ddof,
                      where=None if node.where is None else rebuild(node.where),
                      initial=node.initial)
    if isinstance(node, Contract):
        return Contract(node.op, tuple(rebuild(a) for a in node.args), node.kwargs)
    raise TypeError(f"cannot rebuild {type(node).__name__} nodes")


def _view(arr):
    from ndpack.engine.lazyexpr import LazyExpr
    if isinstance(arr, SliceView):
        return SliceView(_view(arr.base), arr.key)
    if isinstance(arr, TransposeView):
        return TransposeView(_view(arr.base))
    if isinstance(arr, LazyExpr):
        arr.node                               # refreshes it if its operands changed
    return arr
