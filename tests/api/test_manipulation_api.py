"""Manipulation functions of the namespace (broadcast_arrays, meshgrid, tile, repeat,
unstack, tril, triu, diff) against array_api_strict (revision 2024.12), over inputs of
several chunks and every kind; results are NDArrays written chunk by chunk."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ndpack

from tests.helpers import as_operand, assert_eq

xp = pytest.importorskip("array_api_strict")
xp.set_array_api_strict_flags(api_version="2024.12")
from hypothesis.extra.array_api import make_strategies_namespace  # noqa: E402

xps = make_strategies_namespace(xp, api_version="2024.12")
KINDS = st.sampled_from(["ndarray", "lazyexpr", "numpy"])


def _arrays(min_dims=1, max_dims=3, max_side=6, dtypes=None):
    if dtypes is None:
        dtypes = xps.real_dtypes() | xps.boolean_dtypes()
    return xps.arrays(dtype=dtypes,
                      shape=xps.array_shapes(min_dims=min_dims, max_dims=max_dims,
                                             min_side=0, max_side=max_side))


def _same(got, want):
    """An NDArray, then metadata and exact values."""
    assert isinstance(got, ndpack.NDArray), type(got)
    assert_eq(got, want, rtol=0)


@given(x=_arrays(max_side=5), kind=KINDS, data=st.data())
def test_tile(x, kind, data):
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4)))
    assume(np.prod([max(s, 1) for s in x.shape]) * np.prod(reps or [1]) < 5000)
    _same(ndpack.tile(as_operand(x, kind), reps, chunks=None), xp.tile(x, reps))


@given(x=_arrays(max_side=5), kind=KINDS, data=st.data())
def test_repeat(x, kind, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    n = x.size if axis is None else x.shape[axis]
    repeats = data.draw(st.integers(0, 3) | st.lists(st.integers(0, 3), min_size=n,
                                                     max_size=n).map(lambda v: np.array(v, dtype=np.int64)))
    want = xp.repeat(x, xp.asarray(repeats) if isinstance(repeats, np.ndarray) else repeats,
                     axis=axis)
    _same(ndpack.repeat(as_operand(x, kind), repeats, axis=axis), want)


@given(x=_arrays(min_dims=2), kind=KINDS, k=st.integers(-4, 4))
def test_tril_triu(x, kind, k):
    _same(ndpack.tril(as_operand(x, kind), k=k), xp.tril(x, k=k))
    _same(ndpack.triu(as_operand(x, kind), k=k), xp.triu(x, k=k))


@given(x=_arrays(dtypes=xps.real_dtypes()), kind=KINDS, data=st.data())
def test_diff(x, kind, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = data.draw(st.integers(0, 3))
    extra = {}
    if data.draw(st.booleans()):
        shape = list(x.shape)
        shape[axis] = data.draw(st.integers(1, 2))
        extra["prepend"] = data.draw(xps.arrays(dtype=x.dtype, shape=tuple(shape)))
    want = xp.diff(x, axis=axis, n=n, **extra)
    extra = {k: np.asarray(v) for k, v in extra.items()}
    _same(ndpack.diff(as_operand(x, kind), axis=axis, n=n, **extra), want)


@given(x=_arrays(min_dims=1), kind=KINDS, data=st.data())
def test_unstack(x, kind, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    got, want = ndpack.unstack(as_operand(x, kind), axis=axis), xp.unstack(x, axis=axis)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


@given(data=st.data(), indexing=st.sampled_from(["xy", "ij"]), kind=KINDS)
def test_meshgrid(data, indexing, kind):
    dtype = data.draw(xps.real_dtypes())
    arrays = data.draw(st.lists(_arrays(min_dims=1, max_dims=1, dtypes=st.just(dtype)),
                                min_size=1, max_size=3))
    got = ndpack.meshgrid(*[as_operand(a, kind) for a in arrays], indexing=indexing)
    want = xp.meshgrid(*arrays, indexing=indexing)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


@given(data=st.data(), kind=KINDS)
def test_broadcast_arrays(data, kind):
    shapes = data.draw(xps.mutually_broadcastable_shapes(3, min_dims=0, max_dims=3,
                                                          max_side=4))
    arrays = [data.draw(xps.arrays(dtype=xps.real_dtypes(), shape=s))
              for s in shapes.input_shapes]
    got = ndpack.broadcast_arrays(*[as_operand(a, kind) for a in arrays])
    for g, w in zip(got, xp.broadcast_arrays(*arrays)):
        _same(g, w)


def test_results_keep_storage_keywords(tmp_path):
    a = ndpack.asarray(np.arange(20.0).reshape(4, 5), chunks=(2, 5),
                       cparams={"codec": ndpack.Codec.ZSTD, "clevel": 3})
    t = ndpack.tile(a, (3, 1), urlpath=tmp_path / "t.b2nd", mode="w", chunks=(5, 5))
    assert t.cparams.codec == ndpack.Codec.ZSTD and t.chunks == (5, 5)
    np.testing.assert_array_equal(ndpack.open(tmp_path / "t.b2nd")[()],
                                  np.tile(np.arange(20.0).reshape(4, 5), (3, 1)))


def test_bad_input():
    a = ndpack.asarray(np.arange(6))
    with pytest.raises(ValueError, match="non-negative"):
        ndpack.tile(a, (-1,))
    with pytest.raises(ValueError, match="counts for an axis"):
        ndpack.repeat(a, np.array([1, 2]))
    with pytest.raises(TypeError, match="integers"):
        ndpack.repeat(a, 1.5)
    with pytest.raises(ValueError, match="2 dimensions"):
        ndpack.tril(a)
    with pytest.raises(ValueError, match="indexing"):
        ndpack.meshgrid(a, indexing="yx")
    with pytest.raises(ValueError, match="non-negative"):
        ndpack.diff(a, n=-1)


def test_reshape_copy_keyword():
    a = ndpack.arange(12, shape=(3, 4))
    assert ndpack.reshape(a, (3, 4), copy=False) is a
    with pytest.raises(ValueError, match="copy=False"):
        ndpack.reshape(a, (4, 3), copy=False)
    for copy in (None, True):
        r = ndpack.reshape(a, (2, 6), copy=copy)
        assert r is not a
        np.testing.assert_array_equal(r[()], np.arange(12).reshape(2, 6))


# ---- output layouts: every manipulation function, any input layout ------------------

@st.composite
def _laid_out(draw, min_dims=0, max_dims=3):
    """A NumPy array and an NDArray of it with drawn chunks and blocks (sides 0..4,
    chunks and blocks from 1 up to beyond the side, or 0 on an empty side)."""
    shape = draw(st.lists(st.integers(0, 4), min_size=min_dims, max_size=max_dims))
    chunks, blocks = [], []
    for s in shape:
        c = 0 if s == 0 and draw(st.booleans()) else draw(st.integers(1, 5))
        chunks.append(c)
        blocks.append(0 if c == 0 else draw(st.integers(1, c)))
    x = np.arange(int(np.prod(shape)), dtype=np.int16).reshape(shape)
    if 0 in chunks and 0 not in shape:
        chunks = [max(c, 1) for c in chunks]
        blocks = [max(b, 1) for b in blocks]
    return x, ndpack.asarray(x, chunks=tuple(chunks), blocks=tuple(blocks))


_STORE = [{}, {"cparams": {"clevel": 1}}]


@given(xa=_laid_out(), data=st.data(), kw=st.sampled_from(_STORE))
def test_manipulations_derive_valid_layouts(xa, data, kw):
    """No shape, chunks or blocks of the input makes an invalid output layout ("blocks
    are larger than chunks"): the one derivation clips blocks to the chunks."""
    x, a = xa
    nd = x.ndim
    ax = data.draw(st.integers(-nd - 1, nd))
    _same_view(ndpack.expand_dims(a, axis=ax, **kw), np.expand_dims(x, ax))
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    _same_view(ndpack.broadcast_to(a, tuple(lead) + x.shape, **kw),
               np.broadcast_to(x, tuple(lead) + x.shape))
    sax = data.draw(st.integers(-nd - 1, nd))
    _same_view(ndpack.stack([a, a], axis=sax, **kw), np.stack([x, x], axis=sax))
    _same_view(ndpack.reshape(a, (-1,), **kw), x.reshape(-1))
    _same_view(ndpack.squeeze(a, axis=tuple(d for d in range(nd) if x.shape[d] == 1), **kw),
               np.squeeze(x, axis=tuple(d for d in range(nd) if x.shape[d] == 1)))
    if nd:
        s, d = data.draw(st.integers(0, nd - 1)), data.draw(st.integers(0, nd - 1))
        _same_view(ndpack.moveaxis(a, s, d, **kw), np.moveaxis(x, s, d))
        _same_view(ndpack.permute_dims(a, tuple(range(nd))[::-1], **kw), x.T)
        axis = data.draw(st.integers(-nd, nd - 1))
        _same_view(ndpack.concat([a, a], axis=axis, **kw), np.concatenate([x, x], axis))
        _same_view(ndpack.flip(a, **kw), np.flip(x))
        _same_view(ndpack.roll(a, 1, **kw), np.roll(x, 1))
        _same_view(ndpack.repeat(a, 2, axis=0), np.repeat(x, 2, axis=0))
        _same_view(ndpack.tile(a, (2,) * nd), np.tile(x, (2,) * nd))
    if nd >= 2:
        _same_view(ndpack.matrix_transpose(a, **kw), np.swapaxes(x, -1, -2))


def _same_view(got, want):
    if want is None:
        return
    assert isinstance(got, ndpack.NDArray), type(got)
    assert all(b <= c for b, c in zip(got.blocks, got.chunks)), (got.chunks, got.blocks)
    np.testing.assert_array_equal(got[()], want)
    assert got.shape == want.shape
