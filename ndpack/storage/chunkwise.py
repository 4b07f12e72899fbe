"""Fancy reads chunk by chunk in Python: the general path behind the C core's box and
point reads (:mod:`ndpack.storage.boxread`), taken by keys touching more blocks than
one plan holds and by points that also take slices of other dimensions.

Each touched chunk decodes only the blocks holding its positions (a run of positions
goes through the slice read path), each block only up to its last wanted item, and
NumPy gathers from the decoded blocks; chunks are shared between the calling thread
and the pool's (:func:`~ndpack.storage.workspace.share`).  The per-chunk geometry
(:func:`box_parts`, :func:`point_parts`, :func:`point_index`) also serves writes.
The functions take the array's :class:`~ndpack.storage.ndread.ChunkIO` (its layout
and super-chunk) or, for geometry only, its :class:`~ndpack.storage.layout.Layout`.
"""

from __future__ import annotations

import itertools

import numpy as np

from ndpack.chunks import decompress_blocks, in_layout
from ndpack.storage.grid import prod
from ndpack.resources import scratch
from ndpack.storage.workspace import share


def _distinct(q: np.ndarray) -> np.ndarray:
    """The distinct values of sorted `q` (np.unique without its sort or hash)."""
    if q.size < 2:
        return q
    return q[np.concatenate(([True], q[1:] != q[:-1]))]


def _groups(u: np.ndarray, c: int):
    """Split sorted positions `u` by cells of size `c`: yield (cell, k0, k1)."""
    if not len(u):
        return
    cells = u // c
    cuts = np.flatnonzero(np.diff(cells)) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(u)]))
    for k0, k1 in zip(starts.tolist(), ends.tolist()):
        yield int(cells[k0]), k0, k1


def _fetch(io, n, numbers):
    """Chunk `n` (reduced to the blocks `numbers` when read from a file) and the
    scalar it stands for when special (else None)."""
    chunk = io.lazy_chunk(n, numbers) if io.lazy_ok() else None
    if chunk is not None:
        return chunk, None
    chunk = io.stored(n, partial=numbers)
    return chunk, io.layout.special_value(chunk)


def _run(io, tasks):
    """Run the per-chunk `tasks` (disjoint outputs), in parallel when allowed: the
    caller and the pool's threads take them from one list (:func:`share`)."""
    nthreads = io.nthreads
    if nthreads > 1 and len(tasks) > 1:
        share(tasks, lambda t: t(1), nthreads)
    else:
        for t in tasks:
            t(nthreads)


def box_parts(layout, units):
    """Yield (nchunk, per-dim local positions, per-dim compact slices) of a box."""
    chunks = layout.chunks
    per_dim = [list(_groups(u, c)) for u, c in zip(units, chunks)]
    for combo in itertools.product(*per_dim):
        n = layout.chunk_number([g[0] for g in combo])
        locs = [units[d][g[1]:g[2]] - g[0] * chunks[d] for d, g in enumerate(combo)]
        yield n, locs, tuple(slice(g[1], g[2]) for g in combo)


def read_box(io, units, out):
    """``out[...] = array`` at the box of sorted positions `units` (one per dimension),
    chunk by chunk."""
    tasks = []
    for n, locs, dst in box_parts(io.layout, units):
        runs = [len(loc) and int(loc[-1]) - int(loc[0]) == len(loc) - 1 for loc in locs]
        if all(runs):                              # a sub-box: the slice read path
            rng = [range(int(loc[0]), int(loc[-1]) + 1) for loc in locs]
            tasks.append(lambda nt, n=n, dst=dst, rng=rng:
                         io.read_part(n, dst, rng, out, nt, io.lazy_ok()))
        else:
            tasks.append(lambda nt, n=n, dst=dst, locs=locs:
                         _gather_box(io, n, locs, out, dst, nt))
    _run(io, tasks)


