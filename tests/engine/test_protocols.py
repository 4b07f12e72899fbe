"""NumPy protocols on lazy expressions: ufuncs and functions build trees or stream,
anything else is computed and handed to NumPy."""

import numpy as np
import pytest

import ndpack


@pytest.fixture
def arrays():
    x = np.random.default_rng(0).normal(size=(30, 20))
    a = ndpack.asarray(x, chunks=(10, 20), blocks=(5, 20))
    return x, a


def test_elementwise_functions_are_lazy(arrays):
    x, a = arrays
    e = a + 1
    for got, want in [(np.where(e > 1, e, -e), np.where(x + 1 > 1, x + 1, -(x + 1))),
                      (np.clip(e, 0.5, 1.5), np.clip(x + 1, 0.5, 1.5)),
                      (np.sin(e) * np.hypot(e, 2), np.sin(x + 1) * np.hypot(x + 1, 2))]:
        assert type(got).__name__ == "LazyExpr"
        np.testing.assert_allclose(got[()], want, rtol=1e-14)


@pytest.mark.parametrize("func,kwargs", [(np.sum, {}), (np.mean, {"axis": 0}),
                                         (np.std, {"axis": 1, "ddof": 1}), (np.max, {"axis": 1}),
                                         (np.argmin, {}), (np.any, {"axis": 0}),
                                         (np.count_nonzero, {"axis": 1})])
def test_reductions_stream(func, kwargs, arrays, monkeypatch):
    x, a = arrays
    e = a * 3 - 1
    from ndpack.engine import statistical as reductions
    called = []
    name = {"amax": "max"}.get(func.__name__, func.__name__)
    real = getattr(reductions, name)
    monkeypatch.setattr(reductions, name, lambda *ar, **kw: called.append(1) or real(*ar, **kw))
    np.testing.assert_allclose(func(e, **kwargs), func(x * 3 - 1, **kwargs), rtol=1e-12)
    assert called


def test_cumulative(arrays):
    x, a = arrays
    e = a * 2
    np.testing.assert_array_equal(np.cumsum(e, axis=1)[()], np.cumsum(x * 2, axis=1))
    np.testing.assert_array_equal(np.cumsum(e), np.cumsum(x * 2))          # flattened
    if hasattr(np, "cumulative_sum"):
        np.testing.assert_array_equal(np.cumulative_sum(e, axis=0)[()],
                                      np.cumulative_sum(x * 2, axis=0))


def test_other_functions_see_computed_arrays(arrays):
    x, a = arrays
    e = a - 1
    np.testing.assert_array_equal(np.concatenate([e, e]), np.concatenate([x - 1, x - 1]))
    assert np.allclose(np.linalg.norm(e), np.linalg.norm(x - 1))
    np.testing.assert_array_equal(np.transpose(e), (x - 1).T)


def test_ufunc_out_computes_into_it(arrays):
    x, a = arrays
    out = np.empty((30, 20))
    assert np.add(a * 2, 1, out=out) is out
    np.testing.assert_array_equal(out, x * 2 + 1)
    target = ndpack.zeros((30, 20), chunks=(10, 20), blocks=(5, 20))
    np.sin(a + 0, out=target)
    np.testing.assert_allclose(target[()], np.sin(x), rtol=1e-15, atol=1e-16)   # C-core sin


def test_ufunc_with_unsupported_arguments_is_refused(arrays):
    x, a = arrays
    with pytest.raises(TypeError):
        np.add(a + 0, 1, where=x > 0)
    with pytest.raises(TypeError):
        np.add.reduce(a + 0)
