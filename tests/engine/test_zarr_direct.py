"""Zarr as a home: chunks encoded on our threads with the array's own codec.

zarr itself is the oracle: what ndpack writes into a zarr array, zarr reads back; a
chunk of fill values is not stored (zarr's default); arrays ndpack cannot encode go
through zarr's own ``__setitem__``, in whole chunks.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.engine.run import chunkout

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")


def _compressors(fmt, kind):
    if kind == "default":
        return {}
    if kind == "none":
        return {"compressors": None}
    if fmt == 2:
        return {"compressors": {"blosc": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=2),
                                "gzip": numcodecs.GZip(level=3),
                                "zstd": numcodecs.Zstd(level=2),
                                "zlib": numcodecs.Zlib(level=1)}[kind]}
    return {"compressors": {"blosc": zarr.codecs.BloscCodec(cname="zstd", clevel=3,
                                                            shuffle="bitshuffle"),
                            "gzip": zarr.codecs.GzipCodec(level=3),
                            "zstd": zarr.codecs.ZstdCodec(level=5, checksum=True)}[kind]}


@settings(deadline=None, max_examples=30)
@given(data=st.data())
def test_zarr_writes_read_back_by_zarr(tmp_path_factory, data):
    fmt = data.draw(st.sampled_from([2, 3]))
    kind = data.draw(st.sampled_from(["default", "none", "blosc", "gzip", "zstd"] +
                                     (["zlib"] if fmt == 2 else [])))
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 13), min_size=ndim, max_size=ndim)))
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    dtype = data.draw(st.sampled_from(["f8", "f4", "i2", "u8", "c8"]))
    fill = data.draw(st.sampled_from([0, 3]))
    x = (np.random.default_rng(ndim).standard_normal(shape) * 9).astype(dtype)
    x.reshape(-1)[: x.size // 2] = fill                 # chunks of fill values too
    path = str(tmp_path_factory.mktemp("z") / "a.zarr")
    z = zarr.create_array(path, shape=shape, chunks=chunks, dtype=dtype, zarr_format=fmt,
                          fill_value=fill, **_compressors(fmt, kind))
    before = chunkout.WRITES["zarr"]
    ndpack.evaluate("x", local_dict={"x": ndpack.asarray(x)}, out=z)
    assert chunkout.WRITES["zarr"] - before == np.prod([-(-n // c) for n, c in
                                                        zip(shape, chunks)])
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], x)


def test_chunks_of_fill_values_are_not_stored(tmp_path):
    z = zarr.create_array(str(tmp_path / "a.zarr"), shape=(20, 10), chunks=(10, 10),
                          dtype="f8", fill_value=np.nan)
    z[...] = 1.0                                          # both chunks stored
    x = np.ones((20, 10))
    x[10:] = np.nan                                       # the second: all fill
    ndpack.evaluate("x + 0", local_dict={"x": x}, out=z)
    files = sorted(os.path.relpath(os.path.join(r, f), tmp_path / "a.zarr")
                   for r, _, fs in os.walk(tmp_path / "a.zarr" / "c") for f in fs)
    assert files == ["c/0/0"]                             # the NaN chunk was removed
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a.zarr"))[...], x)


def test_writers_only_where_they_apply(tmp_path):
    base = str(tmp_path / "a.zarr")
    assert chunkout.chunk_writer(zarr.create_array(
        base, shape=(4,), chunks=(2,), dtype="f8", zarr_format=2,
        filters=[numcodecs.Delta("f8")])) is None                     # a filter
    assert chunkout.chunk_writer(zarr.create_array(
        base, shape=(4, 4), chunks=(2, 2), dtype="f8", overwrite=True,
        shards=(4, 4))) is None                                       # sharded
    assert chunkout.chunk_writer(zarr.create_array(
        base, shape=(4,), chunks=(2,), dtype="f8", overwrite=True,
        compressors=zarr.codecs.BloscCodec(cname="lz4", typesize=4))) is None
    z = zarr.create_array(base, shape=(4,), chunks=(2,), dtype="f8", overwrite=True)
    assert chunkout.chunk_writer(z) is not None
    assert chunkout.chunk_writer(zarr.open_array(base, mode="r")) is None   # read-only


@pytest.mark.parametrize("fmt", [2, 3])
def test_any_store_through_its_own_api(tmp_path, fmt):
    """A memory store and a zip store (which cannot delete) get the chunk writer;
    chunks go through the store's ``set``: zarr reads back what it holds."""
    from zarr.storage import MemoryStore, ZipStore
    x = np.arange(200.0).reshape(20, 10)
    x[7:14] = np.nan                                          # one row of fill chunks
    for store in (MemoryStore(), ZipStore(tmp_path / f"z{fmt}.zip", mode="w")):
        z = zarr.create_array(store, name="g/a", shape=x.shape, chunks=(7, 4),
                              dtype="f8", fill_value=np.nan, zarr_format=fmt)
        assert chunkout.chunk_writer(z) is not None
        before = chunkout.WRITES["zarr"]
        ndpack.evaluate("x + 0", local_dict={"x": x}, out=z)
        assert chunkout.WRITES["zarr"] - before == 9
        keys = zarr.core.sync.sync(_keys(store))
        chunk_keys = [k for k in keys if "/a/" in k and "zarr.json" not in k
                      and not k.rsplit("/", 1)[1].startswith(".")]
        # the memory store drops the fill chunks, the zip store keeps them
        assert len(chunk_keys) == (9 if isinstance(store, ZipStore) else 6)
        np.testing.assert_array_equal(zarr.open_array(store, path="g/a")[...], x)
        store.close()


async def _keys(store):
    return [k async for k in store.list()]


def test_sharded_arrays_both_ways_through_zarr(tmp_path):
    """Sharded arrays get no direct reader or writer: zarr's own path, right values."""
    from ndpack.engine.run import foreign
    x = np.arange(24 * 20, dtype="f8").reshape(24, 20)
    src = zarr.create_array(str(tmp_path / "s.zarr"), shape=x.shape, chunks=(4, 5),
                            shards=(8, 10), dtype="f8")
    src[...] = x
    out = zarr.create_array(str(tmp_path / "o.zarr"), shape=x.shape, chunks=(4, 5),
                            shards=(12, 20), dtype="f8")
    assert foreign.reader(src) is None and chunkout.chunk_writer(out) is None
    ndpack.evaluate("s * 2 + 1", local_dict={"s": src}, out=out)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "o.zarr"))[...], x * 2 + 1)
