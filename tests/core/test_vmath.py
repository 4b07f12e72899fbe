"""float64 sin/cos of the C core against the C library (through NumPy)."""

import numpy as np
import pytest

import ndpack
from ndpack import _core, vmath


def _ulps(a, b):
    ai, bi = a.view(np.int64), b.view(np.int64)
    ai = np.where(ai < 0, np.int64(-2**63) - ai, ai)
    bi = np.where(bi < 0, np.int64(-2**63) - bi, bi)
    return np.abs(ai - bi)


@pytest.mark.parametrize("lo,hi,bound", [(-1, 1, 1), (0, 10, 1), (-1e3, 1e3, 1),
                                         (-1e5, 1e5, 2), (1e5, 1e9, 0), (-1e-7, 1e-7, 0)])
@pytest.mark.parametrize("fn,ref", [(vmath.sin, np.sin), (vmath.cos, np.cos)])
def test_within_ulps_of_the_c_library(fn, ref, lo, hi, bound):
    x = np.random.default_rng(int(hi)).uniform(lo, hi, 300_000)
    assert _ulps(fn(x), ref(x)).max() <= bound


@pytest.mark.parametrize("fn,ref", [(vmath.sin, np.sin), (vmath.cos, np.cos)])
def test_special_values_and_cancellation(fn, ref):
    k = np.arange(1, 30000, dtype=np.float64) * (np.pi / 2)
    near = np.concatenate([k, np.nextafter(k, 0), np.nextafter(k, np.inf)])
    assert _ulps(fn(near), ref(near)).max() <= 1
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 5e-324, -1e-20])
    with np.errstate(invalid="ignore"):
        want = ref(sp)
    got = fn(sp)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))       # sin(-0.0) is -0.0


def test_scalar_reference_gives_the_kernels_bits():
    before = _core.isa()                  # NDPACK_ISA may have chosen another path
    try:
        _core.set_isa("avx2")
    except ValueError:
        pytest.skip("no AVX2 here: the scalar reference is the only path")
    x = np.random.default_rng(5).uniform(-2e5, 2e5, 100_003)       # odd length: tails
    try:
        fast = vmath.sin(x), vmath.cos(x)
        _core.set_isa("scalar")
        ref = vmath.sin(x), vmath.cos(x)
    finally:
        _core.set_isa(before)
    assert np.array_equal(fast[0], ref[0]) and np.array_equal(fast[1], ref[1])


def test_other_inputs_go_to_numpy():
    x = np.linspace(0, 6, 40)
    np.testing.assert_array_equal(vmath.sin(x[::2]), np.sin(x[::2]))          # strided
    np.testing.assert_array_equal(vmath.cos(x.astype(np.float32)), np.cos(x.astype(np.float32)))
    np.testing.assert_array_equal(vmath.sin(np.arange(5)), np.sin(np.arange(5)))  # ints
    assert vmath.cos(0.5) == np.cos(0.5)
    out = np.empty(40)
    assert vmath.sin(x, out=out) is out
    with pytest.raises(ValueError, match="items"):
        _core.vsincos(x, np.empty(3), False)


def test_expressions_use_the_kernels():
    x = np.random.default_rng(1).uniform(-50, 50, (300, 200))
    a = ndpack.asarray(x, chunks=(100, 200), blocks=(20, 200))
    got = ndpack.lazyexpr("sin(a) * cos(a) + 1", {"a": a})[()]
    want = np.sin(x) * np.cos(x) + 1
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    f32 = ndpack.asarray(x.astype(np.float32))
    np.testing.assert_array_equal(ndpack.lazyexpr("sin(a)", {"a": f32})[()],
                                  np.sin(x.astype(np.float32)))


def test_in_place_with_special_lanes():
    x = np.array([0.5, np.nan, 1e300, 2.0, -0.0, 1e-30, 3.0, np.inf, 4.0])
    with np.errstate(invalid="ignore"):
        want = np.sin(x)
    vmath.sin(x, out=x)
    finite = np.isfinite(want)
    assert _ulps(x[finite], want[finite]).max() <= 1
    np.testing.assert_array_equal(np.isnan(x), np.isnan(want))
    np.testing.assert_array_equal(x[[2, 4, 5]], want[[2, 4, 5]])
