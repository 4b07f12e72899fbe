"""The functions an expression may call: one table, name → NumPy callable and,
where numexpr computes exactly the same thing, its numexpr spelling.

Operators are functions too (``a + b`` is ``add(a, b)``), so a tree has one kind of
inner node.  Reductions (:data:`REDUCTIONS`) are not elementwise: the parser builds
:class:`ndpack.engine.ops.reductions.Reduce` nodes for them.

Where NumPy's value differs from the array API standard's special cases, the function
carries a :class:`Special`: a vectorized fix-up run on the result, only for the result
kinds it concerns and only at the elements that can be special (the table
:data:`SPECIAL`).  The fixes:

* ``floor_divide`` of floats: an infinite dividend over a finite nonzero divisor is
  ``±inf`` (NumPy: NaN), a finite dividend over an infinite divisor of the other sign
  is ``-0`` (NumPy: -1): the standard's ``floor(x1 / x2)``;
* ``pow`` of floats with the exponent 0.5 (NumPy computes it as ``sqrt``): ``-inf``
  and ``-0`` give ``+inf`` and ``+0``;
* complex ``expm1`` of non-finite values is ``exp(z) - 1`` (NumPy's loop gives NaNs);
* complex ``tanh``/``tan`` of an infinite real/imaginary part: the zero part has the
  sign of the finite part (``tanh(inf + 2j)`` is ``1 + 0j``; NumPy: ``1 - 0j``);
* complex ``sign`` of a value with a NaN part is ``NaN + NaN j``.

Examples
--------
>>> import numpy as np
>>> x1, x2 = np.array([np.inf, 1.0, -1.0]), np.array([2.0, -np.inf, np.inf])
>>> FUNCTIONS["floor_divide"].call(x1, x2).tolist()
[inf, -0.0, -0.0]
>>> complex(FUNCTIONS["expm1"].call(np.array([complex(-np.inf, np.nan)]))[0])
(-1+0j)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

__all__ = ["Function", "Special", "SPECIAL", "FUNCTIONS", "REDUCTIONS", "BINARY_OPERATORS", "UNARY_OPERATORS",
           "lookup"]


@dataclasses.dataclass(frozen=True)
class Function:
    """An elementwise function.

    Attributes
    ----------
    name : str
        Name in expressions (NumPy's, plus array-API aliases).
    numpy : callable
        Computes it on NumPy arrays; the reference semantics.
    nargs : tuple of int
        Accepted numbers of positional arguments.
    numexpr : str or None
        Template for numexpr (``"sin({0})"``, ``"({0} + {1})"``), None if numexpr lacks
        it or computes it differently.
    keywords : tuple of str
        Keyword arguments accepted in string expressions.
    special : Special or None
        The fix-up of the standard's special cases where NumPy differs.
    """

    name: str
    numpy: Callable
    nargs: tuple = (1,)
    numexpr: str | None = None
    keywords: tuple = ()
    special: Special | None = None

    def call(self, *args, **kwargs):
        """NumPy's function with the standard's special cases (:attr:`special`)."""
        out = self.numpy(*args, **kwargs)
        if self.special is not None and self.special.applies(np.result_type(out)):
            out = np.asarray(out)
            if out.ndim == 0:
                out = out.reshape(1)
                self.special.fix(args, out)
                return out[0]
            self.special.fix(args, out)
        return out


@dataclasses.dataclass(frozen=True)
class Special:
    """A fix-up of NumPy's result to the standard's special cases.

    Attributes
    ----------
    kinds : str
        Result dtype kinds it concerns (``"f"``, ``"c"``).
    fix : callable
        ``fix(args, out)``: rewrites the special elements of `out` (NumPy's result of
        `args`, broadcast to it) in place.
    numexpr_ok : callable
        ``numexpr_ok(arg_nodes)``: numexpr's spelling gives the standard's values (it has
        no fix-up step).
    """

    kinds: str
    fix: Callable
    numexpr_ok: Callable = lambda args: False

    def applies(self, dtype) -> bool:
        return np.dtype(dtype).kind in self.kinds

    def wrap(self, ufunc):
        """`ufunc` (called as ``f(*args, out=...)``) followed by the fix; inputs that
        share memory with `out` are copied first (the fix reads them)."""
        fix = self.fix

        def step(*args, out):
            args = [a.copy() if isinstance(a, np.ndarray) and a.ndim and
                    np.may_share_memory(a, out) else a for a in args]
            ufunc(*args, out=out)
            fix(args, out)
            return out
        step.__name__ = getattr(ufunc, "__name__", "step")
        return step


def _at(x, out, mask):
    """`x` (an array or a scalar) at the elements `mask` of the broadcast result."""
    x = np.asarray(x)
    return x if x.ndim == 0 else np.broadcast_to(x, out.shape)[mask]


def _fix_floor_divide(args, out):
    x1, x2 = args
    cand = np.isnan(out)                # inf // finite: NumPy's NaN
    if np.ndim(x2) == 0:
        if np.isinf(x2):                # finite // inf of other signs: NumPy's -1
            cand[...] = True
    else:
        cand |= np.isinf(x2)
    if not cand.any():
        return
    a, b = _at(x1, out, cand), _at(x2, out, cand)
    inf = np.isinf(a) | np.isinf(b)
    if np.ndim(inf) == 0:
        inf = np.full(int(cand.sum()), bool(inf))
    with np.errstate(all="ignore"):
        q = np.broadcast_to(np.divide(a, b, dtype=out.dtype), inf.shape)
    vals = out[cand]
    vals[inf] = q[inf]                  # floor(x1 / x2): ±inf, ±0 or NaN here
    out[cand] = vals


def _fix_pow(args, out):
    x1, x2 = args
    if np.ndim(x2) or x2 != 0.5:        # only NumPy's sqrt shortcut of ** 0.5
        return
    np.add(out, 0.0, out=out)           # sqrt(-0) = -0: the standard's +0
    bad = np.isnan(out)
    if bad.any():
        out[bad & (np.broadcast_to(x1, out.shape) == -np.inf)] = np.inf


def _fix_expm1(args, out):
    z = np.broadcast_to(args[0], out.shape)
    bad = ~np.isfinite(z)
    if bad.any():
        w = np.exp(z[bad])
        w.real -= 1.0                   # exp's special values, minus one
        out[bad] = w


def _signed_zero(args, out, infinite: str, other: str):
    """Where part `infinite` of z is infinite and part `other` finite, the result's
    part `other` is a zero of the sign of z's (tanh: real/imag, tan: imag/real)."""
    z = np.broadcast_to(args[0], out.shape)
    bad = np.isinf(getattr(z, infinite))
    if bad.any():
        bad &= np.isfinite(getattr(z, other))
        getattr(out, other)[bad] = np.copysign(0.0, getattr(z, other)[bad])


def _fix_tanh(args, out):
    _signed_zero(args, out, "real", "imag")


def _fix_tan(args, out):
    _signed_zero(args, out, "imag", "real")


def _fix_sign(args, out):
    bad = np.isnan(np.broadcast_to(args[0], out.shape))
    if bad.any():
        out[bad] = complex(np.nan, np.nan)


def _pow_numexpr_ok(args):
    e = args[1]
    return not (hasattr(e, "value") and np.ndim(e.value) == 0 and e.value == 0.5) and \
        not (hasattr(e, "shape") and e.shape == () and not hasattr(e, "value"))


#: Function name -> its fix-up (see the module docstring).
SPECIAL = {
    "floor_divide": Special("f", _fix_floor_divide),
    "power": Special("f", _fix_pow, _pow_numexpr_ok),
    "pow": Special("f", _fix_pow, _pow_numexpr_ok),
    "expm1": Special("c", _fix_expm1),
    "tanh": Special("c", _fix_tanh),
    "tan": Special("c", _fix_tan),
    "sign": Special("c", _fix_sign),
}


def _f(name, fn, nargs=(1,), ne=None, keywords=()):
    return Function(name, fn, tuple(nargs), ne, tuple(keywords), SPECIAL.get(name))


def _unary_ne(name):
    return f"{name}({{0}})"


_table = [
    # arithmetic and comparison operators (numexpr spelling is infix)
    _f("add", np.add, (2,), "({0} + {1})"),
    _f("subtract", np.subtract, (2,), "({0} - {1})"),
    _f("multiply", np.multiply, (2,), "({0} * {1})"),
    _f("divide", np.divide, (2,), "({0} / {1})"),
    _f("true_divide", np.true_divide, (2,), "({0} / {1})"),
    _f("floor_divide", np.floor_divide, (2,)),
    _f("remainder", np.remainder, (2,)),
    _f("mod", np.mod, (2,)),
    _f("power", np.power, (2,), "({0} ** {1})"),
    _f("pow", np.power, (2,), "({0} ** {1})"),
    _f("negative", np.negative, (1,), "(-{0})"),
    _f("positive", np.positive, (1,)),
    _f("equal", np.equal, (2,), "({0} == {1})"),
    _f("not_equal", np.not_equal, (2,), "({0} != {1})"),
    _f("less", np.less, (2,), "({0} < {1})"),
    _f("less_equal", np.less_equal, (2,), "({0} <= {1})"),
    _f("greater", np.greater, (2,), "({0} > {1})"),
    _f("greater_equal", np.greater_equal, (2,), "({0} >= {1})"),
    _f("bitwise_and", np.bitwise_and, (2,), "({0} & {1})"),
    _f("bitwise_or", np.bitwise_or, (2,), "({0} | {1})"),
    _f("bitwise_xor", np.bitwise_xor, (2,)),
    _f("bitwise_invert", np.invert, (1,)),
    _f("bitwise_not", np.invert, (1,)),
    _f("invert", np.invert, (1,)),
    _f("left_shift", np.left_shift, (2,)),
    _f("bitwise_left_shift", np.left_shift, (2,)),
    _f("right_shift", np.right_shift, (2,)),
    _f("bitwise_right_shift", np.right_shift, (2,)),
    _f("logical_and", np.logical_and, (2,)),
    _f("logical_or", np.logical_or, (2,)),
    _f("logical_xor", np.logical_xor, (2,)),
    _f("logical_not", np.logical_not, (1,)),
    # elementwise math
    _f("abs", np.abs, (1,), "abs({0})"),
    _f("absolute", np.absolute, (1,), "abs({0})"),
    _f("sqrt", np.sqrt, (1,), _unary_ne("sqrt")),
    _f("square", np.square, (1,)),
    _f("reciprocal", np.reciprocal, (1,)),
    _f("exp", np.exp, (1,), _unary_ne("exp")),
    _f("expm1", np.expm1, (1,), _unary_ne("expm1")),
    _f("exp2", np.exp2, (1,)),
    _f("log", np.log, (1,), _unary_ne("log")),
    _f("log10", np.log10, (1,), _unary_ne("log10")),
    _f("log1p", np.log1p, (1,), _unary_ne("log1p")),
    _f("log2", np.log2, (1,)),
    _f("logaddexp", np.logaddexp, (2,)),
    _f("logaddexp2", np.logaddexp2, (2,)),
    _f("sin", np.sin, (1,), _unary_ne("sin")),
    _f("cos", np.cos, (1,), _unary_ne("cos")),
    _f("tan", np.tan, (1,), _unary_ne("tan")),
    _f("arcsin", np.arcsin, (1,), _unary_ne("arcsin")),
    _f("arccos", np.arccos, (1,), _unary_ne("arccos")),
    _f("arctan", np.arctan, (1,), _unary_ne("arctan")),
    _f("arctan2", np.arctan2, (2,), "arctan2({0}, {1})"),
    _f("asin", np.arcsin, (1,), _unary_ne("arcsin")),
    _f("acos", np.arccos, (1,), _unary_ne("arccos")),
    _f("atan", np.arctan, (1,), _unary_ne("arctan")),
    _f("atan2", np.arctan2, (2,), "arctan2({0}, {1})"),
    _f("sinh", np.sinh, (1,), _unary_ne("sinh")),
    _f("cosh", np.cosh, (1,), _unary_ne("cosh")),
    _f("tanh", np.tanh, (1,), _unary_ne("tanh")),
    _f("arcsinh", np.arcsinh, (1,), _unary_ne("arcsinh")),
    _f("arccosh", np.arccosh, (1,), _unary_ne("arccosh")),
    _f("arctanh", np.arctanh, (1,), _unary_ne("arctanh")),
    _f("asinh", np.arcsinh, (1,), _unary_ne("arcsinh")),
    _f("acosh", np.arccosh, (1,), _unary_ne("arccosh")),
    _f("atanh", np.arctanh, (1,), _unary_ne("arctanh")),
    _f("hypot", np.hypot, (2,), "hypot({0}, {1})"),
    _f("copysign", np.copysign, (2,), "copysign({0}, {1})"),
    _f("nextafter", np.nextafter, (2,), "nextafter({0}, {1})"),
    _f("floor", np.floor, (1,), _unary_ne("floor")),
    _f("ceil", np.ceil, (1,), _unary_ne("ceil")),
    _f("trunc", np.trunc, (1,), _unary_ne("trunc")),
    _f("round", np.round, (1, 2), None, ("decimals",)),
    _f("rint", np.rint, (1,)),
    _f("sign", np.sign, (1,)),
    _f("signbit", np.signbit, (1,)),
    _f("real", np.real, (1,)),
    _f("imag", np.imag, (1,)),
    _f("conj", np.conj, (1,)),
    _f("conjugate", np.conjugate, (1,)),
    _f("isnan", np.isnan, (1,)),
    _f("isinf", np.isinf, (1,)),
    _f("isfinite", np.isfinite, (1,)),
    _f("maximum", np.maximum, (2,)),
    _f("minimum", np.minimum, (2,)),
    _f("fmax", np.fmax, (2,)),
    _f("fmin", np.fmin, (2,)),
    _f("fmod", np.fmod, (2,)),
    _f("clip", np.clip, (3,)),
    _f("where", np.where, (3,), "where({0}, {1}, {2})"),
    # python-blosc2's string functions over fixed-width strings (NumPy's np.strings)
    _f("startswith", np.strings.startswith, (2,)),
    _f("endswith", np.strings.endswith, (2,)),
    _f("contains", lambda a, sub: np.strings.find(a, sub) >= 0, (2,)),
    _f("lower", np.strings.lower, (1,)),
    _f("upper", np.strings.upper, (1,)),
]

FUNCTIONS: dict[str, Function] = {f.name: f for f in _table}

# reductions: name -> keywords accepted in string expressions (NumPy's names)
_AXIS_KEEP = ("axis", "keepdims")
REDUCTIONS: dict[str, tuple] = {
    "sum": _AXIS_KEEP + ("dtype", "where"),
    "prod": _AXIS_KEEP + ("dtype", "where"),
    "mean": _AXIS_KEEP + ("dtype", "where"),
    "std": _AXIS_KEEP + ("dtype", "ddof", "where"),
    "var": _AXIS_KEEP + ("dtype", "ddof", "where"),
    "min": _AXIS_KEEP + ("where", "initial"),
    "max": _AXIS_KEEP + ("where", "initial"),
    "any": _AXIS_KEEP + ("where",),
    "all": _AXIS_KEEP + ("where",),
    "argmin": _AXIS_KEEP,
    "argmax": _AXIS_KEEP,
    "count_nonzero": _AXIS_KEEP,
}

# ast operator class name -> function name
BINARY_OPERATORS = {
    "Add": "add", "Sub": "subtract", "Mult": "multiply", "Div": "divide",
    "FloorDiv": "floor_divide", "Mod": "remainder", "Pow": "power",
    "BitAnd": "bitwise_and", "BitOr": "bitwise_or", "BitXor": "bitwise_xor",
    "LShift": "left_shift", "RShift": "right_shift",
    "Eq": "equal", "NotEq": "not_equal", "Lt": "less", "LtE": "less_equal",
    "Gt": "greater", "GtE": "greater_equal",
}
UNARY_OPERATORS = {"USub": "negative", "UAdd": "positive", "Invert": "invert",
                   "Not": "logical_not"}


def lookup(name: str) -> Function:
    """The function called `name`, or a ValueError listing what exists."""
    try:
        return FUNCTIONS[name]
    except KeyError:
        raise ValueError(f"unknown function {name!r} in expression; known functions: "
                         f"{', '.join(sorted(FUNCTIONS))}") from None
