"""Fancy indexing of NDArray against NumPy: integer arrays, masks, oindex, vindex."""

import collections
import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.storage import boxread, chunkwise, fancy

from tests.helpers import random_data

DTYPES = ["f4", "f8", "c16", "i1", "u2", "i8", "?"]


def _data(shape, dtype, seed=0):
    return random_data(shape, dtype, seed, scale=50)


@contextlib.contextmanager
def plan(kind):
    """'points' forces the points plan whenever two or more dimensions take arrays;
    'chunkwise' reads boxes and points chunk by chunk in Python, however small (no
    plan in the C core); 'batched' gives the C core's reads the smallest buffers
    (boxes in batches of one chunk, points of one block)."""
    saved = (fancy._BOX_FACTOR, fancy._BOX_SLACK, boxread.MAX_SLOTS, boxread.POINTS_IN_C,
             boxread.MAX_BYTES)
    if kind == "batched":                    # scratch buffers of one chunk's blocks
        boxread.MAX_BYTES = 0
    if kind == "points":
        fancy._BOX_FACTOR, fancy._BOX_SLACK = 0, 0
    if kind == "chunkwise":
        boxread.MAX_SLOTS, boxread.POINTS_IN_C = 0, False
    try:
        yield
    finally:
        (fancy._BOX_FACTOR, fancy._BOX_SLACK, boxread.MAX_SLOTS, boxread.POINTS_IN_C,
         boxread.MAX_BYTES) = saved


@st.composite
def layouts(draw, max_nd=3, max_size=9):
    nd = draw(st.integers(1, max_nd))
    shape = tuple(draw(st.integers(1, max_size)) for _ in range(nd))
    chunks = tuple(draw(st.integers(1, s + 1)) for s in shape)
    blocks = tuple(draw(st.integers(1, c)) for c in chunks)
    return shape, chunks, blocks


@st.composite
def fancy_keys(draw, shape):
    """A NumPy key with at least one array or mask: arrays broadcast to a random shape
    (some reduced to 1 along axes), per-axis masks alone among arrays, full masks,
    slices, integers, None, Ellipsis."""
    nd = len(shape)
    kind = draw(st.sampled_from(["arrays", "arrays", "mask_axis", "mask_full"]))
    if kind == "mask_full":
        size = int(np.prod(shape))
        if size > 200:                       # (too many for a list strategy)
            seed, p = draw(st.integers(0, 2**32 - 1)), draw(st.sampled_from([0.001, 0.05, 0.5]))
            return np.random.default_rng(seed).random(shape) < p
        m = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        return np.array(m, bool).reshape(shape)
    bshape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=2)))
    key = []
    n_arr = 0
    for n in shape:
        what = draw(st.sampled_from(["arr", "int", "slice", "full"]))
        if what == "arr":
            if kind == "mask_axis":
                if n_arr:
                    key.append(slice(None))
                    continue
                key.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
            else:
                shp = tuple(b if draw(st.booleans()) else 1 for b in bshape)
                size = int(np.prod(shp))
                vals = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size))
                key.append(np.array(vals, np.intp).reshape(shp))
            n_arr += 1
        elif what == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif what == "slice":
            key.append(slice(draw(st.none() | st.integers(-n, n)),
                             draw(st.none() | st.integers(-n, n)),
                             draw(st.sampled_from([None, 1, 2, -1, -3]))))
        else:
            key.append(slice(None))
    if not n_arr:
        d = draw(st.integers(0, nd - 1))
        key[d] = draw(st.lists(st.integers(-shape[d], shape[d] - 1), min_size=1, max_size=5))
    if draw(st.integers(0, 3)) == 0:
        key.insert(draw(st.integers(0, len(key))), None)
    if draw(st.integers(0, 3)) == 0 and isinstance(key[-1], slice) and key[-1] == slice(None):
        key[-1] = Ellipsis
    return tuple(key)


