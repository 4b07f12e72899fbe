"""Compress and decompress single Blosc2 chunks.

The functions have python-blosc2's names and semantics.  A chunk holds at most
2**31 - 33 bytes; larger data goes into a super-chunk.

Examples
--------
>>> import numpy as np, ndpack
>>> a = np.linspace(0, 1, 10_000)
>>> c = ndpack.compress2(a, typesize=8, codec=ndpack.Codec.LZ4)
>>> nbytes, cbytes, blocksize = ndpack.get_cbuffer_sizes(c)
>>> nbytes, cbytes < nbytes
(80000, True)
>>> bool((np.frombuffer(ndpack.decompress2(c)) == a).all())
True
"""

from __future__ import annotations

import threading

import numpy as np

from . import _core
from ndpack.codecs import (BUILTIN_CODECS, MAX_TYPESIZE, Codec, CParams, Filter, SpecialValue, SplitMode,
                           check_int_range, codec_name, make_cparams, make_dparams)
from ndpack.errors import ParameterError

__all__ = [
    "compress",
    "decompress",
    "compress2",
    "decompress2",
    "get_cbuffer_sizes",
    "get_clib",
    "chunk_info",
    "getitem",
    "decompress_blocks",
    "patch_blocks",
    "sum_chunk",
    "getitems",
    "read_blocks_from_file",
    "special_chunk",
    "compress_or_header",
    "is_raw_header",
    "crc32c",
    "block_sums",
    "block_sums_check",
    "set_compressor",
    "get_compressor",
    "set_blocksize",
    "get_blocksize",
    "nd_layout",
    "nd_scope",
]

# python-blosc2's Blosc1-style globals (``set_compressor``/``set_blocksize``): one
# module-level default each, written under a lock (reads of one name are atomic).
# What they affect is python-blosc2 4.14.1's, measured: the block size reaches the
# Blosc1-style calls only (``compress``, ``pack``, ``pack_array``), never ``compress2``,
# ``pack_array2``, arrays or super-chunks; the compressor reaches none of them
# (each passes its ``codec=`` default explicitly), it is only recorded.
_GLOBALS_LOCK = threading.Lock()
_COMPRESSOR = Codec.BLOSCLZ
_BLOCKSIZE = 0
_ERROR_CODEC_SUPPORT = -7          # C-Blosc2's BLOSC2_ERROR_CODEC_SUPPORT

# The n-d layout each thread states for C-Blosc2's n-d codecs and filters (ZFP, NDLZ,
# NDCELL, NDMEAN), which C-Blosc2 reads from the "b2nd" metalayer (see nd_layout): one
# C scope object per layout, kept (a scope costs two C calls, no conversion).
_SCOPES: dict = {}


def nd_layout(chunkshape, blockshape=None):
    """``with nd_layout(chunkshape, blockshape):`` -- the chunks this thread
    compresses and decompresses inside are those of an n-d array of that (extended)
    chunk shape and block shape, which ZFP, NDLZ, NDCELL and NDMEAN need; nested
    scopes restore the outer one.  ``nd_layout(None)``: no layout.

    >>> import numpy as np, ndpack
    >>> x = np.linspace(0, 1, 64).reshape(8, 8)
    >>> with nd_layout((8, 8), (4, 8)):
    ...     c = ndpack.compress2(x, codec=ndpack.Codec.ZFP_RATE, codec_meta=50, filters=[],
    ...                          blocksize=4 * 8 * 8)
    ...     y = np.frombuffer(ndpack.decompress2(c)).reshape(8, 8)
    >>> bool(abs(y - x).max() < 1e-3)
    True
    """
    if chunkshape is None:
        return nd_scope(None)
    return nd_scope((tuple(int(c) for c in chunkshape), tuple(int(b) for b in blockshape)))


def nd_scope(layout):
    """The scope (:class:`ndpack._core.NdScope`) of a ``(chunkshape, blockshape)`` pair of
    tuples (a Layout's ``nd``) or None, made once per layout."""
    scope = _SCOPES.get(layout)
    if scope is None:
        if len(_SCOPES) > 4096:
            _SCOPES.clear()
        scope = _SCOPES[layout] = _core.NdScope(layout)
    return scope


