"""HDF5 as a first-class home: Blosc2-filtered chunks read and written by our core.

The oracle is h5py itself (with hdf5plugin's Blosc2 filter): what ndpack writes
directly, h5py reads back; what hdf5plugin writes, ndpack's direct reader reads the
same as h5py.  Outputs of other layouts go through the general path, in whole chunks.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.engine.run import chunkout, foreign, h5read

h5py = pytest.importorskip("h5py")
hdf5plugin = pytest.importorskip("hdf5plugin")

CODECS = [("lz4", 5, hdf5plugin.Blosc2.SHUFFLE), ("zstd", 1, hdf5plugin.Blosc2.BITSHUFFLE),
          ("blosclz", 9, hdf5plugin.Blosc2.NOFILTER), ("lz4hc", 3, hdf5plugin.Blosc2.SHUFFLE)]


def _blosc2(cname="lz4", clevel=5, filters=1):
    return dict(hdf5plugin.Blosc2(cname=cname, clevel=clevel, filters=filters))


@pytest.mark.parametrize("cname, clevel, shuffle", CODECS)
@pytest.mark.parametrize("shape, chunks", [((50, 70), (16, 30)), ((9, 10, 11), (4, 5, 6)),
                                           ((1000,), (256,))])
def test_blosc2_datasets_read_directly(tmp_path, cname, clevel, shuffle, shape, chunks):
    x = np.random.default_rng(1).standard_normal(shape).astype("f4")
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=chunks, **_blosc2(cname, clevel, shuffle))
    with h5py.File(tmp_path / "a.h5", "r") as f:
        ds = f["x"]
        read = foreign.reader(ds)
        assert read is not None
        before = foreign.READS["h5py"]
        key = tuple(slice(1, n - 2) for n in shape)
        np.testing.assert_array_equal(foreign.read_new(read, ds, key, 2), x[key])
        assert foreign.READS["h5py"] > before and foreign.READS["h5py fallback"] == 0
        np.testing.assert_array_equal(ndpack.evaluate("ds * 2", local_dict={"ds": ds}),
                                      x * 2)


@settings(deadline=None, max_examples=25)
@given(data=st.data())
def test_blosc2_reads_and_writes_match_h5py(tmp_path_factory, data):
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 17), min_size=ndim, max_size=ndim)))
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    dtype = data.draw(st.sampled_from(["f8", "i4", "u2", "i1", "c16", "?"]))
    cname, clevel, shuffle = data.draw(st.sampled_from(CODECS))
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 50).astype(dtype)
    path = tmp_path_factory.mktemp("h5") / "a.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=x, chunks=chunks, **_blosc2(cname, clevel, shuffle))
        out = f.create_dataset("y", shape=shape, dtype=dtype, chunks=chunks,
                               **_blosc2(cname, clevel, shuffle))
        before = chunkout.WRITES["h5py"]
        ndpack.evaluate("x", local_dict={"x": ndpack.asarray(x)}, out=out)
        assert chunkout.WRITES["h5py"] > before            # written directly
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["y"][()], x)       # h5py + hdf5plugin read ours
        key = tuple(slice(data.draw(st.integers(0, n - 1)), n) for n in shape)
        read = foreign.reader(f["x"])
        if dtype == "?":                   # h5py's booleans are an enum: h5py reads them
            assert read is None
            return
        np.testing.assert_array_equal(foreign.read_new(read, f["x"], key, 2), x[key])


@pytest.mark.parametrize("kw", [{}, {"compression": "gzip", "compression_opts": 1},
                                _blosc2("zstd", 1, 1), _blosc2("lz4", 5, 2)])
def test_evaluate_into_hdf5_writes_whole_chunks_directly(tmp_path, kw):
    rng = np.random.default_rng(2)
    xa, xb = rng.standard_normal((130, 90)), rng.standard_normal((130, 90))
    a = ndpack.asarray(xa, chunks=(7, 90))             # not the output's chunking
    b = ndpack.asarray(xb, chunks=(130, 11))
    with h5py.File(tmp_path / "o.h5", "w") as f:
        out = f.create_dataset("o", shape=(130, 90), dtype="f4", chunks=(50, 40),
                               fillvalue=-1, **kw)
        before = chunkout.WRITES["h5py"]
        assert ndpack.evaluate("a * 2 + b", out=out) is out
        assert chunkout.WRITES["h5py"] - before == 3 * 3    # every chunk once
    with h5py.File(tmp_path / "o.h5", "r") as f:
        np.testing.assert_allclose(f["o"][()], (xa * 2 + xb).astype("f4"), rtol=1e-6)


def test_other_filters_take_the_general_path_in_whole_chunks(tmp_path, monkeypatch):
    x = np.arange(60 * 50, dtype="f8").reshape(60, 50)
    a = ndpack.asarray(x, chunks=(7, 50))
    with h5py.File(tmp_path / "o.h5", "w") as f:
        out = f.create_dataset("o", shape=x.shape, dtype="f8", chunks=(20, 25),
                               compression="lzf", shuffle=True)
        assert chunkout.chunk_writer(out) is None
        seen = []
        real = type(out).__setitem__

        def spy(self, key, value):
            seen.append(key)
            return real(self, key, value)
        monkeypatch.setattr(type(out), "__setitem__", spy)
        ndpack.evaluate("a + 1", out=out)
        monkeypatch.undo()
        np.testing.assert_array_equal(out[()], x + 1)
    for key in seen:                                   # regions of whole output chunks
        for s, c, n in zip(key, (20, 25), x.shape):
            assert s.start % c == 0 and (s.stop % c == 0 or s.stop == n)


def test_whole_chunks_into_zarr(tmp_path, monkeypatch):
    zarr = pytest.importorskip("zarr")
    x = np.arange(90 * 40, dtype="f8").reshape(90, 40)
    a = ndpack.asarray(x, chunks=(4, 40))              # small operand chunks
    numcodecs = pytest.importorskip("numcodecs")
    z = zarr.create_array(str(tmp_path / "z.zarr"), shape=x.shape, chunks=(30, 20),
                          dtype="f8", zarr_format=2, filters=[numcodecs.Delta("f8")])
    assert chunkout.chunk_writer(z) is None            # a filter: zarr writes it
    seen = []
    real = type(z).__setitem__

    def spy(self, key, value):
        seen.append(key)
        return real(self, key, value)
    monkeypatch.setattr(type(z), "__setitem__", spy)
    ndpack.evaluate("a * 3", out=z)
    monkeypatch.undo()
    np.testing.assert_array_equal(z[...], x * 3)
    assert seen and all(s.start % c == 0 and (s.stop % c == 0 or s.stop == n)
                        for key in seen for s, c, n in zip(key, (30, 20), x.shape))


def test_unallocated_chunks_read_as_the_fill_value(tmp_path):
    with h5py.File(tmp_path / "a.h5", "w") as f:
        ds = f.create_dataset("x", shape=(40, 30), dtype="i4", chunks=(10, 10),
                              fillvalue=7, **_blosc2())
        ds[:10, :10] = 1                               # one chunk written
    with h5py.File(tmp_path / "a.h5", "r") as f:
        ds = f["x"]
        got = foreign.read_new(foreign.reader(ds), ds, (slice(5, 25), slice(0, 30)), 2)
        np.testing.assert_array_equal(got, ds[5:25, :])


def test_a_corrupt_chunk_is_never_silently_wrong(tmp_path):
    x = np.arange(400, dtype="f8").reshape(20, 20)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=(10, 10), **_blosc2("lz4", 5, 1))
        off = f["x"].id.get_chunk_info(1).byte_offset
    with open(tmp_path / "a.h5", "r+b") as fh:          # damage chunk 1's frame header
        fh.seek(off)
        fh.write(b"\xff" * 16)
    with h5py.File(tmp_path / "a.h5", "r") as f:
        ds = f["x"]
        read = foreign.reader(ds)
        before = foreign.READS["h5py fallback"]
        with pytest.raises(ndpack.FormatError, match=r"a\.h5:/x: the chunk at \(0, 10\)"):
            foreign.read_new(read, ds, (slice(0, 20), slice(0, 20)), 1)   # h5py fails too
        assert foreign.READS["h5py fallback"] > before
        np.testing.assert_array_equal(                  # the other chunks are fine
            foreign.read_new(read, ds, (slice(0, 10), slice(0, 10)), 1), x[:10, :10])


def test_writers_only_where_they_apply(tmp_path):
    x = np.arange(16.0).reshape(4, 4)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("c", data=np.zeros((4, 4)))                    # contiguous
        f.create_dataset("two", data=np.zeros((4, 4)), chunks=(2, 2), compression="gzip",
                         shuffle=True)                                 # two filters
        be = f.create_dataset("be", shape=(4, 4), dtype=">f8", chunks=(2, 2), **_blosc2())
        assert chunkout.chunk_writer(f["c"]) is None
        assert chunkout.chunk_writer(f["two"]) is None
        assert chunkout.chunk_writer(be) is not None      # big-endian bytes are NumPy's
        ndpack.evaluate("x * 2", local_dict={"x": x}, out=be)
    with h5py.File(tmp_path / "a.h5", "r") as f:
        np.testing.assert_array_equal(f["be"][()], x * 2)
        assert chunkout.chunk_writer(f["be"]) is None                   # read-only


@pytest.mark.parametrize("shape, chunks, blocks", [((30, 41), (8, 10), (3, 4)),
                                                   ((9, 10, 11), (4, 5, 6), (2, 5, 3))])
def test_to_hdf5_copies_chunks_that_h5py_reads(tmp_path, shape, chunks, blocks):
    x = np.random.default_rng(3).integers(-1000, 1000, shape).astype("i8")
    x[: chunks[0]] = 0                                   # special (zero) chunks too
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks,
                       cparams={"codec": ndpack.Codec.ZSTD, "clevel": 3})
    before = ndpack.engine.hdf5.COPIED["to_hdf5"]
    with h5py.File(tmp_path / "a.h5", "w") as f:
        d = ndpack.to_hdf5(a, f, "a")
        fid, _, values, _ = d.id.get_create_plist().get_filter(0)
        assert d.chunks == chunks and fid == 32026 and values[4:7] == (3, 1, 5)
    assert ndpack.engine.hdf5.COPIED["to_hdf5"] - before == a.schunk.nchunks
    with h5py.File(tmp_path / "a.h5", "r") as f:
        np.testing.assert_array_equal(f["a"][()], x)              # hdf5plugin decodes
        b = ndpack.from_hdf5(f["a"])                               # and back, copied
        assert (b.chunks, b.blocks) == (chunks, blocks)
        np.testing.assert_array_equal(b[()], x)


@pytest.mark.parametrize("make", [
    lambda x: x,                                                    # NumPy
    lambda x: ndpack.asarray(x, chunks=(7, 13)) * 1,               # an expression
    lambda x: ndpack.asarray(x.reshape(-1)),                        # 1-d: encoded
])
def test_to_hdf5_computes_everything_else(tmp_path, make):
    x = np.linspace(0, 1, 40 * 26).reshape(40, 26)
    src = make(x)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        d = ndpack.to_hdf5(src, f, "a", cparams={"codec": ndpack.Codec.BLOSCLZ, "clevel": 7})
        with pytest.raises(ndpack.ParameterError, match="exists"):
            ndpack.to_hdf5(src, f, "a")
    with h5py.File(tmp_path / "a.h5", "r") as f:
        np.testing.assert_array_equal(f["a"][()], np.asarray(src[()]))


def test_from_hdf5_of_other_layouts(tmp_path):
    x = np.arange(50 * 20, dtype="f4").reshape(50, 20)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("gz", data=x, chunks=(16, 20), compression="gzip")
        d = f.create_dataset("holes", shape=x.shape, dtype="f4", chunks=(10, 10),
                             fillvalue=2.5, **_blosc2())
        d[10:20, :] = x[10:20]                            # two of ten chunks stored
        f.create_dataset("plugin", data=x, chunks=(16, 8), **_blosc2("zstd", 1, 2))
    with h5py.File(tmp_path / "a.h5", "r") as f:
        g = ndpack.from_hdf5(f["gz"], urlpath=str(tmp_path / "gz.b2nd"))
        assert g.chunks == (16, 20) and g.urlpath == str(tmp_path / "gz.b2nd")
        np.testing.assert_array_equal(g[()], x)
        before = ndpack.engine.hdf5.COPIED["from_hdf5"]
        h = ndpack.from_hdf5(f["holes"])
        assert ndpack.engine.hdf5.COPIED["from_hdf5"] - before == 2
        np.testing.assert_array_equal(h[()], f["holes"][()])
        p = ndpack.from_hdf5(f["plugin"])                  # hdf5plugin's own frames
        np.testing.assert_array_equal(p[()], x)


@pytest.mark.parametrize("kind", ["hdf5 deflate", "zarr gzip"])
def test_each_foreign_chunk_is_decoded_once(tmp_path, kind, monkeypatch):
    """Output regions smaller than the operand's chunks (one 60 x 50 chunk, outputs of
    6 rows): the chunk is inflated once per evaluation, not once per region."""
    x = np.random.default_rng(4).standard_normal((60, 50))
    if kind.startswith("hdf5"):
        f = h5py.File(tmp_path / "a.h5", "w")
        src = f.create_dataset("x", data=x, chunks=(60, 50), compression="gzip")
    else:
        zarr = pytest.importorskip("zarr")
        src = zarr.create_array(str(tmp_path / "z.zarr"), shape=x.shape, chunks=(60, 50),
                                dtype="f8", compressors=zarr.codecs.GzipCodec(level=1))
        src[...] = x
    calls = []
    real = h5read.zlib.decompress
    monkeypatch.setattr(h5read.zlib, "decompress",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    before = foreign.READS[kind.split()[0].replace("hdf5", "h5py")]
    r = ndpack.lazyexpr("s * 2", operands={"s": src}).compute(chunks=(6, 50), blocks=(6, 50))
    np.testing.assert_array_equal(r[()], x * 2)
    assert len(calls) == 1
    assert foreign.READS[kind.split()[0].replace("hdf5", "h5py")] - before == 10
    monkeypatch.undo()
    if kind.startswith("hdf5"):
        f.close()


def test_slices_decode_only_the_blocks_they_touch(tmp_path):
    """The stream of one block of a Blosc2-filtered chunk is damaged: slices that do
    not touch that block read right (it is never decoded), one that does raises."""
    import struct
    from ndpack.storage.ndarray import NDArray
    from ndpack.storage.schunk import schunk_from_cframe
    x = np.arange(512 * 256, dtype="f8").reshape(512, 256)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        ds = f.create_dataset("x", shape=x.shape, dtype="f8", chunks=x.shape,
                              **_blosc2("zstd", 1, hdf5plugin.Blosc2.NOFILTER))
        ndpack.evaluate("x + 0", local_dict={"x": x}, out=ds)
        info = ds.id.get_chunk_info(0)
    with open(tmp_path / "a.h5", "r+b") as fh:
        fh.seek(info.byte_offset)
        frame = fh.read(info.size)
        schunk = schunk_from_cframe(frame)
        rows, cols = NDArray(schunk).blocks      # the writer's default: host-dependent
        assert cols == 256 and 512 % rows == 0 and 512 // rows >= 2
        nblocks = 512 // rows
        chunk = bytes(schunk.get_chunk(0))
        at = frame.find(chunk)
        last = struct.unpack_from(f"<{nblocks}i", chunk, 32)[-1]   # the last block's stream
        assert chunk[last + 4:last + 8] == b"\x28\xb5\x2f\xfd"  # a zstd frame's magic
        fh.seek(info.byte_offset + at + last + 4)
        fh.write(b"\x00" * 4)
    edge = 512 - rows                                    # first row of the damaged block
    with h5py.File(tmp_path / "a.h5", "r") as f:
        ds = f["x"]
        read = foreign.reader(ds)
        for key in [(slice(0, edge), slice(0, 256)), (slice(edge // 3, edge - 1), slice(7, 9)),
                    (slice(edge - 1, edge), slice(0, 256))]:
            np.testing.assert_array_equal(foreign.read_new(read, ds, key, 1), x[key])
        with pytest.raises(ndpack.FormatError, match=r"a\.h5:/x"):
            foreign.read_new(read, ds, (slice(edge - 4, edge + 6), slice(0, 4)), 1)


@pytest.mark.parametrize("filt", ["blosc2", "gzip", "none"])
@pytest.mark.parametrize("dtype", [">f8", ">i4", "<u2", ">c16"])
def test_byte_orders_both_ways_directly(tmp_path, filt, dtype):
    """Big-endian datasets are written and read by the direct paths, values as h5py's."""
    kw = {"blosc2": _blosc2(), "gzip": {"compression": "gzip"}, "none": {}}[filt]
    x = (np.arange(60 * 50).reshape(60, 50) % 1000).astype(np.dtype(dtype).newbyteorder("="))
    with h5py.File(tmp_path / "a.h5", "w") as f:
        ds = f.create_dataset("x", shape=x.shape, dtype=dtype, chunks=(16, 20), **kw)
        w, r = chunkout.WRITES["h5py"], foreign.READS["h5py"]
        ndpack.evaluate("x * 3", local_dict={"x": x}, out=ds)
        assert chunkout.WRITES["h5py"] - w == 12                   # 4 x 3 chunks, direct
        np.testing.assert_array_equal(ds[...], x * 3)
        got = ndpack.evaluate("h + 1", local_dict={"h": ds})
        assert foreign.READS["h5py"] - r == 12
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, x * 3 + 1)