@settings(max_examples=120)
@given(data=st.data(), lay=layouts(), dtype=st.sampled_from(DTYPES),
       kind=st.sampled_from(["auto", "points", "chunkwise", "batched"]))
def test_get_set_like_numpy(data, lay, dtype, kind):
    shape, chunks, blocks = lay
    x = _data(shape, dtype)
    key = data.draw(fancy_keys(shape))
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks)
    expected = x[key]
    with plan(kind):
        got = a[key]
        assert got.shape == expected.shape and got.dtype == x.dtype
        np.testing.assert_array_equal(got, expected)
        value = _data(expected.shape, dtype, seed=1)
        if expected.ndim and data.draw(st.booleans()):
            value = value[..., :1]                              # broadcast along the last
        y = x.copy()
        y[key] = value
        a[key] = value
        np.testing.assert_array_equal(a[:], y)


@settings(max_examples=60)
@given(data=st.data(), lay=layouts(), dtype=st.sampled_from(DTYPES),
       kind=st.sampled_from(["auto", "points", "chunkwise", "batched"]))
def test_vindex_puts_array_dimensions_first(data, lay, dtype, kind):
    shape, chunks, blocks = lay
    x = _data(shape, dtype)
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks)
    key = data.draw(fancy_keys(shape))
    expected = x[key]
    pos, nb, adjacent = _placement(key, len(shape))
    if adjacent and pos:                        # vindex moves them first, NumPy does not
        expected = np.moveaxis(expected, list(range(pos, pos + nb)), list(range(nb)))
    with plan(kind):
        got = a.vindex[key]
        np.testing.assert_array_equal(got, expected)
        value = _data(got.shape, dtype, seed=4)
        y = x.copy()
        y[key] = np.moveaxis(value, list(range(nb)), list(range(pos, pos + nb))) \
            if adjacent and pos else value
        a.vindex[key] = value
        np.testing.assert_array_equal(a[:], y)


def _placement(key, nd):
    """(output position of the broadcast dimensions in NumPy's result, their number,
    whether the advanced indices are adjacent) for a key of `fancy_keys`."""
    items = list(key) if isinstance(key, tuple) else [key]
    if any(k is Ellipsis for k in items):
        i = next(j for j, k in enumerate(items) if k is Ellipsis)
        used = sum(k is not None and k is not Ellipsis for k in items)
        items[i:i + 1] = [slice(None)] * (nd - used)
    adv = [i for i, k in enumerate(items) if isinstance(k, (np.ndarray, list))]
    if not adv:
        return 0, 0, False
    # integers take part in advanced indexing when arrays are present
    adv = [i for i, k in enumerate(items) if k is not None and not isinstance(k, slice)]
    shapes = [(int(np.sum(k)),) if isinstance(k, np.ndarray) and k.dtype == bool
              else np.shape(k) for k in (items[i] for i in adv)]
    nb = len(np.broadcast_shapes(*shapes))
    adjacent = adv[-1] - adv[0] == len(adv) - 1
    pos = sum(1 for k in items[:adv[0]] if k is None or isinstance(k, slice))
    return pos, nb, adjacent


