"""Evaluate a tree region by region: read each operand's part, run the kernel.

For a region (a tuple of slices of the output), each operand is read once, sliced to
what the region needs under broadcasting (a dimension of size 1 reads index 0:1), and
the tree runs through :mod:`ndpack.engine.run.kernel`.  The next region's operands are
read on the prefetch thread while the current one is evaluated; memory is two regions
of operands in reused buffers, whatever the array size.  Region sizes come from
:mod:`ndpack.engine.run.plan`.

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.expr.nodes import Apply, Constant, Operand
>>> node = Apply("add", (Operand(np.arange(6.0).reshape(2, 3)), Constant(1)))
>>> evaluate_region(node, (slice(1, 2), slice(0, 2)), (2, 3)).tolist()
[[4.0, 5.0]]
>>> [(r[0].start, v.tolist()) for r, v in region_values(node, (2, 3),
...                                                     [(slice(0, 1), slice(0, 3))])]
[(0, [[1.0, 2.0, 3.0]])]
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ndpack.codecs import get_nthreads
from ndpack.engine.expr.nodes import Node, operands_of
from ndpack.engine.run import foreign
from ndpack.engine.run.kernel import fit, run
from ndpack.engine.run.plan import valid_chunks
from ndpack.engine.run.workers import buffers, prefetch, run_all, run_leaves
from ndpack.storage.ndarray import NDArray

__all__ = ["operand_key", "evaluate_region", "region_values"]


def operand_key(shape: tuple, region: tuple, out_ndim: int) -> tuple:
    """The key that reads from an operand of `shape` what output `region` needs."""
    lead = out_ndim - len(shape)
    key = []
    for d, n in enumerate(shape):
        sl = region[lead + d]
        key.append(slice(0, 1) if n == 1 else sl)
    return tuple(key)


def evaluate_region(node: Node, region: tuple, out_shape: tuple, out=None) -> np.ndarray:
    """Values of the tree on output `region` (a tuple of slices with step 1)."""
    ops = operands_of(node)
    values = _read_operands(ops, region, len(out_shape))
    shape = tuple(s.stop - s.start for s in region)
    return fit(run(node, ops, values), shape, node.dtype, out)


def _read_operands(ops: list, region: tuple, out_ndim: int) -> list:
    values = []
    for op in ops:
        key = operand_key(op.shape, region, out_ndim)
        read = foreign.reader(op.array) if op.shape else None
        if read is not None:                   # h5py, zarr: chunks on our threads
            values.append(foreign.read_new(read, op.array, key, get_nthreads()))
            continue
        values.append(np.asarray(op.array[key]) if op.shape else np.asarray(op.array[()]))
    return values


class _Reader:
    """Reads operand regions into two reused sets of buffers (the region being
    evaluated and the one being read ahead): fresh arrays would cost page faults.

    NumPy operands (memmaps included) are sliced, not copied.  NDArrays read straight
    into the buffers (they decode their chunks in parallel themselves).  Other arrays
    (h5py, zarr, ...) are read a piece per chunk of their own storage along the first
    dimension, the pieces on reader threads in parallel (h5py straight into the
    buffer with ``read_direct``), or through a direct reader (h5py and zarr layouts
    that :mod:`ndpack.engine.run.foreign` reads and decodes itself, GIL released).
    """

    def __init__(self, ops: list, out_ndim: int, nthreads: int):
        self.ops, self.ndim, self.nthreads = ops, out_ndim, nthreads
        self.direct = [None if isinstance(op.array, (np.ndarray, NDArray)) or not op.shape
                       else foreign.reader(op.array) for op in ops]
        self.slots, self.turn = ([None] * len(ops), [None] * len(ops)), 0
        self.raw = ([None] * len(ops), [None] * len(ops))   # the pool buffers under slots

    def release(self) -> None:
        """Give the buffers back to the engine's pool (no region is read after)."""
        for slot, raw in zip(self.slots, self.raw):
            for i, b in enumerate(raw):
                if b is not None:
                    buffers.give(b)
                raw[i] = slot[i] = None

    def __call__(self, region: tuple) -> list:
        slot, raw = self.slots[self.turn], self.raw[self.turn]
        self.turn ^= 1
        values, calls, leaves = [], [], []
        for i, op in enumerate(self.ops):
            arr = op.array
            key = operand_key(op.shape, region, self.ndim)
            if not op.shape:
                values.append(np.asarray(arr[()]))
                continue
            if isinstance(arr, np.ndarray):
                values.append(arr[key])
                continue
            shape = tuple(k.stop - k.start for k in key)
            size = math.prod(shape)
            if slot[i] is None or slot[i].size < size:
                if raw[i] is not None:
                    buffers.give(raw[i])
                nbytes = size * op.dtype.itemsize
                raw[i] = buffers.take(nbytes)        # kept between evaluations: no faults
                slot[i] = raw[i][:nbytes].view(op.dtype)
            buf = slot[i][:size].reshape(shape)
            values.append(buf)
            if isinstance(arr, NDArray):
                calls.append(functools.partial(arr.read_into, key, buf))
            elif self.direct[i] is not None:        # pieces of its own chunks
                leaves += [functools.partial(self.direct[i], piece, buf[rel])
                           for piece, rel in _pieces(self.direct[i], key)]
            else:
                calls += [functools.partial(_read_piece, arr, piece, buf[rel])
                          for piece, rel in _pieces(arr, key)]
        if 0 < len(leaves) < self.nthreads:        # few pieces (big foreign chunks):
            inner = self.nthreads // len(leaves)   # the threads left decode inside them
            leaves = [functools.partial(leaf, nthreads=inner) for leaf in leaves]
        run_leaves(leaves, self.nthreads)
        run_all(calls, self.nthreads)
        return values


