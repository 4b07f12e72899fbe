"""unique_values / unique_counts / unique_inverse / unique_all out of core against
NumPy 2's ``np.unique_all`` (sorted values, every NaN its own value, -0.0 and 0.0 one):
runs forced small through ``mergesort.RUN_ITEMS`` / ``PIECE_ITEMS``, groups across
pieces, inverse indices in the input's chunks, inputs of every kind."""

import contextlib
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ndpack
from ndpack.engine.ops import mergesort

from ..helpers import as_operand


@contextlib.contextmanager
def knobs(run=None, piece=None):
    old = mergesort.RUN_ITEMS, mergesort.PIECE_ITEMS
    mergesort.RUN_ITEMS, mergesort.PIECE_ITEMS = run, piece
    try:
        yield
    finally:
        mergesort.RUN_ITEMS, mergesort.PIECE_ITEMS = old


DTYPES = ["int8", "uint16", "int64", "float32", "float64", "bool", "complex128"]


@st.composite
def arrays(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    if dtype.kind == "f":
        elements = st.sampled_from([0.0, -0.0, 1.5, np.nan, np.inf, -np.inf])
    elif dtype.kind == "c":
        elements = st.builds(complex, st.sampled_from([0.0, 1.0, np.nan]),
                             st.sampled_from([0.0, -0.0, np.nan]))
    elif dtype.kind == "b":
        elements = st.booleans()
    else:
        elements = st.integers(0, 4)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=7))
    return draw(hnp.arrays(dtype, shape, elements=elements))


def same(got, want):
    got, want = np.asarray(got), np.array(want, order="C")
    assert got.dtype == want.dtype and got.shape == want.shape, \
        (got.dtype, want.dtype, got.shape, want.shape)
    if want.dtype.kind in "fc":
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (got, want)
    else:
        np.testing.assert_array_equal(got, want)


def operand(x, data):
    if x.ndim == 0 or x.size == 0:
        return x
    chunks = tuple(data.draw(st.integers(1, s)) for s in x.shape)
    return ndpack.asarray(x, chunks=chunks)


@given(x=arrays(), data=st.data())
def test_unique_all_matches_numpy(x, data):
    a = operand(x, data)
    with knobs(data.draw(st.sampled_from([None, 1, 2, 5, 13])),
               data.draw(st.sampled_from([None, 1, 2, 3]))):
        got = ndpack.unique_all(a)
        counts = ndpack.unique_counts(a)
        inv = ndpack.unique_inverse(a)
        values = ndpack.unique_values(a)
    want = np.unique_all(x)
    # the standard's inverse indices have the input's shape (NumPy's are 1-d for 0-d)
    want = want._replace(inverse_indices=want.inverse_indices.reshape(x.shape))
    for g, w in zip(got, want):
        same(g[()], w)
    same(counts.values[()], want.values)
    same(counts.counts[()], want.counts)
    same(inv.values[()], want.values)
    same(inv.inverse_indices[()], want.inverse_indices)
    same(values[()], want.values)
    if isinstance(a, ndpack.NDArray):
        assert got.inverse_indices.chunks == a.chunks


@given(n=st.integers(1, 400), data=st.data())
def test_long_groups_across_pieces(n, data):
    """Few distinct values in a long 1-D input: groups straddle runs and pieces."""
    x = np.asarray(data.draw(hnp.arrays(np.int16, n, elements=st.integers(0, 3))))
    a = ndpack.asarray(x, chunks=(data.draw(st.integers(1, n)),))
    with knobs(data.draw(st.integers(1, 50)), data.draw(st.integers(1, 5))):
        got = ndpack.unique_all(a)
    for g, w in zip(got, np.unique_all(x)):
        same(g[()], w)


@pytest.mark.parametrize("kind", ["ndarray", "lazyexpr", "numpy"])
def test_input_kinds(kind):
    x = np.random.default_rng(4).integers(0, 20, (30, 40)).astype(np.float32)
    x[3, 5] = x[7, 2] = np.nan
    with knobs(100, 16):
        got = ndpack.unique_all(as_operand(x, kind))
    for g, w in zip(got, np.unique_all(x)):
        same(g[()], w)


def test_runs_beside_an_input_on_disk(tmp_path):
    """Runs of an input file go to its folder in unnamed files: nothing is left."""
    x = np.random.default_rng(5).integers(0, 1000, 5000)
    a = ndpack.asarray(x, chunks=(700,), urlpath=str(tmp_path / "a.b2nd"), mode="w")
    with knobs(600, 64):
        got = ndpack.unique_all(a)
    for g, w in zip(got, np.unique_all(x)):
        same(g[()], w)
    assert os.listdir(tmp_path) == ["a.b2nd"]


def test_bad_input():
    with pytest.raises(TypeError, match="structured"):
        ndpack.unique_values(np.zeros(3, dtype=[("a", "i4")]))
    with pytest.raises(TypeError, match="takes an array"):
        ndpack.unique_counts(3)