def _box_needs(layout, locs, bids):
    """Bytes wanted of each block in the product of `bids` (C order) for the sorted
    local positions `locs`: up to the block's last wanted item in C order, the item
    at the largest wanted position along every dimension."""
    blocks = layout.blocks
    strides = [prod(blocks[d + 1:]) for d in range(len(locs))]
    need = np.zeros(1, np.int64)
    for loc, bd, b, st in zip(locs, bids, blocks, strides):
        last = loc[np.searchsorted(loc // b, bd, side="right") - 1] - bd * b
        need = (need[:, None] + last * st).reshape(-1)
    return (need + 1) * layout.dtype.itemsize


@in_layout
def _blocked(io, chunk, bids, numbers, nthreads, needs=None):
    """Decode the blocks in the product of `bids` (their numbers: `numbers`) of a
    regular chunk and view them as ``(count0, block0, count1, block1, ...)`` (no
    copy).  `needs`: the bytes wanted of each block (the rest is left undefined)."""
    lay = io.layout
    counts = tuple(len(b) for b in bids)
    if needs is not None and int(needs.min()) >= lay.blocksize:
        needs = None
    if needs is None and prod(counts) == lay.nblocks:
        raw = io.decode_raw(chunk, bids, nthreads)
    else:                                  # into a reused buffer: no page faults
        raw = scratch(prod(counts) * lay.blocksize, "dst")
        decompress_blocks(chunk, numbers, nthreads=nthreads, dst=raw, needs=needs)
    nd = len(counts)
    view = np.frombuffer(raw, lay.dtype, prod(counts) * lay.block_items).reshape(
        counts + lay.blocks)
    return view.transpose([ax for d in range(nd) for ax in (d, nd + d)])


@in_layout
def _gather_box(io, n, locs, out, dst, nthreads):
    lay = io.layout
    blocks = lay.blocks
    bids = [_distinct(loc // b) for loc, b in zip(locs, blocks)]   # (sorted units)
    numbers = lay.block_numbers(bids)
    chunk, fill = _fetch(io, n, numbers)
    if fill is not None:
        out[dst] = fill
        return
    view = _blocked(io, chunk, bids, numbers, nthreads, _box_needs(lay, locs, bids))
    target = out[dst]
    # dimensions whose positions are all the items of the decoded blocks: slices
    picks = [d for d, (loc, bd, b) in enumerate(zip(locs, bids, blocks))
             if len(loc) != len(bd) * b]
    key = []
    if len(picks) <= 1:                        # one advanced pair: axes stay in order
        for d, (loc, bd, b) in enumerate(zip(locs, bids, blocks)):
            key += [np.searchsorted(bd, loc // b), loc % b] if d in picks \
                else [slice(None), slice(None)]
        target[...] = view[tuple(key)].reshape(target.shape)
        return
    nd = len(locs)
    for d, (loc, bd, b) in enumerate(zip(locs, bids, blocks)):
        shp = [1] * nd
        shp[d] = -1
        key += [np.searchsorted(bd, loc // b).reshape(shp), (loc % b).reshape(shp)]
    target[...] = view[tuple(key)]


def read_points(io, plan, out):
    """``out[q, ...]``: point q of `plan` by the other dimensions' positions, chunk
    by chunk."""
    tasks = []
    for n, sel, locs, odst in point_parts(io.layout, plan):
        tasks.append(lambda nt, n=n, sel=sel, locs=locs, odst=odst:
                     _gather_points(io, plan, n, sel, locs, odst, out, nt))
    _run(io, tasks)


def point_parts(layout, plan):
    """Yield (nchunk, point indices, per-dim local positions, compact slices of the
    other dimensions) for every chunk the points touch."""
    adv, others, chunks = plan.adv, plan.others, layout.chunks
    coords = plan.coords
    if not len(coords[0]):
        return
    cc = [coords[i] // chunks[d] for i, d in enumerate(adv)]
    glin = np.ravel_multi_index(cc, [layout.grid[d] for d in adv])
    order = np.argsort(glin, kind="stable")
    gs = glin[order]
    cuts = np.flatnonzero(np.diff(gs)) + 1
    other_parts = [list(_groups(plan.units[d], chunks[d])) for d in others]
    for k0, k1 in zip(np.concatenate(([0], cuts)).tolist(),
                      np.concatenate((cuts, [len(gs)])).tolist()):
        sel = order[k0:k1]
        ccoord = {d: int(cc[i][sel[0]]) for i, d in enumerate(adv)}
        for combo in itertools.product(*other_parts):
            gc = dict(ccoord)
            locs = {}
            for d, g in zip(others, combo):
                gc[d] = g[0]
                locs[d] = plan.units[d][g[1]:g[2]] - g[0] * chunks[d]
            for i, d in enumerate(adv):
                locs[d] = coords[i][sel] - gc[d] * chunks[d]
            n = layout.chunk_number([gc[d] for d in range(layout.ndim)])
            yield n, sel, [locs[d] for d in range(layout.ndim)], \
                tuple(slice(g[1], g[2]) for g in combo)


def point_index(plan, locs):
    """An index of all arrays that gathers (q, others...) from a chunk-like array."""
    src = locs
    no = len(plan.others)
    key = []
    j = 0
    for d in range(len(locs)):
        if d in plan.adv:
            key.append(src[d].reshape((-1,) + (1,) * no))
        else:
            shp = [1] * (no + 1)
            shp[1 + j] = -1
            key.append(src[d].reshape(shp))
            j += 1
    return tuple(key)


@in_layout
def _gather_points(io, plan, n, sel, locs, odst, out, nthreads):
    lay = io.layout
    blocks = lay.blocks
    if not plan.others:                            # exactly the blocks holding points
        bcoord = [loc // b for loc, b in zip(locs, blocks)]
        bnum = np.ravel_multi_index(bcoord, lay.bgrid) if lay.ndim else np.zeros(1, int)
        ub, binv = np.unique(bnum, return_inverse=True)
        chunk, fill = _fetch(io, n, ub.tolist())
        if fill is not None:
            out[sel] = fill
            return
        off = np.ravel_multi_index([loc % b for loc, b in zip(locs, blocks)], blocks)
        needs = np.zeros(len(ub), np.int64)
        np.maximum.at(needs, binv, off)
        raw = scratch(len(ub) * lay.blocksize, "dst")
        decompress_blocks(chunk, ub.tolist(), nthreads=nthreads, dst=raw,
                          needs=((needs + 1) * lay.dtype.itemsize).tolist())
        vals = np.frombuffer(raw, lay.dtype).reshape(len(ub), lay.block_items)
        out[sel] = vals[binv, off]
        return
    bids = [np.unique(loc // b) for loc, b in zip(locs, blocks)]
    numbers = lay.block_numbers(bids)
    chunk, fill = _fetch(io, n, numbers)
    dst = (sel,) + odst
    if fill is not None:
        out[dst] = fill
        return
    needs = _box_needs(lay, [np.sort(loc) for loc in locs], bids)   # (an upper bound)
    view = _blocked(io, chunk, bids, numbers, nthreads, needs)
    bpos = point_index(plan, [np.searchsorted(bd, loc // b)
                               for loc, bd, b in zip(locs, bids, blocks)])
    ipos = point_index(plan, [loc % b for loc, b in zip(locs, blocks)])
    out[dst] = view[tuple(x for pair in zip(bpos, ipos) for x in pair)]
