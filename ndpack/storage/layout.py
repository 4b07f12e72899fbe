"""The layout of an NDArray: one frozen record, computed once from the ``b2nd`` metalayer.

A :class:`Layout` holds an array's shape, chunk and block shapes and dtype, and the
figures derived from them (FORMAT.md §5): the chunk grid and the block grid of a
chunk, chunk and block counts and sizes, and whether a chunk's stored order is its C
order.  An NDArray computes its layout when it is opened or created and gets a new
one when it is resized; the read, write and indexing code
(:mod:`~ndpack.storage.ndread`, :mod:`~ndpack.storage.fancy`,
:mod:`~ndpack.storage.chunkwise`, :mod:`~ndpack.storage.boxread`) takes the layout
instead of reading the array's fields.

Examples
--------
>>> import numpy as np
>>> lay = Layout((5, 6), (2, 4), (1, 2), np.dtype("i4"))
>>> lay.grid, lay.bgrid, lay.nchunks, lay.nblocks
((3, 2), (2, 2), 6, 4)
>>> lay.ext_chunks, lay.chunk_nbytes, lay.blocksize, lay.stored_c_order
((2, 4), 32, 8, True)
>>> lay.chunk_number((2, 1)), lay.chunk_coords(5), lay.region((2, 1))
(5, (2, 1), (slice(4, 5, None), slice(4, 6, None)))
>>> Layout.from_b2nd(lay.to_b2nd()) == lay
True
>>> lay.resized((3, 6)).grid
(2, 2)
"""

from __future__ import annotations

import dataclasses
import itertools
import typing

import numpy as np

from ndpack.codecs import SpecialValue
from ndpack.storage.frame import special_code
from ndpack.storage.grid import decode_b2nd, dim_parts, encode_b2nd, ext_shape, prod

__all__ = ["Layout", "ChunkPart"]


