"""Expressions as python-blosc2's users write them: saved expressions holding a constructor
call (``a + arange(100, shape=(10, 10))``), ...; NumPy is the oracle, python-blosc2 the
second one where it reads what ndpack wrote (found running python-blosc2's own test
suite against ndpack)."""

import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ndpack

_SHAPES = st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple)
_DTYPES = st.sampled_from(["int16", "int32", "float32", "float64"])


def _constructor(kind: str, shape: tuple, dtype: str):
    """(text of a constructor call making `shape`, the NumPy array it makes)."""
    n = math.prod(shape)
    if kind == "arange":
        return f"arange({n}, dtype={dtype}, shape={shape})", \
            np.arange(n, dtype=dtype).reshape(shape)
    if kind == "reshape":
        return f"arange({n}, dtype={dtype}).reshape({shape})", \
            np.arange(n, dtype=dtype).reshape(shape)
    if kind == "linspace":
        return f"linspace(0, 10, {n}, dtype={dtype}, shape={shape})", \
            np.linspace(0, 10, n, dtype=dtype).reshape(shape)
    if kind == "full":
        return f"full({shape}, 7, dtype={dtype})", np.full(shape, 7, dtype=dtype)
    return f"{kind}({shape}, dtype={dtype})", getattr(np, kind)(shape, dtype=dtype)


@given(shape=_SHAPES, dtype=_DTYPES,
       kinds=st.lists(st.sampled_from(["arange", "reshape", "linspace", "zeros", "ones",
                                       "full"]), min_size=1, max_size=2))
def test_save_expression_with_constructors(shape, dtype, kinds):
    with tempfile.TemporaryDirectory() as d:
        na = np.arange(math.prod(shape), dtype=dtype).reshape(shape) * 3
        a = ndpack.asarray(na, urlpath=os.path.join(d, "a.b2nd"), mode="w")
        texts, expected = ["a"], na
        for kind in kinds:
            text, arr = _constructor(kind, shape, dtype)
            texts.append(text)
            expected = expected + arr
        expected = expected + 1
        e = ndpack.lazyexpr(" + ".join(texts) + " + 1", operands={"a": a})
        path = os.path.join(d, "e.b2nd")
        e.save(path)
        again = ndpack.open(path)
        assert isinstance(again, ndpack.LazyExpr)
        assert again.shape == expected.shape and again.dtype == expected.dtype
        np.testing.assert_allclose(again[()], expected, rtol=1e-6)
        np.testing.assert_allclose(again.compute()[()], expected, rtol=1e-6)


def test_save_constructor_only_operands_and_views(tmp_path):
    # constructors are written as their call, never stored; a view of one keeps its text
    e = ndpack.lazyexpr("arange(10).reshape((2, 5))[1] * 2 + ones((5,))")
    e.save(tmp_path / "e.b2nd")
    np.testing.assert_array_equal(ndpack.open(tmp_path / "e.b2nd")[()],
                                  np.arange(5, 10) * 2 + 1.0)
    a = ndpack.asarray(np.arange(12.0).reshape(3, 4), urlpath=str(tmp_path / "a.b2nd"))
    e = ndpack.lazyexpr("a[1:3] + arange(12, shape=(3, 4))[1:3]", operands={"a": a})
    e.save(tmp_path / "f.b2nd")                # a view's text is not taken as a name
    np.testing.assert_array_equal(ndpack.open(tmp_path / "f.b2nd")[()],
                                  np.arange(12.0).reshape(3, 4)[1:3] * 2)


def test_save_constructor_in_memory_operand_still_refused():
    e = ndpack.lazyexpr("a + arange(3)", operands={"a": ndpack.asarray(np.ones(3))})
    with pytest.raises(ndpack.ParameterError, match="stored on disk; in memory: a"):
        e.save(os.path.join(tempfile.gettempdir(), "never.b2nd"))


def test_saved_constructor_reads_in_python_blosc2(tmp_path):
    blosc2 = pytest.importorskip("blosc2")
    a = ndpack.arange(100, dtype="int32", shape=(10, 10), urlpath=str(tmp_path / "a.b2nd"))
    e = ndpack.lazyexpr("a + arange(100, dtype=int32, shape=(10, 10)) + "
                        "ones((10, 10), dtype=int8) + linspace(0, 1, 10)", operands={"a": a})
    e.save(tmp_path / "e.b2nd")
    theirs = blosc2.open(str(tmp_path / "e.b2nd"), deserialize="full")
    np.testing.assert_array_equal(theirs[()], ndpack.open(tmp_path / "e.b2nd")[()])


