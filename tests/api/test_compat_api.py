"""python-blosc2's public names for arrays, compression and storage (the compatibility
promise: code switches by changing one import) against python-blosc2 itself."""

import dataclasses
import io

import numpy as np
import pytest

import ndpack

from tests.helpers import REPO

blosc2 = pytest.importorskip("blosc2")


def test_print_versions_and_flags():
    out = io.StringIO()
    ndpack.print_versions(file=out)
    text = out.getvalue()
    for word in ("ndpack version: " + ndpack.__version__, "LZ4: ", "ZSTD: ", "NumPy version",
                 "numexpr version", "Number of threads to use by default"):
        assert word in text
    assert ndpack.IS_WASM is False
    old = ndpack.set_releasegil(False)
    assert ndpack.set_releasegil(old) is False


def test_default_parameter_dicts_match_python_blosc2():
    assert set(ndpack.cparams_dflts) == set(blosc2.cparams_dflts)
    for key in ("codec", "codec_meta", "clevel", "use_dict", "typesize", "blocksize",
                "splitmode", "filters", "filters_meta", "tuner"):
        ours, theirs = ndpack.cparams_dflts[key], blosc2.cparams_dflts[key]
        num = lambda v: int(getattr(v, "value", v))        # noqa: E731
        if isinstance(theirs, list):
            assert [num(v) for v in ours] == [num(v) for v in theirs], key
        else:
            assert num(ours) == num(theirs), key
    assert set(ndpack.dparams_dflts) == set(blosc2.dparams_dflts)
    assert set(ndpack.storage_dflts) == set(blosc2.storage_dflts)
    assert [f.name for f in dataclasses.fields(ndpack.Storage)] == \
        [f.name for f in dataclasses.fields(blosc2.Storage)]


@pytest.mark.parametrize("make", [
    lambda **kw: ndpack.zeros((3, 4), **kw),
    lambda **kw: ndpack.full((3, 4), 2.5, **kw),
    lambda **kw: ndpack.asarray(np.arange(12.0).reshape(3, 4), **kw),
    lambda **kw: ndpack.arange(12, shape=(3, 4), **kw),
    lambda **kw: ndpack.ones_like(ndpack.zeros((3, 4)), **kw),
])
@pytest.mark.parametrize("as_dict", [False, True])
def test_storage_on_constructors(tmp_path, make, as_dict):
    path = str(tmp_path / "a.b2nd")
    fields = {"urlpath": path, "mode": "w", "meta": {"units": "m"}}
    storage = fields if as_dict else ndpack.Storage(**fields)
    a = make(storage=storage)
    assert a.urlpath == path and a.schunk.meta["units"] == "m"
    again = blosc2.open(path)                      # python-blosc2 opens it
    np.testing.assert_array_equal(again[()], a[()])
    # explicit keywords win over the record's fields
    other = str(tmp_path / "b.b2nd")
    b = make(storage=ndpack.Storage(urlpath=path, mode="w"), urlpath=other)
    assert b.urlpath == other


def test_storage_bad_input(tmp_path):
    with pytest.raises(ndpack.ParameterError, match="unknown field"):
        ndpack.zeros(3, storage={"urlpth": "x.b2nd"})
    with pytest.raises(ndpack.ParameterError, match="mmap_mode"):
        ndpack.zeros(3, storage=ndpack.Storage(urlpath=str(tmp_path / "m.b2nd"),
                                               mmap_mode="w+"))
    with pytest.raises(TypeError, match="Storage or a dict"):
        ndpack.zeros(3, storage="x.b2nd")


