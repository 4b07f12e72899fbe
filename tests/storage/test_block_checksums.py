"""Block checksums: reads that decode a few blocks of a chunk check what they decode
(docs/storage.md, "Block checksums"; issue 41).  The chunk-level record is tested in
test_checksum.py."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ndpack
import ndpack.cli
from ndpack.chunks import block_sums, block_sums_check, compress2, crc32c, chunk_parts
from ndpack.errors import FormatError, NdpackError
from ndpack.storage import checksums, ndread
from ndpack.storage.verify import add_checksums, verify_path

blosc2 = pytest.importorskip("blosc2") if os.environ.get("NDPACK_NO_BLOSC2") is None else None


@pytest.fixture(autouse=True)
def _checksums_on(monkeypatch):
    monkeypatch.setenv("NDPACK_CHECKSUMS", "1")


# --- the entry of one chunk, computed here from the format (FORMAT.md 1.4-1.7) ---------

def _entry_by_hand(chunk: bytes):
    """The block checksums of `chunk` from its header and streams, independently of
    the C core: None for special / VL-block / empty chunks."""
    flags, typesize = chunk[2], chunk[3]
    nbytes, blocksize, cbytes = struct.unpack_from("<iii", chunk, 4)
    if nbytes == 0 or chunk[31] & 0x70 or chunk[30] & 0x01:   # empty, special, VL blocks
        return None
    nblocks = -(-nbytes // blocksize)
    out = []
    if flags & 0x02:                                     # memcpyed
        out.append(crc32c(chunk[:32]))
        out += [crc32c(chunk[32 + j * blocksize:32 + min((j + 1) * blocksize, nbytes)])
                for j in range(nblocks)]
        return out
    data_start = 32 + 4 * nblocks
    if chunk[31] & 0x01:                                 # dictionary
        (dsize,) = struct.unpack_from("<i", chunk, data_start)
        data_start += 4 + dsize
    out.append(crc32c(chunk[:data_start]))
    dont_split = bool(flags & 0x10)
    for j in range(nblocks):
        (pos,) = struct.unpack_from("<i", chunk, 32 + 4 * j)
        bsize = min(blocksize, nbytes - j * blocksize)
        nstreams = typesize if (not dont_split and bsize == blocksize) else 1
        start = pos
        for _ in range(nstreams):
            (csize,) = struct.unpack_from("<i", chunk, pos)
            pos += 4 + (1 if csize < 0 else csize)
        out.append(crc32c(chunk[start:pos]))
    return out


CPARAMS = [
    dict(codec=ndpack.Codec.LZ4, clevel=5),
    dict(codec=ndpack.Codec.ZSTD, clevel=3),
    dict(codec=ndpack.Codec.BLOSCLZ, clevel=9),
    dict(codec=ndpack.Codec.ZLIB, clevel=1),
    dict(codec=ndpack.Codec.LZ4, clevel=5, filters=[ndpack.Filter.BITSHUFFLE]),
    dict(codec=ndpack.Codec.LZ4, clevel=5, filters=[ndpack.Filter.DELTA, ndpack.Filter.SHUFFLE]),
    dict(codec=ndpack.Codec.ZSTD, clevel=3, use_dict=True),
    dict(codec=ndpack.Codec.LZ4, clevel=0),
    dict(codec=ndpack.Codec.LZ4, clevel=5, splitmode=ndpack.SplitMode.NEVER_SPLIT),
]


def _values(kind: str, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    if kind == "noise":
        return rng.random(n)
    if kind == "smooth":
        return np.cumsum(rng.normal(size=n))
    return np.repeat(rng.integers(0, 5, n // 50 + 1), 50)[:n].astype(np.float64)


@pytest.mark.parametrize("cp", CPARAMS, ids=lambda c: "-".join(f"{k}{getattr(v, 'name', v)}" for k, v in c.items()))
@pytest.mark.parametrize("kind", ["noise", "smooth", "runs"])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_entries_are_the_format_s_blocks(cp, kind, nthreads):
    """ndp_block_sums gives the crc32c of the prefix and of each block's streams as a
    reader of the format finds them, and the chunk's crc32c joined from them."""
    x = _values(kind, 12_345)
    chunk = compress2(x, typesize=8, blocksize=8 * 1000, nthreads=nthreads, **cp)
    crc, entry = block_sums(chunk)
    assert crc == crc32c(chunk)
    want = _entry_by_hand(chunk)
    got = None if entry is None else list(np.frombuffer(entry, "<u4"))
    assert got == want
    if entry is not None:
        block_sums_check(chunk, range(len(want) - 1), entry)


