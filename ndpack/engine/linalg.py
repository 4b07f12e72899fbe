"""Linear algebra out of core: blocked ``tensordot``, ``matmul``, ``vecdot``, ``outer``.

The output is produced one tile at a time (a tile is a chunk of the result).  For an
output tile, the contraction runs over steps of the contracted axes: the matching
tiles of both operands are read (NDArrays decode only the blocks they touch, into
reused buffers; any array with ``shape``, ``dtype`` and ``__getitem__`` works: h5py,
zarr, NumPy), multiplied by BLAS, and accumulated.  Memory stays at a few tiles
whatever the operands' sizes; the result is an NDArray (in memory, or on disk with
``urlpath=``; it inherits the first operand's ``cparams`` unless given) or is written
into ``out=``.

How the work is cut (more in docs/linalg.md):

* **Steps keep whole storage blocks.**  A step along a contracted axis is a multiple
  of both operands' blocks (chunks for foreign arrays), so each stored block is
  decoded once per output tile; steps follow the streamed operand's storage order.
* **Operands that fit are read once per output tile.**  An operand whose part for the
  output tile (all contracted elements) fits in :data:`TILE_BYTES` is read whole and
  sliced in memory; only the other one streams.  Two small operands: one BLAS call.
* **No transposing copies.**  Each step is one matrix product of views (``A @ B``,
  either transposed); when the axes do not merge into matrices the leading axis is
  looped over (a sum of smaller products), and only as a last resort does
  ``np.tensordot`` copy.  Products after a tile's first go through one reused
  scratch buffer (``np.matmul(..., out=)``) before being added.
* **Reads in parallel, ahead.**  Both operands' tiles of a step are read at once on
  the engine's evaluation workers (decoding releases the GIL); when two steps fit in a
  third of :data:`LIVE_BYTES`, the next step is read while BLAS multiplies the
  current one.

Examples
--------
>>> import numpy as np, ndpack
>>> a = ndpack.asarray(np.arange(12.0).reshape(3, 4), chunks=(2, 2))
>>> b = ndpack.asarray(np.ones((4, 5)), chunks=(2, 5))
>>> ndpack.matmul(a, b)[:, 0].tolist()
[6.0, 22.0, 38.0]
>>> ndpack.tensordot(a, a, axes=((0, 1), (0, 1)))[()]
array(506.)
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading

import numpy as np

from ndpack.codecs import CParams, get_nthreads
from ndpack.engine import blas, contract, workers
from ndpack.engine.output import new_output
from ndpack.storage.grid import compute_chunks_blocks
from ndpack.storage.ndarray import fill_from

__all__ = ["LIVE_BYTES", "TILE_BYTES", "compute_contract", "matmul", "outer", "result_shape",
           "tensordot", "vecdot"]

TILE_BYTES = 64 * 2**20        # at most this many bytes in one operand read
LIVE_BYTES = 128 * 2**20       # operand tiles held at once (the current and next step)
OUT_CHUNK_BYTES = 16 * 2**20   # the result's chunks: 4-16 MiB
OUT_TILE_BYTES = 64 * 2**20    # computed at once: up to 64 MiB of whole chunks
MIN_STEP = 2048                # contracted elements per step, budget permitting
MIN_SPLIT = 2**22              # multiply-adds of a step worth cutting among the workers
LANE_ACC_BYTES = 16 * 2**20    # extra accumulators of workers running steps side by side
SLAB_BYTES = 2**20             # lanes contract slabs of about this much of an operand


def _shape_dtype(x):
    if not (hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__getitem__")):
        x = np.asarray(x)
    return x, tuple(int(s) for s in x.shape), np.dtype(x.dtype)


def _norm_axes(axes, nd1, nd2):
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(nd1, nd2):
            raise ValueError(f"axes={n} is out of range for arrays of {nd1} and {nd2} dims")
        return list(range(nd1 - n, nd1)), list(range(n))
    try:
        a1, a2 = axes
    except (TypeError, ValueError):
        raise ValueError(f"axes must be an int or a pair of axis sequences, not {axes!r}") \
            from None
    a1 = [a1] if isinstance(a1, (int, np.integer)) else list(a1)
    a2 = [a2] if isinstance(a2, (int, np.integer)) else list(a2)
    if len(a1) != len(a2):
        raise ValueError(f"axes {axes!r}: both sequences need the same length")
    out = []
    for ax, nd in ((a1, nd1), (a2, nd2)):
        norm = []
        for a in ax:
            if not -nd <= a < nd:
                raise ValueError(f"axis {a} is out of range for an array of {nd} dims")
            norm.append(int(a) % nd)
        if len(set(norm)) != len(norm):
            raise ValueError(f"repeated axis in {ax!r}")
        out.append(norm)
    return out[0], out[1]


def _chunks_of(x, shape):
    c = getattr(x, "chunks", None)
    if c is not None and not isinstance(c, str) and len(tuple(c)) == len(shape) and \
            all(isinstance(v, (int, np.integer)) and v > 0 for v in c):
        return tuple(int(v) for v in c)
    return tuple(shape)


def _steps(n: int, c: int) -> list:
    return [slice(s, min(s + c, n)) for s in range(0, n, c)]


def _grain_of(x, shape) -> tuple:
    """The unit of decoding along each axis: an NDArray's blocks, a foreign array's
    chunks, 1 for in-memory arrays (any cut is free)."""
    for attr in ("blocks", "chunks"):
        g = getattr(x, attr, None)
        if g is not None and not isinstance(g, str) and len(tuple(g)) == len(shape) and \
                all(isinstance(v, (int, np.integer)) and v > 0 for v in g):
            return tuple(max(1, min(int(v), n)) for v, n in zip(g, shape))
    return (1,) * len(shape)


class _Operand:
    """One operand of a product: its layout, and reads of its tiles.

    NDArrays are read into buffers of the engine's pool (fresh multi-MB buffers cost
    page faults on every step).  A tile made of whole rows of storage blocks along the
    first axis, spanning the other axes, of chunks that span them too (no padding,
    blocks stored in C order), lies in its chunks' stored order: it is decoded there
    straight into the tile, block range by block range, on the calling thread (one C
    thread: the workers are the parallelism), and a chunk's compressed bytes read for
    one tile serve the next ones of the same chunk (`keep`).  Any other tile is read
    with ``read_into``; other arrays with ``[key]``.
    """

    def __init__(self, x, shape, dtype, slot: int = 0):
        self.x, self.shape, self.dtype, self.slot = x, shape, dtype, slot
        self.chunks = _chunks_of(x, shape)
        self.grain = _grain_of(x, shape)
        self.direct = bool(shape) and callable(getattr(x, "read_into", None))
        self.token = object()                    # identifies this operand's cached chunk
        self.flat = self._flat()
        # room for a compressed chunk: its data, headers and block starts
        self.cbytes = math.prod(self.chunks) * dtype.itemsize * 9 // 8 + 2**16

    def _flat(self):
        """``(rows of a block row, blocks in a block row)`` when chunks can be decoded by
        block rows straight into tiles (see the class docstring), else None."""
        x, chunks, shape = self.x, self.chunks, self.shape
        blocks = getattr(x, "blocks", None)
        if not self.direct or not all(callable(getattr(x, m, None)) for m in (
                "read_chunk", "decode_stored")) or not getattr(x, "stored_c_order", False) \
                or blocks is None or len(tuple(blocks)) != len(shape):
            return None
        blocks = tuple(int(v) for v in blocks)
        if min(blocks) <= 0 or any(c != n or c % b
                                   for c, n, b in zip(chunks[1:], shape[1:], blocks[1:])):
            return None
        return blocks[0], math.prod(c // b for c, b in zip(chunks[1:], blocks[1:]))

    def runs(self, key):
        """``[(chunk number, blocks, first row, end row)]``: the block ranges of the
        chunks that make up tile `key` and the rows of the tile they fill, when the
        tile is made of whole block rows (see the class docstring), else None."""
        if self.flat is None or any(k.start or k.stop != n
                                    for k, n in zip(key[1:], self.shape[1:])):
            return None
        b0, per_row = self.flat
        c0, start, stop = self.chunks[0], key[0].start, key[0].stop
        out, r = [], start
        while r < stop:
            n = r // c0
            lo, hi = r - n * c0, min(stop, (n + 1) * c0) - n * c0
            if lo % b0 or hi % b0:               # a cut block row (or padding after it)
                return None
            out.append((n, range(lo // b0 * per_row, hi // b0 * per_row), r - start,
                        r - start + hi - lo))
            r += hi - lo
        return out

    def _compressed(self, n: int):
        """Chunk `n`'s compressed bytes: read into this thread's buffer for the slot,
        unless the last read there was this operand's chunk `n`."""
        held = _LOCAL.__dict__.setdefault("held", {})
        entry = held.get(self.slot)
        if entry is not None and entry[0] is self.token and entry[1] == n:
            return entry[2]
        held.pop(self.slot, None)
        view = self.x.read_chunk(n, _chunk_buffer(self.cbytes, self.slot))
        held[self.slot] = (self.token, n, view)
        return view

    def forget(self) -> None:
        """Drop this thread's hold on a chunk read for this operand (a view of an
        in-memory array's bytes must not outlive the product)."""
        held = getattr(_LOCAL, "held", {})
        entry = held.get(self.slot)
        if entry is not None and entry[0] is self.token:
            del held[self.slot]

    def read(self, key, keep: bool = False) -> tuple:
        """``(tile, buffer)``: the C-ordered values of ``x[key]`` (a tuple of step-1
        slices) and the pool buffer holding them (None when not pooled).  With `keep`,
        the last chunk read stays held for the next call on this thread (call
        :meth:`forget` after the last)."""
        if not self.shape:
            return np.asarray(self.x[()]), None
        if not self.direct:
            return np.asarray(self.x[key]), None
        shape = tuple(k.stop - k.start for k in key)
        nbytes = math.prod(shape) * self.dtype.itemsize
        buf = workers.buffers.take(nbytes)
        tile = buf[:nbytes].view(self.dtype).reshape(shape)
        try:
            runs = self.runs(key) if tile.size else None
            if runs is None:
                self.x.read_into(key, tile)
                return tile, buf
            for n, blocks, r0, r1 in runs:
                dst = tile[r0:r1].reshape(-1)
                got = self.x.decode_stored(self._compressed(n), out=dst, blocks=blocks,
                                           nthreads=1)
                if got.ndim == 0:                # a special chunk: its value, not decoded
                    dst[...] = got
        except BaseException:
            workers.buffers.give(buf)
            raise
        finally:
            if not keep:
                self.forget()
        return tile, buf


