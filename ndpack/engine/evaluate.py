"""Evaluate a tree over one region of its output, and over all regions of a grid.

For a region (a tuple of slices of the output), each operand is read once, sliced to
what the region needs under broadcasting (a dimension of size 1 reads index 0:1), and
the tree runs through numexpr when numexpr computes exactly NumPy's result, else
through NumPy.  Memory is a few regions, whatever the array size.
"""

from __future__ import annotations

import itertools
import math
import threading

import numexpr
import numpy as np
from numexpr.necompiler import getType

from ndpack.engine.tree import Apply, Constant, Node, Operand, operands_of
from ndpack.engine.workers import prefetch

__all__ = ["evaluate_region", "region_values", "plan_regions", "run", "Kernel", "regions",
           "default_region_shape"]

# numexpr computes these dtypes as NumPy does (no silent upcast of its own).
_NUMEXPR_DTYPES = {np.dtype(t) for t in ("bool", "int32", "int64", "float64", "complex128")}
_REGION_BYTES = 16 * 2**20      # target bytes of one output region when no grid is given


def operand_key(shape: tuple, region: tuple, out_ndim: int) -> tuple:
    """The key that reads from an operand of `shape` what output `region` needs."""
    lead = out_ndim - len(shape)
    key = []
    for d, n in enumerate(shape):
        sl = region[lead + d]
        key.append(slice(0, 1) if n == 1 else sl)
    return tuple(key)


def _numexpr_string(node: Node, names: dict) -> str | None:
    if isinstance(node, Operand):
        return names[id(node.array)]
    if isinstance(node, Constant):
        v = node.value
        if isinstance(v, (bool, np.bool_)):
            return "True" if v else "False"
        if isinstance(v, (int, float, np.integer, np.floating)):
            return repr(float(v)) if isinstance(v, (float, np.floating)) else repr(int(v))
        return None
    if node.func.numexpr is None or node.kwargs:
        return None
    parts = [_numexpr_string(a, names) for a in node.args]
    if any(p is None for p in parts):
        return None
    return node.func.numexpr.format(*parts)


def _numexpr_ok(node: Node) -> bool:
    """numexpr gives NumPy's exact dtype and values for this tree."""
    if isinstance(node, Operand):
        return node.dtype in _NUMEXPR_DTYPES
    if isinstance(node, Constant):
        return isinstance(node.value, (bool, int, float)) and not isinstance(node.value, complex)
    return (node.func.numexpr is not None and node.dtype in _NUMEXPR_DTYPES
            and all(_numexpr_ok(a) for a in node.args)
            and all(a.dtype == node.dtype or isinstance(a, Constant) or node.dtype == np.bool_
                    for a in node.args if node.func.name not in ("where",)))


def _numpy_eval(node: Node, data: dict):
    if isinstance(node, Operand):
        return data[id(node.array)]
    if isinstance(node, Constant):
        return node.value
    return node.func.numpy(*[_numpy_eval(a, data) for a in node.args], **node.kwargs)


def evaluate_region(node: Node, region: tuple, out_shape: tuple, out=None) -> np.ndarray:
    """Values of the tree on output `region` (a tuple of slices with step 1)."""
    ops = operands_of(node)
    values = _read_operands(ops, region, len(out_shape))
    shape = tuple(s.stop - s.start for s in region)
    return _fit(run(node, ops, values), shape, node.dtype, out)


def _read_operands(ops: list, region: tuple, out_ndim: int) -> list:
    values = []
    for op in ops:
        key = operand_key(op.shape, region, out_ndim)
        values.append(np.asarray(op.array[key]) if op.shape else np.asarray(op.array[()]))
    return values


def region_values(node: Node, out_shape: tuple, region_list, dtype=None):
    """Yield ``(region, values)`` for each region of `region_list`, in order.

    The operands of the next region are read on the prefetch thread while the current
    one is evaluated (numexpr and most readers release the GIL), so reading and
    computing overlap.  At most two regions of operands are in memory.
    """
    ops = operands_of(node)
    dtype = node.dtype if dtype is None else np.dtype(dtype)
    it = iter(region_list)
    region = next(it, None)
    pending = prefetch(_read_operands, ops, region, len(out_shape)) \
        if region is not None else None
    while pending is not None:
        values = pending.result()
        current, region = region, next(it, None)
        pending = prefetch(_read_operands, ops, region, len(out_shape)) \
            if region is not None else None
        shape = tuple(s.stop - s.start for s in current)
        res = _fit(run(node, ops, values), shape, node.dtype, None)
        yield current, res if res.dtype == dtype else res.astype(dtype)


