"""Shape operations that return new NDArrays, chunk by chunk with bounded memory.

``concat``, ``stack``, ``permute_dims``, ``matrix_transpose``, ``moveaxis``,
``expand_dims``, ``squeeze``, ``broadcast_to``, ``reshape``, ``flip`` and ``roll``
(python-blosc2's names and semantics; ``take`` lives in :mod:`.take`).  Inputs are
NDArrays or any array-like with ``shape``, ``dtype`` and ``__getitem__`` (NumPy,
h5py, zarr); every function takes the storage keywords of the constructors
(``urlpath=``, ``chunks=``, ``blocks=``, ``cparams=``, ...).

``expand_dims`` and ``squeeze`` of an NDArray return views sharing its compressed
chunks (:mod:`ndpack.storage.ndview`) unless storage keywords ask for a new array.
Where the layout allows it compressed chunks are copied as they are, without
decoding: ``concat``/``stack`` of NDArrays whose chunk grids line up with the output
(the output inherits the first input's chunks, blocks and cparams unless given),
and ``expand_dims``/``squeeze`` with storage keywords.  ``permute_dims`` permutes the
chunk shape with the data, so each output chunk is one input chunk transposed.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(6).reshape(2, 3), chunks=(1, 3), blocks=(1, 3))
>>> concat([a, a], axis=0)[:].tolist()
[[0, 1, 2], [3, 4, 5], [0, 1, 2], [3, 4, 5]]
>>> t = permute_dims(a)
>>> t.shape, t.chunks, t[:].tolist()
((3, 2), (3, 1), [[0, 3], [1, 4], [2, 5]])
>>> reshape(a, (3, 2))[:].tolist()
[[0, 1], [2, 3], [4, 5]]
"""

from __future__ import annotations

import itertools
import operator
import threading

import numpy as np

from ndpack.engine.expr.axes import normalize_axes, normalize_axis
from ndpack.engine.ops.chunkwrite import encode_all as _encode_all
from ndpack.engine.ops.chunkwrite import in_order as _in_order
from ndpack.engine.ops.chunkwrite import permute_chunks as _permute_chunks
from ndpack.resources import scratch
from ndpack.storage.constructors import asarray
from ndpack.storage.grid import prod
from ndpack.storage.ndarray import NDArray, create, fill_from

__all__ = [
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "matrix_transpose",
    "moveaxis",
    "permute_dims",
    "reshape",
    "roll",
    "squeeze",
    "stack",
]

# reshape reads a row of output chunks at once up to this many bytes
_SLAB_BYTES = 128 * 2**20


def as_array(x):
    """`x` if it is array-like (shape, dtype, __getitem__), else ``np.asarray(x)``."""
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__getitem__"):
        return x
    return np.asarray(x)


def read_values(x, key) -> np.ndarray:
    """``x[key]`` as NumPy (any array-like: NDArray, h5py, zarr, NumPy)."""
    return np.asarray(x[key])


def layout_keywords(x, kwargs, chunks=None, blocks=None, cparams=True) -> dict:
    """Storage keywords: `chunks`/`blocks` (derived from `x`'s layout) unless given;
    `x`'s cparams unless given (when `cparams`)."""
    kw = dict(kwargs)
    if isinstance(x, NDArray):
        if "chunks" not in kw and "blocks" not in kw and chunks is not None:
            kw["chunks"], kw["blocks"] = chunks, blocks
        if cparams:
            kw.setdefault("cparams", x.cparams)
    return kw


def _same_layout(a, out, chunks=None, blocks=None) -> bool:
    """Whether the compressed chunks of `a` can be stored in `out` as they are:
    `chunks`/`blocks` are `a`'s in the output's dimensions (default: `a`'s own)."""
    return (isinstance(a, NDArray) and a.dtype == out.dtype
            and out.chunks == (a.chunks if chunks is None else chunks)
            and out.blocks == (a.blocks if blocks is None else blocks)
            and a.schunk.cparams.typesize == out.schunk.cparams.typesize)


def _cparams_agree(arrays, kwargs, out) -> bool:
    """No cparams given (the output inherits), or the given ones equal the inputs'."""
    if "cparams" not in kwargs:
        return True
    mine = out.schunk.cparams
    keys = ("codec", "clevel", "filters", "filters_meta", "use_dict")
    return all(all(getattr(a.schunk.cparams, k) == getattr(mine, k) for k in keys)
               for a in arrays)


