"""python-blosc2's Blosc1-style globals (set_compressor, set_blocksize), machine facts
(cpu_info, VERSION_DATE), index names (IndexKind, Index, iter_sorted), NDField and
estore_from_cframe, against python-blosc2 itself and NumPy."""

import threading

import numpy as np
import pytest

import ndpack

blosc2 = pytest.importorskip("blosc2")


@pytest.fixture
def restore_globals():
    yield
    ndpack.set_blocksize(0)
    ndpack.set_compressor(ndpack.Codec.BLOSCLZ)
    blosc2.set_blocksize(0)
    blosc2.set_compressor(blosc2.Codec.BLOSCLZ)


def test_compressor_default_and_return_codes(restore_globals):
    assert ndpack.get_compressor() == blosc2.get_compressor() == "blosclz"
    for name in ("BLOSCLZ", "LZ4", "LZ4HC", "ZLIB", "ZSTD", "NDLZ", "ZFP_ACC", "OPENHTJ2K"):
        mine = ndpack.set_compressor(getattr(ndpack.Codec, name))
        theirs = blosc2.set_compressor(getattr(blosc2.Codec, name))
        assert mine == theirs, name
        assert ndpack.get_compressor() == blosc2.get_compressor(), name
    # python-blosc2's members are taken by name
    assert ndpack.set_compressor(blosc2.Codec.LZ4) == 1 and ndpack.get_compressor() == "lz4"


@pytest.mark.parametrize("bad", ["zstd", 5, None, 4.0])
def test_set_compressor_refuses_what_python_blosc2_refuses(bad, restore_globals):
    with pytest.raises(AttributeError):
        blosc2.set_compressor(bad)
    with pytest.raises(AttributeError, match="codec"):
        ndpack.set_compressor(bad)
    assert ndpack.get_compressor() == "blosclz"


def test_compressor_changes_no_call(restore_globals):
    """python-blosc2 4.14.1: every call passes its own codec= default."""
    x = np.arange(100_000.0)
    calls = (ndpack.compress, ndpack.pack, ndpack.pack_array, ndpack.compress2)
    before = [ndpack.get_clib(f(x)) for f in calls]
    ndpack.set_compressor(ndpack.Codec.LZ4)
    blosc2.set_compressor(blosc2.Codec.LZ4)
    after = [f(x) for f in calls]
    assert before == [ndpack.get_clib(c) for c in after]
    assert ndpack.get_clib(after[0]) == blosc2.get_clib(blosc2.compress(x)) == "Zstd"
    assert ndpack.get_clib(after[1]) == blosc2.get_clib(blosc2.pack(x)) == "BloscLZ"


def test_blocksize_reaches_the_blosc1_calls_only(restore_globals):
    x = np.arange(100_000.0)
    auto = ndpack.get_cbuffer_sizes(ndpack.compress2(x))[2]
    ndpack.set_blocksize(4096)
    blosc2.set_blocksize(4096)
    assert ndpack.get_blocksize() == blosc2.get_blocksize() == 4096
    for f in ("compress", "pack", "pack_array"):
        mine = getattr(ndpack, f)(x)
        theirs = getattr(blosc2, f)(x)
        assert ndpack.get_cbuffer_sizes(mine)[2] == blosc2.get_cbuffer_sizes(theirs)[2] == 4096
    np.testing.assert_array_equal(blosc2.unpack_array(ndpack.pack_array(x)), x)
    np.testing.assert_array_equal(np.frombuffer(blosc2.decompress(ndpack.compress(x))), x)
    assert ndpack.get_cbuffer_sizes(ndpack.compress2(x))[2] == auto
    a = ndpack.asarray(x)
    assert a.blocksize == ndpack.asarray(x, blocks=a.blocks).blocksize != 4096
    ndpack.set_blocksize(0)
    assert ndpack.get_blocksize() == 0
    assert ndpack.get_cbuffer_sizes(ndpack.compress(x))[2] != 4096


def test_set_blocksize_errors(restore_globals):
    for bad, exc in ((-1, OverflowError), ("a", TypeError), (None, TypeError)):
        with pytest.raises(exc):
            blosc2.set_blocksize(bad)
        with pytest.raises(exc):
            ndpack.set_blocksize(bad)
    with pytest.raises(ValueError, match="MAX_BLOCKSIZE"):
        ndpack.set_blocksize(2**31)
    assert ndpack.get_blocksize() == 0


