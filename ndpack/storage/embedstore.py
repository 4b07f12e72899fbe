"""Embedded store: many small arrays serialized into one super-chunk (python-blosc2's
``EmbedStore``, ``.b2e`` files).

The store is a super-chunk of bytes (typesize 1, 8 KiB chunks) holding the contiguous
frames of its values back to back; its vlmeta ``estore_metadata`` maps each key to the
``offset`` and ``length`` of its frame (``{"embed_map": {...}, "current_offset": n}``)
and a fixed metalayer names the owner (``b2embed`` on its own, ``b2dict`` inside a
:class:`~ndpack.storage.stores.DictStore`, ``b2tree`` inside a
:class:`~ndpack.storage.treestore.TreeStore`, each ``{"version": 1}``).  A new value
is appended at ``current_offset``; the bytes of a deleted or replaced value stay as
orphans, as in python-blosc2.

Examples
--------
>>> import numpy as np, ndpack
>>> es = ndpack.EmbedStore()                 # in memory; urlpath= puts it in a .b2e file
>>> es["/x"] = np.arange(5)
>>> es["/y"] = ndpack.ones(3)
>>> sorted(es), es["/x"][:].tolist()
(['/x', '/y'], [0, 1, 2, 3, 4])
>>> es2 = ndpack.storage.embedstore.estore_from_cframe(es.to_cframe())
>>> float(es2["/y"][:].sum())
3.0
"""

from __future__ import annotations

import os

import numpy as np

from ndpack.codecs import make_cparams
from ndpack.errors import FormatError, ParameterError
from ndpack.storage.constructors import asarray
from ndpack.storage.ndarray import NDArray, array_or_schunk
from ndpack.storage.schunk import SChunk, open_schunk, schunk_from_cframe

__all__ = ["EmbedStore", "estore_from_cframe", "value_from_cframe", "value_to_store"]

MAP_NAME = "estore_metadata"
KINDS = ("b2embed", "b2dict", "b2tree")
_MODES = ("r", "a", "w")


def value_to_store(value, cparams=None, dparams=None, **storage):
    """The NDArray or SChunk that stores `value` (a NumPy array or scalar is converted
    with `cparams`/`dparams` and the `storage` keywords)."""
    if isinstance(value, (NDArray, SChunk)):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        value = np.asarray(value)
        if value.dtype.hasobject:
            raise TypeError(f"cannot store an array of dtype {value.dtype} (Python objects)")
        kw = {k: v for k, v in (("cparams", cparams), ("dparams", dparams)) if v is not None}
        return asarray(value, **kw, **storage)
    raise TypeError(f"store values are NDArray, SChunk or NumPy arrays, not "
                    f"{type(value).__name__}")


def value_from_cframe(buf):
    """An in-memory NDArray (frame with a ``b2nd`` metalayer) or SChunk from frame bytes."""
    return array_or_schunk(schunk_from_cframe(buf, copy=False))


def _append_bytes(schunk: SChunk, data: bytes):
    """Append `data` keeping the chunks fixed-size: the short last chunk is filled first."""
    cs, n, pos = schunk.chunksize, schunk.nchunks, 0
    if not cs:                                   # variable-size chunks: one more chunk
        schunk.append_data(data)
        return
    last = schunk.nbytes - (n - 1) * cs if n else cs
    if last < cs:
        head = bytearray(schunk.decompress_chunk(n - 1))
        pos = min(cs - last, len(data))
        head += data[:pos]
        schunk.update_data(n - 1, head)
    view = memoryview(data)
    for p in range(pos, len(data), cs):
        schunk.append_data(view[p:p + cs])


def check_store_key(key) -> str:
    """A key is a ``str`` that starts with ``'/'``."""
    if not isinstance(key, str):
        raise TypeError(f"store keys are str, not {type(key).__name__}")
    if not key.startswith("/"):
        raise ParameterError(f"key {key!r} must start with '/'")
    return key


class StoreMapping:
    """``values``, ``items`` and ``get`` of the stores, from their ``keys``,
    ``__getitem__`` and ``__contains__``."""

    def values(self):
        for k in self.keys():
            yield self[k]

    def items(self):
        for k in self.keys():
            yield k, self[k]

    def get(self, key, default=None):
        """The value at `key`, or `default` when there is none."""
        return self[key] if key in self else default


