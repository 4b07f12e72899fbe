"""Corrupt, truncated and hostile frames raise FormatError; misuse raises clear errors."""

import os
import struct

import numpy as np
import pytest

import ndpack
from ndpack.errors import FormatError, NdpackError, ParameterError
from ndpack.storage import frame as fr, framefile as ff
from ndpack.storage import meta as mt


def small_frame(nchunks=3, vl=True):
    s = ndpack.SChunk(chunksize=400, cparams={"typesize": 4, "nthreads": 1}, meta={"m": 1})
    for i in range(nchunks):
        s.append_data(np.arange(100, dtype=np.int32) * (i + 1) if i != 1
                      else np.zeros(100, np.int32))
    if vl:
        s.vlmeta["note"] = "hello"
    return s.to_cframe()


def rebuild(buf, offsets=None, vlmeta=None, meta=None):
    """Re-assemble a frame with a replaced index, vlmeta chunks or raw metalayers."""
    fields, info, m = fr.parse_header(buf)
    hlen, cbytes = fields["header_len"], fields["cbytes"]
    st = ff._parse_frame(ff._Reader(buf=buf), 0, False)
    body = buf[hlen:hlen + cbytes]
    offs = list(st["offsets"]) if offsets is None else offsets
    index = fr.encode_index(offs) if offs else b""
    vl = st["vlmeta"] if vlmeta is None else vlmeta
    m = m if meta is None else meta
    trailer = fr.build_trailer(vl)
    hl = len(fr.build_header(info, m, 0, 0, 0, False))
    header = fr.build_header(info, m, fields["nbytes"], cbytes,
                             hl + cbytes + len(index) + len(trailer), bool(vl))
    return header + body + index + trailer


def test_wrong_magic():
    buf = bytearray(small_frame())
    buf[3] ^= 0xFF
    with pytest.raises(FormatError, match="byte 0.*magic"):
        ndpack.schunk_from_cframe(bytes(buf))
    with pytest.raises(FormatError):
        ndpack.schunk_from_cframe(b"")
    with pytest.raises(FormatError):
        ndpack.schunk_from_cframe(b"\x9e" + bytes(200))


def test_every_truncation_raises():
    buf = small_frame()
    for cut in range(len(buf)):
        with pytest.raises(FormatError, match="byte"):
            ndpack.schunk_from_cframe(buf[:cut])


def test_byte_flips_never_crash():
    buf = small_frame()
    ref = ndpack.schunk_from_cframe(buf)[:]
    for pos in range(len(buf)):
        for xor in (0x01, 0x80, 0xFF):
            bad = bytearray(buf)
            bad[pos] ^= xor
            try:
                s = ndpack.schunk_from_cframe(bytes(bad))
                s[:]
                s.vlmeta.getall()
                s.meta.getall()
            except (NdpackError, KeyError):
                pass
    assert ndpack.schunk_from_cframe(buf)[:] == ref


def test_index_offsets_out_of_range():
    buf = small_frame()
    bad = rebuild(buf, offsets=[0, 10**6, 5])
    with pytest.raises(FormatError, match=r"byte \d+: index entry 1 = 1000000 points outside"):
        ndpack.schunk_from_cframe(bad)
    with pytest.raises(FormatError, match=r"byte \d+: chunk 0 .*overlaps the next chunk"):
        ndpack.schunk_from_cframe(rebuild(buf, offsets=[0, 5, 200]))
    with pytest.raises(FormatError, match="special offset with unknown code"):
        ndpack.schunk_from_cframe(rebuild(buf, offsets=[0, fr.special_offset(3), 5]))
    with pytest.raises(FormatError, match="index holds"):
        ndpack.schunk_from_cframe(rebuild(buf, offsets=[0, 1]))


