"""The dask backend against NumPy: to_dask/from_dask round trips, expressions computed
as dask graphs (threads, a LocalCluster of worker processes), failures, protocols."""

import os
import pickle

import numpy as np
import pytest

import ndpack
from ndpack.engine.backends import dask as dask_backend

da = pytest.importorskip("dask.array")


class Failing:
    """A foreign operand whose region starting at row `bad` cannot be read."""

    def __init__(self, data, bad):
        self.data, self.bad = data, bad
        self.shape, self.dtype = data.shape, data.dtype

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if key and isinstance(key[0], slice) and key[0].start == self.bad:
            raise OSError(f"cannot read rows from {self.bad}")
        return self.data[key]


class Exploding:
    """An operand that fails if anything reads it."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, np.dtype(dtype)

    def __getitem__(self, key):
        raise AssertionError("operand was read")


@pytest.fixture
def ondisk(tmp_path):
    """Three on-disk operands of shape (30, 20) in 4 x 3 chunks, and their values."""
    rng = np.random.default_rng(3)
    xs = [rng.random((30, 20)) for _ in range(3)]
    arrs = [ndpack.asarray(x, urlpath=str(tmp_path / f"{n}.b2nd"), mode="w",
                           chunks=(8, 7), blocks=(4, 7)) for n, x in zip("abc", xs)]
    return arrs, xs


# ---------------------------------------------------------------------------------------
# to_dask


def test_to_dask_ondisk_blocks_are_chunks_and_graph_has_no_data(tmp_path):
    x = np.arange(200_000, dtype=np.float64).reshape(400, 500)
    a = ndpack.asarray(x, urlpath=str(tmp_path / "x.b2nd"), mode="w", chunks=(150, 200),
                       blocks=(50, 200))
    d = ndpack.to_dask(a)
    assert d.chunks == ((150, 150, 100), (200, 200, 100))
    assert d.dtype == x.dtype and d.shape == x.shape
    blob = pickle.dumps(dict(d.__dask_graph__()))
    assert len(blob) < 20_000, len(blob)                 # the path, not 1.6 MB of data
    assert np.array_equal(d.compute(scheduler="threads"), x)
    assert np.array_equal(d[149:151, ::7].compute(), x[149:151, ::7])
    assert np.array_equal(a.to_dask().sum(axis=0).compute(), x.sum(axis=0))
    # the graph runs in other processes (pickled), reading the file by path
    assert np.array_equal(d[100:300].compute(scheduler="processes", num_workers=2),
                          x[100:300])


def test_to_dask_in_memory_is_in_the_graph_and_pickles():
    x = np.arange(60, dtype=np.int32).reshape(6, 10)
    a = ndpack.asarray(x, chunks=(4, 4), blocks=(2, 2))
    d = ndpack.to_dask(a)
    assert d.chunks == ((4, 2), (4, 4, 2))
    assert np.array_equal(d.compute(), x)
    # a worker process receives it pickled (as a compressed frame)
    assert np.array_equal(d[1:].compute(scheduler="processes", num_workers=2), x[1:])
    again = pickle.loads(pickle.dumps(dask_backend._Shipped(a)))
    assert np.array_equal(again[1:5, 3], x[1:5, 3])


def test_to_dask_rejects_other_objects():
    with pytest.raises(TypeError, match="from_array"):
        ndpack.to_dask(np.zeros(3))


def test_to_dask_of_expression_is_lazy_and_correct(ondisk):
    (a, b, c), (x, y, z) = ondisk
    e = ndpack.lazyexpr("sum(a, axis=0) + b * sin(c) - mean(a)",
                        operands={"a": a, "b": b, "c": c})
    d = ndpack.to_dask(e)
    assert d.chunks == ((8, 8, 8, 6), (7, 7, 6))
    ref = x.sum(axis=0) + y * np.sin(z) - x.mean()
    assert np.allclose(d.compute(scheduler="threads"), ref, rtol=1e-12)
    lazy = ndpack.lazyexpr("a + 1", operands={"a": Exploding((4, 3), "f8")})
    assert ndpack.to_dask(lazy).shape == (4, 3)          # building reads nothing


# ---------------------------------------------------------------------------------------
# from_dask and asarray


@pytest.mark.parametrize("urlpath", [None, "out.b2nd"])
def test_from_dask_round_trip(tmp_path, urlpath):
    x = np.random.default_rng(0).random((37, 23, 5))
    d = da.from_array(x, chunks=(10, 9, 5)) * 2 - 1
    kw = {} if urlpath is None else {"urlpath": str(tmp_path / urlpath)}
    a = ndpack.from_dask(d, chunks=(16, 8, 3), blocks=(8, 4, 3), scheduler="threads", **kw)
    assert a.chunks == (16, 8, 3) and a.shape == x.shape and a.dtype == x.dtype
    assert np.array_equal(a[()], x * 2 - 1)
    if urlpath:
        assert np.array_equal(ndpack.open(str(tmp_path / urlpath))[()], x * 2 - 1)
        assert os.listdir(tmp_path) == [urlpath]          # no temporary file left
    back = ndpack.to_dask(a)
    assert np.array_equal(back.compute(), x * 2 - 1)


def test_from_dask_small_batches_keep_order(monkeypatch):
    monkeypatch.setattr(dask_backend, "_BATCH_BYTES", 1)   # one block per batch
    d = da.arange(1000, chunks=33).reshape(40, 25)
    a = ndpack.from_dask(d, chunks=(7, 6), blocks=(7, 3))
    assert np.array_equal(a[()], np.arange(1000).reshape(40, 25))


def test_from_dask_edge_shapes():
    assert ndpack.from_dask(da.zeros((0, 4), chunks=2)).shape == (0, 4)
    s = ndpack.from_dask(da.from_array(np.float32(2.5)))
    assert s.shape == () and s[()] == np.float32(2.5)


def test_asarray_of_dask_array():
    d = da.arange(300, chunks=70).reshape(20, 15).astype(np.int16)
    a = ndpack.asarray(d, chunks=(8, 15))
    assert a.dtype == np.int16 and np.array_equal(a[()], np.arange(300).reshape(20, 15))


# ---------------------------------------------------------------------------------------
# expressions computed with dask


EXPRESSIONS = [
    ("sum(a, axis=0) + b * sin(c)", lambda x, y, z: x.sum(axis=0) + y * np.sin(z)),
    ("a + b + c", lambda x, y, z: x + y + z),
    ("a - mean(a, axis=1, keepdims=True) + std(b, ddof=1)",
     lambda x, y, z: x - x.mean(axis=1, keepdims=True) + y.std(ddof=1)),
    ("sum(a - mean(a), axis=1)[:, None] * c",
     lambda x, y, z: (x - x.mean()).sum(axis=1)[:, None] * z),
    ("where(a > 0.5, argmax(b, axis=0), min(c))",
     lambda x, y, z: np.where(x > 0.5, y.argmax(axis=0), z.min())),
    ("sum(a, where=b > 0.5) + max(c, axis=0, where=a < 0.2, initial=-1.0) + a[::-1].T.T",
     lambda x, y, z: x.sum(where=y > 0.5) + z.max(axis=0, where=x < 0.2, initial=-1.0)
     + x[::-1]),
    ("count_nonzero(a > 0.5, axis=0) + any(b > 0.99)",
     lambda x, y, z: np.count_nonzero(x > 0.5, axis=0) + np.any(y > 0.99)),
]


@pytest.mark.parametrize("text,ref", EXPRESSIONS, ids=[t for t, _ in EXPRESSIONS])
def test_compute_threads_matches_numpy(ondisk, text, ref):
    (a, b, c), (x, y, z) = ondisk
    e = ndpack.lazyexpr(text, operands={"a": a, "b": b, "c": c})
    r = e.compute(scheduler="threads")
    want = ref(x, y, z)
    assert r.shape == want.shape and r.dtype == want.dtype == e.dtype
    assert np.allclose(r[()], want, rtol=1e-12, atol=1e-12)
    assert r.chunks == e.compute().chunks                 # the local engine's layout


def test_compute_to_file_and_dtype_cast(ondisk, tmp_path):
    (a, b, _), (x, y, _) = ondisk
    e = ndpack.lazyexpr("a * 100 + sum(b, axis=0)", operands={"a": a, "b": b})
    e = e.astype(np.int32)
    target = str(tmp_path / "r.b2nd")
    r = e.compute(urlpath=target, scheduler="threads", chunks=(16, 16), blocks=(4, 16))
    want = (x * 100 + y.sum(axis=0)).astype(np.int32)
    assert r.dtype == want.dtype and r.chunks == (16, 16)
    assert np.array_equal(ndpack.open(target)[()], want)
    with pytest.raises(FileExistsError):
        e.compute(urlpath=target, mode="a", scheduler="threads")


def test_evaluate_with_scheduler(ondisk):
    (a, b, c), (x, y, z) = ondisk
    want = x * 2 + np.sin(y) - z.max()
    got = ndpack.evaluate("a * 2 + sin(b) - max(c)", scheduler="threads")  # caller's names
    assert np.allclose(got, want, rtol=1e-14)
    out = np.zeros_like(x)
    assert ndpack.evaluate("a * 2 + sin(b) - max(c)", local_dict={"a": a, "b": b, "c": c},
                           out=out, scheduler="synchronous") is out
    assert np.allclose(out, want, rtol=1e-14)
    nd = ndpack.zeros(x.shape, chunks=(10, 10), blocks=(5, 10))
    ndpack.evaluate("a * 2 + sin(b) - max(c)", out=nd, scheduler="threads")
    assert np.allclose(nd[()], want, rtol=1e-14)
    with pytest.raises(ValueError, match="shape"):
        ndpack.evaluate("a + 1", out=np.zeros(3), scheduler="threads")


def test_failing_task_raises_and_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(dask_backend, "_BATCH_BYTES", 1)   # fails after chunks were written
    x = np.arange(400.0).reshape(40, 10)
    a = ndpack.asarray(x, chunks=(10, 10), blocks=(5, 10))
    e = ndpack.lazyexpr("a + f", operands={"a": a, "f": Failing(x, 30)})
    target = tmp_path / "r.b2nd"
    target.write_bytes(b"previous")
    with pytest.raises(OSError, match="rows from 30"):
        e.compute(urlpath=str(target), scheduler="threads")
    assert target.read_bytes() == b"previous"            # untouched, no partial file
    assert os.listdir(tmp_path) == ["r.b2nd"]
    with pytest.raises(OSError, match="rows from 30"):
        ndpack.from_dask(ndpack.to_dask(e), urlpath=str(tmp_path / "s.b2nd"))
    assert os.listdir(tmp_path) == ["r.b2nd"]


# ---------------------------------------------------------------------------------------
# protocols


def test_dask_from_array_and_xarray_take_ndarrays():
    x = np.arange(120.0).reshape(10, 12)
    a = ndpack.asarray(x, chunks=(4, 6), blocks=(2, 6))
    assert a.ndim == 2 and np.array_equal(np.asarray(a), x)
    assert np.array_equal((da.from_array(a) + 1).compute(), x + 1)  # 'auto' chunks
    d = da.from_array(a, chunks=a.chunks)
    assert d.chunks == ((4, 4, 2), (6, 6))
    assert np.array_equal(d[3:9:2, ::-1].compute(), x[3:9:2, ::-1])
    xr = pytest.importorskip("xarray")
    arr = xr.DataArray(a, dims=("y", "x"))
    assert float(arr.sum()) == x.sum()


# ---------------------------------------------------------------------------------------
# a cluster of worker processes


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", memory_limit="1GiB") as cluster, \
            distributed.Client(cluster) as cl:
        yield cl


def test_local_cluster_expression_with_reduction(ondisk, client, tmp_path):
    (a, b, c), (x, y, z) = ondisk
    e = ndpack.lazyexpr("sum(a, axis=0) + b * sin(c)", operands={"a": a, "b": b, "c": c})
    target = str(tmp_path / "r.b2nd")
    r = e.compute(urlpath=target, scheduler=client)
    assert np.allclose(ndpack.open(target)[()], x.sum(axis=0) + y * np.sin(z), rtol=1e-12)
    assert r.shape == x.shape
    # dask's default scheduler is the active client
    got = ndpack.evaluate("a - mean(a, axis=0) + c", scheduler="dask")
    assert np.allclose(got, x - x.mean(axis=0) + z, rtol=1e-12)
    # in-memory operands travel in the graph (as compressed frames)
    m = ndpack.asarray(y, chunks=(8, 7), blocks=(4, 7))  # noqa: F841 (named in the text)
    assert np.allclose(ndpack.lazyexpr("m * 2 + max(a)").compute(scheduler=client)[()],
                       y * 2 + x.max())


def test_local_cluster_round_trip_and_failure(ondisk, client, tmp_path):
    (a, b, c), (x, y, z) = ondisk
    d = ndpack.to_dask(a) + ndpack.to_dask(b).T.T
    out = ndpack.from_dask(d, urlpath=str(tmp_path / "s.b2nd"), scheduler=client,
                           chunks=(11, 20))
    assert np.array_equal(out[()], x + y)
    assert client.compute(ndpack.to_dask(c).sum()).result() == pytest.approx(z.sum())
    # a task failing on a worker raises on the client; the output never appears
    import sys

    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        e = ndpack.lazyexpr("a + f", operands={"a": a, "f": Failing(x, 16)})
        with pytest.raises(OSError, match="rows from 16"):
            e.compute(urlpath=str(tmp_path / "bad.b2nd"), scheduler=client)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert sorted(os.listdir(tmp_path)) == ["a.b2nd", "b.b2nd", "c.b2nd", "s.b2nd"]
