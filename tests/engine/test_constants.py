"""Constant subexpressions of Python numbers in string expressions follow Python, then
NumPy's rules, as the same code written with NumPy arrays (``a * 2**70`` is not a
wrapped int64), with bounded work (``2**2**40`` is a clean OverflowError)."""

import numpy as np
import pytest

import ndpack

X = np.arange(6.0) - 2
I = np.arange(6) - 2

CASES = ["a * 2**70", "a + 2**64", "a * 2**-1", "i * 2**-1", "i + 2**62", "i + 3 * 4 - 1",
         "a / (2**3 + 0.5)", "i * (7 // 2) + 7 % 3", "(1 + 2j) * a", "a * 2.0**100",
         "-2**3 + i", "i // 0", "a % 0", "i * (2 - 2**2)"]


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize("kind", ["ndarray", "numpy"])
def test_constants_like_numpy_code(text, kind):
    a = ndpack.asarray(X, chunks=(4,)) if kind == "ndarray" else X
    i = ndpack.asarray(I, chunks=(4,)) if kind == "ndarray" else I
    with np.errstate(all="ignore"):
        want = eval(text, {}, {"a": X, "i": I})           # noqa: S307 -- the test's own text
        got = ndpack.evaluate(text, local_dict={"a": a, "i": i})
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("text", ["i + 2**64", "i * 2**70"])
def test_big_integers_meeting_integer_arrays_overflow(text):
    with pytest.raises(OverflowError):
        eval(text, {}, {"i": I})                          # noqa: S307 -- NumPy does too
    with pytest.raises(OverflowError):
        ndpack.evaluate(text, local_dict={"i": ndpack.asarray(I)})


@pytest.mark.parametrize("text", ["2**2**40", "a * 10**10**6", "(3**5000) * a",
                                  "a + 10.0**400", "2**9999 * 2**9999"])
def test_unbounded_constants_are_refused_at_once(text):
    with pytest.raises(OverflowError, match="constant"):
        ndpack.lazyexpr(text, operands={"a": ndpack.asarray(X)})


@pytest.mark.parametrize("text", ["a / 8.5", "a / 3.0 + 1", "(a + 1) / (2 + 1.5)", "a / 7"])
def test_division_by_constants_is_exact(text):
    """numexpr turns ``x / c`` into ``x * (1 / c)`` (an ulp off): such trees go elsewhere."""
    x = np.random.default_rng(3).normal(size=(300, 200))
    for a in (x, ndpack.asarray(x, chunks=(100, 200), blocks=(20, 200))):
        got = ndpack.evaluate(text, local_dict={"a": a})
        np.testing.assert_array_equal(got, eval(text, {}, {"a": x}))   # noqa: S307
