"""Remote arrays: frames read by ranges from fsspec URLs (storage/source.py and
storage/remote.py), against NumPy, with request counts and a table of faults.

Servers are real and local: the suite's HTTP object server (tests/servers.py), moto's
S3 server, fsspec's memory filesystem.
"""

from __future__ import annotations

import os
import sys
import uuid

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ndpack
from ndpack.storage import source as srcmod
from ndpack.storage.remote import RemoteSource, RemoteUnavailable, is_url
from ndpack.storage.source import SourceError, join_pieces, plan_requests

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from servers import ObjectServer  # noqa: E402

FAST = {"retries": 2, "backoff": 0.01, "timeout": 5.0}


@pytest.fixture(scope="module")
def server():
    with ObjectServer() as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.clear_faults()
    server.stats.reset()
    yield server
    server.clear_faults()


def _array(shape=(400, 1000), chunks=(100, 1000), blocks=(10, 100), seed=0):
    x = np.random.default_rng(seed).integers(0, 1000, shape).astype(np.float64)
    return x, ndpack.asarray(x, chunks=chunks, blocks=blocks)


def _memory(a) -> str:
    url = f"memory://remote-tests/{uuid.uuid4().hex}.b2nd"
    with fsspec.open(url, "wb") as f:
        f.write(a.to_cframe())
    return url


# --- planning ------------------------------------------------------------------------


def test_plan_merges_and_splits():
    assert plan_requests([(0, 10), (10, 20)], 0, 100) == [(0, 20)]
    assert plan_requests([(0, 10), (15, 20)], 4, 100) == [(0, 10), (15, 20)]
    assert plan_requests([(0, 10), (15, 20)], 5, 100) == [(0, 20)]
    assert plan_requests([(0, 250)], 0, 100) == [(0, 100), (100, 200), (200, 250)]
    assert plan_requests([(50, 60), (0, 10), (5, 8)], 0, 100) == [(0, 10), (50, 60)]
    assert plan_requests([(0, 60), (61, 120)], 10, 100) == [(0, 60), (61, 120)]
    assert plan_requests([(3, 3)], 0, 100) == []


@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 80)), min_size=1,
                max_size=20), st.integers(0, 64), st.integers(1, 200))
@settings(max_examples=200, deadline=None)
def test_plan_then_join_gives_every_range(pairs, gap, cap):
    data = bytes(np.random.default_rng(1).integers(0, 256, 600, dtype=np.uint8))
    ranges = [(s, s + n) for s, n in pairs]
    reqs = plan_requests(ranges, gap, cap)
    assert all(e - s <= cap for s, e in reqs)
    assert all(reqs[k][1] <= reqs[k + 1][0] for k in range(len(reqs) - 1))
    got = join_pieces(ranges, reqs, [data[s:e] for s, e in reqs])
    assert [bytes(g) for g in got] == [data[s:e] for s, e in ranges]


def test_is_url():
    assert is_url("s3://b/k") and is_url("https://h/x") and is_url("zip://m::s3://b/o")
    assert not is_url("/tmp/x.b2nd") and not is_url("x.b2nd") and not is_url(b"s3://x")


# --- reads against NumPy --------------------------------------------------------------


def test_memory_url_slices_match_numpy():
    x, a = _array()
    b = ndpack.open(_memory(a))
    assert isinstance(b, ndpack.NDArray) and b.urlpath.startswith("memory://")
    np.testing.assert_array_equal(b[:], x)
    np.testing.assert_array_equal(b[3:250:7, 990:], x[3:250:7, 990:])
    np.testing.assert_array_equal(b[-1], x[-1])
    np.testing.assert_array_equal(b[::-3, 5], x[::-3, 5])
    np.testing.assert_array_equal(b[[3, 1, 399], 7:9], x[[3, 1, 399], 7:9])
    mask = x[:, 0] > 500
    np.testing.assert_array_equal(b[mask], x[mask])
    assert b[10, 20] == x[10, 20]


