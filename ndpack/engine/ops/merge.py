"""Sorted runs and their k-way merge: the two halves of the external sorts.

**Order.**  Everything here orders values as NumPy does (NaNs after every number,
complex numbers by real then imaginary part) and *stably*: equal values keep the order
of their positions.  Descending order is the reverse of the values with ties still in
the order of their positions (the array API standard's rule), so NaNs come first:
``order(v, descending=True)`` is ``n - 1 - flip(argsort(flip(v)))``.

**Runs.**  A run is a sorted piece of one *lane* (a 1-D line of the array along the
sorted axis), cut into pieces of a few thousand to a million items, each compressed in
a :class:`~ndpack.engine.ops.spool.Spool`; an optional int64 *payload* (the positions
of an ``argsort``, or anything carried through the sort) travels with the values.  The
runs of a lane are numbered in the order of the positions they hold, so a tie between
two runs goes to the lower run.

**Merge.**  :class:`LaneMerge` holds at most two pieces of each run in memory (a piece
is read when fewer than one piece's items are left) and gives the merged stream in
slices of any length (:meth:`LaneMerge.take`).  Each step takes, of the runs that still
have pieces to read, the one whose buffer ends first in the merged order (its last value
``t``, ties to the lower run ``m``); every item that comes before or with ``t`` is then
buffered in every run (a run ``r < m`` takes its items ``<= t``, a run ``r > m`` its
items ``< t``: ``np.searchsorted`` cut points), and these items, concatenated in run
order, are merged by one stable NumPy sort (timsort, which finds the presorted runs:
9 ns per item for 2 runs, 25 for 16, 40 for 128 here, against ~80-115 for sorting).
Each step gives at least one piece of items, so a lane of ``n`` items takes at most
``n / piece`` steps of Python work.

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.ops.spool import Spool
>>> x = np.array([3.0, np.nan, 1.0, 2.0, 1.0, 0.0, 2.0, -1.0])
>>> with Spool() as s:
...     runs = []
...     for a in range(0, 8, 3):                        # runs of 3 items, pieces of 2
...         o = order(x[a:a + 3])
...         runs.append(make_run(s, x[a:a + 3][o], a + o, 2))
...     m = LaneMerge(s, runs)
...     v, p = m.take(5)
...     w, q = m.take(10)
>>> np.concatenate([v, w]).tolist(), np.concatenate([p, q]).tolist()
([-1.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, nan], [7, 5, 2, 4, 3, 6, 0, 1])
"""

from __future__ import annotations

import numpy as np

__all__ = ["order", "sorted_values", "make_run", "Run", "LaneMerge"]


def order(v: np.ndarray, axis: int = -1, descending: bool = False,
          stable: bool = True) -> np.ndarray:
    """Positions that sort `v` along `axis` (int64; stable unless `stable` is False)."""
    kind = "stable" if stable else None
    if not descending:
        return np.argsort(v, axis=axis, kind=kind)
    n = v.shape[axis]
    idx = np.argsort(np.flip(v, axis), axis=axis, kind=kind)
    return (n - 1) - np.flip(idx, axis)


def _values_kind(v: np.ndarray, stable: bool):
    """The fastest sort kind that gives the stable sort's values: NumPy's default
    (introsort, 82 vs 115 ns per float64 here) when equal items cannot be told apart
    (floats with no NaN and no -0.0), 'stable' otherwise (radix for 8/16-bit types)."""
    if not stable:
        return None
    k = v.dtype.kind
    if k == "f" and v.size and not np.isnan(v).any() \
            and not (np.signbit(v) & (v == 0)).any():
        return None
    return "stable"


def sorted_values(v: np.ndarray, axis: int = -1, descending: bool = False,
                  stable: bool = True, kind="fastest") -> np.ndarray:
    """`v` sorted along `axis` as :func:`order` orders it (values only; `kind`:
    NumPy's, or "fastest" for the fastest that gives the same values)."""
    if kind == "fastest":
        kind = _values_kind(v, stable)
    if not descending:
        return np.sort(v, axis=axis, kind=kind)
    return np.flip(np.sort(np.flip(v, axis), axis=axis, kind=kind), axis)


class Run:
    """One sorted run of a lane: the spool numbers of its value pieces, of its payload
    pieces (or None) and the number added to the payload when it is read."""

    __slots__ = ("values", "payload", "offset", "size")

    def __init__(self, values: list, payload, offset: int, size: int):
        self.values, self.payload, self.offset, self.size = values, payload, offset, size


def _small_int(n: int):
    """The smallest unsigned type that holds 0..n-1 (payloads stored relative)."""
    for t in (np.uint8, np.uint16, np.uint32):
        if n <= np.iinfo(t).max + 1:
            return t
    return np.int64


def make_run(spool, values: np.ndarray, payload, piece: int, offset: int = 0) -> Run:
    """Store the sorted 1-D `values` (and their int `payload`, or None) in `spool` as
    pieces of `piece` items; `offset` is added to the payload when it is read (a
    payload of small non-negative numbers is stored in the smallest type that holds
    it)."""
    n = values.shape[0]
    vs = [spool.append(values[i:i + piece]) for i in range(0, n, piece)]
    ps = None
    if payload is not None:
        payload = np.asarray(payload)
        if n and payload.min() >= 0:
            payload = payload.astype(_small_int(int(payload.max()) + 1), copy=False)
        ps = [spool.append(payload[i:i + piece]) for i in range(0, n, piece)]
    return Run(vs, ps, offset, n)


