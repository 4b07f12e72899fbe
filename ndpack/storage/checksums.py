"""Chunk checksums: an integrity record that no Blosc2 implementation has.

A frame may carry a crc32c (Castagnoli) of every chunk it stores, in the vlmeta entry
``ndpack.checksums`` (FORMAT.md §4.5: a vlmeta value is a chunk whose content is
msgpack).  Its value is the msgpack map::

    {"alg": "crc32c", "version": 1, "crcs": <bin: one little-endian uint32 per chunk>,
     "frame": [nbytes, cbytes]}

stored as a memcpyed chunk (checksums do not compress).  Readers that do not know it
(python-blosc2, C-Blosc2) see one more vlmeta entry and read the data as before.  The
trailer's 16 fingerprint bytes (zeros in every C-Blosc2 frame) hold ``b"ndpk"`` and a
crc32c of the frame's ``nbytes`` and ``cbytes`` (:func:`mark`): C-Blosc2 zeroes them
whenever it rewrites the trailer, so a record whose mark is gone, or whose ``frame``
sizes are not the frame's, was left behind by another writer and is dropped at open
(:func:`take_record`).  A changed offsets index needs no check of its own: a chunk
read through a wrong entry does not match its checksum.

What a checksum covers: the chunk's bytes as the frame stores them (the compressed
chunk, header included), so a reader checks them before decoding anything.  Special
chunks of zeros, NaN or uninitialized values may live in the offsets index only
(§4.4), where a reader synthesizes their 32 bytes; their checksum covers what they
mean -- the special code, ``nbytes`` and (NaN only) the typesize -- not the header
bytes a writer happened to use.

The frames (:mod:`ndpack.storage.frame`, :mod:`ndpack.storage.framefile`) call the
functions here: :func:`on_write` / :func:`on_delete` with every chunk write, insert,
update and delete (appends and slice writes go through them), :func:`on_reorder` when
the chunks are reordered, :func:`checked` when a whole chunk is read, :func:`with_record` when the trailer is written and
:func:`take_record` when a frame is opened.  Verification follows
``DParams(verify=...)`` (:func:`configure`):

* ``True`` (default): a chunk is checked whenever it is decoded whole or its bytes
  are read whole from a file.  Reads of a few blocks of a file chunk
  (``ndpack.storage.ndread``: the C core reads only those blocks' bytes) cannot be
  checked, and partial decodes of memory-mapped or in-memory chunks are not (hashing
  the whole chunk would touch all its pages).
* ``"full"``: every chunk a read touches is checked (file chunks are read whole).
* ``False``: nothing is checked (the record is still kept up to date on writes).

Chunks of frames built in this process in memory are not checked (they never left
it).  New frames carry a record when :func:`enabled` (``NDPACK_CHECKSUMS=0`` or
``1``, :func:`set_default`); see docs/storage.md for the measured cost that chose
the default.

Examples
--------
>>> import numpy as np, ndpack
>>> from ndpack.storage.checksums import chunk_crc
>>> a = ndpack.asarray(np.arange(10), chunks=(4,), blocks=(2,))
>>> frame = a.schunk.frame
>>> [c == chunk_crc(frame.get(i)) for i, c in enumerate(frame.crcs)]
[True, True, True]
"""

from __future__ import annotations

import array
import os
import struct
import sys
from typing import NamedTuple

import numpy as np

from ndpack._core import block_sums_check as check_block_sums, crc32c_combine
from ndpack.chunks import block_sums, compress2, crc32c, decompress2, decompress_crc
from ndpack.codecs import Codec, make_cparams
from ndpack.errors import FormatError, NdpackError, ParameterError
from ndpack.storage.meta import packb, unpack_vlmeta_value

__all__ = ["RECORD", "WHOLE_CHECK_BYTES", "Record", "enabled", "set_default", "new_record",
           "chunk_crc", "chunk_sums", "on_write", "on_delete", "on_reorder", "expected",
           "checked", "decode_checked", "block_entry", "block_mismatch", "with_record", "take_record",
           "configure", "verify_mode"]