def test_parameter_records_wherever_dicts_are_taken(tmp_path):
    x = np.arange(1000, dtype=np.int32)
    cp = ndpack.CParams(codec=ndpack.Codec.LZ4, clevel=3)
    dp = ndpack.DParams(nthreads=1)
    path = str(tmp_path / "x.b2nd")
    ndpack.save_array(x, path, cparams=cp, mode="w")
    assert np.array_equal(ndpack.load_array(path), x)
    stored = ndpack.open(path)
    assert stored.cparams.codec == ndpack.Codec.LZ4 and stored.cparams.typesize == 4
    assert np.array_equal(ndpack.unpack_tensor(ndpack.pack_tensor(x, cparams=cp)), x)
    a = ndpack.asarray(x, cparams=cp, dparams=dp)
    assert a.cparams.clevel == 3 and a.dparams.nthreads == 1
    s = ndpack.SChunk(chunksize=400, data=x.tobytes(), cparams=cp, dparams=dp)
    assert bytes(s[:]) == x.tobytes()
    r = ndpack.lazyexpr("a + 1", operands={"a": a}).compute(cparams=cp, dparams=dp)
    assert r.cparams.codec == ndpack.Codec.LZ4 and np.array_equal(r[()], x + 1)


def test_every_python_blosc2_name_is_here_or_documented():
    import re
    import types
    rows = [line.split("|") for line in (REPO / "docs" / "compat.md").read_text().splitlines()
            if line.startswith("| ") and "`" in line]
    implemented = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`",
                                 " ".join(r[2] for r in rows if "`" not in r[1])))
    listed = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`",
                            " ".join(r[1] for r in rows if "`" in r[1])))
    names = {n for n in dir(blosc2) if not n.startswith("_")
             and not isinstance(getattr(blosc2, n), types.ModuleType)}
    assert implemented and listed and not implemented & listed
    missing = sorted(names - implemented - listed)
    assert not missing, f"python-blosc2 names in neither table of docs/compat.md: {missing}"
    wrong = sorted(n for n in implemented if not hasattr(ndpack, n) or n not in names)
    assert not wrong, f"docs/compat.md lists as implemented: {wrong}"
    stale = sorted(n for n in listed if hasattr(ndpack, n) and n in names)
    assert not stale, f"docs/compat.md lists as missing names ndpack has: {stale}"


def test_constants_and_aliases():
    assert ndpack.MAX_TYPESIZE == 255 and ndpack.MAX_DIM == blosc2.MAX_DIM == 16
    for name in ("MAX_BUFFERSIZE", "MAX_OVERHEAD", "MIN_HEADER_LENGTH",
                 "EXTENDED_HEADER_LENGTH", "DEFINED_CODECS_STOP",
                 "GLOBAL_REGISTERED_CODECS_STOP", "USER_REGISTERED_CODECS_STOP",
                 "DEFAULT_INT", "DEFAULT_FLOAT", "DEFAULT_COMPLEX", "DEFAULT_INDEX", "bool_",
                 "str_", "bytes_", "object_", "float16", "euler_gamma"):
        assert getattr(ndpack, name) == getattr(blosc2, name), name
    assert ndpack.ncores == ndpack.detect_number_of_cores() >= 1
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(ndpack.transpose(ndpack.asarray(x))[()], x.T)
    np.testing.assert_array_equal(ndpack.diagonal(ndpack.asarray(x[0]), offset=1)[()],
                                  np.diagonal(x[0], offset=1))


def test_fp_accuracy_is_accepted():
    x = np.linspace(0, 10, 1000)
    a = ndpack.asarray(x, chunks=(300,))
    e = ndpack.lazyexpr("sin(a) + a", operands={"a": a})
    for acc in (None, ndpack.FPAccuracy.HIGH, ndpack.FPAccuracy.MEDIUM, 2):
        np.testing.assert_allclose(e.compute(fp_accuracy=acc)[()], np.sin(x) + x, rtol=1e-15)
        np.testing.assert_allclose(ndpack.evaluate("sin(a) + a", local_dict={"a": a},
                                                   fp_accuracy=acc), np.sin(x) + x,
                                   rtol=1e-15)
    assert [m.value for m in ndpack.FPAccuracy] == [m.value for m in blosc2.FPAccuracy]
    with pytest.raises(ndpack.ParameterError, match="fp_accuracy"):
        e.compute(fp_accuracy="low")
    assert ndpack.FPAccuracy.DEFAULT is ndpack.FPAccuracy.MEDIUM
    assert blosc2.FPAccuracy.DEFAULT is blosc2.FPAccuracy.MEDIUM


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "std", "var", "min", "max", "any",
                                  "all", "argmax", "argmin", "cumulative_sum",
                                  "cumulative_prod"])
