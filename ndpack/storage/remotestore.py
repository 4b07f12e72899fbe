"""``.b2z`` stores at URLs, read in place: every member frame is opened by its window
of the zip through one shared :class:`~ndpack.storage.remote.RemoteSource`.

The zip's central directory comes from the source's tail window (the first round trip
fetches the head and the tail of the object); the members' local headers are fetched
in one batch; then each array opens by the two windows of its own frame and reads
only the chunks and blocks it is asked for.  Small values (the embedded store,
``embed.b2e``) are fetched whole, once.  Read-only: writing a store at a URL is a
local store saved and uploaded whole.

Examples
--------
>>> import numpy as np, ndpack, fsspec, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "t.b2z")
>>> with ndpack.TreeStore(path, mode="w") as ts:
...     ts["/g/a"] = np.arange(5.0)
...     ts["/small"] = np.arange(3)
>>> with open(path, "rb") as f, fsspec.open("memory://doc/t.b2z", "wb") as g:
...     _ = g.write(f.read())
>>> st = ndpack.open("memory://doc/t.b2z")
>>> sorted(st.keys()), st["/g/a"][1:3].tolist(), st["/small"][:].tolist()
(['/g/a', '/small'], [1.0, 2.0], [0, 1, 2])
"""

from __future__ import annotations

import io
import struct
import zipfile

from ndpack.errors import FormatError, OperationError
from ndpack.storage.embedstore import estore_from_cframe
from ndpack.storage.framefile import ContiguousFrame
from ndpack.storage.ndarray import array_or_schunk
from ndpack.storage.remote import RemoteSource, remote_path_error
from ndpack.storage.schunk import SChunk
from ndpack.storage.storefiles import EMBED_NAME, LEAF_SUFFIXES

__all__ = ["RemoteStore"]


class _SourceFile(io.RawIOBase):
    """A read-only file over a source (what :class:`zipfile.ZipFile` reads)."""

    def __init__(self, source):
        self.source, self.pos = source, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        base = (0, self.pos, self.source.size())[whence]
        self.pos = max(0, base + pos)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = self.source.size() - self.pos
        data = bytes(self.source.read(self.pos, n))
        self.pos += len(data)
        return data


class RemoteStore:
    """A ``.b2z`` DictStore/TreeStore at a URL, read-only (see the module docstring).

    Keys are the stores' (``/group/name``); values are lazy NDArrays/SChunks for the
    member frames and the embedded store's values.
    """

    def __init__(self, url: str, storage_options: dict | None = None):
        self.url = self.urlpath = url
        self.mode = "r"
        self.source = RemoteSource(url, storage_options)
        try:
            zf = zipfile.ZipFile(_SourceFile(self.source), "r")
        except (zipfile.BadZipFile, EOFError, ValueError) as exc:
            raise FormatError(f"{url}: not a readable .b2z zip file ({exc})") from None
        with zf:
            infos = [i for i in zf.infolist() if i.filename and not i.is_dir()]
        size = self.source.size()
        self.source.prefetch([(i.header_offset, i.header_offset + 30) for i in infos])
        self.members = {}                      # member name -> (data offset, size)
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED:
                raise FormatError(f"{url}: member {info.filename!r} is compressed; .b2z "
                                  "members must be stored")
            head = bytes(self.source.read(info.header_offset, 30))
            if len(head) != 30 or head[:4] != b"PK\x03\x04":
                raise FormatError(f"{url}: member {info.filename!r} has no local header at "
                                  f"byte {info.header_offset}")
            nlen, elen = struct.unpack_from("<HH", head, 26)
            off = info.header_offset + 30 + nlen + elen
            if off + info.compress_size > size:
                raise FormatError(f"{url}: member {info.filename!r} runs past the end "
                                  "(truncated zip)")
            self.members[info.filename] = (off, info.compress_size)
        self.leaves = {}                       # key -> member name
        for name in self.members:
            for suf in LEAF_SUFFIXES:
                if name.endswith(suf) and len(name) > len(suf):
                    self.leaves["/" + name[:-len(suf)]] = name
        self._estore = None
        if EMBED_NAME in self.members:
            off, n = self.members[EMBED_NAME]
            self._estore = estore_from_cframe(bytes(self.source.read(off, n)), mode="r")

    def keys(self) -> list:
        """Every key, sorted."""
        embedded = list(self._estore.keys()) if self._estore is not None else []
        return sorted(set(self.leaves) | set(embedded))

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, key) -> bool:
        return key in self.leaves or (self._estore is not None and key in self._estore)

    def __getitem__(self, key):
        name = self.leaves.get(key)
        if name is None:
            if self._estore is not None and key in self._estore:
                return self._estore[key]
            raise KeyError(key)
        off, n = self.members[name]
        frame = ContiguousFrame(self.url, "r", offset=off, source=self.source)
        if frame.frame_len > n:
            raise FormatError(f"{self.url}: the frame of member {name!r} ({frame.frame_len}"
                              f" bytes) is longer than the member ({n} bytes)")
        return array_or_schunk(SChunk.from_frame(frame, urlpath=self.url, mode="r"))

    def get(self, key, default=None):
        return self[key] if key in self else default

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def __setitem__(self, key, value):
        raise OperationError(remote_path_error(self.url))

    __delitem__ = __setitem__

    def close(self) -> None:
        self.source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"RemoteStore({self.url!r}, {len(self.leaves)} member frames)"
