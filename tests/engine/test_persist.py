"""Saved expressions: carriers written and read by ndpack and python-blosc2, relative
paths, nested carriers, missing and in-memory operands, and no code ever run."""

import os
import shutil

import blosc2
import numpy as np
import pytest

import ndpack
from ndpack.storage.constructors import uninit


@pytest.fixture
def disk(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 30)), rng.normal(size=(40, 30)) + 3
    a = ndpack.asarray(x, chunks=(16, 30), urlpath=tmp_path / "a.b2nd", mode="w")
    os.mkdir(tmp_path / "sub")
    b = ndpack.asarray(y, chunks=(10, 10), urlpath=tmp_path / "sub" / "b.b2nd", mode="w")
    return tmp_path, x, y, a, b


@pytest.mark.parametrize("build,oracle", [
    (lambda a, b: ndpack.lazyexpr("sin(a) * 2 + b ** 2", operands={"a": a, "b": b}),
     lambda x, y: np.sin(x) * 2 + y ** 2),
    (lambda a, b: (a + 1) * b - 3.5, lambda x, y: (x + 1) * y - 3.5),
    (lambda a, b: ndpack.lazyexpr("a - mean(a, axis=1, keepdims=True) + sum(b, axis=0)",
                                  operands={"a": a, "b": b}),
     lambda x, y: x - x.mean(axis=1, keepdims=True) + y.sum(axis=0)),
    (lambda a, b: ndpack.lazyexpr("where(a > 0, a, -b)[::-2, 3:] + b.T.T[1::2, 3:]",
                                  operands={"a": a, "b": b}),
     lambda x, y: np.where(x > 0, x, -y)[::-2, 3:] + y[1::2, 3:]),
    (lambda a, b: np.clip(a + 0, -1, 1) + (a > b), lambda x, y: np.clip(x, -1, 1) + (x > y)),
])
def test_round_trip(disk, build, oracle):
    tmp, x, y, a, b = disk
    e = build(a, b)
    e.save(tmp / "e.b2nd")
    back = ndpack.open(tmp / "e.b2nd")
    assert isinstance(back, ndpack.LazyExpr)
    assert back.shape == e.shape and back.dtype == e.dtype
    np.testing.assert_allclose(back[()], oracle(x, y), rtol=1e-13)
    np.testing.assert_allclose(back.compute()[()], oracle(x, y), rtol=1e-13)


def test_relative_paths_survive_a_move(disk):
    tmp, x, y, a, b = disk
    ndpack.lazyexpr("a + b", operands={"a": a, "b": b}).save(tmp / "e.b2nd")
    moved = tmp.parent / (tmp.name + "_moved")
    shutil.copytree(tmp, moved)
    shutil.rmtree(tmp)
    np.testing.assert_allclose(ndpack.open(moved / "e.b2nd")[()], x + y)


def test_python_blosc2_reads_ours_and_we_read_its(disk):
    tmp, x, y, a, b = disk
    ndpack.lazyexpr("sin(a) + b * 2", operands={"a": a, "b": b}).save(tmp / "ours.b2nd")
    theirs = blosc2.open(str(tmp / "ours.b2nd"), deserialize="full")
    np.testing.assert_allclose(theirs[()], np.sin(x) + y * 2, rtol=1e-13)
    ba = blosc2.open(str(tmp / "a.b2nd"))
    bb = blosc2.open(str(tmp / "sub" / "b.b2nd"))
    blosc2.lazyexpr("cos(a) - b / 3", operands={"a": ba, "b": bb}).save(str(tmp / "theirs.b2nd"))
    mine = ndpack.open(tmp / "theirs.b2nd")
    np.testing.assert_allclose(mine[()], np.cos(x) - y / 3, rtol=1e-13, atol=1e-14)