@st.composite
def _layouts_and_keys(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 40)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, s)) for s in shape)
    blocks = tuple(draw(st.integers(1, c)) for c in chunks)
    key = []
    for s in shape:
        kind = draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            key.append(draw(st.integers(-s, s - 1)))
        elif kind == "slice":
            a = draw(st.integers(0, s))
            b = draw(st.integers(a, s))
            key.append(slice(a, b, draw(st.integers(1, 3))))
        else:
            key.append(slice(None))
    return shape, chunks, blocks, tuple(key)


@given(_layouts_and_keys(), st.sampled_from(["lz4", "zstd"]))
@settings(max_examples=40, deadline=None)
def test_hypothesis_remote_equals_local(case, codec):
    shape, chunks, blocks, key = case
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) * 7
    cp = {"codec": ndpack.Codec.LZ4 if codec == "lz4" else ndpack.Codec.ZSTD}
    a = ndpack.asarray(x, chunks=chunks, blocks=blocks, cparams=cp)
    b = ndpack.open(_memory(a))
    np.testing.assert_array_equal(np.asarray(b[key]), x[key])


def test_block_reads_of_large_chunks_over_http(srv):
    """Chunks above the block-read size: slices and points read block spans only."""
    x, a = _array((200, 100_000), chunks=(20, 100_000), blocks=(2, 10_000), seed=3)
    data = a.to_cframe()
    url = srv.put("big.b2nd", data)
    b = ndpack.open(url, storage_options=FAST)
    assert srv.stats.requests == 2                      # head, then index + trailer
    srv.stats.reset()
    assert b[150, 55_555] == x[150, 55_555]
    # one chunk away from the head: its header + block starts, then one block span
    assert srv.stats.requests == 2
    bsize = 2 * 10_000 * 8
    assert srv.stats.bytes < bsize + 32 + 4 * 100 + 4096
    srv.stats.reset()
    np.testing.assert_array_equal(b[101:103, 20_000:20_010], x[101:103, 20_000:20_010])
    assert srv.stats.bytes < 2 * bsize
    srv.stats.reset()
    np.testing.assert_array_equal(b[:], x)
    assert srv.stats.bytes <= len(data)               # every chunk once, in one batch
    np.testing.assert_array_equal(b[5:195:13, ::997], x[5:195:13, ::997])


def test_expressions_and_reductions_over_http(srv):
    x, a = _array()
    y, c = _array(seed=5)
    ua, uc = srv.put("ea.b2nd", a.to_cframe()), srv.put("ec.b2nd", c.to_cframe())
    ra, rc = ndpack.open(ua), ndpack.open(uc)
    np.testing.assert_allclose(ndpack.sum(ra), x.sum())
    np.testing.assert_allclose(ndpack.sum(ra, axis=1), x.sum(axis=1))
    np.testing.assert_allclose((ra * 2 + rc)[:], x * 2 + y)
    np.testing.assert_allclose(ndpack.cumulative_sum(ra, axis=0)[:], np.cumsum(x, axis=0))


@pytest.mark.parametrize("nthreads", [1, 2])
def test_reductions_read_ahead_without_refetching(srv, nthreads):
    """A full sum reads every chunk once, most of them fetched ahead."""
    x, a = _array((3200, 1000), chunks=(100, 1000), blocks=(10, 1000), seed=6)
    url = srv.put(f"ahead{nthreads}.b2nd", a.to_cframe())
    b = ndpack.open(url, storage_options=FAST)
    b.schunk.dparams.nthreads = nthreads if hasattr(b.schunk.dparams, "nthreads") else 1
    srv.stats.reset()
    assert float(ndpack.sum(b)) == x.sum()
    src = b.schunk.frame.reader
    assert srv.stats.requests <= b.schunk.nchunks + 2
    assert src.ahead_hits >= b.schunk.nchunks // 2


def test_load_and_schunk_over_http(srv, tmp_path):
    x, a = _array((50, 30), chunks=(10, 30), blocks=(5, 30))
    url = srv.put("small.b2nd", a.to_cframe())
    b = ndpack.load(url)
    assert b.urlpath is None
    np.testing.assert_array_equal(b[:], x)
    s = ndpack.SChunk(chunksize=4000, data=np.arange(3000, dtype=np.int32))
    su = srv.put("s.b2frame", s.to_cframe())
    t = ndpack.open(su)
    assert isinstance(t, ndpack.SChunk)
    assert np.frombuffer(t[2990:3000], np.int32).tolist() == list(range(2990, 3000))
    path = tmp_path / "arr.b2nd"
    ndpack.save_array(x, str(path))
    u = srv.put("saved.b2nd", path.read_bytes())
    np.testing.assert_array_equal(ndpack.load_array(u), x)