class EmbedStore(StoreMapping):
    """A dict-like store of small arrays, all serialized into one super-chunk.

    Parameters
    ----------
    urlpath : str or path, optional
        A ``.b2e`` file; None keeps the store in memory (see :meth:`to_cframe`).
    mode : {'a', 'w', 'r'}
        'a' opens or creates, 'w' overwrites, 'r' reads an existing file.
    cparams, dparams : optional
        Compression of the store itself and of NumPy values converted on assignment.
    chunksize : int
        Bytes per chunk of the backing super-chunk (8 KiB, as python-blosc2).
    mmap_mode : {'r'}, optional
        Read the file through a memory map (mode 'r').

    Examples
    --------
    >>> import numpy as np, ndpack, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "small.b2e")
    >>> with ndpack.EmbedStore(path, mode="w") as es:
    ...     es["/a"] = np.arange(4)
    >>> es = ndpack.EmbedStore(path, mode="r")
    >>> list(es.keys()), "/a" in es, len(es)
    (['/a'], True, 1)
    """

    def __init__(self, urlpath=None, mode: str = "a", cparams=None, dparams=None,
                 chunksize: int = 8192, *, mmap_mode=None, _schunk=None,
                 _kind: str = "b2embed"):
        if mode not in _MODES:
            raise ParameterError(f"mode must be one of {_MODES}, not {mode!r}")
        self._mode = "r" if mmap_mode == "r" else mode
        self._cparams, self._dparams = cparams, dparams
        self.urlpath = None if urlpath is None else os.fspath(urlpath)
        if _schunk is not None:
            if not isinstance(_schunk, SChunk):
                raise FormatError("the embedded store is an NDArray frame, not a super-chunk "
                                  "of bytes")
            self._schunk = _schunk
        elif self.urlpath is not None and (mode == "r" or (mode == "a" and
                                                            os.path.exists(self.urlpath))):
            self._schunk = array_or_schunk(open_schunk(self.urlpath, mode=self._mode,
                                                       mmap_mode=mmap_mode))
            if not isinstance(self._schunk, SChunk):
                raise FormatError(f"{self.urlpath!r} holds an NDArray, not an embedded store")
        else:
            self._schunk = SChunk(chunksize=chunksize, cparams=make_cparams(cparams, typesize=1),
                                  dparams=dparams, urlpath=self.urlpath, mode="w",
                                  meta={_kind: {"version": 1}})
        self._load_map()

    def _load_map(self):
        vl = self._schunk.vlmeta
        md = vl.get(MAP_NAME, {"embed_map": {}, "current_offset": 0})
        if not (isinstance(md, dict) and isinstance(md.get("embed_map"), dict)):
            raise FormatError(f"embedded store {self.urlpath or '<memory>'}: vlmeta "
                              f"{MAP_NAME!r} is not a key map")
        self._map = dict(md["embed_map"])
        for k, ent in self._map.items():
            if not (isinstance(k, str) and k.startswith("/") and isinstance(ent, dict)
                    and isinstance(ent.get("offset"), int)
                    and isinstance(ent.get("length"), int)):
                raise FormatError(f"embedded store {self.urlpath or '<memory>'}: bad key map "
                                  f"entry {k!r}: {ent!r}")
        self._end = int(md.get("current_offset", 0))
        if not 0 <= self._end <= self._schunk.nbytes:
            raise FormatError(f"embedded store {self.urlpath or '<memory>'}: current_offset "
                              f"{self._end} is outside its {self._schunk.nbytes} bytes")

    def _save_map(self):
        self._schunk.vlmeta[MAP_NAME] = {"embed_map": self._map, "current_offset": self._end}

    @property
    def kind(self) -> str | None:
        """The owner named by the fixed metalayer (``b2embed``, ``b2dict``, ``b2tree``)."""
        names = list(self._schunk.meta)
        return next((k for k in KINDS if k in names), None)

    @property
    def schunk(self) -> SChunk:
        return self._schunk

    def _check_writable(self):
        if self._mode == "r":
            raise ParameterError("the embedded store is open in mode 'r'; writes are not "
                                 "allowed")

    # --- mapping -------------------------------------------------------------------------
    def __setitem__(self, key, value):
        check_store_key(key)
        self._check_writable()
        store = value_to_store(value, self._cparams, self._dparams)
        data = store.to_cframe()
        off = self._schunk.nbytes          # bytes past current_offset, if any, are orphans
        _append_bytes(self._schunk, data)
        self._map[key] = {"offset": off, "length": len(data)}
        self._end = off + len(data)
        self._save_map()

    def __getitem__(self, key):
        if key not in self._map:
            raise KeyError(f"key {key!r} not found in the embedded store")
        ent = self._map[key]
        off, n = int(ent["offset"]), int(ent["length"])
        if off < 0 or n <= 0 or off + n > self._schunk.nbytes:
            raise FormatError(f"embedded store: entry {key!r} ({off}, {n}) lies outside "
                              f"its {self._schunk.nbytes} bytes")
        return value_from_cframe(self._schunk.get_slice(off, off + n))

    def __delitem__(self, key):
        self._check_writable()
        if key not in self._map:
            raise KeyError(f"key {key!r} not found in the embedded store")
        del self._map[key]
        self._save_map()

    def __contains__(self, key) -> bool:
        return key in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self):
        return iter(list(self._map))

    def keys(self):
        return list(self._map)

    def nbytes_of(self, key) -> int:
        """Bytes of the serialized frame of `key`."""
        return int(self._map[key]["length"])

    def to_cframe(self) -> bytes:
        """The whole store as contiguous-frame bytes (a ``.b2e`` image)."""
        return self._schunk.to_cframe()

    def close(self):
        self._schunk.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"EmbedStore({self.urlpath!r}, {len(self)} keys)"


def estore_from_cframe(cframe, mode: str = "a") -> EmbedStore:
    """An in-memory :class:`EmbedStore` from ``.b2e`` bytes (copied)."""
    return EmbedStore(mode=mode, _schunk=schunk_from_cframe(cframe, copy=True))