def test_fp_accuracy_where_python_blosc2_takes_it(name):
    """python-blosc2's reductions and cumulative functions take ``fp_accuracy=`` as
    functions and as methods of its LazyExpr; ndpack's give the same values with it."""
    x = np.linspace(-2, 3, 60).reshape(6, 10)
    a = ndpack.asarray(x, chunks=(4, 4))
    e = a * 1.5
    want = getattr(blosc2, name)(blosc2.asarray(x) * 1.5, axis=1,
                                 fp_accuracy=blosc2.FPAccuracy.HIGH)
    want = want[()] if hasattr(want, "shape") else want
    for acc in (ndpack.FPAccuracy.HIGH, ndpack.FPAccuracy.DEFAULT):
        got = getattr(ndpack, name)(e, axis=1, fp_accuracy=acc)
        np.testing.assert_allclose(got[()] if hasattr(got, "shape") else got, want,
                                   rtol=1e-12)
        for arr in (e, ndpack.asarray(x * 1.5, chunks=(4, 4))):     # the methods
            got = getattr(arr, name)(axis=1, fp_accuracy=acc)
            np.testing.assert_allclose(got[()] if hasattr(got, "shape") else got, want,
                                       rtol=1e-12)
    with pytest.raises(ndpack.ParameterError, match="fp_accuracy"):
        getattr(ndpack, name)(e, axis=1, fp_accuracy="fast")


def test_fp_accuracy_on_lazyudf_compute():
    def double(inputs, output, offset):
        output[:] = 2 * inputs[0]

    u = ndpack.lazyudf(double, (np.arange(5.0),), np.float64)
    assert u.compute(fp_accuracy=ndpack.FPAccuracy.HIGH)[:].tolist() == [0, 2, 4, 6, 8]


@pytest.mark.parametrize("text", ["a + b", "a + sin(b) * float32(c) - np.pi",
                                  "where(a > 0, b, c ** 2)", "sum(a, axis=0) + x1",
                                  "int8 + float64(a)", "f(a)(b)"])
def test_get_expr_operands(text):
    assert ndpack.get_expr_operands(text) == blosc2.get_expr_operands(text)


@pytest.mark.parametrize("text, ok", [("a + sin(b) ** 2", True), ("where(a < b, a, 1)", True),
                                      ("a.__class__", False), ("__import__('os')", False),
                                      ("a; b", False)])
def test_validate_expr(text, ok):
    for lib in (ndpack, blosc2):
        if ok:
            assert lib.validate_expr(text) is None
        else:
            with pytest.raises((ValueError, SyntaxError)):
                lib.validate_expr(text)
    if not ok:
        with pytest.raises(ValueError):
            ndpack.validate_expr(text)


def test_partition_predicates_match_python_blosc2():
    rng = np.random.default_rng(7)
    for _ in range(300):
        ndim = int(rng.integers(1, 4))
        blocks = tuple(int(b) for b in rng.integers(1, 4, ndim))
        chunks = tuple(b * int(m) for b, m in zip(blocks, rng.integers(1, 4, ndim)))
        chunks = tuple(c + int(rng.integers(0, 2)) for c in chunks)   # sometimes ragged
        shape = tuple(c * int(m) + int(rng.integers(0, 2)) for c, m in
                      zip(chunks, rng.integers(1, 4, ndim)))
        for name in ("are_partitions_aligned", "are_partitions_behaved"):
            assert getattr(ndpack, name)(shape, chunks, blocks) == \
                getattr(blosc2, name)(shape, chunks, blocks), (name, shape, chunks, blocks)