def test_msgpack_garbage():
    buf = small_frame()
    garbage = ndpack.compress2(b"\xc1\xc1", typesize=1)
    s = ndpack.schunk_from_cframe(rebuild(buf, vlmeta={"note": garbage}))
    with pytest.raises(FormatError, match="msgpack"):
        s.vlmeta["note"]
    s = ndpack.schunk_from_cframe(rebuild(buf, vlmeta={"note": b"not a chunk at all"}))
    with pytest.raises(FormatError, match="vlmeta 'note'"):
        s.vlmeta["note"]
    s = ndpack.schunk_from_cframe(rebuild(buf, meta={"m": b"\x92\x01"}))   # truncated array
    with pytest.raises(FormatError, match="msgpack"):
        s.meta["m"]
    with pytest.raises(FormatError, match="extension type 42"):
        mt.unpackb(b"\xd4\x2a\x00")


def test_trailer_and_header_fields():
    buf = bytearray(small_frame())
    bad = bytearray(buf)
    bad[-23] = 0x00                                  # trailer_len marker
    with pytest.raises(FormatError, match="0xCE"):
        ndpack.schunk_from_cframe(bytes(bad))
    bad = bytearray(buf)
    bad[25] = 0x14                                   # frame version 4
    with pytest.raises(FormatError, match="byte 25"):
        ndpack.schunk_from_cframe(bytes(bad))
    bad = bytearray(buf)
    struct.pack_into(">q", bad, 39, 10**9)           # cbytes past the trailer
    with pytest.raises(FormatError, match="byte 39"):
        ndpack.schunk_from_cframe(bytes(bad))
    bad = bytearray(buf)
    struct.pack_into(">i", bad, 11, 50)              # header_len too small
    with pytest.raises(FormatError, match="header_len"):
        ndpack.schunk_from_cframe(bytes(bad))


def test_paths_and_modes(tmp_path):
    with pytest.raises(FileNotFoundError):
        ndpack.open(tmp_path / "missing.b2frame", mode="a")
    d = tmp_path / "plain_dir"
    d.mkdir()
    with pytest.raises(FormatError, match="not a sparse frame"):
        ndpack.open(d, mode="a")
    junk = tmp_path / "junk.b2frame"
    junk.write_bytes(b"hello world" * 20)
    with pytest.raises(FormatError, match="magic"):
        ndpack.open(junk, mode="a")
    p = tmp_path / "ok.b2frame"
    ndpack.SChunk(chunksize=400, data=np.arange(200, dtype=np.int32), urlpath=p).close()
    with pytest.raises(FileExistsError):
        ndpack.SChunk(chunksize=400, urlpath=p, mode="a")
    r = ndpack.open(p, mode="r")
    for action in (lambda: r.append_data(np.arange(100, dtype=np.int32)),
                   lambda: r.update_data(0, np.arange(100, dtype=np.int32)),
                   lambda: r.delete_chunk(0),
                   lambda: r.vlmeta.__setitem__("x", 1),
                   lambda: r.__setitem__(slice(0, 1), np.int32(1).tobytes())):
        with pytest.raises(ParameterError, match="mode 'r'"):
            action()
    with pytest.raises(ParameterError):
        ndpack.open(p, mode="x")
    with pytest.raises(ParameterError):
        ndpack.open(p, mmap_mode="r+")


