"""Fancy indexing of NDArray: integer arrays, boolean masks, ``oindex`` and ``vindex``.

Keys follow NumPy's rules (normalized by ``ndindex``).  Two read plans, both decoding
each touched block once however many indices fall in it, and only up to its last
wanted item:

* **orthogonal**: the sorted distinct positions of every dimension form a compact
  box (``a[row]``, ``a[1:9, col]``, ``a[row[:, None], col]``, ``oindex``); the C core
  decodes the blocks of the box and gathers the result, with repeated and unsorted
  indices as output maps (:meth:`_Plan.direct`); other keys get the box and NumPy
  indexes it with the key remapped to box positions, so its semantics come for free.
* **points**: when the box would be much larger than the result (``a[row, col]``,
  full-shape masks), the C core sorts the distinct points by (chunk, block) and
  decodes exactly the blocks they fall in.

Both go through :mod:`ndpack.storage.boxread`; keys too large for one plan, and
points that also take slices of other dimensions, are read chunk by chunk in Python
(:mod:`ndpack.storage.chunkwise`).  Writes use the same plans: the values are
scattered into the compact form (NumPy's rules for repeated indices: the last one
wins), and each touched chunk is patched and re-encoded once (only its touched
blocks when few are).  The entry points take the array's
:class:`~ndpack.storage.ndread.ChunkIO` (its layout and super-chunk).

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> a = asarray(np.arange(20).reshape(4, 5), chunks=(2, 2), blocks=(1, 2))
>>> a[[3, 0, 3], 1:3].tolist()
[[16, 17], [1, 2], [16, 17]]
>>> a[[0, 3], [4, 0]].tolist()
[4, 15]
>>> a.oindex[[0, 3], [4, 0]].tolist()
[[4, 0], [19, 15]]
>>> a[a[:] % 7 == 0] = -1
>>> a[0].tolist(), a[1].tolist()
([-1, 1, 2, 3, 4], [5, 6, -1, 8, 9])
"""

from __future__ import annotations

import operator

import numpy as np

from ndpack.chunks import decompress_blocks, in_layout, patch_blocks
from ndpack.storage import boxread, chunkwise
from ndpack.storage.grid import prod
from ndpack.storage.workspace import pool

__all__ = ["OIndex", "VIndex", "fancy_get", "fancy_set", "is_fancy"]

# the box of the orthogonal plan may hold this many times the result (plus a constant)
# before the points plan is used
_BOX_FACTOR = 4
_BOX_SLACK = 1 << 16


def is_fancy(key) -> bool:
    """Whether `key` holds integer/boolean arrays, lists or booleans (NumPy's
    advanced indexing)."""
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if isinstance(k, (list, np.ndarray, bool, np.bool_)) or \
                (isinstance(k, tuple) and isinstance(key, tuple)):
            return True
        if hasattr(k, "shape") and hasattr(k, "dtype") and not np.isscalar(k):
            return True                       # NDArray, h5py/zarr arrays as indices
    return False


def _plain_key(key):
    """Array-likes (NDArray, ...) in `key` as NumPy arrays, for ndindex."""
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for k in items:
        if isinstance(k, (list, tuple)):
            k = np.asarray(k)
            if k.size == 0 and k.dtype == np.float64:
                k = k.astype(np.intp)          # NumPy's rule for [] as an index
        elif not isinstance(k, (np.ndarray, slice, int, np.integer, bool, np.bool_)) \
                and k is not None and k is not Ellipsis and hasattr(k, "shape"):
            k = np.asarray(k[()] if hasattr(k, "__getitem__") else k)
        if isinstance(k, np.ndarray) and k.dtype.kind not in "biu":
            raise IndexError("arrays used as indices must be of integer (or boolean) "
                             f"type, not {k.dtype}")
        out.append(k)
    return tuple(out)


class _El:
    """One element of an expanded key: `kind` is 'Integer', 'Slice', 'IntegerArray',
    'Newaxis' or 'BooleanArray' (a boolean scalar), `raw` its NumPy form."""

    __slots__ = ("kind", "raw")

    def __init__(self, kind, raw):
        self.kind, self.raw = kind, raw

    @property
    def shape(self):
        return np.shape(self.raw)


