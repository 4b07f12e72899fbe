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
import weakref

import numpy as np

from ndpack.chunks import special_chunk
from ndpack.codecs import CParams, SpecialValue, make_cparams, make_dparams
from ndpack.errors import ParameterError
from ndpack.storage.fancy import OIndex, VIndex, fancy_get, fancy_set, is_fancy
from ndpack.storage.frame import MemoryFrame, special_code
from ndpack.storage.grid import (
    as_range,
    check_block_bytes,
    check_sizes,
    compute_chunks_blocks,
    encode_b2nd,
    ext_shape,
    normalize_key,
    prod,
)
from ndpack.storage.layout import Layout
from ndpack.storage.meta import check_name, packb
from ndpack.storage.ndstored import NDStored
from ndpack.storage.ndview import NDViews
from ndpack.storage.ndread import ChunkIO
from ndpack.storage.params import storage_keywords
from ndpack.storage.validate import check_array_frame
from ndpack.storage.schunk import SChunk, frame_info, info_text, new_file_frame, size_text

__all__ = ["NDArray", "NDChunkInfo", "array_or_schunk", "create", "fill_from", "holding"]

NDChunkInfo = collections.namedtuple(
    "NDChunkInfo", ["nchunk", "coords", "cratio", "special", "repeated_value", "lazychunk"])


# ---------------------------------------------------------------------------------------
# creation


