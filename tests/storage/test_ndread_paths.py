"""Read paths of NDArray that skip work: whole blocks decoded straight into the
output, and positioned reads of only the touched blocks of files opened read-only
(several threads at once).  Each against NumPy, with the path checked to be taken."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack.storage import boxread as boxread_mod
from ndpack.storage import ndread, workspace

try:
    import blosc2
    HAVE_BLOSC2 = True
except ImportError:
    HAVE_BLOSC2 = False


@pytest.fixture(autouse=True)
def _chunk_by_chunk(monkeypatch):
    """These tests are about the chunk-by-chunk paths: slices of arrays in memory that
    would go through one box plan (``ndread.BOX_SLICES``) go chunk by chunk here; the
    box route has its own tests at the end."""
    monkeypatch.setattr(ndread, "BOX_SLICES", False)


def _spy(monkeypatch, name: str) -> list:
    """Record whether each call of the read path ``ChunkIO.<name>`` took it."""
    calls = []
    real = getattr(ndread.ChunkIO, name)

    def spy(self, *args):
        done = real(self, *args)
        calls.append(done)
        return done
    monkeypatch.setattr(ndread.ChunkIO, name, spy)
    return calls


def _stored(x, where, tmp_path, **kw):
    """`x` as an NDArray in memory, or written to a file and reopened read-only."""
    if where == "memory":
        return ndpack.asarray(x, **kw)
    a = ndpack.asarray(x, urlpath=str(tmp_path / "a.b2nd"), mode="w", **kw)
    return ndpack.open(a.urlpath, mode="r")


def _noisy_sine(shape, dtype, seed):
    n = int(np.prod(shape))
    rng = np.random.default_rng(seed)
    return (np.sin(np.arange(n) * 1e-3) * 100 + rng.normal(0, 1, n)).reshape(shape).astype(dtype)


@pytest.mark.parametrize("where", ["memory", "disk"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_whole_blocks_decode_into_the_output(where, nthreads, tmp_path, monkeypatch):
    x = np.random.default_rng(0).random((6, 10, 30, 25))
    kw = {"urlpath": str(tmp_path / "a.b2nd"), "mode": "w"} if where == "disk" else {}
    a = ndpack.asarray(x, chunks=(2, 10, 30, 25), blocks=(1, 1, 15, 25),
                       cparams={"clevel": 5}, **kw)
    if where == "disk":
        a = ndpack.open(a.urlpath, mode="r", dparams={"nthreads": nthreads})
    calls = _spy(monkeypatch, "_direct_into")
    for key in [(3,), (slice(None), 4), (slice(2, 6), 9), (1, 2), (slice(None), 0, slice(15, 30))]:
        calls.clear()
        np.testing.assert_array_equal(a[key], x[key])
        assert any(calls), key                          # decoded straight into the output
    for key in [(slice(None), slice(None), 7), (slice(None), 3, slice(2, 20)),
                (slice(None), slice(None, None, 2))]:
        calls.clear()
        np.testing.assert_array_equal(a[key], x[key])
        assert not any(calls), key                      # partial blocks: copied


def test_edge_blocks_with_padding_are_not_decoded_into_the_output():
    x = np.arange(7 * 9 * 11, dtype=np.int32).reshape(7, 9, 11)
    a = ndpack.asarray(x, chunks=(3, 4, 11), blocks=(1, 4, 11))
    for i in range(7):
        np.testing.assert_array_equal(a[i], x[i])
    for j in range(9):
        np.testing.assert_array_equal(a[:, j], x[:, j])


def test_read_only_files_read_blocks_from_several_threads(tmp_path, monkeypatch):
    x = np.random.default_rng(1).random((40, 50, 60))
    path = str(tmp_path / "r.b2nd")
    ndpack.asarray(x, chunks=(8, 50, 60), blocks=(1, 5, 60), urlpath=path, mode="w",
                   cparams={"clevel": 5})
    a = ndpack.open(path, mode="r", dparams={"nthreads": 4})
    assert a.schunk.frame.readonly
    lazy = []
    real = ndread.ChunkIO.lazy_chunk
    monkeypatch.setattr(ndread.ChunkIO, "lazy_chunk",
                        lambda self, *args: lazy.append(1) or real(self, *args))
    import concurrent.futures
    keys = [(slice(None), j) for j in range(50)] + [(slice(None), slice(None), k)
                                                   for k in range(0, 60, 7)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for key, got in zip(keys, pool.map(lambda k: a[k], keys)):
            np.testing.assert_array_equal(got, x[key])
    assert lazy                                   # only the touched blocks were read


@pytest.mark.parametrize("filters", [[ndpack.Filter.SHUFFLE], [ndpack.Filter.BITSHUFFLE],
                                     [ndpack.Filter.DELTA, ndpack.Filter.SHUFFLE], []])
@pytest.mark.parametrize("dtype", ["f8", "i4", "u2", "u1", "c16"])
@pytest.mark.parametrize("where", ["memory", "disk"])
def test_runs_of_blocks_read_without_decoding_blocks_whole(filters, dtype, where, tmp_path,
                                                            monkeypatch):
    x = _noisy_sine((8, 12, 40, 30), dtype, 2)
    a = _stored(x, where, tmp_path, chunks=(2, 6, 40, 30), blocks=(1, 1, 20, 30),
                cparams={"clevel": 5, "filters": filters, "filters_meta": [0] * len(filters)})
    calls = _spy(monkeypatch, "_runs_into")
    for key in [(slice(None), slice(None), 7), (slice(None), 3, 39), (1, slice(2, 9), 0),
                (slice(None), slice(None), 19, slice(4, 30)), (5, 5, 5)]:
        calls.clear()
        np.testing.assert_array_equal(a[key], x[key])
        assert any(calls), key
    for key in [(slice(None), slice(None), slice(0, 15)), (slice(None), 2)]:
        calls.clear()
        np.testing.assert_array_equal(a[key], x[key])
        assert not any(calls), key                     # most of each block: decoded


def test_getitems_matches_whole_decoding_for_every_pipeline():
    from ndpack.chunks import compress2, decompress, getitems
    rng = np.random.default_rng(0)
    for it in range(300):
        ts = int(rng.choice([1, 2, 4, 8, 16]))
        items = int(rng.integers(1, 3000))
        raw = (np.sin(np.arange(items * ts) * 0.01) * 100).astype(np.uint8).tobytes()
        # a SHUFFLE group other than the typesize (NumPy "U" dtypes use 4) makes
        # streams that are not bytes of items
        meta = int(rng.choice([0, 0, 2, 4, ts]))
        ch = compress2(raw, typesize=ts, clevel=int(rng.integers(0, 10)),
                       filters=[ndpack.Filter(int(rng.choice([0, 1, 2, 3])))],
                       filters_meta=[meta, 0, 0, 0, 0, 0],
                       codec=ndpack.Codec(int(rng.choice([0, 1, 5]))),
                       splitmode=ndpack.SplitMode(int(rng.choice([1, 2, 3]))),
                       blocksize=int(rng.choice([0, 64, 512])) * ts)
        full = np.frombuffer(decompress(ch), np.uint8)
        per_block = max(int.from_bytes(ch[8:12], "little") // ts, 1)
        runs = []
        for _ in range(int(rng.integers(1, 6))):
            s = int(rng.integers(0, items))
            end = min((s // per_block + 1) * per_block, items)
            runs.append((s, int(rng.integers(0, end - s + 1))))
        out = np.empty(sum(c for _, c in runs) * ts, np.uint8)
        assert getitems(ch, [s for s, _ in runs], [c for _, c in runs], out) == out.size
        want = [full[s * ts:(s + c) * ts] for s, c in runs]
        np.testing.assert_array_equal(out, np.concatenate(want) if want else out)


@pytest.mark.parametrize("dtype", ["f8", "i4", "u2"])
@pytest.mark.parametrize("where", ["memory", "disk"])
def test_several_runs_per_block_read_without_decoding_blocks_whole(dtype, where, tmp_path,
                                                                   monkeypatch):
    x = _noisy_sine((4, 6, 75, 250), dtype, 3)
    a = _stored(x, where, tmp_path, chunks=(1, 3, 75, 250), blocks=(1, 1, 75, 250),
                cparams={"clevel": 5})
    calls = _spy(monkeypatch, "_runs_into")
    for key in [(Ellipsis, 7), (slice(None), 3, slice(5, 9), slice(2, 4)),
                (slice(1, 3), slice(None), slice(None), 249)]:
        calls.clear()
        np.testing.assert_array_equal(a[key], x[key])
        assert any(calls), key                          # several runs per block
    calls.clear()
    np.testing.assert_array_equal(a[:, :, :, 10:80], x[:, :, :, 10:80])
    assert not any(calls)                               # most of each block: decoded


@pytest.mark.parametrize("filters", [[ndpack.Filter.SHUFFLE], [ndpack.Filter.BITSHUFFLE]])
def test_getitems_many_runs_in_one_block(filters):
    # runs of one block are read together (its compressed streams decoded once), in
    # batches; runs may go back to a block, be empty or come in any order
    from ndpack.chunks import compress2, getitems
    rng = np.random.default_rng(9)
    x = np.sin(np.arange(40000) * 1e-3) + rng.normal(0, 1e-6, 40000)
    ch = compress2(x, typesize=8, clevel=5, blocksize=8000 * 8, filters=filters)
    starts = np.concatenate([np.arange(3, 8000, 7), np.arange(16000, 17000, 3),
                             [5, 39999, 12000], rng.integers(0, 40000, 300)])
    counts = np.ones(starts.size, np.int32)
    counts[::5] = 0                                     # empty runs in between
    counts[1::11] = np.minimum(3, 8000 - starts[1::11] % 8000)
    out = np.empty(int(counts.sum()), np.float64)
    assert getitems(ch, starts, counts, out) == out.nbytes
    want = np.concatenate([x[s:s + c] for s, c in zip(starts, counts)])
    np.testing.assert_array_equal(out, want)


@pytest.mark.skipif(not HAVE_BLOSC2, reason="python-blosc2 not installed")
@pytest.mark.parametrize("dtype", ["U1", "U3"])
def test_unicode_arrays_of_python_blosc2_read_by_items(dtype, tmp_path):
    # python-blosc2 stores "U" dtypes with SHUFFLE group 4 (filters_meta 4): its
    # streams are not bytes of items, so runs decode their blocks
    rng = np.random.default_rng(4)
    x = np.array(["".join(rng.choice(list("abcdefgh"), int(dtype[1:])))
                  for _ in range(60000)], dtype=dtype)
    blosc2.asarray(x, urlpath=str(tmp_path / "u.b2nd"), mode="w")
    for a in (ndpack.open(str(tmp_path / "u.b2nd")), ndpack.open(str(tmp_path / "u.b2nd"), mode="r")):
        for key in [slice(5, 9), slice(1000, 1003), 59999, (np.array([3, 77, 5000]),)]:
            np.testing.assert_array_equal(a[key], x[key])


def test_getitems_bad_runs_are_errors():
    from ndpack.chunks import compress2, getitems
    from ndpack.errors import FormatError, ParameterError
    ch = compress2(np.arange(1000.0).tobytes(), typesize=8, blocksize=800)
    out = np.empty(100)
    with pytest.raises(ParameterError, match="crosses a block"):
        getitems(ch, [95], [10], out)
    with pytest.raises(ParameterError, match="out of range"):
        getitems(ch, [995], [10], out)
    with pytest.raises(ParameterError, match="too small"):
        getitems(ch, [0, 100], [100, 100], np.empty(100))
    bad = bytearray(ch)
    bad[60:80] = b"\xff" * 20
    with pytest.raises((FormatError, ParameterError)):
        getitems(bytes(bad), [5], [3], out)


def test_parallel_reads_from_inside_a_busy_read_pool_finish():
    # every pool thread runs a read that itself wants pool threads: the callers
    # drain their own chunks, helpers that never started are cancelled
    x = np.random.default_rng(4).random((16, 40, 50))
    a = ndpack.asarray(x, chunks=(2, 40, 50), blocks=(1, 8, 50), cparams={"clevel": 5},
                       dparams={"nthreads": 2})
    pool = workspace.pool(2)
    keys = [(slice(None), j) for j in range(0, 40, 3)]
    futures = [pool.submit(lambda k=k: a[k]) for k in keys]
    for k, f in zip(keys, futures):
        np.testing.assert_array_equal(f.result(timeout=60), x[k])


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_a_corrupt_chunk_in_a_parallel_read_raises(where, tmp_path):
    x = np.random.default_rng(5).random((12, 30, 40))
    kw = {"urlpath": str(tmp_path / "c.b2nd"), "mode": "w"} if where == "disk" else {}
    a = ndpack.asarray(x, chunks=(2, 30, 40), blocks=(1, 6, 40), cparams={"clevel": 5}, **kw)
    chunk = bytearray(a.schunk.get_chunk(3))
    chunk[len(chunk) // 2:len(chunk) // 2 + 64] = b"\xff" * 64   # damage the data area
    a.schunk.update_chunk(3, bytes(chunk))
    if where == "disk":
        a = ndpack.open(a.urlpath, mode="r", dparams={"nthreads": 2})
    else:
        a.schunk.dparams = ndpack.DParams(nthreads=2)
    np.testing.assert_array_equal(a[:6, 4], x[:6, 4])             # chunks 0-2 are intact
    with pytest.raises(ndpack.errors.NdpackError):
        a[:, :, 7]                                                 # every chunk, in parallel


@settings(max_examples=60, deadline=None)
@given(data=st.data(), nd=st.integers(1, 3),
       codec=st.sampled_from([ndpack.Codec.LZ4, ndpack.Codec.ZLIB, ndpack.Codec.ZSTD]),
       shuffle=st.booleans(), where=st.sampled_from(["memory", "disk"]))
def test_slices_decode_block_prefixes(data, nd, codec, shuffle, where, tmp_path_factory):
    """Slices that end inside blocks decode those blocks only up to their last
    wanted item (LZ4, zlib): every slice with positive steps over every layout gives
    NumPy's result, whatever the codec and whether the streams are split."""
    shape = tuple(data.draw(st.integers(1, 30)) for _ in range(nd))
    chunks = tuple(data.draw(st.integers(1, s)) for s in shape)
    blocks = tuple(data.draw(st.integers(1, c)) for c in chunks)
    x = _noisy_sine(shape, "f8", 4)
    a = _stored(x, where, tmp_path_factory.mktemp("p"), chunks=chunks, blocks=blocks,
                cparams=ndpack.CParams(codec=codec, clevel=5, filters=[
                    ndpack.Filter.SHUFFLE if shuffle else ndpack.Filter.NOFILTER]))
    key = []
    for n in shape:
        start = data.draw(st.integers(0, n - 1))
        key.append(slice(start, data.draw(st.integers(start + 1, n)),
                         data.draw(st.sampled_from([1, 1, 2, 3]))))
    np.testing.assert_array_equal(a[tuple(key)], x[tuple(key)])


