"""SChunk semantics against NumPy and a Python-list model (memory, contiguous, sparse)."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ndpack
from ndpack.errors import ParameterError

CS_ITEMS = 50                      # items per chunk in these tests (int32 -> 200 bytes)
STORAGES = ["memory", "contiguous", "sparse"]


def make(kind, tmp_path, **kw):
    kw.setdefault("chunksize", CS_ITEMS * 4)
    kw.setdefault("cparams", {"typesize": 4, "nthreads": 1})
    if kind == "memory":
        return ndpack.SChunk(**kw)
    return ndpack.SChunk(urlpath=tmp_path / f"s_{kind}.b2frame",
                         contiguous=(kind == "contiguous"), mode="w", **kw)


def reopen(kind, s, tmp_path):
    if kind == "memory":
        return ndpack.schunk_from_cframe(s.to_cframe())
    s.close()
    return ndpack.open(tmp_path / f"s_{kind}.b2frame", mode="a")


def chunk(i, n=CS_ITEMS):
    if i % 4 == 3:
        return np.zeros(n, np.int32)                # becomes a special zeros chunk
    return (np.arange(n, dtype=np.int32) * 3 + i * 1000).astype(np.int32)


@pytest.mark.parametrize("kind", STORAGES)
def test_basic_api(kind, tmp_path):
    s = make(kind, tmp_path)
    assert (s.nchunks, len(s), s.nbytes, s.typesize) == (0, 0, 0, 4)
    for i in range(6):
        assert s.append_data(chunk(i)) == i + 1
    ref = np.concatenate([chunk(i) for i in range(6)])
    assert len(s) == ref.size and s.nbytes == ref.nbytes and s.chunksize == 200
    assert s.cbytes < s.nbytes and s.cratio == s.nbytes / s.cbytes
    assert np.array_equal(np.frombuffer(s[:], np.int32), ref)
    assert np.array_equal(np.frombuffer(s.get_slice(37, 163), np.int32), ref[37:163])
    assert np.array_equal(np.frombuffer(s[-5:], np.int32), ref[-5:])
    assert np.frombuffer(s[7], np.int32)[0] == ref[7]
    assert s[1000:2000] == b""
    out = bytearray(40)
    assert s.get_slice(10, 20, out=out) is None and bytes(out) == ref[10:20].tobytes()
    dst = bytearray(200)
    assert s.decompress_chunk(2, dst) is None and bytes(dst) == chunk(2).tobytes()
    assert s.decompress_chunk(-1) == chunk(5).tobytes()
    for i, arr in enumerate(s.iterchunks(np.int32)):
        assert np.array_equal(arr, chunk(i))
    infos = list(s.iterchunks_info())
    assert [x.nchunk for x in infos] == list(range(6))
    assert infos[3].special == ndpack.SpecialValue.ZERO
    assert ndpack.decompress(s.get_chunk(1)) == chunk(1).tobytes()
    with pytest.raises(IndexError):
        s.get_chunk(6)
    with pytest.raises(IndexError):
        s[0:10:2]
    # edits
    s.insert_data(1, chunk(9))
    s.update_data(0, chunk(7))
    s.delete_chunk(4)
    model = [chunk(7), chunk(9), chunk(1), chunk(2), chunk(4), chunk(5)]
    ref = np.concatenate(model)
    assert np.array_equal(np.frombuffer(s[:], np.int32), ref)
    s[40:60] = np.arange(20, dtype=np.int32) - 99
    ref[40:60] = np.arange(20) - 99
    assert np.array_equal(np.frombuffer(s[:], np.int32), ref)
    s.vlmeta["k"] = {"a": (1, 2.5)}
    s = reopen(kind, s, tmp_path)
    assert np.array_equal(np.frombuffer(s[:], np.int32), ref)
    assert s.vlmeta["k"] == {"a": (1, 2.5)}
    assert s.typesize == 4 and s.chunksize == 200


@pytest.mark.parametrize("kind", STORAGES)
def test_setitem_grows(kind, tmp_path):
    s = make(kind, tmp_path, data=np.arange(120, dtype=np.int32))
    assert s.nchunks == 3
    s[110:170] = np.arange(60, dtype=np.int32)
    ref = np.concatenate([np.arange(110), np.arange(60)]).astype(np.int32)
    assert len(s) == 170 and np.array_equal(np.frombuffer(s[:], np.int32), ref)
    with pytest.raises(ParameterError):
        s[0:3] = np.arange(2, dtype=np.int32)
    with pytest.raises(ParameterError):
        s[500:501] = np.arange(1, dtype=np.int32)


def test_defaults_like_python_blosc2():
    s = ndpack.SChunk()
    assert s.typesize == 1 and s.chunksize == 2 ** 24 and s.cparams.clevel == 5
    s = ndpack.SChunk(data=np.arange(10, dtype=np.float64))
    assert s.typesize == 8 and s.chunksize == 80 and len(s) == 10
    with pytest.raises(ParameterError):
        ndpack.SChunk(chunksize=8, cparams={"typesize": 4}).append_data(b"abc")
    with pytest.raises(ParameterError):
        ndpack.SChunk(bogus=1)


def test_variable_chunks(tmp_path):
    for kind in STORAGES:
        s = make(kind, tmp_path)
        s.append_data(np.arange(20, dtype=np.int32))
        s.append_data(np.arange(50, dtype=np.int32))          # after a short one: variable
        assert s.chunksize == 0
        s.append_chunk(ndpack.compress2(np.zeros(10, np.int32), typesize=4))
        ref = np.concatenate([np.arange(20), np.arange(50), np.zeros(10)]).astype(np.int32)
        assert np.array_equal(np.frombuffer(s[:], np.int32), ref)
        s = reopen(kind, s, tmp_path)
        assert s.chunksize == 0 and np.array_equal(np.frombuffer(s[:], np.int32), ref)


@pytest.mark.parametrize("kind", STORAGES)
@pytest.mark.parametrize("special", [ndpack.SpecialValue.ZERO, ndpack.SpecialValue.NAN,
                                     ndpack.SpecialValue.VALUE, ndpack.SpecialValue.UNINIT])
def test_fill_special(kind, special, tmp_path):
    s = make(kind, tmp_path, cparams={"typesize": 4})
    assert s.fill_special(130, special, np.float32(2.5) if special == 3 else None) == 3
    got = np.frombuffer(s[:], np.float32)
    assert got.size == 130
    if special == ndpack.SpecialValue.NAN:
        assert np.isnan(got).all()
    elif special == ndpack.SpecialValue.VALUE:
        assert (got == 2.5).all()
    else:
        assert (got == 0).all()
    with pytest.raises(ParameterError):
        s.fill_special(10, special, np.float32(1))
    s = reopen(kind, s, tmp_path)
    assert len(s) == 130


def test_meta_rules():
    s = ndpack.SChunk(chunksize=40, meta={"m": [1, 2], "t": (3, 4)})
    assert s.meta["m"] == [1, 2] and s.meta["t"] == (3, 4) and len(s.meta) == 2
    s.meta["m"] = [5, 6]
    assert s.meta.getall() == {"m": [5, 6], "t": (3, 4)}
    with pytest.raises(ParameterError):
        s.meta["m"] = [1, 2, 3]
    with pytest.raises(ParameterError):
        s.meta["new"] = 1
    with pytest.raises(ParameterError):
        del s.meta["m"]
    t = ndpack.schunk_from_cframe(s.to_cframe())
    assert t.meta.getall() == {"m": [5, 6], "t": (3, 4)}


def test_vlmeta_values():
    s = ndpack.SChunk(chunksize=40)
    vals = {"s": "x", "b": b"\x00\x01", "i": -5, "f": 1.5, "n": None, "c": 1 + 2j,
            "set": {1, 2}, "arr": np.arange(6, dtype="<f4").reshape(2, 3), "tup": (1, (2, 3)),
            "np": np.int64(7), "d": {"a": [1, 2]}}
    for k, v in vals.items():
        s.vlmeta[k] = v
    got = ndpack.schunk_from_cframe(s.to_cframe()).vlmeta.getall()
    assert list(got) == list(vals)
    for k, v in vals.items():
        if isinstance(v, np.ndarray):
            assert got[k].dtype == v.dtype and np.array_equal(got[k], v)
        else:
            assert got[k] == v
    assert list(s.vlmeta[:]) == list(s.vlmeta.to_dict()) == list(vals)
    with pytest.raises(KeyError):
        s.vlmeta["missing"]
    with pytest.raises(KeyError):
        del s.vlmeta["missing"]
    with pytest.raises(ParameterError):
        s.vlmeta["x" * 40] = 1


# --- random edit sequences against a list model ------------------------------------------

ops = st.lists(st.tuples(st.sampled_from(["append", "insert", "update", "delete", "vlmeta"]),
                         st.integers(0, 50), st.integers(0, 9)), min_size=1, max_size=25)


def _run_model(s, seq):
    model = []
    for op, pos, val in seq:
        data = chunk(val)
        if op == "append" or (op != "vlmeta" and not model):
            s.append_data(data)
            model.append(data)
        elif op == "insert":
            i = pos % (len(model) + 1)
            s.insert_data(i, data)
            model.insert(i, data)
        elif op == "update":
            i = pos % len(model)
            s.update_data(i, data)
            model[i] = data
        elif op == "delete":
            i = pos % len(model)
            s.delete_chunk(i)
            del model[i]
        else:
            s.vlmeta[f"k{val}"] = pos
    return model


def _check(s, model):
    assert s.nchunks == len(model)
    ref = np.concatenate(model).tobytes() if model else b""
    assert s[:] == ref
    for i, m in enumerate(model):
        assert s.decompress_chunk(i) == m.tobytes()


@pytest.mark.parametrize("kind", STORAGES)
@settings(max_examples=15)
@given(seq=ops)
def test_random_edits(kind, tmp_path_factory, seq):
    tmp = tmp_path_factory.mktemp("edits")
    s = make(kind, tmp)
    model = _run_model(s, seq)
    _check(s, model)
    s2 = reopen(kind, s, tmp)
    _check(s2, model)
    _check(ndpack.schunk_from_cframe(s2.to_cframe()), model)


def test_threads_read_random_chunks(tmp_path):
    s = make("contiguous", tmp_path)
    for i in range(40):
        s.append_data(chunk(i))
    s.close()
    for mmap_mode in (None, "r"):
        r = ndpack.open(tmp_path / "s_contiguous.b2frame", mode="r", mmap_mode=mmap_mode)
        errors = []

        def work(seed):
            rng = np.random.default_rng(seed)
            try:
                for _ in range(200):
                    i = int(rng.integers(40))
                    assert r.decompress_chunk(i) == chunk(i).tobytes()
            except Exception as exc:      # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        r.close()


def test_mmap_read(tmp_path):
    s = make("contiguous", tmp_path, data=np.arange(500, dtype=np.int32))
    s.close()
    r = ndpack.open(tmp_path / "s_contiguous.b2frame", mmap_mode="r")
    assert r.mode == "r"
    assert np.array_equal(np.frombuffer(r[:], np.int32), np.arange(500))
    with pytest.raises(ParameterError):
        r.append_data(np.arange(50, dtype=np.int32))
    r.close()


def test_remove_urlpath(tmp_path):
    for contiguous in (True, False):
        p = tmp_path / f"x{contiguous}.b2frame"
        ndpack.SChunk(chunksize=8, data=b"12345678", urlpath=p, contiguous=contiguous)
        assert p.exists()
        ndpack.remove_urlpath(p)
        assert not p.exists()
    ndpack.remove_urlpath(tmp_path / "never-existed")


@settings(max_examples=30)
@given(sizes=st.lists(st.integers(1, 80), min_size=1, max_size=8),
       fixed=st.booleans(), start=st.integers(-700, 700), stop=st.integers(-700, 700))
def test_random_slices_vs_numpy(sizes, fixed, start, stop):
    s = ndpack.SChunk(chunksize=64 * 4, cparams={"typesize": 4, "nthreads": 1})
    parts = []
    for k, n in enumerate(sizes):
        n = 64 if fixed and k < len(sizes) - 1 else (min(n, 64) if fixed else n)
        part = np.arange(n, dtype=np.int32) + 1000 * k
        s.append_chunk(ndpack.compress2(part, typesize=4, blocksize=32))
        parts.append(part)
    ref = np.concatenate(parts)
    assert len(s) == ref.size
    assert np.array_equal(np.frombuffer(s[start:stop], np.int32), ref[start:stop])
    assert np.array_equal(np.frombuffer(s.get_slice(start, stop), np.int32), ref[start:stop])


@pytest.mark.parametrize("kind", STORAGES)
def test_reorder_offsets(kind, tmp_path, monkeypatch):
    """python-blosc2's reorder_offsets: chunk order[k] becomes chunk k; the checksum
    record follows (checked on reopening with verify="full"); a short last chunk moved
    makes the frame variable-size, index-only zero chunks included; python-blosc2 reads
    the result."""
    monkeypatch.setenv("NDPACK_CHECKSUMS", "1")
    s = make(kind, tmp_path)
    s.fill_special(2 * CS_ITEMS, ndpack.SpecialValue.ZERO)     # two index-only chunks
    parts = [np.zeros(CS_ITEMS, np.int32)] * 2
    parts += [np.arange(CS_ITEMS, dtype=np.int32) + 100 * k for k in range(4)]
    for p in parts[2:]:
        s.append_data(p)
    s.append_data(np.arange(7, dtype=np.int32))         # a short last chunk
    parts.append(np.arange(7, dtype=np.int32))
    order = [3, 6, 0, 5, 2, 1, 4]
    s.reorder_offsets(np.array(order))
    want = [parts[k] for k in order]
    got = [np.frombuffer(s.decompress_chunk(i), np.int32) for i in range(s.nchunks)]
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert s.nbytes == sum(w.nbytes for w in want)
    frame = s._frame
    assert frame.crcs is not None and len(frame.crcs) == s.nchunks
    s.update_data(0, np.full(CS_ITEMS, -1, np.int32))   # writes after a reorder
    want[0] = np.full(CS_ITEMS, -1, np.int32)
    t = reopen(kind, s, tmp_path)
    t.dparams = {"verify": "full"}
    got = [np.frombuffer(t.decompress_chunk(i), np.int32) for i in range(t.nchunks)]
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert t[:] == b"".join(w.tobytes() for w in want)
    blosc2 = pytest.importorskip("blosc2")
    if kind != "memory":
        t.close()
        u = blosc2.open(str(tmp_path / f"s_{kind}.b2frame"))
        got = [np.frombuffer(u.decompress_chunk(i), np.int32) for i in range(u.nchunks)]
        assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_reorder_offsets_errors(tmp_path):
    s = make("contiguous", tmp_path)
    for k in range(3):
        s.append_data(np.full(CS_ITEMS, k, np.int32))
    for bad in ([[0, 1, 2]], [0, 1], [0.0, 1.0, 2.0]):
        with pytest.raises(ValueError):
            s.reorder_offsets(bad)
    for bad in ([0, 0, 1], [0, 1, 3], [-1, 0, 1]):
        with pytest.raises(ndpack.OperationError, match="permutation") as info:
            s.reorder_offsets(bad)
        assert isinstance(info.value, RuntimeError)       # python-blosc2's type
    s.reorder_offsets([2, 1, 0])
    s.close()
    r = ndpack.open(tmp_path / "s_contiguous.b2frame", mode="r")
    assert [r.decompress_chunk(i)[0] for i in range(3)] == [2, 1, 0]
    with pytest.raises(ValueError, match="reading mode"):
        r.reorder_offsets([1, 0, 2])


def test_dropped_arrays_are_freed_without_the_cyclic_collector(tmp_path):
    """No reference cycle keeps a super-chunk (and its compressed chunks) alive after
    its last user drops it, even once meta and vlmeta were used."""
    import gc
    import weakref

    import numpy as np
    makers = [lambda: ndpack.asarray(np.arange(1000.0), chunks=(100,)),
              lambda: ndpack.asarray(np.arange(100.0), urlpath=str(tmp_path / "a.b2nd"),
                                     mode="w"),
              lambda: ndpack.SChunk(chunksize=40, data=b"x" * 100)]
    was = gc.isenabled()
    gc.disable()
    try:
        for make in makers:
            x = make()
            s = x if isinstance(x, ndpack.SChunk) else x.schunk
            s.vlmeta["note"] = 1
            assert "note" in s.vlmeta and s.meta is not None
            refs = [weakref.ref(s), weakref.ref(s.frame), weakref.ref(x)]
            del x, s
            assert [r() for r in refs] == [None, None, None]
    finally:
        if was:
            gc.enable()
