"""Chunk writers of the shape operations (:mod:`ndpack.engine.ops.shape`): encoded
chunks stored in order while the next ones are encoded on the shape pool, and the
transposition of whole chunks behind ``permute_dims``.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(6.0).reshape(2, 3), chunks=(1, 3))
>>> out = ndpack.empty((3, 2), chunks=(3, 1))
>>> permute_chunks(a, out, (1, 0))[:].tolist()
[[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
"""

from __future__ import annotations

import itertools

import numpy as np

from ndpack.resources import pool, scratch
from ndpack.storage.grid import prod
from ndpack.storage.ndarray import NDArray

__all__ = ["encode_all", "in_order", "permute_chunks"]


def in_order(out):
    """``put(chunk, sums=None)``: store encoded chunks of `out` one after another, in C
    order (chunks copied from an array of the same layout, with the checksums their
    source recorded -- :meth:`NDArray.stored_chunk` --, or encoded by
    :meth:`NDArray.encode_chunk`: no validation copy)."""
    numbers = itertools.count()
    return lambda chunk, sums=None: out.write_encoded(next(numbers), chunk, sums)


def encode_all(out, one, items, nthreads: int) -> NDArray:
    """``one(item)`` (an encoded chunk of `out`) for each item of `items` on the
    pool's threads, stored in order; a window of ``nthreads + 1`` in flight."""
    put, executor, window = in_order(out), pool("shape", nthreads), []
    for item in items:
        window.append(executor.submit(one, item))
        if len(window) > nthreads:
            put(window.pop(0).result())
    for f in window:
        put(f.result())
    return out


def permute_chunks(arr, out, axes) -> NDArray:
    """Each output chunk from one source chunk: read into this thread's buffer,
    transposed into another (the output's extended chunk, padding zeroed) and
    compressed on the same thread, one C thread per call (chunks in parallel)."""
    lay = out.layout
    ext, dtype = lay.ext_chunks, out.dtype
    nbytes = prod(ext) * dtype.itemsize

    def one(n, nthreads=1):
        region = lay.region(lay.chunk_coords(n))      # output ranges of this chunk
        valid = tuple(r.stop - r.start for r in region)
        key = tuple(region[axes.index(a)] for a in range(len(axes)))
        src = scratch(prod(valid) * dtype.itemsize, "permute_src").view(dtype)
        src = src.reshape(tuple(r.stop - r.start for r in key))
        arr.read_into(key, src, nthreads)
        buf = scratch(nbytes, "permute_out").view(dtype).reshape(ext)
        if valid != ext:
            buf[...] = 0
        np.copyto(buf[tuple(slice(0, v) for v in valid)], src.transpose(axes))
        return out.encode_chunk(buf, nthreads)

    nthreads = max(1, min(out.dparams.nthreads, 4))
    if nthreads > 1 and lay.nchunks > 1:
        return encode_all(out, one, range(lay.nchunks), nthreads)
    put = in_order(out)
    for n in range(lay.nchunks):
        put(one(n, None))
    return out
