"""Blosc2 frames: contiguous (one file or buffer) and sparse (a directory).

A frame is ``[header | chunks | offsets index | trailer]`` (FORMAT.md §4).  This
module parses and builds the header and the offsets index (the metalayer and trailer
sections are encoded by :mod:`ndpack.storage.meta`), and holds the three chunk stores
a super-chunk can live in:

* :class:`MemoryFrame` — a Python list of chunks, serialized on demand;
* :class:`ContiguousFrame` — a ``.b2frame``/``.b2nd`` file mutated in place the way
  C-Blosc2 does it (§4.8), so python-blosc2 and ndpack can share files;
* :class:`SparseFrame` — a directory with ``chunks.b2frame`` and ``%08X.chunk`` files.

Every store exposes the same small interface (``get``, ``append``, ``insert``,
``update``, ``delete``, ``set_vlmeta``, ``del_vlmeta``, ``write_meta``,
``to_cframe``) used by :class:`ndpack.storage.schunk.SChunk`.

Examples
--------
>>> import numpy as np
>>> from ndpack.chunks import compress2
>>> from ndpack.storage.frame import MemoryFrame, FrameInfo, parse_cframe
>>> f = MemoryFrame(FrameInfo(typesize=4, chunksize=400))
>>> f.append(compress2(np.arange(100, dtype=np.int32), typesize=4))
>>> g = parse_cframe(f.to_cframe())
>>> g.nchunks, g.nbytes, g.info.chunksize
(1, 400, 400)
"""

from __future__ import annotations

import array
import bisect
import dataclasses
import mmap
import os
import struct
import threading

import numpy as np

from ndpack.chunks import compress2, decompress, special_chunk
from ndpack.codecs import Codec, Filter, SpecialValue, SplitMode
from ndpack.errors import FormatError, NdpackError, ParameterError
from ndpack.storage.meta import (build_metalayers, build_trailer, expect, locate_trailer,
                                 parse_section, parse_trailer)

__all__ = ["FrameInfo", "MemoryFrame", "ContiguousFrame", "SparseFrame", "parse_cframe",
           "open_frame", "HEADER_FIXED", "MAGIC"]

HEADER_FIXED = 87
MAGIC = b"b2frame\x00"
CHUNK_HEADER = 32
SPARSE_INDEX = "chunks.b2frame"
_SPECIAL_OFFSET_CODES = (1, 2, 4)        # zeros, NaN, uninit live only in the index


@dataclasses.dataclass
class FrameInfo:
    """Super-chunk level fields of a frame header (defaults and structure)."""

    typesize: int = 1
    chunksize: int = -1          # -1 none yet, 0 variable
    codec: int = int(Codec.ZSTD)
    clevel: int = 5
    splitmode: int = int(SplitMode.AUTO_SPLIT)
    blocksize: int = 0
    nthreads_c: int = 1
    nthreads_d: int = 1
    filters: list = dataclasses.field(default_factory=lambda: [0, 0, 0, 0, 0, 1])
    filters_meta: list = dataclasses.field(default_factory=lambda: [0] * 6)
    codec_meta: int = 0
    use_dict: bool = False
    vlblocks: bool = False
    sparse: bool = False


# ---------------------------------------------------------------------------------------
# header, metalayers, index, trailer


def _u8(v):
    return v & 0xFF


def build_header(info: FrameInfo, meta: dict, nbytes: int, cbytes: int, frame_len: int,
                 has_vlmeta: bool, empty: bool = False) -> bytes:
    """The header (fixed part + metalayers section) with the given structural fields.

    An `empty` frame records chunksize −1, as C-Blosc2 does before the first chunk.
    """
    metasec = build_metalayers(meta, HEADER_FIXED)
    header_len = HEADER_FIXED + len(metasec)
    if info.chunksize == 0 or info.vlblocks:
        gflags = 0x13 | (0x40 if info.chunksize == 0 else 0) | (0x80 if info.vlblocks else 0)
    else:
        gflags = 0x12
    codec = int(info.codec)
    low = codec if codec < 6 else 6
    codec_flags = (low & 0x0F) | ((int(info.clevel) & 0x0F) << 4)
    other = (int(info.splitmode) - 1) & 0x03
    typesize = info.typesize if info.typesize <= 255 else 1
    fixed = b"".join([
        b"\x9e\xa8", MAGIC,
        b"\xd2", struct.pack(">i", header_len),
        b"\xcf", struct.pack(">Q", frame_len),
        b"\xa4", bytes([gflags, 1 if info.sparse else 0, codec_flags, other]),
        b"\xd3", struct.pack(">q", nbytes),
        b"\xd3", struct.pack(">q", cbytes),
        b"\xd2", struct.pack(">i", typesize),
        b"\xd2", struct.pack(">i", info.blocksize),
        b"\xd2", struct.pack(">i", -1 if empty else info.chunksize),
        b"\xd1", struct.pack(">h", max(0, min(info.nthreads_c, 32767))),
        b"\xd1", struct.pack(">h", max(0, min(info.nthreads_d, 32767))),
        b"\xc3" if has_vlmeta else b"\xc2",
        b"\xd8\x06", bytes(_u8(f) for f in info.filters),
        bytes([_u8(codec), _u8(info.codec_meta)]), bytes(_u8(m) for m in info.filters_meta),
        bytes([1 if info.use_dict else 0, 0]),
    ])
    assert len(fixed) == HEADER_FIXED
    return fixed + metasec


