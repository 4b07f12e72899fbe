"""The kernel: how a tree runs on NumPy values of its operands.

In order of preference: a *ufunc program* (NumPy ufunc steps over per-thread
registers, in pieces of ~256 KiB that stay in cache; :mod:`ndpack.engine.run.ufuncs`),
numexpr (only for trees whose dtype numexpr computes exactly as NumPy, checked on a
one-element probe), else plain NumPy.  :class:`Kernel` holds the choice made once per
evaluation and one compiled program per worker thread.

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.expr.nodes import Apply, Constant, Operand
>>> x = np.arange(4.0)
>>> node = Apply("multiply", (Operand(x), Constant(2)))
>>> run(node, [node.args[0]], [x]).tolist()
[0.0, 2.0, 4.0, 6.0]
>>> numexpr_text(node, [node.args[0]])
'(o0 * 2)'
"""

from __future__ import annotations

import functools
import math
import threading

import numexpr
import numpy as np
from numexpr.necompiler import getType

from ndpack.codecs import get_nthreads
from ndpack.engine.expr.nodes import Apply, Constant, Node, Operand
from ndpack.engine.run.ufuncs import UfuncProgram
from ndpack.engine.run.workers import on_engine_thread, submit, workers

__all__ = ["numexpr_text", "run", "program", "run_pieces", "Kernel", "fit"]

# numexpr computes these dtypes as NumPy does (no silent upcast of its own).
_NUMEXPR_DTYPES = {np.dtype(t) for t in ("bool", "int32", "int64", "float64", "complex128")}
# numexpr's own complex kernels (sqrt, exp, log, arcsin, division, ...) differ from
# NumPy's (arcsin(67108864j) is inf there, 18.71j in NumPy): complex trees use numexpr
# only for these.
_COMPLEX_EXACT = frozenset({"add", "subtract", "negative", "equal", "not_equal", "where"})


_NOT_CONSTANT = object()
_INT64 = np.iinfo(np.int64)


def _numexpr_literal(v) -> str | None:
    """numexpr's text for a scalar: booleans, int64-range integers and finite floats
    only (anything else leaves the tree to NumPy)."""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (int, np.integer)):
        return repr(int(v)) if _INT64.min <= v <= _INT64.max else None
    if isinstance(v, (float, np.floating)) and np.isfinite(v):
        return repr(float(v))
    return None


def _numexpr_parts(node: Node, names: dict) -> tuple:
    """``(text, value)`` of a subtree: `value` is the folded NumPy scalar of a subtree
    of constants only (else ``_NOT_CONSTANT``), `text` numexpr's spelling or None.

    numexpr compiles its text with Python's ``eval``, which would compute constant
    subexpressions as Python integers (``2**2**40`` never returns): such subtrees are
    folded here with NumPy -- fixed-width arithmetic, the tree's own semantics -- and
    numexpr sees one literal.
    """
    if isinstance(node, Operand):
        return names[id(node.array)], _NOT_CONSTANT
    if isinstance(node, Constant):
        return _numexpr_literal(node.value), node.value
    if node.func.numexpr is None or node.kwargs:
        return None, _NOT_CONSTANT
    parts = [_numexpr_parts(a, names) for a in node.args]
    if all(v is not _NOT_CONSTANT for _, v in parts):
        with np.errstate(all="ignore"):
            value = node.func.call(*[v for _, v in parts])
        return (_numexpr_literal(value) if np.ndim(value) == 0 else None), value
    texts = [t for t, _ in parts]
    if any(t is None for t in texts):
        return None, _NOT_CONSTANT
    return node.func.numexpr.format(*texts), _NOT_CONSTANT


def _numexpr_string(node: Node, names: dict) -> str | None:
    return _numexpr_parts(node, names)[0]


def _constant(node: Node) -> bool:
    """A subtree of constants only (numexpr folds it into one literal)."""
    if isinstance(node, Constant):
        return True
    return isinstance(node, Apply) and all(_constant(a) for a in node.args)