def in_layout(method):
    """Decorate a method of an object with a ``layout`` (a storage Layout): it runs
    inside ``nd_scope(self.layout.nd)``."""
    def run(self, *args, **kwargs):
        with nd_scope(self.layout.nd):
            return method(self, *args, **kwargs)
    run.__name__, run.__qualname__, run.__doc__ = method.__name__, method.__qualname__, method.__doc__
    run.__wrapped__ = method
    return run


def _as_buffer(src, name="src"):
    """A contiguous buffer view of `src`; str is refused as python-blosc2 does."""
    if isinstance(src, str):
        raise TypeError(f"{name} must be a bytes-like object or array, not str (encode it first)")
    if isinstance(src, np.ndarray) and not (src.flags.c_contiguous or src.flags.f_contiguous):
        src = np.ascontiguousarray(src)
    try:
        return memoryview(src)
    except TypeError:
        raise TypeError(f"{name} must support the buffer protocol, "
                        f"not {type(src).__name__}") from None


def _compress_with(src, cp: CParams, header_if_raw: bool = False) -> bytes:
    # CParams checks these when built; its fields stay assignable, so check again
    if not (1 <= cp.nthreads and 1 <= cp.typesize <= MAX_TYPESIZE and 0 <= cp.clevel <= 9):
        make_cparams(cp)                      # raises ParameterError naming the field
    filters, meta = cp.pipeline()
    return _core.compress(src, int(cp.codec), int(cp.codec_meta), int(cp.clevel),
                          bool(cp.use_dict), int(cp.typesize), int(cp.nthreads),
                          int(cp.blocksize), int(cp.splitmode), filters, meta, header_if_raw)


def chunk_parts(nbytes: int, cparams):
    """An encoder of one chunk of `nbytes` in parts, or None when such a chunk cannot
    be encoded in parts (clevel 0, under 32 bytes, ``use_dict``, DELTA): compress it
    whole then.  ``parts.add(buf, first, count)`` filters and encodes blocks
    ``[first, first + count)`` of the chunk whose bytes are `buf` (callable from
    several threads at once, GIL released: e.g. each worker right after it produced
    the blocks, while they are in its cache); ``parts.finish(buf)`` returns the chunk.
    Blocks added in increasing order give the bytes of :func:`compress2` with one
    thread.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> x = np.linspace(0, 1, 100_000)
    >>> cp = ndpack.CParams(codec=ndpack.Codec.LZ4, blocksize=80_000, nthreads=1)
    >>> parts = chunk_parts(x.nbytes, cp)
    >>> parts.nblocks
    10
    >>> for first in range(0, 10, 4):
    ...     parts.add(x, first, min(4, 10 - first))
    >>> parts.finish(x) == compress2(x, cparams=cp)
    True
    """
    cp = make_cparams(cparams)
    filters, meta = cp.pipeline()
    return _core.chunk_parts(int(nbytes), int(cp.codec), int(cp.codec_meta), int(cp.clevel),
                             bool(cp.use_dict), int(cp.typesize), int(cp.nthreads),
                             int(cp.blocksize), int(cp.splitmode), filters, meta)


def compress_or_header(src, cparams) -> bytes:
    """Like :func:`compress2`, but a chunk that would be stored uncompressed (clevel 0,
    incompressible data) comes back as its 32-byte header only: the caller stores
    the source bytes right after it, saving a copy.  Tell the two apart with
    :func:`is_raw_header`.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> noise = np.random.default_rng(0).integers(0, 256, 1 << 20, dtype=np.uint8)
    >>> head = compress_or_header(noise, ndpack.CParams(typesize=1))
    >>> is_raw_header(head, len(noise)), len(head)
    (True, 32)
    >>> ndpack.decompress2(head + noise.tobytes()) == noise.tobytes()
    True
    """
    return _compress_with(_as_buffer(src), make_cparams(cparams), header_if_raw=True)


def is_raw_header(chunk, srcsize: int) -> bool:
    """Whether `chunk` (from :func:`compress_or_header` of `srcsize` bytes) is the
    header of an uncompressed chunk whose data the caller must append."""
    return srcsize > 0 and len(chunk) == 32 and bool(chunk[2] & 0x02)


