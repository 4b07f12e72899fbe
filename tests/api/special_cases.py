"""The special cases of the array API standard's elementwise functions (revision
2024.12, "Special cases" of each function), as one table, and the code that turns it
into expected values.

Each rule is one bullet of the standard in a terse notation of ours: conditions joined
by ``and``, an arrow, the result.  Operands are ``x`` (unary), ``x1``/``x2`` (binary),
``a``/``b`` (real and imaginary parts of a complex ``x``).  Conditions::

    is NaN | is +0 | is -0 | is ±0 | is +inf | is -inf | is ±inf | is 1 | is -1
    > 0 | < 0 | > 1 | < 1 | < -1 | finite | pos-finite | neg-finite | nonzero-finite
    nonzero | any | not NaN | not 1 | not 0 | int | odd-int | not odd-int | not int
    |.| > 1 | |.| < 1 | |.| is 1 | is -NaN | is +NaN | is -x1

Results are a value (``NaN``, ``+0``, ``-0``, ``±0`` -- the sign unspecified --,
``+inf``, ``-inf``, ``±inf``, ``1``, ``-1``, a number, ``~π/2`` an approximation),
an operand (``x``, ``x1``, ``x2``, ``|x1|``, ``-|x1|``, ``|x2|``), ``+NaN``/``-NaN``
(a NaN with that sign bit), ``positive``/``negative`` (the sign of a non-NaN result),
``True``/``False``, and for complex results a pair ``(re, im)`` or ``r*cis(b)``
(``r`` times ``cos(b) + sin(b)j``, componentwise), optionally ``- 1``.

Complex functions that the standard defines "as if implemented as" another one
(``asin`` as ``-1j * asinh(x*1j)``, ``cos`` as ``cosh(x*1j)``, ...) are :data:`DERIVED`,
``log2``/``log10`` (``log(x) / log(base)``) :data:`SCALED`;
the symmetries it states (``f(conj(x)) == conj(f(x))``, odd and even functions) extend
every rule to the other quadrants (:data:`SYMMETRIES`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["REAL", "COMPLEX", "DERIVED", "SCALED", "SYMMETRIES", "expected", "check",
           "VALUES"]

REAL = {
    "abs": """
        x is NaN -> NaN
        x is -0 -> +0
        x is -inf -> +inf
    """,
    "acos": """
        x is NaN -> NaN
        x > 1 -> NaN
        x < -1 -> NaN
        x is 1 -> +0
    """,
    "acosh": """
        x is NaN -> NaN
        x < 1 -> NaN
        x is 1 -> +0
        x is +inf -> +inf
    """,
    "add": """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
        x1 is +inf and x2 is -inf -> NaN
        x1 is -inf and x2 is +inf -> NaN
        x1 is +inf and x2 is +inf -> +inf
        x1 is -inf and x2 is -inf -> -inf
        x1 is +inf and x2 finite -> +inf
        x1 is -inf and x2 finite -> -inf
        x1 finite and x2 is +inf -> +inf
        x1 finite and x2 is -inf -> -inf
        x1 is -0 and x2 is -0 -> -0
        x1 is -0 and x2 is +0 -> +0
        x1 is +0 and x2 is -0 -> +0
        x1 is +0 and x2 is +0 -> +0
        x1 is ±0 and x2 nonzero-finite -> x2
        x1 nonzero-finite and x2 is ±0 -> x1
        x1 nonzero-finite and x2 is -x1 -> +0
    """,
    "asin": """
        x is NaN -> NaN
        x > 1 -> NaN
        x < -1 -> NaN
        x is +0 -> +0
        x is -0 -> -0
    """,
    "asinh": """
        x is NaN -> NaN
        x is +0 -> +0
        x is -0 -> -0
        x is +inf -> +inf
        x is -inf -> -inf
    """,
    "atan": """
        x is NaN -> NaN
        x is +0 -> +0
        x is -0 -> -0
        x is +inf -> ~π/2
        x is -inf -> ~-π/2
    """,
    "atan2": """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
        x1 > 0 and x2 is +0 -> ~π/2
        x1 > 0 and x2 is -0 -> ~π/2
        x1 is +0 and x2 > 0 -> +0
        x1 is +0 and x2 is +0 -> +0
        x1 is +0 and x2 is -0 -> ~π
        x1 is +0 and x2 < 0 -> ~π
        x1 is -0 and x2 > 0 -> -0
        x1 is -0 and x2 is +0 -> -0
        x1 is -0 and x2 is -0 -> ~-π
        x1 is -0 and x2 < 0 -> ~-π
        x1 < 0 and x2 is +0 -> ~-π/2
        x1 < 0 and x2 is -0 -> ~-π/2
        x1 pos-finite and x2 is +inf -> +0
        x1 pos-finite and x2 is -inf -> ~π
        x1 neg-finite and x2 is +inf -> -0
        x1 neg-finite and x2 is -inf -> ~-π
        x1 is +inf and x2 finite -> ~π/2
        x1 is -inf and x2 finite -> ~-π/2
        x1 is +inf and x2 is +inf -> ~π/4
        x1 is +inf and x2 is -inf -> ~3π/4
        x1 is -inf and x2 is +inf -> ~-π/4
        x1 is -inf and x2 is -inf -> ~-3π/4
    """,
    "atanh": """
        x is NaN -> NaN
        x < -1 -> NaN
        x > 1 -> NaN
        x is -1 -> -inf
        x is 1 -> +inf
        x is +0 -> +0
        x is -0 -> -0
    """,
    "ceil": """
        x int -> x
        x is +inf -> +inf
        x is -inf -> -inf
        x is +0 -> +0
        x is -0 -> -0
        x is NaN -> NaN
    """,
    "clip": """
        x is NaN -> NaN
    """,
    "copysign": """
        x1 not NaN and x2 < 0 -> -|x1|
        x1 not NaN and x2 is -0 -> -|x1|
        x1 not NaN and x2 is +0 -> |x1|
        x1 not NaN and x2 > 0 -> |x1|
        x1 not NaN and x2 is -NaN -> -|x1|
        x1 not NaN and x2 is +NaN -> |x1|
        x1 is NaN and x2 < 0 -> -NaN
        x1 is NaN and x2 is -0 -> -NaN
        x1 is NaN and x2 is +0 -> +NaN
        x1 is NaN and x2 > 0 -> +NaN
        x1 is NaN and x2 is -NaN -> -NaN
        x1 is NaN and x2 is +NaN -> +NaN
    """,
    "cos": """
        x is NaN -> NaN
        x is +0 -> 1
        x is -0 -> 1
        x is +inf -> NaN
        x is -inf -> NaN
    """,
    "cosh": """
        x is NaN -> NaN
        x is +0 -> 1
        x is -0 -> 1
        x is +inf -> +inf
        x is -inf -> +inf
    """,
    "divide": """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
        x1 is ±inf and x2 is ±inf -> NaN
        x1 is ±0 and x2 is ±0 -> NaN
        x1 is +0 and x2 > 0 -> +0
        x1 is -0 and x2 > 0 -> -0
        x1 is +0 and x2 < 0 -> -0
        x1 is -0 and x2 < 0 -> +0
        x1 > 0 and x2 is +0 -> +inf
        x1 > 0 and x2 is -0 -> -inf
        x1 < 0 and x2 is +0 -> -inf
        x1 < 0 and x2 is -0 -> +inf
        x1 is +inf and x2 pos-finite -> +inf
        x1 is +inf and x2 neg-finite -> -inf
        x1 is -inf and x2 pos-finite -> -inf
        x1 is -inf and x2 neg-finite -> +inf
        x1 pos-finite and x2 is +inf -> +0
        x1 pos-finite and x2 is -inf -> -0
        x1 neg-finite and x2 is +inf -> -0
        x1 neg-finite and x2 is -inf -> +0
        x1 pos-finite and x2 pos-finite -> positive
        x1 neg-finite and x2 neg-finite -> positive
        x1 pos-finite and x2 neg-finite -> negative
        x1 neg-finite and x2 pos-finite -> negative
    """,
    "equal": """
        x1 is NaN -> False
        x2 is NaN -> False
        x1 is +inf and x2 is +inf -> True
        x1 is -inf and x2 is -inf -> True
        x1 is -0 and x2 is ±0 -> True
        x1 is +0 and x2 is ±0 -> True
    """,
    "exp": """
        x is NaN -> NaN
        x is +0 -> 1
        x is -0 -> 1
        x is +inf -> +inf
        x is -inf -> +0
    """,
    "expm1": """
        x is NaN -> NaN
        x is +0 -> +0
        x is -0 -> -0
        x is +inf -> +inf
        x is -inf -> -1
    """,
    "floor": """
        x int -> x
        x is +inf -> +inf
        x is -inf -> -inf
        x is +0 -> +0
        x is -0 -> -0
        x is NaN -> NaN
    """,
    "hypot": """
        x1 is ±inf and x2 any -> +inf
        x2 is ±inf and x1 any -> +inf
        x1 is ±0 -> |x2|
        x2 is ±0 -> |x1|
        x1 finite and x2 is NaN -> NaN
        x1 is NaN and x2 is NaN -> NaN
        x2 finite and x1 is NaN -> NaN
    """,
    "isfinite": """
        x is ±inf -> False
        x is NaN -> False
        x finite -> True
    """,
    "isinf": """
        x is ±inf -> True
        x finite -> False
        x is NaN -> False
    """,
    "isnan": """
        x is NaN -> True
        x not NaN -> False
    """,
    "log": """
        x is NaN -> NaN
        x < 0 -> NaN
        x is ±0 -> -inf
        x is 1 -> +0
        x is +inf -> +inf
    """,
    "log1p": """
        x is NaN -> NaN
        x < -1 -> NaN
        x is -1 -> -inf
        x is -0 -> -0
        x is +0 -> +0
        x is +inf -> +inf
    """,
    "log2": """
        x is NaN -> NaN
        x < 0 -> NaN
        x is ±0 -> -inf
        x is 1 -> +0
        x is +inf -> +inf
    """,
    "log10": """
        x is NaN -> NaN
        x < 0 -> NaN
        x is ±0 -> -inf
        x is 1 -> +0
        x is +inf -> +inf
    """,
    "logaddexp": """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
        x1 is +inf and x2 not NaN -> +inf
        x1 not NaN and x2 is +inf -> +inf
    """,
    "maximum": """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
    """,
    "minimum": """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
    """,
    "multiply": """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
        x1 is ±inf and x2 is ±0 -> NaN
        x1 is ±0 and x2 is ±inf -> NaN
        x1 is +inf and x2 is +inf -> +inf
        x1 is +inf and x2 is -inf -> -inf
        x1 is -inf and x2 is +inf -> -inf
        x1 is -inf and x2 is -inf -> +inf
        x1 is +inf and x2 nonzero-finite -> sign(x2)inf
        x1 is -inf and x2 nonzero-finite -> -sign(x2)inf
        x1 nonzero-finite and x2 is +inf -> sign(x1)inf
        x1 nonzero-finite and x2 is -inf -> -sign(x1)inf
        x1 pos-finite and x2 pos-finite -> positive
        x1 neg-finite and x2 neg-finite -> positive
        x1 pos-finite and x2 neg-finite -> negative
        x1 neg-finite and x2 pos-finite -> negative
    """,
    "nextafter": """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
        x1 is -0 and x2 is +0 -> +0
        x1 is +0 and x2 is -0 -> -0
    """,
    "not_equal": """
        x1 is NaN -> True
        x2 is NaN -> True
        x1 is +inf and x2 is -inf -> True
        x1 is -inf and x2 is +inf -> True
        x1 is +inf and x2 is +inf -> False
        x1 is ±0 and x2 is ±0 -> False
    """,
    "pow": """
        x1 not 1 and x2 is NaN -> NaN
        x2 is +0 -> 1
        x2 is -0 -> 1
        x1 is NaN and x2 not 0 -> NaN
        |x1| > 1 and x2 is +inf -> +inf
        |x1| > 1 and x2 is -inf -> +0
        |x1| is 1 and x2 is +inf -> 1
        |x1| is 1 and x2 is -inf -> 1
        x1 is 1 and x2 not NaN -> 1
        |x1| < 1 and x2 is +inf -> +0
        |x1| < 1 and x2 is -inf -> +inf
        x1 is +inf and x2 > 0 -> +inf
        x1 is +inf and x2 < 0 -> +0
        x1 is -inf and x2 > 0 and x2 odd-int -> -inf
        x1 is -inf and x2 > 0 and x2 not odd-int -> +inf
        x1 is -inf and x2 < 0 and x2 odd-int -> -0
        x1 is -inf and x2 < 0 and x2 not odd-int -> +0
        x1 is +0 and x2 > 0 -> +0
        x1 is +0 and x2 < 0 -> +inf
        x1 is -0 and x2 > 0 and x2 odd-int -> -0
        x1 is -0 and x2 > 0 and x2 not odd-int -> +0
        x1 is -0 and x2 < 0 and x2 odd-int -> -inf
        x1 is -0 and x2 < 0 and x2 not odd-int -> +inf
        x1 neg-finite and x2 finite and x2 not int -> NaN
    """,
    "reciprocal": """
        x is NaN -> NaN
        x is +0 -> +inf
        x is -0 -> -inf
        x is +inf -> +0
        x is -inf -> -0
        x pos-finite -> positive
        x neg-finite -> negative
    """,
    "remainder": """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
        x1 is ±inf and x2 is ±inf -> NaN
        x1 is ±0 and x2 is ±0 -> NaN
        x1 is +0 and x2 > 0 -> +0
        x1 is -0 and x2 > 0 -> +0
        x1 is +0 and x2 < 0 -> -0
        x1 is -0 and x2 < 0 -> -0
        x1 > 0 and x2 is ±0 -> NaN
        x1 < 0 and x2 is ±0 -> NaN
        x1 is ±inf and x2 finite -> NaN
        x1 pos-finite and x2 is +inf -> x1
        x1 pos-finite and x2 is -inf -> x2
        x1 neg-finite and x2 is +inf -> x2
        x1 neg-finite and x2 is -inf -> x1
    """,
    "round": """
        x int -> x
        x is +inf -> +inf
        x is -inf -> -inf
        x is +0 -> +0
        x is -0 -> -0
        x is NaN -> NaN
        x is 2.5 -> 2
        x is -2.5 -> -2
        x is 0.5 -> ±0
        x is -0.5 -> ±0
    """,
    "sign": """
        x < 0 -> -1
        x is ±0 -> ±0
        x > 0 -> 1
        x is NaN -> NaN
    """,
    "signbit": """
        x is +0 -> False
        x is -0 -> True
        x is +inf -> False
        x is -inf -> True
        x pos-finite -> False
        x neg-finite -> True
        x is +NaN -> False
        x is -NaN -> True
    """,
    "sin": """
        x is NaN -> NaN
        x is +0 -> +0
        x is -0 -> -0
        x is ±inf -> NaN
    """,
    "sinh": """
        x is NaN -> NaN
        x is +0 -> +0
        x is -0 -> -0
        x is +inf -> +inf
        x is -inf -> -inf
    """,
    "square": """
        x is NaN -> NaN
        x is ±inf -> +inf
        x is ±0 -> +0
    """,
    "sqrt": """
        x is NaN -> NaN
        x < 0 -> NaN
        x is +0 -> +0
        x is -0 -> -0
        x is +inf -> +inf
    """,
    "tan": """
        x is NaN -> NaN
        x is +0 -> +0
        x is -0 -> -0
        x is ±inf -> NaN
    """,
    "tanh": """
        x is NaN -> NaN
        x is +0 -> +0
        x is -0 -> -0
        x is +inf -> 1
        x is -inf -> -1
    """,
    "trunc": """
        x int -> x
        x is +inf -> +inf
        x is -inf -> -inf
        x is +0 -> +0
        x is -0 -> -0
        x is NaN -> NaN
    """,
}
REAL["subtract"] = """
        x1 is NaN -> NaN
        x2 is NaN -> NaN
        x1 is +inf and x2 is +inf -> NaN
        x1 is -inf and x2 is -inf -> NaN
        x1 is +inf and x2 finite -> +inf
        x1 finite and x2 is -inf -> +inf
        x1 is -0 and x2 is +0 -> -0
        x1 is +0 and x2 is +0 -> +0
