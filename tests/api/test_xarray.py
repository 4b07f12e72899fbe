"""xarray over ndpack arrays: a DataArray keeps an NDArray as its data, arithmetic stays
lazy (nothing is read), reductions stream (the array is never converted whole)."""

import numpy as np
import pytest

import ndpack

xr = pytest.importorskip("xarray")


@pytest.fixture
def spy(monkeypatch):
    """Counts whole-array conversions and item reads of NDArrays."""
    calls = {"__array__": 0, "__getitem__": 0}
    for name in calls:
        original = getattr(ndpack.NDArray, name)

        def wrapped(self, *args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(ndpack.NDArray, name, wrapped)
    return calls


def test_dataarray_arithmetic_is_lazy_and_reductions_stream(spy):
    x = np.arange(60.0).reshape(6, 10)
    d = xr.DataArray(ndpack.asarray(x, chunks=(2, 10)), dims=("t", "s"))
    assert isinstance(d.data, ndpack.NDArray)
    e = np.sin(d) * 2 + d
    assert isinstance(e.data, ndpack.LazyExpr)
    assert spy == {"__array__": 0, "__getitem__": 0}        # nothing read yet
    np.testing.assert_allclose(d.sum("t").values, x.sum(axis=0))
    np.testing.assert_allclose(float(d.mean()), x.mean())
    np.testing.assert_allclose(d.max("s").values, x.max(axis=1))
    assert spy["__array__"] == 0                              # never converted whole
    np.testing.assert_allclose(np.asarray(e.data[()]), np.sin(x) * 2 + x)
