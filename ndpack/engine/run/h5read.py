"""Direct reads of HDF5 datasets (h5py, PyTables): chunks read with ``os.preadv``
from our own descriptor and decoded on our threads (:mod:`.foreign` decides when).

Chunked datasets with no filter, deflate alone or the Blosc2 filter (HDF5 filter
32026, as hdf5plugin and PyTables write it: each chunk a Blosc2 frame, a b2nd array
for chunks of 2 or more dimensions, of which only the blocks a region touches are
decoded, by several threads when a region holds fewer chunks than threads), and
contiguous datasets (pieces of about 4 MiB of whole trailing rows).

Examples
--------
>>> import os, tempfile, numpy as np, h5py
>>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
>>> with h5py.File(path, "w") as f:
...     _ = f.create_dataset("x", data=np.arange(12.0).reshape(3, 4), chunks=(2, 2))
>>> with h5py.File(path, "r") as f:
...     read = H5Reader.make(f["x"])
...     dst = np.empty((2, 2))
...     read((slice(1, 3), slice(1, 3)), dst)
>>> dst.tolist()
[[5.0, 6.0], [9.0, 10.0]]
"""

from __future__ import annotations

import math
import os
import weakref
import zlib

import numpy as np

from ndpack.engine.run.gridread import Fallback, GridReader, bytes_of, is_numeric, pread_into
from ndpack.resources import scratch
from ndpack.storage.ndarray import NDArray
from ndpack.storage.schunk import schunk_from_cframe

BLOSC2_FILTER = 32026          # the HDF5 filter id of Blosc2 (hdf5plugin, PyTables)
_VIRTUAL_BYTES = 4 << 20       # pieces of a contiguous HDF5 dataset read at once



class H5Reader(GridReader):
    """Chunks of an HDF5 dataset read with ``os.preadv`` from our own descriptor."""

    kind = "h5py"

    @classmethod
    def make(cls, dset):
        import h5py
        if not isinstance(dset, h5py.Dataset) or not dset.shape or 0 in dset.shape:
            return None
        f = dset.file
        if f.driver != "sec2" or f.userblock_size or getattr(f, "swmr_mode", False) \
                or dset.is_virtual or dset.external:
            return None
        dtype = np.dtype(dset.dtype)
        if not is_numeric(dtype) or dset.id.get_type() != h5py.h5t.py_create(dtype):
            return None                  # the file's bytes are not NumPy's layout
        dcpl = dset.id.get_create_plist()
        if dcpl.fill_value_defined() == h5py.h5d.FILL_VALUE_UNDEFINED:
            return None
        layout = dcpl.get_layout()
        filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
        if layout == h5py.h5d.CHUNKED:
            if filters not in ([], [h5py.h5z.FILTER_DEFLATE], [BLOSC2_FILTER]):
                return None
        elif layout != h5py.h5d.CONTIGUOUS or filters:
            return None
        if f.mode != "r":
            f.flush()                    # what h5py cached is on disk before we read
        return cls(dset, layout == h5py.h5d.CHUNKED, filters[0] if filters else None)

    def __init__(self, dset, chunked: bool, codec: int | None):
        shape, dtype = tuple(dset.shape), np.dtype(dset.dtype)
        if chunked:
            chunks = tuple(dset.chunks)
        else:                            # contiguous: pieces of whole trailing rows
            chunks = _virtual_chunks(shape, dtype.itemsize)
            self.base = dset.id.get_offset()
        super().__init__(dset, chunks, dtype, dset.fillvalue)
        self.chunked, self.codec, self.info = chunked, codec, {}
        self.fd = os.open(dset.file.filename, os.O_RDONLY)
        weakref.finalize(self, os.close, self.fd)
        mine, theirs = os.fstat(self.fd), os.fstat(dset.file.id.get_vfd_handle())
        if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
            raise OSError("the file's name leads to another file")

    def _locate(self, coords):
        """``(offset or None, stored bytes, filter mask, stored shape)`` of a chunk."""
        origin = tuple(i * c for i, c in zip(coords, self.chunks))
        if not self.chunked:
            stored = tuple(min(c, n - o) for c, n, o in zip(self.chunks, self.shape, origin))
            if self.base is None:
                return None, 0, 0, stored
            flat = int(np.ravel_multi_index(origin, self.shape))
            return self.base + flat * self.raw.itemsize, math.prod(stored) * self.raw.itemsize, \
                0, stored
        got = self.info.get(coords)
        if got is None:
            got = self.info[coords] = self.arr.id.get_chunk_info_by_coord(origin)
        return got.byte_offset, got.size, got.filter_mask, self.chunks

    def load(self, coords, local, dstv, nthreads: int = 1) -> None:
        offset, size, mask, stored = self._locate(coords)
        if offset is None:
            dstv[...] = self.fill
            return
        nbytes = math.prod(stored) * self.raw.itemsize
        if self.codec == BLOSC2_FILTER and not mask & 1:
            src = scratch(size, "foreign-packed")
            pread_into(self.fd, memoryview(src), offset)
            _blosc2_frame_into(src, stored, local, dstv, self.raw, nthreads)
            return
        if self.codec is not None and not mask & 1:
            def inflate():
                src = scratch(size, "foreign-packed")
                pread_into(self.fd, memoryview(src), offset)
                data = zlib.decompress(src, 15, nbytes)
                if len(data) != nbytes:
                    raise Fallback("the chunk inflates to the wrong size")
                return np.frombuffer(data, self.raw).reshape(stored)
            whole = all(s.start == 0 and s.stop == n for s, n in zip(local, stored))
            dstv[...] = (inflate() if whole else self.decoded.get(coords, inflate))[local]
            return
        if size != nbytes:
            raise Fallback("an unfiltered chunk of an unexpected size")
        self._rows(offset, stored, local, dstv)

    def _rows(self, offset, stored, local, dstv) -> None:
        """The rows of the chunk's first dimension longer than 1 that `local` needs:
        straight into `dstv` when they are exactly its bytes, else via a buffer."""
        p = next((d for d, n in enumerate(stored) if n > 1), len(stored) - 1)
        row = math.prod(stored[p + 1:]) * self.raw.itemsize
        rows = local[p]
        start, n = offset + rows.start * row, (rows.stop - rows.start) * row
        whole = all(s.start == 0 and s.stop == m for s, m in zip(local[p + 1:], stored[p + 1:]))
        if whole and dstv.dtype == self.raw and dstv.flags.c_contiguous:
            pread_into(self.fd, bytes_of(dstv), start)
            return
        buf = scratch(n, "foreign-rows")
        inner = stored[p + 1:]
        isz, nrows = self.raw.itemsize, rows.stop - rows.start
        first = int(np.ravel_multi_index([s.start for s in local[p + 1:]], inner)) * isz \
            if inner else 0
        last = (int(np.ravel_multi_index([s.stop - 1 for s in local[p + 1:]], inner)) + 1) \
            * isz if inner else row
        if not whole and 2 * (last - first) <= row and nrows <= 256:
            # each row's span from its first to its last wanted item only (a product's
            # step cutting the chunk's inner dimensions: not the whole rows each step)
            mv = memoryview(buf)
            for r in range(nrows):
                pread_into(self.fd, mv[r * row + first:r * row + last], start + r * row + first)
        else:
            pread_into(self.fd, memoryview(buf), start)
        view = buf.view(self.raw).reshape((1,) * p + (nrows,) + inner)
        dstv[...] = view[(slice(None),) * (p + 1) + tuple(local[p + 1:])]