class ChunkPart(typing.NamedTuple):
    """One chunk's share of a selection (:meth:`Layout.parts`)."""
    nchunk: int         # the chunk's number
    dst: tuple          # slices of the selection that the chunk fills
    local: list         # ranges of the positions inside the chunk, one per dimension


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    """Shape, chunks, blocks and dtype of an array, with the figures derived from them.

    Two layouts are equal when their shape, chunks, blocks and dtype are; the other
    fields follow from those four and are computed once, at construction.

    Parameters
    ----------
    shape, chunks, blocks : tuple of int
        The array's shape, chunk shape and block shape (checked by the caller:
        :func:`ndpack.storage.grid.decode_b2nd`, ``check_sizes``).
    dtype : numpy.dtype

    Attributes
    ----------
    ndim : int
    size : int
        Items of the array.
    ext_shape : tuple of int
        The shape rounded up to whole chunks.
    ext_chunks : tuple of int
        The chunk shape rounded up to whole blocks (a decoded chunk's shape).
    grid : tuple of int
        Chunks along each dimension.
    bgrid : tuple of int
        Blocks of a chunk along each dimension.
    nchunks, nblocks : int
        Chunks of the array; blocks of one chunk.
    chunk_items, block_items : int
        Items of one decoded chunk (padding included) and of one block.
    chunk_nbytes, blocksize : int
        Bytes of one decoded chunk and of one block.
    typesize : int
        The typesize written in chunk headers: the itemsize, or 1 for items over 255
        bytes (as C-Blosc2 writes them; then chunk items are bytes).
    stored_c_order : bool
        Whether a chunk's stored order (blocks one after another, each in C order)
        is the C order of the extended chunk: blocks ``(1, ..., 1, b, full, ...)``.
    """

    shape: tuple
    chunks: tuple
    blocks: tuple
    dtype: np.dtype
    ndim: int = dataclasses.field(init=False, compare=False, repr=False)
    size: int = dataclasses.field(init=False, compare=False, repr=False)
    ext_shape: tuple = dataclasses.field(init=False, compare=False, repr=False)
    ext_chunks: tuple = dataclasses.field(init=False, compare=False, repr=False)
    grid: tuple = dataclasses.field(init=False, compare=False, repr=False)
    bgrid: tuple = dataclasses.field(init=False, compare=False, repr=False)
    nchunks: int = dataclasses.field(init=False, compare=False, repr=False)
    nblocks: int = dataclasses.field(init=False, compare=False, repr=False)
    chunk_items: int = dataclasses.field(init=False, compare=False, repr=False)
    block_items: int = dataclasses.field(init=False, compare=False, repr=False)
    chunk_nbytes: int = dataclasses.field(init=False, compare=False, repr=False)
    blocksize: int = dataclasses.field(init=False, compare=False, repr=False)
    typesize: int = dataclasses.field(init=False, compare=False, repr=False)
    stored_c_order: bool = dataclasses.field(init=False, compare=False, repr=False)
    nd: tuple = dataclasses.field(init=False, compare=False, repr=False)

    def __post_init__(self):
        shape, chunks, blocks = (tuple(int(x) for x in t)
                                 for t in (self.shape, self.chunks, self.blocks))
        dtype = np.dtype(self.dtype)
        nd = len(shape)
        ext_chunks = ext_shape(chunks, blocks)
        grid = tuple(-(-s // c) if c else 0 for s, c in zip(shape, chunks))
        bgrid = tuple(e // b if b else 0 for e, b in zip(ext_chunks, blocks))
        itemsize = dtype.itemsize
        # the blocked layout of a chunk is its C order when the blocks are
        # (1, ..., 1, b, full, ..., full): then a fully covered chunk decodes in place
        k = next((d for d, b in enumerate(blocks) if b != 1), nd)
        corder = all(blocks[d] == ext_chunks[d] for d in range(k + 1, nd))
        values = {
            "shape": shape, "chunks": chunks, "blocks": blocks, "dtype": dtype,
            "ndim": nd, "size": prod(shape), "ext_shape": ext_shape(shape, chunks),
            "ext_chunks": ext_chunks, "grid": grid, "bgrid": bgrid,
            "nchunks": prod(grid), "nblocks": prod(bgrid),
            "chunk_items": prod(ext_chunks), "block_items": prod(blocks),
            "chunk_nbytes": prod(ext_chunks) * itemsize, "blocksize": prod(blocks) * itemsize,
            "typesize": itemsize if 1 <= itemsize <= 255 else 1, "stored_c_order": corder,
            # what C-Blosc2's n-d codecs and filters read (ndpack.chunks.nd_layout)
            "nd": (ext_chunks, blocks) if nd and all(blocks) else None,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)      # (frozen: set once, here)

    # --- the b2nd metalayer --------------------------------------------------------------
    @classmethod
    def from_b2nd(cls, raw) -> Layout:
        """The layout a ``b2nd`` metalayer describes (:class:`FormatError` if invalid)."""
        return cls(*decode_b2nd(raw))

    def to_b2nd(self) -> bytes:
        """The ``b2nd`` metalayer of this layout."""
        return encode_b2nd(self.shape, self.chunks, self.blocks, self.dtype)

    def resized(self, shape) -> Layout:
        """The same chunks, blocks and dtype with another shape."""
        return Layout(tuple(shape), self.chunks, self.blocks, self.dtype)

    def picked(self, axes) -> Layout:
        """The layout whose axis ``i`` is this one's axis ``axes[i]``, or a new axis of
        length 1 (chunk and block 1) where ``axes[i]`` is None.  The axes named must
        increase and the others have length, chunk and block 1 (the caller checks:
        :func:`ndpack.storage.ndview.view_layout`); such axes change neither the chunk
        order nor the block order nor the item order in a block, so every figure that
        is not per axis is this layout's (nothing is recomputed: a view costs
        microseconds).

        Examples
        --------
        >>> lay = Layout((5, 1, 6), (2, 1, 4), (1, 1, 2), np.dtype("i4"))
        >>> p = lay.picked((None, 0, 2))
        >>> p.shape, p.grid, p.bgrid, p.nchunks, p == Layout((1, 5, 6), (1, 2, 4),
        ...                                                   (1, 1, 2), np.dtype("i4"))
        ((1, 5, 6), (1, 3, 2), (1, 2, 2), 6, True)
        """
        new = object.__new__(Layout)
        for name in ("shape", "chunks", "blocks", "ext_shape", "ext_chunks", "grid",
                     "bgrid"):
            t = getattr(self, name)
            object.__setattr__(new, name, tuple(1 if a is None else t[a] for a in axes))
        for name in ("dtype", "size", "nchunks", "nblocks", "chunk_items", "block_items",
                     "chunk_nbytes", "blocksize", "typesize", "stored_c_order", "nd"):
            object.__setattr__(new, name, getattr(self, name))   # (nd: the stored blocks')
        object.__setattr__(new, "ndim", len(axes))
        return new

    # --- chunk and block numbers ---------------------------------------------------------
    def chunk_number(self, coords) -> int:
        """The number (C order over the chunk grid) of the chunk at `coords`."""
        n = 0
        for c, g in zip(coords, self.grid):
            n = n * g + c
        return n

    def chunk_coords(self, nchunk: int) -> tuple:
        """The grid coordinates of chunk `nchunk`."""
        return tuple(int(c) for c in np.unravel_index(nchunk, self.grid))

    def region(self, coords) -> tuple:
        """The region of the array (a tuple of slices) the chunk at `coords` holds."""
        return tuple(slice(c * cs, min((c + 1) * cs, s))
                     for c, cs, s in zip(coords, self.chunks, self.shape))

    def all_coords(self):
        """The coordinates of every chunk, in C order (an iterator)."""
        return itertools.product(*[range(g) for g in self.grid])

    def block_numbers(self, bids) -> list:
        """Block numbers (C order over a chunk's block grid) of the product of the
        per-dimension block ids `bids`, in C order."""
        bgrid = self.bgrid
        if prod(len(ids) for ids in bids) >= 16:           # vectorized: same order
            flat = np.zeros(1, np.int64)
            for ids, g in zip(bids, bgrid):
                flat = (flat[:, None] * g + np.asarray(ids, np.int64)[None, :]).reshape(-1)
            return flat.tolist()
        numbers = []
        for combo in itertools.product(*bids):
            n = 0
            for b, g in zip(combo, bgrid):
                n = n * g + b
            numbers.append(n)
        return numbers

    def parts(self, ranges):
        """Yield a :class:`ChunkPart` for every chunk a selection touches: `ranges`
        one range per dimension."""
        per_dim = [list(dim_parts(r, c)) for r, c in zip(ranges, self.chunks)]
        for combo in itertools.product(*per_dim):
            n = self.chunk_number([p[0] for p in combo])
            yield ChunkPart(n, tuple(slice(p[1], p[2]) for p in combo), [p[3] for p in combo])

    # --- what a stored chunk means -------------------------------------------------------
    def special_value(self, chunk):
        """The scalar (0-d array of the dtype) a special chunk stands for (zeros, NaN, a
        repeated value), or None for a chunk holding data."""
        code = special_code(chunk)
        dtype = self.dtype
        if code in (SpecialValue.ZERO, SpecialValue.UNINIT):
            return np.zeros((), dtype)
        if code == SpecialValue.NAN and dtype.kind == "f" and dtype.itemsize in (4, 8):
            return np.full((), np.nan, dtype)
        if code == SpecialValue.VALUE:
            raw = bytes(chunk[32:])
            if len(raw) == dtype.itemsize:
                return np.frombuffer(raw, dtype).reshape(())
        return None