def _in_bounds(k: np.ndarray, n: int, axis: int) -> np.ndarray:
    """Integer array `k` indexing an axis of `n` items, as non-negative intp positions
    (NumPy's error when one is out of bounds)."""
    if k.size:
        lo, hi = int(k.min()), int(k.max())
        if lo < -n or hi >= n:
            raise IndexError(f"index {lo if lo < -n else hi} is out of bounds for axis "
                             f"{axis} with size {n}")
        k = k.astype(np.intp, copy=False)
        return k + n * (k < 0) if lo < 0 else k
    return k.astype(np.intp)


def _expand(key, shape) -> list:
    """The key as a list of :class:`_El`, one per dimension plus newaxes and boolean
    scalars: Ellipsis expanded, slices and integers normalized and bounds-checked by
    ndindex, masks as integer arrays (their nonzero positions), arrays broadcast
    together and integers as arrays when arrays are present (NumPy's rules)."""
    import ndindex

    items = list(_plain_key(key))
    nd = len(shape)

    def width(k):
        if k is None or k is Ellipsis or isinstance(k, (bool, np.bool_)):
            return 0
        if isinstance(k, np.ndarray) and k.dtype == bool:
            return k.ndim
        return 1

    ell = [j for j, k in enumerate(items) if k is Ellipsis]
    if len(ell) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(width(k) for k in items)
    if used > nd:
        raise IndexError(f"too many indices for array: array is {nd}-dimensional, but "
                         f"{used} were indexed")
    fill = [slice(None)] * (nd - used)
    if ell:
        items[ell[0]:ell[0] + 1] = fill
    else:
        items += fill
    out, d = [], 0
    for k in items:
        if k is None:
            out.append(_El("Newaxis", None))
            continue
        if isinstance(k, (bool, np.bool_)) or (isinstance(k, np.ndarray) and k.ndim == 0
                                               and k.dtype == bool):
            out.append(_El("BooleanArray", np.bool_(k)))
            continue
        w = width(k)
        if isinstance(k, np.ndarray) and k.dtype.kind in "iu":    # the common case, fast
            out.append(_El("IntegerArray", _in_bounds(k, shape[d], d)))
            d += 1
            continue
        sub = shape[d:d + w]
        try:
            e = ndindex.ndindex(k).reduce(sub if w else (shape[d],))
        except IndexError:
            raise
        except (TypeError, ValueError) as exc:
            raise IndexError(str(exc)) from None
        name = type(e).__name__
        if name == "BooleanArray":
            out += [_El("IntegerArray", np.asarray(a, np.intp)) for a in np.nonzero(e.raw)]
        elif name == "IntegerArray":
            out.append(_El("IntegerArray", np.asarray(e.raw, np.intp) % max(shape[d], 1)))
        elif name == "Integer":
            out.append(_El("Integer", int(e.raw) % shape[d]))
        else:
            out.append(_El("Slice", e.raw))
        d += w
    arrays = [e for e in out if e.kind == "IntegerArray"]
    if arrays:
        try:
            bshape = np.broadcast_shapes(*[e.shape for e in arrays])
        except ValueError:
            raise IndexError("shape mismatch: indexing arrays could not be broadcast "
                             f"together with shapes {[e.shape for e in arrays]}") from None
        for e in out:
            if e.kind == "Integer":
                e.kind, e.raw = "IntegerArray", np.array(e.raw, np.intp)
            if e.kind == "IntegerArray":
                e.raw = np.broadcast_to(e.raw, bshape)
    return out


