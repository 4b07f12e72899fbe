"""Chunk checksums: the integrity record of frames (see docs/storage.md, "Chunk
checksums").  The crc32c kernel itself is tested in tests/core/test_crc32c.py."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import ndpack
from ndpack.errors import FormatError
from ndpack.storage import checksums
from ndpack.storage import framefile as ff

from tests.helpers import file_with_a_bad_block_start

blosc2 = pytest.importorskip("blosc2") if os.environ.get("NDPACK_NO_BLOSC2") is None else None


@pytest.fixture(autouse=True)
def _checksums_on(monkeypatch):
    """Every test here writes frames with checksums, whatever the default."""
    monkeypatch.setenv("NDPACK_CHECKSUMS", "1")


def _data(n=60_000, seed=0):
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.integers(-3, 4, n)).astype(np.int64)


def _write(path, x, **kw):
    kw.setdefault("chunks", (6_000,))
    kw.setdefault("blocks", (1_000,))
    kw.setdefault("cparams", {"codec": ndpack.Codec.LZ4, "clevel": 5})
    return ndpack.asarray(x, urlpath=str(path), mode="w", **kw)


def _stored_crcs(frame) -> list:
    """The checksums recomputed from the chunks as the frame returns them."""
    frame.verify = False
    try:
        return [checksums.chunk_crc(frame.get(i)) for i in range(frame.nchunks)]
    finally:
        frame.verify = True


def _chunk_spans(path) -> list:
    """(start, end) file positions of every stored chunk of a contiguous frame."""
    a = ndpack.open(str(path), mode="r", dparams={"verify": False})
    a = getattr(a, "schunk", a)                # an NDArray's, or a bare super-chunk
    fr = a._frame
    spans = []
    for i, v in enumerate(fr.offsets):
        if v >= 0:
            start = fr.header_len + int(v)
            spans.append((i, start, start + len(fr.get(i))))
    a.close()
    return spans


def test_record_written_and_python_blosc2_reads_the_file(tmp_path):
    x = _data()
    p = tmp_path / "a.b2nd"
    a = _write(p, x)
    assert len(a.schunk._frame.crcs) == a.schunk.nchunks == 10
    assert checksums.RECORD not in a.schunk.vlmeta          # hidden from our vlmeta
    b = ndpack.open(str(p))
    assert list(b.schunk._frame.crcs) == _stored_crcs(b.schunk._frame)
    np.testing.assert_array_equal(b[:], x)
    if blosc2 is not None:
        c = blosc2.open(str(p))
        np.testing.assert_array_equal(c[:], x)
        assert checksums.RECORD in c.vlmeta                  # one more vlmeta entry
        value = c.vlmeta[checksums.RECORD]
        assert value["alg"] == "crc32c" and len(value["crcs"]) == 4 * 10


def test_python_blosc2_reads_schunk_sparse_and_cframe(tmp_path):
    if blosc2 is None:
        pytest.skip("python-blosc2 missing")
    x = _data(20_000)
    p = tmp_path / "s.b2frame"
    s = ndpack.SChunk(chunksize=16_000, data=x, urlpath=str(p), cparams={"typesize": 8})
    s.vlmeta["user"] = {"k": 1}
    s.close()
    t = blosc2.open(str(p))
    assert bytes(t[:]) == x.tobytes() and t.vlmeta["user"] == {"k": 1}
    d = tmp_path / "d.b2nd"
    _write(d, x, contiguous=False)
    assert os.path.isdir(d)
    np.testing.assert_array_equal(blosc2.open(str(d))[:], x)
    frame = ndpack.asarray(x, chunks=(3_000,)).to_cframe()
    np.testing.assert_array_equal(blosc2.ndarray_from_cframe(frame)[:], x)
    np.testing.assert_array_equal(ndpack.ndarray_from_cframe(frame)[:], x)


@pytest.mark.parametrize("codec", [ndpack.Codec.LZ4, ndpack.Codec.ZSTD])
def test_random_single_byte_mutations_are_caught(tmp_path, codec):
    """A byte changed anywhere in a stored chunk: reading it raises FormatError naming
    that chunk (many random positions and values)."""
    x = _data()
    p = tmp_path / "a.b2nd"
    _write(p, x, cparams={"codec": codec, "clevel": 5})
    spans = _chunk_spans(p)
    orig = p.read_bytes()
    rng = np.random.default_rng(7)
    silent = 0
    for trial in range(250):
        i, start, end = spans[int(rng.integers(len(spans)))]
        pos = int(rng.integers(start, end))
        buf = bytearray(orig)
        buf[pos] ^= int(rng.integers(1, 256))
        p.write_bytes(bytes(buf))
        a = ndpack.open(str(p))
        with pytest.raises(FormatError, match=rf"chunk {i}\b"):
            a[:]
        a.schunk.close()
        # without verification the same read may succeed with other data
        b = ndpack.open(str(p), dparams={"verify": False})
        try:
            silent += not np.array_equal(b[:], x)
        except (FormatError, ValueError):
            pass
        b.schunk.close()
    # the same mutations read without checksums: some decode to other data silently
    assert silent > 0, "no mutation went unnoticed without checksums: test data too easy"


def test_memcpyed_chunk_corruption_only_the_checksum_sees(tmp_path):
    x = _data(12_000)
    p = tmp_path / "raw.b2nd"
    _write(p, x, cparams={"clevel": 0})
    i, start, end = _chunk_spans(p)[1]
    buf = bytearray(p.read_bytes())
    buf[end - 5] ^= 0x40                        # a data byte of a stored-raw chunk
    p.write_bytes(bytes(buf))
    b = ndpack.open(str(p), dparams={"verify": False})
    assert not np.array_equal(b[:], x)          # silently different without checksums
    a = ndpack.open(str(p))
    with pytest.raises(FormatError, match=r"chunk 1: checksum mismatch"):
        a[:]
    with pytest.raises(FormatError, match=r"chunk 1\b"):
        a.schunk.decompress_chunk(1)
    np.testing.assert_array_equal(a[:6_000], x[:6_000])     # chunk 0 is intact


def test_partial_reads_and_verify_full(tmp_path):
    """Reading a few blocks of a file chunk reads only their bytes: not checked unless
    verify="full", which reads (and checks) whole chunks."""
    x = np.random.default_rng(3).integers(0, 2**40, 300_000)      # chunks > 128 KiB
    p = tmp_path / "a.b2nd"
    _write(p, x, chunks=(100_000,), blocks=(10_000,))
    i, start, end = _chunk_spans(p)[2]
    assert end - start > 2**17
    buf = bytearray(p.read_bytes())
    buf[end - 3] ^= 0x01                        # inside the last block of chunk 2
    p.write_bytes(bytes(buf))
    a = ndpack.open(str(p))
    assert a[200_000] == x[200_000]             # block 0 of chunk 2, read alone
    np.testing.assert_array_equal(a[200_000:200_010], x[200_000:200_010])
    f = ndpack.open(str(p), dparams={"verify": "full"})
    with pytest.raises(FormatError, match=r"chunk 2\b"):
        f[200_000]
    with pytest.raises(FormatError, match=r"chunk 2\b"):
        f[200_000:200_010]
    with pytest.raises(ndpack.ParameterError):
        ndpack.open(str(p), dparams={"verify": "sometimes"})
    # memory-mapped: a partial read decodes part of a mapped chunk, checked only with
    # "full"; reading chunk 2 whole is checked either way
    m = ndpack.open(str(p), mmap_mode="r")
    np.testing.assert_array_equal(m[200_000:200_010], x[200_000:200_010])
    with pytest.raises(FormatError, match=r"chunk 2\b"):
        m[200_000:300_000]
    mf = ndpack.open(str(p), mmap_mode="r", dparams={"verify": "full"})
    with pytest.raises(FormatError, match=r"chunk 2\b"):
        mf[200_000:200_010]
    with pytest.raises(FormatError, match=r"chunk 2\b"):
        mf[[200_001, 200_005]]
    np.testing.assert_array_equal(mf[[0, 5]], x[[0, 5]])


def test_writes_keep_the_record(tmp_path):
    """Appends, slice writes, update/insert/delete of chunks, resizes and vlmeta writes
    leave one checksum per chunk, equal to the stored chunks' (file and sparse)."""
    for contiguous in (True, False):
        x = _data(30_000)
        p = tmp_path / f"w{contiguous}.b2nd"
        a = _write(p, x, contiguous=contiguous)
        a[100:2_500] = -1
        x[100:2_500] = -1
        a[20_000:26_000] = 0                     # a whole chunk of zeros: special
        x[20_000:26_000] = 0
        a.resize((40_000,))
        x = np.concatenate([x, np.zeros(10_000, x.dtype)])
        a[35_000:40_000] = 7
        x[35_000:40_000] = 7
        a.vlmeta["note"] = "edited"
        fr = a.schunk._frame
        assert list(fr.crcs) == _stored_crcs(fr)
        b = ndpack.open(str(p), dparams={"verify": "full"})
        np.testing.assert_array_equal(b[:], x)
        assert list(b.schunk._frame.crcs) == _stored_crcs(b.schunk._frame)

    p = tmp_path / "s.b2frame"
    s = ndpack.SChunk(chunksize=8_000, urlpath=str(p), cparams={"typesize": 8})
    parts = [np.arange(1_000, dtype=np.int64) * k for k in range(1, 6)]
    for part in parts:
        s.append_data(part)
    s.insert_data(1, np.full(1_000, 9, np.int64))
    s.update_data(0, np.zeros(1_000, np.int64))
    s.delete_chunk(3)
    s.update_chunk(2, ndpack.compress2(np.arange(500, dtype=np.int64), typesize=8))
    s.append_chunk(ndpack.compress2(np.ones(1_000, np.int64), typesize=8, clevel=0))
    s[10:20] = np.arange(10, dtype=np.int64).tobytes()
    want = [bytes(s.decompress_chunk(i)) for i in range(s.nchunks)]
    assert list(s._frame.crcs) == _stored_crcs(s._frame)
    s.close()
    t = ndpack.open(str(p), dparams={"verify": "full"})
    assert [bytes(t.decompress_chunk(i)) for i in range(t.nchunks)] == want
    if blosc2 is not None:
        u = blosc2.open(str(p))
        assert [bytes(u.decompress_chunk(i)) for i in range(u.nchunks)] == want


