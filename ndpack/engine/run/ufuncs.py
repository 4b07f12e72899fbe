"""Trees compiled into NumPy ufunc calls over reused, cache-sized registers.

On blocks that are already in cache (the aligned path evaluates groups of blocks of
~512 KiB per operand), NumPy's ufuncs with ``out=`` beat numexpr's virtual machine on
this machine: NumPy's inner loops are SIMD for ``sqrt`` and plain arithmetic (and
for ``exp``, ``log``, ``arctan2``, ``power`` on AVX-512 hosts), numexpr calls scalar
libm (measured on an AVX-512 host
per element, one thread, 64 Ki float64: ``a + b + c`` 0.75 vs 1.21 ns,
``sqrt(a + 2*b + c/2)**1.2`` 4.6 vs 14.2 ns, ``sin(a)**2 + cos(b)*exp(-c) +
arctan2(a, b)`` 17.0 vs 32.4 ns).  Each step is the ufunc NumPy applies to the
whole arrays, on a piece of them, so the values are NumPy's own, bit for bit --
except float64 ``sin``, ``cos``, ``exp``, ``log``, ``expm1``, ``log1p``,
``arctan``, ``arctan2``, ``tanh``, ``sinh``, ``cosh``, ``tan`` and ``power`` (float
exponents other than 0, 0.5, 1, 2, -1) where :func:`ndpack.vmath.implementation`
chose the C core's vectorized kernels (timed once per process against NumPy's loops;
``NDPACK_VMATH=ours|numpy`` forces one): those steps are within
:data:`ndpack.vmath.ULP` ulp of NumPy's value (1 for exp, log, expm1, log1p, cosh,
tan, power; 2 for arctan, arctan2, tanh, sinh; sin/cos 1 ulp for |x| <= 1000, 2 to
1e5) and give NumPy's special values.  Bit-identity with NumPy is the contract only
where NumPy's implementation is used.

A :class:`UfuncProgram` is a list of steps ``ufunc(args..., out=register)`` in the
tree's post order; a register is freed after its last use and reused (linear scan),
so a tree of any size needs a few registers of the block's length per thread.  The
caller's `out` is a register too, until the last step writes the result there (``a +
b + c``: ``add(a, b, out=out); add(out, c, out=out)``, no register at all), unless it
may share memory with an operand (then a second list of steps, without it).  Only
trees made of ufuncs without keywords compile; the step dtypes come from running the
program once on one-element arrays, and must end in the tree's dtype.

Examples
--------
>>> import numpy as np
>>> from ndpack.engine.expr.nodes import Apply, Constant, Operand
>>> a, b = Operand(np.zeros(4)), Operand(np.zeros(4))
>>> tree = Apply("add", (Apply("multiply", (a, Constant(2))), Apply("exp", (b,))))
>>> prog = UfuncProgram.compile(tree, [a, b])
>>> prog.nregisters          # (`out` holds a * 2 while exp(b) is computed)
1
>>> x, y = np.arange(4.0), np.zeros(4)
>>> bool((prog([x, y], np.empty(4)) == x * 2 + np.exp(y)).all())
True
"""

from __future__ import annotations

import threading

import numpy as np

from ndpack.engine.expr.nodes import Apply, Constant, Node, Operand
from ndpack.vmath import fast_ufunc

__all__ = ["UfuncProgram"]


