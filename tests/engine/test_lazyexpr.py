"""Lazy expressions against NumPy: laziness, semantics, every function, safety, outputs."""

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.engine.expr.functions import FUNCTIONS


class Exploding:
    """An operand that fails if anything reads it."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, np.dtype(dtype)

    def __getitem__(self, key):
        raise AssertionError("operand was read")


def test_building_reads_nothing():
    a, b = Exploding((10, 3), "f8"), Exploding((3,), "i4")
    e = ndpack.lazyexpr("sin(a) * 2 + b / 3 - where(a > b, a, b)")
    assert e.shape == (10, 3) and e.dtype == np.float64
    nd = ndpack.asarray(np.zeros((10, 3)))
    e2 = np.sqrt(nd) + nd * 2 - ndpack.lazyexpr("a", operands={"a": a})
    assert e2.shape == (10, 3)
    with pytest.raises(AssertionError, match="read"):
        e[()]


@pytest.mark.parametrize("expr", [
    "a + b", "a - b * 2", "a / b", "a // (b + 1)", "a % 7", "a ** 2", "-a + abs(b)",
    "a < b", "(a >= b) & (b != 3)", "a == b", "~(a > b)", "1 < a < 5",
    "where(a > b, a, b)", "a * 2.5 + 1", "(a > 2) and (b < 4)", "not (a > 2)",
])
@pytest.mark.parametrize("dtypes", [("i4", "i4"), ("i8", "f8"), ("f4", "f4"), ("f8", "i2"),
                                    ("u1", "i1")])
def test_operators_match_numpy(expr, dtypes):
    rng = np.random.default_rng(1)
    a = (rng.integers(0, 9, (30, 7))).astype(dtypes[0])
    b = (rng.integers(1, 9, (7,))).astype(dtypes[1])
    if "~" in expr and np.dtype(dtypes[0]).kind == "f":
        pass
    np_expr = expr.replace("where", "np.where").replace(" and ", " & ").replace("not ", "~")
    np_expr = np_expr.replace("1 < a < 5", "(1 < a) & (a < 5)")
    with np.errstate(all="ignore"):
        expected = eval(np_expr, {"np": np, "a": a, "b": b})      # test oracle, our own text
        e = ndpack.lazyexpr(expr, operands={"a": ndpack.asarray(a, chunks=(8, 7), blocks=(4, 7)),
                                            "b": b})
        assert e.dtype == expected.dtype
        np.testing.assert_array_equal(e[()], expected)
        np.testing.assert_array_equal(e.compute()[:], expected)


UNARY_DOMAIN = {"arccosh": (1.5, 4), "acosh": (1.5, 4), "arctanh": (-0.9, 0.9),
                "atanh": (-0.9, 0.9), "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9),
                "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "log": (0.1, 5), "log10": (0.1, 5),
                "log2": (0.1, 5), "log1p": (0, 5), "sqrt": (0, 5)}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_function_matches_numpy(name):
    f = FUNCTIONS[name]
    rng = np.random.default_rng(2)
    lo, hi = UNARY_DOMAIN.get(name, (-3, 3))
    is_int = name in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_invert",
                      "bitwise_not", "left_shift", "right_shift", "bitwise_left_shift",
                      "bitwise_right_shift", "floor_divide", "remainder", "mod")
    if is_int:
        args = [rng.integers(1, 6, 40).astype(np.int64) for _ in range(max(f.nargs))]
    elif name.startswith("logical"):
        args = [rng.random(40) > 0.5 for _ in range(max(f.nargs))]
    elif name in ("startswith", "endswith", "contains", "lower", "upper"):
        words = np.array(["ab", "Cab", "bcA", "a", ""], dtype="U3")
        args = [rng.choice(words, 40) for _ in range(max(f.nargs))]
    else:
        args = [rng.uniform(lo, hi, 40) for _ in range(max(f.nargs))]
    if name == "where":
        args[0] = args[0] > 0
    if name == "clip":
        args[1], args[2] = np.full(40, -1.0), np.full(40, 1.0)
    nargs = max(f.nargs) if name != "round" else 1
    names = {f"x{i}": args[i] for i in range(nargs)}
    text = f"{name}({', '.join(names)})"
    with np.errstate(all="ignore"):
        expected = f.numpy(*args[:nargs])
        got = ndpack.lazyexpr(text, operands=names)[()]
    assert got.dtype == np.asarray(expected).dtype
    if got.dtype.kind in "US":
        np.testing.assert_array_equal(got, expected)
        return
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0, equal_nan=True)


@given(
    shape=st.lists(st.integers(1, 12), min_size=1, max_size=3),
    drop=st.integers(0, 2),
    dtype=st.sampled_from(["i4", "i8", "f4", "f8"]),
    expr=st.sampled_from(["a + b * c", "sqrt(abs(a)) + b", "where(a > c, a - b, c)",
                          "a * 2 - c / 3", "sin(a) ** 2 + cos(b) * exp(-abs(c))"]),
    chunkfrac=st.integers(1, 4),
)
@settings(deadline=None)
def test_hypothesis_broadcasting_and_chunks(shape, drop, dtype, expr, chunkfrac):
    rng = np.random.default_rng(len(shape) + drop)
    shape = tuple(shape)
    bshape = shape[min(drop, len(shape) - 1):]
    cshape = tuple(1 if i % 2 else n for i, n in enumerate(shape))
    a = (rng.random(shape) * 10).astype(dtype)
    b = (rng.random(bshape) * 10).astype(dtype)
    c = (rng.random(cshape) * 10 + 1).astype(dtype)
    chunks = tuple(max(1, n // chunkfrac) for n in shape)
    nd_a = ndpack.asarray(a, chunks=chunks, blocks=tuple(max(1, k // 2) for k in chunks))
    with np.errstate(all="ignore"):
        expected = eval(expr.replace("where", "np.where").replace("sqrt", "np.sqrt")
                        .replace("abs", "np.abs").replace("sin", "np.sin").replace("cos", "np.cos")
                        .replace("exp", "np.exp"), {"np": np, "a": a, "b": b, "c": c})
    e = ndpack.lazyexpr(expr, operands={"a": nd_a, "b": b, "c": ndpack.asarray(c)})
    assert e.shape == expected.shape and e.dtype == expected.dtype
    # atol: float64 sin/cos come from the C core, within 1 ulp of NumPy's
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == "f4" else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(e[()], expected, **tol)
    np.testing.assert_allclose(e.compute(chunks=chunks)[:], expected, **tol)


@pytest.mark.parametrize("key", [(), 3, -1, (slice(None), 2), (slice(2, 9, 3), slice(None, None, -2)),
                                 (None, 1), (Ellipsis, slice(1, 4)), (slice(8, 1, -3),)])
def test_getitem_computes_only_the_key(key):
    a = np.arange(100.0).reshape(10, 10)
    e = ndpack.lazyexpr("a * 2 + 1", operands={"a": ndpack.asarray(a, chunks=(3, 4))})
    np.testing.assert_array_equal(e[key], (a * 2 + 1)[key])


from hypothesis.extra import numpy as hnp


@st.composite
def _shape_and_array_key(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
    kind = draw(st.sampled_from(["int", "bool", "mixed"]))
    if kind == "int":
        key = draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(
            min_dims=0, max_dims=2, min_side=0, max_side=4)))
    elif kind == "bool":
        k = draw(st.integers(1, len(shape)))
        key = (draw(hnp.arrays(np.bool_, shape[:k])),)
    else:                                       # arrays, slices, None and ints mixed
        key = []
        for n in shape:
            key.append(draw(st.one_of(
                st.integers(-n, n - 1), st.slices(n),
                hnp.arrays(np.intp, draw(st.integers(0, 3)), elements=st.integers(-n, n - 1)))))
            if draw(st.booleans()):
                key.append(None)
        key = tuple(key)
    return shape, key


@settings(deadline=None)
@given(_shape_and_array_key(), st.integers(1, 3))
def test_getitem_array_keys_like_numpy(case, frac):
    """Integer and boolean array keys on an expression: NumPy's values, shape and error
    kind (arrays apart from each other included, which ndindex does not expand)."""
    shape, key = case
    a = np.arange(int(np.prod(shape)), dtype="f8").reshape(shape)
    e = ndpack.lazyexpr("a * 2 + 1", operands={"a": ndpack.asarray(
        a, chunks=tuple(max(1, n // frac) for n in shape))})
    try:
        want = (a * 2 + 1)[key]
    except IndexError:
        with pytest.raises(IndexError):
            e[key]
        return
    got = e[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mask", ["numpy", "ndarray", "expr"])
def test_getitem_whole_mask_in_slabs(mask, monkeypatch):
    """A boolean mask of the whole shape is applied slab by slab under a small memory
    limit: no box computed is the whole array, values in C order as NumPy's."""
    from ndpack.engine import compute
    x = np.random.default_rng(1).random((40, 300, 250))          # 24 MB
    a = ndpack.asarray(x, chunks=(10, 100, 250))
    m = {"numpy": np.asarray(x > 0.9), "ndarray": ndpack.asarray(x > 0.9),
         "expr": a > 0.9}[mask]
    boxes = []
    real = compute.compute_box

    def spy(expr, box):
        boxes.append(box)
        return real(expr, box)
    monkeypatch.setattr(compute, "compute_box", spy)
    limit = ndpack.memory_limit()
    ndpack.set_memory_limit("16M")
    try:
        got = (a * 3)[m]
        got2 = (a * 3)[m, ...]
    finally:
        ndpack.set_memory_limit(limit)
    np.testing.assert_array_equal(got, (x * 3)[x > 0.9])
    np.testing.assert_array_equal(got2, got)
    assert len(boxes) > 2 and all(b != tuple(slice(0, n) for n in x.shape) for b in boxes)


