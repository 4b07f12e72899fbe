"""Frames written by ndpack open, decode and grow in python-blosc2, and vice versa."""

import gc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ndpack

blosc2 = pytest.importorskip("blosc2")

N_ITEMS = 64                          # int32 items per chunk


def data(i):
    if i % 7 == 3:
        return np.zeros(N_ITEMS, np.int32)                      # special zeros chunk
    return (np.arange(N_ITEMS, dtype=np.int32) * (i % 13 + 1) + i).astype(np.int32)


def build(lib, path, nchunks, contiguous, edits):
    """Write an SChunk with `lib` (ndpack or blosc2); returns the list-of-chunks model."""
    s = lib.SChunk(chunksize=N_ITEMS * 4, cparams={"typesize": 4, "nthreads": 1},
                   urlpath=str(path), contiguous=contiguous, mode="w")
    model = []
    for i in range(nchunks):
        s.append_data(data(i))
        model.append(data(i))
    if edits:
        s.insert_data(nchunks // 2, data(100), True)
        model.insert(nchunks // 2, data(100))
        s.delete_chunk(0)
        del model[0]
        s.update_data(len(model) - 1, data(101), True)
        model[-1] = data(101)
        if len(model) > 2:
            s.update_data(1, np.zeros(N_ITEMS, np.int32), True)
            model[1] = np.zeros(N_ITEMS, np.int32)
    s.vlmeta["name"] = "interop"
    s.vlmeta["shape"] = (len(model), N_ITEMS)
    del s
    gc.collect()
    return model


CASES = [(n, c, e) for n in (1, 9, 10, 1000) for c in (True, False) for e in (False, True)]
IDS = [f"n{n}-{'cframe' if c else 'sframe'}{'-edited' if e else ''}" for n, c, e in CASES]


@pytest.mark.parametrize("nchunks,contiguous,edits", CASES, ids=IDS)
def test_ndpack_written_blosc2_reads(tmp_path, nchunks, contiguous, edits):
    path = tmp_path / "nd.b2frame"
    model = build(ndpack, path, nchunks, contiguous, edits)
    b = blosc2.open(str(path), mode="a")
    assert b.nchunks == len(model)
    assert b[:] == np.concatenate(model).tobytes()
    assert b.vlmeta["name"] == "interop" and b.vlmeta["shape"] == (len(model), N_ITEMS)
    b.append_data(data(5))
    b.vlmeta["after"] = 1
    del b
    gc.collect()
    s = ndpack.open(path, mode="a")
    model.append(data(5))
    assert s.nchunks == len(model) and s[:] == np.concatenate(model).tobytes()
    assert s.vlmeta.getall()["after"] == 1
    s.append_data(data(6))
    s.close()
    model.append(data(6))
    b = blosc2.open(str(path), mode="r")
    assert b[:] == np.concatenate(model).tobytes()


@pytest.mark.parametrize("nchunks,contiguous,edits", CASES, ids=IDS)
def test_blosc2_written_ndpack_reads(tmp_path, nchunks, contiguous, edits):
    path = tmp_path / "b2.b2frame"
    model = build(blosc2, path, nchunks, contiguous, edits)
    s = ndpack.open(path, mode="a")
    assert s.nchunks == len(model)
    assert s[:] == np.concatenate(model).tobytes()
    assert s.vlmeta.getall() == {"name": "interop", "shape": (len(model), N_ITEMS)}
    s.append_data(data(5))
    s.update_data(0, data(6))
    s.vlmeta["after"] = [1, 2]
    s.close()
    model.append(data(5))
    model[0] = data(6)
    b = blosc2.open(str(path), mode="a")
    assert b.nchunks == len(model) and b[:] == np.concatenate(model).tobytes()
    assert b.vlmeta["after"] == [1, 2]
    b.append_data(data(7))
    del b
    gc.collect()
    model.append(data(7))
    assert ndpack.open(path, mode="r")[:] == np.concatenate(model).tobytes()


def test_cframe_bytes_both_ways():
    s = ndpack.SChunk(chunksize=256, cparams={"typesize": 4}, meta={"m": [1, 2, 3]})
    for i in range(12):
        s.append_data(data(i))
    s.vlmeta["v"] = {"a": (1, 2)}
    b = blosc2.schunk_from_cframe(s.to_cframe(), copy=True)
    assert b[:] == s[:] and b.vlmeta["v"] == {"a": (1, 2)} and b.meta["m"] == [1, 2, 3]
    t = ndpack.schunk_from_cframe(b.to_cframe())
    assert t[:] == s[:] and t.vlmeta["v"] == {"a": (1, 2)} and t.meta["m"] == [1, 2, 3]


def test_fill_special_and_variable_interop(tmp_path):
    p = tmp_path / "fs.b2frame"
    s = ndpack.SChunk(chunksize=400, cparams={"typesize": 4}, urlpath=p, mode="w")
    s.fill_special(1000, ndpack.SpecialValue.NAN)
    s.close()
    b = blosc2.open(str(p))
    assert np.isnan(np.frombuffer(b[:], np.float32)).all() and len(b) == 1000
    # Variable-size frames are not checked against python-blosc2: 4.14.1 dies with SIGFPE
    # opening any of them from disk, its own vectors/frames/schunk_varlen.b2frame included.


# --- pack/unpack helpers (ndpack.storage.serialize) --------------------------------------

ARRAYS = [np.arange(1000, dtype=np.float32).reshape(10, 100), np.zeros((0, 3)),
          np.array(3.0), np.arange(24, dtype=">i2").reshape(2, 3, 4),
          np.zeros(5, dtype=[("a", "<i4"), ("b", "<f8")]),
          np.asfortranarray(np.arange(6.0).reshape(2, 3))]


@pytest.mark.parametrize("arr", ARRAYS, ids=lambda a: f"{a.dtype}{a.shape}")
def test_pack_array2_both_ways(arr):
    got = ndpack.unpack_array2(ndpack.pack_array2(arr))
    assert got.dtype == arr.dtype and got.shape == arr.shape and np.array_equal(got, arr)
    theirs = blosc2.unpack_array2(ndpack.pack_array2(arr))
    assert theirs.dtype == arr.dtype and np.array_equal(theirs, arr)
    if arr.flags.c_contiguous:                 # python-blosc2 refuses Fortran order
        ours = ndpack.unpack_array2(blosc2.pack_array2(arr))
        assert ours.dtype == arr.dtype and np.array_equal(ours, arr)


def test_pack_array2_chunks_and_files(tmp_path):
    a = np.arange(10_000, dtype=np.int64)
    frame = ndpack.pack_array2(a, chunksize=8 * 1000, cparams={"codec": ndpack.Codec.LZ4})
    s = ndpack.schunk_from_cframe(frame)
    assert s.nchunks == 10 and s.cparams.codec == ndpack.Codec.LZ4
    assert np.array_equal(blosc2.unpack_array2(frame), a)
    p = tmp_path / "a.b2frame"
    n = ndpack.save_array(a, p)
    assert n == p.stat().st_size
    assert np.array_equal(blosc2.load_array(str(p)), a)
    blosc2.save_array(a * 2, str(p), mode="w")
    assert np.array_equal(ndpack.load_array(p), a * 2)
    assert np.array_equal(ndpack.load_tensor(p), a * 2)
    with pytest.raises(ndpack.FormatError, match="__pack_tensor__"):
        ndpack.unpack_array2(ndpack.SChunk(chunksize=8, data=b"x" * 16).to_cframe())
    with pytest.raises(TypeError):
        ndpack.pack_array2([1, 2])


def test_pack_unpack_both_ways():
    a = np.arange(100, dtype=np.int16)
    assert np.array_equal(blosc2.unpack(ndpack.pack(a)), a)
    assert np.array_equal(ndpack.unpack(blosc2.pack(a)), a)
    p = ndpack.pack(a, clevel=3, codec=ndpack.Codec.LZ4, filter=ndpack.Filter.BITSHUFFLE)
    info = ndpack.chunk_info(p)
    assert info["typesize"] == 2 and info["compcode"] == 1
    with pytest.raises(TypeError):
        ndpack.pack({"no": "itemsize"})


# --- random edit sequences written by ndpack must stay valid for python-blosc2 -----------

edit_ops = st.lists(st.tuples(st.sampled_from(["append", "insert", "update", "delete"]),
                              st.integers(0, 40), st.integers(0, 20)), min_size=1, max_size=15)


@pytest.mark.parametrize("contiguous", [True, False], ids=["cframe", "sframe"])
@settings(max_examples=10)
@given(seq=edit_ops)
def test_random_edits_readable_by_blosc2(tmp_path_factory, contiguous, seq):
    path = tmp_path_factory.mktemp("rnd") / "r.b2frame"
    s = ndpack.SChunk(chunksize=N_ITEMS * 4, cparams={"typesize": 4}, urlpath=path,
                      contiguous=contiguous, mode="w")
    model = []
    for op, pos, val in seq:
        d = data(val)
        if op == "append" or not model:
            s.append_data(d)
            model.append(d)
        elif op == "insert":
            i = pos % (len(model) + 1)
            s.insert_data(i, d)
            model.insert(i, d)
        elif op == "update":
            i = pos % len(model)
            s.update_data(i, d)
            model[i] = d
        else:
            i = pos % len(model)
            s.delete_chunk(i)
            del model[i]
    s.close()
    b = blosc2.open(str(path), mode="a")
    assert b.nchunks == len(model)
    assert b[:] == (np.concatenate(model).tobytes() if model else b"")
    b.append_data(data(1))
    del b
    gc.collect()
    model.append(data(1))
    assert ndpack.open(path, mode="r")[:] == np.concatenate(model).tobytes()


def test_meta_and_vlmeta_edits_on_disk(tmp_path):
    p = tmp_path / "m.b2frame"
    b = blosc2.SChunk(chunksize=256, cparams={"typesize": 4}, urlpath=str(p), mode="w",
                      meta={"shape": (64,), "kind": "test"})
    b.append_data(data(0))
    b.vlmeta["a"] = 1
    b.vlmeta["b"] = "two"
    del b.vlmeta["a"]
    del b
    gc.collect()
    s = ndpack.open(p, mode="a")
    assert s.meta.getall() == {"shape": (64,), "kind": "test"}
    assert s.vlmeta.getall() == {"b": "two"}
    s.meta["kind"] = "TEST"                       # same encoded length
    s.vlmeta["c"] = [1.5]
    del s.vlmeta["b"]
    s.close()
    b = blosc2.open(str(p))
    assert b.meta["kind"] == "TEST" and b.meta["shape"] == (64,)
    assert b.vlmeta.getall() == {"c": [1.5]}


VL_VALUES = {"s": "x", "b": b"\x00\x01", "i": -5, "big": 2**40, "f": 1.5, "n": None,
             "t": True, "c": 1 + 2j, "set": {1, 2}, "tup": (1, (2, "z")), "l": [1, [2]],
             "d": {"a": (1, 2.5)}, "np": np.float32(1.5), "arr": np.arange(6.0).reshape(2, 3),
             "rec": np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])}


