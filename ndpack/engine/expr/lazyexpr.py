"""LazyExpr: the handle of an expression -- build a tree now, compute it later.

A LazyExpr holds a tree (:mod:`ndpack.engine.expr.nodes`) and knows its shape and
dtype without reading anything.  Python operators, NumPy ufuncs and the reduction
methods build new expressions.  Computing is not this floor's business: the methods
that compute (``compute``, ``[key]``, ``__array__``, ``save``, a ufunc with ``out=``,
``__array_function__``, the reduction methods) reach the engine through
the door one floor down (:mod:`ndpack.engine.expr.door`), which the engine's top
registers: no import of this module points up.

An expression follows its operands: when a stored operand is resized after the tree
was built, the tree is rebuilt over the current shapes (broadcasting and reductions
re-checked) the next time it is used, so an expression never keeps a stale shape.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(12.0).reshape(3, 4))
>>> b = np.ones(4)
>>> e = ndpack.lazyexpr("a * 2 + sin(b)")      # nothing is read or computed here
>>> e.shape, e.dtype
((3, 4), dtype('float64'))
>>> r = e.compute()                              # an NDArray, computed chunk by chunk
>>> bool(np.allclose(r[:], np.arange(12.0).reshape(3, 4) * 2 + np.sin(1.0)))
True
>>> e[1, :2].tolist() == (np.arange(4.0, 6.0) * 2 + np.sin(1.0)).tolist()
True
>>> v = ndpack.asarray(np.arange(4.0))
>>> f = ndpack.lazyexpr("v * 2 + sum(v)", operands={"v": v})
>>> v.resize((6,)); v[4:] = [4, 5]
>>> f.shape, f[()].tolist()
((6,), [15.0, 17.0, 19.0, 21.0, 23.0, 25.0])
"""

from __future__ import annotations

import os

import ndindex
import numpy as np

from ndpack.engine.expr.door import evaluator
from ndpack.engine.expr.functions import FUNCTIONS
from ndpack.engine.expr.nodes import (LINALG, Accumulate, Apply, Constant, Contract, Node,
                                      Operand, Reduce, operands_of)
from ndpack.engine.expr.views import SliceView, TransposeView

__all__ = ["LazyExpr", "as_node", "key_box", "lazy_ufunc", "OPERATORS", "REDUCTION_METHODS"]

# Python operator -> function of the tree (binary ones also get their reflected form)
_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}
_COMPARE = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
            "eq": "equal", "ne": "not_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "invert": "invert", "abs": "abs"}

REDUCTION_METHODS = ("sum", "prod", "mean", "std", "var", "min", "max", "any", "all",
                     "argmin", "argmax", "count_nonzero", "cumulative_sum",
                     "cumulative_prod")


def as_node(x) -> Node:
    """The tree node for an operand: an expression's tree, a constant for scalars, an
    operand (read when evaluated) for arrays and cast expressions."""
    if isinstance(x, LazyExpr) and x.dtype != x.node.dtype:
        return Operand(x)                 # astype(): its cast happens when it is read
    if isinstance(x, LazyExpr):
        return x.node
    if isinstance(x, Node):
        return x
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return Constant(x)
    if isinstance(x, (str, bytes)):       # next to string arrays: NumPy's str_/bytes_
        return Constant(np.str_(x) if isinstance(x, str) else np.bytes_(x))
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    return Operand(x)


def _binary(func: str, reverse: bool = False):
    def method(self, other):
        a, b = (as_node(other), as_node(self)) if reverse else (as_node(self), as_node(other))
        return LazyExpr(Apply(func, (a, b)))
    method.__name__ = func
    return method


def _unary(func: str):
    def method(self):
        return LazyExpr(Apply(func, (as_node(self),)))
    method.__name__ = func
    return method


def _product(op: str, reverse: bool = False):
    def method(self, other):
        a, b = (as_node(other), as_node(self)) if reverse else (as_node(self), as_node(other))
        return LazyExpr(Contract(op, (a, b)))
    method.__name__ = op
    return method