def test_getitem_mask_errors():
    e = ndpack.lazyexpr("a + 1", operands={"a": ndpack.asarray(np.arange(12.0).reshape(3, 4))})
    with pytest.raises(IndexError):
        e[ndpack.asarray(np.ones((4, 3), bool))]
    with pytest.raises(IndexError):
        e[np.ones((3, 4), bool), 0]


@pytest.mark.parametrize("text", [
    "__import__('os').system('echo hi')", "a.__class__", "a.shape", "(lambda: 1)()",
    "[x for x in a]", "f'{a}'", "open('/etc/passwd')", "eval('1')", "a[b]", "a[0:b]", "a if a else b",
    "print(a)", "().__class__.__bases__", "globals()", "{'x': 1}", "a; b", "a = 1",
    "sin(a, out=b)", "getattr(a, 'x')", "'string'", "x := 1",
])
def test_malicious_or_unsupported_strings_rejected(text):
    with pytest.raises(ValueError) as info:
        ndpack.lazyexpr(text, operands={"a": np.ones(3), "b": np.ones(3)})
    assert str(info.value)


@pytest.mark.parametrize("text", ["+".join(["a"] * 3000), "-" * 5000 + "a", "(" * 300 + "a" + ")" * 300,
                                  "a" * 20_000, "sin(" * 300 + "a" + ")" * 300])
