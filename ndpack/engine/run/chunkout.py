"""Direct writers: a foreign output written a whole chunk at a time, encoded on our threads.

``dataset[region] = values`` on an HDF5 dataset compresses on one thread under the
GIL, and a region that covers part of a chunk makes HDF5 decompress and recompress
the whole chunk.  For HDF5 datasets whose chunks ndpack can encode itself, a *chunk
writer* takes regions made of whole chunks of the dataset (the engine plans them on
the dataset's own grid), encodes each chunk on the engine's workers and stores it
with ``write_direct_chunk``, in order:

* no filter: the chunk's bytes;
* deflate alone: a zlib stream at the dataset's level (what HDF5's deflate filter
  stores);
* the Blosc2 filter (HDF5 filter 32026, hdf5plugin's and PyTables' layout; PyTables
  ``CArray``/``EArray`` through its ``write_chunk``): a Blosc2
  frame per chunk -- a b2nd array of the chunk's shape when it has 2 or more
  dimensions, else a super-chunk of one chunk -- with the codec, level and shuffle
  of the filter's parameters, so h5py with hdf5plugin, PyTables and ndpack's direct
  reader all read it back.

Zarr arrays (formats 2 and 3) of any writable store, regular grid, C order, no
filter or sharding, with no compressor, Blosc, zstd, gzip or zlib get the same: each
chunk is encoded on the workers with numcodecs' codec of the array's exact
configuration (zarr reads it back with its own pipeline) and handed to the store's own
``set``, several chunks awaited together; a chunk equal to the fill value is not
stored (zarr's ``write_empty_chunks=False``, its default) and an old one is deleted.

Chunks at the edge are padded with the fill value (HDF5 and zarr store whole chunks).
:func:`chunk_writer` returns None for anything else (other filters and codecs, other
layouts, byte orders NumPy does not share): the caller then writes regions of whole
chunks with ``out[region] = values``.  ``WRITES`` counts the chunks written, by kind.

Examples
--------
>>> import os, tempfile, numpy as np, h5py
>>> path = os.path.join(tempfile.mkdtemp(), "o.h5")
>>> f = h5py.File(path, "w")
>>> d = f.create_dataset("o", shape=(5, 4), dtype="f8", chunks=(2, 4), compression="gzip")
>>> w = chunk_writer(d)
>>> w.write((slice(0, 4), slice(0, 4)), np.arange(16.0).reshape(4, 4))
>>> w.write((slice(4, 5), slice(0, 4)), np.full((1, 4), -1.0))
>>> d[3:].tolist()
[[12.0, 13.0, 14.0, 15.0], [-1.0, -1.0, -1.0, -1.0]]
>>> f.close()
"""

from __future__ import annotations

import collections
import itertools
import os
import sys
import zlib

import numpy as np

from ndpack.codecs import Codec, CParams, Filter, get_nthreads
from ndpack.engine.run.foreign import BLOSC2_FILTER
from ndpack.engine.run.workers import submit, workers
from ndpack.storage.constructors import asarray
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.storage.schunk import SChunk

__all__ = ["WRITES", "chunk_writer"]

WRITES: collections.Counter = collections.Counter()    # chunks written directly, by kind


def chunk_writer(out):
    """A direct chunk writer for the foreign output `out`, or None when none applies.

    Examples
    --------
    >>> import numpy as np
    >>> chunk_writer(np.zeros(3)) is None
    True
    """
    mod = type(out).__module__ or ""
    if mod.startswith("h5py") and "h5py" in sys.modules:
        make = _H5ChunkWriter.make
    elif mod.startswith("zarr") and "zarr" in sys.modules:
        make = _ZarrChunkWriter.make
    elif mod.startswith("tables") and "tables" in sys.modules:
        make = _TablesChunkWriter.make
    else:
        return None
    try:
        return make(out)
    except Exception:            # noqa: BLE001 -- unexpected metadata: the general path
        return None


