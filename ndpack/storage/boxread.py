"""Box and point reads in one plan, in the C core (``csrc/format/boxread.c`` and
``pointread.c``).

The chunk-by-chunk path of :mod:`ndpack.storage.fancy` pays a few dozen NumPy
calls for each chunk; when the whole read is small (``a[1:9, col]``, ``a[1, col]``,
a few rows), that bookkeeping costs more than the decoding.  Here the C core plans
the whole key at once:

- along every dimension the sorted positions are mapped to the distinct (chunk,
  block) pairs they touch, and the touched blocks are the product of those;
- the touched blocks get slots of one buffer, chunk after chunk, and are decoded
  in parallel, each only up to its last wanted item (LZ4 and zlib streams stop
  there);
- the box is gathered from the slots in C order.

Points (``a[row, col]``, ``a[mask]``) are planned the same way: each distinct
block holding points is a slot; the slots are decoded batch by batch into one
buffer and the points copied out after each batch.

Python only fetches the touched chunks (from memory, or just their wanted blocks
from a file) and hands them over.  The functions take the array's
:class:`~ndpack.storage.ndread.ChunkIO` (its layout and super-chunk).
"""

from __future__ import annotations

import numpy as np

from ndpack._core import BoxRead, PointRead
from ndpack.chunks import in_layout
from ndpack.resources import scratch

#: Size of the buffer the blocks are decoded into (bytes): larger reads are done in
#: batches of chunks (a batch holds one chunk's touched blocks at least).
MAX_BYTES = 8 << 20

#: Most blocks one box read plans (the plan takes 16 bytes a block); reads touching
#: more go chunk by chunk in Python.
MAX_SLOTS = 1 << 22

#: Whether points (no other dimensions) are read by the C core (False: chunk by
#: chunk in Python, the general path, which the tests also run).
POINTS_IN_C = True


@in_layout
def read_box(io, units, out: np.ndarray, maps=None) -> bool:
    """``out[...] = array`` at the box of sorted distinct positions `units` (one int
    array per dimension) when it touches at most :data:`MAX_SLOTS` blocks; False
    (nothing done) otherwise.  With `maps` (one int array or None per dimension),
    `out` holds positions ``units[d][maps[d]]`` along dimension d instead (any
    order, repeats allowed; None: all in order), in C order (any shape of that size).

    >>> import ndpack
    >>> from ndpack.storage.ndread import ChunkIO
    >>> x = np.arange(60.).reshape(6, 10)
    >>> a = ndpack.asarray(x, chunks=(4, 5), blocks=(2, 5))
    >>> io = ChunkIO(a.layout, a.schunk)
    >>> out = np.empty((2, 3))
    >>> read_box(io, [np.array([1, 4]), np.array([0, 6, 9])], out)
    True
    >>> out.tolist()
    [[10.0, 16.0, 19.0], [40.0, 46.0, 49.0]]
    >>> out = np.empty((3, 2))
    >>> read_box(io, [np.array([1, 4]), np.array([0, 6, 9])], out,
    ...          [np.array([1, 1, 0]), np.array([2, 0])])
    True
    >>> out.tolist()
    [[49.0, 40.0], [49.0, 40.0], [19.0, 10.0]]
    """
    lay = io.layout
    if lay.ndim == 0 or out.size == 0 or not out.flags.c_contiguous \
            or out.dtype != lay.dtype:
        return False
    if maps is not None:
        maps = [None if m is None else np.ascontiguousarray(m, np.int64) for m in maps]
    plan = BoxRead.plan([np.ascontiguousarray(u, np.int64) for u in units],
                        lay.chunks, lay.blocks, lay.grid, lay.dtype.itemsize,
                        MAX_SLOTS, maps)
    if plan is None:
        return False
    nslots = min(plan.nslots, max(plan.chunk_slots, MAX_BYTES // lay.blocksize))
    plan.read(_chunks(io, plan), scratch(nslots * lay.blocksize, "box"),
              out.reshape(-1).view(np.uint8), io.nthreads)
    return True


@in_layout
def read_points(io, coords, out: np.ndarray) -> None:
    """``out[i] = array[coords[0][i], coords[1][i], ...]`` for points in any order
    (repeats allowed): their blocks are decoded batch by batch into a buffer of at
    most :data:`MAX_BYTES` (one block at least), each only up to its last point.

    >>> import ndpack
    >>> from ndpack.storage.ndread import ChunkIO
    >>> a = ndpack.asarray(np.arange(60.).reshape(6, 10), chunks=(4, 5), blocks=(2, 5))
    >>> out = np.empty(3)
    >>> read_points(ChunkIO(a.layout, a.schunk), [np.array([5, 0, 5]), np.array([9, 1, 9])],
    ...             out)
    >>> out.tolist()
    [59.0, 1.0, 59.0]
    """
    lay = io.layout
    plan = PointRead.plan([np.ascontiguousarray(c, np.int64) for c in coords],
                          lay.chunks, lay.blocks, lay.grid, lay.dtype.itemsize)
    nslots = min(plan.nslots, max(1, MAX_BYTES // lay.blocksize))
    plan.read(_chunks(io, plan), scratch(nslots * lay.blocksize, "box"),
              out.reshape(-1).view(np.uint8), io.nthreads)


def _chunks(io, plan) -> list:
    """The chunks a plan touches: whole from memory, or only their wanted blocks
    from a file."""
    numbers = plan.chunk_numbers
    if io.lazy_ok():
        chunks = []
        for k, n in enumerate(numbers):
            c = io.lazy_chunk(n, plan.blocks_of(k))       # (a reused buffer: copied)
            chunks.append(bytes(c) if c is not None else io.stored(n, partial=plan.blocks_of(k)))
        return chunks
    return [io.stored(n, partial=plan.blocks_of(k)) for k, n in enumerate(numbers)]
