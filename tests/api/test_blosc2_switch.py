"""What a user switching ``import blosc2`` to ``import ndpack as blosc2`` meets: SChunk
built from a ``Storage``, ``a["field"]``, items wider than 255 bytes, ``LazyExpr(new_op=)``,
``compute(item)`` and ``item=`` of the reductions, ``open(cparams=, deserialize=)``,
``asdict(DParams)``;
python-blosc2 and NumPy are the oracles (found running python-blosc2's own test suite
against ndpack)."""

import dataclasses
import os

import numpy as np
import pytest

import ndpack

blosc2 = pytest.importorskip("blosc2")


@pytest.mark.parametrize("as_dict", [False, True])
def test_schunk_from_storage(tmp_path, as_dict):
    path = str(tmp_path / "s.b2frame")
    for lib in (ndpack, blosc2):
        st = lib.Storage(urlpath=path, contiguous=True, mode="w")
        if as_dict:
            s = lib.SChunk(chunksize=400, cparams={"typesize": 4}, **dataclasses.asdict(st))
        else:
            s = lib.SChunk(chunksize=400, cparams={"typesize": 4}, storage=st)
        s.append_data(np.arange(100, dtype=np.int32))
        assert (s.urlpath, s.contiguous, s.chunkshape, s.nchunks) == (path, True, 100, 1)
        del s
        r = lib.SChunk(storage=lib.Storage(urlpath=path, mode="r"))
        assert np.frombuffer(r.decompress_chunk(0), np.int32).tolist() == list(range(100))
        del r
        lib.remove_urlpath(path)


def test_schunk_storage_errors(tmp_path):
    missing = str(tmp_path / "missing.b2frame")
    for lib in (ndpack, blosc2):
        with pytest.raises(ValueError, match="not specify a urlpath"):
            lib.SChunk(storage=lib.Storage(mode="r"))
        with pytest.raises(ValueError, match="does not exist"):
            lib.SChunk(storage=lib.Storage(urlpath=missing, mode="r"))
    with pytest.raises(FileNotFoundError):       # still the builtin for ndpack's users
        ndpack.SChunk(urlpath=missing, mode="r")
    with pytest.raises(ValueError, match="locking"):
        ndpack.SChunk(storage=ndpack.Storage(locking=True))


@pytest.mark.parametrize("value, dtype", [(34, np.int32), (np.pi, np.float32), (True, np.int32),
                                          (7, np.int16), (2.5, np.float64)])
def test_fill_special_python_scalars(value, dtype):
    ts = np.dtype(dtype).itemsize
    got = []
    for lib in (ndpack, blosc2):
        s = lib.SChunk(chunksize=40 * ts, cparams={"typesize": ts})
        s.fill_special(90, lib.SpecialValue.VALUE, value)
        out = np.empty(90, dtype)
        s.get_slice(out=out)
        got.append(out)
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_array_equal(got[0], np.full(90, value, dtype))


def test_field_key_tobytes_and_context():
    x = np.zeros((6, 5), dtype=[("a", "f4"), ("b", "i8")])
    x["a"] = np.arange(30).reshape(6, 5)
    a, b = ndpack.asarray(x, chunks=(4, 2)), blosc2.asarray(x, chunks=(4, 2))
    assert type(a["a"]).__name__ == type(b["a"]).__name__ == "NDField"
    np.testing.assert_array_equal(a["a"][1:4], b["a"][1:4])
    assert a.tobytes() == b.tobytes() == x.tobytes()
    a["b"][:] = 3
    np.testing.assert_array_equal(a[:]["b"], np.full((6, 5), 3))
    with pytest.raises(TypeError, match="'c'"):
        a["c"]
    with a as same:
        assert same is a


@pytest.mark.parametrize("itemsize", [255, 256, 3000])
def test_wide_items(itemsize):
    dtype = np.dtype([("f", "i1", (itemsize,))])
    x = np.zeros((12, 5), dtype)
    x["f"] = np.arange(12 * 5 * itemsize).reshape(12, 5, itemsize) % 97
    a = ndpack.asarray(x, chunks=(5, 5), blocks=(2, 5))
    for key in [(3, 4), (0, 0), (11, 2), (slice(1, 9), 1), (slice(None), slice(2, 4))]:
        np.testing.assert_array_equal(a[key], x[key])
    f = ndpack.full((7,), x[1, 1], dtype=dtype)
    assert f.schunk.typesize == (itemsize if itemsize <= 255 else 1)
    np.testing.assert_array_equal(f[3], x[1, 1])
    np.testing.assert_array_equal(f[:], np.full((7,), x[1, 1], dtype))


