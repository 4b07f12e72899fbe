"""Vectorized float64 math from the C core, and running sums.

The C core computes ``sin``, ``cos``, ``exp``, ``log``, ``expm1``, ``log1p``,
``arctan``, ``arctan2``, ``tanh``, ``sinh``, ``cosh``, ``tan`` and ``power`` of float64
arrays with AVX2+FMA (4 lanes) or AVX-512F (8 lanes) kernels that give the bits of a scalar
reference (same operations in the same order); lanes a kernel does not serve -- NaN,
infinities, zeros, overflow and underflow edges, subnormal results, huge arguments --
go to the C library, so special values are exactly NumPy's (csrc/math/vmath_fns.h
describes the algorithms).  Anything else -- other dtypes, non-contiguous arrays,
scalars, binary operands of different shapes -- goes to NumPy.

Accuracy contract (:data:`ULP`, measured against glibc through NumPy over the
whole range: random bit patterns of every exponent plus dense samples near the
edges): ``exp``, ``log``, ``expm1``, ``log1p``, ``cosh``, ``tan``, ``power`` within
1 ulp; ``arctan``, ``arctan2``, ``tanh``, ``sinh`` within 2; ``sin``/``cos`` within
1 ulp for |x| <= 1000 and 2 up to 1e5.  Results are bit-identical to NumPy's only where NumPy's
implementation is used.

Which implementation the expression engine uses for each function
(:func:`implementation`) is decided once per process by timing ours against NumPy's
ufunc on 32 Ki elements in cache (NumPy's own loops are SVML-vectorized on AVX-512
hosts and may win); ``NDPACK_VMATH=ours|numpy|auto`` overrides it.  The functions of
this module always use ours where they can.

Examples
--------
>>> import numpy as np
>>> from ndpack import vmath
>>> x = np.linspace(-3, 3, 7)
>>> bool(np.allclose(vmath.sin(x), np.sin(x), rtol=1e-15, atol=1e-16))
True
>>> vmath.cos(np.array([0.0, np.pi]))
array([ 1., -1.])
>>> vmath.exp(np.array([0.0, 1.0, -np.inf]))
array([1.        , 2.71828183, 0.        ])
>>> vmath.arctan2(np.array([1.0, -0.0]), np.array([-1.0, -1.0]))
array([ 2.35619449, -3.14159265])
>>> vmath.implementation("exp") in ("ours", "numpy")
True
"""

from __future__ import annotations

import os
import time

import numpy as np

from ndpack._core import (VMATH_BINARY, VMATH_ISAS, VMATH_UNARY, cumsum_inplace,
                          vmath_binary, vmath_binary_scalar, vmath_isa, vmath_unary,
                          vsincos)

__all__ = ["ULP", "arctan", "arctan2", "cos", "cosh", "exp", "expm1", "fast_ufunc",
           "implementation", "isa", "log", "log1p", "power", "reference", "running_sum",
           "sin", "sinh", "tan", "tanh"]

#: The measured bound, in ulp of the C library's value, of each function.
ULP = {"exp": 1, "log": 1, "expm1": 1, "log1p": 1, "cosh": 1, "tan": 1, "arctan": 2,
       "arctan2": 2, "tanh": 2, "sinh": 2, "sin": 1, "cos": 1, "power": 1}
_UNARY = {name: i for i, name in enumerate(VMATH_UNARY)}
_BINARY = {name: i for i, name in enumerate(VMATH_BINARY)}
NAMES = ("sin", "cos") + VMATH_UNARY + VMATH_BINARY


def isa() -> str:
    """The instruction set of the kernels now (``"scalar"``, ``"avx2"``, ``"avx512"``)."""
    return vmath_isa()


def _ours_ok(x, out) -> bool:
    return (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.ndim > 0
            and out.dtype == np.float64 and x.shape == out.shape
            and x.flags.c_contiguous and out.flags.c_contiguous and out.flags.writeable)


def _unary(name: str, x, out, isa: int = -1):
    ref = getattr(np, name)
    if out is None:
        if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.ndim > 0):
            return ref(x)
        out = np.empty(x.shape, np.float64)
    if _ours_ok(x, out):
        vmath_unary(_UNARY[name], x.reshape(-1), out.reshape(-1), isa)
        return out
    return ref(x, out=out)


# power exponents NumPy's own paths give exactly (squares, roots, reciprocals): NumPy's
_NUMPY_EXPONENTS = (0.0, 0.5, 1.0, 2.0, -1.0)


def _scalar_b(name: str, b):
    """b as a float when it is one float64 value the kernels take for every a."""
    if isinstance(b, (float, np.float64)) or (isinstance(b, np.ndarray) and b.ndim == 0
                                              and b.dtype == np.float64):
        v = float(b)
        return None if name == "power" and v in _NUMPY_EXPONENTS else v
    return None