def parse_header(buf, base: int = 0) -> tuple[dict, FrameInfo, dict]:
    """Parse a frame header from `buf` (at least `header_len` bytes).

    Returns ``(fields, info, meta)`` where fields has the structural values
    (header_len, frame_len, nbytes, cbytes, has_vlmeta, general_flags, frame_type) and
    meta maps names to ``(position_in_frame, raw bytes)``.
    """
    if len(buf) < HEADER_FIXED:
        raise FormatError(f"frame byte {base}: need {HEADER_FIXED} header bytes, "
                          f"only {len(buf)} available")
    if buf[0] != 0x9E or bytes(buf[1:10]) != b"\xa8" + MAGIC:
        raise FormatError(f"frame byte {base}: bad magic, expected 9E A8 'b2frame\\0', got "
                          f"{bytes(buf[:10]).hex(' ')}")
    for pos, byte, what in ((10, 0xD2, "header_len"), (15, 0xCF, "frame_len"),
                            (24, 0xA4, "flags"), (29, 0xD3, "nbytes"), (38, 0xD3, "cbytes"),
                            (47, 0xD2, "typesize"), (52, 0xD2, "blocksize"),
                            (57, 0xD2, "chunksize"), (62, 0xD1, "nthreads"),
                            (65, 0xD1, "nthreads"), (69, 0xD8, "filters fixext16")):
        expect(buf, pos, byte, what, base)
    header_len = struct.unpack_from(">i", buf, 11)[0]
    frame_len = struct.unpack_from(">Q", buf, 16)[0]
    gflags, ftype, cflags, oflags = buf[25], buf[26], buf[27], buf[28]
    version = gflags & 0x0F
    if version > 3:
        raise FormatError(f"frame byte {base + 25}: frame format version {version} > 3")
    if (gflags >> 4) & 0x03 != 1:
        raise FormatError(f"frame byte {base + 25}: offsets width code {(gflags >> 4) & 3}, "
                          "only 1 (64-bit) is supported")
    nbytes, cbytes = struct.unpack_from(">q", buf, 30)[0], struct.unpack_from(">q", buf, 39)[0]
    typesize = struct.unpack_from(">i", buf, 48)[0]
    blocksize = struct.unpack_from(">i", buf, 53)[0]
    chunksize = struct.unpack_from(">i", buf, 58)[0]
    nthc, nthd = struct.unpack_from(">h", buf, 63)[0], struct.unpack_from(">h", buf, 66)[0]
    if buf[68] not in (0xC2, 0xC3):
        raise FormatError(f"frame byte {base + 68}: expected C2/C3 (has vlmeta)")
    if header_len < HEADER_FIXED + 7 or header_len > frame_len:
        raise FormatError(f"frame byte {base + 11}: header_len {header_len} out of range "
                          f"(frame_len {frame_len})")
    if nbytes < 0 or cbytes < 0 or chunksize < -1 or typesize < 1:
        raise FormatError(f"frame byte {base + 29}: negative nbytes/cbytes/chunksize or "
                          f"typesize < 1 ({nbytes}, {cbytes}, {chunksize}, {typesize})")
    codec = cflags & 0x0F
    if codec == 6:
        codec = buf[77]
    info = FrameInfo(typesize=typesize, chunksize=chunksize, codec=codec, clevel=cflags >> 4,
                     splitmode=(oflags & 0x03) + 1, blocksize=blocksize,
                     nthreads_c=nthc, nthreads_d=nthd, filters=list(buf[71:77]),
                     filters_meta=list(buf[79:85]),
                     codec_meta=buf[78], use_dict=bool(buf[85] & 1),
                     vlblocks=bool(gflags & 0x80), sparse=bool(ftype & 0x0F))
    if len(buf) < header_len:
        raise FormatError(f"frame byte {base + len(buf)}: header truncated "
                          f"(header_len {header_len})")
    # metalayers section
    p = HEADER_FIXED
    expect(buf, p, 0x93, "metalayers fixarray(3)", base)
    expect(buf, p + 1, 0xCD, "metalayers idx_size uint16", base)
    raw = parse_section(buf, p + 4, 0, base, header_len, "metalayer")
    meta = {k: v for k, (pos, v) in raw.items()}
    meta_pos = {k: pos for k, (pos, v) in raw.items()}
    fields = dict(header_len=header_len, frame_len=frame_len, nbytes=nbytes, cbytes=cbytes,
                  has_vlmeta=buf[68] == 0xC3, general_flags=gflags, frame_type=ftype,
                  meta_pos=meta_pos)
    return fields, info, meta


