"""Check a whole file or store: every chunk against the checksum record, then decoded.

``ndpack verify PATH`` (:mod:`ndpack.cli`) runs :func:`verify_path`;
``ndpack verify --add-checksums PATH`` runs :func:`add_checksums`.  A frame (``.b2nd``,
``.b2frame``, a sparse-frame directory, a saved expression's carrier) is one object; a
store (``.b2d`` directory, ``.b2z`` zip, ``.b2e`` file) is its embedded frame plus one
object per key.  For each object every chunk is read whole -- checked against the
record when the frame carries one (:mod:`ndpack.storage.checksums`), its block
checksums too -- and decoded, so frames without checksums are still checked as far as
their structure allows.  Each result says at which granularity reads of the object are
checked: per block (every chunk has block checksums: a slice or a point read checks
what it decodes), per chunk only (partial reads of chunks above
:data:`~ndpack.storage.checksums.WHOLE_CHECK_BYTES` are not checked), or not at all.

Examples
--------
>>> import numpy as np, ndpack, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "a.b2nd")
>>> _ = ndpack.asarray(np.arange(1000), chunks=(100,), urlpath=path, mode="w")
>>> [r.ok for r in verify_path(path)]
[True]
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import zipfile

from ndpack.chunks import decompress2
from ndpack.errors import FormatError, NdpackError, ParameterError
from ndpack.storage import checksums
from ndpack.storage.atomic import replacing
from ndpack.storage.framefile import ContiguousFrame
from ndpack.storage.frame import SPARSE_INDEX
from ndpack.storage.dispatch import open as open_frame, open_store
from ndpack.storage.embedstore import EmbedStore

__all__ = ["Result", "verify_path", "verify_schunk", "add_checksums"]

MAX_ERRORS = 20             # errors listed per object (the count covers all)


@dataclasses.dataclass
class Result:
    """What :func:`verify_schunk` found in one object."""

    name: str
    nchunks: int = 0
    checksums: str = "none"          # "crc32c", "none" or "stale" (dropped at open)
    blocks: int = 0                  # chunks with block checksums
    blockable: int = 0               # chunks that can have them (not special)
    errors: list = dataclasses.field(default_factory=list)
    nerrors: int = 0

    @property
    def ok(self) -> bool:
        return self.nerrors == 0

    def line(self) -> str:
        """One line for the command: ``NAME: ok (...)`` or ``NAME: N errors: ...``."""
        what = {"crc32c": "crc32c verified", "none": "no checksums; decoded",
                "stale": "checksums stale (another writer); decoded"}[self.checksums]
        if self.checksums == "crc32c":
            what += ("; reads checked per block" if self.blocks >= self.blockable else
                     "; reads checked per chunk only" + (
                         f" ({self.blocks} of {self.blockable} chunks per block)"
                         if self.blocks else "") + ": ndpack verify --add-checksums adds "
                     "block checksums")
        if self.ok:
            return f"{self.name}: ok ({self.nchunks} chunks, {what})"
        more = f" (+{self.nerrors - len(self.errors)} more)" if self.nerrors > len(self.errors) \
            else ""
        return f"{self.name}: {self.nerrors} error(s){more}: " + "; ".join(self.errors)

    def fail(self, msg: str):
        self.nerrors += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(" ".join(msg.split()))


def verify_schunk(schunk, name: str) -> Result:
    """Read every chunk of `schunk` whole (checked against its record when it has
    one; verification is forced on) and decode it."""
    frame = schunk.frame
    res = Result(name, frame.nchunks)
    res.checksums = ("crc32c" if frame.crcs is not None else
                     "stale" if frame.crc_stale else "none")
    old = frame.verify
    frame.verify = True
    try:
        for i in range(frame.nchunks):
            try:
                chunk = frame.get(i)
                _check_entry(frame, i, chunk, res)
                decompress2(chunk, nthreads=schunk.dparams.nthreads)
            except (NdpackError, ValueError, IndexError) as exc:
                res.fail(f"chunk {i}: {exc}" if f"chunk {i}" not in str(exc) else str(exc))
    finally:
        frame.verify = old
    return res


def _check_entry(frame, i: int, chunk, res: Result) -> None:
    """Count chunk `i`'s block checksums and check them against its bytes."""
    rec = frame.crcs
    if rec is None:
        return
    crc, entry = checksums.chunk_sums(chunk)
    if entry is None:
        return
    res.blockable += 1
    have = rec.entry(i)
    if have is None:
        return
    res.blocks += 1
    if have != entry:
        raise FormatError(f"chunk {i}: its block checksums do not match its bytes (the "
                          "record or the chunk changed after they were written)")


