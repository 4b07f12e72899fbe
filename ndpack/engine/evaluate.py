"""Evaluate a tree over one region of its output, and over all regions of a grid.

For a region (a tuple of slices of the output), each operand is read once, sliced to
what the region needs under broadcasting (a dimension of size 1 reads index 0:1), and
the tree runs through numexpr when numexpr computes exactly NumPy's result, else
through NumPy.  Memory is a few regions, whatever the array size.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading

import numexpr
import numpy as np
from numexpr.necompiler import getType

from ndpack.codecs import get_nthreads
from ndpack.engine import direct
from ndpack.engine.tree import Apply, Constant, Node, Operand, operands_of
from ndpack.engine.ufuncs import UfuncProgram
from ndpack.engine.workers import (buffers, on_engine_thread, prefetch, run_all, run_leaves,
                                   submit, workers)
from ndpack.storage.ndarray import NDArray

__all__ = ["evaluate_region", "region_values", "plan_regions", "run", "Kernel", "regions",
           "default_region_shape"]

# numexpr computes these dtypes as NumPy does (no silent upcast of its own).
_NUMEXPR_DTYPES = {np.dtype(t) for t in ("bool", "int32", "int64", "float64", "complex128")}
# numexpr's own complex kernels (sqrt, exp, log, arcsin, division, ...) differ from
# NumPy's (arcsin(67108864j) is inf there, 18.71j in NumPy): complex trees use numexpr
# only for these.
_COMPLEX_EXACT = frozenset({"add", "subtract", "negative", "equal", "not_equal", "where"})
_REGION_BYTES = 16 * 2**20      # target bytes of one output region when no grid is given


def operand_key(shape: tuple, region: tuple, out_ndim: int) -> tuple:
    """The key that reads from an operand of `shape` what output `region` needs."""
    lead = out_ndim - len(shape)
    key = []
    for d, n in enumerate(shape):
        sl = region[lead + d]
        key.append(slice(0, 1) if n == 1 else sl)
    return tuple(key)


_NOT_CONSTANT = object()
_INT64 = np.iinfo(np.int64)


def _numexpr_literal(v) -> str | None:
    """numexpr's text for a scalar: booleans, int64-range integers and finite floats
    only (anything else leaves the tree to NumPy)."""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (int, np.integer)):
        return repr(int(v)) if _INT64.min <= v <= _INT64.max else None
    if isinstance(v, (float, np.floating)) and np.isfinite(v):
        return repr(float(v))
    return None


def _numexpr_parts(node: Node, names: dict) -> tuple:
    """``(text, value)`` of a subtree: `value` is the folded NumPy scalar of a subtree
    of constants only (else ``_NOT_CONSTANT``), `text` numexpr's spelling or None.

    numexpr compiles its text with Python's ``eval``, which would compute constant
    subexpressions as Python integers (``2**2**40`` never returns): such subtrees are
    folded here with NumPy -- fixed-width arithmetic, the tree's own semantics -- and
    numexpr sees one literal.
    """
    if isinstance(node, Operand):
        return names[id(node.array)], _NOT_CONSTANT
    if isinstance(node, Constant):
        return _numexpr_literal(node.value), node.value
    if node.func.numexpr is None or node.kwargs:
        return None, _NOT_CONSTANT
    parts = [_numexpr_parts(a, names) for a in node.args]
    if all(v is not _NOT_CONSTANT for _, v in parts):
        with np.errstate(all="ignore"):
            value = node.func.numpy(*[v for _, v in parts])
        return (_numexpr_literal(value) if np.ndim(value) == 0 else None), value
    texts = [t for t, _ in parts]
    if any(t is None for t in texts):
        return None, _NOT_CONSTANT
    return node.func.numexpr.format(*texts), _NOT_CONSTANT


def _numexpr_string(node: Node, names: dict) -> str | None:
    return _numexpr_parts(node, names)[0]


def _constant(node: Node) -> bool:
    """A subtree of constants only (numexpr folds it into one literal)."""
    if isinstance(node, Constant):
        return True
    return isinstance(node, Apply) and all(_constant(a) for a in node.args)


def _numexpr_ok(node: Node) -> bool:
    """numexpr gives NumPy's exact dtype and values for this tree."""
    if isinstance(node, Operand):
        return node.dtype in _NUMEXPR_DTYPES
    if isinstance(node, Constant):
        return isinstance(node.value, (bool, int, float)) and not isinstance(node.value, complex)
    if (node.dtype.kind == "c" or any(a.dtype.kind == "c" for a in node.args)) \
            and node.func.name not in _COMPLEX_EXACT:
        return False
    if node.func.name in ("divide", "true_divide") and _constant(node.args[1]):
        return False           # numexpr multiplies by the reciprocal: 3 / 8.5 is 1 ulp off
    return (node.func.numexpr is not None and node.dtype in _NUMEXPR_DTYPES
            and all(_numexpr_ok(a) for a in node.args)
            and all(a.dtype == node.dtype or isinstance(a, Constant) or node.dtype == np.bool_
                    for a in node.args if node.func.name not in ("where",)))


