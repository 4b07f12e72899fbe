"""The ``linalg`` and ``fft`` extensions of the namespace against array_api_strict
(revision 2024.12): results, dtypes, shapes, signatures, the in-memory size guard."""

import inspect
import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ndpack

from tests.api.standard import EXTENSIONS, xp, xps
from tests.helpers import assert_eq


@pytest.mark.parametrize("module, name", EXTENSIONS)
def test_signatures_are_the_standards(module, name):
    ours = inspect.signature(getattr(getattr(ndpack, module), name)).parameters
    ref = inspect.signature(getattr(getattr(xp, module), name)).parameters
    assert [(p.name, p.kind) for p in ours.values()] == \
        [(p.name, p.kind) for p in ref.values()], name


def _nd(x):
    a = np.asarray(x)
    return ndpack.asarray(a, chunks=tuple(max(1, (s + 1) // 2) for s in a.shape))


def _close(got, want, rtol=1e-6):
    """Metadata, then values to `rtol` of the result's scale."""
    scale = max(1.0, float(np.max(np.abs(np.asarray(want)), initial=0.0)))
    assert_eq(got, want, rtol=rtol, atol=rtol * scale)


_FLOATS = {"min_value": -100.0, "max_value": 100.0, "allow_nan": False,
           "allow_infinity": False}


@st.composite
def _matrices(draw, square=False, min_dims=2):
    dtype = draw(xps.floating_dtypes())
    m = draw(st.integers(1, 5))
    n = m if square else draw(st.integers(1, 5))
    batch = draw(st.lists(st.integers(1, 3), max_size=min_dims - 1 if min_dims > 2 else 1))
    return draw(xps.arrays(dtype=dtype, shape=tuple(batch) + (m, n), elements=_FLOATS))


@given(x=_matrices(), data=st.data())
def test_streamed_norms_and_diagonals(x, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    ord_ = data.draw(st.sampled_from([2, 1, math.inf, -math.inf, 0, 3]))
    keepdims = data.draw(st.booleans())
    if ord_ in (-math.inf,) and x.size == 0:
        return
    rtol = 1e-4 if "32" in str(x.dtype) else 1e-9
    _close(ndpack.linalg.vector_norm(_nd(x), axis=axis, keepdims=keepdims, ord=ord_),
           xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord_), rtol)
    for mord in ("fro", 1, -1, math.inf, -math.inf, 2, -2, "nuc"):
        _close(ndpack.linalg.matrix_norm(_nd(x), ord=mord, keepdims=keepdims),
               xp.linalg.matrix_norm(x, ord=mord, keepdims=keepdims), rtol)
    offset = data.draw(st.integers(-3, 3))
    _close(ndpack.linalg.diagonal(_nd(x), offset=offset), xp.linalg.diagonal(x, offset=offset))
    _close(ndpack.linalg.trace(_nd(x), offset=offset), xp.linalg.trace(x, offset=offset), rtol)


@given(x=_matrices(square=True))
def test_in_memory_functions(x):
    v = np.asarray(x)
    rtol = 1e-3 if "32" in str(x.dtype) else 1e-8
    assume(np.linalg.cond(v).max() < 1e4)
    _close(ndpack.linalg.det(_nd(x)), xp.linalg.det(x), rtol)
    _close(ndpack.linalg.inv(_nd(x)), xp.linalg.inv(x), rtol)
    _close(ndpack.linalg.svdvals(_nd(x)), xp.linalg.svdvals(x), rtol)
    _close(ndpack.linalg.matrix_rank(_nd(x)), xp.linalg.matrix_rank(x))
    _close(ndpack.linalg.pinv(_nd(x)), xp.linalg.pinv(x), rtol)
    _close(ndpack.linalg.matrix_power(_nd(x), 2), xp.linalg.matrix_power(x, 2), rtol)
    s, ws = ndpack.linalg.slogdet(_nd(x)), xp.linalg.slogdet(x)
    _close(s.sign, ws.sign)
    _close(s.logabsdet, ws.logabsdet, rtol)
    spd = v @ np.swapaxes(v, -1, -2) + np.eye(v.shape[-1], dtype=v.dtype) * 10
    sx = xp.asarray(spd)
    _close(ndpack.linalg.cholesky(_nd(sx)), xp.linalg.cholesky(sx), rtol)
    _close(ndpack.linalg.cholesky(_nd(sx), upper=True), xp.linalg.cholesky(sx, upper=True),
           rtol)
    _close(ndpack.linalg.eigvalsh(_nd(sx)), xp.linalg.eigvalsh(sx), rtol)
    w, _ = ndpack.linalg.eigh(_nd(sx))
    _close(w, xp.linalg.eigh(sx).eigenvalues, rtol)
    b = xp.asarray(np.ones(v.shape[:-1] + (2,), dtype=v.dtype))
    _close(ndpack.linalg.solve(_nd(x), _nd(b)), xp.linalg.solve(x, b), rtol)
    q, r = ndpack.linalg.qr(_nd(x))
    np.testing.assert_allclose(np.asarray(q[()]) @ np.asarray(r[()]), v, rtol=rtol,
                               atol=rtol * 100)
    u, sv, vh = ndpack.linalg.svd(_nd(x), full_matrices=False)
    np.testing.assert_allclose((np.asarray(u[()]) * np.asarray(sv[()])[..., None, :])
                               @ np.asarray(vh[()]), v, rtol=rtol, atol=rtol * 100)


@given(data=st.data())
def test_cross(data):
    shapes = data.draw(xps.mutually_broadcastable_shapes(2, min_dims=1, max_dims=3,
                                                          max_side=4))
    s1 = shapes.input_shapes[0][:-1] + (3,)
    s2 = shapes.input_shapes[1][:-1] + (3,)
    dtype = data.draw(xps.real_dtypes())
    assume(xp.isdtype(dtype, "numeric") and "uint" not in str(dtype))
    x1 = data.draw(xps.arrays(dtype=dtype, shape=s1, elements={"min_value": -5, "max_value": 5}))
    x2 = data.draw(xps.arrays(dtype=dtype, shape=s2, elements={"min_value": -5, "max_value": 5}))
    try:
        want = xp.linalg.cross(x1, x2)
    except (TypeError, ValueError):
        assume(False)
    _close(ndpack.linalg.cross(_nd(x1), _nd(x2)), want)


@given(data=st.data())
def test_fft_functions(data):
    dtype = data.draw(xps.floating_dtypes() | xps.complex_dtypes())
    x = data.draw(xps.arrays(dtype=dtype, shape=xps.array_shapes(min_dims=1, max_dims=3,
                                                                  min_side=1, max_side=6),
                             elements={"allow_nan": False, "allow_infinity": False,
                                       "min_value": -50, "max_value": 50}
                             if "float" in str(dtype) else None))
    rtol = 1e-3 if dtype in (xp.float32, xp.complex64) else 1e-9
    norm = data.draw(st.sampled_from(["backward", "ortho", "forward"]))
    real = "float" in str(dtype)
    # the standard's inputs: real for rfft/rfftn/ihfft, complex for the others
    for name in (("rfft", "rfftn", "ihfft") if real else
                 ("fft", "ifft", "fftn", "ifftn", "irfft", "irfftn", "hfft")):
        if name in ("irfft", "irfftn", "hfft") and x.shape[-1] < 2:
            continue                           # an output of 2 * (n - 1) = 0 points
        want = getattr(xp.fft, name)(x, norm=norm)
        if np.isinf(np.asarray(want)).any() or np.isnan(np.asarray(want)).any():
            continue
        _close(getattr(ndpack.fft, name)(_nd(x), norm=norm), want, rtol)
    _close(ndpack.fft.fftshift(_nd(x)), xp.fft.fftshift(x))
    _close(ndpack.fft.ifftshift(_nd(x), axes=0), xp.fft.ifftshift(x, axes=0))


@pytest.mark.parametrize("n", [1, 2, 7, 8])
def test_fft_frequencies(n):
    _close(ndpack.fft.fftfreq(n, d=0.5), xp.fft.fftfreq(n, d=0.5))
    _close(ndpack.fft.rfftfreq(n), xp.fft.rfftfreq(n))
    _close(ndpack.fft.fftfreq(n, dtype=ndpack.float32), xp.fft.fftfreq(n, dtype=xp.float32))


def test_guard_and_bad_input(monkeypatch):
    a = ndpack.asarray(np.eye(64))
    monkeypatch.setenv("NDPACK_LINALG_BYTES", "1000")
    with pytest.raises(ndpack.ParameterError, match="runs in memory"):
        ndpack.linalg.inv(a)
    with pytest.raises(ndpack.ParameterError, match="runs in memory"):
        ndpack.fft.fft(a)
    assert float(ndpack.linalg.vector_norm(a)[()]) == 8.0      # streamed: no guard
    monkeypatch.delenv("NDPACK_LINALG_BYTES")
    with pytest.raises(TypeError, match="floating-point"):
        ndpack.linalg.inv(ndpack.asarray(np.eye(3, dtype=np.int32)))
    with pytest.raises(ValueError, match="ord must be"):
        ndpack.linalg.matrix_norm(a, ord=3)
    with pytest.raises(ValueError, match="3 elements"):
        ndpack.linalg.cross(np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="norm must be"):
        ndpack.fft.fft(a, norm="twice")
