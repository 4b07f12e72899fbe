"""Chunk and block arithmetic of n-dimensional arrays (FORMAT.md §5).

An array of ``shape`` is cut into a C-order grid of chunks of ``chunks`` items;
every chunk is cut into a C-order grid of blocks of ``blocks`` items, padded to
``extchunkshape`` (a multiple of the block shape).  This module holds that
arithmetic, the ``b2nd`` metalayer (§5.1), the default chunk and block shapes
(python-blosc2's §5.3 algorithm, with ndpack's cap on chunk bytes), and the mapping
of an index key to the chunks and blocks it touches.

Examples
--------
>>> from ndpack.storage.grid import ext_shape, encode_b2nd, decode_b2nd
>>> ext_shape((10, 7, 9), (4, 5, 6))
(12, 10, 12)
>>> raw = encode_b2nd((10, 7, 9), (4, 5, 6), (3, 2, 4), "int32")
>>> len(raw), raw[:3].hex()
(72, '970003')
>>> decode_b2nd(raw)
((10, 7, 9), (4, 5, 6), (3, 2, 4), dtype('int32'))
"""

from __future__ import annotations

import ast
import functools
import math
import operator
import os
import platform
import struct

import numpy as np

from ndpack.errors import FormatError, LimitError, ParameterError

__all__ = [
    "MAX_DIM",
    "cache_sizes",
    "check_layout",
    "check_block_bytes",
    "check_sizes",
    "chunk_cap",
    "compute_chunks_blocks",
    "decode_b2nd",
    "dim_parts",
    "dtype_from_str",
    "dtype_to_str",
    "encode_b2nd",
    "ext_shape",
    "normalize_key",
]

MAX_DIM = 16
KIB, MIB = 1024, 1024 * 1024
MAX_CHUNK_BYTES = 2 ** 31 - 33
MAX_BLOCK_BYTES = 536866816           # C-Blosc2's BLOSC2_MAXBLOCKSIZE: no larger block is read
MAX_INT64 = 2 ** 63 - 1
# the offsets index of a frame is one chunk of int64 entries
MAX_NCHUNKS = MAX_CHUNK_BYTES // 8
# ndpack's default cap on the bytes of a default chunk (benchmarks/bench_defaults.py)
DEFAULT_CHUNK_CAP = 16 * MIB


def prod(seq) -> int:
    """The product of `seq` (1 when empty)."""
    return math.prod(seq)


