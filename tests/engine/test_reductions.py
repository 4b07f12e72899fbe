"""Reductions against NumPy: semantics, dtypes, NaN, where=, expressions, foreign
operands, special chunks, streaming, precision."""

import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.engine.ops import reductions
from ndpack.engine.run import plan

from tests.helpers import assert_eq

OPS = ["sum", "prod", "mean", "std", "var", "min", "max", "any", "all", "argmin", "argmax",
       "count_nonzero"]


def assert_reduced(got, expected, rtol=1e-12, atol=0.0):
    """A reduction gives what NumPy gives: a NumPy array (a 0-d value where NumPy gives
    one), then metadata and values as ``assert_eq`` (floats to ``rtol``, NaN equal NaN)."""
    if np.ndim(expected) > 0:
        assert isinstance(got, np.ndarray), type(got)
    assert_eq(got, expected, rtol=rtol, atol=atol)


def _tol(dtype):
    return {"float32": 2e-5, "complex64": 2e-5, "float16": 1e-2}.get(np.dtype(dtype).name,
                                                                       1e-10)


class use_chunk_path:
    """Read NDArray operands chunk by chunk (special chunks undecoded), in groups of
    rows decoded by worker threads, even when the chunks are tiny, as large chunks
    are."""

    def __init__(self, on=True, group_bytes=64):
        self.on, self.group_bytes = on, group_bytes

    def __enter__(self):
        self.saved = plan.CHUNK_MIN_BYTES, plan.REDUCE_GROUP_BYTES
        if self.on:
            plan.CHUNK_MIN_BYTES, plan.REDUCE_GROUP_BYTES = 0, self.group_bytes

    def __exit__(self, *exc):
        plan.CHUNK_MIN_BYTES, plan.REDUCE_GROUP_BYTES = self.saved


class use_fused:
    """Sums and means of NDArrays by the C core's fused decode + sum (on, the default)
    or by the general chunk path (off)."""

    def __init__(self, on=True):
        self.on = on

    def __enter__(self):
        self.saved = reductions.fused_sum_applies
        if not self.on:
            reductions.fused_sum_applies = lambda red, arg: False

    def __exit__(self, *exc):
        reductions.fused_sum_applies = self.saved


def _data(rng, shape, dtype, nan=False):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -4, 5, shape).astype(dtype)
    x = rng.integers(-3, 4, shape) + rng.random(shape)      # ties for argmin/argmax too
    if dtype.kind == "c":
        x = x + 1j * rng.integers(-2, 3, shape)
    x = x.astype(dtype)
    if nan and x.size:
        x.reshape(-1)[rng.integers(0, x.size, max(1, x.size // 7))] = np.nan
    return x


@st.composite
def cases(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=nd, max_size=nd)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    blocks = tuple(draw(st.integers(1, c)) for c in chunks)
    op = draw(st.sampled_from(OPS))
    if op in ("argmin", "argmax"):
        axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    else:
        axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                              st.sets(st.integers(0, nd - 1), min_size=1).map(tuple)))
    dtype = draw(st.sampled_from(["int32", "int64", "uint8", "bool", "float32", "float64",
                                  "complex128"]))
    if op in ("argmin", "argmax", "min", "max") and dtype == "complex128":
        dtype = "float64"
    return dict(shape=shape, chunks=chunks, blocks=blocks, op=op, axis=axis, dtype=dtype,
                keepdims=draw(st.booleans()), nan=draw(st.booleans()),
                chunk_path=draw(st.booleans()), fused=draw(st.booleans()),
                seed=draw(st.integers(0, 2**16)))


@settings(max_examples=150)
@given(cases())
def test_reductions_match_numpy(c):
    rng = np.random.default_rng(c["seed"])
    x = _data(rng, c["shape"], c["dtype"], nan=c["nan"])
    a = ndpack.asarray(x, chunks=c["chunks"], blocks=c["blocks"])
    kw = {"axis": c["axis"], "keepdims": c["keepdims"]}
    with np.errstate(all="ignore"):
        expected = getattr(np, c["op"])(x, **kw)
    with use_chunk_path(c["chunk_path"]), use_fused(c["fused"]):
        got = getattr(ndpack, c["op"])(a, **kw)
        method = getattr(a, c["op"])(**kw)
    assert_reduced(got, expected, rtol=_tol(x.dtype))
    assert_reduced(method, expected, rtol=_tol(x.dtype))


@pytest.mark.parametrize("op", ["sum", "prod", "mean", "std", "var"])
@pytest.mark.parametrize("dtype", [None, "float32", "float64", "int64", "complex128"])
def test_dtype_argument(op, dtype):
    x = np.arange(1, 61, dtype=np.int16).reshape(3, 4, 5) % 7 + 1
    a = ndpack.asarray(x, chunks=(2, 3, 2))
    if dtype in ("complex128", "int64") and op in ("std", "var"):
        dtype = "float64"         # NumPy's integer std truncates the mean: not followed
    for axis in (None, 0, (1, 2)):
        expected = getattr(np, op)(x, axis=axis, dtype=dtype)
        assert_reduced(getattr(ndpack, op)(a, axis=axis, dtype=dtype), expected,
                  rtol=_tol(dtype or "f8"))


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "bool", "float16"])
def test_accumulator_dtype_rules(dtype):
    x = (np.arange(200) % 120).astype(dtype).reshape(10, 20)
    a = ndpack.asarray(x, chunks=(3, 7))
    for op in ("sum", "prod", "mean", "count_nonzero"):
        for axis in (None, 1):
            with np.errstate(all="ignore"):
                expected = getattr(np, op)(x, axis=axis)
            got = getattr(ndpack, op)(a, axis=axis)
            assert np.asarray(got).dtype == np.asarray(expected).dtype, (op, axis)
            assert_reduced(got, expected, rtol=_tol(dtype))


