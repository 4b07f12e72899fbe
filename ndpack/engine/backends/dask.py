"""The dask backend: our arrays and expressions as dask graphs, dask arrays into NDArrays.

* :func:`to_dask` turns an NDArray into a ``dask.array.Array`` whose blocks are its
  chunks.  For an array on disk the graph holds its *path* (a :class:`StoredArray`), not
  its data: each task opens the file (0.4 ms) and decodes only its chunk, so the graph
  pickles small and runs on ``dask.distributed`` workers that see the same file
  system.  An array in memory is put in the graph itself (one key shared by the
  tasks; a worker process receives it as contiguous-frame bytes, compressed).  A
  :class:`~ndpack.engine.expr.lazyexpr.LazyExpr` becomes one task per output chunk that
  evaluates the expression on that region with our engine (numexpr, block-only reads),
  with every reduction inside it a dask tree reduction (chunk / combine / aggregate)
  whose result feeds those tasks.
* :func:`from_dask` writes a dask array into a new NDArray chunk by chunk: the array is
  rechunked to the NDArray's chunks, blocks are computed in parallel a batch at a time
  (the next batch while the current one is compressed and written), and written by
  the client in chunk order.  Workers never write: a contiguous ``.b2nd`` frame is an
  append-only file with one index, so concurrent writers would corrupt it.
* :func:`compute_with_dask` is what ``LazyExpr.compute(scheduler=...)`` and
  ``evaluate(..., scheduler=...)`` run: reductions first (tree reductions, in one
  graph), then the elementwise part one task per output chunk, written as above; a
  result on disk is written under a temporary name and renamed when complete.

dask is optional: it is imported when one of these functions is called.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(20.0).reshape(4, 5), chunks=(2, 5), blocks=(1, 5))
>>> d = ndpack.to_dask(a)
>>> d.chunks
((2, 2), (5,))
>>> float(d.sum().compute())
190.0
>>> b = ndpack.from_dask(d * 2, chunks=(4, 2))
>>> b.chunks, float(b[3, 4])
((4, 2), 38.0)
>>> e = ndpack.lazyexpr("sum(a, axis=0) + a", operands={"a": a})
>>> r = e.compute(scheduler="threads")
>>> bool(np.array_equal(r[()], a[()].sum(axis=0) + a[()]))
True
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import sys
import uuid

import numpy as np

from ndpack.engine.run.output import new_output
from ndpack.engine.expr.nodes import Apply, Constant, Node, Operand, Reduce, operands_of
from ndpack.engine.expr.views import SliceView, TransposeView
from ndpack.errors import ParameterError
from ndpack.storage.constructors import ndarray_from_cframe
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.storage.ndarray import NDArray, fill_from
from ndpack.storage.dispatch import open as open_frame
from ndpack.engine.api import lazyexpr
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.engine.ops.reductions import compute_reduction

__all__ = [
    "StoredArray",
    "compute_with_dask",
    "evaluate_with_dask",
    "from_dask",
    "to_dask",
    "NDARRAY_MEMBERS",
]

_BATCH_BYTES = 256 * 2**20     # decoded blocks held by the client at once (one batch)


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:                                # pragma: no cover
        raise ImportError("this needs dask: install it with `pip install 'dask[array]'` "
                          "(and `distributed` for clusters)") from exc
    return dask, da


# ---------------------------------------------------------------------------------------
# what a task carries instead of an array


class StoredArray:
    """An NDArray on disk, named by its path: opened by each read (cheap, never stale).

    It has ``shape``, ``dtype``, ``ndim``, ``chunks`` and ``__getitem__``, pickles as a
    few fields, and is what graphs of :func:`to_dask` hold.

    Examples
    --------
    >>> import os, pickle, tempfile, numpy as np, ndpack
    >>> path = os.path.join(tempfile.mkdtemp(), "stored.b2nd")
    >>> a = ndpack.asarray(np.arange(6), urlpath=path, mode="w")
    >>> s = pickle.loads(pickle.dumps(StoredArray(a)))
    >>> s.shape, s[2:4].tolist()
    ((6,), [2, 3])
    >>> ndpack.remove_urlpath(path)
    """

    def __init__(self, array: NDArray):
        if array.urlpath is None:
            raise ValueError("StoredArray needs an NDArray on disk (it has no urlpath)")
        self.urlpath = os.path.abspath(os.fspath(array.urlpath))
        self.shape, self.dtype = tuple(array.shape), np.dtype(array.dtype)
        self.chunks, self.blocks = tuple(array.chunks), tuple(array.blocks)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def open(self) -> NDArray:
        arr = open_frame(self.urlpath, mode="r")
        if tuple(arr.shape) != self.shape:
            raise ValueError(f"{self.urlpath!r} has shape {tuple(arr.shape)} now, "
                             f"{self.shape} when the graph was built")
        return arr

    def __getitem__(self, key) -> np.ndarray:
        return self.open()[key]

    def __repr__(self):
        return f"StoredArray({self.urlpath!r}, shape={self.shape}, dtype={self.dtype})"


class _Shipped:
    """An in-memory NDArray in a graph: itself in this process, its contiguous-frame
    bytes (compressed) when pickled to a worker process."""

    def __init__(self, array: NDArray):
        self.array = array
        self.shape, self.dtype = tuple(array.shape), np.dtype(array.dtype)
        self.chunks, self.blocks = tuple(array.chunks), tuple(array.blocks)

    ndim = StoredArray.ndim

    def __reduce__(self):
        return _unship, (self.array.to_cframe(),)

    def __getitem__(self, key) -> np.ndarray:
        return self.array[key]


def _unship(cframe: bytes) -> _Shipped:
    return _Shipped(ndarray_from_cframe(cframe))


def _portable(arr):
    """What a graph holds for the leaf array `arr`."""
    if isinstance(arr, NDArray):
        return StoredArray(arr) if arr.urlpath is not None else _Shipped(arr)
    return arr


def _local(arr):
    """The array a task computes on, for a leaf of a graph."""
    if isinstance(arr, StoredArray):
        return arr.open()
    if isinstance(arr, _Shipped):
        return arr.array
    return arr


# ---------------------------------------------------------------------------------------
# tree walks


class _Pending:
    """Stands for the result of reduction number `index` until it is known."""

    def __init__(self, index: int, shape: tuple, dtype):
        self.index, self.shape, self.dtype = index, tuple(shape), np.dtype(dtype)

    def __getitem__(self, key):                               # pragma: no cover
        raise RuntimeError("a reduction result was used before it was computed")


def _transform(node: Node, leaf, reduce, memo: dict) -> Node:
    """`node` with every leaf array replaced by ``leaf(array)`` (inside views and
    subscripted sub-expressions too) and every reduction by ``reduce(node)``."""
    if id(node) in memo:
        return memo[id(node)]
    if isinstance(node, Constant):
        out = node
    elif isinstance(node, Operand):
        arr = _transform_array(node.array, leaf, reduce, memo)
        out = node if arr is node.array else Operand(arr, node.name)
    elif isinstance(node, Apply):
        args = tuple(_transform(a, leaf, reduce, memo) for a in node.args)
        out = node if all(a is b for a, b in zip(args, node.args)) else \
            Apply(node.func.name, args, node.kwargs)
    elif isinstance(node, Reduce):
        out = reduce(node)
    else:
        raise TypeError(f"cannot run {type(node).__name__} nodes on dask")
    memo[id(node)] = out
    return out


def _transform_array(arr, leaf, reduce, memo):
    if isinstance(arr, SliceView):
        base = _transform_array(arr.base, leaf, reduce, memo)
        return arr if base is arr.base else SliceView(base, arr.key)
    if isinstance(arr, TransposeView):
        base = _transform_array(arr.base, leaf, reduce, memo)
        return arr if base is arr.base else TransposeView(base)
    if isinstance(arr, LazyExpr) and type(arr) is LazyExpr:
        node = _transform(arr.node, leaf, reduce, memo)
        return arr if node is arr.node else LazyExpr(node)
    return leaf(arr)


def _same(x):
    return x


def _split(node: Node):
    """``(template, reductions)``: `node` with portable leaves and each reduction
    replaced by a :class:`_Pending` operand, and the reductions (portable too, inner
    ones first), numbered as their placeholders."""
    reds, memo = [], {}

    def on_reduce(red):
        arg = _transform(red.arg, _portable, on_reduce, memo)
        where = None if red.where is None else _transform(red.where, _portable, on_reduce,
                                                           memo)
        new = Reduce(red.op, arg, axis=red.numpy_kwargs()["axis"],
                     keepdims=red.keepdims, dtype=red.req_dtype, ddof=red.ddof,
                     where=where, initial=red.initial)
        reds.append(new)
        return Operand(_Pending(len(reds) - 1, new.shape, new.dtype), repr(red))

    return _transform(node, _portable, on_reduce, memo), reds


def _bind(template: Node, values=()) -> Node:
    """A template's tree, runnable here: leaves opened, reduction results filled in."""
    def leaf(arr):
        if isinstance(arr, _Pending):
            return np.asarray(values[arr.index])
        return _local(arr)
    return _transform(template, leaf, _same, {})


