"""ndpack as one of xarray's chunk managers (the ``xarray.chunkmanagers`` entry point
``ndpack``).

xarray takes any duck array with a ``chunks`` attribute for a chunked array (dask's,
cubed's) and asks the chunk manager that recognises it to turn it into NumPy
(``to_numpy``, ``as_numpy``, ``compute`` of a result, building an index).  An NDArray
has ``chunks`` (python-blosc2's name, ints per axis), so without a manager those calls
fail with "Could not find a Chunk Manager".  This one recognises NDArrays, reports their
chunks in xarray's normalized form (one tuple of sizes per axis), computes them to NumPy
(decoding chunk by chunk into one output), and makes NDArrays from other arrays
(``ds.chunk(..., chunked_array_type="ndpack")``).  Graph operations (``map_blocks``,
``apply_gufunc``, ``blockwise``) are dask's: they raise NotImplementedError here.

With dask installed, xarray keeps dask as its default manager (``chunks={}`` gives dask
arrays); ndpack is chosen only for NDArrays or when asked by name.

Examples
--------
>>> import numpy as np, ndpack
>>> m = NdpackChunkManager()
>>> a = ndpack.asarray(np.arange(10.0), chunks=(4,))
>>> m.is_chunked_array(a), m.chunks(a)
(True, ((4, 4, 2),))
>>> [type(x).__name__ for x in m.compute(a, a * 2)]
['ndarray', 'ndarray']
>>> m.from_array(np.ones((5, 5)), chunks=((2, 2, 1), (5,))).chunks
(2, 5)
"""

from __future__ import annotations

import numpy as np

from ndpack.engine.expr.lazyexpr import LazyExpr
from ndpack.errors import ParameterError
from ndpack.storage.constructors import asarray
from ndpack.storage.ndarray import NDArray

try:        # xarray's plugin: without xarray nothing loads it
    from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint
except ImportError:                                 # pragma: no cover
    ChunkManagerEntrypoint = object

__all__ = ["NdpackChunkManager", "normalized_chunks", "regular_chunks"]


def normalized_chunks(shape, chunks) -> tuple:
    """xarray's (dask's) form of regular chunks: per axis the sizes of its chunks."""
    out = []
    for n, c in zip(shape, chunks):
        c = max(int(c), 1)
        sizes = (c,) * (n // c) + ((n % c,) if n % c else ())
        out.append(sizes or (0,))
    return tuple(out)


def regular_chunks(shape, chunks) -> tuple:
    """One chunk size per axis from xarray's chunks argument (ints, tuples of sizes of
    which all but the last are equal, -1/None for the whole axis, or a dict by axis)."""
    if isinstance(chunks, dict):
        chunks = tuple(chunks.get(i, -1) for i in range(len(shape)))
    if not isinstance(chunks, (tuple, list)):
        chunks = (chunks,) * len(shape)
    if len(chunks) != len(shape):
        raise ParameterError(f"chunks {chunks!r} do not match the shape {shape}")
    out = []
    for n, c in zip(shape, chunks):
        if c is None or c == -1 or c == "auto":
            out.append(max(n, 1))
        elif isinstance(c, (tuple, list)):
            sizes = [int(s) for s in c]
            if len(set(sizes[:-1])) > 1 or (len(sizes) > 1 and sizes[-1] > sizes[0]):
                raise ParameterError(f"ndpack arrays have regular chunks; {tuple(c)} are "
                                     "not (all sizes equal but a smaller last one)")
            out.append(max(sizes[0], 1) if sizes else 1)
        else:
            out.append(max(int(c), 1))
    return tuple(out)


class NdpackChunkManager(ChunkManagerEntrypoint):
    """xarray's chunk manager for NDArrays: chunks, compute to NumPy, from_array."""

    def __init__(self):
        self.array_cls = NDArray

    def is_chunked_array(self, data) -> bool:
        return isinstance(data, NDArray)

    def chunks(self, data) -> tuple:
        return normalized_chunks(data.shape, data.chunks)

    def normalize_chunks(self, chunks, shape=None, limit=None, dtype=None,
                         previous_chunks=None) -> tuple:
        if shape is None:
            raise ParameterError("normalize_chunks needs the shape")
        if isinstance(chunks, tuple) and all(isinstance(c, tuple) for c in chunks):
            return chunks
        if chunks == "auto" and previous_chunks is not None:
            chunks = tuple(c[0] if isinstance(c, tuple) else c for c in previous_chunks)
        return normalized_chunks(shape, regular_chunks(shape, chunks))

    def from_array(self, data, chunks, **kwargs) -> NDArray:
        shape = tuple(data.shape)
        return asarray(data, chunks=regular_chunks(shape, chunks), **{
            k: v for k, v in kwargs.items() if k in ("blocks", "cparams", "urlpath")})

    def rechunk(self, data, chunks, **kwargs) -> NDArray:
        return asarray(data, copy=True, chunks=regular_chunks(tuple(data.shape), chunks))

    def compute(self, *data, **kwargs) -> tuple:
        return tuple(np.asarray(d[()]) if isinstance(d, (NDArray, LazyExpr)) else d
                     for d in data)

    def apply_gufunc(self, *args, **kwargs):
        raise NotImplementedError("ndpack arrays run in ndpack's engine, not as task "
                                  "graphs: open with chunks={} for dask's apply_gufunc")
