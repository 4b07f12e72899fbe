"""Patching blocks of a chunk (``ndpack.chunks.patch_blocks``, C ``ndp_patch_blocks``):
the new chunk decodes to the old bytes with the replaced blocks, in ndpack and in
python-blosc2; chunks that cannot be patched are declined; bad input is an error."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndpack
from ndpack import Codec, Filter, SplitMode
from ndpack.chunks import chunk_info, compress2, decompress2, patch_blocks
from ndpack.errors import NdpackError, ParameterError

try:
    import blosc2
except ImportError:
    blosc2 = None


@settings(max_examples=60, deadline=None)
@given(ts=st.sampled_from([1, 2, 4, 8, 3, 16]),
       nitems=st.integers(1, 20000),
       blockitems=st.sampled_from([64, 500, 4096]),
       codec=st.sampled_from([Codec.BLOSCLZ, Codec.LZ4, Codec.LZ4HC, Codec.ZLIB, Codec.ZSTD]),
       filt=st.sampled_from([Filter.NOFILTER, Filter.SHUFFLE, Filter.BITSHUFFLE,
                             Filter.BYTEDELTA, Filter.TRUNC_PREC]),
       split=st.sampled_from([SplitMode.ALWAYS_SPLIT, SplitMode.NEVER_SPLIT,
                              SplitMode.AUTO_SPLIT]),
       clevel=st.integers(1, 9), seed=st.integers(0, 2**16), data=st.data())
def test_patched_chunk_decodes_to_the_new_bytes(ts, nitems, blockitems, codec, filt, split,
                                                clevel, seed, data):
    raw = np.frombuffer(bytes(np.random.default_rng(seed).integers(0, 256, nitems * ts,
                                                                   dtype=np.uint8)), np.uint8)
    raw = np.where(np.arange(raw.size) % 7 < 4, 0, raw).astype(np.uint8)   # some redundancy
    filters = [Filter.SHUFFLE, Filter.BYTEDELTA] if filt == Filter.BYTEDELTA else [filt]
    meta = [0, ts] if filt == Filter.BYTEDELTA else [8 if filt == Filter.TRUNC_PREC else 0]
    if filt == Filter.TRUNC_PREC and ts not in (4, 8):
        filters, meta = [Filter.SHUFFLE], [0]
    ch = compress2(raw, typesize=ts, clevel=clevel, codec=codec, filters=filters,
                   filters_meta=meta + [0] * (6 - len(meta)), splitmode=split,
                   blocksize=blockitems * ts)
    info = chunk_info(ch)
    if info["memcpyed"] or info["special"]:
        assert patch_blocks(ch, [0], raw[:info["blocksize"]], clevel) is None
        return
    bs, nb = info["blocksize"], info["nblocks"]
    old = np.frombuffer(decompress2(ch), np.uint8)      # (TRUNC_PREC: the stored values)
    ids = sorted(data.draw(st.sets(st.integers(0, nb - 1), min_size=0, max_size=nb)))
    rng = np.random.default_rng(seed + 1)
    new = old.copy()
    rawbuf = np.zeros(len(ids) * bs, np.uint8)
    for k, j in enumerate(ids):
        lo, hi = j * bs, min((j + 1) * bs, old.size)
        blk = rng.integers(0, 256, hi - lo, dtype=np.uint8)
        blk[rng.random(hi - lo) < 0.5] = 7
        new[lo:hi] = blk
        rawbuf[k * bs:k * bs + hi - lo] = blk
    out = patch_blocks(ch, ids, rawbuf, clevel)
    assert out is not None
    want = np.frombuffer(decompress2(compress2(new, typesize=ts, clevel=clevel, codec=codec,
                                               filters=filters,
                                               filters_meta=meta + [0] * (6 - len(meta)),
                                               splitmode=split, blocksize=bs)), np.uint8)
    got = np.frombuffer(decompress2(out), np.uint8)
    np.testing.assert_array_equal(got, want)             # (TRUNC_PREC applies to new blocks)
    if blosc2 is not None:
        np.testing.assert_array_equal(np.frombuffer(blosc2.decompress2(out), np.uint8), want)


def test_untouched_blocks_are_copied_byte_for_byte():
    x = np.sin(np.arange(100000) * 1e-3)
    ch = compress2(x, typesize=8, clevel=5, blocksize=10000 * 8)
    y = x.copy()
    y[50000:60000] = 1.5
    out = patch_blocks(ch, [5], y[50000:60000], 5)
    whole = compress2(y, typesize=8, clevel=5, blocksize=10000 * 8, nthreads=1)
    assert out == whole                 # one thread writes blocks in order: the same bytes
    assert np.array_equal(np.frombuffer(decompress2(out)), y)


def test_a_chunk_that_becomes_all_zeros_is_a_zero_special_chunk():
    x = np.zeros(30000)
    x[:10] = 3.0
    ch = compress2(x, typesize=8, clevel=5, blocksize=10000 * 8)
    out = patch_blocks(ch, [0], np.zeros(10000), 5)
    assert chunk_info(out)["special"] == ndpack.SpecialValue.ZERO
    assert np.array_equal(np.frombuffer(decompress2(out)), np.zeros(30000))


@pytest.mark.parametrize("kind", ["special", "memcpyed", "delta", "dict"])
def test_chunks_that_cannot_be_patched_are_declined(kind):
    x = np.sin(np.arange(40000) * 1e-2)
    if kind == "special":
        ch = ndpack.chunks.special_chunk(ndpack.SpecialValue.ZERO, x.nbytes, 8)
    elif kind == "memcpyed":
        ch = compress2(x, typesize=8, clevel=0)
    elif kind == "delta":
        ch = compress2(x, typesize=8, filters=[Filter.DELTA, Filter.SHUFFLE], blocksize=80000)
    else:
        ch = compress2(np.tile(np.arange(50.0), 2000), typesize=8, codec=Codec.ZSTD,
                       use_dict=True, blocksize=80000)
        if not chunk_info(ch)["use_dict"]:
            pytest.skip("no dictionary trained")
    assert patch_blocks(ch, [0], np.ones(10000), 5) is None


def test_bad_block_lists_and_short_raw_bytes_are_errors():
    x = np.sin(np.arange(40000) * 1e-2)
    ch = compress2(x, typesize=8, clevel=5, blocksize=80000)
    for ids in ([1, 0], [0, 0], [-1], [4]):
        with pytest.raises(ParameterError, match="increasing"):
            patch_blocks(ch, ids, np.zeros(10000 * len(ids)), 5)
    with pytest.raises(ParameterError, match="raw bytes"):
        patch_blocks(ch, [0, 1], np.zeros(10000), 5)
    with pytest.raises(ParameterError, match="clevel"):
        patch_blocks(ch, [0], np.zeros(10000), 0)


def test_corrupt_chunks_raise_and_never_crash():
    x = np.sin(np.arange(40000) * 1e-2) + np.random.default_rng(0).normal(0, 1e-3, 40000)
    ch = bytearray(compress2(x, typesize=8, clevel=5, blocksize=80000))
    rng = np.random.default_rng(1)
    raised = 0
    for _ in range(400):
        bad = bytearray(ch)
        for _ in range(int(rng.integers(1, 4))):
            bad[int(rng.integers(0, len(bad)))] = int(rng.integers(0, 256))
        if rng.random() < 0.2:
            bad = bad[:int(rng.integers(0, len(bad)))]
        try:
            patch_blocks(bytes(bad), [1], np.zeros(10000), 5)
        except NdpackError:
            raised += 1
    assert raised > 0
