"""One output tile of a blocked product: operand reads, steps, matrix products.

**The kernel.**  A step multiplies two in-memory tiles ``t1``, ``t2`` over paired axes
and writes or adds the result into a tile ``acc`` of the output.  :func:`terms` turns
that into a list of 2-D matrix products of *views* (no transposing copies):

* when the axes merge into matrices, one product ``A @ B`` (either side transposed
  as BLAS allows);
* otherwise the leading axis of one operand is looped over: a sum of smaller
  products into the same target, or products into slices of the target;
* as a last resort (axes too mixed for views) one ``np.tensordot``, which copies.

Each product is one accumulating BLAS call (``beta = 1``, :func:`blas.gemm`) when
NumPy's OpenBLAS is found; otherwise -- and for dtypes BLAS does not take -- products
after a target's first go through a reused scratch buffer (``np.matmul(..., out=)``)
of at most :data:`SCRATCH_BYTES` and are added.

**Who multiplies.**  With BLAS held at one thread (:func:`blas.one_thread`) the
engine's workers run the products, one level of parallelism (OpenBLAS's own threads
spin for a while after every call and take a core from the decoders in between):

* *lanes*: each worker reads its own run of steps and adds them into its own
  accumulator (summed at the end), so one decodes while the other multiplies and no
  one waits between steps (:class:`Deal` rebalances the runs' ends).  Used when the
  tile is small (:data:`LANE_ACC_BYTES`) and two steps fit in memory; operands that
  decode by block rows then go by slabs of :data:`SLAB_BYTES`, still in the cache
  when multiplied.
* *parts*: each step's products are cut into one slice of the output per worker
  (:func:`run`: rows, unless they are too few), the steps one after another.

Without the library, each step is one call on the calling thread (BLAS's threads).

**Reads.**  :class:`Operand` reads tiles into the engine's reused buffers; tiles made
of whole block rows of chunks decode straight into place (one C thread when the
workers multiply).

Examples
--------
>>> import numpy as np
>>> x, y = np.arange(24.0).reshape(2, 3, 4), np.arange(24.0).reshape(4, 2, 3)
>>> acc = np.empty((3, 3))
>>> ts = terms(acc, x, y, [0, 2], [1, 0], True)
>>> for p in range(2):                      # two parts, as two workers would run them
...     run(ts, p, 2, {})
>>> bool(np.allclose(acc, np.tensordot(x, y, ([0, 2], [1, 0]))))
True
"""

from __future__ import annotations

import itertools
import math
import threading

import numpy as np

from ndpack.engine.ops import blas
from ndpack.engine.run import workers
from ndpack.engine.run.foreign import reader
from ndpack.resources import scratch

__all__ = ["Deal", "LANE_ACC_BYTES", "MIN_SPLIT", "Operand", "SCRATCH_BYTES", "SLAB_BYTES",
           "Tiler", "chunks_of", "contract_into", "flops", "grain_of", "run", "splittable",
           "steps_of", "terms"]

MIN_SPLIT = 2**22              # multiply-adds of a step worth cutting among the workers
LANE_ACC_BYTES = 16 * 2**20    # extra accumulators of workers running steps side by side
SLAB_BYTES = 2**20             # lanes contract slabs of about this much of an operand
SCRATCH_BYTES = 8 * 2**20      # products added to a target go through this much scratch
ROWS_PER_PART = 64             # products are cut by rows when each part gets this many


def _mergeable(t: np.ndarray, axes) -> bool:
    """Whether the axes `axes` of `t` (outermost first) merge into one without a copy:
    each stride is the next one times that axis's length (length-1 axes aside)."""
    prev = None
    for a in axes:
        if t.shape[a] == 1:
            continue
        if prev is not None and t.strides[prev] != t.strides[a] * t.shape[a]:
            return False
        prev = a
    return True


def _matrix(t: np.ndarray, rows, cols):
    """`t` as a 2-D view (the axes `rows` merged, by the axes `cols` merged), or None
    when that needs a copy."""
    rows, cols = list(rows), list(cols)
    if t.size and not (_mergeable(t, rows) and _mergeable(t, cols)):
        return None                             # (checked first: exceptions are slow)
    m = t.transpose(rows + cols).view()
    try:
        m.shape = (math.prod(t.shape[a] for a in rows), math.prod(t.shape[a] for a in cols))
    except AttributeError:                      # the axes do not merge without a copy
        return None
    return m