_LOCAL = threading.local()


def _chunk_buffer(nbytes: int, slot: int) -> np.ndarray:
    """This thread's reused buffer `slot` for compressed chunks read from files, of at
    least `nbytes` (fresh pages cost page faults; pages are touched only as far as
    chunks fill them).  A chunk that does not fit is read into new bytes instead."""
    bufs = _LOCAL.__dict__.setdefault("chunk", {})
    buf = bufs.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = bufs[slot] = np.empty(nbytes, np.uint8)
    return buf


def _release(bufs) -> None:
    for b in bufs:
        if b is not None:
            workers.buffers.give(b)


# ---------------------------------------------------------------------------------------
# planning: contracted steps


def _fit(sizes, grain, chunk, order, per: int, limit: int, keep: bool):
    """Steps along the contracted axes so that ``prod(steps) * per <= limit``: the axes
    in `order` (outermost in storage first) are cut, to multiples of the chunks when
    possible, else of the grain (`keep`: never below it, else down to 1).  None when
    that does not fit."""
    steps = list(sizes)
    for p in order:
        rest = per * math.prod(s for q, s in enumerate(steps) if q != p)
        allowed = limit // rest if rest else steps[p]
        if allowed >= steps[p]:
            break
        low = grain[p] if keep else 1
        if allowed < low:
            steps[p] = low
            continue
        # whole chunks decode straight into the tile: blocks of a cut chunk are decoded
        # aside and copied
        unit = chunk[p] if allowed >= chunk[p] else grain[p] if allowed >= grain[p] else 1
        steps[p] = allowed - allowed % unit
        break
    return steps if math.prod(steps) * per <= limit else None