@pytest.mark.parametrize("ddof", [0, 1, 2, 5, 40])
def test_ddof(ddof):
    rng = np.random.default_rng(3)
    x = rng.normal(10, 3, (9, 5))
    a = ndpack.asarray(x, chunks=(2, 2))
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning) if ddof >= 9 else _null():
        for axis in (None, 0, 1):
            assert_reduced(ndpack.var(a, axis=axis, ddof=ddof), np.var(x, axis=axis, ddof=ddof))
            assert_reduced(ndpack.std(a, axis=axis, ddof=ddof), np.std(x, axis=axis, ddof=ddof))


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_nan_rules_like_numpy():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [5.0, 2.0, 8.0, 8.0], [np.nan, 0.0, -1.0, 9.0]])
    a = ndpack.asarray(x, chunks=(2, 3))
    for chunk_path in (False, True):
        with use_chunk_path(chunk_path):
            for op in ("min", "max", "argmin", "argmax", "sum", "mean"):
                for axis in (None, 0, 1):
                    assert_reduced(getattr(ndpack, op)(a, axis=axis), getattr(np, op)(x, axis=axis))
    # ties: first occurrence wins, across chunks
    y = np.array([3, 1, 7, 7, 1, 7, 0, 0])
    b = ndpack.asarray(y, chunks=(3,))
    with use_chunk_path():
        assert ndpack.argmax(b) == 2 and ndpack.argmin(b) == 6
    assert ndpack.argmax(ndpack.asarray(np.array([1.0, 2, np.nan, np.nan]), chunks=(3,))) == 2


@pytest.mark.parametrize("chunk_path", [False, True])
@pytest.mark.parametrize("blocks", [(2, 3, 2), (1, 3, 5)])
def test_where(chunk_path, blocks):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, 7, 5))
    mask = rng.random((7, 5)) < 0.6
    a = ndpack.asarray(x, chunks=(4, 3, 5), blocks=blocks)
    for op in ("sum", "prod", "mean", "std", "var", "any", "all"):
        for axis in (None, 0, (0, 2)):
            with np.errstate(all="ignore"):
                expected = getattr(np, op)(x, axis=axis, where=mask)
            with use_chunk_path(chunk_path):
                got = getattr(ndpack, op)(a, axis=axis, where=mask)
                got2 = getattr(ndpack, op)(a, axis=axis, where=ndpack.asarray(mask))
            assert_reduced(got, expected)
            assert_reduced(got2, expected)
    assert_reduced(ndpack.max(a, axis=1, where=mask, initial=-10), np.max(x, axis=1, where=mask,
                                                                    initial=-10))
    assert_reduced(ndpack.min(a, where=mask, initial=10), np.min(x, where=mask, initial=10))
    # where= an expression
    e = a > 0
    assert_reduced(ndpack.sum(a, axis=2, where=e), np.sum(x, axis=2, where=x > 0))
    r = ndpack.lazyexpr("sum(a, axis=0, where=a > 0) * 2", operands={"a": a})[()]
    assert_reduced(r, np.sum(x, axis=0, where=x > 0) * 2)


