"""The driver: prepare a tree, then run it by the one evaluation path that applies.

Every evaluation -- ``LazyExpr.compute()``, ``expr[key]``, ``evaluate(..., out=)``, a
ufunc with ``out=`` -- goes through here in two steps:

1. :func:`prepare`, bottom up: the parts of the tree that are not elementwise
   (reductions, linear-algebra products) are computed by :mod:`ndpack.engine.ops`
   and replaced by operands holding their results, each once;
2. :func:`run_into` makes the single choice of path: the *aligned* path
   (:mod:`ndpack.engine.run.aligned`) when every operand shares the output's chunk
   layout, else the *region* path (:mod:`ndpack.engine.run.regions`), with region
   sizes from :mod:`ndpack.engine.run.plan`.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(6.0).reshape(2, 3))
>>> e = ndpack.lazyexpr("a - mean(a)")
>>> node = prepare(e.node)             # the mean is computed here, once
>>> node, type(node.args[1].array).__name__, float(node.args[1].array)
(subtract(a, mean(a)), 'ndarray', 2.5)
>>> compute_box(e, (slice(0, 1), slice(0, 3))).tolist()
[[-2.5, -1.5, -0.5]]
>>> out = np.empty((2, 3))
>>> evaluate_into(e, out)[1].tolist()
[0.5, 1.5, 2.5]
"""

from __future__ import annotations

import math

import numpy as np

from ndpack.engine.expr.accuracy import FPAccuracy, check_fp_accuracy
from ndpack.engine.expr.door import evaluator
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.engine.expr.nodes import Accumulate, Apply, Contract, Node, Operand, Reduce
from ndpack.engine.ops import cumulative
from ndpack.engine.expr.views import SliceView, TransposeView
from ndpack.engine.ops.linalg import compute_contract
from ndpack.engine.ops.reductions import compute_reduction
from ndpack.engine.run.aligned import aligned_operands, compute_aligned, read_aligned
from ndpack.engine.run.chunkout import chunk_writer
from ndpack.engine.run.foreign import writing
from ndpack.engine.run.output import new_output
from ndpack.engine.run import plan as _plan
from ndpack.engine.run.fused import program as fused_program
from ndpack.engine.run.plan import (Plan, layout_of, plan_regions, region_budget, regions,
                                    valid_chunks)
from ndpack.engine.run.regions import region_values
from ndpack.errors import MemoryLimitError, ParameterError
from ndpack.reporting import task
from ndpack.resources import memory_limit
from ndpack.storage.constructors import fill_from
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.storage.ndarray import NDArray

__all__ = ["prepare", "run_into", "compute", "compute_box", "compute_masked", "evaluate_into",
           "explain", "check_memory", "FPAccuracy", "check_fp_accuracy"]


# ---- step 1: prepare ---------------------------------------------------------------------

def prepare(node: Node, memo: dict | None = None) -> Node:
    """`node` with every reduction and product replaced by an operand holding its
    result (and subscripted sub-expressions prepared the same way): what the
    elementwise paths can run.  Each is computed once, children first."""
    memo = {} if memo is None else memo
    if id(node) in memo:
        return memo[id(node)]
    if isinstance(node, Reduce):
        arg = prepare(node.arg, memo)
        where = None if node.where is None else prepare(node.where, memo)
        red = node if arg is node.arg and where is node.where else node.with_children(arg,
                                                                                     where)
        out = Operand(compute_reduction(red), repr(node))
    elif isinstance(node, Contract):
        out = Operand(compute_contract(node, lambda a: _as_array(prepare(a, memo))),
                      repr(node))
    elif isinstance(node, Accumulate):
        out = Operand(getattr(cumulative, node.op)(_as_array(prepare(node.arg, memo)),
                                                   **node.kwargs()), repr(node))
    elif isinstance(node, Apply):
        args = tuple(prepare(a, memo) for a in node.args)
        out = node if all(a is b for a, b in zip(args, node.args)) else \
            Apply(node.func.name, args, node.kwargs)
    elif isinstance(node, Operand) and isinstance(node.array, (SliceView, TransposeView)):
        view = _prepare_view(node.array, memo)
        out = node if view is node.array else Operand(view, node.name)
    else:
        out = node
    memo[id(node)] = out
    return out


