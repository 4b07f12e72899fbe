"""The crc32c kernel of chunk checksums (C core, through the binding): known answers,
the SIMD kernels against the scalar reference, ISA levels.  The integrity record of
frames is tested in tests/storage/test_checksum.py."""

from __future__ import annotations

import platform
import zlib

import numpy as np
import pytest

from ndpack import _core
from ndpack.chunks import crc32c


def _bitwise_crc32c(data: bytes) -> int:
    """The definition, one bit at a time (reflected Castagnoli polynomial)."""
    r = 0xFFFFFFFF
    for b in data:
        r ^= b
        for _ in range(8):
            r = (r >> 1) ^ 0x82F63B78 if r & 1 else r >> 1
    return r ^ 0xFFFFFFFF


def test_known_answers():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"123456789", reference=True) == 0xE3069283
    assert crc32c(b"") == 0 and crc32c(b"", 5) == 5
    assert crc32c(bytes(32)) == 0x8A9136AA                      # RFC 3720 B.4
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
    assert crc32c(b"123456789") != zlib.crc32(b"123456789")    # not zlib's polynomial


def test_kernel_equals_reference_on_ragged_sizes():
    rng = np.random.default_rng(1)
    buf = rng.integers(0, 256, 3 * 3 * 4096 + 5000, dtype=np.uint8).tobytes()
    sizes = list(range(0, 70)) + [767, 768, 769, 3 * 4096 - 1, 3 * 4096, 3 * 4096 + 1,
                                  2 * 3 * 4096 + 3 * 256 + 13]
    sizes += [511, 512, 513, 527, 528, 767, 1024, 1039, 4096 + 15, 4096 + 16 * 7 + 9]
    sizes += [int(n) for n in rng.integers(0, len(buf) - 16, 60)]
    for n in sizes:
        off = int(rng.integers(0, 16))
        piece = memoryview(buf)[off:off + n]
        want = crc32c(piece, reference=True)
        assert crc32c(piece) == want, (off, n)
        cut = int(rng.integers(0, n + 1))
        assert crc32c(piece[cut:], crc32c(piece[:cut])) == want, (off, n, cut)
    small = buf[:300]
    assert crc32c(small) == _bitwise_crc32c(small)


def test_isa_levels_choose_the_kernel():
    """NDPACK_ISA/set_isa lowers the kernel: scalar -> the reference, sse2 -> the SSE4.2
    streams; every level gives the reference's values."""
    before = _core.isa()
    buf = np.random.default_rng(2).integers(0, 256, 70_001, dtype=np.uint8)
    want = [crc32c(buf[i:], reference=True) for i in (0, 3, 517, 69_000)]
    try:
        for isa, kernel in (("scalar", "scalar"), ("sse2", "sse4.2")):
            if isa == "sse2" and platform.machine().lower() not in ("x86_64", "amd64"):
                continue
            _core.set_isa(isa)
            assert _core.crc32c_kernel() == kernel
            assert crc32c(b"123456789") == 0xE3069283
            assert [crc32c(buf[i:]) for i in (0, 3, 517, 69_000)] == want
    finally:
        _core.set_isa(before)
    assert _core.crc32c_kernel() in ("avx512-vpclmul", "avx2-vpclmul", "sse4.2", "scalar")


def test_accepts_arrays_and_refuses_str():
    a = np.arange(1000, dtype=np.float64)
    assert crc32c(a) == crc32c(a.tobytes())
    with pytest.raises(TypeError):
        crc32c("text")


