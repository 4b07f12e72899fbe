"""Blosc2 frames: contiguous (one file or buffer) and sparse (a directory).

A frame is ``[header | chunks | offsets index | trailer]`` (FORMAT.md §4).  This
module parses and builds the header and the offsets index (the metalayer and trailer
sections are encoded by :mod:`ndpack.storage.meta`), defines the interface of the chunk
stores a super-chunk can live in, and holds the in-memory one:

* :class:`MemoryFrame` — a Python list of chunks, serialized on demand;
* :class:`~ndpack.storage.framefile.ContiguousFrame` and
  :class:`~ndpack.storage.framefile.SparseFrame` — files and directories, in
  :mod:`ndpack.storage.framefile`.

Every store exposes the same small interface (``get``, ``append``, ``insert``,
``update``, ``delete``, ``set_vlmeta``, ``del_vlmeta``, ``write_meta``,
``to_cframe``) used by :class:`ndpack.storage.schunk.SChunk`.

Examples
--------
>>> import numpy as np
>>> from ndpack.chunks import compress2
>>> from ndpack.storage.frame import MemoryFrame, FrameInfo
>>> from ndpack.storage.framefile import parse_cframe
>>> f = MemoryFrame(FrameInfo(typesize=4, chunksize=400))
>>> f.append(compress2(np.arange(100, dtype=np.int32), typesize=4))
>>> g = parse_cframe(f.to_cframe())
>>> g.nchunks, g.nbytes, g.info.chunksize
(1, 400, 400)
"""

from __future__ import annotations

import array
import dataclasses
import struct
import threading

import numpy as np

from ndpack.chunks import compress2, decompress, special_chunk
from ndpack.codecs import Codec, Filter, SpecialValue, SplitMode
from ndpack.errors import FormatError, OperationError, ParameterError
from ndpack.storage import checksums
from ndpack.storage.meta import build_metalayers, build_trailer, expect, parse_section

__all__ = ["FrameInfo", "FrameBase", "MemoryFrame", "HEADER_FIXED", "MAGIC"]

HEADER_FIXED = 87
MAGIC = b"b2frame\x00"
CHUNK_HEADER = 32
SPARSE_INDEX = "chunks.b2frame"
SPECIAL_OFFSET_CODES = (1, 2, 4)        # zeros, NaN, uninit live only in the index


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
    if cflags >> 4 > 9:
        raise FormatError(f"frame byte {base + 27}: clevel {cflags >> 4} is outside 0..9")
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
    if nchunks is not None and len(chunk) >= 16 and chunk_nbytes_of(chunk) != 8 * nchunks:
        raise FormatError(f"frame byte {pos}: offsets index holds "    # before decoding
                          f"{chunk_nbytes_of(chunk)} bytes, expected {8 * nchunks} "
                          f"(nbytes and chunksize make {nchunks} chunks)")
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


def offset_code(v: int, pos: int) -> int:
    code = (v >> 56) & 0x7F
    if code not in SPECIAL_OFFSET_CODES:
        raise FormatError(f"frame byte {pos}: index value 0x{v & (2**64 - 1):016X} is a "
                          f"special offset with unknown code {code}")
    return code


# ---------------------------------------------------------------------------------------
# the common state of every store


