"""Sorted indexes (issue 22 item 4): range queries with and without an index against
NumPy (ints, floats with NaN/inf/-0.0, bool, n-d), kept right through appends and
writes, persisted and reopened, ignored after another writer (python-blosc2) changed
the file, searchsorted/nonzero from the index, bad input, a full disk while writing,
and a read spy."""

import contextlib
import errno
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ndpack
from ndpack.engine.ops import index as ix
from ndpack.engine.ops.ranges import analyse
from ndpack.storage import ndread


@contextlib.contextmanager
def always_index(frac=1.0):
    """The index answers whatever the fraction selected (scans never preferred)."""
    old = ix.MAX_FRACTION
    ix.MAX_FRACTION = frac
    try:
        yield
    finally:
        ix.MAX_FRACTION = old


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    if want.dtype.kind == "f":       # -0.0 vs 0.0 and NaN payloads are told apart
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (got, want)
    else:
        np.testing.assert_array_equal(got, want)


# --- conditions: (builder over an array-like, the same over NumPy) -------------------

OPS = ["<", "<=", ">", ">=", "==", "!="]


def _cmp(op, a, c, flip):
    if flip:
        return {"<": c < a, "<=": c <= a, ">": c > a, ">=": c >= a, "==": c == a,
                "!=": c != a}[op]
    return {"<": a < c, "<=": a <= c, ">": a > c, ">=": a >= c, "==": a == c,
            "!=": a != c}[op]


@st.composite
def conditions(draw, constants, depth=2):
    """A function ``f(a)`` building a condition from comparisons, & | ~."""
    if depth == 0 or draw(st.booleans()):
        op, c, flip = draw(st.sampled_from(OPS)), draw(constants), draw(st.booleans())
        return lambda a: _cmp(op, a, c, flip)
    kind = draw(st.sampled_from(["and", "or", "not"]))
    p = draw(conditions(constants, depth - 1))
    if kind == "not":
        return lambda a: ~p(a)
    q = draw(conditions(constants, depth - 1))
    return (lambda a: p(a) & q(a)) if kind == "and" else (lambda a: p(a) | q(a))


FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from(
    [0.0, -0.0, np.nan, np.inf, -np.inf, 1.5])


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(["f8", "f4", "i8", "i2", "u1", "bool"]))
    n = draw(st.integers(0, 300))
    ndim = draw(st.sampled_from([1, 1, 2]))
    if kind == "bool":
        x = draw(hnp.arrays(np.bool_, n))
        consts = st.sampled_from([True, False, 0, 1])
    elif kind[0] == "f":
        pool = draw(st.lists(FLOATS, min_size=1, max_size=6))
        x = np.asarray(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)),
                       dtype=kind)
        consts = st.sampled_from(pool) | FLOATS
    else:
        info = np.iinfo(kind)
        ints = st.integers(int(info.min), int(info.max))
        pool = draw(st.lists(ints, min_size=1, max_size=6))
        x = np.asarray(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)),
                       dtype=kind)
        consts = st.sampled_from(pool) | st.sampled_from([2.5, -1, 0]) | ints
    x = np.asarray(x).reshape(-1)
    if ndim == 2 and n:
        rows = draw(st.sampled_from([d for d in range(1, 6) if n % d == 0]))
        x = x.reshape(rows, n // rows)
    chunks = tuple(draw(st.integers(1, max(1, s))) for s in x.shape)
    blocks = tuple(draw(st.integers(1, c)) for c in chunks)
    return x, chunks, blocks, draw(conditions(consts))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@given(cases())
def test_range_queries_match_numpy(case):
    """a[cond] with an index (forced), without one, and NumPy's x[mask]: the same values
    in the same order, bit for bit; nonzero gives the same coordinates."""
    x, chunks, blocks, cond = case
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks)
    with np.errstate(all="ignore"):
        want = x[cond(x)]
    plain = a[cond(a)]
    same_bits(plain, want)
    if x.size == 0:
        return
    a.create_index()
    with always_index():
        same_bits(a[cond(a)], want)
        got = ndpack.nonzero(cond(a))
        for g, w in zip(got, np.nonzero(cond(x))):
            np.testing.assert_array_equal(g[()], w)
        if x.ndim == 1:
            probe = np.unique(x)[:3]
            if probe.size:
                for side in ("left", "right"):
                    np.testing.assert_array_equal(
                        ndpack.searchsorted(a, probe, side=side)[()],
                        np.searchsorted(np.sort(x), probe, side=side))


