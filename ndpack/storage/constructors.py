"""Functions that build :class:`~ndpack.storage.ndarray.NDArray` objects.

Names and signatures follow python-blosc2.  Every constructor accepts the storage
keywords ``chunks=``, ``blocks=`` (python-blosc2's defaults when omitted, see
:func:`~ndpack.storage.grid.compute_chunks_blocks`), ``cparams=``, ``dparams=``,
``urlpath=``, ``contiguous=``, ``mode=`` and ``meta=``.  ``zeros``, ``empty``,
``full``, ``ones``, ``nans`` and ``uninit`` store special chunks only (no data);
the others compress one chunk at a time, so memory stays bounded by one chunk.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import zeros, full, arange, asarray
>>> z = zeros((1000, 1000), dtype="f8")
>>> z.cbytes < 100, float(z[500, 500])
(True, 0.0)
>>> full((2, 3), 7)[:].tolist()
[[7, 7, 7], [7, 7, 7]]
>>> arange(0, 1, 0.25)[:].tolist()
[0.0, 0.25, 0.5, 0.75]
>>> asarray(np.eye(3, dtype=bool))[1].tolist()
[False, True, False]
"""

from __future__ import annotations

import builtins
import itertools
import math
import os
import tempfile

import numpy as np

from ndpack.codecs import SpecialValue
from ndpack.errors import ParameterError
from ndpack.storage.grid import prod
from ndpack.storage.atomic import replacing
from ndpack.storage.ndarray import NDArray, array_or_schunk, create, fill_from, holding
from ndpack.storage.remote import is_url, upload
from ndpack.storage.schunk import SChunk, open_schunk, schunk_from_cframe

__all__ = [
    "CopyRequired",
    "arange",
    "array",
    "asarray",
    "copy",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "frombuffer",
    "fromiter",
    "full",
    "full_like",
    "linspace",
    "load",
    "nans",
    "ndarray_from_cframe",
    "ones",
    "ones_like",
    "save",
    "uninit",
    "zeros",
    "zeros_like",
]


def _shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(shape)


def _dtype(dtype):
    """The array API's default: None is the default floating dtype, float64."""
    return np.float64 if dtype is None else dtype


def empty(shape, dtype=None, *, device=None, **kwargs) -> NDArray:
    """An array whose content is zeros (python-blosc2's ``empty`` stores zero chunks)."""
    return zeros(shape, dtype, device=device, **kwargs)


def zeros(shape, dtype=None, *, device=None, **kwargs) -> NDArray:
    """An array of zeros; every chunk is a special zeros chunk (no data stored).

    Examples
    --------
    >>> a = zeros((5,), dtype="i2", chunks=(2,), blocks=(1,))
    >>> a.schunk.nchunks, a[:].tolist()
    (3, [0, 0, 0, 0, 0])
    """
    return fill_from(create(_shape(shape), _dtype(dtype), device=device, **kwargs),
                     special=SpecialValue.ZERO)


def uninit(shape, dtype=None, **kwargs) -> NDArray:
    """An array with undefined content (uninitialized special chunks; reads give zeros)."""
    return fill_from(create(_shape(shape), _dtype(dtype), **kwargs),
                     special=SpecialValue.UNINIT)


def nans(shape, dtype=None, **kwargs) -> NDArray:
    """An array of NaN (float dtypes only); NaN special chunks, no data stored.

    Examples
    --------
    >>> bool(np.isnan(nans((3, 3), dtype="f4")[:]).all())
    True
    """
    dt = np.dtype(_dtype(dtype))
    if dt.kind not in "fc":
        raise ValueError(f"nans() needs a floating-point dtype, not {dt}")
    arr = create(_shape(shape), dt, **kwargs)
    if dt.kind == "f" and dt.itemsize in (4, 8) and dt.isnative:
        return fill_from(arr, special=SpecialValue.NAN)
    return fill_from(arr, special=SpecialValue.VALUE, value=np.nan)