def test_special_and_empty_chunks_have_no_entry():
    for chunk in (ndpack.chunks.special_chunk(ndpack.SpecialValue.ZERO, 8000, 8, 0),
                  ndpack.chunks.special_chunk(ndpack.SpecialValue.NAN, 8000, 8, 0),
                  compress2(b"", typesize=1)):
        crc, entry = block_sums(chunk)
        assert entry is None and crc == crc32c(chunk)


@pytest.mark.parametrize("cp", CPARAMS[:5] + CPARAMS[8:], ids=str)   # (not DELTA: whole)
def test_encoders_in_parts_give_the_same_entries(cp):
    """The parts encoder's entries (taken while it encoded each block) equal the
    entries of the finished chunk's bytes."""
    x = _values("smooth", 64_000).view(np.uint8)
    cparams = ndpack.codecs.make_cparams(typesize=8, blocksize=8 * 4000, nthreads=1, **cp)
    enc = chunk_parts(x.nbytes, cparams)
    enc.add(x, 0, enc.nblocks)
    chunk = enc.finish(x)
    assert enc.sums is not None
    assert enc.sums == block_sums(chunk)


def test_check_names_the_damaged_part():
    x = _values("smooth", 10_000)
    chunk = bytearray(compress2(x, typesize=8, blocksize=8000, nthreads=1,
                                codec=ndpack.Codec.LZ4))
    _, entry = block_sums(chunk)
    starts = struct.unpack_from("<10i", chunk, 32)
    c = bytearray(chunk)
    c[starts[4] + 40] ^= 0x10                         # inside block 4's payload
    block_sums_check(c, [0, 1, 2, 3, 5, 6, 7, 8, 9], entry)
    with pytest.raises(FormatError, match="block 4: checksum mismatch"):
        block_sums_check(c, [4], entry)
    c = bytearray(chunk)
    c[33] ^= 0x01                                     # block 0's start
    with pytest.raises(FormatError, match="header and block starts"):
        block_sums_check(c, [7], entry)
    block_sums_check(c, [7], entry, prefix=False)     # (the file reader checks it apart)
    with pytest.raises(FormatError, match="does not match its block checksums"):
        block_sums_check(chunk, [0], entry[:-4])
    with pytest.raises(ndpack.ParameterError):
        block_sums_check(chunk, [10], entry)


# --- the record of a frame --------------------------------------------------------------

def _record_matches(arr) -> None:
    """Every chunk's recorded entry equals the entry of its stored bytes (None only
    for chunks without one)."""
    fr = getattr(arr, "schunk", arr)._frame
    fr.verify = False
    try:
        for i in range(fr.nchunks):
            chunk = fr.get(i)
            crc, entry = checksums.chunk_sums(chunk)
            assert fr.crcs[i] == crc, i
            assert fr.crcs.entry(i) == entry, i
    finally:
        fr.verify = True


def _write(path, x, **kw):
    kw.setdefault("chunks", (100, 500))
    kw.setdefault("blocks", (10, 500))
    kw.setdefault("cparams", {"codec": ndpack.Codec.LZ4})
    return ndpack.asarray(x, urlpath=None if path is None else str(path), mode="w", **kw)


