"""The 2025.12 revision's additions that ndpack has (``isin``, ``broadcast_shapes``,
``linalg.eig``, ``linalg.eigvals``), against array_api_strict at that revision."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ndpack

from tests.api.standard import xp, xps
from tests.helpers import as_operand


@pytest.fixture(autouse=True)
def _revision_2025():
    with xp.ArrayAPIStrictFlags(api_version="2025.12"):
        yield


_INTS = xps.integer_dtypes(sizes=(8, 16, 32, 64))


@given(x1=xps.arrays(_INTS, xps.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)),
       x2=xps.arrays(_INTS, xps.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5)),
       invert=st.booleans(), kind=st.sampled_from(["ndarray", "lazyexpr", "numpy"]))
def test_isin(x1, x2, invert, kind):
    want = np.asarray(xp.isin(x1, x2))        # array_api_strict 2.6.1 ignores invert=
    if invert:
        want = ~want
    got = ndpack.isin(as_operand(x1, kind), as_operand(x2, kind), invert=invert)
    assert isinstance(got, ndpack.NDArray)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got[()], want)


def test_isin_scalars_and_nan():
    a = ndpack.asarray(np.array([1.0, np.nan, 3.0]))
    np.testing.assert_array_equal(ndpack.isin(a, np.array([np.nan, 3.0]))[()],
                                  [False, False, True])
    assert bool(ndpack.isin(3, ndpack.asarray(np.arange(5)))[()])
    np.testing.assert_array_equal(ndpack.isin(ndpack.asarray(np.arange(4)), 2)[()],
                                  np.asarray(xp.isin(xp.arange(4), 2)))
    with pytest.raises(TypeError):
        ndpack.isin(1, 2)


@given(shapes=st.lists(xps.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
                       max_size=4))
def test_broadcast_shapes(shapes):
    try:
        want = xp.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError):
            ndpack.broadcast_shapes(*shapes)
        return
    got = ndpack.broadcast_shapes(*shapes)
    assert got == tuple(want) and all(type(d) is int for d in got)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("name", ["eig", "eigvals"])
def test_eig(name, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 4)).astype(dtype)
    want = getattr(xp.linalg, name)(xp.asarray(x))
    got = getattr(ndpack.linalg, name)(ndpack.asarray(x))
    w_want = want[0] if name == "eig" else want
    w_got = got.eigenvalues if name == "eig" else got
    assert str(w_got.dtype) == str(w_want.dtype).replace("array_api_strict.", "")
    np.testing.assert_allclose(np.sort_complex(w_got[()]), np.sort_complex(np.asarray(w_want)),
                               rtol=1e-4, atol=1e-4)
    if name == "eig":                               # A v = v diag(w)
        v, w = got.eigenvectors[()], got.eigenvalues[()]
        np.testing.assert_allclose(x @ v, v * w[..., None, :], rtol=1e-3, atol=1e-3)
    with pytest.raises(TypeError):
        getattr(ndpack.linalg, name)(ndpack.asarray(np.eye(3, dtype=np.int32)))