def _reduction(name: str):
    def method(self, *args, **kwargs):
        return evaluator().reduce(name, self, *args, **kwargs)    # computes now
    method.__name__ = name
    method.__doc__ = f"``{name}`` of the array (see :func:`ndpack.{name}`)."
    return method


# python-blosc2's ``LazyExpr(new_op=(left, op, right))``: op is a symbol or a function
_SYMBOLS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide",
            "//": "floor_divide", "%": "remainder", "**": "power", "&": "bitwise_and",
            "|": "bitwise_or", "^": "bitwise_xor", "<<": "left_shift", ">>": "right_shift",
            "==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal",
            ">": "greater", ">=": "greater_equal"}
_UNARY_SYMBOLS = {"-": "negative", "+": "positive", "~": "invert", "!": "logical_not"}


def _new_op(new_op) -> Node:
    """The tree of python-blosc2's ``new_op=(left, op, right)``: ``right`` None makes
    ``op`` unary (a function name or ``-``; ``op`` None keeps ``left`` as it is)."""
    left, op, right = new_op
    if right is None:
        if op is None:
            return as_node(left)
        name = _UNARY_SYMBOLS.get(op, op)
        args = (as_node(left),)
    else:
        name = _SYMBOLS.get(op, op)
        args = (as_node(left), as_node(right))
    if name not in FUNCTIONS:
        raise ValueError(f"LazyExpr(new_op=...): unknown operator or function {op!r}")
    return Apply(name, args)