def test_record_follows_every_write(tmp_path):
    """Slice writes, whole-chunk writes, specials, resize, appends of super-chunk
    chunks, deletes, inserts and computed results keep one entry per chunk equal to
    the stored bytes' (contiguous and sparse), and survive a reopen."""
    rng = np.random.default_rng(1)
    for contiguous in (True, False):
        x = rng.normal(size=(400, 500))
        p = tmp_path / f"a{contiguous}.b2nd"
        a = _write(p, x, contiguous=contiguous)
        _record_matches(a)
        a[120:140, 3:9] = -1.0
        a[200:300] = 0.0                                 # a special chunk
        a.resize((450, 500))
        a[420:450] = 2.5
        _record_matches(a)
        b = ndpack.open(str(p))
        assert b.schunk._frame.crcs.with_blocks() == b.schunk._frame.nchunks - 1
        _record_matches(b)
    s = ndpack.SChunk(chunksize=8_000, cparams={"typesize": 8, "codec": ndpack.Codec.ZSTD},
                      urlpath=str(tmp_path / "s.b2frame"), mode="w")
    for k in range(5):
        s.append_data(np.arange(1_000, dtype=np.int64) * k)
    s.insert_data(1, np.full(1_000, 9, np.int64))
    s.delete_chunk(3)
    s.update_data(0, rng.integers(0, 9, 1_000))
    s.append_chunk(compress2(np.ones(1_000, np.int64), typesize=8, clevel=0))
    s[10:20] = np.arange(10, dtype=np.int64).tobytes()
    _record_matches(s)
    # computed: the fused/aligned writers pass the encoders' entries
    c = ndpack.open(str(tmp_path / "aTrue.b2nd"))
    out = (c * 2 + 1).compute(urlpath=str(tmp_path / "out.b2nd"), mode="w")
    _record_matches(out)
    # copies of chunks keep their source's entries (concat of aligned inputs)
    cat = ndpack.concat([c, c], axis=0, urlpath=str(tmp_path / "cat.b2nd"), mode="w")
    _record_matches(cat)


def test_python_blosc2_reads_files_with_block_checksums(tmp_path):
    if blosc2 is None:
        pytest.skip("python-blosc2 not installed")
    x = np.random.default_rng(2).normal(size=(400, 500))
    p = tmp_path / "a.b2nd"
    _write(p, x, cparams={"codec": ndpack.Codec.ZSTD, "clevel": 1})
    np.testing.assert_array_equal(blosc2.open(str(p))[:], x)
    m = blosc2.open(str(p), mode="a")
    m[0:5] = 7.0                      # python-blosc2's write drops our record (stale)
    del m
    b = ndpack.open(str(p))
    assert b.schunk._frame.crcs is None and b.schunk._frame.crc_stale
    x[0:5] = 7.0
    np.testing.assert_array_equal(b[:], x)


# --- the mutation test: right or a clean error, never silent wrong data -----------------

KEYS = [
    ("slice", np.s_[120:140]),
    ("point", np.s_[257, 33]),
    ("column", np.s_[:, 7]),
    ("box", np.s_[95:215, 10:400:7]),
    ("step", np.s_[3:390:40, ::50]),
    ("fancy", ([5, 130, 131, 399], [0, 499, 250, 17])),
    ("oindex", None),
    ("mask", None),
    ("sum", None),
    ("expr", None),
]


def _read(a, kind, key, x):
    if kind == "oindex":
        return a.oindex[[3, 150, 398], [2, 300]], x[np.ix_([3, 150, 398], [2, 300])]
    if kind == "mask":
        m = np.zeros(x.shape[0], bool)
        m[[10, 110, 111, 305]] = True
        return a[m], x[m]
    if kind == "sum":
        return np.asarray(ndpack.sum(a[100:300], axis=1)), x[100:300].sum(axis=1)
    if kind == "expr":
        return (a[190:230] * 2 + 1), x[190:230] * 2 + 1
    if kind == "fancy":
        return a[key], x[key]
    return a[key], x[key]


_FILES = {}


