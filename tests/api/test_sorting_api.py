"""Sorting, searching and set functions of the namespace against array_api_strict
(revision 2024.12): stability, descending order, NaNs, int64 indices, the unique
functions' NaN rule, inputs of every kind (NDArray, LazyExpr, NumPy)."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ndpack

from tests.helpers import as_operand, assert_eq

xp = pytest.importorskip("array_api_strict")
xp.set_array_api_strict_flags(api_version="2024.12")
from hypothesis.extra.array_api import make_strategies_namespace  # noqa: E402

xps = make_strategies_namespace(xp, api_version="2024.12")

# few distinct values, so that ties (stability) and repeated NaNs are common
_SMALL = {"int8": st.integers(-3, 3), "uint8": st.integers(0, 4)}


@st.composite
def _arrays(draw, min_dims=1):
    dtype = draw(xps.real_dtypes() | xps.boolean_dtypes())
    name = str(dtype).split(".")[-1]
    if "float" in name:
        elements = st.sampled_from([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, 7.0])
    elif name == "bool":
        elements = st.booleans()
    else:
        elements = st.integers(0, 4)
    return draw(xps.arrays(dtype=dtype, shape=xps.array_shapes(
        min_dims=min_dims, max_dims=3, min_side=0, max_side=6), elements=elements))


def _same(got, want):
    assert_eq(got, want, rtol=0)


KINDS = st.sampled_from(["ndarray", "lazyexpr", "numpy"])


@given(x=_arrays(), kind=KINDS, data=st.data())
def test_sort_and_argsort(x, kind, data):
    assume("bool" not in str(x.dtype))          # the standard sorts real numbers
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    descending = data.draw(st.booleans())
    kw = {"axis": axis, "descending": descending, "stable": True}
    _same(ndpack.sort(as_operand(x, kind), **kw), xp.sort(x, **kw))
    _same(ndpack.argsort(as_operand(x, kind), **kw), xp.argsort(x, **kw))


def _check_unique(x, values, indices, inverse, counts):
    """values and counts equal the reference's; indices and inverse indices have the
    reference's values for non-NaN elements, and for NaNs (each its own value, in an
    order the standard leaves open) satisfy the defining properties."""
    ref = xp.unique_all(x)
    _same(values, ref.values)
    _same(counts, ref.counts)
    flat = np.asarray(x).reshape(-1)
    v, i, inv = np.asarray(values), np.asarray(indices), np.asarray(inverse)
    assert i.dtype == inv.dtype == np.int64 and inv.shape == np.asarray(x).shape
    np.testing.assert_array_equal(flat[i], v)                  # first positions
    np.testing.assert_array_equal(v[inv].reshape(-1), flat)    # inverse rebuilds x
    nan = np.isnan(v) if v.dtype.kind == "f" else np.zeros(v.shape, bool)
    np.testing.assert_array_equal(i[~nan], np.asarray(ref.indices)[~nan])
    nan_elems = np.isnan(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, bool)
    assert len(set(inv.reshape(-1)[nan_elems].tolist())) == int(nan_elems.sum())


@given(x=_arrays(min_dims=1), kind=KINDS)
def test_unique_functions(x, kind):
    got = ndpack.unique_all(as_operand(x, kind))
    _check_unique(x, *got)
    c = ndpack.unique_counts(as_operand(x, kind))
    _same(c.values, got.values)
    _same(c.counts, got.counts)
    i = ndpack.unique_inverse(as_operand(x, kind))
    _same(i.values, got.values)
    _same(i.inverse_indices, got.inverse_indices)
    _same(ndpack.unique_values(as_operand(x, kind)), got.values)


@given(x=_arrays(min_dims=1), kind=KINDS)
def test_nonzero(x, kind):
    got, want = ndpack.nonzero(as_operand(x, kind)), xp.nonzero(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


@given(data=st.data(), kind=KINDS)
def test_searchsorted(data, kind):
    x1 = data.draw(_arrays(min_dims=1).filter(lambda a: a.ndim == 1 and a.dtype != xp.bool))
    x1 = xp.sort(x1)
    x2 = data.draw(xps.arrays(dtype=x1.dtype, shape=xps.array_shapes(min_dims=0, max_dims=2,
                                                                     max_side=5)))
    side = data.draw(st.sampled_from(["left", "right"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xp.searchsorted(x1, x2, side=side)
    _same(ndpack.searchsorted(as_operand(x1, kind), as_operand(x2, kind), side=side), want)


def test_searchsorted_with_sorter():
    x = np.array([5.0, 1.0, 3.0, 2.0])
    order = ndpack.argsort(ndpack.asarray(x))
    got = ndpack.searchsorted(x, np.array([0.0, 2.5, 9.0]), sorter=order)
    _same(got, np.searchsorted(x, [0.0, 2.5, 9.0], sorter=np.argsort(x)))


def test_bad_input():
    with pytest.raises(ValueError, match="side must be"):
        ndpack.searchsorted(np.arange(3), 1, side="middle")
    with pytest.raises(ValueError, match="1-d x1"):
        ndpack.searchsorted(np.ones((2, 2)), 1)
    for fn in (ndpack.sort, ndpack.argsort, ndpack.nonzero):
        with pytest.raises(ValueError, match="at least one dimension"):
            fn(ndpack.asarray(np.array(3.0)))
        with pytest.raises(TypeError, match="takes an array"):
            fn(3.0)
    with pytest.raises(np.exceptions.AxisError):
        ndpack.sort(np.ones(3), axis=1)


@given(data=st.data())
def test_searchsorted_reads_a_stored_array_where_it_lies(data):
    """A 1-d NDArray is searched by chunk and block firsts, then only the blocks the
    values fall in: NumPy's answers, with duplicates across chunk and block edges."""
    from hypothesis.extra import numpy as hnp
    n = data.draw(st.integers(0, 400))
    dtype = data.draw(st.sampled_from([np.int16, np.float64, np.float32]))
    values = data.draw(hnp.arrays(dtype, n, elements=st.integers(-5, 5)))
    if dtype != np.int16 and n and data.draw(st.booleans()):
        values[data.draw(st.integers(0, n - 1)):] = np.nan       # NaNs sort last
    x = np.sort(values)
    block = data.draw(st.integers(1, 20))
    chunk = block * data.draw(st.integers(1, 5))
    a = ndpack.asarray(x, chunks=(max(chunk, 1),), blocks=(block,)) if n else ndpack.asarray(x)
    q = data.draw(hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=6),
                             elements=st.sampled_from([-7.0, -5.0, 0.0, 0.5, 2.0, 5.0, 9.0,
                                                       np.nan])))
    side = data.draw(st.sampled_from(["left", "right"]))
    got = ndpack.searchsorted(a, q, side=side)
    _same(got, np.searchsorted(x, q, side=side).astype(np.int64))


def test_searchsorted_decodes_only_the_blocks_it_needs(monkeypatch):
    x = np.arange(100_000, dtype=np.int64) // 3
    a = ndpack.asarray(x, chunks=(10_000,), blocks=(1_000,))
    reads = []
    original = ndpack.NDArray.__getitem__

    def spy(self, key):
        reads.append(key)
        return original(self, key)
    monkeypatch.setattr(ndpack.NDArray, "__getitem__", spy)
    got = ndpack.searchsorted(a, np.array([5, 20_000, 20_001]), side="left")
    monkeypatch.setattr(ndpack.NDArray, "__getitem__", original)
    np.testing.assert_array_equal(got[()], np.searchsorted(x, [5, 20_000, 20_001]))
    slices = [k for k in reads if isinstance(k, slice)]
    assert len(slices) == 3                                  # one block per value, at most
    assert all(k.stop - k.start <= 1_000 for k in slices)    # one block each, never more
