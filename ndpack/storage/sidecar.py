"""Sidecars: files an index keeps beside the array it indexes, and the frame's signature.

A sorted index of ``data.b2nd`` (:mod:`ndpack.engine.ops.index`) lives in the directory
``data.b2nd.ndpack-index`` next to it::

    data.b2nd.ndpack-index/
        meta.json        what was indexed and the signature of every chunk it covers
        values.b2nd      the sorted values (a 1-d b2nd array)
        positions.b2nd   their flat C-order positions in the array (int64)

The directory is built under a temporary name and renamed into place once complete
(:func:`ndpack.storage.atomic.replacing`): a reader sees no index or a whole one, and a
writer that fails (a full disk) leaves nothing.  The array file itself is not touched:
python-blosc2 and C-Blosc2 open it as before and never see the index.

The *signature* of a frame (:func:`signature`) is what tells whether an index still
describes the array: the crc32c of every stored chunk (the frame's checksum record,
:mod:`ndpack.storage.checksums`).  A chunk whose checksum is not the one recorded when
the index was built was rewritten since; chunks after the recorded ones were appended.
A frame without a valid record -- checksums off, or a record dropped at open because
another writer (python-blosc2, C-Blosc2) rewrote the frame, which zeroes the record's
mark -- has no signature, and no persisted index is trusted for it.

Examples
--------
>>> import numpy as np, os, tempfile
>>> from ndpack.storage.constructors import asarray
>>> path = os.path.join(tempfile.mkdtemp(), "x.b2nd")
>>> a = asarray(np.arange(10), chunks=(4,), blocks=(2,), urlpath=path)
>>> sig = signature(a.schunk.frame)
>>> len(sig), sidecar_path(path).endswith("x.b2nd.ndpack-index")
(3, True)
>>> with building(path) as tmp:
...     write_meta(tmp, {"kind": "full"})
>>> read_meta(path)["kind"], sorted(os.listdir(os.path.dirname(path)))
('full', ['x.b2nd', 'x.b2nd.ndpack-index'])
>>> remove(path); os.path.exists(sidecar_path(path))
False
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil

from ndpack.errors import FormatError
from ndpack.storage.atomic import replacing

__all__ = ["SUFFIX", "FORMAT", "VERSION", "sidecar_path", "signature", "building",
           "write_meta", "read_meta", "remove"]

SUFFIX = ".ndpack-index"
FORMAT = "ndpack-index"
VERSION = 1
META = "meta.json"


def sidecar_path(urlpath) -> str:
    """The index directory of the array file `urlpath`."""
    return os.fspath(urlpath) + SUFFIX


def signature(frame) -> list | None:
    """The crc32c of every chunk of `frame` (a list of ints), or None when the frame
    carries no valid checksum record (module docstring)."""
    crcs = getattr(frame, "crcs", None)
    if crcs is None or getattr(frame, "crc_stale", False) or len(crcs) != frame.nchunks:
        return None
    return list(crcs)


@contextlib.contextmanager
def building(urlpath):
    """Context manager: a new empty directory that becomes the index directory of
    `urlpath` (replacing any older one) when the block ends without an exception, and
    is removed otherwise."""
    with replacing(sidecar_path(urlpath)) as tmp:
        os.mkdir(tmp)
        yield tmp


def write_meta(folder, meta: dict) -> None:
    """Write `meta` (plain JSON values) as the description of the index in `folder`."""
    doc = {"format": FORMAT, "version": VERSION, **meta}
    with open(os.path.join(folder, META), "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))


def read_meta(urlpath) -> dict | None:
    """The description of the index of `urlpath`; None when it has none.  A directory
    that is not an index of this version is a :class:`FormatError`."""
    path = os.path.join(sidecar_path(urlpath), META)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise FormatError(f"{path}: not a readable index description ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError(f"{path}: not an ndpack index description")
    if doc.get("version") != VERSION:
        raise FormatError(f"{path}: index version {doc.get('version')!r}, this ndpack "
                          f"reads version {VERSION} (rebuild it with create_index)")
    return doc


def remove(urlpath) -> None:
    """Remove the index directory of `urlpath` (nothing when there is none)."""
    shutil.rmtree(sidecar_path(urlpath), ignore_errors=True)
