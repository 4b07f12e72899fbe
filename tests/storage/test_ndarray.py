"""NDArray against NumPy: random shapes, layouts, dtypes and keys (hypothesis)."""

import numpy as np

import ndpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ndpack.codecs import SpecialValue
from ndpack.storage import (
    NDArray,
    arange,
    asarray,
    copy,
    empty,
    empty_like,
    frombuffer,
    full,
    full_like,
    linspace,
    nans,
    ndarray_from_cframe,
    ones,
    ones_like,
    uninit,
    zeros,
    zeros_like,
)
from ndpack.storage import open as nd_open

from tests.helpers import assert_eq

DTYPES = ["i1", "u2", "i4", "i8", "f4", "f8", "c16", "?", "S3", "U2", ">i4",
          [("a", "<i2"), ("b", "<f4")]]


@st.composite
def layouts(draw, max_nd=4, max_size=9):
    nd = draw(st.integers(0, max_nd))
    shape = tuple(draw(st.integers(0, max_size)) for _ in range(nd))
    chunks = tuple(draw(st.integers(1, max(s, 1) + 1)) for s in shape)
    blocks = tuple(draw(st.integers(1, c)) for c in chunks)
    return shape, chunks, blocks


def _slice_key(draw, n):
    kind = draw(st.sampled_from(["int", "slice", "slice", "full"]))
    if kind == "int" and n:
        return draw(st.integers(-n, n - 1))
    if kind == "full":
        return slice(None)
    start = draw(st.none() | st.integers(-n - 2, n + 2))
    stop = draw(st.none() | st.integers(-n - 2, n + 2))
    step = draw(st.none() | st.sampled_from([1, 2, 3, 5, -1, -2, -4]))
    return slice(start, stop, step)


@st.composite
def keys(draw, shape):
    key = [_slice_key(draw, n) for n in shape]
    if draw(st.booleans()) and key:
        cut = draw(st.integers(0, len(key)))
        key = key[:cut] + [Ellipsis]
    if draw(st.integers(0, 4)) == 0:
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


def _data(shape, dtype, seed=0):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    if dt.kind in "fc":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    if dt.kind == "U":
        return rng.choice(np.array(["", "a", "bc", "xyz"]), size=shape).astype(dt)
    return np.frombuffer(raw.tobytes(), dt).reshape(shape).copy()


@given(layouts(), st.sampled_from(DTYPES), st.data())
def test_getitem_matches_numpy(layout, dtype, data):
    shape, chunks, blocks = layout
    ref = _data(shape, dtype)
    a = asarray(ref, chunks=chunks, blocks=blocks)
    assert (a.shape, a.chunks, a.blocks, a.dtype) == (shape, chunks, blocks, ref.dtype)
    assert_eq(a[...], ref, bitwise=True)
    for _ in range(3):
        key = data.draw(keys(shape))
        assert_eq(a[key], np.asarray(ref[key], dtype=ref.dtype), bitwise=True)


@given(layouts(max_nd=3), st.sampled_from(DTYPES), st.data())
def test_setitem_matches_numpy(layout, dtype, data):
    shape, chunks, blocks = layout
    ref = _data(shape, dtype, 1)
    a = asarray(ref, chunks=chunks, blocks=blocks)
    for i in range(2):
        key = data.draw(keys(shape))
        sel_shape = ref[key].shape
        if data.draw(st.booleans()) and sel_shape:
            value = _data(sel_shape[-1:], dtype, i + 2)          # broadcast along rows
        else:
            value = _data(sel_shape, dtype, i + 2)
        ref[key] = value
        a[key] = value
        assert_eq(a[...], ref, bitwise=True)
    # padding stays zero and the array survives a frame round trip
    assert_eq(ndarray_from_cframe(a.to_cframe())[...], ref, bitwise=True)


