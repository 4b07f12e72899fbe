"""What this ndpack is and runs on: python-blosc2's ``print_versions``, ``IS_WASM`` and
``set_releasegil``, for code written against python-blosc2.

Examples
--------
>>> import io, ndpack
>>> out = io.StringIO()
>>> ndpack.print_versions(file=out)
>>> "ndpack version" in out.getvalue()
True
>>> ndpack.set_releasegil(True)
True
"""

from __future__ import annotations

import os
import platform
import sys

import numpy as np

from . import _core
from ndpack.codecs import Codec, compressor_list

__all__ = ["__version__", "print_versions", "IS_WASM", "set_releasegil"]

__version__ = "0.1.0"          # also in pyproject.toml and meson.build

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