def _pieces(arr, key):
    """``(source key, destination key)`` pieces of `key` along the first dimension,
    one per chunk of `arr`'s own storage (the whole key when it has none)."""
    chunks = getattr(arr, "chunks", None)
    step = chunks[0] if valid_chunks(chunks, arr.shape) and chunks[0] > 0 else None
    k0 = key[0]
    if step is None or k0.stop - k0.start <= step:
        yield key, (Ellipsis,)
        return
    start = k0.start
    while start < k0.stop:
        stop = min(k0.stop, (start // step + 1) * step)
        yield ((slice(start, stop),) + tuple(key[1:]),
               (slice(start - k0.start, stop - k0.start), Ellipsis))
        start = stop


def _read_piece(arr, key, dst):
    if hasattr(arr, "read_direct") and hasattr(arr, "id") and dst.flags.c_contiguous:
        arr.read_direct(dst, source_sel=key)              # h5py: no temporary array
    else:
        dst[...] = arr[key]


def region_values(node: Node, out_shape: tuple, region_list, dtype=None, target=None,
                  nthreads: int = 2):
    """Yield ``(region, values)`` for each region of `region_list`, in order.

    The operands of the next region are read on the prefetch thread while the current
    one is evaluated (numexpr and most readers release the GIL), so reading and
    computing overlap.  At most two regions of operands are in memory, in reused
    buffers.  ``target(region)``, when given, returns where the region's values
    should go (a C-contiguous array of the region's shape) or None; values are then
    computed in place.  The values yielded are valid until the next step.
    """
    ops = operands_of(node)
    dtype = node.dtype if dtype is None else np.dtype(dtype)
    reader = _Reader(ops, len(out_shape), nthreads)
    it = iter(region_list)
    region = next(it, None)
    second = next(it, None)
    if second is None:                       # one region: nothing to overlap with
        try:
            if region is not None:
                yield region, _region_result(node, ops, reader(region), region, dtype,
                                             target)
        finally:
            reader.release()
        return
    it = itertools.chain([second], it)
    pending = prefetch(reader, region) if region is not None else None
    try:
        while pending is not None:
            values = pending.result()
            current, region = region, next(it, None)
            pending = prefetch(reader, region) if region is not None else None
            yield current, _region_result(node, ops, values, current, dtype, target)
    finally:
        if pending is not None:          # no read keeps running after the caller left
            pending.exception()
        reader.release()


def _region_result(node, ops, values, current, dtype, target):
    shape = tuple(s.stop - s.start for s in current)
    view = target(current) if target is not None else None
    if view is not None and dtype == node.dtype and view.flags.c_contiguous \
            and view.shape == shape:
        res = run(node, ops, values, out=view)
        if res is not view:
            view[...] = res
        return view
    res = fit(run(node, ops, values), shape, node.dtype, None)
    if any(isinstance(v, np.ndarray) and np.may_share_memory(res, v) for v in values):
        res = res.copy()                     # (a bare operand: its buffer is reused)
    res = res if res.dtype == dtype else res.astype(dtype)
    if view is not None:
        view[...] = res
    return res

