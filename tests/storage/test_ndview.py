"""Views from ``expand_dims`` and ``squeeze``: NumPy as the oracle, python-blosc2 for
the frames a view writes, and the base's chunks never copied nor corrupted."""

import dataclasses

import blosc2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.engine.ops import shape as shp
from ndpack.storage.layout import Layout
from ndpack.storage.ndview import view_layout
from ndpack.storage.schunk import SChunk

from tests.helpers import assert_eq, random_data


_data = random_data


@st.composite
def arrays(draw):
    nd = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(1, 7)) for _ in range(nd))
    # length-1 axes often, some with chunks of 2 (a squeeze that must copy)
    shape = tuple(1 if draw(st.booleans()) else s for s in shape)
    chunks = tuple(draw(st.integers(1, s + 1)) for s in shape)
    blocks = tuple(draw(st.integers(1, c)) for c in chunks)
    dtype = draw(st.sampled_from(["f8", "i2", "c8", "?"]))
    x = _data(shape, dtype, draw(st.integers(0, 99)))
    return x, ndpack.asarray(x, chunks=chunks, blocks=blocks)


def _no_copy(monkeypatch):
    """Fail if anything creates an array or copies a compressed chunk."""
    def fail(*args, **kwargs):
        raise AssertionError("a chunk was copied")
    for name in ("fill_from", "fill_chunks", "create", "_copy_chunks"):
        monkeypatch.setattr(shp, name, fail)
    monkeypatch.setattr(SChunk, "get_chunk", fail)
    monkeypatch.setattr(SChunk, "append_chunk", fail)


def _same_storage(v, base):
    assert v.base is base and v.schunk is base.schunk
    assert v.layout.nchunks == base.layout.nchunks
    assert v.layout.chunk_nbytes == base.layout.chunk_nbytes


@settings(max_examples=60, deadline=None)
@given(data=st.data(), xa=arrays())
def test_views_against_numpy(data, xa):
    x, a = xa
    v, y = a, x
    for _ in range(data.draw(st.integers(1, 4))):          # views of views
        if data.draw(st.booleans()) or y.ndim == 0:
            ax = data.draw(st.integers(-y.ndim - 1, y.ndim))
            v, y = ndpack.expand_dims(v, ax), np.expand_dims(y, ax)
            _same_storage(v, a)
        else:
            ones = [d for d in range(y.ndim) if y.shape[d] == 1]
            axis = data.draw(st.none() | st.sampled_from(ones)) if ones else None
            drop = ones if axis is None else [axis]
            viewable = all(v.chunks[d] == 1 for d in drop)
            v, y = ndpack.squeeze(v, axis), np.squeeze(y, axis)
            if viewable:
                _same_storage(v, a)
            else:                                     # chunks of 2 on a length-1 axis
                assert v.base is None
                v, a, x = v, v, y                      # a new base from here on
        assert_eq(v, y, rtol=0)
    # every figure of the view's layout (picked, not computed) as computed from scratch
    lay = v.layout
    full = Layout(lay.shape, lay.chunks, lay.blocks, lay.dtype)
    for f in dataclasses.fields(Layout):
        if f.name == "nd":          # the stored blocks' n-d shape (ZFP's field): the base's
            continue
        assert getattr(lay, f.name) == getattr(full, f.name), f.name
    # chunk by chunk, the same bytes and the coordinates of the view's grid
    for info in v.iterchunks_info():
        assert info.coords == lay.chunk_coords(info.nchunk)
        assert v.get_chunk(info.nchunk) == a.get_chunk(info.nchunk)
        got = v.decode_chunk(info.nchunk)
        region = lay.region(info.coords)
        assert_eq(got[tuple(slice(0, r.stop - r.start) for r in region)], y[region], rtol=0)
    if y.ndim:
        key = tuple(data.draw(st.integers(0, s - 1)) for s in y.shape)
        assert v[key] == y[key]
        idx = np.array([y.shape[0] - 1, 0])
        assert_eq(v[idx], y[idx], rtol=0)
        assert_eq(v.oindex[(idx,) + (slice(None),) * (y.ndim - 1)], y[idx], rtol=0)
        assert_eq(v[1:, ...], y[1:, ...], rtol=0)


def test_no_chunk_is_copied(monkeypatch):
    x = _data((5, 6))
    a = ndpack.asarray(x, chunks=(2, 4), blocks=(1, 2))
    _no_copy(monkeypatch)
    e = ndpack.expand_dims(a, (0, 2))
    s = ndpack.squeeze(e)
    s1 = ndpack.squeeze(e, 0)
    monkeypatch.undo()
    assert e.chunks == (1, 2, 1, 4) and e.blocks == (1, 1, 1, 2)
    for v in (e, s, s1):
        _same_storage(v, a)
    assert_eq(e, x[None, :, None], rtol=0)
    assert_eq(s, x, rtol=0)
    assert_eq(s1, x[:, None], rtol=0)
    # the base is untouched: its own metalayer, shape and frame
    assert a.shape == (5, 6) and a.meta["b2nd"] == a.schunk.meta["b2nd"]
    assert blosc2.ndarray_from_cframe(a.to_cframe()).shape == (5, 6)


