"""User functions (lazyudf) against NumPy: chunk calls, slicing, expressions,
reductions, outputs of any kind, saving with the source and opening with trust."""


import blosc2
import h5py
import numpy as np
import pytest

import ndpack


def poly(inputs, output, offset):
    x, y = inputs
    output[...] = x ** 2 - 3 * y + offset[0]


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 21)), rng.normal(size=(50, 21))
    a = ndpack.asarray(x, chunks=(16, 21), blocks=(4, 21))
    return x, y, a


def expected(x, y, chunks0):
    rows = (np.arange(x.shape[0]) // chunks0) * chunks0
    return x ** 2 - 3 * y + rows[:, None]


def test_chunk_calls_and_slices(data):
    x, y, a = data
    calls = []

    def f(inputs, output, offset):
        calls.append((offset, output.shape))
        poly(inputs, output, offset)
    u = ndpack.lazyudf(f, (a, y), np.float64)
    assert u.shape == (50, 21) and u.chunks == (16, 21)
    want = expected(x, y, 16)
    np.testing.assert_allclose(u[()], want)
    assert sorted(calls) == [((r, 0), (min(16, 50 - r), 21)) for r in (0, 16, 32, 48)]
    calls.clear()
    np.testing.assert_allclose(u[20:30, ::-3], want[20:30, ::-3])
    assert [c[0] for c in calls] == [(16, 0)]            # only the chunk touched
    np.testing.assert_allclose(u[-1], want[-1])
    np.testing.assert_allclose(u[5, None, 2:4], want[5, None, 2:4])


def test_compose_with_expressions_reductions_and_outputs(data, tmp_path):
    x, y, a = data
    u = ndpack.lazyudf(poly, (a, y), np.float64)
    want = expected(x, y, 16)
    np.testing.assert_allclose((np.sin(u) + a)[()], np.sin(want) + x, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(ndpack.lazyexpr("sum(u, axis=0) + u", operands={"u": u})[()],
                               want.sum(axis=0) + want, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(ndpack.mean(u, axis=1), want.mean(axis=1), rtol=1e-12)
    r = u.compute(urlpath=tmp_path / "u.b2nd")
    np.testing.assert_allclose(ndpack.open(tmp_path / "u.b2nd")[()], want)
    assert r.chunks == (16, 21)
    np.testing.assert_allclose(u.compute(chunks=(7, 5))[()], want)
    with h5py.File(tmp_path / "o.h5", "w") as f:
        ds = f.create_dataset("o", shape=u.shape, dtype="f8", chunks=(10, 21))
        ndpack.evaluate("u * 2", local_dict={"u": u}, out=ds)
        np.testing.assert_allclose(ds[()], want * 2)


def test_save_needs_source_and_disk_inputs(data, tmp_path):
    x, y, a = data
    u = ndpack.lazyudf(poly, (a, y), np.float64)
    with pytest.raises(ndpack.ParameterError, match="input 0, input 1"):
        u.save(tmp_path / "u.b2nd")
    ad = ndpack.asarray(x, chunks=(16, 21), urlpath=tmp_path / "a.b2nd", mode="w")
    yd = ndpack.asarray(y, chunks=(16, 21), urlpath=tmp_path / "y.b2nd", mode="w")
    u = ndpack.lazyudf(poly, (ad, yd), np.float64)
    u.save(tmp_path / "u.b2nd")
    with pytest.raises(PermissionError, match="trust_code=True"):
        ndpack.open(tmp_path / "u.b2nd")
    back = ndpack.open(tmp_path / "u.b2nd", trust_code=True)
    assert isinstance(back, ndpack.LazyUDF) and back.chunks == (16, 21)
    np.testing.assert_allclose(back[()], expected(x, y, 16))
    theirs = blosc2.open(str(tmp_path / "u.b2nd"), deserialize="full")
    np.testing.assert_allclose(theirs[()], expected(x, y, 16))


def test_python_blosc2_udf_opens_with_trust(tmp_path):
    x = np.arange(40.0).reshape(8, 5)
    src = ("def scale(inputs, output, offset):\n"
           "    output[...] = inputs[0] * 10\n")
    ns = {}
    exec(compile(src, str(tmp_path / "scale.py"), "exec"), ns)    # test's own source
    (tmp_path / "scale.py").write_text(src)
    import linecache
    linecache.cache[str(tmp_path / "scale.py")] = (len(src), None, src.splitlines(True),
                                                  str(tmp_path / "scale.py"))
    ba = blosc2.asarray(x, urlpath=str(tmp_path / "ba.b2nd"), mode="w")
    blosc2.lazyudf(ns["scale"], (ba,), np.float64).save(str(tmp_path / "bu.b2nd"))
    back = ndpack.open(tmp_path / "bu.b2nd", trust_code=True)
    np.testing.assert_allclose(back[()], x * 10)


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        ndpack.lazyudf(3, (np.ones(3),), np.float64)
    with pytest.raises(ndpack.ParameterError, match="shape="):
        ndpack.lazyudf(poly, (1.0,), np.float64)
    with pytest.raises(ndpack.ParameterError, match="unknown"):
        ndpack.lazyudf(poly, (np.ones(3),), np.float64, foo=1)