def full(shape, fill_value, dtype=None, *, device=None, **kwargs) -> NDArray:
    """An array filled with `fill_value`; repeated-value special chunks, no data stored.

    The dtype defaults to NumPy's for `fill_value`.

    Examples
    --------
    >>> full(3, 1.5)[:].tolist(), full((2,), "ab").dtype
    ([1.5, 1.5, 1.5], dtype('<U2'))
    """
    dt = np.asarray(fill_value).dtype if dtype is None else np.dtype(dtype)
    value = np.asarray(fill_value, dtype=dt)
    if value.shape:
        raise ValueError(f"fill_value must be a scalar, got an array of shape {value.shape}")
    arr = create(_shape(shape), dt, device=device, **kwargs)
    if not value.tobytes().strip(b"\x00"):
        return fill_from(arr, special=SpecialValue.ZERO)
    return fill_from(arr, special=SpecialValue.VALUE, value=value)


def ones(shape, dtype=None, *, device=None, **kwargs) -> NDArray:
    """An array of ones (repeated-value special chunks)."""
    return full(shape, 1, dtype=_dtype(dtype), device=device, **kwargs)


def _layout_kwargs(x, kwargs: dict) -> dict:
    """For ``*_like``: reuse the chunks/blocks of `x` when it has them."""
    if "chunks" not in kwargs and "blocks" not in kwargs and \
            getattr(x, "chunks", None) is not None and getattr(x, "blocks", None) is not None:
        kwargs = dict(kwargs, chunks=tuple(x.chunks), blocks=tuple(x.blocks))
    return kwargs


def empty_like(x, dtype=None, *, device=None, **kwargs) -> NDArray:
    """:func:`empty` with the shape (and chunks/blocks) of `x`."""
    return empty(x.shape, dtype or x.dtype, device=device, **_layout_kwargs(x, kwargs))


def zeros_like(x, dtype=None, *, device=None, **kwargs) -> NDArray:
    """:func:`zeros` with the shape (and chunks/blocks) of `x`."""
    return zeros(x.shape, dtype or x.dtype, device=device, **_layout_kwargs(x, kwargs))


def ones_like(x, dtype=None, *, device=None, **kwargs) -> NDArray:
    """:func:`ones` with the shape (and chunks/blocks) of `x`."""
    return ones(x.shape, dtype or x.dtype, device=device, **_layout_kwargs(x, kwargs))


def full_like(x, fill_value, dtype=None, *, device=None, **kwargs) -> NDArray:
    """:func:`full` with the shape (and chunks/blocks) of `x`.

    Examples
    --------
    >>> a = zeros((4, 4), chunks=(2, 2), blocks=(1, 2))
    >>> b = full_like(a, 3.0)
    >>> b.chunks, float(b[3, 3])
    ((2, 2), 3.0)
    """
    return full(x.shape, fill_value, dtype or x.dtype, device=device,
                **_layout_kwargs(x, kwargs))


def asarray(array, copy=None, *, dtype=None, device=None, **kwargs) -> NDArray:
    """An NDArray from a NumPy array or any object with shape, dtype and ``__getitem__``.

    The source is read one chunk-sized region at a time.  An NDArray without storage
    keywords is returned as is (unless ``copy=True``).

    Parameters
    ----------
    array : array-like
    copy : bool, optional
        True always makes a new array; None (default) returns an NDArray input as it
        is when nothing changes; False refuses to copy (ValueError), as the array API
        says.
    dtype : dtype-like, optional
        Cast to this dtype.
    **kwargs
        Storage keywords (chunks, blocks, cparams, dparams, urlpath, mode, meta, ...).

    Examples
    --------
    >>> a = asarray(np.arange(12).reshape(3, 4), chunks=(2, 2), blocks=(1, 2))
    >>> a.schunk.nchunks, a[2, ::-1].tolist()
    (4, [11, 10, 9, 8])
    """
    if isinstance(array, NDArray) and not kwargs and not copy and \
            (dtype is None or np.dtype(dtype) == array.dtype):
        return array
    if copy is False:               # the array API's "never copy"
        raise ValueError("asarray(copy=False): the input must be an NDArray of the same "
                         "dtype without storage keywords; anything else is compressed "
                         "into a new array (a copy)")
    if not (hasattr(array, "shape") and hasattr(array, "dtype")
            and hasattr(array, "__getitem__")):
        array = np.asarray(array)
    dt = np.dtype(array.dtype if dtype is None else dtype)
    out = create(tuple(array.shape), dt, device=device, **kwargs)
    if isinstance(array, np.ndarray) and array.ndim == 0:
        return fill_from(out, lambda reg: array)
    return fill_from(out, lambda reg: array[reg])