class LazyExpr:
    """An expression over arrays, evaluated only when asked (``compute()``, ``[key]``).

    Build one with :func:`ndpack.lazyexpr`, from NDArray operators (``a + b``), or with
    NumPy functions (``np.sin(a)``).  Operands are any objects with ``shape``,
    ``dtype`` and ``__getitem__``: NDArray, NumPy, memmap, h5py and zarr arrays.
    """

    __array_priority__ = 100

    def __init__(self, node: Node | tuple | None = None, *, new_op: tuple | None = None):
        if isinstance(node, tuple) or new_op is not None:   # python-blosc2's new_op=
            node = _new_op(new_op if new_op is not None else node)
        elif node is None:
            raise TypeError("LazyExpr needs a tree or new_op=(left, op, right)")
        self._node = node
        self._sig = _signature(node)
        # NumPy operands keep their shape: only trees over other arrays can go stale
        self._static = all(isinstance(op.array, np.ndarray) for op in operands_of(node))

    @property
    def node(self) -> Node:
        """The tree, rebuilt first when an operand changed shape since it was built."""
        if self._static:
            return self._node
        sig = _signature(self._node)
        if sig != self._sig:
            self._node, self._sig = _rebuild(self._node), sig
        return self._node

    # ---- metadata without computing ---------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.node.shape

    @property
    def dtype(self) -> np.dtype:
        return self.node.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def operands(self) -> dict:
        """The operands by name (unnamed ones get ``o0``, ``o1``, ...)."""
        return {op.name or f"o{i}": op.array for i, op in enumerate(operands_of(self.node))}

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d expression")
        return self.shape[0]

    def __repr__(self):
        return f"LazyExpr({self.node!r}, shape={self.shape}, dtype={self.dtype})"

    # ---- building ----------------------------------------------------------------------
    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("divide"), _binary("divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lshift__, __rlshift__ = _binary("left_shift"), _binary("left_shift", True)
    __rshift__, __rrshift__ = _binary("right_shift"), _binary("right_shift", True)
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __neg__, __pos__ = _unary("negative"), _unary("positive")
    __invert__, __abs__ = _unary("invert"), _unary("abs")
    __matmul__, __rmatmul__ = _product("matmul"), _product("matmul", True)
    __hash__ = object.__hash__           # __eq__ is elementwise

    sum, prod, mean = _reduction("sum"), _reduction("prod"), _reduction("mean")
    std, var = _reduction("std"), _reduction("var")
    min, max = _reduction("min"), _reduction("max")
    any, all = _reduction("any"), _reduction("all")
    argmin, argmax = _reduction("argmin"), _reduction("argmax")
    count_nonzero = _reduction("count_nonzero")
    cumulative_sum, cumulative_prod = _reduction("cumulative_sum"), _reduction("cumulative_prod")

    def _apply(self, func, *others, reverse=False):
        args = [as_node(o) for o in others]
        nodes = args + [self.node] if reverse else [self.node] + args
        return LazyExpr(Apply(func, tuple(nodes)))

    def where(self, x, y) -> LazyExpr:
        """``where(self, x, y)``: x where the expression is true, else y."""
        return LazyExpr(Apply("where", (self.node, as_node(x), as_node(y))))

    def astype(self, dtype) -> LazyExpr:
        """The expression cast to `dtype` (computed chunk by chunk)."""
        return _Cast(self.node, np.dtype(dtype))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return lazy_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return evaluator().array_function(func, types, args, kwargs)

    # ---- computing (through the door: ndpack.engine.expr.door) --------------------------
    def __getitem__(self, key) -> np.ndarray:
        """Compute only the selected region; returns NumPy.  Integer and boolean array
        keys compute their bounding box; a boolean mask of the whole shape (NumPy,
        NDArray or a boolean expression) is applied slab by slab."""
        if not self.shape and _scalar_sliced(key):
            return _reduce_part(self, key)
        mask = _whole_mask(key, self.shape)
        if mask is not None:
            return evaluator().masked(self, mask)
        box, rest = key_box(key, self.shape)
        return evaluator().box(self, box)[rest]

    def __array__(self, dtype=None, copy=None):
        res = np.asarray(self[()])            # a 0-d expression gives a 0-d array
        return res if dtype is None else res.astype(dtype)

    def explain(self, out=None, chunks=None, blocks=None, cparams=None, urlpath=None):
        """The plan of computing this expression, without reading or computing anything
        (:func:`ndpack.explain`): a mapping whose ``str`` is the plan in words.

        Examples
        --------
        >>> import numpy as np, ndpack
        >>> a = ndpack.asarray(np.ones((100, 100)))
        >>> (a + 1).explain()["path"]
        'aligned, fused C program'
        """
        return evaluator().explain(self, out=out, chunks=chunks, blocks=blocks,
                                   cparams=cparams, urlpath=urlpath)

    def compute(self, urlpath=None, mode="w", chunks=None, blocks=None, cparams=None,
                dparams=None, progress=False, scheduler=None, fp_accuracy=None, **kwargs):
        """Compute into a new NDArray, one output chunk at a time.

        Parameters
        ----------
        item : basic index, optional (keyword)
            Compute only ``self[item]`` (python-blosc2's first argument: a key given
            in place of `urlpath` is taken as `item`).
        urlpath : str, optional
            Write the result to this file.  It appears under that name only when
            complete: a failure (Ctrl-C included) leaves no half-written file behind.
        chunks, blocks, cparams, dparams, mode, **kwargs
            Storage of the result (defaults: the chunks of the first NDArray operand of
            the same shape, else ``compute_chunks_blocks``).
        progress : bool
            Show progress (chunks done, throughput, time left) when the work takes more
            than a second: a tqdm bar if tqdm is installed, else one line on stderr when
            it is a terminal (:mod:`ndpack.reporting`).
        scheduler : str or distributed.Client, optional
            Run as dask graphs instead (``"dask"``, ``"threads"``, a Client, ...; see
            :mod:`ndpack.engine.backends.dask`).
        fp_accuracy : FPAccuracy, optional
            python-blosc2's accuracy mode: ndpack always computes at ``HIGH``
            (NumPy's results; sin/cos within 1 ulp), which ``MEDIUM`` also gets.
        out : array-like, optional (keyword)
            Fill this existing array (NumPy, NDArray, h5py, zarr, ...) instead, and
            return it (as ``evaluate(expr, out=out)``); so does an `out` given to
            :func:`ndpack.lazyexpr`.

        Returns
        -------
        NDArray, or `out`
        """
        item = kwargs.pop("item", None)
        if urlpath is not None and not isinstance(urlpath, (str, bytes, os.PathLike)):
            item, urlpath = urlpath, None            # python-blosc2's compute(item)
        if item is not None and not self.shape and _scalar_sliced(item):
            item, self = None, LazyExpr(Operand(np.asarray(self[item])))
        if item is not None and item != ():
            return LazyExpr(Operand(SliceView(self, item))).compute(
                urlpath=urlpath, mode=mode, chunks=chunks, blocks=blocks, cparams=cparams,
                dparams=dparams, progress=progress, scheduler=scheduler,
                fp_accuracy=fp_accuracy, **kwargs)
        return evaluator().compute(self, urlpath=urlpath, mode=mode, chunks=chunks,
                                   blocks=blocks, cparams=cparams, dparams=dparams, progress=progress,
                                   scheduler=scheduler, fp_accuracy=fp_accuracy, **kwargs)

    def slice(self, item):
        """``self[item]`` computed into a new NDArray (python-blosc2's method)."""
        return self.compute(item=item)

    def save(self, urlpath, **kwargs) -> None:
        """Save the expression (not its values) to a ``.b2nd`` carrier that
        ``ndpack.open`` (and python-blosc2) turns back into an expression; every
        operand must be an NDArray on disk.  See :mod:`ndpack.engine.persist`."""
        evaluator().save(self, urlpath, **kwargs)


class _Cast(LazyExpr):
    """An expression whose result is cast to a dtype."""

    def __init__(self, node: Node, dtype: np.dtype):
        super().__init__(node)
        self._dtype = dtype

    @property
    def dtype(self):
        return self._dtype


# names of the operators and methods that NDArray shares with LazyExpr
OPERATORS = tuple(
    [f"__{s}__" for s in _BINARY] + [f"__r{s}__" for s in _BINARY] +
    [f"__{s}__" for s in _COMPARE] + [f"__{s}__" for s in _UNARY] +
    ["__matmul__", "__rmatmul__", "__array_ufunc__", "__array_function__", "__hash__"])

_UFUNC_NAMES = {"true_divide": "divide", "absolute": "abs"}


def lazy_ufunc(ufunc, method, inputs, kwargs):
    """A lazy expression for a NumPy ufunc call; with ``out=`` it is computed there."""
    out = kwargs.pop("out", None)
    if method != "__call__" or kwargs:
        return NotImplemented
    name = _UFUNC_NAMES.get(ufunc.__name__, ufunc.__name__)
    if name in LINALG and len(inputs) == 2:           # np.matmul, np.vecdot are ufuncs
        expr = LazyExpr(Contract(name, tuple(as_node(x) for x in inputs)))
    elif name not in FUNCTIONS:
        return NotImplemented
    else:
        expr = LazyExpr(Apply(name, tuple(as_node(x) for x in inputs)))
    if out is None:
        return expr
    if len(out) != 1:
        return NotImplemented
    return evaluator().into(expr, out[0])


# ---- indexing: the box of a basic key ---------------------------------------------------

def key_box(key, shape: tuple) -> tuple:
    """``(box, rest)`` for a basic index `key` on `shape`: the smallest box of step-1
    slices holding every selected element, and the key that picks them from the box
    (so ``full[key] == full[box][rest]``).

    Examples
    --------
    >>> key_box((1, slice(None, None, 2)), (3, 5))
    ((slice(1, 2, None), slice(0, 5, None)), (0, slice(0, 5, 2)))
    """
    if type(key) is tuple and key == () or key is Ellipsis:   # the whole: no ndindex work
        return tuple(slice(0, n) for n in shape), ()
    key = _plain_key(key)
    try:
        idx = ndindex.ndindex(key).expand(shape)
    except NotImplementedError:                   # arrays apart: ndindex cannot expand
        return _arrays_box(key, shape)
    box, rest, d = [], [], 0
    for i in idx.args:
        if isinstance(i, (ndindex.Newaxis, ndindex.BooleanArray)):  # no dimension taken
            rest.append(None if isinstance(i, ndindex.Newaxis) else i.raw)   # (0-d masks)
            continue
        n = shape[d]
        d += 1
        if isinstance(i, ndindex.Integer):
            box.append(slice(i.raw, i.raw + 1))
            rest.append(0)
        elif isinstance(i, ndindex.Slice):
            lo, hi = _bounds(i, n)
            box.append(slice(lo, hi))
            rest.append(_relative(i, lo))
        elif isinstance(i, ndindex.IntegerArray):      # in range, broadcast by expand
            lo = int(i.raw.min()) if i.raw.size else 0
            box.append(slice(lo, int(i.raw.max()) + 1 if i.raw.size else 0))
            rest.append(i.raw - lo)
        else:
            raise TypeError(f"{type(i).__name__} keys are not supported on expressions "
                            "yet; compute() first, or use integers and slices")
    return tuple(box), tuple(rest)


def _arrays_box(key: tuple, shape: tuple) -> tuple:
    """:func:`key_box` for keys ndindex does not expand (arrays apart): one bounding
    range per dimension, the key's structure kept (NumPy's rules then place the
    advanced dimensions alike)."""
    nidx = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else
               0 if k is None or k is Ellipsis else 1 for k in key)
    if nidx > len(shape) or sum(k is Ellipsis for k in key) > 1:
        raise IndexError(f"too many indices for an expression of shape {shape}")
    box, rest, d = [], [], 0
    for k in key:
        if k is None:
            rest.append(None)
            continue
        if k is Ellipsis:
            for n in shape[d:d + len(shape) - nidx]:
                box.append(slice(0, n))
                rest.append(slice(None))
            d += len(shape) - nidx
            continue
        if isinstance(k, np.ndarray) and k.dtype == np.bool_:    # as its nonzero()
            if k.shape != shape[d:d + k.ndim]:
                raise IndexError(f"a boolean index of shape {k.shape} for dimensions "
                                 f"{shape[d:d + k.ndim]}")
            parts = np.nonzero(k) if k.ndim else (k,)
        else:
            parts = (k,)
        for p in parts:
            n = shape[d]
            if isinstance(p, slice):
                lo, hi = _bounds(ndindex.Slice(p).reduce(n), n)
                box.append(slice(lo, hi))
                rest.append(_relative(ndindex.Slice(p).reduce(n), lo))
            else:
                p = np.asarray(p)
                if p.dtype.kind not in "iu":
                    raise IndexError(f"arrays used as indices must be integers, not {p.dtype}")
                if p.size and (p.min() < -n or p.max() >= n):
                    raise IndexError(f"index out of bounds for dimension {d} of size {n}")
                p = np.where(p < 0, p + n, p)
                lo = int(p.min()) if p.size else 0
                box.append(slice(lo, int(p.max()) + 1 if p.size else 0))
                rest.append(p - lo if p.ndim else int(p) - lo)
            d += 1
    for n in shape[d:]:
        box.append(slice(0, n))
        rest.append(slice(None))
    return tuple(box), tuple(rest)


