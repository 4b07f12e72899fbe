"""Conditions on one array as sets of ranges of its sorted order (for sorted indexes).

A boolean expression over an array ``a`` and scalars -- comparisons ``a > c``,
``c <= a``, ``a == c``, ``a != c`` combined with ``&``, ``|``, ``~`` (``logical_and``,
``logical_or``, ``logical_not``) and, for a boolean ``a``, ``a`` itself -- selects a
union of ranges of ``sort(a)``: each comparison is *monotone* along the sorted values
(NumPy's comparison of the values with the constant, casts included, is false then true,
or true then false, over the values that are not NaN), so its items are one range
found by a binary search of the first item where it changes; NaNs sort last and compare
false, except with ``!=``.  ``&``, ``|`` and ``~`` are then intersections, unions and
complements of lists of ranges, NaNs included (``~(a > 1)`` holds for NaN).

:func:`analyse` turns an expression tree into such a condition (a :class:`Cond`), or
None when a part of it is not about ``a`` and scalars; the condition gives its ranges
from a searcher (:meth:`Cond.ranges`) and its mask over any values (:meth:`Cond.mask`,
NumPy's own operators: chunks the index does not cover are tested with it).

Examples
--------
>>> import numpy as np
>>> from ndpack.storage.constructors import asarray
>>> a = asarray(np.array([3.0, np.nan, 1.0, 2.0]))
>>> c = analyse(((a > 1) & (a <= 3)).node, a)
>>> c.mask(np.array([1.0, 2.0, 3.0, np.nan])).tolist()
[False, True, True, False]
>>> s = np.sort(np.array([3.0, np.nan, 1.0, 2.0]))
>>> c.ranges(lambda pred: int(np.argmax(np.append(pred(s[:3]), True))), 3, 4)
[(1, 3)]
>>> union([(0, 2), (5, 7)], [(1, 6)]), complement([(1, 3)], 5)
([(0, 7)], [(0, 1), (3, 5)])
"""

from __future__ import annotations

import operator

import numpy as np

from ndpack.engine.expr.nodes import Apply, Constant, Operand

__all__ = ["Cond", "analyse", "union", "intersect", "complement"]

_CMP = {"greater": operator.gt, "greater_equal": operator.ge, "less": operator.lt,
        "less_equal": operator.le, "equal": operator.eq, "not_equal": operator.ne}
_MIRROR = {"greater": "less", "less": "greater", "greater_equal": "less_equal",
           "less_equal": "greater_equal", "equal": "equal", "not_equal": "not_equal"}
_AND = ("bitwise_and", "logical_and")
_OR = ("bitwise_or", "logical_or")
_NOT = ("invert", "logical_not")


class Cond:
    """A condition on the indexed array: ``("cmp", name, constant)``, ``("and", p, q)``,
    ``("or", p, q)`` or ``("not", p)``."""

    __slots__ = ("kind", "args")

    def __init__(self, kind: str, *args):
        self.kind, self.args = kind, args

    def mask(self, v: np.ndarray) -> np.ndarray:
        """The condition over the values `v`, by NumPy's operators."""
        k = self.kind
        if k == "cmp":
            with np.errstate(all="ignore"):
                return np.asarray(_CMP[self.args[0]](v, self.args[1]), dtype=bool)
        if k == "not":
            return ~self.args[0].mask(v)
        p, q = self.args[0].mask(v), self.args[1].mask(v)
        return p & q if k == "and" else p | q

    def ranges(self, first, m: int, n: int) -> list:
        """Disjoint sorted ranges ``[(start, stop)]`` of the sorted order of `n` items
        (the first `m` not NaN) that hold the condition.  ``first(pred)`` is the first
        position ``< m`` where the monotone `pred` (false, then true over the sorted
        values) holds, `m` when none does."""
        k = self.kind
        if k == "cmp":
            return _cmp_ranges(self.args[0], self.args[1], first, m, n)
        if k == "not":
            return complement(self.args[0].ranges(first, m, n), n)
        p, q = (a.ranges(first, m, n) for a in self.args)
        return intersect(p, q) if k == "and" else union(p, q)