def _first_layout(template: Node, shape: tuple):
    """``(chunks, blocks)`` of the first NDArray operand of `shape` (as the local
    engine's ``layout_of``), or None."""
    for op in operands_of(template):
        arr = op.array
        if isinstance(arr, (StoredArray, _Shipped, NDArray)) and tuple(arr.shape) == shape:
            return tuple(arr.chunks), tuple(arr.blocks)
    return None


def _grid_of(template: Node, shape: tuple, dtype) -> tuple:
    """Chunks for blocks of `template`: those of its first NDArray operand of the same
    shape, else the default layout."""
    first = _first_layout(template, shape)
    return first[0] if first else compute_chunks_blocks(shape, dtype=dtype)[0]


# ---------------------------------------------------------------------------------------
# graphs


def _eval_block(template: Node, dtype, region: tuple, *values) -> np.ndarray:
    """One task: the template's values over `region` (our engine)."""
    tree = _bind(template, values)
    if isinstance(tree, Operand) and not isinstance(tree.array, np.ndarray):
        res = np.asarray(tree.array[region])
    else:
        res = np.asarray(LazyExpr(tree)[region])
    return res.astype(dtype, copy=False)


def _reduce_task(template: Reduce, *values) -> np.ndarray:
    """One task: a reduction dask cannot express (``where=``, ``initial=``), streamed
    by our engine."""
    return compute_reduction(_bind(template, values))


