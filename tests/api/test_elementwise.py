"""The array API elementwise functions of the namespace against array_api_strict (the
standard's reference implementation, revision 2024.12): dtypes, broadcasting, special
values and Python scalars, over NDArrays of several chunks; laziness; and the namespace
form against the string form of the same expression."""

import inspect
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ndpack
from ndpack.engine import elementwise

from tests.helpers import assert_eq

xp = pytest.importorskip("array_api_strict")
xp.set_array_api_strict_flags(api_version="2024.12")
from hypothesis.extra.array_api import make_strategies_namespace  # noqa: E402

xps = make_strategies_namespace(xp, api_version="2024.12")

UNARY = sorted(elementwise.UNARY)
BINARY = sorted(elementwise.BINARY)
# results computed by libm-like kernels (ndpack's vector sin/cos: <= 1 ulp of glibc)
INEXACT = {"sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh",
           "acosh", "atanh", "exp", "expm1", "log", "log1p", "log2", "log10", "atan2",
           "hypot", "logaddexp", "pow", "divide", "reciprocal", "sqrt"}


def _nd(x, chunked):
    """An NDArray of the strict array's values (several chunks when `chunked`)."""
    a = np.asarray(x)
    chunks = tuple(max(1, (s + 1) // 2) for s in a.shape) if chunked and a.ndim else None
    return ndpack.asarray(a, chunks=chunks) if a.ndim else a


def _check(name, got, want):
    """The reference's dtype and shape; values within 4 ulp for the functions of
    INEXACT, exact otherwise."""
    want = np.asarray(want)
    inexact = name in INEXACT and want.dtype.kind in "fc"
    assert_eq(got, want, rtol=4 * np.finfo(want.dtype).eps if inexact else 0)


def _strict(fn, *args):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    except (TypeError, ValueError):          # a case the standard does not define
        assume(False)


@given(name=st.sampled_from(UNARY), data=st.data(), chunked=st.booleans())
def test_unary_against_reference(name, data, chunked):
    x = data.draw(xps.arrays(dtype=xps.scalar_dtypes(), shape=xps.array_shapes(
        min_dims=0, max_dims=3, max_side=7)), label="x")
    want = _strict(getattr(xp, name), x)
    if name == "sign" and "complex" in str(x.dtype):
        # the reference computes x / abs(x) literally (sign(inf*1j) is nan there); the
        # standard gives no special cases for complex sign, NumPy's is the oracle
        want = np.sign(np.asarray(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = getattr(ndpack, name)(_nd(x, chunked))
        _check(name, got, want)


@st.composite
def _pairs(draw):
    shapes = draw(xps.mutually_broadcastable_shapes(2, min_dims=0, max_dims=3, max_side=6))
    d1 = draw(xps.scalar_dtypes())
    family = (xps.boolean_dtypes() if d1 == xp.bool else
              xps.integer_dtypes() | xps.unsigned_integer_dtypes() if "int" in str(d1) else
              xps.floating_dtypes())
    d2 = draw(family)
    return (draw(xps.arrays(dtype=d1, shape=shapes.input_shapes[0])),
            draw(xps.arrays(dtype=d2, shape=shapes.input_shapes[1])))


@given(name=st.sampled_from(BINARY), pair=_pairs(), chunked=st.booleans())
def test_binary_against_reference(name, pair, chunked):
    x1, x2 = pair
    want = _strict(getattr(xp, name), x1, x2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = getattr(ndpack, name)(_nd(x1, chunked), _nd(x2, chunked))
        _check(name, got, want)


@given(name=st.sampled_from(BINARY), data=st.data())
def test_binary_with_python_scalars(name, data):
    x = data.draw(xps.arrays(dtype=xps.real_dtypes() | xps.boolean_dtypes(),
                             shape=xps.array_shapes(min_dims=1, max_dims=2, max_side=6)))
    kind = str(x.dtype)
    scalar = data.draw(st.booleans() if "bool" in kind else
                       st.integers(-5, 5) if "int" in kind else
                       st.floats(-10, 10) | st.sampled_from([np.inf, -np.inf, np.nan]))
    assume(not ("uint" in kind and scalar < 0))
    reverse = data.draw(st.booleans())
    args = (scalar, x) if reverse else (x, scalar)
    want = _strict(getattr(xp, name), *args)
    nd_args = (scalar, _nd(x, True)) if reverse else (_nd(x, True), scalar)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(name, getattr(ndpack, name)(*nd_args), want)


@given(data=st.data())
def test_clip_against_reference(data):
    x = data.draw(xps.arrays(dtype=xps.real_dtypes(), shape=xps.array_shapes(
        min_dims=1, max_dims=3, max_side=6)))
    kind = str(x.dtype)
    bound = st.none() | (st.integers(-20, 20) if "int" in kind else st.floats(-20, 20))
    lo, hi = data.draw(bound), data.draw(bound)
    assume("uint" not in kind or ((lo is None or lo >= 0) and (hi is None or hi >= 0)))
    assume(lo is None or hi is None or lo <= hi)
    _check("clip", ndpack.clip(_nd(x, True), lo, hi), _strict(xp.clip, x, lo, hi))


def test_signatures_are_the_standards():
    for name in UNARY + BINARY + ["clip"]:
        ours = inspect.signature(getattr(ndpack, name)).parameters
        ref = inspect.signature(getattr(xp, name)).parameters
        assert [(p.name, p.kind, p.default) for p in ours.values()] == \
            [(p.name, p.kind, p.default) for p in ref.values()], name


def test_functions_are_lazy_and_match_the_string_form():
    rng = np.random.default_rng(3)
    x = [rng.normal(size=(60, 40)) for _ in range(3)]
    a, b, c = (ndpack.asarray(v, chunks=(25, 40), blocks=(5, 40)) for v in x)
    e = ndpack.sin(a) ** 2 + ndpack.cos(b) * ndpack.exp(-c) + ndpack.atan2(a, b)
    assert isinstance(e, ndpack.LazyExpr)
    s = ndpack.lazyexpr("sin(a)**2 + cos(b)*exp(-c) + arctan2(a, b)",
                        operands={"a": a, "b": b, "c": c})
    assert np.array_equal(e[()], s[()])                    # identical bits
    assert np.array_equal(e.compute()[()], s.compute()[()])
    np.testing.assert_allclose(e[()], np.sin(x[0]) ** 2 + np.cos(x[1]) * np.exp(-x[2])
                               + np.arctan2(x[0], x[1]), rtol=1e-13, atol=1e-14)


def test_operands_of_any_kind():
    x = np.arange(12.0).reshape(3, 4)
    nd = ndpack.asarray(x)
    for operand in (x, nd, ndpack.lazyexpr("a + 0", operands={"a": nd})):
        np.testing.assert_array_equal(ndpack.multiply(operand, 2)[()], x * 2)
        np.testing.assert_array_equal(ndpack.maximum(3.0, operand)[()], np.maximum(3.0, x))


def test_bad_input():
    assert ndpack.sin(1.0)[()] == np.sin(1.0)         # a 0-d expression, as python-blosc2's
    with pytest.raises(TypeError, match="at least one array"):
        ndpack.add(1, 2)
    with pytest.raises(ValueError, match="broadcast"):
        ndpack.add(ndpack.asarray(np.ones(3)), np.ones(4))


@given(data=st.data())
def test_where_against_reference(data):
    shapes = data.draw(xps.mutually_broadcastable_shapes(3, min_dims=0, max_dims=3, max_side=5))
    cond = data.draw(xps.arrays(dtype=xp.bool, shape=shapes.input_shapes[0]))
    dt = data.draw(xps.real_dtypes())
    x1 = data.draw(xps.arrays(dtype=dt, shape=shapes.input_shapes[1]))
    x2 = data.draw(xps.arrays(dtype=dt, shape=shapes.input_shapes[2]) | st.just(0))
    want = _strict(xp.where, cond, x1, x2)
    _check("where", ndpack.where(_nd(cond, True), _nd(x1, True),
                                 x2 if isinstance(x2, int) else _nd(x2, True)), want)


@given(data=st.data())
def test_astype_against_reference(data):
    x = data.draw(xps.arrays(dtype=xps.scalar_dtypes(), shape=xps.array_shapes(
        min_dims=1, max_dims=3, max_side=6)))
    to = data.draw(xps.scalar_dtypes())
    assume(not ("complex" in str(x.dtype) and "complex" not in str(to)))  # undefined
    target = np.dtype(str(to).split(".")[-1])
    if target.kind in "iu" and "float" in str(x.dtype):
        # a float that the integer type cannot hold casts to anything (C's undefined
        # behaviour; NumPy's SIMD and scalar loops differ): the standard leaves it open
        v = np.asarray(x, dtype=np.float64)
        info = np.iinfo(target)
        assume(np.isfinite(v).all() and (v >= info.min).all() and (v <= info.max).all())
    want = np.asarray(_strict(xp.astype, x, to))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nd = _nd(x, True)
        for got in (ndpack.astype(nd, want.dtype), nd.astype(want.dtype),
                    ndpack.astype(ndpack.lazyexpr("a", operands={"a": nd}), want.dtype)):
            _check("astype", got, want)
    assert ndpack.astype(nd, nd.dtype, copy=False) is nd
    with pytest.raises(ValueError, match="device"):
        ndpack.astype(nd, want.dtype, device="gpu")


def test_numpy_names():
    x = np.linspace(-0.9, 0.9, 7)
    a = ndpack.asarray(x, chunks=(3,))
    for ours, np_name in [("arcsin", "arcsin"), ("arccos", "arccos"), ("arctan", "arctan"),
                          ("arcsinh", "arcsinh"), ("arctanh", "arctanh")]:
        np.testing.assert_allclose(getattr(ndpack, ours)(a)[()], getattr(np, np_name)(x),
                                   rtol=1e-15)
    np.testing.assert_allclose(ndpack.arccosh(a + 2)[()], np.arccosh(x + 2), rtol=1e-15)
    np.testing.assert_allclose(ndpack.arctan2(a, 0.5)[()], np.arctan2(x, 0.5), rtol=1e-15)