class FrameBase:
    """State shared by the stores: info, per-chunk nbytes, meta, vlmeta, chunksize rules."""

    fresh = False        # created by this process, not parsed (see storage/validate.py)

    readonly = False
    verify = True                 # DParams.verify (checksums.configure)
    trusted = False               # chunks never left this process: not verified
    crc_chunk = crc_problem = None
    crc_stale = False             # a record written for another state was dropped
    watchers: tuple = ()          # callables ``fn(op, i)`` told of every chunk change

    def changed(self, op: str, i: int) -> None:
        """Tell the watchers (sorted indexes, :mod:`ndpack.engine.ops.index`) that chunk
        `i` was appended, inserted, updated or deleted (`op`); every mutation calls it."""
        for fn in self.watchers:
            fn(op, i)

    def __init__(self, info: FrameInfo, meta: dict | None = None):
        self.info = info
        self.meta = dict(meta or {})          # name -> raw bytes
        self.vlmeta: dict = {}                # name -> chunk bytes (without the record)
        self.crcs = checksums.new_record()    # a crc32c per chunk, or None
        self.cnb: list[int] = []              # nbytes of every logical chunk
        self.nbytes = 0
        self.lock = threading.RLock()

    def stored(self, i: int):
        """``(chunk, sums)``: chunk `i` as stored, not checked, and its recorded
        checksums (``(crc, entry)``, :meth:`ndpack.storage.checksums.Record.sums`; None
        when the frame keeps no record).  For copies of compressed chunks that
        keep the record: a damaged chunk stays detectable where it is copied to, instead
        of being blessed by a fresh hash (and the copy hashes nothing)."""
        with self.lock:
            i = self._check_index(i)
            data, _ = self.fetch(i)
            return data, (None if self.crcs is None else self.crcs.sums(i))

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

    def append_repeated(self, chunk, count: int) -> None:
        """Append `count` copies of `chunk` (the special chunks of ``zeros``, ``full``,
        ``empty``): the first two through :meth:`append` (they settle the chunksize),
        the rest at once -- list and array repetition, one index write -- so a million
        chunks cost no Python work per chunk."""
        chunk = bytes(chunk)
        chunk_len(chunk)
        head = min(count, 2)
        for _ in range(head):
            self.append(chunk)
        rest = count - head
        if rest <= 0:
            return
        with self.lock:
            self._check_write()
            nb = chunk_nbytes_of(chunk)
            self.cnb.extend([nb] * rest)
            self.nbytes += nb * rest
            crcs = getattr(self, "crcs", None)      # a checksum record (storage/checksums)
            if crcs is not None:
                crcs.extend_same(checksums.chunk_sums(chunk), rest)
                self.crc_chunk = None
            self._extend_same(chunk, rest)
            for i in range(self.nchunks - rest, self.nchunks) if self.watchers else ():
                self.changed("append", i)

    def _extend_same(self, chunk: bytes, count: int) -> None:
        raise NotImplementedError

    def reorder(self, order) -> None:
        """Make chunk ``order[k]`` chunk `k` (python-blosc2's ``reorder_offsets``): only
        the index moves -- chunk bytes stay where they are -- with the chunk sizes and
        the checksum record.  A fixed-size frame whose short last chunk moves becomes
        variable-size.  :class:`OperationError` unless `order` is a permutation of the
        chunks."""
        with self.lock:
            self._check_write()
            n = self.nchunks
            order = [int(k) for k in order]
            if len(order) != n or sorted(order) != list(range(n)):
                raise OperationError(f"the order of {n} chunks must be a permutation of "
                                     f"range({n}) (each chunk once), not {order[:8]}"
                                     f"{'...' if len(order) > 8 else ''}")
            self.cnb = [self.cnb[k] for k in order]
            checksums.on_reorder(self, order)
            cs = self.info.chunksize
            became_var = cs > 0 and any(nb != cs for nb in self.cnb[:-1])
            if became_var:
                self.info.chunksize = 0
            self._reordered(order, became_var)
            for i in range(n) if self.watchers else ():
                if order[i] != i:
                    self.changed("update", i)

    def _reordered(self, order: list, became_var: bool) -> None:
        raise NotImplementedError

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

    pending = None        # file frames: the temporary of a new frame (see framefile)

    def commit(self):
        """File frames move a new frame into place (see framefile); nothing here."""

    def abort(self):
        """File frames remove the temporary of a new frame; nothing here."""


class RawChunk:
    """A chunk stored uncompressed, given as its 32-byte header and the data apart, so
    that file frames write the data straight from the caller's buffer (no copy).

    Built by :func:`raw_or_chunk`; frames other than contiguous files join the two.
    """

    __slots__ = ("header", "data")

    def __init__(self, header: bytes, data):
        self.header, self.data = bytes(header), memoryview(data).cast("B")
        (cb,) = struct.unpack_from("<i", self.header, 12)
        if len(self.header) != CHUNK_HEADER or cb != len(self):
            raise ParameterError(f"raw chunk header says cbytes {cb}, header and data hold "
                                 f"{len(self)} bytes")

    def __len__(self) -> int:
        return len(self.header) + len(self.data)

    def joined(self) -> bytes:
        return self.header + self.data.tobytes()


def chunk_len(chunk) -> int:
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
    if code not in SPECIAL_OFFSET_CODES or len(chunk) != CHUNK_HEADER or info.chunksize <= 0:
        return 0
    if code == 2 and chunk[3] != min(info.typesize, 255):
        return 0
    return code