def test_globals_under_threads(restore_globals):
    def work(bs):
        for _ in range(200):
            ndpack.set_blocksize(bs)
            assert ndpack.get_blocksize() in (1024, 2048)
    ts = [threading.Thread(target=work, args=(bs,)) for bs in (1024, 2048)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert ndpack.get_blocksize() in (1024, 2048)


def test_cpu_info_and_version_date():
    assert set(blosc2.cpu_info) <= set(ndpack.cpu_info)
    assert ndpack.get_cpu_info() == ndpack.cpu_info
    info = ndpack.get_cpu_info()
    assert info["count"] == ndpack.detect_number_of_cores()
    assert info["l1_data_cache_size"] == blosc2.cpu_info["l1_data_cache_size"]
    assert info["isa"] == ndpack.show_config(file=open("/dev/null", "w"))["isa"]
    assert ndpack.VERSION_DATE.startswith("$Date:: ") and ndpack.VERSION_DATE.endswith(" #$")
    assert len(ndpack.VERSION_DATE) == len(blosc2.VERSION_DATE)


# ---------------------------------------------------------------------------------------
# IndexKind, Index, iter_sorted


def test_index_kind_matches_python_blosc2():
    assert [(k.name, k.value) for k in ndpack.IndexKind] == \
        [(k.name, k.value) for k in blosc2.IndexKind]
    x = np.random.default_rng(1).random(1000)
    for kind in (ndpack.IndexKind.FULL, blosc2.IndexKind.FULL, "full"):
        a = ndpack.asarray(x)
        assert a.create_index(kind=kind)["kind"] == "full"
    for kind in ndpack.IndexKind:
        if kind is not ndpack.IndexKind.FULL:
            with pytest.raises(ValueError, match="kind"):
                ndpack.asarray(x).create_index(kind=kind)


def test_index_handle_like_python_blosc2():
    x = np.random.default_rng(2).random(5000)
    a, b = ndpack.asarray(x), blosc2.asarray(x)
    a.create_index(kind=ndpack.IndexKind.FULL)
    b.create_index(kind=blosc2.IndexKind.FULL)
    mine, theirs = a.indexes[0], b.indexes[0]
    assert isinstance(mine, ndpack.Index)
    for attr in ("field", "name", "stale", "persistent", "col_name", "target"):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
    assert mine.kind.value == theirs.kind.value == "full"
    assert repr(mine) == repr(theirs)
    nbytes, cbytes, cratio = mine.storage_stats()
    assert nbytes >= x.nbytes and cbytes > 0 and cratio == nbytes / cbytes
    assert mine["size"] == 5000 and dict(mine) == mine.descriptor    # still a mapping
    assert a.index()["kind"] == mine["kind"]
    a[0] = 2.0                                        # chunk 0 changes: compact rebuilds
    assert a.index()["scan_chunks"] == 1
    assert a.index().compact()["scan_chunks"] == 0
    a.index().drop()
    assert a.indexes == [] and b.indexes[0].rebuild().stale is False
    with pytest.raises(KeyError):
        a.index()
    with pytest.raises(TypeError):
        ndpack.Index(x, "__self__")


SLICES = [{}, {"start": 2, "stop": 5}, {"start": 990, "step": 3}, {"start": -2},
          {"step": -1}, {"start": -10, "stop": 3, "step": -4}, {"stop": 0}]


@pytest.mark.parametrize("kw", SLICES)
def test_iter_sorted_with_an_index_matches_python_blosc2(kw):
    x = np.random.default_rng(3).random(1000)
    x[[5, 50]] = np.nan
    x[100:110] = 0.25                                  # ties
    a, b = ndpack.asarray(x, chunks=(300,), blocks=(100,)), blosc2.asarray(x)
    a.create_index(kind=ndpack.IndexKind.FULL)
    b.create_index(kind=blosc2.IndexKind.FULL)
    mine = np.array(list(ndpack.iter_sorted(a, batch_size=64, **kw)))
    theirs = np.array(list(blosc2.iter_sorted(b, **kw)))
    np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(mine, np.sort(x)[slice(kw.get("start"), kw.get("stop"),
                                                          kw.get("step"))])


@pytest.mark.parametrize("kw", SLICES + [{"start": 3, "step": 700}])
@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.bool_])
def test_iter_sorted_without_index_is_the_sort(kw, dtype, monkeypatch, tmp_path):
    from ndpack.engine.ops import mergesort
    monkeypatch.setattr(mergesort, "RUN_ITEMS", 1024)      # many runs merged
    x = (np.random.default_rng(4).random((60, 70)) * 100).astype(dtype)
    a = ndpack.asarray(x, chunks=(16, 70), urlpath=str(tmp_path / "a.b2nd"), mode="w")
    it = ndpack.iter_sorted(a, batch_size=500, **kw)
    got = np.array(list(it), dtype=dtype)
    want = np.sort(x, axis=None)[slice(kw.get("start"), kw.get("stop"), kw.get("step"))]
    np.testing.assert_array_equal(got, want)
    assert type(next(ndpack.iter_sorted(a))) is np.dtype(dtype).type
    a.create_index()                                    # n-d: the index's flat order
    np.testing.assert_array_equal(np.array(list(ndpack.iter_sorted(a, **kw)), dtype=dtype),
                                  want)