def _whole_mask(key, shape: tuple):
    """The boolean array-like `key` selects with (alone, or followed by an ellipsis)
    when it covers the whole `shape`, else None."""
    if type(key) is tuple and key and (len(key) == 1 or len(key) == 2 and key[1] is Ellipsis):
        key = key[0]
    if not shape or not hasattr(key, "shape") or tuple(key.shape) != shape \
            or np.dtype(key.dtype) != np.bool_:
        return None
    return key


def _scalar_sliced(key) -> bool:
    """`key` has a slice or ``...`` (python-blosc2 reads such keys on 0-d expressions:
    see :func:`_reduce_part`); other keys index a 0-d result as NumPy does."""
    items = key if type(key) is tuple else (key,)
    return any(isinstance(k, slice) or k is Ellipsis for k in items)


def _reduce_part(expr, key) -> np.ndarray:
    """``expr[key]`` of a 0-d expression, python-blosc2's way: a full reduction
    reduces its argument's part ``mean(a + b)[:10]`` is ``mean((a + b)[:10])``, a
    key of only ``:`` and ``...`` (``x[:]``) is the whole value."""
    node = expr.node
    items = key if type(key) is tuple else (key,)
    whole = all(k is Ellipsis or k == slice(None) for k in items)
    if not (isinstance(node, Reduce) and node.arg.ndim and node.where is None) or whole:
        if whole:
            return expr[()]
        raise IndexError(f"index {key!r} of a 0-d expression: only a full reduction "
                         "(without where=) takes slices, which select its argument's part")
    try:
        part = Operand(SliceView(LazyExpr(node.arg), key))
    except ValueError:                      # fancy parts: NumPy's own indexing, in memory
        part = Operand(np.asarray(LazyExpr(node.arg)[key]))
    red = Reduce(node.op, part, axis=None, dtype=node.req_dtype, ddof=node.ddof,
                 initial=node.initial)
    return LazyExpr(red)[()]