def ext_shape(shape, parts) -> tuple:
    """Each ``shape[d]`` rounded up to a multiple of ``parts[d]``.

    Examples
    --------
    >>> ext_shape((10, 0), (4, 0))
    (12, 0)
    """
    return tuple(-(-s // p) * p if p else s for s, p in zip(shape, parts))


# ---------------------------------------------------------------------------------------
# b2nd metalayer


def dtype_to_str(dtype) -> str:
    """The dtype string of the metalayer: ``dtype.str``, or ``str(dtype)`` for kind V.

    Examples
    --------
    >>> dtype_to_str("f8"), dtype_to_str([("a", "<i4"), ("b", "<f8")])
    ('<f8', "[('a', '<i4'), ('b', '<f8')]")
    """
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise TypeError(f"dtype {dtype} holds Python objects and cannot be stored")
    return str(dtype) if dtype.kind == "V" else dtype.str


def dtype_from_str(text: str) -> np.dtype:
    """Inverse of :func:`dtype_to_str` (structured dtypes are Python literals)."""
    try:
        if text[:1] in "[{(":
            return np.dtype(ast.literal_eval(text))
        return np.dtype(text)
    except (ValueError, TypeError, SyntaxError) as exc:
        raise FormatError(f"b2nd dtype string {text!r} is not a NumPy dtype ({exc})") from None


def _array_head(n: int) -> bytes:
    # python-blosc2 writes 0x90 + ndim even for ndim 16 (0xA0, not valid msgpack there)
    return bytes([0x90 + n])


def encode_b2nd(shape, chunks, blocks, dtype) -> bytes:
    """The ``b2nd`` metalayer bytes (fixed-width msgpack, FORMAT.md §5.1)."""
    nd = len(shape)
    if nd > MAX_DIM:
        raise ParameterError(f"at most {MAX_DIM} dimensions, got shape {tuple(shape)}")
    parts = [b"\x97\x00", bytes([nd]), _array_head(nd)]
    parts += [b"\xd3" + struct.pack(">q", int(s)) for s in shape]
    parts.append(_array_head(nd))
    parts += [b"\xd2" + struct.pack(">i", int(c)) for c in chunks]
    parts.append(_array_head(nd))
    parts += [b"\xd2" + struct.pack(">i", int(b)) for b in blocks]
    text = dtype_to_str(dtype).encode()
    parts += [b"\x00\xdb", struct.pack(">I", len(text)), text]
    return b"".join(parts)


_INT_FORMS = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q",
              0xd0: ">b", 0xd1: ">h", 0xd2: ">i", 0xd3: ">q"}


class _Cursor:
    """A tiny reader of the msgpack subset the b2nd metalayer uses."""

    def __init__(self, raw: bytes):
        self.raw, self.pos = raw, 0

    def byte(self) -> int:
        if self.pos >= len(self.raw):
            raise FormatError(f"b2nd metalayer truncated at byte {self.pos}")
        self.pos += 1
        return self.raw[self.pos - 1]

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.raw):
            raise FormatError(f"b2nd metalayer truncated at byte {self.pos}")
        self.pos += n
        return self.raw[self.pos - n:self.pos]

    def integer(self, what: str) -> int:
        b = self.byte()
        if b <= 0x7f:
            return b
        if b >= 0xe0:
            return b - 0x100
        if b in _INT_FORMS:
            fmt = _INT_FORMS[b]
            return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]
        raise FormatError(f"b2nd metalayer byte {self.pos - 1}: {what} is not an integer "
                          f"(0x{b:02x})")

    def array(self, nd: int, what: str) -> tuple:
        b = self.byte()
        if b == 0xdc:
            n = struct.unpack(">H", self.take(2))[0]
        elif 0x90 <= b <= 0xa0:           # 0xa0: python-blosc2's form for 16 dimensions
            n = b - 0x90
        else:
            raise FormatError(f"b2nd metalayer byte {self.pos - 1}: {what} is not an array")
        if n != nd:
            raise FormatError(f"b2nd metalayer: {what} has {n} items, ndim is {nd}")
        return tuple(self.integer(what) for _ in range(n))

    def string(self, what: str) -> str:
        b = self.byte()
        if 0xa0 <= b <= 0xbf:
            n = b - 0xa0
        elif b in (0xd9, 0xda, 0xdb):
            fmt = {0xd9: ">B", 0xda: ">H", 0xdb: ">I"}[b]
            n = struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]
        else:
            raise FormatError(f"b2nd metalayer byte {self.pos - 1}: {what} is not a string")
        return self.take(n).decode("utf-8", "replace")


def decode_b2nd(raw) -> tuple:
    """``(shape, chunks, blocks, dtype)`` from ``b2nd`` metalayer bytes.

    Raises
    ------
    FormatError
        If the content is not a valid version-0 b2nd metalayer.
    """
    cur = _Cursor(bytes(raw))
    head = cur.byte()
    if not 0x97 <= head <= 0x9f:
        raise FormatError(f"b2nd metalayer must start with an array of 7 items, "
                          f"got byte 0x{head:02x}")
    version = cur.integer("version")
    if version != 0:
        raise FormatError(f"b2nd metalayer version {version} is not supported (only 0)")
    nd = cur.integer("ndim")
    if not 0 <= nd <= MAX_DIM:
        raise FormatError(f"b2nd metalayer: ndim {nd} is outside 0..{MAX_DIM}")
    shape, chunks, blocks = (cur.array(nd, w) for w in ("shape", "chunks", "blocks"))
    fmt = cur.integer("dtype format")
    if fmt != 0:
        raise FormatError(f"b2nd dtype format {fmt} is not supported (only 0 = NumPy)")
    dtype = dtype_from_str(cur.string("dtype"))
    try:
        check_layout(shape, chunks, blocks)
    except ParameterError as exc:
        raise FormatError(f"b2nd metalayer: {exc}") from None
    return shape, chunks, blocks, dtype


