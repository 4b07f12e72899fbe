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
configuration -- zstd by our C core (:func:`ndpack.codecs.zstd_frame_compress`: the
frame numcodecs writes, content size in its header, checksum as configured) -- (zarr
reads it back with its own pipeline) and handed to the store's own
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
import math
import os
import sys
import zlib

import numpy as np

from ndpack.codecs import Codec, CParams, Filter, get_nthreads, zstd_frame_compress
from ndpack.engine.run.h5read import BLOSC2_FILTER
from ndpack.engine.run.workers import buffers, submit, workers
from ndpack.resources import memory_limit
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
    order by the calling thread.

    Encoding goes on while the caller computes its next region: a region of one chunk
    (25 MB zarr chunks: one per region) no longer waits for its encoding (measured:
    ``evaluate("a*2 + b", out=zarr)`` with zstd, 8 chunks of 25 MB, 1422 -> 1039 ms in
    one process on a loaded 2-core VM, zarr's own 1686 ms).  The chunks of a region are copied into the engine's
    pooled buffers first (the caller may reuse `values`), at most
    :meth:`_window` in flight.  Everything is stored by the time the write that holds
    the array's last chunk returns (the engine writes in C order), or :meth:`flush`.
    """

    kind = ""
    chunks: tuple
    shape: tuple
    dtype: np.dtype
    fill = None

    def write(self, region: tuple, values: np.ndarray) -> None:
        """Store `values` for `region`, which starts on chunk boundaries and ends on
        them or at the array's edge."""
        values = np.asarray(values, self.dtype)
        ranges = [range(s.start // c, -(-s.stop // c)) for s, c in zip(region, self.chunks)]
        coords = list(itertools.product(*ranges))
        nthreads = max(1, get_nthreads())
        pending = self.__dict__.setdefault("pending", collections.deque())
        pool = workers(nthreads) if nthreads > 1 and self.encodes else None
        window = self._window(nthreads)
        grid = tuple(-(-n // c) for n, c in zip(self.shape, self.chunks))
        for cc in coords:
            origin = tuple(i * c for i, c in zip(cc, self.chunks))
            part = values[tuple(slice(o - s.start, min(o + c, n) - s.start)
                                for o, c, n, s in zip(origin, self.chunks, self.shape,
                                                      region))]
            if pool is None:
                self._drain(0)
                self._store(cc, origin, self._encode(self._padded(part)))
                continue
            raw = buffers.take(self.dtype.itemsize * math.prod(self.chunks))
            pending.append((cc, origin, submit(pool, self._encode_pooled,
                                               self._padded(part, raw), raw)))
            self._drain(window)
            if all(i == g - 1 for i, g in zip(cc, grid)):
                self.last = True             # the last chunk: no write comes after
        self._drain(0 if getattr(self, "last", False) else window)

    def flush(self) -> None:
        """Store every chunk still being encoded."""
        self._drain(0)

    def target(self, region: tuple) -> np.ndarray:
        """A reused buffer (the engine's pool) for the values of `region`, valid until
        the next call: the engine computes each region there instead of into fresh
        pages (200 MB of them per 200 MB written), as :meth:`write` copies or stores
        what it needs before it returns.  :meth:`release` gives it back."""
        shape = tuple(s.stop - s.start for s in region)
        nbytes = math.prod(shape) * self.dtype.itemsize
        raw = self.__dict__.get("region_raw")
        if raw is None or raw.nbytes < nbytes:
            self.release()
            raw = self.region_raw = buffers.take(nbytes)
        return raw[:nbytes].view(self.dtype).reshape(shape)

    def release(self) -> None:
        """Give the buffer of :meth:`target` back to the pool."""
        raw = self.__dict__.pop("region_raw", None)
        if raw is not None:
            buffers.give(raw)

    def _window(self, nthreads: int) -> int:
        """Chunks encoded at once: two per thread, in an eighth of the memory limit."""
        nbytes = self.dtype.itemsize * math.prod(self.chunks)
        return max(1, min(2 * nthreads, memory_limit() // 8 // max(1, nbytes)))

    def _drain(self, keep: int) -> None:
        """Store finished chunks in order, waiting while more than `keep` are pending;
        then, none left, the stores left pending."""
        pending = self.__dict__.setdefault("pending", collections.deque())
        while pending and (len(pending) > keep or pending[0][2].done()):
            cc, origin, fut = pending.popleft()
            self._store(cc, origin, fut.result())
        if not pending:
            self._flush()

    def _encode_pooled(self, part: np.ndarray, raw: np.ndarray):
        try:
            return self._encode(part)
        finally:
            buffers.give(raw)

    encodes = True

    def _flush(self) -> None:
        """Finish the stores `_store` left pending (none by default)."""

    def _padded(self, part: np.ndarray, raw: np.ndarray | None = None) -> np.ndarray:
        """The chunk's values, padded with the fill value at the edge, C-contiguous
        (copied into `raw`, a byte buffer, when given)."""
        if part.shape == self.chunks and raw is None:
            return np.ascontiguousarray(part)
        full = np.empty(self.chunks, self.dtype) if raw is None else \
            raw[:self.dtype.itemsize * math.prod(self.chunks)].view(self.dtype).reshape(
                self.chunks)
        if part.shape != self.chunks:
            full[...] = self.fill
        full[tuple(slice(0, n) for n in part.shape)] = part
        return full

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
        import numcodecs                     # numcodecs' zstd frames, from our C core
        self.zstd = (codec.level, codec.checksum) if type(codec) is numcodecs.Zstd else None

    def _encode(self, part: np.ndarray):
        if not self.write_empty and _all_fill(part, self.fill):
            return None                          # zarr stores no chunk of fill values
        if self.codec is None:
            return part.tobytes()
        if self.zstd is not None:            # the C core: a reused context, GIL released
            return zstd_frame_compress(part, *self.zstd)
        return bytes(self.codec.encode(part))

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


def _all_fill(part: np.ndarray, fill: np.ndarray, step: int = 1 << 15) -> bool:
    """Whether every value of `part` is `fill` (NaN matching NaN), by slabs of `step`
    values: the first slab that differs ends it, and no temporary the size of the chunk
    is made (``np.array_equal(..., equal_nan=True)`` made four: 0.2-0.5 ms per MB of
    fresh pages each).

    Examples
    --------
    >>> _all_fill(np.full(70_000, np.nan), np.asarray(np.nan)), _all_fill(np.zeros(3), np.asarray(1.0))
    (True, False)
    """
    flat, nan = part.reshape(-1), part.dtype.kind in "fc"
    for i in range(0, flat.size, step):
        piece = flat[i:i + step]
        if not np.array_equal(piece, np.broadcast_to(fill, piece.shape), equal_nan=nan):
            return False
    return True


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
