"""The kernel of the blocked products: one step of a contraction as matrix products.

A step multiplies two in-memory tiles ``t1``, ``t2`` over paired axes and writes or
adds the result into a tile ``acc`` of the output.  :func:`terms` turns that into a
list of 2-D matrix products of *views* (no transposing copies):

* when the axes merge into matrices, one product ``A @ B`` (either side transposed
  as BLAS allows);
* otherwise the leading axis of one operand is looped over: a sum of smaller
  products into the same target, or products into slices of the target;
* as a last resort (axes too mixed for views) one ``np.tensordot``, which copies.

:func:`run` executes part ``p`` of ``n`` of such a list: every matrix product is cut
into ``n`` slices of its output (rows, or columns when there are more), so that the
engine's workers can each run one part with BLAS held at one thread
(:func:`ndpack.engine.blas.one_thread`); the parts write disjoint parts of the output
and each keeps the order of the products that add into the same place.

Each product runs as one accumulating BLAS call (``beta = 1``, :func:`blas.gemm`) when
NumPy's OpenBLAS is found; otherwise -- and for dtypes BLAS does not take -- products
after a target's first go through a reused scratch buffer (``np.matmul(..., out=)``)
of at most :data:`SCRATCH_BYTES` and are added.

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

import math

import numpy as np

from ndpack.engine import blas

__all__ = ["SCRATCH_BYTES", "contract_into", "flops", "run", "splittable", "terms"]

SCRATCH_BYTES = 8 * 2**20      # products added to a target go through this much scratch


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
        if nparts > 1:
            m, n = out.shape
            if m >= n:
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
