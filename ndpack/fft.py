"""``ndpack.fft``: the array API standard's Fourier transform extension.

The transforms decode their input and run NumPy's pocketfft in memory, behind the same
size guard as the in-memory linear algebra (:data:`ndpack.linalg.IN_MEMORY_BYTES`,
``NDPACK_LINALG_BYTES``); results are NDArrays.  Single precision stays single
(``float32`` gives ``complex64``), as the standard asks.  ``fftshift`` and
``ifftshift`` are rolls, written chunk by chunk out of core.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.array([1.0, 2.0, 3.0, 4.0]))
>>> ndpack.fft.fft(a)[()].tolist()
[(10+0j), (-2+2j), (-2+0j), (-2-2j)]
>>> ndpack.fft.fftfreq(4)[()].tolist()
[0.0, 0.25, -0.5, -0.25]
"""

from __future__ import annotations

import operator

import numpy as np

from ndpack.engine.ops.shape import as_array, roll
from ndpack.errors import ParameterError
from ndpack.inspection import check_device
from ndpack.linalg import guard_bytes
from ndpack.storage.constructors import asarray

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft",
           "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")


def _values(x, name: str, complex_in: bool) -> np.ndarray:
    x = as_array(x)
    nbytes = int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize
    if nbytes > guard_bytes():
        raise ParameterError(f"fft.{name} runs in memory and its input has "
                             f"{nbytes / 2**20:.0f} MiB, above the guard "
                             f"(NDPACK_LINALG_BYTES raises it)")
    kind = np.dtype(x.dtype).kind
    if kind not in ("fc" if complex_in else "f"):
        raise TypeError(f"fft.{name} needs a {'floating' if complex_in else 'real floating'}"
                        f"-point array, not {x.dtype}")
    if not len(x.shape):
        raise ValueError(f"fft.{name} needs at least one dimension")
    return np.asarray(x[...])


def _single(v: np.ndarray, res: np.ndarray, to_complex: bool):
    """An NDArray of `res`, single precision when `v` was (NumPy before 2.0 computed
    float32 in float64)."""
    single = v.dtype in (np.float32, np.complex64)
    if single:
        res = res.astype(np.complex64 if to_complex else np.float32, copy=False)
    return asarray(res)


def _norm(norm):
    if norm not in _NORMS:
        raise ValueError(f"norm must be one of {_NORMS}, not {norm!r}")
    return norm


def _one(name, numpy_fn, complex_in, to_complex):
    def fn(x, /, *, n=None, axis=-1, norm="backward"):
        v = _values(x, name, complex_in)
        return _single(v, numpy_fn(v, n=n, axis=operator.index(axis), norm=_norm(norm)),
                       to_complex)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"NumPy's ``fft.{name}`` with the standard's signature (in memory)."
    return fn


def _many(name, numpy_fn, complex_in, to_complex):
    def fn(x, /, *, s=None, axes=None, norm="backward"):
        v = _values(x, name, complex_in)
        return _single(v, numpy_fn(v, s=s, axes=axes, norm=_norm(norm)), to_complex)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"NumPy's ``fft.{name}`` with the standard's signature (in memory)."
    return fn


fft = _one("fft", np.fft.fft, True, True)
ifft = _one("ifft", np.fft.ifft, True, True)
rfft = _one("rfft", np.fft.rfft, False, True)
irfft = _one("irfft", np.fft.irfft, True, False)
hfft = _one("hfft", np.fft.hfft, True, False)
ihfft = _one("ihfft", np.fft.ihfft, False, True)
fftn = _many("fftn", np.fft.fftn, True, True)
ifftn = _many("ifftn", np.fft.ifftn, True, True)
rfftn = _many("rfftn", np.fft.rfftn, False, True)
irfftn = _many("irfftn", np.fft.irfftn, True, False)


def _freq(numpy_fn, n, d, dtype, device):
    check_device(device)
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be positive, not {n}")
    values = numpy_fn(n, d=d)
    return asarray(values.astype(dtype if dtype is not None else np.float64))


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of a length-`n` transform with sample spacing `d`."""
    return _freq(np.fft.fftfreq, n, d, dtype, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The non-negative sample frequencies of ``rfft``."""
    return _freq(np.fft.rfftfreq, n, d, dtype, device)


def _shift(x, axes, sign: int):
    x = as_array(x)
    nd = len(x.shape)
    if axes is None:
        axes = tuple(range(nd))
    elif isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    axes = tuple(a % nd for a in axes) if nd else ()
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    if not axes:
        return asarray(np.asarray(x[...]))
    return roll(x, shifts, axis=axes)


def fftshift(x, /, *, axes=None):
    """The zero-frequency term moved to the center (a roll, chunk by chunk)."""
    return _shift(x, axes, 1)


def ifftshift(x, /, *, axes=None):
    """The inverse of :func:`fftshift`."""
    return _shift(x, axes, -1)