@pytest.mark.parametrize("key", list(VL_VALUES))
def test_vlmeta_encoding_matches_python_blosc2(key):
    from ndpack.storage.meta import packb

    value = VL_VALUES[key]
    b = blosc2.SChunk(chunksize=256)
    b.vlmeta[key] = value
    assert packb(value) == b.vlmeta.get_vlmeta(key)
    got = ndpack.schunk_from_cframe(b.to_cframe()).vlmeta[key]
    if isinstance(value, np.ndarray):
        assert got.dtype == value.dtype and np.array_equal(got, value)
    else:
        assert got == value


@pytest.mark.parametrize("contiguous", [True, False])
def test_save_array_mixed_noise_and_structure(tmp_path, contiguous):
    """Pipelined chunked save: noisy chunks are written raw straight from the array
    (header + data, no copy), structured chunks compressed; both libraries read it."""
    rng = np.random.default_rng(5)
    noise = rng.integers(0, 256, 8 * 3_000_000, dtype=np.uint8).view(np.int64)
    ramp = np.arange(3_000_000, dtype=np.int64)
    a = np.concatenate([noise, ramp, noise[:123_457]])
    p = tmp_path / ("m.b2frame" if contiguous else "m.b2sparse")
    n = ndpack.save_array(a, p, chunksize=4 << 20, contiguous=contiguous)
    s = ndpack.open(p)
    flags = [bytes(s.get_chunk(i))[2] & 0x02 for i in range(s.nchunks)]
    assert s.nchunks == -(-a.nbytes // (4 << 20)) and any(flags) and not all(flags)
    assert np.array_equal(ndpack.load_array(p), a)
    assert np.array_equal(blosc2.load_array(str(p)), a)
    if contiguous:
        assert n == p.stat().st_size


def test_raw_chunk_update_and_memory_frames():
    from ndpack.chunks import compress_or_header, is_raw_header
    from ndpack.storage.frame import RawChunk
    noise = np.random.default_rng(6).integers(0, 256, 1 << 20, dtype=np.uint8)
    head = compress_or_header(noise, ndpack.CParams(typesize=1, clevel=5))
    assert is_raw_header(head, noise.size)
    s = ndpack.SChunk(chunksize=noise.size, cparams={"typesize": 1})
    s.append_data(noise[::-1].copy())
    s._frame.append(RawChunk(head, noise))                 # joined in memory
    assert s.decompress_chunk(1) == noise.tobytes()
    with pytest.raises(ndpack.ParameterError, match="cbytes"):
        RawChunk(head, noise[:-1])
    assert not is_raw_header(ndpack.compress2(np.zeros(1 << 20, np.uint8)), 1 << 20)
