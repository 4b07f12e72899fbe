"""Lazy expressions: build a tree now, compute it chunk by chunk later.

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
"""

from __future__ import annotations

import enum
import math
import sys

import ndindex
import numpy as np

from ndpack.engine.aligned import aligned_operands, compute_aligned, layout_of, read_aligned
from ndpack.engine.direct import writing
from ndpack.engine.evaluate import plan_regions, region_values, regions
from ndpack.engine.functions import FUNCTIONS
from ndpack.engine.output import new_output
from ndpack.engine.parse import parse
from ndpack.engine.progress import progress_bar
from ndpack.engine.refresh import rebuild, signature
from ndpack.engine.tree import LINALG, Apply, Constant, Contract, Node, Operand, operands_of
from ndpack.errors import ParameterError
from ndpack.storage.constructors import fill_from
from ndpack.storage.ndarray import NDArray

__all__ = ["LazyExpr", "lazyexpr", "evaluate", "FPAccuracy"]


def _node(x) -> Node:
    if isinstance(x, _Cast):
        return Operand(x)                 # its cast happens when it is read
    if isinstance(x, LazyExpr):
        return x.node
    if isinstance(x, Node):
        return x
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return Constant(x)
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    return Operand(x)


class LazyExpr:
    """An expression over arrays, evaluated only when asked (``compute()``, ``[key]``).

    Build one with :func:`lazyexpr`, from NDArray operators (``a + b``), or with NumPy
    functions (``np.sin(a)``).  Operands are any objects with ``shape``, ``dtype`` and
    ``__getitem__``: NDArray, NumPy, memmap, h5py and zarr arrays.
    """

    __array_priority__ = 100

    def __init__(self, node: Node):
        self._node = node
        self._sig = signature(node)
        # NumPy operands keep their shape: only trees over other arrays can go stale
        self._static = all(isinstance(op.array, np.ndarray) for op in operands_of(node))

    @property
    def node(self) -> Node:
        """The tree, rebuilt first when an operand changed shape since it was built
        (an expression never keeps a stale shape; see :mod:`ndpack.engine.refresh`)."""
        if self._static:
            return self._node
        sig = signature(self._node)
        if sig != self._sig:
            self._node, self._sig = rebuild(self._node), sig
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

    def __bool__(self):
        if self.size != 1:
            raise ValueError(f"the truth value of an expression of shape {self.shape} is "
                             "ambiguous; compute it and use .any() or .all()")
        return bool(self[()].reshape(()))

    # ---- building ----------------------------------------------------------------------
    def _apply(self, func, *others, reverse=False):
        args = [_node(o) for o in others]
        nodes = args + [self.node] if reverse else [self.node] + args
        return LazyExpr(Apply(func, tuple(nodes)))

    def where(self, x, y) -> LazyExpr:
        """``where(self, x, y)``: x where the expression is true, else y."""
        return LazyExpr(Apply("where", (self.node, _node(x), _node(y))))

    def astype(self, dtype) -> LazyExpr:
        """The expression cast to `dtype` (computed chunk by chunk)."""
        return _Cast(self.node, np.dtype(dtype))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _ufunc(ufunc, method, inputs, kwargs)

    def save(self, urlpath, **kwargs) -> None:
        """Save the expression (not its values) to a ``.b2nd`` carrier that
        ``ndpack.open`` (and python-blosc2) turns back into an expression; every
        operand must be an NDArray on disk.  See :mod:`ndpack.engine.persist`."""
        from ndpack.engine.persist import save_expr
        save_expr(self, urlpath, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from ndpack.engine.protocols import array_function
        return array_function(func, types, args, kwargs)

    # ---- computing ---------------------------------------------------------------------
    def __getitem__(self, key) -> np.ndarray:
        """Compute only the selected region; returns NumPy."""
        box, rest = key_box(key, self.shape)
        return self._compute_box(box)[rest]

    def _compute_box(self, box: tuple) -> np.ndarray:
        shape = tuple(s.stop - s.start for s in box)
        out = np.empty(shape, self.dtype)
        node = _prepare(self.node)
        if shape == self.shape and _read_fast(node, out):
            return out
        local = list(regions(shape, plan_regions(node, shape, self.dtype.itemsize)))
        absolute = [tuple(slice(b.start + s.start, b.start + s.stop) for b, s in zip(box, r))
                    for r in local]
        views = {_span(a): out[r + (Ellipsis,)] for a, r in zip(absolute, local)}
        for _ in self._values(node, absolute, target=lambda a: views[_span(a)]):
            pass                                  # each region lands in its view
        return out

    def _values(self, node, region_list, target=None):
        """``(region, values)`` of the prepared tree `node`, region by region, with the
        next region's operands read ahead (see ``region_values``)."""
        return region_values(node, self.shape, region_list, self.dtype, target)

    def __array__(self, dtype=None, copy=None):
        res = self[()]
        return res if dtype is None else res.astype(dtype)

    def compute(self, urlpath=None, mode="w", chunks=None, blocks=None, cparams=None,
                dparams=None, progress=False, scheduler=None, fp_accuracy=None,
                **kwargs) -> NDArray:
        """Compute into a new NDArray, one output chunk at a time.

        Parameters
        ----------
        urlpath : str, optional
            Write the result to this file.  It appears under that name only when
            complete: a failure (Ctrl-C included) leaves no half-written file behind.
        chunks, blocks, cparams, dparams, mode, **kwargs
            Storage of the result (defaults: the chunks of the first NDArray operand of
            the same shape, else ``compute_chunks_blocks``).
        progress : bool
            Show progress (chunks done, throughput, time left) when the work takes more
            than a second: a tqdm bar if tqdm is installed, else one line on stderr when
            it is a terminal (:mod:`ndpack.engine.progress`).
        scheduler : str or distributed.Client, optional
            Run as dask graphs instead (``"dask"``, ``"threads"``, a Client, ...; see
            :mod:`ndpack.engine.dask_backend`).
        fp_accuracy : FPAccuracy, optional
            python-blosc2's accuracy mode: ndpack always computes at ``HIGH``
            (NumPy's results; sin/cos within 1 ulp), which ``MEDIUM`` also gets.
        """
        check_fp_accuracy(fp_accuracy)
        if scheduler is not None:
            from ndpack.engine.dask_backend import compute_with_dask
            return compute_with_dask(self, scheduler=scheduler, urlpath=urlpath, mode=mode,
                                     chunks=chunks, blocks=blocks, cparams=cparams,
                                     dparams=dparams, **kwargs)
        node = _prepare(self.node)
        if chunks is None and blocks is None:
            chunks, blocks = layout_of(node, self.shape)
        return new_output(self.shape, self.dtype, urlpath, mode,
                          lambda out: self._fill(node, out, progress), chunks=chunks,
                          blocks=blocks, cparams=cparams, dparams=dparams, **kwargs)

    def _fill(self, node, out: NDArray, progress=False) -> NDArray:
        """Every chunk of the new (empty) `out`, in order."""
        nchunks = math.prod(-(-s // c) if c else 0 for s, c in zip(out.shape, out.chunks))
        with progress_bar(progress, nchunks, out.stored_elements * out.dtype.itemsize) as tick:
            ops = aligned_operands(node, self.shape, out.chunks, out.blocks)
            if ops is not None:
                return compute_aligned(node, ops, out, tick)
            ordered = [out.chunk_region(n) for n in range(nchunks)]
            feed = self._values(node, ordered)

            def producer(region):
                got, values = next(feed)
                assert got == region, (got, region)       # fill_from's order is C order
                tick()
                return values
            return fill_from(out, producer)


def _span(region: tuple) -> tuple:
    """A hashable form of a region (slices are not hashable before Python 3.12)."""
    return tuple((s.start, s.stop) for s in region)


def _read_fast(node, out) -> bool:
    """The whole expression into `out` (NumPy, or any writable array-like) through the
    aligned-chunks path, if it applies."""
    chunks, blocks = layout_of(node, out.shape)
    ops = None if chunks is None else aligned_operands(node, out.shape, chunks, blocks)
    if ops is None:
        return False
    read_aligned(node, ops, out)
    return True


class _Cast(LazyExpr):
    """An expression whose result is cast to a dtype."""

    def __init__(self, node: Node, dtype: np.dtype):
        super().__init__(node)
        self._dtype = dtype

    @property
    def dtype(self):
        return self._dtype


def _prepare(node: Node) -> Node:
    """The tree to evaluate, computed once per evaluation (compute, [key], evaluate)
    before the chunk loop: the place where parts that are not elementwise (reductions)
    are replaced by their results."""
    from ndpack.engine.reductions import materialize
    return materialize(node)


def key_box(key, shape: tuple) -> tuple:
    """``(box, rest)`` for a basic index `key` on `shape`: the smallest box of step-1
    slices holding every selected element, and the key that picks them from the box
    (so ``full[key] == full[box][rest]``)."""
    if key == () or key is Ellipsis:              # the whole expression: no ndindex work
        return tuple(slice(0, n) for n in shape), ()
    idx = ndindex.ndindex(key).expand(shape)
    box, rest, d = [], [], 0
    for i in idx.args:
        if isinstance(i, ndindex.Newaxis):
            rest.append(None)
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
        else:
            raise TypeError(f"{type(i).__name__} keys are not supported on expressions "
                            "yet; compute() first, or use integers and slices")
    return tuple(box), tuple(rest)


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


_UFUNC_NAMES = {"true_divide": "divide", "absolute": "abs"}


def _ufunc(ufunc, method, inputs, kwargs):
    """A lazy expression for a NumPy ufunc call; with ``out=`` it is computed there."""
    out = kwargs.pop("out", None)
    if method != "__call__" or kwargs:
        return NotImplemented
    name = _UFUNC_NAMES.get(ufunc.__name__, ufunc.__name__)
    if name in LINALG and len(inputs) == 2:           # np.matmul, np.vecdot are ufuncs
        expr = LazyExpr(Contract(name, tuple(_node(x) for x in inputs)))
    elif name not in FUNCTIONS:
        return NotImplemented
    else:
        expr = LazyExpr(Apply(name, tuple(_node(x) for x in inputs)))
    if out is None:
        return expr
    if len(out) != 1:
        return NotImplemented
    return evaluate(expr, out=out[0])


def _caller_names(depth: int) -> dict:
    frame = sys._getframe(depth + 1)
    names = dict(frame.f_globals)
    names.update(frame.f_locals)
    return names


def lazyexpr(expression, operands=None, out=None, local_dict=None, global_dict=None):
    """A lazy expression from a string (or an existing LazyExpr/array).

    Names resolve from `operands`, then `local_dict`/`global_dict`, then the caller's
    locals and globals.  The string is parsed with a whitelist (see
    :mod:`ndpack.engine.parse`) and never evaluated as Python.

    Parameters
    ----------
    expression : str or LazyExpr
    operands : dict, optional
    out : array-like, optional
        Where :meth:`LazyExpr.compute` results go when evaluated with :func:`evaluate`.
    """
    if isinstance(expression, LazyExpr):
        return expression
    if not isinstance(expression, str):
        return LazyExpr(_node(expression))
    names = {}
    if global_dict is None and local_dict is None and operands is None:
        names.update(_caller_names(1))
    names.update(global_dict or {})
    names.update(local_dict or {})
    names.update(operands or {})
    return LazyExpr(parse(expression, names))


def evaluate(expression, local_dict=None, global_dict=None, out=None, scheduler=None,
             **kwargs):
    """Evaluate an expression chunk by chunk: a drop-in for ``numexpr.evaluate`` that
    works on any array with ``shape``/``dtype``/``__getitem__`` and writes into `out` of
    any kind (NumPy, NDArray, h5py Dataset, zarr Array).

    Returns
    -------
    numpy.ndarray, or `out` when given.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(5.0)
    >>> evaluate("a * 2 + 1")
    array([1., 3., 5., 7., 9.])
    """
    if scheduler is not None:       # run as dask graphs (ndpack.engine.dask_backend)
        from ndpack.engine.dask_backend import evaluate_with_dask
        return evaluate_with_dask(expression, local_dict, global_dict, out,
                                  scheduler=scheduler, _depth=1, **kwargs)
    check_fp_accuracy(kwargs.pop("fp_accuracy", None))
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
    if tuple(out.shape) != expr.shape:
        raise ValueError(f"out has shape {tuple(out.shape)}, the expression {expr.shape}")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError("out is a read-only NumPy array; pass a writable one")
    _check_out_cast(expr.dtype, out)
    with writing(out):            # an operand that is `out` is not read directly
        return _evaluate_into(expr, out)


class FPAccuracy(enum.Enum):
    """python-blosc2's floating-point accuracy modes of expressions.  ndpack computes
    at ``HIGH`` always (NumPy's results; its own sin/cos within 1 ulp of glibc): a
    ``MEDIUM`` request gets results at least as accurate."""

    HIGH = 1
    MEDIUM = 2


def check_fp_accuracy(value) -> None:
    """None or an FPAccuracy member (or its value): anything else is a ParameterError."""
    if value is None or isinstance(value, FPAccuracy):
        return
    try:
        FPAccuracy(value)
    except ValueError:
        raise ParameterError(f"fp_accuracy must be an FPAccuracy, not {value!r}") from None


def _check_out_cast(dtype: np.dtype, out) -> None:
    """NumPy's rule for ``out=`` of a ufunc: the result casts to `out` by 'same_kind'
    (float64 into int8 is refused instead of truncated), else a TypeError."""
    want = getattr(out, "dtype", None)
    if want is not None and not np.can_cast(dtype, np.dtype(want), "same_kind"):
        raise TypeError(f"out= has dtype {np.dtype(want)}, the expression's result "
                        f"{dtype} cannot be cast to it with casting rule 'same_kind'")


def _evaluate_into(expr, out):
    """The body of :func:`evaluate` once `out` is checked."""
    node = _prepare(expr.node)
    if isinstance(out, np.ndarray) and _read_fast(node, out):
        return out
    if isinstance(out, NDArray) and out.dtype == expr.dtype:
        ops = aligned_operands(node, expr.shape, out.chunks, out.blocks)
        if ops is not None:
            return compute_aligned(node, ops, out)
    if not isinstance(out, NDArray) and _read_fast(node, out):   # h5py, zarr, ...
        return out
    # Whole multiples of the output's own chunks, around 16 MiB at a time.
    piece = plan_regions(node, expr.shape, expr.dtype.itemsize,
                         chunks=getattr(out, "chunks", None))
    into = (lambda region: out[region + (Ellipsis,)]) if isinstance(out, np.ndarray) else None
    for region, values in expr._values(node, regions(expr.shape, piece), target=into):
        if into is None:
            out[region] = values
    return out