def test_special_chunks_in_the_index(tmp_path):
    """zeros/NaN chunks that live only in the offsets index are checked by meaning;
    turning a stored chunk's index entry into a special one is caught."""
    p = tmp_path / "z.b2nd"
    ndpack.zeros((50_000,), dtype="f8", chunks=(10_000,), blocks=(2_000,), urlpath=str(p),
                 mode="w")
    n = ndpack.nans((50_000,), dtype="f4", chunks=(10_000,), blocks=(2_000,),
                    urlpath=str(tmp_path / "n.b2nd"), mode="w")
    assert np.isnan(ndpack.open(str(tmp_path / "n.b2nd"))[:]).all()
    a = ndpack.open(str(p), mode="a")
    assert (a[:] == 0).all() and len(a.schunk._frame.crcs) == 5
    a[:10_000] = 1.0
    assert list(a.schunk._frame.crcs) == _stored_crcs(a.schunk._frame)
    # point index entry 0 (a stored chunk) at the zeros special: values would be zeros
    fr = a.schunk._frame
    fr.offsets[0] = ff.special_offset(1)
    fr._flush()
    a.schunk.close()
    b = ndpack.open(str(p))
    with pytest.raises(FormatError, match=r"chunk 0\b"):
        b[:]
    assert n.schunk.nchunks == 5