"""  # x1 - x2 is x1 + (-x2): the add rules with x2 negated (a selection)

COMPLEX = {
    "abs": """
        a is ±inf and b any -> +inf
        a any and b is ±inf -> +inf
        a is ±0 -> |b|
        b is ±0 -> |a|
        a is NaN and b finite -> NaN
        a finite and b is NaN -> NaN
        a is NaN and b is NaN -> NaN
    """,
    "acos": """
        a is ±0 and b is +0 -> (~π/2, -0)
        a is ±0 and b is NaN -> (~π/2, NaN)
        a finite and b is +inf -> (~π/2, -inf)
        a nonzero-finite and b is NaN -> (NaN, NaN)
        a is -inf and b pos-finite -> (~π, -inf)
        a is +inf and b pos-finite -> (+0, -inf)
        a is -inf and b is +inf -> (~3π/4, -inf)
        a is +inf and b is +inf -> (~π/4, -inf)
        a is ±inf and b is NaN -> (NaN, ±inf)
        a is NaN and b finite -> (NaN, NaN)
        a is NaN and b is +inf -> (NaN, -inf)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
    "acosh": """
        a is ±0 and b is +0 -> (+0, ~π/2)
        a finite and b is +inf -> (+inf, ~π/2)
        a nonzero-finite and b is NaN -> (NaN, NaN)
        a is +0 and b is NaN -> (NaN, ~±π/2)
        a is -inf and b pos-finite -> (+inf, ~π)
        a is +inf and b pos-finite -> (+inf, +0)
        a is -inf and b is +inf -> (+inf, ~3π/4)
        a is +inf and b is +inf -> (+inf, ~π/4)
        a is ±inf and b is NaN -> (+inf, NaN)
        a is NaN and b finite -> (NaN, NaN)
        a is NaN and b is +inf -> (+inf, NaN)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
    "asinh": """
        a is +0 and b is +0 -> (+0, +0)
        a pos-finite and b is +inf -> (+inf, ~π/2)
        a finite and b is NaN -> (NaN, NaN)
        a is +inf and b pos-finite -> (+inf, +0)
        a is +inf and b is +inf -> (+inf, ~π/4)
        a is NaN and b is +0 -> (NaN, +0)
        a is NaN and b nonzero-finite -> (NaN, NaN)
        a is NaN and b is +inf -> (±inf, NaN)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
    "atanh": """
        a is +0 and b is +0 -> (+0, +0)
        a is +0 and b is NaN -> (+0, NaN)
        a is 1 and b is +0 -> (+inf, +0)
        a pos-finite and b is +inf -> (+0, ~π/2)
        a nonzero-finite and b is NaN -> (NaN, NaN)
        a is +inf and b pos-finite -> (+0, ~π/2)
        a is +inf and b is +inf -> (+0, ~π/2)
        a is +inf and b is NaN -> (+0, NaN)
        a is NaN and b finite -> (NaN, NaN)
        a is NaN and b is +inf -> (±0, ~π/2)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
    "cosh": """
        a is +0 and b is +0 -> (1, +0)
        a is +0 and b is +inf -> (NaN, ±0)
        a is +0 and b is NaN -> (NaN, ±0)
        a nonzero-finite and b is +inf -> (NaN, NaN)
        a nonzero-finite and b is NaN -> (NaN, NaN)
        a is +inf and b is +0 -> (+inf, +0)
        a is +inf and b nonzero-finite -> +inf*cis(b)
        a is +inf and b is +inf -> (±inf, NaN)
        a is +inf and b is NaN -> (+inf, NaN)
        a is NaN and b is ±0 -> (NaN, ±0)
        a is NaN and b nonzero-finite -> (NaN, NaN)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
    "exp": """
        a is ±0 and b is +0 -> (1, +0)
        a finite and b is +inf -> (NaN, NaN)
        a finite and b is NaN -> (NaN, NaN)
        a is +inf and b is +0 -> (+inf, +0)
        a is -inf and b finite -> +0*cis(b)
        a is +inf and b nonzero-finite -> +inf*cis(b)
        a is -inf and b is +inf -> (±0, ±0)
        a is +inf and b is +inf -> (±inf, NaN)
        a is -inf and b is NaN -> (±0, ±0)
        a is +inf and b is NaN -> (±inf, NaN)
        a is NaN and b is +0 -> (NaN, +0)
        a is NaN and b not 0 -> (NaN, NaN)
    """,
    "expm1": """
        a is ±0 and b is +0 -> (±0, +0)
        a finite and b is +inf -> (NaN, NaN)
        a finite and b is NaN -> (NaN, NaN)
        a is +inf and b is +0 -> (+inf, +0)
        a is -inf and b finite -> +0*cis(b) - 1
        a is +inf and b nonzero-finite -> +inf*cis(b) - 1
        a is -inf and b is +inf -> (-1, ±0)
        a is +inf and b is +inf -> (±inf, NaN)
        a is -inf and b is NaN -> (-1, ±0)
        a is +inf and b is NaN -> (±inf, NaN)
        a is NaN and b is +0 -> (NaN, +0)
        a is NaN and b not 0 -> (NaN, NaN)
    """,
    "isfinite": """
        a is NaN -> False
        b is NaN -> False
        a is ±inf -> False
        b is ±inf -> False
        a finite and b finite -> True
    """,
    "isinf": """
        a is ±inf -> True
        b is ±inf -> True
        a finite and b finite -> False
        a is NaN and b finite -> False
        a finite and b is NaN -> False
        a is NaN and b is NaN -> False
    """,
    "isnan": """
        a is NaN -> True
        b is NaN -> True
        a not NaN and b not NaN -> False
    """,
    "log": """
        a is -0 and b is +0 -> (-inf, ~π)
        a is +0 and b is +0 -> (-inf, +0)
        a finite and b is +inf -> (+inf, ~π/2)
        a finite and b is NaN -> (NaN, NaN)
        a is -inf and b pos-finite -> (+inf, ~π)
        a is +inf and b pos-finite -> (+inf, +0)
        a is -inf and b is +inf -> (+inf, ~3π/4)
        a is +inf and b is +inf -> (+inf, ~π/4)
        a is ±inf and b is NaN -> (+inf, NaN)
        a is NaN and b finite -> (NaN, NaN)
        a is NaN and b is +inf -> (+inf, NaN)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
    "log1p": """
        a is -1 and b is +0 -> (-inf, +0)
        a finite and b is +inf -> (+inf, ~π/2)
        a finite and b is NaN -> (NaN, NaN)
        a is -inf and b pos-finite -> (+inf, ~π)
        a is +inf and b pos-finite -> (+inf, +0)
        a is -inf and b is +inf -> (+inf, ~3π/4)
        a is +inf and b is +inf -> (+inf, ~π/4)
        a is ±inf and b is NaN -> (+inf, NaN)
        a is NaN and b finite -> (NaN, NaN)
        a is NaN and b is +inf -> (+inf, NaN)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
    "sign": """
        a is ±0 and b is ±0 -> (±0, ±0)
        a is NaN -> (NaN, NaN)
        b is NaN -> (NaN, NaN)
    """,
    "sinh": """
        a is +0 and b is +0 -> (+0, +0)
        a is +0 and b is +inf -> (±0, NaN)
        a is +0 and b is NaN -> (±0, NaN)
        a pos-finite and b is +inf -> (NaN, NaN)
        a pos-finite and b is NaN -> (NaN, NaN)
        a is +inf and b is +0 -> (+inf, +0)
        a is +inf and b pos-finite -> +inf*cis(b)
        a is +inf and b is +inf -> (±inf, NaN)
        a is +inf and b is NaN -> (±inf, NaN)
        a is NaN and b is +0 -> (NaN, +0)
        a is NaN and b nonzero-finite -> (NaN, NaN)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
    "sqrt": """
        a is ±0 and b is +0 -> (+0, +0)
        a any and b is +inf -> (+inf, +inf)
        a finite and b is NaN -> (NaN, NaN)
        a is -inf and b pos-finite -> (+0, +inf)
        a is +inf and b pos-finite -> (+inf, +0)
        a is -inf and b is NaN -> (NaN, ±inf)
        a is +inf and b is NaN -> (+inf, NaN)
        a is NaN and b finite -> (NaN, NaN)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
    "tanh": """
        a is +0 and b is +0 -> (+0, +0)
        a nonzero-finite and b is +inf -> (NaN, NaN)
        a is +0 and b is +inf -> (+0, NaN)
        a nonzero-finite and b is NaN -> (NaN, NaN)
        a is +0 and b is NaN -> (+0, NaN)
        a is +inf and b pos-finite -> (1, +0)
        a is +inf and b is +inf -> (1, ±0)
        a is +inf and b is NaN -> (1, ±0)
        a is NaN and b is +0 -> (NaN, +0)
        a is NaN and b nonzero -> (NaN, NaN)
        a is NaN and b is NaN -> (NaN, NaN)
    """,
}
# The standard's sqrt table says "a is -infinity and b is a positive finite number:
# NaN + NaN j" where C99 (and every other reading of the principal root) gives
# +0 + inf j; its own note on branch cuts follows C99.  We keep C99's value above.