def test_empty_and_zero_d():
    x = np.zeros((0, 3))
    a = ndpack.asarray(x)
    assert_reduced(ndpack.sum(a, axis=0), np.sum(x, axis=0))
    assert_reduced(ndpack.sum(a), np.sum(x))
    with pytest.raises(ValueError):
        ndpack.max(a)
    z = ndpack.asarray(np.array(3.5))
    assert_reduced(ndpack.sum(z), np.float64(3.5))
    assert_reduced(ndpack.argmax(z), np.argmax(np.array(3.5)))


@pytest.mark.parametrize("text,oracle", [
    ("sum(a, axis=0) + b * sin(c)", lambda a, b, c: a.sum(0) + b * np.sin(c)),
    ("a - mean(a, axis=1, keepdims=True)", lambda a, b, c: a - a.mean(1, keepdims=True)),
    ("(a - mean(a)) / std(a, ddof=1)", lambda a, b, c: (a - a.mean()) / a.std(ddof=1)),
    ("sum(a * 2 + 1, axis=(0, 1)) + max(b, axis=0)",
     lambda a, b, c: (a * 2 + 1).sum((0, 1)) + b.max(0)),
    ("argmax(a, axis=2) + count_nonzero(a > 0.5, axis=2)",
     lambda a, b, c: a.argmax(2) + np.count_nonzero(a > 0.5, axis=2)),
    ("sum(sum(a, 0) - mean(b, axis=0))", lambda a, b, c: (a.sum(0) - b.mean(0)).sum()),
    ("where(any(a > 0.9, axis=0), c, -c) + prod(b[0:2], axis=0)",
     lambda a, b, c: np.where((a > 0.9).any(0), c, -c) + b[0:2].prod(0)),
    ("sum(a, axis=0)[::-2, 1:].T", lambda a, b, c: a.sum(0)[::-2, 1:].T),
    ("var(a.T, axis=0) + min(b)", lambda a, b, c: a.T.var(0) + b.min()),
])
def test_reductions_inside_expressions(text, oracle):
    rng = np.random.default_rng(7)
    x, y, z = rng.random((10, 6, 5)), rng.random((6, 5)), rng.random((6, 5))
    ops = {"a": ndpack.asarray(x, chunks=(3, 4, 5)), "b": ndpack.asarray(y, chunks=(4, 2)),
           "c": z}
    e = ndpack.lazyexpr(text, operands=ops)
    expected = oracle(x, y, z)
    assert e.shape == np.shape(expected) and e.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(e[()], expected, rtol=1e-12)
    np.testing.assert_allclose(e.compute()[()], expected, rtol=1e-12)
    out = np.empty(e.shape, e.dtype)
    ndpack.evaluate(text, local_dict=ops, out=out)
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_reduction_of_expressions_and_methods():
    rng = np.random.default_rng(8)
    x = rng.random((30, 20))
    a = ndpack.asarray(x, chunks=(7, 6))
    e = np.sin(a) * 2 + a
    ref = np.sin(x) * 2 + x
    assert_reduced(e.sum(axis=1), ref.sum(axis=1))
    assert_reduced(ndpack.mean(e, axis=0, keepdims=True), ref.mean(axis=0, keepdims=True))
    assert_reduced(e.argmin(), ref.argmin())
    assert_reduced(np.sum(a), x.sum())                     # NumPy dispatches to the method
    assert_reduced(np.mean(a, axis=0), x.mean(axis=0))
    assert_reduced(ndpack.sum(x.tolist()), x.sum())        # plain Python sequences
    assert ndpack.sum(e > 1).dtype == np.int64