RECORD = "ndpack.checksums"
ALG = "crc32c"
VERSION = 1
_SPECIAL_TAG = b"ndpack special chunk"
#: Partial reads of a chunk that has no block checksums (python-blosc2's files, older
#: ndpack's) check it whole when it holds at most this many stored bytes, else read
#: it unchecked (``ndpack verify`` reports which files are in that case).
WHOLE_CHECK_BYTES = 1 << 20
_DEFAULT = [True]
_RECORD_CPARAMS: list = []         # built at first use (nothing runs at import)


def enabled() -> bool:
    """Whether new frames carry checksums: ``NDPACK_CHECKSUMS`` (0/1) when set,
    else the default (:func:`set_default`)."""
    env = os.environ.get("NDPACK_CHECKSUMS")
    if env is not None and env.strip() in ("0", "1"):
        return env.strip() == "1"
    return _DEFAULT[0]


def set_default(on: bool) -> bool:
    """Set whether new frames carry checksums; returns the previous setting."""
    old, _DEFAULT[0] = _DEFAULT[0], bool(on)
    return old


def verify_mode(value):
    """`value` checked as a ``DParams.verify`` setting (True, False or "full")."""
    if isinstance(value, str) and value == "full":
        return "full"
    if isinstance(value, bool) or value in (0, 1):
        return bool(value)
    raise ParameterError(f"dparams verify must be True, False or 'full', not {value!r}")


class Record:
    """The checksums a frame keeps: a crc32c per chunk and, per chunk, its block
    checksums (module docstring).

    ``record[i]`` is chunk `i`'s crc32c (``len``, iteration and ``list`` as for the
    array of them); :meth:`entry` its block checksums (bytes of ``nblocks + 1``
    uint32, :func:`ndpack.chunks.block_sums`) or None when unknown (chunks written
    before block checksums existed, special chunks).
    """

    __slots__ = ("crcs", "blocks")

    def __init__(self, crcs=None, blocks=None):
        self.crcs = array.array("I") if crcs is None else crcs
        self.blocks = [None] * len(self.crcs) if blocks is None else blocks
        if len(self.blocks) != len(self.crcs):
            raise ParameterError(f"{len(self.blocks)} block entries for {len(self.crcs)} chunks")

    def __len__(self) -> int:
        return len(self.crcs)

    def __getitem__(self, i: int) -> int:
        return self.crcs[i]

    def __iter__(self):
        return iter(self.crcs)

    def entry(self, i: int):
        """Chunk `i`'s block checksums, or None."""
        return self.blocks[i]

    def sums(self, i: int) -> tuple:
        """``(crc, entry)`` of chunk `i` (what a copy of the chunk records)."""
        return self.crcs[i], self.blocks[i]

    def put(self, i: int, sums: tuple, insert: bool) -> None:
        """Record ``sums = (crc, entry)`` for chunk `i`, inserted before the current
        `i` when `insert`, else replacing it."""
        crc, entry = sums
        if insert:
            self.crcs.insert(i, crc)
            self.blocks.insert(i, entry)
        else:
            self.crcs[i], self.blocks[i] = crc, entry

    def extend_same(self, sums: tuple, count: int) -> None:
        """`count` more chunks with the same checksums."""
        self.crcs.extend(array.array("I", [sums[0]]) * count)
        self.blocks.extend([sums[1]] * count)

    def delete(self, i: int) -> None:
        del self.crcs[i]
        del self.blocks[i]

    def reorder(self, order) -> None:
        """Chunk ``order[k]`` became chunk `k`."""
        self.crcs = array.array("I", [self.crcs[k] for k in order])
        self.blocks = [self.blocks[k] for k in order]

    def with_blocks(self) -> int:
        """How many chunks have block checksums."""
        return sum(e is not None for e in self.blocks)


