"""quantile / median with bounded memory against np.quantile / np.median: tiles in
memory and the selection passes (forced through ``quantile.QUANTILE_ITEMS``,
``COLLECT_ITEMS`` and ``BINS``), every axis form, keepdims, q forms (NumPy's weak
promotion of Python floats included), NaN lanes, inputs of every kind, bad input, and
reads that never hold the input whole."""

import contextlib
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ndpack
from ndpack.engine.ops import quantile as qm

from ..helpers import as_operand


@contextlib.contextmanager
def knobs(items=None, collect=None, bins=1 << 16):
    old = qm.QUANTILE_ITEMS, qm.COLLECT_ITEMS, qm.BINS
    qm.QUANTILE_ITEMS, qm.COLLECT_ITEMS, qm.BINS = items, collect, bins
    try:
        yield
    finally:
        qm.QUANTILE_ITEMS, qm.COLLECT_ITEMS, qm.BINS = old


def same(got, want):
    """NumPy's type, dtype, shape and values (NaNs equal; -0.0 == 0.0, since
    np.partition picks either)."""
    assert type(got) is type(want), (type(got), type(want))
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    assert np.array_equal(g, w, equal_nan=True), (g, w)


FLOATS = [0.0, -0.0, 1.5, -2.0, 3.25, 7.0, 1e300, -1e-300, np.inf, -np.inf]
QS = [0.5, 0.0, 1.0, 0.3, 0.999, 1, [0.1, 0.9], [0, 1], np.float32(0.6),
      np.array([0.25, 0.75], np.float32), np.array(0.5), [[0.2, 0.4], [0.6, 0.8]]]


@st.composite
def inputs(draw):
    dtype = np.dtype(draw(st.sampled_from(["float64", "float32", "float16", "int64",
                                           "uint8", "int16"])))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
    if dtype.kind == "f":
        values = FLOATS + ([np.nan] if draw(st.booleans()) else [])
        elements = st.sampled_from(values)
    else:
        elements = st.integers(0, 50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # 1e300 overflows float16/32
        return draw(hnp.arrays(dtype, shape, elements=elements))


@given(x=inputs(), data=st.data())
def test_quantile_and_median_match_numpy(x, data):
    nd = x.ndim
    a = ndpack.asarray(x, chunks=tuple(data.draw(st.integers(1, s)) for s in x.shape))
    axis = data.draw(st.none() | st.integers(-nd, nd - 1) |
                     st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd,
                              unique=True).map(tuple))
    keepdims = data.draw(st.booleans())
    q = data.draw(st.sampled_from(QS))
    items = data.draw(st.sampled_from([None, 1, 2, 3, 7, 20]))
    collect = data.draw(st.sampled_from([None, 1, 2, 5]))
    bins = data.draw(st.sampled_from([4, 16, 1 << 16]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_q = np.quantile(x, q, axis=axis, keepdims=keepdims)
        want_m = np.median(x, axis=axis, keepdims=keepdims)
        with knobs(items, collect, bins):
            got_q = ndpack.quantile(a, q, axis=axis, keepdims=keepdims)
            got_m = ndpack.median(a, axis=axis, keepdims=keepdims)
    same(got_q, want_q)
    same(got_m, want_m)


@given(n=st.integers(1, 1000), data=st.data())
def test_one_long_lane(n, data):
    """axis=None over a long 1-D input of few distinct values (ties at every rank,
    neighbours one ulp apart): histogram passes narrow to one key or gather."""
    x = np.asarray(data.draw(hnp.arrays(np.float64, n, elements=st.sampled_from(
        [0.0, 1.0, 1.0000000000000002, 2.0, -1.0, 1e-310]))))
    a = ndpack.asarray(x, chunks=(data.draw(st.integers(1, n)),))
    qs = data.draw(st.lists(st.floats(0, 1), min_size=1, max_size=5))
    with knobs(data.draw(st.integers(50, 200)), data.draw(st.integers(1, 50)),
               data.draw(st.sampled_from([256, 1 << 16]))):
        same(ndpack.quantile(a, qs), np.quantile(x, qs))
        same(ndpack.median(a), np.median(x))


@pytest.mark.parametrize("kind", ["ndarray", "lazyexpr", "numpy", "foreign"])
@pytest.mark.parametrize("items", [None, 50])
def test_input_kinds(kind, items):
    x = np.random.default_rng(6).normal(size=(30, 40))
    op = Spy(x) if kind == "foreign" else as_operand(x, kind)
    with knobs(items):
        same(ndpack.quantile(op, [0.05, 0.5], axis=0), np.quantile(x, [0.05, 0.5], axis=0))
        same(ndpack.median(op, axis=1), np.median(x, axis=1))
        same(ndpack.quantile(op, 0.9), np.quantile(x, 0.9))


class Spy:
    """An array-like (shape, dtype, __getitem__) that records the size of every read."""

    def __init__(self, x):
        self.x, self.shape, self.dtype, self.sizes = x, x.shape, x.dtype, []

    def __getitem__(self, key):
        out = self.x[key]
        self.sizes.append(np.size(out))
        return out


def test_one_bit_per_pass():
    """Histograms of two buckets: 64 passes down to one key of float64."""
    x = np.array([1.0, 1.0000000000000002, 1.0000000000000004, -0.0, 0.0, 5e-324] * 5)
    with knobs(10, 1, 2):
        same(ndpack.quantile(x, [0.1, 0.5, 0.77]), np.quantile(x, [0.1, 0.5, 0.77]))
        same(ndpack.median(x), np.median(x))


def test_never_reads_the_input_whole():
    x = np.random.default_rng(7).random((60, 50))
    spy = Spy(x)
    with knobs(200, 100):
        same(ndpack.quantile(spy, [0.1, 0.5, 0.9]), np.quantile(x, [0.1, 0.5, 0.9]))
        same(ndpack.median(spy, axis=0), np.median(x, axis=0))
    assert max(spy.sizes) <= 200


def test_nan_lanes():
    x = np.arange(24.0).reshape(4, 6)
    x[1, 3] = np.nan
    a = ndpack.asarray(x, chunks=(2, 2))
    with knobs(3):
        same(ndpack.median(a, axis=1), np.median(x, axis=1))
        same(ndpack.quantile(a, 0.5), np.quantile(x, 0.5))                # nan, float64
        x32 = x.astype(np.float32)        # a scalar NaN comes in the input's dtype
        same(ndpack.median(ndpack.asarray(x32, chunks=(3, 3))), np.median(x32))
        same(ndpack.quantile(x32, 0.5), np.quantile(x32, 0.5))


def test_bad_input():
    with pytest.raises(TypeError, match="real numbers"):
        ndpack.quantile(np.ones(3, complex), 0.5)
    with pytest.raises(TypeError):
        ndpack.quantile(np.ones(3, bool), 0.5)
    with pytest.raises(ValueError, match="range"):
        ndpack.quantile(np.ones(3), 1.5)
    with pytest.raises(ValueError, match="linear"):
        ndpack.quantile(np.ones(3), 0.5, method="nearest")
    with pytest.raises(np.exceptions.AxisError):
        ndpack.median(np.ones((2, 3)), axis=2)
