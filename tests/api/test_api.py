"""The chunk-level API keeps python-blosc2's names, defaults and semantics."""

import dataclasses

import numpy as np
import pytest

import ndpack

blosc2 = pytest.importorskip("blosc2")


def test_enums_match_blosc2():
    for ours, theirs in [(ndpack.Codec, blosc2.Codec), (ndpack.Filter, blosc2.Filter),
                         (ndpack.SplitMode, blosc2.SplitMode),
                         (ndpack.SpecialValue, blosc2.SpecialValue)]:
        assert {m.name: m.value for m in ours} == {m.name: m.value for m in theirs}


def _plain(v):
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return getattr(v, "value", v)


def test_cparams_defaults_match_blosc2():
    ours, theirs = dataclasses.asdict(ndpack.CParams()), dataclasses.asdict(blosc2.CParams())
    assert ours.keys() == theirs.keys()
    for key in ours:
        if key != "nthreads":
            assert _plain(ours[key]) == _plain(theirs[key]), key
    assert ndpack.DParams().nthreads >= 1


def test_cparams_normalization():
    cp = ndpack.CParams(filters=[ndpack.Filter.SHUFFLE, ndpack.Filter.BYTEDELTA], typesize=4)
    assert cp.filters_meta == [0, 4]
    assert ndpack.CParams(filters=[ndpack.Filter.BITSHUFFLE]).filters_meta == [0]
    with pytest.raises(ValueError):
        ndpack.CParams(filters=[0] * 7)


def test_compress2_accepts_cparams_dict_and_kwargs():
    x = np.arange(10_000, dtype=np.int32)
    a = ndpack.compress2(x, cparams=ndpack.CParams(codec=ndpack.Codec.LZ4, typesize=4, nthreads=1))
    b = ndpack.compress2(x, cparams={"codec": ndpack.Codec.LZ4, "typesize": 4, "nthreads": 1})
    c = ndpack.compress2(x, codec=ndpack.Codec.LZ4, typesize=4, nthreads=1)
    assert a == b == c
    assert ndpack.get_clib(a) == "LZ4"


def test_compress_blosc1_style_defaults():
    x = np.arange(1000, dtype=np.int64)
    c = ndpack.compress(x)
    info = ndpack.chunk_info(c)
    assert info["compcode"] == ndpack.Codec.ZSTD and info["filters"][5] == ndpack.Filter.SHUFFLE
    assert ndpack.decompress(c) == x.tobytes()
    assert isinstance(ndpack.decompress(c, as_bytearray=True), bytearray)


def test_decompress_into_dst():
    x = np.arange(1000, dtype=np.int64)
    out = np.empty_like(x)
    assert ndpack.decompress(ndpack.compress(x), dst=out) is None
    np.testing.assert_array_equal(out, x)
    out2 = bytearray(8000)
    assert ndpack.decompress2(ndpack.compress2(x), dst=out2, nthreads=2) is None
    assert bytes(out2) == x.tobytes()


def test_get_cbuffer_sizes_matches_blosc2():
    x = np.linspace(0, 1, 100_000)
    c = blosc2.compress2(x)
    assert ndpack.get_cbuffer_sizes(c) == blosc2.get_cbuffer_sizes(c)


def test_nthreads_roundtrip():
    old = ndpack.set_nthreads(1)
    try:
        assert ndpack.nthreads == 1
        assert ndpack.CParams().nthreads == 1
    finally:
        ndpack.set_nthreads(old)
    assert ndpack.nthreads == old
    with pytest.raises(ValueError):
        ndpack.set_nthreads(0)


def test_compressor_list():
    assert ndpack.compressor_list()[:5] == [ndpack.Codec.BLOSCLZ, ndpack.Codec.LZ4,
                                            ndpack.Codec.LZ4HC, ndpack.Codec.ZLIB,
                                            ndpack.Codec.ZSTD]


def test_show_config(capsys):
    cfg = ndpack.show_config()
    text = capsys.readouterr().out
    assert cfg["isa"] in ("scalar", "sse2", "avx2") and cfg["isa"] in text
    assert cfg["codecs"]["zstd"].count(".") == 2 and "lz4" in cfg["codecs"]


def test_user_codec_roundtrip_and_errors():
    import zlib

    calls = {"enc": 0, "dec": 0}

    def enc(src, dst, meta, schunk):
        calls["enc"] += 1
        packed = np.frombuffer(zlib.compress((src ^ meta).tobytes()), np.uint8)
        if packed.size >= dst.size:
            return 0
        dst[: packed.size] = packed
        return packed.size

    def dec(src, dst, meta, schunk):
        calls["dec"] += 1
        raw = np.frombuffer(zlib.decompress(src.tobytes()), np.uint8) ^ meta
        dst[: raw.size] = raw
        return raw.size

    ndpack.register_codec("xor", 180, enc, dec)
    assert 180 in ndpack.compressor_list()
    x = np.arange(50_000, dtype=np.int64)
    c = ndpack.compress2(x, codec=180, codec_meta=0x5A, typesize=8)
    assert ndpack.chunk_info(c)["compcode"] == 180
    assert ndpack.decompress2(c) == x.tobytes()
    assert calls["enc"] > 0 and calls["dec"] > 0

    def bad(src, dst, meta, schunk):
        raise RuntimeError("boom")

    ndpack.register_codec("bad", 181, bad, bad)
    with pytest.raises(ndpack.CallbackError, match="boom") as info:
        ndpack.compress2(x, codec=181)
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(ValueError, match="160..255"):
        ndpack.register_codec("low", 100, enc, dec)


def test_user_filter_roundtrip():
    def fwd(src, dst, meta, schunk):
        dst[:] = src[::-1]

    def bwd(src, dst, meta, schunk):
        dst[:] = src[::-1]

    ndpack.register_filter(190, fwd, bwd, name="reverse")
    x = np.arange(30_000, dtype=np.int32)
    for nthreads in (1, 2):
        c = ndpack.compress2(x, filters=[190, ndpack.Filter.SHUFFLE], typesize=4, nthreads=nthreads)
        assert ndpack.chunk_info(c)["filters"][:2] == [190, 1]
        assert ndpack.decompress2(c, nthreads=nthreads) == x.tobytes()