def _plain_key(key):
    """`key` with array-likes that are not NumPy's (NDArrays, expressions, lists)
    turned into NumPy arrays, which ndindex understands."""
    items = key if type(key) is tuple else (key,)
    plain = tuple(_as_index(k) if isinstance(k, list) or hasattr(k, "shape") else k
                  for k in items)
    return plain if type(key) is tuple else plain[0]


def _as_index(k) -> np.ndarray:
    k = np.asarray(k)
    return k.astype(np.intp) if k.size == 0 and k.dtype.kind == "f" else k  # [] is ints


def _bounds(s, n):
    """Smallest step-1 range [lo, hi) holding every index of the reduced slice `s`."""
    length = len(range(*s.raw.indices(n)))
    if length == 0:
        return 0, 0
    last = s.start + (length - 1) * s.step
    return min(s.start, last), max(s.start, last) + 1


def _relative(s, lo):
    """Slice `s` shifted to a box that starts at `lo`."""
    start = s.start - lo
    if s.stop is None:
        stop = None
    else:
        stop = s.stop - lo
        if stop < 0:          # a negative step running to the box start
            stop = None
    return slice(start, stop, s.step)


# ---- trees that follow their operands -----------------------------------------------------

def _leaf_shapes(node: Node, out: list) -> list:
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
    elif isinstance(node, (Reduce, Contract, Accumulate)):
        for a in node.children:
            _leaf_shapes(a, out)
    return out