def test_moto_s3(tmp_path):
    pytest.importorskip("moto")
    s3fs = pytest.importorskip("s3fs")
    from servers import moto_server
    server, endpoint = moto_server()
    try:
        opts = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": endpoint}}
        fs = s3fs.S3FileSystem(**opts)
        fs.mkdir("bucket")
        x, a = _array((3000, 200), chunks=(250, 200), blocks=(50, 50))
        with fs.open("bucket/a.b2nd", "wb") as f:
            f.write(a.to_cframe())
        b = ndpack.open("s3://bucket/a.b2nd", storage_options=opts)
        np.testing.assert_array_equal(b[:], x)
        np.testing.assert_array_equal(b[17:2300:3, 7], x[17:2300:3, 7])
        assert float(ndpack.sum(b)) == x.sum()
        x2, a2 = _array((3000, 200), chunks=(250, 200), blocks=(50, 50), seed=8)
        with fs.open("bucket/a.b2nd", "wb") as f:       # replaced under the reader
            f.write(a2.to_cframe())
        with pytest.raises(SourceError, match="changed"):
            b[1260:1270]        # a chunk past the head and tail windows
        ndpack.save(ndpack.asarray(x2), "s3://bucket/up.b2nd", storage_options=opts)
        np.testing.assert_array_equal(
            ndpack.open("s3://bucket/up.b2nd", storage_options=opts)[:], x2)
        with pytest.raises(FileNotFoundError, match="s3://bucket/missing.b2nd"):
            ndpack.open("s3://bucket/missing.b2nd", storage_options=opts)
    finally:
        server.stop()


# --- checks and faults ----------------------------------------------------------------


def test_whole_chunks_are_crc_verified(srv):
    x, a = _array((400, 1000), chunks=(100, 1000), blocks=(10, 100), seed=9)
    data = bytearray(a.to_cframe())
    b0 = ndpack.open(srv.put("ok.b2nd", bytes(data)))
    np.testing.assert_array_equal(b0[:], x)
    fr = b0.schunk.frame
    pos = fr.header_len + int(fr.offsets[2]) + 500        # inside chunk 2's blocks
    data[pos] ^= 0xFF
    b = ndpack.open(srv.put("bad.b2nd", bytes(data)))
    with pytest.raises(ndpack.NdpackError, match="chunk 2"):
        b[200:300]


def test_retries_then_succeeds(srv):
    x, a = _array()
    url = srv.put("r.b2nd", a.to_cframe())
    b = ndpack.open(url, storage_options=FAST)
    srv.faults.status, srv.faults.status_count = 503, 2
    np.testing.assert_array_equal(b[:], x)
    srv.faults.reset_count = 1
    np.testing.assert_array_equal(b[100:200], x[100:200])
    srv.faults.truncate_count = 1
    np.testing.assert_array_equal(b[300:], x[300:])


@pytest.mark.parametrize("fault", ["503", "reset", "truncate", "range"])
def test_persistent_faults_name_url_and_chunk(srv, fault):
    x, a = _array()
    url = srv.put(f"f-{fault}.b2nd", a.to_cframe())
    b = ndpack.open(url, storage_options=FAST)
    if fault == "503":
        srv.faults.status, srv.faults.status_count = 503, -1
    elif fault == "reset":
        srv.faults.reset_count = 100
    elif fault == "truncate":
        srv.faults.truncate_count = 100
    else:
        srv.faults.ignore_range = True
    with pytest.raises(SourceError) as info:
        b[250:260]
    msg = str(info.value)
    assert url in msg and "chunk 2" in msg