@settings(max_examples=60)
@given(data=st.data(), lay=layouts(), dtype=st.sampled_from(DTYPES))
def test_oindex_get_set(data, lay, dtype):
    shape, chunks, blocks = lay
    x = _data(shape, dtype)
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks)
    key, ix = [], []
    for n in shape:
        what = data.draw(st.sampled_from(["ints", "mask", "slice", "int"]))
        if what == "ints":
            k = data.draw(st.lists(st.integers(-n, n - 1), max_size=5))
            key.append(k)
            ix.append(np.array(k, np.intp))
        elif what == "mask":
            k = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
            key.append(k)
            ix.append(np.flatnonzero(k))
        elif what == "slice":
            k = slice(data.draw(st.none() | st.integers(-n, n)), None,
                      data.draw(st.sampled_from([None, 2, -1])))
            key.append(k)
            ix.append(np.arange(n)[k])
        else:
            k = data.draw(st.integers(-n, n - 1))
            key.append(k)
            ix.append(np.array([k]))
    drop = tuple(d for d, k in enumerate(key) if isinstance(k, int))
    expected = x[np.ix_(*ix)]
    expected = expected.reshape([s for d, s in enumerate(expected.shape) if d not in drop])
    np.testing.assert_array_equal(a.oindex[tuple(key)], expected)
    value = _data(expected.shape, dtype, seed=2)
    y = x.copy()
    sub = y[np.ix_(*ix)]
    sub[...] = value.reshape(sub.shape)
    y[np.ix_(*ix)] = sub
    a.oindex[tuple(key)] = value
    np.testing.assert_array_equal(a[:], y)


def test_cases_of_the_issue():
    x = np.arange(200 * 50, dtype="f8").reshape(200, 50)
    a = ndpack.asarray(x, chunks=(32, 16), blocks=(8, 8))
    rng = np.random.default_rng(3)
    row = rng.integers(-200, 200, 30)
    col = rng.integers(-50, 50, 30)
    mask = x % 7 < 1
    for key in [row, (row, col), (row[:, None], col), [[1, 2], [0, 1]], (slice(1, 9), col),
                (1, col), mask, (mask[:, 0], slice(2, 9)), (mask[:, 0], col[:1]),
                (row[::-1], col[::-1]), (np.sort(row), 7)]:
        for kind in ("auto", "points", "chunkwise", "batched"):
            with plan(kind):
                np.testing.assert_array_equal(a[key], x[key])


def _count_gets(a):
    calls = collections.Counter()
    frame = a.schunk._frame
    orig = frame.get

    def get(n, *args, **kwargs):
        calls[n] += 1
        return orig(n, *args, **kwargs)

    frame.get = get
    return calls


