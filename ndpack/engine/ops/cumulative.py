"""Cumulative sums and products carried from chunk to chunk along an axis.

``cumulative_sum`` and ``cumulative_prod`` (array-API signatures) produce their
result one output chunk at a time, in the C order of the output's chunk grid: each
chunk reads only its own region of the input, and a *carry* -- the running total at
the end of the previous chunk along the axis, one hyperplane of the array -- is
folded into the chunk's first element before the chunk is accumulated.  That is the
order of operations of ``np.cumsum`` itself (``y[k] = y[k-1] + x[k]``), so results
are bit-identical to NumPy's, and memory is one chunk plus one hyperplane whatever
the input size.  The result is an NDArray (in memory, or on disk with ``urlpath=``),
or any writable array given as ``out=``.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> x = np.arange(12).reshape(3, 4)
>>> a = asarray(x, chunks=(2, 3))
>>> cumulative_sum(a, axis=0)[:].tolist()
[[0, 1, 2, 3], [4, 6, 8, 10], [12, 15, 18, 21]]
>>> cumulative_prod(a[0] + 1, include_initial=True)[:].tolist()
[1, 1, 2, 6, 24]
"""

from __future__ import annotations

import collections
import math
import threading

import numpy as np

from ndpack.engine.expr.accuracy import check_fp_accuracy
from ndpack.engine.expr.axes import normalize_axis
from ndpack.engine.run.output import result_storage
from ndpack.engine.run.workers import submit, workers
from ndpack.storage.ndarray import NDArray, create, fill_from
from ndpack.vmath import running_sum
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.engine.expr.views import SliceView
from ndpack.engine.run.plan import default_region_shape, regions

__all__ = ["cumulative_sum", "cumulative_prod"]


def _axis(axis, ndim: int, name: str) -> int:
    if ndim == 0:
        raise ValueError(f"{name}() needs an array with at least one dimension")
    if axis is None:
        if ndim > 1:
            raise ValueError(f"{name}() of a {ndim}-d array needs axis= (an int)")
        return 0
    return normalize_axis(axis, ndim, strict=True,
                          message=f"axis of {name}() must be an int or None, not {axis!r}")


def _reader(x):
    """``(x, read, fresh)``: ``read(region) -> ndarray``; `fresh` when what it returns
    is a new array (NDArray, LazyExpr) that may be modified in place."""
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    for attr in ("shape", "dtype", "__getitem__"):
        if not hasattr(x, attr):
            raise TypeError(f"cannot accumulate a {type(x).__name__}: it has no {attr}")
    return x, (lambda region: np.asarray(x[region])), isinstance(x, (NDArray, LazyExpr))