def compress(src, typesize: int = 8, clevel: int = 1, filter: Filter = Filter.SHUFFLE,
             codec: Codec = Codec.ZSTD, _ignore_multiple_size: bool = False) -> bytes:
    """Compress a buffer into one chunk (python-blosc2's Blosc1-style call).

    Parameters
    ----------
    src : bytes-like
        The data; its length must be a multiple of `typesize`.
    typesize : int
    clevel : int
        0..9.
    filter : Filter
        Placed in slot 5, as Blosc1 did.
    codec : Codec

    Returns
    -------
    bytes

    Examples
    --------
    >>> import ndpack
    >>> c = ndpack.compress(b"0123456789abcdef" * 100, typesize=1)
    >>> ndpack.decompress(c)[:10]
    b'0123456789'
    """
    buf = _as_buffer(src)
    if not _ignore_multiple_size and buf.nbytes % int(typesize) != 0:
        raise ParameterError(f"len(src) = {buf.nbytes} is not a multiple of typesize ({typesize})")
    cp = CParams(codec=codec, clevel=clevel, typesize=typesize, blocksize=_BLOCKSIZE,
                 splitmode=SplitMode.FORWARD_COMPAT_SPLIT, filters=[0, 0, 0, 0, 0, filter])
    return _compress_with(buf, cp)


def set_compressor(codec: Codec) -> int:
    """Set the global compressor, as python-blosc2's Blosc1-style ``set_compressor``.

    Parameters
    ----------
    codec : Codec
        A :class:`Codec` member (python-blosc2's ``blosc2.Codec`` members are taken by
        name).  Strings and plain integers are refused, as python-blosc2 refuses them.

    Returns
    -------
    int
        The codec's code (>= 0), or -7 (C-Blosc2's ``BLOSC2_ERROR_CODEC_SUPPORT``) for a
        codec that cannot compress here (``NDLZ``, ``ZFP_*``, the JPEG 2000 ones...);
        then the setting is unchanged, as in python-blosc2.

    Raises
    ------
    AttributeError
        `codec` is not a codec member (python-blosc2 raises AttributeError too).

    Notes
    -----
    As in python-blosc2 4.14.1 the setting is recorded for :func:`get_compressor` and
    changes no call: :func:`compress`, :func:`ndpack.pack` and the others pass their own
    ``codec=`` default.

    Examples
    --------
    >>> import ndpack
    >>> ndpack.set_compressor(ndpack.Codec.LZ4)
    1
    >>> ndpack.get_compressor()
    'lz4'
    >>> ndpack.set_compressor(ndpack.Codec.NDLZ), ndpack.get_compressor()
    (-7, 'lz4')
    >>> ndpack.set_compressor(ndpack.Codec.BLOSCLZ)
    0
    """
    global _COMPRESSOR
    name = getattr(codec, "name", None)
    if isinstance(codec, str) or not isinstance(name, str):
        raise AttributeError(f"set_compressor(codec): codec must be a Codec member, not "
                             f"{type(codec).__name__} {codec!r}")
    member = Codec.__members__.get(name.upper())
    if member is None or member not in BUILTIN_CODECS:
        return _ERROR_CODEC_SUPPORT
    with _GLOBALS_LOCK:
        _COMPRESSOR = member
    return int(member)


def get_compressor() -> str:
    """The name of the global compressor (``"blosclz"`` unless :func:`set_compressor`
    changed it), as python-blosc2 gives it.

    Examples
    --------
    >>> import ndpack
    >>> ndpack.get_compressor()
    'blosclz'
    """
    return _COMPRESSOR.name.lower()


