"""Where the external leaves of a store live: a ``.b2d`` directory of frame files, or a
``.b2z`` zip file of *stored* (uncompressed) members.

Both backends name a leaf by its relative path without suffix (``"g1/b"`` for key
``/g1/b``, file ``g1/b.b2nd`` or ``g1/b.b2f``) and keep the embedded store in
``embed.b2e`` at the top.

A zip member is opened in place: the frame starts at the member's data offset and is
read with positioned reads (or a memory map), never extracted.  Writes to a ``.b2z``
go to a new zip next to it (``.<name>.<host>-<pid>-<random>.ndpack-tmp``, see
:mod:`ndpack.storage.atomic`): new leaves are appended to it as they
are set, and :meth:`ZipFiles.commit` copies the surviving members of the old file
(raw bytes, no decoding), adds ``embed.b2e`` and the central directory and moves the
new file over the old one atomically.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import time
import zipfile

from ndpack.errors import FormatError, ParameterError
from ndpack.storage.atomic import Pending, fsync_path, replacing
from ndpack.storage.ndarray import NDArray, array_or_schunk
from ndpack.storage.schunk import open_schunk

__all__ = ["EMBED_NAME", "LEAF_SUFFIXES", "DirFiles", "ZipFiles"]

LEAF_SUFFIXES = (".b2nd", ".b2f", ".b2b")
EMBED_NAME = "embed.b2e"
_PIECE = 16 << 20


def suffix_for(value) -> str:
    return ".b2nd" if isinstance(value, NDArray) else ".b2f"


def _split_suffix(name: str):
    for suf in LEAF_SUFFIXES:
        if name.endswith(suf) and len(name) > len(suf):
            return name[:-len(suf)], suf
    return None, None


class DirFiles:
    """Leaves as files under a directory."""

    kind = "b2d"

    def __init__(self, path: str, mode: str, atomic: bool = True):
        self.path = path
        self.atomic = atomic        # False inside a new store's temporary directory
        if mode == "w" and os.path.exists(path):
            self.check_replaceable(path)
            shutil.rmtree(path)
        if mode != "r":
            os.makedirs(path, exist_ok=True)
        self.leaves = {}                         # rel -> file name (with suffix)
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(root, f), path).replace(os.sep, "/")
                if rel == EMBED_NAME:
                    continue
                stem, _ = _split_suffix(rel)
                if stem is not None:
                    self.leaves[stem] = rel

    @staticmethod
    def check_replaceable(path: str):
        """Refuse to replace anything but a store directory (or nothing)."""
        if not os.path.lexists(path):
            return
        if not os.path.isdir(path):
            raise ParameterError(f"{path!r} exists and is not a directory")
        if os.listdir(path) and not os.path.exists(os.path.join(path, EMBED_NAME)):
            raise ParameterError(f"{path!r} is a non-empty directory without {EMBED_NAME}; "
                                 "refusing to overwrite something that is not a store")

    def embed_path(self) -> str:
        return os.path.join(self.path, EMBED_NAME)

    def file_of(self, rel: str) -> str:
        return os.path.join(self.path, *self.leaves[rel].split("/"))

    def open_leaf(self, rel: str, mode: str, mmap_mode=None):
        return array_or_schunk(open_schunk(self.file_of(rel), mode="r" if mode == "r"
                                           else "a", mmap_mode=mmap_mode))

    def write_bytes(self, rel: str, value, pieces, size: int | None = None):
        """Write the leaf `rel` under a temporary name and move it over the old one
        (:mod:`ndpack.storage.atomic`): the old value stays readable until then."""
        name = rel + suffix_for(value)
        full = os.path.join(self.path, *name.split("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        # (in a new store's temporary directory no flush: the store is flushed whole at
        # its commit; the rename still matters: `pieces` may come from the old file)
        with replacing(full, sync=self.atomic) as tmp, open(tmp, "wb") as f:
            f.writelines(pieces)
        old = self.leaves.get(rel)
        self.leaves[rel] = name
        if old is not None and old != name:          # same key, other suffix
            os.remove(os.path.join(self.path, *old.split("/")))

    def remove(self, rel: str, prune: bool = True):
        full = self.file_of(rel)
        del self.leaves[rel]
        os.remove(full)
        d = os.path.dirname(full)
        while prune and os.path.abspath(d) != os.path.abspath(self.path) and not os.listdir(d):
            os.rmdir(d)
            d = os.path.dirname(d)

    def leaf_pieces(self, rel: str):
        with open(self.file_of(rel), "rb") as f:
            while piece := f.read(_PIECE):
                yield piece

    def window(self, rel: str):
        return None


class _Member:
    __slots__ = ("data_offset", "name", "size")

    def __init__(self, name, data_offset, size):
        self.name, self.data_offset, self.size = name, data_offset, size


def _data_offset(fd: int, info: zipfile.ZipInfo, path: str, fsize: int) -> int:
    if not 0 <= info.header_offset <= fsize - 30:
        raise FormatError(f"{path!r}: member {info.filename!r} has its local header at byte "
                          f"{info.header_offset}, outside the {fsize}-byte file")
    head = os.pread(fd, 30, info.header_offset)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        raise FormatError(f"{path!r}: member {info.filename!r} has no local header at byte "
                          f"{info.header_offset}")
    nlen, elen = struct.unpack_from("<HH", head, 26)
    off = info.header_offset + 30 + nlen + elen
    if off + info.compress_size > fsize:
        raise FormatError(f"{path!r}: member {info.filename!r} runs past the end of the file "
                          f"(byte {off + info.compress_size} of {fsize}): truncated zip")
    return off


def _check_member(path: str, name: str, stem: str):
    """A member name must be a relative path of plain names (no '..', '.', empty names,
    no leading '/', no backslashes): conversions write members out as files."""
    parts = stem.split("/")
    if any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts):
        raise FormatError(f"{path!r}: member name {name!r} is not a safe relative path")


def read_members(path: str):
    """The members of a zip file: name -> :class:`_Member` (stored members only)."""
    try:
        zf = zipfile.ZipFile(path, "r")
    except (zipfile.BadZipFile, NotImplementedError, EOFError, ValueError) as exc:
        raise FormatError(f"{path!r} is not a readable .b2z zip file ({exc}); it may be "
                          "truncated or corrupt") from None
    out = {}
    with zf:
        fd = os.open(path, os.O_RDONLY)
        try:
            fsize = os.fstat(fd).st_size
            for info in zf.infolist():
                if not info.filename:             # zipfile's is_dir() fails on it
                    raise FormatError(f"{path!r}: a zip member has an empty name")
                if info.is_dir():
                    continue
                if info.compress_type != zipfile.ZIP_STORED:
                    raise FormatError(f"{path!r}: member {info.filename!r} is compressed "
                                      f"(zip method {info.compress_type}); .b2z members must "
                                      "be stored so that frames open in place")
                out[info.filename] = _Member(info.filename, _data_offset(fd, info, path, fsize),
                                             info.compress_size)
        finally:
            os.close(fd)
    return out


class ZipFiles:
    """Leaves as stored members of a zip file, opened in place."""

    kind = "b2z"

    def __init__(self, path: str, mode: str, tmpdir=None):
        self.path, self.mode, self.tmpdir = path, mode, tmpdir
        self.src = {}                      # member name -> _Member in the existing file
        if mode != "w" and os.path.exists(path):
            self.src = read_members(path)
        self.new = {}                      # member name -> _Member in the temp file
        self.leaves = {}                   # rel -> ("src" | "new", member name)
        for name in self.src:
            stem, _ = _split_suffix(name)
            if stem is not None:
                _check_member(path, name, stem)
                self.leaves[stem] = ("src", name)
        self._zf = None
        self._tmp = None
        self._pending = None               # atomic.Pending of the new zip beside `path`

    # --- reading -------------------------------------------------------------------------
    def member(self, rel: str):
        """``(member, zip path)`` of the leaf `rel`: in the old zip, or in the new one
        when it was written since."""
        where, name = self.leaves[rel]
        return (self.src[name], self.path) if where == "src" else (self.new[name], self._tmp)

    def open_leaf(self, rel: str, mode: str, mmap_mode=None):
        m, path = self.member(rel)
        return self.open_member(path, m, mmap_mode)

    @staticmethod
    def open_member(path: str, m: _Member, mmap_mode=None):
        """The frame of member `m`, opened in place (read-only)."""
        obj = array_or_schunk(open_schunk(path, mode="r", offset=m.data_offset,
                                          mmap_mode=mmap_mode))
        flen = getattr(obj, "schunk", obj).frame.frame_len
        if flen > m.size:
            raise FormatError(f"{path!r}: the frame of member {m.name!r} ({flen} bytes) is "
                              f"longer than the member ({m.size} bytes)")
        return obj

    def embed_member(self):
        """(path, _Member) of ``embed.b2e`` in the existing file, or None."""
        m = self.src.get(EMBED_NAME)
        return None if m is None else (self.path, m)

    def window(self, rel: str):
        m, _ = self.member(rel)
        return m.data_offset, m.size

    def _pieces_of(self, path: str, m: _Member):
        fd = os.open(path, os.O_RDONLY)
        try:
            pos, end = m.data_offset, m.data_offset + m.size
            while pos < end:
                piece = os.pread(fd, min(_PIECE, end - pos), pos)
                if not piece:
                    raise FormatError(f"{path!r}: member {m.name!r} truncated")
                pos += len(piece)
                yield piece
        finally:
            os.close(fd)

    def leaf_pieces(self, rel: str):
        m, path = self.member(rel)
        return self._pieces_of(path, m)

    # --- writing -------------------------------------------------------------------------
    def _writer(self) -> zipfile.ZipFile:
        if self._zf is None:
            if self.tmpdir is None:        # beside the target: one rename at the commit
                self._pending = Pending(self.path, collect=False)   # the store decides
                self._tmp = self._pending.path
            else:
                fd, self._tmp = tempfile.mkstemp(prefix=f".{os.path.basename(self.path)}.",
                                                 suffix=".tmp", dir=self.tmpdir)
                os.close(fd)
            self._zf = zipfile.ZipFile(self._tmp, "w", zipfile.ZIP_STORED, allowZip64=True)
        return self._zf

    def append_member(self, name: str, pieces, size: int | None = None) -> _Member:
        """Append a stored member `name` made of the byte `pieces` (`size` bytes in all,
        when known) to the new zip; a member of that name written before is dropped."""
        zf = self._writer()
        if name in zf.NameToInfo:          # replaced before commit: drop the old entry
            old = zf.NameToInfo.pop(name)
            zf.filelist.remove(old)
        info = zipfile.ZipInfo(name, date_time=time.localtime(time.time())[:6])
        info.compress_type = zipfile.ZIP_STORED
        info.external_attr = 0o644 << 16
        if size is None:
            pieces = [b"".join(pieces)]
            size = len(pieces[0])
        info.file_size = size
        with zf.open(info, "w", force_zip64=size >= zipfile.ZIP64_LIMIT) as out:
            for p in pieces:
                out.write(p)
        zf.fp.flush()
        fd = os.open(self._tmp, os.O_RDONLY)
        try:
            off = _data_offset(fd, info, self._tmp, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        m = _Member(name, off, info.compress_size)
        self.new[name] = m
        return m

    def write_bytes(self, rel: str, value, pieces, size: int | None = None):
        if rel in self.leaves:
            self.remove(rel)
        name = rel + suffix_for(value)
        self.append_member(name, pieces, size)
        self.leaves[rel] = ("new", name)

    def remove(self, rel: str, prune: bool = True):
        where, name = self.leaves.pop(rel)
        if where == "new":
            zf = self._zf
            info = zf.NameToInfo.pop(name)
            zf.filelist.remove(info)       # its bytes stay as orphans in the temp file
            del self.new[name]

    def commit(self, embed_bytes: bytes):
        """Write the surviving old members, ``embed.b2e`` and the central directory, and
        move the new zip over `path`."""
        live_src = [name for where, name in self.leaves.values() if where == "src"]
        for name in live_src:
            m = self.src[name]
            self.append_member(name, self._pieces_of(self.path, m), m.size)
            self.leaves[_split_suffix(name)[0]] = ("new", name)
        self.append_member(EMBED_NAME, [embed_bytes])
        self._zf.close()
        self._zf = None
        if self._pending is not None:
            self._pending.commit()         # flushed, then renamed over the old file
        else:
            fsync_path(self._tmp)
            os.replace(self._tmp, self.path)
            fsync_path(os.path.dirname(os.path.abspath(self.path)))
        self._tmp = self._pending = None
        self.src = read_members(self.path)
        self.new = {}
        self.leaves = {rel: ("src", name) for rel, (_, name) in self.leaves.items()}

    def discard(self):
        if self._zf is not None:
            self._zf.close()
            self._zf = None
        if self._pending is not None:
            self._pending.abort()
        elif self._tmp is not None and os.path.exists(self._tmp):
            os.remove(self._tmp)
        self._tmp = self._pending = None
