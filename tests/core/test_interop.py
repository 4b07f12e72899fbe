"""Chunks written by ndpack decode with python-blosc2 and vice versa."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ndpack

blosc2 = pytest.importorskip("blosc2")

CODECS = ["BLOSCLZ", "LZ4", "LZ4HC", "ZLIB", "ZSTD"]
PIPELINES = {
    "none": ["NOFILTER"],
    "shuffle": ["NOFILTER"] * 5 + ["SHUFFLE"],
    "bitshuffle": ["BITSHUFFLE"],
    "delta-shuffle": ["DELTA", "SHUFFLE"],
    "shuffle-bytedelta": ["SHUFFLE", "BYTEDELTA"],
}
TYPESIZES = [1, 2, 4, 8, 16]


def _inputs():
    rng = np.random.default_rng(7)
    yield "linspace", np.linspace(0, 1, 40_000)
    yield "sin_noise", np.sin(np.arange(40_000) / 100) + rng.normal(0, 1e-4, 40_000)
    yield "ints", np.arange(20_000, dtype=np.int32) // 3
    yield "random", rng.integers(0, 2**62, 5_000)


def _kw(module, codec, pipe, typesize, clevel=5, nthreads=1, blocksize=0):
    filters = [getattr(module.Filter, f) for f in PIPELINES[pipe]]
    return dict(codec=getattr(module.Codec, codec), clevel=clevel, typesize=typesize,
                filters=filters, nthreads=nthreads, blocksize=blocksize)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("pipe", sorted(PIPELINES))
@pytest.mark.parametrize("typesize", TYPESIZES)
def test_ndpack_chunks_decode_with_blosc2(codec, pipe, typesize):
    for _, x in _inputs():
        data = x.tobytes()
        for nthreads in (1, 2):
            c = ndpack.compress2(data, **_kw(ndpack, codec, pipe, typesize, nthreads=nthreads))
            assert blosc2.decompress2(c) == data


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("pipe", sorted(PIPELINES))
@pytest.mark.parametrize("typesize", TYPESIZES)
def test_blosc2_chunks_decode_with_ndpack(codec, pipe, typesize):
    for _, x in _inputs():
        data = x.tobytes()
        for nthreads in (1, 2):
            c = blosc2.compress2(data, **_kw(blosc2, codec, pipe, typesize, nthreads=nthreads))
            assert ndpack.decompress2(c) == data
            assert ndpack.get_cbuffer_sizes(c) == blosc2.get_cbuffer_sizes(c)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("pipe", sorted(PIPELINES))
def test_headers_match_blosc2(codec, pipe):
    """Same blocksize, split decision, flags and pipeline bytes as python-blosc2."""
    for _, x in _inputs():
        for typesize in TYPESIZES:
            ours = ndpack.compress2(x, **_kw(ndpack, codec, pipe, typesize))
            theirs = blosc2.compress2(x, **_kw(blosc2, codec, pipe, typesize))
            a, b = ndpack.chunk_info(ours), ndpack.chunk_info(theirs)
            if a["memcpyed"] or b["memcpyed"] or a["special"] or b["special"]:
                continue   # codec-library differences may flip the memcpy fallback
            for key in ("version", "flags", "typesize", "nbytes", "blocksize", "filters",
                        "filters_meta", "compcode", "nblocks"):
                assert a[key] == b[key], key


def test_lz4_chunks_byte_identical():
    """liblz4's fast mode emits the same streams in every 1.9.x/1.10 release."""
    for _, x in _inputs():
        for pipe in ("shuffle", "bitshuffle", "none"):
            ours = ndpack.compress2(x, **_kw(ndpack, "LZ4", pipe, 8))
            theirs = blosc2.compress2(x, **_kw(blosc2, "LZ4", pipe, 8))
            assert ours == theirs


@given(st.binary(max_size=3000), st.sampled_from(CODECS), st.sampled_from(sorted(PIPELINES)),
       st.sampled_from(TYPESIZES + [3, 7]), st.integers(0, 9), st.sampled_from([0, 64, 1000]))
def test_interop_hypothesis(data, codec, pipe, typesize, clevel, blocksize):
    kw_ours = _kw(ndpack, codec, pipe, typesize, clevel=clevel, blocksize=blocksize)
    kw_theirs = _kw(blosc2, codec, pipe, typesize, clevel=clevel, blocksize=blocksize)
    assert blosc2.decompress2(ndpack.compress2(data, **kw_ours)) == data
    assert ndpack.decompress2(blosc2.compress2(data, **kw_theirs)) == data


def test_special_chunks_with_blosc2():
    for special, value in [(ndpack.SpecialValue.ZERO, None), (ndpack.SpecialValue.NAN, None),
                           (ndpack.SpecialValue.VALUE, np.float64(1.5).tobytes()),
                           (ndpack.SpecialValue.UNINIT, None)]:
        c = ndpack.chunks.special_chunk(special, 8000, 8, 0, value)
        ours = np.frombuffer(ndpack.decompress(c))
        theirs = np.frombuffer(blosc2.decompress2(c))
        if special != ndpack.SpecialValue.UNINIT:
            np.testing.assert_array_equal(ours, theirs)
        assert ours.size == 1000


def test_getitem_matches_blosc2():
    x = np.arange(100_000, dtype=np.int32)
    c = blosc2.compress2(x, typesize=4, blocksize=4096)
    for start, n in [(0, 10), (999, 5000), (99_990, 10), (50_000, 0)]:
        assert ndpack.chunks.getitem(c, start, n) == x[start:start + n].tobytes()


def _records(n=20_000):
    import random
    r = random.Random(1)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    return b"".join(
        ('{"name": "%s", "city": "%s", "id": %d, "ok": %s}\n'
         % (r.choice(words), r.choice(words), r.randrange(10**6), r.choice(["true", "false"])))
        .encode() for _ in range(n))


@pytest.mark.parametrize("codec", ["ZSTD", "LZ4", "LZ4HC"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_dictionary_chunks_both_ways(codec, nthreads):
    text = _records()
    kw = dict(typesize=1, clevel=5, blocksize=2048, nthreads=nthreads)
    ours = ndpack.compress2(text, codec=getattr(ndpack.Codec, codec), use_dict=True, **kw)
    info = ndpack.chunk_info(ours)
    assert info["use_dict"] and not info["memcpyed"]
    plain = ndpack.compress2(text, codec=getattr(ndpack.Codec, codec), **kw)
    theirs = blosc2.compress2(text, codec=getattr(blosc2.Codec, codec), use_dict=True, **kw)
    assert len(ours) < 0.9 * len(plain)              # small blocks: the dictionary pays off
    assert len(ours) < 1.03 * len(theirs)
    assert blosc2.decompress2(ours) == text
    assert ndpack.decompress2(ours) == text
    assert ndpack.decompress2(theirs) == text