#: f(z) is g(z * 1j) times a unit: name -> (g, "-1j" or "1"): "as if implemented as".
DERIVED = {
    "asin": ("asinh", "-1j"), "atan": ("atanh", "-1j"), "cos": ("cosh", "1"),
    "sin": ("sinh", "-1j"), "tan": ("tanh", "-1j"),
}

#: f(z) is g(z) times a positive constant: "the standard change of base formula".
SCALED = {"log2": ("log", 1 / math.log(2)), "log10": ("log", 1 / math.log(10))}

#: The symmetries the standard states: "conj" (f(conj(z)) == conj(f(z))), "odd"
#: (f(-z) == -f(z)), "even" (f(-z) == f(z)).
SYMMETRIES = {
    "acos": ("conj",), "acosh": ("conj",), "asinh": ("conj", "odd"),
    "atanh": ("conj", "odd"), "cosh": ("conj", "even"), "exp": ("conj",),
    "expm1": ("conj",), "log": ("conj",), "log1p": ("conj",), "sinh": ("conj", "odd"),
    "sqrt": ("conj",), "tanh": ("conj", "odd"),
}

#: The values special cases are checked at (each pair of them for binary functions and
#: complex numbers).
VALUES = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0,
          2.5, -2.5, 7.25]


# ---- conditions ----------------------------------------------------------------------

