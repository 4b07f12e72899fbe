"""Dictionary-like stores of compressed arrays: python-blosc2's ``DictStore`` on disk.

A store maps keys (``"/name"`` or ``"/dir/name"``) to NDArrays and SChunks, kept in a
``.b2d`` directory or a single ``.b2z`` zip file (stored members, python-blosc2's
layout): a value of ``threshold`` bytes or more (uncompressed) is a leaf frame of its
own (``name.b2nd`` for an NDArray, ``name.b2f`` for an SChunk); smaller values share
one embedded store, ``embed.b2e`` (:mod:`ndpack.storage.embedstore`).  NumPy values are
converted with the store's `cparams`.

Opening a store reads the directory listing (or the zip's central directory) and the
embedded store's key map, no array data.  Values are opened when they are looked up;
the leaves of a ``.b2z`` are opened in place (:mod:`ndpack.storage.storefiles`).

Examples
--------
>>> import numpy as np, ndpack, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "d.b2z")
>>> with ndpack.DictStore(path, mode="w", threshold=1000) as ds:
...     ds["/small"] = np.arange(10)                 # 80 bytes: embedded
...     ds["/big"] = np.linspace(0, 1, 10_000)       # its own member, big.b2nd
>>> ds = ndpack.DictStore(path, mode="r")
>>> sorted(ds), float(ds["/big"][-1]), ds["/small"][:3].tolist()
(['/big', '/small'], 1.0, [0, 1, 2])
"""

from __future__ import annotations

import os

from ndpack.errors import FormatError, ParameterError
from ndpack.storage.embedstore import (
    EmbedStore,
    StoreMapping,
    check_store_key,
    estore_from_cframe,
    value_to_store,
)
from ndpack.storage.atomic import Pending, replacing
from ndpack.storage.framefile import ContiguousFrame
from ndpack.storage.params import Storage
from ndpack.storage.storefiles import DirFiles, ZipFiles

__all__ = ["DictStore", "check_path"]

_MODES = ("r", "a", "w")


def check_path(key: str) -> str:
    """Validate a ``/``-separated key: no empty names (``a//b``, trailing ``/``), no
    ``.`` or ``..``, no NUL; returns it."""
    check_store_key(key)
    if key == "/":
        raise ParameterError("'/' is the root, not a key of a value")
    for name in key[1:].split("/"):
        if name == "":
            raise ParameterError(f"key {key!r} has an empty name (a '//' or a trailing '/')")
        if name in (".", ".."):
            raise ParameterError(f"key {key!r}: {name!r} is not allowed as a name")
        if "\x00" in name:
            raise ParameterError(f"key {key!r} contains a NUL character")
    return key


def _frame_source(store):
    """``(pieces, size)``: the frame bytes of an NDArray or SChunk, streamed from its file
    in 16 MiB pieces when it is a contiguous frame on disk (memory stays small), else
    serialized at once."""
    frame = getattr(store, "schunk", store).frame
    if isinstance(frame, ContiguousFrame) and getattr(frame, "fd", None) is not None:
        fd = os.open(frame.path, os.O_RDONLY)       # opened now: the path may be replaced
        start, size = frame.base, frame.frame_len

        def pieces():
            try:
                pos = 0
                while pos < size:
                    piece = os.pread(fd, min(16 << 20, size - pos), start + pos)
                    if not piece:
                        raise FormatError(f"{frame.path!r}: frame truncated at byte "
                                          f"{start + pos}")
                    pos += len(piece)
                    yield piece
            finally:
                os.close(fd)
        return pieces(), size
    data = store.to_cframe()
    return [data], len(data)


#: metalayers python-blosc2 marks its other containers with -> the class it opens them as
#: (ndpack has none of them: such members are refused by name, never opened as SChunks)
FOREIGN_KINDS = {"listarray": "ListArray", "batcharray": "BatchArray",
                 "vlarray": "ObjectArray", "b2embed": "EmbedStore"}
