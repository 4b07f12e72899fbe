"""Where and how an array is stored: python-blosc2's ``Storage`` record.

``storage=Storage(urlpath="a.b2nd", mode="w")`` (or the same as a dict) is accepted by
every constructor, as python-blosc2's are; its fields are the same as the keywords
``urlpath=``, ``contiguous=``, ``mode=`` and ``meta=``, which win when both are given.

Examples
--------
>>> import ndpack
>>> a = ndpack.zeros(4, storage=ndpack.Storage(meta={"units": "m"}))
>>> a.schunk.meta["units"]
'm'
"""

from __future__ import annotations

import dataclasses

from ndpack.errors import ParameterError

__all__ = ["Storage", "schunk_storage", "storage_dflts", "storage_keywords"]


@dataclasses.dataclass
class Storage:
    """Storage parameters (python-blosc2's fields and defaults).

    Parameters
    ----------
    contiguous : bool, optional
        One file (True) or a directory of chunk files (False); default: contiguous
        when `urlpath` is given.
    urlpath : str, optional
        The file or directory; None keeps the array in memory.
    mode : {"a", "w", "r"}
    mmap_mode : str, optional
        Only ``None`` here (open files with ``ndpack.open(..., mmap_mode=)``).
    initial_mapping_size : int, optional
        Only ``None`` here.
    locking : bool
        Only ``False`` (ndpack writes files atomically instead).
    meta : dict, optional
        Metalayers to create with the array.
    """

    contiguous: bool | None = None
    urlpath: str | None = None
    mode: str = "a"
    mmap_mode: str | None = None
    initial_mapping_size: int | None = None
    locking: bool = False
    meta: dict | None = None


#: python-blosc2's defaults, as a dict.
storage_dflts = dataclasses.asdict(Storage())

_KEYWORDS = ("contiguous", "urlpath", "mode", "meta")


def storage_keywords(storage, kwargs: dict) -> dict:
    """`kwargs` completed with the fields of `storage` (a Storage, a dict or None);
    keywords given explicitly win."""
    if storage is None:
        return kwargs
    if isinstance(storage, dict):
        unknown = set(storage) - {f.name for f in dataclasses.fields(Storage)}
        if unknown:
            raise ParameterError(f"storage: unknown field(s) {sorted(unknown)}")
        storage = Storage(**storage)
    if not isinstance(storage, Storage):
        raise TypeError(f"storage must be a Storage or a dict, not {type(storage).__name__}")
    for name, default in (("mmap_mode", None), ("initial_mapping_size", None),
                          ("locking", False)):
        if getattr(storage, name) != default:
            raise ParameterError(f"storage.{name}={getattr(storage, name)!r} is not "
                                 "supported when creating an array")
    out = dict(kwargs)
    for name in _KEYWORDS:
        value = getattr(storage, name)
        if name not in out and value is not None and not (name == "mode" and value == "a"):
            out[name] = value
    return out


def schunk_storage(storage, extra: dict, given: dict) -> dict:
    """``SChunk``'s storage fields: `storage` (a Storage, a dict or None) completed by
    the Storage fields passed as keywords (`extra`: ``initial_mapping_size``, ``locking``,
    consumed) and overridden by the keywords `given` explicitly.  ``mmap_mode`` passes
    through (SChunk checks it); a mapping size or locking is a ParameterError, as when
    creating an array."""
    if isinstance(storage, dict):
        storage = Storage(**storage)
    elif storage is None:
        storage = Storage()
    elif not isinstance(storage, Storage):
        raise TypeError(f"storage must be a Storage or a dict, not {type(storage).__name__}")
    fields = dataclasses.asdict(storage)
    for name in ("initial_mapping_size", "locking"):
        if name in extra:
            fields[name] = extra.pop(name)
    for name, default in (("initial_mapping_size", None), ("locking", False)):
        if fields[name] != default:
            raise ParameterError(f"storage.{name}={fields[name]!r} is not supported (ndpack "
                                 "maps files read-only and writes them atomically)")
    fields.update(given)
    return fields
