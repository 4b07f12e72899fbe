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

from ndpack.chunks import compress2, crc32c, decompress2, decompress_crc
from ndpack.codecs import Codec, make_cparams
from ndpack.errors import FormatError, NdpackError, ParameterError
from ndpack.storage.meta import packb, unpack_vlmeta_value

__all__ = ["RECORD", "enabled", "set_default", "new_record", "chunk_crc", "on_write", "on_delete",
           "on_reorder", "expected", "checked", "decode_checked", "with_record", "take_record", "configure", "verify_mode"]

RECORD = "ndpack.checksums"
ALG = "crc32c"
VERSION = 1
_SPECIAL_TAG = b"ndpack special chunk"
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


def on_write(frame, i: int, chunk, op: str, value: int | None = None):
    """Record the checksum of `chunk` written at `i` by `op` ("append", "insert" or
    "update"); nothing when the frame carries no record.  `value`: the chunk's crc32c
    when its encoder joined it from its blocks (``ChunkParts.crc``), else None (hashed
    here); chunks of a header alone are hashed by meaning (:func:`chunk_crc`)."""
    crcs = frame.crcs
    if crcs is None:
        return
    if value is None or getattr(chunk, "header", None) is not None or len(chunk) <= 32:
        value = chunk_crc(chunk)
    if op == "update":
        crcs[i] = value
    else:
        crcs.insert(i, value)


def on_delete(frame, i: int):
    """Forget the checksum of chunk `i`, deleted."""
    if frame.crcs is not None:
        del frame.crcs[i]


def on_reorder(frame, order) -> None:
    """Move the checksums with their chunks: chunk ``order[k]`` became chunk `k`."""
    crcs = frame.crcs
    if crcs is not None:
        moved = [crcs[k] for k in order]
        for k, value in enumerate(moved):
            crcs[k] = value


def expected(frame, i: int, partial: bool = False):
    """The recorded checksum of chunk `i` when this read of `frame` is checked, else
    None (take it under the frame's lock, with the chunk's bytes).  `partial`: the
    caller decodes only part of a chunk whose bytes it did not read (a memory map, a
    buffer), which is checked only with ``verify="full"``: hashing the whole chunk
    would touch every page of it."""
    crcs = frame.crcs
    if crcs is None or not frame.verify or frame.trusted or (partial and frame.verify != "full"):
        return None
    return crcs[i]


def checked(frame, i: int, data, want=-1):
    """`data` (chunk `i` read whole) after checking it against `want` (default: the
    record's value, :func:`expected`; None: no check); :class:`FormatError` naming the
    chunk on a mismatch."""
    if want == -1:
        want = expected(frame, i)
    if want is None:
        return data
    got = chunk_crc(data)
    if got != want:
        raise _mismatch(i, got, want, len(data))
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
        raise _mismatch(i, got, want, len(data)) from None


def _mismatch(i: int, got: int, want: int, size: int) -> FormatError:
    return FormatError(f"chunk {i}: checksum mismatch (crc32c {got:08x}, the frame's "
                       f"record says {want:08x}): its {size} stored bytes changed "
                       "after they were written")


def with_record(vlmeta: dict, crcs, cbytes: int, nbytes: int) -> dict:
    """`vlmeta` (name -> chunk) plus the record for a frame of these ``cbytes`` and
    ``nbytes`` (the trailer's vlmeta)."""
    if not crcs:                          # none, or no chunk yet: no record
        return vlmeta
    if sys.byteorder != "little":
        crcs = array.array("I", crcs)
        crcs.byteswap()
    value = {"alg": ALG, "version": VERSION, "crcs": crcs.tobytes(),
             "frame": [int(nbytes), int(cbytes)]}
    if not _RECORD_CPARAMS:
        _RECORD_CPARAMS.append(make_cparams(codec=Codec.LZ4, clevel=0, typesize=1, nthreads=1))
    out = dict(vlmeta)
    out[RECORD] = compress2(packb(value), cparams=_RECORD_CPARAMS[0])   # memcpyed
    return out


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


def decode_record(chunk) -> tuple[array.array, list]:
    """The checksums held by a record chunk and the frame sizes it was written for
    (``[nbytes, cbytes]``); :class:`FormatError` if malformed."""
    value = unpack_vlmeta_value(chunk, RECORD)
    if not isinstance(value, dict) or value.get("alg") != ALG or value.get("version") != VERSION \
            or not isinstance(value.get("crcs"), bytes) or len(value["crcs"]) % 4 \
            or not isinstance(value.get("frame"), list) or len(value["frame"]) != 2 \
            or not all(isinstance(v, int) for v in value["frame"]):
        raise FormatError(f"vlmeta {RECORD!r}: not a version {VERSION} {ALG} record")
    crcs = array.array("I")
    crcs.frombytes(value["crcs"])
    if sys.byteorder != "little":
        crcs.byteswap()
    return crcs, value["frame"]


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
        crcs, (nbytes, cb) = decode_record(raw)
    except FormatError as exc:
        frame.crc_problem = str(exc)
        return
    if fingerprint != _mark_of(cbytes, frame.nbytes) or (nbytes, cb) != (frame.nbytes, cbytes):
        frame.crc_stale = True
    elif len(crcs) != frame.nchunks:
        frame.crc_problem = (f"vlmeta {RECORD!r}: {len(crcs)} checksums for "
                             f"{frame.nchunks} chunks")
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
    """The record of a new frame: an empty array when checksums are enabled, else None."""
    return array.array("I") if enabled() else None
