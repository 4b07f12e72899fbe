"""HDF5 both ways: ``to_hdf5`` and ``from_hdf5`` with the Blosc2 filter, chunks copied.

An HDF5 dataset with the Blosc2 filter (HDF5 filter 32026, the layout hdf5plugin and
PyTables use) stores each chunk as a Blosc2 frame: for chunks of 2 or more dimensions a
b2nd array of the chunk's shape holding one chunk.  When an NDArray has the dataset's
chunk shape, each of its compressed chunks *is* such a chunk once wrapped in a frame,
so :func:`to_hdf5` copies them without decoding (and :func:`from_hdf5` copies them
back when every chunk of the dataset has the same block shape).  Anything else is
computed through the engine: ``evaluate(..., out=dataset)`` encodes whole chunks on
our threads (:mod:`ndpack.engine.run.chunkout`).

The dataset is created with the filter's parameters filled in (revision, block size,
type size, chunk bytes, level, shuffle, codec, rank, chunk shape), so h5py with
hdf5plugin, PyTables and HDF5 tools with the filter plugin read it; creating it does
not need the plugin (h5py's ``allow_unknown_filter``).

Examples
--------
>>> import os, tempfile, numpy as np, h5py, ndpack
>>> a = ndpack.asarray(np.arange(120.0).reshape(10, 12), chunks=(4, 6), blocks=(2, 6))
>>> f = h5py.File(os.path.join(tempfile.mkdtemp(), "a.h5"), "w")
>>> d = to_hdf5(a, f, "a")
>>> d.chunks, COPIED["to_hdf5"] >= 6
((4, 6), True)
>>> b = from_hdf5(d)
>>> b.chunks, b.blocks, bool((b[:] == a[:]).all())
((4, 6), (2, 6), True)
>>> f.close()
"""

from __future__ import annotations

import collections

import numpy as np

from ndpack.codecs import Codec, Filter, make_cparams
from ndpack.engine.api import evaluate, lazyexpr
from ndpack.engine.run.h5read import BLOSC2_FILTER
from ndpack.errors import ParameterError
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.storage.ndarray import NDArray, create
from ndpack.storage.schunk import schunk_from_cframe

__all__ = ["to_hdf5", "from_hdf5", "COPIED"]

COPIED: collections.Counter = collections.Counter()   # chunks copied without recoding


def _filter_values(shape_chunks: tuple, dtype: np.dtype, blocks: tuple, cparams) -> tuple:
    """The Blosc2 filter's parameters for a dataset with these chunks."""
    filters = [f for f in cparams.filters if f != Filter.NOFILTER]
    shuffle = int(filters[-1]) if filters and int(filters[-1]) in (0, 1, 2) else 0
    nbytes = int(np.prod(shape_chunks)) * dtype.itemsize
    values = (1, int(np.prod(blocks)) * dtype.itemsize, dtype.itemsize, nbytes,
              int(cparams.clevel), shuffle, int(cparams.codec))
    if len(shape_chunks) > 1:
        values += (len(shape_chunks),) + tuple(int(c) for c in shape_chunks)
    return values


