"""float64 exp/log/expm1/log1p/arctan/arctan2/tanh/sinh/cosh/tan of the C core against
NumPy (glibc here): the ulp bounds of ndpack.vmath.ULP over the whole range, special
values identical, every ISA the CPU runs giving the scalar reference's bits, the
engine's choice of implementation, and expressions through lazyexpr."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ndpack
from ndpack import _core, vmath

UNARY = list(_core.VMATH_UNARY)
TINY = 5e-324


def _ulps(a, b):
    ai, bi = a.view(np.int64), b.view(np.int64)
    ai = np.where(ai < 0, np.int64(-2**63) - ai, ai)
    bi = np.where(bi < 0, np.int64(-2**63) - bi, bi)
    return np.abs(ai - bi)


def _random_bits(n, seed):
    return np.random.default_rng(seed).integers(0, 2**64, n, dtype=np.uint64,
                                                endpoint=False).view(np.float64)


def _around(points, spread=64):
    """Each point and its `spread` neighbours either side, bit by bit."""
    p = np.asarray(points, np.float64)
    steps = np.arange(-spread, spread + 1, dtype=np.int64)
    bits = p.view(np.int64)[:, None] + steps[None, :]
    out = bits.view(np.float64).ravel()
    return out[np.isfinite(out) | np.isnan(out)]


LN2 = np.log(2.0)
EDGES = {
    "exp": [0.0, 1e-300, 708.0, 709.782712893384, 709.79, -708.3964185322641, -708.0,
            -745.1332191019411, -745.2, LN2 / 2, -LN2 / 2, 3 * LN2 / 2, 1.0, -1.0],
    "log": [1.0, 2.0, 0.5, np.sqrt(2.0), np.sqrt(0.5), 2.2250738585072014e-308,
            1.7976931348623157e308, 1e-310, 1 + 1e-8, 1 - 1e-8, 3.0, 10.0],
    "expm1": [0.0, 2**-54, -2**-54, LN2 / 2, -LN2 / 2, -40.0, -38.0, 708.0, 709.78,
              1e-8, -1e-8, 0.5, 1.0, -37.5],
    "log1p": [-1 + 2**-52, -0.5, 2**-54, -2**-54, np.sqrt(2) - 1, np.sqrt(0.5) - 1,
              1e300, 1.7976931348623157e308, 1e-8, -1e-8, 1.0, 2.0**53],
    "arctan": [np.tan(np.pi / 8), 1.0, 1 / np.tan(np.pi / 8), 1e300, 1e-300, 2**-27,
               0.5, 2.0, 1e16],
    "tanh": [2**-27, 22.0, 0.5, 1e-8, 0.55, 19.0, 1.0],
    "sinh": [2**-27, 708.0, 709.0, 710.4, 22.0, 0.5, 1e-8, 1.0],
    "cosh": [2**-26, 708.0, 709.0, 710.4, 22.0, 0.5, 1e-8, 1.0],
    "tan": list(np.arange(1, 200) * (np.pi / 2)) + [1e5, 99999.0, 2**-27, 0.78, 0.7854,
                                                   np.pi / 4],
}
RANGES = {"exp": (-745, 710), "log": (1e-300, 1e300), "expm1": (-50, 710),
          "log1p": (-1, 1e6), "arctan": (-1e4, 1e4), "tanh": (-25, 25),
          "sinh": (-712, 712), "cosh": (-712, 712), "tan": (-1e5, 1e5)}


def _inputs(name, seed=0):
    rng = np.random.default_rng(seed)
    lo, hi = RANGES[name]
    pts = np.asarray(EDGES[name], np.float64)
    parts = [_random_bits(200_000, seed), rng.uniform(lo, hi, 200_000),
             rng.uniform(-3, 3, 100_000), _around(np.concatenate([pts, -pts]))]
    if name in ("log", "log1p"):
        parts.append(np.exp(rng.uniform(-740, 709, 100_000)))
        parts.append(1 + rng.uniform(-1e-6, 1e-6, 50_000))
    parts.append(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, 1e-310,
                           -1e-310, 1.7976931348623157e308, -1.7976931348623157e308]))
    return np.concatenate(parts)


def _check(got, want, bound, *inputs):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    worst = int(_ulps(got[ok], want[ok]).max(initial=0))
    assert worst <= bound, worst
    exact = np.isinf(want) | (want == 0)                 # inf and signed zeros as NumPy
    if inputs:                                           # NaNs made from numbers: NumPy's
        exact |= np.isnan(want) & ~np.any([np.isnan(v) for v in inputs], axis=0)
    np.testing.assert_array_equal(got[exact].view(np.int64), want[exact].view(np.int64))
    return worst


@pytest.mark.parametrize("name", UNARY)
def test_unary_within_the_bound_everywhere(name):
    x = _inputs(name)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    got = getattr(vmath, name)(x)
    _check(got, want, vmath.ULP[name], x)


@pytest.mark.parametrize("isa", _core.vmath_isas())
@pytest.mark.parametrize("name", UNARY + ["arctan2", "power"])
def test_every_isa_gives_the_references_bits(name, isa):
    binary = name in _core.VMATH_BINARY
    x = _inputs("exp" if binary else name, seed=3)
    if name == "power":
        x = np.concatenate([x, np.random.default_rng(5).uniform(0, 10, 50_000)])
    args = (x, np.random.default_rng(4).permutation(x) / 7) if binary else (x,)
    ref = vmath.reference(name, *args)
    for n in list(range(38)) + [len(x)]:                 # every tail length
        got = vmath.reference(name, *[a[:n] for a in args], isa=isa)
        np.testing.assert_array_equal(got.view(np.int64), ref[:n].view(np.int64))
    if binary:                                           # one b for every a
        for b in (1.2, -0.7, 3.0, np.inf, np.nan):
            ref_s = vmath.reference(name, x, np.full_like(x, b))
            for n in (0, 1, 3, 4, 7, 8, 9, 37, len(x)):
                got = vmath.reference(name, x[:n], float(b), isa=isa)
                np.testing.assert_array_equal(got.view(np.int64), ref_s[:n].view(np.int64))
    buf = args[0].copy()                                 # in place: out is x
    if binary:
        _core.vmath_binary(_core.VMATH_BINARY.index(name), buf, args[1], buf,
                           _core.VMATH_ISAS.index(isa))
    else:
        _core.vmath_unary(UNARY.index(name), buf, buf, _core.VMATH_ISAS.index(isa))
    np.testing.assert_array_equal(buf.view(np.int64), ref.view(np.int64))


def test_missing_isa_is_an_error():
    missing = [i for i in _core.VMATH_ISAS if i not in _core.vmath_isas()]
    if not missing:
        pytest.skip("this CPU runs every ISA")
    with pytest.raises(ValueError, match="not available"):
        vmath.reference("exp", np.ones(4), isa=missing[0])


SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, 1.0, -1.0, 0.5,
                     1e-310, 1e300, -1e300, 2.0**1020, 2.0**1021, 1.7976931348623157e308,
                     -1.7976931348623157e308, np.pi, -3.0])


def test_arctan2_quadrants_signed_zeros_and_infinities():
    y, x = np.meshgrid(SPECIALS, SPECIALS, indexing="ij")
    y, x = y.ravel(), x.ravel()
    want = np.arctan2(y, x)
    got = vmath.arctan2(y, x)
    _check(got, want, vmath.ULP["arctan2"], y, x)
    routed = ~(np.isfinite(x) & np.isfinite(y) & (x != 0) & (y != 0))
    np.testing.assert_array_equal(got[routed].view(np.int64), want[routed].view(np.int64))


def test_arctan2_over_the_whole_range():
    rng = np.random.default_rng(7)
    y, x = _random_bits(300_000, 8), _random_bits(300_000, 9)
    a = rng.uniform(-10, 10, 200_000)
    t = np.tan(np.pi / 8)
    ratios = _around(np.array([t, 1.0, 1 / t, 1e-300, 1e300]), 200)
    ys = np.concatenate([y, a, ratios, -ratios, np.full(2 * ratios.size, 3.0)])
    xs = np.concatenate([x, rng.permutation(a), np.ones(ratios.size), -np.ones(ratios.size),
                         3.0 / ratios, -3.0 / ratios])
    with np.errstate(all="ignore"):
        want = np.arctan2(ys, xs)
    _check(vmath.arctan2(ys, xs), want, vmath.ULP["arctan2"], ys, xs)


def test_power_over_the_whole_range():
    rng = np.random.default_rng(12)
    x, y = _random_bits(300_000, 13), _random_bits(300_000, 14)
    a = rng.uniform(0, 10, 200_000)
    b = rng.uniform(-6, 6, 200_000)
    near1 = 1 + rng.uniform(-1e-3, 1e-3, 100_000)
    wide = np.exp(rng.uniform(-700, 700, 100_000))
    edge = rng.uniform(-70, 70, 100_000)                 # |y log x| about the kernel's 64
    xs = np.concatenate([x, np.abs(x), a, near1, wide, wide])
    ys = np.concatenate([y, y / 1e300, b, rng.uniform(-6e4, 6e4, 100_000),
                         rng.uniform(-1, 1, 100_000), edge / np.log(wide)])
    neg = -rng.uniform(0, 10, 20_000)                    # x < 0: integer y or NaN
    ints = rng.integers(-30, 30, 20_000).astype(np.float64)
    xs = np.concatenate([xs, neg, neg, _around([1.0, 2.0**-1022, 2.0**1023], 100)])
    ys = np.concatenate([ys, ints, ints + 0.5, np.full(603, 1.5)])
    with np.errstate(all="ignore"):
        want = np.power(xs, ys)
    _check(vmath.power(xs, ys), want, vmath.ULP["power"], xs, ys)


def test_power_special_values():
    y, x = np.meshgrid(SPECIALS, SPECIALS, indexing="ij")
    with np.errstate(all="ignore"):
        want = np.power(x.ravel(), y.ravel())
    with np.errstate(all="ignore"):
        got = vmath.power(x.ravel(), y.ravel())
    _check(got, want, vmath.ULP["power"], x.ravel(), y.ravel())
    for b in SPECIALS:                                   # one exponent for all
        with np.errstate(all="ignore"):
            want = np.power(SPECIALS, b)
            got = vmath.power(SPECIALS, float(b))
        _check(got, want, vmath.ULP["power"], SPECIALS)


def test_power_exponents_numpy_computes_exactly():
    x = np.random.default_rng(15).uniform(0, 100, 1001)
    for b in (2.0, 0.5, 1.0, 0.0, -1.0, 2, 3, np.float32(1.5)):
        np.testing.assert_array_equal(vmath.power(x, b), np.power(x, b))
    got = vmath.power(x, 1.2)
    assert _ulps(got, np.power(x, 1.2)).max() <= vmath.ULP["power"]
    np.testing.assert_array_equal(vmath.power(x[::2], 1.2), np.power(x[::2], 1.2))
    np.testing.assert_array_equal(vmath.power(3.0, x), np.power(3.0, x))


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(UNARY),
       hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=9),
                  elements=st.floats(allow_nan=True, allow_infinity=True,
                                     allow_subnormal=True)))
def test_hypothesis_arrays(name, x):
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    got = getattr(vmath, name)(x)
    assert got.shape == want.shape
    _check(got.ravel(), want.ravel(), vmath.ULP[name], x.ravel())
    out = x.copy()
    assert getattr(vmath, name)(out, out=out) is out               # in place
    np.testing.assert_array_equal(out.view(np.int64), got.view(np.int64))


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 40), elements=st.floats()),
       st.randoms(use_true_random=False))
def test_hypothesis_arctan2(y, r):
    x = np.array(r.sample(list(y), len(y))) if len(y) else y.copy()
    with np.errstate(all="ignore"):
        want = np.arctan2(y, x)
    _check(vmath.arctan2(y, x), want, vmath.ULP["arctan2"])


@pytest.mark.parametrize("name", UNARY)
def test_other_inputs_go_to_numpy(name):
    x = np.linspace(0.1, 3, 40)
    ref = getattr(np, name)
    fn = getattr(vmath, name)
    np.testing.assert_array_equal(fn(x[::2]), ref(x[::2]))                 # strided
    np.testing.assert_array_equal(fn(x.astype(np.float32)), ref(x.astype(np.float32)))
    np.testing.assert_array_equal(fn(np.arange(1, 5)), ref(np.arange(1, 5)))  # ints
    assert fn(0.5) == ref(0.5) and type(fn(np.float64(0.5))) is type(ref(np.float64(0.5)))
    assert fn(np.array(0.5)) == ref(np.array(0.5))                        # 0-d
    out = np.empty(40)
    assert fn(x, out=out) is out
    with pytest.raises(ValueError, match="items"):
        _core.vmath_unary(UNARY.index(name), x, np.empty(3))


def test_arctan2_broadcasts_through_numpy():
    a, b = np.linspace(-2, 2, 12).reshape(3, 4), np.linspace(1, 3, 4)
    np.testing.assert_array_equal(vmath.arctan2(a, b), np.arctan2(a, b))
    got = vmath.arctan2(a, 2.0)                          # one float for all: ours
    assert _ulps(got, np.arctan2(a, 2.0)).max() <= vmath.ULP["arctan2"]
    np.testing.assert_array_equal(vmath.arctan2(2.0, a), np.arctan2(2.0, a))
    np.testing.assert_array_equal(vmath.arctan2(a.T, a.T), np.arctan2(a.T, a.T))
    out = np.empty((3, 4))
    assert vmath.arctan2(a, b, out=out) is out
    with pytest.raises(ValueError, match="items"):
        _core.vmath_binary(0, np.ones(3), np.ones(4), np.ones(3))


@pytest.mark.parametrize("choice", ["ours", "numpy"])
def test_implementation_override(monkeypatch, choice):
    monkeypatch.setenv("NDPACK_VMATH", choice)
    for name in vmath.NAMES:
        assert vmath.implementation(name) == choice
        ufunc = getattr(np, name)
        fast = vmath.fast_ufunc(ufunc, np.float64)
        assert (fast is ufunc) == (choice == "numpy")
        assert vmath.fast_ufunc(ufunc, np.float32) is ufunc
    assert vmath.fast_ufunc(np.sqrt, np.float64) is np.sqrt


def test_auto_choice_is_measured_once(monkeypatch):
    monkeypatch.setenv("NDPACK_VMATH", "auto")
    monkeypatch.setattr(vmath, "_CHOICE", {})
    calls = []
    real = vmath._measure
    monkeypatch.setattr(vmath, "_measure", lambda n: calls.append(n) or real(n))
    first = vmath.implementation("exp")
    assert vmath.implementation("exp") == first in ("ours", "numpy")
    assert calls == ["exp"]
    cfg = ndpack.show_config(file=open("/dev/null", "w"))["vmath"]
    assert cfg["exp"] == first and cfg["isa"] == vmath.isa()


EXPR = "exp(a) + log(b) * arctan2(a, b) - tanh(a) + log1p(b) / cosh(a) + b**1.2"


def _numpy_expr(a, b):
    return np.exp(a) + np.log(b) * np.arctan2(a, b) - np.tanh(a) + np.log1p(b) / np.cosh(a) \
        + b**1.2


@pytest.mark.parametrize("choice", ["ours", "numpy"])
def test_expressions_through_the_engine(monkeypatch, choice):
    monkeypatch.setenv("NDPACK_VMATH", choice)
    rng = np.random.default_rng(11)
    x, y = rng.uniform(-5, 5, (300, 200)), rng.uniform(0.01, 30, (300, 200))
    a = ndpack.asarray(x, chunks=(100, 200), blocks=(20, 200))
    b = ndpack.asarray(y, chunks=(100, 200), blocks=(20, 200))
    want = _numpy_expr(x, y)
    for got in (ndpack.lazyexpr(EXPR, {"a": a, "b": b})[()],
                ndpack.lazyexpr(EXPR, {"a": a, "b": b}).compute()[()]):
        if choice == "numpy":                # NumPy's steps: NumPy's bits
            np.testing.assert_array_equal(got, want)
        else:                                # each step within its bound: a few ulp
            np.testing.assert_allclose(got, want, rtol=4e-15, atol=1e-14)
    # the single functions: within their bound of NumPy's through the engine
    for name in ("exp", "log", "arctan"):
        got = ndpack.lazyexpr(f"{name}(b)", {"b": b})[()]
        assert _ulps(got.ravel(), getattr(np, name)(y).ravel()).max() <= vmath.ULP[name]
    got = ndpack.lazyexpr("arctan2(a, b)", {"a": a, "b": b}).compute()[()]
    assert _ulps(got.ravel(), np.arctan2(x, y).ravel()).max() <= vmath.ULP["arctan2"]


def test_isa_follows_the_filters_choice_and_ndpack_isa():
    import subprocess
    import sys
    before = _core.isa()
    try:
        _core.set_isa("scalar")
        assert vmath.isa() == "scalar"                   # lowered filters: the reference
    finally:
        _core.set_isa(before)
    code = "from ndpack import vmath; print(vmath.isa())"
    for env, want in (("scalar", "scalar"), ("sse2", "scalar"),
                      ("avx2", "avx2" if "avx2" in _core.vmath_isas() else "scalar")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**__import__("os").environ, "NDPACK_ISA": env}, check=True)
        assert out.stdout.strip() == want, (env, out.stdout, out.stderr)
