"""Round trips of compress2/decompress2 over codecs, filter pipelines, typesizes and sizes."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ndpack
from ndpack import Codec, Filter

CODECS = [Codec.BLOSCLZ, Codec.LZ4, Codec.LZ4HC, Codec.ZLIB, Codec.ZSTD]
PIPELINES = {
    "none": [Filter.NOFILTER],
    "shuffle": [0, 0, 0, 0, 0, Filter.SHUFFLE],
    "bitshuffle": [Filter.BITSHUFFLE],
    "delta-shuffle": [Filter.DELTA, Filter.SHUFFLE],
    "shuffle-bytedelta": [Filter.SHUFFLE, Filter.BYTEDELTA],
    "delta": [Filter.DELTA],
    "shuffle-bitshuffle": [Filter.SHUFFLE, Filter.BITSHUFFLE],
}
TYPESIZES = [1, 2, 3, 4, 8, 16, 255]
SIZES = [0, 1, 7, 31, 32, 33, 1000, 4096 + 3, 70_001]


def _data(nbytes, seed):
    rng = np.random.default_rng(seed)
    smooth = (np.arange(nbytes) // 7).astype(np.uint8)
    noise = rng.integers(0, 4, nbytes, dtype=np.uint8)
    return (smooth + noise).tobytes()


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("pipe", PIPELINES, ids=str)
@pytest.mark.parametrize("typesize", TYPESIZES)
def test_roundtrip_matrix(codec, pipe, typesize):
    for n, clevel in zip(SIZES, itertools.cycle([1, 5, 9, 3])):
        data = _data(n, n)
        c = ndpack.compress2(data, codec=codec, clevel=clevel, typesize=typesize,
                             filters=PIPELINES[pipe])
        assert len(c) <= n + 32
        assert ndpack.decompress2(c) == data


def test_multi_mb_buffers_all_codecs():
    x = np.sin(np.linspace(0, 200, 3_000_000)) + np.random.default_rng(1).normal(0, 1e-3, 3_000_000)
    for codec in CODECS:
        for nthreads in (1, 2):
            c = ndpack.compress2(x, codec=codec, clevel=5, typesize=8, nthreads=nthreads)
            assert len(c) < x.nbytes
            out = np.frombuffer(ndpack.decompress2(c, nthreads=nthreads), dtype=x.dtype)
            np.testing.assert_array_equal(out, x)


def test_ragged_last_block_with_user_blocksize():
    data = _data(10_000, 3)
    for bs in (1, 7, 64, 1000, 4096, 9999, 10_000, 20_000):
        c = ndpack.compress2(data, typesize=4, blocksize=bs)
        assert ndpack.decompress2(c) == data
        assert ndpack.get_cbuffer_sizes(c)[2] <= max(bs, 1)


@given(
    data=st.binary(min_size=0, max_size=5000),
    codec=st.sampled_from(CODECS),
    pipe=st.sampled_from(sorted(PIPELINES)),
    typesize=st.sampled_from(TYPESIZES + [5, 12, 17, 64]),
    clevel=st.integers(0, 9),
    blocksize=st.sampled_from([0, 0, 16, 100, 1024]),
    nthreads=st.integers(1, 3),
    splitmode=st.sampled_from(list(ndpack.SplitMode)),
    use_dict=st.booleans(),
)
def test_roundtrip_hypothesis(data, codec, pipe, typesize, clevel, blocksize, nthreads, splitmode,
                              use_dict):
    use_dict = use_dict and codec in (Codec.ZSTD, Codec.LZ4, Codec.LZ4HC)
    c = ndpack.compress2(data, codec=codec, clevel=clevel, typesize=typesize,
                         filters=PIPELINES[pipe], blocksize=blocksize, nthreads=nthreads,
                         splitmode=splitmode, use_dict=use_dict)
    assert ndpack.decompress2(c, nthreads=nthreads) == data


@given(st.lists(st.floats(allow_nan=False, width=32), min_size=8, max_size=3000),
       st.integers(1, 22))
def test_trunc_prec_matches_numpy_mask(values, prec):
    x = np.asarray(values, dtype=np.float32)
    c = ndpack.compress2(x, typesize=4, filters=[Filter.TRUNC_PREC, Filter.SHUFFLE],
                         filters_meta=[prec, 0])
    out = np.frombuffer(ndpack.decompress2(c), dtype=np.uint32)
    mask = np.uint32((0xFFFFFFFF << (23 - prec)) & 0xFFFFFFFF)
    # A chunk that falls back to memcpy stores the original bytes (as python-blosc2 does).
    expected = x.view(np.uint32) if ndpack.chunk_info(c)["memcpyed"] else x.view(np.uint32) & mask
    np.testing.assert_array_equal(out, expected)


def test_trunc_prec_applied_on_compressed_chunk():
    x = np.linspace(-3, 3, 10_000, dtype=np.float64)
    c = ndpack.compress2(x, typesize=8, filters=[ndpack.Filter.TRUNC_PREC, ndpack.Filter.SHUFFLE],
                         filters_meta=[-20, 0])
    assert not ndpack.chunk_info(c)["memcpyed"]
    out = np.frombuffer(ndpack.decompress2(c), dtype=np.uint64)
    np.testing.assert_array_equal(out, x.view(np.uint64) & np.uint64(~((1 << 20) - 1) & (2**64 - 1)))
    assert np.abs(out.view(np.float64) - x).max() < 1e-9


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("prec", [-3, 5, -1])
def test_int_trunc_matches_numpy_mask(dtype, prec):
    x = (np.arange(5000) % 700 - 350).astype(dtype)
    bits = 8 * x.itemsize
    zeros = -prec if prec < 0 else bits - prec
    c = ndpack.compress2(x, typesize=x.itemsize, filters=[Filter.INT_TRUNC, Filter.SHUFFLE],
                         filters_meta=[prec, 0])
    assert not ndpack.chunk_info(c)["memcpyed"]
    utype = np.dtype(f"u{x.itemsize}")
    out = np.frombuffer(ndpack.decompress2(c), dtype=utype)
    mask = (~((1 << zeros) - 1)) & ((1 << bits) - 1)
    np.testing.assert_array_equal(out, x.view(utype) & np.array(mask, dtype=utype))


def test_clevel0_and_tiny_are_memcpyed():
    for data in (b"", b"abc", bytes(range(31))):
        c = ndpack.compress2(data, typesize=1)
        info = ndpack.chunk_info(c)
        assert info["memcpyed"] and info["cbytes"] == len(data) + 32
        assert ndpack.decompress2(c) == data
    c = ndpack.compress2(bytes(1000), clevel=0, typesize=1)
    assert ndpack.chunk_info(c)["memcpyed"]


def test_zero_data_becomes_zero_special_chunk():
    c = ndpack.compress2(np.zeros(10_000))
    assert len(c) == 32 and ndpack.chunk_info(c)["special"] == ndpack.SpecialValue.ZERO
    assert ndpack.decompress2(c) == bytes(80_000)


def test_runs_are_run_streams():
    c = ndpack.compress2(np.full(1000, 7, dtype=np.int64), typesize=8)
    assert len(c) == 69    # FORMAT.md 1.6 example: one run + seven zero streams
    assert np.frombuffer(ndpack.decompress2(c), np.int64).tolist() == [7] * 1000


def test_incompressible_streams_skip_slow_codecs_but_repeats_compress():
    """Noise is stored raw without running zstd; high-entropy data that repeats within
    8 KiB is still handed to the codec and compresses."""
    rng = np.random.default_rng(3)
    noise = rng.integers(0, 256, 1 << 20, dtype=np.uint8)
    pattern = np.tile(rng.integers(0, 256, 4096, dtype=np.uint8), 256)
    for codec in (Codec.ZSTD, Codec.ZLIB, Codec.LZ4HC):
        c_noise = ndpack.compress2(noise, codec=codec, clevel=5, typesize=1)
        assert ndpack.chunk_info(c_noise)["memcpyed"]
        c_pat = ndpack.compress2(pattern, codec=codec, clevel=5, typesize=1)
        assert len(c_pat) < pattern.nbytes / 10   # each block keeps one copy
        assert ndpack.decompress2(c_pat) == pattern.tobytes()


def test_partly_noisy_floats_keep_blosc2_ratio():
    blosc2 = pytest.importorskip("blosc2")
    rng = np.random.default_rng(4)
    x = np.sin(np.arange(2_000_000) * 1e-4) + rng.normal(0, 1e-6, 2_000_000)
    for clevel in (1, 2, 3, 5):
        ours = ndpack.compress2(x, codec=Codec.ZSTD, clevel=clevel, typesize=8)
        theirs = blosc2.compress2(x, codec=blosc2.Codec.ZSTD, clevel=clevel, typesize=8)
        assert abs(len(ours) / len(theirs) - 1) < 0.03


def test_skewed_matchless_streams_keep_ratio():
    """Streams with only order-0 redundancy take the probe's fast path (entropy coding at
    the fastest level); the chunk must stay as small as python-blosc2's and round-trip."""
    blosc2 = pytest.importorskip("blosc2")
    rng = np.random.default_rng(9)
    skewed = np.minimum(rng.geometric(0.08, 1 << 20), 255).astype(np.uint8)
    doubles = rng.random(1 << 18)
    for data, typesize in ((skewed, 1), (doubles, 8)):
        for clevel in (1, 2, 3, 5, 9):
            ours = ndpack.compress2(data, codec=Codec.ZSTD, clevel=clevel, typesize=typesize)
            theirs = blosc2.compress2(data, codec=blosc2.Codec.ZSTD, clevel=clevel,
                                      typesize=typesize)
            assert len(ours) <= 1.03 * len(theirs)
            assert ndpack.decompress2(ours) == data.tobytes()


def test_large_special_and_memcpyed_chunks_decode_in_pieces():
    """Special and memcpyed chunks are produced in 1 MiB pieces by several threads;
    the value pattern must keep its phase across pieces (3-byte values here)."""
    value = b"\x01\x02\x03"
    c = ndpack.chunks.special_chunk(ndpack.SpecialValue.VALUE, 3 * 1_000_001, 3, value=value)
    for nthreads in (1, 2, 3):
        assert ndpack.decompress2(c, nthreads=nthreads) == value * 1_000_001
    data = np.random.default_rng(2).integers(0, 256, 5_000_003, dtype=np.uint8)
    c = ndpack.compress2(data, clevel=0, typesize=1, nthreads=2)
    assert ndpack.chunk_info(c)["memcpyed"]
    for nthreads in (1, 2):
        assert ndpack.decompress2(c, nthreads=nthreads) == data.tobytes()
    nan = ndpack.chunks.special_chunk(ndpack.SpecialValue.NAN, 8 * 700_000, 8)
    assert np.isnan(np.frombuffer(ndpack.decompress2(nan, nthreads=2))).all()
