"""Blocked linear algebra against NumPy: tensordot, matmul (batched, broadcast), vecdot,
outer; in string expressions and with @; foreign operands and outputs; bounded tiles."""

import h5py
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.engine import linalg


def nd(x, chunks):
    return ndpack.asarray(x, chunks=tuple(max(1, min(c, s)) for c, s in zip(chunks, x.shape)))


@given(m=st.integers(1, 25), k=st.integers(1, 25), n=st.integers(1, 25),
       c=st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9)),
       dtype=st.sampled_from(["f8", "f4", "c16", "i8", "i4"]))
@settings(deadline=None, max_examples=40)
def test_matmul_2d_hypothesis(m, k, n, c, dtype):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    x = (rng.normal(size=(m, k)) * 10).astype(dtype)
    y = (rng.normal(size=(k, n)) * 10).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * x[::-1]
    a, b = nd(x, (c[0], c[1])), nd(y, (c[1], c[2]))
    want = x @ y
    got = ndpack.matmul(a, b)
    assert got.dtype == want.dtype
    # tile sums add in another order than BLAS: the error scale is |x| @ |y|
    scale = float((np.abs(x).astype("f8") @ np.abs(y).astype("f8")).max(initial=0))
    eps = 1e-5 if dtype == "f4" else 1e-12
    np.testing.assert_allclose(got[()], want, rtol=eps, atol=eps * scale)


@pytest.mark.parametrize("s1,s2,axes", [
    ((6, 7, 8), (7, 8, 5), ((1, 2), (0, 1))), ((6, 7, 8), (6, 7, 9), ((0, 1), (0, 1))),
    ((5, 6, 7), (7, 6, 5), ((2, 0), (0, 2))), ((4,), (5,), 0), ((3, 4), (4,), 1),
    ((5, 4, 3), (4, 3, 5), 2), ((8, 3), (3, 8), ([0, 1], [1, 0])),
])
def test_tensordot(s1, s2, axes):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=s1), rng.normal(size=s2)
    a = nd(x, tuple(max(1, s // 2) for s in s1))
    b = nd(y, tuple(max(1, s // 3) for s in s2))
    np.testing.assert_allclose(ndpack.tensordot(a, b, axes=axes)[()],
                               np.tensordot(x, y, axes=axes), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("s1,s2", [((3, 30, 40), (40, 20)), ((2, 1, 5, 6), (3, 6, 4)),
                                   ((6,), (6, 4)), ((3, 6), (6,)), ((4, 5, 6), (4, 6, 2))])
def test_matmul_batched_and_vectors(s1, s2):
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=s1), rng.normal(size=s2)
    got = ndpack.matmul(nd(x, (2,) * len(s1)), nd(y, (3,) * len(s2)))
    np.testing.assert_allclose(got[()], np.matmul(x, y), rtol=1e-12)


def test_vecdot_outer_and_operators():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(20, 9)), rng.normal(size=(20, 9))
    a, b = nd(x, (6, 4)), nd(y, (5, 9))
    np.testing.assert_allclose(ndpack.vecdot(a, b, axis=0), (x * y).sum(0), rtol=1e-12)
    np.testing.assert_allclose(ndpack.outer(a[:, 0], b[0])[()], np.outer(x[:, 0], y[0]))
    np.testing.assert_allclose((a.T @ b)[()], x.T @ y, rtol=1e-12)
    np.testing.assert_allclose(np.matmul(a.T, b)[()], x.T @ y, rtol=1e-12)
    e = ndpack.lazyexpr("matmul(a.T, b) * 2 + tensordot(a, b, axes=((0, 1), (0, 1)))",
                        operands={"a": a, "b": b})
    assert e.shape == (9, 9)
    np.testing.assert_allclose(e[()], (x.T @ y) * 2 + np.tensordot(x, y, 2), rtol=1e-12)
    np.testing.assert_allclose(e.compute()[()], (x.T @ y) * 2 + np.tensordot(x, y, 2),
                               rtol=1e-12)
    s = ndpack.lazyexpr("sum(matmul(a.T, sin(b)), axis=0)", operands={"a": a, "b": b})
    np.testing.assert_allclose(s[()], (x.T @ np.sin(y)).sum(0), rtol=1e-12)


def test_foreign_operands_and_outputs(tmp_path):
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(40, 30)), rng.normal(size=(30, 20))
    with h5py.File(tmp_path / "f.h5", "w") as f:
        hx = f.create_dataset("x", data=x, chunks=(10, 30))
        zy = zarr.create_array(tmp_path / "y.zarr", data=y, chunks=(7, 20))
        out = f.create_dataset("o", shape=(40, 20), dtype="f8")
        ndpack.evaluate("matmul(hx, zy)", local_dict={"hx": hx, "zy": zy}, out=out)
        np.testing.assert_allclose(out[()], x @ y, rtol=1e-12)
        r = ndpack.tensordot(hx, zy, axes=([1], [0]), urlpath=tmp_path / "r.b2nd")
        np.testing.assert_allclose(ndpack.open(tmp_path / "r.b2nd")[()], x @ y, rtol=1e-12)
        assert r.urlpath is not None


def test_tiles_stay_bounded(monkeypatch):
    """No operand read is bigger than a tile along the contracted axes."""
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(64, 256)), rng.normal(size=(256, 48))
    monkeypatch.setattr(linalg, "TILE_BYTES", 64 * 8 * 8)
    reads = []

    class Rec:
        def __init__(self, data):
            self.data, self.shape, self.dtype, self.chunks = data, data.shape, data.dtype, (16, 16)

        def __getitem__(self, key):
            reads.append(self.data[key].size)
            return self.data[key]
    got = ndpack.matmul(Rec(x), Rec(y), chunks=(16, 16))
    np.testing.assert_allclose(got[()], x @ y, rtol=1e-12)
    assert max(reads) <= 16 * 64


def test_errors():
    a, b = ndpack.asarray(np.ones((3, 4))), ndpack.asarray(np.ones((5, 6)))
    with pytest.raises(ValueError, match="columns"):
        ndpack.matmul(a, b)
    with pytest.raises(ValueError, match="columns"):
        ndpack.lazyexpr("matmul(a, b)", operands={"a": a, "b": b})
    with pytest.raises(ValueError, match="axis"):
        ndpack.tensordot(a, b, axes=((0,), (5,)))
    with pytest.raises(ValueError, match="keyword 'foo'|not allowed"):
        ndpack.lazyexpr("tensordot(a, a, foo=1)", operands={"a": a})
    with pytest.raises(ValueError, match="outer"):
        ndpack.outer(a, a)