def test_lazyexpr_new_op():
    na, nb = np.linspace(0.1, 1, 20).reshape(4, 5), np.linspace(1, 2, 20).reshape(4, 5)
    a, b = ndpack.asarray(na), ndpack.asarray(nb)
    cases = [((a, "+", b), na + nb), ((a, "**", 2), na ** 2), ((3, "-", b), 3 - nb),
             ((a, "sin", None), np.sin(na)), ((a, "arctan2", b), np.arctan2(na, nb)),
             ((a, "<", b), na < nb), ((a, None, None), na)]
    for new_op, expected in cases:
        e = ndpack.LazyExpr(new_op=new_op)
        np.testing.assert_allclose(e[:], expected)
        theirs = blosc2.LazyExpr(new_op=tuple(blosc2.asarray(v[:]) if isinstance(
            v, ndpack.NDArray) else v for v in new_op))
        np.testing.assert_allclose(e[:], theirs[:])
    e = ndpack.LazyExpr((a, "*", b))          # positional, as python-blosc2's
    np.testing.assert_allclose(e[()], na * nb)
    with pytest.raises(ValueError, match="unknown operator"):
        ndpack.LazyExpr(new_op=(a, "nosuch", None))


def test_compute_item_slice_and_reduction_item():
    na = np.arange(60.0).reshape(6, 10)
    a = ndpack.asarray(na, chunks=(4, 4))
    e = a * 2 + 1
    for key in [slice(1, 5), (slice(None), slice(3, 9, 2)), (2, slice(None)), ()]:
        r = e.compute(key)
        assert isinstance(r, ndpack.NDArray)
        np.testing.assert_array_equal(r[()], (na * 2 + 1)[key])
        np.testing.assert_array_equal(e.compute(item=key)[()], (na * 2 + 1)[key])
    np.testing.assert_array_equal(e.slice(slice(0, 3))[:], (na * 2 + 1)[:3])
    b = blosc2.asarray(na, chunks=(4, 4))
    for op in ("sum", "max", "mean", "argmin"):
        for key, axis in [(slice(1, 5), None), ((slice(None), slice(2, 8)), 1)]:
            mine = getattr(a, op)(item=key, axis=axis)
            np.testing.assert_allclose(mine, getattr(b, op)(item=key, axis=axis))
            np.testing.assert_allclose(getattr(ndpack, op)(e, item=key, axis=axis),
                                       getattr(np, op)((na * 2 + 1)[key], axis=axis))


def test_open_cparams_deserialize_and_vlmeta_mode(tmp_path):
    path = str(tmp_path / "a.b2nd")
    a = ndpack.asarray(np.arange(10.0), urlpath=path, mode="w")
    del a
    for mode in ("r", "a"):
        o = ndpack.open(path, mode=mode, cparams={"nthreads": 1, "clevel": 7},
                        deserialize="safe")
        assert (o.schunk.cparams.nthreads, o.schunk.cparams.clevel) == (1, 7)
        assert o.schunk.mode == o.schunk.vlmeta.mode == mode
    b = ndpack.asarray(np.arange(10.0), urlpath=str(tmp_path / "b.b2nd"), mode="w")
    (b * 2).save(str(tmp_path / "e.b2nd"))
    e = ndpack.open(str(tmp_path / "e.b2nd"), deserialize="full")
    np.testing.assert_array_equal(e[()], np.arange(10.0) * 2)
    with pytest.raises(ValueError, match="deserialize"):
        ndpack.open(path, deserialize="unsafe")
    assert os.path.exists(path)


def test_lazyudf_chunked_eval_and_storage(tmp_path):
    def plus_one(inputs, output, offset):
        output[:] = inputs[0] + 1

    na = np.arange(40.0).reshape(8, 5)
    path = str(tmp_path / "u.b2nd")
    for chunked in (True, False):
        u = ndpack.lazyudf(plus_one, (ndpack.asarray(na),), np.float64, chunked_eval=chunked,
                           cparams={"clevel": 3})
        r = u.compute()
        np.testing.assert_array_equal(r[:], na + 1)
        assert r.schunk.cparams.clevel == 3
    u = ndpack.lazyudf(plus_one, (na,), np.float64, urlpath=path)
    assert u.compute().urlpath == path
    with pytest.raises(ValueError, match="unknown argument"):
        ndpack.lazyudf(plus_one, (na,), np.float64, nosuch=1)


@pytest.mark.parametrize("axis,indices", [(None, [[0, -1], [17, 5]]), (0, [2, -1, 2]),
                                          (1, [[3, 0], [1, -1]]), (2, []), (1, [])])
