"""The BLAS that NumPy uses, called directly: accumulating products, one-thread holds.

NumPy wheels bundle OpenBLAS (``numpy.libs/libscipy_openblas64_*.so`` on Linux,
``numpy/.dylibs`` on macOS) and export its CBLAS entry points; when that library is
found (:func:`library`), two things become possible that NumPy does not offer:

* :func:`gemm` computes ``out += a @ b`` in place (BLAS ``beta = 1``): a blocked
  product adds its partial products without a scratch buffer and a second pass over
  the tile.  It returns False (and does nothing) when it does not apply -- no
  library, dtypes other than float32/64 and complex64/128, mixed dtypes, byte-swapped
  data, or strides BLAS cannot take -- and the caller then takes the general path
  (``np.matmul`` into a scratch buffer, then an addition).
* :func:`one_thread` holds BLAS at one thread while the engine's workers each run
  their own part of a product (one level of parallelism, as numexpr is held at one
  thread while workers evaluate).  OpenBLAS's own threads otherwise spin for a while
  after every call and take a core from the decoders that run between products.
  Without the library the hold does nothing and says so (it yields False); the caller
  then runs each product as one call on BLAS's own threads.

``NDPACK_BLAS=0`` in the environment disables both (the general paths run).

Examples
--------
>>> import numpy as np
>>> out = np.ones((2, 2))
>>> done = gemm(out, np.eye(2), np.full((2, 2), 3.0), accumulate=True)
>>> out.tolist() if done else (out + np.eye(2) @ np.full((2, 2), 3.0)).tolist()
[[4.0, 4.0], [4.0, 4.0]]
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading

import numpy as np

__all__ = ["gemm", "library", "one_thread"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
# (symbol prefix, suffix, 64-bit integers): NumPy's scipy-openblas64 first
_NAMINGS = [("scipy_", "64_", True), ("", "64_", True), ("scipy_", "", False), ("", "", False)]
_KINDS = {"f4": ("s", ctypes.c_float), "f8": ("d", ctypes.c_double),
          "c8": ("c", None), "c16": ("z", None)}


class OpenBLAS:
    """Entry points of one OpenBLAS library: ``gemm[char]``, ``set_threads``,
    ``get_threads``, and ``path``."""

    def __init__(self, lib, path: str, prefix: str, suffix: str, wide: bool):
        self.path = path
        integer = ctypes.c_int64 if wide else ctypes.c_int32
        self.integer = integer
        self.gemm = {}
        for key, (ch, real) in _KINDS.items():
            fn = getattr(lib, f"{prefix}cblas_{ch}gemm{suffix}")
            scalar = real if real is not None else ctypes.c_void_p
            fn.argtypes = [ctypes.c_int] * 3 + [integer] * 3 + [
                scalar, ctypes.c_void_p, integer, ctypes.c_void_p, integer,
                scalar, ctypes.c_void_p, integer]
            fn.restype = None
            self.gemm[key] = fn
        self._set = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}")
        self._set.argtypes, self._set.restype = [ctypes.c_int], None
        self._get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}")
        self._get.argtypes, self._get.restype = [], ctypes.c_int

    def set_threads(self, n: int) -> None:
        self._set(int(n))

    def get_threads(self) -> int:
        return int(self._get())


def _candidates() -> list:
    """OpenBLAS files that may be NumPy's: beside the numpy package first, then the
    libraries this process has loaded (Linux)."""
    here = os.path.dirname(np.__file__)
    found = []
    for folder in (os.path.join(here, os.pardir, "numpy.libs"), os.path.join(here, ".dylibs")):
        found += sorted(glob.glob(os.path.join(folder, "*openblas*")))
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "openblas" in os.path.basename(path) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def _numpy_uses_openblas() -> bool:
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]
        return "openblas" in str(deps.get("blas", {}).get("name", "")).lower()
    except Exception:                       # older NumPy: no dict mode
        return False


_STATE = {"lib": None, "looked": False}
_LOCK = threading.Lock()


def library() -> OpenBLAS | None:
    """NumPy's OpenBLAS, or None (another BLAS, not found, or ``NDPACK_BLAS=0``)."""
    with _LOCK:
        if not _STATE["looked"]:
            _STATE["looked"] = True
            _STATE["lib"] = _find()
        return _STATE["lib"]


def _find() -> OpenBLAS | None:
    if os.environ.get("NDPACK_BLAS", "1") == "0" or not _numpy_uses_openblas():
        return None
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix, wide in _NAMINGS:
            try:
                return OpenBLAS(lib, path, prefix, suffix, wide)
            except AttributeError:           # not this naming
                continue
    return None


