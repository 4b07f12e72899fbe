"""``unique_values``, ``unique_counts``, ``unique_inverse`` and ``unique_all`` out of
core: run lengths over the sorted stream of the flattened input.

The input, flattened in C order, is sorted stably
(:func:`~ndpack.engine.ops.mergesort.sorted_stream`: runs on the workers, a k-way
merge), with its flat positions when first indices or inverse indices are asked for.
Equal neighbours of the stream form one group, so -0.0 and 0.0 are one value (the
first one met in the input is reported) and every NaN is a value of its own (``NaN !=
NaN``): the array API standard's rule, and NumPy 2's ``np.unique_values``.  A group's
first index is its first position (the sort is stable), its count its length; groups
that straddle two pieces of the stream are carried over.  Values, counts and indices
go to a :class:`~ndpack.engine.ops.spool.Spool` as they are found and are copied into
their NDArrays once their number is known.

The inverse indices are written in the input's shape and chunks: every ``(position,
group)`` pair gets the key ``chunk number * chunk items + offset in the chunk`` (the
output's stored C order of extended chunks), batches of pairs are sorted by key into
runs, and the merge of these runs gives the groups chunk after chunk, each chunk
filled and compressed as it completes.

Runs go to the input's folder when the input is an NDArray on disk (in an unnamed
file, never left behind), to memory otherwise.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> a = asarray(np.array([[3.0, 1.0, np.nan], [1.0, -0.0, 0.0]]), chunks=(1, 2))
>>> r = unique("unique_all", a)
>>> r[0][()].tolist(), r[1][()].tolist(), r[3][()].tolist()
([-0.0, 1.0, 3.0, nan], [4, 1, 0, 2], [2, 2, 1, 1])
>>> r[2][()].tolist()
[[2, 1, 3], [1, 0, 0]]
"""

from __future__ import annotations

import math
import os

import numpy as np

from ndpack.engine.ops.merge import LaneMerge, make_run
from ndpack.engine.ops.mergesort import check_sortable, piece_items, run_items, \
    sorted_stream
from ndpack.engine.ops.shape import as_array
from ndpack.engine.ops.spool import Spool
from ndpack.engine.run.output import new_output
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.storage.ndarray import NDArray, fill_from

__all__ = ["unique"]


def _folder(x):
    """Where runs go: the folder of an NDArray file, else memory (None)."""
    path = getattr(x, "urlpath", None) if isinstance(x, NDArray) else None
    return None if path is None else os.path.dirname(os.path.abspath(os.fspath(path)))


class _Pieces:
    """Numbered pieces of one output in a spool, read back in order."""

    def __init__(self, spool, dtype):
        self.spool, self.dtype, self.numbers, self.size = spool, np.dtype(dtype), [], 0
        self.buf, self.next = np.empty(0, self.dtype), 0

    def add(self, values) -> None:
        if len(values):
            self.numbers.append(self.spool.append(np.asarray(values, self.dtype)))
            self.size += len(values)

    def take(self, count: int) -> np.ndarray:
        parts, have = [], 0
        while have < count:
            if not len(self.buf):
                self.buf = self.spool.read(self.numbers[self.next])
                self.next += 1
            part = self.buf[:count - have]
            self.buf = self.buf[len(part):]
            parts.append(part)
            have += len(part)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def array(self) -> NDArray:
        """The pieces as one 1-D NDArray (in memory)."""
        return new_output((self.size,), self.dtype, None, "w", lambda out: fill_from(
            out, lambda region: self.take(region[0].stop - region[0].start)))


class _Groups:
    """Run lengths over the pieces of a sorted stream: values, first indices and counts
    into spool pieces, and each item's group number (for the inverse indices)."""

    def __init__(self, spool, dtype, positions: bool):
        self.values = _Pieces(spool, dtype)
        self.first = _Pieces(spool, np.int64) if positions else None
        self.counts = _Pieces(spool, np.int64)
        self.last = None                  # the last value seen (1 item), None at start
        self.open = 0                     # items of the group still open
        self.ngroups = 0

    def feed(self, v: np.ndarray, p) -> np.ndarray:
        """Take a piece of the stream; returns the group number of each of its items."""
        new = np.empty(len(v), bool)
        if not len(v):
            return np.empty(0, np.int64)
        new[0] = self.last is None or not bool(v[0] == self.last[0])
        np.not_equal(v[1:], v[:-1], out=new[1:])          # NaN != NaN: a group each
        groups = np.cumsum(new) + (self.ngroups - 1)
        starts = np.flatnonzero(new)
        if not len(starts):
            self.open += len(v)
        else:
            if self.ngroups:                               # the open group ends here
                self.counts.add([self.open + int(starts[0])])
            self.counts.add(np.diff(starts))
            self.open = len(v) - int(starts[-1])
            self.values.add(v[starts])
            if self.first is not None:
                self.first.add(p[starts])
            self.ngroups += len(starts)
        self.last = v[-1:].copy()
        return groups

    def close(self) -> None:
        if self.ngroups:
            self.counts.add([self.open])