def test_reduction_is_computed_once_per_evaluation():
    calls = []
    x = np.arange(12.0).reshape(3, 4)

    class Counting:
        shape, dtype = x.shape, x.dtype

        def __getitem__(self, key):
            calls.append(key)
            return x[key]

    e = ndpack.lazyexpr("a - mean(a, axis=0) + sum(a)", operands={"a": Counting()})
    assert not calls                                   # building reads nothing
    np.testing.assert_allclose(e[()], x - x.mean(0) + x.sum())
    # one read per reduction plus the elementwise pass
    assert len(calls) == 3


def test_foreign_operands(tmp_path):
    h5py = pytest.importorskip("h5py")
    zarr = pytest.importorskip("zarr")
    rng = np.random.default_rng(9)
    x = rng.normal(size=(50, 40))
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=(16, 8))
    z = zarr.create_array(store=str(tmp_path / "x.zarr"), shape=x.shape, dtype=x.dtype,
                          chunks=(20, 15))
    z[:] = x
    with h5py.File(tmp_path / "x.h5", "r") as f:
        d = f["x"]
        for op in ("sum", "std", "argmax", "max"):
            for arr in (d, z):
                for axis in (None, 0, 1):
                    assert_reduced(getattr(ndpack, op)(arr, axis=axis), getattr(np, op)(x, axis=axis))
        e = ndpack.lazyexpr("d - mean(z, axis=0)", operands={"d": d, "z": z})
        np.testing.assert_allclose(e[()], x - x.mean(0), rtol=1e-12)


def test_special_chunks_are_not_decoded(monkeypatch):
    z = ndpack.zeros((40, 30, 20), dtype="f8", chunks=(10, 30, 20), blocks=(5, 10, 20))
    f = ndpack.full((40, 30), 2.5, chunks=(10, 15))
    from ndpack.storage import ndread, ndstored

    def boom(*a, **k):
        raise AssertionError("a chunk was decoded")
    for module in (ndread, ndstored):              # where NDArray's chunks are decoded
        monkeypatch.setattr(module, "decompress2", boom)
        monkeypatch.setattr(module, "decompress_blocks", boom)
    with use_chunk_path():
        assert ndpack.sum(z) == 0 and ndpack.sum(z, axis=1).shape == (40, 20)
        assert ndpack.max(z) == 0 and ndpack.argmax(z, axis=0).max() == 0
        assert_reduced(ndpack.sum(f, axis=0), np.full(30, 100.0))
        assert_reduced(ndpack.mean(f), np.float64(2.5))
        assert_reduced(ndpack.std(f, axis=1), np.zeros(40))
        assert_reduced(ndpack.count_nonzero(f, axis=1), np.full(40, 30))
        assert_reduced(ndpack.argmin(f), np.int64(0))
        assert_reduced(ndpack.prod(ndpack.full((4, 3), 2, dtype="i4", chunks=(2, 2)), axis=0),
                  np.full(3, 16, np.int64))
    monkeypatch.undo()
    # a mixed array: some chunks special, some not
    m = ndpack.zeros((40, 30), chunks=(10, 10))
    m[12:18, 5:25] = np.arange(120.0).reshape(6, 20)
    ref = m[()]
    with use_chunk_path():
        for op in ("sum", "mean", "max", "argmax", "var"):
            for axis in (None, 0, 1):
                assert_reduced(getattr(ndpack, op)(m, axis=axis), getattr(np, op)(ref, axis=axis))


class Recording:
    """An operand that records the largest region it is asked for."""

    def __init__(self, x, chunks):
        self.x, self.shape, self.dtype, self.chunks = x, x.shape, x.dtype, chunks
        self.largest = 0

    def __getitem__(self, key):
        res = self.x[key]
        self.largest = max(self.largest, res.size)
        return res


def test_streaming_never_reads_the_whole_operand():
    x = np.random.default_rng(1).random((64, 48, 32))
    for axis in (None, 0, 1, 2, (0, 2)):
        r = Recording(x, chunks=(16, 16, 16))
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(plan, "REGION_BYTES", 16 * 16 * 32 * 8)
            got = ndpack.sum(r, axis=axis)
            assert r.largest <= 16 * 16 * 32 < x.size
            assert_reduced(got, x.sum(axis=axis))
            e = ndpack.lazyexpr("a * 2", operands={"a": r})
            r.largest = 0
            assert_reduced(ndpack.std(e, axis=axis), (x * 2).std(axis=axis))
            assert r.largest < x.size


