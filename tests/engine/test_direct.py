"""Direct readers of h5py and zarr operands (ndpack/engine/run/foreign.py and its readers): NumPy is the
oracle, every fast path is proven taken (``direct.READS`` counts its chunks) and every
layout it refuses is proven to fall back to ``obj[key]`` with the same values."""

import itertools

import numpy as np
import pytest

import ndpack
from ndpack.engine.run import foreign as direct
from ndpack.engine.run import gridread, h5read, zarrread

h5py = pytest.importorskip("h5py")
zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

SHAPE, CHUNKS = (37, 23), (10, 7)          # chunks that do not divide the shape


def data(shape=SHAPE, dtype="f8", seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) * 100).astype(dtype)


def boxes(shape, n=12, seed=1):
    """The whole array, single elements and random boxes (step-1 slices)."""
    rng = np.random.default_rng(seed)
    yield tuple(slice(0, s) for s in shape)
    yield tuple(slice(s - 1, s) for s in shape)
    for _ in range(n):
        lo = [int(rng.integers(0, s)) for s in shape]
        yield tuple(slice(a, int(rng.integers(a + 1, s + 1))) for a, s in zip(lo, shape))


def check_reader(arr, expected, kind, dtypes=(None,)):
    """The reader exists, gives `expected` on many boxes, and read chunks directly."""
    read = direct.reader(arr)
    assert read is not None
    before = direct.READS[kind]
    for key, dt in itertools.product(boxes(expected.shape), dtypes):
        dst = np.full(tuple(k.stop - k.start for k in key), 99, dt or arr.dtype)
        read(key, dst, nthreads=2)
        np.testing.assert_array_equal(dst, expected[key])
    assert direct.READS[kind] > before


def assert_falls_back(arr, expected):
    """No direct reader; expressions over `arr` are still right."""
    assert direct.reader(arr) is None
    np.testing.assert_array_equal(ndpack.evaluate("a * 2 + 1", local_dict={"a": arr}),
                                  expected * 2 + 1)


# ---------------------------------------------------------------------------------------
# h5py

@pytest.fixture
def h5(tmp_path):
    f = h5py.File(tmp_path / "d.h5", "w")
    yield f
    f.close()


@pytest.mark.parametrize("dtype", ["f8", ">f8", "<i4", ">i2", "u1", "f4", "c16"])
def test_h5py_chunked_any_byte_order(h5, dtype):
    x = data(dtype=dtype)
    d = h5.create_dataset("x", data=x, chunks=CHUNKS)
    check_reader(d, x, "h5py", dtypes=(None, "f8" if dtype != "c16" else "c16"))


def test_h5py_chunk_rows_read_by_spans(h5):
    """Boxes cutting a chunk's inner dimensions read each row's span of wanted items
    only (3-D chunks: spans over two inner dimensions), into any dtype of output."""
    x = data((9, 12, 20), "f8", 3)
    d = h5.create_dataset("x", data=x, chunks=(4, 6, 10))
    check_reader(d, x, "h5py", dtypes=(None, "c16"))
    read = direct.reader(d)
    for key in [(slice(0, 9), slice(2, 3), slice(0, 20)), (slice(1, 8), slice(7, 9), slice(3, 5)),
                (slice(0, 4), slice(0, 6), slice(9, 10))]:
        dst = np.empty(tuple(k.stop - k.start for k in key))
        read(key, dst)
        np.testing.assert_array_equal(dst, x[key])


def test_h5py_unallocated_chunks_read_as_the_fill_value(h5):
    x = np.full(SHAPE, -3.5)
    d = h5.create_dataset("x", shape=SHAPE, dtype="f8", chunks=CHUNKS, fillvalue=-3.5)
    d[12:25, 3:9] = x[12:25, 3:9] = data()[12:25, 3:9]
    d[36, 22] = x[36, 22] = 7
    assert d.id.get_num_chunks() < 24
    check_reader(d, x, "h5py")


@pytest.mark.parametrize("shape", [SHAPE, (7, 9, 11), (50,)])
def test_h5py_contiguous(h5, shape, monkeypatch):
    monkeypatch.setattr(h5read, "_VIRTUAL_BYTES", 64)       # many pieces per read
    x = data(shape, ">f8")
    d = h5.create_dataset("x", data=x)
    assert d.chunks is None
    check_reader(d, x, "h5py", dtypes=(None, "<f8"))