def unique(name: str, x):
    """The results of the unique function `name` for `x` (a tuple of NDArrays in the
    standard's order, or one NDArray for ``unique_values``)."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        raise TypeError(f"{name}() takes an array, not a Python {type(x).__name__}")
    x = as_array(x)
    check_sortable(x.dtype, name)
    shape = tuple(int(s) for s in x.shape)
    positions = name in ("unique_all", "unique_inverse")
    with Spool(_folder(x)) as spool:
        groups = _Groups(spool, x.dtype, name == "unique_all")
        inverse = _Inverse(x, spool) if positions else None
        if math.prod(shape):
            for v, p in sorted_stream(x, positions, spool):
                g = groups.feed(v, p)
                if inverse is not None:
                    inverse.add(p, g)
        groups.close()
        values = groups.values.array()
        if name == "unique_values":
            return values
        counts = groups.counts.array()
        if name == "unique_counts":
            return values, counts
        inv = inverse.array()
        if name == "unique_inverse":
            return values, inv
        return values, groups.first.array(), inv, counts


class _Inverse:
    """The inverse indices, in the input's shape and chunks, from ``(position, group)``
    pairs given in any order."""

    def __init__(self, x, spool):
        self.shape = tuple(int(s) for s in x.shape)
        kw = {}
        if isinstance(x, NDArray):
            kw = {"chunks": x.chunks, "blocks": x.blocks}
        if self.shape and math.prod(self.shape):
            chunks, blocks = compute_chunks_blocks(self.shape, kw.get("chunks"),
                                                   kw.get("blocks"), dtype=np.int64)
            kw = {"chunks": chunks, "blocks": blocks}
        self.storage = kw
        self.spool, self.runs = spool, []
        self.batch_keys, self.batch_groups, self.nbatch = [], [], 0
        self.limit = run_items(8, True, 1)
        self.piece = piece_items(-(-math.prod(self.shape) // self.limit), 1, 8, True)
        # an inverse that fits is scattered into place (10M items: 0.1 s, vs 2.5 s
        # sorting the keys)
        self.dense = np.empty(math.prod(self.shape), np.int64) \
            if math.prod(self.shape) <= self.limit else None
        if self.shape and math.prod(self.shape):
            self.chunks = kw["chunks"]
            self.ext = tuple(-(-c // b) * b for c, b in zip(self.chunks, kw["blocks"]))
            self.grid = tuple(-(-s // c) for s, c in zip(self.shape, self.chunks))

    def _keys(self, p: np.ndarray) -> np.ndarray:
        """Stored position of each flat position: chunk number * chunk items + offset."""
        if not self.shape:
            return p
        coords = np.unravel_index(p, self.shape)
        outer = np.ravel_multi_index(tuple(c // k for c, k in zip(coords, self.chunks)),
                                     self.grid)
        inner = np.ravel_multi_index(tuple(c % k for c, k in zip(coords, self.chunks)),
                                     self.ext)
        return outer.astype(np.int64) * math.prod(self.ext) + inner

    def add(self, p: np.ndarray, g: np.ndarray) -> None:
        if self.dense is not None:
            self.dense[p] = g
            return
        self.batch_keys.append(self._keys(p))
        self.batch_groups.append(g)
        self.nbatch += len(p)
        if self.nbatch >= self.limit:
            self._flush()

    def _flush(self) -> None:
        if not self.nbatch:
            return
        keys = np.concatenate(self.batch_keys)
        groups = np.concatenate(self.batch_groups)
        self.batch_keys, self.batch_groups, self.nbatch = [], [], 0
        o = np.argsort(keys)
        g0 = int(groups.min())
        self.runs.append(make_run(self.spool, keys[o], groups[o] - g0, self.piece,
                                  offset=g0))

    def array(self) -> NDArray:
        if self.dense is not None:
            dense = self.dense.reshape(self.shape)
            return new_output(self.shape, np.int64, None, "w", lambda out: fill_from(
                out, lambda region: dense[region]), **self.storage)
        self._flush()
        if not self.shape or not math.prod(self.shape):
            merge = LaneMerge(self.spool, self.runs, False, np.int64) if self.runs else None
            vals = merge.take(1)[1] if merge else np.empty(0, np.int64)
            return new_output(self.shape, np.int64, None, "w", lambda out: fill_from(
                out, lambda region: vals.reshape(self.shape)[region]), **self.storage)
        merge = LaneMerge(self.spool, self.runs, False, np.int64)
        size = math.prod(self.ext)

        def write(out):
            lay = out.layout
            for n in range(lay.nchunks):
                region = lay.region(lay.chunk_coords(n))
                count = math.prod(s.stop - s.start for s in region)
                keys, groups = merge.take(count)
                buf = np.zeros(size, np.int64)
                buf[keys - n * size] = groups
                out.write_encoded(n, out.encode_chunk(buf.reshape(self.ext)))

        return new_output(self.shape, np.int64, None, "w", write, **self.storage)