def set_blocksize(blocksize: int = 0) -> None:
    """Force the block size (bytes) of the Blosc1-style calls; 0 (the default) chooses
    it automatically.

    As in python-blosc2 4.14.1 it applies to :func:`compress`, :func:`ndpack.pack` and
    ``pack_array``, not to :func:`compress2`, ``pack_array2``, arrays or super-chunks
    (they take ``blocksize=``/``blocks=`` per call).  The codec rounds it to a multiple
    of the typesize.

    Raises
    ------
    TypeError
        Not an integer.
    OverflowError
        Negative (python-blosc2's error).
    ValueError
        Larger than ``MAX_BLOCKSIZE`` (python-blosc2 takes it and fails later).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> ndpack.set_blocksize(4096)
    >>> ndpack.get_blocksize()
    4096
    >>> ndpack.get_cbuffer_sizes(ndpack.compress(np.arange(10_000.0)))[2]
    4096
    >>> ndpack.set_blocksize(0)
    """
    global _BLOCKSIZE
    if isinstance(blocksize, bool) or not isinstance(blocksize, (int, np.integer)):
        raise TypeError(f"set_blocksize(blocksize): an integer is required, not "
                        f"{type(blocksize).__name__}")
    if blocksize < 0:
        raise OverflowError(f"set_blocksize(blocksize): {blocksize} is negative")
    if blocksize > 536866816:
        raise ValueError(f"set_blocksize(blocksize): {blocksize} is above MAX_BLOCKSIZE "
                         "(536866816)")
    with _GLOBALS_LOCK:
        _BLOCKSIZE = int(blocksize)


def get_blocksize() -> int:
    """The block size set by :func:`set_blocksize` (0: automatic), as python-blosc2's
    ``get_blocksize``.

    Examples
    --------
    >>> import ndpack
    >>> ndpack.get_blocksize()
    0
    """
    return _BLOCKSIZE


def compress2(src, **kwargs) -> bytes:
    """Compress a buffer into one chunk.

    Parameters
    ----------
    src : bytes-like
    **kwargs
        ``cparams=`` a :class:`CParams` or dict, and/or any CParams field
        (``codec=``, ``clevel=``, ``typesize=``, ``filters=``, ...).  The typesize
        is 8 unless given, whatever the dtype of `src` (as in python-blosc2).

    Returns
    -------
    bytes
    """
    cparams = kwargs.pop("cparams", None)
    # a CParams alone is used as it is (nothing keeps it; normalizing costs ~75 us)
    cp = cparams if isinstance(cparams, CParams) and not kwargs else \
        make_cparams(cparams, **kwargs)
    return _compress_with(_as_buffer(src), cp)


def _decode(src, dst, nthreads, as_bytearray):
    check_int_range("nthreads", nthreads, 1)
    if dst is not None:
        _core.decompress(_as_buffer(src), dst, nthreads)
        return None
    out = _core.decompress(_as_buffer(src), None, nthreads)
    return bytearray(out) if as_bytearray else out


def decompress(src, dst=None, as_bytearray: bool = False):
    """Decode a chunk.

    Parameters
    ----------
    src : bytes-like
        A chunk made by ndpack, python-blosc2 or C-Blosc (any header version).
    dst : writable buffer, optional
        Receives the data; then None is returned.
    as_bytearray : bool
        Return a bytearray instead of bytes.

    Raises
    ------
    FormatError
        If `src` is not a valid chunk.
    """
    return _decode(src, dst, _core.get_nthreads(), as_bytearray)


def decompress2(src, dst=None, **kwargs):
    """Decode a chunk with decompression parameters.

    Parameters
    ----------
    src : bytes-like
    dst : writable buffer, optional
        Receives the data; then None is returned.
    **kwargs
        ``dparams=`` a :class:`DParams` or dict, and/or ``nthreads=``;
        ``as_bytearray=`` as in :func:`decompress`.
    """
    as_bytearray = kwargs.pop("as_bytearray", False)
    dp = make_dparams(kwargs.pop("dparams", None), **kwargs)
    return _decode(src, dst, int(dp.nthreads), as_bytearray)


def decompress_crc(src, dst, nthreads: int = 1) -> int:
    """Decode a chunk into the writable buffer `dst` and return the crc32c of the bytes
    of `src`, hashed block by block by the threads that decode them (one pass over the
    compressed bytes).

    Examples
    --------
    >>> import ndpack
    >>> c = ndpack.compress2(bytes(range(256)) * 64, typesize=4)
    >>> out = bytearray(256 * 64)
    >>> decompress_crc(c, out) == ndpack.chunks.crc32c(c), list(out[:3])
    (True, [0, 1, 2])
    """
    check_int_range("nthreads", nthreads, 1)
    return _core.decompress(_as_buffer(src), dst, nthreads, True)


