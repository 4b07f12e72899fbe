"""What a file opens as: storage's two dispatchers, above every class they choose from.

:func:`open` opens a frame (a ``.b2nd``/``.b2frame`` file or a sparse directory) as an
:class:`~ndpack.storage.ndarray.NDArray` when it carries a ``b2nd`` metalayer and as an
:class:`~ndpack.storage.schunk.SChunk` otherwise; :func:`open_store` opens a
``.b2d``/``.b2z`` store as a :class:`~ndpack.storage.treestore.TreeStore` or
:class:`~ndpack.storage.stores.DictStore` (as its embedded store says) and a ``.b2e``
file as an :class:`~ndpack.storage.embedstore.EmbedStore`.  Keeping them here lets
every other storage module import only what it builds on: ``schunk`` does not know
NDArray, ``stores`` does not know TreeStore.  (Inside storage, a frame's leaves are
wrapped by :func:`ndpack.storage.ndarray.array_or_schunk`, which :func:`open` uses
too.)

Examples
--------
>>> import numpy as np, ndpack, os, tempfile
>>> d = tempfile.mkdtemp()
>>> _ = ndpack.asarray(np.arange(6), urlpath=os.path.join(d, "a.b2nd"), mode="w")
>>> type(open(os.path.join(d, "a.b2nd"))).__name__
'NDArray'
>>> with ndpack.TreeStore(os.path.join(d, "t.b2z"), mode="w") as ts:
...     ts["/g/a"] = np.arange(3)
>>> type(open_store(os.path.join(d, "t.b2z"))).__name__
'TreeStore'
"""

from __future__ import annotations

import os

from ndpack.errors import OperationError, ParameterError
from ndpack.storage.embedstore import EmbedStore
from ndpack.storage.framefile import open_remote_frame
from ndpack.storage.remote import is_url, remote_path_error
from ndpack.storage.remotestore import RemoteStore
from ndpack.storage.ndarray import array_or_schunk
from ndpack.storage.schunk import SChunk, open_schunk
from ndpack.storage.stores import DictStore
from ndpack.storage.treestore import TreeStore

__all__ = ["open", "open_store"]


def open(urlpath, mode: str = "r", offset: int = 0,  # noqa: A001  (python-blosc2's name)
         mmap_mode=None, **kwargs):
    """Open a frame on disk (contiguous file or sparse directory).

    A frame with a ``b2nd`` metalayer opens as an
    :class:`~ndpack.storage.ndarray.NDArray`, any other as an
    :class:`~ndpack.storage.schunk.SChunk`.

    Parameters
    ----------
    urlpath : str or path
    mode : {'r', 'a'}
        'r' (default, as python-blosc2) reads; 'a' allows appends and edits (written the
        way C-Blosc2 writes them).
    offset : int
        Where the frame starts inside a larger file (contiguous frames only).
    mmap_mode : {'r'}, optional
        Read chunks as slices of a memory map (implies mode 'r').
    **kwargs
        ``dparams=`` (DParams or dict); for URLs also ``storage_options=`` (fsspec's
        options and ndpack's, :data:`ndpack.storage.remote.DEFAULTS`).

    Notes
    -----
    A URL (``s3://``, ``https://``, any fsspec knows; :mod:`ndpack.storage.remote`)
    opens read-only and lazily: two requests, then only the chunks and blocks that
    reads touch.

    Examples
    --------
    >>> import numpy as np, ndpack, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.b2frame")
    >>> ndpack.SChunk(chunksize=400, data=np.arange(300, dtype=np.int32), urlpath=path).close()
    >>> s = ndpack.open(path, mmap_mode="r")
    >>> s.nchunks, np.frombuffer(s[298:300], np.int32).tolist()
    (3, [298, 299])
    >>> s.close(); ndpack.remove_urlpath(path); os.path.exists(path)
    False

    Raises
    ------
    FileNotFoundError
        If `urlpath` does not exist.
    FormatError
        If it is not a valid frame.
    """
    if is_url(urlpath):
        if urlpath.endswith(".b2z"):
            return open_store(urlpath, mode, **kwargs)
        return array_or_schunk(_open_url(urlpath, mode, offset, kwargs))
    return array_or_schunk(open_schunk(urlpath, mode, offset, mmap_mode, **kwargs))


def _open_url(url: str, mode: str, offset: int, kwargs: dict) -> SChunk:
    """The SChunk of the frame at `url` (read only; `storage_options=` go to fsspec)."""
    options = kwargs.pop("storage_options", None)
    dparams = kwargs.pop("dparams", None)
    if kwargs:
        raise ParameterError(f"unknown open() argument(s) {sorted(kwargs)}")
    frame = open_remote_frame(url, mode, offset, options)
    return SChunk.from_frame(frame, urlpath=url, mode="r", dparams=dparams)


def open_store(localpath, mode: str = "r", **kwargs):
    """Open a ``.b2d``/``.b2z`` store as a TreeStore or DictStore, as its embedded store
    says (``b2tree`` or ``b2dict`` metalayer), and a ``.b2e`` file as an EmbedStore, the
    way python-blosc2's ``open`` does.

    Examples
    --------
    >>> import numpy as np, ndpack, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t.b2z")
    >>> with ndpack.TreeStore(path, mode="w") as ts:
    ...     ts["/g/a"] = np.arange(3)
    >>> type(open_store(path)).__name__
    'TreeStore'
    """
    path = os.fspath(localpath)
    if is_url(path):                  # a .b2z at a URL: read in place, read-only
        if mode != "r":
            raise OperationError(remote_path_error(path) + f" (mode {mode!r})")
        return RemoteStore(path, kwargs.pop("storage_options", None))
    if path.endswith(".b2e") and os.path.isfile(path):
        return EmbedStore(path, mode=mode, **kwargs)
    store = DictStore(localpath, mode="r")
    kind = store.estore.kind
    store.close()
    cls = TreeStore if kind == "b2tree" else DictStore
    return cls(localpath, mode=mode, **kwargs)
