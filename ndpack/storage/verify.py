"""Check a whole file or store: every chunk against the checksum record, then decoded.

``ndpack verify PATH`` (:mod:`ndpack.cli`) runs :func:`verify_path`.  A frame (``.b2nd``,
``.b2frame``, a sparse-frame directory, a saved expression's carrier) is one object; a
store (``.b2d`` directory, ``.b2z`` zip, ``.b2e`` file) is its embedded frame plus one
object per key.  For each object every chunk is read whole -- checked against the
record when the frame carries one (:mod:`ndpack.storage.checksums`) -- and decoded, so
frames without checksums are still checked as far as their structure allows.

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
import zipfile

from ndpack.chunks import decompress2
from ndpack.errors import NdpackError
from ndpack.storage.frame import SPARSE_INDEX
from ndpack.storage.dispatch import open as open_frame, open_store
from ndpack.storage.embedstore import EmbedStore

__all__ = ["Result", "verify_path", "verify_schunk"]

MAX_ERRORS = 20             # errors listed per object (the count covers all)


@dataclasses.dataclass
class Result:
    """What :func:`verify_schunk` found in one object."""

    name: str
    nchunks: int = 0
    checksums: str = "none"          # "crc32c", "none" or "stale" (dropped at open)
    errors: list = dataclasses.field(default_factory=list)
    nerrors: int = 0

    @property
    def ok(self) -> bool:
        return self.nerrors == 0

    def line(self) -> str:
        """One line for the command: ``NAME: ok (...)`` or ``NAME: N errors: ...``."""
        what = {"crc32c": "crc32c verified", "none": "no checksums; decoded",
                "stale": "checksums stale (another writer); decoded"}[self.checksums]
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
                decompress2(frame.get(i), nthreads=schunk.dparams.nthreads)
            except (NdpackError, ValueError, IndexError) as exc:
                res.fail(f"chunk {i}: {exc}" if f"chunk {i}" not in str(exc) else str(exc))
    finally:
        frame.verify = old
    return res


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