def _cut(view: np.ndarray, t: np.ndarray, with_ties: bool, descending: bool) -> int:
    """How many items of the sorted `view` come before `t` (and with it when
    `with_ties`) in the merged order."""
    if not descending:
        return int(np.searchsorted(view, t, side="right" if with_ties else "left")[0])
    back = view[::-1]                                   # ascending
    return len(view) - int(np.searchsorted(back, t, side="left" if with_ties else "right")[0])


class _Cursor:
    __slots__ = ("run", "buf", "pay", "pos", "next")

    def __init__(self, run: Run, dtype):
        self.run, self.pos, self.next = run, 0, 0
        self.buf = np.empty(0, dtype)
        self.pay = np.empty(0, np.int64) if run.payload is not None else None

    def left(self) -> int:
        return len(self.buf) - self.pos

    def more(self) -> bool:
        return self.next < len(self.run.values)

    def top_up(self, spool, low: int) -> None:
        """Read pieces while fewer than `low` items are buffered."""
        while self.more() and self.left() < low:
            keep = self.left()
            vals = spool.read(self.run.values[self.next])
            self.buf = np.concatenate([self.buf[self.pos:], vals]) if keep else vals
            if self.pay is not None:
                p = spool.read(self.run.payload[self.next]).astype(np.int64)
                if self.run.offset:
                    p += self.run.offset
                self.pay = np.concatenate([self.pay[self.pos:], p]) if keep else p
            self.pos = 0
            self.next += 1


class LaneMerge:
    """The merged stream of the sorted `runs` of one lane (read from `spool`).

    `low`: a run's buffer is topped up when it holds fewer items (default: the size of
    its first piece)."""

    def __init__(self, spool, runs: list, descending: bool = False, dtype=None,
                 low: int | None = None):
        self.spool, self.descending = spool, descending
        if dtype is None:
            dtype = spool.pieces[runs[0].values[0]][1] if runs and runs[0].values else \
                np.float64
        self.dtype = np.dtype(dtype)
        self.cursors = [_Cursor(r, self.dtype) for r in runs if r.size]
        self.payload = any(r.payload is not None for r in runs)
        if low is None:
            low = max([spool.pieces[r.values[0]][2] for r in runs if r.values] or [1])
        self.low = max(1, int(low))
        self.ready: list = []             # merged pieces not yet taken
        self.nready = 0
        self.remaining = sum(r.size for r in runs)

    def take(self, count: int):
        """The next `count` items of the merged stream (fewer at its end): ``(values,
        payload)``, payload None when the runs carry none."""
        count = min(count, self.nready + self.remaining)
        while self.nready < count:
            self._step()
        vals = [v for v, _ in self.ready]
        out_v = vals[0] if len(vals) == 1 else np.concatenate(vals) if vals else \
            np.empty(0, self.dtype)
        out_p = None
        if self.payload:
            pays = [p for _, p in self.ready]
            out_p = pays[0] if len(pays) == 1 else np.concatenate(pays) if pays else \
                np.empty(0, np.int64)
        self.ready, self.nready = [], 0
        if len(out_v) > count:
            self.ready = [(out_v[count:], None if out_p is None else out_p[count:])]
            self.nready = len(out_v) - count
            out_v = out_v[:count]
            out_p = None if out_p is None else out_p[:count]
        return out_v, out_p

    def _step(self) -> None:
        for c in self.cursors:
            c.top_up(self.spool, self.low)
        active = self.cursors = [c for c in self.cursors if c.left()]   # run order kept
        limited = [i for i, c in enumerate(active) if c.more()]
        if not limited:
            cuts = [c.left() for c in active]          # everything left is buffered
        else:
            lasts = np.concatenate([active[i].buf[-1:] for i in limited])
            first = int(order(lasts, descending=self.descending)[0])
            m, t = limited[first], lasts[first:first + 1]
            cuts = [_cut(c.buf[c.pos:], t, i <= m, self.descending)
                    for i, c in enumerate(active)]
        parts = [(c.buf[c.pos:c.pos + k], None if c.pay is None else c.pay[c.pos:c.pos + k])
                 for c, k in zip(active, cuts) if k]
        for c, k in zip(active, cuts):
            c.pos += k
        n = sum(len(v) for v, _ in parts)
        self.remaining -= n
        self.nready += n
        if len(parts) == 1:
            v, p = parts[0]
            self.ready.append((v.copy(), None if p is None else p.copy()))
            return
        vals = np.concatenate([v for v, _ in parts])
        if not self.payload:
            self.ready.append((sorted_values(vals, descending=self.descending, kind="stable"),
                               None))
            return
        o = order(vals, descending=self.descending)
        pays = np.concatenate([p for _, p in parts])
        self.ready.append((vals[o], pays[o]))
