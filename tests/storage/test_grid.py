"""Chunk/block arithmetic against python-blosc2 (the oracle) and FORMAT.md §5."""

import random

import blosc2
import numpy as np
import pytest

from ndpack.errors import FormatError, ParameterError
from ndpack.storage import asarray, compute_chunks_blocks, grid
from ndpack.storage.grid import (
    compact_index,
    decode_b2nd,
    dim_parts,
    dtype_from_str,
    dtype_to_str,
    encode_b2nd,
    ext_shape,
    normalize_key,
)

SIZES = [1, 2, 3, 7, 10, 50, 99, 100, 128, 1000, 1023, 4096, 10**5, 10**6]
DTYPES = ["u1", "i2", "f4", "f8", "c16", "U10", "S3", "M8[ns]"]


def _random_case(rng):
    nd = rng.randint(1, 4)
    while True:
        shape = tuple(rng.choice(SIZES) for _ in range(nd))
        if np.prod(shape, dtype=float) <= 2e9:
            break
    kw = {}
    r = rng.random()
    if r < 0.2:
        kw["chunks"] = tuple(max(1, s // rng.choice([1, 2, 3])) for s in shape)
    elif r < 0.3:
        kw["blocks"] = tuple(max(1, s // rng.choice([2, 3, 10])) for s in shape)
    return shape, rng.choice(DTYPES), kw


def _pin_blosc2_caches(monkeypatch):
    """Both libraries size chunks from the caches; give ours python-blosc2's figures."""
    info = blosc2.cpu_info
    sizes = [info.get(k) for k in ("l1_data_cache_size", "l2_cache_size", "l3_cache_size")]
    if all(isinstance(v, int) and v > 0 for v in sizes):
        monkeypatch.setenv("NDPACK_CACHE_SIZES", ",".join(map(str, sizes)))


def test_compute_chunks_blocks_matches_python_blosc2(monkeypatch):
    _pin_blosc2_caches(monkeypatch)
    rng = random.Random(1234)
    checked = 0
    for _ in range(400):
        shape, dt, kw = _random_case(rng)
        try:
            expected = blosc2.compute_chunks_blocks(shape, dtype=np.dtype(dt), **kw)
        except (ValueError, RuntimeError):  # python-blosc2 refuses blocks > 512 MB
            continue
        got = compute_chunks_blocks(shape, dtype=dt, policy="blosc2", **kw)
        assert got == tuple(map(tuple, expected)), (shape, dt, kw)
        checked += 1
    assert checked > 350


@pytest.mark.parametrize("shape", [(0,), (0, 5), (3, 0, 2), ()])
def test_compute_chunks_blocks_edge_shapes(shape):
    expected = blosc2.compute_chunks_blocks(shape, dtype=np.dtype("f8"))
    assert compute_chunks_blocks(shape) == tuple(map(tuple, expected))
    assert compute_chunks_blocks(shape, policy="blosc2") == tuple(map(tuple, expected))


def test_ndpack_policy_caps_chunk_bytes():
    rng = random.Random(99)
    cap = grid.chunk_cap()
    for _ in range(300):
        shape, dt, kw = _random_case(rng)
        if "chunks" in kw:
            continue
        chunks, blocks = compute_chunks_blocks(shape, dtype=dt, **kw)
        ref_chunks, ref_blocks = compute_chunks_blocks(shape, dtype=dt, policy="blosc2", **kw)
        assert blocks == ref_blocks                      # blocks are python-blosc2's
        nbytes = np.prod(chunks, dtype=np.int64) * np.dtype(dt).itemsize
        bbytes = np.prod(blocks, dtype=np.int64) * np.dtype(dt).itemsize
        # capped (a chunk is never smaller than one block), never above python-blosc2's
        assert nbytes <= max(cap, bbytes) or chunks == ref_chunks, (shape, dt, chunks)
        assert all(c <= r for c, r in zip(chunks, ref_chunks)), (shape, chunks, ref_chunks)
        assert all(c % b == 0 or c == s for c, b, s in zip(chunks, blocks, shape))


def test_chunk_cap_from_environment(monkeypatch):
    # chunks follow the caches: pin a machine whose L3 would give chunks above every cap
    monkeypatch.setenv("NDPACK_CACHE_SIZES", "32K,1M,480M")
    monkeypatch.setenv("NDPACK_CHUNK_BYTES", "4M")
    assert grid.chunk_cap() == 4 * 2**20
    chunks, _ = compute_chunks_blocks((4000, 4000), dtype="f8")
    assert 2**20 <= np.prod(chunks) * 8 <= 4 * 2**20
    monkeypatch.setenv("NDPACK_CHUNK_BYTES", "64m")
    assert compute_chunks_blocks((4000, 4000), dtype="f8")[0] == (2000, 4000)
    for bad in ("lots", "1K", "9G"):
        monkeypatch.setenv("NDPACK_CHUNK_BYTES", bad)
        with pytest.raises(ParameterError, match="NDPACK_CHUNK_BYTES"):
            grid.chunk_cap()
    monkeypatch.setenv("NDPACK_CHUNK_BYTES", "16MB")
    assert grid.chunk_cap() == 16 * 2**20
    monkeypatch.delenv("NDPACK_CHUNK_BYTES")
    with pytest.raises(ParameterError, match="policy"):
        compute_chunks_blocks((10,), policy="zarr")


def test_cache_sizes_override(monkeypatch):
    monkeypatch.setenv("NDPACK_CACHE_SIZES", "48K, 2M, 32M")
    assert grid.cache_sizes() == (48 * 2**10, 2 * 2**20, 32 * 2**20)
    small = compute_chunks_blocks((4000, 4000), dtype="f8", policy="blosc2")
    monkeypatch.setenv("NDPACK_CACHE_SIZES", "48K,2M,256M")
    big = compute_chunks_blocks((4000, 4000), dtype="f8", policy="blosc2")
    assert np.prod(big[0]) > np.prod(small[0])           # chunks follow the L3 given
    for bad in ("32K,1M", "a,b,c", "0,1M,2M"):
        monkeypatch.setenv("NDPACK_CACHE_SIZES", bad)
        with pytest.raises(ParameterError, match="NDPACK_CACHE_SIZES"):
            grid.cache_sizes()
    monkeypatch.delenv("NDPACK_CACHE_SIZES")
    assert all(v > 0 for v in grid.cache_sizes())


def test_compute_chunks_blocks_bad_input():
    with pytest.raises(ValueError, match=r"blocks \(5,\) are larger than chunks \(4,\)"):
        compute_chunks_blocks((10,), chunks=(4,), blocks=(5,))
    with pytest.raises(ValueError, match="negative"):
        compute_chunks_blocks((10, -1))
    with pytest.raises(ParameterError, match="dimensions"):
        compute_chunks_blocks((10, 10), chunks=(5,))


@pytest.mark.parametrize("dtype", ["i4", ">f8", "?", "u1", "c8", "U5", "S300", "M8[ns]",
                                   "m8[s]", [("a", "<i4"), ("b", "<f8")],
                                   [("x", "S3"), ("y", "<u2", (2,))]])
@pytest.mark.parametrize("shape,chunks,blocks", [((10, 7, 9), (4, 5, 6), (3, 2, 4)),
                                                 ((5,), (5,), (5,)), ((), (), ()),
                                                 ((0, 3), (0, 3), (0, 3))])
def test_metalayer_bytes_match_python_blosc2(tmp_path, dtype, shape, chunks, blocks):
    dt = np.dtype(dtype)
    raw = encode_b2nd(shape, chunks, blocks, dt)
    assert decode_b2nd(raw) == (shape, chunks, blocks, dt)
    b = blosc2.zeros(shape, dtype=dt, chunks=chunks, blocks=blocks,
                     urlpath=str(tmp_path / "b.b2nd"), mode="w")
    assert raw in b.schunk.to_cframe()             # byte-identical metalayer
    ours = asarray(np.zeros(shape, dt), chunks=chunks, blocks=blocks)
    assert ours.schunk.meta.get_raw("b2nd") == raw


def test_metalayer_example_bytes():
    raw = encode_b2nd((10, 7, 9), (4, 5, 6), (3, 2, 4), "int32")
    expected = ("97 00 03 93 d3" + " 00" * 7 + " 0a d3" + " 00" * 7 + " 07 d3" + " 00" * 7 +
                " 09 93 d2 00 00 00 04 d2 00 00 00 05 d2 00 00 00 06 93 d2 00 00 00 03 d2 "
                "00 00 00 02 d2 00 00 00 04 00 db 00 00 00 03 3c 69 34")
    assert raw.hex(" ") == expected


def test_dtype_strings():
    assert dtype_to_str("f8") == "<f8"
    assert dtype_to_str([("a", "<i4"), ("b", "<f8")]) == "[('a', '<i4'), ('b', '<f8')]"
    assert dtype_from_str("[('a', '<i4'), ('b', '<f8')]") == np.dtype([("a", "<i4"),
                                                                        ("b", "<f8")])
    with pytest.raises(FormatError, match="not-a-dtype"):
        dtype_from_str("not-a-dtype")
    with pytest.raises(TypeError, match="object"):
        dtype_to_str("O")


def test_decode_b2nd_rejects_bad_content():
    raw = bytearray(encode_b2nd((4,), (2,), (1,), "i4"))
    raw[1] = 1
    with pytest.raises(FormatError, match="version 1"):
        decode_b2nd(bytes(raw))
    with pytest.raises(FormatError, match="larger than chunks"):
        decode_b2nd(encode_b2nd((4,), (2,), (3,), "i4"))
    with pytest.raises(FormatError):
        decode_b2nd(b"\x01\x02")


def test_ext_shape_and_dim_parts():
    assert ext_shape((10, 7, 9), (4, 5, 6)) == (12, 10, 12)
    parts = list(dim_parts(range(1, 20, 3), 5))
    assert [p[0] for p in parts] == [0, 1, 2, 3]
    covered = [x for p in parts for x in range(p[3].start + 5 * p[0], p[3].stop + 5 * p[0],
                                                  p[3].step)]
    assert covered == list(range(1, 20, 3))
    assert compact_index(range(1, 4, 1), 2, [0, 1]) == slice(1, 4, 1)

    assert isinstance(compact_index(range(0, 9, 4), 2, [0, 2, 4]), slice)


def test_normalize_key_errors():
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0"):
        normalize_key(5, (5,))
    with pytest.raises(IndexError, match="too many indices"):
        normalize_key((1, 2), (5,))
    with pytest.raises(IndexError, match="single ellipsis"):
        normalize_key((Ellipsis, Ellipsis), (5,))
    with pytest.raises(TypeError, match="1.5"):
        normalize_key(1.5, (5,))
    with pytest.raises(ValueError):
        normalize_key(slice(None, None, 0), (5,))


@pytest.mark.parametrize("nd", [15, 16])
def test_metalayer_max_dims_match_python_blosc2(nd):
    b = blosc2.zeros((2,) * nd, dtype="i1")
    raw = encode_b2nd(b.shape, b.chunks, b.blocks, b.dtype)
    assert raw in b.schunk.to_cframe()            # 16 dims: python-blosc2 writes 0xA0
    assert decode_b2nd(raw) == (b.shape, b.chunks, b.blocks, np.dtype("i1"))
    from ndpack.storage import ndarray_from_cframe
    a = ndarray_from_cframe(b.schunk.to_cframe())
    assert a.shape == (2,) * nd and a[(1,) * nd] == 0