class CopyRequired(BufferError, ValueError):
    """``copy=False`` asked of an exchange that must copy (compressed values are never
    shared): the standard's BufferError of ``__dlpack__`` and ValueError of
    ``from_dlpack``, both."""


def from_dlpack(x, /, *, device=None, copy=None, **kwargs) -> NDArray:
    """An NDArray of the values of any DLPack exporter on the CPU (NumPy, PyTorch,
    JAX, ...).  The values are compressed: this is always a copy (``copy=False`` is a
    :class:`CopyRequired`, both ValueError and BufferError).  `device` is ``"cpu"``,
    None or DLPack's CPU device ``(1, 0)``; an exporter's own BufferError (another
    device, strides or dtype it cannot export) and the AttributeError of an object
    without ``__dlpack__`` propagate, as the standard asks.

    Examples
    --------
    >>> from_dlpack(np.arange(4.0))[:].tolist()
    [0.0, 1.0, 2.0, 3.0]
    >>> from_dlpack(np.arange(2), copy=False)
    Traceback (most recent call last):
    ...
    ndpack.storage.constructors.CopyRequired: from_dlpack(copy=False): an NDArray stores its values compressed, so it always copies
    """
    if copy is False:
        raise CopyRequired("from_dlpack(copy=False): an NDArray stores its values "
                           "compressed, so it always copies")
    if isinstance(device, tuple) and tuple(device) == (1, 0):      # kDLCPU, device 0
        device = None
    if not hasattr(x, "__dlpack__"):
        raise AttributeError(f"from_dlpack: {type(x).__name__} has no __dlpack__ method")
    return asarray(np.from_dlpack(x), device=device, **kwargs)


def array(obj, dtype=None, copy=True, **kwargs) -> NDArray:
    """Like :func:`asarray`, but copies an NDArray by default."""
    return asarray(obj, copy=copy, dtype=dtype, **kwargs)


def frombuffer(buffer, shape, dtype=np.uint8, **kwargs) -> NDArray:
    """An array from the bytes of `buffer` interpreted as `dtype` in C order.

    Examples
    --------
    >>> frombuffer(bytes(range(6)), (2, 3))[1].tolist()
    [3, 4, 5]
    """
    dt = np.dtype(dtype)
    shape = _shape(shape)
    need = prod(shape) * dt.itemsize
    view = memoryview(buffer).cast("B")
    if len(view) < need:
        raise ValueError(f"buffer of {len(view)} bytes is too small for shape {shape} of "
                         f"{dt} ({need} bytes)")
    data = np.frombuffer(view[:need], dtype=dt).reshape(shape)
    return asarray(data, **kwargs)


def copy(array, dtype=None, **kwargs) -> NDArray:
    """A copy of an NDArray (see :meth:`NDArray.copy`)."""
    if isinstance(array, NDArray):
        return array.copy(dtype=dtype, **kwargs)
    return asarray(array, copy=True, dtype=dtype, **kwargs)


def _grid_values(shape, producer):
    """A chunk producer from ``producer(flat_indices)`` (C-order positions)."""
    def region_values(region):
        sub = tuple(s.stop - s.start for s in region)
        grids = np.indices(sub, dtype=np.int64) if sub else np.zeros((0,), np.int64)
        flat = np.zeros(sub, np.int64)
        for d, s in enumerate(region):
            flat = flat * shape[d] + (grids[d] + s.start)
        return producer(flat)
    return region_values


