"""Trees of float arithmetic compiled for the C core's fused per-block evaluation.

On the aligned path each worker decodes a group of blocks of every operand, runs the
tree on them and encodes the result blocks.  For the commonest trees -- ``+``, ``-``,
``*``, ``/``, negation, ``square``/``**2`` and ``sqrt`` of float64 (not ``**0.5``)
operands (or of float32 ones, computed in float32 as NumPy does) and real constants --
the C core does all three for one block at a time (:class:`ndpack._core.FusedProgram`,
csrc/math/fused.c): a block's values never leave the core's L2 cache, and no Python
runs between the steps (a group on the general path makes about a dozen calls that
release and take back the GIL).  Each operation is the IEEE one NumPy applies, in the
tree's order, without contraction into FMA: the values are NumPy's bit for bit.

:func:`program` gives the program of a tree, or None when it does not qualify (the
general path then runs).

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.expr.nodes import Apply, Constant, Operand
>>> a, b = Operand(np.zeros(4)), Operand(np.zeros(4))
>>> prog = program(Apply("add", (Apply("multiply", (a, Constant(2))), b)), [a, b])
>>> prog.nin, prog.ncode
(2, 5)
>>> program(Apply("sin", (a,)), [a]) is None
True
"""

from __future__ import annotations

import numpy as np

from ndpack._core import FusedProgram
from ndpack.engine.expr.nodes import Apply, Constant, Node, Operand
from ndpack.errors import ParameterError

__all__ = ["program"]

_IN, _CONST, _NEG, _SQUARE, _SQRT = 1, 2, 3, 8, 9
_BINARY = {np.add: 4, np.subtract: 5, np.multiply: 6, np.true_divide: 7}
_UNARY = {np.negative: _NEG, np.square: _SQUARE, np.sqrt: _SQRT}
_POWERS = {2: _SQUARE}       # NumPy's power takes this exponent exactly so (** 0.5 is
#                              sqrt too, but the standard's pow(-0, 0.5) is +0: not fused)
_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def program(node: Node, ops: list) -> FusedProgram | None:
    """The fused program of `node` over the operands `ops` (operand k of the program is
    ``ops[k]``; all must be float64 arrays, or all float32 with a float32 result), or
    None when the tree does not qualify."""
    dt = getattr(node, "dtype", None)
    if not isinstance(node, Apply) or dt not in _FLOATS or any(op.dtype != dt for op in ops):
        return None
    index = {id(op.array): k for k, op in enumerate(ops)}
    code, arg, consts = [], [], []

    def constant(v) -> float:
        """`v` as NumPy converts it when it meets an array of `dt` (NEP 50: Python
        scalars take the array's type; NumPy scalars must already be of it)."""
        if isinstance(v, (bool, np.bool_)) or not isinstance(
                v, (int, float, np.integer, np.floating)) or np.ndim(v):
            raise _Skip
        if isinstance(v, (np.integer, np.floating)) and np.result_type(v, dt) != dt:
            raise _Skip
        with np.errstate(over="raise", invalid="raise"):
            try:
                c = dt.type(v)
            except (OverflowError, FloatingPointError):
                raise _Skip from None
        if not np.isfinite(c) and (isinstance(v, (int, np.integer)) or np.isfinite(v)):
            raise _Skip                      # (a finite value overflowing the type)
        return float(c)

    def emit(step) -> bool:
        code.append(step)
        arg.append(0)
        return True

    def visit(n) -> bool:
        """Emit `n`; True when it holds arrays (a subtree of constants only would be a
        scalar step the C core does not take)."""
        if isinstance(n, Operand):
            k = index.get(id(n.array))
            if k is None:
                raise _Skip
            code.append(_IN)
            arg.append(k)
            return True
        if isinstance(n, Constant):
            c = constant(n.value)
            code.append(_CONST)
            arg.append(len(consts))
            consts.append(c)
            return False
        if not isinstance(n, Apply) or n.kwargs or n.dtype != dt:
            raise _Skip
        f = n.func.numpy
        if f in _UNARY and len(n.args) == 1:
            if not visit(n.args[0]):
                raise _Skip
            return emit(_UNARY[f])
        if f is np.power and len(n.args) == 2 and isinstance(n.args[1], Constant):
            e = n.args[1].value
            if isinstance(e, (bool, np.bool_)) or not isinstance(e, (int, float)) \
                    or e not in _POWERS:
                raise _Skip
            if not visit(n.args[0]):
                raise _Skip
            return emit(_POWERS[e])
        if f not in _BINARY or len(n.args) != 2:
            raise _Skip
        arrays = [visit(a) for a in n.args]
        if not any(arrays):
            raise _Skip
        return emit(_BINARY[f])

    try:
        visit(node)
        return FusedProgram(bytes(code), arg, consts, len(ops), dt.itemsize)
    except (_Skip, OverflowError, ParameterError):   # (ParameterError: a program needing
        return None                                   # over 16 values at once)


class _Skip(Exception):
    """The tree holds something the fused program does not compute."""
