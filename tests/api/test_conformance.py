"""Conformance of the namespace with the array API standard (revision 2024.12) where the
other test files of tests/api do not reach: the standard's special values of every
elementwise function (NaN, ±inf, ±0.0, integer division and remainder by zero, shifts,
wrapping), the operators of NDArray and LazyExpr with arrays and Python scalars (no
value-based casting: a Python scalar takes the array's dtype; an int out of its range is
an OverflowError as in NumPy 2), creation functions, shape functions, and indexing.
array_api_strict (the reference implementation) is the oracle, NumPy where the standard
is silent."""

import operator
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ndpack
from ndpack.engine import elementwise
from ndpack.engine.expr.functions import SPECIAL

from tests.api import special_cases as sc
from tests.api.standard import xp, xps
from tests.helpers import as_operand, assert_eq

KINDS = ["ndarray", "lazyexpr", "numpy"]
INEXACT = {"sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh",
           "acosh", "atanh", "exp", "expm1", "log", "log1p", "log2", "log10", "atan2",
           "hypot", "logaddexp", "pow", "divide", "reciprocal", "sqrt"}
FLOAT_SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-310,
                  -1e300, 1e300]


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _reference(fn, *args, **kwargs):
    """The reference's result, or None where the standard does not define the case."""
    try:
        return np.asarray(_quiet(fn, *args, **kwargs))
    except (TypeError, ValueError):
        return None


def _values_agree(got, want, inexact):
    """Same dtype and shape; NaN where NaN; zeros of the same sign; other values exact,
    or within 4 ulp for `inexact` functions."""
    got = np.asarray(got[()] if isinstance(got, (ndpack.NDArray, ndpack.LazyExpr)) else got)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want)
        return
    for part in ((got.real, want.real), (got.imag, want.imag)) if want.dtype.kind == "c" \
            else ((got, want),):
        g, w = part
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        zero = w == 0
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]))
        ok = ~np.isnan(w)
        if inexact:
            np.testing.assert_allclose(g[ok], w[ok], rtol=4 * np.finfo(w.dtype).eps, atol=0)
        else:
            np.testing.assert_array_equal(g[ok], w[ok])


def _binary_agrees(name, dtype, x1, x2):
    """`name` of every operand kind on (x1, x2) agrees with the reference (skipped where
    the standard does not define it for `dtype`)."""
    want = _reference(getattr(xp, name), xp.asarray(x1), xp.asarray(x2))
    if want is None:
        pytest.skip(f"{name} is not defined for {dtype}")
    for kind in KINDS:
        got = _quiet(getattr(ndpack, name), as_operand(x1, kind), as_operand(x2, kind))
        _values_agree(got, _standard_decides(name, (x1, x2), got, want), name in INEXACT)


def _standard_decides(name, args, got, want):
    """`want` (NumPy's value, through the reference) with the elements where ndpack
    follows the standard's special cases instead (functions with a fix-up, checked by
    the table-driven tests below) taken from `got`."""
    if name not in SPECIAL:
        return want
    got = np.asarray(got[()] if isinstance(got, (ndpack.NDArray, ndpack.LazyExpr)) else got)
    args = np.broadcast_arrays(*[np.asarray(a) for a in args])
    want = want.copy()
    for idx in np.ndindex(want.shape):
        point = [complex(a[idx]) if a.dtype.kind == "c" else float(a[idx]) for a in args]
        if sc.expected(name, *point):
            want[idx] = got[idx]
    return want


# ---- special values of every elementwise function ------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("name", sorted(elementwise.UNARY))
def test_unary_special_values(name, dtype):
    values = np.array(FLOAT_SPECIALS, dtype=dtype)
    if dtype.startswith("complex"):
        values = (values[:, None] + 1j * values[None, ::3]).ravel()
    want = _reference(getattr(xp, name), xp.asarray(values))
    if want is None:
        pytest.skip(f"{name} is not defined for {dtype}")
    if name == "sign" and dtype.startswith("complex"):
        want = np.sign(values)      # the reference's literal x / abs(x) (NaN at inf*1j)
    got = _quiet(getattr(ndpack, name), ndpack.asarray(values, chunks=(5,)))
    _values_agree(got, _standard_decides(name, (values,), got, want), name in INEXACT)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(elementwise.BINARY))