def test_iter_sorted_after_writes_and_bad_input():
    x = np.arange(100.0)[::-1].copy()
    a = ndpack.asarray(x, chunks=(10,))
    a.create_index()
    a[0] = -5.0                                         # dirty chunk: the sort runs
    x[0] = -5.0
    np.testing.assert_array_equal(list(ndpack.iter_sorted(a, stop=3)), np.sort(x)[:3])
    with pytest.raises(TypeError, match="NDArray"):
        ndpack.iter_sorted(x)
    with pytest.raises(ValueError, match="order"):
        ndpack.iter_sorted(a, order="f0")
    with pytest.raises(ValueError, match="step"):
        ndpack.iter_sorted(a, step=0)
    with pytest.raises(ValueError, match="batch_size"):
        ndpack.iter_sorted(a, batch_size=0)
    with pytest.raises(TypeError, match="complex"):
        ndpack.iter_sorted(ndpack.asarray(np.ones(3, complex)))
    assert list(ndpack.iter_sorted(ndpack.asarray(np.empty(0)))) == []


# ---------------------------------------------------------------------------------------
# NDField, estore_from_cframe

DT = np.dtype([("a", "f8"), ("b", "i4"), ("v", "f4", (2,))])


def _records(shape):
    x = np.zeros(shape, DT)
    n = int(np.prod(shape))
    x["a"] = np.arange(n).reshape(shape) * 0.5
    x["b"] = -np.arange(n).reshape(shape)
    x["v"] = np.arange(2 * n, dtype="f4").reshape(shape + (2,))
    return x


KEYS = [(), 3, np.s_[2:9], np.s_[::3, 1:6:2], np.s_[::-2, 4], np.s_[..., -1], np.s_[5:1]]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("field", ["a", "b", "v"])
def test_ndfield_reads_and_writes_like_numpy_and_python_blosc2(key, field):
    x = _records((11, 7))
    a = ndpack.asarray(x, chunks=(4, 3), blocks=(2, 3))
    b = blosc2.asarray(x, chunks=(4, 3), blocks=(2, 3))
    f, g = ndpack.NDField(a, field), blosc2.NDField(b, field)
    assert (f.shape, f.dtype) == (g.shape, g.dtype) and f.ndim == 2   # theirs: None
    # the key addresses the array's dimensions; a subarray field's come whole
    np.testing.assert_array_equal(f[key], x[key][field])
    if field != "v":
        np.testing.assert_array_equal(f[key], g[key])
    value = np.asarray(x[key][field]) * 3 + 1
    f[key] = value
    x[key][field] = value
    np.testing.assert_array_equal(a[()], x)           # the other fields untouched
    np.testing.assert_array_equal(np.asarray(f), x[field])


def test_ndfield_fancy_keys_broadcast_fields_and_errors(tmp_path):
    x = _records((20,))
    a = ndpack.asarray(x, chunks=(6,), urlpath=str(tmp_path / "r.b2nd"), mode="w")
    f = a.fields["b"]
    assert list(a.fields) == ["a", "b", "v"] and a.fields["a"].schunk is a.schunk
    np.testing.assert_array_equal(f[[1, 7, 19]], x["b"][[1, 7, 19]])
    f[[0, 13]] = 99
    f[15:] = 5                                         # a scalar broadcast
    x["b"][[0, 13]] = 99
    x["b"][15:] = 5
    np.testing.assert_array_equal(ndpack.open(str(tmp_path / "r.b2nd"))[()], x)
    np.testing.assert_array_equal(blosc2.open(str(tmp_path / "r.b2nd"))[:], x)
    assert list(f)[:2] == [99, -1] and len(f) == 20
    with pytest.raises(ValueError, match="broadcast"):
        f[0:3] = np.arange(4)
    assert ndpack.asarray(np.arange(3)).fields == {}
    for nd, bl in ((ndpack.asarray(x), blosc2.asarray(x)),
                   (ndpack.asarray(np.arange(3)), blosc2.asarray(np.arange(3)))):
        with pytest.raises(TypeError) as e1:
            blosc2.NDField(bl, "zz")
        with pytest.raises(TypeError) as e2:
            ndpack.NDField(nd, "zz")
        assert str(e1.value) == str(e2.value)
    ro = ndpack.open(str(tmp_path / "r.b2nd"), mode="r")
    with pytest.raises(Exception):
        ro.fields["a"][0] = 1.0


def test_estore_from_cframe_both_ways():
    es = ndpack.EmbedStore()
    es["/x"] = np.arange(5)
    es["/y"] = ndpack.linspace(0, 1, 7)
    theirs = blosc2.estore_from_cframe(es.to_cframe())
    assert sorted(theirs) == ["/x", "/y"]
    np.testing.assert_array_equal(theirs["/x"][:], np.arange(5))
    be = blosc2.EmbedStore()
    be["/z"] = np.arange(4.0)
    mine = ndpack.estore_from_cframe(be.to_cframe(), copy=True, deserialize="safe")
    np.testing.assert_array_equal(mine["/z"][:], np.arange(4.0))
    mine["/w"] = np.ones(2)                            # a copy: writable
    assert sorted(ndpack.estore_from_cframe(mine.to_cframe())) == ["/w", "/z"]
    assert sorted(ndpack.estore_from_cframe(bytes(be.to_cframe()),
                                            deserialize=blosc2.DeserializeMode.FULL)) == ["/z"]
    with pytest.raises(ValueError, match="deserialize"):
        ndpack.estore_from_cframe(be.to_cframe(), deserialize="pickle")
