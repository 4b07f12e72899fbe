"""NDArray's layout record (storage/layout.py), its chunk-level handle (ndread.ChunkIO)
and storage's dispatchers (storage/dispatch.py)."""

import dataclasses
import itertools
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ndpack
from ndpack.errors import FormatError, ParameterError
from ndpack.storage import dispatch
from ndpack.storage.grid import encode_b2nd
from ndpack.storage.layout import Layout


@st.composite
def layouts(draw):
    nd = draw(st.integers(0, 4))
    shape = tuple(draw(st.integers(0, 9)) for _ in range(nd))
    chunks = tuple(draw(st.integers(1, max(s, 1) + 1)) for s in shape)
    blocks = tuple(draw(st.integers(1, c)) for c in chunks)
    dtype = np.dtype(draw(st.sampled_from(["u1", "i4", "f8", "c16", "S300"])))
    return Layout(shape, chunks, blocks, dtype)


@given(lay=layouts())
def test_layout_figures_agree_with_the_grid_they_describe(lay):
    assert Layout.from_b2nd(lay.to_b2nd()) == lay
    assert Layout.from_b2nd(encode_b2nd(lay.shape, lay.chunks, lay.blocks, lay.dtype)) == lay
    assert lay.ndim == len(lay.shape) and lay.size == int(np.prod(lay.shape))
    assert lay.grid == tuple(-(-s // c) for s, c in zip(lay.shape, lay.chunks))
    assert lay.ext_chunks == tuple(-(-c // b) * b for c, b in zip(lay.chunks, lay.blocks))
    assert lay.ext_shape == tuple(g * c for g, c in zip(lay.grid, lay.chunks))
    assert lay.bgrid == tuple(e // b for e, b in zip(lay.ext_chunks, lay.blocks))
    assert lay.nchunks == int(np.prod(lay.grid)) and lay.nblocks == int(np.prod(lay.bgrid))
    assert lay.chunk_items * lay.dtype.itemsize == lay.chunk_nbytes
    assert lay.block_items * lay.dtype.itemsize == lay.blocksize
    # chunk headers hold the itemsize, or 1 for items over 255 bytes (as C-Blosc2)
    assert lay.typesize == (lay.dtype.itemsize if lay.dtype.itemsize <= 255 else 1)
    # chunk numbers are C order over the grid, regions tile the array
    covered = np.zeros(lay.shape, np.int64)
    for n, coords in enumerate(itertools.product(*[range(g) for g in lay.grid])):
        assert lay.chunk_number(coords) == n and lay.chunk_coords(n) == coords
        covered[lay.region(coords)] += 1
    assert (covered == 1).all()
    assert list(lay.all_coords()) == list(itertools.product(*[range(g) for g in lay.grid]))
    # stored order is C order exactly when the blocked layout of a chunk is
    ext = np.arange(lay.chunk_items).reshape(lay.ext_chunks)
    nd = lay.ndim
    blocked = ext.reshape([x for e, b in zip(lay.ext_chunks, lay.blocks)
                           for x in (e // b, b)]).transpose(
        list(range(0, 2 * nd, 2)) + list(range(1, 2 * nd, 2))).reshape(-1)
    assert lay.stored_c_order == bool((blocked == np.arange(lay.chunk_items)).all())


def test_layout_is_frozen_and_compares_by_its_four_fields():
    lay = Layout((5, 6), (2, 4), (1, 2), "i4")
    with pytest.raises(dataclasses.FrozenInstanceError):
        lay.shape = (1, 1)
    assert lay == Layout([5, 6], [2, 4], [1, 2], np.int32) and hash(lay) == hash(
        Layout((5, 6), (2, 4), (1, 2), np.dtype("i4")))
    assert lay != Layout((5, 6), (2, 4), (1, 2), "i8") and lay.resized((5, 7)) != lay
    with pytest.raises(FormatError):
        Layout.from_b2nd(b"\x97\x01")


def test_special_values_of_a_layout():
    lay = Layout((4,), (4,), (4,), "f8")
    assert lay.special_value(ndpack.compress2(np.arange(4.0))) is None
    a = ndpack.nans(4, dtype="f8", chunks=(4,))
    assert np.isnan(a.layout.special_value(a.get_chunk(0)))
    z = ndpack.full(4, 2.5, chunks=(4,))
    assert z.layout.special_value(z.get_chunk(0)) == 2.5


def test_an_array_holds_one_layout_replaced_on_resize():
    a = ndpack.asarray(np.arange(30).reshape(5, 6), chunks=(2, 4), blocks=(1, 2))
    lay = a.layout
    assert (a.shape, a.chunks, a.blocks, a.dtype) == (lay.shape, lay.chunks, lay.blocks,
                                                      lay.dtype)
    assert (a.chunksize, a.blocksize, a.ext_shape) == (lay.chunk_nbytes, lay.blocksize,
                                                       lay.ext_shape)
    assert a.stored_c_order == lay.stored_c_order and a.stored_elements == lay.chunk_items
    with pytest.raises(AttributeError):
        a.layout = lay
    oi, vi = a.oindex, a.vindex                       # indexers made before the resize
    a.resize((7, 6))
    assert a.layout == lay.resized((7, 6)) and a.shape == (7, 6) and lay.shape == (5, 6)
    assert oi[[6, 0], [5]].tolist() == [[0], [5]]     # ... see the new shape
    assert vi[[4, 6], [1, 1]].tolist() == [25, 0]
    for name in ("_shape", "_chunks", "_blocks", "_dtype", "_bgrid", "_blocksize",
                 "_typesize", "_nd", "_block_ids", "_corder"):
        assert not hasattr(a, name), name             # one layout, no copies of it


@pytest.mark.parametrize("blocks", [(1, 4), (2, 2)])
def test_encode_and_decode_whole_chunks(blocks):
    x = np.arange(30.0).reshape(5, 6)
    a = ndpack.asarray(x, chunks=(2, 4), blocks=blocks)
    b = ndpack.empty(x.shape, x.dtype, chunks=(2, 4), blocks=blocks)
    for n in range(a.layout.nchunks):
        chunk = a.decode_chunk(n)
        region = a.chunk_region(n)
        assert chunk.shape == a.layout.ext_chunks and chunk.flags.writeable
        np.testing.assert_array_equal(
            chunk[tuple(slice(0, r.stop - r.start) for r in region)], x[region])
        b.write_encoded(n, b.encode_chunk(chunk))
    np.testing.assert_array_equal(b[:], x)
    assert b.layout.special_value(b.encode_chunk(np.zeros(b.layout.ext_chunks))) == 0
    with pytest.raises(ParameterError, match="extended chunk shape"):
        b.encode_chunk(np.zeros((2, 3)))


def test_dispatchers_choose_by_content(tmp_path):
    p = str(tmp_path / "a.b2nd")
    ndpack.asarray(np.arange(5), urlpath=p, mode="w")
    s = str(tmp_path / "s.b2frame")
    ndpack.SChunk(chunksize=8, data=bytes(16), urlpath=s).close()
    assert isinstance(dispatch.open(p), ndpack.NDArray)
    assert type(dispatch.open(s)) is ndpack.SChunk
    assert type(ndpack.storage.schunk.open_schunk(p)) is ndpack.SChunk   # no dispatch
    assert ndpack.storage.open is dispatch.open
    with pytest.raises(ParameterError, match="unknown open"):
        dispatch.open(p, bogus=1)
    for name, cls in (("t.b2z", ndpack.TreeStore), ("d.b2d", ndpack.DictStore)):
        path = os.path.join(tmp_path, name)
        with cls(path, mode="w") as st_:
            st_["/x"] = np.arange(3)
        assert type(dispatch.open_store(path)) is cls
    e = str(tmp_path / "e.b2e")
    es = ndpack.EmbedStore(e, mode="w")
    es["/x"] = np.arange(3)
    assert type(dispatch.open_store(e)) is ndpack.EmbedStore
