"""nonzero in two streamed passes against NumPy: slabs forced small through
``nonzero.SLAB_ITEMS`` (flat ranges that split rows), chunkings, dtypes, input kinds,
and reads that never exceed a slab."""

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ndpack
from ndpack.engine.ops import nonzero as nz

from ..helpers import as_operand


@contextlib.contextmanager
def slab(items):
    old, nz.SLAB_ITEMS = nz.SLAB_ITEMS, items
    try:
        yield
    finally:
        nz.SLAB_ITEMS = old


@given(data=st.data())
def test_nonzero_matches_numpy(data):
    dtype = data.draw(st.sampled_from(["bool", "int8", "float64", "complex64", "uint32"]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=7))
    elements = st.sampled_from([0.0, -0.0, 1.0, np.nan]) if dtype == "float64" else None
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    a = x
    if x.size and data.draw(st.booleans()):
        a = ndpack.asarray(x, chunks=tuple(data.draw(st.integers(1, s)) for s in shape))
    with slab(data.draw(st.sampled_from([None, 1, 3, 7, 50]))):
        got = ndpack.nonzero(a)
    want = np.nonzero(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.int64 and g.shape == w.shape
        np.testing.assert_array_equal(g[()], w)


@pytest.mark.parametrize("kind", ["ndarray", "lazyexpr", "numpy"])
def test_input_kinds(kind):
    x = np.random.default_rng(1).random((20, 30, 7)) < 0.2
    with slab(100):
        got = ndpack.nonzero(as_operand(x, kind))
    for g, w in zip(got, np.nonzero(x)):
        np.testing.assert_array_equal(g[()], w)


class Spy:
    def __init__(self, x):
        self.x, self.shape, self.dtype, self.sizes = x, x.shape, x.dtype, []

    def __getitem__(self, key):
        out = self.x[key]
        self.sizes.append(np.size(out))
        return out


def test_reads_stay_within_a_slab():
    x = np.random.default_rng(2).integers(0, 3, (50, 40, 3))
    spy = Spy(x)
    with slab(500):
        got = ndpack.nonzero(spy)
    assert max(spy.sizes) <= 500
    for g, w in zip(got, np.nonzero(x)):
        np.testing.assert_array_equal(g[()], w)


def test_bad_input():
    with pytest.raises(ValueError, match="at least one dimension"):
        ndpack.nonzero(np.float64(2.0))
    with pytest.raises(TypeError, match="takes an array"):
        ndpack.nonzero(3)
