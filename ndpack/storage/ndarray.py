"""N-dimensional compressed arrays (python-blosc2's ``NDArray``, FORMAT.md §5).

An :class:`NDArray` is a super-chunk with a ``b2nd`` metalayer: the array is cut
into a C-order grid of chunks, each chunk into a C-order grid of blocks (see
:mod:`ndpack.storage.grid`).  Reading a key decodes only the chunks it touches
and, inside a chunk, only the blocks it touches (from a contiguous file only
those blocks' bytes are read); special chunks (zeros, NaN, a repeated value) are
answered from their header.  With ``dparams.nthreads > 1`` the chunks of a read
are decoded in parallel, and a whole chunk that lands contiguously in the result
is decoded straight into it.  Writing re-encodes only the
touched chunks; a chunk that becomes all zeros is stored as a special chunk.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> a = asarray(np.arange(30).reshape(5, 6), chunks=(2, 4), blocks=(1, 2))
>>> a.shape, a.chunks, a.blocks, a.ext_shape
((5, 6), (2, 4), (1, 2), (6, 8))
>>> a[1:4, ::-2].tolist()
[[11, 9, 7], [17, 15, 13], [23, 21, 19]]
>>> a[:, 0] = -1
>>> a[:, :2].tolist()
[[-1, 1], [-1, 7], [-1, 13], [-1, 19], [-1, 25]]
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os

import numpy as np

from ndpack.chunks import compress2, decompress2, decompress_blocks, special_chunk
from ndpack.codecs import CParams, SpecialValue, make_cparams, make_dparams
from ndpack.errors import FormatError, ParameterError
from ndpack.storage.fancy import OIndex, VIndex, fancy_get, fancy_set, is_fancy
from ndpack.storage.frame import MemoryFrame, chunk_nbytes_of, special_code
from ndpack.storage.grid import (
    as_range,
    check_sizes,
    compute_chunks_blocks,
    decode_b2nd,
    dim_parts,
    encode_b2nd,
    ext_shape,
    normalize_key,
    prod,
)
from ndpack.storage.meta import check_name, packb
from ndpack.storage.ndstored import NDStored
from ndpack.storage.ndread import NDReader, _from_blocked, _scratch, _to_blocked
from ndpack.storage.params import storage_keywords
from ndpack.storage.validate import check_array_frame
from ndpack.storage.schunk import SChunk, _info_from, new_file_frame

__all__ = ["NDArray", "NDChunkInfo", "create", "fill_from", "holding"]

NDChunkInfo = collections.namedtuple(
    "NDChunkInfo", ["nchunk", "coords", "cratio", "special", "repeated_value", "lazychunk"])


# ---------------------------------------------------------------------------------------
# creation


def _layout_cparams(cparams, dtype: np.dtype, blocks) -> CParams:
    """python-blosc2's rule: typesize = itemsize, blocksize = one block."""
    base = make_cparams(cparams) if cparams is not None else make_cparams()
    # C-Blosc2 stores items wider than 255 bytes with typesize 1 (a chunk header keeps it
    # in one byte); python-blosc2 writes the itemsize in the frame header, we write 1
    typesize = dtype.itemsize if 1 <= dtype.itemsize <= 255 else 1
    return make_cparams(base, typesize=typesize,
                        blocksize=prod(blocks) * dtype.itemsize)