def chunk_info(src) -> dict:
    """The validated header fields of a chunk (nbytes, cbytes, filters, codec, ...).

    Examples
    --------
    >>> import ndpack
    >>> info = ndpack.chunk_info(ndpack.compress2(bytes(1000), typesize=1))
    >>> info["nbytes"], info["special"]
    (1000, 1)
    """
    return _core.chunk_info(_as_buffer(src))


def get_cbuffer_sizes(src) -> tuple[int, int, int]:
    """``(nbytes, cbytes, blocksize)`` of a chunk, from its header."""
    info = _core.chunk_info(_as_buffer(src))
    return info["nbytes"], info["cbytes"], info["blocksize"]


def get_clib(src) -> str:
    """Name of the codec library a chunk was compressed with, e.g. ``'Zstd'``."""
    info = _core.chunk_info(_as_buffer(src))
    names = {0: "BloscLZ", 1: "LZ4", 2: "LZ4", 4: "Zlib", 5: "Zstd"}
    return names.get(info["compcode"]) or codec_name(info["compcode"])


def getitem(src, start: int, nitems: int) -> bytes:
    """Decode items ``[start, start + nitems)``; only the blocks holding them are decoded."""
    return _core.getitem(_as_buffer(src), int(start), int(nitems))


def decompress_blocks(src, blocks, nthreads: int | None = None, dst=None, needs=None):
    """Decode the listed blocks of a chunk; block ``blocks[i]`` lands at ``i * blocksize``
    of new bytes, or of the writable buffer `dst` (then the byte count is returned).

    `needs` (optional) gives the number of leading bytes wanted of each block: LZ4 and
    zlib streams stop decoding there when the block is a single stream or split
    plain-shuffle streams, so a read of a block's first rows decodes little more than
    those rows.  The rest of each block's slot is left undefined.

    >>> import numpy as np
    >>> x = np.arange(20000, dtype=np.float64)
    >>> c = compress2(x, typesize=8, blocksize=80000, codec=Codec.LZ4,
    ...               filters=[Filter.SHUFFLE])
    >>> out = bytearray(2 * 80000)
    >>> decompress_blocks(c, [1, 0], dst=out, needs=[24, 80000])
    160000
    >>> np.frombuffer(out, np.float64)[:3].tolist(), float(np.frombuffer(out, np.float64)[-1])
    ([10000.0, 10001.0, 10002.0], 9999.0)
    """
    n = _core.get_nthreads() if nthreads is None else check_int_range("nthreads", nthreads, 1)
    return _core.decompress_blocks(_as_buffer(src), list(blocks), n, dst,
                                   None if needs is None else list(needs))


def patch_blocks(src, blocks, raw, clevel: int) -> bytes | None:
    """A chunk with some blocks replaced, the others copied without decoding them.

    Parameters
    ----------
    src : bytes-like
        The chunk.
    blocks : sequence of int
        The blocks to replace, increasing.
    raw : bytes-like
        Their new bytes: block ``blocks[i]`` at ``i * blocksize``.
    clevel : int
        The compression level of the new blocks (1..9); everything else (codec,
        filters, split mode, typesize) is the chunk's own.

    Returns
    -------
    bytes or None
        The new chunk (a zero special chunk when every block ends as zeros), or None
        when the chunk cannot be patched (special, uncompressed, VL blocks, dictionary,
        DELTA): re-encode it whole.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(40000, dtype=np.float64)
    >>> ch = compress2(x, typesize=8, blocksize=8000 * 8)
    >>> y = x.copy(); y[8000:16000] = -1
    >>> new = patch_blocks(ch, [1], y[8000:16000], clevel=5)
    >>> bool((np.frombuffer(decompress2(new), np.float64) == y).all())
    True
    """
    return _core.patch_blocks(_as_buffer(src), list(blocks), _as_buffer(raw, "raw"),
                              int(clevel))