_HOLD = {"users": 0, "before": 1}


@contextlib.contextmanager
def one_thread():
    """Hold BLAS at one thread for the duration (nested and concurrent holds share
    one; the last to leave gives back the thread count found).  Yields whether BLAS
    is held (False: no library; BLAS keeps its own threads).

    Examples
    --------
    >>> with one_thread() as held:
    ...     assert not held or library().get_threads() == 1
    """
    lib = library()
    if lib is None:
        yield False
        return
    with _LOCK:
        if not _HOLD.get("fork"):                # a child forked during a hold
            _HOLD["fork"] = True                 # starts without it
            os.register_at_fork(after_in_child=_forget_holds)
        if _HOLD["users"] == 0:
            _HOLD["before"] = lib.get_threads()
            lib.set_threads(1)
        _HOLD["users"] += 1
    try:
        yield True
    finally:
        with _LOCK:
            _HOLD["users"] -= 1
            if _HOLD["users"] == 0:
                lib.set_threads(_HOLD["before"])


def _forget_holds() -> None:
    """In a forked child: the holds were the parent's threads'; give the count back."""
    if _HOLD["users"]:
        _HOLD["users"] = 0
        lib = _STATE["lib"]
        if lib is not None:
            lib.set_threads(_HOLD["before"])


def _layout(m: np.ndarray):
    """``(transposed, leading dimension)`` of a 2-D array as a row-major BLAS operand,
    or None when its strides do not allow it (no unit stride, negative or overlapping
    strides)."""
    size = m.itemsize
    rows, cols = m.shape
    s0, s1 = m.strides
    if cols == 1 or s1 == size:                       # rows one after another
        if rows == 1:
            return False, max(1, cols)
        if s0 > 0 and s0 % size == 0 and s0 // size >= cols:
            return False, s0 // size
    if rows == 1 or s0 == size:                       # columns one after another
        if cols == 1:
            return True, max(1, rows)
        if s1 > 0 and s1 % size == 0 and s1 // size >= rows:
            return True, s1 // size
    return None


def gemm(out: np.ndarray, a: np.ndarray, b: np.ndarray, accumulate: bool) -> bool:
    """``out[...] = a @ b`` or, with `accumulate`, ``out += a @ b``, by one BLAS call
    (on the calling thread; the GIL is released).  False, with nothing done, when the
    fast path does not apply (see the module docstring).

    Examples
    --------
    >>> a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    >>> out = np.zeros((4, 2)).T                 # a column-major output works too
    >>> if not gemm(out, a, b, accumulate=False):
    ...     out[...] = a @ b
    >>> bool((out == a @ b).all())
    True
    """
    lib = library()
    if lib is None or a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
        return False
    dt = out.dtype
    key = f"{dt.kind}{dt.itemsize}"
    if key not in _KINDS or a.dtype != dt or b.dtype != dt or not dt.isnative:
        return False
    m, k = a.shape
    n = b.shape[1]
    if b.shape[0] != k or out.shape != (m, n):
        return False
    if m == 0 or n == 0:
        return True
    if k == 0:
        if not accumulate:
            out[...] = 0
        return True
    lo = _layout(out)
    if lo is None:
        return False
    if lo[0]:                                # a column-major output: out.T = b.T @ a.T
        out, a, b = out.T, b.T, a.T
        m, n = n, m
        lo = _layout(out)
    la, lb = _layout(a), _layout(b)
    if la is None or lb is None or lo is None or lo[0]:
        return False
    if not all(x.ctypes.data % dt.alignment == 0 for x in (out, a, b)):
        return False
    beta = 1.0 if accumulate else 0.0
    if key in ("f4", "f8"):
        alpha_arg, beta_arg = 1.0, beta
    else:                                    # complex scalars go by address
        pair = ctypes.c_double * 2 if key == "c16" else ctypes.c_float * 2
        alpha, beta_c = pair(1.0, 0.0), pair(beta, 0.0)
        alpha_arg, beta_arg = ctypes.addressof(alpha), ctypes.addressof(beta_c)
    lib.gemm[key](_ROW_MAJOR, _TRANS if la[0] else _NO_TRANS, _TRANS if lb[0] else _NO_TRANS,
                  m, n, k, alpha_arg, a.ctypes.data, la[1], b.ctypes.data, lb[1],
                  beta_arg, out.ctypes.data, lo[1])
    return True