def encode_index(offsets) -> bytes:
    """The offsets index chunk, compressed like C-Blosc2 does (BloscLZ, shuffle, 16 KiB)."""
    if isinstance(offsets, array.array):          # native int64, zero-copy
        arr = np.frombuffer(offsets, dtype=np.int64).astype("<i8", copy=False)
    else:
        arr = np.asarray(offsets, dtype="<i8")
    return compress2(arr.tobytes(), codec=Codec.BLOSCLZ, clevel=5, typesize=8, nthreads=1,
                     blocksize=16384, splitmode=SplitMode.NEVER_SPLIT,
                     filters=[0, 0, 0, 0, 0, Filter.SHUFFLE])


def decode_index(chunk, nchunks: int | None, pos: int) -> np.ndarray:
    """Decode an offsets index chunk found at frame position `pos`."""
    try:
        raw = decompress(chunk)
    except FormatError as exc:
        raise FormatError(f"frame byte {pos}: offsets index chunk is corrupt: {exc}") from None
    if len(raw) % 8 or (nchunks is not None and len(raw) != 8 * nchunks):
        raise FormatError(f"frame byte {pos}: offsets index holds {len(raw)} bytes, expected "
                          f"{'8 * nchunks' if nchunks is None else 8 * nchunks}")
    return np.frombuffer(raw, dtype="<i8").copy()


def special_code(chunk) -> int:
    """Special-value code of a chunk header (0 for regular chunks)."""
    if len(chunk) >= CHUNK_HEADER and (chunk[2] & 0x05) == 0x05:
        return (chunk[31] >> 4) & 0x07
    return 0


def chunk_nbytes_of(chunk) -> int:
    return struct.unpack_from("<i", chunk, 4)[0]


def chunk_cbytes_of(head, pos: int, what: str = "chunk") -> int:
    if len(head) < 16:
        raise FormatError(f"frame byte {pos}: {what} header truncated")
    (cb,) = struct.unpack_from("<i", head, 12)
    if cb < 16:
        raise FormatError(f"frame byte {pos}: {what} header says cbytes {cb}, expected >= 16")
    return cb


def special_offset(code: int) -> int:
    """Index value of a special chunk (bit 63 set, code in the top byte)."""
    return struct.unpack("<q", bytes(7) + bytes([0x80 | code]))[0]


def _offset_code(v: int, pos: int) -> int:
    code = (v >> 56) & 0x7F
    if code not in _SPECIAL_OFFSET_CODES:
        raise FormatError(f"frame byte {pos}: index value 0x{v & (2**64 - 1):016X} is a "
                          f"special offset with unknown code {code}")
    return code


# ---------------------------------------------------------------------------------------
# the common state of every store


class FrameBase:
    """State shared by the stores: info, per-chunk nbytes, meta, vlmeta, chunksize rules."""

    readonly = False

    def __init__(self, info: FrameInfo, meta: dict | None = None):
        self.info = info
        self.meta = dict(meta or {})          # name -> raw bytes
        self.vlmeta: dict = {}                # name -> chunk bytes
        self.cnb: list[int] = []              # nbytes of every logical chunk
        self.nbytes = 0
        self.lock = threading.RLock()

    # --- sizes -------------------------------------------------------------------------
    @property
    def nchunks(self) -> int:
        return len(self.cnb)

    def _check_write(self):
        if self.readonly:
            raise ParameterError("the super-chunk is open in mode 'r'; writes are not allowed")

    def _check_index(self, i: int, allow_end: bool = False) -> int:
        n = self.nchunks
        if i < 0:
            i += n
        if not 0 <= i < n + (1 if allow_end else 0):
            raise IndexError(f"chunk index {i} out of range for {n} chunks")
        return i

    def _fits_fixed(self, i: int, nb: int, op: str) -> bool:
        """Whether chunk nbytes `nb` placed at `i` by `op` keeps the chunks fixed-size."""
        cs, n = self.info.chunksize, self.nchunks
        if cs == 0:
            return False
        if cs < 0:
            return True
        if op == "append":
            return nb <= cs and (n == 0 or self.cnb[-1] == cs)
        if op == "insert":
            return nb == cs
        return nb == cs if i < n - 1 else nb <= cs           # update

    def _account(self, i: int, nb: int, op: str) -> bool:
        """Update sizes for an op; returns True when the frame just became variable."""
        fixed = self._fits_fixed(i, nb, op)
        if op == "update":
            self.nbytes += nb - self.cnb[i]
            self.cnb[i] = nb
        else:
            self.cnb.insert(i, nb)
            self.nbytes += nb
        if self.info.chunksize < 0:
            self.info.chunksize = nb
        if not fixed and self.info.chunksize != 0:
            self.info.chunksize = 0
            return True
        return False

    def _synth(self, code: int, i: int) -> bytes:
        """The chunk a special index entry stands for."""
        return special_chunk(SpecialValue(code), self.cnb[i], min(self.info.typesize, 255))

    # --- vlmeta ------------------------------------------------------------------------
    def set_vlmeta(self, name: str, chunk: bytes):
        with self.lock:
            self._check_write()
            if name not in self.vlmeta and len(self.vlmeta) >= 8192:
                raise ParameterError("at most 8192 vlmeta entries")
            self.vlmeta[name] = bytes(chunk)
            self._flush_meta()

    def del_vlmeta(self, name: str):
        with self.lock:
            self._check_write()
            del self.vlmeta[name]
            self._flush_meta()

    def write_meta(self, name: str, raw: bytes):
        with self.lock:
            self._check_write()
            self.meta[name] = bytes(raw)
            self._flush_meta()

    def _flush_meta(self):
        pass

    @property
    def cbytes(self) -> int:
        raise NotImplementedError

    def close(self):
        pass