def _dims_chunks(shape: tuple, chunks: tuple) -> tuple:
    return tuple(tuple(min(c, n - i) for i in range(0, n, c)) if n else (0,)
                 for n, c in zip(shape, chunks))


def _whole_key(arr) -> tuple:
    """The key of a dask array rechunked into one block."""
    one = arr.rechunk(arr.shape) if arr.ndim else arr
    return one, (one.name,) + (0,) * one.ndim


def _engine_array(template: Node, reduced: list, shape, dtype, chunks=None):
    """A dask array: one task per block of `chunks` evaluating `template` with our
    engine; `reduced` are dask arrays of the results its placeholders stand for."""
    _, da = _dask()
    from dask.highlevelgraph import HighLevelGraph
    dtype = np.dtype(dtype)
    if chunks is None:
        chunks = _grid_of(template, shape, dtype)
    dims = _dims_chunks(shape, tuple(chunks))
    name = f"ndpack-eval-{uuid.uuid4().hex}"
    tree_key = f"ndpack-tree-{uuid.uuid4().hex}"
    wholes = [_whole_key(r) for r in reduced]
    layer = {tree_key: template}
    starts = [np.cumsum((0,) + d)[:-1] for d in dims]
    for idx in np.ndindex(*[len(d) for d in dims]):
        region = tuple(slice(int(starts[k][i]), int(starts[k][i]) + dims[k][i])
                       for k, i in enumerate(idx))
        layer[(name,) + idx] = (_eval_block, tree_key, dtype, region,
                                *[key for _, key in wholes])
    graph = HighLevelGraph.from_collections(name, layer,
                                            dependencies=[w for w, _ in wholes])
    return da.Array(graph, name, dims, dtype=dtype)


