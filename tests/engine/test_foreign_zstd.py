"""zarr's default codec (zstd) both ways through the C core (issues 25 and 26).

Writes: chunks encoded by ``ndpack.codecs.zstd_frame_compress`` are read back by zarr
itself (v2 ``numcodecs.Zstd``, v3 ``ZstdCodec``; levels, checksum on and off, edge
chunks, chunks of fill values); the frames carry their content size and the checksum
flag asked for.  Reads: boxes that straddle chunks, whole chunks decoded ahead on the
leaf threads (missing and corrupt ones among them), corrupt chunks either read right
by zarr's fallback or refused with an error naming the chunk.  NumPy is the oracle.
"""

import os
import time

import numpy as np
import pytest

import ndpack
from ndpack import codecs
from ndpack.engine.run import chunkout, foreign, gridread, zarrread
from ndpack.errors import FormatError, ParameterError

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

SHAPE, CHUNKS = (23, 17, 9), (5, 6, 9)           # edge chunks on two axes


def values(shape=SHAPE, seed=0, fill=0.0):
    x = np.random.default_rng(seed).normal(size=shape).round(2)
    x[:5] = fill                                 # a row of chunks of fill values
    return x


def chunk_files(root):
    """The chunk files under a zarr array's directory (metadata left out)."""
    out = []
    for d, _, names in os.walk(root):
        out += [os.path.join(d, n) for n in names if not n.startswith((".z", "zarr.json"))]
    return sorted(out)


def codec_for(fmt, level, checksum):
    if fmt == 2:
        return numcodecs.Zstd(level=level, checksum=checksum)
    return zarr.codecs.ZstdCodec(level=level, checksum=checksum)


# ---- the Python face of the C functions ---------------------------------------------------

def test_frames_are_numcodecs_frames():
    x = np.random.default_rng(1).normal(size=(300, 7)).round(1)
    for level in (-3, 0, 1, 5, 19):
        for checksum in (False, True):
            frame = codecs.zstd_frame_compress(x, level, checksum)
            assert zarrread._zstd_content_size(np.frombuffer(frame, np.uint8)) == x.nbytes
            assert (frame[4] >> 2) & 1 == checksum             # the header's flag
            got = numcodecs.Zstd(level=level, checksum=checksum).decode(frame)
            assert bytes(got) == x.tobytes()
            theirs = numcodecs.Zstd(level=level, checksum=checksum).encode(x)
            back = np.empty_like(x)
            assert codecs.zstd_frame_decompress(theirs, back) == x.nbytes
            np.testing.assert_array_equal(back, x)


def test_frame_errors_are_clean():
    x = np.arange(5000.0)
    frame = codecs.zstd_frame_compress(x, 3, True)
    out = np.empty_like(x)
    for cut in (0, 3, 5, 9, len(frame) // 2, len(frame) - 1):
        with pytest.raises(FormatError):
            codecs.zstd_frame_decompress(frame[:cut], out)
    bad = bytearray(frame)
    bad[-2] ^= 0xFF                                        # the checksum
    with pytest.raises(FormatError, match="corrupt"):
        codecs.zstd_frame_decompress(bytes(bad), out)
    with pytest.raises(ParameterError, match="holds 40000 bytes, not 39992"):
        codecs.zstd_frame_decompress(frame, out[:-1])
    with pytest.raises(ParameterError):
        codecs.zstd_frame_decompress(frame, np.empty(5001))
    with pytest.raises(ParameterError):                    # no room for the frame
        codecs.zstd_frame_compress(np.random.default_rng(0).random(1000), out=bytearray(64))
    room = bytearray(codecs.zstd_frame_bound(x.nbytes))
    n = codecs.zstd_frame_compress(x, 3, True, out=room)
    assert bytes(room[:n]) == frame
    with pytest.raises(ParameterError, match="level"):
        codecs.zstd_frame_compress(x, 23)


# ---- writes: zarr reads back what ndpack wrote --------------------------------------------

@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("level,checksum", [(0, False), (1, True), (5, False), (-2, True)])
def test_writes_read_back_by_zarr(tmp_path, fmt, level, checksum):
    x = values()
    path = str(tmp_path / "o.zarr")
    z = zarr.create_array(path, shape=SHAPE, chunks=CHUNKS, dtype="f8", zarr_format=fmt,
                          compressors=codec_for(fmt, level, checksum))
    z[...] = 7.0                                 # chunks of fill values must then go
    before = chunkout.WRITES["zarr"]
    ndpack.evaluate("x", local_dict={"x": ndpack.asarray(x, chunks=(10, 17, 9))}, out=z)
    assert chunkout.WRITES["zarr"] - before == 5 * 3
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], x)
    files = chunk_files(path)
    assert len(files) == 4 * 3                   # the first row of chunks: fill, not stored
    for name in files:
        with open(name, "rb") as f:
            frame = f.read()
        assert zarrread._zstd_content_size(np.frombuffer(frame, np.uint8)) == \
            np.prod(CHUNKS) * 8                  # whole chunks, the size in the header
        assert (frame[4] >> 2) & 1 == checksum