def test_writes_through_views():
    x = np.arange(24.0).reshape(4, 6)
    a = ndpack.asarray(x, chunks=(2, 3), blocks=(1, 3))
    e = ndpack.expand_dims(a, (0, 3))
    s = ndpack.squeeze(ndpack.expand_dims(a, 1), 1)
    e[0, 1, 2, 0] = -1
    x[1, 2] = -1
    assert_eq(a, x, rtol=0)
    s[3] = 7                                       # a whole row through another view
    x[3] = 7
    assert_eq(e, x[None, :, :, None], rtol=0)
    e.vindex[[0, 0], [0, 2], [5, 1], [0, 0]] = [100, 200]      # fancy writes
    x[0, 5], x[2, 1] = 100, 200
    assert_eq(a, x, rtol=0)
    a[0] = 0                                       # and from the base to the views
    x[0] = 0
    assert_eq(s, x, rtol=0)
    assert_eq(e, x[None, :, :, None], rtol=0)
    # vlmeta is the base's; the view's metalayers are its own and read-only
    e.vlmeta["note"] = "via view"
    assert a.vlmeta["note"] == "via view"
    assert e.meta["b2nd"][2] == [1, 4, 6, 1] and a.meta["b2nd"][2] == [4, 6]
    with pytest.raises(ndpack.ParameterError, match="read-only"):
        e.meta["b2nd"] = e.meta["b2nd"]


def test_file_backed_view(tmp_path):
    x = np.arange(30, dtype="i4").reshape(1, 5, 6)
    path = tmp_path / "a.b2nd"
    a = ndpack.asarray(x, chunks=(1, 2, 4), blocks=(1, 1, 2), urlpath=path, mode="w")
    v = ndpack.squeeze(a)
    _same_storage(v, a)
    assert v.urlpath is None and a.urlpath == str(path)
    v[4, 5] = 99
    x[0, 4, 5] = 99
    assert_eq(ndpack.open(path), x, rtol=0)
    assert_eq(blosc2.open(str(path))[:], x, rtol=0)      # the base file keeps its layout
    ro = ndpack.squeeze(ndpack.open(path, mode="r"))
    assert_eq(ro, x[0], rtol=0)
    with pytest.raises(ndpack.ParameterError, match="mode .r."):
        ro[0, 0] = 1


def test_save_and_cframe_of_a_view(tmp_path):
    x = _data((3, 1, 7), "f4")
    a = ndpack.asarray(x, chunks=(2, 1, 3), blocks=(1, 1, 3), urlpath=tmp_path / "a.b2nd",
                       mode="w", meta={"unit": "m"})
    a.vlmeta["kept"] = 1
    v = ndpack.expand_dims(ndpack.squeeze(a, 1), -1)        # (3, 7, 1)
    want = x[:, 0, :, None]
    frame = v.to_cframe()
    for o in (blosc2.ndarray_from_cframe(frame), ndpack.ndarray_from_cframe(frame)):
        assert o.shape == (3, 7, 1) and o.chunks == (2, 3, 1) and o.blocks == (1, 3, 1)
        assert_eq(o[:], want, rtol=0)
    v.save(tmp_path / "v.b2nd")
    for o in (blosc2.open(str(tmp_path / "v.b2nd")), ndpack.open(tmp_path / "v.b2nd")):
        assert o.shape == (3, 7, 1) and o.meta["unit"] == "m" and o.vlmeta["kept"] == 1
        assert_eq(o[:], want, rtol=0)
    assert ndpack.open(tmp_path / "a.b2nd").shape == (3, 1, 7)
    # python-blosc2's own view writes the same frame as ours
    b = blosc2.asarray(x, chunks=(2, 1, 3), blocks=(1, 1, 3))
    bv = blosc2.expand_dims(blosc2.squeeze(b, 1), -1)
    assert blosc2.ndarray_from_cframe(bv.to_cframe()).shape == (3, 7, 1)


def test_expressions_and_reductions_over_views():
    x = _data((6, 8))
    a = ndpack.asarray(x, chunks=(3, 4), blocks=(1, 4))
    v = ndpack.expand_dims(a, 0)
    w = ndpack.asarray(x[None] * 2, chunks=(1, 3, 4), blocks=(1, 1, 4))   # aligned
    assert_eq(ndpack.lazyexpr("v + 1", {"v": v}).compute(), x[None] + 1)
    assert_eq((v * w).compute(), x[None] * x[None] * 2)
    assert_eq(ndpack.sum(v, axis=1), x[None].sum(axis=1))
    assert_eq(ndpack.sum(v, axis=(0, 2)), x.sum(axis=1))
    assert_eq(ndpack.mean(ndpack.squeeze(v)), x.mean())
    out = ndpack.lazyexpr("sin(v) - w", {"v": v, "w": w}).compute(urlpath=None)
    assert_eq(out, np.sin(x[None]) - x[None] * 2)