def test_open_errors_name_the_url(srv):
    with pytest.raises(FileNotFoundError, match="nothing-here.b2nd"):
        ndpack.open(srv.url("nothing-here.b2nd"), storage_options=FAST)
    x, a = _array((10, 10), chunks=(5, 10), blocks=(5, 10))
    srv.put("secret.b2nd", a.to_cframe())
    srv.forbidden.add("secret.b2nd")
    try:
        with pytest.raises(PermissionError, match="secret.b2nd"):
            ndpack.open(srv.url("secret.b2nd"), storage_options=FAST)
    finally:
        srv.forbidden.discard("secret.b2nd")
    srv.put("junk.b2nd", b"not a frame at all" * 10)
    with pytest.raises(ndpack.FormatError, match="junk.b2nd"):
        ndpack.open(srv.url("junk.b2nd"), storage_options=FAST)


def test_hang_times_out(srv):
    x, a = _array()
    url = srv.put("hang.b2nd", a.to_cframe())
    b = ndpack.open(url, storage_options={"retries": 0, "timeout": 0.5})
    srv.faults.hang = 3.0
    with pytest.raises(SourceError, match="hang.b2nd"):
        b[150:160]


def test_truncated_object(srv):
    x, a = _array()
    data = a.to_cframe()
    url = srv.put("cut.b2nd", data[:len(data) - 1000])
    with pytest.raises((SourceError, ndpack.FormatError), match="cut.b2nd"):
        ndpack.open(url, storage_options=FAST)[:]


def test_object_replaced_never_gives_wrong_data(srv):
    x, a = _array(seed=1)
    y, c = _array(seed=2)
    url = srv.put("swap.b2nd", a.to_cframe())
    b = ndpack.open(url, storage_options=FAST)
    srv.put("swap.b2nd", c.to_cframe())               # same layout, other values
    for key in [(slice(None),), (slice(150, 152), slice(10, 20)), (123, 456)]:
        try:
            got = np.asarray(b[key])
        except (SourceError, ndpack.NdpackError):
            continue
        np.testing.assert_array_equal(got, x[key])


def test_changed_etag_is_an_error(srv):
    """The same layout, one byte changed inside a block: a partial read (not covered
    by a chunk checksum) sees the new ETag and refuses."""
    x, a = _array((200, 100_000), chunks=(20, 100_000), blocks=(2, 10_000), seed=4)
    data = bytearray(a.to_cframe())
    url = srv.put("etag.b2nd", bytes(data))
    b = ndpack.open(url, storage_options=FAST)
    assert b[150, 5] == x[150, 5]
    fr = b.schunk.frame
    data[fr.header_len + int(fr.offsets[7]) + 5000] ^= 0x01
    srv.put("etag.b2nd", bytes(data))
    with pytest.raises(SourceError, match="changed"):
        b[150, 5]


def test_remote_is_read_only(srv):
    x, a = _array((10, 10), chunks=(5, 10), blocks=(5, 10))
    url = srv.put("ro.b2nd", a.to_cframe())
    with pytest.raises(ndpack.NdpackError, match="read-only"):
        ndpack.open(url, mode="a")
    b = ndpack.open(url)
    with pytest.raises(ndpack.NdpackError):
        b.resize((20, 10))
    with pytest.raises(ndpack.NdpackError):
        b[0, 0] = 1.0


def test_without_fsspec_one_line_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(RemoteUnavailable) as info:
        ndpack.open("s3://bucket/x.b2nd")
    assert "ndpack[remote]" in str(info.value) and "\n" not in str(info.value)


def test_bytes_in_flight_bounded(monkeypatch):
    """Requests charge the in-flight budget; a request never waits on an empty one."""
    budget = srcmod.InFlight(share=1.0)
    monkeypatch.setattr(budget, "cap", lambda: 100)
    assert budget.take(60) == 60
    with pytest.raises(SourceError):
        budget.take(60, timeout=0.05)                 # 120 > 100 while 60 are held
    budget.give(60)
    assert budget.take(500) == 100                    # clamped; alone, it runs
    budget.give(100)
    assert budget.held == 0