def _binary(name: str, a, b, out, isa: int = -1):
    ref = getattr(np, name)
    bs = _scalar_b(name, b) if isinstance(a, np.ndarray) else None
    if bs is not None and a.dtype == np.float64 and a.ndim > 0:
        if out is None:
            out = np.empty(a.shape, np.float64)
        if _ours_ok(a, out):
            vmath_binary_scalar(_BINARY[name], a.reshape(-1), bs, out.reshape(-1), isa)
            return out
        return ref(a, b, out=out)
    arrays = isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    if not (arrays and a.dtype == np.float64 and b.dtype == np.float64
            and a.shape == b.shape and a.ndim > 0 and b.flags.c_contiguous):
        return ref(a, b) if out is None else ref(a, b, out=out)
    if out is None:
        out = np.empty(a.shape, np.float64)
    if _ours_ok(a, out):
        vmath_binary(_BINARY[name], a.reshape(-1), b.reshape(-1), out.reshape(-1), isa)
        return out
    return ref(a, b, out=out)


def _apply(x, out, cosine: bool, fallback):
    if out is None:
        if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.ndim > 0):
            return fallback(x)
        out = np.empty(x.shape, np.float64)
    if isinstance(x, np.ndarray) and x.dtype == np.float64 and out.dtype == np.float64 \
            and x.shape == out.shape and x.flags.c_contiguous and out.flags.c_contiguous \
            and out.flags.writeable:
        vsincos(x.reshape(-1), out.reshape(-1), cosine)
        return out
    return fallback(x, out=out)


def sin(x, out=None):
    """``sin(x)``; float64 C-contiguous arrays in the C core, the rest by NumPy."""
    return _apply(x, out, False, np.sin)


def cos(x, out=None):
    """``cos(x)``; float64 C-contiguous arrays in the C core, the rest by NumPy."""
    return _apply(x, out, True, np.cos)


def exp(x, out=None):
    """``exp(x)``; float64 C-contiguous arrays in the C core (<= 1 ulp), the rest by NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.exp(np.array([0.0, 709.0, 710.0]))
    array([1.00000000e+000, 8.21840746e+307,             inf])
    """
    return _unary("exp", x, out)


def log(x, out=None):
    """``log(x)``; float64 C-contiguous arrays in the C core (<= 1 ulp), the rest by NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.log(np.array([1.0, np.e, 0.0]))
    array([  0.,   1., -inf])
    """
    return _unary("log", x, out)


def expm1(x, out=None):
    """``expm1(x)``; float64 C-contiguous arrays in the C core (<= 1 ulp), else NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.expm1(np.array([1e-10, -0.0]))
    array([ 1.e-10, -0.e+00])
    """
    return _unary("expm1", x, out)


def log1p(x, out=None):
    """``log1p(x)``; float64 C-contiguous arrays in the C core (<= 1 ulp), else NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.log1p(np.array([1e-10, -1.0]))
    array([1.e-10,   -inf])
    """
    return _unary("log1p", x, out)


def arctan(x, out=None):
    """``arctan(x)``; float64 C-contiguous arrays in the C core (<= 2 ulp), else NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.arctan(np.array([1.0, -np.inf]))
    array([ 0.78539816, -1.57079633])
    """
    return _unary("arctan", x, out)


def tanh(x, out=None):
    """``tanh(x)``; float64 C-contiguous arrays in the C core (<= 2 ulp), else NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.tanh(np.array([0.5, 30.0]))
    array([0.46211716, 1.        ])
    """
    return _unary("tanh", x, out)


def sinh(x, out=None):
    """``sinh(x)``; float64 C-contiguous arrays in the C core (<= 2 ulp), else NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.sinh(np.array([1.0, -1.0]))
    array([ 1.17520119, -1.17520119])
    """
    return _unary("sinh", x, out)


def cosh(x, out=None):
    """``cosh(x)``; float64 C-contiguous arrays in the C core (<= 1 ulp), else NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.cosh(np.array([0.0, 1.0]))
    array([1.        , 1.54308063])
    """
    return _unary("cosh", x, out)


def tan(x, out=None):
    """``tan(x)``; float64 C-contiguous arrays in the C core (<= 1 ulp), else NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.tan(np.array([0.0, np.pi / 4]))
    array([0., 1.])
    """
    return _unary("tan", x, out)


def arctan2(y, x, out=None):
    """``arctan2(y, x)``; float64 C-contiguous arrays of one shape in the C core
    (<= 2 ulp), anything else (broadcasting, other dtypes, scalars) by NumPy.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.arctan2(np.array([1.0, 0.0]), np.array([1.0, -0.0]))
    array([0.78539816, 3.14159265])
    >>> vmath.arctan2(np.array([1.0, 2.0]), 1.0)       # broadcast: NumPy
    array([0.78539816, 1.10714872])
    """
    return _binary("arctan2", y, x, out)


def power(x, y, out=None):
    """``x ** y``; float64 C-contiguous `x` with `y` of its shape or one float in the C
    core (<= 1 ulp), anything else by NumPy -- also the exponents 0, 0.5, 1, 2, -1 and
    integer scalars, which NumPy computes exactly or by its own paths.

    Examples
    --------
    >>> import numpy as np
    >>> from ndpack import vmath
    >>> vmath.power(np.array([4.0, 8.0, 0.0, -8.0]), 1.5)
    array([ 8.      , 22.627417,  0.      ,       nan])
    >>> vmath.power(np.array([2.0, 2.0]), np.array([10.0, -1074.0]))
    array([1.024e+003, 4.941e-324])
    """
    return _binary("power", x, y, out)