def test_cframe_buffers_are_checked():
    x = _data(24_000)
    frame = bytearray(ndpack.asarray(x, chunks=(6_000,), blocks=(1_000,),
                                     cparams={"clevel": 0}).to_cframe())
    st = ff._parse_frame(ff._Reader(buf=bytes(frame)), 0, None)
    pos = st["fields"]["header_len"] + int(st["offsets"][3]) + 100
    frame[pos] ^= 0xFF
    a = ndpack.ndarray_from_cframe(bytes(frame))
    with pytest.raises(FormatError, match=r"chunk 3\b"):
        a[:]
    s = ndpack.schunk_from_cframe(bytes(frame))
    with pytest.raises(FormatError, match=r"chunk 3\b"):
        s.decompress_chunk(3)
    s.dparams = {"verify": False}
    s.decompress_chunk(3)


def test_stale_record_after_python_blosc2_appends(tmp_path):
    if blosc2 is None:
        pytest.skip("python-blosc2 missing")
    p = tmp_path / "s.b2frame"
    ndpack.SChunk(chunksize=8_000, data=np.arange(3_000, dtype=np.int64), urlpath=str(p),
                  cparams={"typesize": 8}).close()
    t = blosc2.open(str(p), mode="a")
    t.append_data(np.arange(1_000, dtype=np.int64))
    del t
    s = ndpack.open(str(p))
    assert s._frame.crcs is None and s._frame.crc_stale and s.nchunks == 4
    assert bytes(s[3_000:4_000]) == np.arange(1_000, dtype=np.int64).tobytes()


