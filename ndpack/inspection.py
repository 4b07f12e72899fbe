"""The array API standard's inspection object: ``ndpack.__array_namespace_info__()``.

Libraries written against the standard ask it what the namespace supports: capabilities,
devices (ndpack computes on the CPU: ``"cpu"``), default dtypes, and the dtypes of each
kind.

Examples
--------
>>> import ndpack
>>> info = ndpack.__array_namespace_info__()
>>> info.default_device(), info.devices()
('cpu', ['cpu'])
>>> info.default_dtypes()["real floating"]
<class 'numpy.float64'>
>>> list(info.dtypes(kind="unsigned integer"))
['uint8', 'uint16', 'uint32', 'uint64']
"""

from __future__ import annotations

from ndpack.dtypes import DTYPES, complex128, float64, int64, isdtype
from ndpack.storage.grid import MAX_DIM

__all__ = ["Info", "__array_namespace_info__", "DEVICE", "check_device"]

DEVICE = "cpu"


def check_device(device) -> None:
    """``None`` and ``"cpu"`` pass; anything else is a ValueError naming it."""
    if device is not None and device != DEVICE:
        raise ValueError(f"device must be {DEVICE!r} or None, not {device!r}")


class Info:
    """What the namespace supports (the standard's ``__array_namespace_info__`` result)."""

    __module__ = "ndpack"

    def capabilities(self) -> dict:
        """``{"boolean indexing": True, "data-dependent shapes": True,
        "max dimensions": 16}`` (16: the b2nd format's limit)."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": MAX_DIM}

    def default_device(self) -> str:
        """``"cpu"``."""
        return DEVICE

    def devices(self) -> list:
        """``["cpu"]``."""
        return [DEVICE]

    def default_dtypes(self, *, device=None) -> dict:
        """The dtypes arrays get when none is given, by kind."""
        check_device(device)
        return {"real floating": float64, "complex floating": complex128,
                "integral": int64, "indexing": int64}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The supported dtypes, by name; `kind` (as for ``isdtype``) selects some."""
        check_device(device)
        if kind is None:
            return dict(DTYPES)
        return {name: t for name, t in DTYPES.items() if isdtype(t, kind)}


def __array_namespace_info__() -> Info:
    """The namespace's inspection object (array API standard, revision 2024.12)."""
    return Info()