def _file(tmp, codec):
    """One ndpack-written file per codec (made once)."""
    if codec not in _FILES:
        x = np.cumsum(np.random.default_rng(5).normal(size=(400, 500)), axis=1)
        p = os.path.join(tmp, f"base-{codec}.b2nd")
        _write(p, x, cparams={"codec": ndpack.Codec[codec], "clevel": 5})
        with open(p, "rb") as f:
            _FILES[codec] = (x, f.read())
    return _FILES[codec]


@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), codec=st.sampled_from(["LZ4", "ZSTD"]),
       way=st.sampled_from(["file", "mmap", "buffer"]),
       kind=st.sampled_from(range(len(KEYS))))
def test_every_read_of_a_mutated_file_is_right_or_an_error(tmp_path_factory, data, codec,
                                                            way, kind):
    tmp = str(tmp_path_factory.getbasetemp())
    x, raw = _file(tmp, codec)
    buf = bytearray(raw)
    n = data.draw(st.integers(1, 3), label="mutations")
    for _ in range(n):
        pos = data.draw(st.integers(0, len(buf) - 1), label="byte")
        if data.draw(st.booleans(), label="bit flip"):
            buf[pos] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        else:
            buf[pos] = data.draw(st.integers(0, 255), label="value")
    name, key = KEYS[kind]
    box = ndread.BOX_SLICES
    try:
        if way == "buffer":
            a = ndpack.ndarray_from_cframe(bytes(buf))
        else:
            p = os.path.join(tmp, f"m-{os.getpid()}.b2nd")
            with open(p, "wb") as f:
                f.write(buf)
            a = ndpack.open(p, mmap_mode="r" if way == "mmap" else None)
        ndread.BOX_SLICES = data.draw(st.booleans(), label="box plans")
        got, want = _read(a, name, key, x)
    except (NdpackError, ValueError, KeyError, IndexError):
        return                                            # a clean error
    finally:
        ndread.BOX_SLICES = box
    np.testing.assert_array_equal(np.asarray(got), want)


def test_the_issue_s_trial_has_no_silent_reads(tmp_path):
    """The trial of the issue: a (400, 500) float64 array (chunks (100, 500), blocks
    (10, 500), LZ4), one random bit flipped, a[120:140] read: never wrong."""
    x = np.random.default_rng(0).normal(size=(400, 500))
    p = tmp_path / "a.b2nd"
    _write(p, x)
    raw = p.read_bytes()
    rng = np.random.default_rng(7)
    q = tmp_path / "b.b2nd"
    outcome = {"right": 0, "error": 0}
    for _ in range(300):
        buf = bytearray(raw)
        pos = int(rng.integers(len(buf)))
        buf[pos] ^= 1 << int(rng.integers(8))
        q.write_bytes(bytes(buf))
        try:
            got = ndpack.open(str(q))[120:140]
        except NdpackError:
            outcome["error"] += 1
            continue
        np.testing.assert_array_equal(got, x[120:140])
        outcome["right"] += 1
    assert outcome["error"] > 0          # the flips that hit rows 120:140 were seen


# --- files without block checksums ---------------------------------------------------

def _strip_blocks(path):
    """The file as an ndpack of before block checksums wrote it: chunk crcs only."""
    a = ndpack.open(str(path), mode="a")
    fr = a.schunk._frame
    fr.crcs.blocks = [None] * fr.nchunks
    fr._flush()
    a.schunk.close()