def test_nested_carriers(disk):
    tmp, x, y, a, b = disk
    ndpack.lazyexpr("a * b", operands={"a": a, "b": b}).save(tmp / "inner.b2nd")
    inner = ndpack.open(tmp / "inner.b2nd")
    os.mkdir(tmp / "outer")
    ndpack.lazyexpr("sqrt(abs(i)) + 1", operands={"i": inner}).save(tmp / "outer" / "o.b2nd")
    # its operands (a, sub/b) lie outside outer/: read only when the caller allows it
    with pytest.raises(PermissionError, match="operand_paths"):
        ndpack.open(tmp / "outer" / "o.b2nd")
    np.testing.assert_allclose(ndpack.open(tmp / "outer" / "o.b2nd", operand_paths=[tmp])[()],
                               np.sqrt(np.abs(x * y)) + 1, rtol=1e-13)


def test_in_memory_operands_are_listed(disk):
    tmp, x, y, a, b = disk
    mem = ndpack.asarray(x)
    with pytest.raises(ndpack.ParameterError, match=r"in memory: m, n"):
        ndpack.lazyexpr("a + m * n", operands={"a": a, "m": mem, "n": np.ones(30)}).save(
            tmp / "e.b2nd")
    assert not (tmp / "e.b2nd").exists()


def test_missing_operands_are_all_listed(disk):
    tmp, x, y, a, b = disk
    ndpack.lazyexpr("a + b", operands={"a": a, "b": b}).save(tmp / "e.b2nd")
    ndpack.remove_urlpath(tmp / "a.b2nd")
    ndpack.remove_urlpath(tmp / "sub" / "b.b2nd")
    with pytest.raises(ndpack.MissingOperandsError) as info:
        ndpack.open(tmp / "e.b2nd")
    assert set(info.value.missing) == {"a", "b"}
    assert "a.b2nd" in str(info.value) and "b.b2nd" in str(info.value)


def _carrier(path, meta, vlmeta):
    c = uninit((3,), urlpath=path, mode="w", meta=meta)
    for k, v in vlmeta.items():
        c.vlmeta[k] = v
    c.schunk.close()


def test_opening_never_runs_code(tmp_path):
    flag = tmp_path / "pwned"
    text = f"__import__('os').system('touch {flag}')"
    _carrier(tmp_path / "evil.b2nd", {"b2o": {"kind": "lazyexpr", "version": 1}},
             {"b2o": {"kind": "lazyexpr", "version": 1, "expression": text, "operands": {}}})
    with pytest.raises(ValueError, match="not allowed"):
        ndpack.open(tmp_path / "evil.b2nd")
    assert not flag.exists()


def test_legacy_layout_and_user_functions(disk):
    tmp, x, y, a, b = disk
    _carrier(tmp / "old.b2nd", {"LazyArray": 0},
             {"_LazyArray": {"expression": "o0 * 2 + o1", "operands": {"o0": "a.b2nd",
                                                                       "o1": "sub/b.b2nd"}}})
    np.testing.assert_allclose(ndpack.open(tmp / "old.b2nd")[()], x * 2 + y)
    _carrier(tmp / "udf.b2nd", {"LazyArray": 1},
             {"_LazyArray": {"UDF": "def f(inputs, out, offset): pass", "operands": {},
                             "name": "f"}})
    with pytest.raises(PermissionError, match="trust_code=True"):
        ndpack.open(tmp / "udf.b2nd")


def test_malformed_carrier(tmp_path):
    _carrier(tmp_path / "bad.b2nd", {"b2o": {"kind": "table", "version": 1}}, {})
    with pytest.raises(ndpack.FormatError, match="table"):
        ndpack.open(tmp_path / "bad.b2nd")
    _carrier(tmp_path / "bad2.b2nd", {"b2o": {"kind": "lazyexpr", "version": 1}},
             {"b2o": {"kind": "lazyexpr", "version": 1, "expression": 3, "operands": {}}})
    with pytest.raises(ndpack.FormatError, match="malformed"):
        ndpack.open(tmp_path / "bad2.b2nd")


