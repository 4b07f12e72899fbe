"""Temporary compressed pieces of arrays: the sorted runs of the external sorts.

A :class:`Spool` keeps 1-D NumPy pieces compressed (LZ4 clevel 1 with shuffle, one C
thread: on 1 MB of sorted float64 it compresses at ~2 GB/s and decodes at ~4.5 GB/s,
about forty times the speed of a sort, for a ratio of ~1.5) and gives them back by
number.  Pieces live in memory, or in an unnamed temporary file of a folder (the
output's, so that runs of a sort written to disk go to the same disk): the file has
no name at any moment on Linux (``O_TMPFILE``; elsewhere it is unlinked at once or at
:meth:`Spool.close`), so nothing is left behind by an exception, a kill or a full
disk.  Appends and reads may come from several threads.

Examples
--------
>>> import numpy as np, tempfile
>>> with Spool(tempfile.mkdtemp()) as s:
...     i = s.append(np.arange(5.0))
...     j = s.append(np.array([7, 8], np.int16))
...     s.read(j).tolist(), s.read(i).tolist(), s.cbytes > 0
([7, 8], [0.0, 1.0, 2.0, 3.0, 4.0], True)
"""

from __future__ import annotations

import os
import tempfile
import threading

import numpy as np

from ndpack.chunks import compress2, decompress2
from ndpack.codecs import Codec, Filter, make_cparams

__all__ = ["Spool"]

_MAX_PIECE = 2**31 - 64          # one chunk holds at most this many bytes


class Spool:
    """Compressed 1-D pieces, in memory (`folder` None) or in an unnamed temporary file
    of `folder`."""

    def __init__(self, folder=None):
        self.lock = threading.Lock()
        self.pieces: list = []            # (bytes or (offset, length), dtype, size)
        self.cbytes = 0
        self.fd = None
        self._cparams: dict = {}
        if folder is not None:
            self.fd = _unnamed_file(os.fspath(folder))
            self.end = 0

    def _cp(self, itemsize: int):
        cp = self._cparams.get(itemsize)
        if cp is None:
            cp = self._cparams[itemsize] = make_cparams(
                codec=Codec.LZ4, clevel=1, typesize=min(itemsize, 255), nthreads=1,
                filters=[Filter.NOFILTER] * 5 + [Filter.SHUFFLE])
        return cp

    def append(self, values: np.ndarray) -> int:
        """Store a copy of the 1-D `values` (compressed); returns its number."""
        values = np.ascontiguousarray(values)
        if values.nbytes > _MAX_PIECE:
            raise ValueError(f"a piece of {values.nbytes} bytes is too big for a chunk")
        data = compress2(values.view(np.uint8).reshape(-1), cparams=self._cp(values.itemsize)) \
            if values.size else b""
        with self.lock:
            if self.fd is None:
                where = data
            else:
                where = (self.end, len(data))
                self.end += len(data)
            self.pieces.append((where, values.dtype, values.size))
            self.cbytes += len(data)
            number = len(self.pieces) - 1
        if self.fd is not None:
            _write_all(self.fd, data, where[0])
        return number

    def read(self, number: int) -> np.ndarray:
        """Piece `number`, decoded into a new array."""
        where, dtype, size = self.pieces[number]
        out = np.empty(size, dtype)
        if size:
            if isinstance(where, tuple):
                where = os.pread(self.fd, where[1], where[0])
            decompress2(where, out.view(np.uint8).reshape(-1), nthreads=1)
        return out

    def close(self) -> None:
        """Drop the pieces (and the file)."""
        self.pieces = []
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _unnamed_file(folder: str) -> int:
    """A file descriptor of a temporary file in `folder` that has no name (removed at
    once where the system allows, by the OS at close in any case)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        try:
            return os.open(folder, flag | os.O_RDWR, 0o600)
        except OSError:
            pass                         # a file system without O_TMPFILE
    fd, name = tempfile.mkstemp(prefix=".ndpack-sort-", dir=folder)
    try:
        os.unlink(name)                  # POSIX: the open descriptor keeps the data
    except OSError:
        pass
    return fd


def _write_all(fd: int, data: bytes, pos: int) -> None:
    view, done = memoryview(data), 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], pos + done)