def check_layout(shape, chunks, blocks) -> None:
    """Validate a shape/chunks/blocks triple; raise ParameterError naming the bad value."""
    nd = len(shape)
    if nd > MAX_DIM:
        raise ParameterError(f"at most {MAX_DIM} dimensions, got shape {shape}")
    for name, t in (("chunks", chunks), ("blocks", blocks)):
        if len(t) != nd:
            raise ParameterError(f"{name} {t} has {len(t)} dimensions, shape {shape} has {nd}")
    for d in range(nd):
        s, c, b = shape[d], chunks[d], blocks[d]
        if s < 0:
            raise ParameterError(f"shape {shape} has a negative size {s}")
        if c < 0 or b < 0 or (s > 0 and (c == 0 or b == 0)):
            raise ParameterError(f"chunks {chunks} / blocks {blocks}: sizes must be positive "
                                 f"(dimension {d})")
        if b > c:
            raise ParameterError(f"blocks {blocks} are larger than chunks {chunks} "
                                 f"in dimension {d} ({b} > {c})")
    if prod(shape) > MAX_INT64:
        raise ParameterError(f"shape {shape} has {prod(shape)} elements, more than a frame "
                             f"can index (2**63 - 1)")
    nchunks = prod(-(-s // c) if c else 0 for s, c in zip(shape, chunks))
    if nchunks > MAX_NCHUNKS:
        raise ParameterError(f"shape {shape} in chunks {chunks} makes {nchunks} chunks, more "
                             f"than a frame's index holds ({MAX_NCHUNKS})")


def check_block_bytes(blocks, itemsize: int) -> None:
    """A new array's blocks hold at most ``MAX_BLOCK_BYTES`` (python-blosc2's
    ``MAX_BLOCKSIZE``: C-Blosc2 reads no larger block); else ParameterError.

    Examples
    --------
    >>> check_block_bytes((2,), 2**29)
    Traceback (most recent call last):
    ...
    ndpack.errors.ParameterError: blocks (2,) of 536870912-byte items hold 1073741824 bytes, a block holds at most 536866816 (MAX_BLOCKSIZE)
    """
    nbytes = prod(blocks) * itemsize
    if nbytes > MAX_BLOCK_BYTES:
        raise ParameterError(f"blocks {tuple(blocks)} of {itemsize}-byte items hold {nbytes} "
                             f"bytes, a block holds at most {MAX_BLOCK_BYTES} (MAX_BLOCKSIZE)")


def check_sizes(shape, chunks, blocks, itemsize: int) -> None:
    """Bytes of a layout the format can hold: a chunk (padded to whole blocks) of at
    most ``MAX_CHUNK_BYTES`` (else :class:`~ndpack.errors.LimitError`, a ParameterError
    and a RuntimeError as python-blosc2's), a frame of at most 2**63 - 1 bytes (else
    ParameterError).

    Examples
    --------
    >>> check_sizes((10, 10), (5, 5), (5, 5), 8)
    >>> check_sizes((2**40,), (2**31,), (2**20,), 8)
    Traceback (most recent call last):
    ...
    ndpack.errors.LimitError: chunks (2147483648,) padded to blocks (1048576,) hold 17179869184 bytes of 8-byte items, a chunk holds at most 2147483615
    """
    check_layout(shape, chunks, blocks)
    nbytes = prod(ext_shape(chunks, blocks)) * itemsize
    if nbytes > MAX_CHUNK_BYTES:
        raise LimitError(f"chunks {chunks} padded to blocks {blocks} hold {nbytes} bytes "
                             f"of {itemsize}-byte items, a chunk holds at most "
                             f"{MAX_CHUNK_BYTES}")
    nchunks = prod(-(-s // c) if c else 0 for s, c in zip(shape, chunks))
    if nchunks * nbytes > MAX_INT64:
        raise ParameterError(f"shape {shape} in chunks {chunks} of {nbytes} bytes makes "
                             f"{nchunks * nbytes} bytes, more than a frame holds (2**63 - 1)")


# ---------------------------------------------------------------------------------------
# default chunks and blocks (§5.3)


def _parse_bytes(text: str) -> int:
    """``"32K"``, ``"2M"``, ``"1G"`` or plain digits as a byte count (ValueError if not)."""
    text = text.strip().upper().rstrip("B")
    mult = {"K": KIB, "M": MIB, "G": 1024 * MIB}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG") or "x") * mult)


def _read_cache(index: int, default: int) -> int:
    path = f"/sys/devices/system/cpu/cpu0/cache/index{index}/size"
    try:
        with open(path) as f:
            return _parse_bytes(f.read())
    except (OSError, ValueError):
        return default


@functools.lru_cache(maxsize=1)
def _machine_cache_sizes() -> tuple[int, int, int]:
    return _read_cache(0, 32 * KIB), _read_cache(2, 256 * KIB), _read_cache(3, MIB)


def cache_sizes() -> tuple[int, int, int]:
    """``(L1 data, L2, L3)`` cache sizes in bytes, from ``/sys`` (defaults 32K, 256K, 1M).

    ``NDPACK_CACHE_SIZES="L1,L2,L3"`` (bytes or ``K``/``M``/``G`` suffixes) overrides the
    machine's figures: default chunk and block shapes follow the cache sizes, so a file
    written with the override has the same layout on every machine.

    Examples
    --------
    >>> import os
    >>> os.environ["NDPACK_CACHE_SIZES"] = "32K,1M,32M"
    >>> cache_sizes()
    (32768, 1048576, 33554432)
    >>> del os.environ["NDPACK_CACHE_SIZES"]
    """
    text = os.environ.get("NDPACK_CACHE_SIZES", "").strip()
    if not text:
        return _machine_cache_sizes()
    try:
        sizes = tuple(_parse_bytes(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if len(sizes) != 3 or min(sizes) < 1:
        raise ParameterError(f"NDPACK_CACHE_SIZES={text!r}: give three sizes L1,L2,L3, "
                             "e.g. 32K,1M,32M")
    return sizes


def _min_blocksize(l1: int, l2: int) -> int:
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i386", "i686", "x86"):
        return 4 * l1 if l2 >= 2 * MIB else l2 // 4
    return l1


def _nearest_divisor(a: int, b: int, strict: bool = False) -> int:
    if strict or a > 100000:
        best, i = 1, 1
        while i * i <= a:
            if a % i == 0:
                for c in (i, a // i):
                    if best < c <= b:
                        best = c
            i += 1
        return best
    best, dist, i = None, None, 1
    while i * i <= a:
        if a % i == 0:
            for c in (i, a // i):
                if dist is None or abs(c - b) < dist:
                    best, dist = c, abs(c - b)
        i += 1
    return best if best is not None else 1


def _partition(nitems: int, maxshape, minpart=None) -> list:
    n = len(maxshape)
    minpart = minpart or [1] * n
    left, res = nitems, [1] * n
    for d in reversed(range(n)):
        if left <= 1:
            break
        size, mn = int(maxshape[d]), int(minpart[d])
        r = max(size, mn)
        if r <= left:
            if size % r:
                r = _nearest_divisor(size, r)
        else:
            r = max(left, mn)
            r2 = r if size % r == 0 else _nearest_divisor(size, r, strict=True)
            if r // 2 < r2 < 2 * r:
                r = r2
        res[d] = r
        left //= r
    return res


def chunk_cap() -> int:
    """The most bytes a default chunk gets: ``NDPACK_CHUNK_BYTES`` (bytes, or with a
    ``K``/``M``/``G`` suffix) when set, else 16 MiB.

    python-blosc2 sizes chunks from a quarter of the L3 cache; this VM reports an
    L3 of 480 MB (the host's), which gives ~100 MB chunks: a few of them in flight
    already cost hundreds of MB.  The cap was chosen by the sweep of
    ``benchmarks/bench_defaults.py`` (expressions, reductions, slices, full reads,
    cumulative sums and peak memory over caps of 4-128 MiB; docs/ndarray.md).

    Examples
    --------
    >>> chunk_cap() >= 1 << 20
    True
    """
    text = os.environ.get("NDPACK_CHUNK_BYTES", "").strip().upper()
    if not text:
        return DEFAULT_CHUNK_CAP
    try:
        value = _parse_bytes(text)
    except ValueError:
        raise ParameterError(f"NDPACK_CHUNK_BYTES={text!r}: give bytes, e.g. 16M") from None
    if not 64 * KIB <= value <= MAX_CHUNK_BYTES:
        raise ParameterError(f"NDPACK_CHUNK_BYTES={text!r}: must be between 64K and 2G")
    return value


def compute_chunks_blocks(shape, chunks=None, blocks=None, dtype=np.float64, *,
                          policy="ndpack", **kwargs):
    """Default chunk and block shapes for an array (FORMAT.md §5.3).

    Blocks are python-blosc2's (sized from the L1/L2 caches).  Chunks follow
    python-blosc2's algorithm (a quarter of the L3 cache, at least 4 MiB, shaped by
    partitioning the trailing dimensions first), capped at :func:`chunk_cap` bytes
    unless ``policy="blosc2"``, which gives exactly python-blosc2's shapes.

    Parameters
    ----------
    shape : tuple of int
    chunks, blocks : tuple of int, optional
        Given values are kept (and checked); missing ones are computed.
    dtype : dtype-like
    policy : {"ndpack", "blosc2"}
        ``"blosc2"``: no cap (python-blosc2's ``compute_chunks_blocks``).

    Returns
    -------
    (chunks, blocks) : tuple of tuples

    Examples
    --------
    >>> compute_chunks_blocks((100,), dtype="f4")
    ((100,), (100,))
    >>> compute_chunks_blocks((10, 10), chunks=(5, 10), blocks=(5, 5))
    ((5, 10), (5, 5))
    """
    if policy not in ("ndpack", "blosc2"):
        raise ParameterError(f"policy must be 'ndpack' or 'blosc2', not {policy!r}")
    shape = _as_shape(shape, "shape")
    nd = len(shape)
    itemsize = max(np.dtype(dtype).itemsize, 1)
    for name, t in (("chunks", chunks), ("blocks", blocks)):
        if t is not None and len(_as_shape(t, name)) != nd:
            raise ParameterError(f"{name} {tuple(t)} has {len(t)} dimensions, "
                                 f"shape {shape} has {nd}")
    if chunks is not None and blocks is not None:
        chunks, blocks = _as_shape(chunks, "chunks"), _as_shape(blocks, "blocks")
        check_layout(shape, chunks, blocks)
        return chunks, blocks
    if 0 in shape and chunks is None and blocks is None:
        return shape, shape
    l1, l2, l3 = cache_sizes()
    if chunks is not None:
        chunks = _as_shape(chunks, "chunks")
    if blocks is not None:
        nitems = prod(_as_shape(blocks, "blocks"))
    else:
        blocksize = max(32 * KIB, _min_blocksize(l1, l2), itemsize)
        nitems = blocksize // itemsize
    blocks = tuple(_partition(nitems, chunks if chunks is not None else shape))
    if chunks is not None:              # blocks never exceed the given chunks (a chunk
        blocks = tuple(min(b, c) for b, c in zip(blocks, chunks))   # of 0: a block of 0)
    if chunks is None:
        bsz = prod(blocks) * itemsize
        cs = _chunk_bytes(bsz, l2, l3)
        if policy == "ndpack":
            cs = min(cs, chunk_cap())
        cs = max(cs, bsz)
        cs -= cs % bsz
        part = _partition(cs // itemsize, shape, minpart=blocks)
        chunks = tuple(max(min(shape[d], -(-part[d] // blocks[d]) * blocks[d]), blocks[d])
                       for d in range(nd))      # given blocks beyond the shape: as big
    check_layout(shape, chunks, blocks)
    return tuple(chunks), tuple(blocks)


def _chunk_bytes(bsz: int, l2: int, l3: int) -> int:
    """python-blosc2's chunk bytes for blocks of `bsz` bytes (before rounding)."""
    cs = 32 * bsz if 32 * bsz < 64 * MIB else bsz
    if l3 > l2:
        cs = l3
    cs //= 4
    if l2 > cs:
        cs = max(l2 // 4, cs)
    return min(max(cs, 4 * MIB), MAX_CHUNK_BYTES)


def _as_shape(value, name: str) -> tuple:
    if isinstance(value, (int, np.integer)):
        value = (value,)
    try:
        out = tuple(operator.index(v) for v in value)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of ints, got {value!r}") from None
    if any(v < 0 for v in out):
        raise ParameterError(f"{name} {out} has a negative size")
    return out


# ---------------------------------------------------------------------------------------
# keys -> chunks -> blocks


def normalize_key(key, shape) -> tuple[list, list, tuple, list]:
    """Per-dimension selection (``int`` or ascending ``range``), flips, and output shape.

    Returns ``(sel, flip, out_shape, axes)``: ``sel[d]`` is an int (the dimension is
    dropped) or a ``range`` with positive step; ``flip[d]`` tells that the key had a
    negative step (the result must be reversed along that axis); ``out_shape`` is the
    NumPy result shape (``None`` adds axes, ints drop them); ``axes[j]`` is the array
    dimension behind output axis `j` (None for an added axis).

    Examples
    --------
    >>> normalize_key((1, None, slice(None, None, -2)), (3, 5))
    ([1, range(0, 6, 2)], [False, True], (1, 3), [None, 1])
    """
    if not isinstance(key, tuple):
        key = (key,)
    nd = len(shape)
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(k is not None and k is not Ellipsis for k in key)
    if n_real > nd:
        raise IndexError(f"too many indices for array: array is {nd}-dimensional, "
                         f"but {n_real} were indexed")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded += [slice(None)] * (nd - n_real)
        else:
            expanded.append(k)
    if not n_ell:
        expanded += [slice(None)] * (nd - n_real)
    sel, flip, out_shape, axes, d = [], [], [], [], 0
    for k in expanded:
        if k is None:
            out_shape.append(1)
            axes.append(None)
            continue
        size = shape[d]
        if isinstance(k, slice):
            r = range(size)[k]
            rev = r.step < 0
            if rev:
                r = r[::-1] if len(r) else range(0, 0, 1)
            sel.append(r)
            flip.append(rev)
            out_shape.append(len(r))
            axes.append(d)
        elif isinstance(k, (bool, np.bool_)):
            raise TypeError(f"boolean index {k!r} is not supported")
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise TypeError(f"only integers, slices, Ellipsis and None are valid "
                                f"indices, not {k!r:.60}") from None
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {d} with size {size}")
            sel.append(i + size if i < 0 else i)
            flip.append(False)
        d += 1
    return sel, flip, tuple(out_shape), axes


def as_range(s) -> range:
    """An int selection as a one-element range."""
    return range(s, s + 1) if isinstance(s, int) else s


def dim_parts(r: range, size: int):
    """Split an ascending range by cells of `size`: yield ``(cell, k0, k1, local)``.

    ``r[k0:k1]`` are the selected indices inside cell `cell`; ``local`` is that
    sub-range shifted to the cell's origin.

    Examples
    --------
    >>> list(dim_parts(range(1, 10, 3), 4))
    [(0, 0, 1, range(1, 4, 3)), (1, 1, 3, range(0, 6, 3))]
    """
    n, k = len(r), 0
    start, step = r.start, r.step
    while k < n:
        cell = r[k] // size
        k1 = min(n, -(-((cell + 1) * size - start) // step))
        sub = r[k:k1]
        yield cell, k, k1, range(sub.start - cell * size, sub.stop - cell * size, step)
        k = k1


def compact_index(local: range, bsize: int, bids: list):
    """Positions of `local` in the concatenation of blocks `bids` (each `bsize` long).

    Returns a slice when the positions are evenly spaced, else an index array.
    """
    if len(bids) == 0:
        return slice(0, 0)
    first = bids[0]
    if bids[-1] - first == len(bids) - 1:              # contiguous blocks
        s = local.start - first * bsize
        return slice(s, s + (len(local) - 1) * local.step + 1, local.step)
    rank = {b: i for i, b in enumerate(bids)}
    pos = [rank[x // bsize] * bsize + x % bsize for x in local]
    if len(pos) > 1 and len(set(np.diff(pos).tolist())) == 1:
        return slice(pos[0], pos[-1] + 1, pos[1] - pos[0])
    return np.asarray(pos, dtype=np.intp)