def _is_int(v):
    return math.isfinite(v) and v == math.floor(v)


_PRED = {
    "is NaN": math.isnan,
    "is +NaN": lambda v: math.isnan(v) and not math.copysign(1, v) < 0,
    "is -NaN": lambda v: math.isnan(v) and math.copysign(1, v) < 0,
    "is +0": lambda v: v == 0 and math.copysign(1, v) > 0,
    "is -0": lambda v: v == 0 and math.copysign(1, v) < 0,
    "is ±0": lambda v: v == 0,
    "is +inf": lambda v: v == math.inf,
    "is -inf": lambda v: v == -math.inf,
    "is ±inf": math.isinf,
    "> 0": lambda v: v > 0, "< 0": lambda v: v < 0, "> 1": lambda v: v > 1,
    "< 1": lambda v: v < 1, "< -1": lambda v: v < -1,
    "finite": math.isfinite,
    "pos-finite": lambda v: math.isfinite(v) and v > 0,
    "neg-finite": lambda v: math.isfinite(v) and v < 0,
    "nonzero-finite": lambda v: math.isfinite(v) and v != 0,
    "nonzero": lambda v: not math.isnan(v) and v != 0,
    "any": lambda v: True,
    "not NaN": lambda v: not math.isnan(v),
    "not 1": lambda v: v != 1,
    "not 0": lambda v: v != 0,
    "int": _is_int,
    "odd-int": lambda v: _is_int(v) and v % 2 == 1,
    "not odd-int": lambda v: not (_is_int(v) and v % 2 == 1),
    "not int": lambda v: not _is_int(v),
}