_SCALARS = st.one_of(st.booleans(), st.integers(-1000, 1000),
                     st.floats(-1e3, 1e3, allow_nan=False), st.complex_numbers(max_magnitude=10))


@given(value=_SCALARS, func=st.sampled_from(["sin", "cos", "exp", "sqrt", "abs", "negative",
                                              "isnan", "square"]))
def test_unary_function_of_python_scalar(value, func):
    if func == "negative" and isinstance(value, bool):
        return                                   # NumPy refuses - of booleans as well
    with np.errstate(all="ignore"):
        want = getattr(np, func)(value)
        got = getattr(ndpack, func)(value)
        assert isinstance(got, ndpack.LazyExpr) and got.shape == ()
        assert got.dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got[()], want, rtol=1e-12)
        np.testing.assert_allclose((value + got)[()], value + want, rtol=1e-12)


def test_binary_function_of_two_python_scalars_refused():
    with pytest.raises(TypeError, match="at least one array"):
        ndpack.add(1, 2)


@pytest.mark.parametrize("text, expected", [
    ("a + nan", [np.nan] * 3), ("a < inf", [True] * 3), ("a > -inf", [True] * 3),
    ("where(a > 1, a, nan)", [np.nan, 2.0, 3.0]), ("minimum(a, inf)", [1.0, 2.0, 3.0]),
])
def test_bare_nan_inf_in_strings(text, expected):
    a = ndpack.asarray(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(ndpack.lazyexpr(text, {"a": a}).compute()[:], expected)


def test_operand_named_inf_wins():
    a, inf = ndpack.asarray(np.ones(3)), np.full(3, 7.0)
    assert ndpack.lazyexpr("a + inf", {"a": a, "inf": inf})[()].tolist() == [8.0] * 3


def test_saved_nan_constant_round_trips(tmp_path):
    a = ndpack.asarray(np.arange(3.0), urlpath=str(tmp_path / "a.b2nd"))
    (ndpack.maximum(a, np.nan) + np.inf).save(tmp_path / "e.b2nd")
    got = ndpack.open(tmp_path / "e.b2nd")[()]
    assert np.isnan(got).all()


def test_missing_operands_as_python_blosc2(tmp_path):
    import ndpack.exceptions
    a = ndpack.arange(10, urlpath=str(tmp_path / "a.b2nd"), mode="w")
    b = ndpack.arange(10, urlpath=str(tmp_path / "b.b2nd"), mode="w")
    e = ndpack.lazyexpr("a + b", operands={"a": a, "b": b})
    e.save(tmp_path / "e.b2nd", mode="w")          # python-blosc2's keyword
    ndpack.remove_urlpath(str(tmp_path / "b.b2nd"))
    with pytest.raises(ndpack.exceptions.MissingOperands) as info:
        ndpack.open(tmp_path / "e.b2nd", deserialize="full")
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, FileNotFoundError)
    assert err.expr == "a + b" and err.missing_ops == {"b": __import__("pathlib").Path("b.b2nd")}
    assert "a" not in err.missing_ops
    with pytest.raises(ndpack.ParameterError, match="mode"):
        e.save(tmp_path / "f.b2nd", mode="r")


def test_missing_operands_same_in_python_blosc2(tmp_path):
    blosc2 = pytest.importorskip("blosc2")
    paths = {n: str(tmp_path / f"{n}.b2nd") for n in "ab"}
    a = ndpack.arange(10, urlpath=paths["a"], mode="w")
    b = ndpack.arange(10, urlpath=paths["b"], mode="w")
    ndpack.lazyexpr("a * b", operands={"a": a, "b": b}).save(tmp_path / "e.b2nd")
    ndpack.remove_urlpath(paths["a"])
    errs = []
    for opener in (lambda p: ndpack.open(p), lambda p: blosc2.open(p, deserialize="full")):
        with pytest.raises(ValueError) as info:
            opener(str(tmp_path / "e.b2nd"))
        errs.append(info.value)
    assert errs[0].expr == errs[1].expr == "a * b"
    assert errs[0].missing_ops == errs[1].missing_ops