def plan_regions(node: Node, shape: tuple, itemsize: int, chunks=None) -> tuple:
    """The region shape for evaluating over `shape`: whole multiples of `chunks` (the
    output's), else of the chunks of the first full-shape operand that has
    ``.chunks`` (reads stay aligned to its storage), else plain slabs; ~16 MiB."""
    if not _valid_chunks(chunks, shape):
        chunks = None
        for op in operands_of(node):
            c = getattr(op.array, "chunks", None)
            if op.shape == shape and _valid_chunks(c, shape):
                chunks = c
                break
    if chunks is None:
        return default_region_shape(shape, itemsize)
    target = default_region_shape(shape, itemsize)
    return tuple(min(n, max(int(c), (t // int(c)) * int(c))) if n else 1
                 for c, t, n in zip(chunks, target, shape))


def _valid_chunks(chunks, shape) -> bool:
    return (chunks is not None and not isinstance(chunks, str)
            and len(tuple(chunks)) == len(shape)
            and all(isinstance(c, (int, np.integer)) and c > 0 for c in chunks))


def run(node: Node, ops: list, values: list, out=None):
    """The tree on NumPy `values` of its operands `ops` (broadcastable to each other).

    numexpr runs the tree when it computes NumPy's exact result, else NumPy does.
    With `out` (of the result's dtype and full broadcast shape) the values land there
    and `out` is returned; when every value is 0-d the result is 0-d and `out` is left
    alone.
    """
    names = {id(op.array): f"o{i}" for i, op in enumerate(ops)}
    full = out is not None and any(np.ndim(v) for v in values)
    with np.errstate(all="ignore"):
        if isinstance(node, Apply) and _numexpr_ok(node):
            text = _numexpr_string(node, names)
            if text is not None:
                local = {f"o{i}": v for i, v in enumerate(values)}
                if full:
                    return numexpr.evaluate(text, local_dict=local, global_dict={}, out=out)
                return numexpr.evaluate(text, local_dict=local, global_dict={})
        res = _numpy_eval(node, {id(op.array): v for op, v in zip(ops, values)})
    if full:
        out[...] = res
        return out
    return res


class Kernel:
    """A tree compiled once for many calls from worker threads, each call serial.

    numexpr programs are compiled once per thread (a compiled program must not run in
    two threads at once) and run single-threaded: the parallelism is the callers'
    (one level, see ARCHITECTURE.md).  Trees numexpr cannot run exactly go through
    NumPy.  Call it with the operand values (arrays or 0-d) and `out`.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack.engine.tree import Apply, Constant, Operand
    >>> a = Operand(np.zeros(3))
    >>> k = Kernel(Apply("add", (a, Constant(1.5))), [a])
    >>> k([np.arange(3.0)], np.empty(3)).tolist()
    [1.5, 2.5, 3.5]
    """

    def __init__(self, node: Node, ops: list):
        self.node, self.ops = node, ops
        self.text = None
        if isinstance(node, Apply) and _numexpr_ok(node):
            self.text = _numexpr_string(node, {id(op.array): f"o{i}"
                                               for i, op in enumerate(ops)})
        self._local = threading.local()

    def _program(self):
        prog = getattr(self._local, "program", None)
        if prog is None:
            sig = [(f"o{i}", getType(np.empty(0, op.dtype))) for i, op in enumerate(self.ops)]
            prog = self._local.program = numexpr.NumExpr(self.text, sig)
        return prog

    def __call__(self, values: list, out):
        """The tree's values into `out`; a 0-d result when every value is 0-d."""
        if self.text is None or not any(np.ndim(v) for v in values):
            return run(self.node, self.ops, values, out)
        with np.errstate(all="ignore"):
            return self._program()(*values, out=out, order="K", casting="safe",
                                   ex_uses_vml=False)


def _fit(res, shape, dtype, out):
    res = np.asarray(res)
    if res.shape != shape:
        res = np.broadcast_to(res, shape)
    if out is not None:
        out[...] = res
        return out
    return res.astype(dtype, copy=False) if res.dtype != dtype else res


def default_region_shape(shape: tuple, itemsize: int) -> tuple:
    """Regions of about 16 MiB: whole trailing dimensions, a slab of the leading ones."""
    budget = max(_REGION_BYTES // max(itemsize, 1), 1)
    out = list(shape)
    for d in range(len(shape)):
        inner = math.prod(shape[d + 1:])
        if inner * shape[d] <= budget:
            break
        if inner <= budget:
            out[d] = max(1, budget // max(inner, 1))
            break
        out[d] = 1
    return tuple(max(1, c) for c in out)


def regions(shape: tuple, chunks: tuple):
    """Output regions (tuples of slices) of a grid with `chunks`, in C order."""
    if not shape:
        yield ()
        return
    if 0 in shape:
        return
    ranges = [range(0, n, c) for n, c in zip(shape, chunks)]
    for starts in itertools.product(*ranges):
        yield tuple(slice(s, min(s + c, n)) for s, c, n in zip(starts, chunks, shape))
