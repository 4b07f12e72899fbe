"""Crash-atomic creation of files and directories under a name.

Every writer that creates something under a name (array files, saved frames, stores,
computed results, the CLI's outputs) builds it as a *temporary* beside the target and
moves it into place once it is complete:

1. the temporary is named ``.<target name>.<host>-<pid>-<random>.ndpack-tmp`` in the
   target's directory (one pattern, so that people and tools can recognise it; the
   host, letters and digits of its name, tells whose process ids these are);
2. on success its data is flushed when asked (``NDPACK_FSYNC=1``: ``fsync`` of the
   file, or of every file and directory of a tree), it is renamed over the target (``renameat2`` with
   ``RENAME_EXCHANGE`` when a directory or a different kind of file is replaced, so the
   target never disappears), and the target's directory is flushed too;
3. on any error (or when the object that owns an uncommitted temporary is garbage
   collected, or the interpreter exits) the temporary is removed;
4. every new temporary for a target first removes the stale temporaries of that target
   left by processes of this host that no longer run (a writer killed with SIGKILL
   cannot clean up), and those of other hosts (shared file systems) after a day.

So a reader that opens the target sees the old object or the complete new one, never a
prefix, and ``mode="w"`` never removes the old target before its replacement is
complete.  The flushes of step 2 are made with ``NDPACK_FSYNC=1`` only: by default
(as NumPy, h5py, zarr and python-blosc2 write) nothing waits for the disk; the rename
stays atomic for other processes and for writers that are killed, but a power cut may
then leave an empty or partial file.  Unflushed files replace their target with an
exchange (``RENAME_EXCHANGE``), the old file removed on a background thread.

Examples
--------
>>> import os, tempfile
>>> from ndpack.storage.atomic import replacing
>>> d = tempfile.mkdtemp(); target = os.path.join(d, "x.bin")
>>> with replacing(target) as tmp:
...     with open(tmp, "wb") as f:
...         _ = f.write(b"new")
>>> open(target, "rb").read(), os.listdir(d)
(b'new', ['x.bin'])
>>> try:
...     with replacing(target) as tmp:
...         open(tmp, "wb").close()
...         raise RuntimeError("writer failed")
... except RuntimeError:
...     pass
>>> open(target, "rb").read(), os.listdir(d)
(b'new', ['x.bin'])
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import os
import re
import shutil
import socket
import threading
import time
import weakref

__all__ = ["TMP_SUFFIX", "Pending", "replacing", "is_temporary", "remove_stale", "fsync_path",
           "start_writeback"]

TMP_SUFFIX = ".ndpack-tmp"
_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
_AT_FDCWD = -100
_live: set = set()                     # temporaries of this process not yet committed
_lock = threading.Lock()


def _sync_enabled() -> bool:
    """Whether writers flush what they create (``NDPACK_FSYNC=1``; off by default)."""
    return os.environ.get("NDPACK_FSYNC", "0") not in ("0", "no", "false", "off", "")


_doomed: set = set()                   # old targets moved aside, being removed
_BACKGROUND_REMOVE = 64 << 20          # old files from this size are removed in the background


def _remove_later(path: str) -> None:
    """Remove `path` (an old target moved aside under a temporary name) on a
    background thread: freeing a big file's pages and blocks takes a fifth of a second
    per 350 MB here, which the caller need not wait for.  Whatever is left at exit is
    removed then; a killed process leaves a stale temporary, which the next write of
    that target removes (:func:`remove_stale`)."""
    with _lock:
        _doomed.add(path)

    def run():
        _remove(path)
        with _lock:
            _doomed.discard(path)
    threading.Thread(target=run, name="ndpack-unlink", daemon=True).start()


@atexit.register
def _remove_doomed() -> None:
    with _lock:
        left = list(_doomed)
    for path in left:
        _remove(path)


_FOREIGN_STALE = 86400.0      # seconds after which another host's temporary is stale
_HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:16]


def _pattern(tail: str):
    return re.compile(r"\." + re.escape(tail) + r"\.([A-Za-z0-9]{0,16})-(\d+)-[0-9a-f]{8}"
                      + re.escape(TMP_SUFFIX) + r"\Z")


def _new_name(target: str) -> str:
    head, tail = os.path.split(target)
    return os.path.join(head, f".{tail}.{_HOST}-{os.getpid()}-{os.urandom(4).hex()}"
                              f"{TMP_SUFFIX}")


def is_temporary(name) -> bool:
    """Whether the file name `name` is one of our temporaries.

    Examples
    --------
    >>> is_temporary(".a.b2nd.node1-12-0123abcd.ndpack-tmp"), is_temporary("a.b2nd")
    (True, False)
    """
    base = os.path.basename(os.fspath(name))
    return re.match(r"\..+\.[A-Za-z0-9]{0,16}-\d+-[0-9a-f]{8}" + re.escape(TMP_SUFFIX)
                    + r"\Z", base) is not None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:            # another user's live process
        return True
    return True


def _stale(path: str, host: str, pid: int) -> bool:
    if host != _HOST:                  # its pids are not ours: wait for a day
        try:
            return time.time() - os.lstat(path).st_mtime > _FOREIGN_STALE
        except OSError:
            return False
    return pid == os.getpid() or not _alive(pid)     # ours: abandoned (not in _live)


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.remove(path)
    except FileNotFoundError:
        pass


def remove_stale(target) -> list:
    """Remove the temporaries of `target` whose writer process is gone (or that this
    process abandoned, or that another host left more than a day ago); returns their
    paths.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); t = os.path.join(d, "y.b2nd")
    >>> dead = f".y.b2nd.{_HOST}-999999999-0123abcd.ndpack-tmp"
    >>> open(os.path.join(d, dead), "w").close()
    >>> open(os.path.join(d, ".y.b2nd.elsewhere-1-0123abcd.ndpack-tmp"), "w").close()
    >>> [os.path.basename(p) for p in remove_stale(t)] == [dead], os.listdir(d)
    (True, ['.y.b2nd.elsewhere-1-0123abcd.ndpack-tmp'])
    """
    head, tail = os.path.split(os.path.abspath(os.fspath(target)))
    pat = _pattern(tail)
    gone = []
    try:
        names = os.listdir(head)
    except OSError:
        return gone
    for name in names:
        m = pat.match(name)
        if m is None:
            continue
        path = os.path.join(head, name)
        with _lock:
            live = path in _live
        if live or not _stale(path, m.group(1), int(m.group(2))):
            continue
        _remove(path)
        gone.append(path)
    return gone


def fsync_path(path, tree: bool = False) -> None:
    """``fsync`` a file or directory (with `tree`, every file and directory under it)."""
    if not _sync_enabled():
        return
    path = os.fspath(path)
    if tree and os.path.isdir(path):
        entries = [(root, files) for root, _, files in os.walk(path)]
        if sum(len(f) + 1 for _, f in entries) > _SYNCFS_FROM and _syncfs(path):
            return               # one syncfs instead of thousands of fsyncs (sparse frames)
        for root, files in entries:
            for f in files:
                fsync_path(os.path.join(root, f))
            fsync_path(root)
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_SFR_WRITE = 2              # SYNC_FILE_RANGE_WRITE


def start_writeback(fd: int, pos: int, nbytes: int) -> None:
    """Start writing bytes [pos, pos + nbytes) of the file `fd` to disk without waiting
    (``sync_file_range(SYNC_FILE_RANGE_WRITE)``; nothing where it does not exist or
    with ``NDPACK_FSYNC=0``).  A writer that will ``fsync`` the file at the end calls
    it after each piece, so the disk works while the data is produced: a 570 MB
    result then waited 6-7 ms at its fsync instead of 180-290 ms (measured here)."""
    if nbytes <= 0 or not _sync_enabled():
        return
    fn = getattr(_libc(), "sync_file_range", None)
    if fn is None:
        return
    if fn.argtypes is None:
        fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn(fd, pos, nbytes, _SFR_WRITE)           # a failure only means no head start


_SYNCFS_FROM = 64           # files in a tree from which one syncfs() beats fsync per file


def _syncfs(path: str) -> bool:
    """``syncfs`` of the file system holding `path`; False when not available."""
    fn = getattr(_libc(), "syncfs", None)
    if fn is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return fn(fd) == 0
    finally:
        os.close(fd)


def _renameat2(src: str, dst: str, flags: int) -> bool:
    """``renameat2(src, dst, flags)``; False when the system does not support it."""
    fn = getattr(_libc(), "renameat2", None)
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), dst)


_LIBC = []


def _libc():
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


class Pending:
    """A temporary beside `target` that :meth:`commit` moves over it.

    Parameters
    ----------
    target : str or path
        The name to create or replace.
    exclusive : bool
        Refuse (``FileExistsError`` at commit) when `target` exists by then (mode 'a').
    sync : bool
        Flush the data and the directory at the commit (False: the caller flushes a
        larger whole later, e.g. a new store's directory).
    collect : bool
        Remove the temporary when this object is garbage collected uncommitted (or at
        exit).  Owners that decide themselves when they are collected (a store that
        commits in ``__del__``) pass False and call :meth:`abort`.

    Examples
    --------
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); p = Pending(os.path.join(d, "z"))
    >>> os.mkdir(p.path); open(os.path.join(p.path, "f"), "w").close()
    >>> p.commit(); sorted(os.listdir(d)), os.listdir(os.path.join(d, "z"))
    (['z'], ['f'])
    """

    expected = None      # frames: number of chunks that completes the object (see framefile)
    held = 0             # frames: > 0 while a creator keeps the commit for itself

    def __init__(self, target, exclusive: bool = False, collect: bool = True,
                 sync: bool = True):
        self.target = os.path.abspath(os.fspath(target))
        if not os.path.basename(self.target):
            raise ValueError(f"{target!r} does not name a file")
        remove_stale(self.target)
        self.path = _new_name(self.target)
        self.exclusive, self.sync = exclusive, sync
        self.done = False
        with _lock:
            _live.add(self.path)
        self._finalizer = weakref.finalize(self, _discard, self.path) if collect else None

    def commit(self) -> None:
        """Flush the temporary and move it over the target (then flush the directory)."""
        if self.done:
            return
        if self.sync:
            fsync_path(self.path, tree=True)
        self._move()
        self.done = True
        if self._finalizer is not None:
            self._finalizer.detach()
        with _lock:
            _live.discard(self.path)
        if self.sync:
            fsync_path(os.path.dirname(self.target))

    def _move(self) -> None:
        src, dst = self.path, self.target
        if self.exclusive:
            try:
                if _renameat2(src, dst, _RENAME_NOREPLACE):
                    return
                if os.path.lexists(dst):
                    raise FileExistsError
            except FileExistsError:
                raise FileExistsError(f"{dst!r} was created while it was being written; "
                                      "use mode='w' to overwrite it") from None
            os.rename(src, dst)
            return
        if not os.path.lexists(dst):
            os.replace(src, dst)
            return
        if os.path.isfile(dst) and os.path.isfile(src):
            if not (self.sync and _sync_enabled()) and _renameat2(src, dst, _RENAME_EXCHANGE):
                # unflushed data: an exchange, not a rename over the old file (ext4 then
                # writes the new file's data out before returning: 0.36-0.43 s for
                # 350 MB here), and a big old file removed in the background
                try:
                    big = os.lstat(src).st_size >= _BACKGROUND_REMOVE
                except OSError:
                    big = False
                _remove_later(src) if big else _remove(src)
                return
            os.replace(src, dst)               # atomic for a file over a file
            return
        if _renameat2(src, dst, _RENAME_EXCHANGE):
            _remove(src)                       # the old target, now under our name
            return
        old = _new_name(dst)                   # no exchange: a short window without target
        os.rename(dst, old)
        os.rename(src, dst)
        _remove(old)

    def abort(self) -> None:
        """Remove the temporary (nothing happens to the target)."""
        if not self.done:
            self.done = True
            if self._finalizer is not None:
                self._finalizer()
            else:
                _discard(self.path)

    def __repr__(self):
        return f"<Pending {self.path!r} -> {self.target!r}{' done' if self.done else ''}>"


def _discard(path: str) -> None:
    with _lock:
        _live.discard(path)
    _remove(path)


@contextlib.contextmanager
def replacing(target, exclusive: bool = False, sync: bool = True):
    """Context manager: yields a temporary path beside `target`, which becomes `target`
    when the block ends without an exception and is removed otherwise."""
    pending = Pending(target, exclusive=exclusive, sync=sync)
    try:
        yield pending.path
    except BaseException:
        pending.abort()
        raise
    try:
        pending.commit()
    except BaseException:
        pending.abort()
        raise
