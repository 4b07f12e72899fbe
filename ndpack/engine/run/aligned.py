"""Evaluation over operands that share the output's chunk layout.

When every operand is an NDArray with the output's shape, chunks and blocks, chunk `n`
of each operand stores its elements in the same order as chunk `n` of the output.  An
elementwise tree then runs on whole decoded chunks in stored order, nothing reordered:

* the compressed chunks of the next output chunk are fetched by a background thread
  while the current one is computed (file reads overlap the work);
* each operand chunk is decoded by the C core's threads into a buffer reused from
  chunk to chunk (fresh pages would cost page faults);
* numexpr evaluates the flat buffers into a reused output buffer -- or straight into
  the caller's NumPy array when the chunk's region there is one contiguous run;
* the output buffer is compressed as the result's chunk (or copied into place).

Special chunks (zeros, NaN, a repeated value) are never decoded: they enter the
evaluation as scalars, and an output chunk computed from scalars alone is stored as a
special chunk.  Anything else goes through the general region path of
:mod:`ndpack.engine.run.regions`, which gives the same values.

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> from ndpack.engine.expr.nodes import Apply, Constant, Operand
>>> a = asarray(np.arange(12.0).reshape(3, 4), chunks=(2, 4), blocks=(1, 4))
>>> node = Apply("multiply", (Operand(a), Constant(2)))
>>> ops = aligned_operands(node, a.shape, a.chunks, a.blocks)
>>> out = np.empty(a.shape)
>>> read_aligned(node, ops, out)[2].tolist()
[16.0, 18.0, 20.0, 22.0]
"""

from __future__ import annotations

import collections
import itertools
import math
import threading
import typing

import numpy as np

from ndpack._core import ChunkParts
from ndpack.chunks import decompress_blocks, nd_scope
from ndpack.engine.run import plan
from ndpack.engine.run.fused import program as fused_program
from ndpack.engine.run.kernel import Kernel, run
from ndpack.engine.run.regions import operand_key
from ndpack.engine.expr.nodes import Node, operands_of
from ndpack.engine.run.workers import (buffers, on_engine_thread, prefetch, serial_numexpr,
                                   submit, workers, writer)
from ndpack.storage.ndarray import NDArray

__all__ = ["FUSED", "BlockGroup", "aligned_operands", "compute_aligned", "read_aligned"]

# blocks evaluated by the C core's fused program, and those of groups it did not take
FUSED: collections.Counter = collections.Counter()


class BlockGroup(typing.NamedTuple):
    """A group of consecutive blocks of a chunk, evaluated by one task."""
    blocks: range       # the blocks' numbers
    ids: list           # the same, as the decoder's list
    lo: int             # the group's span of elements in the chunk: lo:hi
    hi: int


def aligned_operands(node: Node, shape: tuple, chunks, blocks) -> list | None:
    """The operands of `node` when the aligned path applies, else None.

    It applies when every operand is either an NDArray of `shape` stored with `chunks`
    and `blocks` (its chunks line up with the output's; at least one is needed), or a
    NumPy array that broadcasts to `shape` (a reduction's result, a small table, ...)
    -- the latter only when the stored order is C order (blocks spanning the trailing
    dimensions of the chunk), so that a chunk-shaped copy of its values lines up too.
    """
    ops = operands_of(node)
    if not ops or not shape or 0 in shape:
        return None
    stored = [op for op in ops if _stored(op.array, shape, chunks, blocks)]
    if not stored:
        return None
    for op in ops:
        if op in stored:
            continue
        if not (isinstance(op.array, np.ndarray) and stored[0].array.stored_c_order
                and _broadcasts(op.shape, shape)):
            return None
    return ops


def _stored(a, shape, chunks, blocks) -> bool:
    return (isinstance(a, NDArray) and a.shape == shape and a.chunks == tuple(chunks)
            and a.blocks == tuple(blocks))


def _broadcasts(small: tuple, shape: tuple) -> bool:
    try:
        return np.broadcast_shapes(small, shape) == shape
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------
# the chunk loop