def getitems(src, starts, counts, dst) -> int:
    """Decode runs of items ``[starts[i], starts[i] + counts[i])`` of a chunk, each
    inside one block, one after another into the writable buffer `dst` (returns the
    bytes written).  Blocks that are split and only shuffled are not decoded whole:
    the runs' bytes come straight from raw streams, compressed streams are decoded
    alone, and only the runs' items are unshuffled.

    Examples
    --------
    >>> import numpy as np
    >>> chunk = compress2(np.arange(100.0).tobytes(), typesize=8, blocksize=160)
    >>> out = np.empty(4)
    >>> getitems(chunk, [3, 40], [2, 2], out)
    32
    >>> out.tolist()
    [3.0, 4.0, 40.0, 41.0]
    """
    starts = np.ascontiguousarray(starts, np.int64)
    counts = np.ascontiguousarray(counts, np.int32)
    return _core.getitems(_as_buffer(src), starts, counts, dst)


def read_blocks_from_file(fd: int, pos: int, nblocks: int, numbers, buf,
                          min_cbytes: int = 0, entry=None) -> tuple[int, int]:
    """Read the blocks `numbers` of the chunk stored at byte `pos` of the open file
    `fd` (a chunk of `nblocks` blocks) with positioned reads, packed into the writable
    buffer `buf` as a smaller valid chunk (its other blocks must not be decoded).

    Returns ``(size, needed)``: the reduced chunk is ``buf[:size]``; size is 0 when
    the read does not apply (a special, memcpyed or VL-block chunk, another block
    count, cbytes below `min_cbytes`, an unexpected block start, a short read: read
    the chunk whole, whose decoding reports any corruption), and `needed` > 0 when
    `buf` is too small (a lower bound when the block starts did not fit: call again
    with a buffer of that size).  `entry`: the chunk's block checksums
    (:func:`block_sums`); the header, block starts and wanted blocks read are checked
    against them, a mismatch raising :class:`~ndpack.errors.FormatError` naming the
    block.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> chunk = compress2(np.arange(1000.0).tobytes(), typesize=8, blocksize=800)
    >>> fd, path = tempfile.mkstemp()
    >>> _ = os.write(fd, b"xx" + chunk)
    >>> buf = np.empty(len(chunk), np.uint8)
    >>> size, needed = read_blocks_from_file(fd, 2, 10, [7], buf)
    >>> size < len(chunk), needed
    (True, 0)
    >>> np.frombuffer(decompress_blocks(buf[:size], [7]), np.float64)[:3].tolist()
    [700.0, 701.0, 702.0]
    >>> os.close(fd); os.remove(path)
    """
    numbers = np.ascontiguousarray(numbers, np.int32)
    return _core.fd_read_blocks(int(fd), int(pos), int(nblocks), int(min_cbytes),
                                numbers, buf, entry)


def sum_chunk(src, dtype, chunkshape, blockshape, valid, reduced, out, offset, ostride):
    """Add the elements of b2nd chunk `src` into `out`, decoding block by block in the
    calling thread (the fused decode + sum of reductions).

    Parameters
    ----------
    src : bytes-like
        A chunk of an array with `chunkshape` and `blockshape`.
    dtype : numpy.dtype
        The elements' dtype: native bool, integers or float32/64.
    chunkshape, blockshape, valid : sequence of int
        The array's chunk and block shapes, and how much of this chunk lies inside
        the array along each dimension.
    reduced : collection of int
        The dimensions summed over.
    out : numpy.ndarray
        Flat, C-contiguous float64 (any dtype) or int64/uint64 (integer sums) output.
    offset : int
        The element of `out` the chunk's first kept index adds into.
    ostride : sequence of int
        Output strides in elements, one per dimension (ignored where reduced).

    Examples
    --------
    >>> import numpy as np
    >>> out = np.zeros(2)
    >>> chunk = compress2(np.arange(6.0).tobytes(), typesize=8, blocksize=24)
    >>> sum_chunk(chunk, np.dtype("f8"), (2, 3), (1, 3), (2, 3), (1,), out, 0, (1, 0))
    >>> out.tolist()
    [3.0, 12.0]
    """
    dtype = np.dtype(dtype)
    if not dtype.isnative or dtype.kind not in "biuf" or \
            (dtype.kind == "f" and dtype.itemsize not in (4, 8)):
        raise ParameterError(f"cannot sum chunks of {dtype}")
    code = "b1" if dtype.kind == "b" else f"{dtype.kind}{dtype.itemsize}"
    _core.sum_chunk(_as_buffer(src), code, tuple(chunkshape), tuple(blockshape),
                    tuple(valid), tuple(reduced), out, int(offset), tuple(ostride))