def _condition(text):
    """(operand, predicate(env)) of one condition."""
    name, _, rest = text.strip().partition(" ")
    if name.startswith("|"):                       # |x1| > 1
        name, rest = name.strip("|"), rest
        op, num = rest.split()
        num = float(num)
        test = {">": lambda v: abs(v) > num, "<": lambda v: abs(v) < num,
                "is": lambda v: abs(v) == num}[op]
        return lambda env: test(env[name])
    if rest == "is -x1":
        return lambda env: env["x2"] == -env["x1"]
    if rest in _PRED:
        pred = _PRED[rest]
        return lambda env: pred(env[name])
    if rest.startswith("is "):                     # is 2.5
        num = float(rest[3:])
        return lambda env: env[name] == num
    raise ValueError(f"unknown condition {text!r}")


# ---- results -------------------------------------------------------------------------

class Want:
    """One expected real number: `kind` is "exact" (value and sign of zero), "nan"
    (any NaN, or with sign bit `sign` when given), "zero"/"inf" (sign unspecified),
    "approx" (|value| within a tolerance, `signs` both allowed when `either`),
    "sign" (a non-NaN result of sign `sign`), "bool"."""

    def __init__(self, kind, value=None, sign=None):
        self.kind, self.value, self.sign = kind, value, sign

    def __neg__(self):
        if self.kind in ("exact", "approx"):
            return Want(self.kind, -self.value, self.sign)
        if self.kind == "sign":
            return Want("sign", None, -self.sign)
        if self.kind == "nan" and self.sign is not None:
            return Want("nan", None, -self.sign)
        return self

    def scaled(self, k):
        """This value times the positive constant `k` (zeros, infinities, NaN stay)."""
        if self.kind in ("exact", "approx") and math.isfinite(self.value) and self.value:
            return Want("approx", self.value * k, self.sign)
        return self

    def holds(self, got, rtol):
        if self.kind == "bool":
            return bool(got) is self.value
        got = float(got)
        if self.kind == "nan":
            return math.isnan(got) and (self.sign is None or
                                        math.copysign(1, got) == self.sign)
        if self.kind == "zero":
            return got == 0
        if self.kind == "inf":
            return math.isinf(got)
        if self.kind == "sign":
            return not math.isnan(got) and math.copysign(1, got) == self.sign
        if self.kind == "approx":
            return (math.isclose(got, self.value, rel_tol=rtol) or
                    (self.sign == "either" and math.isclose(got, -self.value, rel_tol=rtol)))
        return got == self.value and (got != 0 or
                                      math.copysign(1, got) == math.copysign(1, self.value))

    def __repr__(self):
        return f"{self.kind}:{self.value if self.sign is None else (self.value, self.sign)}"