def _layout_cparams(cparams, dtype: np.dtype, blocks) -> CParams:
    """python-blosc2's rule: typesize = itemsize, blocksize = one block."""
    # C-Blosc2 stores items wider than 255 bytes with typesize 1 (a chunk header keeps it
    # in one byte); python-blosc2 writes the itemsize in the frame header, we write 1
    typesize = dtype.itemsize if 1 <= dtype.itemsize <= 255 else 1
    if cparams is not None and not isinstance(cparams, CParams):
        cparams = make_cparams(cparams)        # the caller's values checked (a CParams is)
    return make_cparams(cparams, typesize=typesize, blocksize=prod(blocks) * dtype.itemsize)


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
    if dtype.shape:
        raise TypeError(f"sub-array dtype {dtype} is not supported: give its shape to the "
                        f"array instead (shape + {dtype.shape} of {dtype.base})")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    chunks, blocks = compute_chunks_blocks(shape, chunks, blocks, dtype=dtype)
    shape = tuple(int(s) for s in shape)
    check_sizes(shape, chunks, blocks, dtype.itemsize)      # what the format can index
    check_block_bytes(blocks, dtype.itemsize)               # what C-Blosc2 can read
    cp = _layout_cparams(cparams, dtype, blocks)
    dp = make_dparams(dparams)
    raw_meta = {"b2nd": encode_b2nd(shape, chunks, blocks, dtype)}
    for k, v in (meta or {}).items():
        raw_meta[check_name(k)] = packb(v)
    chunk_nbytes = prod(ext_shape(chunks, blocks)) * dtype.itemsize
    info = frame_info(cp, dp, chunk_nbytes if chunk_nbytes else -1)
    path = None if urlpath is None else os.fspath(urlpath)
    if path is None:
        frame = MemoryFrame(info, raw_meta)
    else:        # written under a temporary name; moved into place once every chunk is
        frame = new_file_frame(path, mode, info, raw_meta, contiguous)  # there (or by
        frame.pending.expected = prod(                                  # holding()'s end)
            -(-s // c) if c else 0 for s, c in zip(shape, chunks))
    try:
        schunk = SChunk.from_frame(frame, urlpath=path, mode="a", dparams=dp, cparams=cp)
        arr = NDArray(schunk)
        frame.maybe_commit() if path is not None else None     # an array of no chunks
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
    frame = getattr(obj, "schunk", obj).frame
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
        frame = arr.schunk.frame
        if frame.pending is not None:      # in place once complete (a bulk writer that
            frame.maybe_commit()          # bypasses frame._mutate is covered too)
        return arr
    except BaseException:
        arr.schunk.frame.abort()           # a new file that will not be complete
        raise


def _fill(arr: NDArray, producer, special, value) -> NDArray:
    s, lay = arr.schunk, arr.layout
    if special is not None:
        raw = None if value is None else np.asarray(value, dtype=lay.dtype).tobytes()
        if raw is not None and len(raw) != lay.typesize:     # items over 255 bytes: no
            item = np.asarray(value, dtype=lay.dtype)        # header holds one; real chunks
            return _fill(arr, lambda reg: np.broadcast_to(
                item, tuple(r.stop - r.start for r in reg)), None, None)
        chunk = special_chunk(special, lay.chunk_nbytes, lay.typesize, lay.blocksize,
                              value=raw)
        s.check_writable()
        s.frame.append_repeated(chunk, lay.nchunks)       # no Python work per chunk
        return arr
    s.check_writable()
    frame, ext = s.frame, lay.ext_chunks
    for coords in lay.all_coords():
        region = lay.region(coords)
        data = np.asarray(producer(region), dtype=lay.dtype)
        if data.shape == ext:                 # a whole unpadded chunk: no staging copy
            buf = data
        else:
            buf = np.zeros(ext, dtype=lay.dtype)
            buf[tuple(slice(0, r.stop - r.start) for r in region)] = data
        frame.append(arr.encode_chunk(buf))   # our own chunk: no validation copy
    return arr


def array_or_schunk(schunk: SChunk):
    """An :class:`NDArray` over `schunk` when it carries a ``b2nd`` metalayer, else
    `schunk` itself: what a frame opens as (:func:`ndpack.storage.dispatch.open`).

    Examples
    --------
    >>> from ndpack.storage.constructors import arange
    >>> from ndpack.storage.schunk import schunk_from_cframe
    >>> type(array_or_schunk(schunk_from_cframe(arange(4).to_cframe()))).__name__
    'NDArray'
    """
    if "b2nd" in schunk.frame.meta:
        return NDArray(schunk)
    return schunk


# ---------------------------------------------------------------------------------------


class NDArray(NDStored, NDViews):
    """A compressed n-dimensional array stored in a super-chunk with a ``b2nd`` layer.

    Build one with the constructors (:func:`ndpack.storage.constructors.asarray`,
    ``zeros``, ``full``, ...) or open a ``.b2nd`` file with ``ndpack.open``.

    ``expand_dims`` and ``squeeze`` give views: arrays sharing another's super-chunk
    with axes of length 1 added or removed (:meth:`axes_view`, :attr:`base`, see
    :mod:`ndpack.storage.ndview`).

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

    # a hook the engine replaces (ndpack.engine.bind, from ndpack.engine.ops.index):
    # ``a[expr]`` for a boolean LazyExpr key, from a sorted index when one applies
    expr_key = None

    def __init__(self, schunk: SChunk):
        if "b2nd" not in list(schunk.meta):      # names only (no decoding)
            raise ParameterError("the super-chunk has no 'b2nd' metalayer")
        self._schunk = schunk
        layout = Layout.from_b2nd(schunk.meta.get_raw("b2nd"))
        self._check_layout(layout)
        self._layout = layout
        self._io = ChunkIO(layout, schunk)       # reads and writes (also the indexers')

    @classmethod
    def _new_view(cls, root: NDArray, layout: Layout, axes: tuple) -> NDArray:
        """The one constructor of views (:meth:`axes_view`): `root`'s super-chunk shown
        through `layout`, axis ``i`` being `root`'s ``axes[i]`` (None: a new one)."""
        view = object.__new__(cls)
        view._schunk = root.schunk
        view._layout, view._io = layout, ChunkIO(layout, root.schunk)
        view._base, view._axes = root, axes
        if root._views is None:
            root._views = weakref.WeakSet()
        root._views.add(view)
        return view

    def _check_layout(self, layout: Layout):
        """The b2nd metalayer must agree with the super-chunk (a corrupt file could
        claim any shape: better a FormatError now than absurd reads later)."""
        check_array_frame(self._schunk.frame, layout.shape, layout.chunks, layout.blocks,
                          layout.dtype)

    def _set_layout(self, layout: Layout):
        """Replace the layout (after a resize): every reader of it sees the new one,
        the live views of this array too."""
        self._check_layout(layout)
        self._layout = self._io.layout = layout
        self._follow()

    # --- properties ----------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        """Shape, chunks, blocks, dtype and the figures derived from them (a frozen
        :class:`~ndpack.storage.layout.Layout`, replaced when the array is resized).

        Examples
        --------
        >>> from ndpack.storage.constructors import zeros
        >>> lay = zeros((5, 6), chunks=(2, 4), blocks=(1, 2)).layout
        >>> lay.grid, lay.nchunks, lay.ext_chunks
        ((3, 2), 6, (2, 4))
        """
        return self._layout

    @property
    def shape(self) -> tuple:
        return self._layout.shape

    @property
    def dtype(self) -> np.dtype:
        return self._layout.dtype

    @property
    def ndim(self) -> int:
        return self._layout.ndim

    @property
    def size(self) -> int:
        return self._layout.size

    @property
    def itemsize(self) -> int:
        return self._layout.dtype.itemsize

    @property
    def chunks(self) -> tuple:
        return self._layout.chunks

    @property
    def blocks(self) -> tuple:
        return self._layout.blocks

    @property
    def chunksize(self) -> int:
        """Bytes of one (padded) chunk."""
        return self._layout.chunk_nbytes

    @property
    def blocksize(self) -> int:
        """Bytes of one block."""
        return self._layout.blocksize

    @property
    def ext_shape(self) -> tuple:
        """The shape rounded up to whole chunks."""
        return self._layout.ext_shape

    @property
    def nbytes(self) -> int:
        """Uncompressed size of the array (without padding)."""
        return self._layout.size * self._layout.dtype.itemsize

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
        """The fixed metalayers (a view's: read-only, with the view's ``b2nd``)."""
        return self._schunk.meta if self._base is None else self._view_meta()

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
        """The file holding the array; None in memory, and for a view (reopening the
        base's file would not give the view's shape)."""
        return self._schunk.urlpath if self._base is None else None

    @property
    def info_items(self) -> list:
        """python-blosc2's report as ``(name, value)`` pairs (``info`` as text)."""
        return [("type", "NDArray"), ("shape", self.shape), ("chunks", self.chunks),
                ("blocks", self.blocks), ("dtype", self.dtype),
                ("nbytes", size_text(self.nbytes)), ("cbytes", size_text(self.cbytes)),
                ("cratio", f"{self.cratio:.2f}x"), ("cparams", self.cparams),
                ("dparams", self.dparams)]
    info = property(lambda self: info_text(self.info_items), doc="A text report.")

    @property
    def T(self) -> NDArray:
        """The transposed array, as a new in-memory NDArray built chunk by chunk."""
        lay = self._layout
        out = create(lay.shape[::-1], lay.dtype, lay.chunks[::-1], lay.blocks[::-1],
                     cparams=self.cparams)
        return fill_from(out, lambda reg: self[reg[::-1]].T)

    def __len__(self) -> int:
        if not self._layout.shape:
            raise TypeError("len() of a 0-d array")
        return self._layout.shape[0]

    def __iter__(self):
        if not self._layout.shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self._layout.shape[0]):
            yield self[i]

    def __array__(self, dtype=None, copy=None):
        a = self[()]
        return a if dtype is None else a.astype(dtype, copy=False)

    def __enter__(self) -> NDArray:
        return self

    def __exit__(self, *exc) -> bool:
        """A no-op, as python-blosc2's (``with ndpack.open(path) as a:``)."""
        return False

    def tobytes(self) -> bytes:
        """The whole array's bytes in C order (``self[()].tobytes()``)."""
        return self[()].tobytes()

    def __repr__(self):
        return (f"<NDArray shape={self.shape} dtype={self.dtype} chunks={self.chunks} "
                f"blocks={self.blocks} urlpath={self.urlpath!r}>")

    # --- whole chunks --------------------------------------------------------------------
    def encode_chunk(self, values, nthreads: int | None = None) -> bytes:
        """A compressed chunk of this array from `values` of the extended chunk shape
        (``layout.ext_chunks``, C order; an all-zero chunk becomes a special chunk),
        ready for :meth:`write_encoded`; compressed by `nthreads` threads (default
        ``cparams.nthreads``; 1 on the threads of a pool).

        Examples
        --------
        >>> import numpy as np
        >>> from ndpack.storage.constructors import asarray
        >>> a = asarray(np.arange(6).reshape(2, 3), chunks=(1, 3), blocks=(1, 3))
        >>> a.decode_chunk(0).tolist(), a.stored_as_chunk(
        ...     a.decode_stored(a.encode_chunk(np.full((1, 3), 7)))).tolist()
        ([[0, 1, 2]], [[7, 7, 7]])
        """
        lay = self._layout
        values = np.asarray(values, lay.dtype)
        if values.shape != lay.ext_chunks:
            raise ParameterError(f"values must have the extended chunk shape "
                                 f"{lay.ext_chunks}, not {values.shape}")
        return self._io.encode(values, nthreads)

    def decode_chunk(self, nchunk: int) -> np.ndarray:
        """Chunk `nchunk` decoded into a new writable array of the extended chunk
        shape (``layout.ext_chunks``, C order, padding included; special chunks
        expanded).  See :meth:`encode_chunk`."""
        return self._io.chunk_array(nchunk)

    # --- item access ---------------------------------------------------------------------
    def __getitem__(self, key) -> np.ndarray:
        if type(key) is str and key in (self.dtype.names or ()):
            return self.fields[key]       # python-blosc2's a["name"]: the field's NDField
        lay = self._layout
        if type(key) is tuple and len(key) == lay.ndim and lay.ndim:
            point = self._io.get_point(key)
            if point is not None:
                return point
        if is_fancy(key):                 # integer arrays, masks: see fancy.py
            if self.expr_key is not None and hasattr(key, "node"):
                got = self.expr_key(key)       # an expression answered by an index
                if got is not None:
                    return got
            return fancy_get(self._io, key)
        sel, flip, out_shape, _ = normalize_key(key, lay.shape)
        ranges = [as_range(s) for s in sel]
        out = np.empty(tuple(len(r) for r in ranges), lay.dtype)
        if out.size:
            self._io.read_ranges(ranges, out)
        if any(flip):
            out = out[tuple(slice(None, None, -1) if f else slice(None) for f in flip)]
        return out.reshape(out_shape)

    def read_into(self, key, out: np.ndarray, nthreads: int | None = None) -> np.ndarray:
        """Read ``self[key]`` into the existing array `out` (no new allocation: reused
        buffers avoid page faults).  `key` is a tuple of step-1 slices, one per
        dimension; `out` is C-contiguous with the selection's shape and this dtype.
        `nthreads`: decoding threads (default ``dparams.nthreads``).

        Examples
        --------
        >>> import numpy as np
        >>> from ndpack.storage.constructors import asarray
        >>> a = asarray(np.arange(20.0).reshape(4, 5), chunks=(2, 5))
        >>> buf = np.empty((2, 3))
        >>> a.read_into((slice(1, 3), slice(2, 5)), buf).tolist()
        [[7.0, 8.0, 9.0], [12.0, 13.0, 14.0]]
        """
        lay = self._layout
        sel, flip, out_shape, _ = normalize_key(key, lay.shape)
        ranges = [as_range(s) for s in sel]
        shape = tuple(len(r) for r in ranges)
        if any(flip) or any(r.step != 1 for r in ranges) or out_shape != shape:
            raise ParameterError("read_into takes one step-1 slice per dimension")
        if out.shape != shape or out.dtype != lay.dtype or not out.flags.c_contiguous:
            raise ParameterError(f"out must be a C-contiguous {lay.dtype} array of shape "
                                 f"{shape}")
        if out.size:
            self._io.read_ranges(ranges, out, nthreads)
        return out

    def __setitem__(self, key, value):
        self._schunk.check_writable()
        if is_fancy(key):
            fancy_set(self._io, key, value)
            return
        lay, io = self._layout, self._io
        sel, flip, out_shape, _ = normalize_key(key, lay.shape)
        ranges = [as_range(s) for s in sel]
        full = tuple(len(r) for r in ranges)
        try:
            value = np.asarray(value, dtype=lay.dtype)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"cannot store {type(value).__name__} values in an array of "
                            f"dtype {lay.dtype}: {exc}") from None
        try:
            value = np.broadcast_to(value, out_shape).reshape(full)
        except ValueError:
            raise ValueError(f"could not broadcast a value of shape {value.shape} into the "
                             f"selection of shape {out_shape}") from None
        if any(flip):
            value = value[tuple(slice(None, None, -1) if f else slice(None) for f in flip)]
        if not value.size:
            return
        for n, dst, locs in lay.parts(ranges):
            coords = lay.chunk_coords(n)
            valid = [min(c, s - k * c) for c, s, k in zip(lay.chunks, lay.shape, coords)]
            if all(loc.start == 0 and loc.step == 1 and len(loc) == v
                   for loc, v in zip(locs, valid)):          # the whole chunk: no decode
                arr = np.zeros(lay.ext_chunks, lay.dtype)
            else:
                arr = io.chunk_array(n)
            arr[tuple(slice(loc.start, loc.stop, loc.step) for loc in locs)] = value[dst]
            self._schunk.update_chunk(n, io.encode(arr))

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
        lay = self._layout
        dtype = lay.dtype if dtype is None else np.dtype(dtype)
        chunks = kwargs.pop("chunks", None)
        blocks = kwargs.pop("blocks", None)
        same = (dtype == lay.dtype and "cparams" not in kwargs
                and chunks in (None, lay.chunks) and blocks in (None, lay.blocks))
        if chunks is None and blocks is None:
            chunks, blocks = lay.chunks, lay.blocks
        kwargs.setdefault("cparams", self.cparams)
        kwargs.setdefault("meta", {k: self.meta[k] for k in self.meta if k != "b2nd"})
        out = create(lay.shape, dtype, chunks, blocks, **kwargs)
        with holding(out):                       # on disk: in place once vlmeta is there
            if same and out.chunks == lay.chunks and out.blocks == lay.blocks:
                for i in range(lay.nchunks):
                    out.schunk.append_chunk(self._schunk.get_chunk(i))
            else:
                fill_from(out, lambda reg: self[reg])
            for name, chunk in self._schunk.frame.vlmeta.items():    # stored form, as is
                out.schunk.frame.set_vlmeta(name, chunk)
        return out

    def slice(self, key, **kwargs) -> NDArray:
        """The selection `key` as a new NDArray (storage options as for constructors).

        Examples
        --------
        >>> from ndpack.storage.constructors import arange
        >>> arange(20, shape=(4, 5)).slice((slice(1, 3), 4))[:].tolist()
        [9, 14]
        """
        sel, flip, out_shape, axes = normalize_key(key, self.shape)
        rng = [r[::-1] if f and isinstance(r, range) else r for r, f in zip(sel, flip)]
        kwargs.setdefault("cparams", self.cparams)
        out = create(out_shape, self.dtype, **kwargs)

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
        self._schunk.check_writable()
        if isinstance(newshape, (int, np.integer)):
            newshape = (newshape,)
        newshape = tuple(int(s) for s in newshape)
        lay, io = self._layout, self._io
        chunks = lay.chunks
        if len(newshape) != lay.ndim:
            raise ValueError(f"new shape {newshape} has {len(newshape)} dimensions, the "
                             f"array has {lay.ndim}")
        if any(s < 0 for s in newshape):
            raise ValueError(f"new shape {newshape} has a negative size")
        self._check_resizable(newshape)           # not a view; live views can follow
        if 0 not in chunks:               # what the format can index, before any work
            check_sizes(newshape, chunks, lay.blocks, lay.dtype.itemsize)
        if 0 in chunks and 0 not in newshape:
            raise ValueError(f"cannot resize an array with zero-sized chunks {chunks} "
                             f"to {newshape}")
        old, oldgrid = lay.shape, lay.grid
        newgrid = tuple(-(-s // c) if c else 0 for s, c in zip(newshape, chunks))
        # 1. in the dimensions that change, zero what an edge chunk holds beyond the kept
        #    part: shrunk items must not come back, padding must not show when growing
        keep = [min(o, s) for o, s in zip(old, newshape)]
        changed = [d for d in range(lay.ndim) if old[d] != newshape[d]]
        for coords in itertools.product(*[range(min(g, h)) for g, h in zip(oldgrid, newgrid)]):
            if all((coords[d] + 1) * chunks[d] <= keep[d] for d in changed):
                continue
            n = lay.chunk_number(coords)
            if special_code(self._schunk.frame.get(n)) in (SpecialValue.ZERO,
                                                           SpecialValue.UNINIT):
                continue
            arr = io.chunk_array(n)
            stale = np.zeros(arr.shape, bool)
            for d in changed:
                idx = [slice(None)] * lay.ndim
                idx[d] = slice(max(keep[d] - coords[d] * chunks[d], 0), None)
                stale[tuple(idx)] = True
            if np.any(arr[stale].view(np.uint8)):
                arr[stale] = np.zeros((), lay.dtype)
                self._schunk.update_chunk(n, io.encode(arr))
        # 2. rearrange the chunks for the new grid
        zero = special_chunk(SpecialValue.ZERO, lay.chunk_nbytes, lay.typesize,
                             lay.blocksize)
        plan = []
        for coords in itertools.product(*[range(g) for g in newgrid]):
            inside = all(c < g for c, g in zip(coords, oldgrid))
            plan.append(lay.chunk_number(coords) if inside else None)
        moved = {i: self._schunk.get_chunk(j) for i, j in enumerate(plan)
                 if j is not None and j != i}
        s, nold = self._schunk, lay.nchunks
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
        raw = encode_b2nd(newshape, chunks, lay.blocks, lay.dtype)
        s.frame.write_meta("b2nd", raw)
        self._set_layout(Layout.from_b2nd(raw))

    def to_cframe(self) -> bytes:
        """The array as contiguous-frame bytes (a ``.b2nd`` file image; a view's with
        its own ``b2nd`` metalayer, its compressed chunks copied as they are)."""
        if self._base is not None:
            return self.copy().to_cframe()
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

    def stored_chunk(self, nchunk: int) -> tuple:
        """``(chunk, sums)``: the compressed chunk `nchunk` as stored, not checked, and
        the checksums its frame recorded (``(crc, entry)``, see
        :mod:`ndpack.storage.checksums`; None without a record), for copies into an
        array of the same layout that keep the record (``write_encoded(n, chunk, sums)``).

        Examples
        --------
        >>> from ndpack.storage.constructors import arange
        >>> a = arange(6, chunks=(3,), blocks=(3,))
        >>> chunk, sums = a.stored_chunk(1)
        >>> chunk == a.get_chunk(1), isinstance(sums[0], int)
        (True, True)
        """
        return self._schunk.frame.stored(nchunk)

    @property
    def oindex(self) -> OIndex:
        """Orthogonal indexing as zarr's ``oindex`` (get and set), see
        :class:`ndpack.storage.fancy.OIndex`."""
        return OIndex(self._io)

    @property
    def vindex(self) -> VIndex:
        """Vectorized indexing as zarr's ``vindex`` (get and set), see
        :class:`ndpack.storage.fancy.VIndex`."""
        return VIndex(self._io)

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
        lay = self._layout
        nd = lay.ndim
        if nd < 2:
            raise ValueError(f"mT needs at least 2 dimensions; this array has {nd}")
        axes = list(range(nd - 2)) + [nd - 1, nd - 2]
        out = create(tuple(lay.shape[a] for a in axes), lay.dtype,
                     tuple(lay.chunks[a] for a in axes), tuple(lay.blocks[a] for a in axes),
                     cparams=self.cparams)
        inv = list(np.argsort(axes))
        return fill_from(out, lambda reg: self[tuple(reg[i] for i in inv)].transpose(axes))

    def iterchunks_info(self):
        """Yield an :class:`NDChunkInfo` (nchunk, coords, cratio, special, value, header)."""
        lay = self._layout
        for info in self._schunk.iterchunks_info():
            coords = lay.chunk_coords(info.nchunk)
            rep = info.repeated_value
            if rep is not None and len(rep) == lay.dtype.itemsize:
                rep = np.frombuffer(rep, lay.dtype)[0]
            yield NDChunkInfo(info.nchunk, coords, info.cratio, info.special, rep,
                              info.lazychunk)