def test_float_sum_precision_1e8():
    n = 100_000_000
    a = ndpack.linspace(0, 1, n, chunks=(2_000_000,), blocks=(250_000,),
                        cparams={"codec": ndpack.Codec.LZ4, "clevel": 1})
    got = ndpack.sum(a)
    # sum of linspace(0, 1, n) is n / 2; each element is within an ulp of i / (n-1)
    assert abs(got - n / 2) / (n / 2) <= 1e-12
    assert abs(ndpack.mean(a) - 0.5) <= 1e-12


def test_float_sum_precision_random():
    rng = np.random.default_rng(11)
    x = rng.random(3_000_000) + 1.0
    a = ndpack.asarray(x, chunks=(30_000,))
    exact = math.fsum(x)
    assert abs(ndpack.sum(a) - exact) / exact <= 1e-13
    assert abs(ndpack.sum(a) - x.sum()) / exact <= 1e-12
    np.testing.assert_allclose(ndpack.var(a), x.var(), rtol=1e-11)


def test_errors_name_what_to_fix():
    a = ndpack.asarray(np.arange(12.0).reshape(3, 4))
    with pytest.raises(np.exceptions.AxisError):
        ndpack.sum(a, axis=2)
    with pytest.raises(ValueError, match="duplicate"):
        ndpack.sum(a, axis=(0, 0))
    with pytest.raises(TypeError, match="axis"):
        ndpack.sum(a, axis=1.5)
    with pytest.raises(TypeError, match="int or None"):
        ndpack.argmax(a, axis=(0, 1))
    with pytest.raises(TypeError, match="ddof"):
        ndpack.std(a, ddof="1")
    with pytest.raises(TypeError, match="dtype"):
        ndpack.sum(a, dtype="nonsense")
    with pytest.raises(TypeError, match="boolean"):
        ndpack.sum(a, where=np.ones(4))
    with pytest.raises(ValueError, match="broadcast"):
        ndpack.sum(a, where=np.ones(3, bool))
    with pytest.raises(ValueError, match="initial"):
        ndpack.max(a, where=np.ones(4, bool))
    with pytest.raises(TypeError, match="unexpected"):
        ndpack.sum(a, bogus=1)
    with pytest.raises(ValueError, match="keyword 'bogus'"):
        ndpack.lazyexpr("sum(a, bogus=1)", operands={"a": a})
    with pytest.raises(ValueError, match="non-constant"):
        ndpack.lazyexpr("sum(a, axis=a)", operands={"a": a})
    with pytest.raises(ValueError, match=r"sum\(a, axis=3\)"):
        ndpack.lazyexpr("sum(a, axis=3)", operands={"a": a})
    with pytest.raises(ValueError, match="function used as a value"):
        ndpack.lazyexpr("sum + a", operands={"a": a})


def test_python_blosc2_agrees():
    blosc2 = pytest.importorskip("blosc2")
    x = np.random.default_rng(2).random((20, 30, 10))
    a, b = ndpack.asarray(x, chunks=(5, 10, 10)), blosc2.asarray(x, chunks=(5, 10, 10))
    for op in ("sum", "mean", "std", "max", "argmax"):
        np.testing.assert_allclose(getattr(ndpack, op)(a, axis=1), getattr(blosc2, op)(b, axis=1),
                                   rtol=1e-12)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_peak_rss_reducing_3gb_on_disk(tmp_path):
    """Reductions over a 3.2 GB on-disk array (real data, not special chunks) keep the
    peak RSS under 300 MB (the array is written by another process)."""
    import subprocess
    import textwrap
    path = str(tmp_path / "a.b2nd")
    create = textwrap.dedent(f"""
        import ndpack
        rows, cols = 20_000, 20_000                     # 3.2 GB of float64
        ndpack.arange(0, rows * cols, dtype="f8", shape=(rows, cols), chunks=(200, cols),
                      blocks=(10, cols), mode="w", urlpath=r"{path}",
                      cparams={{"codec": ndpack.Codec.LZ4, "clevel": 1}})
    """)
    # VmHWM, not getrusage: Linux carries the parent's peak into ru_maxrss across exec
    reduce = textwrap.dedent(f"""
        import numpy as np, ndpack

        def hwm_mb():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
        a = ndpack.open(r"{path}")
        rows, cols = a.shape
        assert a.nbytes > 3e9 and a.cbytes > 10 * 2**20   # real chunks, not special ones
        before = hwm_mb()
        n = rows * cols
        total = ndpack.sum(a)
        assert abs(total - n * (n - 1) / 2) / (n * (n - 1) / 2) < 1e-12, total
        assert np.allclose(ndpack.mean(a, axis=0), np.arange(cols) + cols * (rows - 1) / 2)
        assert np.allclose(ndpack.std(a, axis=1), np.arange(cols).std())
        assert ndpack.argmax(a) == n - 1
        e = ndpack.lazyexpr("a - mean(a, axis=1, keepdims=True)", operands={{"a": a}})
        assert float(ndpack.max(e)) == (cols - 1) / 2
        print(before, hwm_mb())
    """)
    for script in (create, reduce):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=900)
        assert out.returncode == 0, out.stderr
    before_mb, peak_mb = map(int, out.stdout.split())
    print(f"peak RSS {peak_mb} MB (before the reductions: {before_mb} MB)")
    assert peak_mb < 300, f"peak RSS {peak_mb} MB reducing 3.2 GB (before: {before_mb} MB)"


