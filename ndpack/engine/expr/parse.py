"""Parse expression strings into trees with ``ast`` and a whitelist.

Accepted: names (resolved to operands or numbers; ``nan`` and ``inf`` otherwise are the
floats), numeric and boolean constants,
arithmetic, comparison (chained too), bitwise and boolean operators, calls of the
functions in :mod:`ndpack.engine.expr.functions` with their known keywords, reductions
(``sum(a, axis=0)``, ``mean(a, axis=1, keepdims=True)``, ``where=`` a boolean
expression), ``cumulative_sum``/``cumulative_prod`` (``axis=``, ``include_initial=``) and
the same as methods (``(a + 1).sum(axis=0)``), NumPy scalars of a
number (``np.float32(0)``), the constructors of :data:`CONSTRUCTORS` with literal
arguments (``arange(10, shape=(2, 5))``, ``zeros((3,), dtype=int32)``: a new array
of at most :data:`MAX_CONSTRUCTED_ITEMS` items), subscripts with constant integers, slices, ``None`` and ``...``
(``a[1:3, ::-2]``, ``sin(a)[0]``) and ``.T``.  Everything else -- other attributes,
lambdas, comprehensions, non-constant or fancy subscripts, f-strings, ``__import__``,
unknown names or calls -- raises ``ValueError`` quoting the offending part.  The text
is never given to ``eval`` or ``exec``.

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.expr.parse import parse
>>> t = parse("sin(a) + 2 * b", {"a": np.zeros(3), "b": np.ones(3)})
>>> t
add(sin(a), multiply(2, b))
>>> parse("a[::2].T + sum(a, axis=1)", {"a": np.zeros((2, 4))}).shape
(4, 2)
>>> parse("a.__class__", {"a": np.zeros(3)})
Traceback (most recent call last):
...
ValueError: not allowed in an expression: attribute access 'a.__class__'
"""

from __future__ import annotations

import ast
import math
import numbers
import operator

import numpy as np

from ndpack.engine.expr.functions import BINARY_OPERATORS, FUNCTIONS, REDUCTIONS, UNARY_OPERATORS
from ndpack.engine.expr.nodes import (ACCUMULATE, LINALG, Accumulate, Apply, Constant, Contract,
                                      Node, Operand, Reduce)
from ndpack.engine.expr.views import SliceView, TransposeView
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.storage import constructors

__all__ = ["parse", "MAX_LENGTH", "MAX_CONSTRUCTED_ITEMS", "CONSTRUCTORS", "SCALAR_TYPES"]

MAX_LENGTH = 10_000          # characters; longer strings are refused before parsing
MAX_CONSTRUCTED_ITEMS = 2 ** 27     # items of an array built by a constructor call

#: NumPy scalar types callable as ``np.<name>(number)`` (and usable as dtypes)
SCALAR_TYPES = frozenset(("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16",
                          "uint32", "uint64", "float16", "float32", "float64", "complex64",
                          "complex128"))
#: constructors callable in an expression: (positional parameters, keyword-only ones)
CONSTRUCTORS = {
    "arange": (("start", "stop", "step"), ("dtype", "shape", "chunks", "blocks")),
    "linspace": (("start", "stop", "num"), ("dtype", "shape", "endpoint", "chunks",
                                            "blocks")),
    "zeros": (("shape",), ("dtype", "chunks", "blocks")),
    "ones": (("shape",), ("dtype", "chunks", "blocks")),
    "full": (("shape", "fill_value"), ("dtype", "chunks", "blocks")),
}
_MAX_DEPTH = 200             # nesting; deeper trees are refused
#: cumulative functions by name in a string (NumPy's cumsum/cumprod with an axis too)
_CUMULATIVE_NAMES = {**{n: n for n in ACCUMULATE}, "cumsum": "cumulative_sum",
                     "cumprod": "cumulative_prod"}
_NONFINITE = {"nan": math.nan, "inf": math.inf}   # names, unless an operand is so named