def special_chunk(special: SpecialValue, nbytes: int, typesize: int, blocksize: int = 0,
                  value=None) -> bytes:
    """Build a special chunk whose content the header describes (no data stored).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> c = ndpack.chunks.special_chunk(ndpack.SpecialValue.VALUE, 80, 8,
    ...                                 value=np.float64(2.5).tobytes())
    >>> len(c), np.frombuffer(ndpack.decompress(c))[:3].tolist()
    (40, [2.5, 2.5, 2.5])
    """
    special = SpecialValue(special)
    if special == SpecialValue.NOT_SPECIAL:
        raise ParameterError("special_chunk needs ZERO, NAN, VALUE or UNINIT")
    if special == SpecialValue.VALUE and value is None:
        raise ParameterError("a VALUE special chunk needs value= (typesize bytes)")
    v = None if value is None else _as_buffer(value, "value")
    return _core.special_chunk(int(special), int(nbytes), int(typesize), int(blocksize), v)


def crc32c(data, value: int = 0, reference: bool = False) -> int:
    """The crc32c (Castagnoli) checksum of the bytes of `data`, in the C core.

    Parameters
    ----------
    data : bytes-like
        Any contiguous buffer.
    value : int
        A previous result to continue from (hash a buffer in pieces); 0 to start.
    reference : bool
        Use the portable scalar kernel instead of the SSE4.2 one (tests).

    Returns
    -------
    int
        The 32-bit checksum.

    Examples
    --------
    >>> from ndpack.chunks import crc32c
    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    >>> crc32c(b"6789", crc32c(b"12345")) == crc32c(b"123456789")
    True
    """
    return _core.crc32c(_as_buffer(data, "data"), int(value), bool(reference))


def block_sums(chunk) -> tuple:
    """The crc32c of a stored chunk and its block checksums, in one pass (C core).

    The block checksums (``entry``) are the crc32c of the chunk's prefix (header, block
    starts and dictionary: everything a decoder trusts before it reaches a block) and
    of each block's bytes as they lie in the chunk, as little-endian uint32 values:
    what a reader that decodes a few blocks checks without reading the others
    (:mod:`ndpack.storage.checksums`).

    Parameters
    ----------
    chunk : bytes-like
        A whole stored chunk.

    Returns
    -------
    tuple
        ``(crc, entry)``: ``crc == crc32c(chunk)``; `entry` (bytes of ``4 * (nblocks +
        1)``) or None for chunks without blocks to check apart (special values,
        variable-length blocks, empty).

    Examples
    --------
    >>> import numpy as np
    >>> chunk = compress2(np.arange(1000.0).tobytes(), typesize=8, blocksize=800)
    >>> crc, entry = block_sums(chunk)
    >>> crc == crc32c(chunk), len(entry) // 4        # the prefix, then 10 blocks
    (True, 11)
    """
    return _core.block_sums(_as_buffer(chunk, "chunk"))


def block_sums_check(chunk, blocks, entry, prefix: bool = True) -> None:
    """Check blocks `blocks` of a stored chunk (block 0 too when DELTA decodes it) and,
    when `prefix`, its header and block starts against the block checksums `entry`
    (:func:`block_sums`); :class:`~ndpack.errors.FormatError` naming the first part
    that differs.

    Examples
    --------
    >>> import numpy as np
    >>> chunk = bytearray(compress2(np.arange(1000.0).tobytes(), typesize=8, blocksize=800,
    ...                             nthreads=1))        # blocks stored in order
    >>> _, entry = block_sums(chunk)
    >>> chunk[-20] ^= 1                                 # a bit of the last block
    >>> block_sums_check(chunk, [0, 1], entry)          # blocks 0 and 1 are intact
    >>> block_sums_check(chunk, [9], entry)   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ndpack.errors.FormatError: block 9: checksum mismatch ...
    """
    _core.block_sums_check(_as_buffer(chunk, "chunk"), np.ascontiguousarray(blocks, np.int32),
                           _as_buffer(entry, "entry"), bool(prefix))