@pytest.mark.parametrize("kind", ["auto", "points", "chunkwise", "batched"])
def test_each_touched_chunk_decoded_once(kind):
    x = np.arange(120 * 90, dtype="i4").reshape(120, 90)
    a = ndpack.asarray(x, chunks=(20, 30), blocks=(5, 10))
    cid = (np.arange(120)[:, None] // 20) * 3 + np.arange(90)[None, :] // 30
    rng = np.random.default_rng(0)
    row = np.repeat(rng.integers(0, 120, 40), 3)            # repeated, unsorted
    col = np.repeat(rng.integers(0, 90, 40), 3)
    for key in [(row, col), row, (slice(10, 30), col)]:
        calls = _count_gets(a)
        with plan(kind):
            np.testing.assert_array_equal(a[key], x[key])
        assert set(calls.values()) == {1}, calls
        if kind == "points" or not isinstance(key, tuple) or isinstance(key[0], slice):
            assert set(calls) == set(np.unique(cid[key]).tolist())


@pytest.mark.parametrize("in_c", [True, False])
def test_points_decode_only_their_blocks(monkeypatch, in_c):
    x = np.arange(64 * 64, dtype="f8").reshape(64, 64)
    a = ndpack.asarray(x, chunks=(32, 32), blocks=(8, 8))
    rng = np.random.default_rng(1)
    row, col = rng.integers(0, 64, 25), rng.integers(0, 64, 25)
    seen = []
    orig, orig_chunks = chunkwise.decompress_blocks, boxread._chunks

    def spy(chunk, numbers, **kw):                  # the chunk-by-chunk path
        seen.extend(numbers)
        return orig(chunk, numbers, **kw)

    def spy_plan(arr, plan):                        # the C core's plan
        for k in range(len(plan.chunk_numbers)):
            seen.extend(plan.blocks_of(k))
        return orig_chunks(arr, plan)

    monkeypatch.setattr(chunkwise, "decompress_blocks", spy)
    monkeypatch.setattr(boxread, "_chunks", spy_plan)
    monkeypatch.setattr(boxread, "POINTS_IN_C", in_c)
    with plan("points"):
        np.testing.assert_array_equal(a[row, col], x[row, col])
    blocks = {(r // 32, c // 32, (r % 32) // 8, (c % 32) // 8) for r, c in zip(row, col)}
    assert len(seen) == len(blocks)


def test_on_disk_points_and_rows(tmp_path):
    x = np.random.default_rng(2).random((1000, 600))
    a = ndpack.asarray(x, chunks=(500, 600), blocks=(10, 600), urlpath=tmp_path / "a.b2nd",
                       mode="w")
    b = ndpack.open(tmp_path / "a.b2nd", mode="r")
    row, col = np.array([999, 3, 3, 500, 0]), np.array([0, 599, 5, 5, 1])
    for kind in ("auto", "points", "chunkwise", "batched"):
        with plan(kind):
            np.testing.assert_array_equal(b[row, col], x[row, col])
            np.testing.assert_array_equal(b[row], x[row])
    a[row, col] = -1.0
    x[row, col] = -1.0
    np.testing.assert_array_equal(ndpack.open(tmp_path / "a.b2nd")[:], x)


def test_special_chunks_and_threads():
    a = ndpack.zeros((50, 40), dtype="f4", chunks=(10, 10), blocks=(5, 5))
    np.testing.assert_array_equal(a[[1, 49], [0, 39]], np.zeros(2, "f4"))
    a[[1, 49], [0, 39]] = [3, 4]
    assert a[1, 0] == 3 and a[49, 39] == 4 and a[:].sum() == 7
    f = ndpack.full((30, 30), 2.5, chunks=(10, 10), blocks=(5, 5),
                    dparams={"nthreads": 2})
    np.testing.assert_array_equal(f[[0, 29, 15], :3], np.full((3, 3), 2.5))
    with plan("points"):
        np.testing.assert_array_equal(f[[0, 29, 15], [1, 2, 3]], np.full(3, 2.5))
    for nthreads in (1, 2):                     # writes: in order, or patched in parallel
        x = np.arange(900.0).reshape(30, 30)
        b = ndpack.asarray(x, chunks=(7, 7), blocks=(3, 7), dparams={"nthreads": nthreads})
        row = np.arange(0, 30, 2)
        b[row, row[::-1]] = -row
        x[row, row[::-1]] = -row
        b[x > 800] = 0
        x[x > 800] = 0
        np.testing.assert_array_equal(b[:], x)


def test_keys_of_other_kinds():
    x = np.arange(24).reshape(4, 6)
    a = ndpack.asarray(x, chunks=(3, 4))
    idx = ndpack.asarray(np.array([3, 1]))
    np.testing.assert_array_equal(a[idx], x[[3, 1]])               # NDArray as an index
    m = ndpack.asarray(x % 5 == 0)
    np.testing.assert_array_equal(a[m], x[x % 5 == 0])             # NDArray as a mask
    np.testing.assert_array_equal(a[np.array(2)], x[np.array(2)])  # 0-d array
    np.testing.assert_array_equal(a[True], x[True])
    np.testing.assert_array_equal(a[False], x[False])
    np.testing.assert_array_equal(a[[]], x[[]])
    np.testing.assert_array_equal(a[(0, 2), :], x[[0, 2], :])
    a[[1, 1, 1], [0, 0, 0]] = [7, 8, 9]                              # the last one wins
    assert a[1, 0] == 9
    a[[0, 3]] = 1.9                                                 # cast like NumPy
    assert a[0].tolist() == [1] * 6


def test_errors_like_numpy():
    x = np.arange(24.0).reshape(4, 6)
    a = ndpack.asarray(x, chunks=(2, 3))
    bad = [([4], IndexError), ((0, [6]), IndexError), ([-5], IndexError),
           (np.ones(3, bool), IndexError), (np.ones((4, 5), bool), IndexError),
           ([1.5], IndexError), (np.array([0.0]), IndexError),
           (([0, 1], [0, 1, 2]), IndexError), (([0], [0], [0]), IndexError),
           (([0], ..., ...), IndexError)]
    for key, exc in bad:
        with pytest.raises(exc):
            x[key]
        with pytest.raises(exc):
            a[key]
        with pytest.raises(exc):
            a[key] = 0
    with pytest.raises(ValueError, match="broadcast"):
        a[[0, 1]] = np.ones(4)
    with pytest.raises(ValueError):
        a[[0, 1]] = "abc"
    with pytest.raises(IndexError, match="1-D"):
        a.oindex[[[0]], :]
    with pytest.raises(IndexError):
        a.oindex[[9], :]
    with pytest.raises(IndexError, match="too many"):
        a.oindex[0, 0, 0]
    np.testing.assert_array_equal(a[:], x)                          # nothing was written


def test_read_only(tmp_path):
    ndpack.asarray(np.arange(10), urlpath=tmp_path / "r.b2nd", mode="w")
    r = ndpack.open(tmp_path / "r.b2nd", mode="r")
    assert r[[9, 0]].tolist() == [9, 0]
    with pytest.raises(ndpack.ParameterError, match="mode .r."):
        r[[0, 1]] = 5
    with pytest.raises(ndpack.ParameterError, match="mode .r."):
        r.oindex[[0]] = 5


def test_take_and_take_along_axis():
    x = np.arange(60.0).reshape(3, 4, 5)
    a = ndpack.asarray(x, chunks=(2, 3, 2))
    for idx, axis in [([4, 0, 4], 2), ([[1], [0]], 1), (np.array([2, -1]), 0),
                      ([59, 0, 7], None), ([[3, 3]], None)]:
        t = ndpack.take(a, idx, axis=axis)
        assert isinstance(t, ndpack.NDArray)
        np.testing.assert_array_equal(t[()], np.take(x, idx, axis=axis))
    np.testing.assert_array_equal(ndpack.take(x, [1, 2], axis=1)[()], np.take(x, [1, 2], 1))
    order = np.argsort(-x, axis=1)
    for axis in (0, 1, 2, -1):
        idx = np.argsort(-x, axis=axis)[..., :2] if axis in (2, -1) else np.argsort(-x, axis)
        np.testing.assert_array_equal(ndpack.take_along_axis(a, idx, axis)[()],
                                      np.take_along_axis(x, idx, axis))
    np.testing.assert_array_equal(ndpack.take_along_axis(a, order[:, :1], 1)[()],
                                  np.take_along_axis(x, order[:, :1], 1))
    with pytest.raises(IndexError):
        ndpack.take(a, [60])
    with pytest.raises(TypeError):              # as np.take (and python-blosc2)
        ndpack.take(a, [1.0], axis=0)
    with pytest.raises(ValueError, match="same number"):
        ndpack.take_along_axis(a, [0], 0)


@settings(max_examples=40)
@given(data=st.data(), lay=layouts(), dtype=st.sampled_from(DTYPES))
def test_take_random(data, lay, dtype):
    shape, chunks, blocks = lay
    x = _data(shape, dtype)
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks)
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    n = x.size if axis is None else shape[axis]
    ishape = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(ishape)),
                                      max_size=int(np.prod(ishape)))), np.intp).reshape(ishape)
    np.testing.assert_array_equal(ndpack.take(a, idx, axis=axis)[()], np.take(x, idx, axis))
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    along = list(shape)
    along[ax] = data.draw(st.integers(0, 4))
    along = [s if d == ax % len(shape) or data.draw(st.booleans()) else 1
             for d, s in enumerate(along)]
    ia = np.array(data.draw(st.lists(st.integers(-shape[ax], shape[ax] - 1),
                                     min_size=int(np.prod(along)),
                                     max_size=int(np.prod(along)))), np.intp).reshape(along)
    np.testing.assert_array_equal(ndpack.take_along_axis(a, ia, ax)[()],
                                  np.take_along_axis(x, ia, ax))