def numexpr_text(node: Node, ops: list) -> str | None:
    """numexpr's spelling of the tree over operands named ``o0, o1, ...`` (in the
    order of `ops`), or None when numexpr would not compute NumPy's exact result
    (a function it lacks, a dtype it promotes differently: checked by running the
    text once on one-element arrays)."""
    if not (isinstance(node, Apply) and _numexpr_ok(node)):
        return None
    text = _numexpr_string(node, {id(op.array): f"o{i}" for i, op in enumerate(ops)})
    if text is None:
        return None
    return text if _probe(text, tuple(op.dtype for op in ops), node.dtype) else None


@functools.lru_cache(maxsize=1024)
def _probe(text: str, dtypes: tuple, dtype: np.dtype) -> bool:
    local = {f"o{i}": np.ones(1, d) for i, d in enumerate(dtypes)}
    try:
        with np.errstate(all="ignore"):
            return numexpr.evaluate(text, local_dict=local, global_dict={}).dtype == dtype
    except Exception:            # numexpr refuses the combination: NumPy will run it
        return False


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
        read = direct.reader(op.array) if op.shape else None
        if read is not None:                   # h5py, zarr: chunks on our threads
            values.append(direct.read_new(read, op.array, key, get_nthreads()))
            continue
        values.append(np.asarray(op.array[key]) if op.shape else np.asarray(op.array[()]))
    return values


class _Reader:
    """Reads operand regions into two reused sets of buffers (the region being
    evaluated and the one being read ahead): fresh arrays would cost page faults.

    NumPy operands (memmaps included) are sliced, not copied.  NDArrays read straight
    into the buffers (they decode their chunks in parallel themselves).  Other arrays
    (h5py, zarr, ...) are read a piece per chunk of their own storage along the first
    dimension, the pieces on reader threads in parallel (h5py straight into the
    buffer with ``read_direct``), or through a direct reader (h5py and zarr layouts
    that :mod:`ndpack.engine.direct` reads and decodes itself, GIL released).
    """

    def __init__(self, ops: list, out_ndim: int, nthreads: int):
        self.ops, self.ndim, self.nthreads = ops, out_ndim, nthreads
        self.direct = [None if isinstance(op.array, (np.ndarray, NDArray)) or not op.shape
                       else direct.reader(op.array) for op in ops]
        self.slots, self.turn = ([None] * len(ops), [None] * len(ops)), 0
        self.raw = ([None] * len(ops), [None] * len(ops))   # the pool buffers under slots

    def release(self) -> None:
        """Give the buffers back to the engine's pool (no region is read after)."""
        for slot, raw in zip(self.slots, self.raw):
            for i, b in enumerate(raw):
                if b is not None:
                    buffers.give(b)
                raw[i] = slot[i] = None

    def __call__(self, region: tuple) -> list:
        slot, raw = self.slots[self.turn], self.raw[self.turn]
        self.turn ^= 1
        values, calls, leaves = [], [], []
        for i, op in enumerate(self.ops):
            arr = op.array
            key = operand_key(op.shape, region, self.ndim)
            if not op.shape:
                values.append(np.asarray(arr[()]))
                continue
            if isinstance(arr, np.ndarray):
                values.append(arr[key])
                continue
            shape = tuple(k.stop - k.start for k in key)
            size = math.prod(shape)
            if slot[i] is None or slot[i].size < size:
                if raw[i] is not None:
                    buffers.give(raw[i])
                nbytes = size * op.dtype.itemsize
                raw[i] = buffers.take(nbytes)        # kept between evaluations: no faults
                slot[i] = raw[i][:nbytes].view(op.dtype)
            buf = slot[i][:size].reshape(shape)
            values.append(buf)
            if isinstance(arr, NDArray):
                calls.append(functools.partial(arr.read_into, key, buf))
            elif self.direct[i] is not None:        # pieces of its own chunks
                leaves += [functools.partial(self.direct[i], piece, buf[rel])
                           for piece, rel in _pieces(self.direct[i], key)]
            else:
                calls += [functools.partial(_read_piece, arr, piece, buf[rel])
                          for piece, rel in _pieces(arr, key)]
        run_leaves(leaves, self.nthreads)
        run_all(calls, self.nthreads)
        return values