def test_binary_special_values(name, dtype):
    """Every pair of special values (an outer product by broadcasting)."""
    v = np.array(FLOAT_SPECIALS, dtype=dtype)
    _binary_agrees(name, dtype, v[:, None], v[None, :])


def _int_values(dtype):
    info = np.iinfo(dtype)
    vals = [0, 1, 2, 3, 7, info.max, info.max - 1]
    if info.min < 0:
        vals += [-1, -2, -7, info.min, info.min + 1]
    return np.array(vals, dtype=dtype)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64"])
@pytest.mark.parametrize("name", sorted(elementwise.BINARY))
def test_binary_integer_edges(name, dtype):
    """Division and remainder by zero give NumPy's 0 (no error, no signal), overflow
    wraps, shifts by the bit width and beyond give NumPy's values."""
    v = _int_values(dtype)
    x1, x2 = v[:, None], v[None, :]
    if name in ("pow",):
        x2 = np.abs(x2) % 5                          # negative powers are undefined
    if "shift" in name:
        x2 = np.array([0, 1, 3, 7, 8, 15, 31, 63, 64, 70], dtype=dtype)[None, :] \
            if np.iinfo(dtype).max >= 70 else np.array([0, 1, 3, 7], dtype=dtype)[None, :]
    _binary_agrees(name, dtype, x1, x2)