def _chunk_len(chunk) -> int:
    if len(chunk) < 16:
        raise ParameterError("a chunk has at least a 16-byte header")
    (cb,) = struct.unpack_from("<i", chunk, 12)
    if cb != len(chunk):
        raise ParameterError(f"chunk header says cbytes {cb}, buffer holds {len(chunk)} bytes")
    return cb


def index_special(chunk, info: FrameInfo) -> int:
    """Code (1 zeros, 2 NaN, 4 uninit) if `chunk` can live in the index only, else 0.

    Only fixed-size frames can do that (the entry's nbytes comes from ``chunksize``),
    and a NaN chunk only when its element width is the frame's typesize.
    """
    code = special_code(chunk)
    if code not in _SPECIAL_OFFSET_CODES or len(chunk) != CHUNK_HEADER or info.chunksize <= 0:
        return 0
    if code == 2 and chunk[3] != min(info.typesize, 255):
        return 0
    return code


def serialize(info: FrameInfo, meta: dict, vlmeta: dict, chunks, nbytes: int) -> bytes:
    """A whole contiguous frame from a list of chunks (§4.7)."""
    info = dataclasses.replace(info, sparse=False)
    parts, offsets, pos = [], [], 0
    n = len(chunks)
    for ch in chunks:
        code = index_special(ch, info)
        if code:
            offsets.append(special_offset(code))
            continue
        offsets.append(pos)
        parts.append(bytes(ch))
        pos += len(ch)
    index = encode_index(offsets) if n else b""
    trailer = build_trailer(vlmeta)
    hlen = len(build_header(info, meta, 0, 0, 0, False))
    frame_len = hlen + pos + len(index) + len(trailer)
    header = build_header(info, meta, nbytes, pos, frame_len, bool(vlmeta), empty=not n)
    return b"".join([header, *parts, index, trailer])


class MemoryFrame(FrameBase):
    """A super-chunk held in memory as a list of chunks (bytes or buffer slices)."""

    def __init__(self, info: FrameInfo, meta: dict | None = None):
        super().__init__(info, meta)
        self.chunks: list = []
        self._cbytes = 0

    @property
    def cbytes(self) -> int:
        return self._cbytes

    def get(self, i: int):
        return self.chunks[self._check_index(i)]

    def append(self, chunk):
        self.insert(self.nchunks, chunk, op="append")

    def insert(self, i: int, chunk, op: str = "insert"):
        with self.lock:
            self._check_write()
            i = self._check_index(i, allow_end=True)
            _chunk_len(chunk)
            if i == self.nchunks:
                op = "append"
            self._account(i, chunk_nbytes_of(chunk), op)
            self.chunks.insert(i, chunk)
            self._cbytes += len(chunk)

    def update(self, i: int, chunk):
        with self.lock:
            self._check_write()
            i = self._check_index(i)
            _chunk_len(chunk)
            self._account(i, chunk_nbytes_of(chunk), "update")
            self._cbytes += len(chunk) - len(self.chunks[i])
            self.chunks[i] = chunk

    def delete(self, i: int):
        with self.lock:
            self._check_write()
            i = self._check_index(i)
            self.nbytes -= self.cnb.pop(i)
            self._cbytes -= len(self.chunks[i])
            del self.chunks[i]

    def to_cframe(self) -> bytes:
        with self.lock:
            return serialize(self.info, self.meta, self.vlmeta, self.chunks, self.nbytes)


# ---------------------------------------------------------------------------------------
# readers over a file or buffer