def parse(text: str, names: dict) -> Node:
    """Parse `text` into a tree whose names come from `names` (name → array or number)."""
    if not isinstance(text, str):
        raise TypeError(f"expression must be a string, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ValueError(f"expression of {len(text)} characters is longer than the "
                         f"{MAX_LENGTH}-character limit")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"invalid expression {text[:200]!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"expression nests too deeply to parse (limit {_MAX_DEPTH} levels)") \
            from None
    if isinstance(tree.body, ast.Constant) and isinstance(tree.body.value, (str, bytes)):
        raise ValueError(f"not allowed in an expression: a string alone {text[:200]!r} "
                         "(strings are arguments of string functions and comparisons)")
    return _Builder(text, names).visit(tree.body, 0)


# Constant subexpressions of Python numbers (``2**70``, ``1.5 * 4``) are computed as
# Python computes them in NumPy code -- before they meet an array -- so ``a * 2**70`` is
# ``a * 1.18e21`` (NumPy's rules then apply to the big integer: a float array takes it
# as a float, an integer array raises OverflowError), never a wrapped int64.  Integer
# results are bounded: a constant beyond this many bits is an OverflowError at parse
# time, never an unbounded computation (``2**2**40``).
MAX_CONSTANT_BITS = 4096
_PY_NUMBERS = (bool, int, float, complex)


def _fold(op: str, left: Node, right: Node, src: str):
    """The Constant of `op` over two Python-number constants, or None to leave it to
    NumPy (other operators, NumPy scalars, divisions by zero)."""
    if not (isinstance(left, Constant) and isinstance(right, Constant)):
        return None
    a, b = left.value, right.value
    if type(a) not in _PY_NUMBERS or type(b) not in _PY_NUMBERS:
        return None
    ints = isinstance(a, int) and isinstance(b, int)
    if op == "power":
        if ints and b >= 0 and max(abs(a).bit_length(), 1) * b > MAX_CONSTANT_BITS \
                and abs(a) > 1:
            raise OverflowError(f"the constant {src!r} has more than {MAX_CONSTANT_BITS} "
                                "bits")
        if ints and b < 0 and a == 0:
            return None
    elif op == "multiply":
        if ints and abs(a).bit_length() + abs(b).bit_length() > MAX_CONSTANT_BITS:
            raise OverflowError(f"the constant {src!r} has more than {MAX_CONSTANT_BITS} "
                                "bits")
    elif op in ("divide", "floor_divide", "remainder"):
        if b == 0:
            return None                        # NumPy's inf/nan/0 and warning, not raising
    elif op not in ("add", "subtract"):
        return None
    fn = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
          "power": operator.pow, "divide": operator.truediv,
          "floor_divide": operator.floordiv, "remainder": operator.mod}[op]
    try:
        value = fn(a, b)
    except (OverflowError, ZeroDivisionError, ValueError) as exc:
        raise OverflowError(f"the constant {src!r} cannot be computed: {exc}") from None
    if isinstance(value, int) and abs(value).bit_length() > MAX_CONSTANT_BITS:
        raise OverflowError(f"the constant {src!r} has more than {MAX_CONSTANT_BITS} bits")
    return Constant(value)