@pytest.mark.parametrize("filters", [[ndpack.Filter.SHUFFLE], [ndpack.Filter.BITSHUFFLE],
                                     [ndpack.Filter.DELTA, ndpack.Filter.SHUFFLE]])
@pytest.mark.parametrize("where", ["memory", "disk"])
def test_scattered_writes_reencode_only_their_blocks(filters, where, tmp_path, monkeypatch):
    # a few points per chunk: only their blocks are re-encoded, the other blocks are
    # copied compressed (DELTA chunks cannot be patched: re-encoded whole); the file
    # stays readable by python-blosc2
    x = np.round(_data((120, 90), "f8", 3))                # compressible (not memcpyed)
    kw = dict(chunks=(40, 45), blocks=(8, 9), cparams={"clevel": 5, "filters": filters})
    path = str(tmp_path / "p.b2nd")
    a = ndpack.asarray(x, urlpath=path, mode="w", **kw) if where == "disk" \
        else ndpack.asarray(x, **kw)
    patched = []
    real = fancy.patch_blocks

    def spy(*args):
        out = real(*args)
        patched.append(out is not None)
        return out
    monkeypatch.setattr(fancy, "patch_blocks", spy)
    rng = np.random.default_rng(5)
    rows, cols = rng.integers(0, 120, 40), rng.integers(0, 90, 40)
    rows[:3], cols[:3] = 7, 11                             # a repeated point: the last wins
    vals = rng.normal(size=40)
    y = x.copy()
    y[rows, cols] = vals
    a[rows, cols] = vals
    np.testing.assert_array_equal(a[:], y)
    assert patched and all(patched) == (ndpack.Filter.DELTA not in filters)
    a[rows[:5, None], cols[:5]] = 0.0                    # ortho keys take the same path
    y[rows[:5, None], cols[:5]] = 0.0
    np.testing.assert_array_equal(a[:], y)
    z = np.zeros_like(x)
    a[np.nonzero(y)] = 0.0                               # every block: re-encoded whole
    np.testing.assert_array_equal(a[:], z)
    if where == "disk":
        blosc2 = pytest.importorskip("blosc2")
        np.testing.assert_array_equal(blosc2.open(path)[:], z)