def create(shape, dtype=np.float64, chunks=None, blocks=None, cparams=None, dparams=None,
           urlpath=None, contiguous=None, mode="a", meta=None, device=None, storage=None,
           **kwargs) -> NDArray:
    """An NDArray with no chunks yet (callers append them with :func:`fill_from`);
    `device` is the array API's (``None`` or ``"cpu"``), `storage` python-blosc2's
    record (:class:`ndpack.storage.params.Storage`) of urlpath/contiguous/mode/meta."""
    if storage is not None:
        given = {k: v for k, v in (("urlpath", urlpath), ("contiguous", contiguous),
                                   ("meta", meta)) if v is not None}
        if mode != "a":
            given["mode"] = mode
        merged = storage_keywords(storage, given)
        urlpath, contiguous = merged.get("urlpath"), merged.get("contiguous")
        mode, meta = merged.get("mode", "a"), merged.get("meta")
    if kwargs:
        raise ParameterError(f"unknown argument(s) {sorted(kwargs)}")
    if device is not None and device != "cpu":
        raise ValueError(f"device must be 'cpu' or None, not {device!r}")
    if mode not in ("a", "w"):
        raise ParameterError(f"mode must be 'a' or 'w' to create an array, not {mode!r}")
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise TypeError(f"dtype {dtype} holds Python objects and cannot be stored")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    chunks, blocks = compute_chunks_blocks(shape, chunks, blocks, dtype=dtype)
    shape = tuple(int(s) for s in shape)
    check_sizes(shape, chunks, blocks, dtype.itemsize)      # what the format can index
    cp = _layout_cparams(cparams, dtype, blocks)
    dp = make_dparams(dparams)
    raw_meta = {"b2nd": encode_b2nd(shape, chunks, blocks, dtype)}
    for k, v in (meta or {}).items():
        raw_meta[check_name(k)] = packb(v)
    chunk_nbytes = prod(ext_shape(chunks, blocks)) * dtype.itemsize
    info = _info_from(cp, dp, chunk_nbytes if chunk_nbytes else -1)
    path = None if urlpath is None else os.fspath(urlpath)
    if path is None:
        frame = MemoryFrame(info, raw_meta)
    else:        # written under a temporary name; moved into place once every chunk is
        frame = new_file_frame(path, mode, info, raw_meta, contiguous)  # there (or by
        frame.pending.expected = prod(                                  # holding()'s end)
            -(-s // c) if c else 0 for s, c in zip(shape, chunks))
    try:
        schunk = SChunk._from_frame(frame, urlpath=path, mode="a", dparams=dp)
        schunk._cparams = cp
        arr = NDArray(schunk)
        frame._maybe_commit() if path is not None else None     # an array of no chunks
    except BaseException:
        frame.abort()
        raise
    return arr


@contextlib.contextmanager
def holding(obj):
    """Keep a new array (or SChunk) that is being written under its temporary name
    until the block ends, then move it into place; remove it if the block raises.

    :func:`create` moves a new file into place when its last chunk is written; a
    creator that writes more afterwards (vlmeta, slice writes) holds it.  Objects
    already in place, or in memory, pass through.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "h.b2nd")
    >>> a = create((4,), np.int32, chunks=(2,), blocks=(2,), urlpath=path)
    >>> with holding(a):
    ...     _ = fill_from(a, lambda reg: np.arange(4)[reg])
    ...     a.vlmeta["note"] = "complete"
    ...     print(os.path.exists(path))
    False
    >>> os.path.exists(path), a.vlmeta["note"]
    (True, 'complete')
    """
    frame = getattr(obj, "schunk", obj)._frame
    p = frame.pending
    if p is None:
        yield obj
        return
    p.held += 1
    try:
        yield obj
    except BaseException:
        p.held -= 1
        frame.abort()
        raise
    p.held -= 1
    if not p.held:
        try:
            frame.commit()
        except BaseException:
            frame.abort()
            raise


def fill_from(arr: NDArray, producer=None, special=None, value=None) -> NDArray:
    """Append every chunk of an empty `arr`, in C order, from `producer` or as specials.

    ``producer(region)`` returns the values of the array region (a tuple of slices)
    as an array-like of that region's shape; only one chunk is in memory at a time.
    With `special` (a :class:`SpecialValue`) no data is stored.
    """
    try:
        _fill(arr, producer, special, value)
        frame = arr.schunk._frame
        if frame.pending is not None:      # in place once complete (a bulk writer that
            frame._maybe_commit()          # bypasses frame._mutate is covered too)
        return arr
    except BaseException:
        arr.schunk._frame.abort()          # a new file that will not be complete
        raise


def _fill(arr: NDArray, producer, special, value) -> NDArray:
    s = arr.schunk
    if special is not None:
        raw = None if value is None else np.asarray(value, dtype=arr.dtype).tobytes()
        chunk = special_chunk(special, arr._chunk_nbytes, arr._typesize, arr._blocksize,
                              value=raw)
        s._check_writable()
        s._frame.append_repeated(chunk, arr._nchunks)     # no Python work per chunk
        return arr
    s._check_writable()
    frame, ext = s._frame, arr._ext_chunks
    for coords in itertools.product(*[range(g) for g in arr._grid]):
        region = arr._chunk_region(coords)
        data = np.asarray(producer(region), dtype=arr.dtype)
        if data.shape == ext:                 # a whole unpadded chunk: no staging copy
            buf = data
        else:
            buf = np.zeros(ext, dtype=arr.dtype)
            buf[tuple(slice(0, r.stop - r.start) for r in region)] = data
        frame.append(arr._encode(buf))        # our own chunk: no validation copy
    return arr


# ---------------------------------------------------------------------------------------


class NDArray(NDReader, NDStored):
    """A compressed n-dimensional array stored in a super-chunk with a ``b2nd`` layer.

    Build one with the constructors (:func:`ndpack.storage.constructors.asarray`,
    ``zeros``, ``full``, ...) or open a ``.b2nd`` file with ``ndpack.open``.

    Parameters
    ----------
    schunk : SChunk
        A super-chunk carrying a ``b2nd`` metalayer.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack.storage.constructors import zeros
    >>> a = zeros((4, 5), dtype="f4", chunks=(2, 5), blocks=(1, 5))
    >>> a.cbytes < a.nbytes, a.schunk.nchunks
    (True, 2)
    >>> a[3] = np.arange(5)
    >>> np.asarray(a)[2:].tolist()
    [[0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 2.0, 3.0, 4.0]]
    """

    def __init__(self, schunk: SChunk):
        if "b2nd" not in list(schunk.meta):      # names only (no decoding)
            raise ParameterError("the super-chunk has no 'b2nd' metalayer")
        self._schunk = schunk
        self._load_layout(schunk.meta.get_raw("b2nd"))

    def _load_layout(self, raw):
        self._shape, self._chunks, self._blocks, self._dtype = decode_b2nd(raw)
        self._ext_chunks = ext_shape(self._chunks, self._blocks)
        self._grid = tuple(-(-s // c) if c else 0 for s, c in zip(self._shape, self._chunks))
        self._bgrid = tuple(e // b if b else 0 for e, b in zip(self._ext_chunks, self._blocks))
        self._nchunks = prod(self._grid)
        itemsize = self._dtype.itemsize
        self._chunk_nbytes = prod(self._ext_chunks) * itemsize
        self._blocksize = prod(self._blocks) * itemsize
        self._typesize = min(itemsize, 255) or 1
        self._nd = len(self._shape)
        self._block_ids = range(prod(self._bgrid))
        # the blocked layout of a chunk is its C order when the blocks are
        # (1, ..., 1, b, full, ..., full): then a fully covered chunk decodes in place
        k = next((d for d, b in enumerate(self._blocks) if b != 1), self._nd)
        self._corder = all(self._blocks[d] == self._ext_chunks[d]
                           for d in range(k + 1, self._nd))
        self._check_layout()

    def _check_layout(self):
        """The b2nd metalayer must agree with the super-chunk (a corrupt file could
        claim any shape: better a FormatError now than absurd reads later)."""
        check_array_frame(self._schunk._frame, self._shape, self._chunks, self._blocks,
                          self._dtype)

    # --- properties ----------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return prod(self._shape)

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def chunks(self) -> tuple:
        return self._chunks

    @property
    def blocks(self) -> tuple:
        return self._blocks

    @property
    def chunksize(self) -> int:
        """Bytes of one (padded) chunk."""
        return self._chunk_nbytes

    @property
    def blocksize(self) -> int:
        """Bytes of one block."""
        return self._blocksize

    @property
    def ext_shape(self) -> tuple:
        """The shape rounded up to whole chunks."""
        return ext_shape(self._shape, self._chunks)

    @property
    def nbytes(self) -> int:
        """Uncompressed size of the array (without padding)."""
        return self.size * self._dtype.itemsize

    @property
    def cbytes(self) -> int:
        return self._schunk.cbytes

    @property
    def cratio(self) -> float:
        return self.nbytes / self.cbytes if self.cbytes else 0.0

    @property
    def schunk(self) -> SChunk:
        return self._schunk

    @property
    def meta(self):
        return self._schunk.meta

    @property
    def vlmeta(self):
        return self._schunk.vlmeta

    @property
    def cparams(self) -> CParams:
        return self._schunk.cparams

    @property
    def dparams(self):
        return self._schunk.dparams

    @property
    def urlpath(self):
        return self._schunk.urlpath

    @property
    def info(self) -> str:
        """A short text report of the array."""
        rows = [("type", "NDArray"), ("shape", self.shape), ("chunks", self.chunks),
                ("blocks", self.blocks), ("dtype", self.dtype), ("nbytes", self.nbytes),
                ("cbytes", self.cbytes), ("cratio", f"{self.cratio:.2f}x"),
                ("urlpath", self.urlpath), ("cparams", self.cparams),
                ("dparams", self.dparams)]
        return "\n".join(f"{k:<8}: {v}" for k, v in rows) + "\n"

    @property
    def T(self) -> NDArray:
        """The transposed array, as a new in-memory NDArray built chunk by chunk."""
        out = create(self._shape[::-1], self._dtype, self._chunks[::-1], self._blocks[::-1],
                     cparams=self.cparams)
        return fill_from(out, lambda reg: self[reg[::-1]].T)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self._shape[0]):
            yield self[i]

    def __array__(self, dtype=None, copy=None):
        a = self[()]
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        return (f"<NDArray shape={self.shape} dtype={self.dtype} chunks={self.chunks} "
                f"blocks={self.blocks} urlpath={self.urlpath!r}>")

    # --- chunk helpers -------------------------------------------------------------------
    def _chunk_number(self, coords) -> int:
        n = 0
        for c, g in zip(coords, self._grid):
            n = n * g + c
        return n

    def _chunk_region(self, coords) -> tuple:
        return tuple(slice(c * cs, min((c + 1) * cs, s))
                     for c, cs, s in zip(coords, self._chunks, self._shape))

    def _special_fill(self, chunk):
        """The scalar a special chunk stands for, or None for a regular chunk."""
        code = special_code(chunk)
        if code in (SpecialValue.ZERO, SpecialValue.UNINIT):
            return np.zeros((), self._dtype)
        if code == SpecialValue.NAN and self._dtype.kind == "f" and \
                self._dtype.itemsize in (4, 8):
            return np.full((), np.nan, self._dtype)
        if code == SpecialValue.VALUE:
            raw = bytes(chunk[32:])
            if len(raw) == self._dtype.itemsize:
                return np.frombuffer(raw, self._dtype).reshape(())
        return None

    def _decode_raw(self, chunk, bids, nthreads=None):
        """The blocks in the product of `bids` (per-dimension block ids), decoded one
        after another (C order of their grid)."""
        if nthreads is None:
            nthreads = self._schunk.dparams.nthreads
        if prod(len(b) for b in bids) == prod(self._bgrid):
            nb = chunk_nbytes_of(chunk) if len(chunk) >= 16 else 0
            if nb <= 0:
                return decompress2(chunk, nthreads=nthreads)
            buf = _scratch(nb, "dst")                   # consumed before the next call
            decompress2(chunk, dst=buf, nthreads=nthreads)
            return buf
        return decompress_blocks(chunk, self._block_numbers(bids), nthreads=nthreads)

    def _decode_blocks(self, chunk, bids, nthreads=None) -> np.ndarray:
        """Decode the blocks in the product of `bids` (per-dimension block ids)."""
        return _from_blocked(self._decode_raw(chunk, bids, nthreads), self._dtype,
                             [len(b) for b in bids], self._blocks)

    def _chunk_array(self, n: int, chunk=None) -> np.ndarray:
        """Chunk `n` (whose stored bytes are `chunk` when given) decoded into a
        writable array of the extended chunk shape."""
        if chunk is None:
            chunk = self._stored(n)
        fill = self._special_fill(chunk)
        if fill is not None:
            arr = np.empty(self._ext_chunks, self._dtype)
            arr[...] = fill
            return arr
        return np.array(self._decode_blocks(chunk, [range(g) for g in self._bgrid]))

    def _encode(self, arr: np.ndarray) -> bytes:
        """A chunk from an array of the extended chunk shape (zeros -> special chunk)."""
        if self._corder:
            data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        else:
            data = _to_blocked(arr, self._blocks).reshape(-1).view(np.uint8)
        chunk = compress2(data, cparams=self._schunk._cparams)
        # all zeros compress to (at most) the header, block starts and empty streams,
        # or are stored as they are (clevel 0, tiny chunks): check those chunks alone
        small = 64 + len(self._block_ids) * (8 + 4 * self._typesize)
        if (len(chunk) <= small or len(chunk) >= len(data)) and not data.any():
            return special_chunk(SpecialValue.ZERO, self._chunk_nbytes, self._typesize,
                                 self._blocksize)
        return chunk

    def _parts(self, ranges):
        """Yield ``(nchunk, dst, locals)`` for every chunk a selection touches."""
        per_dim = [list(dim_parts(r, c)) for r, c in zip(ranges, self._chunks)]
        for combo in itertools.product(*per_dim):
            n = self._chunk_number([p[0] for p in combo])
            yield n, tuple(slice(p[1], p[2]) for p in combo), [p[3] for p in combo]

    # --- item access ---------------------------------------------------------------------
    def __getitem__(self, key) -> np.ndarray:
        if type(key) is tuple and len(key) == self._nd and self._nd:
            point = self._get_point(key)
            if point is not None:
                return point
        if is_fancy(key):                 # integer arrays, masks: see fancy.py
            return fancy_get(self, key)
        sel, flip, out_shape, _ = normalize_key(key, self._shape)
        ranges = [as_range(s) for s in sel]
        out = np.empty(tuple(len(r) for r in ranges), self._dtype)
        if out.size:
            self._read_into(ranges, out)
        if any(flip):
            out = out[tuple(slice(None, None, -1) if f else slice(None) for f in flip)]
        return out.reshape(out_shape)

    def read_into(self, key, out: np.ndarray) -> np.ndarray:
        """Read ``self[key]`` into the existing array `out` (no new allocation: reused
        buffers avoid page faults).  `key` is a tuple of step-1 slices, one per
        dimension; `out` is C-contiguous with the selection's shape and this dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from ndpack.storage.constructors import asarray
        >>> a = asarray(np.arange(20.0).reshape(4, 5), chunks=(2, 5))
        >>> buf = np.empty((2, 3))
        >>> a.read_into((slice(1, 3), slice(2, 5)), buf).tolist()
        [[7.0, 8.0, 9.0], [12.0, 13.0, 14.0]]
        """
        sel, flip, out_shape, _ = normalize_key(key, self._shape)
        ranges = [as_range(s) for s in sel]
        shape = tuple(len(r) for r in ranges)
        if any(flip) or any(r.step != 1 for r in ranges) or out_shape != shape:
            raise ParameterError("read_into takes one step-1 slice per dimension")
        if out.shape != shape or out.dtype != self._dtype or not out.flags.c_contiguous:
            raise ParameterError(f"out must be a C-contiguous {self._dtype} array of shape "
                                 f"{shape}")
        if out.size:
            self._read_into(ranges, out)
        return out

    def __setitem__(self, key, value):
        self._schunk._check_writable()
        if is_fancy(key):
            fancy_set(self, key, value)
            return
        sel, flip, out_shape, _ = normalize_key(key, self._shape)
        ranges = [as_range(s) for s in sel]
        full = tuple(len(r) for r in ranges)
        try:
            value = np.asarray(value, dtype=self._dtype)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"cannot store {type(value).__name__} values in an array of "
                            f"dtype {self._dtype}: {exc}") from None
        try:
            value = np.broadcast_to(value, out_shape).reshape(full)
        except ValueError:
            raise ValueError(f"could not broadcast a value of shape {value.shape} into the "
                             f"selection of shape {out_shape}") from None
        if any(flip):
            value = value[tuple(slice(None, None, -1) if f else slice(None) for f in flip)]
        if not value.size:
            return
        for n, dst, locs in self._parts(ranges):
            coords = np.unravel_index(n, self._grid) if self._grid else ()
            valid = [min(c, s - k * c) for c, s, k in zip(self._chunks, self._shape, coords)]
            if all(loc.start == 0 and loc.step == 1 and len(loc) == v
                   for loc, v in zip(locs, valid)):          # the whole chunk: no decode
                arr = np.zeros(self._ext_chunks, self._dtype)
            else:
                arr = self._chunk_array(n)
            arr[tuple(slice(loc.start, loc.stop, loc.step) for loc in locs)] = value[dst]
            self._schunk.update_chunk(n, self._encode(arr))

    # --- whole-array operations ----------------------------------------------------------
    def copy(self, dtype=None, **kwargs) -> NDArray:
        """A copy (in memory unless `urlpath` is given), with new storage options if given.

        Metalayers (unless `meta` is given) and vlmeta are copied too.  With the same
        dtype, chunks and blocks and no new `cparams`, compressed chunks are copied as
        they are.

        Examples
        --------
        >>> from ndpack.storage.constructors import arange
        >>> b = arange(10, chunks=(4,), blocks=(2,)).copy(chunks=(5,), blocks=(5,))
        >>> b.chunks, b[7:].tolist()
        ((5,), [7, 8, 9])
        """
        dtype = self._dtype if dtype is None else np.dtype(dtype)
        chunks = kwargs.pop("chunks", None)
        blocks = kwargs.pop("blocks", None)
        same = (dtype == self._dtype and "cparams" not in kwargs
                and chunks in (None, self._chunks) and blocks in (None, self._blocks))
        if chunks is None and blocks is None:
            chunks, blocks = self._chunks, self._blocks
        kwargs.setdefault("cparams", self.cparams)
        kwargs.setdefault("meta", {k: self.meta[k] for k in self.meta if k != "b2nd"})
        out = create(self._shape, dtype, chunks, blocks, **kwargs)
        with holding(out):                       # on disk: in place once vlmeta is there
            if same and out.chunks == self._chunks and out.blocks == self._blocks:
                for i in range(self._nchunks):
                    out.schunk.append_chunk(self._schunk.get_chunk(i))
            else:
                fill_from(out, lambda reg: self[reg])
            for name, chunk in self._schunk._frame.vlmeta.items():   # stored form, as is
                out.schunk._frame.set_vlmeta(name, chunk)
        return out

    def slice(self, key, **kwargs) -> NDArray:
        """The selection `key` as a new NDArray (storage options as for constructors).

        Examples
        --------
        >>> from ndpack.storage.constructors import arange
        >>> arange(20, shape=(4, 5)).slice((slice(1, 3), 4))[:].tolist()
        [9, 14]
        """
        sel, flip, out_shape, axes = normalize_key(key, self._shape)
        rng = [r[::-1] if f and isinstance(r, range) else r for r, f in zip(sel, flip)]
        kwargs.setdefault("cparams", self.cparams)
        out = create(out_shape, self._dtype, **kwargs)

        def producer(region):
            sub = list(rng)
            for reg, ax in zip(region, axes):
                if ax is not None:
                    r = rng[ax][reg]
                    sub[ax] = slice(r.start, r.stop if r.stop >= 0 else None, r.step)
            shape = tuple(s.stop - s.start for s in region)
            return self[tuple(sub)].reshape(shape)

        return fill_from(out, producer)

    def resize(self, newshape) -> None:
        """Change the shape in place, keeping the data (new items are zero).

        Examples
        --------
        >>> from ndpack.storage.constructors import arange
        >>> a = arange(6, shape=(2, 3), chunks=(2, 2), blocks=(1, 2))
        >>> a.resize((3, 2)); a[:].tolist()
        [[0, 1], [3, 4], [0, 0]]
        """
        self._schunk._check_writable()
        if isinstance(newshape, (int, np.integer)):
            newshape = (newshape,)
        newshape = tuple(int(s) for s in newshape)
        if len(newshape) != self.ndim:
            raise ValueError(f"new shape {newshape} has {len(newshape)} dimensions, the "
                             f"array has {self.ndim}")
        if any(s < 0 for s in newshape):
            raise ValueError(f"new shape {newshape} has a negative size")
        if 0 not in self._chunks:         # what the format can index, before any work
            check_sizes(newshape, self._chunks, self._blocks, self._dtype.itemsize)
        if 0 in self._chunks and 0 not in newshape:
            raise ValueError(f"cannot resize an array with zero-sized chunks {self._chunks} "
                             f"to {newshape}")
        old, oldgrid = self._shape, self._grid
        newgrid = tuple(-(-s // c) if c else 0 for s, c in zip(newshape, self._chunks))
        # 1. in the dimensions that change, zero what an edge chunk holds beyond the kept
        #    part: shrunk items must not come back, padding must not show when growing
        keep = [min(o, s) for o, s in zip(old, newshape)]
        changed = [d for d in range(self.ndim) if old[d] != newshape[d]]
        for coords in itertools.product(*[range(min(g, h)) for g, h in zip(oldgrid, newgrid)]):
            if all((coords[d] + 1) * self._chunks[d] <= keep[d] for d in changed):
                continue
            n = self._chunk_number(coords)
            if special_code(self._schunk._frame.get(n)) in (SpecialValue.ZERO,
                                                            SpecialValue.UNINIT):
                continue
            arr = self._chunk_array(n)
            stale = np.zeros(arr.shape, bool)
            for d in changed:
                idx = [slice(None)] * self.ndim
                idx[d] = slice(max(keep[d] - coords[d] * self._chunks[d], 0), None)
                stale[tuple(idx)] = True
            if np.any(arr[stale].view(np.uint8)):
                arr[stale] = np.zeros((), self._dtype)
                self._schunk.update_chunk(n, self._encode(arr))
        # 2. rearrange the chunks for the new grid
        zero = special_chunk(SpecialValue.ZERO, self._chunk_nbytes, self._typesize,
                             self._blocksize)
        plan = []
        for coords in itertools.product(*[range(g) for g in newgrid]):
            inside = all(c < g for c, g in zip(coords, oldgrid))
            plan.append(self._chunk_number(coords) if inside else None)
        moved = {i: self._schunk.get_chunk(j) for i, j in enumerate(plan)
                 if j is not None and j != i}
        s, nold = self._schunk, self._nchunks
        for i, j in enumerate(plan):
            chunk = moved.get(i, zero if j is None else None)
            if chunk is None:
                continue
            if i < nold:
                s.update_chunk(i, chunk)
            else:
                s.append_chunk(chunk)
        for i in range(nold - 1, len(plan) - 1, -1):
            s.delete_chunk(i)
        raw = encode_b2nd(newshape, self._chunks, self._blocks, self._dtype)
        s._frame.write_meta("b2nd", raw)
        self._load_layout(raw)

    def to_cframe(self) -> bytes:
        """The array as contiguous-frame bytes (a ``.b2nd`` file image)."""
        return self._schunk.to_cframe()

    def save(self, urlpath, contiguous=True, **kwargs) -> None:
        """Write the array (metalayers and vlmeta included) to `urlpath`, one chunk at a
        time (compressed chunks are copied as they are when the layout is kept)."""
        self.copy(urlpath=urlpath, contiguous=contiguous, mode="w", **kwargs)

    def append(self, values) -> int:
        """Append values at the end of a 1-D array; returns the new length.

        Examples
        --------
        >>> from ndpack.storage.constructors import arange
        >>> a = arange(5, chunks=(4,), blocks=(2,))
        >>> a.append([7, 8]), a[:].tolist()
        (7, [0, 1, 2, 3, 4, 7, 8])
        """
        if self.ndim != 1:
            raise ValueError(f"append works on 1-D arrays; this one has {self.ndim} dimensions")
        values = np.asarray(values, dtype=self.dtype).reshape(-1)
        n = self.shape[0]
        self.resize((n + values.size,))
        self[n:] = values
        return self.shape[0]

    def get_chunk(self, nchunk: int) -> bytes:
        """The compressed chunk `nchunk` (C order over the chunk grid)."""
        return self._schunk.get_chunk(nchunk)

    oindex = property(OIndex, doc="Orthogonal indexing as zarr's ``oindex`` (get and set), "
                      "see :class:`ndpack.storage.fancy.OIndex`.")
    vindex = property(VIndex, doc="Vectorized indexing as zarr's ``vindex`` (get and set), "
                      "see :class:`ndpack.storage.fancy.VIndex`.")

    @property
    def mT(self) -> NDArray:
        """The last two dimensions swapped (a stack of transposed matrices), as a new
        in-memory NDArray whose chunks and blocks are swapped too.

        Examples
        --------
        >>> from ndpack.storage.constructors import arange
        >>> m = arange(12, shape=(2, 2, 3), chunks=(1, 2, 2), blocks=(1, 1, 2)).mT
        >>> m.shape, m.chunks, m[1].tolist()
        ((2, 3, 2), (1, 2, 2), [[6, 9], [7, 10], [8, 11]])
        """
        if self._nd < 2:
            raise ValueError(f"mT needs at least 2 dimensions; this array has {self._nd}")
        axes = list(range(self._nd - 2)) + [self._nd - 1, self._nd - 2]
        out = create(tuple(self._shape[a] for a in axes), self._dtype,
                     tuple(self._chunks[a] for a in axes), tuple(self._blocks[a] for a in axes),
                     cparams=self.cparams)
        inv = list(np.argsort(axes))
        return fill_from(out, lambda reg: self[tuple(reg[i] for i in inv)].transpose(axes))

    def iterchunks_info(self):
        """Yield an :class:`NDChunkInfo` (nchunk, coords, cratio, special, value, header)."""
        for info in self._schunk.iterchunks_info():
            coords = tuple(int(c) for c in np.unravel_index(info.nchunk, self._grid))
            rep = info.repeated_value
            if rep is not None and len(rep) == self._dtype.itemsize:
                rep = np.frombuffer(rep, self._dtype)[0]
            yield NDChunkInfo(info.nchunk, coords, info.cratio, info.special, rep,
                              info.lazychunk)
