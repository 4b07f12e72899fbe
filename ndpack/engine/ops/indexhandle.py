"""python-blosc2's names for sorted indexes: ``IndexKind``, the ``Index`` handle and
``iter_sorted``, over ndpack's indexes (:mod:`~ndpack.engine.ops.index`).

ndpack has one kind of index, python-blosc2's ``FULL`` (the values sorted with their
positions); ``create_index(kind=IndexKind.FULL)`` builds it and the other kinds are a
ValueError naming it.  ``a.indexes`` and ``a.index()`` give :class:`Index` handles: a
read-only mapping of the description (so ``a.indexes[0]["size"]`` still works) with
python-blosc2's attributes and ``drop``/``rebuild``/``compact``.

:func:`iter_sorted` walks the values in ascending, stable order (NaNs last): from the
index when the array has a whole one (no chunk changed since), else from the
out-of-core sort (:func:`~ndpack.engine.ops.mergesort.sorted_stream`: runs spilled
compressed and merged, memory bounded by ``ndpack.set_memory_limit``) -- python-blosc2
raises ValueError without a full index.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.array([3.0, np.nan, 1.0, 2.0, 0.0]))
>>> [float(v) for v in ndpack.iter_sorted(a)]          # no index: the sort
[0.0, 1.0, 2.0, 3.0, nan]
>>> _ = a.create_index(kind=ndpack.IndexKind.FULL)
>>> ix = a.indexes[0]
>>> ix.kind, ix.stale, ix["size"]
(<IndexKind.FULL: 'full'>, False, 5)
>>> [float(v) for v in ndpack.iter_sorted(a, start=1, stop=4)]   # from the index
[1.0, 2.0, 3.0]
"""

from __future__ import annotations

import collections.abc
import enum
import math
import os

import numpy as np

from ndpack.engine.ops import index as _index
from ndpack.engine.ops.mergesort import sorted_stream
from ndpack.engine.ops.spool import Spool
from ndpack.storage.ndarray import NDArray

__all__ = ["IndexKind", "Index", "iter_sorted", "NDARRAY_MEMBERS"]

# Items read per step by iter_sorted (one decoded piece of the sorted values).
BATCH = 1 << 16


class IndexKind(enum.Enum):
    """python-blosc2's index kinds (same names and values).  ndpack builds ``FULL``
    only: its sorted values and positions answer every query the others do."""

    SUMMARY = "summary"
    BUCKET = "bucket"
    PARTIAL = "partial"
    FULL = "full"
    OPSI = "opsi"
    MEMBERSHIP = "membership"


class Index(collections.abc.Mapping):
    """Handle of the index of an :class:`NDArray` (python-blosc2's ``Index``): a
    read-only mapping of its description (``a.indexes`` lists the same dicts) with
    python-blosc2's attributes.  Obtained from ``a.indexes`` or ``a.index()``; the
    description is taken when the handle is made (``stale`` and ``scan_chunks`` are of
    that moment: get a new handle after writes).

    Parameters
    ----------
    array : NDArray
    token : str
        The index's name, or ``"__self__"`` for the array's own values (the only
        target ndpack indexes).
    table, descriptor
        python-blosc2's; ``table`` must be None, ``descriptor`` replaces the one read.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.arange(10.0)[::-1].copy())
    >>> ix = ndpack.Index(a, "__self__", descriptor=a.create_index())
    >>> ix.kind, ix.field, ix.persistent, ix.cratio > 0
    (<IndexKind.FULL: 'full'>, None, False, True)
    >>> ix.rebuild()["size"]
    10
    >>> ix.drop()
    >>> a.indexes
    []
    """

    def __init__(self, array, token: str = "__self__", *, table=None,
                 descriptor: dict | None = None):
        if table is not None:
            raise TypeError("Index(table=...): ndpack has no tables (CTable is not "
                            "applicable, docs/compat.md)")
        if not isinstance(array, NDArray):
            raise TypeError(f"Index needs an NDArray, not {type(array).__name__}")
        if descriptor is None:
            found = _index.indexes(array)
            if not found:
                raise KeyError(f"the array has no index {token!r}")
            descriptor = found[0]
        self._array, self.token, self._d = array, token, dict(descriptor)

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        return (f"Index(kind={self._d['kind']!r}, field={self.field!r}, "
                f"name={self.name!r}, stale={self.stale})")

    descriptor = property(lambda self: dict(self._d), doc="The description, a dict.")
    kind = property(lambda self: IndexKind(self._d["kind"]), doc="An IndexKind (FULL).")
    field = property(lambda self: self._d.get("field"), doc="Always None (no fields).")
    col_name = property(lambda self: None, doc="python-blosc2's column name: None.")
    name = property(lambda self: self._d.get("name") or "__self__",
                    doc="The index's name (``__self__`` unless one was given).")
    target = property(lambda self: {"source": "field", "field": None},
                      doc="What is indexed: the array's own values.")
    stale = property(lambda self: bool(self._d["stale"]),
                     doc="True when the index cannot be used until rebuild().")
    persistent = property(lambda self: bool(self._d["persistent"]),
                          doc="True when kept beside the array's file.")
    nbytes = property(lambda self: int(self._d["nbytes"]),
                      doc="Bytes of the sorted values and positions, uncompressed.")
    cbytes = property(lambda self: int(self._d["cbytes"]), doc="Their compressed bytes.")

    @property
    def cratio(self) -> float:
        """nbytes / cbytes (0.0 for an empty index)."""
        return self.nbytes / self.cbytes if self.cbytes else 0.0

    def storage_stats(self) -> tuple:
        """``(nbytes, cbytes, cratio)``, as python-blosc2 gives them."""
        return self.nbytes, self.cbytes, self.cratio

    def drop(self) -> None:
        """Remove the index (its files too)."""
        _index.drop_index(self._array)

    def rebuild(self) -> "Index":
        """Build the index again from the array's current values; a new handle."""
        return Index(self._array, self.token, descriptor=_index.rebuild_index(self._array))

    def compact(self) -> "Index":
        """python-blosc2 merges appended runs; here: rebuild when chunks changed since
        the index was built (it scans them), else the same index."""
        if self._d["stale"] or self._d["scan_chunks"]:
            return self.rebuild()
        return Index(self._array, self.token)