@pytest.mark.parametrize("kind", ["lz4-shuffle", "zstd-dict", "delta", "bitshuffle", "memcpyed",
                                  "zeros", "blosclz-noshuffle"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_decompress_crc_is_the_crc_of_the_chunk(kind, nthreads):
    """Decoding with the fused checksum (each block's bytes hashed by the thread that
    decodes it, the pieces joined) gives the data and crc32c of the whole chunk, for
    every kind of chunk, with bytes after the chunk counted as crc32c(data) does."""
    from ndpack.chunks import compress2, decompress2, decompress_crc
    from ndpack.codecs import Codec, Filter
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.normal(size=50_003)).astype(np.float64)
    kw = {"typesize": 8, "blocksize": 16384, "nthreads": 1}
    kw.update({"lz4-shuffle": {"codec": Codec.LZ4, "filters": [Filter.SHUFFLE]},
               "zstd-dict": {"codec": Codec.ZSTD, "use_dict": True},
               "delta": {"codec": Codec.LZ4, "filters": [Filter.DELTA, Filter.SHUFFLE]},
               "bitshuffle": {"codec": Codec.ZSTD, "filters": [Filter.BITSHUFFLE]},
               "memcpyed": {"clevel": 0},
               "zeros": {},
               "blosclz-noshuffle": {"codec": Codec.BLOSCLZ, "filters": [Filter.NOFILTER]},
               }[kind])
    if kind == "zeros":
        x = np.zeros_like(x)
    c = compress2(x, **kw)
    for src in (c, c + b"tail"):
        out = np.empty_like(x)
        assert decompress_crc(src, out, nthreads) == crc32c(src)
        np.testing.assert_array_equal(out, np.frombuffer(decompress2(c), x.dtype))


def _blocks_reversed(chunk: bytes) -> bytes:
    """`chunk` (extended header, no dictionary) with its blocks' bytes stored in
    reverse order and the starts rewritten: a valid chunk whose starts decrease."""
    import struct
    nbytes, blocksize, cbytes = struct.unpack_from("<iii", chunk, 4)
    nblocks = -(-nbytes // blocksize)
    starts = list(struct.unpack_from(f"<{nblocks}i", chunk, 32))
    ends = starts[1:] + [cbytes]
    head = bytearray(chunk[:starts[0]])
    body, new = bytearray(), [0] * nblocks
    for j in reversed(range(nblocks)):
        new[j] = len(head) + len(body)
        body += chunk[starts[j]:ends[j]]
    struct.pack_into(f"<{nblocks}i", head, 32, *new)
    return bytes(head + body)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_decompress_crc_blocks_in_any_order(nthreads):
    """Blocks stored out of order (a threaded compressor stores each as it finishes)
    are hashed span by span in the order they lie: the crc is the whole chunk's and
    every damaged byte still changes it or fails cleanly."""
    from ndpack.chunks import compress2, decompress2, decompress_crc
    from ndpack.codecs import Codec, Filter
    from ndpack.errors import NdpackError
    x = np.cumsum(np.random.default_rng(4).normal(size=40_000))
    for codec in (Codec.LZ4, Codec.ZSTD):
        c = compress2(x, typesize=8, blocksize=16384, codec=codec, filters=[Filter.SHUFFLE],
                      nthreads=1)
        r = _blocks_reversed(c)
        assert r != c and len(r) == len(c)
        for src in (r, r + b"tail", compress2(x, typesize=8, blocksize=8192, nthreads=2)):
            out = np.empty_like(x)
            assert decompress_crc(src, out, nthreads) == crc32c(src)
            np.testing.assert_array_equal(out, x)
            np.testing.assert_array_equal(np.frombuffer(decompress2(src), x.dtype), x)
        rng = np.random.default_rng(5)
        for _ in range(100):
            d = bytearray(r)
            d[int(rng.integers(len(d)))] ^= int(rng.integers(1, 256))
            try:
                assert decompress_crc(bytes(d), np.empty_like(x), nthreads) != crc32c(r)
            except NdpackError:
                pass


def test_decompress_crc_damaged_and_short():
    """A damaged chunk gives a different crc or a clean error; a small `dst` is refused."""
    from ndpack.chunks import compress2, decompress_crc
    from ndpack.errors import NdpackError, ParameterError
    x = np.arange(40_000, dtype=np.int32)
    c = bytearray(compress2(x, typesize=4, blocksize=8192))
    with pytest.raises(ParameterError, match="destination"):
        decompress_crc(bytes(c), bytearray(100))
    good = crc32c(bytes(c))
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = bytearray(c)
        d[int(rng.integers(len(d)))] ^= int(rng.integers(1, 256))
        try:
            assert decompress_crc(bytes(d), bytearray(x.nbytes)) != good
        except NdpackError:
            pass
