"""Results that appear complete or not at all, compressed fast by default.

Computed results (``compute()``, ``evaluate`` into a new array, products, cumulative
sums, user functions) use :data:`RESULT_CPARAMS` unless the caller passes
``cparams=``: ZSTD clevel 1 with shuffle.  python-blosc2's ``CParams()`` default
(ZSTD clevel 5) wrote results 2.6x slower here for the same ratio (1.26 vs 1.25 on
``sum(a, axis=0) + b * sin(c)``); ``CParams()`` itself keeps python-blosc2's defaults.

:func:`new_output` creates the NDArray a computation fills; on disk it is written
under a temporary name in the same folder and renamed over the target when complete,
so a failure (an exception, Ctrl-C) leaves nothing half-written under the target name
and an existing file of that name untouched.

Examples
--------
>>> import numpy as np, os, tempfile
>>> from ndpack.storage.ndarray import fill_from
>>> path = os.path.join(tempfile.mkdtemp(), "r.b2nd")
>>> r = new_output((4,), np.float64, path, "w",
...                lambda out: fill_from(out, lambda region: np.arange(4.0)[region]))
>>> r[()].tolist(), os.listdir(os.path.dirname(path))
([0.0, 1.0, 2.0, 3.0], ['r.b2nd'])
"""

from __future__ import annotations

import os

from ndpack.codecs import Codec, Filter
from ndpack.errors import ParameterError
from ndpack.storage.ndarray import NDArray, create, holding
from ndpack.storage.dispatch import open as open_frame

__all__ = ["new_output", "result_storage", "RESULT_CPARAMS"]

RESULT_CPARAMS = {"codec": Codec.ZSTD, "clevel": 1,
                  "filters": [Filter.NOFILTER] * 5 + [Filter.SHUFFLE], "filters_meta": [0] * 6}


def result_storage(storage: dict) -> dict:
    """`storage` with the results' default cparams when none are given."""
    if storage.get("cparams") is None:
        storage = dict(storage, cparams=dict(RESULT_CPARAMS))
    return storage


def new_output(shape, dtype, urlpath, mode, write, **storage) -> NDArray:
    """Create the output (in memory when `urlpath` is None), fill it with
    ``write(out)``, and on disk rename it over `urlpath` once complete.

    `mode` 'w' replaces an existing file at the end; 'a' refuses to."""
    storage = result_storage(storage)
    if urlpath is None:
        out = create(shape, dtype, **storage)
        write(out)
        return out
    final = os.fspath(urlpath)
    if mode not in ("w", "a"):
        raise ParameterError(f"mode must be 'w' or 'a' to write a result, not {mode!r}")
    if mode == "a" and os.path.exists(final):
        raise FileExistsError(f"{final!r} exists; use mode='w' to overwrite it")
    out = create(shape, dtype, urlpath=final, mode=mode, **storage)   # a temporary name
    with holding(out):                               # until complete (storage/atomic.py)
        write(out)
    out.schunk.close()
    return open_frame(final, mode="a")