@pytest.mark.parametrize("key", [(slice(3, 6), slice(0, 5)), (slice(None), slice(9, 10)),
                                 (slice(0, 10),), (2, slice(None)), (slice(5, 5),),
                                 (slice(-3, None), -1)])
def test_get_slice_nchunks_of_ndarrays(key):
    x = np.arange(100).reshape(10, 10)
    ours = ndpack.asarray(x, chunks=(4, 3), blocks=(2, 3))
    theirs = blosc2.asarray(x, chunks=(4, 3), blocks=(2, 3))
    assert ndpack.get_slice_nchunks(ours, key).tolist() == \
        blosc2.get_slice_nchunks(theirs, key).tolist()


@pytest.mark.parametrize("key", [5, slice(0, 100), slice(250, 900), (130, 131), (0, 1000)])
def test_get_slice_nchunks_of_schunks(key):
    data = np.arange(1000, dtype=np.int32)
    ours = ndpack.SChunk(chunksize=512, data=data, cparams={"typesize": 4})
    theirs = blosc2.SChunk(chunksize=512, data=data, cparams={"typesize": 4})
    assert ndpack.get_slice_nchunks(ours, key).tolist() == \
        blosc2.get_slice_nchunks(theirs, key).tolist()
    with pytest.raises(IndexError):
        ndpack.get_slice_nchunks(ours, slice(0, 10, 2))


def test_from_cframe_both_ways():
    x = np.arange(24.0).reshape(4, 6)
    theirs = blosc2.asarray(x, chunks=(2, 3))
    got = ndpack.from_cframe(theirs.to_cframe())
    assert isinstance(got, ndpack.NDArray) and np.array_equal(got[:], x)
    back = blosc2.from_cframe(ndpack.asarray(x, chunks=(2, 3)).to_cframe())
    assert np.array_equal(back[:], x)
    s = blosc2.SChunk(chunksize=64, data=np.arange(40, dtype=np.int32),
                      cparams={"typesize": 4})
    got = ndpack.from_cframe(s.to_cframe())
    assert type(got) is ndpack.SChunk and got[:] == s[:]


def test_operand_classes_and_lazywhere():
    a = ndpack.asarray(np.arange(6.0))
    e = a * 2
    u = ndpack.lazyudf(lambda i, o, off: None, (np.zeros(3),), np.float64)
    assert all(isinstance(v, ndpack.Operand) for v in (a, e, u))
    assert isinstance(e, ndpack.LazyArray) and isinstance(u, ndpack.LazyArray)
    assert not isinstance(a, ndpack.LazyArray) and not isinstance(np.zeros(2), ndpack.Operand)

    def above(lib, x):
        @lib.lazywhere(x, -1.0)
        def cond(y):
            return y > 2
        return cond(x)[()]

    np.testing.assert_array_equal(above(ndpack, a), above(blosc2, blosc2.asarray(np.arange(6.0))))


def test_pack_array_both_ways_and_library_info():
    x = np.linspace(0, 1, 1000).reshape(10, 100)
    np.testing.assert_array_equal(blosc2.unpack_array(ndpack.pack_array(x)), x)
    np.testing.assert_array_equal(ndpack.unpack_array(blosc2.pack_array(x, clevel=5)), x)
    for codec in (ndpack.Codec.LZ4, ndpack.Codec.LZ4HC, ndpack.Codec.ZLIB, ndpack.Codec.ZSTD,
                  ndpack.Codec.BLOSCLZ):
        name, version = ndpack.clib_info(codec)
        assert name == blosc2.clib_info(blosc2.Codec(int(codec)))[0]
        assert isinstance(version, bytes) and version
    ndpack.asarray(x, chunks=(5, 100))[:]        # leave buffers idle, then release them
    ndpack.free_resources()
    assert ndpack.show_config(file=io.StringIO())["memory"]["idle_bytes"] == 0