def _slice(n: int, start, stop, step) -> range:
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise TypeError(f"iter_sorted: {name} must be an int or None, not "
                            f"{type(v).__name__}")
    if step == 0:
        raise ValueError("iter_sorted: step cannot be zero")
    return range(*slice(start, stop, step).indices(n))


def _from_values(values, r: range, batch: int):
    """Items ``r`` of the sorted values array, `batch` at a time."""
    for k in range(0, len(r), batch):
        part = r[k:k + batch]
        if part.step == 1:
            yield from np.asarray(values[part.start:part.stop])
        else:
            lo, hi = min(part[0], part[-1]), max(part[0], part[-1]) + 1
            span = np.asarray(values[lo:hi])      # <= batch * |step| items
            yield from span[np.arange(part.start, part.stop, part.step) - lo] \
                if hi - lo <= 4 * batch else np.asarray(values[np.asarray(part)])


def _from_sort(array, r: range, batch: int):
    """Items ``r`` of the sorted stream; a negative step reads the stream forward and
    keeps the ``len(r)`` wanted items to give them reversed."""
    if r.step < 0:
        items = list(_from_sort(array, r[::-1], batch))
        yield from reversed(items)
        return
    path = array.urlpath                         # runs beside a file, else in memory
    with Spool(None if path is None else os.path.dirname(os.path.abspath(path))) as spool:
        done = 0                                  # items of the stream passed
        for vals, _ in sorted_stream(array, False, spool, batch):
            end = done + len(vals)
            if len(r) and r[0] < end:
                first = r[0] - done
                take = vals[first::r.step]
                take = take[:len(r)]
                yield from take
                r = r[len(take):]
            done = end
            if not len(r):
                return


def iter_sorted(array, order=None, *, start: int | None = None, stop: int | None = None,
                step: int | None = None, batch_size: int | None = None):
    """Iterate the values of `array` in ascending, stable order (NaNs last), as
    python-blosc2's ``iter_sorted``.

    Parameters
    ----------
    array : NDArray
        Any number of dimensions (flat C order; python-blosc2 takes 1-d only).
    order : None
        python-blosc2's fields of a structured dtype: ndpack indexes no fields, so a
        field is a ValueError.
    start, stop, step : int, optional
        A slice of the sorted sequence (negative values as in Python).
    batch_size : int, optional
        Items decoded per step (default 65536).

    Yields
    ------
    numpy scalar
        The values, one at a time.

    Notes
    -----
    With a whole index (``a.create_index()``, no chunk written since) the values come
    from its sorted copy: only the blocks of the slice are read.  Otherwise the array
    is sorted out of core (memory bounded by ``ndpack.set_memory_limit``), where
    python-blosc2 raises ValueError; a negative `step` then keeps the slice in memory.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> a = ndpack.asarray(np.array([[5, 1, 4], [2, 3, 0]]))
    >>> [int(v) for v in ndpack.iter_sorted(a)]
    [0, 1, 2, 3, 4, 5]
    >>> [int(v) for v in ndpack.iter_sorted(a, start=-2, step=-1)]
    [4, 3, 2, 1, 0]
    """
    if not isinstance(array, NDArray):
        raise TypeError(f"iter_sorted() is only supported on NDArray, not "
                        f"{type(array).__name__}")
    if order is not None:
        raise ValueError(f"iter_sorted(order={order!r}): ndpack indexes plain arrays, not "
                         "fields of a structured dtype")
    _index.check_indexable(array.dtype)
    batch = BATCH if batch_size is None else int(batch_size)
    if batch < 1:
        raise ValueError(f"iter_sorted: batch_size must be >= 1, not {batch_size}")
    r = _slice(math.prod(array.shape), start, stop, step)
    values = _index.whole_sorted_values(array)
    return _from_values(values, r, batch) if values is not None \
        else _from_sort(array, r, batch)


def _index_method(self, field: str | None = None, name: str | None = None) -> Index:
    """The array's :class:`Index` (python-blosc2's ``NDArray.index``); KeyError when
    it has none."""
    if field is not None:
        raise KeyError(f"no index of field {field!r}: ndpack indexes plain arrays")
    found = _index.indexes(self)
    if not found or (name is not None and found[0].get("name") != name):
        raise KeyError(f"the array has no index{'' if name is None else ' ' + repr(name)}")
    return Index(self, name or "__self__", descriptor=found[0])


#: NDArray's members from here (bound by :mod:`ndpack.engine.bind`): ``index()`` and
#: ``indexes``, the array's indexes as :class:`Index` handles
NDARRAY_MEMBERS = [
    ("index", _index_method),
    ("indexes", property(
        lambda self: [Index(self, d.get("name") or "__self__", descriptor=d)
                      for d in _index.indexes(self)],
        doc="The array's indexes as :class:`Index` handles (mappings of kind, size, "
            "persistent/path, stale and why, chunks to scan, bytes).")),
]