def test_ndarray_take_method(axis, indices):
    npa = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    a = ndpack.asarray(npa, chunks=(2, 3, 4), blocks=(1, 2, 3))
    res = a.take(indices, axis=axis)
    assert isinstance(res, ndpack.NDArray)
    np.testing.assert_array_equal(res[()], np.take(npa, indices, axis=axis))


def test_ndarray_take_errors():
    a = ndpack.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    with pytest.raises(TypeError, match="integer"):        # NumPy's type
        a.take(np.array([1.5]), axis=0)
    with pytest.raises(ValueError, match="axis"):
        a.take([0], axis=2)
    with pytest.raises(IndexError, match="bounds"):
        a.take([3], axis=0)


def test_ndarray_compute(tmp_path):
    npa = np.arange(24, dtype=np.complex128).reshape(4, 6)
    a = ndpack.asarray(npa, chunks=(2, 3), blocks=(1, 3))
    a += 1j                              # in place here; an expression under python-blosc2
    b = a.compute()
    assert isinstance(b, ndpack.NDArray) and b is not a
    assert (b.chunks, b.blocks) == (a.chunks, a.blocks)
    np.testing.assert_array_equal(b[()], npa + 1j)
    np.testing.assert_array_equal(a.compute(item=(slice(1, 3),))[()], (npa + 1j)[1:3])
    c = a.compute(urlpath=str(tmp_path / "c.b2nd"))
    np.testing.assert_array_equal(ndpack.open(c.urlpath)[()], npa + 1j)


def test_size_limits_raise_python_blosc2_types():
    """A chunk over the format's limit is a RuntimeError (python-blosc2's type) and a
    ValueError (ndpack's ParameterError); a block over MAX_BLOCKSIZE a ValueError."""
    with pytest.raises(ndpack.LimitError, match="a chunk holds at most") as info:
        ndpack.zeros((2**31 - 1,), chunks=(2**30,), dtype=np.float32)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="MAX_BLOCKSIZE"):
        ndpack.empty(shape=10, dtype=f"S{ndpack.MAX_BLOCKSIZE}", blocks=(2,))
    with pytest.raises(TypeError, match="sub-array dtype"):     # docs/compat.md
        ndpack.zeros((1,), dtype=("<f8", (10,)))


@pytest.mark.parametrize("key", [(slice(1, 3), ..., slice(3, 6)), (..., 2), (...,),
                                 (1, ...), (slice(0, 7), 3, ..., slice(2, 9))])
def test_get_slice_nchunks_ellipsis(key):
    blosc2 = pytest.importorskip("blosc2")
    shape, chunks, blocks = (12, 13, 14, 15, 16), (5,) * 5, (2,) * 5
    a = ndpack.zeros(shape, chunks=chunks, blocks=blocks, dtype=np.float32)
    b = blosc2.zeros(shape, chunks=chunks, blocks=blocks, dtype=np.float32)
    np.testing.assert_array_equal(ndpack.get_slice_nchunks(a, key),
                                  blosc2.get_slice_nchunks(b, key))


@pytest.mark.parametrize("dparams", [None, {"nthreads": 1}, {"nthreads": 2}])
def test_dparams_asdict_as_python_blosc2(dparams):
    got = []
    for lib in (ndpack, blosc2):
        dp = None if dparams is None else lib.DParams(**dparams)
        a = lib.full((20, 10), 3.5, chunks=(10, 10), dparams=dp)
        got.append(dataclasses.asdict(a.schunk.dparams))
        assert dataclasses.asdict(lib.DParams(**(dparams or {}))) == got[-1]
    if dparams is None:
        # the defaults: each library's own thread count (ndpack's honours NDPACK_NTHREADS
        # and the CPU affinity, python-blosc2's its own setting): the same field
        assert got[0].keys() == got[1].keys() == {"nthreads"}
        assert got[0]["nthreads"] == ndpack.nthreads
    else:
        assert got[0] == got[1]


def test_dparams_verify_beside_the_field():
    dp = ndpack.DParams(nthreads=1, verify="full")
    assert (dp.nthreads, dp.verify, dataclasses.asdict(dp)) == (1, "full", {"nthreads": 1})
    assert dp != ndpack.DParams(nthreads=1) and dp == ndpack.DParams(1, "full")
    a = ndpack.full((8,), 1.0, dparams={"nthreads": 1, "verify": False})
    assert a.schunk.dparams.verify is False
    a.schunk.dparams = dp                       # a DParams keeps its verify through make_dparams
    assert a.schunk.dparams.verify == "full" and a[()].tolist() == [1.0] * 8
    with pytest.raises(ndpack.ParameterError, match="unknown decompression"):
        ndpack.full((8,), 1.0, dparams={"nthreads": 1, "verfy": False})
    with pytest.raises(ValueError):
        ndpack.DParams(nthreads=0)
