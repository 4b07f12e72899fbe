"""Pack NumPy arrays, tensors and Python objects into Blosc2 frames or chunks.

The formats are python-blosc2's, so either library unpacks what the other packed:

* :func:`pack_array2`/:func:`pack_tensor` — a contiguous frame of the raw array bytes
  (C order) with a vlmeta entry ``__pack_tensor__ = (kind, shape, dtype)``;
  :func:`save_array`/:func:`save_tensor` write the same frame to a file.
* :func:`pack` — one chunk (BloscLZ, clevel 9, shuffle) of the object's pickle.

Examples
--------
>>> import numpy as np, ndpack
>>> a = np.linspace(0, 1, 1000).reshape(10, 100)
>>> frame = ndpack.pack_array2(a)
>>> b = ndpack.unpack_array2(frame)
>>> b.shape, bool((a == b).all())
((10, 100), True)
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import pickle

import numpy as np

from ndpack.reporting import task
from ndpack.chunks import (compress2, compress_or_header, decompress, get_blocksize,
                           is_raw_header)
from ndpack.codecs import Codec, CParams, Filter
from ndpack.errors import FormatError, ParameterError
from ndpack.storage.frame import RawChunk
from ndpack.storage.dispatch import open as open_frame
from ndpack.storage.schunk import SChunk, schunk_from_cframe

__all__ = ["pack_array2", "unpack_array2", "save_array", "load_array", "pack_tensor",
           "unpack_tensor", "save_tensor", "load_tensor", "pack", "unpack"]

TENSOR_KEY = "__pack_tensor__"
MAX_CHUNK = 2 ** 31 - 33               # largest chunk payload


def _dtype_code(dt: np.dtype):
    return dt.descr if dt.fields is not None else dt.str


def _to_numpy(tensor) -> tuple[str, np.ndarray]:
    mod = type(tensor).__module__.split(".")[0]
    if isinstance(tensor, np.ndarray):
        return "numpy", tensor
    if mod == "torch":
        return "torch", tensor.detach().cpu().numpy()
    if mod == "tensorflow":
        return "tensorflow", tensor.numpy()
    raise TypeError(f"unrecognized tensor/array: {type(tensor).__name__} "
                    "(expected a NumPy array, torch or tensorflow tensor)")


DEFAULT_CHUNK = 64 * 2**20            # bytes per chunk when not given


def _default_chunksize(arr: np.ndarray) -> int:
    """64 MiB (a multiple of the itemsize), or the whole array when smaller.

    Measured here on 400 MB float64 (2 cores; 8, 16, 32 and 64 MiB tried): 64 MiB
    chunks were best or within noise for arange, sin+noise and random bytes (one
    400 MB chunk is 10-40% slower: its fresh output buffer costs page faults on every
    save and nothing overlaps the file write).
    """
    itemsize = max(arr.itemsize, 1)
    size = max(DEFAULT_CHUNK - DEFAULT_CHUNK % itemsize, itemsize)
    return max(min(arr.nbytes, size), itemsize)


def _schunk_for(tensor, chunksize, kwargs) -> tuple[SChunk, int]:
    kind, arr = _to_numpy(tensor)
    arr = arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)   # keeps 0-d
    if arr.dtype.hasobject:
        raise TypeError("arrays of Python objects cannot be packed; use ndpack.pack()")
    given = kwargs.pop("cparams", None)
    itemsize = arr.itemsize if arr.itemsize <= 255 else 1
    if isinstance(given, CParams):     # a record always holds a typesize: the array's wins
        cparams = dataclasses.asdict(given) | {"typesize": itemsize}
    else:
        cparams = dict(given or {})
        cparams.setdefault("typesize", itemsize)
    if chunksize is None:
        chunksize = _default_chunksize(arr)
    schunk = SChunk(chunksize=chunksize, cparams=cparams, _commit=False, **kwargs)
    try:                   # on disk: under a temporary name until complete (atomic.py)
        flat = arr.reshape(-1).view(np.uint8) if arr.size else b""
        pieces = [flat[pos:pos + chunksize] for pos in range(0, arr.nbytes, chunksize)]
        if schunk.urlpath is None or len(pieces) < 2:
            for piece in pieces:
                schunk.append_data(piece)
        else:
            _append_pipelined(schunk, pieces)
        schunk.vlmeta[TENSOR_KEY] = (kind, arr.shape, _dtype_code(arr.dtype))
        schunk.frame.commit()
    except BaseException:
        schunk.frame.abort()
        raise
    return schunk, arr.nbytes


def _append_pipelined(schunk: SChunk, pieces: list) -> None:
    """Compress piece i + 1 (C threads) while a writer thread appends chunk i to the
    file: both release the GIL, so the write of one overlaps the compression of the
    next.  Chunks are appended in order; an error in either stage stops both."""
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ndpack-save") as w:
        pending = None
        for piece in pieces:
            chunk = compress_or_header(piece, schunk.cparams)
            if is_raw_header(chunk, len(piece)):     # written from `piece`, not copied
                chunk = RawChunk(chunk, piece)
            if pending is not None:
                pending.result()
            pending = w.submit(schunk.frame.append, chunk)     # our own chunk
        if pending is not None:
            pending.result()


def pack_tensor(tensor, chunksize: int | None = None, **kwargs):
    """Pack a NumPy array (or torch/tensorflow tensor) into a frame.

    Parameters
    ----------
    tensor : numpy.ndarray, torch.Tensor or tensorflow.Tensor
    chunksize : int, optional
        Bytes per chunk (64 MiB by default, see :func:`_default_chunksize`).
    **kwargs
        :class:`SChunk` arguments (``cparams=``, ``urlpath=``, ``contiguous=``, ...).

    Returns
    -------
    bytes or int
        The frame, or the number of bytes written when ``urlpath=`` is given.
    """
    schunk, _ = _schunk_for(tensor, chunksize, dict(kwargs))
    if schunk.urlpath is None:
        return schunk.to_cframe()
    schunk.close()
    return _size_on_disk(schunk.urlpath)


def pack_array2(arr: np.ndarray, chunksize: int | None = None, **kwargs):
    """Pack a NumPy array into a frame (no 2 GiB limit); see :func:`pack_tensor`.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> frame = ndpack.pack_array2(np.arange(1e6))
    >>> len(frame) < 8e6
    True
    """
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"pack_array2 needs a NumPy array, not {type(arr).__name__}")
    return pack_tensor(arr, chunksize, **kwargs)


def _size_on_disk(path) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def _array_of(schunk: SChunk) -> tuple[str, np.ndarray]:
    if TENSOR_KEY not in schunk.vlmeta:
        raise FormatError(f"the frame has no {TENSOR_KEY!r} vlmeta entry: it was not made "
                          "by pack_array2/pack_tensor/save_array")
    try:
        kind, shape, dtype = schunk.vlmeta[TENSOR_KEY]
        dt = np.dtype([tuple(f) for f in dtype] if isinstance(dtype, list) else dtype)
        shape = tuple(int(n) for n in shape)
    except (TypeError, ValueError) as exc:
        raise FormatError(f"malformed {TENSOR_KEY!r} vlmeta entry: {exc}") from None
    expected = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if schunk.nbytes != expected:
        raise FormatError(f"{TENSOR_KEY!r} says {shape} {dt} ({expected} bytes) but the "
                          f"frame holds {schunk.nbytes} bytes")
    out = np.empty(shape, dt)
    if expected:
        schunk.get_slice(0, None, out=out.reshape(-1).view(np.uint8))
    return kind, out


def _as_kind(kind: str, arr: np.ndarray):
    if kind == "torch":
        import torch  # noqa: PLC0415  (optional dependency, only when asked for)
        return torch.from_numpy(arr)
    if kind == "tensorflow":
        import tensorflow as tf  # noqa: PLC0415
        return tf.constant(arr)
    return arr


def unpack_tensor(cframe):
    """Unpack a frame made by :func:`pack_tensor` into the original kind of tensor."""
    kind, arr = _array_of(schunk_from_cframe(cframe))
    return _as_kind(kind, arr)


def unpack_array2(cframe) -> np.ndarray:
    """Unpack a frame made by :func:`pack_array2` (or python-blosc2's) into a NumPy array."""
    return _array_of(schunk_from_cframe(cframe))[1]


def save_tensor(tensor, urlpath, chunksize: int | None = None, **kwargs) -> int:
    """Save a tensor to `urlpath` (overwritten); returns the bytes written."""
    kwargs.setdefault("mode", "w")
    return pack_tensor(tensor, chunksize, urlpath=urlpath, **kwargs)


def save_array(arr: np.ndarray, urlpath, chunksize: int | None = None, **kwargs) -> int:
    """Save a NumPy array to `urlpath` (overwritten); returns the bytes written.

    Examples
    --------
    >>> import numpy as np, ndpack, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.b2frame")
    >>> n = ndpack.save_array(np.arange(100), path)
    >>> ndpack.load_array(path)[-3:].tolist()
    [97, 98, 99]
    """
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"save_array needs a NumPy array, not {type(arr).__name__}")
    with task(1):                                  # one call (ndpack.progress)
        return save_tensor(arr, urlpath, chunksize, **kwargs)