def chunk_crc(chunk) -> int:
    """The checksum of a stored chunk (bytes-like, or a frame's RawChunk: header and
    data apart); special index-only kinds by meaning (module docstring)."""
    header = getattr(chunk, "header", None)
    if header is not None:
        return crc32c(chunk.data, crc32c(header))
    if len(chunk) == 32 and (chunk[2] & 0x05) == 0x05:
        code = (chunk[31] >> 4) & 0x07
        if code in (1, 2, 4):
            ts = chunk[3] if code == 2 else 0
            return crc32c(_SPECIAL_TAG + struct.pack("<BBi", code, ts,
                                                    struct.unpack_from("<i", chunk, 4)[0]))
    return crc32c(chunk)


def chunk_sums(chunk, given=None) -> tuple:
    """``(crc, entry)`` of a stored chunk: its :func:`chunk_crc` and block checksums
    (:func:`ndpack.chunks.block_sums`; None for chunks without them), hashed in one
    pass.  `given`: the checksums the writer has (``ChunkParts.sums``, a copied
    chunk's record), taken as they are; a crc without an entry gets one computed
    from the bytes only when they hash to that crc (a copy of a damaged chunk is
    never blessed with fresh block checksums)."""
    if given is not None and not isinstance(given, tuple):
        given = (int(given), None)
    if len(chunk) <= 32:                          # specials: by meaning
        return (given[0] if given else chunk_crc(chunk)), None
    if given is not None and given[1] is not None:
        return given
    raw = getattr(chunk, "header", None) is not None   # memcpyed: header + data apart
    crc, entry = _raw_sums(chunk) if raw else block_sums(chunk)
    if given is not None and crc != given[0]:
        return given[0], None
    return crc, entry


def _raw_sums(chunk) -> tuple:
    """``(crc, entry)`` of a RawChunk (memcpyed: the header, then each blocksize bytes
    of the data), the chunk's crc joined from the entries: one pass."""
    bs = struct.unpack_from("<i", chunk.header, 8)[0]
    data = chunk.data
    if bs <= 0 or not len(data):
        return chunk_crc(chunk), None
    crc = crc32c(chunk.header)
    out = array.array("I", [crc])
    for k in range(0, len(data), bs):
        piece = data[k:k + bs]
        out.append(crc32c(piece))
        crc = crc32c_combine(crc, out[-1], len(piece))
    return crc, out.tobytes()


def on_write(frame, i: int, chunk, op: str, sums=None):
    """Record the checksums of `chunk` written at `i` by `op` ("append", "insert" or
    "update"); nothing when the frame carries no record.  `sums`: ``(crc, entry)``
    when the writer has them (see :func:`chunk_sums`), else None (hashed here)."""
    rec = frame.crcs
    if rec is None:
        return
    rec.put(i, chunk_sums(chunk, sums), insert=op != "update")


def on_delete(frame, i: int):
    """Forget the checksums of chunk `i`, deleted."""
    if frame.crcs is not None:
        frame.crcs.delete(i)


def on_reorder(frame, order) -> None:
    """Move the checksums with their chunks: chunk ``order[k]`` became chunk `k`."""
    if frame.crcs is not None:
        frame.crcs.reorder(order)


class _Blocks(NamedTuple):
    """What a read of some blocks of a chunk checks (see :func:`expected`)."""

    crc: int                 # the chunk's crc32c (small chunks without an entry)
    entry: bytes | None      # its block checksums
    numbers: object          # the blocks the read decodes


def expected(frame, i: int, partial=False):
    """What a read of chunk `i` of `frame` checks, taken under the frame's lock with
    the chunk's bytes: None (nothing), the recorded crc32c (the chunk whole), or the
    blocks a partial read decodes.  `partial`: the caller decodes only part of a chunk
    whose bytes it did not read (a memory map, a buffer): True (which blocks unknown:
    checked only with ``verify="full"``, as hashing the whole chunk would touch every
    page of it) or the block numbers it decodes (their bytes are checked against the
    chunk's block checksums, or, without them, the chunk whole when it is small:
    :data:`WHOLE_CHECK_BYTES`)."""
    rec = frame.crcs
    if rec is None or not frame.verify or frame.trusted:
        return None
    if partial is False or frame.verify == "full":
        return rec[i]
    if partial is True:
        return None
    return _Blocks(rec[i], rec.entry(i), partial)