def arange(start, stop=None, step=1, dtype=None, shape=None, c_order=True, *,
           device=None, **kwargs) -> NDArray:
    """Evenly spaced values in ``[start, stop)``, generated chunk by chunk.

    Examples
    --------
    >>> arange(10, 0, -3)[:].tolist()
    [10, 7, 4, 1]
    >>> arange(6, shape=(2, 3))[1].tolist()
    [3, 4, 5]
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange() step must not be 0")
    num = max(math.ceil((stop - start) / step), 0)
    dt = np.dtype(dtype) if dtype is not None else np.result_type(
        *(np.asarray(v) for v in (start, stop, step)))
    shape = (num,) if shape is None else _shape(shape)
    if prod(shape) != num:
        raise ValueError(f"shape {shape} holds {prod(shape)} items, arange has {num}")
    out = create(shape, dt, device=device, **kwargs)
    if dt.kind in "iub":
        gen = _grid_values(shape, lambda i: (start + i * step).astype(dt))
    else:
        gen = _grid_values(shape, lambda i: (start + i * np.float64(step)).astype(dt))
    return fill_from(out, gen)


def linspace(start, stop, num=None, dtype=None, endpoint=True, shape=None, c_order=True,
             *, device=None, **kwargs) -> NDArray:
    """`num` evenly spaced values from `start` to `stop`, generated chunk by chunk.

    Examples
    --------
    >>> linspace(0, 1, 5)[:].tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if num is None:
        if shape is None:
            raise ValueError("linspace() needs num or shape")
        num = prod(_shape(shape))
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace() num must be >= 0, got {num}")
    shape = (num,) if shape is None else _shape(shape)
    if prod(shape) != num:
        raise ValueError(f"shape {shape} holds {prod(shape)} items, linspace has {num}")
    dt = np.dtype(dtype) if dtype is not None else np.result_type(
        np.asarray(start), np.asarray(stop), np.float64)
    div = (num - 1) if endpoint else num
    delta = stop - start
    step = delta / div if div > 0 else None

    def values(i):
        if step is None:
            y = i * delta
        elif step == 0:
            y = i / div * delta
        else:
            y = i * step
        y = y + start
        if endpoint and num > 1:
            y = np.where(i == num - 1, stop, y)
        return np.asarray(y).astype(dt)

    return fill_from(create(shape, dt, device=device, **kwargs), _grid_values(shape, values))


def ndarray_from_cframe(cframe, copy: bool = False) -> NDArray:
    """An in-memory NDArray from contiguous-frame bytes (a ``.b2nd`` image).

    Examples
    --------
    >>> a = arange(5)
    >>> ndarray_from_cframe(a.to_cframe())[:].tolist()
    [0, 1, 2, 3, 4]
    """
    schunk = schunk_from_cframe(cframe, copy=copy)
    if "b2nd" not in list(schunk.meta):
        raise ParameterError("the frame has no 'b2nd' metalayer: it is not an NDArray")
    return NDArray(schunk)


def eye(N, M=None, k=0, dtype=None, *, device=None, **kwargs) -> NDArray:
    """A 2-D array with ones on diagonal `k` and zeros elsewhere (chunks off the
    diagonal are stored as zero special chunks).

    Examples
    --------
    >>> eye(3, 4, k=1, dtype=np.int8, chunks=(2, 2), blocks=(1, 2))[:].tolist()
    [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    """
    M = N if M is None else M
    out = create((int(N), int(M)), _dtype(dtype), device=device, **kwargs)

    def region(reg):
        rows = np.arange(reg[0].start, reg[0].stop)[:, None]
        cols = np.arange(reg[1].start, reg[1].stop)[None, :]
        return (cols - rows == k).astype(out.dtype)

    return fill_from(out, region)