def test_points_with_sliced_dimensions_over_many_blocks():
    # points whose coordinates are unsorted within a chunk and span several blocks,
    # with a sliced dimension between the advanced ones (the points path with others)
    x = _data((30, 20, 40), "f8", 7)
    a = ndpack.asarray(x, chunks=(10, 10, 20), blocks=(5, 5, 5))
    rng = np.random.default_rng(8)
    rows = rng.integers(0, 30, 50)
    cols = rng.integers(0, 40, 50)
    rows[:4], cols[:4] = [9, 0, 9, 3], [19, 0, 19, 7]       # repeated, both orders
    with plan("points"):
        for key in [(rows, slice(2, 17), cols), (rows[::-1], slice(None, None, -3), cols),
                    (rows[:, None], slice(5, 6), cols[:, None])]:
            np.testing.assert_array_equal(a[key], x[key])


@settings(max_examples=60)
@given(n=st.integers(0, 70000), density=st.sampled_from([0.0, 1e-4, 0.01, 0.2, 0.9]),
       seed=st.integers(0, 100))
def test_flat_true_is_flatnonzero(n, density, seed):
    rng = np.random.default_rng(seed)
    m = rng.random(n) < density
    np.testing.assert_array_equal(fancy.flat_true(m), np.flatnonzero(m))
    if n >= 6:
        m2 = m[:n - n % 6].reshape(2, 3, -1)[:, :, ::2]          # not contiguous
        np.testing.assert_array_equal(fancy.flat_true(m2), np.flatnonzero(m2))