@pytest.mark.parametrize("text,oracle", [
    ("sum(a, 1)", lambda x: x.sum(1)),
    ("sum(a, axis=-1, dtype='float32')", lambda x: x.sum(-1, dtype=np.float32)),
    ("mean(a, axis=(0, 2), keepdims=True)", lambda x: x.mean((0, 2), keepdims=True)),
    ("std(a, ddof=1) * var(a, axis=0, ddof=2)", lambda x: x.std(ddof=1) * x.var(0, ddof=2)),
    ("max(a, axis=1, where=a < 0.5, initial=-1.0)",
     lambda x: x.max(1, where=x < 0.5, initial=-1.0)),
    ("all(a > 0.01, axis=2) | any(a > 0.99, axis=2)",
     lambda x: (x > 0.01).all(2) | (x > 0.99).any(2)),
    ("count_nonzero(a > 0.5, axis=(1, 2), keepdims=True) + 0.5",
     lambda x: np.count_nonzero(x > 0.5, axis=(1, 2), keepdims=True) + 0.5),
    ("argmin(a[:, ::-1], axis=1)", lambda x: x[:, ::-1].argmin(1)),
])
def test_string_reduction_keywords(text, oracle):
    x = np.random.default_rng(12).random((7, 6, 5))
    e = ndpack.lazyexpr(text, operands={"a": ndpack.asarray(x, chunks=(3, 4, 5))})
    expected = oracle(x)
    assert e.shape == np.shape(expected) and e.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(e[()], expected, rtol=1e-6 if "float32" in text else 1e-12)


def test_reduction_nodes_know_shape_and_dtype_without_reading():
    class Exploding:
        shape, dtype = (10, 4, 3), np.dtype("i2")

        def __getitem__(self, key):
            raise AssertionError("read")
    ops = {"a": Exploding()}
    for text, shape, dtype in [("sum(a)", (), "i8"), ("mean(a, axis=1)", (10, 3), "f8"),
                               ("argmax(a, axis=0, keepdims=True)", (1, 4, 3), "i8"),
                               ("a - max(a, axis=(0, 1))", (10, 4, 3), "i2"),
                               ("var(a, axis=2) + prod(a, axis=2)", (10, 4), "f8"),
                               ("any(a, axis=1)", (10, 3), "bool")]:
        e = ndpack.lazyexpr(text, operands=ops)
        assert e.shape == shape and e.dtype == np.dtype(dtype), text


def test_reductions_of_cast_expressions():
    x = (np.arange(600) % 200).astype(np.uint8).reshape(6, 100)
    a = ndpack.asarray(x, chunks=(4, 30))
    e = (a * 2).astype("i2")                  # uint8 * 2 wraps; the cast comes after
    assert_reduced(ndpack.sum(e, axis=1), (x * 2).astype("i2").sum(axis=1))
    assert_reduced(e.max(), (x * 2).astype("i2").max())
    np.testing.assert_array_equal(ndpack.cumulative_sum(e.astype("f4"), axis=0)[()],
                                  np.cumsum((x * 2).astype("f4"), axis=0))