class _Builder:
    def __init__(self, text: str, names: dict):
        self.text = text
        self.names = names
        self.operands: dict[str, Operand] = {}

    def _src(self, node) -> str:
        seg = ast.get_source_segment(self.text.strip(), node)
        return seg if seg is not None else ast.dump(node)

    def reject(self, node, what: str):
        raise ValueError(f"not allowed in an expression: {what} {self._src(node)!r}")

    def visit(self, node, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            raise ValueError(f"expression nests deeper than {_MAX_DEPTH} levels")
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            self.reject(node, _describe(node))
        return method(node, depth + 1)

    def visit_Constant(self, node, depth):
        v = node.value
        if isinstance(v, bool) or (isinstance(v, numbers.Number) and not isinstance(v, str)):
            return Constant(v)
        if isinstance(v, (str, bytes)) and len(v) <= 4096:   # next to string arrays
            return Constant(np.str_(v) if isinstance(v, str) else np.bytes_(v))
        self.reject(node, "constant of type " + type(v).__name__)

    def visit_Name(self, node, depth):
        name = node.id
        if name.startswith("__"):
            self.reject(node, "dunder name")
        if name in ("True", "False"):
            return Constant(name == "True")
        if name not in self.names and name in _NONFINITE:
            return Constant(_NONFINITE[name])             # python-blosc2's bare nan, inf
        if name not in self.names:
            if name in FUNCTIONS or name in REDUCTIONS or name in LINALG:
                self.reject(node, "function used as a value")
            raise ValueError(f"unknown name {name!r} in expression {self.text!r}: pass it in "
                             "operands= / local_dict= or define it in the calling scope")
        value = self.names[name]
        if isinstance(value, (bool, int, float, complex, np.generic)):
            return Constant(value)
        if isinstance(value, LazyExpr) and value.dtype == value.node.dtype:
            return value.node                         # (an astype() stays an operand)
        if name not in self.operands:
            self.operands[name] = Operand(value, name)
        return self.operands[name]

    def visit_BinOp(self, node, depth):
        op = BINARY_OPERATORS.get(type(node.op).__name__)
        if op is None:
            self.reject(node, "operator")
        left, right = self.visit(node.left, depth), self.visit(node.right, depth)
        folded = _fold(op, left, right, self._src(node))
        return folded if folded is not None else Apply(op, (left, right))

    def visit_UnaryOp(self, node, depth):
        op = UNARY_OPERATORS.get(type(node.op).__name__)
        if op is None:
            self.reject(node, "operator")
        arg = self.visit(node.operand, depth)
        if op == "negative" and isinstance(arg, Constant):
            return Constant(-arg.value)
        return Apply(op, (arg,))

    def visit_BoolOp(self, node, depth):
        fn = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        args = [self.visit(v, depth) for v in node.values]
        out = args[0]
        for a in args[1:]:
            out = Apply(fn, (out, a))
        return out

    def visit_Compare(self, node, depth):
        left = self.visit(node.left, depth)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            fn = BINARY_OPERATORS.get(type(op).__name__)
            if fn is None:
                self.reject(node, "comparison")
            right = self.visit(right_node, depth)
            cmp = Apply(fn, (left, right))
            result = cmp if result is None else Apply("logical_and", (result, cmp))
            left = right
        return result

    def visit_Call(self, node, depth):
        func = node.func
        if isinstance(func, ast.Attribute) and (func.attr in REDUCTIONS or
                                                func.attr in ACCUMULATE):
            # ``x.sum(axis=0)``: the method is the function of its object
            call = ast.copy_location(ast.Call(ast.Name(func.attr, ast.Load()),
                                              [func.value] + list(node.args),
                                              node.keywords), node)
            if func.attr in ACCUMULATE:
                return self._accumulate(call, func.attr, depth)
            return self._reduction(call, func.attr, depth)
        if isinstance(func, ast.Attribute) and self._is_numpy(func.value):
            return self._scalar(node, func.attr)
        if isinstance(func, ast.Attribute) and func.attr == "reshape" and \
                isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name) \
                and func.value.func.id in CONSTRUCTORS:
            return self._construct(func.value, func.value.func.id, reshape=node)
        if not isinstance(func, ast.Name):
            self.reject(node, "call of")
        name = func.id
        if name in CONSTRUCTORS and name not in FUNCTIONS:
            return self._construct(node, name)
        if name in REDUCTIONS:
            return self._reduction(node, name, depth)
        if name in _CUMULATIVE_NAMES and name not in self.names:
            return self._accumulate(node, _CUMULATIVE_NAMES[name], depth)
        if name in LINALG:
            return self._product(node, name, depth)
        if name not in FUNCTIONS:
            self.reject(node, "call of unknown function")
        func = FUNCTIONS[name]
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.reject(a, "starred argument")
            args.append(self.visit(a, depth))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in func.keywords:
                self.reject(node, f"keyword {kw.arg!r} for {name}() in")
            value = self.visit(kw.value, depth)
            if not isinstance(value, Constant):
                self.reject(kw.value, "non-constant keyword value")
            kwargs[kw.arg] = value.value
        return Apply(name, tuple(args), kwargs)


    # ---- NumPy scalars and array constructors ----------------------------------------
    def _is_numpy(self, node) -> bool:
        """`node` is ``np`` or ``numpy``, not given as an operand of another kind."""
        return isinstance(node, ast.Name) and node.id in ("np", "numpy") and \
            self.names.get(node.id, np) is np

    def _scalar(self, node, kind: str):
        """``np.float32(0)``: a NumPy scalar of a number literal."""
        if kind not in SCALAR_TYPES or len(node.args) != 1 or node.keywords:
            self.reject(node, "call of")
        value = self._literal(node.args[0])
        if isinstance(value, (str, tuple)) or value is None:
            self.reject(node.args[0], "non-number argument")
        return Constant(getattr(np, kind)(value))

    def _dtype(self, node):
        """A dtype keyword: a string, a dtype name (``int32``) or ``np.int32``."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        elif isinstance(node, ast.Name) and node.id not in self.names:
            name = node.id
        elif isinstance(node, ast.Attribute) and self._is_numpy(node.value):
            name = node.attr
        else:
            self.reject(node, "dtype")
        if name in SCALAR_TYPES:
            return np.dtype(getattr(np, name))
        if name in ("bool", "int", "float", "complex") or isinstance(node, ast.Constant):
            try:
                return np.dtype(name)
            except TypeError:
                pass
        self.reject(node, "dtype")

    def _construct(self, node, name: str, reshape=None):
        """``arange(10, shape=(2, 5))`` and the other constructors of literal arguments:
        a new in-memory array of at most ``MAX_CONSTRUCTED_ITEMS`` items;
        ``arange(10).reshape((2, 5))`` (`reshape`: that call) gives it the shape."""
        params = CONSTRUCTORS[name]
        if len(node.args) > len(params[0]) or any(isinstance(a, ast.Starred)
                                                 for a in node.args):
            self.reject(node, f"arguments of {name}() in")
        kwargs = {params[0][k]: self._literal(a) for k, a in enumerate(node.args)}
        for kw in node.keywords:
            if kw.arg is None or kw.arg in kwargs or kw.arg not in params[0] + params[1]:
                self.reject(node, f"keyword {kw.arg!r} for {name}() in")
            kwargs[kw.arg] = self._dtype(kw.value) if kw.arg == "dtype" else \
                self._literal(kw.value)
        if reshape is not None:
            args = [self._literal(a) for a in reshape.args]
            args = [tuple(args)] if len(args) > 1 else args      # reshape(2, 5)
            args += [self._literal(kw.value) for kw in reshape.keywords if kw.arg == "shape"]
            if len(args) != 1 or len(reshape.keywords) > 1 or "shape" in kwargs or \
                    any(kw.arg != "shape" for kw in reshape.keywords):
                self.reject(reshape, "reshape of")
            kwargs["shape"] = args[0]
            node = reshape
        try:
            n = _items(name, kwargs)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
            raise ValueError(f"bad arguments in {self._src(node)!r}: {exc}") from None
        if n > MAX_CONSTRUCTED_ITEMS:
            raise ValueError(f"{self._src(node)!r} makes {n} items, more than an expression "
                             f"builds ({MAX_CONSTRUCTED_ITEMS}): create the array apart")
        try:
            array = getattr(constructors, name)(**kwargs)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc} in {self._src(node)!r}") from None
        text = self._src(node)
        return Operand(array, text, source=text)

    # ---- reductions ------------------------------------------------------------------
    def _reduction(self, node, name, depth):
        if not 1 <= len(node.args) <= 2:
            raise ValueError(f"{name}() takes the array and optionally the axis as "
                             f"positional arguments, in {self._src(node)!r}")
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.reject(a, "starred argument")
        arg = self.visit(node.args[0], depth)
        kwargs = {}
        if len(node.args) == 2:
            kwargs["axis"] = self._literal(node.args[1])
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in REDUCTIONS[name] or kw.arg in kwargs:
                self.reject(node, f"keyword {kw.arg!r} for {name}() in")
            if kw.arg == "where":
                kwargs["where"] = self.visit(kw.value, depth)
            else:
                kwargs[kw.arg] = self._literal(kw.value)
        try:
            return Reduce(name, arg, **kwargs)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc} in {self._src(node)!r}") from None

    def _accumulate(self, node, name, depth):
        """``cumulative_sum(x, axis=0)`` (and ``include_initial=``, literal)."""
        if len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            raise ValueError(f"{name}() takes the array as its one positional argument, "
                             f"in {self._src(node)!r}")
        kwargs = {}
        for kw in node.keywords:
            if kw.arg not in ("axis", "include_initial") or kw.arg in kwargs:
                self.reject(node, f"keyword {kw.arg!r} for {name}() in")
            kwargs[kw.arg] = self._literal(kw.value)
        try:
            return Accumulate(name, self.visit(node.args[0], depth), **kwargs)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc} in {self._src(node)!r}") from None

    def _product(self, node, name, depth):
        if len(node.args) != 2 or any(isinstance(a, ast.Starred) for a in node.args):
            raise ValueError(f"{name}() takes two arrays as positional arguments, in "
                             f"{self._src(node)!r}")
        args = tuple(self.visit(a, depth) for a in node.args)
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in LINALG[name]:
                self.reject(node, f"keyword {kw.arg!r} for {name}() in")
            kwargs[kw.arg] = self._literal(kw.value)
        try:
            return Contract(name, args, kwargs)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{exc} in {self._src(node)!r}") from None

    def _literal(self, node):
        """A constant keyword value: number, bool, None, string (dtype) or tuple."""
        if isinstance(node, ast.Constant) and (node.value is None or
                                               isinstance(node.value, (bool, int, float, str))):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
                isinstance(node.operand, ast.Constant) and \
                isinstance(node.operand.value, (int, float)) and \
                not isinstance(node.operand.value, bool):
            return -node.operand.value
        if isinstance(node, ast.Tuple):
            return tuple(self._literal(e) for e in node.elts)
        self.reject(node, "non-constant keyword value")

    # ---- subscripts and .T -----------------------------------------------------------
    def _base(self, value: Node, node):
        if isinstance(value, Operand) and value.source is None:
            return value.array                # (a constructed one keeps its text)
        if isinstance(value, Constant):
            self.reject(node, "subscript of a number")
        return LazyExpr(value)

    def visit_Attribute(self, node, depth):
        if node.attr != "T":
            self.reject(node, "attribute access")
        value = self.visit(node.value, depth)
        return Operand(TransposeView(self._base(value, node)), self._src(node))

    def visit_Subscript(self, node, depth):
        value = self.visit(node.value, depth)
        sl = node.slice
        key = tuple(self._index(e, node) for e in sl.elts) if isinstance(sl, ast.Tuple) \
            else self._index(sl, node)
        try:
            view = SliceView(self._base(value, node), key)
        except (IndexError, ValueError, TypeError) as exc:
            raise ValueError(f"bad subscript {self._src(node)!r}: {exc}") from None
        return Operand(view, self._src(node))

    def _index(self, item, node):
        if isinstance(item, ast.Slice):
            parts = [None if p is None else self._int(p, node)
                     for p in (item.lower, item.upper, item.step)]
            if parts[2] == 0:
                raise ValueError(f"slice step cannot be zero in {self._src(node)!r}")
            return slice(*parts)
        if isinstance(item, ast.Constant) and (item.value is None or item.value is Ellipsis):
            return item.value
        return self._int(item, node)

    def _int(self, item, node):
        v = item
        neg = isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub)
        if neg:
            v = v.operand
        if isinstance(v, ast.Constant) and isinstance(v.value, int) and \
                not isinstance(v.value, bool):
            return -v.value if neg else v.value
        self.reject(node, "non-constant or fancy subscript")


def _items(name: str, kw: dict) -> int:
    """How many items constructor `name` makes with keywords `kw`."""
    shape = kw.get("shape")
    if shape is not None:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return int(np.prod(shape, dtype=object)) if shape else 1
    if name == "arange":
        start, stop, step = kw["start"], kw.get("stop"), kw.get("step", 1)
        if stop is None:
            start, stop = 0, start
        return max(0, math.ceil((stop - start) / step))
    if name == "linspace":
        return int(kw.get("num") if kw.get("num") is not None else 50)
    raise ValueError(f"{name}() needs a shape")


def _describe(node) -> str:
    kinds = {
        "Attribute": "attribute access", "Subscript": "subscript", "Lambda": "lambda",
        "ListComp": "comprehension", "SetComp": "comprehension", "DictComp": "comprehension",
        "GeneratorExp": "comprehension", "JoinedStr": "f-string", "IfExp": "conditional",
        "NamedExpr": "assignment", "Await": "await", "Yield": "yield", "YieldFrom": "yield",
        "List": "list", "Tuple": "tuple", "Dict": "dict", "Set": "set", "Starred": "starred",
        "Slice": "slice",
    }
    return kinds.get(type(node).__name__, type(node).__name__)