# Chunks smaller than this are filled one after another on the calling thread: handing
# them to worker threads (GIL-bound slicing, one handoff each) cost more than the work
# (measured: 128 chunks of 60 KB, 13 ms serially, 39 ms on two workers).
SMALL_CHUNK_BYTES = 1 << 20


def fill_chunks(out, producer, copied=None) -> NDArray:
    """:func:`fill_from` with chunks read, assembled and compressed on worker threads
    (``dparams.nthreads`` of them, at most 4), appended in order; a window of
    ``nthreads + 1`` chunks is in flight, so memory stays bounded.  ``copied(coords)``,
    when given, returns an input's compressed chunk to store as output chunk `coords`
    as it is, or None (then `producer` makes it)."""
    nthreads = max(1, min(out.dparams.nthreads, 4))
    lay = out.layout
    serial = nthreads == 1 or lay.nchunks < 2 or lay.chunk_nbytes < SMALL_CHUNK_BYTES
    if serial and copied is None:
        return fill_from(out, producer)
    ext = lay.ext_chunks

    def one(coords):
        chunk = copied(coords) if copied is not None else None
        if chunk is not None:
            return chunk
        region = lay.region(coords)
        data = np.asarray(producer(region), dtype=out.dtype)
        if data.shape != ext:
            buf = np.zeros(ext, out.dtype)
            buf[tuple(slice(0, r.stop - r.start) for r in region)] = data
            data = buf
        return out.encode_chunk(data)

    if serial:
        put = _in_order(out)
        for coords in lay.all_coords():
            put(one(coords))
        return out
    return _encode_all(out, one, lay.all_coords(), nthreads)


# ---------------------------------------------------------------------------------------
# concat and stack