@given(layouts(max_nd=3), st.data())
def test_resize_keeps_data(layout, data):
    shape, chunks, blocks = layout
    if 0 in shape:
        return
    ref = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) + 1
    a = asarray(ref, chunks=chunks, blocks=blocks)
    for _ in range(2):
        new = tuple(data.draw(st.integers(1, 12)) for _ in shape)
        a.resize(new)
        grown = np.zeros(new, np.int32)
        common = tuple(slice(0, min(x, y)) for x, y in zip(ref.shape, new))
        grown[common] = ref[common]
        ref = grown
        assert_eq(a[...], ref, bitwise=True)
        assert a.schunk.nchunks == int(np.prod([-(-s // c) for s, c in zip(new, chunks)]))


def test_setitem_cast_and_broadcast_across_chunks():
    a = zeros((7, 5), dtype="i4", chunks=(3, 2), blocks=(2, 1))
    a[1:6, 1:] = 2.7                     # float -> int, scalar broadcast
    a[:, 0] = np.arange(7)
    ref = np.zeros((7, 5), "i4")
    ref[1:6, 1:] = 2
    ref[:, 0] = np.arange(7)
    assert_eq(a[:], ref, bitwise=True)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        a[0, :] = np.arange(3)


def test_all_zero_chunks_become_special():
    a = asarray(np.arange(1, 17, dtype="f8").reshape(4, 4), chunks=(2, 2), blocks=(1, 2))
    assert all(i.special == SpecialValue.NOT_SPECIAL for i in a.iterchunks_info())
    a[:2, :2] = 0
    infos = list(a.iterchunks_info())
    assert infos[0].special == SpecialValue.ZERO and infos[0].coords == (0, 0)
    assert [i.special for i in infos[1:]] == [SpecialValue.NOT_SPECIAL] * 3


@pytest.mark.parametrize("make,special,expected", [
    (lambda **k: zeros((10, 6), "f8", **k), SpecialValue.ZERO, 0.0),
    (lambda **k: empty((10, 6), "f8", **k), SpecialValue.ZERO, 0.0),
    (lambda **k: uninit((10, 6), "f8", **k), SpecialValue.UNINIT, None),
    (lambda **k: nans((10, 6), "f4", **k), SpecialValue.NAN, np.nan),
    (lambda **k: full((10, 6), 2.5, **k), SpecialValue.VALUE, 2.5),
    (lambda **k: ones((10, 6), "i2", **k), SpecialValue.VALUE, 1),
])
def test_special_constructors_store_no_data(tmp_path, make, special, expected):
    a = make(chunks=(4, 4), blocks=(2, 2), urlpath=tmp_path / "s.b2nd", mode="w")
    assert a.schunk.nchunks == 6
    assert {i.special for i in a.iterchunks_info()} == {special}
    assert a.cbytes <= 6 * 40                     # headers only
    if expected is not None:
        np.testing.assert_array_equal(a[...], np.full((10, 6), expected, a.dtype))
    b = nd_open(tmp_path / "s.b2nd", mode="a")
    assert isinstance(b, NDArray) and b.shape == (10, 6)
    b[9, 5] = 3
    assert nd_open(tmp_path / "s.b2nd", mode="r")[9, 5] == 3


def test_like_constructors_and_copy():
    a = arange(24, shape=(4, 6), chunks=(2, 4), blocks=(1, 2))
    for b in (empty_like(a), zeros_like(a), ones_like(a, dtype="f4"), full_like(a, 9)):
        assert b.shape == a.shape and (b.chunks, b.blocks) == (a.chunks, a.blocks)
    assert ones_like(a, dtype="f4")[0, 0] == 1 and full_like(a, 9)[3, 5] == 9
    a.vlmeta["v"] = [1, "x"]
    c = copy(a)
    assert c.vlmeta["v"] == [1, "x"]
    c[0, 0] = 100
    assert a[0, 0] == 0 and c[0, 0] == 100
    d = a.copy(dtype="f8", chunks=(3, 3), blocks=(3, 1))
    assert_eq(d[...], np.arange(24.).reshape(4, 6), bitwise=True)
    assert_eq(a.T[...], np.arange(24).reshape(4, 6).T, bitwise=True)
    s = a.slice((slice(3, 0, -1), None, slice(1, 6, 2)))
    assert_eq(s[...], np.arange(24).reshape(4, 6)[3:0:-1, None, 1:6:2], bitwise=True)


def test_arange_linspace_frombuffer():
    assert_eq(arange(3, 50, 4, chunks=(5,), blocks=(2,))[...], np.arange(3, 50, 4),
              bitwise=True)
    assert_eq(arange(10, -7, -3)[...], np.arange(10, -7, -3), bitwise=True)
    np.testing.assert_allclose(arange(0.5, 3.0, 0.1)[...], np.arange(0.5, 3.0, 0.1))
    assert_eq(arange(60, shape=(3, 4, 5), chunks=(2, 3, 2), blocks=(1, 2, 2))[...],
              np.arange(60).reshape(3, 4, 5), bitwise=True)
    for args in [(0, 1, 11), (-3, 7, 50, False), (2, 2, 1), (1, 5, 0)]:
        np.testing.assert_array_equal(
            linspace(*args[:3], endpoint=args[3] if len(args) > 3 else True)[...],
            np.linspace(*args[:3], endpoint=args[3] if len(args) > 3 else True))
    assert_eq(frombuffer(bytes(range(24)), (2, 3), dtype="<i4")[...],
              np.frombuffer(bytes(range(24)), "<i4").reshape(2, 3), bitwise=True)


def test_zero_d_and_zero_size():
    a = asarray(np.float32(3.5))
    assert a.shape == () and a.ndim == 0 and a.schunk.nchunks == 1
    assert a[()].shape == () and float(a[()]) == 3.5
    a[()] = 1
    assert float(np.asarray(a)) == 1.0
    with pytest.raises(TypeError, match="0-d"):
        len(a)
    z = zeros((3, 0, 2), "i4")
    assert z.schunk.nchunks == 0 and z[...].shape == (3, 0, 2)
    assert z[1:, :, 1].shape == (2, 0)
    z[...] = 5                                   # nothing to write


def test_protocols():
    ref = np.arange(10).reshape(5, 2)
    a = asarray(ref, chunks=(2, 2), blocks=(1, 1))
    assert len(a) == 5 and [x.tolist() for x in a] == ref.tolist()
    assert np.asarray(a, dtype="f4").dtype == np.float32
    assert "NDArray" in repr(a) and "chunks" in a.info
    assert a.size == 10 and a.nbytes == 80 and a.cratio > 0 and a.ext_shape == (6, 2)
    assert a.get_chunk(0)[:1] in (b"\x05", b"\x04")


def test_bad_input_names_the_value(tmp_path):
    with pytest.raises(ValueError, match=r"blocks \(5, 1\) are larger than chunks \(4, 4\)"):
        zeros((10, 10), chunks=(4, 4), blocks=(5, 1))
    with pytest.raises(ValueError, match="-3"):
        zeros((10, -3))
    with pytest.raises(ValueError, match=r"chunks \(4,\) has 1 dimensions"):
        zeros((10, 10), chunks=(4,), blocks=(2,))
    a = arange(10)
    with pytest.raises(IndexError, match="index 10 is out of bounds"):
        a[10]
    with pytest.raises(IndexError, match="index -11"):
        a[-11] = 0
    with pytest.raises(IndexError, match="too many indices"):
        a[1, 2]
    with pytest.raises(TypeError, match="'x'"):
        a["x"]
    with pytest.raises(ValueError, match=r"new shape \(3, 3\) has 2 dimensions"):
        a.resize((3, 3))
    with pytest.raises(ValueError, match="negative"):
        a.resize((-1,))
    with pytest.raises(ValueError, match="floating-point"):
        nans(3, dtype="i4")
    with pytest.raises(TypeError, match="object"):
        asarray(np.array([1, None], dtype=object))
    zeros(3, urlpath=tmp_path / "x.b2nd")
    with pytest.raises(FileExistsError, match="x.b2nd"):
        zeros(3, urlpath=tmp_path / "x.b2nd")
    r = nd_open(tmp_path / "x.b2nd", mode="r")
    with pytest.raises(ValueError, match="mode 'r'"):
        r[0] = 1


class _Spy:
    def __init__(self, monkeypatch):
        import ndpack.chunks as mod
        import ndpack.storage.ndarray
        import ndpack.storage.ndread
        self.whole, self.blocks = [], []
        real_whole, real_blocks, real_items = mod.decompress2, mod.decompress_blocks, \
            mod.getitems

        def items(src, starts, counts, *a, **k):
            # runs of items read from the blocks that hold them (recorded as those blocks)
            info = mod.chunk_info(src)
            per = max(info["blocksize"] // info["typesize"], 1)
            self.blocks.append(sorted({int(s) // per for s in starts}))
            return real_items(src, starts, counts, *a, **k)

        def whole(src, *a, **k):
            self.whole.append(1)
            return real_whole(src, *a, **k)

        def blocks(src, ids, *a, **k):
            self.blocks.append(list(ids))
            return real_blocks(src, ids, *a, **k)

        for user in (ndpack.storage.ndarray, ndpack.storage.ndread):   # where decoding happens
            for name, fn in (("decompress2", whole), ("decompress_blocks", blocks),
                             ("getitems", items)):
                if hasattr(user, name):
                    monkeypatch.setattr(user, name, fn)


def test_reads_decode_only_touched_chunks_and_blocks(monkeypatch):
    from ndpack.storage import ndread
    monkeypatch.setattr(ndread, "BOX_SLICES", False)        # the chunk-by-chunk path
    ref = np.arange(24 * 30, dtype="i4").reshape(24, 30)
    a = asarray(ref, chunks=(8, 10), blocks=(2, 5))         # 3x3 chunks, 4x2 blocks each
    spy = _Spy(monkeypatch)
    assert_eq(a[3, 12], ref[3, 12], bitwise=True)
    assert spy.whole == [] and spy.blocks == [[2]]          # block (1, 0) of chunk (0, 1)
    assert_eq(a[0:2, 0:10], ref[0:2, 0:10], bitwise=True)
    assert spy.blocks[-1] == [0, 1]
    assert_eq(a[:8, :10], ref[:8, :10], bitwise=True)      # whole chunk: plain decode
    assert spy.whole == [1]
    spy.blocks.clear()
    # rows 1 | 8, 15 | 22 of chunk rows 0 | 1 | 2
    assert_eq(a[1:23:7, 4], ref[1:23:7, 4], bitwise=True)
    assert sorted(spy.blocks) == [[0], [0, 6], [6]]         # chunks decode in parallel


def test_special_chunks_answer_without_decoding(monkeypatch):
    a = full((20, 20), 3, dtype="i2", chunks=(10, 10), blocks=(5, 5))
    z = zeros((20, 20), chunks=(10, 10), blocks=(5, 5))
    spy = _Spy(monkeypatch)
    assert a[3:17, 2].tolist() == [3] * 14 and z[5, 5] == 0
    assert spy.whole == [] and spy.blocks == []


def test_writes_touch_only_their_chunks(monkeypatch):
    a = arange(100, shape=(10, 10), chunks=(5, 5), blocks=(5, 5))
    seen = []
    real = a.schunk.update_chunk
    monkeypatch.setattr(a.schunk, "update_chunk", lambda n, c: (seen.append(n), real(n, c)))
    a[6:8, 1:3] = -1
    assert seen == [2]
    a[4:6, 4:6] = 0
    assert sorted(seen[1:]) == [0, 1, 2, 3]


def test_save_open_sparse_and_properties(tmp_path):
    ref = np.linspace(0, 1, 35).reshape(5, 7)
    a = asarray(ref, chunks=(2, 3), blocks=(1, 2), meta={"units": "m"})
    a.vlmeta["note"] = "x"
    a.save(tmp_path / "a.b2nd")
    b = nd_open(tmp_path / "a.b2nd", mode="r")
    assert_eq(b[...], ref, bitwise=True)
    assert b.meta["units"] == "m" and b.vlmeta["note"] == "x"
    a.save(tmp_path / "s.b2nd", contiguous=False)
    c = nd_open(tmp_path / "s.b2nd", mode="a")
    assert_eq(c[...], ref, bitwise=True)
    assert c.vlmeta["note"] == "x" and c.meta["units"] == "m" and not c.schunk.contiguous
    c[0] = 7
    assert nd_open(tmp_path / "s.b2nd")[0, 6] == 7
    assert a.chunksize == 2 * 4 * 8 and a.blocksize == 2 * 8 and a.urlpath is None
    assert b.urlpath == str(tmp_path / "a.b2nd")


def test_resize_through_zero_and_zero_chunks():
    a = asarray(np.ones((3, 5)), chunks=(2, 5), blocks=(1, 5))
    a.resize((0, 5))
    assert a.schunk.nchunks == 0 and a[...].shape == (0, 5)
    a.resize((3, 5))
    assert_eq(a[...], np.zeros((3, 5)), bitwise=True)
    f = full((5, 3), 7, chunks=(2, 2), blocks=(1, 1))     # value chunks: padding holds 7
    f.resize((7, 4))
    expected = np.zeros((7, 4), int)
    expected[:5, :3] = 7
    assert_eq(f[...], expected, bitwise=True)
    with pytest.raises(ValueError, match=r"zero-sized chunks \(0, 5\)"):
        zeros((0, 5)).resize((3, 5))


def test_asarray_reads_foreign_objects_chunk_by_chunk():
    ref = np.arange(3 * 50 * 40, dtype="u2").reshape(3, 50, 40)

    class Foreign:                      # h5py/zarr-like: shape, dtype, __getitem__
        shape, dtype = ref.shape, ref.dtype
        largest = 0

        def __getitem__(self, key):
            out = ref[key]
            Foreign.largest = max(Foreign.largest, out.size)
            return out

    a = asarray(Foreign(), chunks=(1, 20, 40), blocks=(1, 5, 8))
    assert_eq(a[...], ref, bitwise=True)
    assert Foreign.largest == 20 * 40                  # one chunk at a time
    assert_eq(np.asarray(a, copy=True), ref, bitwise=True)


# --- eye, fromiter, save/load, append --------------------------------------------------

@pytest.mark.parametrize("n,m,k", [(5, 5, 0), (4, 7, 2), (7, 4, -3), (3, 3, 5)])
def test_eye_matches_numpy(n, m, k):
    a = ndpack.eye(n, m, k=k, dtype=np.int16, chunks=(2, 3), blocks=(1, 2))
    np.testing.assert_array_equal(a[:], np.eye(n, m, k=k, dtype=np.int16))


def test_fromiter_matches_numpy():
    ref = np.arange(7 * 5 * 3, dtype=np.float32).reshape(7, 5, 3)
    a = ndpack.fromiter(iter(ref.ravel().tolist()), ref.shape, np.float32, chunks=(3, 2, 3))
    np.testing.assert_array_equal(a[:], ref)
    with pytest.raises(ValueError):
        ndpack.fromiter(iter(range(5)), (10,), np.int64)   # iterable too short


def test_save_load_roundtrip(tmp_path):
    a = ndpack.asarray(np.arange(100.0).reshape(10, 10), chunks=(4, 4), blocks=(2, 2))
    a.vlmeta["units"] = "K"
    for contiguous in (True, False):
        path = tmp_path / f"s{contiguous}.b2nd"
        ndpack.save(a, path, contiguous=contiguous)
        b = ndpack.load(path)
        assert b.urlpath is None and b.vlmeta["units"] == "K"
        np.testing.assert_array_equal(b[:], a[:])
        ndpack.save(a, path, contiguous=contiguous)          # overwrite
        np.testing.assert_array_equal(ndpack.open(path)[:], a[:])


def test_append_1d_and_interop(tmp_path):
    blosc2 = pytest.importorskip("blosc2")
    path = tmp_path / "ap.b2nd"
    a = ndpack.asarray(np.arange(10), chunks=(4,), blocks=(2,), urlpath=path, mode="w")
    assert a.append(np.array([100, 101, 102])) == 13
    np.testing.assert_array_equal(a[:], np.r_[np.arange(10), 100, 101, 102])
    np.testing.assert_array_equal(blosc2.open(str(path))[:], a[:])
    with pytest.raises(ValueError, match="1-D"):
        ndpack.zeros((2, 2)).append([1])


def test_more_than_2_31_elements():
    """Shapes past 2**31 elements: indices, chunk numbers and block offsets stay 64-bit
    (zero chunks are special, so nothing big is allocated)."""
    n = 2**31 + 1000
    a = ndpack.zeros((n,), dtype=np.int8, chunks=(2**28,), blocks=(2**20,))
    assert a.size == n and a.schunk.nchunks == 9
    a[n - 10:] = np.arange(1, 11, dtype=np.int8)
    a[2**31 - 1:2**31 + 1] = [5, 6]
    assert a[n - 12:].tolist() == [0, 0] + list(range(1, 11))
    assert a[2**31 - 2:2**31 + 2].tolist() == [0, 5, 6, 0]
    assert a[-1] == 10 and a[2**31] == 6
    assert (a + 1)[n - 3:].tolist() == [9, 10, 11]          # engine, region path
    b = ndpack.zeros((50_000, 50_000), dtype=np.uint8, chunks=(10_000, 10_000),
                     blocks=(1000, 1000))
    b[49_999, 49_999] = 7
    b[45_000, 10] = 3                                        # flat index 2_250_000_010
    assert b.size > 2**31
    assert b[49_998:, 49_998:].tolist() == [[0, 0], [0, 7]]
    assert int(ndpack.sum(b)) == 10 and int(ndpack.argmax(b)) == 49_999 * 50_000 + 49_999


def test_metalayer_disagreeing_with_the_superchunk(tmp_path):
    """A b2nd metalayer that does not fit the super-chunk is a FormatError on open."""
    from ndpack.storage.grid import encode_b2nd
    a = ndpack.asarray(np.arange(30.0), chunks=(10,), blocks=(5,), urlpath=tmp_path / "x.b2nd",
                       mode="w")
    fake = encode_b2nd((10,), (10,), (5,), np.dtype("f8"))     # one chunk, 3 stored
    assert len(fake) == len(a.schunk.meta.get_raw("b2nd"))
    a.schunk.meta._writer("b2nd", fake)                         # a corrupt file, made here
    a.schunk.close()
    with pytest.raises(ndpack.FormatError, match="1 chunks, the super-chunk holds 3"):
        ndpack.open(tmp_path / "x.b2nd")
    b = ndpack.asarray(np.arange(30.0), chunks=(10,), blocks=(5,), urlpath=tmp_path / "y.b2nd",
                       mode="w")
    fake = encode_b2nd((15,), (5,), (5,), np.dtype("f8"))      # 40-byte chunks, 80 stored
    b.schunk.meta._writer("b2nd", fake)
    b.schunk.close()
    with pytest.raises(ndpack.FormatError, match="bytes"):
        ndpack.open(tmp_path / "y.b2nd")
