"""python-blosc2 behaviours users rely on (issue 39), with python-blosc2 itself as the
oracle: fromiter(c_order=False), the NDArray methods reshape/sort/argsort, structured
sorts with order=, LazyExpr.expression, info_items, vlmeta keys, decompress forms."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ndpack

blosc2 = pytest.importorskip("blosc2")


@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), data=st.data())
def test_fromiter_in_chunk_order(shape, data):
    chunks = tuple(data.draw(st.integers(1, s)) for s in shape)
    blocks = tuple(data.draw(st.integers(1, c)) for c in chunks)
    n = int(np.prod(shape))
    kw = dict(shape=tuple(shape), dtype="i4", c_order=False, chunks=chunks, blocks=blocks)
    want = blosc2.fromiter(iter(range(n)), **kw)[...]
    got = ndpack.fromiter(iter(range(n)), **kw)
    np.testing.assert_array_equal(got[...], want)
    c = ndpack.fromiter(iter(range(n)), **dict(kw, c_order=True))
    np.testing.assert_array_equal(c[...], np.arange(n).reshape(shape))


def test_ndarray_methods_reshape_sort_argsort():
    x = np.array([[3, 1, 2], [9, 7, 8]])
    a, b = ndpack.asarray(x), blosc2.asarray(x)
    np.testing.assert_array_equal(a.argsort()[...], b.argsort()[...])
    np.testing.assert_array_equal(a.sort()[...], np.sort(x))   # python-blosc2 4.14.1
    r = a.reshape((3, 2))                                      # leaves 2-d data unsorted
    assert isinstance(r, ndpack.NDArray)
    np.testing.assert_array_equal(r[...], x.reshape(3, 2))
    v = ndpack.asarray(np.arange(6))
    np.testing.assert_array_equal(v.reshape((2, 3))[...],
                                  blosc2.asarray(np.arange(6)).reshape((2, 3))[...])


_DT = np.dtype([("a", "i4"), ("b", "f8"), ("c", "u1")])


@given(rows=st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.5, 1.0, 2.0]),
                               st.integers(0, 2)), min_size=1, max_size=12),
       order=st.sampled_from([["a", "b"], ["b", "a"], ["a", "b", "c"], ["c", "a", "b"]]))
def test_structured_argsort_by_fields(rows, order):
    x = np.array(rows, dtype=_DT)
    want = blosc2.argsort(blosc2.asarray(x), order=order)[...]
    got = ndpack.argsort(ndpack.asarray(x), order=order)
    np.testing.assert_array_equal(got[...], want)
    np.testing.assert_array_equal(ndpack.asarray(x).sort(order=order)[...],
                                  np.sort(x, order=order))
    np.testing.assert_array_equal(ndpack.sort(ndpack.asarray(x))[...], np.sort(x))


def test_order_needs_fields():
    with pytest.raises(ValueError, match="structured"):
        ndpack.sort(ndpack.asarray(np.arange(3)), order="a")
    with pytest.raises(ValueError, match="no field"):
        ndpack.argsort(ndpack.asarray(np.zeros(3, _DT)), order="z")


def test_lazyexpr_expression_round_trips():
    x, y = np.arange(5.0), np.linspace(1, 2, 5)
    a, b = ndpack.asarray(x), ndpack.asarray(y)
    for e in (ndpack.sin(a) + 2 * b - a, ndpack.lazyexpr("a * b + 1", operands={"a": a, "b": b}),
              (a > 2) & (b < 1.5), ndpack.where(a > 1, a, b) ** 2):
        assert isinstance(e.expression, str)
        again = ndpack.lazyexpr(e.expression, operands=e.operands)
        np.testing.assert_array_equal(again[()], e[()])
        # python-blosc2 evaluates the same text over the same operands
        theirs = blosc2.lazyexpr(e.expression, operands={k: blosc2.asarray(v[()])
                                                         for k, v in e.operands.items()})
        np.testing.assert_allclose(theirs[()], e[()])


def test_info_items_as_python_blosc2():
    data = np.arange(1000, dtype="i8")
    for mine, theirs in ((ndpack.SChunk(chunksize=800, data=data),
                          blosc2.SChunk(chunksize=800, data=data)),
                         (ndpack.asarray(data.reshape(10, 100), chunks=(5, 50), blocks=(5, 10)),
                          blosc2.asarray(data.reshape(10, 100), chunks=(5, 50), blocks=(5, 10)))):
        m, t = dict(mine.info_items), dict(theirs.info_items)
        assert list(m) == list(t)
        for k in ("type", "chunksize", "typesize", "shape", "chunks", "blocks", "dtype",
                  "nbytes"):
            if k in t:
                assert m[k] == t[k], k
        assert m["cratio"].endswith("x") and m["cbytes"].split()[0].isdigit()
        assert mine.info.splitlines()[0].split(":")[1].strip() == t["type"]


def test_vlmeta_keys_as_python_blosc2():
    for m in (ndpack, blosc2):
        s = m.SChunk(chunksize=80)
        s.vlmeta["k"] = 1
        s.vlmeta[b"k2"] = [1, 2]
        assert list(s.vlmeta.keys()) == ["k", "k2"]
        assert s.vlmeta[b"k"] == 1 and s.vlmeta["k2"] == [1, 2]
        assert b"k2" in s.vlmeta and "k2" in s.vlmeta
        del s.vlmeta[b"k2"]
        assert list(s.vlmeta) == ["k"]


@pytest.mark.parametrize("ext", ["b2z", "b2d"])
@pytest.mark.parametrize("threshold", [0, None])
def test_dictstore_map_tree_storage_and_foreign_members(tmp_path, ext, threshold):
    """map_tree/storage as python-blosc2's; members that are python-blosc2 containers
    ndpack lacks (BatchArray, ObjectArray) are refused by name, never opened as
    SChunks; the arrays beside them open."""
    path = str(tmp_path / f"s.{ext}")
    with blosc2.DictStore(path, mode="w", threshold=threshold) as s:
        s["/a"] = np.arange(3)
        s["/g/b"] = np.arange(4.0)
        batch = blosc2.BatchArray()
        batch.append([1, 2])
        s["/batch"] = batch
        obj = blosc2.ObjectArray()
        obj.append({"k": 1})
        s["/obj"] = obj
        tree, storage = s.map_tree, s.storage
    with ndpack.DictStore(path, mode="r") as s:
        assert s.map_tree == tree
        assert (s.storage.contiguous, s.storage.urlpath, s.storage.meta) == \
            (storage.contiguous, storage.urlpath, storage.meta)
        np.testing.assert_array_equal(s["/a"][()], np.arange(3))
        np.testing.assert_array_equal(s["/g/b"][()], np.arange(4.0))
        for key, name in (("/batch", "BatchArray"), ("/obj", "ObjectArray")):
            with pytest.raises(TypeError, match=f"python-blosc2 {name}"):
                s[key]


@pytest.fixture
def keep_compressor():
    """python-blosc2's compress() sets its global compressor to the codec it used."""
    before = blosc2.get_compressor()
    yield
    blosc2.set_compressor(getattr(blosc2.Codec, before.upper()))