def _int32(numbers) -> np.ndarray:
    if type(numbers) is np.ndarray and numbers.dtype == np.int32 and numbers.flags.c_contiguous:
        return numbers
    return np.asarray(numbers, np.int32).reshape(-1)


def block_entry(frame, i: int):
    """The block checksums a read of some blocks of chunk `i` of `frame` checks from
    the file (:func:`ndpack.chunks.read_blocks_from_file`): the entry, None when
    nothing is checked, or False when the chunk has a crc32c but no entry (then a
    small chunk is better read whole, and checked)."""
    rec = frame.crcs
    if rec is None or not frame.verify or frame.trusted:
        return None
    entry = rec.entry(i)
    return False if entry is None else entry


_RECORDED = object()                 # checked's default: the record's value


def checked(frame, i: int, data, want=_RECORDED):
    """`data` (chunk `i`) after checking it against `want` (default: the record's
    value for a whole read, :func:`expected`; None: no check; the blocks a partial read
    decodes); :class:`FormatError` naming the chunk (and the block) on a mismatch."""
    if want is _RECORDED:
        want = expected(frame, i)
    if want is None:
        return data
    if type(want) is _Blocks:
        if want.entry is not None and len(data) > 32:
            try:                                   # (the binding itself: reads of one
                check_block_sums(data, _int32(want.numbers), want.entry, True)   # block)
            except FormatError as exc:
                raise block_mismatch(frame, i, exc) from None
            return data
        if len(data) > WHOLE_CHECK_BYTES:
            return data                     # no block checksums: too big to check whole
        want = want.crc
    got = chunk_crc(data)
    if got != want:
        raise _mismatch(frame, i, got, want, len(data))
    return data


def decode_checked(frame, i: int, data, want, dst, nthreads: int = 1) -> None:
    """Decode chunk `i` (`data`, read whole, from the frame's ``fetch``) into the
    writable buffer `dst`, checking it against `want` (None: no check) in the same
    pass: each block's bytes are hashed by the thread that decodes it, just before,
    so the chunk is read once.  A mismatch raises :func:`checked`'s error (`dst` then
    holds whatever the damaged bytes decoded to)."""
    if want is None:
        decompress2(data, dst, nthreads=nthreads)
        return
    if getattr(data, "header", None) is not None or len(data) == 32:
        decompress2(checked(frame, i, data, want), dst, nthreads=nthreads)   # by meaning
        return
    try:
        got = decompress_crc(data, dst, nthreads)
    except NdpackError:
        got = crc32c(data)
        if got == want:
            raise                           # recorded as written: a decoding error
    if got != want:
        raise _mismatch(frame, i, got, want, len(data)) from None


def _mismatch(frame, i: int, got: int, want: int, size: int) -> FormatError:
    return FormatError(f"{_chunk_name(frame, i)}: checksum mismatch (crc32c {got:08x}, the "
                       f"frame's record says {want:08x}): its {size} stored bytes changed "
                       "after they were written")


def _chunk_name(frame, i: int) -> str:
    path = getattr(frame, "path", None)
    return f"{path}: chunk {i}" if path else f"chunk {i}"


def block_mismatch(frame, i: int, exc: Exception) -> FormatError:
    """The error of a read of some blocks of chunk `i` of `frame` whose bytes do not
    match their block checksums (`exc`: the C core's, naming the block)."""
    return FormatError(f"{_chunk_name(frame, i)}: {exc}; its stored bytes changed after "
                       "they were written")