class _Plan:
    """How a fancy key maps the array to the result.

    ``ortho``: ``units[d]`` (sorted distinct positions per dimension) form a box and
    ``box[kmap]`` is the result.  Points: ``coords`` (distinct points of the
    advanced dimensions ``adv``) and ``units`` of the other dimensions form a
    compact array of shape ``(Q, len(units[s]) ...)``; ``compact[kmap]`` then
    ``moveaxis`` of the ``nb`` broadcast dimensions to ``pos`` is the result.
    """

    def __init__(self, layout, elems, front=False, force_ortho=False):
        shape = layout.shape
        self.shape = shape
        kinds = [e.kind for e in elems]
        adv_el = [i for i, k in enumerate(kinds) if k == "IntegerArray"]
        has_bool = "BooleanArray" in kinds
        self.bshape = elems[adv_el[0]].shape if adv_el else ()
        self.nb = len(self.bshape)
        adjacent = bool(adv_el) and adv_el[-1] - adv_el[0] == len(adv_el) - 1
        self.adjacent = adjacent
        self.pos = sum(k in ("Slice", "Newaxis") for k in kinds[:adv_el[0]]) if adv_el else 0
        # NumPy puts the broadcast dimensions in place when the arrays are adjacent,
        # first otherwise; vindex always first
        self.move = adjacent and front and self.pos > 0
        dims = []                                  # (element, dimension) pairs
        d = 0
        for e, k in zip(elems, kinds):
            if k in ("Newaxis", "BooleanArray"):
                dims.append((e, None))
            else:
                dims.append((e, d))
                d += 1
        units, kmap, self.adv, box = [None] * len(shape), [], [], 1
        for e, d in dims:
            if d is None:
                kmap.append(None if e.kind == "Newaxis" else e.raw)
                continue
            n = shape[d]
            k = e.kind
            if k == "Integer":
                units[d] = np.array([e.raw], np.intp)
                kmap.append(0)
            elif k == "Slice":
                r = range(n)[e.raw]
                rev = r.step < 0
                units[d] = np.arange(r[-1], r[0] + 1, -r.step, dtype=np.intp) if rev \
                    else np.arange(r.start, r.stop, r.step, dtype=np.intp)
                kmap.append(slice(None, None, -1) if rev else slice(None))
            else:
                a = np.asarray(e.raw, dtype=np.intp)
                u, inv = np.unique(a, return_inverse=True)
                units[d] = u
                kmap.append(inv.reshape(a.shape))
                self.adv.append(d)
            box *= len(units[d])
        self.units = units
        out_size = prod(self.bshape) * prod(len(units[d]) for d in range(len(shape))
                                            if d not in self.adv)
        self.ortho = (force_ortho or has_bool or len(self.adv) < 2
                      or box <= _BOX_FACTOR * out_size + _BOX_SLACK)
        if self.ortho:
            self.kmap = tuple(kmap)
            self.cshape = tuple(len(u) for u in units)
            return
        # points: the distinct points of the advanced dimensions
        sub = [shape[d] for d in self.adv]
        arrays = [np.broadcast_to(np.asarray(elems[i].raw, np.intp), self.bshape).ravel()
                  for i in adv_el]
        lin = np.ravel_multi_index(arrays, sub) if arrays[0].size else np.zeros(0, np.intp)
        uq, inv = np.unique(lin, return_inverse=True)
        self.coords = np.unravel_index(uq, sub) if len(sub) else ()
        km = [inv.reshape(self.bshape)]
        for (e, d), k in zip(dims, kmap):
            if d is None or d not in self.adv:
                km.append(k)
        self.kmap = tuple(km)
        self.others = [d for d in range(len(shape)) if d not in self.adv]
        self.cshape = (len(uq),) + tuple(len(units[d]) for d in self.others)
        # points put the broadcast dimensions first: move them in place if adjacent
        self.move = adjacent and not front and self.pos > 0

    def direct(self):
        """``(maps, shape)`` when this orthogonal plan's result is its box with positions
        repeated or reordered along each dimension (at most one dimension takes several
        positions from an array; the others slices, integers, newaxes): the C core then
        writes the result in place, ``maps[d]`` giving the positions (indices into
        ``units[d]``; None: all in order) and `shape` the result's shape.  None when the
        result needs NumPy's rearrangement of the compact box."""
        if self.move or (len(self.adv) > 1 and not self.adjacent):
            return None
        vary = [d for d in self.adv if len(self.units[d]) > 1]
        if len(vary) > 1:
            return None
        lead = vary[0] if vary else (self.adv[0] if self.adv else None)
        maps, shape, d = [], [], 0
        for k in self.kmap:
            if k is None:                                  # newaxis
                shape.append(1)
                continue
            if isinstance(k, (bool, np.bool_)):            # a boolean scalar
                return None
            if isinstance(k, slice):
                n = len(self.units[d])
                maps.append(None if k.step is None
                            else np.arange(n - 1, -1, -1, dtype=np.int64))
                shape.append(n)
            elif isinstance(k, np.ndarray) and d == lead:
                maps.append(np.ascontiguousarray(k, np.int64).reshape(-1))
                shape.extend(k.shape)
            else:                                          # one position, no dimension
                maps.append(None)
            d += 1
        return maps, tuple(shape)

    def finish(self, compact: np.ndarray) -> np.ndarray:
        res = compact[self.kmap]
        if self.move:
            src, dst = list(range(self.nb)), list(range(self.pos, self.pos + self.nb))
            if self.ortho:                         # vindex on the orthogonal plan
                src, dst = dst, src
            res = np.moveaxis(res, src, dst)
        return res