def fromiter(iterable, shape, dtype, c_order=True, **kwargs) -> NDArray:
    """An array filled from an iterable in C order, one slab of chunk rows at a time.

    With ``c_order=False`` the items fill the chunks one after another (in C order of
    the chunk grid), each chunk's items in C order of its own extent -- python-blosc2's
    order, which stores the items without reordering them.

    Examples
    --------
    >>> fromiter(range(12), (3, 4), np.int64, chunks=(2, 2))[2].tolist()
    [8, 9, 10, 11]
    >>> fromiter(range(12), (3, 4), np.int64, c_order=False, chunks=(2, 2))[:].tolist()
    [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 10, 11]]
    """
    dt = np.dtype(dtype)
    if not c_order:
        it = iter(iterable)

        def chunk_of(region):
            ext = tuple(r.stop - r.start for r in region)
            n = prod(ext)
            return np.fromiter(itertools.islice(it, n), dtype=dt, count=n).reshape(ext)
        with holding(create(shape, dt, **kwargs)) as out:
            return fill_from(out, chunk_of) if out.ndim else _fill_iter(
                fill_from(out, special=SpecialValue.ZERO), it)
    with holding(create(shape, dt, **kwargs)) as out:   # on disk: in place when complete
        return _fill_iter(fill_from(out, special=SpecialValue.ZERO), iterable)


def _fill_iter(out: NDArray, iterable) -> NDArray:
    it = iter(iterable)
    if out.ndim == 0:
        out[()] = next(it)
        return out
    rows = max(out.chunks[0], 1)
    per_row = prod(out.shape[1:])
    for r0 in range(0, out.shape[0], rows):
        r1 = min(r0 + rows, out.shape[0])
        count = (r1 - r0) * per_row
        slab = np.fromiter(itertools.islice(it, count), dtype=out.dtype, count=count)
        out[r0:r1] = slab.reshape((r1 - r0,) + out.shape[1:])
    return out


def save(array, urlpath, contiguous=True, **kwargs) -> None:
    """Write an NDArray (or SChunk) to `urlpath`, overwriting it.

    Compressed chunks are copied as they are; memory stays at one chunk.  A URL
    (``s3://...``, any fsspec knows; ``storage_options=`` go to fsspec) gets the
    whole frame as one object once it is complete (:func:`ndpack.storage.remote.upload`).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.b2nd")
    >>> save(arange(10), path)
    >>> load(path)[-2:].tolist()
    [8, 9]
    """
    if is_url(urlpath):         # written whole locally, then put as one object
        if not contiguous:
            raise ParameterError(f"{urlpath}: objects at URLs are contiguous frames")
        options = kwargs.pop("storage_options", None)
        with tempfile.TemporaryDirectory(prefix="ndpack-upload-") as folder:
            local = os.path.join(folder, os.path.basename(urlpath.rstrip("/")) or "a.b2nd")
            save(array, local, **kwargs)
            upload(local, urlpath, options)
        return
    if isinstance(array, SChunk):
        if not contiguous:
            raise ParameterError("an SChunk is saved as a contiguous frame (contiguous=True)")
        with replacing(urlpath) as tmp, builtins.open(tmp, "wb") as f:
            f.write(array.to_cframe())
        return
    if not isinstance(array, NDArray):
        array = asarray(array)
    array.save(urlpath, contiguous=contiguous, **kwargs)


def load(urlpath, offset: int = 0, **kwargs):
    """Read a frame on disk into memory: an in-memory NDArray (or SChunk) that no
    longer refers to the file.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "b.b2nd")
    >>> save(asarray(np.ones((2, 2))), path)
    >>> a = load(path); a.urlpath is None, float(a[:].sum())
    (True, 4.0)
    """
    src = array_or_schunk(open_schunk(urlpath, mode="r", offset=offset, **kwargs))
    if isinstance(src, NDArray):
        return src.copy()
    return schunk_from_cframe(src.to_cframe(), copy=True)

