"""The array API data type functions against array_api_strict (the standard's reference
implementation, revision 2024.12) and NumPy where the standard leaves a case open."""

import itertools

import numpy as np
import pytest

import ndpack
from ndpack import dtypes

xp = pytest.importorskip("array_api_strict")
xp.set_array_api_strict_flags(api_version="2024.12")

NAMES = list(dtypes.DTYPES)
KINDS = list(dtypes.KINDS)


def strict(name):
    return getattr(xp, name)


def test_names_are_the_standards():
    assert NAMES == [n for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                 "uint32", "uint64", "float32", "float64", "complex64",
                                 "complex128")]
    for name in NAMES:
        t = getattr(ndpack, name)
        assert np.dtype(t).name == name
        assert np.zeros(2, dtype=name).dtype == t          # compares equal to array dtypes
    assert ndpack.e == np.e and ndpack.pi == np.pi and ndpack.newaxis is None
    assert np.isnan(ndpack.nan) and ndpack.inf == np.inf


@pytest.mark.parametrize("a, b", list(itertools.product(NAMES, NAMES)))
def test_result_type_pairs(a, b):
    try:
        want = np.dtype(str(xp.result_type(strict(a), strict(b))).split(".")[-1])
    except TypeError:                          # undefined by the standard: NumPy 2's rule
        want = np.result_type(np.dtype(a), np.dtype(b))
    assert ndpack.result_type(getattr(ndpack, a), getattr(ndpack, b)) == want
    x = np.zeros(3, dtype=a)                   # arrays as well as dtypes
    assert ndpack.result_type(x, np.dtype(b)) == want


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scalar", [True, 7, -3, 2.5, 1 + 2j])
def test_result_type_with_python_scalars(name, scalar):
    try:
        got_strict = xp.result_type(strict(name), scalar)
        want = np.dtype(str(got_strict).split(".")[-1])
    except (TypeError, OverflowError):
        if name.startswith("uint") and isinstance(scalar, int) and scalar < 0 \
                and not isinstance(scalar, bool):
            with pytest.raises(OverflowError, match="out of bounds"):
                ndpack.result_type(getattr(ndpack, name), scalar)
            return
        want = np.result_type(np.dtype(name), scalar)   # NumPy 2: weak Python scalars
    assert ndpack.result_type(getattr(ndpack, name), scalar) == want


def test_result_type_rules():
    assert ndpack.result_type(ndpack.int8, 127) == np.int8              # no value-based casting
    with pytest.raises(OverflowError, match="128 out of bounds for int8"):
        ndpack.result_type(ndpack.int8, 128)
    assert ndpack.result_type(ndpack.float32, 1e300) == np.float32
    assert ndpack.result_type(ndpack.int8, ndpack.uint8, 3) == np.int16
    with pytest.raises(ValueError, match="at least one array or dtype"):
        ndpack.result_type(1, 2.0)
    with pytest.raises(TypeError, match="must be a dtype or an array"):
        ndpack.result_type(ndpack.int8, "int16")
    lazy = ndpack.asarray(np.zeros(4, np.float32))
    assert ndpack.result_type(lazy, 2.0) == np.float32                  # NDArrays too


@pytest.mark.parametrize("a, b", list(itertools.product(NAMES, NAMES)))
def test_can_cast(a, b):
    assert ndpack.can_cast(getattr(ndpack, a), getattr(ndpack, b)) == \
        xp.can_cast(strict(a), strict(b))


@pytest.mark.parametrize("name", NAMES)
def test_isdtype(name):
    for kind in KINDS + [("integral", "real floating"), ("bool", "complex floating")]:
        assert ndpack.isdtype(getattr(ndpack, name), kind) == xp.isdtype(strict(name), kind)
    for other in NAMES:
        assert ndpack.isdtype(getattr(ndpack, name), getattr(ndpack, other)) == (name == other)
    with pytest.raises(ValueError, match="kind must be"):
        ndpack.isdtype(getattr(ndpack, name), "floating")
    with pytest.raises(TypeError, match="dtype must be a dtype"):
        ndpack.isdtype(name, "numeric")


@pytest.mark.parametrize("name", ["float32", "float64", "complex64", "complex128"])
def test_finfo(name):
    got, want = ndpack.finfo(getattr(ndpack, name)), xp.finfo(strict(name))
    for field in ("bits", "eps", "max", "min", "smallest_normal"):
        assert float(getattr(got, field)) == float(getattr(want, field)), field
    assert str(got.dtype) == str(want.dtype).split(".")[-1]
    assert ndpack.finfo(np.ones(2, name)).bits == want.bits           # an array works too


@pytest.mark.parametrize("name", [n for n in NAMES if "int" in n])
def test_iinfo(name):
    got, want = ndpack.iinfo(getattr(ndpack, name)), xp.iinfo(strict(name))
    assert (got.bits, got.min, got.max) == (want.bits, want.min, want.max)
    assert got.dtype == np.dtype(name)


def test_info_limits_bad_input():
    with pytest.raises(ValueError, match="floating"):
        ndpack.finfo(ndpack.int8)
    with pytest.raises(ValueError, match="integer"):
        ndpack.iinfo(ndpack.float32)
    with pytest.raises(TypeError, match="type must be"):
        ndpack.iinfo("int8x")


def test_namespace_info_matches_the_reference():
    info, ref = ndpack.__array_namespace_info__(), xp.__array_namespace_info__()
    assert set(info.capabilities()) == set(ref.capabilities())
    assert info.capabilities()["max dimensions"] == 16
    assert info.default_device() == "cpu" and info.devices() == ["cpu"]
    assert {k: np.dtype(v).name for k, v in info.default_dtypes().items()} == \
        {k: str(v).split(".")[-1] for k, v in ref.default_dtypes().items()}
    for kind in [None] + KINDS + [("bool", "integral")]:
        assert sorted(info.dtypes(kind=kind)) == sorted(ref.dtypes(kind=kind)), kind
    assert info.default_dtypes(device="cpu") == info.default_dtypes()
    with pytest.raises(ValueError, match="device must be 'cpu'"):
        info.dtypes(device="gpu")