def _plan(op1, op2, ax1, ax2, n1: int, n2: int) -> dict:
    """How an output tile of ``n1 x n2`` elements (parts of operand 1 and 2) is computed:
    ``steps`` (per contracted axis), which operands are read whole (all contracted
    elements, once per tile), and whether the next step is prefetched."""
    sizes = [op1.shape[a] for a in ax1]
    ktot = math.prod(sizes)
    i1, i2 = op1.dtype.itemsize, op2.dtype.itemsize
    whole1 = n1 * ktot * i1 <= TILE_BYTES
    whole2 = n2 * ktot * i2 <= TILE_BYTES
    fixed = whole1 * n1 * ktot * i1 + whole2 * n2 * ktot * i2
    per = (not whole1) * n1 * i1 + (not whole2) * n2 * i2
    plan = {"steps": sizes, "whole": (whole1, whole2), "ahead": False}
    if not per or not sizes:
        return plan
    # the streamed operands' blocks and chunks (a whole operand is cut in memory)
    streamed = [(op, ax) for op, ax, w in ((op1, ax1, whole1), (op2, ax2, whole2)) if not w]
    grain = [min(n, math.lcm(*[op.grain[ax[p]] for op, ax in streamed]))
             for p, n in enumerate(sizes)]
    chunk = [min(n, math.lcm(g, *[op.chunks[ax[p]] for op, ax in streamed]))
             for p, (n, g) in enumerate(zip(sizes, grain))]
    # cut the streamed operand's outermost axes first (each stored block whole)
    storage = ax2 if whole1 else ax1
    order = sorted(range(len(sizes)), key=lambda p: storage[p])
    tile = TILE_BYTES // max((not whole1) * i1 * n1, (not whole2) * i2 * n2) * per
    room = max(LIVE_BYTES - fixed, per)
    low = min(tile, MIN_STEP * per)           # smaller steps: many small products and adds
    # read ahead: two steps in two thirds of the room (the rest: compressed chunks and
    # decoding buffers in flight); else one step at a time; else cut the blocks
    for limit, keep, ahead in ((room // 3, True, True), (room, True, False),
                               (room // 3, False, True)):
        if keep and ahead and limit < low:
            continue                              # two steps would be too small
        limit = max(min(tile, limit), low if keep else 0, per)
        steps = _fit(sizes, grain, chunk, order, per, limit, keep)
        if steps is not None:
            n = math.prod(-(-s // k) for s, k in zip(sizes, steps))
            plan.update(steps=steps, ahead=ahead and n > 1, order=order)
            return plan
    plan.update(steps=[1] * len(sizes), ahead=True, order=order)
    return plan


def tensordot(x1, x2, axes=2, chunks=None, blocks=None, out=None, **storage):
    """``np.tensordot(x1, x2, axes)`` computed tile by tile (see the module docstring).

    Parameters
    ----------
    x1, x2 : array-like
        NDArray, NumPy, h5py, zarr, ... (``shape``, ``dtype``, ``__getitem__``).
    axes : int or (sequence, sequence)
        As in NumPy.
    chunks, blocks, **storage
        Storage of the resulting NDArray (``urlpath=``, ``cparams=``, ...); the
        cparams default to those of the first NDArray operand of the result's dtype.
    out : array-like, optional
        Write the result there instead (NumPy, NDArray, h5py, zarr: ``__setitem__``).

    Returns
    -------
    NDArray, or `out`.

    Examples
    --------
    >>> import numpy as np, ndpack
    >>> x = np.arange(60.0).reshape(3, 4, 5)
    >>> a = ndpack.asarray(x, chunks=(2, 2, 5), blocks=(1, 2, 5))
    >>> r = ndpack.tensordot(a, a, axes=((2, 0), (2, 0)))
    >>> bool(np.allclose(r[()], np.tensordot(x, x, axes=((2, 0), (2, 0)))))
    True
    """
    x1, s1, d1 = _shape_dtype(x1)
    x2, s2, d2 = _shape_dtype(x2)
    ax1, ax2 = _norm_axes(axes, len(s1), len(s2))
    for a, b in zip(ax1, ax2):
        if s1[a] != s2[b]:
            raise ValueError(f"shape mismatch for sum: axis {a} of x1 has {s1[a]}, axis {b} "
                             f"of x2 has {s2[b]}")
    free1 = [d for d in range(len(s1)) if d not in ax1]
    free2 = [d for d in range(len(s2)) if d not in ax2]
    out_shape = tuple(s1[d] for d in free1) + tuple(s2[d] for d in free2)
    dtype = np.tensordot(np.ones((1,) * len(s1), d1), np.ones((1,) * len(s2), d2),
                         axes=(ax1, ax2)).dtype
    op1, op2 = _Operand(x1, s1, d1, 0), _Operand(x2, s2, d2, 1)
    out_chunks = _out_chunks(out_shape, free1, free2, op1.chunks, op2.chunks, dtype, chunks)
    tile_shape = _tile_shape(out_shape, out_chunks, dtype)
    n1 = math.prod(tile_shape[:len(free1)])
    n2 = math.prod(tile_shape[len(free1):])
    plan = _plan(op1, op2, ax1, ax2, n1, n2)
    if out is None and "cparams" not in storage:
        storage["cparams"] = _inherited_cparams((x1, x2), dtype)
    nthreads = get_nthreads()
    tiler = _Tiler(op1, op2, ax1, ax2, free1, free2, dtype, plan, nthreads)
    split = nthreads > 1 and not workers.on_engine_thread()
    with blas.one_thread() if split else contextlib.nullcontext(False) as held:
        if held:                                 # BLAS at one thread: the workers multiply
            tiler.use_workers(nthreads, n1, n2)
        if out is not None:
            return _emit(out_shape, dtype, tiler, tile_shape, blocks, out, storage)
        return _emit(out_shape, dtype, _TileCache(tiler, out_shape, tile_shape), out_chunks,
                     blocks, out, storage)


def _tile_shape(shape, chunks, dtype) -> tuple:
    """What is computed at once: several of the result's chunks along the first axis
    (up to :data:`OUT_TILE_BYTES`) when a chunk spans the other axes whole (so that the
    chunks, written in C order, come one tile after another), else one chunk."""
    if not shape or tuple(chunks[1:]) != tuple(shape[1:]):
        return tuple(chunks)
    nbytes = math.prod(chunks) * dtype.itemsize
    m = max(1, OUT_TILE_BYTES // max(1, nbytes))
    return (min(shape[0], chunks[0] * m),) + tuple(shape[1:])


class _TileCache:
    """``producer(region)`` for a chunk region, answered from the output tile holding it
    (computed once, when its first chunk is asked for)."""

    def __init__(self, tiler, shape, tile):
        self.tiler, self.shape, self.tile = tiler, shape, tile
        self.start, self.values = None, None

    def __call__(self, region) -> np.ndarray:
        if not region or tuple(self.tile) == tuple(r.stop - r.start for r in region):
            self.start = None
            return self.tiler(region)
        t0 = region[0].start - region[0].start % self.tile[0]
        stop = min(t0 + self.tile[0], self.shape[0])
        if region[0].stop > stop or any(r.start or r.stop != n
                                        for r, n in zip(region[1:], self.shape[1:])):
            self.start = None                    # not inside one tile: computed alone
            return self.tiler(region)
        if self.start != t0:
            big = (slice(t0, stop),) + tuple(slice(0, n) for n in self.shape[1:])
            self.values, self.start = self.tiler(big), t0
        return self.values[region[0].start - t0:region[0].stop - t0]


def _inherited_cparams(operands, dtype):
    """The cparams of the first NDArray operand of `dtype` (None: the defaults)."""
    for x in operands:
        cp = getattr(x, "cparams", None)
        if isinstance(cp, CParams) and getattr(x, "dtype", None) == dtype:
            return cp
    return None


class _Tiler:
    """``tile(region)``: the values of one output tile (valid until the next call).

    Reads run on `nthreads` evaluation workers.  With BLAS held at one thread
    (:meth:`use_workers`, by :func:`tensordot`) the workers also multiply, in one of two
    ways:

    * **lanes** (when the tile is small and two steps fit in memory): the steps are
      dealt to the workers in turn; each reads its step and adds its products into
      its own accumulator (the first worker's is the tile), summed at the end.  No
      worker waits for another between steps: one decodes while the other multiplies.
    * **parts**: each step's products are cut into one part per worker (rows of the
      output), the steps one after another (the next read while they multiply).

    Otherwise (:attr:`nparts` 1) each step's products are one call on the calling
    thread (BLAS's own threads)."""

    def __init__(self, op1, op2, ax1, ax2, free1, free2, dtype, plan, nthreads=2):
        self.ops, self.ax, self.free = (op1, op2), (ax1, ax2), (free1, free2)
        self.dtype, self.plan, self.acc = dtype, plan, None
        self.nthreads, self.nparts, self.lanes = max(2, nthreads), 1, 1
        self.scratch = [{} for _ in range(self.nthreads)]
        self.lane_accs: list = []
        sizes = [op1.shape[a] for a in ax1]
        order = plan.get("order", range(len(sizes)))
        per_axis = [_steps(n, max(1, k)) for n, k in zip(sizes, plan["steps"])]
        # the steps in the streamed operand's storage order (outermost axis slowest)
        self.kblocks = []
        for combo in itertools.product(*[per_axis[p] for p in order]):
            kb = [None] * len(sizes)
            for p, s in zip(order, combo):
                kb[p] = s
            self.kblocks.append(tuple(kb))

    def _key(self, side: int, region, kb) -> tuple:
        op, ax, free = self.ops[side], self.ax[side], self.free[side]
        part = region[:len(self.free[0])] if side == 0 else region[len(self.free[0]):]
        key = [None] * len(op.shape)
        for d, r in zip(free, part):
            key[d] = r
        for a, k in zip(ax, kb):
            key[a] = k
        return tuple(key)

    def use_workers(self, n: int, n1: int, n2: int) -> None:
        """BLAS is held at one thread: multiply on the `n` workers, in lanes when the
        extra accumulators (``n - 1`` tiles of ``n1 x n2`` elements) stay within
        :data:`LANE_ACC_BYTES` and two steps fit in memory (the plan reads ahead), else
        in parts.  Lanes over operands decoded by block rows (:meth:`_Operand.runs`)
        contract slabs of about :data:`SLAB_BYTES` (still in the cache from decoding)."""
        self.nparts = n
        if self.plan["ahead"] and len(self.kblocks) >= 2 and \
                (n - 1) * n1 * n2 * self.dtype.itemsize <= LANE_ACC_BYTES:
            self.lanes = n
            self.kblocks = self._slabs(n1, n2)

    def _slabs(self, n1: int, n2: int) -> list:
        """The steps cut into slabs along the first axis of both operands (when it is a
        pair of contracted axes and both decode by block rows), at chunk boundaries and
        every ``rows`` (whole block rows of both, about :data:`SLAB_BYTES` of either)."""
        ops = self.ops
        pairs = [q for q, (a1, a2) in enumerate(zip(*self.ax)) if a1 == 0 and a2 == 0]
        if not pairs or any(op.flat is None for op in ops) or any(self.plan["whole"]):
            return self.kblocks
        p = pairs[0]
        unit = math.lcm(ops[0].flat[0], ops[1].flat[0])
        out = []
        for kb in self.kblocks:
            other = math.prod(k.stop - k.start for q, k in enumerate(kb) if q != p)
            row = max(n1 * ops[0].dtype.itemsize, n2 * ops[1].dtype.itemsize) * other
            rows = max(unit, SLAB_BYTES // max(1, row) // unit * unit)
            cuts = {kb[p].start, kb[p].stop}
            cuts.update(range(kb[p].start - kb[p].start % rows + rows, kb[p].stop, rows))
            for op in ops:
                c = op.chunks[0]
                cuts.update(range(kb[p].start - kb[p].start % c + c, kb[p].stop, c))
            cuts = sorted(cuts)
            out += [kb[:p] + (slice(lo, hi),) + kb[p + 1:] for lo, hi in zip(cuts, cuts[1:])]
        return out

    def _start(self, region, kb, pool) -> list:
        """Start step `kb`: per operand, the future of its read (both operands are read
        at once, on the evaluation workers), or for an operand read whole the index of
        the step in its whole tile (a tuple)."""
        parts = []
        for side in (0, 1):
            if self.plan["whole"][side]:
                idx = [slice(None)] * len(self.ops[side].shape)
                for a, k in zip(self.ax[side], kb):
                    idx[a] = k
                parts.append(tuple(idx))
            else:
                parts.append(workers.submit(pool, self.ops[side].read,
                                            self._key(side, region, kb)))
        return parts

    @staticmethod
    def _finish(parts, wholes) -> tuple:
        """The tiles of a started step, and the pool buffers to give back after it."""
        tiles, bufs = [], []
        try:
            for side, p in enumerate(parts):
                if isinstance(p, tuple):
                    tiles.append(wholes[side][p])
                else:
                    t, b = p.result()
                    tiles.append(t)
                    bufs.append(b)
        except BaseException:
            _release(bufs)
            _abandon(parts)
            raise
        return tiles, bufs

    def __call__(self, region) -> np.ndarray:
        shape = tuple(r.stop - r.start for r in region)
        if self.acc is None or self.acc.shape != shape:
            self.acc = None
            self.acc = np.empty(shape, self.dtype)
        acc = self.acc
        pool = workers.workers(self.nthreads)
        full = tuple(slice(0, self.ops[0].shape[a]) for a in self.ax[0])
        started = [workers.submit(pool, self.ops[side].read, self._key(side, region, full))
                   if self.plan["whole"][side] else None for side in (0, 1)]
        # the streamed operand's first step is read alongside the whole ones
        nxt = self._start(region, self.kblocks[0], pool) \
            if self.kblocks and acc.size and self.lanes == 1 else None
        try:
            got, whole_bufs = self._finish([p for p in started if p is not None], (None, None))
        except BaseException:
            if nxt is not None:
                _abandon(nxt)
            raise
        it = iter(got)
        wholes = [next(it) if p is not None else None for p in started]
        try:
            if self.lanes > 1 and acc.size:
                self._run_lanes(acc, region, wholes, pool)
            else:
                self._run(acc, region, wholes, pool, nxt)
        finally:
            _release(whole_bufs)
        return acc

    def _lane(self, w: int, acc, region, deal, wholes, scratch) -> int:
        """Lane `w`: the steps `deal` gives it, read here one after another and added
        into `acc` (the first written); returns how many."""
        done = 0
        try:
            while (i := deal.next(w)) is not None:
                kb, tiles, bufs = self.kblocks[i], [], []
                try:
                    for side in (0, 1):
                        if wholes[side] is not None:
                            idx = [slice(None)] * len(self.ops[side].shape)
                            for a, k in zip(self.ax[side], kb):
                                idx[a] = k
                            tiles.append(wholes[side][tuple(idx)])
                        else:
                            t, b = self.ops[side].read(self._key(side, region, kb), keep=True)
                            tiles.append(t)
                            bufs.append(b)
                    contract.contract_into(acc, tiles[0], tiles[1], self.ax[0], self.ax[1],
                                           done == 0, scratch)
                    done += 1
                finally:
                    _release(bufs)
        finally:
            for op in self.ops:
                op.forget()
        return done

    def _run_lanes(self, acc, region, wholes, pool) -> None:
        n = min(self.lanes, len(self.kblocks))
        while len(self.lane_accs) < n - 1 or any(
                a.shape != acc.shape for a in self.lane_accs[:n - 1]):
            self.lane_accs = [np.empty(acc.shape, self.dtype) for _ in range(n - 1)]
        accs = [acc] + self.lane_accs[:n - 1]
        deal = _Deal(n, len(self.kblocks))
        jobs = [workers.submit(pool, self._lane, w, accs[w], region, deal, wholes,
                               self.scratch[w]) for w in range(n)]
        for j in jobs:                           # no lane left on buffers given back
            j.exception()
        _raise_first(jobs)
        done = [j.result() for j in jobs]
        if not done[0]:                          # (lanes that got no step wrote nothing)
            acc[...] = 0
        for extra, k in zip(accs[1:], done[1:]):
            if k:
                acc += extra

    def _multiply(self, acc, tiles, first: bool, pool) -> list:
        """Write or add the products of one step into `acc`: cut into :attr:`nparts`
        parts on the workers (their futures are returned) when the step is big
        enough, else one call here (nothing returned)."""
        ts = contract.terms(acc, tiles[0], tiles[1], self.ax[0], self.ax[1], first)
        n = self.nparts
        if n > 1 and contract.splittable(ts) and contract.flops(ts) >= MIN_SPLIT:
            return [workers.submit(pool, contract.run, ts, p, n, self.scratch[p])
                    for p in range(n)]
        contract.run(ts, 0, 1, self.scratch[0])
        return []

    def _run(self, acc, region, wholes, pool, nxt) -> None:
        kbs = self.kblocks
        if not kbs or not acc.size:
            acc[...] = 0
            return
        ahead = self.plan["ahead"]
        try:
            for i in range(len(kbs)):
                tiles, bufs = self._finish(nxt, wholes)
                nxt, jobs = None, []
                try:
                    jobs = self._multiply(acc, tiles, i == 0, pool)
                    if ahead and i + 1 < len(kbs):   # read the next step meanwhile
                        nxt = self._start(region, kbs[i + 1], pool)
                finally:
                    for j in jobs:                   # no product left on given-back tiles
                        j.exception()
                    _release(bufs)
                _raise_first(jobs)
                if not ahead and i + 1 < len(kbs):
                    nxt = self._start(region, kbs[i + 1], pool)
        finally:
            if nxt is not None:                  # an error: let the pending reads finish
                _abandon(nxt)


class _Deal:
    """Steps ``0 .. total - 1`` shared by `n` lanes: each lane takes the steps of its own
    run (a contiguous share, in order: chunks are read once); a lane done with its run
    takes the last step of the longest run left (lanes finish together)."""

    def __init__(self, n: int, total: int):
        self.lock = threading.Lock()
        self.runs = [[w * total // n, (w + 1) * total // n] for w in range(n)]

    def next(self, w: int):
        """The next step for lane `w`, or None when none is left."""
        with self.lock:
            run = self.runs[w]
            if run[0] >= run[1]:
                run = max(self.runs, key=lambda r: r[1] - r[0])
                if run[0] >= run[1]:
                    return None
                run[1] -= 1
                return run[1]
            run[0] += 1
            return run[0] - 1


def _raise_first(jobs) -> None:
    """Raise the error of the first failed job (all are finished)."""
    for j in jobs:
        if j.exception() is not None:
            raise j.exception()


def _abandon(parts) -> None:
    """Wait for the reads of a step that will not be used and give their buffers back."""
    for p in parts:                              # a failed read was already reported
        if not isinstance(p, tuple) and p.exception() is None:
            _release([p.result()[1]])


def _out_chunks(out_shape, free1, free2, c1, c2, dtype, chunks):
    """The result's chunks: the operands' chunks along the kept axes, unless given."""
    if chunks is not None:
        return tuple(chunks)
    if not out_shape:
        return ()
    tiles = [min(c, n) for c, n in zip([c1[d] for d in free1] + [c2[d] for d in free2],
                                       out_shape)]
    # chunks of about 4-16 MiB
    while math.prod(tiles) * dtype.itemsize > OUT_CHUNK_BYTES and max(tiles) > 1:
        k = tiles.index(max(tiles))
        tiles[k] = -(-tiles[k] // 2)
    while math.prod(tiles) * dtype.itemsize * 4 <= OUT_CHUNK_BYTES and \
            any(t < n for t, n in zip(tiles, out_shape)):
        k = min((t / n, i) for i, (t, n) in enumerate(zip(tiles, out_shape)) if t < n)[1]
        tiles[k] = min(out_shape[k], tiles[k] * 2)
    return tuple(max(1, min(t, n)) for t, n in zip(tiles, out_shape))


def _emit(shape, dtype, tile, chunks, blocks, out, storage):
    if out is not None:
        if tuple(out.shape) != shape:
            raise ValueError(f"out has shape {tuple(out.shape)}, the result {shape}")
        for region in _regions(shape, chunks or shape):
            out[region] = tile(region)
        return out
    if chunks is not None and not shape:
        chunks = None
    chunks, blocks = compute_chunks_blocks(shape, chunks, blocks, dtype=dtype)
    urlpath, mode = storage.pop("urlpath", None), storage.pop("mode", "w")
    return new_output(shape, dtype, urlpath, mode, lambda res: fill_from(res, tile),
                      chunks=chunks, blocks=blocks, **storage)


def _regions(shape, chunks):
    if not shape:
        yield ()
        return
    for starts in itertools.product(*[range(0, n, c) for n, c in zip(shape, chunks)]):
        yield tuple(slice(s, min(s + c, n)) for s, c, n in zip(starts, chunks, shape))


def matmul(x1, x2, chunks=None, blocks=None, out=None, **storage):
    """``np.matmul(x1, x2)``: 2-D products and stacks of them (batch dimensions
    broadcast), tile by tile; 1-D operands as in NumPy."""
    x1, s1, d1 = _shape_dtype(x1)
    x2, s2, d2 = _shape_dtype(x2)
    result_shape("matmul", s1, s2, {})          # checks, with matmul's messages
    if len(s1) <= 2 and len(s2) <= 2:
        return tensordot(x1, x2, axes=([len(s1) - 1], [0]), chunks=chunks, blocks=blocks,
                         out=out, **storage)
    if s1[-1] != s2[-2 if len(s2) > 1 else 0]:
        raise ValueError(f"matmul: x1 has {s1[-1]} columns, x2 {s2[-2]} rows")
    v1, v2 = len(s1) == 1, len(s2) == 1
    b1, b2 = (s1[:-2] if not v1 else ()), (s2[:-2] if not v2 else ())
    try:
        batch = tuple(np.broadcast_shapes(b1, b2))
    except ValueError:
        raise ValueError(f"matmul: batch dimensions {b1} and {b2} do not broadcast") from None
    m = () if v1 else (s1[-2],)
    n = () if v2 else (s2[-1],)
    shape = batch + m + n
    dtype = np.matmul(np.ones((1,) * len(s1), d1), np.ones((1,) * len(s2), d2)).dtype
    c1, c2 = _chunks_of(x1, s1), _chunks_of(x2, s2)
    chunks = chunks or tuple([1] * len(batch) + [min(c1[-2], s1[-2])] * len(m) +
                             [min(c2[-1], s2[-1])] * len(n))
    # one batch element of the tile per step: rows x k and k x columns under TILE_BYTES
    per = max(d1.itemsize, d2.itemsize) * max(chunks[len(batch)] if m else 1, chunks[-1]
                                              if n else 1)
    kc = math.lcm(c1[-1], c2[-2] if not v2 else c2[0])
    ks = max(1, _fit([s1[-1]], [1], [max(1, min(kc, s1[-1]))], [0], per, max(TILE_BYTES, per),
                     False)[0])

    def tile(region):
        rb, rm, rn = region[:len(batch)], region[len(batch):len(batch) + len(m)], \
            region[len(batch) + len(m):]
        acc = np.empty(tuple(r.stop - r.start for r in region), dtype)
        for i, k in enumerate(_steps(s1[-1], ks)):
            key1 = _batch_key(rb, b1, batch) + tuple(rm) + (k,)
            key2 = _batch_key(rb, b2, batch) + ((k,) + tuple(rn) if not v2 else (k,))
            part = np.matmul(np.asarray(x1[key1]), np.asarray(x2[key2]))
            if i:
                acc += part
            else:
                acc[...] = part
        if not s1[-1]:
            acc[...] = 0
        return acc

    return _emit(shape, dtype, tile, chunks, blocks, out, storage)


def _batch_key(rb, own, batch):
    """The key of an operand's batch dimensions for output batch region `rb`."""
    lead = len(batch) - len(own)
    return tuple(slice(0, 1) if own[i] == 1 else rb[lead + i] for i in range(len(own)))


def vecdot(x1, x2, axis=-1, **storage):
    """``sum(conj(x1) * x2, axis=axis)`` (array API), streamed: returns NumPy."""
    from ndpack.engine.lazyexpr import LazyExpr, _node
    from ndpack.engine.reductions import sum as nd_sum
    from ndpack.engine.tree import Apply
    e = LazyExpr(Apply("multiply", (Apply("conj", (_node(x1),)), _node(x2))))
    return nd_sum(e, axis=axis)


def outer(x1, x2, **storage):
    """The outer product of two vectors (flattened as in NumPy), chunk by chunk."""
    x1, s1, _ = _shape_dtype(x1)
    x2, s2, _ = _shape_dtype(x2)
    if len(s1) != 1 or len(s2) != 1:
        raise ValueError("outer: takes 1-D arrays (use tensordot(x1, x2, axes=0) for more)")
    return tensordot(x1, x2, axes=0, **storage)


def result_shape(op: str, s1: tuple, s2: tuple, kwargs: dict) -> tuple:
    """Shape of ``op(x1, x2, **kwargs)`` for operands of shapes `s1`, `s2` (checks
    that they fit, with NumPy's messages)."""
    s1, s2 = tuple(s1), tuple(s2)
    if op == "tensordot":
        ax1, ax2 = _norm_axes(kwargs.get("axes", 2), len(s1), len(s2))
        for a, b in zip(ax1, ax2):
            if s1[a] != s2[b]:
                raise ValueError(f"tensordot: axis {a} of the first array has {s1[a]}, "
                                 f"axis {b} of the second {s2[b]}")
        return tuple(n for d, n in enumerate(s1) if d not in ax1) + \
            tuple(n for d, n in enumerate(s2) if d not in ax2)
    if op == "outer":
        if len(s1) != 1 or len(s2) != 1:
            raise ValueError("outer: takes 1-D arrays")
        return s1 + s2
    if op == "vecdot":
        try:
            full = tuple(np.broadcast_shapes(s1, s2))
        except ValueError:
            raise ValueError(f"vecdot: shapes {s1} and {s2} do not broadcast") from None
        axis = kwargs.get("axis", -1)
        if not full or not -len(full) <= axis < len(full):
            raise ValueError(f"vecdot: axis {axis} out of range for shape {full}")
        axis %= len(full)
        if s1[axis - len(full)] != s2[axis - len(full)]:
            raise ValueError(f"vecdot: the arrays differ along axis {axis}")
        return full[:axis] + full[axis + 1:]
    if op == "matmul":
        if not s1 or not s2:
            raise ValueError("matmul: operands must have at least one dimension")
        k2 = s2[-2] if len(s2) > 1 else s2[0]
        if s1[-1] != k2:
            raise ValueError(f"matmul: the first array has {s1[-1]} columns, the second "
                             f"{k2} rows")
        b1 = s1[:-2] if len(s1) > 1 else ()
        b2 = s2[:-2] if len(s2) > 1 else ()
        try:
            batch = tuple(np.broadcast_shapes(b1, b2))
        except ValueError:
            raise ValueError(f"matmul: batch dimensions {b1} and {b2} do not broadcast") \
                from None
        return batch + ((s1[-2],) if len(s1) > 1 else ()) + ((s2[-1],) if len(s2) > 1 else ())
    raise ValueError(f"unknown product {op!r}")


def compute_contract(node, operand):
    """Compute a Contract node; `operand(child)` turns a child node into an
    array-like (an operand's array, or a lazy expression)."""
    x1, x2 = (operand(a) for a in node.args)
    fn = {"matmul": matmul, "tensordot": tensordot, "vecdot": vecdot, "outer": outer}[node.op]
    return fn(x1, x2, **node.kwargs)