_PI = {"π/2": math.pi / 2, "π": math.pi, "π/4": math.pi / 4, "3π/4": 3 * math.pi / 4}


def _value(token, env):
    """The Want of a real result token."""
    t = token.strip()
    if t == "NaN":
        return Want("nan")
    if t in ("+NaN", "-NaN"):
        return Want("nan", None, 1.0 if t[0] == "+" else -1.0)
    if t == "±0":
        return Want("zero")
    if t == "±inf":
        return Want("inf")
    if t in ("True", "False"):
        return Want("bool", t == "True")
    if t in ("positive", "negative"):
        return Want("sign", None, 1.0 if t == "positive" else -1.0)
    if t.startswith("~"):
        body, either = t[1:], False
        if body.startswith("±"):
            body, either = body[1:], True
        neg = body.startswith("-")
        v = _PI[body.lstrip("-")]
        return Want("approx", -v if neg else v, "either" if either else None)
    if t.endswith("inf") and t.startswith(("sign(", "-sign(")):   # sign(x2)inf
        neg = t.startswith("-")
        name = t[t.index("(") + 1:t.index(")")]
        return Want("exact", (-1 if neg else 1) * math.copysign(math.inf, env[name]))
    if t in env:
        return Want("exact", env[t])
    if t.startswith("-|") or t.startswith("|"):
        neg = t.startswith("-")
        v = abs(env[t.strip("-|")])
        return Want("nan" if math.isnan(v) else "exact", -v if neg else v)
    return Want("exact", float(t.replace("inf", "Infinity")))