def test_source_counts_requests(srv):
    x, a = _array((400, 1000), chunks=(100, 1000), blocks=(10, 100))
    url = srv.put("count.b2nd", a.to_cframe())
    src = RemoteSource(url, FAST)
    assert src.size() == len(a.to_cframe()) and src.requests == 2     # head and tail
    got = src.read_ranges([(100_000, 100_200), (100_150, 100_300), (105_000, 105_010)])
    assert [bytes(g) for g in got] == [a.to_cframe()[s:e] for s, e in
                                        [(100_000, 100_200), (100_150, 100_300),
                                         (105_000, 105_010)]]
    assert src.requests == 3                          # merged into one request


def test_save_to_url_then_read(srv):
    x, a = _array((300, 100), chunks=(50, 100), blocks=(10, 100))
    ndpack.save(a, srv.url("put.b2nd"))
    assert srv.objects["put.b2nd"][:10] == b"\x9e\xa8b2frame\x00"
    np.testing.assert_array_equal(ndpack.open(srv.url("put.b2nd"))[:], x)
    url = f"memory://remote-tests/{uuid.uuid4().hex}/m.b2nd"
    ndpack.save(a, url)
    np.testing.assert_array_equal(ndpack.open(url)[7:9], x[7:9])


def test_writes_in_place_to_urls_are_clear_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a = ndpack.asarray(np.arange(10.0))
    with pytest.raises(ndpack.NdpackError, match="URL"):
        (a * 2).compute(urlpath="memory://x/y.b2nd")
    with pytest.raises(ndpack.NdpackError, match="URL"):
        ndpack.asarray(np.arange(10.0), urlpath="s3://b/y.b2nd", contiguous=False)
    assert not list(tmp_path.iterdir())               # no local folder named s3:


def test_cli_info_of_a_url(srv):
    import json
    import subprocess
    x, a = _array((300, 100), chunks=(50, 100), blocks=(10, 100))
    url = srv.put("cli.b2nd", a.to_cframe())
    out = subprocess.run([sys.executable, "-m", "ndpack", "info", "--json", url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["shape"] == [300, 100] and info["remote"]["requests"] <= 2
    out = subprocess.run([sys.executable, "-m", "ndpack", "info", srv.url("none.b2nd")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "none.b2nd" in out.stderr and "404" in out.stderr


def test_b2z_store_members_by_their_windows(srv, tmp_path):
    x, _ = _array((2000, 1000), chunks=(100, 1000), blocks=(10, 1000), seed=11)
    path = tmp_path / "t.b2z"
    with ndpack.TreeStore(str(path), mode="w") as ts:
        ts["/big/a"] = ndpack.asarray(x, chunks=(100, 1000), blocks=(10, 1000))
        ts["/big/b"] = x[:10] * 2
        ts["/tiny"] = np.arange(4)
    data = path.read_bytes()
    url = srv.put("t.b2z", data)
    srv.stats.reset()
    st = ndpack.open(url, storage_options=FAST)
    assert srv.stats.requests <= 3                    # head + tail (+ local headers)
    assert st.keys() == ["/big/a", "/big/b", "/tiny"]
    assert st["/tiny"][:].tolist() == [0, 1, 2, 3]
    srv.stats.reset()
    a = st["/big/a"]
    np.testing.assert_array_equal(a[1234:1240, 5:9], x[1234:1240, 5:9])
    assert srv.stats.bytes < len(data) // 10           # its windows and one block span
    np.testing.assert_array_equal(st["/big/b"][:], x[:10] * 2)
    np.testing.assert_array_equal(a[:], x)
    with pytest.raises(ndpack.NdpackError, match="read-only"):
        st["/new"] = np.arange(3)
    with pytest.raises(KeyError):
        st["/missing"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_peak_rss_of_a_remote_sum_stays_under_the_limit(srv):
    """A full sum over a remote array 8x the memory limit (32 MiB) keeps the reading
    process's peak RSS growth under the limit (the server is this process)."""
    import subprocess
    import textwrap
    rows, cols = 4096, 8192                             # 256 MiB of float64
    a = ndpack.arange(0, rows * cols, dtype="f8", shape=(rows, cols), chunks=(64, cols),
                      blocks=(8, cols), cparams={"codec": ndpack.Codec.LZ4, "clevel": 1})
    url = srv.put("rss.b2nd", a.to_cframe())
    del a
    script = textwrap.dedent(f"""
        import ndpack
        ndpack.set_memory_limit("32M")

        def hwm():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        a = ndpack.open("{url}")
        assert a.nbytes == 8 * ndpack.resources.memory_limit()
        before = hwm()
        n = a.size
        assert float(ndpack.sum(a)) == n * (n - 1) / 2
        print(before, hwm())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    before, peak = map(int, out.stdout.split())
    print(f"peak RSS growth {(peak - before) >> 20} MiB")
    assert peak - before < 32 * 2**20, f"peak RSS grew {(peak - before) >> 20} MiB"


_BIG = {}


def _big_remote():
    """A 3-D array whose chunks are read block by block (compressed chunks above the
    block-read size), on memory://: built once."""
    if not _BIG:
        x = np.random.default_rng(12).integers(0, 2**31, (40, 60, 500)).astype(np.int64)
        a = ndpack.asarray(x, chunks=(20, 30, 500), blocks=(4, 10, 100))
        _BIG["x"], _BIG["b"] = x, ndpack.open(_memory(a))
    return _BIG["x"], _BIG["b"]


def _key_part(size):
    return st.one_of(
        st.integers(-size, size - 1),
        st.builds(slice, st.integers(-size, size) | st.none(),
                  st.integers(-size, size) | st.none(),
                  st.sampled_from([None, 1, 2, 3, -1, -4])),
        st.lists(st.integers(0, size - 1), min_size=1, max_size=4).map(np.array))


@given(st.tuples(_key_part(40), _key_part(60), _key_part(500)))
@settings(max_examples=60, deadline=None)
def test_hypothesis_block_reads_equal_numpy(key):
    """Slices, points, steps, negative steps and integer arrays of chunks read block by
    block from a remote source (the packed smaller chunks of RemoteSource.read_blocks)."""
    x, b = _big_remote()
    try:
        want = x[key]
    except IndexError:
        return
    np.testing.assert_array_equal(np.asarray(b[key]), want)


def test_block_reads_are_partial_on_memory_urls():
    x, b = _big_remote()
    src = b.schunk.frame.reader
    before = src.fetched
    assert b[25, 35, 250] == x[25, 35, 250]
    chunk_bytes = b.schunk.cbytes // b.schunk.nchunks
    assert src.fetched - before < chunk_bytes // 4


def test_block_checksums_checked_on_remote_partial_reads(srv):
    """A byte changed inside one block (before the object was opened): a partial read
    of that block fails naming the chunk and block; other blocks read fine."""
    x, a = _array((200, 100_000), chunks=(20, 100_000), blocks=(2, 10_000), seed=13)
    data = bytearray(a.to_cframe())
    b0 = ndpack.open(srv.put("bsum-ok.b2nd", bytes(data)))
    fr = b0.schunk.frame
    if fr.crcs is None or getattr(fr.crcs, "entry", lambda i: None)(7) is None:
        pytest.skip("this build writes no block checksums")
    start = fr.header_len + int(fr.offsets[7])
    chunk = bytes(data[start:start + 32 + 4 * 100])
    bstarts = np.frombuffer(chunk, "<i4", 100, 32)
    data[start + int(bstarts[55]) + 40] ^= 0x10                 # inside block 55
    b = ndpack.open(srv.put("bsum-bad.b2nd", bytes(data)), storage_options=FAST)
    assert b[140, 0] == x[140, 0]                                # block 0 of chunk 7
    with pytest.raises(ndpack.FormatError, match="chunk 7.*block 55"):
        b[151, 55_005]                                           # block 55


def test_import_ndpack_without_fsspec():
    import subprocess
    script = ("import sys\n"
              "for m in ('fsspec', 'aiohttp', 's3fs'): sys.modules[m] = None\n"
              "import ndpack, numpy as np\n"
              "a = ndpack.asarray(np.arange(4.0)); assert float(ndpack.sum(a)) == 6.0\n"
              "try:\n    ndpack.open('https://example.invalid/x.b2nd')\n"
              "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ndpack[remote]" in out.stdout and out.stdout.count("\n") == 1
