"""python-blosc2's remaining top-level names that concern arrays: format limits, type
aliases, machine facts and a few functions under their python-blosc2 names.

The limits are the formats' own (``MAX_TYPESIZE`` is 255, the one-byte typesize of a
chunk header; python-blosc2 4.14 exports a larger number it never accepts).  The table
of every python-blosc2 name and its state here is docs/compat.md.

Examples
--------
>>> import ndpack
>>> ndpack.MAX_TYPESIZE, ndpack.MAX_DIM, ndpack.DEFAULT_FLOAT.__name__
(255, 16, 'float64')
>>> ndpack.transpose(ndpack.arange(6, shape=(2, 3))).shape
(3, 2)
"""

from __future__ import annotations

import abc
import ast
import builtins
import functools
import itertools
import os

import numpy as np

from ndpack.about import __version__
from . import _core
from ndpack.codecs import MAX_TYPESIZE as _MAX_TYPESIZE  # one byte in a chunk header
from ndpack.codecs import Codec, Filter
from ndpack.resources import buffers
from ndpack.storage import pack, unpack
from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.engine.expr.parse import parse
from ndpack.engine.ops.shape import permute_dims
from ndpack.engine.udf import LazyUDF
from ndpack.linalg import diagonal as _diagonal
from ndpack.storage.constructors import ndarray_from_cframe
from ndpack.storage.embedstore import EmbedStore
from ndpack.storage.embedstore import estore_from_cframe as _estore_from_cframe
from ndpack.storage.ndarray import NDArray
from ndpack.storage.schunk import schunk_from_cframe

__all__ = [
    "MAX_TYPESIZE", "MAX_BUFFERSIZE", "MAX_BLOCKSIZE", "MAX_OVERHEAD", "MIN_HEADER_LENGTH",
    "EXTENDED_HEADER_LENGTH", "MAX_DIM", "DEFINED_CODECS_STOP",
    "GLOBAL_REGISTERED_CODECS_STOP", "USER_REGISTERED_CODECS_STOP", "VERSION_STRING",
    "blosclib_version", "DEFAULT_INT", "DEFAULT_FLOAT", "DEFAULT_COMPLEX", "DEFAULT_INDEX",
    "bool_", "str_", "bytes_", "object_", "float16", "euler_gamma", "ncores",
    "detect_number_of_cores", "transpose", "diagonal", "Operand", "LazyArray",
    "lazywhere", "get_expr_operands", "validate_expr", "are_partitions_aligned",
    "are_partitions_behaved", "get_slice_nchunks", "from_cframe", "pack_array",
    "unpack_array", "clib_info", "free_resources", "estore_from_cframe",
]

MAX_TYPESIZE = _MAX_TYPESIZE
MAX_BUFFERSIZE = 2**31 - 1 - 32     # a chunk's nbytes is an int32, less the header
MAX_BLOCKSIZE = 536866816           # python-blosc2's value
MAX_OVERHEAD = 32                   # the extended header
MIN_HEADER_LENGTH = 16
EXTENDED_HEADER_LENGTH = 32
MAX_DIM = 16                        # the b2nd metalayer's limit
DEFINED_CODECS_STOP = 31            # codec ids: 0..31 defined, ..159 registered,
GLOBAL_REGISTERED_CODECS_STOP = 159  # 160..255 for users
USER_REGISTERED_CODECS_STOP = 255
VERSION_STRING = __version__
blosclib_version = f"ndpack {__version__}"

DEFAULT_INT = np.int64
DEFAULT_FLOAT = np.float64
DEFAULT_COMPLEX = np.complex128
DEFAULT_INDEX = np.int64
bool_, str_, bytes_, object_, float16 = np.bool_, np.str_, np.bytes_, np.object_, np.float16
euler_gamma = float(np.euler_gamma)



def detect_number_of_cores() -> int:
    """The CPUs this process may run on (its affinity), as the thread default uses."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


ncores = detect_number_of_cores()


def transpose(x, **kwargs):
    """python-blosc2's ``transpose``: the axes reversed (:func:`ndpack.permute_dims`)."""
    return permute_dims(x, None, **kwargs)


def diagonal(x, /, *, offset=0):
    """python-blosc2's ``diagonal``: :func:`ndpack.linalg.diagonal`."""
    return _diagonal(x, offset=offset)


class Operand(abc.ABC):
    """python-blosc2's base class of everything an expression takes: ``isinstance(x,
    ndpack.Operand)`` is true for NDArrays, LazyExprs and LazyUDFs (registered, not
    inherited: ndpack's classes keep their own bases).

    Examples
    --------
    >>> import ndpack
    >>> a = ndpack.zeros((2,))
    >>> isinstance(a, ndpack.Operand), isinstance(a + 1, ndpack.LazyArray)
    (True, True)
    """