class _Reader:
    """Positioned reads of a byte source: a buffer, an mmap, or a file descriptor."""

    def __init__(self, buf=None, fd=None, mm=None):
        self.buf, self.fd, self.mm = buf, fd, mm
        self.view = memoryview(mm) if mm is not None else (
            memoryview(buf) if buf is not None else None)

    def size(self) -> int:
        if self.view is not None:
            return len(self.view)
        return os.fstat(self.fd).st_size

    def read(self, pos: int, n: int):
        if self.view is not None:
            return self.view[pos:pos + n]
        return os.pread(self.fd, n, pos)

    def close(self):
        if self.view is not None:
            self.view.release()
            self.view = None
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:        # chunk views still alive; the GC closes it later
                pass
            self.mm = None


def _read_exact(reader: _Reader, pos: int, n: int, what: str):
    data = reader.read(pos, n)
    if len(data) != n:
        raise FormatError(f"frame byte {pos}: {what} truncated ({len(data)} of {n} bytes)")
    return data


def _read_chunk(reader: _Reader, pos: int, limit: int, what: str):
    if pos < 0 or pos + 16 > limit:
        raise FormatError(f"frame byte {pos}: {what} starts outside the frame (end {limit})")
    head = _read_exact(reader, pos, 16, what)
    cb = chunk_cbytes_of(head, pos, what)
    if pos + cb > limit:
        raise FormatError(f"frame byte {pos}: {what} of {cb} bytes runs past byte {limit}")
    return _read_exact(reader, pos, cb, what)