def _mmap_for(urlpath):
    """Contiguous frames are read through mmap: chunks decode straight from the page
    cache, without a copy into a fresh buffer first."""
    return None if os.path.isdir(urlpath) else "r"


def load_tensor(urlpath, dparams=None):
    """Load a tensor saved by :func:`save_tensor` (or python-blosc2's)."""
    with open_frame(urlpath, mode="r", dparams=dparams, mmap_mode=_mmap_for(urlpath)) as schunk:
        kind, arr = _array_of(schunk)
    return _as_kind(kind, arr)


def load_array(urlpath, dparams=None) -> np.ndarray:
    """Load a NumPy array saved by :func:`save_array` (or python-blosc2's)."""
    with task(1), open_frame(urlpath, mode="r", dparams=dparams,
                             mmap_mode=_mmap_for(urlpath)) as schunk:
        return _array_of(schunk)[1]


def pack(obj, clevel: int = 9, filter: Filter = Filter.SHUFFLE,  # noqa: A002
         codec: Codec = Codec.BLOSCLZ) -> bytes:
    """Pickle `obj` and compress the pickle into one chunk.

    `obj` must have an ``itemsize`` (NumPy arrays and scalars), which becomes the
    typesize, as in python-blosc2.  The pickle must fit in one chunk (< 2 GiB); use
    :func:`pack_array2` for big arrays.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> ndpack.unpack(ndpack.pack(np.arange(5, dtype=np.int16))).tolist()
    [0, 1, 2, 3, 4]
    """
    itemsize = getattr(obj, "itemsize", None)
    if not isinstance(itemsize, int) or itemsize < 1:
        raise TypeError(f"pack needs an object with an itemsize (NumPy array or scalar), "
                        f"not {type(obj).__name__}")
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) > MAX_CHUNK:
        raise ParameterError(f"the pickle of {len(data)} bytes does not fit in one chunk; "
                             "use pack_array2")
    return compress2(data, typesize=min(itemsize, 255), clevel=clevel, codec=codec,
                     filters=[0, 0, 0, 0, 0, filter], blocksize=get_blocksize())


def unpack(packed_object, **kwargs):
    """Decompress and unpickle an object made by :func:`pack`.

    Warning: this runs :func:`pickle.loads`, which can execute arbitrary code.
    Only unpack data from sources you trust; for untrusted input use
    :func:`unpack_array2`, which decodes raw array bytes and never unpickles.
    """
    if kwargs:
        raise ParameterError(f"unknown unpack() argument(s) {sorted(kwargs)}")
    return pickle.loads(decompress(packed_object))  # noqa: S301  (documented trust boundary)