_EMPTY = bytearray()


class _Fetcher:
    """What chunk `n` needs, read ahead: the compressed chunks of the stored operands,
    read into two rotating sets of reused buffers (the chunk being decoded and the one
    read ahead), and for NumPy operands that broadcast, their values for the chunk laid
    out in the chunk's (C) order."""

    def __init__(self, ops: list, ref: NDArray, stored: list):
        self.ops, self.ref, self.stored = ops, ref, stored
        self.slots = tuple([_EMPTY if st else None for st in stored] for _ in range(2))
        self.turn = 0
        # only contiguous files read into the buffers (others return their own bytes)
        self.grow = [st and op.array.urlpath is not None and op.array.schunk.contiguous
                     for op, st in zip(ops, stored)]
        ext = ref.stored_as_chunk(np.empty(ref.stored_elements, np.uint8)).shape
        self.ext = tuple(ext)

    def __call__(self, n: int) -> list:
        slot = self.slots[self.turn]
        self.turn ^= 1
        out = []
        for i, op in enumerate(self.ops):
            if not self.stored[i]:
                out.append(self._broadcast(i, op, n, slot))
                continue
            chunk = op.array.read_chunk(n, slot[i])
            if self.grow[i] and len(chunk) > len(slot[i]):
                if slot[i] is not _EMPTY:
                    buffers.give(slot[i])
                slot[i] = buffers.take(len(chunk) + len(chunk) // 8)  # bigger next time
            out.append(chunk)
        return out

    def close(self) -> None:
        """Give the buffers back (call when no chunk read from them is in use)."""
        for slot in self.slots:
            for i, b in enumerate(slot):
                if b is not None and b is not _EMPTY and self.stored[i]:
                    buffers.give(b)
                slot[i] = None

    def _broadcast(self, i, op, n, slot) -> np.ndarray:
        if slot[i] is None:
            slot[i] = np.zeros(self.ext, op.dtype)
        region = self.ref.chunk_region(n)
        valid = tuple(slice(0, r.stop - r.start) for r in region)
        slot[i][valid] = op.array[operand_key(op.shape, region, len(region))]
        return slot[i].reshape(-1)


def _chunk_results(node: Node, ops: list, dtype: np.dtype, target, lookahead=False,
                   after=None, group_bytes=None, parts=None):
    """Yield ``(n, values)`` for every output chunk in order: `values` is flat in stored
    order (a buffer reused for the next chunk, unless ``target(n)`` gave one) or 0-d.

    A chunk is cut into groups of blocks (about `group_bytes` per operand, default
    ``plan.GROUP_BYTES``); each worker thread takes one task per chunk and claims its
    groups one at a time from a shared counter until none is left (a task per group
    cost ~60 us of Python and a thread wake-up each: 20-35 ms of CPU per ``compute()``
    of three 4000^2 operands), decodes each group (one C thread) into its own small
    buffers and evaluates it into place, so the decoded operands are still in that
    core's cache when used.  ``after(n, blocks, dst)``, when given, runs on the worker
    right after a group of chunk `n` landed in `dst` (the chunk's buffer), while those
    blocks are still in its cache.

    Trees of float64 arithmetic over stored operands run in the C core block by block
    (:mod:`ndpack.engine.run.fused`: decode, evaluate and -- with ``parts(n)``, the
    chunk's :class:`~ndpack._core.ChunkParts` -- encode each block while it is in L2;
    ``after`` is then not called).  Groups whose chunks it does not take (special
    chunks, another block layout) go the general way; ``FUSED`` counts both.
    """
    stored = [isinstance(op.array, NDArray) and op.shape == node.shape for op in ops]
    ref = ops[stored.index(True)].array
    nchunks, size = ref.schunk.nchunks, ref.stored_elements
    per_block = math.prod(ref.blocks)
    nblocks = size // per_block
    itemsize = max([op.dtype.itemsize for op in ops] + [dtype.itemsize])
    group_bytes = plan.GROUP_BYTES if group_bytes is None else group_bytes
    step = max(1, min(nblocks, group_bytes // (per_block * itemsize)))
    # each group: its blocks, their numbers (the decoder's list) and its element span
    groups = [BlockGroup(range(g, min(g + step, nblocks)),
                         list(range(g, min(g + step, nblocks))),
                         g * per_block, min(g + step, nblocks) * per_block)
              for g in range(0, nblocks, step)]
    kernel = Kernel(node, ops)
    cast = dtype != node.dtype
    fused = None if cast or not all(stored) else fused_program(node, ops)
    if fused is not None:
        ids32 = {g.lo: np.asarray(g.ids, np.int32) for g in groups}
        chunk_bytes, block_bytes = size * dtype.itemsize, per_block * dtype.itemsize
    local = threading.local()
    whole_raw = buffers.take(size * dtype.itemsize)
    whole = whole_raw[:size * dtype.itemsize].view(dtype)
    nworkers = max(1, ref.schunk.dparams.nthreads)
    ntasks = min(nworkers, len(groups))
    # the chunks were checked against the layout when read (``read_chunk``), special
    # ones enter as scalars: the others decode straight into the worker's buffers
    slots = [(i, op.dtype) for i, (op, st) in enumerate(zip(ops, stored)) if st]

    nd = ref.layout.nd                   # (the n-d codecs' layout: all share it)

    def group(raw, fills, g, n, dst, encode=True):
        """Group `g` of chunk `n` into `dst` (`encode`: and encoded: by the fused
        program from its own block buffers, or by `after` from `dst`)."""
        with nd_scope(nd):
            _group(raw, fills, g, n, dst, encode)

    def _group(raw, fills, g, n, dst, encode):
        blocks, ids, lo, hi = g
        if fused is not None and not any(f is not None for f in fills):
            enc = parts(n) if parts is not None and encode else None
            if not isinstance(enc, ChunkParts):
                enc = None                       # (then `after` encodes the group)
            if fused.run(raw, ids32[lo], dst, chunk_bytes, block_bytes, enc):
                FUSED["fused"] += len(ids)
                if enc is None and after is not None and encode:
                    after(n, blocks, dst)
                return
            FUSED["general"] += len(ids)
        bufs = getattr(local, "bufs", None)
        if bufs is None:
            bufs = local.bufs = [np.empty(step * per_block, op.dtype) if st else None
                                 for op, st in zip(ops, stored)]
            local.staging = np.empty(step * per_block, node.dtype) if cast else None
        m = hi - lo
        values = list(fills)
        for i, _ in slots:
            if values[i] is None:
                values[i] = b = bufs[i][:m]
                decompress_blocks(raw[i], ids, 1, b)
        for i, st in enumerate(stored):
            if not st:
                values[i] = raw[i][lo:hi]
        part = dst[lo:hi]
        if cast:
            np.copyto(part, kernel(values, local.staging[:m]), casting="unsafe")
        else:
            kernel(values, part)
        if after is not None and encode:
            after(n, blocks, dst)

    def claim(raw, fills, n, dst, counter):
        for k in counter:                # next() of a count is atomic under the GIL
            if k >= len(groups):
                return
            group(raw, fills, groups[k], n, dst)

    def finished(entry) -> tuple:
        """``(n, values)`` of a chunk in flight once its groups are done (the first
        group error is raised).  Fused groups encoded from their own block buffers
        left `values` unwritten: when the encoder must read the whole chunk after all
        (stored uncompressed, encoded again whole), the chunk is evaluated into it."""
        n, dst, jobs, raw, fills = entry
        for job in jobs:
            job.result()
        enc = parts(n) if parts is not None and fused is not None else None
        if isinstance(enc, ChunkParts) and enc.needs_source:
            for g in groups:
                group(raw, fills, g, n, dst, encode=False)
            enc.source_filled()
        return n, dst

    pool, fetch = workers(nworkers), _Fetcher(ops, ref, stored)
    pending, jobs = prefetch(fetch, 0), []
    # With `lookahead`, the groups of chunk n + 1 are queued before chunk n is waited
    # for (so no worker idles at a chunk's end) when chunk n + 1 has a destination of
    # its own (the caller's array); the shared `whole` buffer allows one chunk at a
    # time.  compute_aligned does not look ahead: its writer compresses chunk n - 1
    # while chunk n is computed, and that overlap is worth more (measured).
    # The fetcher's two slots hold the raw chunks of n and n + 1: the read of n + 2
    # starts once n is done.
    inflight = []                                      # (n, dst, jobs), at most two
    try:
        with serial_numexpr():
            for n in range(nchunks):
                raw = pending.result()
                if not lookahead:        # chunk n - 1 is done: its slot takes n + 1
                    pending = prefetch(fetch, n + 1) if n + 1 < nchunks else None
                fills = [op.array.special_value(c) if st else None
                         for op, c, st in zip(ops, raw, stored)]
                if all(f is not None for f in fills):          # scalars only: 0-d result
                    while inflight:
                        yield finished(inflight.pop(0))
                    if lookahead:
                        pending = prefetch(fetch, n + 1) if n + 1 < nchunks else None
                    yield n, np.asarray(run(node, ops, fills)).astype(dtype)
                    continue
                dst = target(n) if target is not None else None
                if dst is None or not lookahead:
                    dst = whole if dst is None else dst
                    while inflight:                            # `whole` must be free
                        yield finished(inflight.pop(0))
                counter = itertools.count()
                jobs = [submit(pool, claim, raw, fills, n, dst, counter)
                        for _ in range(ntasks)]
                inflight.append((n, dst, jobs, raw, fills))
                if len(inflight) > 1 or dst is whole or not lookahead:
                    done = finished(inflight.pop(0))
                    if lookahead:
                        pending = prefetch(fetch, n + 1) if n + 1 < nchunks else None
                    yield done
                else:
                    pending = None if n + 1 >= nchunks else prefetch(fetch, n + 1)
            while inflight:
                yield finished(inflight.pop(0))
    finally:                 # on an error or an early exit, nothing keeps running
        for job in [j for _, _, js, _, _ in inflight for j in js] + jobs + [pending]:
            if job is not None:
                job.exception()
        fetch.close()
        buffers.give(whole_raw)


def compute_aligned(node: Node, ops: list, out: NDArray, tick=None) -> NDArray:
    """Write every chunk of `out` (same layout as `ops`; empty, or full to overwrite).

    When the output's cparams allow chunks to be encoded in parts (every codec and
    filter but DELTA, no dictionary, clevel > 0), each worker encodes the blocks it
    has just evaluated, while they are in its cache (:func:`_compute_encoding`).
    Otherwise chunk `n` is compressed and stored by a writer thread while the workers
    compute chunk `n + 1` into the other of two result buffers.
    """
    if not on_engine_thread() and _encoder(out) is not None:
        return _compute_encoding(node, ops, out, tick)
    size = out.stored_elements
    nbytes = size * out.dtype.itemsize
    raws = [buffers.take(nbytes), buffers.take(nbytes)]      # reused: no page faults
    results = [r[:nbytes].view(out.dtype) for r in raws]
    writing = [None, None]                 # the write of each buffer in flight

    def target(n):
        k = n % 2
        if writing[k] is not None:         # the buffer's previous chunk is stored
            writing[k].result()
            writing[k] = None
        return results[k]

    stores = writer()
    tick = tick or (lambda: None)
    if on_engine_thread():                 # nested: never wait on our own writer
        for r in raws:
            buffers.give(r)
        for n, values in _chunk_results(node, ops, out.dtype, None):
            out.write_stored(n, values)
            tick()
        return out
    last = None
    try:
        for n, values in _chunk_results(node, ops, out.dtype, target):
            if last is not None:
                last.result()              # chunks are stored in order
                tick()
            last = stores.submit(out.write_stored, n, values)
            if values.ndim:
                writing[n % 2] = last
        if last is not None:
            last.result()
            tick()
    finally:
        for job in writing + [last]:       # never leave a write running on an error
            if job is not None:
                job.exception()
        for r in raws:
            buffers.give(r)
    return out


def _compute_encoding(node: Node, ops: list, out: NDArray, tick=None) -> NDArray:
    """:func:`compute_aligned` with the compression fused into the workers' tasks.

    Decoding, evaluating and compressing a chunk as three passes (the last one by
    the writer's C threads) moved every value through memory once more and ran the
    compression threads against the workers on the same cores; here a worker decodes
    a group of blocks, evaluates it and encodes the result blocks into the chunk's
    encoder (:meth:`NDArray.encoder_stored`) before taking the next group.  The groups
    of chunk `n + 1` are queued before chunk `n` is waited for (two chunk buffers), and
    the caller stores each finished chunk in order.  Blocks land in the order the
    workers finish them (valid Blosc2 either way; one worker gives the bytes of a
    one-thread compress of the same values).
    """
    size = out.stored_elements
    nbytes = size * out.dtype.itemsize
    raws = [buffers.take(nbytes), buffers.take(nbytes)]      # reused: no page faults
    results = [r[:nbytes].view(out.dtype) for r in raws]
    encoders = {}
    tick = tick or (lambda: None)
    proto = _encoder(out)     # cparams read once: each chunk's encoder is ``again``'s

    def target(n):
        with nd_scope(out.layout.nd):        # (n-d codecs: the encoder keeps the layout)
            encoders[n] = proto.again()
        return results[n % 2]

    def encode(n, blocks, dst):
        encoders[n].add(dst, blocks.start, len(blocks))

    # Finished chunks are stored by the writer thread (a file write of a chunk took as
    # long as computing the next one: on this thread it left the workers idle); at
    # most two wait there.
    stores, writes = writer(), []
    chunks = _chunk_results(node, ops, out.dtype, target, lookahead=True, after=encode,
                            group_bytes=plan.ENCODE_GROUP_BYTES, parts=encoders.get)
    try:
        for n, values in chunks:
            enc = encoders.pop(n, None)
            if values.ndim == 0 or enc is None:
                chunk, sums = out.encode_stored(values), None
            else:
                chunk, sums = enc.finish(values), enc.sums
            writes.append(stores.submit(out.write_encoded, n, chunk, sums))
            while len(writes) > 2 or (writes and writes[0].done()):
                writes.pop(0).result()
                tick()
        while writes:
            writes.pop(0).result()
            tick()
    finally:
        chunks.close()                   # no worker still writes into the buffers
        for job in writes:               # nor a write into `out`
            job.exception()
        encoders.clear()
        for r in raws:
            buffers.give(r)
    return out


def _encoder(out: NDArray):
    """The encoder in parts of a chunk of `out` (a seam for tests)."""
    return out.encoder_stored()


def read_aligned(node: Node, ops: list, out) -> np.ndarray:
    """Evaluate the whole tree into `out` (the output's shape): a NumPy array, or any
    array-like with ``dtype`` and ``__setitem__`` (h5py, zarr, ...), chunk by chunk."""
    shape = tuple(out.shape)
    ref = next(op.array for op in ops if isinstance(op.array, NDArray)
               and op.shape == shape)
    direct = {}

    def target(n):
        # numexpr writes straight into `out` when the chunk is unpadded and its region
        # there is one contiguous run (chunks spanning the trailing dimensions)
        if not ref.stored_c_order or not isinstance(out, np.ndarray):
            return None
        view = out[ref.chunk_region(n)]
        if view.size == ref.stored_elements and view.flags.c_contiguous:
            direct[n] = view = view.reshape(-1)
            return view
        return None

    for n, values in _chunk_results(node, ops, np.dtype(out.dtype), target, lookahead=True):
        region = ref.chunk_region(n)
        if values is direct.pop(n, None):
            continue
        if values.ndim == 0:
            out[region] = values
        else:
            chunk = ref.stored_as_chunk(values)
            out[region] = chunk[tuple(slice(0, s.stop - s.start) for s in region)]
    return out
