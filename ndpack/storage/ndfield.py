"""One field of a structured NDArray as an array of its own (python-blosc2's ``NDField``
and ``NDArray.fields``), read and written chunk by chunk.

Reading ``f[key]`` decodes the records of one chunk's part of the selection at a time
and keeps the field (memory: the result plus one chunk of records); writing
``f[key] = v`` reads, patches and writes back the records of one chunk at a time, so
the other fields keep their values.  Integer-array and mask keys read the records at
those points.  Keys address the array's dimensions: ``f[key]`` is ``a[key][field]``, so
a subarray field's own dimensions come whole after them.

Examples
--------
>>> import numpy as np, ndpack
>>> x = np.zeros((4, 5), dtype=[("t", "f8"), ("n", "i4")])
>>> a = ndpack.asarray(x, chunks=(2, 2))
>>> t = a.fields["t"]
>>> t.shape, t.dtype
((4, 5), dtype('float64'))
>>> t[1:3, 1:4] = 7.5
>>> a[2, 2].tolist()
(7.5, 0)
>>> t[:, 2].tolist()
[0.0, 7.5, 7.5, 0.0]
"""

from __future__ import annotations

import numpy as np

from ndpack.storage.fancy import is_fancy
from ndpack.storage.grid import as_range, normalize_key
from ndpack.storage.ndarray import NDArray

__all__ = ["NDField", "NDARRAY_MEMBERS"]


class NDField:
    """A view of one field of an :class:`NDArray` with a structured dtype.

    Parameters
    ----------
    ndarr : NDArray
        Its dtype must be structured.
    field : str
        One of ``ndarr.dtype.names``.

    Raises
    ------
    TypeError
        `ndarr` has no structured dtype, or no field `field` (python-blosc2's errors).

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.array([(1, 2.0), (3, 4.0)], dtype=[("i", "i8"), ("f", "f8")]))
    >>> f = ndpack.NDField(a, "f")
    >>> f[:].tolist(), f.schunk is a.schunk, len(f)
    ([2.0, 4.0], True, 2)
    >>> f[0] = -1
    >>> a[:].tolist()
    [(1, -1.0), (3, 4.0)]
    """

    def __init__(self, ndarr: NDArray, field: str):
        if not isinstance(ndarr, NDArray):
            raise TypeError(f"NDField needs an NDArray, not {type(ndarr).__name__}")
        names = ndarr.dtype.names
        if names is None:
            raise TypeError("NDArray does not have a structured dtype!")
        if field not in names:
            raise TypeError(f"Field {field} not found in the dtype of the NDArray")
        self.ndarr, self.field = ndarr, field
        self.dtype = ndarr.dtype.fields[field][0]

    shape = property(lambda self: self.ndarr.shape, doc="The array's shape.")
    ndim = property(lambda self: self.ndarr.ndim, doc="The array's number of dimensions.")
    size = property(lambda self: self.ndarr.size, doc="The array's number of items.")
    chunks = property(lambda self: self.ndarr.chunks, doc="The array's chunk shape.")
    blocks = property(lambda self: self.ndarr.blocks, doc="The array's block shape.")
    schunk = property(lambda self: self.ndarr.schunk, doc="The array's super-chunk.")

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d field")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"NDField({self.field!r}, shape={self.shape}, dtype={self.dtype})"

    def _parts(self, key):
        """``(selection shape, result shape, flips, [(dst, records key)])``: the part of
        the selection each chunk holds, as slices of the result and of the array."""
        lay = self.ndarr.layout
        sel, flip, out_shape, _ = normalize_key(key, lay.shape)
        ranges = [as_range(s) for s in sel]
        parts = []
        for n, dst, locs in lay.parts(ranges):
            coords = lay.chunk_coords(n)
            src = tuple(slice(k * c + r.start, k * c + r.stop, r.step)
                        for k, c, r in zip(coords, lay.chunks, locs))
            parts.append((dst, src))
        return tuple(len(r) for r in ranges), out_shape, flip, parts

    @staticmethod
    def _flip(x, flip):
        return x[tuple(slice(None, None, -1) if f else slice(None) for f in flip)] \
            if any(flip) else x

    def __getitem__(self, key) -> np.ndarray:
        if is_fancy(key):
            return np.ascontiguousarray(self.ndarr[key][self.field])
        full, out_shape, flip, parts = self._parts(key)
        out = np.empty(full, self.dtype)
        for dst, src in parts:                       # one chunk's records at a time
            out[dst] = self.ndarr[src][self.field]
        return self._flip(out, flip).reshape(out_shape + self.dtype.shape)

    def __setitem__(self, key, value) -> None:
        self.ndarr.schunk.check_writable()
        if is_fancy(key):
            rec = self.ndarr[key]
            rec[self.field] = value
            self.ndarr[key] = rec
            return
        full, out_shape, flip, parts = self._parts(key)
        value = np.asarray(value, dtype=self.dtype.base)
        try:
            value = np.broadcast_to(value, out_shape + self.dtype.shape)
        except ValueError:
            raise ValueError(f"could not broadcast a value of shape {value.shape} into the "
                             f"selection of shape {out_shape}") from None
        value = self._flip(value.reshape(full + self.dtype.shape), flip)
        for dst, src in parts:                       # read, patch, write one chunk's part
            rec = self.ndarr[src]
            rec[self.field] = value[dst]
            self.ndarr[src] = rec

    def __array__(self, dtype=None, copy=None):
        out = self[()]
        return out if dtype is None else out.astype(dtype, copy=False)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def _fields(self) -> dict:
    """``{name: NDField}`` for every field of a structured dtype (python-blosc2's
    ``NDArray.fields``); empty for a plain dtype."""
    return {name: NDField(self, name) for name in (self.dtype.names or ())}


#: NDArray's members from here (bound, with the engine's, by :mod:`ndpack.engine.bind`)
NDARRAY_MEMBERS = [("fields", property(_fields, doc=_fields.__doc__))]