class LazyArray(Operand):
    """python-blosc2's base class of lazy arrays: LazyExpr and LazyUDF are registered."""


for _cls in (NDArray, LazyExpr, LazyUDF):
    Operand.register(_cls)
for _cls in (LazyExpr, LazyUDF):
    LazyArray.register(_cls)
del _cls


def lazywhere(value1=None, value2=None):
    """python-blosc2's decorator: the function's lazy expression (a condition) becomes
    ``where(condition, value1, value2)``.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(5.0))
    >>> @lazywhere(a, 0.0)
    ... def big(x):
    ...     return x > 2
    >>> big(a)[()].tolist()
    [0.0, 0.0, 0.0, 3.0, 4.0]
    """
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs).where(value1, value2)
        return wrapper
    return decorate


def get_expr_operands(expression: str) -> set:
    """The operand names of a string expression: every name that is not called as a
    function (python-blosc2's rule; ``np`` and dtype names are not operands).

    Examples
    --------
    >>> sorted(get_expr_operands("a + sin(b) * float32(c) - np.pi"))
    ['a', 'b', 'c']
    """
    tree = ast.parse(expression.strip(), mode="eval")
    called = {n.func.id for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and n.id not in called and n.id != "np" and not _is_dtype_name(n.id)}


def _is_dtype_name(name: str) -> bool:
    return name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float16", "float32", "float64", "complex64", "complex128")


def validate_expr(expr: str) -> None:
    """Raise ValueError when `expr` is not an expression ndpack evaluates (syntax outside
    the whitelist, unknown functions, attribute access); return None otherwise.

    Examples
    --------
    >>> validate_expr("a + sin(b) ** 2")
    >>> validate_expr("a.__class__")
    Traceback (most recent call last):
    ...
    ValueError: not allowed in an expression: attribute access 'a.__class__'
    """
    try:
        names = {name: np.zeros(()) for name in get_expr_operands(expr)}
    except SyntaxError as exc:
        raise ValueError(f"invalid expression {expr[:200]!r}: {exc.msg}") from None
    parse(expr, names)


def are_partitions_aligned(shape, chunks, blocks) -> bool:
    """True when `chunks` divide `shape` and `blocks` divide `chunks` in every dimension.

    Examples
    --------
    >>> are_partitions_aligned((10, 10), (5, 5), (5, 1)), are_partitions_aligned((10,), (4,), (2,))
    (True, False)
    """
    return builtins.all(s % c == 0 for s, c in zip(shape, chunks, strict=True)) and \
        builtins.all(c % b == 0 for c, b in zip(chunks, blocks, strict=True))


def are_partitions_behaved(shape, chunks, blocks) -> bool:
    """True when every chunk is one C-contiguous run of the array and every block one
    run of its chunk (python-blosc2's rule, C-Blosc2's fast path): the leading
    dimensions of 1, then one dimension that divides, then whole dimensions.

    Examples
    --------
    >>> are_partitions_behaved((10, 10), (5, 10), (1, 10)), are_partitions_behaved((10, 10), (5, 5), (5, 5))
    (True, False)
    """
    def contiguous(outer, inner):
        first = 0                       # the dimension that may divide
        for i, (size, unit) in enumerate(zip(outer, inner, strict=True)):
            if size % unit or (i > first and size != unit):
                return False
            if i == first and unit == 1:
                first += 1
        return True

    rows_whole = not shape or (chunks[-1] == shape[-1] and builtins.all(
        s % c == 0 for s, c in zip(shape[:-1], chunks[:-1], strict=True)))
    return contiguous(chunks, blocks) and rows_whole