def _as_gemm(t1, t2, c1, c2):
    """``(A, B)`` with ``A @ B`` the contraction of `t1` and `t2` over the paired axes
    `c1`, `c2` (free axes in order), all views; None when no order of the contracted
    axes gives views of both."""
    f1 = [d for d in range(t1.ndim) if d not in c1]
    f2 = [d for d in range(t2.ndim) if d not in c2]
    pairs = list(zip(c1, c2))
    for order in (sorted(pairs), sorted(pairs, key=lambda p: p[1])):
        a = _matrix(t1, f1, [p[0] for p in order])
        b = _matrix(t2, [p[1] for p in order], f2) if a is not None else None
        if b is not None:
            return a, b
    return None


def gemm_into(out, a, b, first: bool, scratch: dict) -> None:
    """``out = a @ b`` (`first`) or ``out += a @ b``: one BLAS call when
    :func:`blas.gemm` applies, else ``np.matmul`` and, to add, a reused scratch of at
    most about :data:`SCRATCH_BYTES` (a few hundred rows of `out` at a time)."""
    if blas.gemm(out, a, b, accumulate=not first):
        return
    if first:
        np.matmul(a, b, out=out)
        return
    rows = max(256, SCRATCH_BYTES // max(1, out.shape[1] * out.dtype.itemsize))
    rows = min(rows, out.shape[0])
    key = (rows, out.shape[1], out.dtype)
    tmp = scratch.get(key)
    if tmp is None:
        scratch.clear()                          # one buffer: the tile shape rarely varies
        tmp = scratch[key] = np.empty((rows, out.shape[1]), out.dtype)
    for r in range(0, out.shape[0], rows):
        part = tmp[:min(rows, out.shape[0] - r)]
        np.matmul(a[r:r + rows], b, out=part)
        out[r:r + rows] += part


def _sub_problem(t1, t2, c1, c2, side: int, i: int):
    """Index 0 of `t1` (side 1) or `t2` (side 2) fixed at `i`: ``(t1, t2, c1, c2, acc
    axis or None)``; the acc axis is the output axis that the index fixes (a free axis),
    None when it is a contracted axis (a term of the sum)."""
    if side == 2:
        s2, s1, k2, k1, ax = _sub_problem(t2, t1, c2, c1, 1, i)
        return s1, s2, k1, k2, ax
    if 0 not in c1:                              # a free axis: the output's first
        return t1[i], t2, [c - 1 for c in c1], list(c2), 0
    p = c1.index(0)
    q = c2[p]
    t2i = t2[(slice(None),) * q + (i,)]
    return (t1[i], t2i, [c - 1 for j, c in enumerate(c1) if j != p],
            [c - (c > q) for j, c in enumerate(c2) if j != p], None)


def _loop_side(t1, t2, c1, c2):
    """Which operand's leading axis to loop over so that each term is one matrix
    product of views (1 or 2), or None."""
    for side, t in ((1, t1), (2, t2)):
        if t.ndim and t.shape[0]:
            s1, s2, k1, k2, _ = _sub_problem(t1, t2, c1, c2, side, 0)
            if _as_gemm(s1, s2, k1, k2) is not None:
                return side
    return None


def terms(acc, t1, t2, c1, c2, first: bool, into=None) -> list:
    """The products that write (`first`) or add the contraction of `t1` and `t2` over
    the paired axes `c1`, `c2` into `acc` (free axes of `t1`, then of `t2`), in order:
    ``("gemm", out, a, b, first)`` (``out (+)= a @ b``, 2-D views) or
    ``("tensordot", out, t1, t2, c1, c2, first)`` (the copying last resort).  Empty
    operands write zeros at once (when `first`) and give no product."""
    into = [] if into is None else into
    if acc.size == 0:
        return into
    if t1.size == 0 or t2.size == 0:             # nothing to sum
        if first:
            acc[...] = 0
        return into
    mats = _as_gemm(t1, t2, c1, c2)
    out = _matrix(acc, range(t1.ndim - len(c1)), range(t1.ndim - len(c1), acc.ndim)) \
        if mats is not None else None
    if out is not None:
        into.append(("gemm", out, mats[0], mats[1], first))
        return into
    side = _loop_side(t1, t2, c1, c2)
    if side is None:                             # the axes are too mixed: copy
        into.append(("tensordot", acc, t1, t2, list(c1), list(c2), first))
        return into
    n = (t1 if side == 1 else t2).shape[0]
    for i in range(n):
        s1, s2, k1, k2, ax = _sub_problem(t1, t2, c1, c2, side, i)
        if ax is None:                           # a term of the sum
            terms(acc, s1, s2, k1, k2, first and i == 0, into)
        else:
            at = ax if side == 1 else t1.ndim - len(c1)
            terms(acc[(slice(None),) * at + (i,)], s1, s2, k1, k2, first, into)
    return into


def flops(ts: list) -> int:
    """Multiply-adds of a list of products (a copying tensordot counts its size)."""
    total = 0
    for t in ts:
        if t[0] == "gemm":
            total += t[1].shape[0] * t[1].shape[1] * t[2].shape[1]
        else:
            total += t[2].size * t[3].size // max(1, t[1].size)
    return total


def splittable(ts: list) -> bool:
    """Whether the products can run as parts on several threads (no copying
    tensordot, whose target may overlap the products' targets)."""
    return all(t[0] == "gemm" for t in ts)


def _cut(n: int, part: int, nparts: int) -> slice:
    return slice(n * part // nparts, n * (part + 1) // nparts)


def run(ts: list, part: int, nparts: int, scratch: dict) -> None:
    """Run part `part` of `nparts` of the products `ts` (:func:`terms`): each matrix
    product is cut along its output's rows (or columns, when there are more) into
    `nparts` slices and this part computes one; the copying tensordots run whole in
    part 0 (lists with them are not split: see :func:`splittable`)."""
    for t in ts:
        if t[0] == "tensordot":
            if part == 0:
                _, out, t1, t2, c1, c2, first = t
                res = np.tensordot(t1, t2, axes=(c1, c2))
                if first:
                    out[...] = res
                else:
                    out += res
            continue
        _, out, a, b, first = t
        if nparts > 1:                           # rows (faster here: BLAS packs the
            m, n = out.shape                     # shared operand, its kernels are wide)
            if m >= ROWS_PER_PART * nparts or m >= n:
                r = _cut(m, part, nparts)
                out, a = out[r], a[r]
            else:
                c = _cut(n, part, nparts)
                out, b = out[:, c], b[:, c]
            if not out.size:
                continue
        gemm_into(out, a, b, first, scratch)


def contract_into(acc, t1, t2, c1, c2, first: bool, scratch: dict) -> None:
    """Write (`first`) or add the contraction of `t1` and `t2` over the paired axes
    `c1`, `c2` into `acc` (free axes of `t1`, then of `t2`), on the calling thread.

    Examples
    --------
    >>> x, y = np.arange(24.0).reshape(2, 3, 4), np.arange(24.0).reshape(4, 2, 3)
    >>> acc = np.empty((3, 3))
    >>> contract_into(acc, x, y, [0, 2], [1, 0], True, {})
    >>> bool(np.allclose(acc, np.tensordot(x, y, ([0, 2], [1, 0]))))
    True
    """
    run(terms(acc, t1, t2, c1, c2, first), 0, 1, scratch)


# ---------------------------------------------------------------------------------------
# operands and output tiles


def _sizes(g, shape) -> bool:
    """Whether `g` is one positive size per axis: a tuple or a list only (zarr's
    ``.blocks`` is an iterable of its blocks' *values*: ``tuple()`` of it read every
    chunk through zarr, 0.9 s of a 300^3 tensordot's 1.1 s, issue 26)."""
    return isinstance(g, (tuple, list)) and len(g) == len(shape) and \
        all(isinstance(v, (int, np.integer)) and v > 0 for v in g)


def chunks_of(x, shape):
    c = getattr(x, "chunks", None)
    if _sizes(c, shape):
        return tuple(int(v) for v in c)
    return tuple(shape)


def steps_of(n: int, c: int) -> list:
    return [slice(s, min(s + c, n)) for s in range(0, n, c)]


def grain_of(x, shape) -> tuple:
    """The unit of decoding along each axis: an NDArray's blocks, a foreign array's
    chunks, 1 for in-memory arrays (any cut is free)."""
    for attr in ("blocks", "chunks"):
        g = getattr(x, attr, None)
        if _sizes(g, shape):
            return tuple(max(1, min(int(v), n)) for v, n in zip(g, shape))
    return (1,) * len(shape)


class Operand:
    """One operand of a product: its layout, and reads of its tiles.

    NDArrays are read into buffers of the engine's pool (fresh multi-MB buffers cost
    page faults on every step).  A tile made of whole rows of storage blocks along the
    first axis, spanning the other axes, of chunks that span them too (no padding,
    blocks stored in C order), lies in its chunks' stored order: it is decoded there
    straight into the tile, block range by block range, on the calling thread (with
    :attr:`threads` C threads: 1 when the workers multiply, as they are then the
    parallelism, else the array's), and a chunk's compressed bytes read for one tile
    serve the next ones of the same chunk (`keep`).  Any other tile is read
    with ``read_into``; h5py and zarr arrays by their direct reader
    (:func:`ndpack.engine.run.foreign.reader`: chunks read and decoded on this thread
    into the pool's buffers, a chunk cut by several tiles decoded once); other arrays
    with ``[key]``.
    """

    def __init__(self, x, shape, dtype, slot: int = 0):
        self.x, self.shape, self.dtype, self.slot = x, shape, dtype, slot
        self.chunks = chunks_of(x, shape)
        self.grain = grain_of(x, shape)
        self.direct = bool(shape) and callable(getattr(x, "read_into", None))
        # h5py/zarr: chunks read and decoded on this thread, into the pool's buffers;
        # a chunk cut by several tiles is decoded once (the reader's cache)
        self.foreign = reader(x) if shape and not self.direct else None
        self.token = object()                    # identifies this operand's cached chunk
        self.threads = None                      # C threads decoding (None: the array's)
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

    def start(self, key, pool, n: int):
        """Start reading tile `key` on the workers of `pool`: a future of ``(tile,
        buffer)`` (:meth:`read`), or, for a tile of several chunks decoded in place,
        a :class:`_Pieces` of up to `n` tasks that decode a share of them each."""
        runs = self.runs(key) if self.direct and n > 1 else None
        if runs is None or len(runs) < 2:
            return workers.submit(pool, self.read, key)
        shape = tuple(k.stop - k.start for k in key)
        nbytes = math.prod(shape) * self.dtype.itemsize
        buf = workers.buffers.take(nbytes)
        tile = buf[:nbytes].view(self.dtype).reshape(shape)
        n = min(n, len(runs))
        return _Pieces(tile, buf, [workers.submit(pool, self._decode, tile,
                                                  runs[i * len(runs) // n:
                                                       (i + 1) * len(runs) // n])
                                   for i in range(n)])

    def _decode(self, tile, runs, keep: bool = False) -> None:
        """Decode `runs` (:meth:`runs`) into `tile` on this thread."""
        try:
            for n, blocks, r0, r1 in runs:
                dst = tile[r0:r1].reshape(-1)
                got = self.x.decode_stored(self._compressed(n), out=dst, blocks=blocks,
                                           nthreads=self.threads)
                if got.ndim == 0:                # a special chunk: its value, not decoded
                    dst[...] = got
        finally:
            if not keep:
                self.forget()

    def read(self, key, keep: bool = False) -> tuple:
        """``(tile, buffer)``: the C-ordered values of ``x[key]`` (a tuple of step-1
        slices) and the pool buffer holding them (None when not pooled).  With `keep`,
        the last chunk read stays held for the next call on this thread (call
        :meth:`forget` after the last)."""
        if not self.shape:
            return np.asarray(self.x[()]), None
        if not self.direct and self.foreign is None:
            return np.asarray(self.x[key]), None
        shape = tuple(k.stop - k.start for k in key)
        nbytes = math.prod(shape) * self.dtype.itemsize
        buf = workers.buffers.take(nbytes)
        tile = buf[:nbytes].view(self.dtype).reshape(shape)
        try:
            runs = self.runs(key) if tile.size and self.direct else None
            if self.foreign is not None:
                if tile.size:
                    self.foreign(key, tile, 1)
            elif runs is None:
                self.x.read_into(key, tile)
            else:
                self._decode(tile, runs, keep)
        except BaseException:
            workers.buffers.give(buf)
            raise
        return tile, buf


class _Pieces:
    """A tile read by several tasks: :meth:`result` is ``(tile, buffer)`` once all are
    done (the first error is raised then, and the buffer given back)."""

    def __init__(self, tile, buf, futures):
        self.tile, self.buf, self.futures, self.failed = tile, buf, futures, None

    def exception(self):
        """Wait for every task; the first error, or None."""
        errors = [f.exception() for f in self.futures]
        first = next((e for e in errors if e is not None), None)
        if first is not None and self.failed is None:
            self.failed = first
            workers.buffers.give(self.buf)
        return first

    def result(self) -> tuple:
        error = self.exception()
        if error is not None:
            raise error
        return self.tile, self.buf


_LOCAL = threading.local()


def _chunk_buffer(nbytes: int, slot: int) -> np.ndarray:
    """This thread's reused buffer `slot` for compressed chunks read from files, of at
    least `nbytes` (:func:`ndpack.resources.scratch`: fresh pages cost page faults)."""
    return scratch(nbytes, f"contract-chunk-{slot}")


def _release(bufs) -> None:
    for b in bufs:
        if b is not None:
            workers.buffers.give(b)


class Tiler:
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
        self._held: dict = {}                     # accumulator slot -> pool buffer
        sizes = [op1.shape[a] for a in ax1]
        order = plan.get("order", range(len(sizes)))
        per_axis = [steps_of(n, max(1, k)) for n, k in zip(sizes, plan["steps"])]
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
        in parts.  Lanes over operands decoded by block rows (:meth:`Operand.runs`)
        contract slabs of about :data:`SLAB_BYTES` (still in the cache from decoding)."""
        self.nparts = n
        for op in self.ops:                      # the workers are the parallelism
            op.threads = 1
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
                parts.append(self.ops[side].start(self._key(side, region, kb), pool,
                                                  self.nthreads))
        return parts

    @staticmethod
    def _finish(parts, wholes) -> tuple:
        """The tiles of a started step, and the pool buffers to give back after it."""
        tiles, bufs = [], []
        for side, p in enumerate(parts):
            try:
                if isinstance(p, tuple):
                    tiles.append(wholes[side][p])
                else:
                    t, b = p.result()            # (a failed read gave its buffer back)
                    tiles.append(t)
                    bufs.append(b)
            except BaseException:
                _release(bufs)                   # the reads already taken, once
                _abandon(parts[side + 1:])       # and those still pending
                raise
        return tiles, bufs

    def __call__(self, region) -> np.ndarray:
        shape = tuple(r.stop - r.start for r in region)
        if self.acc is None or self.acc.shape != shape:
            self.acc = self._array(shape, 0)
        acc = self.acc
        pool = workers.workers(self.nthreads)
        full = tuple(slice(0, self.ops[0].shape[a]) for a in self.ax[0])
        started = [self.ops[side].start(self._key(side, region, full), pool, self.nthreads)
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

    def _array(self, shape, slot: int) -> np.ndarray:
        """An uninitialized array for accumulator `slot`, from the engine's buffer pool
        (a fresh tile of tens of MB costs page faults on every product); the slot's
        previous buffer goes back first."""
        old = self._held.pop(slot, None)
        if old is not None:
            workers.buffers.give(old)
        nbytes = math.prod(shape) * self.dtype.itemsize
        buf = self._held[slot] = workers.buffers.take(nbytes)
        return buf[:nbytes].view(self.dtype).reshape(shape)

    def release(self) -> None:
        """Give the accumulators back to the buffer pool (the tiles are dead after)."""
        self.acc, self.lane_accs = None, []
        held, self._held = self._held, {}
        for buf in held.values():
            workers.buffers.give(buf)

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
                    contract_into(acc, tiles[0], tiles[1], self.ax[0], self.ax[1],
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
            self.lane_accs = [self._array(acc.shape, 1 + w) for w in range(n - 1)]
        accs = [acc] + self.lane_accs[:n - 1]
        deal = Deal(n, len(self.kblocks))
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

    def _multiply(self, acc, tiles, first: bool, pool, read_next=None) -> tuple:
        """Write or add the products of one step into `acc`: cut into :attr:`nparts`
        parts on the workers when the step is big enough, else one call here.
        ``read_next()`` starts the next step's reads: after the parts are queued (the
        workers multiply first), before the call here (the workers read meanwhile).
        Returns the parts' futures and what ``read_next`` returned."""
        ts = terms(acc, tiles[0], tiles[1], self.ax[0], self.ax[1], first)
        n = self.nparts
        if n > 1 and splittable(ts) and flops(ts) >= MIN_SPLIT:
            jobs = [workers.submit(pool, run, ts, p, n, self.scratch[p]) for p in range(n)]
            try:
                return jobs, read_next() if read_next is not None else None
            except BaseException:
                for j in jobs:
                    j.exception()
                raise
        nxt = read_next() if read_next is not None else None
        try:
            run(ts, 0, 1, self.scratch[0])
        except BaseException:
            if nxt is not None:
                _abandon(nxt)
            raise
        return [], nxt

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
                read_next = (lambda k=kbs[i + 1]: self._start(region, k, pool)) \
                    if ahead and i + 1 < len(kbs) else None      # read the next meanwhile
                try:
                    jobs, nxt = self._multiply(acc, tiles, i == 0, pool, read_next)
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


class Deal:
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