def serialize(info: FrameInfo, meta: dict, vlmeta: dict, chunks, nbytes: int,
              crcs=None) -> bytes:
    """A whole contiguous frame from a list of chunks (§4.7), with the checksum record
    when `crcs` is given (one per chunk, :mod:`ndpack.storage.checksums`)."""
    info = dataclasses.replace(info, sparse=False)
    parts, offsets, pos = [], [], 0
    n = len(chunks)
    for ch in chunks:
        code = index_special(ch, info)
        if code:
            offsets.append(special_offset(code))
            continue
        offsets.append(pos)
        parts.append(ch)                 # (joined once below: no copy per chunk)
        pos += len(ch)
    index = encode_index(offsets) if n else b""
    vlmeta = checksums.with_record(vlmeta, crcs, pos, nbytes, meta, info.typesize)
    trailer = checksums.mark(build_trailer(vlmeta), vlmeta, pos, nbytes)
    hlen = len(build_header(info, meta, 0, 0, 0, False))
    frame_len = hlen + pos + len(index) + len(trailer)
    header = build_header(info, meta, nbytes, pos, frame_len, bool(vlmeta), empty=not n)
    return b"".join([header, *parts, index, trailer])


class MemoryFrame(FrameBase):
    """A super-chunk held in memory as a list of chunks (bytes or buffer slices)."""

    trusted = True               # parse_cframe's frames are not

    def __init__(self, info: FrameInfo, meta: dict | None = None):
        super().__init__(info, meta)
        self.fresh = True                 # parse_cframe clears it
        self.chunks: list = []
        self._cbytes = 0

    @property
    def cbytes(self) -> int:
        return self._cbytes

    def get(self, i: int, buf=None, partial=False):
        if self.trusted or self.crcs is None:
            return self.chunks[self._check_index(i)]
        return checksums.checked(self, i, *self.fetch(i, buf, partial))

    def fetch(self, i: int, buf=None, partial=False):
        """``(chunk, crc)``: chunk `i` not checked yet and the value its check must find
        (None: no check; see the file frames' ``fetch``)."""
        if self.trusted or self.crcs is None:
            return self.chunks[self._check_index(i)], None
        with self.lock:                 # the chunk and its recorded value together
            i = self._check_index(i)
            return self.chunks[i], checksums.expected(self, i, partial)

    # `sums` (append, insert, update): the chunk's checksums when the caller has them
    # (``ChunkParts.sums``, from the threads that encoded its blocks, or a copied
    # chunk's ``stored``), recorded as they are instead of hashing the chunk again.

    def append(self, chunk, sums=None):
        self.insert(self.nchunks, chunk, op="append", sums=sums)

    def insert(self, i: int, chunk, op: str = "insert", sums=None):
        if isinstance(chunk, RawChunk):
            chunk = chunk.joined()
        with self.lock:
            self._check_write()
            i = self._check_index(i, allow_end=True)
            chunk_len(chunk)
            if i == self.nchunks:
                op = "append"
            self._account(i, chunk_nbytes_of(chunk), op)
            checksums.on_write(self, i, chunk, op, sums)
            self.chunks.insert(i, chunk)
            self._cbytes += len(chunk)
            self.changed(op, i)

    def update(self, i: int, chunk, sums=None):
        with self.lock:
            self._check_write()
            i = self._check_index(i)
            chunk_len(chunk)
            self._account(i, chunk_nbytes_of(chunk), "update")
            checksums.on_write(self, i, chunk, "update", sums)
            self._cbytes += len(chunk) - len(self.chunks[i])
            self.chunks[i] = chunk
            self.changed("update", i)

    def _extend_same(self, chunk: bytes, count: int) -> None:
        self.chunks.extend([chunk] * count)
        self._cbytes += len(chunk) * count

    def _reordered(self, order: list, became_var: bool) -> None:
        self.chunks = [self.chunks[k] for k in order]

    def delete(self, i: int):
        with self.lock:
            self._check_write()
            i = self._check_index(i)
            self.nbytes -= self.cnb.pop(i)
            self._cbytes -= len(self.chunks[i])
            checksums.on_delete(self, i)
            del self.chunks[i]
            self.changed("delete", i)

    def to_cframe(self) -> bytes:
        with self.lock:
            return serialize(self.info, self.meta, self.vlmeta, self.chunks, self.nbytes,
                             self.crcs)


# ---------------------------------------------------------------------------------------
# readers over a file or buffer