@pytest.mark.parametrize("contiguous", [True, False])
def test_crash_consistency_truncation(tmp_path, contiguous):
    p = tmp_path / "cc.b2frame"
    s = ndpack.SChunk(chunksize=400, cparams={"typesize": 4}, urlpath=p, contiguous=contiguous)
    for i in range(4):
        s.append_data(np.arange(100, dtype=np.int32) + i)
    s.close()
    target = p if contiguous else p / "chunks.b2frame"
    before = target.read_bytes()
    old = ndpack.open(p, mode="r")[:]
    s = ndpack.open(p, mode="a")
    s.append_data(np.arange(100, dtype=np.int32) - 1)
    s.close()
    after = target.read_bytes()
    assert len(after) > len(before)
    for cut in range(0, len(after), 3):
        target.write_bytes(after[:cut])
        try:
            r = ndpack.open(p, mode="r")
        except FormatError:
            continue
        assert r.nchunks >= 4 and r[:len(old) // 4] == old
    target.write_bytes(after)
    assert ndpack.open(p, mode="r").nchunks == 5


def test_embedded_frame_writes(tmp_path):
    p = tmp_path / "emb.bin"
    s = ndpack.SChunk(chunksize=400, cparams={"typesize": 4}, data=np.arange(300, dtype=np.int32))
    p.write_bytes(b"H" * 100 + s.to_cframe())
    e = ndpack.open(p, offset=100, mode="a")
    e.append_data(np.arange(100, dtype=np.int32))
    e.vlmeta["a"] = 1
    e.close()
    e = ndpack.open(p, offset=100, mode="r")
    assert len(e) == 400 and e.vlmeta["a"] == 1 and p.read_bytes()[:100] == b"H" * 100
    e.close()
    with p.open("ab") as fh:
        fh.write(b"tail")
    e = ndpack.open(p, offset=100, mode="a")
    with pytest.raises(ParameterError, match="embedded"):
        e.append_data(np.arange(100, dtype=np.int32))


def test_sparse_missing_chunk_file(tmp_path):
    p = tmp_path / "sp.b2frame"
    ndpack.SChunk(chunksize=400, cparams={"typesize": 4}, data=np.arange(300, dtype=np.int32),
                  urlpath=p, contiguous=False).close()
    os.remove(p / "00000001.chunk")
    s = ndpack.open(p, mode="r")
    assert s.decompress_chunk(0) == np.arange(100, dtype=np.int32).tobytes()
    with pytest.raises(FormatError, match="00000001.chunk"):
        s.decompress_chunk(1)


class _Crash(Exception):
    pass


@pytest.mark.parametrize("torn", [False, True], ids=["lost-write", "torn-write"])
def test_crash_during_append(tmp_path, monkeypatch, torn):
    """Stop an append after each of its writes (or halfway through one): the file then
    opens with the chunks complete before the append, or raises FormatError."""
    p = tmp_path / "crash.b2frame"
    s = ndpack.SChunk(chunksize=400, cparams={"typesize": 4}, urlpath=p)
    for i in range(4):
        s.append_data(np.arange(100, dtype=np.int32) * (i + 1))
    s.vlmeta["v"] = "x"
    s.close()
    pristine = p.read_bytes()
    old = ndpack.open(p, mode="r")[:]
    real_pwrite, real_truncate = os.pwrite, os.ftruncate
    for k in range(5):                       # chunk, index, header, trailer, truncate
        p.write_bytes(pristine)
        s = ndpack.open(p, mode="a")
        calls = {"n": 0}

        def pwrite(fd, data, pos, calls=calls, k=k):
            if calls["n"] == k:
                if torn:
                    real_pwrite(fd, bytes(data)[: len(data) // 2], pos)
                raise _Crash
            calls["n"] += 1
            return real_pwrite(fd, data, pos)

        def ftruncate(fd, n, calls=calls, k=k):
            if calls["n"] == k:
                raise _Crash
            calls["n"] += 1
            return real_truncate(fd, n)

        monkeypatch.setattr(ff.os, "pwrite", pwrite)
        monkeypatch.setattr(ff.os, "ftruncate", ftruncate)
        with pytest.raises(_Crash):
            s.append_data(np.arange(100, dtype=np.int32) - 5)
        monkeypatch.setattr(ff.os, "pwrite", real_pwrite)
        monkeypatch.setattr(ff.os, "ftruncate", real_truncate)
        s.close()
        try:
            r = ndpack.open(p, mode="r")
        except FormatError:
            continue
        assert r.nchunks in (4, 5)
        assert r[: len(old) // 4] == old
        r.close()