def _as_array(node: Node):
    """An array-like for a prepared node: an operand's array, or a lazy expression."""
    if isinstance(node, Operand):
        return node.array
    return LazyExpr(node)


def _prepare_view(view, memo):
    base = view.base
    if isinstance(base, (SliceView, TransposeView)):
        new = _prepare_view(base, memo)
    elif isinstance(base, LazyExpr):
        inner = prepare(base.node, memo)
        new = base if inner is base.node else LazyExpr(inner)
    else:
        return view
    if new is base:
        return view
    return SliceView(new, view.key) if isinstance(view, SliceView) else TransposeView(new)


# ---- step 2: the one choice of path --------------------------------------------------------

def run_into(node: Node, expr: LazyExpr, out, fresh: bool = False, tick=None):
    """Evaluate the prepared tree `node` of `expr` into `out`, whole, and return `out`.

    `out` is a NumPy array, an NDArray (`fresh`: just created, empty, filled in chunk
    order) or any writable array-like (h5py, zarr).  The aligned path runs when every
    operand shares the layout of the output (an NDArray's own; a NumPy array's or a
    chunk-less array's: the first NDArray operand's); otherwise regions of whole output
    chunks are evaluated and written -- for HDF5 datasets ndpack can encode, by a
    direct chunk writer (:mod:`ndpack.engine.run.chunkout`).
    """
    shape, dtype = expr.shape, expr.dtype
    if isinstance(out, NDArray):
        ops = aligned_operands(node, shape, out.chunks, out.blocks) \
            if fresh or out.dtype == dtype else None
        if ops is not None:
            return compute_aligned(node, ops, out, tick)
    else:
        direct = None if isinstance(out, np.ndarray) else chunk_writer(out)
        if direct is not None:   # HDF5: chunks encoded on our threads, stored directly
            piece = plan_regions(node, shape, dtype.itemsize, chunks=direct.chunks)
            try:
                for region, values in region_values(node, shape, regions(shape, piece),
                                                    dtype, direct.target):
                    direct.write(region, values)
            finally:
                direct.release()
            return out
        chunks, blocks = layout_of(node, shape)
        own = None if isinstance(out, np.ndarray) else getattr(out, "chunks", None)
        if valid_chunks(own, shape) and tuple(own) != chunks:
            chunks = None        # a foreign output with chunks of its own: whole ones
        ops = None if chunks is None else aligned_operands(node, shape, chunks, blocks)
        if ops is not None:
            read_aligned(node, ops, out)
            return out
    if fresh:
        nchunks = math.prod(-(-s // c) if c else 0 for s, c in zip(out.shape, out.chunks))
        feed = region_values(node, shape, [out.chunk_region(n) for n in range(nchunks)],
                             dtype)

        def producer(region):
            got, values = next(feed)
            assert got == region, (got, region)       # fill_from's order is C order
            if tick is not None:
                tick()
            return values
        return fill_from(out, producer)
    # whole multiples of the output's own chunks (a foreign store never recompresses a
    # chunk it was given in parts), around 16 MiB at a time
    piece = plan_regions(node, shape, dtype.itemsize, chunks=getattr(out, "chunks", None))
    into = (lambda region: out[region + (Ellipsis,)]) if isinstance(out, np.ndarray) else None
    for region, values in region_values(node, shape, regions(shape, piece), dtype, into):
        if into is None:
            out[region] = values
    return out


# ---- the entry points ---------------------------------------------------------------------

def compute_box(expr: LazyExpr, box: tuple) -> np.ndarray:
    """The values of `expr` on `box` (step-1 slices, one per dimension) as NumPy."""
    shape = tuple(s.stop - s.start for s in box)
    out = np.empty(shape, expr.dtype)
    node = prepare(expr.node)
    if shape == expr.shape:
        return run_into(node, expr, out)
    local = list(regions(shape, plan_regions(node, shape, expr.dtype.itemsize)))
    absolute = [tuple(slice(b.start + s.start, b.start + s.stop) for b, s in zip(box, r))
                for r in local]
    views = {_span(a): out[r + (Ellipsis,)] for a, r in zip(absolute, local)}
    for _ in region_values(node, expr.shape, absolute, expr.dtype,
                           lambda a: views[_span(a)]):
        pass                                      # each region lands in its view
    return out


def compute_masked(expr: LazyExpr, mask) -> np.ndarray:
    """``expr[mask]`` for a boolean `mask` of `expr`'s shape (a NumPy array, an
    NDArray or a boolean expression) as a 1-d NumPy array in C order, computed in
    slabs of about one region each, so that neither `expr` nor `mask` is ever whole
    in memory.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(12.0).reshape(3, 4), chunks=(2, 2))
    >>> compute_masked(ndpack.lazyexpr("a * 10"), a > 8).tolist()
    [90.0, 100.0, 110.0]
    """
    shape = expr.shape
    if tuple(mask.shape) != shape:
        raise IndexError(f"a boolean index of shape {tuple(mask.shape)} for an "
                         f"expression of shape {shape}")
    budget = max(1, region_budget(2) // max(1, expr.dtype.itemsize))
    d = 0                                      # the axis cut into slabs
    while d < len(shape) - 1 and math.prod(shape[d + 1:]) > budget:
        d += 1
    step = max(1, budget // max(1, math.prod(shape[d + 1:])))
    parts = []
    if 0 not in shape:
        for lead in np.ndindex(*shape[:d]):
            for lo in range(0, shape[d], step) if shape else [0]:
                box = tuple(slice(i, i + 1) for i in lead) + \
                    ((slice(lo, min(lo + step, shape[d])),) if shape else ()) + \
                    tuple(slice(0, n) for n in shape[d + 1:])
                m = compute_box(mask, box) if isinstance(mask, LazyExpr) else \
                    np.asarray(mask[box])
                if m.dtype != np.bool_:
                    raise IndexError(f"a mask must be boolean, not {m.dtype}")
                if m.any():
                    parts.append(compute_box(expr, box)[m])
    return np.concatenate(parts) if parts else np.empty(0, expr.dtype)


def _span(region: tuple) -> tuple:
    """A hashable form of a region (slices are not hashable before Python 3.12)."""
    return tuple((s.start, s.stop) for s in region)


def compute(expr: LazyExpr, urlpath=None, mode="w", chunks=None, blocks=None,
            cparams=None, dparams=None, progress=False, scheduler=None, fp_accuracy=None,
            **kwargs) -> NDArray:
    """:meth:`LazyExpr.compute`: a new NDArray (in memory or at `urlpath`), filled one
    output chunk at a time; with ``out=`` (or an `out` given to ``lazyexpr``), the
    existing array `out` (any kind, as :func:`evaluate_into`) filled and returned."""
    check_fp_accuracy(fp_accuracy)
    out = kwargs.pop("out", None)
    if out is None:
        out = getattr(expr, "output", None)
    if out is not None:
        given = [k for k, v in (("urlpath", urlpath), ("chunks", chunks), ("blocks", blocks),
                                ("cparams", cparams), ("dparams", dparams)) if v is not None]
        if given or kwargs or scheduler is not None:
            raise ParameterError(f"compute(out=...) writes into an existing array: "
                                 f"{sorted(given + list(kwargs)) or ['scheduler']} cannot "
                                 "be given with it")
        return evaluate_into(expr, out)
    if scheduler is not None:
        return evaluator().scheduled_compute(       # dask, through the door
            expr, scheduler=scheduler, urlpath=urlpath, mode=mode, chunks=chunks,
            blocks=blocks, cparams=cparams, dparams=dparams, **kwargs)
    check_memory(expr, chunks=chunks, blocks=blocks, urlpath=urlpath)
    node = prepare(expr.node)
    if chunks is None and blocks is None:
        chunks, blocks = layout_of(node, expr.shape)

    def write(out):
        nchunks = math.prod(-(-s // c) if c else 0 for s, c in zip(out.shape, out.chunks))
        with task(nchunks, out.stored_elements * out.dtype.itemsize, bar=progress) as tick:
            return run_into(node, expr, out, fresh=True, tick=tick)
    return new_output(expr.shape, expr.dtype, urlpath, mode, write, chunks=chunks,
                      blocks=blocks, cparams=cparams, dparams=dparams, **kwargs)


def evaluate_into(expr: LazyExpr, out):
    """`expr` computed into the existing array `out` (checked first); returns `out`."""
    if tuple(out.shape) != expr.shape:
        raise ValueError(f"out has shape {tuple(out.shape)}, the expression {expr.shape}")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError("out is a read-only NumPy array; pass a writable one")
    _check_out_cast(expr.dtype, out)
    check_memory(expr, out=out)
    with writing(out), task(1):   # an operand that is `out` is not read directly
        return run_into(prepare(expr.node), expr, out)


def _check_out_cast(dtype: np.dtype, out) -> None:
    """NumPy's rule for ``out=`` of a ufunc: the result casts to `out` by 'same_kind'
    (float64 into int8 is refused instead of truncated), else a TypeError."""
    want = getattr(out, "dtype", None)
    if want is not None and not np.can_cast(dtype, np.dtype(want), "same_kind"):
        raise TypeError(f"out= has dtype {np.dtype(want)}, the expression's result "
                        f"{dtype} cannot be cast to it with casting rule 'same_kind'")



# ---- knowing before running -------------------------------------------------------------

def explain(expr: LazyExpr, out=None, chunks=None, blocks=None, cparams=None,
            urlpath=None) -> Plan:
    """The plan of computing `expr` (``compute()`` into a new array, or into `out`
    as ``evaluate(..., out=)``; at `urlpath` or in memory), found without reading or
    computing anything: the path
    and why, the pieces and threads, the operands, the bytes read, decoded and written,
    and the projected peak of the buffers the path holds at once (``peak_terms``).
    Reductions and products inside the tree are ``steps``, computed first.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.ones((1000, 1000)), chunks=(250, 1000), blocks=(25, 1000))
    >>> p = explain(ndpack.lazyexpr("a * 2 + 1", operands={"a": a}))
    >>> p["path"], p["nregions"], p["projected_peak_bytes"] > 0
    ('aligned, fused C program', 4, True)
    >>> print(str(p).splitlines()[0])
    path: aligned, fused C program -- every operand has the output's chunks and blocks; float64 arithmetic runs in the C core block by block
    """
    shape, dtype = expr.shape, np.dtype(expr.dtype)
    steps = [_explain_step(n) for n in _prepared_parts(expr.node)]
    node = _stand_in(expr.node, {})
    ops = [op for op in _operands(node)]
    nthreads = max(1, _threads(ops))
    if out is None:
        if chunks is None and blocks is None:
            chunks, blocks = layout_of(node, shape)
        if chunks is None or blocks is None:
            chunks, blocks = compute_chunks_blocks(shape, chunks, blocks, dtype=dtype)
        out_kind, own = "new NDArray", (tuple(chunks), tuple(blocks))
    else:
        own = (tuple(getattr(out, "chunks", None) or ()) or None,
               tuple(getattr(out, "blocks", None) or ()) or None)
        out_kind = type(out).__name__
    chunks, blocks = own
    aligned = None
    if chunks and blocks and (out is None or isinstance(out, (NDArray, np.ndarray))):
        aligned = aligned_operands(node, shape, chunks, blocks)
    if out is not None and isinstance(out, np.ndarray):
        chunks, blocks = layout_of(node, shape)
        aligned = None if chunks is None else aligned_operands(node, shape, chunks, blocks)
    chunk_bytes = math.prod(_ext(chunks, blocks)) * dtype.itemsize if chunks else 0
    stored = [op for op in ops if isinstance(op.array, NDArray) and op.shape == shape]
    terms = {}
    if aligned is not None:
        fused = fused_program(node, aligned) if all(
            isinstance(op.array, NDArray) for op in aligned) and dtype == node.dtype else None
        path = "aligned" + (", fused C program" if fused is not None else "")
        why = ("every operand has the output's chunks and blocks" +
               ("; float64 arithmetic runs in the C core block by block" if fused is not None
                else "; numexpr/NumPy on decoded groups of blocks"))
        nregions = math.prod(-(-n // c) for n, c in zip(shape, chunks))
        region_shape = tuple(chunks)
        op_chunk = sum(op.array.layout.chunk_nbytes for op in stored)
        terms["compressed operand chunks (2 sets)"] = 2 * op_chunk
        terms["output chunk buffers (2)"] = 2 * chunk_bytes
        group = _plan.GROUP_BYTES
        terms["worker groups of blocks"] = nthreads * (len(ops) + 1) * group
        if out is None or isinstance(out, NDArray):
            terms["encoded chunks in flight (3)"] = 3 * chunk_bytes
        bcast = [op for op in ops if op not in stored]
        if bcast:
            terms["broadcast operands laid out per chunk"] = len(bcast) * chunk_bytes
    else:
        path = "regions"
        why = ("operands not all stored with the output's chunks and blocks: pieces of "
               "the output are read from each operand, evaluated and written")
        if out is None:
            region_shape = tuple(chunks)
        else:
            region_shape = plan_regions(node, shape, dtype.itemsize,
                                        chunks=getattr(out, "chunks", None))
        nregions = math.prod(-(-n // c) for n, c in zip(shape, region_shape)) if shape else 1
        region_items = math.prod(region_shape) if shape else 1
        per_op = sum(region_items * op.dtype.itemsize for op in ops)
        terms["operand regions (2 sets: one read ahead)"] = 2 * per_op
        terms["output region"] = region_items * dtype.itemsize
        dec = max((op.array.layout.chunk_nbytes for op in ops if isinstance(op.array, NDArray)),
                  default=0)
        terms["decode buffers per reading thread"] = 2 * nthreads * dec
        if out is None or isinstance(out, NDArray):
            terms["encoded output chunk"] = chunk_bytes
    read = sum(_stored_bytes(op.array) for op in ops)
    decoded = sum(int(op.array.nbytes) for op in ops if isinstance(op.array, NDArray))
    written = math.prod(shape) * dtype.itemsize
    if out is None and urlpath is None:
        terms["the result, in memory (compressed: at most)"] = written
    return Plan(path=path, why=why, into=out_kind, shape=shape, dtype=str(dtype),
                chunks=chunks, blocks=blocks, region_shape=region_shape, nregions=nregions,
                threads=nthreads, operands=[_describe(op) for op in ops], bytes_read=read,
                bytes_decoded=decoded, bytes_written=written, peak_terms=terms,
                memory_limit=memory_limit(), steps=steps)


def _prepared_parts(node: Node, seen=None) -> list:
    """The outermost reductions, products and cumulative nodes of the tree (what
    :func:`prepare` computes before the elementwise pass)."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return []
    seen.add(id(node))
    if isinstance(node, (Reduce, Contract, Accumulate)):
        return [node]
    if isinstance(node, Apply):
        return [p for a in node.args for p in _prepared_parts(a, seen)]
    return []


def _stand_in(node: Node, memo: dict) -> Node:
    """`node` with its reductions and products replaced by operands of their shape and
    dtype that hold no memory (what the path choice sees after :func:`prepare`)."""
    if id(node) in memo:
        return memo[id(node)]
    if isinstance(node, (Reduce, Contract, Accumulate)):
        out = Operand(np.broadcast_to(np.zeros((), node.dtype), node.shape), repr(node))
    elif isinstance(node, Apply):
        args = tuple(_stand_in(a, memo) for a in node.args)
        out = node if all(a is b for a, b in zip(args, node.args)) else \
            Apply(node.func.name, args, node.kwargs)
    else:
        out = node
    memo[id(node)] = out
    return out


def _operands(node: Node) -> list:
    from_tree = getattr(node, "args", None)
    return list(dict.fromkeys(_ops_of(node))) if from_tree is not None or \
        isinstance(node, Operand) else []


def _ops_of(node: Node):
    if isinstance(node, Operand):
        yield node
    for a in getattr(node, "args", ()):
        yield from _ops_of(a)


def _threads(ops: list) -> int:
    for op in ops:
        if isinstance(op.array, NDArray):
            return op.array.schunk.dparams.nthreads
    return 1


def _ext(chunks, blocks) -> tuple:
    """The extended chunk shape (chunks rounded up to whole blocks)."""
    return tuple(-(-c // b) * b for c, b in zip(chunks, blocks))


def _stored_bytes(a) -> int:
    if isinstance(a, NDArray):
        return int(a.schunk.cbytes)
    return int(getattr(a, "nbytes", 0) or 0) if not isinstance(a, np.ndarray) or \
        a.strides == () or 0 not in a.strides else 0


def _describe(op: Operand) -> dict:
    a = op.array
    out = {"name": op.name, "kind": type(a).__name__, "shape": tuple(op.shape),
           "dtype": str(op.dtype)}
    if isinstance(a, NDArray):
        out.update(chunks=a.chunks, blocks=a.blocks, codec=a.schunk.cparams.codec.name,
                   cbytes=int(a.schunk.cbytes), urlpath=a.urlpath)
    return out


def _explain_step(node: Node) -> Plan:
    """A reduction's, product's or cumulative function's plan: regions of its
    operand read and reduced (the sizes of :mod:`ndpack.engine.run.plan`)."""
    arg = node.args[0] if isinstance(node, Contract) else node.arg
    inner = _stand_in(arg, {})
    ops = _operands(inner)
    budget = region_budget(max(1, len(ops)))
    nthreads = max(1, _threads(ops))
    dec = max((op.array.layout.chunk_nbytes for op in ops if isinstance(op.array, NDArray)),
              default=0)
    size = sum(min(budget, int(getattr(op.array, "nbytes", 0) or 0)) for op in ops)
    terms = {"operand regions (2 sets: one read ahead)": 2 * size,
             "decode buffers per reading thread": 2 * nthreads * dec,
             "result": math.prod(node.shape) * np.dtype(node.dtype).itemsize}
    kind = {Reduce: "reduction", Contract: "product", Accumulate: "cumulative"}[type(node)]
    return Plan(path=f"{kind} {getattr(node, 'op', '')}".strip(), why=f"{node!r} is computed "
                "first; its result enters the elementwise pass as an operand",
                into="NumPy array", shape=tuple(node.shape), dtype=str(np.dtype(node.dtype)),
                chunks=None, blocks=None, region_shape=None, nregions=0, threads=nthreads,
                operands=[_describe(op) for op in ops],
                bytes_read=sum(_stored_bytes(op.array) for op in ops),
                bytes_decoded=sum(int(getattr(op.array, "nbytes", 0) or 0) for op in ops),
                bytes_written=0, peak_terms=terms, memory_limit=memory_limit(),
                steps=[_explain_step(n) for n in _prepared_parts(inner)])


_RESULT_TERM = "the result, in memory (compressed: at most)"


def check_memory(expr: LazyExpr, **kwargs) -> None:
    """Refuse, before anything is read or written, a computation whose working memory
    (:func:`explain`'s projection, less the result itself, whose compressed size is
    not known before) exceeds the memory limit: :class:`MemoryLimitError` naming the
    projection, the limit and the biggest term.  Computations far below the limit are
    not planned twice (a quick bound from the operands' chunk sizes)."""
    limit = memory_limit()
    ops = list(_ops_of(expr.node))
    chunk = max([op.array.layout.chunk_nbytes for op in ops if isinstance(op.array, NDArray)]
                + [0])
    quick = (len(ops) + 4) * (chunk + _plan.GROUP_BYTES) * (_threads(ops) + 2)
    if quick + 4 * region_budget(max(1, len(ops))) <= limit // 2:
        return
    plans = [explain(expr, **kwargs)]
    for p in plans:
        plans.extend(p.steps)
    for p in plans:
        terms = {k: v for k, v in p.peak_terms.items() if k != _RESULT_TERM}
        need = sum(terms.values())
        if need > limit:
            big = max(terms, key=terms.get)
            raise MemoryLimitError(
                f"{p.path}: a projected peak of {need / 2**20:.0f} MiB of working memory "
                f"exceeds the memory limit of {limit / 2**20:.0f} MiB; most of it is "
                f"{big} ({terms[big] / 2**20:.0f} MiB). Raise the limit "
                "(ndpack.set_memory_limit), or store the operands with smaller chunks; "
                "ndpack.explain(expr) shows the plan")