def test_h5py_contiguous_never_written(h5):
    d = h5.create_dataset("x", shape=SHAPE, dtype="i4", fillvalue=11)
    check_reader(d, np.full(SHAPE, 11, "i4"), "h5py")


def test_h5py_gzip_chunks(h5):
    x = data().round(1)
    d = h5.create_dataset("x", data=x, chunks=CHUNKS, compression="gzip",
                          compression_opts=4, fillvalue=2)
    d2 = h5.create_dataset("y", shape=SHAPE, dtype="f8", chunks=CHUNKS, compression="gzip",
                           fillvalue=2)
    d2[:11] = x[:11]
    check_reader(d, x, "h5py")
    check_reader(d2, np.concatenate([x[:11], np.full((26, 23), 2.0)]), "h5py")


@pytest.mark.parametrize("options", [
    {"compression": "gzip", "shuffle": True}, {"fletcher32": True}, {"scaleoffset": 2},
    {"compression": "lzf"}, {"shuffle": True}])
def test_h5py_filters_fall_back(h5, options):
    x = data().round(2)
    d = h5.create_dataset("x", data=x, chunks=CHUNKS, **options)
    assert_falls_back(d, d[()])


def test_h5py_other_layouts_fall_back(tmp_path):
    x = data()
    with h5py.File(tmp_path / "core.h5", "w", driver="core") as f:
        assert_falls_back(f.create_dataset("x", data=x, chunks=CHUNKS), x)
    with h5py.File(tmp_path / "ub.h5", "w", userblock_size=512) as f:
        assert_falls_back(f.create_dataset("x", data=x, chunks=CHUNKS), x)
    with h5py.File(tmp_path / "t.h5", "w") as f:
        b = f.create_dataset("b", data=x > 0, chunks=CHUNKS)
        assert direct.reader(b) is None                 # HDF5 enum: not NumPy's bytes
        comp = f.create_dataset("c", data=np.zeros(5, [("a", "f8"), ("b", "i4")]))
        assert direct.reader(comp) is None
        assert direct.reader(f.create_dataset("s", data=3.0)) is None   # scalar
        assert direct.reader(f["b"].astype("f8")) is None               # a wrapper
        ext = f.create_dataset("e", data=x, external=[(str(tmp_path / "raw.bin"), 0,
                                                        h5py.h5f.UNLIMITED)])
        assert_falls_back(ext, x)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((10,))
        h5py.h5d.create(f.id, b"k", h5py.h5t.IEEE_F64LE, space, dcpl=dcpl)
        f["k"][...] = np.arange(10.0)
        assert_falls_back(f["k"], np.arange(10.0))


def test_h5py_writable_file_is_flushed(tmp_path):
    x = data()
    with h5py.File(tmp_path / "w.h5", "w", rdcc_nbytes=1 << 24) as f:
        d = f.create_dataset("x", shape=SHAPE, dtype="f8", chunks=CHUNKS)
        d[...] = x                              # in HDF5's chunk cache until flushed
        check_reader(d, x, "h5py")
        d[:5] = 1.0
        x[:5] = 1.0
        check_reader(d, x, "h5py")