def _parse_frame(reader: _Reader, base: int, sparse_expected: bool | None):
    """Parse header, trailer and index of the frame at `base`; returns a dict of state."""
    size = reader.size()
    if size - base < HEADER_FIXED:
        raise FormatError(f"frame byte {base}: only {max(size - base, 0)} bytes, a frame "
                          f"header needs {HEADER_FIXED}")
    head = _read_exact(reader, base, HEADER_FIXED, "frame header")
    if head[0] != 0x9E or bytes(head[1:10]) != b"\xa8" + MAGIC:
        raise FormatError(f"frame byte {base}: bad magic, expected 9E A8 'b2frame\\0', got "
                          f"{bytes(head[:10]).hex(' ')}")
    hlen = struct.unpack_from(">i", head, 11)[0] if head[10] == 0xD2 else 0
    if not HEADER_FIXED < hlen <= size - base:
        raise FormatError(f"frame byte {base + 11}: header_len {hlen} out of range")
    fields, info, meta = parse_header(_read_exact(reader, base, hlen, "frame header"), base)
    flen = fields["frame_len"]
    if base + flen > size:
        raise FormatError(f"frame byte {base + 16}: frame_len {flen} but only {size - base} "
                          "bytes available (truncated frame)")
    if sparse_expected is not None and info.sparse != sparse_expected:
        raise FormatError(f"frame byte {base + 26}: frame_type {fields['frame_type']}, "
                          f"expected {'sparse' if sparse_expected else 'contiguous'}")
    tlen = locate_trailer(bytes(_read_exact(reader, base + flen - 23, 23, "trailer")),
                          flen, base)
    tstart = flen - tlen
    if tstart < hlen:
        raise FormatError(f"frame byte {base + flen - 22}: trailer_len {tlen} overlaps the header")
    vlmeta = parse_trailer(_read_exact(reader, base + tstart, tlen, "trailer"), base + tstart)
    nbytes, cbytes, cs = fields["nbytes"], fields["cbytes"], info.chunksize
    idx_pos = hlen if info.sparse else hlen + cbytes
    if not info.sparse and idx_pos > tstart and nbytes:
        raise FormatError(f"frame byte {base + 39}: cbytes {cbytes} runs past the trailer "
                          f"at {base + tstart}")
    if nbytes == 0:
        offsets = np.zeros(0, dtype="<i8")
    else:
        nchunks = -(-nbytes // cs) if cs > 0 else None
        ichunk = _read_chunk(reader, base + idx_pos, base + tstart, "offsets index")
        offsets = decode_index(ichunk, nchunks, base + idx_pos)
        _check_offsets(offsets, 0 if info.sparse else cbytes, base + idx_pos)
    return dict(fields=fields, info=info, meta=meta, vlmeta=vlmeta, offsets=offsets,
                idx_pos=idx_pos, tstart=tstart)


def _check_offsets(offsets: np.ndarray, cbytes: int, pos: int):
    """Every regular offset lies inside the chunks section; special codes are known."""
    if cbytes:
        bad = np.nonzero((offsets >= 0) & (offsets + 16 > cbytes))[0]
        if bad.size:
            i = int(bad[0])
            raise FormatError(f"frame byte {pos}: index entry {i} = {int(offsets[i])} points "
                              f"outside the chunks section ({cbytes} bytes)")
    neg = offsets[offsets < 0]
    if neg.size:
        codes = (neg.view(np.uint64) >> np.uint64(56)) & np.uint64(0x7F)
        for c in np.unique(codes):
            if int(c) not in _SPECIAL_OFFSET_CODES:
                raise FormatError(f"frame byte {pos}: index holds a special offset with "
                                  f"unknown code {int(c)}")


class _FileFrame(FrameBase):
    """Common parts of the frames read through an index (files and parsed buffers)."""

    base = 0
    _sorted = None                        # sorted distinct offsets, for chunk end bounds

    # contiguous layout (ContiguousFrame, _BufferFrame); SparseFrame overrides these two
    def _raw_chunk_head(self, i: int):
        pos = self.base + self.header_len + self.offsets[i]
        return _read_exact(self.reader, pos, 16, f"chunk {i} header")

    def _raw_chunk(self, i: int, v: int):
        """Chunk at section offset `v` with one positioned read (the next offset bounds it)."""
        if self._sorted is None:
            self._sorted = sorted({o for o in self.offsets if o >= 0})
        k = bisect.bisect_right(self._sorted, v)
        end = self._sorted[k] if k < len(self._sorted) else self._cbytes
        pos = self.base + self.header_len + v
        if v < 0 or end - v < 16:
            raise FormatError(f"frame byte {pos}: chunk {i} starts outside the chunks section "
                              f"or overlaps the next chunk")
        data = _read_exact(self.reader, pos, end - v, f"chunk {i}")
        cb = chunk_cbytes_of(data, pos, f"chunk {i}")
        if cb > len(data):
            raise FormatError(f"frame byte {pos}: chunk {i} of {cb} bytes runs into the next "
                              f"chunk or past the chunks section at byte "
                              f"{self.base + self.header_len + end}")
        return data if cb == len(data) else memoryview(data)[:cb]

    def _load(self, st: dict, base: int):
        self.fields = st["fields"]
        self.meta = dict(st["meta"])
        self.vlmeta = dict(st["vlmeta"])
        self.offsets = array.array("q", st["offsets"].astype(np.int64).tobytes())
        self.header_len = self.fields["header_len"]
        self.nbytes = self.fields["nbytes"]
        self._cbytes = self.fields["cbytes"]
        if not self.offsets and not self.info.sparse:
            self._cbytes = 0              # C-Blosc2 keeps a stale cbytes in emptied frames
        cs, n = self.info.chunksize, len(self.offsets)
        if cs < 0 and n:
            self.info.chunksize = cs = 0          # "no chunk yet" but there are chunks
        if cs > 0:
            self.cnb = [cs] * n
            if n and self.nbytes % cs:
                self.cnb[-1] = self.nbytes % cs
            if n != -(-self.nbytes // cs):
                raise FormatError(f"frame byte {base + 58}: chunksize {cs} and nbytes "
                                  f"{self.nbytes} disagree with {n} index entries")
        else:
            self.cnb = []
            for i, v in enumerate(self.offsets):
                if v < 0:
                    raise FormatError(f"frame byte {base + st['idx_pos']}: special offset "
                                      f"for chunk {i} in a variable-size frame")
                head = self._raw_chunk_head(i)
                self.cnb.append(chunk_nbytes_of(head))
            if sum(self.cnb) != self.nbytes:
                raise FormatError(f"frame byte {base + 30}: nbytes {self.nbytes} but the chunks "
                                  f"hold {sum(self.cnb)}")

    @property
    def cbytes(self) -> int:
        return self._cbytes

    def get(self, i: int):
        with self.lock:                        # an update may be compacting the section
            i = self._check_index(i)
            v = self.offsets[i]
            if v < 0:
                return self._synth(_offset_code(v, self.header_len), i)
            return self._raw_chunk(i, v)

    def _materialize_specials(self):
        """Store special-offset chunks physically (needed once chunk sizes vary)."""
        for i, v in enumerate(self.offsets):
            if v < 0:
                chunk = special_chunk(SpecialValue(_offset_code(v, 0)), self.cnb[i],
                                      min(self.info.typesize, 255))
                self.offsets[i] = self._store_new(chunk)

    def _mutate(self, i: int, chunk, op: str):
        with self.lock:
            self._check_write()
            i = self._check_index(i, allow_end=(op != "update"))
            _chunk_len(chunk)
            if op == "insert" and i == self.nchunks:
                op = "append"
            old_cs = self.info.chunksize
            became_var = self._account(i, chunk_nbytes_of(chunk), op)
            code = index_special(chunk, self.info)
            if op == "update":
                self._replace(i, chunk, code)
            else:
                v = special_offset(code) if code else self._store_new(chunk)
                self.offsets.insert(i, v)
            if became_var and old_cs != 0:
                self._materialize_specials()
            self._flush()

    def append(self, chunk):
        self._mutate(self.nchunks, chunk, "append")

    def insert(self, i: int, chunk):
        self._mutate(i, chunk, "insert")

    def update(self, i: int, chunk):
        self._mutate(i, chunk, "update")

    def delete(self, i: int):
        with self.lock:
            self._check_write()
            i = self._check_index(i)
            self._drop(i)
            self.nbytes -= self.cnb.pop(i)
            del self.offsets[i]
            if not self.offsets and not self.info.sparse:
                self._cbytes = 0          # no index: the trailer follows the header (§4.4)
            self._flush()

    def _flush_meta(self):
        self._flush()

    def _tail(self) -> tuple[bytes, bytes, bytes]:
        index = encode_index(self.offsets) if self.offsets else b""
        trailer = build_trailer(self.vlmeta)
        body = (0 if self.info.sparse else self._cbytes)
        frame_len = self.header_len + body + len(index) + len(trailer)
        header = build_header(self.info, self.meta, self.nbytes, self._cbytes, frame_len,
                              bool(self.vlmeta), empty=not self.offsets)
        if len(header) != self.header_len:
            raise NdpackError("internal error: the frame header changed length")
        return header, index, trailer


class ContiguousFrame(_FileFrame):
    """A contiguous frame in a file, possibly at `offset` inside a larger file."""

    def __init__(self, path, mode: str = "a", offset: int = 0, mmap_mode: str | None = None,
                 create: tuple | None = None):
        self.path = os.fspath(path)
        self.base = int(offset)
        self.readonly = mode == "r"
        if create is not None:
            info, meta = create
            FrameBase.__init__(self, info, meta)
            info.sparse = False
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)
            self.reader = _Reader(fd=self.fd)
            self.header_len = len(build_header(info, self.meta, 0, 0, 0, False))
            self.offsets, self.nbytes, self._cbytes = array.array("q"), 0, 0
            self._flush()
            return
        flags = os.O_RDONLY if self.readonly else os.O_RDWR
        self.fd = os.open(self.path, flags)
        try:
            if mmap_mode == "r":
                mm = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ) if os.fstat(
                    self.fd).st_size else None
                self.reader = _Reader(mm=mm) if mm is not None else _Reader(fd=self.fd)
            else:
                self.reader = _Reader(fd=self.fd)
            st = _parse_frame(self.reader, self.base, False)
            FrameBase.__init__(self, st["info"], st["meta"])
            self.meta_pos = st["fields"]["meta_pos"]
            self.frame_len = st["fields"]["frame_len"]
            self._load(st, self.base)
        except BaseException:
            self.close()
            raise

    def _store_new(self, chunk) -> int:
        v = self._cbytes
        os.pwrite(self.fd, chunk, self.base + self.header_len + v)
        self._cbytes += len(chunk)
        return v

    def _replace(self, i: int, chunk, code: int):
        old = self.offsets[i]
        if old < 0:
            self.offsets[i] = special_offset(code) if code else self._store_new(chunk)
            return
        start = self.base + self.header_len
        old_len = chunk_cbytes_of(self.reader.read(start + old, 16), start + old)
        new = b"" if code else bytes(chunk)
        tail = self.reader.read(start + old + old_len, self._cbytes - old - old_len)
        os.pwrite(self.fd, new + bytes(tail), start + old)
        delta = len(new) - old_len
        self._cbytes += delta
        offs = np.frombuffer(self.offsets, dtype=np.int64).copy()
        offs[offs > old] += delta
        self.offsets = array.array("q", offs.tobytes())
        self.offsets[i] = special_offset(code) if code else old

    def _drop(self, i: int):
        pass                                  # bytes stay as orphans (C-Blosc2 does the same)

    def _flush(self):
        self._sorted = None
        header, index, trailer = self._tail()
        end = self.base + self.header_len + self._cbytes
        self.frame_len = self.header_len + self._cbytes + len(index) + len(trailer)
        os.pwrite(self.fd, index, end)
        os.pwrite(self.fd, header, self.base)
        os.pwrite(self.fd, trailer, end + len(index))
        os.ftruncate(self.fd, end + len(index) + len(trailer))

    def _check_write(self):
        super()._check_write()
        if self.base:
            size = os.fstat(self.fd).st_size
            if size != self.base + self.frame_len:
                raise ParameterError("cannot modify a frame embedded before the end of a "
                                     "larger file")

    def to_cframe(self) -> bytes:
        with self.lock:
            return bytes(_read_exact(self.reader, self.base, self.frame_len, "frame"))

    def close(self):
        if getattr(self, "reader", None) is not None:
            self.reader.close()
            self.reader = None
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None

    def __del__(self):
        self.close()