def _signature(node: Node) -> tuple:
    """The current shapes of the stored arrays under `node` (a cheap walk)."""
    return tuple(_leaf_shapes(node, []))


def _rebuild(node: Node) -> Node:
    """The same tree over the operands' current shapes."""
    if isinstance(node, Constant):
        return node
    if isinstance(node, Operand):
        return Operand(_current(node.array), node.name, node.source)
    if isinstance(node, Apply):
        return Apply(node.func.name, tuple(_rebuild(a) for a in node.args), node.kwargs)
    if isinstance(node, Reduce):
        return Reduce(node.op, _rebuild(node.arg), axis=node.numpy_kwargs()["axis"],
                      keepdims=node.keepdims, dtype=node.req_dtype, ddof=node.ddof,
                      where=None if node.where is None else _rebuild(node.where),
                      initial=node.initial)
    if isinstance(node, Contract):
        return Contract(node.op, tuple(_rebuild(a) for a in node.args), node.kwargs)
    if isinstance(node, Accumulate):
        return Accumulate(node.op, _rebuild(node.arg), **node.kwargs())
    raise TypeError(f"cannot rebuild {type(node).__name__} nodes")


def _current(arr):
    if isinstance(arr, SliceView):
        return SliceView(_current(arr.base), arr.key)
    if isinstance(arr, TransposeView):
        return TransposeView(_current(arr.base))
    if isinstance(arr, LazyExpr):
        arr.node                               # refreshes it if its operands changed
    return arr