def _numexpr_ok(node: Node) -> bool:
    """numexpr gives NumPy's exact dtype and values for this tree."""
    if isinstance(node, Operand):
        return node.dtype in _NUMEXPR_DTYPES
    if isinstance(node, Constant):
        return isinstance(node.value, (bool, int, float)) and not isinstance(node.value, complex)
    if (node.dtype.kind == "c" or any(a.dtype.kind == "c" for a in node.args)) \
            and node.func.name not in _COMPLEX_EXACT:
        return False
    if node.func.name in ("divide", "true_divide") and _constant(node.args[1]):
        return False           # numexpr multiplies by the reciprocal: 3 / 8.5 is 1 ulp off
    special = node.func.special
    if special is not None and special.applies(node.dtype) and \
            not special.numexpr_ok(node.args):
        return False           # the standard's special cases need the fix-up step
    return (node.func.numexpr is not None and node.dtype in _NUMEXPR_DTYPES
            and all(_numexpr_ok(a) for a in node.args)
            and all(a.dtype == node.dtype or isinstance(a, Constant) or node.dtype == np.bool_
                    for a in node.args if node.func.name not in ("where",)))


def numexpr_text(node: Node, ops: list) -> str | None:
    """numexpr's spelling of the tree over operands named ``o0, o1, ...`` (in the
    order of `ops`), or None when numexpr would not compute NumPy's exact result
    (a function it lacks, a dtype it promotes differently: checked by running the
    text once on one-element arrays)."""
    if not (isinstance(node, Apply) and _numexpr_ok(node)):
        return None
    text = _numexpr_string(node, {id(op.array): f"o{i}" for i, op in enumerate(ops)})
    if text is None:
        return None
    return text if _probe(text, tuple(op.dtype for op in ops), node.dtype) else None


@functools.lru_cache(maxsize=1024)
def _probe(text: str, dtypes: tuple, dtype: np.dtype) -> bool:
    local = {f"o{i}": np.ones(1, d) for i, d in enumerate(dtypes)}
    try:
        with np.errstate(all="ignore"):
            return numexpr.evaluate(text, local_dict=local, global_dict={}).dtype == dtype
    except Exception:            # numexpr refuses the combination: NumPy will run it
        return False


def _numpy_eval(node: Node, data: dict):
    if isinstance(node, Operand):
        return data[id(node.array)]
    if isinstance(node, Constant):
        return node.value
    return node.func.call(*[_numpy_eval(a, data) for a in node.args], **node.kwargs)


def run(node: Node, ops: list, values: list, out=None):
    """The tree on NumPy `values` of its operands `ops` (broadcastable to each other).

    Trees of ufuncs run as a :class:`~ndpack.engine.run.ufuncs.UfuncProgram` over pieces
    of ~256 KiB (in cache); numexpr runs other trees when it computes NumPy's exact
    result, else NumPy does.  With `out` (of the result's dtype and full broadcast
    shape) the values land there and `out` is returned; when every value is 0-d the
    result is 0-d and `out` is left alone.
    """
    full = out is not None and any(np.ndim(v) for v in values)
    prog = program(node, ops) if full or any(np.ndim(v) for v in values) else None
    with np.errstate(all="ignore"):
        if prog is not None:
            shape = np.broadcast_shapes(*(np.shape(v) for v in values))
            if full and out.shape == shape and out.dtype == prog.dtype:
                return run_pieces(prog, values, out)
            res = run_pieces(prog, values, np.empty(shape, prog.dtype))
            if full:
                out[...] = res
                return out
            return res
        text = numexpr_text(node, ops)
        if text is not None:
            local = {f"o{i}": v for i, v in enumerate(values)}
            if full:
                return numexpr.evaluate(text, local_dict=local, global_dict={}, out=out)
            return numexpr.evaluate(text, local_dict=local, global_dict={})
        res = _numpy_eval(node, {id(op.array): v for op, v in zip(ops, values)})
    if full:
        out[...] = res
        return out
    return res


_PIECE = 1 << 15          # elements per piece of a ufunc program's run (256 KiB of f8)


def program(node: Node, ops: list):
    """The :class:`UfuncProgram` of `node` over `ops`, compiled once per tree and
    operand list (kept on the node, which holds its operands alive), or None."""
    if not isinstance(node, Apply):
        return None
    key = tuple(id(op.array) for op in ops)
    cache = node.__dict__.setdefault("_ufunc_programs", {})
    if key not in cache:
        cache[key] = UfuncProgram.compile(node, ops)
    return cache[key]