def _result(text, env):
    """The expected value of a rule's result: a Want, or a pair of them."""
    t = text.strip()
    if "cis(b)" in t:
        scale, _, rest = t.partition("*cis(b)")
        r = float(scale.replace("inf", "Infinity"))
        b = env["b"]
        re, im = r * math.cos(b), r * math.sin(b)
        if rest.strip() == "- 1":
            re -= 1.0
        return (Want("exact", re), Want("exact", im))
    if t.startswith("("):
        re, im = t.strip("()").split(",")
        return (_value(re, env), _value(im, env))
    if t in ("|a|", "|b|"):
        return _value(t, env)
    return _value(t, env)


def _rules(text):
    out = []
    for line in text.strip().splitlines():
        cond, _, res = line.partition("->")
        conds = [_condition(c) for c in cond.split(" and ")]
        out.append((line.strip(), conds, res))
    return out


# floor_divide: the standard states the same rules as for divide (the quotient's sign
# and its infinite/zero cases)
REAL["floor_divide"] = REAL["divide"]

_REAL_RULES = {name: _rules(t) for name, t in REAL.items()}
_COMPLEX_RULES = {name: _rules(t) for name, t in COMPLEX.items()}


def _direct(table, name, env):
    return [(line, _result(res, env)) for line, conds, res in table.get(name, ())
            if all(c(env) for c in conds)]


