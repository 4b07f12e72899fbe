"""Small orthogonal reads in one plan: every touched block of every touched chunk is
decoded (only up to its last wanted item) into one buffer, then a single take
gathers the box.

The per-chunk path of :mod:`ndpack.storage.fancy` pays a few dozen NumPy calls for
each chunk; when the whole read is small (``a[1:9, col]``, ``a[1, col]``, a few
rows), that bookkeeping costs more than decoding.  Here it is done once for the
whole key, with arrays over the distinct *global blocks* of each dimension:

- along dimension d a sorted position u lies in chunk ``u // chunks[d]``, block
  ``(u % chunks[d]) // blocks[d]`` of that chunk, at offset ``u % chunks[d] %
  blocks[d]`` of that block; (chunk, block) pairs sorted and made distinct are the
  dimension's global blocks;
- the touched blocks are the product of the global blocks of every dimension; they
  get buffer slots chunk after chunk (C order of the chunk grid), blocks in C order
  inside each chunk, so that each chunk's blocks are one run of slots: one
  :func:`~ndpack.chunks.decompress_blocks` call per chunk;
- item ``(i0, i1, ...)`` of the box is at ``slot * block_items + sum(offset_d *
  block_stride_d)`` of the buffer.
"""

from __future__ import annotations

from math import prod

import numpy as np

from ndpack.chunks import decompress_blocks
from ndpack.storage.ndread import _scratch

#: Largest buffer of decoded blocks read in one plan (bytes); larger reads go chunk
#: by chunk, where the bookkeeping is small next to the decoding.
MAX_BYTES = 8 << 20


def _axis(a: np.ndarray, d: int, nd: int) -> np.ndarray:
    """`a` as an array varying along axis d of nd (for broadcasting)."""
    shp = [1] * nd
    shp[d] = a.size
    return a.reshape(shp)


class _Dim:
    """The global blocks that sorted positions `u` touch along one dimension."""

    def __init__(self, u: np.ndarray, chunk: int, block: int, bgrid: int):
        c = u // chunk
        w = u - c * chunk
        b = w // block
        self.off = w - b * block                    # offset in its block, per position
        key = c * bgrid + b
        new = np.empty(key.size, bool)
        new[0] = True
        np.not_equal(key[1:], key[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        self.inv = np.cumsum(new) - 1               # global block of each position
        dk = key[starts]
        ends = np.append(starts[1:], key.size)
        self.last = self.off[ends - 1]              # last wanted offset per global block
        self.cc = dk // bgrid                       # chunk coordinate per global block
        self.bb = dk - self.cc * bgrid              # block coordinate in its chunk
        cnew = np.empty(dk.size, bool)
        cnew[0] = True
        np.not_equal(self.cc[1:], self.cc[:-1], out=cnew[1:])
        cstarts = np.flatnonzero(cnew)
        self.chunks = self.cc[cstarts]              # distinct chunk coordinates
        self.group = np.cumsum(cnew) - 1            # their index, per global block
        self.rank = np.arange(dk.size) - cstarts[self.group]   # rank in its chunk
        self.count = np.diff(np.append(cstarts, dk.size))      # global blocks per chunk


def read_box(arr, units, out: np.ndarray, run, fetch) -> bool:
    """``out[...] = arr`` at the box of sorted distinct positions `units` (one array
    per dimension) when the touched blocks fit in :data:`MAX_BYTES`; False (nothing
    done) otherwise.  `run(tasks)` runs the per-chunk decodes (each a function of
    the thread count) and `fetch(arr, n, numbers)` gives chunk n (and the scalar it
    stands for when special), as on the chunk-by-chunk path."""
    nd = arr.ndim
    if nd == 0 or out.size == 0 or not out.flags.c_contiguous:
        return False
    bitems = prod(arr._blocks)
    # at least ceil(len(u) / block) distinct blocks along each dimension
    if prod(-(-len(u) // b) for u, b in zip(units, arr._blocks)) * arr._blocksize > MAX_BYTES:
        return False                             # (clearly large: no arrays built)
    dims = [_Dim(u, c, b, g) for u, c, b, g in
            zip(units, arr._chunks, arr._blocks, arr._bgrid)]
    nslots = prod(len(d.cc) for d in dims)
    if nslots * arr._blocksize > MAX_BYTES:
        return False
    # slots: chunk after chunk, blocks in C order inside each chunk
    mcount = np.ones((), np.int64)
    for d in dims:
        mcount = np.multiply.outer(mcount, d.count)
    base = np.concatenate(([0], np.cumsum(mcount.ravel())[:-1])).reshape(mcount.shape)
    slot = base[np.ix_(*[d.group for d in dims])]
    stride = np.ones((), np.int64)
    for k in range(nd - 1, -1, -1):
        d = dims[k]
        slot = slot + _axis(d.rank, k, nd) * stride
        stride = stride * _axis(d.count[d.group], k, nd)
    number = np.zeros((), np.int64)                 # block numbers in their chunk
    need = np.zeros((), np.int64)                   # last wanted item of each block
    for k, d in enumerate(dims):
        number = number + _axis(d.bb, k, nd) * prod(arr._bgrid[k + 1:])
        need = need + _axis(d.last, k, nd) * prod(arr._blocks[k + 1:])
    flat = slot.ravel()
    numbers = np.empty(nslots, np.int32)
    numbers[flat] = np.broadcast_to(number, slot.shape).ravel()
    needs = np.empty(nslots, np.int64)
    needs[flat] = (np.broadcast_to(need, slot.shape).ravel() + 1) * arr.dtype.itemsize

    buf = _scratch(nslots * arr._blocksize, "box")
    items = np.frombuffer(buf, arr.dtype, nslots * bitems)
    tasks = []
    grid_chunks = np.ix_(*[d.chunks for d in dims])
    cnum = np.zeros((), np.int64)
    for k, g in enumerate(grid_chunks):
        cnum = cnum * arr._grid[k] + g
    ends = (base + mcount).ravel().tolist()
    for n, s0, s1 in zip(cnum.ravel().tolist(), base.ravel().tolist(), ends):
        tasks.append(lambda nt, n=n, s0=s0, s1=s1: _decode(
            arr, fetch, n, numbers[s0:s1], needs[s0:s1], buf, items, s0, s1, nt))
    run(tasks)
    index = slot[np.ix_(*[d.inv for d in dims])] * bitems
    for k, d in enumerate(dims):
        index += _axis(d.off * prod(arr._blocks[k + 1:]), k, nd)
    np.take(items, index, out=out)
    return True


def _decode(arr, fetch, n, numbers, needs, buf, items, s0, s1, nthreads):
    """Blocks `numbers` of chunk n (their first `needs` bytes) into slots [s0, s1)."""
    nums = numbers.tolist()
    chunk, fill = fetch(arr, n, nums)
    if fill is not None:
        items[s0 * prod(arr._blocks):s1 * prod(arr._blocks)] = fill
        return
    bs = arr._blocksize
    decompress_blocks(chunk, nums, nthreads=nthreads,
                      dst=buf[s0 * bs:s1 * bs], needs=needs.tolist())