def run_pieces(prog, values: list, out: np.ndarray) -> np.ndarray:
    """`prog` over `out` in pieces of about _PIECE elements (of the flattened arrays
    when all share `out`'s C layout, else of leading rows), so that its registers and
    the pieces of the values stay in cache.  Returns `out`."""
    if out.ndim == 0:
        return prog(values, out)
    free = prog.alias_free(values, out) if prog.uses_out else None   # once, not per piece
    whole = out
    if out.ndim > 1 and out.flags.c_contiguous and all(
            np.ndim(v) == 0 or (np.shape(v) == out.shape and v.flags.c_contiguous)
            for v in values):                  # same layout everywhere: flat pieces
        out = out.reshape(-1)
        values = [v.reshape(-1) if np.ndim(v) else v for v in values]
    lead = out.shape[0]
    rows = max(1, _PIECE // max(math.prod(out.shape[1:]), 1))
    if rows >= lead:
        prog(values, out, free)
        return whole
    cut = [np.ndim(v) == out.ndim and np.shape(v)[0] == lead for v in values]

    def pieces(lo, hi):
        for r0 in range(lo, hi, rows):
            sl = slice(r0, min(r0 + rows, hi))
            prog([v[sl] if c else v for v, c in zip(values, cut)], out[sl], free)

    npieces = -(-lead // rows)
    nthreads = get_nthreads()
    if nthreads > 1 and npieces >= 4 * nthreads and not on_engine_thread():
        # a big region from the calling thread: runs of pieces on the workers (each
        # has its own registers; ufuncs release the GIL)
        step = -(-npieces // nthreads) * rows
        pool = workers(nthreads)
        for f in [submit(pool, pieces, lo, min(lo + step, lead))
                  for lo in range(0, lead, step)]:
            f.result()
    else:
        pieces(0, lead)
    return whole


class Kernel:
    """A tree compiled once for many calls from worker threads, each call serial.

    Trees made of ufuncs run as a :class:`~ndpack.engine.run.ufuncs.UfuncProgram` (NumPy's
    SIMD loops on cache-sized pieces, registers per thread); other trees numexpr runs
    exactly as programs compiled once per thread (a compiled program must not run in
    two threads at once), single-threaded: the parallelism is the callers' (one
    level, see ARCHITECTURE.md); the rest goes through NumPy.  Call it with the operand
    values (arrays or 0-d) and `out`.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack.engine.expr.nodes import Apply, Constant, Operand
    >>> a = Operand(np.zeros(3))
    >>> k = Kernel(Apply("add", (a, Constant(1.5))), [a])
    >>> k([np.arange(3.0)], np.empty(3)).tolist()
    [1.5, 2.5, 3.5]
    """

    def __init__(self, node: Node, ops: list):
        self.node, self.ops = node, ops
        self.prog = program(node, ops)
        self.text = None if self.prog is not None else numexpr_text(node, ops)
        self._local = threading.local()

    def _program(self):
        prog = getattr(self._local, "program", None)
        if prog is None:
            sig = [(f"o{i}", getType(np.empty(0, op.dtype))) for i, op in enumerate(self.ops)]
            prog = self._local.program = numexpr.NumExpr(self.text, sig)
        return prog

    def __call__(self, values: list, out):
        """The tree's values into `out`; a 0-d result when every value is 0-d."""
        if not any(np.ndim(v) for v in values):
            return run(self.node, self.ops, values, out)
        if self.prog is not None and out.dtype == self.prog.dtype:
            with np.errstate(all="ignore"):     # callers pass cache-sized groups
                return self.prog(values, out) if out.size <= 2 * _PIECE else \
                    run_pieces(self.prog, values, out)
        if self.text is None:
            return run(self.node, self.ops, values, out)
        with np.errstate(all="ignore"):
            return self._program()(*values, out=out, order="K", casting="safe",
                                   ex_uses_vml=False)


def fit(res, shape, dtype, out):
    res = np.asarray(res)
    if res.shape != shape:
        res = np.broadcast_to(res, shape)
    if out is not None:
        out[...] = res
        return out
    return res.astype(dtype, copy=False) if res.dtype != dtype else res