def test_compound_datasets_take_h5py_path(tmp_path):
    dt = np.dtype([("a", "f8"), ("b", "i4")])
    with h5py.File(tmp_path / "a.h5", "w") as f:
        c = f.create_dataset("c", shape=(10,), dtype=dt, chunks=(4,), **_blosc2())
        c[...] = np.array([(1.5, 2)] * 10, dtype=dt)
        assert chunkout.chunk_writer(c) is None and foreign.reader(c) is None
        np.testing.assert_array_equal(ndpack.evaluate("h", local_dict={"h": c}), c[...])


@pytest.mark.parametrize("shape, chunks", [((12, 40, 30), (12, 40, 30)), ((3000,), (3000,)),
                                           ((24, 40, 30), (12, 40, 30))])
def test_few_big_chunks_are_decoded_by_several_threads(tmp_path, monkeypatch, shape, chunks):
    """A region holding fewer chunks than threads (100 MB chunks of a region path)
    decodes each chunk with the threads left over; the values are h5py's, and one
    thread alone reads the same."""
    from ndpack.storage.ndarray import NDArray
    from ndpack.storage.schunk import SChunk
    x = np.random.default_rng(5).standard_normal(shape).round(2)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=chunks, **_blosc2("lz4", 5, 1))
    seen = []
    real_into, real_chunk = NDArray.read_into, SChunk.decompress_chunk

    def read_into(self, key, out, nthreads=None):
        seen.append(nthreads)
        return real_into(self, key, out, nthreads)

    def decompress_chunk(self, n, dst=None):
        seen.append(self.dparams.nthreads)
        return real_chunk(self, n, dst)
    monkeypatch.setattr(NDArray, "read_into", read_into)
    monkeypatch.setattr(SChunk, "decompress_chunk", decompress_chunk)
    with h5py.File(tmp_path / "a.h5", "r") as f:
        ds = f["x"]
        read = foreign.reader(ds)
        whole = tuple(slice(0, n) for n in chunks)
        for nthreads in (1, 2, 3):
            seen.clear()
            np.testing.assert_array_equal(foreign.read_new(read, ds, whole, nthreads),
                                          x[whole])
            assert seen == [nthreads]
        seen.clear()
        both = tuple(slice(0, n) for n in shape)     # small chunks: one batch of all
        np.testing.assert_array_equal(foreign.read_new(read, ds, both, 2), x)
        assert seen == [2] * (x.size // np.prod(chunks))
        seen.clear()
        np.testing.assert_array_equal(ndpack.evaluate("ds + 1", local_dict={"ds": ds}),
                                      x + 1)
        assert seen and all(n >= 1 for n in seen)


@pytest.mark.parametrize("kind", ["hdf5 none", "hdf5 blosc2", "zarr"])
def test_regions_for_direct_writers_are_computed_in_one_reused_buffer(tmp_path, monkeypatch,
                                                                      kind):
    """Each region written to a foreign output is computed in the writer's pooled
    buffer (not fresh pages), which the writer copies or stores before the next
    region overwrites it: every chunk right, the buffer given back at the end."""
    from ndpack.engine.run import plan
    rng = np.random.default_rng(9)
    xa, xb = rng.standard_normal((120, 64)), rng.standard_normal((120, 64))
    a, b = ndpack.asarray(xa, chunks=(7, 64)), ndpack.asarray(xb, chunks=(120, 9))
    if kind.startswith("hdf5"):
        f = h5py.File(tmp_path / "o.h5", "w")
        out = f.create_dataset("o", shape=(120, 64), dtype="f8", chunks=(10, 64),
                               **({} if kind == "hdf5 none" else _blosc2()))
    else:
        zarr = pytest.importorskip("zarr")
        out = zarr.create_array(str(tmp_path / "z.zarr"), shape=(120, 64), chunks=(10, 64),
                                dtype="f8")
    monkeypatch.setattr(plan, "region_budget", lambda *a, **k: 10 * 64 * 8 * 2)
    seen, real_write, real_release = [], chunkout._ChunkWriter.write, \
        chunkout._ChunkWriter.release

    def write(self, region, values):
        seen.append(np.shares_memory(values, self.region_raw))
        return real_write(self, region, values)
    released = []
    monkeypatch.setattr(chunkout._ChunkWriter, "write", write)
    monkeypatch.setattr(chunkout._ChunkWriter, "release",
                        lambda self: released.append(1) or real_release(self))
    ndpack.evaluate("a * 2 + b", out=out)
    assert len(seen) > 2 and all(seen) and released
    np.testing.assert_array_equal(out[...], xa * 2 + xb)
    if kind.startswith("hdf5"):
        f.close()