def reference(name: str, *args, isa: str = "scalar"):
    """``name`` of the float64 arrays `args` by one kernel: ``isa`` ``"scalar"`` (the
    reference), ``"avx2"`` or ``"avx512"`` (ValueError where the CPU lacks it); for
    tests comparing the ISAs.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0.1, 3, 37)
    >>> bool((reference("log", x) == reference("log", x, isa=isa())).all())
    True
    """
    code = VMATH_ISAS.index(isa)
    if name in ("sin", "cos"):
        raise ValueError("sin/cos: set_isa('scalar') selects their reference")
    args = [a if isinstance(a, float) else np.ascontiguousarray(a, np.float64) for a in args]
    if name in _BINARY:
        return _binary(name, *args, None, code)
    return _unary(name, args[0], None, code)


# ---- the engine's choice: ours or NumPy's ufunc, per function, once per process ----

_OURS = {"sin": sin, "cos": cos, "exp": exp, "log": log, "expm1": expm1, "log1p": log1p,
         "arctan": arctan, "tanh": tanh, "sinh": sinh, "cosh": cosh, "tan": tan,
         "arctan2": arctan2, "power": power}
_CHOICE: dict = {}
_SAMPLE = {"log": (0.01, 100.0), "log1p": (-0.5, 100.0), "arctan": (-20.0, 20.0),
           "tan": (-1.5, 1.5), "sin": (-20.0, 20.0), "cos": (-20.0, 20.0)}


def _cpu_ns(fn, args, out, repeats: int = 7) -> int:
    best = None
    for _ in range(repeats):
        t = time.thread_time_ns()
        fn(*args, out=out)
        t = time.thread_time_ns() - t
        best = t if best is None else min(best, t)
    return best


def _measure(name: str) -> str:
    """'ours' or 'numpy': the faster on 32 Ki float64 in cache (thread CPU time, best
    of 7 after a warm-up call each)."""
    lo, hi = _SAMPLE.get(name, (-3.0, 3.0))
    rng = np.random.default_rng(0)
    args = [rng.uniform(lo, hi, 32768) for _ in range(2 if name in _BINARY else 1)]
    if name == "power":                  # the engine's case: a float exponent
        args = [rng.uniform(0.1, 10.0, 32768), 1.2]
    out = np.empty(32768)
    ref = getattr(np, name)
    with np.errstate(all="ignore"):
        for fn in (_OURS[name], ref):
            fn(*args, out=out)
        ours, theirs = _cpu_ns(_OURS[name], args, out), _cpu_ns(ref, args, out)
    return "ours" if ours < theirs else "numpy"


def implementation(name: str) -> str:
    """``"ours"`` or ``"numpy"``: what the expression engine uses for float64 `name`
    (``NDPACK_VMATH=ours|numpy`` forces it; ``auto``, the default, measures once).

    Examples
    --------
    >>> implementation("arctan2") in ("ours", "numpy")
    True
    """
    if name not in _OURS:
        raise KeyError(f"no vmath kernel for {name!r}")
    env = os.environ.get("NDPACK_VMATH", "auto").strip().lower()
    if env in ("ours", "numpy"):
        return env
    if name not in _CHOICE:
        _CHOICE[name] = _measure(name)
    return _CHOICE[name]


def fast_ufunc(ufunc, dtype):
    """The callable the engine's ufunc programs use for `ufunc` on `dtype` steps: ours
    where :func:`implementation` says so (float64 only), else `ufunc` itself.

    Examples
    --------
    >>> import numpy as np
    >>> fast_ufunc(np.exp, np.float32) is np.exp
    True
    >>> fast_ufunc(np.exp, np.float64) in (exp, np.exp)
    True
    """
    name = getattr(ufunc, "__name__", None)
    if np.dtype(dtype) != np.float64 or name not in _OURS or _OURS_UFUNCS.get(name) is not ufunc:
        return ufunc
    return _OURS[name] if implementation(name) == "ours" else ufunc


_OURS_UFUNCS = {name: getattr(np, name) for name in _OURS}


def running_sum(x, code: str, outer: int, n: int, inner: int, carry) -> None:
    """Running sums in place along the middle axis of the C-contiguous buffer `x` seen
    as ``(outer, n, inner)``, starting from `carry` (``outer * inner`` elements,
    updated to the last row).  `code` is ``"f8"``, ``"f4"`` or ``"u8"`` (int64 and
    uint64, wrapping).  The additions are np.cumsum's, in its order: same bits.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(6.0).reshape(2, 3)
    >>> carry = np.array([10.0, 20.0])
    >>> running_sum(x, "f8", 2, 3, 1, carry)
    >>> x.tolist(), carry.tolist()
    ([[10.0, 11.0, 13.0], [23.0, 27.0, 32.0]], [13.0, 32.0])
    """
    cumsum_inplace(x, code, int(outer), int(n), int(inner), carry)
