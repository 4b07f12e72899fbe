"""Hostile input: clear exceptions, never a crash, never out-of-bounds access."""

import random

import numpy as np
import pytest

import ndpack
from ndpack import FormatError


@pytest.fixture(scope="module")
def good_chunks(vectors):
    chunks = [p.read_bytes() for p in sorted((vectors / "chunks").glob("*.cdata"))]
    x = np.sin(np.arange(20_000) / 50)
    for codec in ndpack.codecs.BUILTIN_CODECS:
        chunks.append(ndpack.compress2(x, codec=codec, typesize=8, blocksize=4096))
    return chunks


@pytest.mark.parametrize("data,fragment", [
    (b"", "shorter than the 16-byte"),
    (b"\x05\x01\x05\x08" + bytes(12), "cbytes 0"),
    (b"\x00\x01\x05\x08" + bytes(28), "version 0"),
    (b"\x05\x01\x05\x00" + bytes(28), "typesize 0"),
])
def test_invalid_headers_name_the_problem(data, fragment):
    with pytest.raises(FormatError, match=fragment):
        ndpack.decompress(data)


def test_every_truncation_raises(good_chunks):
    for c in good_chunks[:40]:
        for cut in range(0, len(c), max(1, len(c) // 60)):
            with pytest.raises(FormatError):
                ndpack.decompress(c[:cut])


def test_lying_cbytes():
    c = bytearray(ndpack.compress2(np.arange(1000.0)))
    c[12:16] = (len(c) + 100).to_bytes(4, "little")
    with pytest.raises(FormatError, match="truncated"):
        ndpack.decompress(bytes(c))


def test_bstart_out_of_range():
    c = bytearray(ndpack.compress2(np.arange(100_000.0), blocksize=8192))
    c[32:36] = (len(c) + 5).to_bytes(4, "little")
    with pytest.raises(FormatError, match="block 0"):
        ndpack.decompress(bytes(c))


def test_unknown_codec_in_chunk():
    c = bytearray(ndpack.compress2(np.arange(1000.0)))
    c[2] = (c[2] & 0x1F) | (6 << 5)    # "codec in udcodec byte"
    c[22] = 201
    with pytest.raises(ndpack.CodecError, match="201"):
        ndpack.decompress(bytes(c))


def test_unknown_filter_in_chunk():
    c = bytearray(ndpack.compress2(np.arange(1000.0)))
    c[21] = 99
    with pytest.raises(ndpack.FilterError, match="99"):
        ndpack.decompress(bytes(c))


def test_random_mutations_never_crash(good_chunks):
    rng = random.Random(1234)
    outcomes = {"ok": 0, "error": 0}
    for _ in range(3000):
        c = bytearray(rng.choice(good_chunks))
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            if op < 0.5 and c:
                c[rng.randrange(len(c))] = rng.randrange(256)
            elif op < 0.8 and len(c) > 36:
                pos = rng.randrange(0, len(c) - 4)
                val = rng.choice([0, 1, -1, 255, -255, 2**31 - 1, -(2**31), len(c)])
                c[pos:pos + 4] = val.to_bytes(4, "little", signed=True)
            elif c:
                del c[rng.randrange(len(c)):]
        try:
            ndpack.decompress(bytes(c))
            outcomes["ok"] += 1
        except (FormatError, ndpack.CodecError, ndpack.FilterError):
            outcomes["error"] += 1
    assert outcomes["error"] > 1000


def test_bad_parameters():
    x = np.arange(100.0)
    with pytest.raises(ndpack.CodecError, match="99"):
        ndpack.compress2(x, codec=99)
    with pytest.raises(ndpack.FilterError, match="77"):
        ndpack.compress2(x, filters=[77])
    with pytest.raises(ndpack.ParameterError, match="clevel"):
        ndpack.compress2(x, clevel=12)
    with pytest.raises(ndpack.ParameterError, match="unknown compression parameter"):
        ndpack.compress2(x, codecs=1)
    with pytest.raises(ndpack.FilterError, match="TRUNC_PREC"):
        ndpack.compress2(np.arange(10, dtype=np.int16), typesize=2, filters=[ndpack.Filter.TRUNC_PREC],
                         filters_meta=[3])
    with pytest.raises(ndpack.FilterError, match="decode-only"):
        ndpack.compress2(x, filters=[34])
    with pytest.raises(TypeError, match="str"):
        ndpack.compress2("text")
    with pytest.raises(ValueError, match="multiple of typesize"):
        ndpack.compress(b"abc", typesize=2)
    with pytest.raises(ndpack.ParameterError, match="use_dict needs"):
        ndpack.compress2(x, use_dict=True, codec=ndpack.Codec.BLOSCLZ)


def test_destination_too_small():
    c = ndpack.compress2(np.arange(100.0))
    with pytest.raises(ndpack.ParameterError, match="800"):
        ndpack.decompress(c, dst=bytearray(10))
    with pytest.raises((TypeError, BufferError)):
        ndpack.decompress(c, dst=bytes(800))    # read-only
