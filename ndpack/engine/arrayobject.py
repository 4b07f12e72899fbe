"""The array API standard's array object protocol on ``NDArray`` and ``LazyExpr``.

Libraries that accept any array (through ``x.__array_namespace__()`` or
array-api-compat) find ndpack's namespace here; the Python conversions of 0-d arrays,
the device attributes (ndpack computes on the CPU), DLPack export (the array is
decoded, then shared with the consumer), the transposes of lazy expressions and
``NDArray.take`` (python-blosc2's method, :func:`ndpack.take`).  The
storage layer does not know the engine (imports point down): this module lists the
members (:data:`NDARRAY_MEMBERS`, :data:`LAZYEXPR_MEMBERS`) and
:mod:`ndpack.engine.bind` binds them, with the operators, once.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(6.0).reshape(2, 3))
>>> a.__array_namespace__() is ndpack
True
>>> a.device, float(a[1, 2]), float(ndpack.asarray(np.array(2.5)))
('cpu', 5.0, 2.5)
>>> np.from_dlpack(a).tolist()
[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
"""

from __future__ import annotations

import sys

import numpy as np

from ndpack.engine.elementwise import astype
from ndpack.engine.ops.shape import matrix_transpose, permute_dims, reshape
from ndpack.engine.ops.sorting import argsort, sort
from ndpack.engine.ops.take import take
from ndpack.storage.constructors import CopyRequired

__all__ = ["NDARRAY_MEMBERS", "LAZYEXPR_MEMBERS", "API_VERSIONS", "DEVICE"]

#: Revisions of the standard a caller may ask for (``__array_namespace__(api_version=)``).
API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")
DEVICE = "cpu"
_KDLCPU = 1                      # DLPack's device type of host memory


def __array_namespace__(self, /, *, api_version=None):
    """The ``ndpack`` module: the namespace of the standard's functions."""
    if api_version is not None and api_version not in API_VERSIONS:
        raise ValueError(f"api_version must be one of {API_VERSIONS} or None, "
                         f"not {api_version!r}")
    return sys.modules[__name__.split(".")[0]]     # the package, imported by now


def _device(self) -> str:
    return DEVICE


def to_device(self, device, /, *, stream=None):
    """The array itself: ndpack arrays live on the CPU (``"cpu"``)."""
    if device != DEVICE:
        raise ValueError(f"device must be {DEVICE!r}, not {device!r}")
    if stream is not None:
        raise ValueError("stream must be None on the CPU")
    return self


def _scalar(self, convert, what: str):
    """`convert` of the only element of a 0-d (or one-element, as NumPy allows) array."""
    if self.size != 1:
        raise TypeError(f"only arrays of one element can be converted to Python {what}, "
                        f"not shape {self.shape}")
    return convert(np.asarray(self[()]).reshape(()).item())


def __bool__(self):
    if self.size != 1:
        raise ValueError(f"the truth value of an array of shape {self.shape} is ambiguous "
                         "(use any() or all())")
    return _scalar(self, bool, "bool")


def __int__(self):
    return _scalar(self, int, "int")


def __float__(self):
    return _scalar(self, float, "float")


def __complex__(self):
    return _scalar(self, complex, "complex")


def __index__(self):
    if self.dtype.kind not in "iu":
        raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
    if self.ndim:
        raise TypeError(f"only 0-d integer arrays can be used as an index, not shape "
                        f"{self.shape}")
    return int(self[()])


def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of the decoded array (a copy: compressed chunks cannot be
    shared; ``copy=False`` is a BufferError)."""
    if copy is False:
        raise CopyRequired("an ndpack array is compressed: it can only be exported as a copy")
    if dl_device is not None and tuple(dl_device) != (_KDLCPU, 0):
        raise BufferError(f"ndpack arrays are on the CPU, not device {dl_device}")
    values = np.ascontiguousarray(self[()])
    kwargs = {"stream": stream}
    if max_version is not None:
        kwargs["max_version"] = max_version
    return values.__dlpack__(**kwargs)


def __dlpack_device__(self, /):
    return (_KDLCPU, 0)


def _transpose(self):
    if self.ndim != 2:
        raise ValueError(f"T needs a 2-d array (use permute_dims), not {self.ndim}-d")
    return permute_dims(self, (1, 0))


def _matrix_transpose(self):
    return matrix_transpose(self)


def _astype(self, dtype, /, *, copy=True, device=None):
    return astype(self, dtype, copy=copy, device=device)


def _take(self, indices, axis=None, **kwargs):
    """Items at `indices` along `axis` (of the flattened array when None), as a new
    NDArray; see :func:`ndpack.take`."""
    return take(self, indices, axis=axis, **kwargs)


def _reshape(self, shape, /, c_order=True, **kwargs):
    """`self` with a new shape, as a new NDArray (python-blosc2's method); see
    :func:`ndpack.reshape`."""
    return reshape(self, shape, c_order=c_order, **kwargs)


def _sort(self, order=None, **kwargs):
    """`self` sorted along its last axis (by the fields `order` of a structured dtype),
    as a new NDArray (python-blosc2's method); see :func:`ndpack.sort`."""
    return sort(self, order=order, **kwargs)


def _argsort(self, order=None, **kwargs):
    """The positions that sort `self` (python-blosc2's method); see
    :func:`ndpack.argsort`."""
    return argsort(self, order=order, **kwargs)


_PROTOCOL = [
    ("__array_namespace__", __array_namespace__),
    ("device", property(_device, doc="``'cpu'``: where the array is computed.")),
    ("to_device", to_device),
] + [(fn.__name__, fn) for fn in (__bool__, __int__, __float__, __complex__, __index__,
                                  __dlpack__, __dlpack_device__)]

#: NDArray's members from here: the protocol, ``astype`` and python-blosc2's ``take``,
#: ``reshape``, ``sort`` and ``argsort``
#: (NDArray has its own ``T`` and ``mT``)
NDARRAY_MEMBERS = _PROTOCOL + [("astype", _astype), ("take", _take), ("reshape", _reshape),
                               ("sort", _sort), ("argsort", _argsort)]

#: LazyExpr's: the protocol and the transposes (it has its own lazy ``astype``)
LAZYEXPR_MEMBERS = _PROTOCOL + [
    ("T", property(_transpose, doc="The transpose of a 2-d array.")),
    ("mT", property(_matrix_transpose, doc="The transpose of the last two axes.")),
]