def to_hdf5(x, group, name: str, *, chunks=None, cparams=None, **kwargs):
    """Store `x` (NDArray, LazyExpr or any array-like) as dataset `name` of the h5py
    `group`, Blosc2-filtered; returns the dataset.

    An NDArray of 2 or more dimensions stored with the dataset's chunks (the default:
    its own) and no new `cparams` is copied chunk by chunk, compressed as it is.
    Otherwise the values are computed and encoded on our threads with `cparams`
    (default: ``x``'s when it is an NDArray, else LZ4 level 5 with shuffle).
    `kwargs` go to ``group.create_dataset`` (``fillvalue``, ...).
    """
    if name in group:
        raise ParameterError(f"{group.name}/{name} exists already; delete it first")
    shape, dtype = tuple(x.shape), np.dtype(x.dtype)
    own = isinstance(x, NDArray)
    chunks = tuple(chunks) if chunks is not None else (x.chunks if own else None)
    if not shape:
        raise ParameterError("to_hdf5 stores arrays of one or more dimensions (HDF5 "
                             "chunks need them)")
    if chunks is None:
        chunks = compute_chunks_blocks(shape, dtype=dtype)[0]
    copy = own and cparams is None and len(shape) > 1 and chunks == x.chunks
    if own and cparams is None:
        params = x.schunk.cparams
    else:
        params = make_cparams(cparams if cparams is not None else
                              {"codec": Codec.LZ4, "clevel": 5}, typesize=dtype.itemsize)
    blocks = x.blocks if copy else compute_chunks_blocks(chunks, chunks=chunks,
                                                         dtype=dtype)[1]
    dset = group.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks,
                                compression=BLOSC2_FILTER, allow_unknown_filter=True,
                                compression_opts=_filter_values(chunks, dtype, blocks,
                                                                params), **kwargs)
    if not copy:
        evaluate(lazyexpr(x), out=dset)
        return dset
    one = create(chunks, dtype, chunks=chunks, blocks=x.blocks, cparams=params)
    lay = x.layout
    for n in range(lay.nchunks):
        one.write_encoded(0, x.get_chunk(n))
        origin = tuple(c * s for c, s in zip(lay.chunk_coords(n), chunks))
        dset.id.write_direct_chunk(origin, one.to_cframe(), 0)
        COPIED["to_hdf5"] += 1
    return dset


def from_hdf5(dset, urlpath=None, **kwargs) -> NDArray:
    """The h5py dataset `dset` as an NDArray (in memory, or at `urlpath`).

    A Blosc2-filtered dataset of 2 or more dimensions whose chunks are b2nd frames
    of one block shape becomes an NDArray of the same chunks with the compressed
    chunks copied (unallocated ones hold the fill value); anything else is read
    through the engine (direct chunk reads where they apply) with the dataset's
    chunks unless `kwargs` say otherwise.
    """
    frames = _b2nd_frames(dset) if not kwargs else None
    if frames is None:
        kwargs.setdefault("chunks", dset.chunks)
        return lazyexpr(dset).compute(urlpath=urlpath, **kwargs)
    blocks, cparams, chunks = frames
    out = create(tuple(dset.shape), np.dtype(dset.dtype), chunks=dset.chunks, blocks=blocks,
                 cparams=cparams, urlpath=urlpath, mode="w")
    fill = dset.fillvalue
    lay = out.layout
    empty = None
    for n in range(lay.nchunks):
        raw = chunks.get(tuple(c * s for c, s in zip(lay.chunk_coords(n), dset.chunks)))
        if raw is None:
            if empty is None:
                empty = out.encode_chunk(np.full(lay.ext_chunks, fill, out.dtype))
            out.write_encoded(n, empty)
        else:
            out.write_encoded(n, raw)
            COPIED["from_hdf5"] += 1
    return out


def _b2nd_frames(dset):
    """``(blocks, cparams, {origin: chunk bytes})`` when every stored chunk of `dset`
    is a one-chunk b2nd frame of the dataset's chunk shape, dtype size and one block
    shape; else None."""
    import h5py
    if not isinstance(dset, h5py.Dataset) or dset.chunks is None or len(dset.shape) < 2:
        return None
    dcpl = dset.id.get_create_plist()
    filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
    dtype = np.dtype(dset.dtype)
    if filters != [BLOSC2_FILTER] or dtype.kind not in "biufc" \
            or dset.id.get_type() != h5py.h5t.py_create(dtype):
        return None
    blocks = cparams = None
    found = {}
    for i in range(dset.id.get_num_chunks()):
        info = dset.id.get_chunk_info(i)
        if info.filter_mask & 1:
            return None
        _, raw = dset.id.read_direct_chunk(info.chunk_offset)
        try:
            schunk = schunk_from_cframe(raw, copy=True)
            arr = NDArray(schunk) if "b2nd" in schunk.meta else None
        except Exception:            # noqa: BLE001 -- not a frame we read: the general path
            return None
        if arr is None or schunk.nchunks != 1 or arr.shape != tuple(dset.chunks) \
                or arr.dtype.itemsize != dtype.itemsize or (blocks not in (None, arr.blocks)):
            return None
        blocks, cparams = arr.blocks, schunk.cparams
        found[tuple(info.chunk_offset)] = schunk.get_chunk(0)
    if blocks is None:
        return None
    return blocks, cparams, found