def test_integer_division_by_zero_never_raises_in_expressions():
    x = np.array([5, -5, 0, np.iinfo(np.int64).min], dtype=np.int64)
    a = ndpack.asarray(x, chunks=(2,))
    with np.errstate(all="ignore"):
        for text, want in [("a // 0", x // 0), ("a % 0", x % 0), ("a // (a - a)", x // 0),
                           ("a % (a * 0)", x % 0), ("a // -1", x // -1)]:
            np.testing.assert_array_equal(ndpack.evaluate(text, {"a": a}), want, text)
        np.testing.assert_array_equal(ndpack.floor_divide(a, 0)[()], x // 0)
        np.testing.assert_array_equal((a % 0)[()], x % 0)


# ---- operators over NDArray and LazyExpr ---------------------------------------------

BINARY_OPERATORS = {"__add__": operator.add, "__sub__": operator.sub,
                    "__mul__": operator.mul, "__truediv__": operator.truediv,
                    "__floordiv__": operator.floordiv, "__mod__": operator.mod,
                    "__pow__": operator.pow, "__and__": operator.and_,
                    "__or__": operator.or_, "__xor__": operator.xor,
                    "__lshift__": operator.lshift, "__rshift__": operator.rshift,
                    "__lt__": operator.lt, "__le__": operator.le, "__gt__": operator.gt,
                    "__ge__": operator.ge, "__eq__": operator.eq, "__ne__": operator.ne}


@st.composite
def _same_family_pair(draw):
    shapes = draw(xps.mutually_broadcastable_shapes(2, min_dims=0, max_dims=3, max_side=5))
    d1 = draw(xps.scalar_dtypes())
    family = (xps.boolean_dtypes() if d1 == xp.bool else
              xps.integer_dtypes() | xps.unsigned_integer_dtypes() if "int" in str(d1) else
              xps.floating_dtypes() | xps.complex_dtypes())
    d2 = draw(family)
    return (draw(xps.arrays(dtype=d1, shape=shapes.input_shapes[0])),
            draw(xps.arrays(dtype=d2, shape=shapes.input_shapes[1])))


@given(op=st.sampled_from(sorted(BINARY_OPERATORS)), pair=_same_family_pair(),
       kind=st.sampled_from(["ndarray", "lazyexpr"]))
def test_operators_with_arrays(op, pair, kind):
    x1, x2 = pair
    assume(x1.ndim and x2.ndim)
    if op == "__pow__" and "int" in str(x2.dtype):
        assume(not (np.asarray(x2) < 0).any())
    want = _reference(BINARY_OPERATORS[op], x1, x2)
    assume(want is not None)
    got = _quiet(BINARY_OPERATORS[op], as_operand(x1, kind), as_operand(x2, kind))
    assert isinstance(got, ndpack.LazyExpr)                  # lazy: nothing computed
    _values_agree(got, want, op in ("__truediv__", "__pow__"))


@given(op=st.sampled_from(sorted(BINARY_OPERATORS)), data=st.data(),
       kind=st.sampled_from(["ndarray", "lazyexpr"]), reflected=st.booleans())
def test_operators_with_python_scalars(op, data, kind, reflected):
    """A Python scalar takes the array's dtype (bool, int, float, complex by kind)."""
    x = data.draw(xps.arrays(dtype=xps.scalar_dtypes(),
                             shape=xps.array_shapes(min_dims=1, max_dims=2, max_side=5)))
    kind_ = str(x.dtype)
    if "bool" in kind_:
        scalar = data.draw(st.booleans())
    elif "int" in kind_:
        info = np.iinfo(np.dtype(kind_.split(".")[-1]))
        scalar = data.draw(st.integers(max(info.min, -100), min(info.max, 100)))
    elif "complex" in kind_:
        scalar = data.draw(st.complex_numbers(max_magnitude=1e3, allow_nan=False) |
                           st.floats(-1e3, 1e3) | st.integers(-5, 5))
    else:
        scalar = data.draw(st.floats(-1e3, 1e3) | st.integers(-5, 5) |
                           st.sampled_from([np.inf, -np.inf, np.nan, -0.0]))
    f = BINARY_OPERATORS[op]
    if op == "__pow__" and "int" in kind_:
        assume(not (np.asarray(x) < 0).any() if reflected else scalar >= 0)
    args = (scalar, x) if reflected else (x, scalar)
    want = _reference(f, *args)
    assume(want is not None)
    a = as_operand(x, kind)
    got = _quiet(f, *((scalar, a) if reflected else (a, scalar)))
    name = {v: k for k, v in _OPERATORS.items()}.get(op, op)
    _values_agree(got, _standard_decides(name, args, got, want),
                  op in ("__truediv__", "__pow__"))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "uint64", "float32", "float64"])
@pytest.mark.parametrize("value", [2**70, 2**64, 2**63, -2**63 - 1, 300, -1, 2**1100])
@pytest.mark.parametrize("op", ["__add__", "__mul__", "__sub__", "__lt__", "__eq__"])
def test_big_python_integers_follow_numpy(op, value, dtype):
    """NumPy 2: a Python int out of an integer array's range is an OverflowError (not in
    comparisons); float arrays take it as a float (inf beyond the float's range, or an
    OverflowError where Python's float() cannot hold it).  Operators, functions and the
    string form agree."""
    x = np.arange(1, 5, dtype=dtype)
    a = ndpack.asarray(x, chunks=(2,))
    sym = {"__add__": "+", "__mul__": "*", "__sub__": "-", "__lt__": "<", "__eq__": "=="}[op]
    try:
        want = _quiet(BINARY_OPERATORS[op], x, value)
    except OverflowError:
        for form in (lambda: BINARY_OPERATORS[op](a, value),
                     lambda: ndpack.evaluate(f"a {sym} {value}", {"a": a})):
            with pytest.raises(OverflowError):
                _quiet(form)
        return
    for got in (_quiet(BINARY_OPERATORS[op], a, value),
                _quiet(ndpack.evaluate, f"a {sym} ({value})", {"a": a})):
        _values_agree(got, np.asarray(want), False)


@pytest.mark.parametrize("op", ["__iadd__", "__isub__", "__imul__", "__itruediv__",
                                "__ifloordiv__", "__imod__", "__ipow__", "__iand__",
                                "__ior__", "__ixor__", "__ilshift__", "__irshift__"])
@pytest.mark.parametrize("dtype", ["int16", "uint8", "float32", "float64", "bool"])
def test_inplace_operators_keep_the_dtype(op, dtype):
    """``x1 op= x2`` is ``x1 = x1 op x2`` when the promoted dtype is x1's; otherwise the
    standard leaves it undefined and NumPy's same_kind rule decides."""
    x = (np.arange(1, 7) % 4).astype(dtype).reshape(2, 3)
    y = (np.arange(6) % 3 + 1).astype(dtype).reshape(2, 3)
    ref = xp.asarray(x.copy())              # the reference may share x's memory
    try:
        _quiet(getattr(ref, op), xp.asarray(y))
    except (TypeError, ValueError):         # undefined by the standard: NumPy decides
        ref = x.copy()
        try:
            _quiet(getattr(ref, op), y)
        except (TypeError, ValueError):
            with pytest.raises((TypeError, ValueError)):
                getattr(ndpack.asarray(x, chunks=(1, 2)), op)(y)
            return
    a = ndpack.asarray(x, chunks=(1, 2))
    assert _quiet(getattr(a, op), ndpack.asarray(y, chunks=(2, 2))) is a
    _values_agree(a, np.asarray(ref), op in ("__itruediv__", "__ipow__"))


@given(x=xps.arrays(dtype=xps.numeric_dtypes() | xps.boolean_dtypes(),
                    shape=xps.array_shapes(min_dims=1, max_dims=3, max_side=5)),
       op=st.sampled_from(["__neg__", "__pos__", "__abs__", "__invert__"]),
       kind=st.sampled_from(["ndarray", "lazyexpr"]))
def test_unary_operators(x, op, kind):
    want = _reference(getattr(type(x), op), x)
    assume(want is not None)
    got = _quiet(getattr(as_operand(x, kind), op))
    _values_agree(got, want, False)


# ---- creation --------------------------------------------------------------------------

@given(start=st.integers(-20, 20), stop=st.none() | st.integers(-20, 20),
       step=st.integers(-5, 5).filter(bool), dtype=st.none() | st.sampled_from(
           [xp.int8, xp.int32, xp.int64, xp.float32, xp.float64]))
def test_arange(start, stop, step, dtype):
    want = _reference(xp.arange, start, stop, step, dtype=dtype)
    assume(want is not None)
    npdt = None if dtype is None else np.dtype(str(dtype).split(".")[-1])
    assert_eq(ndpack.arange(start, stop, step, dtype=npdt), want, rtol=0)


@given(start=st.floats(-100, 100), stop=st.floats(-100, 100), num=st.integers(0, 30),
       endpoint=st.booleans(), dtype=st.none() | st.sampled_from([xp.float32, xp.float64]))
def test_linspace(start, stop, num, endpoint, dtype):
    want = _reference(xp.linspace, start, stop, num, dtype=dtype, endpoint=endpoint)
    npdt = None if dtype is None else np.dtype(str(dtype).split(".")[-1])
    got = ndpack.linspace(start, stop, num, dtype=npdt, endpoint=endpoint)
    assert_eq(got, want, rtol=4 * np.finfo(want.dtype).eps, atol=1e-12 * (abs(start) + abs(stop)))


@given(shape=xps.array_shapes(min_dims=0, max_dims=3, max_side=5),
       fill=st.booleans() | st.integers(-100, 100) | st.floats(allow_nan=True) |
       st.complex_numbers(max_magnitude=1e6, allow_nan=False),
       dtype=st.none() | xps.scalar_dtypes())
def test_full_and_the_constant_arrays(shape, fill, dtype):
    npdt = None if dtype is None else np.dtype(str(dtype).split(".")[-1])
    if npdt is not None:        # a value of a higher kind than dtype's is left open
        assume("biufc".index(np.asarray(fill).dtype.kind) <= "biufc".index(npdt.kind)
               or npdt.kind == "u" and isinstance(fill, int))
        assume(not (npdt.kind in "iu" and isinstance(fill, bool)))
    try:
        want = _reference(xp.full, shape, fill, dtype=dtype)
    except OverflowError:       # NumPy 2: an int out of the dtype's range
        with pytest.raises(OverflowError):
            ndpack.full(shape, fill, dtype=npdt)
        return
    assume(want is not None)
    assert_eq(ndpack.full(shape, fill, dtype=npdt), want, rtol=0)
    like = ndpack.zeros(shape, dtype=want.dtype)
    assert_eq(ndpack.full_like(like, fill), np.full(shape, fill, dtype=want.dtype), rtol=0)
    for name in ("zeros", "ones", "empty"):
        ref = np.asarray(getattr(xp, name)(shape, dtype=dtype))
        got = getattr(ndpack, name)(shape, dtype=npdt)
        assert (got.shape, got.dtype) == (ref.shape, ref.dtype)
        if name != "empty":
            assert_eq(got, ref, rtol=0)
        got = getattr(ndpack, name + "_like")(like, dtype=npdt)
        assert got.shape == shape and got.dtype == (like.dtype if npdt is None else npdt)


@given(n=st.integers(0, 7), m=st.none() | st.integers(0, 7), k=st.integers(-8, 8),
       dtype=st.none() | xps.real_dtypes())
def test_eye(n, m, k, dtype):
    want = np.asarray(xp.eye(n, m, k=k, dtype=dtype))
    npdt = None if dtype is None else np.dtype(str(dtype).split(".")[-1])
    assert_eq(ndpack.eye(n, m, k=k, dtype=npdt), want, rtol=0)


@given(value=st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats() |
       st.complex_numbers(allow_nan=False) |
       st.lists(st.integers(-1000, 1000), min_size=1, max_size=5) |
       st.lists(st.floats(allow_nan=False), min_size=1, max_size=5))
def test_asarray_of_python_objects(value):
    """Default dtypes: bool, int64, float64, complex128 by the objects' kinds."""
    want = _reference(xp.asarray, value)
    assume(want is not None)
    assert_eq(ndpack.asarray(value), want, rtol=0)


def test_asarray_copy():
    x = np.arange(6.0)
    a = ndpack.asarray(x)
    assert ndpack.asarray(a) is a and ndpack.asarray(a, copy=None) is a
    assert ndpack.asarray(a, copy=True) is not a
    assert ndpack.asarray(a, copy=False) is a
    for need_copy in (lambda: ndpack.asarray(x, copy=False),
                      lambda: ndpack.asarray(a, dtype=ndpack.float32, copy=False),
                      lambda: ndpack.asarray([1, 2], copy=False),
                      lambda: ndpack.asarray(a + 1, copy=False)):
        with pytest.raises(ValueError, match="copy"):
            need_copy()
    b = ndpack.asarray(a, copy=True)
    b[0] = 100
    assert a[0] == 0


# ---- shape functions -------------------------------------------------------------------

def _arrays(min_dims=1, max_dims=3, max_side=5):
    return xps.arrays(dtype=xps.scalar_dtypes(), shape=xps.array_shapes(
        min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side))


def _same(got, want):
    assert_eq(got, np.asarray(want), rtol=0)


@given(x=_arrays(), kind=st.sampled_from(KINDS), data=st.data())
def test_axis_functions(x, kind, data):
    a = as_operand(x, kind)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    _same(ndpack.flip(a, axis=axis), xp.flip(x, axis=axis))
    _same(ndpack.flip(a), xp.flip(x))
    shift = data.draw(st.integers(-7, 7))
    _same(ndpack.roll(a, shift, axis=axis), xp.roll(x, shift, axis=axis))
    _same(ndpack.roll(a, shift), xp.roll(x, shift))
    new = data.draw(st.integers(-x.ndim - 1, x.ndim))
    _same(ndpack.expand_dims(a, axis=new), xp.expand_dims(x, axis=new))
    axes = tuple(data.draw(st.permutations(range(x.ndim))))
    _same(ndpack.permute_dims(a, axes), xp.permute_dims(x, axes))
    dest = data.draw(st.integers(-x.ndim, x.ndim - 1))
    _same(ndpack.moveaxis(a, axis, dest), xp.moveaxis(x, axis, dest))
    if x.ndim >= 2:
        _same(ndpack.matrix_transpose(a), xp.linalg.matrix_transpose(x))
        _same(a.mT, x.mT)
    ones = tuple(i for i, s in enumerate(x.shape) if s == 1)
    if ones:
        _same(ndpack.squeeze(a, axis=ones), xp.squeeze(x, axis=ones))


@given(x=_arrays(), kind=st.sampled_from(KINDS), data=st.data())
def test_reshape_and_broadcast_to(x, kind, data):
    a = as_operand(x, kind)
    shape = data.draw(st.sampled_from([(x.size,), (-1,), (1, x.size), (x.size, 1)] +
                                      ([(2, -1)] if x.size % 2 == 0 else [])))
    _same(ndpack.reshape(a, shape), xp.reshape(x, shape))
    target = data.draw(xps.mutually_broadcastable_shapes(1, base_shape=x.shape,
                                                         max_side=4)).result_shape
    assume(np.broadcast_shapes(x.shape, target) == target)
    _same(ndpack.broadcast_to(a, target), xp.broadcast_to(x, target))


@given(data=st.data(), kind=st.sampled_from(KINDS))
def test_concat_and_stack(data, kind):
    base = data.draw(xps.array_shapes(min_dims=1, max_dims=3, max_side=4))
    axis = data.draw(st.integers(-len(base), len(base) - 1))
    dtypes = data.draw(st.lists(xps.real_dtypes(), min_size=1, max_size=3))
    assume(all(("int" in str(d)) == ("int" in str(dtypes[0])) for d in dtypes))
    parts = []
    for d in dtypes:
        shape = list(base)
        shape[axis] = data.draw(st.integers(0, 3))
        parts.append(data.draw(xps.arrays(dtype=d, shape=tuple(shape))))
    want = _reference(xp.concat, parts, axis=axis)
    assume(want is not None)
    _same(ndpack.concat([as_operand(p, kind) for p in parts], axis=axis), want)
    same = [data.draw(xps.arrays(dtype=dtypes[0], shape=base)) for _ in dtypes]
    new = data.draw(st.integers(-len(base) - 1, len(base)))
    _same(ndpack.stack([as_operand(p, kind) for p in same], axis=new), xp.stack(same, axis=new))
    flat = [xp.reshape(p, (-1,)) for p in parts]
    _same(ndpack.concat([as_operand(np.asarray(p), kind) for p in flat], axis=None),
          xp.concat(flat, axis=None))


@given(x=_arrays(), kind=st.sampled_from(KINDS), data=st.data())
def test_take_and_take_along_axis(x, kind, data):
    a = as_operand(x, kind)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    assume(n > 0)
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=6)), dtype=np.int64)
    if x.ndim == 1:
        _same(ndpack.take(a, idx), xp.take(x, xp.asarray(idx)))
    _same(ndpack.take(a, idx, axis=axis), xp.take(x, xp.asarray(idx), axis=axis))
    shape = list(x.shape)
    shape[axis] = data.draw(st.integers(0, 4))
    along = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(shape)),
                                        max_size=int(np.prod(shape)))),
                     dtype=np.int64).reshape(shape)
    _same(ndpack.take_along_axis(a, along, axis=axis),
          xp.take_along_axis(x, xp.asarray(along), axis=axis))