class _ChunkWriter:
    """Regions of whole chunks split into chunks, encoded on the workers, stored in
    order by the calling thread."""

    kind = ""
    chunks: tuple
    shape: tuple
    dtype: np.dtype

    def write(self, region: tuple, values: np.ndarray) -> None:
        """Store `values` for `region`, which starts on chunk boundaries and ends on
        them or at the array's edge."""
        values = np.asarray(values, self.dtype)
        ranges = [range(s.start // c, -(-s.stop // c)) for s, c in zip(region, self.chunks)]
        coords = list(itertools.product(*ranges))
        nthreads = max(1, get_nthreads())
        pool = workers(nthreads) if nthreads > 1 and len(coords) > 1 and self.encodes \
            else None
        pending = collections.deque()
        for cc in coords:
            origin = tuple(i * c for i, c in zip(cc, self.chunks))
            part = values[tuple(slice(o - s.start, min(o + c, n) - s.start)
                                for o, c, n, s in zip(origin, self.chunks, self.shape,
                                                      region))]
            if pool is None:
                self._store(cc, origin, self._encode(self._padded(part)))
                continue
            pending.append((cc, origin, submit(pool, self._encode_padded, part)))
            if len(pending) > 2 * nthreads:
                c0, o0, fut = pending.popleft()
                self._store(c0, o0, fut.result())
        while pending:
            c0, o0, fut = pending.popleft()
            self._store(c0, o0, fut.result())
        self._flush()

    encodes = True

    def _flush(self) -> None:
        """Finish the stores `_store` left pending (none by default)."""

    def _encode_padded(self, part):
        return self._encode(self._padded(part))

    def _padded(self, part: np.ndarray) -> np.ndarray:
        """The chunk's values, padded with the fill value at the edge, C-contiguous."""
        if part.shape != self.chunks:
            full = np.empty(self.chunks, self.dtype)
            full[...] = self.fill
            full[tuple(slice(0, n) for n in part.shape)] = part
            part = full
        return np.ascontiguousarray(part)

    def _encode(self, part: np.ndarray):
        raise NotImplementedError

    def _store(self, coords: tuple, origin: tuple, data) -> None:
        raise NotImplementedError


class _H5ChunkWriter(_ChunkWriter):
    """Whole chunks of an HDF5 dataset, encoded by us and stored directly."""

    kind = "h5py"

    @classmethod
    def make(cls, dset):
        import h5py
        if not isinstance(dset, h5py.Dataset) or not dset.shape or 0 in dset.shape \
                or dset.chunks is None or dset.file.mode == "r":
            return None
        dtype = np.dtype(dset.dtype)
        if dtype.kind not in "biufc" or dset.id.get_type() != h5py.h5t.py_create(dtype):
            return None                  # the file's bytes are not NumPy's layout
        dcpl = dset.id.get_create_plist()
        filters = [dcpl.get_filter(i) for i in range(dcpl.get_nfilters())]
        if not filters:
            return cls(dset, None, ())
        if len(filters) != 1 or filters[0][0] not in (h5py.h5z.FILTER_DEFLATE,
                                                      BLOSC2_FILTER):
            return None
        fid, _, values = filters[0][:3]
        return cls(dset, fid, tuple(values))

    def __init__(self, dset, fid, values: tuple):
        import h5py
        self.dset, self.fid, self.values = dset, fid, values
        self.chunks, self.shape = tuple(dset.chunks), tuple(dset.shape)
        self.dtype = np.dtype(dset.dtype)
        fill = dset.fillvalue
        self.fill = np.zeros((), self.dtype) if fill is None else np.asarray(fill, self.dtype)
        self.encodes = fid is not None          # raw chunks: nothing to encode
        if fid == h5py.h5z.FILTER_DEFLATE:
            self.level = int(values[0]) if values else 6
        elif fid == BLOSC2_FILTER:
            self._blosc2_params(values)

    def _blosc2_params(self, values: tuple) -> None:
        """The codec, level and shuffle of the filter's parameters: revision, block
        size, type size, chunk bytes, level, shuffle, codec[, rank, chunk shape]."""
        v = tuple(values) + (0,) * max(0, 7 - len(values))
        clevel, shuffle, code = int(v[4]) or 5, int(v[5]), int(v[6])
        if len(values) < 5:
            clevel, shuffle = 5, 1
        self.b2nd = len(self.chunks) > 1
        self.cparams = CParams(codec=Codec(code), clevel=clevel, filters=[Filter(shuffle)],
                               typesize=self.dtype.itemsize, nthreads=1)
        if self.b2nd:
            self.blocks = compute_chunks_blocks(self.chunks, chunks=self.chunks,
                                                dtype=self.dtype)[1]

    def _store(self, coords: tuple, origin: tuple, data) -> None:
        self.dset.id.write_direct_chunk(origin, data, 0)
        WRITES[self.kind] += 1

    def _encode(self, part: np.ndarray):
        """The stored bytes of one chunk from its (padded) values."""
        if self.fid is None:             # its bytes are the chunk: no copy
            return part.reshape(-1).view(np.uint8)
        if self.fid == BLOSC2_FILTER:
            if self.b2nd:
                return asarray(part, chunks=self.chunks, blocks=self.blocks,
                               cparams=self.cparams).to_cframe()
            return SChunk(chunksize=part.nbytes, data=part.tobytes(),
                          cparams=self.cparams).to_cframe()
        return zlib.compress(part.tobytes(), self.level)


class _TablesChunkWriter(_H5ChunkWriter):
    """Whole chunks of a PyTables ``CArray``/``EArray`` (no filter, or Blosc2 alone),
    stored with PyTables' ``write_chunk``."""

    kind = "tables"

    @classmethod
    def make(cls, arr):
        import tables
        if not isinstance(arr, tables.Array) or arr.chunkshape is None or not arr.shape \
                or 0 in arr.shape or arr._v_file.mode == "r":
            return None
        dtype, flt = np.dtype(arr.dtype), arr.filters
        order = {"little": "<", "big": ">"}.get(arr.byteorder, "=")
        if dtype.kind not in "biufc" or (dtype.newbyteorder(order) != dtype
                                          and dtype.itemsize > 1) or flt.fletcher32:
            return None
        if not flt.complevel:
            return cls(arr, None, ())
        lib = flt.complib or ""
        if not lib.startswith("blosc2"):
            return None
        codec = Codec[(lib.split(":")[1] if ":" in lib else "blosclz").upper()]
        shuffle = 2 if flt.bitshuffle else int(bool(flt.shuffle))
        return cls(arr, BLOSC2_FILTER, (1, 0, dtype.itemsize, 0, flt.complevel, shuffle,
                                        int(codec)))

    def __init__(self, arr, fid, values: tuple):
        self.dset, self.fid, self.values = arr, fid, values
        self.chunks, self.shape = tuple(arr.chunkshape), tuple(arr.shape)
        self.dtype = np.dtype(arr.dtype)
        self.fill = np.asarray(arr.atom.dflt, self.dtype)
        self.encodes = fid is not None
        if fid == BLOSC2_FILTER:
            self._blosc2_params(values)

    def _store(self, coords: tuple, origin: tuple, data) -> None:
        self.dset.write_chunk(origin, data, 0)
        WRITES[self.kind] += 1


class _ZarrChunkWriter(_ChunkWriter):
    """Chunks of a zarr array encoded with numcodecs, stored through the array's store.

    The encoded chunks go to ``store.set`` (``store.delete`` for chunks of fill
    values) in batches of up to ``2 * nthreads`` chunks awaited together, so stores
    that write in parallel (local files, fsspec) do; a ``LocalStore`` writes each
    file atomically.
    """

    kind = "zarr"

    @classmethod
    def make(cls, arr):
        import zarr
        if not isinstance(arr, zarr.Array) or not arr.shape or 0 in arr.shape \
                or arr.read_only or arr.fill_value is None \
                or not getattr(arr.store, "supports_writes", False):
            return None
        meta = arr.metadata
        if meta.zarr_format == 2:
            codec = _v2_codec(meta)
        elif meta.zarr_format == 3:
            codec = _v3_codec(meta, zarr)
        else:
            return None
        if codec is False:
            return None
        raw = np.dtype(meta.dtype.to_native_dtype()) if meta.zarr_format == 2 else \
            _v3_raw(meta)
        if raw is None or raw.kind not in "biufc" or \
                raw.newbyteorder("=") != np.dtype(arr.dtype).newbyteorder("="):
            return None
        empty = getattr(getattr(arr, "_async_array", None), "config", None)
        return cls(arr, codec, raw, getattr(empty, "write_empty_chunks", False))

    def __init__(self, arr, codec, raw: np.dtype, write_empty: bool):
        from zarr.core.buffer import default_buffer_prototype
        self.arr, self.codec, self.dtype = arr, codec, raw
        self.chunks, self.shape = tuple(arr.chunks), tuple(arr.shape)
        self.fill = np.asarray(arr.fill_value).astype(raw)
        self.store = arr.store
        # a store that cannot delete keeps chunks of fill values (zarr reads them back)
        self.write_empty = write_empty or not getattr(arr.store, "supports_deletes", False)
        self.prefix = arr.store_path.path.rstrip("/")
        self.key = arr.metadata.encode_chunk_key
        self.buffer = default_buffer_prototype().buffer
        self.batch: list = []
        self.batch_len = 2 * max(1, get_nthreads())

    def _encode(self, part: np.ndarray):
        if not self.write_empty and np.array_equal(
                part, np.broadcast_to(self.fill, part.shape),
                equal_nan=self.dtype.kind in "fc"):
            return None                          # zarr stores no chunk of fill values
        return part.tobytes() if self.codec is None else bytes(self.codec.encode(part))

    def _store(self, coords: tuple, origin: tuple, data) -> None:
        key = self.key(coords)
        self.batch.append((f"{self.prefix}/{key}" if self.prefix else key, data))
        if len(self.batch) >= self.batch_len:
            self._flush()

    def _flush(self) -> None:
        import asyncio
        from zarr.core.sync import sync
        batch, self.batch = self.batch, []
        if not batch:
            return

        async def put(key, data):
            if data is None:
                await self.store.delete(key)     # absent keys are no error for zarr
            else:
                await self.store.set(key, self.buffer.from_bytes(data))

        async def put_all():
            await asyncio.gather(*(put(k, d) for k, d in batch))

        sync(put_all())
        WRITES[self.kind] += len(batch)


def _v2_codec(meta):
    """numcodecs' codec of a zarr v2 array we can write (None: no compressor), or
    False."""
    import numcodecs
    if meta.filters or meta.order != "C":
        return False
    comp = meta.compressor
    if comp is None:
        return None
    if type(comp) in (numcodecs.Zstd, numcodecs.Blosc, numcodecs.GZip, numcodecs.Zlib):
        return comp
    return False


def _v3_codec(meta, zarr):
    """numcodecs' codec equal to a zarr v3 array's codec chain, or False."""
    import numcodecs
    from zarr.core.chunk_grids import RegularChunkGrid
    codecs = tuple(meta.codecs)
    if meta.storage_transformers or not isinstance(meta.chunk_grid, RegularChunkGrid) \
            or not codecs or type(codecs[0]) is not zarr.codecs.BytesCodec or len(codecs) > 2:
        return False
    if len(codecs) == 1:
        return None
    c = codecs[1]
    if type(c) is zarr.codecs.ZstdCodec:
        return numcodecs.Zstd(level=c.level, checksum=c.checksum)
    if type(c) is zarr.codecs.GzipCodec:
        return numcodecs.GZip(level=c.level)
    if type(c) is zarr.codecs.BloscCodec:
        shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[
            getattr(c.shuffle, "value", c.shuffle)]
        if c.typesize is not None and c.typesize != meta.data_type.to_native_dtype().itemsize:
            return False
        return numcodecs.Blosc(cname=getattr(c.cname, "value", c.cname), clevel=c.clevel,
                               shuffle=shuffle, blocksize=c.blocksize or 0)
    return False


def _v3_raw(meta):
    """The dtype of a zarr v3 array's chunk bytes (its byte order), or None."""
    raw = np.dtype(meta.data_type.to_native_dtype())
    endian = tuple(meta.codecs)[0].endian
    if endian is not None and raw.itemsize > 1:
        raw = raw.newbyteorder("<" if getattr(endian, "value", endian) == "little" else ">")
    return raw