class UfuncProgram:
    """A tree as a list of ufunc steps over registers (see the module docstring).

    Build with :meth:`compile` (None when the tree does not qualify); call with the
    operand values (arrays broadcastable to `out`, or 0-d) and `out`, of the tree's
    dtype.  Registers are per thread and grow to the largest `out` seen: call it on
    cache-sized pieces.
    """

    def __init__(self, steps: list, reg_dtypes: list, dtype: np.dtype,
                 plain: UfuncProgram | None = None):
        self.steps, self.reg_dtypes, self.dtype = steps, reg_dtypes, dtype
        self.plain = plain           # the steps that leave `out` alone until the last
        self._local = threading.local()

    @property
    def nregisters(self) -> int:
        return len(self.reg_dtypes)

    @property
    def uses_out(self) -> bool:
        """Whether an intermediate value lives in `out` (see :meth:`alias_free`)."""
        return self.plain is not None

    def alias_free(self, values: list, out: np.ndarray) -> bool:
        """Whether `out` shares no memory with the arrays among `values` (then it may
        hold intermediate values)."""
        return not any(isinstance(v, np.ndarray) and v.ndim and np.may_share_memory(v, out)
                       for v in values)

    @classmethod
    def compile(cls, node: Node, ops: list) -> UfuncProgram | None:
        """The program of `node` over operands `ops` (values come in that order)."""
        if not isinstance(node, Apply):
            return None
        index = {id(op.array): i for i, op in enumerate(ops)}
        order: list = []

        def visit(n):
            if isinstance(n, Operand):
                return ("in", index[id(n.array)]) if id(n.array) in index else None
            if isinstance(n, Constant):
                return ("const", n.value)
            if not (isinstance(n, Apply) and isinstance(n.func.numpy, np.ufunc)
                    and not n.kwargs and n.func.numpy.nout == 1):
                return None
            args = [visit(a) for a in n.args]
            if any(a is None for a in args):
                return None
            order.append((n.func.numpy, args))
            specials.append(n.func.special)
            return ("tmp", len(order) - 1)

        specials: list = []
        if visit(node) is None:
            return None
        dtypes = _probe_dtypes(order, ops)
        if dtypes is None or dtypes[-1] != node.dtype:
            return None
        progs = []
        for use_out in (False, True):
            steps, reg_dtypes = _allocate(order, dtypes, use_out)
            steps = [(_step(ufunc, dtypes[k], specials[k]), args, reg)
                     for k, (ufunc, args, reg) in enumerate(steps)]
            progs.append((steps, reg_dtypes))
        plain = cls(*progs[0], node.dtype)
        if not any(reg == _OUT for _, _, reg in progs[1][0][:-1]):
            return plain                 # no intermediate fits in `out`
        return cls(*progs[1], node.dtype, plain)

    def _registers(self, n: int) -> list:
        regs = getattr(self._local, "regs", None)
        if regs is None or (regs and len(regs[0]) < n):
            regs = self._local.regs = [np.empty(n, d) for d in self.reg_dtypes]
        return regs

    def __call__(self, values: list, out: np.ndarray, alias_free: bool | None = None):
        """Run the steps; the last one writes into `out`.  `alias_free`: the result
        of :meth:`alias_free` when the caller knows it (pieces of one checked call)."""
        if out.dtype != self.dtype:
            raise TypeError(f"out has dtype {out.dtype}, the program gives {self.dtype}")
        if self.plain is not None and not (self.alias_free(values, out)
                                           if alias_free is None else alias_free):
            return self.plain(values, out)
        n = out.size
        regs = [r[:n].reshape(out.shape) for r in self._registers(n)]
        for ufunc, args, reg in self.steps:
            vals = [values[i] if kind == "in" else regs[i] if kind == "reg" else
                    out if kind == "out" else i for kind, i in args]
            ufunc(*vals, out=out if reg is None or reg == _OUT else regs[reg])
        return out


# ufuncs whose float64 steps the C core may compute (contiguous pieces of one shape,
# or a float second operand; NumPy for anything else): ndpack.vmath.fast_ufunc picks
# ours or NumPy's per function, once per process
_FAST = frozenset([np.sin, np.cos, np.exp, np.log, np.expm1, np.log1p, np.arctan,
                   np.arctan2, np.tanh, np.sinh, np.cosh, np.tan, np.power])


def _step(ufunc, dtype: np.dtype, special):
    """The callable of one step: NumPy's ufunc or the C core's, followed by the
    standard's special-case fix-up where the function has one for `dtype`."""
    f = fast_ufunc(ufunc, dtype) if ufunc in _FAST else ufunc
    return special.wrap(f) if special is not None and special.applies(dtype) else f


def _probe_dtypes(order: list, ops: list) -> list | None:
    """Each step's result dtype, from one run on one-element arrays."""
    one = [np.ones(1, op.dtype) for op in ops]
    results: list = []
    try:
        with np.errstate(all="ignore"):
            for ufunc, args in order:
                vals = [one[i] if kind == "in" else results[i] if kind == "tmp" else i
                        for kind, i in args]
                results.append(np.asarray(ufunc(*vals)))
    except Exception:            # noqa: BLE001 (NumPy refuses: the general path reports it)
        return None
    if any(r.shape != (1,) or r.dtype.hasobject for r in results):
        return None
    return [r.dtype for r in results]


_OUT = -1                        # the register that is the caller's `out`


def _allocate(order: list, dtypes: list, use_out: bool = False) -> tuple[list, list]:
    """Registers for the steps' results: a step's register is freed after the last
    step that reads it, and reused by a later step of the same dtype.  With
    `use_out`, the caller's `out` (``_OUT``, of the last step's dtype) is the first
    free register: steps read it as ``("out", _OUT)``."""
    last_use = {}
    for k, (_, args) in enumerate(order):
        for kind, i in args:
            if kind == "tmp":
                last_use[i] = k
    reg_of, reg_dtypes, free = {}, [], [_OUT] if use_out else []
    steps = []

    def dtype_of(reg):
        return dtypes[-1] if reg == _OUT else reg_dtypes[reg]
    for k, (ufunc, args) in enumerate(order):
        new_args = [(("out" if reg_of[i] == _OUT else "reg"), reg_of[i]) if kind == "tmp"
                    else (kind, i) for kind, i in args]
        if k == len(order) - 1:                  # the result goes to the caller's out
            steps.append((ufunc, new_args, None))
            break
        # registers whose value dies here may hold this step's result (elementwise
        # ufuncs may write over an input)
        for kind, i in args:
            if kind == "tmp" and last_use[i] == k and reg_of[i] not in free:
                free.append(reg_of[i])
        reg = next((r for r in free if dtype_of(r) == dtypes[k]), None)
        if reg is None:
            reg = len(reg_dtypes)
            reg_dtypes.append(dtypes[k])
        else:
            free.remove(reg)
        reg_of[k] = reg
        steps.append((ufunc, new_args, reg))
    return steps, reg_dtypes
