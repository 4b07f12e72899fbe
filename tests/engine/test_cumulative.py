"""cumulative_sum / cumulative_prod against NumPy: every axis, chunkings that do and do
not divide the shape, include_initial, dtypes, outputs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack


def np_cumulative(op, x, axis, dtype=None, include_initial=False):
    fn = np.cumsum if op == "cumulative_sum" else np.cumprod
    r = fn(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(r.shape)
        shape[axis] = 1
        head = np.zeros(shape, r.dtype) if op == "cumulative_sum" else np.ones(shape, r.dtype)
        r = np.concatenate([head, r], axis=axis)
    return r


@st.composite
def cases(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=nd, max_size=nd)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    return dict(shape=shape, chunks=chunks, axis=draw(st.integers(-nd, nd - 1)),
                op=draw(st.sampled_from(["cumulative_sum", "cumulative_prod"])),
                dtype=draw(st.sampled_from(["int32", "int64", "bool", "float32", "float64",
                                            "complex128", "uint8"])),
                include_initial=draw(st.booleans()), seed=draw(st.integers(0, 2**16)))


@given(cases())
def test_matches_numpy(c):
    rng = np.random.default_rng(c["seed"])
    x = (rng.random(c["shape"]) * 3).astype(c["dtype"]) if c["dtype"] != "bool" else \
        rng.random(c["shape"]) < 0.5
    a = ndpack.asarray(x, chunks=c["chunks"])
    axis = c["axis"] % len(c["shape"])
    expected = np_cumulative(c["op"], x, axis, include_initial=c["include_initial"])
    got = getattr(ndpack, c["op"])(a, axis=c["axis"], include_initial=c["include_initial"])
    assert isinstance(got, ndpack.NDArray)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    # the carried total is folded in NumPy's order of operations: bit-identical
    np.testing.assert_array_equal(got[()], expected)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("chunks", [(4, 5, 6), (3, 7, 4), (8, 10, 12), (1, 1, 5)])
def test_every_axis_and_chunking(axis, chunks):
    rng = np.random.default_rng(axis)
    x = rng.normal(size=(8, 10, 12))
    a = ndpack.asarray(x, chunks=chunks)
    for op in ("cumulative_sum", "cumulative_prod"):
        for include_initial in (False, True):
            expected = np_cumulative(op, x, axis, include_initial=include_initial)
            got = getattr(ndpack, op)(a, axis=axis, include_initial=include_initial)
            np.testing.assert_array_equal(got[()], expected)
            if not include_initial:
                assert got.chunks == a.chunks


def test_dtype_out_urlpath_and_inputs(tmp_path):
    x = np.arange(1, 31, dtype=np.int16).reshape(5, 6)
    a = ndpack.asarray(x, chunks=(2, 4))
    r = ndpack.cumulative_sum(a, axis=1, dtype="float32")
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r[()], np.cumsum(x, axis=1, dtype=np.float32))
    assert ndpack.cumulative_sum(a, axis=0).dtype == np.cumsum(x, axis=0).dtype
    out = np.empty((6, 6))
    assert ndpack.cumulative_prod(a / 10, axis=0, include_initial=True, out=out) is out
    np.testing.assert_allclose(out, np_cumulative("cumulative_prod", x / 10, 0, None, True),
                               rtol=1e-15)
    p = tmp_path / "c.b2nd"
    r = ndpack.cumulative_sum(a, axis=0, urlpath=str(p), chunks=(3, 3),
                              cparams={"codec": ndpack.Codec.LZ4, "clevel": 1})
    assert r.chunks == (3, 3)
    np.testing.assert_array_equal(ndpack.open(str(p))[()], np.cumsum(x, axis=0))
    # expressions, NumPy and foreign inputs, 1-d without axis
    np.testing.assert_array_equal(ndpack.cumulative_sum(a * 2 + 1, axis=1)[()],
                                  np.cumsum(x * 2 + 1, axis=1))
    np.testing.assert_array_equal(ndpack.cumulative_sum(x[0])[()], np.cumsum(x[0]))
    np.testing.assert_array_equal(ndpack.cumulative_sum([1, 2, 3])[()], [1, 3, 6])
    assert (x == a[()]).all()                                # the input is untouched
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=(2, 2))
        np.testing.assert_array_equal(ndpack.cumulative_prod(f["x"], axis=0)[()],
                                      np.cumprod(x, axis=0))


def test_only_chunk_regions_are_read():
    x = np.random.default_rng(4).random((40, 30))
    seen = []

    class Rec:
        shape, dtype = x.shape, x.dtype

        def __getitem__(self, key):
            seen.append(x[key].size)
            return x[key]
    r = ndpack.cumulative_sum(Rec(), axis=0, chunks=(10, 10), blocks=(5, 5))
    np.testing.assert_array_equal(r[()], np.cumsum(x, axis=0))
    assert max(seen) == 100 and len(seen) == 12


def test_precision_long_float_sum():
    rng = np.random.default_rng(6)
    x = rng.random(1_000_000)
    a = ndpack.asarray(x, chunks=(32_768,))
    got = ndpack.cumulative_sum(a)[()]
    assert (got == np.cumsum(x)).all()


def test_errors():
    a = ndpack.asarray(np.ones((3, 4)))
    with pytest.raises(ValueError, match="axis"):
        ndpack.cumulative_sum(a)
    with pytest.raises(np.exceptions.AxisError):
        ndpack.cumulative_sum(a, axis=2)
    with pytest.raises(TypeError, match="axis"):
        ndpack.cumulative_sum(a, axis=(0, 1))
    with pytest.raises(ValueError, match="at least one dimension"):
        ndpack.cumulative_sum(np.float64(1.0))
    with pytest.raises(ValueError, match="out has shape"):
        ndpack.cumulative_sum(a, axis=0, out=np.empty((4, 4)))
    with pytest.raises(TypeError):
        ndpack.cumulative_sum(a, 0)                     # axis is keyword-only
    with pytest.raises(TypeError, match="no shape"):
        ndpack.cumulative_sum(object(), axis=0)


@pytest.mark.parametrize("blocks", [(1, 5, 12), (2, 10, 12), (2, 3, 4)])
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_aligned_path_layouts_special_chunks_and_casts(blocks, dtype, nthreads, monkeypatch):
    from ndpack.engine.ops import cumulative
    used = []
    real = cumulative._cumulate_aligned
    monkeypatch.setattr(cumulative, "_cumulate_aligned",
                        lambda *a: used.append(1) or real(*a))
    x = np.zeros((9, 10, 12), dtype)
    x[3:5, 2:7, 1:9] = (np.arange(80).reshape(2, 5, 8) % 3).astype(dtype)
    a = ndpack.zeros(x.shape, dtype=dtype, chunks=(4, 10, 12), blocks=blocks,
                     dparams={"nthreads": nthreads})
    a[3:5, 2:7, 1:9] = x[3:5, 2:7, 1:9]                  # the other chunks stay special
    for axis in (0, 1, 2):
        got = ndpack.cumulative_sum(a, axis=axis)
        np.testing.assert_array_equal(got[()], np.cumsum(x, axis=axis))
        assert got.dtype == np.cumsum(x, axis=axis).dtype
    # C-order blocks take the aligned path; (2, 3, 4) blocks do not
    assert bool(used) == (blocks != (2, 3, 4))


@st.composite
def aligned_cases(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 12), min_size=nd, max_size=nd)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    blocks = (draw(st.integers(1, chunks[0])),) + chunks[1:]    # C order in the chunk
    return dict(shape=shape, chunks=chunks, blocks=blocks, axis=draw(st.integers(0, nd - 1)),
                dtype=draw(st.sampled_from(["float64", "float32", "int64", "uint64",
                                            "int16"])),
                nthreads=draw(st.integers(1, 3)), seed=draw(st.integers(0, 2**16)))


@settings(deadline=None)
@given(aligned_cases())
def test_c_kernel_bit_identical_to_numpy(c):
    """Sums of float32/64 and 64-bit ints run in the C core (np.cumsum's bits, integer
    wrap-around included); other dtypes in NumPy."""
    from ndpack.engine.ops import cumulative
    calls, real = [], cumulative.running_sum
    cumulative.running_sum = lambda *a: calls.append(1) or real(*a)
    try:
        _kernel_case(c, calls)
    finally:
        cumulative.running_sum = real


def _kernel_case(c, calls):
    rng = np.random.default_rng(c["seed"])
    dtype = np.dtype(c["dtype"])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, c["shape"], dtype=dtype, endpoint=True)
    else:
        x = (rng.standard_normal(c["shape"]) * 1e3).astype(dtype)
    a = ndpack.asarray(x, chunks=c["chunks"], blocks=c["blocks"],
                       dparams={"nthreads": c["nthreads"]})
    with np.errstate(all="ignore"):
        expected = np.cumsum(x, axis=c["axis"])
    got = ndpack.cumulative_sum(a, axis=c["axis"])
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got[()], expected)
    assert bool(calls) == (dtype != np.int16)
    prod = ndpack.cumulative_prod(a, axis=c["axis"])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(prod[()], np.cumprod(x, axis=c["axis"]))


@pytest.mark.parametrize("nthreads", [1, 2])
def test_corrupt_chunk_raises_and_does_not_hang(nthreads):
    x = np.arange(4000.0).reshape(40, 100)
    a = ndpack.asarray(x, chunks=(5, 100), blocks=(1, 100), cparams={"clevel": 5},
                       dparams={"nthreads": nthreads})
    frame = bytearray(a.to_cframe())
    chunk = a.get_chunk(3)
    at = bytes(frame).find(chunk)
    frame[at + 40:at + 60] = b"\xee" * 20               # corrupt chunk 3's streams
    b = ndpack.ndarray_from_cframe(bytes(frame))
    for axis in (0, 1):
        with pytest.raises(ndpack.FormatError):
            ndpack.cumulative_sum(b, axis=axis)