def _reduction_array(red: Reduce, reduced: list):
    """A reduction as a dask array: a dask tree reduction where dask has the same
    function, else one task running our streamed reduction."""
    _, da = _dask()
    from dask.highlevelgraph import HighLevelGraph
    if red.where is None and red.initial is None:
        arg = _as_dask(red.arg, reduced)
        kw = red.numpy_kwargs()
        kw.pop("initial", None)
        if red.op == "count_nonzero":
            kw.pop("keepdims")
        res = getattr(da, red.op)(arg, **kw)
        if res.shape != red.shape:
            res = res.reshape(red.shape)
        return res.astype(red.dtype) if res.dtype != red.dtype else res
    name = f"ndpack-reduce-{uuid.uuid4().hex}"
    wholes = [_whole_key(r) for r in reduced]
    key = (name,) + (0,) * len(red.shape)
    layer = {key: (_reduce_task, red, *[k for _, k in wholes])}
    graph = HighLevelGraph.from_collections(name, layer,
                                            dependencies=[w for w, _ in wholes])
    return da.Array(graph, name, tuple((n,) for n in red.shape), dtype=red.dtype)


def _as_dask(template: Node, reduced: list):
    """A portable subtree as a dask array (a stored operand straight from its chunks)."""
    if isinstance(template, Operand) and isinstance(template.array, (StoredArray, _Shipped)):
        return _leaf_array(template.array)
    return _engine_array(template, reduced, template.shape, template.dtype)


def _leaf_array(arr):
    dask, da = _dask()
    if isinstance(arr, StoredArray):
        st = os.stat(arr.urlpath)
        name = "ndpack-" + dask.base.tokenize(arr.urlpath, st.st_mtime_ns, st.st_size,
                                              arr.shape, arr.dtype.str, arr.chunks)
    else:
        name = f"ndpack-mem-{uuid.uuid4().hex}"
    return da.from_array(arr, chunks=tuple(c or 1 for c in arr.chunks), name=name,
                         asarray=False, inline_array=False, fancy=False)


def _reductions(reds: list) -> list:
    """Dask arrays of the reductions of :func:`_split` (each may use earlier ones)."""
    out = []
    for red in reds:
        out.append(_reduction_array(red, list(out)))
    return out


# ---------------------------------------------------------------------------------------
# public API


def to_dask(x, chunks=None):
    """A ``dask.array.Array`` of an NDArray (its chunks as blocks) or of an expression.

    Parameters
    ----------
    x : NDArray or LazyExpr
        An NDArray on disk is read by path in each task (no data in the graph: the
        graph pickles small and works with ``dask.distributed``); one in memory is put
        in the graph.  An expression gives one task per output block, evaluated by our
        engine, with its reductions as dask tree reductions.
    chunks : tuple of int, optional
        Blocks of an expression's array (default: the chunks of its first NDArray
        operand of the output's shape, else the default layout).  NDArrays always use
        their own chunks (``rechunk`` the result for others).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(10), chunks=(4,), blocks=(2,))
    >>> d = ndpack.to_dask(a)
    >>> d.chunks, d[3:6].compute().tolist()
    (((4, 4, 2),), [3, 4, 5])
    >>> ndpack.to_dask(ndpack.lazyexpr("a - min(a)", operands={"a": a + 1})).sum().compute()
    np.int64(45)
    """
    _dask()
    if isinstance(x, NDArray):
        return _leaf_array(_portable(x))
    if isinstance(x, LazyExpr):
        template, reds = _split(x.node)
        res = _engine_array(template, _reductions(reds), x.shape, x.dtype, chunks)
        return res
    raise TypeError(f"to_dask takes an NDArray or a LazyExpr, not {type(x).__name__} "
                    "(use dask.array.from_array for other arrays)")


def _to_dask_method(self):
    """This array as a ``dask.array.Array`` whose blocks are its chunks (see
    :func:`ndpack.to_dask`)."""
    return to_dask(self)


