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


@pytest.fixture
def small_memory():
    old = ndpack.memory_limit()
    ndpack.set_memory_limit("16M")
    yield
    ndpack.set_memory_limit(old)


def test_reductions_of_a_dataarray_read_parts_only(small_memory, monkeypatch):
    """Every read xarray's reductions cause is a tile of at most half the array (the
    array is 32 MB, the memory limit 16 MiB), and nothing converts the array whole."""
    x = np.arange(4_000_000.0).reshape(2000, 2000)
    d = xr.DataArray(ndpack.asarray(x, chunks=(100, 2000)), dims=("t", "s"))
    reads = []
    getitem, array = ndpack.NDArray.__getitem__, ndpack.NDArray.__array__

    def spy_getitem(self, key):
        out = getitem(self, key)
        reads.append(np.size(out))
        return out

    def spy_array(self, *args, **kwargs):
        reads.append(self.size * 10)                 # a whole conversion always fails
        return array(self, *args, **kwargs)
    monkeypatch.setattr(ndpack.NDArray, "__getitem__", spy_getitem)
    monkeypatch.setattr(ndpack.NDArray, "__array__", spy_array)
    checks = [(lambda: d.sum("t").values, x.sum(axis=0)),
              (lambda: float(d.mean()), x.mean()),
              (lambda: d.max("s").values, x.max(axis=1)),
              (lambda: d.std("t").values, x.std(axis=0)),
              (lambda: (np.sin(d) * 2 + d).mean("s").values, (np.sin(x) * 2 + x).mean(axis=1))]
    for run, want in checks:
        reads.clear()
        np.testing.assert_allclose(run(), want, rtol=1e-12)
        assert reads and max(reads) <= x.size // 2, max(reads)