@pytest.mark.parametrize("edit", ["slice", "update", "vlmeta"])
def test_stale_record_from_another_writer(tmp_path, edit):
    """python-blosc2 changes chunks without keeping the record (even in place, with
    the same sizes): the record is stale, dropped at open, the data reads unchecked,
    and our next write removes it from the file."""
    if blosc2 is None:
        pytest.skip("python-blosc2 missing")
    p = tmp_path / "a.b2nd"
    x = np.arange(10, dtype="i1")
    ndpack.asarray(x, chunks=(4,), blocks=(2,), urlpath=str(p), mode="w")  # 36-byte chunks
    b = blosc2.open(str(p), mode="a")
    if edit == "slice":
        b[1:3] = np.array([5, 6], "i1")
        x[1:3] = [5, 6]
    elif edit == "update":
        b.schunk.update_chunk(0, b.schunk.get_chunk(1))
        x[:4] = x[4:8]
    else:
        b.vlmeta["z"] = 1
    del b
    a = ndpack.open(str(p), mode="a")
    fr = a.schunk._frame
    assert fr.crcs is None and fr.crc_stale
    np.testing.assert_array_equal(a[:10], x)
    a.vlmeta["w"] = 2
    a.schunk.close()
    assert checksums.RECORD not in blosc2.open(str(p)).vlmeta


def test_changed_index_is_caught_by_the_chunks(tmp_path):
    """Our own frame whose offsets index changed afterwards (two entries swapped, sizes
    unchanged): each chunk read through a wrong entry fails its checksum; a record that
    does not hold one checksum per chunk is reported at open."""
    p = tmp_path / "s.b2frame"
    s = ndpack.SChunk(chunksize=8_000, data=np.arange(3_000, dtype=np.int64), urlpath=str(p),
                      cparams={"typesize": 8})
    fr = s._frame
    fr.offsets[0], fr.offsets[1] = fr.offsets[1], fr.offsets[0]
    index = ff.encode_index(fr.offsets)
    pos = fr.header_len + fr._cbytes
    s.close()
    with open(p, "r+b") as fh:                  # the new index only: record unchanged
        fh.seek(pos)
        assert len(index) == len(ff.encode_index([0, 0, 0]))
        fh.write(index)
    t = ndpack.open(str(p))
    assert t._frame.crcs is not None
    for i in (0, 1):
        with pytest.raises(FormatError, match=rf"chunk {i}: checksum mismatch"):
            t.decompress_chunk(i)
    assert bytes(t.decompress_chunk(2)) == np.arange(2_000, 3_000, dtype=np.int64).tobytes()
    u = ndpack.SChunk(chunksize=8_000, data=np.arange(3_000, dtype=np.int64),
                      urlpath=str(p), mode="w", cparams={"typesize": 8})
    u._frame.crcs.put(len(u._frame.crcs), (7, None), insert=True)   # one checksum too many
    u._frame._flush()
    u.close()
    with pytest.raises(FormatError, match="4 checksums for 3 chunks"):
        ndpack.open(str(p))
    assert ndpack.open(str(p), dparams={"verify": False})._frame.crcs is None


def test_corrupt_block_start_is_a_checksum_error(tmp_path):
    x, path = file_with_a_bad_block_start(tmp_path)
    b = ndpack.open(path, dparams={"verify": "full"})
    np.testing.assert_array_equal(b[:4, 3], x[:4, 3])
    with pytest.raises(FormatError, match=r"chunk 1: checksum mismatch"):
        b[4:, 3]


def test_default_off_writes_no_record(tmp_path, monkeypatch):
    monkeypatch.setenv("NDPACK_CHECKSUMS", "0")
    p = tmp_path / "a.b2nd"
    _write(p, _data(12_000))
    a = ndpack.open(str(p))
    assert a.schunk._frame.crcs is None
    assert checksums.RECORD.encode() not in p.read_bytes()


# --- ndpack verify -----------------------------------------------------------------------

def test_cli_verify_file_store_and_corruption(tmp_path, capsys, monkeypatch):
    from ndpack.cli import main

    x = _data()
    p = tmp_path / "a.b2nd"
    _write(p, x)
    t = tmp_path / "t.b2z"
    with ndpack.TreeStore(str(t), mode="w") as ts:
        ts["/g/a"] = x
        ts["/b"] = np.arange(5)
    d = tmp_path / "sparse.b2nd"
    _write(d, x, contiguous=False)
    assert main(["verify", str(p), str(t), str(d)]) == 0
    out = capsys.readouterr().out
    assert f"{p}: ok (10 chunks, crc32c verified; reads checked per block)" in out
    assert f"{t}:/g/a: ok" in out
    assert f"{d}: ok (10 chunks, crc32c verified; reads checked per block)" in out
    assert main(["info", "--json", str(p)]) == 0
    assert '"checksums": "crc32c"' in capsys.readouterr().out

    i, start, end = _chunk_spans(p)[7]
    buf = bytearray(p.read_bytes())
    buf[(start + end) // 2] ^= 0x10
    p.write_bytes(bytes(buf))
    chunk_file = d / "00000003.chunk"
    raw = bytearray(chunk_file.read_bytes())
    raw[-1] ^= 0x01
    chunk_file.write_bytes(bytes(raw))
    assert main(["verify", "-q", str(p), str(t), str(d)]) == 1
    out = capsys.readouterr().out
    assert "chunk 7: checksum mismatch" in out and "chunk 3: checksum mismatch" in out
    assert f"{t}:" not in out                       # -q: only problems

    monkeypatch.setenv("NDPACK_CHECKSUMS", "0")
    q = tmp_path / "plain.b2nd"
    _write(q, x)
    assert main(["verify", str(q)]) == 0
    assert "no checksums; decoded" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "missing.b2nd")]) == 1
    capsys.readouterr()
    assert main(["info", "--json", str(q)]) == 0
    assert '"checksums": "none"' in capsys.readouterr().out