def add_checksums(path) -> str:
    """Give the frame at `path` (a ``.b2nd``/``.b2frame`` file, or each member of a
    ``.b2d`` directory store) chunk and block checksums, so that every later read of it
    is checked (:mod:`ndpack.storage.checksums`); returns a line saying what was done.

    The chunks are not rewritten: the file is copied as it is beside its name, the
    copy gets the record in its trailer, and replaces the original at once
    (:mod:`ndpack.storage.atomic`), so a reader sees the old file or the new one.  A
    chunk that does not decode, or does not match the checksums the file already
    records, is refused (:class:`FormatError`, the file left unchanged): checksums
    must not bless damaged data.  A file whose record is complete is left alone.

    Examples
    --------
    >>> import numpy as np, ndpack, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.b2nd")
    >>> _ = ndpack.asarray(np.arange(1000.), chunks=(100,), urlpath=path, mode="w")
    >>> add_checksums(path).endswith("already has chunk and block checksums")
    True
    """
    path = os.fspath(path)
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, SPARSE_INDEX)):
        done = [add_checksums(os.path.join(root, f))
                for root, _, files in sorted(os.walk(path)) for f in sorted(files)
                if f.endswith((".b2nd", ".b2f", ".b2frame"))]
        return f"{path}: {len(done)} member(s): " + "; ".join(done)
    if os.path.isdir(path) or path.endswith((".b2z", ".b2e")):
        raise ParameterError(f"{path}: --add-checksums takes contiguous frames (.b2nd, "
                             ".b2frame files) and .b2d directory stores; for a sparse "
                             "frame or a zip store, copy it into a contiguous one first")
    src = ContiguousFrame(path, mode="r")
    try:
        if src.crcs is not None and src.crcs.with_blocks() == _blockable(src):
            return f"{path}: already has chunk and block checksums"
    finally:
        src.close()
    with replacing(path) as tmp:
        shutil.copyfile(path, tmp)
        fr = ContiguousFrame(tmp, mode="a")
        try:
            old = fr.crcs
            fr.verify = False
            sums = []
            for i in range(fr.nchunks):
                chunk = fr.get(i)
                try:
                    decompress2(chunk)
                except NdpackError as exc:
                    raise FormatError(f"{path}: chunk {i} does not decode ({exc}): no "
                                      "checksums added") from None
                crc, entry = checksums.chunk_sums(chunk)
                if old is not None and old[i] != crc:
                    raise FormatError(f"{path}: chunk {i} does not match its recorded "
                                      "checksum: no checksums added")
                sums.append((crc, entry))
            rec = checksums.Record()
            for i, s in enumerate(sums):
                rec.put(i, s, insert=True)
            fr.crcs = rec
            fr.vlmeta.pop(checksums.RECORD, None)
            fr._flush()
        finally:
            fr.close()
    n = sum(e is not None for _, e in sums)
    return f"{path}: added crc32c checksums to {len(sums)} chunks ({n} per block)"


def _blockable(frame) -> int:
    """Chunks of `frame` that can have block checksums (not special)."""
    frame.verify, old = False, frame.verify
    try:
        return sum(checksums.chunk_sums(frame.get(i))[1] is not None
                   for i in range(frame.nchunks))
    finally:
        frame.verify = old


def _schunk_of(obj):
    return getattr(obj, "schunk", obj)


def _is_store(path: str) -> bool:
    if os.path.isdir(path):
        return not os.path.exists(os.path.join(path, SPARSE_INDEX))
    return path.endswith((".b2e", ".b2z")) or zipfile.is_zipfile(path)


def verify_path(path) -> list[Result]:
    """Check the frame or store at `path`; one :class:`Result` per object.  A frame or
    store that cannot be opened is one failed result naming the error."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file or directory: {path}")
    try:
        if not _is_store(path):
            obj = open_frame(path, mode="r")
            try:
                return [verify_schunk(_schunk_of(obj), path)]
            finally:
                _schunk_of(obj).close()
        return _verify_store(path)
    except (NdpackError, ValueError, OSError) as exc:
        res = Result(path)
        res.fail(f"cannot open: {exc}")
        return [res]


def _verify_store(path: str) -> list[Result]:
    store = open_store(path, mode="r")
    out = []
    try:
        if isinstance(store, EmbedStore):
            out.append(verify_schunk(store.schunk, f"{path}:<embedded>"))
        else:
            out.append(verify_schunk(store.estore.schunk, f"{path}:<embedded>"))
        for key in store.keys():
            name = f"{path}:{key}"
            try:
                value = store[key]
            except (NdpackError, ValueError, OSError) as exc:
                res = Result(name)
                res.fail(f"cannot open: {exc}")
                out.append(res)
                continue
            schunk = _schunk_of(value)
            if hasattr(schunk, "frame"):
                out.append(verify_schunk(schunk, name))
    finally:
        store.close()
    return out