def test_writes_in_many_regions_pipelined(tmp_path, monkeypatch):
    """Regions of one chunk each: encodings overlap the next regions, all stored (in
    order) by the end, chunks with the default codec and the default fill value."""
    from ndpack.engine.run import plan
    monkeypatch.setattr(plan, "REGION_BYTES", 8 * 6 * 17 * 9)
    x = values(seed=3, fill=0.0)
    a = ndpack.asarray(x, chunks=(4, 17, 9))
    z = zarr.create_array(str(tmp_path / "d.zarr"), shape=SHAPE, chunks=CHUNKS, dtype="f8")
    ndpack.evaluate("a * 2 - 1", local_dict={"a": a}, out=z)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "d.zarr"))[...], x * 2 - 1)
    w = chunkout.chunk_writer(z)
    w.write((slice(0, 5), slice(0, 17), slice(0, 9)), np.zeros((5, 17, 9)))
    w.flush()                                    # a part written: flush() stores it
    np.testing.assert_array_equal(z[:5], 0.0)


def test_an_encoding_error_reaches_the_caller(tmp_path, monkeypatch):
    z = zarr.create_array(str(tmp_path / "e.zarr"), shape=SHAPE, chunks=CHUNKS, dtype="f8")

    def boom(*args, **kwargs):
        raise ParameterError("boom")
    monkeypatch.setattr(chunkout, "zstd_frame_compress", boom)
    with pytest.raises(ParameterError, match="boom"):
        ndpack.evaluate("x + 1", local_dict={"x": ndpack.asarray(values())}, out=z)


# ---- reads ---------------------------------------------------------------------------------

@pytest.fixture(params=[2, 3])
def stored(request, tmp_path):
    x = values(seed=5, fill=1.5)
    fmt = request.param
    z = zarr.create_array(str(tmp_path / "r.zarr"), data=x, chunks=CHUNKS, zarr_format=fmt,
                          fill_value=1.5, compressors=codec_for(fmt, 3, fmt == 3))
    return zarr.open_array(str(tmp_path / "r.zarr"), mode="r"), x


def test_boxes_that_straddle_chunks(stored):
    z, x = stored
    rng = np.random.default_rng(2)
    read = foreign.reader(z)
    for _ in range(40):
        lo = [int(rng.integers(0, n)) for n in SHAPE]
        key = tuple(slice(a, int(rng.integers(a + 1, n + 1))) for a, n in zip(lo, SHAPE))
        for nthreads in (1, 2):
            got = foreign.read_new(read, z, key, nthreads)
            np.testing.assert_array_equal(got, x[key])


def test_whole_chunks_decoded_ahead(stored, monkeypatch):
    """Keys of one chunk each, in C order, with two threads: the next chunks are
    decoded ahead (chunks of fill values missing among them), each read once."""
    z, x = stored
    served, real = [], gridread._Ahead.serve

    def serve(self, coords, local, dstv):
        got = real(self, coords, local, dstv)
        served.append(got)
        return got
    monkeypatch.setattr(gridread._Ahead, "serve", serve)
    read = foreign.reader(z)
    foreign.READS.clear()
    grid = [range(0, n, c) for n, c in zip(SHAPE, CHUNKS)]
    for i in grid[0]:
        for j in grid[1]:
            key = (slice(i, min(i + 5, 23)), slice(j, min(j + 6, 17)), slice(0, 9))
            dst = np.full(tuple(s.stop - s.start for s in key), np.nan)
            read(key, dst, 2)
            np.testing.assert_array_equal(dst, x[key])
            time.sleep(0.02)                     # (the caller's work: the leaves run)
    assert read.ahead is not None
    assert len(chunk_files(str(z.store.root))) == 4 * 3
    assert foreign.READS["zarr"] == 5 * 3       # each once, stored or filled
    assert sum(served) >= 8                     # most from the chunks decoded ahead
    assert not foreign.READS["zarr fallback"]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip"])