def test_h5py_read_only_file(tmp_path):
    x = data()
    with h5py.File(tmp_path / "r.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=CHUNKS)
    with h5py.File(tmp_path / "r.h5", "r") as f:
        check_reader(f["x"], x, "h5py")


# ---------------------------------------------------------------------------------------
# zarr

V2_CODECS = {"none": None, "zstd": numcodecs.Zstd(level=3),
             "blosc-lz4": numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
             "blosc-zstd": numcodecs.Blosc("zstd", 1, numcodecs.Blosc.BITSHUFFLE),
             "gzip": numcodecs.GZip(5), "zlib": numcodecs.Zlib(3)}
V3_CODECS = {"none": None, "zstd": zarr.codecs.ZstdCodec(level=1, checksum=True),
             "blosc": zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"),
             "gzip": zarr.codecs.GzipCodec(level=5)}


def zarr_array(path, x, fmt, codec, **kw):
    comp = {"compressors": None if codec is None else [codec]}
    return zarr.create_array(str(path), data=x, chunks=CHUNKS, zarr_format=fmt, **comp, **kw)


@pytest.mark.parametrize("name", sorted(V2_CODECS))
@pytest.mark.parametrize("dtype", ["f8", ">i4"])
def test_zarr_v2_codecs(tmp_path, name, dtype):
    x = data(dtype=dtype)
    z = zarr_array(tmp_path / "z", x, 2, V2_CODECS[name])
    check_reader(z, x, "zarr", dtypes=(None, "f8"))


@pytest.mark.parametrize("name", sorted(V3_CODECS))
@pytest.mark.parametrize("endian", ["little", "big"])
def test_zarr_v3_codecs(tmp_path, name, endian):
    x = data(dtype="i8")
    z = zarr_array(tmp_path / "z", x, 3, V3_CODECS[name],
                   serializer=zarr.codecs.BytesCodec(endian=endian))
    check_reader(z, x, "zarr", dtypes=(None, "f8"))


@pytest.mark.parametrize("fmt", [2, 3])
def test_zarr_missing_chunks_read_as_the_fill_value(tmp_path, fmt):
    x = np.full(SHAPE, 4.25)
    z = zarr.create_array(str(tmp_path / "z"), shape=SHAPE, dtype="f8", chunks=CHUNKS,
                          fill_value=4.25, zarr_format=fmt)
    z[3:17, 8:20] = x[3:17, 8:20] = data()[3:17, 8:20]
    check_reader(z, x, "zarr")


@pytest.mark.parametrize("fmt,encoding", [(2, {"name": "v2", "separator": "/"}),
                                          (3, {"name": "v2", "separator": "."}),
                                          (3, {"name": "default", "separator": "."})])
def test_zarr_chunk_key_encodings(tmp_path, fmt, encoding):
    x = data()
    z = zarr.create_array(str(tmp_path / "z"), data=x, chunks=CHUNKS, zarr_format=fmt,
                          chunk_key_encoding=encoding)
    check_reader(z, x, "zarr")


def test_zarr_nested_group_path(tmp_path):
    x = data()
    g = zarr.open_group(str(tmp_path / "g"), mode="w")
    z = g.create_array("sub/arr", shape=SHAPE, dtype="f8", chunks=CHUNKS)
    z[...] = x
    check_reader(z, x, "zarr")


def test_zarr_unsupported_layouts_fall_back(tmp_path):
    x = data()
    cases = [
        zarr.create_array(str(tmp_path / "shard"), data=x, chunks=(5, 7), shards=(10, 14)),
        zarr.create_array(str(tmp_path / "delta"), data=x, chunks=CHUNKS,
                          filters=[numcodecs.Delta("f8")], zarr_format=2),
        zarr.create_array(str(tmp_path / "fort"), data=x, chunks=CHUNKS, order="F",
                          zarr_format=2),
        zarr.create_array(str(tmp_path / "crc"), data=x, chunks=CHUNKS,
                          compressors=[zarr.codecs.ZstdCodec(), zarr.codecs.Crc32cCodec()]),
        zarr.create_array(str(tmp_path / "tr"), data=x, chunks=CHUNKS,
                          filters=[zarr.codecs.TransposeCodec(order=(1, 0))]),
        zarr.create_array(str(tmp_path / "lz4"), data=x, chunks=CHUNKS, zarr_format=2,
                          compressors=numcodecs.LZ4()),
        zarr.create_array(zarr.storage.MemoryStore(), data=x, chunks=CHUNKS),
    ]
    for z in cases:                    # (Delta on floats is lossy: zarr's values)
        assert_falls_back(z, z[...])


def test_a_chunk_that_does_not_decode_to_its_size_is_read_by_zarr(tmp_path, monkeypatch):
    x = data()
    z = zarr_array(tmp_path / "z", x, 3, V3_CODECS["zstd"])
    monkeypatch.setattr(zarrread, "_zstd_content_size", lambda src: None)
    before, fell = direct.READS["zarr"], direct.READS["zarr fallback"]
    np.testing.assert_array_equal(ndpack.evaluate("z + 1", local_dict={"z": z}), x + 1)
    assert direct.READS["zarr"] == before
    assert direct.READS["zarr fallback"] == fell + 16


def test_a_chunk_that_fails_to_decode_is_read_by_zarr(tmp_path, monkeypatch):
    x = data()
    z = zarr_array(tmp_path / "z", x, 2, V2_CODECS["blosc-lz4"])

    def broken(*args, **kwargs):
        raise ndpack.FormatError("not a chunk")
    monkeypatch.setattr(zarrread, "decompress2", broken)
    np.testing.assert_array_equal(ndpack.evaluate("z + 1", local_dict={"z": z}), x + 1)


def test_a_corrupt_chunk_file_still_raises(tmp_path):
    z = zarr_array(tmp_path / "z", data(), 3, V3_CODECS["zstd"])
    (tmp_path / "z" / "c" / "0" / "0").write_bytes(b"garbage")
    with pytest.raises(Exception, match="(?i)zstd|decompress|error"):   # zarr's own error
        ndpack.evaluate("z + 1", local_dict={"z": z})


# ---------------------------------------------------------------------------------------
# the engine over direct readers

@pytest.fixture
def operands(tmp_path):
    a, b = data(seed=2), data(seed=3)
    f = h5py.File(tmp_path / "ops.h5", "w")
    ops = {"ha": f.create_dataset("a", data=a, chunks=CHUNKS),
           "hb": f.create_dataset("b", data=b, chunks=(37, 5), compression="gzip"),
           "za": zarr_array(tmp_path / "za", a, 3, V3_CODECS["zstd"]),
           "zb": zarr_array(tmp_path / "zb", b, 2, V2_CODECS["blosc-lz4"])}
    yield ops, a, b
    f.close()


def test_expressions(operands):
    ops, a, b = operands
    before = dict(direct.READS)
    res = ndpack.evaluate("ha * 2 + sin(hb) - za / (1 + zb ** 2)", local_dict=ops)
    np.testing.assert_allclose(res, a * 2 + np.sin(b) - a / (1 + b ** 2), rtol=1e-13, atol=1e-14)
    assert all(direct.READS[k] > before.get(k, 0) for k in ("h5py", "zarr"))
    e = ndpack.lazyexpr("ha - zb", operands=ops)
    np.testing.assert_array_equal(e[3:30, 2:21], (a - b)[3:30, 2:21])
    np.testing.assert_array_equal(e.compute(chunks=(8, 8))[()], a - b)


def test_expressions_without_direct_readers_agree(operands, monkeypatch):
    ops = operands[0]
    text = "ha * hb + za - zb"
    fast = ndpack.evaluate(text, local_dict=ops)
    monkeypatch.setattr(direct, "reader", lambda arr: None)
    before = dict(direct.READS)
    np.testing.assert_array_equal(ndpack.evaluate(text, local_dict=ops), fast)
    assert dict(direct.READS) == before


def test_reductions(operands):
    ops, a, b = operands
    for name in ("ha", "hb", "za", "zb"):
        x = a if name.endswith("a") else b
        before = direct.READS[name[0] == "h" and "h5py" or "zarr"]
        for axis in (None, 0, 1):
            np.testing.assert_allclose(ndpack.sum(ops[name], axis=axis), x.sum(axis=axis),
                                       rtol=1e-12)
        np.testing.assert_array_equal(ndpack.max(ops[name], axis=0), x.max(axis=0))
        assert direct.READS[name[0] == "h" and "h5py" or "zarr"] > before
    e = ndpack.lazyexpr("sum(ha * zb, axis=1) + mean(za)", operands=ops)
    np.testing.assert_allclose(e[()], (a * b).sum(1) + a.mean(), rtol=1e-12)


def test_reads_run_on_several_threads(operands, monkeypatch):
    ops, a, _ = operands
    monkeypatch.setattr(gridread, "_GROUP_BYTES", 1)             # a call per chunk
    seen = []
    real = gridread.run_leaves
    monkeypatch.setattr(gridread, "run_leaves", lambda calls, n: seen.append((len(calls), n))
                        or real(calls, n))
    dst = np.empty(SHAPE)
    direct.reader(ops["za"])(tuple(slice(0, s) for s in SHAPE), dst, nthreads=2)
    np.testing.assert_array_equal(dst, a)
    assert seen == [(4 * 4, 2)]


def test_out_in_the_same_file(tmp_path):
    a, b = data(seed=4), data(seed=5)
    with h5py.File(tmp_path / "same.h5", "w") as f:
        ha = f.create_dataset("a", data=a, chunks=CHUNKS)
        hb = f.create_dataset("b", data=b, chunks=(20, 23), compression="gzip")
        out = f.create_dataset("out", shape=SHAPE, dtype="f8", chunks=(8, 23))
        before = direct.READS["h5py"]
        ndpack.evaluate("ha * 2 + hb", local_dict={"ha": ha, "hb": hb}, out=out)
        np.testing.assert_allclose(out[()], a * 2 + b, rtol=1e-14)
        assert direct.READS["h5py"] > before
        # the output is also an operand: never read directly, still right
        seen = []
        real = direct.reader
        f.create_dataset("c", data=a, chunks=CHUNKS, compression="gzip")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(direct, "reader", lambda arr: seen.append(real(arr)) or seen[-1])
            ndpack.evaluate("c * 2 + hb", local_dict={"c": f["c"], "hb": hb}, out=f["c"])
        np.testing.assert_allclose(f["c"][()], a * 2 + b, rtol=1e-14)
        assert seen and seen[0] is None and seen[1] is not None      # c refused, hb read
        before = direct.READS["h5py"]
        np.testing.assert_allclose(ndpack.evaluate("c - hb", local_dict={"c": f["c"], "hb": hb}),
                                   a * 2, rtol=1e-13)
        assert direct.READS["h5py"] > before                 # after it, c is read directly


def test_zarr_out_that_is_an_operand(tmp_path):
    a = data(seed=6)
    z = zarr_array(tmp_path / "z", a, 3, V3_CODECS["zstd"])
    assert direct.reader(z) is not None
    with direct.writing(zarr.open_array(str(tmp_path / "z"))):     # another handle
        assert direct.reader(z) is None
    with direct.writing(zarr.open_array(f"{tmp_path}/../{tmp_path.name}/z")):  # another name
        assert direct.reader(z) is None
    ndpack.evaluate("z * 3", local_dict={"z": z}, out=z)
    np.testing.assert_allclose(z[()], a * 3, rtol=1e-15)
    assert direct.reader(z) is not None


def test_zstd_header_parsing():
    for n in (0, 1, 255, 256, 300, 65791, 70000, 1 << 20):
        frame = numcodecs.Zstd().encode(np.zeros(n, np.uint8))
        assert zarrread._zstd_content_size(np.frombuffer(frame, np.uint8)) == n
    assert zarrread._zstd_content_size(np.zeros(10, np.uint8)) is None


def test_evaluation_reads_chunks_on_leaf_threads(operands, monkeypatch):
    import threading
    ops, a, b = operands
    names = set()
    real = zarrread.ZarrReader.load

    def load(self, *args):
        names.add(threading.current_thread().name)
        return real(self, *args)
    monkeypatch.setattr(zarrread.ZarrReader, "load", load)
    import importlib
    plan = importlib.import_module("ndpack.engine.run.plan")
    monkeypatch.setattr(plan, "REGION_BYTES", 8 * 20 * 23)      # two regions
    np.testing.assert_array_equal(ndpack.evaluate("za + zb", local_dict=ops), a + b)
    assert any(n.startswith("ndpack-leaf") for n in names), names


@pytest.fixture(scope="module")
def scratch_file(tmp_path_factory):
    f = h5py.File(tmp_path_factory.mktemp("hyp") / "h.h5", "w")
    yield f
    f.close()


def _shapes_chunks_box(draw):
    from hypothesis import strategies as st
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 12)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, n + 3)) for n in shape)
    box = []
    for n in shape:
        lo = draw(st.integers(0, n - 1))
        box.append(slice(lo, draw(st.integers(lo + 1, n))))
    return shape, chunks, tuple(box)


def test_h5py_any_shape_chunks_and_box(scratch_file):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=60, deadline=None)
    @given(st.data(), st.sampled_from(["f8", ">i2", "<u4"]), st.booleans(), st.booleans())
    def check(dd, dtype, contiguous, gzip):
        shape, chunks, box = _shapes_chunks_box(dd.draw)
        name = f"d{len(scratch_file)}"
        x = data(shape, dtype, seed=len(scratch_file))
        opts = {} if contiguous else {"chunks": chunks, "fillvalue": 5,
                                      "maxshape": (None,) * len(shape)}
        if gzip and not contiguous:
            opts["compression"] = "gzip"
        d = scratch_file.create_dataset(name, shape=shape, dtype=dtype, **opts)
        d[box] = x[box]                          # the rest: unallocated or fill
        expected = d[()]
        read = direct.reader(d)
        dst = np.empty(tuple(s.stop - s.start for s in box), "f8")
        read(box, dst, nthreads=2)
        np.testing.assert_array_equal(dst, expected[box])
        whole = np.empty(shape, dtype)
        read(tuple(slice(0, n) for n in shape), whole)
        np.testing.assert_array_equal(whole, expected)
    check()