#: python-blosc2's "b2o" object kinds ndpack does not open
FOREIGN_OBJECTS = {"c2array": "C2Array", "remote_array": "RemoteArray"}


def check_member(key: str, value):
    """`value` (a store member just opened) unless python-blosc2 wrote it as one of its
    containers that ndpack lacks: then a TypeError naming the class."""
    schunk = getattr(value, "schunk", value)
    meta = getattr(schunk, "meta", None)
    if meta is None:
        return value
    names = set(meta)
    found = next((FOREIGN_KINDS[n] for n in FOREIGN_KINDS if n in names), None)
    if found is None and "b2o" in names:
        marker = meta["b2o"]
        kind = marker.get("kind") if isinstance(marker, dict) else None
        found = FOREIGN_OBJECTS.get(kind)
    if found is not None and not (found == "EmbedStore" and isinstance(value, EmbedStore)):
        raise TypeError(f"the store member {key!r} is a python-blosc2 {found}, which ndpack "
                        f"does not have (docs/compat.md); open it with python-blosc2")
    return value


def _is_zip(path: str) -> bool:
    if os.path.isdir(path):
        return False
    return path.endswith(".b2z") or os.path.isfile(path)


class DictStore(StoreMapping):
    """A dict of compressed arrays kept in a ``.b2d`` directory or a ``.b2z`` zip file.

    Parameters
    ----------
    localpath : str or path
        A ``.b2z`` suffix (or an existing file) selects the zip format; anything else a
        directory (``.b2d`` recommended).
    mode : {'a', 'r', 'w'}
        'a' opens or creates, 'w' overwrites, 'r' reads (writes raise).
    cparams, dparams : CParams/DParams or dict, optional
        Compression of the embedded store and of NumPy values converted on assignment.
    threshold : int or None
        Values of fewer bytes (uncompressed) go to the embedded store; 0 (the default,
        as python-blosc2) stores every value as a leaf of its own, None embeds all.
    tmpdir : str, optional
        Where a ``.b2z`` opened for writing builds its new zip (default: next to it).
    mmap_mode : {'r'}, optional
        Leaves are read through memory maps (mode 'r').

    Notes
    -----
    A new store (mode 'w', or 'a' on a missing path) is built under a temporary name
    beside `localpath` and moved into place by :meth:`close` (an old store stays
    until then; see :mod:`ndpack.storage.atomic`); an exception leaving a ``with`` block
    discards it.  In mode 'a' an existing ``.b2d`` is changed in place, one leaf file
    replaced atomically at a time.
    The leaves of a ``.b2z`` are read in place and are read-only, also in mode 'a':
    assign a new value (``store[key] = new``) to change one.  Changes to a ``.b2z`` are
    written when the store is closed (or :meth:`to_b2z` is called).

    Examples
    --------
    >>> import numpy as np, ndpack, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "d.b2d")
    >>> ds = ndpack.DictStore(path, mode="w")
    >>> ds["/a"] = np.arange(5)
    >>> ds["/dir/b"] = ndpack.ones((2, 2))
    >>> len(ds), "/dir/b" in ds, os.path.exists(path)      # in place when closed
    (2, True, False)
    >>> ds.close(); sorted(os.listdir(path))
    ['a.b2nd', 'dir', 'embed.b2e']
    >>> ds = ndpack.DictStore(path, mode="a")
    >>> del ds["/a"]; list(ds.keys())
    ['/dir/b']
    >>> ds.close()
    """

    _kind = "b2dict"

    def __init__(self, localpath, mode: str = "a", cparams=None, dparams=None,
                 threshold: int | None = 0, *, tmpdir=None, mmap_mode=None):
        if mode not in _MODES:
            raise ParameterError(f"mode must be one of {_MODES}, not {mode!r}")
        if mmap_mode not in (None, "r") or (mmap_mode == "r" and mode != "r"):
            raise ParameterError("mmap_mode='r' is supported with mode='r' only")
        if threshold is not None and (not isinstance(threshold, int) or threshold < 0):
            raise ParameterError(f"threshold must be a non-negative int or None, got "
                                 f"{threshold!r}")
        self.localpath = os.fspath(localpath)
        if isinstance(self.localpath, bytes):
            self.localpath = os.fsdecode(self.localpath)
        path = self.localpath
        if mode == "r" and not os.path.exists(path):
            raise FileNotFoundError(f"no store at {path!r} (mode 'r' opens an existing one)")
        self.mode, self.threshold = mode, threshold
        self.cparams, self.dparams, self._mmap_mode = cparams, dparams, mmap_mode
        self._cache: dict = {}
        self._keycache: dict = {}          # sorted keys, tree structure; shared with views
        self._closed = False
        self._modified = mode == "w" or not os.path.exists(path)   # a new store is written
        self._creating = self._modified          # (an error in a `with` block discards it)
        self._pending = None
        if _is_zip(path):
            self._files = ZipFiles(path, mode, tmpdir)
        elif self._modified:        # a new (or replaced) directory is built under a
            DirFiles.check_replaceable(path)     # temporary name and moved into place by
            self._pending = Pending(path, collect=False)     # close(), as a .b2z is
            os.mkdir(self._pending.path)
            self._files = DirFiles(self._pending.path, "a", atomic=False)
        else:
            self._files = DirFiles(path, "r" if mode == "r" else "a")
        self._estore = self._open_estore()

    def _open_estore(self) -> EmbedStore:
        kw = {"cparams": self.cparams, "dparams": self.dparams, "_kind": self._kind}
        if isinstance(self._files, DirFiles):
            epath = self._files.embed_path()
            if self.mode == "r" and not os.path.exists(epath):
                return EmbedStore(mode="r", **kw)
            return EmbedStore(epath, mode="r" if self.mode == "r" else "a",
                              mmap_mode=self._mmap_mode, **kw)
        found = self._files.embed_member()
        if found is None:
            return EmbedStore(mode="a" if self.mode != "r" else "r", **kw)
        path, m = found
        if self.mode == "r":
            return EmbedStore(mode="r", _schunk=ZipFiles.open_member(path, m, self._mmap_mode))
        es = EmbedStore(mode="r", _schunk=ZipFiles.open_member(path, m))
        return estore_from_cframe(es.to_cframe(), mode="a")   # small by design: in memory

    # --- checks --------------------------------------------------------------------------
    def _check_open(self):
        if self._closed:
            raise ParameterError(f"the store {self.localpath!r} is closed")

    def _check_writable(self):
        self._check_open()
        if self.mode == "r":
            raise ParameterError(f"the store {self.localpath!r} is open in mode 'r'; writes "
                                 "are not allowed")

    def _norm(self, key) -> str:
        return check_path(key)

    # --- primitive operations on full keys -----------------------------------------------
    def _all_keys(self) -> list:
        keys = self._keycache.get("all")
        if keys is None:
            keys = sorted({"/" + rel for rel in self._files.leaves} | set(self._estore.keys()))
            self._keycache["all"] = keys
        return keys

    def _has(self, key: str) -> bool:
        return key[1:] in self._files.leaves or key in self._estore

    def _get(self, key: str):
        self._check_open()
        if key in self._cache:
            return self._cache[key]
        if key[1:] in self._files.leaves:
            value = check_member(key, self._files.open_leaf(key[1:], self.mode,
                                                            self._mmap_mode))
            self._cache[key] = value
            return value
        if key in self._estore:
            return check_member(key, self._estore[key])
        raise KeyError(f"key {key!r} not found in the store {self.localpath!r}")

    def _set(self, key: str, value):
        self._check_writable()
        store = value_to_store(value, self.cparams, self.dparams)   # NumPy is converted
        embed = self.threshold is None or store.nbytes < self.threshold
        self._cache.pop(key, None)
        self._keycache.clear()
        self._modified = True
        if embed:
            if key[1:] in self._files.leaves:
                self._files.remove(key[1:])
            self._estore[key] = store
            return
        if key in self._estore:
            del self._estore[key]
        pieces, size = _frame_source(store)
        self._files.write_bytes(key[1:], store, pieces, size)

    def _del(self, key: str):
        self._check_writable()
        self._cache.pop(key, None)
        self._keycache.clear()
        self._modified = True
        if key[1:] in self._files.leaves:
            self._files.remove(key[1:])
        elif key in self._estore:
            del self._estore[key]
        else:
            raise KeyError(f"key {key!r} not found in the store {self.localpath!r}")

    # --- mapping -------------------------------------------------------------------------
    def __getitem__(self, key):
        return self._get(self._norm(key))

    def __setitem__(self, key, value):
        self._set(self._norm(key), value)

    def __delitem__(self, key):
        self._del(self._norm(key))

    def __contains__(self, key) -> bool:
        try:
            key = self._norm(key)
        except (TypeError, ValueError):
            return False
        return self._has(key)

    def __len__(self) -> int:
        return len(self.keys())

    def __iter__(self):
        return iter(self.keys())

    def keys(self) -> list:
        """All keys, sorted."""
        self._check_open()
        return list(self._all_keys())

    @property
    def estore(self) -> EmbedStore:
        """The embedded store of the small values."""
        return self._estore

    @property
    def map_tree(self) -> dict:
        """python-blosc2's ``map_tree``: each key stored as a leaf file of its own ->
        that file's path inside the store (``{"/dir/b": "dir/b.b2nd"}``); keys in the
        embedded store are not listed."""
        self._check_open()
        return {"/" + rel: self._member_name(self._files.leaves[rel])
                for rel in sorted(self._files.leaves)}

    @property
    def storage(self) -> Storage:
        """python-blosc2's ``storage``: the :class:`Storage` of the embedded store (in
        memory, its metalayer naming the store kind)."""
        return Storage(contiguous=False, urlpath=None, mode=self.mode,
                       meta={self._kind: {"version": 1}})

    def member_window(self, key):
        """``(offset, nbytes)`` of the frame of `key` inside the ``.b2z``, else None."""
        key = self._norm(key)
        if isinstance(self._files, ZipFiles) and key[1:] in self._files.leaves and \
                self._files.leaves[key[1:]][0] == "src":
            return self._files.window(key[1:])
        return None

    # --- conversion and closing ----------------------------------------------------------
    def _leaf_items(self):
        for rel in sorted(self._files.leaves):
            yield rel, self._files.leaves[rel], self._files.leaf_pieces(rel)

    def to_b2z(self, overwrite: bool = False, filename=None) -> str:
        """Write the store as a ``.b2z`` zip file (frames copied as bytes); returns the
        absolute path.  On a ``.b2z`` store without `filename` this writes pending
        changes.

        Examples
        --------
        >>> import numpy as np, ndpack, os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> with ndpack.DictStore(os.path.join(d, "s.b2d"), mode="w") as ds:
        ...     ds["/x"] = np.arange(3)
        ...     out = ds.to_b2z(filename=os.path.join(d, "s.b2z"))
        >>> ndpack.DictStore(out, mode="r")["/x"][:].tolist()
        [0, 1, 2]
        """
        self._check_open()
        if filename is None:
            if isinstance(self._files, ZipFiles):
                if self.mode != "r":
                    self._commit()
                return os.path.abspath(self.localpath)
            filename = os.path.splitext(self.localpath)[0] + ".b2z"
        filename = os.fspath(filename)
        if os.path.abspath(filename) == os.path.abspath(self.localpath):
            raise ParameterError(f"{filename!r} is this store's own path")
        if os.path.exists(filename) and not overwrite:
            raise FileExistsError(f"{filename!r} exists; pass overwrite=True to replace it")
        out = ZipFiles(filename, "w")
        try:
            for rel, name, pieces in self._leaf_items():
                out.append_member(self._member_name(name), pieces, self._leaf_size(rel))
            out.commit(self._estore.to_cframe())
        except BaseException:
            out.discard()
            raise
        return os.path.abspath(filename)

    @staticmethod
    def _member_name(name):
        return name[1] if isinstance(name, tuple) else name

    def _leaf_size(self, rel):
        f = self._files
        if isinstance(f, ZipFiles):
            return f.member(rel)[0].size
        return os.path.getsize(f.file_of(rel))

    def to_b2d(self, dirname=None, *, overwrite: bool = False) -> str:
        """Write the store as a ``.b2d`` directory; returns its absolute path.

        Examples
        --------
        >>> import numpy as np, ndpack, os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> with ndpack.DictStore(os.path.join(d, "s.b2z"), mode="w") as ds:
        ...     ds["/g/x"] = np.arange(3)
        ...     out = ds.to_b2d(os.path.join(d, "s.b2d"))
        >>> sorted(os.listdir(out)), ndpack.DictStore(out, mode="r")["/g/x"][:].tolist()
        (['embed.b2e', 'g'], [0, 1, 2])
        """
        self._check_open()
        if dirname is None:
            dirname = os.path.splitext(self.localpath)[0] + ".b2d"
        dirname = os.fspath(dirname)
        if os.path.abspath(dirname) == os.path.abspath(self.localpath):
            raise ParameterError(f"{dirname!r} is this store's own path")
        if os.path.exists(dirname) and not overwrite:
            raise FileExistsError(f"{dirname!r} exists; pass overwrite=True to replace it")
        with replacing(dirname) as tmp:            # the old one stays until this is complete
            os.mkdir(tmp)
            for rel, name, pieces in self._leaf_items():
                full = os.path.join(tmp, *self._member_name(name).split("/"))
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "wb") as f:
                    f.writelines(pieces)
            with open(os.path.join(tmp, "embed.b2e"), "wb") as f:
                f.write(self._estore.to_cframe())
        return os.path.abspath(dirname)

    def _commit(self):
        self._files.commit(self._estore.to_cframe())
        self._modified = False

    def close(self) -> None:
        """Write pending changes (a ``.b2z`` is rewritten only when it changed) and
        release the files.  Values already looked up stay readable."""
        if self._closed:
            return
        try:
            if isinstance(self._files, ZipFiles):
                if self.mode != "r" and (self._modified or self._files.new):
                    self._commit()
                else:
                    self._files.discard()
            else:
                if self._estore.urlpath is not None:
                    self._estore.close()
                if self._pending is not None:      # a new directory: now in place
                    self._pending.commit()
                    self._files.path, self._pending = self.localpath, None
                    self._files.atomic = True
        finally:
            self._closed = True
            self._cache.clear()

    def discard(self) -> None:
        """Close without writing pending changes of a ``.b2z`` store."""
        if not self._closed and isinstance(self._files, ZipFiles):
            self._files.discard()
        if not self._closed and self._pending is not None:
            self._pending.abort()              # a new directory store: never in place
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and self._creating and getattr(self, "_root", self) is self:
            self.discard()          # an interrupted new store never replaces the old one
        else:
            self.close()

    def __del__(self):
        try:
            if not getattr(self, "_closed", True) and getattr(self, "_modified", False):
                self.close()
            elif not getattr(self, "_closed", True):
                self.discard()
        except (OSError, ValueError, AttributeError, TypeError, ImportError):
            pass                 # interpreter shutdown: nothing sensible left to do

    def __repr__(self):
        state = "closed" if self._closed else f"{len(self)} keys"
        return f"{type(self).__name__}({self.localpath!r}, mode={self.mode!r}, {state})"