class TablesReader(H5Reader):
    """Chunks of a PyTables ``CArray``/``EArray`` (no filter, or Blosc2 alone), read
    with ``os.preadv`` at the offsets PyTables' ``chunk_info`` gives."""

    kind = "tables"

    @classmethod
    def make(cls, arr):
        import tables
        if not isinstance(arr, tables.Leaf) or not isinstance(arr, tables.Array) \
                or arr.chunkshape is None or not arr.shape or 0 in arr.shape:
            return None
        dtype, flt = np.dtype(arr.dtype), arr.filters
        order = {"little": "<", "big": ">"}.get(arr.byteorder, "=")
        if not is_numeric(dtype) or dtype.newbyteorder(order) != dtype \
                and dtype.itemsize > 1 or flt.fletcher32:
            return None
        if flt.complevel and not (flt.complib or "").startswith("blosc2"):
            return None
        if arr._v_file.mode != "r":
            arr._v_file.flush()
        return cls(arr, BLOSC2_FILTER if flt.complevel else None)

    def __init__(self, arr, codec):
        GridReader.__init__(self, arr, tuple(arr.chunkshape), np.dtype(arr.dtype),
                             np.asarray(arr.atom.dflt, arr.dtype))
        self.chunked, self.codec, self.info, self.base = True, codec, {}, None
        self.fd = os.open(arr._v_file.filename, os.O_RDONLY)
        weakref.finalize(self, os.close, self.fd)

    def _locate(self, coords):
        got = self.info.get(coords)
        if got is None:
            origin = tuple(i * c for i, c in zip(coords, self.chunks))
            got = self.info[coords] = self.arr.chunk_info(origin)
        return got.offset, got.size, got.filter_mask, self.chunks


def _blosc2_frame_into(src, stored: tuple, local: tuple, dstv: np.ndarray, raw,
                       nthreads: int = 1) -> None:
    """Box `local` of an HDF5 chunk stored by the Blosc2 filter (a Blosc2 frame in
    `src`: a b2nd array of the chunk's shape, or a super-chunk of one chunk for 1-d
    datasets) into `dstv` with `nthreads` decoding threads; a b2nd chunk decodes only
    the blocks `local` touches."""
    schunk = schunk_from_cframe(src)               # views of `src`: decoded right away
    nbytes = math.prod(stored) * raw.itemsize
    if "b2nd" in schunk.meta:
        arr = NDArray(schunk)
        if arr.shape != stored or arr.dtype.itemsize != raw.itemsize:
            raise Fallback("a Blosc2 frame of another shape or item size")
        if dstv.dtype == raw and dstv.flags.c_contiguous:
            arr.read_into(local, dstv.view(arr.dtype), nthreads)
        else:
            dstv[...] = arr[local].view(raw)
        return
    if schunk.nchunks != 1 or schunk.nbytes != nbytes:
        raise Fallback("a Blosc2 frame that is not one chunk of the dataset's")
    if dstv.dtype == raw and dstv.flags.c_contiguous and tuple(dstv.shape) == stored:
        if nthreads > 1:
            schunk.dparams = {"nthreads": nthreads}
        schunk.decompress_chunk(0, bytes_of(dstv))      # checked, straight into place
        return
    data = np.frombuffer(schunk.decompress_chunk(0), raw).reshape(stored)
    dstv[...] = data[local]


def _virtual_chunks(shape: tuple, itemsize: int) -> tuple:
    """Pieces of a C-ordered array that are each one run of bytes of about 4 MiB."""
    budget = max(1, _VIRTUAL_BYTES // itemsize)
    for d in range(len(shape)):
        inner = math.prod(shape[d + 1:])
        if inner <= budget:
            return (1,) * d + (max(1, min(shape[d], budget // inner)),) + tuple(shape[d + 1:])
    return (1,) * len(shape)