def _cumulative(name, ufunc, x, axis, dtype, include_initial, out, urlpath, kwargs):
    check_fp_accuracy(kwargs.pop("fp_accuracy", None))
    item = kwargs.pop("item", None)       # python-blosc2's item=: accumulate x[item]
    if item is not None and item != ():
        x = SliceView(x, item)
    x, read, fresh = _reader(x)
    shape = tuple(int(s) for s in x.shape)
    axis = _axis(axis, len(shape), name)
    stand = np.ones((1,) * len(shape), np.dtype(x.dtype))
    try:
        rdtype = ufunc.accumulate(stand, axis=axis, dtype=dtype).dtype
    except TypeError:
        raise TypeError(f"{name}(): cannot accumulate {np.dtype(x.dtype)} into dtype "
                        f"{dtype!r}") from None
    extra = 1 if include_initial else 0
    out_shape = tuple(n + extra if d == axis else n for d, n in enumerate(shape))
    identity = ufunc.identity
    carry = np.full(tuple(1 if d == axis else n for d, n in enumerate(shape)), identity,
                    rdtype)
    first = tuple(slice(0, 1) if d == axis else slice(None) for d in range(len(shape)))
    last = tuple(slice(-1, None) if d == axis else slice(None) for d in range(len(shape)))

    def producer(region):
        lo, hi = region[axis].start, region[axis].stop
        key = tuple(slice(max(lo - extra, 0), hi - extra) if d == axis else s
                    for d, s in enumerate(region))
        data = read(key) if hi - extra > max(lo - extra, 0) else None
        if data is None or not (fresh and data.flags.writeable and data.dtype == rdtype):
            data = np.empty(tuple(s.stop - s.start for s in region), rdtype) \
                if data is None else data.astype(rdtype)
        if extra and lo == 0:
            head = np.full(tuple(1 if d == axis else s.stop - s.start
                                 for d, s in enumerate(region)), identity, rdtype)
            data = np.concatenate([head, data], axis=axis) if hi > 1 else head
        ckey = tuple(slice(0, 1) if d == axis else s for d, s in enumerate(region))
        c = carry[ckey]
        data[first] = ufunc(c, data[first])
        with np.errstate(all="ignore"):
            ufunc.accumulate(data, axis=axis, out=data)
        carry[ckey] = data[last]
        return data

    if out is not None:
        if tuple(out.shape) != out_shape:
            raise ValueError(f"out has shape {tuple(out.shape)}, {name}() gives {out_shape}")
        if kwargs or urlpath is not None:
            raise TypeError("storage arguments cannot be combined with out=")
        chunks = getattr(out, "chunks", None)
        if not (isinstance(chunks, tuple) and len(chunks) == len(out_shape)):
            chunks = None
        grid = chunks or default_region_shape(out_shape, rdtype.itemsize)
        for region in regions(out_shape, grid):
            out[region] = producer(region)
        return out
    if "chunks" not in kwargs and "blocks" not in kwargs and isinstance(x, NDArray) \
            and x.shape == out_shape:
        kwargs["chunks"], kwargs["blocks"] = x.chunks, x.blocks
    res = create(out_shape, rdtype, urlpath=urlpath, **result_storage(kwargs))
    if _aligned(x, res):
        return _cumulate_aligned(x, res, ufunc, axis, carry)
    return fill_from(res, producer)


def _aligned(x, res) -> bool:
    """Input and result NDArrays with one layout, blocks in C order of the chunk, and
    the stored-order chunk API: then chunks go from buffer to buffer, nothing
    reordered."""
    return (isinstance(x, NDArray) and x.shape == res.shape and x.chunks == res.chunks
            and x.blocks == res.blocks and bool(x.shape) and 0 not in x.shape
            and getattr(x, "stored_c_order", False) and hasattr(x, "special_value")
            and hasattr(res, "write_stored"))


_FAST = {"f8": "f8", "f4": "f4", "i8": "u8", "u8": "u8"}    # dtype code -> C kernel


def _kernel(ufunc, dtype, rdtype):
    """The C core's running sum for these dtypes, or None (NumPy's accumulate)."""
    code = f"{dtype.kind}{dtype.itemsize}"
    if ufunc is np.add and dtype == rdtype and dtype.isnative and code in _FAST:
        return _FAST[code]
    return None


