"""NDArray files exchanged with python-blosc2 (the oracle), in both directions."""

import blosc2
import numpy as np
import pytest

from ndpack.storage import NDArray, asarray, full, nans, ndarray_from_cframe, zeros
from ndpack.storage import open as nd_open

from tests.helpers import assert_eq

DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16",
          "S5", "U3", "M8[ns]", [("a", "<i4"), ("b", "<f8"), ("c", "S2")]]
SHAPES = [((13,), (5,), (3,)),
          ((7, 9), (3, 4), (2, 3)),
          ((5, 6, 7), (2, 4, 3), (2, 3, 2)),
          ((3, 5, 4, 6), (2, 2, 3, 4), (1, 2, 2, 3))]


def _data(shape, dtype):
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    rng = np.random.default_rng(n)
    if dt.names:
        x = np.zeros(n, dt)
        x["a"] = np.arange(n)
        x["b"] = rng.standard_normal(n)
        x["c"] = [b"ab", b"c", b""] * (n // 3) + [b"z"] * (n % 3)
        return x.reshape(shape)
    if dt.kind == "M":
        return (np.datetime64("2020-01-01", "ns") + rng.integers(0, 10**15, n)).reshape(shape)
    if dt.kind in "SU":
        return np.array(["x", "yz", "", "abc"] * n, dtype=dt)[:n].reshape(shape)
    if dt.kind == "b":
        return (np.arange(n) % 3 == 0).reshape(shape)
    if dt.kind in "fc":
        return (rng.standard_normal(n) * 100).astype(dt).reshape(shape)
    return rng.integers(0, 100, n).astype(dt).reshape(shape)


def _keys(ndim):
    yield (slice(None),) * ndim
    yield (slice(1, None, 2),) + (slice(None, None, -1),) * (ndim - 1)
    yield (0,) + (slice(1, 4),) * (ndim - 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", SHAPES, ids=lambda t: f"{len(t[0])}d")
def test_ndpack_file_in_python_blosc2(tmp_path, dtype, layout):
    shape, chunks, blocks = layout
    ref = _data(shape, dtype)
    path = str(tmp_path / "a.b2nd")
    a = asarray(ref, chunks=chunks, blocks=blocks, urlpath=path, mode="w")
    a.vlmeta["who"] = "ndpack"
    b = blosc2.open(path, mode="a")
    assert (b.shape, b.chunks, b.blocks, b.dtype) == (shape, chunks, blocks, ref.dtype)
    assert b.vlmeta["who"] == "ndpack"
    for key in _keys(len(shape)):
        assert_eq(b[key], np.asarray(ref[key], dtype=ref.dtype), bitwise=True)
    # python-blosc2 writes into our file and resizes it; we read the result
    region = (slice(1, 3),) * len(shape)
    ref[region] = ref[(slice(0, 2),) * len(shape)]
    b[region] = np.ascontiguousarray(ref[region])
    new = tuple(s + 2 for s in shape[:-1]) + (shape[-1] - 1,)
    b.resize(new)
    grown = np.zeros(new, ref.dtype)
    common = tuple(slice(0, min(x, y)) for x, y in zip(shape, new))
    grown[common] = ref[common]
    del b
    c = nd_open(path, mode="r")
    assert isinstance(c, NDArray)
    assert_eq(c[...], grown, bitwise=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", SHAPES, ids=lambda t: f"{len(t[0])}d")
def test_python_blosc2_file_in_ndpack(tmp_path, dtype, layout):
    shape, chunks, blocks = layout
    ref = _data(shape, dtype)
    path = str(tmp_path / "b.b2nd")
    blosc2.asarray(ref, chunks=chunks, blocks=blocks, urlpath=path, mode="w")
    a = nd_open(path, mode="a")
    assert (a.shape, a.chunks, a.blocks, a.dtype) == (shape, chunks, blocks, ref.dtype)
    for key in _keys(len(shape)):
        assert_eq(a[key], np.asarray(ref[key], dtype=ref.dtype), bitwise=True)
    region = (slice(2, None, 2),) * len(shape)
    ref[region] = ref[(0,) * len(shape)]
    a[region] = ref[(0,) * len(shape)]
    new = tuple(s + 3 for s in shape)
    a.resize(new)
    grown = np.zeros(new, ref.dtype)
    grown[tuple(slice(0, s) for s in shape)] = ref
    assert_eq(a[...], grown, bitwise=True)
    b = blosc2.open(path, mode="r")
    assert b.shape == new
    assert_eq(b[...], grown, bitwise=True)
    # in-memory frames both ways
    assert_eq(blosc2.ndarray_from_cframe(a.to_cframe())[...], grown, bitwise=True)
    assert_eq(ndarray_from_cframe(b.to_cframe())[...], grown, bitwise=True)


def test_special_arrays_both_ways(tmp_path):
    kw = {"chunks": (4, 3), "blocks": (2, 2)}
    ours = [zeros((9, 7), "f8", **kw), full((9, 7), 1.25, **kw), nans((9, 7), "f4", **kw)]
    theirs = [blosc2.zeros((9, 7), dtype="f8", **kw), blosc2.full((9, 7), 1.25, **kw),
              blosc2.nans((9, 7), dtype="f4", **kw)]
    for x, y in zip(ours, theirs):
        assert_eq(blosc2.ndarray_from_cframe(x.to_cframe())[...], y[...], bitwise=True)
        assert_eq(ndarray_from_cframe(y.to_cframe())[...], x[...], bitwise=True)
        assert x.cbytes <= y.cbytes + 8 * x.schunk.nchunks


def test_zero_d_and_zero_size_both_ways(tmp_path):
    for ref in (np.array(2.5), np.zeros((3, 0), "i4")):
        a = asarray(ref, urlpath=tmp_path / "z.b2nd", mode="w")
        del a
        assert_eq(blosc2.open(str(tmp_path / "z.b2nd"))[...], ref, bitwise=True)
        blosc2.asarray(ref, urlpath=str(tmp_path / "y.b2nd"), mode="w")
        assert_eq(nd_open(tmp_path / "y.b2nd")[...], ref, bitwise=True)


def test_setitem_and_zero_chunks_read_by_python_blosc2(tmp_path):
    path = str(tmp_path / "s.b2nd")
    a = zeros((10, 10), "i8", chunks=(4, 4), blocks=(2, 4), urlpath=path)
    a[3:7, 2:9] = np.arange(28).reshape(4, 7)
    a[3:7, 2:9] = 0
    a[9, 9] = -5
    ref = np.zeros((10, 10), "i8")
    ref[9, 9] = -5
    b = blosc2.open(path)
    assert_eq(b[...], ref, bitwise=True)
    assert sum(1 for i in b.iterchunks_info() if i.special == blosc2.SpecialValue.ZERO) == 8