def _cmp_ranges(name: str, c, first, m: int, n: int) -> list:
    op = _CMP[name]

    def pred(test):
        def f(v):
            with np.errstate(all="ignore"):
                return np.asarray(test(v), dtype=bool)
        return f

    if name in ("greater", "greater_equal"):          # false ... true: [first true, m)
        out = [(first(pred(lambda v: op(v, c))), m)]
    elif name in ("less", "less_equal"):               # true ... false: [0, first false)
        out = [(0, first(pred(lambda v: ~op(v, c))))]
    else:                                               # equal: >= minus >
        lo = first(pred(lambda v: v >= c))
        hi = first(pred(lambda v: v > c))
        out = [(lo, max(lo, hi))]
        if name == "not_equal":
            return complement(_clean(out), n)
    return _clean(out)


def _clean(rs) -> list:
    return [(int(a), int(b)) for a, b in rs if b > a]


def union(p: list, q: list) -> list:
    """The union of two lists of disjoint sorted ranges."""
    out: list = []
    for a, b in sorted(p + q):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def intersect(p: list, q: list) -> list:
    """The intersection of two lists of disjoint sorted ranges."""
    out, i, j = [], 0, 0
    while i < len(p) and j < len(q):
        a, b = max(p[i][0], q[j][0]), min(p[i][1], q[j][1])
        if a < b:
            out.append((a, b))
        if p[i][1] < q[j][1]:
            i += 1
        else:
            j += 1
    return out


def complement(p: list, n: int) -> list:
    """The ranges of ``[0, n)`` not in `p`."""
    out, at = [], 0
    for a, b in p:
        if a > at:
            out.append((at, a))
        at = b
    if at < n:
        out.append((at, n))
    return out


def _is_target(node, arr) -> bool:
    if not isinstance(node, Operand) or node.shape != tuple(arr.shape):
        return False
    x = node.array
    if x is arr:
        return True
    sc, sa = getattr(x, "schunk", None), getattr(arr, "schunk", None)
    return sc is not None and sa is not None and sc.frame is sa.frame


def _constant(node):
    """The scalar a node stands for, or None."""
    if isinstance(node, Constant):
        v = node.value
    elif isinstance(node, Operand) and node.shape == () and isinstance(node.array, np.ndarray):
        v = node.array[()]
    else:
        return None
    if isinstance(v, (complex, np.complexfloating)) or (
            isinstance(v, np.generic) and v.dtype.kind not in "biuf"):
        return None
    return v


def analyse(node, arr) -> Cond | None:
    """The condition `node` (an expression tree) puts on the array `arr`, or None when
    it is not a combination of comparisons of `arr` with scalars (module docstring)."""
    if _is_target(node, arr):
        return Cond("cmp", "equal", True) if np.dtype(arr.dtype) == bool else None
    if not isinstance(node, Apply) or node.kwargs:
        return None
    name, args = node.func.name, node.args
    if name in _CMP and len(args) == 2:
        if _is_target(args[0], arr):
            c = _constant(args[1])
            return None if c is None else Cond("cmp", name, c)
        if _is_target(args[1], arr):
            c = _constant(args[0])
            return None if c is None else Cond("cmp", _MIRROR[name], c)
        return None
    if name in _NOT and len(args) == 1 and args[0].dtype == bool:
        p = analyse(args[0], arr)
        return None if p is None else Cond("not", p)
    if (name in _AND or name in _OR) and len(args) == 2 and \
            args[0].dtype == bool and args[1].dtype == bool:
        p, q = analyse(args[0], arr), analyse(args[1], arr)
        if p is None or q is None:
            return None
        return Cond("and" if name in _AND else "or", p, q)
    return None
