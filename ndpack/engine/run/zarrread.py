"""Direct reads of zarr arrays (formats 2 and 3) on a local store: chunk files read
and decoded on our threads (:mod:`.foreign` decides when).

Regular chunk grid, C order, no filters and no sharding, with no compressor or one of
zstd (our C core, straight into place), Blosc, gzip or zlib; missing chunk files read
as the fill value; whole zstd/Blosc/deflate chunks decoded ahead when a region holds
fewer chunks than threads.

Examples
--------
>>> import os, tempfile, numpy as np, zarr
>>> z = zarr.create_array(os.path.join(tempfile.mkdtemp(), "z.zarr"), shape=(4, 4),
...                       chunks=(2, 2), dtype="f8")
>>> z[...] = np.arange(16.0).reshape(4, 4)
>>> read = ZarrReader.make(z)
>>> dst = np.empty((2, 3))
>>> read((slice(1, 3), slice(0, 3)), dst)
>>> dst.tolist()
[[4.0, 5.0, 6.0], [8.0, 9.0, 10.0]]
"""

from __future__ import annotations

import math
import os
import zlib

import numpy as np

from ndpack.chunks import chunk_info, decompress2
from ndpack.codecs import zstd_frame_decompress
from ndpack.engine.run.gridread import Fallback, GridReader, bytes_of, is_numeric, pread_into
from ndpack.resources import scratch



class ZarrReader(GridReader):
    """Chunk files of a zarr array on a local store, decoded on the calling thread."""

    kind = "zarr"

    @classmethod
    def make(cls, arr):
        import zarr
        from zarr.storage import LocalStore
        if not isinstance(arr, zarr.Array) or not arr.shape or 0 in arr.shape \
                or not isinstance(arr.store, LocalStore):
            return None
        meta = arr.metadata
        if meta.zarr_format == 2:
            found = _v2_layout(meta)
        elif meta.zarr_format == 3:
            found = _v3_layout(meta, zarr)
        else:
            return None
        if found is None:
            return None
        codec, raw = found
        if not is_numeric(raw) or raw.newbyteorder("=") != np.dtype(arr.dtype).newbyteorder("="):
            return None
        if arr.fill_value is None:
            return None
        return cls(arr, codec, raw)

    def __init__(self, arr, codec: str, raw: np.dtype):
        super().__init__(arr, tuple(arr.chunks), raw, np.asarray(arr.fill_value, raw))
        self.codec = codec
        self.root = os.path.join(str(arr.store.root), arr.path)
        self.key = arr.metadata.encode_chunk_key
        self.ahead_ok = codec != "none"

    def load(self, coords, local, dstv, nthreads: int = 1) -> None:
        path = os.path.join(self.root, self.key(coords))
        if not os.path.exists(path):
            dstv[...] = self.fill
            return
        nbytes = math.prod(self.chunks) * self.raw.itemsize
        if self.straight(self.chunks, local, dstv):
            self._decode(self._read(path), bytes_of(dstv), nbytes)
            return
        whole = all(s.start == 0 and s.stop == n for s, n in zip(local, self.chunks))

        def decode(into=None):
            into = self.decoded.buffer(self.chunks, self.raw) if into is None else into
            self._decode(self._read(path), bytes_of(into), nbytes)
            return into
        if whole:            # a whole chunk of another dtype or layout: no keeping
            dstv[...] = decode(scratch(nbytes, "foreign-chunk").view(self.raw)
                               .reshape(self.chunks))
        else:
            dstv[...] = self.decoded.get(coords, decode)[local]

    def decode_whole(self, coords, into: np.ndarray) -> bool:
        """Chunk `coords` decoded into `into`; False when it is not stored."""
        path = os.path.join(self.root, self.key(coords))
        if not os.path.exists(path):
            return False
        self._decode(self._read(path), bytes_of(into), into.nbytes)
        return True

    @staticmethod
    def _read(path: str) -> np.ndarray:
        """The bytes of the chunk file at `path` (a scratch buffer of this thread)."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise Fallback("the chunk file went away") from None
        try:
            size = os.fstat(fd).st_size
            src = scratch(size, "foreign-packed")
            pread_into(fd, memoryview(src), 0)
        finally:
            os.close(fd)
        return src

    def _decode(self, src: np.ndarray, into: memoryview, nbytes: int) -> None:
        if self.codec == "none":
            if len(src) != nbytes:
                raise Fallback("a raw chunk of the wrong size")
            into[:] = memoryview(src)
        elif self.codec == "blosc":
            if chunk_info(src)["nbytes"] != nbytes:
                raise Fallback("a Blosc chunk of the wrong size")
            decompress2(src, into, nthreads=1)
        elif self.codec == "zstd":
            if _zstd_content_size(src) != nbytes:
                raise Fallback("a zstd frame of another size (or none said)")
            zstd_frame_decompress(src, into)    # the C core, straight into place
        else:
            data = zlib.decompress(src, 31 if self.codec == "gzip" else 15, nbytes)
            if len(data) != nbytes:
                raise Fallback("a deflate stream of the wrong size")
            into[:] = data


def _v2_layout(meta):
    """``(codec, raw dtype)`` of a zarr v2 array we can read, else None."""
    import numcodecs
    if meta.filters or meta.order != "C":
        return None
    comp = meta.compressor
    kinds = {numcodecs.Zstd: "zstd", numcodecs.Blosc: "blosc", numcodecs.GZip: "gzip",
             numcodecs.Zlib: "zlib"}
    codec = "none" if comp is None else kinds.get(type(comp))
    if codec is None:
        return None
    return codec, np.dtype(meta.dtype.to_native_dtype())


def _v3_layout(meta, zarr):
    """``(codec, raw dtype)`` of a zarr v3 array we can read, else None."""
    from zarr.core.chunk_grids import RegularChunkGrid
    codecs = tuple(meta.codecs)
    if meta.storage_transformers or not isinstance(meta.chunk_grid, RegularChunkGrid) \
            or not codecs or type(codecs[0]) is not zarr.codecs.BytesCodec or len(codecs) > 2:
        return None
    kinds = {zarr.codecs.ZstdCodec: "zstd", zarr.codecs.BloscCodec: "blosc",
             zarr.codecs.GzipCodec: "gzip"}
    codec = "none" if len(codecs) == 1 else kinds.get(type(codecs[1]))
    if codec is None:
        return None
    endian = codecs[0].endian
    raw = np.dtype(meta.data_type.to_native_dtype())
    if endian is not None and raw.itemsize > 1:
        raw = raw.newbyteorder("<" if getattr(endian, "value", endian) == "little" else ">")
    return codec, raw


def _zstd_content_size(src) -> int | None:
    """The content size written in the header of the zstd frame `src` (RFC 8878
    section 3.1.1.1), or None when absent or not a frame."""
    if len(src) < 6 or bytes(src[:4]) != b"\x28\xb5\x2f\xfd":
        return None
    fhd = int(src[4])
    single, dict_flag, fcs_flag = (fhd >> 5) & 1, fhd & 3, fhd >> 6
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if width == 0 or len(src) < pos + width:
        return None
    value = int.from_bytes(bytes(src[pos:pos + width]), "little")
    return value + 256 if width == 2 else value