def get_slice_nchunks(schunk, key) -> np.ndarray:
    """The chunk numbers (C order of the chunk grid) that a slice reads.

    Parameters
    ----------
    schunk : SChunk or NDArray
    key : int, slice, (start, stop) of items for an SChunk; slices or integers (one per
        dimension, ``...`` standing for the missing ones) for an NDArray.  Steps other
        than 1 are an IndexError, as in python-blosc2.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(100).reshape(10, 10), chunks=(4, 4), blocks=(2, 2))
    >>> get_slice_nchunks(a, (slice(3, 6), slice(0, 5))).tolist()
    [0, 1, 3, 4]
    >>> get_slice_nchunks(a.schunk, 5).tolist()
    [0]
    """
    if isinstance(schunk, NDArray):
        key = key if isinstance(key, tuple) else (key,)
        dots = [i for i, k in enumerate(key) if k is Ellipsis]
        if len(dots) > 1:
            raise IndexError("get_slice_nchunks: an index can only have a single ellipsis")
        if dots:                        # ``...`` stands for as many full slices as needed
            i = dots[0]
            key = key[:i] + (slice(None),) * (schunk.ndim - len(key) + 1) + key[i + 1:]
        key = key + (slice(None),) * (schunk.ndim - len(key))
        ranges = []
        for k, n, c in zip(key, schunk.shape, schunk.chunks, strict=True):
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                if step != 1:
                    raise IndexError("get_slice_nchunks: only slices of step 1")
            else:
                start = int(k) + n if int(k) < 0 else int(k)
                stop = start + 1
            ranges.append(range(start // c, -(-stop // c)) if stop > start else range(0))
        grid = [-(-n // c) for n, c in zip(schunk.shape, schunk.chunks)]
        nums = [int(np.ravel_multi_index(idx, grid)) for idx in itertools.product(*ranges)]
        return np.array(nums, dtype=np.int64)
    if isinstance(key, slice):
        if key.step not in (1, None):
            raise IndexError("get_slice_nchunks: only slices of step 1")
        start, stop, _ = key.indices(len(schunk))
    elif isinstance(key, tuple):
        start, stop = key
    else:
        start, stop = int(key), int(key) + 1
    per = schunk.chunksize // schunk.typesize
    return np.arange(start // per, -(-stop // per) if stop > start else start // per,
                     dtype=np.int64)


def from_cframe(cframe, copy: bool = True):
    """An NDArray (a frame with the ``b2nd`` metalayer) or an SChunk from the bytes of
    a contiguous frame.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(6).reshape(2, 3))
    >>> from_cframe(a.to_cframe())[:].tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    chunks = schunk_from_cframe(cframe, copy=copy)
    if "b2nd" in chunks.meta:
        return ndarray_from_cframe(cframe, copy=copy)
    return chunks


def pack_array(arr, clevel: int = 9, filter: Filter = Filter.SHUFFLE,
               codec: Codec = Codec.BLOSCLZ) -> bytes:
    """python-blosc2's ``pack_array``: :func:`ndpack.pack` of a NumPy array (the same
    bytes python-blosc2's ``unpack_array`` reads).

    Examples
    --------
    >>> import numpy as np
    >>> unpack_array(pack_array(np.arange(5.0))).tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0]
    """
    return pack(arr, clevel, filter, codec)


def unpack_array(packed_array, **kwargs):
    """python-blosc2's ``unpack_array``: :func:`ndpack.unpack` (the array back)."""
    return unpack(packed_array, **kwargs)


_LIBRARY = {Codec.BLOSCLZ: b"BloscLZ", Codec.LZ4: b"LZ4", Codec.LZ4HC: b"LZ4",
            Codec.ZLIB: b"Zlib", Codec.ZSTD: b"Zstd"}


def clib_info(codec: Codec) -> tuple:
    """The library behind `codec` and its version, as bytes (python-blosc2's form;
    ndpack's own BloscLZ reports its ndpack version).

    Examples
    --------
    >>> clib_info(Codec.ZSTD)[0]
    b'Zstd'
    """
    codec = Codec(codec)
    if codec not in _LIBRARY:
        return codec.name.lower().encode(), b"unknown"
    return _LIBRARY[codec], _core.library_version(int(codec)).encode()


def free_resources() -> None:
    """Release the idle decode/encode buffers ndpack keeps (its pools' threads end
    with the process; nothing else is held between calls)."""
    buffers.clear()


def estore_from_cframe(cframe, copy: bool = False, *, deserialize: str = "safe") -> EmbedStore:
    """An in-memory :class:`EmbedStore` from its frame bytes (``EmbedStore.to_cframe()``
    or a ``.b2e`` file's bytes; python-blosc2's ``estore_from_cframe``).

    Parameters
    ----------
    cframe : bytes-like
    copy : bool
        Accepted for python-blosc2's signature: the bytes are always copied, so the
        store can be written and `cframe` released.
    deserialize : {"safe", "full"}
        python-blosc2's mode for values that need unpickling; ndpack stores arrays and
        super-chunks only and never unpickles, so both read the same.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> es = ndpack.EmbedStore()
    >>> es["/x"] = np.arange(3)
    >>> ndpack.estore_from_cframe(es.to_cframe())["/x"][:].tolist()
    [0, 1, 2]
    """
    mode = getattr(deserialize, "value", deserialize)
    if mode not in ("safe", "full"):
        raise ValueError(f"deserialize must be 'safe' or 'full', not {deserialize!r}")
    return _estore_from_cframe(cframe)