def test_decompress_forms_and_refusals(keep_compressor):
    """decompress/decompress2 take bytes, memoryviews and arrays as src and a
    writable dst (bytearray, NumPy, memoryview: filled, None returned), as
    python-blosc2; a too-small or read-only dst and a corrupt src are refused (ValueError
    and BufferError) where python-blosc2 raises RuntimeError, returns None after a
    partial write, or writes into immutable bytes."""
    x = np.arange(100, dtype="i4")
    for m in (ndpack, blosc2):
        c, c2 = m.compress(x.tobytes(), typesize=4), m.compress2(x.tobytes(), typesize=4)
        assert m.decompress(c) == x.tobytes() == m.decompress(memoryview(c))
        assert m.decompress(np.frombuffer(c, np.uint8)) == x.tobytes()
        assert isinstance(m.decompress(c, as_bytearray=True), bytearray)
        for dst in (bytearray(400), np.empty(100, "i4"), memoryview(bytearray(400))):
            assert m.decompress(c, dst=dst) is None
            assert bytes(dst) == x.tobytes()
            d2 = np.empty(100, "i4")
            assert m.decompress2(c2, dst=d2) is None and np.array_equal(d2, x)
        assert m.decompress2(c2, dparams=m.DParams(nthreads=1)) == x.tobytes()
        assert m.decompress2(c2, nthreads=1) == x.tobytes()
        with pytest.raises(TypeError):
            m.decompress("abc")
    c = ndpack.compress(x.tobytes(), typesize=4)
    with pytest.raises(ValueError):
        ndpack.decompress(c, dst=bytearray(10))
    with pytest.raises(ValueError):
        ndpack.decompress2(ndpack.compress2(x.tobytes()), dst=bytearray(10))
    with pytest.raises(ValueError):
        ndpack.decompress(b"garbage data here")
    with pytest.raises(BufferError):
        ndpack.decompress(c, dst=bytes(400))