def with_record(vlmeta: dict, crcs, cbytes: int, nbytes: int, meta: dict | None = None,
                typesize: int = 0) -> dict:
    """`vlmeta` (name -> chunk) plus the record `crcs` (a :class:`Record`) for a frame
    of these ``cbytes`` and ``nbytes`` (the trailer's vlmeta), covering the frame's
    metalayers `meta` (name -> content), `vlmeta` and `typesize` too (:func:`meta_sums`)."""
    if not crcs:                          # none, or no chunk yet: no record
        return vlmeta
    values = crcs.crcs if isinstance(crcs, Record) else array.array("I", crcs)
    value = {"alg": ALG, "version": VERSION, "crcs": _le(values),
             "frame": [int(nbytes), int(cbytes)]}
    if meta is not None:
        value["meta"] = meta_sums(meta, vlmeta, typesize)
    if isinstance(crcs, Record) and crcs.with_blocks():
        counts = array.array("I", [0 if e is None else len(e) // 4 for e in crcs.blocks])
        value["bcounts"] = _le(counts)
        value["blocks"] = _le_entries(b"".join(e for e in crcs.blocks if e is not None))
    if not _RECORD_CPARAMS:
        _RECORD_CPARAMS.append(make_cparams(codec=Codec.LZ4, clevel=0, typesize=1, nthreads=1))
    out = dict(vlmeta)
    out[RECORD] = compress2(packb(value), cparams=_RECORD_CPARAMS[0])   # memcpyed
    return out


def meta_sums(meta: dict, vlmeta: dict, typesize: int) -> dict:
    """What the record keeps of a frame's metadata: the crc32c of each metalayer's
    content (``"b2nd"`` holds the shape, chunks, blocks and dtype every read trusts),
    of the vlmeta entries (names and values, in name order; saved expressions live
    there) and of the typesize."""
    out = {f"m:{name}": crc32c(bytes(content)) for name, content in meta.items()}
    c = crc32c(struct.pack("<i", int(typesize)))
    for name in sorted(vlmeta):
        if name == RECORD:
            continue
        key, val = name.encode("utf-8", "surrogateescape"), bytes(vlmeta[name])
        c = crc32c(val, crc32c(key, crc32c(struct.pack("<ii", len(key), len(val)), c)))
    out["vlmeta"] = c
    return out


def _check_meta(frame, sums) -> str | None:
    """Why the frame's metadata does not match the record's `sums`, or None.  A
    metalayer other than ``b2nd`` may have been updated in place by C-Blosc2 (which
    rewrites the header only, not the trailer): not held against the record."""
    if not isinstance(sums, dict):
        return f"vlmeta {RECORD!r}: malformed metadata checksums"
    now = meta_sums(frame.meta, frame.vlmeta, frame.info.typesize)
    for key in ("m:b2nd", "vlmeta"):
        if sums.get(key) != now.get(key):
            what = "the b2nd metalayer (shape, chunks, dtype)" if key == "m:b2nd" else \
                "the variable-length metadata (or the typesize)"
            return (f"{what} changed after the checksum record was written (crc32c "
                    f"{now.get(key, 0):08x}, the record says {sums.get(key) or 0:08x})")
    return None


def _le(values: array.array) -> bytes:
    """uint32 values as little-endian bytes."""
    if sys.byteorder != "little":
        values = array.array("I", values)
        values.byteswap()
    return values.tobytes()


def _le_entries(raw: bytes) -> bytes:
    """Block entries (native uint32, as the C core writes them) as little-endian."""
    if sys.byteorder == "little":
        return raw
    values = array.array("I", raw)
    values.byteswap()
    return values.tobytes()


def mark(trailer: bytes, vlmeta: dict, cbytes: int, nbytes: int) -> bytes:
    """`trailer` (built for `vlmeta`) with the writer mark in its fingerprint bytes
    when `vlmeta` holds the record: ``b"ndpk"`` and a crc32c of the frame's sizes in
    the 16 bytes C-Blosc2 always writes as zeros (fingerprint type 0 kept; readers
    ignore them).  C-Blosc2 rewrites the trailer, zeroing them, whenever it changes
    chunks or vlmeta, so a record without its mark was not written by the frame's last
    writer."""
    if RECORD not in vlmeta:
        return trailer
    return trailer[:-16] + _mark_of(cbytes, nbytes)


def _mark_of(cbytes: int, nbytes: int) -> bytes:
    return b"ndpk" + struct.pack("<I", crc32c(struct.pack("<qq", nbytes, cbytes))) + bytes(8)


def decode_record(chunk) -> tuple:
    """The checksums held by a record chunk (a :class:`Record`), the frame sizes it
    was written for (``[nbytes, cbytes]``) and its metadata checksums (None in records
    written before them, see :func:`meta_sums`); :class:`FormatError` if malformed."""
    value = unpack_vlmeta_value(chunk, RECORD)
    if not isinstance(value, dict) or value.get("alg") != ALG or value.get("version") != VERSION \
            or not isinstance(value.get("crcs"), bytes) or len(value["crcs"]) % 4 \
            or not isinstance(value.get("frame"), list) or len(value["frame"]) != 2 \
            or not all(isinstance(v, int) for v in value["frame"]):
        raise FormatError(f"vlmeta {RECORD!r}: not a version {VERSION} {ALG} record")
    crcs = _from_le(value["crcs"])
    crcs_meta = value.get("meta")
    blocks = None
    if "bcounts" in value or "blocks" in value:
        counts, raw = value.get("bcounts"), value.get("blocks")
        if not isinstance(counts, bytes) or not isinstance(raw, bytes) or len(counts) % 4 \
                or len(counts) != len(value["crcs"]):
            raise FormatError(f"vlmeta {RECORD!r}: malformed block checksums")
        counts = _from_le(counts)
        if sum(counts) * 4 != len(raw) or any(c == 1 for c in counts):
            raise FormatError(f"vlmeta {RECORD!r}: block checksums of {len(raw)} bytes for "
                              f"{sum(counts)} entries")
        raw = _from_le(raw).tobytes()             # native order, as the C core reads them
        blocks, at = [], 0
        for c in counts:
            blocks.append(raw[4 * at:4 * (at + c)] if c else None)
            at += c
    rec = Record(crcs, blocks)
    return rec, value["frame"], crcs_meta


def _from_le(raw: bytes) -> array.array:
    values = array.array("I")
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def take_record(frame, cbytes: int, fingerprint: bytes | None):
    """Move the record out of an opened frame's vlmeta into ``frame.crcs``.

    A record written for another state of the frame is stale: the trailer's
    `fingerprint` bytes lack its mark (:func:`mark`: another writer rewrote the
    trailer), or ``nbytes`` or ``cbytes`` differ.  It is dropped
    (``frame.crc_stale``), the frame reads unchecked, and its next write removes it.

    A record that cannot be decoded, or that does not hold one checksum per chunk of a
    frame it was written for, is kept in ``frame.crc_problem`` and raised by
    :func:`configure` unless verification is off.
    """
    frame.crc_problem, frame.crc_stale, frame.crcs = None, False, None
    raw = frame.vlmeta.pop(RECORD, None)
    if raw is None:                       # an empty frame starts one, if enabled
        frame.crcs = new_record() if frame.nchunks == 0 else None
        return
    try:
        crcs, (nbytes, cb), msums = decode_record(raw)
    except FormatError as exc:
        frame.crc_problem = str(exc)
        return
    if fingerprint != _mark_of(cbytes, frame.nbytes) or (nbytes, cb) != (frame.nbytes, cbytes):
        frame.crc_stale = True
    elif len(crcs) != frame.nchunks:
        frame.crc_problem = (f"vlmeta {RECORD!r}: {len(crcs)} checksums for "
                             f"{frame.nchunks} chunks")
    elif msums is not None and (why := _check_meta(frame, msums)) is not None:
        frame.crc_problem = why
    else:
        frame.crcs = crcs


def configure(frame, verify) -> None:
    """Apply a ``DParams.verify`` setting to `frame`."""
    mode = verify_mode(verify)
    problem = getattr(frame, "crc_problem", None)
    if problem and mode:
        raise FormatError(f"{problem}; open with dparams={{'verify': False}} to read the "
                          "data unchecked (a write then drops the record)")
    frame.verify = mode


def new_record():
    """The record of a new frame: an empty :class:`Record` when checksums are enabled,
    else None."""
    return Record() if enabled() else None