def _cumulate_aligned(x: NDArray, res: NDArray, ufunc, axis: int, carry) -> NDArray:
    """Chunk by chunk in stored order, each chunk on one worker thread: decode (one C
    thread) into the worker's buffer, wait for the running total of the previous
    chunk along `axis` (chunks of other lanes do not wait), accumulate (the C core's
    kernel for sums of float32/64 and 64-bit ints: np.cumsum's bits, several times
    faster; NumPy's accumulate otherwise), publish the new total, compress; the
    calling thread stores the compressed chunks in order."""
    nd = x.ndim
    ext = tuple(-(-c // b) * b for c, b in zip(x.chunks, x.blocks))
    size = math.prod(ext)
    rdtype = res.dtype
    kernel = _kernel(ufunc, np.dtype(x.dtype), rdtype)
    outer, inner = math.prod(ext[:axis]), math.prod(ext[axis + 1:])
    hshape = tuple(1 if d == axis else n for d, n in enumerate(ext))
    grid = tuple(-(-s // c) for s, c in zip(x.shape, x.chunks))
    lane = math.prod(grid[axis + 1:])           # chunk n follows chunk n - lane
    nthreads = max(1, x.dparams.nthreads)
    pool, local = workers(nthreads), threading.local()
    done: dict = {}                             # chunk -> Event: its total is published
    failed = set()                              # chunks whose task raised

    def buffers():
        if getattr(local, "buf", None) is None:
            local.buf = np.empty(size, rdtype)
            local.src = np.empty(size, x.dtype) if x.dtype != rdtype else local.buf
            local.carry = np.zeros(hshape, rdtype)
        return local.buf, local.src, local.carry

    def task(n):
        try:
            buf, src, ctmp = buffers()
            chunk = x.get_chunk(n)
            fill = x.special_value(chunk)
            if fill is not None:
                buf[...] = fill
            else:
                v = x.decode_stored(chunk, out=src, nthreads=1)
                if v is not buf:
                    buf[...] = v
            region = x.chunk_region(n)
            valid = tuple(slice(0, s.stop - s.start) for s in region)
            cview = carry[tuple(slice(0, 1) if d == axis else s
                                for d, s in enumerate(region))]
            if region[axis].start > 0:
                done[n - lane].wait()
                if n - lane in failed:
                    raise RuntimeError(f"chunk {n - lane} failed: no running total for "
                                       f"chunk {n}")
            arr = buf.reshape(ext)
            hvalid = tuple(slice(0, 1) if d == axis else v for d, v in enumerate(valid))
            if kernel is not None:
                ctmp[hvalid] = cview
                running_sum(buf, kernel, outer, ext[axis], inner, ctmp)
            else:
                view = arr[valid]
                head = view[tuple(slice(0, 1) if d == axis else slice(None)
                                  for d in range(nd))]
                ufunc(cview, head, out=head)
                ufunc.accumulate(view, axis=axis, out=view)
            end = valid[axis].stop - 1
            cview[...] = arr[tuple(slice(end, end + 1) if d == axis else v
                                   for d, v in enumerate(valid))]
        except BaseException:
            failed.add(n)
            raise
        finally:
            done[n].set()
        return res.encode_stored(buf, nthreads=1)

    pending = collections.deque()
    with np.errstate(all="ignore"):
        for n in range(x.schunk.nchunks):
            done[n] = threading.Event()
            pending.append((n, submit(pool, task, n)))
            if len(pending) > 2 * nthreads:
                m, f = pending.popleft()
                res.write_encoded(m, f.result())
        while pending:
            m, f = pending.popleft()
            res.write_encoded(m, f.result())
    return res


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False, out=None,
                   urlpath=None, **kwargs) -> NDArray:
    """Cumulative sum along `axis`, computed chunk by chunk with a carried total.

    Parameters
    ----------
    x : NDArray, LazyExpr or array-like
        Anything with ``shape``, ``dtype`` and ``__getitem__``.
    axis : int, optional
        Required when `x` has more than one dimension.
    dtype : dtype, optional
        Accumulator and result dtype (default: NumPy's, e.g. int64 for int32 and bool).
    include_initial : bool
        Start with the identity (0), so the axis grows by one.
    out : writable array-like, optional
        Write the result here (e.g. a NumPy array) instead of a new NDArray.
    urlpath : str, optional
        Store the resulting NDArray in this file.
    **kwargs
        Storage of the result: ``chunks``, ``blocks``, ``cparams``, ``dparams``,
        ``mode``, ``contiguous``; and python-blosc2's ``item`` (a basic index:
        accumulate ``x[item]``).

    Returns
    -------
    NDArray, or `out`.

    Examples
    --------
    >>> import numpy as np
    >>> cumulative_sum(np.array([1, 2, 3]), include_initial=True)[:].tolist()
    [0, 1, 3, 6]
    """
    return _cumulative("cumulative_sum", np.add, x, axis, dtype, include_initial, out,
                       urlpath, kwargs)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False, out=None,
                    urlpath=None, **kwargs) -> NDArray:
    """Cumulative product along `axis`, computed chunk by chunk with a carried total.

    Parameters are those of :func:`cumulative_sum` (the identity is 1).

    Examples
    --------
    >>> import numpy as np
    >>> r = cumulative_prod(np.array([[1., 2.], [3., 4.]]), axis=1, out=np.empty((2, 2)))
    >>> r.tolist()
    [[1.0, 2.0], [3.0, 12.0]]
    """
    return _cumulative("cumulative_prod", np.multiply, x, axis, dtype, include_initial, out,
                       urlpath, kwargs)