def flat_true(mask: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(mask)`` of a boolean array, scanning 8 items at a time first: a
    sparse mask costs one pass over 8-byte words and a look at the few nonzero ones
    (a dense mask falls back to the plain scan).

    >>> m = np.zeros(10000, bool); m[[3, 4, 9998]] = True
    >>> flat_true(m).tolist()
    [3, 4, 9998]
    """
    m = np.ascontiguousarray(mask).reshape(-1).view(np.uint8)
    n8 = m.size - m.size % 8
    if n8 < 4096:
        return np.flatnonzero(m)
    words = np.flatnonzero(m[:n8].view(np.uint64) != 0)  # (bool nonzero: the fast one)
    if 8 * words.size > m.size // 4:
        return np.flatnonzero(m)
    r, c = np.nonzero(m[:n8].reshape(-1, 8)[words])
    lin = words[r] * 8 + c
    tail = np.flatnonzero(m[n8:])
    return np.concatenate([lin, tail + n8]) if tail.size else lin


class _MaskPlan(_Plan):
    """A full-shape boolean mask: its items in C order are the (sorted, distinct)
    points (no nonzero per dimension, no ndindex pass over the mask)."""

    def __init__(self, layout, mask):
        lin = flat_true(mask)
        self.shape, self.ortho, self.move = layout.shape, False, False
        self.adv, self.others = list(range(layout.ndim)), []
        self.coords = np.unravel_index(lin, layout.shape)
        self.units = [None] * layout.ndim
        self.cshape = (len(lin),)
        self.kmap = (slice(None),)

    def finish(self, compact):
        return compact[self.kmap]


# ---------------------------------------------------------------------------------------
# reads: the C core's plans, else chunk by chunk


def _read_box(io, units, out):
    """``out[...] = array`` at the box of sorted positions `units` (one per dimension)."""
    if not boxread.read_box(io, units, out):
        chunkwise.read_box(io, units, out)


def _read_points(io, plan, out):
    """``out[q, ...]``: point q of `plan` by the other dimensions' positions."""
    if not plan.others and io.layout.ndim and boxread.POINTS_IN_C:
        boxread.read_points(io, plan.coords, out)         # points alone: in the C core
    else:
        chunkwise.read_points(io, plan, out)


# ---------------------------------------------------------------------------------------
# entry points


def _make_plan(layout, key, front):
    key = _plain_key(key)
    k = key[0] if len(key) == 1 else None
    if isinstance(k, np.ndarray) and k.dtype == bool and k.shape == layout.shape and k.ndim:
        return _MaskPlan(layout, k)
    return _Plan(layout, _expand(key, layout.shape), front=front)


def fancy_get(io, key, front=False) -> np.ndarray:
    """``array[key]`` for a fancy key (``front``: broadcast dimensions first, vindex)."""
    return _get(io, _make_plan(io.layout, key, front))


def _get(io, plan) -> np.ndarray:
    dtype = io.layout.dtype
    direct = plan.direct() if plan.ortho else None
    if direct is not None:
        out = np.empty(direct[1], dtype)
        if out.size == 0 or boxread.read_box(io, plan.units, out, direct[0]):
            return out
    compact = np.empty(plan.cshape, dtype)
    if compact.size:
        if plan.ortho:
            _read_box(io, plan.units, compact)
        else:
            _read_points(io, plan, compact)
    return plan.finish(compact)


def _scatter_values(dtype, plan, value):
    """The values of a write in compact form, and the mask of the assigned items."""
    size = prod(plan.cshape)
    where = plan.finish(np.arange(size, dtype=np.intp).reshape(plan.cshape))
    try:
        value = np.asarray(value, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"cannot store {type(value).__name__} values in an array of "
                        f"dtype {dtype}: {exc}") from None
    try:
        value = np.broadcast_to(value, where.shape)
    except ValueError:
        raise ValueError(f"could not broadcast a value of shape {value.shape} into the "
                         f"selection of shape {where.shape}") from None
    vals = np.zeros(size, dtype)
    mask = np.zeros(size, bool)
    flat = where.reshape(-1)
    vals[flat] = value.reshape(-1)                 # repeated positions: the last wins
    mask[flat] = True
    return vals.reshape(plan.cshape), mask.reshape(plan.cshape)


def fancy_set(io, key, value, front=False, plan=None) -> None:
    """``array[key] = value`` for a fancy key."""
    schunk, lay = io.schunk, io.layout
    schunk.check_writable()
    if plan is None:
        plan = _make_plan(lay, key, front)
    vals, mask = _scatter_values(lay.dtype, plan, value)
    if not mask.any():
        return
    if plan.ortho:
        parts = ((n, np.ix_(*locs), dst)
                 for n, locs, dst in chunkwise.box_parts(lay, plan.units))
    else:
        parts = ((n, chunkwise.point_index(plan, locs), (sel,) + odst)
                 for n, sel, locs, odst in chunkwise.point_parts(lay, plan))

    def patch(n, idx, dst):
        m = mask[dst]
        if not m.any():
            return None
        stored = io.stored(n)
        if lay.special_value(stored) is None:
            new = _patch_items(io, stored, idx, m, vals[dst])
            if new is not None:
                return new
        chunk = io.chunk_array(n, stored)
        chunk[idx] = np.where(m, vals[dst], chunk[idx])
        return io.encode(chunk)

    nthreads = schunk.dparams.nthreads
    if nthreads > 1:                  # chunks patched in parallel, stored in order
        workers, window = pool(nthreads), []
        for n, idx, dst in parts:
            window.append((n, workers.submit(patch, n, idx, dst)))
            if len(window) > 2 * nthreads:
                _store(schunk, *window.pop(0))
        for item in window:
            _store(schunk, *item)
        return
    for n, idx, dst in parts:
        chunk = patch(n, idx, dst)
        if chunk is not None:
            schunk.update_chunk(n, chunk)


@in_layout
def _patch_items(io, chunk, idx, m, vals):
    """Chunk `chunk` with the items ``idx`` (chunk coordinates) where `m` set to `vals`
    there, re-encoding only the blocks holding them (the others are copied compressed);
    None when that does not pay (more than half of the blocks) or the chunk's kind does
    not allow it: the caller re-encodes the whole chunk."""
    clevel = io.schunk.cparams.clevel
    if not clevel:
        return None
    lay = io.layout
    coords = [np.broadcast_to(i, m.shape)[m] for i in idx]
    blocks = lay.blocks
    bnum = np.ravel_multi_index([c // b for c, b in zip(coords, blocks)], lay.bgrid)
    ub, binv = np.unique(bnum, return_inverse=True)
    if 2 * len(ub) > lay.nblocks:
        return None
    buf = np.empty((len(ub), lay.block_items), lay.dtype)
    decompress_blocks(chunk, ub.tolist(), nthreads=1, dst=buf)
    off = np.ravel_multi_index([c % b for c, b in zip(coords, blocks)], blocks)
    buf[binv, off] = np.broadcast_to(vals, m.shape)[m]    # repeated items: the last wins
    return patch_blocks(chunk, ub.tolist(), buf, clevel)


def _store(schunk, n, future):
    chunk = future.result()
    if chunk is not None:
        schunk.update_chunk(n, chunk)


# ---------------------------------------------------------------------------------------
# accessors


def _ortho_elems(key, shape) -> tuple[list, list]:
    """Orthogonal key -> ndindex-like elements (as for a box) and the dims dropped."""
    import ndindex

    items = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    ell = [j for j, k in enumerate(items) if k is Ellipsis]
    if ell:
        i = ell[0]
        items[i:i + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    if len(items) > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {len(items)} were indexed")
    items += [slice(None)] * (len(shape) - len(items))
    elems, drop = [], []
    for d, (k, n) in enumerate(zip(items, shape)):
        if k is None:
            raise IndexError("oindex does not take None (newaxis)")
        if isinstance(k, slice) or (not isinstance(k, (list, np.ndarray, bool, np.bool_))
                                    and not hasattr(k, "shape")):
            try:
                e = ndindex.ndindex(k if isinstance(k, slice) else operator.index(k))
            except TypeError:
                raise IndexError(f"only integers, slices, and integer or boolean arrays "
                                 f"are valid orthogonal indices, not {k!r:.60}") from None
            e = ndindex.Tuple(e).expand((n,)).args[0]
            if type(e).__name__ == "Integer":
                drop.append(d)
                e = ndindex.IntegerArray([e.raw])
            elems.append(e)
            continue
        a = _plain_key(k)[0]
        if a.ndim != 1:
            raise IndexError(f"orthogonal indices must be 1-D, not {a.ndim}-D (axis {d})")
        e = ndindex.Tuple(ndindex.ndindex(a)).expand((n,)).args[0]
        elems.append(e)
    return elems, drop


class _OrthoPlan(_Plan):
    """A box whose result is ``box[np.ix_(inverse per dimension)]``."""

    def __init__(self, layout, elems, drop):
        units, ix = [], []
        for e, n in zip(elems, layout.shape):
            if type(e).__name__ == "Slice":
                r = range(n)[e.raw]
                rev = r.step < 0
                u = np.arange(r[-1], r[0] + 1, -r.step, dtype=np.intp) if rev \
                    else np.arange(r.start, r.stop, r.step, dtype=np.intp)
                inv = np.arange(len(u))[::-1] if rev else np.arange(len(u))
            else:
                u, inv = np.unique(np.asarray(e.raw, np.intp), return_inverse=True)
            units.append(u)
            ix.append(inv.reshape(-1))
        self.units, self.ortho, self.move = units, True, False
        self.cshape = tuple(len(u) for u in units)
        self.ix, self.drop = ix, drop

    def direct(self):
        """Each dimension's positions (``maps``) and the result's shape: the C core
        writes the result in place."""
        return (list(self.ix),
                tuple(len(ix) for d, ix in enumerate(self.ix) if d not in self.drop))

    def finish(self, compact):
        res = compact[np.ix_(*self.ix)] if self.ix else compact[()]
        if self.drop:
            res = res.reshape([s for d, s in enumerate(res.shape) if d not in self.drop])
        return res


class OIndex:
    """Orthogonal indexing (zarr's ``oindex``): each dimension is indexed on its own
    by an int, a slice, or a 1-D integer or boolean array.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack.storage.constructors import asarray
    >>> a = asarray(np.arange(12).reshape(3, 4), chunks=(2, 2))
    >>> a.oindex[[2, 0], [True, False, False, True]].tolist()
    [[8, 11], [0, 3]]
    >>> a.oindex[[0, 2], 1:3] = 0
    >>> a[:].tolist()
    [[0, 0, 0, 3], [4, 5, 6, 7], [8, 0, 0, 11]]
    """

    def __init__(self, io):
        self._io = io

    def _plan(self, key):
        lay = self._io.layout
        return _OrthoPlan(lay, *_ortho_elems(key, lay.shape))

    def __getitem__(self, key) -> np.ndarray:
        return _get(self._io, self._plan(key))

    def __setitem__(self, key, value) -> None:
        fancy_set(self._io, None, value, plan=self._plan(key))


class VIndex:
    """Vectorized indexing (zarr's ``vindex``): integer arrays broadcast together and
    their dimensions come first in the result; a boolean mask selects points.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack.storage.constructors import asarray
    >>> a = asarray(np.arange(24).reshape(2, 3, 4), chunks=(1, 2, 2))
    >>> a.vindex[:, [0, 2], [1, 3]].shape, a[:, [0, 2], [1, 3]].shape
    ((2, 2), (2, 2))
    >>> a.vindex[:, [0, 2], [1, 3]].tolist()
    [[1, 13], [11, 23]]
    >>> a.vindex[[0, 1], [2, 0], [3, 0]] = -1
    >>> int(a[0, 2, 3]), int(a[1, 0, 0])
    (-1, -1)
    """

    def __init__(self, io):
        self._io = io

    def __getitem__(self, key) -> np.ndarray:
        return fancy_get(self._io, key, front=True)

    def __setitem__(self, key, value) -> None:
        fancy_set(self._io, key, value, front=True)
