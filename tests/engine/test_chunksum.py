"""The fused decode + sum (csrc/format/reduce.c, ndpack/engine/chunksum.py) against
NumPy and against the general chunk path: dtypes, axes, padding, special and
memcpyed chunks, files written by python-blosc2, determinism and bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.chunks import compress2, sum_chunk
from ndpack.engine.ops import chunksum
from ndpack.engine.ops import reductions
from ndpack.engine.expr.nodes import Operand, Reduce
from ndpack.errors import FormatError, ParameterError

from tests.helpers import assert_eq

DTYPES = ["float64", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool"]


def _data(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.3
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def _general(fn, *args, **kwargs):
    saved = reductions.fused_sum_applies
    reductions.fused_sum_applies = lambda red, arg: False
    try:
        return fn(*args, **kwargs)
    finally:
        reductions.fused_sum_applies = saved


def _check(got, expected, dtype):
    """Floats to the data's scale (sums in another order); anything else exact
    (integers wrap as NumPy's)."""
    want = np.asarray(expected)
    if want.dtype.kind == "f":
        rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
        assert_eq(got, expected, rtol=rtol, atol=rtol * np.abs(want).max(initial=1.0))
    else:
        assert_eq(got, expected, rtol=0)


@st.composite
def cases(draw):
    nd = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 11), min_size=nd, max_size=nd)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    blocks = tuple(draw(st.integers(1, c)) for c in chunks)
    axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                          st.sets(st.integers(0, nd - 1), min_size=1).map(tuple)))
    return dict(shape=shape, chunks=chunks, blocks=blocks, axis=axis,
                dtype=draw(st.sampled_from(DTYPES)), op=draw(st.sampled_from(["sum", "mean"])),
                keepdims=draw(st.booleans()), clevel=draw(st.sampled_from([0, 5])),
                nthreads=draw(st.sampled_from([1, 2, 3])), seed=draw(st.integers(0, 2**16)))


@settings(max_examples=200, deadline=None)
@given(cases())
def test_matches_numpy_and_general_path(c):
    x = _data(np.random.default_rng(c["seed"]), c["shape"], c["dtype"])
    a = ndpack.asarray(x, chunks=c["chunks"], blocks=c["blocks"],
                       cparams={"clevel": c["clevel"]}, dparams={"nthreads": c["nthreads"]})
    kw = {"axis": c["axis"], "keepdims": c["keepdims"]}
    red = Reduce(c["op"], Operand(a), axis=c["axis"], keepdims=c["keepdims"])
    assert chunksum.applies(red, red.arg)
    with np.errstate(all="ignore"):
        expected = getattr(np, c["op"])(x, **kw)
    got = getattr(ndpack, c["op"])(a, **kw)
    _check(got, expected, c["dtype"])
    _check(got, _general(getattr(ndpack, c["op"]), a, **kw), c["dtype"])


@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2), (1, 2)])
def test_results_do_not_depend_on_threads_or_timing(axis):
    x = np.random.default_rng(1).standard_normal((40, 50, 60))
    ref = None
    for nthreads in (2, 2, 2, 4):
        a = ndpack.asarray(x, chunks=(7, 50, 60), blocks=(1, 10, 60),
                           dparams={"nthreads": nthreads})
        got = ndpack.sum(a, axis=axis)
        if nthreads == 2:
            ref = got if ref is None else ref
            assert np.array_equal(got, ref)          # same bits, run after run
        np.testing.assert_allclose(got, x.sum(axis=axis), rtol=1e-12, atol=1e-11)


def test_special_chunks_add_their_value():
    a = ndpack.zeros((30, 40), dtype=np.float64, chunks=(10, 40), blocks=(5, 20))
    a[10:20] = 2.5                    # a repeated-value chunk
    a[20:30] = np.arange(400.0).reshape(10, 40)
    x = a[:]
    kinds = [a.special_value(a.get_chunk(i)) for i in range(3)]
    assert kinds[0] is not None and kinds[2] is None
    for axis in (None, 0, 1):
        np.testing.assert_allclose(ndpack.sum(a, axis=axis), x.sum(axis=axis), rtol=1e-14)
    n = ndpack.full((9, 4), np.nan, chunks=(3, 4))
    assert np.isnan(ndpack.sum(n)) and np.isnan(ndpack.mean(n, axis=0)).all()
    z = ndpack.zeros((1000, 1000), dtype=np.int32, chunks=(100, 1000))
    assert ndpack.sum(z) == 0 and ndpack.sum(z).dtype == np.int64


def test_nan_and_inf_propagate():
    x = np.arange(120.0).reshape(10, 12)
    x[3, 4], x[7, 1] = np.nan, np.inf
    a = ndpack.asarray(x, chunks=(4, 5), blocks=(2, 3))
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(ndpack.sum(a, axis=axis), x.sum(axis=axis))


