"""Expression trees: operands, constants and function applications.

A tree is immutable and knows its shape (NumPy broadcasting) and dtype (NumPy's
promotion rules, found by running the tree on one-element arrays) without reading
any operand data.

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.tree import Operand, Apply, Constant
>>> a = Operand(np.zeros((3, 1), np.int32))
>>> b = Operand(np.zeros(4, np.int32))
>>> t = Apply("divide", (a, b))
>>> t.shape, t.dtype
((3, 4), dtype('float64'))
>>> Apply("multiply", (a, Constant(2))).dtype
dtype('int32')
"""

from __future__ import annotations

import functools

import numpy as np

from ndpack.engine.functions import lookup

__all__ = ["Node", "Operand", "Constant", "Apply", "operands_of"]


class Node:
    """Base of tree nodes."""

    __slots__ = ()

    @property
    def ndim(self) -> int:
        return len(self.shape)


class Operand(Node):
    """An array-like leaf: anything with ``shape``, ``dtype`` and ``__getitem__``."""

    __slots__ = ("array", "name", "shape", "dtype")

    def __init__(self, array, name: str | None = None):
        for attr in ("shape", "dtype", "__getitem__"):
            if not hasattr(array, attr):
                raise TypeError(f"operand {name or type(array).__name__!r} has no {attr}; "
                                "operands need shape, dtype and __getitem__")
        dtype = np.dtype(array.dtype)
        if dtype.hasobject:
            raise TypeError(f"operand {name or type(array).__name__!r} has dtype {dtype}: "
                            "arrays of Python objects cannot be computed on")
        self.array = array
        self.name = name
        self.shape = tuple(int(s) for s in array.shape)
        self.dtype = dtype

    def __repr__(self):
        return self.name or f"<{type(self.array).__name__} {self.shape} {self.dtype}>"


class Constant(Node):
    """A Python or NumPy scalar (Python scalars are 'weak' in NumPy promotion)."""

    __slots__ = ("value",)
    shape = ()

    def __init__(self, value):
        if not isinstance(value, (bool, int, float, complex, np.generic)):
            raise TypeError(f"constants must be numbers or booleans, not {type(value).__name__}")
        self.value = value

    @property
    def dtype(self):
        return np.result_type(self.value)

    def __repr__(self):
        return repr(self.value)


class Apply(Node):
    """A function applied to argument nodes (operators included: ``add``, ``less``, ...)."""

    __slots__ = ("func", "args", "kwargs", "__dict__")

    def __init__(self, func: str, args: tuple, kwargs: dict | None = None):
        self.func = lookup(func)
        if len(args) not in self.func.nargs:
            raise ValueError(f"{func}() takes {' or '.join(map(str, self.func.nargs))} "
                             f"arguments, got {len(args)}")
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.shape     # check broadcasting now, naming the operands
        self.dtype

    @functools.cached_property
    def shape(self) -> tuple:
        shapes = [a.shape for a in self.args]
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            parts = ", ".join(f"{a!r} {a.shape}" for a in self.args)
            raise ValueError(f"operands of {self.func.name}() cannot be broadcast together: "
                             f"{parts}") from None

    @functools.cached_property
    def dtype(self) -> np.dtype:
        with np.errstate(all="ignore"):
            return np.asarray(probe(self)).dtype

    def __repr__(self):
        inner = ", ".join([repr(a) for a in self.args] +
                          [f"{k}={v!r}" for k, v in self.kwargs.items()])
        return f"{self.func.name}({inner})"


def probe(node: Node):
    """Run the tree on one-element stand-ins: the result has the tree's dtype."""
    if isinstance(node, Constant):
        return node.value
    if isinstance(node, Apply):
        return node.func.numpy(*[probe(a) for a in node.args], **node.kwargs)
    return np.ones((), dtype=node.dtype)      # operands and reductions: known dtype


def operands_of(node: Node) -> list:
    """The distinct operands of a tree, in first-seen order (those under reduction
    nodes too)."""
    seen, out = set(), []

    def walk(n):
        if isinstance(n, Operand):
            if id(n.array) not in seen:
                seen.add(id(n.array))
                out.append(n)
        elif isinstance(n, Apply):
            for a in n.args:
                walk(a)
        else:                                 # a reduction: its argument and mask
            for a in getattr(n, "children", ()):
                walk(a)

    walk(node)
    return out