def test_pathological_strings_give_value_errors(text):
    with pytest.raises(ValueError):
        ndpack.lazyexpr(text, operands={"a": np.ones(3)})


def test_bad_input_messages():
    with pytest.raises(ValueError, match=r"cannot be broadcast.*a \(3,\).*b \(4,\)"):
        ndpack.lazyexpr("a + b", operands={"a": np.ones(3), "b": np.ones(4)})
    with pytest.raises(ValueError, match="unknown name 'zz'"):
        ndpack.lazyexpr("a + zz", operands={"a": np.ones(3)})
    with pytest.raises(TypeError, match="object"):
        ndpack.lazyexpr("a + 1", operands={"a": np.array([1, "x"], dtype=object)})
    with pytest.raises(ValueError, match="shape"):
        ndpack.evaluate("a + 1", local_dict={"a": np.ones(3)}, out=np.empty(4))
    ro = np.empty(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        ndpack.evaluate("a + 1", local_dict={"a": np.ones(3)}, out=ro)
    with pytest.raises(ValueError, match="read-only"):      # the aligned path too
        ndpack.evaluate("a + 1", local_dict={"a": ndpack.asarray(np.ones(3))}, out=ro)


def test_names_from_the_callers_frame():
    x = np.arange(5.0)
    y = ndpack.asarray(np.ones(5))
    np.testing.assert_array_equal(ndpack.lazyexpr("x + y")[()], x + 1)
    np.testing.assert_array_equal(ndpack.evaluate("x * 3"), x * 3)


def test_compute_to_disk_is_atomic(tmp_path):
    a = ndpack.asarray(np.arange(1000.0), chunks=(100,), blocks=(50,))
    path = tmp_path / "r.b2nd"
    r = ndpack.lazyexpr("a * 2", operands={"a": a}).compute(urlpath=path)
    np.testing.assert_array_equal(r[:], np.arange(1000.0) * 2)
    np.testing.assert_array_equal(ndpack.open(path)[:], np.arange(1000.0) * 2)

    class FailsLater:
        shape, dtype = (1000,), np.dtype("f8")

        def __getitem__(self, key):
            if key[0].start >= 500:
                raise RuntimeError("disk error")
            return np.zeros(key[0].stop - key[0].start)

    bad = tmp_path / "bad.b2nd"
    with pytest.raises(RuntimeError, match="disk error"):
        ndpack.lazyexpr("a + f", operands={"a": a, "f": FailsLater()}).compute(urlpath=bad)
    assert not bad.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["r.b2nd"]    # no temporary left
    with pytest.raises(FileExistsError):
        ndpack.lazyexpr("a", operands={"a": a}).compute(urlpath=path, mode="a")


def test_numpy_protocols_and_methods():
    a = ndpack.asarray(np.arange(6.0).reshape(2, 3))
    e = np.add(np.sin(a), a)
    assert isinstance(e, ndpack.LazyExpr)
    np.testing.assert_allclose(e[()], np.sin(np.arange(6.0).reshape(2, 3)) + np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal((a > 2).where(a, -a)[()], np.where(a[:] > 2, a[:], -a[:]))
    cast = (a * 1.7).astype(np.int16)
    assert cast.dtype == np.int16
    np.testing.assert_array_equal(cast.compute()[:], (a[:] * 1.7).astype(np.int16))
    np.testing.assert_array_equal(np.asarray(a + 1), a[:] + 1)


def test_evaluate_into_h5py_and_zarr(tmp_path):
    h5py = pytest.importorskip("h5py")
    zarr = pytest.importorskip("zarr")
    a = np.random.default_rng(3).random((300, 40))
    with h5py.File(tmp_path / "f.h5", "w") as f:
        da = f.create_dataset("a", data=a, chunks=(50, 40))
        out = f.create_dataset("out", shape=a.shape, dtype="f8", chunks=(64, 40))
        b = ndpack.asarray(np.ones(40))
        ndpack.evaluate("da * 2 + b", local_dict={"da": da, "b": b}, out=out)
        np.testing.assert_array_equal(out[...], a * 2 + 1)
    z = zarr.open(str(tmp_path / "z.zarr"), mode="w", shape=a.shape, chunks=(70, 40), dtype="f8")
    z[...] = a
    zout = zarr.open(str(tmp_path / "o.zarr"), mode="w", shape=a.shape, chunks=(64, 20), dtype="f8")
    ndpack.evaluate("sqrt(z) + 1", local_dict={"z": z}, out=zout)
    np.testing.assert_allclose(zout[...], np.sqrt(a) + 1, rtol=1e-15)
    r = ndpack.lazyexpr("z - 1", operands={"z": z}).compute()
    np.testing.assert_array_equal(r[:], a - 1)


def test_truth_value_is_not_silently_true():
    a = ndpack.asarray(np.arange(4))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a == a)
    assert bool(ndpack.asarray(np.array([3])) == 3)
    assert not bool(ndpack.asarray(np.array([3])) == 4)


def test_astype_survives_composition():
    a = ndpack.asarray(np.linspace(0, 3, 40).reshape(4, 10), chunks=(2, 10))
    e = (a * 100).astype(np.int32) + 1
    assert e.dtype == np.int32
    np.testing.assert_array_equal(e[()], (np.linspace(0, 3, 40).reshape(4, 10) * 100)
                                  .astype(np.int32) + 1)


def test_argmin_with_axis_follows_a_resize():
    a = ndpack.asarray(np.arange(12.0).reshape(3, 4), chunks=(2, 2))
    e = ndpack.lazyexpr("argmax(a, axis=1) + a[:, 0]", operands={"a": a})
    assert e.shape == (3,)
    a.resize((5, 4))
    a[3:] = [[9, 8, 70, 6], [1, 90, 2, 3]]
    want = np.argmax(a[()], axis=1) + a[()][:, 0]
    assert e.shape == (5,)
    np.testing.assert_array_equal(e[()], want)


def test_computed_results_default_to_fast_cparams(tmp_path):
    import blosc2
    a = ndpack.asarray(np.linspace(0, 1, 10_000).reshape(100, 100), chunks=(50, 50))
    assert a.cparams.clevel == 5                          # user arrays: CParams() defaults
    r = (a * 2 + 1).compute(urlpath=str(tmp_path / "r.b2nd"))
    c = ndpack.cumulative_sum(a, axis=1)
    for res in (r, c):
        assert (res.cparams.codec, res.cparams.clevel) == (ndpack.Codec.ZSTD, 1)
        assert res.cparams.filters[-1] == ndpack.Filter.SHUFFLE
    np.testing.assert_array_equal(blosc2.open(str(tmp_path / "r.b2nd"))[:], a[:] * 2 + 1)
    given = (a * 2).compute(cparams={"codec": ndpack.Codec.LZ4, "clevel": 3})
    assert (given.cparams.codec, given.cparams.clevel) == (ndpack.Codec.LZ4, 3)


def test_zero_d_expressions_are_arrays_to_numpy():
    e = ndpack.lazyexpr("sum(a)", operands={"a": ndpack.asarray(np.arange(4.0))})
    got = np.asarray(e)
    assert isinstance(got, np.ndarray) and got.shape == () and float(got) == 6.0
    assert np.ndim(e) == 0 and np.asarray(e, dtype="f4").dtype == np.float32


def test_compute_into_out():
    x = np.arange(12.0).reshape(3, 4)
    a = ndpack.asarray(x)
    o = np.zeros((3, 4))
    assert ndpack.lazyexpr("a * 2", operands={"a": a}).compute(out=o) is o
    np.testing.assert_array_equal(o, x * 2)
    nd_out = ndpack.zeros((3, 4), chunks=(2, 2))
    e = ndpack.lazyexpr("a + 1", operands={"a": a}, out=nd_out)   # python-blosc2's out=
    assert e.compute() is nd_out
    np.testing.assert_array_equal(nd_out[()], x + 1)
    with pytest.raises(ndpack.ParameterError, match="urlpath"):
        (a * 2).compute(out=o, urlpath="x.b2nd")
    with pytest.raises(ValueError, match="shape"):
        ndpack.lazyexpr("a * 2", operands={"a": a}, out=np.zeros(3))


@pytest.mark.parametrize("text, expected", [
    ("a.sum(axis=1)", lambda x: x.sum(axis=1)),
    ("(a + 2).sum()", lambda x: (x + 2).sum()),
    ("a.mean(0) + a[0]", lambda x: x.mean(0) + x[0]),
    ("a.argmax(axis=None)", lambda x: x.argmax()),
    ("a + np.float32(1.5) * numpy.int8(-2)", lambda x: x + np.float32(1.5) * np.int8(-2)),
    ("a + arange(5)", lambda x: x + np.arange(5)),
    ("arange(2, 22, 2, shape=(2, 5)).sum(axis=0) + a[1]",
     lambda x: np.arange(2, 22, 2).reshape(2, 5).sum(axis=0) + x[1]),
    ("a * linspace(0, 1, 10, dtype=float32, shape=(2, 5))",
     lambda x: x * np.linspace(0, 1, 10, dtype=np.float32).reshape(2, 5)),
    ("arange(10).reshape((2, 5)) + arange(10, dtype=int32).reshape(2, 5) + a",
     lambda x: np.arange(10).reshape(2, 5) * 2 + x),
    ("linspace(0, 9, 10, chunks=(1, 5)).reshape(shape=(2, 5)) - a",
     lambda x: np.linspace(0, 9, 10).reshape(2, 5) - x),
    ("zeros((5,), dtype=np.int8) + ones((2, 5), dtype='i4') + full((5,), 3)",
     lambda x: np.zeros(5, np.int8) + np.ones((2, 5), "i4") + np.full(5, 3)),
])
def test_method_reductions_scalars_and_constructors(text, expected):
    """python-blosc2's string forms, through the parser's whitelist (NumPy the oracle)."""
    x = np.arange(10.0).reshape(2, 5)
    got = ndpack.lazyexpr(text, operands={"a": ndpack.asarray(x)})[()]
    assert ndpack.lazyexpr(text, operands={"a": ndpack.asarray(x), "np": np}).shape == \
        np.shape(got)                     # np given as a name (a caller's frame) too
    want = expected(x)
    np.testing.assert_allclose(got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype


@pytest.mark.parametrize("text", [
    "a.__class__.sum()", "np.save(1)", "np.float32(a)", "numpy.array(1)", "arange(a)",
    "zeros((3,), dtype=foo)", "zeros((3,), dtype='nope')", "zeros((3,), order='F')",
    "arange(10000000000)", "ones(shape=(100000, 100000))", "arange(*a)",
    "a.sum(out=a)", "a.tolist()", "arange(10, shape=(10,)).reshape((2, 5))",
    "a.reshape((3,))", "np.sin(a)",
])
def test_calls_outside_the_whitelist_rejected(text):
    with pytest.raises(ValueError) as info:
        ndpack.lazyexpr(text, operands={"a": np.ones(3)})
    assert str(info.value)