class SparseFrame(_FileFrame):
    """A sparse frame: directory with ``chunks.b2frame`` and one file per chunk."""

    def __init__(self, path, mode: str = "a", create: tuple | None = None):
        self.path = os.fspath(path)
        self.readonly = mode == "r"
        self.base = 0
        index_path = os.path.join(self.path, SPARSE_INDEX)
        if create is not None:
            info, meta = create
            FrameBase.__init__(self, info, meta)
            info.sparse = True
            os.makedirs(self.path, exist_ok=True)
            self.header_len = len(build_header(info, self.meta, 0, 0, 0, False))
            self.offsets, self.nbytes, self._cbytes = array.array("q"), 0, 0
            self._flush()
            return
        if not os.path.isfile(index_path):
            raise FormatError(f"{self.path!r} is a directory without {SPARSE_INDEX}: "
                              "not a sparse frame")
        with open(index_path, "rb") as fh:
            buf = fh.read()
        st = _parse_frame(_Reader(buf=buf), 0, True)
        FrameBase.__init__(self, st["info"], st["meta"])
        self._load(st, 0)

    def _file(self, v: int) -> str:
        return os.path.join(self.path, f"{v:08X}.chunk")

    def _raw_chunk_head(self, i: int):
        return self._raw_chunk(i, self.offsets[i])[:16]

    def _raw_chunk(self, i: int, v: int):
        name = self._file(v)
        try:
            with open(name, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise FormatError(f"sparse frame: chunk {i} file {os.path.basename(name)} is "
                              "missing") from None
        if len(data) < 16 or chunk_cbytes_of(data, 0) != len(data):
            raise FormatError(f"sparse frame: chunk file {os.path.basename(name)} byte 12: "
                              f"cbytes does not match the file size {len(data)}")
        return data

    def _write_file(self, v: int, chunk):
        name = self._file(v)
        if os.path.exists(name):
            self._cbytes -= os.path.getsize(name)
        with open(name, "wb") as fh:
            fh.write(chunk)
        self._cbytes += len(chunk)

    def _store_new(self, chunk) -> int:
        v = 1 + max((o for o in self.offsets if o >= 0), default=-1)
        self._write_file(v, chunk)
        return v

    def _replace(self, i: int, chunk, code: int):
        old = self.offsets[i]
        if code:
            if old >= 0:
                self._remove_file(old)
            self.offsets[i] = special_offset(code)
        elif old >= 0:
            self._write_file(old, chunk)
        else:
            self.offsets[i] = self._store_new(chunk)

    def _remove_file(self, v: int):
        name = self._file(v)
        if os.path.exists(name):
            self._cbytes -= os.path.getsize(name)
            os.remove(name)

    def _drop(self, i: int):
        if self.offsets[i] >= 0:
            self._remove_file(self.offsets[i])

    def _flush(self):
        header, index, trailer = self._tail()
        with open(os.path.join(self.path, SPARSE_INDEX), "r+b" if os.path.exists(
                os.path.join(self.path, SPARSE_INDEX)) else "wb") as fh:
            fh.write(header + index + trailer)
            fh.truncate()

    def to_cframe(self) -> bytes:
        with self.lock:
            chunks = [self.get(i) for i in range(self.nchunks)]
            return serialize(self.info, self.meta, self.vlmeta, chunks, self.nbytes)


class _BufferFrame(_FileFrame):
    """A read-only view of a contiguous frame held in a buffer."""

    readonly = True

    def __init__(self, reader: _Reader, st: dict):
        FrameBase.__init__(self, st["info"], st["meta"])
        self.reader = reader
        self._load(st, 0)



def parse_cframe(buf, copy: bool = False) -> MemoryFrame:
    """A :class:`MemoryFrame` from contiguous-frame bytes.

    With ``copy=False`` the chunks are memoryview slices of `buf` (no copy).
    """
    view = buf if isinstance(buf, bytes) else memoryview(buf).cast("B")
    reader = _Reader(buf=view)
    st = _parse_frame(reader, 0, False)
    src = _BufferFrame(reader, st)
    out = MemoryFrame(src.info, src.meta)
    out.vlmeta = dict(src.vlmeta)
    out.cnb, out.nbytes = list(src.cnb), src.nbytes
    out.chunks = [src.get(i) for i in range(src.nchunks)]
    if copy:
        out.chunks = [bytes(c) for c in out.chunks]
    out._cbytes = sum(len(c) for c in out.chunks)
    return out


def open_frame(urlpath, mode: str = "a", offset: int = 0, mmap_mode: str | None = None):
    """Open an existing contiguous or sparse frame on disk."""
    path = os.fspath(urlpath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file or directory: {path}")
    if os.path.isdir(path):
        if offset:
            raise ParameterError("offset= applies to contiguous frames only")
        if mmap_mode is not None:
            raise ParameterError("mmap_mode applies to contiguous frames only")
        return SparseFrame(path, mode)
    return ContiguousFrame(path, mode, offset, mmap_mode)