_F = ndpack.Filter
CODEC_CASES = [
    {"codec": ndpack.Codec.LZ4, "filters": [_F.SHUFFLE]},
    {"codec": ndpack.Codec.ZLIB, "filters": [_F.SHUFFLE]},
    {"codec": ndpack.Codec.LZ4, "filters": [_F.NOFILTER]},
    {"codec": ndpack.Codec.ZLIB, "filters": [_F.NOFILTER]},
    {"codec": ndpack.Codec.LZ4HC, "filters": [_F.DELTA, _F.SHUFFLE]},
    {"codec": ndpack.Codec.BLOSCLZ, "filters": [_F.BITSHUFFLE]},
    {"codec": ndpack.Codec.ZSTD, "filters": [_F.SHUFFLE],
     "splitmode": ndpack.SplitMode.ALWAYS_SPLIT},
    {"codec": ndpack.Codec.LZ4, "filters": [_F.SHUFFLE],
     "splitmode": ndpack.SplitMode.NEVER_SPLIT},
]


@settings(max_examples=80)
@given(data=st.data(), lay=layouts(max_nd=3, max_size=40), dtype=st.sampled_from(DTYPES),
       case=st.sampled_from(CODEC_CASES), kind=st.sampled_from(["auto", "points", "chunkwise", "batched"]))
def test_reads_decode_block_prefixes_with_every_layout(data, lay, dtype, case, kind):
    """Fancy reads decode blocks only up to their last wanted item where the codec
    and the stream layout allow it (LZ4/zlib, one stream or split shuffled streams):
    every codec and filter, split or not, gives NumPy's result."""
    shape, chunks, blocks = lay
    x = _data(shape, dtype, seed=3)
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks, cparams=ndpack.CParams(clevel=5, **case))
    key = data.draw(fancy_keys(shape))
    with plan(kind):
        np.testing.assert_array_equal(a[key], x[key])


def test_prefix_reads_of_first_rows():
    """Keys that want the first rows of every block (a[1:9, col], a[1, col],
    a[[[1, 2], [0, 1]]]) over LZ4 and zlib blocks of split shuffled streams, and the
    blocks' byte counts the reader asks for."""
    x = _data((200, 300), "f8")
    col = np.random.default_rng(2).integers(0, 300, 100)
    for codec in (ndpack.Codec.LZ4, ndpack.Codec.ZLIB):
        a = ndpack.asarray(x, chunks=(100, 100), blocks=(50, 20), cparams=ndpack.CParams(
            codec=codec, clevel=5, filters=[_F.SHUFFLE]))
        for key in [(slice(1, 9), col), (1, col), (np.array([[1, 2], [0, 1]]),),
                    (slice(60, 62), col[::-1]), (np.array([199, 0]), slice(3, 4))]:
            np.testing.assert_array_equal(a[key], x[key])


def test_decompress_blocks_needs_checked():
    from ndpack.chunks import decompress_blocks

    x = np.arange(4000, dtype="f8")
    a = ndpack.asarray(x, chunks=(4000,), blocks=(1000,), cparams=ndpack.CParams(
        codec=ndpack.Codec.LZ4, filters=[_F.SHUFFLE]))
    chunk = a.schunk.get_chunk(0)
    out = bytearray(2 * 8000)
    decompress_blocks(chunk, [3, 1], dst=out, needs=[80, 8000])
    got = np.frombuffer(out, "f8")
    np.testing.assert_array_equal(got[:10], x[3000:3010])
    np.testing.assert_array_equal(got[1000:], x[1000:2000])
    with pytest.raises(ndpack.ParameterError, match="byte counts for 2 blocks"):
        decompress_blocks(chunk, [3, 1], dst=out, needs=[80])
    with pytest.raises(ndpack.ParameterError, match="negative byte count"):
        decompress_blocks(chunk, [3, 1], dst=out, needs=[80, -1])
