"""Direct readers: h5py and zarr operands read and decoded on our own threads.

``obj[region]`` is slow for the two most common foreign arrays: h5py holds the GIL
while HDF5 reads, and zarr v3 decodes every chunk in its one event-loop thread.  For
the simple storage layouts a *direct reader* finds each chunk in the file itself and
reads it with ``os.preadv`` (h5py) or from its chunk file (zarr), decoding with
codecs that release the GIL (our C core for Blosc and zstd chunks, straight into place;
zlib), so several chunks are read at once on the engine's reader threads.

:func:`reader` returns a reader, or None when the array is not one it is sure to read
right -- the caller then keeps ``obj[region]``:

* **h5py**: a Dataset of a file opened with the default ``sec2`` driver (no user
  block, no SWMR), chunked with no filter, deflate alone or the Blosc2 filter (HDF5
  filter 32026, as hdf5plugin and PyTables write it: each chunk a Blosc2 frame, a
  b2nd array for chunks of 2 or more dimensions, of which only the blocks a region
  touches are decoded), or contiguous; a numeric
  type whose file layout is NumPy's (byte order included); a defined fill value
  (unallocated chunks read as it).  A file open for writing is flushed first.
* **zarr** (formats 2 and 3): an array of a ``LocalStore``, regular chunk grid, C
  order, no filters and no sharding, with no compressor or one of zstd, Blosc,
  gzip or zlib; missing chunk files read as the fill value.

An array that :func:`writing` marks as the output being written is never read
directly.  A chunk whose bytes do not decode to the expected size is read through
``obj[key]`` instead: never silently wrong data.  ``READS`` counts the chunks read
directly, by kind (``"h5py"``, ``"zarr"``), and those that fell back
(``"zarr fallback"``, ...).

Examples
--------
>>> import os, tempfile, numpy as np, h5py
>>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
>>> with h5py.File(path, "w") as f:
...     _ = f.create_dataset("x", data=np.arange(20.0).reshape(4, 5), chunks=(3, 2))
>>> f = h5py.File(path, "r")
>>> read = reader(f["x"])
>>> dst = np.empty((2, 3))
>>> read((slice(1, 3), slice(2, 5)), dst)
>>> dst.tolist()
[[7.0, 8.0, 9.0], [12.0, 13.0, 14.0]]
>>> f.close()
"""


from __future__ import annotations

import contextlib
import os
import sys
import threading

import numpy as np

from ndpack.engine.run.gridread import READS
from ndpack.engine.run.h5read import BLOSC2_FILTER, H5Reader, TablesReader
from ndpack.engine.run.zarrread import ZarrReader

__all__ = ["READS", "BLOSC2_FILTER", "read_new", "reader", "writing"]

_OUTPUTS: list = []            # arrays being written (never read directly)
_LOCK = threading.Lock()


# ---------------------------------------------------------------------------------------
# entry points

def reader(arr):
    """A direct reader of the foreign array `arr`, or None when none applies.

    The reader is called as ``read(key, dst, nthreads=1)``: `key` a tuple of step-1
    slices (one per dimension), `dst` an array of the key's shape (any dtype NumPy
    can assign to); chunks are read on up to `nthreads` reader threads.  Make one
    per evaluation: it reflects the file as it is when made (a writable h5py file is
    flushed then).

    Examples
    --------
    >>> import numpy as np
    >>> reader(np.arange(3)) is None
    True
    """
    if isinstance(arr, np.ndarray) or _is_output(arr):
        return None
    make = None
    mod = type(arr).__module__ or ""
    if mod.startswith("h5py") and "h5py" in sys.modules:
        make = H5Reader.make
    elif mod.startswith("zarr") and "zarr" in sys.modules:
        make = ZarrReader.make
    elif mod.startswith("tables") and "tables" in sys.modules:
        make = TablesReader.make
    if make is None:
        return None
    try:
        return make(arr)
    except Exception:            # noqa: BLE001 -- unexpected metadata: the general path
        return None


def read_new(read, arr, key: tuple, nthreads: int = 1) -> np.ndarray:
    """``arr[key]`` (step-1 slices) through the direct reader `read` into a new array.

    Examples
    --------
    >>> import numpy as np
    >>> read_new(lambda key, dst, nthreads=1: dst.fill(1), np.zeros(4), (slice(1, 3),))
    array([1., 1.])
    """
    dst = np.empty(tuple(s.stop - s.start for s in key), arr.dtype)
    read(key, dst, nthreads)
    return dst


@contextlib.contextmanager
def writing(out):
    """Mark `out` as the output being written for the duration: :func:`reader` gives
    no direct reader of it (its chunks change while the expression runs).

    Examples
    --------
    >>> import numpy as np
    >>> with writing(np.zeros(2)):
    ...     pass
    """
    with _LOCK:
        _OUTPUTS.append(out)
    try:
        yield out
    finally:
        with _LOCK:
            _OUTPUTS.remove(out) if any(o is out for o in _OUTPUTS) else None


def _is_output(arr) -> bool:
    with _LOCK:
        outs = list(_OUTPUTS)
    ident = _identity(arr)
    return any(o is arr or (ident is not None and _identity(o) == ident) for o in outs)


def _identity(arr):
    """What names the stored array behind `arr` (two handles of one dataset match)."""
    try:
        mod = type(arr).__module__ or ""
        if mod.startswith("h5py") and hasattr(arr, "id") and hasattr(arr, "file"):
            import h5py
            info = h5py.h5o.get_info(arr.id)
            return ("h5", os.path.realpath(arr.file.filename), info.fileno, info.addr)
        if mod.startswith("tables") and hasattr(arr, "_v_pathname"):
            return ("h5", os.path.realpath(arr._v_file.filename), arr._v_pathname)
        if mod.startswith("zarr") and hasattr(arr, "store_path"):
            root = getattr(arr.store, "root", None)
            where = str(arr.store_path) if root is None else os.path.realpath(str(root))
            return ("zarr", where, arr.path)
    except Exception:            # noqa: BLE001,S110 -- unknown: compared by identity only
        pass
    return None