def _conj(pair):
    return (pair[0], -pair[1])


def _neg(pair):
    return (-pair[0], -pair[1])


def _complex_cases(name, a, b):
    """(rule text, (Want, Want)) of every rule of complex `name` that applies at a+bj,
    through the stated symmetries and derivations."""
    if name in SCALED:                  # log2(z) as log(z) / log(2): the change of base
        base, k = SCALED[name]
        return [(f"{name} as {base}(z)*{k:.4g}: {line}", (r[0].scaled(k), r[1].scaled(k)))
                for line, r in _complex_cases(base, a, b)]
    if name in DERIVED:
        base, unit = DERIVED[name]
        # z * 1j = -b + a j; then -1j * (u + v j) = v - u j
        found = _complex_cases(base, -b, a)
        if unit == "1":
            return [(f"{name} as {base}(z*1j): {line}", r) for line, r in found]
        return [(f"{name} as -1j*{base}(z*1j): {line}", (r[1], -r[0]) if isinstance(r, tuple)
                 else r) for line, r in found]
    out = list(_direct(_COMPLEX_RULES, name, {"a": a, "b": b}))
    syms = SYMMETRIES.get(name, ())
    if "conj" in syms:
        out += [(f"conj: {line}", _conj(r)) for line, r in
                _direct(_COMPLEX_RULES, name, {"a": a, "b": -b}) if isinstance(r, tuple)]
    for kind in ("odd", "even"):
        if kind in syms:
            f = _neg if kind == "odd" else (lambda r: r)
            out += [(f"{kind}: {line}", f(r)) for line, r in
                    _direct(_COMPLEX_RULES, name, {"a": -a, "b": -b}) if isinstance(r, tuple)]
            if "conj" in syms:
                out += [(f"{kind}+conj: {line}", f(_conj(r))) for line, r in
                        _direct(_COMPLEX_RULES, name, {"a": -a, "b": b})
                        if isinstance(r, tuple)]
    return out


def expected(name, *args):
    """[(rule, Want or (Want, Want))] of every special case of `name` at `args`
    (Python floats, or complex numbers)."""
    if isinstance(args[0], complex):
        return _complex_cases(name, args[0].real, args[0].imag)
    env = {"x": args[0]} if len(args) == 1 else {"x1": args[0], "x2": args[1]}
    return _direct(_REAL_RULES, name, env)


def check(want, got, rtol):
    """Whether the value `got` satisfies `want` (a Want or a pair)."""
    if isinstance(want, tuple):
        got = complex(got)
        return want[0].holds(got.real, rtol) and want[1].holds(got.imag, rtol)
    return want.holds(got, rtol)
