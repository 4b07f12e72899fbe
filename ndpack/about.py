"""What this ndpack is and runs on: python-blosc2's ``print_versions``, ``IS_WASM``,
``set_releasegil``, ``cpu_info``/``get_cpu_info`` and ``VERSION_DATE``, for code written
against python-blosc2.

Examples
--------
>>> import io, ndpack
>>> out = io.StringIO()
>>> ndpack.print_versions(file=out)
>>> "ndpack version" in out.getvalue()
True
>>> ndpack.set_releasegil(True)
True
>>> sorted(ndpack.cpu_info)
['count', 'isa', 'l1_data_cache_size', 'l2_cache_size', 'l3_cache_size']
"""

from __future__ import annotations

import os
import platform
import sys

import numpy as np

from . import _core
from ndpack.codecs import Codec, compressor_list
from ndpack.storage.grid import cache_sizes

__all__ = ["__version__", "VERSION_DATE", "print_versions", "IS_WASM", "set_releasegil",
           "cpu_info", "get_cpu_info"]

__version__ = "0.1.0"          # also in pyproject.toml and meson.build
#: The date of this version, in python-blosc2's ``VERSION_DATE`` format.
VERSION_DATE = "$Date:: 2026-11-27 #$"

#: True on WebAssembly builds (Pyodide); ndpack builds natively only.
IS_WASM = sys.platform == "emscripten"

_RELEASE_GIL = True


def set_releasegil(gilstate: bool) -> bool:
    """Kept for python-blosc2's code: ndpack's C core always releases the GIL while it
    compresses, decompresses and computes (threads of the caller run meanwhile), so
    the setting changes nothing; the previous value is returned."""
    global _RELEASE_GIL
    old, _RELEASE_GIL = _RELEASE_GIL, bool(gilstate)
    return old


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def get_cpu_info() -> dict:
    """The machine facts ndpack's defaults follow, under python-blosc2's keys.

    Returns
    -------
    dict
        ``count``: the CPUs this process may run on (its affinity, which the default
        thread count follows); ``l1_data_cache_size``, ``l2_cache_size``,
        ``l3_cache_size``: bytes, from ``/sys`` or ``NDPACK_CACHE_SIZES`` (default chunk
        and block shapes follow them); ``isa``: the filter kernels' instruction set
        (``"avx2"``, ``"sse2"`` or ``"scalar"``; ``NDPACK_ISA`` forces one).  The first
        four are python-blosc2's keys and meanings; ``isa`` is ndpack's.

    Examples
    --------
    >>> import ndpack
    >>> info = ndpack.get_cpu_info()
    >>> info["count"] >= 1 and info["l1_data_cache_size"] > 0
    True
    >>> info["isa"] in ("avx2", "sse2", "scalar")
    True
    """
    l1, l2, l3 = cache_sizes()
    return {"count": _cores(), "l1_data_cache_size": l1, "l2_cache_size": l2,
            "l3_cache_size": l3, "isa": _core.isa()}


#: :func:`get_cpu_info` at import, as python-blosc2's ``cpu_info``.
cpu_info = get_cpu_info()


def print_versions(file=None) -> None:
    """Print the versions of ndpack, its codec libraries and dependencies, and the
    machine facts its defaults follow (cores, threads, filter ISA)."""
    import numexpr

    out = sys.stdout if file is None else file
    line = "-=" * 38
    codecs = [c for c in compressor_list() if c in Codec.__members__.values()]
    print(line, file=out)
    print(f"ndpack version: {__version__}", file=out)
    print(f"Codecs available: {', '.join(c.name for c in codecs)}", file=out)
    print("Codec library versions:", file=out)
    for c in codecs:
        print(f"  {c.name}: {_core.library_version(int(c))}", file=out)
    print(f"NumPy version: {np.__version__}", file=out)
    print(f"numexpr version: {numexpr.__version__}", file=out)
    print(f"Python version: {sys.version}", file=out)
    print(f"Platform: {platform.platform()}", file=out)
    print(f"Processor: {platform.machine()}; filter ISA: {_core.isa()}", file=out)
    print(f"Byte-ordering: {sys.byteorder}", file=out)
    print(f"Detected cores: {os.cpu_count()}", file=out)
    print(f"Number of threads to use by default: {_core.get_nthreads()}", file=out)
    print(line, file=out)
