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


@given(shape=_SHAPES, op=st.sampled_from(["sum", "mean", "max", "min", "std", "var", "prod"]),
       data=st.data())
def test_full_reduction_sliced_reduces_the_part(shape, op, data):
    # python-blosc2: mean(a + b)[key] is mean((a + b)[key]) when key has a slice
    na = np.arange(math.prod(shape), dtype="f8").reshape(shape) / 7
    nb = (np.arange(shape[-1], dtype="f8") + 1)          # broadcast along the last axis
    e = ndpack.lazyexpr(f"{op}(a + b)", {"a": ndpack.asarray(na), "b": ndpack.asarray(nb)})
    key = tuple(slice(data.draw(st.integers(0, n - 1)), data.draw(st.integers(1, n)))
                for n in shape[:data.draw(st.integers(1, len(shape)))])
    part = (na + nb)[key]
    if part.size == 0:
        return
    np.testing.assert_allclose(e[key], getattr(np, op)(part), rtol=1e-10)
    np.testing.assert_allclose(e.slice(key)[()], getattr(np, op)(part), rtol=1e-10)
    np.testing.assert_allclose(e[:], getattr(np, op)(na + nb), rtol=1e-10)


def test_zero_d_expression_keys():
    na = np.arange(100.0).reshape(10, 10)
    e = ndpack.lazyexpr("mean(x + y)", {"x": ndpack.asarray(na), "y": np.ones((10, 10))})
    np.testing.assert_allclose(e[0:3, np.array([0, 1])], np.mean((na + 1)[0:3, [0, 1]]))
    np.testing.assert_allclose(e[1, 2:5], np.mean((na + 1)[1, 2:5]))
    for bad in (1, np.int64(1), [0, 1], np.array([0, 1])):     # NumPy's 0-d errors
        with pytest.raises(IndexError):
            e[bad]
    s = ndpack.lazyexpr("x[1, 2] + 1", {"x": ndpack.asarray(na)})
    assert s[:] == s[...] == s[()] == 13.0                      # [:] is the whole value
    with pytest.raises(IndexError, match="full reduction"):
        s[0:1]
    w = ndpack.lazyexpr("sum(x, where=x > 3)", {"x": ndpack.asarray(na)})
    with pytest.raises(IndexError, match="where"):
        w[0:2]


@given(shape=_SHAPES, op=st.sampled_from(["cumulative_sum", "cumulative_prod"]),
       data=st.data(), method=st.booleans(), initial=st.booleans())
def test_cumulative_in_string_expressions(shape, op, data, method, initial):
    na = (np.arange(math.prod(shape), dtype="f8").reshape(shape) % 5) / 4 + 0.5
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    kw = f"axis={axis}" + (", include_initial=True" if initial else "")
    text = f"a.{op}({kw})" if method else f"{op}(a, {kw})"
    want = getattr(np, op)(na, axis=axis, include_initial=initial)
    e = ndpack.lazyexpr(f"{text} * 2 + 1", {"a": ndpack.asarray(na)})
    assert e.shape == want.shape and e.dtype == want.dtype
    np.testing.assert_allclose(e[()], want * 2 + 1, rtol=1e-12)
    np.testing.assert_allclose(e.compute()[()], want * 2 + 1, rtol=1e-12)


def test_cumulative_in_saved_expression_and_errors(tmp_path):
    na = np.arange(12.0).reshape(3, 4)
    a = ndpack.asarray(na, urlpath=str(tmp_path / "a.b2nd"))
    ndpack.lazyexpr("a + cumulative_sum(a, axis=0) + 1", {"a": a}).save(tmp_path / "e.b2nd")
    np.testing.assert_array_equal(ndpack.open(tmp_path / "e.b2nd")[()],
                                  na + np.cumulative_sum(na, axis=0) + 1)
    with pytest.raises(ValueError, match="integer axis"):
        ndpack.lazyexpr("cumulative_sum(a)", {"a": a})
    with pytest.raises(np.exceptions.AxisError):
        ndpack.lazyexpr("cumulative_prod(a, axis=2)", {"a": a})
    with pytest.raises(ValueError, match="keyword 'dtype'"):
        ndpack.lazyexpr("cumulative_sum(a, axis=0, dtype=1)", {"a": a})


def test_cumulative_item():
    na = np.arange(12.0).reshape(3, 4)
    a = ndpack.asarray(na)
    np.testing.assert_array_equal(ndpack.cumulative_sum(a, axis=1, item=(slice(1, 3),))[()],
                                  np.cumulative_sum(na[1:3], axis=1))
    np.testing.assert_allclose((a - 0.1).cumulative_prod(axis=0, item=slice(0, 2))[()],
                               np.cumulative_prod((na - 0.1)[:2], axis=0))


@pytest.mark.parametrize("name, ref", [("cumsum", np.cumsum), ("cumprod", np.cumprod)])
def test_numpy_cumulative_names_and_evaluate_optimization(name, ref):
    na = np.arange(1.0, 13.0).reshape(3, 4) / 6
    a = ndpack.asarray(na)
    for opt in ("none", "moderate", "aggressive"):
        np.testing.assert_allclose(ndpack.evaluate(f"{name}(a > 1, axis=0)", optimization=opt),
                                   ref(na > 1, axis=0))
    with pytest.raises(ValueError, match="integer axis"):      # n-d: never a silent ravel
        ndpack.evaluate(f"{name}(a)")
    with pytest.raises(ndpack.ParameterError, match="optimization"):
        ndpack.evaluate("a + 1", optimization="max")
