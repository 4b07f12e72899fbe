"""NumPy's NaN-skipping reductions on NDArrays and expressions (through
``__array_function__``) against NumPy itself, all-NaN slices included."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ndpack

NAMES = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmin", "nanmax"]


@given(x=hnp.arrays(dtype=st.sampled_from([np.float64, np.float32]),
                    shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                    elements=st.sampled_from([0.0, 1.5, -2.0, 3.0, np.nan])),
       integers=st.booleans(), name=st.sampled_from(NAMES), data=st.data())
def test_against_numpy(x, integers, name, data):
    if integers:
        x = np.nan_to_num(x).astype(np.int32)
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    keepdims = data.draw(st.booleans())
    fn = getattr(np, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(x, axis=axis, keepdims=keepdims)
        a = ndpack.asarray(x, chunks=tuple(max(1, (s + 1) // 2) for s in x.shape))
        for operand in (a, a + 0):
            got = fn(operand, axis=axis, keepdims=keepdims)
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_allclose(got, want, rtol=1e-5 if x.dtype == np.float32 else
                                       1e-12, equal_nan=True)


def test_keywords_it_does_not_stream_are_computed_numpys_way():
    x = np.array([[1.0, np.nan], [3.0, 4.0]])
    a = ndpack.asarray(x)
    out = np.empty(2)
    np.nansum(a, axis=0, out=out)
    np.testing.assert_array_equal(out, np.nansum(x, axis=0))
    assert np.nanmax(a, initial=10.0) == np.nanmax(x, initial=10.0)
