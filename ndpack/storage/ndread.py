"""Chunk-level reads and writes of an NDArray: decode only the chunks and blocks a key
touches.

:class:`ChunkIO` works on an array's :class:`~ndpack.storage.layout.Layout` and
super-chunk; an NDArray keeps one (its layout is replaced when the array is resized)
and so do its indexers (:mod:`~ndpack.storage.fancy`, :mod:`~ndpack.storage.chunkwise`,
:mod:`~ndpack.storage.boxread`).  Whole chunks whose block layout matches C order
decode straight into the output; partial chunks decode only their blocks (from files:
only those blocks' bytes, with one positioned read); chunks are decoded in parallel on
storage's shared pool (:mod:`~ndpack.storage.workspace`) when ``dparams.nthreads > 1``
(each C call single-threaded, so parallelism stays one level).

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> a = asarray(np.arange(20.0).reshape(4, 5), chunks=(2, 5), blocks=(1, 5))
>>> io = ChunkIO(a.layout, a.schunk)
>>> out = np.empty((2, 2))
>>> io.read_ranges([range(1, 3), range(3, 5)], out); out.tolist()
[[8.0, 9.0], [13.0, 14.0]]
>>> io.chunk_array(1)[0].tolist()
[10.0, 11.0, 12.0, 13.0, 14.0]
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools

import numpy as np

from ndpack.chunks import (compress2, decompress2, decompress_blocks, getitems, in_layout,
                           special_chunk)
from ndpack.codecs import SpecialValue
from ndpack.errors import FormatError, NdpackError
from ndpack.storage.frame import chunk_nbytes_of
from ndpack.storage import boxread, checksums
from ndpack.storage.framefile import ContiguousFrame, SparseFrame
from ndpack.storage.grid import compact_index, dim_parts, prod
from ndpack.storage.validate import check_chunk
from ndpack.storage.checksums import WHOLE_CHECK_BYTES
from ndpack.resources import scratch
from ndpack.storage.workspace import share

__all__ = ["ChunkIO", "from_blocked", "stored_chunk", "to_blocked"]

# ---------------------------------------------------------------------------------------
# block layout of one chunk


def from_blocked(buf, dtype, counts, blocks) -> np.ndarray:
    """Blocks ``counts`` (a C-order grid) stored one after another -> one array."""
    nd = len(blocks)
    a = np.frombuffer(buf, dtype=dtype).reshape(tuple(counts) + tuple(blocks))
    order = [ax for d in range(nd) for ax in (d, nd + d)]
    return a.transpose(order).reshape(tuple(c * b for c, b in zip(counts, blocks)))


def to_blocked(arr: np.ndarray, blocks) -> np.ndarray:
    """Inverse of :func:`from_blocked` for a whole chunk (contiguous result)."""
    nd = len(blocks)
    inter = [x for e, b in zip(arr.shape, blocks) for x in (e // b, b)]
    order = list(range(0, 2 * nd, 2)) + list(range(1, 2 * nd, 2))
    return np.ascontiguousarray(arr.reshape(inter).transpose(order))


_NOLOCK = contextlib.nullcontext()
_GROUP_BYTES = 4 * 2**20
_LAZY_BYTES = 2**20          # first guess of a reduced chunk's size (grown when short)
_LAZY_MIN = 2**17            # smaller chunks are read whole


def _pieces(loc: range, bsize: int, ids) -> list | None:
    """The positions `loc` of one dimension of a chunk, read from the blocks `ids`
    only, as ``(grid slice, in-block slice, output slice)`` products: one piece when
    a single block is touched, else (step 1 only) a partial first block, the whole
    blocks, and a partial last block.  None for the other cases."""
    if len(ids) == 1:
        s = loc.start - ids[0] * bsize
        return [(slice(0, 1), slice(s, s + (len(loc) - 1) * loc.step + 1, loc.step),
                 slice(0, len(loc)))]
    if loc.step != 1:
        return None
    n = len(ids)
    s = loc.start - ids[0] * bsize
    e = loc.stop - ids[-1] * bsize
    out, o, g0, g1 = [], 0, 0, n
    if s:
        out.append((slice(0, 1), slice(s, bsize), slice(0, bsize - s)))
        o, g0 = bsize - s, 1
    if e != bsize:
        g1 = n - 1
    if g1 > g0:
        out.append((slice(g0, g1), slice(0, bsize), slice(o, o + (g1 - g0) * bsize)))
        o += (g1 - g0) * bsize
    if e != bsize:
        out.append((slice(n - 1, n), slice(0, e), slice(o, o + e)))
    return out


def _as_index(idx: tuple):
    """A tuple of slices/arrays usable on an ndarray (open mesh when arrays appear)."""
    if all(isinstance(i, slice) for i in idx):
        return idx
    return np.ix_(*[np.arange(i.start, i.stop, i.step) if isinstance(i, slice) else i
                    for i in idx])


def stored_chunk(layout, frame, n: int, buf=None, partial=False):
    """Chunk `n` of `frame` as stored (into `buf` when given, see the frames' ``get``),
    its header checked against `layout` (:func:`ndpack.storage.validate.check_chunk`)."""
    return check_chunk(n, frame.get(n, buf, partial=partial), layout.chunk_nbytes,
                       layout.blocksize)


def _all_zero(data: np.ndarray) -> bool:
    """Whether the bytes `data` are all zero: the ends first (NumPy's ``any`` scans
    everything; a chunk stored uncompressed is rarely zeros)."""
    if data[:256].any() or data[-256:].any():
        return False
    return not data.any()


#: Whether slices cutting through every chunk they touch are read by one box plan in
#: the C core (False: chunk by chunk, the general path, which the tests also run).
BOX_SLICES = True


class ChunkIO:
    """The chunk-level reads and writes of one array: its layout and super-chunk.

    Parameters
    ----------
    layout : Layout
        The array's layout; an array that is resized points its ChunkIO to the new
        one (indexers holding the ChunkIO then see the new shape).
    schunk : SChunk
        The super-chunk holding the array's chunks.
    """

    __slots__ = ("layout", "schunk", "frame")

    def __init__(self, layout, schunk):
        self.layout = layout
        self.schunk = schunk
        self.frame = schunk.frame

    @property
    def nthreads(self) -> int:
        """Decoding threads of the array (``dparams.nthreads``)."""
        return self.schunk.dparams.nthreads

    # --- reading a selection -------------------------------------------------------------
    def read_ranges(self, ranges, out: np.ndarray, nthreads: int | None = None) -> None:
        """``out[...] = array[ranges]``: `ranges` one non-empty range per dimension,
        `out` of their lengths' shape and the array's dtype; `nthreads` decoding
        threads (default ``dparams.nthreads``; 1 on threads of a pool)."""
        if nthreads is None:
            nthreads = self.schunk.dparams.nthreads
        lazy = self.lazy_ok()
        if not lazy and self._box_pays(ranges, out):
            # one plan in the C core for the whole key (decode the touched blocks, each
            # up to its last wanted item, and gather): no Python per chunk.  (4-D
            # single-index slices in memory, AVX2 host: 1.3-2x less CPU than chunk by
            # chunk.)  Only where the chunks are at hand: read_box takes every touched
            # chunk before it starts.
            units = [np.arange(r.start, r.stop, r.step, dtype=np.int64) for r in ranges]
            if boxread.read_box(self, units, out):
                return
        parts = list(self.layout.parts(ranges))
        if lazy and len(parts) > 1:       # remote sources fetch the chunks' bytes at once
            self.frame.prefetch(parts, self.layout)
        if nthreads > 1 and len(parts) > 1:
            # chunks in parallel (reads, decoding and copies release the GIL), each
            # decoded by one thread; the output regions of the chunks are disjoint
            share(parts, lambda p: self.read_part(*p, out, 1, lazy), nthreads)
            return
        for n, dst, locs in parts:
            self.read_part(n, dst, locs, out, nthreads, lazy)

    def _box_pays(self, ranges, out) -> bool:
        """Whether a read of `ranges` into `out` goes through one box plan: several
        chunks, none read whole (those are decoded straight into `out`, no gather),
        increasing ranges, chunks in memory or mapped (not read from a file)."""
        lay = self.layout
        if not (BOX_SLICES and lay.ndim and out.flags.c_contiguous
                and out.dtype == lay.dtype and type(self.frame) is not SparseFrame):
            return False
        if any(r.step <= 0 for r in ranges):
            return False
        several = False
        whole_somewhere = True
        for r, c, s in zip(ranges, lay.chunks, lay.shape):
            if len(r) > c or r.start // c != (r.stop - 1) // c:
                several = True
            # a chunk along this dimension is covered whole by r
            first = -(-r.start // c) * c
            covered = r.step == 1 and first < r.stop and min(first + c, s) <= r.stop
            whole_somewhere = whole_somewhere and covered
        return several and not whole_somewhere

    @in_layout
    def read_part(self, n, dst, locs, out, nthreads, lazy):
        """Chunk `n`'s part of a read: the positions `locs` of the chunk into out[dst]."""
        lay = self.layout
        full = all(loc.start == 0 and loc.step == 1 and len(loc) == e
                   for loc, e in zip(locs, lay.ext_chunks))
        if full:
            bids = [range(g) for g in lay.bgrid]
            chunk, want = self._whole_chunk(n, lazy, fetch=True)
            if want is not None:
                view = out[dst + (Ellipsis,)]
                if lay.stored_c_order and view.flags.c_contiguous and len(chunk) > 32:
                    # checked while decoding: each block's bytes hashed, then decoded
                    checksums.decode_checked(self.frame, n, chunk, want, view, nthreads)
                    return
                chunk = checksums.checked(self.frame, n, chunk, want)
        else:
            bids = [[p[0] for p in dim_parts(loc, b)] for loc, b in zip(locs, lay.blocks)]
            chunk = None
            if lazy:
                chunk = self.lazy_chunk(n, lay.block_numbers(bids))
            if chunk is not None:                 # a reduced regular chunk
                if self._blocks_into(chunk, locs, bids, out[dst], nthreads):
                    return
            else:
                chunk = self._whole_chunk(n, lazy, partial=lay.block_numbers(bids))
        fill = lay.special_value(chunk)
        if fill is not None:
            out[dst] = fill
            return
        if full and lay.stored_c_order:
            view = out[dst + (Ellipsis,)]              # a view, even for 0-d
            if view.flags.c_contiguous:                # decode straight into the output
                decompress2(chunk, dst=view, nthreads=nthreads)
                return
        if not full and self._blocks_into(chunk, locs, bids, out[dst], nthreads):
            return
        pieces = [_pieces(loc, b, ids) for loc, b, ids in zip(locs, lay.blocks, bids)]
        if lay.ndim and None not in pieces:
            self._copy_pieces(self.decode_raw(chunk, bids, nthreads), bids, pieces, out[dst])
            return
        region = self.decode_blocks(chunk, bids, nthreads)
        idx = tuple(compact_index(loc, b, ids)
                    for loc, b, ids in zip(locs, lay.blocks, bids))
        out[dst] = region[_as_index(idx)]

    # --- stored chunks -------------------------------------------------------------------
    def _whole_chunk(self, n: int, lazy: bool, partial=False, fetch: bool = False):
        """Chunk `n` whole; from files (`lazy`) read into this thread's buffer, valid
        until its next read (fresh pages for every chunk would cost page faults).
        `partial`: only part of it will be decoded (see the frames' ``get``);
        `fetch`: ``(chunk, crc)``, not checked yet (see the frames' ``fetch``)."""
        buf = scratch(self.layout.chunk_nbytes + 64, "src") if lazy else None
        if fetch:
            data, want = self.frame.fetch(n, buf)
            try:
                data = check_chunk(n, data, self.layout.chunk_nbytes, self.layout.blocksize)
            except NdpackError:
                checksums.checked(self.frame, n, data, want)   # damaged: say so first
                raise
            return data, want
        return self.stored(n, buf, partial)

    def stored(self, n: int, buf=None, partial=False):
        """Chunk `n` as stored (into `buf` when given, see the frames' ``get``), its
        header checked against the layout (:func:`stored_chunk`)."""
        return stored_chunk(self.layout, self.frame, n, buf, partial)

    def lazy_ok(self) -> bool:
        """Whether chunks can be read block by block from the file (pread)."""
        fr = self.frame
        if type(fr) is not ContiguousFrame:
            return False
        return fr.reader.block_reads        # files and remote objects (storage/source.py)

    def lazy_chunk(self, n: int, numbers):
        """Chunk `n` of a contiguous file frame reduced to the blocks `numbers` (and
        block 0 when DELTA needs it), read from the file with positioned reads in the
        C core (:func:`ndpack.chunks.read_blocks_from_file`): a valid smaller chunk
        whose other blocks are never decoded.  None when a whole read is better (small
        chunk, many blocks) or the chunk is special, memcpyed or unexpected."""
        fr = self.frame
        nblocks = self.layout.nblocks
        if 2 * len(numbers) + 2 > nblocks or (fr.verify == "full" and fr.crcs is not None):
            return None                   # verify="full": whole chunks only, all checked
        numbers = np.asarray(numbers, np.int32)
        buf = scratch(_LAZY_BYTES)
        # a file opened read-only is never compacted: positioned reads need no lock
        with (_NOLOCK if getattr(fr, "readonly", False) else fr.lock):
            v = fr.offsets[n]
            entry = checksums.block_entry(fr, n)
            if v < 0 or (entry is False and self.layout.chunk_nbytes <= WHOLE_CHECK_BYTES):
                return None               # a chunk crc but no block ones: read it whole
            entry = entry or None
            rd, pos = fr.reader, fr.base + fr.header_len + int(v)
            try:                          # files and remote objects (storage/source.py)
                size, needed = rd.read_blocks(pos, nblocks, numbers, buf, _LAZY_MIN, entry)
                while needed:              # the block starts, then the spans, did not fit
                    buf = scratch(needed)
                    size, needed = rd.read_blocks(pos, nblocks, numbers, buf, _LAZY_MIN,
                                                  entry)
            except FormatError as exc:
                raise checksums.block_mismatch(fr, n, exc) from None
        return buf[:size] if size else None

    # --- decoding ------------------------------------------------------------------------
    @in_layout
    def decode_raw(self, chunk, bids, nthreads=None):
        """The blocks in the product of `bids` (per-dimension block ids), decoded one
        after another (C order of their grid)."""
        if nthreads is None:
            nthreads = self.schunk.dparams.nthreads
        lay = self.layout
        if prod(len(b) for b in bids) == lay.nblocks:
            nb = chunk_nbytes_of(chunk) if len(chunk) >= 16 else 0
            if nb <= 0:
                return decompress2(chunk, nthreads=nthreads)
            buf = scratch(nb, "dst")                    # consumed before the next call
            decompress2(chunk, dst=buf, nthreads=nthreads)
            return buf
        return decompress_blocks(chunk, lay.block_numbers(bids), nthreads=nthreads)

    def decode_blocks(self, chunk, bids, nthreads=None) -> np.ndarray:
        """Decode the blocks in the product of `bids` (per-dimension block ids)."""
        lay = self.layout
        return from_blocked(self.decode_raw(chunk, bids, nthreads), lay.dtype,
                            [len(b) for b in bids], lay.blocks)

    @in_layout
    def chunk_array(self, n: int, chunk=None) -> np.ndarray:
        """Chunk `n` (whose stored bytes are `chunk` when given) decoded into a
        writable array of the extended chunk shape."""
        if chunk is None:
            chunk = self.stored(n)
        lay = self.layout
        fill = lay.special_value(chunk)
        if fill is not None:
            arr = np.empty(lay.ext_chunks, lay.dtype)
            arr[...] = fill
            return arr
        return np.array(self.decode_blocks(chunk, [range(g) for g in lay.bgrid]))

    @in_layout
    def encode(self, arr: np.ndarray, nthreads: int | None = None) -> bytes:
        """A chunk from an array of the extended chunk shape (zeros -> special chunk),
        compressed by `nthreads` threads (default ``cparams.nthreads``)."""
        lay = self.layout
        cparams = self.schunk.cparams
        if nthreads is not None and nthreads != cparams.nthreads:
            cparams = dataclasses.replace(cparams, nthreads=nthreads)
        if lay.stored_c_order:
            data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        else:
            data = to_blocked(arr, lay.blocks).reshape(-1).view(np.uint8)
        chunk = compress2(data, cparams=cparams)
        # all zeros compress to (at most) the header, block starts and empty streams,
        # or are stored as they are (clevel 0, tiny chunks): check those chunks alone
        small = 64 + lay.nblocks * (8 + 4 * lay.typesize)
        if (len(chunk) <= small or len(chunk) >= len(data)) and _all_zero(data):
            return special_chunk(SpecialValue.ZERO, lay.chunk_nbytes, lay.typesize,
                                 lay.blocksize)
        return chunk

    # --- partial chunks ------------------------------------------------------------------
    @in_layout
    def _blocks_into(self, chunk, locs, bids, target, nthreads) -> bool:
        """Decode the blocks `bids` of a regular chunk and copy the positions `locs`
        into `target`, in groups of about _GROUP_BYTES decoded bytes (split along one
        dimension) so that each group is copied while it is still in the cache.
        False (nothing done) when the selection does not split into pieces."""
        if self._direct_into(chunk, locs, bids, target, nthreads):
            return True
        lay = self.layout
        blocks, nd = lay.blocks, lay.ndim
        pieces = [_pieces(loc, b, ids) for loc, b, ids in zip(locs, blocks, bids)]
        if not nd or None in pieces:
            return False
        if self._runs_into(chunk, pieces, bids, target):
            return True
        counts = [len(b) for b in bids]
        bs = lay.blocksize
        # the first dimension j whose inner dimensions fit a group, split in runs of m
        j = None if prod(counts) * bs <= _GROUP_BYTES else next(
            (d for d in range(nd)
             if prod(counts[d + 1:]) * bs <= max(_GROUP_BYTES, bs) and counts[d] > 1), None)
        if j is None:
            raw = self._decode_scratch(chunk, lay.block_numbers(bids), nthreads,
                                       self._needs(locs, bids))
            self._copy_pieces(raw, bids, pieces, target)
            return True
        m = max(1, _GROUP_BYTES // (prod(counts[:j]) * prod(counts[j + 1:]) * bs))
        parts = list(dim_parts(locs[j], blocks[j]))

        def group(r0: int, threads: int) -> None:
            run = parts[r0:r0 + m]
            k0, k1 = run[0][1], run[-1][2]
            sub_bids = list(bids)
            sub_bids[j] = [p[0] for p in run]
            sub_locs = list(locs)
            sub_locs[j] = locs[j][k0:k1]
            sub_pieces = list(pieces)
            sub_pieces[j] = _pieces(sub_locs[j], blocks[j], sub_bids[j])
            idx = [slice(None)] * nd
            idx[j] = slice(k0, k1)
            raw = self._decode_scratch(chunk, lay.block_numbers(sub_bids), threads,
                                       self._needs(sub_locs, sub_bids))
            self._copy_pieces(raw, sub_bids, sub_pieces, target[tuple(idx)])
        starts = range(0, counts[j], m)
        if nthreads > 1 and len(starts) > 1:
            # groups in parallel, each decoded and copied by one thread while in its
            # cache (one big chunk read whole or nearly: the copies are half the work)
            share(list(starts), lambda r0: group(r0, 1), nthreads)
            return True
        for r0 in starts:
            group(r0, nthreads)
        return True

    def _direct_into(self, chunk, locs, bids, target, nthreads) -> bool:
        """Decode the blocks `bids` straight into `target` when they are selected
        whole and land in it one after another, in stored order (e.g. ``a[i]`` or
        ``a[:, j]`` with blocks of one index along the indexed dimension): no scratch
        buffer, no copy.  False (nothing done) otherwise."""
        lay = self.layout
        nd, b = lay.ndim, lay.blocks
        if not nd or not target.flags.c_contiguous or not target.size:
            return False
        for loc, bs, ids in zip(locs, b, bids):
            if loc.step != 1 or loc.start != ids[0] * bs or len(loc) != len(ids) * bs:
                return False
        shape = target.shape
        m = next((d for d in range(nd) if b[d] > 1), nd)
        if any(b[e] != shape[e] for e in range(m + 1, nd)):
            return False                         # a block is not one run of target
        counts = [len(ids) for ids in bids]
        strides = [s // target.itemsize for s in target.strides]
        ks = np.indices(counts).reshape(nd, -1)   # blocks in stored (C) order
        starts = sum(ks[d] * (b[d] * strides[d]) for d in range(nd))
        if not np.array_equal(starts, np.arange(ks.shape[1]) * lay.block_items):
            return False
        decompress_blocks(chunk, lay.block_numbers(bids), nthreads=nthreads,
                          dst=target.reshape(-1).view(np.uint8))
        return True

    @in_layout
    def _runs_into(self, chunk, pieces, bids, target) -> bool:
        """When every touched block contributes the same small sub-box (e.g. one row
        for ``a[:, :, j]``, one column for ``a[..., j]``), read only its runs of C
        order (:func:`ndpack.chunks.getitems`: shuffled split blocks are not decoded
        whole, their compressed streams once per block) and copy them into `target`.
        False (nothing done) otherwise."""
        lay = self.layout
        nd, b = lay.ndim, lay.blocks
        if any(len(p) == 1 and p[0][1].step not in (None, 1) for p in pieces):
            return False
        # a dimension touching several blocks reads them whole along it (pieces of
        # several blocks are step-1 ranges), the others only their one sub-range
        inner = [p[0][1] if len(p) == 1 else slice(0, bd) for p, bd in zip(pieces, b)]
        ext = [sl.stop - sl.start for sl in inner]
        k = max((d for d in range(nd) if ext[d] < b[d]), default=None)
        if k is None:
            return False                               # whole blocks
        run = ext[k] * prod(b[k + 1:])
        nruns = prod(ext[:k])                          # runs per block, one per index
        if (2 if nruns == 1 else 4) * run * nruns > lay.block_items:
            # most of the block: decode it (one run of a third of each block, as
            # a[j] of (3, 5, 10, 20) blocks: 1.13 ms a chunk vs 1.65 decoding whole)
            return False
        if nruns > 1 and (16 * nruns * lay.dtype.itemsize > lay.block_items
                          or any(len(p) > 1 for p in pieces)):
            # many short runs cost more than decoding whole; several runs spanning
            # whole blocks end near the block's end (a[:, :, j] of (3, 5, 10, 20)
            # blocks: CPU 61 vs 48 ms decoding whole)
            return False
        # the runs' offsets in a block: the box's C order split at dimension k
        grid = np.zeros(1, np.int64)
        for d in range(k):
            grid = (grid[:, None] + (inner[d].start + np.arange(ext[d]))
                    * prod(b[d + 1:])).reshape(-1)
        offs = grid + inner[k].start * prod(b[k + 1:])
        numbers = np.asarray(lay.block_numbers(bids), np.int64)
        w = lay.dtype.itemsize // lay.typesize   # items over 255 bytes: header items
        starts = (numbers[:, None] * lay.block_items + offs).reshape(-1) * w   # are bytes
        counts = np.full(starts.size, run * w, np.int32)
        buf = scratch(starts.size * run * lay.dtype.itemsize, "dst")
        getitems(chunk, starts, counts, buf)
        # the runs are blocks of shape `ext`: one sub-range taken whole, or the pieces
        whole = [[(p[0][0], slice(0, e), p[0][2])] if len(p) == 1 else p
                 for p, e in zip(pieces, ext)]
        self._copy_pieces(buf, bids, whole, target, tuple(ext))
        return True

    @in_layout
    def _decode_scratch(self, chunk, numbers, nthreads, needs=None) -> np.ndarray:
        """Blocks `numbers` of `chunk` decoded into this thread's reused buffer (fresh
        pages would cost a page fault each); valid until the thread's next call.
        `needs`: the bytes wanted of each block (only those are decoded if the
        codec allows), None for all."""
        buf = scratch(len(numbers) * self.layout.blocksize, "dst")
        decompress_blocks(chunk, numbers, nthreads=nthreads, dst=buf, needs=needs)
        return buf

    def _needs(self, locs, bids):
        """Bytes wanted of each block in the product of `bids` (C order) for the
        positions `locs` (ranges), up to each block's last wanted item; None when
        no block would be decoded less than three quarters of the way (then whole)."""
        if any(loc.step <= 0 for loc in locs):
            return None
        lay = self.layout
        blocks = lay.blocks
        lasts = []                      # per dimension, the last wanted offset per block
        for loc, ids, b in zip(locs, bids, blocks):
            ids = np.asarray(ids, np.int64)
            end = np.minimum(ids * b + b - 1, loc[-1])
            lasts.append(loc.start + (end - loc.start) // loc.step * loc.step - ids * b)
        strides = [prod(blocks[d + 1:]) for d in range(lay.ndim)]
        if sum(int(last.min()) * st for last, st in zip(lasts, strides)) + 1 \
                > 0.75 * lay.block_items:
            return None
        # the last wanted item of each block in the product (C order), vectorized
        flat = np.zeros(1, np.int64)
        for last, st in zip(lasts, strides):
            flat = (flat[:, None] + last[None, :] * st).reshape(-1)
        return ((flat + 1) * lay.dtype.itemsize).tolist()

    def _copy_pieces(self, buf, bids, pieces, target, blocks=None):
        """Copy from decoded blocks (C-order grid of `bids` blocks, one after another,
        each of shape `blocks`, by default the array's) into `target` without first
        gathering the blocks into one array: seen as (count0, block0, count1, block1,
        ...) the blocks are a strided view, and each product of per-dimension pieces is
        one strided copy."""
        lay = self.layout
        nd = lay.ndim
        counts = tuple(len(b) for b in bids)
        shape = counts + (lay.blocks if blocks is None else blocks)
        grid = np.frombuffer(buf, dtype=lay.dtype, count=prod(shape)).reshape(shape)
        grid = grid.transpose([ax for d in range(nd) for ax in (d, nd + d)])
        for combo in itertools.product(*pieces):
            src = grid[tuple(x for p in combo for x in (p[0], p[1]))]
            dst = target[tuple(p[2] for p in combo)].view()
            dst.shape = src.shape                # splits axes: always a view
            dst[...] = src

    # --- one item ------------------------------------------------------------------------
    @in_layout
    def get_point(self, key):
        """A single item ``a[i, j, ...]`` (0-d array), decoding one block; None when
        the key is not a tuple of in-bounds integers."""
        lay = self.layout
        dtype = lay.dtype
        if not dtype.itemsize:
            return None
        flat_b = flat_i = 0
        n = 0
        for k, s, c, b, g, bg in zip(key, lay.shape, lay.chunks, lay.blocks, lay.grid,
                                     lay.bgrid):
            if type(k) is not int:
                if isinstance(k, (bool, np.bool_)) or not isinstance(k, np.integer):
                    return None
                k = int(k)
            if k < 0:
                k += s
            if not 0 <= k < s:
                return None
            q, r = divmod(k, c)
            n = n * g + q
            bq, br = divmod(r, b)
            flat_b = flat_b * bg + bq
            flat_i = flat_i * b + br
        chunk = None
        if self.lazy_ok():
            chunk = self.lazy_chunk(n, (flat_b,))
        out = np.empty((), dtype)
        fill = None
        if chunk is None:
            chunk = self.stored(n, partial=(flat_b,))
            fill = lay.special_value(chunk)
        if fill is not None:
            out[()] = fill
            return out
        w = dtype.itemsize // lay.typesize       # items over 255 bytes: header items
        getitems(chunk, [(flat_b * lay.block_items + flat_i) * w], [w], out)   # are bytes
        return out