def test_a_corrupt_chunk_never_gives_wrong_data(stored, damage):
    z, x = stored
    files = chunk_files(str(z.store.root))
    victim = files[len(files) // 2]
    with open(victim, "rb") as f:
        frame = bytearray(f.read())
    if damage == "truncate":
        frame = frame[:len(frame) // 2]
    elif damage == "garbage":
        frame = bytearray(b"\x28\xb5\x2f\xfd" + bytes(range(256)) * 4)
    else:
        frame[len(frame) // 2] ^= 0x55
    with open(victim, "wb") as f:
        f.write(frame)
    for nthreads in (1, 2):
        old = ndpack.set_nthreads(nthreads)
        try:
            got = ndpack.evaluate("z + 0", local_dict={"z": z})
        except FormatError as exc:               # zarr cannot read it either: named
            assert "the chunk at" in str(exc)
            continue
        finally:
            ndpack.set_nthreads(old)
        try:                                     # read: only if zarr reads the same
            want = z[...]
        except Exception:                        # noqa: BLE001
            pytest.fail("ndpack read a chunk that zarr refuses")
        np.testing.assert_array_equal(got, want)


def test_tensordot_over_zstd_operands_matches_numpy(tmp_path, monkeypatch):
    """Issue 26: the operands are read by the direct reader only -- never through
    zarr (``tuple(z.blocks)`` once read every chunk to learn the product's grain)."""
    from ndpack.engine.ops import contract
    rng = np.random.default_rng(4)
    x, y = rng.random((12, 10, 8)), rng.random((12, 10, 8))
    a = zarr.create_array(str(tmp_path / "a.zarr"), data=x, chunks=(3, 10, 8))
    b = zarr.create_array(str(tmp_path / "b.zarr"), data=y, chunks=(4, 5, 8))
    assert contract.grain_of(a, x.shape) == (3, 10, 8)

    def through_zarr(*args, **kwargs):
        raise AssertionError("read through zarr")
    monkeypatch.setattr(type(a), "get_block_selection", through_zarr)
    monkeypatch.setattr(type(a), "__getitem__", through_zarr)
    for axes in (((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 0), (2, 0))):
        got = ndpack.evaluate(f"tensordot(a, b, axes={axes})", local_dict={"a": a, "b": b})
        np.testing.assert_allclose(got, np.tensordot(x, y, axes=axes), rtol=1e-12)


def test_a_corrupt_chunk_decoded_ahead_is_refused_by_name(stored):
    z, x = stored
    files = chunk_files(str(z.store.root))
    with open(files[-1], "r+b") as f:             # the last chunk: decoded ahead
        f.truncate(10)
    read = foreign.reader(z)
    keys = [(slice(i, min(i + 5, 23)), slice(12, 17), slice(0, 9)) for i in range(0, 23, 5)]
    with pytest.raises(FormatError, match=r"the chunk at \(20, 12, 0\)"):
        for key in keys:
            dst = np.empty(tuple(s.stop - s.start for s in key))
            read(key, dst, 2)
            np.testing.assert_array_equal(dst, x[key])
            time.sleep(0.02)


def test_the_region_path_reads_ahead(tmp_path, monkeypatch):
    """Regions of one chunk (as 25 MB chunks give): the reader, called per piece with
    one thread, sees the scan in C order and decodes the next chunks ahead."""
    from ndpack.engine.run import plan
    x = np.random.default_rng(7).normal(size=(6, 100, 100)).round(2)
    z = zarr.create_array(str(tmp_path / "s.zarr"), data=x, chunks=(1, 100, 100))
    monkeypatch.setattr(plan, "REGION_BYTES", 1)           # (64 KiB at least: a chunk)
    started, real = [], gridread._Ahead.start

    def start(self, follow, nthreads):
        started.extend(follow)
        return real(self, follow, nthreads)
    monkeypatch.setattr(gridread._Ahead, "start", start)
    old = ndpack.set_nthreads(2)
    try:
        got = ndpack.evaluate("z + 1", local_dict={"z": z})
    finally:
        ndpack.set_nthreads(old)
    np.testing.assert_array_equal(got, x + 1)
    assert started[:2] == [(1, 0, 0), (2, 0, 0)]
