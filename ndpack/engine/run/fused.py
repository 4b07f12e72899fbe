"""Trees of float64 arithmetic compiled for the C core's fused per-block evaluation.

On the aligned path each worker decodes a group of blocks of every operand, runs the
tree on them and encodes the result blocks.  For the commonest trees -- ``+``, ``-``,
``*``, ``/`` and negation of float64 operands and real constants -- the C core does
all three for one block at a time (:class:`ndpack._core.FusedProgram`,
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

_IN, _CONST, _NEG = 1, 2, 3
_BINARY = {np.add: 4, np.subtract: 5, np.multiply: 6, np.true_divide: 7}
_F8 = np.dtype(np.float64)


def program(node: Node, ops: list) -> FusedProgram | None:
    """The fused program of `node` over the operands `ops` (operand k of the program is
    ``ops[k]``; all must be float64 arrays), or None when the tree does not qualify."""
    if not isinstance(node, Apply) or node.dtype != _F8 \
            or any(op.dtype != _F8 for op in ops):
        return None
    index = {id(op.array): k for k, op in enumerate(ops)}
    code, arg, consts = [], [], []

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
            v = n.value
            if isinstance(v, (bool, np.bool_)) or not isinstance(
                    v, (int, float, np.integer, np.floating)) or np.ndim(v):
                raise _Skip
            if isinstance(v, (np.integer, np.floating)) and \
                    np.result_type(v, _F8) != _F8:
                raise _Skip
            code.append(_CONST)
            arg.append(len(consts))
            consts.append(float(v))           # NumPy's conversion to float64 (NEP 50)
            return False
        if not isinstance(n, Apply) or n.kwargs or n.dtype != _F8:
            raise _Skip
        f = n.func.numpy
        if f is np.negative and len(n.args) == 1:
            if not visit(n.args[0]):
                raise _Skip
            code.append(_NEG)
            arg.append(0)
            return True
        if f not in _BINARY or len(n.args) != 2:
            raise _Skip
        arrays = [visit(a) for a in n.args]
        if not any(arrays):
            raise _Skip
        code.append(_BINARY[f])
        arg.append(0)
        return True

    try:
        visit(node)
        return FusedProgram(bytes(code), arg, consts, len(ops))
    except (_Skip, OverflowError, ParameterError):   # (ParameterError: a program needing
        return None                                   # over 16 values at once)


class _Skip(Exception):
    """The tree holds something the fused program does not compute."""