def test_integer_wraparound_and_dtype_argument():
    x = np.full((64, 64), np.iinfo(np.int64).max // 3, np.int64)
    a = ndpack.asarray(x, chunks=(16, 32), blocks=(4, 32))
    with np.errstate(all="ignore"):
        assert ndpack.sum(a) == x.sum()
        np.testing.assert_array_equal(ndpack.sum(a, axis=0, dtype=np.int32),
                                      x.sum(axis=0, dtype=np.int32))
    u = np.arange(1000, dtype=np.uint8).reshape(10, 100)
    b = ndpack.asarray(u, chunks=(3, 30))
    for dtype in (None, np.uint16, np.float64, np.float32):
        _check(ndpack.sum(b, axis=1, dtype=dtype), u.sum(axis=1, dtype=dtype),
               dtype or np.uint64)


def test_unaligned_memcpyed_chunks_in_a_cframe():
    """clevel 0 stores chunks raw; in a cframe they sit at any byte offset."""
    x = np.random.default_rng(2).standard_normal((13, 17))
    a = ndpack.asarray(x, chunks=(5, 17), blocks=(2, 17), cparams={"clevel": 0})
    frame = a.to_cframe()
    for shift in range(1, 8):
        buf = bytearray(shift) + bytearray(frame)
        b = ndpack.ndarray_from_cframe(memoryview(buf)[shift:])
        np.testing.assert_allclose(ndpack.sum(b, axis=0), x.sum(axis=0), rtol=1e-13)


def test_on_disk_and_written_by_python_blosc2(tmp_path):
    blosc2 = pytest.importorskip("blosc2")
    x = np.random.default_rng(3).random((50, 60, 7)).astype(np.float32)
    path = str(tmp_path / "b.b2nd")
    blosc2.asarray(x, chunks=(20, 30, 7), blocks=(5, 10, 7), urlpath=path, mode="w")
    a = ndpack.open(path)
    for axis in (None, 0, 1, 2, (0, 1)):
        for op in ("sum", "mean"):
            _check(getattr(ndpack, op)(a, axis=axis), getattr(np, op)(x, axis=axis),
                   np.float32)
    ours = ndpack.asarray(x, urlpath=str(tmp_path / "o.b2nd"), mode="w", chunks=(9, 9, 7))
    _check(ndpack.sum(ndpack.open(ours.urlpath), axis=1), x.sum(axis=1), np.float32)


def test_general_path_kept_where_the_fused_sum_does_not_apply():
    x = np.arange(24.0).reshape(4, 6)
    a = ndpack.asarray(x, chunks=(2, 3))
    cases = [Reduce("sum", Operand(a), axis=0, where=Operand(np.asarray(x > 3))),
             Reduce("prod", Operand(a), axis=0),
             Reduce("sum", Operand(x), axis=0),
             Reduce("sum", Operand(ndpack.asarray(x.astype(">f8"))), axis=0),
             Reduce("sum", Operand(ndpack.asarray(x.astype(np.complex128))), axis=0),
             Reduce("sum", Operand(ndpack.asarray(x.astype(np.float16))), axis=0)]
    for red in cases:
        assert not chunksum.applies(red, red.arg)
        with pytest.raises(ValueError, match="does not apply"):
            chunksum.fused_sum(red)
    np.testing.assert_array_equal(ndpack.sum(a, axis=0, where=x > 3),
                                  x.sum(axis=0, where=x > 3))
    big = ndpack.asarray(x.astype(">f8"), chunks=(2, 3))
    np.testing.assert_array_equal(ndpack.sum(big, axis=1), x.sum(axis=1))


def test_bad_input_is_an_error_not_a_crash():
    x = np.arange(60.0)
    chunk = compress2(x.tobytes(), typesize=8, blocksize=80)
    out = np.zeros(6)
    sum_chunk(chunk, np.float64, (6, 10), (1, 10), (6, 10), (1,), out, 0, (1, 0))
    np.testing.assert_array_equal(out, x.reshape(6, 10).sum(axis=1))
    with pytest.raises(FormatError, match="480"):
        sum_chunk(chunk, np.float64, (6, 20), (1, 10), (6, 20), (1,), out, 0, (1, 0))
    with pytest.raises(ParameterError, match="too small"):
        sum_chunk(chunk, np.float64, (6, 10), (1, 10), (6, 10), (1,), out, 1, (1, 0))
    with pytest.raises(ParameterError, match="do not fit"):
        sum_chunk(chunk, np.float64, (6, 10), (1, 11), (6, 10), (1,), out, 0, (1, 0))
    with pytest.raises(ParameterError, match="cannot sum"):
        sum_chunk(chunk, np.complex64, (6, 5), (1, 5), (6, 5), (1,), out, 0, (1, 0))
    with pytest.raises(ParameterError, match="float64, int64 or uint64"):
        sum_chunk(chunk, np.float64, (6, 10), (1, 10), (6, 10), (1,), out.astype("f4"),
                  0, (1, 0))
    with pytest.raises(ParameterError, match="double accumulator"):
        sum_chunk(chunk, np.float64, (6, 10), (1, 10), (6, 10), (1,),
                  np.zeros(6, np.int64), 0, (1, 0))
    bad = bytearray(chunk)
    bad[40:60] = b"\xff" * 20
    with pytest.raises(FormatError):
        sum_chunk(bytes(bad), np.float64, (6, 10), (1, 10), (6, 10), (1,), out, 0, (1, 0))
    with pytest.raises(FormatError):
        sum_chunk(chunk[:50], np.float64, (6, 10), (1, 10), (6, 10), (1,), out, 0, (1, 0))


@pytest.mark.parametrize("shape, chunks", [((3_000_000,), (30_000,)),
                                           ((60, 200, 250), (7, 200, 250)),
                                           ((60, 200, 250), (16, 64, 64))])
def test_full_sums_are_pairwise_accurate(shape, chunks):
    """Pairwise row sums, a binary counter over a chunk's rows and pairwise chunk
    slots: within 2 ulp of the exact sum, as NumPy's pairwise sum (a sequential sum of
    these sizes is off by ~1e-14)."""
    import math
    x = np.random.default_rng(5).random(shape) + 1.0
    a = ndpack.asarray(x, chunks=chunks)
    exact = math.fsum(x.ravel())
    assert abs(ndpack.sum(a) - exact) / exact <= 4.5e-16
    assert abs(ndpack.mean(a) * x.size - exact) / exact <= 6.7e-16