# ---- indexing ---------------------------------------------------------------------------

@given(x=_arrays(min_dims=1, max_dims=3, max_side=6), data=st.data(),
       kind=st.sampled_from(["ndarray", "lazyexpr"]))
def test_getitem_of_the_standards_indices(x, data, kind):
    key = data.draw(xps.indices(x.shape, allow_newaxis=True, allow_ellipsis=True))
    want = _reference(x.__getitem__, key)
    assume(want is not None)
    got = as_operand(x, kind)[key]
    _same(got if np.ndim(got) else np.asarray(got)[()], want)


@given(x=_arrays(min_dims=1, max_dims=3, max_side=6), data=st.data())
def test_getitem_with_masks_and_integer_arrays(x, data):
    a = as_operand(x, "ndarray")
    mask = data.draw(xps.arrays(dtype=xp.bool, shape=x.shape))
    _same(a[np.asarray(mask)], x[mask])
    n = x.shape[0]
    assume(n > 0)
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=5)), dtype=np.int64)
    _same(a[idx], np.asarray(x)[idx])


@given(x=_arrays(min_dims=1, max_dims=3, max_side=6), data=st.data())
def test_setitem_of_the_standards_indices(x, data):
    key = data.draw(xps.indices(x.shape, allow_ellipsis=True))
    ref = xp.asarray(np.asarray(x).copy())
    target = ref[key]
    value = data.draw(xps.arrays(dtype=x.dtype, shape=target.shape) |
                      xps.from_dtype(x.dtype).map(lambda v: xp.asarray(v, dtype=x.dtype)))
    ref[key] = value
    a = ndpack.asarray(np.asarray(x), chunks=tuple(max(1, (s + 1) // 2) for s in x.shape))
    a[key] = np.asarray(value)
    _same(a[()], ref)


# ---- the standard's special cases, every one (tests/api/special_cases.py) ------------

_OPERATORS = {"add": "__add__", "subtract": "__sub__", "multiply": "__mul__",
              "divide": "__truediv__", "floor_divide": "__floordiv__",
              "remainder": "__mod__", "pow": "__pow__", "equal": "__eq__",
              "not_equal": "__ne__"}
_INPLACE = {"add": "__iadd__", "subtract": "__isub__", "multiply": "__imul__",
            "divide": "__itruediv__", "floor_divide": "__ifloordiv__",
            "remainder": "__imod__", "pow": "__ipow__"}


def _special_failures(name, args, got, rtol):
    """The (arguments, rule, value) of every rule that `got` breaks."""
    bad = []
    for idx in np.ndindex(got.shape):
        point = [a[idx] if isinstance(a, np.ndarray) else a for a in args]
        point = [complex(p) if np.iscomplexobj(p) else float(p) for p in point]
        for rule, want in sc.expected(name, *point):
            if not sc.check(want, got[idx], rtol):
                bad.append((tuple(point), rule, got[idx]))
    return bad


def _pairs(dtype):
    v = np.array(sc.VALUES, dtype=dtype)
    x1, x2 = np.meshgrid(v, v, indexing="ij")
    return x1.ravel(), x2.ravel()


def _complex_values(dtype):
    re, im = _pairs(np.dtype(dtype).char.lower() == "f" and "float32" or "float64")
    z = np.empty(re.shape, dtype)
    z.real, z.imag = re, im
    return z


def _rtol(dtype):
    return 4 * float(np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(n for n in sc.REAL if n in elementwise.UNARY))
def test_special_cases_real_unary(name, dtype):
    x = np.array(sc.VALUES, dtype=dtype)
    for kind in KINDS:
        got = np.asarray(_quiet(getattr(ndpack, name), as_operand(x, kind))[()])
        assert _special_failures(name, [x], got, _rtol(dtype)) == []


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(n for n in sc.REAL if n in elementwise.BINARY))
def test_special_cases_real_binary(name, dtype):
    x1, x2 = _pairs(dtype)
    for kind in KINDS:
        got = np.asarray(_quiet(getattr(ndpack, name), as_operand(x1, kind),
                                as_operand(x2, kind))[()])
        assert _special_failures(name, [x1, x2], got, _rtol(dtype)) == []


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(_OPERATORS))
def test_special_cases_of_the_operators(name, dtype):
    """``x1 // x2`` and the others, with arrays, with a Python float on either side,
    and in place (an NDArray on the left)."""
    x1, x2 = _pairs(dtype)
    op, rtol = _OPERATORS[name], _rtol(dtype)
    for kind in ("ndarray", "lazyexpr"):
        got = np.asarray(_quiet(getattr(operator, op.strip("_")), as_operand(x1, kind),
                                as_operand(x2, kind))[()])
        assert _special_failures(name, [x1, x2], got, rtol) == []
    for s in sc.VALUES:
        got = np.asarray(_quiet(getattr(operator, op.strip("_")), ndpack.asarray(x1),
                                float(s))[()])
        assert _special_failures(name, [x1, np.full_like(x1, s)], got, rtol) == []
        got = np.asarray(_quiet(getattr(operator, op.strip("_")), float(s),
                                ndpack.asarray(x2))[()])
        assert _special_failures(name, [np.full_like(x2, s), x2], got, rtol) == []
    if name in _INPLACE:
        a = ndpack.asarray(x1)
        _quiet(getattr(a, _INPLACE[name]), ndpack.asarray(x2))
        assert _special_failures(name, [x1, x2], a[()], rtol) == []
        for s in sc.VALUES:                       # x //= 2.0, x **= 0.5, ...
            a = ndpack.asarray(x1)
            _quiet(getattr(a, _INPLACE[name]), float(s))
            assert _special_failures(name, [x1, np.full_like(x1, s)], a[()], rtol) == []


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_cases_of_clip(dtype):
    x = np.array(sc.VALUES, dtype=dtype)
    got = np.asarray(_quiet(ndpack.clip, ndpack.asarray(x), -1.0, 1.0)[()])
    assert _special_failures("clip", [x], got, 0) == []
    for bound in ({"min": ndpack.asarray(np.full_like(x, np.nan))},
                  {"max": ndpack.asarray(np.full_like(x, np.nan))}):
        got = np.asarray(_quiet(ndpack.clip, ndpack.asarray(x), **bound)[()])
        assert np.isnan(got).all()


_COMPLEX_NAMES = sorted(set(sc.COMPLEX) | set(sc.DERIVED) | set(sc.SCALED))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", _COMPLEX_NAMES)
def test_special_cases_complex(name, dtype):
    z = _complex_values(dtype)
    for kind in KINDS:
        got = np.asarray(_quiet(getattr(ndpack, name), as_operand(z, kind))[()])
        assert _special_failures(name, [z], got, _rtol(dtype)) == []


def test_every_special_case_is_reached():
    """Every rule of the table applies at some of the values checked (a rule that
    matches nothing would check nothing)."""
    seen = set()
    v = sc.VALUES
    for name in sc.REAL:
        nargs = 2 if name in elementwise.BINARY else 1
        points = [(a, b) for a in v for b in v] if nargs == 2 else [(a,) for a in v]
        for p in points:
            seen.update((name, rule) for rule, _ in sc.expected(name, *p))
    for name in _COMPLEX_NAMES:
        for a in v:
            for b in v:
                seen.update((name, rule.split(": ")[-1]) for rule, _ in
                            sc.expected(name, complex(a, b)))
    rules = {(n, line.strip()) for n, t in sc.REAL.items() for line in t.strip().splitlines()}
    rules |= {(n, line.strip()) for n, t in sc.COMPLEX.items()
              for line in t.strip().splitlines()}
    assert sorted(rules - seen) == []


# ---- result dtypes of the functions that accumulate ----------------------------------

_PAIRED = {"vecdot": lambda m, a, b: m.vecdot(a, b), "matmul": lambda m, a, b: m.matmul(a, b),
           "tensordot": lambda m, a, b: m.tensordot(a, b, axes=1),
           "linalg.vecdot": lambda m, a, b: m.linalg.vecdot(a, b),
           "linalg.matmul": lambda m, a, b: m.linalg.matmul(a, b),
           "linalg.tensordot": lambda m, a, b: m.linalg.tensordot(a, b, axes=1),
           "linalg.outer": lambda m, a, b: m.linalg.outer(a[0, ...], b[0, ...])}
_SINGLE = {"sum": lambda m, a: m.sum(a), "sum axis": lambda m, a: m.sum(a, axis=0),
           "prod": lambda m, a: m.prod(a), "cumulative_sum": lambda m, a: m.cumulative_sum(a, axis=1),
           "cumulative_prod": lambda m, a: m.cumulative_prod(a, axis=0),
           "linalg.trace": lambda m, a: m.linalg.trace(a),
           "linalg.matrix_rank": lambda m, a: m.linalg.matrix_rank(a)}


def _dtype_name(x):
    return str(x.dtype).replace("array_api_strict.", "")


def _both(fn, *arrays):
    """(reference result or None, ndpack's result as NumPy)."""
    try:
        want = _quiet(fn, xp, *[xp.asarray(a) for a in arrays])
    except (TypeError, ValueError):
        return None, None
    got = _quiet(fn, ndpack, *[ndpack.asarray(a) for a in arrays])
    return want, got


@given(d1=xps.numeric_dtypes(), d2=xps.numeric_dtypes(), name=st.sampled_from(sorted(_PAIRED)),
       data=st.data())
def test_products_keep_the_promoted_dtype(d1, d2, name, data):
    """vecdot/matmul/tensordot/outer give the standard's promotion of the two dtypes
    (``vecdot(uint8, uint8)`` is uint8) and the reference's values (integers wrap)."""
    n = data.draw(st.integers(1, 4))
    def small(d):
        if "int" in str(d):
            return {"min_value": 0 if "uint" in str(d) else -3, "max_value": 3}
        return {"allow_nan": False, "allow_infinity": False} \
            if "complex" in str(d) else {"allow_nan": False, "min_value": -4, "max_value": 4}
    a = data.draw(xps.arrays(d1, (3, n), elements=small(d1)))
    b = data.draw(xps.arrays(d2, (n, 3) if "mat" in name or "tensor" in name else (3, n),
                             elements=small(d2)))
    want, got = _both(_PAIRED[name], np.asarray(a), np.asarray(b))
    if want is None:
        return
    got = np.asarray(got[()] if hasattr(got, "compute") or isinstance(got, ndpack.NDArray)
                     else got)
    assert str(got.dtype) == _dtype_name(want)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-5)


@given(d=xps.numeric_dtypes() | xps.boolean_dtypes(), name=st.sampled_from(sorted(_SINGLE)))
def test_accumulations_keep_the_standards_dtype(d, name):
    a = np.ones((3, 3), dtype=_dtype_name(xp.asarray(0, dtype=d)))
    want, got = _both(_SINGLE[name], a)
    if want is None:
        return
    got = np.asarray(got[()] if isinstance(got, (ndpack.NDArray, ndpack.LazyExpr)) else got)
    assert str(got.dtype) == _dtype_name(want)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint32", "float32"])
def test_vecdot_of_small_integers_keeps_their_dtype(dtype):
    a = np.full((2, 200), 3, dtype=dtype)
    got = np.asarray(ndpack.vecdot(ndpack.asarray(a), ndpack.asarray(a)))
    want = np.asarray(xp.vecdot(xp.asarray(a), xp.asarray(a)))
    assert got.dtype == want.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)         # 1800 wraps in uint8/int8