#: NDArray's members from here (bound by :mod:`ndpack.engine.bind`)
NDARRAY_MEMBERS = [("to_dask", _to_dask_method)]


def _scheduler_args(scheduler) -> dict:
    """``dask.compute`` keywords for our `scheduler` argument: ``"dask"`` means dask's
    current default (a ``distributed.Client`` when one is active, else threads)."""
    if scheduler is None or scheduler == "dask":
        return {}
    return {"scheduler": scheduler}


def _workers(kw: dict) -> int:
    sched = kw.get("scheduler")
    client = sched if hasattr(sched, "nthreads") and callable(sched.nthreads) else None
    if client is None and sched in (None, "distributed", "dask.distributed"):
        try:
            from distributed import default_client
            client = default_client()
        except (ImportError, ValueError):
            client = None
    if client is not None:
        return max(1, sum(client.nthreads().values()))
    if hasattr(os, "sched_getaffinity"):          # the CPUs this process may use (taskset)
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _ordered_blocks(darr, kw: dict, chunk_nbytes: int):
    """The blocks of `darr` in C order, computed a batch at a time in parallel, the
    next batch while the caller consumes the current one."""
    dask, _ = _dask()
    blocks = np.asarray(darr.to_delayed(), dtype=object).ravel().tolist()
    cap = max(1, _BATCH_BYTES // max(1, chunk_nbytes))
    size = max(1, min(cap, 2 * _workers(kw)))
    batches = [blocks[i:i + size] for i in range(0, len(blocks), size)]
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        ahead = pool.submit(dask.compute, *batches[0], **kw) if batches else None
        try:
            for i in range(len(batches)):
                got, ahead = ahead.result(), None
                if i + 1 < len(batches):
                    ahead = pool.submit(dask.compute, *batches[i + 1], **kw)
                yield from got
        finally:
            if ahead is not None:              # stopped early: drop the batch ahead
                ahead.cancel()


def _write(darr, out: NDArray, kw: dict) -> NDArray:
    """Every chunk of the new `out` from `darr` (rechunked to ``out.chunks``)."""
    if out.size == 0:
        return fill_from(out, lambda region: np.empty(
            tuple(s.stop - s.start for s in region), out.dtype))
    darr = darr.rechunk(_dims_chunks(out.shape, out.chunks))
    nbytes = math.prod(out.chunks) * out.dtype.itemsize
    feed = _ordered_blocks(darr, kw, nbytes)

    def producer(region):
        block = next(feed)
        want = tuple(s.stop - s.start for s in region)
        if np.shape(block) != want:                           # pragma: no cover
            raise AssertionError(f"block of shape {np.shape(block)} for region {region}")
        return block
    try:
        return fill_from(out, producer)
    finally:
        feed.close()


def from_dask(darr, urlpath=None, mode="w", scheduler="dask", **storage) -> NDArray:
    """Write a dask array into a new NDArray, chunk by chunk.

    `darr` is rechunked to the NDArray's chunks; blocks are computed in parallel by
    dask in batches (about two per worker thread, at most 256 MiB), the next batch
    while the current one is compressed and appended by the caller's process in chunk
    order.  Workers never write: a ``.b2nd`` file is appended to in order, by one
    writer.  Parts of `darr` that several batches need (a global mean, say) are
    computed once per batch: ``persist()`` them first if they are costly.

    Parameters
    ----------
    darr : dask.array.Array
    urlpath : str, optional
        Write to this file; it appears under that name only when complete.
    mode : {"w", "a"}
        ``"a"`` refuses to overwrite an existing file.
    scheduler : str or distributed.Client, optional
        ``"dask"`` (default): dask's current scheduler; else any value of
        ``dask.compute(scheduler=)`` ("threads", "processes", "synchronous", a Client).
    **storage
        chunks, blocks, cparams, dparams, contiguous, meta (as :func:`ndpack.empty`).

    Examples
    --------
    >>> import dask.array as da, numpy as np, ndpack
    >>> x = da.arange(12, chunks=5).reshape(3, 4)
    >>> a = ndpack.from_dask(x, chunks=(2, 4), blocks=(1, 4))
    >>> a.chunks, a[2].tolist()
    ((2, 4), [8, 9, 10, 11])
    """
    _dask()
    kw = _scheduler_args(scheduler)
    shape = tuple(int(s) for s in darr.shape)
    return new_output(shape, np.dtype(darr.dtype), urlpath, mode,
                       lambda out: _write(darr, out, kw), **storage)


def compute_with_dask(expr, scheduler="dask", urlpath=None, mode="w", chunks=None,
                      blocks=None, **storage) -> NDArray:
    """``expr.compute(..., scheduler=)``: the expression run as dask graphs.

    First every reduction in it, as dask tree reductions in one graph (a reduction
    with ``where=`` or ``initial=``, which dask lacks, is one task running our streamed
    reduction); then one task per output chunk evaluating the elementwise part with
    our engine over that region, the reductions' results as operands; the client
    writes the chunks in order (see :func:`from_dask`).  Output layout as in
    ``LazyExpr.compute``.
    """
    dask, _ = _dask()
    kw = _scheduler_args(scheduler)
    template, reds = _split(expr.node)
    values = dask.compute(*_reductions(reds), **kw) if reds else ()
    template = _fill(template, values)
    if chunks is None and blocks is None:
        first = _first_layout(template, expr.shape)
        if first is not None:
            chunks, blocks = first

    def write(out):
        darr = _engine_array(template, [], expr.shape, expr.dtype, out.chunks)
        return _write(darr, out, kw)
    return new_output(expr.shape, expr.dtype, urlpath, mode, write, chunks=chunks,
                       blocks=blocks, **storage)


def _fill(template: Node, values) -> Node:
    """The template with the reduction results put in (still portable)."""
    def leaf(arr):
        return np.asarray(values[arr.index]) if isinstance(arr, _Pending) else arr
    return _transform(template, leaf, _same, {})


def evaluate_with_dask(expression, local_dict=None, global_dict=None, out=None,
                       scheduler="dask", _depth=0, **kwargs):
    """``evaluate(..., scheduler=)``: as :func:`compute_with_dask`, into `out` (NumPy,
    NDArray or any writable array, written by the client one block at a time in
    ``out.chunks`` when it has them) or, without `out`, returned as NumPy."""
    dask, _ = _dask()
    if kwargs:
        raise ParameterError(f"unknown argument(s) {sorted(kwargs)}")
    if isinstance(expression, str):
        names = {}
        if local_dict is None and global_dict is None:
            frame = sys._getframe(_depth + 1)
            names.update(frame.f_globals)
            names.update(frame.f_locals)
        names.update(global_dict or {})
        names.update(local_dict or {})
        expr = lazyexpr(expression, local_dict=names)
    else:
        expr = lazyexpr(expression) if not isinstance(expression, LazyExpr) else expression
    kw = _scheduler_args(scheduler)
    template, reds = _split(expr.node)
    values = dask.compute(*_reductions(reds), **kw) if reds else ()
    template = _fill(template, values)
    if out is None:
        darr = _engine_array(template, [], expr.shape, expr.dtype)
        return np.asarray(dask.compute(darr, **kw)[0])
    if tuple(out.shape) != expr.shape:
        raise ValueError(f"out has shape {tuple(out.shape)}, the expression {expr.shape}")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError("out is a read-only NumPy array; pass a writable one")
    chunks = getattr(out, "chunks", None)
    chunks = tuple(chunks) if chunks and not isinstance(out, np.ndarray) else None
    darr = _engine_array(template, [], expr.shape, expr.dtype, chunks)
    dims = darr.chunks
    starts = [np.cumsum((0,) + d)[:-1] for d in dims]
    nbytes = math.prod(max(d) if d else 0 for d in dims) * expr.dtype.itemsize
    feed = _ordered_blocks(darr, kw, nbytes)
    try:
        for idx in np.ndindex(*darr.numblocks):
            region = tuple(slice(int(starts[k][i]), int(starts[k][i]) + dims[k][i])
                           for k, i in enumerate(idx))
            out[region] = next(feed)
    finally:
        feed.close()
    return out
