"""Expression trees: operands, constants, function applications and reductions.

A tree is immutable and knows its shape (NumPy broadcasting) and dtype (NumPy's
promotion rules, found by running the tree on one-element arrays) without reading
any operand data.

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.expr.nodes import Operand, Apply, Constant
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
import warnings

import numpy as np

from ndpack.engine.expr.axes import normalize_axis
from ndpack.engine.expr.functions import REDUCTIONS, lookup

__all__ = ["Node", "Operand", "Constant", "Apply", "Reduce", "Contract", "LINALG",
           "Accumulate", "ACCUMULATE",
           "operands_of", "elementwise", "result_shape", "norm_axes"]


class Node:
    """Base of tree nodes."""

    __slots__ = ()

    @property
    def ndim(self) -> int:
        return len(self.shape)


class Operand(Node):
    """An array-like leaf: anything with ``shape``, ``dtype`` and ``__getitem__``.

    `source`, when given, is the constructor call that made `array` inside an expression
    string (``arange(10, shape=(2, 5))``): a saved expression writes that text instead of
    naming a file."""

    __slots__ = ("array", "name", "shape", "dtype", "source")

    def __init__(self, array, name: str | None = None, source: str | None = None):
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
        self.source = source
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


# ---------------------------------------------------------------------------------------
# reductions (computed by ndpack.engine.ops.reductions before elementwise evaluation)

NUMPY_REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "mean": np.mean, "std": np.std, "var": np.var,
    "min": np.min, "max": np.max, "any": np.any, "all": np.all, "argmin": np.argmin,
    "argmax": np.argmax, "count_nonzero": np.count_nonzero}
_WITH_DTYPE = ("sum", "prod", "mean", "std", "var")


def _norm_axis(axis, ndim: int, op: str) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    single = not isinstance(axis, (tuple, list))
    if op in ("argmin", "argmax") and not single:
        raise TypeError(f"{op}() takes an int or None for axis, not {axis!r}")
    items = (axis,) if single else tuple(axis)
    out = []
    for ax in items:
        out.append(normalize_axis(ax, ndim, strict=True, message="axis must be an int, a "
                                  f"tuple of ints or None, not {axis!r}"))
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in axis {axis!r}")
    return tuple(sorted(out))


class Reduce(Node):
    """A reduction of `arg` (a tree node): shape and dtype known without reading data.

    Parameters
    ----------
    op : str
        One of ``sum prod mean std var min max any all argmin argmax count_nonzero``.
    arg : Node
    axis, keepdims, dtype, ddof, where, initial
        NumPy's meaning; `where` is a boolean node broadcastable to `arg`.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack.engine.expr.nodes import Operand
    >>> r = Reduce("mean", Operand(np.zeros((3, 4), np.int32)), axis=1, keepdims=True)
    >>> r.shape, r.dtype
    ((3, 1), dtype('float64'))
    """

    __slots__ = ("op", "arg", "axis", "flat", "keepdims", "req_dtype", "ddof", "where",
                 "initial", "shape", "dtype")

    def __init__(self, op: str, arg: Node, axis=None, keepdims=False, dtype=None, ddof=0,
                 where=None, initial=None):
        if op not in REDUCTIONS:
            raise ValueError(f"unknown reduction {op!r}; known: {', '.join(REDUCTIONS)}")
        self.op, self.arg = op, arg
        self.flat = axis is None
        self.axis = _norm_axis(axis, arg.ndim, op)
        if not isinstance(keepdims, (bool, np.bool_)):
            raise TypeError(f"keepdims must be True or False, not {keepdims!r}")
        self.keepdims = bool(keepdims)
        if dtype is not None and op not in _WITH_DTYPE:
            raise TypeError(f"{op}() takes no dtype argument")
        try:
            self.req_dtype = None if dtype is None else np.dtype(dtype)
        except TypeError:
            raise TypeError(f"dtype {dtype!r} of {op}() is not a NumPy dtype") from None
        if op in ("std", "var"):
            if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, float,
                                                                           np.number)):
                raise TypeError(f"ddof must be a number, not {ddof!r}")
        elif ddof != 0:
            raise TypeError(f"{op}() takes no ddof argument")
        self.ddof = ddof
        if where is not None:
            if op in ("argmin", "argmax", "count_nonzero"):
                raise TypeError(f"{op}() takes no where argument")
            if where.dtype != np.bool_:
                raise TypeError(f"where= must be boolean, not {where.dtype}")
            try:
                if np.broadcast_shapes(where.shape, arg.shape) != arg.shape:
                    raise ValueError
            except ValueError:
                raise ValueError(f"where= of shape {where.shape} does not broadcast to the "
                                 f"reduced array's shape {arg.shape}") from None
        if initial is not None and op not in ("min", "max"):
            raise TypeError(f"{op}() takes no initial argument")
        if where is not None and initial is None and op in ("min", "max"):
            raise ValueError(f"{op}() with where= needs initial= (there is no identity "
                             "for the masked-out elements), as in NumPy")
        self.where, self.initial = where, initial
        self.shape = tuple(1 if d in self.axis else n for d, n in enumerate(arg.shape)
                           if self.keepdims or d not in self.axis)
        self.dtype = numpy_call(self, np.ones((1,) * arg.ndim, arg.dtype), None).dtype

    @property
    def children(self) -> tuple:
        return (self.arg,) if self.where is None else (self.arg, self.where)

    def with_children(self, arg: Node, where: Node | None) -> Reduce:
        """This reduction over other children of the same shapes and dtypes (prepared
        ones: see :func:`ndpack.engine.compute.prepare`)."""
        new = object.__new__(Reduce)
        for k in Reduce.__slots__:
            setattr(new, k, getattr(self, k))
        new.arg, new.where = arg, where
        return new

    def numpy_kwargs(self) -> dict:
        """Keyword arguments of the equivalent NumPy call (without where)."""
        kw = {"axis": None if self.flat else self.axis, "keepdims": self.keepdims}
        if self.op in ("argmin", "argmax") and not self.flat:
            kw["axis"] = self.axis[0]
        if self.req_dtype is not None:
            kw["dtype"] = self.req_dtype
        if self.op in ("std", "var"):
            kw["ddof"] = self.ddof
        if self.initial is not None:
            kw["initial"] = self.initial
        return kw

    def __repr__(self):
        kw = {k: v for k, v in self.numpy_kwargs().items() if v is not None and v is not False}
        if self.where is not None:
            kw["where"] = self.where
        inner = ", ".join([repr(self.arg)] + [f"{k}={v!r}" for k, v in kw.items()])
        return f"{self.op}({inner})"


LINALG = {"matmul": (), "tensordot": ("axes",), "vecdot": ("axis",), "outer": ()}


class Contract(Node):
    """A linear-algebra product of two nodes (``matmul``, ``tensordot``, ``vecdot``,
    ``outer``): shape and dtype known without reading data; computed out of core by
    :mod:`ndpack.engine.ops.linalg` before the elementwise evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> a, b = Operand(np.zeros((3, 4, 5))), Operand(np.zeros((4, 5, 6), np.float32))
    >>> c = Contract("tensordot", (a, b), {"axes": ((1, 2), (0, 1))})
    >>> c.shape, c.dtype
    ((3, 6), dtype('float64'))
    """

    __slots__ = ("op", "args", "kwargs", "shape", "dtype")

    def __init__(self, op: str, args: tuple, kwargs: dict | None = None):
        if op not in LINALG:
            raise ValueError(f"unknown product {op!r}; known: {', '.join(LINALG)}")
        if len(args) != 2:
            raise ValueError(f"{op}() takes two arrays, got {len(args)}")
        kwargs = dict(kwargs or {})
        for k in kwargs:
            if k not in LINALG[op]:
                raise TypeError(f"{op}() got an unexpected keyword {k!r}")
        self.op, self.args, self.kwargs = op, tuple(args), kwargs
        self.shape = result_shape(op, args[0].shape, args[1].shape, kwargs)
        stand = [np.ones((1,) * a.ndim, a.dtype) for a in args]
        with np.errstate(all="ignore"):
            if op == "vecdot":
                self.dtype = np.sum(np.conj(stand[0]) * stand[1]).dtype
            elif op == "matmul":
                self.dtype = np.matmul(*[s if s.ndim else s.reshape(1) for s in stand]).dtype
            else:
                self.dtype = np.tensordot(stand[0], stand[1], axes=0).dtype

    @property
    def children(self) -> tuple:
        return self.args

    def __repr__(self):
        inner = ", ".join([repr(a) for a in self.args] +
                          [f"{k}={v!r}" for k, v in self.kwargs.items()])
        return f"{self.op}({inner})"


#: cumulative functions of a string expression: their ufunc and keywords
ACCUMULATE = {"cumulative_sum": np.add, "cumulative_prod": np.multiply}


class Accumulate(Node):
    """``cumulative_sum`` / ``cumulative_prod`` of a sub-tree along `axis` (required
    when it has more than one dimension), as NumPy's ``cumulative_sum``; like a
    product, it is computed whole by :mod:`ndpack.engine.ops.cumulative` before the
    elementwise evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> c = Accumulate("cumulative_sum", Operand(np.zeros((3, 4), np.int32)), axis=1,
    ...                include_initial=True)
    >>> c.shape, c.dtype
    ((3, 5), dtype('int64'))
    """

    __slots__ = ("op", "arg", "axis", "include_initial", "shape", "dtype")

    def __init__(self, op: str, arg: Node, axis=None, include_initial=False):
        if op not in ACCUMULATE:
            raise ValueError(f"unknown cumulative function {op!r}")
        if axis is None and arg.ndim == 1:
            axis = 0
        if axis is None or isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ValueError(f"{op}() needs an integer axis for {arg.ndim}-d arrays")
        if not -max(arg.ndim, 1) <= axis < max(arg.ndim, 1) or not arg.ndim:
            raise np.exceptions.AxisError(axis, arg.ndim)
        self.op, self.arg = op, arg
        self.axis, self.include_initial = int(axis) % arg.ndim, bool(include_initial)
        self.shape = tuple(n + self.include_initial if d == self.axis else n
                           for d, n in enumerate(arg.shape))
        stand = np.ones((1,) * arg.ndim, arg.dtype)
        self.dtype = ACCUMULATE[op].accumulate(stand, axis=self.axis).dtype

    @property
    def children(self) -> tuple:
        return (self.arg,)

    def kwargs(self) -> dict:
        """Keywords of the cumulative function call."""
        kw = {"axis": self.axis}
        if self.include_initial:
            kw["include_initial"] = True
        return kw

    def __repr__(self):
        inner = ", ".join([repr(self.arg)] + [f"{k}={v!r}" for k, v in self.kwargs().items()])
        return f"{self.op}({inner})"


def result_shape(op: str, s1: tuple, s2: tuple, kwargs: dict) -> tuple:
    """Shape of ``op(x1, x2, **kwargs)`` for operands of shapes `s1`, `s2` (checks
    that they fit, with NumPy's messages)."""
    s1, s2 = tuple(s1), tuple(s2)
    if op == "tensordot":
        ax1, ax2 = norm_axes(kwargs.get("axes", 2), len(s1), len(s2))
        for a, b in zip(ax1, ax2):
            if s1[a] != s2[b]:
                raise ValueError(f"tensordot: axis {a} of the first array has {s1[a]}, "
                                 f"axis {b} of the second {s2[b]}")
        return tuple(n for d, n in enumerate(s1) if d not in ax1) + \
            tuple(n for d, n in enumerate(s2) if d not in ax2)
    if op == "outer":
        if len(s1) != 1 or len(s2) != 1:
            raise ValueError("outer: takes 1-D arrays")
        return s1 + s2
    if op == "vecdot":
        try:
            full = tuple(np.broadcast_shapes(s1, s2))
        except ValueError:
            raise ValueError(f"vecdot: shapes {s1} and {s2} do not broadcast") from None
        axis = kwargs.get("axis", -1)
        if not full or not -len(full) <= axis < len(full):
            raise ValueError(f"vecdot: axis {axis} out of range for shape {full}")
        axis %= len(full)
        if s1[axis - len(full)] != s2[axis - len(full)]:
            raise ValueError(f"vecdot: the arrays differ along axis {axis}")
        return full[:axis] + full[axis + 1:]
    if op == "matmul":
        if not s1 or not s2:
            raise ValueError("matmul: operands must have at least one dimension")
        k2 = s2[-2] if len(s2) > 1 else s2[0]
        if s1[-1] != k2:
            raise ValueError(f"matmul: the first array has {s1[-1]} columns, the second "
                             f"{k2} rows")
        b1 = s1[:-2] if len(s1) > 1 else ()
        b2 = s2[:-2] if len(s2) > 1 else ()
        try:
            batch = tuple(np.broadcast_shapes(b1, b2))
        except ValueError:
            raise ValueError(f"matmul: batch dimensions {b1} and {b2} do not broadcast") \
                from None
        return batch + ((s1[-2],) if len(s1) > 1 else ()) + ((s2[-1],) if len(s2) > 1 else ())
    raise ValueError(f"unknown product {op!r}")


def norm_axes(axes, nd1, nd2):
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(nd1, nd2):
            raise ValueError(f"axes={n} is out of range for arrays of {nd1} and {nd2} dims")
        return list(range(nd1 - n, nd1)), list(range(n))
    try:
        a1, a2 = axes
    except (TypeError, ValueError):
        raise ValueError(f"axes must be an int or a pair of axis sequences, not {axes!r}") \
            from None
    a1 = [a1] if isinstance(a1, (int, np.integer)) else list(a1)
    a2 = [a2] if isinstance(a2, (int, np.integer)) else list(a2)
    if len(a1) != len(a2):
        raise ValueError(f"axes {axes!r}: both sequences need the same length")
    out = []
    for ax, nd in ((a1, nd1), (a2, nd2)):
        norm = []
        for a in ax:
            if not -nd <= a < nd:
                raise ValueError(f"axis {a} is out of range for an array of {nd} dims")
            norm.append(int(a) % nd)
        if len(set(norm)) != len(norm):
            raise ValueError(f"repeated axis in {ax!r}")
        out.append(norm)
    return out[0], out[1]


# ---------------------------------------------------------------------------------------
# planning: contracted steps


def numpy_call(red: Reduce, data, where) -> np.ndarray:
    """NumPy's answer on in-memory `data` (the reference, used on stand-ins)."""
    kw = red.numpy_kwargs()
    if where is not None:
        kw["where"] = where
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(NUMPY_REDUCTIONS[red.op](data, **kw))


def _check_big_ints(node: Apply, values: list) -> None:
    """A Python int beyond int64/uint64 meets NumPy's rules when an array or a float
    is there to convert it; among integer constants only, NumPy would compute on
    Python objects (``abs``, ``square``: unbounded work): an OverflowError instead."""
    if any(isinstance(v, np.ndarray) for v in values) or (
            len(values) > 1 and any(isinstance(v, (float, complex, np.inexact))
                                    for v in values)):
        return
    for v in values:
        if type(v) is int and not -2**63 <= v < 2**64:
            raise OverflowError(f"a Python integer of {v.bit_length()} bits is out of "
                                f"bounds for int64 in {node.func.name}() of constants")


def probe(node: Node):
    """Run the tree on one-element stand-ins: the result has the tree's dtype."""
    if isinstance(node, Constant):
        return node.value
    if isinstance(node, Apply):
        values = [probe(a) for a in node.args]
        _check_big_ints(node, values)
        return node.func.numpy(*values, **node.kwargs)
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


def elementwise(node: Node) -> bool:
    """Whether the tree has no reduction or product left in it (the elementwise paths
    run it as it is; otherwise it must be prepared first).

    Examples
    --------
    >>> import numpy as np
    >>> x = Operand(np.ones(3))
    >>> elementwise(Apply("sin", (x,))), elementwise(Reduce("sum", x))
    (True, False)
    """
    if isinstance(node, (Reduce, Contract, Accumulate)):
        return False
    if isinstance(node, Apply):
        return all(elementwise(a) for a in node.args)
    return True
