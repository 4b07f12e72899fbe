"""``nonzero`` in two streamed passes with bounded memory.

1. **Count**: the nonzero items of every region of the input (its chunks for an
   NDArray) are counted on the evaluation workers; their sum is the length of the
   results.
2. **Fill**: the input is read again in C-order *slabs* (whole rows of the input's
   chunk grid along the first dimension when such a row fits the budget, flat ranges
   otherwise), on the workers and in order; each slab's nonzero flat positions become
   coordinates, which are appended to the ``ndim`` int64 results one compressed chunk at
   a time.

Memory: a window of ``nthreads + 1`` slabs of at most :func:`slab_items` items (a
share of :func:`ndpack.resources.memory_limit`; :data:`SLAB_ITEMS` overrides it) and
one chunk per result.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> a = asarray(np.array([[0, 3, 0], [4, 0, 5]]), chunks=(1, 2))
>>> [r[()].tolist() for r in nonzero(a)]
[[0, 1, 1], [1, 0, 2]]
"""

from __future__ import annotations

import collections
import math

import numpy as np

from ndpack.resources import memory_limit
from ndpack.codecs import get_nthreads
from ndpack.engine.ops.mergesort import Tracked
from ndpack.engine.ops.shape import as_array, flat_read
from ndpack.engine.run.output import result_storage
from ndpack.engine.run.plan import default_region_shape, regions
from ndpack.engine.run.workers import workers
from ndpack.storage.ndarray import NDArray, create

__all__ = ["nonzero", "slab_items", "SLAB_ITEMS"]

SLAB_ITEMS = None        # items of one slab of the fill pass (None: from the memory limit)


def slab_items(itemsize: int, ndim: int, nthreads: int) -> int:
    """Items of one slab: ``nthreads + 1`` slabs in flight, each with its positions and
    coordinates, within a quarter of the memory limit."""
    if SLAB_ITEMS:
        return int(SLAB_ITEMS)
    per = itemsize + 8 * (ndim + 2)
    return max(1024, memory_limit() // 4 // ((nthreads + 1) * per))


def _count_regions(x, shape: tuple, limit: int) -> list:
    """Regions for counting: an NDArray's chunks (when not bigger than the limit), else
    C-order regions of about `limit` items."""
    chunks = x.chunks if isinstance(x, NDArray) and math.prod(x.chunks) <= limit else \
        default_region_shape(shape, 1, limit)
    return list(regions(shape, chunks))


def _slabs(x, shape: tuple, limit: int) -> list:
    """``(lo, hi)`` flat C-order ranges: whole rows of the chunk grid when they fit."""
    n = math.prod(shape)
    row = math.prod(shape[1:])
    step = x.chunks[0] * row if isinstance(x, NDArray) else row
    if step > limit or step == 0:
        step = limit
    else:
        step *= max(1, limit // step)
    return [(a, min(a + step, n)) for a in range(0, n, step)]


def nonzero(x) -> tuple:
    """One int64 NDArray per dimension of `x`: the coordinates of its nonzero items in
    C order (see the module's text for the two passes)."""
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        raise TypeError(f"nonzero() takes an array, not a Python {type(x).__name__}")
    x = as_array(x)
    shape = tuple(int(s) for s in x.shape)
    if not shape:
        raise ValueError("nonzero needs an array of at least one dimension")
    nthreads = max(1, get_nthreads())
    limit = slab_items(np.dtype(x.dtype).itemsize, len(shape), nthreads)
    with Tracked(workers(nthreads)) as pool:
        counts = _in_order(pool, nthreads, [
            (lambda r=r: int(np.count_nonzero(np.asarray(x[r]))))
            for r in _count_regions(x, shape, limit)])
        total = sum(counts)
        outs = [create((total,), np.int64, **result_storage({})) for _ in shape]
        row = math.prod(shape[1:])
        writers = [_Appender(o) for o in outs]

        def coords(lo: int, hi: int):
            v = np.asarray(flat_read(x, shape, lo, hi))
            if lo % row == 0 and hi % row == 0:          # whole rows: NumPy's nonzero
                c = np.nonzero(v.reshape((-1,) + shape[1:]))
                return (c[0] + lo // row,) + c[1:]
            return np.unravel_index(np.flatnonzero(v) + lo, shape)

        calls = [(lambda a=a, b=b: coords(a, b)) for a, b in _slabs(x, shape, limit)]
        _in_order(pool, nthreads, calls, lambda c: [w.add(i) for w, i in zip(writers, c)])
    for w in writers:
        w.close()
    return tuple(outs)


def _in_order(pool, nthreads: int, calls: list, use=None) -> list:
    """Run the zero-argument `calls` on `pool` (``nthreads + 1`` in flight) and give
    their results, in order, to `use` (or return them)."""
    window, results = collections.deque(), []
    for c in calls:
        window.append(pool.submit(c))
        while len(window) > nthreads:
            r = window.popleft().result()
            use(r) if use else results.append(r)
    while window:
        r = window.popleft().result()
        use(r) if use else results.append(r)
    return results


class _Appender:
    """Items appended to a new 1-D NDArray, one compressed chunk at a time."""

    def __init__(self, out: NDArray):
        self.out, self.parts, self.have, self.next = out, [], 0, 0
        self.chunk = out.chunks[0] if out.shape[0] else 0

    def add(self, values: np.ndarray) -> None:
        self.parts.append(np.asarray(values, np.int64))
        self.have += len(values)
        while self.chunk and self.have >= self.chunk:
            self._write(self.chunk)

    def _write(self, count: int) -> None:
        data = np.concatenate(self.parts) if len(self.parts) > 1 else self.parts[0]
        self.parts, self.have = [data[count:]], len(data) - count
        ext = self.out.layout.ext_chunks
        buf = data[:count]
        if buf.shape != ext:
            full = np.zeros(ext, np.int64)
            full[:count] = buf
            buf = full
        self.out.write_encoded(self.next, self.out.encode_chunk(buf))
        self.next += 1

    def close(self) -> None:
        if self.have:
            self._write(self.have)
