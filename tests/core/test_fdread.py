"""Positioned reads of some blocks of a chunk stored in a file
(:func:`ndpack.chunks.read_blocks_from_file`): the reduced chunk decodes those blocks
exactly as the whole chunk does, and anything unexpected declines (size 0) so that
the caller reads the chunk whole and the decoder reports the problem."""

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ndpack
from ndpack import chunks
from ndpack.errors import NdpackError

from tests.helpers import file_with_a_bad_block_start

PIPELINES = [
    {"filters": [ndpack.Filter.SHUFFLE]},
    {"filters": [ndpack.Filter.BITSHUFFLE]},
    {"filters": [ndpack.Filter.DELTA, ndpack.Filter.SHUFFLE]},
    {"filters": []},
    {"filters": [ndpack.Filter.SHUFFLE], "codec": ndpack.Codec.ZSTD, "use_dict": True},
    {"filters": [ndpack.Filter.SHUFFLE], "codec": ndpack.Codec.ZLIB},
]


def _chunk(pipeline, n=20000, blocksize=8000, seed=0):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.normal(size=n)).round(2)
    kw = dict(pipeline)
    # one thread: blocks stored in order (with more, a block's place in the chunk
    # depends on which thread finished first, and the truncation tests cut the wrong one)
    return x, chunks.compress2(x.tobytes(), typesize=8, blocksize=blocksize, clevel=5,
                               nthreads=1, **kw)


def _store(tmp_path, chunk, lead=b"header!"):
    path = tmp_path / "c.bin"
    path.write_bytes(lead + chunk)
    return os.open(path, os.O_RDONLY), len(lead)


@pytest.mark.parametrize("pipeline", PIPELINES, ids=lambda p: "-".join(
    str(int(f)) for f in p["filters"]) + ("-dict" if p.get("use_dict") else "")
    + (f"-{p['codec'].name}" if "codec" in p else ""))
@given(data=st.data())
@settings(max_examples=15, deadline=None)
def test_reduced_chunk_decodes_like_the_whole_chunk(pipeline, data, tmp_path_factory):
    x, chunk = _chunk(pipeline)
    nblocks = chunks.chunk_info(chunk)["nblocks"]
    want = data.draw(st.lists(st.integers(0, nblocks - 1), min_size=0, max_size=6))
    fd, pos = _store(tmp_path_factory.mktemp("fd"), chunk)
    try:
        buf = np.empty(len(chunk) + 64, np.uint8)
        size, needed = chunks.read_blocks_from_file(fd, pos, nblocks, want, buf)
    finally:
        os.close(fd)
    assert needed == 0 and 0 < size <= len(chunk)
    if want:
        got = chunks.decompress_blocks(buf[:size], want)
        ref = chunks.decompress_blocks(chunk, want)
        assert got == ref
    if len(set(want)) < nblocks // 2:
        assert size < len(chunk)                  # only some blocks were read


def test_small_buffer_reports_the_size_needed(tmp_path):
    x, chunk = _chunk(PIPELINES[0])
    fd, pos = _store(tmp_path, chunk)
    try:
        size, needed = chunks.read_blocks_from_file(fd, pos, 20, [3, 9], np.empty(100, np.uint8))
        assert size == 0 and needed > 100
        for _ in range(2):                      # block starts first, then the spans
            buf = np.empty(needed, np.uint8)
            size, again = chunks.read_blocks_from_file(fd, pos, 20, [3, 9], buf)
            if not again:
                break
            needed = again
    finally:
        os.close(fd)
    assert again == 0 and size == needed
    got = np.frombuffer(chunks.decompress_blocks(buf[:size], [9, 3]), np.float64)
    np.testing.assert_array_equal(got, np.concatenate([x[9000:10000], x[3000:4000]]))


def _decline(tmp_path, chunk, nblocks=20, numbers=(4,), lead=b"h"):
    fd, pos = _store(tmp_path, chunk, lead)
    try:
        return chunks.read_blocks_from_file(fd, pos, nblocks, list(numbers),
                                            np.empty(1 << 20, np.uint8), 0)
    finally:
        os.close(fd)


def test_unexpected_chunks_decline(tmp_path):
    x, chunk = _chunk(PIPELINES[0])
    assert _decline(tmp_path, chunk)[0] > 0
    assert _decline(tmp_path, chunk, nblocks=19) == (0, 0)          # another block count
    cut = chunk[:len(chunk) - 100]
    assert _decline(tmp_path, cut, numbers=(19,)) == (0, 0)         # truncated file
    assert _decline(tmp_path, cut, numbers=(4,))[0] > 0             # (not where read)
    assert _decline(tmp_path, chunk[:40]) == (0, 0)                 # no block starts
    bad = bytearray(chunk)
    bad[32 + 4 * 5:32 + 4 * 6] = (len(chunk) + 7).to_bytes(4, "little")
    assert _decline(tmp_path, bytes(bad)) == (0, 0)                  # start past cbytes
    bad = bytearray(chunk)
    bad[32:36] = (3).to_bytes(4, "little")                           # inside the header
    assert _decline(tmp_path, bytes(bad)) == (0, 0)
    zeros = chunks.special_chunk(1, 160000, 8, 8000)
    assert _decline(tmp_path, zeros) == (0, 0)                       # special
    raw = chunks.compress2(x.tobytes(), typesize=8, blocksize=8000, clevel=0)
    assert _decline(tmp_path, raw) == (0, 0)                         # memcpyed
    assert _decline(tmp_path, b"\x00" * 200) == (0, 0)               # not a chunk


def test_bad_arguments_are_errors(tmp_path):
    _, chunk = _chunk(PIPELINES[0])
    with pytest.raises(NdpackError, match="block 20 out of range"):
        _decline(tmp_path, chunk, numbers=(1, 20))
    with pytest.raises(NdpackError, match="invalid arguments"):
        chunks.read_blocks_from_file(-1, 0, 20, [1], np.empty(10, np.uint8))


@given(flips=st.lists(st.tuples(st.integers(0, 32 + 4 * 20 + 40), st.integers(0, 255)),
                      min_size=1, max_size=4))
@settings(max_examples=60, deadline=None)
def test_corrupt_headers_never_crash(flips, tmp_path_factory):
    _, chunk = _chunk(PIPELINES[2])
    bad = bytearray(chunk)
    for at, v in flips:
        bad[at] = v
    fd, pos = _store(tmp_path_factory.mktemp("fz"), bytes(bad))
    try:
        buf = np.empty(1 << 20, np.uint8)
        size, needed = chunks.read_blocks_from_file(fd, pos, 20, [2, 17], buf)
    finally:
        os.close(fd)
    if size:
        try:                                     # decoding may fail, but cleanly
            chunks.decompress_blocks(buf[:size], [2, 17])
        except (NdpackError, ValueError):
            pass


def test_corrupt_block_in_a_file_is_a_clear_error(tmp_path):
    x, path = file_with_a_bad_block_start(tmp_path)
    b = ndpack.open(path, mode="r", dparams={"verify": False})   # the decoder's error
    np.testing.assert_array_equal(b[:4, 3], x[:4, 3])           # chunk 0 is intact
    with pytest.raises((NdpackError, ValueError), match="block"):
        b[4:, 3]