def concat(arrays, /, axis=0, **kwargs) -> NDArray:
    """Join arrays along an existing axis.

    When every input is an NDArray with the output's chunks, blocks and dtype, and
    each input's extent along `axis` (but the last's) is a multiple of its chunk
    size there, compressed chunks are copied without decoding.  The output inherits
    the first input's chunks, blocks and cparams unless given, so inputs that agree
    take that path by default.  Otherwise the output is written chunk by chunk.

    Parameters
    ----------
    arrays : sequence of array-likes
        NDArrays or anything with ``shape``, ``dtype`` and ``__getitem__``; same
        shape except along `axis`.
    axis : int or None
        None joins the flattened inputs.
    **kwargs
        Storage keywords (urlpath, chunks, blocks, cparams, ...).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.arange(8, shape=(2, 4), chunks=(1, 2), blocks=(1, 2))
    >>> c = concat([a, np.full((2, 1), -1)], axis=1)
    >>> c.shape, c[:].tolist()
    ((2, 5), [[0, 1, 2, 3, -1], [4, 5, 6, 7, -1]])
    """
    arrays = [as_array(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if axis is None:                # the array API's: the inputs flattened, then joined
        return concat([reshape(a, (-1,)) for a in arrays], axis=0, **kwargs)
    nd = len(arrays[0].shape)
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, nd)
    for i, a in enumerate(arrays):
        if len(a.shape) != nd or any(s != t for d, (s, t) in
                                     enumerate(zip(a.shape, arrays[0].shape)) if d != axis):
            raise ValueError(f"all the input array dimensions except for the concatenation "
                             f"axis must match exactly: array 0 has shape "
                             f"{tuple(arrays[0].shape)}, array {i} has {tuple(a.shape)}")
    dtype = np.result_type(*[a.dtype for a in arrays])
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    # the layout of the first input with chunks (an empty one has none to give)
    first = next((a for a in arrays if all(getattr(a, "chunks", None) or (0,))), arrays[0])
    chunks = getattr(first, "chunks", None)
    if chunks is not None and not all(chunks):
        chunks = None
    kw = layout_keywords(first, kwargs, chunks, chunks and getattr(first, "blocks", None))
    out = create(tuple(shape), dtype, **kw)
    c = out.chunks[axis]
    if (c and all(_same_layout(a, out) for a in arrays)
            and all(c and a.shape[axis] % c == 0 for a in arrays[:-1])
            and _cparams_agree(arrays, kwargs, out)):
        return _copy_concat(arrays, out, axis)
    return _fill_concat(arrays, out, axis,
                        [_same_layout(a, out) and _cparams_agree([a], kwargs, out)
                         for a in arrays])


def _copy_concat(arrays, out, axis) -> NDArray:
    """Output chunks in C order, each an input's compressed chunk (no decoding)."""
    c = out.chunks[axis]
    owner = []                                    # output chunk row -> (array, its row)
    for a in arrays:
        owner += [(a, k) for k in range(-(-a.shape[axis] // c))]
    put = _in_order(out)
    for coords in out.layout.all_coords():
        a, k = owner[coords[axis]]
        src = list(coords)
        src[axis] = k
        put(*a.stored_chunk(a.layout.chunk_number(src)))
    return out


def _fill_concat(arrays, out, axis, copyable=None) -> NDArray:
    """Output chunk by chunk, each read from the inputs it overlaps -- or, when it is
    an input's chunk (`copyable[i]`: that input has the output's layout and cparams;
    the input starts on a chunk boundary of the output and the chunk holds the same
    items), that chunk copied compressed (python-blosc2 copies those too: the first
    input's whole chunks when the others are not aligned)."""
    starts = np.cumsum([0] + [a.shape[axis] for a in arrays]).tolist()
    c = out.chunks[axis]

    def copied(coords):
        lo = coords[axis] * c
        hi = min(lo + c, out.shape[axis])
        for i, a in enumerate(arrays):
            s0, s1 = starts[i], starts[i + 1]
            if s0 <= lo and hi <= s1:
                if not copyable[i] or (lo - s0) % c or hi - lo != min(c, s1 - lo):
                    return None
                src = list(coords)
                src[axis] = (lo - s0) // c
                return a.get_chunk(a.layout.chunk_number(src))
        return None

    def producer(region):
        lo, hi = region[axis].start, region[axis].stop
        # into this thread's reused buffer (a fresh one per chunk costs page faults);
        # the chunk is encoded on this thread before its next region is read
        shape = tuple(r.stop - r.start for r in region)
        buf = scratch(prod(shape) * out.dtype.itemsize, "concat").view(out.dtype).reshape(shape)
        for a, s0, s1 in zip(arrays, starts[:-1], starts[1:]):
            if s1 <= lo or s0 >= hi:
                continue
            key = list(region)
            key[axis] = slice(max(lo, s0) - s0, min(hi, s1) - s0)
            dst = [slice(None)] * len(region)
            dst[axis] = slice(max(lo, s0) - lo, min(hi, s1) - lo)
            dst = buf[tuple(dst)]
            if isinstance(a, NDArray) and a.dtype == out.dtype and dst.flags.c_contiguous:
                a.read_into(tuple(key), dst)
            else:
                dst[...] = read_values(a, tuple(key))
        return buf

    return fill_chunks(out, producer, copied if c and copyable and any(copyable) else None)



def stack(arrays, axis=0, **kwargs) -> NDArray:
    """Join arrays of one shape along a new axis.

    NDArrays with the same chunks, blocks and dtype are stacked by copying their
    compressed chunks (the output's chunks are the inputs' with 1 inserted at
    `axis`); otherwise the output is written chunk by chunk.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.arange(4, chunks=(2,), blocks=(2,))
    >>> s = stack([a, a], axis=1)
    >>> s.shape, s.chunks, s[:].tolist()
    ((4, 2), (2, 1), [[0, 0], [1, 1], [2, 2], [3, 3]])
    """
    arrays = [as_array(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    shape0 = tuple(arrays[0].shape)
    for i, a in enumerate(arrays):
        if tuple(a.shape) != shape0:
            raise ValueError(f"all input arrays must have the same shape: array 0 has "
                             f"shape {shape0}, array {i} has {tuple(a.shape)}")
    axis = normalize_axis(axis, len(shape0) + 1)
    dtype = np.result_type(*[a.dtype for a in arrays])
    shape = shape0[:axis] + (len(arrays),) + shape0[axis:]
    first = arrays[0]
    chunks = blocks = None
    if isinstance(first, NDArray):
        chunks = first.chunks[:axis] + (1,) + first.chunks[axis:]
        blocks = first.blocks[:axis] + (1,) + first.blocks[axis:]
    out = create(shape, dtype, **layout_keywords(first, kwargs, chunks, blocks))
    if (out.chunks[axis] == 1 and out.blocks[axis] == 1
            and all(isinstance(a, NDArray) and _same_layout(a, out, a.chunks[:axis] + (1,) + a.chunks[axis:],
                                 a.blocks[:axis] + (1,) + a.blocks[axis:]) for a in arrays)
            and _cparams_agree(arrays, kwargs, out)):
        put = _in_order(out)
        for coords in out.layout.all_coords():
            a = arrays[coords[axis]]
            put(*a.stored_chunk(a.layout.chunk_number(coords[:axis] + coords[axis + 1:])))
        return out

    def producer(region):
        rest = region[:axis] + region[axis + 1:]
        return np.stack([read_values(arrays[i], rest).astype(dtype, copy=False)
                         for i in range(region[axis].start, region[axis].stop)], axis=axis)

    return fill_chunks(out, producer)


# ---------------------------------------------------------------------------------------
# axes permutations


def permute_dims(arr, axes=None, **kwargs) -> NDArray:
    """Permute the axes of `arr` (reversed when `axes` is None).

    The chunk shape is permuted with the data: each output chunk is one source chunk
    decoded, transposed and compressed (chunks in parallel).  Blocks: the default for
    that chunk shape, as python-blosc2 (8000^2 float64 linspace, chunks (1000, 1000),
    LZ4 5: cratio 7.69 with (25, 1000) vs 7.36 with the source's permuted (1000, 100);
    ``blocks=`` chooses others).  The source's cparams are kept unless given.

    Examples
    --------
    >>> import ndpack
    >>> a = ndpack.arange(24, shape=(2, 3, 4), chunks=(1, 2, 4), blocks=(1, 1, 2))
    >>> p = permute_dims(a, (2, 0, 1))
    >>> p.shape, p.chunks, int(p[3, 1, 2]) == int(a[1, 2, 3])
    ((4, 2, 3), (4, 1, 2), True)
    """
    arr = as_array(arr)
    nd = len(arr.shape)
    axes = tuple(range(nd))[::-1] if axes is None else \
        tuple(normalize_axis(a, nd) for a in axes)
    if sorted(axes) != list(range(nd)):
        raise ValueError(f"axes {axes} are not a permutation of the {nd} dimensions")
    shape = tuple(arr.shape[a] for a in axes)
    chunks = None
    if isinstance(arr, NDArray):
        chunks = tuple(arr.chunks[a] for a in axes)
    kw = layout_keywords(arr, kwargs, chunks, None)
    if chunks is not None and "chunks" not in kw:
        kw["chunks"] = chunks                     # blocks= alone: the chunks permuted
    out = create(shape, arr.dtype, **kw)
    inv = tuple(int(i) for i in np.argsort(axes))
    if isinstance(arr, NDArray) and out.chunks == chunks and out.dtype == arr.dtype \
            and arr.size:
        return _permute_chunks(arr, out, axes)

    def producer(region):
        return read_values(arr, tuple(region[i] for i in inv)).transpose(axes)

    return fill_chunks(out, producer)


def matrix_transpose(arr, **kwargs) -> NDArray:
    """Swap the last two axes (a stack of transposed matrices).

    Examples
    --------
    >>> import ndpack
    >>> matrix_transpose(ndpack.arange(6, shape=(2, 3)))[:].tolist()
    [[0, 3], [1, 4], [2, 5]]
    """
    arr = as_array(arr)
    nd = len(arr.shape)
    if nd < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, not {nd}")
    return permute_dims(arr, tuple(range(nd - 2)) + (nd - 1, nd - 2), **kwargs)


def moveaxis(arr, source, destination, **kwargs) -> NDArray:
    """Move axes to new positions (the others keep their order), as ``np.moveaxis``.

    Examples
    --------
    >>> import ndpack
    >>> moveaxis(ndpack.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    arr = as_array(arr)
    nd = len(arr.shape)
    src, dst = normalize_axes(source, nd), normalize_axes(destination, nd)
    if len(src) != len(dst):
        raise ValueError("source and destination must have the same number of elements")
    order = [d for d in range(nd) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(arr, tuple(order), **kwargs)


# ---------------------------------------------------------------------------------------
# adding and removing axes of length 1


def _copy_chunks(arr, out) -> NDArray:
    put = _in_order(out)
    for n in range(arr.schunk.nchunks):
        put(*arr.stored_chunk(n))
    return out


def expand_dims(arr, axis=0, **kwargs) -> NDArray:
    """Insert axes of length 1 at the positions `axis` (of the result).

    For an NDArray and no storage keywords the result is a view sharing its chunks
    (chunks and blocks of 1 at the new axes; writes through it change `arr`, see
    :mod:`ndpack.storage.ndview`), as in python-blosc2.  With storage keywords, and
    for other inputs, it is a new array (an NDArray's compressed chunks copied as they
    are when the layout and cparams allow it).

    Examples
    --------
    >>> import ndpack
    >>> a = ndpack.arange(6, shape=(2, 3))
    >>> e = expand_dims(a, (0, 3))
    >>> e.shape, e.chunks[0], e.base is a, e[0, 1, :, 0].tolist()
    ((1, 2, 3, 1), 1, True, [3, 4, 5])
    >>> expand_dims(a, 1, cparams={"clevel": 1}).base is None      # a new array
    True
    """
    arr = as_array(arr)
    nd = len(arr.shape) + (1 if isinstance(axis, (int, np.integer)) else len(axis))
    new = sorted(normalize_axes(axis, nd))
    old = [d for d in range(nd) if d not in new]
    if isinstance(arr, NDArray) and not kwargs:
        return arr.axes_view(tuple(None if d in new else old.index(d) for d in range(nd)))

    def ins(t, fill):
        it = iter(t)
        return tuple(fill if d in new else next(it) for d in range(nd))

    shape = ins(arr.shape, 1)
    chunks = blocks = None
    if isinstance(arr, NDArray):
        chunks, blocks = ins(arr.chunks, 1), ins(arr.blocks, 1)
    out = create(shape, arr.dtype, **layout_keywords(arr, kwargs, chunks, blocks))
    if _same_layout(arr, out, chunks, blocks) and _cparams_agree([arr], kwargs, out):
        return _copy_chunks(arr, out)
    return fill_chunks(out, lambda reg: read_values(arr, tuple(reg[d] for d in old)).reshape(
        tuple(r.stop - r.start for r in reg)))


def squeeze(x, axis=None, **kwargs) -> NDArray:
    """Remove axes of length 1 (all of them when `axis` is None).

    For an NDArray and no storage keywords the result is a view sharing its chunks
    (as in python-blosc2; `x` keeps its shape) when the removed axes have chunks of 1,
    the usual case (an axis of length 1 may have longer chunks: then the values are
    written into a new array).  See :func:`expand_dims`.

    Examples
    --------
    >>> import ndpack
    >>> z = ndpack.zeros((1, 3, 1))
    >>> s = squeeze(z, axis=0)
    >>> s.shape, z.shape, s.base is z
    ((3, 1), (1, 3, 1), True)
    """
    x = as_array(x)
    nd = len(x.shape)
    drop = [d for d in range(nd) if x.shape[d] == 1] if axis is None else \
        normalize_axes(axis, nd)
    for d in drop:
        if x.shape[d] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not "
                             f"equal to one (axis {d} has size {x.shape[d]})")
    keep = [d for d in range(nd) if d not in drop]
    if isinstance(x, NDArray) and not kwargs and all(x.chunks[d] == 1 for d in drop):
        return x.axes_view(tuple(keep))
    shape = tuple(x.shape[d] for d in keep)
    chunks = blocks = None
    if isinstance(x, NDArray):
        chunks = tuple(x.chunks[d] for d in keep)
        blocks = tuple(x.blocks[d] for d in keep)
    out = create(shape, x.dtype, **layout_keywords(x, kwargs, chunks, blocks))
    if (_same_layout(x, out, chunks, blocks) and _cparams_agree([x], kwargs, out)
            and all(x.chunks[d] == 1 for d in drop)):
        return _copy_chunks(x, out)

    def producer(reg):
        it = iter(reg)
        key = tuple(0 if d in drop else next(it) for d in range(nd))
        return read_values(x, key)

    return fill_chunks(out, producer)


def broadcast_to(arr, shape, **kwargs) -> NDArray:
    """`arr` broadcast to `shape` (NumPy's rules), written chunk by chunk.

    Examples
    --------
    >>> import ndpack
    >>> broadcast_to(ndpack.arange(3), (2, 3))[:].tolist()
    [[0, 1, 2], [0, 1, 2]]
    """
    arr = as_array(arr)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
    src = tuple(arr.shape)
    try:
        ok = np.broadcast_shapes(src, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"cannot broadcast an array of shape {src} to shape {shape}")
    lead = len(shape) - len(src)
    kw = dict(kwargs)
    if isinstance(arr, NDArray):
        kw.setdefault("cparams", arr.cparams)
    out = create(shape, arr.dtype, **kw)

    def producer(reg):
        key = tuple(slice(0, 1) if s == 1 else r for s, r in zip(src, reg[lead:]))
        return np.broadcast_to(read_values(arr, key), tuple(r.stop - r.start for r in reg))

    return fill_chunks(out, producer)


# ---------------------------------------------------------------------------------------
# reshape, flip, roll


def flat_read(x, shape, lo: int, hi: int, prefix=()) -> np.ndarray:
    """Items ``lo:hi`` of `x` in C order, read as at most 2 * ndim boxes."""
    if not shape:
        return read_values(x, prefix).reshape(1)[lo:hi]
    if len(shape) == 1:
        return read_values(x, prefix + (slice(lo, hi),))
    row = prod(shape[1:])
    i0, r0 = divmod(lo, row)
    i1, r1 = divmod(hi, row)
    if i0 == i1:
        return flat_read(x, shape[1:], r0, r1, prefix + (i0,))
    pieces = []
    if r0:
        pieces.append(flat_read(x, shape[1:], r0, row, prefix + (i0,)))
        i0 += 1
    if i1 > i0:
        pieces.append(read_values(x, prefix + (slice(i0, i1),)).reshape(-1))
    if r1:
        pieces.append(flat_read(x, shape[1:], 0, r1, prefix + (i1,)))
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def _new_shape(shape, size: int) -> tuple:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    shape = tuple(operator.index(s) for s in shape)
    if sum(s == -1 for s in shape) > 1 or any(s < -1 for s in shape):
        raise ValueError(f"invalid shape {shape}: at most one -1 and no other negatives")
    if -1 in shape:
        known = prod(s for s in shape if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape an array of size {size} into shape {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if prod(shape) != size:
        raise ValueError(f"cannot reshape an array of size {size} into shape {shape}")
    return shape


def reshape(src, shape, c_order=True, *, copy=None, **kwargs) -> NDArray:
    """`src` with a new shape (any number of dimensions), items in C order.

    An NDArray's chunks are laid out for its shape, so a new shape is a new array:
    ``copy=False`` (the array API's "never copy") is a ValueError unless the shape is
    unchanged and no storage keywords are given, when `src` itself is returned.

    The output is written chunk by chunk.  A row of output chunks covers one C-order
    range of the source: when it holds at most about 128 MB it is read once (a
    slab, two kept for the worker threads) and its chunks are cut from it;
    otherwise each chunk reads whole output rows in groups of at most that size and
    keeps its columns (bounded memory, more reading).

    Examples
    --------
    >>> import ndpack
    >>> r = reshape(ndpack.arange(24, shape=(4, 6)), (2, -1, 3), chunks=(1, 2, 3))
    >>> r.shape, r[1, 3].tolist()
    ((2, 4, 3), [21, 22, 23])
    """
    if not c_order:
        raise NotImplementedError("only C order (c_order=True) is supported")
    src = as_array(src)
    size = prod(src.shape)
    shape = _new_shape(shape, size)
    if copy is False:
        if shape == tuple(src.shape) and not kwargs and isinstance(src, NDArray):
            return src
        raise ValueError("reshape(copy=False): a reshaped NDArray is always a new array")
    kw = dict(kwargs)
    if isinstance(src, NDArray):
        kw.setdefault("cparams", src.cparams)
    out = create(shape, src.dtype, **kw)
    if not shape:
        return fill_from(out, lambda reg: flat_read(src, tuple(src.shape), 0, 1).reshape(()))
    row = prod(shape[1:])
    rows = out.chunks[0] or 1
    sshape = tuple(src.shape)
    if rows * row * src.dtype.itemsize > _SLAB_BYTES:
        return fill_chunks(out, lambda reg: _region_read(src, sshape, shape, reg))
    cache, lock = {}, threading.Lock()

    def slab_of(key):
        """Output rows of chunk row `key` (a slab), read once; two kept (workers
        finish the chunks of one slab while others start the next)."""
        with lock:
            if key not in cache:
                if len(cache) >= 2:
                    del cache[min(cache)]
                s0, s1 = key * rows, min(shape[0], (key + 1) * rows)
                cache[key] = (s0, flat_read(src, sshape, s0 * row, s1 * row)
                              .reshape((s1 - s0,) + shape[1:]))
            return cache[key]

    def producer(reg):
        s0, slab = slab_of(reg[0].start // rows)
        return slab[(slice(reg[0].start - s0, reg[0].stop - s0),) + reg[1:]]

    return fill_chunks(out, producer)


def _region_read(src, sshape, shape, reg, base=0) -> np.ndarray:
    """The items of the reshaped `src` (shape `shape`, from flat item `base`) in region
    `reg`: whole output rows read in groups of at most _SLAB_BYTES, the region's
    columns cut from them (rows larger than that: recursively, row by row)."""
    if len(shape) == 1:
        return flat_read(src, sshape, base + reg[0].start, base + reg[0].stop)
    row = prod(shape[1:])
    r0, r1 = reg[0].start, reg[0].stop
    res = np.empty(tuple(r.stop - r.start for r in reg), src.dtype)
    g = _SLAB_BYTES // max(1, row * src.dtype.itemsize)
    if not g:
        for i in range(r0, r1):
            res[i - r0] = _region_read(src, sshape, shape[1:], reg[1:], base + i * row)
        return res
    for i0 in range(r0, r1, g):
        i1 = min(i0 + g, r1)
        rows = flat_read(src, sshape, base + i0 * row, base + i1 * row)
        res[i0 - r0:i1 - r0] = rows.reshape((i1 - i0,) + shape[1:])[(slice(None),) + reg[1:]]
    return res


def flip(x, axis=None, **kwargs) -> NDArray:
    """Reverse the order of items along `axis` (all axes when None).

    Examples
    --------
    >>> import ndpack
    >>> flip(ndpack.arange(6, shape=(2, 3)), axis=1)[:].tolist()
    [[2, 1, 0], [5, 4, 3]]
    """
    x = as_array(x)
    nd = len(x.shape)
    axes = tuple(range(nd)) if axis is None else normalize_axes(axis, nd)
    out = create(tuple(x.shape), x.dtype,
                 **layout_keywords(x, kwargs, getattr(x, "chunks", None),
                                   getattr(x, "blocks", None)))

    def producer(reg):
        key = tuple(slice(x.shape[d] - r.stop, x.shape[d] - r.start) if d in axes else r
                    for d, r in enumerate(reg))
        return np.flip(read_values(x, key), axes)

    return fill_chunks(out, producer)


def roll(x, shift, axis=None, **kwargs) -> NDArray:
    """Roll items along `axis` (the flattened array when None), as ``np.roll``.

    Examples
    --------
    >>> import ndpack
    >>> roll(ndpack.arange(5), 2)[:].tolist()
    [3, 4, 0, 1, 2]
    >>> roll(ndpack.arange(6, shape=(2, 3)), -1, axis=1)[:].tolist()
    [[1, 2, 0], [4, 5, 3]]
    """
    x = as_array(x)
    nd = len(x.shape)
    if axis is None:
        if not isinstance(shift, (int, np.integer)):
            raise ValueError("with axis=None, shift must be an integer")
        flat = reshape(x, (prod(x.shape),))
        kw = layout_keywords(x, kwargs, getattr(x, "chunks", None), getattr(x, "blocks", None))
        return reshape(roll(flat, shift, 0), tuple(x.shape), **kw)
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    total = [0] * nd
    for s, a in zip(shifts.reshape(-1).tolist(), axes.reshape(-1).tolist()):
        total[normalize_axis(a, nd)] += int(s)
    total = [t % n if n else 0 for t, n in zip(total, x.shape)]
    out = create(tuple(x.shape), x.dtype,
                 **layout_keywords(x, kwargs, getattr(x, "chunks", None),
                                   getattr(x, "blocks", None)))

    def pieces(d, r):
        """(source slice, destination slice) runs of output positions `r` on axis d."""
        n, s = x.shape[d], total[d]
        lo = (r.start - s) % n
        length = r.stop - r.start
        first = min(length, n - lo)
        runs = [(slice(lo, lo + first), slice(0, first))]
        if first < length:
            runs.append((slice(0, length - first), slice(first, length)))
        return runs

    def producer(reg):
        res = np.empty(tuple(r.stop - r.start for r in reg), x.dtype)
        for combo in itertools.product(*[pieces(d, r) for d, r in enumerate(reg)]):
            res[tuple(c[1] for c in combo)] = read_values(x, tuple(c[0] for c in combo))
        return res

    return fill_chunks(out, producer)