def test_first_rows_of_blocks_decode_their_prefixes(monkeypatch):
    """a[0:3] of blocks of 50 rows asks for the first 3 rows of each block only."""
    x = _noisy_sine((200, 300), "f8", 5)
    a = ndpack.asarray(x, chunks=(100, 300), blocks=(50, 60), cparams=ndpack.CParams(
        codec=ndpack.Codec.LZ4, filters=[ndpack.Filter.SHUFFLE]))
    asked, runs = [], []
    real, real_items = ndread.decompress_blocks, ndread.getitems

    def spy(chunk, numbers, **kw):
        asked.append(kw.get("needs"))
        return real(chunk, numbers, **kw)

    def spy_items(chunk, starts, counts, out):      # one run per block: rows 0-2
        runs.extend((s % 3000 + c) * 8 for s, c in zip(starts, counts))
        return real_items(chunk, starts, counts, out)
    monkeypatch.setattr(ndread, "decompress_blocks", spy)
    monkeypatch.setattr(ndread, "getitems", spy_items)
    np.testing.assert_array_equal(a[0:3, 10:100], x[0:3, 10:100])
    asked = [max(n) for n in asked if n is not None] + runs
    assert asked and max(asked) <= (2 * 60 + 59 + 1) * 8


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_single_index_of_4d_blocks_not_dividing_chunks(where, tmp_path, monkeypatch):
    """a[:, :, :, j] and the other axes (issue 26's layout, smaller): blocks that do not
    divide the chunks (padded edge blocks), indices in first, middle and last blocks."""
    shape, chunks, blocks = (14, 12, 30, 45), (10, 6, 20, 25), (3, 5, 10, 20)
    x = _noisy_sine(shape, "f8", 6)
    a = _stored(x, where, tmp_path, chunks=chunks, blocks=blocks, cparams=ndpack.CParams(
        codec=ndpack.Codec.LZ4, clevel=5, filters=[ndpack.Filter.SHUFFLE]))
    for d, n in enumerate(shape):
        for j in sorted({0, 1, n // 2, n - 2, n - 1}):
            key = (slice(None),) * d + (j,)
            np.testing.assert_array_equal(a[key], x[key], err_msg=str(key))
    np.testing.assert_array_equal(a[1:13, 2:11, 3:29, 44], x[1:13, 2:11, 3:29, 44])
    calls = _spy(monkeypatch, "_runs_into")
    for j in (0, 4, 10, 13):         # one run per block (a third of it), its streams
        np.testing.assert_array_equal(a[j], x[j])            # decoded up to that run
        assert any(calls), j
        calls.clear()


def _needs_reference(lay, locs, bids):
    """The per-block byte counts of ChunkIO._needs, one block at a time."""
    import itertools
    lasts = []
    for loc, ids, b in zip(locs, bids, lay.blocks):
        lasts.append([loc.start + (min(i * b + b - 1, loc[-1]) - loc.start) // loc.step
                      * loc.step - i * b for i in ids])
    strides = [int(np.prod(lay.blocks[d + 1:])) for d in range(lay.ndim)]
    return [(sum(o * s for o, s in zip(c, strides)) + 1) * lay.dtype.itemsize
            for c in itertools.product(*lasts)]


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_block_numbers_and_needs_match_loops(data):
    """The vectorized block numbers and block prefixes equal the plain loops."""
    import itertools
    nd = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.integers(1, 12)) for _ in range(nd))
    chunks = tuple(data.draw(st.integers(1, s)) for s in shape)
    blocks = tuple(data.draw(st.integers(1, c)) for c in chunks)
    a = ndpack.zeros(shape, chunks=chunks, blocks=blocks)
    lay = a.layout
    locs, bids = [], []
    for c, b in zip(lay.chunks, blocks):
        start = data.draw(st.integers(0, c - 1))
        loc = range(start, data.draw(st.integers(start + 1, c)), data.draw(st.integers(1, 3)))
        locs.append(loc)
        bids.append(sorted({i // b for i in loc}))
    want = [sum(b * int(np.prod(lay.bgrid[d + 1:])) for d, b in enumerate(combo))
            for combo in itertools.product(*bids)]
    assert lay.block_numbers(bids) == want
    io = ndread.ChunkIO(lay, a.schunk)
    got = io._needs(locs, bids)
    assert got is None or got == _needs_reference(lay, locs, bids)


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_one_big_chunk_read_in_groups_by_several_threads(where, tmp_path, monkeypatch):
    """A read of one chunk whose blocks do not tile it (the padded edge blocks are cut)
    splits into groups of blocks; with 2 threads the groups go to both (each decoded
    and copied by one), with 1 thread in turn: both as NumPy."""
    x = _noisy_sine((50, 100, 40), "f8", 3)
    a = _stored(x, where, tmp_path, chunks=(50, 100, 40), blocks=(16, 16, 32))
    monkeypatch.setattr(ndread, "_GROUP_BYTES", 4 * 16 * 16 * 32 * 8)   # 4 blocks a group
    shared = []
    real = ndread.share
    monkeypatch.setattr(ndread, "share",
                        lambda items, work, n: shared.append(len(items)) or real(items, work, n))
    for nthreads in (1, 2):
        for key in [(slice(0, 50), slice(0, 100), slice(0, 40)),
                    (slice(3, 47), slice(5, 99), slice(1, 39))]:
            shared.clear()
            out = np.empty(tuple(s.stop - s.start for s in key))
            a.read_into(key, out, nthreads)
            np.testing.assert_array_equal(out, x[key])
            assert (len(shared) == 1 and shared[0] > 1) if nthreads == 2 else not shared


@pytest.mark.parametrize("where", ["memory", "mmap"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_slices_through_one_box_plan(where, data, tmp_path_factory):
    """Slices cutting through every chunk they touch go through one box plan in the C
    core (``BOX_SLICES``) for arrays in memory or mapped; values as NumPy's and as the
    chunk-by-chunk path's, the route checked to be taken."""
    nd = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.lists(st.integers(1, 14), min_size=nd, max_size=nd)))
    chunks = tuple(data.draw(st.integers(1, s)) for s in shape)
    blocks = tuple(data.draw(st.integers(1, c)) for c in chunks)
    dtype = data.draw(st.sampled_from(["f8", "i4", "u1", "c16", "S3"]))
    x = np.arange(int(np.prod(shape))).reshape(shape)
    x = x.astype("S3") if dtype == "S3" else x.astype(dtype)
    kw = {"chunks": chunks, "blocks": blocks}
    if where == "memory":
        a = ndpack.asarray(x, **kw)
    else:
        path = str(tmp_path_factory.mktemp("box") / "a.b2nd")
        ndpack.asarray(x, urlpath=path, mode="w", **kw)
        a = ndpack.open(path, mode="r", mmap_mode="r")
    key = tuple(slice(data.draw(st.integers(0, s - 1)), data.draw(st.integers(1, s)),
                      data.draw(st.integers(1, 3))) for s in shape)
    key = tuple(slice(k.start, max(k.start + 1, k.stop), k.step) for k in key)
    taken = []
    real = boxread_mod.read_box

    def spy(io, units, out, maps=None):
        done = real(io, units, out, maps)
        taken.append(done)
        return done
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(boxread_mod, "read_box", spy)
        mp.setattr(ndread, "BOX_SLICES", True)
        got = a[key]
        ranges = [range(*k.indices(s)) for k, s in zip(key, shape)]
        pays = ndread.ChunkIO(a.layout, a.schunk)._box_pays(
            ranges, np.empty(got.shape, got.dtype))
    assert bool(taken) == pays and all(taken)
    np.testing.assert_array_equal(got, x[key])
    np.testing.assert_array_equal(a[key], x[key])           # chunk by chunk (the fixture)


def test_box_route_in_a_4d_single_index_read(monkeypatch):
    """The 4-D single-index reads of issue 40's table take the box route (partial
    chunks everywhere) and give NumPy's values."""
    shape, chunks, blocks = (6, 10, 30, 25), (2, 5, 10, 10), (1, 2, 3, 4)
    x = np.random.default_rng(1).random(shape)
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks)
    monkeypatch.setattr(ndread, "BOX_SLICES", True)
    taken = []
    real = boxread_mod.read_box
    monkeypatch.setattr(boxread_mod, "read_box",
                        lambda *args: taken.append(1) or real(*args))
    for key in [(3,), (slice(None), 4), (slice(None), slice(None), 17), (Ellipsis, 12),
                (slice(1, 5), slice(None), slice(2, 29, 3), 7)]:
        taken.clear()
        np.testing.assert_array_equal(a[key], x[key])
        assert taken, key