def test_dynamic_shapes_in_memory_and_after_reopening(tmp_path):
    x, y = np.arange(12.0).reshape(3, 4), np.ones((3, 4))
    a = ndpack.asarray(x, chunks=(2, 2), urlpath=tmp_path / "a.b2nd", mode="w")
    b = ndpack.asarray(y, chunks=(2, 2), urlpath=tmp_path / "b.b2nd", mode="w")
    e = ndpack.lazyexpr("sum(a, axis=0) + b * 2", operands={"a": a, "b": b})
    e.save(tmp_path / "e.b2nd")
    w = ndpack.lazyexpr("v + 1", operands={"v": ndpack.lazyexpr("e[1:, ::2]",
                                                               operands={"e": e})})
    assert e.shape == (3, 4) and w.shape == (2, 2)          # w: a view of e, in a string
    a.resize((5, 6))
    a[3:, :] = 7
    a[:, 4:] = -1
    b.resize((5, 6))
    b[:, 4:] = 3
    x2, y2 = a[()], b[()]
    want = x2.sum(axis=0) + y2 * 2
    assert e.shape == (5, 6)                    # no stale shape in memory
    np.testing.assert_allclose(e[()], want)
    np.testing.assert_allclose(w[()], want[1:, ::2] + 1)
    np.testing.assert_allclose(e.compute()[()], want)
    back = ndpack.open(tmp_path / "e.b2nd")    # the carrier still says (3, 4)
    assert back.shape == (5, 6)
    np.testing.assert_allclose(back[2:, 1], want[2:, 1])
    np.testing.assert_allclose(ndpack.sum(back, axis=1), want.sum(axis=1))


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_save_open_resize_cycles(tmp_path, ndim):
    rng = np.random.default_rng(ndim)
    shape = (6, 5, 4, 3)[:ndim]
    chunks = tuple(max(1, s // 2) for s in shape)
    a = ndpack.asarray(rng.normal(size=shape), chunks=chunks, urlpath=tmp_path / "a.b2nd",
                       mode="w")
    b = ndpack.asarray(rng.normal(size=shape), chunks=chunks, urlpath=tmp_path / "b.b2nd",
                       mode="w")
    text = "a * 2 + mean(b) - sum(b, axis=0)"
    ndpack.lazyexpr(text, operands={"a": a, "b": b}).save(tmp_path / "e.b2nd")
    for step, new in enumerate([tuple(s + 2 for s in shape),
                                (shape[0] + 3,) + tuple(max(1, s - 1) for s in shape[1:])]):
        for arr in (a, b):
            old = arr.shape
            arr.resize(new)
            grown = tuple(slice(0, min(o, n)) for o, n in zip(old, new))
            fresh = rng.normal(size=new)
            fresh[grown] = arr[grown]
            arr[...] = fresh
        x, y = a[()], b[()]
        want = x * 2 + y.mean() - y.sum(axis=0)
        e = ndpack.open(tmp_path / "e.b2nd")
        assert e.shape == new
        np.testing.assert_allclose(e[()], want, rtol=1e-12)
        np.testing.assert_allclose(e.compute()[()], want, rtol=1e-12)
        key = tuple(slice(1, None, 2) for _ in new)
        np.testing.assert_allclose(e[key], want[key], rtol=1e-12)
        if step == 0 and ndim == 2:
            theirs = blosc2.open(str(tmp_path / "e.b2nd"), deserialize="full")
            np.testing.assert_allclose(theirs[()], want, rtol=1e-12)


def test_open_recognizes_stores(tmp_path):
    with ndpack.TreeStore(tmp_path / "t.b2z", mode="w") as ts:
        ts["/g/a"] = np.arange(5)
    with ndpack.DictStore(tmp_path / "s.b2d", mode="w") as ds:
        ds["/x"] = np.arange(3.0)
    t = ndpack.open(tmp_path / "t.b2z")
    assert isinstance(t, ndpack.TreeStore) and t["/g/a"][()].tolist() == list(range(5))
    assert isinstance(ndpack.open(tmp_path / "s.b2d"), ndpack.DictStore)
    theirs = blosc2.open(str(tmp_path / "t.b2z"))
    assert type(theirs).__name__ == "TreeStore"