def test_chunk_crcs_only_small_chunks_are_checked_whole(tmp_path):
    x = np.random.default_rng(3).normal(size=(400, 500))
    p = tmp_path / "a.b2nd"
    _write(p, x)                                    # chunks of 400 KB: below the threshold
    _strip_blocks(p)
    a = ndpack.open(str(p))
    assert a.schunk._frame.crcs.with_blocks() == 0
    fr = a.schunk._frame
    start = fr.header_len + int(fr.offsets[1])
    a.schunk.close()
    buf = bytearray(p.read_bytes())
    buf[start + len(buf) // 20] ^= 0x04            # somewhere inside chunk 1
    p.write_bytes(bytes(buf))
    for mode in (None, "r"):
        b = ndpack.open(str(p), mmap_mode=mode)
        with pytest.raises(FormatError, match="chunk 1"):
            b[100:101, 0:1]                      # one block of chunk 1: the chunk whole
    assert checksums.WHOLE_CHECK_BYTES >= 400 * 500 * 8 // 4


def test_verify_reports_granularity_and_add_checksums(tmp_path, capsys):
    """`ndpack verify` says what can be checked at which granularity; `--add-checksums`
    gives python-blosc2's files (and older ndpack's) chunk and block checksums without
    changing a data byte, atomically."""
    x = np.random.default_rng(4).normal(size=(400, 500))
    p = tmp_path / "a.b2nd"
    _write(p, x)
    (res,) = verify_path(p)
    assert res.ok and res.checksums == "crc32c" and res.blocks == res.nchunks
    assert "per block" in res.line()
    assert ndpack.cli.main(["info", "--json", str(p)]) == 0
    assert '"block_checksums": 4' in capsys.readouterr().out
    _strip_blocks(p)
    (res,) = verify_path(p)
    assert res.ok and res.blocks == 0 and "per chunk only" in res.line()
    if blosc2 is None:
        pytest.skip("python-blosc2 not installed")
    q = tmp_path / "b2.b2nd"
    blosc2.asarray(x, urlpath=str(q), mode="w", chunks=(100, 500), blocks=(10, 500))
    (res,) = verify_path(q)
    assert res.checksums == "none" and "no checksums" in res.line()
    before = blosc2.open(str(q))
    chunks_before = [before.schunk.get_chunk(i) for i in range(before.schunk.nchunks)]
    assert ndpack.cli.main(["verify", "--add-checksums", str(q)]) == 0
    assert "added" in capsys.readouterr().out
    after = blosc2.open(str(q))
    assert [after.schunk.get_chunk(i) for i in range(after.schunk.nchunks)] == chunks_before
    np.testing.assert_array_equal(after[:], x)
    (res,) = verify_path(q)
    assert res.ok and res.checksums == "crc32c" and res.blocks == res.nchunks
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".ndpack-tmp")]
    # a damaged chunk is refused, the file left as it was
    r = tmp_path / "bad.b2nd"
    blosc2.asarray(x, urlpath=str(r), mode="w", chunks=(100, 500), blocks=(10, 500))
    bad = bytearray(r.read_bytes())
    bad[len(bad) // 2] ^= 0xFF
    r.write_bytes(bytes(bad))
    with pytest.raises(NdpackError, match="chunk"):
        add_checksums(r)
    assert r.read_bytes() == bytes(bad)


# --- metadata -----------------------------------------------------------------------

@pytest.mark.parametrize("edit", ["dtype order", "shape", "vlmeta"])
def test_changed_metadata_is_caught_by_the_record(tmp_path, edit):
    """The b2nd metalayer (shape, chunks, dtype) and the vlmeta a read trusts are
    covered by the record: a change that still parses (a byte-order flip of the
    dtype, another shape of the same chunk count, an edited value) is an error, not
    values read through the wrong layout."""
    x = np.random.default_rng(6).normal(size=(400, 500))
    p = tmp_path / "a.b2nd"
    a = _write(p, x)
    a.vlmeta["expr"] = "a * 2"
    a.schunk.close()
    buf = bytearray(p.read_bytes())
    if edit == "dtype order":
        i = buf.index(b"<f8")
        buf[i] = ord(">")
    elif edit == "shape":
        i = buf.index(struct.pack(">q", 400))          # b2nd shapes are big-endian int64
        buf[i:i + 8] = struct.pack(">q", 399)
    else:
        i = buf.rindex(b"a * 2")
        buf[i + 4] = ord("3")
    p.write_bytes(bytes(buf))
    with pytest.raises(FormatError, match="changed after the checksum record"):
        ndpack.open(str(p))
    b = ndpack.open(str(p), dparams={"verify": False})      # the documented way out
    assert b.shape[1] == 500