def _pieces(arr, key):
    """``(source key, destination key)`` pieces of `key` along the first dimension,
    one per chunk of `arr`'s own storage (the whole key when it has none)."""
    chunks = getattr(arr, "chunks", None)
    step = chunks[0] if _valid_chunks(chunks, arr.shape) and chunks[0] > 0 else None
    k0 = key[0]
    if step is None or k0.stop - k0.start <= step:
        yield key, (Ellipsis,)
        return
    start = k0.start
    while start < k0.stop:
        stop = min(k0.stop, (start // step + 1) * step)
        yield ((slice(start, stop),) + tuple(key[1:]),
               (slice(start - k0.start, stop - k0.start), Ellipsis))
        start = stop


def _read_piece(arr, key, dst):
    if hasattr(arr, "read_direct") and hasattr(arr, "id") and dst.flags.c_contiguous:
        arr.read_direct(dst, source_sel=key)              # h5py: no temporary array
    else:
        dst[...] = arr[key]


def region_values(node: Node, out_shape: tuple, region_list, dtype=None, target=None,
                  nthreads: int = 2):
    """Yield ``(region, values)`` for each region of `region_list`, in order.

    The operands of the next region are read on the prefetch thread while the current
    one is evaluated (numexpr and most readers release the GIL), so reading and
    computing overlap.  At most two regions of operands are in memory, in reused
    buffers.  ``target(region)``, when given, returns where the region's values
    should go (a C-contiguous array of the region's shape) or None; values are then
    computed in place.  The values yielded are valid until the next step.
    """
    ops = operands_of(node)
    dtype = node.dtype if dtype is None else np.dtype(dtype)
    reader = _Reader(ops, len(out_shape), nthreads)
    it = iter(region_list)
    region = next(it, None)
    second = next(it, None)
    if second is None:                       # one region: nothing to overlap with
        try:
            if region is not None:
                yield region, _region_result(node, ops, reader(region), region, dtype,
                                             target)
        finally:
            reader.release()
        return
    it = itertools.chain([second], it)
    pending = prefetch(reader, region) if region is not None else None
    try:
        while pending is not None:
            values = pending.result()
            current, region = region, next(it, None)
            pending = prefetch(reader, region) if region is not None else None
            yield current, _region_result(node, ops, values, current, dtype, target)
    finally:
        if pending is not None:          # no read keeps running after the caller left
            pending.exception()
        reader.release()


def _region_result(node, ops, values, current, dtype, target):
    shape = tuple(s.stop - s.start for s in current)
    view = target(current) if target is not None else None
    if view is not None and dtype == node.dtype and view.flags.c_contiguous \
            and view.shape == shape:
        res = run(node, ops, values, out=view)
        if res is not view:
            view[...] = res
        return view
    res = _fit(run(node, ops, values), shape, node.dtype, None)
    if any(isinstance(v, np.ndarray) and np.may_share_memory(res, v) for v in values):
        res = res.copy()                     # (a bare operand: its buffer is reused)
    res = res if res.dtype == dtype else res.astype(dtype)
    if view is not None:
        view[...] = res
    return res


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

    Trees of ufuncs run as a :class:`~ndpack.engine.ufuncs.UfuncProgram` over pieces
    of ~256 KiB (in cache); numexpr runs other trees when it computes NumPy's exact
    result, else NumPy does.  With `out` (of the result's dtype and full broadcast
    shape) the values land there and `out` is returned; when every value is 0-d the
    result is 0-d and `out` is left alone.
    """
    full = out is not None and any(np.ndim(v) for v in values)
    prog = program(node, ops) if full or any(np.ndim(v) for v in values) else None
    if prog is not None and prog.arithmetic_only and numexpr_text(node, ops) is not None:
        prog = None                           # plain arithmetic: numexpr is as fast
    with np.errstate(all="ignore"):
        if prog is not None:
            shape = np.broadcast_shapes(*(np.shape(v) for v in values))
            if full and out.shape == shape and out.dtype == prog.dtype:
                return run_pieces(prog, values, out)
            res = run_pieces(prog, values, np.empty(shape, prog.dtype))
            if full:
                out[...] = res
                return out
            return res
        text = numexpr_text(node, ops)
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


_PIECE = 1 << 15          # elements per piece of a ufunc program's run (256 KiB of f8)


def program(node: Node, ops: list):
    """The :class:`UfuncProgram` of `node` over `ops`, compiled once per tree and
    operand list (kept on the node, which holds its operands alive), or None."""
    if not isinstance(node, Apply):
        return None
    key = tuple(id(op.array) for op in ops)
    cache = node.__dict__.setdefault("_ufunc_programs", {})
    if key not in cache:
        cache[key] = UfuncProgram.compile(node, ops)
    return cache[key]


def run_pieces(prog, values: list, out: np.ndarray) -> np.ndarray:
    """`prog` over `out` in pieces of about _PIECE elements (of the flattened arrays
    when all share `out`'s C layout, else of leading rows), so that its registers and
    the pieces of the values stay in cache.  Returns `out`."""
    if out.ndim == 0:
        return prog(values, out)
    whole = out
    if out.ndim > 1 and out.flags.c_contiguous and all(
            np.ndim(v) == 0 or (np.shape(v) == out.shape and v.flags.c_contiguous)
            for v in values):                  # same layout everywhere: flat pieces
        out = out.reshape(-1)
        values = [v.reshape(-1) if np.ndim(v) else v for v in values]
    lead = out.shape[0]
    rows = max(1, _PIECE // max(math.prod(out.shape[1:]), 1))
    if rows >= lead:
        prog(values, out)
        return whole
    cut = [np.ndim(v) == out.ndim and np.shape(v)[0] == lead for v in values]

    def pieces(lo, hi):
        for r0 in range(lo, hi, rows):
            sl = slice(r0, min(r0 + rows, hi))
            prog([v[sl] if c else v for v, c in zip(values, cut)], out[sl])

    npieces = -(-lead // rows)
    nthreads = get_nthreads()
    if nthreads > 1 and npieces >= 4 * nthreads and not on_engine_thread():
        # a big region from the calling thread: runs of pieces on the workers (each
        # has its own registers; ufuncs release the GIL)
        step = -(-npieces // nthreads) * rows
        pool = workers(nthreads)
        for f in [submit(pool, pieces, lo, min(lo + step, lead))
                  for lo in range(0, lead, step)]:
            f.result()
    else:
        pieces(0, lead)
    return whole


class Kernel:
    """A tree compiled once for many calls from worker threads, each call serial.

    Trees made of ufuncs run as a :class:`~ndpack.engine.ufuncs.UfuncProgram` (NumPy's
    SIMD loops on cache-sized pieces, registers per thread); other trees numexpr runs
    exactly as programs compiled once per thread (a compiled program must not run in
    two threads at once), single-threaded: the parallelism is the callers' (one
    level, see ARCHITECTURE.md); the rest goes through NumPy.  Call it with the operand
    values (arrays or 0-d) and `out`.

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
        self.prog = program(node, ops)
        self.text = None if self.prog is not None and not self.prog.arithmetic_only \
            else numexpr_text(node, ops)
        if self.text is not None:                 # plain arithmetic: numexpr
            self.prog = None
        self._local = threading.local()

    def _program(self):
        prog = getattr(self._local, "program", None)
        if prog is None:
            sig = [(f"o{i}", getType(np.empty(0, op.dtype))) for i, op in enumerate(self.ops)]
            prog = self._local.program = numexpr.NumExpr(self.text, sig)
        return prog

    def __call__(self, values: list, out):
        """The tree's values into `out`; a 0-d result when every value is 0-d."""
        if not any(np.ndim(v) for v in values):
            return run(self.node, self.ops, values, out)
        if self.prog is not None and out.dtype == self.prog.dtype:
            with np.errstate(all="ignore"):     # callers pass cache-sized groups
                return self.prog(values, out) if out.size <= 2 * _PIECE else \
                    run_pieces(self.prog, values, out)
        if self.text is None:
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