def test_index_is_used_and_reads_little(monkeypatch):
    """A 0.1% range query: the array itself is never read, and the index's blocks
    decoded are a small fraction of its blocks; without the index every block of the
    array is decoded."""
    n = 1 << 21
    x = np.random.default_rng(1).random(n)
    a = ndpack.asarray(x, chunks=(1 << 17,), blocks=(1 << 14,))
    a.create_index()
    st_ = ix._state(a)
    decoded = {}                                    # id(frame) -> set of (chunk, block)
    real_read = ndread.ChunkIO.read_ranges

    def spy_read(self, ranges, out):
        if len(ranges) == 1:
            c, b = self.layout.chunks[0], self.layout.blocks[0]
            r = ranges[0]
            got = decoded.setdefault(id(self.frame), set())
            for ci in range(r.start // c, (r.stop - 1) // c + 1):
                lo, hi = max(r.start, ci * c) - ci * c, min(r.stop, ci * c + c) - ci * c
                got.update((ci, k) for k in range(lo // b, (hi - 1) // b + 1))
        return real_read(self, ranges, out)

    base_gets = []
    frame = a.schunk.frame
    real_get = type(frame).get
    monkeypatch.setattr(ndread.ChunkIO, "read_ranges", spy_read)
    monkeypatch.setattr(frame, "get", lambda *args, **kw: (base_gets.append(args[0]),
                                                          real_get(frame, *args, **kw))[1])
    lo, hi = 0.25, 0.251
    r = a[(a > lo) & (a < hi)]
    same_bits(r, x[(x > lo) & (x < hi)])
    assert base_gets == [] and id(frame) not in decoded
    nblocks = n // st_.values.blocks[0]
    vals = decoded[id(st_.values.schunk.frame)]
    poss = decoded[id(st_.positions.schunk.frame)]
    assert 0 < len(vals) <= 6 and 0 < len(poss) <= 3, (len(vals), len(poss))
    assert (len(vals) + len(poss)) / (2 * nblocks) < 0.05
    a.drop_index()
    base_gets.clear()
    same_bits(a[(a > lo) & (a < hi)], x[(x > lo) & (x < hi)])
    assert len(set(base_gets)) == a.schunk.nchunks        # the scan decodes everything


def test_scan_preferred_for_large_selections(monkeypatch):
    x = np.random.default_rng(2).random(20_000)
    a = ndpack.asarray(x, chunks=(2000,))
    a.create_index()
    calls = []
    real = ix.select

    def spy(*args, **kw):
        got = real(*args, **kw)
        calls.append(got is not None)
        return got
    monkeypatch.setattr(ix, "select", spy)
    same_bits(a[(a > 0.5) & (a < 0.5002)], x[(x > 0.5) & (x < 0.5002)])
    same_bits(a[a > 0.2], x[x > 0.2])                 # 80%: scanned
    assert calls == [True, False]


def test_kept_right_through_appends_and_writes():
    rng = np.random.default_rng(3)
    x = rng.random(5000)
    a = ndpack.asarray(x, chunks=(500,), blocks=(100,))
    a.create_index()

    def check(lo, hi):
        with always_index():
            same_bits(a[(a >= lo) & (a < hi)], x[(x >= lo) & (x < hi)])
            same_bits(ndpack.nonzero((a >= lo) & (a < hi))[0][()],
                      np.nonzero((x >= lo) & (x < hi))[0])
    check(0.3, 0.4)
    a[10:20] = 0.35                                   # chunk 0 dirty
    x[10:20] = 0.35
    check(0.3, 0.4)
    extra = rng.random(777)
    a.resize((x.size + extra.size,))                  # the tail (and the last chunk)
    a[x.size:] = extra
    x = np.concatenate([x, extra])
    check(0.3, 0.4)
    check(-np.inf, 0.01)
    d = a.indexes[0]
    assert not d["stale"] and d["scan_chunks"] >= 3
    a.resize((1234,))                                 # shrink: chunks deleted
    x = x[:1234]
    check(0.3, 0.4)
    a.rebuild_index()
    assert a.indexes[0]["scan_chunks"] == 0 and a.indexes[0]["size"] == 1234
    check(0.3, 0.4)
    # searchsorted answers from a whole index only
    assert ix.sorted_values(a) is not None
    a[0] = 5.0
    assert ix.sorted_values(a) is None


def test_nd_appends_along_first_axis():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 1000, size=(30, 7)).astype(np.int32)
    a = ndpack.asarray(x, chunks=(4, 3), blocks=(2, 2))
    a.create_index()
    with always_index():
        same_bits(a[(a > 100) & (a <= 130)], x[(x > 100) & (x <= 130)])
        a.resize((33, 7))
        a[30:] = 120
        x = np.concatenate([x, np.full((3, 7), 120, np.int32)])
        same_bits(a[(a > 100) & (a <= 130)], x[(x > 100) & (x <= 130)])
        a.resize((33, 8))                             # flat positions moved: unusable
        x = np.pad(x, ((0, 0), (0, 1)))
        assert a.indexes[0]["stale"]
        same_bits(a[(a > 100) & (a <= 130)], x[(x > 100) & (x <= 130)])


def test_another_array_filtered_by_an_indexed_condition():
    rng = np.random.default_rng(5)
    x, y = rng.random(4000), rng.integers(0, 10**6, 4000)
    a, b = ndpack.asarray(x, chunks=(512,)), ndpack.asarray(y, chunks=(300,))
    a.create_index()
    with always_index():
        same_bits(b[(a > 0.1) & (a < 0.2)], y[(x > 0.1) & (x < 0.2)])
        same_bits(b[a < -1], y[x < -1])


def test_persisted_reopened_and_python_blosc2_opens(tmp_path):
    blosc2 = pytest.importorskip("blosc2")
    path = str(tmp_path / "a.b2nd")
    x = np.random.default_rng(6).normal(size=30_000)
    x[::97] = np.nan
    a = ndpack.asarray(x, chunks=(4096,), blocks=(1024,), urlpath=path, mode="w")
    d = a.create_index(name="v")
    assert d["persistent"] and os.path.isdir(path + ".ndpack-index")
    assert sorted(os.listdir(tmp_path)) == ["a.b2nd", "a.b2nd.ndpack-index"]
    del a
    b = ndpack.open(path, mode="a")
    assert b.indexes[0]["name"] == "v" and not b.indexes[0]["stale"]
    with always_index(0.5):
        same_bits(b[(b > 1) & (b < 1.2)], x[(x > 1) & (x < 1.2)])
        b[5:9] = 1.1                                  # through ndpack: chunk 0 dirty
        x[5:9] = 1.1
        same_bits(b[(b > 1) & (b < 1.2)], x[(x > 1) & (x < 1.2)])
    del b
    c = ndpack.open(path)                             # reopened: the checksum changed
    assert c.indexes[0]["scan_chunks"] == 1
    with always_index(0.5):
        same_bits(c[(c > 1) & (c < 1.2)], x[(x > 1) & (x < 1.2)])
    del c
    p = blosc2.open(path)                             # python-blosc2 reads the array
    same_bits(p[:], x)


def test_foreign_writer_makes_the_index_ignored(tmp_path):
    blosc2 = pytest.importorskip("blosc2")
    path = str(tmp_path / "a.b2nd")
    x = np.random.default_rng(7).random(20_000)
    a = ndpack.asarray(x, chunks=(2000,), blocks=(500,), urlpath=path, mode="w")
    a.create_index()
    del a
    p = blosc2.open(path, mode="a")                   # python-blosc2 writes in place
    p[100:110] = 0.5005
    del p
    x[100:110] = 0.5005
    b = ndpack.open(path)
    d = b.indexes[0]
    assert d["stale"] and "checksum" in d["reason"]
    with always_index():
        same_bits(b[(b > 0.5) & (b < 0.501)], x[(x > 0.5) & (x < 0.501)])
    assert ix.sorted_values(b) is None                # searchsorted: not the index
    b.rebuild_index()
    assert not b.indexes[0]["stale"]
    with always_index():
        same_bits(b[(b > 0.5) & (b < 0.501)], x[(x > 0.5) & (x < 0.501)])


def test_index_without_checksums_is_not_trusted_after_reopen(tmp_path, monkeypatch):
    monkeypatch.setenv("NDPACK_CHECKSUMS", "0")
    path = str(tmp_path / "a.b2nd")
    x = np.arange(1000.0)[::-1].copy()
    a = ndpack.asarray(x, chunks=(100,), urlpath=path, mode="w")
    a.create_index()
    with always_index():                              # in this process: watched
        same_bits(a[a < 10], x[x < 10])
    del a
    b = ndpack.open(path)
    assert b.indexes[0]["stale"] and "checksums" in b.indexes[0]["reason"]
    same_bits(b[b < 10], x[x < 10])


def test_searchsorted_on_an_unsorted_array():
    x = np.random.default_rng(8).integers(-50, 50, 3000)
    a = ndpack.asarray(x, chunks=(256,), blocks=(64,))
    a.create_index()
    v = np.array([-60, -50, 0, 3, 49, 50, 99])
    for side in ("left", "right"):
        want = np.searchsorted(x, v, side=side, sorter=np.argsort(x, kind="stable"))
        np.testing.assert_array_equal(ndpack.searchsorted(a, v, side=side)[()], want)
        s = ndpack.argsort(a)
        np.testing.assert_array_equal(ndpack.searchsorted(a, v, side=side, sorter=s)[()],
                                      want)


def test_conditions_the_index_cannot_answer():
    x = np.random.default_rng(9).random(1000)
    a = ndpack.asarray(x)
    b = ndpack.asarray(x[::-1].copy())
    assert analyse((a > b).node, a) is None
    assert analyse(((a > 0.5) & (b < 0.2)).node, a) is None
    assert analyse((ndpack.sin(a) > 0.5).node, a) is None
    assert analyse((a + 1 > 0.5).node, a) is None
    assert analyse(((a > 0.5) & (a < 0.7)).node, b) is None
    a.create_index()
    with always_index():
        same_bits(a[(a > 0.5) & (b < 0.2)], x[(x > 0.5) & (x[::-1] < 0.2)])


@pytest.mark.parametrize("dtype", [np.complex128, "U3", [("a", "i4"), ("b", "f8")]])
def test_bad_dtypes(dtype):
    a = ndpack.asarray(np.zeros(4, dtype=dtype))
    with pytest.raises(TypeError, match="cannot index"):
        a.create_index()


def test_bad_arguments(tmp_path):
    a = ndpack.asarray(np.arange(10.0))
    with pytest.raises(ValueError, match="kind must be"):
        a.create_index(kind="bucket")
    with pytest.raises(TypeError, match="field"):
        a.create_index("x")
    with pytest.raises(ndpack.NdpackError, match="in memory"):
        a.create_index(persistent=True)
    with pytest.raises(TypeError, match="unexpected"):
        a.create_index(optlevel=3)
    with pytest.raises(KeyError):
        a.drop_index()
    assert a.indexes == []
    e = ndpack.zeros(0)
    e.create_index()
    assert e[e > 0].shape == (0,)


def test_disk_full_while_writing_the_index(tmp_path, monkeypatch):
    """ENOSPC in the middle of the index files: the OSError comes through, no index
    directory and no temporary are left, the array has no index and reads as before."""
    path = str(tmp_path / "a.b2nd")
    x = np.random.default_rng(10).random(50_000)
    a = ndpack.asarray(x, chunks=(5000,), urlpath=path, mode="w")
    real, calls = os.pwrite, []

    def full(fd, data, pos):
        calls.append(pos)
        if len(calls) > 8:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, pos)

    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(OSError, match="No space left"):
        a.create_index()
    monkeypatch.setattr(os, "pwrite", real)
    assert len(calls) > 8 and os.listdir(tmp_path) == ["a.b2nd"]
    assert a.indexes == []
    same_bits(a[(a > 0.1) & (a < 0.2)], x[(x > 0.1) & (x < 0.2)])
    a.create_index()                                  # and it works once there is room
    assert sorted(os.listdir(tmp_path)) == ["a.b2nd", "a.b2nd.ndpack-index"]


def test_replacing_and_dropping(tmp_path):
    path = str(tmp_path / "a.b2nd")
    x = np.arange(100, dtype=np.int64)[::-1].copy()
    a = ndpack.asarray(x, chunks=(10,), urlpath=path, mode="w")
    a.create_index()
    a.create_index(persistent=False)                  # in memory now: the file goes
    assert os.listdir(tmp_path) == ["a.b2nd"] and not a.indexes[0]["persistent"]
    a.create_index()
    a.drop_index()
    assert os.listdir(tmp_path) == ["a.b2nd"] and a.indexes == []


def test_sparse_frame_directory(tmp_path):
    """An array stored as a directory of chunk files keeps its index beside it too."""
    path = str(tmp_path / "xdir")
    x = np.random.default_rng(11).random(20_000)
    a = ndpack.asarray(x, chunks=(2000,), urlpath=path, contiguous=False, mode="w")
    a.create_index()
    assert sorted(os.listdir(tmp_path)) == ["xdir", "xdir.ndpack-index"]
    b = ndpack.open(path, mode="a")
    assert not b.indexes[0]["stale"]
    b[3] = 0.305
    x[3] = 0.305
    c = ndpack.open(path)
    assert c.indexes[0]["scan_chunks"] == 1
    with always_index(0.5):
        same_bits(c[(c > 0.3) & (c < 0.31)], x[(x > 0.3) & (x < 0.31)])