def test_resize_and_append():
    a = ndpack.asarray(np.arange(5), chunks=(2,), blocks=(1,))
    e = ndpack.expand_dims(a, 0)
    s = ndpack.squeeze(e)
    for v in (e, s):
        with pytest.raises(ValueError, match="cannot resize a view"):
            v.resize((1, 7)[-v.ndim:])
    with pytest.raises(ValueError, match="cannot resize a view"):
        s.append([5, 6])
    assert_eq(a, np.arange(5), rtol=0)
    a.append([5, 6])                          # the views follow their base
    assert e.shape == (1, 7) and s.shape == (7,)
    assert_eq(e, np.arange(7)[None], rtol=0)
    a.resize((3,))
    assert_eq(s, np.arange(3), rtol=0)
    # a base whose view removed an axis cannot make that axis longer
    b = ndpack.asarray(np.arange(6.0).reshape(1, 6), chunks=(1, 4))
    sb = ndpack.squeeze(b)
    with pytest.raises(ValueError, match="cannot resize to"):
        b.resize((2, 6))
    assert b.shape == (1, 6) and b.schunk.nchunks == 2
    b.resize((1, 9))
    assert_eq(sb, np.r_[np.arange(6.0), 0, 0, 0], rtol=0)
    del sb                                    # no live view: the base is free again
    b.resize((2, 6))
    assert b.shape == (2, 6)


def test_copies_when_asked_or_needed(tmp_path):
    x = _data((1, 4, 1))
    a = ndpack.asarray(x, chunks=(1, 2, 1))
    c = ndpack.squeeze(a, cparams={"clevel": 1})
    assert c.base is None and c.schunk is not a.schunk
    assert_eq(c, x[0, :, 0], rtol=0)
    f = ndpack.expand_dims(a, 0, urlpath=tmp_path / "f.b2nd", mode="w")
    assert f.base is None and ndpack.open(tmp_path / "f.b2nd").shape == (1, 1, 4, 1)
    g = ndpack.asarray(x, chunks=(2, 2, 1), blocks=(2, 1, 1))   # a chunk of 2 on axis 0
    sg = ndpack.squeeze(g, 0)
    assert sg.base is None
    assert_eq(sg, x[0], rtol=0)
    n = ndpack.expand_dims(x, 1)                   # NumPy in, a new NDArray out
    assert isinstance(n, ndpack.NDArray) and n.base is None
    assert_eq(n, x[:, None], rtol=0)


def test_zero_dimensional_and_empty():
    a = ndpack.asarray(np.array(3.5))
    e = ndpack.expand_dims(a, (0, 1))
    assert e.shape == (1, 1) and e.base is a and e[0, 0] == 3.5
    s = ndpack.squeeze(e)
    assert s.shape == () and s[()] == 3.5
    z = ndpack.zeros((0, 3))
    ez = ndpack.expand_dims(z, 1)
    assert ez.shape == (0, 1, 3) and ez[:].shape == (0, 1, 3)


def test_view_layout_errors():
    lay = ndpack.zeros((1, 4), chunks=(1, 2)).layout
    with pytest.raises(ValueError, match="increasing"):
        view_layout(lay, (1, 0))
    with pytest.raises(ValueError, match="cannot remove axis 1"):
        view_layout(lay, (0,))
    a = ndpack.zeros((2, 3))
    with pytest.raises(ValueError, match="out of range"):
        a.axes_view((0, 5))
    with pytest.raises(ValueError, match="squeeze"):
        ndpack.squeeze(a, 0)


def test_squeeze_method():
    """``NDArray.squeeze`` as python-blosc2's method: a view when the removed axes have
    chunks of 1, a copy otherwise, NumPy's errors for bad axes."""
    x = np.arange(24).reshape(1, 2, 1, 12)
    a = ndpack.asarray(x, chunks=(1, 1, 1, 4), blocks=(1, 1, 1, 2))
    for axis in (None, 0, 2, -2, (0, 2), [2, 0]):
        s = a.squeeze(axis)
        assert s.base is a
        np.testing.assert_array_equal(s[()], np.squeeze(x, axis=None if axis is None
                                                        else tuple(axis) if isinstance(
                                                            axis, list) else axis))
    for bad in (1, 4, (0, 0)):
        with pytest.raises(ValueError):
            a.squeeze(bad)
    c = ndpack.asarray(x[0], chunks=(2, 1, 4), blocks=(2, 1, 2))[()]
    b = ndpack.asarray(x, chunks=(2, 2, 1, 4), blocks=(1, 1, 1, 2))   # chunk 2 on axis 0
    s = b.squeeze(0)
    assert s.base is None and s.shape == (2, 1, 12)
    np.testing.assert_array_equal(s[()], c)