def test_readers_during_updates_see_no_false_mismatch(tmp_path):
    """Chunks read while another thread replaces them are checked against the value
    recorded with the bytes that were read (no spurious FormatError)."""
    import threading

    p = tmp_path / "s.b2frame"
    s = ndpack.SChunk(chunksize=8_000, urlpath=str(p), cparams={"typesize": 8, "nthreads": 1},
                      dparams={"nthreads": 1})
    versions = [np.arange(1_000, dtype=np.int64) * k for k in range(1, 4)]
    for v in versions:
        s.append_data(v)
    stop, errors = threading.Event(), []

    def read():
        while not stop.is_set():
            try:
                got = np.frombuffer(s.decompress_chunk(1), np.int64)
                assert any(np.array_equal(got, v) for v in versions)
            except Exception as exc:          # noqa: BLE001 -- collected for the assert
                errors.append(exc)
                return

    threads = [threading.Thread(target=read) for _ in range(3)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)                  # interleave the threads densely
    try:
        for t in threads:
            t.start()
        for k in range(4_000):
            s.update_data(1, versions[k % 3])
    finally:
        stop.set()
        for t in threads:
            t.join()
        sys.setswitchinterval(old)
    assert not errors, errors[:3]
    assert list(s._frame.crcs) == _stored_crcs(s._frame)


def test_flipped_bit_in_the_record_is_reported(tmp_path):
    """A corrupted record is not mistaken for a stale one: the chunk whose checksum
    changed fails, the others read."""
    x = _data()
    p = tmp_path / "a.b2nd"
    a = _write(p, x)
    raw = a.schunk._frame.crcs.crcs.tobytes()
    a.schunk.close()
    buf = bytearray(p.read_bytes())
    pos = bytes(buf).rindex(raw)                 # the crcs inside the trailer's record
    buf[pos + 4 * 6 + 2] ^= 0x08                  # checksum of chunk 6
    p.write_bytes(bytes(buf))
    b = ndpack.open(str(p))
    assert b.schunk._frame.crcs is not None and not b.schunk._frame.crc_stale
    np.testing.assert_array_equal(b[:36_000], x[:36_000])
    with pytest.raises(FormatError, match=r"chunk 6: checksum mismatch"):
        b[36_000:42_000]


@pytest.mark.parametrize("read", ["getitem", "load_array"])
def test_whole_chunks_are_checked_while_decoding(tmp_path, monkeypatch, read):
    """Whole-chunk reads hash each block as it is decoded (one pass over the chunk)
    and still name the chunk whose data bytes changed; the separate check is not
    used for them."""
    x = _data()
    p = tmp_path / "a.b2nd"
    if read == "load_array":
        ndpack.save_array(x, str(p), chunksize=6_000 * 8)
    else:
        _write(p, x)
    fused, separate = [], []
    real_fused, real_checked = checksums.decompress_crc, checksums.checked
    monkeypatch.setattr(checksums, "decompress_crc",
                        lambda *a: fused.append(1) or real_fused(*a))
    monkeypatch.setattr(checksums, "checked",
                        lambda fr, i, data, want=-1: separate.append(i) or
                        real_checked(fr, i, data, want))

    def load(path):
        if read == "load_array":
            return ndpack.load_array(str(path))
        return ndpack.open(str(path))[:]

    np.testing.assert_array_equal(load(p), x)
    assert len(fused) == 10 and not separate
    # a byte in the middle of chunk 3's data (not its header)
    i, start, end = [s for s in _chunk_spans(p) if s[0] == 3][0]
    buf = bytearray(p.read_bytes())
    buf[(start + end) // 2] ^= 0x5A
    p.write_bytes(bytes(buf))
    with pytest.raises(FormatError, match=r"chunk 3: checksum mismatch"):
        load(p)
